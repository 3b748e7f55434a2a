"""Ctrl-C that is never lost: an interrupt Python swallowed is delivered again.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be when SIGINT arrives.
Where that is a garbage-collector callback (``distributed``'s ``GCDiagnosis._gc_callback``), a
``__del__`` method, a weakref callback or a finalizer, the exception cannot propagate: Python
prints "Exception ignored in ..." and goes on, and the run would train to the end and exit 0.
Every such swallowed exception passes through :data:`sys.unraisablehook`, so
:func:`never_lost` hooks there: a ``KeyboardInterrupt`` that arrives there is not printed, and
SIGINT is sent again a moment later, when the main thread has left the callback and the
interrupt can stop the run like any other Ctrl-C (clean-up included: ``finally`` blocks, the
cluster's close). An interrupt that propagates normally is never repeated.

SIGTERM (``kill``, a batch scheduler's or a container's stop) and SIGHUP (the terminal closed)
stop the run the same way: while :func:`never_lost` is active they raise :class:`Terminated`,
a ``KeyboardInterrupt``, so that every clean-up a Ctrl-C runs (the cluster's close, an empty
study discarded, temporary files removed) runs for it too, and the command line exits with
128 + the signal (143, 129) instead of dying at once with workers and temporary files left
behind.

A command stopped that way may leave something on disk on purpose (a search's study, to be
resumed): it says so with :func:`kept`, and the command line's last line names it instead of
"nothing was written" (:func:`what_was_kept`).

Only the command line installs it (:func:`never_lost` around ``accel.cli.main``): a library
call in a user's notebook leaves their hooks alone.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Seconds after a swallowed interrupt before SIGINT is sent again (the callback that swallowed
#: it has returned by then).
REDELIVER_AFTER_S = 0.05


#: The signals that stop the command like Ctrl-C, clean-up included: SIGTERM (``kill``, a batch
#: scheduler's stop) and SIGHUP (the terminal closed, an SSH session dropped).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP) arrived: the run stops as for Ctrl-C (exit status 128 + the signal: 143, 129)."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__()
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated(signum)


@contextmanager
def never_lost() -> Iterator[None]:
    """While active, a ``KeyboardInterrupt`` swallowed by a callback is raised again in the main
    thread, and SIGTERM raises :class:`Terminated` (where SIGTERM is at its default, in the main thread)."""
    previous = sys.unraisablehook
    pending: list[threading.Timer] = []  # redeliveries not yet made: cancelled when the command ends

    def hook(unraisable: Any) -> None:
        if not isinstance(exc := unraisable.exc_value, KeyboardInterrupt):
            return previous(unraisable)
        sig = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        timer = threading.Timer(REDELIVER_AFTER_S, os.kill, (os.getpid(), sig))
        timer.daemon = True
        pending.append(timer)
        timer.start()

    sys.unraisablehook = hook
    main = threading.current_thread() is threading.main_thread()
    handled = [sig for sig in STOP_SIGNALS if main and signal.getsignal(sig) == signal.SIG_DFL]
    for sig in handled:
        signal.signal(sig, _terminate)
    try:
        yield
    finally:
        # A copy of an interrupt the command has already handled (swallowed by a callback during
        # the clean-up, e.g. a cluster's close) is not sent once the command is over: it would kill
        # the process after its exit status was decided.
        for timer in pending:
            timer.cancel()
        for sig in handled:
            signal.signal(sig, signal.SIG_DFL)
        sys.unraisablehook = previous


def exit_status_stands() -> None:
    """Let the command line's exit status stand, whatever interrupts it handled on the way.

    CPython remembers a ``KeyboardInterrupt`` raised in code run from a string (``exec`` and
    ``eval``: a dataclass or a namedtuple being built when Ctrl-C landed) even once it was
    handled, and under ``python -m`` it then ends the process with SIGINT at exit instead of the
    status given to ``sys.exit`` (``Modules/main.c``, ``Py_RunMain``). Running an empty string
    clears what it remembers (``Python/pythonrun.c``, ``run_eval_code_obj``), so the command
    exits 130 (or 143, 2, ...) whichever way it was started.
    """
    exec("")


def kept(exc: BaseException, what: str) -> None:
    """Note on the interrupt ``exc`` what the stopped command leaves on disk on purpose (``what``:
    a study and how to resume it); the command line says it instead of "nothing was written"."""
    exc.accel_kept = [*getattr(exc, "accel_kept", []), what]  # type: ignore[attr-defined]


def what_was_kept(exc: BaseException) -> str:
    """What the interrupted command left on disk on purpose, or ``"nothing was written"``."""
    return "; ".join(getattr(exc, "accel_kept", [])) or "nothing was written"
