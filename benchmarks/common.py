"""The one harness of the benchmark scripts: a script fills in a :class:`Config`, :func:`execute` does the rest.

As dask-cuda's ``benchmarks/common.py`` does for its benchmarks: a script says what is its own
(its options, its cases, one measurement, how its rows become the result's fields, what it prints
at the end) and :func:`execute` does what every script did for itself before:

- one parser of the options every script has: ``--results`` (the results folder, proved writable
  before any measuring) and ``--label`` (a note stored with the result: ``before``, ``after``),
  and those a script asks for in its :class:`Config`: ``--rows``, ``--repeats`` and ``--warmup``,
  ``--device``, ``--seed``;
- the one timing loop: for each case, ``--warmup`` untimed measurements of each arm, then
  ``--repeats`` rounds in which every arm is measured once, the order reversed every other round
  (so that drift on a shared machine hits the arms alike), the garbage collector run before each
  measurement, untimed; the clock is :func:`accel.timing.timed_call`'s, the device synchronised
  where the case names a backend;
- the environment (:func:`accel.timing.bench_environment`, after the work) and the one result
  writer (:func:`accel.timing.write_result`: ``<date>-<name>-<device>-<NNN>.json``, never
  overwritten; ``device`` is ``cpu`` unless a GPU arm ran, else the GPU's name).

A script runs as ``python benchmarks/<script>.py ...`` (this folder first on the path); the
tests run the scripts as programs, never import them, and no script imports the tests: what
both use lives in ``accel_fixtures``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

Row = dict[str, Any]


class Skipped(Exception):
    """Raised by a benchmark's cases when it cannot run here (no GPU): said, nothing written."""


@dataclass(frozen=True)
class Case:
    """One thing a benchmark measures (a question, a table size, a condition).

    Attributes
    ----------
    label : str
        Its name in the progress lines and in each row (``case``); empty for a benchmark of one case.
    value : object
        What the measurement needs (data, paths, a cluster session).
    arms : tuple of str
        What is measured side by side, alternately (``("accel", "handwritten")``); each row's ``impl``.
    repeats : int or None
        Rounds of this case where they differ from ``--repeats`` (a pass that runs once).
    backend : Backend or None
        The device the measurement runs on in this process, synchronised around each clock read.
    """

    label: str = ""
    value: Any = None
    arms: tuple[str, ...] = ("",)
    repeats: int | None = None
    backend: Any = None


@dataclass
class Bench:
    """A benchmark as it runs: its options, a scratch folder, and the facts its set-up recorded."""

    args: argparse.Namespace
    scratch: Path = Path()
    #: Fields of the result that the set-up learned (the data's size, a cluster's workers...).
    record: dict[str, Any] = field(default_factory=dict)
    started: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    def fresh(self, name: str) -> Path:
        """A new empty folder in the scratch folder (one per measurement that writes files)."""
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.scratch))


def _one_case(bench: Bench) -> Generator[Case, None, None]:
    yield Case()


@dataclass(frozen=True)
class Config:
    """What a benchmark script fills in.

    Attributes
    ----------
    name : str
        The result's file-name part (``flights-overhead``); with ``_`` for ``-``, its ``benchmark``.
    doc : str
        The script's docstring: the first line is ``--help``'s description, its indented
        ``python ...`` lines its examples.
    measure : callable
        ``measure(bench, case, arm) -> dict``: one measurement. Its figures go into the row; the
        harness's clock around the call is the row's ``seconds`` unless the figures hold their own
        (a process's wall, a stage the library timed with the device synchronised).
    cases : callable
        ``cases(bench)``, a generator of :class:`Case`: the set-up (untimed), which may hold what a
        case needs open across its ``yield`` (a cluster, competing processes). Default: one case.
    arguments : callable
        ``arguments(parser)``: the benchmark's own options.
    tidy : callable
        ``tidy(bench, rows) -> dict``: the result's fields from the rows (default ``{"rows": rows}``).
    summary : callable
        ``summary(result) -> str``: what is printed at the end, from what the file holds.
    progress : callable
        ``progress(row) -> str``: the rest of the line printed after each measurement.
    repeats : int or None
        ``--repeats``' default; None: each case is measured once and there is no ``--repeats``.
    warmup : int
        ``--warmup``'s default (untimed measurements of each arm before a case's repeats).
    rows : str or None
        ``--rows``' default (``"1e6"``, ``"all"``, or a comma-separated list where ``many_rows``); None:
        no ``--rows``.
    many_rows : bool
        ``--rows`` takes a list of sizes (``1e5,1e6``), each usually one case.
    devices : tuple of str
        ``--device``'s choices, the first the default; empty: the benchmark runs on the CPU only.
    seed : bool
        The benchmark takes ``--seed`` (default 42).
    gpu : callable
        ``gpu(args) -> bool``: whether a GPU arm ran (the result's ``device`` and file name);
        default: ``--device gpu``.
    """

    name: str
    doc: str
    measure: Callable[[Bench, Case, str], Row]
    cases: Callable[[Bench], Generator[Case, None, None]] = _one_case
    arguments: Callable[[argparse.ArgumentParser], None] = lambda parser: None
    tidy: Callable[[Bench, list[Row]], dict[str, Any]] = lambda bench, rows: {"rows": rows}
    summary: Callable[[dict[str, Any]], str] = lambda result: ""
    progress: Callable[[Row], str] = lambda row: ""
    repeats: int | None = None
    warmup: int = 0
    rows: str | None = None
    many_rows: bool = False
    devices: tuple[str, ...] = ()
    seed: bool = False
    gpu: Callable[[argparse.Namespace], bool] = lambda args: getattr(args, "device", "cpu") == "gpu"


# --------------------------------------------------------------------------- options


def count(least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least``."""

    def parse(text: str) -> int:
        value = int(text)
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
        return value

    parse.__name__ = "count"
    return parse


def rows_count(text: str) -> int | None:
    """An argparse type: a number of rows, written ``1e6`` or ``1000000``; ``all``: None, every row."""
    if text == "all":
        return None
    try:
        value = int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of rows: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def rows_list(text: str) -> list[int | None]:
    """An argparse type: numbers of rows, comma-separated (``1e5,1e6``)."""
    return [rows_count(part.strip()) for part in text.split(",") if part.strip()]


def names(text: str) -> list[str]:
    """An argparse type: names, comma-separated."""
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_args(config: Config, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The common options and the benchmark's own, parsed; ``--results`` proved writable."""
    parser = argparse.ArgumentParser(description=config.doc.strip().splitlines()[0], epilog=_usage(config.doc))
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add = parser.add_argument
    add("--results", type=Path, default=RESULTS, help=f"results folder (default {RESULTS.relative_to(ROOT)})")
    add("--label", default="", help="a note stored with the result (which tree: before, after)")
    if config.rows is not None:
        add("--rows", type=rows_list if config.many_rows else rows_count, default=config.rows,
            help=f"rows of the data{', comma-separated sizes' if config.many_rows else ''} (default {config.rows})")  # fmt: skip
    if config.repeats is not None:
        add("--repeats", type=count(1), default=config.repeats,
            help=f"timed rounds of each case, the arms alternating (default {config.repeats})")  # fmt: skip
        add("--warmup", type=count(0), default=config.warmup,
            help=f"untimed measurements of each arm before a case's rounds (default {config.warmup})")  # fmt: skip
    if config.devices:
        add("--device", choices=config.devices, default=config.devices[0], help=f"the arm measured (default {config.devices[0]})")
    if config.seed:
        add("--seed", type=int, default=42, help="random seed of the data and the models (default 42)")
    config.arguments(parser)
    args = parser.parse_args(argv)
    from accel.errors import AccelError
    from accel.record import ensure_writable

    try:
        args.results = ensure_writable(args.results, what="benchmark results", option="--results")
    except AccelError as exc:
        parser.error(str(exc))
    return args


def _usage(doc: str) -> str:
    """The docstring's example command lines (its indented lines), shown under ``--help``."""
    lines = [line.strip() for line in doc.splitlines() if line.startswith("    python ")]
    return "examples:\n  " + "\n  ".join(lines) if lines else ""


# --------------------------------------------------------------------------- the loop


def measure_case(config: Config, bench: Bench, case: Case) -> list[Row]:
    """Warm-up measurements of each arm (discarded), then the rounds, the arms' order reversed every other one."""
    from accel.timing import timed_call

    repeated = config.repeats is not None or case.repeats is not None
    rounds = case.repeats or (bench.args.repeats if repeated else 1)
    if case.label:
        _say(f"== {case.label}")
    warmup = getattr(bench.args, "warmup", 0) if case.repeats is None else 0
    if warmup:
        _say(f"  warm-up (untimed): {warmup} of each")
    for _ in range(warmup):
        for arm in case.arms:
            gc.collect()
            config.measure(bench, case, arm)
    rows = []
    for i in range(rounds):
        for arm in case.arms if i % 2 == 0 else case.arms[::-1]:
            gc.collect()
            seconds, figures = timed_call(lambda: config.measure(bench, case, arm), case.backend)  # noqa: B023
            row = {"case": case.label} if case.label else {}
            row |= {"repeat": i} if repeated else {}
            row |= {"impl": arm} if arm else {}
            row |= {"seconds": seconds, **figures}
            rows.append(row)
            where = " ".join(filter(None, [f"repeat {i}" if repeated else "", arm]))
            _say(f"  {where + ': ' if where else ''}{row['seconds']:.2f} s{config.progress(row)}")
    return rows


def execute(config: Config, argv: Sequence[str] | None = None) -> int:
    """Parse the options, run every case, write the result; the script's exit status."""
    from accel.timing import bench_environment, result_device, write_result

    bench = Bench(parse_args(config, argv))
    rows: list[Row] = []
    try:
        with tempfile.TemporaryDirectory(prefix=f"accel-bench-{config.name}-") as scratch:
            bench.scratch = Path(scratch)
            with contextlib.closing(config.cases(bench)) as cases:
                for case in cases:
                    rows += measure_case(config, bench, case)
            fields = config.tidy(bench, rows)
    except Skipped as why:
        print(f"skipped: {why}")
        return 0
    gpu = config.gpu(bench.args)
    result: dict[str, Any] = {"benchmark": config.name.replace("-", "_"), "device": "gpu" if gpu else "cpu",
                              "label": bench.args.label, "started_at": bench.started.isoformat(),
                              "finished_at": datetime.now(timezone.utc).isoformat(), **bench.record, **fields}  # fmt: skip
    result["environment"] = bench_environment()
    text = config.summary(result)
    if text:
        print(text)
    path = write_result(bench.args.results, result, config.name, result_device(gpu, result["environment"]))
    print(f"results: {path}", flush=True)
    return 0


def main(config: Config) -> None:
    """``if __name__ == "__main__": main(CONFIG)``: execute and exit with its status."""
    sys.exit(execute(config))


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- figures of the rows


def times(rows: Sequence[Row], impl: str, key: str = "seconds") -> list[float]:
    """``key`` of every row of one arm, in order."""
    return [r[key] for r in rows if r.get("impl") == impl]


def medians(rows: Sequence[Row], key: str = "seconds") -> dict[str, float]:
    """The median of ``key`` per arm."""
    arms = dict.fromkeys(r["impl"] for r in rows)
    return {arm: statistics.median(times(rows, arm, key)) for arm in arms}


def ratios(rows: Sequence[Row], top: str, bottom: str) -> dict[str, float]:
    """``top`` against ``bottom``: the ratio of the medians, the median of each round's ratio (the
    two ran back to back), and fastest over fastest (the runs least disturbed by other work)."""
    a, b = times(rows, top), times(rows, bottom)
    return {
        "ratio": statistics.median(a) / statistics.median(b),
        "ratio_paired_median": statistics.median(x / y for x, y in zip(a, b)),
        "ratio_fastest": min(a) / min(b),
    }


# --------------------------------------------------------------------------- measuring processes


@dataclass(frozen=True)
class Process:
    """A finished process: wall seconds from start to exit, its peak RSS, what it printed."""

    seconds: float
    peak_bytes: int
    stdout: str
    stderr: str
    returncode: int

    def check(self) -> Process:
        """This process, if it exited 0; else an error with the end of what it said on stderr."""
        if self.returncode != 0:
            raise RuntimeError(f"exit {self.returncode}: {self.stderr[-2000:]}")
        return self

    def last_json(self) -> Any:
        """The last line it printed, as JSON (a child's answer)."""
        import json

        return json.loads(self.stdout.strip().splitlines()[-1])


TIME = Path("/usr/bin/time")
_MAXRSS = "accel-bench-maxrss-kb "


def run_process(cmd: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Process:
    """Run ``cmd`` to its end: its wall seconds and its peak RSS.

    The peak is GNU time's ``%M`` where ``/usr/bin/time`` exists (the command is started by that
    small program, so the peak is the command's own); else ``wait4``'s ``ru_maxrss`` (a child
    forked from a large parent can report the parent's size).
    """
    timed = TIME.exists()
    full = [str(TIME), "-f", _MAXRSS + "%M", *cmd] if timed else list(cmd)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        from accel.timing import timed_call

        seconds, (_, status, usage) = timed_call(
            lambda: os.wait4(subprocess.Popen(full, env=env, cwd=cwd, stdout=out, stderr=err, text=True).pid, 0)
        )
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    peak = usage.ru_maxrss * 1024
    found = [line for line in stderr.splitlines() if line.startswith(_MAXRSS)] if timed else []
    if found:
        peak = int(found[-1][len(_MAXRSS) :]) * 1024
        # GNU time also reports a non-zero exit or a signal on stderr: not the command's own output.
        said = (_MAXRSS, "Command exited with non-zero status", "Command terminated by signal")
        stderr = "\n".join(line for line in stderr.splitlines() if not line.startswith(said))
    return Process(seconds, peak, stdout, stderr, os.waitstatus_to_exitcode(status))


def in_fresh_process(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a fresh (spawned) process: memory one measurement freed, and the allocator
    kept, never flatters the next; the script's module is imported there, not run."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def child_env(**extra: str) -> dict[str, str]:
    """This environment for a child process, the tree of the ``accel`` this process imports and
    ``benchmarks`` first on its path: a child imports the accel measured here (``PYTHONPATH``
    chooses it) and the benchmarks' own functions."""
    import accel

    tree = Path(accel.__file__).resolve().parents[1]
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), str(ROOT / "benchmarks"), env.get("PYTHONPATH")) if p)
    return env
