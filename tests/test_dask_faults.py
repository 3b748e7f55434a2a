"""Faults on a real cluster: ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1.

Workers are killed with SIGKILL at a known point of the workflow (``accel.faultpoints``: the
first worker to reach an armed point kills itself), so the tests need no sleeps and no luck.
Every process is killed at the end of its test, whatever happened.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from accel.backend import cpu_backend
from accel.config import ClusterConfig
from accel.faultpoints import enable_for_tests
from accel.models import XGBoostSettings
from accel.scaleout.cluster import ClusterSession, plan_cluster
from accel.scaleout.cluster_run import ClusterRunFailed, run_on_session
from accel.workflows.base import WorkflowSettings
from accel.workflows.flights import FlightsWorkflow
from accel.workflows.flights_dask import DaskFlights, plan_blocks
from tests.conftest import ROOT, read_json, records_in, run_accel
from tests.dask_procs import DaskProcesses

# Real scheduler and worker processes killed mid-run: the slow tier (`pytest -m slow`).
pytestmark = pytest.mark.slow

FAST_YAML = "workflow: flights\nrows: 3000\nxgboost:\n  n_estimators: 20\n  max_depth: 4\n"


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    procs = DaskProcesses(tmp_path_factory.mktemp("dask"))
    try:
        procs.start_scheduler()
        yield procs
    finally:
        procs.close()


@pytest.fixture
def cluster(scheduler, tmp_path, request):
    """Fresh single-threaded workers (2, or the test's ``workers`` mark) that reach fault points in ``tmp_path/faults``."""
    faults = tmp_path / "faults"
    faults.mkdir()
    enable_for_tests(faults)  # the hook is off unless a test marks its folder
    mark = request.node.get_closest_marker("workers")
    try:
        workers = scheduler.start_workers(mark.args[0] if mark else 2, env={"ACCEL_FAULT_DIR": str(faults)})
        yield scheduler, workers, faults
    finally:
        scheduler.stop_workers()


def _killed(workers):
    return [w for w in workers if w.poll() == -signal.SIGKILL]


def _run_cli(address, tmp_path, faults):
    wf = tmp_path / "fast.yaml"
    wf.write_text(FAST_YAML)
    return subprocess.run(
        [sys.executable, "-m", "accel", "run", str(wf), "--scheduler", address, "--out", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        # A survivor stuck in the failed attempt's collective frees its one thread for the retry
        # after this timeout: 300 s by default, longer than this test's patience.
        env={**os.environ, "ACCEL_FAULT_DIR": str(faults), "ACCEL_DASK_COLLECTIVE_TIMEOUT_S": "30"},
    )  # fmt: skip


def test_worker_killed_during_feature_engineering_is_recomputed(cluster):
    procs, workers, faults = cluster
    (faults / "features.armed").touch()
    settings = WorkflowSettings(rows=3000, seed=5, scale=2)
    backend = cpu_backend()
    with ClusterSession(plan_cluster(ClusterConfig(kind="scheduler", address=procs.address)), say=lambda _: None) as session:
        assert session.info.worker_kind == "cpu" and session.info.workers == 2
        workflow = DaskFlights(settings, "cpu", backend, plan_blocks(settings, "cpu", 2, 2))
        flights, loaded = workflow.load(session.client)
        prepared = workflow.features(session.client, flights, loaded)
        X_train = prepared.X_train.compute().reset_index(drop=True)
        X_test = prepared.X_test.compute().reset_index(drop=True)
        assert len(session.workers_now()) == 1
    assert len(list(faults.glob("features.fired-*"))) == 1 and len(_killed(workers)) == 1
    # The same result as without the kill: exactly the single-process features.
    expected_flow = FlightsWorkflow(settings)
    expected = expected_flow.features(backend, expected_flow.load(backend))
    pd.testing.assert_frame_equal(X_train, expected.X_train)
    pd.testing.assert_frame_equal(X_test, expected.X_test)


def test_worker_killed_during_training_is_retried_once_and_recorded(cluster, tmp_path):
    procs, workers, faults = cluster
    (faults / "train-1.armed").touch()
    proc = _run_cli(procs.address, tmp_path, faults)
    assert proc.returncode == 0, proc.stderr
    assert len(_killed(workers)) == 1
    assert "retrying once on the 1 remaining" in proc.stderr
    [path] = records_in(tmp_path / "runs")
    r = read_json(path)
    cpu = r["arms"]["cpu"]
    assert cpu["cluster"]["kind"] == "scheduler" and cpu["cluster"]["worker_kind"] == "cpu" and cpu["cluster"]["workers"] == 2
    assert cpu["status"] == "ok" and cpu["train_retried"] is True
    first, second = cpu["train_attempts"]
    assert first["status"] == "failed" and first["workers"] == 2 and len(first["lost_workers"]) == 1 and first["reason"]
    # The worker dies in the first training on the cluster: the early-stopping search's, where it
    # ran (then the final training's one attempt follows on the worker left), else the training's.
    attempt = 1 if first.get("phase") == "rounds search" else 2
    assert {k: v for k, v in second.items() if k != "phase"} == {"attempt": attempt, "status": "ok", "workers": 1}
    assert 0.55 < cpu["metrics"]["auc"] < 1
    gpu = r["arms"]["gpu"]
    assert gpu["status"] == "skipped" and f"the workers at {procs.address} are CPU workers" in gpu["reason"]


@pytest.mark.workers(1)
def test_a_baseline_scheduler_beside_cpu_workers_is_refused_before_any_work(cluster, tmp_path):
    procs, _, _ = cluster
    proc = run_accel(
        "run", "flights", "--rows", "2000", "--scheduler", procs.address, "--baseline-scheduler", procs.address,
        "--out", str(tmp_path / "runs"), timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("accel: error: ")]
    assert len(errors) == 1 and "--baseline-scheduler" in errors[0] and "CPU workers already" in errors[0]
    assert "Traceback" not in proc.stderr and records_in(tmp_path / "runs") == []


@pytest.mark.workers(3)
def test_training_that_fails_again_is_an_error_without_record(cluster, tmp_path):
    procs, workers, faults = cluster
    (faults / "train-1.armed").touch()
    (faults / "train-2.armed").touch()
    proc = _run_cli(procs.address, tmp_path, faults)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("accel: error: ")]
    assert len(errors) == 1 and "failed again on the retry" in errors[0] and "no run record" in errors[0]
    assert "Traceback" not in proc.stderr
    assert len(_killed(workers)) == 2, proc.stderr  # the retry failed on its fault, not otherwise
    assert records_in(tmp_path / "runs") == []


@pytest.mark.workers(1)
def test_losing_every_worker_is_an_error_not_a_hang(cluster):
    procs, workers, faults = cluster
    (faults / "features.armed").touch()
    settings = WorkflowSettings(rows=2000, seed=5)
    plan = plan_cluster(ClusterConfig(kind="scheduler", address=procs.address))
    start = time.monotonic()
    with ClusterSession(plan, say=lambda _: None, no_worker_grace=2) as session:
        with pytest.raises(ClusterRunFailed, match="every Dask worker was lost"):
            run_on_session(session, "flights", settings, XGBoostSettings(n_estimators=5), 5)
    # A hang never ends; this bound (far above the 2 s grace) only tells the two apart under load.
    assert time.monotonic() - start < 150
    assert _killed(workers) == workers


def test_a_call_that_waits_on_a_lost_worker_is_cancelled_not_left_hanging(cluster):
    """The watchdog around distributed training: once a worker the call started with is gone
    for the grace period, the futures made inside the block are cancelled (the blocked call
    raises); a future made before the block is untouched."""
    from distributed import CancelledError

    procs, workers, faults = cluster
    plan = plan_cluster(ClusterConfig(kind="scheduler", address=procs.address))
    with ClusterSession(plan, say=lambda _: None) as session:
        before = session.workers_now()
        kept = session.client.submit(sum, [1, 2, 3], workers=[before[0]])
        assert kept.result(timeout=30) == 6
        start = time.monotonic()
        with pytest.raises(CancelledError):
            with session.worker_loss_watchdog(before, grace=1.0, interval=0.2):
                # Stands for a training rank that waits forever on a dead peer.
                stuck = session.client.submit(time.sleep, 120, workers=[before[0]], pure=False)
                time.sleep(0.5)
                pids = session.client.run(os.getpid, workers=[before[1]])
                os.kill(pids[before[1]], signal.SIGKILL)  # the other worker: kept's stays
                stuck.result(timeout=100)
        # Cancelled, not finished: well under the 120 s the stuck task sleeps, on any load.
        assert time.monotonic() - start < 110
        assert kept.status == "finished" and kept.result() == 6


# --------------------------------------------------------------------------- a user's table


@pytest.fixture(scope="module")
def orders(tmp_path_factory):
    from tests.dask_table_bodies import write_tables

    return write_tables(tmp_path_factory.mktemp("orders"))


def test_table_worker_killed_during_features_gives_the_single_process_features(cluster, orders):
    """Out-of-fold target encoding across partitions, recomputed after a worker died mid-features:
    still exactly the single-process frames."""
    from accel.workflows.partitions import worker_slots
    from accel.workflows.table import TableWorkflow
    from accel.workflows.table_dask import DaskTable
    from tests.dask_table_bodies import plan

    procs, workers, faults = cluster
    (faults / "features.armed").touch()
    settings = WorkflowSettings(seed=3)
    planned = plan(orders["parquet"], "returned", settings)
    backend = cpu_backend()
    with ClusterSession(plan_cluster(ClusterConfig(kind="scheduler", address=procs.address)), say=lambda _: None) as session:
        table = DaskTable(planned, settings, "cpu", backend, slots=worker_slots("cpu", 2, 2))
        raw, loaded = table.load(session.client)
        got = table.features(session.client, raw, loaded)
        X_train = got.X_train.compute().reset_index(drop=True)
        y_train = got.y_train.compute().reset_index(drop=True)
        assert len(session.workers_now()) == 1
    assert len(list(faults.glob("features.fired-*"))) == 1 and len(_killed(workers)) == 1
    single = TableWorkflow(settings, planned, "xgboost", {})
    expected = single.features(backend, single.load(backend))
    pd.testing.assert_frame_equal(X_train, expected.X_train.reset_index(drop=True), check_exact=True)
    pd.testing.assert_series_equal(y_train, expected.y_train.reset_index(drop=True), check_names=False, check_exact=True)


def test_table_worker_killed_during_training_is_retried_once_and_recorded(cluster, orders, tmp_path):
    procs, workers, faults = cluster
    (faults / "train-1.armed").touch()
    params = tmp_path / "params.yaml"
    params.write_text("xgboost:\n  n_estimators: 20\n  max_depth: 4\n")
    proc = subprocess.run(
        [sys.executable, "-m", "accel", "run", str(params), "--data", str(orders["csv"]), "--target", "basket",
         "--probe", "off", "--scheduler", procs.address, "--out", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "ACCEL_FAULT_DIR": str(faults), "ACCEL_DASK_COLLECTIVE_TIMEOUT_S": "30"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(_killed(workers)) == 1 and "retrying once on the 1 remaining" in proc.stderr
    [path] = records_in(tmp_path / "runs")
    r = read_json(path)
    cpu = r["arms"]["cpu"]
    assert r["workflow"] == "table" and r["task"] == "regression" and cpu["status"] == "ok" and cpu["train_retried"] is True
    first, second = cpu["train_attempts"]
    assert first["status"] == "failed" and len(first["lost_workers"]) == 1 and second["status"] == "ok"
    assert cpu["metrics"]["rmse"] > 0 and r["arms"]["gpu"]["status"] == "skipped"
