"""A labelled generator of secrets in code and config, with a fixed seed.

Positives: provider tokens, private-key blocks, JWTs, passwords in URLs,
Authorization headers, `curl -u`, connection-string fields and keyword
assignments, each embedded in a small snippet of one of 13 syntaxes, with the
exact character span of the secret. Half sit under keyword-named variables
(`stripe_api_key`), half under neutral names (`value`, `cfg_a`), where only the
secret's own shape, or its structural context, gives it away.

Hard negatives: git SHAs, sha256/md5 digests, UUIDs, lockfile integrity
strings, placeholders, environment lookups, variable references, public keys,
certificates, data URIs, i18n strings and documented example keys.

Every value is random (from `random.Random(seed)`); nothing here is a real credential.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

SEED = 20261130
ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
PASSWORD_SYMBOLS = "!$%^*-_=+~.,"

SYNTAXES = ("python", "js", "ts", "go", "java", "yaml", "json", "toml", "ini", "env", "shell", "xml", "hcl")
FILENAMES = {
    "python": "settings.py", "js": "config.js", "ts": "client.ts", "go": "main.go", "java": "App.java",
    "yaml": "values.yaml", "json": "config.json", "toml": "config.toml", "ini": "app.ini", "env": ".env",
    "shell": "deploy.sh", "xml": "web.config", "hcl": "main.tf",
}  # fmt: skip
NEUTRAL_NAMES = (
    "value", "data", "cfg_a", "item", "x1", "default_value", "payload_field", "conf", "opts_b", "field3",
    "entry", "blob", "arg", "setting", "param", "raw", "v", "c2", "target", "spec",
)  # fmt: skip


@dataclass(frozen=True)
class Case:
    kind: str  # what the secret is ("github-token", "private-key", ...) or the negative's category
    syntax: str
    naming: str  # "keyword" or "neutral" ("negative" for hard negatives)
    filename: str
    text: str
    start: int = -1  # the secret's span in `text` (positives only)
    end: int = -1

    @property
    def secret(self) -> str:
        return self.text[self.start : self.end]


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, alphabet: str, n: int) -> str:
    """Random, with at least one digit, one upper and one lower letter where the alphabet has them."""
    while True:
        value = _r(rng, alphabet, n)
        need = [set(string.digits), set(string.ascii_uppercase), set(string.ascii_lowercase)]
        if all(not (s & set(alphabet)) or (s & set(value)) for s in need):
            return value


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


# ---- provider token formats: kind -> (keyword base name, generator) -----------------------------

Gen = Callable[[random.Random], str]
PROVIDERS: dict[str, tuple[str, Gen]] = {
    "aws-access-key-id": ("aws_access_key", lambda g: "AKIA" + _r(g, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
    "gcp-api-key": ("google_api_key", lambda g: "AIza" + _r(g, URLSAFE, 35)),
    "gcp-oauth-client-secret": ("google_client_secret", lambda g: "GOCSPX-" + _r(g, URLSAFE, 28)),
    "azure-ad-client-secret": (
        "azure_client_secret",
        lambda g: _r(g, ALNUM, 3) + g.choice("0123456789") + "Q~" + _mixed(g, ALNUM + "_~.-", 34),
    ),
    "github-token": ("github_token", lambda g: "gh" + g.choice("pousr") + "_" + _mixed(g, ALNUM, 36)),
    "github-fine-grained-pat": (
        "gh_pat_token",
        lambda g: "github_pat_" + _mixed(g, ALNUM, 22) + "_" + _mixed(g, ALNUM, 59),
    ),
    "gitlab-token": ("gitlab_token", lambda g: "glpat-" + _mixed(g, URLSAFE, 20)),
    "slack-token": (
        "slack_bot_token",
        lambda g: (
            f"xox{g.choice('bpa')}-{_r(g, string.digits, 12)}-{_r(g, string.digits, 12)}-{_mixed(g, ALNUM, 24)}"  # noqa: E501
        ),
    ),
    "stripe-key": ("stripe_secret_key", lambda g: g.choice(["sk", "rk"]) + "_live_" + _mixed(g, ALNUM, 40)),
    "openai-key": ("openai_api_key", lambda g: "sk-proj-" + _mixed(g, URLSAFE, 120)),
    "openai-legacy-key": (
        "openai_key",
        lambda g: "sk-" + _mixed(g, ALNUM, 20) + "T3BlbkFJ" + _mixed(g, ALNUM, 20),
    ),
    "anthropic-key": ("anthropic_api_key", lambda g: "sk-ant-api03-" + _mixed(g, URLSAFE, 93) + "AA"),
    "npm-token": ("npm_token", lambda g: "npm_" + _mixed(g, ALNUM, 36)),
    "pypi-token": ("pypi_token", lambda g: "pypi-AgEIcHlwaS5vcmc" + _mixed(g, URLSAFE, 70)),
    "twilio-api-key": ("twilio_api_key", lambda g: "SK" + _r(g, HEX, 32)),
    "sendgrid-key": (
        "sendgrid_api_key",
        lambda g: "SG." + _mixed(g, URLSAFE, 22) + "." + _mixed(g, URLSAFE, 43),
    ),
    "mailgun-key": ("mailgun_api_key", lambda g: "key-" + _r(g, HEX, 32)),
    "mailchimp-key": ("mailchimp_api_key", lambda g: _r(g, HEX, 32) + "-us" + str(g.randint(1, 21))),
    "shopify-token": ("shopify_access_token", lambda g: "shpat_" + _r(g, HEX, 32)),
    "square-token": ("square_access_token", lambda g: "EAAA" + _mixed(g, URLSAFE, 60)),
    "heroku-key": ("heroku_api_key", lambda g: "HRKU-" + _mixed(g, URLSAFE, 60)),
    "digitalocean-token": ("do_token", lambda g: "dop_v1_" + _r(g, HEX, 64)),
    "newrelic-key": ("new_relic_api_key", lambda g: "NRAK-" + _r(g, UPPER_ALNUM, 27)),
    "discord-bot-token": (
        "discord_token",
        lambda g: (
            g.choice("MNO")
            + _mixed(g, URLSAFE, 23)
            + "."
            + _mixed(g, URLSAFE, 6)
            + "."
            + _mixed(g, URLSAFE, 38)
        ),
    ),
    "telegram-bot-token": (
        "telegram_bot_token",
        lambda g: str(g.randint(10**8, 10**10 - 1)) + ":AA" + _mixed(g, URLSAFE, 33),
    ),
    "huggingface-token": ("hf_token", lambda g: "hf_" + _mixed(g, string.ascii_letters, 34)),
    "databricks-token": ("databricks_token", lambda g: "dapi" + _r(g, HEX, 32)),
    "doppler-token": ("doppler_token", lambda g: "dp.pt." + _mixed(g, ALNUM, 43)),
    "dropbox-token": ("dropbox_access_token", lambda g: "sl." + _mixed(g, URLSAFE, 138)),
    "atlassian-token": (
        "jira_api_token",
        lambda g: "ATATT3xFfGF0" + _mixed(g, URLSAFE, 170) + "=" + _r(g, HEX, 8),
    ),
    "linear-key": ("linear_api_key", lambda g: "lin_api_" + _mixed(g, ALNUM, 40)),
    "postman-key": ("postman_api_key", lambda g: "PMAK-" + _r(g, HEX, 24) + "-" + _r(g, HEX, 34)),
    "planetscale-token": ("planetscale_token", lambda g: "pscale_tkn_" + _mixed(g, URLSAFE, 43)),
    "pulumi-token": ("pulumi_access_token", lambda g: "pul-" + _r(g, HEX, 40)),
    "grafana-token": ("grafana_token", lambda g: "glsa_" + _mixed(g, ALNUM, 32) + "_" + _r(g, HEX, 8)),
    "vault-token": ("vault_token", lambda g: "hvs." + _mixed(g, URLSAFE, 90)),
    "age-secret-key": ("age_secret_key", lambda g: "AGE-SECRET-KEY-1" + _r(g, BECH32, 58)),
    "alibaba-access-key": ("alibaba_access_key", lambda g: "LTAI" + _mixed(g, ALNUM, 20)),
    "docker-hub-token": ("docker_token", lambda g: "dckr_pat_" + _mixed(g, URLSAFE, 27)),
    "supabase-token": ("supabase_token", lambda g: "sbp_" + _r(g, HEX, 40)),
    "replicate-token": ("replicate_api_token", lambda g: "r8_" + _mixed(g, ALNUM, 37)),
    "groq-key": ("groq_api_key", lambda g: "gsk_" + _mixed(g, ALNUM, 52)),
    "tailscale-key": (
        "tailscale_auth_key",
        lambda g: "tskey-auth-k" + _mixed(g, ALNUM, 10) + "-" + _mixed(g, ALNUM, 30),
    ),
    "notion-token": ("notion_token", lambda g: "ntn_" + _r(g, string.digits, 11) + _mixed(g, ALNUM, 35)),
    "airtable-token": ("airtable_token", lambda g: "pat" + _mixed(g, ALNUM, 14) + "." + _r(g, HEX, 64)),
    "jfrog-key": ("artifactory_api_key", lambda g: "AKCp" + _mixed(g, ALNUM, 69)),
    "rubygems-key": ("rubygems_api_key", lambda g: "rubygems_" + _r(g, HEX, 48)),
    "shippo-token": ("shippo_api_token", lambda g: "shippo_live_" + _r(g, HEX, 40)),
    "mapbox-secret-token": (
        "mapbox_token",
        lambda g: "sk.eyJ1Ijoi" + _mixed(g, URLSAFE, 50) + "." + _mixed(g, URLSAFE, 22),
    ),
    "facebook-token": ("fb_access_token", lambda g: "EAAB" + _mixed(g, ALNUM, 160)),
    "sentry-token": ("sentry_auth_token", lambda g: "sntryu_" + _r(g, HEX, 64)),
    "linear-oauth": ("linear_token", lambda g: "lin_oauth_" + _r(g, HEX, 64)),
}

# Kinds recognisable only next to their context (a paired id, the provider's name nearby).
CONTEXT_KINDS: dict[str, tuple[str, Gen, Callable[[random.Random], str]]] = {
    "aws-secret-access-key": (
        "aws_secret_access_key",
        lambda g: _mixed(g, B64, 40),
        lambda g: "AKIA" + _r(g, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
    ),
    "twilio-auth-token": ("twilio_auth_token", lambda g: _mixed(g, HEX, 32), lambda g: "AC" + _r(g, HEX, 32)),
    "datadog-key": ("dd_api_key", lambda g: _mixed(g, HEX, 32), lambda g: "datadog"),
    "heroku-legacy-key": (
        "heroku_api_key",
        lambda g: f"{_r(g, HEX, 8)}-{_r(g, HEX, 4)}-{_r(g, HEX, 4)}-{_r(g, HEX, 4)}-{_r(g, HEX, 12)}",
        lambda g: "heroku",
    ),
    "cloudflare-token": ("cloudflare_api_token", lambda g: _mixed(g, URLSAFE, 40), lambda g: "cloudflare"),
}

KEYWORD_SUFFIXES = ("password", "secret", "api_key", "token", "auth_token", "client_secret", "secret_key",
                    "access_token", "private_key", "credentials", "passwd", "apikey", "signing_key")  # fmt: skip  # noqa: E501


def _password(rng: random.Random) -> str:
    style = rng.randrange(3)
    if style == 0:
        word = rng.choice(["Summer", "Winter", "Dragon", "Monkey", "Falcon", "Orchid", "Tundra", "Velvet"])
        return f"{word}{rng.randint(10, 9999)}{rng.choice(PASSWORD_SYMBOLS)}{_r(rng, ALNUM, 3)}"
    if style == 1:
        return _mixed(rng, ALNUM + PASSWORD_SYMBOLS, rng.randint(12, 24))
    return _mixed(rng, ALNUM, rng.randint(16, 40))


def _url_password(rng: random.Random) -> str:
    return _mixed(rng, ALNUM + "!$^*-_~", rng.randint(10, 20))


# ---- naming ---------------------------------------------------------------------------------------


def _styled(base: str, syntax: str) -> str:
    """A snake_case base name in the syntax's usual style."""
    parts = base.split("_")
    if syntax in ("env", "shell", "java"):
        return base.upper()
    if syntax in ("js", "ts", "go", "xml"):
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    return base


# ---- embedding a value in a snippet ----------------------------------------------------------------

# One assignment template per syntax; {name} and {value} are filled, the span of {value} is recorded.
ASSIGN: dict[str, tuple[str, ...]] = {
    "python": ('{name} = "{value}"', "{name} = '{value}'", 'client = Client({name}="{value}")',
               'CONFIG = {{"{name}": "{value}"}}', '{name}: str = "{value}"'),
    "js": ('const {name} = "{value}";', "  {name}: '{value}',", "let {name} = `{value}`;"),
    "ts": ('export const {name}: string = "{value}";', '  readonly {name} = "{value}";'),
    "go": ('{name} := "{value}"', '\t{Name}: "{value}",', 'const {name} = "{value}"'),
    "java": ('private static final String {name} = "{value}";', 'props.put("{name}", "{value}");'),
    "yaml": ("{name}: {value}", '{name}: "{value}"', "  - {name}: '{value}'"),
    "json": ('  "{name}": "{value}",',),
    "toml": ('{name} = "{value}"',),
    "ini": ("{name} = {value}", "{name}={value}"),
    "env": ("{name}={value}", 'export {name}="{value}"'),
    "shell": ('export {name}="{value}"', "{name}='{value}'"),
    "xml": ("<{name}>{value}</{name}>", '<add key="{name}" value="{value}" />'),
    "hcl": ('  {name} = "{value}"',),
}  # fmt: skip

BEFORE = {
    "python": "import os\n\n\ndef connect():\n    pass\n\n",
    "js": "'use strict';\nconst http = require('http');\n\nmodule.exports = {\n",
    "ts": "import { Client } from './client';\n\nexport class Settings {\n",
    "go": 'package main\n\nimport "fmt"\n\nvar cfg = Config{\n',
    "java": "package com.acme.app;\n\npublic class App {\n",
    "yaml": "service:\n  name: billing\n  replicas: 2\n",
    "json": '{\n  "name": "billing",\n',
    "toml": '[service]\nname = "billing"\nport = 8080\n',
    "ini": "[database]\nhost = db.internal\nport = 5432\n",
    "env": "NODE_ENV=production\nPORT=8080\n",
    "shell": "#!/bin/sh\nset -eu\n",
    "xml": "<configuration>\n  <appSettings>\n",
    "hcl": 'resource "acme_service" "main" {\n  name = "billing"\n',
}
AFTER = {
    "python": "\n\nlogger = None\n", "js": "\n};\n", "ts": "\n}\n", "go": "\n}\n\nfunc main() { fmt.Println(cfg) }\n",  # noqa: E501
    "java": "\n}\n", "yaml": "\nlogging:\n  level: info\n", "json": "\n  \"port\": 8080\n}\n", "toml": "\n",
    "ini": "\ntimeout = 30\n", "env": "\nLOG_LEVEL=info\n", "shell": "\nexec ./server\n", "xml": "\n  </appSettings>\n</configuration>\n",  # noqa: E501
    "hcl": "\n}\n",
}  # fmt: skip


def _embed(
    rng: random.Random, syntax: str, line_template: str, value: str, extra: str = ""
) -> tuple[str, int]:
    """The snippet text and the offset of `value` in it."""
    head = BEFORE[syntax] + (extra + "\n" if extra else "")
    marker = "\x00VALUE\x00"
    line = line_template.replace("{value}", marker)
    text = head + line + AFTER[syntax]
    start = text.index(marker)
    return text.replace(marker, value), start


def _assign(rng: random.Random, syntax: str, name: str, value: str, extra: str = "") -> tuple[str, int]:
    template = rng.choice(ASSIGN[syntax])
    template = template.replace("{name}", name).replace("{Name}", name[:1].upper() + name[1:])
    return _embed(rng, syntax, template, value, extra)


def _case(kind: str, syntax: str, naming: str, text: str, start: int, value: str) -> Case:
    return Case(kind, syntax, naming, FILENAMES[syntax], text, start, start + len(value))


def _keyword_name(rng: random.Random, base: str, syntax: str) -> str:
    return _styled(base, syntax)


def _neutral_name(rng: random.Random, syntax: str) -> str:
    return _styled(rng.choice(NEUTRAL_NAMES), syntax)


# ---- positives ------------------------------------------------------------------------------------


def _provider_cases(rng: random.Random) -> list[Case]:
    cases = []
    for kind, (base, gen) in PROVIDERS.items():
        for i in range(6):
            syntax = SYNTAXES[(i * 5 + len(kind)) % len(SYNTAXES)]
            naming = "keyword" if i % 2 == 0 else "neutral"
            value = gen(rng)
            name = _keyword_name(rng, base, syntax) if naming == "keyword" else _neutral_name(rng, syntax)
            text, start = _assign(rng, syntax, name, value)
            cases.append(_case(kind, syntax, naming, text, start, value))
    for kind, (base, gen, ctx) in CONTEXT_KINDS.items():
        for i in range(6):
            syntax = SYNTAXES[(i * 3 + len(kind)) % len(SYNTAXES)]
            naming = "keyword" if i % 2 == 0 else "neutral"
            value = gen(rng)
            if naming == "keyword":
                text, start = _assign(rng, syntax, _keyword_name(rng, base, syntax), value)
            else:
                context = ctx(rng)
                comment = "#" if syntax in ("python", "yaml", "toml", "ini", "env", "shell", "hcl") else "//"
                extra = f"<!-- {context} -->" if syntax == "xml" else f"{comment} {context}"
                if syntax == "json":
                    extra = f'  "provider": "{context}",'
                text, start = _assign(rng, syntax, _neutral_name(rng, syntax), value, extra)
            cases.append(_case(kind, syntax, naming, text, start, value))
    return cases


def _pem(rng: random.Random, label: str) -> str:
    body = [_r(rng, B64, 64) for _ in range(rng.randint(8, 20))] + [_r(rng, B64, rng.randint(8, 60)) + "=="]
    return f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----"


def _private_key_cases(rng: random.Random) -> list[Case]:
    labels = (
        "RSA PRIVATE KEY",
        "PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
    )
    cases = []
    for i in range(30):
        label = labels[i % len(labels)]
        pem = _pem(rng, label)
        naming = "keyword" if i % 2 == 0 else "neutral"
        name = "private_key" if naming == "keyword" else rng.choice(NEUTRAL_NAMES)
        form = i % 5
        if form == 0:
            syntax, head, tail, value = "python", f'{name.upper()} = """', '"""\n', pem
        elif form == 1:
            syntax = "yaml"
            value = pem.replace("\n", "\n    ")
            head, tail = f"tls:\n  {name}: |\n    ", "\n  port: 443\n"
        elif form == 2:
            syntax, value = "json", pem.replace("\n", "\\n") + "\\n"
            head = '{\n  "type": "service_account",\n  "project_id": "billing-prod",\n  "' + name + '": "'
            tail = '",\n  "client_email": "svc@billing-prod.iam.gserviceaccount.com"\n}\n'
        elif form == 3:
            syntax, head, tail, value = (
                "shell",
                f"cat > {name}.pem <<'EOF'\n",
                "\nEOF\nchmod 600 key.pem\n",
                pem,
            )
        else:
            syntax, head, tail, value = "js", f"const {_styled(name, 'js')} = `", "`;\n", pem
        text = head + value + tail
        cases.append(
            Case("private-key", syntax, naming, FILENAMES[syntax], text, len(head), len(head) + len(value))
        )
    return cases


def _jwt(rng: random.Random) -> str:
    header = {"alg": rng.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}
    payload = {
        "sub": _r(rng, string.digits, 10),
        "name": _r(rng, string.ascii_lowercase, 8),
        "iat": rng.randint(1_600_000_000, 1_800_000_000),
    }
    return ".".join(
        [
            _b64url(json.dumps(header).encode()),
            _b64url(json.dumps(payload).encode()),
            _b64url(rng.randbytes(32)),
        ]
    )


def _structural_cases(rng: random.Random) -> list[Case]:
    """Secrets whose surroundings say what they are: URLs, headers, curl, connection strings."""
    cases: list[Case] = []
    for i in range(30):
        syntax = SYNTAXES[i % len(SYNTAXES)]
        naming = "keyword" if i % 2 == 0 else "neutral"
        value = _jwt(rng)
        name = (
            _keyword_name(rng, "session_token", syntax) if naming == "keyword" else _neutral_name(rng, syntax)
        )
        text, start = _assign(rng, syntax, name, value)
        cases.append(_case("jwt", syntax, naming, text, start, value))
    schemes = ("postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqp", "https", "ftp", "mssql")
    for i in range(40):
        syntax = SYNTAXES[(i + 3) % len(SYNTAXES)]
        naming = "keyword" if i % 2 == 0 else "neutral"
        value = _url_password(rng)
        prefix = f"{rng.choice(schemes)}://{rng.choice(['app', 'svc_user', 'deploy', 'root'])}:"
        suffix = (
            f"@{rng.choice(['db.internal', '10.0.3.7', 'cache.prod.local'])}:{rng.randint(1000, 9999)}/main"
        )
        name = (
            _keyword_name(rng, "db_credentials", syntax)
            if naming == "keyword"
            else _styled("database_url", syntax)
        )
        text, start = _assign(rng, syntax, name, "\x01")
        text = text.replace("\x01", prefix + value + suffix)
        start += len(prefix)
        cases.append(_case("url-password", syntax, naming, text, start, value))
    header_forms = (
        ("python", 'headers = {{"Authorization": "{scheme} {value}"}}'),
        ("js", "fetch(url, {{ headers: {{ Authorization: '{scheme} {value}' }} }});"),
        ("shell", 'curl -s -H "Authorization: {scheme} {value}" https://api.internal/v1/items'),
        ("yaml", "  authorization: {scheme} {value}"),
        ("go", 'req.Header.Set("Authorization", "{scheme} {value}")'),
        ("java", 'conn.setRequestProperty("Authorization", "{scheme} {value}");'),
    )
    for i in range(36):
        syntax, form = header_forms[i % len(header_forms)]
        naming = "neutral" if i % 2 else "keyword"
        if i % 3 == 0:
            scheme, value = "Basic", base64.b64encode(f"svc:{_password(rng)}".encode()).decode()
        else:
            scheme, value = "Bearer", _mixed(rng, URLSAFE + ".", rng.randint(32, 64))
        line = form.replace("{scheme}", scheme).replace("{{", "{").replace("}}", "}")
        if naming == "keyword":
            line = line.replace("headers", "auth_headers", 1)
        text, start = _embed(rng, syntax, line, value)
        cases.append(_case("authorization-header", syntax, naming, text, start, value))
    for i in range(24):
        value = _password(rng)
        naming = "neutral" if i % 2 else "keyword"
        flag = rng.choice(["-u", "--user"])
        user = "deploy" if naming == "neutral" else "api_token_user"
        line = f"curl -fsS {flag} {user}:{{value}} https://registry.internal/v2/_catalog"
        text, start = _embed(rng, "shell", line, value)
        cases.append(_case("curl-user", "shell", naming, text, start, value))
    conn_forms = (
        ("Server=tcp:sql.internal,1433;Database=app;User ID=sa;Password={value};Encrypt=True;", "password"),
        ("Driver={{ODBC Driver 18}};Server=sql01;Uid=report;Pwd={value};", "password"),
        (
            "DefaultEndpointsProtocol=https;AccountName=billing;AccountKey={value};EndpointSuffix=core.windows.net",
            "azure",
        ),
        (
            "Endpoint=sb://billing.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={value}",
            "sas",
        ),
    )
    for i in range(40):
        form, which = conn_forms[i % len(conn_forms)]
        syntax = ("python", "json", "xml", "yaml", "java", "ts")[i % 6]
        naming = "neutral" if i % 2 else "keyword"
        if which == "azure":
            value = _mixed(rng, B64, 86) + "=="
        elif which == "sas":
            value = _mixed(rng, B64, 43) + "="
        else:
            value = _mixed(rng, ALNUM + "!$%^*-_", rng.randint(12, 20))
        name = (
            _keyword_name(rng, "db_credentials", syntax)
            if naming == "keyword"
            else _styled("connection_string", syntax)
        )
        text, start = _assign(rng, syntax, name, "\x01")
        head, tail = form.replace("{{", "{").replace("}}", "}").split("{value}")
        text = text.replace("\x01", head + value + tail)
        start += len(head)
        cases.append(_case("connection-string", syntax, naming, text, start, value))
    for i in range(60):
        syntax = ("python", "js", "go", "yaml", "shell", "java", "ts", "toml")[i % 8]
        value = _mixed(rng, ALNUM, rng.randint(24, 40))
        param = rng.choice(["api_key", "access_token", "token", "apikey", "client_secret", "password"])
        host = rng.choice(
            ["api.partner.io/v2/report", "maps.internal/geo", "hooks.acme.dev/in", "10.1.2.3:8443/q"]
        )
        url = f"https://{host}?{param}=\x01&format=json"
        text, start = _assign(rng, syntax, _neutral_name(rng, syntax), url)
        start += url.index("\x01")
        text = text.replace("\x01", value)
        cases.append(_case("url-query-secret", syntax, "neutral", text, start, value))
    return cases


def _keyword_cases(rng: random.Random) -> list[Case]:
    """Generic literals under secret-named variables, in every syntax."""
    cases = []
    bases = ("db", "admin", "smtp", "redis", "app", "service", "ldap", "backup", "")
    for i in range(70):
        syntax = SYNTAXES[i % len(SYNTAXES)]
        suffix = KEYWORD_SUFFIXES[i % len(KEYWORD_SUFFIXES)]
        prefix = bases[(i // len(SYNTAXES)) % len(bases)]
        base = f"{prefix}_{suffix}" if prefix else suffix
        kind = "keyword-password" if "pass" in suffix or i % 2 else "keyword-token"
        value = _password(rng) if kind == "keyword-password" else _mixed(rng, ALNUM, rng.randint(24, 48))
        text, start = _assign(rng, syntax, _keyword_name(rng, base, syntax), value)
        cases.append(_case(kind, syntax, "keyword", text, start, value))
    return cases


def positives(seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    return _provider_cases(rng) + _private_key_cases(rng) + _structural_cases(rng) + _keyword_cases(rng)


# ---- hard negatives --------------------------------------------------------------------------------


def _uuid(rng: random.Random) -> str:
    h = _r(rng, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


def negatives(seed: int = SEED + 1) -> list[Case]:
    rng = random.Random(seed)
    out: list[Case] = []

    def add(kind: str, syntax: str, line: str) -> None:
        if "|" in line[:7] and line.split("|", 1)[0] in SYNTAXES:
            syntax, line = line.split("|", 1)
        text = BEFORE[syntax] + line + AFTER[syntax]
        out.append(Case(kind, syntax, "negative", FILENAMES[syntax], text))

    for i in range(25):
        sha = _r(rng, HEX, 40)
        add(
            "git-sha",
            SYNTAXES[i % len(SYNTAXES)],
            rng.choice(
                [
                    f'commit = "{sha}"',
                    f"rev: {sha}",
                    f'  "sha": "{sha}",',
                    f"# fixed in {sha}",
                    f'ref = "{sha[:12]}"',
                ]
            ),
        )
    for i in range(25):
        digest = _r(rng, HEX, 64)
        add(
            "sha256",
            ("python", "yaml", "shell", "json", "toml")[i % 5],
            rng.choice(
                [
                    f'checksum = "{digest}"',
                    f"sha256: {digest}",
                    f"echo '{digest}  app.tar.gz' | sha256sum -c",
                    f'  "digest": "sha256:{digest}",',
                    f"FROM python:3.11@sha256:{digest}",
                    f'md5 = "{digest[:32]}"',
                ]
            ),
        )
    for i in range(25):
        add(
            "uuid",
            SYNTAXES[i % len(SYNTAXES)],
            rng.choice(
                [
                    f'request_id = "{_uuid(rng)}"',
                    f'  "id": "{_uuid(rng)}",',
                    f"tenant: {_uuid(rng)}",
                    f"const traceId = '{_uuid(rng)}';",
                    f"<ProjectGuid>{{{_uuid(rng).upper()}}}</ProjectGuid>",
                ]
            ),
        )
    for i in range(25):
        integrity = base64.b64encode(rng.randbytes(64)).decode()
        add(
            "lockfile-integrity",
            ("json", "yaml", "toml", "shell")[i % 4],
            rng.choice(
                [
                    f'      "integrity": "sha512-{integrity}",',
                    f"  integrity sha512-{integrity}",
                    f'hash = "sha256:{_r(rng, HEX, 64)}"',
                    f"pip install --require-hashes app==1.0 --hash=sha256:{_r(rng, HEX, 64)}",
                    f'  resolved "https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz#{_r(rng, HEX, 40)}"',  # noqa: E501
                    f'    "integrity": "sha1-{base64.b64encode(rng.randbytes(20)).decode()}",',
                ]
            ),
        )
    placeholders = [
        'python|password = "changeme"',
        'python|api_key = "<your-api-key>"',
        "yaml|token: ${GITHUB_TOKEN}",
        "env|SECRET_KEY=xxxxxxxxxxxxxxxx",
        'python|api_key = "your_api_key_here"',
        'yaml|password: "********"',
        'yaml|token: "{{ .Values.token }}"',
        'toml|password = "example-password"',
        'hcl|  client_secret = "dummy"',
        "yaml|secret: ${{ secrets.DEPLOY_KEY }}",
        'env|OPENAI_API_KEY="sk-..."',
        "ini|password = %(db_password)s",
        "env|API_TOKEN=<token>",
        'js|const apiKey = "YOUR_API_KEY";',
        "xml|<password>${DB_PASSWORD}</password>",
        'python|auth_token = "REPLACE_ME"',
        'yaml|password: "password"',
        "python|db_password = ''",
        'yaml|token: "TODO"',
        "ini|access_key = AKIAXXXXXXXXXXXXXXXX",
        'shell|GITHUB_TOKEN="ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"',
        'ruby|secret = "#{vault_secret}"',
        'shell|PASSWORD="$(cat /run/secrets/db)"',
        "shell|password=${PGPASSWORD:-}",
        'ts|  apiKey: process.env.API_KEY ?? "",',
        'python|stripe_key = "sk_live_..."',
        'java|String password = "";',
        'go|Password: "<password>",',
        "hcl|  password = var.db_password",
        'toml|token = "${TOKEN}"',
    ]
    for line in placeholders:
        add("placeholder", "python", line.replace("ruby|", "python|"))
    env_refs = [
        'python|api_key = os.environ["API_KEY"]',
        'python|token = os.getenv("GITHUB_TOKEN")',
        "js|const apiKey = process.env.API_KEY;",
        'go|password := os.Getenv("DB_PASSWORD")',
        'java|String secret = System.getenv("APP_SECRET");',
        'python|token = ENV["TOKEN"]',
        'shell|export API_KEY="$API_KEY"',
        "yaml|password: !ENV ${DB_PASS}",
        'python|secret_key = env("SECRET_KEY")',
        "python|password = os.environ.get('DB_PASSWORD', '')",
        'go|token, _ := os.LookupEnv("TOKEN")',
        'python|client_secret = config("services.github.client_secret")',
        'python|password = keyring.get_password("db", user)',
        "ts|const token = process.env['NPM_TOKEN'] || '';",
        'hcl|  token = env("VAULT_TOKEN")',
        "yaml|  api_key: ${API_KEY}",
        "env|DB_PASSWORD=${VAULT_DB_PASSWORD}",
        'shell|curl -H "Authorization: token $GITHUB_TOKEN" https://api.github.com/user',
        'java|String apiKey = props.getProperty("api.key");',
        "js|  password: process.env.DB_PASS,",
    ]
    for line in env_refs:
        add("env-reference", "python", line)
    references = [
        "python|password = user_password",
        "js|  api_key: apiKey,",
        "python|token = self._token",
        "python|secret = config.secret",
        "python|client = Client(password=args.password)",
        "go|token := cfg.Token",
        "ts|    this.apiKey = apiKey;",
        "python|    password: str",
        "python|auth_token: Optional[str] = None",
        "python|secret_key = settings.SECRET_KEY",
        "python|access_token = response.json()['access_token']",
        "python|password = getpass.getpass()",
        "python|token = await get_token(scope)",
        "python|credentials = service_account.Credentials.from_service_account_file(path)",
        "js|if (password === confirmPassword) {",
        "python|max_tokens = 128",
        'python|token_type = "bearer"',
        'python|eos_token = "</s>"',
        'json|  "pad_token": "[PAD]",',
        "python|password_hash = bcrypt.hashpw(pw, salt)",
        'python|password_field = "password"',
        "python|next_page_token = resp.next_page_token",
        "go|\tPassword: password,",
        "java|this.secret = secret;",
        "ts|const { token } = await login(user, password);",
        'python|TOKEN_URL = "https://oauth2.googleapis.com/token"',
        "python|api_key=api_key,",
        'python|secret_name = "prod/db/credentials"',
        "yaml|  secretName: tls-cert",
        "hcl|  password = random_password.db.result",
    ]
    for line in references:
        add("variable-reference", "python", line)
    for i in range(20):
        body = base64.b64encode(rng.randbytes(rng.choice([51, 279]))).decode()
        pub = "-----BEGIN PUBLIC KEY-----\n" + "\n".join(body[j : j + 64] for j in range(0, len(body), 64))
        cert = pub.replace("PUBLIC KEY", "CERTIFICATE")
        add(
            "public-key",
            ("shell", "yaml", "python", "json")[i % 4],
            rng.choice(
                [
                    f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_r(rng, B64, 43)} deploy@ci",
                    f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{_r(rng, B64, 300)} user@laptop",
                    pub + "\n-----END PUBLIC KEY-----",
                    cert + "\n-----END CERTIFICATE-----",
                    f'"publicKey": "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAI{_r(rng, B64, 100)}="',  # noqa: E501
                ]
            ),
        )
    for i in range(15):
        blob = base64.b64encode(rng.randbytes(rng.randint(90, 300))).decode()
        add(
            "data-uri",
            ("js", "python", "xml")[i % 3],
            rng.choice(
                [
                    f'const icon = "data:image/png;base64,{blob}";',
                    f"LOGO = 'data:image/gif;base64,{blob}'",
                    f'<img src="data:image/svg+xml;base64,{blob}" />',
                ]
            ),
        )
    i18n = [
        '"password_label": "Mot de passe"',
        '"token_expired": "Your session has expired, please sign in again"',
        '"password": "Contraseña"',
        '"enter_password": "Bitte Passwort eingeben"',
        '"forgot_password": "パスワードをお忘れですか"',
        'password_hint: "At least 12 characters"',
        'msgid "Invalid API key"',
        'secret: "Geheimnis"',
        '"api_key_help": "Paste the key from your dashboard"',
        'TOKEN_INVALID = "Le jeton est invalide"',
        '"password_placeholder": "••••••••"',
        '"password_too_short": "Пароль слишком короткий"',
    ]
    for i, line in enumerate(i18n * 2):
        add("i18n", ("json", "json", "python", "python")[i % 4] if line.startswith('"') else "yaml", line)
    documented = [
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        'token = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"',  # noqa: E501
        'stripe.api_key = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"',
        'SLACK_TOKEN="xoxb-not-a-real-token-this-will-not-work"',
        'key = "AKIAI44QH8DHBEXAMPLE"',
        'secret = "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"',
        "postgres://user:password@localhost:5432/db",
        "https://user:pass@example.com/",
        "mysql://root:@localhost/test",
        "curl -u $USER:$TOKEN https://api.internal",
        "Authorization: Bearer ${ACCESS_TOKEN}",
        "Authorization: Bearer <token>",
    ]
    for i, line in enumerate(documented * 2):
        add("documented-example", ("ini", "python", "shell", "yaml")[i % 4], line)
    return out


# ---- held-out set ------------------------------------------------------------------------------------
# Written after the rules were tuned on `positives()`, in languages and shapes that set does not use,
# and measured without changing the rules for it: the honest estimate of recall on unseen code.

HELDOUT_FORMS: tuple[tuple[str, str, str, str], ...] = (
    # (syntax label, filename, naming, line with {v})
    ("ruby", "config.rb", "keyword", 'config.api_key = "{v}"'),
    ("ruby", "config.rb", "neutral", 'VALUE = "{v}".freeze'),
    ("php", "config.php", "keyword", "    'api_key' => '{v}',"),
    ("php", "config.php", "keyword", "define('DB_PASSWORD', '{v}');"),
    ("php", "config.php", "neutral", '$value = "{v}";'),
    ("csharp", "Settings.cs", "keyword", 'var apiKey = "{v}";'),
    ("csharp", "Settings.cs", "neutral", 'private const string Value = @"{v}";'),
    ("rust", "main.rs", "keyword", 'let token = "{v}";'),
    ("rust", "main.rs", "neutral", 'const VALUE: &str = "{v}";'),
    ("kotlin", "App.kt", "keyword", 'val apiKey = "{v}"'),
    ("kotlin", "App.kt", "neutral", 'val v = "{v}"'),
    ("docker", "Dockerfile", "keyword", "ENV API_TOKEN={v}"),
    ("docker", "Dockerfile", "neutral", "ARG VALUE={v}"),
    ("compose", "docker-compose.yml", "keyword", "      - API_KEY={v}"),
    ("compose", "docker-compose.yml", "keyword", "      DB_PASSWORD: {v}"),
    ("actions", "deploy.yml", "keyword", "          token: {v}"),
    ("actions", "deploy.yml", "neutral", "        run: ./deploy --key {v}"),
    ("markdown", "README.md", "neutral", "Use {v} for the staging environment."),
    ("markdown", "README.md", "keyword", "Our staging password is {v} (rotate monthly)."),
    ("python", "client.py", "keyword", 'client = OpenAI(api_key="{v}")'),
    ("python", "client.py", "neutral", 'resp = requests.get(url, headers={{"X-Custom": "{v}"}})'),
    ("python", "client.py", "keyword", 'session.auth = ("deploy", "{v}")'),
    ("js", "api.js", "neutral", 'const url = "https://api.partner.io/v1?key=" + "{v}";'),
    ("properties", "application.properties", "keyword", "spring.datasource.password={v}"),
    ("properties", "application.properties", "neutral", "partner.value={v}"),
    ("sql", "init.sql", "keyword", "CREATE USER app WITH PASSWORD '{v}';"),
    ("netrc", "netrc.txt", "keyword", "machine api.partner.io login deploy password {v}"),
    ("git", "notes.txt", "neutral", "git clone https://{v}@github.com/acme/app.git"),
)


def heldout(seed: int = SEED + 2) -> list[Case]:
    rng = random.Random(seed)
    generators: list[tuple[str, Gen]] = [(kind, gen) for kind, (_, gen) in PROVIDERS.items()]
    generators += [
        ("password", _password),
        ("jwt", _jwt),
        ("aws-secret-access-key", CONTEXT_KINDS["aws-secret-access-key"][1]),
    ]
    cases = []
    for i, (kind, gen) in enumerate(generators * 3):
        syntax, filename, naming, line = HELDOUT_FORMS[(i * 7 + len(kind)) % len(HELDOUT_FORMS)]
        if kind in ("password", "aws-secret-access-key") and naming == "neutral":
            syntax, filename, naming, line = HELDOUT_FORMS[(i % 9) * 3 % len(HELDOUT_FORMS)]
            if naming == "neutral":
                syntax, filename, naming, line = HELDOUT_FORMS[0]
        value = gen(rng)
        head = "# setup\n" if syntax not in ("php", "csharp", "rust", "kotlin", "js", "sql") else "// setup\n"
        line = line.replace("{{", "{").replace("}}", "}")
        start = len(head) + line.index("{v}")
        text = head + line.replace("{v}", value) + "\n"
        cases.append(Case(kind, syntax, naming, filename, text, start, start + len(value)))
    # Generic passwords in every keyword-named held-out shape: the hardest kind.
    for syntax, filename, naming, line in HELDOUT_FORMS:
        if naming != "keyword":
            continue
        value = _password(rng)
        head = "// setup\n" if syntax in ("php", "csharp", "rust", "kotlin", "sql") else "# setup\n"
        start = len(head) + line.index("{v}")
        text = head + line.replace("{v}", value) + "\n"
        cases.append(Case("password", syntax, naming, filename, text, start, start + len(value)))
    return cases
