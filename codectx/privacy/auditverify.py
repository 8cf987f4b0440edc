"""`audit verify`: check the audit log, its head record, payloads and rotated files, and say what changed.

Each finding has a code and a sentence naming the line and entry: an edited
entry, a torn line, entries out of order, a duplicate, entries missing at the
start, in the middle (a sequence gap) or at the end (fewer than the head
record counts), the whole log gone, the last entry re-hashed or a chain
forged (the head record's hash does not match), a payload altered or
deleted, a rotated file altered or missing, and a head record that is gone
or does not carry this install's MAC. Entries after the head record (left
by a process that died before sending) and a restarted chain are notes, not
failures.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codectx.privacy.audithead import Head, HeadDamaged, read_head

if TYPE_CHECKING:
    from codectx.privacy.auditread import AuditReader

_DIGEST = re.compile(r"[0-9a-f]{64}\Z")


@dataclass(frozen=True)
class Verdict:
    ok: bool
    entries: int
    broken_line: int | None = None  # 1-based line of the first bad entry
    broken_id: str | None = None
    reason: str = ""
    finding: str = ""  # a short code: edited, torn, reordered, duplicate, deleted-first, ...
    file: str = ""  # the file the finding is in (the log or a rotated segment)
    notes: tuple[str, ...] = field(default=())

    def message(self) -> str:
        if self.ok:
            text = f"audit log intact: {self.entries} entries, hash chain verified against its head record"
            return text + "".join(f"\n  note: {n}" for n in self.notes)
        where = f" at line {self.broken_line} (entry {self.broken_id or '?'})" if self.broken_line else ""
        return f"audit log broken{where}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "entries": self.entries,
            "finding": self.finding or None,
            "broken_line": self.broken_line,
            "broken_id": self.broken_id,
            "file": self.file or None,
            "reason": self.reason,
            "notes": list(self.notes),
        }


class _Broken(Exception):
    def __init__(
        self, finding: str, reason: str, line: int | None = None, entry_id: str | None = None
    ) -> None:
        super().__init__(reason)
        self.finding, self.reason, self.line, self.entry_id = finding, reason, line, entry_id
        self.file = ""


@dataclass
class _Walk:
    """One file's entries: (line number, end offset, entry)."""

    rows: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)
    torn: tuple[int, int] | None = None  # (line, start offset) of a cut-short last line


def verify_log(log: AuditReader, legacy_ok: bool = False) -> Verdict:
    notes: list[str] = []
    file = str(log.path)
    try:
        head_error = ""
        try:
            head = read_head(log.path, log.key_dir)
        except HeadDamaged as exc:
            head, head_error = None, str(exc)
        walk = _read(log.path)
        count = _check_chain(log, log.path, walk, notes, expect_prev=None)
        if head_error:
            raise _Broken("head-forged", head_error)
        _check_head(walk, head, notes, legacy_ok)
        count += _segment_entries(walk)
    except _Broken as exc:
        file = exc.file or file
        return Verdict(False, 0, exc.line, exc.entry_id, exc.reason, exc.finding, file, tuple(notes))
    return Verdict(True, count, notes=tuple(notes), file=file)


def _read(path: Path) -> _Walk:
    from codectx.privacy.auditread import AuditReader, _parse

    walk = _Walk()
    lines = list(AuditReader._lines(path))
    for i, (number, raw, end) in enumerate(lines):
        entry = _parse(raw)
        if entry is None:
            if i == len(lines) - 1 and not raw.endswith(b"\n"):
                walk.torn = (number, end - len(raw))
                break
            raise _Broken("torn", f"line {number} is not a valid entry (edited or cut)", number)
        walk.rows.append((number, end, entry))
    return walk


def _check_chain(log: AuditReader, path: Path, walk: _Walk, notes: list[str], expect_prev: str | None) -> int:
    """Links, hashes, sequence numbers and payloads of one file; returns its entry count."""
    from codectx.privacy.audit import entry_hash

    seen: dict[str, int] = {}
    hashes = {str(e.get("hash")): n for n, _, e in walk.rows}
    prev: str | None = None
    prev_seq: int | None = None
    for index, (number, _, entry) in enumerate(walk.rows):
        eid = str(entry.get("id") or "?")
        if entry.get("hash") != entry_hash(entry):
            raise _Broken("edited", "its content does not match its hash (edited)", number, eid)
        digest = str(entry["hash"])
        if digest in seen:
            raise _Broken("duplicate", f"it duplicates line {seen[digest]}", number, eid)
        seen[digest] = number
        link = entry.get("prev")
        seq = entry.get("seq") if isinstance(entry.get("seq"), int) else None
        if index == 0:
            _check_first(log, path, entry, number, notes, expect_prev)
        elif link != prev:
            if link in hashes and hashes[link] > number:
                raise _Broken(
                    "reordered", f"entries are out of order (it follows line {hashes[link]})", number, eid
                )
            missing = (
                f" (sequence {prev_seq + 1}..{seq - 1})" if prev_seq is not None and seq is not None else ""
            )
            raise _Broken("deleted", f"the entry before it is missing{missing}: deleted", number, eid)
        if index and seq is not None and prev_seq is not None and seq != prev_seq + 1:
            raise _Broken(
                "deleted",
                f"sequence {prev_seq + 1}..{seq - 1} is missing: entries were deleted and the chain "
                "re-hashed",
                number,
                eid,
            )
        _check_payload(log, entry, number, eid)
        prev, prev_seq = digest, seq
    return len(walk.rows)


def _check_first(
    log: AuditReader,
    path: Path,
    entry: dict[str, Any],
    number: int,
    notes: list[str],
    expect_prev: str | None,
) -> None:
    from codectx.privacy.audit import GENESIS

    eid = str(entry.get("id") or "?")
    kind = entry.get("kind")
    if expect_prev is not None and entry.get("prev") != expect_prev:
        raise _Broken(
            "segment-altered", f"{path.name} does not continue the chain of the file before it", number, eid
        )
    if kind == "rotate":
        _check_segment(log, path, entry, number, notes)
        return
    if kind == "restart":
        if entry.get("prev") != GENESIS:
            raise _Broken("edited", "a restarted chain must start from the genesis hash", number, eid)
        kept = entry.get("previous")
        notes.append(
            f"the chain was restarted at {entry.get('time')}: {entry.get('reason')}"
            + (f" (the old log is kept as {kept}, not verified)" if kept else "")
        )
        return
    if entry.get("prev") != GENESIS:
        seq = entry.get("seq")
        what = f"entries 0..{seq - 1}" if isinstance(seq, int) and seq > 0 else "entries"
        raise _Broken(
            "deleted-first", f"the log does not start the chain: {what} before it were deleted", number, eid
        )


def _check_segment(
    log: AuditReader, path: Path, entry: dict[str, Any], number: int, notes: list[str]
) -> None:
    """A rotated file: present, unchanged (sha256), its own chain sound, ending where this one begins."""
    eid = str(entry.get("id") or "?")
    name = str(entry.get("segment") or "")
    segment = path.with_name(Path(name).name)
    if not segment.is_file():
        raise _Broken("segment-missing", f"the rotated log {name} is missing (deleted)", number, eid)
    if hashlib.sha256(segment.read_bytes()).hexdigest() != entry.get("segment_sha256"):
        raise _Broken(
            "segment-altered", f"the rotated log {name} was altered (its sha256 changed)", number, eid
        )
    walk = _read(segment)
    try:
        _check_chain(log, segment, walk, notes, expect_prev=None)
    except _Broken as exc:
        exc.reason = f"in the rotated log {name}: {exc.reason}"
        exc.file = exc.file or str(segment)
        raise
    last = walk.rows[-1][2] if walk.rows else None
    if last is None or last.get("hash") != entry.get("prev"):
        raise _Broken(
            "segment-altered", f"the rotated log {name} does not end where this log begins", number, eid
        )


def _segment_entries(walk: _Walk) -> int:
    """Entries in the rotated files before this one (their counts are recorded in the chain)."""
    total = 0
    if walk.rows and walk.rows[0][2].get("kind") == "rotate":
        first = walk.rows[0][2]
        total = int(first.get("segment_entries") or 0)
        seq = first.get("seq")
        if isinstance(seq, int):
            total = seq  # every entry since the first ever (sequence numbers continue across files)
    return total


def _check_payload(log: AuditReader, entry: dict[str, Any], number: int, eid: str) -> None:
    digest = str(entry.get("sha256", ""))
    if not entry.get("payload") or not _DIGEST.match(digest):
        return
    kept = log.payload_dir / f"{digest}.json"
    try:
        data = kept.read_bytes()
    except FileNotFoundError:
        raise _Broken("payload-deleted", f"its payload {kept.name} was deleted", number, eid) from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise _Broken("payload-altered", f"its payload {kept.name} was altered", number, eid)


def _check_head(walk: _Walk, head: Head | None, notes: list[str], legacy_ok: bool) -> None:
    rows = walk.rows
    if head is None:
        if not rows and walk.torn is None:
            return
        if any(int(e.get("v", 1)) >= 2 for _, _, e in rows) or walk.torn is not None:
            raise _Broken(
                "head-missing",
                f"the head record (audit.head) is missing: the log holds {len(rows)} entries, and every "
                "entry written since head records exist updates it (removed?)",
            )
        if not legacy_ok:
            notes.append("written by an older codectx without a head record; the next entry anchors it")
        return
    if not rows and head.entries == 0:
        if walk.torn is not None:
            notes.append("the only line is incomplete (a process died writing it; nothing was sent for it)")
        return
    if not rows:
        raise _Broken("deleted-all", f"all {head.entries} entries named by the head record were deleted")
    if head.size == 0 and head.entries == 0:
        anchored: int | None = -1  # a new log's head, written before its first entry
    else:
        anchored = next((i for i, (_, end, _) in enumerate(rows) if end == head.size), None)
    if (
        anchored is not None
        and (anchored == -1 or rows[anchored][2].get("hash") == head.last_hash)
        and (anchored + 1 == head.entries)
    ):
        extra = len(rows) - anchored - 1
        if extra:
            notes.append(
                f"{extra} entr{'y' if extra == 1 else 'ies'} after the head record (written by a process "
                "that died before sending; the next write anchors them)"
            )
        if walk.torn is not None:
            if walk.torn[1] < head.size:
                raise _Broken("torn", "the last line was cut short (truncated)", walk.torn[0])
            notes.append("the last line is incomplete (a process died writing it; nothing was sent for it)")
        return
    if walk.torn is not None and walk.torn[1] < head.size:
        raise _Broken("torn", "the last line was cut short (truncated)", walk.torn[0])
    number, _, last = rows[-1]
    eid = str(last.get("id") or "?")
    seq = last.get("seq")
    if rows[0][2].get("hash") != head.first_hash:
        raise _Broken(
            "forged",
            f"the log's first entry is not the one its head record names: the chain was replaced "
            f"(forged); the head record names {head.entries} entries ending in {head.last_id}",
            rows[0][0],
            str(rows[0][2].get("id") or "?"),
        )
    if isinstance(seq, int) and seq < head.seq:
        raise _Broken(
            "deleted-last",
            f"the log ends at sequence {seq} but its head record names sequence {head.seq} "
            f"({head.last_id}): the last {head.seq - seq} entries were deleted",
            number,
            eid,
        )
    if isinstance(seq, int) and seq == head.seq:
        raise _Broken(
            "rehashed",
            "the last entry does not match the hash in the head record: it was edited and re-hashed, "
            "or the log was rewritten",
            number,
            eid,
        )
    raise _Broken(
        "forged",
        f"the log does not match its head record ({head.entries} entries ending in {head.last_id}): "
        "it was rewritten or replaced (forged chain)",
        number,
        eid,
    )
