"""The Dask path against the single-process path on the same data, cores and seed: Dask's overhead.

CPU (default): a ``LocalCluster`` whose workers together have as many threads as the single
process uses (every core), against the CPU arm of ``accel run``. GPU (``--cluster
local-cuda``): a ``LocalCUDACluster`` with one worker against the single-process GPU arm.
The data is the flights workflow replicated ``--scale`` times (default 10), or, with
``--table ROWS``, a generated table of that many rows (ten numeric columns with 5% missing,
ten strings of 5-500 values, a binary target: ``bench_own_table_speed.generate``) written as a
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

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from accel.backend import cpu_backend, cpu_threads, gpu_backend
from accel.config import ClusterConfig, build_config
from accel.environment import collect_environment
from accel.models import XGBoostParams
from accel.runner import build_workflow, run_arm
from accel.scaleout.cluster import ClusterSession, plan_cluster
from accel.scaleout.runner import run_on_session, table_builder
from accel.timing import write_result
from accel.workflows import FlightsWorkflow, WorkflowSettings

#: Parquet files the generated table is written as (the partitions a user already has).
TABLE_FILES = 8


def write_table(rows: int, folder: Path) -> tuple[Path, int]:
    """The generated table as ``TABLE_FILES`` Parquet files; ``(folder, its bytes in pandas memory)``."""
    import pandas as pd

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_own_table_speed import generate

    csv = folder / "table.csv"
    generate(rows, csv)
    frame = pd.read_csv(csv, engine="pyarrow")
    csv.unlink()
    memory = int(frame.memory_usage(deep=True).sum())
    out = folder / "table"
    out.mkdir()
    step = -(-len(frame) // TABLE_FILES)
    for i in range(TABLE_FILES):
        frame.iloc[i * step : (i + 1) * step].to_parquet(out / f"part-{i}.parquet", index=False)
    return out, memory


def write_wide_table(rows: int, folder: Path, width: int, files: int = 48) -> tuple[Path, int]:
    """A table whose rows are mostly text, as ``files`` Parquet files; ``(folder, its bytes in Arrow)``.

    Three text columns of 300 values ``width`` characters long, three numeric columns, a binary
    target ``y`` from the first numeric column and the first text column. At ``width`` 400 a row
    holds ~1.25 kB, so a table several times a worker's memory limit has few rows: the features
    and XGBoost's matrix (numbers) stay small while the partitions loaded must spill.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    vocab = np.array([f"{i:04d}-" + "x" * width for i in range(300)], dtype=object)
    nbytes = 0
    for f in range(files):
        n = rows // files + (1 if f < rows % files else 0)
        num = rng.normal(size=(n, 3))
        codes = rng.integers(0, 300, size=(n, 3))
        signal = num[:, 0] + 0.01 * (codes[:, 0] - 150) + rng.normal(scale=0.5, size=n)
        columns = {f"num{i}": num[:, i] for i in range(3)}
        columns |= {f"text{i}": pa.array(vocab[codes[:, i]], type=pa.string()) for i in range(3)}
        columns["y"] = (signal > 0).astype(np.int64)
        table = pa.table(columns)
        nbytes += table.nbytes
        pq.write_table(table, folder / f"part-{f:03d}.parquet")
    return folder, nbytes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", choices=["local", "local-cuda"], default="local")
    parser.add_argument("--workers", type=int, default=None, help="local: workers (default: one per core)")
    parser.add_argument("--scale", type=int, default=10, help="copies of the flights table (default 10)")
    parser.add_argument("--table", type=float, default=None, metavar="ROWS", help="a generated table of ROWS rows instead")
    parser.add_argument(
        "--text-width",
        type=int,
        default=None,
        metavar="W",
        help="with --table: rows mostly text (three columns of W characters; write_wide_table) instead",
    )
    parser.add_argument("--worker-memory", default=None, metavar="SIZE", help="host memory limit per worker, e.g. 700MB")
    parser.add_argument("--rounds", type=int, default=300, help="boosting rounds (default 300, as accel run)")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs of each, alternating (default 1)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    if args.repeats < 1 or args.scale < 1:
        parser.error("--repeats and --scale must be at least 1")

    gpu = args.cluster == "local-cuda"
    cores = cpu_threads()
    if gpu:
        plan = plan_cluster(ClusterConfig(kind="local-cuda", workers=1, worker_memory=args.worker_memory))
        backend = gpu_backend()
    else:
        workers = args.workers or cores
        plan = plan_cluster(
            ClusterConfig(
                kind="local", workers=workers, threads_per_worker=max(1, cores // workers), worker_memory=args.worker_memory
            )
        )
        backend = cpu_backend()
    params = XGBoostParams(n_estimators=args.rounds)
    scratch = tempfile.TemporaryDirectory(prefix="accel-bench-dask-")
    table_memory = None
    if args.table is not None:
        print(f"writing a generated table of {int(args.table):,} rows (untimed)", flush=True)
        if args.text_width:
            folder, table_memory = write_wide_table(int(args.table), Path(scratch.name) / "table", args.text_width)
        else:
            folder, table_memory = write_table(int(args.table), Path(scratch.name))
        config = build_config(
            {},
            {"data": str(folder), "target": "y", "probe": "off", "seed": args.seed, "xgboost": {"n_estimators": args.rounds}},
            "benchmark",
        )
        workflow = build_workflow(config)
        settings = WorkflowSettings(seed=args.seed, test_size=config.test_size)
        dask_workflow = table_builder(workflow.planned)
        name = f"table-{int(args.table):.0e}".replace("+0", "") + (f"-text{args.text_width}" if args.text_width else "")
        small = build_config(
            {},
            {
                "data": str(folder),
                "target": "y",
                "probe": "off",
                "seed": args.seed,
                "rows": 5000,
                "xgboost": {"n_estimators": 10},
            },
            "benchmark",
        )
        small_workflow = build_workflow(small)
        small_settings = WorkflowSettings(rows=5000, seed=args.seed, test_size=small.test_size)
        warm_single = lambda: run_arm(backend, small_workflow)  # noqa: E731
        warm_dask = lambda session: run_on_session(  # noqa: E731
            session, table_builder(small_workflow.planned), small_settings, XGBoostParams(n_estimators=10), args.seed
        )
    else:
        settings = WorkflowSettings(seed=args.seed, scale=args.scale)
        workflow = FlightsWorkflow(settings, params)
        dask_workflow = "flights"
        name = "flights"
        warm = WorkflowSettings(rows=5000, seed=args.seed)
        warm_single = lambda: run_arm(backend, FlightsWorkflow(warm, XGBoostParams(n_estimators=10)))  # noqa: E731
        warm_dask = lambda session: run_on_session(session, "flights", warm, XGBoostParams(n_estimators=10), args.seed)  # noqa: E731
    layout = f"{plan.workers} worker(s) x {plan.threads_per_worker} thread(s)"
    limit = f", {args.worker_memory} each" if args.worker_memory else ""
    print(f"single process: {backend.name}, {backend.n_threads} threads; Dask: {args.cluster}, {layout}{limit}", flush=True)

    rows: list[dict] = []
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    with ClusterSession(plan) as session:
        startup = time.perf_counter() - t0
        if warm_single is not None:
            print("warm-up (untimed): a 5,000-row run of each", flush=True)
            warm_single()
            warm_dask(session)

        def single() -> dict:
            r = run_arm(backend, workflow)
            return {
                "stages": r.stages,
                "seconds": r.total_seconds,
                "auc": r.metrics["auc"],
                "rows": r.rows,
                "peak_host_mb": r.peak_host_mb,
            }

        def dask() -> dict:
            arm, _, _ = run_on_session(session, dask_workflow, settings, params, args.seed)
            return {
                "stages": arm["stages"],
                "seconds": arm["total_seconds"],
                "auc": arm["metrics"]["auc"],
                "rows": arm["rows"],
                "peak_host_mb": arm["peak_host_mb"],  # the highest worker's
                "workers_memory": arm["workers_memory"],
            }

        for i in range(args.repeats):
            # Alternate which goes first, so that drift on a shared machine hits both alike.
            order = [("single-process", single), ("dask", dask)]
            if i % 2:
                order.reverse()
            for impl, fn in order:  # not `name`: that is the workflow's, written in the record
                result = fn()
                rows.append({"repeat": i, "impl": impl, **result})
                stages = "  ".join(f"{s} {v:.1f}" for s, v in result["stages"].items())
                print(
                    f"  repeat {i}: {impl:<14} {result['seconds']:7.1f} s  AUC {result['auc']:.4f}  ({stages})",
                    flush=True,
                )
        info = session.info.as_dict()

    median = {name: statistics.median(r["seconds"] for r in rows if r["impl"] == name) for name in ("single-process", "dask")}
    auc = {name: next(r["auc"] for r in rows if r["impl"] == name) for name in ("single-process", "dask")}
    ratio = median["dask"] / median["single-process"]
    ratio_startup = (median["dask"] + startup) / median["single-process"]
    print(f"single process   median {median['single-process']:.1f} s")
    print(f"Dask ({layout})  median {median['dask']:.1f} s  (+ {startup:.1f} s cluster start-up)")
    target = "" if gpu else "   (target <= 1.3)"
    print(f"wall ratio Dask / single process = {ratio:.3f}{target}; with start-up {ratio_startup:.3f}")
    diff = abs(auc["dask"] - auc["single-process"])
    print(f"AUC single process {auc['single-process']:.4f}  Dask {auc['dask']:.4f}  |diff| {diff:.4f}")

    now = datetime.now(timezone.utc)
    record = {
        "benchmark": "dask_overhead",
        "device": "gpu" if gpu else "cpu",
        "started_at": started.isoformat(),
        "finished_at": now.isoformat(),
        "workflow": name,
        "data": workflow.describe_data(),
        "table_memory_bytes": table_memory,
        "worker_memory": args.worker_memory,
        "text_width": args.text_width,
        "seed": args.seed,
        "rounds": args.rounds,
        "repeats": args.repeats,
        "single_process_threads": backend.n_threads,
        "cluster": info,
        "cluster_startup_seconds": startup,
        "rows": rows,
        "median_seconds": median,
        "ratio": ratio,
        "ratio_with_startup": ratio_startup,
        "auc": auc,
        "environment": collect_environment(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    if table_memory is not None and plan.memory_limit:
        peaks = [m for r in rows if r["impl"] == "dask" for m in r["workers_memory"].values()]
        started = {w["address"] for w in info["worker_details"]}
        joined = sorted({a for r in rows if r["impl"] == "dask" for a in r["workers_memory"]} - started)
        record["workers_joined_during_run"] = joined

        def mb(value: float | None) -> str:
            return "—" if value is None else f"{value:.0f}"

        print(
            f"table in memory {table_memory / 1e6:,.0f} MB = {table_memory / plan.memory_limit:.1f} x one worker's limit "
            f"({plan.memory_limit / 1e6:,.0f} MB); worker peaks, heartbeat / RSS (MiB): "
            + ", ".join(f"{mb(m['dask_reported_peak_host_mb'])} / {mb(m['peak_rss_mb'])}" for m in peaks)
            + (f"; {len(joined)} worker(s) restarted during the runs" if joined else "")
        )
    path = write_result(args.out, record, "dask-overhead", "gpu" if gpu else "cpu")
    print(f"results: {path}")
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
