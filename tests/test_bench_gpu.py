"""The bodies of test_bench_cpu.py on the GPU arm (cuDF, cuML, XGBoost CUDA), compared with the CPU arm.

Skipped, with the probe's reason, where no GPU is usable; the cuML pairs also skip, saying so,
where cuML is not installed (the GPU check machine may carry cuDF and XGBoost only).
"""

from __future__ import annotations

import pytest

from accel.backend import cpu_backend, gpu_backend
from accel.bench import db as dbbench
from accel.bench.models import PAIRS
from accel.metrics import parity_rule
from tests import bench_bodies as bodies
from tests.conftest import requires_gpu
from tests.gpu_marks import needs_cuml, needs_xgboost_cuda

pytestmark = [pytest.mark.gpu]


@pytest.fixture(scope="module")
def backend():
    return gpu_backend()


@requires_gpu
@pytest.mark.parametrize("fmt,nas", [("parquet", 0), ("csv", 10)])
def test_groupby_answers_equal_the_benchmark_pandas_solution(backend, tmp_path, fmt, nas):
    path = bodies.make_groupby_file(tmp_path, n=6000, k=10, nas=nas, fmt=fmt)
    gpu = bodies.check_groupby_equals_benchmark_solution(backend, path)
    cpu = bodies.run_groupby(cpu_backend(), path)
    for name in dbbench.GROUPBY_QUESTIONS:
        assert dbbench.compare_answers(gpu[name], cpu[name])["agree"], name


@requires_gpu
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_join_answers_equal_a_numpy_reference(backend, tmp_path, fmt):
    bodies.check_join_answers(backend, bodies.make_join_dir(tmp_path, n=5000, fmt=fmt))


@needs_xgboost_cuda
def test_xgboost_trains_on_the_gpu():
    # CuPy arrays and XGBoost-CUDA only: this runs before cuDF is on the machine.
    gpu = gpu_backend(needs=("xgboost_cuda",))
    [g] = bodies.check_model_pairs(gpu, ["xgboost"], rows=20_000, features=16)
    [c] = bodies.check_model_pairs(cpu_backend(), ["xgboost"], rows=20_000, features=16)
    assert g["device_used"].startswith("cuda") and c["device_used"] == "cpu"
    # Same data, same seed, same hist algorithm: the accuracy of the CPU arm within the parity tolerance.
    _, tolerance, _ = parity_rule("binary", "xgboost")
    assert abs(g["quality"] - c["quality"]) <= tolerance, (g["quality"], c["quality"])


@needs_cuml
def test_cuml_pairs_match_the_cpu_quality(backend):
    keys = [k for k in PAIRS if PAIRS[k].needs_cuml]
    gpu = bodies.check_model_pairs(backend, keys)
    cpu = bodies.check_model_pairs(cpu_backend(), keys)
    for key, g, c in zip(keys, gpu, cpu):
        assert g["class"].startswith("cuml."), key
        if PAIRS[key].metric in ("accuracy", "r2", "explained_variance"):
            assert abs(g["quality"] - c["quality"]) < 0.05, (key, g["quality"], c["quality"])
