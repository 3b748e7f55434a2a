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
from tests.gpu_marks import needs_cuml

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
