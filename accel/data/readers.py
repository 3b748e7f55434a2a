"""Reading a user's table: CSV, Parquet, or a folder of Parquet files.

:func:`resolve_source` looks at the file once, on the host, before any arm runs, and turns
every problem into a one-line :class:`~accel.errors.AccelError` (missing file, empty file or
folder, binary content, duplicate column names, a wrong delimiter); a file that is not UTF-8 is
decoded with the common fallbacks and read through a UTF-8 copy (cuDF reads UTF-8 only), and
the notice says which encoding was used; so is a file with a byte-order mark (UTF-8, UTF-16,
UTF-32), whose mark is never part of the first column's name. Header names are kept as written.

A Parquet column's Arrow type decides its kind where the type says more than the values
(:func:`arrow_kind`: decimals and durations are numbers, dictionary-encoded values categories,
nested types are dropped with their reason); a folder's hive partitions (``key=value`` folders)
are columns, as pyarrow reads them. Both arms then read the same resolved files with their own
reader (:func:`read_source`, :func:`iter_chunks`), after checking that the files are still the
ones planning read (:func:`check_unchanged`).
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import hashlib
import io
import os
import re
import shutil
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import numpy as np

from accel import _compat
from accel.cache import cache_dir
from accel.errors import AccelError, first_line
from accel.files import REPLACE, environment_error_line, file_kind, linked_folders, regular_files, write_new

if TYPE_CHECKING:
    import pyarrow as pa

CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
FALLBACK_ENCODINGS = ("utf-8", "cp1252", "latin-1")
SNIFF_BYTES = 1 << 16
CANDIDATE_DELIMITERS = (",", ";", "\t", "|")
#: What :func:`arrow_kind` says of a column: (kind, conversion, reason).
ArrowKind: TypeAlias = "tuple[str, str, str]"
#: Per file of a Parquet folder, its hive partitions' ``(column, value)`` pairs.
Partitions: TypeAlias = "tuple[tuple[tuple[str, Any], ...], ...]"


@dataclass(frozen=True)
class TableSource:
    """A user's table, checked and ready for either arm to read.

    Attributes
    ----------
    kind : {"csv", "parquet"}
    paths : tuple of Path
        What the arms read: the file itself, a UTF-8 copy of it, or the Parquet files of a folder.
    original : Path
        What the user named.
    delimiter : str or None
        CSV delimiter.
    encoding : str or None
        The CSV file's encoding as found.
    columns : tuple of str
        Column names in file order.
    notices : tuple of str
        What was detected or worked around, for the screen and the record.
    """

    kind: str
    paths: tuple[Path, ...]
    original: Path
    delimiter: str | None
    encoding: str | None
    columns: tuple[str, ...]
    size_bytes: int
    notices: tuple[str, ...] = field(default_factory=tuple)
    #: Parquet: column -> (kind, conversion, reason) where the Arrow type decides the kind
    #: (:func:`arrow_kind`); the other columns' kinds are inferred from their values.
    arrow_kinds: dict[str, ArrowKind] = field(default_factory=dict)
    #: Parquet folder with hive partitions: per file of ``paths``, its ``(column, value)`` pairs.
    partitions: Partitions = ()
    #: What planning saw of the files (:func:`fingerprint`); each arm checks it before reading.
    fingerprint: str = ""
    #: Parquet: every file has the first file's schema (names in order, types). Files that differ
    #: (a column decimal in one, float64 in another; columns in another order) are read file by
    #: file (:func:`reads_file_by_file`): libcudf reads several files in one call only when they
    #: share one schema ("All sources must have the same schema", ``aggregate_reader_metadata``).
    uniform: bool = True

    @property
    def file_columns(self) -> list[str]:
        """The columns stored in the files: every column but nested ones and hive partitions."""
        skip = {n for n, (kind, _, _) in self.arrow_kinds.items() if kind == "dropped"}
        skip |= {name for name, _ in self.partitions[0]} if self.partitions else set()
        return [c for c in self.columns if c not in skip]

    def describe(self) -> dict[str, Any]:
        """The table in the run record: what the user named, its kind, size, delimiter and encoding,
        how many files and columns it has, and the notices."""
        out = {k: getattr(self, k) for k in ("kind", "size_bytes", "delimiter", "encoding")}
        out |= {"files": len(self.paths), "columns": len(self.columns), "notices": list(self.notices)}
        return {"path": str(self.original), **out}


def _open_binary(path: Path):
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")


def _refuse_duplicates(names: list[str], path: Path) -> None:
    """Refuse a column name that ``path`` holds twice."""
    dups = [name for name, n in Counter(names).items() if n > 1]
    if dups:
        raise AccelError(f"--data: duplicate column name {dups[0]!r} in {str(path)!r}: rename one of them")


def _is_any(arrow_type: Any, tests: tuple[str, ...]) -> bool:
    """Whether ``arrow_type`` passes any of the ``pyarrow.types.is_<test>`` of ``tests`` (one this pyarrow lacks: no)."""
    import pyarrow as pa

    return any(getattr(pa.types, f"is_{test}", lambda _: False)(arrow_type) for test in tests)


#: What a Parquet column's type reads as in both arms (numbers mix, text is text, and so on):
#: (family, the ``pyarrow.types`` tests of its types); any other type is a family of its own.
TYPE_FAMILIES = (
    ("number", ("integer", "floating", "decimal")),
    ("text", ("string", "large_string")),
    *((family, (family,)) for family in ("null", "boolean", "timestamp", "date")),
)
#: The Arrow types that decide their column's kind: (the ``pyarrow.types`` tests of the types,
#: kind, conversion, reason with ``{t}`` the type), as :func:`arrow_kind` gives them.
ARROW_KINDS = (
    (("dictionary",), "categorical", "decode", "dictionary-encoded {t.value_type} (Parquet)"),
    (("decimal",), "numeric", "float64", "{t} read as float64"),
    (("duration",), "numeric", "seconds", "{t} read as seconds"),
    (
        ("list", "large_list", "fixed_size_list", "struct", "map", "union", "list_view"),
        "dropped",
        "skip",
        "nested type {t}: not a feature (flatten it into columns to use it)",
    ),
    (("binary", "large_binary", "fixed_size_binary"), "dropped", "skip", "binary type {t}: not a feature"),
    (("time", "interval"), "dropped", "skip", "type {t}: not a feature (store it as a number of seconds to use it)"),
)


def _type_family(arrow_type: Any) -> str:
    """What a Parquet column's type reads as in both arms (:data:`TYPE_FAMILIES`; a dictionary's: its values')."""
    t = arrow_type.value_type if _is_any(arrow_type, ("dictionary",)) else arrow_type
    return next((family for family, tests in TYPE_FAMILIES if _is_any(t, tests)), str(t))


def arrow_kind(arrow_type: Any) -> ArrowKind | None:
    """The kind a column of this Arrow type is, where the type decides it; None where its values do.

    Every Arrow type the Parquet readers return maps here or to the value-based inference of
    :mod:`accel.data.schema` (numbers, booleans, text, timestamps, dates, nulls).

    Parameters
    ----------
    arrow_type : pyarrow.DataType

    Returns
    -------
    (kind, conversion, reason) or None
        ``kind`` as in :class:`accel.data.schema.ColumnPlan`; ``conversion`` is what the readers
        do to the column on both arms (:func:`convert_columns`): ``"float64"`` (decimals),
        ``"seconds"`` (durations), ``"decode"`` (dictionary-encoded values), ``"skip"`` (not read).
    """
    found = (row for row in ARROW_KINDS if _is_any(arrow_type, row[0]))
    return next(((kind, conversion, reason.format(t=arrow_type)) for _, kind, conversion, reason in found), None)


def _hive_partitions(paths: list[Path], root: Path) -> Partitions:
    """Per file, the ``key=value`` folders between ``root`` and it, typed as pyarrow types them.

    pyarrow's hive discovery (``pyarrow.parquet.read_table(folder)``) makes each key a column:
    integers where every value of the key is one, else text (URL-decoded). Files that do not
    all sit under the same keys have no partitions.
    """
    from urllib.parse import unquote

    per_file = []
    for path in paths:
        pairs = [part.split("=", 1) for part in path.relative_to(root).parts[:-1]]
        if not pairs or any(len(p) != 2 or not p[0] for p in pairs):
            return ()
        per_file.append([(key, unquote(value)) for key, value in pairs])
    keys = [k for k, _ in per_file[0]]
    if any([k for k, _ in pairs] != keys for pairs in per_file):
        return ()
    integral = {k: all(dict(pairs)[k].lstrip("-").isdigit() for pairs in per_file) for k in keys}
    return tuple(tuple((k, int(v) if integral[k] else v) for k, v in pairs) for pairs in per_file)


def _resolve_parquet(paths: list[Path], original: Path) -> TableSource:
    """The Parquet files ``paths`` (``original``: the file or folder named) as one table; a file
    pyarrow cannot read, or one whose columns or types differ from the others', is refused in one line."""
    import pyarrow.parquet as pq

    schemas: list[pa.Schema] = []  # each file's, without its metadata
    columns: list[str] = []  # the first file's
    first_types: dict[str, tuple[Any, Path]] = {}  # each column's first type, and the file it is in
    kinds: dict[str, ArrowKind] = {}  # the columns whose Arrow types decide their kinds
    for path in paths:
        try:
            schemas.append(schema := pq.read_schema(path).remove_metadata())
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a bad file
            raise AccelError(f"--data: {str(path)!r} is not a readable Parquet file ({type(exc).__name__})") from None
        names = [n for n in schema.names if n != "__index_level_0__"]
        _refuse_duplicates(names, path)
        columns = columns if len(schemas) > 1 else names
        if set(names) != set(columns):
            raise _other_columns(path, names, columns, paths[0], original)
        # The files of a folder are read as one table: a column must read alike in every file.
        for name in names:
            arrow_type = schema.field(name).type
            if name not in kinds and (kind := arrow_kind(arrow_type)) is not None:
                kinds[name] = kind  # decimal in one file, float64 in another: both converted
            if name not in first_types or _type_family(first_types[name][0]) == "null":
                first_types[name] = (arrow_type, path)
            elif _type_family(arrow_type) not in (_type_family(first_types[name][0]), "null"):
                seen, where = first_types[name]
                raise AccelError(
                    f"--data: column {name!r} is {seen} in {where.name!r} but {arrow_type} in {path.name!r}: "
                    "the files of a folder must agree on each column's type (rewrite one, or --drop the column)"
                )
    size = sum(p.stat().st_size for p in paths)
    notices = [f"column {name!r} dropped: {reason}" for name, (kind, _, reason) in kinds.items() if kind == "dropped"]
    partitions = _hive_columns(_hive_partitions(paths, original) if original.is_dir() else (), columns, kinds, notices)
    uniform = all(schema.equals(schemas[0]) for schema in schemas)
    return TableSource(
        "parquet", tuple(paths), original, None, None, tuple(columns), size, tuple(notices), kinds, partitions, uniform=uniform
    )


def _other_columns(path: Path, names: list[str], columns: list[str], first: Path, original: Path) -> AccelError:
    """The error for a file of a folder whose columns are not those of its ``first`` file."""
    missing, extra = [c for c in columns if c not in names], [c for c in names if c not in columns]
    differ = "; ".join(
        f"{what} {', '.join(map(repr, cols[:5]))}" + (f" and {len(cols) - 5:,} more" if len(cols) > 5 else "")
        for what, cols in (("missing", missing), ("extra", extra))
        if cols
    )
    return AccelError(
        f"--data: {str(path)!r} has other columns than {first.name!r}, the first file of {str(original)!r} "
        f"({differ}): the files of a folder must hold the same columns (rewrite one, or move it out of the folder)"
    )


def _hive_columns(partitions: Partitions, names: list[str], kinds: dict[str, ArrowKind], notices: list[str]) -> Partitions:
    """The hive partitions' keys that are not columns of the files, added to ``names`` (categorical
    where they vary); the partitions less the keys the files hold, or ``()`` when none is left."""
    keys = [k for k, _ in partitions[0]] if partitions else []
    clash = [k for k in keys if k in names]
    if clash:
        notices.append(f"hive partition {clash[0]!r} is also a column of the files: the files' column is used")
    keys = [k for k in keys if k not in clash]
    if not keys:
        return ()
    names += keys
    # Categorical whatever the first rows hold: they may all come from one folder.
    for key in (k for k in keys if len({dict(pairs)[k] for pairs in partitions}) > 1):
        kinds[key] = ("categorical", "", "hive partition (from the folder names)")
    shown = ", ".join(repr(k) for k in keys)
    notices.append(f"hive partition column(s) {shown} read from the folder names (key=value), as pyarrow reads them")
    return tuple(tuple((k, v) for k, v in pairs if k in keys) for pairs in partitions)


#: Byte-order marks, longest first: (bytes, the codec that reads the text after them).
BYTE_ORDER_MARKS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def _wide_text_without_mark(head: bytes) -> str | None:
    """``"UTF-16-LE"`` or ``"UTF-16-BE"`` where ``head`` reads as such text (ASCII letters with a NUL
    byte each, every other byte), else None (binary)."""
    even = head[: len(head) // 2 * 2]
    for name, text, zeros in (("UTF-16-LE", even[0::2], even[1::2]), ("UTF-16-BE", even[1::2], even[0::2])):
        if len(text) >= 8 and zeros.count(0) >= 0.9 * len(zeros) and not text.count(0):
            with contextlib.suppress(UnicodeDecodeError):  # an unpaired surrogate: not such text
                even.decode(name.lower())
                return name
    return None


def _open_text(path: Path, encoding: str, skip: int) -> io.TextIOWrapper:
    """The file as text after its first ``skip`` bytes (a byte-order mark)."""
    raw = _open_binary(path)
    raw.read(skip)
    return io.TextIOWrapper(raw, encoding=encoding, newline="")


def _decodes(path: Path, encoding: str, skip: int) -> bool:
    """Whether ``encoding`` decodes the whole file after its first ``skip`` bytes."""
    with contextlib.suppress(UnicodeDecodeError), _open_text(path, encoding, skip) as decoder:
        while decoder.read(1 << 20):
            pass
        return True
    return False


def _utf8_copy(path: Path, encoding: str, skip: int = 0, delimiter: str = ",", decimals: tuple[int, ...] = ()) -> Path:
    """A UTF-8 copy of ``path`` (after its first ``skip`` bytes) in the cache, made once per file
    content and encoding; with ``decimals`` (column positions), those columns' numbers written
    with decimal commas (``1.234,5``) are written with a decimal point (``1234.5``)."""
    stat = path.stat()
    made = f"{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ino}|{stat.st_ctime_ns}"  # as readers.fingerprint sees the file
    how = f"|{delimiter}|{','.join(map(str, decimals))}" if decimals else ""
    key = hashlib.sha256(f"{path.resolve()}|{made}|{encoding}|{skip}{how}".encode()).hexdigest()[:16]
    target = cache_dir() / "utf8" / f"{path.stem.removesuffix('.csv')}-{key}.csv"
    if target.exists():
        return target

    def convert(tmp: Path) -> None:
        with (
            open(tmp, "w", encoding="utf-8", newline="") as out,
            _open_text(path, encoding, skip) as src,
        ):
            if not decimals:
                return shutil.copyfileobj(src, out, 1 << 20)
            writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
            for i, row in enumerate(csv.reader(src, delimiter=delimiter)):
                if i:
                    for j in decimals:
                        if j < len(row) and DECIMAL_COMMA.fullmatch(row[j]):
                            row[j] = row[j].strip().replace(".", "").replace(",", ".")
                writer.writerow(row)

    # Whole or not at all (a full disk leaves no half copy behind); the cache is accel's own.
    write_new(target, convert, "a UTF-8 copy to the cache", "or set ACCEL_CACHE_DIR", exists=REPLACE)
    return target


#: A number written with a decimal comma, and maybe dots between thousands: ``-1.234,5``, ``0,25``.
DECIMAL_COMMA = re.compile(r"\s*[-+]?(?:\d{1,3}(?:\.\d{3})+|\d+),\d+\s*")
#: Values pandas and pyarrow read as missing (besides the empty string): not numbers, not text either.
_MISSING = frozenset(("", "NA", "N/A", "n/a", "NaN", "nan", "NULL", "null", "None", "#N/A", "-NaN", "-nan"))
_WHOLE = re.compile(r"\s*[-+]?(?:\d{1,3}(?:\.\d{3})+|\d+)\s*")


def decimal_comma_columns(text: str, delimiter: str, complete: bool) -> list[int]:
    """Positions of the columns of CSV ``text`` (the file's first bytes; ``complete``: the whole
    file) whose every value is a number and at least one written with a decimal comma (``3,5``).

    Only for a delimiter other than ``,`` (where a decimal comma would have to be quoted): the
    semicolon-separated files of European spreadsheets. A column with a value such as ``1.5``
    (a decimal point) is not one of them.
    """
    if delimiter == ",":
        return []
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))  # no error: see :func:`_header`
    body = rows[1:] if complete else rows[1:-1]  # the last line of a head may be cut short
    if not body:
        return []
    found = []
    for j in range(len(rows[0])):
        values = [row[j] for row in body if j < len(row) and row[j].strip() not in _MISSING]
        commas = [bool(DECIMAL_COMMA.fullmatch(v)) for v in values]
        if any(commas) and all(comma or _WHOLE.fullmatch(v) for comma, v in zip(commas, values)):
            found.append(j)
    return found


def _sniff_delimiter(text: str) -> str | None:
    lines = [line for line in text.splitlines()[:50] if line.strip()] or [""]  # none: no delimiter (below)
    try:
        return csv.Sniffer().sniff("\n".join(lines), delimiters="".join(CANDIDATE_DELIMITERS)).delimiter
    except csv.Error:
        # Fall back to the candidate that splits the header into the most fields.
        counts = {d: len(next(csv.reader([lines[0]], delimiter=d))) for d in CANDIDATE_DELIMITERS}
        best = max(counts, key=counts.__getitem__)
        return best if counts[best] > 1 else None


def _resolve_csv(path: Path, delimiter: str | None) -> TableSource:
    size = path.stat().st_size
    head, mark, bom_codec = _csv_head(path)
    notices: list[str] = []
    encoding = _encoding(path, mark, bom_codec, notices)
    text = head[len(mark) :].decode(encoding, errors="replace")
    if delimiter is None:
        delimiter = (_sniff_delimiter(text) if len(_header(text, ",")) == 1 else None) or ","
        if delimiter != ",":
            notices.append(f"the file parses into a single column with ','; using the detected delimiter {delimiter!r}")
    # The header is the first CSV record, not the first line: a quoted name may hold a line break.
    # Names are kept as written (the readers of both arms select columns by their real names).
    columns = _header(text, delimiter)
    decimals = tuple(decimal_comma_columns(text, delimiter, complete=size <= SNIFF_BYTES))
    if decimals:  # a European spreadsheet's numbers (3,5)
        shown = ", ".join(repr(columns[j]) for j in decimals[:5] if j < len(columns))
        notices.append(
            f"column(s) {shown} hold numbers with decimal commas (3,5): read as numbers, through a copy with decimal points"
        )
    # Every reader of both arms reads UTF-8 without a mark, numbers with decimal points: else through such a copy.
    read_path = _utf8_copy(path, encoding, len(mark), delimiter, decimals) if mark or encoding != "utf-8" or decimals else path
    if any(c.strip() == "" for c in columns):
        raise AccelError(f"--data: {str(path)!r} has an empty column name in its header: name every column")
    _refuse_duplicates(columns, path)
    if spaced := [c for c in columns if c != c.strip()]:  # kept as written, and said so
        shown = ", ".join(repr(c) for c in spaced[:5]) + (f" and {len(spaced) - 5} more" if len(spaced) > 5 else "")
        notices.append(
            f"column name(s) {shown} begin or end with spaces: kept as written "
            "(--target, --drop and --date-format also find them by the name without the spaces)"
        )
    if not path.name.lower().endswith(CSV_SUFFIXES):  # read as CSV since it looks like text, and said so
        notices.append("unknown suffix: read as CSV")
    return TableSource("csv", (read_path,), path, delimiter, encoding, tuple(columns), size, tuple(notices))


def _csv_head(path: Path) -> tuple[bytes, bytes, str]:
    """The file's first bytes (at least one), its byte-order mark and the codec the mark names; a
    file that is no CSV text (Parquet, binary, blank) is refused in one line."""
    try:
        with _open_binary(path) as f:
            head = f.read(SNIFF_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable(path, exc) from None
    if head.startswith(b"PAR1"):
        raise AccelError(f"--data: {str(path)!r} is a Parquet file, not CSV: rename it to .parquet")
    # The one place the header's bytes are read: a byte-order mark is not part of the first name.
    mark, bom_codec = next(((m, codec) for m, codec in BYTE_ORDER_MARKS if head.startswith(m)), (b"", ""))
    if b"\x00" in head and not bom_codec.startswith(("utf-16", "utf-32")):
        wide = _wide_text_without_mark(head)
        if wide:
            raise AccelError(
                f"--data: {str(path)!r} looks like {wide} text without a byte-order mark: save it as UTF-8 "
                "(or as UTF-16 with its byte-order mark, as Excel's 'Unicode Text' does)"
            )
        raise AccelError(f"--data: {str(path)!r} looks binary (NUL bytes), not a CSV text file")
    if not head[len(mark) :].strip(b" \t\r\n\x00"):
        raise AccelError(f"--data: {str(path)!r} holds only blank lines")
    return head, mark, bom_codec


def _encoding(path: Path, mark: bytes, bom_codec: str, notices: list[str]) -> str:
    """The file's encoding (after its byte-order mark ``mark``), and the notice of a file read through a UTF-8 copy."""
    wide = bom_codec.startswith(("utf-16", "utf-32"))  # the mark is skipped: its codec names the byte order
    candidates = (bom_codec,) if wide else FALLBACK_ENCODINGS
    try:  # reads the whole file: a broken archive shows here (latin-1, the last fallback, decodes any bytes)
        encoding = next((e for e in candidates if _decodes(path, e, len(mark))), None)
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable(path, exc) from None
    if encoding is None:
        raise AccelError(f"--data: {str(path)!r} starts with a {bom_codec.upper()} byte-order mark but is not such text")
    if wide:
        notices.append(f"the file is {encoding.upper()} (byte-order mark): decoded and read through a UTF-8 copy")
    elif encoding != "utf-8":
        behind = " after its UTF-8 byte-order mark" if mark else ""
        notices.append(f"the file is not UTF-8: decoded as {encoding}{behind} and read through a UTF-8 copy")
    elif mark:
        notices.append("the file starts with a UTF-8 byte-order mark: removed (read through a UTF-8 copy without it)")
    return encoding


def _header(text: str, delimiter: str) -> list[str]:
    """The first record of CSV ``text`` (quoted fields may span lines).

    The csv module raises no error here: its default dialect is not strict (stray quotes are
    read as text), NUL characters are read as text, and the text (at most :data:`SNIFF_BYTES`
    characters) cannot hold a field past its limit (131,072 characters)."""
    return next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), [])


def _unreadable(path: Path, exc: BaseException) -> AccelError:
    """The one-line error for a file that cannot be read to the end (permissions, a broken archive)."""
    if isinstance(exc, PermissionError):
        return AccelError(f"--data: cannot read {str(path)!r} (permission denied)")
    detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
    if path.name.lower().endswith(".gz") and isinstance(exc, (EOFError, zlib.error, gzip.BadGzipFile)):
        return AccelError(f"--data: {str(path)!r} is not a complete gzip file ({detail}); recompress it or give the plain CSV")
    return AccelError(f"--data: cannot read {str(path)!r} ({getattr(exc, 'strerror', None) or detail})")


def _check_readable(path: Path) -> None:
    """A regular file this process may open (a FIFO or device is refused before it is opened)."""
    kind = file_kind(path)
    if kind is not None:
        raise AccelError(
            f"--data: {str(path)!r} is {kind}, not a regular file: give a CSV or Parquet file, or a folder of Parquet files"
        )
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise _unreadable(path, exc) from None


def resolve_source(path: str | Path, delimiter: str | None = None) -> TableSource:
    """Check a user's file or folder and say how both arms will read it."""
    import errno

    path = Path(path).expanduser()
    try:
        if not path.exists() and not path.is_symlink():  # a URL (s3://, https://) is no local path either
            if url := re.match(r"([A-Za-z][\w+.-]+:)/(.*)", str(path)):  # shown with the '//' a path keeps one of
                url_text = f"{url[1]}//{url[2]}"
                raise AccelError(f"--data: {url_text!r} is a URL: accel reads local files and folders (copy it here)")
            raise AccelError(f"--data: {str(path)!r} does not exist")
        if path.is_dir():
            try:
                found, skipped = regular_files(path, "*")
            except PermissionError:
                raise AccelError(f"--data: cannot list the folder {str(path)!r} (permission denied)") from None
            files = [p for p in found if p.name.lower().endswith(PARQUET_SUFFIXES)]
            if not files:
                raise AccelError(f"--data: the folder {str(path)!r} holds no Parquet files (*.parquet)")
            for file in files:
                _check_readable(file)
            source = _resolve_parquet(files, path)
            said = [
                f"sub-folder {str(link.relative_to(path))!r} is a link (to {os.path.realpath(link)!r}): its files are read too"
                for link in linked_folders(path, files)
            ]
            said += [
                f"{str(p.relative_to(path))!r} not read: {why}"
                for p, why in skipped
                if p.name.lower().endswith(PARQUET_SUFFIXES) or why.startswith(("a link back", "cannot be listed"))
            ]
            return replace(source, notices=source.notices + tuple(said)) if said else source
        _check_readable(path)
        if path.stat().st_size == 0:
            raise AccelError(f"--data: {str(path)!r} is empty (0 bytes)")
        if path.name.lower().endswith(PARQUET_SUFFIXES):
            return _resolve_parquet([path], path)
        return _resolve_csv(path, delimiter)
    except OSError as exc:
        if exc.errno not in (errno.ENAMETOOLONG, errno.ELOOP):
            raise
        raise AccelError(f"--data: {environment_error_line(exc)}") from None


def read_source(
    xdf: ModuleType, source: TableSource, columns: list[str] | None = None, dtypes: dict[str, str] | None = None
) -> Any:
    """Read the whole table with the arm's dataframe library (infinite numbers read as missing).

    The one read of a whole table, for both arms: a CSV file with the plan's column types
    (``dtypes``, :meth:`~accel.data.schema.TablePlan.csv_dtypes`) and pandas' missing-value
    strings (:func:`accel._compat.csv_options`), as the streamed and Dask reads have them; Parquet
    files in one read where they share one schema, else file by file (:func:`read_file`).
    """
    check_unchanged(source)
    if source.kind == "csv":
        frame = _compat.read_csv(xdf, source.paths[0], columns, source.delimiter or ",", dtypes)
    elif not reads_file_by_file(source):
        frame = convert_columns(_compat.read_parquet(xdf, list(source.paths), _stored(source, columns)), source)
    else:
        frames = [read_file(xdf, source, i, columns) for i in range(len(source.paths))]
        frame = frames[0] if len(frames) == 1 else xdf.concat(frames, ignore_index=True)
    return infinite_as_missing(frame)


def reads_file_by_file(source: TableSource) -> bool:
    """Whether a Parquet table is read one file at a time (:func:`read_file`): its files differ in
    schema, or hold hive partitions (each file's values come from its folder names)."""
    return source.kind == "parquet" and (not source.uniform or bool(source.partitions))


def read_file(xdf: ModuleType, source: TableSource, index: int, columns: list[str] | None = None, rows: int | None = None) -> Any:
    """File ``index`` of a Parquet table, as the arm's frame: its hive partitions added, the
    conversions of :func:`convert_columns` done, the columns in the table's order.

    Each file is made to read as every other file does before they are put together: a column
    stored as decimal in one file and float64 in another is float64 in both, wherever it sits.
    A Dask partition of such a table is one file, read by this same function. ``rows``: only
    the first rows (at least one where the file has any), as the frame a Dask graph is typed by.
    """
    frame = next(_file_chunks(xdf, source, index, columns, rows), None) if rows is not None else None
    if frame is None:  # (a chunk has the index 0, 1, ... as a whole file has)
        frame = _as_read(_compat.read_parquet(xdf, [source.paths[index]], _stored(source, columns)), source, index, columns)
    order = [c for c in (columns if columns is not None else list(source.columns)) if c in frame.columns]
    return frame[order]


def _stored(source: TableSource, columns: list[str] | None) -> list[str]:
    """Of ``columns`` (None: all), those a Parquet file stores and the arms read."""
    kept = set(source.file_columns)
    return source.file_columns if columns is None else [c for c in columns if c in kept]


def _as_read(frame: Any, source: TableSource, index: int, columns: list[str] | None = None) -> Any:
    """``frame``, read from file ``index`` of ``source``, as every file of the table reads: its hive
    partition columns added (of ``columns``; None: all), the conversions of :func:`convert_columns` done."""
    if source.partitions:
        for key, value in source.partitions[index]:
            if columns is None or key in columns:
                frame[key] = value
        frame = frame if columns is None else frame[[c for c in columns if c in frame.columns]]
    return convert_columns(frame, source)


def _file_chunks(xdf: ModuleType, source: TableSource, index: int, columns: list[str] | None, rows: int) -> Iterator[Any]:
    """Consecutive chunks of about ``rows`` rows of file ``index`` of a Parquet table, as the table reads them (:func:`_as_read`)."""
    for chunk in _compat.iter_parquet_chunks(xdf, source.paths[index], _stored(source, columns), rows):
        yield _as_read(chunk, source, index, columns)


def convert_columns(frame: Any, source: TableSource) -> Any:
    """``frame`` with the conversions of :func:`arrow_kind` done, alike on either arm.

    Decimals become float64, durations seconds (float64), dictionary-encoded values their
    values (categories are the plan's, not the file's dictionary).
    """
    for name, (_, conversion, _) in source.arrow_kinds.items():
        if not conversion or conversion == "skip" or name not in frame.columns:
            continue
        s = frame[name]
        if str(s.dtype) == "category":
            kind = getattr(s.cat.categories.dtype, "kind", "")
            s = s.astype("float64") if kind in ("i", "u", "f", "b") else s.astype(s.cat.categories.dtype)
        if conversion == "float64":
            s = s.astype("float64")
        elif conversion == "seconds":
            s = s.dt.total_seconds() if str(s.dtype).startswith("timedelta") else s.astype("float64")
        frame[name] = s
    return frame


def fingerprint(source: TableSource) -> str:
    """The files a table is read from, as they are now: resolved paths, sizes, modification and change times, inodes.

    The file the user named is part of it too when the arms read a copy (a UTF-8 copy of
    another encoding), so that a change to it is seen.
    """
    import json

    files = sorted(set(source.paths) | ({source.original} if source.original.is_file() else set()))
    parts = []
    for path in files:
        try:
            st = path.stat()
            # The inode and the change time too: a file rewritten in place with its size and
            # modification time put back (``cp -p``, ``rsync -t``) has a new change time.
            parts.append([str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns])
        except OSError:
            parts.append([str(path), None, None])
    return hashlib.sha256(json.dumps([str(source.original.resolve()), parts]).encode()).hexdigest()


def check_unchanged(source: TableSource) -> None:
    """Refuse to read ``source`` when its files are not what planning read (cut, replaced, removed)."""
    if source.fingerprint and fingerprint(source) != source.fingerprint:
        missing = [p for p in (source.original, *source.paths) if not p.exists()]
        how = f"{str(missing[0])!r} no longer exists" if missing else "its size, modification or change time differs"
        raise AccelError(
            f"--data: the file changed since it was planned ({how}): the plan's rows, columns and split "
            f"no longer match {str(source.original)!r}; run again once it is complete"
        )


def planned_source(source: TableSource) -> TableSource:
    """``source`` with the fingerprint of its files as they are now (taken when planning reads them)."""
    return replace(source, fingerprint=fingerprint(source))


def infinite_as_missing(frame: Any) -> Any:
    """``frame`` with every infinite float value missing, on either arm (pandas NaN, cuDF null).

    Every model here reads a missing value as absent (XGBoost's ``missing=NaN``; the imputer in
    front of the scikit-learn and cuML models); an infinity is treated the same way instead of
    failing one arm. The target never gets here with an infinity: planning refuses it
    (:func:`accel.guards.check_target`).
    """
    for name in frame.columns:
        column = frame[name]
        if getattr(column.dtype, "kind", "") == "f":
            infinite = column.abs() == float("inf")
            if bool(infinite.any()):
                frame[name] = column.mask(infinite)
    return frame


# --------------------------------------------------------------------------- planning reads (host)


def read_head(source: TableSource, rows: int) -> Any:
    """The first ``rows`` rows with pandas (column kinds are inferred from them)."""
    import pandas as pd
    import pyarrow.parquet as pq

    if source.kind == "parquet":
        import pyarrow as pa

        frames, left = [], rows
        for i, path in enumerate(source.paths):
            batches = []
            with pq.ParquetFile(path) as reader:  # closed at once: its row-group buffers go with it
                for batch in reader.iter_batches(batch_size=min(left, 65536), columns=source.file_columns):
                    batches.append(batch.slice(0, left))
                    if (left := left - batch.num_rows) <= 0:
                        break
            if batches:
                # One conversion per file, Arrow's buffers released column by column as pandas
                # takes them: the head is held once, not as batches, their frames and a concat.
                table = pa.Table.from_batches(batches)
                del batches
                frame = table.to_pandas(self_destruct=True, split_blocks=True)
                del table
                frames.append(_as_read(frame, source, i))
            if left <= 0:
                break
        frames = frames or [pd.DataFrame(columns=list(source.columns))]  # a table with no rows
        out = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        # Columns not read (nested types) stay, empty, in file order: the plan lists them as dropped.
        return out.reindex(columns=list(source.columns)).head(rows)
    # The C parser reads a prefix; text stays text (dates parsed later with one format on both arms).
    head = pd.read_csv(source.paths[0], sep=source.delimiter or ",", nrows=rows, low_memory=False)
    if len(head) < rows:
        # The whole file was read, by a parser that fills short rows with missing values. The CPU
        # arm's reader (pyarrow) refuses such rows: find them now, not in the middle of a run.
        # (Longer files meet pyarrow here anyway: the whole target column is read with it.)
        check_row_widths(source)
    return head


T = TypeVar("T")

#: Bytes pyarrow's CSV readers here take at a time when a row may be long. A row must fit in one
#: block: pyarrow's default (1 MB) refuses a row holding a long text field ("straddling object").
CSV_BLOCK_BYTES = 1 << 26
#: Bytes a planning read (the target column, the categories' values) streams at a time first:
#: pyarrow's streaming reader reads several blocks ahead, so the block size sets the read's
#: peak (one column of a 685 MB file: 821 MB above the start with 64 MB blocks, 169 MB with
#: 1 MB). A row longer than this is read again with :data:`CSV_BLOCK_BYTES`.
CSV_STREAM_BLOCK_BYTES = 1 << 20


def check_row_widths(source: TableSource) -> None:
    """Raise ValueError naming the first CSV row whose field count differs from the header's."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    bad: list[Any] = []  # the row pyarrow refused, which ends the read

    def handler(row: Any) -> str:
        bad.append(row)
        return "error"

    first = list(source.columns[:1])  # one column is enough to count fields (none: pyarrow reads them all)
    try:
        # The whole-file reader, not the streaming one (the file is small: pandas read it whole).
        # A streaming reader's last read-ahead can finish on Arrow's I/O thread after the loop,
        # and drop the reader there, and with it this Python handler: at interpreter exit that
        # thread cannot take the GIL and the process aborts ("terminate called without an
        # active exception").
        pcsv.read_csv(
            source.paths[0],
            read_options=pcsv.ReadOptions(use_threads=False, block_size=CSV_BLOCK_BYTES),  # one thread: row numbers known
            parse_options=pcsv.ParseOptions(delimiter=source.delimiter or ",", invalid_row_handler=handler),
            convert_options=pcsv.ConvertOptions(include_columns=first, column_types=dict.fromkeys(first, pa.string())),
        )
    except pa.ArrowInvalid:
        if not bad:
            raise
        row = bad[0]
        where = f"line {row.number}" if row.number is not None else "a row"  # the file's line, 1-based
        raise ValueError(
            f"{where} has {row.actual_columns} fields where the header has {row.expected_columns} "
            f"({row.text[:60]!r}); the CPU arm's reader (pyarrow) refuses such rows: fix or remove it"
        ) from None


def read_column(source: TableSource, column: str) -> Any:
    """One whole column with pandas (the target: rows, task and split come from all of it).

    A CSV column is read with pyarrow's streaming reader, one block at a time, with the options
    pandas' pyarrow engine uses (its missing-value strings; an all-missing column as float64):
    pandas' reader holds the whole file in memory to return one column (1.4 GB for a 530 MB
    file). Should a later block not fit the type the first one gave (integers, then text), the
    column is read by pandas as before.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pcsv

    if source.kind == "parquet":
        return read_source(pd, source, [column])[column]
    convert = pcsv.ConvertOptions(include_columns=[column], strings_can_be_null=True, null_values=_compat.csv_na_values())
    try:
        table = _streamed(source, convert, lambda reader: reader.read_all())
        if pa.types.is_null(table.schema.field(0).type):
            table = table.cast(pa.schema([pa.field(column, pa.float64())]))
        return table.to_pandas()[column]
    except Exception:  # noqa: BLE001 - pyarrow's streaming reader fixes types on the first block
        return _compat.read_csv(pd, source.paths[0], [column], delimiter=source.delimiter or ",")[column]


def _streamed(source: TableSource, convert: Any, use: Callable[[Any], T]) -> T:
    """``use(reader)``, ``reader`` pyarrow's streaming reader of ``source``'s CSV file with the
    ConvertOptions ``convert``, in small blocks; again in large ones where a row is longer than a
    small block."""
    import pyarrow.csv as pcsv

    def read(block_bytes: int) -> T:
        options, parse = pcsv.ReadOptions(block_size=block_bytes), pcsv.ParseOptions(delimiter=source.delimiter or ",")
        return use(pcsv.open_csv(source.paths[0], read_options=options, parse_options=parse, convert_options=convert))

    try:
        return read(CSV_STREAM_BLOCK_BYTES)
    except Exception as exc:
        if "straddl" not in str(exc):  # pyarrow refused a row for being longer than its block
            raise
    return read(CSV_BLOCK_BYTES)


def column_uniques(source: TableSource, columns: list[str]) -> dict[str, list[Any]]:
    """Distinct non-null values of ``columns`` over the whole file, streamed with pyarrow."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    if not columns:
        return {}
    seen: dict[str, set] = {c: set() for c in columns}

    def add(batches: Iterable[Any], names: list[str]) -> None:
        for batch in batches:
            for c in names:
                seen[c].update(v for v in pc.unique(batch.column(c).drop_null()).to_pylist() if v is not None)

    if source.kind == "parquet":
        for key, value in (pair for pairs in source.partitions for pair in pairs):
            if key in seen:
                seen[key].add(value)
        stored = [c for c in columns if c in set(source.file_columns)]
        frames = (frame for path in source.paths if stored for frame in _compat.iter_parquet_chunks(pd, path, stored, 65536))
        add((pa.Table.from_pandas(convert_columns(frame, source), preserve_index=False) for frame in frames), stored)
    else:
        text = pcsv.ConvertOptions(
            include_columns=columns, column_types={c: pa.string() for c in columns}, strings_can_be_null=True
        )

        def read(reader: Any) -> None:
            for values in seen.values():
                values.clear()  # a read again with larger blocks starts afresh
            add(reader, columns)

        _streamed(source, text, read)
    return {c: list(v) for c, v in seen.items()}


# --------------------------------------------------------------------------- chunked reads (arms)


def iter_chunks(xdf: ModuleType, source: TableSource, columns: list[str], rows: int, dtypes: dict[str, str]):
    """``(first_row, frame)`` for consecutive chunks of about ``rows`` rows, in file order.

    Parquet: pyarrow record batches (pandas) or ``skip_rows``/``nrows`` reads (cuDF). CSV:
    pandas' chunked C parser, or cuDF byte ranges (a compressed file, which libcudf cannot read
    in byte ranges: pyarrow's streaming reader, moved to the device chunk by chunk); all with
    the plan's column types, so every chunk parses alike
    (:func:`accel._compat.iter_csv_chunks`). ``first_row`` counts the rows of the chunks before,
    so a chunk's rows are file rows ``first_row`` onwards (:func:`planned_rows`).
    """
    start = 0
    check_unchanged(source)
    chunks = (
        (chunk for i in range(len(source.paths)) for chunk in _file_chunks(xdf, source, i, list(columns), rows))
        if source.kind == "parquet"
        else _compat.iter_csv_chunks(xdf, source.paths[0], list(source.columns), columns, rows, dtypes, source.delimiter or ",")
    )
    for frame in chunks:
        if len(frame):
            yield start, infinite_as_missing(frame.reset_index(drop=True))
            start += len(frame)


def planned_rows(positions: np.ndarray, start: int, frame: Any) -> tuple[Any, slice]:
    """The rows of a chunk that are at ``positions`` (ascending file rows), and where they are.

    Parameters
    ----------
    positions : ndarray
        Ascending file rows: the plan's rows (each with a target) or its training or test rows.
    start : int
        The file row of the chunk's first row.
    frame : DataFrame
        The chunk.

    Returns
    -------
    rows : DataFrame or None
        The chunk's rows at ``positions``, in file order; None when it holds none of them.
    where : slice
        Their place in ``positions`` (to pick their target-encoding folds).
    """
    lo, hi = np.searchsorted(positions, start), np.searchsorted(positions, start + len(frame))
    local = positions[lo:hi] - start
    return (frame.iloc[local] if len(local) else None), slice(int(lo), int(hi))


class ColumnarCache:
    """The chunks a streamed run reads, parsed once and then kept as Arrow IPC.

    The first pass reads the source with the arm's own reader (:func:`iter_chunks`) and writes
    each chunk, as Arrow, to a file in a private temporary folder under the cache folder; every
    later pass reads the chunks back from that file (:func:`accel._compat.from_arrow`: pandas on
    the CPU arm, cuDF on the GPU arm) instead of parsing the CSV again. Only one chunk is in
    memory at a time. A pass abandoned before the end (an out-of-memory retry with smaller
    batches) leaves no cache; a cache that cannot be written (a full disk) is given up and the
    source is read again in each pass. :meth:`close` removes the folder.
    """

    def __init__(self, xdf: ModuleType, source: TableSource, columns: list[str], dtypes: dict[str, str]):
        self.xdf, self.source, self.columns, self.dtypes = xdf, source, list(columns), dtypes
        self.folder: Path | None = None
        self.path: Path | None = None
        self.complete = False
        self.failed: str | None = None

    def describe(self) -> dict[str, Any]:
        size = self.path.stat().st_size if self.complete and self.path is not None and self.path.exists() else None
        return {"format": "arrow-ipc", "complete": self.complete, "bytes": size, "failed": self.failed}

    def chunks(self, rows: int):
        """``(first_row, frame)`` for consecutive chunks of at most ``rows`` rows, in file order."""
        yield from self._read(rows) if self.complete else self._tee(rows)  # (a failed cache: no writes)

    def scratch(self) -> Path:
        """The run's private temporary folder (created on first use; :meth:`close` removes it).

        Owned by this process (:func:`accel.scratch.owned_folder`): a run killed before it
        could remove it (SIGKILL) leaves it to the next streamed run, which reclaims it."""
        if self.folder is None:
            from accel import scratch

            self.folder = scratch.owned_folder(cache_dir() / "stream", "accel-stream-")
        return self.folder

    def _tee(self, rows: int):
        import pyarrow as pa

        writer = None
        try:
            self.path = self.scratch() / "chunks.arrow" if self.failed is None else self.path
        except OSError as exc:  # the source is read without a cache, now and in each later pass
            self.failed = f"no cache folder ({type(exc).__name__})"
        try:
            for start, frame in iter_chunks(self.xdf, self.source, self.columns, rows, self.dtypes):
                if self.failed is None:
                    try:
                        table = _compat.to_arrow(frame)
                        if writer is None:
                            writer = pa.ipc.new_file(str(self.path), table.schema)
                        writer.write_table(table)
                        del table
                    except (OSError, pa.ArrowException) as exc:  # a full disk: read the source again next time
                        self.failed = first_line(exc, 120)
                yield start, frame
            if writer is not None and self.failed is None:
                writer.close()
                writer = None
                self.complete = True
        finally:
            if writer is not None:
                with contextlib.suppress(Exception):  # the file is removed below anyway
                    writer.close()
            if not self.complete and self.path is not None:  # abandoned, failed, or nothing written
                self.path.unlink(missing_ok=True)

    def _read(self, rows: int):
        """Chunks of ``rows`` rows (the last one shorter), whatever record batches the file holds:
        the first pass's frames reach Arrow in pieces (pyarrow's CSV reader makes 32,768-row
        blocks), and each later pass must cut the table as the plan does, or XGBoost's
        external-memory matrix gets a page per piece."""
        import pyarrow as pa

        start = 0
        with pa.OSFile(str(self.path)) as f:  # read, not memory-mapped: only one batch is resident
            reader = pa.ipc.open_file(f)
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            for table in _compat.tables_of(batches, reader.schema, max(rows, 1)):
                yield start, _compat.from_arrow(self.xdf, table)
                start += table.num_rows

    def close(self) -> None:
        from accel import scratch

        scratch.release(self.folder)
        self.folder, self.path, self.complete = None, None, False
