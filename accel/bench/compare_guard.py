"""The supervisor of ``accel compare``: whatever the compared script started dies with accel.

accel starts this file as a process of its own session (``python compare_guard.py NAME=value``,
standard library only), naming the environment variable every process of the script inherits
(children, grandchildren, daemons that left the group or the session, Dask workers), with a pipe
on its standard input. accel writes on it, one per line, what else to end:

- ``group <pgid>``: a process group (each run of the script is one), and ``done <pgid>`` once
  accel has ended it itself (its number may then be reused by an unrelated process);
- ``folder <path>``: a folder to remove (the copies of the script's folder).

When the pipe reaches its end, accel has exited or died (even by SIGKILL, which runs no
clean-up of accel's own: the kernel closes the pipe all the same). Then every group is killed,
every process carrying the mark is killed until none is left, the folders are removed, and this
process exits. A direct child's ``PR_SET_PDEATHSIG`` would reach the script alone, not what it
started.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time


def _marked(mark: bytes) -> list[int]:
    """Processes (not this one) whose environment holds ``mark`` (``NAME=value``)."""
    found = []
    for pid in (int(entry) for entry in os.listdir("/proc") if entry.isdigit()):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/environ", "rb") as f:  # gone, or not ours to read
            found += [pid] if pid != os.getpid() and mark in f.read().split(b"\0") else []
    return found


def end_all(groups: list[int], marks: list[bytes], folders: list[str]) -> None:
    """Kill the groups and every marked process (again, until none is left); remove the folders."""
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    for _ in range(50):
        alive = [pid for mark in marks for pid in _marked(mark)]
        if not alive:
            break
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is accel's to handle; this waits for its end
    groups, folders, marks = [], [], [os.fsencode(mark) for mark in sys.argv[1:]]
    for line in sys.stdin.buffer:
        kind, _, value = line.rstrip(b"\n").partition(b" ")
        if kind == b"group":
            groups.append(int(value))
        elif kind == b"done" and int(value) in groups:
            groups.remove(int(value))
        elif kind == b"folder":
            folders.append(os.fsdecode(value))
    end_all(groups, marks, folders)
    return 0


if __name__ == "__main__":
    sys.exit(main())
