"""accel: end-to-end tabular data science on NVIDIA GPUs with RAPIDS, measured against a fair CPU baseline.

As a library: ``accel.run(...)`` runs a workflow on both arms and returns a
:class:`~accel.api.RunResult` (the record, and its stages, metrics and memory as DataFrames);
``accel.tune(...)`` searches hyperparameters (``accel hpo``), ``accel.compare(...)`` runs your
own script on the CPU and with cudf.pandas / cuml.accel, ``accel.benchmark(...)`` runs an
``accel bench`` suite and ``accel.scale(...)`` a scaling study on 1, 2, 4 ... Dask workers;
``accel.info()`` says which arms can run here. They are imported on first use, so ``import
accel`` loads no data library.
"""

import os as _os
import sys as _sys

__version__ = "0.1.0"

# How long GNU OpenMP's idle threads spin before they sleep, settled before XGBoost (or anything
# else linking libgomp) loads: libgomp reads it once, when it is loaded. Its default (300,000
# spins) made CPU XGBoost 2-5x slower whenever the cores were shared (a Dask worker, the other
# arm, a CI job): spinning threads take the cores the working ones need. OMP_WAIT_POLICY=PASSIVE
# (sleep at once) fixes that but cost 18% on a quiet machine, which would handicap the CPU
# baseline; 10,000 spins cost nothing quiet (0.98-0.99 of the default) and took most of the gain
# busy (0.45-0.63 of the default, PASSIVE 0.44-0.47): benchmarks/bench_omp_wait_policy.py,
# results 2026-12-01-omp-wait-policy-cpu-004 and -005. Whatever the
# user set (OMP_WAIT_POLICY or GOMP_SPINCOUNT) is kept as it is. Worker processes that Dask
# spawns inherit the environment, so they get the same setting.
GOMP_SPINCOUNT_DEFAULT = "10000"
_OMP_LIBRARIES = ("xgboost", "sklearn", "lightgbm", "torch")
_user_set = {k: _os.environ[k] for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT") if _os.environ.get(k)}
if not _user_set:
    _os.environ["GOMP_SPINCOUNT"] = GOMP_SPINCOUNT_DEFAULT
#: What the run record's threads section says of OpenMP's waiting threads.
OMP_WAIT_POLICY = {
    "OMP_WAIT_POLICY": _os.environ.get("OMP_WAIT_POLICY") or None,
    "GOMP_SPINCOUNT": _os.environ.get("GOMP_SPINCOUNT") or None,
    "source": "user environment" if _user_set else "accel default",
    # Set after an OpenMP user was imported, the setting cannot take effect in this process.
    "loaded_before": sorted(m for m in _OMP_LIBRARIES if m in _sys.modules),
}


#: What ``accel.<name>`` gives, from :mod:`accel.api`, imported on first use.
_API = (
    "run", "run_config", "tune", "compare", "benchmark", "scale", "info", "load", "predict",
    "RunResult", "TuneResult", "CompareResult", "BenchResult", "ScaleResult", "PredictResult",
)  # fmt: skip


def __getattr__(name: str):  # PEP 562: the API without importing pandas at ``import accel``
    if name in _API:
        from accel import api

        return getattr(api, name)
    raise AttributeError(f"module 'accel' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
