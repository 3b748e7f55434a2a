"""GPU capabilities one library at a time, and where each stage of a run ran.

On this machine for real (no patched probe): the per-library reasons where RAPIDS is absent, the
refusal of a GPU arm that lacks a library the work needs, and the per-stage devices of the CPU arm.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from accel.backend import CAPABILITIES, cpu_backend, gpu_backend, probe_gpu
from accel.errors import DeviceUnavailable
from tests.conftest import ROOT, gpu_skip_reason, read_json, records_in, run_accel

no_gpu_here = pytest.mark.skipif(gpu_skip_reason() is None, reason="a GPU is usable here: these check the no-GPU paths")


def _probe_in_subprocess() -> dict:
    code = (
        "import json, sys; from accel.backend import probe_gpu; p = probe_gpu(); "
        "print(json.dumps({'probe': p.as_dict(), 'loaded': sorted(m for m in ('cupy','cudf','cuml','rmm') if m in sys.modules)}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=dict(os.environ)
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@no_gpu_here
def test_each_library_is_reported_with_its_own_reason_and_nothing_is_imported():
    result = _probe_in_subprocess()
    caps = result["probe"]["capabilities"]
    assert list(caps) == list(CAPABILITIES)
    for name, state in caps.items():
        assert state["available"] is False and state["reason"] and "\n" not in state["reason"], name
        module = CAPABILITIES[name][0]
        if importlib.util.find_spec(module) is None and module != "xgboost":
            assert f"{module} not installed" in state["reason"], (name, state)
    # The whole-arm verdict is unchanged, and asking library by library imports nothing either.
    assert result["probe"]["usable"] is False and result["probe"]["reason"]
    assert result["loaded"] == []


@no_gpu_here
def test_a_gpu_arm_for_part_of_the_work_names_the_library_it_lacks():
    with pytest.raises(DeviceUnavailable, match=r"cupy: .*; xgboost_cuda: "):
        gpu_backend(needs=("xgboost_cuda",))
    with pytest.raises(ValueError, match="unknown capability"):
        gpu_backend(needs=("tensorflow",))
    assert probe_gpu().missing("cupy") and probe_gpu().available() is True


def test_stage_devices_of_the_cpu_arm():
    assert cpu_backend().stage_devices("cpu") == {
        "load": "cpu (pandas)", "features": "cpu (pandas)", "to_device": "cpu (numpy)", "train": "cpu", "predict": "cpu",
    }  # fmt: skip


def test_the_run_record_says_where_each_stage_ran(tmp_path):
    proc = run_accel("run", "flights", "--rows", "2000", "--device", "auto", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    [path] = records_in(tmp_path)
    record = read_json(path)
    cpu = record["arms"]["cpu"]
    assert cpu["stage_devices"] == {
        "load": "cpu (pandas)", "features": "cpu (pandas)", "to_device": "cpu (numpy)", "train": "cpu", "predict": "cpu",
    }  # fmt: skip
    gpu = record["arms"]["gpu"]
    if gpu["status"] == "ok":
        assert gpu["stage_devices"]["train"].startswith("cuda") and gpu["stage_devices"]["load"].endswith("(cudf)")
    else:
        assert gpu["status"] == "skipped" and gpu["stage_devices"] == {}
    assert record["environment"]["gpu_probe"]["capabilities"].keys() == CAPABILITIES.keys()


@no_gpu_here
def test_bench_models_skips_the_gpu_arm_naming_cupy(tmp_path):
    proc = run_accel(
        "bench", "models", "--rows", "300", "--features", "8", "--models", "ridge,xgboost",
        "--repeats", "1", "--results", str(tmp_path), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["gpu"]["status"] == "skipped" and result["gpu"]["reason"].startswith("GPU unavailable: cupy: ")
    assert all(m["gpu"]["status"] == "skipped" for m in result["models"])
