"""The feature and workflow bodies of test_features_cpu.py, on the GPU arm (cuDF, CuPy, XGBoost CUDA).

Skipped, with the probe's reason, where no GPU is usable.
"""

from __future__ import annotations

import pandas as pd
import pytest

from accel.backend import cpu_backend, gpu_backend
from tests import bodies
from tests.conftest import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.fixture(scope="module")
def backend():
    return gpu_backend()


def test_left_join_keeps_order(backend):
    bodies.check_left_join_keeps_order(backend)


def test_group_stats_fit_on_train_only(backend):
    bodies.check_group_stats_fit_on_train_only(backend)


def test_categories_identical_across_splits(backend):
    bodies.check_categories_identical_across_splits(backend)


def test_finish_features_on_untidy_rows(backend):
    bodies.check_finish_features_on_untidy_rows(backend)


def test_partial_fit_on_untidy_rows(backend):
    bodies.check_partial_fit_on_untidy_rows(backend)


def test_flights_features_equal_the_cpu_arm(backend):
    gpu = bodies.check_flights_features(backend)
    cpu = bodies.check_flights_features(cpu_backend())
    pd.testing.assert_frame_equal(gpu, cpu, check_dtype=False, check_categorical=False, rtol=1e-9)


def test_flights_arm_and_parity(backend):
    gpu = bodies.check_flights_arm(backend)
    cpu = bodies.check_flights_arm(cpu_backend())
    assert abs(gpu.metrics["auc"] - cpu.metrics["auc"]) <= 0.01
    assert gpu.device_name


def test_bad_dates_are_parsed_to_missing_as_on_the_cpu_arm(backend):
    # Date text with junk mixed in (the table bodies of test_dates_*.py, plus impossible dates):
    # on cuDF every value that does not parse is missing, and the rest equal the CPU arm's dates.
    from accel import _compat
    from tests import date_bodies

    frame, truth = date_bodies.layout_frame("%m/%d/%Y", "day", n=200, junk=9)
    extra = pd.Series(["13/45/2021", "02/30/2021", "", "n/a", "2021-03-15", None, "03/15/2021"], dtype=object)
    text = pd.concat([frame["when"], extra], ignore_index=True)
    cpu = pd.Series(_compat.parse_datetime_where(cpu_backend().xdf, text, "%m/%d/%Y")[0]).astype("datetime64[ns]")
    s = backend.xdf.from_pandas(text.astype("str").where(text.notna()))
    gpu = pd.Series(_compat.to_pandas(_compat.parse_datetime_where(backend.xdf, s, "%m/%d/%Y")[0])).astype("datetime64[ns]")
    assert gpu.isna().tolist() == cpu.isna().tolist()
    assert gpu.isna().sum() == 9 + 6, "the junk rows and six of the seven extra values are missing"
    pd.testing.assert_series_equal(gpu.reset_index(drop=True), cpu.reset_index(drop=True), check_names=False)
    pd.testing.assert_series_equal(
        cpu[: len(truth)].reset_index(drop=True), truth.astype("datetime64[ns]").reset_index(drop=True), check_names=False
    )


# Chunked CSV reads, the batch-size probe and external memory on cuDF / XGBoost CUDA: a gzip CSV
# (no byte ranges: pyarrow's streaming reader), a plain one with rows longer than a byte range's
# read-ahead, missing targets in the first rows, integers with gaps.


def test_gzip_csv_chunks_equal_whole_read(backend, tmp_path):
    path = tmp_path / "t.csv.gz"
    bodies.hostile_table(5000).to_csv(path, index=False)
    bodies.check_csv_chunks_equal_whole_read(backend, path, 700, bodies.CHUNK_DTYPES)


def test_byte_range_csv_chunks_equal_whole_read(backend, tmp_path):
    path = tmp_path / "t.csv"
    bodies.long_rows_table().to_csv(path, index=False)
    bodies.check_csv_chunks_equal_whole_read(backend, path, 2000, bodies.CHUNK_DTYPES)


def test_probe_sees_only_rows_with_target(backend, tmp_path, monkeypatch):
    path = tmp_path / "t.csv.gz"
    bodies.hostile_table(3000, missing_target_head=700).to_csv(path, index=False)
    bodies.check_probe_sees_only_rows_with_target(backend, path, "churned", monkeypatch, probe_rows=500)


def test_external_memory_record_says_pages_are_in_host_memory(backend, tmp_path, monkeypatch):
    from tests import tables

    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "c.csv.gz"
    tables.customers(8000, seed=4).to_csv(path, index=False)
    bodies.check_external_memory_record_says_where_pages_are(backend, path, "churned", batch_rows=2100)
