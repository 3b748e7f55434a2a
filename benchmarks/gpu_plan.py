"""The GPU check's calls to the GPU machine, planned from the wheel lock file: what each call
carries and runs.

    python benchmarks/gpu_plan.py plan [--track core|groupby|ml]   JSON lines, one per call
    python benchmarks/gpu_plan.py fetch [--track ...]              download the lock's wheels, lay out .whl/
    python benchmarks/gpu_plan.py lock                             rewrite the lock from PyPI's metadata

(``benchmarks/gpu_check.sh plan|fetch`` run the first two.)

Why a plan: the GPU machine reaches no package index and runs one command at a time, a *call*:
a call carries at most 64 MiB of files (the working tree included) and runs at most 540 s, and a
GPU check runs within a time budget of 15 minutes of device time (the machine's start, every
call and every wait between calls included). The machine keeps what earlier calls carried only
while it stays started, so a wheel larger than a call arrives in parts over consecutive calls,
and every call should run something useful.

The lock (``benchmarks/gpu-wheels.lock.json``) names every wheel by exact version, file name,
size and sha256, in sets (``xgboost``, ``cudf``, ``cuml`` ...): the CUDA 13 wheels of the GPU
machine, each RAPIDS package one of pyproject's ``gpu-cu13`` extra (its ``extra``). A *track* is what one GPU check's
budget holds: its sets in the order they are carried, and its steps, each needing some sets. The
planner cuts the track's wheels, in order, into calls of at most the carry budget (a wheel that
does not fit the rest of a call is cut there, into ``NAME.whl.00``, ``.01``, ... which
``gpu_check.sh install`` joins once every part has arrived), and gives each step to the first
call by which every set it needs has arrived, keeping each call under the time limit. ``fetch``
lays the files out exactly so: ``.whl/<track>-<NN>/`` is what call NN of that track carries.

Every ``seconds`` is an estimate of the command's run time on the H200 host (16 cores), from the
2026-11-30 logs where a step ran there and from the CPU machine's results scaled where it did not;
the summary adds the machine's start and each call's transfer (assumed, see ``START_S`` and
``PER_CALL_S``) to say whether the track fits the time budget.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "benchmarks" / "gpu-wheels.lock.json"
MIB = 1 << 20
CALL_LIMIT_BYTES = 64 * MIB  #: one call carries at most this, working tree included
CALL_LIMIT_S = 540  #: the longest command planned into one call
BUDGET_S = 900  #: the device time a GPU check runs within
START_S = 120  #: assumed: the machine's start ("minutes")
PER_CALL_S = 10  #: assumed: each call's transfer and process start, beyond its command
INSTALL_S = 10  #: pip-installing what arrived (joining parts, unzipping), per call
MARGIN_BYTES = 512 * 1024  #: slack for the build-info file and files added after planning
SPLIT_AT_LEAST = 8 * MIB  #: a smaller wheel waits for the next call rather than being cut


@dataclass(frozen=True)
class Step:
    """A ``gpu_check.sh`` phase with its settings: what it needs carried, and how long it runs."""

    name: str
    needs: tuple[str, ...]
    seconds: int
    phases: str
    env: dict[str, str] = field(default_factory=dict)


#: The GPU tests of ``accel run flights`` end to end (both arms, float32 and float16): the first
#: step once cuDF is there, with the run itself (``gpu_check.sh flights``).
FLIGHTS_TESTS = ("tests/test_flights_e2e_gpu.py",)
#: The shared table of hostile inputs on cuDF and XGBoost (every table case of ``accel run``
#: with ``--device gpu``): the second.
HOSTILE_TESTS = ("tests/test_hostile_gpu.py",)
#: The paths where cuDF's reading and missing values are not pandas' (``None`` as text, Parquet
#: files that differ in schema, durations, decimal256 and float16, float16 scales and codes, an
#: arm failing while it plans; nulls in integer and categorical columns, gzip CSV, missing targets
#: early in a file, %j dates): the third.
CUDF_SEMANTICS_TESTS = (
    "tests/test_edges_gpu.py",
    "tests/test_autofeatures_gpu.py",
    "tests/test_dates_gpu.py",
    "tests/test_features_gpu.py",
)
STREAMED_TEST = "tests/test_memory_gpu.py::test_streamed_run_stays_within_its_planned_device_bytes"


def _files(*paths: str) -> str:
    """A list of test files or node ids as one environment value of a step's command."""
    return "'" + " ".join(paths) + "'"


#: Each track: the sets in the order they are carried, and the steps in priority order.
#: Sets every cuDF step needs (numpy 2.3.5 replaces the image's 2.5, which RAPIDS 26.10 cannot use).
_CUDF = ("pydantic", "numpy", "cudf")
#: The core track's steps once cuDF has arrived run in this order, each one's log and results
#: packed as it ends (``gpu_check.sh``), so that a track cut short keeps the most valuable ones:
#: flights end to end, then the hostile table on cuDF and XGBoost, then the cuDF semantics.
#: To fit them, the XGBoost-at-1e7 benchmark (130 s; measured on 2026-11-30,
#: ``models-nvidia-h200-00*``) left the core track, and the memory benchmarks (100 s) moved to
#: the groupby-gpu track.
TRACKS: dict[str, dict] = {
    "core": {
        "about": "CuPy, RMM and XGBoost on CUDA before cuDF arrives, then cuDF: accel run flights end to end (fp32, "
        "fp16), the hostile data table on cuDF and XGBoost, where cuDF and pandas differ, the streamed run, the "
        "rest of pytest -m gpu",
        "sets": ["pydantic", "rmm", "xgboost", "numpy", "dask", "dask-cudf", "cudf"],
        "steps": [
            Step("info (capabilities library by library)", ("pydantic",), 15, "info"),
            Step(
                "tests: CuPy and RMM (pool, float16 CuPy storage, real out-of-memory back-off)", ("pydantic", "rmm"), 45, "tests"
            ),
            Step("tests: XGBoost on CUDA against the CPU arm", ("pydantic", "rmm", "xgboost"), 45, "tests"),
            Step(
                "flights end to end: its GPU tests, then accel run flights fp32 and fp16 (run records)",
                (*_CUDF, "rmm", "xgboost"),
                80,
                "tests flights",
                {"PYTEST_FILES": _files(*FLIGHTS_TESTS)},
            ),
            Step(
                "tests: the hostile data table on cuDF and XGBoost (every table case the CPU arm handles, --device gpu)",
                (*_CUDF, "rmm", "xgboost"),
                160,
                "tests",
                {"PYTEST_FILES": _files(*HOSTILE_TESTS)},
            ),
            Step(
                "tests: where cuDF and pandas differ (None as text, Parquet files of other schemas, durations, "
                "decimal256, float16 scales and codes, a GPU arm failing while it plans; nulls in integer and "
                "categorical columns, gzip CSV, missing targets early in a file, %j dates)",
                (*_CUDF, "rmm", "xgboost", "dask", "dask-cudf"),
                70,
                "tests",
                {"PYTEST_FILES": _files(*CUDF_SEMANTICS_TESTS)},
            ),
            Step(
                "tests: a streamed run within its planned device bytes (XGBoost's state, histograms and pages held "
                "counted; external-memory pages in host memory, DataIter(on_host=True), recorded; --rmm-pool off)",
                (*_CUDF, "rmm", "xgboost"),
                40,
                "tests",
                {"PYTEST_FILES": STREAMED_TEST},
            ),
            Step(
                "tests: the rest of pytest -m gpu (Dask-CUDA and dask-cudf: the edge tables, multiclass, the "
                "workers' pools and spilling; cuDF, dates)",
                ("pydantic", "rmm", "xgboost", "numpy", "dask", "dask-cudf", "cudf"),
                130,
                "tests",
                {"PYTEST_EXCLUDE": _files(*FLIGHTS_TESTS, *HOSTILE_TESTS, *CUDF_SEMANTICS_TESTS, STREAMED_TEST)},
            ),
        ],
    },
    "groupby-cpu": {
        "about": "db-benchmark groupby at 1e8 rows, K=100, the CPU side on the H200 host's 16 cores: pandas (all ten "
        "questions, cold run + 3 repeats, one question set per call), DuckDB and polars; kept for groupby-gpu",
        "sets": ["pydantic", "duckdb", "polars"],
        "steps": [
            Step("groupby data 1e8 x K=100", ("pydantic",), 45, "groupby", {"GROUPBY_ARMS": "data"}),
            Step(
                "groupby 1e8 pandas q1-q7",
                ("pydantic",),
                170,
                "groupby",
                {"GROUPBY_ARMS": "cpu", "GROUPBY_QUESTIONS": "q1,q2,q3,q4,q5,q6,q7"},
            ),
            Step(
                "groupby 1e8 pandas q8, q9", ("pydantic",), 160, "groupby", {"GROUPBY_ARMS": "cpu", "GROUPBY_QUESTIONS": "q8,q9"}
            ),
            Step("groupby 1e8 pandas q10", ("pydantic",), 260, "groupby", {"GROUPBY_ARMS": "cpu", "GROUPBY_QUESTIONS": "q10"}),
            Step(
                "groupby 1e8 DuckDB and polars (all cores), checked against pandas",
                ("pydantic", "duckdb", "polars"),
                90,
                "groupby",
                {"GROUPBY_ARMS": "engines"},
            ),
        ],
    },
    "groupby-gpu": {
        "about": "the GPU side of the 1e8 groupby (cuDF and Polars' GPU engine, checked against the pandas answers of "
        "groupby-cpu, committed to benchmarks/results), the join questions at 1e7, Dask-CUDA against one process, "
        "the memory benchmarks (from the core track)",
        "sets": ["pydantic", "numpy", "dask", "dask-cudf", "xgboost", "cudf", "polars", "cudf-polars", "rmm"],
        "steps": [
            Step(
                "groupby data 1e8 x K=100 (the same bytes as groupby-cpu's, checked by sha256)",
                ("pydantic",),
                45,
                "groupby",
                {"GROUPBY_ARMS": "data"},
            ),
            Step("join data 1e7 and the pandas arm, cold run + 3 repeats", ("pydantic",), 200, "join", {"JOIN_ARMS": "cpu"}),
            Step(
                "groupby 1e8 cuDF and Polars' GPU engine",
                (*_CUDF, "polars", "cudf-polars"),
                60,
                "groupby",
                {"GROUPBY_ARMS": "gpu"},
            ),
            Step("join 1e7 on cuDF (pandas answers from the call before)", _CUDF, 60, "join", {"JOIN_ARMS": "gpu"}),
            Step("dask: one Dask-CUDA worker against one process", (*_CUDF, "dask", "dask-cudf", "xgboost"), 90, "dask"),
            Step(
                "memory: bench_memory --device gpu (streamed, OOM back-off), bench_rmm_pool",
                (*_CUDF, "rmm", "xgboost"),
                100,
                "memory",
            ),
        ],
    },
    "ml": {
        "about": "the hyperparameter search, the fitted pipeline of every model and the cuML models on the GPU",
        "sets": ["pydantic", "rmm", "numpy", "xgboost", "optuna", "cudf", "cuml"],
        "steps": [
            Step(
                "tests: the HPO objective on the GPU",
                ("pydantic", "rmm", "numpy", "xgboost", "optuna", "cudf"),
                50,
                "tests",
                {"PYTEST_FILES": "tests/test_hpo_gpu.py"},
            ),
            Step(
                "hpo: accel hpo flights --device gpu, 20 trials",
                ("pydantic", "rmm", "numpy", "xgboost", "optuna", "cudf"),
                150,
                "hpo",
            ),
            # The six cuML/scikit-learn pairs at 5e5 rows (200 s; measured on 2026-11-30,
            # results/2026-11-30-models-nvidia-h200-00*.json) leave the track for the fitted
            # pipeline's tests, which no GPU has run: put them back when they have run.
            Step(
                "tests: the fitted pipeline of every model on the GPU (round trip; each arm's pipeline scored on the other device)",
                ("pydantic", "rmm", "numpy", "xgboost", "cudf", "cuml"),
                120,
                "tests",
                {"PYTEST_FILES": "tests/test_pipeline_gpu.py"},
            ),
            Step(
                "tests: cuML pairs and cuML models in accel run",
                ("pydantic", "rmm", "numpy", "xgboost", "cudf", "cuml"),
                60,
                "tests",
                {"PYTEST_FILES": "'tests/test_bench_gpu.py tests/test_autofeatures_gpu.py'"},
            ),
        ],
    },
}


def load_lock(path: Path = LOCK) -> dict:
    lock = json.loads(Path(path).read_text())
    lock["by_set"] = {s["set"]: s for s in lock["sets"]}
    return lock


def tree_bytes() -> int:
    """Bytes of the working tree a call carries (tracked, and untracked but not ignored, files)."""
    out = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        return 2 * MIB  # a copy without .git: the tree measured in the checkout was ~1.5 MiB
    return sum((ROOT / p).stat().st_size for p in set(out.stdout.split("\0")) if p and (ROOT / p).is_file())


@dataclass
class Piece:
    filename: str  # the wheel's name
    part: int | None  # None: the whole wheel; else the part number (file NAME.whl.NN)
    start: int
    stop: int
    set: str

    @property
    def name(self) -> str:
        return self.filename if self.part is None else f"{self.filename}.{self.part:02d}"

    @property
    def size(self) -> int:
        return self.stop - self.start


def pack(lock: dict, track: str, budget: int) -> list[list[Piece]]:
    """The track's wheels, in set order, cut into calls of at most ``budget`` bytes each."""
    calls: list[list[Piece]] = [[]]
    room = budget
    for set_name in TRACKS[track]["sets"]:
        for wheel in lock["by_set"][set_name]["wheels"]:
            size, start, part = wheel["size"], 0, 0
            if size <= room:
                calls[-1].append(Piece(wheel["filename"], None, 0, size, set_name))
                room -= size
                continue
            if size <= budget and (size < SPLIT_AT_LEAST or room < MIB):
                calls.append([Piece(wheel["filename"], None, 0, size, set_name)])
                room = budget - size
                continue
            while start < size:
                take = min(room, size - start)
                # A part under 1 MiB is not worth a call's room (start the next call), unless it is the
                # wheel's last bytes: then it goes where it fits (else this loop never ended).
                if take < MIB and take < size - start:
                    calls.append([])
                    room = budget
                    continue
                calls[-1].append(Piece(wheel["filename"], part, start, start + take, set_name))
                start += take
                part += 1
                room -= take
                if start < size:
                    calls.append([])
                    room = budget
    return [c for c in calls if c]


def plan(lock: dict, track: str, tree: int) -> list[dict]:
    """One dict per call: what it carries, which steps it runs, how long, and the command."""
    budget = CALL_LIMIT_BYTES - tree - MARGIN_BYTES
    calls = pack(lock, track, budget)
    total = {s: sum(w["size"] for w in lock["by_set"][s]["wheels"]) for s in TRACKS[track]["sets"]}
    arrived: dict[str, int] = {}
    complete_at: dict[str, int] = {}
    for i, pieces in enumerate(calls):
        for p in pieces:
            arrived[p.set] = arrived.get(p.set, 0) + p.size
            if arrived[p.set] == total[p.set] and p.set not in complete_at:
                complete_at[p.set] = i
    rows = [{"steps": [], "seconds": INSTALL_S, "pieces": pieces} for pieces in calls]
    first_free = 0
    for step in TRACKS[track]["steps"]:
        ready = max([complete_at[s] for s in step.needs] + [first_free])
        i = ready
        while i < len(rows) and rows[i]["seconds"] + step.seconds > CALL_LIMIT_S:
            i += 1
        if i == len(rows):
            rows.append({"steps": [], "seconds": INSTALL_S, "pieces": []})
        rows[i]["steps"].append(step)
        rows[i]["seconds"] += step.seconds
        first_free = i  # steps keep their order: none runs before an earlier one
    out = []
    for n, row in enumerate(rows, 1):
        folder = f".whl/{track}-{n:02d}"
        carried = sum(p.size for p in row["pieces"])
        carry = ([folder] if row["pieces"] else []) + ["accel/_build_info.json"]
        commands = []
        for step in row["steps"]:
            env = " ".join(f"{k}={v}" for k, v in step.env.items())
            commands.append(f"{env + ' ' if env else ''}bash benchmarks/gpu_check.sh install {step.phases}")
        if not commands:
            commands.append("bash benchmarks/gpu_check.sh install")
        out.append(
            {
                "track": track,
                "call": n,
                "carry": carry,
                "carry_mib": round((carried + tree) / MIB, 2),
                "wheels_mib": round(carried / MIB, 2),
                "seconds": row["seconds"],
                "steps": [s.name for s in row["steps"]] or ["install what arrived (nothing else is ready yet)"],
                "command": "; ".join(commands),
                "files": [p.name for p in row["pieces"]],
            }
        )
    return out


def summary(lines: list[dict]) -> dict:
    seconds = sum(x["seconds"] for x in lines)
    device_s = START_S + PER_CALL_S * len(lines) + seconds
    return {
        "track": lines[0]["track"],
        "calls": len(lines),
        "carry_mib": round(sum(x["wheels_mib"] for x in lines), 2),
        "seconds": seconds,
        "device_s_estimate": device_s,
        "fits_the_budget": device_s <= BUDGET_S,
        "assumed": f"machine start {START_S} s, {PER_CALL_S} s per call beyond its command, {BUDGET_S} s of device time in all",
    }


def check(lines: list[dict]) -> None:
    for x in lines:
        assert x["carry_mib"] * MIB <= CALL_LIMIT_BYTES, x
        assert x["seconds"] <= CALL_LIMIT_S, x


# --------------------------------------------------------------------------- fetch


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def download(lock: dict, wheel: dict, cache: Path) -> Path:
    """The lock's exact wheel in ``cache``, downloaded with pip and checked by size and sha256."""
    target = cache / wheel["filename"]
    if target.exists() and target.stat().st_size == wheel["size"] and _sha256(target) == wheel["sha256"]:
        return target
    cmd = [
        sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--implementation", "cp",
        "--python-version", lock["python"], "--abi", lock["abi"], "--abi", "abi3", "--abi", "none",
        "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_27_x86_64", "--platform", "manylinux_2_24_x86_64",
        "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64", "--platform", "manylinux1_x86_64",
        "--platform", "any", "-d", str(cache), f"{wheel['name']}=={wheel['version']}",
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    if not target.exists():
        raise SystemExit(f"pip did not give {wheel['filename']} for {wheel['name']}=={wheel['version']}")
    if target.stat().st_size != wheel["size"] or _sha256(target) != wheel["sha256"]:
        raise SystemExit(f"{wheel['filename']}: size or sha256 differs from the lock")
    return target


def lay_out(lock: dict, track: str, cache: Path, dest: Path, tree: int) -> list[Path]:
    """Write each call's folder (``dest/<track>-NN``) with its whole wheels and parts."""
    budget = CALL_LIMIT_BYTES - tree - MARGIN_BYTES
    folders = []
    for n, pieces in enumerate(pack(lock, track, budget), 1):
        folder = dest / f"{track}-{n:02d}"
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for p in pieces:
            with open(cache / p.filename, "rb") as src, open(folder / p.name, "wb") as out:
                src.seek(p.start)
                out.write(src.read(p.size))
        folders.append(folder)
    return folders


def _exclude_whl() -> None:
    exclude = ROOT / ".git" / "info" / "exclude"
    if exclude.parent.is_dir():
        text = exclude.read_text() if exclude.exists() else ""
        if "/.whl/" not in text.splitlines():
            exclude.write_text(text + ("" if text.endswith("\n") or not text else "\n") + "/.whl/\n")


# --------------------------------------------------------------------------- lock


def write_lock(path: Path = LOCK) -> None:
    """Fill each wheel's file name, size and sha256 from PyPI's JSON metadata of its exact version."""
    import urllib.request

    lock = json.loads(path.read_text())
    for s in lock["sets"]:
        for w in s["wheels"]:
            with urllib.request.urlopen(f"https://pypi.org/pypi/{w['name']}/json", timeout=120) as r:
                files = json.load(r)["releases"][w["version"]]
            [f] = [f for f in files if f["filename"] == w["filename"]]
            w["size"], w["sha256"] = f["size"], f["digests"]["sha256"]
    path.write_text(json.dumps({k: v for k, v in lock.items() if k != "by_set"}, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="print the calls as JSON lines (a summary per track on stderr)")
    p.add_argument("--track", choices=list(TRACKS), action="append")
    p.add_argument("--lock", type=Path, default=LOCK)
    f = sub.add_parser("fetch", help="download the lock's wheels and lay out .whl/<track>-NN/ per call")
    f.add_argument("--track", choices=list(TRACKS), action="append")
    f.add_argument("--lock", type=Path, default=LOCK)
    f.add_argument("--cache", type=Path, default=ROOT / ".whl" / "cache")
    f.add_argument("--dest", type=Path, default=ROOT / ".whl")
    sub.add_parser("lock", help="refresh sizes and sha256 in the lock from PyPI")
    args = parser.parse_args(argv)

    if args.command == "lock":
        write_lock()
        return 0
    lock = load_lock(args.lock)
    tracks = args.track or list(TRACKS)
    tree = tree_bytes()
    if args.command == "plan":
        for track in tracks:
            lines = plan(lock, track, tree)
            check(lines)
            for line in lines:
                print(json.dumps(line), flush=True)
            print(json.dumps(summary(lines)), file=sys.stderr)
        return 0
    _exclude_whl()
    args.cache.mkdir(parents=True, exist_ok=True)
    for track in tracks:
        for set_name in TRACKS[track]["sets"]:
            for wheel in lock["by_set"][set_name]["wheels"]:
                download(lock, wheel, args.cache)
        for folder in lay_out(lock, track, args.cache, args.dest, tree):
            mib = sum(x.stat().st_size for x in folder.iterdir()) / MIB
            print(f"{folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder}: {mib:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
