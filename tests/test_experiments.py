"""``accel experiments``: every run and study as one row, the Pareto fronts, the plot and the result JSON."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from accel.cli.main import main
from accel.hpo.experiments import collect, pareto_mask
from accel.hpo.search import SearchRequest, run_search
from accel.runner import paired_run
from tests.conftest import records_in
from tests.hpo_bodies import small_config


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_pareto_mask_higher_is_better():
    metrics = [0.80, 0.82, 0.79, 0.78, 0.82, 0.90]
    costs = [10.0, 20.0, 5.0, 30.0, 25.0, None]
    assert pareto_mask(metrics, costs, True) == [True, True, True, False, False, False]


def test_pareto_mask_lower_is_better_and_ties():
    # RMSE: lower is better. Two identical points do not dominate each other.
    assert pareto_mask([3.0, 2.0, 2.0, 4.0], [1.0, 2.0, 2.0, 0.5], False) == [True, True, True, True]
    assert pareto_mask([3.0, 2.0, 2.5], [1.0, 1.0, 3.0], False) == [False, True, False]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A real run record and a real (small) study in one folder, with the same data and split."""
    out = tmp_path_factory.mktemp("experiments")
    config = small_config(out, trials=3, top=1)
    run_record, _ = paired_run(config.model_copy(update={"device": "cpu"}))
    hpo_record, hpo_path = run_search(config, SearchRequest(), log=lambda line: None)
    return out, run_record, hpo_record, hpo_path


def test_rows_for_runs_and_studies(folder):
    out, run_record, hpo_record, _ = folder
    rows, _ = collect(out)
    by_name = {r.name: r for r in rows}
    study = hpo_record["study"]["name"]
    run_rows = [r for r in rows if r.name.startswith("run ")]
    assert len(run_rows) == 1 and run_rows[0].arm == "cpu"  # the GPU arm did not run: no row for it
    default, tuned = by_name[f"{study}: default"], by_name[f"{study}: tuned (trial {hpo_record['final']['trial']})"]
    # The same model on the same rows: accel run and the study's baseline agree.
    assert run_rows[0].metric == pytest.approx(default.metric, abs=1e-9)
    assert tuned.metric == hpo_record["final"]["metric"] and tuned.seconds == hpo_record["final"]["seconds"]
    assert {r.group for r in (run_rows[0], default, tuned)} == {default.group}
    for r in rows:
        assert r.workflow == "flights" and r.precision == "fp32" and r.batch_rows == "all" and r.device == "cpu"
        assert r.model.startswith("xgboost rounds=")
    group = [run_rows[0], default, tuned]
    expected = pareto_mask([r.metric for r in group], [r.seconds for r in group], True)
    assert [r.pareto for r in group] == expected and any(expected)


def test_trials_as_rows(folder):
    out, _, hpo_record, _ = folder
    rows, _ = collect(out, include_trials=True)
    trials = [r for r in rows if ": trial " in r.name]
    assert len(trials) == hpo_record["trials"]["complete"]
    assert all(r.evaluated_on == "validation (subset trial)" and r.seconds > 0 for r in trials)


def test_precision_and_batch_rows_of_a_run(tmp_path):
    """A real float16 run in batches of 1,000 rows shows both in its row."""
    config = small_config(tmp_path).model_copy(update={"device": "cpu", "precision": "fp16", "batch_rows": 1000})
    paired_run(config)
    [row] = collect(tmp_path)[0]
    assert (row.precision, row.batch_rows) == ("fp16", "1000")


def test_hpo_record_without_its_storage(folder, tmp_path):
    _, _, hpo_record, hpo_path = folder
    shutil.copy(hpo_path, tmp_path)
    rows, _ = collect(tmp_path)
    assert sorted(r.name.rsplit(": ", 1)[1] for r in rows) == ["default", f"tuned (trial {hpo_record['final']['trial']})"]


def test_cli_table_json_and_plot(folder, tmp_path, capsys):
    out = folder[0]
    code, stdout, err = run_cli(capsys, "experiments", str(out), "--plot", "--out", str(tmp_path))
    assert code == 0, err
    assert "★t" in stdout and "experiments record:" in stdout
    [path] = records_in(tmp_path)
    record = json.loads(path.read_text())
    assert record["benchmark"] == "experiments" and len(record["rows"]) == len(collect(out)[0])
    for row in record["rows"]:
        assert {"name", "metric", "seconds", "peak_mb", "pareto"} <= set(row)
        assert isinstance(row["name"], str) and isinstance(row["metric"], float) and isinstance(row["pareto"], bool)
    png = tmp_path / record["plot"].rsplit("/", 1)[1]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Reading the folder the record went to again: the experiments record is not an experiment.
    shutil.copy(path, out / path.name)
    assert len(collect(out)[0]) == len(record["rows"])


def test_a_snapshot_is_written_only_when_asked(folder, capsys):
    out = folder[0]
    before = sorted(out.iterdir())
    code, stdout, err = run_cli(capsys, "experiments", str(out))
    assert code == 0, err
    assert "experiments record:" not in stdout and sorted(out.iterdir()) == before
    code, stdout, err = run_cli(capsys, "experiments", str(out), "--save")
    assert code == 0, err
    [path] = sorted(set(out.iterdir()) - set(before))
    assert f"experiments record: {path}" in stdout and re.fullmatch(r"\d{4}-\d{2}-\d{2}-experiments-\d{3}\.json", path.name)
    path.unlink()


def test_the_folder_read_by_default_is_the_output_root(folder, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ACCEL_OUT_DIR", str(folder[0]))
    code, stdout, err = run_cli(capsys, "experiments", "--json")
    assert code == 0, err
    assert json.loads(stdout)["folder"] == str(folder[0])
    monkeypatch.setenv("ACCEL_OUT_DIR", str(tmp_path / "none"))
    code, _, err = run_cli(capsys, "experiments")
    assert code == 2 and str(tmp_path / "none") in err


def test_empty_or_missing_folder(tmp_path, capsys):
    code, _, err = run_cli(capsys, "experiments", str(tmp_path))
    assert code == 2 and err.startswith("accel: error: no run records or studies") and len(err.splitlines()) == 1
    code, _, err = run_cli(capsys, "experiments", str(tmp_path / "nope"))
    assert code == 2 and "no folder" in err and len(err.splitlines()) == 1


def test_a_comparison_with_nothing_compared_shows_no_parity():
    """accel compare where the GPU arm did not run: the CPU arm's row has no parity (a dash), not
    1.0000; where numbers were compared, the CPU arm is the reference (1) and the GPU arm its share."""
    import math

    from accel.hpo.experiments import rows_from_compare_record
    from accel.record import CompareRecord

    arms = {"cpu": {"status": "ok", "cold_seconds": 1.0}, "gpu": {"status": "skipped", "reason": "no GPU"}}
    record = {"program": {"path": "train.py", "args": []}, "arms": arms, "parity": {"agree": None}}
    [cpu] = rows_from_compare_record(CompareRecord.model_validate(record), "c.json")
    assert cpu.arm == "cpu" and math.isnan(cpu.metric)
    arms["gpu"] = {"status": "ok", "cold_seconds": 0.5}
    record["parity"] = {"agree": False, "stdout": {"numbers_compared": 4, "numbers_agree": 3}}
    by_arm = {r.arm: r.metric for r in rows_from_compare_record(CompareRecord.model_validate(record), "c.json")}
    assert by_arm == {"cpu": 1.0, "gpu": 0.75}
