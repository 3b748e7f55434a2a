"""The ``accel bench``, ``accel data`` and ``accel report`` commands.

:func:`register` adds them to the ``accel`` parser; each sets its handler with
``set_defaults(handler=...)``. Every input that can be refused is checked before measuring
starts (data files and their columns, question and model names, ``--repeats``, the results
folder, ``--device gpu`` without a GPU): one line, ``accel: error: ...``, exit 2, nothing written.
A benchmark in which an arm failed a question, or whose arms' answers disagree, exits with 1
after writing its result.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from accel.cli.options import add_overwrite_argument, positive_int
from accel.errors import AccelError
from accel.files import exists_policy
from accel.record import dumps as strict_json
from accel.record import show_result

#: Where results go without --results: this folder of the output root (accel.record.output_root).
RESULTS_FOLDER = "benchmarks"


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 0 or a positive integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or a positive integer, got {value}")
    return value


def _rows(text: str) -> int:
    from accel.data.datagen import rows_from_text

    try:
        return rows_from_text(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _percent(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole percentage 0..100, got {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be a whole percentage 0..100, got {value}")
    return value


def _common(p: argparse.ArgumentParser, repeats: int, progress_file: bool = True) -> None:
    p.add_argument(
        "--device",
        choices=["auto", "cpu", "gpu"],
        default="auto",
        help="the accelerated arm: auto (GPU when usable, else recorded as skipped), gpu (error if none), cpu (CPU arm only)",
    )
    p.add_argument("--repeats", type=positive_int, default=repeats, help=f"timed runs after the cold one (default {repeats})")
    p.add_argument(
        "--warmup",
        type=_non_negative_int,
        default=0,
        help="untimed runs between the cold run and the timed ones (default 0)",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=None,
        help=f"folder for the result JSON (default: {RESULTS_FOLDER}/ in $ACCEL_OUT_DIR, else in runs/)",
    )
    p.add_argument("--json", action="store_true", help="print the whole result as JSON instead of tables")
    if not progress_file:
        return
    p.add_argument(
        "--progress-file",
        type=Path,
        default=None,
        help="append each finished question or model (per arm and engine) to this JSON-lines file as it "
        "completes, so that a time limit keeps what finished (a new file; --overwrite replaces one that exists)",
    )
    add_overwrite_argument(p, "the --progress-file")


def _cpu_from(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cpu-from",
        type=Path,
        action="append",
        default=None,
        metavar="RESULT.json|DIR",
        help="take the CPU arm (and the CPU engines) from this earlier result of the same benchmark on the same "
        "data (same bytes) and CPU model (made with --device cpu) instead of running it again; repeat it to "
        "gather questions measured in several runs; a folder: every matching result in it",
    )


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bench``, ``data`` and ``report`` to the ``accel`` command's subparsers."""
    bench = sub.add_parser("bench", help="paired benchmarks: db-benchmark groupby/join, models, crossover size")
    bsub = bench.add_subparsers(dest="suite", required=True, parser_class=type(bench))

    g = bsub.add_parser("groupby", help="db-benchmark groupby questions q1-q10 on both arms, answers checked")
    g.add_argument("--data", type=Path, required=True, help="a groupby data file, .csv or .parquet (accel data groupby)")
    g.add_argument("--questions", default="all", help="comma-separated q1..q10 (default all)")
    g.add_argument(
        "--engines",
        default="",
        help="also run the questions on other engines for context: polars,duckdb (CPU), polars-gpu (Polars' GPU engine)",
    )
    _cpu_from(g)
    _common(g, repeats=3)
    g.set_defaults(handler=_cmd_bench_db)

    j = bsub.add_parser("join", help="db-benchmark join questions q1-q5 on both arms, answers checked")
    j.add_argument("--data-dir", type=Path, required=True, help="folder with the four join tables (accel data join)")
    j.add_argument("--questions", default="all", help="comma-separated q1..q5 (default all)")
    _cpu_from(j)
    _common(j, repeats=3)
    j.set_defaults(handler=_cmd_bench_db, engines="")

    m = bsub.add_parser("models", help="scikit-learn vs cuML model pairs and XGBoost CPU vs CUDA")
    m.add_argument("--rows", type=_rows, default=100_000, help="rows of generated data, 80%% for training (default 1e5)")
    m.add_argument("--features", type=positive_int, default=32, help="columns of generated data (default 32)")
    from accel.registry import BENCH_PAIRS

    m.add_argument("--models", default="all", help=f"comma-separated, of {', '.join(BENCH_PAIRS)} (default all)")
    m.add_argument("--seed", type=int, default=42)
    _common(m, repeats=3)
    m.set_defaults(handler=_cmd_bench_models)

    c = bsub.add_parser("crossover", help="the row count from which the GPU arm wins, per operation")
    c.add_argument(
        "--operations",
        default=None,
        help="comma-separated: groupby, join, or model names as accel bench models lists them (default groupby,join,xgboost)",
    )
    c.add_argument("--min-rows", type=_rows, default=1_000, help="smallest size (default 1e3)")
    c.add_argument("--max-rows", type=_rows, default=10_000_000, help="largest size (default 1e7)")
    c.add_argument("--steps-per-decade", type=positive_int, default=1, help="sizes per factor of 10 (default 1)")
    c.add_argument("--features", type=positive_int, default=32, help="columns for model operations (default 32)")
    c.add_argument("--seed", type=int, default=42)
    _common(c, repeats=3, progress_file=False)
    c.set_defaults(handler=_cmd_bench_crossover)

    data = sub.add_parser("data", help="generate the db-benchmark data sets")
    dsub = data.add_subparsers(dest="dataset", required=True, parser_class=type(data))
    dg = dsub.add_parser("groupby", help="G1 groupby data: N rows, K groups (ids, v1..v3)")
    dg.add_argument("n", type=_rows, metavar="N", help="rows, e.g. 1e7")
    dg.add_argument("k", type=_rows, metavar="K", help="groups of the low-cardinality keys, e.g. 1e2")
    dg.add_argument("out", type=Path, metavar="OUT", help="file to write, .csv or .parquet")
    dg.add_argument("--nas", type=_percent, default=0, help="percent of NA (default 0)")
    dg.add_argument("--sort", action="store_true", help="sort rows by id1..id6, as the benchmark's sort flag")
    dg.add_argument("--seed", type=int, default=108)
    add_overwrite_argument(dg, "OUT")
    dg.add_argument("--json", action="store_true", help="print what was written as JSON instead of text")
    dg.set_defaults(handler=_cmd_data_groupby)
    dj = dsub.add_parser("join", help="J1 join data: left table of N rows and three right tables")
    dj.add_argument("n", type=_rows, metavar="N", help="rows of the left table, e.g. 1e7")
    dj.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="folder to write the four tables to")
    dj.add_argument("--nas", type=_percent, default=0, help="percent of NA in the left table (default 0)")
    dj.add_argument("--format", choices=["csv", "parquet"], default="csv", help="file format (default csv, as the benchmark)")
    dj.add_argument("--seed", type=int, default=108)
    add_overwrite_argument(dj, "the four tables in OUT_DIR")
    dj.add_argument("--json", action="store_true", help="print what was written as JSON instead of text")
    dj.set_defaults(handler=_cmd_data_join)

    r = sub.add_parser("report", help="one HTML page (plots inline) and a Markdown summary from results and run records")
    r.add_argument(
        "dir",
        type=Path,
        metavar="DIR",
        nargs="?",
        default=None,
        help="folder of run records and benchmark results, searched recursively (default: $ACCEL_OUT_DIR, else runs/)",
    )
    r.add_argument(
        "--out", type=Path, default=None, help="HTML file to write (default DIR/report.html, or report-NNN.html if taken)"
    )
    add_overwrite_argument(r, "--out")
    r.add_argument(
        "--json", action="store_true", help="print the records shown and their figures as JSON instead of the Markdown summary"
    )
    r.set_defaults(handler=_cmd_report)


# --------------------------------------------------------------------------- helpers


def _results_folder(args: argparse.Namespace) -> Path:
    """``--results``, or the output root's benchmarks folder (set on ``args`` for the rest of the command)."""
    from accel.record import output_root

    if args.results is None:
        args.results = output_root() / RESULTS_FOLDER
    return args.results


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _envelope(benchmark: str, args: argparse.Namespace, started: datetime, gpu: Any, gpu_reason: str | None) -> dict:
    from accel.record import record_head

    return {
        **record_head("bench"),
        "benchmark": benchmark,
        "started_at": started.isoformat(),
        "finished_at": None,
        "config": {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in vars(args).items()
            if k not in ("handler", "command", "suite", "json")
        },
        "gpu": {
            "status": "ok" if gpu is not None else "skipped",
            "reason": gpu_reason,
            "device_name": gpu.device.name if gpu is not None and gpu.device else None,
        },
    }


def _finish(result: dict, gpu_ran: bool, args: argparse.Namespace, fairness: dict, render: Callable[[dict], None]) -> None:
    """Stamp the result, write it (never over an earlier one) and show it: JSON, or ``render``'s
    tables with the fairness line; then where it was written."""
    from accel.timing import bench_environment, result_device, write_result

    result["finished_at"] = datetime.now(timezone.utc).isoformat()
    result["environment"] = bench_environment()
    result["fairness"] = fairness
    device = result_device(gpu_ran, result["environment"])
    path = write_result(args.results, result, result["benchmark"].replace("_", "-"), device)

    def show() -> None:
        render(result)
        _print(fairness["line"])

    show_result(result, args.json, show, {"results": path})


def _failed_exit(failed: list[str]) -> int:
    """Exit status 1 naming what failed (the result has the reasons), else 0."""
    if not failed:
        return 0
    print(f"accel: failed: {', '.join(failed)} (see the result)", file=sys.stderr)
    return 1


def _fmt_s(value: Any) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def _fmt_x(value: Any) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.1f}×"


class _ProgressFile:
    """One JSON line per finished question or model, appended as it finishes (a time limit keeps them).

    Each line names the benchmark, the data, the arm or engine, the code that ran and the
    machine, and holds that answer's measurements as the final result holds them.
    """

    def __init__(self, path: Path | None, benchmark: str, data: Any, overwrite: bool = False):
        self.path = path
        self.common: dict[str, Any] = {}
        if path is None:
            return
        from accel.environment import cpu_model, git_state
        from accel.files import write_new
        from accel.record import ensure_writable

        ensure_writable(Path(path).parent, what="the progress file's folder", option="--progress-file")
        # A new, empty file: one that exists (the user's own) is refused unless --overwrite says so.
        write_new(Path(path), b"", "the progress file", "choose another --progress-file", exists=exists_policy(overwrite))
        git = git_state()
        self.common = {
            "benchmark": benchmark,
            "data": data,
            "git_sha": git["sha"],
            "git_dirty": git["dirty"],
            "host": cpu_model(),
        }

    def __call__(self, arm: str, key: str, kind: str, answer: dict) -> None:
        if self.path is None:
            return
        line = {"at": datetime.now(timezone.utc).isoformat(), **self.common, "arm": arm, kind: key, "result": answer}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(strict_json(line, indent=None) + "\n")
            f.flush()


def _reuse_cpu_arm(paths: list[Path], benchmark: str, data_files: dict, questions: list) -> tuple[dict, dict]:
    """The CPU arm and CPU engines of earlier results, each checked to be the same benchmark on
    the same data (size and sha256 of every file) and CPU model; refused (exit 2) otherwise.
    Questions are taken from the first result that has them."""
    from accel.bench.engines import CPU_ENGINES
    from accel.environment import cpu_model
    from accel.record import load_record

    rows: dict[str, dict] = {}
    sources: dict[str, str] = {}
    arm: dict[str, Any] = {}
    engines: dict[str, dict] = {}
    # A folder: every result in it that matches (benchmark, data, CPU) is used, the rest ignored.
    expanded = [(c, True) for p in paths if Path(p).is_dir() for c in sorted(Path(p).glob("*.json"))]
    expanded += [(Path(p), False) for p in paths if not Path(p).is_dir()]
    for path, lenient in expanded:
        try:
            prior = load_record(path)
            if not isinstance(prior, dict) or prior.get("benchmark") != benchmark:
                raise AccelError(f"--cpu-from: {str(path)!r} is not a {benchmark} result")
            theirs = {r: {k: f.get(k) for k in ("bytes", "sha256")} for r, f in (prior.get("data_files") or {}).items()}
            mine = {r: {k: f.get(k) for k in ("bytes", "sha256")} for r, f in data_files.items()}
            if theirs != mine:
                raise AccelError(f"--cpu-from: {str(path)!r} was measured on other data (the files' bytes differ)")
            host = (prior.get("environment") or {}).get("cpu_model")
            if host != cpu_model():
                raise AccelError(f"--cpu-from: {str(path)!r} was measured on another CPU ({host!r}), not this one")
        except (OSError, ValueError) as exc:
            if lenient:
                continue
            raise AccelError(f"--cpu-from: cannot read {str(path)!r} as a result ({type(exc).__name__})") from None
        except AccelError:
            if lenient:
                continue
            raise
        arm = arm or {k: v for k, v in (prior.get("arms") or {}).get("cpu", {}).items() if k != "questions"}
        for row in prior.get("questions") or []:
            if (row.get("cpu") or {}).get("status") == "ok" and row["question"] not in rows:
                rows[row["question"]] = row["cpu"]
                sources[row["question"]] = str(path)
        for name, eng in (prior.get("engines") or {}).items():
            if name not in CPU_ENGINES or eng.get("status") != "ok":
                continue
            merged = engines.setdefault(name, {**{k: v for k, v in eng.items() if k != "questions"}, "questions": {}})
            for q, a in (eng.get("questions") or {}).items():
                merged["questions"].setdefault(q, {**a, "reused_from": str(path)})
    missing = [q.name for q in questions if q.name not in rows]
    if missing:
        raise AccelError(f"--cpu-from: no CPU answer for {', '.join(missing)} in {', '.join(map(str, paths))}")
    arm.update(
        {
            "status": "ok",
            "questions": {q.name: rows[q.name] for q in questions},
            "reused_from": {q.name: sources[q.name] for q in questions},
        }
    )
    return arm, engines


def _data_files(paths: dict[str, Path]) -> dict[str, dict]:
    """Each data file's path, size and sha256: what --cpu-from compares (a regenerated file with the
    same bytes is the same data)."""
    import hashlib

    out = {}
    for role, p in paths.items():
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        out[role] = {"path": str(Path(p).resolve()), "bytes": Path(p).stat().st_size, "sha256": h.hexdigest()}
    return out


def _print(text: str) -> None:
    print(text, flush=True)


# --------------------------------------------------------------------------- bench groupby / join


def _cmd_bench_db(args: argparse.Namespace) -> int:
    from accel.backend import cpu_backend, resolve_arms
    from accel.bench import db as dbbench
    from accel.bench import engines
    from accel.timing import check_results_folder, fairness

    suite = dbbench.SUITES[args.suite]
    questions = dbbench.select_questions(suite, args.questions)
    paths = dbbench.locate_groupby(args.data) if suite.name == "groupby" else dbbench.locate_join(args.data_dir)
    dbbench.check_columns(suite, paths)
    engine_names = engines.check_engines([e.strip() for e in args.engines.split(",") if e.strip()])
    check_results_folder(_results_folder(args))
    data_files = _data_files(paths)
    reused_cpu, reused_engines = (
        _reuse_cpu_arm(args.cpu_from, suite.benchmark, data_files, questions) if args.cpu_from else (None, {})
    )
    arms = resolve_arms(args.device)
    gpu, gpu_reason = arms.gpu, arms.gpu_skip
    cpu = cpu_backend()

    started = datetime.now(timezone.utc)
    result = _envelope(suite.benchmark, args, started, gpu, gpu_reason)
    result["data"] = {role: str(p) for role, p in paths.items()}
    result["data_files"] = data_files
    keep = _ProgressFile(args.progress_file, suite.benchmark, result["data"], args.overwrite)
    arms: dict[str, dict] = {}
    arms["gpu"] = (
        dbbench.run_arm(
            gpu, suite, paths, questions, args.repeats, args.warmup, _progress, lambda q, a: keep("gpu", q, "question", a)
        )
        if gpu is not None
        else {"status": "skipped", "reason": gpu_reason}
    )
    if reused_cpu is not None:
        arms["cpu"] = reused_cpu
        _progress(f"[cpu] taken from {', '.join(map(str, args.cpu_from))} (same data and CPU model)")
    else:
        arms["cpu"] = dbbench.run_arm(
            cpu, suite, paths, questions, args.repeats, args.warmup, _progress, lambda q, a: keep("cpu", q, "question", a)
        )
    result["arms"] = {arm: {k: v for k, v in r.items() if k != "questions"} for arm, r in arms.items()}
    result["questions"] = dbbench.combine(questions, arms)
    if engine_names or reused_engines:
        to_run = [n for n in engine_names if n not in reused_engines]
        result["engines"] = {
            **reused_engines,
            **engines.run_engines(
                to_run, paths["x"], [q.name for q in questions], _progress, args.repeats,
                lambda n, q, a: keep(n, q, "question", a),
            ),
        }  # fmt: skip
        for row in result["questions"]:
            for eng in result["engines"].values():
                if eng.get("status") == "ok" and row["question"] in eng["questions"]:
                    eng["questions"][row["question"]].update(
                        dbbench.compare_answers(eng["questions"][row["question"]], row["cpu"])
                    )

    import pandas
    import pyarrow

    settings: dict[str, Any] = {
        "pandas": pandas.__version__,
        "groupby/merge threads": 1,
        "file reader": f"pyarrow, {pyarrow.cpu_count()} threads",
    }
    for name, eng in result.get("engines", {}).items():
        if eng.get("status") == "ok":
            settings[f"{name} threads (context)"] = eng["threads"]
    fair = fairness(cpu, "1 (pandas runs groupby and merge on one thread; it has no parallel groupby)", settings)
    _finish(result, gpu is not None, args, fair, _render_db)
    return _db_exit(result)


def _db_exit(result: dict) -> int:
    failed = [
        f"{row['question']} ({arm})"
        for row in result["questions"]
        for arm in ("gpu", "cpu")
        if row[arm].get("status") == "failed"
    ]
    disagree = [row["question"] for row in result["questions"] if row["agree"] is False]
    if failed:
        print(f"accel: failed: {', '.join(failed)} (see the result)", file=sys.stderr)
    if disagree:
        print(f"accel: the arms' answers DISAGREE on {', '.join(disagree)} (see the result)", file=sys.stderr)
    return 1 if failed or disagree else 0


def _console() -> Any:
    from rich.console import Console

    # Rich draws 80 columns when stdout is not a terminal; these tables need more.
    return Console() if sys.stdout.isatty() else Console(width=160)


def _render_db(result: dict) -> None:
    from rich.table import Table

    from accel.report.console import gpu_status_line

    console = _console()
    gpu_shown = any(row["gpu"].get("status") in ("ok", "failed") for row in result["questions"])
    table = Table(title=f"db-benchmark {result['benchmark'].removeprefix('db_')} — seconds", title_justify="left")
    columns = ["q", "question", "CPU run1", "CPU run2", "CPU median", "rows"]
    if gpu_shown:
        columns += ["GPU run1", "GPU run2", "GPU median", "speedup", "answers"]
    for col in columns:
        table.add_column(col, justify="left" if col in ("q", "question", "answers") else "right")
    for row in result["questions"]:
        cpu, gpu = row["cpu"], row["gpu"]
        cells = [row["question"], row["title"]]
        if cpu.get("status") == "ok":
            cells += [_fmt_s(cpu["run1"]), _fmt_s(cpu["run2"]), _fmt_s(cpu["median"]), f"{cpu['rows']:,}"]
        else:
            cells += [cpu.get("status", "—"), "", "", f"{gpu['rows']:,}" if "rows" in gpu else "—"]
        if gpu_shown:
            if gpu.get("status") == "ok":
                cells += [_fmt_s(gpu["run1"]), _fmt_s(gpu["run2"]), _fmt_s(gpu["median"])]
            else:
                cells += [gpu.get("status", "—"), "", ""]
            cells += [_fmt_x(row["speedup"]), {True: "agree", False: "DISAGREE", None: "not compared"}[row["agree"]]]
        table.add_row(*cells)
    console.print(table)
    if result["gpu"]["status"] != "ok":
        console.print(gpu_status_line(result["gpu"]), highlight=False, markup=False, soft_wrap=True)
    for row in result["questions"]:
        for arm in ("gpu", "cpu"):
            if row[arm].get("status") == "failed":
                console.print(
                    f"{row['question']} {arm.upper()} arm failed: {row[arm]['reason']}",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )
    if result.get("engines"):
        names = list(result["engines"])
        t = Table(title="the same questions on other engines, for context (run 2, seconds)", title_justify="left")
        t.add_column("q")
        t.add_column("pandas arm", justify="right")
        for name in names:
            t.add_column(name, justify="right")
            t.add_column(f"{name} answer")
        for row in result["questions"]:
            cells = [row["question"], _fmt_s(row["cpu"].get("run2"))]
            for name in names:
                eng = result["engines"][name]
                if eng.get("status") != "ok":
                    cells += [eng.get("status", "—"), ""]
                    continue
                a = eng["questions"].get(row["question"], {})
                cells.append(_fmt_s(a.get("run2")) if a.get("status") == "ok" else a.get("status", "—"))
                cells.append({True: "agrees", False: "DIFFERS", None: "—"}[a.get("agree")])
            t.add_row(*cells)
        console.print(t)
        for name, eng in result["engines"].items():
            if eng.get("status") != "ok":
                console.print(f"{name}: {eng.get('reason')}", highlight=False, markup=False, soft_wrap=True)


# --------------------------------------------------------------------------- bench models / crossover


def _model_fairness(cpu: Any) -> dict:
    from accel.timing import blas_threads, fairness

    pools = {f"{p['user_api']} ({p['library']})": p["threads"] for p in blas_threads()}
    settings = {
        "scikit-learn n_jobs": "-1 (RandomForest, KNeighbors)",
        "xgboost n_jobs": cpu.n_threads,
        **pools,
    }
    return fairness(cpu, f"all {cpu.n_threads}", settings)


def _cmd_bench_models(args: argparse.Namespace) -> int:
    from accel.backend import cpu_backend, resolve_arms
    from accel.bench import models as modelbench
    from accel.timing import check_results_folder

    pairs = modelbench.select_models(args.models, say=_progress)
    if args.rows < 50:
        raise AccelError(f"--rows must be at least 50 (an 80/20 split, 5 neighbours, 8 clusters), got {args.rows}")
    if args.features < 8:
        raise AccelError(f"--features must be at least 8 (PCA keeps 8 components), got {args.features}")
    check_results_folder(_results_folder(args))
    # The models need CuPy arrays, not cuDF: XGBoost runs on the GPU before cuDF is there, and
    # each pair skips with the library it lacks (cuML, XGBoost's CUDA build).
    arms = resolve_arms(args.device, needs=("cupy",))
    gpu, gpu_reason = arms.gpu, arms.gpu_skip
    cpu = cpu_backend()

    started = datetime.now(timezone.utc)
    result = _envelope("models", args, started, gpu, gpu_reason)
    result["data"] = {"rows": args.rows, "train_rows": int(args.rows * 0.8), "features": args.features, "dtype": "float32",
                      "generator": "sklearn.datasets.make_classification / make_regression"}  # fmt: skip
    keep = _ProgressFile(args.progress_file, "models", result["data"], args.overwrite)
    result["models"] = modelbench.run_models(
        pairs, cpu, gpu, gpu_reason, rows=args.rows, features=args.features, seed=args.seed,
        repeats=args.repeats, warmup=args.warmup, progress=_progress,
        on_result=lambda arm, model, r: keep(arm, model, "model", r),
    )  # fmt: skip
    fair = _model_fairness(cpu)
    _finish(result, gpu is not None, args, fair, _render_models)
    failed = [f"{r['model']} ({arm})" for r in result["models"] for arm in ("gpu", "cpu") if r[arm]["status"] == "failed"]
    return _failed_exit(failed)


def _render_models(result: dict) -> None:
    from rich.table import Table

    from accel.report.console import gpu_status_line

    console = _console()
    gpu_shown = any(r["gpu"]["status"] in ("ok", "failed") for r in result["models"])
    title = f"models on {result['data']['rows']:,} rows × {result['data']['features']} features — median seconds"
    t = Table(title=title, title_justify="left")
    columns = ["model", "metric", "CPU fit", "CPU predict", "CPU quality"]
    if gpu_shown:
        columns += ["GPU fit", "GPU predict", "GPU quality", "fit speedup", "predict speedup"]
    for col in columns:
        t.add_column(col, justify="left" if col in ("model", "metric") else "right")

    def arm_cells(arm: dict) -> list[str]:
        if arm["status"] != "ok":
            return [arm["status"], "", ""]
        return [_fmt_s(arm["fit"]["median"]), _fmt_s(arm["predict"]["median"]), f"{arm['quality']:.4f}"]

    for r in result["models"]:
        cells = [r["model"], r["metric"], *arm_cells(r["cpu"])]
        if gpu_shown:
            cells += [*arm_cells(r["gpu"]), _fmt_x(r["fit_speedup"]), _fmt_x(r["predict_speedup"])]
        t.add_row(*cells)
    console.print(t)
    for r in result["models"]:
        for arm in ("gpu", "cpu"):
            if r[arm]["status"] == "failed":
                console.print(
                    f"{r['model']} {arm.upper()} arm failed: {r[arm]['reason']}",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )
    reasons = sorted({r["gpu"]["reason"] for r in result["models"] if r["gpu"]["status"] == "skipped"})
    for reason in reasons:
        console.print(gpu_status_line({"status": "skipped", "reason": reason}), highlight=False, markup=False, soft_wrap=True)


def _cmd_bench_crossover(args: argparse.Namespace) -> int:
    from accel.backend import cpu_backend, resolve_arms
    from accel.bench import crossover
    from accel.timing import check_results_folder

    operations = crossover.select_operations(args.operations, say=_progress)
    sizes = crossover.row_counts(args.min_rows, args.max_rows, args.steps_per_decade)
    if args.features < 8:
        raise AccelError(f"--features must be at least 8 (PCA keeps 8 components), got {args.features}")
    if sizes[0] < 50 and any(op not in crossover.FRAME_OPERATIONS for op in operations):
        raise AccelError(f"--min-rows must be at least 50 for model operations, got {sizes[0]}")
    from accel.data.datagen import MIN_JOIN_ROWS

    if sizes[0] < MIN_JOIN_ROWS and "join" in operations:
        raise AccelError(f"--min-rows must be at least {MIN_JOIN_ROWS} for the join operation, got {sizes[0]}")
    check_results_folder(_results_folder(args))
    arms = resolve_arms(args.device)
    gpu, gpu_reason = arms.gpu, arms.gpu_skip
    cpu = cpu_backend()

    started = datetime.now(timezone.utc)
    result = _envelope("crossover", args, started, gpu, gpu_reason)
    result["sizes"] = sizes
    result["operations"] = crossover.sweep(
        operations, sizes, cpu, gpu, gpu_reason, repeats=args.repeats, warmup=args.warmup, seed=args.seed,
        features=args.features, progress=_progress,
    )  # fmt: skip
    fair = _model_fairness(cpu)
    fair["line"] += "; groupby/join: pandas, one thread"
    _finish(result, gpu is not None, args, fair, _render_crossover)
    failed = [
        f"{o['operation']} at {p['rows']:,} ({arm})"
        for o in result["operations"]
        for p in o["points"]
        for arm in ("gpu", "cpu")
        if p[arm]["status"] == "failed"
    ]
    return _failed_exit(failed)


def _render_crossover(result: dict) -> None:
    from rich.table import Table

    from accel.report.console import gpu_status_line

    console = _console()
    reasons: list[str] = []  # each said once, after the tables
    for op in result["operations"]:
        t = Table(title=f"{op['operation']}: {op['description']} — median seconds", title_justify="left")
        for col in ("rows", "CPU", "GPU", "speedup"):
            t.add_column(col, justify="right")
        for p in op["points"]:
            t.add_row(
                f"{p['rows']:,}",
                _fmt_s(p["cpu"].get("median")) if p["cpu"]["status"] == "ok" else p["cpu"]["status"],
                _fmt_s(p["gpu"].get("median")) if p["gpu"]["status"] == "ok" else p["gpu"]["status"],
                _fmt_x(p["speedup"]),
            )
        console.print(t)
        if op["gpu_status"] != "ok":
            line = gpu_status_line({"status": op["gpu_status"], "reason": op["gpu_reason"]})
            reasons += [line] if line not in reasons else []
            console.print(f"crossover: not measured (GPU arm {op['gpu_status']})", highlight=False)
        elif op["crossover_rows"] is None:
            console.print("crossover: the GPU arm did not win from any size measured on", highlight=False)
        else:
            console.print(f"crossover: the GPU arm wins from {op['crossover_rows']:,} rows on", highlight=False)
    for line in reasons:
        console.print(line, highlight=False, markup=False, soft_wrap=True)


# --------------------------------------------------------------------------- data, report


def _cmd_data_groupby(args: argparse.Namespace) -> int:
    from accel.data import datagen

    datagen.table_format(args.out)
    if args.k > args.n:
        raise AccelError(f"K ({args.k}) must not exceed N ({args.n})")
    datagen.check_memory(args.n, "groupby")  # from the RAM size, before anything is allocated or created
    with _no_empty_folders(Path(args.out).parent):
        datagen.prepare_output(args.out, folder=False, exists=exists_policy(args.overwrite))
        _progress(f"generating {datagen.groupby_name(args.n, args.k, args.nas, args.sort)}: {args.n:,} rows, K={args.k:,}")
        table = datagen.groupby_table(args.n, args.k, nas=args.nas, sort=args.sort, seed=args.seed)
        path = datagen.write_table(table, args.out, exists_policy(args.overwrite))
    name = datagen.groupby_name(args.n, args.k, args.nas, args.sort)
    settings = {"rows": args.n, "k": args.k, "nas": args.nas, "sort": args.sort, "seed": args.seed}
    _show_data("groupby", name, settings, {"groupby data": ("x", path, table)}, args.json)
    return 0


def _cmd_data_join(args: argparse.Namespace) -> int:
    from accel.data import datagen

    if args.n < datagen.MIN_JOIN_ROWS:
        raise AccelError(
            f"the join data needs N >= {datagen.MIN_JOIN_ROWS} rows (three right tables of different sizes), got {args.n}"
        )
    datagen.check_memory(args.n, "join")  # from the RAM size, before anything is allocated or created
    with _no_empty_folders(Path(args.out_dir)):
        names = datagen.join_names(args.n, args.nas)
        files = [args.out_dir / f"{name}.{args.format}" for name in names.values()]
        datagen.prepare_output(args.out_dir, folder=True, files=files, exists=exists_policy(args.overwrite))
        _progress(f"generating {names['x']} and its right tables ({args.n:,} rows)")
        tables = datagen.join_tables(args.n, nas=args.nas, seed=args.seed)
        written = {}
        for role, table in tables.items():
            path = datagen.write_table(table, args.out_dir / f"{names[role]}.{args.format}", exists_policy(args.overwrite))
            written[f"{role} table"] = (role, path, table)
    settings = {"rows": args.n, "nas": args.nas, "format": args.format, "seed": args.seed}
    _show_data("join", names["x"], settings, written, args.json)
    return 0


def _show_data(dataset: str, name: str, settings: dict, written: dict[str, tuple[str, Path, Any]], as_json: bool) -> None:
    """Say what ``accel data`` wrote: a line per table (rows, columns), then where each file went;
    with ``--json``, one JSON document (the settings and each file's role, rows, columns and size).

    ``written`` maps the label each file is named by to its role in the data set (``x``, the
    table the questions read; ``small``, ``medium``, ``big``, the join's right tables), its path
    and the pyarrow Table written there.
    """
    files = [
        {
            "role": role,
            "path": str(path),
            "rows": table.num_rows,
            "columns": list(table.column_names),
            "bytes": path.stat().st_size,
        }
        for role, path, table in written.values()
    ]
    document = {"dataset": dataset, "name": name, **settings, "files": files}

    def render() -> None:
        for label, f in zip(written, files):
            _print(f"{label}: {f['rows']:,} rows, columns {', '.join(f['columns'])}")

    show_result(document, as_json, render, {label: path for label, (_, path, _) in written.items()})


@contextmanager
def _no_empty_folders(folder: Path) -> Iterator[None]:
    """On failure, remove the folders under ``folder`` (and it) that this command created and left empty."""
    folder = Path(folder).absolute()
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        yield
    except BaseException:
        for p in missing:  # deepest first
            try:
                p.rmdir()
            except OSError:
                break  # not empty (or not ours): leave it
        raise


def _cmd_report(args: argparse.Namespace) -> int:
    from accel.record import output_root
    from accel.report.html import write_report

    report = write_report(args.dir or output_root(), args.out, overwrite=args.overwrite)
    show_result(report.figures(), args.json, lambda: _print(report.markdown), {"report": report.path})
    return 0
