"""One arm's result and the comparison of two: the type every executor's run ends in.

An arm is a workflow on a backend, run by an :class:`Executor`: in memory, streamed in batches
(:mod:`accel.streaming`) or on a Dask cluster (:mod:`accel.scaleout.cluster_run`). The one runner,
:func:`accel.runner.execute_arm`, times the executor's stages with one
:class:`~accel.timing.StageTimer`, watches memory, and turns what the executor hands back
(:class:`Executed`) into the one :class:`ArmResult` with :func:`arm_result`, which fails an arm
whose model ran elsewhere than asked (XGBoost only warns when it cannot use the GPU);
:mod:`accel.pairing` compares two arms.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

from accel.backend import Backend
from accel.memory import MemoryMonitor, to_mb
from accel.timing import EXTRA_STAGES, STAGES, StageListener, StageTimer


class Listener(StageListener, Protocol):
    """Told of a run as it goes (the progress display, :class:`accel.report.console.ProgressDisplay`)."""

    def section(self, label: str | None) -> None:
        """What follows belongs to ``label`` (one configuration of ``accel scale``, the baseline of
        ``accel hpo``); None: to no configuration."""

    def arm_started(self, arm: str, stages: tuple[str, ...] = STAGES) -> None:
        """The arm ``arm`` starts; it runs ``stages`` in that order."""

    def rounds(self, arm: str, stage: str, done: int, total: int) -> None:
        """``done`` of ``total`` boosting rounds of the running stage are done (XGBoost only)."""

    def memory(self, host_bytes: int, device_bytes: int | None) -> None: ...

    def arm_finished(self, arm: str, status: str) -> None: ...


@dataclass
class ArmPeaks:
    """An arm's memory peaks (MB), where its work ran: this process, or the workers of a cluster."""

    peak_host_mb: float | None = None
    peak_device_mb: float | None = None
    host_mb_at_start: float | None = None
    stage_peak_host_mb: dict[str, float] = field(default_factory=dict)
    stage_peak_device_mb: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of_workers(cls, workers: dict[str, dict[str, Any]]) -> ArmPeaks:
        """The highest worker's peaks, overall and per stage (:meth:`WorkerMemorySampler.peaks
        <accel.scaleout.cluster.WorkerMemorySampler.peaks>`: each worker's RSS peak and the peaks
        its heartbeats reported per stage)."""

        def highest(values: Iterable[float | None]) -> float | None:
            return max((v for v in values if v is not None), default=None)

        def per_stage(key: str) -> dict[str, float]:
            stages = {s for w in workers.values() for s in w.get(key, {})}
            return {s: v for s in sorted(stages) if (v := highest(w.get(key, {}).get(s) for w in workers.values())) is not None}

        return cls(
            peak_host_mb=highest(w.get("peak_rss_mb") for w in workers.values()),
            peak_device_mb=highest(w.get("dask_reported_peak_device_mb") for w in workers.values()),
            stage_peak_host_mb=per_stage("stage_peak_host_mb"),
            stage_peak_device_mb=per_stage("stage_peak_device_mb"),
        )


@dataclass(kw_only=True)
class ArmResult(ArmPeaks):
    """One arm's part of the run record, whichever executor ran it: its memory peaks (:class:`ArmPeaks`) and the rest."""

    status: str  # "ok" | "skipped" | "failed"
    reason: str | None = None
    backend: str | None = None
    device_used: str | None = None
    device_name: str | None = None
    stages: dict[str, float] = field(default_factory=dict)
    total_seconds: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    threads: dict[str, Any] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    features: list[str] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)
    #: Where each stage ran ("cuda:0 (cudf)", "cpu (pandas)", the model's own device).
    stage_devices: dict[str, str] = field(default_factory=dict)
    #: Which executor ran the stages: "in_memory", "streamed" or "dask" (None: the arm did not run).
    executor: str | None = None
    #: On Dask: each training attempt (a lost worker retries once), each worker's memory peaks,
    #: and this process's own peak (the client's); empty on the executors of this process.
    train_attempts: list[dict[str, Any]] = field(default_factory=list)
    workers_memory: dict[str, dict[str, Any]] = field(default_factory=dict)
    client_peak_host_mb: float | None = None
    #: Importance of each feature by kind (``gain``, ``mean_abs_shap``, ...): the pipeline's.
    importances: dict[str, dict[str, float]] = field(default_factory=dict)
    #: What the arm learnt (:class:`accel.pipeline.Pipeline`), saved beside the record; not part of it.
    pipeline: Any = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(replace(self, pipeline=None)).items() if k != "pipeline"}
        if self.executor == "dask":
            out.update(placement="dask", train_retried=any(a.get("status") == "failed" for a in self.train_attempts))
        return out


def skipped(reason: str) -> ArmResult:
    return ArmResult(status="skipped", reason=reason)


@dataclass
class Executed:
    """What an executor hands the runner once the arm's stages have run.

    ``model`` and ``fitted`` say where the model really trained and with how many threads;
    ``memory`` is the arm's memory record (pool, batches, precision). An executor whose work ran
    in other processes gives their ``peaks`` and ``threads``; otherwise this process's monitor and
    the model's own thread report are used.
    """

    model: Any
    fitted: Any
    metrics: dict[str, float]
    rows: dict[str, int]
    features: list[str]
    memory: dict[str, Any] = field(default_factory=dict)
    peaks: ArmPeaks | None = None
    threads: dict[str, Any] | None = None
    #: Prefix for where the frames and arrays were ("dask workers"); None: this process.
    where: str | None = None
    train_attempts: list[dict[str, Any]] = field(default_factory=list)
    workers_memory: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: What the arm learnt, kept to score new rows (:class:`accel.pipeline.Pipeline`).
    pipeline: Any = None


# What an executor runs: a workflow, a workflow's cluster side, a scoring job.
W = TypeVar("W")


class Executor(Generic[W]):
    """How an arm's five stages run on a ``W``: in memory, streamed in batches, or on a Dask cluster.

    The runner (:func:`accel.runner.execute_arm`) makes the stage timer and the memory monitor,
    tells the listener the arm started and finished, and builds the :class:`ArmResult`; the
    executor runs ``load → features → to_device → train → predict`` under ``timer``. The
    defaults are those of an executor whose work runs in this process; each executor defines
    :meth:`execute` and overrides what differs.
    """

    #: "in_memory", "streamed" or "dask": recorded as the arm's ``executor``.
    name: str
    #: The stages it times, in order (scoring has no ``train``); the arm's total is their sum.
    stages: tuple[str, ...] = STAGES

    def trackers(self) -> tuple[Any, ...]:
        """Samplers the stage timer tells of each stage besides this process's monitor (a
        cluster's worker memory). When there are any, they, not this process's monitor, tell
        the listener of memory (the executor connects them in :meth:`execute`)."""
        return ()

    def monitored(self, backend: Backend) -> Backend:
        """The backend whose memory this process's monitor reads: the arm's own, or the host only
        when the work runs in other processes (a cluster's client holds no device memory)."""
        return backend

    def execute(self, backend: Backend, workflow: W, timer: StageTimer, listener: Listener | None) -> Executed:
        """Run the stages, each under ``timer.stage(name)`` (or ``timer.accumulate``); raise what they raise."""
        raise NotImplementedError

    def after(self, backend: Backend, workflow: W, executed: Executed) -> None:
        """Untimed work once the stages are done and the monitor has stopped (the float32 check of
        an fp16 run); may add to ``executed.memory``."""


def _threads(backend: Backend, model: Any, fitted: Any) -> dict[str, Any]:
    from accel.openmp import settle

    threads = model.threads(backend, fitted)
    return {**threads, "cores_available": backend.n_threads, "omp_wait_policy": dict(settle()), **backend.host_threads()}


def arm_result(
    backend: Backend,
    executor: str,
    timer: StageTimer,
    monitor: MemoryMonitor,
    executed: Executed,
    stages: tuple[str, ...] = STAGES,
) -> ArmResult:
    """The arm's :class:`ArmResult` from the runner's timer and monitor and what ``executor`` did
    (``stages``: the ones it times; any of :data:`~accel.timing.EXTRA_STAGES` it timed too).

    Marked ``failed`` when its model ran on another device than ``backend``'s: XGBoost only warns
    when it cannot use the GPU, and that must not pass as a GPU result.
    """
    model, fitted = executed.model, executed.fitted
    device_used = model.device_used(backend, fitted)
    peaks = executed.peaks or ArmPeaks(  # the peaks this process's monitor saw
        peak_host_mb=to_mb(monitor.peak_host),
        peak_device_mb=to_mb(monitor.peak_device),
        host_mb_at_start=to_mb(monitor.host_at_start),
        stage_peak_host_mb={s: to_mb(v) for s, v in monitor.stage_peak_host.items()},
        stage_peak_device_mb={s: to_mb(v) for s, v in monitor.stage_peak_device.items()},
    )
    stage_devices = backend.stage_devices(device_used)
    if executed.where:
        stage_devices = {s: v if s in ("train", "predict") else f"{executed.where}: {v}" for s, v in stage_devices.items()}
    result = ArmResult(
        status="ok",
        backend=backend.name,
        device_used=device_used,
        device_name=backend.device.name if backend.device else None,
        stages={s: round(timer.seconds.get(s, 0.0), 6) for s in (*stages, *EXTRA_STAGES) if s in stages or s in timer.seconds},
        total_seconds=round(sum(timer.seconds.get(s, 0.0) for s in stages), 6),
        metrics=executed.metrics,
        **asdict(peaks),
        threads=executed.threads if executed.threads is not None else _threads(backend, model, fitted),
        rows=dict(executed.rows),
        features=list(executed.features),
        memory={**executed.memory, "stage_rmm_peak_mb": {k: to_mb(v) for k, v in timer.rmm_peak_bytes.items()}},
        stage_devices=stage_devices,
        executor=executor,
        train_attempts=list(executed.train_attempts),
        workers_memory=dict(executed.workers_memory),
        client_peak_host_mb=to_mb(monitor.peak_host) if executed.peaks is not None else None,
        importances=dict(executed.pipeline.importances) if executed.pipeline is not None else {},
        pipeline=executed.pipeline,
    )
    if device_used is not None and not backend.ran_here(device_used):
        result.status, result.reason = "failed", f"the model ran on {device_used!r} although {backend.xgb_device!r} was asked for"
    return result
