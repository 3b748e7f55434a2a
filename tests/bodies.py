"""Test bodies shared by the CPU and GPU suites (as xgboost keeps ``xgboost/testing``).

Each takes a :class:`~accel.backend.Backend` and checks a property that must hold on both
arms; ``test_*_cpu.py`` calls it with the CPU backend, ``test_*_gpu.py`` with the GPU backend.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from accel import _compat
from accel.backend import Backend
from accel.features import GroupStats, categorize, left_join
from accel.models import XGBoostParams
from accel.pairing import STAGES, run_arm
from accel.workflows import FlightsWorkflow, WorkflowSettings


def to_pandas(frame) -> pd.DataFrame:
    return frame.to_pandas() if _compat.is_cudf(frame) else frame


def check_left_join_keeps_order(backend: Backend) -> None:
    xdf = backend.xdf
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 50, size=5000)
    left = xdf.DataFrame({"k": keys, "v": np.arange(5000)})
    right = xdf.DataFrame({"k": np.arange(0, 40)[::-1], "w": np.arange(0, 40)[::-1] * 10.0})
    out = to_pandas(left_join(left, right, ["k"]))
    assert len(out) == 5000
    np.testing.assert_array_equal(out["v"].to_numpy(), np.arange(5000))
    expected = np.where(keys < 40, keys * 10.0, np.nan)
    np.testing.assert_array_equal(out["w"].to_numpy(), expected)


def check_group_stats_fit_on_train_only(backend: Backend) -> None:
    xdf = backend.xdf
    train = xdf.DataFrame({"g": ["a", "a", "b", "b", "b"], "x": [1, 2, 3, 4, 5]})
    y_train = xdf.Series([1, 0, 1, 1, 1])
    test = xdf.DataFrame({"g": ["a", "b", "c"], "x": [0, 0, 0]})
    stats = GroupStats.fit(xdf, train, y_train, ["g"], count_name="n", rate_name="rate", smoothing=2.0)
    out = to_pandas(stats.transform(test))
    prior = 4 / 5
    np.testing.assert_allclose(out["n"].to_numpy(), [2.0, 3.0, 0.0])
    np.testing.assert_allclose(out["rate"].to_numpy(), [(1 + 2 * prior) / 4, (3 + 2 * prior) / 5, prior])
    # The test rows' own targets never enter: changing them cannot change their encoding.
    assert stats.prior == prior


def check_categories_identical_across_splits(backend: Backend) -> None:
    xdf = backend.xdf
    full = xdf.DataFrame({"c": ["z", "a", "m", "a", "z"]})
    a, b = categorize(xdf, [full.iloc[[0, 1]], full.iloc[[2, 3, 4]]], ["c"], vocabulary_from=full)
    assert list(to_pandas(a)["c"].cat.categories) == ["a", "m", "z"]
    assert list(to_pandas(a)["c"].cat.categories) == list(to_pandas(b)["c"].cat.categories)


def check_flights_features(backend: Backend, rows: int = 4000, seed: int = 7) -> pd.DataFrame:
    """The features stage on a sample; returns the training frame as pandas for comparison."""
    wf = FlightsWorkflow(WorkflowSettings(rows=rows, seed=seed))
    prepared = wf.features(backend, wf.load(backend))
    X = to_pandas(prepared.X_train)
    assert prepared.rows["loaded"] == rows
    assert prepared.rows["train"] + prepared.rows["test"] == prepared.rows["with_target"]
    assert len(X) == prepared.rows["train"] and len(to_pandas(prepared.X_test)) == prepared.rows["test"]
    for column in ("carrier", "origin", "dest"):
        assert isinstance(X[column].dtype, pd.CategoricalDtype)
    assert X["day_of_week"].between(0, 6).all()
    assert X["route_flights"].min() >= 0
    assert X["carrier_hour_delay_rate"].between(0, 1).all()
    return X


def check_flights_arm(backend: Backend, rows: int = 6000, seed: int = 3):
    """Every stage runs, is timed, and XGBoost ran on the arm's own device."""
    wf = FlightsWorkflow(WorkflowSettings(rows=rows, seed=seed), XGBoostParams(n_estimators=40, max_depth=6))
    result = run_arm(backend, wf)
    assert result.status == "ok", result.reason
    assert set(result.stages) == set(STAGES) and all(s >= 0 for s in result.stages.values())
    assert abs(result.total_seconds - sum(result.stages.values())) < 1e-3
    assert result.device_used.startswith("cuda" if backend.is_gpu else "cpu")
    assert 0.55 < result.metrics["auc"] <= 1.0
    assert result.peak_host_mb > 0
    assert (result.peak_device_mb is not None) == backend.is_gpu
    return result
