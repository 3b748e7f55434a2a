"""Run records: one JSON file per run, written whole or not at all, never overwritten.

Names are ``<UTC time stamp>-<workflow>-<sequence>.json``. The record is written to a temporary
file in the same folder and then hard-linked to its final name, which fails if that name
exists, so a record is never replaced and a reader never sees half of one. Speedups that could
not be measured are ``NaN`` (Python's ``json`` reads and writes it), never 0 and never a copy.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from accel.errors import AccelError

SCHEMA_VERSION = 1


def ensure_writable(folder: Path, what: str = "run records", option: str = "--out") -> Path:
    """Create ``folder`` if needed and prove it writable, before any long work starts.

    ``what`` and ``option`` name, in the error, what was to be written there and the flag
    that chooses another folder.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".accel-probe-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise AccelError(f"cannot write {what} to {str(folder)!r} ({reason}); choose a writable folder with {option}") from None
    return folder


def new_run_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def write_record(folder: Path, record: dict[str, Any], stem: str) -> Path:
    """Write ``record`` as ``<folder>/<stem>-<NNN>.json`` with the first free sequence number."""
    folder = Path(folder)
    text = json.dumps(record, indent=2, sort_keys=False, default=str) + "\n"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".accel-record-", suffix=".json")
    # mkstemp makes the file private (0600); a record is as readable as any file the user writes.
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        for seq in range(1, 10_000):
            path = folder / f"{stem}-{seq:03d}.json"
            try:
                os.link(tmp, path)  # fails if the name exists: never overwrite
                return path
            except FileExistsError:
                continue
        raise AccelError(f"no free record name for {stem!r} in {str(folder)!r}")
    finally:
        os.unlink(tmp)


def record_stem(workflow: str, now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y%m%d-%H%M%S}-{workflow}"


def load_record(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())
