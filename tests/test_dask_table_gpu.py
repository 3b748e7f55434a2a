"""The Dask checks of a user's table (``test_dask_table.py``) on a ``LocalCUDACluster``: Dask-cuDF
partitions read by the workers, the target encoders fitted across them, XGBoost on CUDA.

Same bodies (``tests/dask_table_bodies.py``), GPU workers, compared with the single-process GPU
arm, on the shared tables and on the data where cuDF and pandas part ways (``None`` as text,
Parquet files that differ in schema, durations, decimal256 and float16, a multiclass target):
skipped with the probe's reason where no GPU is usable, or where Dask-cuDF or Dask-CUDA is not
installed.
"""

from __future__ import annotations

import pytest

from accel.config import ClusterConfig
from accel.scaleout.cluster import ClusterSession, plan_cluster
from tests.conftest import requires_gpu
from tests.dask_table_bodies import (
    check_table_features_match_single_process,
    check_table_reads_as_one_process,
    check_table_run_agrees_with_single_process,
    write_tables,
)
from tests.gpu_marks import needs_dask_cuda, needs_dask_cudf

pytestmark = [pytest.mark.gpu, requires_gpu, needs_dask_cuda, needs_dask_cudf]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    return write_tables(tmp_path_factory.mktemp("orders"))


@pytest.fixture(scope="module")
def session():
    plan = plan_cluster(ClusterConfig(kind="local-cuda", workers=1))
    with ClusterSession(plan, say=lambda _: None) as s:
        yield s


@pytest.mark.parametrize(
    ("source", "target", "rows", "min_partitions"),
    [
        ("parquet", "returned", None, 1),
        ("csv", "returned", 3000, 2),
        ("csv", "basket", None, 2),
        ("csv-gaps", "returned", None, 2),  # a partition with no plan row: an empty gather on cuDF
    ],
)
def test_table_features_on_cudf_partitions_equal_the_single_process_gpu_features(
    session, tables, source, target, rows, min_partitions
):
    check_table_features_match_single_process(session, "gpu", tables[source], target, rows=rows, min_partitions=min_partitions)


@pytest.mark.parametrize(("source", "target"), [("parquet", "returned"), ("csv", "basket")])
def test_table_run_on_the_cuda_cluster_agrees_with_single_process_gpu_run(session, tables, source, target):
    check_table_run_agrees_with_single_process(session, "gpu", tables[source], target)


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("csv-none", "returned"), ("parquet-mixed", "basket"), ("parquet-durations", "returned"),
        ("parquet-decimal256", "basket"), ("csv-words", "returned"),
    ],
)  # fmt: skip
def test_edge_tables_on_cudf_partitions_equal_the_single_process_gpu_features(session, tables, source, target):
    """``None`` as text, Parquet files that differ in schema, durations, decimal256 and float16, words among numbers."""
    check_table_features_match_single_process(session, "gpu", tables[source], target, min_partitions=1)


@pytest.mark.parametrize("source", ["csv-none", "parquet-mixed", "parquet-durations", "parquet-decimal256"])
def test_the_dask_cudf_read_equals_the_single_process_gpu_read(tables, source):
    check_table_reads_as_one_process("gpu", tables[source], "basket")


def test_a_multiclass_table_on_the_cuda_cluster_agrees_with_the_single_process_gpu_run(session, tables):
    """``channel`` (four classes): xgboost.dask's prediction is a frame of cuDF partitions, one
    column per class, taken to the host by ``_compat.to_numpy``."""
    check_table_run_agrees_with_single_process(session, "gpu", tables["csv"], "channel")
