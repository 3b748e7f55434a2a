"""Every place where cuDF/CuPy differ from pandas/NumPy, one small function each.

The rest of accel writes against the pandas/NumPy API, which cuDF/CuPy mirror. Where they do
not, the difference lives here, named for what it does. Nothing here imports cupy or cudf: the
GPU module comes in as ``xdf``/``xp`` from the backend, and "is this a GPU object?" is asked
through the object's type, as array-api-compat and xgboost's ``lazy_isinstance`` do.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np


def _top_module(obj: Any) -> str:
    return type(obj).__module__.partition(".")[0]


def is_cupy_array(obj: Any) -> bool:
    return _top_module(obj) == "cupy"


def is_cudf(obj: Any) -> bool:
    return _top_module(obj) == "cudf"


def is_pandas_module(xdf: ModuleType) -> bool:
    return xdf.__name__ == "pandas"


def to_numpy(obj: Any) -> np.ndarray:
    """A host NumPy array from a NumPy/CuPy array or a pandas/cuDF Series.

    cuDF's ``to_numpy`` refuses nulls unless told what to put there; NaN is what pandas gives.
    """
    if is_cudf(obj):
        if obj.dtype.kind == "f":
            return obj.to_numpy(na_value=np.nan)
        return obj.to_numpy()
    if is_cupy_array(obj):
        return obj.get()
    if hasattr(obj, "to_numpy"):
        return obj.to_numpy()
    return np.asarray(obj)


def read_csv(xdf: ModuleType, path: str | Path, columns: Sequence[str] | None = None) -> Any:
    """Read a CSV file with each library's fastest reader, on all the cores it has.

    pandas' default C parser uses one core; its pyarrow engine parses in parallel, which is
    the fair baseline against cuDF's GPU parser. cuDF has no ``engine`` argument.
    """
    kwargs: dict[str, Any] = {"usecols": list(columns)} if columns is not None else {}
    if is_pandas_module(xdf):
        kwargs["engine"] = "pyarrow"
    return xdf.read_csv(str(path), **kwargs)


def categorical_dtype(xdf: ModuleType, categories: Sequence[str]) -> Any:
    """An unordered categorical dtype with exactly these categories, in this order."""
    return xdf.CategoricalDtype(categories=list(categories), ordered=False)


def sorted_unique(series: Any) -> list:
    """The distinct non-null values of a column, sorted, as a host list (the category vocabulary)."""
    values = to_numpy(series.dropna().unique())
    return sorted(values.tolist())


def host_str_list(values: Any) -> list[str]:
    return [str(v) for v in to_numpy(values).tolist()]


# --------------------------------------------------------------------------- benchmarks


def read_table(xdf: ModuleType, path: str | Path, columns: Sequence[str] | None = None) -> Any:
    """Read a CSV or Parquet file into the arm's dataframe (CSV through :func:`read_csv`)."""
    if str(path).lower().endswith((".parquet", ".pq")):
        return xdf.read_parquet(str(path), columns=list(columns) if columns is not None else None)
    return read_csv(xdf, path, columns)


def from_arrow(xdf: ModuleType, table: Any) -> Any:
    """A pyarrow Table as the arm's dataframe (dictionary columns become categoricals on both)."""
    if is_pandas_module(xdf):
        return table.to_pandas()
    return xdf.DataFrame.from_arrow(table)


def nullable_int32(xdf: ModuleType) -> str:
    """The NA-aware 32-bit integer dtype: pandas' masked ``Int32`` (db-benchmark's pandas
    solution uses it); cuDF's ``int32`` holds nulls natively."""
    return "Int32" if is_pandas_module(xdf) else "int32"


def column_sum(series: Any) -> float:
    """The sum of a column skipping missing values, as a host float (db-benchmark's checksum).

    pandas skips NaN and NA alike; cuDF skips nulls but lets a NaN (say, 0/0 of a group with
    one row) poison the sum, so NaN becomes null first there.
    """
    if is_cudf(series) and series.dtype.kind == "f":
        series = series.nans_to_nulls()
    value = series.sum()
    return float(value.item() if hasattr(value, "item") else value)
