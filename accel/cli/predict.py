"""The ``accel predict`` command: score new rows with a run's fitted pipeline (:func:`accel.predict`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from accel.cli.options import OUT_DEFAULT, add_device_argument, positive_int
from accel.record import show_result


def register(sub: Any) -> None:
    """Add ``accel predict`` to the ``accel`` command's subcommands."""
    p = sub.add_parser(
        "predict",
        help="score new rows with a run's fitted pipeline (its accelerated arm's, else its CPU arm's)",
        description="Score a table with the pipeline a run saved: the row number, the prediction and, for "
        "classification, the class probabilities, in input order. With the target column present, the "
        "hold-out metrics too. Example: accel predict runs/2026-12-05-flights-001.json --data next.csv --out p.parquet",
    )
    p.add_argument("run", type=Path, help="the run record `accel run` printed (or a pipeline folder)")
    p.add_argument("--data", type=Path, required=True, help="the rows to score: CSV, gzip CSV, a Parquet file or folder")
    p.add_argument("--out", type=Path, required=True, help="the predictions: a .parquet or .csv file (never written over)")
    p.add_argument("--arm", choices=["gpu", "cpu"], help="which arm's pipeline of the run (default: the accelerated arm's)")
    add_device_argument(p, "where to score: auto (GPU when usable), gpu (error if none), cpu", default="auto")
    p.add_argument("--baseline", action="store_true", help="also score on the CPU arm, timed beside the accelerated one")
    p.add_argument("--memory-budget", help="memory scoring may hold, e.g. 8GB: a larger table is scored batch by batch")
    p.add_argument("--batch-rows", type=positive_int, help="rows per batch (default: planned from --memory-budget)")
    p.add_argument("--contributions", action="store_true", help="add each row's SHAP contributions (XGBoost)")
    p.add_argument("--records", type=Path, help=f"folder for the scoring record (default: {OUT_DEFAULT})")
    p.add_argument("--json", action="store_true", help="print the scoring record as JSON instead of the table")
    p.set_defaults(handler=command)


def command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from accel.api import predict
    from accel.report.console import render_predict

    result = predict(
        args.run, data=args.data, out=args.out, arm=args.arm, device=args.device, baseline=args.baseline,
        memory_budget=args.memory_budget, batch_rows=args.batch_rows, contributions=args.contributions,
        records=args.records, progress=True,
    )  # fmt: skip
    written = {"predictions": result.output, "scoring record": result.path}
    show_result(result.record, args.json, lambda: render_predict(result.typed, Console()), written)
    return 0
