"""The ``accel`` command.

User errors (bad flags, bad files, a GPU asked for where none is usable) print one line,
``accel: error: ...``, on stderr and exit with status 2; no traceback, nothing written.
A run in which an arm failed exits with status 1 after writing its record.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from accel import __version__
from accel.errors import AccelError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (argparse prints the usage block first)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise AccelError(f"{message} (see '{self.prog} --help')")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="accel", description="Tabular data science on the GPU, measured against a fair CPU baseline.")
    parser.add_argument("--version", action="version", version=f"accel {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    info = sub.add_parser("info", help="this machine: CPU, memory, GPUs, library versions, which arms can run")
    info.add_argument("--json", action="store_true", help="print JSON instead of tables")

    run = sub.add_parser("run", help="run a workflow on the accelerated arm and the CPU baseline arm")
    run.add_argument("workflow", help="a workflow name (flights) or a workflow YAML file")
    run.add_argument(
        "--device",
        choices=["auto", "cpu", "gpu"],
        help="the accelerated arm: auto (GPU when usable), gpu (error if none), cpu (run only the CPU baseline)",
    )
    run.add_argument("--rows", type=positive_int, help="use a seeded sample of N rows (quick runs)")
    run.add_argument("--out", type=Path, help="folder for run records (default: runs/)")
    run.add_argument("--seed", type=int, help="random seed for sampling, splitting and the model (default 42)")
    run.add_argument("--json", action="store_true", help="print the run record as JSON instead of tables")

    from accel.benchcli import register as register_bench

    register_bench(sub)  # bench, data, report: each sets its own handler
    return parser


def _cmd_info(args: argparse.Namespace) -> int:
    from rich.console import Console

    from accel.environment import collect_environment
    from accel.report import render_info

    env = collect_environment()
    if args.json:
        print(json.dumps(env, indent=2, default=str))
    else:
        render_info(env, Console())
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from accel.config import build_config, read_workflow_file
    from accel.pairing import paired_run
    from accel.report import ProgressDisplay, render_run

    target = args.workflow
    file_values, source = None, "command line"
    if target.endswith((".yaml", ".yml")) or Path(target).is_file():
        file_values, source = read_workflow_file(Path(target)), target
        if "out" in file_values and file_values["out"] is not None:
            # A relative output folder in a file is relative to where accel runs, like --out.
            file_values["out"] = str(file_values["out"])
    else:
        file_values = {"workflow": target}
    overrides = {"device": args.device, "rows": args.rows, "out": args.out, "seed": args.seed}
    config = build_config(file_values, overrides, source)

    progress = ProgressDisplay()
    try:
        record, path = paired_run(config, progress)
    finally:
        progress.close()
    if args.json:
        print(json.dumps(record, indent=2, default=str))
    else:
        render_run(record, Console())
    print(f"run record: {path}")
    failed = [arm for arm, r in record["arms"].items() if r["status"] == "failed"]
    if failed:
        print(f"accel: {' and '.join(failed)} arm failed (see the record)", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        handler = getattr(args, "handler", None)
        if handler is not None:
            return handler(args)
        if args.command == "info":
            return _cmd_info(args)
        if args.command == "run":
            return _cmd_run(args)
        raise AccelError(f"unknown command {args.command!r}")
    except AccelError as exc:
        print(f"accel: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("accel: interrupted; nothing was written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
