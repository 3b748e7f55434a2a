"""OpenMP's idle threads for CPU XGBoost: libgomp's default, PASSIVE, spin counts and accel's setting, quiet and busy.

Each sample is a fresh process (libgomp reads OMP_WAIT_POLICY once, when it loads) that trains
the same XGBoost model (hist, all cores) on the same generated table and prints its training
time. The ``accel`` arm imports accel first and leaves the variables unset, so it measures the
setting accel really makes (GOMP_SPINCOUNT=10000); the others never import accel and set only
their own variables (OMP_WAIT_POLICY, GOMP_SPINCOUNT).
"Busy" runs the same samples while one spinning process per core competes for the cores, as a
Dask worker, the other arm or a CI job would. Arms alternate within each repeat.

Prints, per condition, the median training time of each arm and its ratio to libgomp's default
(target for accel's setting: about 1.0 on a quiet machine, well below 1 on a busy one).

    python benchmarks/bench_omp_wait_policy.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

from common import Case, Config, child_env, main, names

WORKLOAD = r"""
import json, os, sys, time
if sys.argv[1] == "accel":
    import accel  # sets GOMP_SPINCOUNT=10000 unless the user set it or OMP_WAIT_POLICY
import numpy as np, xgboost as xgb
from sklearn.metrics import roc_auc_score
rows, cols, rounds = int(sys.argv[2]), 32, int(sys.argv[3])
rng = np.random.default_rng(0)
X = rng.standard_normal((rows, cols), dtype=np.float32)
y = (X[:, :4].sum(axis=1) + 0.5 * rng.standard_normal(rows) > 0).astype(np.int32)
split = int(rows * 0.8)
dtrain = xgb.DMatrix(X[:split], label=y[:split], nthread=os.cpu_count())
params = {"tree_method": "hist", "max_depth": 6, "eta": 0.1, "objective": "binary:logistic", "nthread": os.cpu_count()}
t0 = time.perf_counter()
booster = xgb.train(params, dtrain, num_boost_round=rounds)
seconds = time.perf_counter() - t0
auc = roc_auc_score(y[split:], booster.predict(xgb.DMatrix(X[split:])))
print(json.dumps({"seconds": seconds, "auc": float(auc), "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
                  "gomp_spincount": os.environ.get("GOMP_SPINCOUNT")}))
"""

ALL_ARMS = {
    # name: (import accel first?, environment change). Results -001 to -004 were measured when
    # accel set PASSIVE: their arm "PASSIVE (accel)" is today's "PASSIVE".
    "libgomp default": ("plain", {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": None}),
    "PASSIVE": ("plain", {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": None}),
    # What accel sets for itself (GOMP_SPINCOUNT=10000), measured through `import accel`.
    "accel": ("accel", {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": None}),
    # libgomp's own middle ground: spin this many times, then sleep (default 300,000).
    "spin 1k": ("plain", {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "1000"}),
    "spin 10k": ("plain", {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "10000"}),
    "spin 30k": ("plain", {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "30000"}),
    "spin 100k": ("plain", {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "100000"}),
}


def _spin() -> None:
    while True:
        pass


def arguments(parser):
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--conditions", type=names, default="quiet,busy", help="comma-separated: quiet, busy")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one sample may take")
    parser.add_argument(
        "--arms", type=arms, default="libgomp default,PASSIVE,accel", help="comma-separated, from: " + ", ".join(ALL_ARMS)
    )


def arms(text: str) -> list[str]:
    chosen = names(text)
    if not chosen or set(chosen) - set(ALL_ARMS) or "libgomp default" not in chosen:
        raise argparse.ArgumentTypeError("names from " + ", ".join(ALL_ARMS) + ", including 'libgomp default'")
    return chosen


def cases(bench):
    """Each condition in turn; for "busy", one spinning process per core held while its samples run."""
    if set(bench.args.conditions) - {"quiet", "busy"}:
        raise SystemExit("--conditions takes quiet and/or busy")
    cores = os.cpu_count() or 1
    bench.record.update(workload={"rows": bench.args.rows, "columns": 32, "rounds": bench.args.rounds, "nthread": cores,
                                  "busy_spinners": cores}, repeats=bench.args.repeats,
                        arms={name: ALL_ARMS[name][1] for name in bench.args.arms})  # fmt: skip
    for condition in bench.args.conditions:
        spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(cores if condition == "busy" else 0)]
        for p in spinners:
            p.start()
        time.sleep(1 if spinners else 0)
        try:
            yield Case(condition, arms=tuple(bench.args.arms))
        finally:
            for p in spinners:
                p.terminate()
                p.join()


def measure(bench, case, arm):
    """A fresh process trains the model; its training seconds (libgomp reads the setting once, when it loads)."""
    mode, change = ALL_ARMS[arm]
    env = child_env()
    for key, value in change.items():
        env.pop(key, None) if value is None else env.__setitem__(key, value)
    out = subprocess.run([sys.executable, "-c", WORKLOAD, mode, str(bench.args.rows), str(bench.args.rounds)], env=env,
                         capture_output=True, text=True, timeout=bench.args.timeout, check=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def tidy(bench, rows):
    summary = {}
    for condition in bench.args.conditions:
        med = {
            arm: statistics.median(r["seconds"] for r in rows if r["case"] == condition and r["impl"] == arm)
            for arm in bench.args.arms
        }
        summary[condition] = {"median_seconds": med, "ratio_over_default": {arm: med[arm] / med["libgomp default"] for arm in med if arm != "libgomp default"}}  # fmt: skip
    return {"samples": rows, "summary": summary}


def summary(result):
    w = result["workload"]
    lines = [f"XGBoost hist, {w['rows']:,} rows x 32, {w['rounds']} rounds, nthread={w['nthread']} (all cores)"]
    for condition, s in result["summary"].items():
        lines.append(f"{condition:<5}  " + "   ".join(f"{arm} {v:6.2f} s" for arm, v in s["median_seconds"].items())
                     + "   ratio / default: " + ", ".join(f"{arm} {r:.3f}" for arm, r in s["ratio_over_default"].items()))  # fmt: skip
    return "\n".join(lines)


CONFIG = Config("omp-wait-policy", __doc__, measure, cases, arguments, tidy, summary, repeats=3, rows="200000",
                progress=lambda s: f"  AUC {s['auc']:.4f}  (OMP_WAIT_POLICY={s['omp_wait_policy']}, GOMP_SPINCOUNT={s['gomp_spincount']})")  # fmt: skip

if __name__ == "__main__":
    main(CONFIG)
