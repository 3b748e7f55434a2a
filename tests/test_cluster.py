"""Refusals up front (one line, exit 2, within seconds) and the cluster session's clean shutdown."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from accel.backend import cpu_threads
from accel.cli.main import main
from accel.config import ClusterConfig
from accel.errors import AccelError
from accel.scaleout.cluster import (
    CONNECT_TIMEOUT_S,
    ClusterPlan,
    ClusterSession,
    check_address,
    cluster_pool_sizes,
    dask_cuda_size,
    plan_cluster,
)
from tests.conftest import ROOT, gpu_skip_reason, records_in, run_accel, sigint_default
from tests.dask_procs import free_port
from tests.test_cli import assert_one_line_error


def _main(capsys, *argv):
    rc = main(list(argv))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(argv, rc, captured.out, captured.err)


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--cluster", "local", "--workers", "0"], ["--workers", "positive integer"]),
        (["--cluster", "local", "--workers", "512"], ["--workers 512", "cores"]),
        (["--cluster", "local", "--workers", "1", "--threads-per-worker", "512"], ["512", "cores"]),
        (["--cluster", "local", "--rmm-pool", "1GB"], ["--rmm-pool", "local-cuda"]),
        (["--cluster", "local", "--scheduler", "tcp://127.0.0.1:8786"], ["exclude each other"]),
        (["--workers", "2"], ["--workers", "need --cluster"]),
        (["--scheduler", "tcp://127.0.0.1:8786", "--workers", "2"], ["--workers", "running cluster"]),
        (["--cluster", "local", "--precision", "fp16"], ["--precision", "not to a Dask run"]),
        (["--scheduler", "tcp://127.0.0.1:8786", "--memory-budget", "1GB"], ["--memory-budget", "not to a Dask run"]),
        (["--cluster", "nowhere"], ["--cluster", "invalid choice"]),
        (["--scheduler", "127.0.0.1"], ["not a scheduler address", "tcp://HOST:PORT"]),
        (["--scheduler", "tcp://host:99999"], ["not a scheduler address"]),
        (["--cluster", "local", "--scale", "0"], ["--scale", "positive integer"]),
    ],
)
def test_bad_cluster_requests_are_refused_before_anything_starts(capsys, tmp_path, argv, needles):
    proc = _main(capsys, "run", "flights", "--rows", "1000", "--out", str(tmp_path), *argv)
    assert_one_line_error(proc, *needles)
    assert records_in(tmp_path) == []


def test_sizes_are_parsed_by_dask_and_bad_ones_named():
    assert dask_cuda_size("2GB", "--rmm-pool") == 2_000_000_000
    assert dask_cuda_size("512MiB", "--rmm-pool") == 512 * 1024**2
    assert dask_cuda_size("0.5", "--device-memory-limit") == 0.5
    assert dask_cuda_size("off", "--rmm-pool") is None and dask_cuda_size(None, "--rmm-pool") is None
    for bad in ("lots", "5 foos", "0", "-1GB", "auto"):
        with pytest.raises(AccelError, match="--rmm-pool"):
            dask_cuda_size(bad, "--rmm-pool")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("lots", "--device-memory-limit: cannot read 'lots' as a size (give bytes like 8GB or 500MiB, or a fraction like 0.5)"),
        ("1e400GB", "--device-memory-limit: cannot read '1e400GB' as a size"),
        ("-1GB", "--device-memory-limit: the size must be positive, got '-1GB'"),
        ("2000PiB", "--device-memory-limit: '2000PiB' is more than any machine holds (at most 1,024 PiB)"),
    ],
)
def test_a_cluster_size_is_refused_in_the_words_every_size_is(text, said):
    """One parser for every size accel reads (memory.parse_size): --memory-budget's words, each flag's examples."""
    with pytest.raises(AccelError) as refused:
        dask_cuda_size(text, "--device-memory-limit")
    assert str(refused.value).startswith(said)


def test_cluster_pool_sizes_mean_what_the_single_process_pool_means():
    from accel.memory import rmm_auto_sizes

    free = [70 * 2**30 + 1000, 60 * 2**30 + 12_345]  # two GPUs, the second with less free
    for through_rmm in (True, False):
        # auto: the single process's sizes for the GPU with the least free memory, in bytes, so
        # that Dask-CUDA does not read a fraction as a share of the total memory.
        initial, maximum, basis = cluster_pool_sizes("auto", free, through_rmm)
        assert (initial, maximum) == rmm_auto_sizes(min(free), through_rmm)[:2]
        assert isinstance(initial, int) and initial % 256 == 0 and "free memory" in basis and "per worker" in basis
        assert (maximum > initial) is through_rmm
    # A fraction is that share of the free memory, a fixed pool like a size.
    initial, maximum, basis = cluster_pool_sizes("0.25", free, False)
    assert initial == maximum == int(min(free) * 0.25) // 256 * 256 and "25%" in basis
    assert cluster_pool_sizes("3GB", free, False)[:2] == (3_000_000_000 // 256 * 256,) * 2
    assert cluster_pool_sizes("off", free, True) == (None, None, None) == cluster_pool_sizes(None, free, True)
    # Without a reading of the workers' memory, auto is refused rather than guessed.
    with pytest.raises(AccelError, match="cannot be read"):
        cluster_pool_sizes("auto", [], True)
    # Where only the driver's totals were read, the description says so.
    assert "total memory" in cluster_pool_sizes("auto", free, True, basis="total")[2]


def test_addresses_are_checked():
    assert check_address("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert check_address("tcp://[::1]:8786") == "tcp://[::1]:8786"
    for bad in ("10.0.0.5:8786", "tcp://:8786", "tcp://host", "http://host:8786", "tcp://host:0"):
        with pytest.raises(AccelError, match="not a scheduler address"):
            check_address(bad)


def test_default_local_plan_fills_the_cores_and_never_more():
    plan = plan_cluster(ClusterConfig(kind="local"))
    assert plan.workers * plan.threads_per_worker <= cpu_threads() and plan.worker_kind == "cpu"


@pytest.mark.slow
def test_unreachable_scheduler_fails_fast(tmp_path):
    start = time.monotonic()
    proc = run_accel("run", "flights", "--scheduler", f"tcp://127.0.0.1:{free_port()}", "--out", str(tmp_path), timeout=60)
    assert_one_line_error(proc, "cannot reach a Dask scheduler", "dask scheduler")
    assert f"within {CONNECT_TIMEOUT_S} s" in proc.stderr
    # The promise is CONNECT_TIMEOUT_S (5 s) of waiting; the bound only tells a hang from a
    # refusal, generous enough for interpreter start-up and imports on a loaded 2-core machine.
    assert time.monotonic() - start < 90
    assert records_in(tmp_path) == []


@pytest.mark.skipif(gpu_skip_reason() is None, reason="a GPU is usable here")
def test_local_cuda_with_device_gpu_without_gpu_fails_fast_and_imports_no_gpu_library(tmp_path):
    code = (
        "import sys\n"
        "from accel.cli.main import main\n"
        f"rc = main(['run', 'flights', '--cluster', 'local-cuda', '--device', 'gpu', '--out', {str(tmp_path)!r}])\n"
        "print(rc, sorted(m for m in ('dask_cuda', 'cupy', 'cudf', 'rmm', 'distributed') if m in sys.modules))\n"
    )
    # "Fast" is a promise about order, not seconds: the refusal comes before any cluster is
    # started, so not even distributed is imported (no wall-clock bound: load can break one).
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.stdout.strip().splitlines()[-1] == "2 []"
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("accel: error: ") and "GPU" in lines[0], lines
    assert records_in(tmp_path) == []


@pytest.mark.parametrize(
    "argv, needles",
    [
        (["--cluster", "local", "--device", "gpu"], ["--device gpu", "CPU workers only", "local-cuda"]),
        (["--cluster", "local", "--baseline-scheduler", "tcp://127.0.0.1:8786"], ["--baseline-scheduler", "--scheduler"]),
        (["--scheduler", "tcp://127.0.0.1:8786", "--worker-memory", "1GB"], ["--worker-memory", "--cluster"]),
        (["--cluster", "local", "--worker-memory", "lots"], ["--worker-memory: cannot read 'lots' as a size", "400MB"]),
        (["--cluster", "local", "--worker-memory", "0.5"], ["--worker-memory '0.5'", "not a fraction"]),
        (["--cluster", "local", "--worker-memory", "10MB"], ["--worker-memory '10MB'", "at least"]),
        (["--scheduler", "tcp://127.0.0.1:8786", "--baseline-scheduler", "127.0.0.1"], ["127.0.0.1"]),
    ],
)
def test_pairing_options_are_refused_before_any_cluster_starts(capsys, tmp_path, argv, needles):
    proc = _main(capsys, "run", "flights", *argv, "--out", str(tmp_path))
    assert_one_line_error(proc, *needles)
    assert records_in(tmp_path) == []


def test_scale_refuses_without_cluster_and_beyond_the_machine(capsys, tmp_path):
    assert_one_line_error(_main(capsys, "scale", "flights", "--out", str(tmp_path)), "needs --cluster")
    proc = _main(capsys, "scale", "flights", "--cluster", "local", "--workers", f"1,{cpu_threads() + 1}", "--out", str(tmp_path))
    assert_one_line_error(proc, f"--workers {cpu_threads() + 1}", "cores")
    assert_one_line_error(_main(capsys, "scale", "flights", "--cluster", "local", "--workers", "1,x"), "--workers")
    assert records_in(tmp_path) == []


def test_session_closes_its_workers_when_the_run_fails():
    plan = ClusterPlan("local", workers=2, threads_per_worker=1, worker_kind="cpu")
    with pytest.raises(RuntimeError, match="boom"):
        with ClusterSession(plan, say=lambda _: None) as session:
            pids = [w["pid"] for w in session.info.worker_details]
            assert len(pids) == 2 and all(psutil.pid_exists(p) for p in pids)
            raise RuntimeError("boom")
    assert session.client is None and session.cluster is None

    def alive(pid):
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in pids)


def _listening(pids):
    """``(pid, ip:port)`` of every listening inet socket the processes ``pids`` hold."""
    found = []
    for pid in pids:
        for conn in psutil.Process(pid).net_connections(kind="inet"):
            if conn.status == psutil.CONN_LISTEN:
                found.append((pid, f"{conn.laddr.ip}:{conn.laddr.port}"))
    return found


def test_every_listener_of_a_cluster_accel_starts_is_on_loopback_and_its_scratch_in_the_cache(tmp_path, monkeypatch):
    """Scheduler, dashboard, nannies and workers listen on 127.0.0.1 only; Dask's scratch (its
    lock files, spilled partitions) goes in a folder of accel's cache that is gone after the
    session, nothing in the temporary folder."""
    import os
    import tempfile

    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    plan = ClusterPlan("local", workers=1, threads_per_worker=1, worker_kind="cpu")
    with ClusterSession(plan, say=lambda _: None) as session:
        workers = [w["pid"] for w in session.info.worker_details]
        nannies = [p.pid for p in psutil.Process().children() if p.pid not in workers]
        listeners = _listening([os.getpid(), *workers, *nannies])
        assert listeners, "the scheduler listens somewhere"
        assert [a for _, a in listeners if not a.startswith(("127.0.0.1:", "::1:"))] == [], listeners
        assert list((tmp_path / "cache" / "dask").glob("accel-dask-*"))
    assert list((tmp_path / "tmp").iterdir()) == [], "nothing in the temporary folder"
    assert list((tmp_path / "cache" / "dask").iterdir()) == [], "the workers' scratch is removed"


def test_workers_get_arrows_system_allocator_own_peaks_and_this_process_keeps_its_environment(monkeypatch):
    """The workers accel starts use Arrow's system pool (freed buffers go back to the system, so a
    worker that spilled its partitions falls below Dask's pause threshold again). Dask's Nanny
    writes the workers' pre-spawn environment into this process too; the session puts it back."""
    import os

    from accel.memory import process_peak_rss
    from accel.scaleout.cluster import WORKER_ENVIRON

    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    held = bytearray(600 * 10**6)  # this process's peak, which a spawned worker's ru_maxrss would carry
    held[::4096] = b"x" * len(held[::4096])
    plan = ClusterPlan("local", workers=1, threads_per_worker=1, worker_kind="cpu")
    with ClusterSession(plan, say=lambda _: None) as session:
        assert {w["arrow_memory_pool"] for w in session.info.worker_details} == {"system"}
        assert WORKER_ENVIRON == {"ARROW_DEFAULT_MEMORY_POOL": "system"}
        # A worker's peak RSS is its own (VmHWM), not the spawning process's.
        assert all(50e6 < peak < 500e6 for peak in session.client.run(process_peak_rss).values())
    del held
    assert "ARROW_DEFAULT_MEMORY_POOL" not in os.environ and os.environ["OMP_NUM_THREADS"] == "7"


def test_a_running_clusters_workers_on_arrows_caching_pool_are_named(tmp_path):
    """Workers accel did not start keep their own Arrow pool: one that holds freed pages is said
    (with what to do) when accel attaches."""
    from tests.dask_procs import DaskProcesses

    procs = DaskProcesses(tmp_path / "cluster")
    try:
        procs.start_scheduler()
        procs.start_workers(1, env={"ARROW_DEFAULT_MEMORY_POOL": "mimalloc"})
        said: list[str] = []
        with ClusterSession(ClusterPlan("scheduler", address=procs.address), say=said.append) as session:
            assert [w["arrow_memory_pool"] for w in session.info.worker_details] == ["mimalloc"]
        notices = [line for line in said if "Arrow memory pool is mimalloc" in line]
        assert len(notices) == 1 and "ARROW_DEFAULT_MEMORY_POOL=system" in notices[0]
    finally:
        procs.close()


def test_workflow_file_cluster_section_is_validated_like_the_rest(capsys, tmp_path):
    cfg = tmp_path / "w.yaml"
    cfg.write_text("workflow: flights\nrows: 1000\ncluster:\n  kind: local\n  wokers: 2\n")
    assert_one_line_error(_main(capsys, "run", str(cfg), "--out", str(tmp_path / "runs")), "unknown key 'cluster.wokers'")
    cfg.write_text("workflow: flights\nrows: 1000\ncluster:\n  kind: local\n  workers: 4096\n")
    assert_one_line_error(_main(capsys, "run", str(cfg), "--out", str(tmp_path / "runs")), "--workers 4096")
    assert records_in(tmp_path / "runs") == []


def test_sigint_during_cluster_start_up_is_held_back_then_raised():
    """The mechanism behind Ctrl-C during start-up, deterministically: a SIGINT that arrives
    inside ``_sigint_deferred`` is raised as KeyboardInterrupt when the block ends (after the
    caller has kept what it started), and a process started inside the block has SIGINT blocked
    for good (a terminal's Ctrl-C reaches accel, not each worker)."""
    code = (
        "import os, signal, subprocess, sys\n"
        "from accel.scaleout.cluster import _sigint_deferred\n"
        "kept = []\n"
        "try:\n"
        "    with _sigint_deferred():\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        child = subprocess.run([sys.executable, '-c', "
        "'import signal; print(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))'], "
        "capture_output=True, text=True)\n"
        "        kept.append(child.stdout.strip())\n"
        "        import threading\n"
        "        from multiprocessing import resource_tracker\n"
        "        def spawner():\n"  # as Dask's IO loop thread: it must still block SIGINT after this
        "            resource_tracker.ensure_running()\n"
        "            kept.append(str(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])))\n"
        "        t = threading.Thread(target=spawner); t.start(); t.join()\n"
        "    print('not raised')\n"
        "except KeyboardInterrupt:\n"
        "    print('raised after', kept)\n"
        "print('handler restored', signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, preexec_fn=sigint_default
    )
    assert proc.stdout.splitlines() == ["raised after ['True', 'True']", "handler restored True"], proc.stderr


def test_the_collective_timeout_is_settable_and_checked(monkeypatch):
    from accel.scaleout.cluster_run import COLLECTIVE_TIMEOUT_ENV, COLLECTIVE_TIMEOUT_S, collective_timeout

    monkeypatch.delenv(COLLECTIVE_TIMEOUT_ENV, raising=False)
    assert collective_timeout() == COLLECTIVE_TIMEOUT_S
    monkeypatch.setenv(COLLECTIVE_TIMEOUT_ENV, "30")
    assert collective_timeout() == 30
    for bad in ("0", "-5", "1.5", "soon"):
        monkeypatch.setenv(COLLECTIVE_TIMEOUT_ENV, bad)
        with pytest.raises(AccelError, match=COLLECTIVE_TIMEOUT_ENV):
            collective_timeout()


# --------------------------------------------------------------------------- where each arm goes


def _arms(cluster: dict, device: str = "auto"):
    from contextlib import ExitStack

    from accel.config import build_config
    from accel.scaleout.arms import plan_arms

    config = build_config({"workflow": "flights"}, {"cluster": cluster, "device": device}, "test")
    with ExitStack() as stack:
        return plan_arms(config.cluster, config.device, stack)


def test_local_cluster_is_the_baseline_and_says_where_the_gpu_arm_runs():
    arms = _arms({"kind": "local", "workers": 1, "worker_memory": "600MB"})
    assert arms["gpu"].skip and "--cluster local-cuda runs the GPU arm" in arms["gpu"].skip
    cpu = arms["cpu"]
    assert cpu.placement == "dask" and cpu.plan.kind == "local" and cpu.plan.worker_kind == "cpu"
    assert cpu.plan.workers == 1 and cpu.plan.memory_limit == 600 * 10**6 and cpu.backend.name == "cpu"
    assert _arms({"kind": "local"}, "cpu")["gpu"].skip == "not requested (--device cpu)"


@pytest.mark.skipif(gpu_skip_reason() is None, reason="a GPU is usable here")
def test_local_cuda_without_gpu_skips_the_gpu_arm_and_keeps_its_cpu_baseline():
    arms = _arms({"kind": "local-cuda", "workers": 2, "worker_memory": "1GB"})
    assert arms["gpu"].placement is None and arms["gpu"].skip.startswith("GPU unavailable: ")
    plan = arms["cpu"].plan
    assert plan.kind == "local" and plan.worker_kind == "cpu" and plan.workers == 2
    assert plan.threads_per_worker == max(1, cpu_threads() // 2) and plan.memory_limit == 10**9
    assert not plan.cudf_spill and arms["cpu"].backend.name == "cpu"
    assert _arms({"kind": "local-cuda"}, "cpu")["gpu"].skip == "not requested (--device cpu)"


@pytest.mark.skipif(gpu_skip_reason() is not None, reason=f"needs a usable GPU: {gpu_skip_reason()}")
def test_local_cuda_pairs_one_cpu_worker_per_gpu_worker_on_the_node():
    arms = _arms({"kind": "local-cuda"})
    gpu, cpu = arms["gpu"].plan, arms["cpu"].plan
    assert gpu.kind == "local-cuda" and gpu.worker_kind == "gpu" and gpu.cudf_spill
    assert cpu.kind == "local" and cpu.workers == gpu.workers and cpu.workers * cpu.threads_per_worker <= cpu_threads()
    assert arms["gpu"].backend.is_gpu and not arms["cpu"].backend.is_gpu


def test_baseline_plan_shares_the_nodes_cores_and_refuses_more_workers_than_cores():
    from accel.scaleout.arms import baseline_plan

    plan = baseline_plan(1)
    assert plan.workers == 1 and plan.threads_per_worker == cpu_threads()
    with pytest.raises(AccelError, match="cores"):
        baseline_plan(cpu_threads() + 1)
