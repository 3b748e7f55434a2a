"""The workflows ``accel run`` knows by name."""

from __future__ import annotations

from accel.errors import AccelError
from accel.workflows.base import Prepared, WorkflowSettings
from accel.workflows.flights import FlightsWorkflow

WORKFLOWS = {"flights": FlightsWorkflow}


def get_workflow(name: str, settings: WorkflowSettings, **kwargs):
    try:
        cls = WORKFLOWS[name]
    except KeyError:
        raise AccelError(
            f"unknown workflow {name!r}; known workflows: {', '.join(sorted(WORKFLOWS))} "
            "(or your own table: --data FILE --target COLUMN)"
        ) from None
    return cls(settings, **kwargs)


__all__ = ["WORKFLOWS", "FlightsWorkflow", "Prepared", "WorkflowSettings", "get_workflow"]
