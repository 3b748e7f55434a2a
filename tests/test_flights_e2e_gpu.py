"""``accel run flights`` end to end on the GPU arm, through the real command line (the record
checks of test_flights_e2e.py on both arms).

Skipped, with the probe's reason, where no GPU is usable.
"""

from __future__ import annotations

import math

import pytest

from accel.timing import STAGES
from tests.conftest import read_json, records_in, requires_gpu, run_accel
from tests.test_flights_e2e import FAST_WORKFLOW, check_arm_of_record

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.fixture(scope="module")
def fast_workflow(tmp_path_factory):
    path = tmp_path_factory.mktemp("wf") / "fast.yaml"
    path.write_text(FAST_WORKFLOW)
    return path


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_run_flights_on_the_gpu_end_to_end(tmp_path, fast_workflow, precision):
    """The main job on a GPU machine, through the real command line: the planes join leaves
    int64 columns with nulls on cuDF, the batch plan probes, both arms run, their AUCs agree."""
    proc = run_accel("run", str(fast_workflow), "--device", "gpu", "--precision", precision, "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    [path] = records_in(tmp_path)
    r = read_json(path)
    gpu, cpu = check_arm_of_record(r, "gpu"), check_arm_of_record(r, "cpu")
    assert gpu["peak_device_mb"] is not None and gpu["peak_device_mb"] > 0
    assert r["parity"]["ok"] is True, r["parity"]
    assert all(math.isfinite(r["speedup"][stage]) for stage in STAGES)
    assert abs(gpu["metrics"]["auc"] - cpu["metrics"]["auc"]) <= r["parity"]["tolerance"]
