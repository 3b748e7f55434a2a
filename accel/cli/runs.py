"""``accel run``, ``accel scale``, ``accel predict`` and ``accel compare``: each is its function of
:mod:`accel.api` (``accel run``: :func:`accel.api.settings_config` and
:func:`accel.api.run_config`) called with the flags it takes, and the record it wrote shown.

A command whose run failed (an arm, a worker count, the script on the GPU arm) says so in one
line on stderr and exits with status 1 after writing its record.
"""

from __future__ import annotations

import argparse
import functools
import gc
from pathlib import Path
from typing import Any

from rich.console import Console

from accel.cli import PROCESS_STARTED_AT
from accel.cli import options as opts
from accel.output import say
from accel.record import RunRecord
from accel.report.console import ProgressDisplay, render_compare, render_predict, render_run, render_scaling, show_plan


def register(sub: argparse._SubParsersAction, *names: str) -> None:
    """Add the commands ``names`` (of run, scale, predict, compare) to the ``accel`` command's subcommands."""
    handlers = {"run": _cmd_run, "scale": _cmd_scale, "predict": _cmd_predict, "compare": _cmd_compare}
    flags = {"run": _RUN, "scale": _SCALE, "predict": _PREDICT, "compare": _COMPARE}
    for name in names:
        parser = sub.add_parser(name, **_ABOUT[name])
        opts.add_flags(parser, flags[name])
        # compare: what follows '--' is the script's own; accel.cli.main hands it over untouched
        # (argparse would read it as its own options).
        parser.set_defaults(handler=handlers[name], **({"script_args": []} if name == "compare" else {}))


#: What ``accel --help`` and the command's own ``--help`` say of it (``add_parser``'s keywords).
_ABOUT: dict[str, dict[str, Any]] = {
    "run": {"help": "run a workflow on the accelerated arm and the CPU baseline arm"},
    "scale": {
        "help": "scaling study: the workflow on 1, 2, 4 ... Dask workers, both arms, against the single-process CPU baseline"
    },
    "predict": {
        "help": "score new rows with a run's fitted pipeline (its accelerated arm's, else its CPU arm's)",
        "description": "Score a table with the pipeline a run saved: the row number, the prediction and, for classification, the class probabilities, in input order. With the target column present, the hold-out metrics too. Example: accel predict runs/2026-12-05-flights-001.json --data next.csv --out p.parquet",
    },
    "compare": {
        "usage": "accel compare PROGRAM [options] [-- ARGS...]",
        "help": "run your unchanged pandas / scikit-learn script (or notebook) on the CPU and with cudf.pandas/cuml.accel",
        "description": "Runs SCRIPT twice, each in a fresh process in its own copy of the script's folder: as plain 'python SCRIPT ARGS' (CPU arm) and with cudf.pandas and cuml.accel installed (GPU arm). Reports wall time, peak memory, whether both printed and wrote the same numbers, and which calls fell back to the CPU. Arguments for the script go after '--'.",
    },
}

_WORKFLOW = "a workflow name (flights) or a workflow YAML file"

_RUN: dict[str, opts.Flag] = {
    "workflow": _WORKFLOW,
    **opts.TABLE,
    "--model": "with --data: the model, cuML on the GPU arm and scikit-learn on the CPU arm (default xgboost)",
    **opts.RUN_OR_SCALE,
    "--explain-rows": "hold-out rows the model's SHAP importances are computed on (default 200; 0: none)",
    "--precision": "storage of the feature matrix (fp16: half the bytes, range-guarded)",
    "--batch-rows": "rows per batch: auto (planned from the budget, default) or N",
    "--memory-budget": "memory a run may hold, e.g. 8GB (default: half the free memory of the arm's device)",
    "--rmm-pool": "GPU arm: RMM pool for cuDF and CuPy (and XGBoost when built with RMM): auto (default: half the free device memory), off, or a size such as 40GB",
    "--device": "the accelerated arm: auto (GPU when usable), gpu (error if none), cpu (run only the CPU baseline)",
    "--rows": opts.SAMPLE_ROWS,
    "--out": f"folder for run records (default: {opts.OUT_DEFAULT})",
    "--json": "print the run record as JSON instead of tables",
    "--scheduler": "run on a running Dask cluster (GPU or CPU workers, detected from the workers)",
    "--baseline-scheduler": "with --scheduler of GPU workers: a running CPU cluster for the baseline arm (default: this process)",
    "--workers": "workers to start (local: default one per core; local-cuda: default one per GPU)",
}

_SCALE: dict[str, opts.Flag] = {
    "workflow": _WORKFLOW,
    **opts.TABLE,
    "--model": "with --data: the model (xgboost: the one with a distributed trainer)",
    **opts.RUN_OR_SCALE,
    "--workers": ("worker counts to compare, e.g. 1,2,4", {"type": opts.worker_counts, "metavar": "N,N,..."}),
    "--rmm-pool": (
        "local-cuda: RMM pool per worker: auto, off, a size (20GB) or a share of the GPU's free memory (0.5), as in a single-process run",
        {"metavar": "SIZE", "group": opts.DASK},
    ),
    "--device": "the accelerated arm on GPU workers: auto (when usable), gpu (error if none), cpu (CPU workers only)",
    "--rows": "use a seeded sample of N rows (before --scale)",
    "--out": f"folder for the scaling record and its plot (default: {opts.OUT_DEFAULT})",
    "--no-baseline": ("leave out the single-process CPU baseline", {"action": "store_false", "dest": "baseline"}),
    "--json": "print the scaling record as JSON instead of the table",
}

_PREDICT: dict[str, opts.Flag] = {
    "run": ("the run record `accel run` printed (or a pipeline folder)", {"type": Path}),
    "--data": ("the rows to score: CSV, gzip CSV, a Parquet file or folder", {"type": Path, "required": True}),
    "--out": ("the predictions: a .parquet or .csv file (never written over)", {"required": True}),
    "--arm": ("which arm's pipeline of the run (default: the accelerated arm's)", {"choices": ["gpu", "cpu"]}),
    "--device": ("where to score: auto (GPU when usable), gpu (error if none), cpu", {"default": "auto"}),
    "--baseline": ("also score on the CPU arm, timed beside the accelerated one", {"action": "store_true"}),
    "--memory-budget": "memory scoring may hold, e.g. 8GB: a larger table is scored batch by batch",
    "--batch-rows": ("rows per batch (default: planned from --memory-budget)", {"type": opts.positive_int}),
    "--contributions": ("add each row's SHAP contributions (XGBoost)", {"action": "store_true"}),
    "--records": (f"folder for the scoring record (default: {opts.OUT_DEFAULT})", {"type": Path}),
    "--json": "print the scoring record as JSON instead of the table",
}

_COMPARE: dict[str, opts.Flag] = {
    "program": ("a Python script (.py) or a notebook (.ipynb)", {"type": Path}),
    "--repeat": ("warm runs of each arm after the cold one (median/min/max)", {"type": int, "default": 0}),
    "--accelerators": "GPU arm: comma-separated, from cudf.pandas, cuml.accel (default: those installed)",
    "--device": ("cpu: the CPU arm only; gpu: fail if the GPU arm cannot run", {"default": "auto"}),
    "--rtol": ("relative tolerance for numbers compared (default 1e-5)", {"type": float, "default": 1e-5}),
    "--atol": ("absolute tolerance for numbers compared (default 1e-8)", {"type": float, "default": 1e-8}),
    "--ignore-lines": "a regular expression: output lines matching it are not compared (e.g. timings)",
    "--timeout": ("seconds one run may take; then its process group is killed", {"type": float, "default": 3600}),
    "--no-profile": ("skip the extra profiled GPU run", {"action": "store_false", "dest": "profile"}),
    "--out": f"folder for the record (default: {opts.OUT_DEFAULT})",
    "--json": "print the record as JSON instead of tables",
}


def _cmd_run(args: argparse.Namespace) -> int:
    from accel.memory import returnable_arrow_pool

    returnable_arrow_pool(args.memory_budget)  # before anything imports pyarrow
    from accel.api import run_config, settings_config
    from accel.pipeline import saved_folder

    config = settings_config(args.workflow, vars(args), "command line")
    progress = ProgressDisplay(live=False if config.cluster is not None else None)  # Dask workers share the terminal
    # What start-up built (modules, schemas, the config) lives to the end of the run: frozen, the
    # garbage collector's full passes stop walking it (on flights 0.15 s of them -> 0.06 s, what
    # the hand-written script pays). Unfrozen afterwards, so a caller's garbage is collected.
    gc.freeze()
    try:
        record, path = run_config(
            config, progress, on_plan=lambda wf: show_plan(wf, progress.console), process_start=PROCESS_STARTED_AT
        )
    finally:
        gc.unfreeze()
        progress.close()
    typed = RunRecord.model_validate(record)
    if args.rmm_pool and not typed.arms["gpu"].ok:
        say("notice: --rmm-pool applies to the GPU arm's device memory; ignored on the CPU arm")
    written = {"run record": path, "pipeline": saved_folder(record, path)}
    failed = " and ".join(name for name, arm in typed.arms.items() if arm.status == "failed")
    return opts.shown(
        args.json, record, lambda: render_run(typed, Console()), written, failed and f"{failed} arm failed (see the record)"
    )


def _cmd_scale(args: argparse.Namespace) -> int:
    from accel.api import scale

    result = opts.call(scale, args, progress=True)
    failed = f"{len(result.failed)} of the runs failed (see the record)" if result.failed else ""
    written = {"scaling record": result.path, "plot": result.plot}
    return opts.shown(args.json, result.record, lambda: render_scaling(result.typed, Console()), written, failed)


def _cmd_predict(args: argparse.Namespace) -> int:
    from accel.api import predict

    result = opts.call(predict, args, progress=True)
    written = {"predictions": result.output, "scoring record": result.path}
    return opts.shown(args.json, result.record, lambda: render_predict(result.typed, Console()), written)


def _cmd_compare(args: argparse.Namespace) -> int:
    from accel.api import compare

    result = opts.call(functools.partial(compare, args.program, *args.script_args), args)  # and the flags it takes
    gpu = result.typed.arms["gpu"]
    failed = f"the script fails on the GPU arm only ({gpu.reason}): see the record" if gpu.status == "failed" else ""
    return opts.shown(
        args.json, result.record, lambda: render_compare(result.typed, Console()), {"compare record": result.path}, failed
    )
