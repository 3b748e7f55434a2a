"""Every place where cuDF/CuPy differ from pandas/NumPy, one small function each.

The rest of accel writes against the pandas/NumPy API, which cuDF/CuPy mirror. Where they do
not, the difference lives here, named for what it does. Nothing here imports cupy or cudf: the
GPU module comes in as ``xdf``/``xp`` from the backend, and "is this a GPU object?" is asked
through the object's type, as array-api-compat and xgboost's ``lazy_isinstance`` do.
"""

from __future__ import annotations

import mmap
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

#: A pandas or a cuDF DataFrame (the arm's ``xdf``): the one place where a type is either.
Frame: TypeAlias = Any
#: A pandas or a cuDF Series.
Column: TypeAlias = Any
#: A NumPy or a CuPy array (the arm's ``xp``).
Array: TypeAlias = Any


def _top_module(obj: Any) -> str:
    return type(obj).__module__.partition(".")[0]


def is_cudf(obj: Any) -> bool:
    return _top_module(obj) == "cudf"


def frame_library(frame: Frame | Column) -> ModuleType:
    """The library of a pandas or cuDF frame or Series (``pandas`` or ``cudf``), already imported."""
    return sys.modules[_top_module(frame)]


def is_pandas_module(xdf: ModuleType) -> bool:
    return xdf.__name__ == "pandas"


def to_numpy(obj: Any) -> np.ndarray:
    """A host NumPy array from a NumPy/CuPy array, a pandas/cuDF Series or Index, or a pandas/cuDF
    DataFrame (a 2-D array: ``xgboost.dask.inplace_predict`` gives a frame of class
    probabilities for a multiclass model, cuDF frames on GPU workers).

    cuDF's ``to_numpy`` refuses nulls unless told what to put there; NaN is what pandas gives,
    so an all-float Series or frame is asked for NaN (``Frame.to_numpy(na_value=...)``). A cuDF
    frame has ``dtypes``, not ``dtype``: both are read here.
    """
    if is_cudf(obj):
        dtypes = obj.dtypes if hasattr(obj, "columns") else [obj.dtype]
        if all(getattr(d, "kind", "") == "f" for d in dtypes):
            return obj.to_numpy(na_value=np.nan)
    elif _top_module(obj) == "cupy":
        return obj.get()
    return obj.to_numpy() if hasattr(obj, "to_numpy") else np.asarray(obj)


def host_float(value: Any) -> float | None:
    """A reduction's result (a NumPy, CuPy or Python number, pandas' or cuDF's missing value) as
    a host float; None where it is missing or NaN."""
    try:
        number = float(value.item() if hasattr(value, "item") else value)
    except (TypeError, ValueError):  # pd.NA, cudf.NA, None
        return None
    return None if number != number else number


def to_pandas(obj: Any) -> Any:
    """A small pandas object (per-column statistics) from a pandas or cuDF one."""
    return obj.to_pandas() if is_cudf(obj) else obj


def from_pandas(xdf: ModuleType, frame: Any) -> Any:
    """A pandas frame as a frame of ``xdf``'s library: itself for pandas; ``cudf.from_pandas``
    (cuDF 26.10 has no ``DataFrame.from_pandas``: cudf/core/dataframe.py:9361 is the one converter)."""
    return frame if is_pandas_module(xdf) else xdf.from_pandas(frame)


def frame_of(xdf: ModuleType, frame: Any) -> Any:
    """``frame`` (pandas or cuDF) as a frame of ``xdf``'s library, moved between host and device where needed."""
    if is_pandas_module(xdf):
        return to_pandas(frame)
    return frame if is_cudf(frame) else from_pandas(xdf, frame)


def dask_dataframe_backend(xdf: ModuleType) -> str:
    """Dask's ``dataframe.backend`` for partitions of ``xdf``: ``"pandas"``, or ``"cudf"`` (Dask-cuDF)."""
    return "pandas" if is_pandas_module(xdf) else "cudf"


def csv_na_values() -> list[str]:
    """The strings pandas' CSV readers read as missing (``pandas._libs.parsers.STR_NA_VALUES``,
    there in every pandas the package admits, 2.2 to 3.1).

    libcudf's default list lacks ``"None"`` (``create_na_trie`` in
    ``cpp/src/io/csv/reader_impl.cu``), which pandas has: every cuDF read of a table's CSV is
    given this list, so that both arms see the same missing values.
    """
    from pandas._libs.parsers import STR_NA_VALUES

    return sorted(STR_NA_VALUES)


def csv_options(xdf: ModuleType, dtypes: dict[str, str] | None = None, columns: Sequence[str] | None = None) -> dict[str, Any]:
    """What every read of a table's CSV passes to ``xdf.read_csv`` (whole, in byte ranges, on Dask):
    the plan's column types (of ``columns`` only, when given), and on cuDF pandas' missing-value
    strings (:func:`csv_na_values`)."""
    wanted = {c: t for c, t in (dtypes or {}).items() if columns is None or c in set(columns)}
    options: dict[str, Any] = {"dtype": wanted} if wanted else {}
    if not is_pandas_module(xdf):
        options["na_values"] = csv_na_values()  # added to libcudf's defaults (keep_default_na=True)
    return options


def read_csv(
    xdf: ModuleType,
    path: str | Path,
    columns: Sequence[str] | None = None,
    delimiter: str = ",",
    dtypes: dict[str, str] | None = None,
) -> Any:
    """Read a CSV file with each library's fastest reader, on all the cores it has.

    pandas' default C parser uses one core; its pyarrow engine parses in parallel, which is
    the fair baseline against cuDF's GPU parser (the C parser reads a file with a row longer
    than pyarrow's 1 MB block). cuDF has no ``engine`` argument. ``dtypes`` (a table's plan,
    :meth:`~accel.data.schema.TablePlan.csv_dtypes`) and the missing-value strings go to both
    readers alike (:func:`csv_options`), and the columns come in ``columns``' order on both.
    """
    kwargs: dict[str, Any] = {"sep": delimiter, **csv_options(xdf, dtypes, columns)}
    if columns is not None:
        kwargs["usecols"] = list(columns)
    if not is_pandas_module(xdf):
        frame = xdf.read_csv(str(path), **kwargs)
    else:
        try:
            frame = xdf.read_csv(str(path), engine="pyarrow", **kwargs)
        except ValueError as exc:  # pandas' ParserError (a ValueError), or pyarrow's ArrowInvalid (one too)
            if "straddling" not in str(exc):
                raise
            # A row longer than pyarrow's block (1 MB; pandas cannot widen it): the C parser has no such limit.
            frame = xdf.read_csv(str(path), low_memory=False, **kwargs)
    # libcudf and pandas' C parser give the columns in file order, its pyarrow engine in ``usecols``' order.
    return frame if columns is None else frame[list(columns)]


def read_parquet(xdf: ModuleType, paths: Sequence[str | Path], columns: Sequence[str]) -> Any:
    """Read ``columns`` of one or several Parquet files that share one schema as one frame (cuDF
    takes a list; pandas one path at a time). On cuDF, columns of a type cuDF has none for are
    read on the host (:func:`read_parquet_rows`), file by file."""
    cols = list(columns)
    if is_pandas_module(xdf):
        frames = [xdf.read_parquet(str(p), columns=cols) for p in paths]
        return (frames[0] if len(frames) == 1 else xdf.concat(frames, ignore_index=True)).reset_index(drop=True)
    if parquet_reads_on_host(xdf, paths, cols):
        frames = [read_parquet_rows(xdf, p, cols) for p in paths]
        return frames[0] if len(frames) == 1 else xdf.concat(frames, ignore_index=True)
    return xdf.read_parquet([str(p) for p in paths], columns=cols).reset_index(drop=True)


def cudf_unreadable(arrow_type: Any) -> bool:
    """Whether cuDF has no column type for a Parquet column of this Arrow type.

    decimal256 (cuDF's decimals end at 128 bits, precision 38: ``Decimal128Dtype.MAX_PRECISION``
    in ``cudf/core/dtypes.py``; libcudf reads the wider ones as raw bytes) and float16 (no
    half-precision column type among ``SUPPORTED_NUMPY_TO_PYLIBCUDF_TYPES`` in
    ``cudf/utils/dtypes.py``). Such a column is read on the host and arrives as float64.
    """
    import pyarrow as pa

    return bool(pa.types.is_decimal256(arrow_type) or pa.types.is_float16(arrow_type))


def host_read_columns(path: str | Path, columns: Sequence[str]) -> list[str]:
    """Of ``columns`` of a Parquet file, those cuDF cannot read (:func:`cudf_unreadable`)."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(str(path))
    return [c for c in columns if c in schema.names and cudf_unreadable(schema.field(c).type)]


def parquet_reads_on_host(xdf: ModuleType, paths: Sequence[str | Path], columns: Sequence[str]) -> bool:
    """Whether reading these Parquet files into ``xdf`` frames reads some column on the host:
    on cuDF, one it has no type for (:func:`host_read_columns`); never on pandas."""
    return not is_pandas_module(xdf) and any(host_read_columns(p, columns) for p in paths)


def _arrow_rows(path: str | Path, columns: list[str], skip: int, nrows: int | None) -> Any:
    """Rows ``skip`` to ``skip + nrows`` of ``columns`` of a Parquet file, as a pyarrow Table of
    float64 columns, reading only the row groups that hold them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pq.ParquetFile(str(path)) as f:
        meta = f.metadata
        stop = meta.num_rows if nrows is None else min(meta.num_rows, skip + nrows)
        # each row group's first row, and the file's end
        starts = np.cumsum([0] + [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]).tolist()
        groups = [i for i in range(meta.num_row_groups) if starts[i + 1] > skip and starts[i] < stop]
        table = f.read_row_groups(groups, columns=columns) if groups else f.schema_arrow.empty_table().select(columns)
    table = table.slice(skip - (starts[groups[0]] if groups else 0), max(stop - skip, 0))
    return pa.table({c: table.column(c).cast(pa.float64()) for c in columns})


def read_parquet_rows(
    xdf: ModuleType, path: str | Path, columns: Sequence[str], skip_rows: int = 0, nrows: int | None = None
) -> Any:
    """Rows of one Parquet file on cuDF (``skip_rows``/``nrows``: a slice of them), in ``columns``' order.

    The columns cuDF has no type for (:func:`host_read_columns`) are read with pyarrow on the
    host, cast to float64 there (as the readers convert decimals on both arms) and moved to the
    device beside the others, which cuDF reads.
    """
    names = list(columns)
    host = host_read_columns(path, names)
    rows = {} if skip_rows == 0 and nrows is None else {"skip_rows": skip_rows, "nrows": nrows}
    if not host:
        return xdf.read_parquet(str(path), columns=names, **rows).reset_index(drop=True)
    on_host = xdf.DataFrame.from_arrow(_arrow_rows(path, host, skip_rows, nrows))
    rest = [c for c in names if c not in host]
    if not rest:
        return on_host
    frame = xdf.read_parquet(str(path), columns=rest, **rows).reset_index(drop=True)
    for name in host:
        frame[name] = on_host[name]
    return frame[names]


#: A number written as text, as both arms read one (after surrounding spaces and tabs): a sign,
#: ASCII digits with a decimal point, an exponent; each such string is one libcudf's ``is_float``
#: accepts too. ``inf``, ``nan``, ``1,000`` and digits of other scripts are not numbers here.
NUMBER = r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"


def numbers_in_text(s: Column) -> Column:
    """The numbers of a text column as float64, on either arm alike; every other value missing, and
    so is a number too large for float64 (``1e400``), as the readers make an infinity."""
    text = s.astype("str").str.strip(" \t")
    numbers = text.where(text.str.match(NUMBER)).astype("float64")
    return numbers.mask(numbers.abs() == float("inf"))


def is_text_dtype(s: Any) -> bool:
    """A string column: pandas' ``str``/``object``/``string``, cuDF's ``object``/``str``."""
    dtype = s.dtype
    return str(dtype) in ("object", "str", "string") or getattr(dtype, "kind", "") in ("O", "U", "T")


#: The strptime directives cuDF's parser reads (libcudf ``to_timestamps``/``is_timestamp``), with
#: the most characters each takes. Month names (%b, %B) are not among them: they are turned into
#: month numbers first (see :func:`cudf_date_text`). Nor is ``%j``: libcudf accepts it, but
#: ``timestamp_from_parts`` builds the date from year, month and day only, so ``2021074`` in
#: ``%Y%j`` would come back as January 1 without an error; such a format is parsed on the host.
CUDF_DIRECTIVES = {"Y": 4, "y": 2, "m": 2, "d": 2, "H": 2, "I": 2, "M": 2, "S": 2, "p": 2, "f": 9}
MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
#: The lower-case month names ``%B`` (full) and ``%b`` (abbreviated) stand for.
_MONTH_NAMES = {"B": list(MONTH_NAMES), "b": [m[:3] for m in MONTH_NAMES]}
_FIELD_PATTERN = {"Y": r"(\d{4})", "y": r"(\d{2})", "f": r"(\d{1,9})", "p": r"([AaPp][Mm])"}


def _format_items(fmt: str) -> list[tuple[str, str]]:
    """``fmt`` as ``("lit", char)`` and ``("dir", letter)`` items (``%%`` is a literal ``%``)."""
    # Each match is a directive's letter (``%%``: the literal ``%``) or one literal character;
    # a lone ``%`` at the end is a literal.
    pieces = re.findall(r"%(.)|(.)", fmt, flags=re.DOTALL)
    return [("dir", d) if d and d != "%" else ("lit", d or c) for d, c in pieces]


def cudf_date_gap(fmt: str) -> str | None:
    """Why cuDF's parser cannot read text in ``fmt``, or None when it can (month names included,
    as numbers). The GPU arm parses such a column on the host and says so."""
    unsupported = sorted({v for k, v in _format_items(fmt) if k == "dir" and v not in CUDF_DIRECTIVES and v not in "bB"})
    if unsupported == ["j"]:
        return "cuDF's datetime parser reads %j but ignores it (the day of the year)"
    if unsupported:
        return f"cuDF's datetime parser has no {', '.join('%' + v for v in unsupported)}"
    return None


def cudf_date_text(s: Any, fmt: str) -> tuple[Any, str]:
    """Text in ``fmt`` rewritten as fixed-width text in a format cuDF's ``to_datetime`` reads.

    cuDF's ``to_datetime`` parses only strings that all have one length ("Cannot parse
    date-like strings with different formats"), and its parser has no month names. So each
    field is pulled out with one anchored regular expression, numbers are zero-padded to their
    full width (``3/5/2021`` → ``03/05/2021``), month names become month numbers and runs of
    spaces one space, and the new format has ``%m`` where ``%b``/``%B`` was. A value that does not
    match becomes missing. Written against the string API pandas and cuDF share (``str.lower``,
    ``str.extract``, ``str.zfill``, ``str.ljust``, ``replace``, ``+``); tested on pandas here.
    """
    items = _format_items(fmt)
    if all(kind == "lit" for kind, _ in items):
        return s, fmt
    named = any(k == "dir" and v in "bB" for k, v in items)
    if named:
        s = s.str.lower()  # month names in any case, as pandas reads them
        items = [(k, v.lower() if k == "lit" else v) for k, v in items]
    pattern, new_fmt = "^", ""
    for kind, value in items:
        if kind == "lit":
            pattern += r"\s+" if value == " " else re.escape(value)
            new_fmt += "%%" if value == "%" else value
        elif value in "bB":
            pattern += "(" + "|".join(_MONTH_NAMES[value]) + ")"
            new_fmt += "%m"
        else:
            pattern += _FIELD_PATTERN.get(value, r"(\d{1,2})")
            new_fmt += "%" + value
    groups = s.str.extract(pattern + "$", expand=True)
    # Start from empty strings (missing where the value did not match), so that every step
    # adds a string or a column to a column.
    out, names = groups[groups.columns[0]].str.slice(0, 0), iter(groups.columns)
    for kind, value in items:
        if kind == "lit":
            piece = value
        else:
            col = groups[next(names)]
            if value in "bB":
                piece = col.replace(_MONTH_NAMES[value], [f"{k:02d}" for k in range(1, 13)])
            elif value == "p":
                piece = col.str.upper()
            elif value == "f":
                piece = col.str.ljust(CUDF_DIRECTIVES["f"], "0")
            else:
                piece = col.str.zfill(CUDF_DIRECTIVES[value])
        out = out + piece
    return out, new_fmt


def pandas_datetime(s: Any, date_format: str | None) -> Any:
    """pandas text to datetimes in ``date_format``, missing where it does not parse.

    Text with UTC offsets (``%z``: ``+01:00``, ``-0500``, ``Z``) becomes UTC without a time zone,
    each value by its own offset: a column whose offsets differ (``2021-03-15T10:00+01:00`` and
    ``...-05:00``, daylight saving, data from several places) is one column of instants. pandas
    refuses mixed offsets without ``utc=True`` ("Mixed timezones detected").
    """
    import pandas as pd

    if date_format is not None and "%z" in date_format:
        return pd.to_datetime(s, format=date_format, errors="coerce", utc=True).dt.tz_convert(None)
    return pd.to_datetime(s, format=date_format, errors="coerce")


def parse_datetime_where(xdf: ModuleType, s: Any, date_format: str | None) -> tuple[Any, str]:
    """Text to datetimes in ``date_format`` (missing where it does not parse), and where it was parsed.

    pandas: ``to_datetime(format=..., errors="coerce")``. cuDF implements ``errors="coerce"``
    only for scalars and parses only strings of one length, without month names; so on cuDF
    the text is made fixed-width first when its lengths differ or it has month names
    (:func:`cudf_date_text`), the strings that match the format (``str.istimestamp``) are kept,
    and ``to_datetime`` parses them. A format cuDF's parser cannot read at all
    (:func:`cudf_date_gap`) is parsed on the host with pandas and copied back, and the second
    value says so.
    """
    if is_pandas_module(xdf):
        return pandas_datetime(s, date_format), "pandas"
    if date_format is None:
        return xdf.to_datetime(s), "cudf"
    gap = cudf_date_gap(date_format)
    if gap is not None:
        # An offset (%z) among them: cudf.to_datetime refuses it (cudf/core/tools/datetimes.py,
        # "cuDF does not yet support timezone-aware datetimes"); parsed here as UTC, as on the CPU arm.
        return xdf.from_pandas(pandas_datetime(s.to_pandas(), date_format)), f"host (pandas): {gap}"
    fmt, where = date_format, "cudf"
    named = any(k == "dir" and v in "bB" for k, v in _format_items(date_format))
    if named or int(s.str.len().nunique()) > 1:
        s, fmt = cudf_date_text(s, date_format)
        where = "cudf, after making the text fixed-width" + (" with month numbers" if named else "")
    return xdf.to_datetime(s.where(s.str.istimestamp(fmt)), format=fmt), where


def integer_text(xdf: ModuleType, s: Any) -> Any:
    """A numeric column (``20210315``) as text of its integers, missing where it is missing."""
    return s.astype("Int64").astype("string") if is_pandas_module(xdf) else s.astype("int64").astype("str")


def naive_datetime(s: Any) -> Any:
    """A datetime column without its time zone (as UTC wall time)."""
    return s if getattr(s.dt, "tz", None) is None else s.dt.tz_convert(None)


def as_float(obj: Any, dtype: str = "float32") -> Any:
    """A numeric Series or frame with every non-float column cast to ``dtype``, missing values kept.

    The one cast before any frame → array conversion. cuDF fills missing values *before* it
    casts (``Frame._to_array``: ``col.fillna(na_value)``, then ``astype``), and an integer or
    boolean column cannot take NaN: ``to_cupy(dtype="float32", na_value=nan)`` on an int64
    column with nulls raises ``TypeError: Cannot safely cast non-equivalent float to int64``
    (``NumericalColumn._validate_fillna_value``). A left join gives such columns on cuDF, where
    pandas makes them float64. Cast first, and the nulls become NaN on the way out; float
    columns keep their width.
    """
    if hasattr(obj, "columns"):
        casts = {c: dtype for c in obj.columns if getattr(obj[c].dtype, "kind", "O") != "f"}
        return obj.astype(casts) if casts else obj
    return obj if getattr(obj.dtype, "kind", "O") == "f" else obj.astype(dtype)


def frame_to_array(frame: Any, dtype: str = "float32") -> Any:
    """A numeric frame as a 2-D ``dtype`` array on the arm's device (CuPy for cuDF, NumPy for
    pandas), missing values as NaN, through :func:`as_float`."""
    frame = as_float(frame, dtype)
    if is_cudf(frame):
        return frame.to_cupy(dtype=dtype, na_value=float("nan"))
    return frame.to_numpy(dtype=dtype, na_value=float("nan"))


def array_module(frame: Any) -> ModuleType:
    """The array module of a frame's device: CuPy for cuDF (already imported by cuDF), NumPy for pandas."""
    return sys.modules["cupy"] if is_cudf(frame) else np


def column_values(series: Any) -> Any:
    """A numeric column as a 1-D array on its device, missing values as NaN, without a copy
    where its values already are one (a NumPy float column)."""
    if is_cudf(series):
        series = as_float(series, "float32")
        return series.to_cupy(dtype=series.dtype, na_value=float("nan"))
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "fiub":
        return series.to_numpy()  # a NumPy dtype holds no missing value: NumPy casts it on the way into the matrix
    return as_float(series, "float32").to_numpy(dtype="float32", na_value=np.nan)


def series_to_array(series: Any) -> Any:
    """A column as a 1-D array on the arm's device."""
    return series.to_cupy() if is_cudf(series) else series.to_numpy()


def iter_parquet_chunks(xdf: ModuleType, path: str | Path, columns: Sequence[str], rows: int) -> Iterator[Any]:
    """Consecutive chunks of a Parquet file: pyarrow record batches for pandas, row ranges for cuDF
    (:func:`read_parquet_rows`: columns cuDF has no type for are read on the host)."""
    import pyarrow.parquet as pq

    if is_pandas_module(xdf):
        yield from (batch.to_pandas() for batch in pq.ParquetFile(path).iter_batches(batch_size=rows, columns=list(columns)))
        return
    total = pq.ParquetFile(path).metadata.num_rows
    for skip in range(0, total, rows):
        yield read_parquet_rows(xdf, path, list(columns), skip, min(rows, total - skip))


#: Compressed CSV as libcudf infers it from the file's suffix (``infer_compression_type``), with
#: the codec pyarrow decompresses it with. (A zip, xz or snappy file never gets this far: its
#: first bytes hold NUL bytes, and planning refuses it as binary.)
_CSV_CODECS = {"gz": "gzip", "bz2": "bz2", "zstd": "zstd"}


def iter_csv_chunks(
    xdf: ModuleType, path: Path, names: list[str], columns: list[str], rows: int, dtypes: dict[str, str], delimiter: str
) -> Iterator[Any]:
    """Consecutive chunks of a CSV file, in file order, every row in exactly one chunk.

    Parameters
    ----------
    xdf : module
        pandas or cudf.
    path : Path
        The CSV file (compressed when its suffix says so: ``.gz``, ``.bz2``, ``.zstd``).
    names : list of str
        Every column of the file, in file order.
    columns : list of str
        The columns to read.
    rows : int
        Rows per chunk (cuDF byte ranges: about that many).
    dtypes : dict
        Column types (``"float64"``, ``"str"``), so that every chunk parses alike.
    delimiter : str
        Field delimiter.

    Yields
    ------
    DataFrame
        pandas' chunked C parser gives ``rows`` rows per chunk. cuDF reads an uncompressed file
        in byte ranges (:func:`_cudf_byte_ranges`). libcudf refuses byte ranges on compressed
        input: cuDF then parses it with pyarrow's streaming reader (:func:`arrow_csv_chunks`,
        the same rows and types as pandas) and moves each chunk to the device.
    """
    options = {"sep": delimiter, "usecols": list(columns), **csv_options(xdf, dtypes, columns)}
    codec = _CSV_CODECS.get(path.name.rpartition(".")[2].lower())
    if is_pandas_module(xdf):
        yield from xdf.read_csv(str(path), chunksize=rows, **options)
    elif codec is None:
        yield from _cudf_byte_ranges(xdf, path, names, rows, options)
    else:
        for table in arrow_csv_chunks(path, names, columns, rows, dtypes, delimiter, codec):
            yield from_arrow(xdf, table)


def _cudf_byte_ranges(xdf: ModuleType, path: Path, names: list[str], rows: int, options: dict[str, Any]) -> Iterator[Frame]:
    """An uncompressed CSV file read by cuDF (``xdf.read_csv(**options)``) in byte ranges of about
    ``rows`` rows; ``names``: every column of the file, in file order.

    libcudf keeps the rows whose preceding line break lies in a range, so each range here ends
    at a line break found on the host, and no row straddles two ranges (a row longer than
    libcudf's read-ahead padding would otherwise be cut). A quoted field holding a line break
    is not found by the search (neither libcudf's nor this one).
    """
    size = path.stat().st_size
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
        head = view[: 1 << 20]
        step = max(1 << 20, int(rows * len(head) / max(head.count(b"\n"), 1)))
        offset = 0
        while offset < size:
            end = view.find(b"\n", offset + step)  # the line break that ends the range (-1: none)
            last = end < 0 or end + 1 >= size
            yield xdf.read_csv(
                str(path),
                # (offset, 0): to the end of the file; else up to the line break at ``end``
                byte_range=(offset, 0 if last else end - offset),
                header=0 if offset == 0 else None,
                names=None if offset == 0 else list(names),
                **options,
            )
            offset = size if last else end


def arrow_csv_chunks(
    path: Path, names: list[str], columns: list[str], rows: int, dtypes: dict[str, str], delimiter: str, compression: str | None
) -> Iterator[Any]:
    """Consecutive pyarrow Tables of ``rows`` rows (the last one shorter) of a CSV file.

    pyarrow's streaming reader, with what pandas' C parser does by default: pandas' missing-value
    strings (an empty or quoted-empty field is missing, text ones too), blank lines skipped,
    quoted fields that hold line breaks, and the columns in file order.

    Parameters
    ----------
    path : Path
        The CSV file.
    names : list of str
        Every column of the file, in file order.
    columns : list of str
        The columns to read.
    rows : int
        Rows per table.
    dtypes : dict
        Column types: ``"str"`` reads as Arrow text, any other name as that NumPy type.
    delimiter : str
        Field delimiter.
    compression : str or None
        The codec (``"gzip"``, ``"bz2"``, ``"zstd"``) the file is decompressed with as it is read
        (None: it is not compressed).

    Yields
    ------
    pyarrow.Table
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    wanted = set(columns)
    include = [c for c in names if c in wanted]
    types = {c: pa.string() if t == "str" else pa.from_numpy_dtype(np.dtype(t)) for c, t in dtypes.items() if c in wanted}
    convert = pcsv.ConvertOptions(
        include_columns=include, column_types=types, strings_can_be_null=True, null_values=csv_na_values()
    )
    read, parse = pcsv.ReadOptions(block_size=1 << 24), pcsv.ParseOptions(delimiter=delimiter, newlines_in_values=True)
    with pa.input_stream(str(path), compression=compression) as stream:
        reader = pcsv.open_csv(stream, read_options=read, parse_options=parse, convert_options=convert)
        yield from tables_of(reader, reader.schema, max(rows, 1))


def tables_of(batches: Iterable[pa.RecordBatch], schema: pa.Schema, rows: int) -> Iterator[pa.Table]:
    """Record ``batches`` of any sizes as consecutive pyarrow Tables of ``rows`` rows (the last one shorter)."""
    import pyarrow as pa

    pending: list[Any] = []
    held = 0
    for batch in batches:
        pending.append(batch)
        held += batch.num_rows
        while held >= rows:
            table = pa.Table.from_batches(pending, schema=schema)
            yield table.slice(0, rows)
            rest = table.slice(rows)
            pending, held = rest.to_batches(), rest.num_rows
    if held:
        yield pa.Table.from_batches(pending, schema=schema)


def as_categorical(xdf: ModuleType, s: Any, categories: Sequence[Any]) -> Any:
    """``s`` as a categorical with exactly these categories; other values become missing.

    Both libraries do that in ``astype`` today, but pandas deprecates it (pandas 4 will raise),
    so the values outside the vocabulary are masked first.
    """
    categories = list(categories)
    dtype = xdf.CategoricalDtype(categories=categories, ordered=False)  # unordered, exactly these, in this order
    if is_pandas_module(xdf):
        # One hash lookup per value in Arrow's C++ (``index_in``) instead of pandas' ``isin`` and
        # ``astype`` (which turn Arrow-backed text into Python objects): the same codes, ten
        # times faster on the text columns pandas 3 reads.
        import pyarrow as pa
        import pyarrow.compute as pc

        if has_categories(s, categories):
            return s
        try:
            values = pa.array(s, from_pandas=True)
            codes = pc.index_in(values, value_set=pa.array(categories, type=values.type)).fill_null(-1)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            return s.where(s.isin(categories)).astype(dtype)
        codes = np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.int32)
        return xdf.Series(xdf.Categorical.from_codes(codes, dtype=dtype), index=s.index, name=s.name)
    return s.where(s.isin(categories)).astype(dtype)


def has_categories(s: Any, categories: Sequence[Any]) -> bool:
    """Whether ``s`` is already categorical with exactly these categories in this order."""
    if str(s.dtype) != "category":
        return False
    present = s.cat.categories
    return len(present) == len(categories) and to_numpy(present).tolist() == list(categories)


def sorted_unique(series: Any) -> list:
    """The distinct non-null values of a column, sorted, as a host list (the category vocabulary)."""
    return sorted(to_numpy(series.dropna().unique()).tolist())


# --------------------------------------------------------------------------- benchmarks


def read_table(xdf: ModuleType, path: str | Path, columns: Sequence[str] | None = None) -> Any:
    """Read a CSV or Parquet file into the arm's dataframe (CSV through :func:`read_csv`)."""
    if str(path).lower().endswith((".parquet", ".pq")):
        return xdf.read_parquet(str(path), columns=list(columns) if columns is not None else None)
    return read_csv(xdf, path, columns)


def from_arrow(xdf: ModuleType, table: Any) -> Any:
    """A pyarrow Table as the arm's dataframe (dictionary columns become categoricals on both)."""
    return table.to_pandas() if is_pandas_module(xdf) else xdf.DataFrame.from_arrow(table)


def to_arrow(frame: Any) -> Any:
    """A frame as a pyarrow Table on the host, without index or pandas metadata (cuDF copies
    its columns off the device)."""
    import pyarrow as pa

    table = frame.to_arrow(preserve_index=False) if is_cudf(frame) else pa.Table.from_pandas(frame, preserve_index=False)
    return table.replace_schema_metadata(None)


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
