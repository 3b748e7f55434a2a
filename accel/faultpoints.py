"""Named points where the fault tests kill a Dask worker, or make a step raise, deterministically.

The hook is off in every ordinary run, installed or not: it is active only where a test has
enabled it explicitly, that is when ``ACCEL_FAULT_DIR`` names a folder that :func:`enable_for_tests`
marked (the file ``ENABLED_FOR_TESTS`` in it), owned by this user and writable by nobody else. A
stray ``ACCEL_FAULT_DIR`` in a user's environment, or a shared folder someone else can write to,
arms nothing.

A test arms a point by creating ``<name>.armed`` in the folder that ``ACCEL_FAULT_DIR``
names in the worker processes' environment. The first worker to reach the point renames the
file (atomic: exactly one process wins, so a point fires once) to ``<name>.fired-<pid>`` and
then SIGKILLs itself, exactly as an out-of-memory killer or a lost node
would end it: no clean-up, no goodbye to the scheduler. Without ``ACCEL_FAULT_DIR`` a point
costs one environment lookup and does nothing.

Points: ``features`` (in each row partition of the distributed feature engineering) and
``train-1``, ``train-2`` (after a boosting round on each worker, in the first and the second
training attempt, through :func:`training_callbacks`).

A point may also raise instead (:func:`raise_point`): a test arms it with ``<name>.raise``, and
the first process to reach it raises :class:`InjectedFault` there, once, as an error of the
library at that step would (a type it cannot read, a device out of memory). Point:
``batch-plan-<arm>`` (``batch-plan-gpu``, ``batch-plan-cpu``: while an arm plans its batches,
:func:`accel.runner.prepare_arm`).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

ENV = "ACCEL_FAULT_DIR"
#: The boosting round after which the ``train-<attempt>`` point is reached (0-based).
TRAIN_ROUND = 2


#: The marker a test puts in the fault folder to enable the hook (see the module docstring).
MARKER = "ENABLED_FOR_TESTS"


def enable_for_tests(folder: Path) -> Path:
    """Mark ``folder`` (a test's own, private folder) so that fault points read it. Returns it."""
    folder = Path(folder)
    folder.chmod(0o700)
    (folder / MARKER).write_text("fault points of accel.faultpoints are enabled for tests in this folder\n")
    return folder


def active_folder() -> Path | None:
    """The fault folder if a test enabled the hook (``ACCEL_FAULT_DIR`` + marker, private), else None."""
    if not (folder := os.environ.get(ENV)):
        return None
    path = Path(folder)
    try:
        st = path.stat()
        (path / MARKER).stat()
    except OSError:
        return None
    # Another user's folder, or one that group or others may write: anyone could arm it.
    if (hasattr(os, "getuid") and st.st_uid != os.getuid()) or st.st_mode & 0o022:
        return None
    return path


def _claim(name: str, armed: str, claimed: str) -> bool:
    """Whether this process claimed the point ``name`` a test armed (``<name>.<armed>``): renamed
    to ``<name>.<claimed>-<pid>``, so that exactly one process fires it."""
    if (folder := active_folder()) is None:
        return False
    path = folder / f"{name}.{armed}"
    try:
        os.rename(path, path.with_name(f"{name}.{claimed}-{os.getpid()}"))
    except OSError:  # not armed, or another process won
        return False
    return True


def fault_point(name: str) -> None:
    if _claim(name, "armed", "fired"):
        os.kill(os.getpid(), signal.SIGKILL)


class InjectedFault(RuntimeError):
    """The error a :func:`raise_point` armed by a test raises."""


def raise_point(name: str) -> None:
    """Raise :class:`InjectedFault` here when a test armed ``<name>.raise`` (once); else nothing."""
    if _claim(name, "raise", "raised"):
        raise InjectedFault(f"fault injected at {name!r} (a test armed it)")


def training_callbacks(attempt: int = 1) -> list[Any]:
    """The XGBoost callbacks that carry the ``train-<attempt>`` point to the workers, when under test.

    Empty unless a test enabled the hook in this process too (:func:`active_folder`), so ordinary runs train
    without them (and the workers import nothing for them).
    """
    if active_folder() is None:
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
