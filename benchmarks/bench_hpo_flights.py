"""Subset-first search on flights (CPU arm): default AUC, tuned AUC, time; reproducibility; time saved.

Runs, one after the other, on the full flights data set:

1. the subset-first search (``accel hpo flights`` with the given trials / subset / rounds share),
   twice with the same seed: the tuned hold-out AUC must be the same both times;
2. unless ``--skip-full``, the same number of trials on all fitting rows with all rounds
   (``--subset 1 --trial-rounds 1``), to measure what subset-first saves.

Prints the default and tuned AUC, their difference (target: tuned >= default + 0.005), the wall
time of each search and of its trial phase, and writes every figure to benchmarks/results/.

    python benchmarks/bench_hpo_flights.py --trials 40 --subset 0.1 --timeout 400

On a machine shared with other jobs, OpenMP threads that spin while they wait make XGBoost many
times slower whenever the cores are oversubscribed; ``OMP_WAIT_POLICY=PASSIVE`` in the
environment avoids that. The value in effect is recorded with the results.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from accel.config import build_config
from accel.environment import collect_environment
from accel.hpo.search import SearchRequest, run_search
from accel.timing import write_result


def search(label: str, trials: int, subset: float, trial_rounds: float, timeout: float | None, seed: int, folder: Path) -> dict:
    hpo = {"trials": trials, "subset": subset, "trial_rounds": trial_rounds, "study": label}
    if timeout:
        hpo["timeout"] = timeout
    config = build_config({"workflow": "flights", "device": "cpu", "seed": seed, "hpo": hpo}, {"out": folder / label})
    print(f"== {label}: {trials} trials, subset {subset:g}, rounds × {trial_rounds:g}", flush=True)
    t0 = time.perf_counter()
    record, _ = run_search(config, SearchRequest(), log=lambda line: print(f"   {line}", file=sys.stderr, flush=True))
    wall = time.perf_counter() - t0
    out = {
        "label": label,
        "trials": trials,
        "subset": subset,
        "trial_rounds": trial_rounds,
        "timeout": timeout,
        "wall_seconds": wall,
        "phases_seconds": record["phases_seconds"],
        "trial_counts": record["trials"],
        "default_auc": record["baseline"]["metric"],
        "tuned_auc": record["final"].get("metric"),
        "tuned_minus_default": (record.get("improvement") or {}).get("tuned_minus_default"),
        "best_trial": record.get("best_trial"),
        "top_k": record.get("top_k"),
        "final": record["final"],
        "baseline": record["baseline"],
        "search_rows": record["search"]["rows"],
        "trial_seconds": None,
    }
    print(
        f"   default AUC {out['default_auc']:.4f}  tuned AUC {out['tuned_auc']:.4f}  "
        f"({out['tuned_minus_default']:+.4f})  wall {wall:.0f} s (trials {record['phases_seconds']['trials']:.0f} s)",
        flush=True,
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--subset", type=float, default=0.1)
    parser.add_argument("--trial-rounds", type=float, default=0.25)
    parser.add_argument("--timeout", type=float, default=None, help="time-out of each subset-first search's trial phase")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--skip-full", action="store_true", help="leave out the full-data comparison")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()

    started = datetime.now(timezone.utc)
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}", flush=True)
    runs = []
    with tempfile.TemporaryDirectory(prefix="accel-hpo-bench-") as tmp:
        folder = Path(tmp)
        for i in (1, 2):
            runs.append(search(f"subset-first-{i}", args.trials, args.subset, args.trial_rounds, args.timeout, args.seed, folder))
        if not args.skip_full:
            runs.append(search("full-data", args.trials, 1.0, 1.0, None, args.seed, folder))

    first, second = runs[0], runs[1]
    same = first["tuned_auc"] == second["tuned_auc"] and first["trial_counts"] == second["trial_counts"]
    summary = {
        "default_auc": first["default_auc"],
        "tuned_auc": first["tuned_auc"],
        "tuned_minus_default": first["tuned_minus_default"],
        "target_met": bool(first["tuned_minus_default"] is not None and first["tuned_minus_default"] >= 0.005),
        "reproducible": same,
        "subset_first_wall_seconds": [first["wall_seconds"], second["wall_seconds"]],
        "within_10_minutes": all(r["wall_seconds"] <= 600 for r in runs[:2]),
    }
    print(
        f"default AUC {summary['default_auc']:.4f}, tuned AUC {summary['tuned_auc']:.4f}: {summary['tuned_minus_default']:+.4f} (target >= +0.005)"
    )
    print(
        f"same seed twice: tuned AUC {first['tuned_auc']:.6f} and {second['tuned_auc']:.6f} -> {'reproduced' if same else 'DIFFERENT'}"
    )
    print(f"subset-first wall: {first['wall_seconds']:.0f} s and {second['wall_seconds']:.0f} s (budget 600 s)")
    if not args.skip_full:
        full = runs[2]
        summary["full_data_wall_seconds"] = full["wall_seconds"]
        summary["trial_phase_seconds"] = {
            "subset_first": first["phases_seconds"]["trials"],
            "full_data": full["phases_seconds"]["trials"],
        }
        summary["trial_phase_saved_seconds"] = full["phases_seconds"]["trials"] - first["phases_seconds"]["trials"]
        summary["trial_phase_ratio_full_over_subset"] = full["phases_seconds"]["trials"] / first["phases_seconds"]["trials"]
        summary["full_data_tuned_auc"] = full["tuned_auc"]
        print(
            f"trial phase: subset-first {first['phases_seconds']['trials']:.0f} s, full-data {full['phases_seconds']['trials']:.0f} s "
            f"(saved {summary['trial_phase_saved_seconds']:.0f} s, {summary['trial_phase_ratio_full_over_subset']:.1f}× faster); "
            f"full-data tuned AUC {full['tuned_auc']:.4f}"
        )

    env = collect_environment()
    record = {
        "benchmark": "hpo_flights",
        "started_at": started.isoformat(),
        "arm": "cpu",
        "settings": vars(args) | {"out": str(args.out)},
        "summary": summary,
        "runs": runs,
        "environment": env,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "note": "2-core machine shared with other jobs: seconds are noisy; AUCs are deterministic",
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = write_result(args.out, record, "hpo-flights", "cpu")
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
