"""Reading and writing the files accel is pointed at, safely.

- :func:`regular_files`: the files under a folder that match a pattern, regular files only
  (a FIFO would block a reader forever, a link to ``/dev/zero`` never ends); the others are
  returned with the reason, so a caller can list them as not used.
- :func:`write_new`: write bytes beside the target and link them into place, so a file is
  never half-written and never replaces another: a name that exists gets the next free
  sequence number (``report-001.html``). Created with the permissions of any file the user
  writes (``0666 & ~umask``), as run records are. A failure (a full disk) removes the
  temporary file and is one :class:`~accel.errors.AccelError` line.
- :func:`os_error_line`: an ``OSError`` as one line that names the file and what to do.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from accel.errors import AccelError

#: What kind of thing a path is, for "not a regular file" messages.
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)

#: Largest sequence number tried by :func:`write_new` before giving up.
MAX_SEQUENCE = 9999


def file_kind(path: Path | str) -> str | None:
    """None for a regular file (or a link to one); else what it is, e.g. ``a FIFO (named pipe)``.

    Missing paths and broken links say so. Never opens the path.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a broken link" if os.path.islink(path) else "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"
    if stat.S_ISREG(mode):
        return None
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "not a regular file"


def regular_files(folder: Path, pattern: str) -> tuple[list[Path], list[tuple[Path, str]]]:
    """``(regular files, [(other path, why skipped)])`` matching ``pattern`` under ``folder``, recursively, sorted."""
    files: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for path in sorted(Path(folder).rglob(pattern)):
        kind = file_kind(path)
        if kind is None:
            files.append(path)
        elif kind != "a folder":
            skipped.append((path, f"not a regular file ({kind})"))
    return files, skipped


def user_mode() -> int:
    """``0666`` less the umask: the mode ``open()`` gives a new file."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def sequenced(path: Path, seq: int) -> Path:
    """``report.html`` -> ``report-001.html`` (``seq`` 0 is the name itself)."""
    path = Path(path)
    if seq == 0:
        return path
    return path.with_name(f"{path.stem}-{seq:03d}{path.suffix}")


#: OSErrors that are the machine's answer, not a bug: ``accel.cli.main.main`` reports them as one line.
ENVIRONMENT_ERRNOS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EROFS,
    errno.EFBIG,
    errno.EACCES,
    errno.EPERM,
    errno.EMFILE,
    errno.ENFILE,
    errno.ENOMEM,
}


def environment_error_line(exc: OSError) -> str:
    """``No space left on device (/runs/x.json); free some space, or choose another folder ...``."""
    where = f" ({exc.filename})" if exc.filename else ""
    advice = {
        errno.ENOSPC: "free some space, or choose another folder (--out; the cache: ACCEL_CACHE_DIR)",
        errno.EDQUOT: "free some space, or choose another folder (--out; the cache: ACCEL_CACHE_DIR)",
        errno.EROFS: "choose a writable folder (--out; the cache: ACCEL_CACHE_DIR)",
        errno.EACCES: "check the permissions, or choose another folder",
        errno.EPERM: "check the permissions, or choose another folder",
    }.get(exc.errno or 0, "")
    return f"{exc.strerror or type(exc).__name__}{where}" + (f"; {advice}" if advice else "")


def os_error_line(exc: OSError, what: str, hint: str = "") -> str:
    """``cannot write <what> (No space left on device); free some space or <hint>``."""
    reason = exc.strerror or type(exc).__name__
    advice = {
        errno.ENOSPC: "free some space",
        errno.EDQUOT: "free some space (disk quota exceeded)",
        errno.EROFS: "the filesystem is read-only",
        errno.EACCES: "check the permissions",
        errno.EPERM: "check the permissions",
    }.get(exc.errno or 0, "")
    tail = "; ".join(x for x in (advice, hint) if x)
    return f"cannot write {what} ({reason})" + (f"; {tail}" if tail else "")


def write_new(path: Path, data: bytes, what: str = "the file", hint: str = "") -> Path:
    """Write ``data`` to ``path``, or to the first free ``<stem>-NNN<suffix>`` if ``path`` exists.

    Returns the path written. Whole or not at all: the bytes go to a temporary file in the same
    folder first, which is hard-linked to the free name (a link fails if the name exists, so
    nothing is ever replaced) and removed in every case. ``what`` and ``hint`` go into the
    one-line error (``hint``: how to choose another place, e.g. ``choose another --out``).
    """
    path = Path(path)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.fchmod(fd, user_mode())  # mkstemp makes it private; this is a file for the user
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        for seq in range(MAX_SEQUENCE + 1):
            target = sequenced(path, seq)
            try:
                os.link(tmp, target)
                return target
            except FileExistsError:
                continue
        raise AccelError(f"no free name for {str(path)!r} (tried up to {sequenced(path, MAX_SEQUENCE).name})")
    except OSError as exc:
        raise AccelError(os_error_line(exc, f"{what} {str(path)!r}", hint)) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
