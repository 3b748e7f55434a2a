"""accel compare's CPU arm against the same script run with plain ``python``, alternately.

The CPU arm's wall (what ``accel compare`` records as ``cold_seconds``: process start to exit,
in a copy of the script's folder, with the memory sampler running) over the wall of
``python SCRIPT ARGS`` timed the same way (start to exit), repeated alternately. Target: ratio of
medians <= 1.05. The whole ``accel compare`` command's wall (copying the folder, writing the
record) is printed beside it as context.

    python benchmarks/bench_compare_overhead.py --repeats 5
"""

from __future__ import annotations

import json
import statistics
import sys

from common import ROOT, Case, Config, main, ratios, run_process, times

SCRIPT = ROOT / "tests" / "compare_scripts" / "features_model.py"  # read as a file, the script compared
PLAIN, ARM = "plain python", "accel compare CPU arm"


def cases(bench):
    work = bench.fresh("plain")
    (work / SCRIPT.name).write_text(SCRIPT.read_text())
    yield Case(value=work, arms=(PLAIN, ARM))


def measure(bench, case, impl):
    script_args = ["--rows", str(bench.args.rows)]
    if impl == PLAIN:
        return {"seconds": run_process([sys.executable, SCRIPT.name, *script_args], cwd=case.value).check().seconds}
    out = bench.fresh("records")
    done = run_process([sys.executable, "-m", "accel", "compare", str(SCRIPT), "--device", "cpu", "--out", str(out), "--json",
                        "--", *script_args], cwd=ROOT).check()  # fmt: skip
    [path] = sorted(out.glob("*.json"))
    return {"seconds": json.loads(path.read_text())["arms"]["cpu"]["cold_seconds"], "command_seconds": done.seconds}


def tidy(bench, rows):
    return {"script": str(SCRIPT.relative_to(ROOT)), "script_args": ["--rows", str(bench.args.rows)],
            "repeats": bench.args.repeats, "rows": rows, **ratios(rows, ARM, PLAIN)}  # fmt: skip


def summary(result):
    rows = result["rows"]
    return "\n".join([
        f"plain python            median {statistics.median(times(rows, PLAIN)):.2f} s",
        f"accel compare CPU arm   median {statistics.median(times(rows, ARM)):.2f} s",
        f"ratio CPU arm / plain = {result['ratio']:.3f}  (target <= 1.05); median of per-repeat ratios "
        f"{result['ratio_paired_median']:.3f}",
        f"whole accel compare command: median {statistics.median(times(rows, ARM, 'command_seconds')):.2f} s "
        "(copy, sampler, record included)",
    ])  # fmt: skip


CONFIG = Config("compare-overhead", __doc__, measure, cases, tidy=tidy, summary=summary, repeats=5, warmup=1, rows="50000")

if __name__ == "__main__":
    main(CONFIG)
