"""The shared table of hostile inputs (``accel_fixtures/hostile_inputs.py``) on the GPU arm.

Every case whose input is a table (its kind one of :data:`accel_fixtures.hostile_inputs.TABLE_KINDS`),
whose command is ``accel run`` and which the CPU arm handles (or whose file changes under the
arms' reads) is run again with ``--device gpu``, by the same driver as the CPU
test (``test_hostile.py::test_shared_case``): it must end in the same verdict, and where it is
handled the GPU arm's part of the record must be scored too, beside the CPU arm. So one GPU run of
this file covers the whole table on cuDF and XGBoost. Skipped with the probe's reason where no
GPU is usable; there the cases' inputs are not even built.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from accel_fixtures import hostile_inputs
from tests.conftest import gpu_skip_reason, requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]


def _table_cases() -> list[hostile_inputs.Case]:
    if gpu_skip_reason() is not None:
        return hostile_inputs.table_cases(None)
    with tempfile.TemporaryDirectory() as scratch:
        return hostile_inputs.table_cases(Path(scratch))


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.slow else []) for c in _table_cases()])
def test_table_case_on_the_gpu_arm(case, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def capture() -> tuple[str, str]:
        got = capsys.readouterr()
        return got.out, got.err

    try:
        _, outcome = hostile_inputs.run_in_process(case, tmp_path, capture, device="gpu")
        verdict, why = hostile_inputs.verdict(case, tmp_path, outcome)
    finally:
        if case.cleanup is not None:
            case.cleanup(tmp_path)
    assert verdict == case.expected, f"{verdict}: {why}\n{outcome.stderr[-2000:]}"
    written = hostile_inputs.records(tmp_path)
    if case.expected == "handled" and written:
        record = json.loads(max(written, key=lambda p: p.stat().st_mtime_ns).read_text())
        assert hostile_inputs.arm_scored(record, "gpu") is None, hostile_inputs.arm_scored(record, "gpu")
        assert hostile_inputs.arm_scored(record, "cpu") is None, hostile_inputs.arm_scored(record, "cpu")
