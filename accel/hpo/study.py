"""The study and where it is kept: storage URLs (secrets never written), opening, joining or
resuming a study (interrupted trials marked failed, a changed search refused), and the claims
that say which processes run a study.

Several ``accel hpo`` started at once on one storage are safe: an SQLite storage is created and
its studies opened one process at a time (a lock on its folder, :func:`accel.scratch.exclusive`);
default study names never collide; and processes given the same ``--study`` with the same
settings *join* it, as Optuna's distributed search does: they share its trials (``--trials`` is
the study's total), each with its own sampler seed. ``--resume`` of a study that live processes
run is refused: it would mark their running trials failed."""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import warnings
from collections.abc import Iterator
from contextlib import closing, contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from accel.credentials import SECRET_PARAMS
from accel.errors import AccelError
from accel.models import is_classification

if TYPE_CHECKING:
    from optuna.storages import BaseStorage

    from accel.config import RunConfig

# --------------------------------------------------------------------------- storage and study

#: Settings a run may change when it resumes a study (pydantic's ``exclude``); every other setting defines the study.
RUN_ONLY: dict[str, Any] = {"device": True, "out": True, "hpo": {"trials", "timeout", "top", "storage", "study"}}


def direction_of(task: str) -> tuple[str, Literal["maximize", "minimize"]]:
    """(metric, direction) the study optimises for ``task``."""
    return ("auc", "maximize") if is_classification(task) else ("rmse", "minimize")


def scrub(text: str, url: str) -> str:
    """``text`` with every secret of ``url`` replaced by ``***`` (for messages quoting a driver's error): its
    password and secret query parameters, as given and decoded, the longest first."""
    from urllib.parse import parse_qsl, unquote, urlsplit

    found: list[str] = []
    with suppress(ValueError):
        parts = urlsplit(url)
        found += [parts.password, unquote(parts.password)] if parts.password else []
        # As decoded, and as given (a value that does not decode the same).
        pairs = parse_qsl(parts.query, keep_blank_values=False) + [raw.partition("=")[::2] for raw in parts.query.split("&")]
        found += [value for key, value in pairs if key.lower() in SECRET_PARAMS and value]
    for secret in sorted({s for s in found if s}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def redact(url: str) -> str:
    """A storage URL without its password or secret query parameters, for messages, records and the study
    (then through :func:`accel.credentials.hide`, as everything accel writes)."""
    from accel.credentials import hide

    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
        query = {k: ("***" if k.lower() in SECRET_PARAMS else v) for k, v in parsed.query.items()}
        shown = scrub(parsed.set(query=query).render_as_string(hide_password=True), url).replace("%2A%2A%2A", "***")
    except Exception:  # noqa: BLE001 - not an SQLAlchemy URL: show it with its secrets hidden
        shown = scrub(url, url)
    return hide(shown)


def public_config(config: RunConfig) -> dict[str, Any]:
    """``config`` as JSON with the storage URL redacted: what records and study attributes hold."""
    from accel.credentials import hidden

    dump = config.model_dump(mode="json")
    if dump.get("hpo", {}).get("storage"):
        dump["hpo"]["storage"] = redact(dump["hpo"]["storage"])
    return hidden(dump)


def default_storage(out: Path) -> str:
    return "sqlite:///" + str((Path(out) / "hpo.db").resolve())


def is_optuna_sqlite(path: Path) -> bool:
    """Whether ``path`` is an SQLite file holding Optuna's tables (opened read-only)."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error:
        return False
    return {"studies", "trials", "study_user_attributes"} <= names


def open_storage(url: str, read_only: bool = False) -> Any:
    """Optuna's RDB storage for ``url``; a one-line error when it cannot be reached.

    ``read_only``: for readers (``accel experiments``): Optuna creates no tables, and an SQLite
    file is opened read-only and must exist and hold Optuna's tables already (else a one-line refusal).
    """
    import optuna

    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):
        # Several processes (Dask workers) write one SQLite file: wait for the lock, do not fail.
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 60}}
    given = url
    if read_only:
        kwargs["skip_table_creation"] = True
    if read_only and (path := _sqlite_path(url)) is not None:
        # A reader never creates a file, nor adds Optuna's tables to a database of the user's own.
        from accel.files import file_kind

        kind = file_kind(path)
        if kind == "missing":
            raise AccelError(f"--storage {redact(url)!r}: no such file {str(path)!r}; give an existing Optuna storage")
        if kind is not None:
            raise AccelError(f"--storage {redact(url)!r}: {str(path)!r} is {kind}, not an SQLite file")
        if not is_optuna_sqlite(path):
            raise AccelError(f"--storage {redact(url)!r}: {str(path)!r} holds no Optuna studies (nothing was written to it)")
        url = f"sqlite:///file:{path.resolve()}?mode=ro&uri=true"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return optuna.storages.RDBStorage(url, **kwargs)
    except Exception as exc:  # noqa: BLE001 - bad URL, missing driver, unreachable server, unwritable file
        first = scrub((str(exc).strip().splitlines() or [type(exc).__name__])[0], given)[:200]
        raise AccelError(
            f"cannot open study storage {redact(given)!r}: {type(exc).__name__}: {first} (check --storage)"
        ) from None


def quiet_optuna() -> None:
    with warnings.catch_warnings():
        # In Jupyter without ipywidgets, Optuna's import of tqdm.auto warns "IProgress not found":
        # accel shows no tqdm bar, so the warning says nothing to the user.
        warnings.filterwarnings("ignore", message="IProgress not found")
        import optuna

    # Our own progress lines replace Optuna's log; a failing trial is one line, not a traceback.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def make_sampler(seed: int) -> Any:
    import optuna

    return optuna.samplers.TPESampler(seed=seed, constant_liar=True)


def load_study(name: str, storage: Any, seed: int, pruner: str) -> Any:
    """The existing study ``name`` with a sampler seeded ``seed`` and the ``pruner`` kind."""
    import optuna

    return optuna.load_study(study_name=name, storage=storage, sampler=make_sampler(seed), pruner=make_pruner(pruner))


def make_pruner(kind: str) -> Any:
    import optuna

    # The median pruner: five trials before any pruning, and ten rounds into each trial before judging it.
    return optuna.pruners.NopPruner() if kind == "none" else optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=10)


def counted_trials(study: Any) -> int:
    """Trials that count towards ``--trials``: finished ones, except those failed by an interruption."""
    counts = trial_counts(study)
    return counts["complete"] + counts["pruned"] + counts["failed"]


def trial_counts(study: Any) -> dict[str, int]:
    """The study's trials in all, then by state; a failed trial marked ``interrupted`` counts as that, not as failed."""
    from collections import Counter

    trials = study.get_trials(deepcopy=False)
    states = Counter(
        "INTERRUPTED" if t.state.name == "FAIL" and t.user_attrs.get("interrupted") else t.state.name for t in trials
    )
    keys = {"complete": "COMPLETE", "pruned": "PRUNED", "failed": "FAIL", "interrupted": "INTERRUPTED", "running": "RUNNING"}
    return {"total": len(trials), **{k: states[state] for k, state in keys.items()}}


def _search_identity(config: RunConfig) -> dict[str, Any]:
    """The settings that define a study (everything but :data:`RUN_ONLY`), as JSON, credentials hidden."""
    from accel.credentials import hidden

    return hidden(config.model_dump(mode="json", exclude=RUN_ONLY))


def _differences(stored: dict[str, Any], current: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Each setting (``hpo.subset``) that differs between ``stored`` and ``current``, with a line saying how."""
    out: dict[str, str] = {}
    for key in sorted(set(stored) | set(current)):
        a, b = stored.get(key), current.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out |= _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out[prefix + key] = f"{prefix}{key}: {a!r} in the study, {b!r} now"
    return out


@dataclass
class OpenedStudy:
    study: Any
    storage_url: str
    config: Any
    workflow: Any
    resumed: bool
    interrupted: list[int] = field(default_factory=list)
    #: The processes that were running the study when this one joined it (empty: created or resumed here);
    #: joined as the n-th process, its sampler's seed differs by 1000 * n.
    joined: list[str] = field(default_factory=list)


def open_study(config: RunConfig, given: set[str], resume: bool) -> OpenedStudy:
    """Plan the workflow and create the study, or load it for ``resume``; refusals are one line.

    ``given`` holds the settings the user gave explicitly (``"seed"``, ``"hpo.subset"``, ...):
    on resume the study's stored settings win, and an explicit setting that differs from them
    is an error naming it. Nothing is written to the storage before every check has passed
    (the workflow is planned first: a user's table is read and checked then), and an SQLite
    file that opening the storage created is removed again when the run is refused.
    """
    from accel.scratch import exclusive

    quiet_optuna()
    url = config.hpo.storage or default_storage(config.out)
    path = _sqlite_path(url)
    # One process at a time creates the storage and opens or creates a study: under a lock on the
    # folder of an SQLite storage (two processes creating its tables at once fail: "UNIQUE
    # constraint failed: alembic_version"); none for a database server (it has its own transactions).
    folder = path.absolute().parent if path is not None else None
    with exclusive(folder) if folder is not None and folder.is_dir() else nullcontext():
        new_file = path if path is not None and not path.exists() else None  # a file that was there before is never removed
        storage = open_storage(url)
        try:
            existing = {s.study_name: s for s in storage.get_all_studies()}
            if resume:
                return _resumed_study(config, given, storage, url, config.hpo.study, existing)
            name = config.hpo.study or _free_name(config, existing)
            if name in existing:
                return _join(config, storage, url, existing[name])
            return _loaded(config, storage, url, name, joined=[], new=True)
        except BaseException:
            # Refused before a study was made: the SQLite file opening the storage created goes too.
            if new_file is not None:
                empty = False  # a storage that cannot be read is not removed
                with suppress(Exception):
                    empty = not storage.get_all_studies()
                if empty:
                    storage.engine.dispose()
                    for created in (new_file, new_file.with_name(new_file.name + "-journal")):
                        created.unlink(missing_ok=True)
            raise


def _sqlite_path(url: str) -> Path | None:
    """The file of an SQLite storage URL; None for another database, memory or a URI."""
    if not url.startswith("sqlite"):
        return None
    from sqlalchemy.engine import make_url

    try:
        database = make_url(url).database
    except Exception:  # noqa: BLE001 - an unparsable URL: opening the storage says what is wrong
        return None
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def _resumed_study(
    config: RunConfig, given: set[str], storage: BaseStorage, url: str, name: str | None, existing: dict[str, Any]
) -> OpenedStudy:
    """The study ``name`` (None: the newest) of ``existing`` resumed with its own settings and this run's
    trials, time-out, top-k, device and output; refused when it is not accel's, is running, or clashes."""
    from optuna.trial import TrialState

    from accel.config import RunConfig

    if name is None:
        if not existing:
            raise AccelError(f"--resume: no study in {redact(url)} to resume (give --storage, or start one without --resume)")
        name = max(existing.values(), key=lambda s: s._study_id).study_name  # noqa: SLF001 - the newest study
    elif name not in existing:
        known = ", ".join(sorted(existing)) or "none"
        raise AccelError(f"--resume: no study named {name!r} in {redact(url)} (studies there: {known})")
    accel_attrs = existing[name].user_attrs.get("accel")
    if not accel_attrs:
        raise AccelError(f"--resume: study {name!r} in {redact(url)} was not made by accel hpo")
    if busy := runners(existing[name].user_attrs):
        raise AccelError(
            f"--resume: study {name!r} is being run by {busy[0]}; wait for it to finish (or stop it), then resume "
            "(to run trials beside it, start it again without --resume: processes with the same --study join it)"
        )
    stored = RunConfig.model_validate(accel_attrs["config"])
    differences = _differences(accel_attrs["identity"], _search_identity(config))
    # A setting given explicitly, or a key of a section given (``hpo.search_space`` for ``hpo.search_space.xgboost``).
    if clashes := [line for key, line in differences.items() if any(key == g or key.startswith(g + ".") for g in given)]:
        raise AccelError(
            f"--resume: study {name!r} was made with other settings ({'; '.join(clashes)}); drop them, or start a new --study"
        )
    # The study's own settings, with this run's trials, time-out, top-k, device and output.
    hpo = stored.hpo.model_copy(update={k: getattr(config.hpo, k) for k in RUN_ONLY["hpo"]} | {"study": name, "storage": url})
    resumed_config = stored.model_copy(update={"device": config.device, "out": config.out, "hpo": hpo})
    opened = _loaded(resumed_config, storage, url, name, joined=[])
    # Trials left RUNNING by a process that died: marked FAILED with the reason, through the study's storage
    # (the documented way to change another trial's state).
    study, reason = opened.study, "interrupted: the process running this trial stopped; marked failed on --resume"
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        for key, value in (("interrupted", True), ("error", reason)):
            study._storage.set_trial_user_attr(trial._trial_id, key, value)  # noqa: SLF001
        study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)  # noqa: SLF001
        opened.interrupted.append(trial.number)
    return opened


def _free_name(config: RunConfig, existing: dict[str, Any]) -> str:
    """A default study name no study of the storage has: ``<label>-<UTC date>-<HHMMSS>-<6 hex>``
    (processes started in the same second get different names; checked under the storage lock)."""
    import secrets

    # What it searches: ``flights-xgboost`` or ``table-<file>-<model>``; the date as file names have it.
    label = config.workflow if config.data is None else f"table-{Path(str(config.data)).stem}"
    stamp = f"{label}-{config.model}-{datetime.now(timezone.utc):%Y-%m-%d-%H%M%S}"
    while True:
        name = f"{stamp}-{secrets.token_hex(3)}"
        if name not in existing:
            return name


def _join(config: RunConfig, storage: Any, url: str, summary: Any, just_created: bool = False) -> OpenedStudy:
    """Join the existing study ``summary`` as one more process of its search, or refuse.

    Joined when live processes run it (their claims) and it searches exactly what ``config``
    asks for; a study no process runs is refused (``--resume`` continues it), as is one that
    searches something else.
    """
    name, attrs = summary.study_name, summary.user_attrs
    live = runners(attrs)
    accel_attrs = attrs.get("accel")
    if not live or not accel_attrs:
        made = "was just created in {} by another process: add --resume once it has finished"
        how = (made if just_created else "already exists in {}: add --resume to continue it").format(redact(url))
        raise AccelError(f"study {name!r} {how}, or choose a new --study")
    if clashes := list(_differences(accel_attrs["identity"], _search_identity(config)).values()):
        raise AccelError(
            f"study {name!r} is being run by {live[0]} with other settings ({'; '.join(clashes[:3])}): give the same "
            "settings to join it, or choose a new --study"
        )
    return _loaded(config, storage, url, name, joined=live)


def _loaded(config: RunConfig, storage: Any, url: str, name: str, joined: list[str], new: bool = False) -> OpenedStudy:
    """The study ``name`` with ``config`` (its workflow planned first), claimed by this process: created (``new``;
    joined, when another process made it meanwhile), resumed, or ``joined`` beside the live processes that run it.

    Joined as the n-th process, its sampler is seeded ``config.seed + 1000 * n``: its own draws, not its peers'.
    """
    import optuna

    from accel.runner import build_workflow

    workflow = build_workflow(config)
    metric, direction = direction_of(workflow.task)
    if new:
        try:
            optuna.create_study(storage=storage, study_name=name, direction=direction)
        except optuna.exceptions.DuplicatedStudyError:
            # Another process created it between the check and now, outside the lock (another host,
            # or not accel): joined if it runs this search, else refused.
            made = next(s for s in storage.get_all_studies() if s.study_name == name)
            return _join(config, storage, url, made, just_created=True)
    study = load_study(name, storage, (config.seed + 1000 * len(joined)) % 2**32, config.hpo.pruner)
    claim(study)
    if new:
        study.set_user_attr("accel", {"identity": _search_identity(config), "config": public_config(config)})
        study.set_user_attr("metric", metric)
    return OpenedStudy(study, url, config, workflow, resumed=not (joined or new), joined=joined)


@contextmanager
def searched(opened: OpenedStudy) -> Iterator[OpenedStudy]:
    """The block that runs the ``opened`` study (given to it), and what its end leaves.

    This process's claim is released. On a failure, a study this run created in which no trial
    finished is deleted (a refused first run must not leave a study behind that ``--study NAME``
    then collides with), unless processes that joined it still run or the storage fails on the
    way; an interrupted search that keeps its study says how to continue it; a failure of the
    storage is one line (:func:`storage_failure`).
    """
    import optuna
    from optuna.trial import TrialState

    from accel.interrupts import kept

    study = opened.study
    try:
        yield opened
    except BaseException as exc:
        discarded = False
        with suppress(Exception):  # the storage is failing (the reason being reported): the study is left
            finished = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
            if not (opened.resumed or opened.joined or finished or runners(study.user_attrs)):
                optuna.delete_study(study_name=study.study_name, storage=study._storage)  # noqa: SLF001
                discarded = True
        if isinstance(exc, KeyboardInterrupt) and not discarded:  # the study kept, with the command that continues it
            try:
                done = f"its {counted_trials(study)} finished trial(s)"
            except Exception:  # noqa: BLE001 - the storage failing on the way out: the study is there all the same
                done = "the trials that finished"
            url, name = redact(opened.storage_url), study.study_name
            kept(exc, f"study {name!r} in {url} keeps {done}: continue it with accel hpo --resume --study {name} --storage {url}")
        if (failure := storage_failure(exc, opened.storage_url)) is not None:
            raise AccelError(failure) from None
        raise
    finally:
        with suppress(Exception):  # the storage may be gone on the way out; a dead claim is detected anyway
            if study.user_attrs.get(_claim_key()) is not None:
                study.set_user_attr(_claim_key(), None)


def storage_failure(exc: BaseException, url: str) -> str | None:
    """One line for a failure of the study storage anywhere in ``exc``'s chain (a full disk); None for others.

    Optuna wraps a database error in ``StorageInternalError`` and may then fail an assertion of
    its own ("Should not reach."): the database's error, found in the chain, says what happened.
    """
    import errno

    from optuna.exceptions import StorageInternalError

    chain: list[BaseException] = []
    while exc is not None and all(exc is not e for e in chain):
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    full = any(isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT) for e in chain)
    if not full and not any(isinstance(e, StorageInternalError) for e in chain):
        return None
    # SQLAlchemy's DBAPIError holds the driver's own error as ``orig``.
    texts = (
        str(getattr(e, "orig", None) or e).strip() for e in chain if not isinstance(e, (StorageInternalError, AssertionError))
    )
    reason = next((scrub(text.splitlines()[0], url)[:160] for text in texts if text), "the storage failed")
    advice = (
        "free some space, or choose another --storage / --out" if "full" in reason or "space" in reason else "check --storage"
    )
    return f"the study storage {redact(url)} failed during the search ({reason}); {advice}"


#: The study attribute naming the process that runs the study: host, pid, start and last sign of life.
CLAIM_ATTR = "running"
#: A claim from another host with no sign of life for this long is stale (its process died).
CLAIM_STALE_S = 1800


def _process_started(pid: int) -> float | None:
    try:
        import psutil

        return float(psutil.Process(pid).create_time())
    except Exception:  # noqa: BLE001 - no such process, no psutil, no permission
        return None


def _claim_key() -> str:
    """This process's claim attribute: ``running:<host>:<pid>`` (each process of a search its own)."""
    return f"{CLAIM_ATTR}:{socket.gethostname()}:{os.getpid()}"


def claim(study: Any) -> None:
    """Mark ``study`` as run by this process, its last sign of life now (released at the end of :func:`searched`);
    called again after each trial."""
    held = {"host": socket.gethostname(), "pid": os.getpid(), "started": _process_started(os.getpid()), "heartbeat": time.time()}
    study.set_user_attr(_claim_key(), held)


def runners(attrs: dict[str, Any]) -> list[str]:
    """The other live processes that run a study, from its user attributes (their claims: the
    key ``running`` of older studies, ``running:<host>:<pid>`` of each process)."""
    return [who for k in sorted(attrs) if k.partition(":")[0] == CLAIM_ATTR and (who := running_elsewhere(attrs[k]))]


def running_elsewhere(held: Any) -> str | None:
    """``process 123 on host h (last sign of life 5 s ago)`` if another live process runs the study, else None.

    On this host a claim is alive while its process (same pid, same start time) is; on another
    host, while it has shown a sign of life within :data:`CLAIM_STALE_S`.
    """
    if not isinstance(held, dict) or not held.get("pid"):
        return None
    pid, host = int(held["pid"]), str(held.get("host"))
    age = time.time() - float(held.get("heartbeat") or 0)
    who = f"process {pid} on {host} (last sign of life {age:,.0f} s ago)"
    if host == socket.gethostname():
        if pid == os.getpid():
            return None
        started = _process_started(pid)
        if started is None or (held.get("started") is not None and abs(started - float(held["started"])) > 1.0):
            return None  # that process is gone (or its pid was reused)
        return who
    return who if age < CLAIM_STALE_S else None
