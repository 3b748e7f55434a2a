"""Automatic features on the CPU arm; the same bodies run on the GPU in test_autofeatures_gpu.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accel.backend import cpu_backend
from tests import bodies, tables


@pytest.fixture(scope="module")
def backend():
    return cpu_backend()


def test_target_encoding_is_out_of_fold(backend):
    bodies.check_target_encoding_is_out_of_fold(backend)


def test_auto_smoothing_matches_scikit_learn(backend):
    bodies.check_auto_smoothing_matches_scikit_learn(backend)


@pytest.mark.parametrize("family", ["xgboost", "random_forest", "linear", "knn"])
def test_table_features(backend, family):
    X_train, X_test, report = bodies.check_table_features(backend, tables.customers(400), "churned", family)
    assert list(X_train.columns) == list(X_test.columns)
    if family == "xgboost":
        assert isinstance(X_train["plan"].dtype, pd.CategoricalDtype)
    if family in ("linear", "knn"):
        dense = X_train.select_dtypes("number")
        np.testing.assert_allclose(dense.mean().to_numpy(), 0.0, atol=1e-4)
        assert "plan==basic" in X_train.columns
    assert "city__te" in X_train.columns and "city__count" in X_train.columns


def test_statistics_come_from_training_rows_only(backend):
    # Changing the test rows' targets must not change any feature of any row.
    from accel.schema import make_plan

    df = tables.customers(400)
    plan = make_plan(df, "churned", seed=5)
    flipped = df.copy()
    test_rows = plan.row_positions[plan.test_pos]
    flipped.loc[test_rows, "churned"] = np.where(flipped.loc[test_rows, "churned"] == "yes", "no", "yes")
    a_train, a_test, _ = bodies.check_table_features(backend, df, "churned", "linear")
    b_train, b_test, _ = bodies.check_table_features(backend, flipped, "churned", "linear")
    pd.testing.assert_frame_equal(a_train, b_train)
    pd.testing.assert_frame_equal(a_test, b_test)
