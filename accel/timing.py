"""Timing: stages of a run, and the repeat-and-report harness of the benchmarks.

GPU work is asynchronous: without a synchronise, a stage's clock stops when its kernels are
queued, and the next stage pays for them. Every clock read here comes after
``backend.synchronize()``: :class:`StageTimer` does it before each stage's clock starts and
stops, :func:`measure` before and after each timed call.

The harness (:func:`measure`) follows dask-cuda's and scikit-learn_bench's habits: the first
call is timed and reported on its own as the *cold* run (module loading, JIT compilation,
memory pools and caches land there), then come ``warmup`` untimed calls, then ``repeats``
timed calls whose every raw time is kept, with median, min, max and coefficient of variation.
Results carry the machine (:func:`bench_environment`) and a line saying how fair the CPU
baseline was (:func:`fairness`), and are written with :func:`write_result`, never overwriting.
"""

from __future__ import annotations

import gc
import math
import re
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from accel.backend import Backend, blas_threads
from accel.memory import MemoryMonitor

#: The stages of one arm of a run, in order (each timed on its own; see StageTimer).
STAGES = ("load", "features", "to_device", "train", "predict")
#: Stages an arm may time after the workflow's five, outside its total: the fitted pipeline's
#: importances (SHAP on a sample of hold-out rows).
EXTRA_STAGES = ("explain",)
T = TypeVar("T")


class StageListener(Protocol):
    def stage_started(self, arm: str, stage: str) -> None: ...

    def stage_finished(self, arm: str, stage: str, seconds: float) -> None: ...


class StageTimer:
    """Wall seconds per named stage of one arm, with the memory monitor told of each stage."""

    def __init__(
        self,
        backend: Backend,
        monitor: MemoryMonitor | None = None,
        listener: StageListener | None = None,
        trackers: tuple[Any, ...] = (),
    ):
        # ``trackers``: other samplers told of each stage (``set_stage``): a cluster's worker memory.
        self.backend, self.monitor, self.listener, self.trackers = backend, monitor, listener, trackers
        self.seconds: dict[str, float] = {}
        self.rmm_peak_bytes: dict[str, int] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        if self.listener is not None:
            self.listener.stage_started(self.backend.name, name)
        self._set_stage(name)
        counting = self.backend.rmm_scope_begin()
        try:
            self.backend.synchronize()
            start = time.perf_counter()
            yield
            self.backend.synchronize()
            self.seconds[name] = time.perf_counter() - start
        finally:
            # RMM's counters are a stack: a stage that raises pops its own too, so the stage
            # around it (or a retry) reads its own peak.
            peak = self.backend.rmm_scope_end() if counting else None
        if peak is not None:
            self.rmm_peak_bytes[name] = peak
        self._set_stage(None)
        if self.listener is not None:
            self.listener.stage_finished(self.backend.name, name, self.seconds[name])

    def _set_stage(self, name: str | None) -> None:
        """Tell the memory monitor and the other samplers which stage runs (None: none)."""
        for sampler in (self.monitor, *self.trackers):
            if sampler is not None:
                sampler.set_stage(name)

    @contextmanager
    def accumulate(self, name: str) -> Iterator[None]:
        """Add the wall time of this block to stage ``name`` (streaming: a stage in many pieces)."""
        previous = self.monitor.stage if self.monitor is not None else None
        self._set_stage(name)
        self.backend.synchronize()
        start = time.perf_counter()
        try:
            yield
        finally:
            self.backend.synchronize()
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
            self._set_stage(previous)


@contextmanager
def announced(listener: StageListener | None, arm: str, stage: str) -> Iterator[None]:
    """Tell ``listener`` that ``stage`` of ``arm`` starts and, when it has finished, how long it took;
    for work shown as a stage that no stage times (a streamed run's passes, the rounds search)."""
    if listener is not None:
        listener.stage_started(arm, stage)
    start = time.perf_counter()
    yield
    if listener is not None:
        listener.stage_finished(arm, stage, time.perf_counter() - start)


def timed_items(items: Iterator[T], timer: StageTimer | None) -> Iterator[T]:
    """Each of ``items`` (a reader's chunks), the wait for it added to the ``load`` stage of
    ``timer`` (None: untimed); none is held here once handed on, so a batch the caller deletes is freed."""
    while True:
        with timer.accumulate("load") if timer is not None else nullcontext():
            got = [next(items, None)]
        if got[0] is None:
            return
        yield cast(T, got.pop())


# --------------------------------------------------------------------------- the harness


@dataclass
class Timing:
    """Seconds of one measured call: the cold first call, and the warm repeats.

    Attributes
    ----------
    cold : float
        The first call, timed on its own; never part of the statistics.
    times : list of float
        Every timed repeat after the warm-up, in order.
    warmup : int
        Untimed calls made between the cold call and the repeats.
    """

    cold: float
    times: list[float] = field(default_factory=list)
    warmup: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else math.nan

    @property
    def min(self) -> float:
        return min(self.times) if self.times else math.nan

    @property
    def max(self) -> float:
        return max(self.times) if self.times else math.nan

    @property
    def cv(self) -> float:
        """Coefficient of variation of the repeats (sample standard deviation / mean); 0 for one repeat."""
        if len(self.times) < 2:
            return 0.0 if self.times else math.nan
        mean = statistics.fmean(self.times)
        return statistics.stdev(self.times) / mean if mean > 0 else math.nan

    @property
    def cold_ratio(self) -> float:
        """How much slower the cold call was than the warm median (warm-up cost, shown not hidden)."""
        return self.cold / self.median if self.times and self.median > 0 else math.nan

    def as_dict(self) -> dict[str, Any]:
        stats = {k: getattr(self, k) for k in ("median", "min", "max", "cv", "cold_ratio")}
        return {**asdict(self), "repeats": len(self.times), **stats}


def timed_call(fn: Callable[[], Any], backend: Backend | None = None) -> tuple[float, Any]:
    """Seconds of one call of ``fn()`` with the device synchronised before and after, and its result.

    The one clock of the runs, ``accel bench`` and the scripts in ``benchmarks/`` (their harness,
    ``benchmarks/common.py``); ``backend`` None: the work runs in other processes or on the CPU only.
    """
    if backend is not None:
        backend.synchronize()
    start = time.perf_counter()
    out = fn()
    if backend is not None:
        backend.synchronize()
    return time.perf_counter() - start, out


def measure(
    fn: Callable[[], Any],
    backend: Backend,
    *,
    repeats: int = 3,
    warmup: int = 0,
    on_call: Callable[[str, float], None] | None = None,
) -> tuple[Timing, Any]:
    """Time ``fn()`` on ``backend``: one cold call, ``warmup`` untimed calls, ``repeats`` timed calls,
    each after the garbage collector has run, untimed (db-benchmark's ``gc.collect()``).

    Parameters
    ----------
    fn : callable
        The work, taking no arguments; its result is kept from one call to the next only
        until the next call starts (so two answers never sit in memory together).
    backend : Backend
        The arm; its device is synchronised before and after each timed call.
    repeats : int, default 3
        Timed calls after the warm-up (at least 1).
    warmup : int, default 0
        Untimed calls after the cold one (0 or more).
    on_call : callable, optional
        ``on_call(which, seconds)`` after each call (``"cold"``, ``"warm-up 1/2"``,
        ``"repeat 2/3"``): the progress of a long measurement.

    Returns
    -------
    (Timing, object)
        The timing and the result of the last call.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    gc.collect()
    tell = on_call or (lambda _which, _seconds: None)
    cold, out = timed_call(fn, backend)
    tell("cold", cold)
    timing = Timing(cold=cold, warmup=warmup)
    for i in range(warmup + repeats):
        del out
        gc.collect()
        seconds, out = timed_call(fn, backend)
        if i < warmup:  # untimed in the result; timed for the progress only
            tell(f"warm-up {i + 1}/{warmup}", seconds)
        else:
            timing.times.append(seconds)
            tell(f"repeat {i - warmup + 1}/{repeats}", seconds)
    return timing, out


def speedup(cpu_seconds: float | None, gpu_seconds: float | None) -> float:
    """CPU seconds / GPU seconds; NaN unless both were measured (never 0, never a copy)."""
    if cpu_seconds is None or gpu_seconds is None or not (math.isfinite(cpu_seconds) and math.isfinite(gpu_seconds)):
        return math.nan
    return cpu_seconds / gpu_seconds if gpu_seconds > 0 else math.nan


# --------------------------------------------------------------------------- environment and fairness


def bench_environment() -> dict[str, Any]:
    """The machine a benchmark ran on (:func:`accel.environment.collect_environment`) plus the
    thread pools (BLAS, OpenMP) loaded at the time of the call (call it after the work ran) and
    the load average over 1, 5 and 15 minutes."""
    import os

    from accel.environment import collect_environment

    # Other work on the machine slows a benchmark down: the load says how busy the cores were.
    load = [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None
    return {**collect_environment(), "blas_threads": blas_threads(), "load_average": load}


def fairness(cpu: Backend, used: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """How the CPU baseline ran: cores it used, out of how many, and with which settings.

    Parameters
    ----------
    cpu : Backend
        The CPU arm.
    used : str
        The cores the baseline's work really used, in words (``"1 (pandas groupby is
        single-threaded)"``, ``"all 16"``).
    settings : mapping
        The thread settings that decided it (``n_jobs``, ``nthread``, BLAS threads...).
    """
    parts = ", ".join(f"{k}={v}" for k, v in settings.items())
    line = f"CPU baseline: {used} of {cpu.n_threads} cores available; settings: {parts}"
    return {"cores_available": cpu.n_threads, "cores_used": used, "settings": dict(settings), "line": line}


def result_device(gpu_ran: bool, environment: Mapping[str, Any]) -> str:
    """The device part of a result's name: ``cpu`` when no GPU arm ran, else the GPU's name."""
    if not gpu_ran:
        return "cpu"
    gpus = environment.get("gpus") or []
    return (re.sub(r"[^a-z0-9]+", "-", gpus[0]["name"].lower()).strip("-") or "gpu") if gpus else "gpu"


def write_result(folder: Path, result: dict[str, Any], benchmark: str, device: str) -> Path:
    """Write a benchmark result as ``<folder>/<date>-<benchmark>-<device>-<NNN>.json``, never overwriting.

    Every benchmark result is written here, by ``accel bench`` and by the scripts in
    ``benchmarks/``. A result that does not start with its record head yet gets
    :func:`accel.record.record_head` of kind ``bench`` in front of its keys (in ``result``
    itself, so that what a caller prints is what the file holds): readers then read its
    ``kind`` and never infer it.

    Parameters
    ----------
    folder : Path
        The results folder (created and proved writable by :func:`accel.record.ensure_writable` before measuring).
    result : dict
        The result, with ``benchmark`` naming which benchmark it is.
    benchmark : str
        The benchmark's part of the file name (``groupby-overhead``).
    device : str
        The device part of the file name (:func:`result_device`).

    Returns
    -------
    Path
        The file written; its name without ``.json`` is the result's ``run_id``.
    """
    from accel.record import record_head, record_stem, write_record

    if "kind" not in result:
        stamped = {**record_head("bench"), **result}
        result.clear()
        result.update(stamped)
    return write_record(Path(folder), result, record_stem(f"{benchmark}-{device}"))
