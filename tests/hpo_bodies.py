"""Test bodies for the search shared by the CPU and GPU suites (``test_hpo_cpu.py``, ``test_hpo_gpu.py``).

Each takes a :class:`~accel.backend.Backend` and checks a property of the objective that must
hold on both arms: the split, a trial's stored time and memory, pruning per boosting round,
a failing trial marked failed with its reason, and the final model on the hold-out.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from accel import _compat
from accel.backend import Backend
from accel.config import build_config
from accel.hpo.search import Objective, build_context, train_and_score
from accel.hpo.space import resolve_space

#: A small flights search: 3,000 flights, shallow trees, few rounds.
SMALL = {
    "workflow": "flights",
    "rows": 3000,
    "xgboost": {"n_estimators": 30, "max_depth": 4},
    "hpo": {
        "subset": 0.5,
        "trial_rounds": 0.5,
        "search_space": {"xgboost": {"n_estimators": {"low": 20, "high": 60}, "max_depth": {"low": 2, "high": 5}}},
    },
}


def small_config(out: Path, **hpo):
    values = {**SMALL, "hpo": {**SMALL["hpo"], **hpo}}
    return build_config(values, {"out": out})


_CONTEXTS: dict = {}


def small_context(backend: Backend, out: Path):
    """The search context of :data:`SMALL` on ``backend``, built once per arm (features take a while)."""
    if backend.name not in _CONTEXTS:
        _CONTEXTS[backend.name] = build_context(small_config(out), backend)[0]
    return _CONTEXTS[backend.name]


def check_split_for_search(backend: Backend, out: Path) -> None:
    """Fitting + validation rows are the training rows; the subset is a stratified share of the fitting rows."""
    ctx = small_context(backend, out)
    rows = ctx.data.rows
    assert rows["fit"] + rows["validation"] == rows["train"]
    assert rows["subset"] == round(rows["fit"] * 0.5)
    parts = ctx.data.parts
    assert rows["test"] == len(parts["test"][1]) and rows["train"] == len(parts["train"][1])
    y_fit, y_sub, y_val = (_compat.to_numpy(parts[name][1]).astype(float) for name in ("fit", "subset", "valid"))
    # Stratified: the class shares agree to within one row's worth.
    assert abs(y_sub.mean() - y_fit.mean()) <= 1.5 / len(y_sub)
    assert abs(y_val.mean() - y_fit.mean()) <= 1.5 / len(y_val) + 1.5 / len(y_fit)


def _study(pruner=None):
    import optuna

    return optuna.create_study(
        direction="maximize", sampler=optuna.samplers.TPESampler(seed=0), pruner=pruner or optuna.pruners.NopPruner()
    )


def check_trials_store_time_and_memory(backend: Backend, out: Path) -> None:
    """Completed trials train on the subset with a share of the rounds and store seconds, memory, rows, device."""
    ctx = small_context(backend, out)
    study = _study()
    study.optimize(Objective(ctx), n_trials=3)
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3
    for t in study.trials:
        a = t.user_attrs
        assert a["seconds"] > 0 and a["peak_host_mb"] > 50
        assert (a["peak_device_mb"] is not None) == backend.is_gpu
        assert a["rows"] == ctx.data.rows["subset"]
        assert 1 <= a["rounds"] <= max(10, int(np.ceil(t.params["n_estimators"] * 0.5)))
        assert a["device_used"].startswith("cuda" if backend.is_gpu else "cpu")
        assert a["arm"] == backend.name
        assert t.value == a["metrics"]["auc"] and 0.5 < t.value < 1
        # Timed as accel run's stages by the one StageTimer (on the GPU arm: device synchronised, RMM scopes).
        assert set(a["stages"]) == {"to_device", "train", "predict"} and sum(a["stages"].values()) <= a["seconds"] + 1e-3


def check_pruning_per_round(backend: Backend, out: Path) -> None:
    """XGBoost reports the validation AUC every round; a pruner that wants 0.999 stops the trial after its warm-up."""
    import optuna

    ctx = small_context(backend, out)
    study = _study(optuna.pruners.ThresholdPruner(lower=0.999, n_warmup_steps=3))
    study.optimize(Objective(ctx), n_trials=2)
    for t in study.trials:
        assert t.state.name == "PRUNED"
        assert t.last_step == 3 and sorted(t.intermediate_values) == [0, 1, 2, 3]
        assert t.user_attrs["seconds"] > 0 and t.user_attrs["peak_host_mb"] > 50


def check_failing_trial_is_marked_and_study_goes_on(backend: Backend, out: Path) -> None:
    """A trial with a value the model's settings refuse (subsample 1.5) fails with the reason; the next trial still runs."""
    import optuna

    from accel.config import SearchRange

    ctx = small_context(backend, out)
    space = resolve_space("xgboost", {"subsample": SearchRange(choices=[1.5, 0.8]), "n_estimators": 20})
    ctx = dataclasses.replace(ctx, space=space)
    study = _study()
    study.enqueue_trial({"subsample": 1.5})
    study.enqueue_trial({"subsample": 0.8})
    study.optimize(Objective(ctx), n_trials=2, catch=(Exception,))
    failed, complete = study.trials
    assert failed.state == optuna.trial.TrialState.FAIL
    assert failed.user_attrs["error"].startswith("ValidationError: subsample: Input should be less than or equal to 1")
    assert complete.state == optuna.trial.TrialState.COMPLETE and complete.params["subsample"] == 0.8


def check_final_model_on_hold_out(backend: Backend, out: Path) -> None:
    """Without validation the model boosts exactly n_estimators rounds on all training rows."""
    ctx = small_context(backend, out)
    d = ctx.data
    m = train_and_score(ctx, {**ctx.base_params, "n_estimators": 25}, "train")
    assert m.rounds == 25 and m.rows == d.rows["train"]
    assert 0.55 < m.metrics["auc"] < 1 and m.seconds > 0
    assert set(m.stages) == {"to_device", "train", "predict"} and m.stages["train"] > 0
