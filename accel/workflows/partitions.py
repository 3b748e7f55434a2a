"""A workflow on a Dask cluster: its single-process fit and transform mapped over row partitions.

:class:`DaskForm` is every workflow's Dask side; a workflow's subclass says only what is its
own (:class:`~accel.workflows.flights_dask.DaskFlights`, :class:`~accel.workflows.table_dask.DaskTable`):
how its partitions are read and which of their rows it keeps (``load``), its split, and the
fit of its features, made of partial fits on the partitions' training rows that the client
merges. Everything else is the same for both:

- ``load``: the partitions as read, persisted on the workers and counted; each keeps its rows
  of the run (:func:`select_rows`), so the cluster holds the single-process rows;
- ``features``: the partitions' lengths give every row its global position, and each partition
  takes its rows of the single-process split (:class:`Rows`, one bit a row); the workflow's
  partial fit runs on every partition's training rows (:func:`fit_partition`), the client
  merges them into the fitted transform (:class:`~accel.data.prepared.FeatureTransform`, the one
  the fitted pipeline keeps), which every partition's rows then go through
  (:func:`featurize_partition`), the target beside the features.

The training rows of the partitions, taken in partition order, are the training rows in the
single-process order, so the gathered feature frames equal the single-process frames row for row.
Workers hold cuDF partitions when they are GPU workers and pandas partitions otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from accel._compat import Frame
from accel.backend import Backend, get_backend
from accel.data.prepared import FeatureTransform, Prepared
from accel.faultpoints import fault_point
from accel.workflows.base import WorkflowSettings

#: The target's column in the featured partitions (beside the features, split off at the end).
TARGET = "__y__"


#: The backend of this worker process: :func:`accel.backend.get_backend` its kind, made once.
worker_backend = lru_cache(maxsize=2)(get_backend)


def worker_slots(kind: str, workers: int, threads: int) -> int:
    """Partitions to aim at at least: two per worker thread (two per GPU worker: one GPU each)."""
    return 2 * (workers if kind == "gpu" else max(threads, workers))


def partition_offsets(client: Any, parts: list[Any]) -> tuple[int, ...]:
    """Each partition's first row among the rows of all ``parts`` (a frame's ``to_delayed()``), then their row count."""
    import dask

    lengths = client.compute([dask.delayed(len)(part) for part in parts], sync=True)
    return tuple(int(o) for o in np.cumsum([0, *lengths]))


def held_rows(part: Frame, offsets: tuple[int, ...], positions: np.ndarray, held: bool, partition_info: Any = None) -> Frame:
    """A partition's rows at ``positions`` (``held``) or its other rows; ``positions`` (sorted)
    among the rows of all partitions, the partition's first at ``offsets[i]``."""
    if partition_info is None:  # Dask asking for the output's shape
        return part
    start = offsets[partition_info["number"]]
    lo, hi = np.searchsorted(positions, [start, start + len(part)])
    local = positions[lo:hi] - start
    if not held:
        local = np.setdiff1d(np.arange(len(part)), local, assume_unique=True)
    return part.iloc[local].reset_index(drop=True)


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

    @classmethod
    def per_partition(cls, positions: np.ndarray, offsets: tuple[int, ...]) -> list[Rows]:
        """Each partition's rows at ``positions`` (sorted, among the rows of all partitions; the
        partition's first at ``offsets[i]``, then their row count)."""
        starts = np.searchsorted(positions, offsets)
        return [cls.at(positions[a:b] - o, e - o) for a, b, o, e in zip(starts, starts[1:], offsets, offsets[1:])]

    def positions(self) -> np.ndarray:
        """Their positions in the partition, in order."""
        return np.flatnonzero(np.unpackbits(self.bits, count=self.size))


#: A workflow's partial fit on one partition: ``(partition, its training rows' positions, their
#: folds as int64, the workflow's state)``; the client merges the answers (:meth:`DaskForm.fit`).
PartialFit = Callable[[Frame, np.ndarray, np.ndarray, Any], Any]


def select_rows(part: Frame, kept: Rows | None, cleaned: Callable[[Frame], Frame]) -> Frame:
    """A partition's rows of the run: those ``kept`` picks (all: None), ``cleaned`` by the workflow."""
    return cleaned(part if kept is None else part.iloc[kept.positions()].reset_index(drop=True))


def fit_partition(part: Frame, partial: PartialFit, state: object, train: Rows, folds: np.ndarray) -> object:
    """The workflow's partial fit of this partition's training rows (folds sent in one byte each)."""
    return partial(part, train.positions(), folds.astype(np.int64), state)


def featurize_partition(part: Frame, fitted: FeatureTransform, at: Rows, folds: np.ndarray | None) -> Frame:
    """The features of this partition's rows ``at`` (training rows with their folds) and the target."""
    fault_point("features")
    rows = part.iloc[at.positions()].reset_index(drop=True)
    out = fitted.transform(rows, None if folds is None else folds.astype(np.int64))
    out[TARGET] = fitted.labels(rows).reset_index(drop=True)
    return out


def featured_meta(part: Frame, fitted: FeatureTransform) -> tuple[Frame, FeatureTransform]:
    """An empty frame shaped like a featured partition, made on a worker from real rows, and the
    transform that made it (what it noticed of the rows: a table's date layouts)."""
    head = Rows.at(np.arange(min(len(part), 1000)), len(part))
    return featurize_partition(part, fitted, head, None).iloc[:0], fitted


# --------------------------------------------------------------------------- on the client


class DaskForm:
    """A workflow on a Dask client's workers (``kind``: their ``"cpu"`` or ``"gpu"``).

    Parameters
    ----------
    single
        The single-process workflow: its name, task, plan and description are this form's.
    settings : WorkflowSettings
        Rows, seed, split: the same settings give the same rows as the single-process run.
    kind : {"cpu", "gpu"}
        The workers' kind; partitions are pandas or cuDF frames accordingly.
    client_backend : Backend
        This process's backend of the same kind (it merges the partial fits).
    """

    #: What the workflow does to a partition's rows of the run when they are read, and its partial
    #: fit (:data:`PartialFit`): module-level functions (sent to the workers).
    cleaned: Callable[[Frame], Frame]
    partial: PartialFit

    def __init__(self, single: Any, settings: WorkflowSettings, kind: str, client_backend: Backend):
        self.single, self.settings, self.kind, self.backend = single, settings, kind, client_backend
        self.name, self.task, self.plan = single.name, single.task, single.plan
        self.n_classes = max(len(self.plan.classes or []), 2) if self.plan is not None else 2
        self.feature_reports: dict[str, Any] = {}
        self.partitions: int | None = None
        self._fitted: Any = None  # the scattered transform (see features)

    # ------------------------------------------------------------------ what a workflow says

    def read_partitions(self) -> list[Any]:
        """The partitions as read (lazy ``Delayed`` frames)."""
        raise NotImplementedError

    def kept(self, offsets: tuple[int, ...]) -> list[Rows | None]:
        """Per partition (its first row at ``offsets[i]``), its rows of the run (None: all)."""
        return [None] * (len(offsets) - 1)

    def split(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The training and test positions among the ``n`` rows (sorted), and the training rows' folds."""
        raise NotImplementedError

    def fit_state(self) -> object:
        """What every partial fit reads besides its rows (sent to the workers once)."""

    def fit(self, partials: list[Any]) -> tuple[FeatureTransform, FeatureTransform]:
        """The transform fitted from the partitions' partial fits: as sent to the workers, as kept."""
        raise NotImplementedError

    def finish(self, prepared: Prepared, test_pos: np.ndarray, worker_fitted: object) -> None:
        """Anything the workflow adds to ``prepared`` (the hold-out rows' ids) and its feature report."""

    def clear_workers(self, client: Any) -> None:
        """Drop what the workers keep of this workflow between tasks (at the end of a run)."""

    # ------------------------------------------------------------------ the same for every workflow

    def describe_data(self) -> dict[str, Any]:
        """The data as a single-process run describes it, and the partitions it was read in."""
        return {**self.single.describe_data(), "partitions": self.partitions}

    def load(self, client: Any) -> tuple[list[Any], int]:
        """The run's rows, one persisted ``Delayed`` frame per partition as read; the rows read.

        The partitions are taken as Dask plans them, then persisted, counted and cut to the
        run's rows (:meth:`kept`, :func:`select_rows`).
        """
        import dask
        from distributed import wait

        raw = client.persist(self.read_partitions())
        wait(raw)
        offsets = partition_offsets(client, raw)
        kept = self.kept(offsets)
        rows = client.persist([dask.delayed(select_rows)(p, k, self.cleaned) for p, k in zip(raw, kept, strict=True)])
        wait(rows)
        self.partitions = len(rows)
        return rows, offsets[-1]

    def features(self, client: Any, parts: list[Any], loaded_rows: int) -> Prepared:
        """Model input as Dask collections (the frames of ``Prepared``), persisted on the workers."""
        import dask
        import dask.dataframe as dd
        from distributed import wait

        offsets = partition_offsets(client, parts)
        train_pos, test_pos, folds = self.split(offsets[-1])
        # Per partition: its training rows and their folds (one byte each), its test rows.
        starts = np.searchsorted(train_pos, offsets)
        train_folds = [folds[a:b].astype(np.int8) for a, b in zip(starts, starts[1:])]
        train = list(zip(Rows.per_partition(train_pos, offsets), train_folds, strict=True))
        test = [(rows, None) for rows in Rows.per_partition(test_pos, offsets)]
        # What the partial fits read goes to the workers once, as one task of the graph.
        state = dask.delayed(self.fit_state(), traverse=False)
        fits = [dask.delayed(fit_partition)(part, self.partial, state, *rows) for part, rows in zip(parts, train, strict=True)]
        shipped, transform = self.fit(client.compute(fits, sync=True))
        fitted = client.scatter(shipped, broadcast=True, hash=False)
        # Held for the run: scattered data has no task to recompute it, so once the client lets go
        # of it the scheduler forgets it, and partitions lost with a worker later (during
        # training) could not be recomputed ("cancelled for reason: already forgotten").
        self._fitted = fitted
        meta, worker_fitted = client.compute(dask.delayed(featured_meta, nout=2)(parts[0], fitted), sync=True)

        def featured(rows: Sequence[tuple[Rows, np.ndarray | None]]) -> Any:
            frames = [dask.delayed(featurize_partition)(part, fitted, *at) for part, at in zip(parts, rows, strict=True)]
            return dd.from_delayed(frames, meta=meta, verify_meta=False)

        train_df, test_df = featured(train), featured(test)
        columns = [c for c in meta.columns if c != TARGET]
        frames = client.persist([train_df[columns], train_df[TARGET], test_df[columns], test_df[TARGET]])
        wait(frames)
        X_train, y_train, X_test, y_test = frames
        n, n_test = offsets[-1], len(test_pos)
        rows = {"loaded": loaded_rows, "with_target": n, "train": n - n_test, "test": n_test}
        prepared = Prepared(X_train, y_train, X_test, y_test, transform, list(transform.categorical), rows)
        self.finish(prepared, test_pos, worker_fitted)
        return prepared


#: Builds a workflow's Dask side for a started cluster:
#: ``(settings, the workers' kind, the client's backend, workers, worker threads in all)``.
DaskBuilder = Callable[[WorkflowSettings, str, Backend, int, int], DaskForm]
