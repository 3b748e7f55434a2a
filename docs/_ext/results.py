"""Measured results, rendered from ``benchmarks/results/*.json`` while the docs build.

``.. accel-results:: KIND`` renders every result file of one benchmark (``models``,
``db_groupby``, ``flights_overhead``, ...; ``run`` for run records) as tables, newest file
first, each table naming its file and the machine it was measured on. ``.. accel-results::
files`` lists every file; ``.. accel-results:: other`` renders, generically, the kinds no
directive before it on the page has claimed, so a new benchmark is never left out.

Each file is read as its typed class: :mod:`accel.record`'s, or for a benchmark script's own
result :mod:`accel_fixtures.result_shapes`'s; a benchmark with neither is shown field by field.
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
from accel_fixtures.result_shapes import (
    ByoTables,
    CompareOverhead,
    DaskOverhead,
    Dates,
    DefaultModel,
    FlightsOverhead,
    GroupbyOverhead,
    HostileCases,
    HpoFlights,
    Memory,
    OmpCondition,
    OmpWaitPolicy,
    OwnTableSpeed,
    Phase,
    Process,
    StreamedBytes,
    Sweep,
    typed,
)  # fmt: skip

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
        self.record: Record = typed(read_record(path))
        # Which benchmark; else the record's kind (``run``, ``scaling``).
        self.kind = self.record.benchmark if isinstance(self.record, BenchRecord) else self.record.kind
        self.gpu = bool(GPU_FILE.search(self.name))
        m = DATE.match(self.name)
        self.date = m.group(1) if m else ""

    @functools.cached_property
    def fields(self) -> dict[str, Any]:
        """The fields of a result no class names (a benchmark with no section of its own), as the file holds them."""
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
    r = result.record
    assert isinstance(r, FlightsOverhead), result.name
    med, auc = r.median_seconds, r.auc
    return [
        result.name, text(r.mode or "in process"), text(r.repeats), secs(med.accel), secs(med.handwritten), ratio(r.ratio),
        ratio(r.ratio_paired_median), ratio(r.ratio_fastest), metric(auc.accel), metric(auc.handwritten),
    ]  # fmt: skip


def render_flights_overheads(results: list[Result]) -> list[nodes.Node]:
    header = ["file", "mode", "repeats", "accel median s", "hand-written median s", "ratio of medians",
              "median of paired ratios", "fastest / fastest", "AUC accel", "AUC hand-written"]  # fmt: skip
    machines = sorted({r.machine for r in results})
    return [table(header, [_overhead_row(r) for r in results], "accel run flights (CPU arm) against a hand-written script"),
            para("Measured on: " + "; ".join(machines))]  # fmt: skip


def render_compare_overheads(results: list[Result]) -> list[nodes.Node]:
    header = ["file", "script", "repeats", "ratio of medians", "median of paired ratios"]
    typed_ = [(r.name, r.record) for r in results if isinstance(r.record, CompareOverhead)]
    rows = [
        [name, " ".join([str(c.script), *map(str, c.script_args)]), text(c.repeats), ratio(c.ratio), ratio(c.ratio_paired_median)]
        for name, c in typed_
    ]
    return [table(header, rows, "accel compare's CPU arm against plain python SCRIPT"),
            para("Measured on: " + "; ".join(sorted({r.machine for r in results})))]  # fmt: skip


def render_dask_overhead(result: Result) -> list[nodes.Node]:
    d = result.record
    assert isinstance(d, DaskOverhead), result.name
    cluster, med, auc = d.cluster, d.median_seconds, d.auc
    header = ["", "seconds", "load", "features", "to_device", "train", "predict", "AUC"]
    rows = [
        [impl, secs(med.get(impl)), *(secs(d.impl(impl).stages.get(s)) for s in ("load", "features", "to_device", "train", "predict")),
         metric(auc.get(impl))]
        for impl in ("single-process", "dask")
    ]  # fmt: skip
    table_rows = d.data.table_schema.rows_in_file
    # A user's table is named by its rows (files written before the record's workflow was the
    # table's name say "single-process" or "dask" there); flights by its scale.
    what = f"a table of {table_rows:,} rows" if table_rows else f"{d.workflow} ×{d.data.scale}"
    if table_rows and d.text_width:
        what += f" (mostly text: three columns of {d.text_width} characters)"
    caption = (
        f"Dask against one process, {what}, {cluster.workers} workers × {cluster.threads_per_worker} thread(s) against "
        f"{d.single_process_threads} threads"
    )
    extra = (f"wall ratio {ratio(d.ratio)}, {ratio(d.ratio_with_startup)} with the cluster's "
             f"start-up ({secs(d.cluster_startup_seconds)} s)")  # fmt: skip
    limit = cluster.memory_limit
    if d.worker_memory and limit:
        # The heartbeats' peaks: each worker's RSS peak in files written before it was read
        # from VmHWM carried the spawning process's peak (ru_maxrss).
        heard = [m.dask_reported_peak_host_mb for m in d.impl("dask").workers_memory.values()]
        heard = [h for h in heard if h is not None]
        table_bytes = d.table_memory_bytes
        extra += (
            f"; each worker limited to {mb(limit / 1e6)} MB"
            + (f", the table {mb(table_bytes / 1e6)} MB in memory ({table_bytes / limit:.1f} × a worker's limit)" if table_bytes else "")
            + (f", largest worker peak in Dask's heartbeats {mb(max(heard) * 2**20 / 1e6)} MB" if heard else "")
            + (f", {len(d.workers_joined_during_run)} worker(s) restarted" if d.workers_joined_during_run else "")
        )  # fmt: skip
    return [table(header, rows, caption), source(result, extra)]


def render_groupby_overhead(result: Result) -> list[nodes.Node]:
    d = result.record
    assert isinstance(d, GroupbyOverhead), result.name
    header = ["q", "question", "accel median s", "plain median s", "ratio", "fastest / fastest", "checksums equal"]
    rows = [
        [q.question, q.title, secs(q.accel_median), secs(q.plain_median), ratio(q.ratio, 2), ratio(q.ratio_min, 2),
         text(q.checksums_equal)]
        for q in d.questions
    ]  # fmt: skip
    caption = f"accel's pandas arm against db-benchmark's pandas solution, {count(d.rows)} rows, K={d.k}, {d.repeats} alternating repeats"
    return [table(header, rows, caption), source(result)]


def render_hpo(result: Result) -> list[nodes.Node]:
    d = result.record
    assert isinstance(d, HpoFlights), result.name
    header = ["run", "trials", "subset", "trial rounds", "complete", "pruned", "wall s", "trials s", "default AUC", "tuned AUC"]
    rows = [
        [r.label, text(r.trials), text(r.subset), text(r.trial_rounds), text(r.trial_counts.complete), text(r.trial_counts.pruned),
         secs(r.wall_seconds), secs(r.phases_seconds.get("trials")), metric(r.default_auc), metric(r.tuned_auc)]
        for r in d.runs
    ]  # fmt: skip
    extra = f"arm {d.arm}; OMP_WAIT_POLICY {d.omp_wait_policy}" if d.omp_wait_policy else f"arm {d.arm}"
    return [table(header, rows, "accel hpo flights"), source(result, extra)]


def render_memory(result: Result) -> list[nodes.Node]:
    d = result.record
    assert isinstance(d, Memory), result.name
    budget = _num(d.budget_bytes) or math.nan
    rows = []
    if ch := d.chunked_10x:
        rows.append(["chunked features + inference", f"{count(ch.rows)} rows in {ch.batches} batches",
                     f"peak {mb(ch.peak_above_start_mb)} MB above the start = "
                     f"{ratio((_num(ch.peak_above_start_mb) or math.nan) * 1e6 / budget, 2)} × the budget"])  # fmt: skip
    if st := d.streamed_run_10x:
        rows.append(["the whole streamed run", f"{count(st.batches.rows_total)} rows in {st.batches.batches} batches",
                     f"{ratio(st.ratio_to_budget, 2)} × the budget, AUC {metric(st.auc)}"])  # fmt: skip
    if tp := d.throughput:
        rows.append(["ten batches against one piece", f"{count(tp.rows)} rows",
                     "rows per second × " + ", ".join(ratio(x, 2) for x in tp.ratio_chunked_to_whole)
                     + f"; predictions equal: {text(tp.predictions_equal)}"])  # fmt: skip
    if fp := d.fp16_flights:
        rows.append(["float16 storage, flights", "stored bytes / float32 " + ratio(fp.ratio),
                     f"AUC {metric(fp.auc_fp16)} against {metric(fp.auc_fp32)} in float32"])  # fmt: skip
    caption = f"memory, budget {mb(budget / 1e6)} MB, device {d.device}"
    return [table(["measurement", "size", "result"], rows, caption), source(result)]


def render_byo(result: Result) -> list[nodes.Node]:
    d = result.record
    assert isinstance(d, ByoTables), result.name
    header = ["table", "rows", "task", "metric", "accel", "hand-written", "CPU arm s", "train s", "probe chose"]
    rows = [
        [r.table, count(r.rows_used), text(r.task), text(r.metric), metric(r.accel), metric(r.handwritten),
         secs(r.accel_seconds_cpu_arm), secs(r.accel_stages.get("train")),
         text((r.encoding_probe.chosen if r.encoding_probe else None) or "no probe").replace("_", " ")]
        for r in d.rows
    ]  # fmt: skip
    return [table(header, rows, "accel run --data against a hand-written pandas + XGBoost script"), source(result)]


def render_default_model(result: Result) -> list[nodes.Node]:
    d = result.record
    assert isinstance(d, DefaultModel), result.name
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
        [r.table, text(r.task), text(r.metric), metric(r.accel_mean), metric(r.defaults_mean), metric(r.difference),
         "yes" if r.ok else "no", ", ".join(text(s.rounds_chosen) for s in r.splits)]
        for r in d.rows
    ]  # fmt: skip
    caption = f"accel's default model against XGBoost's defaults, mean over splits {d.seeds} ({d.label or 'unlabelled'})"
    return [table(header, rows, caption), source(result)]


def render_dates(result: Result) -> list[nodes.Node]:
    d = result.record
    assert isinstance(d, Dates), result.name
    header = ["layout", "kind", "format", "parsed right"]
    rows = [
        [
            x.layout,
            text(x.kind),
            text(x.date_format),
            "—" if _num(x.parsed_right) is None else f"{100 * (x.parsed_right or 0):.0f}%",
        ]
        for x in d.layouts
    ]
    out: list[nodes.Node] = [table(header, rows, f"dates written as text: {d.label}")]
    us = d.us_employment
    if us.cases:
        rows = [
            [case, text(c.format), metric(c.accel.rmse), metric(c.handwritten.rmse), ratio(c.rmse_ratio)]
            for case, c in us.cases.items()
        ]
        cap = f"a us_employment-shaped table, {count(us.rows)} rows, {us.series} series, {us.months} months"
        out.append(table(["case", "format", "RMSE accel", "RMSE hand-written", "ratio"], rows, cap))
    out.append(source(result))
    return out


def render_own_table(result: Result) -> list[nodes.Node]:
    d = result.record
    assert isinstance(d, OwnTableSpeed), result.name
    header = ["rows", "accel s", "hand-written s", "ratio", "AUC accel", "AUC hand-written", "accel peak RSS MB"]
    rows = [
        [count(s.rows), ", ".join(secs(r.seconds) for r in s.of("accel")), ", ".join(secs(r.seconds) for r in s.of("handwritten")),
         ratio(s.ratio), ", ".join(metric(x) for x in s.auc.get("accel") or []),
         ", ".join(metric(x) for x in s.auc.get("handwritten") or []), ", ".join(mb(r.peak_rss_mb) for r in s.of("accel"))]
        for s in d.sizes
    ]  # fmt: skip
    out: list[nodes.Node] = []
    if rows:
        out.append(table(header, rows, "your own table, whole process against a hand-written script"))
    if d.budget_runs:
        brows = [
            [text(b.table) if b.table else count(b.rows), text(b.budget), "refused before any arm ran" if b.refusal else "ran",
             mb(b.peak_rss_mb), mb(b.limit_mb), text(b.batches.get("training_matrix") or "—"), metric(b.auc),
             metric(b.in_memory.auc_diff), ratio(b.in_memory.boosting_ratio, 2), secs(b.seconds)]
            for b in d.budget_runs
        ]  # fmt: skip
        out.append(table(["table", "--memory-budget", "outcome", "peak RSS MB", "floor + 1.2 × budget MB", "training matrix", "AUC",
                          "AUC − in memory", "boosting streamed / in memory", "seconds"],
                         brows, "the whole run within a memory budget"))  # fmt: skip
    out.append(source(result))
    return out


def render_streamed_bytes(result: Result) -> list[nodes.Node]:
    d = result.record
    assert isinstance(d, StreamedBytes), result.name
    who = {
        "accel": "accel streamed",
        "external": "XGBoost alone, ExtMemQuantileDMatrix",
        "in_memory": "XGBoost alone, QuantileDMatrix",
    }
    header = ["rows", "training rows", "process", "floor MiB", "matrix build B/row", "boosting B/row", "boosting s"]
    rows = []
    for s in d.sizes:
        train = _num(s.train_rows) or math.nan
        for key, label in who.items():
            proc: Process = getattr(s, key)
            rows.append([count(s.rows), count(train), label, mb((_num(proc.floor) or math.nan) / 2**20),
                         count(proc.grown("matrix build") / train), count(proc.grown("boosting") / train),
                         secs((proc.phases.get("boosting") or Phase()).seconds)])  # fmt: skip
    out: list[nodes.Node] = [table(header, rows, "each phase's peak above the RSS at its start, per training row")]
    per = d.per_row
    fits = [[label, phase, count(v.bytes_per_row), ratio(v.fixed_mib, 1)] for key, label in who.items()
            for phase, v in getattr(per, key).items()]  # fmt: skip
    if fits and len(d.sizes) > 1:  # a fit needs two sizes at least
        out.append(table(["process", "phase", "B per training row", "fixed MiB"], fits, "least squares over the sizes"))
    ratios = ", ".join(ratio(x, 2) for x in per.boosting_ratio_streamed_to_in_memory)
    out.append(para(f"external-memory pages {count(per.pages.bytes_per_row)} B per training row; XGBoost alone, "
                    f"boosting from external memory / in memory: {ratios or '—'}"))  # fmt: skip

    def above_floor(p: Sweep) -> float:
        return ((_num((p.phases.get("boosting") or Phase()).peak) or math.nan) - (_num(p.floor) or math.nan)) / 2**20

    if sweep := [(s.rows, p) for s in d.sizes for p in s.page_sweep]:
        srows = [
            [count(n), count(p.page_rows), mb(above_floor(p)), secs((p.phases.get("boosting") or Phase()).seconds)]
            for n, p in sweep
        ]
        out.append(
            table(["rows", "page rows", "boosting peak above the floor MiB", "boosting s"], srows, "XGBoost alone, page size")
        )
    if knobs := [(s.rows, k) for s in d.sizes for k in s.knob_sweep]:
        krows = [
            [count(n), text(k.label), secs((k.phases.get("boosting") or Phase()).seconds) if not k.failed else "—",
             ratio(k.boosting_to_in_memory, 2) if not k.failed else "—", mb(above_floor(k)) if not k.failed else text(k.failed)]
            for n, k in knobs
        ]  # fmt: skip
        out.append(table(["rows", "XGBoost's setting", "boosting s", "streamed / in memory", "boosting peak above the floor MiB"],
                         krows, "XGBoost alone from external memory, one setting at a time"))  # fmt: skip
    out.append(source(result, f"{d.rounds} rounds, batches of {count(d.batch_rows)} rows"))
    return out


def render_omp(result: Result) -> list[nodes.Node]:
    d = result.record
    assert isinstance(d, OmpWaitPolicy), result.name
    arms = list(d.arms or next(iter(d.conditions.values()), OmpCondition()).median_seconds)
    header = ["condition", *[f"{a} s" for a in arms], *[f"{a} / default" for a in arms if a != "libgomp default"]]
    rows = [
        [
            cond,
            *[secs(s.median_seconds.get(a)) for a in arms],
            *[ratio(s.ratio_over_default.get(a)) for a in arms if a != "libgomp default"],
        ]
        for cond, s in d.conditions.items()
    ]
    w = d.workload
    caption = (f"OpenMP idle threads: XGBoost hist, {count(w.rows)} × {w.columns}, {w.rounds} rounds, "
               f"{w.nthread} threads, median of {d.repeats}")  # fmt: skip
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
    runs = [(r.name, r.record) for r in results if isinstance(r.record, HostileCases)]
    verdicts = list(dict.fromkeys(v for _, h in runs for v in h.counts))
    shown = [v for v in verdicts if any(h.counts.get(v) for _, h in runs)]
    rows = [
        [name, text(h.label), h.commit or "not recorded", str(len(h.cases)), *[str(h.counts.get(v, 0)) for v in shown]]
        for name, h in runs
    ]
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
