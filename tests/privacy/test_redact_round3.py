"""Secrets the third outside red team and the fourth independent set's tuned half got past the
redactor, and the look-alikes that must stay.

Each positive went out in clear before the change (values here are our own, in the same shapes):
logins with positional passwords, a password in a comment's sentence, keys inside a decoding call,
non-English password names, Oracle's unquoted IDENTIFIED BY, libpq password-file lines under any
name, tokens spelled in hex, with one `\\u`/HTML escape or with an escaped zero-width space, and
provider formats (Braintree, ClickUp, SonarQube, Firebase server keys, Okta, Plaid, WireGuard).
"""

from __future__ import annotations

import pytest

from codectx.privacy.policy import never_send_match
from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"
GHP = "ghp_" + "Zq7Xr2Vb9Kp4Wm6Ty3Hn8Jc5Ld1Sg0FaQe7R"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


SECRETS = [
    ("app/mailer.py", 'server.login("alerts@example.org", "Hq4vTn8sLw2p")\n', "Hq4vTn8sLw2p"),
    ("ops/notes.py", "# admin pw on the jump host is Wd7nQk2rTz9x (rotate monthly)\n", "Wd7nQk2rTz9x"),
    ("app/hooks.py", "SIGNING_KEY = bytes.fromhex('" + "4e" * 32 + "')\n", "4e" * 32),
    ("config/fr.yaml", "base:\n  mot_de_passe: Cl4r1netteBleue\n", "Cl4r1netteBleue"),
    ("app/ru.py", 'пароль = "Vx8pLq3zMn5t"\n', "Vx8pLq3zMn5t"),
    ("db/users.sql", "ALTER USER reporting IDENTIFIED BY Kq8vLm2xTr5w;\n", "Kq8vLm2xTr5w"),
    ("deploy/hosts.txt", "db1.internal:5432:orders:app:Pg5Hx2kLq9Vz#1\n", "Pg5Hx2kLq9Vz#1"),
    ("conf/app.properties", "server.ssl.key-store-password=Ab3#Cd4*Ef5~Gh6\n", "Ab3#Cd4*Ef5~Gh6"),
    ("app/seed.py", f'SEED = bytes.fromhex("{GHP.encode().hex()}").decode()\n', GHP.encode().hex()),
    ("web/x.js", 'const t = "\\u0067' + GHP[1:] + '";\n', GHP[1:]),
    ("web/x.html", '<meta content="&#103;' + GHP[1:] + '">\n', GHP[1:]),
    ("conf/keys.json", '{"k": "sk_live_Zq7Xr2\\u200bVb9Kp4Wm6Ty3Hn8Jc5"}\n', "Vb9Kp4Wm6Ty3Hn8Jc5"),
    (
        "pay/Gateway.java",
        'new BraintreeGateway("access_token$production$ab12cd34ef56gh78$' + "0f" * 16 + '");\n',
        "0f" * 16,
    ),
    ("web/clickup.js", 'headers: { Authorization: "pk_12345678_' + "Q7" * 16 + '" }\n', "Q7" * 16),
    ("ci/Jenkinsfile", "sh 'mvn sonar:sonar -Dsonar.token=squ_" + "a1" * 20 + "'\n", "a1" * 20),
    ("src/env.ts", 'export const A = "AAAAb7Qx2Lk:APA91b' + "Xy_9" * 34 + '";\n', "Xy_9" * 34),
    (
        "ops/okta.sh",
        'curl -H "Authorization: SSWS 00Zq7Xr2Vb9Kp4Wm6Ty3Hn8Jc5Ld1Sg0FaQe7Ru2Io"\n',
        "Ld1Sg0FaQe7Ru2Io",
    ),
    ("bank/sync.py", 'ITEM = "access-production-4f1c2d3e-5a6b-4c7d-8e9f-0a1b2c3d4e5f"\n', "4f1c2d3e-5a6b"),
    # Review: an ARN ends at `;`; the password after it is no part of it.
    ("conf/db.cfg", "Arn=arn:aws:rds:eu-west-1:1234:db:x;Password=Hunter2Secret9\n", "Hunter2Secret9"),
    # Red team 2's Markdown note: a default account and its password, in prose.
    ("ops/README.md", "Login to the admin with **admin / ZqdlBynnctjG** on staging.\n", "ZqdlBynnctjG"),
    ("docs/setup.md", "Sign in as `root` / `Tr0ub4dor&3` the first time.\n", "Tr0ub4dor&3"),
    ("app/main.py", "# login: admin / Cratermeadowsaddle\n", "Cratermeadowsaddle"),
    # Second review: a quoted account with its host, a database link, IF NOT EXISTS.
    ("db/users.sql", "CREATE USER 'app'@'%' IDENTIFIED BY \"Kq8vLm2xTr5w\";\n", "Kq8vLm2xTr5w"),
    (
        "db/link.sql",
        "CREATE DATABASE LINK remote CONNECT TO scott IDENTIFIED BY Kq8vLm2xTr5w;\n",
        "Kq8vLm2xTr5w",
    ),
    (
        "vpn/wg0.conf",
        "[Peer]\nPresharedKey = Zq7Xr2Vb9Kp4Wm6Ty3Hn8Jc5Ld1Sg0FaQe7Ru2Io9P=\n",
        "Zq7Xr2Vb9Kp4Wm6Ty3Hn8Jc5Ld1Sg0FaQe7Ru2Io9P=",
    ),
]


@pytest.mark.parametrize(("path", "text", "secret"), SECRETS)
def test_secrets_are_redacted(redactor: Redactor, path: str, text: str, secret: str) -> None:
    assert secret not in redactor.redact(text, path).text


LOOK_ALIKES = [
    ("app/a.py", "# the pw field is required when the user signs up for the first time\n"),
    ("docs/a.md", "The password for this service is stored in Vault, never in the repository.\n"),
    ("db/a.sql", "CREATE USER app IDENTIFIED EXTERNALLY;\nALTER USER bob IDENTIFIED BY VALUES 'S:ABC';\n"),
    ("src/auth.ts", "export function validatePassword(password: string): boolean {\n  return true;\n}\n"),
    ("media/cues.txt", "12:30:45:00:intro\n"),
    ("docs/objects.md", "The object identified by obj_uuid4_value is kept in the cache.\n"),
    ("docs/i18n.md", "Log in, then open user / internationalization settings.\n"),
    ("docs/hosts.md", "| host | private key |\n|---|---|\n| db01 | keys/db01.pem |\n"),
    ("docs/b.md", "Log in to the admin / dashboard page, or use the user / Settings menu.\n"),
    ("docs/c.md", "Default credentials: admin / admin, or admin / changeme (change them).\n"),
    # Keys made to be published, and the public half of a WireGuard pair.
    ("web/pay.html", 'const stripe = Stripe("pk_live_' + "Zq7Xr2Vb9Kp4Wm6Ty3Hn8Jc5" * 2 + '");\n'),
    (".env.public", "NEXT_PUBLIC_POSTHOG_KEY=phc_" + "Zq7Xr2Vb9Kp4Wm6Ty3Hn8Jc5Ld1Sg0FaQe7R" + "\n"),
    ("vpn/peers.conf", "[Peer]\nPublicKey = Zq7Xr2Vb9Kp4Wm6Ty3Hn8Jc5Ld1Sg0FaQe7Ru2Io9P=\n"),
    # A secret manager's ARN names a secret; it is none.
    (
        "app/settings.py",
        'KEY = get_secret("arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/pay-Ab12Cd")\n',
    ),
    # A digest in hex decodes to random bytes: no view of it.
    ("go.sum.txt", "sha = " + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" + "\n"),
]


@pytest.mark.parametrize(("path", "text"), LOOK_ALIKES)
def test_look_alikes_stay(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).text == text


def test_libpqs_windows_password_file_is_never_sent() -> None:
    assert never_send_match("deploy/pgpass.conf", None)
