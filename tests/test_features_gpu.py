"""The feature and workflow bodies of test_features_cpu.py, on the GPU arm (cuDF, CuPy, XGBoost CUDA).

Skipped, with the probe's reason, where no GPU is usable.
"""

from __future__ import annotations

import pandas as pd
import pytest

from accel.backend import cpu_backend, gpu_backend
from tests import bodies
from tests.conftest import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.fixture(scope="module")
def backend():
    return gpu_backend()


def test_left_join_keeps_order(backend):
    bodies.check_left_join_keeps_order(backend)


def test_group_stats_fit_on_train_only(backend):
    bodies.check_group_stats_fit_on_train_only(backend)


def test_categories_identical_across_splits(backend):
    bodies.check_categories_identical_across_splits(backend)


def test_flights_features_equal_the_cpu_arm(backend):
    gpu = bodies.check_flights_features(backend)
    cpu = bodies.check_flights_features(cpu_backend())
    pd.testing.assert_frame_equal(gpu, cpu, check_dtype=False, check_categorical=False, rtol=1e-9)


def test_flights_arm_and_parity(backend):
    gpu = bodies.check_flights_arm(backend)
    cpu = bodies.check_flights_arm(cpu_backend())
    assert abs(gpu.metrics["auc"] - cpu.metrics["auc"]) <= 0.01
    assert gpu.device_name
