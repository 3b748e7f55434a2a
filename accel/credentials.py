"""Credentials are never written or printed: recognised by the form of the value, not by a name.

Records are shared and committed, and error lines end up in logs, so everything accel writes
or prints that may quote a user (an argument, a script's output, an environment variable's
value) passes through :func:`hide`, the one redactor: :func:`accel.record.dumps` (every record,
every ``--json``), :func:`accel.record.loads` (every report and table built from records,
older ones included), and the command line's error line. It replaces with ``***``:

- the credentials of any URL: the password (``scheme://user:PASSWORD@host``, the user kept)
  or, without a password, the whole user part (``tcp://TOKEN@host``: a token given as the
  user);
- secret query parameters (``?password=...``, ``&token=...``: :data:`SECRET_PARAMS`) and
  secret options or assignments (``--password X``, ``--api-key=X``, ``DB_PASSWORD=X``);
- ``Authorization`` headers (``Bearer ...``, ``Basic ...``, ``token ...``);
- values shaped like tokens: AWS access keys (``AKIA...``, ``ASIA...``), GitHub tokens
  (``ghp_...``, ``gho_...``, ``github_pat_...``), GitLab (``glpat-...``), Slack (``xoxb-...``)
  and its webhooks, JSON Web Tokens (``eyJ...``), OpenAI/Anthropic-style keys (``sk-...``),
  Google API keys (``AIza...``), and private key blocks.

What only looks random is kept: a 40-hex git commit, a SHA-256, a UUID, a path.

:func:`hidden` applies it to every string of a structure (keys included); :func:`holds_secret`
says whether a value holds a credential (:mod:`accel.environment` then records only that the
variable was set).
"""

from __future__ import annotations

import re
from typing import Any

#: Query-string parameters that hold secrets (``?password=...``, ``&token=...``).
SECRET_PARAMS = (
    "password", "passwd", "pwd", "pass", "secret", "token", "sslpassword", "access_key", "secret_key", "api_key",
    "apikey", "api-key", "key", "sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
    "access_token", "refresh_token", "id_token", "client_secret", "auth", "code",
)  # fmt: skip
#: Parts of a variable's name that say it holds a credential (``DASK_COILED__TOKEN``, ``ACCEL_S3_SECRET_ACCESS_KEY``).
SECRET_NAME_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "KEY", "CREDENTIAL", "AUTH", "PRIVATE", "SESSION")
#: What a hidden value becomes.
MASK = "***"

#: ``scheme://user:password@`` (the password runs to the last ``@`` before the path; a path
#: given to Python's ``Path`` keeps a single slash after the scheme) and ``scheme://token@``.
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*:/{1,2}[^/@\s:]*:)([^/\s]+)(@)")
_URL_USER = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*:/{1,2})([^/@\s:*]+)(@)")
_QUERY_SECRET = re.compile(r"([?&;](?:" + "|".join(map(re.escape, SECRET_PARAMS)) + r")=)([^&;#\s'\"]+)", re.IGNORECASE)
#: A name that ends in a secret word (``--password``, ``DB_PASSWORD``, ``api-key``, ``"token"``).
_SECRET_WORD = (
    r"(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|account[_-]?key"
    r"|shared[_-]?access[_-]?key|credentials?)"
)
#: ``--api-key=X``, ``DB_PASSWORD=X``, ``password: X``, ``'token': 'X'``.
_ASSIGNED = re.compile(r"((?<![\w])[\w.-]*" + _SECRET_WORD + r"[\"']?\s*[=:]\s*)([\"']?)([^\s\"',;&{}\[\]()]+)", re.IGNORECASE)
#: ``--password X`` (an option naming a secret, its value the next word).
_OPTION = re.compile(r"((?<![\w-])--?[\w.-]*" + _SECRET_WORD + r"\s+)([\"']?)([^\s\"'-][^\s\"',;&]*)", re.IGNORECASE)
#: ``Authorization: <scheme> <credentials>`` (the rest of the header), and a bare ``Bearer X`` / ``Basic X``.
_AUTHORIZATION = re.compile(r"(\bAuthorization[\"']?\s*[:=]\s*[\"']?)([^\s\"']+(?:[ \t]+[^\s\"']+)?)", re.IGNORECASE)
_SCHEME = re.compile(r"\b(Bearer|Basic)(\s+)([A-Za-z0-9._~+/=-]{8,})")
#: Values whose form says they are credentials.
_TOKENS = re.compile(
    r"\b(?:"
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|github_pat_[A-Za-z0-9_]{22,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # JSON Web Tokens
    r"|sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}"  # sk-..., sk-proj-..., sk-ant-api03-...
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|hooks\.slack\.com/services/[A-Za-z0-9/]+"
    r")"
)
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.DOTALL)


#: Text no pattern can match: word characters and dots only (no separator a URL, an option or an
#: assignment needs), shorter than the shortest token (an AWS key id: 20). Most of a record's
#: strings (column and feature names, stage names) are such, and are returned at once.
_PLAIN = re.compile(r"[\w.]{0,19}")


def hide(text: str) -> str:
    """``text`` with every credential it holds replaced by ``***`` (see the module docstring)."""
    if not text or _PLAIN.fullmatch(text):
        return text
    text = _PRIVATE_KEY.sub(MASK, text)
    text = _URL_PASSWORD.sub(rf"\1{MASK}\3", text)
    text = _URL_USER.sub(rf"\1{MASK}\3", text)
    text = _QUERY_SECRET.sub(rf"\1{MASK}", text)
    text = _AUTHORIZATION.sub(rf"\1{MASK}", text)
    text = _SCHEME.sub(_scheme_credentials, text)
    text = _TOKENS.sub(MASK, text)
    for pattern in (_ASSIGNED, _OPTION):
        text = pattern.sub(rf"\1\2{MASK}", text)
    return text


def _scheme_credentials(match: re.Match[str]) -> str:
    """``Bearer X`` always; ``Basic X`` when X is Base64 of ``user:password`` (not "Basic statistics")."""
    if match.group(1) == "Basic":
        import base64

        try:  # binascii.Error and UnicodeDecodeError are ValueErrors
            if ":" not in base64.b64decode(match.group(3), validate=True).decode("utf-8"):
                return match.group(0)
        except ValueError:
            return match.group(0)
    return match.group(1) + match.group(2) + MASK


def _secret_option(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(r"--?[\w.-]*" + _SECRET_WORD, value, re.IGNORECASE) is not None


def hidden(value: Any) -> Any:
    """``value`` with :func:`hide` applied to every string in it (mapping keys too); other values as they are.

    In a list (a command line), the item after an option naming a secret (``["--password",
    "hunter2"]``) is hidden too.
    """
    if isinstance(value, str):
        return hide(value)
    if isinstance(value, dict):
        return {hidden(k): hidden(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        out = [
            MASK if i and _secret_option(value[i - 1]) and isinstance(v, str) and not v.startswith("-") else hidden(v)
            for i, v in enumerate(value)
        ]
        return out if isinstance(value, list) else tuple(out)
    return value


def holds_secret(name: str, value: str) -> bool:
    """Whether the variable ``name`` may hold a credential: by its name, or by a credential in its value."""
    return any(part in name.upper() for part in SECRET_NAME_PARTS) or hide(value) != value
