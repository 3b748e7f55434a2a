"""The flags the commands share, declared once, and the argument types (argparse only).

What a flag is (its type, choices, action, metavar, group) is :data:`KINDS`, one entry per flag;
each command names its flags with the help they have there (:func:`add_flags`), and flags with
the same help everywhere are named together (:data:`TABLE`, :data:`RUN_OR_SCALE`). Imports only
the flat core (the registry's models, :mod:`accel.scaleout.cluster`'s list of cluster kinds), so
that any slice's command may take its options from here without importing another command.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

from accel.registry import MODELS
from accel.scaleout.cluster import CLUSTER_KINDS

#: What the help says of the output folder's default (:func:`accel.record.output_root`).
OUT_DEFAULT = "$ACCEL_OUT_DIR, else runs/"

T = TypeVar("T")


def checked(cast: Callable[[str], T], ok: Callable[[T], bool], what: str, bad: str | None = None) -> Callable[[str], T]:
    """An argument type: ``cast(text)`` (else: must be ``what``) for which ``ok`` holds (else: must be
    ``bad``, by default ``what``; NaN never holds). The refusal quotes a whole number as read, else the text."""

    def parse(text: str) -> T:
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"must be {bad or what}, got {value if cast is int else text}")
        return value

    return parse


positive_int = checked(int, lambda v: v > 0, "a positive integer")
from_0 = checked(int, lambda v: v >= 0, "0 or a positive integer")
percent = checked(int, lambda v: 0 <= v <= 100, "a whole percentage 0..100")
fraction = checked(float, lambda v: 0 < v <= 1, "a number in (0, 1]")
open_fraction = checked(float, lambda v: 0 < v < 1, "a number in (0, 1)")
positive_seconds = checked(float, lambda v: v > 0, "a number of seconds", "a positive number of seconds")


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


def worker_counts(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]`` (sorted, distinct, each positive)."""
    try:
        counts = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be positive integers separated by commas, got {text!r}") from None
    if not counts or counts[0] <= 0:
        raise argparse.ArgumentTypeError(f"must be positive integers separated by commas, got {text!r}")
    return counts


def column_names(text: str) -> list[str] | None:
    """``"a, b"`` -> ``["a", "b"]`` (None: no name)."""
    return [c.strip() for c in text.split(",") if c.strip()] or None


class _DateFormats(argparse.Action):
    """``--date-format COL=FMT``, repeatable: the formats by column, a later one of a column winning."""

    def __call__(self, parser: object, namespace: argparse.Namespace, values: object, option: str | None = None) -> None:
        column, fmt = cast(tuple[str, str], values)
        setattr(namespace, self.dest, {**(getattr(namespace, self.dest) or {}), column: fmt})


#: The group of the Dask flags of ``accel run`` and ``accel scale``.
DASK = "scale out with Dask"

#: What each flag is, by its name (argparse's keywords but the help; ``group``: the argument group
#: it is shown in, an ``exclusive`` one's flags exclude each other). A flag not here is a string.
KINDS: dict[str, dict[str, Any]] = {
    "workflow": {"nargs": "?"},
    "--task": {"choices": ["auto", "classification", "regression"]},
    "--model": {"choices": list(MODELS)},
    "--drop": {"type": column_names},
    "--date-format": {"type": date_format_flag, "action": _DateFormats, "metavar": "COL=FMT"},
    "--probe": {"choices": ["auto", "off", "force"]},
    "--device": {"choices": ["auto", "cpu", "gpu"]},
    "--test-size": {"type": open_fraction},
    "--explain-rows": {"type": from_0},
    "--precision": {"choices": ["fp32", "fp16"]},
    "--batch-rows": {"type": batch_rows},
    "--rows": {"type": positive_int},
    "--seed": {"type": from_0},
    "--out": {"type": Path},
    "--json": {"action": "store_true"},
    "--overwrite": {"action": "store_true"},
    "--cluster": {"choices": CLUSTER_KINDS, "group": DASK},
    "--scheduler": {"metavar": "tcp://HOST:PORT", "group": DASK},
    "--baseline-scheduler": {"metavar": "tcp://HOST:PORT", "group": DASK},
    "--workers": {"type": positive_int, "metavar": "N", "group": DASK},
    "--threads-per-worker": {"type": positive_int, "metavar": "T", "group": DASK},
    "--device-memory-limit": {"metavar": "SIZE", "group": DASK},
    "--worker-memory": {"metavar": "SIZE", "group": DASK},
    "--protocol": {"choices": ["tcp", "ucx"], "group": DASK},
    "--scale": {"type": positive_int, "metavar": "K", "group": DASK},
}

#: A flag's help (None: none), or its help and its keywords over its kind's.
Flag = str | None | tuple[str, Mapping[str, Any]]

#: The flags that point ``accel run``, ``accel scale`` and ``accel hpo`` at the user's own table.
TABLE: dict[str, Flag] = {
    "--data": "your own table: a CSV file, a Parquet file, or a folder of Parquet files",
    "--target": "with --data: the column to predict",
    "--task": "with --data: inferred when absent (text/boolean or few-valued integer target: classification)",
    "--drop": "with --data: columns to leave out, comma-separated",
    "--delimiter": "with --data: the CSV delimiter (detected when the file parses into one column)",
    "--date-format": "with --data: parse column COL as dates in the strptime format FMT (e.g. 'Month=%%Y %%b'), over the detected layout; repeatable",
}

#: What ``--rows`` is to ``accel run`` and ``accel hpo``.
SAMPLE_ROWS = "use a seeded sample of N rows (quick runs)"

#: The flags of ``accel run`` and ``accel scale`` with the same help: the encoding probe of a user's
#: table, the hold-out, the seed, a cluster accel starts.
RUN_OR_SCALE: dict[str, Flag] = {
    "--probe": "with --data and xgboost: the encoding probe for categorical columns of 33-65,536 values (auto, default: reuse this table's cached decision, probe only within 10%% of training's cost; off: target encoding; force: probe again)",
    "--test-size": "share of rows held out for testing (default 0.2)",
    "--seed": "random seed for sampling, splitting and the model (default 42)",
    "--cluster": "start a Dask cluster here: local (CPU worker processes) or local-cuda (one worker per GPU)",
    "--threads-per-worker": "threads of each worker",
    "--device-memory-limit": "local-cuda: device memory per worker above which Dask-CUDA spills to host, e.g. 30GB or 0.8 (of the GPU's total memory)",
    "--worker-memory": "host memory per worker of a cluster accel starts, e.g. 400MB or 4GB: Dask spills partitions to disk beyond it",
    "--protocol": "local clusters: tcp (default), or ucx when installed",
    "--scale": "replicate the data K times with jitter (default 1)",
}


def add_flags(parser: argparse.ArgumentParser, flags: Mapping[str, Flag]) -> None:
    """Add ``flags`` (name -> :data:`Flag`) to ``parser``, each of its kind (:data:`KINDS`), in its group."""
    groups: dict[str, Any] = {}
    for name, flag in flags.items():
        text, own = flag if isinstance(flag, tuple) else (flag, {})
        keywords = {**KINDS.get(name, {}), **own, "help": text}
        group, exclusive = keywords.pop("group", None), keywords.pop("exclusive", None)
        if group is not None and group not in groups:
            groups[group] = parser.add_argument_group(group)
        if exclusive is not None and exclusive not in groups:
            groups[exclusive] = (groups.get(group) or parser).add_mutually_exclusive_group()
        (groups.get(exclusive) or groups.get(group) or parser).add_argument(name, **keywords)


def overwrite(what: str) -> str:
    """``--overwrite``'s help: replace ``what`` (files the user named) if it exists; without it an existing file is refused."""
    return f"replace {what} if it exists (without it an existing file is refused)"


def call(function: Callable[..., T], args: argparse.Namespace, **fixed: object) -> T:
    """``function`` (of :mod:`accel.api`) called with ``fixed`` and, by name, each parsed flag it takes
    (``--no-baseline`` is ``baseline=False``)."""
    import inspect

    takes = inspect.signature(function).parameters
    return function(**{name: value for name, value in vars(args).items() if name in takes and name not in fixed}, **fixed)


def shown(as_json: bool, record: dict[str, Any], render: Callable[[], None], written: Mapping[str, object], *failed: str) -> int:
    """How a command that wrote a record ends: the record shown (JSON, or ``render``'s tables) and where
    it was ``written``; then each of ``failed`` that says something, a line on stderr, and status 1
    if one did, else 0."""
    import sys

    from accel.record import show_result

    show_result(record, as_json, render, dict(written))
    for line in filter(None, failed):
        print(f"accel: {line}", file=sys.stderr)
    return 1 if any(failed) else 0
