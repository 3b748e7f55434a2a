"""The flights workflow on a Dask cluster: what is its own of :class:`~accel.workflows.partitions.DaskForm`.

Rows are partitioned: each partition is a block of rows of one copy of the (sampled) flights
table, read and jittered on a worker (:func:`load_block`), keeping the flights that have an
``arr_delay``. The split is the single-process split of those rows
(:func:`accel.data.rows.split_positions`); the fit is :class:`~accel.workflows.flights.FlightsTransform`'s,
made of partial fits (:func:`~accel.workflows.flights.group_sums`: per-group target sums and row counts of the training
rows, made into the same tables by :meth:`accel.data.features.GroupStats.from_sums`, and the
distinct categories of every row), so the very same rows, features and categories reach XGBoost.

Each worker process reads the packaged flights table itself (accel must be installed on every node).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from accel._compat import Frame
from accel.backend import Backend
from accel.data.flights import jittered_copy
from accel.data.rows import split_positions
from accel.workflows.base import WorkflowSettings
from accel.workflows.flights import FLIGHTS_ROWS, FlightsTransform, FlightsWorkflow, group_sums, with_target
from accel.workflows.partitions import DaskForm, worker_backend, worker_slots

#: Rows per partition aimed at: CPU workers like several partitions each (load balance, less
#: memory per task); a GPU wants large partitions to keep its cores busy.
PARTITION_ROWS = {"cpu": 250_000, "gpu": 4_000_000}


@lru_cache(maxsize=2)
def _flights(kind: str, rows: int | None, seed: int) -> Any:
    """The sampled, unreplicated flights table, read once per worker process."""
    return FlightsWorkflow(WorkflowSettings(rows=rows, seed=seed)).load(worker_backend(kind)).flights


def load_block(block: tuple[int, int, int], kind: str, rows: int | None, seed: int) -> Frame:
    """Block ``index`` of ``count`` equal row blocks of copy ``copy``: ``block = (copy, index, count)``."""
    copy, index, count = block
    table = _flights(kind, rows, seed)
    n = len(table)
    return jittered_copy(worker_backend(kind).xdf, table, copy, seed, index * n // count, (index + 1) * n // count)


def plan_blocks(settings: WorkflowSettings, kind: str, workers: int, threads: int) -> list[tuple[int, int, int]]:
    """``(copy, index, count)`` row blocks: enough partitions to keep every worker thread busy."""
    base = min(settings.rows or FLIGHTS_ROWS, FLIGHTS_ROWS)
    slots = worker_slots(kind, workers, threads)
    wanted = max(slots, math.ceil(base * settings.scale / PARTITION_ROWS[kind]))
    per_copy = max(1, math.ceil(wanted / settings.scale))
    return [(copy, index, per_copy) for copy in range(settings.scale) for index in range(per_copy)]


class DaskFlights(DaskForm):
    """The flights workflow on a Dask client's workers; ``blocks`` from :func:`plan_blocks`."""

    cleaned = staticmethod(with_target)
    partial = staticmethod(group_sums)

    def __init__(self, settings: WorkflowSettings, kind: str, client_backend: Backend, blocks: list[tuple[int, int, int]]):
        super().__init__(FlightsWorkflow(settings), settings, kind, client_backend)
        self.blocks = blocks

    def read_partitions(self) -> list[Any]:
        import dask

        s = self.settings
        return [dask.delayed(load_block)(block, self.kind, s.rows, s.seed) for block in self.blocks]

    def split(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        train, test = split_positions(n, self.settings.test_size, self.settings.seed)
        return train, test, np.zeros(len(train), dtype=np.int8)

    def fit(self, partials: list[Any]) -> tuple[FlightsTransform, FlightsTransform]:
        from accel.workflows.flights import lookup_tables, read_lookups

        xdf = self.backend.xdf
        fitted = FlightsTransform.fit(xdf, partials, *lookup_tables(*read_lookups(xdf)))
        return fitted, fitted

    def clear_workers(self, client: Any) -> None:
        """Drop the flights table each worker read."""
        client.run(_flights.cache_clear)


def dask_flights(settings: WorkflowSettings, kind: str, backend: Backend, workers: int, threads: int) -> DaskFlights:
    """The flights workflow's Dask side (a :data:`~accel.workflows.base.DaskBuilder`)."""
    return DaskFlights(settings, kind, backend, plan_blocks(settings, kind, workers, threads))
