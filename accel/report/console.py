"""What the user sees: live progress on stderr, then tables on stdout.

On a terminal, progress is a live panel (what runs, its stage, elapsed seconds, boosting rounds
done and the time left, host RSS, device memory) that the memory monitor refreshes; elsewhere
(a log, CI) it is one plain line per finished stage, and a line every
:data:`PROGRESS_EVERY_S` seconds while a long stage boosts. Every line names what it belongs to:
the arm (``[cpu]``), or the configuration a command runs several of (``[2 workers]`` in
``accel scale``, ``[default baseline]`` in ``accel hpo``).
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from accel.memory import MB
from accel.record import (
    ARMS,
    Arm,
    ArmWall,
    CompareArm,
    CompareRecord,
    ModelInfo,
    PairedRecord,
    PredictRecord,
    Printed,
    RunArm,
    RunParity,
    RunRecord,
    ScalingRecord,
    ScalingRow,
    Wall,
    WorkerMemory,
    number,
    scaling_label,
)  # fmt: skip
from accel.report.overview import ARM_NAMES
from accel.timing import EXTRA_STAGES, STAGES

#: Outside a terminal, a running stage that boosts says how far it is at most this often.
PROGRESS_EVERY_S = 10.0


def _table(
    title: str, left: Sequence[str], right: Sequence[str] = (), rows: Iterable[Sequence[str]] = (), fold: bool = False
) -> Table:
    """A table titled at the left: the ``left`` columns, then the ``right``-justified ones; ``rows``.
    With ``fold``, the ``left`` columns are never wrapped and the ``right`` ones fold where narrow."""
    table = Table(title=title, title_justify="left")
    for col in left:
        table.add_column(col, no_wrap=fold)
    for col in right:
        table.add_column(col, justify="right", overflow="fold" if fold else "ellipsis")
    for row in rows:
        table.add_row(*row)
    return table


def _fmt_mb(value: float | None) -> str:
    return "—" if value is None else (f"{value / 1024:.2f} GB" if value >= 1024 else f"{value:.0f} MB")


def fmt_eta(seconds: float) -> str:
    """``"8 s"``, ``"2 min 05 s"``: the time left, to the second."""
    whole = max(0, int(round(seconds)))
    return f"{whole} s" if whole < 90 else f"{whole // 60} min {whole % 60:02d} s"


#: Boosting rounds of the running stage: the first seen and when, the last seen and when, the total.
_Rounds = tuple[int, float, int, float, int]


def _rounds_text(rounds: _Rounds, now: float) -> str:
    """``round 47/180 · ETA 2 min 33 s``: the seconds left at ``now`` are the rounds left at the
    pace since the first round seen (no ETA before two rounds)."""
    first, first_at, done, at, total = rounds
    if done <= first:
        return f"round {done}/{total}"
    per_round = (at - first_at) / (done - first)
    return f"round {done}/{total} · ETA {fmt_eta(max(0.0, per_round * (total - done) - (now - at)))}"


class ProgressDisplay:
    """A :class:`~accel.result.Listener` that shows the run as it goes.

    Parameters
    ----------
    console : rich.console.Console, optional
        Where it is shown (default: stderr).
    live : bool, optional
        A live panel (default: when the console is a terminal), or plain lines. A run whose
        Dask workers write to the same terminal (their logs, XGBoost's tracker) takes plain
        lines: a live panel redraws over lines it did not write, repeating and mixing its own.

    With ``--quiet`` (:func:`accel.output.quiet`) it shows nothing.
    """

    def __init__(self, console: Console | None = None, live: bool | None = None):
        from accel.output import quiet

        self.console = console or Console(stderr=True)
        self.silent = quiet()
        self.live_mode = not self.silent and (self.console.is_terminal if live is None else live)
        self._lock = threading.Lock()
        self._label: str | None = None
        self._arm: str | None = None
        self._in_arm = False
        self._stage: str | None = None
        self._stage_start = 0.0
        self._rounds: _Rounds | None = None
        self._said_at = 0.0
        self._host = 0
        self._device: int | None = None
        self._stage_peak_host = 0
        self._stage_peak_device: int | None = None
        self._done: list[tuple[str, str, float]] = []
        self._live: Live | None = None

    def _say(self, line: str) -> None:
        """A plain line (none with a live panel or with ``--quiet``)."""
        if not (self.silent or self.live_mode):
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)

    def _start_live(self) -> None:
        if self.live_mode and self._live is None:
            self._live = Live(self, console=self.console, refresh_per_second=8, transient=True)
            self._live.start()

    # -- Listener
    def section(self, label: str | None) -> None:
        """What follows belongs to ``label``: its lines carry it, and the live panel starts afresh."""
        with self._lock:
            self._label = label
            self._done = []

    def arm_started(self, arm: str, stages: tuple[str, ...] = STAGES) -> None:
        with self._lock:
            self._arm, self._in_arm = arm, True
        self._start_live()
        self._say(f"{self._label or ARM_NAMES.get(arm, arm)}: running {' → '.join(stages)}")

    def stage_started(self, arm: str, stage: str) -> None:
        with self._lock:
            self._arm = arm
            self._stage, self._stage_start = stage, time.perf_counter()
            self._said_at = self._stage_start
            self._rounds = None
            self._stage_peak_host, self._stage_peak_device = 0, None
        self._start_live()

    def rounds(self, arm: str, stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        with self._lock:
            first, first_at = self._rounds[:2] if self._rounds else (done, now)
            self._rounds = (first, first_at, done, now, total)
            line = None
            if not self.live_mode and now - self._said_at >= PROGRESS_EVERY_S and done < total:
                self._said_at = now
                line = f"  [{self._label or arm}] {stage:<9} {now - self._stage_start:8.1f} s  {_rounds_text(self._rounds, now)}"
        if line is not None:
            self._say(line)

    def stage_finished(self, arm: str, stage: str, seconds: float) -> None:
        with self._lock:
            tag = self._label or arm
            self._done.append((tag, stage, seconds))
            self._stage = None
            rounds = self._rounds[2] if self._rounds is not None else None
            self._rounds = None
            peak_host, peak_device = self._stage_peak_host, self._stage_peak_device
        # An arm's stages are listed as they finish; a stage on its own (the baseline of accel
        # hpo, whose result line follows) is shown only while it runs.
        if self._in_arm:
            done = "" if rounds is None else f"{rounds} rounds, "
            device = "" if peak_device is None else f", device {_fmt_mb(peak_device / MB)}"
            self._say(f"  [{tag}] {stage:<9} {seconds:8.2f} s  ({done}peak host {_fmt_mb(peak_host / MB)}{device})")

    def memory(self, host_bytes: int, device_bytes: int | None) -> None:
        with self._lock:
            self._host, self._device = host_bytes, device_bytes
            self._stage_peak_host = max(self._stage_peak_host, host_bytes)
            if device_bytes is not None:
                self._stage_peak_device = max(self._stage_peak_device or 0, device_bytes)

    def arm_finished(self, arm: str, status: str) -> None:
        with self._lock:
            self._in_arm = False
        self._say(f"{self._label or ARM_NAMES.get(arm, arm)}: {status}")

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    # -- live rendering
    def __rich__(self) -> Any:
        now = time.perf_counter()
        with self._lock:
            lines = [Text(f"✓ [{tag}] {s:<9} {sec:7.2f} s", style="dim") for tag, s, sec in self._done]
            if self._arm and self._stage:
                elapsed = now - self._stage_start
                rounds = "" if self._rounds is None else f" · {_rounds_text(self._rounds, now)}"
                host = f" · host {_fmt_mb(self._host / MB)}" if self._host else ""
                device = "" if self._device is None else f" · device {_fmt_mb(self._device / MB)}"
                running = f"▶ [{self._label or self._arm}] {self._stage:<9} {elapsed:7.1f} s{rounds}{host}{device}"
                lines.append(Text(running, style="bold"))
        return Group(*lines)


def wide_console(width: int) -> Console:
    """A console as wide as the terminal, or ``width`` columns where stdout is not one (a file, a
    pipe: Rich would draw 80 columns, too few for the wider tables)."""
    import sys

    return Console() if sys.stdout.isatty() else Console(width=width)


def fmt_value(value: float | None, spec: str, unit: str = "", missing: str = "—") -> str:
    """``value`` as ``spec`` with ``unit``; ``missing`` where there is none (None or NaN)."""
    return missing if value is None or math.isnan(value) else f"{value:{spec}}{unit}"


def arm_status_line(name: str, arm: Arm) -> str:
    """``GPU arm skipped: GPU unavailable: no CUDA driver (...)``: an arm's status and its reason,
    in the record's words (:func:`accel.backend.gpu_unavailable`), once."""
    return f"{name.upper()} arm {arm.status}: {arm.reason or 'no reason recorded'}"


def wall_line(wall: Wall) -> str:
    """``wall 21.3 s = start-up 1.9 + planning 0.4 (...) + ... + outside these 0.2 (1%)``."""
    parts, planning = wall.parts, wall.planning
    plan_detail = ", ".join(
        f"{label} {planning[key]:.2f}"
        for key, label in (("read_on_host", "read"), ("schema_inference", "schema"))
        if key in planning
    )
    probe = f" + encoding probe {parts['encoding_probe']:.2f}" if parts.get("encoding_probe") else ""

    def arm_part(arm: str, a: ArmWall) -> str:
        startup = f"cluster start-up {a.cluster_startup:.2f}, " if a.cluster_startup is not None else ""
        search = f", early-stopping search {a.rounds_search:.2f}" if a.rounds_search is not None else ""
        return f"{arm.upper()} arm {a.wall:.2f} ({startup}stages {a.stages:.2f}{search})"

    arms = " + ".join(arm_part(arm, a) for arm, a in wall.arms.items())
    return (
        f"wall {wall.process_seconds:.2f} s = start-up {parts['start_up']:.2f} + planning {parts['planning']:.2f}"
        + (f" ({plan_detail})" if plan_detail else "")
        + probe
        + f" + environment {parts['environment']:.2f} + batch plans {parts['batch_plan']:.2f} + {arms}"
        + f" + outside these {wall.unaccounted_seconds:.2f} ({wall.unaccounted_seconds / (wall.process_seconds or 1.0):.0%})"
    )


def stage_table(title: str, record: PairedRecord) -> Table:
    """Seconds per stage of both arms and the speedup (the stages either arm timed, then the total)."""
    gpu, cpu = record.arms["gpu"], record.arms["cpu"]
    stages = list(dict.fromkeys([*gpu.stages, *cpu.stages])) or list(STAGES)
    rows = [
        [stage, *(fmt_value(arm.total_seconds if stage == "total" else arm.stages.get(stage), ".2f") if arm.ok else str(arm.status)
                  for arm in (gpu, cpu)), fmt_value(record.speedup.get(stage), ".1f", "×", "n/a")]
        for stage in (*stages, "total")
    ]  # fmt: skip
    table = _table(title, ["stage"], ["GPU arm (s)", "CPU arm (s)", "speedup"], rows)
    table.rows[-1].style = "bold"
    if any(s in EXTRA_STAGES for s in stages):
        table.caption = "explain: the model's importances (SHAP), timed apart from the total"
    return table


def parity_line(parity: RunParity) -> str:
    """``parity: auc GPU 0.8046 vs CPU 0.8051 — arms agree (tolerance 0.01)``, or why it was not checked."""
    if parity.ok is None:
        return f"parity: not checked ({parity.metric} needs both arms)"
    verdict = "agree" if parity.ok else "DISAGREE"
    return f"parity: {parity.metric} GPU {parity.gpu:.4f} vs CPU {parity.cpu:.4f} — arms {verdict} (tolerance {parity.tolerance})"


def render_run(record: RunRecord, console: Console) -> None:
    """Stage × arm seconds with the speedup, then metrics and memory per arm, where a cluster run's
    arms ran, then the top 10 features of the accelerated arm's model where it ran, else the CPU arm's."""
    line = functools.partial(console.print, highlight=False, markup=False, soft_wrap=True)
    gpu, cpu = record.arms["gpu"], record.arms["cpu"]
    console.print(stage_table(f"accel run {record.workflow} — seconds per stage", record))
    if not gpu.ok:
        line(arm_status_line("gpu", gpu))
    if record.wall:
        line(wall_line(record.wall))

    rows = [[name, *(fmt_value(arm.metrics.get(name) if arm.ok else None, ".4f") for arm in (gpu, cpu))]
            for name in cpu.metrics or gpu.metrics]  # fmt: skip
    rows += [["device used", str(gpu.device_used or "—"), str(cpu.device_used or "—")],
             ["peak host RSS", _fmt_mb(gpu.peak_host_mb), _fmt_mb(cpu.peak_host_mb)],
             ["peak device memory", _fmt_mb(gpu.peak_device_mb), "—"]]  # fmt: skip
    console.print(_table("hold-out metrics and memory", [""], ["GPU arm", "CPU arm"], rows))

    for note in run_notes(record):
        line(note)
    console.print(parity_line(record.parity), highlight=False, markup=False)
    if cpu.status == "failed":
        line(arm_status_line("cpu", cpu))
    if any(arm.cluster for arm in record.arms.values()):
        render_placement(record, console)
    # The top features of the arm whose pipeline a user would take (the accelerated arm's where it ran).
    if (arm := next((a for a in record.ran() if record.arms[a].importances), None)) is not None:
        found = record.arms[arm].importances or {}
        kinds = list(found)
        order = sorted(found[kinds[-1]], key=lambda name: -abs(found[kinds[-1]][name] or 0.0))[:10]
        rows = [[escape(shown_name(name)), *(f"{found[k].get(name) or 0.0:.4g}" for k in kinds)] for name in order]
        title = f"top {len(order)} features ({arm.upper()} arm's model)"
        console.print(_table(title, ["feature"], [k.replace("_", " ") for k in kinds], rows))


def render_placement(record: RunRecord, console: Console) -> None:
    """Where each arm of a cluster run ran: its cluster, each worker's memory peak, and a retried training."""
    line = functools.partial(console.print, highlight=False, markup=False)
    for kind in ARMS:
        arm = record.arms[kind]
        cluster = arm.cluster
        if arm.status == "skipped":
            continue
        if cluster is None:
            line(f"{kind.upper()} arm: in this process — {arm.placement_note or ''}")
            continue
        line(
            f"{kind.upper()} arm: {cluster.workers} {str(cluster.worker_kind).upper()} Dask worker(s) at {cluster.address}; "
            f"device used {arm.device_used}; cluster start-up {fmt_value(cluster.startup_seconds, '.1f')} s"
        )
        if joined := cluster.workers_joined_during_run:
            line(
                f"{len(joined)} worker(s) joined during the run: the Nanny restarts a worker that passes 95% of its "
                "memory limit (or dies) and Dask recomputes its partitions; raise --worker-memory to avoid the rework"
            )
        if len(attempts := arm.train_attempts) > 1:
            line(
                f"training retried: attempt 1 lost {len(attempts[0].lost_workers)} worker(s) ({attempts[0].reason}); "
                f"attempt 2 ran on {attempts[-1].workers}"
            )
        rows = [
            [w.address, str(w.nthreads), *(fmt_value(v, ".0f") for v in (limit / 1e6 if limit else None, m.peak_rss_mb,
                                                                         m.dask_reported_peak_device_mb))]
            for w in cluster.worker_details for m, limit in [(w.memory or WorkerMemory(), w.memory_limit_bytes)]
        ]  # fmt: skip
        header = ["threads", "memory limit (MB)", "peak RSS (MB)", "peak device (MB)"]
        workers = _table(f"{kind.upper()} arm's workers", ["worker"], header, rows, fold=True)
        # The address tells the workers apart: never cut; the numbers' headers wrap instead.
        workers.columns[0].min_width = max((len(w.address) for w in cluster.worker_details), default=6)
        console.print(workers)


def render_compare(record: CompareRecord, console: Console) -> None:
    """Print the compare record: each arm's status, exit code, cold and warm seconds and memory peaks,
    why an arm did not run, the speedup, whether the arms agree (and the first lines where they
    differ), where the GPU arm's time went per function as the accelerators' profilers saw it."""
    rows = [
        [name, "skipped", "", "", "", "", ""] if r.status == "skipped" else
        [name, str(r.status), str(r.exit_code), fmt_value(r.cold_seconds, ".2f"),
         f"{fmt_value(w.median, '.2f')} ({fmt_value(w.min, '.2f')}-{fmt_value(w.max, '.2f')})" if (w := r.warm) else "-",
         fmt_value(r.peak_host_mb, ".0f"), fmt_value(r.peak_device_mb, ".0f", missing="-")]
        for name in ("cpu", "gpu") for r in [record.arms.get(name) or CompareArm()]
    ]  # fmt: skip
    header = ["exit", "cold s", "warm median s (min-max)", "peak RSS MB", "peak device MB"]
    console.print(_table(f"accel compare {escape(str(record.program.path))}", ["arm", "status"], header, rows))
    for name in ("cpu", "gpu"):
        if not (arm := record.arms.get(name) or CompareArm()).ok and arm.reason:
            console.print(escape(arm_status_line(name, arm)))
    cold, warm = record.speedup.get("wall_cold"), record.speedup.get("wall_warm_median")
    if number(cold):
        console.print(f"speedup (CPU / GPU wall): cold {cold:.2f}x" + (f", warm median {warm:.2f}x" if number(warm) else ""))
    parity = record.parity
    if parity.agree is None:
        console.print(f"parity: not compared ({escape(str(parity.reason))})")
    else:
        s = parity.stdout or Printed()
        console.print(
            f"parity: {'agree' if parity.agree else 'DIFFER'} - stdout {s.numbers_agree}/{s.numbers_compared} numbers "
            f"within rtol {parity.rtol:g}, {s.differences_total} line(s) differ; files: "
            + escape(", ".join(f"{f.path} {f.status}" for f in parity.files) or "none written")
        )
        for d in s.differences[:5]:
            console.print(f"  line {d.line}: {d.why}: cpu {d.cpu!r} | gpu {d.gpu!r}", markup=False)
    if record.fallbacks:
        rows = [[str(f.accelerator), escape(str(f.function)), str(f.gpu_calls), fmt_value(f.gpu_seconds, ".3f"), str(f.cpu_calls),
                 fmt_value(f.cpu_seconds, ".3f"), escape("; ".join(f.fallback_reasons)[:80])] for f in record.fallbacks]  # fmt: skip
        title = "where the GPU arm's time went (the accelerators' profilers; CPU fallbacks first)"
        console.print(_table(title, ["accelerator", "function", "GPU calls", "GPU s", "CPU calls", "CPU s", "why CPU"], [], rows))


def render_scaling(record: ScalingRecord, console: Console) -> None:
    """Stages down, configurations across: seconds, then speedup, efficiency, GPU vs CPU and the metric."""
    runs = record.runs
    arms = [run.arm or RunArm() for run in runs]

    def cells(stage: str, show: Callable[[ScalingRow], str]) -> list[str]:
        rows = [
            next(r for r in record.rows if r.kind == run.kind and r.workers == run.workers and r.stage == stage) for run in runs
        ]
        return [show(row) if arm.ok else str(arm.status) for arm, row in zip(arms, rows)]

    rows = [[f"{stage} (s)", *cells(stage, lambda r: fmt_value(r.seconds, ".2f"))] for stage in (*STAGES, "total")]
    rows.append(["speedup", *cells("total", lambda r: fmt_value(r.speedup_vs_1, ".2f", "×", "n/a"))])
    rows.append(["efficiency", *cells("total", lambda r: fmt_value(r.efficiency, ".2f", "", "n/a"))])
    if "gpu" in {run.kind for run in runs}:
        rows.append(["GPU vs CPU", *cells("total", lambda r: fmt_value(r.gpu_vs_cpu, ".2f", "×", "n/a"))])
    rows.append([(record.metric_name or "auc").upper(), *cells("total", lambda r: fmt_value(r.metric, ".4f"))])
    # Each run's header: its label, then its workers × threads per worker (the first column says so).
    header = [f"{scaling_label(str(run.kind), run.workers or 0)}\n{run.workers} × {run.threads_per_worker}" for run in runs]
    title = f"accel scale {record.workflow} — {record.cluster_kind} workers vs the single-process baseline"
    table = _table(title, ["\nworkers × threads"], header, rows, fold=True)
    table.rows[len(STAGES)].style = "bold"
    console.print(table)
    line = functools.partial(console.print, highlight=False, markup=False)
    line(
        "speedup: total seconds with the fewest workers of the same arm / total seconds; efficiency: speedup / worker "
        "ratio; GPU vs CPU: the CPU arm's seconds with as many workers / the GPU arm's",
    )
    for arm_kind, reason in record.skipped_arms.items():
        line(f"{arm_kind.upper()} arm skipped at every worker count: {reason}")
    for reason in sorted({run.arm.reason for run in runs if run.arm and not run.arm.ok and run.arm.reason}):
        line(reason)


def render_predict(record: PredictRecord, console: Console) -> None:
    """What ``accel predict`` did: seconds per stage and rows per second of each arm, the metrics
    where the table had its target, what was noticed, where the predictions went."""
    line = functools.partial(console.print, highlight=False, markup=False, soft_wrap=True)
    console.print(stage_table(f"accel predict — {record.output.rows or 0:,} rows, seconds per stage", record))
    for name in ARMS:
        arm = record.arms[name]
        if arm.ok:
            metrics = ", ".join(f"{k} {fmt_value(v, '.4f')}" for k, v in arm.metrics.items())
            line(
                f"{name.upper()} arm: {arm.rows_per_second or 0:,.0f} rows/s on {arm.device_used}"
                + (f"; {metrics}" if metrics else "")
            )
        elif arm.status == "failed" or name == "gpu":
            line(arm_status_line(name, arm))
    for notice in record.notices:
        line(f"notice: {notice}")
    line(f"{record.pipeline.which}; output from the {str(record.output.arm).upper()} arm")


def run_notes(record: RunRecord) -> list[str]:
    """The lines under a run's metrics: the rounds early stopping chose (``early stopping: 46
    rounds, found on 1,558 validation rows by the CPU arm's search (76 rounds, 2.1 s, outside the
    stages); every arm trained them on all training rows``), and remarks on metrics worse than a
    constant's (:func:`accel.metrics.remarks`; the CPU arm's, else the GPU arm's)."""
    from accel.metrics import remarks

    notes = [f"note: {remark}" for remark in remarks(record.arms["cpu"].metrics or record.arms["gpu"].metrics)]
    if (es := record.model.early_stopping if isinstance(record.model, ModelInfo) else None) is None:
        return notes
    if not es.used:
        return [f"early stopping: not used ({es.reason or 'no arm trained'}); every round trained", *notes]
    return [
        f"early stopping: {es.rounds} rounds, found on {es.validation.rows or 0:,} validation rows by the "
        f"{str(es.decided_by).upper()} arm's search ({es.searched} rounds, {fmt_value(es.search_seconds, '.1f')} s, "
        "outside the stages); every arm trained them on all the training rows",
        *notes,
    ]


def shown_name(name: str) -> str:
    """A column name as it can be printed on one line: quoted with escapes (``'a\\nb'``) when it
    holds a line break, a tab or another character that does not print."""
    return name if name.isprintable() else repr(name)


def show_plan(workflow: Any, console: Console) -> None:
    """Before the arms run: the table, the task and the inferred schema, one line per column kind
    (nothing with ``--quiet``)."""
    from accel.output import quiet

    if quiet():
        return
    plan, line = workflow.plan, functools.partial(console.print, highlight=False, markup=False, soft_wrap=True)
    if plan is None:
        for notice in workflow.notices:
            line(f"notice: {notice}")
        return
    src = workflow.planned.source
    where = f"{src.kind}" + (
        f", {src.encoding}, delimiter {src.delimiter!r}" if src.kind == "csv" else f", {len(src.paths)} file(s)"
    )
    line(
        f"table {src.original} ({where}): {plan.rows_in_file:,} rows × {len(src.columns)} columns; "
        f"using {len(plan.row_positions):,} rows ({len(plan.train_pos):,} train / {len(plan.test_pos):,} test)"
    )
    classes = f", {len(plan.classes)} classes" if plan.classes is not None else ""
    line(f"target {plan.target!r}: {plan.task}{classes} ({plan.task_reason}); model {workflow.model_name}")
    for kind, columns in plan.by_kind().items():
        names = ", ".join(shown_name(c.name) + (f" ({c.reason})" if kind == "dropped" and c.reason else "") for c in columns[:8])
        more = f", … {len(columns) - 8} more" if len(columns) > 8 else ""
        line(f"  {kind:<11} {len(columns):>4}: {names}{more}")
    for notice in plan.notices:
        line(f"  notice: {notice}")


def render_info(env: dict[str, Any], console: Console) -> None:
    """The machine, its GPUs, library versions, and which arms can run here."""
    cores, say = env["cores"], functools.partial(console.print, highlight=False)
    say(f"[bold]CPU[/bold]  {escape(env['cpu_model'])}")
    say(
        f"     {cores['physical']} physical / {cores['logical']} logical cores "
        f"({cores['available']} available to this process), {env['ram_gb']} GB RAM"
    )
    for g in env["gpus"]:
        say(
            f"[bold]GPU {g['index']}[/bold]  {escape(g['name'])}, {g['memory_gb']} GB, driver {g['driver'] or '?'} "
            f"(CUDA {g['cuda_driver_version'] or '?'})"
        )
    if not env["gpus"]:
        say("[bold]GPU[/bold]  none usable")
    nvml = env.get("nvml", {})
    if not nvml.get("available"):
        say(f"     NVML: {escape(str(nvml.get('reason')))}")

    console.print(_table("libraries", ["import", "installed"], [], [[n, v or "—"] for n, v in env["versions"].items()]))

    capabilities = (env.get("gpu_probe") or {}).get("capabilities") or {}
    if capabilities:
        # One line per GPU library: a stage runs on the GPU when its library is there.
        rows = [
            [name, "yes" if s.get("available") else f"no: {escape(str(s.get('reason')))}"] for name, s in capabilities.items()
        ]
        console.print(_table("GPU libraries, one by one", ["library", "on the GPU here"], [], rows))

    for arm, state in env["arms"].items():
        verdict = "can run" if state["can_run"] else f"cannot run: {escape(str(state['reason']))}"
        say(f"[bold]{ARM_NAMES[arm]}[/bold] {verdict}")
