"""Test bodies shared by the Dask CPU and GPU suites (``test_dask_flights.py``, ``test_dask_gpu.py``).

Each takes a started :class:`~accel.scaleout.cluster.ClusterSession` and the workers' kind, and checks
that the distributed run reproduces the single-process run of the same kind: the same rows and
features exactly, and the hold-out AUC within :data:`accel.scaleout.cluster_run.DASK_PARITY_TOLERANCE`.
"""

from __future__ import annotations

import pandas as pd

from accel.backend import Backend, cpu_backend, gpu_backend
from accel.models import XGBoostSettings
from accel.runner import run_arm
from accel.scaleout.cluster_run import DASK_PARITY_TOLERANCE, run_on_session
from accel.timing import EXTRA_STAGES, STAGES
from accel.workflows.base import WorkflowSettings
from accel.workflows.flights import FlightsWorkflow
from accel.workflows.flights_dask import DaskFlights, plan_blocks
from tests.bodies import to_pandas


def single_process_backend(kind: str) -> Backend:
    return gpu_backend() if kind == "gpu" else cpu_backend()


def check_dask_features_match_single_process(session, kind: str, rows: int = 3000, scale: int = 2, seed: int = 7) -> None:
    """Rows, split, joins, group statistics and categories: identical to the single-process frames."""
    backend = single_process_backend(kind)
    settings = WorkflowSettings(rows=rows, seed=seed, scale=scale)
    workflow = FlightsWorkflow(settings)
    expected = workflow.features(backend, workflow.load(backend))

    info = session.info
    dask_workflow = DaskFlights(settings, kind, backend, plan_blocks(settings, kind, info.workers, info.total_threads))
    flights, loaded = dask_workflow.load(session.client)
    got = dask_workflow.features(session.client, flights, loaded)

    assert got.rows == expected.rows
    assert got.X_train.npartitions > 1, "the data must really be partitioned by rows"
    for name in ("X_train", "X_test", "y_train", "y_test"):
        mine = to_pandas(getattr(got, name).compute()).reset_index(drop=True)
        theirs = to_pandas(getattr(expected, name)).reset_index(drop=True)
        if name.startswith("X"):
            pd.testing.assert_frame_equal(mine, theirs)
        else:
            pd.testing.assert_series_equal(mine, theirs, check_names=False)


def check_dask_run_agrees_with_single_process(session, kind: str, rows: int = 6000, seed: int = 3) -> dict:
    """Same data and seed: the distributed AUC is within the stated tolerance of the single process's."""
    backend = single_process_backend(kind)
    settings = WorkflowSettings(rows=rows, seed=seed)
    params = XGBoostSettings(n_estimators=40, max_depth=6)
    single = run_arm(backend, FlightsWorkflow(settings, params))
    arm, _, _ = run_on_session(session, "flights", settings, params, seed)

    assert arm["status"] == "ok", arm["reason"]
    assert arm["rows"] == single.rows
    assert set(arm["stages"]) == {*STAGES, *EXTRA_STAGES} and all(v >= 0 for v in arm["stages"].values())
    assert arm["device_used"].startswith("cuda" if kind == "gpu" else "cpu")
    assert abs(arm["metrics"]["auc"] - single.metrics["auc"]) <= DASK_PARITY_TOLERANCE, (arm["metrics"], single.metrics)
    assert arm["train_attempts"] == [{"attempt": 1, "status": "ok", "workers": session.info.workers}]
    memory = arm["workers_memory"]
    assert set(memory) == {w["address"] for w in session.info.worker_details}
    assert all(m["peak_rss_mb"] and m["peak_rss_mb"] > 50 for m in memory.values())
    # The one runner's result: the arm's peaks are its highest worker's, overall and per stage.
    assert arm["executor"] == "dask"
    assert arm["peak_host_mb"] == max(m["peak_rss_mb"] for m in memory.values())
    assert set(arm["stage_peak_host_mb"]) <= {*STAGES, *EXTRA_STAGES} and arm["stage_peak_host_mb"]
    assert all(v > 0 for v in arm["stage_peak_host_mb"].values())
    assert arm["stage_devices"]["features"].startswith("dask workers: ") and arm["client_peak_host_mb"] > 0
    return arm


def check_local_cuda_run_is_paired_with_a_cpu_cluster(tmp_path, gpu_usable: bool) -> dict:
    """``accel run flights --cluster local-cuda``: the GPU arm on GPU workers (skipped with the
    reason where no GPU is usable), the CPU baseline on as many CPU workers of the same node,
    speedups that are numbers exactly when both ran."""
    import math

    from tests.conftest import read_json, records_in, run_accel

    proc = run_accel(
        "run", "flights", "--rows", "3000", "--cluster", "local-cuda", "--workers", "1", "--out", str(tmp_path), timeout=300
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [path] = records_in(tmp_path)
    r = read_json(path)
    gpu, cpu = r["arms"]["gpu"], r["arms"]["cpu"]
    assert r["mode"] == "dask" and r["config"]["cluster"]["kind"] == "local-cuda"
    assert cpu["status"] == "ok" and cpu["placement"] == "dask" and cpu["device_used"] == "cpu"
    assert cpu["cluster"]["kind"] == "local" and cpu["cluster"]["worker_kind"] == "cpu" and cpu["cluster"]["workers"] == 1
    if gpu_usable:
        assert gpu["status"] == "ok" and gpu["placement"] == "dask" and gpu["device_used"].startswith("cuda")
        assert gpu["cluster"]["kind"] == "local-cuda" and gpu["cluster"]["cudf_spill"] is True
        assert all(v > 0 and not math.isnan(v) for v in r["speedup"].values()), r["speedup"]
        assert r["parity"]["ok"] is True, r["parity"]
    else:
        assert gpu["status"] == "skipped" and gpu["reason"].startswith("GPU unavailable: ")
        assert all(math.isnan(v) for v in r["speedup"].values()) and r["parity"]["ok"] is None
    assert "GPU arm" in proc.stdout and "CPU arm: 1 CPU Dask worker(s)" in proc.stdout
    return r


def check_baseline_scheduler_pairs_two_running_clusters(tmp_path) -> dict:
    """``--scheduler GPU_CLUSTER --baseline-scheduler CPU_CLUSTER``: two clusters already running,
    started with ``dask scheduler`` / ``dask worker`` (the CPU cluster's worker sees no GPU:
    ``CUDA_VISIBLE_DEVICES=""``); the GPU arm on the first, the CPU baseline on the second, both
    recorded with their cluster, and per-stage speedups that are numbers."""
    import math

    from tests.conftest import read_json, records_in, run_accel
    from tests.dask_procs import DaskProcesses

    gpu_procs, cpu_procs = DaskProcesses(tmp_path / "gpu-cluster"), DaskProcesses(tmp_path / "cpu-cluster")
    try:
        gpu_procs.start_scheduler()
        gpu_procs.start_workers(1)
        cpu_procs.start_scheduler()
        cpu_procs.start_workers(2, env={"CUDA_VISIBLE_DEVICES": ""})
        proc = run_accel(
            "run", "flights", "--rows", "3000", "--scheduler", gpu_procs.address,
            "--baseline-scheduler", cpu_procs.address, "--out", str(tmp_path / "runs"), timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        [path] = records_in(tmp_path / "runs")
        r = read_json(path)
        gpu, cpu = r["arms"]["gpu"], r["arms"]["cpu"]
        assert gpu["status"] == "ok" and gpu["executor"] == "dask" and gpu["device_used"].startswith("cuda")
        assert gpu["cluster"]["address"] == gpu_procs.address and gpu["cluster"]["worker_kind"] == "gpu"
        assert cpu["status"] == "ok" and cpu["executor"] == "dask" and cpu["device_used"] == "cpu"
        assert cpu["cluster"]["address"] == cpu_procs.address and cpu["cluster"]["workers"] == 2
        assert all(not math.isnan(v) and v > 0 for v in r["speedup"].values()), r["speedup"]
        assert r["parity"]["ok"] is not None
        return r
    finally:
        gpu_procs.close()
        cpu_procs.close()
