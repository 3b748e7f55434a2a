"""Dask clusters: start one here, or attach to a running one, and close it cleanly.

accel scales out on Dask and nothing else: a ``distributed.LocalCluster`` of CPU worker
processes (``local``), a ``dask_cuda.LocalCUDACluster`` with one worker per GPU
(``local-cuda``), or any running scheduler by address (``dask scheduler`` with ``dask worker`` /
``dask cuda worker`` on each node). :class:`ClusterSession` is the context manager that starts
or attaches, prints where the scheduler and its dashboard are, and on the way out (success,
error or Ctrl-C) closes the client and every worker process it started.

Everything that can be refused is refused by :func:`plan_cluster` before a process starts:
a malformed address, sizes Dask cannot parse, more workers than the machine has, and
``local-cuda`` without a usable GPU (asked of :func:`accel.backend.probe_gpu`, which never
imports a GPU library on a machine without one; ``dask_cuda`` is imported only once a GPU is
known to be usable).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from accel.backend import (
    Backend,
    cpu_backend,
    cpu_threads,
    cudf_spill_option,
    module_installed,
    probe_gpu,
    receive_spillable_buffers,
    visible_gpu_memory,
    xgboost_allocation,
    xgboost_build_info,
)
from accel.errors import AccelError, first_line
from accel.memory import PeriodicSampler, parse_size, process_peak_rss, to_mb
from accel.output import say as say_line
from accel.result import ArmPeaks, Executed, Executor, W

if TYPE_CHECKING:
    from distributed import Client

    from accel.config import ClusterConfig

WorkerKind = Literal["cpu", "gpu"]

CLUSTER_KINDS = ("local", "local-cuda")
#: The dashboard listens on the loopback interface only (reach it remotely through an SSH tunnel).
DASHBOARD_ADDRESS = "127.0.0.1:8787"
#: Seconds to reach a scheduler given by address, and for its first worker to be there.
CONNECT_TIMEOUT_S = 5
WORKERS_TIMEOUT_S = 10
#: Seconds a cluster may have no worker at all before accel gives up on the run.
NO_WORKERS_GRACE_S = 10
_ADDRESS = re.compile(r"^(tcp|tls|ucx|ucxx)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


# --------------------------------------------------------------------------- the plan


def dask_cuda_size(text: str | None, flag: str) -> int | float | None:
    """A memory size as Dask-CUDA takes it: bytes (``"8GB"``) or a fraction (``"0.5"``).

    Dask-CUDA reads a fraction as a share of the GPU's *total* memory. That is what
    ``--device-memory-limit`` means; ``--rmm-pool`` is given its meaning by
    :func:`cluster_pool_sizes` (``auto`` and fractions are shares of *free* memory, as in the
    single-process run), which this only parses. ``off`` (and None) is no size; ``auto`` is
    not a size (see :func:`cluster_pool_sizes`).
    """
    if text is None or text == "off":
        return None
    fraction = _float_or_none(text)
    if fraction is not None and 0 < fraction <= 1:
        return fraction
    return parse_size(text, flag, "give bytes like 8GB or 500MiB, or a fraction like 0.5")


def worker_memory_bytes(text: str | None) -> int | None:
    """``--worker-memory``: each worker's host memory limit in bytes (Dask spills partitions to
    disk from 60-70% of it, pauses the worker at 80%, restarts it at 95%: ``distributed.worker.memory``)."""
    if text is None:
        return None
    if _float_or_none(text) is not None:
        raise AccelError(
            f"--worker-memory {text!r}: give a size per worker such as 400MB or 4GB, not a fraction or a bare number"
        )
    size = parse_size(text, "--worker-memory", "give one such as 400MB or 4GB per worker")
    if size < MIN_WORKER_MEMORY:
        raise AccelError(
            f"--worker-memory {text!r} is below what a worker process needs to start ({MIN_WORKER_MEMORY // 10**6} MB); "
            "give at least that"
        )
    return size


def _float_or_none(text: str) -> float | None:
    with suppress(ValueError):
        return float(text)
    return None


#: Environment of the worker processes of a cluster accel starts, set before each is spawned
#: (Dask's ``distributed.nanny.pre-spawn-environ``, beside its own ``MALLOC_TRIM_THRESHOLD_``).
#: Arrow's default pool (mimalloc) keeps the pages of freed buffers: after Dask had spilled every
#: partition of a table 3 x a worker's limit to disk, each worker still held ~300 MB above its
#: start, stayed over the 80% pause threshold and the run hung. With the system allocator, which
#: Dask's trim threshold makes give freed memory back, the same run finishes.
WORKER_ENVIRON = {"ARROW_DEFAULT_MEMORY_POOL": "system"}

#: The least ``--worker-memory``: a worker with pandas, XGBoost and accel imported holds ~200 MB.
MIN_WORKER_MEMORY = 256 * 10**6


def cluster_pool_sizes(
    spec: str | None, free_bytes: list[int], xgboost_through_rmm: bool, basis: str = "free", model: str | None = None
) -> tuple[int | None, int | None, str | None]:
    """Each Dask-CUDA worker's RMM pool for ``--rmm-pool``, in bytes: ``(initial, maximum, what it is)``.

    The sizes mean what ``--rmm-pool`` means in the single-process run
    (:func:`accel.memory.rmm_auto_sizes`): ``auto`` starts at a share of the GPU's free memory
    and grows only when XGBoost allocates from the pool; a size is a pool of that fixed size. A
    fraction (cluster only) is that share of the free memory, fixed. Dask-CUDA would read a
    fraction as a share of the total memory and let a pool grow to the whole GPU, so the sizes
    are handed to it in bytes, initial and maximum both.

    Parameters
    ----------
    spec : str or None
        ``--rmm-pool``: ``auto``, ``off``, a size or a fraction; None for no pool.
    free_bytes : list of int
        Free memory of the GPUs the workers get; the least of them sizes every worker's pool
        (Dask-CUDA takes one size for all workers).
    xgboost_through_rmm : bool
        Whether XGBoost allocates from RMM (:meth:`accel.backend.Backend.xgboost_allocation`).
    basis : str, default "free"
        What ``free_bytes`` are, for the description ("total" where free memory could not be read).
    model : str, optional
        The ``--model`` the workers train (``accel hpo``); None: XGBoost, as a cluster run trains.
    """
    from accel.memory import rmm_auto_sizes

    if spec is None or spec == "off":
        return None, None, None
    size = None if spec == "auto" else dask_cuda_size(spec, "--rmm-pool")  # None: auto
    if isinstance(size, int):
        fixed = size // 256 * 256
        return fixed, fixed, "fixed size per worker"
    if not free_bytes:
        raise AccelError(f"--rmm-pool {spec}: the memory of the workers' GPUs cannot be read; give a size such as 20GB")
    least = min(free_bytes)
    where = f"of the {basis} memory of the workers' GPUs (the least: {least / 1024**3:.1f} GiB)"
    if size is None:
        initial, maximum, why = rmm_auto_sizes(least, xgboost_through_rmm, model)
        return initial, maximum, why.replace("of free device memory", where, 1) + ", per worker"
    fixed = int(least * size) // 256 * 256
    return fixed, fixed, f"{size:.0%} {where}, fixed, per worker"


def check_address(address: str) -> str:
    address = address.strip()
    match = _ADDRESS.match(address)
    if not match or not 0 < int(match.group(3)) < 65536:
        raise AccelError(
            f"--scheduler {address!r} is not a scheduler address: expected tcp://HOST:PORT "
            "(the address 'dask scheduler' prints, e.g. tcp://10.0.0.5:8786)"
        )
    return address


def probe_scheduler(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise AccelError unless a Dask scheduler at ``address`` completes Dask's handshake in ``timeout`` s.

    Uses Dask's own ``distributed.comm.connect`` with ``distributed.comm.timeouts.connect`` set
    to ``timeout``. That setting bounds reaching the port, but Dask then waits for the peer's
    handshake without a limit, so a port that accepts and never answers (or an HTTP server)
    would hang the client forever: the whole exchange is bounded here as well. Anything that is
    not a Dask scheduler (garbage bytes, a protocol Dask cannot speak here) is one line, and so is
    a ``ucx://`` or ``tls://`` address this installation cannot speak.
    """
    import asyncio

    import dask
    from distributed.security import Security

    scheme = address.split("://", 1)[0]
    if scheme in ("ucx", "ucxx") and not (module_installed("distributed_ucxx") or module_installed("ucxx")):
        raise AccelError(
            f"--scheduler {address}: {scheme}:// needs UCX support for Dask (pip install distributed-ucxx-cu12), or use tcp://"
        )
    if scheme == "tls" and not dask.config.get("distributed.comm.tls.ca-file", None):
        raise AccelError(
            f"--scheduler {address}: tls:// needs Dask's TLS settings (distributed.comm.tls.ca-file and the client "
            "certificate in the Dask configuration), or use tcp://"
        )
    connection_args = Security().get_connection_args("client")
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": f"{timeout:g}s"}):
            asyncio.run(_identify_scheduler(address, timeout, connection_args))
        return
    except (asyncio.TimeoutError, TimeoutError):
        why = (
            f": no answer to Dask's handshake within {timeout:g} s (something listens there, but does not speak Dask's protocol)"
        )
    except OSError as exc:  # nobody listens (refused until Dask's connect timeout), no route, ...
        why = f" within {timeout:g} s ({first_line(exc)})"
    except Exception as exc:  # noqa: BLE001 - garbage bytes, another protocol, a peer that is not a scheduler
        why = f": the peer does not speak Dask's protocol ({first_line(exc)})"
    raise _unreachable(address, why)


def _unreachable(address: str, why: str) -> AccelError:
    return AccelError(f"cannot reach a Dask scheduler at {address}{why}; is 'dask scheduler' running there?")


async def _identify_scheduler(address: str, timeout: float, connection_args: dict[str, Any]) -> None:
    """Ask who answers at ``address`` (Dask's ``identity``); ValueError unless it is a Dask scheduler."""
    import asyncio

    from distributed.core import rpc

    # Dask's own timeout decides "nobody listens"; the outer bound catches a peer that accepts
    # and then never completes the handshake, or never answers.
    async with rpc(address, timeout=timeout, connection_args=connection_args) as peer:
        reply = await asyncio.wait_for(peer.identity(), timeout + 2)
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        raise ValueError(
            f"the peer answered as {str(reply.get('type')) if isinstance(reply, dict) else type(reply).__name__}, not as a scheduler"
        )


@dataclass(frozen=True)
class ClusterPlan:
    """A checked cluster request: what to start, or where to attach."""

    kind: Literal["local", "local-cuda", "scheduler"]
    address: str | None = None
    workers: int | None = None
    threads_per_worker: int | list[int] | None = None  # a list: a running cluster's workers differ
    worker_kind: WorkerKind | None = None  # None: learnt from the workers of a running cluster
    rmm_pool_size: int | None = None
    device_memory_limit: int | float | None = None
    protocol: str = "tcp"
    #: Bytes each worker's pool may grow to (:func:`cluster_pool_sizes`), and what the sizes are.
    rmm_maximum_pool_size: int | None = None
    rmm_pool_basis: str | None = None
    #: Each worker's host memory limit (``--worker-memory``); None: Dask's share of the machine.
    memory_limit: int | None = None
    #: cuDF spilling on GPU workers (device buffers moved to host memory when the pool is full).
    cudf_spill: bool = False


def plan_cluster(config: ClusterConfig, model: str | None = None) -> ClusterPlan:
    """Check a :class:`accel.config.ClusterConfig` against this machine; raise AccelError or plan.

    Fast and side-effect free: nothing is started, and ``dask_cuda`` is not imported. Dask-CUDA
    workers get an RMM pool as the single-process GPU arm does: ``--rmm-pool`` unset means
    ``auto`` there too (:func:`cluster_pool_sizes`, sized for ``model``: None is XGBoost).
    """
    kind = config.kind
    if kind == "scheduler":  # a running cluster at config.address (and the baseline's): addresses checked
        if not config.address:
            raise AccelError("cluster kind 'scheduler' needs an address (--scheduler tcp://HOST:PORT)")
        if config.worker_memory is not None:
            raise AccelError(
                "--worker-memory applies to a cluster accel starts (--cluster); a running cluster's workers have their own limits"
            )
        if config.baseline_address:
            check_address(config.baseline_address)
        return ClusterPlan("scheduler", address=check_address(config.address))
    if config.address or config.baseline_address:
        flag = "--scheduler" if config.address else "--baseline-scheduler"
        raise AccelError(f"{flag} (an address) only goes with a running cluster (--scheduler), not with --cluster {kind}")
    memory_limit = worker_memory_bytes(config.worker_memory)
    if config.protocol == "ucx" and not (module_installed("distributed_ucxx") or module_installed("ucxx")):
        raise AccelError("--protocol ucx needs UCX support for Dask: pip install distributed-ucxx-cu12 (or -cu13), or use tcp")
    if kind == "local":
        return _plan_local(config, memory_limit)
    return _plan_local_cuda(config, memory_limit, model)


def _plan_local(config: ClusterConfig, memory_limit: int | None) -> ClusterPlan:
    """CPU workers on this machine: as many threads in all as it has cores for accel, at most."""
    for key, flag in (("rmm_pool", "--rmm-pool"), ("device_memory_limit", "--device-memory-limit")):
        if getattr(config, key) is not None:
            raise AccelError(f"{flag} applies to --cluster local-cuda (GPU workers), not to --cluster local")
    cores = cpu_threads()
    threads = config.threads_per_worker or max(1, cores // (config.workers or cores))
    workers = config.workers or max(1, cores // threads)
    if workers > cores:
        raise AccelError(f"--workers {workers}: this machine has {cores} cores for accel, so at most {cores} CPU workers")
    if workers * threads > cores:
        raise AccelError(
            f"--workers {workers} x --threads-per-worker {threads} = {workers * threads} threads, but this machine "
            f"has {cores} cores for accel; use fewer workers or threads"
        )
    return ClusterPlan("local", None, workers, threads, "cpu", protocol=config.protocol, memory_limit=memory_limit)


def _plan_local_cuda(config: ClusterConfig, memory_limit: int | None, model: str | None) -> ClusterPlan:
    """One Dask-CUDA worker per GPU, each with an RMM pool sized as the single-process GPU arm's."""
    # The GPU question is answered by the driver before anything else is tried.
    probe = probe_gpu()
    if not probe.usable:
        raise AccelError(f"--cluster local-cuda needs a usable GPU: {probe.reason}")
    if not module_installed("dask_cuda"):
        raise AccelError("--cluster local-cuda needs dask-cuda: pip install 'accel-tabular[gpu-cu12]' (or [gpu-cu13])")
    gpus = len(probe.devices)
    workers = config.workers or gpus
    if workers > gpus:
        raise AccelError(f"--workers {workers}: this machine has {gpus} GPU(s) visible, and local-cuda runs one worker per GPU")
    initial = maximum = basis = None
    spec = "auto" if config.rmm_pool is None else config.rmm_pool  # as RunConfig.rmm_pool's default
    if spec not in ("off", "auto"):
        dask_cuda_size(spec, "--rmm-pool")  # a bad size is refused before NVML is asked
    if spec != "off":
        memory = visible_gpu_memory(workers)  # NVML: free memory without a CUDA context here
        if memory is not None:
            free, measured = [f for f, _ in memory], "free"
        else:  # no NVML reading: the driver's totals
            free, measured = [d.memory_total_bytes for d in probe.devices[:workers]], "total"
        through_rmm = bool(xgboost_allocation(xgboost_build_info())["through_rmm"])
        initial, maximum, basis = cluster_pool_sizes(spec, free, through_rmm, measured, model)
    return ClusterPlan(
        "local-cuda",
        workers=workers,
        threads_per_worker=config.threads_per_worker or 1,
        worker_kind="gpu",
        rmm_pool_size=initial,
        device_memory_limit=dask_cuda_size(config.device_memory_limit, "--device-memory-limit"),
        protocol=config.protocol,
        rmm_maximum_pool_size=maximum,
        rmm_pool_basis=basis,
        memory_limit=memory_limit,
        cudf_spill=True,
    )


# --------------------------------------------------------------------------- the session


@dataclass(frozen=True, kw_only=True)
class ClusterInfo(ClusterPlan):
    """What a run record says about the cluster it ran on: the plan's fields as the running
    cluster has them, its dashboard and its workers."""

    worker_kind: WorkerKind
    address: str
    workers: int
    threads_per_worker: int | list[int]
    dashboard: str | None
    gpus_per_worker: int
    worker_details: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total_threads(self) -> int:
        return sum(int(w.get("nthreads", 0)) for w in self.worker_details)

    def summary(self) -> str:
        what = {"local": "local CPU cluster", "local-cuda": "local CUDA cluster", "scheduler": "running cluster"}[self.kind]
        per = f"{self.threads_per_worker} thread(s) each" if isinstance(self.threads_per_worker, int) else "threads vary"
        gpus = ", 1 GPU each" if self.worker_kind == "gpu" else ""
        return (
            f"dask: {what}, {self.workers} {self.worker_kind.upper()} worker(s), {per}{gpus}; "
            f"scheduler {self.address}; dashboard {self.dashboard or 'unavailable (pip install bokeh)'}"
        )


def _worker_facts(dask_worker: Any, probe: bool) -> dict[str, Any]:
    """Run on each worker (``client.run``): who it is and, when asked, whether its GPU is usable."""
    import pyarrow

    facts: dict[str, Any] = {
        "name": str(dask_worker.name),
        "host": dask_worker.address,
        "pid": os.getpid(),
        "nthreads": dask_worker.state.nthreads,
        "memory_limit_bytes": dask_worker.memory_manager.memory_limit,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        # Workers accel starts get accel's setting in their environment; a running cluster's workers have their own.
        "omp_wait_policy": f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')}",
        "arrow_memory_pool": str(pyarrow.default_memory_pool().backend_name),  # system, mimalloc, ...
        "cudf_spill": cudf_spill_option(),
    }
    if probe:
        result = probe_gpu()
        facts["gpu_usable"] = result.usable
        facts["gpu_reason"] = result.reason
        # Dask-CUDA workers list their own GPU first in CUDA_VISIBLE_DEVICES; device 0 is theirs.
        facts["gpu_name"] = result.devices[0].name if result.usable and result.devices else None
    return facts


@contextmanager
def cluster_client(request: ClusterConfig, model: str | None = None) -> Iterator[Client]:
    """A ``distributed.Client`` on the cluster ``request`` asks for, for the duration of a ``with`` block.

    The cluster ``accel run --cluster`` uses: checked before anything starts
    (:func:`plan_cluster`), the dashboard on 127.0.0.1, closed on success, error and Ctrl-C.
    ``accel hpo`` runs its trials on it (the search is given this function).
    """
    with ClusterSession(plan_cluster(request, model)) as session:
        yield session.client


class ClusterSession:
    """Start or attach to a Dask cluster for the duration of a ``with`` block.

    Parameters
    ----------
    plan : ClusterPlan
        From :func:`plan_cluster`.
    say : callable, optional
        Where the one-line cluster description goes (default: stderr).
    no_worker_grace : float, default NO_WORKERS_GRACE_S
        Seconds without any worker after which :meth:`no_worker_watchdog` gives up.

    Attributes
    ----------
    client : distributed.Client
    info : ClusterInfo
        What the cluster is (its workers, threads, devices): known once the session started.
    """

    def __init__(self, plan: ClusterPlan, say: Callable[[str], None] | None = None, no_worker_grace: float = NO_WORKERS_GRACE_S):
        self.plan, self.say, self.no_worker_grace = plan, say or say_line, no_worker_grace
        self.cluster: Any = None
        self.client: Any = None
        self.info: ClusterInfo
        self.all_workers_lost = False
        #: What :meth:`close` undoes, the last first: the client, the cluster started here (its
        #: worker processes), the variables the workers' pre-spawn environment overwrote in this
        #: process, the workers' scratch folder.
        self._closing = ExitStack()

    def __enter__(self) -> ClusterSession:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        self.say(self.info.summary())
        pools = sorted({str(w.get("arrow_memory_pool")) for w in self.info.worker_details} - {"system"})
        if pools:
            self.say(
                f"dask: the workers' Arrow memory pool is {', '.join(pools)}, which keeps freed pages: a worker that "
                "spills may stay over Dask's pause threshold; start them with ARROW_DEFAULT_MEMORY_POOL=system"
            )
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self) -> None:
        """Start the cluster and its client, or attach to the running scheduler (once it has a worker)."""
        from distributed import Client

        address = self.plan.address  # a running cluster's (plan_cluster gives it one); None: start one here
        if address is not None:
            probe_scheduler(address)
            try:
                self.client = Client(address, timeout=CONNECT_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, or what a stranger sent
                raise _unreachable(address, f" within {CONNECT_TIMEOUT_S} s ({first_line(exc)})") from None
        else:
            with _sigint_deferred():
                self.cluster = self._start_local()
                self._closing.callback(_close_quietly, self.cluster, 20)
            self.client = Client(self.cluster)
        self._closing.callback(_close_quietly, self.client, 10)
        if address is not None:
            try:
                self.client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
            except TimeoutError:
                raise AccelError(
                    f"no worker joined the scheduler at {address} within {WORKERS_TIMEOUT_S} s; "
                    f"start some with 'dask worker {address}' (or 'dask cuda worker')"
                ) from None
        info = self.info = self._describe()
        if any(w.get("cudf_spill") for w in info.worker_details):
            # The workers' cuDF buffers are spillable, and a spillable buffer sent here is rebuilt
            # as one, which needs a spill manager in this process too.
            receive_spillable_buffers()

    def _start_local(self) -> Any:
        import dask

        from accel import scratch
        from accel.cache import cache_dir
        from accel.openmp import worker_environ

        plan = self.plan
        # What the plan sets, and only that (None: left to Dask): a local plan has no RMM pool,
        # device limit or cuDF spilling.
        given = {
            "n_workers": plan.workers,
            "threads_per_worker": plan.threads_per_worker,
            "host": "127.0.0.1",
            "dashboard_address": DASHBOARD_ADDRESS,
            "protocol": plan.protocol,
            # Worker loss and restarts are reported by accel itself; Dask's own log lines would
            # bury the run's output on stderr. Real errors still surface as exceptions.
            "silence_logs": logging.CRITICAL,
            "memory_limit": plan.memory_limit,
            "rmm_pool_size": plan.rmm_pool_size,
            "rmm_maximum_pool_size": plan.rmm_maximum_pool_size,
            "device_memory_limit": plan.device_memory_limit,
            # worker_common.py:49-54 refuses it on a GPU without dedicated memory (SoC).
            "enable_cudf_spill": plan.cudf_spill or None,
        }
        common: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
        # The workers' scratch (Dask's dask-scratch-space, its lock files, spilled partitions) in a
        # folder of accel's cache this process owns: removed on close, reclaimed if accel is killed,
        # never left in the temporary folder.
        folder = scratch.owned_folder(cache_dir() / "dask", "accel-dask-")
        self._closing.callback(scratch.release, folder)
        common["local_directory"] = str(folder)
        # Dask's Nanny sets the pre-spawn environment in this process too (os.environ.update before
        # each spawn, distributed/nanny.py): what was there before is put back when the session closes.
        environ = {**WORKER_ENVIRON, **worker_environ()}  # OpenMP's spin count: accel's, unless the user chose
        keys = {*dask.config.get("distributed.nanny.pre-spawn-environ", {}), *environ}
        self._closing.callback(_restore_environ, {k: os.environ.get(k) for k in keys})
        spawn = {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in environ.items()}
        try:
            with dask.config.set({**spawn, "temporary-directory": str(folder)}):  # the scheduler's scratch too
                if plan.kind == "local":
                    from distributed import LocalCluster

                    return LocalCluster(processes=True, **common)
                from dask_cuda import LocalCUDACluster

                return LocalCUDACluster(**common)
        except (AccelError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. a port in use, NVML missing
            raise AccelError(f"could not start the {plan.kind} Dask cluster: {first_line(exc)}") from None

    def _describe(self) -> ClusterInfo:
        plan = self.plan
        try:
            facts = self.client.run(_worker_facts, probe=plan.worker_kind is None)
        except (ModuleNotFoundError, ImportError) as exc:
            raise AccelError(
                f"the Dask workers cannot import accel ({first_line(exc)}): install the same accel on every worker node"
            ) from None
        details = [facts[address] | {"address": address} for address in sorted(facts)]
        if not details:
            raise AccelError("the Dask cluster has no workers")
        worker_kind = plan.worker_kind
        if worker_kind is None:  # a running cluster: its workers' kind, learnt from them
            gpu = [d["address"] for d in details if d["gpu_usable"]]
            if 0 < len(gpu) < len(details):
                raise AccelError(
                    f"the cluster mixes GPU workers ({len(gpu)}) and CPU workers ({len(details) - len(gpu)}); "
                    "start all of them with 'dask cuda worker' or all with 'dask worker'"
                )
            worker_kind = "gpu" if gpu else "cpu"
        threads = sorted({int(d["nthreads"]) for d in details})
        address = self.client.scheduler.address
        try:
            dashboard = str(self.client.dashboard_link) if "dashboard" in self.client.scheduler_info()["services"] else None
        except Exception:  # noqa: BLE001
            dashboard = None
        return ClusterInfo(
            **vars(plan)
            | {
                "worker_kind": worker_kind,
                "address": address,
                "protocol": address.split("://")[0],
                "dashboard": dashboard,
                "workers": len(details),
                "threads_per_worker": threads[0] if len(threads) == 1 else threads,
                "gpus_per_worker": 1 if worker_kind == "gpu" else 0,
                "worker_details": details,
            }
        )

    def workers_now(self) -> list[str]:
        """Addresses of the workers the scheduler knows right now."""
        return sorted(self.client.scheduler_info(n_workers=-1)["workers"])

    def has_workers(self) -> bool:
        """Whether the scheduler knows a worker right now (a failure it could not answer about: yes).

        A run whose last worker died fails at once where the work needed what only that worker
        held (the scattered fitted transform: "already forgotten"), before
        :meth:`no_worker_watchdog`'s grace has run out: what failed it is asked here."""
        try:
            return bool(self.workers_now())
        except Exception:  # noqa: BLE001 - the scheduler gone too: not said to be a lost worker
            return True

    def no_worker_watchdog(self, interval: float = 0.5) -> AbstractContextManager[None]:
        """Cancel this client's work when the cluster has had no worker for ``no_worker_grace`` seconds.

        Dask waits for workers to come back (a nanny restarts a killed one in seconds), so a
        cluster that lost every worker would leave accel waiting forever. After the grace
        period the pending futures are cancelled, the blocked call raises, and
        :attr:`all_workers_lost` says why.
        """
        self.all_workers_lost = False
        return self._cancel_when(set(), self.no_worker_grace, set(), interval)

    def worker_loss_watchdog(self, workers: list[str], grace: float, interval: float = 0.5) -> AbstractContextManager[None]:
        """Cancel the futures created inside this block once one of ``workers`` has been gone
        for ``grace`` seconds and the block is still running.

        For distributed XGBoost: a rank that died cannot come back into the running training,
        which then either fails (a survivor reads EOF from the dead peer) or, depending on where
        the peers were, waits (xgboost#9419, #10985). Cancelling the block's own futures makes
        the blocked call raise; data persisted before the block is left alone.
        """
        return self._cancel_when(set(workers), grace, set(self.client.futures), interval)

    @contextmanager
    def _cancel_when(self, expected: set[str], grace: float, keep: set[Any], interval: float) -> Iterator[None]:
        """While the block runs, poll the scheduler's workers; once one of ``expected`` (none
        expected: every worker) has been missing for ``grace`` seconds, cancel this client's
        futures except those in ``keep`` (the blocked call then raises)."""
        from distributed import Future

        stop = threading.Event()
        reason = "a training worker was lost" if expected else "every Dask worker was lost"

        def watch() -> None:
            bad_since = None
            while not stop.wait(interval):
                try:
                    now = set(self.workers_now())
                except Exception:  # noqa: BLE001 - the client closing under us
                    return
                there = (expected <= now) if expected else now
                bad_since = None if there else bad_since or time.monotonic()
                if bad_since is not None and time.monotonic() - bad_since >= grace:
                    self.all_workers_lost = self.all_workers_lost or not expected
                    keys = [k for k in list(self.client.futures) if k not in keep]
                    self.client.cancel([Future(k, self.client) for k in keys], reason=reason)
                    return

        thread = threading.Thread(target=watch, name="accel-cluster-watchdog", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def close(self) -> None:
        """Close the client, then the cluster this session started (and its worker processes)."""
        self.client = self.cluster = None
        self._closing.close()


def _close_quietly(what: Any, timeout: float) -> None:
    with suppress(Exception):  # closing must not hide the error that got us here
        what.close(timeout=timeout)


def _restore_environ(before: dict[str, str | None]) -> None:
    for key, value in before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C back while worker processes start, then deliver it to this process.

    Ctrl-C on a terminal signals the whole foreground process group. Only accel should get it:
    it then closes the cluster, which stops the workers in order; workers that got it too would
    each die printing a traceback. So SIGINT is blocked in this thread while the cluster starts:
    every thread started meanwhile (Dask's IO loop, the threads that spawn the workers) inherits
    the blocked mask, and so do the worker processes across fork and exec, for good. A Ctrl-C
    that comes meanwhile stays pending and is delivered here the moment the mask is restored,
    after the caller has kept hold of the cluster it must close. One that lands on an older
    thread (a native thread of a numeric library) is caught by a recording handler and raised as
    KeyboardInterrupt at the same point.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # signals are not ours to change outside the main thread
        return
    # multiprocessing's resource tracker, on its first start, *unblocks* SIGINT in the thread
    # that starts it (CPython blocks it around the spawn, then unblocks instead of restoring);
    # that thread is Dask's IO loop, which spawns the workers. Started here first, it stays up.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # a pending Ctrl-C is raised here
        if caught:
            raise KeyboardInterrupt


# --------------------------------------------------------------------------- worker memory


class WorkerMemorySampler(PeriodicSampler):
    """Peak memory of each worker as Dask reports it (scheduler heartbeats), overall and per stage.

    A thread asks the scheduler every ``interval`` seconds for each worker's metrics: process
    memory (``metrics.memory``) and, on GPU workers with NVML, device memory in use
    (``metrics.gpu.memory-used``). At the end, :meth:`peaks` adds each worker's own peak RSS
    (``getrusage``), which catches what heartbeats miss between two samples. ``on_sample``
    (set by the caller) is told the highest worker's host bytes and device bytes (None without
    NVML) at each reading.
    """

    thread_name = "accel-worker-memory"

    def __init__(self, client: Any, interval: float = 0.25):
        super().__init__(interval)
        self.client = client
        #: Peak bytes per worker, of ``"host"`` or ``"device"`` memory, overall (stage None) and per stage.
        self.seen: defaultdict[tuple[str, str | None], dict[str, int]] = defaultdict(dict)

    def sample(self) -> None:
        try:
            workers = self.client.scheduler_info(n_workers=-1)["workers"]
        except Exception:  # noqa: BLE001 - a failed read must not end the run it watches
            return
        highest: dict[str, int | None] = {"host": 0, "device": None}  # this reading's highest worker, for on_sample
        with self._lock:
            for address, w in workers.items():
                metrics = w.get("metrics", {})
                readings = {"host": int(metrics.get("memory") or 0), "device": (metrics.get("gpu") or {}).get("memory-used")}
                for what, value in readings.items():
                    if value is None:
                        continue
                    highest[what] = max(highest[what] or 0, int(value))
                    for stage in {None, self.stage}:  # overall, and in the current stage
                        peaks = self.seen[what, stage]
                        peaks[address] = max(peaks.get(address, 0), int(value))
        if self.on_sample is not None and workers:
            self.on_sample(highest["host"] or 0, highest["device"])

    def peaks(self) -> dict[str, dict[str, Any]]:
        """Per worker: Dask-reported peak host MB, peak device MB, per stage, and peak RSS MB."""
        try:
            rss = self.client.run(process_peak_rss)  # VmHWM: not the spawning client's peak, as ru_maxrss
        except Exception:  # noqa: BLE001 - e.g. a worker lost at the end
            rss = {}

        def per_stage(what: str, address: str) -> dict[str, float | None]:
            return {s: to_mb(v[address]) for (w, s), v in self.seen.items() if w == what and s is not None and address in v}

        return {
            address: {
                "dask_reported_peak_host_mb": to_mb(self.seen["host", None].get(address)),
                "dask_reported_peak_device_mb": to_mb(self.seen["device", None].get(address)),
                "peak_rss_mb": to_mb(rss.get(address)),
                "stage_peak_host_mb": per_stage("host", address),
                "stage_peak_device_mb": per_stage("device", address),
            }
            for address in sorted(set(self.seen["host", None]) | set(rss))
        }


class OnWorkers(Executor[W]):
    """An executor whose work runs on ``session``'s workers: their memory sampled, the client's
    own (this process's) monitored as a CPU process's."""

    def __init__(self, session: ClusterSession):
        self.session = session
        self.sampler = WorkerMemorySampler(session.client)

    def trackers(self) -> tuple[Any, ...]:
        return (self.sampler,)

    def monitored(self, backend: Backend) -> Backend:
        return cpu_backend()  # the client's own memory; the workers' comes from the sampler

    def ran_on_workers(self, executed: Executed, workers_memory: dict[str, dict[str, Any]], **threads: object) -> Executed:
        """``executed`` as the workers ran it: their memory (``workers_memory``: the sampler's
        :meth:`~WorkerMemorySampler.peaks`) and their thread counts, ``threads`` beside them."""
        info = self.session.info
        executed.peaks, executed.workers_memory = ArmPeaks.of_workers(workers_memory), workers_memory
        executed.where = "dask workers"
        executed.threads = {"workers": info.workers, "threads_per_worker": info.threads_per_worker, **threads}
        return executed
