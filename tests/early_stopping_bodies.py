"""Early stopping's checks, shared by the CPU arm (test_early_stopping.py) and the GPU arm (test_early_stopping_gpu.py)."""

from __future__ import annotations

import numpy as np

from accel.backend import Backend
from accel.early_stopping import EarlyStopping
from accel.models import XGBoostModel, XGBoostSettings
from accel.precision import plan_for_frames, store_frame
from accel.workflows import FlightsWorkflow, WorkflowSettings


def flights_matrices(backend: Backend, rows: int = 6000, seed: int = 3) -> tuple:
    """The flights workflow's stored training and test matrices and targets on ``backend``."""
    workflow = FlightsWorkflow(WorkflowSettings(rows=rows, seed=seed))
    prepared = workflow.features(backend, workflow.load(backend))
    plan = plan_for_frames("fp32", [prepared.X_train], prepared.categorical)
    X_train = store_frame(backend, prepared.X_train, prepared.categorical, plan, 1 << 30)
    X_test = store_frame(backend, prepared.X_test, prepared.categorical, plan, 1 << 30)
    return X_train, prepared.y_train, X_test, prepared.y_test


def check_rounds_found_once_and_trained_by_every_arm(first: Backend, second: Backend) -> dict:
    """Two arms sharing one :class:`EarlyStopping`: the first searches (once), both train the
    rounds found on all the training rows, and predict with every tree they trained."""
    es = EarlyStopping(seed=3)
    params = XGBoostSettings(n_estimators=300, max_depth=6)
    boosters = {}
    for backend in (first, second):
        model = XGBoostModel(params, task="binary", seed=3, early_stopping=es)
        X_train, y_train, X_test, _ = flights_matrices(backend)
        dtrain = model.to_device(backend, X_train, y_train, 1 << 30)
        searched = model.search_rounds(backend, X_train, y_train, 1 << 30)
        assert searched == (backend is first), "only the first arm searches"
        booster = model.fit(backend, dtrain)
        assert booster.attr("best_iteration") is None, "the final model has no early-stopping state: all its trees predict"
        assert int(booster.num_boosted_rounds()) == es.decided["rounds"]
        # The final model trained on all the training rows, the validation part included.
        assert int(dtrain.num_row()) == X_train.n_rows
        boosters[backend.name] = booster
    decided = es.decided
    assert decided["decided_by"] == first.name and decided["searched"] >= decided["rounds"]
    assert decided["searched"] == min(decided["rounds"] + es.patience, 300) or decided["rounds"] == 300
    assert es.validation_rows == len(es.positions(X_train.n_rows)) > 0
    return decided


def check_a_search_that_never_stops_trains_the_cap(backend: Backend) -> None:
    """Still improving at ``n_estimators``: every arm trains ``n_estimators`` (the model without early stopping)."""
    es = EarlyStopping(seed=3)
    model = XGBoostModel(XGBoostSettings(n_estimators=8, max_depth=4), task="binary", seed=3, early_stopping=es)
    X_train, y_train, _, _ = flights_matrices(backend, rows=3000)
    model.search_rounds(backend, X_train, y_train, 1 << 30)
    assert es.decided["searched"] == 8 and es.rounds(8) == 8


def check_too_few_rows_train_every_round(backend: Backend) -> None:
    """No validation part of 100 rows: no search, every round trained, and the record says why."""
    es = EarlyStopping(seed=3)
    model = XGBoostModel(XGBoostSettings(n_estimators=7, max_depth=3), task="binary", seed=3, early_stopping=es)
    X_train, y_train, _, _ = flights_matrices(backend, rows=500)
    assert model.search_rounds(backend, X_train, y_train, 1 << 30) is False
    assert es.rounds(7) == 7 and "too few" in es.describe()["reason"] and es.describe()["used"] is False
    assert int(model.fit(backend, model.to_device(backend, X_train, y_train, 1 << 30)).num_boosted_rounds()) == 7


def same_rows(a: EarlyStopping, b: EarlyStopping, n: int) -> bool:
    return bool(np.array_equal(a.positions(n), b.positions(n)))
