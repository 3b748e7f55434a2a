"""The tour notebook (docs/notebooks/tour.ipynb) runs top to bottom in a fresh kernel.

The docs render the notebook with the outputs stored in it and never execute it; this test
executes it (nbclient, the kernel of this interpreter), so the notebook the docs show is one
that runs against the code as it is. ``python -m tests.test_notebook`` executes it and stores
the new outputs in the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

NOTEBOOK = ROOT / "docs" / "notebooks" / "tour.ipynb"


def execute(path: Path, cwd: Path) -> object:
    """The notebook at ``path``, executed in a fresh kernel (this interpreter's) started in ``cwd``."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def _text(output: dict) -> str:
    data = output.get("data") or {}
    return "".join(output.get("text") or data.get("text/plain") or "") + "".join(data.get("text/html") or "")


@pytest.mark.slow  # a kernel, four paired runs, a comparison and a three-trial search: 60-120 s on two shared cores
def test_the_tour_runs_top_to_bottom(tmp_path, monkeypatch):
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cwd, temp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # the kernel inherits it: the tour's folder lands here
    nb = execute(NOTEBOOK, cwd)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in cells for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{errors[0]['ename']}: {errors[0]['evalue']}"
    outputs = ["".join(_text(o) for o in c.outputs) for c in cells]
    # The flights result's notebook view: its stage table, its hold-out metrics, and the record's path.
    flights = next(o for c, o in zip(cells, outputs) if c.source.startswith("flights = accel.run"))
    assert "<table" in flights and "features" in flights and "record:" in flights and "hold-out metrics" in flights
    # A model that learns: well above a constant's AUC (0.5), and log loss below a constant's (no remark).
    assert stored_auc(nb, "flights.metrics") > 0.7 and "above" not in flights
    # On the user's table XGBoost is the sensible choice (the linear model cannot follow its pockets).
    versus = next(o for c, o in zip(cells, outputs) if c.source.startswith("logreg = accel.run"))
    xgb, logreg = (float(re.search(rf"{name}\s+([0-9.]+)", versus).group(1)) for name in ("xgboost", "logistic_regression"))
    assert xgb > logreg and xgb > 0.7, versus
    # The user's table: planned (date text read day-first, the ID dropped) and scored on the CPU arm.
    schema = next(o for c, o in zip(cells, outputs) if c.source.startswith("schema = "))
    assert "%d/%m/%Y" in schema and "dropped" in schema
    # The bad target is the command line's one line, suggesting the nearest column.
    bad = next(o for c, o in zip(cells, outputs) if 'target="churn"' in c.source)
    assert "churned" in bad and "Traceback" not in bad
    # The comparison ran its CPU arm and printed the script's own output.
    printed = next(o for c, o in zip(cells, outputs) if c.source.startswith("print(comparison"))
    assert "rows 20000" in printed and "auc" in printed
    # The search: its candidates table (the baseline, the trials, the final model) and the best settings.
    candidates = next(o for c, o in zip(cells, outputs) if c.source.startswith("study = accel.tune"))
    assert "<table" in candidates and "retrained best" in candidates
    # It wrote nowhere but the temporary folder it made: nothing in the kernel's working folder.
    assert not any(cwd.iterdir()) and [p.name[:11] for p in temp.iterdir()] == ["accel-tour-"]


def stored_auc(nb: Any, source: str) -> float:
    """The CPU arm's AUC in the output of the code cell whose source is ``source`` (a metrics DataFrame)."""
    [cell] = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip() == source]
    text = "".join("".join((o.get("data") or {}).get("text/plain") or "") for o in cell["outputs"])
    return float(re.search(r"^auc\s+\S+\s+([0-9.]+)", text, re.M).group(1))


def test_the_stored_notebook_shows_a_complete_run():
    """What the docs render: every code cell executed once, in order, none failed, and a flights
    model that learns (AUC well above a constant's 0.5)."""
    nb = json.loads(NOTEBOOK.read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1)), "run it: python -m tests.test_notebook"
    assert not [o for c in cells for o in c["outputs"] if o["output_type"] == "error"]
    assert all(c["outputs"] for c in cells), "every cell of the tour shows something"
    assert stored_auc(nb, "flights.metrics") > 0.7


if __name__ == "__main__":  # execute the notebook and store its outputs
    import tempfile

    import nbformat

    with tempfile.TemporaryDirectory() as folder:
        executed = execute(NOTEBOOK, Path(folder))
    nbformat.write(executed, NOTEBOOK)
    print(f"stored the outputs of {NOTEBOOK.relative_to(ROOT)}")
