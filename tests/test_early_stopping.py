"""Early stopping: the validation part's size, its rows, the rounds found once and trained by every arm (CPU arm)."""

from __future__ import annotations

import pytest

from accel.backend import cpu_backend
from accel.early_stopping import MIN_VALIDATION_ROWS, VALIDATION_CAP, VALIDATION_FLOOR, EarlyStopping, validation_size
from tests import early_stopping_bodies as bodies


@pytest.fixture(scope="module")
def backend():
    return cpu_backend()


@pytest.mark.parametrize(
    ("n_train", "expected"),
    [
        (300, 0),  # a quarter is 75 rows: below the least a validation part may hold
        (400, 100),  # a quarter, up to the floor
        (2_000, 500),
        (8_000, VALIDATION_FLOOR),  # 10% is 800: the floor
        (50_000, 5_000),  # 10%
        (2_000_000, VALIDATION_CAP),  # the cap
    ],
)
def test_validation_size(n_train, expected):
    assert validation_size(n_train) == expected
    assert expected == 0 or MIN_VALIDATION_ROWS <= expected <= n_train // 4


def test_validation_rows_come_from_the_seed_and_are_the_same_on_every_arm():
    a, b, other = EarlyStopping(seed=7), EarlyStopping(seed=7), EarlyStopping(seed=8)
    positions = a.positions(10_000)
    assert bodies.same_rows(a, b, 10_000) and not bodies.same_rows(a, other, 10_000)
    assert list(positions) == sorted(set(positions.tolist())) and len(positions) == VALIDATION_FLOOR
    assert a.mask(10_000).sum() == len(positions)


def test_rounds_found_once_and_trained_by_every_arm(backend):
    decided = bodies.check_rounds_found_once_and_trained_by_every_arm(backend, cpu_backend())
    assert decided["metric"] == "auc" and decided["search_seconds"] > 0


def test_a_search_that_never_stops_trains_the_cap(backend):
    bodies.check_a_search_that_never_stops_trains_the_cap(backend)


def test_too_few_rows_train_every_round(backend):
    bodies.check_too_few_rows_train_every_round(backend)


def test_the_run_record_states_the_rounds(tmp_path):
    """accel run: the search shows as it runs (outside the stages), the record and the terminal say what it found."""
    from accel.cli.main import main
    from tests.conftest import read_json, records_in

    assert main(["run", "flights", "--rows", "4000", "--device", "cpu", "--out", str(tmp_path)]) == 0
    record = read_json(records_in(tmp_path)[0])
    es = record["model"]["early_stopping"]
    assert es["used"] is True and es["decided_by"] == "cpu" and 1 <= es["rounds"] <= 300
    assert es["validation"]["rows"] == validation_size(record["arms"]["cpu"]["rows"]["train"])
    assert "rounds_search" not in record["arms"]["cpu"]["stages"], "the search is no stage"
    assert record["wall"]["arms"]["cpu"]["rounds_search"] == es["search_seconds"]
