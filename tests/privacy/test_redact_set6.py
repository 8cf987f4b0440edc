"""Shapes from the sixth independent set's tuned half (logs, HTTP captures, SQL, shell history,
network configs, notebooks), written again with our own values, and the look-alikes that must stay.
"""

from __future__ import annotations

import pytest

from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


KEPT = [
    # `wg show` prints public keys under `public key:` and `peer:`.
    (
        "docs/vpn/wg-show.txt",
        "interface: wg0\n  public key: Hq7fFgJ0Ydrv2Kf97caxNj+NIz1rquEQVYEU4cG9dV8=\n"
        "peer: 0Ku1lhLKtWkHyeKWo/CGzNVtZhLe1cYisye8IOM7d7Q=\n  endpoint: 203.0.113.9:51820\n",
    ),
    # An image in a notebook's output, in base64.
    (
        "nb/eda.ipynb",
        '   "image/png": "iVBORw0KGgoAAAANSUhEUji05lLkTafyNw2eJg4nE2VQpKOm0H9cDDMvixIkCD/SK5'
        'AviRHoGBj4yZ1dXZgxlXUE2Q6UXeLo9U7ngcx19jbYUJkJWqMAFlpnA2+bVA1rjwviESQXnD04Fw=="\n',
    ),
]


@pytest.mark.parametrize(("path", "text"), KEPT)
def test_look_alikes_are_kept(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).text == text


SECRETS = [
    # Passphrases of dotted words under a password's name (quoted, and bare in a compose env list).
    (
        "deploy/compose.yaml",
        'services:\n  s3:\n    environment:\n      S3_ROOT_PASSWORD: "quartz.tundra.marigold"\n',
        "quartz.tundra.marigold",
    ),
    (
        "deploy/compose.yaml",
        "services:\n  ui:\n    environment:\n      - UI_ADMIN_PASSWORD=lagoon.thistle.pewter\n",
        "lagoon.thistle.pewter",
    ),
    (
        ".gitlab-ci.yml",
        "deploy:\n  script:\n    - docker login -u bot -p 'harbor.velvet.cinder.otter' reg.test\n",
        "harbor.velvet.cinder.otter",
    ),
    # Command-line passwords: openssl enc -k, HTTPie -a, mysqladmin in an exec-form list, ssh-keygen -P/-N,
    # FreeRDP /p:, lftp -u user,pw, gpg --passphrase, MinIO's `mc alias set`.
    (
        "notes/backup.md",
        "$ openssl enc -aes-256-cbc -pbkdf2 -k 'Quokka4417^' -in a.tar -out a.enc\n",
        "Quokka4417^",
    ),
    ("notes/api.md", "$ http -a ops:Tundra?Maple?903 GET https://reg.test/v2/_catalog\n", "Tundra?Maple?903"),
    ("notes/api.md", "$ http --auth ops:Tundra?Maple?903 https://reg.test/v2/\n", "Tundra?Maple?903"),
    (
        "compose.yml",
        'db:\n  healthcheck:\n    test: ["CMD", "mysqladmin", "ping", "-uroot", "-pkestrel2031_"]\n',
        "kestrel2031_",
    ),
    (
        "home/u/.local/share/fish/fish_history",
        "- cmd: ssh-keygen -p -f ~/.ssh/id_rsa -P 'Fig-Lantern-377' -N 'otter maple quill55'\n  when: 1\n",
        "Fig-Lantern-377",
    ),
    (
        "home/u/.local/share/fish/fish_history",
        "- cmd: ssh-keygen -p -f ~/.ssh/id_rsa -P 'Fig-Lantern-377' -N 'otter maple quill55'\n  when: 1\n",
        "otter maple quill55",
    ),
    (
        "home/u/.bash_history",
        "xfreerdp /v:10.1.2.3 /u:Administrator /p:'Birch7302_' /cert:ignore\n",
        "Birch7302_",
    ),
    (
        "home/u/.zsh_history",
        ": 1700000000:3;lftp -u sync,pepper-walrus-ginger-canoe sftp://files.test\n",
        "pepper-walrus-ginger-canoe",
    ),
    (
        "home/u/.bash_history",
        "gpg --batch --pinentry-mode loopback --passphrase 'amber heron pylon' -d x.gpg\n",
        "amber heron pylon",
    ),
    (
        "home/u/.zsh_history",
        ": 1700000000:3;mc alias set lab https://s3.test QK3LMX7RT2ZP9VWA4B6C "
        "Hn4rT8vWq2xZk6pL9sD3fG7jB1mY5cN0aE8uR2iO\n",
        "Hn4rT8vWq2xZk6pL9sD3fG7jB1mY5cN0aE8uR2iO",
    ),
    # A raw `Authorization: Basic user password` (IntelliJ HTTP Client, VS Code REST Client).
    (
        "api/users.http",
        "GET https://a.test/api HTTP/1.1\nAuthorization: Basic admin lynx.garnet52\n",
        "lynx.garnet52",
    ),
    # A (user, password) tuple under a credentials name.
    ("ci/test.log", "creds = ('bot', 'walrus.saffron.ember.cobalt')\n", "walrus.saffron.ember.cobalt"),
    ("ci/test.log", "creds = ('svc', 'October41+')\n", "October41+"),
    # IPsec pre-shared keys, keepalived's VRRP password, OSPF keys, pppd's chap-secrets, Redis ACL passwords.
    ("net/asa.cfg", " ikev2 local-authentication pre-shared-key 27ferry.04\n", "27ferry.04"),
    ("net/ios.cfg", "crypto isakmp key Vq9trellis address 192.0.2.7\n", "Vq9trellis"),
    (
        "deploy/keepalived.conf",
        "    authentication {\n        auth_type PASS\n        auth_pass mQwTzRbL\n    }\n",
        "mQwTzRbL",
    ),
    ("net/frr.conf", "interface eth0\n ip ospf message-digest-key 2 md5 Tk8wPz3RqLc\n", "Tk8wPz3RqLc"),
    ("etc/ppp/chap-secrets", '# client  server  secret  IP\nalice   *   "Winter2031-"   *\n', "Winter2031-"),
    ("redis/users.acl", "user worker on >Qz7+pLm~Wk2Rt9Xv ~jobs:* +@list\n", "Qz7+pLm~Wk2Rt9Xv"),
    ("redis/setup.sh", "redis-cli ACL SETUSER reports on >Autumn2031! ~* +info\n", "Autumn2031!"),
    # SQL Server logins with a Unicode literal; OpenVPN's static key; a Bruno environment's token.
    (
        "db/logins.sql",
        "CREATE LOGIN [app] WITH PASSWORD = N'HarborKnot71', CHECK_POLICY = ON;\n",
        "HarborKnot71",
    ),
    (
        "vpn/site.ovpn",
        "<tls-auth>\n-----BEGIN OpenVPN Static key V1-----\n9c1f0e7a2b4d6c8e0f1a3b5c7d9e1f20\n"
        "-----END OpenVPN Static key V1-----\n</tls-auth>\n",
        "9c1f0e7a2b4d6c8e0f1a3b5c7d9e1f20",
    ),
    # A diff's added line, judged as a line of the file its hunk changes (`+++ b/compose.yaml`).
    (
        "patches/db.diff",
        "--- a/compose.yaml\n+++ b/compose.yaml\n@@ -5,1 +5,1 @@\n+      - DB_PASSWORD=MwRtKpZqLvNsXb\n",
        "MwRtKpZqLvNsXb",
    ),
    (
        "bruno/env/Prod.bru",
        "vars {\n  host: https://a.test\n  apiToken: Rk7vQ2nLw9XpT4bZ8cMh3JsY6dGf1aKe5uWq\n}\n",
        "Rk7vQ2nLw9XpT4bZ8cMh3JsY6dGf1aKe5uWq",
    ),
]


@pytest.mark.parametrize(("path", "text", "secret"), SECRETS)
def test_secrets_are_redacted(redactor: Redactor, path: str, text: str, secret: str) -> None:
    assert secret not in redactor.redact(text, path).text


STAY = [
    # Dotted names where a password goes are references, packages or hosts, not passphrases.
    ("app/settings.py", "password = self.config.password\n"),
    ("app/settings.py", "DB_PASSWORD = settings.database.secret\n"),
    ("deploy/app.yaml", "db:\n  password_file: conf.d.db\n"),
    # A publishable Stripe key after Bearer; the RFC 7617 Basic example; FreeRADIUS's example secret.
    (
        "capture/pay.har",
        '{"name": "authorization", "value": "Bearer pk_live_51Hq2Wx9Zk4Lp7Rt3Vb6Nm8Jc1Df5Gh0Ks"}\n',
    ),
    ("docs/auth.md", "    Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\n"),
    ("raddb/clients.conf", "client localhost {\n    ipaddr = 127.0.0.1\n    secret = testing123\n}\n"),
    # A Bitnami SealedSecret's encryptedData: encrypted to the controller's key, safe to commit.
    (
        "deploy/sealed.yaml",
        "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: db\n"
        "spec:\n  encryptedData:\n"
        "    password: AgBy3i4OJSWK+PiTySYZZA9rO43cGDEq7Wn2hQ9xKpLmR5tV"
        "b8cNd1Ef6Gu0Iz3Jy7Ha2Ws4Xq9Oe5Rk1Tl8Pm==\n",
    ),
    # A field's name after `=`, then the secret's path.
    ("home/u/.bash_history", "vault kv get -field=password kv/app/staging\n"),
    # ssh-keygen's -n lists principals; -N '' sets an empty passphrase; gpg reads a passphrase file.
    ("ops/ca.sh", "ssh-keygen -s ca_key -I build-host -n alice,bob,carol id_ed25519.pub\n"),
    ("ops/ca.sh", "ssh-keygen -t ed25519 -N '' -f ~/.ssh/id_deploy\n"),
    ("ops/gpg.sh", "gpg --batch --passphrase-file /run/secrets/gpg -d x.gpg\n"),
    # An ordinary HTTPie call and rdesktop reading the password from stdin.
    ("notes/api.md", "$ http -A bearer --auth-type bearer GET https://a.test/items\n"),
    ("ops/rdp.sh", "rdesktop -u admin -p - 10.1.2.3\n"),
    # A code file's diff: a bare name there is an expression.
    (
        "patches/app.diff",
        "--- a/app/db.py\n+++ b/app/db.py\n@@ -1,1 +1,1 @@\n+password = new_password_value\n",
    ),
    # A credentials tuple of names; a Redis ACL without a password.
    ("app/scopes.py", 'CREDENTIALS = ("client_id", "client_secret")\n'),
    ("redis/users.acl", "user default on nopass ~* &* +@all\n"),
]


@pytest.mark.parametrize(("path", "text"), STAY)
def test_look_alikes_stay(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).text == text
