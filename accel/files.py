"""Reading and writing the files accel is pointed at, safely.

- :func:`regular_files`: the files under a folder that match a pattern, regular files only
  (a FIFO would block a reader forever, a link to ``/dev/zero`` never ends); the others are
  returned with the reason, so a caller can list them as not used.
- :func:`write_new`: the one writer of every file accel makes. The bytes (or what a writer
  function puts in a temporary file) go beside the target and are linked into place, so a
  file is never half-written. What happens to a name that exists is the caller's choice
  (``exists``): a file the user named is refused, one line naming it and ``--overwrite``
  (:data:`REFUSE`), or replaced when ``--overwrite`` says so (:data:`REPLACE`, also accel's
  own caches); a name accel chose gets the next free sequence number, ``report-001.html``
  (:data:`NUMBER`). Something that is not a regular file (a folder, a FIFO) is never
  written over. Created with the permissions of any file the user writes
  (``0666 & ~umask``), as run records are. A failure (a full disk) removes the temporary
  file and is one :class:`~accel.errors.AccelError` line.
- :func:`os_error_line`: an ``OSError`` as one line that names the file and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final, Literal

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
    return None if stat.S_ISREG(mode) else next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def regular_files(folder: Path, pattern: str) -> tuple[list[Path], list[tuple[Path, str]]]:
    """``(regular files, [(other path, why skipped)])`` matching ``pattern`` under ``folder``, recursively, sorted.

    Sub-folders that are symbolic links are followed (their files are part of the folder, as a
    reader that lists the folder sees them); one that leads back into a folder already walked
    (a loop) is skipped, with the reason.
    """
    import fnmatch

    files: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    seen: set[str] = set()

    def unlisted(exc: OSError) -> None:
        if os.path.abspath(exc.filename or "") == os.path.abspath(folder):
            raise exc  # the folder itself: the caller says it cannot be read
        skipped.append((Path(exc.filename or folder), f"cannot be listed ({exc.strerror or type(exc).__name__})"))

    for here, dirs, names in os.walk(folder, onerror=unlisted, followlinks=True):
        real = os.path.realpath(here)
        if real in seen:
            skipped.append((Path(here), "a link back into a folder already read (a loop of links)"))
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        for name in fnmatch.filter(names, pattern):  # (both lists are sorted at the end)
            path = Path(here) / name
            if (kind := file_kind(path)) is None:
                files.append(path)
            elif kind != "a folder":
                skipped.append((path, f"not a regular file ({kind})"))
    return sorted(files), sorted(skipped)


def linked_folders(folder: Path, files: list[Path]) -> list[Path]:
    """The sub-folders of ``folder`` that are symbolic links and hold some of ``files``."""
    parents = {folder / parent for path in files for parent in list(path.relative_to(folder).parents)[:-1]}
    return sorted(p for p in parents if p.is_symlink())


def sequenced(path: Path, seq: int) -> Path:
    """``report.html`` -> ``report-001.html`` (``seq`` 0 is the name itself)."""
    return path if seq == 0 else path.with_name(f"{path.stem}-{seq:03d}{path.suffix}")


#: What to do about an OSError that is the machine's answer, by its errno.
_ENVIRONMENT_ADVICE = {
    errno.ENAMETOOLONG: "a name in the path is longer than the filesystem allows (most take 255 bytes per name): "
    "choose a shorter one",
    errno.ELOOP: "the path goes round in a loop of symbolic links: give the real path",
    **dict.fromkeys(
        (errno.ENOSPC, errno.EDQUOT), "free some space, or choose another folder (--out; the cache: ACCEL_CACHE_DIR)"
    ),
    errno.EROFS: "choose a writable folder (--out; the cache: ACCEL_CACHE_DIR)",
    **dict.fromkeys((errno.EACCES, errno.EPERM), "check the permissions, or choose another folder"),
}
#: OSErrors that are the machine's answer, not a bug: ``accel.cli.main.main`` reports them as one line.
ENVIRONMENT_ERRNOS = {*_ENVIRONMENT_ADVICE, errno.EFBIG, errno.EMFILE, errno.ENFILE, errno.ENOMEM}
#: The most characters of a path an error line quotes.
QUOTED_PATH_CHARS = 160


def environment_error_line(exc: OSError) -> str:
    """``No space left on device (/runs/x.json); free some space, or choose another folder ...``."""
    text = repr(str(exc.filename))  # cut in the middle beyond QUOTED_PATH_CHARS
    half = QUOTED_PATH_CHARS // 2 - 2
    if len(text) > QUOTED_PATH_CHARS:
        text = f"{text[:half]}...{text[-half:]} ({len(str(exc.filename)):,} characters)"
    where = f" ({text})" if exc.filename else ""
    advice = _ENVIRONMENT_ADVICE.get(exc.errno or 0, "")
    return f"{exc.strerror or type(exc).__name__}{where}" + (f"; {advice}" if advice else "")


def os_error_line(exc: OSError, what: str, hint: str = "") -> str:
    """``cannot write <what> (No space left on device); free some space or <hint>``."""
    reason = exc.strerror or type(exc).__name__
    advice = {
        errno.ENOSPC: "free some space",
        errno.EDQUOT: "free some space (disk quota exceeded)",
        errno.EROFS: "the filesystem is read-only",
        **dict.fromkeys((errno.EACCES, errno.EPERM), "check the permissions"),
    }.get(exc.errno or 0, "")
    tail = "; ".join(x for x in (advice, hint) if x)
    return f"cannot write {what} ({reason})" + (f"; {tail}" if tail else "")


#: ``exists`` of :func:`write_new`: a name that exists gets the next free sequence number.
NUMBER: Final = "number"
#: ``exists`` of :func:`write_new`: a name that exists is refused (the user named it; no ``--overwrite``).
REFUSE: Final = "refuse"
#: ``exists`` of :func:`write_new`: a regular file of that name is replaced (``--overwrite``, or accel's cache).
REPLACE: Final = "replace"

Exists = Literal["number", "refuse", "replace"]


def exists_policy(overwrite: bool) -> Exists:
    """:data:`REPLACE` with ``--overwrite``, else :data:`REFUSE`: for a path the user named."""
    return REPLACE if overwrite else REFUSE


def refuse_existing(path: Path, what: str, exists: Exists) -> None:
    """Refuse, before any work, to write ``path`` where :func:`write_new` would refuse it.

    One :class:`AccelError` line naming the file: it exists and ``exists`` is :data:`REFUSE`, or
    it is not a regular file (a folder, a FIFO), which nothing replaces.
    """
    path = Path(path)
    if not os.path.lexists(path):
        return
    kind = file_kind(path)
    if kind is not None and kind not in ("missing", "a broken link"):
        raise AccelError(f"{what} {str(path)!r} is {kind}, not a file accel may write: choose another name")
    if exists == REFUSE:
        raise AccelError(f"{what} {str(path)!r} already exists: choose another name, or add --overwrite to replace it")


def write_new(
    path: Path,
    data: bytes | Callable[[Path], None],
    what: str = "the file",
    hint: str = "",
    exists: Exists = NUMBER,
    first: int = 0,
) -> Path:
    """Write ``data`` to ``path`` whole or not at all; returns the path written.

    Parameters
    ----------
    path : Path
        Where the file goes; its folder is created if needed.
    data : bytes or callable
        The bytes, or a function that writes the file at the temporary path it is given
        (pyarrow's writers, matplotlib's ``savefig``).
    what, hint : str
        What the file is and how to choose another place, for the one-line error
        (``"the report"``, ``"choose another --out"``).
    exists : {"number", "refuse", "replace"}
        A name that exists: the first free ``<stem>-NNN<suffix>`` (:data:`NUMBER`, a name
        accel chose), refused (:data:`REFUSE`, a name the user gave), or replaced
        (:data:`REPLACE`, ``--overwrite``). Not a regular file: always refused.
    first : int
        With :data:`NUMBER`, the first sequence number tried (run records start at 1:
        ``<stem>-001.json``).

    Notes
    -----
    The data go to a temporary file in the same folder first, which is hard-linked to the free
    name (a link fails if the name exists, so nothing is replaced unless :data:`REPLACE` says
    so, which renames over it) and removed in every case.
    """
    path = Path(path)
    if exists != NUMBER:
        refuse_existing(path, what, exists)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The real suffix last: a writer function may choose the format by it (savefig).
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes it private; this is a file for the user: open()'s mode
        _write_synced(fd, tmp, data)
        if exists == REPLACE:
            os.replace(tmp, path)
            tmp = None
            return path
        return _link_free_name(tmp, path, exists, first, what)
    except OSError as exc:
        raise AccelError(os_error_line(exc, f"{what} {str(path)!r}", hint)) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _write_synced(fd: int, tmp: str, data: bytes | Callable[[Path], None]) -> None:
    """Write ``data`` to the open temporary file ``fd`` (or let ``data`` write the file at ``tmp``), on disk when it returns."""
    with os.fdopen(fd, "wb") as f:
        if callable(data):
            data(Path(tmp))
        else:
            f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _link_free_name(tmp: str, path: Path, exists: Exists, first: int, what: str) -> Path:
    """Hard-link the written file ``tmp`` to ``path`` (with :data:`NUMBER`, to its first free
    sequenced name from ``first``); refused when the name is taken."""
    for seq in range(first, MAX_SEQUENCE + 1) if exists == NUMBER else (0,):
        with contextlib.suppress(FileExistsError):  # taken: the next number
            os.link(tmp, target := sequenced(path, seq))
            return target
    if exists == REFUSE:  # made by someone else since the check above
        raise AccelError(f"{what} {str(path)!r} already exists: choose another name, or add --overwrite to replace it")
    raise AccelError(f"no free name for {str(path)!r} (tried up to {sequenced(path, MAX_SEQUENCE).name})")


def file_sha256(path: Path) -> str:
    """The SHA-256 of the file ``path``, read in blocks of 1 MiB."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
