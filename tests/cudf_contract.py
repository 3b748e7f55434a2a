"""A stand-in for the ``cudf`` module at accel's ``_compat`` boundary, for contract tests on a CPU.

accel's GPU code reaches cuDF through the module the backend hands it (``xdf``). Passing this
stand-in instead records what each cuDF call would receive (the types and missing-value strings
of a CSV read, the files of each Parquet read) and answers with pandas frames, refusing what
libcudf 26.10 refuses, so that a kind of GPU bug is caught here before any GPU sees it. It is no
GPU: nothing here says a GPU is usable, and the frames it returns are pandas frames. The rules
it follows, each from the source it is read from:

- ``read_csv``: a field is missing when it is one of libcudf's default strings
  (``create_na_trie`` in ``cpp/src/io/csv/reader_impl.cu``: pandas' list without ``"None"``)
  or one of ``na_values`` (added to them: ``keep_default_na=True``); columns take ``dtype``.
- ``read_parquet``: several files in one call only when they share one schema
  (``aggregate_reader_metadata`` in ``cpp/src/io/parquet/reader_impl_helpers.cpp``: "All sources
  must have the same schema"); no column of a type cuDF has none for (decimal256, float16:
  ``Decimal128Dtype.MAX_PRECISION`` in ``cudf/core/dtypes.py``, ``SUPPORTED_NUMPY_TO_PYLIBCUDF_TYPES``
  in ``cudf/utils/dtypes.py``); ``skip_rows``/``nrows`` slice the rows.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pandas as pd

#: libcudf 26.10's default missing-value strings (``create_na_trie``, cpp/src/io/csv/reader_impl.cu).
LIBCUDF_DEFAULT_NA = (
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null",
)  # fmt: skip


class LibcudfRefusal(RuntimeError):
    """What libcudf raises for an input the stand-in refuses as it does."""


class CudfStandIn(types.ModuleType):
    """The ``xdf`` of a GPU arm, recording each read: ``calls`` holds ``(function, source, kwargs)``."""

    def __init__(self) -> None:
        super().__init__("cudf_stand_in")
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []
        self.concat = pd.concat

        class DataFrame:
            @staticmethod
            def from_arrow(table: Any) -> pd.DataFrame:
                return table.to_pandas()

        self.DataFrame = DataFrame

    def reads(self, function: str) -> list[tuple[Any, dict[str, Any]]]:
        return [(source, kwargs) for name, source, kwargs in self.calls if name == function]

    def read_csv(self, path: str, **kwargs: Any) -> pd.DataFrame:
        self.calls.append(("read_csv", path, dict(kwargs)))
        nulls = [*LIBCUDF_DEFAULT_NA, *(kwargs.get("na_values") or [])]
        options = {k: kwargs[k] for k in ("sep", "usecols", "dtype") if k in kwargs}
        return pd.read_csv(path, keep_default_na=False, na_values=nulls, **options)

    def read_parquet(
        self, source: Any, columns: list[str] | None = None, skip_rows: int | None = None, nrows: int | None = None
    ) -> pd.DataFrame:
        import pyarrow.parquet as pq

        from accel._compat import cudf_unreadable

        paths = [str(p) for p in source] if isinstance(source, list) else [str(source)]
        self.calls.append(("read_parquet", paths, {"columns": columns, "skip_rows": skip_rows, "nrows": nrows}))
        schemas = [pq.read_schema(p).remove_metadata() for p in paths]
        if any(not s.equals(schemas[0]) for s in schemas[1:]):
            raise LibcudfRefusal("All sources must have the same schema")
        wanted = columns if columns is not None else [n for n in schemas[0].names if n != "__index_level_0__"]
        unreadable = [c for c in wanted if cudf_unreadable(schemas[0].field(c).type)]
        if unreadable:
            raise LibcudfRefusal(f"column {unreadable[0]!r} has no cuDF type ({schemas[0].field(unreadable[0]).type})")
        frame = pd.concat([pq.read_table(p, columns=wanted).to_pandas() for p in paths], ignore_index=True)
        start = skip_rows or 0
        return frame.iloc[start : None if nrows is None else start + nrows].reset_index(drop=True)


class CudfFrameStandIn:
    """A cuDF DataFrame as ``_compat`` sees one (its type's module is ``cudf``): ``dtypes`` and
    ``columns``, no ``dtype`` (``cudf.DataFrame`` has none), ``to_numpy`` recording its arguments."""

    __module__ = "cudf.core.dataframe"

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame
        self.columns = frame.columns
        self.dtypes = frame.dtypes
        self.to_numpy_calls: list[dict[str, Any]] = []

    def to_numpy(self, **kwargs: Any) -> Any:
        self.to_numpy_calls.append(dict(kwargs))
        return self._frame.to_numpy(**kwargs)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"'DataFrame' object has no attribute {name!r}")


def csv_path(tmp: Path, frame: pd.DataFrame, name: str = "t.csv") -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / name
    frame.to_csv(path, index=False)
    return path
