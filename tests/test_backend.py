"""Device detection and dispatch, on this machine for real: no patched results.

Situations that need a package absent or present run where that holds and skip, with the
reason, elsewhere; CI runs this file twice, without and with RAPIDS installed (see .ci/run).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from accel.backend import GPU_REQUIRED, cpu_backend, get_backend, nvml_info, probe_capabilities, probe_gpu
from accel.errors import DeviceUnavailable
from tests.conftest import ROOT, gpu_skip_reason


def installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def probe_in_subprocess(env: dict[str, str] | None = None) -> dict:
    """Run the probe in a fresh interpreter; report it and what it imported."""
    code = (
        "import json, sys; from accel.backend import probe_gpu; p = probe_gpu(); "
        "print(json.dumps({'probe': p.as_dict(), 'loaded': sorted(m for m in ('cupy','cudf','cuml','rmm') if m in sys.modules)}))"
    )
    import os

    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, **(env or {})}
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


no_gpu_here = pytest.mark.skipif(gpu_skip_reason() is None, reason="a GPU is usable here: these check the no-GPU paths")


@no_gpu_here
def test_probe_never_raises_and_says_why():
    result = probe_in_subprocess()
    probe = result["probe"]
    assert probe["usable"] is False
    assert probe["reason"] and "\n" not in probe["reason"]
    assert probe["problems"], "each cause is named"
    # Detection on a machine without a GPU imports no GPU library, installed or not.
    assert result["loaded"] == []


@no_gpu_here
def test_no_driver_is_named():
    probe = probe_gpu()
    if "no_driver" not in probe.problems:
        pytest.skip(f"this machine has a CUDA driver; the probe said: {probe.reason}")
    assert "no CUDA driver" in probe.reason


@pytest.mark.skipif(installed("cupy"), reason="cupy is installed here; the 'CuPy absent' case runs where it is not")
def test_cupy_absent_is_named():
    probe = probe_gpu()
    assert probe.libraries["cupy"] == "missing"
    assert "rapids_missing" in probe.problems
    assert "RAPIDS not installed" in probe.reason and "cupy" in probe.reason
    assert "pip install" in probe.reason


@pytest.mark.skipif(not installed("cupy"), reason="cupy not installed: runs in CI's RAPIDS-without-GPU stage")
@no_gpu_here
def test_cupy_installed_without_driver():
    # What CuPy itself says here, for real: not available, and a device count raises.
    code = (
        "import cupy; print(cupy.cuda.is_available());\n"
        "try:\n cupy.cuda.runtime.getDeviceCount(); print('no error')\n"
        "except cupy.cuda.runtime.CUDARuntimeError as e: print('CUDARuntimeError')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "CUDARuntimeError"], out.stdout + out.stderr
    probe = probe_gpu()
    assert probe.libraries["cupy"] == "installed" and not probe.usable
    assert "rapids_missing" not in probe.problems or "cudf" in probe.reason


@pytest.mark.skipif(not installed("cudf"), reason="cudf not installed: runs in CI's RAPIDS-without-GPU stage")
@no_gpu_here
def test_cudf_installed_but_first_allocation_fails():
    # cuDF imports without a device and fails at its first allocation; the smoke allocations catch it.
    out = subprocess.run(
        [sys.executable, "-c", "import cudf; print(cudf.__version__)"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, "cuDF imports without a GPU"
    caps = probe_capabilities()  # as probe_gpu asks once the driver and a device are there
    reason = next(c["reason"] for name in GPU_REQUIRED if not (c := caps[name])["available"])
    assert not caps["cudf"]["available"] and reason.startswith("installed but cannot use the GPU")


@pytest.mark.skipif(not installed("pynvml"), reason="nvidia-ml-py not installed (it is in the test extra)")
@no_gpu_here
def test_nvml_library_missing_is_reported_not_raised():
    info = nvml_info()
    if info["available"]:
        pytest.skip("NVML works on this machine")
    assert "NVML" in info["reason"]


@pytest.mark.skipif(not installed("dask_cuda"), reason="dask-cuda not installed: runs in CI's RAPIDS-without-GPU stage")
@no_gpu_here
def test_local_cuda_cluster_raises_without_nvml_but_detection_does_not():
    code = (
        "from dask_cuda import LocalCUDACluster\n"
        "try:\n LocalCUDACluster(n_workers=1, dashboard_address=None)\n"
        "except Exception as e: print(type(e).__name__)\n"
        "else: print('started')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert out.stdout.strip().splitlines()[-1].startswith("NVMLError"), out.stdout + out.stderr
    assert probe_gpu().usable is False


def test_cpu_backend_carries_the_cpu_stack():
    import numpy
    import pandas
    from sklearn.ensemble import RandomForestClassifier

    b = cpu_backend()
    assert b.name == "cpu" and b.xp is numpy and b.xdf is pandas and b.xgb_device == "cpu"
    assert b.models["random_forest_classifier"] is RandomForestClassifier
    assert b.device_memory_in_use() is None
    with pytest.raises(KeyError, match="unknown model"):
        b.models["nope"]


@no_gpu_here
def test_auto_gives_cpu_and_gpu_refuses_with_the_reason():
    assert get_backend("auto").name == "cpu"
    with pytest.raises(DeviceUnavailable) as info:
        get_backend("gpu")
    assert probe_gpu().reason in str(info.value)


@no_gpu_here
def test_a_gpu_arm_that_cannot_run_is_said_in_the_same_words_everywhere():
    """The record's reason, the terminal's line, ``accel info`` and the ``--device gpu`` refusal
    say why from one place (``gpu_unavailable``), with the probe's reason once."""
    from accel.backend import GPU_UNAVAILABLE, resolve_arms
    from accel.environment import collect_environment
    from accel.record import Arm
    from accel.report.console import arm_status_line

    probe = probe_gpu()
    words = probe.why_not()
    assert words == f"{GPU_UNAVAILABLE}: {probe.reason}"
    assert resolve_arms("auto").gpu_skip == words, "the record's reason"
    assert collect_environment()["arms"]["gpu"] == {"can_run": False, "reason": words}, "accel info"
    assert arm_status_line("gpu", Arm(status="skipped", reason=words)) == f"GPU arm skipped: {words}", "the terminal"
    with pytest.raises(DeviceUnavailable) as info:
        get_backend("gpu")
    assert str(info.value) == f"--device gpu: {words}"
    assert resolve_arms("auto", needs=("xgboost_cuda",)).gpu_skip == probe.why_not("cupy", "xgboost_cuda")
    assert probe.why_not("cupy").startswith(f"{GPU_UNAVAILABLE}: cupy: ")


@no_gpu_here
def test_empty_cuda_visible_devices_never_raises():
    probe = probe_in_subprocess({"CUDA_VISIBLE_DEVICES": ""})["probe"]
    assert probe["usable"] is False and probe["reason"]


def test_required_gpu_libraries():
    assert set(GPU_REQUIRED) == {"cupy", "cudf"}


def test_xgboost_allocation_follows_the_build():
    from accel.backend import xgboost_allocation

    with_rmm = xgboost_allocation({"USE_CUDA": True, "USE_RMM": True})
    assert with_rmm["through_rmm"] is True and with_rmm["set_config"] == {"use_rmm": True}
    # Built without RMM (the PyPI wheel): use_rmm would only turn XGBoost's caching allocator
    # off, so nothing is set and the record says XGBoost allocates outside the pool.
    without = xgboost_allocation({"USE_CUDA": True, "USE_RMM": False})
    assert without["through_rmm"] is False and without["set_config"] == {} and "outside the RMM pool" in without["allocator"]
    assert xgboost_allocation({})["through_rmm"] is False


@pytest.mark.skipif(not installed("xgboost"), reason="xgboost not installed")
def test_xgboost_build_info_read_without_import_matches_the_package():
    code = (
        "import json, sys; from accel.backend import xgboost_build_info; info = xgboost_build_info(); "
        "loaded = 'xgboost' in sys.modules; import xgboost; "
        "print(json.dumps([loaded, info.get('USE_RMM'), xgboost.build_info().get('USE_RMM'), info.get('USE_CUDA'), "
        "xgboost.build_info().get('USE_CUDA')]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    loaded, rmm_lib, rmm_pkg, cuda_lib, cuda_pkg = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded is False and rmm_lib == rmm_pkg and cuda_lib == cuda_pkg


def test_cpu_arm_has_no_pool_and_xgboost_no_device_memory():
    backend = cpu_backend()
    assert backend.rmm_pool_configured() is None and backend.rmm_pool_bytes() is None
    assert backend.xgboost_allocation()["through_rmm"] is False


def test_visible_gpu_memory_is_read_where_nvml_is_and_none_elsewhere():
    from accel.backend import visible_gpu_memory

    nvml = nvml_info()
    memory = visible_gpu_memory(1)
    if not nvml["available"] or not nvml.get("gpus"):
        assert memory is None
    elif memory is not None:  # the first visible GPU: free within total, total as NVML lists GPUs
        [(free, total)] = memory
        assert 0 <= free <= total and total in {g["memory_total_bytes"] for g in nvml["gpus"]}
