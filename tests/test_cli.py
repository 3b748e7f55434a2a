"""The command line: each bad input is one line on stderr, exit 2, no traceback, no record."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, gpu_skip_reason, records_in, run_accel


def assert_one_line_error(proc, *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("accel: error: ")
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_unknown_workflow_lists_known_ones(tmp_path):
    proc = run_accel("run", "flihgts", "--out", str(tmp_path))
    assert_one_line_error(proc, "unknown workflow 'flihgts'", "flights")
    assert records_in(tmp_path) == []


@pytest.mark.parametrize("rows", ["0", "-5", "many"])
def test_rows_must_be_positive(tmp_path, rows):
    proc = run_accel("run", "flights", "--rows", rows, "--out", str(tmp_path))
    assert_one_line_error(proc, "--rows", "positive integer")
    assert records_in(tmp_path) == []


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--delimiter", "ab"], "command line: --delimiter: String should have at most 1 character (got 'ab')"),
        (["--memory-budget", "lots"], "command line: --memory-budget: cannot read 'lots' as a size"),
        (["--test-size", "1.5"], "argument --test-size: must be a number in (0, 1), got 1.5"),
        (["--explain-rows", "-1"], "argument --explain-rows: must be 0 or a positive integer, got -1"),
        (["--seed", "-1"], "argument --seed: must be 0 or a positive integer, got -1"),
    ],
)
def test_a_setting_out_of_its_bounds_is_named_by_its_flag(tmp_path, flags, said):
    proc = run_accel("run", "flights", *flags, "--out", str(tmp_path / "r"))
    assert_one_line_error(proc, said)
    assert not (tmp_path / "r").exists()


def test_unwritable_output_directory(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    proc = run_accel("run", "flights", "--rows", "1000", "--out", str(blocker / "runs"))
    assert_one_line_error(proc, "cannot write run records", "--out")


@pytest.mark.skipif(gpu_skip_reason() is None, reason="a GPU is usable here")
def test_device_gpu_without_a_gpu_says_why(tmp_path):
    proc = run_accel("run", "flights", "--device", "gpu", "--rows", "1000", "--out", str(tmp_path))
    assert_one_line_error(proc, "--device gpu", "GPU unavailable: ")
    assert any(word in proc.stderr for word in ("no CUDA driver", "no CUDA device", "RAPIDS"))
    assert records_in(tmp_path) == []


def test_unknown_device_choice(tmp_path):
    proc = run_accel("run", "flights", "--device", "tpu", "--out", str(tmp_path))
    assert_one_line_error(proc, "--device")


def test_workflow_file_with_unknown_key_names_it(tmp_path):
    cfg = tmp_path / "w.yaml"
    cfg.write_text("workflow: flights\nrows: 1000\nxgboost:\n  n_estimatorz: 5\n")
    proc = run_accel("run", str(cfg), "--out", str(tmp_path / "runs"))
    assert_one_line_error(proc, "unknown key 'xgboost.n_estimatorz'")
    assert records_in(tmp_path / "runs") == []


def test_workflow_file_missing(tmp_path):
    proc = run_accel("run", str(tmp_path / "nope.yaml"))
    assert_one_line_error(proc, "does not exist")


def test_workflow_file_not_a_mapping(tmp_path):
    cfg = tmp_path / "w.yaml"
    cfg.write_text("- just\n- a list\n")
    proc = run_accel("run", str(cfg))
    assert_one_line_error(proc, "must hold a mapping")


def test_missing_subcommand():
    proc = run_accel()
    assert_one_line_error(proc)


def test_info_json_describes_the_machine():
    proc = run_accel("info", "--json")
    assert proc.returncode == 0, proc.stderr
    env = json.loads(proc.stdout)
    assert env["cpu_model"] and env["cores"]["logical"] >= 1 and env["ram_gb"] > 0
    assert {"numpy", "pandas", "xgboost", "cupy", "cudf"} <= set(env["versions"])
    assert env["arms"]["cpu"]["can_run"] is True
    gpu = env["arms"]["gpu"]
    assert gpu["can_run"] == (gpu_skip_reason() is None)
    if not gpu["can_run"]:
        assert gpu["reason"]


def test_info_table():
    proc = run_accel("info")
    assert proc.returncode == 0, proc.stderr
    assert "CPU arm can run" in proc.stdout
    assert "GPU arm" in proc.stdout


def test_help_and_info_load_no_heavy_library():
    """`accel --help` and `accel info` import no scikit-learn, SciPy, XGBoost, pandas or Dask: the
    XGBoost CUDA check asks libxgboost directly (XGBuildInfo), stage names live beside the timer."""
    code = (
        "import contextlib, io, sys\n"
        "from accel.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "    assert main(['info']) == 0\n"
        "heavy = ('sklearn', 'scipy', 'xgboost', 'pandas', 'distributed', 'optuna', 'matplotlib', 'pyarrow')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
