"""Provenance: every record names the code that ran (commit, uncommitted changes) and the
environment overrides it ran under, found where it runs: in this checkout from git, in a copy
without ``.git`` (a GPU machine the tree was copied to) from the build-info file written before carrying."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from accel.environment import NOT_RECORDED, PROJECT_ROOT, environment_overrides, git_state, tree_files, write_build_info
from tests.conftest import ROOT, run_accel

needs_git = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and this checkout's .git"
)


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


@needs_git
def test_state_in_this_checkout_is_read_from_git():
    state = git_state()
    assert state["source"] == "git"
    assert state["sha"] == _git("rev-parse", "HEAD").strip()
    assert state["dirty"] == bool(_git("status", "--porcelain", "--untracked-files=no").strip())
    assert ("diff_sha256" in state) == state["dirty"]


def _copy_tree(dest: Path) -> Path:
    # What a call to the GPU machine carries: the tracked and untracked-but-not-ignored files, no .git.
    for rel in tree_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PROJECT_ROOT / rel, target)
    return dest


def _state_in(tree: Path, env: dict | None = None) -> dict:
    code = "import json; from accel.environment import git_state; print(json.dumps(git_state()))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree), **(env or {})},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_git
def test_a_copied_tree_reads_the_build_info_and_notices_later_changes(tmp_path):
    tree = _copy_tree(tmp_path / "tree")
    state = _state_in(tree)
    assert state["source"] is None and state["sha"] is None and "_build_info.json" in state["reason"]

    info = write_build_info(tree / "accel" / "_build_info.json")
    assert info["git"]["sha"] == _git("rev-parse", "HEAD").strip()
    state = _state_in(tree)
    assert state["source"] == "build-info" and state["sha"] == info["git"]["sha"]
    assert state["tree_matches_build_info"] is True and state["dirty"] == info["git"]["dirty"]

    with (tree / "accel" / "metrics.py").open("a") as f:
        f.write("# changed after the build info was written\n")
    state = _state_in(tree)
    assert state["tree_matches_build_info"] is False and state["dirty"] is True


@needs_git
def test_a_copy_inside_another_repository_does_not_take_that_repository_s_sha(tmp_path):
    outer = tmp_path / "outer"
    outer.mkdir()
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    subprocess.run(
        ["git", "-C", str(outer), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
        check=True,
    )
    tree = _copy_tree(outer / "copy")
    state = _state_in(tree)
    assert state["source"] is None and state["sha"] is None, state


def test_overrides_are_the_variables_accel_and_its_libraries_read():
    env = {
        "STEP_TIMEOUT": "600",  # a gpu_check.sh setting: recorded through ACCEL_GPU_CHECK_OVERRIDES
        "ACCEL_GPU_CHECK_OVERRIDES": "STEP_TIMEOUT=600 GROUPBY_ROWS=1e7",
        "ACCEL_CACHE_DIR": "/tmp/c",
        "CUDA_VISIBLE_DEVICES": "0",
        "RMM_DEBUG_LOG_FILE": "/tmp/rmm.log",
        "DASK_DISTRIBUTED__WORKER__DAEMON": "False",
        "HOME": "/root",
        "PATH": "/usr/bin",
    }
    got = environment_overrides(env)
    assert got == {k: v for k, v in env.items() if k not in ("STEP_TIMEOUT", "HOME", "PATH")}


@pytest.mark.parametrize(
    "name,value",
    [
        ("DASK_COILED__TOKEN", "coiled-abc123"),
        ("ACCEL_S3_SECRET_ACCESS_KEY", "wJalrXUtnFEMI"),
        ("DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY", "/home/me/.ssh/key.pem"),
        ("XGBOOST_TRACKER_PASSWORD", "hunter2"),
        ("RAPIDS_API_KEY", "k"),
        ("ACCEL_STORAGE", "postgresql://me:hunter2@db.internal/optuna"),
        ("DASK_SCHEDULER_ADDRESS", "tls://user:pw@10.0.0.1:8786"),
    ],
)
def test_credentials_are_never_recorded_only_that_they_are_set(name, value):
    got = environment_overrides({name: value, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"})
    assert got[name] == NOT_RECORDED and value not in json.dumps(got)
    assert got["DASK_DISTRIBUTED__WORKER__DAEMON"] == "False", "other values are recorded as they are"


@pytest.mark.slow  # a whole run in a process of its own
def test_a_credential_in_the_environment_reaches_no_record(tmp_path):
    secret = "coiled-token-abc123-do-not-write"
    env = {"DASK_COILED__TOKEN": secret, "ACCEL_DB_URL": f"postgresql://me:{secret}@db/x"}
    info = run_accel("info", "--json", env=env)
    assert info.returncode == 0, info.stderr
    assert secret not in info.stdout and json.loads(info.stdout)["overrides"]["DASK_COILED__TOKEN"] == NOT_RECORDED
    run = run_accel("run", "flights", "--device", "cpu", "--rows", "3000", "--out", str(tmp_path), env=env)
    assert run.returncode == 0, run.stderr
    assert secret not in run.stdout + run.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def test_info_records_the_code_and_the_overrides():
    proc = run_accel("info", "--json", env={"OMP_WAIT_POLICY": "ACTIVE", "ACCEL_GPU_CHECK_OVERRIDES": "REPEATS=5"})
    assert proc.returncode == 0, proc.stderr
    env = json.loads(proc.stdout)
    assert env["overrides"]["OMP_WAIT_POLICY"] == "ACTIVE", "set by the user, so an override"
    assert env["overrides"]["ACCEL_GPU_CHECK_OVERRIDES"] == "REPEATS=5"
    assert env["git"]["source"] in ("git", "build-info", None)
    assert env["git_sha"] == env["git"]["sha"], "the old key stays for readers"


def test_accel_s_own_wait_policy_is_not_an_override():
    code = "import json; from accel.environment import environment_overrides as o; print(json.dumps(o()))"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "OMP_WAIT_POLICY" not in json.loads(proc.stdout)


def test_library_versions_name_the_distributions_the_slow_scan_finds():
    """Each library's distribution is asked for by name (fast); the answer is the one a scan of
    every installed distribution gives (what it was computed from before), here and in CI's
    RAPIDS stage."""
    import importlib.metadata as md

    from accel.environment import LIBRARIES, installed, library_versions

    scan = md.packages_distributions()
    expected = {name: installed(scan.get(name) or ()) for name in LIBRARIES}
    assert library_versions() == expected
    assert expected["numpy"] and expected["sklearn"].startswith("scikit-learn==")
