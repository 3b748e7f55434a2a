"""Scoring, whole process: ``accel predict`` (CPU arm) against a hand-written script doing the same.

A pipeline is trained once (``accel run --data`` on a generated 1e5-row table of 20 columns, the
table of ``bench_own_table_speed.py``: ten numeric with 5% missing, ten strings of 5-500 values).
Then a fresh table of ``--rows`` rows (default 1e6) is scored, alternately, each process timed
from start to exit with its peak RSS:

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

import argparse
import json
import os
import statistics
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_own_table_speed import generate_apart, peak_rss  # noqa: E402

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


def accel_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "accel", *args]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e6", help="rows of the table scored (default 1e6)")
    parser.add_argument("--train-rows", default="1e5", help="rows of the training table (default 1e5)")
    parser.add_argument("--shap-rows", default="2000", help="rows whose SHAP contributions are timed (default 2,000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    from accel.timing import check_results_folder, result_device, write_result

    check_results_folder(args.out)
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    rows, shap_rows = int(float(args.rows)), int(float(args.shap_rows))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        train, score, shap = work / "train.csv", work / "score.csv", work / "shap.csv"
        generate_apart(int(float(args.train_rows)), train, env)
        generate_apart(rows, score, env)
        generate_apart(shap_rows, shap, env)
        trained = peak_rss(
            accel_cmd("run", "--data", str(train), "--target", "y", "--device", "cpu", "--out", str(work / "runs")), env, work
        )
        if trained[3] and "run record:" not in trained[2]:
            print(trained[3], file=sys.stderr)
        [run] = sorted((work / "runs").glob("*-table-*.json"))
        script = work / "handwritten.py"
        script.write_text(HANDWRITTEN)
        timings: dict[str, list[float]] = {"accel": [], "handwritten": [], "accel_shap": [], "handwritten_shap": []}
        peaks: dict[str, list[int]] = {k: [] for k in timings}
        checksums: dict[str, float] = {}
        for i in range(args.repeats):
            for name, cmd in (
                ("accel", accel_cmd("predict", str(run), "--data", str(score), "--out", str(work / f"a{i}.parquet"),
                                    "--device", "cpu", "--records", str(work / "records"))),
                ("handwritten", [sys.executable, str(script), str(run), str(score), str(work / f"h{i}.parquet"), "plain"]),
                ("accel_shap", accel_cmd("predict", str(run), "--data", str(shap), "--out", str(work / f"as{i}.parquet"),
                                         "--device", "cpu", "--contributions", "--records", str(work / "records"))),
                ("handwritten_shap", [sys.executable, str(script), str(run), str(shap), "-", "shap"]),
            ):  # fmt: skip
                seconds, peak, out, err = peak_rss(cmd, env, work)
                if "checksum" in out:
                    checksums[name] = json.loads(out.strip().splitlines()[-1])["checksum"]
                elif "predictions:" not in out:
                    raise SystemExit(f"{name} failed: {err.strip()[-400:]}")
                timings[name].append(seconds)
                peaks[name].append(peak)
                print(f"{name:17s} {seconds:7.2f} s  peak {peak / 1e6:7.0f} MB", file=sys.stderr)
        import pandas as pd

        accel_sum = float(pd.read_parquet(work / "a0.parquet")["proba_1"].sum())
        median = {k: statistics.median(v) for k, v in timings.items()}
        result = {
            "benchmark": "predict-speed",
            "rows": rows,
            "train_rows": int(float(args.train_rows)),
            "shap_rows": shap_rows,
            "repeats": args.repeats,
            "seconds": timings,
            "peak_rss_bytes": peaks,
            "median_seconds": median,
            "ratio_accel_to_handwritten": median["accel"] / median["handwritten"],
            "ratio_shap_accel_to_handwritten": median["accel_shap"] / median["handwritten_shap"],
            "rows_per_second": {"accel": rows / median["accel"], "handwritten": rows / median["handwritten"]},
            "checksums_agree": abs(accel_sum - checksums.get("handwritten", float("nan"))) <= 1e-6 * max(1.0, abs(accel_sum)),
            "goal": "accel predict <= 1.1 x the hand-written script's wall",
            "measured_at": datetime.now(timezone.utc).isoformat(),
        }
    from accel.environment import collect_environment

    environment = collect_environment()
    result["environment"] = environment
    path = write_result(args.out, result, "predict-speed", result_device(False, environment))
    print(
        f"scoring {rows:,} rows: accel {median['accel']:.2f} s, hand-written {median['handwritten']:.2f} s, ratio "
        f"{result['ratio_accel_to_handwritten']:.3f} (goal <= 1.1); SHAP on {shap_rows:,} rows: ratio "
        f"{result['ratio_shap_accel_to_handwritten']:.3f}; outputs agree: {result['checksums_agree']}\nresult: {path}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
