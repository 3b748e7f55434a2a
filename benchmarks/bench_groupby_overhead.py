"""accel's pandas arm against db-benchmark's own pandas solution, question by question, alternately.

For each groupby question: one untimed run of each, then ``--repeats`` rounds in which both run
once, in alternating order (so drift on a shared machine hits both alike). accel's run is the
call ``accel bench groupby`` times (``timed_call`` around the question, on data loaded by
accel); the plain run is ``dbbench_pandas_solution.py`` timed as the benchmark times itself.
Prints per question the median seconds of each, the ratio accel / plain of the medians (target
<= 1.1: the overhead of accel's harness and dispatch only) and of the fastest runs (the least
disturbed on a shared machine), and whether the checksums are equal.
Writes the raw times to benchmarks/results/ (never overwritten).

    python benchmarks/bench_groupby_overhead.py                      # 1e7 rows, K=100
    python benchmarks/bench_groupby_overhead.py --rows 1e5 --repeats 2
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path

import dbbench_pandas_solution as plain
from common import Case, Config, main, times

from accel import _compat
from accel.backend import cpu_backend
from accel.bench import db as dbbench
from accel.cache import cache_dir
from accel.data import datagen
from accel.timing import fairness, timed_call

TARGET = 1.1


def data_file(rows: int, k: int) -> Path:
    """The groupby data set, generated once into the cache (Parquet: loading is not what is measured)."""
    path = cache_dir() / "db-benchmark" / f"{datagen.groupby_name(rows, k)}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"generating {path} ...", flush=True)
        datagen.write_table(datagen.groupby_table(rows, k), path)
    return path


def k_from_name(path: Path) -> int | None:
    """K of a file named as the benchmark names its data (``G1_1e7_1e2_0_0``), else None."""
    parts = Path(path).stem.split("_")
    try:
        return datagen.rows_from_text(parts[2]) if parts[0] == "G1" else None
    except (IndexError, ValueError):
        return None


def dispatch_overhead(backend, calls: int = 100_000) -> float:
    """Seconds accel's timed call adds to one run: ``timed_call`` of a no-op, less a bare clock pair.

    The part of the overhead that does not depend on the data; the question ratios carry the rest
    (and the noise of a shared machine).
    """

    def noop() -> None:
        return None

    start = time.perf_counter()
    for _ in range(calls):
        timed_call(noop, backend)
    harness = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(calls):
        a = time.perf_counter()
        noop()
        b = time.perf_counter()
    bare = time.perf_counter() - start
    del a, b
    return max(harness - bare, 0.0) / calls


def rel_diff(a: float, b: float) -> float:
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def arguments(parser):
    parser.add_argument("--data", type=Path, help="a groupby data file (default: generate --rows x --k)")
    parser.add_argument("--k", type=datagen.rows_from_text, default=100)
    parser.add_argument("--questions", default="all")


def cases(bench):
    args, suite = bench.args, dbbench.SUITES["groupby"]
    path = args.data or data_file(args.rows, args.k)
    paths = dbbench.locate_groupby(path)
    dbbench.check_columns(suite, paths)
    backend = cpu_backend()
    start = time.perf_counter()
    tables, x = dbbench.load_tables(backend, suite, paths), plain.load(str(path))
    print(f"loaded {len(x):,} rows twice in {time.perf_counter() - start:.1f} s ({path.name})", flush=True)
    per_call = dispatch_overhead(backend)
    print(f"accel's timed call adds {per_call * 1e6:.2f} µs to each run (no-op measured 100,000 times)", flush=True)
    import pandas

    bench.record.update(data=str(path), data_rows=int(len(x)), k=args.k if args.data is None else k_from_name(path),
                        dispatch_overhead_seconds=per_call,
                        fairness=fairness(backend, "1 (pandas groupby, both sides)", {"pandas": pandas.__version__}))  # fmt: skip
    for q in dbbench.select_questions(suite, args.questions):
        yield Case(q.name, (q, backend, tables, x), ("accel", "plain"))


def measure(bench, case, impl):
    """One run of the question: accel's as ``accel bench groupby`` times it, the plain one as it times itself."""
    q, backend, tables, x = case.value
    if impl == "plain":
        r = plain.run(x, q.name)
        return {"seconds": r["seconds"], "answer_rows": r["rows"], "checksum": r["checksum"]}
    seconds, ans = timed_call(lambda: q.answer(tables), backend)
    return {"seconds": seconds, "answer_rows": int(ans.shape[0]),
            "checksum": [_compat.column_sum(dbbench.answer_column(ans, c)) for c in q.checksum]}  # fmt: skip


def question(rows: list[dict], q) -> dict:
    """The rows of one question: medians, ratios, whether the last answers of both agree."""
    mine = [r for r in rows if r["case"] == q.name]
    acc, pla = times(mine, "accel"), times(mine, "plain")
    last = {r["impl"]: r for r in mine}
    diffs = [rel_diff(a, b) for a, b in zip(last["accel"]["checksum"], last["plain"]["checksum"])]
    rows_equal = last["accel"]["answer_rows"] == last["plain"]["answer_rows"]
    return {
        "question": q.name, "title": q.title, "accel_times": acc, "plain_times": pla,
        "accel_median": statistics.median(acc), "plain_median": statistics.median(pla),
        "ratio": statistics.median(acc) / statistics.median(pla),
        # On a shared machine the fastest run is the least disturbed one: its ratio is shown too.
        "ratio_min": min(acc) / min(pla), "rows_equal": rows_equal,
        "accel_checksum": last["accel"]["checksum"], "plain_checksum": last["plain"]["checksum"],
        "max_rel_diff": max(diffs, default=0.0), "checksums_equal": rows_equal and max(diffs, default=0.0) <= 1e-12,
    }  # fmt: skip


def tidy(bench, rows):
    suite = dbbench.SUITES["groupby"]
    out = [question(rows, q) for q in dbbench.select_questions(suite, bench.args.questions)]
    return {"rows": bench.record.pop("data_rows"), "repeats": bench.args.repeats, "target": TARGET, "questions": out,
            "all_within_target": all(r["ratio"] <= TARGET for r in out)}  # fmt: skip


def summary(result):
    lines = [f"{'q':<4}{'question':<29}{'accel s':>9}{'plain s':>9}{'ratio':>7}{'min ratio':>10}  checksums"]
    for r in result["questions"]:
        lines.append(f"{r['question']:<4}{r['title']:<29}{r['accel_median']:9.3f}{r['plain_median']:9.3f}{r['ratio']:7.2f}"
                     f"{r['ratio_min']:10.2f}  {'equal' if r['checksums_equal'] else 'DIFFER'} "
                     f"(max rel diff {r['max_rel_diff']:.1e})")  # fmt: skip
    worst = max(result["questions"], key=lambda r: r["ratio"])
    lines.append(f"worst ratio {worst['ratio']:.2f} ({worst['question']}); all within {TARGET}x: "
                 f"{result['all_within_target']}; all checksums equal: {all(r['checksums_equal'] for r in result['questions'])}")  # fmt: skip
    return "\n".join(lines)


CONFIG = Config("groupby-overhead", __doc__, measure, cases, arguments, tidy, summary, repeats=5, warmup=1, rows="1e7")

if __name__ == "__main__":
    main(CONFIG)
