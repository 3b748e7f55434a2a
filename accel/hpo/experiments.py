"""Every experiment recorded so far, side by side: accuracy, time and memory, with the Pareto fronts.

Sources, found under a folder (recursively):

- run records written by ``accel run`` (one row per arm that ran);
- Optuna studies in SQLite files (``*.db``) written by ``accel hpo``: per study the default
  baseline and the retrained best on the hold-out, or, for a study that never finished, its
  best trial; with ``trials=True`` every completed trial as well;
- ``accel hpo`` records whose study is not in any of those files (a study kept in another
  database), from the record itself.

A Pareto front is only meaningful between comparable rows, so rows are grouped by what they
were scored on (workflow, data sample, split, seed, metric and evaluation rows); within each
group a row is on the front of metric versus time when no other row is at least as good on
both and better on one (the same for metric versus peak memory).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from accel.errors import AccelError
from accel.hpo.study import is_optuna_sqlite  # noqa: F401 - read here by callers
from accel.record import (
    MODEL_STAGES,
    ArmMemory,
    Batches,
    CompareRecord,
    HpoRecord,
    ModelInfo,
    NotARecord,
    Precision,
    RecordError,
    RunArm,
    RunRecord,
    RunSettings,
    Scored,
    read_record,
    record_head,
)
from accel.registry import DEFAULT_MODEL, MODELS

#: The metrics of which a smaller value is better; larger is better for every other (auc, accuracy, r2, and
#: ``parity``, accel compare's share of the numbers a script printed that agree with its CPU run).
LOWER_IS_BETTER = frozenset({"rmse", "mae", "log_loss"})


@dataclass
class Row:
    """One experiment: what ran where, how good, how long, how much memory."""

    name: str
    workflow: str
    arm: str
    device: str
    precision: str
    batch_rows: str
    model: str
    metric_name: str
    metric: float
    evaluated_on: str
    seconds: float
    peak_host_mb: float | None
    peak_device_mb: float | None
    group: str
    source: str
    total_seconds: float | None = None
    pareto: bool = False
    pareto_memory: bool = False
    #: The memory that limits this arm: device memory on the GPU arm, host RSS on the CPU arm.
    peak_mb: float | None = field(init=False)

    def __post_init__(self) -> None:
        self.peak_mb = self.peak_device_mb if self.arm == "gpu" and self.peak_device_mb is not None else self.peak_host_mb


def describe_model(name: str, params: dict[str, Any] | None) -> str:
    """``xgboost rounds=300 depth=8 lr=0.1``: the model and its key parameters."""
    params = params or {}
    keys = MODELS[name].labels if name in MODELS else tuple((k, k) for k in params)  # the short names the table uses
    given = [(short, params[k]) for k, short in keys if params.get(k) is not None]
    return " ".join([name, *(f"{short}={v:.4g}" if isinstance(v, float) else f"{short}={v}" for short, v in given)])


def model_seconds(result: RunArm) -> float:
    """Seconds to build the model input, train and predict (what a search times), else the run's total."""
    timed = [result.stages.get(s) for s in MODEL_STAGES]
    if all(isinstance(t, (int, float)) for t in timed):
        return float(sum(t or 0.0 for t in timed))
    return _num(result.total_seconds)


def _workflow_label(record_workflow: str | None, config: RunSettings) -> str:
    return f"table:{Path(str(config.data)).name}" if config.data else str(record_workflow or config.workflow or "?")


def _group(workflow: str, config: RunSettings, metric: str, evaluated_on: str) -> str:
    rows = config.rows or "all"
    # Two tables may share a file name (a/data.csv, b/data.csv): the group names the path.
    table = f"table:{config.data}" if config.data else workflow
    test = config.test_size if config.test_size is not None else 0.2
    return f"{table} · rows {rows} · test {test} · seed {config.seed if config.seed is not None else '?'} · {metric} on {evaluated_on}"


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def rows_from_run_record(record: RunRecord, source: str) -> list[Row]:
    """One row per arm of an ``accel run`` record that ran (``status`` ok)."""
    config = record.config
    workflow = _workflow_label(record.workflow, config)
    metric = record.parity.metric or ("rmse" if record.task == "regression" else "auc")
    model = record.model if isinstance(record.model, ModelInfo) else ModelInfo(name=record.model or config.model or "?")
    return [
        Row(
            name=f"run {Path(source).stem}",
            workflow=workflow,
            arm=arm,
            device=str(result.device_used or arm) + (f" ({result.device_name})" if result.device_name else ""),
            precision=str(((result.memory or ArmMemory()).precision or Precision()).precision or config.precision or "fp32"),
            batch_rows=((result.memory or ArmMemory()).batches or Batches()).label(config.batch_rows),
            model=describe_model(str(model.name or config.model or "?"), model.params),
            metric_name=metric,
            metric=_num(result.metrics.get(metric)),
            evaluated_on="hold-out",
            seconds=model_seconds(result),
            peak_host_mb=result.peak_host_mb,
            peak_device_mb=result.peak_device_mb,
            group=_group(workflow, config, metric, "hold-out"),
            source=source,
            total_seconds=result.total_seconds,
        )
        for arm, result in record.arms.items()
        if result.ok
    ]


def rows_from_compare_record(record: CompareRecord, source: str) -> list[Row]:
    """One row per arm of an ``accel compare`` record that ran: the script's wall time and memory;
    its metric is the share of printed numbers that agree with the CPU arm: the CPU arm is the
    reference (1 when the GPU arm's numbers were compared with it, NaN, shown as a dash, when
    nothing was compared)."""
    workflow = str(record.workflow or f"compare:{Path(str(record.program.path or '?')).name}")
    args = " ".join(str(a) for a in record.program.args) or "(no args)"
    share = record.parity.share
    return [
        Row(
            name=f"compare {Path(source).stem}",
            workflow=workflow,
            arm=arm,
            device=arm,
            precision="-",
            batch_rows="-",
            model="(the script's own)",
            metric_name="parity",
            metric=(1.0 if not math.isnan(share) else math.nan) if arm == "cpu" else share,
            evaluated_on="printed numbers vs the CPU arm",
            seconds=_num(result.cold_seconds),
            peak_host_mb=result.peak_host_mb,
            peak_device_mb=result.peak_device_mb,
            group=f"{workflow} · {args} · parity of printed numbers",
            source=source,
            total_seconds=result.cold_seconds,
        )
        for arm, result in record.arms.items()
        if result.ok
    ]


def _hpo_rows(record: HpoRecord, source: str, trials: list[Any] | None = None) -> list[Row]:
    """Rows of one search: its default baseline and its retrained best (or its best trial so far); then
    one row per completed Optuna trial of ``trials``."""
    study, config, metric = str(record.study.name), record.config, record.study.metric or "auc"
    workflow = _workflow_label(config.workflow, config)
    model = str(config.model or DEFAULT_MODEL)
    batch_rows = ((record.search.memory or ArmMemory()).batches or Batches()).label(config.batch_rows)

    def row(name: str, entry: Scored, evaluated_on: str, arm: str | None = None) -> Row:
        arm = arm or str(entry.arm or "cpu")
        return Row(
            name=name,
            workflow=workflow,
            arm=arm,
            device=str(entry.device_used or arm),
            precision=str(config.precision or "fp32"),
            batch_rows=batch_rows,
            model=describe_model(model, entry.params),
            metric_name=metric,
            metric=_num(entry.metric),
            evaluated_on=evaluated_on,
            seconds=_num(entry.seconds),
            peak_host_mb=entry.peak_host_mb,
            peak_device_mb=entry.peak_device_mb,
            group=_group(workflow, config, metric, evaluated_on),
            source=source,
        )

    out = []
    if record.baseline:
        out.append(row(f"{study}: default", record.baseline, "hold-out"))
    final, cpu = record.final, record.arms.get("cpu")
    if final is not None and final.metric is not None:
        out.append(row(f"{study}: tuned (trial {final.trial})", final, "hold-out"))
        if final.arm == "gpu" and cpu is not None and cpu.ok:
            measured = cpu.model_dump(include={"metric", "seconds", "device_used", "peak_host_mb", "peak_device_mb"})
            tuned_cpu = Scored(**measured, params=final.params)
            out.append(row(f"{study}: tuned (trial {final.trial}), CPU arm", tuned_cpu, "hold-out", "cpu"))
    elif (best := record.best_trial) is not None:
        out.append(row(f"{study}: best trial {best.number} (unfinished)", best, "validation (subset trial)"))
    for t in trials or []:
        kept = {k: t.user_attrs.get(k) for k in ("arm", "device_used", "seconds", "peak_host_mb", "peak_device_mb")}
        trial = Scored.model_construct(metric=t.value, params=_trained_params(t), **kept)  # as stored: not validated
        out.append(row(f"{study}: trial {t.number}", trial, "validation (subset trial)"))
    return out


def _trained_params(trial: Any) -> dict[str, Any]:
    """A trial's parameters with the rounds it really boosted (a subset trial uses a share of them)."""
    rounds = trial.user_attrs.get("rounds")
    return {**trial.params, **({"n_estimators": rounds} if rounds else {})}


def rows_from_storage(url: str, source: str, include_trials: bool) -> tuple[list[Row], set[str]]:
    """Rows of every study in one Optuna storage; and the names of those studies."""
    from optuna.trial import TrialState

    from accel.hpo.study import open_storage, quiet_optuna

    quiet_optuna()
    storage = open_storage(url, read_only=True)  # a reader: never a table or a file made
    out: list[Row] = []
    summaries = storage.get_all_studies()
    for summary in summaries:
        attrs = summary.user_attrs
        config = (attrs.get("accel") or {}).get("config") or {}
        metric = attrs.get("metric") or "auc"  # not a study of accel's
        trials = storage.get_all_trials(summary._study_id, deepcopy=False, states=(TrialState.COMPLETE,))  # noqa: SLF001
        maximize = summary.directions[0].name == "MAXIMIZE"
        t = max(trials, key=lambda t: t.value if maximize else -t.value, default=None)
        best = None if t is None else {"number": t.number, "metric": t.value, **t.user_attrs, "params": _trained_params(t)}
        # What the search stored of its record (the final model, its arms), read as its record is.
        found = attrs.get("summary") or {}
        searched = HpoRecord.model_validate({
            **found, "config": config, "study": {"name": summary.study_name, "metric": metric},
            "baseline": attrs.get("baseline"), "best_trial": best, "search": {"memory": {"batches": found.get("batches")}},
        })  # fmt: skip
        out += _hpo_rows(searched, source, trials if include_trials else None)
    return out, {s.study_name for s in summaries}


def collect(folder: Path, storages: list[str] | None = None, include_trials: bool = False) -> tuple[list[Row], list[str]]:
    """Every row under ``folder`` (and in ``storages``), fronts marked; and notes on what was skipped."""
    folder = Path(folder)
    if not folder.is_dir():
        raise AccelError(f"no folder {str(folder)!r}: give the folder that holds run records and hpo.db (default runs/)")
    rows: list[Row] = []
    timed: list[Row] = []  # compare runs: a row stands on its time and memory (parity a dash when none was compared)
    studies: set[str] = set()
    from accel.files import regular_files
    from accel.record import record_files

    # Regular files only: a FIFO or a link to a device named *.db / *.json is listed, never opened.
    databases, others = regular_files(folder, "*.db")
    json_files, other_json = record_files(folder)
    notes = [f"skipped {p}: {why}" for p, why in others + other_json]
    sources = [(f"sqlite:///{p.resolve()}", str(p)) for p in databases if is_optuna_sqlite(p)]
    sources += [(url, url) for url in storages or []]
    for url, source in sources:
        found, names = rows_from_storage(url, source, include_trials)
        rows += found
        studies |= names
    for path in json_files:
        try:
            record = read_record(path)  # typed; nulls listed in the record read back as NaN
        except NotARecord:
            continue  # a JSON file that is no record at all is not an experiment
        except RecordError as exc:
            notes.append(f"skipped {path}: {exc}")
            continue
        if isinstance(record, HpoRecord):
            if record.study.name not in studies:  # its storage is elsewhere: the record says what it found
                rows += _hpo_rows(record, str(path))
        elif isinstance(record, CompareRecord):
            timed += rows_from_compare_record(record, str(path))
        elif isinstance(record, RunRecord):
            rows += rows_from_run_record(record, str(path))
        # benchmark results, scaling studies and earlier snapshots are not experiments
    rows = [r for r in rows if not math.isnan(r.metric)] + timed
    mark_fronts(rows)
    return rows, notes


def pareto_mask(metrics: list[float], costs: list[float | None], higher_is_better: bool) -> list[bool]:
    """Which points no other point dominates (as good or better on both, strictly better on one).

    A point without a metric or a cost (None or NaN) is never on the front and never dominates.
    """
    sign = 1.0 if higher_is_better else -1.0
    pts = [(sign * m, math.nan if c is None else c) for m, c in zip(metrics, costs)]
    valid = [not math.isnan(c) and not math.isnan(m) for m, c in pts]
    return [
        valid[i]
        and not any(valid[j] and mj >= mi and cj <= ci and (mj > mi or cj < ci) for j, (mj, cj) in enumerate(pts) if j != i)
        for i, (mi, ci) in enumerate(pts)
    ]


def mark_fronts(rows: list[Row]) -> None:
    """Set ``pareto`` (metric vs seconds) and ``pareto_memory`` (metric vs peak MB) within each group."""
    for members in _by_group(rows).values():
        higher = members[0].metric_name not in LOWER_IS_BETTER
        for flag, cost in (("pareto", "seconds"), ("pareto_memory", "peak_mb")):
            for r, on in zip(members, pareto_mask([r.metric for r in members], [getattr(r, cost) for r in members], higher)):
                setattr(r, flag, on)


def _by_group(rows: list[Row]) -> dict[str, list[Row]]:
    """The rows of each comparison group, in their order."""
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(r.group, []).append(r)
    return groups


#: Image formats ``--plot`` writes (by the file's extension).
PLOT_FORMATS = ("png", "svg", "pdf")


def plot_format(path: Path) -> str:
    """The image format of ``path`` from its extension; a one-line error for any other."""
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in PLOT_FORMATS:
        shown = f"'.{fmt}'" if fmt else "no extension"
        raise AccelError(f"--plot {str(path)!r}: {shown} is not an image format accel writes; name it .png, .svg or .pdf")
    return fmt


def _panels(rows: list[Row]) -> dict[str, dict[str, list[Row]]]:
    """The rows of each comparison group (in the groups' order) of each metric (in the metrics' order)."""
    metrics = sorted({r.metric_name for r in rows})
    return {m: dict(sorted(_by_group([r for r in rows if r.metric_name == m]).items())) for m in metrics}


def plot_panels(rows: list[Row]) -> list[dict[str, Any]]:
    """What :func:`plot` draws: one panel per metric; in each, every group with its front (row names)."""
    panels = []
    for metric, groups in _panels(rows).items():
        fronts = {g: [r.name for r in sorted(members, key=lambda r: r.seconds) if r.pareto] for g, members in groups.items()}
        panels.append({"metric": metric, "groups": [{"group": g, "rows": len(groups[g]), "front": f} for g, f in fronts.items()]})
    return panels


def plot(rows: list[Row], path: Path, exists: str = "number") -> Path:
    """An image of metric versus seconds (log scale): one panel per metric (AUC and RMSE are never on
    one axis), one colour per comparable group, each group's own Pareto front drawn.

    Written whole through :func:`accel.files.write_new` with ``exists`` (a name accel chose that
    exists gets ``-001``, ...; one the user named is refused unless ``--overwrite``); returns the
    path written. The format comes from the extension (:data:`PLOT_FORMATS`).
    """
    import io

    import matplotlib

    matplotlib.use("Agg")  # no display needed
    matplotlib.rcParams["text.parse_math"] = False  # a '$' in a table's name is text
    import matplotlib.pyplot as plt

    from accel.files import write_new

    fmt = plot_format(path)
    panels = _panels(rows)
    fig, axes = plt.subplots(1, len(panels), figsize=(9 * len(panels), 5.5), dpi=110, squeeze=False)
    colors: dict[str, str] = {g: f"C{i % 10}" for i, g in enumerate(sorted({r.group for r in rows}))}
    for ax, (metric, groups) in zip(axes[0], panels.items()):
        for group, members in groups.items():
            color = colors[group]
            ax.scatter([r.seconds for r in members], [r.metric for r in members], color=color, alpha=0.6, s=28, label=group)
            front = sorted((r for r in members if r.pareto), key=lambda r: r.seconds)
            if front:
                ax.step([r.seconds for r in front], [r.metric for r in front], where="post", color=color, linewidth=1.5)
                ax.scatter([r.seconds for r in front], [r.metric for r in front], color=color, edgecolor="black", s=60, zorder=3)
        title = f"{metric} versus time; each group's Pareto front outlined"
        ax.set(xscale="log", xlabel="seconds (log scale)", ylabel=metric, title=title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt)
    plt.close(fig)
    return write_new(Path(path), buffer.getvalue(), "the plot", "choose another --plot FILE", exists=exists)  # type: ignore[arg-type]


def render(rows: list[Row], console: Any, notes: list[str]) -> None:
    """One table: a section per comparison group, one row per experiment, the fronts marked; then ``notes``."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title="experiments — seconds: model input + training + prediction; memory: GPU arm device peak, CPU arm host RSS",
        caption="front: ★t on the metric-versus-time Pareto front of its group, ★m on the metric-versus-memory front",
    )
    columns = ("name", "workflow", "arm", "device", "precision", "batch rows", "model", "metric", "seconds", "peak MB", "front")
    for col in columns:
        table.add_column(col, justify="right" if col in ("metric", "seconds", "peak MB") else "left")
    for group, members in sorted(_by_group(rows).items()):
        table.add_row(f"[bold]{escape(group)}[/]", *[""] * (len(columns) - 1), end_section=True)
        members.sort(key=lambda r: (math.isnan(r.seconds), r.seconds))
        for i, r in enumerate(members):
            front = " ".join(x for x, on in (("★t", r.pareto), ("★m", r.pareto_memory)) if on)
            mb = "—" if r.peak_mb is None else f"{r.peak_mb:.0f}"
            secs = "—" if math.isnan(r.seconds) else f"{r.seconds:.2f}"
            table.add_row(
                escape(r.name), escape(r.workflow), r.arm, escape(r.device), r.precision, r.batch_rows, escape(r.model),
                f"{r.metric_name} {r.metric:.4f}", secs, mb, front, end_section=i == len(members) - 1,
            )  # fmt: skip
    console.print(table)
    for note in notes:
        console.print(f"note: {note}", highlight=False, markup=False)  # notes name files: text, not markup


def experiments_record(rows: list[Row], folder: Path) -> dict[str, Any]:
    """The result JSON (``benchmark: experiments``) a report generator reads."""
    from datetime import datetime, timezone

    return {
        **record_head("experiments"),
        "benchmark": "experiments",
        "created_at": datetime.now(timezone.utc).isoformat(),
        "folder": str(folder),
        "rows": [asdict(r) for r in rows],
        "groups": sorted({r.group for r in rows}),
    }
