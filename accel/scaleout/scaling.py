"""``accel scale``: one workflow on 1, 2, 4 ... Dask workers, beside the single-process CPU baseline.

For each worker count a fresh cluster is started (``local``: CPU worker processes with the
same threads each; ``local-cuda``: one worker per GPU), the workflow runs on it
(:func:`accel.scaleout.runner.run_on_session`), and the cluster is closed before the next one starts.
The single-process run without Dask (the CPU baseline arm of ``accel run``, every core) runs
first on the same data and seed. The result is a table per stage — seconds, speedup against
the smallest worker count (one worker when listed), parallel efficiency (speedup / worker
ratio), and the accuracy reached — written as a ``"benchmark": "scaling"`` record with a plot
beside it. Several workers buy throughput and pay in communication; with XGBoost the quantile
sketch is also merged across workers, so the accuracy is recorded at every count.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from accel.errors import AccelError
from accel.record import show_result

STAGE_ROWS = ("load", "features", "to_device", "train", "predict", "total")
METRIC = "auc"


def register(sub: Any) -> None:
    """Add ``accel scale`` to the ``accel`` command's subcommands."""
    from accel.cli.options import add_cluster_arguments, positive_int

    scale = sub.add_parser(
        "scale",
        help="scaling study: the workflow on 1, 2, 4 ... Dask workers against the single-process CPU baseline",
    )
    scale.add_argument("workflow", help="a workflow name (flights) or a workflow YAML file")
    add_cluster_arguments(scale, worker_list=True)
    scale.add_argument("--rows", type=positive_int, help="use a seeded sample of N rows (before --scale)")
    scale.add_argument("--seed", type=int, help="random seed for sampling, splitting and the model (default 42)")
    scale.add_argument("--out", type=Path, help="folder for the scaling record and its plot (default: runs/)")
    scale.add_argument("--no-baseline", action="store_true", help="leave out the single-process CPU baseline")
    scale.add_argument("--json", action="store_true", help="print the scaling record as JSON instead of the table")
    scale.set_defaults(handler=command)


def default_counts(kind: str) -> list[int]:
    """1, 2, 4 ... up to what this machine has (cores for ``local``, GPUs for ``local-cuda``)."""
    from accel.backend import cpu_threads, probe_gpu

    limit = cpu_threads() if kind == "local" else max(1, len(probe_gpu().devices))
    counts, n = [], 1
    while n <= limit:
        counts.append(n)
        n *= 2
    return counts


def _config(args: argparse.Namespace) -> tuple[Any, list[int]]:
    from accel.backend import cpu_threads
    from accel.cli.options import config_overrides
    from accel.config import build_config, read_workflow_file

    if getattr(args, "cluster", None) is None:
        raise AccelError("accel scale needs --cluster local or --cluster local-cuda (it starts one cluster per worker count)")
    target = args.workflow
    if target.endswith((".yaml", ".yml")) or Path(target).is_file():
        file_values, source = read_workflow_file(Path(target)), target
        file_values.pop("cluster", None)  # the study decides the clusters
        if file_values.get("out") is not None:
            file_values["out"] = str(file_values["out"])
    else:
        file_values, source = {"workflow": target}, "command line"
    counts = args.workers or default_counts(args.cluster)
    overrides = config_overrides(argparse.Namespace(**{**vars(args), "workers": None}))
    cluster = overrides["cluster"]
    if args.cluster == "local" and cluster.get("threads_per_worker") is None:
        # Every worker count gets workers of the same size, so n workers have n times the cores.
        cluster["threads_per_worker"] = max(1, cpu_threads() // max(counts))
    overrides.update({"rows": args.rows, "seed": args.seed, "out": args.out})
    return build_config(file_values, overrides, source), counts


def scaling_study(
    config: Any, counts: list[int], baseline: bool = True, listener: Any = None, say: Any = None
) -> tuple[dict[str, Any], Path, Path]:
    """Run the study and write its record and plot; ``(record, json_path, png_path)``."""
    from accel.backend import cpu_backend
    from accel.environment import collect_environment
    from accel.models import XGBoostParams
    from accel.record import ensure_writable, write_record
    from accel.runner import run_arm_safely
    from accel.scaleout.cluster import ClusterSession, plan_cluster
    from accel.scaleout.runner import DASK_WORKFLOWS, ClusterRunFailed, _say, run_on_session
    from accel.workflows import WorkflowSettings, get_workflow

    say = say or _say
    out = ensure_writable(config.out)
    get_workflow(config.workflow, WorkflowSettings())  # an unknown name: the usual error
    if config.workflow not in DASK_WORKFLOWS:
        raise AccelError(f"workflow {config.workflow!r} cannot run on Dask; known: {', '.join(sorted(DASK_WORKFLOWS))}")
    kind = config.cluster.kind
    # Every count is checked against the machine before the first cluster starts.
    plans = [plan_cluster(config.cluster.model_copy(update={"workers": n})) for n in counts]
    settings = WorkflowSettings(rows=config.rows, test_size=config.test_size, seed=config.seed, scale=config.scale)
    params = XGBoostParams(**config.xgboost.model_dump())

    started = datetime.now(timezone.utc)
    environment = collect_environment()
    runs: list[dict[str, Any]] = []
    if baseline:
        say("single-process CPU baseline (no Dask, every core)")
        workflow = get_workflow(config.workflow, settings, xgboost_params=params)
        arm = run_arm_safely(cpu_backend(), workflow, listener, config.memory_settings()).as_dict()
        threads = arm["threads"].get("cores_available")
        runs.append({"workers": 1, "kind": "single-process", "threads_per_worker": threads, "arm": arm})
    data = None
    for n, plan in zip(counts, plans, strict=True):
        say(f"{kind}: {n} worker(s)")
        t0 = time.perf_counter()
        try:
            with ClusterSession(plan, say=say) as session:
                startup = time.perf_counter() - t0
                arm, workflow = run_on_session(session, config.workflow, settings, params, config.seed, listener, say)
                data = workflow.describe_data()
                cluster = session.info.as_dict() | {"startup_seconds": round(startup, 3)}
        except ClusterRunFailed as exc:
            arm, cluster = {"status": "failed", "reason": str(exc), "stages": {}, "metrics": {}}, None
        runs.append({"workers": n, "kind": kind, "threads_per_worker": plan.threads_per_worker, "arm": arm, "cluster": cluster})
    finished = datetime.now(timezone.utc)

    table, reference = scaling_rows(runs, kind)
    record = {
        "benchmark": "scaling",
        "workflow": config.workflow,
        "cluster_kind": kind,
        "started_at": started.isoformat(),
        "finished_at": finished.isoformat(),
        "git_sha": environment.get("git_sha"),
        "config": config.model_dump(mode="json"),
        "data": data or get_workflow(config.workflow, settings).describe_data(),
        "worker_counts": counts,
        "speedup_reference": {"workers": reference, "kind": kind},
        "metric_name": METRIC,
        "definitions": {
            "speedup_vs_1": f"seconds with {reference} {kind} worker(s) / seconds of this row, per stage",
            "efficiency": f"speedup_vs_1 / (workers / {reference}); NaN for the single-process row",
            "single-process": "the CPU baseline arm of accel run (no Dask, every core); its speedup_vs_1 is the "
            f"{reference}-worker cluster's seconds / the single process's seconds",
        },
        "rows": table,
        "runs": runs,
        "environment": environment,
    }
    stem = f"{started:%Y-%m-%d}-scaling-{config.workflow}-{kind}"
    path = write_record(out, record, stem)
    png = write_plot(record, path.with_suffix(".png"))
    return record, path, png


def scaling_rows(runs: list[dict[str, Any]], kind: str) -> tuple[list[dict[str, Any]], int | None]:
    """The tidy table: one row per (configuration, stage), with speedup, efficiency and metric."""
    cluster_runs = [r for r in runs if r["kind"] == kind and r["arm"]["status"] == "ok"]
    ref = min(cluster_runs, key=lambda r: r["workers"]) if cluster_runs else None
    reference = ref["workers"] if ref else None
    rows = []
    for run in runs:
        arm = run["arm"]
        ok = arm["status"] == "ok"
        for stage in STAGE_ROWS:
            seconds = _seconds(arm, stage) if ok else math.nan
            base = _seconds(ref["arm"], stage) if ref else math.nan
            speedup = base / seconds if ok and ref and seconds > 0 else math.nan
            if run["kind"] == "single-process" or not ok or reference is None:
                efficiency = math.nan
            else:
                efficiency = speedup / (run["workers"] / reference)
            rows.append(
                {
                    "workers": run["workers"],
                    "kind": run["kind"],
                    "stage": stage,
                    "seconds": seconds,
                    "speedup_vs_1": speedup,
                    "efficiency": efficiency,
                    "metric": arm["metrics"].get(METRIC, math.nan) if ok else math.nan,
                    "threads_per_worker": run["threads_per_worker"],
                    "status": arm["status"],
                }
            )
    return rows, reference


def _seconds(arm: dict[str, Any], stage: str) -> float:
    return float(arm["total_seconds"] if stage == "total" else arm["stages"][stage])


def write_plot(record: dict[str, Any], path: Path) -> Path:
    """Seconds per stage for each configuration, and speedup against workers with the ideal line."""
    from matplotlib.figure import Figure

    rows = record["rows"]
    configs = []
    for r in rows:
        key = (r["kind"], r["workers"])
        if key not in configs:
            configs.append(key)
    labels = ["single\nprocess" if k == "single-process" else f"{n} worker{'s' if n > 1 else ''}" for k, n in configs]
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    bottom = [0.0] * len(configs)
    for stage in STAGE_ROWS[:-1]:
        values = []
        for kind, n in configs:
            row = next(r for r in rows if r["kind"] == kind and r["workers"] == n and r["stage"] == stage)
            values.append(0.0 if math.isnan(row["seconds"]) else row["seconds"])
        ax1.bar(labels, values, bottom=bottom, label=stage)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    for i, (kind, n) in enumerate(configs):
        total = next(r for r in rows if r["kind"] == kind and r["workers"] == n and r["stage"] == "total")
        if not math.isnan(total["metric"]):
            ax1.annotate(f"AUC {total['metric']:.4f}", (i, bottom[i]), ha="center", va="bottom", fontsize=8)
    ax1.set_ylabel("seconds")
    ax1.set_title(f"{record['workflow']}: seconds per stage ({record['cluster_kind']})")
    ax1.legend(fontsize=8)

    kind = record["cluster_kind"]
    counts = sorted({r["workers"] for r in rows if r["kind"] == kind})
    for stage, style in (("total", "o-"), ("train", "s--"), ("features", "^:")):
        values = [
            next(r for r in rows if r["kind"] == kind and r["workers"] == n and r["stage"] == stage)["speedup_vs_1"]
            for n in counts
        ]
        ax2.plot(counts, values, style, label=stage)
    reference = record["speedup_reference"]["workers"] or 1
    ax2.plot(counts, [n / reference for n in counts], "k-", alpha=0.3, label="ideal")
    ax2.set_xlabel(f"{kind} workers")
    ax2.set_ylabel(f"speedup vs {reference} worker(s)")
    ax2.set_xticks(counts)
    ax2.set_title("speedup")
    ax2.legend(fontsize=8)
    from accel.files import write_new

    # Beside the record, whose name was free: a file that took the name meanwhile is not replaced.
    return write_new(path, lambda tmp: fig.savefig(tmp, dpi=110), "the scaling plot", "choose another --out")


def render_scaling(record: dict[str, Any], console: Any) -> None:
    """Stages down, configurations across: seconds, then speedup, efficiency and AUC."""
    from rich.table import Table

    kind = record["cluster_kind"]
    runs = record["runs"]
    title = f"accel scale {record['workflow']} — {kind} workers vs the single-process baseline"
    table = Table(title=title, title_justify="left")
    table.add_column("")
    for run in runs:
        name = "single process" if run["kind"] == "single-process" else f"{run['workers']} worker{'s' * (run['workers'] > 1)}"
        table.add_column(f"{name}\n{run['workers']} × {run['threads_per_worker']}", justify="right")

    def cells(stage: str, field: str, show: Any) -> list[str]:
        out = []
        for run in runs:
            row = next(
                r for r in record["rows"] if r["kind"] == run["kind"] and r["workers"] == run["workers"] and r["stage"] == stage
            )
            out.append(run["arm"]["status"] if run["arm"]["status"] != "ok" else show(row[field]))
        return out

    for stage in STAGE_ROWS:
        table.add_row(f"{stage} (s)", *cells(stage, "seconds", lambda v: f"{v:.2f}"), style="bold" if stage == "total" else None)
    table.add_row("speedup", *cells("total", "speedup_vs_1", lambda v: _fmt(v, "×")))
    table.add_row("efficiency", *cells("total", "efficiency", lambda v: _fmt(v, "")))
    table.add_row(METRIC.upper(), *cells("total", "metric", lambda v: f"{v:.4f}"))
    console.print(table)
    ref = record["speedup_reference"]["workers"]
    console.print(
        f"speedup: total seconds with {ref} {kind} worker(s) / total seconds; efficiency: speedup / worker ratio",
        highlight=False,
    )
    for run in runs:
        if run["arm"]["status"] != "ok":
            console.print(f"{run['workers']} worker(s): {run['arm']['reason']}", highlight=False, markup=False)


def _fmt(value: float, unit: str) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.2f}{unit}"


def command(args: argparse.Namespace) -> int:

    from rich.console import Console

    from accel.report.console import ProgressDisplay

    config, counts = _config(args)
    progress = ProgressDisplay()
    try:
        record, path, png = scaling_study(config, counts, baseline=not args.no_baseline, listener=progress)
    finally:
        progress.close()
    show_result(record, args.json, lambda: render_scaling(record, Console()), {"scaling record": path, "plot": png})
    failed = [r for r in record["runs"] if r["arm"]["status"] != "ok"]
    if failed:
        print(f"accel: {len(failed)} of the runs failed (see the record)", file=sys.stderr)
        return 1
    return 0
