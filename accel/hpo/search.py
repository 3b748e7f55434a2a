"""Hyperparameter search with Optuna: a baseline first, cheap trials on a subset, the best few on all rows.

The way practitioners trade accuracy against time:

1. **Default baseline**: the model with its default parameters, trained on all training rows
   and scored on the hold-out (exactly what ``accel run`` trains).
2. **Subset-first trials**: an Optuna study (TPE sampler with a fixed seed) over the model's
   search space (:data:`SEARCH_SPACES`, overridable in the workflow file). Each trial trains on
   a stratified subset of the training rows (a plain seeded subset for regression) with a
   share of the boosting rounds / trees, and is scored on a validation part of the training
   rows, never on the hold-out. XGBoost reports its validation metric every round, so Optuna's
   pruner stops unpromising trials early.
3. **Top-k on all rows**: the best ``top`` trials are trained again on every fitting row with
   all their rounds (early stopping on the validation part) and compared.
4. **Retrained best**: the winner is retrained on all training rows and scored on the hold-out;
   the CPU baseline arm trains the same final model for its time.

Features are computed once per study on the arm (and once per worker process in parallel
mode). Every trial's seconds and peak memory are trial user attributes in the study storage
(``sqlite:///<out>/hpo.db`` by default, or any database URL Optuna accepts), so the trade-off
can be read back later (``accel experiments``).

Interrupted studies: Optuna leaves the trial that was running when the process died in state
RUNNING. ``resume`` marks every such trial FAILED with the reason (user attributes ``error``
and ``interrupted``) before it continues; they do not count towards ``trials``. Resuming
assumes no other process is still working on the study.
"""

from __future__ import annotations

import dataclasses
import math
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from accel import _compat
from accel.backend import Backend
from accel.errors import AccelError, first_line
from accel.hpo import study as studies
from accel.hpo.space import resolve_space, suggest
from accel.memory import MemoryMonitor, to_mb
from accel.metrics import task_metrics
from accel.models import adapter, build_model, is_classification
from accel.output import say
from accel.record import MODEL_STAGES, ensure_writable, record_head, record_stem, strict, write_record
from accel.registry import MODELS, Dist, refusal
from accel.timing import StageTimer, speedup

if TYPE_CHECKING:
    from distributed import Client
    from optuna.trial import FrozenTrial

    from accel.config import ClusterConfig, RunConfig
    from accel.result import Listener

# --------------------------------------------------------------------------- data for the search


@dataclass
class SearchData:
    """Model-ready rows of one arm, split for the search.

    ``parts`` holds ``(X, y)`` of each part: ``fit`` + ``valid`` are the ``train`` rows; ``subset``
    is drawn from ``fit``; the hold-out (``test``) is touched only by the default baseline and the
    retrained best. The ``X`` are frames after :func:`split_for_search` and stored matrices
    (:class:`~accel.precision.StoredMatrix`, what the models take) once :func:`build_context` has stored them.
    """

    parts: dict[str, tuple[Any, Any]]
    rows: dict[str, int]
    notes: list[str] = field(default_factory=list)


def _take(part: tuple[Any, Any], positions: np.ndarray) -> tuple[Any, Any]:
    """The rows at ``positions`` of ``part``'s ``(X, y)``."""
    X, y = part
    return X.iloc[positions].reset_index(drop=True), y.iloc[positions].reset_index(drop=True)


def _draw(n: int, share: float, y: np.ndarray | None, seed: int, what: str, notes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (kept, drawn) positions: ``share`` of ``n`` rows drawn, stratified on ``y`` when given."""
    from sklearn.model_selection import train_test_split

    positions = np.arange(n)
    n_drawn = int(round(n * share))
    if n_drawn < 1 or n - n_drawn < 1:
        raise AccelError(f"{n} training rows are too few for a {what} of {share:g} (use more --rows or another share)")
    try:
        kept, drawn = train_test_split(positions, test_size=n_drawn, random_state=seed, stratify=y)
    except ValueError:
        if y is None:
            raise
        notes.append(f"{what}: a class has too few rows to stratify; drew a plain seeded sample")
        kept, drawn = train_test_split(positions, test_size=n_drawn, random_state=seed)
    return np.sort(kept), np.sort(drawn)


def split_for_search(prepared: Any, task: str, validation: float, subset: float, seed: int) -> SearchData:
    """Split the training rows into fitting and validation parts, and draw the subset trials use."""
    y_host = _compat.to_numpy(prepared.y_train)
    stratify = is_classification(task)
    notes: list[str] = []
    fit_pos, valid_pos = _draw(len(y_host), validation, y_host if stratify else None, seed, "validation part", notes)
    train = prepared.X_train, prepared.y_train
    parts = {
        "train": train,
        "test": (prepared.X_test, prepared.y_test),
        "fit": _take(train, fit_pos),
        "valid": _take(train, valid_pos),
    }
    parts["subset"] = parts["fit"]  # all the fitting rows (the same frames: stored once)
    if subset < 1:
        _, sub_pos = _draw(len(fit_pos), subset, y_host[fit_pos] if stratify else None, seed + 1, "subset", notes)
        parts["subset"] = _take(parts["fit"], sub_pos)
    rows = dict(
        train=len(y_host), fit=len(fit_pos), validation=len(valid_pos), subset=len(parts["subset"][1]), test=len(prepared.y_test)
    )
    return SearchData(parts=parts, rows=rows, notes=notes)


# --------------------------------------------------------------------------- training one candidate


@dataclass
class Measured:
    """One model trained and scored: its metrics, wall seconds (in all and per stage) and memory peaks."""

    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = math.nan
    #: ``to_device``, ``train`` and ``predict``, timed by the runs' own :class:`~accel.timing.StageTimer`.
    stages: dict[str, float] = field(default_factory=dict)
    peak_host_mb: float | None = None
    peak_device_mb: float | None = None
    rounds: int | None = None
    device_used: str | None = None
    rows: int = 0
    arm: str | None = None
    warnings: list[str] = field(default_factory=list)

    def entry(self, metric: str, head: dict[str, Any], **tail: Any) -> dict[str, Any]:
        """The record's entry of this model: ``head``, what was measured, the value of ``metric`` as ``metric``, then ``tail``."""
        return {**head, **dataclasses.asdict(self), "metric": self.metrics[metric], **tail}


@contextmanager
def measured(backend: Backend, into: Measured, listener: Listener | None = None) -> Iterator[StageTimer]:
    """The :class:`~accel.timing.StageTimer` (device synchronised) and memory monitor of one
    candidate's training; fills ``into`` even when the body raises (a pruned trial): the seconds
    up to then, the stages done, the peaks. A ``listener`` is told of each stage and memory sample."""
    monitor = MemoryMonitor(backend, on_sample=listener.memory if listener is not None else None)
    timer = StageTimer(backend, monitor, listener)
    try:
        with monitor:
            backend.synchronize()
            start = time.perf_counter()
            try:
                yield timer
                backend.synchronize()
            finally:
                into.seconds = round(time.perf_counter() - start, 6)
                into.stages = {s: round(v, 6) for s, v in timer.seconds.items()}
    finally:
        into.peak_host_mb = to_mb(monitor.peak_host)
        into.peak_device_mb = to_mb(monitor.peak_device)


@dataclass
class SearchContext:
    """What every trial of one study on one arm needs."""

    backend: Backend
    config: RunConfig
    task: str
    n_classes: int
    base_params: dict[str, Any]
    space: dict[str, Dist]
    data: SearchData
    metric: str
    batch_rows: int = 1 << 62
    memory: dict[str, Any] = field(default_factory=dict)
    #: The fitted features and the storage precision of the rows: with the final model, the pipeline.
    transform: Any = None
    precision: Any = None
    test_ids: Any = None


def train_and_score(
    ctx: SearchContext,
    params: dict[str, Any],
    part: str,
    callbacks: tuple = (),
    out: Measured | None = None,
    listener: Listener | None = None,
    early_stopping: Any = None,
    keep: dict[str, Any] | None = None,
) -> Measured:
    """Train the model with ``params`` on the ``part`` of the data (``subset``, ``fit`` or ``train``)
    and score it: ``subset`` and ``fit`` on the validation part, ``train`` on the hold-out.

    On the validation part (``subset`` and ``fit``: trials and top-k) XGBoost watches the evaluation rows every round for
    early stopping and pruning; with ``early_stopping`` (an
    :class:`~accel.early_stopping.EarlyStopping`: the default baseline, which is the model
    ``accel run`` trains) the rounds are found on a validation part carved from the training rows and
    trained on all of it, as ``accel run`` does; otherwise (the final model) it boosts exactly
    ``n_estimators`` rounds. Building the model input, training and
    predicting are timed as the ``to_device``, ``train`` and ``predict`` stages of ``accel run``
    (one :class:`~accel.timing.StageTimer`); ``seconds`` is their sum. Pass ``out`` to keep the
    seconds and memory of a run that raises (a pruned trial). A ``listener``
    (:class:`~accel.result.Listener`) is told of each stage, the memory, and XGBoost's rounds.
    ``keep``, when given, receives the ``model``, what it ``fitted`` and its ``prediction``.
    """
    from accel.runner import rounds_listener

    backend = ctx.backend
    (X, y), (X_eval, y_eval) = ctx.data.parts[part], ctx.data.parts["test" if part == "train" else "valid"]
    out = out if out is not None else Measured()
    out.rows, out.arm = len(y), backend.name
    model = build_model(ctx.config.model, ctx.task, params, ctx.config.seed, n_classes=ctx.n_classes)
    stops_early = MODELS[ctx.config.model].caps.stops_early
    if early_stopping is not None and stops_early:
        model.early_stopping = early_stopping
    # Library warnings (a solver that did not converge) are kept with the result, one line
    # each, instead of a screenful per trial.
    with measured(backend, out, listener) as timer, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            to_device, train, predict = MODEL_STAGES
            with timer.stage(to_device):
                model_input = model.to_device(backend, X, y, ctx.batch_rows)
            if early_stopping is not None and stops_early:
                model.search_rounds(backend, X, y, ctx.batch_rows)  # as accel run does: outside the stages
            with timer.stage(train):
                if part != "train" and stops_early:
                    stop = ctx.config.hpo.early_stopping_rounds
                    fitted = model.fit_validated(
                        backend, model_input, X_eval, y_eval, ctx.batch_rows, early_stopping_rounds=stop, callbacks=callbacks
                    )
                else:
                    fitted = model.fit(backend, model_input, on_round=rounds_listener(listener, backend.name, train))
            with timer.stage(predict):
                prediction = model.predict(backend, fitted, X_eval, ctx.batch_rows)
        finally:
            out.warnings = sorted({f"{w.category.__name__}: {(str(w.message).splitlines() or [''])[0][:160]}" for w in caught})
    out.device_used = model.device_used(backend, fitted)
    if not backend.ran_here(out.device_used):
        # XGBoost only warns when it cannot use the GPU: that is no GPU result.
        raise RuntimeError(f"the model ran on {out.device_used!r} although {backend.xgb_device!r} was asked for")
    if stops_early:
        out.rounds = model.rounds_used(fitted)
    if keep is not None:
        keep.update(model=model, fitted=fitted, prediction=prediction)
    out.metrics = task_metrics(ctx.task, _compat.to_numpy(y_eval), _compat.to_numpy(prediction))
    return out


def trial_params(ctx: SearchContext, params: dict[str, Any], subset: bool) -> dict[str, Any]:
    """The parameters a trial trains with: a subset trial gets a share of the rounds / trees (``n_estimators``,
    which counts the boosting rounds or the trees of every model that has it)."""
    out, share = {**ctx.base_params, **params}, ctx.config.hpo.trial_rounds
    if subset and share < 1 and "n_estimators" in out:
        out["n_estimators"] = max(10, int(math.ceil(out["n_estimators"] * share)))
    return out


@dataclass(eq=False)  # hashed by identity, as a plain callable
class Objective:
    """The trial: suggest, train on the subset, score on the validation part; the same on either arm."""

    ctx: SearchContext

    def __call__(self, trial: Any) -> float:
        import optuna

        ctx = self.ctx
        params = trial_params(ctx, suggest(trial, ctx.space), subset=True)
        spec = MODELS[ctx.config.model]  # a model that reports its validation metric each round is pruned
        callbacks = adapter(spec).pruning_callbacks(trial, ctx.task) if spec.caps.prunes else ()
        result = Measured(rows=ctx.data.rows["subset"])
        trial.set_user_attr("arm", ctx.backend.name)
        trial.set_user_attr("process", f"{socket.gethostname()}:{os.getpid()}")
        try:
            train_and_score(ctx, params, "subset", callbacks, out=result)
        except Exception as exc:
            if not isinstance(exc, optuna.TrialPruned):  # marked failed with the reason; the study goes on (optimize's ``catch``)
                trial.set_user_attr("error", first_line(exc, 300))
            raise
        finally:
            for key in ("seconds", "stages", "peak_host_mb", "peak_device_mb", "rows"):
                trial.set_user_attr(key, strict(getattr(result, key))[0])  # study attributes are strict JSON
        for key in ("rounds", "metrics", "warnings", "device_used"):
            if key != "warnings" or result.warnings:  # warnings only when there were any
                trial.set_user_attr(key, getattr(result, key))
        return result.metrics[ctx.metric]


def build_context(
    config: RunConfig, backend: Backend, workflow: Any | None = None, memory: Any = None
) -> tuple[SearchContext, float]:
    """Load and featurise once on ``backend``, split for the search; (context, seconds).

    The arm's memory is set up as ``accel run`` sets it up (:func:`accel.runner.prepare_arm`:
    the RMM pool on the GPU arm, the batch size from the memory budget), and the feature
    matrices are stored in the configured precision. A search holds its rows in memory: a table
    that would have to be streamed is refused. ``memory``: the arm's memory settings when they
    are not the config's (:func:`search_memory`).
    """
    from accel.precision import plan_for_frames, store_frame
    from accel.runner import build_workflow, prepare_arm

    workflow = workflow or build_workflow(config)
    rmm, batches = prepare_arm(backend, workflow, memory or config.memory_settings())
    if batches.mode == "streaming":
        raise AccelError(
            f"accel hpo holds the training rows in memory, and {batches.rows_total:,} rows need batches of "
            f"{batches.rows_per_batch:,} within the memory budget: raise --memory-budget or use --rows"
        )
    start = time.perf_counter()
    prepared = workflow.features(backend, workflow.load(backend))  # the loaded table freed once featurised
    hpo = config.hpo
    data = split_for_search(prepared, workflow.task, hpo.validation, hpo.subset, config.seed)
    precision = plan_for_frames(config.precision, [prepared.X_train, prepared.X_test], prepared.categorical)
    # Every part's features held as the model input storage (float32, or guarded float16), once each (the
    # subset may be all the fitting rows), each frame let go as soon as it is stored.
    stored: dict[int, Any] = {}
    for name, (frame, y) in data.parts.items():
        if id(frame) not in stored:
            stored[id(frame)] = store_frame(backend, frame, prepared.categorical, precision, batches.rows_per_batch)
        data.parts[name] = (stored[id(frame)], y)
    backend.synchronize()
    seconds = time.perf_counter() - start
    metric, _ = studies.direction_of(workflow.task)
    n_classes = (len(workflow.plan.classes or []) if workflow.plan is not None else 0) or 2
    ctx = SearchContext(
        backend=backend,
        config=config,
        task=workflow.task,
        n_classes=n_classes,
        base_params=config.model_params(),
        space=resolve_space(config.model, hpo.search_space.get(config.model)),
        data=data,
        metric=metric,
        batch_rows=batches.rows_per_batch,
        memory={"rmm": rmm, "batches": batches.describe(), "precision": precision.describe()},
        transform=prepared.transform,
        precision=precision,
        test_ids=prepared.test_ids,
    )
    return ctx, seconds


# --------------------------------------------------------------------------- running the trials


def describe_trial(trial: Any, metric: str) -> str:
    """One progress line for a finished trial."""
    from optuna.trial import TrialState

    attrs = trial.user_attrs
    cost = ""
    if attrs.get("seconds") is not None:
        mb = attrs.get("peak_device_mb") or attrs.get("peak_host_mb")
        cost = f" · {attrs['seconds']:.1f} s · peak {mb:.0f} MB" if mb is not None else f" · {attrs['seconds']:.1f} s"
    if attrs.get("warnings"):
        cost += " · warned: " + ", ".join(sorted({w.split(":", 1)[0] for w in attrs["warnings"]}))
    if trial.state == TrialState.COMPLETE:
        rounds = f" · {attrs['rounds']} rounds" if attrs.get("rounds") else ""
        return f"trial {trial.number}: {metric} {trial.value:.4f}{rounds}{cost}"
    if trial.state == TrialState.PRUNED:
        step = trial.last_step
        return f"trial {trial.number}: pruned after {step + 1 if step is not None else '?'} rounds{cost}"
    return f"trial {trial.number}: failed: {attrs.get('error', 'no reason recorded')}{cost}"


def run_trials(
    study: Any, ctx: SearchContext, n_trials: int, timeout: float | None, log: Callable[[str], None], total: int | None = None
) -> None:
    """Run ``n_trials`` more trials of ``study`` in this process; stop early once the study counts
    ``total`` (other processes that joined it run its trials too)."""

    def progress(study: Any, trial: Any) -> None:
        log(describe_trial(trial, ctx.metric))
        studies.claim(study)
        if total is not None and studies.counted_trials(study) >= total:
            study.stop()  # the study's --trials are done, some by the processes beside this one

    study.optimize(
        Objective(ctx), n_trials=n_trials, timeout=timeout, catch=(Exception,), callbacks=[progress], gc_after_trial=True
    )


#: Per worker process: the search context of each study it has worked on (features once).
_WORKER_CONTEXTS: dict[tuple[str, str], SearchContext] = {}


def _worker_trials(spec: dict[str, Any]) -> None:
    """A Dask task: run this worker's share of the trials, one at a time, on its own arm.

    Each worker opens the shared storage itself, computes the features once (cached in the
    process for the next task of the same study) and uses every thread Dask gave it.
    """
    from distributed import get_worker

    from accel.backend import get_backend
    from accel.config import RunConfig

    studies.quiet_optuna()
    config = RunConfig.model_validate(spec["config"])
    key = (spec["study"], spec["arm"])
    ctx = _WORKER_CONTEXTS.get(key)
    if ctx is None:
        threads = max(1, int(get_worker().state.nthreads))
        backend = dataclasses.replace(get_backend(spec["arm"]), n_threads=threads)
        ctx, _ = build_context(config, backend)
        _WORKER_CONTEXTS[key] = ctx
    storage = studies.open_storage(spec["storage"])
    # Seeds differ per worker, so that the workers' first (random) trials differ.
    study = studies.load_study(spec["study"], storage, (config.seed + 1000 * spec["index"]) % 2**32, config.hpo.pruner)
    timeout = None if spec["deadline"] is None else max(0.0, spec["deadline"] - time.time())  # 0: past it, no trial starts
    study.optimize(Objective(ctx), n_trials=spec["n_trials"], timeout=timeout, catch=(Exception,), gc_after_trial=True)


def run_trials_on_client(
    client: Any, opened: studies.OpenedStudy, arm: str, n_trials: int, timeout: float | None, log: Callable[[str], None]
) -> int:
    """Run ``n_trials`` more trials of the ``opened`` study on the Dask workers of ``client``, one trial per worker at a time.

    Each worker gets one task holding its share of the trials (shares differ by at most one),
    so no worker ever runs two trials at once; all share the study through its storage URL.
    Progress is read back from the storage: each trial said as it finishes, each worker whose
    trials stopped with an error. Returns the number of workers used.
    """
    study = opened.study
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise AccelError("the Dask cluster has no workers")
    deadline = None if timeout is None else time.time() + timeout
    shares = [n_trials // len(workers) + (i < n_trials % len(workers)) for i in range(len(workers))]
    spec = {"config": studies.public_config(opened.config), "study": study.study_name, "storage": opened.storage_url, "arm": arm}
    futures = []
    for i, (worker, share) in enumerate(zip(workers, shares)):
        if share:  # fewer trials than workers: the last workers get none
            key, task = f"accel-hpo-{study.study_name}-{i}", {**spec, "n_trials": share, "deadline": deadline, "index": i}
            futures.append(client.submit(_worker_trials, task, workers=[worker], allow_other_workers=False, pure=False, key=key))
    seen = {t.number for t in study.get_trials(deepcopy=False) if t.state.is_finished()}
    while futures:
        time.sleep(0.5)
        for fut in [f for f in futures if f.done() and f.status == "error"]:
            log(f"a worker's trials stopped: {first_line(fut.exception(), 300)}")
        futures = [f for f in futures if not f.done()]
        for t in study.get_trials(deepcopy=False):
            if t.state.is_finished() and t.number not in seen:
                seen.add(t.number)
                log(describe_trial(t, str(study.user_attrs.get("metric", "value"))))
                studies.claim(study)
    return len(workers)


def search_memory(config: RunConfig, cluster: str | None) -> tuple[Any, str | None]:
    """The memory settings of the searching process, and why they differ from ``accel run``'s.

    Beside a local-cuda cluster this process shares its GPU with a worker, whose RMM pool
    Dask-CUDA sized from the GPU's free memory when the cluster started (``--rmm-pool auto``,
    :func:`accel.scaleout.cluster.plan_cluster`): an automatic pool here would take half of
    what that left. So this process allocates as it needs, without a pool of its own.
    """
    settings = config.memory_settings()
    if cluster == "local-cuda" and settings.rmm_pool == "auto":
        why = "no pool in the searching process: its GPU is shared with a local-cuda worker, which holds the pool"
        return dataclasses.replace(settings, rmm_pool="off"), why
    return settings, None


# --------------------------------------------------------------------------- the whole search


@dataclass
class SearchRequest:
    """How to run one search (settings that are not part of the study)."""

    resume: bool = False
    given: set[str] = field(default_factory=set)
    cluster: str | None = None
    scheduler: str | None = None
    workers: int | None = None
    #: ``connect(request, model)``: a context manager yielding a ``distributed.Client`` on the
    #: cluster ``--cluster`` / ``--scheduler`` asks for (:func:`accel.scaleout.cluster.cluster_client`,
    #: given by the caller: the search imports no cluster code).
    connect: Callable[[ClusterConfig, str], AbstractContextManager[Client]] | None = None

    def client(self, model: str) -> AbstractContextManager[Client | None]:
        """The Dask client the trials run on, or None (no cluster asked for)."""
        if self.cluster is None and self.scheduler is None:
            return nullcontext()
        if self.connect is None:
            raise AccelError("a search on a Dask cluster needs a connect function (accel.scaleout.cluster.cluster_client)")
        from accel.config import ClusterConfig

        kind = "scheduler" if self.scheduler else self.cluster
        return self.connect(ClusterConfig(kind=kind, address=self.scheduler, workers=self.workers), model)


def search_config(
    file_values: dict[str, Any], overrides: dict[str, Any], hpo_settings: dict[str, Any], source: str, named: bool = True
) -> tuple[Any, set[str]]:
    """The validated config of a search and the settings given explicitly (``accel hpo``, :func:`accel.hpo`).

    ``hpo_settings`` (``trials``, ``subset``, ...; None where not given) override single keys of
    the file's ``hpo:`` section, not the whole section. The settings given are named ``seed``,
    ``hpo.subset``, ...: the keys of the ``hpo`` section, never the section itself (it would count
    every ``hpo.*`` setting as given once any one is: ``--resume --trials 5`` would then clash
    with a study's ``--subset``). ``named``: a workflow was named (a resumed study without one
    takes the study's).
    """
    from accel.config import build_config

    hpo_settings = {k: v for k, v in hpo_settings.items() if v is not None}
    section = file_values.get("hpo", {})
    if hpo_settings and isinstance(section, dict):
        section = file_values["hpo"] = {**section, **hpo_settings}
    keys = {f"hpo.{k}" for k in section} if isinstance(section, dict) else {"hpo"}
    given = keys | {k for k in file_values if k != "hpo"} | {k for k, v in overrides.items() if v is not None}
    if not named:
        given.discard("workflow")
    return build_config(file_values, overrides, source), given


def _best_trials(study: Any, k: int) -> list[Any]:
    """The ``k`` best completed trials, best first (among equal values the earlier trial), each set of parameters once."""
    from optuna.trial import TrialState

    sign = -1 if study.direction.name == "MAXIMIZE" else 1
    done = sorted(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)), key=lambda t: (sign * t.value, t.number))
    picked: dict[str, Any] = {}
    for t in done:  # the same parameters twice would waste a full-data run: the first (best) kept
        picked.setdefault(repr(sorted(t.params.items())), t)
    return list(picked.values())[:k]


def run_search(
    config: RunConfig,
    request: SearchRequest,
    log: Callable[[str], None] = say,
    listener: Listener | None = None,
    trial_log: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], Path]:
    """The whole search for ``config``: baseline, trials, top-k, retrained best, CPU arm; the record.

    ``log`` gets one line per step, ``trial_log`` (by default ``log``) one per trial; ``listener`` (:class:`~accel.result.Listener`,
    the command line's progress display) is shown the default baseline while it trains.
    Everything that can be refused (output folder, device, Dask cluster, storage, study name,
    ``--resume``, the user's table) is checked before the study is created or changed and
    before the first model trains.
    """
    from accel.backend import resolve_arms

    if "hpo.early_stopping_rounds" in request.given and not MODELS[config.model].caps.stops_early:
        raise refusal(config.model, "stops_early", "leave out hpo.early_stopping_rounds (its trials train every round)")
    out = ensure_writable(config.out)
    arms = resolve_arms(config.device)  # --device gpu without a GPU: DeviceUnavailable (exit 2)
    backend, gpu_note = arms.gpu or arms.cpu, arms.gpu_skip
    with request.client(config.model) as client:  # the cluster first: the study is opened once it is there
        with studies.searched(studies.open_study(config, request.given, request.resume)) as opened:
            run = _start(opened, backend, gpu_note, request, log)
            _baseline(run, listener)
            _trials(run, client, trial_log or log)
            best = _best_trials(run.opened.study, run.ctx.config.hpo.top)
            return _finish(run, out, _final(run, _top_k(run, best)) if best else _no_trial_arms(run))


@dataclass
class _Search:
    """What the phases of one search share: the study, the arm's context and the record they fill."""

    opened: studies.OpenedStudy
    gpu_note: str | None
    ctx: SearchContext
    direction: str
    log: Callable[[str], None]
    started: datetime
    phases: dict[str, float]
    record: dict[str, Any] = field(default_factory=dict)
    kept: dict[str, Any] = field(default_factory=dict)  # arm -> its tuned pipeline

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Time the block as ``phase`` in the record's ``phases_seconds`` (when it finishes)."""
        t0 = time.perf_counter()
        yield
        self.phases[phase] = time.perf_counter() - t0


def _start(
    opened: studies.OpenedStudy, backend: Backend, gpu_note: str | None, request: SearchRequest, log: Callable[[str], None]
) -> _Search:
    """Check the study's direction, say what runs where, and build the arm's features."""
    metric, direction = studies.direction_of(opened.workflow.task)
    study = opened.study
    if (direction == "maximize") != (study.direction.name == "MAXIMIZE"):
        raise AccelError(f"study {study.study_name!r} optimises the other way from this task's {metric}; start a new --study")
    started = datetime.now(timezone.utc)
    joined = f" (joined: also run by {', '.join(opened.joined)})" if opened.joined else ""
    log(f"study {study.study_name!r} in {studies.redact(opened.storage_url)}" + (" (resumed)" if opened.resumed else "") + joined)
    if opened.interrupted:
        log(f"  trials {', '.join(map(str, opened.interrupted))} were left running by an interrupted process: marked failed")
    # The reason the GPU arm is skipped is said once, with the results (and in the record).
    log(f"search on the {backend.name.upper()} arm" + (" (GPU arm skipped)" if gpu_note else ""))

    phases: dict[str, float] = {}
    memory, why = search_memory(opened.config, request.cluster)
    ctx, phases["features"] = build_context(opened.config, backend, opened.workflow, memory)
    if why is not None and ctx.memory["rmm"].get("reason") == "--rmm-pool off":  # not the CPU arm's record
        ctx.memory["rmm"]["reason"] = why
    rows = ctx.data.rows
    log(
        f"features: {phases['features']:.1f} s · training rows {rows['train']:,} (fit {rows['fit']:,}, "
        f"validation {rows['validation']:,}, trial subset {rows['subset']:,}) · hold-out {rows['test']:,}"
    )
    for note in ctx.data.notes:
        log(f"  note: {note}")
    run = _Search(opened, gpu_note, ctx, direction, log, started, phases)
    run.record = _record(run, request)
    return run


def _baseline(run: _Search, listener: Listener | None) -> None:
    """The record's default baseline: the model accel run trains, on all training rows, on the hold-out (once a study)."""
    from accel.runner import early_stopping_for

    baseline: dict[str, Any] | None = run.opened.study.user_attrs.get("baseline")
    if baseline is None:
        rows = run.ctx.data.rows["train"]
        run.log(f"default baseline: {run.ctx.config.model} on all {rows:,} training rows, scored on the hold-out")
        with run.timed("baseline"):
            if listener is not None:
                listener.section("default baseline")
            early = early_stopping_for(run.ctx.config)  # as accel run trains it
            try:
                base = train_and_score(run.ctx, run.ctx.base_params, "train", listener=listener, early_stopping=early)
            finally:
                if listener is not None:
                    listener.section(None)
        baseline = base.entry(run.ctx.metric, {"params": dict(run.ctx.base_params)}, evaluated_on="hold-out")
        run.opened.study.set_user_attr("baseline", strict(baseline)[0])
    run.log(f"default baseline: {run.ctx.metric} {baseline['metric']:.4f} on the hold-out · {baseline['seconds']:.1f} s")
    run.record["baseline"] = baseline


def _trials(run: _Search, client: Client | None, each_trial: Callable[[str], None]) -> None:
    """Subset-first trials, here or on the Dask workers; the record's trial counts and how many workers ran them."""
    study, hpo = run.opened.study, run.ctx.config.hpo
    done_before = studies.counted_trials(study)
    remaining = max(0, hpo.trials - done_before)
    run.log(
        f"trials: {remaining} to run ({done_before} done of {hpo.trials}) on {run.ctx.data.rows['subset']:,} rows "
        f"({hpo.subset:g} of the fitting rows), rounds × {hpo.trial_rounds:g}"
        + (f", time-out {hpo.timeout:g} s" if hpo.timeout else "")
    )
    with run.timed("trials"):
        if client is None:
            run_trials(study, run.ctx, remaining, hpo.timeout, each_trial, total=hpo.trials)
        else:
            workers = run_trials_on_client(client, run.opened, run.ctx.backend.name, remaining, hpo.timeout, each_trial)
            run.record["search"]["parallel"]["workers"] = workers
    counts = run.record["trials"] = studies.trial_counts(study)
    run.log(
        f"trials: {counts['complete']} complete, {counts['pruned']} pruned, {counts['failed']} failed"
        + (f", {counts['interrupted']} interrupted" if counts["interrupted"] else "")
        + f" · {run.phases['trials']:.1f} s"
    )


def _record(run: _Search, request: SearchRequest) -> dict[str, Any]:
    """The hpo record's head: the study, the configuration and the search (one worker unless a cluster ran the trials)."""
    config, opened, ctx = run.ctx.config, run.opened, run.ctx
    return {
        **record_head("hpo"),
        "workflow": run.opened.workflow.name,
        "task": run.opened.workflow.task,
        "model": config.model,
        "started_at": run.started.isoformat(),
        "study": {
            "name": opened.study.study_name,
            "storage": studies.redact(opened.storage_url),
            "metric": run.ctx.metric,
            "direction": run.direction,
            "resumed": opened.resumed,
            "joined": opened.joined,
            "interrupted_trials": opened.interrupted,
            "sampler": f"TPESampler(seed={(config.seed + 1000 * len(opened.joined)) % 2**32})",
            "pruner": config.hpo.pruner,
        },  # fmt: skip
        "config": studies.public_config(config),
        "search": {
            "arm": run.ctx.backend.name,
            "gpu_arm": "used" if run.ctx.backend.is_gpu else f"skipped: {run.gpu_note}",
            "rows": ctx.data.rows,
            **config.hpo.model_dump(include={"subset", "trial_rounds", "validation"}),
            "space": {k: v.describe() for k, v in ctx.space.items()},
            "parallel": {"cluster": request.cluster, "scheduler": request.scheduler, "workers": 1},
            "precision": config.precision,
            "memory": ctx.memory,
            "notes": ctx.data.notes,
        },  # fmt: skip
    }


def _finish(run: _Search, out: Path, arms: dict[str, Any]) -> tuple[dict[str, Any], Path]:
    """Complete the record with the arms and their speedups, keep its summary in the study, write it."""
    from accel.environment import collect_environment
    from accel.pipeline import beside_record

    record = run.record
    record["arms"] = arms
    gpu, cpu = arms["gpu"], arms["cpu"]
    # The final model's stages, as ``accel run``'s (CPU seconds / GPU seconds; NaN unless both ran: a
    # skipped or failed arm has NaN seconds and no stages).
    record["speedup"] = {
        "final_model": speedup(cpu["seconds"], gpu["seconds"]),
        **{s: speedup(cpu["stages"].get(s), gpu["stages"].get(s)) for s in MODEL_STAGES},
    }
    record["phases_seconds"] = {k: round(v, 3) for k, v in run.phases.items()}
    record["finished_at"] = datetime.now(timezone.utc).isoformat()
    record["environment"] = collect_environment()
    keep = ("baseline", "best_trial", "top_k", "final", "arms", "speedup", "trials", "improvement", "phases_seconds")
    summary = {k: record[k] for k in keep if k in record}
    summary["batches"] = {k: run.ctx.memory["batches"][k] for k in ("rows_per_batch", "batches")}
    run.opened.study.set_user_attr("summary", strict(summary)[0])
    for arm, pipeline in run.kept.items():
        arms[arm]["importances"] = pipeline.importances
    companion = beside_record(record, run.kept)
    return record, write_record(out, record, record_stem(f"hpo-{run.opened.workflow.name}", run.started), companion=companion)


def _no_trial_arms(run: _Search) -> dict[str, Any]:
    """No trial completed: the record's final says why, and both arms are skipped."""
    trials = run.opened.study.get_trials(deepcopy=False)
    reasons = sorted({t.user_attrs["error"] for t in trials if t.user_attrs.get("error")})
    reason = "no trial completed" + (f" ({'; '.join(reasons)[:300]})" if reasons else "")
    run.record["final"] = {"status": "failed", "reason": reason}
    run.log(f"no tuned model: {reason}")
    return {"gpu": _no_arm("skipped", run.gpu_note or "no trial completed"), "cpu": _no_arm("skipped", "no trial completed")}


def _top_k(run: _Search, best: list[FrozenTrial]) -> dict[str, Any]:
    """The best subset trial in the record; the top-k again on every fitting row, with all their rounds: the winner among them."""
    ctx, metric, first = run.ctx, run.ctx.metric, best[0]
    run.record["best_trial"] = {
        "number": first.number,
        "params": trial_params(ctx, first.params, subset=True),
        "metric": first.value,
        "metrics": first.user_attrs.get("metrics", {}),
        **{k: first.user_attrs.get(k) for k in ("seconds", "peak_host_mb", "peak_device_mb", "rounds", "rows")},
        "evaluated_on": "validation (subset trial)",
    }
    top = []
    with run.timed("top_k"):
        for t in best:
            params = trial_params(ctx, t.params, subset=False)
            m = train_and_score(ctx, params, "fit")
            top.append(m.entry(metric, {"trial": t.number, "params": params}, evaluated_on="validation (all fitting rows)"))
            rounds = f" · {m.rounds} rounds" if m.rounds else ""
            score = f"{metric} {m.metrics[metric]:.4f} on all fitting rows{rounds} · {m.seconds:.1f} s"
            run.log(f"top-{len(best)}: trial {t.number}: {score}")
    run.record["top_k"] = top
    # The first of the best: a later candidate wins only when strictly better.
    return (max if run.direction == "maximize" else min)(top, key=lambda c: c["metric"])


def _final(run: _Search, winner: dict[str, Any]) -> dict[str, Any]:
    """The winner retrained on all training rows, scored on the hold-out, against the baseline; both arms of
    it: the searched arm's is the retrained best, and the CPU baseline arm (searched on the GPU) trains the
    same final model on its own features for its time."""
    from accel.backend import cpu_backend

    params = dict(winner["params"])
    if winner.get("rounds"):
        params["n_estimators"] = winner["rounds"]  # the rounds early stopping found
    with run.timed("final"):
        fin = _retrained(run, run.ctx, params)
    final = run.record["final"] = fin.entry(run.ctx.metric, {"trial": winner["trial"], "params": params}, evaluated_on="hold-out")
    baseline = run.record["baseline"]
    gain = final["metric"] - baseline["metric"] if run.direction == "maximize" else baseline["metric"] - final["metric"]
    run.record["improvement"] = {"metric": run.ctx.metric, "tuned_minus_default": gain, "better": gain > 0}
    run.log(
        f"retrained best (trial {winner['trial']}): {run.ctx.metric} {final['metric']:.4f} on the hold-out · {fin.seconds:.1f} s"
    )
    kept = ("metrics", "metric", "seconds", "stages", "peak_host_mb", "peak_device_mb", "device_used")
    searched = {"status": "ok", "reason": None, **{k: final[k] for k in kept}}
    if not run.ctx.backend.is_gpu:
        note = "the search ran on this arm: the retrained best is its run"
        return {"gpu": _no_arm("skipped", run.gpu_note), "cpu": {**searched, "note": note}}
    with run.timed("cpu_arm"):
        try:
            cpu_ctx, _ = build_context(run.ctx.config, cpu_backend(), run.opened.workflow)
            cpu = _retrained(run, cpu_ctx, params).entry(run.ctx.metric, {"status": "ok", "reason": None})
            run.log(f"CPU baseline arm, same final model: {run.ctx.metric} {cpu['metric']:.4f} · {cpu['seconds']:.1f} s")
        except Exception as exc:  # noqa: BLE001 - the GPU result stands; the CPU arm says why it has none
            cpu = _no_arm("failed", first_line(exc, 300))
    return {"gpu": searched, "cpu": cpu}


def _retrained(run: _Search, ctx: SearchContext, params: dict[str, Any]) -> Measured:
    """``params`` trained on all training rows of ``ctx``'s arm and scored on the hold-out; kept in ``run`` as the
    arm's fitted pipeline (:mod:`accel.pipeline`), its importances timed as ``explain`` (SHAP on the first
    hold-out rows), its hold-out predictions kept."""
    from accel.pipeline import from_run

    fitted: dict[str, Any] = {}
    fin = train_and_score(ctx, params, "train", keep=fitted)
    X_test, explain = ctx.data.parts["test"][0], Measured()
    with measured(ctx.backend, explain) as timer:
        pipeline = from_run(
            run.opened.workflow, ctx.backend, fitted["model"], fitted["fitted"], ctx.transform, ctx.precision, timer,
            lambda n: X_test.batch(0, min(n, X_test.n_rows)), (ctx.test_ids, fitted["prediction"]), tuned=True,
        )  # fmt: skip
    pipeline.info["explain_seconds"] = explain.seconds
    run.kept[ctx.backend.name] = pipeline
    return fin


def _no_arm(status: str, reason: str | None) -> dict[str, Any]:
    """The entry of an arm with no final model (``skipped`` or ``failed``)."""
    return {"status": status, "reason": reason, "seconds": math.nan, "stages": {}}
