"""What every workflow's Dask side shares: a worker's backend, how many partitions keep the
workers busy, and the partitions' lengths (which give every row its position)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from accel.backend import Backend, backend_for


@lru_cache(maxsize=2)
def worker_backend(kind: str) -> Backend:
    """The backend of this worker process: :func:`accel.backend.backend_for` its kind."""
    return backend_for(kind)


def worker_slots(kind: str, workers: int, threads: int) -> int:
    """Partitions to aim at at least: two per worker thread (two per GPU worker: one GPU each)."""
    return 2 * (workers if kind == "gpu" else max(threads, workers))


def partition_offsets(client: Any, parts: list[Any]) -> tuple[int, ...]:
    """Each partition's first row among the rows of all ``parts`` (a frame's ``to_delayed()``), then their row count."""
    import dask

    lengths = client.compute([dask.delayed(len)(part) for part in parts], sync=True)
    return tuple(int(o) for o in np.cumsum([0, *lengths]))


def held_rows(part: Any, offsets: tuple[int, ...], positions: np.ndarray, held: bool, partition_info: Any = None) -> Any:
    """A partition's rows at ``positions`` (``held``) or its other rows; ``positions`` (sorted)
    among the rows of all partitions, the partition's first at ``offsets[i]``."""
    if partition_info is None:  # Dask asking for the output's shape
        return part
    start = offsets[partition_info["number"]]
    lo, hi = np.searchsorted(positions, [start, start + len(part)])
    local = positions[lo:hi] - start
    if not held:
        keep = np.ones(len(part), dtype=bool)
        keep[local] = False
        local = np.flatnonzero(keep)
    return part.iloc[local].reset_index(drop=True)
