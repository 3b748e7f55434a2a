"""Scoring, whole process: ``accel predict`` (CPU arm) against a hand-written script doing the same.

A pipeline is trained once (``accel run --data`` on a generated 1e5-row table of 20 columns, the
table of ``bench_own_table_speed.py``: ten numeric with 5% missing, ten strings of 5-500 values).
Then a fresh table of ``--rows`` rows (default 1e6) is scored, alternately, each process timed
from start to exit with its peak RSS. The fresh rows come without their target, as new rows to
score do (with it, accel also computes the hold-out metrics, work the script does not do):

- ``accel predict RUN --data FILE --out OUT.parquet --device cpu``: read, check, features,
  storage, predict, write, and its scoring record;
- a hand-written script: ``pandas.read_csv(engine="pyarrow")``, the same feature code (the
  pipeline's fitted transform, :meth:`accel.pipeline.Pipeline.features` without the checks),
  ``Booster.inplace_predict`` on the float32 matrix, and the same output file (row, label,
  class probabilities) with pyarrow.

Both print their scored rows' checksum, which must agree. The goal: accel's wall no more than
1.1 x the script's. Then per-row SHAP contributions are timed at ``--shap-rows`` (default 2,000,
a size the CPU finishes): ``accel predict --contributions`` against ``Booster.predict(...,
pred_contribs=True)`` in the script.

    python benchmarks/bench_predict_speed.py --rows 1e6 --repeats 3
"""

from __future__ import annotations

import statistics
import sys

from common import Case, Config, child_env, main, rows_count, run_process, times

HANDWRITTEN = r"""
import json, sys
import numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
import accel
from accel.precision import frame_matrix
run, path, out, shap = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "shap"
pipeline = accel.load(run, device="cpu")
frame = pd.read_csv(path, engine="pyarrow")
X = pipeline.transform.transform(frame[pipeline.required])
matrix = frame_matrix(X, pipeline.transform.categorical)
booster = pipeline.fitted
if shap:
    import xgboost as xgb
    values = booster.predict(xgb.DMatrix(matrix, feature_names=booster.feature_names, feature_types=booster.feature_types,
                                         enable_categorical=True), pred_contribs=True)
    print(json.dumps({"checksum": float(np.asarray(values).sum())}))
    sys.exit(0)
p = booster.inplace_predict(matrix)
table = pd.DataFrame({"row": np.arange(len(p)), "prediction": pipeline.classes_[(p >= 0.5).astype(int)],
                      "proba_0": 1.0 - p.astype(np.float64), "proba_1": p.astype(np.float64)})
pq.write_table(pa.Table.from_pandas(table, preserve_index=False), out)
print(json.dumps({"checksum": float(table["proba_1"].sum())}))
"""


def arguments(parser):
    parser.add_argument("--train-rows", type=rows_count, default="1e5", help="rows of the training table (default 1e5)")
    parser.add_argument("--shap-rows", type=rows_count, default="2000", help="rows whose SHAP contributions are timed (default 2,000)")  # fmt: skip


def cases(bench):
    """The tables generated and a pipeline trained (untimed); then scoring, then SHAP contributions."""
    env, work = child_env(OMP_WAIT_POLICY="PASSIVE"), bench.scratch
    tables = {"train": bench.args.train_rows, "score": bench.args.rows, "shap": bench.args.shap_rows}
    for name, rows in tables.items():
        target = [] if name == "train" else ["--no-target"]  # new rows to score come without their label
        run_process(
            [sys.executable, "-m", "accel_fixtures.tables", str(rows), str(work / f"{name}.csv"), *target], env=env
        ).check()
    cmd = ["run", "--data", str(work / "train.csv"), "--target", "y", "--device", "cpu", "--out", str(work / "runs")]
    run_process([sys.executable, "-m", "accel", *cmd], env=env, cwd=work).check()
    [run] = sorted((work / "runs").glob("*-table-*.json"))
    (work / "handwritten.py").write_text(HANDWRITTEN)
    bench.record.update(rows=bench.args.rows, train_rows=bench.args.train_rows, shap_rows=bench.args.shap_rows,
                        repeats=bench.args.repeats, scored_table="without its target")  # fmt: skip
    yield Case("score", (run, env), ("accel", "handwritten"))
    yield Case("shap", (run, env), ("accel", "handwritten"))


def measure(bench, case, impl):
    """One process, start to exit, with its peak RSS; the script prints its output's checksum."""
    (run, env), work, shap = case.value, bench.scratch, case.label == "shap"
    out = bench.fresh(impl) / "out.parquet"
    if impl == "accel":
        cmd = [sys.executable, "-m", "accel", "predict", str(run), "--data", str(work / f"{case.label}.csv"), "--out", str(out),
               "--device", "cpu", "--records", str(work / "records"), *(["--contributions"] if shap else [])]  # fmt: skip
    else:
        cmd = [sys.executable, str(work / "handwritten.py"), str(run), str(work / f"{case.label}.csv"), str(out), case.label]
    done = run_process(cmd, env=env, cwd=work).check()
    row = {"seconds": done.seconds, "peak_rss_bytes": done.peak_bytes}
    if impl == "handwritten":
        return row | {"checksum": done.last_json()["checksum"]}
    if not shap:
        import pandas as pd

        row["checksum"] = float(pd.read_parquet(out)["proba_1"].sum())
    return row


def tidy(bench, rows):
    score = [r for r in rows if r["case"] == "score"]
    shap = [r for r in rows if r["case"] == "shap"]
    median = {k: statistics.median(times(part, impl)) for k, part, impl in
              (("accel", score, "accel"), ("handwritten", score, "handwritten"), ("accel_shap", shap, "accel"),
               ("handwritten_shap", shap, "handwritten"))}  # fmt: skip
    sums = {impl: next(r["checksum"] for r in score if r["impl"] == impl) for impl in ("accel", "handwritten")}
    n = bench.args.rows
    return {"rows_measured": rows, "median_seconds": median,
            "ratio_accel_to_handwritten": median["accel"] / median["handwritten"],
            "ratio_shap_accel_to_handwritten": median["accel_shap"] / median["handwritten_shap"],
            "rows_per_second": {"accel": n / median["accel"], "handwritten": n / median["handwritten"]},
            "checksums_agree": abs(sums["accel"] - sums["handwritten"]) <= 1e-6 * max(1.0, abs(sums["accel"])),
            "goal": "accel predict <= 1.1 x the hand-written script's wall"}  # fmt: skip


def summary(result):
    m = result["median_seconds"]
    return (f"scoring {result['rows']:,} rows: accel {m['accel']:.2f} s, hand-written {m['handwritten']:.2f} s, ratio "
            f"{result['ratio_accel_to_handwritten']:.3f} (goal <= 1.1); SHAP on {result['shap_rows']:,} rows: ratio "
            f"{result['ratio_shap_accel_to_handwritten']:.3f}; outputs agree: {result['checksums_agree']}")  # fmt: skip


CONFIG = Config("predict-speed", __doc__, measure, cases, arguments, tidy, summary, repeats=3, rows="1e6",
                progress=lambda row: f"  peak {row['peak_rss_bytes'] / 1e6:7.0f} MB")  # fmt: skip

if __name__ == "__main__":
    main(CONFIG)
