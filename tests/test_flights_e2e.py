"""``accel run flights`` end to end on a sample, through the real command line."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from accel.timing import EXTRA_STAGES, STAGES
from tests.conftest import ROOT, gpu_skip_reason, read_json, records_in, run_accel

FAST = ["--rows", "6000"]
#: A flights workflow file small enough for a test: 6,000 rows, 60 rounds.
FAST_WORKFLOW = "workflow: flights\nrows: 6000\nxgboost:\n  n_estimators: 60\n  max_depth: 6\n"


@pytest.fixture(scope="module")
def fast_workflow(tmp_path_factory):
    path = tmp_path_factory.mktemp("wf") / "fast.yaml"
    path.write_text(FAST_WORKFLOW)
    return path


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory, fast_workflow):
    out = tmp_path_factory.mktemp("runs")
    proc = run_accel("run", str(fast_workflow), "--out", str(out), "--seed", "11")
    return proc, out


def test_run_succeeds_and_prints_the_record_path(cpu_run):
    proc, out = cpu_run
    assert proc.returncode == 0, proc.stderr
    [record] = records_in(out)
    assert f"run record: {record}" in proc.stdout
    assert "load" in proc.stdout and "speedup" in proc.stdout
    for stage in STAGES:
        assert f"[cpu] {stage}" in proc.stderr, "progress is shown per stage"
    assert "(60 rounds, peak host" in proc.stderr, "the boosting rounds XGBoost reported"


def test_record_schema(cpu_run):
    _, out = cpu_run
    [path] = records_in(out)
    r = read_json(path)
    for key in ("run_id", "workflow", "config", "environment", "arms", "speedup", "parity", "started_at"):
        assert key in r
    assert r["workflow"] == "flights" and r["config"]["rows"] == 6000 and r["config"]["seed"] == 11
    env = r["environment"]
    for key in ("cpu_model", "cores", "threads_used", "gpus", "versions", "git_sha"):
        assert key in env
    for arm in ("gpu", "cpu"):
        for key in ("status", "reason", "device_used", "stages", "metrics", "peak_host_mb", "peak_device_mb"):
            assert key in r["arms"][arm], (arm, key)
    cpu = check_arm_of_record(r, "cpu")
    assert cpu["peak_device_mb"] is None
    assert cpu["threads"]["xgboost_nthread"] >= 1
    assert env["threads_used"]["cpu"]["xgboost_nthread"] == cpu["threads"]["xgboost_nthread"]


def check_arm_of_record(record: dict, arm: str) -> dict:
    """One arm of an ``accel run flights`` record that ran (the body the GPU run shares)."""
    a = record["arms"][arm]
    assert a["status"] == "ok", a.get("reason")
    assert a["device_used"].startswith("cuda" if arm == "gpu" else "cpu"), a["device_used"]
    assert set(STAGES) <= set(a["stages"]) <= {*STAGES, *EXTRA_STAGES} and all(t >= 0 for t in a["stages"].values())
    assert a["importances"]["gain"] and a["importances"]["mean_abs_shap"], "XGBoost's gain and SHAP importances"
    assert record["pipelines"][arm]["bytes"] > 0 and record["pipelines"][arm]["path"].endswith(f".pipeline/{arm}")
    assert 0.55 < a["metrics"]["auc"] < 1
    assert a["peak_host_mb"] > 50
    return a


@pytest.mark.skipif(gpu_skip_reason() is None, reason="a GPU is usable here")
def test_without_gpu_the_gpu_arm_is_skipped_with_reason_and_speedup_is_nan(cpu_run):
    proc, out = cpu_run
    r = read_json(records_in(out)[0])
    gpu = r["arms"]["gpu"]
    assert gpu["status"] == "skipped" and gpu["reason"].startswith("GPU unavailable: ")
    assert gpu["stages"] == {} and gpu["metrics"] == {}
    assert all(math.isnan(v) for v in r["speedup"].values()), "never 0, never a copy"
    assert r["parity"]["ok"] is None and r["parity"]["gpu"] is None
    # The stage table says what the record says (skipped), and the reason once.
    assert "GPU arm skipped: " in proc.stdout and "unavailable" not in proc.stdout.replace("GPU unavailable", "")
    assert all(f"│ {stage:<9} │     skipped │" in proc.stdout for stage in (*STAGES, "total")), proc.stdout
    said = proc.stdout.replace("\n", " ") + proc.stderr
    assert said.count(gpu["reason"][:40]) == 1 and f"GPU arm skipped: {gpu['reason'][:40]}" in said, "the record's words"


def test_device_cpu_runs_only_the_baseline(tmp_path, fast_workflow):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    proc = subprocess.run(
        [sys.executable, "-m", "accel", "run", str(fast_workflow), "--device", "cpu", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = read_json(records_in(tmp_path)[0])
    assert r["arms"]["gpu"]["status"] == "skipped" and "--device cpu" in r["arms"]["gpu"]["reason"]
    assert r["arms"]["cpu"]["status"] == "ok"
    # Every second of the process up to the record is in a named part: start-up, planning, the
    # environment report, batch plans, the arms (their stages and the work between them).
    wall = r["wall"]
    assert sum(wall["parts"].values()) + wall["unaccounted_seconds"] == pytest.approx(wall["process_seconds"], rel=1e-6)
    assert wall["unaccounted_seconds"] <= 0.05 * wall["process_seconds"]
    assert wall["arms"]["cpu"]["stages"] == pytest.approx(r["arms"]["cpu"]["total_seconds"])
    assert "wall " in proc.stdout and "start-up" in proc.stdout
    # OpenMP's idle threads spin briefly, then sleep, unless the user chose otherwise; the record says which.
    assert r["arms"]["cpu"]["threads"]["omp_wait_policy"] == {
        "OMP_WAIT_POLICY": None,
        "GOMP_SPINCOUNT": "10000",
        "source": "accel default",
        "loaded_before": [],
    }


@pytest.mark.parametrize(
    ("given", "first", "runtime", "spins", "source"),
    [
        ({}, "", "10000", "10000", "accel default"),
        ({"GOMP_SPINCOUNT": "500"}, "", "500", "500", "user environment"),
        ({"OMP_WAIT_POLICY": ""}, "", "10000", "10000", "accel default"),
        # scikit-learn's estimators loaded OpenMP before accel: the runtime keeps its own default.
        ({}, "import sklearn.ensemble\n", "300000", "None", "already loaded"),
    ],
)
def test_openmp_spin_is_set_where_the_arms_run_and_the_environment_is_left_alone(given, first, runtime, spins, source):
    """``import accel`` changes nothing in os.environ; the first arm's backend loads OpenMP with
    accel's spin count (libgomp prints what it read with OMP_DISPLAY_ENV) and puts the
    environment back; what the user set is kept."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(given, OMP_DISPLAY_ENV="verbose")
    code = first + (
        "import os, accel\n"
        "before = dict(os.environ)\n"
        "accel.run, accel.tune\n"
        "assert dict(os.environ) == before, 'import accel changed the environment'\n"
        "from accel.backend import cpu_backend\n"
        "cpu_backend()\n"
        "from accel.openmp import settle\n"
        "state = settle()\n"
        "import xgboost  # loaded by now, or here (the user's setting is the environment's)\n"
        "changed = {k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k)}\n"
        "assert not changed & {'GOMP_SPINCOUNT', 'OMP_WAIT_POLICY'}, changed\n"
        "print('state', state['GOMP_SPINCOUNT'], state['source'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"GOMP_SPINCOUNT = '{runtime}'" in proc.stderr, proc.stderr
    assert proc.stdout.split() == ["state", spins, *source.split()], proc.stdout


@pytest.mark.slow  # two flights runs compared
def test_same_seed_same_result(tmp_path, fast_workflow, cpu_run):
    _, first_out = cpu_run
    proc = run_accel("run", str(fast_workflow), "--out", str(tmp_path), "--seed", "11", "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    a = read_json(records_in(first_out)[0])["arms"]["cpu"]["metrics"]
    b = read_json(records_in(tmp_path)[0])["arms"]["cpu"]["metrics"]
    assert a == b


def test_cpu_run_leaves_cupy_and_cudf_unimported(tmp_path):
    code = (
        "import sys\n"
        "from accel.config import build_config\n"
        "from accel.runner import paired_run\n"
        f"cfg = build_config({{'workflow': 'flights', 'rows': 3000, 'out': {str(tmp_path)!r}, 'xgboost': {{'n_estimators': 5}}}}, {{}})\n"
        "record, _ = paired_run(cfg)\n"
        "assert record['arms']['cpu']['status'] == 'ok'\n"
        "print(sorted(m for m in ('cupy', 'cudf', 'cuml', 'rmm') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    if gpu_skip_reason() is None:
        pytest.skip("a GPU is usable here, so auto picks it")
    assert proc.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_full_flights_run_cpu(tmp_path):
    proc = run_accel("run", "flights", "--device", "cpu", "--out", str(tmp_path), timeout=600)
    assert proc.returncode == 0, proc.stderr
    r = read_json(records_in(tmp_path)[0])
    cpu = r["arms"]["cpu"]
    assert cpu["rows"]["loaded"] == 336_776 and cpu["rows"]["with_target"] == 327_346
    assert cpu["metrics"]["auc"] > 0.78
