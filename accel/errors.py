"""Errors that reach the user as one line on stderr and exit code 2 (no traceback)."""

from __future__ import annotations


class AccelError(Exception):
    """A user-facing error: bad input, or a request this machine cannot honour.

    The command line prints ``accel: error: <message>`` and exits with ``exit_code``.
    """

    exit_code = 2


class DeviceUnavailable(AccelError):
    """The GPU arm was asked for where no GPU is usable; the message says why."""
