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
Every builder is :func:`tolerant`: the files whose content is not the shape it reads are set
aside and listed, and the section is built from the others.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from typing import Any

from accel.report import charts
from accel.report.layout import Section, checksum_text, num
from accel.report.overview import ARM_NAMES, ARMS, Entry, cluster_of, is_number, metric_name, ok

log = logging.getLogger(__name__)

#: The metrics of a run's table, in this order, by task; any other the record holds follows.
TASK_METRICS = {"classification": ("auc", "accuracy", "log_loss"), "regression": ("rmse", "mae", "r2")}
#: Metrics a record holds that are not a model's quality.
NOT_QUALITY = ("positive_rate",)


def tolerant(builder: Callable[..., Section]) -> Callable[..., Section]:
    """A section builder that sets aside the entries whose content is not the shape it reads.

    The builder runs on all the entries of its kind; if it fails, each is tried alone and those
    that fail are listed as not used (``section.rejected``); the section is built from the others.
    """

    @functools.wraps(builder)
    def build(*args: Any) -> Section:
        *lead, items = args
        try:
            return builder(*lead, items)
        except Exception:  # noqa: BLE001 - any shape error in any file: find which
            log.debug("%s failed on its %d files together; trying them one by one", builder.__name__, len(items), exc_info=True)
        good, rejected = [], []
        for item in items:
            try:
                builder(*lead, [item])
                good.append(item)
            except Exception as exc:  # noqa: BLE001
                rejected.append((item.path, not_its_shape(exc)))
                log.debug("%s: %s not used", builder.__name__, item.path, exc_info=True)
        section = builder(*lead, good)
        section.rejected = rejected
        section.empty = not good
        return section

    return build


def not_its_shape(exc: BaseException) -> str:
    detail = (str(exc).strip().splitlines() or [""])[0][:80]
    return f"not the shape of its kind ({type(exc).__name__}: {detail})".replace(": )", ")")


def _ran(arms: dict[str, Any]) -> list[str]:
    return [a for a in ARMS if ok(arms.get(a))]


def _stages(arms_list: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(st for arms in arms_list for a in _ran(arms) for st in arms[a]["stages"]))


def _task_group(task: Any) -> str:
    return "regression" if task == "regression" else "classification"


def _metric_keys(task: str, metric_dicts: list[dict[str, Any]]) -> list[str]:
    keys = [k for d in metric_dicts for k in d if k not in NOT_QUALITY]
    first = [k for k in TASK_METRICS[task] if k in keys]
    return first + [k for k in dict.fromkeys(keys) if k not in first]


# --------------------------------------------------------------------------- runs


@tolerant
def runs(entries: list[Entry]) -> Section:
    s = Section("runs", "Workflow runs: seconds per stage and the hold-out metrics")
    stages = _stages([e.content["arms"] for e in entries])
    bars: list[tuple[str, dict[str, float]]] = []
    rows: list[list[Any]] = []
    device_peaks = any(is_number(e.content["arms"][a].get("peak_device_mb")) for e in entries for a in _ran(e.content["arms"]))
    for e in entries:
        arms = e.content["arms"]
        ran = _ran(arms)
        for a in ran:
            arm = arms[a]
            bars.append((f"{e.label} · {a.upper()}", arm["stages"]))
            peaks = [arm.get("peak_host_mb")] + ([arm.get("peak_device_mb") or ""] if device_peaks else [])
            rows.append([e.label, ARM_NAMES[a], *[arm["stages"].get(st, "") for st in stages], arm.get("total_seconds"), *peaks])
        if len(ran) == 2:
            speed = e.content.get("speedup") or {}
            rows.append([e.label, "speedup (CPU s / GPU s)", *[speed.get(st, math.nan) for st in stages],
                         speed.get("total", math.nan), "", *([""] if device_peaks else [])])  # fmt: skip
        for a in ARMS:
            arm = arms.get(a)
            if isinstance(arm, dict) and arm.get("status") not in ("ok", "skipped", None):
                rows.append([e.label, ARM_NAMES[a], f"{arm['status']}: {arm.get('reason') or ''}".strip(": "),
                             *[""] * len(stages), "", *([""] if device_peaks else [])])  # fmt: skip
    if bars:
        s.chart(
            charts.stacked_bars(bars, stages, title="Seconds per stage of every run (one bar per arm that ran)"),
            f"seconds per stage, {len(bars)} bars for {len(entries)} runs",
        )
    s.table(
        "Seconds per stage (arms that did not run are left out; why is said under Where it was measured)",
        ["run", "arm", *stages, "total", "peak host MB", *(["peak device MB"] if device_peaks else [])],
        rows,
        "runs-stages",
    )
    for task in TASK_METRICS:
        members = [e for e in entries if _task_group(e.content.get("task")) == task]
        if not members:
            continue
        keys = _metric_keys(task, [e.content["arms"][a].get("metrics") or {} for e in members for a in _ran(e.content["arms"])])
        table = []
        for e in members:
            arms = e.content["arms"]
            model = e.content.get("model") or (e.content.get("config") or {}).get("model")
            model = model.get("name") if isinstance(model, dict) else model
            for a in _ran(arms):
                metrics = arms[a].get("metrics") or {}
                table.append([e.label, ARM_NAMES[a], str(model or ""), *[metrics.get(k, "") for k in keys], e.parity])
        s.table(
            f"{task.capitalize()} runs: metrics on the hold-out",
            ["run", "arm", "model", *map(metric_name, keys), "parity"],
            table,
            f"runs-{task}",
        )
    _importances(s, entries)
    table = []
    for e in entries:
        for a in _ran(e.content["arms"]):
            c = cluster_of(e.content, a)
            if c is None:
                continue
            arm = e.content["arms"][a]
            peaks = [(w.get("memory") or {}).get("peak_rss_mb") for w in c.get("worker_details") or []]
            peaks += [m.get("peak_rss_mb") for m in (arm.get("workers_memory") or {}).values() if isinstance(m, dict)]
            table.append([
                e.label, ARM_NAMES[a], str(c.get("kind")), c.get("workers"), str(c.get("worker_kind", "")).upper(),
                c.get("threads_per_worker"), c.get("startup_seconds"), max((p for p in peaks if is_number(p)), default=""),
                len(arm.get("train_attempts") or []) or "",
            ])  # fmt: skip
    if table:
        s.table(
            "Arms that ran on a Dask cluster",
            ["run", "arm", "cluster", "workers", "worker kind", "threads per worker", "start-up (s)",
             "largest worker peak RSS (MB)", "training attempts"],
            table,
            "runs-dask",
        )  # fmt: skip
    return s


#: Runs whose model's feature importances are drawn (the latest), and features per chart.
IMPORTANCE_RUNS, IMPORTANCE_TOP = 3, 10


def _importances(s: Section, entries: list[Entry]) -> None:
    """The top features of the latest runs' models (the accelerated arm's where it ran)."""
    shown = 0
    for e in reversed(entries):
        arms = e.content["arms"]
        found = next((arms[a].get("importances") for a in ("gpu", "cpu") if a in _ran(arms) and arms[a].get("importances")), None)
        if not isinstance(found, dict) or not found or shown >= IMPORTANCE_RUNS:
            continue
        kind = list(found)[-1]  # mean |SHAP| where the model has it, else its own measure
        values = [(str(k), float(v)) for k, v in found[kind].items() if is_number(v)]
        top = sorted(values, key=lambda kv: -abs(kv[1]))[:IMPORTANCE_TOP]
        if top:
            label = kind.replace("_", " ")
            s.chart(
                charts.ranked_bars(top, title=f"{e.label}: top {len(top)} features", xlabel=label),
                f"{e.label}: {label} per feature",
            )
            shown += 1


# --------------------------------------------------------------------------- searches


@tolerant
def hpo(entries: list[Entry]) -> Section:
    """``accel hpo`` records: per metric, the default against the tuned model and the final model per arm."""
    s = Section("hpo", "Hyperparameter searches: the default model against the tuned one")
    arms_ran = [a for a in ARMS if any(ok((e.content.get("arms") or {}).get(a)) for e in entries)]
    by_metric: dict[str, list[Entry]] = {}
    for e in entries:
        by_metric.setdefault(str((e.content.get("study") or {}).get("metric") or "metric"), []).append(e)
    for metric, members in by_metric.items():
        rows, points = [], []
        for e in members:
            rec = e.content
            study, trials = rec.get("study") or {}, rec.get("trials") or {}
            baseline = (rec.get("baseline") or {}).get("metric")
            final = rec.get("final") or {}
            tuned = final.get("metric") if final.get("status") != "failed" else f"failed: {final.get('reason', '')}"
            change = (rec.get("improvement") or {}).get("tuned_minus_default")
            arms = rec.get("arms") or {}
            seconds = [arms[a].get("seconds") if ok(arms.get(a)) else (arms.get(a) or {}).get("status", "") for a in arms_ran]
            rows.append([
                e.label, str(study.get("name", e.path.stem)), str(rec.get("model") or ""),
                f"{trials.get('complete', 0)} of {trials.get('total', 0)} ({trials.get('pruned', 0)} pruned, {trials.get('failed', 0)} failed)",
                baseline if baseline is not None else math.nan, tuned if tuned is not None else math.nan,
                change if change is not None else math.nan, str((rec.get("search") or {}).get("arm", "")).upper(),
                *seconds, sum(v for v in (rec.get("phases_seconds") or {}).values() if is_number(v)),
            ])  # fmt: skip
            points.append((e.label, baseline, tuned if is_number(tuned) else None))
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
    return s


# --------------------------------------------------------------------------- compare


@tolerant
def compare(entries: list[Entry]) -> Section:
    s = Section("compare", "Your scripts: CPU vs cudf.pandas / cuml.accel (accel compare)")
    rows, cold, warm = [], {a: [] for a in ARMS}, {a: [] for a in ARMS}
    for e in entries:
        arms = e.content["arms"]
        for a in ARMS:
            arm = arms.get(a) or {}
            cold[a].append(arm.get("cold_seconds") if ok(arm) else None)
            warm[a].append((arm.get("warm") or {}).get("median") if ok(arm) else None)
            if not arm or arm.get("status") == "skipped":
                continue
            status = "ok" if ok(arm) else f"{arm.get('status', '—')}: {arm.get('reason') or ''}"
            rows.append([
                e.data, ARM_NAMES[a], status, arm.get("cold_seconds", math.nan), (arm.get("warm") or {}).get("median", math.nan),
                arm.get("peak_host_mb", math.nan), arm.get("peak_device_mb") if arm.get("peak_device_mb") is not None else "",
                e.parity,
            ])  # fmt: skip
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
            charts.grouped_bars([e.label for e in entries], series, title="Wall seconds of each script", ylabel="seconds"),
            f"wall seconds of {len(entries)} scripts",
        )
    for i, e in enumerate(entries):
        falls = e.content.get("fallbacks") or []
        if falls:
            s.table(
                f"{e.label}: where the GPU arm's time went (CPU fallbacks first)",
                ["accelerator", "function", "GPU calls", "GPU s", "CPU calls", "CPU s"],
                [
                    [f["accelerator"], f["function"], f["gpu_calls"], f["gpu_seconds"], f["cpu_calls"], f["cpu_seconds"]]
                    for f in falls
                ],
                f"compare-fallbacks-{i}",
            )
    return s


# --------------------------------------------------------------------------- bench


def _fairness(s: Section, entries: list[Entry]) -> None:
    """Each distinct fairness line of the files once."""
    lines = dict.fromkeys(
        str((e.content.get("fairness") or {}).get("line")) for e in entries if (e.content.get("fairness") or {}).get("line")
    )
    for line in lines:
        s.para(line + ".")


def _status_or(arm: dict[str, Any], key: str) -> Any:
    return arm.get(key) if ok(arm) else arm.get("status", "—")


@tolerant
def db(benchmark: str, entries: list[Entry]) -> Section:
    name = benchmark.removeprefix("db_")
    s = Section(f"db-{name}", f"db-benchmark {name}: seconds per question, answers checked across arms")
    _fairness(s, entries)
    for i, e in enumerate(entries):
        res = e.content
        gpu_ran = any(ok(q.get("gpu")) for q in res.get("questions", []))
        header = ["q", "question", "CPU run1", "CPU run2", "CPU median"]
        if gpu_ran:
            header += ["GPU run1", "GPU run2", "GPU median", "speedup"]
        header += ["rows", "CPU checksum"] + (["GPU checksum", "answers"] if gpu_ran else [])
        rows = []
        for q in res.get("questions", []):
            c, g = q.get("cpu", {}), q.get("gpu", {})
            row = [
                q["question"],
                q.get("title", ""),
                _status_or(c, "run1"),
                c.get("run2") if ok(c) else "—",
                c.get("median") if ok(c) else "—",
            ]
            if gpu_ran:
                row += [
                    _status_or(g, "run1"),
                    g.get("run2") if ok(g) else "—",
                    g.get("median") if ok(g) else "—",
                    q.get("speedup", math.nan),
                ]
            row += [c.get("rows", g.get("rows")), checksum_text(c.get("checksum", []))]
            if gpu_ran:
                row += [
                    checksum_text(g.get("checksum", [])),
                    {True: "agree", False: "DISAGREE", None: "not compared"}[q.get("agree")],
                ]
            rows.append(row)
        s.table(f"{e.label}: {name} questions", header, rows, f"db-{name}-{i}")
        engines = res.get("engines") or {}
        if engines:
            eh = ["q", "pandas arm run2"] + [f"{k} run2" for k in engines] + [f"{k} answers" for k in engines]
            erows = []
            for q in res.get("questions", []):
                row: list[Any] = [q["question"], q["cpu"].get("run2") if ok(q.get("cpu")) else "—"]
                agrees = []
                for eng in engines.values():
                    a = (eng.get("questions") or {}).get(q["question"], {})
                    row.append(a.get("run2") if ok(a) else (a.get("status") or eng.get("status", "—")))
                    agrees.append({True: "agree", False: "DISAGREE", None: "—"}[a.get("agree")])
                erows.append(row + agrees)
            s.table(
                f"{e.label}: the same questions on other CPU engines (context, all cores)", eh, erows, f"db-{name}-{i}-engines"
            )
            s.para(
                "Engine threads: "
                + ", ".join(f"{k} {eng.get('threads', '?')} ({eng.get('version', '?')})" for k, eng in engines.items() if ok(eng))
                + "; pandas runs groupby on one thread."
            )
        questions = res.get("questions", [])
        if questions:
            series = [("pandas (CPU arm)", [q["cpu"].get("run2") if ok(q.get("cpu")) else None for q in questions])]
            colors: list[str | None] = [charts.ARM_COLORS["cpu"]]
            if gpu_ran:
                series.append(("cuDF (GPU arm)", [q["gpu"].get("run2") if ok(q.get("gpu")) else None for q in questions]))
                colors.append(charts.ARM_COLORS["gpu"])
            for k, eng in engines.items():
                series.append((k, [((eng.get("questions") or {}).get(q["question"]) or {}).get("run2") for q in questions]))
                colors.append(None)
            s.chart(
                charts.grouped_bars([q["question"] for q in questions], series, title=f"db-benchmark {name}: {e.label}",
                                    ylabel="seconds (run 2, log)", log=True, colors=colors),
                f"{name} question times of {e.label}",
            )  # fmt: skip
    return s


@tolerant
def models(entries: list[Entry]) -> Section:
    """Per file, a table per quality metric (R² and accuracy never share a column)."""
    s = Section("models", "Models: scikit-learn / XGBoost CPU vs cuML / XGBoost CUDA")
    _fairness(s, entries)
    for i, e in enumerate(entries):
        res = e.content
        data = res.get("data", {})
        ms = res.get("models", [])
        gpu_ran = any(ok(m["gpu"]) for m in ms)
        by_metric: dict[str, list[dict]] = {}
        for m in ms:
            by_metric.setdefault(str(m["metric"]), []).append(m)
        for metric, members in by_metric.items():
            rows = []
            for m in members:
                c, g = m["cpu"], m["gpu"]
                row = [m["model"], c["fit"]["median"] if ok(c) else c["status"]]
                row += [g["fit"]["median"] if ok(g) else g["status"], m.get("fit_speedup", math.nan)] if gpu_ran else []
                row += [c["predict"]["median"] if ok(c) else c["status"]]
                row += [g["predict"]["median"] if ok(g) else g["status"], m.get("predict_speedup", math.nan)] if gpu_ran else []
                row += [c.get("quality") if ok(c) else "—"] + ([g.get("quality") if ok(g) else "—"] if gpu_ran else [])
                rows.append(row)
            name = metric_name(metric)
            header = ["model", "CPU fit"] + (["GPU fit", "fit speedup"] if gpu_ran else []) + ["CPU predict"]
            header += (
                (["GPU predict", "predict speedup"] if gpu_ran else []) + [f"CPU {name}"] + ([f"GPU {name}"] if gpu_ran else [])
            )
            s.table(
                f"{e.label}: {num(data.get('rows'))} rows × {num(data.get('features'))} features, models scored by {name}, median seconds",
                header,
                rows,
                f"models-{i}-{metric}",
            )
        if ms:
            series = [(ARM_NAMES[a], [m[a]["fit"]["median"] if ok(m[a]) else None for m in ms]) for a in ("cpu", "gpu")]
            series = [(label, values) for label, values in series if any(v is not None for v in values)]
            s.chart(
                charts.grouped_bars([m["model"] for m in ms], series, title=f"Fit seconds per model: {e.label}",
                                    ylabel="fit seconds (median, log)", log=True,
                                    colors=[charts.ARM_COLORS["cpu" if lab == ARM_NAMES["cpu"] else "gpu"] for lab, _ in series]),
                f"fit seconds per model of {e.label}",
            )  # fmt: skip
    return s


@tolerant
def crossover(entries: list[Entry]) -> Section:
    s = Section("crossover", "Crossover: from how many rows the GPU arm wins")
    _fairness(s, entries)
    for i, e in enumerate(entries):
        ops = e.content.get("operations", [])
        for j, op in enumerate(ops):
            gpu_ran = any(ok(p["gpu"]) for p in op["points"])
            rows = [
                [p["rows"], p["cpu"].get("median") if ok(p["cpu"]) else p["cpu"]["status"]]
                + (
                    [p["gpu"].get("median") if ok(p["gpu"]) else p["gpu"]["status"], p.get("speedup", math.nan)]
                    if gpu_ran
                    else []
                )
                for p in op["points"]
            ]
            s.table(
                f"{e.label}: {op['operation']} ({op.get('description', '')}), median seconds",
                ["rows", "CPU"] + (["GPU", "speedup"] if gpu_ran else []),
                rows,
                f"crossover-{i}-{j}",
            )
            if op.get("gpu_status") != "ok":
                s.para(f"{op['operation']}: crossover not measured (the GPU arm {op.get('gpu_status')}).")
            elif op.get("crossover_rows") is None:
                s.para(f"{op['operation']}: the GPU arm did not win at any size measured.")
            else:
                s.para(f"{op['operation']}: the GPU arm wins from {num(op['crossover_rows'])} rows on.")
        if ops:
            series = [
                (f"{op['operation']} {arm.upper()}", [(p["rows"], p[arm]["median"]) for p in op["points"] if ok(p[arm])], style)
                for op in ops
                for arm, style in (("cpu", "-o"), ("gpu", "--s"))
                if any(ok(p[arm]) for p in op["points"])
            ]
            s.chart(
                charts.lines(
                    series, title=f"Median seconds against rows: {e.label}", xlabel="rows", ylabel="median seconds", log="xy"
                ),
                f"crossover curves of {e.label}",
            )
    return s


@tolerant
def overhead(entries: list[Entry]) -> Section:
    s = Section("overhead", "Overhead against the benchmark's own pandas solution")
    for i, e in enumerate(entries):
        res = e.content
        if res.get("dispatch_overhead_seconds") is not None:
            s.para(f"accel's timed call adds {num(res['dispatch_overhead_seconds'] * 1e6)} µs to each run (measured on a no-op).")
        rows = [
            [q["question"], q.get("title", ""), q.get("accel_median"), q.get("plain_median"), q.get("ratio"), q.get("ratio_min"),
             num(q.get("checksums_equal")), q.get("max_rel_diff")]
            for q in res.get("questions", [])
        ]  # fmt: skip
        s.table(
            f"{e.path.name}: accel pandas arm vs plain pandas ({num(res.get('rows'))} rows, K={num(res.get('k'))}; target ratio <= {num(res.get('target'))})",
            ["q", "question", "accel median (s)", "plain median (s)", "ratio", "min ratio", "checksums equal", "max rel diff"],
            rows,
            f"overhead-{i}",
        )
    return s


@tolerant
def flights_overhead(entries: list[Entry]) -> Section:
    s = Section("flights-overhead", "Flights workflow: accel CPU arm vs a hand-written script")
    rows = []
    for e in entries:
        med, auc = e.content.get("median_seconds") or {}, e.content.get("auc") or {}
        rows.append(
            [
                e.path.name,
                med.get("accel"),
                med.get("handwritten"),
                e.content.get("ratio"),
                auc.get("accel"),
                auc.get("handwritten"),
            ]
        )
    s.table(
        "median seconds and AUC",
        ["file", "accel (s)", "hand-written (s)", "ratio", "AUC accel", "AUC hand-written"],
        rows,
        "flights-overhead",
    )
    return s


# --------------------------------------------------------------------------- scaling


def _workers_of(kind: Any) -> str:
    """A scaling row's ``kind`` as the page says it: the arm whose workers ran, or the single process."""
    return {"gpu": "GPU workers", "cpu": "CPU workers", "single-process": "single process"}.get(str(kind), str(kind))


@tolerant
def scaling(entries: list[Entry]) -> Section:
    s = Section("scaling", "Scaling: speedup and efficiency by number of workers")
    for i, e in enumerate(entries):
        res = e.content
        rows = res.get("rows", [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise TypeError("rows is not a list of rows")
        metric = metric_name(str(res.get("metric_name") or "metric"))
        stages = [st for st in dict.fromkeys(str(r.get("stage")) for r in rows) if st != "total"]
        configs: dict[tuple, dict[str, dict]] = {}
        for r in rows:
            configs.setdefault((r.get("kind"), r.get("workers")), {})[str(r.get("stage"))] = r
        versus = any(is_number(r.get("gpu_vs_cpu")) for r in rows)  # both arms ran at a count
        table = []
        for (kind, workers), by_stage in configs.items():
            total = by_stage.get("total") or {}
            last = total or list(by_stage.values())[-1]  # a study that timed no total: its last stage
            table.append([workers, _workers_of(kind), *[(by_stage.get(st) or {}).get("seconds", "") for st in stages],
                          total.get("seconds", ""), last.get("speedup_vs_1", ""), last.get("efficiency", ""),
                          *([last.get("gpu_vs_cpu", "")] if versus else []), last.get("metric", "")])  # fmt: skip
        s.table(
            f"{e.label}: seconds per stage at each worker count; speedup and efficiency (of the total where timed) against "
            "the fewest workers of the same kind",
            ["workers", "run", *stages, "total", "speedup vs 1", "efficiency", *(["GPU vs CPU"] if versus else []), metric],
            table,
            f"scaling-{i}",
        )
        groups: dict[tuple, list] = {}
        for r in rows:
            if r.get("kind") != "single-process":
                groups.setdefault((r.get("kind"), r.get("stage")), []).append((r.get("workers"), r.get("speedup_vs_1")))
        kinds = {k for k, _ in groups}
        if len(kinds) > 1:  # both arms: their totals, so that the lines stay few
            groups = {(k, st): pts for (k, st), pts in groups.items() if st == "total"}
        if groups:
            top = max((w for pts in groups.values() for w, _ in pts if is_number(w)), default=1)
            series = [(f"{stage}" if len(kinds) == 1 else f"{_workers_of(kind)}, {stage}", pts, "-o")
                      for (kind, stage), pts in groups.items()]  # fmt: skip
            s.chart(
                charts.lines(series, title=f"Speedup by workers: {e.label}", xlabel="workers", ylabel="speedup vs 1 worker",
                             ideal=(1, top), integer_x=True),
                f"scaling curve of {e.label}",
            )  # fmt: skip
    return s


# --------------------------------------------------------------------------- experiments


@tolerant
def experiments(entries: list[Entry]) -> Section:
    """The latest snapshot of each folder (the earlier ones are named, not shown again): a table
    per metric, each comparable group's Pareto front said and drawn.

    A front is only meaningful between rows scored alike (the same table, split and metric on
    the same rows: the ``group`` of :mod:`accel.hpo.experiments`).
    """
    s = Section("experiments", "Experiments: accuracy against time, and the Pareto front of each comparable group")
    latest: dict[str, Entry] = {}
    for e in entries:
        rows = e.content.get("rows", [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise TypeError("rows is not a list of rows")
        folder = str(e.content.get("folder") or e.path.parent)
        if folder not in latest or (e.started or 0, e.path.name) >= (latest[folder].started or 0, latest[folder].path.name):  # type: ignore[operator]
            latest[folder] = e
    earlier = [e for e in entries if e not in latest.values()]
    if earlier:
        s.para(
            f"The latest snapshot of each folder is shown; {len(earlier)} earlier one{'s' * (len(earlier) != 1)} "
            f"of the same folder{'s' * (len(latest) != 1)} left out: {', '.join(e.path.name for e in earlier)}."
        )
    for i, e in enumerate(latest.values()):
        rows = sorted(e.content.get("rows", []), key=lambda r: (r.get("seconds") is None, r.get("seconds") or 0))
        by_metric: dict[str, list[dict]] = {}
        for r in rows:
            by_metric.setdefault(str(r.get("metric_name") or "metric"), []).append(r)
        where = e.content.get("folder") or e.path.parent
        panels = []
        for metric, members in by_metric.items():
            name = metric_name(metric)
            s.table(
                f"{e.path.name} (of {where}): experiments scored by {name}",
                ["name", "workflow", "arm", "model", name, "seconds", "peak MB", "pareto", "group"],
                [[str(r.get("name")), str(r.get("workflow") or ""), str(r.get("arm") or ""), str(r.get("model") or ""),
                  r.get("metric"), r.get("seconds"), r.get("peak_mb"), "yes" if r.get("pareto") else "no",
                  str(r.get("group") or "all rows")] for r in members],
                f"experiments-{i}-{metric}",
            )  # fmt: skip
            groups: dict[str, list[dict]] = {}
            for r in members:
                groups.setdefault(str(r.get("group") or "all rows"), []).append(r)
            panel = []
            for group, grp in sorted(groups.items()):
                front = [str(r.get("name")) for r in grp if r.get("pareto")]
                s.para(
                    f"Pareto front of {group}: {', '.join(front) if front else 'none (no row with both a metric and a time)'}."
                )
                timed = [r for r in grp if is_number(r.get("seconds")) and r["seconds"] > 0 and is_number(r.get("metric"))]
                pts = [(r["seconds"], r["metric"]) for r in timed]
                panel.append((group, pts, [(r["seconds"], r["metric"]) for r in timed if r.get("pareto")]))
            if any(pts for _, pts, _ in panel):
                panels.append({"metric": name, "groups": panel})
        if panels:
            s.chart(charts.fronts(panels, title="Each group's Pareto front"), f"accuracy against time, {len(panels)} metrics")
    return s


def bench_section(benchmark: str) -> Callable[[list[Entry]], Section]:
    """The builder of a benchmark's section, by the record's ``benchmark``."""
    if benchmark in ("db_groupby", "db_join"):
        return functools.partial(db, benchmark)
    return {"models": models, "crossover": crossover, "groupby_overhead": overhead, "flights_overhead": flights_overhead}[
        benchmark
    ]
