"""Secrets the eighth outside red team got past the redactor by how they were written, not by what
they look like (R1, R3-R8), and the look-alikes that must stay.

Each positive went out in clear before the change (values here are our own, in the same shapes):
a backslash escape inside a password's literal (JSON's `\\/` and `\\u00e9`, `\\\\`, `\\"`, a raw or
verbatim string's `\\`, an INI value's `\\`); a password spelled in `\\x`, octal or `\\u{..}` escapes;
a YAML anchor or tag before the value; a comment line between a key and its value; a bare value
continued after a backslash; the shell's `'"'"'` inside a single-quoted value; a passphrase split
between its words over adjacent literals (red team 7's L12); invisible characters inside a token.
"""

from __future__ import annotations

import pytest

from codectx.privacy.redact import Redactor
from codectx.privacy.sanitize import sanitize
from codectx.privacy.views import unescape_value

KEY = b"test-key-test-key-test-key-test!"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


SECRETS = [
    # R1: escapes inside the literal.
    ("config/mail.json", '{"mailer": {"smtp_password": "Kestrel9\\/Quarry"}}\n', "Kestrel9\\/Quarry"),
    ("config/db.json", '{"db_password": "Caf\\u00e9Lantern77"}\n', "Caf\\u00e9Lantern77"),
    ("svc.py", 'DB_PASSWORD = "C0rp\\\\Heron4471"\n', "C0rp\\\\Heron4471"),
    ("svc.py", 'SMTP_PASSWORD = "Pel\\"Marten2290"\n', 'Pel\\"Marten2290'),
    ("app.js", "const config = { password: 'Pel\\'Otter5581' };\n", "Pel\\'Otter5581"),
    ("svc.go", "var dbPassword = `Dom\\Badger8812`\n", "Dom\\Badger8812"),
    ("Svc.cs", 'const string DbPassword = @"Dom\\Kestrel6630";\n', "Dom\\Kestrel6630"),
    ("tool.py", 'api_token = r"Ab3\\QEf9\\ZgH1jK"\n', "Ab3\\QEf9\\ZgH1jK"),
    ("settings.py", 'config.put("db_password", "Pel\\\\Ferret3304")\n', "Pel\\\\Ferret3304"),
    ("config/db.ini", "[db]\npassword = Dom\\Plover7719\n", "Dom\\Plover7719"),
    (".env", "DB_PASSWORD=Pel\\ican4417x\n", "Pel\\ican4417x"),
    # R3: a password spelled in escapes.
    ("hexpw.py", 'db_password = "\\x48\\x65\\x72\\x6f\\x6e\\x34\\x34\\x37\\x31"\n', "\\x48\\x65\\x72"),
    ("oct.js", 'const dbPassword = "\\110\\145\\162\\157\\156\\064\\064";\n', "\\110\\145\\162"),
    ("u.js", 'const dbPassword = "\\u{48}\\u{65}\\u{72}\\u{6f}\\u{6e}\\u{34}\\u{34}";\n', "\\u{48}\\u{65}"),
    ("u.ts", 'const dbPassword = "\\u0048\\u0065\\u0072\\u006f\\u006e\\u0034";\n', "\\u0048\\u0065"),
    # R4: a YAML anchor or tag before the value.
    (
        "docker-compose.yml",
        "services:\n  db:\n    environment:\n"
        "      POSTGRES_PASSWORD: &pgpw Gannet7742\n      DB_PASS: *pgpw\n",
        "Gannet7742",
    ),
    ("k8s/secret.yaml", "stringData:\n  password: !!str Gannet7742\n", "Gannet7742"),
    ("k8s/secret.yaml", 'stringData:\n  api_token: !!str "Gannet7742Qx"\n', "Gannet7742Qx"),
    ("values.yml", "- db_password: &a !!str Gannet7742\n", "Gannet7742"),
    # R5: comment lines between the key and its value.
    (
        "settings.py",
        'DATABASES = {\n    "default": {\n        "PASSWORD":\n            # rotated 2024-03\n'
        '            "Puffin6620",\n    }\n}\n',
        "Puffin6620",
    ),
    ("db.py", 'db_password = (  # prod\n    "Pelican7Harbor"\n)\n', "Pelican7Harbor"),
    (
        "config.js",
        'module.exports = {\n  password:\n    // from the vault, March\n    "Osprey4410",\n};\n',
        "Osprey4410",
    ),
    # R6: a bare value continued after a backslash.
    ("app.properties", "db.user=app\ndb.password=Pelican\\\n    Quail8841\n", "Quail8841"),
    ("Dockerfile", "FROM alpine\nENV DB_PASSWORD=\\\n    Quail8841\n", "Quail8841"),
    ("app.properties", "db.password=\\\n  Quail8841x\n", "Quail8841x"),
    # R7: the shell's quote inside a single-quoted value.
    ("deploy.sh", "export DB_PASSWORD='Pel'\"'\"'Sparrow3301'\n", "Sparrow3301"),
    ("deploy.sh", 'DB_PASSWORD="Pel"\'"\'"Sparrow3301"\n', "Sparrow3301"),
    # L12 (red team 7): a passphrase split between its words.
    ("wallet.py", 'passphrase = (\n    "correct horse "\n    "battery staple"\n)\n', "battery staple"),
    ("wallet.py", 'passphrase = ("correct" " horse battery staple")\n', "horse battery staple"),
    ("wallet.js", 'const passphrase = "correct horse " +\n  "battery staple";\n', "battery staple"),
]


@pytest.mark.parametrize("path,text,secret", SECRETS)
def test_secrets_are_redacted(redactor: Redactor, path: str, text: str, secret: str) -> None:
    out = redactor.redact(text, path).text
    assert secret not in out, out


# R8: characters that show nothing, inside a token, are stripped before any rule reads it.
@pytest.mark.parametrize("mark", ["\u00ad", "\u034f", "\ufe0f", "\u3164", "\u17b4", "\U000e0101"])
def test_invisible_marks_inside_a_token_are_stripped(redactor: Redactor, mark: str) -> None:
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5b"
    cleaned, count = sanitize(f"token = {token[:10]}{mark}{token[10:]}\n")
    assert count == len(mark) and token in cleaned
    assert token not in redactor.redact(cleaned, "a.txt").text


@pytest.mark.parametrize(
    "text",
    [
        "I \u2764\ufe0f this\n",  # an emoji's presentation selector, after a symbol
        "\ud55c\u3164\uae00\n",  # a Hangul filler between Hangul
        "e\u0301\n",  # a combining accent is no invisible mark
    ],
)
def test_marks_with_a_use_in_their_own_script_stay(text: str) -> None:
    assert sanitize(text) == (text, 0)


LOOK_ALIKES = [
    ("re.py", 'PASSWORD_RE = "^(?=.*\\\\d)(?=.*[a-z]).{8,}$"\n'),
    ("forms.py", 'password = forms.CharField(help_text="Use\\tletters and digits")\n'),
    ("x.py", 'password = "\\n"\nsecret = "\\\\d+\\\\s"\n'),
    ("paths.py", 'private_key = "C:\\\\certs\\\\private.pem"\n'),
    (
        "paths.cs",
        'string keyFile = @"\\\\fileserver\\keys\\app.pem";\nvar private_key = @"D:\\keys\\app.pem";\n',
    ),
    ("vault.yml", "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n"),
    ("compose.yml", "services:\n  app:\n    environment:\n      DB_PASS: *pgpw\n"),
    ("cfn.yaml", "Parameters:\n  DbPassword: !Ref DbPasswordParam\n"),
    ("build.sh", 'make install \\\n  PREFIX=/usr/local \\\n  DESTDIR="$pkgdir"\n'),
    ("msg.py", 'message = ("Please enter your " "password to continue")\n'),
    ("settings.py", '"PASSWORD":\n    # read from the environment\n    os.environ["DB_PASSWORD"],\n'),
]


@pytest.mark.parametrize("path,text", LOOK_ALIKES)
def test_look_alikes_stay(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).findings == []


@pytest.mark.parametrize(
    "raw,plain",
    [
        ("Tr0ub4dor\\/x", "Tr0ub4dor/x"),
        ("Caf\\u00e9", "Caf\u00e9"),
        ("\\x48\\x65", "He"),
        ("\\110\\145", "He"),
        ("\\u{48}\\u{1F600}", "H\U0001f600"),
        ('a\\"b\\\\c', 'a"b\\c'),
        ("Dom\\user", "Dom\\user"),  # a raw string's backslash stays
        ("\\u{110000}", "\\u{110000}"),  # past Unicode: left as written
    ],
)
def test_values_are_judged_as_the_characters_their_escapes_stand_for(raw: str, plain: str) -> None:
    assert unescape_value(raw) == plain
