"""The ``accel hpo`` and ``accel experiments`` commands, registered on the ``accel`` parser.

``register(sub)`` adds both subcommands with ``set_defaults(handler=...)``; ``accel.cli.main.main``
calls the handler. Errors are :class:`~accel.errors.AccelError` (one line, exit 2).
"""

from __future__ import annotations

import argparse
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

from accel.cli import options as opts
from accel.errors import AccelError
from accel.record import HpoArm, HpoRecord, Improvement, Scored, SearchRows, show_result
from accel.report.console import fmt_value, wide_console

if TYPE_CHECKING:
    from rich.console import Console


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``hpo`` and ``experiments`` to the ``accel`` subcommands."""
    hpo = sub.add_parser("hpo", help="hyperparameter search: baseline, subset-first trials, top-k on all rows, retrained best")
    here = {"group": None, "metavar": None}  # not accel run's group of Dask flags
    where, count = {**here, "exclusive": "where"}, {"type": opts.positive_int}
    share, open_share = {"type": opts.fraction}, {"type": opts.open_fraction}
    opts.add_flags(
        hpo,
        {
            "workflow": "a workflow name (flights) or a workflow YAML file (with an hpo: section)",
            **opts.TABLE,
            "--model": "with --data: the model to tune (default xgboost)",
            "--test-size": ("share of rows held out for the final score (default 0.2)", open_share),
            "--trials": ("trials in the study, counting those already done on --resume (default 40)", count),
            "--subset": ("share of the fitting rows each trial trains on (default 0.1; 1 = all)", share),
            "--trial-rounds": ("share of the boosting rounds / trees a subset trial uses (default 0.25)", share),
            "--validation": ("share of the training rows trials are scored on (default 0.2)", open_share),
            "--timeout": ("stop starting trials after this many seconds", {"type": opts.positive_seconds}),
            "--top": ("best trials re-evaluated on all fitting rows (default 3)", count),
            "--storage": "Optuna storage URL (default sqlite:///<out>/hpo.db)",
            "--study": "study name (default <workflow>-<model>-<UTC time>)",
            "--resume": ("continue the study (--study, else the newest in the storage)", {"action": "store_true"}),
            "--cluster": ("run trials in parallel on a local Dask cluster", where),
            "--scheduler": ("run trials in parallel on the Dask cluster at this scheduler address", where),
            "--workers": ("with --cluster local: worker processes (default: cores, up to 4)", here),
            "--device": "the arm the search runs on (default auto)",
            "--rows": opts.SAMPLE_ROWS,
            "--out": f"folder for the result record and the default storage (default: {opts.OUT_DEFAULT})",
            "--seed": "seed of the sampler, the splits and the models (default 42)",
            "--json": "print the result record as JSON instead of tables",
        },
    )
    hpo.set_defaults(handler=cmd_hpo)

    exp = sub.add_parser("experiments", help="every run and study recorded so far: metric, time, memory, Pareto fronts")
    exp.add_argument("folder", nargs="?", type=Path, help=f"where run records and hpo.db live (default: {opts.OUT_DEFAULT})")
    exp.add_argument(
        "--storage", action="append", default=[], help="also read the studies in this Optuna storage URL (repeatable)"
    )
    exp.add_argument("--trials", action="store_true", help="one row per completed trial of each study as well")
    exp.add_argument("--plot", nargs="?", const="", metavar="PNG", help="write a PNG of metric versus time with the fronts")
    exp.add_argument("--save", action="store_true", help="also write the table as an experiments JSON in the folder read")
    exp.add_argument("--out", type=Path, help="write the experiments JSON (and --plot's default PNG) to this folder instead")
    exp.add_argument("--json", action="store_true", help="print the table as JSON (a file only with --save or --out)")
    opts.add_flags(exp, {"--overwrite": opts.overwrite("the --plot PNG")})
    exp.set_defaults(handler=cmd_experiments)


def cmd_hpo(args: argparse.Namespace) -> int:
    from accel.api import search_request
    from accel.hpo.search import run_search
    from accel.pipeline import saved_folder
    from accel.report.console import ProgressDisplay

    config, request = search_request(args.workflow, vars(args), "command line")
    with closing(ProgressDisplay()) as progress:
        record, path = run_search(config, request, listener=progress)
    written = {"result record": path, "tuned pipeline": saved_folder(record, path)}
    typed = HpoRecord.model_validate(record)
    failed = str(typed.final.reason) if typed.final is not None and typed.final.status == "failed" else ""
    return opts.shown(args.json, record, lambda: render_hpo(typed, wide_console(120)), written, failed)


def render_hpo(record: HpoRecord, console: Console) -> None:
    """Default baseline, best subset trial, top-k and retrained best side by side, with the parameters of
    each but the top-k; then the arms."""
    from rich.markup import escape
    from rich.table import Table

    from accel.record import Arm
    from accel.report.console import arm_status_line

    study, search, counts, rows = record.study, record.search, record.trials, record.search.rows or SearchRows()
    arm = "GPU arm" if search.arm == "gpu" else "CPU arm"
    console.print(f"study [bold]{escape(str(study.name))}[/] in {escape(str(study.storage))} — search on the {arm}")
    skip_reason = None
    if search.arm != "gpu":
        skip_reason = search.gpu_arm.removeprefix("skipped: ")
        console.print(escape(arm_status_line("gpu", Arm(status="skipped", reason=skip_reason))), highlight=False)
    console.print(
        f"trials: {counts.complete} complete, {counts.pruned} pruned, {counts.failed} failed"
        + (f", {counts.interrupted} interrupted" if counts.interrupted else "")
        + f"; each on {rows.subset:,} of {rows.fit:,} fitting rows, rounds × {search.trial_rounds:g};"
        + f" scored on {rows.validation:,} validation rows",
        highlight=False,
    )
    table = Table(title=f"{arm}: {study.metric}, time and peak memory")
    for col in ("", "trained on", "scored on", str(study.metric), "seconds", "host MB", "GPU MB"):
        table.add_column(col, justify="left" if col in ("", "trained on", "scored on") else "right", no_wrap=True)
    params: list[str] = []  # each model's parameters, but the top-k's: said after the table

    def add(label: str, entry: Scored | None, trained: str, scored: str) -> None:
        entry = entry or Scored()
        table.add_row(
            label, trained, scored, fmt_value(entry.metric, ".4f"), fmt_value(entry.seconds, ".2f"), fmt_value(entry.peak_host_mb, ".0f"),
            fmt_value(entry.peak_device_mb, ".0f"),
        )  # fmt: skip
        if not label.startswith("  top-"):
            shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in (entry.params or {}).items())
            params.append(f"  {label}: {escape(shown)}")

    add("default baseline", record.baseline, f"all {rows.train or 0:,}", "hold-out")
    if (best := record.best_trial) is not None:
        add(f"best subset trial {best.number}", best, f"subset {rows.subset:,}", "validation")
        for entry in record.top_k:
            add(f"  top-{len(record.top_k)}: trial {entry.trial}", entry, f"fit {rows.fit:,}", "validation")
        add(f"retrained best (trial {(record.final or Scored()).trial})", record.final, f"all {rows.train or 0:,}", "hold-out")
    console.print(table)
    for line in params:
        console.print(line, highlight=False)
    final = record.final or Scored()
    if final.status == "failed":
        console.print(f"no tuned model: {escape(str(final.reason))}")
        return
    _render_final(record, console, skip_reason)


def _render_final(record: HpoRecord, console: Console, skip_reason: str | None) -> None:
    """The tuned model against the default, each arm's final model, its speedup and the phases' seconds."""
    from rich.markup import escape

    metric, final, baseline = record.study.metric, record.final or Scored(), record.baseline or Scored()
    gain = (record.improvement or Improvement()).tuned_minus_default or 0.0
    verdict = f"better by {gain:.4f}" if gain > 0 else f"worse by {-gain:.4f}" if gain < 0 else "the same"
    console.print(
        f"tuned vs default on the hold-out: {metric} {fmt_value(final.metric, '.4f')} vs {fmt_value(baseline.metric, '.4f')} ({verdict})",
        highlight=False,
    )
    for name, label in (("gpu", "GPU arm"), ("cpu", "CPU baseline arm")):
        a = record.arms.get(name) or HpoArm()
        if a.ok:
            shown = f"{fmt_value(a.seconds, '.2f')} s, {metric} {fmt_value(a.metric, '.4f')}"
        elif a.reason and a.reason != skip_reason:
            shown = f"{a.status} ({escape(a.reason)})"
        else:  # the reason was said above
            shown = str(a.status)
        console.print(f"final model, {label}: {shown}", highlight=False)
    speed = fmt_value(record.speedup.get("final_model"), ".1f", "×", "n/a")
    console.print(f"speedup of the final model (CPU s / GPU s): {speed}")
    phases = record.phases_seconds
    console.print("seconds per phase: " + ", ".join(f"{k} {fmt_value(v, '.1f')}" for k, v in phases.items()), highlight=False)


def cmd_experiments(args: argparse.Namespace) -> int:
    from accel.files import NUMBER, exists_policy, refuse_existing
    from accel.hpo.experiments import collect, experiments_record, plot, plot_format, plot_panels, render
    from accel.record import ensure_writable, output_root, record_stem, write_record

    folder = args.folder if args.folder is not None else output_root()
    save = args.save or args.out is not None  # a snapshot only when asked for
    exists = exists_policy(args.overwrite) if args.plot else NUMBER  # --plot FILE: the user named it
    if args.plot:
        plot_format(Path(args.plot))  # an unknown image format is refused before any work
        refuse_existing(Path(args.plot), "--plot", exists)
    rows, notes = collect(folder, args.storage, include_trials=args.trials)
    if not rows:
        skipped = f"; {notes[0]}" + (f", and {len(notes) - 1} more" if len(notes) > 1 else "") if notes else ""
        raise AccelError(
            f"no run records or studies under {str(folder)!r} (run accel run or accel hpo with --out there){skipped}"
        )
    out = ensure_writable(args.out or folder) if save or args.plot == "" else None  # the JSON, the default PNG
    stem = record_stem("experiments")
    record = experiments_record(rows, folder)
    png = None
    if args.plot is not None:
        png = Path(args.plot) if args.plot else Path(out or folder) / f"{stem}.png"
        try:
            png = plot(rows, png, exists)  # --plot FILE: refused if it exists (no --overwrite); the default: -001, ...
        except OSError as exc:
            raise AccelError(f"--plot: cannot write {str(png)!r} ({exc.strerror or type(exc).__name__})") from None
        record |= {"plot": str(png), "plot_panels": plot_panels(rows)}
    path = write_record(out, record, stem) if save and out is not None else None
    show_result(record, args.json, lambda: render(rows, wide_console(180), notes), {"plot": png, "experiments record": path})
    return 0
