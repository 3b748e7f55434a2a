"""accel as a library: ``accel.run(...)`` in a notebook or a script does what ``accel run`` does.

The command line is a thin layer over the same functions: one configuration (validated as the
flags are), one paired run, one record written under ``out``. What comes back is a
:class:`RunResult`: the record as a dict, and its stages, metrics and memory as pandas
DataFrames; in Jupyter it shows the stage table and a speedup chart. :func:`benchmark` (``accel
bench``) and :func:`scale` (``accel scale``) return a :class:`BenchResult` and a
:class:`ScaleResult` the same way.

>>> import accel
>>> result = accel.run("flights", rows=20_000, device="cpu")  # doctest: +SKIP
>>> result.stages  # doctest: +SKIP
          gpu_seconds  cpu_seconds  speedup
stage
load              NaN        0.061      NaN
...
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from dataclasses import dataclass
from functools import cached_property, wraps
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from pydantic import ValidationError

from accel.config import ClusterConfig, RunConfig, build_config, config_overrides, errors_message, workflow_source
from accel.errors import AccelError, first_line
from accel.openmp import settle
from accel.record import (
    ARMS,
    CREATED_FOLDERS,
    Arm,
    BenchRecord,
    CompareArm,
    CompareRecord,
    CrossoverBench,
    DbBench,
    HpoArm,
    HpoRecord,
    ModelsBench,
    PredictRecord,
    Record,
    RunRecord,
    ScalingRecord,
    Scored,
    output_root,
    parse_record,
    remove_unused_folders,
    scaling_label,
)  # fmt: skip

if TYPE_CHECKING:
    import pandas as pd

    from accel.result import Listener


def _strict_arguments(fn: Any) -> Any:
    """``fn`` with its arguments checked against its annotations, strictly, before it runs, and
    the output folders it made and left empty removed when it raises (:func:`~accel.record.remove_unused_folders`).

    A boolean is not an integer (``seed=True`` is refused, not run with seed 1), text is not a
    number (``test_size="1e400"``), a string is not a list of names; NumPy's integer and float
    scalars count as the Python numbers they hold. A wrong type is the one-line
    :class:`~accel.errors.AccelError` the command line prints for a bad flag.
    """
    import inspect
    import numbers

    from pydantic import ConfigDict, validate_call

    checked = validate_call(config=ConfigDict(strict=True, arbitrary_types_allowed=True))(fn)
    signature = inspect.signature(fn)
    # A positional argument's index, as pydantic names it in an error: its parameter's name (past
    # the named ones, the ``*args`` that takes it; Parameter kinds are ordered, keyword-only after).
    names = [p.name for p in signature.parameters.values() if p.kind < inspect.Parameter.KEYWORD_ONLY]

    def named(part: int | str) -> int | str:
        return names[min(part, len(names) - 1)] if isinstance(part, int) else part

    def plain(value: Any) -> Any:
        if isinstance(value, numbers.Real) and type(value) not in (bool, int, float):  # NumPy's scalars
            return int(value) if isinstance(value, numbers.Integral) else float(value)
        return value

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args = tuple(plain(a) for a in args)
        kwargs = {k: plain(v) for k, v in kwargs.items()}
        signature.bind(*args, **kwargs)  # an unknown or missing argument: Python's own TypeError
        made = len(CREATED_FOLDERS)
        try:
            return checked(*args, **kwargs)
        except BaseException as exc:
            remove_unused_folders(since=made)  # the output folders fn made and left empty
            # Anything but the check of the arguments (a ValidationError raised inside fn too) as it is.
            if not isinstance(exc, ValidationError) or exc.title != fn.__name__:
                raise
            errors = [{**e, "loc": (named(e["loc"][0]), *e["loc"][1:])} for e in exc.errors()]
            raise AccelError(errors_message(errors, f"accel.{fn.__name__}()")) from None

    return wrapper


#: The settings of :func:`run` that :func:`tune` takes too (each the workflow file's key and the flag's name).
_SETTINGS = (
    "data", "target", "task", "model", "drop", "delimiter", "date_format", "probe", "device", "precision",
    "batch_rows", "memory_budget", "rmm_pool", "rows", "test_size", "seed", "out",
)  # fmt: skip


R = TypeVar("R", bound=Record)


@dataclass(frozen=True)
class _Recorded(Generic[R]):
    """What every result holds: the record as written, where it went, and the record typed."""

    record: dict[str, Any]
    path: Path

    @cached_property
    def typed(self) -> R:
        """The record as its typed class (:func:`accel.record.parse_record`): what the views below read."""
        return cast(R, parse_record(self.record))


@dataclass(frozen=True)
class RunResult(_Recorded[RunRecord]):
    """One paired run: the record accel wrote, and views of it as tables.

    Attributes
    ----------
    record : dict
        The run record, as written (``accel report`` and ``accel experiments`` read the file).
    path : pathlib.Path
        Where the record was written.
    typed : accel.record.RunRecord
        The record as its typed class, which the views below read.
    """

    @property
    def stages(self) -> Any:
        """Seconds per stage on each arm and the speedup (CPU seconds / GPU seconds); NaN where an arm did not run."""
        r = self.typed
        seconds = {f"{a}_seconds": {**r.arms[a].stages, "total": r.arms[a].total_seconds} for a in ARMS}
        return _by_name("stage", {**seconds, "speedup": r.speedup}, [*r.arms["cpu"].stages, *r.arms["gpu"].stages], "total")

    @property
    def metrics(self) -> Any:
        """The hold-out metrics of each arm (one row per metric)."""
        arms = self.typed.arms
        return _by_name("metric", {a: arms[a].metrics for a in ARMS}, [*arms["cpu"].metrics, *arms["gpu"].metrics])

    @property
    def memory(self) -> Any:
        """Each arm's status and peak host and device memory (MB)."""
        return _arm_table([self.typed.arms[a] for a in ARMS], **_PEAKS)

    @property
    def parity(self) -> dict[str, Any]:
        """Whether the arms reached the same quality: metric, both values, tolerance, ``ok``."""
        return self.typed.parity.model_dump()

    @property
    def speedup(self) -> float:
        """The whole run's speedup (NaN unless both arms ran)."""
        return _float(self.typed.speedup.get("total"))

    @property
    def pipeline(self) -> Any:
        """The fitted pipeline (:class:`accel.pipeline.Pipeline`) of the accelerated arm where it
        ran, else the CPU arm's, loaded from where the run saved it, on this machine's device:
        ``result.pipeline.predict(df)``."""
        return load(self.path)

    @property
    def importances(self) -> Any:
        """Each feature's importance by kind (the accelerated arm's model where it ran), most important first."""
        import pandas as pd

        arms = self.typed.arms
        frame = pd.DataFrame(next((arms[a].importances for a in ARMS if arms[a].importances), {})).rename_axis("feature")
        return frame.sort_values(list(frame.columns)[-1], ascending=False) if frame.columns.size else frame

    def __repr__(self) -> str:
        r = self.typed
        shown = ", ".join(f"{a} {r.arms[a].status}" for a in ARMS)
        return f"RunResult({r.workflow!r}, {shown}, speedup {self.speedup:.3g}, record {str(self.path)!r})"

    def _repr_html_(self) -> str:
        """For Jupyter: the stage table with a bar per stage's speedup, the hold-out metrics of
        both arms with their parity, the rounds early stopping chose and remarks on the metrics."""
        from accel.report.console import parity_line, run_notes

        r, stages = self.typed, self.stages
        chart = _speedup_chart(stages["speedup"].items(), "speedup per stage", "one arm ran")
        metrics = "<p><b>hold-out metrics</b></p>" + self.metrics.to_html(float_format=lambda v: f"{v:.4f}", na_rep="—")
        remarks = _paragraphs([parity_line(r.parity), *run_notes(r)])
        notes = _skip_notes(r.arms.items())
        return _html(f"accel run: {r.workflow}", stages, "n/a", chart, notes, metrics, remarks, record=self.path)


def _by_name(index: str, columns: Mapping[str, Mapping[str, Any]], names: Iterable[str], *last: str) -> Any:
    """``columns`` (each a value by name) as floats, one row per name of ``names`` (once each) then of
    ``last``, NaN where a column has no value; the index is named ``index``."""
    import pandas as pd

    return pd.DataFrame(columns, index=pd.Index([*dict.fromkeys(names), *last], name=index), dtype=float)


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


def _html(heading: str, table: pd.DataFrame, na_rep: str, *parts: str, **paths: Path) -> str:
    """A result as Jupyter shows it: ``heading``, ``table`` (four significant digits, ``na_rep`` for
    NaN), then ``parts``, then where its files went (``paths``: ``<p>record: <code>PATH</code></p>``)."""
    shown = table.to_html(float_format=lambda v: f"{v:.4g}", na_rep=na_rep)
    where = ", ".join(f"{name}: <code>{html.escape(str(path))}</code>" for name, path in paths.items())
    return f"<h4>{html.escape(heading)}</h4>{shown}" + "".join(parts) + (f"<p>{where}</p>" if paths else "")


def _paragraphs(lines: Iterable[str]) -> str:
    """Each of ``lines`` that is not empty as a paragraph of its own."""
    return "".join(f"<p>{html.escape(line)}</p>" for line in lines if line)


def _arm_row(arm: Any, columns: Mapping[str, Callable[[Any], Any]]) -> dict[str, Any]:
    """An arm's ``status``, then what each of ``columns`` reads of it, as a float (NaN for None)."""
    return {"status": arm.status, **{name: _float(read(arm)) for name, read in columns.items()}}


def _arm_table(arms: Sequence[Any], **columns: Callable[[Any], Any]) -> Any:
    """One row per arm of :data:`ARMS`: its :func:`_arm_row`."""
    import pandas as pd

    return pd.DataFrame([_arm_row(a, columns) for a in arms], index=pd.Index(ARMS, name="arm"))


#: The peak memory columns of :func:`_arm_table`.
_PEAKS = {"peak_host_mb": attrgetter("peak_host_mb"), "peak_device_mb": attrgetter("peak_device_mb")}


def _speedup_chart(speedups: Iterable[tuple[Any, float]], caption: str, none: str) -> str:
    """A bar per finite speedup (label, value), scaled to the largest; ``<p>speedup: n/a (none)</p>``
    when none is finite."""
    finite = [(label, value) for label, value in speedups if math.isfinite(value)]
    top = max((value for _, value in finite), default=1.0) or 1.0
    bars = "".join(
        f"<tr><td>{html.escape(str(label))}</td><td><div style='background:#76b900;height:0.9em;"
        f"width:{max(2.0, 200 * value / top):.0f}px'></div></td><td>{value:.3g}×</td></tr>"
        for label, value in finite
    )
    return f"<table><caption>{html.escape(caption)}</caption>{bars}</table>" if bars else f"<p>speedup: n/a ({none})</p>"


def _notes(said: Iterable[tuple[str, str]]) -> str:
    """A paragraph per (what, why): ``<p><b>what</b>: why</p>``."""
    return "".join(f"<p><b>{html.escape(head)}</b>: {html.escape(rest)}</p>" for head, rest in said)


def _skip_notes(arms: Iterable[tuple[str, Arm]]) -> str:
    """Why each arm that did not run did not, in the terminal's words ("GPU arm skipped: ...")."""
    from accel.report.console import arm_status_line

    return _notes(arm_status_line(name, a).partition(": ")[::2] for name, a in arms if not a.ok and a.reason)


@_strict_arguments
def run(
    workflow: str | os.PathLike[str] | None = None, *, data: str | os.PathLike[str] | Any | None = None,
    target: str | None = None, task: str | None = None, model: str | None = None, drop: str | Sequence[str] | None = None,
    delimiter: str | None = None, date_format: Mapping[str, str] | None = None, probe: str | None = None,
    device: str | None = None, precision: str | None = None, batch_rows: int | str | None = None,
    memory_budget: str | None = None, rmm_pool: str | None = None, rows: int | None = None,
    test_size: float | None = None, seed: int | None = None, out: str | os.PathLike[str] | None = None,
    cluster: str | None = None, scheduler: str | None = None, baseline_scheduler: str | None = None,
    workers: int | None = None, threads_per_worker: int | None = None, worker_memory: str | None = None,
    device_memory_limit: str | None = None, protocol: str | None = None, scale: int | None = None,
    progress: bool = True,
) -> RunResult:  # fmt: skip
    """Run a workflow on the accelerated arm and the CPU baseline, write its record, return it.

    Every parameter is the command line's flag of the same name (``rows=`` is ``--rows``);
    None leaves the workflow file's value, else the default. The settings are checked as the
    flags are, by the same functions, and refused with the same one-line error.

    Parameters
    ----------
    workflow : str or path, optional
        ``"flights"`` (the embedded default), or a workflow YAML file. Leave it out with
        ``data=``: your own table.
    data : str, path or DataFrame, optional
        Your own table: a CSV file, a Parquet file, a folder of Parquet files, or a pandas / cuDF
        DataFrame (written to a temporary Parquet file for the run; its rows are the hold-out ids).
    target : str, optional
        With ``data``: the column to predict.
    task : {"auto", "classification", "regression"}, optional
        With ``data``: inferred when left out.
    model : str, optional
        With ``data``: the model (default :data:`accel.registry.DEFAULT_MODEL`, XGBoost), cuML on
        the GPU arm and scikit-learn on the CPU arm.
    drop : str or sequence of str, optional
        With ``data``: columns to leave out.
    delimiter : str, optional
        With ``data``: the CSV delimiter (detected when the file parses into one column).
    date_format : mapping of str to str, optional
        With ``data``: column -> strptime format of its dates, over the detected layout.
    probe : {"auto", "off", "force"}, optional
        With ``data`` and XGBoost: the encoding probe for categorical columns.
    device : {"auto", "cpu", "gpu"}, optional
        The accelerated arm: ``"auto"`` (the GPU when usable, else recorded as skipped),
        ``"gpu"`` (an error if none), ``"cpu"`` (only the CPU baseline).
    precision : {"fp32", "fp16"}, optional
        Storage of the feature matrix.
    batch_rows : int or "auto", optional
        Rows per batch (``"auto"``: planned from the memory budget).
    memory_budget : str, optional
        Memory a run may hold, e.g. ``"8GB"``.
    rmm_pool : str, optional
        The GPU arm's RMM pool: ``"auto"``, ``"off"`` or a size; with ``cluster``, per worker.
    rows, scale : int, optional
        A seeded sample of this many rows; the data replicated this many times with jitter
        (``scale``, default 1).
    test_size : float, optional
        Share of rows held out for testing (default 0.2).
    seed : int, optional
        Seed for sampling, splitting and the model (default 42).
    out : str or path, optional
        Folder for the run record (default ``$ACCEL_OUT_DIR``, else ``runs``).
    cluster : {"local", "local-cuda"}, optional
        Start a Dask cluster here and run on it.
    scheduler : str, optional
        Run on a running Dask cluster at this address (``tcp://HOST:PORT``); not with ``cluster``.
    baseline_scheduler : str, optional
        With ``scheduler`` of GPU workers: a running CPU cluster for the baseline arm.
    workers, threads_per_worker : int, optional
        With ``cluster``: the workers to start and the threads of each.
    worker_memory, device_memory_limit : str, optional
        With ``cluster``: host memory per worker, beyond which Dask spills to disk; with
        ``cluster="local-cuda"``, device memory per worker above which Dask-CUDA spills.
    protocol : {"tcp", "ucx"}, optional
        With ``cluster``: the workers' protocol.
    progress : bool, default True
        Show the arms and their stages as they run (on stderr: in a notebook, a line per
        stage), as the command line does; False: nothing until the result.

    Returns
    -------
    RunResult

    Raises
    ------
    accel.errors.AccelError
        For every bad input, with the one-line message the command line prints (nothing is
        written then): ``workers=`` without ``cluster=``, ``cluster=`` with ``scheduler=``, ...
    """
    given = locals()
    with _table_file(data) as table:
        config = settings_config(workflow, {**given, "data": table}, "accel.run()")
        # Plain lines where Dask workers write to the same terminal, as accel run prints them.
        with _display(progress, live=False if config.cluster is not None else None) as listener:
            return RunResult(*run_config(config, listener))


def _display(shown: bool, live: bool | None = None) -> AbstractContextManager[Listener | None]:
    """The progress display (:class:`~accel.report.console.ProgressDisplay`, closed afterwards) of a
    call that shows its progress, else None. ``live``: as the display takes it."""
    if not shown:
        return nullcontext()
    from accel.report.console import ProgressDisplay

    return closing(ProgressDisplay(live=live))


@_strict_arguments
def load(run: str | os.PathLike[str], *, device: str = "auto", arm: str | None = None) -> Any:
    """The fitted pipeline a run saved, ready to score: ``accel.load(path).predict(df)``.

    Parameters
    ----------
    run : str or path
        The run record ``accel run`` printed (or :attr:`RunResult.path`), or a pipeline folder.
    device : {"auto", "cpu", "gpu"}, default "auto"
        Where it scores: the GPU where one is usable, else the CPU (a pipeline trained on either
        arm loads on either).
    arm : {"gpu", "cpu"}, optional
        Which arm's pipeline of a run (default: the accelerated arm's where it ran).

    Returns
    -------
    accel.pipeline.Pipeline
        With ``classes_``, ``predict``, ``predict_proba``, ``contributions`` and
        ``feature_importances``; each takes a pandas or cuDF DataFrame or a path.

    Raises
    ------
    accel.errors.AccelError
        A file that is not a pipeline, one cut short or changed since it was saved, one from a
        newer accel.
    """
    from accel.pipeline import load as load_pipeline

    return load_pipeline(Path(run), device=device, arm=arm)


@dataclass(frozen=True)
class PredictResult(_Recorded[PredictRecord]):
    """Rows scored with a run's pipeline: the scoring record and where the predictions went.

    Attributes
    ----------
    record : dict
        The scoring record (each arm's seconds per stage and rows per second, the speedup, the
        metrics where the table had its target).
    path : pathlib.Path
        Where the record was written.
    typed : accel.record.PredictRecord
        The record as its typed class, which the views below read.
    output : pathlib.Path
        The predictions' file.
    """

    output: Path

    @property
    def predictions(self) -> Any:
        """The predictions' file, read back as a pandas DataFrame."""
        import pandas as pd

        return pd.read_parquet(self.output) if self.output.suffix.lower() in (".parquet", ".pq") else pd.read_csv(self.output)

    def __repr__(self) -> str:
        out = self.typed.output
        return f"PredictResult({out.rows or 0:,} rows from the {out.arm} arm, {str(self.output)!r})"


@_strict_arguments
def predict(
    run: str | os.PathLike[str], *, data: str | os.PathLike[str], out: str | os.PathLike[str], arm: str | None = None,
    device: str = "auto", baseline: bool = False, memory_budget: str | None = None, batch_rows: int | None = None,
    contributions: bool = False, records: str | os.PathLike[str] | None = None, cluster: str | None = None,
    scheduler: str | None = None, workers: int | None = None, threads_per_worker: int | None = None, progress: bool = False,
) -> PredictResult:  # fmt: skip
    """Score ``data`` with the pipeline ``run`` saved, as ``accel predict`` does.

    Parameters are the command's flags (:class:`accel.scoring.PredictSettings` says what each
    does); ``records`` is the folder of the scoring record (default ``$ACCEL_OUT_DIR``, else
    ``runs``); ``cluster`` / ``scheduler`` (with ``workers``, ``threads_per_worker``) score on a
    Dask cluster, as :func:`run` runs on one; ``progress`` shows the stages as they run.
    """
    from accel.scoring import PredictSettings
    from accel.scoring import predict as score

    asked = config_overrides(locals()).get("cluster")  # cluster, scheduler, workers, threads_per_worker
    try:
        on_cluster = ClusterConfig.model_validate(asked) if asked is not None else None
    except ValidationError as exc:  # one line, named as accel.run() names its cluster settings
        found = [{**e, "loc": ("cluster", *e["loc"])} for e in exc.errors()]
        raise AccelError(errors_message(found, "accel.predict()")) from None

    settings = PredictSettings(
        run=Path(run), data=Path(data), out=Path(out), records=Path(records) if records is not None else output_root(),
        arm=arm, device=device, baseline=baseline, memory_budget=memory_budget, batch_rows=batch_rows,
        contributions=contributions,
    )  # fmt: skip
    with _display(progress) as listener:
        if on_cluster is not None:
            from accel.scaleout.scoring import predict_on_cluster

            return PredictResult(*predict_on_cluster(settings, on_cluster, listener))
        return PredictResult(*score(settings, listener))


@contextmanager
def _table_file(data: Any) -> Iterator[Any]:
    """``data`` as a path: itself, or a pandas / cuDF DataFrame written to a Parquet file in a
    private temporary folder for the run (removed afterwards), as a notebook user passes one."""
    if data is None or isinstance(data, (str, os.PathLike)):
        yield data
        return
    if not hasattr(data, "to_parquet") or not hasattr(data, "columns"):
        raise AccelError(f"data=: give a file path or a pandas / cuDF DataFrame, not {type(data).__name__}")
    import tempfile

    from accel import scratch

    # Owned (accel.scratch): a process killed before removing it leaves it to the next one.
    folder = scratch.owned_folder(Path(tempfile.gettempdir()), "accel-dataframe-")
    try:
        path = folder / f"dataframe-{len(data)}x{len(data.columns)}.parquet"
        try:
            data.to_parquet(path, index=False)
        except Exception as exc:  # noqa: BLE001 - pyarrow's refusal of a column, said in one line
            raise AccelError(
                f"data=: the DataFrame cannot be stored as a table ({first_line(exc)}); give columns of one type each"
            ) from None
        yield path
    finally:
        scratch.release(folder)


#: The settings :func:`run` and :func:`scale` share, by the names of ``accel run``'s flags.
_TABLE_SETTINGS = tuple(key for key in _SETTINGS if key not in ("precision", "batch_rows", "memory_budget", "rmm_pool"))


def _table_settings(given: Mapping[str, Any], names: Sequence[str] = _TABLE_SETTINGS) -> dict[str, Any]:
    """The settings ``names`` (by default :data:`_TABLE_SETTINGS`, which :func:`run` and :func:`scale`
    share) taken from ``given``, keyword arguments or parsed flags (None where not given): paths as
    text, ``drop`` as a list, ``date_format`` as a dict."""
    settings: dict[str, Any] = {key: given.get(key) for key in names}
    as_list = lambda drop: [drop] if isinstance(drop, str) else list(drop)  # noqa: E731
    for key, plain in (("data", os.fspath), ("out", os.fspath), ("drop", as_list), ("date_format", dict)):
        if settings[key] is not None:
            settings[key] = plain(settings[key])
    return settings


def settings_config(workflow: str | os.PathLike[str] | None, given: Mapping[str, Any], caller: str) -> RunConfig:
    """The run configuration that ``accel run``'s flags or :func:`run`'s keywords ``given`` (by
    name, None where not given) ask for over the workflow's file, checked as one (``workers``
    needs ``cluster``, ...); a refusal names the settings' ``caller`` (``command line``, ``accel.run()``)."""
    settings = _table_settings(given, (*_SETTINGS, "explain_rows"))  # explain_rows: the command line's only
    file_values, source = workflow_source(None if workflow is None else str(workflow), settings["data"] is not None, "run")
    return build_config(file_values, {**settings, **config_overrides(given)}, caller if source == "command line" else source)


def search_request(workflow: str | os.PathLike[str] | None, given: Mapping[str, Any], caller: str) -> tuple[RunConfig, Any]:
    """The configuration and the :class:`~accel.hpo.search.SearchRequest` of the search that ``accel
    hpo``'s flags or :func:`tune`'s keywords ``given`` ask for (by name, None where not given;
    ``resume``, ``cluster``, ``scheduler``, ``workers`` too: ``workers`` only with ``cluster="local"``);
    a refusal names the ``caller``."""
    from accel.hpo.search import SearchRequest, search_config
    from accel.scaleout.cluster import cluster_client

    if given.get("workers") is not None and given.get("cluster") != "local":
        raise AccelError("--workers applies to --cluster local")
    settings, search = _table_settings(given, _SETTINGS), {key: given.get(key) for key in _SEARCH_SETTINGS}
    named = None if workflow is None else str(workflow)
    file_values, source = workflow_source(named, settings["data"] is not None or given["resume"], "hpo")
    config, told = search_config(file_values, settings, search, caller if source == "command line" else source, named is not None)
    dask = {key: given.get(key) for key in ("cluster", "scheduler", "workers")}
    return config, SearchRequest(given["resume"], told, **dask, connect=cluster_client)


def run_config(
    config: RunConfig, listener: Listener | None = None, on_plan: Any = None, process_start: float | None = None
) -> tuple[dict[str, Any], Path]:
    """The run a validated :class:`~accel.config.RunConfig` asks for, in this process or on the
    Dask cluster its ``cluster`` section names; ``accel run`` and :func:`run` both come here.

    Parameters
    ----------
    config : RunConfig
    listener : accel.result.Listener, optional
        Told of each arm and stage as they start and end (the command line's progress display).
    on_plan : callable, optional
        ``on_plan(workflow)`` once the run is planned, before its arms run (on a cluster: once
        a user's table is planned, before the cluster starts).
    process_start : float, optional
        When the process's interpreter started (``time.time()``), where the run is the whole
        process (the command line): the wall breakdown's start-up counts from it.

    Returns
    -------
    (dict, pathlib.Path)
        The record and where it was written.
    """
    settle()  # OpenMP's spin count for the arms, before anything loads OpenMP
    if config.cluster is not None:
        from accel.scaleout.cluster_run import cluster_run

        return cluster_run(config, listener, on_plan=on_plan, process_start=process_start)
    from accel.runner import paired_run

    return paired_run(config, listener, on_plan=on_plan, process_start=process_start)


#: Keyword arguments of :func:`tune` that set the ``hpo:`` section of a workflow file.
_SEARCH_SETTINGS = ("trials", "subset", "trial_rounds", "validation", "timeout", "top", "storage", "study")


@dataclass(frozen=True)
class TuneResult(_Recorded[HpoRecord]):
    """One hyperparameter search: the record accel wrote, and views of it as tables.

    Attributes
    ----------
    record : dict
        The search record (``accel report`` and ``accel experiments`` read the file).
    path : pathlib.Path
        Where the record was written.
    typed : accel.record.HpoRecord
        The record as its typed class, which the views below read.
    """

    @property
    def metric(self) -> str:
        """The metric the search optimised (``auc``, ``rmse``, ...)."""
        return str(self.typed.study.metric)

    @property
    def candidates(self) -> Any:
        """The default model, the best subset trial, the top-k on all fitting rows and the
        retrained best on the hold-out: metric, seconds, peak memory, where each was scored."""
        import pandas as pd

        r = self.typed
        final = r.final if r.final is not None and r.final.status != "failed" else None
        shown = [("default", r.baseline), ("best subset trial", r.best_trial)]
        shown += [(f"top-k: trial {entry.trial}", entry) for entry in r.top_k] + [("retrained best", final)]
        numbers = ("metric", "seconds", "peak_host_mb", "peak_device_mb")
        rows = [
            {"candidate": label, **{k: _float(getattr(entry, k)) for k in numbers}, "evaluated_on": entry.evaluated_on}
            for label, entry in shown
            if entry is not None
        ]
        return pd.DataFrame(rows).set_index("candidate").rename(columns={"metric": self.metric}) if rows else pd.DataFrame()

    @property
    def best_params(self) -> dict[str, Any]:
        """The retrained best model's settings (empty when no trial completed)."""
        return dict((self.typed.final or Scored()).params or {})

    @property
    def arms(self) -> Any:
        """The final model trained on each arm: status and seconds (the speedup is CPU / GPU)."""
        return _arm_table([self.typed.arms.get(a) or HpoArm() for a in ARMS], seconds=attrgetter("seconds"))

    def __repr__(self) -> str:
        final = self.typed.final or Scored()
        shown = f"{self.metric} {final.metric:.4g}" if final.metric is not None else str(final.reason)
        return f"TuneResult({self.typed.study.name!r}, {shown}, record {str(self.path)!r})"

    def _repr_html_(self) -> str:
        return _html(f"accel hpo: {self.typed.study.name}", self.candidates, "—", record=self.path)


@_strict_arguments
def tune(
    workflow: str | os.PathLike[str] | None = None, *, resume: bool = False, cluster: str | None = None,
    scheduler: str | None = None, workers: int | None = None, progress: bool = False, **settings: Any,
) -> TuneResult:  # fmt: skip
    """Search a model's hyperparameters with Optuna, as ``accel hpo`` does; write its record, return it.

    (``accel.hpo`` is the subpackage that holds the search, hence the name.)

    Parameters
    ----------
    workflow : str or path, optional
        ``"flights"``, or a workflow YAML file (its ``hpo:`` section is the search); leave it
        out with ``data=`` (your own table) or ``resume=True`` (the study's own workflow).
    resume : bool
        Continue the study named by ``study`` in ``storage`` (``--resume``).
    cluster, scheduler, workers
        Run the trials in parallel on Dask, as ``--cluster``, ``--scheduler``, ``--workers`` do.
    progress : bool, default False
        Every line ``accel hpo`` prints, one per trial too; by default one line per step of
        the search (the study, the baseline, the trials' count, the top-k, the retrained best).
    **settings
        The search's settings (``trials``, ``subset``, ``trial_rounds``, ``validation``,
        ``timeout``, ``top``, ``storage``, ``study``) and those of :func:`run` (``data``,
        ``target``, ``model``, ``device``, ``rows``, ``seed``, ``out``, ...).

    Returns
    -------
    TuneResult

    Raises
    ------
    accel.errors.AccelError
        For every bad input, with the one-line message the command line prints.
    """
    from accel.hpo.search import run_search

    known = (*_SETTINGS, *_SEARCH_SETTINGS)
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise AccelError(f"accel.tune() has no setting {', '.join(map(repr, unknown))}; it takes: {', '.join(known)}")
    dask = {"resume": resume, "cluster": cluster, "scheduler": scheduler, "workers": workers}
    config, request = search_request(workflow, settings | dask, "accel.tune()")
    return TuneResult(*run_search(config, request, trial_log=None if progress else (lambda _line: None)))


@dataclass(frozen=True)
class CompareResult(_Recorded[CompareRecord]):
    """Your script on the CPU and with cudf.pandas / cuml.accel: the record, and views of it.

    Attributes
    ----------
    record : dict
        The compare record.
    path : pathlib.Path
        Where the record was written.
    typed : accel.record.CompareRecord
        The record as its typed class, which the views below read.
    """

    @property
    def arms(self) -> Any:
        """Each arm's status, cold wall seconds, warm median (with ``repeat``) and peak memory."""
        return _arm_table(
            [self.typed.arms.get(a) or CompareArm() for a in ARMS],
            cold_seconds=attrgetter("cold_seconds"),
            warm_median_seconds=lambda a: a.warm.median if a.warm else None,
            **_PEAKS,
        )

    @property
    def speedup(self) -> float:
        """CPU / GPU cold wall seconds (NaN unless the GPU arm ran)."""
        return _float(self.typed.speedup.get("wall_cold"))

    @property
    def agree(self) -> bool | None:
        """Whether both arms printed and wrote the same numbers (None when the GPU arm did not run)."""
        return self.typed.parity.agree

    def __repr__(self) -> str:
        r = self.typed
        shown = ", ".join(f"{a} {(r.arms.get(a) or CompareArm()).status}" for a in ARMS)
        return f"CompareResult({r.program.path!r}, {shown}, speedup {self.speedup:.3g}, outputs {_AGREEMENT[self.agree]})"

    def _repr_html_(self) -> str:
        notes = _skip_notes(self.typed.arms.items())
        return _html(
            f"accel compare: {self.typed.program.path}", self.arms, "—", notes, f"<p>outputs: {_AGREEMENT[self.agree]}</p>"
        )


#: What the arms' outputs did, by :attr:`CompareResult.agree` (None: the GPU arm did not run).
_AGREEMENT = {True: "agree", False: "DISAGREE", None: "not compared (the GPU arm did not run)"}


@_strict_arguments
def compare(
    program: str | os.PathLike[str], *args: str, repeat: int = 0, accelerators: str | None = None, device: str = "auto",
    rtol: float = 1e-5, atol: float = 1e-8, timeout: float = 3600.0, profile: bool = True, ignore_lines: str | None = None,
    out: str | os.PathLike[str] | None = None,
) -> CompareResult:  # fmt: skip
    """Run your unchanged script (or notebook) on the CPU and with cudf.pandas / cuml.accel, as
    ``accel compare PROGRAM -- ARGS`` does; write its record, return it.

    Parameters
    ----------
    program : str or path
        A Python script (``.py``) or a notebook (``.ipynb``).
    *args : str
        Arguments for the script.
    repeat, accelerators, device, rtol, atol, timeout, profile, ignore_lines, out
        As the command's ``--repeat``, ``--accelerators``, ``--device``, ``--rtol``, ``--atol``,
        ``--timeout``, ``--no-profile`` (``profile=False``), ``--ignore-lines``, ``--out``
        (default ``$ACCEL_OUT_DIR``, else ``runs``).

    Returns
    -------
    CompareResult
    """
    from accel.bench.compare import Options
    from accel.bench.compare import compare as run_compare

    return CompareResult(*run_compare(Options(
        program=Path(program), args=list(args), out=output_root() if out is None else Path(out), repeat=repeat, accelerators=accelerators,
        device=device, rtol=rtol, atol=atol, timeout=timeout, profile=profile, ignore=ignore_lines,
    )))  # fmt: skip


@dataclass(frozen=True)
class BenchResult(_Recorded[BenchRecord]):
    """One ``accel bench`` suite on both arms: the result accel wrote, and views of it as tables.

    Attributes
    ----------
    record : dict
        The benchmark result, as written (``accel report`` reads the file).
    path : pathlib.Path
        Where it was written.
    typed : accel.record.DbBench or accel.record.ModelsBench or accel.record.CrossoverBench
        The record as its typed class, which the views below read.
    """

    @property
    def suite(self) -> str:
        """``groupby``, ``join``, ``models`` or ``crossover``."""
        return self.typed.benchmark.removeprefix("db_")

    @property
    def table(self) -> Any:
        """One row per question (groupby, join), model (models) or operation and size (crossover).

        Each arm's status and median seconds (models: of ``fit`` and ``predict``, and the quality
        reached), the speedup (CPU seconds / GPU seconds; NaN unless both arms ran) and, for the
        db-benchmark questions, whether the arms' answers agree.
        """
        import pandas as pd

        return pd.DataFrame([row for _, row, _ in _measured(self.typed)]).set_index(_INDEX.get(self.suite, "question"))

    @property
    def speedups(self) -> Any:
        """Each speedup the suite measured, as a Series: per question, per model's ``fit`` and
        ``predict``, or per operation and size; NaN where an arm did not run."""
        import pandas as pd

        pairs = {label: value for _, _, speedups in _measured(self.typed) for label, value in speedups.items()}
        return pd.Series(pairs, name="speedup", dtype=float)

    @property
    def crossover_rows(self) -> dict[str, int | None]:
        """crossover: per operation, the row count from which the GPU arm wins (None: it did not
        win at any size measured, or did not run); empty for the other suites."""
        r = self.typed
        return {op.operation: op.crossover_rows for op in r.operations} if isinstance(r, CrossoverBench) else {}

    @property
    def failed(self) -> list[str]:
        """What failed on an arm, e.g. ``["q3 (gpu)"]``, ``["kmeans (cpu)"]``, ``["join at 1,000 (gpu)"]`` (the
        result has the reasons)."""
        return [f"{name} ({a})" for name, row, _ in _measured(self.typed) for a in ARMS if row[f"{a}_status"] == "failed"]

    @property
    def disagree(self) -> list[str]:
        """The questions whose answers differ between the arms (groupby and join)."""
        return [q.question for q in self.typed.questions if q.agree is False] if isinstance(self.typed, DbBench) else []

    def __repr__(self) -> str:
        gpu = self.typed.gpu or Arm()
        return f"BenchResult({self.suite!r}, gpu {gpu.status}, failed {self.failed}, result {str(self.path)!r})"

    def _repr_html_(self) -> str:
        """The table and a bar per speedup, for Jupyter."""
        chart = _speedup_chart(self.speedups.items(), "speedup (CPU seconds / GPU seconds)", "the GPU arm did not run")
        notes = _skip_notes([("gpu", self.typed.gpu or Arm())])
        lines = [f"crossover of {op}: " + (f"from {n:,} rows" if n else "none measured") for op, n in self.crossover_rows.items()]
        lines += [f"failed: {', '.join(self.failed)}"] if self.failed else []
        lines += [f"answers DISAGREE: {', '.join(self.disagree)}"] if self.disagree else []
        lines += [(self.typed.fairness.line or "") if self.typed.fairness else ""]
        return _html(f"accel bench {self.suite}", self.table, "n/a", chart, notes, _paragraphs(lines), result=self.path)


def _arm_columns(arms: Sequence[Any], **columns: Callable[[Any], Any]) -> dict[str, Any]:
    """``{gpu_status, gpu_<column>, ..., cpu_status, cpu_<column>, ...}``: the :func:`_arm_row` of each arm of :data:`ARMS`."""
    return {f"{a}_{name}": value for a, arm in zip(ARMS, arms) for name, value in _arm_row(arm, columns).items()}


#: The one column of an arm of a db-benchmark question or a crossover size: its median seconds.
_MEDIAN = {"seconds": lambda arm: getattr(arm, "median", None)}
#: The index of :attr:`BenchResult.table` by suite (the db-benchmark questions': ``question``).
_INDEX: dict[str, Any] = {"models": "model", "crossover": ["operation", "rows"]}
#: What an arm of a model pair shows in :attr:`BenchResult.table`: median seconds of each step, the quality reached.
_FIT = {
    "fit_seconds": attrgetter("fit.median"),
    "predict_seconds": attrgetter("predict.median"),
    "quality": attrgetter("quality"),
}


def _measured(r: BenchRecord) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Each thing a suite measured (a question, a model pair, an operation at a size): its name in
    :attr:`BenchResult.failed`, its row of :attr:`BenchResult.table` and its speedups by label."""
    if isinstance(r, ModelsBench):
        return [
            (m.model, {"model": m.model, "metric": m.metric, **_arm_columns([m.gpu, m.cpu], **_FIT)}
             | {"fit_speedup": _float(m.fit_speedup), "predict_speedup": _float(m.predict_speedup)},
             {f"{m.model} fit": m.fit_speedup, f"{m.model} predict": m.predict_speedup})
            for m in r.models
        ]  # fmt: skip
    if isinstance(r, CrossoverBench):
        return [
            (f"{op.operation} at {p.rows:,}", {"operation": op.operation, "rows": p.rows, **_arm_columns([p.gpu, p.cpu], **_MEDIAN),
             "speedup": _float(p.speedup)}, {f"{op.operation} at {p.rows:,} rows": p.speedup})
            for op in r.operations
            for p in op.points
        ]  # fmt: skip
    return [
        (q.question, {"question": q.question, "title": q.title, **_arm_columns([q.gpu, q.cpu], **_MEDIAN),
         "speedup": _float(q.speedup), "agree": q.agree}, {q.question: q.speedup})
        for q in (r.questions if isinstance(r, DbBench) else [])
    ]  # fmt: skip


@_strict_arguments
def benchmark(
    suite: str, *, data: str | os.PathLike[str] | None = None, data_dir: str | os.PathLike[str] | None = None,
    questions: str | Sequence[str] | None = None, engines: str | Sequence[str] | None = None,
    cpu_from: Sequence[str | os.PathLike[str]] | None = None, rows: int | None = None, features: int | None = None,
    models: str | Sequence[str] | None = None, operations: str | Sequence[str] | None = None,
    min_rows: int | None = None, max_rows: int | None = None, steps_per_decade: int | None = None,
    seed: int | None = None, device: str = "auto", repeats: int = 3, warmup: int = 0,
    results: str | os.PathLike[str] | None = None, progress_file: str | os.PathLike[str] | None = None,
    overwrite: bool = False, progress: bool = False,
) -> BenchResult:  # fmt: skip
    """Run one of the ``accel bench`` suites on both arms, as ``accel bench SUITE`` does; write its
    result, return it.

    (``accel.bench`` is the subpackage that holds the suites, hence the name.) Each setting is
    the command's flag of the same name; one that another suite takes (``rows=`` for
    ``"groupby"``) is refused. None takes the command's default.

    Parameters
    ----------
    suite : {"groupby", "join", "models", "crossover"}
        The db-benchmark groupby or join questions (pandas against cuDF, answers checked), the
        registry's model pairs (scikit-learn against cuML, XGBoost CPU against CUDA), or the
        row count from which the GPU arm is faster, per operation.
    data : str or path, optional
        groupby: the data file (``accel data groupby N K FILE``), ``.csv`` or ``.parquet``.
    data_dir : str or path, optional
        join: the folder of the four join tables (``accel data join N DIR``).
    questions : str or sequence of str, optional
        groupby, join: ``"q1,q3"`` or ``["q1", "q3"]`` (default all).
    engines : str or sequence of str, optional
        groupby: other engines for context, of ``polars``, ``duckdb``, ``polars-gpu``.
    cpu_from : sequence of str or path, optional
        groupby, join: earlier results (or folders of them) of the same benchmark on the same
        data and CPU, whose CPU arm is taken instead of running it again.
    rows : int, optional
        models: rows of generated data, 80% for training (default 100,000).
    features : int, optional
        models, crossover: columns of generated data (default 32).
    models : str or sequence of str, optional
        models: the pairs to run (default all).
    operations : str or sequence of str, optional
        crossover: ``groupby``, ``join`` or model names (default groupby, join, xgboost).
    min_rows, max_rows : int, optional
        crossover: the smallest and largest size (default 1,000 and 10,000,000).
    steps_per_decade : int, optional
        crossover: sizes per factor of 10 (default 1).
    seed : int, optional
        models, crossover: the data's seed (default 42).
    device : {"auto", "cpu", "gpu"}, default "auto"
        The accelerated arm: ``"auto"`` (the GPU when usable, else recorded as skipped),
        ``"gpu"`` (an error if none), ``"cpu"`` (only the CPU arm).
    repeats : int, default 3
        Timed runs after the cold one.
    warmup : int, default 0
        Untimed runs between the cold run and the timed ones.
    results : str or path, optional
        Folder for the result (default ``benchmarks/`` in ``$ACCEL_OUT_DIR``, else in ``runs/``).
    progress_file : str or path, optional
        groupby, join, models: a new JSON-lines file that each finished question or model is
        appended to as it finishes.
    overwrite : bool, default False
        Replace ``progress_file`` if it exists.
    progress : bool, default False
        Say each question, model or size as it is measured (on stderr), as the command does.

    Returns
    -------
    BenchResult

    Raises
    ------
    accel.errors.AccelError
        For every bad input, before anything is measured, with the one-line message the
        command line prints (nothing is written then).
    """
    given = {key: value for key, value in locals().items() if key not in ("suite", "progress")}  # each setting, by name
    settle()  # OpenMP's spin count for the arms, before anything loads OpenMP
    from accel.bench.suites import run_suite

    return BenchResult(*run_suite(suite, given, progress))


@dataclass(frozen=True)
class ScaleResult(_Recorded[ScalingRecord]):
    """One scaling study (``accel scale``): the record accel wrote, its plot, and views as tables.

    Attributes
    ----------
    record : dict
        The scaling record (``"benchmark": "scaling"``), as written.
    path : pathlib.Path
        Where it was written.
    typed : accel.record.ScalingRecord
        The record as its typed class, which the views below read.
    plot : pathlib.Path
        The PNG beside it: seconds per stage per configuration, and speedup against workers.
    """

    plot: Path

    @property
    def table(self) -> Any:
        """The tidy table: one row per configuration (arm and workers) and stage, with seconds,
        speedup against the fewest workers, parallel efficiency, GPU against CPU and the metric."""
        import pandas as pd

        return pd.DataFrame([row.model_dump() for row in self.typed.rows]).astype(dict.fromkeys(_SCALE_NUMBERS, float))

    @property
    def totals(self) -> Any:
        """The ``total`` stage of :attr:`table`, one row per configuration (``kind``, ``workers``)."""
        return self.table.loc[lambda t: t["stage"] == "total"].drop(columns="stage").set_index(["kind", "workers"])

    @property
    def failed(self) -> list[str]:
        """The configurations whose run failed, e.g. ``["CPU × 4"]`` (the record has the reasons)."""
        return [label for label, _ in self._failures()]

    def _failures(self) -> list[tuple[str, str]]:
        """Each configuration whose run failed, and why."""
        failed = [r for r in self.typed.runs if r.arm and r.arm.status == "failed"]
        return [(scaling_label(str(r.kind), r.workers or 0), str(r.arm and r.arm.reason)) for r in failed]

    def __repr__(self) -> str:
        r = self.typed
        runs = ", ".join(f"{run.kind} × {run.workers} {run.arm.status if run.arm else None}" for run in r.runs)
        return f"ScaleResult({r.workflow!r}, {r.cluster_kind}, {runs}, record {str(self.path)!r})"

    def _repr_html_(self) -> str:
        """The totals per configuration and a bar per configuration's speedup, for Jupyter."""
        r, totals = self.typed, self.totals
        speedups = [(scaling_label(kind, n), v) for (kind, n), v in totals["speedup_vs_1"].items()]
        caption = "speedup of the total against the fewest workers of the same arm"
        chart = _speedup_chart(speedups, caption, "no configuration ran")
        # The same reason at every count, once; then each configuration that failed.
        notes = _skip_notes([(arm, Arm(status="skipped", reason=reason)) for arm, reason in r.skipped_arms.items()])
        failed = _notes((f"{label} failed", reason) for label, reason in self._failures())
        heading = f"accel scale: {r.workflow} ({r.cluster_kind})"
        return _html(heading, totals, "n/a", chart, notes, failed, record=self.path, plot=self.plot)


#: The numeric columns of a scaling record's rows (NaN where a run did not complete).
_SCALE_NUMBERS = ("seconds", "speedup_vs_1", "efficiency", "gpu_vs_cpu", "metric")


@_strict_arguments
def scale(
    workflow: str | os.PathLike[str] | None = None, *, data: str | os.PathLike[str] | None = None,
    target: str | None = None, task: str | None = None, model: str | None = None, drop: str | Sequence[str] | None = None,
    delimiter: str | None = None, date_format: Mapping[str, str] | None = None, probe: str | None = None,
    cluster: str | None = "local", workers: Sequence[int] | None = None, threads_per_worker: int | None = None,
    rmm_pool: str | None = None, device_memory_limit: str | None = None, worker_memory: str | None = None,
    protocol: str | None = None, scale: int | None = None, device: str | None = None, test_size: float | None = None,
    rows: int | None = None, seed: int | None = None, out: str | os.PathLike[str] | None = None,
    baseline: bool = True, progress: bool = False,
) -> ScaleResult:  # fmt: skip
    """Run a workflow on 1, 2, 4 ... Dask workers beside the single-process CPU baseline, as
    ``accel scale`` does; write the scaling record and its plot, return them.

    A fresh cluster is started for each worker count and closed before the next. Each setting
    is the command's flag of the same name, checked by the same functions.

    Parameters
    ----------
    workflow : str or path, optional
        ``"flights"``, or a workflow YAML file (its ``cluster:`` section is left out: the study
        decides the clusters). Leave it out with ``data=``.
    data, target, task, model, drop, delimiter, date_format, probe
        Your own table, as for :func:`run` (``model``: one with a distributed trainer,
        :attr:`accel.registry.Capabilities.dask`).
    cluster : {"local", "local-cuda"}, default "local"
        CPU worker processes of the same threads each, or one worker per GPU.
    workers : sequence of int, optional
        The worker counts to compare, e.g. ``[1, 2, 4]`` (default 1, 2, 4 ... up to the cores,
        or the GPUs, of this machine).
    threads_per_worker : int, optional
        Threads of each worker (``local`` default: the cores / the largest count).
    rmm_pool, device_memory_limit : str, optional
        ``local-cuda``: each worker's RMM pool, and the device memory above which it spills.
    worker_memory : str, optional
        Host memory per worker, beyond which Dask spills partitions to disk.
    protocol : {"tcp", "ucx"}, optional
        The workers' protocol (default ``"tcp"``).
    scale : int, optional
        Replicate the data this many times with jitter (default 1).
    device : {"auto", "cpu", "gpu"}, optional
        The accelerated arm on GPU workers: ``"auto"`` (when usable), ``"gpu"`` (an error if
        none), ``"cpu"`` (CPU workers only).
    test_size : float, optional
        Share of rows held out for testing (default 0.2).
    rows : int, optional
        A seeded sample of this many rows (before ``scale``).
    seed : int, optional
        Seed for sampling, splitting and the model (default 42).
    out : str or path, optional
        Folder for the record and its plot (default ``$ACCEL_OUT_DIR``, else ``runs``).
    baseline : bool, default True
        Run the single-process CPU baseline (no Dask, every core) first.
    progress : bool, default False
        Show the stages as they run (on stderr), as the command does.

    Returns
    -------
    ScaleResult

    Raises
    ------
    accel.errors.AccelError
        For every bad input (a worker count beyond this machine's cores or GPUs included),
        before the first cluster starts, with the one-line message the command line prints.
    """
    settle()  # OpenMP's spin count for the arms, before anything loads OpenMP
    from accel.scaleout.scaling import scaling_study, study_config

    given = locals()  # the study reads its cluster settings (cluster, workers, ...) from them
    config, counts = study_config(None if workflow is None else str(workflow), _table_settings(given), given)
    with _display(progress, live=False) as listener:  # the workers write to the same terminal
        return ScaleResult(*scaling_study(config, counts, baseline=baseline, listener=listener))


def info() -> dict[str, Any]:
    """What ``accel info --json`` prints: devices, memory, library versions, which arms can run."""
    from accel.environment import collect_environment

    return collect_environment()
