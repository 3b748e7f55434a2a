"""Skip marks per GPU library: a GPU test runs where the libraries it uses work, and otherwise skips
naming the one that is missing or broken (the probe's own reason, library by library).

``requires_gpu`` (tests/conftest.py) still means the whole GPU arm (CuPy, cuDF, XGBoost-CUDA).
"""

from __future__ import annotations

import pytest

from accel.backend import probe_gpu


def needs(*capabilities: str) -> pytest.MarkDecorator:
    """Skip unless every named capability (:data:`accel.backend.CAPABILITIES`) is available here."""
    why = probe_gpu().missing(*capabilities)
    return pytest.mark.skipif(why is not None, reason=f"needs {', '.join(capabilities)}: {why}")


needs_cupy = needs("cupy")
needs_rmm = needs("cupy", "rmm")
needs_xgboost_cuda = needs("cupy", "xgboost_cuda")
needs_cuml = needs("cuml")
needs_dask_cuda = needs("dask_cuda")
needs_dask_cudf = needs("dask_cudf")
