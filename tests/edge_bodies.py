"""Test bodies shared by the CPU and GPU suites of the data and faults where cuDF and pandas part
ways (``test_edges_cpu.py``, ``test_edges_gpu.py``).

Each takes the arm to check (a :class:`~accel.backend.Backend`, or the ``--device`` of a run) and
checks what must hold on both arms: the float16 storage plan taken from every row, categorical
codes kept exact, a table read alike by both arms, and an arm whose batch planning fails recorded
as failed beside the other arm.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from accel import _compat, faultpoints
from accel.backend import Backend, cpu_backend
from accel.cli.main import main
from accel.precision import FP16_EXACT_CODES, plan_for_frames, store_frame
from accel.runner import run_arm
from accel.workflows.base import WorkflowSettings
from accel.workflows.table import TableWorkflow, plan_table, probe_encodings
from tests.bodies import to_pandas
from tests.null_bodies import on_arm

#: Rows of the float16 checks: the plan samples every ``rows // 100_000``-th row (3 here).
FP16_ROWS = 300_000


def check_fp16_scale_from_every_row(backend: Backend) -> None:
    """One value far above float16's range on a row the plan's sample skips: the column is scaled
    for it (its scale comes from the column's true maximum), so that it is stored finite and
    read back within float16's rounding, and XGBoost takes the matrix."""
    import xgboost

    values = np.ones(FP16_ROWS, dtype=np.float32)
    values[1] = 1.0e6  # row 1: off the sample's stride of 3
    frame = on_arm(backend, pd.DataFrame({"x": values, "y": np.linspace(0, 1, FP16_ROWS, dtype=np.float32)}))
    plan = plan_for_frames("fp16", [frame], [])
    x = plan.columns[0]
    assert x.storage == "fp16" and x.scale > 1, plan.describe()
    stored = _compat.to_numpy(store_frame(backend, frame, [], plan, 50_000).batch(0, 8))
    assert np.isfinite(stored).all(), stored
    assert abs(stored[1, 0] - 1.0e6) <= 1e-3 * 1.0e6, stored[1, 0]
    xgboost.DMatrix(stored)  # "Input data contains inf" before


def check_fp16_keeps_codes_above_the_exact_range_wide(backend: Backend) -> None:
    """A categorical column with more categories than float16 holds exactly: kept in float32,
    every code read back as it is (2049 would become 2048 in float16), and said in the plan."""
    n, k = 12_000, 4_000
    codes = np.arange(n) % k
    frame = pd.DataFrame(
        {
            "many": pd.Categorical.from_codes(codes, categories=[f"c{i}" for i in range(k)]),
            "few": pd.Categorical.from_codes(codes % 5, categories=list("abcde")),
        }
    )
    arm = on_arm(backend, frame)
    plan = plan_for_frames("fp16", [arm], ["many", "few"])
    storage = {c.name: c.storage for c in plan.columns}
    assert storage == {"many": "fp32", "few": "fp16"}, plan.describe()
    assert str(FP16_EXACT_CODES) in plan.describe()["kept_fp32"]["many"]
    stored = _compat.to_numpy(store_frame(backend, arm, ["many", "few"], plan, 4_000).batch(0, n))
    np.testing.assert_array_equal(stored[:, 0], codes.astype(np.float32))
    np.testing.assert_array_equal(stored[:, 1], (codes % 5).astype(np.float32))


def check_arm_reads_the_table_as_the_cpu_arm(backend: Backend, path: Path, target: str, seed: int = 3) -> None:
    """The arm loads the table as the CPU arm does (the same rows, missing values and numbers),
    and runs every stage of it."""
    settings = WorkflowSettings(seed=seed)
    planned = plan_table(str(path), target, None, [], settings, family="native")
    probe_encodings(planned, seed, "off")
    flow = TableWorkflow(settings, planned, "xgboost", {"n_estimators": 20, "max_depth": 4})
    cpu = flow.load(cpu_backend())
    got = to_pandas(flow.load(backend))
    pd.testing.assert_frame_equal(got, cpu, check_dtype=False)
    result = run_arm(backend, flow)
    assert result.status == "ok", result.reason
    assert all(np.isfinite(v) for v in result.metrics.values() if isinstance(v, float)), result.metrics


def check_batch_plan_error_fails_only_that_arm(tmp: Path, monkeypatch, capsys, arm: str, device: str) -> dict:
    """An error while ``arm`` plans its batches (raised there by the fault point
    ``batch-plan-<arm>``, as a type its library cannot read or a device out of memory would):
    that arm is ``failed`` with the reason, the other arm runs as usual, the record is written,
    and the command ends with exit status 1 and one line, no traceback."""
    from tests import tables

    faults = tmp / "faults"
    faults.mkdir()
    faultpoints.enable_for_tests(faults)
    (faults / f"batch-plan-{arm}.raise").write_text("")
    monkeypatch.setenv(faultpoints.ENV, str(faults))
    data = tmp / "churn.csv"
    tables.customers(400).to_csv(data, index=False)
    capsys.readouterr()
    rc = main(["run", "--data", str(data), "--target", "churned", "--device", device, "--out", str(tmp / "runs")])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert rc == 1, err
    assert f"accel: {arm} arm failed (see the record)" in err, err
    assert list(faults.glob(f"batch-plan-{arm}.raised-*")), "the fault point was never reached"
    [path] = sorted((tmp / "runs").glob("*.json"))
    record = json.loads(path.read_text())
    failed = record["arms"][arm]
    assert failed["status"] == "failed", failed
    assert failed["reason"].startswith(f"while planning batches: InjectedFault: fault injected at 'batch-plan-{arm}'"), failed[
        "reason"
    ]
    return record
