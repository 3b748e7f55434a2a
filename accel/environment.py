"""The machine a result was measured on: CPU, memory, GPUs, library versions, the code that ran.

Library versions come from installed package metadata, so asking for them imports nothing
(a CPU run must not import cupy or cudf just to report its version).

The code that ran (:func:`git_state`) is found where it runs: from this checkout's own git
(the commit, and whether tracked files have uncommitted changes), or, on a copied tree without
``.git`` (a GPU machine the tree was copied to), from ``accel/_build_info.json``, which
``benchmarks/gpu_check.sh build-info`` writes before the tree is carried, with a digest of every
file so that a tree changed after it was written is reported as such. Every environment
variable that accel or its benchmark scripts read and that is set is recorded
(:func:`environment_overrides`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata as md
import json
import os
import platform
import re
import subprocess
from collections.abc import Iterable
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import psutil

from accel.backend import cpu_threads, module_installed, nvml_info, probe_gpu
from accel.registry import model_libraries

#: Import names of every library an arm may use, in the order they are shown: the models' own
#: libraries are the registry's (a model added there has its library's version recorded).
LIBRARIES = tuple(dict.fromkeys((
    "numpy", "pandas", "pyarrow", *model_libraries(), "dask", "distributed", "optuna",
    "cupy", "cudf", "cuml", "rmm", "dask_cuda", "dask_cudf", "pynvml",
)))  # fmt: skip


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        if found := re.search(r"^model name[^:\n]*:(.*)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE):
            return found.group(1).strip()
    return platform.processor() or platform.machine()


#: The distributions each library ships as (RAPIDS per CUDA major version), asked for by name
#: (a library not listed: its own name): scanning every installed distribution's files
#: (``packages_distributions``) took 0.2-0.3 s.
DISTRIBUTIONS = {
    "sklearn": ("scikit-learn",),
    "xgboost": ("xgboost", "xgboost-cpu"),
    "cupy": ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy"),
    "cudf": ("cudf-cu12", "cudf-cu13", "cudf"),
    "cuml": ("cuml-cu12", "cuml-cu13", "cuml"),
    "rmm": ("rmm-cu12", "rmm-cu13", "rmm"),
    "dask_cuda": ("dask-cuda",),
    "dask_cudf": ("dask-cudf-cu12", "dask-cudf-cu13", "dask-cudf"),
    "pynvml": ("nvidia-ml-py", "pynvml"),
}


def library_versions() -> dict[str, str | None]:
    """``{import name: "distribution==version"}`` or None when not installed.

    Each library's known distributions are asked for by name; only a library that imports but
    is installed under another distribution name falls back to scanning them all.
    """
    scan = lru_cache(maxsize=1)(md.packages_distributions)  # every distribution's files: at most once
    out = {name: installed(DISTRIBUTIONS.get(name, (name,))) for name in LIBRARIES}
    return {name: found or (installed(scan().get(name) or ()) if module_installed(name) else None) for name, found in out.items()}


def installed(distributions: Iterable[str]) -> str | None:
    """``"distribution==version"`` of the first of ``distributions`` that is installed, else None."""
    for dist in distributions:
        with contextlib.suppress(md.PackageNotFoundError):
            return f"{dist}=={md.version(dist)}"
    return None


#: The project's root (the folder holding ``accel/``) and the build-info file a copied tree carries.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
BUILD_INFO = Path(__file__).resolve().parent / "_build_info.json"

#: Environment variables accel, its benchmarks and the libraries it drives read: recorded when set.
OVERRIDE_NAMES = (
    "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_MAX_THREADS",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING",
    "PYTHONHASHSEED", "PYTHONPATH", "KVIKIO_COMPAT_MODE", "KVIKIO_NTHREADS", "NUMBA_CUDA_DRIVER",
)  # fmt: skip
#: Prefixes of variables read by accel (``ACCEL_CACHE_DIR``, ``ACCEL_FAULT_DIR``, the GPU check's
#: ``ACCEL_GPU_CHECK_OVERRIDES``) and by RAPIDS, Dask, XGBoost, UCX, NCCL and Polars.
OVERRIDE_PREFIXES = (
    "ACCEL_", "RAPIDS_", "RMM_", "CUDF_", "LIBCUDF_", "CUPY_", "CUML_", "XGBOOST_", "DASK_", "UCX_", "NCCL_", "POLARS_",
)  # fmt: skip


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(PROJECT_ROOT), *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _own_git() -> bool:
    """Whether this tree is the top of its own git checkout (not a copy inside another repository)."""
    top = _git("rev-parse", "--show-toplevel")
    return bool(top) and Path(str(top).strip()).resolve() == PROJECT_ROOT


def tree_files() -> list[str]:
    """The files of this checkout that a copy of it holds: tracked, and untracked but not ignored."""
    listed = _git("ls-files", "--cached", "--others", "--exclude-standard", "-z") or ""
    return sorted({p for p in listed.split("\0") if p and (PROJECT_ROOT / p).is_file()})


def tree_digest(files: list[str]) -> str:
    """sha256 over each file's path and content (a file that is missing counts as such)."""
    h = hashlib.sha256()
    for rel in sorted(files):
        try:
            content = hashlib.sha256((PROJECT_ROOT / rel).read_bytes()).hexdigest()
        except OSError:
            content = "missing"
        h.update(f"{rel}\0{content}\n".encode())
    return h.hexdigest()


def git_state() -> dict[str, Any]:
    """The code that is running: ``sha``, ``dirty`` and ``source`` (``git`` | ``build-info`` | None).

    ``dirty`` is True when tracked files differ from the commit (``git status --porcelain
    --untracked-files=no``); ``untracked_files`` counts the untracked, not ignored files, which a
    copy of the tree carries too. Without a git checkout of its own, the build-info file is read
    and the files it lists are hashed again: ``tree_matches_build_info`` False means the tree
    changed after the file was written, and the state is then reported dirty.
    """
    if _own_git():
        status = _git("status", "--porcelain", "--untracked-files=no")
        untracked = _git("ls-files", "--others", "--exclude-standard", "-z")
        state: dict[str, Any] = {
            "sha": (_git("rev-parse", "HEAD") or "").strip() or None,
            "dirty": None if status is None else bool(status.strip()),
            "source": "git",
            "untracked_files": None if untracked is None else len([p for p in untracked.split("\0") if p]),
        }
        if state["dirty"]:
            diff = _git("diff", "HEAD")
            state["diff_sha256"] = hashlib.sha256(diff.encode()).hexdigest() if diff is not None else None
        return state
    try:
        info = json.loads(BUILD_INFO.read_text())
        git = info["git"]
        files = list(info["files"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        reason = (
            "no git checkout here and no accel/_build_info.json (benchmarks/gpu_check.sh build-info writes it)"
            if isinstance(exc, FileNotFoundError)
            else f"accel/_build_info.json unreadable ({type(exc).__name__})"
        )
        return {"sha": None, "dirty": None, "source": None, "reason": reason}
    matches = tree_digest(files) == info.get("tree_digest")
    return {
        "sha": git.get("sha"),
        "dirty": bool(git.get("dirty")) or not matches,
        "source": "build-info",
        "untracked_files": git.get("untracked_files"),
        "diff_sha256": git.get("diff_sha256"),
        "build_info_written_at": info.get("written_at"),
        "tree_matches_build_info": matches,
    }


def write_build_info(path: Path | None = None) -> dict[str, Any]:
    """Write the build-info file a copied tree (no ``.git``) reads its provenance from.

    Run in the git checkout, right before the tree is carried. Raises RuntimeError outside one.
    """
    if not _own_git():
        raise RuntimeError(f"{PROJECT_ROOT} is not the top of a git checkout: no build info to write")
    files = [f for f in tree_files() if f != str(BUILD_INFO.relative_to(PROJECT_ROOT))]
    info = {
        "git": git_state(),
        "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "files": files,
        "tree_digest": tree_digest(files),
    }
    from accel.files import REPLACE, write_new

    target = Path(path) if path is not None else BUILD_INFO
    write_new(target, (json.dumps(info, indent=1) + "\n").encode(), "the build info", exists=REPLACE)
    return info


#: What a record holds instead of a value that may be a credential.
NOT_RECORDED = "(set; value not recorded: it may hold a credential)"
#: Variables whose values are settings, never credentials: recorded as they are.
RECORDED_VALUES = (
    *OVERRIDE_NAMES, "ACCEL_CACHE_DIR", "ACCEL_OUT_DIR", "ACCEL_GPU_CHECK_OVERRIDES", "ACCEL_FAULT_DIR",
    "ACCEL_DASK_COLLECTIVE_TIMEOUT_S", "RMM_DEBUG_LOG_FILE", "CUDF_SPILL", "CUDF_SPILL_ON_DEMAND", "CUML_LOG_LEVEL",
)  # fmt: skip
#: A value of another variable of :data:`OVERRIDE_PREFIXES` is recorded when it is this plain: a
#: number, a word, a size, a path, an address. An opaque run of letters and digits (an unknown
#: token's form) is not.
_PLAIN_VALUE = re.compile(r"[\w.,:/=+ %@~-]{0,400}")
_OPAQUE = re.compile(r"(?=[A-Za-z0-9+/_-]*[0-9])(?=[A-Za-z0-9+/_-]*[A-Za-z])[A-Za-z0-9+/_-]{24,}")


def recordable_value(name: str, value: str) -> str:
    """``value`` as a record may hold it.

    The variables of :data:`RECORDED_VALUES` (an allow-list of settings) are recorded as they
    are, any credential in them hidden by its form (:func:`accel.credentials.hide`). Another
    variable's value is recorded only when it is plain (a number, a path, an address without
    credentials) and its name does not say it holds a secret; else :data:`NOT_RECORDED`.
    """
    from accel.credentials import hide, holds_secret

    if name in RECORDED_VALUES:
        return hide(value)
    plain = _PLAIN_VALUE.fullmatch(value) is not None and _OPAQUE.search(value.replace("/", " ")) is None
    return value if plain and not holds_secret(name, value) else NOT_RECORDED


def environment_overrides(environ: Any = None) -> dict[str, str]:
    """Every variable accel, its benchmarks or the libraries it drives read that is set here.

    (accel never sets ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` in its own environment: set,
    they are the user's.) A value that may be a credential is replaced by
    :data:`NOT_RECORDED` (:func:`recordable_value`): records are shared and committed. Only
    these variables are recorded: names accel and its libraries read (an allow-list of names and
    prefixes), never the rest of the environment.
    """
    env = os.environ if environ is None else environ
    return {n: recordable_value(n, env[n]) for n in sorted(env) if n in OVERRIDE_NAMES or n.startswith(OVERRIDE_PREFIXES)}


def collect_environment() -> dict[str, Any]:
    """Everything ``accel info`` shows and every run record carries. Never raises on a CPU machine."""
    probe = probe_gpu()
    nvml = nvml_info()
    vm = psutil.virtual_memory()
    nvml_gpus = {g["index"]: g for g in nvml.get("gpus", [])}
    gpus = [
        {
            "index": dev.index,
            "name": dev.name,
            "memory_gb": round(dev.memory_total_bytes / 1024**3, 1),
            "driver": nvml.get("driver"),
            "cuda_driver_version": probe.driver_version,
            "memory_used_gb": round(extra["memory_used_bytes"] / 1024**3, 2) if (extra := nvml_gpus.get(dev.index)) else None,
        }
        for dev in probe.devices
    ]
    git = git_state()
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
        "git_sha": git["sha"],
        "git": git,
        "overrides": environment_overrides(),
        # The GPU's reason as a skipped GPU arm's record says it.
        "arms": {"cpu": {"can_run": True, "reason": None}, "gpu": {"can_run": probe.usable, "reason": probe.why_not()}},
    }
