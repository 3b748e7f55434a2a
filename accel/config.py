"""Validated run configuration: from a workflow YAML file, command-line flags, or both.

Unknown keys are errors that name the key (a typo must not silently fall back to a default),
and every validation problem becomes one line. Types are strict (:data:`STRICT_TYPES`): a
boolean is not a number (``seed: true`` is refused, not read as 1), nor is text
(``test_size: "0.2"``, ``"1e400"``); only paths (``data``, ``out``) are taken as text.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError, create_model, model_validator

from accel.errors import AccelError
from accel.record import output_root
from accel.registry import DEFAULT_MODEL, MAX_ESTIMATORS, MODELS, STRICT, check_search_space
from accel.yamlsafe import MAX_BYTES, quote
from accel.yamlsafe import load as load_yaml

#: Seeds: NumPy, scikit-learn and XGBoost all take 0 .. 2**32 - 1.
MAX_SEED = 2**32 - 1
#: Fewer rows per batch than this is refused: per-batch overhead swamps the work. No batch is
#: planned or retried below it either (the out-of-memory back-off of :mod:`accel.batching`).
MIN_BATCH_ROWS = 1024

#: Upper bounds of the counts and durations a setting takes: beyond them a number is a typo (or
#: ``1e400``), refused in one line before anything runs, never a traceback or a run without end.
MAX_ROWS = 10**12
MAX_SCALE = 10**6
MAX_TRIALS = 10**6
MAX_TOP = 1000
#: The longest time-out of anything accel waits for (a week; ``inf`` cannot be waited for).
MAX_SECONDS = 7 * 24 * 3600.0

#: Settings are checked strictly: no bool for an int, no text for a number (pydantic's strict mode).
STRICT_TYPES = ConfigDict(extra="forbid", strict=True)
#: A path setting: a ``Path``, or its text (a workflow file's ``out: runs``).
PathSetting = Annotated[Path, Field(strict=False)]

#: ``--model`` choices: the models of the registry (pydantic checks the name; to a type checker it is text).
if TYPE_CHECKING:
    from accel.memory import MemorySettings
    from accel.registry import XGBoostSettings

    ModelName = str
else:
    ModelName = Literal[tuple(MODELS)]


class SearchRange(BaseModel):
    """One parameter's search range in a workflow file: ``{low, high, log}`` or ``{choices}``."""

    model_config = STRICT

    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: list[Any] | None = None

    @model_validator(mode="after")
    def _range_or_choices(self) -> SearchRange:
        if self.choices is not None:
            if self.low is not None or self.high is not None or self.step is not None:
                raise ValueError("a search range has either choices or low/high, not both")
            if not self.choices:
                raise ValueError("a search range's choices cannot be empty")
            return self
        if self.low is None or self.high is None:
            raise ValueError("a search range needs low and high (or choices)")
        if self.low > self.high:
            raise ValueError(f"a search range needs low <= high (got low={self.low}, high={self.high})")
        if self.log and self.low <= 0:
            raise ValueError(f"a log search range needs low > 0 (got {self.low})")
        return self


#: A parameter in a search-space override: a range, a list of choices, or one fixed value.
SearchParam = SearchRange | list[Any] | float | int | str | bool | None


class HpoConfig(BaseModel):
    """``accel hpo`` settings; every one can be given in the workflow file's ``hpo:`` section.

    ``search_space`` overrides the built-in ranges of :data:`accel.hpo.space.SEARCH_SPACES` (the registry's) per
    model and parameter; a parameter the model does not have is an error.
    """

    model_config = STRICT_TYPES

    trials: int = Field(40, ge=1, le=MAX_TRIALS)
    subset: float = Field(0.1, gt=0, le=1)
    trial_rounds: float = Field(0.25, gt=0, le=1)
    validation: float = Field(0.2, gt=0, lt=1)
    top: int = Field(3, ge=1, le=MAX_TOP)
    timeout: float | None = Field(None, gt=0, le=MAX_SECONDS)
    early_stopping_rounds: int = Field(30, ge=1, le=MAX_ESTIMATORS)
    pruner: Literal["median", "none"] = "median"
    storage: str | None = None
    study: str | None = Field(None, min_length=1, max_length=512)  # Optuna keeps 512 characters of a name
    search_space: dict[ModelName, dict[str, SearchParam]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_parameters(self) -> HpoConfig:
        for model, params in self.search_space.items():
            check_search_space(model, params)
        return self


class ClusterConfig(BaseModel):
    """Where a run goes when it runs on Dask (checked further by :func:`accel.scaleout.cluster.plan_cluster`).

    ``kind``: ``local`` (CPU worker processes), ``local-cuda`` (one worker per GPU) or
    ``scheduler`` (a running cluster at ``address``; ``baseline_address`` a running CPU cluster
    for the baseline arm). Sizes are strings Dask parses ("8GB").
    """

    model_config = STRICT_TYPES

    kind: Literal["local", "local-cuda", "scheduler"]
    address: str | None = None
    #: ``scheduler`` with GPU workers: a running CPU cluster for the baseline arm.
    baseline_address: str | None = None
    workers: PositiveInt | None = None
    threads_per_worker: PositiveInt | None = None
    rmm_pool: str | None = None
    device_memory_limit: str | None = None
    #: Each worker's host memory limit (Dask spills partitions to disk beyond it).
    worker_memory: str | None = None
    protocol: Literal["tcp", "ucx"] = "tcp"


#: One section per model of the registry (``xgboost:``, ``random_forest:``, ...), each its
#: settings schema with their defaults.
_SECTIONS: dict[str, Any] = {name: (spec.settings, Field(default_factory=spec.settings)) for name, spec in MODELS.items()}
if TYPE_CHECKING:

    class _ModelSections(BaseModel):
        """What a type checker knows of the sections: XGBoost's (every workflow's model) by name;
        the others are read by the model's name (:meth:`RunConfig.model_params`)."""

        xgboost: XGBoostSettings = Field(default_factory=XGBoostSettings)

else:
    _ModelSections = create_model("_ModelSections", __config__=ConfigDict(extra="forbid"), **_SECTIONS)


class RunConfig(_ModelSections):
    """Everything one ``accel run`` needs: a named workflow, or a user's table (``data`` + ``target``)."""

    model_config = STRICT_TYPES

    workflow: str = "flights"
    data: PathSetting | None = None
    target: str | None = None
    task: Literal["auto", "classification", "regression"] = "auto"
    model: ModelName = DEFAULT_MODEL
    drop: list[str] = Field(default_factory=list)
    delimiter: str | None = Field(None, min_length=1, max_length=1)
    # Column -> strptime format of its date text (``--date-format COL=FMT``), over the detected layout.
    date_format: dict[str, str] = Field(default_factory=dict)
    # --probe: the encoding probe for XGBoost's many-valued categorical columns (auto: cached, bounded).
    probe: Literal["auto", "off", "force"] = "auto"
    device: Literal["auto", "cpu", "gpu"] = "auto"
    precision: Literal["fp32", "fp16"] = "fp32"
    batch_rows: Literal["auto"] | Annotated[int, Field(ge=MIN_BATCH_ROWS, le=MAX_ROWS)] = "auto"
    memory_budget: str | None = None
    rmm_pool: str = "auto"
    rows: Annotated[int, Field(ge=1, le=MAX_ROWS)] | None = None
    test_size: float = Field(0.2, gt=0, lt=1)
    #: Hold-out rows the saved model's SHAP importances are computed on (0: the model's own importances only).
    explain_rows: int = Field(200, ge=0, le=100_000)
    seed: int = Field(42, ge=0, le=MAX_SEED)
    out: PathSetting = Field(default_factory=output_root)  # $ACCEL_OUT_DIR, else runs
    hpo: HpoConfig = Field(default_factory=HpoConfig)

    @model_validator(mode="after")
    def _data_and_target_together(self) -> RunConfig:
        if self.data is not None and not self.target:
            raise ValueError("--data needs --target COLUMN (the column to predict)")
        for flag, given in (("--target", self.target), ("--date-format", self.date_format)):
            if given and self.data is None:
                raise ValueError(f"{flag} applies to your own table: give it with --data FILE")
        if self.data is None and self.model != DEFAULT_MODEL:
            raise ValueError(f"the {self.workflow} workflow trains {DEFAULT_MODEL}; --model applies to --data runs")
        if self.data is not None:
            if "workflow" in self.model_fields_set and self.workflow != "table":
                raise ValueError(
                    f"the {self.workflow} workflow reads its own data, not --data: leave out {self.workflow!r} to run on "
                    "your table (--data FILE --target COLUMN), or leave out --data to run the workflow"
                )
            self.workflow = "table"
        from accel.memory import parse_size

        try:
            if self.memory_budget is not None:
                parse_size(self.memory_budget, "--memory-budget")
            if self.rmm_pool not in ("auto", "off"):
                parse_size(self.rmm_pool, "--rmm-pool")
        except AccelError as exc:
            raise ValueError(str(exc)) from None
        return self

    def memory_settings(self) -> MemorySettings:
        """The run's memory settings: the RMM pool, the memory budget, the batch rows, the precision."""
        from accel.memory import MemorySettings

        return MemorySettings(
            **self.model_dump(include={"rmm_pool", "memory_budget", "precision"}),
            batch_rows=None if self.batch_rows == "auto" else int(self.batch_rows),
        )

    def model_params(self) -> dict[str, Any]:
        """Parameters of the chosen model, without the unset ones."""
        return MODELS[self.model].given(getattr(self, self.model).model_dump())

    #: Copies of the data with jitter (scaling runs); 1 is the data as it is.
    scale: int = Field(1, ge=1, le=MAX_SCALE)
    #: Run on Dask instead of in this process (``accel run --cluster/--scheduler``).
    cluster: ClusterConfig | None = None


def _describe(error: dict[str, Any]) -> str:
    where = ".".join(str(p) for p in error["loc"])
    if not where:  # a check across several keys: its message says it all
        return str(error["msg"]).removeprefix("Value error, ")
    if kind := {"extra_forbidden": "unknown", "missing": "missing"}.get(error["type"]):
        return f"{kind} key {where!r}"
    return f"{where}: {error['msg']} (got {quote(error.get('input'))})"


def _union_member(part: Any) -> bool:
    """A location part pydantic adds for one member of a union (``literal['auto']``, ``constrained-int``)."""
    return isinstance(part, str) and (
        "[" in part or part.startswith(("constrained-", "function-")) or part in ("int", "float", "str")
    )


def errors_message(found: list[dict[str, Any]], source: str) -> str:
    """One line for pydantic's errors ``found`` (each with ``loc``, ``type``, ``msg``, ``input``)."""
    errors: list[dict[str, Any]] = []
    for error in found:
        loc = tuple(error["loc"])
        if loc and _union_member(loc[-1]):
            # One message per field of a union: the member whose constraint failed says most.
            if error["type"] == "literal_error" and any(
                tuple(e["loc"])[:-1] == loc[:-1] and e["type"] != "literal_error" for e in found
            ):
                continue
            error = {**error, "loc": loc[:-1]}
            if any(tuple(e["loc"]) == loc[:-1] for e in errors):
                continue
        errors.append(error)
    if source == "command line":  # a setting of the run itself is the flag that gave it (test_size: --test-size)
        flags = {(name,) for name in RunConfig.model_fields if name not in ("cluster", "hpo", "workflow", *MODELS)}
        errors = [{**e, "loc": (f"--{e['loc'][0]}".replace("_", "-"),)} if tuple(e["loc"]) in flags else e for e in errors]
    return f"{source}: " + "; ".join(_describe(e) for e in errors)


def read_workflow_file(path: Path) -> dict[str, Any]:
    """The mapping in a workflow YAML file; a one-line error for anything else.

    At most :data:`accel.yamlsafe.MAX_BYTES` are read, with :func:`accel.yamlsafe.load`:
    duplicate keys, tags and alias bombs are refused.
    """
    from accel.files import file_kind

    source = f"workflow file {str(path)!r}"
    kind = file_kind(path)
    if kind == "missing":
        raise AccelError(f"{source} does not exist")
    if kind is not None:
        raise AccelError(f"{source} is {kind}, not a regular file")
    try:
        with open(path, "rb") as f:
            text = f.read(MAX_BYTES + 1)  # a size cap before any parsing (a file without end costs nothing)
        if len(text) > MAX_BYTES:
            raise AccelError(f"{source} is larger than {MAX_BYTES // 1024:,} KiB; a workflow file holds settings, not data")
        data = load_yaml(text.decode("utf-8"), source)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise AccelError(f"cannot read {source} ({reason})") from None
    if not isinstance(data, dict):
        raise AccelError(f"{source} must hold a mapping of settings (workflow: flights, ...)")
    return data


#: The flags of a cluster accel starts (``--cluster``), by setting name.
LOCAL_CLUSTER_FLAGS = {
    name: "--" + name.replace("_", "-")
    for name in ("workers", "threads_per_worker", "rmm_pool", "device_memory_limit", "worker_memory", "protocol")
}


def config_overrides(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The run configuration the scale-out flags ask for (``scale`` and ``cluster``).

    ``flags`` by their names (``cluster``, ``scheduler``, ``workers``, ``threads_per_worker``,
    ``rmm_pool``, ...; absent or None where not given): the command line's ``vars(args)`` or the
    Python API's keywords, checked alike (``workers`` needs ``cluster``, ...).
    """
    out: dict[str, Any] = {"scale": flags.get("scale")}
    given = {key: flags[key] for key in LOCAL_CLUSTER_FLAGS if flags.get(key) is not None}
    kind, address, baseline = flags.get("cluster"), flags.get("scheduler"), flags.get("baseline_scheduler")
    if not (kind or address):
        given.pop("rmm_pool", None)  # also the single-process GPU arm's option; per worker only on a cluster
    elif "rmm_pool" in given:
        out["rmm_pool"] = None  # the cluster's, not the single-process arm's (whose check takes no fractions)
    named = ", ".join(LOCAL_CLUSTER_FLAGS[k] for k in given)
    if kind and address:
        raise AccelError("--cluster and --scheduler exclude each other: start a cluster here, or name a running one")
    if baseline and not address:
        raise AccelError("--baseline-scheduler is the baseline of a running GPU cluster: it goes with --scheduler")
    if address and given:
        raise AccelError(f"{named} only apply to a cluster accel starts (--cluster); a running cluster has its own workers")
    if given and not kind:
        raise AccelError(f"{named} need --cluster local|local-cuda")
    if kind or address:
        cluster = {"kind": kind, **given} if kind else {"kind": "scheduler", "address": address}
        out["cluster"] = cluster | ({"baseline_address": baseline} if baseline else {})
    return out


def workflow_source(target: str | None, has_data: bool, command: str) -> tuple[dict, str]:
    """Settings from the positional WORKFLOW of ``accel run``/``accel hpo``: a name or a YAML file.

    Returns ``(file values, where they came from)``.
    """
    if target is None:
        if not has_data:
            raise AccelError(
                f"name a workflow (accel {command} flights) or give your table (accel {command} --data FILE --target COLUMN)"
            )
        return {}, "command line"
    if target.endswith((".yaml", ".yml")) or Path(target).is_file():
        values = read_workflow_file(Path(target))
        # Relative paths in a file are relative to where accel runs, like the flags.
        values.update({key: str(values[key]) for key in ("out", "data") if values.get(key) is not None})
        return values, target
    return {"workflow": target}, "command line"


def build_config(file_values: dict[str, Any] | None, overrides: dict[str, Any], source: str = "command line") -> RunConfig:
    """File values first, then the flags the user gave; validated as one."""
    merged: dict[str, Any] = dict(file_values or {})
    given = {k: v for k, v in overrides.items() if v is not None}
    if isinstance(merged.get("date_format"), dict) and isinstance(given.get("date_format"), dict):
        given["date_format"] = {**merged["date_format"], **given["date_format"]}  # flags win per column
    merged.update(given)
    for key in ("data", "out"):  # paths: given as text too, and ~ is the home folder in a file as on a shell
        if isinstance(merged.get(key), (str, PurePath)):
            merged[key] = Path(merged[key]).expanduser()
    try:
        return RunConfig.model_validate(merged, strict=True)  # the model sections strictly too
    except ValidationError as exc:
        raise AccelError(errors_message([dict(e) for e in exc.errors()], source)) from None
