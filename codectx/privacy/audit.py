"""The audit log: what left the machine, written before it leaves.

One JSON line per event, hash-chained. A request gets its entry (`kind:
request`: method, endpoint, the byte count and sha256 of the exact bytes, the
absolute workspace root, each source's workspace path and real path, the
redaction events, never a value) written and fsynced BEFORE its first byte is
sent; each attempt's result is appended after it (`kind: outcome`). If the
entry cannot be written nothing is sent, so a process killed mid-request
still leaves the entry. Requests without a body that carry the API key (GET
/v1/models, /metrics) get the same entry with `bytes: 0`.

Every entry holds its sequence number, the previous entry's hash and its own
hash over its canonical JSON; the head record beside the log (`audit.head`,
codectx.privacy.audithead) anchors the count and the last hash under a MAC,
so deleting the last entries, the whole log or re-writing the chain shows
too (codectx.privacy.auditverify says what it found). Appends hold an flock
on `<log>.lock`. Before appending, the writer checks the log against its head:
a log that was cut or edited is refused (nothing is sent; `codectx audit
verify`, then `codectx audit rotate --restart`), while what a killed writer
left after the head (an entry never followed by a send, or a torn line) is
adopted or moved aside to `<log>.torn-<time>`.

Past `max_bytes` the log is rotated: renamed to `audit.<first>-<last>.jsonl`
and the new log starts with a `rotate` entry holding the old file's sha256,
size and entry count, chained to its last entry, so the chain stays
verifiable across files. With payload keeping on, the exact bytes are stored
as payloads/<sha256>.json, mode 0600.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codectx.privacy.audithead import Head, HeadDamaged, fsync_dir, read_head, write_head
from codectx.privacy.auditread import AuditReader, _last_id, _last_line_hash, _parse
from codectx.privacy.errors import AuditChainBroken, AuditError

GENESIS = "0" * 64
VERSION = 2
MAX_LOG_BYTES = 64 * 2**20
_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}\Z")
log = logging.getLogger("codectx.privacy.audit")
RESTART_HINT = (
    "run `codectx audit verify` to see what changed; `codectx audit rotate --restart` keeps the "
    "log aside and starts a new one"
)


def canonical(entry: dict[str, Any]) -> bytes:
    """The bytes an entry's hash is computed over (everything but `hash`)."""
    body = {k: v for k, v in entry.items() if k != "hash"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def entry_hash(entry: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(entry)).hexdigest()


def new_id() -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(4)}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class _State:
    """Where the chain stands: the next entry gets seq + 1 and prev = last_hash."""

    seq: int
    last_hash: str
    entries: int  # in the current file
    size: int  # bytes of the current file
    first_hash: str = GENESIS  # hash of the current file's first entry


class AuditLog(AuditReader):
    """Append-only, hash-chained, head-anchored JSONL; see the module docstring."""

    def __init__(
        self, path: Path | None = None, *, key_dir: Path | None = None, max_bytes: int = MAX_LOG_BYTES
    ) -> None:
        if path is None:
            from codectx.settings import state_dir

            path = state_dir() / "audit.jsonl"
        self.path = Path(path)
        self.payload_dir = self.path.parent / "payloads"
        self.key_dir = Path(key_dir) if key_dir is not None else self.path.parent
        self.max_bytes = max_bytes
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    # ------------------------------------------------------------------ writing

    def append(
        self, entry: dict[str, Any], payload: bytes | None = None, *, sync_payload: bool = True
    ) -> dict[str, Any]:
        """Chain and durably write one entry (its payload first, if given); returns the written entry.

        Raises AuditError when the entry cannot be written or the log does not match its head.
        With `sync_payload=False` the payload reaches the disk later (`sync_payload`): a request's
        first byte waits for its entry's fsync, not for the copy of its bytes.
        """
        entry = dict(entry)
        entry.setdefault("kind", "request")
        entry.setdefault("id", new_id())
        entry.setdefault("time", _now())
        if not _ID.match(str(entry["id"])):
            raise AuditError(f"invalid audit id {entry['id']!r}")
        self._ensure_folder()
        if payload is not None:
            entry["sha256"] = hashlib.sha256(payload).hexdigest()
            self._write_payload(entry["sha256"], payload, sync_payload)
            entry["payload"] = True
        with self._locked():
            state = self._checked_state()
            if state.size > self.max_bytes:
                state = self._rotate(state)
            return self._write(entry, state)

    def outcome(self, request_id: str, sent: bool, status: str) -> dict[str, Any]:
        """Append what happened to a request whose entry was written before it was sent."""
        return self.append({"kind": "outcome", "request": request_id, "sent": bool(sent), "status": status})

    def rotate(self, restart_reason: str | None = None) -> Path | None:
        """Start a new log file; returns the file the old entries are now in (None: nothing to rotate).

        With `restart_reason`, the current log is not checked: it is kept aside as
        `audit.broken-<time>.jsonl` (with its head) and a new chain starts whose first entry
        names it and the reason. This is how a user resumes after `verify` found a problem.
        """
        self._ensure_folder()
        with self._locked():
            if restart_reason is None:
                state = self._checked_state()
                if state.entries == 0:
                    return None
                self._rotate(state)
                return self._segment_name(state)
            return self._restart(restart_reason)

    def _ensure_folder(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise AuditError(
                f"cannot create the audit log folder {self.path.parent}: {exc.strerror}"
            ) from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise AuditError(f"cannot write the audit log {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _write(self, entry: dict[str, Any], state: _State) -> dict[str, Any]:
        entry["v"] = VERSION
        entry["seq"] = state.seq + 1
        entry["prev"] = state.last_hash
        entry.pop("hash", None)
        entry["hash"] = entry_hash(entry)
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                written = os.write(fd, line)
                if written != len(line):
                    os.ftruncate(fd, state.size)  # never leave half an entry behind
                    raise AuditError(f"short write to the audit log {self.path} (disk full?)")
                os.fsync(fd)
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
            if state.size == 0:
                fsync_dir(self.path.parent)  # a new file: its name must survive a crash too
        except OSError as exc:
            raise AuditError(f"cannot write the audit log {self.path}: {exc.strerror}") from None
        first = entry["hash"] if state.entries == 0 else state.first_hash
        write_head(
            self.path,
            self.key_dir,
            Head(state.entries + 1, entry["seq"], size, entry["hash"], entry["id"], first),
        )
        return entry

    def _write_payload(self, digest: str, payload: bytes, sync: bool = True) -> None:
        try:
            self.payload_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            final = self.payload_dir / f"{digest}.json"
            if final.exists():
                return
            temp = self.payload_dir / f".{digest}.{secrets.token_hex(4)}.tmp"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
                fh.flush()
                if sync:
                    os.fsync(fh.fileno())
            os.replace(temp, final)
        except OSError as exc:
            raise AuditError(f"cannot write the audit payload for {digest[:12]}: {exc.strerror}") from None

    def sync_payload(self, digest: str) -> None:
        """Make a payload written with `sync_payload=False` durable (best effort: it is a copy)."""
        try:
            fd = os.open(self.payload_dir / f"{digest}.json", os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ the chain's state

    def _checked_state(self) -> _State:
        """The chain's state after checking the log against its head (under the lock).

        Refuses (AuditError) a log that was cut or edited; adopts what a killed writer
        left after the head.
        """
        try:
            head = read_head(self.path, self.key_dir)
        except HeadDamaged as exc:
            raise AuditError(f"{exc}; {RESTART_HINT}") from None
        size = self._size()
        if head is None:
            if size == 0:
                # A new log: its (empty) head comes first, so from now on a missing head is news.
                write_head(self.path, self.key_dir, Head(0, -1, 0, GENESIS, "", GENESIS))
                return _State(-1, GENESIS, 0, 0)
            return self._adopt_legacy()
        if size == 0 and head.size > 0:
            pending = self._pending_rotation(head)
            if pending is not None:
                return pending
            raise AuditError(
                f"the audit log {self.path} is missing or empty but its head record names "
                f"{head.entries} entries; {RESTART_HINT}"
            )
        if size < head.size:
            raise AuditError(
                f"the audit log {self.path} is shorter ({size} bytes) than its head record says "
                f"({head.size} bytes): entries were cut off; {RESTART_HINT}"
            )
        if head.size and _last_line_hash(self.path, head.size) != head.last_hash:
            raise AuditError(f"the audit log {self.path} does not match its head record; {RESTART_HINT}")
        state = _State(head.seq, head.last_hash, head.entries, head.size, head.first_hash)
        if size > head.size:
            state = self._adopt_tail(state, size)
        return state

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise AuditError(f"cannot read the audit log {self.path}: {exc.strerror}") from None

    def _adopt_tail(self, state: _State, size: int) -> _State:
        """Entries after the head were written by a process that died before sending: keep the
        complete ones that chain on, move the rest (a torn line) aside."""
        with self.path.open("rb") as fh:
            fh.seek(state.size)
            tail = fh.read(size - state.size)
        good = 0
        for raw in tail.splitlines(keepends=True):
            entry = _parse(raw) if raw.endswith(b"\n") else None
            if (
                entry is None
                or entry.get("prev") != state.last_hash
                or entry.get("hash") != entry_hash(entry)
                or entry.get("seq") != state.seq + 1
            ):
                break
            good += len(raw)
            first = str(entry["hash"]) if state.entries == 0 else state.first_hash
            state = _State(state.seq + 1, str(entry["hash"]), state.entries + 1, state.size + len(raw), first)
        if good < len(tail):
            aside = self.path.with_name(f"{self.path.name}.torn-{new_id()}")
            fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(tail[good:])
                out.flush()
                os.fsync(out.fileno())
            os.truncate(self.path, state.size)
            log.warning(
                "codectx: the audit log ended in an incomplete entry (a process died while writing it; "
                "nothing was sent for it); its %d bytes were moved to %s",
                len(tail) - good,
                aside,
            )
        if good:
            last_id = _last_id(self.path, state.size)
            head = Head(state.entries, state.seq, state.size, state.last_hash, last_id, state.first_hash)
            write_head(self.path, self.key_dir, head)
        return state

    def _adopt_legacy(self) -> _State:
        """A log from before head records: anchor it if its chain holds and none of it is newer."""
        from codectx.privacy.auditverify import verify_log

        count = 0
        last = first = GENESIS
        for _, raw, _ in self._lines(self.path):
            entry = _parse(raw)
            if entry is None or entry.get("v", 1) >= VERSION:
                raise AuditError(
                    f"the audit head record beside {self.path} is missing (removed?); {RESTART_HINT}"
                )
            count += 1
            last = str(entry.get("hash"))
            first = last if count == 1 else first
        verdict = verify_log(self, legacy_ok=True)
        if not verdict.ok:
            raise AuditChainBroken(f"{verdict.message()}; {RESTART_HINT}")
        size = self._size()
        write_head(
            self.path, self.key_dir, Head(count, count - 1, size, last, _last_id(self.path, size), first)
        )
        return _State(count - 1, last, count, size, first)

    # ------------------------------------------------------------------ rotation

    def _segment_name(self, state: _State) -> Path:
        first = state.seq - state.entries + 1
        stem = self.path.name.rsplit(".", 1)[0]
        return self.path.with_name(f"{stem}.{first:08d}-{state.seq:08d}.jsonl")

    def _rotate(self, state: _State) -> _State:
        segment = self._segment_name(state)
        try:
            os.rename(self.path, segment)
        except OSError as exc:
            raise AuditError(f"cannot rotate the audit log {self.path}: {exc.strerror}") from None
        return self._link_segment(segment, state)

    def _link_segment(self, segment: Path, state: _State) -> _State:
        digest = hashlib.sha256(segment.read_bytes()).hexdigest()
        entry = {
            "kind": "rotate",
            "id": new_id(),
            "time": _now(),
            "segment": segment.name,
            "segment_sha256": digest,
            "segment_entries": state.entries,
            "segment_size": state.size,
        }
        written = self._write(entry, _State(state.seq, state.last_hash, 0, 0))
        return _State(int(written["seq"]), str(written["hash"]), 1, self._size(), str(written["hash"]))

    def _pending_rotation(self, head: Head) -> _State | None:
        """A rotation that died between renaming the old file and starting the new one."""
        state = _State(head.seq, head.last_hash, head.entries, head.size, head.first_hash)
        segment = self._segment_name(state)
        if (
            segment.is_file()
            and segment.stat().st_size == head.size
            and _last_line_hash(segment, head.size) == head.last_hash
        ):
            return self._link_segment(segment, state)
        return None

    def _restart(self, reason: str) -> Path | None:
        from codectx.privacy.audithead import head_path

        stamp = new_id()
        stem = self.path.name.rsplit(".", 1)[0]
        kept = self.path.with_name(f"{stem}.broken-{stamp}.jsonl")
        digest = None
        if self.path.exists():
            digest = hashlib.sha256(self.path.read_bytes()).hexdigest()
            os.rename(self.path, kept)
        head = head_path(self.path)
        if head.exists():
            os.rename(head, kept.with_suffix(".head"))
        entry = {
            "kind": "restart",
            "id": new_id(),
            "time": _now(),
            "previous": kept.name if digest else None,
            "previous_sha256": digest,
            "reason": reason,
        }
        self._write(entry, _State(-1, GENESIS, 0, 0))
        return kept if digest else None
