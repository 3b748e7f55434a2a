"""Run records: never overwritten, never half-written."""

from __future__ import annotations

import json

import pytest

from accel.errors import AccelError
from accel.record import ensure_writable, write_record


def test_records_are_never_overwritten(tmp_path):
    first = write_record(tmp_path, {"n": 1}, "20260101-000000-flights")
    second = write_record(tmp_path, {"n": 2}, "20260101-000000-flights")
    assert first != second
    assert first.name.endswith("-001.json") and second.name.endswith("-002.json")
    assert json.loads(first.read_text()) == {"n": 1}
    assert json.loads(second.read_text()) == {"n": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.name, second.name]), "no temp files left"


def test_nan_round_trips(tmp_path):
    path = write_record(tmp_path, {"speedup": float("nan")}, "x")
    value = json.loads(path.read_text())["speedup"]
    assert value != value  # NaN


def test_ensure_writable_refuses_a_path_below_a_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(AccelError, match="cannot write run records"):
        ensure_writable(blocker / "runs")


def test_unserialisable_record_leaves_nothing(tmp_path):
    class Weird:
        def __str__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_record(tmp_path, {"x": Weird()}, "x")
    assert list(tmp_path.iterdir()) == []
