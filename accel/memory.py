"""Memory measurement: peak host RSS and peak device memory, per stage.

:class:`MemoryMonitor` samples in a background thread (every ``interval`` seconds) and also
at every stage boundary, so a stage shorter than the interval still gets a reading. Device
memory is the device-wide bytes in use as the driver reports it (``cudaMemGetInfo``), which
counts cuDF's RMM allocations and CuPy's pool alike.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import psutil

from accel.backend import Backend

MB = 1024 * 1024


class MemoryMonitor:
    """Peak host RSS (this process) and device memory in use, overall and per stage.

    Parameters
    ----------
    backend : Backend
        The arm; device memory is sampled only on the GPU arm.
    interval : float, default 0.02
        Seconds between samples.
    on_sample : callable, optional
        Called as ``on_sample(host_bytes, device_bytes)`` after each sample (live display).
    """

    def __init__(self, backend: Backend, interval: float = 0.02, on_sample: Callable[[int, int | None], None] | None = None):
        self.backend = backend
        self.interval = interval
        self.on_sample = on_sample
        self._process = psutil.Process()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stage: str | None = None
        self.peak_host = 0
        self.peak_device: int | None = None
        self.stage_peak_host: dict[str, int] = {}
        self.stage_peak_device: dict[str, int] = {}
        self.host_at_start = 0

    def sample(self) -> tuple[int, int | None]:
        host = self._process.memory_info().rss
        try:
            device = self.backend.device_memory_in_use()
        except Exception:  # noqa: BLE001 - a failing read must not kill the run it watches
            device = None
        with self._lock:
            self.peak_host = max(self.peak_host, host)
            if device is not None:
                self.peak_device = max(self.peak_device or 0, device)
            if self._stage is not None:
                self.stage_peak_host[self._stage] = max(self.stage_peak_host.get(self._stage, 0), host)
                if device is not None:
                    self.stage_peak_device[self._stage] = max(self.stage_peak_device.get(self._stage, 0), device)
        if self.on_sample is not None:
            self.on_sample(host, device)
        return host, device

    def set_stage(self, stage: str | None) -> None:
        """Attribute samples to ``stage`` from now on (sampling once at the boundary)."""
        self.sample()
        with self._lock:
            self._stage = stage
        if stage is not None:
            self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> MemoryMonitor:
        self.host_at_start = self.sample()[0]
        self._thread = threading.Thread(target=self._run, name="accel-memory-monitor", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.set_stage(None)


def to_mb(n: int | None) -> float | None:
    return None if n is None else round(n / MB, 1)
