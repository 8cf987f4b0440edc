"""Passphrases of spaced words where a password goes, and the prompts and hints that stay.

Before this change a value holding a space was always read as prose: `password = "correct horse
battery staple"`, a Redis AUTH with a passphrase (stop 54's list) and `password: glacier mosaic
ribbon vessel` in YAML went out in clear. Values here are our own.
"""

from __future__ import annotations

import pytest

from codectx.privacy.filters import spaced_passphrase
from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"
PHRASE = "summit tundra ember anchor-23"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


SECRETS = [
    ("app/settings.py", f'DB_PASSWORD = "{PHRASE}"\n'),
    ("app/settings.py", f'password = "{PHRASE}"\n'),
    ("lua/limit.lua", f'local ok, err = red:auth("{PHRASE}")\n'),
    ("app/db.py", f'conn = pymysql.connect("db", "app", "{PHRASE}")\n'),
    ("config.json", f'{{"db": {{"password": "{PHRASE}"}}}}\n'),
    ("config/db.yml", f"db:\n  password: {PHRASE}\n  user: app\n"),
    ("conf/app.ini", f"[db]\npassword = {PHRASE}\n"),
    ("conf/app.properties", f"spring.datasource.password={PHRASE}\n"),
    ("src/Keys.java", 'String PASSPHRASE = "Correct Horse Battery Staple";\n'),
    # Review of stop 55: words that hold a label's part (monkey: key, compass: pass) are words.
    ("conf/app.ini", "[db]\npassword = summit monkey ember anchor-23\n"),
    # The same for words joined by dots (it read `monkey` as a label's `key`, and sent it).
    ("config/db.yml", "db:\n  password: compass.monkey.ember\n"),
]


@pytest.mark.parametrize(("path", "text"), SECRETS)
def test_a_spaced_passphrase_in_a_password_slot_is_redacted(redactor: Redactor, path: str, text: str) -> None:
    out = redactor.redact(text, path).text
    assert PHRASE not in out and "Correct Horse" not in out and "monkey" not in out, out


KEPT = [
    # Prompts, hints, errors and labels under a password's name: sentences, not passphrases.
    ("app/forms.py", 'password_hint = "must contain digits and letters"\n'),
    ("app/forms.py", 'password_label = "Enter the new password"\n'),
    ("app/forms.py", 'password = "Please enter your password"\n'),
    ("config/ui.yml", "password: change me later now\n"),
    ("config/ui.yml", "password: must be set here\n"),
    ("src/app.ts", 'const password = "not set yet";\n'),
    # Sentence case in a comment after `pass:` (a compiler pass, torch's avx_mathfun.h).
    ("avx_mathfun.h", '/* The magic pass: "Extended precision modular arithmetic" */\n'),
    # Spaced words under a token's or a key's name are names and descriptions, not passphrases.
    ("app/conf.py", 'api_key = "summit tundra ember anchor"\n'),
    # Two words are a label.
    ("app/conf.py", 'password = "summit tundra"\n'),
    # Dotted words holding a label's word, whole or long: a key, not a passphrase.
    ("config/app.yml", "password: auth.login.failed\n"),
    ("config/app.yml", "password: validation.passwordmismatch.error\n"),
]


@pytest.mark.parametrize(("path", "text"), KEPT)
def test_prompts_and_labels_under_a_password_name_are_kept(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).text == text


def test_what_reads_as_a_passphrase() -> None:
    assert spaced_passphrase("glacier mosaic ribbon vessel")
    assert spaced_passphrase("Glacier Mosaic Ribbon Vessel")
    assert not spaced_passphrase("Glacier mosaic ribbon vessel")  # sentence case
    assert not spaced_passphrase("glacier mosaic")  # too few words
    assert not spaced_passphrase("glacier  mosaic ribbon")  # not single spaces
    assert not spaced_passphrase("glacier mosaic $(cat pw)")  # not words
    assert not spaced_passphrase("the glacier mosaic ribbon")  # a function word
    assert not spaced_passphrase("database password field")  # a label's words
    assert not spaced_passphrase("api key field value")
