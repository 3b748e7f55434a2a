"""Scratch folders that outlive no process, and a lock that lets one process at a time through.

A command that is killed (``kill -9``, the machine's out-of-memory killer) runs no clean-up, so
what it put in a scratch folder would stay forever (a streamed run's chunk cache is as big as
the table). Each scratch folder is therefore *owned*: :func:`owned_folder` creates it with a lock
file inside (``fcntl.flock``) that this process holds until :func:`release` removes the folder.
The kernel drops the lock when the process dies, however it dies, so the next command that makes
a folder of the same kind (:func:`reclaim`) finds the lock free and removes what was left.

:func:`exclusive` is the same lock held on a path while a block runs, blocking until it is free:
several processes creating one thing (an Optuna storage) do it one after the other.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The lock file inside each owned folder.
LOCK_NAME = ".accel-owner.lock"
#: A folder of the kind without its lock file yet is left alone this long (its maker is between
#: creating it and locking it).
NEW_FOLDER_GRACE_S = 60.0

#: The lock files this process holds open, by folder.
_HELD: dict[Path, int] = {}


def _lock(path: Path, blocking: bool) -> int:
    """An open descriptor of ``path`` holding its exclusive lock; not ``blocking``, BlockingIOError
    (an OSError) where another process holds it."""
    fd = os.open(path, os.O_RDONLY if path.is_dir() else os.O_RDONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        os.close(fd)
        raise
    return fd


def reclaim(root: Path, prefix: str) -> list[Path]:
    """Remove the folders ``root/prefix*`` that no live process owns; the folders removed.

    A folder whose lock is free was left by a process that died before removing it. One
    without a lock file is removed once it is older than :data:`NEW_FOLDER_GRACE_S`.
    """
    removed: list[Path] = []
    try:
        candidates = sorted(p for p in Path(root).glob(f"{prefix}*") if p.is_dir() and not p.is_symlink())
    except OSError:
        return removed
    for folder in candidates:
        if folder in _HELD:
            continue
        lock = folder / LOCK_NAME
        fd: int | None = None
        try:
            if not lock.exists():
                if time.time() - folder.stat().st_mtime < NEW_FOLDER_GRACE_S:
                    continue
            else:
                fd = _lock(lock, blocking=False)
        except OSError:
            continue  # its owner is alive (BlockingIOError), another user's folder, or gone meanwhile
        try:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def owned_folder(root: Path, prefix: str) -> Path:
    """A new folder ``root/prefix<random>`` that this process owns until :func:`release`.

    What dead processes left under ``root`` with the same prefix is reclaimed first.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    reclaim(root, prefix)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    try:
        _HELD[folder] = _lock(folder / LOCK_NAME, blocking=True)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def release(folder: Path | None) -> None:
    """Remove an owned folder and let go of its lock (nothing for None or a folder not owned)."""
    if folder is None:
        return
    folder = Path(folder)
    fd = _HELD.pop(folder, None)
    shutil.rmtree(folder, ignore_errors=True)
    if fd is not None:
        os.close(fd)


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of ``path`` (a folder, or a file that is created) while inside;
    waits until no other process holds it. The lock goes with the process if it dies."""
    fd = _lock(Path(path), blocking=True)
    try:
        yield
    finally:
        os.close(fd)
