"""Benchmarks keep what finished: each question and model is appended as a JSON line as it
completes; a CPU arm measured earlier on the same data and machine can be taken instead of run
again (--cpu-from); engines run a cold run apart and the repeats; Polars' GPU engine skips with
its reason where cudf-polars or a GPU is missing."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from accel.cli.main import main
from tests.conftest import records_in, strict_json

has_engines = importlib.util.find_spec("polars") is not None and importlib.util.find_spec("duckdb") is not None


@pytest.fixture(scope="module")
def groupby_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("g") / "G1_2e3_1e1.parquet"
    assert main(["data", "groupby", "2000", "10", str(path)]) == 0
    return path


def _lines(path):
    return [strict_json(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_each_question_is_kept_as_it_finishes(groupby_file, tmp_path, capsys):
    progress = tmp_path / "p" / "progress.jsonl"
    engines = ["--engines", "polars,duckdb"] if has_engines else []
    args = ["bench", "groupby", "--data", str(groupby_file), "--questions", "q1,q6,q10", "--repeats", "3", "--device", "cpu"]
    assert main([*args, *engines, "--results", str(tmp_path / "r"), "--progress-file", str(progress)]) == 0
    capsys.readouterr()
    lines = _lines(progress)
    arms = ["cpu", *(["polars", "duckdb"] if has_engines else [])]
    assert [(x["arm"], x["question"]) for x in lines] == [(a, q) for a in arms for q in ("q1", "q6", "q10")]
    [result_path] = records_in(tmp_path / "r")
    result = json.loads(result_path.read_text())
    for x in lines:
        assert x["benchmark"] == "db_groupby" and x["git_sha"] == result["environment"]["git"]["sha"]
        assert x["result"]["status"] == "ok" and len(x["result"]["timing"]["times"]) == 3 and x["result"]["checksum"]
    cpu_rows = {row["question"]: row["cpu"] for row in result["questions"]}
    for x in lines:
        if x["arm"] == "cpu":
            assert x["result"]["checksum"] == cpu_rows[x["question"]]["checksum"]
    if has_engines:
        for name in ("polars", "duckdb"):
            for q, a in result["engines"][name]["questions"].items():
                assert a["timing"]["repeats"] == 3 and a["agree"] is True, (name, q)


def test_cpu_arm_taken_from_an_earlier_result_on_the_same_data(groupby_file, tmp_path, capsys):
    base = ["bench", "groupby", "--data", str(groupby_file), "--questions", "q1,q3", "--repeats", "1"]
    assert main([*base, "--device", "cpu", "--results", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    [earlier] = records_in(tmp_path / "a")
    assert main([*base, "--device", "auto", "--cpu-from", str(earlier), "--results", str(tmp_path / "b"), "--json"]) == 0
    result = strict_json(capsys.readouterr().out)
    first = json.loads(earlier.read_text())
    assert set(result["arms"]["cpu"]["reused_from"].values()) == {str(earlier)}
    assert [r["cpu"]["checksum"] for r in result["questions"]] == [r["cpu"]["checksum"] for r in first["questions"]]

    # Another data file, a question the earlier result lacks, or a file that is not a result: refused.
    other = tmp_path / "G1_other.parquet"
    assert main(["data", "groupby", "2000", "10", str(other), "--seed", "7"]) == 0
    capsys.readouterr()
    for argv, message in (
        (["bench", "groupby", "--data", str(other), "--cpu-from", str(earlier)], "other data"),
        ([*base[:4], "--questions", "q1,q2", "--cpu-from", str(earlier)], "no CPU answer for q2"),
        ([*base, "--cpu-from", str(groupby_file)], "cannot read"),
    ):
        assert main([*argv, "--results", str(tmp_path / "c")]) == 2
        assert message in capsys.readouterr().err, argv


@pytest.mark.slow
def test_cpu_answers_gathered_from_several_runs(groupby_file, tmp_path, capsys):
    base = ["bench", "groupby", "--data", str(groupby_file), "--repeats", "1", "--device", "cpu"]
    assert main([*base, "--questions", "q1,q2", "--results", str(tmp_path / "a")]) == 0
    assert main([*base, "--questions", "q10", "--results", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    [a], [b] = records_in(tmp_path / "a"), records_in(tmp_path / "b")
    argv = ["bench", "groupby", "--data", str(groupby_file), "--questions", "q1,q10", "--cpu-from", str(a), "--cpu-from", str(b)]
    assert main([*argv, "--results", str(tmp_path / "c"), "--json"]) == 0
    result = strict_json(capsys.readouterr().out)
    assert result["arms"]["cpu"]["reused_from"] == {"q1": str(a), "q10": str(b)}
    assert [r["cpu"]["status"] for r in result["questions"]] == ["ok", "ok"]
    # A folder: the matching results in it are used, anything else there ignored.
    folder = tmp_path / "kept"
    folder.mkdir()
    for src in (a, b):
        (folder / src.name.replace("001", src.parent.name)).write_text(src.read_text())
    (folder / "unrelated.json").write_text('{"benchmark": "models"}')
    argv = ["bench", "groupby", "--data", str(groupby_file), "--questions", "q2,q10", "--cpu-from", str(folder)]
    assert main([*argv, "--results", str(tmp_path / "d"), "--json"]) == 0
    result = strict_json(capsys.readouterr().out)
    assert sorted(Path(v).name for v in result["arms"]["cpu"]["reused_from"].values()) == [
        "2026-12-01-db-groupby-cpu-a.json".replace("2026-12-01", a.name[:10]),
        "2026-12-01-db-groupby-cpu-b.json".replace("2026-12-01", b.name[:10]),
    ]


def test_models_are_kept_per_arm(tmp_path, capsys):
    progress = tmp_path / "m.jsonl"
    argv = ["bench", "models", "--rows", "300", "--features", "8", "--models", "ridge,pca", "--repeats", "1"]
    assert main([*argv, "--results", str(tmp_path / "r"), "--progress-file", str(progress)]) == 0
    capsys.readouterr()
    lines = _lines(progress)
    assert [(x["arm"], x["model"]) for x in lines] == [("cpu", "ridge"), ("cpu", "pca")]
    assert all(x["result"]["status"] == "ok" and x["result"]["fit"]["repeats"] == 1 for x in lines)


@pytest.mark.skipif(not has_engines, reason="the bench extra (polars, duckdb) is not installed")
@pytest.mark.skipif(importlib.util.find_spec("cudf_polars") is not None, reason="cudf-polars is installed here")
def test_polars_gpu_engine_skips_with_its_reason(groupby_file, tmp_path, capsys):
    argv = ["bench", "groupby", "--data", str(groupby_file), "--questions", "q1", "--repeats", "1", "--engines", "polars-gpu"]
    assert main([*argv, "--results", str(tmp_path), "--json"]) == 0
    eng = strict_json(capsys.readouterr().out)["engines"]["polars-gpu"]
    assert eng["status"] == "skipped" and "cudf-polars is not installed" in eng["reason"]
