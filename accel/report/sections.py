"""One section of the report per kind of record, each in the shape of what that kind measured.

- runs (``kind: run``, in one process or on Dask): every run's seconds per stage in one chart
  and one table, the hold-out metrics in a table per task (AUC and RMSE never share a column);
- searches (``hpo``): the default model against the tuned one, per metric;
- scripts compared (``compare``): cold and warm wall seconds per arm, parity of what they printed;
- benchmark results (``bench``, by their ``benchmark``): db-benchmark questions, models,
  crossover, and the overhead benchmarks of ``benchmarks/``;
- scaling studies (``scaling``): speedup and efficiency by number of workers;
- experiments snapshots (``experiments``): the latest of each folder, a table per metric and
  each comparable group's Pareto front.

Only the arms that ran are laid out: an arm that was skipped has no column of ``skipped``
cells; why it did not run is said once for the page (:func:`accel.report.overview.measured_on`).
Every builder is tolerant (:func:`_section`): the files whose content is not the shape it reads are set
aside and listed, and the section is built from the others.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from accel.record import (
    ARMS,
    BenchRecord,
    CompareArm,
    CompareRecord,
    CrossoverBench,
    DbBench,
    ExperimentRow,
    ExperimentsRecord,
    FlightsOverheadBench,
    GroupbyOverheadBench,
    HpoRecord,
    Improvement,
    ModelsBench,
    Record,
    RunRecord,
    ScalingRecord,
    ScalingRow,
    Scored,
    Timed,
    Warm,
    number,
)
from accel.report import charts
from accel.report.layout import Section, checksum_text, num
from accel.report.overview import ARM_NAMES, Entry, grouped, metric_name

R = TypeVar("R", bound=Record)
T = TypeVar("T")

log = logging.getLogger(__name__)

#: The metrics of a run's table, in this order, by task; any other the record holds follows.
TASK_METRICS = {"classification": ("auc", "accuracy", "log_loss"), "regression": ("rmse", "mae", "r2")}
#: Metrics a record holds that are not a model's quality.
NOT_QUALITY = ("positive_rate",)


#: The page's sections in their order, each by what it lays out: a record kind, or ``bench:`` and a benchmark.
SECTIONS: dict[str, Callable[[list[Entry]], Section]] = {}


def _section(
    key: str, anchor: str, title: str, cls: type[R]
) -> Callable[[Callable[[Section, list[tuple[Entry, R]]], None]], Any]:
    """Register the body of a section under ``key`` (:data:`SECTIONS`): it fills the section titled
    ``title`` from the entries whose record is a ``cls``.

    The section is tolerant of entries whose content is not the shape it reads: the body runs on
    all the entries of its kind; if it fails, each is tried alone and those that fail are listed
    as not used (``section.rejected``); the section is built from the others.
    """

    def register(body: Callable[[Section, list[tuple[Entry, R]]], None]) -> Any:
        def build(entries: list[Entry]) -> Section:
            body(s := Section(anchor, title), [(e, e.record) for e in entries if isinstance(e.record, cls)])
            return s

        def tolerant(items: list[Entry]) -> Section:
            try:
                return build(items)
            except Exception:  # noqa: BLE001 - any shape error in any file: find which
                log.debug("%s failed on its %d files together; trying them one by one", body.__name__, len(items), exc_info=True)
            good, rejected = [], []
            for item in items:
                try:
                    build([item])
                    good.append(item)
                except Exception as exc:  # noqa: BLE001
                    detail = (str(exc).strip().splitlines() or [""])[0][:80]
                    why = f"not the shape of its kind ({type(exc).__name__}: {detail})".replace(": )", ")")
                    rejected.append((item.path, why))
                    log.debug("%s: %s not used", body.__name__, item.path, exc_info=True)
            section = build(good) if good else Section(anchor, title)  # none of its shape: a section without blocks
            section.rejected = rejected
            return section

        SECTIONS[key] = tolerant
        return body

    return register


# --------------------------------------------------------------------------- runs


@_section("run", "runs", "Workflow runs: seconds per stage and the hold-out metrics", RunRecord)
def runs(s: Section, typed: list[tuple[Entry, RunRecord]]) -> None:
    _stage_table(s, typed)
    for task in TASK_METRICS:
        members = [(e, r) for e, r in typed if ("regression" if r.task == "regression" else "classification") == task]
        if members:
            _metric_table(s, task, members)
    _importances(s, typed)
    _dask_table(s, typed)


def _stage_table(s: Section, typed: list[tuple[Entry, RunRecord]]) -> None:
    """Every run's seconds per stage, one bar and one row per arm that ran; a run's failed arms named."""
    stages = list(dict.fromkeys(st for _, r in typed for a in r.ran() for st in r.arms[a].stages))
    device_peaks = any(number(r.arms[a].peak_device_mb) for _, r in typed for a in r.ran())
    pad = [""] if device_peaks else []
    bars: list[tuple[str, dict[str, float]]] = []
    rows: list[list[Any]] = []
    for e, r in typed:
        for a in r.ran():
            arm = r.arms[a]
            bars.append((f"{e.label} · {a.upper()}", {k: v for k, v in arm.stages.items() if v is not None}))
            peaks = [arm.peak_host_mb] + ([arm.peak_device_mb or ""] if device_peaks else [])
            rows.append([e.label, ARM_NAMES[a], *[arm.stages.get(st, "") for st in stages], arm.total_seconds, *peaks])
        if len(r.ran()) == 2:
            rows.append([e.label, "speedup (CPU s / GPU s)", *[r.speedup.get(st, math.nan) for st in stages],
                         r.speedup.get("total", math.nan), "", *pad])  # fmt: skip
        for a in ARMS:
            part = r.arms.get(a)
            if part is not None and part.status not in ("ok", "skipped", None):
                rows.append(
                    [e.label, ARM_NAMES[a], f"{part.status}: {part.reason or ''}".strip(": "), *[""] * len(stages), "", *pad]
                )
    if bars:
        s.chart(
            charts.stacked_bars(bars, stages, title="Seconds per stage of every run (one bar per arm that ran)"),
            f"seconds per stage, {len(bars)} bars for {len(typed)} runs",
        )
    s.table(
        "Seconds per stage (arms that did not run are left out; why is said under Where it was measured)",
        ["run", "arm", *stages, "total", "peak host MB", *(["peak device MB"] if device_peaks else [])],
        rows,
        "runs-stages",
    )


def _metric_table(s: Section, task: str, members: list[tuple[Entry, RunRecord]]) -> None:
    """The hold-out metrics of the runs of one task, a row per arm that ran."""
    found = [k for _, r in members for a in r.ran() for k in r.arms[a].metrics if k not in NOT_QUALITY]
    keys = [k for k in TASK_METRICS[task] if k in found]
    keys += [k for k in dict.fromkeys(found) if k not in keys]
    table = [
        [e.label, ARM_NAMES[a], r.model_name, *[r.arms[a].metrics.get(k, "") for k in keys], e.summary.parity]
        for e, r in members
        for a in r.ran()
    ]
    s.table(
        f"{task.capitalize()} runs: metrics on the hold-out",
        ["run", "arm", "model", *map(metric_name, keys), "parity"],
        table,
        f"runs-{task}",
    )


def _dask_table(s: Section, typed: list[tuple[Entry, RunRecord]]) -> None:
    """The arms that ran on a Dask cluster: the cluster, its workers, their largest peak."""
    table = []
    for e, r in typed:
        for a in r.ran():
            c = r.cluster_of(a)
            if c is None:
                continue
            arm = r.arms[a]
            peaks = [w.memory.peak_rss_mb for w in c.worker_details if w.memory is not None]
            peaks += [m.peak_rss_mb for m in (arm.workers_memory or {}).values()]
            table.append([
                e.label, ARM_NAMES[a], str(c.kind), c.workers, str(c.worker_kind or "").upper(), c.threads_per_worker,
                c.startup_seconds, max((p for p in peaks if p is not None and number(p)), default=""), len(arm.train_attempts or []) or "",
            ])  # fmt: skip
    if table:
        s.table(
            "Arms that ran on a Dask cluster",
            ["run", "arm", "cluster", "workers", "worker kind", "threads per worker", "start-up (s)",
             "largest worker peak RSS (MB)", "training attempts"],
            table,
            "runs-dask",
        )  # fmt: skip


#: Runs whose model's feature importances are drawn (the latest), and features per chart.
IMPORTANCE_RUNS, IMPORTANCE_TOP = 3, 10


def _importances(s: Section, typed: list[tuple[Entry, RunRecord]]) -> None:
    """The top features of the latest runs' models (the accelerated arm's where it ran)."""
    shown = 0
    for e, r in reversed(typed):
        found = next((r.arms[a].importances for a in r.ran() if r.arms[a].importances), None)
        if not found or shown >= IMPORTANCE_RUNS:
            continue
        kind = list(found)[-1]  # mean |SHAP| where the model has it, else its own measure
        values = [(str(k), float(v)) for k, v in found[kind].items() if v is not None and number(v)]
        top = sorted(values, key=lambda kv: -abs(kv[1]))[:IMPORTANCE_TOP]
        if top:
            label = kind.replace("_", " ")
            s.chart(
                charts.ranked_bars(top, title=f"{e.label}: top {len(top)} features", xlabel=label),
                f"{e.label}: {label} per feature",
            )
            shown += 1


# --------------------------------------------------------------------------- searches


@_section("hpo", "hpo", "Hyperparameter searches: the default model against the tuned one", HpoRecord)
def hpo(s: Section, typed: list[tuple[Entry, HpoRecord]]) -> None:
    """``accel hpo`` records: per metric, the default against the tuned model and the final model per arm."""
    arms_ran = [a for a in ARMS if any(a in r.ran() for _, r in typed)]
    for metric, members in grouped(typed, lambda er: str(er[1].study.metric or "metric")).items():
        rows, points = [], []
        for e, r in members:
            baseline, tuned, trials = (r.baseline or Scored()).metric, r.tuned, r.trials
            change = (r.improvement or Improvement()).tuned_minus_default
            seconds = [r.arms[a].seconds if a in r.ran() else (r.arms[a].status if a in r.arms else "") for a in arms_ran]
            rows.append([
                e.label, str(r.study.name or e.path.stem), str(r.model or ""),
                f"{trials.complete} of {trials.total} ({trials.pruned} pruned, {trials.failed} failed)",
                _or_nan(baseline), _or_nan(tuned), _or_nan(change), str(r.search.arm or "").upper(),
                *seconds, sum(v for v in r.phases_seconds.values() if v is not None and number(v)),
            ])  # fmt: skip
            points.append((e.label, baseline, tuned if number(tuned) else None))
        name = metric_name(metric)
        s.table(
            f"Searches scored by {name} (default and tuned: the model retrained on all training rows, on the hold-out)",
            ["search", "study", "model", "trials", f"default {name}", f"tuned {name}", "tuned − default", "searched on",
             *[f"final model s, {ARM_NAMES[a]}" for a in arms_ran], "search s (all phases)"],
            rows,
            f"hpo-{metric}",
        )  # fmt: skip
        s.chart(
            charts.dumbbell(points, first="default", second="tuned", title=f"Default and tuned {name}, every search",
                            xlabel=f"{name} on the hold-out"),
            f"default and tuned {name} of {len(points)} searches",
        )  # fmt: skip


def _or_nan(value: T | None) -> T | float:
    return math.nan if value is None else value


# --------------------------------------------------------------------------- compare


@_section("compare", "compare", "Your scripts: CPU vs cudf.pandas / cuml.accel (accel compare)", CompareRecord)
def compare(s: Section, typed: list[tuple[Entry, CompareRecord]]) -> None:
    rows = [
        _compare_row(e, a, arm) for e, r in typed for a in ARMS if (arm := r.arms.get(a)) is not None and arm.status != "skipped"
    ]
    arms = {a: [r.arms.get(a) or CompareArm() for _, r in typed] for a in ARMS}
    cold = {a: [arm.cold_seconds if arm.ok else None for arm in arms[a]] for a in ARMS}
    warm = {a: [(arm.warm or Warm()).median if arm.ok else None for arm in arms[a]] for a in ARMS}
    s.table(
        "Each script's arms that ran: wall seconds (cold: the first run; warm: the median of the repeats)",
        ["script", "arm", "status", "cold (s)", "warm median (s)", "peak RSS (MB)", "peak device (MB)", "parity"],
        rows,
        "compare",
    )
    series = [(f"{ARM_NAMES[a]}, {what}", values[a]) for a in ARMS for what, values in (("cold", cold), ("warm", warm))
              if any(v is not None for v in values[a])]  # fmt: skip
    if series:
        s.chart(
            charts.grouped_bars([e.label for e, _ in typed], series, title="Wall seconds of each script", ylabel="seconds"),
            f"wall seconds of {len(typed)} scripts",
        )
    for i, (e, r) in enumerate(typed):
        if r.fallbacks:
            s.table(
                f"{e.label}: where the GPU arm's time went (CPU fallbacks first)",
                ["accelerator", "function", "GPU calls", "GPU s", "CPU calls", "CPU s"],
                [[f.accelerator, f.function, f.gpu_calls, f.gpu_seconds, f.cpu_calls, f.cpu_seconds] for f in r.fallbacks],
                f"compare-fallbacks-{i}",
            )


def _compare_row(e: Entry, a: str, arm: CompareArm) -> list[Any]:
    """One arm of one script, as the compare table shows it."""
    status = "ok" if arm.ok else f"{arm.status or '—'}: {arm.reason or ''}"
    return [e.summary.data, ARM_NAMES[a], status, _or_nan(arm.cold_seconds), _or_nan((arm.warm or Warm()).median),
            _or_nan(arm.peak_host_mb), _blank(arm.peak_device_mb), e.summary.parity]  # fmt: skip


# --------------------------------------------------------------------------- bench


def _fairness(s: Section, typed: Sequence[tuple[Entry, BenchRecord]]) -> None:
    """Each distinct fairness line of the files once."""
    for line in dict.fromkeys(r.fairness.line for _, r in typed if r.fairness and r.fairness.line):
        s.para(line + ".")


def _timed(arm: Timed, key: str, dash: bool = False) -> Any:
    """An arm's ``key`` (``run1``, ``median``) where it ran, else its status (``—`` with ``dash``)."""
    return getattr(arm, key) if arm.ok else "—" if dash else arm.status or "—"


_ANSWERS: dict[bool | None, str] = {True: "agree", False: "DISAGREE"}


def _arms_table(s: Section, caption: str, header: list[str], rows: list[list[Any]], table_id: str, gpu_ran: bool) -> None:
    """A table of both arms; where the GPU arm ran nowhere, without its columns (those that name
    the GPU, the speedups, the answers checked across arms)."""
    keep = [i for i, h in enumerate(header) if gpu_ran or not ("GPU" in h or "speedup" in h or h == "answers")]
    s.table(caption, [header[i] for i in keep], [[row[i] for i in keep] for row in rows], table_id)


@_section("bench:db_join", "db-join", "db-benchmark join: seconds per question, answers checked across arms", DbBench)
@_section("bench:db_groupby", "db-groupby", "db-benchmark groupby: seconds per question, answers checked across arms", DbBench)
def db(s: Section, typed: list[tuple[Entry, DbBench]]) -> None:
    name = s.anchor.removeprefix("db-")
    _fairness(s, typed)
    for i, (e, r) in enumerate(typed):
        gpu_ran = any(q.gpu.ok for q in r.questions)
        rows = [
            [q.question, q.title, _timed(c, "run1"), _timed(c, "run2", True), _timed(c, "median", True), _timed(g, "run1"),
             _timed(g, "run2", True), _timed(g, "median", True), _or_nan(q.speedup), c.rows if c.rows is not None else g.rows,
             checksum_text(c.checksum), checksum_text(g.checksum), _ANSWERS.get(q.agree, "not compared")]
            for q in r.questions for c, g in [(q.cpu, q.gpu)]
        ]  # fmt: skip
        header = ["q", "question", "CPU run1", "CPU run2", "CPU median", "GPU run1", "GPU run2", "GPU median", "speedup", "rows",
                  "CPU checksum", "GPU checksum", "answers"]  # fmt: skip
        _arms_table(s, f"{e.label}: {name} questions", header, rows, f"db-{name}-{i}", gpu_ran)
        if r.engines:
            _db_engines(s, f"db-{name}-{i}-engines", e.label, r)
        if qs := r.questions:  # their second-run seconds, one bar per arm and engine
            arms = [("pandas (CPU arm)", "cpu")] + ([("cuDF (GPU arm)", "gpu")] if gpu_ran else [])
            series = [(lab, [getattr(q, a).run2 if getattr(q, a).ok else None for q in qs]) for lab, a in arms]
            series += [(k, [(eng.questions.get(q.question) or Timed()).run2 for q in qs]) for k, eng in r.engines.items()]
            s.chart(
                charts.grouped_bars([q.question for q in qs], series, title=f"db-benchmark {name}: {e.label}",
                                    ylabel="seconds (run 2, log)", log=True, colors={lab: charts.ARM_COLORS[a] for lab, a in arms}),
                f"{name} question times of {e.label}",
            )  # fmt: skip


def _db_engines(s: Section, table_id: str, label: str, r: DbBench) -> None:
    """The same questions on the other CPU engines, for context."""
    header = ["q", "pandas arm run2"] + [f"{k} run2" for k in r.engines] + [f"{k} answers" for k in r.engines]
    rows = []
    for q in r.questions:
        answers = [(eng, eng.questions.get(q.question) or Timed()) for eng in r.engines.values()]
        times = [a.run2 if a.ok else (a.status or eng.status or "—") for eng, a in answers]
        rows.append([q.question, _timed(q.cpu, "run2", True), *times, *[_ANSWERS.get(a.agree, "—") for _, a in answers]])
    s.table(f"{label}: the same questions on other CPU engines (context, all cores)", header, rows, table_id)
    threads = ", ".join(f"{k} {eng.threads or '?'} ({eng.version or '?'})" for k, eng in r.engines.items() if eng.ok)
    s.para(f"Engine threads: {threads}; pandas runs groupby on one thread.")


@_section("bench:models", "models", "Models: scikit-learn / XGBoost CPU vs cuML / XGBoost CUDA", ModelsBench)
def models(s: Section, typed: list[tuple[Entry, ModelsBench]]) -> None:
    """Per file, a table per quality metric (R² and accuracy never share a column)."""
    _fairness(s, typed)
    for i, (e, r) in enumerate(typed):
        gpu_ran = any(m.gpu.ok for m in r.models)
        for metric, members in grouped(r.models, lambda m: m.metric).items():
            name = metric_name(metric)
            _arms_table(
                s,
                f"{e.label}: {num(r.data.rows)} rows × {num(r.data.features)} features, models scored by {name}, median seconds",
                ["model", "CPU fit", "GPU fit", "fit speedup", "CPU predict", "GPU predict", "predict speedup", f"CPU {name}",
                 f"GPU {name}"],
                [[m.model, c.fit.median if c.ok else c.status, g.fit.median if g.ok else g.status, _or_nan(m.fit_speedup),
                  c.predict.median if c.ok else c.status, g.predict.median if g.ok else g.status, _or_nan(m.predict_speedup),
                  c.quality if c.ok else "—", g.quality if g.ok else "—"] for m in members for c, g in [(m.cpu, m.gpu)]],
                f"models-{i}-{metric}",
                gpu_ran,
            )  # fmt: skip
        if r.models:
            series = [(ARM_NAMES[a], [m.arm(a).fit.median if m.arm(a).ok else None for m in r.models]) for a in ("cpu", "gpu")]
            series = [(label, values) for label, values in series if any(v is not None for v in values)]
            s.chart(
                charts.grouped_bars([m.model for m in r.models], series, title=f"Fit seconds per model: {e.label}",
                                    ylabel="fit seconds (median, log)", log=True,
                                    colors={ARM_NAMES[a]: charts.ARM_COLORS[a] for a in ARMS}),
                f"fit seconds per model of {e.label}",
            )  # fmt: skip


@_section("bench:crossover", "crossover", "Crossover: from how many rows the GPU arm wins", CrossoverBench)
def crossover(s: Section, typed: list[tuple[Entry, CrossoverBench]]) -> None:
    _fairness(s, typed)
    for i, (e, r) in enumerate(typed):
        for j, op in enumerate(r.operations):
            gpu_ran = any(p.gpu.ok for p in op.points)
            rows = [[p.rows, _timed(p.cpu, "median"), _timed(p.gpu, "median"), _or_nan(p.speedup)] for p in op.points]
            caption = f"{e.label}: {op.operation} ({op.description}), median seconds"
            _arms_table(s, caption, ["rows", "CPU", "GPU", "speedup"], rows, f"crossover-{i}-{j}", gpu_ran)
            if op.gpu_status != "ok":
                s.para(f"{op.operation}: crossover not measured (the GPU arm {op.gpu_status}).")
            elif op.crossover_rows is None:
                s.para(f"{op.operation}: the GPU arm did not win at any size measured.")
            else:
                s.para(f"{op.operation}: the GPU arm wins from {num(op.crossover_rows)} rows on.")
        if r.operations:
            series = [
                (
                    f"{op.operation} {arm.upper()}",
                    [(p.rows, t) for p in op.points if p.arm(arm).ok and (t := p.arm(arm).median)],
                    style,
                )
                for op in r.operations
                for arm, style in (("cpu", "-o"), ("gpu", "--s"))
                if any(p.arm(arm).ok for p in op.points)
            ]
            s.chart(
                charts.lines(
                    series, title=f"Median seconds against rows: {e.label}", xlabel="rows", ylabel="median seconds", log="xy"
                ),
                f"crossover curves of {e.label}",
            )


@_section("bench:groupby_overhead", "overhead", "Overhead against the benchmark's own pandas solution", GroupbyOverheadBench)
def overhead(s: Section, typed: list[tuple[Entry, GroupbyOverheadBench]]) -> None:
    for i, (e, r) in enumerate(typed):
        if r.dispatch_overhead_seconds is not None:
            s.para(f"accel's timed call adds {num(r.dispatch_overhead_seconds * 1e6)} µs to each run (measured on a no-op).")
        rows = [
            [q.question, q.title, q.accel_median, q.plain_median, q.ratio, q.ratio_min, num(q.checksums_equal), q.max_rel_diff]
            for q in r.questions
        ]
        s.table(
            f"{e.path.name}: accel pandas arm vs plain pandas ({num(r.rows)} rows, K={num(r.k)}; target ratio <= {num(r.target)})",
            ["q", "question", "accel median (s)", "plain median (s)", "ratio", "min ratio", "checksums equal", "max rel diff"],
            rows,
            f"overhead-{i}",
        )


@_section(
    "bench:flights_overhead", "flights-overhead", "Flights workflow: accel CPU arm vs a hand-written script", FlightsOverheadBench
)
def flights_overhead(s: Section, typed: list[tuple[Entry, FlightsOverheadBench]]) -> None:
    rows = [
        [e.path.name, r.median_seconds.accel, r.median_seconds.handwritten, r.ratio, r.auc.accel, r.auc.handwritten]
        for e, r in typed
    ]  # fmt: skip
    s.table(
        "median seconds and AUC",
        ["file", "accel (s)", "hand-written (s)", "ratio", "AUC accel", "AUC hand-written"],
        rows,
        "flights-overhead",
    )


# --------------------------------------------------------------------------- scaling


#: A scaling row's ``kind`` as the page says it: the arm whose workers ran, or the single process.
_WORKERS_OF = {"gpu": "GPU workers", "cpu": "CPU workers", "single-process": "single process"}


@_section("scaling", "scaling", "Scaling: speedup and efficiency by number of workers", ScalingRecord)
def scaling(s: Section, typed: list[tuple[Entry, ScalingRecord]]) -> None:
    for i, (e, r) in enumerate(typed):
        _scaling_table(s, f"scaling-{i}", e.label, r)
        groups: dict[tuple[str | None, str | None], list[tuple[float, float]]] = {}
        for row in r.rows:
            if row.clustered and row.workers is not None and row.speedup_vs_1 is not None:
                groups.setdefault((row.kind, row.stage), []).append((row.workers, row.speedup_vs_1))
        kinds = {k for k, _ in groups}
        if len(kinds) > 1:  # both arms: their totals, so that the lines stay few
            groups = {(k, st): pts for (k, st), pts in groups.items() if st == "total"}
        if groups:
            top = max((w for pts in groups.values() for w, _ in pts if number(w)), default=1)
            series = [(f"{stage}" if len(kinds) == 1 else f"{_WORKERS_OF.get(str(kind), str(kind))}, {stage}", pts, "-o")
                      for (kind, stage), pts in groups.items()]  # fmt: skip
            s.chart(
                charts.lines(series, title=f"Speedup by workers: {e.label}", xlabel="workers", ylabel="speedup vs 1 worker",
                             ideal=(1, top), integer_x=True),
                f"scaling curve of {e.label}",
            )  # fmt: skip


def _scaling_table(s: Section, table_id: str, label: str, r: ScalingRecord) -> None:
    """Seconds per stage at each worker count; the speedup and efficiency of the total where timed."""
    stages = [st for st in dict.fromkeys(str(row.stage) for row in r.rows) if st != "total"]
    configs: dict[tuple[str | None, int | None], dict[str, ScalingRow]] = {}
    for row in r.rows:
        configs.setdefault((row.kind, row.workers), {})[str(row.stage)] = row
    versus = any(number(row.gpu_vs_cpu) for row in r.rows)  # both arms ran at a count
    table = []
    for (kind, workers), by_stage in configs.items():
        total = by_stage.get("total")
        last = total or list(by_stage.values())[-1]  # a study that timed no total: its last stage
        table.append([workers, _WORKERS_OF.get(str(kind), str(kind)), *[_blank(by_stage[st].seconds if st in by_stage else None) for st in stages],
                      _blank(total.seconds if total else None), _blank(last.speedup_vs_1), _blank(last.efficiency),
                      *([_blank(last.gpu_vs_cpu)] if versus else []), _blank(last.metric)])  # fmt: skip
    s.table(
        f"{label}: seconds per stage at each worker count; speedup and efficiency (of the total where timed) against "
        "the fewest workers of the same kind",
        ["workers", "run", *stages, "total", "speedup vs 1", "efficiency", *(["GPU vs CPU"] if versus else []),
         metric_name(r.metric_name or "metric")],
        table,
        table_id,
    )  # fmt: skip


def _blank(value: object) -> object:
    return "" if value is None else value


# --------------------------------------------------------------------------- experiments


@_section(
    "experiments",
    "experiments",
    "Experiments: accuracy against time, and the Pareto front of each comparable group",
    ExperimentsRecord,
)
def experiments(s: Section, typed: list[tuple[Entry, ExperimentsRecord]]) -> None:
    """The latest snapshot of each folder (the earlier ones are named, not shown again): a table
    per metric, each comparable group's Pareto front said and drawn.

    A front is only meaningful between rows scored alike (the same table, split and metric on
    the same rows: the ``group`` of :mod:`accel.hpo.experiments`).
    """
    latest: dict[str, tuple[Entry, ExperimentsRecord]] = {}
    for e, r in typed:
        folder = str(r.folder or e.path.parent)
        if folder not in latest or _newer(e, latest[folder][0]):
            latest[folder] = (e, r)
    earlier = [e for e, _ in typed if e not in [e for e, _ in latest.values()]]
    if earlier:
        s.para(
            f"The latest snapshot of each folder is shown; {len(earlier)} earlier one{'s' * (len(earlier) != 1)} "
            f"of the same folder{'s' * (len(latest) != 1)} left out: {', '.join(e.path.name for e in earlier)}."
        )
    for i, (e, r) in enumerate(latest.values()):
        rows = sorted(r.rows, key=lambda row: (row.seconds is None, row.seconds or 0))
        where = r.folder or e.path.parent
        panels = [
            panel
            for metric, members in grouped(rows, lambda row: str(row.metric_name or "metric")).items()
            if (panel := _experiments_table(s, f"experiments-{i}-{metric}", f"{e.path.name} (of {where})", metric, members))
        ]
        if panels:
            s.chart(charts.fronts(panels, title="Each group's Pareto front"), f"accuracy against time, {len(panels)} metrics")


def _newer(e: Entry, than: Entry) -> bool:
    """``e`` was made after ``than`` (by when it was made, then by its file name)."""
    when, other = e.record.started, than.record.started
    if when is not None and other is not None and when != other:
        return when > other
    return (when is not None, e.path.name) >= (other is not None, than.path.name)


def _experiments_table(s: Section, table_id: str, where: str, metric: str, members: list[ExperimentRow]) -> dict[str, Any] | None:
    """The experiments scored by one metric, each group's front said; the chart panel of the groups, if any is timed."""
    name = metric_name(metric)
    s.table(
        f"{where}: experiments scored by {name}",
        ["name", "workflow", "arm", "model", name, "seconds", "peak MB", "pareto", "group"],
        [[str(r.name), r.workflow or "", r.arm or "", r.model or "", r.metric, r.seconds, r.peak_mb,
          "yes" if r.pareto else "no", r.group or "all rows"] for r in members],
        table_id,
    )  # fmt: skip
    panel = []
    for group, grp in sorted(grouped(members, lambda r: r.group or "all rows").items()):
        front = [str(r.name) for r in grp if r.pareto]
        s.para(f"Pareto front of {group}: {', '.join(front) if front else 'none (no row with both a metric and a time)'}.")
        timed = [
            (r.seconds, r.metric, r.pareto) for r in grp if r.seconds and r.seconds > 0 and number(r.seconds) and number(r.metric)
        ]
        panel.append((group, [(t, m) for t, m, _ in timed], [(t, m) for t, m, on in timed if on]))
    return {"metric": name, "groups": panel} if any(pts for _, pts, _ in panel) else None
