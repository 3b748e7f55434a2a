"""The flights-delay model written by hand with plain pandas + XGBoost: the reference that
accel's CPU arm is measured against (bench_flights_overhead.py).

Deliberately independent of accel's code: the same features and the same model, written the
way a data scientist would in a notebook. Same reader settings (pyarrow engine) and the same
XGBoost parameters and thread count, so the ratio measures accel's own overhead only.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd
import xgboost as xgb
from sklearn.metrics import roc_auc_score


def run(
    flights_csv: str,
    weather_csv: str,
    planes_csv: str,
    seed: int = 42,
    n_estimators: int = 300,
    max_depth: int = 8,
    threads: int | None = None,
) -> dict:
    threads = threads or len(os.sched_getaffinity(0))
    t0 = time.perf_counter()
    flights = pd.read_csv(
        flights_csv,
        engine="pyarrow",
        usecols=[
            "year",
            "month",
            "day",
            "sched_arr_time",
            "arr_delay",
            "carrier",
            "tailnum",
            "origin",
            "dest",
            "distance",
            "hour",
            "minute",
        ],
    )
    weather = pd.read_csv(
        weather_csv,
        engine="pyarrow",
        usecols=[
            "origin",
            "year",
            "month",
            "day",
            "hour",
            "temp",
            "dewp",
            "humid",
            "wind_dir",
            "wind_speed",
            "wind_gust",
            "precip",
            "pressure",
            "visib",
        ],
    )
    planes = pd.read_csv(planes_csv, engine="pyarrow", usecols=["tailnum", "year", "engines", "seats"])

    df = flights.dropna(subset=["arr_delay"]).reset_index(drop=True)
    weather = weather.groupby(["origin", "year", "month", "day", "hour"], as_index=False).mean()
    df = df.merge(weather, on=["origin", "year", "month", "day", "hour"], how="left")
    df = df.merge(planes.rename(columns={"year": "plane_year"}), on="tailnum", how="left")
    date = pd.to_datetime(df[["year", "month", "day"]])
    df["day_of_week"] = date.dt.day_of_week
    df["day_of_year"] = date.dt.day_of_year
    df["sched_arr_hour"] = df["sched_arr_time"] // 100
    df["delayed"] = (df["arr_delay"] > 15).astype("int8")

    order = np.random.default_rng(seed).permutation(len(df))
    n_test = int(round(len(df) * 0.2))
    train = df.iloc[np.sort(order[n_test:])].reset_index(drop=True)
    test = df.iloc[np.sort(order[:n_test])].reset_index(drop=True)

    route = train.groupby(["origin", "dest"]).size().rename("route_flights").reset_index()
    prior = train["delayed"].mean()
    rate = train.groupby(["carrier", "hour"])["delayed"].agg(["sum", "count"]).reset_index()
    rate["carrier_hour_delay_rate"] = (rate["sum"] + 20 * prior) / (rate["count"] + 20)
    rate = rate[["carrier", "hour", "carrier_hour_delay_rate"]]
    features = [
        "month",
        "day",
        "day_of_week",
        "day_of_year",
        "hour",
        "minute",
        "sched_arr_hour",
        "distance",
        "carrier",
        "origin",
        "dest",
        "temp",
        "dewp",
        "humid",
        "wind_dir",
        "wind_speed",
        "wind_gust",
        "precip",
        "pressure",
        "visib",
        "plane_year",
        "engines",
        "seats",
        "route_flights",
        "carrier_hour_delay_rate",
    ]
    frames = []
    for part in (train, test):
        part = part.merge(route, on=["origin", "dest"], how="left").merge(rate, on=["carrier", "hour"], how="left")
        part["route_flights"] = part["route_flights"].fillna(0)
        part["carrier_hour_delay_rate"] = part["carrier_hour_delay_rate"].fillna(prior)
        for c in ("carrier", "origin", "dest"):
            part[c] = pd.Categorical(part[c], categories=sorted(df[c].dropna().unique()))
        frames.append(part)
    train, test = frames

    dtrain = xgb.QuantileDMatrix(train[features], label=train["delayed"], enable_categorical=True, max_bin=256, nthread=threads)
    booster = xgb.train(
        {
            "objective": "binary:logistic",
            "tree_method": "hist",
            "device": "cpu",
            "nthread": threads,
            "max_depth": max_depth,
            "eta": 0.1,
            "max_bin": 256,
            "seed": seed,
        },
        dtrain,
        num_boost_round=n_estimators,
    )
    prob = booster.inplace_predict(test[features])
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "auc": float(roc_auc_score(test["delayed"], prob)), "rows_train": len(train)}


if __name__ == "__main__":
    # The whole process, as bench_flights_overhead.py --whole-process times it: the CSV paths
    # (extracted by accel beforehand, untimed) as arguments; the result as one JSON line.
    import json
    import sys

    print(json.dumps(run(*sys.argv[1:4])))
