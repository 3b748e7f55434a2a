"""OpenMP's idle threads for CPU XGBoost: libgomp's default, PASSIVE, spin counts and accel's setting, quiet and busy.

Each sample is a fresh process (libgomp reads OMP_WAIT_POLICY once, when it loads) that trains
the same XGBoost model (hist, all cores) on the same generated table and prints its training
time. The ``accel`` arm imports accel first and leaves the variables unset, so it measures the
setting accel really makes (GOMP_SPINCOUNT=10000); the others never import accel and set only
their own variables (OMP_WAIT_POLICY, GOMP_SPINCOUNT).
"Busy" runs the same samples while one spinning process per core competes for the cores, as a
Dask worker, the other arm or a CI job would. Arms alternate within each repeat.

Prints, per condition, the median training time of each arm and its ratio to libgomp's default
(target for accel's setting: about 1.0 on a quiet machine, well below 1 on a busy one). Writes the raw samples to
benchmarks/results/ (never overwritten).

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
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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
ARMS = dict(ALL_ARMS)


def _spin() -> None:
    while True:
        pass


def sample(arm: str, rows: int, rounds: int, timeout: float) -> dict:
    mode, change = ARMS[arm]
    env = dict(os.environ)
    for key, value in change.items():
        env.pop(key, None) if value is None else env.__setitem__(key, value)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-c", WORKLOAD, mode, str(rows), str(rounds)],
        env=env, capture_output=True, text=True, timeout=timeout, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="samples of each arm per condition (default 3)")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--conditions", default="quiet,busy", help="comma-separated: quiet, busy")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one sample may take")
    parser.add_argument("--arms", default="libgomp default,PASSIVE,accel", help="comma-separated, from: " + ", ".join(ALL_ARMS))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    names = [a.strip() for a in args.arms.split(",") if a.strip()]
    if not names or set(names) - set(ALL_ARMS) or "libgomp default" not in names:
        parser.error("--arms: names from " + ", ".join(ALL_ARMS) + ", including 'libgomp default'")
    ARMS.clear()
    ARMS.update({n: ALL_ARMS[n] for n in names})
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    if not conditions or set(conditions) - {"quiet", "busy"}:
        parser.error("--conditions takes quiet and/or busy")

    cores = os.cpu_count() or 1
    samples = []
    for condition in conditions:
        spinners = []
        if condition == "busy":
            spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(cores)]
            for p in spinners:
                p.start()
            time.sleep(1)
        try:
            for i in range(args.repeats):
                order = list(ARMS) if i % 2 == 0 else list(reversed(ARMS))
                for arm in order:
                    s = sample(arm, args.rows, args.rounds, args.timeout)
                    samples.append({"condition": condition, "repeat": i, "arm": arm, **s})
                    print(
                        f"  {condition:<5} repeat {i}: {arm:<16} train {s['seconds']:7.2f} s  AUC {s['auc']:.4f}  "
                        f"(OMP_WAIT_POLICY={s['omp_wait_policy']}, GOMP_SPINCOUNT={s['gomp_spincount']})",
                        flush=True,
                    )
        finally:
            for p in spinners:
                p.terminate()
                p.join()

    summary = {}
    print(f"\nXGBoost hist, {args.rows:,} rows x 32, {args.rounds} rounds, nthread={cores} (all cores)")
    for condition in conditions:
        med = {
            arm: statistics.median(s["seconds"] for s in samples if s["condition"] == condition and s["arm"] == arm)
            for arm in ARMS
        }
        ratios = {arm: med[arm] / med["libgomp default"] for arm in ARMS if arm != "libgomp default"}
        summary[condition] = {"median_seconds": med, "ratio_over_default": ratios}
        print(
            f"{condition:<5}  "
            + "   ".join(f"{arm} {med[arm]:6.2f} s" for arm in ARMS)
            + "   ratio / default: "
            + ", ".join(f"{arm} {r:.3f}" for arm, r in ratios.items())
        )

    sys.path.insert(0, str(ROOT))
    from accel.environment import collect_environment
    from accel.timing import write_result

    now = datetime.now(timezone.utc)
    record = {
        "benchmark": "omp_wait_policy",
        "device": "cpu",
        "started_at": now.isoformat(),
        "workload": {"rows": args.rows, "columns": 32, "rounds": args.rounds, "nthread": cores, "busy_spinners": cores},
        "repeats": args.repeats,
        "arms": {name: ARMS[name][1] for name in ARMS},
        "samples": samples,
        "summary": summary,
        "environment": collect_environment(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = write_result(args.out, record, "omp-wait-policy", "cpu")
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
