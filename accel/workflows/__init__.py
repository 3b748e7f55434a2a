"""The workflows ``accel run`` knows by name, a user's table, and their Dask forms.

- :mod:`~accel.workflows.base` — the workflow protocols and settings the runners use.
- :mod:`~accel.workflows.flights` / :mod:`~accel.workflows.table` — one process (in memory or
  streamed); :mod:`~accel.workflows.flights_dask` / :mod:`~accel.workflows.table_dask` — the same
  steps mapped over a Dask cluster's partitions (:mod:`~accel.workflows.partitions`).

May import the flat core and :mod:`accel.data`; not the runners or any slice (``scaleout``,
``hpo``, ``bench``, ``report``) or ``cli``.
"""

from __future__ import annotations

from accel.errors import AccelError
from accel.workflows.base import WorkflowSettings
from accel.workflows.flights import FlightsWorkflow
from accel.workflows.flights_dask import dask_flights
from accel.workflows.partitions import DaskBuilder

WORKFLOWS = {"flights": FlightsWorkflow}
#: The workflows that run on a Dask cluster by name, and their Dask sides (a user's table is
#: built from its plan: :func:`accel.workflows.table_dask.table_builder`).
DASK_WORKFLOWS: dict[str, DaskBuilder] = {"flights": dask_flights}


def get_workflow(name: str, settings: WorkflowSettings, **kwargs):
    if name not in WORKFLOWS:
        raise AccelError(
            f"unknown workflow {name!r}; known workflows: {', '.join(sorted(WORKFLOWS))} "
            "(or your own table: --data FILE --target COLUMN)"
        )
    return WORKFLOWS[name](settings, **kwargs)


__all__ = ["DASK_WORKFLOWS", "WORKFLOWS", "FlightsWorkflow", "WorkflowSettings", "get_workflow"]
