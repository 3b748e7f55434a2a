"""``accel compare``: a user's unchanged pandas / scikit-learn script (or notebook), run twice.

The CPU arm is ``python SCRIPT ARGS`` exactly; the GPU arm is the same script with RAPIDS'
zero-code-change accelerators installed first (cudf.pandas, cuml.accel:
:mod:`accel.bench.compare_boot`). Each run is a fresh process group in its own copy of the script's
folder (files the script writes do not collide, and the original is never touched), with the
same environment, stdin closed, and a timeout that kills the whole group.

Per arm: the cold wall time (process start to exit), ``--repeat`` warm runs (median/min/max),
exit code, peak host RSS of the process tree, peak device memory (NVML, GPU arm), and the tails
of stdout/stderr. Then parity — the numbers both arms printed, line by line, within
``--rtol``/``--atol``; the files both wrote (CSV/Parquet numerically, others by hash) — and,
from one extra profiled GPU run (never timed), the accelerators' own per-function profiles:
which calls ran on the GPU and which fell back to the CPU, the costliest fallbacks first.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import re
import secrets
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil

from accel import scratch
from accel.backend import module_installed, probe_gpu
from accel.bench.compare_boot import ACCELERATORS
from accel.config import MAX_SECONDS
from accel.credentials import hide
from accel.environment import collect_environment
from accel.errors import AccelError, one_line, printable
from accel.files import file_sha256
from accel.memory import process_peak_rss
from accel.output import say
from accel.record import ensure_writable, record_head, record_stem, write_record

#: What of a copied folder is left out (environments and caches are not the script's inputs).
IGNORED = (".git", "__pycache__", ".venv", "venv", ".ipynb_checkpoints", ".pytest_cache", ".mypy_cache")
#: The most a working folder may hold to be copied for each run.
MAX_COPY_BYTES = 2 * 1024**3
TAIL_CHARS = 20_000
#: The most warm runs of each arm (``--repeat``).
MAX_REPEAT = 1000
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])|\bnan\b|\binf\b", re.IGNORECASE)


# --------------------------------------------------------------------------- validation


def check_program(path: Path) -> str:
    """``script`` or ``notebook``; a one-line error for anything that cannot be run."""
    if not path.exists():
        raise AccelError(f"{str(path)!r} does not exist: give the path of a Python script (.py) or a notebook (.ipynb)")
    if not path.is_file():
        raise AccelError(f"{str(path)!r} is not a regular file: give a Python script (.py) or a notebook (.ipynb)")
    try:
        with path.open("rb") as f:
            head = f.read(1 << 20)
    except OSError as exc:
        raise AccelError(f"cannot read {str(path)!r} ({exc.strerror or type(exc).__name__}): check its permissions") from None
    if path.suffix == ".ipynb":
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise AccelError(f"{str(path)!r} is not a notebook: not valid JSON ({str(exc).splitlines()[0][:120]})") from None
        if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
            raise AccelError(f"{str(path)!r} is not a notebook: it has no list of cells")
        return "notebook"
    if b"\0" in head:
        raise AccelError(f"{str(path)!r} is a binary file, not a Python script")
    return "script"


def resolve_accelerators(requested: str | None) -> tuple[list[str], str | None]:
    """The accelerators the GPU arm uses, and why it cannot run (None when it can)."""
    from accel.bench.db import pick_names

    names = pick_names("accelerator", requested, ACCELERATORS, str) if requested else list(ACCELERATORS)
    installed = [a for a in names if module_installed(a.split(".")[0])]
    if requested and len(installed) < len(names):
        return names, f"{', '.join(sorted(set(names) - set(installed)))} not installed (pip install 'accel-tabular[gpu-cu12]')"
    if not installed:
        return names, "neither cudf.pandas nor cuml.accel is installed (pip install 'accel-tabular[gpu-cu12]')"
    probe = probe_gpu()
    return installed, None if probe.usable else probe.why_not()


# --------------------------------------------------------------------------- one run


@dataclass
class Run:
    """One process: how long, how it ended, what it used and printed."""

    seconds: float
    exit_code: int | None
    timed_out: bool
    peak_rss_mb: float
    peak_device_mb: float | None
    stdout: str
    stderr: str
    written: set[str]  # relative paths of the files it created or changed
    #: Processes the script left running (daemons, ``setsid`` grandchildren), killed after it ended.
    killed: list[str]


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    return {str(p.relative_to(root)): (st.st_size, st.st_mtime_ns) for p in files for st in [p.stat()]}


def _left_out(src: Path, skip: list[Path], special: list[str]) -> Callable[[str, list[str]], list[str]]:
    """The names in a folder under ``src`` that a run's copy leaves out (``shutil.copytree``'s ``ignore``).

    Left out: :data:`IGNORED`, the paths ``skip``, and what is not a folder, a regular file or a
    link: a FIFO, a socket or a device (a FIFO would block the copy; shutil refuses them), never
    opened, added to ``special`` (relative to ``src``).
    """
    skip_resolved = {s.resolve() for s in skip}

    def ignore(folder: str, names: list[str]) -> list[str]:
        here = Path(folder)
        out = []
        for n in names:
            try:
                mode = None if n in IGNORED or (here / n).resolve() in skip_resolved else os.lstat(here / n).st_mode
            except OSError:
                mode = None
            if mode is None:
                out.append(n)
            elif not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                special.append(str((here / n).relative_to(src)))
                out.append(n)
        return out

    return ignore


def _copy_folder(src: Path, dst: Path, skip: list[Path]) -> None:
    """Copy the script's folder for one run, as :func:`survey` saw it (links copied as links)."""
    try:
        shutil.copytree(src, dst, ignore=_left_out(src, skip, []), symlinks=True)
    except (shutil.Error, OSError) as exc:
        detail = exc.args[0][0] if isinstance(exc, shutil.Error) and exc.args and exc.args[0] else exc
        if isinstance(detail, tuple):  # shutil.Error: [(src, dst, why), ...]
            detail = f"{detail[0]}: {detail[2]}"
        raise AccelError(f"cannot copy the script's folder {str(src)!r} for a run ({str(detail)[:200]})") from None


def survey(root: Path, skip: list[Path]) -> tuple[int, list[str]]:
    """The bytes of what :func:`_copy_folder` copies of ``root``, and the paths it leaves out because they are not files."""
    special: list[str] = []
    ignore = _left_out(root, skip, special)
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        gone = set(ignore(dirpath, dirnames + filenames))
        dirnames[:] = [d for d in dirnames if d not in gone]
        for name in set(filenames) - gone:
            with contextlib.suppress(OSError):  # gone meanwhile
                total += (Path(dirpath) / name).lstat().st_size
    return total, sorted(special)


PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37


def _subreaper(on: bool) -> bool | None:
    """Make this process the Linux child subreaper (or stop); the previous setting, None where unsupported.

    As subreaper, a process the script orphans (a ``setsid`` daemon whose parent exited) is
    re-parented to accel, not to init, so it is still found among accel's descendants. Where
    the C library has no ``prctl`` (not Linux), None.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        old = ctypes.c_int(0)
        if libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(old), 0, 0, 0) or libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0):
            return None
        return bool(old.value)
    except (OSError, AttributeError):
        return None


class _Tree:
    """Every process one run started, and the peak memory they held.

    The processes: the script, its descendants, and those that left its group or session, taken
    from accel's own children (accel is the subreaper while the script runs: orphans come back to
    it) other than those it had before, and from every process seen since, remembered with its
    start time (a pid reused by another process is never touched).

    The memory (:meth:`sample`): the peak RSS of them all, the script's own high-water mark, and
    (``device``) the device memory they hold: NVML's per-process figure, matched by process id.
    Inside a PID namespace (a container) NVML reports the host's ids, which match none of the
    tree's: where NVML listed processes that do not exist here and never one of the tree's, the
    peak is unknown (None), not 0.
    """

    def __init__(self, root: int, device: bool):
        self.root = root
        self._me = psutil.Process()
        self._before = {c.pid for c in self._me.children()} - {root}
        self._seen: dict[int, Any] = {}
        self.peak_rss = self.peak_own = 0
        self.peak_device: int | None = None
        self._matched = self._foreign = False  # NVML listed one of the tree's processes / one not here
        self._nvml: Any = None
        if device:
            with contextlib.suppress(Exception):  # no NVML: device memory is reported as unknown
                import pynvml

                pynvml.nvmlInit()
                self._nvml = pynvml
                self.peak_device = 0

    def processes(self) -> list[Any]:
        found: dict[int, Any] = {}
        with contextlib.suppress(psutil.Error):
            for top in (c for c in self._me.children() if c.pid not in self._before):
                found[top.pid] = top
                with contextlib.suppress(psutil.Error):
                    found.update({c.pid: c for c in top.children(recursive=True)})
        for pid, proc in self._seen.items():  # seen before: still the same process? (is_running compares the start time)
            if pid not in found and proc.is_running():
                found[pid] = proc
        self._seen.update(found)
        return list(found.values())

    def sample(self) -> None:
        """Take the memory the tree holds now into the peaks."""
        processes = self.processes()
        pids = [p.pid for p in processes]
        rss = 0
        for proc in processes:
            with contextlib.suppress(psutil.Error):
                rss += proc.memory_info().rss
        self.peak_rss = max(self.peak_rss, rss)
        own = process_peak_rss(self.root)  # the script's own high-water mark: what sampling misses (None: gone)
        self.peak_own = max(self.peak_own, own or 0)
        if self._nvml is not None:
            used = 0
            try:
                for i in range(self._nvml.nvmlDeviceGetCount()):
                    handle = self._nvml.nvmlDeviceGetHandleByIndex(i)
                    for proc in self._nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                        if proc.pid in pids:
                            self._matched = True
                            used += int(proc.usedGpuMemory or 0)
                        elif not psutil.pid_exists(proc.pid):
                            self._foreign = True
            except Exception:  # noqa: BLE001
                return
            self.peak_device = max(self.peak_device or 0, used)

    def close(self) -> None:
        """Sampling is over: the device peak settled, NVML shut down."""
        if self._foreign and not self._matched:
            self.peak_device = None  # NVML's process ids are another PID namespace's: unknown, not 0
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()

    def sweep(self) -> list[str]:
        """SIGKILL every process of the run still alive (SIGTERM can be ignored), until none is left; what was killed."""
        killed: list[str] = []
        for _ in range(50):
            alive = []
            for proc in self.processes():
                with contextlib.suppress(psutil.Error):
                    if proc.status() != psutil.STATUS_ZOMBIE:  # a zombie is reaped below if it is accel's child
                        name = f"{proc.pid} ({' '.join(proc.cmdline())[:80] or proc.name()})"
                        proc.kill()
                        killed.append(name)
                    alive.append(proc)
            if not alive:
                break
            psutil.wait_procs(alive, timeout=1.0)
            self._seen = {pid: p for pid, p in self._seen.items() if pid not in {a.pid for a in alive}}
        return killed


#: The environment variable that marks every process of a compared script (for :class:`Guard`).
MARK = "ACCEL_COMPARE_RUN"


class Guard:
    """The supervisor (:mod:`accel.bench.compare_guard`) that ends the script's processes and
    removes the copies when accel exits or dies, however it dies.

    It runs in a session of its own and reads a pipe of which only this process holds the
    writing end: when this process is gone, even by SIGKILL, the pipe ends and the supervisor
    kills each run's process group and every process carrying :data:`MARK` (the script's
    children and grandchildren, daemons that left its group or session), then removes the folders.
    """

    def __init__(self) -> None:
        self.token = secrets.token_hex(16)  # the value of MARK in every process of the script
        self.proc = subprocess.Popen(
            [sys.executable, "-S", str(Path(__file__).with_name("compare_guard.py")), f"{MARK}={self.token}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def tell(self, line: str) -> None:
        """Tell the supervisor one line: ``group PGID``, ``done PGID`` or ``folder PATH``."""
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):  # the supervisor is gone (killed by someone): accel's own sweep still runs
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()

    def close(self) -> None:
        """End the pipe: the supervisor ends what is left (nothing, after a run that finished) and exits."""
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.proc.communicate(timeout=30)


def run_once(command: list[str], workdir: Path, env: dict[str, str], timeout: float, device: bool, guard: Guard) -> Run:
    """Run ``command`` in ``workdir`` as a new process group; stdin closed; killed whole at ``timeout``.

    ``guard`` learns of the group and ends it if this process dies meanwhile."""
    before = _snapshot(workdir)
    out_path, err_path = workdir.parent / f"{workdir.name}.stdout", workdir.parent / f"{workdir.name}.stderr"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command,
            cwd=workdir,
            env={**env, MARK: guard.token},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        guard.tell(f"group {proc.pid}")
        reaper = _subreaper(True)
        tree = _Tree(proc.pid, device)
        try:
            ended_at, timed_out = _wait_exit(proc, timeout, tree)
        finally:  # also on Ctrl-C: what left the group or the session (setsid, daemons) goes too
            killed = tree.sweep()
            guard.tell(f"done {proc.pid}")
            if reaper is not None:
                _subreaper(reaper)
    return Run(
        seconds=ended_at - start,
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        # Not the script's ru_maxrss: it carries this process's peak from before the script's exec.
        peak_rss_mb=max(tree.peak_rss, tree.peak_own) / 1e6,
        peak_device_mb=None if tree.peak_device is None else tree.peak_device / 1e6,
        stdout=out_path.read_text(errors="replace"),
        stderr=err_path.read_text(errors="replace"),
        written={rel for rel, meta in _snapshot(workdir).items() if before.get(rel) != meta},
        killed=killed,
    )


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float, tree: _Tree, interval: float = 0.05) -> tuple[float, bool]:
    """Wait for the script to exit (``proc.returncode`` set), sampling its tree's memory every
    ``interval`` seconds, then kill its group: anything it left running there, or all of it at
    ``timeout`` (and on Ctrl-C); the clock when the script exited, and whether it timed out."""
    ended: list[float] = []
    # The main thread waits on an Event, not on Thread.join: a Ctrl-C inside join() makes
    # Python 3.11's join release the running thread's lock and call it stopped, so a second
    # join returned at once, the sweep reaped the script first, and the wait failed.
    exited = threading.Event()

    def wait() -> None:  # a blocking wait: the exit is timed exactly
        try:
            proc.wait()
            ended.append(time.perf_counter())
        finally:
            exited.set()

    threading.Thread(target=wait, name="accel-compare-wait", daemon=True).start()
    deadline, timed_out = time.perf_counter() + timeout, False
    try:
        while not exited.is_set() and not timed_out:
            tree.sample()
            left = deadline - time.perf_counter()
            timed_out = left <= 0 and not exited.is_set()
            exited.wait(min(interval, max(left, 0)))
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        exited.wait()
        tree.close()
    return ended[0], timed_out


# --------------------------------------------------------------------------- parity


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= atol + rtol * abs(b)


def compare_text(cpu: str, gpu: str, rtol: float, atol: float, ignore: re.Pattern[str] | None = None) -> dict[str, Any]:
    """Line by line: the words must be equal, the numbers within ``atol + rtol * |cpu|``."""
    a, b = ([line for line in text.splitlines() if line.strip() and not (ignore and ignore.search(line))] for text in (cpu, gpu))
    numbers = agree = 0
    differences = []
    for i, (la, lb) in enumerate(zip(a, b), start=1):
        # Each line's words (its numbers as <n>) and its numbers.
        (sa, va), (sb, vb) = ((NUMBER.sub("<n>", line), [float(m[0]) for m in NUMBER.finditer(line)]) for line in (la, lb))
        why = "text differs"
        if sa == sb and len(va) == len(vb):
            bad = [f"{x:g} vs {y:g}" for x, y in zip(va, vb) if not _close(y, x, rtol, atol)]
            numbers += len(va)
            agree += len(va) - len(bad)
            why = bad[0] if bad else ""
        if why:
            differences.append({"line": i, "cpu": la[:200], "gpu": lb[:200], "why": why})
    if len(a) != len(b):
        differences.append(
            {"line": min(len(a), len(b)) + 1, "cpu": f"{len(a)} lines", "gpu": f"{len(b)} lines", "why": "line counts differ"}
        )
    return {
        "lines": {"cpu": len(a), "gpu": len(b)},
        "numbers_compared": numbers,
        "numbers_agree": agree,
        "differences": differences[:20],
        "differences_total": len(differences),
        "agree": not differences,
    }


def compare_file(a: Path, b: Path, rtol: float, atol: float) -> tuple[str, str]:
    """``equal`` / ``close`` / ``differ`` and why: tables numerically, anything else by hash."""
    if file_sha256(a) == file_sha256(b):
        return "equal", "identical bytes"
    if a.suffix not in (".csv", ".tsv", ".parquet"):
        return "differ", "bytes differ"
    import numpy as np
    import pandas as pd

    try:
        x, y = (
            pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p, sep="\t" if p.suffix == ".tsv" else ",")
            for p in (a, b)
        )
    except Exception as exc:  # noqa: BLE001 - an unreadable table is a difference, said plainly
        return "differ", f"cannot read as a table: {str(exc).splitlines()[0][:120]}"
    if list(x.columns) != list(y.columns) or len(x) != len(y):
        return "differ", f"shape {x.shape} vs {y.shape} or columns differ"
    for col in x.columns:
        cx, cy = x[col], y[col]
        if pd.api.types.is_numeric_dtype(cx) and pd.api.types.is_numeric_dtype(cy):
            if not np.allclose(cy.to_numpy(float), cx.to_numpy(float), rtol=rtol, atol=atol, equal_nan=True):
                worst = float(np.nanmax(np.abs(cx.to_numpy(float) - cy.to_numpy(float))))
                return "differ", f"column {col!r}: largest difference {worst:g}"
        elif not cx.astype(str).equals(cy.astype(str)):
            return "differ", f"column {col!r}: values differ"
    return "close", f"numbers within rtol {rtol:g}"


# --------------------------------------------------------------------------- profiles


def fallback_table(profile: dict[str, Any] | None, top: int = 15) -> list[dict[str, Any]]:
    """Every profiled function, costliest CPU fallback first (then the GPU time)."""
    rows = [
        {
            "accelerator": accelerator,
            "function": name,
            "gpu_calls": int(s.get("gpu_calls", 0)),
            "gpu_seconds": float(s.get("gpu_time", 0.0)),
            "cpu_calls": int(s.get("cpu_calls", 0)),
            "cpu_seconds": float(s.get("cpu_time", 0.0)),
            "fallback_reasons": list(s.get("fallback_reasons", [])),
        }
        for accelerator, functions in (profile or {}).items()
        for name, s in functions.items()
    ]
    rows.sort(key=lambda r: (-r["cpu_seconds"], -r["cpu_calls"], -r["gpu_seconds"]))
    return rows[:top]


# --------------------------------------------------------------------------- the command


@dataclass
class Options:
    program: Path
    args: list[str]
    out: Path
    repeat: int = 0
    accelerators: str | None = None
    device: str = "auto"
    rtol: float = 1e-5
    atol: float = 1e-8
    timeout: float = 3600.0
    profile: bool = True
    ignore: str | None = None


def _summary(runs: list[Run], command: list[str]) -> dict[str, Any]:
    """An arm of the record: how its cold run ended, its ``command``, its times, memory peaks and output."""
    cold, warm = runs[0], runs[1:]
    reason = _failure(cold)
    out: dict[str, Any] = {
        "status": "failed" if reason else "ok",
        "reason": reason,
        "command": command,
        "cold_seconds": cold.seconds,
        "exit_code": cold.exit_code,
        "timed_out": cold.timed_out,
        "peak_host_mb": max(r.peak_rss_mb for r in runs),
        "peak_device_mb": None if cold.peak_device_mb is None else max(r.peak_device_mb or 0.0 for r in runs),
        "stdout_tail": cold.stdout[-TAIL_CHARS:],
        "stderr_tail": cold.stderr[-TAIL_CHARS:],
        "files_written": sorted(cold.written),
        # Processes a run left behind (a daemon, a setsid grandchild), killed when it ended; per run.
        "left_running_killed": [r.killed for r in runs],
    }
    if secs := [r.seconds for r in warm]:
        spread = {"median": statistics.median(secs), "min": min(secs), "max": max(secs)}
        out["warm"] = {"repeats": len(secs), **spread, "seconds": secs}
    return out


def _failure(run: Run) -> str | None:
    """Why ``run`` did not run to the end (None: it did)."""
    if run.timed_out:
        return "timed out (--timeout); the process group was killed"
    if run.exit_code != 0:
        # The script's own words, quoted without the terminal escapes they may hold.
        last = next((line for line in reversed(printable(run.stderr).splitlines()) if line.strip()), "")
        return f"exit code {run.exit_code}: {last[:300]}"
    return None


def _say(text: str) -> None:
    """A progress line on stderr: what it quotes of the script (a command line) without credentials or escapes."""
    say(one_line(hide(text)))


def compare(opts: Options) -> tuple[dict[str, Any], Path]:
    """Run both arms, compare them, write the record; ``(record, path)``.

    The runs' copies go in an owned folder (:func:`accel.scratch.owned_folder`), which a
    :class:`Guard` watches over: removed on the way out, by the supervisor if accel dies, and by
    the next ``accel compare`` if both died.
    """
    c = _Comparison(opts)
    try:
        started, environment = datetime.now(timezone.utc), collect_environment()
        c.run_arms()
        record = c.record(started, environment)
    finally:
        scratch.release(c.tmp)
        c.guard.close()
    return record, write_record(c.out, record, record_stem(f"compare-{c.program.stem}", started))


class _Comparison:
    """One comparison: the script and its folder checked, each arm's command and environment, the
    :class:`Guard` and the folder of the runs' copies; its runs and their record."""

    def __init__(self, opts: Options):
        self.opts, self.program = opts, opts.program.resolve()
        self.kind = check_program(opts.program)
        if not 0 <= opts.repeat <= MAX_REPEAT:
            raise AccelError(f"--repeat must be from 0 to {MAX_REPEAT:,} warm runs, got {opts.repeat:,}")
        if not (0 < opts.timeout <= MAX_SECONDS):  # a week: inf or 1e300 cannot be waited for (threading's limit)
            raise AccelError(
                f"--timeout must be a positive number of seconds, at most {MAX_SECONDS:,.0f} (a week); got {opts.timeout:g}"
            )
        if not (opts.rtol >= 0 and opts.atol >= 0):
            raise AccelError("--rtol and --atol must be 0 or more")
        try:
            self.ignore = re.compile(opts.ignore) if opts.ignore else None
        except re.error as exc:
            raise AccelError(f"--ignore-lines is not a valid regular expression ({exc})") from None
        if self.kind == "notebook" and not (module_installed("nbclient") and module_installed("ipykernel")):
            raise AccelError("running a notebook needs nbclient and ipykernel: pip install 'accel-tabular[notebook]'")
        self.out = ensure_writable(opts.out, "compare records")
        self.skip = [self.out]
        size, self.left_out = survey(self.program.parent, self.skip)
        if size > MAX_COPY_BYTES:
            raise AccelError(
                f"the script's folder {str(self.program.parent)!r} holds {size / 1e9:.1f} GB; each run gets its own copy of it: "
                f"move the script into a smaller folder (at most {MAX_COPY_BYTES / 1e9:.0f} GB)"
            )
        self.accelerators, self.gpu_reason = resolve_accelerators(opts.accelerators)
        if opts.device == "cpu":
            self.gpu_reason = "--device cpu"
        elif opts.device == "gpu" and self.gpu_reason:
            raise AccelError(f"--device gpu, but the GPU arm cannot run: {self.gpu_reason}")
        self.env = env = dict(os.environ)
        env.setdefault("PYTHONHASHSEED", "0")
        # accel.bench.compare_boot must import in the arm's process wherever the copied folder is.
        accel_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), accel_root) if p)
        if self.left_out:
            _say(f"note: not copied for the runs (not regular files): {', '.join(self.left_out[:5])}")
        self.runs_of: dict[str, list[Run]] = {}
        # The guard, then the folder of the runs' copies (ARM-RUN), which it removes if accel dies.
        self.guard = Guard()  # where the folder cannot be made, the guard ends when accel does
        self.tmp = scratch.owned_folder(Path(tempfile.gettempdir()), "accel-compare-")
        self.skip.append(self.tmp)  # TMPDIR inside the script's folder: the copies are not copied into themselves
        self.guard.tell(f"folder {self.tmp}")

    def command(self, arm: str, *extra: str) -> list[str]:
        """The command line of the arm ``arm`` (``extra``: the boot's options for the GPU arm)."""
        if arm == "cpu" and self.kind == "script":
            return [sys.executable, self.program.name, *self.opts.args]
        gpu = ["--accelerators", ",".join(self.accelerators), *extra] if arm == "gpu" else []
        script = ["--notebook", self.program.name] if self.kind == "notebook" else [self.program.name, "--", *self.opts.args]
        return [sys.executable, "-m", "accel.bench.compare_boot", *gpu, *script]

    def run(self, arm: str, copy: str, label: str, *extra: str) -> Run:
        """One run of ``arm`` in a fresh copy of the script's folder (``tmp/copy``), said as ``label``."""
        _copy_folder(self.program.parent, self.tmp / copy, self.skip)
        _say(f"{arm.upper()} arm: {label}")
        run = run_once(self.command(arm, *extra), self.tmp / copy, self.env, self.opts.timeout, arm == "gpu", self.guard)
        if run.killed:
            _say(
                f"note: the script left {len(run.killed)} process(es) running on the {arm.upper()} arm; "
                f"killed: {', '.join(run.killed[:3])}"
            )
        return run

    def run_arms(self) -> None:
        """The cold run of each arm, then the warm ones, alternating the arms' order; each in its own copy."""
        plan = ["cpu"] + ([] if self.gpu_reason else ["gpu"])
        for i in range(1 + self.opts.repeat):
            for arm in plan if i % 2 == 0 else reversed(plan):  # alternate: drift hits both alike
                run = self.run(arm, f"{arm}-{i}", "cold run" if i == 0 else f"warm run {i}/{self.opts.repeat}")
                self.runs_of.setdefault(arm, []).append(run)
                if i:
                    shutil.rmtree(self.tmp / f"{arm}-{i}", ignore_errors=True)  # the cold runs' copies are compared
                elif arm == "cpu" and (reason := _failure(run)):
                    raise AccelError(
                        f"the script did not finish within --timeout {self.opts.timeout:g} s on the CPU arm; nothing was written"
                        if run.timed_out
                        else f"the script fails on the CPU arm ({reason}); run it with plain python first"
                    )
            if i == 0 and any(_failure(runs[0]) for runs in self.runs_of.values()):
                break  # a failing arm is a finding, not something to time again

    def profile(self, arms: dict[str, Any]) -> dict[str, Any] | None:
        """One more GPU run, profiled (never timed): the accelerators' per-function profiles, or None."""
        if not self.opts.profile or arms["gpu"]["status"] != "ok":  # also where the GPU arm was skipped
            return None
        prof_path = self.tmp / "profile.json"
        prun = self.run("gpu", "gpu-profile", "profiled run (not timed)", "--profile-json", str(prof_path))
        try:
            return json.loads(prof_path.read_text())
        except (OSError, ValueError):
            arms["gpu"]["profile_error"] = _failure(prun) or "the profiler wrote nothing"
            return None

    def agreement(self, arms: dict[str, Any]) -> dict[str, Any]:
        """Whether the arms agree: their output and every file either wrote, within the tolerances."""
        opts = self.opts
        parity: dict[str, Any] = {"rtol": opts.rtol, "atol": opts.atol, "ignore_lines": opts.ignore}
        if arms["gpu"]["status"] != "ok":
            skipped = arms["gpu"]["status"] == "skipped"
            parity.update(agree=None, reason="the GPU arm was skipped" if skipped else "the GPU arm did not run to the end")
            return parity
        cpu_run, gpu_run = self.runs_of["cpu"][0], self.runs_of["gpu"][0]
        parity["stdout"] = compare_text(cpu_run.stdout, gpu_run.stdout, opts.rtol, opts.atol, self.ignore)
        files = []
        for name in sorted(cpu_run.written | gpu_run.written):
            if name not in gpu_run.written:
                status, detail = "only cpu", "the GPU arm did not write it"
            elif name not in cpu_run.written:
                status, detail = "only gpu", "the CPU arm did not write it"
            else:
                status, detail = compare_file(self.tmp / "cpu-0" / name, self.tmp / "gpu-0" / name, opts.rtol, opts.atol)
            files.append({"path": name, "status": status, "detail": detail})
        parity["files"] = files
        parity["agree"] = parity["stdout"]["agree"] and all(f["status"] in ("equal", "close") for f in files)
        return parity

    def record(self, started: datetime, environment: dict[str, Any]) -> dict[str, Any]:
        """The compare record, once the arms ran: the script, the settings, the arms, their speedups and
        parity, and the profiled run's fallbacks."""
        arms = {arm: _summary(runs, self.command(arm)) for arm, runs in self.runs_of.items()}
        if self.gpu_reason:
            arms["gpu"] = {"status": "skipped", "reason": self.gpu_reason, "command": self.command("gpu")}
        profile = self.profile(arms)
        parity = self.agreement(arms)
        finished = datetime.now(timezone.utc)
        cpu, gpu, ok = arms["cpu"], arms["gpu"], arms["gpu"]["status"] == "ok"  # a GPU arm that ran: the CPU arm did too
        speedup = {
            "wall_cold": cpu["cold_seconds"] / gpu["cold_seconds"] if ok else math.nan,
            "wall_warm_median": cpu["warm"]["median"] / gpu["warm"]["median"] if ok and "warm" in gpu else math.nan,
        }
        opts, program = self.opts, self.program
        config = {
            "repeat": opts.repeat, "accelerators": self.accelerators, "device": opts.device, "rtol": opts.rtol,
            "atol": opts.atol, "timeout": opts.timeout, "profile": opts.profile, "ignore_lines": opts.ignore,
        }  # fmt: skip
        return {
            **record_head("compare"),
            "workflow": f"compare:{program.name}",
            "program": {
                "path": str(program),
                "kind": self.kind,
                "args": list(opts.args),
                "sha256": file_sha256(program),
                "not_copied": self.left_out,  # FIFOs, sockets, devices in the script's folder
            },  # fmt: skip
            "config": config,
            "started_at": started.isoformat(),
            "finished_at": finished.isoformat(),
            "arms": arms,
            "speedup": speedup,
            "parity": parity,
            "fallbacks": fallback_table(profile),
            "profile": profile,
            "environment": environment,
        }
