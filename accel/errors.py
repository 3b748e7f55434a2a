"""Errors that reach the user as one line on stderr and exit code 2 (no traceback)."""

from __future__ import annotations

import re


class AccelError(Exception):
    """A user-facing error: bad input, or a request this machine cannot honour.

    The command line prints ``accel: error: <message>`` and exits with ``exit_code``.
    """

    exit_code = 2


class DeviceUnavailable(AccelError):
    """The GPU arm was asked for where no GPU is usable; the message says why."""


def first_line(exc: BaseException, limit: int | None = None) -> str:
    """``"TypeName: first line of the message"``, for a reason recorded or shown in one line.

    For XGBoost's stacked errors (lines ``- [host]: cause``, as its Dask interface raises) the
    line is the innermost cause; for pydantic's, each field and what is wrong with it. ``limit`` cuts the message to that many characters.
    """
    errors = getattr(exc, "errors", None)
    if type(exc).__name__ == "ValidationError" and callable(errors):  # pydantic: each field and what is wrong
        lines = ["; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors())]
    else:
        lines = str(exc).strip().splitlines()
    causes = [m.group(1) for m in (re.match(r"^- \[[^\]]*\]:\s*(.+)$", line.strip()) for line in lines) if m]
    text = causes[-1] if causes else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {text[:limit]}".rstrip(": ")
