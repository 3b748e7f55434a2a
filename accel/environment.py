"""The machine a result was measured on: CPU, memory, GPUs, library versions, git sha.

Library versions come from installed package metadata, so asking for them imports nothing
(a CPU run must not import cupy or cudf just to report its version).
"""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import psutil

from accel.backend import cpu_threads, nvml_info, probe_gpu

#: Import names of every library an arm may use, in the order they are shown.
LIBRARIES = (
    "numpy", "pandas", "pyarrow", "sklearn", "xgboost", "dask", "distributed", "optuna",
    "cupy", "cudf", "cuml", "rmm", "dask_cuda", "dask_cudf", "pynvml",
)  # fmt: skip


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def library_versions() -> dict[str, str | None]:
    """``{import name: "distribution==version"}`` or None when not installed."""
    distributions = md.packages_distributions()
    out: dict[str, str | None] = {}
    for name in LIBRARIES:
        dists = distributions.get(name) or []
        found = None
        for dist in dists:
            try:
                found = f"{dist}=={md.version(dist)}"
                break
            except md.PackageNotFoundError:
                continue
        out[name] = found
    return out


def git_sha() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and sha else None


def collect_environment() -> dict[str, Any]:
    """Everything ``accel info`` shows and every run record carries. Never raises on a CPU machine."""
    probe = probe_gpu()
    nvml = nvml_info()
    vm = psutil.virtual_memory()
    gpus = []
    nvml_gpus = {g["index"]: g for g in nvml.get("gpus", [])}
    for dev in probe.devices:
        extra = nvml_gpus.get(dev.index, {})
        gpus.append(
            {
                "index": dev.index,
                "name": dev.name,
                "memory_gb": round(dev.memory_total_bytes / 1024**3, 1),
                "driver": nvml.get("driver"),
                "cuda_driver_version": probe.driver_version,
                "memory_used_gb": round(extra["memory_used_bytes"] / 1024**3, 2) if extra else None,
            }
        )
    arms = {
        "cpu": {"can_run": True, "reason": None},
        "gpu": {"can_run": probe.usable, "reason": probe.reason},
    }
    return {
        "cpu_model": cpu_model(),
        "cores": {
            "physical": psutil.cpu_count(logical=False),
            "logical": psutil.cpu_count(logical=True),
            "available": cpu_threads(),
        },
        "ram_gb": round(vm.total / 1024**3, 1),
        "ram_available_gb": round(vm.available / 1024**3, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "gpus": gpus,
        "gpu_probe": probe.as_dict(),
        "nvml": {k: v for k, v in nvml.items() if k != "gpus"},
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "versions": library_versions(),
        "git_sha": git_sha(),
        "arms": arms,
    }
