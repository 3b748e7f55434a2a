"""Dates written as text in your own table: which layouts accel understands, and what it costs
to get one wrong.

(a) A table of date layouts (ISO, "1939 Jan", "Jan 1939", "January 2021", "15 Mar 2021",
"Mar 15, 2021", US, US without zeros, day-first, dotted, two-digit years, with minutes,
seconds or a 12-hour clock, and a column of distinct "mm/dd/yyyy HH:MM" values): for each, the
kind accel's planning gives the column, the format it chose, what it said, and the share of
values that parse to the right moment (from 300-row tables with a few missing and junk values).

(b) A table like fpp3's ``us_employment`` (generated with a fixed seed; nothing is downloaded),
once with ``Month`` written "1939 Jan" and once as ISO dates (1939-01-01): ~150 series
(``Series_ID`` and ``Title``), ``Employed`` with a trend, a business cycle and seasonality per
series; monthly from each series' start to 2019 Sep. ``accel run --data FILE --target Employed --task regression --device cpu`` (the real
command, in a subprocess) against a hand-written pandas + XGBoost script that parses the month
and uses year and month, the two series columns as categories, the same XGBoost settings and
the same train/test rows. Target: accel within 5% of the hand-written RMSE.

The script measures whichever accel it imports, so the before/after comparison is two runs of
it, one per tree (the older tree from ``git worktree add /tmp/before <commit>``)::

    python benchmarks/bench_dates.py --label after
    PYTHONPATH=/tmp/before python benchmarks/bench_dates.py --label before

Each result holds the accel source it ran (path, git commit, whether the tree had changes).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from common import Case, Config, child_env, main, run_process

import accel
from accel.backend import cpu_threads
from accel.data.autofeatures import cast_datetime
from accel.timing import timed_call
from accel.workflows import WorkflowSettings
from accel.workflows.table import plan_table

ACCEL_ROOT = Path(accel.__file__).resolve().parents[1]


def _unpadded_us(ts: pd.Series) -> pd.Series:
    return ts.dt.month.astype(str) + "/" + ts.dt.day.astype(str) + "/" + ts.dt.year.astype(str)


#: (layout, how it is written: strftime format or function, what the text holds)
LAYOUTS = [
    ("ISO 2021-03-15", "%Y-%m-%d", "day"),
    ("ISO with T 2021-03-15T14:30:05", "%Y-%m-%dT%H:%M:%S", "second"),
    ("1939 Jan", "%Y %b", "month"),
    ("Jan 1939", "%b %Y", "month"),
    ("January 2021", "%B %Y", "month"),
    ("15 Mar 2021", "%d %b %Y", "day"),
    ("Mar 15, 2021", "%b %d, %Y", "day"),
    ("US 03/15/2021", "%m/%d/%Y", "day"),
    ("US without zeros 3/5/2021", _unpadded_us, "day"),
    ("day-first 15/03/2021", "%d/%m/%Y", "day"),
    ("dotted 15.03.2021", "%d.%m.%Y", "day"),
    ("day-first dashes 15-03-2021", "%d-%m-%Y", "day"),
    ("US two-digit year 03/15/21", "%m/%d/%y", "day"),
    ("US with minutes 03/15/2021 14:30", "%m/%d/%Y %H:%M", "minute"),
    ("US with seconds 03/15/2021 14:30:05", "%m/%d/%Y %H:%M:%S", "second"),
    ("day-first with minutes 15/03/2021 14:30", "%d/%m/%Y %H:%M", "minute"),
    ("12-hour clock 03/15/2021 02:30 PM", "%m/%d/%Y %I:%M %p", "minute"),
]


def moments(n: int, holds: str, rng: np.random.Generator) -> pd.Series:
    ts = pd.Series(pd.Timestamp("2019-01-01") + pd.to_timedelta(rng.integers(0, 4 * 365 * 86400, n), unit="s"))
    if holds == "month":
        return ts.dt.to_period("M").dt.to_timestamp()
    return ts.dt.floor({"day": "D", "minute": "min", "second": "s"}[holds])


def layout_case(workdir: Path, name: str, how, holds: str, n: int = 300, distinct: bool = False) -> dict:
    """Plan a 300-row table whose ``when`` column is written in this layout; parse it as planned."""
    rng = np.random.default_rng(len(name))
    ts = moments(n, holds, rng)
    if distinct:  # every value distinct, as in a log of events
        ts = pd.Series(pd.Timestamp("2021-01-01") + pd.to_timedelta(np.sort(rng.choice(500_000, n, replace=False)), unit="min"))
    text = (how(ts) if callable(how) else ts.dt.strftime(how)).astype(object)
    text.iloc[:2] = None
    text.iloc[2:4] = "n/a"
    truth = ts.copy()
    truth.iloc[:4] = pd.NaT
    frame = pd.DataFrame({"when": text, "x": rng.normal(0, 1, n)})
    frame["y"] = 10 * ts.dt.month + frame["x"]
    path = workdir / f"layout-{abs(hash(name)) % 10**8}.csv"
    frame.to_csv(path, index=False)
    planned = plan_table(str(path), "y", None, [], WorkflowSettings(seed=42))
    [col] = [c for c in planned.plan.columns if c.name == "when"]
    row = {
        "layout": name,
        "kind": col.kind,
        "reason": col.reason,
        "date_format": getattr(col, "date_format", None),
        "date_note": getattr(col, "date_note", ""),
        "notices": [x for x in planned.plan.notices if "'when'" in x],
        "parsed_right": None,
    }
    if col.kind == "datetime":
        read = pd.read_csv(path, engine="pyarrow")["when"]  # as the CPU arm reads it
        parsed = pd.Series(cast_datetime(pd, read, col)[0]).astype("datetime64[ns]")
        ok = (parsed == truth.astype("datetime64[ns]")) | (parsed.isna() & truth.isna())
        row["parsed_right"] = float(ok.mean())
    return row


# --------------------------------------------------------------------------- (b) us_employment-style


def employment_table(seed: int = 7, series: int = 150) -> pd.DataFrame:
    """Monthly employment per series, from each series' start to 2019 Sep (fpp3 us_employment's shape)."""
    rng = np.random.default_rng(seed)
    end = pd.Period("2019-09", freq="M")
    cycle_phase = rng.uniform(0, 2 * np.pi)
    frames = []
    for k in range(series):
        start = pd.Period("1939-01", freq="M") if rng.random() < 0.3 else pd.Period(f"{rng.integers(1950, 1991)}-01", freq="M")
        months = pd.period_range(start, end, freq="M")
        t = (months.year.to_numpy() - 1939) + (months.month.to_numpy() - 1) / 12
        level = float(np.exp(rng.normal(6.0, 1.3)))  # thousands employed: tens to tens of thousands
        growth = rng.normal(0.015, 0.01)
        cycle = 0.03 * rng.uniform(0.3, 1.5) * np.sin(2 * np.pi * t / 7.3 + cycle_phase)
        season = rng.normal(0, rng.uniform(0.002, 0.04), 12)
        season -= season.mean()
        y = level * np.exp(growth * (t - t[0]) + cycle) * (1 + season[months.month.to_numpy() - 1])
        y = y * (1 + rng.normal(0, 0.003, len(y)))
        frames.append(
            pd.DataFrame(
                {
                    "Month": months.strftime("%Y %b"),
                    "Series_ID": f"CEU{k * 1_000_000 + 1:010d}",
                    "Title": f"Industry {k:03d}",
                    "Employed": np.round(y, 1),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def handwritten(path: Path, fmt: str, positions: np.ndarray, train_pos: np.ndarray, test_pos: np.ndarray, seed: int) -> dict:
    """What a data scientist writes: parse the month, year and month as features, the series
    columns as categories, XGBoost with accel's default settings, on accel's train/test rows."""
    import xgboost as xgb

    df = pd.read_csv(path).iloc[positions].reset_index(drop=True)
    when = pd.to_datetime(df.pop("Month"), format=fmt)
    X = pd.DataFrame({"year": when.dt.year, "month": when.dt.month})
    for c in ("Series_ID", "Title"):
        X[c] = df[c].astype("category")
    y = df["Employed"].to_numpy(dtype=float)
    params = {
        "objective": "reg:squarederror",
        "tree_method": "hist",
        "max_depth": 8,
        "eta": 0.1,
        "max_bin": 256,
        "min_child_weight": 1.0,
        "lambda": 1.0,
        "seed": seed,
        "nthread": cpu_threads(),
    }
    dtrain = xgb.QuantileDMatrix(X.iloc[train_pos], label=y[train_pos], enable_categorical=True, max_bin=256)
    booster = xgb.train(params, dtrain, num_boost_round=300)
    pred = booster.inplace_predict(X.iloc[test_pos])
    return {"rmse": float(np.sqrt(np.mean((y[test_pos] - pred) ** 2)))}


def accel_run(path: Path, out: Path, seed: int) -> dict:
    """The real command line, in a subprocess importing the same accel as this script."""
    cmd = [sys.executable, "-m", "accel", "run", "--data", str(path), "--target", "Employed", "--task", "regression",
           "--device", "cpu", "--seed", str(seed), "--out", str(out)]  # fmt: skip
    done = run_process(cmd, env=child_env(), cwd=ACCEL_ROOT).check()
    [record_path] = sorted(out.glob("*.json"))
    record = json.loads(record_path.read_text())  # an older accel may have written bare NaN
    cpu = record["arms"]["cpu"]
    return {
        "rmse": cpu["metrics"]["rmse"], "wall_seconds": done.seconds, "stages": cpu["stages"],
        "month_column": record["data"]["schema"]["columns"]["Month"], "encodings": record["features"]["cpu"]["encodings"],
        "notices": [x for x in record["data"]["schema"]["notices"] if "Month" in x],
        "record_is_strict_json": _strict(record_path.read_text()),
    }  # fmt: skip


def _strict(text: str) -> bool:
    def refuse(constant: str):
        raise ValueError(constant)

    try:
        json.loads(text, parse_constant=refuse)
    except ValueError:
        return False
    return True


def _source() -> dict:
    def git(*args: str) -> str:
        out = subprocess.run(["git", "-C", str(ACCEL_ROOT), *args], capture_output=True, text=True, check=False)
        return out.stdout.strip()

    return {
        "accel": str(ACCEL_ROOT / "accel"),
        "commit": git("rev-parse", "HEAD"),
        "changed_files": [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()],
    }


def arguments(parser):
    parser.add_argument("--series", type=int, default=150, help="series of the us_employment-like table (default 150)")


MONTHS = {"Month as 1939 Jan": "%Y %b", "Month as ISO dates 1939-01-01": "%Y-%m-%d"}


def cases(bench):
    source = _source()
    bench.record["source"] = source
    print(f"accel from {source['accel']} (commit {source['commit'][:10]}, {len(source['changed_files'])} changed files)")
    yield Case("layouts")
    table = employment_table(series=bench.args.series)
    print(f"us_employment-style: {len(table):,} rows, {table['Series_ID'].nunique()} series, {table['Month'].nunique()} months")
    bench.record["employment"] = {
        "rows": len(table),
        "series": int(table["Series_ID"].nunique()),
        "months": int(table["Month"].nunique()),
    }
    for case, fmt in MONTHS.items():
        yield Case(case, table.assign(Month=pd.to_datetime(table["Month"], format="%Y %b").dt.strftime(fmt)))


def measure(bench, case, arm):
    """(a) every layout's planning; (b) one month layout: the real command against the hand-written script."""
    if case.label == "layouts":
        layouts = [layout_case(bench.scratch, name, how, holds) for name, how, holds in LAYOUTS]
        layouts.append(
            layout_case(bench.scratch, "US with minutes, every value distinct", "%m/%d/%Y %H:%M", "minute", distinct=True)
        )
        return {"layouts": layouts}
    path, fmt, seed = bench.fresh("table") / "us_employment.csv", MONTHS[case.label], bench.args.seed
    case.value.to_csv(path, index=False)
    plan = plan_table(str(path), "Employed", "regression", [], WorkflowSettings(seed=seed)).plan
    ours = accel_run(path, bench.fresh("runs"), seed)
    seconds, hand = timed_call(lambda: handwritten(path, fmt, plan.row_positions, plan.train_pos, plan.test_pos, seed))
    ratio = ours["rmse"] / hand["rmse"]
    return {"format": fmt, "rows_train": int(len(plan.train_pos)), "rows_test": int(len(plan.test_pos)), "accel": ours,
            "handwritten": {**hand, "seconds": seconds}, "rmse_ratio": ratio, "within_5_percent": bool(ratio <= 1.05)}  # fmt: skip


def tidy(bench, rows):
    layouts, *employment = rows
    cases = {r.pop("case"): {k: v for k, v in r.items() if k != "seconds"} for r in employment}
    return {"source": bench.record.pop("source"), "layouts": layouts["layouts"],
            "us_employment": {**bench.record.pop("employment"), "cases": cases}}  # fmt: skip


def summary(result):
    lines = [f"{'layout':<42} {'kind':<12} {'format':<20} parsed right"]
    for r in result["layouts"]:
        right = "—" if r["parsed_right"] is None else f"{r['parsed_right']:.0%}"
        reason = f"  ({r['reason']})" if r["kind"] != "datetime" and r["reason"] else ""
        lines.append(f"{r['layout']:<42} {r['kind']:<12} {str(r['date_format'] or ''):<20} {right}{reason}")
    for case, c in result["us_employment"]["cases"].items():
        month, ours, hand = c["accel"]["month_column"], c["accel"], c["handwritten"]
        parts = month.get("date_parts") or "(all)" if month.get("kind") == "datetime" else "-"
        lines.append(f"{case:<31} Month planned as {month.get('kind')} {month.get('date_format') or ''} parts {parts}")
        lines.append(f"{'':<31} RMSE accel {ours['rmse']:.2f}  hand-written {hand['rmse']:.2f}  ratio {c['rmse_ratio']:.3f} "
                     f"({'within' if c['within_5_percent'] else 'NOT within'} 5%); accel wall {ours['wall_seconds']:.1f} s, "
                     f"hand-written {hand['seconds']:.1f} s")  # fmt: skip
    return "\n".join(lines)


CONFIG = Config("dates", __doc__, measure, cases, arguments, tidy, summary, seed=True)

if __name__ == "__main__":
    main(CONFIG)
