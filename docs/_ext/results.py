"""Measured results, rendered from ``benchmarks/results/*.json`` while the docs build.

``.. accel-results:: KIND`` renders every result file of one benchmark (``models``,
``db_groupby``, ``flights_overhead``, ...; ``run`` for run records) as tables, newest file
first, each table naming its file and the machine it was measured on. ``.. accel-results::
files`` lists every file; ``.. accel-results:: other`` renders, generically, the kinds no
directive before it on the page has claimed, so a new benchmark is never left out.

No number on the measured-results page is typed by hand. GPU columns come only from files whose
name says they were measured on an NVIDIA GPU (``...-nvidia-<model>-NNN.json``); every other
file's GPU arm was skipped, and its GPU fields are never read.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from accel.record import (
    BenchRecord,
    Cores,
    CrossoverBench,
    DbBench,
    ModelsBench,
    Record,
    RunRecord,
    ScalingRecord,
    Timed,
    read_record,
)

logger = logging.getLogger(__name__)

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
#: ``<date>-<name>-<device>-<NNN>.json``; the device part names the GPU where one ran.
GPU_FILE = re.compile(r"-nvidia-[a-z0-9]+-\d{3}\.json$")
DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})-")


# --------------------------------------------------------------------------- the files


class Result:
    """One results file: its name, its typed record (:func:`accel.record.read_record`: an old
    result upgraded), which benchmark it holds, whether its GPU arm ran on a GPU."""

    def __init__(self, path: Path):
        self.path = path
        self.name = path.name
        self.record: Record = read_record(path)
        # Which benchmark; else the record's kind (``run``, ``scaling``).
        self.kind = self.record.benchmark if isinstance(self.record, BenchRecord) else self.record.kind
        self.gpu = bool(GPU_FILE.search(self.name))
        m = DATE.match(self.name)
        self.date = m.group(1) if m else ""

    @functools.cached_property
    def fields(self) -> dict[str, Any]:
        """The fields of a result no class names (the scripts' own benchmarks), as the file holds them."""
        return self.record.model_dump(exclude_unset=True)

    @property
    def machine(self) -> str:
        env = self.record.environment
        if env is None or not (env.model_fields_set or env.model_extra):
            return "not recorded"
        cores = env.cores
        n = (cores.available or cores.logical) if isinstance(cores, Cores) else cores
        text = f"{env.cpu_model or 'CPU'}, {n} cores" if n else str(env.cpu_model or "CPU")
        if env.ram_gb:
            text += f", {env.ram_gb:.0f} GB"
        if self.gpu:
            gpus = [g.name for g in env.gpus if g.name]
            if gpus:
                text += "; " + ", ".join(sorted(set(gpus)))
        return text


def load_results(folder: Path = RESULTS) -> list[Result]:
    """Every results file, newest first (by name: the date, then the sequence number)."""
    return [Result(p) for p in sorted(folder.glob("*.json"), reverse=True)]


# --------------------------------------------------------------------------- formatting


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def secs(value: Any) -> str:
    v = _num(value)
    if v is None:
        return "—"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 1:
        return f"{v:.2f}"
    if v >= 0.01:
        return f"{v:.3f}"
    return f"{v:.2g}"


def ratio(value: Any, digits: int = 3) -> str:
    v = _num(value)
    return "—" if v is None else f"{v:.{digits}f}"


def times(value: Any) -> str:
    v = _num(value)
    if v is None:
        return "—"
    return f"{v:.0f}×" if v >= 100 else f"{v:.1f}×" if v >= 10 else f"{v:.2f}×"


def metric(value: Any) -> str:
    v = _num(value)
    if v is None:
        return "—"
    return f"{v:,.1f}" if abs(v) >= 1000 else f"{v:.4f}" if abs(v) < 10 else f"{v:.2f}"


def mb(value: Any) -> str:
    v = _num(value)
    return "—" if v is None else f"{v:,.0f}"


def count(value: Any) -> str:
    v = _num(value)
    return "—" if v is None else f"{v:,.0f}"


def text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


# --------------------------------------------------------------------------- docutils


def table(header: list[str], rows: Iterable[list[Any]], caption: str | None = None) -> nodes.table:
    rows = list(rows)
    tbl = nodes.table(classes=["accel-results"])
    if caption:
        tbl += nodes.title(text=caption)
    group = nodes.tgroup(cols=len(header))
    tbl += group
    for _ in header:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += _row(header)
    body = nodes.tbody()
    group += body
    for row in rows:
        body += _row(row)
    return tbl


def _row(cells: list[Any]) -> nodes.row:
    """A table row; a cell is text, or a list of inline nodes."""
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        if isinstance(cell, list):
            p = nodes.paragraph()
            p.extend(cell)
            entry += p
        else:
            entry += nodes.paragraph(text=str(cell))
        row += entry
    return row


def para(*parts: str | nodes.Node) -> nodes.paragraph:
    p = nodes.paragraph()
    for part in parts:
        p += nodes.Text(part) if isinstance(part, str) else part
    return p


def literal(value: str) -> nodes.literal:
    return nodes.literal(text=value)


def source(result: Result, extra: str = "") -> nodes.paragraph:
    """The line under each table: the file and the machine."""
    line = para(literal(result.name), f" — {result.machine}")
    if extra:
        line += nodes.Text(f". {extra}")
    return line


# --------------------------------------------------------------------------- one renderer per benchmark


def render_run(result: Result) -> list[nodes.Node]:
    """A run record: seconds per stage on each arm, the speedup, the metric of both."""
    rec = result.record
    assert isinstance(rec, RunRecord), result.name
    cpu, gpu = rec.arms.get("cpu"), rec.arms.get("gpu")
    use_gpu = result.gpu and gpu is not None and gpu.ok
    stages = list((cpu.stages if cpu else {}) or (gpu.stages if gpu else {}))
    header = ["stage", "CPU s"] + (["GPU s", "speedup"] if use_gpu else [])
    rows = []
    for stage in [*stages, "total"]:
        row = [stage, secs(_stage(cpu, stage))]
        if use_gpu:
            row += [secs(_stage(gpu, stage)), times(rec.speedup.get(stage))]
        rows.append(row)
    caption = f"accel run {rec.workflow}, {rec.config.rows or 'all'} rows, {rec.config.precision or 'fp32'}"
    parity = rec.parity
    notes = [f"{parity.metric or 'metric'} CPU {metric(parity.cpu)}"]
    if use_gpu and gpu is not None:
        notes += [f"GPU {metric(parity.gpu)}", f"parity {text(parity.ok)} (tolerance {parity.tolerance})"]
        notes.append(f"GPU arm's model ran on {gpu.device_used}")
    return [table(header, rows, caption), source(result, "; ".join(notes))]


def _stage(arm: Any, stage: str) -> Any:
    """An arm's seconds of ``stage`` (``total``: of the run)."""
    if arm is None:
        return None
    return arm.total_seconds if stage == "total" else arm.stages.get(stage)


def render_models(result: Result) -> list[nodes.Node]:
    rec = result.record
    assert isinstance(rec, ModelsBench), result.name
    rows = []
    header = ["model", "metric", "CPU fit s", "CPU predict s", "CPU quality"]
    if result.gpu:
        header += ["GPU fit s", "GPU predict s", "GPU quality", "fit speedup", "predict speedup"]
    for m in rec.models:
        row = [m.model, m.metric, secs(m.cpu.fit.median), secs(m.cpu.predict.median), metric(m.cpu.quality)]
        if result.gpu:
            row += [secs(m.gpu.fit.median), secs(m.gpu.predict.median), metric(m.gpu.quality)]
            row += [times(m.fit_speedup), times(m.predict_speedup)]
        rows.append(row)
    caption = f"accel bench models, {count(rec.data.rows)} rows × {rec.data.features} features, median of {rec.config.repeats}"
    return [table(header, rows, caption), source(result, _fairness(rec))]


def _fairness(rec: BenchRecord) -> str:
    return (rec.fairness.line if rec.fairness else None) or ""


def render_db(result: Result) -> list[nodes.Node]:
    rec = result.record
    assert isinstance(rec, DbBench), result.name
    engine_names = [e for e, v in rec.engines.items() if v.ok]
    header = ["q", "question", "pandas run 1", "pandas run 2", "pandas median"]
    if result.gpu:
        header += ["cuDF run 1", "cuDF run 2", "cuDF median", "speedup", "answers agree"]
    header += [f"{e} run 2" for e in engine_names]
    rows = []
    for q in rec.questions:
        cpu, gpu = q.cpu, q.gpu
        row = [q.question, q.title, secs(cpu.run1), secs(cpu.run2), secs(cpu.median)]
        if result.gpu:
            row += [secs(gpu.run1), secs(gpu.run2), secs(gpu.median), times(q.speedup), text(q.agree)]
        row += [secs((rec.engines[e].questions.get(q.question) or Timed()).run2) for e in engine_names]
        rows.append(row)
    what = "groupby" if result.kind == "db_groupby" else "join"
    first = Path(str(rec.data.x or "")).name
    caption = f"db-benchmark {what}, {first or 'data'}, seconds (median of {rec.config.repeats})"
    return [table(header, rows, caption), source(result, _fairness(rec))]


def render_crossover(result: Result) -> list[nodes.Node]:
    rec = result.record
    assert isinstance(rec, CrossoverBench), result.name
    out: list[nodes.Node] = []
    for op in rec.operations:
        header = ["rows", "CPU s"] + (["GPU s", "speedup"] if result.gpu else [])
        rows = []
        for p in op.points:
            row = [count(p.rows), secs(p.cpu.median)]
            if result.gpu:
                row += [secs(p.gpu.median), times(p.speedup)]
            rows.append(row)
        out.append(table(header, rows, f"crossover: {op.description or op.operation}"))
        if result.gpu:
            out.append(para(f"crossover at {count(op.crossover_rows)} rows"))
    out.append(source(result))
    return out


def _overhead_row(result: Result) -> list[str]:
    d = result.fields
    med = d.get("median_seconds") or {}
    auc = d.get("auc") or {}
    return [
        result.name, text(d.get("mode") or "in process"), text(d.get("repeats")), secs(med.get("accel")),
        secs(med.get("handwritten")), ratio(d.get("ratio")), ratio(d.get("ratio_paired_median")),
        ratio(d.get("ratio_fastest")), metric(auc.get("accel")), metric(auc.get("handwritten")),
    ]  # fmt: skip


def render_flights_overheads(results: list[Result]) -> list[nodes.Node]:
    header = ["file", "mode", "repeats", "accel median s", "hand-written median s", "ratio of medians",
              "median of paired ratios", "fastest / fastest", "AUC accel", "AUC hand-written"]  # fmt: skip
    machines = sorted({r.machine for r in results})
    return [table(header, [_overhead_row(r) for r in results], "accel run flights (CPU arm) against a hand-written script"),
            para("Measured on: " + "; ".join(machines))]  # fmt: skip


def render_compare_overheads(results: list[Result]) -> list[nodes.Node]:
    header = ["file", "script", "repeats", "ratio of medians", "median of paired ratios"]
    rows = [
        [r.name, " ".join([str(r.fields.get("script")), *map(str, r.fields.get("script_args") or [])]), text(r.fields.get("repeats")),
         ratio(r.fields.get("ratio")), ratio(r.fields.get("ratio_paired_median"))]
        for r in results
    ]  # fmt: skip
    return [table(header, rows, "accel compare's CPU arm against plain python SCRIPT"),
            para("Measured on: " + "; ".join(sorted({r.machine for r in results})))]  # fmt: skip


def render_dask_overhead(result: Result) -> list[nodes.Node]:
    d = result.fields
    cluster = d.get("cluster") or {}
    med = d.get("median_seconds") or {}
    auc = d.get("auc") or {}
    by_impl = {r.get("impl"): r for r in d.get("rows") or []}
    header = ["", "seconds", "load", "features", "to_device", "train", "predict", "AUC"]
    rows = []
    for impl in ("single-process", "dask"):
        stages = (by_impl.get(impl) or {}).get("stages") or {}
        rows.append([impl, secs(med.get(impl)), *(secs(stages.get(s)) for s in ("load", "features", "to_device", "train", "predict")),
                     metric(auc.get(impl))])  # fmt: skip
    data = d.get("data") or {}
    table_rows = (data.get("schema") or {}).get("rows_in_file")
    # A user's table is named by its rows (files written before the record's workflow was the
    # table's name say "single-process" or "dask" there); flights by its scale.
    what = f"a table of {table_rows:,} rows" if table_rows else f"{d.get('workflow')} ×{data.get('scale')}"
    if table_rows and d.get("text_width"):
        what += f" (mostly text: three columns of {d['text_width']} characters)"
    caption = (
        f"Dask against one process, {what}, "
        f"{cluster.get('workers')} workers × {cluster.get('threads_per_worker')} thread(s) against "
        f"{d.get('single_process_threads')} threads"
    )
    extra = (f"wall ratio {ratio(d.get('ratio'))}, {ratio(d.get('ratio_with_startup'))} with the cluster's "
             f"start-up ({secs(d.get('cluster_startup_seconds'))} s)")  # fmt: skip
    limit = cluster.get("memory_limit")
    if d.get("worker_memory") and limit:
        # The heartbeats' peaks: each worker's RSS peak in files written before it was read
        # from VmHWM carried the spawning process's peak (ru_maxrss).
        heard = [m.get("dask_reported_peak_host_mb") for m in (by_impl.get("dask") or {}).get("workers_memory", {}).values()]
        heard = [h for h in heard if h is not None]
        table_bytes = d.get("table_memory_bytes")
        extra += (
            f"; each worker limited to {mb(limit / 1e6)} MB"
            + (
                f", the table {mb(table_bytes / 1e6)} MB in memory ({table_bytes / limit:.1f} × a worker's limit)"
                if table_bytes
                else ""
            )
            + (f", largest worker peak in Dask's heartbeats {mb(max(heard) * 2**20 / 1e6)} MB" if heard else "")
            + (f", {len(d['workers_joined_during_run'])} worker(s) restarted" if d.get("workers_joined_during_run") else "")
        )
    return [table(header, rows, caption), source(result, extra)]


def render_groupby_overhead(result: Result) -> list[nodes.Node]:
    d = result.fields
    header = ["q", "question", "accel median s", "plain median s", "ratio", "fastest / fastest", "checksums equal"]
    rows = [
        [q.get("question"), q.get("title"), secs(q.get("accel_median")), secs(q.get("plain_median")), ratio(q.get("ratio"), 2),
         ratio(q.get("ratio_min"), 2), text(q.get("checksums_equal"))]
        for q in d.get("questions") or []
    ]  # fmt: skip
    caption = (f"accel's pandas arm against db-benchmark's pandas solution, {count(d.get('rows'))} rows, "
               f"K={d.get('k')}, {d.get('repeats')} alternating repeats")  # fmt: skip
    return [table(header, rows, caption), source(result)]


def render_hpo(result: Result) -> list[nodes.Node]:
    d = result.fields
    header = ["run", "trials", "subset", "trial rounds", "complete", "pruned", "wall s", "trials s", "default AUC", "tuned AUC"]
    rows = []
    for r in d.get("runs") or []:
        tc = r.get("trial_counts") or {}
        rows.append([r.get("label"), text(r.get("trials")), text(r.get("subset")), text(r.get("trial_rounds")),
                     text(tc.get("complete")), text(tc.get("pruned")), secs(r.get("wall_seconds")),
                     secs((r.get("phases_seconds") or {}).get("trials")), metric(r.get("default_auc")), metric(r.get("tuned_auc"))])  # fmt: skip
    extra = (
        f"arm {d.get('arm')}; OMP_WAIT_POLICY {d.get('omp_wait_policy')}" if d.get("omp_wait_policy") else f"arm {d.get('arm')}"
    )
    return [table(header, rows, "accel hpo flights"), source(result, extra)]


def render_memory(result: Result) -> list[nodes.Node]:
    d = result.fields
    budget = _num(d.get("budget_bytes")) or math.nan
    rows = []
    ch = d.get("chunked_10x") or {}
    if ch:
        rows.append(["chunked features + inference", f"{count(ch.get('rows'))} rows in {ch.get('batches')} batches",
                     f"peak {mb(ch.get('peak_above_start_mb'))} MB above the start = "
                     f"{ratio((_num(ch.get('peak_above_start_mb')) or math.nan) * 1e6 / budget, 2)} × the budget"])  # fmt: skip
    st = d.get("streamed_run_10x") or {}
    if st:
        b = st.get("batches") or {}
        rows.append(["the whole streamed run", f"{count(b.get('rows_total'))} rows in {b.get('batches')} batches",
                     f"{ratio(st.get('ratio_to_budget'), 2)} × the budget, AUC {metric(st.get('auc'))}"])  # fmt: skip
    tp = d.get("throughput") or {}
    if tp:
        rows.append(["ten batches against one piece", f"{count(tp.get('rows'))} rows",
                     "rows per second × " + ", ".join(ratio(x, 2) for x in tp.get("ratio_chunked_to_whole") or [])
                     + f"; predictions equal: {text(tp.get('predictions_equal'))}"])  # fmt: skip
    fp = d.get("fp16_flights") or {}
    if fp:
        rows.append(["float16 storage, flights", "stored bytes / float32 " + ratio(fp.get("ratio")),
                     f"AUC {metric(fp.get('auc_fp16'))} against {metric(fp.get('auc_fp32'))} in float32"])  # fmt: skip
    caption = f"memory, budget {mb(budget / 1e6)} MB, device {d.get('device')}"
    return [table(["measurement", "size", "result"], rows, caption), source(result)]


def render_byo(result: Result) -> list[nodes.Node]:
    header = ["table", "rows", "task", "metric", "accel", "hand-written", "CPU arm s", "train s", "probe chose"]
    rows = [
        [r.get("table"), count(r.get("rows_used")), text(r.get("task")), text(r.get("metric")), metric(r.get("accel")),
         metric(r.get("handwritten")), secs(r.get("accel_seconds_cpu_arm")), secs((r.get("accel_stages") or {}).get("train")),
         text((r.get("encoding_probe") or {}).get("chosen") or "no probe").replace("_", " ")]
        for r in result.fields.get("rows") or []
    ]  # fmt: skip
    return [table(header, rows, "accel run --data against a hand-written pandas + XGBoost script"), source(result)]


def render_default_model(result: Result) -> list[nodes.Node]:
    header = [
        "table",
        "task",
        "metric",
        "accel (mean)",
        "XGBoost defaults (mean)",
        "difference",
        "within target",
        "rounds chosen",
    ]
    rows = [
        [r.get("table"), text(r.get("task")), text(r.get("metric")), metric(r.get("accel_mean")), metric(r.get("defaults_mean")),
         metric(r.get("difference")), "yes" if r.get("ok") else "no",
         ", ".join(text(s.get("rounds_chosen")) for s in r.get("splits") or [])]
        for r in result.fields.get("rows") or []
    ]  # fmt: skip
    label = result.fields.get("label") or "unlabelled"
    caption = f"accel's default model against XGBoost's defaults, mean over splits {result.fields.get('seeds')} ({label})"
    return [table(header, rows, caption), source(result)]


def render_dates(result: Result) -> list[nodes.Node]:
    d = result.fields
    header = ["layout", "kind", "format", "parsed right"]
    rows = [
        [x.get("layout"), text(x.get("kind")), text(x.get("date_format")),
         "—" if _num(x.get("parsed_right")) is None else f"{100 * x['parsed_right']:.0f}%"]
        for x in d.get("layouts") or []
    ]  # fmt: skip
    out: list[nodes.Node] = [table(header, rows, f"dates written as text: {d.get('label')}")]
    us = d.get("us_employment") or {}
    if us.get("cases"):
        rows = [
            [case, text(c.get("format")), metric((c.get("accel") or {}).get("rmse")), metric((c.get("handwritten") or {}).get("rmse")),
             ratio(c.get("rmse_ratio"))]
            for case, c in us["cases"].items()
        ]  # fmt: skip
        cap = f"a us_employment-shaped table, {count(us.get('rows'))} rows, {us.get('series')} series, {us.get('months')} months"
        out.append(table(["case", "format", "RMSE accel", "RMSE hand-written", "ratio"], rows, cap))
    out.append(source(result))
    return out


def render_own_table(result: Result) -> list[nodes.Node]:
    d = result.fields
    header = ["rows", "accel s", "hand-written s", "ratio", "AUC accel", "AUC hand-written", "accel peak RSS MB"]
    rows = []
    for s in d.get("sizes") or []:
        runs = s.get("runs") or []
        acc = [r for r in runs if r.get("impl") == "accel"]
        hand = [r for r in runs if r.get("impl") == "handwritten"]
        auc = s.get("auc") or {}
        rows.append([count(s.get("rows")), ", ".join(secs(r.get("seconds")) for r in acc), ", ".join(secs(r.get("seconds")) for r in hand),
                     ratio(s.get("ratio")), ", ".join(metric(x) for x in auc.get("accel") or []),
                     ", ".join(metric(x) for x in auc.get("handwritten") or []), ", ".join(mb(r.get("peak_rss_mb")) for r in acc)])  # fmt: skip
    out: list[nodes.Node] = []
    if rows:
        out.append(table(header, rows, "your own table, whole process against a hand-written script"))
    budget = d.get("budget_runs") or []
    if budget:
        brows = [
            [text(b.get("table")) if b.get("table") else count(b.get("rows")), text(b.get("budget")),
             "refused before any arm ran" if b.get("refusal") else "ran", mb(b.get("peak_rss_mb")), mb(b.get("limit_mb")),
             text((b.get("batches") or {}).get("training_matrix") or "—"), metric(b.get("auc")),
             metric((b.get("in_memory") or {}).get("auc_diff")), ratio((b.get("in_memory") or {}).get("boosting_ratio"), 2),
             secs(b.get("seconds"))]
            for b in budget
        ]  # fmt: skip
        out.append(table(["table", "--memory-budget", "outcome", "peak RSS MB", "floor + 1.2 × budget MB", "training matrix", "AUC",
                          "AUC − in memory", "boosting streamed / in memory", "seconds"],
                         brows, "the whole run within a memory budget"))  # fmt: skip
    out.append(source(result))
    return out


def render_streamed_bytes(result: Result) -> list[nodes.Node]:
    d = result.fields
    who = {
        "accel": "accel streamed",
        "external": "XGBoost alone, ExtMemQuantileDMatrix",
        "in-memory": "XGBoost alone, QuantileDMatrix",
    }
    header = ["rows", "training rows", "process", "floor MiB", "matrix build B/row", "boosting B/row", "boosting s"]
    rows = []
    for s in d.get("sizes") or []:
        train = _num(s.get("train_rows")) or math.nan
        for key, label in who.items():
            proc = s.get(key) or {}
            ph = proc.get("phases") or {}

            def grown(phase: str) -> str:
                p = ph.get(phase) or {}
                return count(((_num(p.get("peak")) or math.nan) - (_num(p.get("rss_before")) or math.nan)) / train)

            rows.append([count(s.get("rows")), count(train), label, mb((_num(proc.get("floor")) or math.nan) / 2**20),
                         grown("matrix build"), grown("boosting"), secs((ph.get("boosting") or {}).get("seconds"))])  # fmt: skip
    out: list[nodes.Node] = [table(header, rows, "each phase's peak above the RSS at its start, per training row")]
    per = d.get("per_row") or {}
    fits = [[who.get(k, k), phase, count(v.get("bytes_per_row")), ratio(v.get("fixed_mib"), 1)]
            for k, phases in per.items() if k in who for phase, v in phases.items()]  # fmt: skip
    if fits and len(d.get("sizes") or []) > 1:  # a fit needs two sizes at least
        out.append(table(["process", "phase", "B per training row", "fixed MiB"], fits, "least squares over the sizes"))
    pages = per.get("pages") or {}
    ratios = ", ".join(ratio(x, 2) for x in per.get("boosting_ratio_streamed_to_in_memory") or [])
    out.append(para(f"external-memory pages {count(pages.get('bytes_per_row'))} B per training row; XGBoost alone, "
                    f"boosting from external memory / in memory: {ratios or '—'}"))  # fmt: skip
    sweep = [(s.get("rows"), p) for s in d.get("sizes") or [] for p in s.get("page_sweep") or []]
    if sweep:
        srows = []
        for n, p in sweep:
            b = (p.get("phases") or {}).get("boosting") or {}
            srows.append([count(n), count(p.get("page_rows")), mb(((_num(b.get("peak")) or math.nan) - (_num(p.get("floor")) or math.nan)) / 2**20),
                          secs(b.get("seconds"))])  # fmt: skip
        out.append(
            table(["rows", "page rows", "boosting peak above the floor MiB", "boosting s"], srows, "XGBoost alone, page size")
        )
    knobs = [(s.get("rows"), k) for s in d.get("sizes") or [] for k in s.get("knob_sweep") or []]
    if knobs:
        krows = []
        for n, k in knobs:
            b = (k.get("phases") or {}).get("boosting") or {}
            peak = ((_num(b.get("peak")) or math.nan) - (_num(k.get("floor")) or math.nan)) / 2**20
            krows.append([count(n), text(k.get("label")), secs(b.get("seconds")) if not k.get("failed") else "—",
                          ratio(k.get("boosting_to_in_memory"), 2) if not k.get("failed") else "—",
                          mb(peak) if not k.get("failed") else text(k.get("failed"))])  # fmt: skip
        out.append(table(["rows", "XGBoost's setting", "boosting s", "streamed / in memory", "boosting peak above the floor MiB"],
                         krows, "XGBoost alone from external memory, one setting at a time"))  # fmt: skip
    out.append(source(result, f"{d.get('rounds')} rounds, batches of {count(d.get('batch_rows'))} rows"))
    return out


def render_omp(result: Result) -> list[nodes.Node]:
    d = result.fields
    summary = d.get("summary") or {}
    arms = list(d.get("arms") or next(iter(summary.values()), {}).get("median_seconds", {}))
    header = ["condition", *[f"{a} s" for a in arms], *[f"{a} / default" for a in arms if a != "libgomp default"]]
    rows = []
    for cond, s in summary.items():
        med, rel = s.get("median_seconds") or {}, s.get("ratio_over_default") or {}
        rows.append([cond, *[secs(med.get(a)) for a in arms], *[ratio(rel.get(a)) for a in arms if a != "libgomp default"]])
    w = d.get("workload") or {}
    caption = (f"OpenMP idle threads: XGBoost hist, {count(w.get('rows'))} × {w.get('columns')}, {w.get('rounds')} rounds, "
               f"{w.get('nthread')} threads, median of {d.get('repeats')}")  # fmt: skip
    return [table(header, rows, caption), source(result)]


def render_scaling(result: Result) -> list[nodes.Node]:
    rec = result.record
    assert isinstance(rec, ScalingRecord), result.name
    rows = [
        [text(r.kind), text(r.workers), text(r.threads_per_worker), secs(r.seconds), ratio(r.speedup_vs_1, 2),
         ratio(r.efficiency, 2), metric(r.metric)]
        for r in rec.rows
        if r.stage == "total"
    ]  # fmt: skip
    header = ["configuration", "workers", "threads per worker", "seconds", "speedup", "efficiency", rec.metric_name or "metric"]
    return [table(header, rows, f"accel scale {rec.workflow} --cluster {rec.cluster_kind}"), source(result)]


def render_hostile(results: list[Result]) -> list[nodes.Node]:
    """One row per run of the hostile cases: what it ran, the code under test, its counts per verdict.

    A before run (older code) and its after run name the same cases in their labels; the commit is
    the one whose ``accel`` the cases ran against (``code_under_test``, else ``git_sha``).
    """
    verdicts: list[str] = []
    for r in results:
        verdicts += [v for v in r.fields.get("counts") or {} if v not in verdicts]
    shown = [v for v in verdicts if any((r.fields.get("counts") or {}).get(v) for r in results)]
    rows = []
    for r in results:
        d = r.fields
        sha = str((d.get("code_under_test") or {}).get("git_sha") or d.get("git_sha") or "")[:7] or "not recorded"
        counts = d.get("counts") or {}
        rows.append([r.name, text(d.get("label")), sha, str(len(d.get("cases") or [])), *[str(counts.get(v, 0)) for v in shown]])
    caption = "hostile inputs: cases per verdict, each run against the code of its commit"
    return [table(["file", "run", "code under test", "cases", *shown], rows, caption)]


def render_generic(result: Result) -> list[nodes.Node]:
    """Any other result: its top-level numbers and words."""
    rows = [[k, text(v) if not isinstance(v, float) else metric(v)] for k, v in result.fields.items()
            if isinstance(v, (str, int, float, bool)) and k not in ("benchmark", "schema_version", "kind", "run_id")]  # fmt: skip
    return [table(["field", "value"], rows, result.kind), source(result)]


#: Per file: ``kind -> renderer``.
RENDERERS: dict[str, Callable[[Result], list[nodes.Node]]] = {
    "run": render_run,
    "models": render_models,
    "db_groupby": render_db,
    "db_join": render_db,
    "crossover": render_crossover,
    "dask_overhead": render_dask_overhead,
    "groupby_overhead": render_groupby_overhead,
    "hpo_flights": render_hpo,
    "memory": render_memory,
    "byo_tables": render_byo,
    "default_model": render_default_model,
    "dates": render_dates,
    "own_table_speed": render_own_table,
    "streamed_bytes": render_streamed_bytes,
    "omp_wait_policy": render_omp,
    "scaling": render_scaling,
}
#: Kinds whose files make one table together (a row per file).
SUMMARIES: dict[str, Callable[[list[Result]], list[nodes.Node]]] = {
    "flights_overhead": render_flights_overheads,
    "compare_overhead": render_compare_overheads,
    "hostile_cases": render_hostile,
}


def render(kind: str, results: list[Result], gpu: bool | None = None) -> list[nodes.Node]:
    """Every file of ``kind`` (only GPU files, or only the others, when ``gpu`` says so)."""
    chosen = [r for r in results if r.kind == kind and (gpu is None or r.gpu == gpu)]
    if kind in SUMMARIES:
        return SUMMARIES[kind](chosen) if chosen else []
    out: list[nodes.Node] = []
    for r in chosen:
        out.extend(RENDERERS.get(kind, render_generic)(r))
    return out


def render_files(results: list[Result]) -> list[nodes.Node]:
    rows = [[r.name, r.kind, r.date, "yes" if r.gpu else "no", r.machine] for r in results]
    return [
        table(["file", "benchmark", "date", "GPU arm ran on a GPU", "machine"], rows, f"benchmarks/results: {len(results)} files")
    ]


# --------------------------------------------------------------------------- the directive


class ResultsDirective(SphinxDirective):
    """``.. accel-results:: KIND [gpu|cpu]``, ``.. accel-results:: files`` or ``.. accel-results:: other``."""

    required_arguments = 1
    optional_arguments = 1

    def run(self) -> list[nodes.Node]:
        results = load_results()
        for r in results:
            self.env.note_dependency(str(r.path))
        claimed = self.env.temp_data.setdefault("accel_results_claimed", set())
        kind = self.arguments[0]
        gpu = {"gpu": True, "cpu": False}.get(self.arguments[1]) if len(self.arguments) > 1 else None
        if kind == "files":
            return render_files(results)
        if kind == "other":
            out: list[nodes.Node] = []
            for other in sorted({r.kind for r in results} - claimed):
                logger.info("results: no section for benchmark %r, shown as plain fields", other)
                section = nodes.rubric(text=other)
                out.append(section)
                out.extend(render(other, results))
            return out
        claimed.add(kind)
        out = render(kind, results, gpu)
        if not out and not any(r.kind == kind for r in results):
            logger.warning("accel-results: no file in benchmarks/results holds benchmark %r", kind, location=self.get_location())
        return out or [para("No file yet.")]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("accel-results", ResultsDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
