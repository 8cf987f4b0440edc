"""The egress gate: exact bytes, whole-body redaction, policy, fail-closed, audit records."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from codectx.privacy.audit import AuditLog
from codectx.privacy.egress import EgressGate, PreparedRequest, SourceSpan
from codectx.privacy.errors import EgressBlocked
from codectx.privacy.redact import RedactionResult, Redactor
from codectx.settings import Settings, load_settings

GH = "ghp_" + "Qz7" * 12
AWS_ID = "AKIA" + "QX7MZ2KD4HFW6PLN"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "\n".join(["MIIEowIBAAKCAQEAq8Rz2LmN4vXw7TyB1cKd9Fh"] * 4)
    + "\n-----END RSA PRIVATE KEY-----"
)
ENDPOINT = "http://127.0.0.1:9/v1/completions"


def _settings(**privacy: Any) -> Settings:
    return load_settings(None, {f"privacy.{k}": v for k, v in privacy.items()}, environ={})


def _gate(tmp_path: Path, **privacy: Any) -> EgressGate:
    return EgressGate(_settings(**privacy), AuditLog(tmp_path / "audit.jsonl"))


def _body(prompt: str) -> dict[str, Any]:
    return {
        "model": "qwen",
        "prompt": prompt,
        "max_tokens": 16,
        "temperature": 0.2,
        "stop": ["<|endoftext|>"],
    }


def test_content_is_exact_compact_utf8_json(tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    body = _body("def grüß():\n    return 'ünïcödé ✓'\n")
    prepared = gate.prepare(ENDPOINT, body, [SourceSpan("src/a.py", 0, 1)])
    expected = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert prepared.content == expected
    assert prepared.sha256 == hashlib.sha256(expected).hexdigest()
    assert prepared.findings == [] and prepared.endpoint == ENDPOINT


def test_secrets_redacted_inside_json_strings(tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    prompt = (
        "<|file_sep|>app/config.py\n"
        f'GITHUB = "{GH}"\naws_id = "{AWS_ID}"\nKEY = """{PEM}"""\n'
        'db = "postgres://svc:S3cr3t!Pw9@db:5432/x"\n'
    )
    body = {"messages": [{"role": "user", "content": prompt}], "nested": {"k": [prompt]}}
    prepared = gate.prepare(ENDPOINT, body, [SourceSpan("app/config.py", 0, 10)])
    decoded = json.loads(prepared.content)  # still valid JSON
    text = prepared.content.decode()
    for secret in (GH, AWS_ID, "S3cr3t!Pw9", "MIIEowIBAAKCAQEA"):
        assert secret not in text
    # Newlines of the key block survive inside the string (line structure kept).
    assert decoded["messages"][0]["content"].count("\n") == prompt.count("\n")
    rules = {e.rule for e in prepared.findings}
    assert {"github-token", "aws-access-key-id", "private-key", "url-password"} <= rules
    assert all(e.file == "app/config.py" for e in prepared.findings)
    assert {e.field for e in prepared.findings} == {"messages[0].content", "nested.k[0]"}


def test_invisible_unicode_stripped_and_counted(tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    prompt = "x = 1\u200b\u202e # evil\u2066\U000e0041\n"
    prepared = gate.prepare(ENDPOINT, _body(prompt), [])
    assert prepared.stripped_chars == 4
    assert json.loads(prepared.content)["prompt"] == "x = 1 # evil\n"


def test_secret_split_by_zero_width_char_is_still_caught(tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    hidden = GH[:10] + "\u200b" + GH[10:]
    prepared = gate.prepare(ENDPOINT, _body(f"t = '{hidden}'"), [])
    assert GH[12:] not in prepared.content.decode()


@pytest.mark.parametrize(
    "path", [".env", "config/.env.production", "deploy/id_rsa", "certs/server.pem", "infra/prod.tfvars"]
)
def test_never_send_sources_refused(tmp_path: Path, path: str) -> None:
    gate = _gate(tmp_path)
    with pytest.raises(EgressBlocked, match="never-send"):
        gate.prepare(ENDPOINT, _body("x"), [SourceSpan(path, 0, 3)])
    assert not gate.allowed(path)
    assert not (tmp_path / "audit.jsonl").exists()


def test_user_never_send_globs(tmp_path: Path) -> None:
    gate = _gate(tmp_path, never_send=["internal/**", "*.secret.py"])
    assert gate.allowed("src/app.py")
    for path in ("internal/billing/x.py", "lib/keys.secret.py"):
        with pytest.raises(EgressBlocked, match="never-send"):
            gate.prepare(ENDPOINT, _body("x"), [SourceSpan(path, 0, 1)])


def test_max_request_bytes(tmp_path: Path) -> None:
    gate = _gate(tmp_path, max_request_bytes=2048)
    gate.prepare(ENDPOINT, _body("a" * 1500), [])
    with pytest.raises(EgressBlocked, match="max_request_bytes"):
        gate.prepare(ENDPOINT, _body("a" * 3000), [])


class _Exploding(Redactor):
    def redact(
        self,
        text: str,
        origin: str = "",
        deadline: float | None = None,
        known: Iterable[tuple[str, str]] = (),
    ) -> RedactionResult:
        raise RuntimeError("scanner crashed")


class _Slow(Redactor):
    def redact(
        self,
        text: str,
        origin: str = "",
        deadline: float | None = None,
        known: Iterable[tuple[str, str]] = (),
    ) -> RedactionResult:
        time.sleep(0.05)
        return super().redact(text, origin, deadline, known)


def test_scanner_exception_fails_closed(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    gate = EgressGate(_settings(), log, redactor=_Exploding(key=b"k" * 32))
    with pytest.raises(EgressBlocked, match=r"scanner crashed.*nothing was sent"):
        gate.prepare(ENDPOINT, _body(f"t = '{GH}'"), [])
    assert list(log.entries()) == []


def test_scan_timeout_fails_closed(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    gate = EgressGate(_settings(scan_timeout_s=0.01), log, redactor=_Slow(key=b"k" * 32))
    body = {"parts": [f"t = '{GH}'"] * 5}
    with pytest.raises(EgressBlocked, match="scan_timeout_s"):
        gate.prepare(ENDPOINT, body, [])
    assert list(log.entries()) == []


def test_unserialisable_body_fails_closed(tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    with pytest.raises(EgressBlocked, match="cannot send a bytes"):
        gate.prepare(ENDPOINT, {"prompt": b"raw"}, [])
    with pytest.raises(EgressBlocked, match="not valid JSON"):
        gate.prepare(ENDPOINT, {"x": float("nan")}, [])


def test_undecodable_text_is_sent_as_valid_utf8(tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    text = b"ok \xff\xfe bytes".decode("utf-8", "surrogateescape")
    prepared = gate.prepare(ENDPOINT, _body(text), [])
    assert json.loads(prepared.content.decode("utf-8"))["prompt"].startswith("ok ")


def test_record_writes_chained_entry_without_values(tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    prepared = gate.prepare(
        ENDPOINT, _body(f"GH = '{GH}'\npassword = 'Tr0ub4dor&3'\n"), [SourceSpan("a.py", 3, 9)]
    )
    audit_id = gate.record(prepared, True, "200")
    (entry,) = list(gate.audit.entries())
    assert entry["id"] == audit_id
    assert entry["sha256"] == prepared.sha256 == hashlib.sha256(prepared.content).hexdigest()
    assert entry["bytes"] == len(prepared.content)
    assert entry["sources"] == [{"path": "a.py", "start_line": 3, "end_line": 9, "real": None}]
    assert entry["sent"] is True and entry["status"] == "200" and entry["offline"] is False
    assert {r["rule"] for r in entry["redactions"]} == {"github-token", "keyword-assignment"}
    keys = {"rule", "file", "field", "line", "length", "hmac8", "stage"}
    assert all(set(r) == keys for r in entry["redactions"])
    raw = (tmp_path / "audit.jsonl").read_text()
    assert GH not in raw and "Tr0ub4dor" not in raw
    assert gate.audit.payload(audit_id) == prepared.content


def test_a_piece_masked_before_the_prompt_keeps_its_length_in_the_audit_entry(tmp_path: Path) -> None:
    """Pieces are masked before the prompt is built, so the gate sees only their tags; their
    audit entries said `"length": 0` while the README promises each redaction's length."""
    from codectx.privacy.pieces import PieceRedactor

    gate = _gate(tmp_path)
    masked = PieceRedactor(gate.redactor).text(f"GH = '{GH}'\n", "src/a.py")
    assert GH not in masked
    prepared = gate.prepare(ENDPOINT, _body(masked), [SourceSpan("src/a.py", 0, 1)])
    gate.record(prepared, True, "200")
    (entry,) = list(gate.audit.entries())
    (event,) = entry["redactions"]
    assert event["stage"] == "piece" and event["rule"] == "github-token"
    assert event["length"] == len(GH)


def test_a_secret_in_a_file_name_is_masked_in_the_audit_entry(tmp_path: Path) -> None:
    """Red team 2: `cache/glpat-....json` was masked in the body and kept whole in the audit
    entry's sources and in the very redaction event that masked it."""
    token = "glpat-" + "Iz0Wiw8SE7diV3TMXVjM"
    path = f"cache/{token}.json"
    gate = _gate(tmp_path)
    prepared = gate.prepare(ENDPOINT, _body(f"# file {path}\n{{}}\n"), [SourceSpan(path, 0, 1)])
    assert token not in prepared.content.decode()
    gate.record(prepared, True, "200")
    (entry,) = list(gate.audit.entries())
    assert entry["sources"][0]["path"].startswith("cache/[REDACTED:gitlab-token:")
    assert entry["redactions"] and token not in (tmp_path / "audit.jsonl").read_text()


def test_offline_mode_prepares_and_records_unsent(tmp_path: Path) -> None:
    gate = _gate(tmp_path, offline=True)
    assert gate.offline
    prepared = gate.prepare(ENDPOINT, _body("x = 1"), [])
    assert prepared.offline
    gate.record(prepared, False, "offline")
    (entry,) = list(gate.audit.entries())
    assert entry["offline"] is True and entry["sent"] is False


def test_keep_payloads_off(tmp_path: Path) -> None:
    gate = _gate(tmp_path, keep_payloads=False)
    audit_id = gate.record(gate.prepare(ENDPOINT, _body("x"), []), True, "200")
    assert not (tmp_path / "payloads").exists()
    from codectx.privacy.errors import AuditError

    with pytest.raises(AuditError, match="no payload kept"):
        gate.audit.payload(audit_id)


def test_path_anonymisation(tmp_path: Path) -> None:
    gate = _gate(tmp_path, anonymize_paths=True)
    prompt = "<|file_sep|>billing/stripe_client.py\ndef charge(): ...\n"
    prepared = gate.prepare(ENDPOINT, _body(prompt), [SourceSpan("billing/stripe_client.py", 0, 1)])
    text = prepared.content.decode()
    assert "billing/stripe_client.py" not in text
    alias = prepared.aliases["billing/stripe_client.py"]
    assert alias.startswith("file_") and alias.endswith(".py") and alias in text
    assert gate.alias("billing/stripe_client.py") == alias  # stable
    gate.record(prepared, False, "dry-run")
    (entry,) = list(gate.audit.entries())
    assert entry["aliases"] == {"billing/stripe_client.py": alias}


def test_redaction_off_sends_text_as_is(tmp_path: Path) -> None:
    gate = _gate(tmp_path, redact=False)
    prepared = gate.prepare(ENDPOINT, _body(f"t = '{GH}'"), [])
    assert GH in prepared.content.decode()
    assert isinstance(prepared, PreparedRequest)


def test_workspace_config_cannot_turn_redaction_off(tmp_path: Path) -> None:
    (tmp_path / ".codectx.toml").write_text("[privacy]\nredact = false\nmax_request_bytes = 99999999\n")
    settings = load_settings(tmp_path, environ={})
    gate = EgressGate(settings, AuditLog(tmp_path / "audit.jsonl"))
    prepared = gate.prepare(ENDPOINT, _body(f"t = '{GH}'"), [])
    assert GH not in prepared.content.decode()
    assert settings.privacy.max_request_bytes == 262_144


def test_secret_found_in_one_field_is_redacted_in_every_field(tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    body = {
        "messages": [
            {"role": "system", "content": "deploy notes: Hunter2!Orchid_1234 rotates monthly"},
            {"role": "user", "content": 'password = "Hunter2!Orchid_1234"'},
        ]
    }
    prepared = gate.prepare(ENDPOINT, body, [])
    assert b"Hunter2" not in prepared.content
    fields = sorted(e.field for e in prepared.findings)
    assert fields == ["messages[0].content", "messages[1].content"]
    assert len({e.hmac8 for e in prepared.findings}) == 1


def test_final_bytes_rescan_catches_secrets_across_json_structure(tmp_path: Path) -> None:
    # Key and value are separate strings, so only the scan of the serialised body sees "password": "...".
    gate = _gate(tmp_path)
    prepared = gate.prepare(ENDPOINT, {"prompt": "x", "metadata": {"password": "Tr0ub4dor&3x"}}, [])
    assert b"Tr0ub4dor" not in prepared.content
    assert json.loads(prepared.content)["metadata"]["password"].startswith("[REDACTED:keyword-assignment:")
    assert [e.field for e in prepared.findings] == ["<body>"]
