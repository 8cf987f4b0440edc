"""Shapes from the seventh independent set's tuned half (secrets in application source and project
files across languages), written again with our own values, and the look-alikes that must stay.

Each positive went out in clear before the change.
"""

from __future__ import annotations

import pytest

from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


def _codes(word: str, sep: str = ",") -> str:
    return sep.join(str(ord(c)) for c in word)


TOKEN = "ghp_" + "Zq7Lm2Xc9Vb4Nn8Kk1Pp5Rr3Tt6Yy0Ww2Ee4"
SECRETS = [
    # A key named for what it opens, with a suffix saying how it is written.
    ("src/crypto.rs", f'const AES_KEY_HEX: &str = "{"9f3a" * 16}";\n', "9f3a" * 4),
    (
        "Acme/Constants.h",
        'static NSString * const kAcmeAlgoliaAdminKey = @"5e1c9a7b3d2f4e6a8c0b1d3f5a7c9e2b";\n',
        "5e1c9a7b3d2f",
    ),
    ("src/auth.go", 'var hmacKey = "kestrel-harbor-42"\n', "kestrel-harbor-42"),
    # A C array's brackets after the name.
    ("include/secrets.h", 'const char WIFI_PASSWORD[] = "Heron552.";\n', "Heron552."),
    ("include/secrets.h", 'static char mqtt_password[32] = "Heron552.";\n', "Heron552."),
    # Passwords by position in well-known calls.
    ("src/db.php", "$pdo = new PDO($dsn, 'report', 'Quokka77lake', [\n", "Quokka77lake"),
    (
        "bin/db.pl",
        'my $dbh = DBI->connect(\n    "dbi:Pg:dbname=core",\n    "app", \'Marmot_881\',\n);\n',
        "Marmot_881",
    ),
    (
        "bin/mail.rb",
        'Net::SMTP.start("smtp.example.net", 587, "acme.test", "ops@acme.test", "Winter2021.", :plain)\n',
        "Winter2021.",
    ),
    ("bin/mail.pl", "$smtp->auth('ops@acme.test', 'Letmein+733') or die;\n", "Letmein+733"),
    ("src/api.js", "request.get(url).auth('svc', 'Pangolin42x').end(done);\n", "Pangolin42x"),
    (
        "internal/db.go",
        'uri := fmt.Sprintf("mongodb+srv://%s:%s@%s/app", user, "otter_maple_quill_12", host)\n',
        "otter_maple_quill_12",
    ),
    (
        "db.py",
        'url = "postgres://{}:{}@{}/app".format(user, "otter_maple_quill_12", host)\n',
        "otter_maple_quill_12",
    ),
    # WordPress's keys and salts, punctuation and all.
    (
        "wp-config.php",
        "define( 'NONCE_KEY', 'h&V<4t]Qz9;Lp}Xw#2m(Jr+8c!Yk@0Gs$Bn^6e%Rd*Ta_=Uf|Mi~3o/Ng?7l>Sb' );\n",
        "h&V<4t]Qz9;Lp}",
    ),
    (
        "wp-config.php",
        "define('AUTH_SALT', \"q^7T!zL<m2#Vb9]Xk;4Rn@8Pw(Hs%3Yc)Jd=6Ge{Fa}Qt1|Mu*Zo>Ki+5Le-Wr0_\");\n",
        "q^7T!zL<m2#Vb9",
    ),
    # A property list's secret key and its string; an Android string resource's random text.
    (
        "App/Info.plist",
        "<dict>\n\t<key>BackendAPISecret</key>\n\t<string>Rf83kLmQ2zXv9WcT7yBn4HsJ6dPa1EuG0oKi5NqM</string>\n</dict>\n",
        "Rf83kLmQ2zXv9WcT7yBn",
    ),
    (
        "app/src/main/res/values/keys.xml",
        '<resources>\n    <string name="ingest_value" translatable="false">'
        "pT4wXr9ZkL2mQv7NcY3bHs8JdF6aGe1U</string>\n</resources>\n",
        "pT4wXr9ZkL2mQv7NcY3b",
    ),
    # Pieces appended to a builder.
    (
        "src/main/java/Config.java",
        f'StringBuilder sb = new StringBuilder();\nsb.append("{TOKEN[:14]}");\n'
        f'sb.append("{TOKEN[14:28]}");\nsb.append("{TOKEN[28:]}");\n',
        TOKEN[14:28],
    ),
    (
        "src/infer.rs",
        f'let mut s = String::from("{TOKEN[:14]}");\n'
        f's.push_str("{TOKEN[14:28]}");\ns.push_str("{TOKEN[28:]}");\n',
        TOKEN[14:28],
    ),
    (
        "src/main/java/Config.java",
        f'String t = new StringBuilder().append("{TOKEN[:14]}").append("{TOKEN[14:28]}")'
        f'.append("{TOKEN[28:]}").toString();\n',
        TOKEN[14:28],
    ),
    # A string spelled in character codes or literals.
    ("src/updater.js", f"const k = String.fromCharCode({_codes(TOKEN)});\n", _codes(TOKEN)[:30]),
    ("tool.py", f"token = bytes([{_codes(TOKEN, ', ')}]).decode()\n", _codes(TOKEN, ", ")[:30]),
    (
        "KeyStores.java",
        "private static final char[] STORE_PASS = { 'B', 'a', 's', 'a', 'l', 't', '7', '3', '!' };\n",
        "'B', 'a', 's'",
    ),
    (
        "keys.c",
        "static const char db_password[] = {\n    0x42, 0x61, 0x73, 0x61, 0x6c, 0x74, 0x37, 0x33, 0x21\n};\n",
        "0x42, 0x61, 0x73",
    ),
]


@pytest.mark.parametrize("path,text,secret", SECRETS)
def test_secrets_are_redacted(redactor: Redactor, path: str, text: str, secret: str) -> None:
    out = redactor.redact(text, path).text
    assert secret not in out, out


KEPT = [
    # A key pin is a digest of a public key: OkHttp's `sha256/...`, a property list's SPKI pin.
    ("Pinning.kt", '.add("api.acme.test", "sha256/Q7bX9kLm2Zp4Rv8Nc1Yw6Ht3Jd5Fa0GsEuKiOqPlMn=")\n'),
    (
        "Info.plist",
        "<key>SPKI-SHA256-BASE64</key>\n\t\t\t<string>Q7bX9kLm2Zp4Rv8Nc1Yw6Ht3Jd5Fa0GsEuKiOqPlMn=</string>\n",
    ),
    # A call's result: Elixir's System.fetch_env!, a macro.
    ("config/runtime.exs", 'secret_key_base = System.fetch_env!("SECRET_KEY_BASE")\n'),
    ("config/runtime.exs", 'config :stripity_stripe, api_key: System.fetch_env!("STRIPE_SECRET")\n'),
    # A path in Vault's KV engine.
    (
        "group_vars/all.yml",
        "db_password: \"{{ lookup('hashi_vault', 'secret=kv/data/mysql:root_password') }}\"\n",
    ),
    # WordPress's shipped placeholder.
    ("wp-config-sample.php", "define( 'AUTH_KEY',         'put your unique phrase here' );\n"),
    # Lists of numbers that spell nothing secret, and a plist string that is a name.
    ("lut.py", "GAMMA = [32, 33, 35, 38, 42, 47, 53, 60, 68, 77]\n"),
    ("table.c", "static const unsigned char glyphs[] = {0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48};\n"),
    ("Info.plist", "<key>CFBundleIdentifier</key>\n<string>com.acme.fieldservice.app</string>\n"),
    # Appends that build a message.
    ("Report.java", 'sb.append("Total rows: ");\nsb.append("processed");\n'),
    # A data key is a chart's field or a storage slot, not a key that opens anything (the review).
    ("Chart.jsx", '<Bar dataKey="revenue_q1" />\nconst USER_DATA_KEY = "myapp.user.v2";\n'),
]


@pytest.mark.parametrize("path,text", KEPT)
def test_look_alikes_stay(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).findings == []
