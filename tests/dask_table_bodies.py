"""Test bodies shared by the Dask CPU and GPU suites of a user's table (``test_dask_table.py``,
``test_dask_table_gpu.py``).

Each takes a started :class:`~accel.scaleout.cluster.ClusterSession` and the workers' kind, and checks
that the distributed run of ``accel run --data FILE --target COLUMN`` reproduces the single-process
run of the same kind: the same rows and features exactly, and the hold-out metric within the
stated tolerance.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from accel.models import XGBoostParams
from accel.runner import run_arm
from accel.scaleout.runner import DASK_PARITY_TOLERANCE, run_on_session, table_builder
from accel.timing import STAGES
from accel.workflows.base import WorkflowSettings
from accel.workflows.flights_dask import worker_slots
from accel.workflows.table import TableWorkflow, plan_table
from accel.workflows.table_dask import DaskTable
from tests.bodies import to_pandas
from tests.dask_bodies import single_process_backend
from tests.tables import shop_orders

#: Regression: the cluster's hold-out RMSE within this share of the single process's.
RMSE_SHARE = 0.02


def write_tables(folder: Path, n: int = 4000) -> dict[str, Path]:
    """The same rows as a CSV file, a gzip CSV file and a folder of four Parquet files of unequal sizes."""
    folder.mkdir(parents=True, exist_ok=True)
    frame = shop_orders(n)
    csv = folder / "orders.csv"
    frame.to_csv(csv, index=False)
    gz = folder / "orders.csv.gz"
    frame.to_csv(gz, index=False, compression="gzip")
    parquet = folder / "orders"
    parquet.mkdir(exist_ok=True)
    cuts = [0, n // 10, n // 2, (3 * n) // 4, n]
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
        frame.iloc[a:b].to_parquet(parquet / f"part-{i}.parquet", index=False)
    # A partition with no row of the plan: the first 60% of the file has no target, so a CSV
    # read in two or more blocks starts with one whose every row is dropped (no rows, no folds).
    gaps = frame.copy()
    gaps.loc[: (6 * n) // 10, ["returned", "basket"]] = None
    no_target = folder / "orders-gaps.csv"
    gaps.to_csv(no_target, index=False)
    return {"csv": csv, "csv.gz": gz, "parquet": parquet, "csv-gaps": no_target}


def plan(path: Path, target: str, settings: WorkflowSettings, probe: str = "off"):
    """The single-process plan (``--probe off``: the 300-value column is target-encoded)."""
    return plan_table(str(path), target, None, [], settings, family="xgboost", probe=probe)


def check_table_features_match_single_process(
    session, kind: str, path: Path, target: str, rows: int | None = None, seed: int = 3, min_partitions: int = 2
) -> DaskTable:
    """Rows, split, casts, dates, target encoding (out of fold, across partitions): identical frames.

    ``min_partitions``: Dask-cuDF joins small Parquet files into one partition (a GPU wants
    large ones), so a GPU suite asks for several partitions of its CSV only.
    """
    backend = single_process_backend(kind)
    settings = WorkflowSettings(rows=rows, seed=seed)
    planned = plan(path, target, settings)
    single = TableWorkflow(settings, planned, "xgboost", {})
    expected = single.features(backend, single.load(backend))

    info = session.info
    dask_table = DaskTable(planned, settings, kind, backend, slots=worker_slots(kind, info.workers, info.total_threads))
    raw, loaded = dask_table.load(session.client)
    got = dask_table.features(session.client, raw, loaded)

    assert dask_table.partitions >= min_partitions, "the table must really be partitioned by rows"
    assert got.rows == expected.rows
    assert got.categorical == expected.categorical
    encodings = dask_table.feature_reports[kind]["encodings"]
    assert encodings == single.feature_reports[backend.name]["encodings"]
    assert encodings["shop"].startswith("out-of-fold target encoding"), encodings  # 300 values, --probe off
    assert dask_table.feature_reports[kind]["dates"] == single.feature_reports[backend.name]["dates"]
    for name in ("X_train", "X_test", "y_train", "y_test"):
        mine = to_pandas(getattr(got, name).compute()).reset_index(drop=True)
        theirs = to_pandas(getattr(expected, name)).reset_index(drop=True)
        if name.startswith("X"):
            pd.testing.assert_frame_equal(mine, theirs, check_exact=True)
        else:
            pd.testing.assert_series_equal(mine, theirs, check_names=False, check_exact=True)
    return dask_table


def check_table_run_agrees_with_single_process(session, kind: str, path: Path, target: str, seed: int = 3) -> dict:
    """Same file and seed: the distributed metric is within the stated tolerance of the single process's."""
    backend = single_process_backend(kind)
    settings = WorkflowSettings(seed=seed)
    params = XGBoostParams(n_estimators=60, max_depth=5)
    planned = plan(path, target, settings)
    single = run_arm(backend, TableWorkflow(settings, planned, "xgboost", params.model_dump()))
    arm, workflow, _ = run_on_session(session, table_builder(planned), settings, params, seed)

    assert arm["status"] == "ok", arm.get("reason")
    assert workflow.name == "table" and workflow.task == planned.plan.task
    assert arm["rows"] == single.rows and arm["features"] == single.features
    assert set(arm["stages"]) == set(STAGES) and all(v >= 0 for v in arm["stages"].values())
    assert arm["device_used"].startswith("cuda" if kind == "gpu" else "cpu")
    assert arm["train_attempts"] == [{"attempt": 1, "status": "ok", "workers": session.info.workers}]
    if workflow.task == "regression":
        mine, theirs = arm["metrics"]["rmse"], single.metrics["rmse"]
        assert abs(mine - theirs) <= RMSE_SHARE * theirs, (arm["metrics"], single.metrics)
    else:
        mine, theirs = arm["metrics"]["auc"], single.metrics["auc"]
        assert abs(mine - theirs) <= DASK_PARITY_TOLERANCE, (arm["metrics"], single.metrics)
    return {"cluster": arm["metrics"], "single": single.metrics}
