"""Logs that never hold a key or the user's code: a filter for every handler, and private log files.

Libraries log whole messages at DEBUG and INFO (pygls logs every JSON-RPC
message: `initializationOptions` with the API key, `didOpen` with the
document's text). The filter replaces each argument of a library's record
below WARNING with its size and sha256 (short identifiers such as method
names stay readable), and scrubs every record, codectx's own included, of
the API keys it has been told about, bearer tokens, authorization headers,
values under secrets' names (`api_key=`, `password:`, `aws_secret_access_key=`),
passwords in URLs and tokens known by their prefix
(`ghp_`, `glpat-`, `sk_live_`, `AKIA`, JWTs...). Log files are created mode 0600 (an
existing one is made 0600).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from typing import Any

_SHORT = re.compile(r"[\w.$/:-]{0,64}\Z")
_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[^\s'\",}]+"),
    re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?)(?!bearer\b)[^\s'\",}]+"),
    re.compile(r"(?i)(['\"]?api[_-]?key['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+"),
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)[^@\s/]+(?=@)"),
    # A value under a secret's name, wherever a message quotes one (a client's malformed params in a
    # validation error: `invalid literal for int(): 'aws_secret_access_key=wJalr...'`).
    re.compile(
        r"(?i)((?:secret|passw(?:or)?d|passphrase|pwd|token|credential|(?:api|access|private|auth)[_-]?key)"
        r"[\w.-]*['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]{8,}"
    ),
    # Tokens by their providers' prefixes, wherever they come from: a client can put one in any
    # request parameter (`no conversation 'ghp_...'`), and codectx's own messages quote those.
    re.compile(
        r"()\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
        r"gl(?:pat|dt|rt|ptt|cbt|ft|imt|oas)-[A-Za-z0-9_.-]{20,}|xox[abposre]-[0-9A-Za-z.-]{10,}|"
        r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}|"
        r"npm_[A-Za-z0-9]{36}|pypi-AgE[A-Za-z0-9_-]{20,}|(?:AKIA|ASIA)[A-Z2-7]{16}|AIza[0-9A-Za-z_-]{35}|"
        r"hv[sbr]\.[A-Za-z0-9_-]{20,}|whsec_[A-Za-z0-9+/=]{20,}|ya29\.[0-9A-Za-z_-]{20,}|"
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
    ),
)
_secrets: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """A value (an API key) that must never appear in a log, whatever logs it."""
    if value and len(value) >= 4:
        with _lock:
            _secrets.add(value)


def scrub(text: str) -> str:
    for value in sorted(_secrets, key=len, reverse=True):
        if value in text:
            text = text.replace(value, "[REDACTED]")
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + "[REDACTED]", text)
    return text


def digest(value: Any) -> Any:
    """How a library's log argument is shown: short words as they are, anything else as size + hash."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if _SHORT.match(text):
        return text
    data = text.encode("utf-8", "surrogatepass")
    return f"<{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}>"


class SafeLogFilter(logging.Filter):
    """Attach to every handler: see the module docstring. Always lets the record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args and not record.name.startswith("codectx") and record.levelno < logging.WARNING:
            args = record.args
            if isinstance(args, dict):
                record.args = {k: digest(v) for k, v in args.items()}
            else:
                record.args = tuple(digest(a) for a in args)
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        record.msg, record.args = scrub(message), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True


class PrivateFileHandler(logging.FileHandler):
    """A FileHandler whose file is created (or made) mode 0600: logs name files and hosts."""

    def _open(self) -> Any:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.fchmod(fd, 0o600)
        except OSError:
            os.close(fd)
            raise
        return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)
