"""The audit log's head record: how many entries it holds and the hash of the last, MACed.

A hash chain alone shows edits in the middle, but not entries cut off the end,
a log deleted whole, or a chain rewritten from scratch: whoever edits the file
can re-hash it. The head record, kept beside the log (`audit.head`), names
the entry count, the byte size and the last entry's hash, with an HMAC keyed
by this install's secret (codectx.privacy.keys). Without the key nobody can
write a head that matches a rewritten log, so `audit verify` notices
truncation, deletion and forgery. (Someone who can read the install key can
forge one too; and an old head kept aside could be put back together with
the log as it was then, and deleting the log and its head together looks
like a new install. The head protects against edits to the log, not against
a user's own account.)

The file is rewritten in place, one fixed-size record of one disk sector
(512 bytes), after the entry it names was fsynced. The head itself is not
fsynced (that would cost a request's first byte another ~2 ms): a killed
process leaves it complete (the page cache keeps it), and after a power loss
it may name fewer entries than the log holds, which the writer adopts and
`verify` reports as entries after the head, never as tampering.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from codectx.privacy.errors import AuditError
from codectx.privacy.keys import audit_head_key

HEAD_BYTES = 512  # one sector, fixed: a new record always covers the old one completely


@dataclass(frozen=True)
class Head:
    entries: int  # entries in the current log file
    seq: int  # sequence number of the last entry (continues across rotated segments)
    size: int  # byte size of the log file up to and including the last anchored entry
    last_hash: str
    last_id: str
    first_hash: str  # the file's first entry: a chain forged from scratch differs here

    def body(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode()


class HeadDamaged(AuditError):
    """The head record exists but cannot be trusted (unreadable, or its MAC does not verify)."""


def head_path(log_path: Path) -> Path:
    return log_path.with_name(log_path.name.rsplit(".", 1)[0] + ".head")


def _mac(key: bytes, head: Head) -> str:
    return hmac.new(key, head.body(), hashlib.sha256).hexdigest()


def read_head(log_path: Path, key_dir: Path) -> Head | None:
    """The head record, None when there is none, HeadDamaged when it is not trustworthy."""
    path = head_path(log_path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AuditError(f"cannot read the audit head record {path}: {exc.strerror}") from None
    try:
        data: dict[str, Any] = json.loads(raw.decode("utf-8").strip() or "null")
        head = Head(
            entries=int(data["entries"]),
            seq=int(data["seq"]),
            size=int(data["size"]),
            last_hash=str(data["last_hash"]),
            last_id=str(data["last_id"]),
            first_hash=str(data["first_hash"]),
        )
        mac = str(data["mac"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise HeadDamaged(f"the audit head record {path} is damaged (not a head record)") from None
    if not hmac.compare_digest(mac, _mac(audit_head_key(key_dir), head)):
        raise HeadDamaged(
            f"the audit head record {path} does not carry this install's MAC (forged, or written "
            "with another install's key)"
        )
    return head


def write_head(log_path: Path, key_dir: Path, head: Head) -> None:
    """Rewrite the head record in place; raises AuditError when it cannot."""
    path = head_path(log_path)
    record = json.loads(head.body())
    record["mac"] = _mac(audit_head_key(key_dir), head)
    data = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
    if len(data) >= HEAD_BYTES:
        raise AuditError("audit head record too large")  # ids and hashes have fixed sizes
    data = data.ljust(HEAD_BYTES - 1) + b"\n"
    try:
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            written = os.pwrite(fd, data, 0)
            if written != len(data):
                raise AuditError(f"short write to the audit head record {path}")
            if created:
                os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(path.parent)
    except OSError as exc:
        raise AuditError(f"cannot write the audit head record {path}: {exc.strerror}") from None


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
