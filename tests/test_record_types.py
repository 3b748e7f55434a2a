"""Typed records: every committed record reads through the one reader; a record of the wrong shape is
refused in one line naming what is wrong; old schema versions are upgraded."""

from __future__ import annotations

import json
import math

import pytest

from accel import record as rec
from tests.conftest import ROOT

CORPUS = sorted((ROOT / "benchmarks" / "results").glob("*.json"))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_committed_record_reads_as_its_typed_class(path):
    raw = rec.load_record(path)
    typed = rec.read_record(path)
    assert typed.schema_version == rec.SCHEMA_VERSION
    assert typed.kind == rec.kind_of(raw), "the kind the record says, or the one inferred for an old record"
    assert isinstance(typed, rec.RECORD_CLASSES[typed.kind])
    if typed.kind == "bench":
        assert type(typed) is rec.BENCHMARKS.get(raw["benchmark"], rec.BenchRecord)
    summary = typed.summary()
    assert summary.data and isinstance(summary.speedup, float)
    # Nothing the classes do not name is lost: the typed record dumps back to what the file holds.
    dumped = typed.model_dump(exclude_unset=True)
    assert {k for k in raw if k not in ("schema_version", "kind")} <= set(dumped)


def test_the_corpus_holds_every_schema_version_the_reader_upgrades():
    versions = {rec.load_record(p).get("schema_version") for p in CORPUS}
    assert {None, 1, rec.SCHEMA_VERSION} <= versions


def test_the_summary_of_a_measured_run_is_its_recorded_figures():
    [path] = [p for p in CORPUS if p.name == "2026-11-30-flights-run-nvidia-h200-001.json"]
    raw, typed = rec.load_record(path), rec.read_record(path)
    assert isinstance(typed, rec.RunRecord) and typed.schema_version == rec.SCHEMA_VERSION and raw["schema_version"] == 1
    summary = typed.summary()
    assert summary.speedup == raw["speedup"]["total"] and summary.parity == "agree"
    metric = raw["parity"]["metric"]
    assert summary.metrics == {metric: {a: raw["arms"][a]["metrics"][metric] for a in ("gpu", "cpu")}}
    rows = raw["arms"]["gpu"]["rows"]
    assert summary.rows == f"{rows['train'] + rows['test']:,}"
    assert summary.devices.startswith(raw["arms"]["gpu"]["device_name"])


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ({"workflow": "x", "arms": ["not", "a", "mapping"], "speedup": 3}, "not the shape of a run record (arms:"),
        ({"benchmark": "models", "models": [1, 2, 3]}, "not the shape of a bench record (models.0:"),
        ({"benchmark": "scaling", "rows": "many"}, "not the shape of a scaling record (rows:"),
        ({"schema_version": 3, "kind": "hpo", "trials": {"complete": "all"}}, "(trials.complete:"),
        ({"schema_version": 99, "kind": "run"}, "written by a newer accel (schema_version 99"),
        ({"something": "else"}, "not a run record or benchmark result"),
        ([1, 2], "not a run record or benchmark result"),
    ],
)
def test_a_record_of_the_wrong_shape_is_refused_in_one_line(tmp_path, content, needle):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    with pytest.raises(rec.RecordError) as caught:
        rec.read_record(path)
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_a_file_that_is_not_json_is_refused_in_one_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(b"\xff\xfe{")
    with pytest.raises(rec.RecordError, match=r"not readable JSON \(UnicodeDecodeError\)"):
        rec.read_record(path)


def test_upgrade_gives_an_old_record_its_kind_and_this_version():
    old = {"benchmark": "experiments", "rows": [{"name": "a", "metric": 0.8, "seconds": 1.0}]}
    assert rec.upgrade(old) == {**old, "schema_version": rec.SCHEMA_VERSION, "kind": "experiments"}
    typed = rec.parse_record(old)
    assert isinstance(typed, rec.ExperimentsRecord) and typed.rows[0].metric == 0.8 and not typed.measures
    assert rec.parse_record({"schema_version": 1, "workflow": "flights", "arms": {}}).kind == "run"
    with pytest.raises(rec.RecordError, match="not a run record"):  # a record of this version is never guessed at
        rec.upgrade({"schema_version": rec.SCHEMA_VERSION, "workflow": "flights", "arms": {}})


def test_upgrade_takes_a_run_records_encoding_probe_out_of_its_planning():
    """Up to version 3 the probe was part of planning; it is read as the wall part of its own it is now."""
    old = {
        "schema_version": 3, "kind": "run", "workflow": "table", "arms": {},
        "data": {"planning_seconds": {"read_on_host": 0.5, "schema_inference": 0.25, "encoding_probe": 2.0}},
        "wall": {"parts": {"start_up": 1.0, "planning": 3.0}, "planning": {"total": 3.0, "read_on_host": 0.5,
                 "schema_inference": 0.25, "encoding_probe": 2.0}},
    }  # fmt: skip
    new = rec.upgrade(old)
    assert new["wall"]["parts"] == {"start_up": 1.0, "planning": 1.0, "encoding_probe": 2.0}
    assert new["wall"]["planning"] == {"total": 1.0, "read_on_host": 0.5, "schema_inference": 0.25}
    assert new["data"] == {"planning_seconds": {"read_on_host": 0.5, "schema_inference": 0.25}, "encoding_probe_seconds": 2.0}
    assert old["wall"]["planning"]["encoding_probe"] == 2.0  # the record read is left as it was
    flights = {**old, "data": {}, "wall": {"parts": {"planning": 0.1}, "planning": {"total": 0.1}}}
    assert rec.upgrade(flights)["wall"]["parts"] == {"planning": 0.1, "encoding_probe": 0.0}


def test_a_written_record_reads_back_typed_with_its_non_finite_values(tmp_path):
    record = {
        **rec.record_head("compare"),
        "arms": {"cpu": {"status": "ok", "cold_seconds": 2.0}},
        "speedup": {"wall_cold": math.nan},
    }
    path = rec.write_record(tmp_path, record, "compare")
    typed = rec.read_record(path)
    assert isinstance(typed, rec.CompareRecord) and typed.run_id == path.stem
    assert typed.arms["cpu"].ok and typed.arms["cpu"].cold_seconds == 2.0 and math.isnan(typed.summary().speedup)


def test_report_and_experiments_set_aside_a_record_of_the_wrong_shape_naming_the_field(tmp_path, capsys):
    from accel.cli.main import main
    from accel.hpo.experiments import collect as experiments
    from accel.report.html import collect

    [run] = [p for p in CORPUS if p.name == "2026-11-30-flights-run-nvidia-h200-001.json"]
    (tmp_path / run.name).write_text(run.read_text())
    (tmp_path / "bad-run.json").write_text(json.dumps({"workflow": "x", "arms": {"cpu": {"stages": [1, 2]}}}))
    (tmp_path / "newer.json").write_text(json.dumps({"schema_version": 99, "kind": "run"}))
    (tmp_path / "other.json").write_text(json.dumps({"something": "else"}))
    found = collect(tmp_path)
    assert [e.path.name for e in found.entries] == [run.name]
    why = {p.name: reason for p, reason in found.ignored}
    assert why["bad-run.json"].startswith("not the shape of a run record (arms.cpu.stages: Input should be a valid dictionary")
    assert (
        why["newer.json"].startswith("written by a newer accel") and why["other.json"] == "not a run record or benchmark result"
    )
    rows, notes = experiments(tmp_path)
    assert {r.arm for r in rows} == {"gpu", "cpu"}
    assert [n for n in notes if "bad-run.json" in n] == [f"skipped {tmp_path / 'bad-run.json'}: {why['bad-run.json']}"]
    assert not [n for n in notes if "other.json" in n], "JSON that is no record is not an experiment"
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    assert "bad-run.json (not the shape of a run record (arms.cpu.stages:" in out and "Traceback" not in out


def test_a_metric_written_as_a_word_is_set_aside_and_named_when_nothing_else_is_found(tmp_path, capsys):
    """A run whose AUC is ``"high"`` is no result: with nothing else there, the one-line error says
    which file was set aside and why."""
    from accel.cli.main import main

    [run] = [p for p in CORPUS if p.name == "2026-11-30-flights-run-nvidia-h200-001.json"]
    raw = json.loads(run.read_text())
    raw["arms"]["cpu"]["metrics"]["auc"] = "high"
    (tmp_path / "worded.json").write_text(json.dumps(raw))
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r.html")]) == 2
    assert main(["experiments", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("accel: error: ") for line in err), err
    assert all("worded.json" in line and "arms.cpu.metrics.auc" in line for line in err), err
    assert not (tmp_path / "r.html").exists()
