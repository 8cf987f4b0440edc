"""The audit log against an attacker who edits its files: 14 kinds of tampering, each detected and named.

A log of four requests (each a write-ahead entry plus its outcome, with kept
payloads) is tampered with one way per test; `audit verify` must fail with the
finding that names it, and for the kinds that hide traffic (entries cut off,
rewritten, head removed) the writer must refuse to log (and so to send) more.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from codectx.cli import main
from codectx.privacy.audit import GENESIS, AuditLog, entry_hash
from codectx.privacy.audithead import head_path
from codectx.privacy.egress import EgressGate, SourceSpan
from codectx.privacy.errors import AuditError
from codectx.settings import load_settings


def _gate(log: AuditLog) -> EgressGate:
    return EgressGate(load_settings(None, environ={}), log)


def _fill(log: AuditLog, n: int = 4) -> list[str]:
    gate = _gate(log)
    ids = []
    for i in range(n):
        prepared = gate.prepare(
            "http://127.0.0.1:9/v1/completions",
            {"prompt": f"def f{i}():\n    return {i}\n"},
            [SourceSpan(f"m{i}.py", 0, 1)],
        )
        intent = gate.intend(prepared)
        gate.record(prepared, True, "200", intent)
        ids.append(intent)
    return ids


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines))


def _rechain(lines: list[str], start: int, renumber: bool = False) -> list[str]:
    """Re-link and re-hash every entry from `start` on, as an attacker without the key would."""
    out = list(lines)
    prev = json.loads(out[start - 1])["hash"] if start else GENESIS
    for i in range(start, len(out)):
        entry = json.loads(out[i])
        entry["prev"] = prev
        if renumber:
            entry["seq"] = i
        entry.pop("hash")
        entry["hash"] = entry_hash(entry)
        prev = entry["hash"]
        out[i] = json.dumps(entry, separators=(",", ":"))
    return out


def _edit(path: Path, log: AuditLog) -> None:
    lines = _lines(path)
    entry = json.loads(lines[2])
    entry["endpoint"] = "http://elsewhere.example/v1/completions"
    lines[2] = json.dumps(entry, separators=(",", ":"))
    _write(path, lines)


def _delete_first(path: Path, log: AuditLog) -> None:
    _write(path, _lines(path)[1:])


def _delete_middle(path: Path, log: AuditLog) -> None:
    lines = _lines(path)
    del lines[3]
    _write(path, lines)


def _delete_last_n(path: Path, log: AuditLog) -> None:
    _write(path, _lines(path)[:-3])


def _delete_all(path: Path, log: AuditLog) -> None:
    path.unlink()


def _reorder(path: Path, log: AuditLog) -> None:
    lines = _lines(path)
    lines[2], lines[4] = lines[4], lines[2]
    _write(path, lines)


def _duplicate(path: Path, log: AuditLog) -> None:
    lines = _lines(path)
    lines.insert(3, lines[2])
    _write(path, lines)


def _truncate_line(path: Path, log: AuditLog) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])


def _edit_rehash_last(path: Path, log: AuditLog) -> None:
    lines = _lines(path)
    entry = json.loads(lines[-1])
    entry["status"] = "500"
    lines[-1] = json.dumps(entry, separators=(",", ":"))
    _write(path, _rechain(lines, len(lines) - 1))


def _forge(path: Path, log: AuditLog) -> None:
    # A whole new, internally consistent chain with the same number of entries.
    lines = _lines(path)
    forged = []
    for line in lines:
        entry = json.loads(line)
        entry["endpoint"] = entry.get("endpoint") and "http://127.0.0.1:9/v1/models"
        entry["time"] = "2020-01-01T00:00:00.000+00:00"
        forged.append(json.dumps(entry, separators=(",", ":")))
    _write(path, _rechain(forged, 0))


def _rechain_after_delete(path: Path, log: AuditLog) -> None:
    lines = _lines(path)
    del lines[4]
    _write(path, _rechain(lines, 4))


def _rechain_renumbered(path: Path, log: AuditLog) -> None:
    lines = _lines(path)
    del lines[2:4]
    _write(path, _rechain(lines, 2, renumber=True))


def _payload_edit(path: Path, log: AuditLog) -> None:
    digest = json.loads(_lines(path)[2])["sha256"]
    kept = log.payload_dir / f"{digest}.json"
    kept.write_bytes(kept.read_bytes().replace(b"return", b"RETURN"))


def _payload_delete(path: Path, log: AuditLog) -> None:
    digest = json.loads(_lines(path)[4])["sha256"]
    (log.payload_dir / f"{digest}.json").unlink()


def _head_removed(path: Path, log: AuditLog) -> None:
    head_path(path).unlink()


def _head_forged(path: Path, log: AuditLog) -> None:
    record = json.loads(head_path(path).read_text())
    record["entries"] -= 2
    head_path(path).write_text(json.dumps(record))


# kind -> (tamper, the finding verify must name, whether the writer must refuse to go on)
KINDS: dict[str, tuple[Callable[[Path, AuditLog], None], set[str], bool]] = {
    "edit": (_edit, {"edited"}, False),
    "delete-first": (_delete_first, {"deleted-first"}, True),
    "delete-middle": (_delete_middle, {"deleted"}, True),
    "delete-last-n": (_delete_last_n, {"deleted-last"}, True),
    "delete-all": (_delete_all, {"deleted-all"}, True),
    "reorder": (_reorder, {"reordered"}, False),
    "duplicate": (_duplicate, {"duplicate"}, True),
    "truncate-line": (_truncate_line, {"torn"}, True),
    "edit-rehash-last": (_edit_rehash_last, {"rehashed"}, True),
    "forge": (_forge, {"forged"}, True),
    "rechain": (_rechain_after_delete, {"deleted"}, True),
    "rechain-renumbered": (_rechain_renumbered, {"deleted-last"}, True),
    "payload-edit": (_payload_edit, {"payload-altered"}, False),
    "payload-delete": (_payload_delete, {"payload-deleted"}, False),
    "head-removed": (_head_removed, {"head-missing"}, True),
    "head-forged": (_head_forged, {"head-forged"}, True),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_of_tampering_is_detected_and_named(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    _fill(log)
    assert log.verify().ok
    tamper, findings, writer_refuses = KINDS[kind]
    tamper(path, log)
    verdict = AuditLog(path).verify()
    assert not verdict.ok, kind
    assert verdict.finding in findings, (kind, verdict.finding, verdict.reason)
    assert verdict.reason and verdict.message().startswith("audit log broken")
    # The command line says the same, exit 4, no traceback.
    assert main(["audit", "verify", "--log", str(path)]) == 4
    err = capsys.readouterr().err
    assert err.startswith("codectx: error: audit log broken") and verdict.reason in err
    assert main(["audit", "verify", "--json", "--log", str(path)]) == 4
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["finding"] == verdict.finding
    if writer_refuses:
        # A log that was cut or rewritten takes no new entry, so nothing more can be sent.
        with pytest.raises(AuditError, match="audit verify"):
            _fill(AuditLog(path), 1)


def test_the_suite_covers_the_fourteen_kinds_of_the_issue() -> None:
    wanted = {
        "edit", "delete-first", "delete-middle", "delete-last-n", "delete-all", "reorder", "duplicate",
        "truncate-line", "edit-rehash-last", "forge", "rechain", "payload-edit", "payload-delete",
        "head-removed",
    }  # fmt: skip
    assert wanted <= set(KINDS) and len(wanted) == 14


def test_torn_tail_after_the_head_is_moved_aside_and_the_chain_goes_on(tmp_path: Path) -> None:
    """What a writer killed mid-line leaves (after the head record) was never sent: repaired, kept aside."""
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    _fill(log, 2)
    with path.open("ab") as fh:
        fh.write(b'{"kind":"request","id":"20260101T000000Z-0000')  # no newline: a torn write
    verdict = log.verify()
    assert verdict.ok and any("incomplete" in n for n in verdict.notes)
    _fill(log, 1)
    assert log.verify().ok and log.verify().entries == 6
    (aside,) = tmp_path.glob("audit.jsonl.torn-*")
    assert aside.read_bytes().startswith(b'{"kind":"request"')


def test_garbage_after_the_head_is_moved_aside_but_a_damaged_anchored_line_stops_writing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit.jsonl"
    _fill(AuditLog(path), 1)
    with path.open("a") as fh:
        fh.write("{broken\n")
    _fill(AuditLog(path), 1)  # beyond the head: a killed writer's leftovers, kept aside
    assert AuditLog(path).verify().ok
    lines = _lines(path)
    lines[-1] = lines[-1][:-5] + "}"
    _write(path, lines)
    with pytest.raises(AuditError, match="audit verify"):
        _fill(AuditLog(path), 1)


def test_entry_written_after_the_head_by_a_killed_writer_is_adopted(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    _fill(log, 1)
    saved = head_path(path).read_bytes()
    _fill(log, 1)
    head_path(path).write_bytes(saved)  # as if the process died between the entry and its head
    verdict = log.verify()
    assert verdict.ok and any("after the head record" in n for n in verdict.notes)
    _fill(log, 1)
    verdict = log.verify()
    assert verdict.ok and verdict.entries == 6 and not verdict.notes


def test_rotation_keeps_the_whole_chain_verifiable(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, max_bytes=3000)
    ids = _fill(log, 8)
    segments = sorted(tmp_path.glob("audit.0*.jsonl"))
    assert len(segments) >= 2
    verdict = log.verify()
    assert verdict.ok, verdict.message()
    assert verdict.entries == 16 + len(segments)  # requests, outcomes and one rotate entry per segment
    assert json.loads(_lines(path)[0])["kind"] == "rotate"
    assert log.payload(ids[-1]).startswith(b"{")
    # An edit inside a rotated file, or its loss, shows.
    first = segments[0]
    original = first.read_bytes()
    first.write_bytes(original.replace(b"m0.py", b"m9.py"))
    bad = log.verify()
    assert not bad.ok and bad.finding == "segment-altered" and first.name in bad.reason
    first.unlink()
    bad = log.verify()
    assert not bad.ok and bad.finding == "segment-missing"


def test_rotate_and_restart_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "audit.jsonl"
    _fill(AuditLog(path), 2)
    assert main(["audit", "rotate", "--log", str(path)]) == 0
    assert "rotated" in capsys.readouterr().out
    _fill(AuditLog(path), 1)
    assert main(["audit", "verify", "--log", str(path)]) == 0
    _delete_last_n(path, AuditLog(path))
    with pytest.raises(AuditError):
        _fill(AuditLog(path), 1)
    assert main(["audit", "rotate", "--restart", "checked: entries cut by a test", "--log", str(path)]) == 0
    assert "kept as" in capsys.readouterr().out
    _fill(AuditLog(path), 1)
    verdict = AuditLog(path).verify()
    assert verdict.ok and any("restarted" in n and "cut by a test" in n for n in verdict.notes)
    assert list(tmp_path.glob("audit.broken-*.jsonl"))


def test_legacy_log_without_head_is_anchored_on_the_next_write(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    prev = GENESIS
    lines = []
    for i in range(2):  # the format before head records: no v, no seq, no kind
        entry = {"id": f"20260101T00000{i}Z-0000000{i}", "endpoint": "x", "bytes": 1, "prev": prev}
        entry["hash"] = entry_hash(entry)
        prev = entry["hash"]
        lines.append(json.dumps(entry))
    _write(path, lines)
    log = AuditLog(path)
    assert log.verify().ok and "older codectx" in log.verify().notes[0]
    _fill(log, 1)
    assert head_path(path).exists() and log.verify().ok and log.verify().entries == 4
