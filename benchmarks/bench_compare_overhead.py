"""accel compare's CPU arm against the same script run with plain ``python``, alternately.

The CPU arm's wall (what ``accel compare`` records as ``cold_seconds``: process start to exit,
in a copy of the script's folder, with the memory sampler running) over the wall of
``python SCRIPT ARGS`` timed the same way (``subprocess.run``, start to exit), repeated
alternately. Target: ratio of medians <= 1.05. The whole ``accel compare`` command's wall
(copying the folder, writing the record) is printed beside it as context.

    python benchmarks/bench_compare_overhead.py --repeats 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "compare_scripts" / "features_model.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", type=int, default=50_000, help="rows the example script generates")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    script_args = ["--rows", str(args.rows)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "plain"
        work.mkdir()
        (work / SCRIPT.name).write_text(SCRIPT.read_text())

        def plain() -> float:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, SCRIPT.name, *script_args], cwd=work, check=True, capture_output=True)
            return time.perf_counter() - t0

        def compared(i: int) -> tuple[float, float]:
            out = Path(tmp) / f"records-{i}"
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "accel", "compare", str(SCRIPT), "--device", "cpu", "--out", str(out), "--json",
                 "--", *script_args],
                cwd=ROOT, check=True, capture_output=True,
            )  # fmt: skip
            whole = time.perf_counter() - t0
            [path] = sorted(out.glob("*.json"))
            return json.loads(path.read_text())["arms"]["cpu"]["cold_seconds"], whole

        print("warm-up (untimed): one of each", flush=True)
        plain()
        compared(-1)
        for i in range(args.repeats):
            order = ["plain", "compare"] if i % 2 == 0 else ["compare", "plain"]
            for what in order:
                if what == "plain":
                    rows.append({"repeat": i, "impl": "plain python", "seconds": plain()})
                else:
                    arm, whole = compared(i)
                    rows.append({"repeat": i, "impl": "accel compare CPU arm", "seconds": arm, "command_seconds": whole})
                print(f"  repeat {i}: {rows[-1]['impl']:<22} {rows[-1]['seconds']:6.2f} s", flush=True)

    arm = [r["seconds"] for r in rows if r["impl"] == "accel compare CPU arm"]
    whole = [r["command_seconds"] for r in rows if r["impl"] == "accel compare CPU arm"]
    base = [r["seconds"] for r in rows if r["impl"] == "plain python"]
    ratio = statistics.median(arm) / statistics.median(base)
    paired = statistics.median(a / b for a, b in zip(arm, base))
    print(f"plain python            median {statistics.median(base):.2f} s (min {min(base):.2f}, max {max(base):.2f})")
    print(f"accel compare CPU arm   median {statistics.median(arm):.2f} s (min {min(arm):.2f}, max {max(arm):.2f})")
    print(f"ratio CPU arm / plain = {ratio:.3f}  (target <= 1.05); median of per-repeat ratios {paired:.3f}")
    print(f"whole accel compare command: median {statistics.median(whole):.2f} s (copy, sampler, record included)")

    sys.path.insert(0, str(ROOT))
    from accel.environment import collect_environment
    from accel.timing import write_result

    now = datetime.now(timezone.utc)
    record = {
        "benchmark": "compare_overhead",
        "device": "cpu",
        "started_at": now.isoformat(),
        "script": str(SCRIPT.relative_to(ROOT)),
        "script_args": script_args,
        "repeats": args.repeats,
        "rows": rows,
        "ratio": ratio,
        "ratio_paired_median": paired,
        "environment": collect_environment(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"results: {write_result(args.out, record, 'compare-overhead', 'cpu')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
