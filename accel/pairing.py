"""The paired run: the accelerated arm and the CPU baseline arm, the same workflow code in each.

Each arm runs the stages ``load → features → to_device → train → predict`` under a
:class:`~accel.timing.StageTimer` (device synchronised at every clock read) and a
:class:`~accel.memory.MemoryMonitor`. An arm that cannot run is ``skipped`` with the reason;
one that raises is ``failed`` with the reason; neither gets invented numbers, and every
speedup that needs it is NaN.
"""

from __future__ import annotations

import gc
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from accel import _compat
from accel.backend import Backend
from accel.errors import AccelError
from accel.memory import MemoryMonitor, to_mb
from accel.metrics import PARITY, binary_metrics
from accel.models import XGBoostModel, xgboost_device_used, xgboost_threads_used
from accel.timing import StageTimer

STAGES = ("load", "features", "to_device", "train", "predict")


class Listener(Protocol):
    def arm_started(self, arm: str) -> None: ...

    def stage_started(self, arm: str, stage: str) -> None: ...

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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def skipped(reason: str) -> ArmResult:
    return ArmResult(status="skipped", reason=reason)


def _threads(backend: Backend, booster: Any) -> dict[str, Any]:
    from threadpoolctl import threadpool_info

    info: dict[str, Any] = {"xgboost_nthread": xgboost_threads_used(booster), "cores_available": backend.n_threads}
    if not backend.is_gpu:
        import pyarrow

        info["csv_reader"] = f"pandas engine=pyarrow, {pyarrow.cpu_count()} threads"
        info["blas"] = [
            {"library": p.get("internal_api"), "threads": p.get("num_threads")}
            for p in threadpool_info()
            if p.get("user_api") == "blas"
        ]
    return info


def run_arm(backend: Backend, workflow: Any, model: XGBoostModel, listener: Listener | None = None) -> ArmResult:
    """Run every stage of ``workflow`` on ``backend``; raises whatever a stage raises."""
    monitor = MemoryMonitor(backend, on_sample=listener.memory if listener else None)
    timer = StageTimer(backend, monitor, listener)
    with monitor:
        with timer.stage("load"):
            raw = workflow.load(backend)
        with timer.stage("features"):
            prepared = workflow.features(backend, raw)
            del raw
        with timer.stage("to_device"):
            dtrain = model.to_device(backend, prepared.X_train, prepared.y_train)
        with timer.stage("train"):
            booster = model.fit(backend, dtrain)
        with timer.stage("predict"):
            prediction = model.predict(backend, booster, prepared.X_test)

    device_used = xgboost_device_used(booster)
    result = ArmResult(
        status="ok",
        backend=backend.name,
        device_used=device_used,
        device_name=backend.device.name if backend.device else None,
        stages={s: round(timer.seconds[s], 6) for s in STAGES},
        total_seconds=round(sum(timer.seconds[s] for s in STAGES), 6),
        metrics=binary_metrics(_compat.to_numpy(prepared.y_test), _compat.to_numpy(prediction)),
        peak_host_mb=to_mb(monitor.peak_host),
        peak_device_mb=to_mb(monitor.peak_device),
        host_mb_at_start=to_mb(monitor.host_at_start),
        stage_peak_host_mb={s: to_mb(v) for s, v in monitor.stage_peak_host.items()},
        stage_peak_device_mb={s: to_mb(v) for s, v in monitor.stage_peak_device.items()},
        threads=_threads(backend, booster),
        rows=dict(prepared.rows),
        features=prepared.feature_names,
    )
    wanted = "cuda" if backend.is_gpu else "cpu"
    if not device_used.startswith(wanted):
        # XGBoost only warns when it cannot use the GPU; this must not pass as a GPU result.
        result.status = "failed"
        result.reason = f"XGBoost trained on {device_used!r} although {backend.xgb_device!r} was asked for"
    return result


def run_arm_safely(backend: Backend, workflow: Any, model: XGBoostModel, listener: Listener | None) -> ArmResult:
    """:func:`run_arm`, with a failure recorded as ``failed`` rather than ending the paired run."""
    if listener:
        listener.arm_started(backend.name)
    try:
        result = run_arm(backend, workflow, model, listener)
    except (AccelError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. device out of memory: the other arm still runs
        first = (str(exc).strip().splitlines() or [""])[0]
        result = ArmResult(status="failed", reason=f"{type(exc).__name__}: {first}", backend=backend.name)
    finally:
        gc.collect()
    if listener:
        listener.arm_finished(backend.name, result.status)
    return result


def speedups(gpu: ArmResult, cpu: ArmResult) -> dict[str, float]:
    """CPU seconds / GPU seconds per stage and in total; NaN unless both arms ran."""
    both = gpu.status == "ok" and cpu.status == "ok"
    out = {}
    for stage in STAGES:
        g, c = gpu.stages.get(stage), cpu.stages.get(stage)
        out[stage] = c / g if both and g and c is not None else math.nan
    out["total"] = cpu.total_seconds / gpu.total_seconds if both and gpu.total_seconds else math.nan
    return out


def parity(task: str, gpu: ArmResult, cpu: ArmResult) -> dict[str, Any]:
    """Whether the two arms reach the same quality, within a stated tolerance."""
    metric, tolerance = PARITY[task]
    g = gpu.metrics.get(metric) if gpu.status == "ok" else None
    c = cpu.metrics.get(metric) if cpu.status == "ok" else None
    ok = None if g is None or c is None else abs(g - c) <= tolerance
    return {"metric": metric, "gpu": g, "cpu": c, "tolerance": tolerance, "ok": ok}


def paired_run(config: Any, listener: Listener | None = None) -> tuple[dict[str, Any], Any]:
    """Run ``config``'s workflow on the accelerated arm and the CPU arm; write the run record.

    Everything that can be refused is checked before the first stage starts (output folder,
    workflow name, ``--device gpu`` without a GPU), so a refusal leaves nothing behind.
    Returns ``(record, path)``.
    """
    from datetime import datetime, timezone

    from accel.backend import cpu_backend, get_backend, probe_gpu
    from accel.environment import collect_environment
    from accel.models import XGBoostParams
    from accel.record import SCHEMA_VERSION, ensure_writable, new_run_id, record_stem, write_record
    from accel.workflows import WorkflowSettings, get_workflow

    out = ensure_writable(config.out)
    settings = WorkflowSettings(rows=config.rows, test_size=config.test_size, seed=config.seed, scale=config.scale)
    workflow = get_workflow(config.workflow, settings)
    model = XGBoostModel(XGBoostParams(**config.xgboost.model_dump()), seed=config.seed)

    gpu: Backend | None = None
    gpu_result: ArmResult | None = None
    if config.device == "cpu":
        gpu_result = skipped("not requested (--device cpu)")
    elif config.device == "gpu" or probe_gpu().usable:
        gpu = get_backend("gpu")  # raises DeviceUnavailable (exit 2) with the reason
    else:
        gpu_result = skipped(f"GPU unavailable: {probe_gpu().reason}")

    started = datetime.now(timezone.utc)
    environment = collect_environment()
    if gpu is not None:
        gpu_result = run_arm_safely(gpu, workflow, model, listener)
    assert gpu_result is not None
    cpu_result = run_arm_safely(cpu_backend(), workflow, model, listener)
    finished = datetime.now(timezone.utc)

    environment["threads_used"] = {"cpu": cpu_result.threads, "gpu": gpu_result.threads}
    record = {
        "schema_version": SCHEMA_VERSION,
        "run_id": new_run_id(started),
        "workflow": workflow.name,
        "task": workflow.task,
        "started_at": started.isoformat(),
        "finished_at": finished.isoformat(),
        "git_sha": environment.get("git_sha"),
        "config": config.model_dump(mode="json"),
        "data": workflow.describe_data(),
        "environment": environment,
        "arms": {"gpu": gpu_result.as_dict(), "cpu": cpu_result.as_dict()},
        "speedup": speedups(gpu_result, cpu_result),
        "parity": parity(workflow.task, gpu_result, cpu_result),
    }
    path = write_record(out, record, record_stem(workflow.name, started))
    return record, path
