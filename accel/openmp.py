"""How long OpenMP's idle threads spin: settled where the arms run, never in the user's environment.

GNU OpenMP (libgomp, which XGBoost and scikit-learn load) reads ``GOMP_SPINCOUNT`` once, when
it is loaded. Its default (300,000 spins) made CPU XGBoost 2-5x slower whenever the cores were
shared (a Dask worker, the other arm, a CI job): spinning threads take the cores the working
ones need. ``OMP_WAIT_POLICY=PASSIVE`` (sleep at once) fixes that but cost 18% on a quiet
machine, which would handicap the CPU baseline; 10,000 spins cost nothing quiet (0.98-0.99 of
the default) and took most of the gain busy (0.45-0.63 of the default, PASSIVE 0.44-0.47):
``benchmarks/bench_omp_wait_policy.py``, results ``2026-12-01-omp-wait-policy-cpu-004`` and ``-005``.

:func:`settle` gives the arms that setting: before the first arm of a process runs (an accel
command, an ``accel.run`` call, a backend being made), it sets the variable, loads the OpenMP
runtime through scikit-learn and XGBoost (one libgomp, shared by both), and puts the
environment back as it was. ``import accel`` changes nothing. What the user set
(``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``) is kept as it is; an OpenMP runtime that is already
loaded (the user imported scikit-learn's estimators first) keeps the setting it loaded with, and
the run record says so. Dask worker processes accel starts get the variable in their own
environment (:func:`worker_environ`).
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import Any

#: The spin count accel gives libgomp unless the user chose.
GOMP_SPINCOUNT_DEFAULT = "10000"
_USER_NAMES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
_OMP_LIBRARIES = ("xgboost", "sklearn", "lightgbm", "torch")


def _user_set() -> dict[str, str]:
    return {k: os.environ[k] for k in _USER_NAMES if os.environ.get(k)}


def _runtime_loaded() -> bool:
    """Whether a libgomp is mapped into this process already (Linux); elsewhere, whether a library that loads one was imported."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return any("libgomp" in line for line in maps)
    except OSError:
        return any(m in sys.modules for m in _OMP_LIBRARIES)


@cache
def settle() -> dict[str, Any]:
    """Load the OpenMP runtime with accel's spin count, once per process; what the record's
    ``threads.omp_wait_policy`` says.

    Returns
    -------
    dict
        ``OMP_WAIT_POLICY`` and ``GOMP_SPINCOUNT`` as the runtime read them (None: its default),
        ``source`` (``"user environment"``, ``"accel default"``, or ``"already loaded"``: the
        runtime was loaded before accel could set it) and ``loaded_before`` (the OpenMP users
        imported before the first arm).
    """
    user = _user_set()
    loaded_before = sorted(m for m in _OMP_LIBRARIES if m in sys.modules)
    state: dict[str, Any] = {name: user.get(name) for name in _USER_NAMES}
    if user:
        state["source"] = "user environment"
    elif _runtime_loaded():
        state["source"] = "already loaded"
    else:
        os.environ["GOMP_SPINCOUNT"] = GOMP_SPINCOUNT_DEFAULT
        try:
            import sklearn.utils._openmp_helpers  # noqa: F401 - scikit-learn's extensions link libgomp
            import xgboost  # noqa: F401 - so does libxgboost (the same soname: one runtime)
        finally:
            del os.environ["GOMP_SPINCOUNT"]  # the user's environment as it was
        state.update(GOMP_SPINCOUNT=GOMP_SPINCOUNT_DEFAULT, source="accel default")
    state["loaded_before"] = loaded_before
    return state


def worker_environ() -> dict[str, str]:
    """The variable for the environment of Dask worker processes accel starts (nothing when the user chose)."""
    return {} if _user_set() else {"GOMP_SPINCOUNT": GOMP_SPINCOUNT_DEFAULT}  # nothing when the user chose
