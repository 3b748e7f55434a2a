"""The Dask path against the single-process path on the same data, cores and seed: Dask's overhead.

CPU (default): a ``LocalCluster`` whose workers together have as many threads as the single
process uses (every core), against the CPU arm of ``accel run``. GPU (``--cluster
local-cuda``): a ``LocalCUDACluster`` with one worker against the single-process GPU arm.
The data is the flights workflow replicated ``--scale`` times (default 10), or, with
``--table ROWS``, a generated table of that many rows (ten numeric columns with 5% missing,
ten strings of 5-500 values, a binary target: ``accel_fixtures.tables.write_own_table``) written as a
folder of Parquet files, planned once as ``accel run --data DIR --target y --probe off`` plans
it. After an untimed warm-up of each (imports, worker start-up), the two alternate
``--repeats`` times; the script prints the wall ratio (Dask / single process, medians of the
stage totals; cluster start-up is reported beside it, not inside) and both AUCs. Target on
CPU with one worker: ratio <= 1.3, AUCs within 0.005.

``--worker-memory SIZE`` limits each worker's host memory (Dask spills persisted partitions
to disk beyond it): the run must finish with the single process's AUC, and the record holds
each worker's peak beside its limit and the table's size in memory.

    python benchmarks/bench_dask_overhead.py --scale 10 --workers 2
    python benchmarks/bench_dask_overhead.py --table 1e6 --workers 1 --rounds 100
    python benchmarks/bench_dask_overhead.py --table 3e6 --workers 2 --worker-memory 700MB --repeats 1
    python benchmarks/bench_dask_overhead.py --table 1.5e6 --text-width 400 --workers 2 --worker-memory 620MB --rounds 100
    python benchmarks/bench_dask_overhead.py --cluster local-cuda --scale 10      # on a GPU machine
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from types import SimpleNamespace

from common import Case, Config, main, medians

from accel.backend import cpu_backend, cpu_threads, gpu_backend
from accel.config import ClusterConfig, build_config
from accel.models import XGBoostSettings
from accel.runner import build_workflow, run_arm
from accel.scaleout.cluster import ClusterSession, plan_cluster
from accel.scaleout.cluster_run import run_on_session
from accel.timing import timed_call
from accel.workflows import FlightsWorkflow, WorkflowSettings
from accel.workflows.table_dask import table_builder
from accel_fixtures.tables import write_own_table, write_wide_table

ARMS = ("single-process", "dask")
#: Parquet files the generated table is written as (the partitions a user already has).
TABLE_FILES = 8


def arguments(parser):
    parser.add_argument("--cluster", choices=["local", "local-cuda"], default="local")
    parser.add_argument("--workers", type=int, default=None, help="local: workers (default: one per core)")
    parser.add_argument("--scale", type=int, default=10, help="copies of the flights table (default 10)")
    parser.add_argument("--table", type=float, default=None, metavar="ROWS", help="a generated table of ROWS rows instead")
    parser.add_argument("--text-width", type=int, default=None, metavar="W",
                        help="with --table: rows mostly text (three columns of W characters; write_wide_table) instead")  # fmt: skip
    parser.add_argument("--worker-memory", default=None, metavar="SIZE", help="host memory limit per worker, e.g. 700MB")
    parser.add_argument("--rounds", type=int, default=300, help="boosting rounds (default 300, as accel run)")


def write_table(rows: int, folder: Path) -> tuple[Path, int]:
    """The generated own table as ``TABLE_FILES`` Parquet files; ``(folder, its bytes in pandas memory)``."""
    import pandas as pd

    csv = folder / "table.csv"
    write_own_table(rows, csv)
    frame = pd.read_csv(csv, engine="pyarrow")
    csv.unlink()
    out = folder / "table"
    out.mkdir()
    step = -(-len(frame) // TABLE_FILES)
    for i in range(TABLE_FILES):
        frame.iloc[i * step : (i + 1) * step].to_parquet(out / f"part-{i}.parquet", index=False)
    return out, int(frame.memory_usage(deep=True).sum())


def table_workflows(args, folder: Path) -> SimpleNamespace:
    """The generated table planned as ``accel run --data DIR --target y --probe off`` plans it, and a 5,000-row one."""

    def planned(**more):
        options = {"data": str(folder), "target": "y", "probe": "off", "seed": args.seed, **more}
        config = build_config({}, options, "benchmark")
        return build_workflow(config), WorkflowSettings(seed=args.seed, test_size=config.test_size, rows=more.get("rows"))

    workflow, settings = planned(xgboost={"n_estimators": args.rounds})
    small, small_settings = planned(rows=5000, xgboost={"n_estimators": 10})
    name = f"table-{int(args.table):.0e}".replace("+0", "") + (f"-text{args.text_width}" if args.text_width else "")
    return SimpleNamespace(name=name, workflow=workflow, settings=settings, dask=table_builder(workflow.planned),
                           small=small, small_dask=table_builder(small.planned), small_settings=small_settings)  # fmt: skip


def flights_workflows(args, params) -> SimpleNamespace:
    settings, small = WorkflowSettings(seed=args.seed, scale=args.scale), WorkflowSettings(rows=5000, seed=args.seed)
    return SimpleNamespace(name="flights", workflow=FlightsWorkflow(settings, params), settings=settings, dask="flights",
                           small=FlightsWorkflow(small, XGBoostSettings(n_estimators=10)), small_dask="flights",
                           small_settings=small)  # fmt: skip


def cases(bench):
    """The cluster planned and started (its start-up timed apart), a 5,000-row warm-up of each, then one case."""
    args = bench.args
    gpu, cores = args.cluster == "local-cuda", cpu_threads()
    workers = 1 if gpu else args.workers or cores
    plan = plan_cluster(ClusterConfig(kind=args.cluster, workers=workers, worker_memory=args.worker_memory,
                                      **({} if gpu else {"threads_per_worker": max(1, cores // workers)})))  # fmt: skip
    backend, params = gpu_backend() if gpu else cpu_backend(), XGBoostSettings(n_estimators=args.rounds)
    table_memory = None
    if args.table is not None:
        print(f"writing a generated table of {int(args.table):,} rows (untimed)", flush=True)
        write = (lambda n, f: write_wide_table(n, f / "table", args.text_width)) if args.text_width else write_table
        folder, table_memory = write(int(args.table), bench.scratch)
        flows = table_workflows(args, folder)
    else:
        flows = flights_workflows(args, params)
    layout = f"{plan.workers} worker(s) x {plan.threads_per_worker} thread(s)"
    limit = f", {args.worker_memory} each" if args.worker_memory else ""
    print(f"single process: {backend.name}, {backend.n_threads} threads; Dask: {args.cluster}, {layout}{limit}", flush=True)
    bench.record.update(workflow=flows.name, data=flows.workflow.describe_data(), table_memory_bytes=table_memory,
                        worker_memory=args.worker_memory, text_width=args.text_width, seed=args.seed, rounds=args.rounds,
                        repeats=args.repeats, single_process_threads=backend.n_threads, layout=layout,
                        memory_limit=plan.memory_limit)  # fmt: skip
    with contextlib.ExitStack() as stack:
        startup, session = timed_call(lambda: stack.enter_context(ClusterSession(plan)))
        print("warm-up (untimed): a 5,000-row run of each", flush=True)
        run_arm(backend, flows.small)
        run_on_session(session, flows.small_dask, flows.small_settings, XGBoostSettings(n_estimators=10), args.seed)
        yield Case(value=SimpleNamespace(flows=flows, backend=backend, params=params, session=session), arms=ARMS)
        bench.record.update(cluster=dataclasses.asdict(session.info), cluster_startup_seconds=startup)


def measure(bench, case, impl):
    """One run; its seconds are the stage totals (cluster start-up is apart)."""
    v = case.value
    if impl == "single-process":
        r = run_arm(v.backend, v.flows.workflow)
        return {"stages": r.stages, "seconds": r.total_seconds, "auc": r.metrics["auc"], "rows": r.rows,
                "peak_host_mb": r.peak_host_mb}  # fmt: skip
    arm, _, _ = run_on_session(v.session, v.flows.dask, v.flows.settings, v.params, bench.args.seed)
    return {"stages": arm["stages"], "seconds": arm["total_seconds"], "auc": arm["metrics"]["auc"], "rows": arm["rows"],
            "peak_host_mb": arm["peak_host_mb"], "workers_memory": arm["workers_memory"]}  # the highest worker's peak  # fmt: skip


def progress(row):
    return f"  AUC {row['auc']:.4f}  (" + "  ".join(f"{s} {v:.1f}" for s, v in row["stages"].items()) + ")"


def tidy(bench, rows):
    median, startup = medians(rows), bench.record["cluster_startup_seconds"]
    auc = {impl: next(r["auc"] for r in rows if r["impl"] == impl) for impl in ARMS}
    fields = {"rows": rows, "median_seconds": median, "ratio": median["dask"] / median["single-process"],
              "ratio_with_startup": (median["dask"] + startup) / median["single-process"], "auc": auc}  # fmt: skip
    if bench.record["table_memory_bytes"] is not None and bench.record["memory_limit"]:
        started = {w["address"] for w in bench.record["cluster"]["worker_details"]}
        seen = {a for r in rows if r["impl"] == "dask" for a in r["workers_memory"]}
        fields["workers_joined_during_run"] = sorted(seen - started)
    return fields


def summary(result):
    median, auc = result["median_seconds"], result["auc"]
    target = "" if result["device"] == "gpu" else "   (target <= 1.3)"
    lines = [
        f"single process   median {median['single-process']:.1f} s",
        f"Dask ({result['layout']})  median {median['dask']:.1f} s  (+ {result['cluster_startup_seconds']:.1f} s cluster start-up)",
        f"wall ratio Dask / single process = {result['ratio']:.3f}{target}; with start-up {result['ratio_with_startup']:.3f}",
        f"AUC single process {auc['single-process']:.4f}  Dask {auc['dask']:.4f}  |diff| {abs(auc['dask'] - auc['single-process']):.4f}",
    ]  # fmt: skip
    if "workers_joined_during_run" in result:
        memory, limit = result["table_memory_bytes"], result["memory_limit"]
        peaks = [m for r in result["rows"] if r["impl"] == "dask" for m in r["workers_memory"].values()]
        mb = lambda value: "—" if value is None else f"{value:.0f}"  # noqa: E731
        joined = result["workers_joined_during_run"]
        lines.append(f"table in memory {memory / 1e6:,.0f} MB = {memory / limit:.1f} x one worker's limit ({limit / 1e6:,.0f} MB); "
                     "worker peaks, heartbeat / RSS (MiB): "
                     + ", ".join(f"{mb(m['dask_reported_peak_host_mb'])} / {mb(m['peak_rss_mb'])}" for m in peaks)
                     + (f"; {len(joined)} worker(s) restarted during the runs" if joined else ""))  # fmt: skip
    return "\n".join(lines)


CONFIG = Config("dask-overhead", __doc__, measure, cases, arguments, tidy, summary, progress, repeats=1, seed=True,
                gpu=lambda args: args.cluster == "local-cuda")  # fmt: skip

if __name__ == "__main__":
    main(CONFIG)
