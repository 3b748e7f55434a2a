"""The groupby questions on polars and DuckDB, for context beside the pandas and cuDF arms.

Not an arm and not a target: two other CPU engines, each using every core by default, so the
report can show what the CPU does with a multi-threaded engine next to single-threaded pandas.
The queries follow db-benchmark's own polars and DuckDB solutions (``polars/groupby-polars.py``,
``duckdb/groupby-duckdb.R``), in today's polars API. Both are optional (``pip install
'accel[bench]'``).
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from accel.errors import AccelError

ENGINES = ("polars", "duckdb")

# DuckDB: the answer of each question as SQL over table x, and the checksum columns of that answer.
DUCKDB_GROUPBY = {
    "q1": ("SELECT id1, sum(v1) AS v1 FROM x GROUP BY id1", ["v1"]),
    "q2": ("SELECT id1, id2, sum(v1) AS v1 FROM x GROUP BY id1, id2", ["v1"]),
    "q3": ("SELECT id3, sum(v1) AS v1, avg(v3) AS v3 FROM x GROUP BY id3", ["v1", "v3"]),
    "q4": ("SELECT id4, avg(v1) AS v1, avg(v2) AS v2, avg(v3) AS v3 FROM x GROUP BY id4", ["v1", "v2", "v3"]),
    "q5": ("SELECT id6, sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3 FROM x GROUP BY id6", ["v1", "v2", "v3"]),
    "q6": (
        "SELECT id4, id5, quantile_cont(v3, 0.5) AS median_v3, stddev(v3) AS sd_v3 FROM x GROUP BY id4, id5",
        ["median_v3", "sd_v3"],
    ),
    "q7": ("SELECT id3, max(v1) - min(v2) AS range_v1_v2 FROM x GROUP BY id3", ["range_v1_v2"]),
    "q8": (
        "SELECT id6, v3 AS largest2_v3 FROM (SELECT id6, v3, row_number() OVER (PARTITION BY id6 ORDER BY v3 DESC)"
        " AS order_v3 FROM x WHERE v3 IS NOT NULL) sub_query WHERE order_v3 <= 2",
        ["largest2_v3"],
    ),
    "q9": ("SELECT id2, id4, pow(corr(v1, v2), 2) AS r2 FROM x GROUP BY id2, id4", ["r2"]),
    "q10": (
        "SELECT id1, id2, id3, id4, id5, id6, sum(v3) AS v3, count(*) AS count FROM x"
        " GROUP BY id1, id2, id3, id4, id5, id6",
        ["v3", "count"],
    ),
}


def _polars_groupby(pl: Any) -> dict[str, tuple[Callable[[Any], Any], list[str]]]:
    col = pl.col
    return {
        "q1": (lambda x: x.group_by("id1").agg(col("v1").sum()), ["v1"]),
        "q2": (lambda x: x.group_by(["id1", "id2"]).agg(col("v1").sum()), ["v1"]),
        "q3": (lambda x: x.group_by("id3").agg(col("v1").sum(), col("v3").mean()), ["v1", "v3"]),
        "q4": (
            lambda x: x.group_by("id4").agg(col("v1").mean(), col("v2").mean(), col("v3").mean()),
            ["v1", "v2", "v3"],
        ),
        "q5": (lambda x: x.group_by("id6").agg(col("v1").sum(), col("v2").sum(), col("v3").sum()), ["v1", "v2", "v3"]),
        "q6": (
            lambda x: x.group_by(["id4", "id5"]).agg(
                col("v3").median().alias("median_v3"), col("v3").std().alias("sd_v3")
            ),
            ["median_v3", "sd_v3"],
        ),
        "q7": (
            lambda x: x.group_by("id3").agg((col("v1").max() - col("v2").min()).alias("range_v1_v2")),
            ["range_v1_v2"],
        ),
        "q8": (
            lambda x: (
                x.drop_nulls("v3")
                .sort("v3", descending=True)
                .group_by("id6")
                .agg(col("v3").head(2).alias("largest2_v3"))
                .explode("largest2_v3")
            ),
            ["largest2_v3"],
        ),
        "q9": (lambda x: x.group_by(["id2", "id4"]).agg((pl.corr("v1", "v2") ** 2).alias("r2")), ["r2"]),
        "q10": (
            lambda x: x.group_by(["id1", "id2", "id3", "id4", "id5", "id6"]).agg(
                col("v3").sum().alias("v3"), pl.len().alias("count")
            ),
            ["v3", "count"],
        ),
    }


def check_engines(names: Sequence[str]) -> list[str]:
    """Validate ``--engines`` up front: known names, and installed."""
    unknown = [n for n in names if n not in ENGINES]
    if unknown:
        raise AccelError(f"unknown engine {', '.join(map(repr, unknown))}; known: {', '.join(ENGINES)}")
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    if missing:
        raise AccelError(f"{' and '.join(missing)} not installed: pip install 'accel[bench]'")
    return list(names)


def _first_line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {text}".rstrip(": ")


def _finite(value: Any) -> float:
    return math.nan if value is None else float(value)


def run_polars(path: Path, questions: Sequence[str], progress: Callable[[str], None]) -> dict[str, Any]:
    import polars as pl

    start = time.perf_counter()
    x = pl.read_parquet(path) if str(path).endswith((".parquet", ".pq")) else pl.read_csv(path)
    x = x.with_columns(
        *(pl.col(c).cast(pl.String).cast(pl.Categorical) for c in ("id1", "id2", "id3")),
        *(pl.col(c).cast(pl.Int32) for c in ("id4", "id5", "id6", "v1", "v2")),
        pl.col("v3").cast(pl.Float64),
    )
    load = time.perf_counter() - start
    defs = _polars_groupby(pl)
    out: dict[str, Any] = {}
    for name in questions:
        fn, chk_cols = defs[name]
        try:
            times = []
            for _ in range(2):  # the benchmark's run 1 and run 2
                t0 = time.perf_counter()
                ans = fn(x)
                times.append(time.perf_counter() - t0)
            checksum = [_finite(ans[c].cast(pl.Float64).sum()) for c in chk_cols]
            out[name] = {
                "status": "ok",
                "run1": times[0],
                "run2": times[1],
                "rows": ans.height,
                "cols": ans.width,
                "checksum": checksum,
            }
            del ans
        except Exception as exc:  # noqa: BLE001 - context only: record and go on
            out[name] = {"status": "failed", "reason": _first_line(exc)}
        progress(f"[polars] {name}: {out[name].get('run1', float('nan')):.3f} s")
    return {
        "status": "ok",
        "version": pl.__version__,
        "threads": pl.thread_pool_size(),
        "load_seconds": load,
        "questions": out,
    }


def run_duckdb(path: Path, questions: Sequence[str], progress: Callable[[str], None]) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect()
    reader = "read_parquet" if str(path).endswith((".parquet", ".pq")) else "read_csv_auto"
    start = time.perf_counter()
    con.execute(f"CREATE TABLE x AS SELECT * FROM {reader}(?)", [str(path)])
    load = time.perf_counter() - start
    out: dict[str, Any] = {}
    for name in questions:
        sql, chk_cols = DUCKDB_GROUPBY[name]
        try:
            times = []
            for _ in range(2):
                con.execute("DROP TABLE IF EXISTS ans")
                t0 = time.perf_counter()
                con.execute(f"CREATE TABLE ans AS {sql}")
                times.append(time.perf_counter() - t0)
            rows = con.execute("SELECT count(*) FROM ans").fetchone()[0]
            cols = len(con.execute("SELECT * FROM ans LIMIT 0").description)
            sums = con.execute("SELECT " + ", ".join(f"sum({c})" for c in chk_cols) + " FROM ans").fetchone()
            out[name] = {
                "status": "ok", "run1": times[0], "run2": times[1], "rows": int(rows), "cols": cols,
                "checksum": [_finite(v) for v in sums],
            }  # fmt: skip
        except Exception as exc:  # noqa: BLE001
            out[name] = {"status": "failed", "reason": _first_line(exc)}
        progress(f"[duckdb] {name}: {out[name].get('run1', float('nan')):.3f} s")
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    con.close()
    return {
        "status": "ok",
        "version": duckdb.__version__,
        "threads": int(threads),
        "load_seconds": load,
        "questions": out,
    }


def run_engines(
    names: Sequence[str], path: Path, questions: Sequence[str], progress: Callable[[str], None]
) -> dict[str, Any]:
    """Each named engine on the groupby data file, each question run twice (run 1 and run 2)."""
    runners = {"polars": run_polars, "duckdb": run_duckdb}
    results = {}
    for name in names:
        try:
            results[name] = runners[name](path, questions, progress)
        except Exception as exc:  # noqa: BLE001 - e.g. out of memory loading: context, not the benchmark
            results[name] = {"status": "failed", "reason": _first_line(exc)}
    return results
