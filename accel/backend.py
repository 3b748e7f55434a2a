"""Device detection and the backend object for each arm.

This is the only module of accel that imports ``cupy``, ``cudf``, ``cuml`` or ``rmm``.
Everything else receives a :class:`Backend` and works through its modules:
``backend.xp`` (``cupy`` | ``numpy``), ``backend.xdf`` (``cudf`` | ``pandas``) and
``backend.models`` (cuML | scikit-learn classes; XGBoost on either with ``backend.xgb_device``).

Detection (:func:`probe_gpu`) never raises, whatever is installed. It asks the CUDA driver
directly (``libcuda.so.1`` through ctypes) before it imports any RAPIDS library, so on a
machine without a GPU a run leaves ``cupy`` and ``cudf`` out of ``sys.modules`` even with
``--device auto``.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, TypeVar

from accel.errors import DeviceUnavailable, first_line

ArmName = Literal["cpu", "gpu"]
T = TypeVar("T")

#: Libraries the GPU arm cannot run without; the others of :data:`CAPABILITIES` serve some work only.
GPU_REQUIRED = ("cupy", "cudf")

_XGBOOST_NO_CUDA = "xgboost is built without CUDA (install the xgboost wheel from PyPI, not xgboost-cpu)"
INSTALL_HINT = "pip install 'accel-tabular[gpu-cu12]' (or [gpu-cu13] for a CUDA 13 driver)"

# CUDA driver API error codes we name in messages (cuda.h).
_CU_ERRORS = {
    3: "CUDA_ERROR_NOT_INITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY",
    35: "CUDA_ERROR_INSUFFICIENT_DRIVER",
    101: "CUDA_ERROR_INVALID_DEVICE",
    999: "CUDA_ERROR_UNKNOWN",
}


@dataclass(frozen=True)
class GpuDevice:
    """One CUDA device as the driver reports it."""

    index: int
    name: str
    memory_total_bytes: int


#: The words for a GPU arm that cannot run on this machine, before the probe's reason (as
#: cuML's benchmark writes its missing arm's reason).
GPU_UNAVAILABLE = "GPU unavailable"


def gpu_unavailable(why: str | None = None) -> str:
    """``GPU unavailable: no CUDA driver (...)``: why the GPU arm cannot run here, said once for
    every output: the ``reason`` of a skipped GPU arm in a record, the terminal's line about it,
    the GPU arm of ``accel info`` and the ``--device gpu`` refusal."""
    return f"{GPU_UNAVAILABLE}: {why}" if why else GPU_UNAVAILABLE


@dataclass(frozen=True)
class GpuProbe:
    """What :func:`probe_gpu` found.

    Attributes
    ----------
    usable : bool
        True when the GPU arm can run here (driver, device and the required RAPIDS libraries).
    reason : str or None
        Why the GPU arm cannot run, one line; None when usable.
    problems : tuple of str
        Machine-readable causes: ``no_driver``, ``no_device``, ``rapids_missing``,
        ``xgboost_no_cuda``, ``rapids_broken``.
    driver_version : str or None
        CUDA version the driver supports, e.g. ``"13.0"``.
    devices : tuple of GpuDevice
        Devices the driver sees (respects ``CUDA_VISIBLE_DEVICES``).
    libraries : dict
        For each RAPIDS library, ``"installed"`` or ``"missing"``.
    capabilities : dict
        For each GPU library of :data:`CAPABILITIES`, ``{"available": bool, "reason": str or
        None}``: whether the work it gives can run on the GPU here, and why not. The whole
        GPU arm (``usable``) needs CuPy, cuDF and XGBoost-CUDA; a stage that needs less (XGBoost
        on CuPy arrays, an RMM pool) can run on the GPU before cuDF is there.
    """

    usable: bool
    reason: str | None
    problems: tuple[str, ...] = ()
    driver_version: str | None = None
    devices: tuple[GpuDevice, ...] = ()
    libraries: dict[str, str] = field(default_factory=dict)
    capabilities: dict[str, dict[str, Any]] = field(default_factory=dict)

    def available(self, *names: str) -> bool:
        """Whether every named capability is available."""
        return all(self.capabilities.get(n, {}).get("available") for n in names)

    def missing(self, *names: str) -> str | None:
        """Why the named capabilities are not all available (one line), or None."""
        why = [f"{n}: {self.capabilities.get(n, {}).get('reason') or 'not probed'}" for n in names if not self.available(n)]
        return "; ".join(why) or None

    def why_not(self, *needs: str) -> str | None:
        """Why the GPU arm cannot run here, in the words every output uses (:func:`gpu_unavailable`);
        None when it can. ``needs``: only these capabilities are asked for; none, the whole GPU arm."""
        why = self.missing(*needs) if needs else self.reason  # None exactly when usable
        return None if why is None else gpu_unavailable(why)

    def as_dict(self) -> dict[str, Any]:
        return dict(json.loads(json.dumps(asdict(self))))  # copies of the dicts; the tuples as lists, as JSON has them


def _cuda_driver() -> tuple[str | None, str | None, tuple[GpuDevice, ...], str | None]:
    """Ask libcuda for its version and devices without importing any CUDA Python library.

    Returns ``(problem, message, devices, driver_version)``; ``problem`` is None when at least
    one device is visible.
    """
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no_driver", "no CUDA driver (libcuda.so.1 cannot be loaded)", (), None

    version = ctypes.c_int(0)
    known = lib.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value
    driver_version = f"{version.value // 1000}.{(version.value % 1000) // 10}" if known else None

    rc = lib.cuInit(0)
    if rc == 100:
        hint = " (CUDA_VISIBLE_DEVICES is empty)" if os.environ.get("CUDA_VISIBLE_DEVICES") == "" else ""
        return "no_device", f"no CUDA device visible{hint}", (), driver_version
    if rc in (34, 35):
        return "no_driver", f"no usable CUDA driver ({_CU_ERRORS[rc]})", (), driver_version
    if rc != 0:
        return "no_device", f"CUDA driver failed to initialise ({_CU_ERRORS.get(rc, rc)})", (), driver_version

    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return "no_device", "no CUDA device visible", (), driver_version

    devices = []
    for i in range(count.value):
        dev = ctypes.c_int(0)
        if lib.cuDeviceGet(ctypes.byref(dev), i) != 0:
            continue
        name, mem = ctypes.create_string_buffer(256), ctypes.c_size_t(0)
        lib.cuDeviceGetName(name, 256, dev)
        lib.cuDeviceTotalMem_v2(ctypes.byref(mem), dev)
        devices.append(GpuDevice(i, name.value.decode(errors="replace"), int(mem.value)))
    return None, None, tuple(devices), driver_version


def module_installed(name: str) -> bool:
    """Whether module ``name`` can be imported, found without importing it."""
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:  # noqa: BLE001 - a broken parent package, a stale sys.modules entry, a failing finder
        return False


@lru_cache(maxsize=1)
def xgboost_build_info() -> dict[str, Any]:
    """How the installed XGBoost was built (``XGBuildInfo``: ``USE_CUDA``, ``USE_RMM``, ...), asked
    of its library without importing the Python package, which loads pandas and SciPy: ``accel
    info`` stays light. Empty when there is no XGBoost or its library cannot say. Never raises."""
    try:
        spec = None if "xgboost" in sys.modules else importlib.util.find_spec("xgboost")
        for folder in (spec.submodule_search_locations or []) if spec else []:
            lib = Path(folder) / "lib" / "libxgboost.so"
            if lib.exists():
                out = ctypes.c_char_p()
                if ctypes.CDLL(str(lib)).XGBuildInfo(ctypes.byref(out)) != 0 or not out.value:
                    return {}
                return dict(json.loads(out.value.decode()))
        import xgboost  # imported already, or another platform's library name: ask the package

        return dict(xgboost.build_info())
    except Exception:  # noqa: BLE001 - detection never raises
        return {}


def xgboost_allocation(build_info: Mapping[str, Any]) -> dict[str, Any]:
    """Where XGBoost's device memory comes from, given its :func:`xgboost_build_info`.

    Only an XGBoost built with the RMM plugin (``USE_RMM``) allocates from the RMM pool; it is
    then told to route its cached allocations there too (``use_rmm``). The PyPI wheels are
    built without it: there ``use_rmm`` would only switch XGBoost's caching allocator off
    (every allocation a ``cudaMalloc``), so it is left alone and XGBoost keeps its own caching
    allocator, beside the RMM pool.

    Returns
    -------
    dict
        ``through_rmm`` (bool), ``allocator`` (one line) and ``set_config`` (the XGBoost
        global settings to apply, possibly empty).
    """
    if build_info.get("USE_RMM"):
        return {"through_rmm": True, "allocator": "the RMM pool (XGBoost built with RMM, use_rmm=True)",
                "set_config": {"use_rmm": True}}  # fmt: skip
    allocator = "XGBoost's own caching allocator over cudaMalloc, outside the RMM pool (XGBoost built without RMM)"
    return {"through_rmm": False, "allocator": allocator, "set_config": {}}


#: The RMM pool this process set up, as ``(device, initial_bytes, maximum_bytes)``. RMM's
#: device resource is set once per process: a second ``rmm.reinitialize`` drops the first
#: pool while buffers allocated from it may still be alive, which RMM leaves undefined.
_RMM_POOL: tuple[int, int, int | None] | None = None


def cudf_spill_option() -> bool | None:
    """cuDF's ``spill`` option in this process (a Dask worker's: Dask-CUDA's ``CUDFSetup`` plugin
    sets it), or None where cuDF is not imported."""
    cudf = sys.modules.get("cudf")
    return None if cudf is None else bool(cudf.get_option("spill"))


def receive_spillable_buffers() -> bool:
    """Give this process cuDF's spill manager when it has none, so that it can take in the cuDF
    objects of workers that spill; True when one was made now.

    A Dask-CUDA worker started with ``enable_cudf_spill`` allocates spillable buffers, and one
    sent to this process is rebuilt as one (``Buffer.deserialize`` calls the owner type named in
    its header, ``cudf/core/buffer/buffer.py``), which raises without a global spill manager
    (``SpillableBufferOwner._finalize_init``, ``cudf/core/buffer/spillable_buffer.py``). Dask-CUDA
    sets the ``spill`` option in the client for that (``LocalCUDACluster.__init__``), but cuDF
    decides its manager once, at the first buffer (``get_global_manager``,
    ``cudf/core/buffer/spill_manager.py``), and accel's GPU probe made one before any cluster
    started. So the manager ``get_global_manager`` would have made is made here, with the same
    options; without spill-on-demand, which would push an out-of-memory handler over this
    process's RMM resource.
    """
    cudf = sys.modules.get("cudf")
    if cudf is None:
        return False
    from cudf.core.buffer import spill_manager

    if spill_manager.get_global_manager() is not None:
        return False
    limit, statistics = cudf.get_option("spill_device_limit"), cudf.get_option("spill_stats")
    spill_manager.set_global_manager(spill_manager.SpillManager(device_memory_limit=limit, statistic_level=statistics))
    return True


#: The GPU libraries reported one by one (capability -> (import name, what it gives)).
CAPABILITIES: dict[str, tuple[str, str]] = {
    "cupy": ("cupy", "device arrays: float16 storage, XGBoost's inputs"),
    "rmm": ("rmm", "the RMM pool, its statistics and device out-of-memory limits"),
    "xgboost_cuda": ("xgboost", "XGBoost training and prediction on CUDA"),
    "cudf": ("cudf", "dataframes on the device: loading, features, db-benchmark"),
    "cuml": ("cuml", "the scikit-learn twins on the device"),
    "dask_cuda": ("dask_cuda", "LocalCUDACluster: one Dask worker per GPU"),
    "dask_cudf": ("dask_cudf", "cuDF partitions on Dask"),
}
#: One tiny allocation with each GPU library that can make one (an installed cuDF imports fine
#: without a GPU and fails only at its first allocation).
_SMOKE: dict[str, Callable[[], object]] = {
    "cupy": lambda: importlib.import_module("cupy").zeros(1).sum().item(),
    "rmm": lambda: importlib.import_module("rmm").DeviceBuffer(size=8),
    "cudf": lambda: importlib.import_module("cudf").Series([1.0]).sum(),
}


#: The GPU library each one stands on: it is unavailable while that one is.
_STANDS_ON = {"cudf": "cupy", "cuml": "cudf", "dask_cuda": "cupy", "dask_cudf": "cudf"}


def probe_capabilities(device_problem: str | None = None) -> dict[str, dict[str, Any]]:
    """Each GPU library on its own: ``{name: {"available": bool, "reason": str or None}}``. Never raises.

    ``device_problem`` (no driver, no device) makes every one unavailable without importing any
    of them. Otherwise CuPy, RMM and cuDF are imported and make one tiny allocation each (an
    installed cuDF fails only at its first allocation); XGBoost is asked whether it was built
    with CUDA; cuML, Dask-CUDA and dask-cudf are looked up, not imported (cuML's import takes
    seconds), and count as available when what they stand on is (:data:`_STANDS_ON`).
    """
    why: dict[str, str | None] = {}  # name -> why it is not available (None: available), in the order probed
    for name, (module, _) in CAPABILITIES.items():
        installed, base = module_installed(module), _STANDS_ON.get(name)
        if device_problem:
            why[name] = device_problem + ("" if installed else f"; {module} not installed")
            if name == "xgboost_cuda" and installed and not xgboost_build_info().get("USE_CUDA"):
                why[name] = f"{why[name]}; xgboost is built without CUDA"
        elif name == "cudf" and why["cupy"] is not None:
            why[name] = f"needs CuPy ({why['cupy']})"
        elif not installed:
            why[name] = f"{module} not installed"
        elif base is not None and why[base] is not None:
            why[name] = f"installed, but needs {base} ({why[base]})"
        elif name == "xgboost_cuda":
            why[name] = None if xgboost_build_info().get("USE_CUDA") else _XGBOOST_NO_CUDA
        else:  # one tiny allocation with it, where it can make one (:data:`_SMOKE`)
            try:
                _SMOKE.get(name, lambda: None)()
                why[name] = None
            except Exception as exc:  # noqa: BLE001 - detection never raises
                why[name] = f"installed but cannot use the GPU ({first_line(exc)})"
    return {name: {"available": reason is None, "reason": reason} for name, reason in why.items()}


@lru_cache(maxsize=1)
def probe_gpu() -> GpuProbe:
    """Find out whether the GPU arm can run here. Never raises.

    The checks, in order: the CUDA driver and a visible device (libcuda, no Python CUDA
    library imported), the RAPIDS libraries (installed or not, without importing them),
    XGBoost built with CUDA, and, with a device there, a real import of CuPy and cuDF with one
    tiny allocation each (:func:`probe_capabilities`), since an installed cuDF can still fail at
    its first allocation: when all the rest holds, their failure is the reason.
    """
    causes: dict[str, str] = {}  # problem -> reason, in the order found
    try:
        problem, message, devices, driver_version = _cuda_driver()
    except Exception as exc:  # noqa: BLE001 - a strange libcuda must not crash detection
        problem, message, devices, driver_version = "no_driver", f"CUDA driver probe failed ({first_line(exc)})", (), None
    if problem:
        causes[problem] = message or problem

    # The RAPIDS libraries (every GPU library of CAPABILITIES but XGBoost), found without importing them.
    libraries = {m: ("installed" if module_installed(m) else "missing") for m, _ in CAPABILITIES.values() if m != "xgboost"}
    missing = [name for name in GPU_REQUIRED if libraries[name] == "missing"]
    if missing:
        causes["rapids_missing"] = f"RAPIDS not installed ({', '.join(missing)} missing: {INSTALL_HINT})"
    if not xgboost_build_info().get("USE_CUDA"):
        causes["xgboost_no_cuda"] = _XGBOOST_NO_CUDA
    capabilities = probe_capabilities(message or problem if problem else None)  # never raises
    # Driver, device and libraries there: CuPy's and cuDF's allocations (probed above) decide.
    broken = [caps["reason"] for name in GPU_REQUIRED if not (caps := capabilities[name])["available"]]
    if not causes and broken:
        causes["rapids_broken"] = f"RAPIDS is {broken[0]}"

    reason = "; ".join(causes.values()) or None
    return GpuProbe(not causes, reason, tuple(causes), driver_version, devices, libraries, capabilities)


# --------------------------------------------------------------------------- model classes


class ModelClasses(dict):
    """The model classes of one arm, each imported when first asked for (cuML takes seconds to import)."""

    def __init__(self, arm: ArmName):
        self._arm = arm

    def __missing__(self, key: str) -> type:
        from accel.registry import ESTIMATORS

        if key not in ESTIMATORS:
            raise KeyError(f"unknown model {key!r}; known: {', '.join(ESTIMATORS)}")
        module, _, cls = getattr(ESTIMATORS[key], self._arm).partition(":")  # its cpu or gpu class
        return getattr(importlib.import_module(module), cls)


# --------------------------------------------------------------------------- the backend


def blas_threads() -> list[dict[str, Any]]:
    """Thread pools loaded in this process, as threadpoolctl sees them (BLAS and OpenMP): the
    benchmarks' environment and the CPU arm's record (:meth:`Backend.host_threads`)."""
    from threadpoolctl import threadpool_info

    keys = {"user_api": "user_api", "library": "internal_api", "threads": "num_threads", "version": "version"}
    return [{key: p.get(name) for key, name in keys.items()} for p in threadpool_info()]


def cpu_threads() -> int:
    """Cores this process may run on (the affinity mask, which containers and taskset narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Backend:
    """Everything one arm needs, chosen once and passed down.

    Attributes
    ----------
    name : {"cpu", "gpu"}
        The arm.
    xp : module
        ``numpy`` or ``cupy``.
    xdf : module
        ``pandas`` or ``cudf``.
    xgb_device : str
        XGBoost's ``device`` parameter for this arm (``"cpu"`` or ``"cuda:0"``).
    n_threads : int
        Host threads the arm may use (XGBoost ``n_jobs`` on the CPU arm).
    device : GpuDevice or None
        The GPU this arm runs on.
    models : Mapping
        Model classes for this arm (scikit-learn or cuML), imported on first use.
    host_frames : str or None
        Set on a GPU arm built without cuDF (:func:`gpu_backend` with ``needs``): why its
        dataframes are pandas on the host. None when the frames live where the arm does.
    """

    name: ArmName
    xp: ModuleType
    xdf: ModuleType
    xgb_device: str
    n_threads: int
    device: GpuDevice | None = None
    models: Mapping[str, Any] = field(default_factory=dict, repr=False)
    host_frames: str | None = None

    @property
    def is_gpu(self) -> bool:
        return self.name == "gpu"

    def stage_devices(self, model_device: str | None) -> dict[str, str]:
        """Where each stage of a run ran: frames (load, features), arrays (to_device), the model.

        ``model_device`` is what the trained model reports (XGBoost's booster, cuML or
        scikit-learn), so a model that fell back to the CPU is named as such.
        """
        frames = f"{self.xgb_device} (cudf)" if self.is_gpu else "cpu (pandas)"  # a GPU arm's frames are cuDF's...
        frames = f"cpu (pandas: {self.host_frames})" if self.host_frames else frames  # ...unless it says why not
        arrays, model = f"{self.xgb_device} (cupy)" if self.is_gpu else "cpu (numpy)", model_device or "unknown"
        return {"load": frames, "features": frames, "to_device": arrays, "train": model, "predict": model}

    @property
    def probe_warms_up(self) -> bool:
        """Whether this arm's batch-plan probe is also its warm-up, and so always runs: on the GPU
        arm it creates the CUDA context and runs cuDF's first kernels, which would otherwise
        land in the timed load stage."""
        return self.is_gpu

    def ran_here(self, device_used: str) -> bool:
        """Whether a model that reports ``device_used`` ran on this arm's device (XGBoost with
        ``device="cuda"`` and no usable GPU trains on the CPU and only warns): a GPU arm's model
        must not have run on the CPU."""
        return device_used.startswith("cuda" if self.is_gpu else "cpu")

    def host_threads(self) -> dict[str, Any]:
        """The host libraries' threads this arm's work runs on, for the record: the CSV reader and
        BLAS on the CPU arm; nothing on the GPU arm, whose reader and arrays are on the device."""
        if self.is_gpu:
            return {}
        import pyarrow

        blas = [{"library": p["library"], "threads": p["threads"]} for p in blas_threads() if p["user_api"] == "blas"]
        return {"csv_reader": f"pandas engine=pyarrow, {pyarrow.cpu_count()} threads", "blas": blas}

    def external_memory(self) -> dict[str, Any]:
        """Where XGBoost keeps the pages of an external-memory matrix on this arm, and how.

        XGBoost 3.2's ``DataIter(on_host=True)`` (its default) caches the pages in host memory, but
        only for a CUDA matrix: the CPU ``ExtMemQuantileDMatrix`` always writes them to files under
        ``cache_prefix``. The GPU arm keeps them in host memory (on disk a GPU trains slower than
        the CPU, XGBoost's external-memory guide says), all of them (``cache_host_ratio=1``: else
        XGBoost keeps part of the cache in device memory, whatever the budget) and one batch per
        page (``min_cache_page_bytes=0``: else pages are joined up to a share of the device's
        memory), as the batch plan counts them. The CPU arm asks for disk, which it gets anyway.

        Returns
        -------
        dict
            ``pages`` ("host memory" or "disk"), ``on_host`` (the ``DataIter`` argument) and, on the
            GPU arm, ``cache_host_ratio`` and ``min_cache_page_bytes``; stored in the run record.
        """
        if self.is_gpu:
            return {"pages": "host memory", "on_host": True, "cache_host_ratio": 1.0, "min_cache_page_bytes": 0}
        return {"pages": "disk", "on_host": False}

    def adopt_estimator(self, key: str, estimator: Any) -> Any:
        """A scikit-learn estimator (a saved pipeline's) as this arm fits and predicts with it:
        itself on every core here, or its cuML twin on the GPU arm (cuML's ``from_sklearn``)."""
        if self.is_gpu:
            return self.models[key].from_sklearn(estimator)
        if "n_jobs" in estimator.get_params():
            estimator.set_params(n_jobs=self.n_threads)
        return estimator

    def synchronize(self) -> None:
        """Wait for queued device work, so that a clock read after it is honest."""
        if self.is_gpu:
            self.xp.cuda.runtime.deviceSynchronize()

    def device_memory(self) -> tuple[int, int] | None:
        """``(free, total)`` bytes of this arm's device (device-wide, as the driver counts them), or
        None on the CPU arm."""
        if not self.is_gpu:
            return None
        free, total = self.xp.cuda.runtime.memGetInfo()
        return int(free), int(total)

    def device_memory_in_use(self) -> int | None:
        """Bytes in use on this arm's device (device-wide), or None on the CPU arm."""
        free_total = self.device_memory()
        return None if free_total is None else free_total[1] - free_total[0]

    # -- RMM: one pool for cuDF and CuPy, and for XGBoost when it is built with RMM (GPU arm only)
    def xgboost_allocation(self) -> dict[str, Any]:
        """Where XGBoost's device memory comes from on this arm (:func:`xgboost_allocation`)."""
        if not self.is_gpu:
            return {"through_rmm": False, "allocator": "CPU arm: no device memory", "set_config": {}}
        return xgboost_allocation(xgboost_build_info())

    def rmm_pool_configured(self) -> tuple[int, int | None] | None:
        """``(initial_bytes, maximum_bytes)`` of the RMM pool this process set up on this arm's
        device, or None when it set up none."""
        pool = _RMM_POOL if self.is_gpu else None
        return (pool[1], pool[2]) if pool is not None and pool[0] == (self.device.index if self.device else 0) else None

    def configure_rmm_pool(self, initial_bytes: int, maximum_bytes: int | None) -> bool:
        """Make an RMM pool the device allocator of cuDF and CuPy (and of XGBoost when it is built
        with RMM), with statistics on; at most once per process.

        Returns
        -------
        bool
            True when the pool was set up now; False when this process already has the same
            pool, which is kept (no second ``rmm.reinitialize``).

        Raises
        ------
        RuntimeError
            On the CPU arm, or when this process already set up a pool of other sizes: RMM's
            resource is not replaced while buffers of the first pool may be alive.
        """
        global _RMM_POOL
        if not self.is_gpu:
            raise RuntimeError("RMM pools are device memory: GPU arm only")
        index = self.device.index if self.device else 0
        wanted = (index, int(initial_bytes), None if maximum_bytes is None else int(maximum_bytes))
        if _RMM_POOL is not None:
            if _RMM_POOL == wanted:
                return False
            device, initial, maximum = _RMM_POOL
            raise RuntimeError(
                f"this process already set up an RMM pool (device {device}, {initial:,} bytes, growing to "
                f"{'the whole device' if maximum is None else f'{maximum:,} bytes'}); RMM's device resource is set "
                "once per process"
            )
        import rmm

        rmm.reinitialize(pool_allocator=True, initial_pool_size=initial_bytes, maximum_pool_size=maximum_bytes, devices=wanted[0])
        _RMM_POOL = wanted
        self.use_current_rmm_resource()  # statistics on, and CuPy allocating from the pool
        settings = self.xgboost_allocation()["set_config"]
        if settings:
            importlib.import_module("xgboost").set_config(**settings)
        return True

    def rmm_resource_set_elsewhere(self) -> dict[str, Any] | None:
        """The RMM resource other code of this process set on this arm's device, or None.

        RMM's resource for a device is a plain ``CudaMemoryResource`` until someone sets another
        (``_per_device_mrs = defaultdict(CudaMemoryResource)`` in
        ``rmm/pylibrmm/memory_resource/_memory_resource.pyx``). A Dask-CUDA worker's
        ``RMMSetup`` plugin sets its pool (``rmm.reinitialize``, ``dask_cuda/plugins.py``), and
        cuDF's spill manager pushes a ``FailureCallbackResourceAdaptor`` over it at the first
        buffer (``set_spill_on_demand_globally``, ``cudf/core/buffer/spill_manager.py``):
        replacing that resource would drop the pool's live buffers and cuDF's spilling.

        Returns
        -------
        dict or None
            ``resources`` (the resource stack, outermost first, by class name) and
            ``pool_bytes`` (what a pool in it holds from the device, or None); None when the
            resource is RMM's default or the pool accel set up (:meth:`configure_rmm_pool`).
        """
        if not self.is_gpu or _RMM_POOL is not None or "rmm" not in sys.modules:
            return None
        stack, pool = _rmm_resources()
        return None if stack == ["CudaMemoryResource"] else {"resources": stack, "pool_bytes": pool}

    def use_current_rmm_resource(self) -> None:
        """Allocate CuPy's arrays through the RMM resource in place (set up by other code: see
        :meth:`rmm_resource_set_elsewhere`) and count its allocations, as for accel's own pool,
        without replacing it: statistics are pushed over it (``rmm.statistics.enable_statistics``
        adds an adaptor on top and keeps what is below)."""
        import rmm.statistics
        from rmm.allocators.cupy import rmm_cupy_allocator

        rmm.statistics.enable_statistics()
        self.xp.cuda.set_allocator(rmm_cupy_allocator)

    def rmm_pool_bytes(self) -> int | None:
        """Bytes the RMM pool holds from the device now (its size, not what is allocated from it),
        or None without a pool set up by :meth:`configure_rmm_pool`."""
        return None if self.rmm_pool_configured() is None else _rmm_resources()[1]

    def rmm_statistics(self) -> dict[str, int | None] | None:
        """RMM's allocation counters (bytes in use now, peak, total) and the pool's size from the
        device (``pool_bytes``), or None without statistics."""
        if not self.is_gpu or "rmm" not in sys.modules:
            return None
        import rmm.statistics

        stats = rmm.statistics.get_statistics()
        if stats is None:
            return None
        counters = {name: getattr(stats, name) for name in ("current_bytes", "peak_bytes", "total_bytes")}
        return {**counters, "pool_bytes": self.rmm_pool_bytes()}

    def rmm_scope_begin(self) -> bool:
        """Start counting RMM allocations for one stage (False when RMM statistics are off)."""
        if not self.is_gpu or "rmm" not in sys.modules:
            return False
        import rmm.statistics

        return rmm.statistics.push_statistics() is not None  # None: the resource counts nothing (statistics off)

    def rmm_scope_end(self) -> int | None:
        """Peak bytes RMM allocated since the matching :meth:`rmm_scope_begin`."""
        import rmm.statistics

        stats = rmm.statistics.pop_statistics()
        return None if stats is None else int(stats.peak_bytes)

    def release_memory(self) -> None:
        """Give cached blocks back after an out-of-memory, before retrying with less."""
        import gc

        gc.collect()
        if self.is_gpu:
            self.xp.get_default_memory_pool().free_all_blocks()
            self.xp.get_default_pinned_memory_pool().free_all_blocks()


def _rmm_resources() -> tuple[list[str], int | None]:
    """The current device's RMM resource stack, outermost first, by class name, and the bytes its
    first pool (``PoolMemoryResource``) holds from the device (None without a pool)."""
    import rmm.mr

    stack, pool, resource = [], None, rmm.mr.get_current_device_resource()
    while resource is not None:
        stack.append(type(resource).__name__)
        if pool is None and isinstance(resource, rmm.mr.PoolMemoryResource):
            pool = int(resource.pool_size())
        resource = resource.get_upstream() if hasattr(resource, "get_upstream") else None
    return stack, pool


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an out-of-memory from either arm's libraries (asked without importing them).

    ``MemoryError`` on the host and from RMM; ``cupy.cuda.memory.OutOfMemoryError``; XGBoost's
    and cuDF's wrapped CUDA allocation failures.
    """
    markers = ("out of memory", "cudaErrorMemoryAllocation", "std::bad_alloc", "MemoryError")
    return (
        isinstance(exc, MemoryError)
        or type(exc).__name__ in ("OutOfMemoryError", "OutOfMemory")
        or any(marker in str(exc) for marker in markers)
    )


def cpu_backend() -> Backend:
    from accel.openmp import settle

    numpy, pandas = importlib.import_module("numpy"), importlib.import_module("pandas")
    settle()  # OpenMP's spin count for the arm, before anything loads OpenMP

    return Backend("cpu", numpy, pandas, "cpu", cpu_threads(), None, ModelClasses("cpu"))


def gpu_backend(device_index: int = 0, *, needs: tuple[str, ...] | None = None) -> Backend:
    """The GPU arm; raises :class:`DeviceUnavailable` (exit 2) saying why when it cannot run.

    Parameters
    ----------
    device_index : int, default 0
        The CUDA device.
    needs : tuple of str, optional
        The capabilities (:data:`CAPABILITIES`) the caller's work uses. By default the whole
        GPU arm: CuPy, cuDF and XGBoost-CUDA (:attr:`GpuProbe.usable`). Work that needs less
        — XGBoost on CuPy arrays, an RMM pool, float16 CuPy storage — names it (CuPy is always
        needed) and gets a GPU arm even where cuDF is missing or broken; its dataframes are
        then pandas on the host and :attr:`Backend.host_frames` says why.
    """
    probe, host_frames = probe_gpu(), None
    if needs is None and not probe.usable:
        raise DeviceUnavailable(f"--device gpu: {probe.why_not()}")
    if needs is not None:
        wanted = tuple(dict.fromkeys(("cupy", *needs)))
        unknown = [n for n in wanted if n not in CAPABILITIES]
        if unknown:
            raise ValueError(f"unknown capability {', '.join(unknown)}; known: {', '.join(CAPABILITIES)}")
        why = probe.missing(*wanted)
        if why:
            raise DeviceUnavailable(f"--device gpu: the GPU cannot do this work here: {why}")
        if not probe.available("cudf"):
            host_frames = f"cuDF not usable: {probe.capabilities['cudf']['reason']}"
    # The probe imported CuPy, and cuDF where it is usable: these imports only look them up.
    xdf = importlib.import_module("cudf" if host_frames is None else "pandas")
    import cupy

    cupy.cuda.Device(device_index).use()
    return Backend(
        "gpu", cupy, xdf, f"cuda:{device_index}", cpu_threads(), probe.devices[device_index], ModelClasses("gpu"), host_frames
    )


def get_backend(choice: str = "auto") -> Backend:
    """Resolve ``auto`` | ``cpu`` | ``gpu`` into a backend, once.

    ``auto`` gives the GPU arm when :func:`probe_gpu` finds it usable and the CPU arm otherwise;
    ``gpu`` raises :class:`DeviceUnavailable` with the reason instead of falling back. Also the
    backend of Dask workers of kind ``"gpu"`` or ``"cpu"``: what a worker process builds for
    itself (its own GPU is device 0 under Dask-CUDA), and what the client plans their
    partitions with.
    """
    if choice not in ("auto", "cpu", "gpu"):
        raise ValueError(f"device must be auto, cpu or gpu, not {choice!r}")
    return gpu_backend() if choice == "gpu" or (choice == "auto" and probe_gpu().usable) else cpu_backend()


@dataclass(frozen=True)
class Arms:
    """The two arms of a paired run, resolved once from ``--device``.

    ``gpu`` is the accelerated arm, or None with ``gpu_skip`` saying why it does not run;
    ``cpu`` is the baseline, always there.
    """

    gpu: Backend | None
    gpu_skip: str | None
    cpu: Backend


def resolve_arms(device: str, needs: tuple[str, ...] | None = None) -> Arms:
    """The arms for ``--device auto|cpu|gpu``; every command resolves them here and nowhere else.

    ``auto`` gives the accelerated arm when the GPU is usable (or skips it with the reason);
    ``cpu`` skips it; ``gpu`` raises :class:`DeviceUnavailable` (exit 2) saying why, before any
    work starts. ``needs`` names the GPU capabilities the work uses (see :func:`gpu_backend`);
    by default the whole GPU arm with cuDF.
    """
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"device must be auto, cpu or gpu, not {device!r}")
    cpu = cpu_backend()
    why = "not requested (--device cpu)" if device == "cpu" else probe_gpu().why_not(*(() if needs is None else ("cupy", *needs)))
    if device == "gpu" or why is None:
        return Arms(gpu_backend(needs=needs), None, cpu)
    return Arms(None, why, cpu)


def gpu_arm_skip(device: str, reason: str) -> str:
    """Why the GPU arm does not run where it cannot for ``reason`` (e.g. a cluster of CPU workers).

    With ``--device gpu`` that is an error, :class:`DeviceUnavailable` saying ``reason``; with
    ``--device cpu`` the arm was not asked for; with ``auto`` it is skipped for ``reason``.
    """
    if device == "gpu":
        raise DeviceUnavailable(f"--device gpu: {reason}")
    return "not requested (--device cpu)" if device == "cpu" else reason


def _nvml(query: Callable[[ModuleType], T]) -> T | str:
    """``query(pynvml)`` with NVML started for it and shut down after, or why NVML cannot say (one
    line: not installed, no driver, cannot start, the query failed). Never raises."""
    if not module_installed("pynvml"):
        return "nvidia-ml-py not installed (no module named 'pynvml')"
    if sys.platform.startswith("linux"):
        # The library pynvml loads first: without it NVML cannot start, and importing pynvml
        # (60 ms, a quarter of the environment report on a CPU machine) is not needed to say so.
        try:
            ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            return "NVML cannot start (libnvidia-ml.so.1 cannot be loaded: no NVIDIA driver)"
    try:
        import pynvml
    except Exception as exc:  # noqa: BLE001
        return f"nvidia-ml-py not importable ({first_line(exc)})"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, NVMLError_DriverNotLoaded, ...
        return f"NVML cannot start ({first_line(exc) or type(exc).__name__})"
    try:
        return query(pynvml)
    except Exception as exc:  # noqa: BLE001
        return f"NVML query failed ({first_line(exc)})"
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def nvml_info() -> dict[str, Any]:
    """Driver version and per-GPU details from NVML, or why NVML is not there. Never raises.

    NVML is what Dask-CUDA uses to count GPUs; when its library is missing,
    ``LocalCUDACluster()`` raises ``NVMLError_LibraryNotFound``, so the answer is worth stating.
    """

    def gpus(pynvml: ModuleType) -> dict[str, Any]:
        found = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem, name = pynvml.nvmlDeviceGetMemoryInfo(h), pynvml.nvmlDeviceGetName(h)
            found.append({"index": i, "name": name, "memory_total_bytes": int(mem.total), "memory_used_bytes": int(mem.used)})
        return {"available": True, "driver": pynvml.nvmlSystemGetDriverVersion(), "gpus": found}

    info = _nvml(gpus)
    return {"available": False, "reason": info} if isinstance(info, str) else info


def visible_gpu_memory(count: int) -> list[tuple[int, int]] | None:
    """``(free, total)`` bytes of the first ``count`` GPUs this process sees, in CUDA's order
    (``CUDA_VISIBLE_DEVICES``: indices or UUIDs), from NVML, which reads them without creating a
    CUDA context; None when NVML cannot say. Never raises."""

    def memory(pynvml: ModuleType) -> list[tuple[int, int]] | None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = [str(i) for i in range(pynvml.nvmlDeviceGetCount())] if visible is None else visible.split(",")
        ids = [v.strip() for v in ids if v.strip()][:count]
        handles = [pynvml.nvmlDeviceGetHandleByIndex(int(d)) if d.isdigit() else pynvml.nvmlDeviceGetHandleByUUID(d) for d in ids]
        found = [pynvml.nvmlDeviceGetMemoryInfo(handle) for handle in handles]
        return [(int(mem.free), int(mem.total)) for mem in found] if len(found) == count else None

    found = _nvml(memory)
    return None if isinstance(found, str) else found
