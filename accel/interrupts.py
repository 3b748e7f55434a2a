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


def _redeliver() -> None:
    os.kill(os.getpid(), signal.SIGINT)


@contextmanager
def never_lost() -> Iterator[None]:
    """While active, a ``KeyboardInterrupt`` swallowed by a callback is raised again in the main thread."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            timer = threading.Timer(REDELIVER_AFTER_S, _redeliver)
            timer.daemon = True
            timer.start()
            return
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
