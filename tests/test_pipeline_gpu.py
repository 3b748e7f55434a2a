"""The fitted pipeline on the GPU arm (cuDF, CuPy, cuML, XGBoost on CUDA): the bodies of
test_pipeline.py, and each arm's pipeline scoring on the other device.

Skipped, with the probe's reason, where no GPU is usable. The GPU arm's round trip allows 1e-5 on
probabilities: scoring re-reads and re-featurises on cuDF, whose float reductions and joins may
order additions differently from the run's own pass over the same rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from accel.metrics import parity_rule
from tests import pipeline_bodies as bodies
from tests.conftest import requires_gpu
from tests.gpu_marks import needs_cuml, needs_dask_cuda

pytestmark = [pytest.mark.gpu, requires_gpu]


#: cuML's models need cuML (the core GPU track has none); XGBoost's need only cuDF and XGBoost on CUDA.
CASES = [pytest.param(t, m, marks=[] if m == "xgboost" else [needs_cuml]) for t, m in bodies.CASES]


@pytest.mark.parametrize(("table", "model"), CASES)
def test_every_model_round_trips_on_the_gpu(tmp_path, table, model):
    record, data = bodies.run_table(tmp_path, table, model, "gpu")
    pipeline = bodies.check_round_trip(record, data, "gpu", "gpu", atol=1e-5)
    bodies.check_api(pipeline, data)


@pytest.mark.parametrize(("table", "model"), CASES)
def test_each_arms_pipeline_scores_on_the_other_device(tmp_path, table, model):
    """The GPU arm's pipeline on the CPU and the CPU arm's on the GPU give the run's hold-out
    predictions within the model's parity tolerance."""
    record, data = bodies.run_table(tmp_path, table, model, "gpu")
    metric, tolerance, _ = parity_rule(bodies.TASKS[table], model)
    for arm, device in (("gpu", "cpu"), ("cpu", "gpu")):
        import accel

        pipeline = accel.load(record, device=device, arm=arm)
        scored = pipeline.score(bodies.source_rows(data, pipeline.holdout["row"].to_numpy()))
        kept = bodies.holdout_output(pipeline.holdout)
        scale = np.abs(kept).max() if table == "houses" else 1.0
        assert np.abs(scored - kept).max() <= max(tolerance, 1e-5) * scale, (arm, device, metric)


def test_unseen_and_missing_categories_on_the_gpu(tmp_path):
    """cuDF's categorical cast in scoring's check: unseen values counted, missing ones not."""
    record, data = bodies.run_table(tmp_path, "customers", "xgboost", "gpu")
    bodies.check_unseen_categories_are_counted(record, data, "gpu")


def test_scoring_on_the_gpu_beside_the_cpu_baseline(tmp_path):
    import math

    import accel

    record, data = bodies.run_table(tmp_path, "customers", "xgboost", "gpu")
    result = accel.predict(record, data=data, out=tmp_path / "p.parquet", records=tmp_path, device="gpu", baseline=True)
    arms = result.record["arms"]
    assert arms["gpu"]["status"] == "ok" and arms["cpu"]["status"] == "ok" and result.record["output"]["arm"] == "gpu"
    assert arms["gpu"]["device_used"].startswith("cuda") and math.isfinite(result.record["speedup"]["total"])
    cpu = accel.predict(record, data=data, out=tmp_path / "c.parquet", records=tmp_path, device="cpu")
    np.testing.assert_allclose(result.predictions["proba_yes"], cpu.predictions["proba_yes"], rtol=0, atol=1e-5)


@needs_dask_cuda
def test_dask_cuda_scoring_equals_single_process_gpu_scoring(tmp_path):
    import pandas as pd

    import accel

    record, data = bodies.run_table(tmp_path, "customers", "xgboost", "gpu")
    folder = tmp_path / "parts"
    folder.mkdir()
    frame = pd.read_csv(data)
    for i, start in enumerate(range(0, len(frame), 250)):
        frame.iloc[start : start + 250].to_parquet(folder / f"part-{i}.parquet", index=False)
    one = accel.predict(record, data=folder, out=tmp_path / "one.parquet", records=tmp_path, device="gpu")
    dask = accel.predict(record, data=folder, out=tmp_path / "dask.parquet", records=tmp_path, device="gpu", cluster="local-cuda")
    assert dask.record["arms"]["gpu"]["executor"] == "dask"
    np.testing.assert_allclose(one.predictions["proba_yes"], dask.predictions["proba_yes"], rtol=0, atol=1e-6)


def test_numbers_with_words_are_scored_on_the_gpu(tmp_path):
    """cuDF's string match and cast of a column of numbers with words, in the run and in scoring."""
    bodies.check_numbers_with_words_are_scored(tmp_path, "gpu", atol=1e-5)
