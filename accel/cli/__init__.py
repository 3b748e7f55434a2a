"""The command line: ``accel`` and its subcommands, argparse only; the work is done elsewhere.

- :mod:`~accel.cli.main` — the parser, ``info``, ``completion``, and
  :func:`~accel.cli.main.main` (the console script), which turns user errors into one line.
- :mod:`~accel.cli.options` — the flags the commands share (declared once, added by one loop),
  the argument types, and how a command that wrote a record ends.
- :mod:`~accel.cli.runs` — ``accel run``, ``accel scale``, ``accel predict`` and ``accel compare``:
  each its function of :mod:`accel.api` called with the flags it takes.
- :mod:`~accel.cli.bench` — ``accel bench`` (models, groupby, join, crossover), ``accel data``, ``accel report``.
- :mod:`~accel.cli.hpo` — ``accel hpo`` and ``accel experiments``.
- :mod:`~accel.cli.usage` — ``--quiet``/``--verbose`` and examples on every command.

The top of the layers: may import anything in accel, and nothing in the library imports it
(``python -m accel`` runs :func:`~accel.cli.main.main`). A command's module imports no other
command's; only the parser (:func:`~accel.cli.main.build_parser`) loads them all.
"""

from __future__ import annotations

import os as _os
import time as _time


def _process_start(now: float, cpu: float) -> float:
    """When this interpreter started (``time.time()``), judged as this package is first imported.

    The process's own start (Linux: ``/proc/self/stat``, to the clock tick; elsewhere psutil) is
    where the interpreter began, unless the process ran something else first: a shell that runs
    ``sleep 8 && accel run`` as ``bash -c`` waits for ``sleep`` and then *becomes* accel (exec,
    same process, same start time). Such a process has waited for a child, or spent far longer
    than its CPU time before accel was imported; then the interpreter's start is taken as ``now``
    less the CPU time the process has used (the interpreter's start-up is CPU work; a shell's
    waiting is not), which leaves out what ran before.
    """
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: start, in ticks since boot
        started = now - (_time.clock_gettime(_time.CLOCK_BOOTTIME) - ticks / _os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        import psutil

        started = psutil.Process().create_time()
    try:
        import resource

        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        waited = children.ru_utime + children.ru_stime > 0
    except ImportError:  # not on Windows
        waited = False
    if waited or now - started > cpu + 1.0:
        return max(started, now - cpu)
    return started


#: When this interpreter started (``time.time()``): the start of ``start-up`` in a run's wall breakdown.
PROCESS_STARTED_AT = _process_start(_time.time(), _time.process_time())
