"""The objective on the CPU arm (bodies shared with ``test_hpo_gpu.py``) and the search spaces."""

from __future__ import annotations

import pytest

from accel.backend import cpu_backend
from accel.config import SearchRange, build_config
from accel.errors import AccelError
from accel.hpo.space import SEARCH_SPACES, resolve_space
from accel.registry import MODELS
from tests import hpo_bodies


@pytest.fixture(scope="module")
def cpu():
    return cpu_backend()


def test_split_for_search(cpu, tmp_path):
    hpo_bodies.check_split_for_search(cpu, tmp_path)


def test_trials_store_time_and_memory(cpu, tmp_path):
    hpo_bodies.check_trials_store_time_and_memory(cpu, tmp_path)


def test_pruning_per_round(cpu, tmp_path):
    hpo_bodies.check_pruning_per_round(cpu, tmp_path)


def test_failing_trial_is_marked_and_study_goes_on(cpu, tmp_path):
    hpo_bodies.check_failing_trial_is_marked_and_study_goes_on(cpu, tmp_path)


def test_final_model_on_hold_out(cpu, tmp_path):
    hpo_bodies.check_final_model_on_hold_out(cpu, tmp_path)


# --------------------------------------------------------------------------- search spaces


def test_built_in_spaces_cover_each_model():
    assert set(SEARCH_SPACES["xgboost"]) == {
        "learning_rate", "max_depth", "min_child_weight", "subsample", "colsample_bytree", "reg_lambda", "reg_alpha", "n_estimators",
    }  # fmt: skip
    assert SEARCH_SPACES["xgboost"]["learning_rate"].log
    assert set(SEARCH_SPACES["random_forest"]) == {"n_estimators", "max_depth", "max_features"}
    assert set(SEARCH_SPACES["logistic_regression"]) == {"C", "l1_ratio"}
    assert set(SEARCH_SPACES["linear_regression"]) == {"alpha", "l1_ratio"}
    assert set(SEARCH_SPACES["knn"]) == {"n_neighbors", "weights"}
    for model, space in SEARCH_SPACES.items():
        assert set(space) <= set(MODELS[model].known_parameters()), model


def test_overrides_keep_the_parameter_type():
    space = resolve_space(
        "xgboost",
        {
            "max_depth": SearchRange(low=3, high=6),
            "learning_rate": SearchRange(low=0.05, high=0.2, log=True),
            "subsample": [0.7, 0.9],
            "reg_alpha": 0.0,
            "max_bin": SearchRange(low=64, high=256, step=64),
        },
    )
    assert (space["max_depth"].kind, space["max_depth"].low, space["max_depth"].high) == ("int", 3, 6)
    assert space["learning_rate"].kind == "float" and space["learning_rate"].log
    assert space["subsample"].kind == "categorical" and space["subsample"].choices == (0.7, 0.9)
    assert space["reg_alpha"].kind == "fixed" and space["reg_alpha"].value == 0.0
    assert space["max_bin"].kind == "int" and space["max_bin"].step == 64  # a setting without a built-in range
    assert space["colsample_bytree"] == SEARCH_SPACES["xgboost"]["colsample_bytree"]  # untouched


def test_unknown_parameter_in_an_override_names_it():
    with pytest.raises(
        AccelError, match=r"hpo\.search_space\.xgboost: unknown parameter 'learnin_rate' \(did you mean 'learning_rate'\?\)"
    ):
        build_config({"hpo": {"search_space": {"xgboost": {"learnin_rate": {"low": 0.1, "high": 0.2}}}}}, {})


@pytest.mark.parametrize(
    "entry, needle",
    [
        ({"low": 0.3, "high": 0.1}, "low <= high"),
        ({"low": 0.0, "high": 1.0, "log": True}, "log search range needs low > 0"),
        ({"low": 0.1}, "needs low and high"),
        ({"choices": []}, "cannot be empty"),
        ({"low": 0.1, "high": 0.2, "lowest": 0.0}, "unknown key"),
    ],
)
def test_bad_search_ranges_are_one_line_errors(entry, needle):
    with pytest.raises(AccelError, match=needle):
        build_config({"hpo": {"search_space": {"xgboost": {"learning_rate": entry}}}}, {})


def test_unknown_model_in_search_space():
    with pytest.raises(AccelError, match="hpo.search_space.xgbost"):
        build_config({"hpo": {"search_space": {"xgbost": {"max_depth": 3}}}}, {})


def test_a_search_is_given_its_cluster_by_its_caller():
    """hpo imports no cluster code: ``SearchRequest.connect`` opens the cluster the flags ask for."""
    from contextlib import contextmanager

    from accel.hpo.search import SearchRequest

    with SearchRequest().client("xgboost") as client:
        assert client is None  # no cluster asked for: nothing is opened
    asked = []

    @contextmanager
    def connect(request, model):
        asked.append((request.kind, request.address, request.workers, model))
        yield "client"

    with SearchRequest(scheduler="tcp://10.0.0.1:8786", connect=connect).client("xgboost") as client:
        assert client == "client"
    with SearchRequest(cluster="local", workers=2, connect=connect).client("random_forest") as client:
        pass
    assert asked == [("scheduler", "tcp://10.0.0.1:8786", None, "xgboost"), ("local", None, 2, "random_forest")]
    with pytest.raises(AccelError, match="needs a connect function"):
        SearchRequest(cluster="local").client("xgboost")
