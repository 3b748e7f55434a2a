"""Credentials are never written: a password in a URL, a secret query parameter, a variable
whose name says it holds one.

Records are shared and committed, and error lines end up in logs, so what accel quotes from a
user (an argument, an environment variable's value) goes through here first:

- :func:`hide`: text with every URL password (``scheme://user:PASSWORD@host``) and every secret
  query parameter's value (``?password=...``, :data:`SECRET_PARAMS`) replaced by ``***``; the
  command line's error line passes through it (``--data``, ``--scheduler``, ``--storage``);
- :func:`holds_secret`: whether a variable's name says it holds a credential
  (``DASK_COILED__TOKEN``) or its value holds one; :mod:`accel.environment` records only that
  such a variable was set.
"""

from __future__ import annotations

import re

#: Query-string parameters that hold secrets (``?password=...``, ``&token=...``).
SECRET_PARAMS = ("password", "passwd", "pwd", "pass", "secret", "token", "sslpassword", "access_key", "secret_key", "api_key")
#: Parts of a variable's name that say it holds a credential (``DASK_COILED__TOKEN``, ``ACCEL_S3_SECRET_ACCESS_KEY``).
SECRET_NAME_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "KEY", "CREDENTIAL", "AUTH", "PRIVATE", "SESSION")

#: ``scheme://user:password@``: the password runs to the last ``@`` before the path (a path
#: given to Python's ``Path`` keeps a single slash after the scheme).
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*:/{1,2}[^/@\s:]*:)([^/\s]+)(@)")
_QUERY_SECRET = re.compile(r"([?&;](?:" + "|".join(map(re.escape, SECRET_PARAMS)) + r")=)([^&;#\s'\"]+)", re.IGNORECASE)


def hide(text: str) -> str:
    """``text`` with every URL password and secret query parameter's value replaced by ``***``."""
    return _QUERY_SECRET.sub(r"\1***", _URL_PASSWORD.sub(r"\1***\3", text))


def holds_secret(name: str, value: str) -> bool:
    """Whether the variable ``name`` may hold a credential: by its name, or by a password in its value."""
    return any(part in name.upper() for part in SECRET_NAME_PARTS) or hide(value) != value
