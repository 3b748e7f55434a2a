"""Run records: never overwritten, never half-written."""

from __future__ import annotations

import json

import pytest

from accel.errors import AccelError
from accel.record import dumps, ensure_writable, load_record, write_record


def test_records_are_never_overwritten(tmp_path):
    first = write_record(tmp_path, {"n": 1}, "20260101-000000-flights")
    second = write_record(tmp_path, {"n": 2}, "20260101-000000-flights")
    assert first != second
    assert first.name.endswith("-001.json") and second.name.endswith("-002.json")
    assert json.loads(first.read_text()) == {"n": 1}
    assert json.loads(second.read_text()) == {"n": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.name, second.name]), "no temp files left"


def test_nan_is_written_as_null_with_its_reason_and_read_back_as_nan(tmp_path):
    path = write_record(tmp_path, {"speedup": float("nan"), "rows": [1.0, float("inf")]}, "x")
    text = path.read_text()

    def refuse(constant):
        raise AssertionError(f"bare {constant} in a record")

    strict = json.loads(text, parse_constant=refuse)
    assert strict["speedup"] is None and strict["rows"] == [1.0, None]
    assert strict["nulls"] == [
        {"path": "/speedup", "value": "NaN", "reason": "not a number"},
        {"path": "/rows/1", "value": "Infinity", "reason": "infinite"},
    ]
    back = load_record(path)
    assert back["speedup"] != back["speedup"] and back["rows"] == [1.0, float("inf")]


def test_old_records_with_bare_nan_are_still_read(tmp_path):
    path = tmp_path / "old.json"
    path.write_text('{"speedup": {"total": NaN}, "x": 1}')
    back = load_record(path)
    assert back["x"] == 1 and back["speedup"]["total"] != back["speedup"]["total"]


def test_speedups_not_measured_say_which_arm_did_not_run():
    record = {"arms": {"gpu": {"status": "skipped"}, "cpu": {"status": "ok"}}, "speedup": {"total": float("nan")}}
    strict = json.loads(dumps(record))
    assert strict["speedup"]["total"] is None
    assert strict["nulls"] == [{"path": "/speedup/total", "value": "NaN", "reason": "not measured: the gpu arm was skipped"}]


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
