"""Memory measurement: peak host RSS and peak device memory, per stage.

:class:`MemoryMonitor` samples in a background thread and also at every stage boundary, so a
stage shorter than the interval still gets a reading. Host peaks also come from the kernel:
the process's lifetime peak RSS (Linux's ``VmHWM``, ``ru_maxrss`` elsewhere) is exact, and
when it rises between two readings the new peak happened between them, in the current stage.
With that, a host-only monitor samples every ``interval`` for the first second of a stage and
then every :data:`SETTLED_INTERVAL`: a thread waking 50 times a second took about 4% of
XGBoost's training time on two cores, where boosting uses every core. The kernel's peak is only
read, never reset (``/proc/self/clear_refs`` would also erase it from what ``/usr/bin/time``
reports). Device memory is the device-wide bytes in use as the driver reports it
(``cudaMemGetInfo``), which counts cuDF's RMM allocations and CuPy's pool alike; it is sampled
every ``interval`` throughout.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, overload

import psutil

from accel.backend import Backend
from accel.errors import AccelError

MB = 1024 * 1024

#: A host-only monitor samples every ``interval`` for this long after a stage starts...
SETTLE_SECONDS = 1.0
#: ...then this often (the kernel's peak catches every new high in between).
SETTLED_INTERVAL = 0.25


def process_peak_rss(pid: int | str = "self") -> int | None:
    """The peak resident set size of process ``pid`` (``"self"``: this one) so far, in bytes, as the
    kernel counts it; ``None`` where there is none, or when the process is gone.

    On Linux ``VmHWM`` of ``/proc/PID/status``: the high-water mark of that program's own memory.
    ``ru_maxrss`` is no substitute there: it also carries the peak of the process image before
    ``exec``, the spawning process's (a 10 MB script started from a 600 MB process reads 600 MB).
    Elsewhere this process's ``ru_maxrss`` (bytes on macOS), and ``None`` for another process and
    on Windows.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, ValueError, IndexError), open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
        return None
    try:
        import resource
    except ImportError:
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) if pid == "self" else None


def release_host_memory(collect: bool = True) -> None:
    """Hand back to the system the host memory the allocators keep cached after it was freed:
    Arrow's pool and glibc's heap (``malloc_trim``; a no-op without glibc). Afterwards the
    process's RSS rises again with what is really allocated, so a probe measured from here sees
    its own peak, and a streamed pass does not carry one batch's freed memory into the next.
    """
    import ctypes
    import gc

    if collect:
        gc.collect()
    with contextlib.suppress(Exception):  # only an optimisation
        import pyarrow

        pyarrow.default_memory_pool().release_unused()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)


def returnable_arrow_pool(memory_budget: str | None) -> str | None:
    """With a memory budget, Arrow allocates from the C library's heap instead of its default
    mimalloc pool, so that what it frees goes back to the system at :func:`release_host_memory`:
    mimalloc keeps freed pages that ``release_unused`` does not return (after planning flights ×3,
    46 MiB more resident than with the system pool; the whole run's peak 527 MB against 478 MB).

    Arrow reads ``ARROW_DEFAULT_MEMORY_POOL`` once, when pyarrow is imported (``set_memory_pool``
    reaches only pyarrow's own calls, not its readers'), so this is called before planning first
    imports it (the command line calls it with ``--memory-budget`` before it imports anything
    else; pandas imports pyarrow); a pool the user chose in that variable is kept. Returns the
    variable's value (None without a budget, or where pyarrow was imported already).
    """
    import os

    if not memory_budget or "pyarrow" in sys.modules:
        return None
    return os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


class PeriodicSampler:
    """A daemon thread calling :meth:`sample` every ``interval`` seconds inside ``with``, and
    the current stage for per-stage peaks. :class:`MemoryMonitor` samples this process and its
    GPU; :class:`accel.scaleout.cluster.WorkerMemorySampler` the workers of a Dask cluster."""

    thread_name = "accel-sampler"

    def __init__(self, interval: float, on_sample: Callable[[int, int | None], None] | None = None):
        self.interval = interval
        #: Told of each reading: the host bytes and the device bytes (None without a device reading).
        self.on_sample = on_sample
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stage: str | None = None

    def sample(self) -> Any:
        raise NotImplementedError

    def _started(self, first: Any) -> None:
        """Called with the first sample, taken on entering, before the thread starts."""

    def _wait_seconds(self) -> float:
        """Seconds until the next sample (a subclass may vary it)."""
        return self.interval

    def set_stage(self, stage: str | None) -> None:
        """Attribute samples to ``stage`` from now on (sampling once at the boundary)."""
        self.sample()
        with self._lock:
            self.stage = stage

    def _run(self) -> None:
        while not self._stop.wait(self._wait_seconds()):
            self.sample()

    def __enter__(self) -> Any:
        self._started(self.sample())
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


class MemoryMonitor(PeriodicSampler):
    """Peak host RSS (this process) and device memory in use, overall and per stage.

    Parameters
    ----------
    backend : Backend
        The arm; device memory is sampled only on the GPU arm.
    interval : float, default 0.02
        Seconds between samples (on a host-only monitor with the kernel's peak: for the first
        :data:`SETTLE_SECONDS` of each stage, then :data:`SETTLED_INTERVAL`).
    on_sample : callable, optional
        Called as ``on_sample(host_bytes, device_bytes)`` after each sample (live display).
    """

    thread_name = "accel-memory-monitor"

    def __init__(self, backend: Backend, interval: float = 0.02, on_sample: Callable[[int, int | None], None] | None = None):
        super().__init__(interval, on_sample)
        self.backend = backend
        self._process = psutil.Process()
        self.peak_host = 0
        self.peak_device: int | None = None
        self.stage_peak_host: dict[str, int] = {}
        self.stage_peak_device: dict[str, int] = {}
        self.host_at_start = 0
        self._kernel_seen = process_peak_rss()  # the lifetime peak at the last reading
        self._stage_since = time.perf_counter()

    def sample(self) -> tuple[int, int | None]:
        """One reading: the RSS now, or the kernel's peak if it rose since the last reading
        (that peak happened in between); device memory in use on the GPU arm."""
        try:
            device = self.backend.device_memory_in_use()
        except Exception:  # noqa: BLE001 - a failing read must not kill the run it watches
            device = None
        with self._lock:
            host = self._process.memory_info().rss
            seen = self._kernel_seen
            if seen is not None and (kernel := process_peak_rss()) is not None and kernel > seen:
                host, self._kernel_seen = max(host, kernel), kernel
            self.peak_host = max(self.peak_host, host)
            if device is not None:
                self.peak_device = max(self.peak_device or 0, device)
            if self.stage is not None:
                self.stage_peak_host[self.stage] = max(self.stage_peak_host.get(self.stage, 0), host)
                if device is not None:
                    self.stage_peak_device[self.stage] = max(self.stage_peak_device.get(self.stage, 0), device)
        if self.on_sample is not None:
            self.on_sample(host, device)
        return host, device

    def _wait_seconds(self) -> float:
        # Device memory, or no kernel peak to catch what falls between readings: every ``interval``.
        kernel_only = self._kernel_seen is not None and self.peak_device is None
        settled = kernel_only and time.perf_counter() - self._stage_since >= SETTLE_SECONDS
        return max(self.interval, SETTLED_INTERVAL) if settled else self.interval

    def set_stage(self, stage: str | None) -> None:
        super().set_stage(stage)
        self._stage_since = time.perf_counter()
        if stage is not None:
            self.sample()

    def _started(self, first: tuple[int, int | None]) -> None:
        self.host_at_start = first[0]

    def __exit__(self, *exc_info: object) -> None:
        super().__exit__(*exc_info)
        self.set_stage(None)


@overload
def to_mb(n: int) -> float: ...
@overload
def to_mb(n: None) -> None: ...
def to_mb(n: int | None) -> float | None:
    """Bytes in MB, to one decimal; None stays None."""
    return None if n is None else round(n / MB, 1)


# --------------------------------------------------------------------------- sizes and budgets


@dataclass(frozen=True)
class MemorySettings:
    """How one arm uses memory (``--rmm-pool``, ``--memory-budget``, ``--batch-rows``, ``--precision``)."""

    rmm_pool: str = "auto"
    memory_budget: str | None = None
    batch_rows: int | None = None  # None: auto
    precision: str = "fp32"  # fp16: the run also trains in float32 (untimed) and records the metric delta


#: ``--rmm-pool auto``: the pool starts at this share of the free device memory...
RMM_AUTO_INITIAL = 0.5
#: ...and may grow up to this share, when XGBoost allocates from it too (built with RMM). When
#: XGBoost allocates beside the pool, the pool stays at its initial size and the rest of the free
#: memory is left to XGBoost.
RMM_AUTO_MAXIMUM = 0.9
#: Default ``--memory-budget``: this share of the free memory of the arm's device (on the GPU
#: arm: free before the RMM pool took its share, and no more than the pool may grow to).
BUDGET_SHARE = 0.5

#: The record of the RMM pool this process set up (``setup_rmm_pool``), kept for later runs
#: in the same process: RMM's pool is set up once per process.
_POOL_RECORD: dict[str, Any] | None = None


def rmm_auto_sizes(free_bytes: int, xgboost_through_rmm: bool, model: str | None = None) -> tuple[int, int, str]:
    """The ``--rmm-pool auto`` pool for a device with ``free_bytes`` free: ``(initial, maximum, why)``.

    The pool starts at :data:`RMM_AUTO_INITIAL` of the free memory. It may grow to
    :data:`RMM_AUTO_MAXIMUM` when the model allocates from it: every cuML model does, and
    XGBoost when it is built with RMM. When XGBoost allocates beside it (an XGBoost built
    without RMM, as the PyPI wheels are), the pool keeps its initial size, so that XGBoost's own
    allocations have the rest of the free memory and do not meet a pool grown into it. Sizes
    are multiples of 256 bytes, as RMM's pool wants them.

    Parameters
    ----------
    free_bytes : int
    xgboost_through_rmm : bool
        Whether XGBoost allocates from RMM (:meth:`accel.backend.Backend.xgboost_allocation`).
    model : str, optional
        The ``--model`` the pool serves; None or a model whose GPU arm is not cuML: XGBoost.
    """
    from accel.registry import MODELS

    initial = int(free_bytes * RMM_AUTO_INITIAL) // 256 * 256
    cuml = model is not None and model in MODELS and MODELS[model].needs_cuml
    auto = f"auto: {RMM_AUTO_INITIAL:.0%} of free device memory"
    if cuml or xgboost_through_rmm:
        who = f"cuML's {model} allocates" if cuml else "XGBoost allocates"
        maximum = int(free_bytes * RMM_AUTO_MAXIMUM) // 256 * 256
        return initial, maximum, f"{auto}, growing to {RMM_AUTO_MAXIMUM:.0%} ({who} from the pool)"
    return initial, initial, f"{auto}, not growing: XGBoost allocates beside the pool, from the other {1 - RMM_AUTO_INITIAL:.0%}"


def device_budget(free_before_pool: int, pool_maximum: int | None) -> tuple[int, str]:
    """The default memory budget of the GPU arm: ``(bytes, where it comes from)``.

    :data:`BUDGET_SHARE` of the device memory that was free before the RMM pool reserved its
    share (once reserved, the pool counts as used in the driver's free memory), and no more than
    the pool may grow to (``pool_maximum``; None without a pool).
    """
    share = int(free_before_pool * BUDGET_SHARE)
    if pool_maximum is not None and pool_maximum < share:
        return pool_maximum, f"the RMM pool's maximum size ({pool_maximum / 1024**3:.1f} GiB)"
    return share, f"{BUDGET_SHARE:.0%} of free device memory before the RMM pool ({free_before_pool / 1024**3:.1f} GiB)"


#: The largest size a size option takes (1 EiB): beyond it a number is a typo, not a machine.
MAX_SIZE_BYTES = 2**60


def parse_size(text: str, option: str, examples: str = "examples: 512MB, 8GB, 1.5GiB") -> int:
    """Bytes from ``512MB``, ``8GB``, ``1.5GiB``, ``1000000`` (as Dask parses sizes); a one-line
    error otherwise, naming ``option`` and what to give (``examples``)."""
    from dask.utils import parse_bytes

    try:
        value = parse_bytes(str(text).strip())
    except (ValueError, TypeError, KeyError, OverflowError):  # OverflowError: 1e400 is infinite
        raise AccelError(f"{option}: cannot read {text!r} as a size ({examples})") from None
    if not value > 0:
        raise AccelError(f"{option}: the size must be positive, got {text!r}")
    if value > MAX_SIZE_BYTES:
        raise AccelError(f"{option}: {text!r} is more than any machine holds (at most {MAX_SIZE_BYTES // 2**50:,} PiB)")
    return int(value)


def setup_rmm_pool(backend: Backend, spec: str, model: str | None = None) -> dict:
    """Set up the RMM pool ``--rmm-pool auto|off|SIZE`` asks for; what was done, for the record.

    On the CPU arm there is no device pool: the record says so (``null`` sizes with the reason).
    The record says where XGBoost's device memory comes from (``xgboost_through_rmm``,
    ``xgboost_allocator``), as the installed XGBoost's build reports it. ``model`` (the
    ``--model``) sizes an automatic pool (:func:`rmm_auto_sizes`).

    The pool is set up once per process (RMM's resource is not replaced while buffers of the
    first pool may be alive): a later call with the same ``spec`` gets the first call's record,
    with ``reused`` true; one with another ``spec`` is refused. A resource that other code of
    the process set up first (a Dask-CUDA worker's pool with cuDF's spill handler over it:
    :meth:`~accel.backend.Backend.rmm_resource_set_elsewhere`) is kept and used, never replaced.
    """
    global _POOL_RECORD
    if not backend.is_gpu:
        return {"mode": spec, "initial_bytes": None, "maximum_bytes": None, "reason": "CPU arm: no device memory pool"}
    xgb = backend.xgboost_allocation()
    xgboost_fields = {"xgboost_through_rmm": xgb["through_rmm"], "xgboost_allocator": xgb["allocator"]}
    if _POOL_RECORD is not None and backend.rmm_pool_configured() is not None:
        if _POOL_RECORD["mode"] != spec:
            raise AccelError(
                f"--rmm-pool {spec}: this process already set up the RMM pool --rmm-pool {_POOL_RECORD['mode']} "
                "asked for, and RMM's pool is set up once per process; run with another --rmm-pool in a new process"
            )
        return {**_POOL_RECORD, "reused": True}
    if spec == "off":
        return {"mode": "off", "initial_bytes": None, "maximum_bytes": None, "reason": "--rmm-pool off", **xgboost_fields}
    elsewhere = backend.rmm_resource_set_elsewhere()
    if elsewhere is not None:  # kept as it is; its pool's bytes count as free (the driver counts a reserved pool as used)
        backend.use_current_rmm_resource()
        pool, stack = elsewhere["pool_bytes"], " > ".join(elsewhere["resources"])
        free = (backend.device_memory() or (0, 0))[0] + (pool or 0)
        sizes = {"mode": spec, "initial_bytes": pool, "maximum_bytes": None, "free_bytes_before": free}
        reason = f"--rmm-pool {spec} not applied: the RMM resource this process had before accel ({stack}) is kept"
        return {**sizes, "reason": reason, "kept_resource": elsewhere["resources"], **xgboost_fields, "reused": False}
    free, total = backend.device_memory() or (0, 0)
    if spec == "auto":
        initial, maximum, reason = rmm_auto_sizes(free, xgb["through_rmm"], model)
    else:
        initial = maximum = parse_size(spec, "--rmm-pool") // 256 * 256
        reason = "fixed size"
        if initial > total:
            raise AccelError(
                f"--rmm-pool {spec} is larger than the device ({total / 1024**3:.1f} GiB on "
                f"{backend.device.name if backend.device else 'the GPU'}); use a smaller size or auto"
            )
    try:
        backend.configure_rmm_pool(initial, maximum)
    except RuntimeError as exc:  # a pool of other sizes set up by other code in this process
        raise AccelError(f"--rmm-pool {spec}: {exc}") from None
    sizes = {"mode": spec, "initial_bytes": initial, "maximum_bytes": maximum, "free_bytes_before": free, "reason": reason}
    _POOL_RECORD = {**sizes, **xgboost_fields, "reused": False}
    return dict(_POOL_RECORD)


def default_budget(backend: Backend, rmm: dict | None = None) -> tuple[int, str]:
    """The memory budget when none is given: a share of the arm device's free memory.

    ``rmm`` is :func:`setup_rmm_pool`'s record: on the GPU arm with a pool, the budget is planned
    from the memory free before the pool and from the pool's maximum (:func:`device_budget`),
    not from the driver's free memory, where the reserved pool counts as used.
    """
    if backend.is_gpu:
        rmm = rmm or {}
        if rmm.get("free_bytes_before") is not None:
            return device_budget(int(rmm["free_bytes_before"]), rmm.get("maximum_bytes"))
        return device_budget((backend.device_memory() or (0, 0))[0], None)
    free = psutil.virtual_memory().available
    return int(free * BUDGET_SHARE), f"{BUDGET_SHARE:.0%} of available host memory ({free / 1024**3:.1f} GiB)"
