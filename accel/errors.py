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
    # pydantic's ValidationError (not imported here): each field and what is wrong with it
    if type(exc).__name__ == "ValidationError" and callable(errors := getattr(exc, "errors", None)):
        lines = ["; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors())]
    else:
        lines = str(exc).strip().splitlines()
    causes = [m.group(1) for m in (re.match(r"^- \[[^\]]*\]:\s*(.+)$", line.strip()) for line in lines) if m]
    text = causes[-1] if causes else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {text[:limit]}".rstrip(": ")


#: Terminal escape sequences (CSI ``ESC [ ... final``, OSC ``ESC ] ... BEL|ESC \\``, and other
#: two-character escapes), then the control characters left (C0 but tab, DEL, C1).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` as it may reach a terminal when quoted from outside (a script's stderr, a file):
    without escape sequences (clear the screen, set the title, colours) or other control
    characters; line breaks and tabs are kept."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


def one_line(text: str) -> str:
    """``text`` as one printable line (:func:`printable`, each run of line breaks and tabs one space)."""
    return re.sub(r"[\n\t\u2028\u2029]+", " ", printable(text)).strip()
