"""The one pairing: two arms, whichever executors ran them, become the record's comparison.

:func:`pair` is where the speedup per stage (CPU seconds / accelerated seconds) and the parity
of the two arms' metrics are computed, and nowhere else: a run in one process or on Dask
(:func:`accel.runner.run_record`), and scoring with a baseline (:mod:`accel.scoring`). An arm
that did not run gives NaN speedups and no parity verdict, never an invented number.
"""

from __future__ import annotations

import math
from typing import Any

from accel.metrics import parity_rule
from accel.result import ArmResult
from accel.timing import STAGES, speedup


def arm_of(arm: dict[str, Any]) -> ArmResult:
    """An arm's record part (:meth:`ArmResult.as_dict`, with what a cluster arm adds) as an :class:`ArmResult`."""
    return ArmResult(**{k: v for k, v in arm.items() if k in ArmResult.__dataclass_fields__})


def pair(task: str, model: str, gpu: dict[str, Any], cpu: dict[str, Any]) -> dict[str, Any]:
    """The record's ``arms``, ``speedup`` and ``parity`` of two arms' parts."""
    g, c = arm_of(gpu), arm_of(cpu)
    return {"arms": {"gpu": gpu, "cpu": cpu}, "speedup": speedups(g, c), "parity": parity(task, model, g, c)}


def speedups(gpu: ArmResult, cpu: ArmResult) -> dict[str, float]:
    """CPU seconds / GPU seconds per stage and in total; NaN unless both arms ran."""
    both = gpu.status == "ok" and cpu.status == "ok"
    stages = dict.fromkeys([*gpu.stages, *cpu.stages]) or STAGES
    out = {stage: speedup(cpu.stages.get(stage), gpu.stages.get(stage)) if both else math.nan for stage in stages}
    out["total"] = speedup(cpu.total_seconds, gpu.total_seconds) if both else math.nan
    return out


def parity(task: str, model: str, gpu: ArmResult, cpu: ArmResult) -> dict[str, Any]:
    """Whether the two arms reach the same quality, within a stated tolerance."""
    metric, tolerance, relative = parity_rule(task, model)
    g = gpu.metrics.get(metric) if gpu.status == "ok" else None
    c = cpu.metrics.get(metric) if cpu.status == "ok" else None
    allowed = tolerance * abs(c) if relative and c is not None else tolerance
    ok = None if g is None or c is None else abs(g - c) <= allowed
    return {"metric": metric, "gpu": g, "cpu": c, "tolerance": tolerance, "relative": relative, "ok": ok}
