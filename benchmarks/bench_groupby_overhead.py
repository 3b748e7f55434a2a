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

import argparse
import gc
import math
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dbbench_pandas_solution as plain  # noqa: E402

from accel import _compat  # noqa: E402
from accel.backend import cpu_backend  # noqa: E402
from accel.bench import db as dbbench
from accel.data import datagen
from accel.data.flights import cache_dir  # noqa: E402
from accel.timing import bench_environment, check_results_folder, fairness, timed_call, write_result  # noqa: E402

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a groupby data file (default: generate --rows x --k)")
    parser.add_argument("--rows", type=datagen.rows_from_text, default=10**7)
    parser.add_argument("--k", type=datagen.rows_from_text, default=100)
    parser.add_argument("--repeats", type=int, default=5, help="alternating timed rounds per question (default 5)")
    parser.add_argument("--questions", default="all")
    parser.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    check_results_folder(args.results)
    suite = dbbench.SUITES["groupby"]
    questions = dbbench.select_questions(suite, args.questions)
    path = args.data or data_file(args.rows, args.k)
    paths = dbbench.locate_groupby(path)
    dbbench.check_columns(suite, paths)

    backend = cpu_backend()
    t0 = time.perf_counter()
    tables = dbbench.load_tables(backend, suite, paths)
    x = plain.load(str(path))
    print(f"loaded {len(x):,} rows twice in {time.perf_counter() - t0:.1f} s ({path.name})", flush=True)

    per_call = dispatch_overhead(backend)
    print(f"accel's timed call adds {per_call * 1e6:.2f} µs to each run (no-op measured 100,000 times)", flush=True)
    out_rows = []
    print(f"{'q':<4}{'question':<29}{'accel s':>9}{'plain s':>9}{'ratio':>7}{'min ratio':>10}  checksums", flush=True)
    for q in questions:

        def accel_once() -> tuple[float, dict]:
            gc.collect()  # as the benchmark does before each run; untimed on both sides
            seconds, ans = timed_call(lambda: q.answer(backend.xdf, tables), backend)
            info = {
                "rows": int(ans.shape[0]),
                "checksum": [_compat.column_sum(dbbench.answer_column(ans, c)) for c in q.checksum],
            }
            del ans
            return seconds, info

        def plain_once() -> tuple[float, dict]:
            r = plain.run(x, q.name)
            return r["seconds"], r

        accel_once()  # untimed warm-up of each
        plain_once()
        times: dict[str, list[float]] = {"accel": [], "plain": []}
        answers: dict[str, dict] = {}
        for i in range(args.repeats):
            order = [("accel", accel_once), ("plain", plain_once)]
            if i % 2:
                order.reverse()
            for name, fn in order:
                seconds, answers[name] = fn()
                times[name].append(seconds)
        a_med, p_med = statistics.median(times["accel"]), statistics.median(times["plain"])
        diffs = [rel_diff(a, b) for a, b in zip(answers["accel"]["checksum"], answers["plain"]["checksum"])]
        equal = answers["accel"]["rows"] == answers["plain"]["rows"] and max(diffs, default=0.0) <= 1e-12
        row = {
            "question": q.name,
            "title": q.title,
            "accel_times": times["accel"],
            "plain_times": times["plain"],
            "accel_median": a_med,
            "plain_median": p_med,
            "ratio": a_med / p_med,
            # On a shared machine the fastest run is the least disturbed one: its ratio is shown too.
            "ratio_min": min(times["accel"]) / min(times["plain"]),
            "rows_equal": answers["accel"]["rows"] == answers["plain"]["rows"],
            "accel_checksum": answers["accel"]["checksum"],
            "plain_checksum": answers["plain"]["checksum"],
            "max_rel_diff": max(diffs, default=0.0),
            "checksums_equal": equal,
        }
        out_rows.append(row)
        verdict = "equal" if equal else "DIFFER"
        print(
            f"{q.name:<4}{q.title:<29}{a_med:9.3f}{p_med:9.3f}{row['ratio']:7.2f}{row['ratio_min']:10.2f}  {verdict} "
            f"(max rel diff {row['max_rel_diff']:.1e})",
            flush=True,
        )

    worst = max(out_rows, key=lambda r: r["ratio"])
    within = all(r["ratio"] <= TARGET for r in out_rows)
    print(f"worst ratio {worst['ratio']:.2f} ({worst['question']}); all within {TARGET}x: {within}; "
          f"all checksums equal: {all(r['checksums_equal'] for r in out_rows)}")  # fmt: skip
    import pandas

    result = {
        "benchmark": "groupby_overhead",
        "device": "cpu",
        "started_at": datetime.now(timezone.utc).isoformat(),
        "data": str(path),
        "rows": int(len(x)),
        "k": args.k if args.data is None else k_from_name(path),
        "repeats": args.repeats,
        "target": TARGET,
        "dispatch_overhead_seconds": per_call,
        "questions": out_rows,
        "all_within_target": within,
        "fairness": fairness(backend, "1 (pandas groupby, both sides)", {"pandas": pandas.__version__}),
        "environment": bench_environment(),
    }
    path = write_result(args.results, result, "groupby-overhead", "cpu")
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
