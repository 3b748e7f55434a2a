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

:func:`accel.scale` and ``accel scale`` (:mod:`accel.cli.scale`) both come here:
:func:`study_config`, then :func:`scaling_study`.
"""

from __future__ import annotations

import argparse
import functools
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from accel.errors import AccelError
from accel.scaleout.cluster import CLUSTER_KINDS

STAGE_ROWS = ("load", "features", "to_device", "train", "predict", "total")
METRIC = "auc"


def default_counts(kind: str) -> list[int]:
    """1, 2, 4 ... up to what this machine has (cores for ``local``, GPUs for ``local-cuda``)."""
    from accel.backend import cpu_threads, probe_gpu

    limit = cpu_threads() if kind == "local" else max(1, len(probe_gpu().devices))
    counts, n = [], 1
    while n <= limit:
        counts.append(n)
        n *= 2
    return counts


def study_config(workflow: str | None, settings: dict[str, Any], dask: dict[str, Any]) -> tuple[Any, list[int]]:
    """The study's run configuration and worker counts, checked as ``accel scale``'s flags are.

    Parameters
    ----------
    workflow : str, optional
        A workflow name or YAML file (its ``cluster:`` section is left out: the study decides
        the clusters); None with ``settings["data"]``.
    settings : dict
        The table and run settings by the flags' names (:func:`accel.cli.options.table_overrides`);
        None where not given.
    dask : dict
        ``cluster`` (``local`` or ``local-cuda``), ``workers`` (the counts, None: 1, 2, 4 ... up
        to this machine's) and the other cluster flags by their names (``threads_per_worker``,
        ``rmm_pool``, ``device_memory_limit``, ``worker_memory``, ``protocol``, ``scale``).

    Returns
    -------
    (RunConfig, list of int)
    """
    from accel.backend import cpu_threads
    from accel.cli.options import config_overrides, workflow_source
    from accel.config import build_config

    kind = dask.get("cluster")
    if kind is None:
        raise AccelError("accel scale needs --cluster local or --cluster local-cuda (it starts one cluster per worker count)")
    if kind not in CLUSTER_KINDS:
        raise AccelError(f"--cluster must be one of {', '.join(CLUSTER_KINDS)}, got {kind!r}")
    counts = _counts(dask.get("workers")) or default_counts(kind)
    file_values, source = workflow_source(workflow, settings.get("data") is not None, "scale")
    file_values.pop("cluster", None)  # the study decides the clusters
    overrides = config_overrides(argparse.Namespace(**{**dask, "workers": None}))
    cluster = overrides["cluster"]
    if kind == "local" and cluster.get("threads_per_worker") is None:
        # Every worker count gets workers of the same size, so n workers have n times the cores.
        cluster["threads_per_worker"] = max(1, cpu_threads() // max(counts))
    overrides.update({k: v for k, v in settings.items() if v is not None})
    return build_config(file_values, overrides, source), counts


def _counts(workers: Any) -> list[int]:
    """The worker counts asked for, sorted and distinct (empty: none asked for)."""
    if workers is None:
        return []
    listed = [workers] if isinstance(workers, int) else list(workers)
    if not listed or any(isinstance(n, bool) or not isinstance(n, int) or n <= 0 for n in listed):
        raise AccelError(f"--workers must be positive integers, got {workers!r}")
    return sorted(set(listed))


def scaling_study(
    config: Any, counts: list[int], baseline: bool = True, listener: Any = None, say: Any = None
) -> tuple[dict[str, Any], Path, Path]:
    """Run the study and write its record and plot; ``(record, json_path, png_path)``.

    At each worker count both arms of a cluster run (:func:`accel.scaleout.arms.plan_arms`):
    with ``local-cuda`` the GPU workers, then as many CPU workers sharing the node's cores;
    with ``local`` the CPU workers only. A user's table (``config.data``) is planned once, here.
    """
    from contextlib import ExitStack

    from accel.environment import collect_environment
    from accel.models import XGBoostParams
    from accel.record import ensure_writable, record_head, write_record
    from accel.runner import build_workflow, early_stopping_for, run_arm_safely
    from accel.scaleout.arms import plan_arms
    from accel.scaleout.runner import DASK_WORKFLOWS, ClusterRunFailed, _say, check_dask_config, run_placed_arm, table_builder
    from accel.workflows import WorkflowSettings, get_workflow

    say = say or _say
    check_dask_config(config)
    # Every run of the study (the baseline, each count, each arm) trains the rounds the first decided.
    early_stopping = early_stopping_for(config)
    out = ensure_writable(config.out)
    planned = None
    workflow: Any = config.workflow
    if config.data is not None:
        planned = build_workflow(config, early_stopping)  # the single-process plan, made once for every count
        workflow = table_builder(planned.planned)
    else:
        get_workflow(config.workflow, WorkflowSettings())  # an unknown name: the usual error
        if config.workflow not in DASK_WORKFLOWS:
            raise AccelError(f"workflow {config.workflow!r} cannot run on Dask; known: {', '.join(sorted(DASK_WORKFLOWS))}")
    kind = config.cluster.kind
    # Every count is checked against the machine before the first cluster starts.
    configs = [config.model_copy(update={"cluster": config.cluster.model_copy(update={"workers": n})}) for n in counts]
    with ExitStack() as stack:
        places = [plan_arms(c.cluster, c.device, stack, say) for c in configs]
    settings = WorkflowSettings.of(config)
    params = XGBoostParams(**config.model_params())  # a model with a Dask trainer (check_dask_config)

    def single_process() -> Any:
        return planned if planned is not None else build_workflow(config, early_stopping)

    started = datetime.now(timezone.utc)
    environment = collect_environment()
    runs: list[dict[str, Any]] = []
    described = planned
    if baseline:
        say("single-process CPU baseline (no Dask, every core)")
        if listener:
            listener.section(run_label("single-process", 1))
        arm = run_arm_safely(places[0]["cpu"].arm_backend(), single_process(), listener, config.memory_settings()).as_dict()
        threads = arm["threads"].get("cores_available")
        runs.append({"workers": 1, "kind": "single-process", "threads_per_worker": threads, "arm": arm})
    skipped_arms: dict[str, str] = {}
    for n, place in zip(counts, places, strict=True):
        for arm_kind in ("gpu", "cpu"):
            where = place[arm_kind]
            if where.skip is not None:
                skipped_arms[arm_kind] = where.skip  # the same reason at every count: said once
                continue
            say(f"{arm_kind.upper()} arm: {n} worker(s)")
            if listener:
                listener.section(run_label(arm_kind, n))  # as the table's column names it
            try:
                arm, ran, _ = run_placed_arm(
                    where, workflow, settings, params, config.seed, listener, say, early_stopping=early_stopping
                )
            except ClusterRunFailed as exc:
                arm, ran = {"status": "failed", "reason": str(exc), "stages": {}, "metrics": {}}, None
            described = described or ran
            threads = (arm.get("cluster") or {}).get("threads_per_worker") or (
                where.plan.threads_per_worker if where.plan else None
            )
            runs.append({"workers": n, "kind": arm_kind, "threads_per_worker": threads, "arm": arm})
    finished = datetime.now(timezone.utc)

    table, reference = scaling_rows(runs)
    name = described.name if described is not None else config.workflow
    record = {
        **record_head("scaling"),
        "benchmark": "scaling",
        "workflow": name,
        "cluster_kind": kind,
        "started_at": started.isoformat(),
        "finished_at": finished.isoformat(),
        "git_sha": environment.get("git_sha"),
        "config": config.model_dump(mode="json"),
        "data": described.describe_data() if described is not None else get_workflow(config.workflow, settings).describe_data(),
        "worker_counts": counts,
        "early_stopping": early_stopping.describe(),
        "speedup_reference": reference,
        "metric_name": _metric(described),
        "definitions": {
            "speedup_vs_1": "seconds with the fewest workers of the same arm / seconds of this row, per stage",
            "efficiency": "speedup_vs_1 / (workers / the fewest workers); NaN for the single-process row",
            "gpu_vs_cpu": "seconds of the CPU arm with as many workers / seconds of the GPU arm (GPU rows only)",
            "single-process": "the CPU baseline arm of accel run (no Dask, every core); its speedup_vs_1 is the "
            "fewest-worker CPU cluster's seconds / the single process's seconds",
        },
        "rows": table,
        "runs": runs,
        "skipped_arms": skipped_arms,
        "environment": environment,
    }
    stem = f"{started:%Y-%m-%d}-scaling-{name}-{kind}"
    path = write_record(out, record, stem)
    png = write_plot(record, path.with_suffix(".png"))
    return record, path, png


def _metric(workflow: Any) -> str:
    """The headline metric of the study: AUC for a classifier, RMSE for a regressor."""
    task = getattr(workflow, "task", "binary")
    return "rmse" if task == "regression" else METRIC


def scaling_rows(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int | None]]:
    """The tidy table: one row per (arm, workers, stage), with speedup, efficiency, GPU-vs-CPU and metric."""
    ok = [r for r in runs if r["arm"]["status"] == "ok"]
    refs = {}
    for kind in ("gpu", "cpu"):
        mine = [r for r in ok if r["kind"] == kind]
        refs[kind] = min(mine, key=lambda r: r["workers"]) if mine else None
    reference = {kind: (ref["workers"] if ref else None) for kind, ref in refs.items()}
    metric = next((name for r in ok for name in ("auc", "rmse") if name in r["arm"]["metrics"]), METRIC)
    rows = []
    for run in runs:
        arm = run["arm"]
        good = arm["status"] == "ok"
        ref = refs["cpu" if run["kind"] == "single-process" else run["kind"]]
        same_count_cpu = next((r for r in ok if r["kind"] == "cpu" and r["workers"] == run["workers"]), None)
        for stage in STAGE_ROWS:
            seconds = _seconds(arm, stage) if good else math.nan
            base = _seconds(ref["arm"], stage) if ref else math.nan
            speedup = base / seconds if good and ref and seconds > 0 else math.nan
            if run["kind"] == "single-process" or not good or ref is None:
                efficiency = math.nan
            else:
                efficiency = speedup / (run["workers"] / ref["workers"])
            vs_cpu = math.nan
            if run["kind"] == "gpu" and good and same_count_cpu is not None and seconds > 0:
                vs_cpu = _seconds(same_count_cpu["arm"], stage) / seconds
            rows.append(
                {
                    "workers": run["workers"],
                    "kind": run["kind"],
                    "stage": stage,
                    "seconds": seconds,
                    "speedup_vs_1": speedup,
                    "efficiency": efficiency,
                    "gpu_vs_cpu": vs_cpu,
                    "metric": arm["metrics"].get(metric, math.nan) if good else math.nan,
                    "threads_per_worker": run["threads_per_worker"],
                    "status": arm["status"],
                }
            )
    return rows, reference


def _seconds(arm: dict[str, Any], stage: str) -> float:
    return float(arm["total_seconds"] if stage == "total" else arm["stages"][stage])


def run_label(kind: str, workers: int) -> str:
    """How a configuration is named in tables and the plot: ``single process``, ``CPU × 2``."""
    if kind == "single-process":
        return "single process"
    return f"{kind.upper()} × {workers}"


def write_plot(record: dict[str, Any], path: Path) -> Path:
    """Seconds per stage for each configuration, and speedup against workers with the ideal line, per arm."""
    from matplotlib.figure import Figure

    rows = record["rows"]
    configs = []
    for r in rows:
        key = (r["kind"], r["workers"])
        if key not in configs:
            configs.append(key)
    labels = [run_label(k, n).replace(" × ", "\n× ").replace("single process", "single\nprocess") for k, n in configs]
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
    metric = record.get("metric_name", METRIC)
    for i, (kind, n) in enumerate(configs):
        total = next(r for r in rows if r["kind"] == kind and r["workers"] == n and r["stage"] == "total")
        if not math.isnan(total["metric"]):
            ax1.annotate(f"{metric.upper()} {total['metric']:.4f}", (i, bottom[i]), ha="center", va="bottom", fontsize=8)
    ax1.set_ylabel("seconds")
    ax1.set_title(f"{record['workflow']}: seconds per stage ({record['cluster_kind']})")
    ax1.legend(fontsize=8)

    for kind in ("gpu", "cpu"):
        counts = sorted({r["workers"] for r in rows if r["kind"] == kind and r["status"] == "ok"})
        if not counts:
            continue
        for stage, style in (("total", "o-"), ("train", "s--")):
            values = [
                next(r for r in rows if r["kind"] == kind and r["workers"] == n and r["stage"] == stage)["speedup_vs_1"]
                for n in counts
            ]
            ax2.plot(counts, values, style, label=f"{kind.upper()} {stage}")
        reference = record["speedup_reference"].get(kind) or 1
        ax2.plot(counts, [n / reference for n in counts], "k-", alpha=0.3, label=f"{kind.upper()} ideal")
    all_counts = sorted({r["workers"] for r in rows if r["kind"] != "single-process"})
    ax2.set_xlabel("Dask workers")
    ax2.set_ylabel("speedup vs the fewest workers")
    ax2.set_xticks(all_counts)
    ax2.set_title("speedup")
    ax2.legend(fontsize=8)
    from accel.files import write_new

    # Beside the record, whose name was free: a file that took the name meanwhile is not replaced.
    return write_new(path, lambda tmp: fig.savefig(tmp, dpi=110), "the scaling plot", "choose another --out")


def render_scaling(record: dict[str, Any], console: Any) -> None:
    """Stages down, configurations across: seconds, then speedup, efficiency, GPU vs CPU and the metric."""
    from rich.table import Table

    kind = record["cluster_kind"]
    runs = record["runs"]
    title = f"accel scale {record['workflow']} — {kind} workers vs the single-process baseline"
    table = Table(title=title, title_justify="left")
    # Each run's header: its label, then its workers × threads per worker (the first column says so).
    table.add_column("\nworkers × threads", no_wrap=True)
    for run in runs:
        table.add_column(
            f"{run_label(run['kind'], run['workers'])}\n{run['workers']} × {run['threads_per_worker']}",
            justify="right",
            overflow="fold",
        )

    def cells(stage: str, field: str, show: Any) -> list[str]:
        out = []
        for run in runs:
            row = next(
                r for r in record["rows"] if r["kind"] == run["kind"] and r["workers"] == run["workers"] and r["stage"] == stage
            )
            out.append(run["arm"]["status"] if run["arm"]["status"] != "ok" else show(row[field]))
        return out

    metric = record.get("metric_name", METRIC)
    for stage in STAGE_ROWS:
        table.add_row(f"{stage} (s)", *cells(stage, "seconds", lambda v: f"{v:.2f}"), style="bold" if stage == "total" else None)
    table.add_row("speedup", *cells("total", "speedup_vs_1", lambda v: _fmt(v, "×")))
    table.add_row("efficiency", *cells("total", "efficiency", lambda v: _fmt(v, "")))
    if any(r["kind"] == "gpu" for r in runs):
        table.add_row("GPU vs CPU", *cells("total", "gpu_vs_cpu", lambda v: _fmt(v, "×")))
    table.add_row(metric.upper(), *cells("total", "metric", lambda v: f"{v:.4f}"))
    console.print(table)
    line = functools.partial(console.print, highlight=False, markup=False)
    line(
        "speedup: total seconds with the fewest workers of the same arm / total seconds; efficiency: speedup / worker "
        "ratio; GPU vs CPU: the CPU arm's seconds with as many workers / the GPU arm's"
    )
    for arm_kind, reason in (record.get("skipped_arms") or {}).items():
        line(f"{arm_kind.upper()} arm skipped at every worker count: {reason}")
    for reason in sorted(r for r in {run["arm"].get("reason") for run in runs if run["arm"]["status"] != "ok"} if r):
        line(reason)


def _fmt(value: float, unit: str) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.2f}{unit}"
