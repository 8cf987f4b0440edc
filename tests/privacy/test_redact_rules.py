"""The redaction engine on generated secrets: every kind, every syntax, exact spans, no false alarms."""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from codectx.privacy.redact import Redactor
from codectx.privacy.rules import default_rules
from tests.support.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import secretgen

KEY = b"test-key-test-key-test-key-test!"
POSITIVES = secretgen.positives()
NEGATIVES = secretgen.negatives()


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


def _coverage(redactor: Redactor, case: secretgen.Case) -> float:
    findings = redactor.redact(case.text, case.filename).findings
    chars: set[int] = set()
    for f in findings:
        chars.update(range(max(f.start, case.start), min(f.end, case.end)))
    return len(chars) / (case.end - case.start)


def test_generator_is_big_and_balanced() -> None:
    assert len(POSITIVES) >= 600
    assert len(NEGATIVES) >= 250
    named = [c.naming for c in POSITIVES]
    assert abs(named.count("keyword") - named.count("neutral")) < 0.1 * len(POSITIVES)
    assert len({c.kind for c in POSITIVES}) >= 50
    assert {c.syntax for c in POSITIVES} == set(secretgen.SYNTAXES)
    # Every recorded span really is the secret inside its snippet.
    assert all(0 <= c.start < c.end <= len(c.text) and "\n" not in c.secret[:1] for c in POSITIVES)


@pytest.mark.parametrize("kind", sorted({c.kind for c in POSITIVES}))
def test_every_kind_fully_redacted(redactor: Redactor, kind: str) -> None:
    cases = [c for c in POSITIVES if c.kind == kind]
    missed = [(c.syntax, c.naming, c.text) for c in cases if _coverage(redactor, c) < 0.9]
    assert not missed, f"{len(missed)}/{len(cases)} {kind} not fully redacted, e.g. {missed[0]}"


@pytest.mark.parametrize("syntax", secretgen.SYNTAXES)
def test_every_syntax_fully_redacted(redactor: Redactor, syntax: str) -> None:
    cases = [c for c in POSITIVES if c.syntax == syntax]
    full = sum(_coverage(redactor, c) >= 0.9 for c in cases)
    assert full / len(cases) >= 0.95, f"{syntax}: {full}/{len(cases)}"


def test_neutral_names_rely_on_shape_alone(redactor: Redactor) -> None:
    neutral = [c for c in POSITIVES if c.naming == "neutral"]
    full = sum(_coverage(redactor, c) >= 0.9 for c in neutral)
    assert full / len(neutral) >= 0.9


@pytest.mark.parametrize("kind", sorted({c.kind for c in NEGATIVES}))
def test_hard_negatives_not_flagged(redactor: Redactor, kind: str) -> None:
    flagged = []
    for case in (c for c in NEGATIVES if c.kind == kind):
        findings = redactor.redact(case.text, case.filename).findings
        flagged += [(f.rule, case.text[f.start : f.end]) for f in findings]
    assert not flagged, f"{kind}: {flagged[:5]}"


def test_replacement_touches_only_the_secret(redactor: Redactor) -> None:
    for case in POSITIVES[::7]:
        result = redactor.redact(case.text, case.filename)
        assert case.secret not in result.text
        # Text before the first finding and after the last one is byte-identical.
        first, last = result.findings[0], result.findings[-1]
        assert result.text.startswith(case.text[: first.start])
        assert result.text.endswith(case.text[last.end :])
        # Rebuilding the original from the findings' spans gives back the input.
        rebuilt, pos = [], 0
        for f in result.findings:
            token = f"[REDACTED:{f.rule}:{f.hmac8}]"
            rebuilt.append(case.text[pos : f.start])
            rebuilt.append(token + "\n" * case.text[f.start : f.end].count("\n"))
            pos = f.end
        rebuilt.append(case.text[pos:])
        assert "".join(rebuilt) == result.text


def test_findings_carry_line_and_no_value(redactor: Redactor) -> None:
    text = 'a = 1\nb = 2\nGITHUB_TOKEN = "ghp_' + "Ab3" * 12 + '"\n'
    (finding,) = redactor.redact(text).findings
    assert finding.line == 2
    assert finding.rule == "github-token"
    assert text[finding.start : finding.end] == "ghp_" + "Ab3" * 12
    assert "Ab3Ab3" not in repr(finding) and "Ab3Ab3" not in str(finding.as_dict())
    assert len(finding.hmac8) == 8


def test_private_key_block_keeps_line_count(redactor: Redactor) -> None:
    for case in (c for c in POSITIVES if c.kind == "private-key"):
        result = redactor.redact(case.text, case.filename)
        assert result.text.count("\n") == case.text.count("\n")
        assert "-----BEGIN" not in result.text
        assert len(result.text.splitlines()) == len(case.text.splitlines())


def test_truncated_private_key_still_redacted(redactor: Redactor) -> None:
    # A retrieved snippet may cut a key block before its END line.
    body = "\n".join("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC" + f"q{i}Rz{i}Lm" for i in range(6))
    text = f"def load():\n    KEY = '''-----BEGIN PRIVATE KEY-----\n{body}\n"
    result = redactor.redact(text)
    assert "MIIEvQ" not in result.text
    assert result.text.count("\n") == text.count("\n")


@pytest.mark.parametrize(
    "line",
    [
        'password = "${DB_PASSWORD}"',
        "api_key = os.environ['API_KEY']",
        "token = process.env.GITHUB_TOKEN",
        'secret := os.Getenv("SECRET")',
        'String pw = System.getenv("DB_PASSWORD"); String password = pw;',
        'api_key = "<your-api-key>"',
        'password = "changeme"',
        "token: xxxxxxxxxxxxxxxxxxxx",
        'api_key = "your_api_key_here"',
        'password = "example-password-123"',
        'client_secret = "dummy-secret-1234"',
        "password = self.password",
        "token = get_token()",
        "password: !vault |",
        'aws_access_key_id = "AKIAIOSFODNN7EXAMPLE"',
        "Authorization: Bearer $TOKEN",
        "postgres://user:${PGPASSWORD}@db:5432/app",
    ],
)
def test_placeholders_and_references_are_not_secrets(redactor: Redactor, line: str) -> None:
    assert redactor.redact(line, "app.py").findings == []


def test_same_secret_same_token_across_texts(redactor: Redactor) -> None:
    secret = "sk_live_" + "9fQ2" * 8
    a = redactor.redact(f'STRIPE = "{secret}"').text
    b = redactor.redact(f"stripe:\n  key: {secret}\n").text
    token = a.split('"')[1]
    assert token.startswith("[REDACTED:stripe-key:") and token in b


def test_hmac_key_is_per_install(tmp_path: Path) -> None:
    from codectx.privacy.keys import load_or_create_key

    key_a = load_or_create_key(tmp_path / "a")
    assert load_or_create_key(tmp_path / "a") == key_a  # stable on one install
    key_b = load_or_create_key(tmp_path / "b")
    assert key_a != key_b
    assert ((tmp_path / "a" / "redaction.key").stat().st_mode & 0o777) == 0o600
    secret = 'token = "glpat-' + "Zx9" * 7 + '"'
    tag_a = Redactor(key=key_a).redact(secret).findings[0].hmac8
    tag_b = Redactor(key=key_b).redact(secret).findings[0].hmac8
    assert tag_a == Redactor(key=key_a).redact(secret).findings[0].hmac8
    assert tag_a != tag_b


def test_default_key_lives_in_state_dir() -> None:
    from codectx.settings import state_dir

    Redactor().redact('password = "Tr0ub4dor&3x"')
    path = state_dir() / "redaction.key"
    assert path.exists() and (path.stat().st_mode & 0o777) == 0o600


def test_rescanning_redacted_text_finds_nothing(redactor: Redactor) -> None:
    for case in POSITIVES[::5]:
        once = redactor.redact(case.text, case.filename).text
        assert redactor.redact(once, case.filename).findings == []


def test_non_ascii_offsets_are_character_offsets(redactor: Redactor) -> None:
    text = '# Привет, мир — ünïcödé\npassword = "Sümmer2024!xx"\n'
    (finding,) = redactor.redact(text).findings
    assert text[finding.start : finding.end] == "Sümmer2024!xx"
    assert finding.line == 1


def test_high_entropy_literals_are_default_bare_code_values_strict_and_digests_never() -> None:
    strict = Redactor(key=KEY, strict=True)
    default = Redactor(key=KEY)
    random_literal = 'x = "q8Rz2LmN4vXw7TyB1cKd9FhJ"'
    assert [f.rule for f in default.redact(random_literal, "a.py").findings] == ["high-entropy"]
    bare_in_code = "x = q8Rz2LmN4vXw7TyB1cKd9FhJ"
    assert default.redact(bare_in_code, "a.py").findings == []
    assert [f.rule for f in default.redact(bare_in_code, "app.ini").findings] == ["high-entropy"]
    assert [f.rule for f in strict.redact(bare_in_code, "a.py").findings] == ["high-entropy"]
    for safe in (
        'sha = "' + "0123456789abcdef" * 4 + '"',
        'id = "123e4567-e89b-12d3-a456-426614174000"',
        '"integrity": "sha512-' + "Qk9Ta2V5Q29kZVN0cmluZzEyMw" * 3 + '=="',
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq8Rz2LmN4vXw7TyB1cKd9FhJq8Rz2LmN4vXw user@host",
        'img = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"',
        'name = "PPLCNetV4SqueezeExcitationModule"',
    ):
        assert strict.redact(safe).findings == [], safe
        assert default.redact(safe).findings == [], safe


def test_rule_file_is_consistent() -> None:
    rules = default_rules()
    assert len(rules.rules) >= 80
    providers = {r.id for r in rules.rules if r.check in ("format", "context")}
    assert len(providers) >= 50
    assert len(rules.version) == 16
    by_id: dict[str, int] = defaultdict(int)
    for rule in rules.rules:
        by_id[rule.id] += 1
        assert rule.secret_groups or rule.check in ("format", "corpus"), rule.id
        assert re.fullmatch(r"[a-z0-9-]+", rule.id), rule.id  # it must fit a [REDACTED:<id>:<tag>] token


def test_a_found_secret_is_redacted_wherever_it_repeats(redactor: Redactor) -> None:
    text = '# old one was Hunter2!Orchid_1234\npassword = "Hunter2!Orchid_1234"\nlog("Hunter2!Orchid_1234")\n'
    result = redactor.redact(text, "app.py")
    assert "Hunter2" not in result.text
    assert len({f.hmac8 for f in result.findings}) == 1 and len(result.findings) == 3
    # Values from elsewhere in the same request are honoured too.
    other = redactor.redact(
        "print('Hunter2!Orchid_1234')", known=[("Hunter2!Orchid_1234", "keyword-assignment")]
    )
    assert "Hunter2" not in other.text


@pytest.mark.parametrize(
    ("text", "filename", "secret"),
    [
        ("machine api.partner.io login deploy password Winter4932_Boh\n", ".netrc", "Winter4932_Boh"),
        ("CREATE USER app WITH PASSWORD '8kdEnfBUSWJHFqn,R98j';\n", "init.sql", "8kdEnfBUSWJHFqn,R98j"),
        ("Our staging password is dzRTwiB0qwEWODqy (rotate monthly).\n", "README.md", "dzRTwiB0qwEWODqy"),
        ('session.auth = ("deploy", "Winter661*csf")\n', "client.py", "Winter661*csf"),
        ('get(url, auth=HTTPBasicAuth("deploy", "Falcon1079~G9z"))\n', "client.py", "Falcon1079~G9z"),
        ('client = OpenAI(api_key="*u8Yp8%FVV,n8bO*3")\n', "client.py", "*u8Yp8%FVV,n8bO*3"),
    ],
)
def test_password_shapes_without_assignment(
    redactor: Redactor, text: str, filename: str, secret: str
) -> None:
    result = redactor.redact(text, filename)
    (finding,) = result.findings
    assert text[finding.start : finding.end] == secret
    assert secret not in result.text


@pytest.mark.parametrize(
    "line",
    [
        "if password is None:",
        "password = getpass.getpass()",
        "username, password = prefix.split(':', 1)",
        "semantic_infer_token=129_599,",
        "The password is required.",
        "Token: '#d8dee9',",
        "auth = (user, password)",
    ],
)
def test_code_that_mentions_passwords_is_not_flagged(redactor: Redactor, line: str) -> None:
    assert redactor.redact(line, "module.py").findings == []


def test_a_pattern_names_a_part_from_the_names_table() -> None:
    """`{NAME}` in a pattern stands for the `[names]` entry (one copy of the secret-name alternation
    for the rules that share it); a repetition like `{2,7}` stays; an unknown name is an error."""
    from codectx.privacy.errors import RulesError
    from codectx.privacy.rules import parse

    doc = b"""
[names]
WORD = '''(?:pass(?:word)?|token)'''

[[rule]]
id = "named"
pattern = '''(?i){WORD}\\s*=\\s*"(?P<secret>[a-z0-9]{6,12})"'''
check = "format"
"""
    rules = parse(doc, "test.toml")
    assert rules.rules[0].regex.search(b'TOKEN = "abc123xyz"')
    assert "{WORD}" not in rules.rules[0].pattern and "{6,12}" in rules.rules[0].pattern
    with pytest.raises(RulesError, match="no \\[names\\] entry NAME"):
        parse(doc.replace(b"{WORD}", b"{NAME}"), "test.toml")
    # RE2's Unicode classes are no names; [names] holds strings only.
    assert (
        parse(doc.replace(b"{WORD}", b"\\p{L}+"), "test.toml")
        .rules[0]
        .regex.search('é = "abc123xyz"'.encode())
    )
    with pytest.raises(RulesError, match="table of strings"):
        parse(doc.replace(b"WORD = ", b"WORD = 3 #"), "test.toml")
    # The shipped rules use it: no pattern keeps an unexpanded name.
    assert not any(re.search(r"\{[A-Z][A-Z0-9_]*\}", r.pattern) for r in default_rules().rules)


def test_a_rule_may_name_a_keyword_list_and_an_unknown_one_is_an_error() -> None:
    from codectx.privacy.rules import RulesError, parse

    doc = b'[keywords]\nWORDS = ["Pass", "pwd"]\n[[rule]]\nid = "x"\nkeywords = "{WORDS}"\npattern = "pass"\n'
    assert parse(doc).rules[0].keywords == ("pass", "pwd")
    with pytest.raises(RulesError, match="names no \\[keywords\\] entry"):
        parse(doc.replace(b'"{WORDS}"', b'"{OTHER}"'))
