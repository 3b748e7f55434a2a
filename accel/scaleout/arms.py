"""Where each arm of a cluster run goes: the accelerated arm on GPU workers, the baseline on CPU workers.

A run on Dask is paired like a run in one process: the same workflow on the accelerated arm
and on the CPU baseline, both timed by stage, so that every speedup is a number whenever both
ran. The device is decided once, by :func:`accel.backend.resolve_arms` (``--device
auto|gpu|cpu``), in this process, which plans the partitions of both arms:

- ``--cluster local-cuda``: the GPU arm on a ``LocalCUDACluster`` (one worker per GPU), then
  the baseline on a ``LocalCluster`` of as many CPU workers sharing this node's cores. Without
  a usable GPU (or without Dask-CUDA) the GPU arm is skipped with the reason and the CPU
  cluster arm still runs, as ``--device auto`` does in one process.
- ``--cluster local``: CPU workers only, the baseline arm; the GPU arm is skipped, saying
  that ``--cluster local-cuda`` runs it.
- ``--scheduler ADDR``: the arm of the workers found there (GPU or CPU). A GPU cluster's
  baseline runs on the CPU cluster at ``--baseline-scheduler ADDR``, or, without one, in this
  process (the single-process CPU arm, every core, streamed in batches when the table does
  not fit); the CPU arm's ``placement`` says which.

Clusters accel starts are started one at a time, each closed before the next arm, so the
two arms never share the node; running clusters are attached to before either arm runs, so
that a baseline cluster that is not a CPU cluster is refused before any work.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Literal

from accel.backend import Backend, cpu_backend, cpu_threads, gpu_arm_skip, module_installed, resolve_arms
from accel.config import ClusterConfig
from accel.errors import AccelError
from accel.scaleout.cluster import ClusterPlan, ClusterSession, plan_cluster, worker_memory_bytes

ArmKind = Literal["gpu", "cpu"]
#: Where an arm runs: on Dask workers, or in this process (the baseline of a running GPU cluster).
Placement = Literal["dask", "process"]


@dataclass
class ArmPlace:
    """Where one arm of a cluster run goes, or why it does not run.

    Attributes
    ----------
    kind : {"gpu", "cpu"}
    backend : Backend or None
        This process's backend for the arm (it plans the arm's partitions); None when skipped.
    plan : ClusterPlan or None
        The cluster to start or attach to; None for an arm in this process or a skipped one.
    session : ClusterSession or None
        A running cluster already attached to (``--scheduler``); a cluster accel starts is
        started when its arm runs.
    skip : str or None
        Why the arm does not run.
    note : str or None
        Why the arm runs where it does, when that is not the cluster asked for.
    """

    kind: ArmKind
    backend: Backend | None = None
    plan: ClusterPlan | None = None
    session: ClusterSession | None = None
    skip: str | None = None
    note: str | None = None

    @property
    def placement(self) -> Placement | None:
        return None if self.skip is not None else "process" if self.plan is None and self.session is None else "dask"

    def arm_backend(self) -> Backend:
        """This process's backend for the arm, which every arm that runs has."""
        assert self.backend is not None, f"the {self.kind} arm does not run ({self.skip}): it has no backend"
        return self.backend

    def open_session(self, stack: ExitStack) -> ClusterSession:
        """The arm's cluster: the running one attached to, or the planned one, started on ``stack``."""
        if self.session is not None:
            return self.session
        assert self.plan is not None, f"the {self.kind} arm runs in this process: it has no cluster"
        return stack.enter_context(ClusterSession(self.plan))


def baseline_plan(workers: int, protocol: str = "tcp", memory_limit: int | None = None) -> ClusterPlan:
    """The CPU baseline beside ``workers`` GPU workers on this node: as many CPU workers, the node's cores shared among them."""
    cores = cpu_threads()
    if workers > cores:
        raise AccelError(
            f"--workers {workers}: the CPU baseline runs as many CPU workers, and this machine has {cores} cores for accel"
        )
    return ClusterPlan("local", None, workers, max(1, cores // workers), "cpu", protocol=protocol, memory_limit=memory_limit)


def gpu_planning_refused(reason: str | None) -> AccelError:
    """The error for GPU workers when this process, which plans their cuDF partitions, has no usable GPU."""
    return AccelError(
        "the cluster's workers are GPU workers, and planning cuDF partitions needs cuDF with a usable GPU "
        f"in this process too; run accel on one of the GPU nodes (here: {reason})"
    )


def plan_arms(cluster: ClusterConfig, device: str, stack: ExitStack) -> dict[ArmKind, ArmPlace]:
    """Where both arms of a run on ``cluster`` go, for ``--device`` ``device`` (see the module's description).

    For ``--cluster local`` / ``local-cuda`` nothing is started and refusals come first; for
    ``--scheduler`` the running clusters are attached to on ``stack``
    (:func:`attach_scheduler_arms`)."""
    if cluster.kind == "scheduler":
        return attach_scheduler_arms(cluster, device, stack)
    if cluster.kind == "local":
        gpu_skip = gpu_arm_skip(
            device,
            "not run: --cluster local starts CPU workers only (--cluster local-cuda runs the GPU arm beside this baseline)",
        )
        return {"gpu": ArmPlace("gpu", skip=gpu_skip), "cpu": ArmPlace("cpu", cpu_backend(), plan_cluster(cluster))}

    arms = resolve_arms(device)  # --device gpu without a GPU: DeviceUnavailable (exit 2)
    gpu = ArmPlace("gpu", skip=arms.gpu_skip)
    if arms.gpu is not None and not module_installed("dask_cuda"):
        reason = "GPU workers unavailable: dask-cuda is not installed: pip install 'accel-tabular[gpu-cu12]' (or [gpu-cu13])"
        gpu = ArmPlace("gpu", skip=gpu_arm_skip(device, reason))
    elif arms.gpu is not None:
        gpu = ArmPlace("gpu", arms.gpu, plan_cluster(cluster))
    workers = gpu.plan.workers if gpu.plan is not None else (cluster.workers or 1)
    memory_limit = gpu.plan.memory_limit if gpu.plan is not None else worker_memory_bytes(cluster.worker_memory)
    return {"gpu": gpu, "cpu": ArmPlace("cpu", arms.cpu, baseline_plan(workers or 1, cluster.protocol, memory_limit))}


def attach_scheduler_arms(cluster: ClusterConfig, device: str, stack: ExitStack) -> dict[ArmKind, ArmPlace]:
    """Both arms for ``--scheduler``: attach to the cluster (and the baseline's), learn their workers' kind.

    Sessions are entered on ``stack`` and stay open until the run ends.
    """
    primary = stack.enter_context(ClusterSession(plan_cluster(cluster)))
    kind = primary.info.worker_kind
    baseline = None
    if cluster.baseline_address:
        if kind == "cpu":
            raise AccelError(
                f"--baseline-scheduler is the CPU baseline of a GPU cluster, but the workers at {cluster.address} are "
                "CPU workers already: leave it out"
            )
        plan = plan_cluster(cluster.model_copy(update={"address": cluster.baseline_address, "baseline_address": None}))
        baseline = stack.enter_context(ClusterSession(plan))
        if baseline.info.worker_kind != "cpu":
            raise AccelError(
                f"--baseline-scheduler {cluster.baseline_address}: its workers are GPU workers; the baseline needs "
                "CPU workers (start them with 'dask worker')"
            )
    if kind == "cpu":
        reason = gpu_arm_skip(
            device,
            f"not run: the workers at {cluster.address} are CPU workers (point --scheduler at GPU workers for the GPU arm)",
        )
        return {"gpu": ArmPlace("gpu", skip=reason), "cpu": ArmPlace("cpu", cpu_backend(), session=primary)}

    arms = resolve_arms(device)  # --device cpu: the GPU arm not requested
    if arms.gpu is None and device != "cpu":
        raise gpu_planning_refused(arms.gpu_skip)
    gpu = ArmPlace("gpu", skip=arms.gpu_skip) if arms.gpu is None else ArmPlace("gpu", arms.gpu, session=primary)
    note = "no --baseline-scheduler: the CPU baseline ran in this process (every core, in batches if the table does not fit)"
    return {"gpu": gpu, "cpu": ArmPlace("cpu", arms.cpu, session=baseline, note=None if baseline is not None else note)}
