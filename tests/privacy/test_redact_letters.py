"""Secrets an outside tester got past the redactor (stop 51), and the look-alikes that must stay.

Written from the red-team report: passwords and passphrases made only of letters (the old
`is_weak_literal` took every letters-only value for a label), tokens in comments and docstrings,
YAML/INI/TOML values on the line after their name, PINs, and a keyword in prose before a colon.
Each positive here went to the model server in clear before the change.
"""

from __future__ import annotations

import pytest

from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


SECRETS = [
    # (path, text, the secret)
    ("app/db.py", 'DB_PASSWORD = "AibNyyurlGFbEkjKWREhbiGj"\n', "AibNyyurlGFbEkjKWREhbiGj"),
    ("app/db.py", 'admin_password = "tangerinephdtonvelvet"\n', "tangerinephdtonvelvet"),
    (
        "app/db.py",
        'API_KEY = "lvhkTpSKQOoCdrvaukHvRwMzzuVtYkwMJFrCfZUE"\n',
        "lvhkTpSKQOoCdrvaukHvRwMzzuVtYkwMJFrCfZUE",
    ),
    ("app/db.py", 'BROKER = "amqp://svc:qkNksErfgUyBQDEo@rabbit:5672/"\n', "qkNksErfgUyBQDEo"),
    ("app/db.py", 'DSN = "postgres://app:troubadour@db/app"\n', "troubadour"),
    ("src/auth.ts", "const opts = { secretKey: 'CraterSaddleSpruceTimber' };\n", "CraterSaddleSpruceTimber"),
    ("bot/settings.py", 'BOT_TOKEN = "irishoney"\n', "irishoney"),
    ("app/settings.py", 'passwort = "DeLSJWbjNxTLmvEB"\n', "DeLSJWbjNxTLmvEB"),
    ("deploy/run.sh", "PW=nrasqokoetlpmvfz\n", "nrasqokoetlpmvfz"),
    (
        "app/gaps.py",
        "# prod token (rotate!): I3Ao3pxTnHyf6t5YdIngBaVbVJBMQKnY\n",
        "I3Ao3pxTnHyf6t5YdIngBaVbVJBMQKnY",
    ),
    (
        "app/gaps.py",
        "# legacy token, do not use: 81c6c4eee6fffabf195429c9a34847af77d9b2f9f9c1b841\n",
        "81c6c4eee6fffabf195429c9a34847af77d9b2f9f9c1b841",
    ),
    (
        "app/gaps.py",
        'def f():\n    """Staging key is 8qS0BFn7BwpkZ01BZGaG7yOh3FZ9NoDx."""\n',
        "8qS0BFn7BwpkZ01BZGaG7yOh3FZ9NoDx",
    ),
    ("config/gaps.yaml", "db:\n  password:\n    value: yN84Bl3WWWqWibY6\n", "yN84Bl3WWWqWibY6"),
    (
        "config/app.yaml",
        "app:\n  api_key: |\n    harbor-harvest-shovel\n  timeout: 10\n",
        "harbor-harvest-shovel",
    ),
    ("setup.cfg", "[upload]\nusername = admin\npassword =\n    AlFADsuEpugsKKdvNgW\n", "AlFADsuEpugsKKdvNgW"),
    ("config/gaps.toml", '[db]\npassword = """\nPFcv7DJzk3i8ju6B"""\n', "PFcv7DJzk3i8ju6B"),
    ("kiosk/config.py", 'ADMIN_PIN = "28333871"\n', "28333871"),
    ("k8s/deploy.yaml", "env:\n  - name: DB_PASSWORD\n    value: troubadourXq\n", "troubadourXq"),
    ("settings.xml", "<server>\n  <password>SparrowBridge</password>\n</server>\n", "SparrowBridge"),
    # the value alone on the next line (found by this stop's review: `password:` then the value)
    ("config.yaml", "db:\n  password:\n    Xq7pL2vR9mK4tW8zN3bY\n", "Xq7pL2vR9mK4tW8zN3bY"),
    ("app.ini", "[db]\npassword:\n\thunter2hunter2\n", "hunter2hunter2"),
    ("config.yaml", "db:\n  password: |2+\n    Xq7pL2vR9mK4tW8zN3bY\n", "Xq7pL2vR9mK4tW8zN3bY"),
    ("config.yaml", "db:\n  password: &pw | # rotated\n\n    Xq7pL2vR9mK4tW8zN3bY\n", "Xq7pL2vR9mK4tW8zN3bY"),
    ("c.toml", 'password = """\n\nXq7pL2vR9mK4tW8zN3bY"""\n', "Xq7pL2vR9mK4tW8zN3bY"),
    ("README.md", "    export DB_PASSWORD=maple-correct\n", "maple-correct"),
    # spelled with escapes: percent-encoding in a URL, \\u escapes in a literal
    (
        "app/hooks.py",
        'WEBHOOK = "https://x.example/?k=sk%5Flive%5F4IKCzi2Eg3h0p54qGzTYdXt5"\n',
        "4IKCzi2Eg3h0p54qGzTYdXt5",
    ),
    (
        "app/uni.py",
        'UNI = "' + "".join(f"\\u{ord(c):04x}" for c in "ghp_jQ05OI43qHdKCRGD4fc2jDmt9qrnRBBtGapr") + '"\n',
        "\\u0067\\u0068\\u0070\\u005f",
    ),
]


@pytest.mark.parametrize(("path", "text", "secret"), SECRETS, ids=[s[2][:12] for s in SECRETS])
def test_the_secret_is_redacted(redactor: Redactor, path: str, text: str, secret: str) -> None:
    out = redactor.redact(text, path).text
    assert secret not in out, out


KEPT = [
    # letters under credential names that are labels, kinds, types or translations
    ("lexer.py", 'if token == "identifier":\n    pass\n'),
    ("lexer.py", 'self.token = "punctuation"\n'),
    ("forms.py", 'password_field = "password_confirmation"\n'),
    ("forms.ts", "const autocomplete = { password: 'current-password' };\n"),
    ("client.ts", "withCredentials = 'same-origin';\n"),
    ("models.ts", "interface User {\n  password: string;\n}\n"),
    ("settings.py", 'PASSWORD_HASHER = "argon2"\nSECRET_KEY_SETTING = "SECRET_KEY"\n'),
    ("locale/de.yaml", 'secret: "Geheimnis"\n'),
    ("RegisterRequest.php", "return ['password' => 'required|confirmed|min:12'];\n"),
    (
        "docs/auth.md",
        "The password must be at least twelve characters.\nReset your password: go to settings.\n",
    ),
    ("schema.yaml", "user:\n  password:\n    type: string\n    description: the password\n"),
    ("gpio.py", "LED_PIN = 17\n"),
    ("search.py", 'URL = "https://example.com/search?q=hello%20world%20and%20more%21"\n'),
    ("tokenizer.json", '{"model": {"vocab": {"pin":25479, "pine":25480}}}\n'),
    # the word after "pass:" or "password:" in prose, strings and Markdown (this stop's review)
    ("walker.py", 'def walk(tree):\n    """Second pass: resolves every import, then links."""\n'),
    ("walker.py", 'log.info("first pass: collecting names")\n'),
    ("app.py", 'print("Password: incorrect")\n'),
    ("NOTES.md", "The compiler makes two passes. Second pass: optimizes the tree.\n"),
    ("compare.py", "cl_pw = r'([0-9a-f]{64})'\n"),
    ("wav.py", "# fixture: 'test-44100Hz-2ch-32bit-float-be.wav'\n"),
    ("init.py", "# see THPModule_allowTF32OneDNN and pytorch_CycleGAN_and_pix2pix\n"),
    # random-looking words in code are expressions (strict tier only); digests and encoded text
    ("model.py", "x = q8Rz2LmN4vXw7TyB1cKd9FhJ\n"),
    ("CHANGES.md", "Fixed in 3f5a9c1e2b7d4a6f8e0c1b3d5f7a9c1e2b4d6f80 (see #123).\n"),
    (
        "docs/encoding.md",
        "    eyJhbGciOiJub25lIiwidHlwIjoiZXhhbXBsZSIsIm5vdGUiOiJkb2N1bWVudGF0aW9uIHNhbXBsZSJ9\n",
    ),
    (
        "codec.py",
        '# encode(b"Hello, World! This is sample payload data.") == '
        '"SGVsbG8sIFdvcmxkISBUaGlzIGlzIHNhbXBsZSBwYXlsb2FkIGRhdGEu"\n',
    ),
]


@pytest.mark.parametrize(("path", "text"), KEPT, ids=[k[0] for k in KEPT])
def test_the_look_alike_is_kept(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).findings == []
