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
:data:`RECORD_KINDS`) and ``run_id``. Each kind is a typed class (:class:`RunRecord`,
:class:`HpoRecord`, :class:`CompareRecord`, :class:`BenchRecord` and its benchmarks,
:class:`ScalingRecord`, :class:`ExperimentsRecord`, :class:`PredictRecord`) carrying the summary a
reader shows (:meth:`Record.summary`). :func:`write_record` is the one writer, :func:`read_record`
the one reader: it upgrades a record of an earlier ``schema_version`` (:func:`upgrade`: the kind
inferred by :func:`kind_of` for records written before records carried one) and refuses, with
:class:`RecordError` in one line, a file that is not a record or not of its kind's shape.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeGuard, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from accel.credentials import hidden
from accel.errors import AccelError
from accel.files import regular_files

#: 2: every record carries ``kind``; 3: its ``run_id`` is its file name.
SCHEMA_VERSION = 4
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
#: The stages of a run that train and score the model (what a search times): ``accel run``'s after its features.
MODEL_STAGES = ("to_device", "train", "predict")


def _null_reason(record: Any, path: str, value: str) -> str:
    """Why a value is not finite, where the record says so; else what it was."""
    if path.split("/")[1:2] == ["speedup"] and isinstance(record, dict) and isinstance(record.get("arms"), dict):
        missing = [
            f"the {arm} arm {'was skipped' if r.get('status') == 'skipped' else r.get('status')}"
            for arm, r in record["arms"].items()
            if isinstance(r, dict) and r.get("status") != "ok"
        ]
        if missing:
            return "not measured: " + " and ".join(missing)
    return "not a number" if value == "NaN" else "infinite"


def strict(obj: Any) -> tuple[Any, list[dict[str, str]]]:
    """``obj`` with every non-finite float as None (NumPy scalars as Python numbers), and where
    those were: ``[{"path", "value", "reason"}]`` (``path``: a JSON Pointer)."""
    nulls: list[dict[str, str]] = []

    def walk(value: Any, path: str) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, path + "/" + str(k).replace("~", "~0").replace("/", "~1")) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(v, f"{path}/{i}") for i, v in enumerate(value)]
        if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            name = json.dumps(value)  # NaN, Infinity or -Infinity
            nulls.append({"path": path, "value": name, "reason": _null_reason(obj, path, name)})
            return None
        return value

    return walk(obj, ""), nulls


def dumps(obj: Any, indent: int | None = 2) -> str:
    """``obj`` as strict JSON (``allow_nan=False``): non-finite numbers are ``null``, listed with
    their reason under the top-level ``nulls`` key of a mapping (see the module docstring).
    Every credential in it is hidden (:func:`accel.credentials.hidden`): this is what every
    record and every ``--json`` output is written with."""
    clean, nulls = strict(hidden(obj))
    if isinstance(clean, dict):
        known = [n for n in clean.get(NULLS_KEY) or [] if isinstance(n, dict) and n.get("path") not in {m["path"] for m in nulls}]
        if nulls or known:
            clean = {**clean, NULLS_KEY: known + nulls}
    return json.dumps(clean, indent=indent, sort_keys=False, default=str, allow_nan=False)


def loads(text: str) -> Any:
    """A record from its text: the values listed in ``nulls`` become floats again (``nan``,
    ``inf``); older records with bare ``NaN`` are read as they are. A credential an older record
    holds is hidden (:func:`accel.credentials.hidden`), so no report shows it. JSON nested too
    deeply for any record raises :class:`RecordError` (a ``ValueError``, as bad JSON raises)."""
    try:
        record = hidden(json.loads(text))
    except RecursionError:  # [[[[...]]]] nested 200,000 deep: no record is; a ValueError like any bad JSON
        raise RecordError("not a record: JSON nested too deeply") from None
    if not isinstance(record, dict):
        return record
    for entry in record.get(NULLS_KEY) or []:
        if not isinstance(entry, dict) or entry.get("value") not in _NON_FINITE or not isinstance(entry.get("path"), str):
            continue
        # A path that no longer fits the record: the value is left as it is.
        with contextlib.suppress(KeyError, IndexError, ValueError, TypeError, AttributeError):
            *up, last = [p.replace("~1", "/").replace("~0", "~") for p in entry["path"].split("/")[1:]]
            node = functools.reduce(lambda part, key: part[int(key)] if isinstance(part, list) else part[key], up, record)
            at: Any = int(last) if isinstance(node, list) else last
            if node[at] is None:
                node[at] = _NON_FINITE[entry["value"]]
    return record


def output_root() -> Path:
    """The folder accel writes to when no ``--out`` says otherwise: ``$ACCEL_OUT_DIR``, else ``./runs``.

    Run, search, comparison and scaling records and the search storage go in it, benchmark
    results in its ``benchmarks`` folder; ``accel experiments`` and ``accel report`` read it.
    """
    return Path(os.environ.get(OUT_ENV) or "runs").expanduser()


#: Folders :func:`ensure_writable` created in this process, outermost first.
CREATED_FOLDERS: list[Path] = []


def remove_unused_folders(since: int = 0) -> None:
    """Remove the folders :func:`ensure_writable` created that are still empty, innermost first.

    A command refused or interrupted after it made its output folder leaves nothing behind; a
    folder something was written into is kept. ``since``: only the folders made after that many
    had been (what a library call made: :mod:`accel.api`).
    """
    while len(CREATED_FOLDERS) > since:
        with contextlib.suppress(OSError):  # only an empty folder goes
            CREATED_FOLDERS.pop().rmdir()


def ensure_writable(folder: Path, what: str = "run records", option: str = "--out") -> Path:
    """Create ``folder`` if needed and prove it writable, before any long work starts.

    ``what`` and ``option`` name, in the error, what was to be written there and the flag
    that chooses another folder. A leading ``~`` is the home folder (as in a workflow file's
    ``out: ~/runs``); the folder returned is the one to write to.
    """
    folder = Path(folder).expanduser()
    # The folders this creates, outermost first (removed last: remove_unused_folders).
    CREATED_FOLDERS.extend(p for p in reversed([folder.absolute(), *folder.absolute().parents]) if not p.exists())
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
    if free < 1 << 20:  # a record is tens of kilobytes
        raise AccelError(
            f"cannot write {what} to {str(folder)!r} (no space left on device: {free:,} bytes free); "
            f"free some space or choose another folder with {option}"
        )
    return folder


def record_head(kind: RecordKind) -> dict[str, Any]:
    """The keys every record starts with: ``schema_version``, ``kind`` and ``run_id`` (the file
    name, set by :func:`write_record`)."""
    if kind not in RECORD_KINDS:
        raise ValueError(f"unknown record kind {kind!r}; known: {', '.join(RECORD_KINDS)}")
    return {"schema_version": SCHEMA_VERSION, "kind": kind, "run_id": None}


def _version(record: dict[str, Any]) -> int:
    """The record's ``schema_version``; 1 where it has none (or not a whole number)."""
    version = record.get("schema_version")
    return version if isinstance(version, int) and not isinstance(version, bool) else 1


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
    if (kind := record.get("kind")) in RECORD_KINDS:
        return kind
    if _version(record) >= 2:
        return None
    if isinstance(bench := record.get("benchmark"), str):
        return bench if bench in ("scaling", "experiments") else "bench"  # type: ignore[return-value]
    return "run" if "workflow" in record and "arms" in record else None  # a run's shape is the reader's to check


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
    redacted = hidden(record)
    record.clear()
    record.update(redacted)
    from accel.files import MAX_SEQUENCE, REFUSE, sequenced, write_new  # looked up at each call: write_new may be replaced

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

    def kept(path: Path) -> bool:
        parts = path.relative_to(folder).parts
        return not any(part.startswith(".") or part.endswith(".pipeline") for part in parts)

    files, others = regular_files(folder, pattern)
    return [p for p in files if kept(p)], [(p, why) for p, why in others if kept(p)]


def record_stem(what: str, now: datetime | None = None) -> str:
    """``2026-12-01-flights``: the UTC date and what the file holds (:func:`write_record` numbers it)."""
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y-%m-%d}-{what}"


def load_record(path: Path) -> Any:
    """The JSON of the record in ``path`` as it is (:func:`loads`); :func:`read_record` types it."""
    return loads(Path(path).read_text())


# --------------------------------------------------------------------------- typed records
#
# Every kind of record is a class below: what a reader reads is an attribute, never a key. A
# field a record may lack (older records, an arm that did not run) has a default; a field the
# classes do not name is kept as it is (``extra="allow"``). Each class carries the summary a
# reader shows of it (:meth:`Record.summary`): the report and ``accel experiments`` ask the
# record, not its kind.


class Part(BaseModel):
    """A part of a record: the fields readers read, typed; any other kept as it is."""

    model_config = ConfigDict(extra="allow")


#: A number a record may hold as ``null`` (not measured, not finite before ``nulls`` listed it).
Num = int | float | None


def number(value: object) -> TypeGuard[int | float]:
    """``value`` is a finite number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _nan(value: object) -> float:
    return float(value) if number(value) else math.nan


def _count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else ""


def _name(path: object) -> str:
    return Path(str(path)).name


def _rows_used(rows: Iterable[Rows | None], otherwise: object) -> str:
    """The rows the first of ``rows`` that knows them used (none does: ``otherwise``), as a count."""
    return _count(next((used for r in rows if (used := (r or Rows()).used()) is not None), otherwise))


def _geomean(values: list[int | float | None]) -> float:
    good = [float(v) for v in values if number(v) and v > 0]
    return math.exp(sum(map(math.log, good)) / len(good)) if good else math.nan


#: The arms of a paired record, the accelerated one first.
ARMS = ("gpu", "cpu")


class Arm(Part):
    """What every arm says: whether it ran, and why not."""

    status: str | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def failed_reason(self) -> tuple[str, str] | None:
        """``(status, reason)`` when the arm did not run to the end and says why."""
        return None if self.ok or not self.reason else (str(self.status), self.reason)


class Measured(Arm):
    """An arm, or a model a search scored, with the memory peaks it reached (MB)."""

    peak_host_mb: Num = None
    peak_device_mb: Num = None


class Rows(Part):
    train: int | None = None
    test: int | None = None

    def used(self) -> int | None:
        return self.train + (self.test or 0) if self.train is not None else None


class WorkerMemory(Part):
    peak_rss_mb: Num = None
    dask_reported_peak_device_mb: Num = None


class WorkerDetail(Part):
    address: str = "?"
    nthreads: int | None = None
    memory_limit_bytes: int | None = None
    memory: WorkerMemory | None = None


class Cluster(Part):
    """A Dask cluster an arm ran on."""

    kind: str | None = None
    workers: int | None = None
    worker_kind: str | None = None
    threads_per_worker: int | None = None
    address: str | None = None
    startup_seconds: Num = None
    worker_details: list[WorkerDetail] = []
    workers_joined_during_run: list[str] = []


class Batches(Part):
    """How the model input was cut (:meth:`accel.batching.BatchPlan.describe`)."""

    rows_per_batch: int | None = None
    batches: int | None = None

    def label(self, given: int | str | None) -> str:
        """``all`` when the model input was one batch, else the rows per batch (the plan, else ``given``)."""
        if self.rows_per_batch:
            return "all" if (self.batches or 1) <= 1 else str(self.rows_per_batch)
        return str(given) if isinstance(given, int) else "all"


class Precision(Part):
    precision: str | None = None


class ArmMemory(Part):
    """Where an arm's memory went: its batches, its precision (and the pool, the bytes per stage)."""

    batches: Batches | None = None
    precision: Precision | None = None


class TrainAttempt(Part):
    """One try at training on a cluster: the workers it had, and those it lost when it failed."""

    reason: str | None = None
    workers: int | None = None
    lost_workers: list[str] = []


class RunArm(Measured):
    """One arm of a run (:class:`accel.result.ArmResult` as written), with what a cluster adds."""

    stages: dict[str, Num] = {}
    total_seconds: Num = None
    metrics: dict[str, Num] = {}
    device_name: str | None = None
    device_used: str | None = None
    threads: dict[str, Any] | None = None
    rows: Rows | None = None
    importances: dict[str, dict[str, Num]] | None = None
    memory: ArmMemory | None = None
    cluster: Cluster | None = None
    placement_note: str | None = None
    train_attempts: list[TrainAttempt] = []
    workers_memory: dict[str, WorkerMemory] | None = None
    rows_per_second: Num = None


class Cores(Part):
    available: int | None = None
    physical: int | None = None
    logical: int | None = None


class GpuInfo(Part):
    name: str | None = None
    memory_gb: Num = None


class Environment(Part):
    """The machine and the code a record was measured on (:func:`accel.environment.collect_environment`)."""

    cpu_model: str | None = None
    cores: Cores | int | None = None
    ram_gb: Num = None
    gpus: list[GpuInfo] = []
    load_average: list[Num] | None = None
    git_sha: str | None = None
    git: dict[str, Any] | None = None

    def machine(self) -> str:
        """The machine in one line: CPU, cores, RAM, GPUs."""
        cores = self.cores if isinstance(self.cores, Cores) else Cores(available=self.cores)
        gpus = ", ".join(f"{g.name} ({g.memory_gb} GB)" for g in self.gpus)
        return (
            f"{self.cpu_model or 'CPU'}, {cores.available or '?'} cores available "
            f"({cores.physical or '?'} physical / {cores.logical or '?'} logical)"
            + (f", {self.ram_gb} GB RAM" if self.ram_gb else "")
            + f"; {gpus or 'no GPU'}"
        )

    @property
    def load(self) -> float | None:
        """The 1-minute load average when the record was written."""
        return float(first) if self.load_average and number(first := self.load_average[0]) else None


@dataclass
class Summary:
    """The one row a reader shows of a record: its data, rows, devices, headline speedup (and
    what it is), the metric of each arm (``{metric: {arm: value or the arm's status}}``) and
    whether the arms agree."""

    data: str = ""
    rows: str = ""
    devices: str = ""
    speedup: float = math.nan
    speedup_of: str = ""
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    parity: str = ""


def _parity_text(agree: bool | None) -> str:
    return {True: "agree", False: "differ"}.get(agree, "n/a") if agree is not None else "n/a"


class Record(Part):
    """What every record holds: its head (``schema_version``, ``kind``, ``run_id``), when it
    ran, the machine and the code."""

    #: What one record of this kind is called, and several (None: its :attr:`kind_text`).
    nouns: ClassVar[tuple[str, str] | None] = None
    #: Whether the record measured something itself (a snapshot of others does not).
    measures: ClassVar[bool] = True
    schema_version: int = SCHEMA_VERSION
    kind: RecordKind
    run_id: str | None = None
    workflow: str | None = None
    started_at: str | None = None
    git_sha: str | None = None
    environment: Environment | None = None

    @property
    def started(self) -> datetime | None:
        """When the record was made: its ``started_at``, else (an experiments snapshot) its ``created_at``."""
        try:
            return datetime.fromisoformat(str(self.started_at or getattr(self, "created_at", None)))
        except ValueError:
            return None

    @property
    def kind_text(self) -> str:
        """The kind as a reader names it (``run on Dask``, ``bench db groupby``)."""
        return self.kind

    @property
    def noun(self) -> tuple[str, str]:
        """What one record of this kind is called, and several."""
        return self.nouns or (self.kind_text, self.kind_text)

    @property
    def code(self) -> str:
        """The commit the record was made with (and whether the tree had changes), or empty."""
        env = self.environment or Environment()
        sha = str(env.git_sha or self.git_sha or "")[:10]
        return (sha + (" (uncommitted changes)" if (env.git or {}).get("dirty") else "")) if sha else ""

    def summary(self) -> Summary:
        """The row a reader shows of the record (a snapshot of others: none of its own figures)."""
        return Summary()

    def reasons(self) -> list[tuple[str, str, str]]:
        """``(arm, status, reason)`` of each arm that did not run to the end."""
        return []


class ArmsRecord(Record):
    """A record of arms by name (``gpu``, ``cpu``) and the speedups between them (a run, a search,
    new rows scored, a script compared)."""

    arms: Mapping[str, Arm] = {}
    speedup: dict[str, Num] = {}

    def ran(self) -> list[str]:
        """The arms that ran, the accelerated one first."""
        return [a for a in ARMS if a in self.arms and self.arms[a].ok]

    def reasons(self) -> list[tuple[str, str, str]]:
        """``(arm, status, reason)`` of each arm that did not run to the end."""
        return [(a, *why) for a, arm in self.arms.items() if (why := arm.failed_reason())]


class RunSettings(Part):
    """The settings a run or a search was made with (:class:`accel.config.RunConfig`, dumped)."""

    workflow: str | None = None
    data: str | None = None
    model: str | None = None
    rows: int | str | None = None
    test_size: Num = None
    seed: int | None = None
    precision: str | None = None
    batch_rows: int | str | None = None

    def data_name(self, workflow: str | None) -> str:
        """A user's table by its file name, else the workflow."""
        return _name(self.data) if self.data else str(workflow or self.workflow or "?")


class SavedPipeline(Part):
    path: str | None = None


class RunParity(Part):
    """Whether the arms agree: the metric compared, each arm's value, the tolerance."""

    metric: str | None = None
    ok: bool | None = None
    gpu: Num = None
    cpu: Num = None
    tolerance: Num = None


class Validation(Part):
    rows: int | None = None


class RoundsFound(Part):
    """The rounds early stopping chose (:class:`accel.early_stopping.EarlyStopping`, as recorded), or why it was not used."""

    used: bool = False
    reason: str | None = None
    rounds: int | None = None
    searched: int | None = None
    decided_by: str | None = None
    search_seconds: Num = None
    validation: Validation = Validation()


class ModelInfo(Part):
    name: str | None = None
    params: dict[str, Any] | None = None
    early_stopping: RoundsFound | None = None


class ArmWall(Part):
    wall: float = 0.0
    stages: float = 0.0
    cluster_startup: Num = None
    rounds_search: Num = None


class Wall(Part):
    """Where a run's wall time went (:func:`accel.runner.wall_timeline`)."""

    process_seconds: float = 0.0
    parts: dict[str, float] = {}
    planning: dict[str, float] = {}
    arms: dict[str, ArmWall] = {}
    unaccounted_seconds: float = 0.0


class PairedRecord(ArmsRecord):
    """A record of two arms run on the same data (a run, a search's final model, new rows scored)."""

    task: str | None = None
    config: RunSettings = RunSettings()
    data: dict[str, Any] = {}
    parity: RunParity = RunParity()
    arms: Mapping[str, RunArm] = {}
    #: Each arm's fitted pipeline, saved beside the record (``path``: relative to the record's folder).
    pipelines: dict[str, SavedPipeline] = {}

    def arm_values(self, value: Callable[[RunArm], Any]) -> dict[str, Any]:
        """``value(arm)`` of each arm that ran, the status of each that did not."""
        return {a: value(self.arms[a]) if self.arms[a].ok else self.arms[a].status for a in ARMS if a in self.arms}

    def device(self, arm: str) -> str:
        """Where ``arm`` ran: the GPU by its name, the CPU with its cores."""
        if arm == "gpu":
            return self.arms["gpu"].device_name or "GPU"
        threads = (self.arms["cpu"].threads or {}).get("cores_available")
        return f"CPU ({threads} cores)" if threads else "CPU"

    def devices(self) -> str:
        return " + ".join(map(self.device, self.ran())) or "none ran"


class RunRecord(PairedRecord):
    """A paired run (``accel run``), in one process or on Dask: what :func:`accel.runner.run_record` builds."""

    kind: Literal["run"] = "run"
    #: Present on some runs: the model described, ``"dask"``.
    model: ModelInfo | str | None = None
    mode: str | None = None
    #: A record that ran one arm on Dask kept its cluster here.
    cluster: Cluster | None = None
    wall: Wall | None = None

    @property
    def on_dask(self) -> bool:
        """A run of ``accel run --cluster / --scheduler``."""
        return self.mode == "dask" or self.cluster is not None

    @property
    def kind_text(self) -> str:
        return "run on Dask" if self.on_dask else "run"

    @property
    def noun(self) -> tuple[str, str]:
        return ("run on Dask", "runs on Dask") if self.on_dask else ("run", "runs")

    @property
    def model_name(self) -> str:
        model = self.model if self.model is not None else self.config.model
        return str((model.name if isinstance(model, ModelInfo) else model) or "")

    def cluster_of(self, arm: str) -> Cluster | None:
        """The Dask cluster ``arm`` ran on, or None for an arm that ran in the process."""
        part = self.arms.get(arm)
        if part is not None and part.cluster is not None:
            return part.cluster
        top = self.cluster
        return top if top is not None and top.worker_kind == arm else None

    def device(self, arm: str) -> str:
        if not self.on_dask:
            return super().device(arm)
        if (c := self.cluster_of(arm)) is None:
            return f"{arm.upper()} in this process"
        kind = str(c.worker_kind or "?").upper()
        return f"Dask {c.kind}: {c.workers} {kind} worker{'s' * (c.workers != 1)} × {c.threads_per_worker} threads"

    def summary(self) -> Summary:
        metric, schema = self.parity.metric, self.data.get("schema") or {}
        return Summary(
            data=self.config.data_name(self.workflow),
            rows=_rows_used((self.arms[a].rows for a in self.ran()), schema.get("rows_used") or self.data.get("rows_requested")),
            devices=self.devices(),
            speedup=_nan(self.speedup.get("total")),
            speedup_of="total, CPU s / GPU s",
            metrics={metric: self.arm_values(lambda arm: arm.metrics.get(metric))} if metric else {},
            parity=_parity_text(self.parity.ok),
        )


class Study(Part):
    name: str | None = None
    metric: str | None = None
    storage: str | None = None


class Trials(Part):
    complete: int = 0
    total: int = 0
    pruned: int = 0
    failed: int = 0
    interrupted: int = 0


class SearchRows(Rows):
    """The rows of a search: those it fits on (a subset of them per trial) and scores on."""

    fit: int = 0
    subset: int = 0
    validation: int = 0


class Search(Part):
    arm: str | None = None
    gpu_arm: str = ""
    rows: SearchRows | None = None
    trial_rounds: float = 1.0
    memory: ArmMemory | None = None


class Scored(Measured):
    """A model a search scored on the hold-out: the default, the tuned one, the best trial."""

    metric: Num = None
    seconds: Num = None
    trial: int | None = None
    number: int | None = None
    arm: str | None = None
    device_used: str | None = None
    params: dict[str, Any] | None = None
    evaluated_on: str | None = None


class Improvement(Part):
    tuned_minus_default: Num = None


class HpoArm(RunArm):
    """The final model of a search on one arm."""

    seconds: Num = None
    metric: Num = None


class HpoRecord(PairedRecord):
    """A search (``accel hpo``): the study, the default and the tuned model, the final model per arm."""

    nouns = ("search", "searches")
    kind: Literal["hpo"] = "hpo"
    model: str | None = None
    study: Study = Study()
    search: Search = Search()
    trials: Trials = Trials()
    baseline: Scored | None = None
    final: Scored | None = None
    best_trial: Scored | None = None
    top_k: list[Scored] = []
    improvement: Improvement | None = None
    arms: Mapping[str, HpoArm] = {}
    phases_seconds: dict[str, Num] = {}

    @property
    def tuned(self) -> Any:
        """The tuned model's metric, or why there is none."""
        final = self.final or Scored()
        return final.metric if final.status != "failed" else f"failed: {final.reason or ''}"

    def summary(self) -> Summary:
        metric = self.study.metric
        return Summary(
            data=self.config.data_name(self.workflow),
            rows=_count((self.search.rows or Rows()).used()),
            devices=f"search on {str(self.search.arm).upper()}; final model on {' and '.join(a.upper() for a in self.ran()) or 'none'}",
            speedup=_nan(self.speedup.get("final_model")),
            speedup_of="final model",
            metrics={metric: self.arm_values(lambda arm: arm.metric if isinstance(arm, HpoArm) else None)} if metric else {},
        )


class Program(Part):
    path: str | None = None
    args: list[Any] = []


class Warm(Part):
    median: Num = None
    min: Num = None
    max: Num = None


class CompareArm(Measured):
    exit_code: int | None = None
    cold_seconds: Num = None
    warm: Warm | None = None


class Difference(Part):
    line: int | None = None
    why: str | None = None
    cpu: str | None = None
    gpu: str | None = None


class Printed(Part):
    numbers_compared: int | None = None
    numbers_agree: int | None = None
    differences_total: int | None = None
    differences: list[Difference] = []


class WrittenFile(Part):
    path: str | None = None
    status: str | None = None


class CompareParity(Part):
    agree: bool | None = None
    reason: str | None = None
    rtol: Num = None
    stdout: Printed | None = None
    files: list[WrittenFile] = []

    @property
    def share(self) -> float:
        """The share of the numbers the script printed that agree with the CPU arm (NaN: none compared)."""
        out = self.stdout
        return (out.numbers_agree or 0) / out.numbers_compared if out and out.numbers_compared else math.nan


class Fallback(Part):
    accelerator: str | None = None
    function: str | None = None
    gpu_calls: int | None = None
    gpu_seconds: Num = None
    cpu_calls: int | None = None
    cpu_seconds: Num = None
    fallback_reasons: list[str] = []


class CompareRecord(ArmsRecord):
    """A script run on the CPU and under cudf.pandas / cuml.accel (``accel compare``)."""

    nouns = ("script compared", "scripts compared")
    kind: Literal["compare"] = "compare"
    program: Program = Program()
    arms: dict[str, CompareArm] = {}
    parity: CompareParity = CompareParity()
    fallbacks: list[Fallback] = []

    def summary(self) -> Summary:
        out = self.parity.stdout
        counted = f" ({out.numbers_agree}/{out.numbers_compared} numbers)" if out and out.model_fields_set else ""
        return Summary(
            data=" ".join([_name(self.program.path or "?"), *map(str, self.program.args)]).strip(),
            devices=" + ".join(a.upper() for a in self.ran()) or "none ran",
            speedup=_nan(self.speedup.get("wall_cold")),
            speedup_of="cold wall",
            parity=_parity_text(self.parity.agree) + counted,
        )


class ScalingConfig(Part):
    """One configuration of a scaling study: how many workers, of which kind, with how many threads each."""

    workers: int | None = None
    kind: str | None = None
    threads_per_worker: int | None = None


class ScalingRow(ScalingConfig):
    """One stage at one worker count of one arm (``kind``: ``gpu``, ``cpu``, ``single-process``;
    an old record names the cluster instead: ``local-cuda`` GPU workers, ``local`` CPU workers)."""

    stage: str | None = None
    seconds: Num = None
    speedup_vs_1: Num = None
    efficiency: Num = None
    gpu_vs_cpu: Num = None
    metric: Num = None

    @property
    def arm(self) -> str:
        kind = str(self.kind)
        return kind if kind in ARMS else "gpu" if kind == "local-cuda" else "cpu"

    @property
    def clustered(self) -> bool:
        return self.kind != "single-process"


def scaling_label(kind: str, workers: int) -> str:
    """How a configuration of a scaling study is named in tables and the plot: ``single process``, ``CPU × 2``."""
    return "single process" if kind == "single-process" else f"{kind.upper()} × {workers}"


class ScalingRun(ScalingConfig):
    cluster: Cluster | None = None
    arm: RunArm | None = None


class ScalingRecord(Record):
    """A scaling study (``accel scale``): seconds per stage at each worker count, per arm."""

    nouns = ("scaling study", "scaling studies")
    kind: Literal["scaling"] = "scaling"
    cluster_kind: str | None = None
    config: RunSettings = RunSettings()
    data: dict[str, Any] = {}
    worker_counts: list[int] = []
    speedup_reference: dict[str, int | str | None] = {}
    metric_name: str | None = None
    rows: list[ScalingRow] = []
    runs: list[ScalingRun] = []
    skipped_arms: dict[str, str] = {}

    def summary(self) -> Summary:
        """The rows the arms used, the worker counts, the headline speedup (the GPU workers against as
        many CPU workers where both ran, else the most workers against the reference) and each arm's
        metric at its most workers."""
        counts = self.worker_counts or sorted({r.workers for r in self.rows if r.clustered and r.workers is not None})
        which = " and ".join(a.upper() for a in ARMS if a in {str(r.kind) for r in self.rows})  # old records name the cluster
        devices = f"Dask {self.cluster_kind or ''}: {', '.join(map(str, counts))} {which} workers"
        devices = devices.replace("Dask : ", "Dask: ").replace("  ", " ")
        speedup, of = self._headline()
        scored = sorted((r for r in self.rows if r.clustered and number(r.metric)), key=lambda r: r.workers or 0)
        by_arm = {r.arm: r for r in scored}  # the last at the most workers
        return Summary(
            data=self.config.data_name(self.workflow),
            rows=_rows_used((run.arm.rows if run.arm else None for run in self.runs), self.data.get("rows_requested")),
            devices=devices + ("; one process" if any(not r.clustered for r in self.rows) else ""),
            speedup=speedup,
            speedup_of=of,
            metrics={self.metric_name: {a: by_arm[a].metric for a in ARMS if a in by_arm}} if self.metric_name and scored else {},
        )

    def _headline(self) -> tuple[float, str]:
        """The GPU workers against as many CPU workers where both ran, else the most workers
        against the reference; NaN where no total was measured."""
        totals = [r for r in self.rows if r.stage == "total" and r.clustered]
        versus = [r for r in totals if number(r.gpu_vs_cpu)]
        best = max(totals, key=lambda r: (r.workers or 0, r.kind == "gpu"), default=None)
        if versus:
            top = max(versus, key=lambda r: r.workers or 0)
            return float(top.gpu_vs_cpu or 0), f"total, {top.workers} GPU workers vs as many CPU workers"
        if best is None:
            return math.nan, ""
        ref = self.speedup_reference.get(str(best.kind)) or self.speedup_reference.get("workers") or 1
        return _nan(best.speedup_vs_1), f"total, {best.workers} workers vs {ref}"

    def reasons(self) -> list[tuple[str, str, str]]:
        out = [(a, "skipped", why) for a, why in self.skipped_arms.items()]
        for r in self.runs:
            if r.arm and (why := r.arm.failed_reason()):
                arm = r.kind if r.kind in ARMS else (r.cluster.worker_kind if r.cluster else None) or "cpu"
                out.append((str(arm), *why))
        return out


class ExperimentRow(Part):
    """One experiment of a snapshot (:class:`accel.hpo.experiments.Row`, written)."""

    name: Any = None
    workflow: str | None = None
    arm: str | None = None
    model: str | None = None
    metric_name: str | None = None
    metric: Num = None
    seconds: Num = None
    peak_mb: Num = None
    pareto: bool = False
    group: str | None = None


class ExperimentsRecord(Record):
    """A snapshot of ``accel experiments``: every experiment under a folder, fronts marked."""

    nouns = ("experiments snapshot", "experiments snapshots")
    measures = False
    kind: Literal["experiments"] = "experiments"
    created_at: str | None = None
    folder: str | None = None
    rows: list[ExperimentRow] = []


class PredictedRows(Part):
    rows: int | None = None
    arm: str | None = None


class PipelineUsed(Part):
    which: str = ""
    trained_on: str | None = None


class PredictRecord(PairedRecord):
    """New rows scored with a run's pipeline (``accel predict``)."""

    kind: Literal["predict"] = "predict"
    pipeline: PipelineUsed = PipelineUsed()
    output: PredictedRows = PredictedRows()
    notices: list[str] = []

    def summary(self) -> Summary:
        return Summary(
            data=_name(self.data.get("path") or self.pipeline.trained_on or ""),
            rows=_count(self.output.rows),
            devices=self.devices(),
            speedup=_nan(self.speedup.get("total")),
            speedup_of="total, CPU s / GPU s",
            parity=_parity_text(self.parity.ok),
        )


class Repeats(Part):
    repeats: int | None = None


class Fairness(Part):
    line: str | None = None


class BenchRecord(Record):
    """A benchmark result (``accel bench`` and the scripts in ``benchmarks/``); ``benchmark``
    names which. The benchmarks the report lays out have their own class (:data:`BENCHMARKS`);
    the others are read as this, their fields kept as they are."""

    kind: Literal["bench"] = "bench"
    benchmark: str = "?"
    config: Repeats = Repeats()
    gpu: Arm | None = None
    fairness: Fairness | None = None

    @property
    def kind_text(self) -> str:
        return f"bench {self.benchmark.replace('_', ' ')}"

    @property
    def noun(self) -> tuple[str, str]:
        name = self.benchmark.replace("_", " ")
        return f"{name} benchmark", f"{name} benchmarks"

    def devices(self) -> str:
        return "CPU" + (f" + {getattr(self.gpu, 'device_name', None) or 'GPU'}" if self.gpu is not None and self.gpu.ok else "")

    def summary(self) -> Summary:
        return Summary(data=self.benchmark, devices=self.devices())

    def reasons(self) -> list[tuple[str, str, str]]:
        why = self.gpu.failed_reason() if self.gpu else None
        return [("gpu", *why)] if why else []


class Timed(Arm):
    """An arm's timing of one question or operation."""

    timing: Repeats | None = None
    run1: Num = None
    run2: Num = None
    median: Num = None
    rows: int | None = None
    checksum: list[Any] = []
    agree: bool | None = None


class TimedPair(Part):
    """Both arms' timings of one question, or of one operation at one size, and the speedup."""

    cpu: Timed = Timed()
    gpu: Timed = Timed()
    speedup: Num = None

    def arm(self, name: str) -> Timed:
        return self.gpu if name == "gpu" else self.cpu


class DbQuestion(TimedPair):
    question: str
    title: str = ""
    agree: bool | None = None


class Engine(Arm):
    threads: int | str | None = None
    version: str | None = None
    questions: dict[str, Timed] = {}


class DbData(Part):
    x: str | None = None


class DataFile(Part):
    """A data file a benchmark read: its size and sha256 (a regenerated file with the same bytes is the same data)."""

    bytes: int | None = None
    sha256: str | None = None


class DbBench(BenchRecord):
    """db-benchmark's groupby or join questions, pandas against cuDF (and other CPU engines)."""

    data: DbData = DbData()
    data_files: dict[str, DataFile] = {}
    questions: list[DbQuestion] = []
    engines: dict[str, Engine] = {}
    arms: dict[str, Any] = {}

    def summary(self) -> Summary:
        checked = [q.agree for q in self.questions if q.agree is not None]
        n = len(self.questions)
        x = str(self.data.x or "?")
        source = (_name(Path(x).parent) or "join tables") if self.benchmark == "db_join" else _name(x)
        rows_in = ((self.arms.get("cpu") or {}).get("rows_in") or {}) if isinstance(self.arms.get("cpu"), dict) else {}
        return Summary(
            data=source,
            rows=_count(rows_in.get("x")),
            devices=self.devices(),
            speedup=_geomean([q.speedup for q in self.questions]),
            speedup_of=f"geometric mean of {n} questions" if n > 1 else "the question",
            parity=f"{sum(bool(a) for a in checked)}/{len(checked)} agree" if checked else "n/a",
        )


class FitArm(Arm):
    fit: Warm = Warm()
    predict: Warm = Warm()
    quality: Num = None


class ModelTimed(Part):
    model: str
    metric: str = "metric"
    cpu: FitArm = FitArm()
    gpu: FitArm = FitArm()
    fit_speedup: Num = None
    predict_speedup: Num = None

    def arm(self, name: str) -> FitArm:
        return self.gpu if name == "gpu" else self.cpu


class ModelsData(Part):
    rows: int | None = None
    features: int | None = None


class ModelsBench(BenchRecord):
    """Models fitted and scored on both arms (scikit-learn / XGBoost CPU against cuML / XGBoost CUDA)."""

    data: ModelsData = ModelsData()
    models: list[ModelTimed] = []

    def summary(self) -> Summary:
        n = len(self.models)
        return Summary(
            data=f"synthetic {self.data.features or '?'} features",
            rows=_count(self.data.rows),
            devices=self.devices(),
            speedup=_geomean([m.fit_speedup for m in self.models]),
            speedup_of="fit" + (f", geometric mean of {n} models" if n > 1 else ""),
        )


class Point(TimedPair):
    rows: int


class Operation(Part):
    operation: str
    description: str = ""
    points: list[Point] = []
    gpu_status: str | None = None
    gpu_reason: str | None = None
    crossover_rows: int | None = None


class CrossoverBench(BenchRecord):
    """One operation timed at growing sizes on both arms: from how many rows the GPU arm wins."""

    sizes: list[int | Any] = []
    operations: list[Operation] = []

    def summary(self) -> Summary:
        sizes = [s for s in self.sizes if isinstance(s, int)]
        return Summary(
            data="synthetic, " + ", ".join(op.operation for op in self.operations),
            rows=f"{min(sizes):,} – {max(sizes):,}" if sizes else "",
            devices=self.devices(),
            speedup=_geomean([op.points[-1].speedup for op in self.operations if op.points]),
            speedup_of="at the largest size",
        )


class OverheadQuestion(Part):
    question: str
    title: str = ""
    accel_median: Num = None
    plain_median: Num = None
    ratio: Num = None
    ratio_min: Num = None
    checksums_equal: bool | None = None
    max_rel_diff: Num = None


class GroupbyOverheadBench(BenchRecord):
    """accel's pandas arm against db-benchmark's own pandas solution."""

    rows: int | None = None
    k: int | None = None
    target: Num = None
    dispatch_overhead_seconds: Num = None
    questions: list[OverheadQuestion] = []

    def summary(self) -> Summary:
        return Summary(data="db-benchmark groupby", rows=_count(self.rows), devices=self.devices())


class AccelVsHand(Part):
    accel: Num = None
    handwritten: Num = None


class FlightsOverheadBench(BenchRecord):
    """The flights workflow's CPU arm against a hand-written script."""

    median_seconds: AccelVsHand = AccelVsHand()
    auc: AccelVsHand = AccelVsHand()
    ratio: Num = None

    def summary(self) -> Summary:
        return Summary(data="flights", devices=self.devices())


#: The benchmarks readers lay out, each read as its own class.
BENCHMARKS: dict[str, type[BenchRecord]] = {
    "db_groupby": DbBench, "db_join": DbBench, "models": ModelsBench, "crossover": CrossoverBench,
    "groupby_overhead": GroupbyOverheadBench, "flights_overhead": FlightsOverheadBench,
}  # fmt: skip
#: The class of each kind of record (a benchmark result: by its ``benchmark``, :data:`BENCHMARKS`).
RECORD_CLASSES: dict[str, type[Record]] = {
    "run": RunRecord, "hpo": HpoRecord, "compare": CompareRecord, "bench": BenchRecord,
    "scaling": ScalingRecord, "experiments": ExperimentsRecord, "predict": PredictRecord,
}  # fmt: skip


class RecordError(ValueError):
    """A file that is not a record accel can read; the message says what is wrong, in one line."""


class NotARecord(RecordError):
    """JSON that is no record at all (no kind, none to infer): a reader passes over it."""


def upgrade(raw: dict[str, Any]) -> dict[str, Any]:
    """A record of an earlier ``schema_version`` as this version writes it.

    1 or none (the results the scripts in ``benchmarks/`` wrote before they had a head, runs
    before records carried ``kind``): its kind inferred (:func:`kind_of`). 2: its ``run_id``
    was not its file name; it is read as it is. Up to 3, a run's encoding probe was part of its
    planning (``wall.planning``, ``data.planning_seconds``); it is taken out into a wall part
    of its own (``wall.parts.encoding_probe``, ``data.encoding_probe_seconds``). A later
    version than this accel's is refused.
    """
    if (version := _version(raw)) > SCHEMA_VERSION:
        raise RecordError(f"written by a newer accel (schema_version {version}; this one reads up to {SCHEMA_VERSION})")
    if (kind := kind_of(raw)) is None:
        raise NotARecord("not a run record or benchmark result")
    if version <= 3 and kind == "run":
        raw = _probe_apart(raw)
    return {**raw, "schema_version": SCHEMA_VERSION, "kind": kind}


def _probe_apart(raw: dict[str, Any]) -> dict[str, Any]:
    """A run record of version 3 or before with its encoding probe out of its planning."""
    wall, data = dict(raw.get("wall") or {}), dict(raw.get("data") or {})
    planning, parts = dict(wall.get("planning") or {}), dict(wall.get("parts") or {})
    probe = planning.pop("encoding_probe", 0.0) or 0.0
    if "total" in planning:
        planning["total"] -= probe
    if "planning" in parts:
        parts.update(planning=parts["planning"] - probe, encoding_probe=probe)
    if isinstance(data.get("planning_seconds"), dict):
        seconds = dict(data["planning_seconds"])
        data.update(planning_seconds=seconds, encoding_probe_seconds=seconds.pop("encoding_probe", 0.0))
    return {**raw, "wall": {**wall, "planning": planning, "parts": parts} if wall else wall, "data": data}


def parse_record(raw: object) -> Record:
    """``raw`` (a record's JSON, read) as its typed class, upgraded to this ``schema_version``.

    Raises :class:`RecordError` naming, in one line, what is wrong: not a record, or the first
    fields not of the shape of its kind.
    """
    if not isinstance(raw, dict):
        raise NotARecord("not a run record or benchmark result")
    raw = upgrade(raw)
    cls = BENCHMARKS.get(str(raw.get("benchmark")), BenchRecord) if raw["kind"] == "bench" else RECORD_CLASSES[raw["kind"]]
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        wrong = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'record'}: {e['msg']}" for e in exc.errors()[:3])
        raise RecordError(f"not the shape of a {raw['kind']} record ({wrong})"[:240]) from None


def read_record(path: Path) -> Record:
    """The record in ``path``, typed (:func:`parse_record`): the one reader of records.

    Raises :class:`RecordError` for a file that is not readable JSON, not a record, or not of its
    kind's shape; the message says which, in one line.
    """
    try:
        raw = load_record(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"not readable JSON ({type(exc).__name__})") from None
    return parse_record(raw)
