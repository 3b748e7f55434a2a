"""Run records: never overwritten, never half-written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from accel.errors import AccelError
from accel.record import dumps, ensure_writable, load_record, record_stem, write_record


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


def test_a_records_run_id_is_its_file_name(tmp_path):
    record = {"run_id": None, "n": 1}
    first = write_record(tmp_path, record, record_stem("flights"))
    assert record["run_id"] == first.stem and json.loads(first.read_text())["run_id"] == first.stem
    second = write_record(tmp_path, {"run_id": None}, record_stem("flights"))
    assert json.loads(second.read_text())["run_id"] == second.stem != first.stem
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-flights-00[12]", first.stem), "one date style: the UTC date, then what"
    assert "run_id" not in json.loads(write_record(tmp_path, {"n": 2}, "x").read_text()), "only records that have one"


def test_a_name_taken_meanwhile_is_skipped(tmp_path, monkeypatch):
    """Another process takes the free name between the look and the write: the next one is used."""
    import accel.files

    real = accel.files.write_new

    def racing(path, *args, **kwargs):
        if path.name.endswith("-001.json"):
            path.write_text("{}")  # someone else's record, just now
        return real(path, *args, **kwargs)

    monkeypatch.setattr(accel.files, "write_new", racing)
    path = write_record(tmp_path, {"run_id": None}, "2026-01-01-flights")
    assert path.name == "2026-01-01-flights-002.json" and json.loads(path.read_text())["run_id"] == path.stem


def test_the_output_root_is_one_variable(monkeypatch, tmp_path):
    from accel.config import RunConfig
    from accel.record import OUT_ENV, output_root

    monkeypatch.delenv(OUT_ENV, raising=False)
    assert output_root() == Path("runs") and RunConfig().out == Path("runs")
    monkeypatch.setenv(OUT_ENV, str(tmp_path / "all"))
    assert output_root() == tmp_path / "all" and RunConfig().out == tmp_path / "all"
