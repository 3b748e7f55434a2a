"""accel: end-to-end tabular data science on NVIDIA GPUs with RAPIDS, measured against a fair CPU baseline.

As a library: ``accel.run(...)`` runs a workflow on both arms and returns a
:class:`~accel.api.RunResult` (the record, and its stages, metrics and memory as DataFrames);
``accel.tune(...)`` searches hyperparameters (``accel hpo``), ``accel.compare(...)`` runs your
own script on the CPU and with cudf.pandas / cuml.accel, ``accel.benchmark(...)`` runs an
``accel bench`` suite and ``accel.scale(...)`` a scaling study on 1, 2, 4 ... Dask workers;
``accel.info()`` says which arms can run here. They are imported on first use, so ``import
accel`` loads no data library, and it changes nothing in the environment (the arms' OpenMP
setting is made where they run: :mod:`accel.openmp`).
"""

__version__ = "0.1.0"

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


def __dir__() -> list[str]:  # the public API only: not the submodules Python adds as they are imported
    return sorted([*_API, "__version__"])
