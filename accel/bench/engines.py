"""The groupby questions on polars and DuckDB, for context beside the pandas and cuDF arms.

Not an arm and not a target: two other CPU engines, each using every core by default, so the
report can show what the CPU does with a multi-threaded engine next to single-threaded pandas;
and Polars' GPU engine (``polars-gpu``: cudf-polars, ``collect(engine=GPUEngine(...))``), the
same polars queries on the GPU, with ``raise_on_fail=True`` so that a query it cannot run on the
GPU fails instead of quietly running on the CPU. The queries follow db-benchmark's own polars
and DuckDB solutions (``polars/groupby-polars.py``, ``duckdb/groupby-duckdb.R``), in today's
polars API. polars and DuckDB are optional (``pip install 'accel-tabular[bench]'``); the GPU engine is
recorded as skipped, with the reason, where cudf-polars or a GPU is missing.

Each question is timed as the arms are (:func:`accel.timing.measure`: one cold run apart, then
the repeats: median, min, max), and its answer checked against the pandas arm's checksums.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from accel.errors import AccelError, first_line

ENGINES = ("polars", "duckdb", "polars-gpu")
#: Engines that need only what `pip install 'accel-tabular[bench]'` gives (the GPU one skips with a reason).
CPU_ENGINES = ("polars", "duckdb")

# DuckDB: the answer of each question as SQL over table x. On both engines an answer's columns
# are its group keys (id1..id6), then the values whose sums are its checksum.
DUCKDB_GROUPBY = {
    "q1": "SELECT id1, sum(v1) AS v1 FROM x GROUP BY id1",
    "q2": "SELECT id1, id2, sum(v1) AS v1 FROM x GROUP BY id1, id2",
    "q3": "SELECT id3, sum(v1) AS v1, avg(v3) AS v3 FROM x GROUP BY id3",
    "q4": "SELECT id4, avg(v1) AS v1, avg(v2) AS v2, avg(v3) AS v3 FROM x GROUP BY id4",
    "q5": "SELECT id6, sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3 FROM x GROUP BY id6",
    "q6": "SELECT id4, id5, quantile_cont(v3, 0.5) AS median_v3, stddev(v3) AS sd_v3 FROM x GROUP BY id4, id5",
    "q7": "SELECT id3, max(v1) - min(v2) AS range_v1_v2 FROM x GROUP BY id3",
    "q8": "SELECT id6, v3 AS largest2_v3 FROM (SELECT id6, v3, row_number() OVER (PARTITION BY id6 ORDER BY v3 DESC)"
    " AS order_v3 FROM x WHERE v3 IS NOT NULL) sub_query WHERE order_v3 <= 2",
    "q9": "SELECT id2, id4, pow(corr(v1, v2), 2) AS r2 FROM x GROUP BY id2, id4",
    "q10": "SELECT id1, id2, id3, id4, id5, id6, sum(v3) AS v3, count(*) AS count FROM x GROUP BY id1, id2, id3, id4, id5, id6",
}


def _polars_groupby(pl: Any) -> dict[str, Callable[[Any], Any]]:
    col = pl.col
    return {
        "q1": lambda x: x.group_by("id1").agg(col("v1").sum()),
        "q2": lambda x: x.group_by(["id1", "id2"]).agg(col("v1").sum()),
        "q3": lambda x: x.group_by("id3").agg(col("v1").sum(), col("v3").mean()),
        "q4": lambda x: x.group_by("id4").agg(col("v1").mean(), col("v2").mean(), col("v3").mean()),
        "q5": lambda x: x.group_by("id6").agg(col("v1").sum(), col("v2").sum(), col("v3").sum()),
        "q6": lambda x: x.group_by(["id4", "id5"]).agg(col("v3").median().alias("median_v3"), col("v3").std().alias("sd_v3")),
        "q7": lambda x: x.group_by("id3").agg((col("v1").max() - col("v2").min()).alias("range_v1_v2")),
        "q8": lambda x: (
            x.drop_nulls("v3")
            .sort("v3", descending=True)
            .group_by("id6")
            .agg(col("v3").head(2).alias("largest2_v3"))
            .explode("largest2_v3")
        ),
        "q9": lambda x: x.group_by(["id2", "id4"]).agg((pl.corr("v1", "v2") ** 2).alias("r2")),
        "q10": lambda x: x.group_by(["id1", "id2", "id3", "id4", "id5", "id6"]).agg(
            col("v3").sum().alias("v3"), pl.len().alias("count")
        ),
    }


def check_engines(names: str) -> list[str]:
    """Validate ``--engines`` (comma-separated; empty: none) up front: known names, and the CPU engines installed."""
    from accel.bench.db import pick_names

    wanted = pick_names("engine", names, ENGINES, str) if names.replace(",", "").strip() else []
    missing = sorted({n.removesuffix("-gpu") for n in wanted if importlib.util.find_spec(n.removesuffix("-gpu")) is None})
    if missing:
        raise AccelError(f"{' and '.join(missing)} not installed: pip install 'accel-tabular[bench]'")
    return wanted


def polars_gpu_skip() -> str | None:
    """Why Polars' GPU engine cannot run here (None when it can)."""
    from accel.backend import probe_gpu

    if importlib.util.find_spec("cudf_polars") is None:
        return "cudf-polars is not installed (pip install cudf-polars-cu12 or -cu13): Polars' GPU engine needs it"
    probe = probe_gpu()
    if not probe.available("cudf"):
        return f"Polars' GPU engine needs cuDF on a GPU: {probe.missing('cudf')}"
    return None


def _finite(value: Any) -> float:
    return math.nan if value is None else float(value)


def _values(columns: Sequence[str]) -> list[str]:
    """An answer's checksum columns: all but its group keys."""
    return [c for c in columns if not c.startswith("id")]


#: An opened engine: the seconds loading the data took, ``run(question)``, ``answer(result)``
#: (rows, columns, checksum) and what to record of the engine (version, threads).
_Opened = tuple[float, Callable[[str], Any], Callable[[Any], dict[str, Any]], dict[str, Any]]


@contextmanager
def _open_polars(path: Path, gpu: bool) -> Iterator[_Opened]:
    """The questions on polars: on the CPU (every core), or with ``gpu`` on Polars' GPU engine.

    The GPU engine runs each query from the host DataFrame (it keeps no frame on the device), so
    its times include copying the columns a query reads to the GPU.
    """
    import polars as pl

    # in-memory: the data fit the device; raise_on_fail: a query the GPU cannot run fails
    # here instead of running on the CPU under the GPU's name.
    engine = pl.GPUEngine(executor="in-memory", raise_on_fail=True) if gpu else "cpu"
    start = time.perf_counter()
    x = pl.read_parquet(path) if str(path).endswith((".parquet", ".pq")) else pl.read_csv(path)
    x = x.with_columns(
        *(pl.col(c).cast(pl.String).cast(pl.Categorical) for c in ("id1", "id2", "id3")),
        *(pl.col(c).cast(pl.Int32) for c in ("id4", "id5", "id6", "v1", "v2")),
        pl.col("v3").cast(pl.Float64),
    )
    load = time.perf_counter() - start
    defs = _polars_groupby(pl)
    lazy = x.lazy()

    def run(q: str) -> Any:
        return defs[q](lazy).collect(engine=engine)

    def answer(ans: Any) -> dict[str, Any]:
        sums = [_finite(ans[c].cast(pl.Float64).sum()) for c in _values(ans.columns)]
        return {"rows": ans.height, "cols": ans.width, "checksum": sums}

    about: dict[str, Any] = {"version": pl.__version__, "threads": pl.thread_pool_size()}
    if gpu:
        import cudf_polars

        about.update(
            engine="polars GPUEngine(executor='in-memory', raise_on_fail=True)",
            cudf_polars=cudf_polars.__version__,
            device="cuda:0",
        )
    yield load, run, answer, about


@contextmanager
def _open_duckdb(path: Path) -> Iterator[_Opened]:
    import duckdb

    with duckdb.connect() as con:
        reader = "read_parquet" if str(path).endswith((".parquet", ".pq")) else "read_csv_auto"
        start = time.perf_counter()
        con.execute(f"CREATE TABLE x AS SELECT * FROM {reader}(?)", [str(path)])
        load = time.perf_counter() - start

        def run(q: str) -> str:
            con.execute("DROP TABLE IF EXISTS ans")
            con.execute(f"CREATE TABLE ans AS {DUCKDB_GROUPBY[q]}")
            return q

        def answer(_ans: Any) -> dict[str, Any]:
            rows = con.execute("SELECT count(*) FROM ans").fetchone()[0]
            columns = [d[0] for d in con.execute("SELECT * FROM ans LIMIT 0").description]
            sums = con.execute("SELECT " + ", ".join(f"sum({c})" for c in _values(columns)) + " FROM ans").fetchone()
            return {"rows": int(rows), "cols": len(columns), "checksum": [_finite(v) for v in sums]}

        threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
        yield load, run, answer, {"version": duckdb.__version__, "threads": int(threads)}


def run_engines(
    names: Sequence[str],
    path: Path,
    questions: Sequence[str],
    progress: Callable[[str], None],
    repeats: int,
    on_answer: Callable[[str, str, dict], None],
) -> dict[str, Any]:
    """Each named engine on the groupby data file: each question one cold run apart, then
    ``repeats`` timed runs; its rows, columns and checksum.

    ``on_answer(engine, question, answer)`` is called as each answer is ready (results kept as
    they come, so a time limit loses only the question it cut).
    """
    from accel.backend import cpu_backend
    from accel.bench.db import attempt, timed
    from accel.timing import measure

    host = cpu_backend()  # the engines synchronise themselves: collect() returns a host frame
    results: dict[str, Any] = {}
    for name in names:
        try:
            why = polars_gpu_skip() if name == "polars-gpu" else None
            if why:
                results[name] = {"status": "skipped", "reason": why}
                progress(f"[{name}] skipped: {why}")
                continue
            out: dict[str, Any] = {}
            with _open_duckdb(path) if name == "duckdb" else _open_polars(path, gpu=name == "polars-gpu") as opened:
                load, run, answer, about = opened

                def one(q: str) -> dict[str, Any]:
                    timing, ans = measure(lambda: run(q), host, repeats=repeats)
                    return {**timed(timing), **answer(ans)}

                for q in questions:
                    a = out[q] = attempt(functools.partial(one, q))  # context only: a failure is recorded
                    ok = a["status"] == "ok"
                    progress(f"[{name}] {q}: " + (f"run1 {a['run1']:.3f} s  median {a['median']:.3f} s" if ok else a["reason"]))
                    on_answer(name, q, a)
            results[name] = {"status": "ok", **about, "load_seconds": load, "questions": out}
        except Exception as exc:  # noqa: BLE001 - e.g. out of memory loading: context, not the benchmark
            results[name] = {"status": "failed", "reason": first_line(exc)}
    return results
