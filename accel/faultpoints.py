"""Named points where the fault tests kill a Dask worker, deterministically.

A test arms a point by creating ``<name>.armed`` in the folder that ``ACCEL_FAULT_DIR``
names in the worker processes' environment. The first worker to reach the point renames the
file (atomic: exactly one process wins, so a point fires once) to ``<name>.fired-<pid>`` and
then SIGKILLs itself, exactly as an out-of-memory killer or a lost node
would end it: no clean-up, no goodbye to the scheduler. Without ``ACCEL_FAULT_DIR`` a point
costs one environment lookup and does nothing.

Points: ``features`` (in each row partition of the distributed feature engineering) and
``train-1``, ``train-2`` (after a boosting round on each worker, in the first and the second
training attempt, through :func:`training_callbacks`).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

ENV = "ACCEL_FAULT_DIR"
#: The boosting round after which the ``train-<attempt>`` point is reached (0-based).
TRAIN_ROUND = 2


def fault_point(name: str) -> None:
    folder = os.environ.get(ENV)
    if not folder:
        return
    armed = Path(folder) / f"{name}.armed"
    try:
        os.rename(armed, armed.with_name(f"{name}.fired-{os.getpid()}"))
    except OSError:  # not armed, or another worker won
        return
    os.kill(os.getpid(), signal.SIGKILL)


def training_callbacks(attempt: int = 1) -> list[Any]:
    """The XGBoost callbacks that carry the ``train-<attempt>`` point to the workers, when under test.

    Empty unless ``ACCEL_FAULT_DIR`` is set in this process too, so ordinary runs train
    without them (and the workers import nothing for them).
    """
    if not os.environ.get(ENV):
        return []
    import xgboost

    # Defined here so that importing this module does not import XGBoost; Dask ships the
    # class to the workers by value (cloudpickle), where it calls fault_point by reference.
    class TrainFaultPoint(xgboost.callback.TrainingCallback):
        def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            if epoch == TRAIN_ROUND:
                fault_point(f"train-{attempt}")
            return False

    return [TrainFaultPoint()]
