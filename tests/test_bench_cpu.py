"""The db-benchmark questions and the model pairs on the CPU arm, against independent references.

The GPU suite (test_bench_gpu.py) runs the same bodies on cuDF / cuML / XGBoost CUDA.
"""

from __future__ import annotations

import math

import pytest

from accel.backend import cpu_backend
from accel.bench import db as dbbench
from accel.bench.models import PAIRS
from accel.errors import AccelError
from tests import bench_bodies as bodies


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("db")


# Every question on 10,000 rows: the CSV with missing values in the slow tier.
@pytest.mark.parametrize("fmt,nas", [("parquet", 0), pytest.param("csv", 10, marks=pytest.mark.slow)])
def test_groupby_answers_equal_the_benchmark_pandas_solution(data_dir, fmt, nas):
    # With NAs (ids whose values vanish entirely, v columns NA by row) and without; both readers.
    path = bodies.make_groupby_file(data_dir, n=6000, k=10, nas=nas, fmt=fmt)
    bodies.check_groupby_equals_benchmark_solution(cpu_backend(), path)


@pytest.mark.parametrize("fmt", ["parquet", pytest.param("csv", marks=pytest.mark.slow)])
def test_join_answers_equal_a_numpy_reference(tmp_path, fmt):
    folder = bodies.make_join_dir(tmp_path / fmt, n=5000, fmt=fmt)
    answers = bodies.check_join_answers(cpu_backend(), folder)
    # The generator's key design: 90% of the left keys are found on the right.
    assert 0.8 < answers["q1"]["rows"] / 5000 < 1.0
    assert answers["q3"]["rows"] == 5000


@pytest.mark.slow  # every model pair fitted and scored (a forest, KNN on 1e4 rows): a minute on two cores
def test_models_fit_and_predict_with_sane_quality():
    results = bodies.check_model_pairs(cpu_backend(), list(PAIRS))
    assert len(results) >= 7
    rf = next(r for r in results if r["class"].endswith("RandomForestClassifier"))
    assert rf["params"]["n_jobs"] == cpu_backend().n_threads, "the CPU baseline uses every core it may"
    xgb = next(r for r in results if r["class"].endswith("XGBClassifier"))
    assert xgb["device_used"] == "cpu" and xgb["params"]["n_jobs"] == cpu_backend().n_threads
    # Every pair reads back where it ran, the scikit-learn ones as well as XGBoost.
    assert {r["device_used"] for r in results} == {"cpu"}


def test_questions_are_named_as_the_benchmark():
    assert list(dbbench.GROUPBY_QUESTIONS) == [f"q{i}" for i in range(1, 11)]
    assert list(dbbench.JOIN_QUESTIONS) == [f"q{i}" for i in range(1, 6)]
    assert dbbench.GROUPBY_QUESTIONS["q6"].title == "median v3 sd v3 by id4 id5"
    picked = dbbench.select_questions(dbbench.SUITES["groupby"], "q3, q1")
    assert [q.name for q in picked] == ["q1", "q3"]
    with pytest.raises(AccelError, match="unknown groupby question 'q11'.*q1, q2"):
        dbbench.select_questions(dbbench.SUITES["groupby"], "q1,q11")


def test_answer_comparison():
    a = {"status": "ok", "rows": 10, "checksum": [100.0, 2.0]}
    assert dbbench.compare_answers(a, {**a, "checksum": [100.05, 2.0]})["agree"] is True  # 5e-4
    assert dbbench.compare_answers(a, {**a, "checksum": [100.3, 2.0]})["agree"] is False  # 3e-3
    assert dbbench.compare_answers(a, {**a, "rows": 11})["agree"] is False
    nan = {"status": "ok", "rows": 1, "checksum": [math.nan]}
    assert dbbench.compare_answers(nan, dict(nan))["agree"] is True
    assert dbbench.compare_answers(a, {"status": "skipped"})["agree"] is None


def test_missing_columns_are_named(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("id1,id2,id4,id5,id6,v1,v3\nid001,id001,1,1,1,1,1.5\n")
    with pytest.raises(AccelError, match="lacks the groupby benchmark's columns id3, v2"):
        dbbench.check_columns(dbbench.SUITES["groupby"], {"x": path})
