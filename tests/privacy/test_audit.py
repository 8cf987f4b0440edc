"""The audit log: hash chain, tamper detection (API and CLI), concurrency, payloads, no secrets."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codectx.cli import main
from codectx.privacy.audit import GENESIS, AuditLog
from codectx.privacy.egress import EgressGate, SourceSpan
from codectx.settings import load_settings

SECRET = "xoxb-" + "123456789012-123456789012-" + "Qz7Lm2Nx8Rt4Vb6Kc1Wd9Hf3"


def _fill(log: AuditLog, n: int) -> list[str]:
    gate = EgressGate(load_settings(None, environ={}), log)
    ids = []
    for i in range(n):
        prompt = f"# file {i}\nSLACK = '{SECRET}'\nprint({i})\n"
        prepared = gate.prepare(
            "http://127.0.0.1:9/v1/completions", {"prompt": prompt}, [SourceSpan(f"m{i}.py", 0, 2)]
        )
        ids.append(gate.record(prepared, True, "200"))
    return ids


def test_chain_links_every_entry(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    ids = _fill(log, 4)
    entries = list(log.entries())
    assert [e["id"] for e in entries] == ids
    assert entries[0]["prev"] == GENESIS
    for before, after in itertools.pairwise(entries):
        assert after["prev"] == before["hash"]
    verdict = log.verify()
    assert verdict.ok and verdict.entries == 4
    assert (tmp_path / "audit.jsonl").stat().st_mode & 0o777 == 0o600


def test_entries_never_contain_the_secret(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    ids = _fill(log, 3)
    assert SECRET not in (tmp_path / "audit.jsonl").read_text()
    for path in (tmp_path / "payloads").iterdir():
        assert SECRET[6:30] not in path.read_text()
        assert path.stat().st_mode & 0o777 == 0o600
    assert b"[REDACTED:slack-token:" in log.payload(ids[0])


@pytest.mark.parametrize(
    "tamper",
    ["edit_field", "delete_entry", "swap_entries", "edit_hash_too", "garbage_line", "edit_payload"],
)
def test_tampering_is_detected(tmp_path: Path, tamper: str) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    _fill(log, 4)
    path = tmp_path / "audit.jsonl"
    lines = path.read_text().splitlines()
    entry = json.loads(lines[1])
    if tamper == "edit_field":
        entry["bytes"] += 1
        lines[1] = json.dumps(entry)
    elif tamper == "delete_entry":
        del lines[1]
    elif tamper == "swap_entries":
        lines[1], lines[2] = lines[2], lines[1]
    elif tamper == "edit_hash_too":
        from codectx.privacy.audit import entry_hash

        entry["endpoint"] = "http://evil.example/v1"
        entry["hash"] = entry_hash(entry)  # recomputed, but the next entry's prev no longer matches
        lines[1] = json.dumps(entry)
    elif tamper == "garbage_line":
        lines[1] = "{not json"
    elif tamper == "edit_payload":
        kept = tmp_path / "payloads" / f"{entry['sha256']}.json"
        kept.write_bytes(kept.read_bytes().replace(b"file", b"FILE"))
    path.write_text("\n".join(lines) + "\n")
    verdict = log.verify()
    assert not verdict.ok
    assert verdict.broken_line in (2, 3)
    assert "line" in verdict.message()


def test_verify_via_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log_path = tmp_path / "audit.jsonl"
    ids = _fill(AuditLog(log_path), 3)
    assert main(["audit", "verify", "--log", str(log_path)]) == 0
    assert "3 entries" in capsys.readouterr().out
    lines = log_path.read_text().splitlines()
    entry = json.loads(lines[2])
    entry["sources"][0]["path"] = "other.py"
    lines[2] = json.dumps(entry)
    log_path.write_text("\n".join(lines) + "\n")
    assert main(["audit", "verify", "--log", str(log_path)]) == 4
    err = capsys.readouterr().err
    assert f"line 3 (entry {ids[2]})" in err and err.startswith("codectx: error:")
    assert main(["audit", "verify", "--json", "--log", str(log_path)]) == 4
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["broken_id"] == ids[2]


def test_show_and_payload_via_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log_path = tmp_path / "audit.jsonl"
    ids = _fill(AuditLog(log_path), 3)
    assert main(["audit", "show", "--last", "2", "--log", str(log_path)]) == 0
    out = capsys.readouterr().out
    assert ids[1] in out and ids[2] in out and ids[0] not in out
    assert "slack-token x1" in out and "m2.py:1-3" in out
    assert main(["audit", "show", "--json", "--log", str(log_path)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == ids
    assert main(["audit", "payload", ids[0], "--log", str(log_path)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["prompt"].startswith("# file 0\nSLACK = '[REDACTED:slack-token:")
    assert main(["audit", "payload", "../../etc/passwd", "--log", str(log_path)]) == 1
    assert "not an audit id" in capsys.readouterr().err
    assert main(["audit", "payload", "20260101T000000Z-00000000", "--log", str(log_path)]) == 1
    assert "no audit entry" in capsys.readouterr().err


def test_show_escapes_a_file_names_terminal_controls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Red team 6 (M1): a workspace file named `notes<ESC>[2K<CR>...files: none<LF>x.py` (git checks
    such names out) rewrote the `files:` line of `audit show` on a terminal."""
    forged = "notes\x1b[2K\r\x1b[1A\x1b[2K    files: none  (workspace elsewhere)\nx.py"
    log = AuditLog(tmp_path / "audit.jsonl")
    gate = EgressGate(load_settings(None, environ={}), log)
    prepared = gate.prepare("http://127.0.0.1:9/v1/completions", {"prompt": "x"}, [SourceSpan(forged, 0, 1)])
    gate.record(prepared, True, "200")
    assert main(["audit", "show", "--log", str(log.path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and len(out.strip().splitlines()) == 3
    assert "files: notes\\x1b[2K\\x0d" in out and "\\x0ax.py:1-2" in out


def test_empty_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    assert main(["audit", "show", "--log", str(tmp_path / "empty.jsonl")]) == 0
    assert "no requests logged yet" in capsys.readouterr().out
    assert AuditLog(tmp_path / "none.jsonl").verify().ok


def test_show_and_payload_of_a_named_log_that_does_not_exist_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`audit show --log /typo` said "no requests logged yet", as if the log were empty."""
    typo = str(tmp_path / "typo.jsonl")
    assert main(["audit", "show", "--log", typo]) == 2
    assert "no such audit log" in capsys.readouterr().err
    assert main(["audit", "payload", "20260101T000000Z-00000000", "--log", typo]) == 2
    assert "no such audit log" in capsys.readouterr().err


def test_verify_of_a_named_log_that_does_not_exist_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`audit verify --log /typo/audit.jsonl` answered "ok": true, "entries": 0, as if clean."""
    typo = tmp_path / "typo" / "audit.jsonl"
    assert main(["audit", "verify", "--log", str(typo)]) == 2
    assert "no such audit log" in capsys.readouterr().err
    assert main(["audit", "verify", "--json", "--log", str(typo)]) == 2
    assert json.loads(capsys.readouterr().out)["exit_code"] == 2
    # The default log before the first request: nothing logged yet, nothing wrong.
    assert main(["audit", "verify", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["entries"] == 0
    # A named log that is gone while its head record stays is a break, as before.
    log_path = tmp_path / "audit.jsonl"
    _fill(AuditLog(log_path), 2)
    log_path.unlink()
    assert main(["audit", "verify", "--log", str(log_path)]) == 4


def _append_many(path: str, worker: int, count: int) -> None:
    log = AuditLog(Path(path))
    for i in range(count):
        log.append(
            {"endpoint": f"w{worker}", "bytes": i, "sha256": "0" * 64, "sources": [], "redactions": []}
        )


def test_concurrent_appends_keep_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(path), w, 40)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    log = AuditLog(path)
    verdict = log.verify()
    assert verdict.ok, verdict.message()
    assert verdict.entries == 160
    assert len({e["id"] for e in log.entries()}) == 160


def test_default_location_is_state_dir() -> None:
    from codectx.settings import state_dir

    log = AuditLog()
    assert log.path == state_dir() / "audit.jsonl"


def test_cli_subprocess_verify_exit_code(tmp_path: Path) -> None:
    log_path = tmp_path / "audit.jsonl"
    _fill(AuditLog(log_path), 2)
    env = dict(os.environ)
    run = [sys.executable, "-m", "codectx", "audit", "verify", "--log", str(log_path)]
    ok = subprocess.run(run, capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0, ok.stderr
    log_path.write_text(log_path.read_text().replace('"status":"200"', '"status":"500"', 1))
    bad = subprocess.run(run, capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 4
    assert "broken at line 1" in bad.stderr and "Traceback" not in bad.stderr
