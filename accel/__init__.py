"""accel: end-to-end tabular data science on NVIDIA GPUs with RAPIDS, measured against a fair CPU baseline."""

import os as _os
import sys as _sys

__version__ = "0.1.0"

# OpenMP's wait policy, settled before XGBoost (or anything else linking GNU OpenMP) loads:
# libgomp reads OMP_WAIT_POLICY once, when it is loaded. By default its idle threads spin for
# a while before they sleep; on a machine whose cores are shared with anything (a Dask worker,
# the other arm, a CI job) the spinning threads take the cores the working ones need and CPU
# XGBoost ran 10-30x slower. PASSIVE threads sleep at once; on a quiet machine it costs nothing
# measurable (benchmarks/bench_omp_wait_policy.py). A value the user set is kept as it is.
# Worker processes that Dask spawns inherit the environment, so they get the same policy.
OMP_WAIT_POLICY_DEFAULT = "PASSIVE"
_OMP_LIBRARIES = ("xgboost", "sklearn", "lightgbm", "torch")
OMP_WAIT_POLICY = {
    "value": _os.environ.get("OMP_WAIT_POLICY") or OMP_WAIT_POLICY_DEFAULT,
    "source": "user environment" if _os.environ.get("OMP_WAIT_POLICY") else "accel default",
    # Set after an OpenMP user was imported, the setting cannot take effect in this process.
    "loaded_before": sorted(m for m in _OMP_LIBRARIES if m in _sys.modules),
}
_os.environ.setdefault("OMP_WAIT_POLICY", OMP_WAIT_POLICY_DEFAULT)
if not _os.environ["OMP_WAIT_POLICY"]:
    _os.environ["OMP_WAIT_POLICY"] = OMP_WAIT_POLICY_DEFAULT
