"""db-benchmark's own pandas solution to the groupby questions, as plain pandas, without accel.

It mirrors h2oai/db-benchmark ``pandas/groupby-pandas.py`` (the questions, their options and
the checksums ``chk``) and its loading step (the same dtype casts after reading; the benchmark
reads with datatable's ``fread``, here pandas' pyarrow CSV reader or ``read_parquet``; loading is
not timed in either). Each question is timed as the benchmark times it: ``gc.collect()``,
then ``timeit.default_timer()`` around the expression alone.

It is the yardstick of ``bench_groupby_overhead.py``: accel's pandas arm must answer every
question within 1.1x of this code's time, with the same checksums. Nothing here imports accel.
As a program (``python benchmarks/dbbench_pandas_solution.py DATA [QUESTION ...]``) it answers
the questions (all by default) once each and prints ``{question: run(...)}`` as one JSON line:
the reference the tests compare accel's answers with.
"""

from __future__ import annotations

import gc
import timeit

import pandas as pd


def load(path: str) -> pd.DataFrame:
    if str(path).endswith((".parquet", ".pq")):
        x = pd.read_parquet(path)
    else:
        x = pd.read_csv(path, engine="pyarrow")
    for c in ("id1", "id2", "id3"):
        x[c] = x[c].astype("category")
    for c in ("id4", "id5", "id6", "v1", "v2"):
        x[c] = x[c].astype("Int32")
    x["v3"] = x["v3"].astype("float64")
    return x


OPTS = dict(as_index=False, sort=False, observed=True, dropna=False)


def q1(x):
    ans = x.groupby("id1", **OPTS).agg({"v1": "sum"})
    return ans, lambda: [ans["v1"].sum()]


def q2(x):
    ans = x.groupby(["id1", "id2"], **OPTS).agg({"v1": "sum"})
    return ans, lambda: [ans["v1"].sum()]


def q3(x):
    ans = x.groupby("id3", **OPTS).agg({"v1": "sum", "v3": "mean"})
    return ans, lambda: [ans["v1"].sum(), ans["v3"].sum()]


def q4(x):
    ans = x.groupby("id4", **OPTS).agg({"v1": "mean", "v2": "mean", "v3": "mean"})
    return ans, lambda: [ans["v1"].sum(), ans["v2"].sum(), ans["v3"].sum()]


def q5(x):
    ans = x.groupby("id6", **OPTS).agg({"v1": "sum", "v2": "sum", "v3": "sum"})
    return ans, lambda: [ans["v1"].sum(), ans["v2"].sum(), ans["v3"].sum()]


def q6(x):
    ans = x.groupby(["id4", "id5"], **OPTS).agg({"v3": ["median", "std"]})
    return ans, lambda: [ans["v3"]["median"].sum(), ans["v3"]["std"].sum()]


def q7(x):
    ans = (
        x.groupby("id3", **OPTS)
        .agg({"v1": "max", "v2": "min"})
        .assign(range_v1_v2=lambda t: t["v1"] - t["v2"])[["id3", "range_v1_v2"]]
    )
    return ans, lambda: [ans["range_v1_v2"].sum()]


def q8(x):
    ans = x[~x["v3"].isna()][["id6", "v3"]].sort_values("v3", ascending=False).groupby("id6", **OPTS).head(2)
    ans = ans.reset_index(drop=True)
    return ans, lambda: [ans["v3"].sum()]


def q9(x):
    # The benchmark's formulation: a Python function per group.
    ans = (
        x[["id2", "id4", "v1", "v2"]]
        .groupby(["id2", "id4"], **OPTS)
        .apply(lambda g: pd.Series({"r2": g.corr()["v1"]["v2"] ** 2}))
    )
    return ans, lambda: [ans["r2"].sum()]


def q10(x):
    ans = x.groupby(["id1", "id2", "id3", "id4", "id5", "id6"], **OPTS).agg({"v3": "sum", "v1": "size"})
    return ans, lambda: [ans["v3"].sum(), ans["v1"].sum()]


QUESTIONS = {f.__name__: f for f in (q1, q2, q3, q4, q5, q6, q7, q8, q9, q10)}


def run(x: pd.DataFrame, name: str) -> dict:
    """One timed run of one question, as the benchmark does it: seconds, answer shape, checksums."""
    gc.collect()
    t_start = timeit.default_timer()
    ans, chk = QUESTIONS[name](x)
    t = timeit.default_timer() - t_start
    out = {"seconds": t, "rows": int(ans.shape[0]), "cols": int(ans.shape[1]), "checksum": [float(v) for v in chk()]}
    del ans
    return out


if __name__ == "__main__":
    import json
    import sys

    data = load(sys.argv[1])
    print(json.dumps({name: run(data, name) for name in sys.argv[2:] or QUESTIONS}))
