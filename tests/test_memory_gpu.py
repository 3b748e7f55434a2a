"""The memory techniques of test_memory_cpu.py on the GPU arm: RMM pool, float16 CuPy storage,
streaming from cuDF, and a real out-of-memory from a small RMM limit.

Each test needs only the libraries it uses: float16 storage needs CuPy, the pool and the
out-of-memory back-off CuPy and RMM (they run before cuDF is carried to the GPU machine);
streaming and the pool refusal of ``accel run`` need the whole GPU arm. Skipped, naming what is
missing, elsewhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from accel.backend import gpu_backend
from tests import bodies, tables
from tests.conftest import ROOT, records_in, requires_gpu, run_accel
from tests.gpu_marks import needs_cupy, needs_rmm, needs_xgboost_cuda

pytestmark = [pytest.mark.gpu]


@pytest.fixture(scope="module")
def backend():
    return gpu_backend()


@needs_cupy
def test_precision_guard():
    # CuPy storage of a pandas frame where cuDF is missing, of a cuDF frame where it is there.
    bodies.check_precision_guard(gpu_backend(needs=("cupy",)))


@requires_gpu
def test_streaming_equals_in_memory(backend, tmp_path):
    path = tmp_path / "c.parquet"
    tables.customers(12_000, seed=4).to_parquet(path, row_group_size=2500)
    bodies.check_streaming_equals_in_memory(backend, path, "churned", batch_rows=2100)


@requires_gpu
def test_external_memory_matrix_equals_in_memory(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "c.parquet"
    tables.customers(12_000, seed=4).to_parquet(path, row_group_size=2500)
    bodies.check_external_memory_matrix_equals_in_memory(backend, path, "churned", batch_rows=2100)


@requires_gpu
def test_streaming_equals_in_memory_on_numbers_with_words(backend, tmp_path):
    # Columns of numbers with a few words in them, read as text and their words as missing, batch by batch.
    path = tmp_path / "w.csv"
    tables.customers_with_words(9000).to_csv(path, index=False)
    bodies.check_streaming_equals_in_memory(backend, path, "churned", batch_rows=2100)


@requires_gpu
def test_streaming_equals_in_memory_on_untidy_rows(backend, tmp_path):
    path = tmp_path / "h.csv"
    bodies.hostile_table(6000, missing_target_head=2500).to_csv(path, index=False)
    bodies.check_streaming_equals_in_memory(backend, path, "churned", batch_rows=1100)


def _in_subprocess(code: str) -> str:
    # RMM's device resource is per process: pools and limits are tried in a fresh one.
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


@needs_rmm
def test_rmm_pool_serves_cupy_and_counts_peak():
    out = _in_subprocess(
        """
        from accel.backend import gpu_backend
        from accel.memory import setup_rmm_pool
        b = gpu_backend(needs=("rmm",))
        info = setup_rmm_pool(b, "auto")
        x = b.xp.ones(50_000_000, dtype=b.xp.float32)  # 200 MB through the pool
        stats = b.rmm_statistics()
        print(info["initial_bytes"] > 0, stats["peak_bytes"] >= 200_000_000)
        """
    )
    assert out == "True True"


@needs_rmm
def test_budget_and_probe_are_planned_from_the_pool_not_from_the_driver():
    out = _in_subprocess(
        """
        import json
        from accel.backend import gpu_backend
        from accel.batching import measure_bytes_per_row
        from accel.memory import BUDGET_SHARE, default_budget, setup_rmm_pool
        b = gpu_backend(needs=("rmm",))
        info = setup_rmm_pool(b, "auto")
        planned, _ = default_budget(b, info)
        from_driver = int((b.device_memory() or (0, 0))[0] * BUDGET_SHARE)  # the reserved pool counts as used
        rows = 1_000_000
        per_row = measure_bytes_per_row(b, lambda: b.xp.ones((rows, 50), dtype=b.xp.float32).sum(axis=1), rows)
        print(json.dumps([planned == int(info["free_bytes_before"] * BUDGET_SHARE), planned > from_driver * 1.5,
                          per_row >= 200, b.rmm_pool_bytes() >= info["initial_bytes"]]))
        """
    )
    # The probe's 200 MB (200 bytes per row) come from the reserved pool: only RMM's peak sees them.
    assert out == "[true, true, true, true]"


@needs_rmm
@needs_xgboost_cuda
def test_rmm_pool_set_up_once_and_record_says_where_xgboost_allocates():
    out = _in_subprocess(
        """
        import json, xgboost
        from accel.backend import gpu_backend
        from accel.errors import AccelError
        from accel.memory import setup_rmm_pool
        b = gpu_backend(needs=("rmm", "xgboost_cuda"))
        first = setup_rmm_pool(b, "auto")
        again = setup_rmm_pool(b, "auto")  # no second rmm.reinitialize: the first pool is kept
        try:
            setup_rmm_pool(b, "1GB")
            refused = False
        except AccelError as exc:
            refused = "once per process" in str(exc)
        try:
            b.configure_rmm_pool(2**30, 2**30)
            raised = False
        except RuntimeError:
            raised = True
        same = b.configure_rmm_pool(first["initial_bytes"], first["maximum_bytes"])
        uses_rmm = bool(xgboost.build_info()["USE_RMM"])
        print(json.dumps([again == {**first, "reused": True}, refused, raised, same is False,
                          first["xgboost_through_rmm"] == uses_rmm, xgboost.get_config()["use_rmm"] == uses_rmm,
                          (first["maximum_bytes"] > first["initial_bytes"]) == uses_rmm]))
        """
    )
    assert out == "[true, true, true, true, true, true, true]"


@needs_rmm
def test_backoff_on_a_real_device_out_of_memory():
    out = _in_subprocess(
        """
        import rmm
        from rmm.allocators.cupy import rmm_cupy_allocator
        from accel.backend import gpu_backend
        from accel.batching import BatchPlan, with_backoff
        b = gpu_backend(needs=("rmm",))
        # RMM's allocations capped (a real out-of-memory), CuPy's through RMM.
        upstream = rmm.mr.get_current_device_resource()
        rmm.mr.set_current_device_resource(rmm.mr.LimitingResourceAdaptor(upstream, 1536 * 2**20))
        b.xp.cuda.set_allocator(rmm_cupy_allocator)
        plan = BatchPlan(1536 * 2**20, 'test', 65536.0, 100_000, 65536, 'in-memory', 'given')
        def step(rows):
            block = b.xp.ones((rows, 8192))  # rows x 64 KiB on the device
            return rows
        print(with_backoff(step, plan, b, 'test'), [r['rows'] for r in plan.retries])
        """
    )
    assert out == "16384 [65536, 32768]"


@requires_gpu
def test_rmm_pool_larger_than_the_device(tmp_path):
    from accel.backend import probe_gpu

    device = probe_gpu().devices[0]
    proc = run_accel("run", "flights", "--rows", "2000", "--rmm-pool", "100TB", "--out", str(tmp_path / "gpu"))
    assert proc.returncode == 2, proc.stderr
    # Refused before either arm ran, naming this device and its size as the driver reports them.
    assert f"larger than the device ({device.memory_total_bytes / 1024**3:.1f} GiB on {device.name})" in proc.stderr
    assert records_in(tmp_path / "gpu") == []
    # The CPU arm has no device pool: the same flag runs there and the record says the pool does not apply.
    proc = run_accel("run", "flights", "--rows", "2000", "--rmm-pool", "100TB", "--device", "cpu", "--out", str(tmp_path / "cpu"))
    assert proc.returncode == 0, proc.stderr
    [path] = records_in(tmp_path / "cpu")
    record = json.loads(path.read_text())
    assert record["arms"]["cpu"]["memory"]["rmm"]["reason"] == "CPU arm: no device memory pool"


@requires_gpu
def test_streamed_run_stays_within_its_planned_device_bytes(tmp_path):
    """A streamed GPU run under a device budget its table does not fit: the plan counts what
    boosting holds part by part, XGBoost's external-memory pages are in host memory
    (``DataIter(on_host=True)``, recorded), and the device's peak while boosting, above what was
    in use before the run, stays within 1.2 x the budget. Without an RMM pool (``--rmm-pool off``),
    so that the driver's memory in use is what cuDF and XGBoost allocate (a pool's reserve counts
    as used)."""
    out = _in_subprocess(
        f"""
        import json, os
        os.environ["ACCEL_CACHE_DIR"] = {str(tmp_path / "cache")!r}
        from accel.backend import gpu_backend
        from accel.errors import AccelError
        from accel.memory import MemorySettings
        from accel.runner import run_arm
        from accel.workflows import WorkflowSettings
        from accel.workflows.table import TableWorkflow, plan_table, probe_encodings
        from tests import tables
        path = {str(tmp_path / "c.parquet")!r}
        tables.customers(200_000, seed=4).to_parquet(path, row_group_size=25_000)
        b = gpu_backend()
        b.xp.zeros(1)  # the CUDA context exists before the baseline is read
        settings = WorkflowSettings(seed=3)
        planned = plan_table(path, "churned", None, [], settings, family="native")
        probe_encodings(planned, 3)
        flow = TableWorkflow(settings, planned, "xgboost", {{"n_estimators": 20}})
        whole = flow.plan_batches(b, 10**12, "test", None)
        budget = int(whole.bytes_per_row * whole.rows_total * 0.5)  # the table does not fit: streamed
        try:
            flow.plan_batches(b, budget, "test", None)
        except AccelError as exc:  # then the least budget the refusal names
            budget = int(float(str(exc).split("at least ")[1].split(" MB")[0]) * 1e6 * 1.05)
        before = b.device_memory_in_use()
        result = run_arm(b, flow, memory=MemorySettings(rmm_pool="off", memory_budget=str(budget)))
        batches = result.memory["batches"]
        grown = result.stage_peak_device_mb["train"] * 2**20 - before
        external = batches["training_matrix"] == "external"
        print(json.dumps([result.status == "ok", batches["mode"] == "streaming", bool(batches["budget_parts"]),
                          (not external) or batches["external_memory"]["on_host"] is True, grown <= 1.2 * budget]))
        """
    )
    assert out == "[true, true, true, true, true]"
