"""RMM pool against no pool on the GPU arm: a feature-engineering pass with many allocations.

Each mode runs in a fresh process (a pool is set once per process): the flights tables are
loaded, then the features stage (joins, group statistics, categoricals: hundreds of device
allocations) runs once untimed and ``--repeats`` times timed, with the device synchronised.
Prints the median seconds per mode and the ratio no-pool / pool; GPU only (on a machine
without a usable GPU it says why and writes nothing).

    python benchmarks/bench_rmm_pool.py --repeats 5

Writes benchmarks/results/<date>-rmm-pool-gpu-NNN.json (never overwritten).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

CHILD = """
import json, sys, time
from accel.backend import gpu_backend
from accel.memory import setup_rmm_pool
from accel.workflows import FlightsWorkflow, WorkflowSettings
mode, repeats = sys.argv[1], int(sys.argv[2])
b = gpu_backend()
info = setup_rmm_pool(b, mode)
wf = FlightsWorkflow(WorkflowSettings())
tables = wf.load(b)
wf.features(b, tables)  # warm-up: kernels loaded, pool grown
times = []
for _ in range(repeats):
    b.synchronize(); t0 = time.perf_counter()
    wf.features(b, tables)
    b.synchronize(); times.append(time.perf_counter() - t0)
print(json.dumps({"mode": mode, "seconds": times, "rmm": info, "rmm_stats": b.rmm_statistics()}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()

    from accel.backend import probe_gpu
    from accel.environment import collect_environment
    from accel.timing import write_result

    probe = probe_gpu()
    if not probe.usable:
        print(f"skipped: no usable GPU ({probe.reason})")
        return 0
    rows = []
    for mode in ("off", "auto"):
        out = subprocess.run([sys.executable, "-c", CHILD, mode, str(args.repeats)], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"  --rmm-pool {mode:<4} features median {statistics.median(rows[-1]['seconds']):.4f} s", flush=True)
    off, pool = (statistics.median(r["seconds"]) for r in rows)
    print(f"no pool / pool = {off / pool:.2f}×")
    now = datetime.now(timezone.utc)
    record = {
        "benchmark": "rmm_pool",
        "device": "gpu",
        "started_at": now.isoformat(),
        "rows": rows,
        "ratio_off_to_pool": off / pool,
        "environment": collect_environment(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"results: {write_result(args.out, record, 'rmm-pool', 'gpu')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
