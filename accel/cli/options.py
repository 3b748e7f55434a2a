"""The argument types and option groups the commands share (argparse only).

Imports only the flat core (and :mod:`accel.scaleout.cluster`'s list of cluster kinds), so that
any slice's command may take its options from here without importing another command.
"""

from __future__ import annotations

import argparse

from accel.scaleout.cluster import CLUSTER_KINDS

#: What the help says of the output folder's default (:func:`accel.record.output_root`).
OUT_DEFAULT = "$ACCEL_OUT_DIR, else runs/"


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def batch_rows(text: str) -> str | int:
    if text == "auto":
        return text
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be auto or a positive integer, got {text!r}") from None


def date_format_flag(text: str) -> tuple[str, str]:
    from accel.data.dates import parse_override

    try:
        return parse_override(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--date-format ")) from None


def add_overwrite_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--overwrite``: replace ``what`` (files the user named) if it exists; without it an existing file is refused."""
    parser.add_argument(
        "--overwrite", action="store_true", help=f"replace {what} if it exists (without it an existing file is refused)"
    )


def add_device_argument(parser: argparse.ArgumentParser, what: str, default: str | None = None) -> None:
    """``--device auto|cpu|gpu``: the accelerated arm; ``what`` says what each choice does for the command."""
    parser.add_argument("--device", choices=["auto", "cpu", "gpu"], default=default, help=what)


def add_table_arguments(parser: argparse.ArgumentParser, model_help: str, probe: bool = False) -> None:
    """The flags that point a command at the user's own table (``accel run``, ``accel scale``, ``accel hpo``);
    ``probe``: ``--probe`` too, the encoding probe of a user's table (not ``accel hpo``)."""
    from accel.registry import MODELS

    parser.add_argument("--data", help="your own table: a CSV file, a Parquet file, or a folder of Parquet files")
    parser.add_argument("--target", help="with --data: the column to predict")
    parser.add_argument(
        "--task",
        choices=["auto", "classification", "regression"],
        help="with --data: inferred when absent (text/boolean or few-valued integer target: classification)",
    )
    parser.add_argument("--model", choices=list(MODELS), help=model_help)
    parser.add_argument("--drop", help="with --data: columns to leave out, comma-separated")
    parser.add_argument("--delimiter", help="with --data: the CSV delimiter (detected when the file parses into one column)")
    parser.add_argument(
        "--date-format",
        type=date_format_flag,
        action="append",
        metavar="COL=FMT",
        help="with --data: parse column COL as dates in the strptime format FMT (e.g. 'Month=%%Y %%b'), "
        "over the detected layout; repeatable",
    )
    if probe:
        parser.add_argument(
            "--probe",
            choices=["auto", "off", "force"],
            help="with --data and xgboost: the encoding probe for categorical columns of 33-65,536 values "
            "(auto, default: reuse this table's cached decision, probe only within 10%% of training's cost; "
            "off: target encoding; force: probe again)",
        )


def worker_counts(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]`` (sorted, distinct, each positive)."""
    try:
        counts = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be positive integers separated by commas, got {text!r}") from None
    if not counts or counts[0] <= 0:
        raise argparse.ArgumentTypeError(f"must be positive integers separated by commas, got {text!r}")
    return counts


def add_cluster_arguments(parser: argparse.ArgumentParser, *, worker_list: bool = False) -> None:
    """The scale-out options of ``accel run`` (and of ``accel scale`` with ``worker_list=True``)."""
    group = parser.add_argument_group("scale out with Dask")
    group.add_argument(
        "--cluster",
        choices=CLUSTER_KINDS,
        help="start a Dask cluster here: local (CPU worker processes) or local-cuda (one worker per GPU)",
    )
    if worker_list:
        group.add_argument("--workers", type=worker_counts, metavar="N,N,...", help="worker counts to compare, e.g. 1,2,4")
    else:
        group.add_argument(
            "--scheduler",
            metavar="tcp://HOST:PORT",
            help="run on a running Dask cluster (GPU or CPU workers, detected from the workers)",
        )
        group.add_argument(
            "--baseline-scheduler",
            metavar="tcp://HOST:PORT",
            help="with --scheduler of GPU workers: a running CPU cluster for the baseline arm (default: this process)",
        )
        workers_help = "workers to start (local: default one per core; local-cuda: default one per GPU)"
        group.add_argument("--workers", type=positive_int, metavar="N", help=workers_help)
    group.add_argument("--threads-per-worker", type=positive_int, metavar="T", help="threads of each worker")
    if "--rmm-pool" not in parser._option_string_actions:  # accel run has it already; with local-cuda: per worker
        group.add_argument(
            "--rmm-pool",
            metavar="SIZE",
            help="local-cuda: RMM pool per worker: auto, off, a size (20GB) or a share of the GPU's free memory (0.5), as in a single-process run",
        )
    group.add_argument(
        "--device-memory-limit",
        metavar="SIZE",
        help="local-cuda: device memory per worker above which Dask-CUDA spills to host, e.g. 30GB or 0.8 (of the GPU's total memory)",
    )
    group.add_argument(
        "--worker-memory",
        metavar="SIZE",
        help="host memory per worker of a cluster accel starts, e.g. 400MB or 4GB: Dask spills partitions to disk beyond it",
    )
    group.add_argument("--protocol", choices=["tcp", "ucx"], help="local clusters: tcp (default), or ucx when installed")
    group.add_argument("--scale", type=positive_int, metavar="K", help="replicate the data K times with jitter (default 1)")


def table_overrides(args: argparse.Namespace) -> dict:
    """The flags ``accel run`` and ``accel hpo`` share (None where not given)."""
    drop = [c.strip() for c in args.drop.split(",") if c.strip()] if args.drop else None
    date_format = dict(getattr(args, "date_format", None) or []) or None
    names = ("device", "rows", "out", "seed", "data", "target", "task", "model", "drop", "delimiter", "test_size")
    given = {name: getattr(args, name) for name in names}
    return {"date_format": date_format, "probe": getattr(args, "probe", None), **given, "drop": drop}
