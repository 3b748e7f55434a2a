"""Real ``dask scheduler`` / ``dask worker`` processes on 127.0.0.1 for the cluster tests.

Every process is started in its own session and killed (with its group) at the end, whatever
happened; ports are chosen by the operating system (``--port 0``) and read back from the
scheduler file, so tests never race for a fixed port.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

BIN = Path(sys.executable).parent


class DaskProcesses:
    """A scheduler and its workers, started as separate processes."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.scheduler_file = self.folder / "scheduler.json"
        self.scheduler: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []

    def _spawn(self, args: list[str], log: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        return subprocess.Popen(
            [str(BIN / "dask"), *args],
            stdout=subprocess.DEVNULL,
            stderr=open(self.folder / log, "w"),  # noqa: SIM115 - closed with the process
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )

    def start_scheduler(self, timeout: float = 30) -> str:
        self.scheduler = self._spawn(
            [
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(self.scheduler_file),
            ],
            "scheduler.log",
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.scheduler_file.exists():
                try:
                    return json.loads(self.scheduler_file.read_text())["address"]
                except (ValueError, KeyError):
                    pass  # being written
            if self.scheduler.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"dask scheduler did not start: {(self.folder / 'scheduler.log').read_text()[-2000:]}")

    @property
    def address(self) -> str:
        return json.loads(self.scheduler_file.read_text())["address"]

    def start_workers(self, n: int, env: dict[str, str] | None = None, timeout: float = 60) -> list[subprocess.Popen]:
        """``n`` single-threaded workers without a nanny (a killed worker stays dead), joined."""
        from distributed import Client

        started = [
            self._spawn(
                ["worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
                 "--name", f"w{len(self.workers) + i}"],
                f"worker-{len(self.workers) + i}.log",
                env,
            )
            for i in range(n)
        ]  # fmt: skip
        self.workers += started
        with Client(self.address, timeout=10, set_as_default=False) as client:
            client.wait_for_workers(len([w for w in self.workers if w.poll() is None]), timeout=timeout)
        return started

    def stop_workers(self) -> None:
        for proc in self.workers:
            _kill_group(proc)
        self.workers = []

    def close(self) -> None:
        self.stop_workers()
        if self.scheduler is not None:
            _kill_group(self.scheduler)
            self.scheduler = None


def _kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=30)


def live_group_members(pgid: int) -> list[int]:
    """Processes still running (zombies do not count: they are dead) in process group ``pgid``."""
    out = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(proc.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return out


def free_port() -> int:
    """A loopback port nothing listens on (bound and released at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
