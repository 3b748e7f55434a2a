"""Early stopping's checks on the GPU arm (XGBoost on CUDA): the GPU arm searches, the CPU arm
trains the rounds it found. Skipped, with the probe's reason, where no GPU is usable."""

from __future__ import annotations

import pytest

from accel.backend import cpu_backend, gpu_backend
from tests import early_stopping_bodies as bodies
from tests.conftest import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.fixture(scope="module")
def backend():
    return gpu_backend()


def test_rounds_found_by_the_gpu_arm_are_trained_by_the_cpu_arm(backend):
    decided = bodies.check_rounds_found_once_and_trained_by_every_arm(backend, cpu_backend())
    assert decided["decided_by"] == "gpu"


def test_a_search_that_never_stops_trains_the_cap(backend):
    bodies.check_a_search_that_never_stops_trains_the_cap(backend)


def test_too_few_rows_train_every_round(backend):
    bodies.check_too_few_rows_train_every_round(backend)
