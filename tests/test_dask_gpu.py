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
        pytest.skip("dask-cuda is not installed (pip install 'accel-tabular[gpu-cu12]')")
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
