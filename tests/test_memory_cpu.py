"""Memory techniques on the CPU arm: sizes, budgets and batches, float16 storage, streaming,
out-of-memory backoff. The GPU twins are in test_memory_gpu.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from accel.backend import cpu_backend
from accel.batching import MIN_BATCH_ROWS, BatchPlan, plan_batches, with_backoff
from accel.data.autofeatures import TargetEncoder
from accel.errors import AccelError
from accel.memory import parse_size, setup_rmm_pool
from tests import bodies, tables
from tests.conftest import ROOT, read_json, records_in
from tests.test_table_cpu import assert_error, run_cli


@pytest.fixture(scope="module")
def backend():
    return cpu_backend()


def test_parse_size():
    assert parse_size("512MB", "--x") == 512_000_000
    assert parse_size("1.5GiB", "--x") == 1_610_612_736
    with pytest.raises(AccelError, match="cannot read '12XB' as a size"):
        parse_size("12XB", "--memory-budget")
    with pytest.raises(AccelError, match="must be positive"):
        parse_size("0", "--memory-budget")


def test_rmm_pool_on_the_cpu_arm_is_recorded_as_not_applicable(backend):
    info = setup_rmm_pool(backend, "auto")
    assert info["initial_bytes"] is None and "CPU arm" in info["reason"]
    # Not a pool set up once per process: the CPU arm answers the same every time.
    assert setup_rmm_pool(backend, "1GB") == {**info, "mode": "1GB"} and backend.rmm_pool_configured() is None
    with pytest.raises(RuntimeError, match="GPU arm only"):
        backend.configure_rmm_pool(2**20, 2**20)


def test_rmm_auto_pool_grows_only_when_xgboost_allocates_from_it():
    from accel.memory import RMM_AUTO_INITIAL, RMM_AUTO_MAXIMUM, rmm_auto_sizes

    free = 80 * 2**30 + 777
    initial, maximum, why = rmm_auto_sizes(free, xgboost_through_rmm=True)
    assert initial % 256 == 0 and 0 <= free * RMM_AUTO_INITIAL - initial < 256
    assert maximum % 256 == 0 and 0 <= free * RMM_AUTO_MAXIMUM - maximum < 256 and "growing" in why
    # XGBoost beside the pool (a build without RMM): the pool keeps its initial size, and the
    # rest of the free memory is XGBoost's; the reason says so.
    initial_b, maximum_b, why_b = rmm_auto_sizes(free, xgboost_through_rmm=False)
    assert initial_b == maximum_b == initial and "XGBoost allocates beside the pool" in why_b


def test_gpu_budget_is_planned_from_the_memory_free_before_the_pool():
    from accel.memory import BUDGET_SHARE, device_budget, rmm_auto_sizes

    free_before = 80 * 2**30
    for through_rmm in (True, False):
        initial, maximum, _ = rmm_auto_sizes(free_before, through_rmm)
        budget, source = device_budget(free_before, maximum)
        # The share of what was free before the pool, not of what the driver reports once the
        # pool has reserved its initial size (that would be a quarter of the free memory).
        assert budget == int(free_before * BUDGET_SHARE) and "before the RMM pool" in source
        assert budget > (free_before - initial) * BUDGET_SHARE
        assert budget <= maximum
    # A fixed pool smaller than the share bounds the budget: nothing beyond it can be allocated.
    small = 4 * 2**30
    assert device_budget(free_before, small) == (small, "the RMM pool's maximum size (4.0 GiB)")
    # Without a pool, the share of the free memory.
    assert device_budget(free_before, None)[0] == int(free_before * BUDGET_SHARE)


def test_default_budget_of_the_cpu_arm_ignores_a_pool_record(backend):
    from accel.memory import default_budget

    record = {"free_bytes_before": 10**6, "maximum_bytes": 10**5}
    budget, source = default_budget(backend, record)
    assert budget > 10**6 and "host memory" in source


def test_probe_device_increase_counts_allocations_inside_a_reserved_pool():
    from accel.batching import device_increase

    # A pool reserved before the probe: the device-wide figure does not move, RMM's peak does.
    assert device_increase(40 * 2**30, 40 * 2**30, 5_000_000) == 5_000_000
    # Allocations beside the pool (XGBoost's own, the pool growing) show in the device-wide rise.
    assert device_increase(40 * 2**30, 40 * 2**30 + 8_000_000, 1_000_000) == 8_000_000
    # Without RMM statistics, the device-wide rise alone; no reading at all counts as nothing.
    assert device_increase(100, 400, None) == 300 and device_increase(None, None, None) == 0
    assert device_increase(500, 400, None) == 0  # memory freed during the probe is not negative


def test_plan_batches():
    fits = plan_batches(100_000, 1000.0, 10**9, "test", None)
    assert fits.mode == "in-memory" and fits.rows_per_batch == 100_000 and fits.batches == 1
    small = plan_batches(100_000, 1000.0, 10**7, "test", None)
    assert small.mode == "streaming" and small.rows_per_batch == 8000 and small.batches == 13
    given = plan_batches(100_000, 0.0, 10**9, "test", 30_000)
    assert given.mode == "streaming" and given.batches == 4 and given.source == "given"
    with pytest.raises(AccelError, match="below the minimum for one batch"):
        plan_batches(100_000, 1000.0, 10**5, "test", None)


def test_target_encoder_from_batches_equals_one_pass(backend):
    import pandas as pd

    rng = np.random.default_rng(1)
    n = 10_000
    codes = pd.Series(rng.integers(0, 300, n).astype(float))
    codes[::13] = np.nan
    t = pd.Series(rng.normal(size=n))
    folds = rng.integers(0, 5, n)
    whole = TargetEncoder(pd, ["t"])
    whole.partial_fit(codes, {"t": t}, folds)
    whole.finalize()
    batched = TargetEncoder(pd, ["t"])
    for a in range(0, n, 1700):
        batched.partial_fit(codes[a : a + 1700], {"t": t[a : a + 1700]}, folds[a : a + 1700])
    batched.finalize()
    pd.testing.assert_frame_equal(whole.totals, batched.totals, rtol=1e-12)
    pd.testing.assert_frame_equal(whole.per_fold, batched.per_fold, rtol=1e-12)
    test_codes = pd.Series(rng.integers(0, 320, 500).astype(float))
    for a, b in zip(whole.transform(test_codes).values(), batched.transform(test_codes).values()):
        np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-12)
    for a, b in zip(whole.transform(codes, folds).values(), batched.transform(codes, folds).values()):
        np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-12)


def test_precision_guard(backend):
    bodies.check_precision_guard(backend)


@pytest.mark.parametrize("suffix", ["parquet", pytest.param("csv", marks=pytest.mark.slow)])
def test_streaming_equals_in_memory(backend, tmp_path, suffix):
    df = tables.customers(12_000, seed=4)
    path = tmp_path / f"c.{suffix}"
    df.to_parquet(path, row_group_size=2500) if suffix == "parquet" else df.to_csv(path, index=False)
    bodies.check_streaming_equals_in_memory(backend, path, "churned", batch_rows=2100)


def test_streaming_equals_in_memory_on_numbers_with_words(backend, tmp_path):
    # Columns of numbers with a few words in them, read as text and their words as missing, batch by batch.
    path = tmp_path / "w.csv"
    tables.customers_with_words(9000).to_csv(path, index=False)
    bodies.check_streaming_equals_in_memory(backend, path, "churned", batch_rows=2100)


def test_streaming_equals_in_memory_on_untidy_rows(backend, tmp_path):
    # Batches with no training rows (the first 2,500 rows have no target), integers with gaps, missing and
    # delimiter-laden categories: the streamed run skips, featurises and holds apart as the whole table does.
    path = tmp_path / "h.csv"
    bodies.hostile_table(6000, missing_target_head=2500).to_csv(path, index=False)
    bodies.check_streaming_equals_in_memory(backend, path, "churned", batch_rows=1100)


@pytest.mark.slow  # allocates until NumPy runs out under a lowered address-space limit
def test_backoff_halves_on_a_real_memory_error():
    # A subprocess with a hard address-space limit: the first batch's allocation genuinely fails.
    code = textwrap.dedent(
        """
        import resource, numpy as np
        from accel.backend import cpu_backend
        from accel.batching import BatchPlan, with_backoff
        backend = cpu_backend()  # its libraries (OpenMP's users) mapped before the limit is set
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        used = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (used + 1536 * 2**20, hard))
        plan = BatchPlan(10**9, 'test', 65536.0, 100_000, 65536, 'in-memory', 'given')
        def step(rows):
            block = np.ones((rows, 8192))  # rows x 64 KiB
            return rows, float(block[-1, -1])
        print(with_backoff(step, plan, backend, 'test'), [r['rows'] for r in plan.retries])
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    # 4 GiB and 2 GiB fail against the 1.5 GiB limit, 1 GiB fits.
    assert proc.stdout.strip() == "(16384, 1.0) [65536, 32768]"


def test_backoff_gives_up_below_the_minimum_batch(backend):
    plan = BatchPlan(10**6, "test", 10**6, 100_000, 4 * MIN_BATCH_ROWS, "streaming", "auto")

    def step(rows):
        return np.empty(10**15, dtype=np.uint8)  # a petabyte: a real MemoryError

    with pytest.raises(AccelError, match="out of memory even at .* rows per batch .*budget .*bytes per row"):
        with_backoff(step, plan, backend, "predict")
    assert [r["rows"] for r in plan.retries] == [4 * MIN_BATCH_ROWS, 2 * MIN_BATCH_ROWS]


@pytest.mark.slow  # a flights run in float16 and again in float32: over 30 s on two shared cores
def test_fp16_flights_run_records_bytes_and_metric_delta(tmp_path, capsys):
    cfg = tmp_path / "fp16.yaml"
    cfg.write_text("workflow: flights\nrows: 8000\nprecision: fp16\nbatch_rows: 3000\nxgboost:\n  n_estimators: 60\n")
    code, _, err = run_cli(capsys, "run", str(cfg), "--device", "cpu", "--out", str(tmp_path / "r"))
    assert code == 0, err
    arm = read_json(records_in(tmp_path / "r")[0])["arms"]["cpu"]
    memory = arm["memory"]
    assert memory["batches"]["rows_per_batch"] == 3000 and memory["batches"]["mode"] == "in-memory"
    assert arm["executor"] == "in_memory"
    ratio = memory["feature_bytes"]["stored"] / memory["feature_bytes"]["fp32"]
    assert 0.5 <= ratio < 0.6, memory
    check = memory["precision"]["fp32_check"]
    assert abs(check["delta"]["auc"]) < 0.01


def test_streaming_needs_a_model_that_streams(tmp_path, capsys):
    path = tmp_path / "c.csv"
    tables.customers(3000).to_csv(path, index=False)
    code, _, err = run_cli(
        capsys,
        "run",
        "--data",
        str(path),
        "--target",
        "churned",
        "--model",
        "knn",
        "--batch-rows",
        "1500",
        "--device",
        "cpu",
        "--out",
        str(tmp_path / "r"),
    )
    assert_error(code, err, "--model knn cannot train batch by batch", "--model xgboost")
    assert records_in(tmp_path / "r") == []


@pytest.mark.parametrize(
    "flag,value,needle",
    [
        ("--memory-budget", "12XB", "cannot read '12XB' as a size"),
        ("--batch-rows", "0", "--batch-rows"),
        ("--rmm-pool", "lots", "--rmm-pool: cannot read 'lots'"),
        ("--memory-budget", "1KB", "below the minimum for one batch"),
    ],
)
def test_bad_memory_flags(tmp_path, capsys, flag, value, needle):
    path = tmp_path / "c.csv"
    tables.customers(3000).to_csv(path, index=False)
    code, _, err = run_cli(
        capsys, "run", "--data", str(path), "--target", "churned", flag, value, "--device", "cpu", "--out", str(tmp_path / "r")
    )
    assert_error(code, err, needle)
    assert records_in(tmp_path / "r") == []


@pytest.mark.slow  # XGBoost's matrix built twice, once paged through external memory on disk
def test_external_memory_matrix_equals_in_memory(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "c.csv"
    tables.customers(12_000, seed=4).to_csv(path, index=False)
    bodies.check_external_memory_matrix_equals_in_memory(backend, path, "churned", batch_rows=2100)


def _costs(**kw):
    from accel.batching import StreamingCosts

    base = dict(accel_bytes=2_000_000, page_bytes_per_row=150.0, build_bytes_per_row=400.0, hist_bytes=5_000_000,
                page_node_bytes=1_000_000, row_bytes=80.0, pages_held=3, fixed_bytes=4_000_000)  # fmt: skip
    return StreamingCosts(**{**base, **kw})


def test_plan_streaming_holds_the_matrix_or_puts_it_in_external_memory():
    from accel.batching import plan_streaming

    costs = _costs()
    rows, train = 1_000_000, 800_000
    roomy = plan_streaming(rows, train, 1000.0, costs, 10**9, "test")
    assert roomy.training_matrix == "in-memory"
    tight = plan_streaming(rows, train, 1000.0, costs, 250 * 10**6, "test")
    assert tight.training_matrix == "external"
    for plan in (roomy, tight):
        # every phase's planned peak fits the usable budget, and the next larger batch would not
        assert max(plan.phase_bytes.values()) <= plan.budget_bytes
        assert plan.held_bytes == plan.phase_bytes["boosting"]
        described = plan.describe()
        assert described["training_matrix"] == plan.training_matrix and described["budget_parts"]
        assert all(part["bytes"] >= 0 and part["for"] for part in described["budget_parts"].values())
    bigger = int(tight.rows_per_batch * 1.06) + 1
    phases = costs.phases("external", rows, train, bigger, 1000.0)
    assert max(phases.values()) > tight.budget_bytes
    # the external plan's boosting part: XGBoost's state, histograms, fixed part, pages, accel's arrays
    parts = tight.parts
    assert parts["xgboost_rows"]["bytes"] == train * 80
    assert parts["accel_arrays"]["bytes"] == 2_000_000 and parts["xgboost_histograms"]["bytes"] == 5_000_000
    assert sum(p["bytes"] for p in parts.values()) == pytest.approx(tight.held_bytes, abs=len(parts))


def test_plan_streaming_more_pages_cost_more_while_boosting():
    """Each external-memory page brings its own row-partition buffers: boosting from small pages
    holds more than from large ones, and the planner counts it."""
    costs = _costs()
    small = costs.phases("external", 1_000_000, 800_000, 10_000, 1000.0)
    large = costs.phases("external", 1_000_000, 800_000, 100_000, 1000.0)
    assert small["boosting"] - large["boosting"] > 50 * costs.page_node_bytes
    assert small["passes"] < large["passes"]


def test_plan_streaming_refuses_a_budget_that_cannot_hold_the_run():
    from accel.batching import plan_streaming

    costs = _costs()
    state = 800_000 * 80 + 5_000_000 + 4_000_000 + 2_000_000
    small = int(state * 0.9)  # not even XGBoost's state and accel's arrays fit
    with pytest.raises(AccelError) as info:
        plan_streaming(1_000_000, 800_000, 1000.0, costs, small, "test")
    message = str(info.value)
    assert "cannot hold this run" in message and "\n" not in message
    need = float(message.split("at least ")[1].split(" MB")[0]) * 1e6
    assert need > small
    # what the message says would fit does fit
    assert plan_streaming(1_000_000, 800_000, 1000.0, costs, int(need * 1.001) + 1, "test").training_matrix == "external"
    rows_fit = int(message.rsplit("use --rows ", 1)[1].split(" ")[0].replace(",", ""))
    assert message.endswith(f"raise --memory-budget, or use --rows {rows_fit:,} or fewer")
    scaled = _costs(accel_bytes=int(2_000_000 * rows_fit / 1_000_000))
    assert plan_streaming(rows_fit, int(800_000 * rows_fit / 1_000_000), 1000.0, scaled, small, "test")


def test_streamed_run_counts_its_own_arrays():
    """accel's arrays in a streamed run are counted from their types: the plan's int64 positions,
    4-byte row lists, one-byte folds and the predictions with their labels."""
    import numpy as np

    from accel.workflows.streaming_costs import FOLD_DTYPE, PREDICTION_BYTES, accel_bytes, row_dtype

    class Plan:
        row_positions = np.arange(1000, dtype=np.int64)
        train_pos = np.arange(800, dtype=np.int64)
        test_pos = np.arange(800, 1000, dtype=np.int64)
        rows_in_file = 1200

    assert row_dtype(1200) == np.uint32 and row_dtype(2**32) == np.int64
    expected = 8 * (1000 + 800 + 200) + 4 * 1000 + 800 * np.dtype(FOLD_DTYPE).itemsize + 200 * PREDICTION_BYTES
    assert accel_bytes(Plan()) == expected


def test_columnar_cache_reads_back_what_the_first_pass_parsed(tmp_path, monkeypatch):
    import pandas as pd

    from accel.data.readers import ColumnarCache, iter_chunks, resolve_source

    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    df = tables.customers(5000, seed=2)
    path = tmp_path / "c.csv"
    df.to_csv(path, index=False)
    source = resolve_source(path)
    columns = list(source.columns)
    dtypes = {c: ("str" if df[c].dtype == object or str(df[c].dtype) == "str" else "float64") for c in columns}
    direct = list(iter_chunks(pd, source, columns, 1500, dtypes))
    cache = ColumnarCache(pd, source, columns, dtypes)
    abandoned = cache.chunks(1500)
    next(abandoned)
    abandoned.close()  # a pass given up half-way (an out-of-memory retry) leaves no cache
    assert not cache.complete and not (cache.folder / "chunks.arrow").exists()
    first = list(cache.chunks(1500))
    assert cache.complete and (cache.folder / "chunks.arrow").stat().st_size > 0
    again = list(cache.chunks(1000))  # smaller batches after a retry: slices of the cached ones
    assert [s for s, _ in first] == [s for s, _ in direct]
    assert all(len(f) <= 1000 for _, f in again)
    for got in (first, again):
        whole = pd.concat([f for _, f in got], ignore_index=True)
        pd.testing.assert_frame_equal(whole, pd.concat([f for _, f in direct], ignore_index=True), check_dtype=False)
    folder = cache.folder
    cache.close()
    assert not folder.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="no getrusage on Windows: the monitor samples only")
def test_monitor_catches_a_peak_between_samples():
    """A stage that allocates 300 MB and frees it between two samples: the kernel's peak RSS rose
    in that stage, so the stage's peak has it although no sample saw it. A fresh interpreter, so
    that 300 MB is a new lifetime peak whatever ran before."""
    code = textwrap.dedent(
        """
        import numpy as np
        from accel.backend import cpu_backend
        from accel.memory import MB, MemoryMonitor

        monitor = MemoryMonitor(cpu_backend(), interval=3600)  # the thread never samples
        with monitor:
            monitor.set_stage("quiet")
            monitor.set_stage("spike")
            block = np.ones(300 * MB, dtype=np.uint8)
            del block
            monitor.set_stage("after")
        print(monitor.stage_peak_host["quiet"] // MB, monitor.stage_peak_host["spike"] // MB,
              monitor.stage_peak_host["after"] // MB, monitor.peak_host // MB)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    quiet, spike, after, peak = (int(v) for v in out.split())
    assert spike >= quiet + 290, (quiet, spike)
    assert after < spike - 200 and peak == spike, (after, spike, peak)


def test_monitor_samples_a_settled_stage_less_often(backend):
    from accel.memory import SETTLE_SECONDS, SETTLED_INTERVAL, MemoryMonitor, process_peak_rss

    monitor = MemoryMonitor(backend, interval=0.02)
    monitor.set_stage("train")
    assert monitor._wait_seconds() == 0.02
    monitor._stage_since -= SETTLE_SECONDS
    expected = SETTLED_INTERVAL if process_peak_rss() is not None else 0.02
    assert monitor._wait_seconds() == expected
    monitor.set_stage("predict")  # a new stage is watched closely again
    assert monitor._wait_seconds() == 0.02


def test_flights_batch_plan_probes_only_when_the_bound_does_not_fit(backend):
    """The whole flights table at ROW_BYTES_BOUND per row inside the budget: planned without a
    probe. A budget below that (but above what the table needs) is measured on a probe, and the
    measured size is under the bound it replaces."""
    from accel.batching import BUDGET_USE, SIZE_PROBE_ROWS
    from accel.workflows import FlightsWorkflow, WorkflowSettings
    from accel.workflows.flights import FLIGHTS_ROWS, ROW_BYTES_BOUND

    workflow = FlightsWorkflow(WorkflowSettings())
    roomy = int(FLIGHTS_ROWS * ROW_BYTES_BOUND / BUDGET_USE) + 1
    plan = workflow.plan_batches(backend, roomy, "test", None)
    assert (plan.source, plan.probe_rows, plan.mode, plan.batches) == ("bound", 0, "in-memory", 1)
    assert plan.bytes_per_row == ROW_BYTES_BOUND
    probed = workflow.plan_batches(backend, roomy - 2, "test", None)
    assert (probed.source, probed.probe_rows, probed.mode) == ("auto", SIZE_PROBE_ROWS, "in-memory")
    assert 50 < probed.bytes_per_row < ROW_BYTES_BOUND / 10


@pytest.mark.parametrize(
    ("argv", "env_pool", "expected"),
    [
        (["run", "--memory-budget", "1GB"], None, "system"),  # a budgeted run: freed memory goes back to the system
        (["run"], None, "default"),  # no budget: Arrow's own pool
        (["run", "--memory-budget", "1GB"], "jemalloc", "jemalloc"),  # the user's choice is kept
    ],
)
def test_a_budgeted_run_gives_arrow_the_system_allocator(argv, env_pool, expected, tmp_path):
    """``accel run --memory-budget`` sets Arrow's pool before anything imports pyarrow (pandas
    does), so that what Arrow frees is returned by release_host_memory."""
    import os

    data = tmp_path / "t.csv"
    data.write_text("x,y\n" + "".join(f"{i},{i % 2}\n" for i in range(50)))
    default = subprocess.run([sys.executable, "-c", "import pyarrow; print(pyarrow.default_memory_pool().backend_name)"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    code = textwrap.dedent(
        f"""
        import sys
        import accel.cli.main as cli
        seen = []
        def fake_run_config(config, *a, **k):
            import pyarrow
            seen.append(pyarrow.default_memory_pool().backend_name)
            raise SystemExit(0)
        import accel.api
        accel.api.run_config = fake_run_config
        try:
            cli.main([*{argv!r}, "--data", {str(data)!r}, "--target", "y", "--device", "cpu", "--out", {str(tmp_path / "out")!r}])
        except SystemExit:
            pass
        print(seen[0] if seen else "not reached")
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if env_pool:
        env["ARROW_DEFAULT_MEMORY_POOL"] = env_pool
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert out.stdout.strip() == (default if expected == "default" else expected), out.stderr[-2000:]
