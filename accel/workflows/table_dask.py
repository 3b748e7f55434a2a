"""A user's table (``--data FILE --target COLUMN``) on a Dask cluster: what is its own of
:class:`~accel.workflows.partitions.DaskForm`.

The plan is the single-process plan (:func:`accel.workflows.table.plan_table`, made once on the
host): the columns, their kinds and vocabularies, the rows (``plan.row_positions``) and the split
(``plan.train_pos`` / ``plan.test_pos``). The workers then read the file themselves:

- ``load``: ``dask.dataframe.read_parquet`` (one partition per file or row-group block, the
  readers' conversions applied per partition), or one partition per file read by the
  single-process reader (:func:`~accel.data.readers.read_file`) where the files differ in schema,
  hold hive partitions or hold columns cuDF has no type for; or ``read_csv`` (byte-range blocks)
  of the plan's columns with the plan's types, with Dask-cuDF on GPU workers. The
  partitions' lengths give every row its position in the file (offsets), and each partition
  keeps its rows of ``plan.row_positions``, so the cluster holds exactly the single-process rows;
- ``features``: :class:`~accel.data.autofeatures.TableTransform` per partition. Its fitted
  state is the only global piece: the target encoders' sums and counts per (category, fold) and
  their target sums and squares. For a class target these are sums of 0/1 indicators, exact
  in any order: each partition fits them on its training rows with the folds of their global
  training positions (``TableFeaturizer.folds`` in plan order), the client adds the
  partitions' statistics up (:func:`merge_fits`) and every partition is encoded with the
  merged state. A regression target's sums are sums of floats, which depend on the order of
  the additions in their last bits; so that they equal the single-process fit exactly, the
  encoded columns' codes and the target of the training rows (a few numbers a row) come to
  the client, which fits them in one pass in plan order, as the single process does
  (:func:`encoder_fit`, :meth:`DaskTable.fit`). XGBoost's features need no other fitted statistic (no imputation
  or scaling: :class:`~accel.data.autofeatures.DenseFinish`), which is why the cluster trains
  XGBoost only.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np

from accel import _compat
from accel._compat import Frame
from accel.backend import Backend
from accel.data.autofeatures import TableFeaturizer, TableTransform, target_codes
from accel.data.prepared import Prepared
from accel.data.readers import TableSource, convert_columns, infinite_as_missing, read_file, reads_file_by_file
from accel.data.schema import PlannedTable, TablePlan
from accel.errors import AccelError
from accel.registry import DEFAULT_MODEL
from accel.workflows.base import WorkflowSettings
from accel.workflows.partitions import DaskBuilder, DaskForm, Rows, worker_backend, worker_slots
from accel.workflows.table import TableWorkflow

#: The feature family a Dask run builds (every model with a Dask trainer takes it): the target
#: encoders are its only fitted statistic, no imputation or scaling.
FAMILY = "native"
#: CSV bytes per partition at most: CPU workers like several partitions each (load balance,
#: less memory per task); a GPU wants large partitions to keep its cores busy.
CSV_BLOCK_BYTES = {"cpu": 64 << 20, "gpu": 1 << 30}
#: CSV bytes per partition at least (a block must hold whole rows; tiny blocks only cost overhead).
CSV_MIN_BLOCK_BYTES = 64 << 10


# --------------------------------------------------------------------------- on the workers


def encoder_fit(part: Frame, train: np.ndarray, folds: np.ndarray, plan: TablePlan) -> Any:
    """A partition's partial fit: the target encoders' partial statistics of its training rows
    (a class target), or their target-encoded columns (cast to their categories) and target
    codes (a regression target, fitted in one pass on the client: :meth:`DaskTable.fit`).
    ``plan`` is the workers' plan (:func:`worker_plan`)."""
    featurizer = TableFeaturizer(_compat.frame_library(part), plan, FAMILY, 0)
    if not featurizer.encoders:
        return None
    rows = featurizer.cast(part.iloc[train].reset_index(drop=True))
    y = target_codes(featurizer.xdf, rows[featurizer.plan.target], featurizer.plan)
    if featurizer.plan.task == "regression":
        return rows[list(featurizer.encoders)], y
    featurizer.partial_fit(rows, y, folds)
    return {name: encoder.partial_state() for name, encoder in featurizer.encoders.items()}


def file_partition(index: int, source: TableSource, wanted: list[str], kind: str) -> Any:
    """File ``index`` of a Parquet table as one partition, read on a worker as a single process
    reads it (:func:`~accel.data.readers.read_file`)."""
    return read_file(worker_backend(kind).xdf, source, index, wanted)


# --------------------------------------------------------------------------- on the client

#: Row positions of the whole table, as a worker's plan holds them: none (each partition's task
#: carries its own rows, as ``Rows``, and its training rows' folds in one byte each).
_NO_ROWS = np.empty(0, dtype=np.int64)


def worker_plan(plan: TablePlan) -> TablePlan:
    """``plan`` without the positions of every row of the table, which the workers never read
    (at 3e6 rows they were 48 MB in every graph that carried the plan, and on every worker)."""
    return dataclasses.replace(plan, row_positions=_NO_ROWS, train_pos=_NO_ROWS, test_pos=_NO_ROWS)


def csv_blocksize(size_bytes: int, kind: str, slots: int) -> int:
    """Bytes per CSV partition: enough partitions to keep ``slots`` worker threads busy."""
    return int(min(CSV_BLOCK_BYTES[kind], max(CSV_MIN_BLOCK_BYTES, math.ceil(size_bytes / max(slots, 1)))))


def read_table(source: Any, columns: list[str], dtypes: dict[str, str], xdf: Any, kind: str, slots: int) -> Any:
    """``columns`` of a table as a Dask frame (lazy): Dask-cuDF's readers for GPU workers.

    CSV columns are read with ``dtypes`` (a plan's :meth:`~accel.data.schema.TablePlan.csv_dtypes`,
    as the streamed single-process run reads its chunks) and, on cuDF, pandas' missing-value
    strings (:func:`accel._compat.csv_options`), so that every block parses alike and as one
    process parses the file; a gzip file is one partition (it cannot be cut into byte ranges).
    Parquet: :func:`read_parquet_table`.
    """
    import dask
    import dask.dataframe as dd

    with dask.config.set({"dataframe.backend": _compat.dask_dataframe_backend(xdf)}):
        if source.kind == "parquet":
            return read_parquet_table(source, columns, xdf, kind)
        path = Path(source.paths[0])
        kwargs: dict[str, Any] = {"sep": source.delimiter or ",", "usecols": columns, **_compat.csv_options(xdf, dtypes)}
        if path.name.lower().endswith(".gz"):
            kwargs.update(compression="gzip", blocksize=None)
        else:
            kwargs["blocksize"] = csv_blocksize(path.stat().st_size, kind, slots)
        return dd.read_csv(str(path), **kwargs)


def read_parquet_table(source: TableSource, columns: list[str], xdf: Any, kind: str) -> Any:
    """``columns`` of a Parquet table as a Dask frame, each partition converted as the single
    process converts its frame (:func:`~accel.data.readers.convert_columns`: durations in seconds,
    decimals as float64), so that both read the same numbers.

    Files that differ in schema (libcudf reads several files in one call only when they share
    one), hold hive partitions, or hold columns cuDF has no type for (read on the host:
    :func:`accel._compat.read_parquet_rows`) are read one file per partition by the
    single-process reader; the others by ``dask.dataframe.read_parquet``.
    """
    import dask.dataframe as dd

    paths = [str(p) for p in source.paths]
    if reads_file_by_file(source) or _compat.parquet_reads_on_host(xdf, paths, columns):
        meta = read_file(xdf, source, 0, columns, rows=1).iloc[:0]
        return dd.from_map(file_partition, range(len(paths)), args=(source, columns, kind), meta=meta)
    frame = dd.read_parquet(paths, columns=columns, index=False)
    return frame.map_partitions(convert_columns, source, meta=convert_columns(frame._meta.copy(), source))


def merge_fits(featurizer: TableFeaturizer, fits: list[dict[str, Any]]) -> None:
    """Add the partitions' partial statistics into ``featurizer``'s encoders and finalize them.

    The sums and counts per (category, fold) are added up by
    :meth:`~accel.data.autofeatures.TargetEncoder.finalize` (it groups the batches' parts
    again), the target sums, squares and row counts add here. For a class target (sums of 0/1
    indicators, whole numbers) that is exactly what fitting every training row in one pass
    gives; float sums would agree only to their last bits (a regression target: see
    :meth:`DaskTable.fit`).
    """
    for name, encoder in featurizer.encoders.items():
        for fit in fits:
            encoder.add_partial_state(fit[name])
    featurizer.finalize()


class DaskTable(DaskForm):
    """A user's table on a Dask client's workers, planned on the host (:func:`accel.workflows.table.plan_table`).

    ``slots``: worker threads (GPU workers: workers) to keep busy; it sizes the CSV blocks.
    """

    cleaned = staticmethod(infinite_as_missing)  # as when read whole
    partial = staticmethod(encoder_fit)

    def __init__(self, planned: PlannedTable, settings: WorkflowSettings, kind: str, client_backend: Backend, slots: int):
        # The single-process workflow describes the data as a run in this process does.
        super().__init__(TableWorkflow(settings, planned, DEFAULT_MODEL, {}), settings, kind, client_backend)
        self.planned, self.slots = planned, slots

    def read(self) -> Any:
        """The plan's columns of the file, as a Dask frame (:func:`read_table`)."""
        plan = self.plan
        return read_table(self.planned.source, plan.read_columns, plan.csv_dtypes(), self.backend.xdf, self.kind, self.slots)

    def read_partitions(self) -> list[Any]:
        """The partitions as Dask plans them (``to_delayed`` of the read, after its optimisation,
        which may fuse small Parquet files)."""
        return list(self.read().to_delayed())

    def kept(self, offsets: tuple[int, ...]) -> list[Rows | None]:
        """The plan's rows of each partition: position ``p`` of the file is row ``p - offset`` of its partition."""
        plan = self.plan
        if offsets[-1] != plan.rows_in_file:
            raise AccelError(
                f"--data: the cluster read {offsets[-1]:,} rows of {str(self.planned.source.original)!r} where "
                f"planning counted {plan.rows_in_file:,}: has the file changed since?"
            )
        return list(Rows.per_partition(plan.row_positions, offsets))

    def split(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._featurizer = TableFeaturizer(self.backend.xdf, self.plan, FAMILY, self.settings.seed)  # fitted afresh each time
        return self.plan.train_pos, self.plan.test_pos, self._featurizer.folds

    def fit_state(self) -> TablePlan:
        """The plan without the table's row positions (:func:`worker_plan`)."""
        return worker_plan(self.plan)

    def fit(self, partials: list[Any]) -> tuple[TableTransform, TableTransform]:
        """The target encoders fitted: the partitions' statistics added up (:func:`merge_fits`, a
        class target), or every training row's codes fitted in one pass in plan order, as the
        single process fits them (a regression target: float sums depend on their order)."""
        featurizer, xdf = self._featurizer, self.backend.xdf
        if featurizer.encoders and featurizer.plan.task == "regression":
            columns, targets = (xdf.concat(parts, ignore_index=True) for parts in zip(*partials, strict=True))
            featurizer.partial_fit(columns, targets, featurizer.folds)
            featurizer.finalize()
        else:  # partials are None without encoders
            merge_fits(featurizer, partials)
        shipped = copy.copy(featurizer)  # its plan and folds as the workers need them (each task has its folds)
        shipped.plan, shipped.folds = self.fit_state(), _NO_ROWS
        return TableTransform(shipped), TableTransform(featurizer)

    def finish(self, prepared: Prepared, test_pos: np.ndarray, worker_fitted: object) -> None:
        """The hold-out rows' ids (rows of the file) and the feature report, with where each date
        column's text was parsed (on a worker)."""
        plan, report = self.plan, self._featurizer.report
        prepared.test_ids = plan.row_positions[test_pos]
        assert isinstance(worker_fitted, TableTransform)
        report.dates = dict(worker_fitted.featurizer.report.dates)
        self.feature_reports[self.kind] = report.describe()


def table_builder(planned: PlannedTable) -> DaskBuilder:
    """The Dask side of a user's table planned on the host (:func:`accel.workflows.table.plan_table`)."""

    def build(settings: WorkflowSettings, kind: str, backend: Backend, workers: int, threads: int) -> DaskForm:
        return DaskTable(planned, settings, kind, backend, worker_slots(kind, workers, threads))

    return build
