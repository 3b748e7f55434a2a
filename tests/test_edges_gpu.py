"""The checks of ``test_edges_cpu.py`` on the GPU arm: the float16 plan from every row and exact
categorical codes on CuPy, the tables where cuDF and pandas part ways (``None`` as text, Parquet
files that differ in schema, durations, decimal256 and float16) read by cuDF as the CPU arm reads
them and run through every stage, and a GPU-only error while the GPU arm plans its batches
recorded as that arm failed beside a finished CPU arm.

Same bodies (``tests/edge_bodies.py``, ``tests/dask_table_bodies.py``); skipped with the probe's
reason where no GPU is usable (or, for the float16 checks, where CuPy is missing).
"""

from __future__ import annotations

import pytest

from accel.backend import gpu_backend
from tests import edge_bodies
from tests.conftest import requires_gpu
from tests.dask_table_bodies import check_table_reads_as_one_process, write_tables
from tests.gpu_marks import needs_cupy, needs_dask_cudf

pytestmark = [pytest.mark.gpu]

EDGE_TABLES = ["csv-none", "parquet-mixed", "parquet-durations", "parquet-decimal256"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    return write_tables(tmp_path_factory.mktemp("orders"), n=1200)


@needs_cupy
def test_fp16_scale_comes_from_every_row_not_from_the_sample():
    edge_bodies.check_fp16_scale_from_every_row(gpu_backend(needs=("cupy",)))


@needs_cupy
def test_fp16_keeps_categorical_codes_above_2048_in_float32():
    edge_bodies.check_fp16_keeps_codes_above_the_exact_range_wide(gpu_backend(needs=("cupy",)))


@requires_gpu
@pytest.mark.parametrize("source", EDGE_TABLES)
def test_gpu_arm_reads_the_edge_tables_as_the_cpu_arm_and_runs_them(tables, source):
    edge_bodies.check_arm_reads_the_table_as_the_cpu_arm(gpu_backend(), tables[source], "returned")


@requires_gpu
@needs_dask_cudf
@pytest.mark.parametrize("source", [*EDGE_TABLES, "parquet", "csv"])
def test_dask_cudf_read_of_a_table_equals_the_single_process_gpu_read(tables, source):
    check_table_reads_as_one_process("gpu", tables[source], "basket")


@requires_gpu
def test_an_error_while_the_gpu_arm_plans_its_batches_fails_that_arm_beside_the_cpu_arm(tmp_path, monkeypatch, capsys):
    record = edge_bodies.check_batch_plan_error_fails_only_that_arm(tmp_path, monkeypatch, capsys, "gpu", "gpu")
    assert record["arms"]["cpu"]["status"] == "ok" and record["arms"]["cpu"]["metrics"]
