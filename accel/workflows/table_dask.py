"""A user's table (``--data FILE --target COLUMN``) on a Dask cluster, built from the single-process pieces.

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
- ``features``: :class:`~accel.data.autofeatures.TableFeaturizer` per partition. Its fitted
  state is the only global piece: the target encoders' sums and counts per (category, fold) and
  their target sums and squares. For a class target these are sums of 0/1 indicators, exact
  in any order: each partition fits them on its training rows with the folds of their global
  training positions (``TableFeaturizer.folds`` in plan order), the client adds the
  partitions' statistics up (:func:`merge_fits`) and every partition is encoded with the
  merged state. A regression target's sums are sums of floats, which depend on the order of
  the additions in their last bits; so that they equal the single-process fit exactly, the
  encoded columns' codes and the target of the training rows (a few numbers a row) come to
  the client, which fits them in one pass in plan order, as the single process does
  (:func:`encoder_inputs`). XGBoost's features need no other fitted statistic (no imputation
  or scaling: :class:`~accel.data.autofeatures.DenseFinish`), which is why the cluster trains
  XGBoost only.

The training rows of the partitions, taken in partition order, are the training rows in plan
order, so the gathered feature frames equal the single-process frames row for row.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accel import _compat
from accel.backend import Backend
from accel.data.autofeatures import TableFeaturizer, TableTransform, target_codes
from accel.data.prepared import Prepared
from accel.data.readers import TableSource, convert_columns, infinite_as_missing, read_file, reads_file_by_file
from accel.data.schema import PlannedTable, TablePlan
from accel.errors import AccelError
from accel.faultpoints import fault_point
from accel.registry import DEFAULT_MODEL
from accel.workflows.base import DaskBuilder, DaskWorkflow, WorkflowSettings
from accel.workflows.partitions import partition_offsets, worker_backend, worker_slots
from accel.workflows.table import TableWorkflow

#: The feature family a Dask run builds (every model with a Dask trainer takes it): the target
#: encoders are its only fitted statistic, no imputation or scaling.
FAMILY = "native"
#: The target's column in the featured partitions (beside the features, split off at the end).
TARGET = "__y__"
#: CSV bytes per partition at most: CPU workers like several partitions each (load balance,
#: less memory per task); a GPU wants large partitions to keep its cores busy.
CSV_BLOCK_BYTES = {"cpu": 64 << 20, "gpu": 1 << 30}
#: CSV bytes per partition at least (a block must hold whole rows; tiny blocks only cost overhead).
CSV_MIN_BLOCK_BYTES = 64 << 10


# --------------------------------------------------------------------------- on the workers


@dataclass(frozen=True)
class Rows:
    """Some rows of a partition, one bit per row of it: how a task carries its rows (the
    positions of 3e6 rows are 24 MB as int64 in a graph, 375 KB as bits)."""

    bits: np.ndarray
    size: int

    @classmethod
    def at(cls, positions: np.ndarray, size: int) -> Rows:
        """The rows at ``positions`` (sorted, unique) of a partition of ``size`` rows."""
        mask = np.zeros(size, dtype=bool)
        mask[positions] = True
        return cls(np.packbits(mask), size)

    def positions(self) -> np.ndarray:
        """Their positions in the partition, in order."""
        return np.flatnonzero(np.unpackbits(self.bits, count=self.size))


def select_rows(part: Any, rows: Rows) -> Any:
    """The partition's ``rows`` (infinite numbers as missing, as when read whole)."""
    return infinite_as_missing(part.iloc[rows.positions()].reset_index(drop=True))


def _split(part: Any, featurizer: TableFeaturizer, positions: np.ndarray) -> tuple[Any, Any]:
    """Rows of a partition (plan rows) at ``positions``, categoricals cast, and their target codes."""
    plan = featurizer.plan
    rows = featurizer.cast(part.iloc[positions].reset_index(drop=True))
    return rows, target_codes(featurizer.xdf, rows[plan.target], plan)


def _training_rows(part: Any, plan: Any, seed: int, kind: str, train: Rows) -> tuple[TableFeaturizer, Any, Any]:
    """A worker's featurizer of ``plan``, and this partition's training rows and their target codes (:func:`_split`)."""
    featurizer = TableFeaturizer(worker_backend(kind).xdf, plan, FAMILY, seed)
    return featurizer, *_split(part, featurizer, train.positions())


def fit_partition(part: Any, plan: Any, seed: int, kind: str, train: Rows, folds: np.ndarray) -> dict[str, Any]:
    """The target encoders' partial statistics of this partition's training rows."""
    featurizer, rows, y = _training_rows(part, plan, seed, kind, train)
    featurizer.partial_fit(rows, y, folds.astype(np.int64))  # sent in one byte each; int64 as the single process fits
    return {name: encoder.partial_state() for name, encoder in featurizer.encoders.items()}


def encoder_inputs(part: Any, plan: Any, seed: int, kind: str, train: Rows) -> tuple[Any, Any]:
    """The target-encoded columns (cast to their categories) and the target codes of this
    partition's training rows, for a fit in one pass on the client."""
    featurizer, rows, y = _training_rows(part, plan, seed, kind, train)
    return rows[list(featurizer.encoders)], y


def featurize_partition(part: Any, featurizer: TableFeaturizer, at: Rows, folds: np.ndarray | None) -> Any:
    """The features of this partition's rows ``at`` (training rows with their folds) and the target."""
    fault_point("features")
    rows, y = _split(part, featurizer, at.positions())
    out = featurizer.transform(rows, None if folds is None else folds.astype(np.int64))
    out[TARGET] = y.reset_index(drop=True)
    return out


def file_partition(index: int, source: TableSource, wanted: list[str], kind: str) -> Any:
    """File ``index`` of a Parquet table as one partition, read on a worker as a single process
    reads it (:func:`~accel.data.readers.read_file`)."""
    return read_file(worker_backend(kind).xdf, source, index, wanted)


def featured_meta(part: Any, featurizer: TableFeaturizer) -> tuple[Any, dict[str, str]]:
    """An empty frame shaped like a featured partition, made on a worker from real rows, and
    where each date column's text was parsed (for the run record)."""
    head = Rows.at(np.arange(min(len(part), 1000)), len(part))
    return featurize_partition(part, featurizer, head, None).iloc[:0], dict(featurizer.report.dates)


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
    :func:`encoder_inputs`).
    """
    for name, encoder in featurizer.encoders.items():
        for fit in fits:
            encoder.add_partial_state(fit[name])
    featurizer.finalize()


class DaskTable:
    """A user's table on a Dask client's workers (``kind``: their ``"cpu"`` or ``"gpu"``).

    Parameters
    ----------
    planned : PlannedTable
        The single-process plan (:func:`accel.workflows.table.plan_table`).
    settings : WorkflowSettings
        Rows, seed, split: the same settings as the plan's.
    kind : {"cpu", "gpu"}
        The workers' kind; partitions are pandas or cuDF frames accordingly.
    client_backend : Backend
        This process's backend of the same kind (it merges the encoders' statistics).
    slots : int
        Worker threads (GPU workers: workers) to keep busy; sizes the CSV blocks.
    """

    name = "table"
    family = FAMILY

    def __init__(self, planned: PlannedTable, settings: WorkflowSettings, kind: str, client_backend: Backend, slots: int):
        self.planned, self.plan = planned, planned.plan
        self.task = self.plan.task
        self.n_classes = max(len(self.plan.classes or []), 2)
        self.settings, self.kind, self.backend, self.slots = settings, kind, client_backend, slots
        self.feature_reports: dict[str, Any] = {}
        self._single = TableWorkflow(settings, planned, DEFAULT_MODEL, {})  # describes the data as a run in this process does
        self.partitions: int | None = None
        self._bounds: list[tuple[int, int]] = []
        self._fitted: Any = None  # the scattered featurizer (see features)

    def clear_workers(self, client: Any) -> None:
        """Nothing to drop: the workers read the table's partitions as tasks, and keep nothing else."""

    def describe_data(self) -> dict[str, Any]:
        """The table as a single-process run describes it, and the partitions it was read in."""
        return {**self._single.describe_data(), "partitions": self.partitions}

    def read(self) -> Any:
        """The plan's columns of the file, as a Dask frame (:func:`read_table`)."""
        plan = self.plan
        return read_table(self.planned.source, plan.read_columns, plan.csv_dtypes(), self.backend.xdf, self.kind, self.slots)

    def load(self, client: Any) -> tuple[Any, int]:
        """The plan's rows, one persisted ``Delayed`` frame per partition as read; the file's row count.

        The partitions are taken as Dask plans them (``to_delayed`` of the read, after its
        optimisation, which may fuse small Parquet files), then persisted, counted and cut to
        the plan's rows: position ``p`` of the file is row ``p - offset`` of its partition.
        """
        import dask
        from distributed import wait

        raw = client.persist(self.read().to_delayed())
        wait(raw)
        offsets = partition_offsets(client, raw)
        if offsets[-1] != self.plan.rows_in_file:
            raise AccelError(
                f"--data: the cluster read {offsets[-1]:,} rows of {str(self.planned.source.original)!r} where "
                f"planning counted {self.plan.rows_in_file:,}: has the file changed since?"
            )
        starts = np.searchsorted(self.plan.row_positions, offsets)
        self._bounds = [(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:], strict=True)]
        rows = client.persist(
            [
                dask.delayed(select_rows)(part, Rows.at(self.plan.row_positions[a:b] - offsets[i], offsets[i + 1] - offsets[i]))
                for i, (part, (a, b)) in enumerate(zip(raw, self._bounds, strict=True))
            ]
        )
        wait(rows)
        del raw
        self.partitions = len(rows)
        return rows, offsets[-1]

    def features(self, client: Any, raw: Any, loaded_rows: int) -> Prepared:
        """Model input as Dask collections (the frames of ``Prepared``), persisted on the workers."""
        import dask
        import dask.dataframe as dd
        from distributed import wait

        plan, seed = self.plan, self.settings.seed
        featurizer = TableFeaturizer(self.backend.xdf, plan, self.family, seed)
        parts: list[Any] = raw  # one persisted Delayed frame per partition (load)
        train, test = [], []  # per partition: local positions (and folds) of its training / test rows
        for a, b in self._bounds:
            lo, hi = np.searchsorted(plan.train_pos, [a, b])
            train.append((Rows.at(plan.train_pos[lo:hi] - a, b - a), featurizer.folds[lo:hi].astype(np.int8)))
            lo, hi = np.searchsorted(plan.test_pos, [a, b])
            test.append(Rows.at(plan.test_pos[lo:hi] - a, b - a))

        # The plan goes to the workers without the table's row positions, once, as one task of
        # the graph (not once inside each partition's task).
        shipped_plan = worker_plan(plan)
        shared_plan = dask.delayed(shipped_plan, traverse=False)
        if featurizer.encoders and plan.task == "regression":  # float sums: fitted in plan order (see above)
            inputs = [
                dask.delayed(encoder_inputs)(part, shared_plan, seed, self.kind, positions)
                for part, (positions, _) in zip(parts, train, strict=True)
            ]
            columns, targets = zip(*client.compute(inputs, sync=True), strict=True)
            xdf = self.backend.xdf
            featurizer.partial_fit(
                xdf.concat(columns, ignore_index=True), xdf.concat(targets, ignore_index=True), featurizer.folds
            )
            featurizer.finalize()
        elif featurizer.encoders:  # sums of 0/1 indicators: per partition, added up here
            fits = [
                dask.delayed(fit_partition)(part, shared_plan, seed, self.kind, positions, folds)
                for part, (positions, folds) in zip(parts, train, strict=True)
            ]
            merge_fits(featurizer, client.compute(fits, sync=True))
        shipped = copy.copy(featurizer)  # its plan and folds as the workers need them (each task has its folds)
        shipped.plan, shipped.folds = shipped_plan, _NO_ROWS
        fitted = client.scatter(shipped, broadcast=True, hash=False)
        # Held for the run: scattered data has no task to recompute it, so once the client lets go
        # of it the scheduler forgets it, and partitions lost with a worker later (during
        # training) could not be recomputed ("cancelled for reason: already forgotten").
        self._fitted = fitted
        meta, dates = client.compute(dask.delayed(featured_meta, nout=2)(parts[0], fitted), sync=True)

        def featured(rows: list[Any]) -> Any:
            frames = [
                dask.delayed(featurize_partition)(part, fitted, at, folds) for part, (at, folds) in zip(parts, rows, strict=True)
            ]
            return dd.from_delayed(frames, meta=meta, verify_meta=False)

        train_df, test_df = featured(train), featured([(at, None) for at in test])
        features = [c for c in meta.columns if c != TARGET]
        X_train, y_train, X_test, y_test = client.persist(
            [train_df[features], train_df[TARGET], test_df[features], test_df[TARGET]]
        )
        wait([X_train, y_train, X_test, y_test])
        featurizer.report.dates = dates
        self.feature_reports[self.kind] = featurizer.report.describe()
        n_train, n_test = len(plan.train_pos), len(plan.test_pos)
        return Prepared(
            X_train=X_train,
            y_train=y_train,
            X_test=X_test,
            y_test=y_test,
            categorical=list(featurizer.categorical),
            rows={"loaded": loaded_rows, "with_target": len(plan.row_positions), "train": n_train, "test": n_test},
            transform=TableTransform(featurizer),
            test_ids=plan.row_positions[plan.test_pos],
        )


def table_builder(planned: PlannedTable) -> DaskBuilder:
    """The Dask side of a user's table planned on the host (:func:`accel.workflows.table.plan_table`)."""

    def build(settings: WorkflowSettings, kind: str, backend: Backend, workers: int, threads: int) -> DaskWorkflow:
        return DaskTable(planned, settings, kind, backend, worker_slots(kind, workers, threads))

    return build
