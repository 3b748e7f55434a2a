"""Bytes per row of streamed boosting: an accel streamed run against XGBoost alone on the same batches.

For each table size (``accel_fixtures.tables.write_own_table``'s generated tables: ten numeric columns, ten string
columns of 5-500 values, a binary target), three processes, each measured phase by phase with the
kernel's high-water mark (``VmHWM`` of ``/proc/self/status``, reset to the current RSS at each phase
start by writing ``5`` to ``/proc/self/clear_refs``):

- **accel**: the streamed run (``accel.runner.run_arm``) with a fixed plan: batches (and so
  external-memory pages) of ``--batch-rows`` rows, XGBoost's matrix in external memory. Phases:
  planning, the statistics pass, the matrix build, boosting, the prediction pass.
- **xgboost**: a script that imports only NumPy, pyarrow and XGBoost and feeds the same
  ``ExtMemQuantileDMatrix`` (pages on disk, same ``max_bin``, threads and batch rows) from a chunk
  cache of the very model input accel built (its float32 training batches and labels, written once
  as Arrow IPC by a process of its own, untimed), then boosts with accel's parameters.
- **in-memory**: the same script with XGBoost's ``QuantileDMatrix`` (one matrix in memory) from the
  same chunk cache: what boosting costs when nothing is streamed.

Printed per size: each phase's peak above the RSS at its start, in MiB and bytes per training row;
the external-memory page bytes per row (the cache files' size); boosting seconds streamed / in
memory. Then, over the sizes, a least-squares line per process and phase: bytes per training row
(the slope) and a fixed part (the intercept), which is what the memory budget counts.

    python benchmarks/bench_streamed_bytes.py --rows 1e5,3e5,1e6,3e6 --rounds 20
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from common import Case, Config, child_env, in_fresh_process, main, run_process

MIB = 2**20


# --------------------------------------------------------------------------- phases


def _status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[key] = int(line.split()[1]) * 1024
    return out


class Phases:
    """Per-phase peaks: at each phase start the kernel's high-water mark is reset to the RSS then."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, float]] = {}

    def run(self, name: str, fn, *args, **kwargs):
        before = _status()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        # perf_counter here, not accel.timing's clock: the stand-alone XGBoost process must not import accel.
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds = time.perf_counter() - t0
            after = _status()
            self.rows[name] = {
                "rss_before": before["VmRSS"],
                "peak": after["VmHWM"],
                "rss_after": after["VmRSS"],
                "anon_before": before["RssAnon"],
                "anon_after": after["RssAnon"],
                "seconds": seconds,
            }


# --------------------------------------------------------------------------- the processes


def _fixed_plan(rows_total: int, batch_rows: int):
    from accel.batching import BatchPlan

    plan = BatchPlan(10**12, "fixed by the benchmark", 0.0, rows_total, batch_rows, "streaming", "given")
    plan.training_matrix = "external"
    return plan


def child_accel(path: str, batch_rows: int, rounds: int) -> dict:
    phases = Phases()
    import accel.streaming as streaming
    from accel.backend import get_backend
    from accel.memory import MemorySettings, release_host_memory
    from accel.models import XGBoostModel
    from accel.runner import run_arm
    from accel.workflows import WorkflowSettings
    from accel.workflows.table import TableWorkflow, plan_table

    release_host_memory()
    floor = _status()["VmRSS"]
    backend = get_backend("cpu")
    settings = WorkflowSettings(seed=42)
    planned = phases.run("plan", plan_table, path, "y", None, [], settings, family="native")
    workflow = TableWorkflow(settings, planned, "xgboost", {"n_estimators": rounds})
    workflow.plan_batches = lambda *a, **k: _fixed_plan(len(planned.plan.row_positions), batch_rows)

    backoff, fit = streaming.with_backoff, XGBoostModel.fit
    names = {"fit pass": "statistics pass", "to_device": "matrix build", "predict pass": "prediction pass"}
    streaming.with_backoff = lambda step, plan, backend, what: phases.run(names[what], backoff, step, plan, backend, what)
    XGBoostModel.fit = lambda self, backend, dtrain: phases.run("boosting", fit, self, backend, dtrain)
    release_host_memory()
    result = run_arm(backend, workflow, memory=MemorySettings(memory_budget="1TB"))
    return {"floor": floor, "phases": phases.rows, "train_rows": result.rows["train"], "auc": result.metrics["auc"],
            "stages": result.stages}  # fmt: skip


def prepare_matrices(path: str, out: str, batch_rows: int) -> dict:
    """accel's model input for the training rows, batch by batch, as Arrow IPC (one record batch each)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from accel import _compat
    from accel.data.autofeatures import TableFeaturizer, target_codes
    from accel.data.readers import iter_chunks, planned_rows
    from accel.precision import frame_matrix, xgboost_features
    from accel.workflows import WorkflowSettings
    from accel.workflows.table import plan_table, probe_encodings

    settings = WorkflowSettings(seed=42)
    planned = plan_table(path, "y", None, [], settings, family="native")
    probe_encodings(planned, settings.seed)
    plan = planned.plan
    train = plan.row_positions[plan.train_pos]
    featurizer = TableFeaturizer(pd, plan, "native", settings.seed)

    def chunks():
        return iter_chunks(pd, planned.source, plan.read_columns, batch_rows, plan.csv_dtypes())

    for start, frame in chunks():
        rows, where = planned_rows(train, start, frame)
        if rows is not None:
            featurizer.partial_fit(rows, target_codes(pd, rows[plan.target], plan), featurizer.folds[where])
    featurizer.finalize()
    writer, names, types = None, [], []
    for start, frame in chunks():
        rows, where = planned_rows(train, start, frame)
        if rows is None:
            continue
        X = featurizer.transform(rows, featurizer.folds[where])
        names, types = xgboost_features(X.columns, featurizer.categorical)
        matrix = frame_matrix(X, featurizer.categorical)
        y = _compat.series_to_array(target_codes(pd, rows[plan.target], plan)).astype(np.float32)
        table = pa.table({**{f"f{j}": matrix[:, j] for j in range(matrix.shape[1])}, "label": y})
        writer = writer or pa.ipc.new_file(out, table.schema)
        writer.write_table(table)
    writer.close()
    return {"feature_names": names, "feature_types": types, "train_rows": int(len(train))}


STANDALONE = r"""
import json, os, sys, glob
from pathlib import Path
from bench_streamed_bytes import Phases, _status
phases = Phases()
import numpy as np, pyarrow as pa, xgboost
floor = _status()["VmRSS"]
matrices, meta_file, prefix, mode, rounds, params, page_rows = sys.argv[1:8]
knobs = json.loads(sys.argv[8]) if len(sys.argv) > 8 else {}  # XGBoost's external-memory settings
page_rows = int(page_rows)
meta, params = json.loads(Path(meta_file).read_text()), json.loads(params)
params = {**params, **({"nthread": knobs["nthread"]} if "nthread" in knobs else {})}

class Batches(xgboost.DataIter):
    def __init__(self, cache_prefix):
        self.file = None
        super().__init__(cache_prefix=cache_prefix, on_host=knobs.get("on_host", False),
                         min_cache_page_bytes=knobs.get("min_cache_page_bytes"))
    def reset(self):
        self.file = None
    def next(self, input_data):
        if self.file is None:
            self.file = pa.ipc.open_file(pa.OSFile(matrices))  # read, not memory-mapped
            self.pieces = iter(self._pieces())
        piece = next(self.pieces, None)
        if piece is None:
            self.file = None
            return False
        n = piece.num_columns - 1
        X = np.empty((piece.num_rows, n), dtype=np.float32)
        for j in range(n):
            X[:, j] = piece.column(j).to_numpy()
        input_data(data=X, label=piece.column(n).to_numpy(), feature_names=meta["feature_names"],
                   feature_types=meta["feature_types"])
        return True
    def _pieces(self):
        # pages of page_rows rows, cut across the stored batches (0: one page per stored batch)
        held, rows = [], 0
        for i in range(self.file.num_record_batches):
            batch = self.file.get_batch(i)
            want = page_rows or batch.num_rows
            a = 0
            while a < batch.num_rows:
                piece = batch.slice(a, want - rows)
                held.append(piece)
                rows += piece.num_rows
                a += piece.num_rows
                if rows == want:
                    yield pa.Table.from_batches(held).combine_chunks()
                    held, rows = [], 0
        if held:
            yield pa.Table.from_batches(held).combine_chunks()

options = dict(max_bin=params["max_bin"], enable_categorical=True, nthread=params["nthread"])
if mode == "external":
    extra = {k: knobs[k] for k in ("max_quantile_batches", "cache_host_ratio") if k in knobs}
    build = lambda: xgboost.ExtMemQuantileDMatrix(Batches(prefix), **options, **extra)
else:
    build = lambda: xgboost.QuantileDMatrix(Batches(None), **options)
def trim():
    import ctypes, gc
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)

trim()
dtrain = phases.run("matrix build", build)
pages = sum(os.path.getsize(p) for p in glob.glob(prefix + "*"))
trim()  # as accel does before boosting: what the build freed goes back to the system
booster = phases.run("boosting", xgboost.train, params, dtrain, int(rounds))
print(json.dumps({"floor": floor, "phases": phases.rows, "page_file_bytes": pages,
                  "train_rows": int(dtrain.num_row())}))
"""


#: XGBoost's external-memory settings that may change how fast it boosts, one at a time against
#: its defaults (``nthread``: the benchmark's threads otherwise). Prefetching is not a setting of
#: XGBoost's CPU external memory (it reads the next pages ahead by itself); ``on_host`` keeps the
#: pages in host memory instead of on disk, the nearest thing.
KNOBS: list[tuple[str, dict[str, Any]]] = [
    ("defaults", {}),
    ("max_quantile_batches=1", {"max_quantile_batches": 1}),
    ("max_quantile_batches=4", {"max_quantile_batches": 4}),
    ("min_cache_page_bytes=0 (one batch a page)", {"min_cache_page_bytes": 0}),
    ("min_cache_page_bytes=256 MiB", {"min_cache_page_bytes": 256 << 20}),
    ("nthread=1", {"nthread": 1}),
    ("on_host=True (pages in memory)", {"on_host": True}),
]


def _python(argv: list[str], env: dict[str, str]) -> dict:
    return run_process([sys.executable, *argv], env=env).check().last_json()


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares slope and intercept (slope 0 for a single point)."""
    if len(xs) < 2:
        return 0.0, ys[0]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


def arguments(parser):
    parser.add_argument("--batch-rows", type=int, default=100_000, help="rows per batch and external-memory page")
    parser.add_argument("--rounds", type=int, default=20, help="boosting rounds (the peak is reached in the first)")
    parser.add_argument(
        "--page-sweep",
        default="1e6:20000,40000,80000,160000,400000",
        help="SIZE:PAGE_ROWS,...: XGBoost alone on that table with pages of these training rows (bytes per page)",
    )
    parser.add_argument(
        "--knob-sweep",
        default="",
        help="SIZE: XGBoost alone from external memory on that table with each of KNOBS (its settings that may "
        "change boosting's speed), beside the same rows in memory",
    )
    parser.add_argument("--tables", type=Path, help="folder to keep the generated tables in (default: a temporary one)")  # fmt: skip


def cases(bench):
    from accel.backend import get_backend
    from accel.models import XGBoostModel, XGBoostSettings

    tables = bench.args.tables or bench.scratch
    tables.mkdir(parents=True, exist_ok=True)
    env = child_env(ACCEL_CACHE_DIR=str(bench.scratch / "cache"), OMP_WAIT_POLICY="PASSIVE")
    model = XGBoostModel(XGBoostSettings(n_estimators=bench.args.rounds), task="binary", seed=42)
    bench.record.update(
        batch_rows=bench.args.batch_rows, rounds=bench.args.rounds, params=model.booster_params(get_backend("cpu"))
    )
    for n in bench.args.rows:
        path = tables / f"table-{n}.csv"
        if not path.exists():
            print(f"== {n:,} rows: generating (untimed)", flush=True)
            run_process([sys.executable, "-m", "accel_fixtures.tables", str(n), str(path)], env=env).check()
        yield Case(f"{n:,} rows", (n, path, env))


def measure(bench, case, arm):
    """One table size: accel's matrices written once, then accel, XGBoost from external memory and in memory, the sweeps."""
    (n, path, env), a, tmp = case.value, bench.args, bench.scratch
    params = json.dumps(bench.record["params"])
    matrices, meta_file = tmp / f"matrices-{n}.arrow", tmp / f"meta-{n}.json"
    meta = in_fresh_process(prepare_matrices, str(path), str(matrices), a.batch_rows)
    meta_file.write_text(json.dumps(meta))
    row = {"rows": n, "train_rows": meta["train_rows"], "features": len(meta["feature_names"])}
    row["accel"] = in_fresh_process(child_accel, str(path), a.batch_rows, a.rounds)

    def xgboost_alone(mode: str, prefix: str, page_rows: int = 0, knobs: dict | None = None) -> dict:
        argv = [str(matrices), str(meta_file), str(tmp / prefix), mode, str(a.rounds), params, str(page_rows)]
        return _python(["-c", STANDALONE, *argv, *([json.dumps(knobs)] if knobs is not None else [])], env)

    for mode in ("external", "in-memory"):
        row[mode] = xgboost_alone(mode, f"xgb-{n}-{mode}")
    sweep_size, _, sweep = a.page_sweep.partition(":")
    if sweep and int(float(sweep_size)) == n:
        row["page_sweep"] = [
            {**xgboost_alone("external", f"sweep-{p}", p), "page_rows": p} for p in map(int, map(float, sweep.split(",")))
        ]
        for got in row["page_sweep"]:
            b = got["phases"]["boosting"]
            print(f"  pages of {got['page_rows']:,} rows: boosting peak {(b['peak'] - got['floor']) / MIB:,.1f} MiB above "
                  f"the floor, {b['seconds']:.1f} s", flush=True)  # fmt: skip
    if a.knob_sweep and int(float(a.knob_sweep)) == n:
        row["knob_sweep"] = [knob(row, label, knobs, xgboost_alone) for label, knobs in KNOBS]
    matrices.unlink()
    _print_size(row)
    return row


def knob(row: dict, label: str, knobs: dict, xgboost_alone) -> dict:
    """XGBoost alone from external memory with one setting changed, beside the same rows in memory."""
    in_memory = row["in-memory"]["phases"]["boosting"]["seconds"]
    try:
        got = xgboost_alone("external", f"knob-{label.split()[0]}", 0, knobs)
    except RuntimeError as failed:  # a setting XGBoost refuses here: said, not measured
        why = (str(failed).strip().splitlines() or ["failed"])[-1][:300]
        print(f"  {label:<34} refused: {why}", flush=True)
        return {"label": label, "knobs": knobs, "failed": why}
    b = got["phases"]["boosting"]
    print(f"  {label:<34} boosting {b['seconds']:6.1f} s ({b['seconds'] / in_memory:.2f} x in memory), "
          f"peak {(b['peak'] - got['floor']) / MIB:,.1f} MiB above the floor", flush=True)  # fmt: skip
    return {**got, "label": label, "knobs": knobs, "boosting_to_in_memory": b["seconds"] / in_memory}


def _growth(proc: dict, phase: str) -> int:
    p = proc["phases"][phase]
    return p["peak"] - p["rss_before"]


def _print_size(row: dict) -> None:
    n, rows = row["rows"], row["train_rows"]
    print(f"== {n:,} rows ({rows:,} training rows, {row['features']} features)", flush=True)
    for who in ("accel", "external", "in-memory"):
        proc = row[who]
        parts = []
        for phase, p in proc["phases"].items():
            grown = p["peak"] - p["rss_before"]
            parts.append(f"{phase} +{grown / MIB:,.1f} MiB ({grown / rows:,.0f} B/row, {p['seconds']:.1f} s)")
        label = {"accel": "accel streamed", "external": "xgboost ExtMem", "in-memory": "xgboost in memory"}[who]
        print(f"  {label:<18} floor {proc['floor'] / MIB:,.0f} MiB; " + "; ".join(parts), flush=True)
    page = row["external"]["page_file_bytes"]
    ratio = row["external"]["phases"]["boosting"]["seconds"] / row["in-memory"]["phases"]["boosting"]["seconds"]
    print(f"  external-memory pages {page / MIB:,.1f} MiB = {page / rows:,.1f} B/row; boosting streamed / in memory "
          f"{ratio:.2f}; accel boosting - xgboost boosting "
          f"{(_growth(row['accel'], 'boosting') - _growth(row['external'], 'boosting')) / rows:+,.0f} B/row", flush=True)  # fmt: skip


def per_row(results: list[dict]) -> dict:
    """Per process and phase: the least-squares bytes per training row and fixed bytes over the sizes."""
    xs = [r["train_rows"] for r in results]
    out: dict = {}
    for who in ("accel", "external", "in-memory"):
        for phase in results[0][who]["phases"]:
            slope, intercept = _fit(xs, [_growth(r[who], phase) for r in results])
            out.setdefault(who, {})[phase] = {"bytes_per_row": slope, "fixed_mib": intercept / MIB}
    page_slope, page_fixed = _fit(xs, [r["external"]["page_file_bytes"] for r in results])
    out["pages"] = {"bytes_per_row": page_slope, "fixed_mib": page_fixed / MIB}
    out["boosting_ratio_streamed_to_in_memory"] = [
        r["external"]["phases"]["boosting"]["seconds"] / r["in-memory"]["phases"]["boosting"]["seconds"] for r in results
    ]
    return out


def summary(result: dict) -> str:
    out = result["per_row"]
    lines = ["per training row over the sizes (least squares; fixed part in MiB):"]
    for who in ("accel", "external", "in-memory"):
        lines.append(
            f"  {who:<10} "
            + "; ".join(f"{k} {v['bytes_per_row']:,.1f} B/row + {v['fixed_mib']:,.1f}" for k, v in out[who].items())
        )
    lines.append(f"  pages      {out['pages']['bytes_per_row']:,.1f} B/row + {out['pages']['fixed_mib']:,.1f} MiB")
    return "\n".join(lines)


CONFIG = Config("streamed-bytes", __doc__, measure, cases, arguments, lambda bench, rows: {"sizes": rows, "per_row": per_row(rows)},
                summary, rows="1e5,3e5,1e6,3e6", many_rows=True)  # fmt: skip

if __name__ == "__main__":
    main(CONFIG)
