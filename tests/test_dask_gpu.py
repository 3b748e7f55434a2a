"""The Dask checks of ``test_dask_flights.py`` on a ``LocalCUDACluster`` (cuDF partitions, XGBoost on CUDA).

Same bodies (``tests/dask_bodies.py``), GPU workers: skipped with the probe's reason where no
GPU is usable, or where Dask-CUDA is not installed.
"""

from __future__ import annotations

import importlib.util

import pytest

from accel.config import ClusterConfig
from accel.scaleout.cluster import ClusterSession, plan_cluster
from tests.conftest import requires_gpu
from tests.dask_bodies import (
    check_baseline_scheduler_pairs_two_running_clusters,
    check_dask_features_match_single_process,
    check_dask_run_agrees_with_single_process,
    check_local_cuda_run_is_paired_with_a_cpu_cluster,
)
from tests.gpu_marks import needs_dask_cuda, needs_dask_cudf

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.fixture(scope="module")
def session():
    if importlib.util.find_spec("dask_cuda") is None:
        pytest.skip("dask-cuda is not installed (pip install 'accel-tabular[gpu-cu12]', or [gpu-cu13] for a CUDA 13 driver)")
    plan = plan_cluster(ClusterConfig(kind="local-cuda", workers=1))
    with ClusterSession(plan, say=lambda _: None) as s:
        yield s


def test_cuda_cluster_describes_itself(session):
    info = session.info
    assert info.kind == "local-cuda" and info.worker_kind == "gpu" and info.gpus_per_worker == 1 and info.workers == 1
    # Started with Arrow's system pool through Dask's pre-spawn environment (LoggedNanny is a Nanny).
    assert {w["arrow_memory_pool"] for w in info.worker_details} == {"system"}

    # The worker computes on its GPU what the host (the CPU arm) computes with NumPy.
    def on_the_worker(n):
        import cupy

        x = cupy.arange(n, dtype=cupy.float64)
        return float((x * x).sum()), str(cupy.cuda.Device().id)

    import numpy as np

    n = 1_000_003
    value, device = session.client.submit(on_the_worker, n, pure=False).result(timeout=120)
    x = np.arange(n, dtype=np.float64)
    assert value == pytest.approx(float((x * x).sum()), rel=1e-12) and device == "0"


@needs_dask_cudf
def test_features_on_cudf_partitions_equal_the_single_process_gpu_features(session):
    check_dask_features_match_single_process(session, "gpu")


@needs_dask_cudf
def test_cuda_cluster_run_agrees_with_single_process_gpu_run(session):
    arm = check_dask_run_agrees_with_single_process(session, "gpu")
    assert arm["peak_device_mb"] is None or arm["peak_device_mb"] > 0
    # Through the one runner: stages on the workers' cuDF, device peaks per stage from their NVML heartbeats.
    assert arm["executor"] == "dask" and arm["stage_devices"]["features"].startswith("dask workers: cuda")
    if arm["peak_device_mb"] is not None:
        assert arm["stage_peak_device_mb"] and max(arm["stage_peak_device_mb"].values()) <= arm["peak_device_mb"]


@needs_dask_cuda
def test_local_cuda_plan_sizes_pools_from_free_memory():
    from accel.backend import visible_gpu_memory, xgboost_allocation, xgboost_build_info
    from accel.scaleout.cluster import cluster_pool_sizes

    plan = plan_cluster(ClusterConfig(kind="local-cuda", workers=1, rmm_pool="auto"))
    [(free, total)] = visible_gpu_memory(1)
    through_rmm = xgboost_allocation(xgboost_build_info())["through_rmm"]
    # Sized from this GPU's free memory now (within what other processes change meanwhile).
    expected = cluster_pool_sizes("auto", [free], through_rmm)[0]
    assert abs(plan.rmm_pool_size - expected) <= 0.02 * total
    assert plan.rmm_pool_size <= plan.rmm_maximum_pool_size < total and "free memory" in plan.rmm_pool_basis


@needs_dask_cudf
@needs_dask_cuda
def test_local_cuda_run_pairs_the_gpu_workers_with_a_cpu_cluster(tmp_path):
    check_local_cuda_run_is_paired_with_a_cpu_cluster(tmp_path, gpu_usable=True)


@needs_dask_cudf
def test_a_running_gpu_cluster_is_paired_with_the_cpu_cluster_at_baseline_scheduler(tmp_path):
    check_baseline_scheduler_pairs_two_running_clusters(tmp_path)


def _resource_stack() -> list[str]:
    """The RMM resource stack of this process's device, outermost first (run on a worker)."""
    import rmm.mr

    stack, resource = [], rmm.mr.get_current_device_resource()
    while resource is not None:
        stack.append(type(resource).__name__)
        resource = resource.get_upstream() if hasattr(resource, "get_upstream") else None
    return stack


def _set_up_like_a_search_trial() -> dict:
    """On a worker: a cuDF buffer (cuDF decides its spill manager there), then the arm's memory set
    up as accel hpo's trials set it up; the resource stack before and after, and the record."""
    import cudf

    from accel.backend import gpu_backend
    from accel.memory import setup_rmm_pool

    cudf.Series([1.0, 2.0]).sum()
    before = _resource_stack()
    record = setup_rmm_pool(gpu_backend(), "auto", "xgboost")
    return {"before": before, "after": _resource_stack(), "record": record, "spill": bool(cudf.get_option("spill"))}


def test_cuda_workers_get_a_pool_by_default_and_keep_it_and_their_spilling(session):
    """``--rmm-pool`` unset: each Dask-CUDA worker gets the automatic pool, as the single-process GPU
    arm does. accel's memory set-up on a worker (an hpo trial's) keeps that pool and cuDF's
    out-of-memory spill handler over it (no ``rmm.reinitialize``), pushing only its statistics."""
    assert session.info.rmm_pool_size is not None and session.info.cudf_spill
    for facts in session.client.run(_set_up_like_a_search_trial).values():
        before, after, record = facts["before"], facts["after"], facts["record"]
        assert facts["spill"] and before[:2] == ["FailureCallbackResourceAdaptor", "PoolMemoryResource"], before
        assert after[1:] == before and after[0] == "StatisticsResourceAdaptor", after
        assert record["kept_resource"] == before and "is kept" in record["reason"]
        assert record["free_bytes_before"] >= record["initial_bytes"] > 0


@needs_dask_cudf
def test_the_client_takes_in_cudf_objects_from_workers_that_spill(session):
    """A spilling worker's buffers are spillable, and one sent to the client is rebuilt as one:
    the client has a spill manager although its GPU probe made a buffer before the cluster started."""

    def frame(n):
        import cudf

        return cudf.DataFrame({"a": range(n), "b": [0.5] * n})

    got = session.client.submit(frame, 1000, pure=False).result(timeout=120)
    assert len(got) == 1000 and float(got["b"].sum()) == 500.0
