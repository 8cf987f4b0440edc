"""Secrets the sixth outside red team got past the redactor (H3, H4, H5, H6, H8), and the
look-alikes that must stay.

Each positive went out in clear before the change (values here are our own, in the same shapes):
letters-only passwords after `password=` in a libpq DSN kept in a variable, a form body, a log
line, Dockerfile `ENV NAME=value` and systemd `Environment="NAME=value"`; PostgreSQL role passwords
(`CREATE ROLE ... LOGIN PASSWORD '...'`); command-line passwords (ldapsearch -w, htpasswd -b with
flags around it, sudo -S from echo, `net user NAME PW`, keytool -storepass, kubectl --from-literal,
helm --set); session cookies (Cookie, Set-Cookie, HAR pairs and cookie objects); Go's
smtp.PlainAuth, .NET's NetworkCredential and PowerShell's ConvertTo-SecureString -AsPlainText.

CSRF tokens are not credentials (they open no account): a cookie named for one is not redacted by
its name; its value still is where it looks random (the random-cookie rule reads no names).
"""

from __future__ import annotations

import pytest

from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


SECRETS = [
    # H3: `password=` inside a string or a line of text, letters-only values.
    (
        "app/db.py",
        'DSN = "host=pg.internal port=5432 user=billing password=quincemarigold dbname=ledger"\n',
        "quincemarigold",
    ),
    ("app/db.py", 'DSN = "password=quincemarigold host=pg.internal user=billing"\n', "quincemarigold"),
    (
        "bin/psql.sh",
        'psql "host=pg user=billing password=quincemarigold dbname=ledger" -c "select 1"\n',
        "quincemarigold",
    ),
    ("app/login.py", 'LOGIN_FORM = "username=operator&password=cobaltjuniper"\n', "cobaltjuniper"),
    ("app/login.js", "const body = 'email=a%40b.org&user%5Bpassword%5D=cobaltjuniper';\n", "cobaltjuniper"),
    ("Dockerfile", "FROM python:3.12\nENV DB_PASSWORD=walnutpelican\n", "walnutpelican"),
    ("Dockerfile", "FROM node:20\nENV NODE_ENV=production ADMIN_PASSWORD=walnutpelican\n", "walnutpelican"),
    ("Dockerfile.prod", "FROM alpine\nARG ADMIN_PASSWORD=walnutpelican\n", "walnutpelican"),
    ("deploy/app.service", '[Service]\nEnvironment="DB_PASSWORD=heronbriquette"\n', "heronbriquette"),
    (
        "deploy/app.service",
        '[Service]\nEnvironment="APP_ENV=prod" "DB_PASSWORD=heronbriquette"\n',
        "heronbriquette",
    ),
    (
        "deploy/compose.yaml",
        'services:\n  db:\n    environment:\n      - "POSTGRES_PASSWORD=heronbriquette"\n',
        "heronbriquette",
    ),
    (
        "run.py",
        'subprocess.run(["docker", "run", "-e", "DB_PASSWORD=heronbriquette", "app"])\n',
        "heronbriquette",
    ),
    (
        "logs/app.log",
        "2024-06-02T10:11:12Z ERROR pool: connect failed: host=pg user=billing password=lanternmosaic\n",
        "lanternmosaic",
    ),
    # H4: PostgreSQL role passwords.
    ("db/001_roles.sql", "CREATE ROLE analytics LOGIN PASSWORD 'gondolasaffron';\n", "gondolasaffron"),
    ("db/001_roles.sql", "ALTER ROLE app_rw WITH LOGIN PASSWORD 'ThistleCopperMoth';\n", "ThistleCopperMoth"),
    ("db/001_roles.sql", "ALTER USER loader PASSWORD 'porcelainwombat';\n", "porcelainwombat"),
    (
        "db/001_roles.sql",
        "CREATE USER loader WITH ENCRYPTED PASSWORD 'porcelainwombat';\n",
        "porcelainwombat",
    ),
    (
        "db/002_roles.sql",
        "CREATE ROLE reporting WITH\n  LOGIN\n  CONNECTION LIMIT 5\n"
        "  PASSWORD 'gondolasaffron'\n  VALID UNTIL 'infinity';\n",
        "gondolasaffron",
    ),
    ("db/roles.py", "cur.execute(\"CREATE ROLE etl LOGIN PASSWORD 'gondolasaffron'\")\n", "gondolasaffron"),
    # H5: command-line passwords.
    (
        "ops/provision.sh",
        'ldapsearch -x -H ldap://dc2 -D "cn=reader,dc=corp" -w \'Pm7kWz3Qr8\' -b "dc=corp"\n',
        "Pm7kWz3Qr8",
    ),
    ("ops/provision.sh", 'ldapmodify -x -D "cn=admin,dc=corp" -w Pm7kWz3Qr8 -f change.ldif\n', "Pm7kWz3Qr8"),
    (
        "ops/provision.sh",
        'ldapadd -x -D "cn=admin,dc=corp" -w "lavenderbison" -f users.ldif\n',
        "lavenderbison",
    ),
    (
        "ops/provision.sh",
        'ldappasswd -x -D "cn=admin,dc=corp" -w Pm7kWz3Qr8 -s Nc4vTy9Hb2 "uid=bob,dc=corp"\n',
        "Nc4vTy9Hb2",
    ),
    (
        "ops/provision.sh",
        'ldapdelete -x -H ldap://dc2 \\\n  -D "cn=admin,dc=corp" \\\n  -w Pm7kWz3Qr8 "uid=old,dc=corp"\n',
        "Pm7kWz3Qr8",
    ),
    ("ops/provision.sh", "htpasswd -b -c /etc/nginx/.htpasswd admin Gd5sXc2Vf9\n", "Gd5sXc2Vf9"),
    ("ops/provision.sh", "htpasswd -cbB /etc/nginx/.htpasswd admin Gd5sXc2Vf9\n", "Gd5sXc2Vf9"),
    ("ops/provision.sh", "htpasswd -bBC 10 /etc/apache2/.htpasswd ops Gd5sXc2Vf9\n", "Gd5sXc2Vf9"),
    ("ops/provision.sh", "htpasswd -nb admin Gd5sXc2Vf9 >> auth/htpasswd\n", "Gd5sXc2Vf9"),
    ("ops/provision.sh", "htpasswd -n -b admin Gd5sXc2Vf9\n", "Gd5sXc2Vf9"),
    ("ops/provision.sh", "echo 'Bw8nRq4Ty6' | sudo -S systemctl restart app\n", "Bw8nRq4Ty6"),
    ("ops/provision.sh", 'echo "lavenderbison" | sudo -S -u deploy ./migrate.sh\n', "lavenderbison"),
    ("ops/setup.bat", "net user svc_report Hk2mPw7Zd5 /add\n", "Hk2mPw7Zd5"),
    ("ops/setup.ps1", 'Invoke-Expression "net user svc_report lavenderbison /domain"\n', "lavenderbison"),
    (
        "ops/keys.sh",
        "keytool -importkeystore -srckeystore in.p12 -destkeystore app.jks -storepass lavenderbison\n",
        "lavenderbison",
    ),
    (
        "ops/keys.sh",
        "keytool -genkeypair -alias app -keystore app.jks -keypass 'lavenderbison' -dname CN=app\n",
        "lavenderbison",
    ),
    ("ops/keys.sh", "jarsigner -keystore app.jks -storepass lavenderbison app.jar app\n", "lavenderbison"),
    (
        "ops/k8s.sh",
        "kubectl create secret generic db --from-literal=username=app "
        "--from-literal=password=lavenderbison\n",
        "lavenderbison",
    ),
    ("ops/helm.sh", "helm upgrade --install app ./chart --set db.password=lavenderbison\n", "lavenderbison"),
    (
        "ops/helm.sh",
        "helm install pg bitnami/postgresql --set auth.username=app,auth.password=lavenderbison\n",
        "lavenderbison",
    ),
    # H6: session cookies.
    (
        "notes/debug-session.txt",
        "> GET /api HTTP/1.1\n> Cookie: JSESSIONID=0B7E29C4A1D3F58E6B2C9A0D4E7F1C3B\n",
        "0B7E29C4A1D3F58E6B2C9A0D4E7F1C3B",
    ),
    (
        "notes/debug-session.txt",
        "< Set-Cookie: connect.sid=s%3Aq8Jf2WbN5xLk3RzT.mNp4Vh7Yc1; Path=/; HttpOnly\n",
        "q8Jf2WbN5xLk3RzT",
    ),
    (
        "notes/req.http",
        "GET /me HTTP/1.1\nCookie: lang=en; PHPSESSID=k3v9q2m7x1c5b8n4z6r0t2y4\n",
        "k3v9q2m7x1c5b8n4z6r0t2y4",
    ),
    ("notes/req.http", "Cookie: _gh_sess=Hq2Wx9Zk4Lp7; theme=dark\n", "Hq2Wx9Zk4Lp7"),
    ("notes/req.http", "Cookie: lang=en; li_at=k3v9q2m7x1c5b8n4z6w8p0\n", "k3v9q2m7x1c5b8n4z6w8p0"),
    (
        "capture/login.har",
        '{"name":"Cookie","value":"laravel_session=Wn5Jd8Kq2Pv7Hs4Xb"}\n',
        "Wn5Jd8Kq2Pv7Hs4Xb",
    ),
    (
        "capture/login.har",
        '{\n  "name": "Set-Cookie",\n  "value": "sessionid=x7k2m9q4w1e8r5t3; Path=/; HttpOnly"\n}\n',
        "x7k2m9q4w1e8r5t3",
    ),
    (
        "capture/state.json",
        '{"cookies": [{"name": "auth_session", "value": "lp3xw8nz5qr2ty7bv4",\n'
        '  "domain": "app.acme.io", "path": "/", "httpOnly": true, "secure": true}]}\n',
        "lp3xw8nz5qr2ty7bv4",
    ),
    (
        "scripts/fetch.py",
        'r = requests.get(url, headers={"Cookie": "sessionid=q9w8e7r6t5y4u3i2"})\n',
        "q9w8e7r6t5y4u3i2",
    ),
    ("scripts/fetch.sh", "curl -b 'sid=zm4xc7vb2nq9' https://app.acme.io/me\n", "zm4xc7vb2nq9"),
    ("scripts/fetch.sh", 'curl --cookie "a=1; sid=Zm4Xc7Vb2Nq9" https://app.acme.io/me\n', "Zm4Xc7Vb2Nq9"),
    # H8: Go's smtp.PlainAuth, .NET's NetworkCredential, PowerShell.
    (
        "mail/mail.go",
        'var auth = smtp.PlainAuth("", "ops@acme.io", "pQ7%vRt2Lw!", "smtp.acme.io")\n',
        "pQ7%vRt2Lw!",
    ),
    ("mail/mail.go", 'a := smtp.CRAMMD5Auth("ops@acme.io", "Kd9xWq3Zm7")\n', "Kd9xWq3Zm7"),
    ("Mail.cs", 'client.Credentials = new NetworkCredential("ops", "lavenderbison");\n', "lavenderbison"),
    ("Mail.cs", 'var c = new NetworkCredential(user, @"lavenderbison", "CORP");\n', "lavenderbison"),
    ("deploy.ps1", '$pw = ConvertTo-SecureString "lavenderbison" -AsPlainText -Force\n', "lavenderbison"),
    (
        "deploy.ps1",
        '$pw = ConvertTo-SecureString -AsPlainText -Force -String "lavenderbison"\n',
        "lavenderbison",
    ),
    ("deploy.ps1", '$s = "lavenderbison" | ConvertTo-SecureString -AsPlainText -Force\n', "lavenderbison"),
]


@pytest.mark.parametrize(("path", "text", "secret"), SECRETS)
def test_secrets_are_redacted(redactor: Redactor, path: str, text: str, secret: str) -> None:
    assert secret not in redactor.redact(text, path).text


LOOK_ALIKES = [
    # Review of stop 55: prose that starts with "Net user", a session-like name after `; ` in shell.
    ("docs/report.md", "Net user growth accelerated throughout Q3 across regions.\n"),
    ("scripts/env.sh", "curl -s https://x.example\nexport A=1; AUTH_METHOD=scram-sha-256\n"),
    # H3: variables, placeholders and code keyword arguments.
    ("app/db.py", "conn = psycopg2.connect(host=host, user=user, password=confirmation)\n"),
    ("app/db.py", 'conn = connect(host="db", user="app", password=password)\n'),
    ("app/db.py", 'DSN = "host=%s user=%s password=%s dbname=%s" % (h, u, p, d)\n'),
    ("app/db.py", 'DSN = f"host={host} user={user} password={password} dbname={db}"\n'),
    ("app/db.py", 'DSN = "host=db user=app password=$PGPASSWORD"\n'),
    ("app/db.py", 'log.info("connect host=%s user=%s password=*****", host, user)\n'),
    ("app/login.py", 'url = base + "?user=" + user + "&password=" + password\n'),
    ("app/login.py", 'FORM = "username=admin&password=<password>"\n'),
    ("app/login.py", 'FORM = "username={}&password={}".format(user, pw)\n'),
    ("Dockerfile", "FROM python:3.12\nARG DB_PASSWORD\nENV DB_PASSWORD=${DB_PASSWORD}\n"),
    ("Dockerfile", "FROM python:3.12\nENV DB_PASSWORD_FILE=/run/secrets/db_password\n"),
    (
        "deploy/app.service",
        '[Service]\nEnvironment="DB_PASSWORD_FILE=/run/secrets/db"\nEnvironmentFile=/etc/app.env\n',
    ),
    ("deploy/compose.yaml", 'services:\n  db:\n    environment:\n      - "POSTGRES_PASSWORD=${PG_PW}"\n'),
    ("app/settings.py", 'FLAGS = ["password=password", "token=changeme"]\n'),
    # H4: bind parameters, psql variables, placeholders, NULL.
    ("db/roles.sql", "ALTER ROLE app PASSWORD :pw;\nALTER USER app PASSWORD :'pw';\n"),
    ("db/roles.sql", "CREATE ROLE app LOGIN PASSWORD $1;\nALTER ROLE app PASSWORD NULL;\n"),
    ("db/roles.sql", "CREATE ROLE app LOGIN PASSWORD '${DB_PASSWORD}';\n"),
    ("db/roles.sql", "ALTER USER app WITH PASSWORD '<password>';\n"),
    ("db/roles.py", 'cur.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(name, pw))\n'),
    ("db/roles.py", "cur.execute(f\"ALTER ROLE {name} PASSWORD '{pw}'\")\n"),
    ("db/schema.sql", "CREATE TABLE users (id int, password text NOT NULL);\n"),
    # H5: prompts, files and variables.
    ("ops/a.sh", 'ldapsearch -x -W -D "cn=admin,dc=corp" -b "dc=corp"\n'),
    ("ops/a.sh", 'ldapsearch -x -y /etc/ldap.secret -D "cn=admin,dc=corp" -s sub "(uid=bob)"\n'),
    ("ops/a.sh", 'ldapsearch -x -w "$LDAP_PW" -D "cn=admin,dc=corp"\n'),
    ("ops/a.sh", "htpasswd -c /etc/nginx/.htpasswd admin\nhtpasswd -B /etc/nginx/.htpasswd ops\n"),
    ("ops/a.sh", 'htpasswd -nb admin "$ADMIN_PW" > auth/htpasswd\n'),
    ("ops/a.sh", 'echo "$SUDO_PW" | sudo -S true\necho hello | sudo tee /etc/motd\n'),
    ("ops/a.bat", "net user admin /active:yes\nnet user svc_backup * /add\nnet user svc_backup /delete\n"),
    ("docs/notes.md", "Net user growth was strong this quarter.\n"),
    (
        "ops/a.sh",
        'keytool -list -keystore app.jks -storepass:env STOREPASS\nkeytool -list -storepass "$STOREPASS"\n',
    ),
    ("ops/a.sh", "keytool -list -keystore cacerts -storepass changeit\n"),
    (
        "ops/a.sh",
        'kubectl create secret generic db --from-literal=username=admin --from-literal=password="$PW"\n',
    ),
    ("ops/a.sh", "helm upgrade app ./chart --set auth.existingSecret=redis-creds --set image.tag=1.2.3\n"),
    ("ops/a.sh", "helm upgrade app ./chart --set db.password=$DB_PASSWORD\n"),
    # H6: attributes, plain cookies, cleared and templated sessions.
    ("notes/req.http", "Set-Cookie: theme=dark; Path=/; Max-Age=31536000; SameSite=Lax\n"),
    ("notes/req.http", "Cookie: lang=en; theme=dark; tz=Europe%2FBerlin\n"),
    ("notes/req.http", "Set-Cookie: sessionid=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/\n"),
    ("notes/req.http", "Set-Cookie: sessionid=deleted; Domain=.shop.acme.io; Path=/account/settings\n"),
    ("notes/req.http", "Set-Cookie: csrftoken=abcdefgh; Path=/\n"),
    ("capture/x.har", '{"name":"Cookie","value":"lang=en; theme=dark"}\n'),
    ("app/auth.py", 'resp.headers["Set-Cookie"] = f"session={token}; HttpOnly; Path=/"\n'),
    ("app/auth.js", 'document.cookie = "sessionid=" + sid + "; path=/";\n'),
    ("app/auth.js", "const c = `Cookie: sessionid=${session}`;\n"),
    ("app/auth.py", 'COOKIE_NAME = "sessionid"\nSESSION_COOKIE_AGE = 1209600\n'),
    # H8: variables and prompts.
    ("mail/mail.go", 'auth := smtp.PlainAuth("", cfg.User, os.Getenv("SMTP_PASSWORD"), cfg.Host)\n'),
    ("mail/mail.go", 'auth := smtp.PlainAuth("", user, password, host)\n'),
    (
        "Mail.cs",
        'var c = new NetworkCredential(user, password);\nvar d = new NetworkCredential("ops", pwd);\n',
    ),
    (
        "deploy.ps1",
        "$pw = ConvertTo-SecureString $plain -AsPlainText -Force\n$s = Read-Host -AsSecureString\n",
    ),
    ("deploy.ps1", "$pw = ConvertTo-SecureString -String $env:DEPLOY_PW -AsPlainText -Force\n"),
]


@pytest.mark.parametrize(("path", "text"), LOOK_ALIKES)
def test_look_alikes_stay(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).text == text


def test_set_cookie_keeps_its_attributes(redactor: Redactor) -> None:
    line = "Set-Cookie: sessionid=x7k2m9q4w1e8r5t3; Domain=acme.io; Path=/; Max-Age=3600; SameSite=Lax\n"
    out = redactor.redact(line, "notes/t.txt").text
    assert "x7k2m9q4w1e8r5t3" not in out
    assert out.endswith("; Domain=acme.io; Path=/; Max-Age=3600; SameSite=Lax\n")


def test_csrf_cookie_is_not_a_session_by_name(redactor: Redactor) -> None:
    """A CSRF token opens no account: a short one under its name stays (a random-looking value of
    16+ characters is still masked by the cookie-value rule, which reads no names)."""
    text = "Cookie: csrftoken=k3v9q2m7x1; sessionid=k3v9q2m7x2\n"
    out = redactor.redact(text, "notes/t.txt").text
    assert "csrftoken=k3v9q2m7x1" in out
    assert "k3v9q2m7x2" not in out
