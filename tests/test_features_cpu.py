"""Feature code on the CPU arm (pandas). The same bodies run on cuDF in test_features_gpu.py."""

from __future__ import annotations

import pytest

from accel.backend import cpu_backend
from tests import bodies


@pytest.fixture(scope="module")
def backend():
    return cpu_backend()


def test_left_join_keeps_order(backend):
    bodies.check_left_join_keeps_order(backend)


def test_group_stats_fit_on_train_only(backend):
    bodies.check_group_stats_fit_on_train_only(backend)


def test_categories_identical_across_splits(backend):
    bodies.check_categories_identical_across_splits(backend)


def test_flights_features(backend):
    X = bodies.check_flights_features(backend)
    # Same seed, same sample, same features: the data steps are deterministic.
    again = bodies.check_flights_features(backend)
    assert X.equals(again)


def test_left_join_refuses_a_right_side_that_duplicates_rows(backend):
    from accel.data.features import left_join

    xdf = backend.xdf
    left = xdf.DataFrame({"k": [1, 2]})
    right = xdf.DataFrame({"k": [1, 1], "v": [0, 1]})
    with pytest.raises(ValueError, match="not unique"):
        left_join(left, right, ["k"])


def test_flights_arm(backend):
    result = bodies.check_flights_arm(backend)
    assert result.threads["xgboost_nthread"] == backend.n_threads
    assert result.threads["blas"], "BLAS thread counts are recorded on the CPU arm"
