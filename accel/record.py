"""Run records: one JSON file per run, written whole or not at all, never overwritten.

Everything accel writes goes under one folder, :func:`output_root`: ``$ACCEL_OUT_DIR``, else
``runs`` in the current folder (each command's ``--out`` / ``--results`` chooses another).
Every file accel names is ``<UTC date>-<what>-<NNN>.json`` (``2026-12-01-flights-003.json``,
``2026-12-01-models-cpu-001.json``): one date style, and the first free sequence number of the
day. A record's ``run_id`` is that name without ``.json``: the run is called the same in the
folder, in the record and in every table that lists it. The record is written to a temporary
file in the same folder and then hard-linked to its final name, which fails if that name
exists, so a record is never replaced and a reader never sees half of one. Older records
(``20261201-204516-flights-001.json`` holding ``run_id`` ``20261201T204516Z-a61fee9e``) are read
as they are.

Records (and every ``--json`` output) are strict JSON: a number that is not finite (a speedup
that could not be measured, a metric undefined on the rows) is written ``null``, and the
record's top-level ``nulls`` list says where and why, one entry per value:
``{"path": "/speedup/total", "value": "NaN", "reason": "not measured: the gpu arm was skipped"}``
(``path`` is a JSON Pointer, RFC 6901). :func:`loads` and :func:`load_record` read such records
back with those values as Python floats again (``nan``, ``inf``), and read older records that
hold bare ``NaN`` as they are.

Every record starts with :func:`record_head`: ``schema_version``, ``kind`` (what it is, one of
:data:`RECORD_KINDS`) and ``run_id``. Readers (``accel report``, ``accel experiments``) ask
:func:`kind_of`, which reads ``kind``, and infers it only for records written before records
carried one (``schema_version`` 1 or none).
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypedDict, get_args

from accel.errors import AccelError

#: 2: every record carries ``kind``; 3: its ``run_id`` is its file name.
SCHEMA_VERSION = 3
#: What a record holds: a paired or cluster run (``accel run``), a search (``accel hpo``), a
#: script compared (``accel compare``), a benchmark result (``accel bench``, with ``benchmark``
#: naming which), a scaling study (``accel scale``), an experiments snapshot (``accel experiments``),
#: new rows scored with a run's pipeline (``accel predict``).
RecordKind = Literal["run", "hpo", "compare", "bench", "scaling", "experiments", "predict"]
RECORD_KINDS: tuple[RecordKind, ...] = get_args(RecordKind)
#: The variable naming the folder everything accel writes goes under (default ``runs``).
OUT_ENV = "ACCEL_OUT_DIR"
#: The top-level key listing the values written as ``null`` because they were not finite.
NULLS_KEY = "nulls"
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _pointer(parts: list[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _unpointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def _null_reason(record: Any, parts: list[str | int], value: str) -> str:
    """Why a value is not finite, where the record says so; else what it was."""
    if parts and parts[0] == "speedup" and isinstance(record, dict) and isinstance(record.get("arms"), dict):
        status = {"skipped": "was skipped", "failed": "failed"}
        missing = [
            f"the {arm} arm {status.get(str(r.get('status')), str(r.get('status')))}"
            for arm, r in record["arms"].items()
            if isinstance(r, dict) and r.get("status") != "ok"
        ]
        if missing:
            return "not measured: " + " and ".join(missing)
    return {"NaN": "not a number", "Infinity": "infinite", "-Infinity": "infinite"}[value]


def strict(obj: Any) -> tuple[Any, list[dict[str, str]]]:
    """``obj`` with every non-finite float as None (NumPy scalars as Python numbers), and where
    those were: ``[{"path", "value", "reason"}]``."""
    nulls: list[dict[str, str]] = []

    def walk(value: Any, parts: list[str | int]) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, [*parts, str(k)]) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(v, [*parts, i]) for i, v in enumerate(value)]
        if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            name = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            nulls.append({"path": _pointer(parts), "value": name, "reason": _null_reason(obj, parts, name)})
            return None
        return value

    return walk(obj, []), nulls


def dumps(obj: Any, indent: int | None = 2) -> str:
    """``obj`` as strict JSON (``allow_nan=False``): non-finite numbers are ``null``, listed with
    their reason under the top-level ``nulls`` key of a mapping (see the module docstring).
    Every credential in it is hidden (:func:`accel.credentials.hidden`): this is what every
    record and every ``--json`` output is written with."""
    from accel.credentials import hidden

    clean, nulls = strict(hidden(obj))
    if isinstance(clean, dict):
        known = [n for n in clean.get(NULLS_KEY) or [] if isinstance(n, dict) and n.get("path") not in {m["path"] for m in nulls}]
        if nulls or known:
            clean = {**clean, NULLS_KEY: known + nulls}
    return json.dumps(clean, indent=indent, sort_keys=False, default=str, allow_nan=False)


def loads(text: str) -> Any:
    """A record from its text: the values listed in ``nulls`` become floats again (``nan``,
    ``inf``); older records with bare ``NaN`` are read as they are. A credential an older record
    holds is hidden (:func:`accel.credentials.hidden`), so no report shows it."""
    from accel.credentials import hidden

    try:
        record = hidden(json.loads(text))
    except RecursionError:  # [[[[...]]]] nested 200,000 deep: no record is; a ValueError like any bad JSON
        raise ValueError("not a record: JSON nested too deeply") from None
    if not isinstance(record, dict):
        return record
    for entry in record.get(NULLS_KEY) or []:
        if not isinstance(entry, dict) or entry.get("value") not in _NON_FINITE or not isinstance(entry.get("path"), str):
            continue
        parts, node = _unpointer(entry["path"]), record
        try:
            for key in parts[:-1]:
                node = node[int(key)] if isinstance(node, list) else node[key]
            last = parts[-1]
            if isinstance(node, list):
                if node[int(last)] is None:
                    node[int(last)] = _NON_FINITE[entry["value"]]
            elif node.get(last, 0) is None:
                node[last] = _NON_FINITE[entry["value"]]
        except (KeyError, IndexError, ValueError, TypeError, AttributeError):
            continue  # a path that no longer fits the record: leave the value as it is
    return record


def output_root() -> Path:
    """The folder accel writes to when no ``--out`` says otherwise: ``$ACCEL_OUT_DIR``, else ``./runs``.

    Run, search, comparison and scaling records and the search storage go in it, benchmark
    results in its ``benchmarks`` folder; ``accel experiments`` and ``accel report`` read it.
    """
    return Path(os.environ.get(OUT_ENV) or "runs").expanduser()


#: Free space an output folder needs before a run starts (a record is tens of kilobytes).
MIN_FREE_BYTES = 1 << 20


#: Folders :func:`ensure_writable` created in this process, outermost first.
_CREATED: list[Path] = []


def remove_unused_folders(since: int = 0) -> list[Path]:
    """Remove the folders :func:`ensure_writable` created that are still empty, innermost first.

    A command refused or interrupted after it made its output folder leaves nothing behind; a
    folder something was written into is kept. ``since``: only the folders made after that many
    had been (:func:`leaves_no_folder`). Returns the folders removed.
    """
    removed = []
    while len(_CREATED) > since:
        folder = _CREATED.pop()
        try:
            folder.rmdir()  # only an empty folder goes
            removed.append(folder)
        except OSError:
            pass
    return removed


def leaves_no_folder(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, which removes the output folders it made and left empty when it raises."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        mark = len(_CREATED)
        try:
            return fn(*args, **kwargs)
        except BaseException:
            remove_unused_folders(since=mark)
            raise

    return wrapper


def ensure_writable(folder: Path, what: str = "run records", option: str = "--out") -> Path:
    """Create ``folder`` if needed and prove it writable, before any long work starts.

    ``what`` and ``option`` name, in the error, what was to be written there and the flag
    that chooses another folder. A leading ``~`` is the home folder (as in a workflow file's
    ``out: ~/runs``); the folder returned is the one to write to.
    """
    folder = Path(folder).expanduser()
    missing, parent = [], folder.absolute()
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    _CREATED.extend(reversed(missing))  # outermost first: removed last
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".accel-probe-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise AccelError(f"cannot write {what} to {str(folder)!r} ({reason}); choose a writable folder with {option}") from None
    # An empty probe file fits on a full disk: the free space is asked for too, so that a run is
    # refused before its work rather than failing to write its record at the end.
    free = shutil.disk_usage(folder).free
    if free < MIN_FREE_BYTES:
        raise AccelError(
            f"cannot write {what} to {str(folder)!r} (no space left on device: {free:,} bytes free); "
            f"free some space or choose another folder with {option}"
        )
    return folder


class RecordHead(TypedDict):
    """The keys every record starts with."""

    schema_version: int
    kind: RecordKind
    run_id: str | None


class RunRecord(RecordHead, total=False):
    """A paired run's record (``kind: "run"``), in one process or on Dask: what
    :func:`accel.runner.run_record` builds and every reader of runs reads. Each arm is an
    :class:`~accel.result.ArmResult` as a dict (with ``placement`` / ``cluster`` on a cluster)."""

    workflow: str
    task: str
    started_at: str
    finished_at: str
    git_sha: str | None
    config: dict[str, Any]
    data: dict[str, Any]
    features: dict[str, Any]
    environment: dict[str, Any]
    arms: dict[str, dict[str, Any]]
    speedup: dict[str, float]
    parity: dict[str, Any]
    #: Present on some runs: the model described, the wall breakdown (in one process), ``"dask"``.
    model: dict[str, Any]
    wall: dict[str, Any]
    mode: str


def record_head(kind: RecordKind) -> RecordHead:
    """The keys every record starts with: ``schema_version``, ``kind`` and ``run_id`` (the file
    name, set by :func:`write_record`)."""
    if kind not in RECORD_KINDS:
        raise ValueError(f"unknown record kind {kind!r}; known: {', '.join(RECORD_KINDS)}")
    return RecordHead(schema_version=SCHEMA_VERSION, kind=kind, run_id=None)


def kind_of(record: Any) -> RecordKind | None:
    """What ``record`` is: its ``kind``; None for what is not a record.

    A record written before records carried ``kind`` (``schema_version`` 1 or none, as the
    results the scripts in ``benchmarks/`` wrote before :func:`accel.timing.write_result` gave
    them a head; those files are never rewritten) has it inferred here, from the keys those
    records had: ``benchmark`` (``scaling``, ``experiments``, else a benchmark result) or a
    ``workflow`` with ``arms`` (a run). A record of a later version without a known ``kind``
    is not guessed at.
    """
    if not isinstance(record, dict):
        return None
    kind = record.get("kind")
    if kind in RECORD_KINDS:
        return kind
    version = record.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version >= 2:
        return None
    bench = record.get("benchmark")
    if isinstance(bench, str):
        return bench if bench in ("scaling", "experiments") else "bench"  # type: ignore[return-value]
    if "workflow" in record and "arms" in record:
        return "run"  # its shape is the reader's to check
    return None


def write_record(
    folder: Path, record: dict[str, Any], stem: str, companion: Callable[[Path], Callable[[], None]] | None = None
) -> Path:
    """Write ``record`` as ``<folder>/<stem>-<NNN>.json`` with the first free sequence number.

    A record with a ``run_id`` key (a run, a search, a comparison) gets its file name as its
    ``run_id``, set in ``record`` itself, so that what the command shows or prints as JSON is
    what the file holds; so are its credentials hidden in ``record`` itself
    (:func:`accel.credentials.hidden`: the tables shown after it show none). ``companion(path)``,
    when given, writes what goes beside the record at ``path`` (the run's pipelines, whose names
    the record holds) before the record is written, raising :class:`FileExistsError` where that
    name is taken, and returns how to remove it again should the record's own name be taken
    meanwhile.
    """
    from accel.credentials import hidden

    redacted = hidden(record)
    record.clear()
    record.update(redacted)
    from accel.files import MAX_SEQUENCE, REFUSE, sequenced, write_new

    # Never over another record: the first free sequence number, written whole (files.write_new);
    # a name taken between the look and the write (another accel in the same folder) is skipped.
    for seq in range(1, MAX_SEQUENCE + 1):
        path = sequenced(Path(folder) / f"{stem}.json", seq)
        if os.path.lexists(path):
            continue
        if "run_id" in record:
            record["run_id"] = path.stem
        undo = None
        if companion is not None:
            try:
                undo = companion(path)
            except FileExistsError:
                continue
        try:
            return write_new(path, (dumps(record) + "\n").encode(), "the record", "choose another --out", exists=REFUSE)
        except BaseException as exc:
            if undo is not None:
                undo()
            if not isinstance(exc, AccelError) or not os.path.lexists(path):
                raise
    raise AccelError(f"no free name for {stem!r} records in {str(folder)!r} (tried up to {MAX_SEQUENCE:03d})")


def show_result(record: dict[str, Any], as_json: bool, render: Callable[[], None], written: dict[str, Any]) -> None:
    """How every command shows what it made: with ``--json``, exactly one JSON document on stdout
    (the record, as :func:`dumps` writes it) and the lines saying where its files went on stderr,
    so ``accel ... --json | jq .`` parses; otherwise ``render``'s tables (none with ``--quiet``),
    then those lines on stdout.

    Parameters
    ----------
    record : dict
        What the command wrote (the run, search, study or comparison record).
    as_json : bool
        ``--json`` was given.
    render : callable
        Prints the human-readable view (tables, notes).
    written : dict
        ``label -> path`` of each file written, in the order they are said
        (``{"run record": path}``, ``{"scaling record": path, "plot": png}``); None values are left out.
    """
    from accel.output import quiet

    if as_json:
        print(dumps(record), flush=True)
    elif not quiet():  # --quiet: only where the files went
        render()
    where = sys.stderr if as_json else sys.stdout
    for label, path in written.items():
        if path is not None:
            print(f"{label}: {path}", file=where, flush=True)


def record_files(folder: Path, pattern: str = "*.json") -> tuple[list[Path], list[tuple[Path, str]]]:
    """The files under ``folder`` that may be records (regular files only: :func:`accel.files.regular_files`),
    leaving out hidden paths and the runs' pipeline folders (``<run id>.pipeline/``, whose
    ``pipeline.json`` describes a model, not a run); and the others, with why."""
    from accel.files import regular_files

    def kept(path: Path) -> bool:
        parts = path.relative_to(folder).parts
        return not any(part.startswith(".") or part.endswith(".pipeline") for part in parts)

    files, others = regular_files(folder, pattern)
    return [p for p in files if kept(p)], [(p, why) for p, why in others if kept(p)]


def record_stem(what: str, now: datetime | None = None) -> str:
    """``2026-12-01-flights``: the UTC date and what the file holds (:func:`write_record` numbers it)."""
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y-%m-%d}-{what}"


def load_record(path: Path) -> dict[str, Any]:
    return loads(Path(path).read_text())
