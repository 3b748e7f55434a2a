"""Hostile inputs and faults, each through the real ``accel`` command line; a verdict per case.

Every case builds its own inputs in a scratch folder (tiny tables, fake servers, a full
filesystem, a FIFO, ...), runs ``python -m accel ...`` in a subprocess with a time limit and
judges what came back:

- ``clean error``: exit 2, ``accel: error: ...`` on stderr, no traceback, nothing half-written;
- ``handled``: the command did its job (exit 0) and the case's own check passed;
- ``traceback``: a Python traceback reached the user;
- ``hang``: still running at the case's time limit (killed);
- ``unrefused``: bad input that ran (exit 0 or 1, often with a ``failed`` record) instead of
  being refused;
- ``wrong``: exit 0 but a silently wrong result (the case's check says what);
- ``overwrite``: an existing file was replaced;
- ``security``: a password printed or stored, a socket on a non-loopback address, a test hook
  active in a user's run;
- ``misleading``: refused, but the message says something untrue.

The cases live in ``accel_fixtures/hostile_inputs.py`` (the older kinds, named by what such an input
used to end in, and secrets in records and messages, writes only where asked, Arrow and Parquet
types, header names and encodings, a file that changes after planning, search settings, one line
instead of a traceback, results that mean nothing, processes left running, signals): one table
that ``tests/test_hostile.py`` runs too (its fast cases by default, the others in the slow tier).
They are added here from it, judged by its ``verdict``; its cases marked ``invented`` (made up
beyond the examples the table was seeded with) are counted apart (``counts_invented``; the others
``counts_listed``), and ``counts_by_kind`` counts each kind's verdicts. The few cases below need this script's own running (another user, two
processes at once, the sockets of a running cluster), would write outside their scratch folder
(HOME unset: the real home's cache), or leave a file in ``--out`` when refused (``--resume`` of
a missing study: its storage), which the tests do not allow a refused run.

Run against any checkout: ``--tree DIR`` puts ``DIR/accel`` first on the path of this process
(where the cases build their inputs) and of every ``accel`` it starts, while the cases, the
fixtures and this script stay this checkout's (an older tree has older ``accel_fixtures``, or none).
The results name the code under test (``code_under_test``: the tree, its commit, whether its
``accel`` had changes not committed, and the ``accel`` a started process imported) apart from the
code of the cases (``cases_git_sha``). Prints a Markdown table and writes it as JSON to
``benchmarks/results/<date>-hostile-cases-cpu-NNN.json`` (next free NNN; ``--results`` chooses
the folder). Needs root for the full-filesystem cases (a 1 MB tmpfs is mounted) and the
unreadable-file case (run as ``nobody``); without root they are reported ``skipped``.

    python benchmarks/hostile_cases.py [--tree DIR] [--only NAME,...] [--kind KIND,...]
        [--shared] [--listed] [--label TEXT] [--results DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from accel_fixtures import hostile_inputs  # the table of cases the tests run too

HERE = Path(__file__).resolve().parent

#: What every result starts with, as ``accel.record.record_head("bench")`` writes it (then the
#: ``run_id``). Spelled out, not imported: ``--tree`` may put an older accel first on the path.
RESULT_HEAD = {"schema_version": 4, "kind": "bench"}
VERDICTS = ("clean error", "handled", "traceback", "hang", "unrefused", "wrong", "overwrite", "security", "misleading", "skipped")


# --------------------------------------------------------------------------- running


@dataclass
class Result:
    argv: list[str]
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


@dataclass
class Setup:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    #: ``(verdict, why)`` overriding the generic verdict, or None.
    check: Callable[[Result], tuple[str, str] | None] | None = None
    cleanup: Callable[[], None] | None = None
    #: "refuse" (exit 2 expected), "ok" (exit 0 expected), "either" (0 with the check, or a clean 2)
    expect: str = "refuse"
    timeout: float = 90.0
    user: int | None = None
    #: A custom runner (races, concurrent processes): returns the Result to judge.
    runner: Callable[[Setup], Result] | None = None
    skip: str | None = None


@dataclass
class Case:
    name: str
    kind: str
    what: str
    build: Callable[[Path], Setup]
    #: Made up beyond the examples the table was seeded with (counted apart).
    invented: bool = False


def accel_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    env.setdefault("ACCEL_CACHE_DIR", str(SHARED / "cache"))
    env.update(extra or {})
    return {k: v for k, v in env.items() if v is not None}


def run(argv: list[str], env: dict[str, str], timeout: float, cwd: Path, user: int | None = None) -> Result:
    cmd = [sys.executable, "-m", "accel", *argv]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, start_new_session=True
    )
    grew = threading.Event()
    threading.Thread(target=_memory_guard, args=(proc, grew), daemon=True).start()
    try:
        out, err = proc.communicate(timeout=timeout)
        if grew.is_set():
            return Result(
                argv,
                None,
                out,
                err + f"\n[harness: killed, memory grew past {MEMORY_LIMIT_GB} GB]",
                time.perf_counter() - t0,
                True,
            )
        return Result(argv, proc.returncode, out, err, time.perf_counter() - t0, False)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return Result(argv, None, out, err, time.perf_counter() - t0, True)


#: A case whose process tree holds more than this is killed and counted a hang (it reads without end).
MEMORY_LIMIT_GB = 4


def _memory_guard(proc: subprocess.Popen, grew: threading.Event) -> None:
    import psutil

    try:
        root = psutil.Process(proc.pid)
    except psutil.Error:
        return
    while proc.poll() is None:
        try:
            rss = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
        except psutil.Error:
            rss = 0
        if rss > MEMORY_LIMIT_GB * 2**30:
            grew.set()
            os.killpg(proc.pid, signal.SIGKILL)
            return
        time.sleep(0.2)


def message(res: Result) -> str:
    lines = [line.strip() for line in res.stderr.splitlines() if line.strip()]
    if "Traceback" in res.stderr:
        return "Traceback: " + (lines[-1] if lines else "")
    for line in lines:
        if line.startswith("accel:"):
            return line
    if res.rc == 0:
        out = [line.strip() for line in res.stdout.splitlines() if line.strip()]
        notes = [line for line in out if line.startswith("[harness")]
        return notes[-1] if notes else (out[-1] if out else "") or (lines[-1] if lines else "")
    return lines[-1] if lines else ""


def judge(setup: Setup, res: Result) -> tuple[str, str]:
    if res.timed_out:
        if "[harness: killed, memory grew" in res.stderr:
            return "hang", f"memory grew past {MEMORY_LIMIT_GB} GB (killed)"
        return "hang", f"still running after {setup.timeout:.0f} s"
    if "Traceback (most recent call last)" in res.stderr + res.stdout:
        return "traceback", ""
    if setup.check is not None:
        override = setup.check(res)
        if override is not None:
            return override
    error_lines = [line for line in res.stderr.splitlines() if line.startswith("accel: error:")]
    if setup.expect == "refuse":
        if res.rc == 2 and error_lines:
            return "clean error", ""
        return "unrefused", f"exit {res.rc}"
    if res.rc == 0:
        return "handled", ""
    if setup.expect == "either" and res.rc == 2 and error_lines:
        return "clean error", ""
    return "unrefused" if res.rc in (0, 1) else "traceback", f"exit {res.rc}"


# --------------------------------------------------------------------------- inputs

SHARED = Path(tempfile.mkdtemp(prefix="hostile-shared-"))


def customers(n: int = 300, seed: int = 0) -> pd.DataFrame:
    return hostile_inputs.customers(n, seed, age=True)


def csv(tmp: Path, frame: pd.DataFrame, name: str = "data.csv") -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def table_args(path: Path, target: str = "churned", *extra: str, out: Path | None = None) -> list[str]:
    return ["run", "--data", str(path), "--target", target, "--device", "cpu", "--out", str(out or path.parent / "runs"), *extra]


# --------------------------------------------------------------------------- the cases


def c(name: str, kind: str, what: str) -> Callable[[Callable[[Path], Setup]], Callable[[Path], Setup]]:
    def register(build: Callable[[Path], Setup]) -> Callable[[Path], Setup]:
        CASES.append(Case(name, kind, what, build))
        return build

    return register


CASES: list[Case] = []


# ---- tracebacks


@c("home-unset", "traceback", "HOME unset, no ACCEL_CACHE_DIR: accel run flights")
def _(tmp: Path) -> Setup:
    return Setup(
        ["run", "flights", "--rows", "2000", "--device", "cpu", "--out", str(tmp / "runs")],
        env={"HOME": None, "ACCEL_CACHE_DIR": None, "XDG_CACHE_HOME": None},  # type: ignore[dict-item]
        expect="either",
    )


@c("unreadable-data", "traceback", "--data a file its user cannot read")
def _(tmp: Path) -> Setup:
    data = csv(tmp, customers())
    data.chmod(0)
    user = 65534 if os.geteuid() == 0 else None
    if user is not None:
        tmp.chmod(0o777)
        (tmp / "cache").mkdir()
        (tmp / "cache").chmod(0o777)
    return Setup(
        table_args(data, out=tmp / "runs"),
        env={"HOME": str(tmp), "ACCEL_CACHE_DIR": str(tmp / "cache")},
        user=user,
    )


def hpo_args(data: Path, tmp: Path, *extra: str) -> list[str]:
    return ["hpo", "--data", str(data), "--target", "churned", "--device", "cpu", "--out", str(tmp / "runs"), *extra]


@c("hpo-same-study-race", "concurrent", "two accel hpo processes creating the same study at once: both join it")
def _(tmp: Path) -> Setup:
    data = csv(tmp, customers())
    argv = hpo_args(data, tmp, "--study", "same", "--trials", "2")

    def runner(setup: Setup) -> Result:
        env = accel_env(setup.env)
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "accel", *argv],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd=tmp,
            )
            for _ in range(2)
        ]
        t0 = time.perf_counter()
        outs = []
        for p in procs:
            try:
                o, e = p.communicate(timeout=setup.timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                o, e = p.communicate()
                return Result(argv, None, o, e, time.perf_counter() - t0, True)
            outs.append((p.returncode, o, e))
        outs.sort(key=lambda x: x[0])  # the one that lost (the higher exit status) last
        rc, o, e = outs[-1]
        return Result(argv, rc, outs[0][1] + o, outs[0][2] + e, time.perf_counter() - t0, False)

    def check(res: Result) -> tuple[str, str] | None:
        if res.rc != 0:
            lines = [line for line in res.stderr.splitlines() if line.startswith("accel: error:")]
            return "unrefused", f"a process was refused: {(lines or [''])[0][:200]}"
        return None

    return Setup(argv, runner=runner, check=check, expect="ok", timeout=240)


# ---- security
@c("loopback-sockets", "security", "accel run --cluster local: every listening socket on loopback")
def _(tmp: Path) -> Setup:
    import psutil

    argv = ["run", "flights", "--rows", "3000", "--cluster", "local", "--workers", "1", "--out", str(tmp / "runs")]
    found: list[tuple[str, str]] = []

    def runner(setup: Setup) -> Result:
        env = accel_env(setup.env)
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "accel", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp
        )
        chunks: dict[str, list[str]] = {"out": [], "err": []}
        readers = [
            threading.Thread(target=lambda s=s, k=k: chunks[k].append(s.read()), daemon=True)
            for s, k in ((proc.stdout, "out"), (proc.stderr, "err"))
        ]
        for r in readers:
            r.start()
        root = psutil.Process(proc.pid)
        while proc.poll() is None and time.perf_counter() - t0 < setup.timeout:
            try:
                for p in [root, *root.children(recursive=True)]:
                    for conn in p.net_connections(kind="inet"):
                        if conn.status == psutil.CONN_LISTEN and conn.laddr.ip not in ("127.0.0.1", "::1"):
                            # The run's own process holds the scheduler, the dashboard, the nannies and
                            # XGBoost's tracker; worker processes hold Dask's worker sockets (configured
                            # for 127.0.0.1) and XGBoost's ring sockets, which XGBoost binds to every
                            # interface itself (BindHost: INADDR_ANY), whatever it is told.
                            role = "main process" if p.pid == root.pid else "worker process"
                            entry = (role, f"{conn.laddr.ip}:{conn.laddr.port}")
                            if entry not in found:
                                found.append(entry)
            except (psutil.Error, OSError):
                pass
            time.sleep(0.02)
        timed_out = proc.poll() is None
        if timed_out:
            proc.kill()
        proc.wait()
        for r in readers:
            r.join(5)
        return Result(
            argv,
            None if timed_out else proc.returncode,
            "".join(chunks["out"]),
            "".join(chunks["err"]),
            time.perf_counter() - t0,
            timed_out,
        )

    def check(res: Result) -> tuple[str, str] | None:
        ours = [a for who, a in found if who == "main process"]
        xgboost_ring = [a for who, a in found if who == "worker process"]
        note = (
            f"; XGBoost's worker ring sockets on {', '.join(xgboost_ring)} (bound by XGBoost to every interface)"
            if xgboost_ring
            else ""
        )
        if ours:
            return "security", "scheduler/dashboard/tracker process listening beyond loopback: " + ", ".join(ours) + note
        if res.rc == 0 and note:
            res.stdout += f"\n[harness{note}]"
        return None

    return Setup(argv, runner=runner, check=check, expect="ok", timeout=240)


# ---- inputs refused cleanly before (kept to see that they stay so)


# ---- the shared table (accel_fixtures/hostile_inputs.py), which tests/test_hostile.py runs too


def shared_case(case: hostile_inputs.Case) -> Case:
    """A case of the shared table as a case of this benchmark: run and judged as the tests judge it."""

    def build(tmp: Path) -> Setup:
        try:
            argv = case.make_input(tmp)
        except hostile_inputs.Skip as why:
            return Setup([], skip=str(why), cleanup=(lambda: case.cleanup(tmp)) if case.cleanup else None)
        judged: dict[str, Any] = {}

        def runner(setup: Setup) -> Result:
            _, outcome = hostile_inputs.run_case(case, tmp, timeout=setup.timeout, env=accel_env(), argv=argv)
            judged["verdict"] = hostile_inputs.verdict(case, tmp, outcome)
            return Result(argv, outcome.rc, outcome.stdout, outcome.stderr, outcome.seconds, outcome.timed_out)

        return Setup(argv, expect="ok" if case.expected == "handled" else "refuse", runner=runner,
                     check=lambda res: judged["verdict"], timeout=case.timeout,
                     cleanup=(lambda: case.cleanup(tmp)) if case.cleanup else None)  # fmt: skip

    return Case(case.name, case.kind, case.what, build, invented=case.invented)


CASES.extend(shared_case(case) for case in hostile_inputs.CASES)


# --------------------------------------------------------------------------- main


def run_case(case: Case, root: Path) -> dict[str, Any]:
    tmp = root / case.name
    tmp.mkdir(parents=True)
    setup = case.build(tmp)
    try:
        if setup.skip:
            return {"case": case.name, "kind": case.kind, "invented": case.invented, "what": case.what, "command": "",
                    "exit": None, "seconds": 0.0, "message": setup.skip, "verdict": "skipped", "why": setup.skip}  # fmt: skip
        if setup.runner is not None:
            res = setup.runner(setup)
        else:
            res = run(setup.argv, accel_env(setup.env), setup.timeout, tmp, setup.user)
        verdict, why = judge(setup, res)
    finally:
        if setup.cleanup is not None:
            setup.cleanup()
    command = "accel " + " ".join(a.replace(str(tmp), "$TMP") for a in setup.argv)
    return {
        "case": case.name,
        "kind": case.kind,
        "invented": case.invented,
        "what": case.what,
        "command": command,
        "exit": res.rc,
        "seconds": round(res.seconds, 2),
        "message": message(res)[:300],
        "verdict": verdict,
        "why": why,
        "stderr_tail": res.stderr[-1500:],
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    out = ["| case | kind | command | exit | s | message (first line) | verdict |", "|---|---|---|---|---|---|---|"]
    rows = sorted(rows, key=lambda r: r.get("invented", False))  # the invented cases last
    for r in rows:
        msg = r["message"].replace("|", "\\|").replace("\n", " ")
        verdict = r["verdict"] + (f" ({r['why']})" if r["why"] and r["verdict"] not in ("clean error", "handled") else "")
        cmd = r["command"].replace("|", "\\|")
        kind = r["kind"] + (" (invented)" if r.get("invented") else "")
        out.append(f"| {r['case']} | {kind} | `{cmd}` | {r['exit']} | {r['seconds']} | {msg} | {verdict} |")
    return "\n".join(out)


def write_json(folder: Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` as ``<folder>/<date>-hostile-cases-cpu-<NNN>.json`` (next free NNN), headed
    by :data:`RESULT_HEAD` and its ``run_id`` (the file name): written whole, never over a file."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{datetime.now(timezone.utc):%Y-%m-%d}-hostile-cases-cpu"
    umask = os.umask(0)
    os.umask(umask)
    for seq in range(1, 1000):
        path = folder / f"{stem}-{seq:03d}.json"
        if os.path.lexists(path):
            continue
        text = json.dumps({**RESULT_HEAD, "run_id": path.stem, **payload}, indent=2) + "\n"
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".hostile-", suffix=".json")
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        try:
            os.link(tmp, path)
            return path
        except FileExistsError:
            continue
        finally:
            os.unlink(tmp)
    raise SystemExit("no free result name")


SHARED_NAMES = {case.name for case in hostile_inputs.CASES}


def use_tree(tree: Path) -> None:
    """``tree/accel`` first on the path, here and in every process started from here.

    The path gets a folder holding only a link to ``tree/accel``: the tree's own ``tests`` (older,
    or without the shared table) never shadows this checkout's.
    """
    package = tree.resolve() / "accel"
    if not (package / "__init__.py").is_file():
        raise SystemExit(f"{tree} has no accel package")
    if "accel" in sys.modules:
        raise SystemExit("accel was imported before the tree under test was chosen")
    folder = SHARED / "tree"
    folder.mkdir()
    (folder / "accel").symlink_to(package, target_is_directory=True)
    sys.path.insert(0, str(folder))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)


def git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True).stdout.strip()


def code_under_test(cwd: Path) -> dict[str, Any]:
    """The ``accel`` this process imports and the one a started ``python`` imports (they must agree)."""
    import accel

    here = Path(accel.__file__).resolve()
    started = subprocess.run([sys.executable, "-c", "import accel; print(accel.__file__)"], env=accel_env(),
                             cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    if Path(started).resolve() != here:
        raise SystemExit(f"a started process imports {started}, this one {here}")
    tree = here.parents[1]
    return {
        "tree": str(tree),
        "git_sha": git(tree, "rev-parse", "HEAD"),
        "accel_modified": bool(git(tree, "status", "--porcelain", "accel")),
        "accel_imported": started,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, help="the checkout whose accel is under test (default: the accel imported)")
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--kind", help="comma-separated kinds (secrets, writes, search, 'one line', hang, ...)")
    parser.add_argument(
        "--shared", action="store_true", help="only the cases of the shared table (accel_fixtures/hostile_inputs.py)"
    )
    parser.add_argument("--listed", action="store_true", help="without the cases marked invented")
    parser.add_argument("--results", type=Path, default=HERE / "results")
    parser.add_argument("--label", default="", help="a note stored with the results (e.g. before/after)")
    args = parser.parse_args()
    cases = CASES
    for given, attr, what in ((args.only, "name", "case"), (args.kind, "kind", "kind")):
        if given:
            wanted = set(given.split(","))
            unknown = sorted(wanted - {getattr(c, attr) for c in CASES})
            if unknown:
                parser.error(f"no such {what}: {', '.join(unknown)}")
            cases = [c for c in cases if getattr(c, attr) in wanted]
    if args.shared:
        cases = [c for c in cases if c.name in SHARED_NAMES]
    if args.listed:
        cases = [c for c in cases if not c.invented]
    if not cases:
        parser.error("no case left to run")
    if args.tree is not None:
        use_tree(args.tree)
    root = Path(tempfile.mkdtemp(prefix="hostile-"))
    code = code_under_test(root)
    own_tree = HERE.parent  # the cases' commit, as the run starts (the checkout may move on meanwhile)
    cases_code = {"git_sha": git(own_tree, "rev-parse", "HEAD"),
                  "modified": bool(git(own_tree, "status", "--porcelain", "accel_fixtures/hostile_inputs.py", "benchmarks/hostile_cases.py"))}  # fmt: skip
    root.chmod(0o755)  # the unreadable-data case runs as nobody under it
    SHARED.chmod(0o755)
    rows = []
    started = datetime.now(timezone.utc)
    for case in cases:
        print(f"{case.name} ...", file=sys.stderr, flush=True)
        try:
            row = run_case(case, root)
        except Exception as exc:  # noqa: BLE001 - the harness itself failed: say so in the table
            row = {"case": case.name, "kind": case.kind, "invented": case.invented, "what": case.what, "command": "",
                   "exit": None, "seconds": 0.0,
                   "message": f"harness error: {type(exc).__name__}: {exc}", "verdict": "skipped", "why": "harness error"}  # fmt: skip
        print(f"  -> {row['verdict']} ({row['seconds']} s): {row['message'][:160]}", file=sys.stderr, flush=True)
        rows.append(row)
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    apart = {
        side: {v: sum(r["verdict"] == v and r["invented"] == (side == "invented") for r in rows) for v in VERDICTS}
        for side in ("listed", "invented")
    }
    by_kind = {
        kind: {v: n for v in VERDICTS if (n := sum(r["verdict"] == v and r["kind"] == kind for r in rows))}
        for kind in sorted({r["kind"] for r in rows})
    }
    print(markdown(rows))
    print()
    print("counts: " + ", ".join(f"{v} {n}" for v, n in counts.items() if n))
    for side, by_verdict in apart.items():
        print(f"  {side}: " + (", ".join(f"{v} {n}" for v, n in by_verdict.items() if n) or "none"))
    for kind, by_verdict in by_kind.items():
        print(f"  {kind}: " + ", ".join(f"{v} {n}" for v, n in by_verdict.items()))
    payload = {
        "benchmark": "hostile_cases",
        "label": args.label,
        "started_at": started.isoformat(),
        "finished_at": datetime.now(timezone.utc).isoformat(),
        "tree": code["tree"],
        "git_sha": code["git_sha"],
        "tree_modified": code["accel_modified"],
        "code_under_test": code,
        "cases_git_sha": cases_code["git_sha"],
        "cases_modified": cases_code["modified"],
        "selection": {"only": args.only, "kind": args.kind, "shared": args.shared, "listed": args.listed},
        "is_root": os.geteuid() == 0,
        "counts": counts,
        "counts_listed": apart["listed"],
        "counts_invented": apart["invented"],
        "counts_by_kind": by_kind,
        "cases": rows,
    }
    path = write_json(args.results, payload)
    print(f"results: {path}")
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(SHARED, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
