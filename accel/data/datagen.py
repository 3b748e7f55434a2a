"""The db-benchmark data sets, generated with NumPy and written with pyarrow.

The column recipes follow h2oai/db-benchmark's R generators (``_data/groupby-datagen.R`` and
``_data/join-datagen.R``); the random numbers are our own (NumPy's PCG64, seed 108 by default,
as the R scripts ``set.seed(108)``), so files are not byte-identical to the benchmark's but have
the same columns, types, cardinalities and NA pattern. Answers are checked across arms, not
against published checksums.

Groupby, ``G1_<N>_<K>_<nas>_<sort>``:

- ``id1``, ``id2``: ``"id%03d"`` of 1..K (few large groups / few small groups, strings);
- ``id3``: ``"id%010d"`` of 1..N/K (many groups, strings);
- ``id4``, ``id5``: integers 1..K; ``id6``: integers 1..N/K;
- ``v1``: integers 1..5; ``v2``: integers 1..15; ``v3``: uniform(0, 100) rounded to 6 places.
- With ``nas`` percent: in each id column that share of its distinct values becomes NA in
  every row holding it; in each v column that share of rows becomes NA.

Join, ``J1_<N>_NA_<nas>_0`` (left, N rows) and three right tables of N/1e6, N/1e3 and N rows:
keys are drawn so that 90 % of each key set is shared by both sides, 10 % only on the left and
10 % only on the right; ``id4``/``id5``/``id6`` are ``"id<n>"`` strings of ``id1``/``id2``/``id3``;
the left has ``v1``, the right ``v2`` (uniform(0, 100), 6 places). The benchmark needs N >= 1e7
so that the small table has at least 10 rows; here the small table has at least 10 rows and the
medium one at least 100, so N >= 1000 works for tests (the small and medium tables are then
larger than N/1e6 and N/1e3).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from accel.errors import AccelError

#: Columns of the groupby table, in the benchmark's order.
GROUPBY_COLUMNS = ("id1", "id2", "id3", "id4", "id5", "id6", "v1", "v2", "v3")

DEFAULT_SEED = 108
FORMATS = ("csv", "parquet")


def pretty_count(n: int) -> str:
    """``1e7`` for 10,000,000 (as the benchmark names files); other counts as plain digits."""
    digits = str(int(n))
    stripped = digits.rstrip("0")
    return f"{stripped}e{len(digits) - 1}" if len(stripped) == 1 and len(digits) > 1 else digits


def groupby_name(n: int, k: int, nas: int = 0, sort: bool = False) -> str:
    return f"G1_{pretty_count(n)}_{pretty_count(k)}_{nas}_{int(sort)}"


def _check_counts(n: int, k: int | None = None, nas: int = 0) -> None:
    if n < 1:
        raise AccelError(f"N must be a positive number of rows, got {n}")
    if k is not None and not 1 <= k <= n:
        raise AccelError(f"K must be between 1 and N ({n}), got {k}")
    if not 0 <= nas <= 100:
        raise AccelError(f"--nas must be a percentage between 0 and 100, got {nas}")


def _column(values: np.ndarray, null: np.ndarray | None, labels: Any = None) -> Any:
    """A pyarrow column of ``values``: integers as int32, or with ``labels`` as a dictionary column
    of those labels from 1-based codes (strings are built once per distinct value); others as they are."""
    import pyarrow as pa

    if values.dtype.kind != "i":
        return pa.array(values, mask=null)
    codes = pa.array((values - (0 if labels is None else 1)).astype(np.int32), mask=null)
    return codes if labels is None else pa.DictionaryArray.from_arrays(codes, labels)


def _null_values(rng: np.random.Generator, values: np.ndarray, nas: int) -> np.ndarray | None:
    """The NA mask of an id column: ``nas`` % of its distinct values become NA wherever they occur."""
    if not nas:
        return None
    distinct = np.unique(values)
    count = int(len(distinct) * nas / 100)
    return np.isin(values, rng.choice(distinct, size=count, replace=False)) if count else None


def _null_rows(rng: np.random.Generator, n: int, nas: int) -> np.ndarray | None:
    """The NA mask of a value column: ``nas`` % of the rows, drawn at random."""
    count = int(n * nas / 100)
    if not count:
        return None
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, size=count, replace=False)] = True
    return mask


def groupby_table(n: int, k: int, nas: int = 0, sort: bool = False, seed: int = DEFAULT_SEED) -> Any:
    """The groupby data set as a pyarrow Table (``groupby-datagen.R``'s recipe).

    Parameters
    ----------
    n : int
        Rows.
    k : int
        Groups of the low-cardinality keys (``id1``, ``id2``, ``id4``, ``id5``); the
        high-cardinality keys (``id3``, ``id6``) have ``n // k`` groups.
    nas : int, default 0
        Percentage of NA (see the module docstring).
    sort : bool, default False
        Sort the rows by ``id1``..``id6`` (NA first), as the benchmark's sort flag does.
    seed : int, default 108
    """
    import pyarrow as pa

    _check_counts(n, k, nas)
    rng = np.random.default_rng(seed)
    nk = max(n // k, 1)
    data = {c: rng.integers(1, groups + 1, n) for c, groups in zip(GROUPBY_COLUMNS[:6], (k, k, nk, k, k, nk))}
    data |= {"v1": rng.integers(1, 6, n), "v2": rng.integers(1, 16, n), "v3": np.round(rng.uniform(0, 100, n), 6)}
    nulls = {c: _null_values(rng, v, nas) if c.startswith("id") else _null_rows(rng, n, nas) for c, v in data.items()}

    if sort:
        # NA sorts first, as data.table's setkeyv puts it; zero-padded labels sort like their numbers.
        keys = [data[c] if (mask := nulls[c]) is None else np.where(mask, 0, data[c]) for c in reversed(GROUPBY_COLUMNS[:6])]
        order = np.lexsort(keys)
        data = {c: v[order] for c, v in data.items()}
        nulls = {c: (m[order] if m is not None else None) for c, m in nulls.items()}

    short = pa.array([f"id{i:03d}" for i in range(1, k + 1)], type=pa.string())
    long = pa.array([f"id{i:010d}" for i in range(1, nk + 1)], type=pa.string())
    labels = {"id1": short, "id2": short, "id3": long}
    columns = {c: _column(v, nulls[c], labels.get(c)) for c, v in data.items()}
    return pa.table(columns)


# --------------------------------------------------------------------------- join


def _split_keys(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``split_xlr``: a permutation of 1..1.1n cut into shared (0.9n), left-only and right-only (0.1n each)."""
    n_x = int(round(n * 0.9))
    n_side = n - n_x
    keys = rng.permutation(n_x + 2 * n_side) + 1
    return keys[:n_x], keys[n_x : n_x + n_side], keys[n_x + n_side :]


def _sample_all(rng: np.random.Generator, keys: np.ndarray, size: int) -> np.ndarray:
    """``sample_all``: every key at least once, the rest drawn with replacement, shuffled.

    ``keys`` are never more than ``size``: a key set is as large as the table it is drawn for
    (:func:`_split_keys`), or smaller (the left table holds every key set; a right table its own
    and those of the smaller right tables, :func:`join_sizes`)."""
    extra = rng.choice(keys, size=size - len(keys), replace=True)
    return rng.permutation(np.concatenate([keys, extra]))


def _with_id_strings(keys: dict[str, Any]) -> dict[str, Any]:
    """Integer key columns ``id1``, ``id2``, ... followed by their ``"id<n>"`` strings
    (``sprintf("id%.0f", ...)``) as ``id4``, ``id5``, ...; NA where the key is NA (a null joins to null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return keys | {
        f"id{j + 4}": pc.binary_join_element_wise("id", pc.cast(c, pa.string()), "") for j, c in enumerate(keys.values())
    }


#: The smallest left table: its three right tables must differ in size (they are told apart by it).
MIN_JOIN_ROWS = 1000


def join_sizes(n: int) -> dict[str, int]:
    """Rows of the three right tables for a left table of ``n`` rows: N/1e6, N/1e3 and N, with
    at least 10 rows in the small one and ten times that in the medium one; an :class:`AccelError`
    for ``n`` below :data:`MIN_JOIN_ROWS`."""
    if n < MIN_JOIN_ROWS:
        raise AccelError(f"the join data needs N >= {MIN_JOIN_ROWS} rows (three right tables of different sizes), got {n}")
    small = max(n // 10**6, 10)
    return {"small": small, "medium": max(n // 10**3, 10 * small), "big": n}


def join_names(n: int, nas: int = 0) -> dict[str, str]:
    return {"x": f"J1_{pretty_count(n)}_NA_{nas}_0"} | {
        role: f"J1_{pretty_count(n)}_{pretty_count(rows)}_{nas}_0" for role, rows in join_sizes(n).items()
    }


def join_tables(n: int, nas: int = 0, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """The join data sets as pyarrow Tables: ``{"x", "small", "medium", "big"}`` (``join-datagen.R``)."""
    import pyarrow as pa

    _check_counts(n, None, nas)
    rng = np.random.default_rng(seed)
    sizes = join_sizes(n)
    roles = ("small", "medium", "big")
    keys = [_split_keys(rng, sizes[role]) for role in roles]
    x_ids = {c: _sample_all(rng, np.concatenate([shared, left]), n) for c, (shared, left, _) in zip(("id1", "id2", "id3"), keys)}
    v1 = np.round(rng.uniform(0, 100, n), 6)
    x_keys = _with_id_strings({c: _column(v, _null_values(rng, v, nas)) for c, v in x_ids.items()})  # id4..id6 of id1..id3
    tables = {"x": pa.table(x_keys | {"v1": _column(v1, _null_rows(rng, n, nas))})}

    # Each right table: the first 1, 2 or 3 keys (id1, id2, id3 and their strings id4, id5, id6), then v2.
    for i, role in enumerate(roles):
        rows = sizes[role]
        values = [_sample_all(rng, np.concatenate([shared, right]), rows) for shared, _, right in keys[: i + 1]]
        keys_and_strings = _with_id_strings({f"id{j + 1}": _column(v, None) for j, v in enumerate(values)})
        tables[role] = pa.table(keys_and_strings | {"v2": _column(np.round(rng.uniform(0, 100, rows), 6), None)})
    return tables


# --------------------------------------------------------------------------- writing


def table_format(path: Path) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    suffix = {"pq": "parquet"}.get(suffix, suffix)
    if suffix not in FORMATS:
        raise AccelError(f"cannot tell the format of {str(path)!r}: name it .csv or .parquet")
    return suffix


def write_table(table: Any, path: Path, exists: str = "refuse") -> Path:
    """Write a pyarrow Table as CSV (unquoted, NA as an empty field, like ``fwrite``) or Parquet.

    Through :func:`accel.files.write_new`: the file appears whole or not at all, and a file
    that exists is refused unless ``exists`` is ``"replace"`` (``--overwrite``).
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from accel.files import write_new

    path = Path(path)
    fmt = table_format(path)

    def write(tmp: Path) -> None:
        if fmt == "csv":
            plain = [col.cast(col.type.value_type) if pa.types.is_dictionary(col.type) else col for col in table.columns]
            options = pacsv.WriteOptions(quoting_style="none")  # unquoted, NA as an empty field
            pacsv.write_csv(pa.table(plain, names=table.column_names), str(tmp), write_options=options)
        else:
            pq.write_table(table, str(tmp))

    return write_new(path, write, "the data file", "choose another OUT", exists=exists)  # type: ignore[arg-type]


#: Peak bytes of memory per row while generating and writing (measured: groupby about 100 B/row at
#: 1e7 rows, CSV and Parquet alike; join about 170 B per left row, its three right tables included),
#: with a margin.
BYTES_PER_ROW = {"groupby": 120, "join": 200}


def check_memory(n: int, kind: str, available: int | None = None) -> None:
    """Refuse, before anything is allocated or created, a data set this machine's memory cannot hold."""
    import psutil

    need = n * BYTES_PER_ROW[kind]
    available = psutil.virtual_memory().available if available is None else available
    if need > available:
        raise AccelError(
            f"{n:,} rows of {kind} data need about {need / 1e9:,.1f} GB of memory while generating "
            f"({BYTES_PER_ROW[kind]} bytes a row); this machine has {available / 1e9:,.1f} GB available: "
            f"use N of at most about {available // BYTES_PER_ROW[kind]:,}"
        )


def prepare_output(folder: Path, files: list[Path], exists: str = "refuse") -> None:
    """Check the output ``folder`` and the ``files`` to be written there before generating
    (generation of 1e8 rows takes a while): a file that exists is refused unless ``exists`` is
    ``"replace"`` (``--overwrite``).
    """
    from accel.cache import _writable_folder
    from accel.files import refuse_existing

    for file in files:
        refuse_existing(file, "the data file", exists)  # type: ignore[arg-type]
    if why := _writable_folder(folder):  # made if missing, and a file written and removed there
        raise AccelError(f"cannot write to {str(folder)!r} ({why})")


def rows_from_text(text: str) -> int:
    """``1e7``, ``10000000`` or ``10_000_000`` as an int (a positive whole number)."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        value = math.nan  # refused below, as an infinity is
    if not math.isfinite(value) or value < 1 or value != int(value):
        raise ValueError(f"must be a positive whole number such as 1e7, got {text!r}")
    return int(value)
