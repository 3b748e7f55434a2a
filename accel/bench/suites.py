"""The ``accel bench`` suites run end to end: inputs checked, both arms measured, the result written.

:func:`run_suite` is what :func:`accel.benchmark` and ``accel bench SUITE`` both call. Every
input that can be refused is checked before measuring starts (data files and their columns,
question and model names, the repeat counts, the results folder, ``device="gpu"`` without a
GPU): one :class:`~accel.errors.AccelError`, nothing written. The result is a ``bench`` record,
written under ``results`` as ``<date>-<benchmark>-<device>-<NNN>.json`` (never over an earlier one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accel.errors import AccelError
from accel.files import exists_policy
from accel.output import say as stderr_line  # stdout is the result's; nothing with --quiet
from accel.record import dumps as strict_json

if TYPE_CHECKING:
    from accel.backend import Arms, Backend
    from accel.bench.db import Suite
    from accel.record import DbBench

#: Where results go without ``results``: this folder of the output root (:func:`accel.record.output_root`).
RESULTS_FOLDER = "benchmarks"

#: The settings every suite takes.
COMMON_SETTINGS = ("device", "repeats", "warmup", "results")
#: The settings of each suite besides :data:`COMMON_SETTINGS`, as ``accel bench SUITE`` names its flags.
SUITE_SETTINGS: dict[str, tuple[str, ...]] = {
    "groupby": ("data", "questions", "engines", "cpu_from", "progress_file", "overwrite"),
    "join": ("data_dir", "questions", "cpu_from", "progress_file", "overwrite"),
    "models": ("rows", "features", "models", "seed", "progress_file", "overwrite"),
    "crossover": ("operations", "min_rows", "max_rows", "steps_per_decade", "features", "seed"),
}
#: What a setting is when not given (``data`` and ``data_dir`` have none: their suite needs them).
DEFAULTS: dict[str, Any] = {
    "questions": "all",
    "engines": "",
    "cpu_from": None,
    "progress_file": None,
    "overwrite": False,
    "rows": 100_000,
    "features": 32,
    "models": "all",
    "seed": 42,
    "operations": None,
    "min_rows": 1_000,
    "max_rows": 10_000_000,
    "steps_per_decade": 1,
}


@dataclass(frozen=True)
class SuiteRequest:
    """One benchmark, as :func:`accel.benchmark` or ``accel bench SUITE`` asks for it.

    Attributes
    ----------
    suite : str
        ``groupby``, ``join``, ``models`` or ``crossover``.
    settings : dict
        The suite's settings by their names in :data:`SUITE_SETTINGS` and
        :data:`COMMON_SETTINGS`, defaults filled in.
    say : callable
        Told each progress line (a question, a model, a size measured).
    notice : callable
        Told what the user should read whether or not progress is shown (an older model name).
    """

    suite: str
    settings: dict[str, Any]
    say: Callable[[str], None]
    notice: Callable[[str], None]


def request(suite: str, given: Mapping[str, Any], progress: bool) -> SuiteRequest:
    """The request for ``suite`` from the settings the caller gave (None: not given).

    A setting that belongs to another suite is refused, naming the ones this suite takes.
    """
    if suite not in SUITE_SETTINGS:
        raise AccelError(f"unknown benchmark suite {suite!r}; known: {', '.join(SUITE_SETTINGS)}")
    takes = (*SUITE_SETTINGS[suite], *COMMON_SETTINGS)
    foreign = [k for k, v in given.items() if k not in takes and v is not None and v is not False]
    if foreign:
        raise AccelError(
            f"{', '.join(f'{k}=' for k in foreign)} does not apply to the {suite} benchmark; it takes: {', '.join(takes)}"
        )
    settings: dict[str, Any] = {k: given.get(k) if given.get(k) is not None else DEFAULTS.get(k) for k in takes}
    for name in ("questions", "engines", "models", "operations"):
        value = settings.get(name)
        if value is not None and not isinstance(value, str):
            settings[name] = ",".join(str(v) for v in value)  # as the flag spells it, and the record keeps it
    if settings.get("cpu_from") is not None:
        paths = [settings["cpu_from"]] if isinstance(settings["cpu_from"], (str, Path)) else settings["cpu_from"]
        settings["cpu_from"] = [Path(p) for p in paths]
    for name in ("data", "data_dir", "results", "progress_file"):
        if settings.get(name) is not None:
            settings[name] = Path(settings[name])
    _check_counts(settings)
    return SuiteRequest(suite, settings, stderr_line if progress else (lambda _message: None), stderr_line)


def _check_counts(settings: Mapping[str, Any]) -> None:
    """The whole-number settings, as the flags' argument types check them."""
    if settings["device"] not in ("auto", "cpu", "gpu"):
        raise AccelError(f"device must be 'auto', 'cpu' or 'gpu', got {settings['device']!r}")
    floors = {"repeats": 1, "warmup": 0, "rows": 1, "features": 1, "min_rows": 1, "max_rows": 1, "steps_per_decade": 1}
    for name, floor in floors.items():
        value = settings.get(name, floor)  # a count the suite does not take passes
        if isinstance(value, bool) or not isinstance(value, int) or value < floor:
            what = "a positive integer" if floor else "0 or a positive integer"
            raise AccelError(f"{name} must be {what}, got {value!r}")


def run_suite(req: SuiteRequest) -> tuple[dict[str, Any], Path]:
    """Check the inputs, measure both arms, write the result.

    Parameters
    ----------
    req : SuiteRequest
        From :func:`request`.

    Returns
    -------
    (dict, pathlib.Path)
        The result and where it was written.
    """
    runner = {"groupby": _run_db, "join": _run_db, "models": _run_models, "crossover": _run_crossover}[req.suite]
    return runner(req)


# --------------------------------------------------------------------------- shared parts


def _results_folder(settings: dict[str, Any]) -> Path:
    """``results``, or the output root's benchmarks folder, created and proved writable."""
    from accel.record import output_root
    from accel.timing import check_results_folder

    if settings["results"] is None:
        settings["results"] = output_root() / RESULTS_FOLDER
    return check_results_folder(settings["results"])


def _start(benchmark: str, settings: Mapping[str, Any], needs: tuple[str, ...] | None = None) -> tuple[Arms, dict]:
    """The arms for ``device`` (the GPU one None with why it is skipped) and the result's envelope, started now."""
    from accel.backend import resolve_arms
    from accel.record import record_head

    arms = resolve_arms(settings["device"], needs=needs)
    gpu = arms.gpu

    def plain(value: Any) -> Any:
        if isinstance(value, Path):
            return str(value)
        return [plain(v) for v in value] if isinstance(value, list) else value

    envelope = {
        **record_head("bench"),
        "benchmark": benchmark,
        "started_at": datetime.now(timezone.utc).isoformat(),
        "finished_at": None,
        "config": {k: plain(v) for k, v in settings.items()},
        "gpu": {
            "status": "ok" if gpu is not None else "skipped",
            "reason": arms.gpu_skip,
            "device_name": gpu.device.name if gpu is not None and gpu.device else None,
        },
    }
    return arms, envelope


def _finish(result: dict, gpu_ran: bool, folder: Path, fairness: dict) -> Path:
    """Stamp the result and write it, never over an earlier one."""
    from accel.timing import bench_environment, result_device, write_result

    result["finished_at"] = datetime.now(timezone.utc).isoformat()
    result["environment"] = bench_environment()
    result["fairness"] = fairness
    device = result_device(gpu_ran, result["environment"])
    return write_result(folder, result, result["benchmark"].replace("_", "-"), device)


class _ProgressFile:
    """One JSON line per finished question or model, appended as it finishes (a time limit keeps them).

    Each line names the benchmark, the data, the arm or engine, the code that ran and the
    machine, and holds that answer's measurements as the final result holds them.
    """

    def __init__(self, path: Path | None, benchmark: str, data: Any, overwrite: bool = False):
        self.path = path
        self.common: dict[str, Any] = {}
        if path is None:
            return
        from accel.environment import cpu_model, git_state
        from accel.files import write_new
        from accel.record import ensure_writable

        ensure_writable(Path(path).parent, what="the progress file's folder", option="--progress-file")
        # A new, empty file: one that exists (the user's own) is refused unless --overwrite says so.
        write_new(Path(path), b"", "the progress file", "choose another --progress-file", exists=exists_policy(overwrite))
        git = git_state()
        self.common = {
            "benchmark": benchmark,
            "data": data,
            "git_sha": git["sha"],
            "git_dirty": git["dirty"],
            "host": cpu_model(),
        }

    def __call__(self, arm: str, key: str, kind: str, answer: dict) -> None:
        if self.path is None:
            return
        line = {"at": datetime.now(timezone.utc).isoformat(), **self.common, "arm": arm, kind: key, "result": answer}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(strict_json(line, indent=None) + "\n")
            f.flush()


def _reuse_cpu_arm(paths: list[Path], benchmark: str, data_files: dict, questions: list) -> tuple[dict, dict]:
    """The CPU arm and CPU engines of earlier results, each checked to be the same benchmark on
    the same data (size and sha256 of every file) and CPU model; refused otherwise.
    Questions are taken from the first result that has them."""
    rows: dict[str, dict] = {}
    sources: dict[str, str] = {}
    arm: dict[str, Any] = {}
    engines: dict[str, dict] = {}
    # A folder: every result in it that matches (benchmark, data, CPU) is used, the rest ignored.
    expanded = [(c, True) for p in paths if Path(p).is_dir() for c in sorted(Path(p).glob("*.json"))]
    expanded += [(Path(p), False) for p in paths if not Path(p).is_dir()]
    for path, lenient in expanded:
        try:
            prior = _same_run(path, benchmark, data_files)
        except (OSError, ValueError, AccelError) as exc:
            if lenient:
                continue
            if isinstance(exc, AccelError):
                raise
            raise AccelError(f"--cpu-from: cannot read {str(path)!r} as a result ({type(exc).__name__})") from None
        arm = arm or {k: v for k, v in (prior.arms.get("cpu") or {}).items() if k != "questions"}
        for row in prior.questions:
            if row.cpu.ok and row.question not in rows:
                rows[row.question] = row.cpu.model_dump(exclude_unset=True)
                sources[row.question] = str(path)
        _take_engines(prior, path, engines)
    missing = [q.name for q in questions if q.name not in rows]
    if missing:
        raise AccelError(f"--cpu-from: no CPU answer for {', '.join(missing)} in {', '.join(map(str, paths))}")
    arm.update(status="ok", questions={q.name: rows[q.name] for q in questions})
    arm["reused_from"] = {q.name: sources[q.name] for q in questions}
    return arm, engines


def _same_run(path: Path, benchmark: str, data_files: dict) -> DbBench:
    """The result at ``path``, checked to be ``benchmark`` on the same data and CPU; refused otherwise."""
    from accel.environment import cpu_model
    from accel.record import DbBench, Environment, read_record

    prior = read_record(path)  # a RecordError is a ValueError: not a result
    if not isinstance(prior, DbBench) or prior.benchmark != benchmark:
        raise AccelError(f"--cpu-from: {str(path)!r} is not a {benchmark} result")
    theirs = {r: (f.bytes, f.sha256) for r, f in prior.data_files.items()}
    mine = {r: (f.get("bytes"), f.get("sha256")) for r, f in data_files.items()}
    if theirs != mine:
        raise AccelError(f"--cpu-from: {str(path)!r} was measured on other data (the files' bytes differ)")
    host = (prior.environment or Environment()).cpu_model
    if host != cpu_model():
        raise AccelError(f"--cpu-from: {str(path)!r} was measured on another CPU ({host!r}), not this one")
    return prior


def _take_engines(prior: DbBench, path: Path, engines: dict[str, dict]) -> None:
    """Add the CPU engines' answers of the result ``prior`` (read from ``path``) to ``engines``, first come first kept."""
    from accel.bench.engines import CPU_ENGINES

    for name, eng in prior.engines.items():
        if name not in CPU_ENGINES or not eng.ok:
            continue
        merged = engines.setdefault(name, {**eng.model_dump(exclude_unset=True, exclude={"questions"}), "questions": {}})
        for q, a in eng.questions.items():
            merged["questions"].setdefault(q, {**a.model_dump(exclude_unset=True), "reused_from": str(path)})


def _data_files(paths: dict[str, Path]) -> dict[str, dict]:
    """Each data file's path, size and sha256: what ``cpu_from`` compares (a regenerated file with
    the same bytes is the same data)."""
    from accel.files import file_sha256

    return {
        role: {"path": str(Path(p).resolve()), "bytes": Path(p).stat().st_size, "sha256": file_sha256(Path(p))}
        for role, p in paths.items()
    }


def _check_features(features: int) -> None:
    if features < 8:
        raise AccelError(f"--features must be at least 8 (PCA keeps 8 components), got {features}")


def _model_fairness(cpu: Any) -> dict:
    from accel.timing import blas_threads, fairness

    pools = {f"{p['user_api']} ({p['library']})": p["threads"] for p in blas_threads()}
    settings = {"scikit-learn n_jobs": "-1 (RandomForest, KNeighbors)", "xgboost n_jobs": cpu.n_threads, **pools}
    return fairness(cpu, f"all {cpu.n_threads}", settings)


# --------------------------------------------------------------------------- groupby / join


def _run_db(req: SuiteRequest) -> tuple[dict[str, Any], Path]:
    from accel.bench import db as dbbench
    from accel.bench import engines

    s, say = req.settings, req.say
    suite = dbbench.SUITES[req.suite]
    questions = dbbench.select_questions(suite, s["questions"])
    paths = _db_paths(suite, s)
    engine_names = engines.check_engines([e.strip() for e in (s.get("engines") or "").split(",") if e.strip()])
    folder = _results_folder(s)
    data_files = _data_files(paths)
    reused_cpu, reused_engines = (
        _reuse_cpu_arm(s["cpu_from"], suite.benchmark, data_files, questions) if s["cpu_from"] else (None, {})
    )
    arms, result = _start(suite.benchmark, s)
    result["data"] = {role: str(p) for role, p in paths.items()}
    result["data_files"] = data_files
    keep = _ProgressFile(s["progress_file"], suite.benchmark, result["data"], s["overwrite"])

    def run_arm(backend: Backend, arm: str) -> dict[str, Any]:
        return dbbench.run_arm(
            backend, suite, paths, questions, s["repeats"], s["warmup"], say, lambda q, a: keep(arm, q, "question", a)
        )

    gpu = arms.gpu
    measured = {"gpu": run_arm(gpu, "gpu") if gpu is not None else {"status": "skipped", "reason": arms.gpu_skip}}
    if reused_cpu is not None:
        measured["cpu"] = reused_cpu
        say(f"[cpu] taken from {', '.join(map(str, s['cpu_from']))} (same data and CPU model)")
    else:
        measured["cpu"] = run_arm(arms.cpu, "cpu")
    result["arms"] = {arm: {k: v for k, v in r.items() if k != "questions"} for arm, r in measured.items()}
    result["questions"] = dbbench.combine(questions, measured)
    if engine_names or reused_engines:
        to_run = [n for n in engine_names if n not in reused_engines]
        answers = engines.run_engines(
            to_run, paths["x"], [q.name for q in questions], say, s["repeats"], lambda n, q, a: keep(n, q, "question", a)
        )
        result["engines"] = {**reused_engines, **answers}
        _check_engines(result)
    return result, _finish(result, gpu is not None, folder, _db_fairness(arms.cpu, result))


def _db_paths(suite: Suite, s: dict[str, Any]) -> dict[str, Path]:
    """The benchmark's data files by role, located and their columns checked."""
    from accel.bench import db as dbbench

    if suite.name == "groupby":
        if s["data"] is None:
            raise AccelError("the groupby benchmark needs its data file (--data, data=): accel data groupby N K FILE")
        paths = dbbench.locate_groupby(s["data"])
    else:
        if s["data_dir"] is None:
            raise AccelError("the join benchmark needs the folder of its tables (--data-dir, data_dir=): accel data join N DIR")
        paths = dbbench.locate_join(s["data_dir"])
    dbbench.check_columns(suite, paths)
    return paths


def _check_engines(result: dict[str, Any]) -> None:
    """Each context engine's answers checked against the CPU arm's."""
    from accel.bench import db as dbbench

    for row in result["questions"]:
        for eng in result["engines"].values():
            if eng.get("status") == "ok" and row["question"] in eng["questions"]:
                eng["questions"][row["question"]].update(dbbench.compare_answers(eng["questions"][row["question"]], row["cpu"]))


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


# --------------------------------------------------------------------------- models / crossover


def _run_models(req: SuiteRequest) -> tuple[dict[str, Any], Path]:
    from accel.bench import models as modelbench

    s = req.settings
    pairs = modelbench.select_models(s["models"], say=req.notice)
    if s["rows"] < 50:
        raise AccelError(f"--rows must be at least 50 (an 80/20 split, 5 neighbours, 8 clusters), got {s['rows']}")
    _check_features(s["features"])
    folder = _results_folder(s)
    # The models need CuPy arrays, not cuDF: XGBoost runs on the GPU before cuDF is there, and
    # each pair skips with the library it lacks (cuML, XGBoost's CUDA build).
    arms, result = _start("models", s, needs=("cupy",))
    result["data"] = {"rows": s["rows"], "train_rows": int(s["rows"] * 0.8), "features": s["features"], "dtype": "float32",
                      "generator": "sklearn.datasets.make_classification / make_regression"}  # fmt: skip
    keep = _ProgressFile(s["progress_file"], "models", result["data"], s["overwrite"])
    result["models"] = modelbench.run_models(
        pairs, arms, req.settings, req.say, lambda arm, model, r: keep(arm, model, "model", r)
    )
    return result, _finish(result, arms.gpu is not None, folder, _model_fairness(arms.cpu))


def _run_crossover(req: SuiteRequest) -> tuple[dict[str, Any], Path]:
    from accel.bench import crossover
    from accel.data.datagen import MIN_JOIN_ROWS

    s = req.settings
    operations = crossover.select_operations(s["operations"], say=req.notice)
    sizes = crossover.row_counts(s["min_rows"], s["max_rows"], s["steps_per_decade"])
    _check_features(s["features"])
    if sizes[0] < 50 and any(op not in crossover.FRAME_OPERATIONS for op in operations):
        raise AccelError(f"--min-rows must be at least 50 for model operations, got {sizes[0]}")
    if sizes[0] < MIN_JOIN_ROWS and "join" in operations:
        raise AccelError(f"--min-rows must be at least {MIN_JOIN_ROWS} for the join operation, got {sizes[0]}")
    folder = _results_folder(s)
    arms, result = _start("crossover", s)
    result["sizes"] = sizes
    result["operations"] = crossover.sweep(operations, sizes, arms, req.settings, req.say)
    fair = _model_fairness(arms.cpu)
    fair["line"] += "; groupby/join: pandas, one thread"
    return result, _finish(result, arms.gpu is not None, folder, fair)


# --------------------------------------------------------------------------- what failed
