"""Reading the audit log: its lines, entries, requests with their outcomes, kept payloads, `verify`.

`AuditLog` (codectx.privacy.audit) is an AuditReader that also writes; the
reader needs only `path` and `payload_dir`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codectx.privacy.errors import AuditChainBroken, AuditError

_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}\Z")


class AuditReader:
    path: Path
    payload_dir: Path
    key_dir: Path

    @staticmethod
    def _lines(path: Path) -> Iterator[tuple[int, bytes, int]]:
        """(1-based line number, raw line, byte offset of its end) of each non-blank line."""
        try:
            fh = path.open("rb")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise AuditError(f"cannot read the audit log {path}: {exc.strerror}") from None
        with fh:
            offset = 0
            for number, raw in enumerate(fh, start=1):
                offset += len(raw)
                if raw.strip():
                    yield number, raw, offset

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every entry of the current file in order; a malformed line is an AuditError naming it."""
        for number, raw, _ in self._lines(self.path):
            entry = _parse(raw)
            if entry is None:
                raise AuditError(
                    f"{self.path} line {number} is not an audit entry (run `codectx audit verify`)"
                )
            yield entry

    def requests(self) -> list[dict[str, Any]]:
        """Request entries with their outcomes folded in (`sent`, `status`, `outcomes`)."""
        out: list[dict[str, Any]] = []
        by_id: dict[str, dict[str, Any]] = {}
        for entry in self.entries():
            kind = entry.get("kind", "request")
            if kind == "request":
                item = dict(entry)
                item.setdefault("outcomes", [])
                out.append(item)
                by_id[str(entry.get("id"))] = item
            elif kind == "outcome" and str(entry.get("request")) in by_id:
                item = by_id[str(entry["request"])]
                item["outcomes"].append(
                    {"time": entry.get("time"), "sent": entry.get("sent"), "status": entry.get("status")}
                )
                item["sent"] = bool(item.get("sent")) or bool(entry.get("sent"))
                item["status"] = entry.get("status")
        return out

    def last(self, n: int) -> list[dict[str, Any]]:
        return self.requests()[-n:]

    def get(self, entry_id: str) -> dict[str, Any]:
        for entry in self.requests():
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
            raise AuditError(f"the payload of {entry_id} was deleted ({path} is missing)") from None
        if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
            raise AuditError(f"payload {path} does not match the sha256 recorded for {entry_id}")
        return data

    def verify(self) -> Any:
        """Check every link, hash, payload and rotated file against the head record: a Verdict."""
        from codectx.privacy.auditverify import verify_log

        return verify_log(self)

    def verify_or_raise(self) -> Any:
        verdict = self.verify()
        if not verdict.ok:
            raise AuditChainBroken(verdict.message())
        return verdict


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def _last_line(path: Path, end: int) -> bytes:
    """The last line of `path` before byte `end` (read backwards: the log may be large)."""
    with path.open("rb") as fh:
        data = b""
        pos = end
        while pos > 0:
            step = min(4096, pos)
            pos -= step
            fh.seek(pos)
            data = fh.read(step) + data
            if data.rstrip(b"\n").count(b"\n") >= 1:
                break
    return data.rstrip(b"\n").rsplit(b"\n", 1)[-1]


def _last_line_hash(path: Path, end: int) -> str | None:
    entry = _parse(_last_line(path, end))
    return str(entry.get("hash")) if entry is not None else None


def _last_id(path: Path, end: int) -> str:
    entry = _parse(_last_line(path, end)) if end else None
    return str(entry.get("id", "")) if entry is not None else ""
