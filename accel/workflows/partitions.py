"""What every workflow's Dask side shares: a worker's backend, how many partitions keep the
workers busy, and the partitions' lengths (which give every row its position)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from accel.backend import Backend, backend_for


@lru_cache(maxsize=2)
def worker_backend(kind: str) -> Backend:
    """The backend of this worker process: :func:`accel.backend.backend_for` its kind."""
    return backend_for(kind)


def worker_slots(kind: str, workers: int, threads: int) -> int:
    """Partitions to aim at at least: two per worker thread (two per GPU worker: one GPU each)."""
    return 2 * (workers if kind == "gpu" else max(threads, workers))


def partition_lengths(client: Any, frame: Any) -> list[int]:
    import dask

    return [int(v) for v in client.compute([dask.delayed(len)(part) for part in frame.to_delayed()], sync=True)]
