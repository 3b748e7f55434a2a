"""One workflow run on a Dask cluster: timed stages, training retried once on a lost worker, the record.

``accel run flights --cluster local|local-cuda`` or ``--scheduler tcp://HOST:PORT`` comes here,
and so does a user's table (``accel run --data FILE --target COLUMN --cluster ...``). Any
workflow with a :class:`~accel.workflows.partitions.DaskForm` side runs here:
:class:`~accel.workflows.flights_dask.DaskFlights` or :class:`~accel.workflows.table_dask.DaskTable`.
The stages are those of the single-process run (``load → features → to_device → train →
predict``), each timed on the client from submission until the workers hold the result:

- ``load``: the rows read on the workers (flights row blocks with their jittered copies; the
  table's file cut to the plan's rows), persisted;
- ``features``: the single-process feature code per partition, the global pieces (group
  statistics, target-encoder sums) reduced over partitions, persisted;
- ``to_device``: the ``xgboost.dask.DaskQuantileDMatrix`` set up over the training
  partitions (each worker sketches its own partitions when training starts, so most of the
  matrix work is counted in ``train``);
- ``train``: ``xgboost.dask.train``. If a worker is lost while it runs (XGBoost's collective
  fails when a peer vanishes), training is retried once on the remaining workers, after Dask
  has recomputed the lost partitions, and the record lists both attempts. A second failure
  ends the run with an error and no record;
- ``predict``: ``xgboost.dask.inplace_predict`` on the test partitions. Only the labels and
  probabilities of the test rows (two numbers a row) come back to the client, where the same
  scikit-learn metrics as in the single-process run score them (an exact AUC needs all scores).

The record has the single-process record's shape: the cluster's arm sits under its workers'
kind (``arms.gpu`` or ``arms.cpu``), the other arm is ``skipped`` with the reason and every
speedup is NaN; ``accel scale`` compares against the single-process baseline. Beside that:
``mode: "dask"`` and ``cluster`` (kind, address, dashboard, workers, threads, GPUs per
worker, the workers themselves with their memory peaks, start-up seconds).
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack, suppress
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from accel import _compat
from accel.backend import Backend, get_backend, probe_gpu
from accel.config import RunConfig
from accel.early_stopping import EarlyStopping, search_between_stages
from accel.errors import AccelError, DeviceUnavailable, first_line
from accel.faultpoints import training_callbacks
from accel.metrics import task_metrics
from accel.models import XGBOOST_EVAL_METRIC, XGBoostModel, XGBoostSettings
from accel.output import say
from accel.pipeline import from_run
from accel.precision import frame_matrix, plan_precision, xgboost_safe_name
from accel.record import ensure_writable
from accel.registry import MODELS, refusal, xgboost_threads_used
from accel.result import Executed, Listener, skipped
from accel.runner import PairedRun, build_workflow, early_stopping_for, execute_arm, run_arm_safely, run_record
from accel.scaleout.arms import ArmPlace, gpu_planning_refused, plan_arms
from accel.scaleout.cluster import ClusterInfo, ClusterSession, OnWorkers
from accel.timing import StageTimer
from accel.workflows import DASK_WORKFLOWS, get_workflow
from accel.workflows.base import WorkflowSettings
from accel.workflows.partitions import DaskBuilder, DaskForm, held_rows, partition_offsets
from accel.workflows.table_dask import table_builder

#: How far the distributed run's hold-out AUC may be from the single-process run's on the same
#: data and seed. The rows, features and categories are identical (tested exactly); XGBoost's
#: distributed ``hist`` merges per-worker quantile sketches, so bin edges, and then trees, can
#: differ slightly. The same bound as between the GPU and CPU arms.
DASK_PARITY_TOLERANCE = 0.005
#: Seconds to wait for the scheduler to notice a worker that died while XGBoost trained.
WORKER_LOSS_WAIT_S = 10.0
#: Seconds a training attempt may go on after one of its workers is gone before its futures are
#: cancelled (XGBoost cannot finish without the lost rank; usually it fails within a second).
TRAINING_LOSS_GRACE_S = 20.0
#: XGBoost's collective timeout (``dmlc_timeout``, seconds): a survivor waiting on a dead peer
#: gives up after this, which frees a single-threaded worker for the retry. The environment
#: variable ``ACCEL_DASK_COLLECTIVE_TIMEOUT_S`` sets another (recorded with the overrides).
COLLECTIVE_TIMEOUT_S = 300
COLLECTIVE_TIMEOUT_ENV = "ACCEL_DASK_COLLECTIVE_TIMEOUT_S"


def collective_timeout() -> int:
    """The collective timeout in seconds: :data:`COLLECTIVE_TIMEOUT_S`, or the environment's."""
    text = os.environ.get(COLLECTIVE_TIMEOUT_ENV, str(COLLECTIVE_TIMEOUT_S))
    with suppress(ValueError):
        if (value := int(text)) >= 1:
            return value
    raise AccelError(f"{COLLECTIVE_TIMEOUT_ENV}={text!r}: give a whole number of seconds, at least 1")


class ClusterRunFailed(AccelError):
    """The cluster could not finish the run (e.g. training failed twice); nothing is written."""

    exit_code = 1


def client_backend(kind: str) -> Backend:
    """This process's backend for workers of ``kind``: Dask plans cuDF partitions with cuDF here."""
    try:
        return get_backend(kind)
    except DeviceUnavailable:
        raise gpu_planning_refused(probe_gpu().reason) from None


def _lost_workers(session: ClusterSession, before: list[str]) -> list[str]:
    """Workers that were there before training and are gone now (waiting briefly for the scheduler)."""
    deadline = time.monotonic() + WORKER_LOSS_WAIT_S
    while True:
        try:
            lost = sorted(set(before) - set(session.workers_now()))
        except Exception:  # noqa: BLE001 - the scheduler itself may be gone
            return []
        if lost or time.monotonic() >= deadline:
            return lost
        time.sleep(0.2)


def tracker_host(client: Any) -> str:
    """The address XGBoost's collective tracker listens on: the scheduler's own host.

    xgboost.dask starts the tracker in the scheduler process and, unless told, binds it to the
    address its ``get_host_ip`` guesses (the machine's outward-facing IP), even for a cluster
    that listens on 127.0.0.1 only. Given the scheduler's host, a local cluster's tracker stays
    on loopback too, and a remote scheduler's tracker on the interface the workers already reach.
    """
    from distributed.comm import get_address_host

    return get_address_host(client.scheduler.address).strip("[]")


#: What each worker prints as it joins XGBoost's training ("[12:00:01] Task [xgboost.dask-0]:tcp://... got rank 0").
RANK_LINE = re.compile(r"Task \[[^\]]*\]\S* got rank \d+")


@functools.cache
def drop_rank_lines() -> None:
    """Run on each worker of a cluster accel starts (``client.run``), once per process: XGBoost's
    "Task [xgboost.dask-0]:... got rank 0" lines, which each worker writes to its stderr as it
    joins training (from a thread with no Python log callback: straight to descriptor 2), are
    left out; every other line of the worker's stderr passes as it comes.

    Descriptor 2 becomes a pipe that a thread of the worker reads line by line, writing on to
    the real stderr what is not a rank line. (A running cluster's workers are the user's own and
    are left as they are.)
    """
    sys.stderr.flush()
    real = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def pump() -> None:
        with os.fdopen(read_end, "rb") as lines:
            for line in lines:
                if not RANK_LINE.search(line.decode("utf-8", "replace")):
                    os.write(real, line)

    threading.Thread(target=pump, name="accel-stderr-filter", daemon=True).start()


#: Said once per process, before the first distributed training (the sockets live while it trains).
RING_SOCKETS_NOTE = (
    "note: while XGBoost trains, each worker's collective ring socket listens on every network interface "
    "(XGBoost binds it itself, with no setting for the address); the scheduler, workers and dashboard accel "
    "starts listen on 127.0.0.1 only"
)
_say_once = functools.cache(say)


def train_with_one_retry(
    session: ClusterSession,
    params: dict[str, Any],
    rounds: int,
    make_input: Callable[[], tuple[Any, Any]],
    model_input: tuple[Any, Any],
    early_stopping_rounds: int | None = None,
) -> tuple[Any, list[dict[str, Any]]]:
    """``xgboost.dask.train``; once more on the remaining workers if a worker was lost.

    ``model_input`` is ``(training matrix, validation matrix or None)``: the early-stopping
    search watches the validation part every round and stops after ``early_stopping_rounds``
    rounds without gain (``make_input()`` builds it again for the retry). Returns the booster and the attempts (``attempt``, ``status``, ``workers``, and for a
    failed one its ``reason`` and ``lost_workers``). Raises :class:`ClusterRunFailed` when the
    first attempt fails without losing a worker (retrying would fail alike) or the retry fails.
    """
    from xgboost import dask as dxgb
    from xgboost.collective import Config as CollConfig

    client = session.client
    attempts: list[dict[str, Any]] = []
    _say_once(RING_SOCKETS_NOTE)
    for attempt in (1, 2):
        before = session.workers_now()
        try:
            if attempt == 2:
                model_input = make_input()  # its model input built again on the remaining workers
            dtrain, dvalid = model_input
            evals = [(dvalid, "validation")] if dvalid is not None else None
            with session.worker_loss_watchdog(before, TRAINING_LOSS_GRACE_S):
                output = dxgb.train(
                    client, params, dtrain, num_boost_round=rounds, callbacks=training_callbacks(attempt),
                    evals=evals, early_stopping_rounds=early_stopping_rounds if evals else None, verbose_eval=False,
                    coll_cfg=CollConfig(timeout=collective_timeout(), tracker_host_ip=tracker_host(client)),
                )  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - XGBoostError, CommClosedError, KilledWorker, ...
            attempts.append(_failed_attempt(session, before, attempt, exc))  # raises unless a retry follows
        else:
            return output["booster"], [*attempts, {"attempt": attempt, "status": "ok", "workers": len(before)}]
    raise AssertionError("unreachable")


def _failed_attempt(session: ClusterSession, before: list[str], attempt: int, exc: Exception) -> dict[str, Any]:
    """The record of a training attempt that raised ``exc`` with ``before`` the workers it started
    with, when one more attempt may follow on the workers left; :class:`ClusterRunFailed` otherwise."""
    reason, lost = first_line(exc), [] if session.all_workers_lost else _lost_workers(session, before)
    if session.all_workers_lost or (attempt == 1 and lost and len(lost) >= len(before)):
        raise ClusterRunFailed(
            f"every Dask worker was lost during XGBoost training (attempt {attempt}); no run record was written"
        ) from None
    if attempt == 2:
        raise ClusterRunFailed(
            f"XGBoost training failed again on the retry ({reason}"
            f"{f'; lost {len(lost)} more worker(s)' if lost else ''}); no run record was written"
        ) from None
    if not lost:
        raise ClusterRunFailed(f"XGBoost training failed on the cluster ({reason}); no run record was written") from None
    say(f"dask: training lost {len(lost)} worker(s) ({reason}); retrying once on the {len(before) - len(lost)} remaining")
    return {"attempt": attempt, "status": "failed", "reason": reason, "workers": len(before), "lost_workers": lost}


def run_on_session(
    session: ClusterSession,
    workflow: str | DaskBuilder,
    settings: WorkflowSettings,
    params: XGBoostSettings,
    seed: int,
    listener: Listener | None = None,
    backend: Backend | None = None,
    early_stopping: EarlyStopping | None = None,
) -> tuple[dict[str, Any], DaskForm, Any]:
    """Run every stage on the session's cluster; the arm's part of the record, the workflow and
    the fitted pipeline (:class:`accel.pipeline.Pipeline`).

    With ``early_stopping`` (shared with the run's other arm) XGBoost stops early on a
    validation part of the training rows, or trains the rounds another arm decided; without,
    it trains ``params.n_estimators`` rounds.

    ``workflow`` is a name of :data:`accel.workflows.DASK_WORKFLOWS` or a builder
    (:func:`accel.workflows.table_dask.table_builder`).
    ``backend`` is this process's backend for the workers' kind, as
    :func:`accel.scaleout.arms.plan_arms` decided it (by default :func:`client_backend`). The
    arm runs through the one runner (:func:`accel.runner.execute_arm`) with :class:`OnDask`.
    """
    info = session.info
    backend = backend or client_backend(info.worker_kind)
    build = DASK_WORKFLOWS[workflow] if isinstance(workflow, str) else workflow  # a name DaskJob accepted
    dask_workflow = build(settings, info.worker_kind, backend, info.workers, info.total_threads or info.workers)
    model = XGBoostModel(params, dask_workflow.task, seed=seed, n_classes=dask_workflow.n_classes, early_stopping=early_stopping)
    result = execute_arm(backend, dask_workflow, OnDask(session, model), listener)
    return result.as_dict(), dask_workflow, result.pipeline


class OnDask(OnWorkers[DaskForm]):
    """The executor of an arm on a Dask cluster's workers: each stage timed on the client from
    submission until the workers hold its result, training retried once on a lost worker.
    ``model`` is the XGBoost model the workers train (with the run's early stopping, if any)."""

    name = "dask"

    def __init__(self, session: ClusterSession, model: XGBoostModel):
        super().__init__(session)
        self.model = model

    def execute(self, backend: Backend, dask_workflow: DaskForm, timer: StageTimer, listener: Listener | None) -> Executed:
        import dask
        from xgboost import dask as dxgb

        session, model, client = self.session, self.model, self.session.client
        info, params, es = session.info, model.params, model.early_stopping
        # No nthread: xgboost.dask gives each worker its own thread count.
        train_params = {k: v for k, v in model.booster_params(backend).items() if k != "nthread"}
        self.sampler.on_sample = listener.memory if listener else None  # the progress shows the workers' memory
        try:
            backend_config = {"dataframe.backend": _compat.dask_dataframe_backend(backend.xdf)}
            with dask.config.set(backend_config), self.sampler, session.no_worker_watchdog():
                with timer.stage("load"):
                    raw, loaded = dask_workflow.load(client)
                with timer.stage("features"):
                    prepared = dask_workflow.features(client, raw, loaded)
                    del raw

                def training_frames(fresh: bool) -> tuple[Any, Any]:
                    """The training features and labels; ``fresh``: built again on the workers left.

                    A retry after a lost worker reuses nothing of the first attempt's data:
                    partitions lost with a worker are not always recomputed (their futures are
                    cancelled as "already forgotten" or for "lost dependencies" while XGBoost
                    holds them). The test rows are rebuilt with them, for the prediction."""
                    nonlocal prepared
                    if fresh:
                        prepared = dask_workflow.features(client, dask_workflow.load(client)[0], loaded)
                    return xgboost_named(prepared.X_train), prepared.y_train

                def make_dtrain(fresh: bool = False) -> tuple[Any, Any]:
                    X, y = training_frames(fresh)
                    return dxgb.DaskQuantileDMatrix(client, X, y, enable_categorical=True, max_bin=params.max_bin), None

                if session.plan.kind != "scheduler":  # a cluster accel started: its workers' rank lines are noise
                    client.run(drop_rank_lines)
                n_train = int(prepared.rows["train"])
                searched: list[dict[str, Any]] = []
                search_between_stages(
                    backend, model, listener,
                    lambda: searched.extend(self.search_rounds(backend.name, train_params, training_frames, n_train)),
                )  # fmt: skip
                with timer.stage("to_device"):
                    model_input = make_dtrain()
                with timer.stage("train"):
                    rounds = es.rounds(params.n_estimators) if es is not None else params.n_estimators
                    booster, attempts = train_with_one_retry(
                        session, train_params, rounds, lambda: make_dtrain(fresh=True), model_input
                    )
                    attempts = [*searched, *attempts]  # a worker lost during the rounds search is said too
                    del model_input
                with timer.stage("predict"):
                    prediction = client.persist(dxgb.inplace_predict(client, booster, xgboost_named(prepared.X_test)))
                    y_true, y_prob = client.compute([prepared.y_test, prediction], sync=True)
                kept = from_run(
                    dask_workflow, backend, model, booster, prepared.transform,
                    plan_precision("fp32", prepared.feature_names, []), timer,
                    lambda n: frame_matrix(prepared.X_test.head(n, npartitions=-1), prepared.categorical),
                    (prepared.test_ids, _compat.to_numpy(y_prob)),
                )  # fmt: skip
                workers_memory = self.sampler.peaks()
        except (KeyboardInterrupt, AccelError):
            raise
        except Exception as exc:  # noqa: BLE001 - one line for the user, like a failed arm's reason
            if session.all_workers_lost or not session.has_workers():
                raise ClusterRunFailed("every Dask worker was lost; no run record was written") from None
            raise ClusterRunFailed(f"the run failed on the Dask cluster ({first_line(exc)}); no run record was written") from None
        finally:
            with suppress(Exception):  # a worker lost at the end keeps nothing anyway
                dask_workflow.clear_workers(client)

        metrics = task_metrics(dask_workflow.task, _compat.to_numpy(y_true), _compat.to_numpy(y_prob))
        executed = Executed(
            model, booster, metrics, dict(prepared.rows), prepared.feature_names, train_attempts=attempts, pipeline=kept
        )
        omp = sorted({str(w.get("omp_wait_policy")) for w in info.worker_details})
        return self.ran_on_workers(executed, workers_memory, xgboost_nthread=xgboost_threads_used(booster), omp_wait_policy=omp)

    def search_rounds(
        self, arm: str, params: dict[str, Any], training_frames: Callable[[bool], tuple[Any, Any]], n_train: int
    ) -> list[dict[str, Any]]:
        """The early-stopping search on the cluster (the first arm to train): the validation part
        carved from the training rows (the same positions among them as in one process, each
        partition taking its own from the partitions' lengths), the rest boosted watching it; the
        rounds found go to the model's :class:`~accel.early_stopping.EarlyStopping`.
        ``training_frames(fresh)`` gives the training features and labels, built again on the
        workers left when ``fresh`` (the retry after a lost worker). Returns the
        search's failed training attempts (a worker lost while it boosted), for the arm's record."""
        from xgboost import dask as dxgb

        session, model, client, es = self.session, self.model, self.session.client, self.model.early_stopping
        assert es is not None
        X_train, y_train = training_frames(False)
        positions = es.positions(n_train)
        offsets = partition_offsets(client, X_train.to_delayed())

        def part(frame: Any, valid: bool) -> Any:
            return frame.map_partitions(held_rows, offsets, positions, valid, meta=frame._meta)

        labels = _compat.to_numpy(part(y_train, True).compute()) if len(positions) else np.empty(0)
        if not es.check(n_train, labels, model.classes):
            return []
        options = {"enable_categorical": True, "max_bin": model.params.max_bin}

        def make_input(fresh: bool = False) -> tuple[Any, Any]:
            X, y = training_frames(fresh)  # built again: the same partitions, so the same offsets
            dfit = dxgb.DaskQuantileDMatrix(client, part(X, False), part(y, False), **options)
            return dfit, dxgb.DaskQuantileDMatrix(client, part(X, True), part(y, True), ref=dfit, **options)

        metric, cap, t0 = XGBOOST_EVAL_METRIC[model.task], model.params.n_estimators, time.perf_counter()
        params = {**params, "eval_metric": metric}
        booster, attempts = train_with_one_retry(session, params, cap, lambda: make_input(True), make_input(), es.patience)
        es.settle(booster, arm, metric, time.perf_counter() - t0, cap)
        return [{**a, "phase": "rounds search"} for a in attempts if a["status"] == "failed"]


def xgboost_named(frame: Any) -> Any:
    """A Dask frame with the column names XGBoost accepts (no ``[``, ``]``, ``<``: a user's columns may have them)."""
    renamed = {c: xgboost_safe_name(c) for c in frame.columns if xgboost_safe_name(c) != c}
    return frame.rename(columns=renamed) if renamed else frame


#: Options of a run in this process that a Dask run does not take: (config key, its default,
#: flag, why). float16 storage is a CuPy/NumPy array in one process: cuDF has no float16 column
#: type ("Unsupported type float16", cudf 26.10 core/column/column.py), so the partitions of GPU
#: workers (cuDF frames) cannot hold features in it, and a CPU-only fp16 would make the two arms
#: store different things.
_FLOAT16 = "float16 storage is an array in one process's memory, and cuDF (the GPU workers' partitions) has no float16 column"
_IN_MEMORY = "the workers hold their partitions in memory, not batches of a file"
SINGLE_PROCESS_ONLY = (
    ("precision", "fp32", "--precision", _FLOAT16),
    ("batch_rows", "auto", "--batch-rows", _IN_MEMORY),
    ("memory_budget", None, "--memory-budget", _IN_MEMORY),
)


def check_dask_config(config: RunConfig) -> None:
    """Refuse, up front, what only a run in this process can honour (never ignored silently)."""
    for key, default, flag, why in SINGLE_PROCESS_ONLY:
        if getattr(config, key, default) != default:
            raise AccelError(
                f"{flag} applies to a run in this process, not to a Dask run (--cluster/--scheduler): {why}; "
                "on Dask, --worker-memory limits each worker and Dask spills its partitions to disk beyond it"
            )
    if MODELS[config.model].caps.dask is None:
        raise refusal(config.model, "dask", "run it in this process (without --cluster/--scheduler)")


class DaskJob:
    """What every arm of a run on Dask shares: a cluster run's two arms, each run of a scaling study.

    Planned from ``config``: ``on_plan(planned)`` is called with a user's table's plan; a
    workflow name that cannot run on Dask is refused (an unknown one with the usual error).

    Attributes
    ----------
    config : RunConfig
    early_stopping : EarlyStopping
        One decision of the rounds: every arm trains the rounds the first of them decided.
    workflow : str or DaskBuilder
        What each cluster run builds its Dask workflow from: a name of
        :data:`accel.workflows.DASK_WORKFLOWS`, or a table's builder.
    planned : Workflow or None
        A user's table's single-process workflow, planned here on the host once (rows, split,
        columns); None for a named workflow.
    listener : Listener or None
        Where the progress goes.
    """

    def __init__(self, config: RunConfig, listener: Listener | None, on_plan: Callable[[Any], None] | None = None):
        self.config, self.listener, self.early_stopping = config, listener, early_stopping_for(config)
        self.workflow: str | DaskBuilder = config.workflow
        self.planned: Any = None
        if config.data is None:
            if config.workflow not in DASK_WORKFLOWS:
                get_workflow(config.workflow, WorkflowSettings())  # an unknown name: the usual error, listing the known ones
                raise AccelError(f"workflow {config.workflow!r} cannot run on Dask; known: {', '.join(sorted(DASK_WORKFLOWS))}")
            return
        self.planned = build_workflow(config, self.early_stopping)
        if on_plan is not None:
            on_plan(self.planned)
        self.workflow = table_builder(self.planned.planned)

    def single_process(self) -> Any:
        """The workflow of an arm in this process: the table's plan, or the named workflow built."""
        return self.planned if self.planned is not None else build_workflow(self.config, self.early_stopping)

    def run_arm(self, place: ArmPlace) -> tuple[dict[str, Any], Any, Any]:
        """One arm where :func:`accel.scaleout.arms.plan_arms` put it; ``(its part of the record,
        the workflow, its fitted pipeline)``.

        A cluster accel starts is started for the arm and closed after it (the next arm gets the
        node to itself); a running cluster stays attached. The arm in this process runs
        :meth:`single_process` with :func:`accel.runner.run_arm_safely`.
        """
        config, listener = self.config, self.listener
        if place.skip is not None:
            return skipped(place.skip).as_dict(), None, None
        if place.placement == "process":
            single = self.single_process()
            result = run_arm_safely(place.arm_backend(), single, listener, config.memory_settings(), collect=False)
            arm = {**result.as_dict(), "placement": "process", "placement_note": place.note, "cluster": None}
            return arm, single, result.pipeline
        t0 = time.perf_counter()
        with ExitStack() as stack:
            session = place.open_session(stack)
            startup = time.perf_counter() - t0 if place.session is None else 0.0
            settings, params = WorkflowSettings.of(config), XGBoostSettings(**config.model_params())  # a Dask trainer's model
            arm, dask_workflow, pipeline = run_on_session(
                session, self.workflow, settings, params, config.seed, listener, place.arm_backend(), self.early_stopping
            )
            arm["cluster"] = describe_cluster(session.info, arm, startup)
        return arm, dask_workflow, pipeline


def describe_cluster(info: ClusterInfo, arm: dict[str, Any], startup_seconds: float) -> dict[str, Any]:
    """The cluster an arm ran on, each worker with its memory peaks."""
    cluster = asdict(info)
    cluster["startup_seconds"] = round(startup_seconds, 3)
    cluster["memory_note"] = (
        "per worker: peak_rss_mb is the kernel's peak of the worker process (VmHWM, since that worker started); "
        "dask_reported_* are maxima of the scheduler's heartbeat metrics sampled every 0.25 s"
    )
    for worker in cluster["worker_details"]:
        worker["memory"] = arm["workers_memory"].get(worker["address"])
    # Workers that were not there when the run started: a Nanny restarts a worker that passed 95%
    # of its memory limit (or died), and Dask recomputes what it held; the result stands, but the
    # run was not what its start described.
    started = {w["address"] for w in cluster["worker_details"]}
    cluster["workers_joined_during_run"] = sorted(set(arm["workers_memory"]) - started)
    return cluster


def cluster_run(
    config: RunConfig,
    listener: Listener | None = None,
    on_plan: Callable[[Any], None] | None = None,
    process_start: float | None = None,
) -> tuple[dict[str, Any], Path]:
    """Run ``config`` (which has a ``cluster``) on Dask, both arms, and write its record; ``(record, path)``.

    Everything refusable is refused before a process starts: the output folder, the workflow,
    a user's table and target (planned here, on the host, as for a run in this process; then
    ``on_plan(workflow)`` is called with the single-process workflow that holds the plan), the
    cluster request and the device (:func:`accel.scaleout.arms.plan_arms`). The accelerated
    arm runs first, then the baseline; each arm's record part says where it ran
    (``placement``, ``cluster``). The record's ``wall`` says where the process's time went
    (``process_start``: as for :func:`accel.runner.paired_run`), each arm's cluster start-up apart.
    """
    cluster = config.cluster
    assert cluster is not None, "accel.api.run comes here with a cluster only"
    check_dask_config(config)
    run = PairedRun(config, ensure_writable(config.out), process_start)
    job = DaskJob(config, listener, on_plan)  # one decision of the rounds for both arms
    run.planned(job.planned)
    described = None
    with ExitStack() as stack:
        for kind, place in plan_arms(cluster, config.device, stack).items():  # the GPU arm, then the CPU arm
            t0 = time.perf_counter()
            part, ran, pipeline = job.run_arm(place)
            run.add_arm(kind, t0, part, pipeline)
            described = described or ran
    assert described is not None, "the CPU arm is never skipped (plan_arms), so it ran"
    # The model as the workers trained it: XGBoost (the model with a Dask trainer: check_dask_config) with its Dask library.
    es, params = job.early_stopping, XGBoostSettings(**config.model_params())
    model = XGBoostModel(params, described.task, name=config.model, early_stopping=es).describe()
    return run_record(run, described, es, model={**model, "library": MODELS[config.model].caps.dask}, mode="dask")
