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

SIGTERM (``kill``, a batch scheduler's or a container's stop) stops the run the same way: while
:func:`never_lost` is active it raises :class:`Terminated`, a ``KeyboardInterrupt``, so that
every clean-up a Ctrl-C runs (the cluster's close, an empty study discarded, temporary files
removed) runs for it too, and the command line exits with 143 (128 + SIGTERM) instead of
dying at once with workers and temporary files left behind.

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


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: the run stops as for Ctrl-C (exit status 143)."""


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated


def _redeliver(sig: int) -> None:
    os.kill(os.getpid(), sig)


@contextmanager
def never_lost() -> Iterator[None]:
    """While active, a ``KeyboardInterrupt`` swallowed by a callback is raised again in the main
    thread, and SIGTERM raises :class:`Terminated` (where SIGTERM is at its default, in the main thread)."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            sig = signal.SIGTERM if isinstance(unraisable.exc_value, Terminated) else signal.SIGINT
            timer = threading.Timer(REDELIVER_AFTER_S, _redeliver, (sig,))
            timer.daemon = True
            timer.start()
            return
        previous(unraisable)

    sys.unraisablehook = hook
    on_term = threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    if on_term:
        signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        if on_term:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sys.unraisablehook = previous


def kept(exc: BaseException, what: str) -> None:
    """Note on the interrupt ``exc`` what the stopped command leaves on disk on purpose (``what``:
    a study and how to resume it); the command line says it instead of "nothing was written"."""
    notes = list(getattr(exc, "accel_kept", []))
    exc.accel_kept = [*notes, what]  # type: ignore[attr-defined]


def what_was_kept(exc: BaseException) -> str:
    """What the interrupted command left on disk on purpose, or ``"nothing was written"``."""
    return "; ".join(getattr(exc, "accel_kept", [])) or "nothing was written"
