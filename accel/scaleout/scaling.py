"""``accel scale``: one workflow on 1, 2, 4 ... Dask workers, beside the single-process CPU baseline.

For each worker count a fresh cluster is started (``local``: CPU worker processes with the
same threads each; ``local-cuda``: one worker per GPU), the workflow runs on it
(:func:`accel.scaleout.cluster_run.run_on_session`), and the cluster is closed before the next one starts.
The single-process run without Dask (the CPU baseline arm of ``accel run``, every core) runs
first on the same data and seed. The result is a table per stage — seconds, speedup against
the smallest worker count (one worker when listed), parallel efficiency (speedup / worker
ratio), and the accuracy reached — written as a ``"benchmark": "scaling"`` record with a plot
beside it. Several workers buy throughput and pay in communication; with XGBoost the quantile
sketch is also merged across workers, so the accuracy is recorded at every count.

:func:`accel.scale` and ``accel scale`` (:mod:`accel.cli.runs`) both come here:
:func:`study_config`, then :func:`scaling_study`.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accel.errors import AccelError
from accel.output import say
from accel.record import ensure_writable, record_head, scaling_label, write_record
from accel.scaleout.cluster import CLUSTER_KINDS
from accel.timing import STAGES

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from accel.config import RunConfig
    from accel.result import Listener
    from accel.scaleout.arms import ArmKind, ArmPlace
    from accel.scaleout.cluster_run import DaskJob

STAGE_ROWS = (*STAGES, "total")
METRIC = "auc"
#: What the scaling record's columns mean (the record's ``definitions``).
DEFINITIONS = {
    "speedup_vs_1": "seconds with the fewest workers of the same arm / seconds of this row, per stage",
    "efficiency": "speedup_vs_1 / (workers / the fewest workers); NaN for the single-process row",
    "gpu_vs_cpu": "seconds of the CPU arm with as many workers / seconds of the GPU arm (GPU rows only)",
    "single-process": "the CPU baseline arm of accel run (no Dask, every core); its speedup_vs_1 is the "
    "fewest-worker CPU cluster's seconds / the single process's seconds",
}


def default_counts(kind: str) -> list[int]:
    """1, 2, 4 ... up to what this machine has (cores for ``local``, GPUs for ``local-cuda``)."""
    from accel.backend import cpu_threads, probe_gpu

    limit = cpu_threads() if kind == "local" else max(1, len(probe_gpu().devices))
    return [2**i for i in range(limit.bit_length())]


def study_config(workflow: str | None, settings: dict[str, Any], dask: dict[str, Any]) -> tuple[Any, list[int]]:
    """The study's run configuration and worker counts, checked as ``accel scale``'s flags are.

    Parameters
    ----------
    workflow : str, optional
        A workflow name or YAML file (its ``cluster:`` section is left out: the study decides
        the clusters); None with ``settings["data"]``.
    settings : dict
        The table and run settings by the flags' names (``accel run``'s flags, as the command line reads them);
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
    from accel.config import build_config, config_overrides, workflow_source

    kind = dask.get("cluster")
    if kind is None:
        raise AccelError("accel scale needs --cluster local or --cluster local-cuda (it starts one cluster per worker count)")
    if kind not in CLUSTER_KINDS:
        raise AccelError(f"--cluster must be one of {', '.join(CLUSTER_KINDS)}, got {kind!r}")
    counts = _counts(dask.get("workers")) or default_counts(kind)
    file_values, source = workflow_source(workflow, settings.get("data") is not None, "scale")
    file_values.pop("cluster", None)  # the study decides the clusters
    overrides = config_overrides({**dask, "workers": None})
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
    config: RunConfig, counts: list[int], baseline: bool = True, listener: Listener | None = None
) -> tuple[dict[str, Any], Path, Path]:
    """Run the study and write its record and plot; ``(record, json_path, png_path)``.

    At each worker count both arms of a cluster run (:func:`accel.scaleout.arms.plan_arms`):
    with ``local-cuda`` the GPU workers, then as many CPU workers sharing the node's cores;
    with ``local`` the CPU workers only. A user's table (``config.data``) is planned once, here,
    and every run (the baseline, each count, each arm) trains the rounds the first decided.
    Every count's arms are checked against the machine before the first cluster starts.
    """
    from contextlib import ExitStack

    from accel.environment import collect_environment
    from accel.scaleout.arms import plan_arms
    from accel.scaleout.cluster_run import DaskJob, check_dask_config
    from accel.workflows import WorkflowSettings, get_workflow

    check_dask_config(config)
    out = ensure_writable(config.out)
    job = DaskJob(config, listener)
    cluster = config.cluster
    assert cluster is not None, "study_config gives a study its cluster"
    with ExitStack() as stack:
        places = [plan_arms(cluster.model_copy(update={"workers": n}), config.device, stack) for n in counts]
    started = datetime.now(timezone.utc)
    environment = collect_environment()
    study, ran = _run_all(job, counts, places, baseline)
    table, reference = scaling_rows(study["runs"])
    # A named workflow whose every cluster run failed: described by its name.
    described = job.planned or ran or get_workflow(config.workflow, WorkflowSettings.of(config))
    record = {
        **record_head("scaling"),
        "benchmark": "scaling",
        "workflow": described.name,
        "cluster_kind": cluster.kind,
        "started_at": started.isoformat(),
        "finished_at": datetime.now(timezone.utc).isoformat(),
        "git_sha": environment.get("git_sha"),
        "config": config.model_dump(mode="json"),
        "data": described.describe_data(),
        "early_stopping": job.early_stopping.describe(),
        "speedup_reference": reference,
        "metric_name": "rmse" if described.task == "regression" else METRIC,
        "definitions": dict(DEFINITIONS),
        "rows": table,
        **study,
        "environment": environment,
    }
    path = write_record(out, record, f"{started:%Y-%m-%d}-scaling-{record['workflow']}-{record['cluster_kind']}")
    return record, path, write_plot(record, path.with_suffix(".png"))


def _run_all(
    job: DaskJob, counts: list[int], places: list[dict[ArmKind, ArmPlace]], baseline: bool
) -> tuple[dict[str, Any], Any]:
    """The single-process CPU baseline (``baseline``: accel run's CPU arm, no Dask, every core),
    then each arm at each worker count on its own cluster; ``(the record's worker_counts, runs and
    skipped_arms, the workflow the first cluster run describes)``, from which
    :func:`scaling_study` writes the record with its rows (speedups and efficiencies)."""
    from accel.runner import run_arm_safely
    from accel.scaleout.cluster_run import ClusterRunFailed

    runs: list[dict[str, Any]] = []
    skipped_arms: dict[str, str] = {}
    described = None

    def begin(line: str, kind: str, workers: int) -> None:
        """Say ``line``; tell the listener that the run of ``kind`` on ``workers`` follows (as the table's column names it)."""
        say(line)
        if job.listener:
            job.listener.section(scaling_label(kind, workers))

    if baseline:
        begin("single-process CPU baseline (no Dask, every core)", "single-process", 1)
        backend = places[0]["cpu"].arm_backend()
        arm = run_arm_safely(backend, job.single_process(), job.listener, job.config.memory_settings()).as_dict()
        threads = arm["threads"].get("cores_available")
        runs.append({"workers": 1, "kind": "single-process", "threads_per_worker": threads, "arm": arm})
    for n, place in zip(counts, places, strict=True):
        for arm_kind, where in place.items():  # the GPU arm, then the CPU arm
            if where.skip is not None:
                skipped_arms[arm_kind] = where.skip  # the same reason at every count: said once
                continue
            begin(f"{arm_kind.upper()} arm: {n} worker(s)", arm_kind, n)
            try:
                arm, ran, _ = job.run_arm(where)
            except ClusterRunFailed as exc:
                arm, ran = {"status": "failed", "reason": str(exc), "stages": {}, "metrics": {}}, None
            described = described or ran
            threads = (arm.get("cluster") or {}).get("threads_per_worker") or (where.plan and where.plan.threads_per_worker)
            runs.append({"workers": n, "kind": arm_kind, "threads_per_worker": threads, "arm": arm})
    return {"worker_counts": counts, "runs": runs, "skipped_arms": skipped_arms}, described


def scaling_rows(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int | None]]:
    """The tidy table: one row per (arm, workers, stage), with speedup, efficiency, GPU-vs-CPU and metric."""
    ok = [r for r in runs if r["arm"]["status"] == "ok"]
    refs = {kind: min((r for r in ok if r["kind"] == kind), key=lambda r: r["workers"], default=None) for kind in ("gpu", "cpu")}
    reference = {kind: (ref["workers"] if ref else None) for kind, ref in refs.items()}
    metric = next((name for r in ok for name in ("auc", "rmse") if name in r["arm"]["metrics"]), METRIC)
    rows = []
    for run in runs:
        ref = refs["cpu" if run["kind"] == "single-process" else run["kind"]]
        same_count_cpu = next((r for r in ok if r["kind"] == "cpu" and r["workers"] == run["workers"]), None)
        rows += [_stage_row(run, stage, ref, same_count_cpu, metric) for stage in STAGE_ROWS]
    return rows, reference


def _stage_row(
    run: dict[str, Any], stage: str, ref: dict[str, Any] | None, same_count_cpu: dict[str, Any] | None, metric: str
) -> dict[str, Any]:
    """One row of the table: ``run``'s ``stage`` against the fewest-worker run of its arm (``ref``)
    and, for a GPU run, the CPU run with as many workers."""
    arm, good = run["arm"], run["arm"]["status"] == "ok"
    seconds = _seconds(arm, stage) if good else math.nan
    base = _seconds(ref["arm"], stage) if ref else math.nan
    speedup = base / seconds if good and ref and seconds > 0 else math.nan
    single = run["kind"] == "single-process"
    efficiency = math.nan if single or not good or ref is None else speedup / (run["workers"] / ref["workers"])
    cpu = same_count_cpu if run["kind"] == "gpu" and good and seconds > 0 else None  # a GPU run beside the CPU run
    vs_cpu = _seconds(cpu["arm"], stage) / seconds if cpu is not None else math.nan
    return {
        "workers": run["workers"], "kind": run["kind"], "stage": stage, "seconds": seconds, "speedup_vs_1": speedup,
        "efficiency": efficiency, "gpu_vs_cpu": vs_cpu, "metric": arm["metrics"].get(metric, math.nan) if good else math.nan,
        "threads_per_worker": run["threads_per_worker"], "status": arm["status"],
    }  # fmt: skip


def _seconds(arm: dict[str, Any], stage: str) -> float:
    return float(arm["total_seconds"] if stage == "total" else arm["stages"][stage])


def write_plot(record: dict[str, Any], path: Path) -> Path:
    """Seconds per stage for each configuration, and speedup against workers with the ideal line, per arm."""
    from matplotlib.figure import Figure

    from accel.files import write_new

    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    _plot_stages(ax1, record)
    _plot_speedups(ax2, record)
    # Beside the record, whose name was free: a file that took the name meanwhile is not replaced.
    return write_new(path, lambda tmp: fig.savefig(tmp, dpi=110), "the scaling plot", "choose another --out")


def _row(rows: list[dict[str, Any]], kind: str, workers: int, stage: str) -> dict[str, Any]:
    """The table's row of ``stage`` for the ``kind`` run with ``workers`` workers."""
    return next(r for r in rows if r["kind"] == kind and r["workers"] == workers and r["stage"] == stage)


def _plot_stages(ax: Axes, record: dict[str, Any]) -> None:
    """Seconds per stage, stacked, for each configuration, with its metric on top."""
    rows = record["rows"]
    configs = list(dict.fromkeys((r["kind"], r["workers"]) for r in rows))
    labels = [scaling_label(k, n).replace(" × ", "\n× ").replace("single process", "single\nprocess") for k, n in configs]
    bottom = [0.0] * len(configs)
    for stage in STAGE_ROWS[:-1]:
        values = [0.0 if math.isnan(v := _row(rows, kind, n, stage)["seconds"]) else v for kind, n in configs]
        ax.bar(labels, values, bottom=bottom, label=stage)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    metric = record.get("metric_name", METRIC)
    for i, (kind, n) in enumerate(configs):
        total = _row(rows, kind, n, "total")
        if not math.isnan(total["metric"]):
            ax.annotate(f"{metric.upper()} {total['metric']:.4f}", (i, bottom[i]), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("seconds")
    ax.set_title(f"{record['workflow']}: seconds per stage ({record['cluster_kind']})")
    ax.legend(fontsize=8)


def _plot_speedups(ax: Axes, record: dict[str, Any]) -> None:
    """Speedup against workers, total and train, with the ideal line, per arm."""
    rows = record["rows"]
    for kind in ("gpu", "cpu"):
        counts = sorted({r["workers"] for r in rows if r["kind"] == kind and r["status"] == "ok"})
        if not counts:
            continue
        for stage, style in (("total", "o-"), ("train", "s--")):
            ax.plot(counts, [_row(rows, kind, n, stage)["speedup_vs_1"] for n in counts], style, label=f"{kind.upper()} {stage}")
        reference = record["speedup_reference"].get(kind) or 1
        ax.plot(counts, [n / reference for n in counts], "k-", alpha=0.3, label=f"{kind.upper()} ideal")
    ax.set_xlabel("Dask workers")
    ax.set_ylabel("speedup vs the fewest workers")
    ax.set_xticks(sorted({r["workers"] for r in rows if r["kind"] != "single-process"}))
    ax.set_title("speedup")
    ax.legend(fontsize=8)
