"""benchmarks/gpu_check.sh as far as a CPU machine can test it: syntax, the wheel install, a dry run."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash and timeout")


def run_script(*phases: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *phases], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
        env={**os.environ, "PYTHON": sys.executable, **env},
    )  # fmt: skip


def test_syntax():
    proc = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def make_wheel(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        f"{name}/__init__.py": "VALUE = 42\n",
        f"{name}-0.1.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n",
        f"{name}-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def digest(text: str) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()

    record = "".join(f"{k},sha256={digest(v)},{len(v)}\n" for k, v in files.items())
    files[f"{name}-0.1.dist-info/RECORD"] = record + f"{name}-0.1.dist-info/RECORD,,\n"
    path = folder / f"{name}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
    return path


def test_install_joins_split_wheels_and_skips_incomplete_ones(tmp_path):
    wheels, site = tmp_path / "whl", tmp_path / "site"
    make_wheel(wheels / "core", "tinyone")
    # A wheel cut in two parts carried in two folders, as fetch-wheels.sh cuts XGBoost and libcudf.
    big = make_wheel(tmp_path / "scratch", "tinytwo")
    data = big.read_bytes()
    (wheels / "part1").mkdir(parents=True)
    (wheels / "part2").mkdir(parents=True)
    (wheels / "part1" / f"{big.name}.00").write_bytes(data[: len(data) // 2])
    # Only the first part has arrived: the wheel is reported incomplete and skipped.
    env = {"OUT": str(tmp_path / "out"), "WHEELS": str(wheels), "SITE": str(site)}
    proc = run_script("install", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "incomplete wheel tinytwo" in proc.stdout
    assert (site / "tinyone" / "__init__.py").exists() and not (site / "tinytwo").exists()
    (wheels / "part2" / f"{big.name}.01").write_bytes(data[len(data) // 2 :])
    proc = run_script("install", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (site / "tinytwo" / "__init__.py").exists()
    assert "installed tinytwo" in proc.stdout and "installed tinyone" not in proc.stdout, "installed once"
    assert "installed tinytwo" in (tmp_path / "out" / "log").read_text()


@pytest.mark.slow
def test_dry_run_runs_every_cpu_part(tmp_path):
    out = tmp_path / "out"
    env = {"OUT": str(out), "DRY_RUN": "1", "DATA": str(tmp_path / "data"), "SITE": str(tmp_path / "site")}
    proc = run_script(env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    log = (out / "log").read_text()
    assert "gpu_check: all steps passed" in log
    for step in (
        "accel-info",
        "run-flights",
        "run-flights-fp16",
        "bench-groupby",
        "bench-join",
        "bench-models",
        "bench-crossover",
        "report",
    ):
        assert f"== {step}: exit 0" in log, step
    assert "dry run: pytest -m gpu not run" in log
    records = {p.name: json.loads(p.read_text()) for p in sorted((out / "results").glob("*.json"))}
    results = list(records)
    runs = [n for n, r in records.items() if r.get("kind") == "run"]  # accel run flights: <date>-flights-NNN.json
    benches = [n for n in results if n not in runs]
    kinds = [n.split("-", 3)[-1].rsplit("-", 2)[0] for n in benches]
    assert sorted(kinds) == ["crossover", "db-groupby", "db-join", "models"], results
    assert len(runs) == 2, results  # accel run flights, float32 and float16
    for name in runs:
        record = json.loads((out / "results" / name).read_text())
        assert record["arms"]["gpu"]["status"] == "skipped" and record["arms"]["cpu"]["status"] == "ok"
    for p in (out / "results").glob("*.json"):
        if p.name in runs:
            continue
        result = json.loads(p.read_text())
        assert result["gpu"]["status"] in ("skipped", "ok") and result["environment"]["cpu_model"]
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")
    # What comes back from one call to the GPU machine: at most 8 files, two folders down.
    assert len([p for p in out.rglob("*") if p.is_file()]) <= 8


def test_a_failing_step_fails_the_script(tmp_path):
    env = {"OUT": str(tmp_path / "out"), "DRY_RUN": "1", "DATA": str(tmp_path / "data"), "SITE": str(tmp_path / "site")}
    proc = run_script("nosuchphase", env=env)
    assert proc.returncode == 1
    assert "unknown phase 'nosuchphase'" in proc.stdout and "gpu_check: FAILED" in proc.stdout


def test_every_step_leaves_its_log_and_results_packed_as_it_ends(tmp_path):
    """Outside a dry run each step's raw log is packed with the results as the step ends, into the
    invocation's archive (a second invocation in the same call gets its own), so that a call cut
    short still brings back every step it ended; at most 8 files come back."""
    import tarfile

    out = tmp_path / "out"
    env = {"OUT": str(out), "DATA": str(tmp_path / "data"), "SITE": str(tmp_path / "site"), "PATH": os.environ["PATH"]}
    for _ in range(2):
        run_script("info", env=env)  # nvidia-smi fails on a machine without a GPU; accel info runs
    archives = sorted(p.name for p in out.glob("*.tgz"))
    assert archives == ["results-2.tgz", "results.tgz"], archives
    with tarfile.open(out / "results.tgz") as tar:
        names = tar.getnames()
        logs = {
            n.split("/", 1)[1]: tar.extractfile(n).read().decode() for n in names if n.startswith("steps/") and n.endswith(".log")
        }
    assert sorted(logs) == ["01-nvidia-smi.log", "02-accel-info.log"], names
    assert "== accel-info: exit 0" in logs["02-accel-info.log"] and "accel" in logs["02-accel-info.log"]
    assert "== nvidia-smi: exit" in logs["01-nvidia-smi.log"]
    assert not (out / "results").exists() and len([p for p in out.rglob("*") if p.is_file()]) <= 8
