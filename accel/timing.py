"""Stage timing: the device is synchronised before every clock read.

GPU work is asynchronous: without a synchronise, a stage's clock stops when its kernels are
queued, and the next stage pays for them. :class:`StageTimer` calls ``backend.synchronize()``
before it starts and before it stops each stage's clock.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from accel.backend import Backend
from accel.memory import MemoryMonitor


class StageListener(Protocol):
    def stage_started(self, arm: str, stage: str) -> None: ...

    def stage_finished(self, arm: str, stage: str, seconds: float) -> None: ...


class StageTimer:
    """Wall seconds per named stage of one arm, with the memory monitor told of each stage."""

    def __init__(self, backend: Backend, monitor: MemoryMonitor | None = None, listener: StageListener | None = None):
        self.backend = backend
        self.monitor = monitor
        self.listener = listener
        self.seconds: dict[str, float] = {}
        self.rmm_peak_bytes: dict[str, int] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        if self.listener is not None:
            self.listener.stage_started(self.backend.name, name)
        if self.monitor is not None:
            self.monitor.set_stage(name)
        counting = self.backend.rmm_scope_begin()
        self.backend.synchronize()
        start = time.perf_counter()
        yield
        self.backend.synchronize()
        self.seconds[name] = time.perf_counter() - start
        if counting:
            peak = self.backend.rmm_scope_end()
            if peak is not None:
                self.rmm_peak_bytes[name] = peak
        if self.monitor is not None:
            self.monitor.set_stage(None)
        if self.listener is not None:
            self.listener.stage_finished(self.backend.name, name, self.seconds[name])

    @contextmanager
    def accumulate(self, name: str) -> Iterator[None]:
        """Add the wall time of this block to stage ``name`` (streaming: a stage in many pieces)."""
        previous = self.monitor.stage if self.monitor is not None else None
        if self.monitor is not None:
            self.monitor.set_stage(name)
        self.backend.synchronize()
        start = time.perf_counter()
        try:
            yield
        finally:
            self.backend.synchronize()
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
            if self.monitor is not None:
                self.monitor.set_stage(previous)
