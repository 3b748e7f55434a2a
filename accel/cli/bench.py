"""The ``accel bench``, ``accel data`` and ``accel report`` commands.

:func:`register` adds them to the ``accel`` parser; each sets its handler with
``set_defaults(handler=...)``. Every input that can be refused is checked before measuring
starts (data files and their columns, question and model names, ``--repeats``, the results
folder, ``--device gpu`` without a GPU): one line, ``accel: error: ...``, exit 2, nothing written.
A benchmark in which an arm failed a question, or whose arms' answers disagree, exits with 1
after writing its result. ``accel bench SUITE`` is :func:`accel.benchmark` and its tables.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from accel.bench.suites import RESULTS_FOLDER, stderr_line
from accel.cli.options import Flag, add_flags, call, checked, from_0, overwrite, percent, positive_int, shown
from accel.errors import AccelError
from accel.files import exists_policy
from accel.record import ARMS, Arm, CrossoverBench, DbBench, Fairness, FitArm, ModelsBench, Timed, show_result
from accel.report.console import arm_status_line, fmt_value, wide_console


def _rows(text: str) -> int:
    from accel.data.datagen import rows_from_text  # refuses all but a positive whole number

    return checked(rows_from_text, lambda _rows: True, "a positive whole number such as 1e7")(text)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bench``, ``data`` and ``report`` to the ``accel`` command's subparsers."""
    bench = sub.add_parser("bench", help="paired benchmarks: db-benchmark groupby/join, models, crossover size")
    bsub = bench.add_subparsers(dest="suite", required=True, parser_class=type(bench))
    for name, (text, flags) in _suites().items():
        p = bsub.add_parser(name, help=text)
        add_flags(p, flags)
        p.set_defaults(handler=_cmd_bench)

    data = sub.add_parser("data", help="generate the db-benchmark data sets")
    dsub = data.add_subparsers(dest="dataset", required=True, parser_class=type(data))
    dg = dsub.add_parser("groupby", help="G1 groupby data: N rows, K groups (ids, v1..v3)")
    dg.add_argument("n", type=_rows, metavar="N", help="rows, e.g. 1e7")
    dg.add_argument("k", type=_rows, metavar="K", help="groups of the low-cardinality keys, e.g. 1e2")
    dg.add_argument("out", type=Path, metavar="OUT", help="file to write, .csv or .parquet")
    dg.add_argument("--nas", type=percent, default=0, help="percent of NA (default 0)")
    dg.add_argument("--sort", action="store_true", help="sort rows by id1..id6, as the benchmark's sort flag")
    dj = dsub.add_parser("join", help="J1 join data: left table of N rows and three right tables")
    dj.add_argument("n", type=_rows, metavar="N", help="rows of the left table, e.g. 1e7")
    dj.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="folder to write the four tables to")
    dj.add_argument("--nas", type=percent, default=0, help="percent of NA in the left table (default 0)")
    dj.add_argument("--format", choices=["csv", "parquet"], default="csv", help="file format (default csv, as the benchmark)")
    for p, written, handler in ((dg, "OUT", _cmd_data_groupby), (dj, "the four tables in OUT_DIR", _cmd_data_join)):
        p.add_argument("--seed", type=int, default=108)
        add_flags(p, {"--overwrite": overwrite(written), "--json": "print what was written as JSON instead of text"})
        p.set_defaults(handler=handler)

    r = sub.add_parser("report", help="one HTML page (plots inline) and a Markdown summary from results and run records")
    shown = {"action": "store_true", "exclusive": "shown"}
    add_flags(
        r,
        {
            "dir": (
                "folder of run records and benchmark results, searched recursively (default: $ACCEL_OUT_DIR, else runs/)",
                {"type": Path, "metavar": "DIR", "nargs": "?"},
            ),
            "--out": "HTML file to write (default DIR/report.html, or report-NNN.html if taken)",
            "--overwrite": overwrite("--out"),
            "--markdown": ("print the page's summary as Markdown (a table per kind of record) on stdout", shown),
            "--json": ("print the records shown and their figures as JSON", shown),
        },
    )
    r.set_defaults(handler=_cmd_report)


def _suites() -> dict[str, tuple[str, dict[str, Flag]]]:
    """Each suite of ``accel bench``: its help and its flags (its own, then those the suites share)."""
    from accel.registry import BENCH_PAIRS

    cpu_from = (
        "take the CPU arm (and the CPU engines) from this earlier result of the same benchmark on the same data (same "
        "bytes) and CPU model (made with --device cpu) instead of running it again; repeat it to gather questions "
        "measured in several runs; a folder: every matching result in it"
    )
    device = "the accelerated arm: auto (GPU when usable, else recorded as skipped), gpu (error if none), cpu (CPU arm only)"
    progress = (
        "append each finished question or model (per arm and engine) to this JSON-lines file as it completes, so that "
        "a time limit keeps what finished (a new file; --overwrite replaces one that exists)"
    )
    # After each suite's own flags: common, kept (with a progress file) or reused (and --cpu-from). No defaults
    # for a suite's own: None takes the suite's (accel.bench.suites.SUITE_SETTINGS), as accel.benchmark does.
    common: dict[str, Flag] = {
        "--device": (device, {"default": "auto"}),
        "--repeats": ("timed runs after the cold one (default 3)", {"type": positive_int, "default": 3}),
        "--warmup": ("untimed runs between the cold run and the timed ones (default 0)", {"type": from_0, "default": 0}),
        "--results": (
            f"folder for the result JSON (default: {RESULTS_FOLDER}/ in $ACCEL_OUT_DIR, else in runs/)",
            {"type": Path},
        ),
        "--json": "print the whole result as JSON instead of tables",
    }
    kept = {**common, "--progress-file": (progress, {"type": Path}), "--overwrite": overwrite("the --progress-file")}
    reused = {"--cpu-from": (cpu_from, {"type": Path, "action": "append", "metavar": "RESULT.json|DIR"}), **kept}
    rows = {"type": _rows}
    return {
        "groupby": (
            "db-benchmark groupby questions q1-q10 on both arms, answers checked",
            {
                "--data": ("a groupby data file, .csv or .parquet (accel data groupby)", {"type": Path, "required": True}),
                "--questions": "comma-separated q1..q10 (default all)",
                "--engines": "also run the questions on other engines for context: polars,duckdb (CPU), polars-gpu (Polars' GPU engine)",
                **reused,
            },
        ),
        "join": (
            "db-benchmark join questions q1-q5 on both arms, answers checked",
            {
                "--data-dir": ("folder with the four join tables (accel data join)", {"type": Path, "required": True}),
                "--questions": "comma-separated q1..q5 (default all)",
                **reused,
            },
        ),
        "models": (
            "scikit-learn vs cuML model pairs and XGBoost CPU vs CUDA",
            {
                "--rows": ("rows of generated data, 80%% for training (default 1e5)", rows),
                "--features": ("columns of generated data (default 32)", {"type": positive_int}),
                "--models": f"comma-separated, of {', '.join(BENCH_PAIRS)} (default all)",
                "--seed": None,
                **kept,
            },
        ),
        "crossover": (
            "the row count from which the GPU arm wins, per operation",
            {
                "--operations": "comma-separated: groupby, join, or model names as accel bench models lists them "
                "(default groupby,join,xgboost)",
                "--min-rows": ("smallest size (default 1e3)", rows),
                "--max-rows": ("largest size (default 1e7)", rows),
                "--steps-per-decade": ("sizes per factor of 10 (default 1)", {"type": positive_int}),
                "--features": ("columns for model operations (default 32)", {"type": positive_int}),
                "--seed": None,
                **common,
            },
        ),
    }


# --------------------------------------------------------------------------- helpers


_fmt_s = functools.partial(fmt_value, spec=".3f")
_fmt_x = functools.partial(fmt_value, spec=".1f", unit="×", missing="n/a")


# --------------------------------------------------------------------------- bench


def _cmd_bench(args: argparse.Namespace) -> int:
    from accel.api import benchmark

    result = call(benchmark, args, progress=True)

    def show() -> None:
        render: dict[type, Callable[[Any, Any], None]] = {
            DbBench: _render_db, ModelsBench: _render_models, CrossoverBench: _render_crossover
        }  # fmt: skip
        render[type(result.typed)](result.typed, wide_console(160))
        print(str((result.typed.fairness or Fairness()).line), flush=True)

    failed = f"failed: {', '.join(result.failed)} (see the result)" if result.failed else ""
    disagree = f"the arms' answers DISAGREE on {', '.join(result.disagree)} (see the result)" if result.disagree else ""
    return shown(args.json, result.record, show, {"results": result.path}, failed, disagree)


def _db_table(result: DbBench, width: int) -> Any:
    """The questions' table: run 1 (the cold run), run 2 (the first timed one) and the median of
    the timed runs per arm; the medians only where the console is too narrow for them all.
    Numbers and the question's id are never cut (the question's title wraps)."""
    gpu_shown = any(q.gpu.status in ("ok", "failed") for q in result.questions)
    timed = sorted({a.timing.repeats for q in result.questions for a in (q.cpu, q.gpu) if a.timing and a.timing.repeats})
    median = f"median of {timed[0]} timed" if len(timed) == 1 else "median of the timed"
    arms, median_lines = ["CPU", "GPU"] if gpu_shown else ["CPU"], median.replace(" of ", "\nof ")

    def layout(runs: bool) -> tuple[list[str], list[list[str]]]:  # with run 1 and run 2, or the medians only
        headers = ["q", "question"]
        for label in arms:
            headers += [f"{label} run 1\n(cold)", f"{label}\nrun 2", f"{label} {median_lines}"] if runs else [label]
        headers += ["rows", *(["speedup", "answers"] if gpu_shown else [])]
        rows = []
        for q in result.questions:
            cells = [q.question, q.title]
            for a in (q.cpu, q.gpu)[: len(arms)]:
                figures = [a.run1, a.run2, a.median] if runs else [a.median]
                cells += [_fmt_s(v) for v in figures] if a.ok else [a.status or "—", *[""] * (len(figures) - 1)]
            answer_rows = q.cpu.rows if q.cpu.rows is not None else q.gpu.rows
            cells.append(f"{answer_rows:,}" if answer_rows is not None else "—")
            if gpu_shown:
                cells += [_fmt_x(q.speedup), {True: "agree", False: "DISAGREE", None: "not compared"}[q.agree]]
            rows.append(cells)
        return headers, rows

    runs = _needed_width(*layout(True)) <= width
    title = f"db-benchmark {result.benchmark.removeprefix('db_')} — seconds" + ("" if runs else f" ({median} runs)")
    return _table(title, *layout(runs))


#: Width kept for the one column of text (a question's title, ``question``): it wraps within it.
TEXT_WIDTH = 14
#: The columns of text, names and verdicts (the rest are numbers, right-aligned).
LEFT = {"q", "question", "answers", "model", "metric"}


def _widths(headers: list[str], rows: list[list[str]]) -> list[int | None]:
    """Each column's width with every cell whole: its widest cell or header line (None: the text column, which wraps)."""
    return [
        None if h == "question" else max([len(line) for line in h.split("\n")] + [len(r[i]) for r in rows])
        for i, h in enumerate(headers)
    ]


def _needed_width(headers: list[str], rows: list[list[str]]) -> int:
    """The columns a table needs with every cell whole (the text column at :data:`TEXT_WIDTH`)."""
    widths = _widths(headers, rows)
    return sum(w or TEXT_WIDTH for w in widths) + 3 * len(widths) + 1


def _table(title: str, headers: list[str], rows: list[list[str]], compact: bool = False, whole: bool = True) -> Any:
    """A table of text and names at the left (:data:`LEFT`, an engine's ``answer``) and numbers at the
    right. ``whole``: no cell is ever cut, each column as wide as its widest cell or header line
    (headers break where they say ``\\n``), except the question's title, which wraps. ``compact``:
    no outer border or edge padding (three columns more for the cells)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_edge=not compact, pad_edge=not compact)
    for header, fixed in zip(headers, _widths(headers, rows) if whole else [None] * len(headers)):
        whole_cells: dict[str, Any] = {"overflow": "fold", "width": fixed, "min_width": fixed or TEXT_WIDTH} if whole else {}
        table.add_column(header, justify="left" if header in LEFT or header.endswith(" answer") else "right", **whole_cells)
    for cells in rows:
        table.add_row(*cells)
    return table


def _render_db(result: DbBench, console: Any) -> None:
    line = functools.partial(console.print, highlight=False, markup=False, soft_wrap=True)
    console.print(_db_table(result, console.width))
    if result.gpu and not result.gpu.ok:
        line(arm_status_line("gpu", result.gpu))
    for q in result.questions:
        for name, a in (("gpu", q.gpu), ("cpu", q.cpu)):
            if a.status == "failed":
                line(f"{q.question} {name.upper()} arm failed: {a.reason}")
    if not result.engines:
        return
    rows = []
    for q in result.questions:
        cells = [q.question, _fmt_s(q.cpu.run2)]
        for eng in result.engines.values():
            a = eng.questions.get(q.question) or Timed()
            said = [_fmt_s(a.run2) if a.ok else a.status or "—", {True: "agrees", False: "DIFFERS", None: "—"}[a.agree]]
            cells += said if eng.ok else [eng.status or "—", ""]
        rows.append(cells)
    headers = ["q", "pandas arm", *[h for name in result.engines for h in (name, f"{name} answer")]]
    title = "the same questions on other engines, for context (run 2: the first timed run, seconds)"
    console.print(_table(title, headers, rows, whole=False))
    for name, eng in result.engines.items():
        if not eng.ok:
            line(f"{name}: {eng.reason}")


# --------------------------------------------------------------------------- tables


def _fit_cells(arm: FitArm) -> list[str]:
    return [_fmt_s(arm.fit.median), _fmt_s(arm.predict.median), fmt_value(arm.quality, ".4f")]


def _models_tables(result: ModelsBench, width: int) -> list[Any]:
    """Fit and predict medians, quality and speedups per model in one table; where the console is
    too narrow for it with both arms shown, the seconds and the quality in two."""
    gpu_shown = any(m.gpu.status in ("ok", "failed") for m in result.models)
    arms = ["cpu", "gpu"] if gpu_shown else ["cpu"]
    title = f"models on {result.data.rows or 0:,} rows × {result.data.features} features — median seconds"

    headers = ["model", "metric"] + [f"{a.upper()}\n{c}" for a in arms for c in ("fit", "predict", "quality")]
    headers += ["fit\nspeedup", "predict\nspeedup"] if gpu_shown else []
    rows = [
        [m.model, m.metric]
        + [v for a in map(m.arm, arms) for v in (_fit_cells(a) if a.ok else [str(a.status)] * 3)]
        + ([_fmt_x(m.fit_speedup), _fmt_x(m.predict_speedup)] if gpu_shown else [])
        for m in result.models
    ]
    if _needed_width(headers, rows) <= width or not gpu_shown:
        return [_table(title, headers, rows)]
    # Narrow: the fit and the predict seconds with their speedups, then the quality, in two tables.
    headers = ["model", "CPU\nfit", "GPU\nfit", "fit\n×", "CPU\npredict", "GPU\npredict", "predict\n×"]
    return [
        _table(title, headers, [[r[i] for i in (0, 2, 5, 8, 3, 6, 9)] for r in rows], compact=True),
        _table("quality on the test rows", ["model", "metric", "CPU", "GPU"], [[r[i] for i in (0, 1, 4, 7)] for r in rows]),
    ]


def _render_models(result: ModelsBench, console: Any) -> None:
    line = functools.partial(console.print, highlight=False, markup=False, soft_wrap=True)
    for table in _models_tables(result, console.width):
        console.print(table)
    for m in result.models:
        for name in ARMS:
            if m.arm(name).status == "failed":
                line(f"{m.model} {name.upper()} arm failed: {m.arm(name).reason}")
    for reason in sorted({str(m.gpu.reason) for m in result.models if m.gpu.status == "skipped"}):
        line(arm_status_line("gpu", Arm(status="skipped", reason=reason)))


def _render_crossover(result: CrossoverBench, console: Any) -> None:
    for op in result.operations:
        rows = [
            [f"{p.rows:,}", *(_fmt_s(a.median) if a.ok else str(a.status) for a in (p.cpu, p.gpu)), _fmt_x(p.speedup)]
            for p in op.points
        ]
        console.print(
            _table(f"{op.operation}: {op.description} — median seconds", ["rows", "CPU", "GPU", "speedup"], rows, whole=False)
        )
        said = (
            f"not measured (GPU arm {op.gpu_status})" if op.gpu_status != "ok"
            else "the GPU arm did not win from any size measured on" if op.crossover_rows is None
            else f"the GPU arm wins from {op.crossover_rows:,} rows on"
        )  # fmt: skip
        console.print(f"crossover: {said}", highlight=False)
    # Each reason the GPU arm did not run, said once, after the tables.
    skipped = [Arm(status=op.gpu_status, reason=op.gpu_reason) for op in result.operations if op.gpu_status != "ok"]
    for said in dict.fromkeys(arm_status_line("gpu", arm) for arm in skipped):
        console.print(said, highlight=False, markup=False, soft_wrap=True)


# --------------------------------------------------------------------------- data, report


def _cmd_data_groupby(args: argparse.Namespace) -> int:
    from accel.data import datagen

    datagen.table_format(args.out)
    if args.k > args.n:
        raise AccelError(f"K ({args.k}) must not exceed N ({args.n})")
    datagen.check_memory(args.n, "groupby")  # from the RAM size, before anything is allocated or created
    name, exists = datagen.groupby_name(args.n, args.k, args.nas, args.sort), exists_policy(args.overwrite)
    with _no_empty_folders(Path(args.out).parent):
        datagen.prepare_output(Path(args.out).parent, [args.out], exists)
        stderr_line(f"generating {name}: {args.n:,} rows, K={args.k:,}")
        table = datagen.groupby_table(args.n, args.k, nas=args.nas, sort=args.sort, seed=args.seed)
        path = datagen.write_table(table, args.out, exists)
    settings = {"rows": args.n, "k": args.k, "nas": args.nas, "sort": args.sort, "seed": args.seed}
    _show_data("groupby", name, settings, {"groupby data": ("x", path, table)}, args.json)
    return 0


def _cmd_data_join(args: argparse.Namespace) -> int:
    from accel.data import datagen

    datagen.check_memory(args.n, "join")  # from the RAM size, before anything is allocated or created
    with _no_empty_folders(Path(args.out_dir)):
        names, exists = datagen.join_names(args.n, args.nas), exists_policy(args.overwrite)
        files = [args.out_dir / f"{name}.{args.format}" for name in names.values()]
        datagen.prepare_output(args.out_dir, files, exists)
        stderr_line(f"generating {names['x']} and its right tables ({args.n:,} rows)")
        tables = datagen.join_tables(args.n, nas=args.nas, seed=args.seed)
        written = {
            f"{role} table": (role, datagen.write_table(table, args.out_dir / f"{names[role]}.{args.format}", exists), table)
            for role, table in tables.items()
        }
    settings = {"rows": args.n, "nas": args.nas, "format": args.format, "seed": args.seed}
    _show_data("join", names["x"], settings, written, args.json)
    return 0


def _show_data(dataset: str, name: str, settings: dict, written: dict[str, tuple[str, Path, Any]], as_json: bool) -> None:
    """Say what ``accel data`` wrote: ``wrote PATH (rows, columns)``, a line per file; with
    ``--json``, one JSON document (the settings and each file's role, rows, columns and size) on
    stdout and where each file went on stderr.

    ``written`` maps the label each file is named by to its role in the data set (``x``, the
    table the questions read; ``small``, ``medium``, ``big``, the join's right tables), its path
    and the pyarrow Table written there.
    """
    files = [
        dict(role=role, path=str(path), rows=table.num_rows, columns=list(table.column_names), bytes=path.stat().st_size)
        for role, path, table in written.values()
    ]
    document = {"dataset": dataset, "name": name, **settings, "files": files}

    def render() -> None:  # the files are named in these lines: they are not said again below
        for label, f in zip(written, files):
            print(f"wrote {f['path']} ({label}, {f['rows']:,} rows, columns {', '.join(f['columns'])})", flush=True)

    show_result(document, as_json, render, {label: path for label, (_, path, _) in written.items()} if as_json else {})


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
    figures = report.figures()
    show_result(
        figures,
        args.json,
        lambda: print(report.markdown if args.markdown else _report_summary(figures), flush=True),
        {"report": report.path},
    )
    return 0


#: At most this many files not used are named on the terminal (the page lists them all).
SHOWN_IGNORED = 10


def _report_summary(figures: dict[str, Any]) -> str:
    """A few lines on what the page shows and which files it did not use (the whole summary with ``--markdown``)."""
    kinds = ", ".join(f"{n} {kind}" for kind, n in figures["by_kind"].items())
    ignored = figures["ignored"]
    lines = [f"{figures['records']} record(s) from {figures['folder']}: {kinds}"]
    lines += [f"  not used: {f['file']} ({f['reason']})" for f in ignored[:SHOWN_IGNORED]]
    if len(ignored) > SHOWN_IGNORED:
        lines.append(f"  ... and {len(ignored) - SHOWN_IGNORED} more (listed on the page)")
    lines.append("open the page in a browser; --markdown prints its summary here, --json its figures")
    return "\n".join(lines)
