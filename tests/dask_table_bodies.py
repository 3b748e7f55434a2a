"""Test bodies shared by the Dask CPU and GPU suites of a user's table (``test_dask_table.py``,
``test_dask_table_gpu.py``).

Each takes a started :class:`~accel.scaleout.cluster.ClusterSession` and the workers' kind, and checks
that the distributed run of ``accel run --data FILE --target COLUMN`` reproduces the single-process
run of the same kind: the same rows and features exactly, and the hold-out metric within the
stated tolerance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from accel.data.readers import read_source
from accel.models import XGBoostSettings
from accel.runner import run_arm
from accel.scaleout.cluster_run import DASK_PARITY_TOLERANCE, run_on_session
from accel.timing import EXTRA_STAGES, STAGES
from accel.workflows.base import WorkflowSettings
from accel.workflows.partitions import worker_slots
from accel.workflows.table import TableWorkflow, plan_table, probe_encodings
from accel.workflows.table_dask import DaskTable, table_builder
from tests.bodies import to_pandas
from tests.dask_bodies import single_process_backend
from tests.tables import shop_orders

#: Regression: the cluster's hold-out RMSE within this share of the single process's.
RMSE_SHARE = 0.02


def write_tables(folder: Path, n: int = 4000) -> dict[str, Path]:
    """The same rows as a CSV file, a gzip CSV file and a folder of four Parquet files of unequal
    sizes; and the data where cuDF and pandas part ways (:func:`write_edge_tables`)."""
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
    tables = {"csv": csv, "csv.gz": gz, "parquet": parquet, "csv-gaps": no_target}
    return {**tables, **write_edge_tables(folder, frame, cuts)}


def _parquet_parts(folder: Path, frame: pd.DataFrame, cuts: list[int], part) -> Path:
    """``frame`` cut at ``cuts`` into Parquet files, each written from ``part(i, rows)`` (a pyarrow Table)."""
    import pyarrow.parquet as pq

    folder.mkdir(exist_ok=True)
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
        pq.write_table(part(i, frame.iloc[a:b].reset_index(drop=True)), folder / f"part-{i}.parquet")
    return folder


def write_edge_tables(folder: Path, frame: pd.DataFrame, cuts: list[int]) -> dict[str, Path]:
    """The rows of ``frame`` as the inputs where cuDF and pandas part ways.

    - ``csv-none``: every missing value written as the text ``None`` (pandas reads it as missing,
      libcudf's default list has no ``"None"``);
    - ``parquet-mixed``: a folder whose files differ in a column's type (``price`` decimal128 in
      one file, float32 in another, float64 in the others) and in column order (libcudf reads
      several files in one call only when they share one schema);
    - ``parquet-durations``: a ``duration[s]`` feature ``wait`` (read as seconds on both arms);
    - ``parquet-decimal256``: ``price`` as decimal256(40, 2) and ``items`` as float16, types cuDF
      has none for (read on the host on the GPU arm);
    - ``csv-words``: a word in 2% of ``price`` (``unknown``, ``?``) and ``-`` in 2% of ``items``:
      columns of numbers read as text, their words as missing (cuDF's string match and cast).
    """
    import decimal

    import pyarrow as pa

    def decimal_price(rows: pd.DataFrame, kind: Any) -> pa.Array:
        return pa.array([None if v != v else decimal.Decimal(f"{v:.2f}") for v in rows["price"]], kind)

    def mixed(i: int, rows: pd.DataFrame) -> pa.Table:
        table = pa.Table.from_pandas(rows, preserve_index=False)
        if i == 0:
            return table.set_column(table.schema.get_field_index("price"), "price", decimal_price(rows, pa.decimal128(10, 2)))
        if i == 1:
            return table.select(list(reversed(table.column_names)))
        if i == 2:
            return table.set_column(table.schema.get_field_index("price"), "price", table.column("price").cast(pa.float32()))
        return table

    def durations(i: int, rows: pd.DataFrame) -> pa.Table:
        wait = pd.to_timedelta((rows["items"].fillna(0) * 37 + rows.index % 11).to_numpy(), unit="s")
        return pa.Table.from_pandas(rows.assign(wait=wait), preserve_index=False)

    def wide_types(i: int, rows: pd.DataFrame) -> pa.Table:
        table = pa.Table.from_pandas(rows, preserve_index=False)
        table = table.set_column(table.schema.get_field_index("price"), "price", decimal_price(rows, pa.decimal256(40, 2)))
        return table.set_column(table.schema.get_field_index("items"), "items", table.column("items").cast(pa.float16()))

    none_text = folder / "orders-none.csv"
    frame.to_csv(none_text, index=False, na_rep="None")
    words, rng = frame.astype({"price": object, "items": object}), np.random.default_rng(8)
    words.loc[rng.random(len(frame)) < 0.02, "price"] = rng.choice(["unknown", "?"])
    words.loc[rng.random(len(frame)) < 0.02, "items"] = "-"
    words.to_csv(folder / "orders-words.csv", index=False)
    return {
        "csv-none": none_text,
        "parquet-mixed": _parquet_parts(folder / "orders-mixed", frame, cuts, mixed),
        "parquet-durations": _parquet_parts(folder / "orders-durations", frame, cuts, durations),
        "parquet-decimal256": _parquet_parts(folder / "orders-decimal256", frame, cuts, wide_types),
        "csv-words": folder / "orders-words.csv",
    }


def check_table_reads_as_one_process(kind: str, path: Path, target: str, seed: int = 3) -> None:
    """The Dask read of a table (its partitions, computed here with Dask's synchronous scheduler:
    no cluster) equals what one process of the same kind reads, column for column."""
    import dask

    backend = single_process_backend(kind)
    settings = WorkflowSettings(seed=seed)
    planned = plan(path, target, settings)
    single = to_pandas(read_source(backend.xdf, planned.source, planned.plan.read_columns, planned.plan.csv_dtypes()))
    table = DaskTable(planned, settings, kind, backend, slots=2)
    with dask.config.set(scheduler="sync"):
        parts = [to_pandas(part) for part in dask.compute(*table.read().to_delayed())]
    got = pd.concat(parts, ignore_index=True)[list(single.columns)]
    pd.testing.assert_frame_equal(got, single, check_dtype=False)
    numbers = [c.name for c in planned.plan.features if c.kind == "numeric"]
    assert all(got[c].dtype.kind == "f" for c in numbers), got.dtypes


def plan(path: Path, target: str, settings: WorkflowSettings, probe: str = "off"):
    """The single-process plan (``--probe off``: the 300-value column is target-encoded)."""
    planned = plan_table(str(path), target, None, [], settings, family="native")
    probe_encodings(planned, settings.seed, probe)
    return planned


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
    params = XGBoostSettings(n_estimators=60, max_depth=5)
    planned = plan(path, target, settings)
    single = run_arm(backend, TableWorkflow(settings, planned, "xgboost", params.model_dump()))
    arm, workflow, _ = run_on_session(session, table_builder(planned), settings, params, seed)

    assert arm["status"] == "ok", arm.get("reason")
    assert workflow.name == "table" and workflow.task == planned.plan.task
    assert arm["rows"] == single.rows and arm["features"] == single.features
    assert set(arm["stages"]) == {*STAGES, *EXTRA_STAGES} and all(v >= 0 for v in arm["stages"].values())
    assert arm["device_used"].startswith("cuda" if kind == "gpu" else "cpu")
    assert arm["train_attempts"] == [{"attempt": 1, "status": "ok", "workers": session.info.workers}]
    if workflow.task == "regression":
        mine, theirs = arm["metrics"]["rmse"], single.metrics["rmse"]
        assert abs(mine - theirs) <= RMSE_SHARE * theirs, (arm["metrics"], single.metrics)
    else:
        mine, theirs = arm["metrics"]["auc"], single.metrics["auc"]
        assert abs(mine - theirs) <= DASK_PARITY_TOLERANCE, (arm["metrics"], single.metrics)
    return {"cluster": arm["metrics"], "single": single.metrics}
