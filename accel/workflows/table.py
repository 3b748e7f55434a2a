"""Bring your own table: ``accel run --data FILE --target COLUMN``.

:func:`plan_table` looks at the file and plans the run once, on the host (readers + schema):
how to read it, the column kinds, the task, the rows, the split, the leaks to drop. Each arm
then reads the same files with its own library (``load``) and applies the plan
(``features``, :mod:`accel.autofeatures`), so the two arms are comparable column for column.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from accel.autofeatures import build_table_features
from accel.backend import Backend
from accel.models import build_model, model_family
from accel.readers import TableSource, read_source, resolve_source
from accel.schema import TablePlan, make_plan
from accel.workflows.base import Prepared, WorkflowSettings


@dataclass
class PlannedTable:
    source: TableSource
    plan: TablePlan
    read_seconds: float
    infer_seconds: float


def plan_table(
    data: str,
    target: str,
    task: str | None,
    drop: list[str],
    settings: WorkflowSettings,
    delimiter: str | None = None,
) -> PlannedTable:
    """Check the file and plan the run (raises AccelError for every bad input)."""
    import pandas

    source = resolve_source(data, delimiter)
    t0 = time.perf_counter()
    try:
        frame = read_source(pandas, source)
    except Exception as exc:  # noqa: BLE001 - a parser error on a user's file is their input's problem
        from accel.errors import AccelError

        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise AccelError(f"--data: cannot parse {str(source.original)!r} as {source.kind.upper()}: {first}") from None
    t1 = time.perf_counter()
    task_arg = None if task in (None, "auto") else task
    plan = make_plan(frame, target, task_arg, drop, settings.rows, settings.test_size, settings.seed)
    t2 = time.perf_counter()
    plan.notices[:0] = list(source.notices)
    return PlannedTable(source, plan, t1 - t0, t2 - t1)


class TableWorkflow:
    """A user's table with automatic features and the chosen model."""

    name = "table"

    def __init__(self, settings: WorkflowSettings, planned: PlannedTable, model: str, model_params: dict[str, Any]):
        self.settings = settings
        self.planned = planned
        self.plan = planned.plan
        self.task = self.plan.task
        self.model_name = model
        self.family = model_family(model)
        n_classes = len(self.plan.classes or [])
        self.model = build_model(model, self.task, model_params, settings.seed, n_classes=max(n_classes, 2))
        self.feature_reports: dict[str, Any] = {}

    def describe_data(self) -> dict[str, Any]:
        return {
            "source": self.planned.source.describe(),
            "schema": self.plan.describe(),
            "planning_seconds": {
                "read_on_host": round(self.planned.read_seconds, 6),
                "schema_inference": round(self.planned.infer_seconds, 6),
            },
            "target": self.plan.target,
            "rows_requested": self.settings.rows,
        }

    def load(self, backend: Backend) -> Any:
        frame = read_source(backend.xdf, self.planned.source, self.plan.read_columns)
        return frame.iloc[self.plan.row_positions].reset_index(drop=True)

    def features(self, backend: Backend, frame: Any) -> Prepared:
        prepared, report = build_table_features(backend.xdf, frame, self.plan, self.family, self.settings.seed)
        self.feature_reports[backend.name] = {
            "encodings": report.encodings,
            "imputed": report.imputed,
            "scaled": report.scaled,
        }
        prepared.rows["loaded"] = self.plan.rows_in_file
        return prepared
