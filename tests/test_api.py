"""accel as a library: ``accel.run(...)`` returns the record and its tables, writes the same record
as the command line, and refuses bad input with the command line's one-line errors."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pandas as pd
import pytest

import accel
from accel.cli.main import main
from accel.errors import AccelError
from accel.timing import STAGES
from tests import tables
from tests.conftest import ROOT, read_json, records_in


@pytest.fixture(scope="module")
def flights(tmp_path_factory):
    out = tmp_path_factory.mktemp("api")
    return accel.run("flights", rows=3000, device="cpu", seed=3, out=out), out


def test_run_returns_the_record_it_wrote(flights):
    result, out = flights
    [path] = records_in(out)
    assert result.path == path and read_json(path)["run_id"] == result.record["run_id"]
    assert result.record["config"]["rows"] == 3000 and result.record["config"]["seed"] == 3


def test_stages_metrics_and_memory_are_dataframes(flights):
    result, _ = flights
    stages = result.stages
    assert isinstance(stages, pd.DataFrame) and list(stages.index) == [*STAGES, "explain", "total"]
    assert list(stages.columns) == ["gpu_seconds", "cpu_seconds", "speedup"]
    assert (stages["cpu_seconds"] >= 0).all() and stages["gpu_seconds"].isna().all(), "the GPU arm was not asked for"
    assert stages.loc["total", "cpu_seconds"] == result.record["arms"]["cpu"]["total_seconds"]
    assert 0.5 < result.metrics.loc["auc", "cpu"] < 1 and math.isnan(result.metrics.loc["auc", "gpu"])
    assert result.memory.loc["cpu", "status"] == "ok" and result.memory.loc["cpu", "peak_host_mb"] > 50
    assert math.isnan(result.speedup) and result.parity["ok"] is None


def test_notebook_display_shows_the_stages_metrics_and_the_skip_reason(flights):
    result, _ = flights
    page = result._repr_html_()
    assert "<table" in page and "features" in page and "not requested (--device cpu)" in page
    assert "speedup: n/a" in page and str(result.path) in page
    assert "<b>GPU arm skipped</b>: not requested (--device cpu)" in page, "the terminal's words"
    assert repr(result).startswith("RunResult('flights', gpu skipped, cpu ok")
    # The hold-out metrics, as the terminal's second table, and the rounds early stopping chose.
    assert "hold-out metrics" in page and f"{result.metrics.loc['auc', 'cpu']:.4f}" in page
    es = result.record["model"]["early_stopping"]
    assert f"early stopping: {es['rounds']} rounds, found on" in page and "parity: not checked" in page


def test_run_shows_its_progress_by_default(tmp_path, capfd):
    """In a notebook as in a script: each stage as it ends (stderr), unless progress=False."""
    accel.run("flights", rows=2000, device="cpu", out=tmp_path / "a")
    err = capfd.readouterr().err
    assert all(f"[cpu] {stage}" in err for stage in STAGES), err
    accel.run("flights", rows=2000, device="cpu", out=tmp_path / "b", progress=False)
    assert "[cpu]" not in capfd.readouterr().err


def test_your_own_table(tmp_path):
    data = tmp_path / "customers.csv"
    tables.customers(400).to_csv(data, index=False)
    result = accel.run(data=data, target="churned", device="cpu", out=tmp_path / "runs")
    assert result.record["workflow"] == "table" and result.record["data"]["target"] == "churned"
    assert result.metrics.loc["auc", "cpu"] > 0.5


def test_bad_input_is_the_command_lines_one_line_error(tmp_path):
    with pytest.raises(TypeError, match="'rwos'"):
        accel.run("flights", rwos=10, out=tmp_path)
    with pytest.raises(AccelError, match="rows"):
        accel.run("flights", rows=-1, out=tmp_path)
    with pytest.raises(AccelError, match="name a workflow"):
        accel.run(out=tmp_path)
    assert not any(tmp_path.iterdir()), "nothing written"


def test_a_refused_call_leaves_no_output_folder(tmp_path):
    # The output folder is made (and proved writable) before the table is checked.
    with pytest.raises(AccelError, match="does not exist"):
        accel.run(data=tmp_path / "nope.csv", target="y", out=tmp_path / "new" / "runs")
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    with pytest.raises(AccelError, match="does not exist"):
        accel.run(data=tmp_path / "nope.csv", target="y", out=kept / "runs")
    assert kept.is_dir() and not (kept / "runs").exists()  # a folder that was there stays


def cli_error(capsys, *argv: str) -> str:
    """The one line ``accel ARGV`` prints on stderr when it refuses its input (exit 2)."""
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    return err.removeprefix("accel: error: ")


@pytest.mark.parametrize(
    ("kwargs", "argv", "needle"),
    [
        ({"workers": 2}, ["--workers", "2"], "--workers need --cluster local|local-cuda"),
        (
            {"worker_memory": "1GB", "threads_per_worker": 2},
            ["--threads-per-worker", "2", "--worker-memory", "1GB"],
            "need --cluster",
        ),
        (
            {"cluster": "local", "scheduler": "tcp://127.0.0.1:8786"},
            ["--cluster", "local", "--scheduler", "tcp://127.0.0.1:8786"],
            "--cluster and --scheduler exclude each other",
        ),
        (
            {"baseline_scheduler": "tcp://127.0.0.1:8787"},
            ["--baseline-scheduler", "tcp://127.0.0.1:8787"],
            "goes with --scheduler",
        ),
    ],
)
def test_cluster_options_are_refused_as_the_command_line_refuses_them(tmp_path, capsys, kwargs, argv, needle):
    with pytest.raises(AccelError) as refused:
        accel.run("flights", out=tmp_path, **kwargs)
    assert needle in str(refused.value)
    assert str(refused.value) == cli_error(capsys, "run", "flights", *argv, "--out", str(tmp_path)), "the same line"
    assert records_in(tmp_path) == [], "nothing written"


# --------------------------------------------------------------------------- the notebook view of a run

#: A real run of both arms (flights on an H200 and its host's CPU), as accel wrote it.
H200_RUN = ROOT / "benchmarks" / "results" / "2026-11-30-flights-run-nvidia-h200-001.json"


def test_notebook_chart_has_a_bar_per_stage_when_both_arms_ran():
    record = read_json(H200_RUN)
    assert {a["status"] for a in record["arms"].values()} == {"ok"}
    page = accel.RunResult(record, H200_RUN)._repr_html_()
    assert "speedup per stage" in page and "n/a" not in page
    chart = page[page.index("<caption>speedup per stage</caption>") :]
    bars = re.findall(r"<tr><td>(\w+)</td><td><div style='[^']*width:(\d+)px'></div></td><td>([\d.]+)×</td></tr>", chart)
    assert [b[0] for b in bars] == [*STAGES, "total"]
    speedup = record["speedup"]
    for stage, width, shown in bars:
        cpu, gpu = record["arms"]["cpu"], record["arms"]["gpu"]
        seconds = (
            (cpu["total_seconds"], gpu["total_seconds"]) if stage == "total" else (cpu["stages"][stage], gpu["stages"][stage])
        )
        assert float(shown) == pytest.approx(seconds[0] / seconds[1], rel=1e-2), stage  # CPU seconds / GPU seconds
        assert int(width) == round(200 * speedup[stage] / max(speedup.values())), stage  # the largest is 200 px
    assert "GPU arm" not in page, "no skip note when both ran"


def test_notebook_chart_says_n_a_when_one_arm_was_skipped():
    from accel.pairing import speedups
    from accel.result import ArmResult, skipped

    record = read_json(H200_RUN)
    cpu = record["arms"]["cpu"]
    record["arms"]["gpu"] = skipped("GPU unavailable: no CUDA driver").as_dict()
    record["speedup"] = speedups(
        ArmResult(**record["arms"]["gpu"]), ArmResult(status="ok", stages=cpu["stages"], total_seconds=cpu["total_seconds"])
    )
    result = accel.RunResult(record, H200_RUN)
    assert result.stages["speedup"].isna().all() and math.isnan(result.speedup)
    page = result._repr_html_()
    assert "speedup: n/a (one arm ran)" in page and "<caption>" not in page
    assert "<b>GPU arm skipped</b>: GPU unavailable: no CUDA driver" in page, "the record's words"


def test_info_is_what_accel_info_json_prints():
    env = accel.info()
    assert {"cpu_model", "cores", "gpus", "versions"} <= set(env)


def test_importing_accel_loads_no_data_library():
    code = "import sys, accel; accel.RunResult; print(sorted(m for m in ('pandas', 'xgboost', 'cudf') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# --------------------------------------------------------------------------- tune and compare


def test_tune_searches_and_returns_the_candidates(tmp_path, capfd):
    from tests.test_hpo_cli import write_workflow

    result = accel.tune(write_workflow(tmp_path), trials=3, top=2, out=tmp_path / "runs")
    said = capfd.readouterr().err.splitlines()
    # A line per step of the search, none per trial (progress=True shows them, as accel hpo does).
    assert not [line for line in said if line.startswith("trial ")] and any("default baseline" in line for line in said)
    [path] = records_in(tmp_path / "runs")
    assert isinstance(result, accel.TuneResult) and result.path == path
    assert read_json(path)["study"]["name"] == result.record["study"]["name"]
    table = result.candidates
    assert list(table.index[:2]) == ["default", "best subset trial"] and table.index[-1] == "retrained best"
    assert len([i for i in table.index if i.startswith("top-k")]) == 2
    assert table[result.metric].between(0.5, 1).all() and (table["seconds"] > 0).all()
    assert result.best_params == result.record["final"]["params"] and result.best_params
    assert result.arms.loc["cpu", "status"] == "ok" and "<table" in result._repr_html_()


def test_tune_refuses_what_it_does_not_take_in_one_line(tmp_path):
    with pytest.raises(AccelError, match="accel.tune\\(\\) has no setting 'trails'"):
        accel.tune("flights", trails=3, out=tmp_path)
    with pytest.raises(AccelError, match="trials"):
        accel.tune("flights", trials=0, out=tmp_path)
    assert records_in(tmp_path) == []


def test_compare_runs_a_script_on_both_arms(tmp_path):
    result = accel.compare(ROOT / "tests" / "compare_scripts" / "features_model.py", "--rows", "2000", out=tmp_path)
    [path] = records_in(tmp_path)
    assert isinstance(result, accel.CompareResult) and result.path == path
    arms = result.arms
    assert arms.loc["cpu", "status"] == "ok" and arms.loc["cpu", "cold_seconds"] > 0
    if arms.loc["gpu", "status"] == "skipped":  # no GPU here: nothing invented for it
        assert math.isnan(result.speedup) and result.agree is None and math.isnan(arms.loc["gpu", "cold_seconds"])
        assert "outputs: not compared" in result._repr_html_() and "outputs not compared" in repr(result)
        assert "None" not in result._repr_html_() + repr(result)
    assert "accel compare" in result._repr_html_()


# --------------------------------------------------------------------------- benchmark and scale


@pytest.fixture(scope="module")
def groupby_file(tmp_path_factory):
    from tests.bench_bodies import make_groupby_file

    return make_groupby_file(tmp_path_factory.mktemp("g"), n=3000, k=10, nas=5)


def test_benchmark_returns_the_result_it_wrote(groupby_file, tmp_path):
    result = accel.benchmark("groupby", data=groupby_file, questions=["q1", "q3"], repeats=1, device="cpu", results=tmp_path)
    [path] = records_in(tmp_path)
    assert isinstance(result, accel.BenchResult) and result.path == path and result.suite == "groupby"
    assert read_json(path)["questions"] == result.record["questions"]
    assert result.record["config"]["questions"] == "q1,q3" and result.record["config"]["repeats"] == 1
    table = result.table
    assert list(table.index) == ["q1", "q3"] and (table["cpu_status"] == "ok").all() and (table["cpu_seconds"] > 0).all()
    assert (table["gpu_status"] == "skipped").all() and table["speedup"].isna().all() and table["agree"].isna().all()
    assert result.failed == [] and result.disagree == []
    page = result._repr_html_()
    assert "speedup: n/a" in page and "<b>GPU arm skipped</b>: not requested (--device cpu)" in page and str(path) in page


def test_benchmark_chart_of_a_real_gpu_result():
    path = ROOT / "benchmarks" / "results" / "2026-11-30-models-nvidia-h200-001.json"
    result = accel.BenchResult(read_json(path), path)
    speedups = result.speedups
    assert result.suite == "models" and len(speedups) == 2 * len(result.record["models"])
    first = result.record["models"][0]
    assert speedups[f"{first['model']} fit"] == pytest.approx(first["fit_speedup"])
    page = result._repr_html_()
    assert "<caption>speedup (CPU seconds / GPU seconds)</caption>" in page and "n/a (the GPU arm" not in page
    assert page.count("<td><div style=") == speedups.notna().sum()


def test_benchmark_refuses_what_its_suite_does_not_take(groupby_file, tmp_path):
    with pytest.raises(AccelError, match="rows= does not apply to the groupby benchmark"):
        accel.benchmark("groupby", data=groupby_file, rows=1000, results=tmp_path)
    with pytest.raises(AccelError, match="unknown benchmark suite 'e2e'; known: groupby, join, models, crossover"):
        accel.benchmark("e2e", results=tmp_path)
    with pytest.raises(AccelError, match="repeats must be a positive integer, got 0"):
        accel.benchmark("groupby", data=groupby_file, repeats=0, results=tmp_path)
    with pytest.raises(AccelError, match="needs its data file"):
        accel.benchmark("groupby", results=tmp_path)
    with pytest.raises(AccelError, match="unknown model 'nope'"):
        accel.benchmark("models", models=["nope"], results=tmp_path)
    assert records_in(tmp_path) == []


def test_scale_refuses_before_any_cluster_starts(tmp_path):
    from accel.backend import cpu_threads

    with pytest.raises(AccelError, match="needs --cluster local or --cluster local-cuda"):
        accel.scale("flights", cluster=None, out=tmp_path)
    with pytest.raises(AccelError, match="cores"):
        accel.scale("flights", workers=[1, cpu_threads() + 1], out=tmp_path)
    with pytest.raises(AccelError, match="--workers must be positive integers"):
        accel.scale("flights", workers=[0, 1], out=tmp_path)
    with pytest.raises(AccelError, match="--worker-memory: cannot read 'lots' as a size"):
        accel.scale("flights", cluster="local", worker_memory="lots", out=tmp_path)
    assert records_in(tmp_path) == []


@pytest.mark.slow
def test_scale_returns_the_study_it_wrote(tmp_path):
    from tests.test_dask_flights import FAST_YAML

    workflow = tmp_path / "fast.yaml"
    workflow.write_text(FAST_YAML)
    result = accel.scale(workflow, cluster="local", workers=[1], out=tmp_path / "out")
    [path] = records_in(tmp_path / "out")
    assert isinstance(result, accel.ScaleResult) and result.path == path and result.plot == path.with_suffix(".png")
    totals = result.totals
    assert list(totals.index) == [("single-process", 1), ("cpu", 1)] and (totals["seconds"] > 0).all()
    assert totals.loc[("cpu", 1), "speedup_vs_1"] == pytest.approx(1.0) and result.failed == []
    assert len(result.table) == 2 * 6 and "CPU × 1" in result._repr_html_()


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"cluster": "bogus"}, "cluster.kind: Input should be 'local', 'local-cuda' or 'scheduler' (got 'bogus')"),
        ({"cluster": "local", "workers": 0}, "cluster.workers: Input should be greater than 0 (got 0)"),
        ({"cluster": "local", "threads_per_worker": -1}, "cluster.threads_per_worker: Input should be greater than 0"),
    ],
)
def test_predict_refuses_bad_cluster_settings_in_one_line(tmp_path, kwargs, needle):
    with pytest.raises(AccelError) as refused:
        accel.predict(tmp_path / "no-run", data=tmp_path / "t.csv", out=tmp_path / "p.csv", **kwargs)
    message = str(refused.value)
    assert message.startswith("accel.predict(): ") and needle in message and "\n" not in message, message
    assert list(tmp_path.iterdir()) == [], "nothing written"


@pytest.mark.parametrize(
    ("args", "named"),
    [(("p.py", "--rows", 5), "args"), (("p.py", 5), "args"), ((5,), "program")],
)
def test_a_wrong_positional_argument_is_named_by_its_parameter(tmp_path, args, named):
    # The third positional argument of compare() is one of the script's *args, not ``repeat``.
    with pytest.raises(AccelError) as refused:
        accel.compare(*args, out=tmp_path)
    assert str(refused.value) == f"accel.compare(): {named}: Input should be a valid string (got 5)"
    assert list(tmp_path.iterdir()) == [], "nothing written"
