"""How much a command says on the terminal: ``--quiet``, the default, or ``--verbose``.

- quiet: errors (``accel: ...``) and where the files went (``run record: PATH``), nothing else;
- normal: progress and notices on stderr, the result's tables on stdout;
- verbose: also the seconds of each planning step as it ends (reading the table's head, schema
  inference, the encoding probe, the environment report, the batch plans, a cluster's start).

Every progress line and notice goes through :func:`say` (or :func:`detail`, verbose only), so
that one setting governs them; the live display (:class:`~accel.report.console.ProgressDisplay`)
and :func:`accel.record.show_result` ask :func:`level`. The command line sets the level from its
flags; a library caller keeps the default.
"""

from __future__ import annotations

import sys

QUIET, NORMAL, VERBOSE = 0, 1, 2
_level = NORMAL


def set_level(value: int) -> None:
    """Set how much is said from now on (:data:`QUIET`, :data:`NORMAL` or :data:`VERBOSE`)."""
    global _level
    _level = value


def level() -> int:
    return _level


def quiet() -> bool:
    return _level <= QUIET


def say(text: str) -> None:
    """A progress line or notice on stderr (stdout is the result's); nothing when quiet."""
    if _level > QUIET:
        print(text, file=sys.stderr, flush=True)


def detail(text: str) -> None:
    """A line only ``--verbose`` shows (the timing of a planning step)."""
    if _level >= VERBOSE:
        print(text, file=sys.stderr, flush=True)
