"""Feature code on the CPU arm (pandas). The same bodies run on cuDF in test_features_gpu.py."""

from __future__ import annotations

import numpy as np
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


def test_finish_features_on_untidy_rows(backend):
    bodies.check_finish_features_on_untidy_rows(backend)


def test_partial_fit_on_untidy_rows(backend):
    bodies.check_partial_fit_on_untidy_rows(backend)


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


def test_categorical_codes_through_arrow_match_pandas():
    import pandas as pd

    from accel import _compat

    rng = np.random.default_rng(0)
    values = np.array([f"v{i}" for i in range(50)], dtype=object)[rng.integers(0, 50, 5000)]
    values[::17] = None
    s = pd.Series(values, dtype="str")
    categories = sorted({f"v{i}" for i in range(45)} | {"unused"})  # v45..v49 unseen: missing
    fast = _compat.as_categorical(pd, s, categories)
    slow = s.where(s.isin(categories)).astype(pd.CategoricalDtype(categories))
    assert list(fast.cat.categories) == categories
    np.testing.assert_array_equal(fast.cat.codes.to_numpy(), slow.cat.codes.to_numpy())
    assert _compat.as_categorical(pd, fast, categories) is fast  # cast already: kept as it is
    numbers = pd.Series([1.0, 2.0, np.nan, 7.0, 2.0])
    codes = _compat.as_categorical(pd, numbers, [1.0, 2.0]).cat.codes.tolist()
    assert codes == [0, 1, -1, -1, 1]


def test_frame_matrix_converts_each_column_once_into_the_matrix():
    import pandas as pd

    from accel.precision import frame_matrix

    frame = pd.DataFrame({
        "a": np.array([1.5, np.nan, 3.0]),
        "b": pd.Categorical(["x", None, "y"], categories=["x", "y"]),
        "c": np.array([1, 2, 3], dtype=np.int16),
        "d": np.array([0.1, 0.2, 0.3], dtype=np.float32),
    })  # fmt: skip
    out = np.full((3, 4), -9.0, dtype=np.float32)
    assert frame_matrix(frame, ["b"], out=out) is out
    expected = np.array([[1.5, 0, 1, 0.1], [np.nan, np.nan, 2, 0.2], [3, 1, 3, 0.3]], dtype=np.float32)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(frame_matrix(frame, ["b"]), expected)
