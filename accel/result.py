"""One arm's result and the comparison of two: the type every runner returns.

:class:`ArmResult` is one arm's part of the run record, whichever runner made it (in process,
streamed, on Dask); :func:`arm_result` builds it from the stage timer and the memory monitor,
:func:`check_device` fails an arm whose model ran elsewhere than asked (XGBoost only warns when
it cannot use the GPU), and :func:`speedups` / :func:`parity` compare the two arms.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from accel import OMP_WAIT_POLICY
from accel.backend import Backend
from accel.memory import MemoryMonitor, to_mb
from accel.metrics import parity_rule
from accel.registry import ran_where_asked
from accel.timing import STAGES, StageTimer, speedup


class Listener(Protocol):
    """Told of a run as it goes (the progress display, :class:`accel.report.console.ProgressDisplay`)."""

    def section(self, label: str | None) -> None:
        """What follows belongs to ``label`` (one configuration of ``accel scale``, the baseline of
        ``accel hpo``); None: to no configuration."""

    def arm_started(self, arm: str) -> None: ...

    def stage_started(self, arm: str, stage: str) -> None: ...

    def rounds(self, arm: str, stage: str, done: int, total: int) -> None:
        """``done`` of ``total`` boosting rounds of the running stage are done (XGBoost only)."""

    def stage_finished(self, arm: str, stage: str, seconds: float) -> None: ...

    def memory(self, host_bytes: int, device_bytes: int | None) -> None: ...

    def arm_finished(self, arm: str, status: str) -> None: ...


@dataclass
class ArmResult:
    """One arm's part of the run record."""

    status: str  # "ok" | "skipped" | "failed"
    reason: str | None = None
    backend: str | None = None
    device_used: str | None = None
    device_name: str | None = None
    stages: dict[str, float] = field(default_factory=dict)
    total_seconds: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    peak_host_mb: float | None = None
    peak_device_mb: float | None = None
    host_mb_at_start: float | None = None
    stage_peak_host_mb: dict[str, float] = field(default_factory=dict)
    stage_peak_device_mb: dict[str, float] = field(default_factory=dict)
    threads: dict[str, Any] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    features: list[str] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)
    #: Where each stage ran ("cuda:0 (cudf)", "cpu (pandas)", the model's own device).
    stage_devices: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def skipped(reason: str) -> ArmResult:
    return ArmResult(status="skipped", reason=reason)


def _threads(backend: Backend, model: Any, fitted: Any) -> dict[str, Any]:
    info: dict[str, Any] = {**model.threads(backend, fitted), "cores_available": backend.n_threads}
    info["omp_wait_policy"] = dict(OMP_WAIT_POLICY)
    return {**info, **backend.host_threads()}


def arm_result(
    backend: Backend,
    workflow: Any,
    model: Any,
    fitted: Any,
    timer: StageTimer,
    monitor: MemoryMonitor,
    metrics: dict[str, float],
    rows: dict[str, int],
    features: list[str],
    memory_record: dict[str, Any],
) -> ArmResult:
    device_used = model.device_used(backend, fitted)
    result = ArmResult(
        status="ok",
        backend=backend.name,
        device_used=device_used,
        device_name=backend.device.name if backend.device else None,
        stages={s: round(timer.seconds.get(s, 0.0), 6) for s in STAGES},
        total_seconds=round(sum(timer.seconds.get(s, 0.0) for s in STAGES), 6),
        metrics=metrics,
        peak_host_mb=to_mb(monitor.peak_host),
        peak_device_mb=to_mb(monitor.peak_device),
        host_mb_at_start=to_mb(monitor.host_at_start),
        stage_peak_host_mb={s: to_mb(v) for s, v in monitor.stage_peak_host.items()},
        stage_peak_device_mb={s: to_mb(v) for s, v in monitor.stage_peak_device.items()},
        threads=_threads(backend, model, fitted),
        rows=dict(rows),
        features=features,
        memory={**memory_record, "stage_rmm_peak_mb": {k: to_mb(v) for k, v in timer.rmm_peak_bytes.items()}},
        stage_devices=backend.stage_devices(device_used),
    )
    return check_device(result, backend.is_gpu, backend.xgb_device)


def check_device(result: ArmResult, is_gpu: bool, asked: str) -> ArmResult:
    """``result`` marked ``failed`` when its model ran on another device than the arm's.

    XGBoost only warns when it cannot use the GPU: that must not pass as a GPU result.
    """
    if result.device_used is not None and not ran_where_asked(result.device_used, is_gpu):
        result.status = "failed"
        result.reason = f"the model ran on {result.device_used!r} although {asked!r} was asked for"
    return result


def speedups(gpu: ArmResult, cpu: ArmResult) -> dict[str, float]:
    """CPU seconds / GPU seconds per stage and in total; NaN unless both arms ran."""
    both = gpu.status == "ok" and cpu.status == "ok"
    out = {}
    for stage in STAGES:
        g, c = gpu.stages.get(stage), cpu.stages.get(stage)
        out[stage] = speedup(c, g) if both else math.nan
    out["total"] = speedup(cpu.total_seconds, gpu.total_seconds) if both else math.nan
    return out


def parity(task: str, model: str, gpu: ArmResult, cpu: ArmResult) -> dict[str, Any]:
    """Whether the two arms reach the same quality, within a stated tolerance."""
    metric, tolerance, relative = parity_rule(task, model)
    g = gpu.metrics.get(metric) if gpu.status == "ok" else None
    c = cpu.metrics.get(metric) if cpu.status == "ok" else None
    allowed = tolerance * abs(c) if relative and c is not None else tolerance
    ok = None if g is None or c is None else abs(g - c) <= allowed
    return {"metric": metric, "gpu": g, "cpu": c, "tolerance": tolerance, "relative": relative, "ok": ok}
