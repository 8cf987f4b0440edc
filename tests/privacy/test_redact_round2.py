"""Secrets the second outside red team got past the redactor, and the look-alikes that must stay.

Each positive went to the model server in clear before the change: Rails' `secret_key_base`
(a name with a suffix the keyword rules did not know) and a Netscape cookies.txt row's value.
(Values of SQL dumps under secret-named columns: tests/privacy/test_sql_rows.py.)
"""

from __future__ import annotations

import pytest

from codectx.privacy.policy import never_send_match
from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"
HEX = "9ec9a510ef3b2e60a7514fb3e3faa41335d45a9f8ee9649c5e35f9ed2b3b5f43" * 2


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


SECRETS = [
    ("config/credentials.rb", f'Rails.application.credentials.secret_key_base = "{HEX}"\n', HEX),
    ("config/application.rb", f'config.secret_key_base = "{HEX}"\n', HEX),
    ("config/secrets.yml", f"production:\n  secret_key_base: {HEX}\n", HEX),
    (
        "fmt/cookies.txt",
        "# Netscape HTTP Cookie File\n"
        ".acme.dev\tTRUE\t/\tTRUE\t1999999999\tsessionid\tk2j3h4g5f6d7s8a9q0w1e2r3\n",
        "k2j3h4g5f6d7s8a9q0w1e2r3",
    ),
]


@pytest.mark.parametrize(("path", "text", "secret"), SECRETS)
def test_the_red_teams_secrets_are_redacted(redactor: Redactor, path: str, text: str, secret: str) -> None:
    assert secret not in redactor.redact(text, path).text


LOOK_ALIKES = [
    # A column's SQL type is no password, nor is a statement without a secret column.
    ("db/schema.sql", "CREATE TABLE users (id integer, password text);\n"),
    ("db/schema.sql", "ALTER TABLE users ADD COLUMN password VARCHAR(255) NOT NULL;\n"),
    # Netscape-looking rows whose value is too short to be a session.
    ("fmt/cookies.txt", "example.com\tFALSE\t/\tFALSE\t0\tlang\ten\n"),
]


@pytest.mark.parametrize(("path", "text"), LOOK_ALIKES)
def test_look_alikes_stay(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).text == text


def test_cookie_jars_are_never_sent() -> None:
    for path in ("cookies.txt", "tools/cookies.sqlite", "auth/session.cookiejar", "cookiejar.json"):
        assert never_send_match(path, None), path
    # The review: `cookiejar*` took every cookie-jar implementation for a jar of cookies.
    for path in ("Lib/http/cookiejar.py", "src/CookieJar.java", "net/http/cookiejar/jar.go", "cookiejar.rs"):
        assert never_send_match(path, None) is None, path
