"""The model registry (accel/registry.py): each model declared once, and everything else a view of it.

These tests hold for every entry, so a model pair added to the registry is checked here without
a line of its own: its settings validate, its search space names only what it has, the config,
the CLI, the search, the features, the parity rule and ``accel bench models`` all know it, and
its CPU class is the scikit-learn class the entry names (the GPU class is checked where cuML is
installed).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect

import pytest

from accel import registry
from accel.backend import cpu_backend
from accel.config import RunConfig, build_config
from accel.errors import AccelError
from accel.hpo.space import resolve_space
from accel.metrics import PARITY, parity_rule
from accel.models import adapter, build_model

SPECS = list(registry.MODELS.values())


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_each_model_is_known_everywhere_from_its_one_entry(spec):
    config = RunConfig()
    assert getattr(config, spec.name) == spec.settings()  # a workflow-file section with the defaults
    assert spec.name in RunConfig.model_fields["model"].annotation.__args__  # a --model choice
    assert set(spec.search_space) <= set(spec.known_parameters())
    assert resolve_space(spec.name, None) == dict(spec.search_space)
    assert spec.caps.family in registry.FAMILIES
    assert {label for label, _ in spec.labels} <= set(spec.known_parameters())
    metric, tolerance, _ = parity_rule("regression", spec.name)
    assert metric == PARITY["regression"][0] and tolerance == PARITY["regression"][1] * spec.parity_scale


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_each_model_builds_for_the_tasks_it_declares(spec):
    for task, estimator in (("binary", spec.classifier), ("regression", spec.regressor)):
        if estimator is None:
            with pytest.raises(AccelError, match=f"--model {spec.name} cannot do"):
                build_model(spec.name, task, {}, seed=0)
            continue
        model = build_model(spec.name, task, spec.given(spec.settings().model_dump()), seed=0)
        assert type(model) is adapter(spec)


@pytest.mark.parametrize("key", list(registry.ESTIMATORS))
def test_each_cpu_class_is_the_one_the_entry_names(key):
    est = registry.ESTIMATORS[key]
    cls = cpu_backend().models[key]
    assert f"{cls.__module__.split('.')[0]}:{cls.__name__}" == f"{est.cpu.split('.')[0].split(':')[0]}:{est.cpu.split(':')[1]}"
    # The parameters the CPU arm passes are ones the class takes.
    spec = registry.MODELS.get(est.model or "")
    settings = spec.given(spec.settings().model_dump()) if spec else {}
    params = est.params(settings, gpu=False, n_threads=2, xgb_device="cpu", seed=0)
    assert set(params) <= set(cls().get_params()), key


@pytest.mark.skipif(importlib.util.find_spec("cuml") is None, reason="cuml not installed: runs in CI's RAPIDS-without-GPU stage")
@pytest.mark.parametrize("key", [k for k, e in registry.ESTIMATORS.items() if e.needs_cuml])
def test_each_gpu_class_exists_in_cuml(key):
    module, _, name = registry.ESTIMATORS[key].gpu.partition(":")
    try:
        imported = importlib.import_module(module)
    except ImportError as exc:  # cuML's wheel without a CUDA driver: say so rather than pass
        pytest.skip(f"cuml installed but does not import here: {exc}")
    cls = getattr(imported, name)
    # The parameters the GPU arm passes are ones cuML's class takes.
    est = registry.ESTIMATORS[key]
    spec = registry.MODELS.get(est.model or "")
    settings = spec.given(spec.settings().model_dump()) if spec else {}
    params = est.params(settings, gpu=True, n_threads=2, xgb_device="cuda:0", seed=0)
    assert set(params) <= set(inspect.signature(cls).parameters), key


#: Arguments that say how a class reports or returns, not what it computes.
_NOT_THE_PROBLEM = {"verbose", "output_type", "handle", "copy_X", "copy", "n_jobs"}


def _defaults(cls) -> dict:
    return {k: p.default for k, p in inspect.signature(cls).parameters.items() if p.default is not inspect.Parameter.empty}


def differing_defaults(cpu_cls, gpu_cls, passed_cpu, passed_gpu) -> set[str]:
    """Parameters both classes take, that neither arm sets, whose defaults differ."""
    cpu, gpu = _defaults(cpu_cls), _defaults(gpu_cls)
    common = (cpu.keys() & gpu.keys()) - _NOT_THE_PROBLEM - set(passed_cpu) - set(passed_gpu)
    return {k for k in common if repr(cpu[k]) != repr(gpu[k])}


def test_differing_defaults_are_found_where_an_arm_leaves_them():
    class Cpu:
        def __init__(self, tol=1e-4, alpha=1.0, max_iter=100, verbose=0):
            pass

    class Gpu:
        def __init__(self, tol=1e-3, alpha=1.0, max_iter=1000, verbose=False, output_type=None):
            pass

    assert differing_defaults(Cpu, Gpu, {}, {}) == {"tol", "max_iter"}
    assert differing_defaults(Cpu, Gpu, {"tol": 1e-4}, {"tol": 1e-4, "max_iter": 5}) == set()


def test_the_tolerances_cuml_sets_differently_are_set_on_both_arms():
    # cuML's Lasso and ElasticNet default to tol=1e-3, scikit-learn's to 1e-4.
    for key in ("lasso", "elastic_net"):
        est = registry.ESTIMATORS[key]
        for gpu in (False, True):
            assert est.params({}, gpu=gpu, n_threads=2, xgb_device="cpu", seed=0)["tol"] == 1e-4, (key, gpu)


@pytest.mark.skipif(importlib.util.find_spec("cuml") is None, reason="cuml not installed: runs in CI's RAPIDS-without-GPU stage")
@pytest.mark.parametrize("key", [k for k, e in registry.ESTIMATORS.items() if e.needs_cuml])
def test_each_pair_solves_the_same_problem_on_both_arms(key):
    """Every default the two classes name alike but set differently is set on both arms, or is
    listed in the entry's ``same_in_effect`` with why it does the same (and only such ones)."""
    est = registry.ESTIMATORS[key]
    try:
        gpu_cls = getattr(importlib.import_module(est.gpu.partition(":")[0]), est.gpu.partition(":")[2])
    except ImportError as exc:
        pytest.skip(f"cuml installed but does not import here: {exc}")
    cpu_cls = cpu_backend().models[key]
    spec = registry.MODELS.get(est.model or "")
    settings = spec.given(spec.settings().model_dump()) if spec else {}
    passed = [est.params(settings, gpu=gpu, n_threads=2, xgb_device="cpu", seed=0) for gpu in (False, True)]
    assert differing_defaults(cpu_cls, gpu_cls, *passed) == set(est.same_in_effect), key


def test_settings_are_validated_with_the_entrys_bounds():
    with pytest.raises(AccelError, match="lasso.alpha"):
        build_config(None, {"model": "lasso", "lasso": {"alpha": 0}})
    with pytest.raises(AccelError, match="unknown key 'lasso.l1_ratio'"):
        build_config(None, {"lasso": {"l1_ratio": 0.5}})
    with pytest.raises(AccelError, match="unknown parameter 'l1_ratio'"):
        build_config(None, {"hpo": {"search_space": {"lasso": {"l1_ratio": [0.1]}}}})


def test_the_penalized_variant_and_the_per_library_spelling():
    spec = registry.MODELS["linear_regression"]
    assert spec.estimator(False, {"alpha": None}).key == "linear_regression"
    assert spec.estimator(False, {"alpha": 0.1}).key == "elastic_net"
    assert spec.given({"alpha": None, "l1_ratio": 0.5}) == {}  # plain least squares: no penalty to mix
    logistic = registry.MODELS["logistic_regression"].classifier
    common = dict(n_threads=2, xgb_device="cuda:0", seed=0)
    assert logistic.params({"C": 1.0, "l1_ratio": 1.0}, gpu=True, **common)["penalty"] == "l1"
    assert logistic.params({"C": 1.0, "l1_ratio": 1.0}, gpu=False, **common)["solver"] == "saga"


def test_bench_pairs_take_the_models_defaults_once():
    rf = registry.BENCH_PAIRS["random_forest"]
    cpu = rf.bench_params(gpu=False, n_threads=3, xgb_device="cpu", seed=7)
    gpu = rf.bench_params(gpu=True, n_threads=3, xgb_device="cuda:0", seed=7)
    defaults = registry.RandomForestSettings()
    assert cpu["n_estimators"] == gpu["n_estimators"] == defaults.n_estimators
    assert cpu["max_features"] == "sqrt" and cpu["random_state"] == gpu["random_state"] == 7
    assert cpu["n_jobs"] == 3 and "n_jobs" not in gpu
    xgb = registry.BENCH_PAIRS["xgboost"]
    assert xgb.bench_params(gpu=True, n_threads=3, xgb_device="cuda:0", seed=0)["device"] == "cuda:0"
    assert xgb.bench_params(gpu=False, n_threads=3, xgb_device="cpu", seed=0)["n_estimators"] == 100


def test_a_model_that_ran_elsewhere_is_not_a_result_of_the_arm():
    cpu = cpu_backend()
    gpu = dataclasses.replace(cpu, name="gpu", xgb_device="cuda:0")  # the arm's name decides, nothing of a GPU is used
    assert gpu.ran_here("cuda:0") and cpu.ran_here("cpu")
    assert not gpu.ran_here("cpu")
