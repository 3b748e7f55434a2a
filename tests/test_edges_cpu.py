"""Where cuDF and pandas part ways, checked on the CPU: the float16 plan from every row, categorical
codes kept exact, tables read alike, an arm failing while it plans its batches; and contracts at
the ``_compat`` boundary, where a stand-in of cuDF (``tests/cudf_contract.py``) records what each
cuDF call would receive and answers as libcudf would.

The shared bodies (``tests/edge_bodies.py``, ``tests/dask_table_bodies.py``) run on the GPU arm in
``test_edges_gpu.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from accel import _compat
from accel.backend import cpu_backend
from accel.data.readers import iter_chunks, read_source
from accel.workflows.base import WorkflowSettings
from accel.workflows.table import TableWorkflow, plan_table, probe_encodings
from accel.workflows.table_dask import DaskTable
from tests import edge_bodies
from tests.cudf_contract import CudfFrameStandIn, CudfStandIn, LibcudfRefusal
from tests.dask_table_bodies import check_table_reads_as_one_process, write_tables

EDGE_TABLES = ["csv-none", "parquet-mixed", "parquet-durations", "parquet-decimal256"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    return write_tables(tmp_path_factory.mktemp("orders"), n=1200)


def planned(path, target: str = "returned"):
    planned = plan_table(str(path), target, None, [], WorkflowSettings(seed=3), family="native")
    probe_encodings(planned, 3, "off")
    return planned


# --------------------------------------------------------------------------- the shared bodies on the CPU arm


def test_fp16_scale_comes_from_every_row_not_from_the_sample():
    edge_bodies.check_fp16_scale_from_every_row(cpu_backend())


def test_fp16_keeps_categorical_codes_above_2048_in_float32():
    edge_bodies.check_fp16_keeps_codes_above_the_exact_range_wide(cpu_backend())


@pytest.mark.parametrize("source", EDGE_TABLES)
def test_cpu_arm_reads_and_runs_the_edge_tables(tables, source):
    edge_bodies.check_arm_reads_the_table_as_the_cpu_arm(cpu_backend(), tables[source], "returned")


@pytest.mark.parametrize("source", [*EDGE_TABLES, "parquet", "csv"])
def test_dask_read_of_a_table_equals_one_process_read(tables, source):
    check_table_reads_as_one_process("cpu", tables[source], "basket")


def test_an_error_while_the_cpu_arm_plans_its_batches_fails_that_arm_with_a_record(tmp_path, monkeypatch, capsys):
    record = edge_bodies.check_batch_plan_error_fails_only_that_arm(tmp_path, monkeypatch, capsys, "cpu", "cpu")
    assert record["arms"]["gpu"]["status"] == "skipped"


# --------------------------------------------------------------------------- contracts at the _compat boundary


def test_in_memory_csv_read_on_cudf_gets_the_plans_types_and_pandas_missing_strings(tables):
    """The whole-table read (``TableWorkflow.load``) gives cuDF the plan's column types and pandas'
    missing-value strings, so that ``None`` is missing on both arms, as the streamed and Dask
    reads already had it."""
    plan = planned(tables["csv-none"])
    flow = TableWorkflow(WorkflowSettings(seed=3), plan, "xgboost", {})
    cudf = CudfStandIn()
    got = flow.load(SimpleNamespace(xdf=cudf))
    [(_, kwargs)] = cudf.reads("read_csv")
    assert kwargs["dtype"] == plan.plan.csv_dtypes() and kwargs["usecols"] == plan.plan.read_columns
    assert "None" in kwargs["na_values"]
    cpu = flow.load(cpu_backend())
    pd.testing.assert_frame_equal(got, cpu, check_dtype=False)
    assert got["channel"].isna().sum() > 0 and not (got["channel"] == "None").any()
    # What libcudf's own list gives (no "None"): a text category the CPU arm does not have.
    bare = cudf.read_csv(str(tables["csv-none"]), usecols=["channel"], dtype={"channel": "str"})
    assert (bare["channel"] == "None").any()


def test_streamed_csv_chunks_on_cudf_get_the_plans_types_and_missing_strings(tables):
    plan = planned(tables["csv-none"]).plan
    cudf = CudfStandIn()
    source = planned(tables["csv-none"]).source
    for _ in iter_chunks(cudf, source, plan.read_columns, 500, plan.csv_dtypes()):
        pass
    reads = cudf.reads("read_csv")
    assert reads, "no chunk was read"
    for _, kwargs in reads:
        assert kwargs["dtype"] == {c: t for c, t in plan.csv_dtypes().items() if c in plan.read_columns}
        assert "None" in kwargs["na_values"]


def test_dask_csv_read_for_cudf_workers_gets_the_plans_types_and_missing_strings(tables, monkeypatch):
    import dask.dataframe as dd

    plan = planned(tables["csv-none"])
    seen: dict = {}
    monkeypatch.setattr(dd, "read_csv", lambda path, **kwargs: seen.update(kwargs) or "read")
    table = DaskTable(plan, WorkflowSettings(seed=3), "gpu", SimpleNamespace(xdf=CudfStandIn()), slots=1)
    assert table.read() == "read"
    assert seen["dtype"] == plan.plan.csv_dtypes() and "None" in seen["na_values"]


@pytest.mark.parametrize(("source", "one_call"), [("parquet", True), ("parquet-mixed", False)])
def test_parquet_files_go_to_cudf_in_one_read_only_when_they_share_a_schema(tables, source, one_call):
    plan = planned(tables[source])
    paths = [str(p) for p in plan.source.paths]
    cudf = CudfStandIn()
    got = read_source(cudf, plan.source, plan.plan.read_columns)
    reads = [files for files, _ in cudf.reads("read_parquet")]
    assert reads == ([paths] if one_call else [[p] for p in paths])
    cpu = read_source(pd, plan.source, plan.plan.read_columns)
    pd.testing.assert_frame_equal(got, cpu, check_dtype=False)
    if not one_call:  # the stand-in refuses, as libcudf does, what one call of every file would be
        with pytest.raises(LibcudfRefusal, match="same schema"):
            cudf.read_parquet(paths, columns=plan.plan.read_columns)


def test_columns_cudf_has_no_type_for_are_read_on_the_host(tables):
    """decimal256 and float16 never reach cuDF's reader, in a whole read or in chunks; they
    arrive as float64 with the CPU arm's values."""
    plan = planned(tables["parquet-decimal256"])
    cudf = CudfStandIn()
    got = read_source(cudf, plan.source, plan.plan.read_columns)
    chunks = pd.concat([frame for _, frame in iter_chunks(cudf, plan.source, plan.plan.read_columns, 200, {})], ignore_index=True)
    reads = cudf.reads("read_parquet")
    assert reads and all(not {"price", "items"} & set(kwargs["columns"]) for _, kwargs in reads)
    cpu = read_source(pd, plan.source, plan.plan.read_columns)
    for frame in (got, chunks[list(got.columns)]):
        assert frame["price"].dtype == np.float64 and frame["items"].dtype == np.float64
        pd.testing.assert_frame_equal(frame, cpu, check_dtype=False)


def test_to_numpy_takes_a_cudf_frame_of_class_probabilities():
    """A multiclass ``xgboost.dask.inplace_predict`` gives a frame of cuDF partitions: one row per
    test row, one column per class; ``to_numpy`` asks cuDF for NaN where a value is missing."""
    probabilities = pd.DataFrame(np.random.default_rng(0).dirichlet([1, 1, 1, 1], 50).astype(np.float32))
    frame = CudfFrameStandIn(probabilities)
    got = _compat.to_numpy(frame)
    assert got.shape == (50, 4)
    [kwargs] = frame.to_numpy_calls
    assert np.isnan(kwargs["na_value"])
    np.testing.assert_array_equal(got, probabilities.to_numpy())


# --------------------------------------------------------------------------- device memory pools


def test_the_automatic_pool_grows_for_cuml_models_and_not_beside_xgboost():
    """cuML allocates every buffer from the RMM pool: its automatic pool grows to 90% of the free
    memory. XGBoost without RMM (the PyPI wheels) allocates beside the pool, which stays at 50%."""
    from accel.memory import RMM_AUTO_INITIAL, RMM_AUTO_MAXIMUM, rmm_auto_sizes
    from accel.registry import MODELS
    from accel.scaleout.cluster import cluster_pool_sizes

    free = 80 * 2**30
    grown, beside = int(free * RMM_AUTO_MAXIMUM) // 256 * 256, int(free * RMM_AUTO_INITIAL) // 256 * 256
    for name, spec in MODELS.items():
        initial, maximum, why = rmm_auto_sizes(free, xgboost_through_rmm=False, model=name)
        assert initial == beside
        assert maximum == (grown if spec.needs_cuml else beside), (name, why)
        assert ("cuML" in why) is spec.needs_cuml
    assert rmm_auto_sizes(free, False)[1] == beside and rmm_auto_sizes(free, True, "xgboost")[1] == grown
    assert cluster_pool_sizes("auto", [free], False, model="random_forest")[1] == grown


def test_a_search_beside_a_local_cuda_cluster_takes_no_pool_of_its_own():
    from accel.config import RunConfig
    from accel.hpo.search import search_memory

    config = RunConfig(workflow="flights")
    memory, why = search_memory(config, "local-cuda")
    assert memory.rmm_pool == "off" and "local-cuda worker" in why
    assert search_memory(config, "local") == (config.memory_settings(), None)
    assert search_memory(config, None) == (config.memory_settings(), None)
    given = RunConfig(workflow="flights", rmm_pool="2GB")
    assert search_memory(given, "local-cuda") == (given.memory_settings(), None)  # a size asked for is kept


def test_the_cpu_arm_has_no_rmm_resource_to_keep():
    from accel.memory import setup_rmm_pool

    backend = cpu_backend()
    assert backend.rmm_resource_set_elsewhere() is None
    assert setup_rmm_pool(backend, "auto", "random_forest")["reason"] == "CPU arm: no device memory pool"


# --------------------------------------------------------------------------- accel compare's device peak


class _Nvml:
    """NVML as accel compare reads it: one device, the compute processes it lists (pid, bytes)."""

    def __init__(self, processes: list[tuple[int, int]]):
        self.processes = processes

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list:
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in self.processes]

    def nvmlShutdown(self) -> None:
        pass


def _foreign_pid() -> int:
    import psutil

    pid = 4_000_000
    while psutil.pid_exists(pid):
        pid += 1
    return pid


@pytest.mark.parametrize(
    ("listed", "peak"),
    [
        ("own", 3 << 20),  # NVML lists the script: its bytes
        ("foreign", None),  # only ids that do not exist here (a PID namespace): unknown, not 0
        ("none", 0),  # NVML lists nothing: the script held no device memory
    ],
)
def test_compare_device_peak_is_unknown_where_nvml_ids_are_another_namespaces(listed, peak):
    import subprocess
    import sys

    from accel.bench.compare import _Tree

    script = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        tree = _Tree(script.pid, device=False)
        processes = {"own": [(script.pid, 3 << 20)], "foreign": [(_foreign_pid(), 5 << 20)], "none": []}[listed]
        tree._nvml, tree.peak_device = _Nvml(processes), 0  # as after nvmlInit on a GPU machine
        tree.sample()
        tree.close()
    finally:
        script.kill()
        script.wait()
    assert tree.peak_device == peak
