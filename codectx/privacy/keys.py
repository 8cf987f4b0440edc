"""The per-install HMAC key that turns a secret into a stable, unlinkable 8-hex tag.

The key is random, created on first use with mode 0600 under the user's state
directory, and never leaves the machine: the same secret always maps to the
same `[REDACTED:rule:hmac8]` token on this install and to a different one on
any other. The audit log's head record is MACed with a key derived from it
(`audit_head_key`), so only this install can write a head that verifies.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path

from codectx.privacy.errors import InstallKeyError

KEY_FILE = "redaction.key"
KEY_BYTES = 32


def load_or_create_key(folder: Path) -> bytes:
    """Read the install key from `folder`, creating it (0600, atomically) if absent."""
    path = folder / KEY_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise InstallKeyError(f"cannot create state folder {folder}: {exc.strerror}") from None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    except OSError as exc:
        raise InstallKeyError(f"cannot create redaction key {path}: {exc.strerror}") from None
    key = secrets.token_bytes(KEY_BYTES)
    # Written to a fresh O_EXCL file: a concurrent first use reads back this key, never a partial one
    # (it retries below until the file is complete).
    with os.fdopen(fd, "wb") as fh:
        fh.write(key)
        fh.flush()
        os.fsync(fh.fileno())
    return key


def _read_key(path: Path) -> bytes:
    for _ in range(50):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InstallKeyError(f"cannot read redaction key {path}: {exc.strerror}") from None
        if len(data) == KEY_BYTES:
            if path.stat().st_mode & 0o077:
                os.chmod(path, 0o600)
            return data
        if len(data) > KEY_BYTES:
            break
        # Another process is still writing it.
        time.sleep(0.01)
    raise InstallKeyError(
        f"redaction key {path} is corrupt ({len(data)} bytes, expected {KEY_BYTES}); "
        "delete it to create a new one (existing redaction tags will change)"
    )


def tag(key: bytes, value: str) -> str:
    """The 8-hex HMAC tag of a secret value."""
    digest = hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return digest[:8]


def audit_head_key(folder: Path) -> bytes:
    """The key of the audit log's head-record MAC: derived from the install key, never stored."""
    return hmac.new(load_or_create_key(folder), b"codectx audit head v1", hashlib.sha256).digest()
