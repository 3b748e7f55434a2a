"""Scoring new rows with a fitted pipeline (``accel predict``): the same arms and executors as a run.

Each arm loads the pipeline onto its device and runs ``load → features → to_device → predict``
(and ``explain`` for per-row contributions) through the one runner,
:func:`accel.runner.execute_arm`: in memory (:class:`ScoreInMemory`), or batch by batch under a
memory budget (:class:`ScoreStreamed`: only a batch and its predictions are held; they go to a
spool file beside the output). With a baseline, the CPU arm is timed beside the accelerated one
and the pair becomes the record (:func:`accel.pairing.pair`); the output file is written once,
from the arm the record says (the accelerated arm's where it ran, else the CPU arm's).

The output holds, in input order, ``row`` (the row's position in the input), ``prediction``
(the label, or the value of a regression) and, for classification, ``proba_<class>`` for each
class; with contributions, ``contribution_<feature>`` for each feature and ``contribution_bias``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from accel import scratch
from accel._compat import Frame
from accel.backend import Backend, resolve_arms
from accel.data.readers import TableSource, iter_chunks, resolve_source
from accel.errors import AccelError
from accel.files import REFUSE, refuse_existing, write_new
from accel.metrics import task_metrics
from accel.pipeline import Pipeline, check_columns, labels, load_folder, probabilities, read_rows, read_types
from accel.record import ensure_writable, record_head, record_stem, write_record
from accel.registry import DEFAULT_MODEL
from accel.result import ArmResult, Executed, Executor, Listener, skipped
from accel.timing import StageTimer, timed_items

#: The stages of scoring: a run's five without training.
SCORING_STAGES = ("load", "features", "to_device", "predict")
#: Output formats, by the output file's extension.
OUTPUT_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


@dataclass
class ScoreJob:
    """What each arm scores: the pipeline saved in ``folder`` on the rows of ``source``.

    ``scratch`` is a private folder beside the output for streamed arms' spools (removed by
    :func:`accel.scratch.release`), owned (:mod:`accel.scratch`): one a killed process left is
    reclaimed by the next. ``outputs`` gathers each arm's predictions (a frame, or the spool file
    a streamed arm wrote).
    """

    folder: Path
    source: Any
    task: str
    model_name: str
    scratch: Path
    contributions: bool = False
    outputs: dict[str, Any] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)

    def columns(self, pipeline: Pipeline) -> list[str]:
        """The columns to read: those the pipeline needs (a missing one is named when scoring)
        and the target where the table has it; the others are said once and left unread."""
        present = list(self.source.columns)
        wanted = [c for c in [*pipeline.required, pipeline.target] if c in present]
        check_columns(pipeline, present, "--data")
        extra = [c for c in present if c not in wanted]
        if extra and not any("not use" in n for n in self.notices):
            self.notices.append(f"{len(extra)} column(s) the pipeline does not use were not read: {', '.join(extra[:5])}")
        return wanted


def predictions_frame(pipeline: Pipeline, output: np.ndarray, first_row: int, contributions: np.ndarray | None = None) -> Any:
    """The output rows of one piece of the input: ``row``, ``prediction``, the class
    probabilities and, when given, the contributions."""
    import pandas as pd

    columns = {"row": np.arange(first_row, first_row + len(output), dtype=np.int64), "prediction": labels(pipeline, output)}
    if pipeline.task != "regression":
        columns.update((f"proba_{label}", p) for label, p in zip(pipeline.classes_, probabilities(pipeline.task, output).T))
    if contributions is not None:
        columns.update((f"contribution_{name}", c) for name, c in zip([*pipeline.feature_names, "bias"], contributions.T))
    return pd.DataFrame(columns)


# The target's codes and the model's output of the rows whose target is known, piece by piece.
_Known = list[tuple[np.ndarray, np.ndarray]]


def known_metrics(task: str, known: _Known) -> dict[str, float]:
    """The run's metrics of the rows whose target is known (none: no metrics)."""
    if not sum(len(y) for y, _ in known):
        return {}
    return task_metrics(task, np.concatenate([y for y, _ in known]), np.concatenate([out for _, out in known]))


def _score_piece(
    pipeline: Pipeline, job: ScoreJob, frame: Frame, timer: StageTimer, batch_rows: int, known: _Known, first_row: int | None
) -> Any:
    """Features, storage and prediction of one piece of the input starting at ``first_row``, each
    in its stage (None: the whole input, each stage timed once; else added to); the rows whose
    target is known go to ``known``, the pipeline's notices to the job's. Returns the piece's
    output rows (:func:`predictions_frame`)."""
    stage = timer.stage if first_row is None else timer.accumulate
    with stage("features"):
        X = pipeline.features(frame)
    with stage("to_device"):
        matrix = pipeline.matrix(X, batch_rows)
    with stage("predict"):
        output = pipeline.predict_matrix(matrix, batch_rows)
    contributions = None
    if job.contributions:
        with stage("explain"):
            contributions = pipeline.model.contributions(pipeline.backend, pipeline.fitted, matrix.batch(0, matrix.n_rows))
    found = pipeline.target_codes(frame)  # the rows whose target is known (none without a target column)
    if found is not None:
        known.append((found[0], output[found[1]]))
    job.notices.extend(n for n in pipeline.notices if n not in job.notices)
    return predictions_frame(pipeline, output, first_row or 0, contributions)


class ScoreInMemory(Executor[ScoreJob]):
    """Scoring a table that fits the budget: each stage on the whole table."""

    name = "in_memory"
    stages = SCORING_STAGES

    def __init__(self, batch_rows: int):
        self.batch_rows = batch_rows

    def execute(self, backend: Backend, job: ScoreJob, timer: StageTimer, listener: Listener | None) -> Executed:
        with timer.stage("load"):
            pipeline = load_folder(job.folder, backend)
            frame = read_rows(pipeline, job.source, job.columns(pipeline))  # typed as the chunks are read
        known: _Known = []
        job.outputs[backend.name] = _score_piece(pipeline, job, frame, timer, self.batch_rows, known, None)
        memory = {"batches": {"mode": "in-memory", "rows_per_batch": self.batch_rows}}
        return scoring_executed(pipeline, known_metrics(job.task, known), len(frame), memory)


class ScoreStreamed(Executor[ScoreJob]):
    """Scoring a table larger than the budget: read, featurise and predict batch by batch; the
    output rows go to a spool file as each batch is done."""

    name = "streamed"
    stages = SCORING_STAGES

    def __init__(self, batch_rows: int, budget: dict[str, Any]):
        self.batch_rows, self.budget = batch_rows, budget

    def execute(self, backend: Backend, job: ScoreJob, timer: StageTimer, listener: Listener | None) -> Executed:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from accel.memory import release_host_memory

        with timer.stage("load"):
            pipeline = load_folder(job.folder, backend)
        columns = job.columns(pipeline)
        spool = job.scratch / f"{backend.name}.parquet"
        chunks = iter_chunks(backend.xdf, job.source, columns, self.batch_rows, read_types(pipeline, columns))
        known: _Known = []
        writer, rows, batches = None, 0, 0
        try:
            for start, frame in timed_items(chunks, timer):
                out = _score_piece(pipeline, job, frame, timer, self.batch_rows, known, start)
                piece = pa.Table.from_pandas(out, preserve_index=False)
                writer = writer or pq.ParquetWriter(spool, piece.schema)
                writer.write_table(piece)
                rows, batches = rows + len(frame), batches + 1
                del frame, out, piece
                release_host_memory(collect=False)
        finally:
            if writer is not None:
                writer.close()
        job.outputs[backend.name] = spool if writer is not None else None
        memory = {"batches": {"mode": "streaming", "rows_per_batch": self.batch_rows, "batches": batches, **self.budget}}
        return scoring_executed(pipeline, known_metrics(job.task, known), rows, memory)


def scoring_executed(pipeline: Pipeline, metrics: dict[str, float], rows: int, memory: dict[str, Any]) -> Executed:
    return Executed(pipeline.model, pipeline.fitted, metrics, {"scored": rows}, pipeline.feature_names, memory)


# --------------------------------------------------------------------------- the output file


def check_output(path: Path) -> str:
    """The output's format from its extension; refused before any work where it is not one
    accel writes or the file exists (an output is never written over)."""
    fmt = OUTPUT_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise AccelError(f"--out {str(path)!r}: write predictions to a .parquet or .csv file")
    refuse_existing(Path(path), "--out", REFUSE)
    return fmt


def write_output(path: Path, output: Frame | Path) -> Path:
    """Write ``output`` (a frame, or a streamed arm's spool file) to ``path`` whole or not at all."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    fmt = check_output(path)

    def write(tmp: Path) -> None:
        if isinstance(output, Path) and fmt == "parquet":
            shutil.copyfile(output, tmp)
        elif isinstance(output, Path):
            spool = pq.ParquetFile(output)
            with pcsv.CSVWriter(str(tmp), spool.schema_arrow) as writer:
                for group in range(spool.num_row_groups):
                    writer.write_table(spool.read_row_group(group))
        elif fmt == "parquet":
            pq.write_table(pa.Table.from_pandas(output, preserve_index=False), tmp)
        else:
            pcsv.write_csv(pa.Table.from_pandas(output, preserve_index=False), str(tmp))

    return write_new(Path(path), write, "the predictions", "choose another --out", exists=REFUSE)


# --------------------------------------------------------------------------- the paired scoring


@dataclass(frozen=True)
class PredictSettings:
    """What ``accel predict`` (and :func:`accel.predict`) is asked to do.

    Attributes
    ----------
    run : Path
        The run record ``accel run`` printed, or a pipeline folder.
    data : Path
        The rows to score: CSV, gzip CSV, a Parquet file or folder.
    out : Path
        The predictions' file (``.parquet`` or ``.csv``), never written over.
    arm : {"gpu", "cpu"} or None
        Which arm's pipeline of a run (default: the accelerated arm's where it ran).
    device : {"auto", "cpu", "gpu"}
        Where to score, as ``accel run --device``.
    baseline : bool
        Also score on the CPU arm and report the speedup (the output comes from one arm).
    memory_budget : str or None
        Memory scoring may hold (``8GB``): a larger table is scored batch by batch.
    batch_rows : int or None
        Rows per batch (default: planned from the budget).
    contributions : bool
        Add each row's SHAP contributions (XGBoost), in their own timed stage.
    records : Path
        Where the scoring record goes.
    """

    run: Path
    data: Path
    out: Path
    records: Path
    arm: str | None = None
    device: str = "auto"
    baseline: bool = False
    memory_budget: str | None = None
    batch_rows: int | None = None
    contributions: bool = False


def plan_scoring(settings: PredictSettings, job: ScoreJob, backend: Backend) -> Executor:
    """In memory, or streamed in batches when ``--memory-budget`` / ``--batch-rows`` say the table
    does not fit: the bytes a row takes are measured on the first rows pushed through the pipeline."""
    from accel.batching import SIZE_PROBE_ROWS, measure_bytes_per_row, plan_batches
    from accel.memory import parse_size

    rows_total = estimated_rows(job.source)
    if settings.memory_budget is None and settings.batch_rows is None:
        return ScoreInMemory(max(rows_total, 1))
    budget = parse_size(settings.memory_budget, "--memory-budget") if settings.memory_budget else 0
    per_row = 0.0
    if settings.batch_rows is None:
        pipeline = load_folder(job.folder, backend)
        columns = job.columns(pipeline)

        def probe() -> Any:
            chunks = iter_chunks(backend.xdf, job.source, columns, SIZE_PROBE_ROWS, read_types(pipeline, columns))
            _, frame = next(chunks)
            X = pipeline.features(frame)
            return [frame, X, pipeline.matrix(X)]

        per_row = measure_bytes_per_row(backend, probe, min(SIZE_PROBE_ROWS, max(rows_total, 1)))
    plan = plan_batches(max(rows_total, 1), per_row, budget, "--memory-budget", settings.batch_rows)
    if plan.mode == "in-memory":
        return ScoreInMemory(plan.rows_per_batch)
    return ScoreStreamed(plan.rows_per_batch, {"budget_bytes": budget, "bytes_per_row": round(per_row, 1)})


def estimated_rows(source: TableSource) -> int:
    """The table's rows: exact for Parquet (the files' metadata), estimated for CSV from the
    length of its first lines (a gzip file's uncompressed size from its trailer)."""
    import gzip

    import pyarrow.parquet as pq

    if source.kind == "parquet":
        return sum(pq.ParquetFile(p).metadata.num_rows for p in source.paths)
    path = Path(source.paths[0])
    size = path.stat().st_size
    opener: Any = open
    with open(path, "rb") as f:
        if f.read(2) == b"\x1f\x8b":  # gzip: ISIZE, the uncompressed size modulo 2**32, ends the file
            f.seek(-4, os.SEEK_END)
            size, opener = max(int.from_bytes(f.read(4), "little"), size), gzip.open
    with opener(path, "rb") as f:
        head = f.read(1 << 20)
    lines = max(head.count(b"\n"), 1)
    return max(int(size * lines / max(len(head), 1)), lines) - 1


def score_arm(backend: Backend, settings: PredictSettings, job: ScoreJob, listener: Listener | None) -> Any:
    """One arm's scoring through the one runner; a failure is the arm's ``failed``, not the command's
    (e.g. a device out of memory: the other arm still scores)."""
    from accel.runner import execute_arm, or_failed

    return or_failed(backend, lambda: execute_arm(backend, job, plan_scoring(settings, job, backend), listener))


@dataclass
class Prepared:
    """A scoring checked and ready: refusals are over, no arm has run."""

    job: ScoreJob
    manifest: dict[str, Any]
    which: str
    records: Path
    started: Any


def prepare(settings: PredictSettings) -> Prepared:
    """Everything refusable, before any arm runs: the output's name, the pipeline (whole and
    unchanged), the table, the records' folder."""
    from datetime import datetime, timezone

    from accel.pipeline import pipeline_folder, read_manifest

    check_output(settings.out)
    folder, which = pipeline_folder(settings.run, settings.arm)
    manifest = read_manifest(folder)
    source = resolve_source(str(settings.data))
    records = ensure_writable(settings.records)
    out_folder = ensure_writable(Path(settings.out).parent, "predictions", "--out")
    spool = scratch.owned_folder(out_folder, f".{Path(settings.out).name}.spool-")
    job = ScoreJob(folder, source, manifest["task"], manifest.get("model") or DEFAULT_MODEL, spool, settings.contributions)
    return Prepared(job, manifest, which, records, datetime.now(timezone.utc))


def conclude(
    settings: PredictSettings, ready: Prepared, gpu: ArmResult, cpu: ArmResult, **extra: object
) -> tuple[dict[str, Any], Path, Path]:
    """The output written from the arm that ran (the accelerated one where it did), and the
    scoring record (``extra``: what a cluster adds); returns the record, its path, the output's."""
    from datetime import datetime, timezone

    from accel.environment import collect_environment
    from accel.pairing import pair

    job, manifest = ready.job, ready.manifest
    chosen = "gpu" if gpu.status == "ok" else "cpu"
    ran = gpu if chosen == "gpu" else cpu
    if ran.status != "ok":
        raise AccelError(f"scoring failed: {ran.reason}")
    if gpu.status == "failed":
        job.notices.append(f"the GPU arm failed ({gpu.reason}): the output is the CPU arm's")
    output = write_output(settings.out, job.outputs[chosen])
    info = manifest.get("info") or {}
    record = {
        **record_head("predict"),
        "started_at": ready.started.isoformat(),
        "finished_at": datetime.now(timezone.utc).isoformat(),
        "pipeline": {"path": str(job.folder), "which": ready.which, "task": manifest["task"], "model": manifest.get("model"),
                     "trained_on": info.get("trained_on"), "run_id": info.get("run_id")},
        "data": job.source.describe(),
        "output": {"path": str(output), "arm": chosen, "rows": int(ran.rows.get("scored") or 0)},
        "notices": list(job.notices),
        "environment": collect_environment(),
        **extra,
        **pair(manifest["task"], job.model_name, gpu.as_dict(), cpu.as_dict()),
    }  # fmt: skip
    for arm in ("gpu", "cpu"):
        part = record["arms"][arm]
        if part["status"] == "ok" and part["total_seconds"]:
            part["rows_per_second"] = part["rows"]["scored"] / part["total_seconds"]
    path = write_record(ready.records, record, record_stem("predict", ready.started))
    return record, path, output


def predict(settings: PredictSettings, listener: Listener | None = None) -> tuple[dict[str, Any], Path, Path]:
    """Score ``settings.data`` in this process with the pipeline ``settings.run`` names; write the
    predictions and the scoring record. Returns the record, its path and the predictions' path."""

    ready = prepare(settings)
    job = ready.job
    try:
        arms = resolve_arms(settings.device)
        gpu = score_arm(arms.gpu, settings, job, listener) if arms.gpu is not None else skipped(str(arms.gpu_skip))
        if settings.baseline or gpu.status != "ok":
            cpu = score_arm(arms.cpu, settings, job, listener)
        else:
            cpu = skipped("not requested (add --baseline to time the CPU arm beside it)")
        return conclude(settings, ready, gpu, cpu)
    finally:
        scratch.release(job.scratch)
