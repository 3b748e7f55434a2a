"""Test bodies for data where cuDF and pandas differ in what "missing" is, shared by both arms.

cuDF keeps nulls in integer, boolean and categorical-code columns where pandas has NaN or -1:
a left join leaves int64 columns with nulls on cuDF (pandas makes them float64), and a missing
category's code is null on cuDF (pandas: -1). Each body below feeds such data through one of
accel's conversions and checks the answer both arms must give; ``test_*_cpu.py`` calls it with
the CPU backend, ``test_*_gpu.py`` with the GPU backend.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from accel import _compat
from accel.backend import Backend
from tests.bodies import to_pandas


def nullable_frame(n: int = 64, seed: int = 0) -> pd.DataFrame:
    """Integer, boolean and float columns with missing values, and a categorical with missing
    categories: what a left join gives cuDF (``plane_year``, ``engines``, ``seats`` in flights)."""
    rng = np.random.default_rng(seed)
    missing = rng.random(n) < 0.25
    ints = pd.array(rng.integers(1950, 2013, n), dtype="Int64")
    ints[missing] = pd.NA
    flags = pd.array(rng.random(n) < 0.5, dtype="boolean")
    flags[rng.random(n) < 0.2] = pd.NA
    floats = rng.normal(0, 1, n)
    floats[rng.random(n) < 0.1] = np.nan
    city = pd.Series(rng.choice(["a", "b", "c"], n), dtype=object)
    city[rng.random(n) < 0.3] = None
    return pd.DataFrame(
        {
            "year": ints,
            "flag": flags,
            "x": floats,
            "count": rng.integers(0, 9, n),  # an integer column without missing values
            "city": pd.Categorical(city, categories=["a", "b", "c"]),
        }
    )


def on_arm(backend: Backend, frame: pd.DataFrame):
    """The frame in the arm's library: cuDF keeps the masked columns' nulls as nulls."""
    return frame if _compat.is_pandas_module(backend.xdf) else backend.xdf.from_pandas(frame)


def expected_matrix(frame: pd.DataFrame, categorical: list[str]) -> np.ndarray:
    """The float32 matrix both arms must give: missing values NaN, categories as their codes."""
    columns = []
    for name in frame.columns:
        if name in categorical:
            codes = frame[name].cat.codes.to_numpy().astype(np.float64)
            columns.append(np.where(codes >= 0, codes, np.nan))
        else:
            columns.append(frame[name].to_numpy(dtype=np.float64, na_value=np.nan))
    return np.column_stack(columns).astype(np.float32)


def check_matrix_of_nullable_columns(backend: Backend) -> None:
    """Frame → model matrix through :func:`accel.precision.frame_matrix` (the path of the batch
    plan's probe, ``to_device`` and the fp16 plan) and :func:`accel._compat.frame_to_array`:
    integer and boolean columns with missing values become NaN, nothing raises."""
    from accel.precision import frame_matrix, plan_for_frames

    frame = nullable_frame()
    arm = on_arm(backend, frame)
    want = expected_matrix(frame, ["city"])
    np.testing.assert_array_equal(_compat.to_numpy(frame_matrix(arm, ["city"])), want)
    numeric = [c for c in frame.columns if c != "city"]
    np.testing.assert_array_equal(_compat.to_numpy(frame_matrix(arm[numeric], [])), want[:, :-1])
    np.testing.assert_array_equal(_compat.to_numpy(_compat.frame_to_array(arm[numeric])), want[:, :-1])
    for j, name in enumerate(numeric):
        got = np.asarray(_compat.to_numpy(_compat.column_values(arm[name])), dtype=np.float32)
        np.testing.assert_array_equal(got, want[:, j], err_msg=name)
    plan = plan_for_frames("fp16", [arm], ["city"])
    assert [c.name for c in plan.columns] == list(frame.columns)


def check_one_hot_of_missing_categories_is_zero(backend: Backend) -> None:
    """One-hot columns of a categorical with missing values: 1.0 for the row's category, and all
    0.0 for a missing one (never missing themselves, so never imputed)."""
    from accel.data.autofeatures import one_hot

    frame = nullable_frame()
    arm = on_arm(backend, frame)
    columns = one_hot("city", arm["city"], ["a", "b", "c"])
    got = pd.DataFrame({k: _compat.to_numpy(v) for k, v in columns.items()})
    city = frame["city"]
    for value in ("a", "b", "c"):
        want = (city == value).fillna(False).to_numpy(dtype=np.float64)
        np.testing.assert_array_equal(got[f"city=={value}"].to_numpy(), want, err_msg=value)
    assert (got[city.isna().to_numpy()] == 0.0).all().all()


def check_linear_features_of_missing_categories(backend: Backend) -> pd.DataFrame:
    """The linear family's features of a table whose categorical has missing values: the one-hot
    columns are 0/1 everywhere, and the report imputes none of them. Returns the training features."""
    from accel.data.autofeatures import build_table_features
    from accel.data.schema import make_plan

    frame = nullable_frame(400, seed=3)
    table = pd.DataFrame(
        {
            "city": frame["city"].astype(object).where(frame["city"].notna(), None),
            "x": frame["x"],
            "y": np.where(frame["x"].fillna(0) + (frame["city"] == "a").to_numpy() > 0.3, "yes", "no"),
        }
    )
    plan = make_plan(table, "y", seed=5)
    arm = on_arm(backend, table).iloc[plan.row_positions].reset_index(drop=True)
    prepared, report = build_table_features(backend.xdf, arm, plan, "linear", seed=5)
    X_train = to_pandas(prepared.X_train)
    onehot = [c for c in X_train.columns if str(c).startswith("city==")]
    assert onehot, "the city column is one-hot encoded for a linear model"
    assert not any(str(c).startswith("city==") for c in report.imputed), report.imputed
    # Standardised 0/1 columns take two values each; a missing city is below every category's mean.
    for c in onehot:
        assert X_train[c].nunique() == 2, c
    missing = table["city"].isna().to_numpy()[plan.row_positions][plan.train_pos]
    assert missing.any()
    lowest = X_train[onehot].min().to_numpy()
    np.testing.assert_allclose(
        X_train.loc[missing, onehot].to_numpy(), np.broadcast_to(lowest, (int(missing.sum()), len(onehot)))
    )
    return X_train


def check_day_of_year_dates(backend: Backend) -> str:
    """``%Y%j`` text (year and day of the year) parses to the right dates on both arms; returns
    where it was parsed."""
    truth = pd.Series(pd.to_datetime(["2021-03-15", "2020-12-31", "2021-01-01", "2019-07-04"]))
    text = pd.Series(truth.dt.strftime("%Y%j").tolist() + ["2021400", None], dtype=object)
    s = text if _compat.is_pandas_module(backend.xdf) else backend.xdf.from_pandas(text)
    parsed, where = _compat.parse_datetime_where(backend.xdf, s, "%Y%j")
    got = pd.Series(_compat.to_pandas(parsed)).astype("datetime64[ns]")
    assert got[:4].tolist() == truth.astype("datetime64[ns]").tolist(), got.tolist()
    assert got[4:].isna().all()
    return where
