"""The automatic-feature bodies of test_autofeatures_cpu.py on the GPU arm (cuDF), compared with pandas.

Skipped, with the probe's reason, where no GPU is usable.
"""

from __future__ import annotations

import pandas as pd
import pytest

from accel.backend import cpu_backend, gpu_backend
from tests import bodies, null_bodies, tables
from tests.conftest import requires_gpu
from tests.gpu_marks import needs_cuml

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.fixture(scope="module")
def backend():
    return gpu_backend()


def test_target_encoding_is_out_of_fold(backend):
    bodies.check_target_encoding_is_out_of_fold(backend)


def test_auto_smoothing_matches_scikit_learn(backend):
    bodies.check_auto_smoothing_matches_scikit_learn(backend)


@pytest.mark.parametrize("family", ["native", "trees", "linear", "distance"])
def test_table_features_equal_the_cpu_arm(backend, family):
    df = tables.customers(400)
    gpu_train, gpu_test, _ = bodies.check_table_features(backend, df, "churned", family)
    cpu_train, cpu_test, _ = bodies.check_table_features(cpu_backend(), df, "churned", family)
    pd.testing.assert_frame_equal(gpu_train, cpu_train, check_dtype=False, check_categorical=False, rtol=1e-5)
    pd.testing.assert_frame_equal(gpu_test, cpu_test, check_dtype=False, check_categorical=False, rtol=1e-5)


@pytest.mark.parametrize(
    "model",
    ["xgboost", *(pytest.param(m, marks=needs_cuml) for m in ("random_forest", "logistic_regression", "knn"))],
)
def test_models_on_the_gpu_arm_match_the_cpu_arm(backend, tmp_path, model):
    from accel.config import build_config
    from accel.runner import paired_run

    path = tmp_path / "c.csv"
    tables.customers(2000).to_csv(path, index=False)
    cfg = build_config({"data": str(path), "target": "churned", "model": model, "out": str(tmp_path / "r")}, {})
    record, _ = paired_run(cfg)
    assert record["arms"]["gpu"]["status"] == "ok", record["arms"]["gpu"]["reason"]
    assert record["arms"]["gpu"]["device_used"].startswith("cuda")
    assert record["parity"]["ok"], record["parity"]


def test_model_matrix_of_integer_and_boolean_columns_with_missing_values(backend):
    # cuDF's int64 and bool columns keep their nulls (a left join's columns on cuDF).
    null_bodies.check_matrix_of_nullable_columns(backend)


def test_one_hot_of_a_missing_category_is_all_zeros(backend):
    null_bodies.check_one_hot_of_missing_categories_is_zero(backend)


def test_linear_features_of_missing_categories_equal_the_cpu_arm(backend):
    gpu = null_bodies.check_linear_features_of_missing_categories(backend)
    cpu = null_bodies.check_linear_features_of_missing_categories(cpu_backend())
    pd.testing.assert_frame_equal(gpu, cpu, check_dtype=False, rtol=1e-6)


def test_numbers_with_words_on_the_arm(backend):
    bodies.check_numbers_with_words(backend)
