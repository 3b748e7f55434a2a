"""The paired run: the accelerated arm and the CPU baseline arm, the same workflow code in each.

Each arm runs the stages ``load → features → to_device → train → predict`` under a
:class:`~accel.timing.StageTimer` (device synchronised at every clock read) and a
:class:`~accel.memory.MemoryMonitor`, by one runner, :func:`execute_arm`, whatever its
executor (:class:`~accel.result.Executor`): :class:`InMemory`, :class:`~accel.streaming.Streamed`
(a table larger than the memory budget) or :class:`~accel.scaleout.cluster_run.OnDask` (a cluster's
workers). An arm that cannot run is ``skipped`` with the reason;
one that raises is ``failed`` with the reason; neither gets invented numbers, and every
speedup that needs it is NaN.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from accel import _compat
from accel.backend import Backend, resolve_arms
from accel.batching import BUDGET_USE, BatchPlan, T, _human, with_backoff
from accel.config import MIN_BATCH_ROWS, RunConfig
from accel.data.prepared import Prepared
from accel.early_stopping import EarlyStopping, search_between_stages
from accel.errors import AccelError, first_line
from accel.memory import MemoryMonitor, MemorySettings, default_budget, parse_size, setup_rmm_pool
from accel.metrics import task_metrics
from accel.output import detail
from accel.pairing import arm_of, pair
from accel.pipeline import Pipeline, beside_record, from_run
from accel.precision import plan_for_frames, store_frame
from accel.record import ensure_writable, record_head, record_stem, write_record
from accel.registry import DEFAULT_MODEL, MODELS, XGBoostSettings, refusal
from accel.result import ArmResult, Executed, Executor, Listener, W, arm_result, skipped
from accel.timing import StageTimer, timed_call
from accel.workflows.base import StopsEarly, Workflow

# An arm's RMM pool record and batch plan (prepare_arm).
_PreparedArm = tuple[dict[str, Any], BatchPlan]


def prepare_arm(backend: Backend, workflow: Workflow, memory: MemorySettings | None = None) -> _PreparedArm:
    """The arm's RMM pool and batch plan, settled before any stage runs.

    A refusal here (a budget below one batch, a table that must stream with a model that
    cannot) is a user error raised before either arm has done any work.
    """
    from accel.faultpoints import raise_point

    settings = memory or MemorySettings()
    rmm = setup_rmm_pool(backend, settings.rmm_pool, workflow.model_name)
    if settings.memory_budget:
        budget, budget_source = parse_size(settings.memory_budget, "--memory-budget"), "--memory-budget"
    else:
        budget, budget_source = default_budget(backend, rmm)  # from the pool's record: its reserve counts as used
    raise_point(f"batch-plan-{backend.name}")
    plan = workflow.plan_batches(backend, budget, budget_source, settings.batch_rows)
    if plan.mode == "streaming" and not MODELS[workflow.model_name].caps.streams:
        raise refusal(
            workflow.model_name,
            "streams",
            f"the table ({plan.rows_total:,} rows) is streamed in batches of {plan.rows_per_batch:,} "
            f"(budget {budget / 1e6:,.0f} MB); give a larger --memory-budget or --batch-rows to hold it in memory",
        )
    return rmm, plan


def run_arm(
    backend: Backend,
    workflow: Workflow,
    listener: Listener | None = None,
    memory: MemorySettings | None = None,
    prepared_arm: _PreparedArm | None = None,
) -> ArmResult:
    """Run every stage of ``workflow`` (and its ``model``) on ``backend`` in this process; raises what a stage raises.

    ``memory`` (:class:`~accel.memory.MemorySettings`) says the RMM pool, the memory budget, the
    batch size and the storage precision; by default an automatic pool on the GPU arm, half the
    free memory as budget, batches planned from it, float32. ``prepared_arm`` is
    :func:`prepare_arm`'s answer when the caller already has it. The plan chooses the executor:
    :class:`InMemory`, or :class:`~accel.streaming.Streamed` when the table is larger than the budget.
    """
    settings = memory or MemorySettings()
    rmm, plan = prepared_arm or prepare_arm(backend, workflow, settings)
    from accel.streaming import Streamed

    return execute_arm(backend, workflow, (Streamed if plan.mode == "streaming" else InMemory)(plan, settings, rmm), listener)


def execute_arm(backend: Backend, workflow: W, executor: Executor[W], listener: Listener | None = None) -> ArmResult:
    """The one runner: ``executor`` runs the stages under one :class:`~accel.timing.StageTimer`
    and this process's :class:`~accel.memory.MemoryMonitor`; the listener is told the arm
    started and how it ended; the result is built by :func:`~accel.result.arm_result`."""
    trackers = executor.trackers()
    # Where the work runs elsewhere (a cluster's workers), its trackers tell the listener of memory.
    monitor = MemoryMonitor(executor.monitored(backend), on_sample=listener.memory if listener and not trackers else None)
    timer = StageTimer(backend, monitor, listener, trackers=trackers)
    if listener:
        listener.arm_started(backend.name, executor.stages)
    status = "failed"
    try:
        with monitor:
            executed = executor.execute(backend, workflow, timer, listener)
        executor.after(backend, workflow, executed)
        result = arm_result(backend, executor.name, timer, monitor, executed, executor.stages)
        status = result.status
        return result
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        if listener:
            listener.arm_finished(backend.name, status)


class InMemory(Executor[Workflow]):
    """The executor of a table that fits the budget: each stage on the whole table in memory."""

    name = "in_memory"

    def __init__(self, plan: BatchPlan, settings: MemorySettings, rmm: dict[str, Any]):
        self.plan, self.settings, self.rmm = plan, settings, rmm
        self._check: Any = None

    def execute(self, backend: Backend, workflow: Workflow, timer: StageTimer, listener: Listener | None) -> Executed:

        model, plan, settings = workflow.model, self.plan, self.settings
        with timer.stage("load"):
            raw = workflow.load(backend)
        with timer.stage("features"):
            prepared = workflow.features(backend, raw)
            del raw
        with timer.stage("to_device"):
            precision = plan_for_frames(settings.precision, [prepared.X_train, prepared.X_test], prepared.categorical)

            def to_device(rows: int) -> tuple[Any, Any, Any]:
                X_train, X_test = _stored(backend, prepared, precision, rows)
                return X_train, X_test, model.to_device(backend, X_train, prepared.y_train, rows)

            X_train, X_test, model_input = with_backoff(to_device, plan, backend, "to_device")
        if isinstance(model, StopsEarly):
            search_between_stages(
                backend, model, listener, lambda: model.search_rounds(backend, X_train, prepared.y_train, plan.rows_per_batch)
            )
        with timer.stage("train"):
            fitted = model.fit(backend, model_input, on_round=rounds_listener(listener, backend.name, "train"))
        with timer.stage("predict"):
            prediction = with_backoff(lambda rows: model.predict(backend, fitted, X_test, rows), plan, backend, "predict")
        del model_input
        kept = from_run(
            workflow, backend, model, fitted, prepared.transform, precision, timer,
            lambda n: X_test.batch(0, min(n, X_test.n_rows)), (prepared.test_ids, prediction),
        )  # fmt: skip

        y_test = _compat.to_numpy(prepared.y_test)
        metrics = task_metrics(workflow.task, y_test, _compat.to_numpy(prediction))
        memory_record = {
            "rmm": {**self.rmm, **(backend.rmm_statistics() or {})},
            "batches": plan.describe(),
            "precision": precision.describe(),
            "feature_bytes": {"fp32": X_train.nbytes_fp32 + X_test.nbytes_fp32, "stored": X_train.nbytes + X_test.nbytes},
        }
        if settings.precision == "fp16":
            self._check = (prepared, y_test)
        return Executed(model, fitted, metrics, prepared.rows, prepared.feature_names, memory_record, pipeline=kept)

    def after(self, backend: Backend, workflow: Workflow, executed: Executed) -> None:
        """An fp16 run's check: the same model trained on the same rows in float32 (untimed), and the metric change."""
        if self._check is None:
            return
        (prepared, y_test), self._check = self._check, None
        model, rows = workflow.model, self.plan.rows_per_batch
        X_train, X_test = _stored(backend, prepared, plan_for_frames("fp32", [prepared.X_train], prepared.categorical), rows)
        fitted = model.fit(backend, model.to_device(backend, X_train, prepared.y_train, rows))
        fp32 = task_metrics(workflow.task, y_test, _compat.to_numpy(model.predict(backend, fitted, X_test, rows)))
        delta = {k: executed.metrics[k] - fp32[k] for k in fp32 if k in executed.metrics}
        executed.memory["precision"]["fp32_check"] = {"metrics_fp32": fp32, "delta": delta}


def rounds_listener(listener: Listener | None, arm: str, stage: str) -> Any:
    """``on_round(done, total)`` for a model's ``fit``, telling ``listener`` of each boosting round."""
    if listener is None:
        return None
    return lambda done, total: listener.rounds(arm, stage, done, total)


def _stored(backend: Backend, prepared: Prepared, precision: Any, rows: int) -> tuple[Any, ...]:
    """The training and test features stored on ``backend`` in ``precision``, ``rows`` at a time."""
    return tuple(store_frame(backend, X, prepared.categorical, precision, rows) for X in (prepared.X_train, prepared.X_test))


def or_failed(backend: Backend, call: Callable[[], T], prefix: str = "") -> T | ArmResult:
    """``call()``, or the arm ``failed`` with the reason when it raises an error of the arm's
    libraries; a refusal of the user's settings (:class:`AccelError`) and an interrupt go through."""
    try:
        return call()
    except (AccelError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - recorded as the arm's failure: the other arm still runs
        return ArmResult(status="failed", reason=prefix + first_line(exc), backend=backend.name)


def run_arm_safely(
    backend: Backend,
    workflow: Workflow,
    listener: Listener | None,
    memory: MemorySettings | None = None,
    prepared_arm: _PreparedArm | ArmResult | None = None,
    collect: bool = True,
) -> ArmResult:
    """:func:`run_arm`, with a failure recorded as ``failed`` rather than ending the paired run.

    ``collect``: run the garbage collector afterwards, so that the arm's memory is free for what
    runs next (70 ms with pandas, scikit-learn and XGBoost loaded; the last arm skips it).
    ``prepared_arm`` may be :func:`prepare_arm`'s failure recorded by :func:`or_failed`: it is the arm's result.
    """
    if isinstance(prepared_arm, ArmResult):
        if listener:
            listener.arm_started(backend.name)
            listener.arm_finished(backend.name, prepared_arm.status)
        return prepared_arm
    try:
        return or_failed(backend, lambda: run_arm(backend, workflow, listener, memory, prepared_arm))  # e.g. out of memory
    finally:
        if collect:
            gc.collect()


def build_workflow(config: RunConfig, early_stopping: EarlyStopping | None = None) -> Workflow:
    """The workflow a validated config asks for: a named one, or the user's table (planned here).

    Its XGBoost model stops early on a validation part of the training rows, with the rounds
    decided once for every arm that shares ``early_stopping`` (an
    :class:`~accel.early_stopping.EarlyStopping`; by default a new one, shared by the two arms
    that run this workflow).
    """
    from accel.workflows import WorkflowSettings, get_workflow
    from accel.workflows.table import TableWorkflow, plan_table, probe_encodings

    settings = WorkflowSettings.of(config)
    if config.data is not None and config.scale > 1:
        raise AccelError("--scale replicates the flights data; it does not apply to your own table (--data)")
    if config.data is None:
        workflow = get_workflow(config.workflow, settings, xgboost_params=XGBoostSettings(**config.model_params()))
        workflow.check_split()  # a test split that cannot be scored is refused before any arm runs
    else:
        assert config.target is not None  # RunConfig refuses --data without --target
        family, formats = MODELS[config.model].caps.family, dict(config.date_format)
        planned = plan_table(
            str(config.data), config.target, config.task, list(config.drop), settings, config.delimiter, family, formats
        )
        probe_encodings(planned, settings.seed, config.probe, config.model_params().get("n_estimators"))
        workflow = TableWorkflow(settings, planned, config.model, config.model_params())
    # Only a model that can stop early (its registry entry's ``stops_early``; a StopsEarly) gets it.
    if MODELS[workflow.model_name].caps.stops_early and isinstance(workflow.model, StopsEarly):
        workflow.model.early_stopping = early_stopping or early_stopping_for(config)
    return workflow


def early_stopping_for(config: RunConfig) -> EarlyStopping:
    """The early stopping of a run of ``config`` (its validation rows drawn from ``config.seed``)."""
    return EarlyStopping(seed=config.seed)


def paired_run(
    config: RunConfig,
    listener: Listener | None = None,
    on_plan: Callable[[Workflow], None] | None = None,
    process_start: float | None = None,
) -> tuple[dict[str, Any], Path]:
    """Run ``config``'s workflow on the accelerated arm and the CPU arm; write the run record.

    Everything that can be refused is checked before the first stage starts (output folder,
    workflow name, the user's file and target, ``--device gpu`` without a GPU), so a refusal
    leaves nothing behind. ``on_plan(workflow)`` is called once the workflow is planned, before
    the arms run. ``process_start`` (``time.time()``): when the run is the whole process (the
    command line), when its interpreter started, so that the wall breakdown counts the
    start-up; otherwise the breakdown starts with this call. Returns ``(record, path)``.
    """
    run = PairedRun(config, ensure_writable(config.out), process_start)
    memory = config.memory_settings()
    # Before planning reads the file or probes: a budget below what one batch of the minimum size
    # needs even at one 8-byte column (sizes that do not parse were refused by the config already).
    if memory.memory_budget and (budget := parse_size(memory.memory_budget, "--memory-budget")) < MIN_BATCH_ROWS * 8 / BUDGET_USE:
        raise AccelError(
            f"--memory-budget {_human(budget)} is below the minimum for one batch: {MIN_BATCH_ROWS:,} rows need "
            f"at least {_human(MIN_BATCH_ROWS * 8 / BUDGET_USE)} even with a single 8-byte column; raise the budget"
        )
    workflow = build_workflow(config)
    run.planned(workflow)
    arms = resolve_arms(config.device)  # --device gpu without a GPU: DeviceUnavailable (exit 2)
    backends = {"gpu": arms.gpu, "cpu": arms.cpu} if arms.gpu is not None else {"cpu": arms.cpu}
    detail(f"planning: environment report {run.t_env:.2f} s")
    # Pools and batch plans of both arms first: a refusal comes before any arm has run.
    prepared: dict[str, _PreparedArm | ArmResult] = {}
    for arm, backend in backends.items():
        # An error of the arm's libraries while it plans (the batch-size probe reads, featurises and
        # converts on the arm's device: a type cuDF cannot read, out of memory) is that arm failed,
        # and the other arm still runs; a refusal of the user's settings (AccelError) ends the run.
        run.batch_plan[arm], prepared[arm] = timed_call(
            lambda: or_failed(backend, lambda: prepare_arm(backend, workflow, memory), "while planning batches: ")
        )
        if not isinstance(ready := prepared[arm], ArmResult):
            mode, rows = ready[1].mode, ready[1].rows_per_batch
            detail(f"planning: {arm.upper()} arm's batch plan {run.batch_plan[arm]:.2f} s ({mode}, {rows:,} rows a batch)")
    if on_plan is not None:
        on_plan(workflow)
    if arms.gpu is None:
        run.add_arm("gpu", time.perf_counter(), skipped(str(arms.gpu_skip)).as_dict())
    for arm, backend in backends.items():
        t0 = time.perf_counter()
        # The last arm (the CPU's) skips the garbage collection afterwards.
        result = run_arm_safely(backend, workflow, listener, memory, prepared[arm], collect=arm != "cpu")
        run.add_arm(arm, t0, result.as_dict(), result.pipeline)
    return run_record(run, workflow, getattr(workflow.model, "early_stopping", None), model=workflow.model.describe())


@dataclass
class PairedRun:
    """A paired run as it goes, wherever its arms run (in this process, on Dask workers): its
    config, the folder of its record, the clocks of its parts (``time.perf_counter``) and its
    arms' parts of the record, from which :func:`run_record` writes the record.

    ``process_start``: as for :func:`paired_run`.
    """

    config: RunConfig
    out: Path
    process_start: float | None = None
    t_run: float = field(default_factory=time.perf_counter)
    #: The wall record's ``planning`` (its ``total``, a user's table's steps) and encoding probe seconds.
    planning: dict[str, float] = field(default_factory=dict)
    probe: float = 0.0
    started: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    t_env: float = 0.0
    environment: dict[str, Any] = field(default_factory=dict)
    #: Seconds of each arm's batch plan, and of each arm that ran (not a skipped one).
    batch_plan: dict[str, float] = field(default_factory=dict)
    arm_wall: dict[str, float] = field(default_factory=dict)
    #: Each arm's part of the record (:meth:`ArmResult.as_dict`, with what an arm on a cluster
    #: adds: ``placement``, ``cluster``, ``train_attempts``) and its fitted pipeline (or None).
    arms: dict[str, dict[str, Any]] = field(default_factory=dict)
    kept: dict[str, Pipeline | None] = field(default_factory=dict)

    def planned(self, workflow: Workflow | None) -> None:
        """Planning of ``workflow`` is over (``--verbose``: its seconds and those of its steps, a user's
        table's head read, schema inference, encoding probe); the run starts: the environment report.
        ``workflow``: the single-process workflow that was planned (None: a named workflow run on
        Dask, planned on the workers)."""
        from accel.environment import collect_environment

        seconds = time.perf_counter() - self.t_run
        table = workflow.planned if workflow is not None else None
        self.probe = table.probe_seconds if table is not None else 0.0
        self.planning = {"total": seconds - self.probe}
        if workflow is not None and table is not None:
            self.planning.update(read_on_host=table.read_seconds, schema_inference=table.infer_seconds)
            detail(
                f"planning: {workflow.name} workflow planned in {seconds - table.probe_seconds:.2f} s (read the head "
                f"{table.read_seconds:.2f} s, schema inference {table.infer_seconds:.2f} s); encoding probe {table.probe_seconds:.2f} s"
            )
        elif workflow is not None:
            detail(f"planning: {workflow.name} workflow planned in {seconds:.2f} s")
        self.started = datetime.now(timezone.utc)
        self.t_env, self.environment = timed_call(collect_environment)

    def add_arm(self, arm: str, t0: float, part: dict[str, Any], pipeline: Pipeline | None = None) -> None:
        """Arm ``arm`` is over: its part of the record, its fitted pipeline, and (unless it was
        skipped) its wall seconds since ``t0``."""
        self.arms[arm], self.kept[arm] = part, pipeline
        if part["status"] != "skipped":
            self.arm_wall[arm] = time.perf_counter() - t0


def run_record(run: PairedRun, workflow: Any, early_stopping: EarlyStopping | None, **extra: Any) -> tuple[dict[str, Any], Path]:
    """Write the record of a paired run, wherever its arms ran (in this process, on Dask workers),
    with each arm's fitted pipeline beside it; ``(record, path)``.

    The speedups and the parity come from both arms' parts (``run.arms``). ``extra`` goes in as it
    is (``model``, ``mode``), then the ``wall`` (:func:`wall_timeline`).
    """
    gpu, cpu = run.arms["gpu"], run.arms["cpu"]
    run.environment["threads_used"] = {"cpu": arm_of(cpu).threads, "gpu": arm_of(gpu).threads}
    record = {
        **record_head("run"),
        "workflow": workflow.name,
        "task": workflow.task,
        "started_at": run.started.isoformat(),
        "finished_at": datetime.now(timezone.utc).isoformat(),
        "git_sha": run.environment.get("git_sha"),
        "config": run.config.model_dump(mode="json"),
        "data": workflow.describe_data(),
        "features": dict(getattr(workflow, "feature_reports", None) or {}),
        "environment": run.environment,
        **pair(workflow.task, getattr(workflow, "model_name", DEFAULT_MODEL), gpu, cpu),
        **extra,  # model, mode
        "wall": wall_timeline(run, early_stopping),
    }
    kept = {arm: p for arm, p in run.kept.items() if p is not None}
    return record, write_record(run.out, record, record_stem(workflow.name, run.started), companion=beside_record(record, kept))


def wall_timeline(run: PairedRun, early_stopping: EarlyStopping | None = None) -> dict[str, Any]:
    """Where the process's wall time went, up to the record being written: start-up (from
    ``process_start``, when the interpreter started: imports, argument parsing; 0 without it,
    a run called from Python), planning (reading the head, schema inference), the encoding
    probe (a user's table for a model that takes categories natively), the environment report, each arm's batch plan, each arm's timed stages and
    its work between them (set-up, the fp16 check, the early-stopping search of the arm that ran
    it: ``rounds_search``; on Dask, ``cluster_startup``: starting the arm's cluster), and what is
    left over. The parts add up to ``process_seconds``;
    ``unaccounted_seconds`` is the remainder."""
    now = time.perf_counter()
    since_start = 0.0 if run.process_start is None else time.time() - run.process_start
    process = max(since_start, now - run.t_run)
    arms: dict[str, dict[str, float]] = {}
    for arm, seconds in run.arm_wall.items():
        part = run.arms[arm]
        stages = (part["status"] == "ok" and part["total_seconds"]) or 0.0
        arms[arm] = {"wall": seconds, "stages": stages, "outside_stages": max(seconds - stages, 0.0)}
        if cluster := part.get("cluster"):
            arms[arm]["cluster_startup"] = float(cluster["startup_seconds"])
        decided = getattr(early_stopping, "decided", None)
        if decided and decided["decided_by"] == arm:
            arms[arm]["rounds_search"] = decided["search_seconds"]
    parts = {
        "start_up": max(process - (now - run.t_run), 0.0),
        "planning": run.planning["total"],
        "encoding_probe": run.probe,
        "environment": run.t_env,
        "batch_plan": sum(run.batch_plan.values()),
        "arms": sum(a["wall"] for a in arms.values()),
    }
    return {
        "process_seconds": process,
        "parts": parts,
        "planning": run.planning,
        "batch_plan": run.batch_plan,
        "arms": arms,
        "unaccounted_seconds": max(process - sum(parts.values()), 0.0),
    }
