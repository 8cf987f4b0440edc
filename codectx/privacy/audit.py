"""The audit log: one JSON line per request that left (or would have left) the machine.

Each entry records the endpoint, the byte count and sha256 of the exact bytes,
the files and line ranges included, the redaction events (rule, place, length,
HMAC tag; never a value) and the rule-set version. Entries are chained: each
holds the hash of the previous entry and its own hash over its canonical JSON,
so editing, inserting or deleting an entry breaks `verify`. Appends take an
exclusive flock on an O_APPEND descriptor, so concurrent writers keep the chain.
With payload keeping on, the exact (already redacted) bytes are stored beside
the log as payloads/<sha256>.json, mode 0600 (retries of one request share a file).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codectx.privacy.errors import AuditChainBroken, AuditError

GENESIS = "0" * 64
_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}\Z")


def canonical(entry: dict[str, Any]) -> bytes:
    """The bytes an entry's hash is computed over (everything but `hash`)."""
    body = {k: v for k, v in entry.items() if k != "hash"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def entry_hash(entry: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(entry)).hexdigest()


def new_id() -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(4)}"


@dataclass(frozen=True)
class Verdict:
    ok: bool
    entries: int
    broken_line: int | None = None  # 1-based line of the first bad entry
    broken_id: str | None = None
    reason: str = ""

    def message(self) -> str:
        if self.ok:
            return f"audit log intact: {self.entries} entries, hash chain verified"
        return f"audit log broken at line {self.broken_line} (entry {self.broken_id or '?'}): {self.reason}"


class AuditLog:
    """Append-only, hash-chained JSONL; see the module docstring."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            from codectx.settings import state_dir

            path = state_dir() / "audit.jsonl"
        self.path = Path(path)
        self.payload_dir = self.path.parent / "payloads"

    # ------------------------------------------------------------------ writing

    def append(self, entry: dict[str, Any], payload: bytes | None = None) -> dict[str, Any]:
        """Chain and write one entry (and its payload first, if given); returns the written entry."""
        entry = dict(entry)
        entry.setdefault("id", new_id())
        entry.setdefault("time", datetime.now(UTC).isoformat(timespec="milliseconds"))
        if not _ID.match(str(entry["id"])):
            raise AuditError(f"invalid audit id {entry['id']!r}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if payload is not None:
                entry["sha256"] = hashlib.sha256(payload).hexdigest()
                self._write_payload(entry["sha256"], payload)
                entry["payload"] = True
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as exc:
            raise AuditError(f"cannot write the audit log {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            entry["prev"] = self._last_hash()
            entry.pop("hash", None)
            entry["hash"] = entry_hash(entry)
            line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
            written = os.write(fd, line)
            if written != len(line):
                raise AuditError(f"short write to the audit log {self.path}")
            os.fsync(fd)
        except OSError as exc:
            raise AuditError(f"cannot write the audit log {self.path}: {exc.strerror}") from None
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        return entry

    def _write_payload(self, digest: str, payload: bytes) -> None:
        self.payload_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        final = self.payload_dir / f"{digest}.json"
        if final.exists():
            return
        temp = self.payload_dir / f".{digest}.{secrets.token_hex(4)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.replace(temp, final)

    def _last_hash(self) -> str:
        """The hash of the last complete line (read backwards from the end; the log may be large)."""
        try:
            with self.path.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                if size == 0:
                    return GENESIS
                block = 4096
                data = b""
                pos = size
                while pos > 0:
                    step = min(block, pos)
                    pos -= step
                    fh.seek(pos)
                    data = fh.read(step) + data
                    if data.rstrip(b"\n").count(b"\n") >= 1:
                        break
        except FileNotFoundError:
            return GENESIS
        last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
        try:
            value = json.loads(last)["hash"]
        except (ValueError, KeyError, TypeError):
            raise AuditError(
                f"the last line of {self.path} is not a valid audit entry; run `codectx audit verify`"
            ) from None
        return str(value)

    # ------------------------------------------------------------------ reading

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every entry in order; a malformed line is an AuditError naming it."""
        for number, raw in self._lines():
            try:
                entry = json.loads(raw)
            except ValueError:
                raise AuditError(f"{self.path} line {number} is not valid JSON") from None
            if not isinstance(entry, dict):
                raise AuditError(f"{self.path} line {number} is not an audit entry")
            yield entry

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise AuditError(f"cannot read the audit log {self.path}: {exc.strerror}") from None
        with fh:
            for number, raw in enumerate(fh, start=1):
                if raw.strip():
                    yield number, raw

    def last(self, n: int) -> list[dict[str, Any]]:
        tail: list[dict[str, Any]] = []
        for entry in self.entries():
            tail.append(entry)
            if len(tail) > n:
                tail.pop(0)
        return tail

    def get(self, entry_id: str) -> dict[str, Any]:
        for entry in self.entries():
            if entry.get("id") == entry_id:
                return entry
        raise AuditError(f"no audit entry with id {entry_id}")

    def payload(self, entry_id: str) -> bytes:
        """The exact bytes sent for an entry (only when payload keeping was on)."""
        if not _ID.match(entry_id):
            raise AuditError(f"'{entry_id}' is not an audit id (like 20260101T120000Z-0a1b2c3d)")
        entry = self.get(entry_id)
        digest = str(entry.get("sha256", ""))
        if not entry.get("payload") or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise AuditError(f"no payload kept for {entry_id} (privacy.keep_payloads was off)")
        path = self.payload_dir / f"{digest}.json"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise AuditError(
                f"no payload kept for {entry_id} (privacy.keep_payloads was off, or it was deleted)"
            ) from None
        if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
            raise AuditError(f"payload {path} does not match the sha256 recorded for {entry_id}")
        return data

    def verify(self) -> Verdict:
        """Check every link and hash (and kept payloads against their sha256)."""
        prev = GENESIS
        count = 0
        for number, raw in self._lines():
            count += 1
            try:
                entry = json.loads(raw)
                if not isinstance(entry, dict):
                    raise ValueError
            except ValueError:
                return Verdict(False, count - 1, number, None, "not valid JSON")
            entry_id = entry.get("id")
            if entry.get("prev") != prev:
                return Verdict(
                    False, count - 1, number, entry_id, "prev hash does not match the entry before it"
                )
            if entry.get("hash") != entry_hash(entry):
                return Verdict(False, count - 1, number, entry_id, "content does not match its hash (edited)")
            digest = str(entry.get("sha256", ""))
            if entry.get("payload") and re.fullmatch(r"[0-9a-f]{64}", digest):
                kept = self.payload_dir / f"{digest}.json"
                if kept.exists() and hashlib.sha256(kept.read_bytes()).hexdigest() != entry.get("sha256"):
                    return Verdict(False, count - 1, number, entry_id, f"payload {kept.name} was altered")
            prev = entry["hash"]
        return Verdict(True, count)

    def verify_or_raise(self) -> Verdict:
        verdict = self.verify()
        if not verdict.ok:
            raise AuditChainBroken(verdict.message())
        return verdict
