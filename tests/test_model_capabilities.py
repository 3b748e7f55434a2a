"""Models are known by what they can do: a model from another library is added by a registry entry
and an adapter alone (:mod:`tests.capability_model`: scikit-learn's histogram gradient boosting),
runs in memory and in ``accel hpo``, and what it cannot do is refused in one line from its
capabilities. Outside the registry and the model adapters, no module compares against a model's name.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from accel import registry
from accel.registry import Capabilities
from tests import tables
from tests.conftest import ROOT, read_json, records_in
from tests.test_table_cpu import assert_error

#: The one home of model names and the adapters that train them. Two modules name libraries, not
#: models: ``backend.py`` probes the XGBoost library's build (a device probe), ``openmp.py`` lists
#: the libraries that load OpenMP's runtime.
NAMES_ALLOWED = {"registry.py", "models.py", "backend.py", "openmp.py"}


def accel_with_the_new_model(*args: str) -> tuple[int, str]:
    """``accel ARGS`` in a fresh process whose registry holds the new model (registered before
    the configuration is read, as any entry is); its exit code and stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.capability_model", *args], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    return proc.returncode, proc.stderr


@pytest.fixture(scope="module")
def customers(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("capabilities") / "customers.csv"
    tables.customers(1500).to_csv(path, index=False)
    return path


def _base(data: Path, out: Path) -> list[str]:
    return ["--data", str(data), "--target", "churned", "--model", "hist_gradient_boosting", "--device", "cpu", "--out", str(out)]


def test_a_model_added_by_an_entry_and_an_adapter_runs_in_memory(customers, tmp_path):
    code, err = accel_with_the_new_model("run", *_base(customers, tmp_path))
    assert code == 0, err
    (record,) = [read_json(p) for p in records_in(tmp_path)]
    assert record["model"]["name"] == "hist_gradient_boosting"
    assert "HistGradientBoostingClassifier" in record["arms"]["cpu"]["threads"]["estimator"]
    assert record["arms"]["cpu"]["metrics"]["auc"] > 0.7  # it learnt (a coin flip scores 0.5)
    # Its family's features: ordinal codes for a few-valued column, missing values filled.
    assert record["features"]["cpu"]["encodings"]["plan"] == "ordinal codes"


@pytest.mark.slow  # a search of several trials; the in-memory run above stays in the default tier
def test_a_model_added_by_an_entry_and_an_adapter_is_searched(customers, tmp_path):
    code, err = accel_with_the_new_model("hpo", *_base(customers, tmp_path), "--trials", "2", "--top", "1")
    assert code == 0, err
    (record,) = [read_json(p) for p in records_in(tmp_path)]
    assert record["model"] == "hist_gradient_boosting" and record["trials"]["complete"] == 2
    assert set(record["final"]["params"]) >= {"learning_rate", "max_iter"}  # the entry's search space
    assert record["final"]["device_used"] == "cpu" and record["final"]["metrics"]["auc"] > 0.7


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--batch-rows", "1024"], ["cannot train batch by batch", "--batch-rows", "--model xgboost"]),
        (["--cluster", "local"], ["cannot train on a Dask cluster", "without --cluster", "--model xgboost"]),
    ],
    ids=["streamed", "dask"],
)
def test_what_the_new_model_cannot_do_is_refused_in_one_line(customers, tmp_path, extra, needles):
    code, err = accel_with_the_new_model("run", *_base(customers, tmp_path / "runs"), *extra)
    assert_error(code, err, "--model hist_gradient_boosting", *needles)
    assert not (tmp_path / "runs").exists() or records_in(tmp_path / "runs") == []


def test_early_stopping_of_a_model_that_cannot_is_refused(customers, tmp_path):
    workflow = tmp_path / "search.yaml"
    workflow.write_text("hpo:\n  early_stopping_rounds: 5\n")
    code, err = accel_with_the_new_model("hpo", str(workflow), *_base(customers, tmp_path / "runs"), "--trials", "2")
    assert_error(code, err, "--model hist_gradient_boosting cannot stop early", "hpo.early_stopping_rounds")


def test_a_refusal_names_the_models_that_can():
    assert registry.able("dask") == ["xgboost"] and registry.able("streams") == ["xgboost"]
    message = str(registry.refusal("knn", "streams", "give a larger --memory-budget"))
    assert message.startswith("--model knn cannot train batch by batch") and "--model xgboost, which can" in message
    assert "\n" not in message


def test_capabilities_hold_together():
    with pytest.raises(ValueError, match="family must be one of"):
        Capabilities("xgboost")
    # Streamed and Dask runs build the native family's features (no fitted imputation or scaling).
    with pytest.raises(ValueError, match="native family"):
        Capabilities("trees", streams=True)


def _named_models(tree: ast.AST, names: set[str]) -> list[int]:
    """Lines where a string that is a model's name is compared (``==``, ``in``), passed to a call
    (``config.get("model", "xgboost")``) or assigned (``model_name: str = "xgboost"``)."""

    def named(node: ast.AST | None) -> bool:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(named(e) for e in node.elts)
        return isinstance(node, ast.Constant) and node.value in names

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            hit = any(named(o) for o in (node.left, *node.comparators))
        elif isinstance(node, ast.Call):
            hit = any(named(a) for a in node.args[1:])
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            hit = named(node.value)
        else:
            hit = False
        if hit:
            found.append(node.lineno)
    return found


def test_no_module_but_the_registry_and_the_adapters_compares_a_model_name():
    names = set(registry.MODELS)
    offending = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "accel").rglob("*.py"))
        if path.name not in NAMES_ALLOWED and (lines := _named_models(ast.parse(path.read_text(encoding="utf-8")), names))
    }
    assert offending == {}, f"ask the registry's capabilities instead: {offending}"


def test_a_model_registered_after_the_configuration_is_read_is_refused():
    """The ``--model`` choices are made when the configuration is first imported: a later entry
    would be a model no command knows, so it is refused rather than half-registered."""
    import accel.config  # noqa: F401 - read, as in any command
    from tests.capability_model import SPEC

    with pytest.raises(RuntimeError, match="before accel reads a configuration"):
        registry.register(SPEC)
    assert SPEC.name not in registry.MODELS
