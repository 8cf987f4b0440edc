"""Secrets the seventh outside red team got past the redactor (L01, L07-L11, L13-L16), and the
look-alikes that must stay.

Each positive went out in clear before the change (values here are our own, in the same shapes):
strongSwan ipsec.secrets (`: PSK "..."`, EAP, XAUTH); `sudo -S` fed by a here-string or by
`printf '%s\\n'`; SQL role passwords in PostgreSQL dollar quotes, E'' and U&'' literals, and Oracle's
`REPLACE "old"`; Cisco IOS-style configs (user and enable passwords of type 0 and 7, SNMP
communities and SNMPv3 passwords, TACACS+/RADIUS keys, key chains), Junos $9$ keys and VyOS
plaintext passwords; keepalived's `auth_pass` on one line; wpa_supplicant's psk; `net user /domain`
and `net use`; chpasswd input; a `\\` continuation between `-w` and its value; and a folded Cookie
header.

Hashes (IOS type 5/8/9 secrets) are left to the hash policy. The documented SNMP default
communities `public` and `private` are no secret: they stay.
`echo -e 'pw' | sudo -S`, `password="..."` in a wpa_supplicant network block, `net user NAME PW
/domain` and Oracle's new password before REPLACE were already caught: no positives here.
"""

from __future__ import annotations

import pytest

from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


SECRETS = [
    # L01: strongSwan ipsec.secrets, any file name, any selectors.
    ("vpn/ipsec.secrets", '%any %any : PSK "GrebeLantern42"\n', "GrebeLantern42"),
    ("etc/secrets.conf", ': PSK "GrebeLantern42"\n', "GrebeLantern42"),
    ("vpn/ipsec.secrets", "192.0.2.10 198.51.100.7 : PSK 0sUm9iaW5Ta3lsYXJrOTE=\n", "0sUm9iaW5Ta3lsYXJrOTE="),
    ("vpn/ipsec.secrets", 'gw.corp.test : EAP "otterquarry"\n', "otterquarry"),
    ("vpn/ipsec.secrets", 'carol@corp.test : XAUTH "MarlinPebble7"\n', "MarlinPebble7"),
    ("vpn/ipsec.secrets", '2001:db8::5 : PSK "GrebeLantern42"\n', "GrebeLantern42"),
    # L07: sudo -S from a here-string or printf with a format.
    ("ops/boot.sh", "sudo -S systemctl restart nginx <<< 'TernVessel83'\n", "TernVessel83"),
    ("ops/boot.sh", "printf '%s\\n' 'TernVessel83' | sudo -S apt-get update\n", "TernVessel83"),
    # L08: SQL role passwords.
    ("db/roles.sql", "CREATE ROLE app LOGIN PASSWORD $$PlumHarbor551$$;\n", "PlumHarbor551"),
    ("db/roles.sql", "ALTER ROLE app WITH PASSWORD $pw$PlumHarbor551$pw$;\n", "PlumHarbor551"),
    ("db/roles.sql", "CREATE ROLE rpt LOGIN PASSWORD E'PlumHarbor551';\n", "PlumHarbor551"),
    ("db/roles.sql", "CREATE USER rpt PASSWORD U&'PlumHarbor551';\n", "PlumHarbor551"),
    ("db/ora.sql", 'ALTER USER scott IDENTIFIED BY "NewFjord2291" REPLACE "OldFjord1187";\n', "OldFjord1187"),
    # L09: Cisco IOS-style configs.
    ("net/router.cfg", "username admin privilege 15 secret 0 KestrelDune61\n", "KestrelDune61"),
    ("net/router.cfg", "username ops password 0 KestrelDune61\n", "KestrelDune61"),
    ("net/router.cfg", "username ops password 7 0822455D0A16544541\n", "0822455D0A16544541"),
    ("net/router.cfg", "enable password dunekestrel\n", "dunekestrel"),
    ("net/router.cfg", "enable secret 0 KestrelDune61\n", "KestrelDune61"),
    ("net/router.cfg", "snmp-server community CommHarrier27 RO\n", "CommHarrier27"),
    ("net/router.cfg", "snmp-server community CommHarrier27 RW 10\n", "CommHarrier27"),
    ("net/router.cfg", "tacacs-server key TacWombat905\n", "TacWombat905"),
    ("net/router.cfg", "tacacs-server host 10.20.0.5 key TacWombat905\n", "TacWombat905"),
    ("net/router.cfg", "radius-server key 7 TacWombat905\n", "TacWombat905"),
    (
        "net/router.cfg",
        "radius server ISE1\n address ipv4 10.20.0.9 auth-port 1812\n key RadGecko4471\n",
        "RadGecko4471",
    ),
    ("net/router.cfg", "key chain OSPF\n key 1\n  key-string ChainMoth339\n", "ChainMoth339"),
    (
        "net/router.cfg",
        "snmp-server user monitor NMS v3 auth sha AuthLynx3210 priv aes 128 PrivLynx6540\n",
        "AuthLynx3210",
    ),
    (
        "net/router.cfg",
        "snmp-server user monitor NMS v3 auth sha AuthLynx3210 priv aes 128 PrivLynx6540\n",
        "PrivLynx6540",
    ),
    ("net/junos.conf", 'secret "$9$dkbgoZGj";\n', "dkbgoZGj"),
    (
        "net/vyos.conf",
        "set system login user ops authentication plaintext-password 'heronvyos'\n",
        "heronvyos",
    ),
    # L10: keepalived on one line.
    (
        "net/keepalived.conf",
        "vrrp_instance V { authentication { auth_type PASS; auth_pass QuailKeep8 } }\n",
        "QuailKeep8",
    ),
    ("net/keepalived.conf", "authentication { auth_type PASS auth_pass QuailKeep8 }\n", "QuailKeep8"),
    # L11: wpa_supplicant.
    ("net/wpa_supplicant.conf", 'network={\n ssid="home"\n psk="MothLagoon7731"\n}\n', "MothLagoon7731"),
    (
        "net/wpa.conf",
        'network={\n ssid="lab"\n psk=3b1f9a07c2d46e58b90a1c3d5e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091\n}\n',
        "3b1f9a07c2d46e58b90a1c3d5e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091",
    ),
    # L13: Windows net user / net use.
    ("ops/win.cmd", "net user /domain bob PenguinSlate44\r\n", "PenguinSlate44"),
    ("ops/win.ps1", "net use Z: \\\\files01\\team PenguinSlate44 /user:bob\r\n", "PenguinSlate44"),
    # L14: chpasswd input.
    ("ops/users.sh", "echo 'dave:HollyCanyon19' | chpasswd\n", "HollyCanyon19"),
    ("ops/users.sh", "echo dave:HollyCanyon19 | sudo chpasswd\n", "HollyCanyon19"),
    ("ops/users.sh", "chpasswd <<< 'dave:HollyCanyon19'\n", "HollyCanyon19"),
    ("ops/users.sh", "chpasswd <<EOF\ndave:HollyCanyon19\nEOF\n", "HollyCanyon19"),
    # L15: `-w \` with the value on the next line.
    (
        "ops/ldap.sh",
        "ldapsearch -x -D cn=admin,dc=corp \\\n  -w \\\n  BisonLedger52 -b dc=corp\n",
        "BisonLedger52",
    ),
    ("ops/ldap.sh", "ldapmodify -x -D cn=admin -w \\\n  'BisonLedger52' -f x.ldif\n", "BisonLedger52"),
    ("ops/keys.sh", "keytool -list -keystore ks.jks -storepass \\\n  BisonLedger52\n", "BisonLedger52"),
    # L16: a Cookie header folded onto a continuation line.
    (
        "http/req.txt",
        "GET / HTTP/1.1\r\nHost: a.test\r\nCookie: JSESSIONID=\r\n  F3k9QmZt7LpWx2Rb\r\n\r\n",
        "F3k9QmZt7LpWx2Rb",
    ),
    ("http/req.txt", "GET / HTTP/1.1\nCookie:\n  sessionid=F3k9QmZt7LpWx2Rb\n", "F3k9QmZt7LpWx2Rb"),
]


@pytest.mark.parametrize(("path", "text", "secret"), SECRETS)
def test_secrets_are_redacted(redactor: Redactor, path: str, text: str, secret: str) -> None:
    out = redactor.redact(text, origin=path).text
    assert secret not in out, out


LOOK_ALIKES = [
    # strongSwan: a reference or prose.
    ("vpn/ipsec.secrets", ': PSK "${IPSEC_PSK}"\n'),
    ("docs/vpn.md", "The secrets file maps selectors to keys: PSK entries first.\n"),
    # sudo here-strings of a variable.
    ("ops/boot.sh", 'sudo -S reboot <<< "$SUDO_PASSWORD"\n'),
    ("ops/boot.sh", "printf '%s\\n' \"$PW\" | sudo -S reboot\n"),
    # SQL: a bind parameter, a function body in dollar quotes.
    ("db/roles.sql", "CREATE ROLE app LOGIN PASSWORD $1;\n"),
    ("db/fn.sql", "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1 $$ LANGUAGE sql;\n"),
    # Cisco: hashes, defaults, descriptions, no secret.
    ("net/router.cfg", "interface Gi0/1\n description uplink to core, password reset vlan\n"),
    ("net/router.cfg", "snmp-server community public RO\n"),
    ("net/router.cfg", "snmp-server community private RW\n"),
    ("net/router.cfg", "username admin privilege 15 secret 5 $1$mERr$hx5rVt7rPNoS4wqbXKX7m0\n"),
    ("net/router.cfg", "enable secret 9 $9$nhEmQVczB7dqsO$X.HsgL6x1il0RxkOSSvyQYwucySCt7qFm4v7pqCxkKM\n"),
    ("net/router.cfg", "username ops password 0 <password>\n"),
    ("net/router.cfg", "tacacs-server key $TACACS_KEY\n"),
    ("docs/snmp.md", "Run `snmp-server user` with auth sha and a passphrase of your own.\n"),
    # keepalived: a template.
    ("net/keepalived.conf", "authentication { auth_type PASS; auth_pass {{ vrrp_pass }} }\n"),
    # wpa_supplicant: a placeholder, an ssid.
    ("net/wpa.conf", 'network={\n ssid="home-network"\n psk="your_passphrase"\n}\n'),
    # net user / net use without a password.
    ("ops/win.cmd", "net user /domain bob\r\n"),
    ("ops/win.cmd", "net use Z: \\\\files01\\team /user:bob\r\n"),
    ("ops/win.cmd", "net use Z: \\\\files01\\team * /user:bob\r\n"),
    # chpasswd from a variable.
    ("ops/users.sh", 'echo "dave:$NEW_PW" | chpasswd\n'),
    # -w \ then a prompt flag.
    ("ops/ldap.sh", "ldapsearch -x -D cn=admin \\\n  -W -b dc=corp\n"),
    # a folded header that is no cookie.
    ("http/req.txt", "GET / HTTP/1.1\nAccept: text/html,\n  application/xhtml+xml\n"),
    ("docs/notes.md", "Set the session cookie carefully.\n"),
]


@pytest.mark.parametrize(("path", "text"), LOOK_ALIKES)
def test_look_alikes_stay(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, origin=path).text == text
