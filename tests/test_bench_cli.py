"""accel bench / data through the real command line: results, JSON, and every bad input refused.

Bad input is one line on stderr, exit 2, and no result file.
"""

from __future__ import annotations

import importlib.util
import math

import pytest

from accel.cli.main import main
from tests import bench_bodies as bodies
from tests.conftest import gpu_skip_reason, records_in, run_accel, strict_json

no_gpu_here = pytest.mark.skipif(gpu_skip_reason() is None, reason="a GPU is usable here: the GPU arm runs")


@pytest.fixture(scope="module")
def groupby_file(tmp_path_factory):
    return bodies.make_groupby_file(tmp_path_factory.mktemp("g"), n=3000, k=10, nas=5)


@pytest.fixture(scope="module")
def join_dir(tmp_path_factory):
    return bodies.make_join_dir(tmp_path_factory.mktemp("j") / "join", n=2000)


def one_line_error(capsys, argv, *needles, results=None) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("accel: error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]
    if results is not None:
        assert records_in(results) == [], "nothing is written on bad input"


@pytest.mark.slow  # a generated table, then a run of every question
def test_data_groupby_then_bench_groupby_json(tmp_path):
    data = tmp_path / "G1.csv"
    proc = run_accel("data", "groupby", "3000", "10", str(data), "--nas", "5")
    assert proc.returncode == 0, proc.stderr
    assert data.exists() and "wrote" in proc.stdout
    results = tmp_path / "results"
    proc = run_accel("bench", "groupby", "--data", str(data), "--repeats", "2", "--json", "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    result = strict_json(proc.stdout)
    [path] = records_in(results)
    assert strict_json(path.read_text())["questions"] == result["questions"]
    assert f"results: {path}" in proc.stderr
    assert result["benchmark"] == "db_groupby" and [q["question"] for q in result["questions"]] == [f"q{i}" for i in range(1, 11)]
    for q in result["questions"]:
        cpu = q["cpu"]
        assert cpu["status"] == "ok" and cpu["rows"] > 0 and cpu["cols"] >= 2 and cpu["checksum"]
        assert cpu["run1"] == cpu["timing"]["cold"] and cpu["run2"] == cpu["timing"]["times"][0]
        assert len(cpu["timing"]["times"]) == 2
    assert "CPU baseline: 1 (pandas" in result["fairness"]["line"]
    assert result["environment"]["cpu_model"] and "blas_threads" in result["environment"]
    # Progress goes to stderr, one line per question.
    assert "[cpu] q10" in proc.stderr


@no_gpu_here
def test_without_a_gpu_the_gpu_arm_is_skipped_not_invented(groupby_file, tmp_path, capsys):
    code = main(
        [
            "bench",
            "groupby",
            "--data",
            str(groupby_file),
            "--questions",
            "q1,q3",
            "--repeats",
            "1",
            "--results",
            str(tmp_path),
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    assert "GPU arm skipped: " in out and "CPU baseline:" in out and "sum v1 mean v3 by id3" in out
    [path] = records_in(tmp_path)
    assert path.name.endswith("-db-groupby-cpu-001.json")
    result = strict_json(path.read_text())
    assert result["gpu"]["status"] == "skipped" and result["gpu"]["reason"]
    assert [q["question"] for q in result["questions"]] == ["q1", "q3"]
    for q in result["questions"]:
        assert q["gpu"]["status"] == "skipped" and "run1" not in q["gpu"]
        assert math.isnan(q["speedup"]) and q["agree"] is None


def test_bench_join(join_dir, tmp_path, capsys):
    code = main(["bench", "join", "--data-dir", str(join_dir), "--repeats", "1", "--json", "--results", str(tmp_path)])
    out, _ = capsys.readouterr()
    assert code == 0
    result = strict_json(out)
    assert [q["title"] for q in result["questions"]] == [
        "small inner on int", "medium inner on int", "medium outer on int", "medium inner on factor", "big inner on int",
    ]  # fmt: skip
    assert all(q["cpu"]["status"] == "ok" for q in result["questions"])
    assert result["questions"][2]["cpu"]["rows"] == 2000  # the left join keeps every row


@pytest.mark.slow  # two benchmark commands end to end
def test_bench_models_and_crossover(tmp_path, capsys):
    code = main(
        [
            "bench",
            "models",
            "--rows",
            "300",
            "--features",
            "8",
            "--models",
            "ridge,kmeans",
            "--repeats",
            "1",
            "--json",
            "--results",
            str(tmp_path),
        ]
    )
    result = strict_json(capsys.readouterr().out)
    assert code == 0
    assert [m["model"] for m in result["models"]] == ["kmeans", "ridge"]
    for m in result["models"]:
        assert m["cpu"]["status"] == "ok" and m["cpu"]["fit"]["median"] > 0 and m["cpu"]["quality"] > 0
        assert (m["gpu"]["status"] == "ok") == (gpu_skip_reason() is None) or m["gpu"]["status"] == "skipped"
        if m["gpu"]["status"] != "ok":
            assert math.isnan(m["fit_speedup"]) and m["gpu"]["reason"]
    assert result["fairness"]["line"].startswith("CPU baseline: all ")

    code = main(
        [
            "bench",
            "crossover",
            "--operations",
            "groupby,ridge",
            "--min-rows",
            "100",
            "--max-rows",
            "1e3",
            "--repeats",
            "1",
            "--json",
            "--results",
            str(tmp_path),
        ]
    )
    result = strict_json(capsys.readouterr().out)
    assert code == 0
    assert result["sizes"] == [100, 1000]
    for op in result["operations"]:
        assert [p["rows"] for p in op["points"]] == [100, 1000]
        assert all(p["cpu"]["status"] == "ok" and p["cpu"]["median"] > 0 for p in op["points"])
        if op["gpu_status"] != "ok":
            assert op["crossover_rows"] is None and op["gpu_reason"]
            assert all(p["gpu"]["status"] == "skipped" and math.isnan(p["speedup"]) for p in op["points"])
    assert len(records_in(tmp_path)) == 2


@pytest.mark.skipif(
    importlib.util.find_spec("polars") is None or importlib.util.find_spec("duckdb") is None,
    reason="the bench extra (polars, duckdb) is not installed",
)
@pytest.mark.slow
def test_engines_for_context(groupby_file, tmp_path, capsys):
    code = main(
        [
            "bench",
            "groupby",
            "--data",
            str(groupby_file),
            "--repeats",
            "1",
            "--engines",
            "polars,duckdb",
            "--json",
            "--results",
            str(tmp_path),
        ]
    )
    result = strict_json(capsys.readouterr().out)
    assert code == 0
    for name in ("polars", "duckdb"):
        eng = result["engines"][name]
        assert eng["status"] == "ok" and eng["threads"] >= 1
        for q in result["questions"]:
            a = eng["questions"][q["question"]]
            assert a["status"] == "ok", (name, q["question"], a.get("reason"))
            assert a["agree"] is True, (name, q["question"], a["checksum"], q["cpu"]["checksum"])


@pytest.mark.skipif(importlib.util.find_spec("polars") is not None, reason="polars is installed here")
def test_engines_not_installed_says_how_to_install(groupby_file, tmp_path, capsys):
    one_line_error(
        capsys,
        ["bench", "groupby", "--data", str(groupby_file), "--engines", "polars", "--results", str(tmp_path)],
        "pip install 'accel-tabular[bench]'",
        results=tmp_path,
    )


def test_missing_benchmark_columns_are_named(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("id1,id2,id4,id5,id6,v1,v3\nid001,id001,1,1,1,1,1.5\n")
    one_line_error(
        capsys,
        ["bench", "groupby", "--data", str(bad), "--results", str(tmp_path / "r")],
        "columns id3, v2",
        results=tmp_path / "r",
    )


def test_missing_join_columns_are_named(join_dir, tmp_path, capsys):
    import shutil

    import pandas as pd

    copy = tmp_path / "join"
    shutil.copytree(join_dir, copy)
    medium = sorted(copy.glob("J1_2e3_1e2_*"))[0]
    pd.read_parquet(medium).drop(columns=["id5"]).to_parquet(medium)
    one_line_error(
        capsys,
        ["bench", "join", "--data-dir", str(copy), "--results", str(tmp_path / "r")],
        "lacks the join benchmark's columns id5",
        results=tmp_path / "r",
    )


@pytest.mark.parametrize(
    "argv,needles",
    [
        (["bench", "groupby", "--questions", "q1,q42"], ["unknown groupby question 'q42'", "q10"]),
        (["bench", "groupby", "--repeats", "0"], ["--repeats", "positive integer"]),
        (["bench", "groupby", "--warmup", "-1"], ["--warmup"]),
        (["bench", "groupby", "--engines", "pandas2"], ["unknown engine 'pandas2'"]),
        (["bench", "models", "--models", "svm"], ["unknown model 'svm'", "xgboost, random_forest"]),
        (["bench", "models", "--repeats", "0"], ["--repeats"]),
        (["bench", "crossover", "--operations", "sort"], ["unknown operation 'sort'", "groupby"]),
        (["bench", "crossover", "--min-rows", "1e5", "--max-rows", "1e3"], ["--min-rows"]),
        (["bench", "crossover", "--max-rows", "1.5"], ["--max-rows", "whole number"]),
    ],
)
def test_bad_options(groupby_file, tmp_path, capsys, argv, needles):
    if argv[1] == "groupby":
        argv = [*argv, "--data", str(groupby_file)]
    one_line_error(capsys, [*argv, "--results", str(tmp_path / "r")], *needles, results=tmp_path / "r")


def test_unwritable_results_folder(groupby_file, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    one_line_error(
        capsys,
        ["bench", "groupby", "--data", str(groupby_file), "--results", str(blocker / "results")],
        "cannot write benchmark results",
        "--results",
    )


def test_missing_data(tmp_path, capsys):
    one_line_error(
        capsys,
        ["bench", "groupby", "--data", str(tmp_path / "nope.parquet"), "--results", str(tmp_path)],
        "does not exist",
        results=tmp_path,
    )
    one_line_error(capsys, ["bench", "join", "--data-dir", str(tmp_path / "nope"), "--results", str(tmp_path)], "does not exist")
    (tmp_path / "J1_2e3_NA_0_0.csv").write_text("id1\n1\n")
    one_line_error(capsys, ["bench", "join", "--data-dir", str(tmp_path), "--results", str(tmp_path)], "three right tables")


def test_bad_data_requests(tmp_path, capsys):
    one_line_error(capsys, ["data", "groupby", "100", "10", str(tmp_path / "g.txt")], ".csv or .parquet")
    one_line_error(capsys, ["data", "groupby", "10", "100", str(tmp_path / "g.csv")], "K (100) must not exceed N (10)")
    one_line_error(capsys, ["data", "groupby", "100", "10", str(tmp_path / "g.csv"), "--nas", "120"], "--nas")
    one_line_error(capsys, ["data", "join", "10", str(tmp_path / "j")], "N >= 1000")
    assert list(tmp_path.iterdir()) == []


def test_one_model_key_everywhere_and_the_old_spelling_is_understood(tmp_path, capsys):
    from accel.registry import BENCH_PAIRS, MODELS

    # A pair that serves a --model is named as --model names it; the others keep their own key.
    assert {"xgboost", "random_forest", "knn", "logistic_regression", "lasso"} <= set(BENCH_PAIRS) - {"kmeans", "ridge", "pca"}
    assert all(name in MODELS or name in ("kmeans", "ridge", "pca") for name in BENCH_PAIRS)
    code = main(["bench", "models", "--rows", "300", "--features", "8", "--models", "xgboost_classifier", "--repeats", "1"]
                + ["--json", "--results", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    assert [m["model"] for m in strict_json(out.out)["models"]] == ["xgboost"]
    notices = [line for line in out.err.splitlines() if line.startswith("notice: ")]
    assert notices == ["notice: --models xgboost_classifier is called xgboost now (the same model)"]
