"""The flights workflow on a Dask cluster, built from the single-process workflow's own pieces.

Rows are partitioned: each partition of the loaded data is a block of rows of one copy of the
(sampled) flights table, read and jittered on a worker (:func:`load_block`). The row-local
feature code of :mod:`accel.workflows.flights` (joins, date parts, target) runs on every
partition unchanged (:func:`row_partition`). What is global in the single-process run is
global here too, computed the Dask way, so the very same rows, features and categories reach
XGBoost:

- the train/test split: partition lengths give every row its global position, and each
  partition takes its rows of the same host-drawn split (:func:`accel.data.rows.split_positions`);
- the group statistics: per-group target sums and row counts reduced over the training
  partitions, made into the same table by :meth:`accel.data.features.GroupStats.from_sums`;
- the category vocabularies: the distinct values over all partitions.

Workers hold cuDF partitions when they are GPU workers and pandas partitions otherwise; each
worker process reads the packaged tables itself (accel must be installed on every node).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from accel import _compat
from accel.backend import Backend
from accel.data.features import GroupStats
from accel.data.flights import jittered_copy
from accel.data.prepared import Prepared
from accel.data.rows import split_positions
from accel.faultpoints import fault_point
from accel.workflows.base import WorkflowSettings
from accel.workflows.flights import (
    CATEGORICAL,
    FEATURES,
    FLIGHTS_ROWS,
    GROUP_STATS,
    FlightsTransform,
    FlightsWorkflow,
    finish_features,
    lookup_tables,
    read_lookups,
    row_features,
    target,
    with_target,
)
from accel.workflows.partitions import held_rows, partition_offsets, worker_backend, worker_slots

TARGET = "__y__"
#: Rows per partition aimed at: CPU workers like several partitions each (load balance, less
#: memory per task); a GPU wants large partitions to keep its cores busy.
PARTITION_ROWS = {"cpu": 250_000, "gpu": 4_000_000}


# --------------------------------------------------------------------------- on the workers


@lru_cache(maxsize=2)
def _tables(kind: str, rows: int | None, seed: int) -> Any:
    """The sampled, unreplicated tables, read once per worker process."""
    return FlightsWorkflow(WorkflowSettings(rows=rows, seed=seed)).load(worker_backend(kind))


@lru_cache(maxsize=2)
def _lookups(kind: str, rows: int | None, seed: int) -> tuple[Any, Any]:
    tables = _tables(kind, rows, seed)
    return lookup_tables(tables.weather, tables.planes)


def clear_worker_caches() -> None:
    """Drop the tables a worker read (run on every worker at the end of a run)."""
    for cached in (_lookups, _tables, _test_positions):
        cached.cache_clear()


def load_block(block: tuple[int, int, int], kind: str, rows: int | None, seed: int) -> Any:
    """Block ``index`` of ``count`` equal row blocks of copy ``copy``: ``block = (copy, index, count)``."""
    copy, index, count = block
    flights = _tables(kind, rows, seed).flights
    n = len(flights)
    return jittered_copy(worker_backend(kind).xdf, flights, copy, seed, index * n // count, (index + 1) * n // count)


def _row_features(part: Any, kind: str, rows: int | None, seed: int) -> Any:
    weather, planes = _lookups(kind, rows, seed)
    df = row_features(worker_backend(kind).xdf, with_target(part), weather, planes)
    df[TARGET] = target(df)
    return df


def row_partition(part: Any, kind: str, rows: int | None, seed: int) -> Any:
    """The single-process run's row-local features, on one partition."""
    fault_point("features")
    return _row_features(part, kind, rows, seed)


@lru_cache(maxsize=2)
def _test_positions(n: int, test_size: float, seed: int) -> np.ndarray:
    return split_positions(n, test_size, seed)[1]


def split_partition(
    part: Any, offsets: tuple[int, ...], n: int, test_size: float, seed: int, test: bool, partition_info: Any = None
) -> Any:
    """This partition's rows of the global split (its rows are ``offsets[i]:offsets[i]+len``)."""
    return held_rows(part, offsets, _test_positions(n, test_size, seed), test, partition_info)


def finish_partition(part: Any, stats: list[GroupStats], vocabulary: dict[str, list[Any]]) -> Any:
    """The single-process run's last feature step (:func:`~accel.workflows.flights.finish_features`)
    on one partition (pandas or cuDF, as the partition is), the target kept beside the features."""
    out = finish_features(_compat.frame_library(part), part, stats, vocabulary)
    out[TARGET] = part[TARGET]
    return out


def partition_metas(kind: str, rows: int | None, seed: int) -> tuple[Any, Any]:
    """Empty frames shaped like a loaded and a featured partition, made on a worker from real rows.

    Dask needs each partition's shape up front; working it out from a few real rows on a worker
    keeps the data off the client (which may not even have the packaged tables' library).
    """
    loaded = load_block((0, 0, 1), kind, rows, seed).head(1000)
    return loaded.iloc[:0], _row_features(loaded, kind, rows, seed).iloc[:0]


# --------------------------------------------------------------------------- on the client


def plan_blocks(settings: WorkflowSettings, kind: str, workers: int, threads: int) -> list[tuple[int, int, int]]:
    """``(copy, index, count)`` row blocks: enough partitions to keep every worker thread busy."""
    base = min(settings.rows or FLIGHTS_ROWS, FLIGHTS_ROWS)
    slots = worker_slots(kind, workers, threads)
    wanted = max(slots, math.ceil(base * settings.scale / PARTITION_ROWS[kind]))
    per_copy = max(1, math.ceil(wanted / settings.scale))
    return [(copy, index, per_copy) for copy in range(settings.scale) for index in range(per_copy)]


class DaskFlights:
    """The flights workflow on a Dask client's workers (``kind``: their ``"cpu"`` or ``"gpu"``).

    Parameters
    ----------
    settings : WorkflowSettings
        Rows, seed, split, scale: the same settings give the same rows as the single-process run.
    kind : {"cpu", "gpu"}
        The workers' kind; partitions are pandas or cuDF frames accordingly.
    client_backend : Backend
        This process's backend of the same kind (it builds the small group-statistics tables
        and the empty frames Dask plans with).
    blocks : list of (copy, index, count)
        From :func:`plan_blocks`.
    """

    name = "flights"
    task = "binary"

    def __init__(self, settings: WorkflowSettings, kind: str, client_backend: Backend, blocks: list[tuple[int, int, int]]):
        self.settings, self.kind, self.backend, self.blocks = settings, kind, client_backend, blocks
        self._metas: tuple[Any, Any] | None = None
        #: What the tasks on the workers read the tables with: the workers' kind, rows and seed.
        self._args = (kind, settings.rows, settings.seed)

    def clear_workers(self, client: Any) -> None:
        """Drop the tables each worker read (:func:`clear_worker_caches`)."""
        client.run(clear_worker_caches)

    def describe_data(self) -> dict[str, Any]:
        return {**FlightsWorkflow(self.settings).describe_data(), "partitions": len(self.blocks)}

    def load(self, client: Any) -> tuple[Any, int]:
        """The flights partitions, persisted on the workers, and their total row count."""
        import dask.dataframe as dd
        from distributed import wait

        self._metas = client.submit(partition_metas, *self._args, pure=False).result()
        flights = dd.from_map(load_block, self.blocks, args=list(self._args), meta=self._metas[0], label="accel-load-flights")
        flights = client.persist(flights)
        wait(flights)
        return flights, partition_offsets(client, flights.to_delayed())[-1]

    def features(self, client: Any, flights: Any, loaded_rows: int) -> Prepared:
        """Model input as Dask collections (the frames of ``Prepared``), persisted on the workers."""
        from distributed import wait

        xdf = self.backend.xdf
        s = self.settings
        assert self._metas is not None, "load() first"
        rows_meta = self._metas[1]
        rows = client.persist(flights.map_partitions(row_partition, *self._args, meta=rows_meta))
        wait(rows)

        offsets = partition_offsets(client, rows.to_delayed())
        n = offsets[-1]
        n_test = len(split_positions(n, s.test_size, s.seed)[1])  # also refuses an unsplittable n
        split = (offsets, n, s.test_size, s.seed)
        train = rows.map_partitions(split_partition, *split, False, meta=rows_meta)
        test = rows.map_partitions(split_partition, *split, True, meta=rows_meta)

        # One pass over the data for everything global: group sums/counts on the training rows,
        # the training target sum (for the prior) and the category vocabularies over all rows.
        group_keys = list(dict.fromkeys(k for keys, _, _ in GROUP_STATS for k in keys))
        narrow = [*group_keys, TARGET]  # split only the columns the statistics read
        train_y = rows[narrow].map_partitions(split_partition, *split, False, meta=rows_meta[narrow])
        y_float = train_y[TARGET].astype("float64")
        train_y = train_y.assign(**{TARGET: y_float})
        # The results are small (one row per group, one value per category), so they are reduced
        # into one partition by a tree (split_out=1) rather than shuffled across workers.
        aggregates = [train_y.groupby(list(keys))[TARGET].agg(["sum", "count"], split_out=1) for keys, _, _ in GROUP_STATS]
        uniques = [rows[column].unique(split_out=1) for column in CATEGORICAL]
        results = client.compute([*aggregates, y_float.sum(), *uniques], sync=True)
        groups = len(GROUP_STATS)
        sums, y_sum, vocabularies = results[:groups], results[groups], results[groups + 1 :]

        prior = float(y_sum) / (n - n_test)
        stats = [
            GroupStats(list(keys), count, rate).from_sums(xdf, table["sum"], table["count"], prior)
            for (keys, count, rate), table in zip(GROUP_STATS, sums, strict=True)
        ]
        vocabulary = {column: _compat.sorted_unique(values) for column, values in zip(CATEGORICAL, vocabularies, strict=True)}
        meta = finish_partition(rows_meta, stats, vocabulary)
        train = train.map_partitions(finish_partition, stats, vocabulary, meta=meta)
        test = test.map_partitions(finish_partition, stats, vocabulary, meta=meta)
        X_train, y_train, X_test, y_test = client.persist([train[FEATURES], train[TARGET], test[FEATURES], test[TARGET]])
        wait([X_train, y_train, X_test, y_test])
        weather, planes = lookup_tables(*read_lookups(xdf))
        return Prepared(
            X_train=X_train,
            y_train=y_train,
            X_test=X_test,
            y_test=y_test,
            categorical=list(CATEGORICAL),
            rows={"loaded": loaded_rows, "with_target": n, "train": n - n_test, "test": n_test},
            # The hold-out rows are not kept: their rows in the flights file are the workers'.
            transform=FlightsTransform(xdf, weather, planes, stats, vocabulary),
        )


def dask_flights(settings: WorkflowSettings, kind: str, backend: Backend, workers: int, threads: int) -> DaskFlights:
    """The flights workflow's Dask side (a :data:`~accel.workflows.base.DaskBuilder`)."""
    return DaskFlights(settings, kind, backend, plan_blocks(settings, kind, workers, threads))
