"""accel compare with its GPU arm: cudf.pandas and cuml.accel on a real GPU.

Skipped, with the reason, where the GPU arm cannot run (no usable GPU, or neither accelerator
installed); the same scripts run on the CPU arm in test_compare_cpu.py.
"""

from __future__ import annotations

import pytest

from accel.bench.compare import resolve_accelerators
from tests.conftest import ROOT, read_json, records_in, run_accel

SCRIPTS = ROOT / "tests" / "compare_scripts"
_, _REASON = resolve_accelerators(None)
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=f"GPU arm of accel compare: {_REASON}")]


def _nvml_sees_this_process() -> bool:
    """Whether NVML lists this process, once it holds device memory, under its own process id."""
    import os

    import cupy
    import pynvml

    held = cupy.zeros(1 << 20)
    pynvml.nvmlInit()
    try:
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        return any(p.pid == os.getpid() for h in handles for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h))
    finally:
        pynvml.nvmlShutdown()
        del held


def test_script_pairs_with_parity_and_a_profile(tmp_path):
    proc = run_accel(
        "compare", str(SCRIPTS / "features_model.py"), "--out", str(tmp_path), "--repeat", "1", "--rtol", "0.05",
        "--", "--rows", "20000",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = read_json(records_in(tmp_path)[0])
    cpu, gpu = r["arms"]["cpu"], r["arms"]["gpu"]
    assert cpu["status"] == "ok" and gpu["status"] == "ok", gpu.get("reason")
    assert gpu["command"][1:4] == ["-m", "accel.bench.compare_boot", "--accelerators"]
    if _nvml_sees_this_process():
        assert gpu["peak_device_mb"] is not None and gpu["peak_device_mb"] > 0  # NVML saw the arm's memory
    else:  # a PID namespace (a container): NVML's ids are the host's, the peak is unknown, not 0
        assert gpu["peak_device_mb"] is None
    assert r["speedup"]["wall_cold"] == pytest.approx(cpu["cold_seconds"] / gpu["cold_seconds"])
    # Same data, same seeds: the row counts agree exactly, the AUCs within the tolerance given.
    assert r["parity"]["stdout"]["lines"]["cpu"] == r["parity"]["stdout"]["lines"]["gpu"]
    assert {f["path"] for f in r["parity"]["files"]} == {"predictions.csv"}
    assert r["profile"] and r["fallbacks"], "the accelerators' profilers reported nothing"


def test_a_script_that_fails_on_the_gpu_arm_only_is_a_finding(tmp_path):
    proc = run_accel("compare", str(SCRIPTS / "fails_on_gpu_only.py"), "--out", str(tmp_path), "--accelerators", "cudf.pandas")
    assert proc.returncode == 1
    assert "fails on the GPU arm only" in proc.stderr and "refuses cudf.pandas" in proc.stderr
    r = read_json(records_in(tmp_path)[0])
    assert r["arms"]["cpu"]["status"] == "ok" and r["arms"]["gpu"]["status"] == "failed"
    assert "refuses cudf.pandas" in r["arms"]["gpu"]["stderr_tail"]
