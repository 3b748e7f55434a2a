"""The ``accel bench`` suites run end to end: inputs checked, both arms measured, the result written.

:func:`run_suite` is what :func:`accel.benchmark` and ``accel bench SUITE`` both call. Every
input that can be refused is checked before measuring starts (data files and their columns,
question and model names, the repeat counts, the results folder, ``device="gpu"`` without a
GPU): one :class:`~accel.errors.AccelError`, nothing written. The result is a ``bench`` record,
written under ``results`` as ``<date>-<benchmark>-<device>-<NNN>.json`` (never over an earlier one).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accel.errors import AccelError
from accel.files import exists_policy, file_sha256, write_new
from accel.output import say as stderr_line  # stdout is the result's; nothing with --quiet
from accel.record import DbBench, Environment, ensure_writable, output_root, read_record, record_head
from accel.record import dumps as strict_json

if TYPE_CHECKING:
    from accel.backend import Arms, Backend

#: Where results go without ``results``: this folder of the output root (:func:`accel.record.output_root`).
RESULTS_FOLDER = "benchmarks"

#: The settings every suite takes (their defaults are :func:`accel.benchmark`'s).
COMMON_SETTINGS = ("device", "repeats", "warmup", "results")
_KEPT = {"progress_file": None, "overwrite": False}
#: The settings of each suite besides :data:`COMMON_SETTINGS`, as ``accel bench SUITE`` names its flags,
#: each with what it is when not given (``data`` and ``data_dir`` have none: their suite needs them).
SUITE_SETTINGS: dict[str, dict[str, Any]] = {
    "groupby": {"data": None, "questions": "all", "engines": "", "cpu_from": None, **_KEPT},
    "join": {"data_dir": None, "questions": "all", "cpu_from": None, **_KEPT},
    "models": {"rows": 100_000, "features": 32, "models": "all", "seed": 42, **_KEPT},
    "crossover": {
        "operations": None,
        "min_rows": 1_000,
        "max_rows": 10_000_000,
        "steps_per_decade": 1,
        "features": 32,
        "seed": 42,
    },
}


#: The settings given in more than one form, each as the suite reads it: a list of names as the
#: flag spells it (and the record keeps it), a path (``cpu_from``: one or more).
_SPELLED: dict[str, Callable[[Any], Any]] = {
    **dict.fromkeys(
        ("questions", "engines", "models", "operations"), lambda v: v if isinstance(v, str) else ",".join(map(str, v))
    ),
    **dict.fromkeys(("data", "data_dir", "results", "progress_file"), Path),
    "cpu_from": lambda v: [Path(p) for p in ([v] if isinstance(v, (str, Path)) else v)],
}


def run_suite(suite: str, given: Mapping[str, Any], progress: bool) -> tuple[dict[str, Any], Path]:
    """Check the inputs, measure both arms, write the result, for any suite.

    A setting that belongs to another suite is refused, naming the ones this suite takes; then the
    counts, then the suite's own inputs, in its own order (:func:`_db`, :func:`_models`, :func:`_crossover`); then :func:`_run`.

    Parameters
    ----------
    suite : str
        ``groupby``, ``join``, ``models`` or ``crossover``.
    given : mapping
        The settings the caller gave, by their names in :data:`SUITE_SETTINGS` and
        :data:`COMMON_SETTINGS` (None: not given).
    progress : bool
        Say each question, model or size measured on stderr.

    Returns
    -------
    (dict, pathlib.Path)
        The result and where it was written.
    """
    if suite not in SUITE_SETTINGS:
        raise AccelError(f"unknown benchmark suite {suite!r}; known: {', '.join(SUITE_SETTINGS)}")
    takes = {**SUITE_SETTINGS[suite], **dict.fromkeys(COMMON_SETTINGS)}
    foreign = [k for k, v in given.items() if k not in takes and v is not None and v is not False]
    if foreign:
        raise AccelError(
            f"{', '.join(f'{k}=' for k in foreign)} does not apply to the {suite} benchmark; it takes: {', '.join(takes)}"
        )
    settings: dict[str, Any] = {k: default if given.get(k) is None else given[k] for k, default in takes.items()}
    settings = {k: v if v is None or k not in _SPELLED else _SPELLED[k](v) for k, v in settings.items()}
    if settings["device"] not in ("auto", "cpu", "gpu"):
        raise AccelError(f"device must be 'auto', 'cpu' or 'gpu', got {settings['device']!r}")
    # The whole-number settings, as the flags' argument types check them (a count the suite does not take passes).
    floors = {"repeats": 1, "warmup": 0, "rows": 1, "features": 1, "min_rows": 1, "max_rows": 1, "steps_per_decade": 1}
    for name, floor in floors.items():
        if settings.get(name, floor) < floor:  # an int: accel.benchmark's arguments are checked for their types
            what = "a positive integer" if floor else "0 or a positive integer"
            raise AccelError(f"{name} must be {what}, got {settings[name]!r}")
    run = {"models": _models, "crossover": _crossover}.get(suite, functools.partial(_db, suite))  # each with its checks
    return run(settings, stderr_line if progress else (lambda _message: None))


#: ``keep(arm, key, answer)``: one finished question or model, appended to the progress file.
Keep = Callable[[str, str, dict], None]


def _run(
    s: dict[str, Any],
    benchmark: str,
    facts: Callable[[], dict[str, Any]],
    measure: Callable[[Arms, Keep], dict[str, Any]],
    fairness: Callable[[Backend, dict[str, Any]], dict[str, Any]],
    item: str = "question",
    needs: tuple[str, ...] | None = None,
) -> tuple[dict[str, Any], Path]:
    """Measure both arms and write the result ``benchmark``, for any suite whose inputs passed their checks.

    The results folder (``results`` of the settings ``s``, or the output root's benchmarks folder,
    created and proved writable) comes first; then the result's fields known before measuring,
    ``facts()`` (the data: where ``cpu_from`` is checked, so that a refusal there comes after the
    folder's, as it always has); the arms for ``device``, with the GPU capabilities the suite
    ``needs`` (:func:`accel.backend.resolve_arms`); the progress file, whose lines name each
    answer's ``item`` (``question``, ``model``); the measured fields, ``measure(arms, keep)``; and
    the result, stamped, with the CPU arm's threads and settings, ``fairness(cpu, result)``, and
    written (never over an earlier one). Returns the result and where it was written.
    """
    from accel.backend import resolve_arms
    from accel.timing import bench_environment, result_device, write_result

    s["results"] = s["results"] or output_root() / RESULTS_FOLDER
    folder = ensure_writable(s["results"], what="benchmark results", option="--results")
    known = facts()
    arms = resolve_arms(s["device"], needs=needs)
    gpu = arms.gpu

    result = {
        **record_head("bench"),
        "benchmark": benchmark,
        "started_at": datetime.now(timezone.utc).isoformat(),
        "finished_at": None,
        "config": json.loads(json.dumps(s, default=str)),  # paths as text
        "gpu": {
            "status": "ok" if gpu is not None else "skipped",
            "reason": arms.gpu_skip,
            "device_name": gpu.device.name if gpu is not None and gpu.device else None,
        },
        **known,
    }
    keep = _progress_file(s.get("progress_file"), benchmark, known.get("data"), item, s.get("overwrite", False))
    result.update(measure(arms, keep))
    result.update(finished_at=datetime.now(timezone.utc).isoformat(), environment=bench_environment())
    result["fairness"] = fairness(arms.cpu, result)
    device = result_device(gpu is not None, result["environment"])
    return result, write_result(folder, result, benchmark.replace("_", "-"), device)


def _progress_file(path: Path | None, benchmark: str, data: Any, item: str, overwrite: bool) -> Keep:
    """What keeps each finished question or model: one JSON line appended to the file at ``path``
    as it finishes (a time limit keeps them); nothing without a path.

    Each line names the benchmark, the data, the arm or engine, the code that ran and the
    machine, and holds that answer's measurements as the final result holds them.
    """
    if path is None:
        return lambda _arm, _key, _answer: None
    from accel.environment import cpu_model, git_state

    ensure_writable(Path(path).parent, what="the progress file's folder", option="--progress-file")
    # A new, empty file: one that exists (the user's own) is refused unless --overwrite says so.
    write_new(Path(path), b"", "the progress file", "choose another --progress-file", exists=exists_policy(overwrite))
    git = git_state()
    common = {"benchmark": benchmark, "data": data, "git_sha": git["sha"], "git_dirty": git["dirty"], "host": cpu_model()}

    def keep(arm: str, key: str, answer: dict) -> None:
        line = {"at": datetime.now(timezone.utc).isoformat(), **common, "arm": arm, item: key, "result": answer}
        with open(path, "a", encoding="utf-8") as f:  # closed, so flushed, with each answer
            f.write(strict_json(line, indent=None) + "\n")

    return keep


def _reuse_cpu_arm(paths: list[Path], benchmark: str, data_files: dict, questions: list) -> tuple[dict | None, dict]:
    """The CPU arm and CPU engines of earlier results, each checked to be the same benchmark on
    the same data (size and sha256 of every file) and CPU model; refused otherwise (none without ``paths``).
    Questions are taken from the first result that has them."""
    if not paths:
        return None, {}
    rows: dict[str, tuple[dict, str]] = {}  # each question's CPU answer, and the result it came from
    arm: dict[str, Any] = {}
    engines: dict[str, dict] = {}
    # A folder: every result in it that matches (benchmark, data, CPU) is used, the rest ignored.
    expanded = [(c, True) for p in paths if p.is_dir() for c in sorted(p.glob("*.json"))]
    expanded += [(p, False) for p in paths if not p.is_dir()]
    for path, lenient in expanded:
        try:
            prior = _same_run(path, benchmark, data_files)
        except (OSError, ValueError, AccelError) as exc:
            if lenient:
                continue
            why = f"--cpu-from: cannot read {str(path)!r} as a result ({type(exc).__name__})"
            raise exc if isinstance(exc, AccelError) else AccelError(why) from None
        arm = arm or {k: v for k, v in (prior.arms.get("cpu") or {}).items() if k != "questions"}
        for row in prior.questions:
            if row.cpu.ok:
                rows.setdefault(row.question, (row.cpu.model_dump(exclude_unset=True), str(path)))
        _take_engines(prior, path, engines)
    missing = [q.name for q in questions if q.name not in rows]
    if missing:
        raise AccelError(f"--cpu-from: no CPU answer for {', '.join(missing)} in {', '.join(map(str, paths))}")
    arm.update(status="ok", questions={q.name: rows[q.name][0] for q in questions})
    arm["reused_from"] = {q.name: rows[q.name][1] for q in questions}
    return arm, engines


def _same_run(path: Path, benchmark: str, data_files: dict) -> DbBench:
    """The result at ``path``, checked to be ``benchmark`` on the same data and CPU; refused otherwise."""
    from accel.environment import cpu_model

    prior = read_record(path)  # a RecordError is a ValueError: not a result
    if not isinstance(prior, DbBench) or prior.benchmark != benchmark:
        raise AccelError(f"--cpu-from: {str(path)!r} is not a {benchmark} result")
    if {r: (f.bytes, f.sha256) for r, f in prior.data_files.items()} != {
        r: (f["bytes"], f["sha256"]) for r, f in data_files.items()
    }:
        raise AccelError(f"--cpu-from: {str(path)!r} was measured on other data (the files' bytes differ)")
    host = (prior.environment or Environment()).cpu_model
    if host != cpu_model():
        raise AccelError(f"--cpu-from: {str(path)!r} was measured on another CPU ({host!r}), not this one")
    return prior


def _take_engines(prior: DbBench, path: Path, engines: dict[str, dict]) -> None:
    """Add the CPU engines' answers of the result ``prior`` (read from ``path``) to ``engines``, first come first kept."""
    from accel.bench.engines import CPU_ENGINES

    for name, eng in prior.engines.items():
        if name in CPU_ENGINES and eng.ok:
            merged = engines.setdefault(name, {**eng.model_dump(exclude_unset=True, exclude={"questions"}), "questions": {}})
            for q, a in eng.questions.items():
                merged["questions"].setdefault(q, {**a.model_dump(exclude_unset=True), "reused_from": str(path)})


def _at_least(flag: str, value: int, floor: int, why: str) -> None:
    """Refuse ``value`` below ``floor``, saying ``why`` the suite needs it (a floor of 0: no need)."""
    if value < floor:
        raise AccelError(f"{flag} must be at least {floor} {why}, got {value}")


_PCA_FLOOR = "(PCA keeps 8 components)"


def _model_fairness(cpu: Backend, _result: Any = None, also: str = "") -> dict:
    """The CPU arm's threads for the models: every core, the BLAS pools as loaded; ``also`` ends the line."""
    from accel.timing import blas_threads, fairness

    pools = {f"{p['user_api']} ({p['library']})": p["threads"] for p in blas_threads()}
    settings = {"scikit-learn n_jobs": "-1 (RandomForest, KNeighbors)", "xgboost n_jobs": cpu.n_threads, **pools}
    fair = fairness(cpu, f"all {cpu.n_threads}", settings)
    return {**fair, "line": fair["line"] + also}


# --------------------------------------------------------------------------- the suites' checks and measurements


#: The setting that names each db suite's data, and what its refusal without it says to give.
_DB_DATA = {
    "groupby": ("data", "its data file (--data, data=): accel data groupby N K FILE"),
    "join": ("data_dir", "the folder of its tables (--data-dir, data_dir=): accel data join N DIR"),
}


def _db(name: str, s: dict[str, Any], say: Callable[[str], None]) -> tuple[dict[str, Any], Path]:
    """groupby and join: the questions, the data files and their columns, the context engines."""
    from accel.bench import db as dbbench
    from accel.bench import engines

    suite = dbbench.SUITES[name]
    questions = dbbench.select_questions(suite, s["questions"])
    source, wants = _DB_DATA[name]
    if s[source] is None:
        raise AccelError(f"the {name} benchmark needs {wants}")
    paths = (dbbench.locate_groupby if name == "groupby" else dbbench.locate_join)(s[source])
    dbbench.check_columns(suite, paths)
    engine_names = engines.check_engines(s.get("engines") or "")
    reused: dict[str, Any] = {}

    def facts() -> dict[str, Any]:
        # Each file's path, size and sha256: what cpu_from compares (a regenerated file with the same bytes is the same data).
        data_files = {
            r: {"path": str(p.resolve()), "bytes": p.stat().st_size, "sha256": file_sha256(p)} for r, p in paths.items()
        }
        reused["cpu"], reused["engines"] = _reuse_cpu_arm(s["cpu_from"] or [], suite.benchmark, data_files, questions)
        return {"data": {role: str(p) for role, p in paths.items()}, "data_files": data_files}

    def measure(arms: Arms, keep: Keep) -> dict[str, Any]:
        def run_arm(arm: str, backend: Backend) -> dict[str, Any]:
            if arm == "cpu" and reused["cpu"] is not None:
                say(f"[cpu] taken from {', '.join(map(str, s['cpu_from']))} (same data and CPU model)")
                return reused["cpu"]
            kept = functools.partial(keep, arm)
            return dbbench.run_arm(backend, suite, paths, questions, s["repeats"], s["warmup"], say, kept)

        measured = dbbench.both_arms(arms, arms.gpu_skip, run_arm)
        out: dict[str, Any] = {
            "arms": {arm: {k: v for k, v in r.items() if k != "questions"} for arm, r in measured.items()},
            "questions": dbbench.combine(questions, measured),
        }
        if engine_names or reused["engines"]:
            to_run = [n for n in engine_names if n not in reused["engines"]]
            answers = engines.run_engines(to_run, paths["x"], [q.name for q in questions], say, s["repeats"], keep)
            out["engines"] = {**reused["engines"], **answers}
            cpu = {row["question"]: row["cpu"] for row in out["questions"]}
            for eng in (e for e in out["engines"].values() if e.get("status") == "ok"):  # checked against the CPU arm
                for q in cpu.keys() & eng["questions"].keys():
                    eng["questions"][q].update(dbbench.compare_answers(eng["questions"][q], cpu[q]))
        return out

    return _run(s, suite.benchmark, facts, measure, _db_fairness)


def _db_fairness(cpu: Backend, result: dict[str, Any]) -> dict[str, Any]:
    """The CPU arm's threads and the libraries' settings, the context engines' threads with them."""
    import pandas
    import pyarrow

    from accel.timing import fairness

    engines = result.get("engines", {})
    thread_settings: dict[str, Any] = {
        "pandas": pandas.__version__,
        "groupby/merge threads": 1,
        "file reader": f"pyarrow, {pyarrow.cpu_count()} threads",
        **{f"{name} threads (context)": eng["threads"] for name, eng in engines.items() if eng.get("status") == "ok"},
    }
    return fairness(cpu, "1 (pandas runs groupby and merge on one thread; it has no parallel groupby)", thread_settings)


def _models(s: dict[str, Any], say: Callable[[str], None]) -> tuple[dict[str, Any], Path]:
    """The model pairs on generated data."""
    from accel.bench import models as modelbench

    pairs = modelbench.select_models(s["models"], say=stderr_line)
    _at_least("--rows", s["rows"], 50, "(an 80/20 split, 5 neighbours, 8 clusters)")
    _at_least("--features", s["features"], 8, _PCA_FLOOR)
    data = {"rows": s["rows"], "train_rows": int(s["rows"] * 0.8), "features": s["features"], "dtype": "float32",
            "generator": "sklearn.datasets.make_classification / make_regression"}  # fmt: skip

    def measure(arms: Arms, keep: Keep) -> dict[str, Any]:
        return {"models": modelbench.run_models(pairs, arms, s, say, keep)}

    # The models need CuPy arrays, not cuDF: XGBoost runs on the GPU before cuDF is there, and
    # each pair skips with the library it lacks (cuML, XGBoost's CUDA build).
    return _run(s, "models", lambda: {"data": data}, measure, _model_fairness, item="model", needs=("cupy",))


def _crossover(s: dict[str, Any], say: Callable[[str], None]) -> tuple[dict[str, Any], Path]:
    """The operations at each size."""
    from accel.bench import crossover
    from accel.data.datagen import MIN_JOIN_ROWS

    operations = crossover.select_operations(s["operations"], say=stderr_line)
    sizes = crossover.row_counts(s["min_rows"], s["max_rows"], s["steps_per_decade"])
    _at_least("--features", s["features"], 8, _PCA_FLOOR)
    _at_least("--min-rows", sizes[0], 50 if set(operations) - set(crossover.FRAME_OPERATIONS) else 0, "for model operations")
    _at_least("--min-rows", sizes[0], MIN_JOIN_ROWS if "join" in operations else 0, "for the join operation")

    def measure(arms: Arms, _keep: Keep) -> dict[str, Any]:
        return {"operations": crossover.sweep(operations, sizes, arms, s, say)}

    fairness = functools.partial(_model_fairness, also="; groupby/join: pandas, one thread")
    return _run(s, "crossover", lambda: {"sizes": sizes}, measure, fairness)
