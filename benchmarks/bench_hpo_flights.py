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

import os
import sys

from common import Case, Config, main

from accel.config import build_config
from accel.hpo.search import SearchRequest, run_search


def arguments(parser):
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--subset", type=float, default=0.1)
    parser.add_argument("--trial-rounds", type=float, default=0.25)
    parser.add_argument("--timeout", type=float, default=None, help="time-out of each subset-first search's trial phase")
    parser.add_argument("--skip-full", action="store_true", help="leave out the full-data comparison")


def cases(bench):
    a = bench.args
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}", flush=True)
    for i in (1, 2):
        yield Case(
            f"subset-first-{i}", {"trials": a.trials, "subset": a.subset, "trial_rounds": a.trial_rounds, "timeout": a.timeout}
        )
    if not a.skip_full:
        yield Case("full-data", {"trials": a.trials, "subset": 1.0, "trial_rounds": 1.0, "timeout": None})


def measure(bench, case, arm):
    """One search on flights; the harness's clock is its wall."""
    hpo = {k: v for k, v in case.value.items() if v is not None} | {"study": case.label}
    config = build_config({"workflow": "flights", "device": "cpu", "seed": bench.args.seed, "rows": bench.args.rows, "hpo": hpo},
                          {"out": bench.fresh(case.label)})  # fmt: skip
    record, _ = run_search(config, SearchRequest(), log=lambda line: print(f"   {line}", file=sys.stderr, flush=True))
    return {
        **case.value, "phases_seconds": record["phases_seconds"], "trial_counts": record["trials"],
        "default_auc": record["baseline"]["metric"], "tuned_auc": record["final"].get("metric"),
        "tuned_minus_default": (record.get("improvement") or {}).get("tuned_minus_default"),
        "best_trial": record.get("best_trial"), "top_k": record.get("top_k"), "final": record["final"],
        "baseline": record["baseline"], "search_rows": record["search"]["rows"], "trial_seconds": None,
    }  # fmt: skip


def progress(row):
    return (f"  default AUC {row['default_auc']:.4f}  tuned AUC {row['tuned_auc']:.4f}  ({row['tuned_minus_default']:+.4f})"
            f"  trials {row['phases_seconds']['trials']:.0f} s")  # fmt: skip


def tidy(bench, rows):
    runs = [{"label": r.pop("case"), "wall_seconds": r.pop("seconds"), **r} for r in rows]
    first, second = runs[0], runs[1]
    gain = first["tuned_minus_default"]
    summary = {
        "default_auc": first["default_auc"], "tuned_auc": first["tuned_auc"], "tuned_minus_default": gain,
        "target_met": bool(gain is not None and gain >= 0.005),
        "reproducible": first["tuned_auc"] == second["tuned_auc"] and first["trial_counts"] == second["trial_counts"],
        "subset_first_wall_seconds": [first["wall_seconds"], second["wall_seconds"]],
        "within_10_minutes": all(r["wall_seconds"] <= 600 for r in runs[:2]),
    }  # fmt: skip
    if len(runs) > 2:
        full, subset = runs[2]["phases_seconds"]["trials"], first["phases_seconds"]["trials"]
        summary |= {"full_data_wall_seconds": runs[2]["wall_seconds"],
                    "trial_phase_seconds": {"subset_first": subset, "full_data": full},
                    "trial_phase_saved_seconds": full - subset, "trial_phase_ratio_full_over_subset": full / subset,
                    "full_data_tuned_auc": runs[2]["tuned_auc"]}  # fmt: skip
    return {"arm": "cpu", "settings": {k: str(v) if k == "results" else v for k, v in vars(bench.args).items()},
            "summary": summary, "runs": runs, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}  # fmt: skip


def summary(result):
    s, runs = result["summary"], result["runs"]
    lines = [
        f"default AUC {s['default_auc']:.4f}, tuned AUC {s['tuned_auc']:.4f}: {s['tuned_minus_default']:+.4f} (target >= +0.005)",
        f"same seed twice: tuned AUC {runs[0]['tuned_auc']:.6f} and {runs[1]['tuned_auc']:.6f} -> "
        f"{'reproduced' if s['reproducible'] else 'DIFFERENT'}",
        f"subset-first wall: {runs[0]['wall_seconds']:.0f} s and {runs[1]['wall_seconds']:.0f} s (budget 600 s)",
    ]
    if "trial_phase_seconds" in s:
        t = s["trial_phase_seconds"]
        lines.append(f"trial phase: subset-first {t['subset_first']:.0f} s, full-data {t['full_data']:.0f} s (saved "
                     f"{s['trial_phase_saved_seconds']:.0f} s, {s['trial_phase_ratio_full_over_subset']:.1f}× faster); "
                     f"full-data tuned AUC {s['full_data_tuned_auc']:.4f}")  # fmt: skip
    return "\n".join(lines)


CONFIG = Config("hpo-flights", __doc__, measure, cases, arguments, tidy, summary, progress, rows="all", seed=True)

if __name__ == "__main__":
    main(CONFIG)
