"""Shapes of the eighth independent set's tuned half (provisioning, operating-system, desktop-tool
and personal credential files, data exports), written again here with our own values, and the
look-alikes the set labels as no secret (ciphertext whose key is elsewhere, IVs and salts, a
vendor's documented example). Each positive went out in clear before the change.
"""

from __future__ import annotations

import base64

import pytest

from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"
PW = "Quarry7Lantern"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


B64 = base64.b64encode(PW.encode()).decode()

SECRETS = [
    ("export/zugaenge.csv", f"Benutzer;Kennwort;Abteilung\nh.becker;{PW};Lager\n", PW),
    (
        "butane/backup.bu",
        "systemd:\n  units:\n    - name: backup.service\n      contents: |\n"
        "        [Service]\n"
        "        Environment=AWS_SECRET_ACCESS_KEY=Qx7vN2kLp9Rt4Wz8Yb3Hc6Jd1Fg5Sm0Ae2Ui9Ok\n",
        "Qx7vN2kLp9Rt4Wz8Yb3Hc6Jd1Fg5Sm0Ae2Ui9Ok",
    ),
    (
        "sitemanager.xml",
        f'<Server>\n  <User>deploy</User>\n  <Pass encoding="base64">{B64}</Pass>\n</Server>\n',
        B64,
    ),
    ("wpa_supplicant.conf", f'network={{\n\tssid="Home"\n\t#psk="{PW}"\n\tpsk=' + "ab" * 32 + "\n}\n", PW),
    ("squid.conf", f"cache_peer up.example.net parent 8080 0 no-query login=branch07:{PW}\n", PW),
    ("printers.conf", f"DeviceURI smb://CORP/print-svc:{PW}@printsrv01/Laser\n", PW),
    (
        "keepass.xml",
        f'<String>\n  <Key>Password</Key>\n  <Value ProtectInMemory="True">{PW}</Value>\n</String>\n',
        PW,
    ),
    ("nagios/resource.cfg", f"$USER1$=/usr/lib/nagios/plugins\n$USER3$={PW}\n", PW),
    (".pgpass", "db.example.com:5432:orders:app:Arjun%sakura8\n", "Arjun%sakura8"),
    ("group_vars/relay.yml", "smtp_relay_password:\n  Pepper?281x\n", "Pepper?281x"),
    (
        "metrics.ign",
        '{"contents": {"source": "data:,DSN%3Dpostgres%3A%2F%2Fm%3AFruehling2024%2B%3D%40'
        '10.0.3.4%2Fm%0AX%3D1%0A"}}\n',
        "Fruehling2024%2B",
    ),
    (".config/hexchat/servlist.conf", f"N=Libera\nE=UTF-8\nP={PW}\n", PW),
    ("ks.cfg", f"network --device=wlp2s0 --essid=LabNet --wpakey={PW} --activate\n", PW),
    ("etc/rsyncd.secrets", f"backup:{PW}\n", PW),
    ("wifi.txt", f"WIFI:T:WPA;S:Lobby;P:{PW};;\n", PW),
    ("var/lib/iwd/home.psk", f"[Security]\nPassphrase={PW}\n", PW),
    ("etc/postfix/sasl_passwd", f"[smtp.example.org]:587 relay@example.org:{PW}\n", PW),
    (".davfs2/secrets", f"https://cloud.example.org/dav/ marta {PW}\n", PW),
    ("history", f"rabbitmqctl change_password orders '{PW}'\n", PW),
    ("etc/nslcd.conf", f"uid nslcd\nbindpw {PW}\n", PW),
    (
        "WLAN-Lab.xml",
        f"<sharedKey>\n  <keyType>passPhrase</keyType>\n  <keyMaterial>{PW}</keyMaterial>\n</sharedKey>\n",
        PW,
    ),
    # Left from stop 55's helper list: network devices' configs.
    ("junos.conf", f'system {{\n    radius-server 10.0.0.5 secret "{PW}";\n}}\n', PW),
    ("mikrotik.rsc", f"/user add name=admin password={PW} group=full\n", PW),
    (
        "mikrotik.rsc",
        f"/interface wireless security-profiles set [ find default=yes ] wpa2-pre-shared-key={PW}\n",
        PW,
    ),
    ("ipsec.secrets", f": PSK {PW}\n", PW),
    # The review of stop 57's variants.
    ("etc/nslcd.conf", f"uid nslcd\r\nbindpw {PW}\r\n", PW),
    ("ks.cfg", f"rootpw --plaintext {PW}\n", PW),
    (".davfs2/secrets", f'/mnt/team teamshare "{PW}"\n', PW),
    ("history", f"rabbitmqctl -n rabbit@node1 add_user orders {PW}\n", PW),
    ("wifi.txt", f'WIFI:T:WPA;S:Lobby;P:"{PW};x";;\n', PW),
    (".tcshrc", f"setenv DB_PASSWORD {PW}\n", PW),
    ("build.mak", f"define DB_PASSWORD :=\n{PW}\nendef", PW),
]


@pytest.mark.parametrize("path,text,secret", SECRETS)
def test_secrets_are_redacted(redactor: Redactor, path: str, text: str, secret: str) -> None:
    out = redactor.redact(text, path).text
    assert secret not in out and "[REDACTED:" in out, out


KEPT = [
    (
        "common.eyaml",
        "profile::db::password: ENC[PKCS7,MIIBiQYJKoZIhvcNAQcDoIIBejCCAXYCAQAxggEhMIIBHQIBADAFMAACAQEw]\n",
    ),
    (
        "NuGet.Config",
        '<add key="Password" value="AQAAANCMnd8BFdERjHoAwE/Cl+sBAAAAOtiDXxgcqW3kuIiHWZkPGZ6HbmsLSqRu" />\n',
    ),
    (
        "WLAN-Office.xml",
        "<keyMaterial>01000000D08C9DDF0115D1118C7A00C04FC297EB010000007A227B57B7363674D727E093</keyMaterial>\n",
    ),
    ("data_bags/db.json", '{"iv": "+m4bPMgqnTqd62Ya", "auth_tag": "eUHBXpMCLh0aMSmgGwy4oQ=="}\n'),
    ("preseed.cfg", "#d-i passwd/root-password-again password r00tme\n"),
    ("nagios/resource.cfg", "$USER1$=/usr/lib/nagios/plugins\n"),
    ("slapd.conf", "rootpw {SSHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n"),
    ("wifi.txt", "WIFI:T:nopass;S:Guest;P:;;\n"),
    ("s.py", 'msg = "%s is not a valid password" % user\n'),
    ("run.sh", 'echo "last login=2024-05-01T10:30:00"\n'),
    ("game/resource.cfg", "icon:assets/icon.png\nmusic:assets/theme.ogg\n"),
    ("notes.md", "请问 token：访问令牌，应该在哪里配置？\n"),
]


@pytest.mark.parametrize("path,text", KEPT)
def test_look_alikes_stay(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).findings == []
