"""The fitted pipeline: what a run learnt, kept to score new rows.

Every arm of ``accel run`` (in memory, streamed, on Dask) and ``accel hpo``'s tuned model end in
a :class:`Pipeline`: the fitted features (:class:`~accel.data.prepared.FeatureTransform`: the
table's plan with its vocabularies, date layouts and drops, the target encoders' statistics,
imputation and scaling; or the flights workflow's lookup tables and group statistics), the
storage precision of each feature, and the trained model. :func:`save` writes it as a folder
that loads without running code from the file:

``pipeline.json``
    What it is (format and version, the accel that wrote it), the task and classes, the decision
    threshold, the features in order, the fitted features' state, the precision, the model's
    settings, its importances, and the SHA-256 of every other file.
``tables/*.parquet``
    The fitted features' tables (target encoders' statistics, lookup tables): Parquet.
``model.ubj`` / ``model.skops``
    XGBoost's own UBJSON; a scikit-learn estimator (a cuML one as its scikit-learn twin) in
    skops, read trusting only the types the registry names (:func:`accel.models.trusted_types`).
``holdout.parquet``
    The run's hold-out rows (their row in the source file) and what the run predicted for them.

Either arm's folder loads on either device (:func:`load`). No pickle is ever read.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from accel import __version__, _compat
from accel._compat import Array, Frame
from accel.backend import Backend, get_backend
from accel.data.prepared import FeatureTransform
from accel.errors import AccelError, first_line
from accel.files import file_sha256
from accel.precision import ColumnPrecision, PrecisionPlan, StoredMatrix, store_frame
from accel.record import PairedRecord, RecordError, dumps, loads, read_record
from accel.registry import MODELS
from accel.timing import StageTimer
from accel.workflows.base import Model, WorkflowSettings
from accel.workflows.flights import FlightsTransform

FORMAT = "accel-pipeline"
#: The newest layout this accel writes and reads.
FORMAT_VERSION = 1
MANIFEST = "pipeline.json"
HOLDOUT = "holdout.parquet"
#: What a pipeline folder holds of the data it was trained on, for the record and the docs.
DATA_VALUES = {
    "table": "category vocabularies, target-encoding statistics per category, imputation and scaling values",
    "flights": "the weather and planes tables, route and carrier-hour statistics, category vocabularies",
}
#: Rows scored at a time when no batch size is given.
SCORE_BATCH_ROWS = 1 << 20


class Fitted(Protocol):
    """What a pipeline is made from, of a workflow (one process or Dask): its name, task and settings."""

    name: str
    task: str
    settings: WorkflowSettings


@dataclass
class Pipeline:
    """A fitted pipeline on one arm: raw rows in, predictions out.

    Attributes
    ----------
    workflow : str
        ``"table"`` (a user's table) or ``"flights"``.
    task : str
        ``binary``, ``multiclass`` or ``regression``.
    classes : list or None
        The class labels, in the order of the probabilities' columns.
    transform : FeatureTransform
        The fitted features.
    model, fitted
        The model (:class:`accel.models.XGBoostModel` or :class:`~accel.models.EstimatorModel`)
        and what it fitted (a booster, an estimator).
    precision : PrecisionPlan
        How each feature is stored before the model sees it (float32, or float16 with its scale).
    backend : Backend
        The arm it scores on.
    info : dict
        Where it came from: the arm and device it trained on, the model's name, the run.
    importances : dict
        Kind -> feature -> value (``gain``, ``mean_abs_shap``, ``impurity``, ``abs_coefficient``).
    threshold : float
        A binary model predicts the second class where its probability is at least this.
    """

    workflow: str
    task: str
    classes: list[Any] | None
    transform: Any
    model: Any
    fitted: Any
    precision: PrecisionPlan
    backend: Backend
    info: dict[str, Any] = field(default_factory=dict)
    importances: dict[str, dict[str, float]] = field(default_factory=dict)
    threshold: float = 0.5
    #: The run's hold-out rows: ``row`` (in the source file) and ``prediction`` (the model's output).
    holdout: Any = None
    #: What the last scoring noticed (unseen categories, ignored columns).
    notices: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ the user's view

    @property
    def classes_(self) -> np.ndarray:
        """The class labels (scikit-learn's name); empty for regression."""
        return np.asarray(self.classes if self.classes is not None else [])

    @property
    def feature_names(self) -> list[str]:
        return [c.name for c in self.precision.columns]

    @property
    def feature_importances(self) -> Any:
        """Importance of each feature (a pandas DataFrame, one column per kind the model has),
        most important first."""
        import pandas as pd

        frame = pd.DataFrame(self.importances).reindex(self.feature_names)
        frame.index.name = "feature"
        if frame.columns.size:
            frame = frame.sort_values(list(frame.columns)[-1], ascending=False)
        return frame

    def predict_proba(self, data: Frame | str | os.PathLike[str]) -> np.ndarray:
        """Class probabilities ``(rows, classes)`` of ``data`` (a pandas or cuDF DataFrame, or a path)."""
        if self.task == "regression":
            raise AccelError("predict_proba: the pipeline is a regression model; use predict")
        return probabilities(self.task, self.score(data))

    def predict(self, data: Frame | str | os.PathLike[str]) -> np.ndarray:
        """Predicted labels (classification, with :attr:`threshold` for a binary model) or values."""
        return labels(self, self.score(data))

    def contributions(self, data: Frame | str | os.PathLike[str]) -> Any:
        """Per-row SHAP contributions of each feature and the bias (a pandas DataFrame)."""
        import pandas as pd

        X = self.features(self.frame(data))
        values = self.model.contributions(self.backend, self.fitted, self.matrix(X).batch(0, len(X)))
        return pd.DataFrame(values, columns=[*self.feature_names, "bias"])

    def score(self, data: Frame | str | os.PathLike[str], batch_rows: int = SCORE_BATCH_ROWS) -> np.ndarray:
        """The model's output for ``data``'s rows, as the run's predict stage gives it: the
        probability of the second class (binary), ``(rows, classes)`` probabilities
        (multiclass) or values (regression)."""
        X = self.features(self.frame(data))
        return self.predict_matrix(self.matrix(X, batch_rows), batch_rows)

    # ------------------------------------------------------------------ the steps

    def frame(self, data: Frame | str | os.PathLike[str]) -> Frame:
        """``data`` as a frame of this arm's library: a DataFrame as it is (moved between pandas
        and cuDF where needed), a path read as ``accel run --data`` reads it."""
        if isinstance(data, (str, os.PathLike)):
            from accel.data.readers import resolve_source

            source = resolve_source(str(data))
            return read_rows(self, source, [c for c in [*self.required, self.target] if c in source.columns])
        return _compat.frame_of(self.backend.xdf, data)

    @property
    def required(self) -> list[str]:
        """The columns a row must have to be scored."""
        return list(self.transform.required)

    @property
    def target(self) -> str:
        """The target column of the training table (``arr_delay`` for flights)."""
        return self.transform.plan.target if self.workflow == "table" else "arr_delay"

    def features(self, frame: Frame) -> Frame:
        """The feature frame of ``frame``, checked first: rows the pipeline cannot score (a column
        missing, text in a column trained as numbers) are refused in one line naming the column;
        what scoring does about the rest (extra columns ignored, unseen categories of a table's
        categorical columns scored as missing) goes to :attr:`notices`."""
        present = [str(c) for c in frame.columns]
        check_columns(self, present, "the data")
        extra = [c for c in present if c not in self.required and c != self.target]
        self.notices = [f"{len(extra)} column(s) the pipeline does not use were ignored: {', '.join(extra[:5])}"] if extra else []
        frame = frame[self.required]
        if self.workflow == "table":
            cast = self.transform.featurizer.cast(frame)  # the transform's own cast
            for col in self.transform.plan.features:
                s = frame[col.name]
                if col.kind == "numeric" and _compat.is_text_dtype(s):
                    bad = s[s.notna() & _compat.numbers_in_text(s).isna()]
                    if len(bad) and col.numbers_in_text:  # as its training rows were
                        self.notices.append(f"column {col.name!r}: {len(bad):,} value(s) not numbers, scored as missing")
                    elif len(bad):
                        example = _compat.to_pandas(bad.head(1)).iloc[0]
                        raise AccelError(
                            f"column {col.name!r} held numbers in training and holds text here (e.g. {str(example)[:40]!r}): "
                            "fix the column or score a table like the training one"
                        )
                elif col.kind == "categorical":
                    codes = cast[col.name].cat.codes
                    unseen = int(_compat.column_sum(((codes < 0) | codes.isna()) & s.notna()))
                    if unseen:
                        self.notices.append(f"column {col.name!r}: {unseen:,} value(s) not seen in training, scored as missing")
            frame = cast
        return self.transform.transform(frame)

    def matrix(self, X: Frame, batch_rows: int = SCORE_BATCH_ROWS) -> StoredMatrix:
        """The features stored as the run stored them (:func:`accel.precision.store_frame`)."""
        return store_frame(self.backend, X, self.transform.categorical, self.precision, batch_rows)

    def predict_matrix(self, matrix: StoredMatrix, batch_rows: int = SCORE_BATCH_ROWS) -> np.ndarray:
        return _compat.to_numpy(self.model.predict(self.backend, self.fitted, matrix, batch_rows))

    def target_codes(self, frame: Frame) -> tuple[np.ndarray, np.ndarray] | None:
        """The target of ``frame``'s rows as the model's codes, where it is known (a label the
        model has, a value that is not missing), and which rows those are; None when ``frame``
        has no target column."""
        if self.target not in frame.columns:
            return None
        has = frame[self.target].notna()
        known = _compat.to_numpy(has).astype(bool)
        codes = _compat.to_numpy(self.transform.labels(frame[has]))
        if self.task != "regression":
            labelled = codes >= 0  # a label the model was not trained on has no code
            known[np.flatnonzero(known)[~labelled]] = False
            codes = codes[labelled].astype(np.int32)
        return codes, known

    def describe(self) -> dict[str, Any]:
        """The pipeline as the run record names it (without where it was saved), with what it holds of
        the training data: its features' values and what the model keeps (the registry says)."""
        spec = MODELS.get(str(self.info.get("model")))
        holds = (DATA_VALUES[self.workflow], spec.holds if spec is not None else "")
        return {
            "workflow": self.workflow,
            "task": self.task,
            "classes": None if self.classes is None else [v.item() if hasattr(v, "item") else v for v in self.classes],
            "threshold": self.threshold if self.task == "binary" else None,
            "features": len(self.feature_names),
            "model": self.info.get("model"),
            "trained_on": self.info.get("trained_on"),
            "holds_data_values": "; ".join(x for x in holds if x),
        }


def probabilities(task: str, output: np.ndarray) -> np.ndarray:
    """``(rows, classes)`` probabilities from a classifier's output (binary: the second class's)."""
    output = np.asarray(output, dtype=np.float64)
    return np.column_stack([1.0 - output, output]) if task == "binary" else output


def labels(pipeline: Pipeline, output: np.ndarray) -> np.ndarray:
    """The predicted labels (or values) from the model's output."""
    if pipeline.task == "regression":
        return np.asarray(output, dtype=np.float64)
    index = (np.asarray(output) >= pipeline.threshold).astype(int) if pipeline.task == "binary" else np.argmax(output, axis=1)
    return pipeline.classes_[index]


def check_columns(pipeline: Pipeline, present: list[str], what: str) -> None:
    """Refuse a table (``what``: how the message names it) that lacks a column the pipeline needs."""
    missing = [c for c in pipeline.required if c not in present]
    if missing:
        shown = ", ".join(repr(c) for c in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise AccelError(f"{what} lacks column(s) the pipeline needs: {shown}; score a table with the training table's columns")


# --------------------------------------------------------------------------- saving


def save(pipeline: Pipeline, folder: Path) -> dict[str, Any]:
    """Write ``pipeline`` into the new folder ``folder``, inside the temporary folder
    :func:`beside_record` renames whole once every arm's is written (a reader never sees half of
    one). Returns what the run record says of it: its path, its size in bytes and its files."""
    state, tables = pipeline.transform.state()
    (folder / "tables").mkdir(parents=True)
    for name, table in tables.items():
        table.to_parquet(folder / "tables" / f"{name}.parquet", index=False)
    pipeline.model.save(pipeline.fitted, folder / pipeline.model.file_name)
    if pipeline.holdout is not None:
        pipeline.holdout.to_parquet(folder / HOLDOUT, index=False)
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "accel_version": __version__,
        **pipeline.describe(),
        "transform": {"kind": pipeline.workflow, "state": state, "tables": sorted(tables)},
        "precision": {"precision": pipeline.precision.precision, "columns": [vars(c) for c in pipeline.precision.columns]},
        "categorical": list(pipeline.transform.categorical),
        "model_file": pipeline.model.file_name,
        "model_settings": pipeline.model.settings(),
        "info": pipeline.info,
        "importances": pipeline.importances,
        "files": {name: file_sha256(folder / name) for name in files},
    }
    (folder / MANIFEST).write_text(dumps(manifest) + "\n")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return {"path": str(folder), "bytes": size, "files": len(files) + 1, **pipeline.describe()}


# --------------------------------------------------------------------------- loading


def pipeline_folder(path: Path, arm: str | None = None) -> tuple[Path, str]:
    """The pipeline folder ``path`` names: itself, or the one a run record names (its accelerated
    arm's where that arm ran and saved one, else the CPU arm's; ``arm`` picks). Returns the
    folder and a line saying which it is."""
    path = Path(path)
    if (path / MANIFEST).is_file():
        return path, f"pipeline {path}"
    if path.is_dir():
        folders = {a: path / a for a in ("gpu", "cpu") if (path / a / MANIFEST).is_file()}
        if not folders:
            raise AccelError(f"{str(path)!r} is neither a pipeline folder nor a run record; give the record `accel run` printed")
        what, where = repr(str(path)), f"in {path}"
    else:
        if not path.is_file():
            raise AccelError(f"no run record or pipeline at {str(path)!r}; give the record path `accel run` printed")
        try:
            record = read_record(path)
        except RecordError as exc:
            raise AccelError(f"{str(path)!r} is not a run record ({exc}); give the record path `accel run` printed") from None
        saved = record.pipelines if isinstance(record, PairedRecord) else {}
        if not saved:
            raise AccelError(f"the run record {str(path)!r} names no pipeline (written by an accel that kept none): run it again")
        folders = {a: path.parent / str(saved[a].path or "") for a in ("gpu", "cpu") if a in saved}
        what, where = f"the run record {str(path)!r}", f"of run {record.run_id}"
    picked = arm or next(iter(folders), None)
    if picked not in folders:
        raise AccelError(f"{what} has no {picked} pipeline (it has: {', '.join(folders) or 'none'})")
    return folders[picked], f"the {picked} arm's pipeline {where}"


def read_manifest(folder: Path) -> dict[str, Any]:
    """The folder's ``pipeline.json``, checked: an accel pipeline, of a version this accel reads,
    every file present and unchanged."""
    path = Path(folder) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise AccelError(f"{str(folder)!r} holds no {MANIFEST}: not a pipeline folder, or one cut short") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise AccelError(
            f"{str(path)!r} is not a readable pipeline manifest ({type(exc).__name__}); save the pipeline again"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise AccelError(f"{str(path)!r} is not an accel pipeline")
    version = manifest.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise AccelError(f"{str(path)!r} has no format version: not a pipeline this accel wrote")
    if version > FORMAT_VERSION:
        raise AccelError(
            f"the pipeline was written by a newer accel ({manifest.get('accel_version')}, format {version}; this accel reads "
            f"format {FORMAT_VERSION}): upgrade accel to load it"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise AccelError(f"{str(path)!r} lists no files: not a complete pipeline")
    for name, digest in files.items():
        target = Path(folder) / str(name)
        if ".." in Path(str(name)).parts or Path(str(name)).is_absolute():
            raise AccelError(f"{str(path)!r} names a file outside its folder ({name!r}): refused")
        if not target.is_file():
            raise AccelError(f"the pipeline in {str(folder)!r} is incomplete: {name} is missing")
        if file_sha256(target) != digest:
            raise AccelError(
                f"the pipeline in {str(folder)!r} was changed after it was saved: {name} does not match its checksum"
            )
    return manifest


def load(path: Path | str, device: str = "auto", arm: str | None = None) -> Pipeline:
    """The pipeline at ``path`` (a pipeline folder, or the run record ``accel run`` printed), on
    ``device`` (``auto``: the GPU where one is usable, else the CPU; a GPU asked for where none
    is usable is a :class:`~accel.errors.DeviceUnavailable`).

    Raises :class:`~accel.errors.AccelError` in one line for a file that is not a pipeline, one cut
    short or changed after it was saved, or one written by a newer accel.
    """
    folder, _ = pipeline_folder(Path(path), arm)
    return load_folder(folder, get_backend(device))  # type: ignore[arg-type]


def load_folder(folder: Path, backend: Backend) -> Pipeline:
    """The pipeline saved in ``folder``, scoring on ``backend``."""
    import pyarrow.parquet as pq

    from accel.data.autofeatures import TableTransform
    from accel.models import build_model

    manifest = loads(json.dumps(read_manifest(folder)))  # the non-finite values listed under "nulls" as floats again
    try:
        kind = manifest["transform"]["kind"]
        cls: Any = {"table": TableTransform, "flights": FlightsTransform}[kind]
        tables = {n: pq.read_table(Path(folder) / "tables" / f"{n}.parquet").to_pandas() for n in manifest["transform"]["tables"]}
        transform = cls.from_state(backend.xdf, manifest["transform"]["state"], tables)
        settings = manifest["model_settings"]
        model = build_model(settings["name"], settings["task"], settings["params"], settings["seed"], settings["n_classes"] or 2)
        fitted = model.load(backend, Path(folder) / manifest["model_file"])
        precision = PrecisionPlan(
            manifest["precision"]["precision"], [ColumnPrecision(**c) for c in manifest["precision"]["columns"]]
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise AccelError(f"the pipeline in {str(folder)!r} cannot be read ({type(exc).__name__}: {str(exc)[:80]})") from None
    holdout = pq.read_table(Path(folder) / HOLDOUT).to_pandas() if (Path(folder) / HOLDOUT).is_file() else None
    importances = {k: dict(v) for k, v in (manifest.get("importances") or {}).items()}
    info, threshold = dict(manifest.get("info") or {}), float(manifest.get("threshold") or 0.5)
    return Pipeline(
        kind, manifest["task"], manifest["classes"], transform, model, fitted, precision, backend, info, importances, threshold, holdout
    )  # fmt: skip


# --------------------------------------------------------------------------- from a run


def from_run(
    workflow: Fitted,
    backend: Backend,
    model: Model,
    fitted: Any,
    transform: FeatureTransform,
    precision: PrecisionPlan,
    timer: StageTimer,
    sample: Callable[[int], Array],
    holdout: tuple[np.ndarray | None, Array],
    **info: object,
) -> Pipeline:
    """The pipeline an arm of ``workflow`` fitted (``info``: where it trained, the rounds ...).

    Its importances are found in their own timed stage ``explain`` of ``timer``: the model's own
    and, for XGBoost, SHAP on ``sample(n)`` (the float32 matrix of the first ``n`` hold-out rows),
    ``n`` at most the workflow's ``explain_rows`` (0: no SHAP). ``holdout`` is the hold-out rows'
    ids (rows of the source file; None where they have no place in a file) and the model's output
    for them, kept as :attr:`Pipeline.holdout`.
    """
    import pandas as pd

    classes = None
    if workflow.task != "regression":
        plan = getattr(workflow, "plan", None)
        classes = list(plan.classes) if plan is not None and plan.classes is not None else [0, 1]
        # Numeric classes are planned as floats; whole numbers are labels such as 0 and 1, not 0.0 and 1.0.
        if all(isinstance(c, float) and c.is_integer() for c in classes):
            classes = [int(c) for c in classes]
    model_name, trained_on = getattr(workflow, "model_name", model.name), model.device_used(backend, fitted)
    info = {"model": model_name, "arm": backend.name, "trained_on": trained_on, **info}
    pipeline = Pipeline(workflow.name, workflow.task, classes, transform, model, fitted, precision, backend, info)
    rows = workflow.settings.explain_rows
    with timer.stage("explain"):
        pipeline.importances = model.importances(backend, fitted, pipeline.feature_names, sample(rows) if rows > 0 else None)
    test_ids, output = holdout
    if test_ids is not None:
        output = _compat.to_numpy(output)
        columns = {f"prediction_{k}": p for k, p in enumerate(output.T)} if output.ndim == 2 else {"prediction": output}
        pipeline.holdout = pd.DataFrame({"row": np.asarray(test_ids, dtype=np.int64), **columns})
    return pipeline


def beside_record(record: dict[str, Any], pipelines: dict[str, Pipeline]) -> Callable[[Path], Callable[[], None]] | None:
    """What :func:`accel.record.write_record` calls to save the arms' pipelines beside the record:
    ``<run id>.pipeline/<arm>/``, named in the record's ``pipelines`` (each with its path relative
    to the record's folder, its size and what it holds). The folder is claimed by name first
    (another run's folder makes the record take the next number), written whole in a temporary
    folder and then moved into place."""
    if not pipelines:
        return None

    def write(path: Path) -> Callable[[], None]:
        folder = path.with_name(f"{path.stem}.pipeline")
        folder.mkdir()  # FileExistsError: taken, the record takes the next number
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        try:
            saved = {}
            for arm, pipeline in pipelines.items():
                pipeline.info["run_id"] = path.stem
                saved[arm] = save(pipeline, tmp / arm)
                saved[arm]["path"] = f"{folder.name}/{arm}"
            os.replace(tmp, folder)  # over the empty folder that claimed the name
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(folder, ignore_errors=True)
            raise
        record["pipelines"] = saved
        return lambda: shutil.rmtree(folder, ignore_errors=True)

    return write


def saved_folder(record: Mapping[str, Any], path: Path) -> Path | None:
    """Where the pipeline a user would take from a record went (its accelerated arm's where that
    arm saved one, else the CPU arm's), for the line the command prints; None without one."""
    saved = record.get("pipelines") or {}
    arm = next((a for a in ("gpu", "cpu") if isinstance(saved.get(a), dict)), None)
    return Path(path).parent / saved[arm]["path"] if arm else None


def read_rows(pipeline: Pipeline, source: Any, columns: list[str]) -> Frame:
    """The ``columns`` of a table to score, read on the pipeline's arm with the training table's
    types (:func:`read_types`); a value a column's type does not take is said in one line."""
    from accel.data.readers import read_source

    types = read_types(pipeline, columns)
    try:
        return read_source(pipeline.backend.xdf, source, columns, types)
    except (ValueError, TypeError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        typed = ", ".join(f"{c} ({t})" for c, t in types.items() if t != "str")
        raise AccelError(
            f"--data {str(source.original)!r}: a value does not parse as its column's type ({first_line(exc, 160)}); "
            f"the pipeline reads {typed or 'these columns'} as the training table had them"
        ) from None


def read_types(pipeline: Pipeline, columns: list[str]) -> dict[str, str]:
    """Column types to read a table with, whole or in chunks (every chunk parses alike, and as the
    run read it): the plan's, for the columns read."""
    return {k: v for k, v in pipeline.transform.plan.csv_dtypes().items() if k in columns} if pipeline.workflow == "table" else {}
