"""``accel compare``: its options, and what it prints (:mod:`accel.bench.compare` runs the comparison)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from accel.cli.options import add_device_argument


def register(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        usage="accel compare PROGRAM [options] [-- ARGS...]",
        help="run your unchanged pandas / scikit-learn script (or notebook) on the CPU and with cudf.pandas/cuml.accel",
        description=(
            "Runs SCRIPT twice, each in a fresh process in its own copy of the script's folder: as plain "
            "'python SCRIPT ARGS' (CPU arm) and with cudf.pandas and cuml.accel installed (GPU arm). Reports wall "
            "time, peak memory, whether both printed and wrote the same numbers, and which calls fell back to the CPU. "
            "Arguments for the script go after '--'."
        ),
    )
    p.add_argument("program", type=Path, help="a Python script (.py) or a notebook (.ipynb)")
    p.add_argument("--repeat", type=int, default=0, help="warm runs of each arm after the cold one (median/min/max)")
    p.add_argument("--accelerators", help="GPU arm: comma-separated, from cudf.pandas, cuml.accel (default: those installed)")
    add_device_argument(p, "cpu: the CPU arm only; gpu: fail if the GPU arm cannot run", default="auto")
    p.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance for numbers compared (default 1e-5)")
    p.add_argument("--atol", type=float, default=1e-8, help="absolute tolerance for numbers compared (default 1e-8)")
    p.add_argument("--ignore-lines", help="a regular expression: output lines matching it are not compared (e.g. timings)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds one run may take; then its process group is killed")
    p.add_argument("--no-profile", action="store_true", help="skip the extra profiled GPU run")
    p.add_argument("--out", type=Path, default=None, help="folder for the record (default: $ACCEL_OUT_DIR, else runs/)")
    p.add_argument("--json", action="store_true", help="print the record as JSON instead of tables")
    # Arguments for the script follow '--'; accel.cli.main hands them over untouched (argparse would
    # read them as its own options).
    p.set_defaults(script_args=[], handler=_cmd_compare)


def _cmd_compare(args: argparse.Namespace) -> int:
    from rich.console import Console

    from accel.bench.compare import Options, compare
    from accel.record import CompareRecord, output_root, show_result
    from accel.report.console import render_compare

    opts = Options(
        program=args.program, args=list(args.script_args), out=args.out or output_root(), repeat=args.repeat, accelerators=args.accelerators,
        device=args.device, rtol=args.rtol, atol=args.atol, timeout=args.timeout, profile=not args.no_profile,
        ignore=args.ignore_lines,
    )  # fmt: skip
    record, path = compare(opts)
    written = {"compare record": path}
    typed = CompareRecord.model_validate(record)
    show_result(record, args.json, lambda: render_compare(typed, Console()), written)
    gpu = typed.arms["gpu"]
    if gpu.status == "failed":
        print(f"accel: the script fails on the GPU arm only ({gpu.reason}): see the record", file=sys.stderr)
        return 1
    return 0
