"""Hostile tables as data: one list of cases that ``tests/test_hostile.py`` and
``benchmarks/hostile_cases.py`` both run.

Each :class:`Case` builds its input in a scratch folder (``make_input`` returns the command line
after ``accel``), says the verdict it must end in (``"clean error"``: exit 2, one
``accel: error: ...`` line naming the problem, no traceback, no record written; ``"handled"``:
exit 0 and a record whose content ``check`` accepts) and, for a file that changes under the
run, what happens to the file once the run is planned (``after_planning``).

:func:`run_case` runs a case in a subprocess (``python -m tests.hostile_inputs NAME TMP ...``, so
that an ``after_planning`` action can hook planning) and :func:`verdict` judges it. The kinds:
``types`` (Arrow and Parquet types), ``names`` (header names and generated feature names),
``changed`` (the file changes after planning) and ``meaningless`` (a split whose test part
cannot be scored).
"""

from __future__ import annotations

import contextlib
import decimal
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Case:
    """One hostile input and the verdict it must end in.

    Attributes
    ----------
    name : str
        Unique, used on the command line of the benchmark (``--only``).
    kind : str
        ``types``, ``names``, ``changed`` or ``meaningless``.
    what : str
        The input, in words.
    make_input : callable
        ``make_input(tmp) -> argv`` (after ``accel``); writes the input under ``tmp``.
    expected : str
        ``"clean error"`` or ``"handled"``.
    needles : tuple of str
        Words the error line must hold (clean error), or the record's text must hold (handled).
    check : callable or None
        ``check(record) -> problem or None`` for a handled case.
    after_planning : callable or None
        ``after_planning(tmp)``: done to the input once the run is planned, before an arm reads it.
    """

    name: str
    kind: str
    what: str
    make_input: Callable[[Path], list[str]]
    expected: str
    needles: tuple[str, ...] = ()
    check: Callable[[dict[str, Any]], str | None] | None = None
    after_planning: Callable[[Path], None] | None = None


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


def run_argv(data: Path, target: str, tmp: Path, *extra: str) -> list[str]:
    return ["run", "--data", str(data), "--target", target, "--device", "cpu", "--out", str(tmp / "runs"), *extra]


def _csv(tmp: Path, frame: pd.DataFrame, name: str = "data.csv") -> Path:
    path = tmp / name
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
    from accel.data.flights import split_positions

    frame = customers()
    train, _ = split_positions(300, 0.2, 42)
    frame["churned"] = "no"
    frame.loc[train[:4], "churned"] = "yes"
    frame["calls"] = np.where(frame["churned"] == "yes", 9, frame["calls"] % 5)
    return run_argv(_csv(tmp, frame), "churned", tmp)


def _one_value_regression_test(tmp: Path) -> list[str]:
    """A regression target that varies on training rows only: R² of the test part is undefined."""
    from accel.data.flights import split_positions

    rng = np.random.default_rng(10)
    frame = pd.DataFrame({"size": rng.uniform(1, 100, 300).round(1), "rooms": rng.integers(1, 7, 300)})
    train, _ = split_positions(300, 0.2, 42)
    price = np.full(300, 100.0)
    price[train[:40]] = rng.uniform(50, 500, 40).round(0)
    frame["price"] = price
    return run_argv(_csv(tmp, frame), "price", tmp)


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
         "clean error", (CHANGED, "run again"), after_planning=cut_in_half),
    Case("file-replaced-larger", "changed", "the CSV replaced by a larger one after planning", _plain_csv,
         "clean error", (CHANGED,), after_planning=replace_larger),
    Case("file-removed-after-planning", "changed", "the CSV removed after planning", _plain_csv,
         "clean error", (CHANGED,), after_planning=remove_file),
    Case("parquet-replaced", "changed", "the Parquet file replaced by another after planning", _plain_parquet,
         "clean error", (CHANGED,), after_planning=replace_parquet),
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

BY_NAME = {case.name: case for case in CASES}
assert len(BY_NAME) == len(CASES), "case names must be unique"


# --------------------------------------------------------------------------- running and judging


@dataclass
class Outcome:
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


@contextlib.contextmanager
def hooked_planning(case: Case, tmp: Path) -> Iterator[None]:
    """While inside, ``case.after_planning(tmp)`` runs each time a table has been planned."""
    if case.after_planning is None:
        yield
        return
    import accel.workflows.table as table

    original = table.plan_table

    def plan_then_change(*args: Any, **kwargs: Any) -> Any:
        planned = original(*args, **kwargs)
        case.after_planning(tmp)
        return planned

    table.plan_table = plan_then_change
    try:
        yield
    finally:
        table.plan_table = original


def run_in_process(case: Case, tmp: Path, capture: Callable[[], tuple[str, str]]) -> tuple[list[str], Outcome]:
    """Build the case's input under ``tmp`` and run the command line in this process.

    ``capture()`` returns what was written to stdout and stderr since the last call (pytest's
    ``capsys.readouterr``).
    """
    from accel.cli.main import main

    tmp.mkdir(parents=True, exist_ok=True)
    argv = case.make_input(tmp)
    capture()
    t0 = time.perf_counter()
    with hooked_planning(case, tmp):
        rc = main(argv)
    out, err = capture()
    return argv, Outcome(rc, out, err, time.perf_counter() - t0, False)


def run_case(case: Case, tmp: Path, timeout: float = 300, env: dict[str, str] | None = None) -> tuple[list[str], Outcome]:
    """Build the case's input under ``tmp`` and run it in a subprocess; (argv, outcome)."""
    tmp.mkdir(parents=True, exist_ok=True)
    argv = case.make_input(tmp)
    cmd = [sys.executable, "-m", "tests.hostile_inputs", case.name, str(tmp), *argv]
    # The tree under test comes first on the path (PYTHONPATH as given), then this one (for this module).
    path = [p for p in (os.environ.get("PYTHONPATH", ""), str(ROOT)) if p]
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(path)}
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=tmp)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return argv, Outcome(None, out, err, time.perf_counter() - t0, True)
    return argv, Outcome(done.returncode, done.stdout, done.stderr, time.perf_counter() - t0, False)


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
        return "clean error", ""
    if outcome.rc != 0:
        return ("unrefused" if outcome.rc in (1, 2) else "traceback"), f"exit {outcome.rc}: {(lines or [''])[-1][:200]}"
    if len(written) != 1:
        return "wrong", f"{len(written)} records written"
    record = json.loads(written[0].read_text())
    problem = case.check(record) if case.check is not None else None
    if problem:
        return "wrong", problem
    text = written[0].read_text()
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
    """``python -m tests.hostile_inputs NAME TMP ACCEL-ARGS...``: the command line, with the case's hook."""
    from accel.cli.main import main

    case, tmp = BY_NAME[argv[0]], Path(argv[1])
    with hooked_planning(case, tmp):
        return main(argv[2:])


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
