"""The ``accel scale`` command: :func:`accel.scale` and its table.

The study itself is :mod:`accel.scaleout.scaling`; this module parses the flags, calls the
library function, and prints what came back.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from accel.cli.options import (
    OUT_DEFAULT,
    add_cluster_arguments,
    add_device_argument,
    add_table_arguments,
    positive_int,
    table_overrides,
)
from accel.record import show_result


def register(sub: Any) -> None:
    """Add ``accel scale`` to the ``accel`` command's subcommands."""
    scale = sub.add_parser(
        "scale",
        help="scaling study: the workflow on 1, 2, 4 ... Dask workers, both arms, against the single-process CPU baseline",
    )
    scale.add_argument("workflow", nargs="?", help="a workflow name (flights) or a workflow YAML file")
    add_table_arguments(scale, "with --data: the model (xgboost: the one with a distributed trainer)", probe=True)
    add_cluster_arguments(scale, worker_list=True)
    add_device_argument(
        scale, "the accelerated arm on GPU workers: auto (when usable), gpu (error if none), cpu (CPU workers only)"
    )
    scale.add_argument("--test-size", type=float, help="share of rows held out for testing (default 0.2)")
    scale.add_argument("--rows", type=positive_int, help="use a seeded sample of N rows (before --scale)")
    scale.add_argument("--seed", type=int, help="random seed for sampling, splitting and the model (default 42)")
    scale.add_argument("--out", type=Path, help=f"folder for the scaling record and its plot (default: {OUT_DEFAULT})")
    scale.add_argument("--no-baseline", action="store_true", help="leave out the single-process CPU baseline")
    scale.add_argument("--json", action="store_true", help="print the scaling record as JSON instead of the table")
    scale.set_defaults(handler=command)


def command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from accel.api import scale
    from accel.report.console import render_scaling

    flags = ("cluster", "workers", "threads_per_worker", "rmm_pool", "device_memory_limit", "worker_memory", "protocol", "scale")
    dask = {flag: getattr(args, flag) for flag in flags}
    result = scale(args.workflow, **table_overrides(args), **dask, baseline=not args.no_baseline, progress=True)
    written = {"scaling record": result.path, "plot": result.plot}
    show_result(result.record, args.json, lambda: render_scaling(result.typed, Console()), written)
    if result.failed:
        print(f"accel: {len(result.failed)} of the runs failed (see the record)", file=sys.stderr)
        return 1
    return 0
