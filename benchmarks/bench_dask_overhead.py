"""The Dask path against the single-process path on the same data, cores and seed: Dask's overhead.

CPU (default): a ``LocalCluster`` whose workers together have as many threads as the single
process uses (every core), against the CPU arm of ``accel run``. GPU (``--cluster
local-cuda``): a ``LocalCUDACluster`` with one worker against the single-process GPU arm.
Both run the flights workflow replicated ``--scale`` times (default 10). After an untimed
warm-up of each (imports, worker start-up), the two alternate ``--repeats`` times; the script
prints the wall ratio (Dask / single process, medians of the stage totals; cluster start-up is
reported beside it, not inside) and both AUCs. Target on CPU: ratio <= 1.3.

    python benchmarks/bench_dask_overhead.py --scale 10 --workers 2
    python benchmarks/bench_dask_overhead.py --cluster local-cuda --scale 10      # on a GPU machine
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from accel.backend import cpu_backend, cpu_threads, gpu_backend
from accel.config import ClusterConfig
from accel.environment import collect_environment
from accel.models import XGBoostParams
from accel.record import write_record
from accel.runner import run_arm
from accel.scaleout.cluster import ClusterSession, plan_cluster
from accel.scaleout.runner import run_on_session
from accel.workflows import FlightsWorkflow, WorkflowSettings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", choices=["local", "local-cuda"], default="local")
    parser.add_argument("--workers", type=int, default=None, help="local: workers (default: one per core)")
    parser.add_argument("--scale", type=int, default=10, help="copies of the flights table (default 10)")
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
        plan = plan_cluster(ClusterConfig(kind="local-cuda", workers=1))
        backend = gpu_backend()
    else:
        workers = args.workers or cores
        plan = plan_cluster(ClusterConfig(kind="local", workers=workers, threads_per_worker=max(1, cores // workers)))
        backend = cpu_backend()
    settings = WorkflowSettings(seed=args.seed, scale=args.scale)
    params = XGBoostParams(n_estimators=args.rounds)
    workflow = FlightsWorkflow(settings, params)
    layout = f"{plan.workers} worker(s) x {plan.threads_per_worker} thread(s)"
    print(f"single process: {backend.name}, {backend.n_threads} threads; Dask: {args.cluster}, {layout}", flush=True)

    rows: list[dict] = []
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    with ClusterSession(plan) as session:
        startup = time.perf_counter() - t0
        warm = WorkflowSettings(rows=5000, seed=args.seed)
        print("warm-up (untimed): a 5,000-row run of each", flush=True)
        run_arm(backend, FlightsWorkflow(warm, XGBoostParams(n_estimators=10)))
        run_on_session(session, "flights", warm, XGBoostParams(n_estimators=10), args.seed)

        def single() -> dict:
            r = run_arm(backend, workflow)
            return {"stages": r.stages, "seconds": r.total_seconds, "auc": r.metrics["auc"], "rows": r.rows}

        def dask() -> dict:
            arm, _ = run_on_session(session, "flights", settings, params, args.seed)
            return {
                "stages": arm["stages"],
                "seconds": arm["total_seconds"],
                "auc": arm["metrics"]["auc"],
                "rows": arm["rows"],
                "workers_memory": arm["workers_memory"],
            }

        for i in range(args.repeats):
            # Alternate which goes first, so that drift on a shared machine hits both alike.
            order = [("single-process", single), ("dask", dask)]
            if i % 2:
                order.reverse()
            for name, fn in order:
                result = fn()
                rows.append({"repeat": i, "impl": name, **result})
                stages = "  ".join(f"{s} {v:.1f}" for s, v in result["stages"].items())
                print(
                    f"  repeat {i}: {name:<14} {result['seconds']:7.1f} s  AUC {result['auc']:.4f}  ({stages})",
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
        "workflow": "flights",
        "data": workflow.describe_data(),
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
    path = write_record(args.out, record, f"{now:%Y-%m-%d}-dask-overhead-{'gpu' if gpu else 'cpu'}")
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
