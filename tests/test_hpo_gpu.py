"""The objective on the GPU arm: the same bodies as ``test_hpo_cpu.py``, on cuDF and XGBoost CUDA."""

from __future__ import annotations

import pytest

from tests import hpo_bodies
from tests.conftest import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]

# The GPU test machine's image has no Optuna: its wheels (optuna, optuna-integration, sqlalchemy,
# alembic, colorlog) must be carried there like XGBoost's, or these tests say why they skip.
pytest.importorskip("optuna", reason="optuna is not installed here (carry its wheels to the GPU machine)")
pytest.importorskip("optuna_integration", reason="optuna-integration is not installed here")


@pytest.fixture(scope="module")
def gpu():
    from accel.backend import gpu_backend

    return gpu_backend()


def test_split_for_search(gpu, tmp_path):
    hpo_bodies.check_split_for_search(gpu, tmp_path)


def test_trials_store_time_and_memory(gpu, tmp_path):
    hpo_bodies.check_trials_store_time_and_memory(gpu, tmp_path)


def test_pruning_per_round(gpu, tmp_path):
    hpo_bodies.check_pruning_per_round(gpu, tmp_path)


def test_failing_trial_is_marked_and_study_goes_on(gpu, tmp_path):
    hpo_bodies.check_failing_trial_is_marked_and_study_goes_on(gpu, tmp_path)


def test_final_model_on_hold_out(gpu, tmp_path):
    hpo_bodies.check_final_model_on_hold_out(gpu, tmp_path)
