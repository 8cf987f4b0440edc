"""False-positive filters: is a matched value a real literal secret, or a placeholder/reference?

Pure functions over the matched value and the line it sits on; the rule's
`check` field picks which ones run (see rules.toml).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass

from codectx.privacy.views import decode_base64

# File types whose bare `key = value` / `key: value` is a literal (not a variable reference).
CONFIG_SUFFIXES = (
    ".env", ".ini", ".cfg", ".conf", ".config", ".properties", ".yaml", ".yml", ".toml",
    ".sh", ".bash", ".zsh", ".envrc", ".tfvars", ".netrc", ".pgpass", ".npmrc", ".pypirc",
    ".md", ".txt", ".rst", ".sql", ".netrc", ".service", ".socket", ".timer", ".mount", ".desktop",
    ".history", ".env.example", ".gradle.properties", ".tfvars", ".hcl", ".tf", ".cnf", ".credentials",
    ".creds", ".bru", ".bat", ".cmd", ".fish", ".tcl", ".csh", ".tcsh", ".ksh", ".mk", ".nmconnection",
    ".bu", ".psk", ".rsc", ".mak", ".am",
)  # fmt: skip
CONFIG_NAMES = (
    "dockerfile", ".env", ".envrc", ".netrc", "netrc", ".npmrc", ".pypirc", "makefile", ".bash_history",
    ".zsh_history", ".sh_history", ".history", "history", ".pgpass", "containerfile",
)  # fmt: skip

# Copies and templates are judged by the name they are a copy of: `config.ini~`, `db.cfg.orig`.
_COPY_SUFFIXES = (
    "~", ".orig", ".bak", ".old", ".save", ".backup", ".dist", ".sample", ".example", ".template",
    ".tmpl", ".tpl", ".default", ".rej", ".j2", ".jinja", ".jinja2", ".gotmpl",
)  # fmt: skip
# Extensionless names that are code (Ruby, Groovy, Starlark...), not text.
_CODE_NAMES = frozenset(
    (
        "rakefile", "gemfile", "vagrantfile", "jenkinsfile", "podfile", "fastfile", "appfile",
        "brewfile", "guardfile", "capfile", "berksfile", "dangerfile", "build", "workspace",
        "sconstruct", "sconscript",
    )
)  # fmt: skip
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DOTTED = re.compile(r"[A-Za-z_$@][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*)+\Z")
_DIGITS = re.compile(r"[0-9]+\Z")
_DIGEST_PREFIX = re.compile(r"(?:sha|md)[0-9]*[-:/]", re.IGNORECASE)  # `sha256/...`: OkHttp's key pins
_NUMBER = re.compile(
    r"[0-9][0-9_]{0,15}(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?[jJlLfFuU]?\Z"  # 129_599, 1e-5, 10L
    r"|0[xX][0-9a-fA-F_]{1,16}\Z"
)
_URL_REST = re.compile(r"//[\w-]+(?:\.[\w-]+)+(?:[:/?#]|\Z)")  # `//host.domain` after `https:`
# A value named for a digest: NuGet's `contentHash`, a key pin (`<key>SPKI-SHA256-BASE64</key>`), a
# fingerprint; or for a public part of an encryption (an IV, a nonce, an auth tag; Chef's
# encrypted data bags store `encrypted_data` with them, its key elsewhere).
_DIGEST_NAME = re.compile(
    r"(?i)(?:content_?hash|spki(?:[-_]sha-?256)?(?:[-_]base64)?|sha-?(?:1|256|384|512)(?:[-_]base64)?|fingerprint|digest"
    r"|(?<![a-z])(?:iv|nonce|auth_?tag|encrypted_?data|cipher_?text))"
    r"(?:[\"']?\s*[:=]\s*[\"']?|</key>\s*<string>)\Z"
)
_MASK_RUN = re.compile(r"[•●∙*]+")
_COLOR = re.compile(r"#[0-9a-fA-F]{3,8}\Z")
_HEX = re.compile(r"[0-9a-fA-F]+\Z")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_SUBSCRIPT = re.compile(r"[A-Za-z_][\w.]*\[[\w.,'\" \[\]|]*\][),:;]*\Z")
_HEX_0X = re.compile(r"0[xX][0-9a-fA-F]+\Z")
_REGEX_LIKE = re.compile(r"\[[^\]]*[a-z0-9]-[a-z0-9][^\]]*\]|\{\d+(?:,\d*)?\}|\\[dwsDWSb]|\(\?[:=!<P]")
_WINDOWS_PATH = re.compile(r"[A-Za-z]:[\\/][\w .-]|\\\\[\w.-]+\\")
_RULE_LIST = re.compile(r"[A-Za-z_]+(?::[\w,.]+)?(?:\|[A-Za-z_]+(?::[\w,.]+)?)+\Z")
_JWK_MEMBERS = r"n|e|x|y|x5c|x5t|x5t#S256|kid|crv|kty|alg|use|key_ops"
_JWK_PUBLIC = re.compile(rf"[\"'](?:{_JWK_MEMBERS})[\"']\s*:\s*\[?\s*[\"']$")
_SECRET_REF = re.compile(
    r"(?:arn:aws[\w-]*:(?:secretsmanager|ssm|kms):|op://|vault:|akv://|sm://|gcp-secret://|azure-keyvault://|"
    r"projects/[^/\s]+/secrets/|\{\{resolve:|ssm:/|secretsmanager:|keyvault:|"
    r"[\w-]+/data/[\w-]+[/:])",  # the last: a path in Vault's KV engine (`kv/data/mysql:root_password`)
    re.IGNORECASE,
)
# Values stored encrypted to a key kept elsewhere: hiera-eyaml's `ENC[PKCS7,...]`, a Windows DPAPI blob
# (NuGet's and PowerShell's `AQAAANCMnd8BFdERjHoAwE/Cl+sB...`, a WLAN profile's protected hex).
_CIPHERTEXT = re.compile(
    r"ENC\[(?:PKCS7|GPG),|AQAAANCMnd8BFdERjHoAwE/?Cl\+sB|01000000D08C9DDF0115D1118C7A00C04FC297EB",
    re.IGNORECASE,
)
_PERCENT_S_IN_WORD = re.compile(r"(?<=[a-z0-9])%s(?=[a-z])")
_OBJECT_ID = re.compile(r"[a-z]{2,6}_[A-Za-z0-9]{8,40}\Z")
_ENV_LINE = re.compile(r"\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.]*=\S")
_YAML_LINE = re.compile(r"\s*(?:-\s+)?[\"']?[A-Za-z_][\w.-]*[\"']?:\s+\S+\s*(?:#.*)?\Z")
# A .netrc entry, on one line or split over several: `machine host login user password value`.
_NETRC_LINE = re.compile(
    r"\s*(?:(?:machine|login|account)\s+\S+\s+|default\s+)*password\s+\S+(?:\s+(?:login|account)\s+\S+)*\s*\Z"
)
_ENV_LOOKUP = re.compile(
    r"os\.environ|getenv|process\.env|system\.getenv|environment\.get|\benv\(|\benv\[|\bENV\[|"
    r"secrets\.|vault\(|keyring\.",
    re.IGNORECASE,
)
# Names that end in a secret keyword but hold no credential (tokenizer specials, paging cursors...),
# matched against the snake_case form of the name.
_NAME_EXCLUDE = re.compile(
    r"(?:^|[_.$-])(?:bos|eos|pad|unk|mask|sep|cls|start|end|special|additional|default|next|prev|previous|"
    r"page|continuation|cancel|cancellation|csrf|xsrf|sync|resume|pagination|max|min|num|output|input|id|"
    r"kind|type|sentinel|separator|delimiter|stop|eot|fim\w*|split|lexer|parser|current|last)[_.-]?tokens?$"
    r"|(?:^|[^a-z])(?:by|com|sur|tres|encom|over)pass$"
    # Helm charts' `existingSecret: <name>`: the name of a Kubernetes Secret, not its content
    r"|(?:^|[_.$-])existing_secrets?$"
)
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def is_excluded_name(name: str) -> bool:
    """Identifiers that end in `token`, `pass`... without naming a credential."""
    if _NAME_EXCLUDE.search(_CAMEL.sub(r"\1_\2", name).lower()):
        return True
    low = name.lower()
    # `pass`/`pwd`/`pw` only count as a whole segment (db_pass, dbPass, PASS), not inside a word (bypass).
    for short in ("pass", "pwd", "pw"):
        if low.endswith(short) and len(name) > len(short):
            prev, first = name[-len(short) - 1], name[-len(short)]
            if not (prev in "_.-$" or (first.isupper() and not prev.isupper()) or name.isupper()):
                return True
    return False


_NOT_SECRET_WORDS = frozenset(
    (
        "password",
        "passwd",
        "pass",
        "pwd",
        "secret",
        "secrets",
        "token",
        "tokens",
        "none",
        "null",
        "nil",
        "undefined",
        "true",
        "false",
        "yes",
        "no",
        "test",
        "testing",
        "string",
        "str",
        "required",
        "optional",
        "empty",
        "default",
        "unset",
        "unknown",
        "hidden",
        "masked",
        "bearer",
        "basic",
        "admin",
        "root",
        "user",
        "username",
        "guest",
        # the words for "password", "secret", "key" in translations (`secret: "Geheimnis"`)
        "geheimnis",
        "kennwort",
        "passwort",
        "schluessel",
        "contrasena",
        "clave",
        "secreto",
        "segreto",
        "segredo",
        "senha",
        "sekret",
        "jeton",
        "chiave",
        "cle",
        "wachtwoord",
        "geheim",
        "salasana",
        "hemlighet",
        "haslo",
        "parola",
        "motdepasse",
    )
)


_TWO_WORDS = re.compile(r"[A-Za-z]{3,}\s+[A-Za-z]{3,}")


def _is_symbol_soup(value: str) -> bool:
    """Random printable characters: letters of both cases, digits and four kinds of punctuation or more
    (a template such as `<YOUR_API_KEY_HERE>` has two or three), no two words in a row (a sentence; a
    WordPress salt may hold a space)."""
    if _TWO_WORDS.search(value):
        return False
    kinds = {c for c in value if not c.isalnum()}
    has = (any(c.isupper() for c in value), any(c.islower() for c in value), any(c.isdigit() for c in value))
    return len(kinds) >= 4 and all(has)


def is_placeholder(value: str, markers: tuple[str, ...], allow: frozenset[str]) -> bool:
    """Documentation examples, templates and filler like `xxxx`, `<your-key>`, `${TOKEN}`."""
    if value in allow:
        return True
    low = value.lower()
    if "%s" in low:
        low = _PERCENT_S_IN_WORD.sub("", low)  # `Arjun%sakura8`: characters of a password, no template
    found = [marker for marker in markers if marker in low]
    if found:
        # In long random values (key blocks, WordPress's salts of 64 printable characters) a short
        # marker like "fake" or "<" turns up by chance: those count for nothing there.
        by_chance = all(len(marker) < 5 for marker in found) and (
            len(value) > 64 or (len(value) >= 32 and _is_symbol_soup(value))
        )
        if not by_chance:
            return True
    masked = max((len(m) for m in _MASK_RUN.findall(value)), default=0)
    if masked >= 4 and 3 * masked >= len(value):
        return True  # shown masked (`sk_live_••••••••4242`, `****1234`): what a UI prints, not the key
    return set(low) <= set("x*.-_#0 •●·∙…")


def is_ciphertext(value: str) -> bool:
    """A value stored encrypted to a key kept elsewhere (_CIPHERTEXT): no secret on its own."""
    return _CIPHERTEXT.match(value) is not None


def is_reference(value: str, bare: bool = False) -> bool:
    """Environment lookups and variable/template references rather than literals.

    `bare`: the value stood unquoted, so `config.secret` is a dotted reference (unless it looks random).
    """
    if value.startswith(("$", "{")) or (value.startswith("%") and value.endswith("%")):
        return True
    if bare and (value[:1] in "%@&*?" or value.startswith(("[", "(")) or "(" in value):
        return True  # a pointer, a list, or a call's result
    if _ENV_LOOKUP.search(value) or _SECRET_REF.match(value):
        return True  # an environment lookup, or a secret manager's reference (arn:..., op://, vault:...)
    if bare and value.startswith("!"):
        return True  # a YAML tag (!vault, !ENV, !Ref)
    if bare and _SUBSCRIPT.match(value):
        return True  # a type or an index: Optional[str], settings["db"], Dict[str, Any]
    return bare and bool(_DOTTED.match(value)) and not looks_random(value)


# A type where a declaration names one (GraphQL, TypeScript, Python, protobuf, JSON Schema).
_TYPE_NAME = re.compile(r"\[?(?:String|Int|Float|Boolean|ID|Bytes|string|number|boolean|str|bytes)!?\]?!?\Z")


def is_weak_literal(value: str) -> bool:
    """Words, prose and short numbers: field names, labels and constants, not credentials."""
    # A declaration's own punctuation: `password: string;`, `token: str,`, `f(password: str)`.
    value = value.rstrip(";,)") or value
    if any(c.isspace() for c in value):
        return True
    if _TYPE_NAME.match(value):
        return True  # a schema's or a signature's type: GraphQL `password: String!`, `[ID!]!`
    if value.lower() in _NOT_SECRET_WORDS:
        return True
    if all(c.isalpha() or c in "_.-'" for c in value):
        return True
    if value[:1] == "#" and value[1:].isalpha():
        return True  # a DOM node's name (`#cdata`, `#text`) or an anchor
    if (_DIGITS.match(value) and len(value) < 10) or _NUMBER.match(value):
        return True
    if _COLOR.match(value):
        return True
    if _RULE_LIST.match(value):
        return True  # validation rules, flags: 'required|confirmed|min:12'
    if _REGEX_LIKE.search(value):
        return True  # a pattern: cl_pw = r'([0-9a-f]{64})'

    if _WINDOWS_PATH.match(value):
        return True  # `C:\certs\private.pem`, `\\server\share`: a file's path, as `/etc/...` below
    return value.startswith(("/", "./", "../", "~/", "http://", "https://", "file:"))


# A letters-only value that holds one of these reads as a label, a field or a setting's name
# (`"password_confirmation"`, `"current-password"`, `"X-Api-Key"`), not a credential.
_LABEL_PARTS = (
    "pass", "pwd", "secret", "token", "key", "auth", "user", "name", "word", "wort", "field", "input",
    "label", "hash", "cred", "login", "bearer", "basic", "session", "cookie", "header", "param", "env",
    "setting", "config", "default", "value", "string", "text", "type", "hidden", "required", "optional",
    "none", "null", "example", "sample", "secure", "private", "public", "access", "client", "account",
)  # fmt: skip
_LETTERS = re.compile(r"[A-Za-z]+(?:[-_][A-Za-z]+)*\Z")
_PASSWORD_NAME = re.compile(
    r"(?:pass(?:word|wd|phrase|wort)?|kennwort|contrase(?:n|ñ)a|senha|wachtwoord|has(?:l|ł)o|pwd|pw|secret"
    # a credential key (api_key, secretKey, partner.api-key), not a bare `key` (a dict's, a sort's)
    r"|(?:api|secret|access|private|signing|encryption|master|auth|app|client|account|storage|session|"
    r"webhook|service)[_.-]?key|apikey"
    # a token named for what it opens (BOT_TOKEN, authToken), not a lexer's bare `token`
    r"|(?:auth|access|api|bot|bearer|refresh|session|secret|private|personal|github|gitlab|slack|npm|"
    r"deploy|admin|service|app|client|id)[_.-]?token)$",
    re.IGNORECASE,
)
_VOWELS = frozenset("aeiouy")
_PASSWORD_WORD = re.compile(
    r"(?:^|[_.-])(?:pass(?:word|wd|phrase|wort)?|pwd|pw|kennwort|senha|contrase(?:n|ñ)a)$", re.IGNORECASE
)


def is_password_name(name: str | None) -> bool:
    """A name whose value is a credential by its meaning: a password (db_password, CLIENT_SECRET,
    passphrase), a credential key (API_KEY, secretKey) or a token named for what it opens
    (BOT_TOKEN), unlike a lexer's bare `token = "identifier"`."""
    return _name_says(_PASSWORD_NAME, name)


def names_a_password(name: str | None) -> bool:
    """A name for a password proper (db_password, PASSPHRASE, smtpPwd), not for a key or token."""
    return _name_says(_PASSWORD_WORD, name)


def _name_says(words: re.Pattern[str], name: str | None) -> bool:
    """`name` (quotes, brackets and a numbered suffix off; camelCase as snake_case) ends in one of
    `words`, and is no excluded name (`next_token`, `bypass`)."""
    if not name:
        return False
    bare = name.rstrip("\"'`]").rstrip("_.-0123456789")
    return bool(words.search(_CAMEL.sub(r"\1_\2", bare))) and not is_excluded_name(bare)


def letters_secret(value: str, strong: bool, passphrase: bool = False) -> bool:
    """A value made only of letters is still a secret when it sits where a password does.

    `is_weak_literal` drops letters-only values (field names, labels, lexer token kinds); but
    passwords and passphrases are letters too (`"tangerinephdtonvelvet"`, a random
    `"AibNyyurlGFbEkjKWREhbiGj"`). `strong`: the slot holds a password by its syntax or name (a
    URL's password, `db_password = "..."`): any such value of 8 letters or more that does not
    read as a label counts. Otherwise (a token's or a key's name, prose) only random letters do:
    mixed case that is not made of words, or a long run with few vowels. `passphrase`: the name
    says password (not key or token), so words joined by `_` count too
    (`password = "correct_horse_battery"`), where under a key's name they make a name."""
    if not _LETTERS.match(value):
        return False
    letters = value.replace("-", "").replace("_", "")
    low = letters.lower()
    if len(letters) < 8 or low in _NOT_SECRET_WORDS or any(part in low for part in _LABEL_PARTS):
        return False
    if letters.isupper():
        return False  # a constant's or an enum member's name (PLAINTEXT, SCRAM)
    if strong and ("_" not in value or (passphrase and value.count("_") >= 2)):
        return True  # an underscore makes a name (`cond_frame_outputs`) unless it reads random below
    if letters.islower():
        vowels = sum(c in _VOWELS for c in low)
        return len(letters) >= 16 and vowels / len(letters) < 0.25
    transitions = sum(a.islower() != b.islower() for a, b in itertools.pairwise(letters))
    shortest = 12 if strong else 16  # where a password goes, a shorter random mix is one
    return len(letters) >= shortest and transitions >= len(letters) // 4 and not wordlike(letters)


# A passphrase's word: lowercase or capitalised letters, perhaps ending in digits (`anchor-23`).
_PHRASE_WORD = re.compile(r"[A-Za-z][a-z]+(?:-?\d{1,4})?\Z")
# Words that make a spaced value a sentence or a label (a prompt, a hint, an error message), which a
# passphrase of random words almost never holds.
_SENTENCE_WORDS = frozenset(
    (
        "a", "an", "the", "and", "or", "but", "not", "no", "of", "to", "in", "on", "at", "for", "with",
        "by", "from", "as", "is", "are", "was", "be", "been", "must", "should", "can", "cannot", "will",
        "would", "may", "do", "does", "your", "you", "my", "our", "this", "that", "it", "its", "here",
        "there", "again", "please", "enter", "type", "use", "using", "new", "old", "current", "confirm",
        "confirmation", "invalid", "incorrect", "wrong", "required", "optional", "too", "short", "long",
        "least", "most", "characters", "character", "letters", "digits", "number", "numbers", "contain",
        "contains", "match", "matches", "change", "reset", "forgot", "forgotten", "set", "field", "blank",
        "empty", "missing", "show", "hide", "remember", "sign", "log", "login", "logout", "in", "out", "up",
        "if", "when", "then", "than", "into", "only", "all", "any", "one", "two", "each", "per"
    )
)  # fmt: skip


# A label's words, whole (`Database Password`, `api key field`, `username hint`).
_LABEL_WORDS = frozenset(
    {
        *_LABEL_PARTS,
        *(p + "s" for p in _LABEL_PARTS),
        "password",
        "passwords",
        "passwd",
        "passphrase",
        "username",
    }
    | {"userid", "apikey", "credential", "credentials", "hint", "prompt", "placeholder", "tooltip", "confirm"}
)


def spaced_passphrase(value: str) -> bool:
    """`"summit tundra ember anchor-23"`: random words joined by single spaces, where a password
    goes (the caller knows the slot says password). A prompt, a hint or an error message under a
    password's name reads as a sentence or a label instead: it holds a function word, a UI verb, a
    label's part (`"Enter the new password"`, `"must contain digits"`, `"Database Password"`), or
    is written in sentence case."""
    words = value.split(" ")
    if not 3 <= len(words) <= 8 or sum(len(w) for w in words) < 12:
        return False
    for word in words:
        low = word.lower().rstrip("0123456789-")
        if not _PHRASE_WORD.match(word) or low in _SENTENCE_WORDS or low in _NOT_SECRET_WORDS:
            return False
        if low in _LABEL_WORDS:
            return False  # whole words: `monkey` and `compass` hold a label's part and are none
    capitals = [w[0].isupper() for w in words]
    # Sentence case: "Extended precision modular arithmetic" (`/* The magic pass: "..." */`).
    return not (capitals[0] and not any(capitals[1:]))


# Words joined by dots (`amber.walnut.falcon`, `ridge.copper.lantern41`): three to seven lower-case words,
# digits at the end at most.
_DOTTED_PHRASE = re.compile(r"[a-z]{3,}(?:\.[a-z]{3,}){2,6}[0-9]{0,4}\Z")
# Words that make a dotted value a name: an attribute chain (`self.config.db`), a package (`org.acme.app`),
# a host (`mail.corp.local`) or a file (`settings.prod.json`).
_NAME_WORDS = frozenset(
    (
        "self", "this", "cls", "super", "config", "conf", "cfg", "settings", "options", "opts", "args",
        "kwargs", "params", "props", "state", "env", "environ", "app", "apps", "request", "req", "response",
        "res", "form", "data", "db", "obj", "ctx", "context", "module", "exports", "window", "document",
        "process", "com", "org", "net", "edu", "gov", "www", "local", "localhost", "internal", "corp",
        "lan", "home", "json", "yaml", "yml", "toml", "ini", "txt", "conf", "cfg", "xml", "properties",
        "spring", "datasource", "django", "contrib", "java", "javax", "android", "google", "apache",
        "github", "main", "src", "lib", "util", "utils", "core", "common", "test", "tests", "mock", "get",
        "set", "values", "vars", "var", "secrets", "vault", "kube", "svc", "cluster",
    )
)  # fmt: skip


def dotted_passphrase(value: str) -> bool:
    """`"amber.walnut.falcon"`: random words joined by dots where a password goes (the caller knows
    the slot says password). An attribute chain, a package, a host or a file name holds one of
    `_NAME_WORDS`, a label's part or a sentence's word instead."""
    if not _DOTTED_PHRASE.match(value):
        return False
    for word in value.rstrip("0123456789").split("."):
        if word in _NAME_WORDS or word in _SENTENCE_WORDS or word in _NOT_SECRET_WORDS:
            return False
        if word in _LABEL_WORDS or any(part in word for part in _LONG_LABEL_PARTS):
            return False  # whole words, as spaced_passphrase: `monkey.compass.river` is a passphrase
    return True


# A label's parts long enough to tell inside a compound word (`passwordfield`, `secretkey`); a short
# one (`key`, `pass`, `word`) turns up inside ordinary words (`monkey`, `compass`, `sword`).
_LONG_LABEL_PARTS = ("password", "passwd", "secret", "token", "credential", "username", "login")


_SEALED_KIND = re.compile(r"(?m)^kind:[ \t]*[\"']?SealedSecret\b")


def in_sealed_data(text: str, offset: int) -> bool:
    """`offset` is in the `encryptedData:` map of a Bitnami SealedSecret (YAML): values encrypted to
    the cluster's controller key, which its documentation says are safe to share (even in public)."""
    at = text.rfind("encryptedData:", max(0, offset - 32768), offset)  # a map of a few dozen values
    if at == -1:
        return False
    line_start = text.rfind("\n", 0, at) + 1
    indent = at - line_start
    if text[line_start:at].strip():
        return False
    doc = text.rfind("\n---", 0, at) + 1
    if not _SEALED_KIND.search(text, doc, at):
        return False
    for line in text[at:offset].split("\n")[1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            return False  # the map ended before `offset`
    return True


_DIFF_TARGET = re.compile(r"\+\+\+ (?:b/)?([^\t\n]+)")


def diff_target(text: str, offset: int) -> str | None:
    """In a unified diff, the file that the hunk holding `offset` changes (its `+++ b/PATH` header):
    the lines of a hunk are that file's, and are judged as its."""
    at = text.rfind("\n+++ ", 0, offset)
    if at == -1:
        at = 0 if text.startswith("+++ ") else -1
    match = _DIFF_TARGET.match(text, at + 1 if at > 0 else 0) if at >= 0 else None
    if match is None or match.group(1).strip() == "/dev/null":
        return None
    return match.group(1).strip()


def in_public_block(text: str, offset: int) -> bool:
    """`offset` is inside a `-----BEGIN ...-----` block that holds no private key (a public key,
    a certificate, a PGP public block)."""
    begin = text.rfind("-----BEGIN", 0, offset)
    if begin == -1:
        return False
    header = text[begin : begin + 80]
    if "PRIVATE" in header or "-----" not in header[10:]:
        return False
    end = text.find("-----END", begin)
    return end == -1 or end > offset


def inside_string(head: str) -> bool:
    """The text after `head` (the start of a line) is inside a string literal opened on that line."""
    quote = ""
    i = 0
    while i < len(head):
        c = head[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        i += 1
    return bool(quote)


def bare_value_is_literal(value: str, line: str, origin: str) -> bool:
    """A bare identifier after `=`/`:` is a literal only in config or shell syntax."""
    if not _IDENT.match(value):
        return True
    return bare_is_config(line, origin)


@functools.lru_cache(maxsize=256)  # per finding, for the few files a request holds
def judged_name(origin: str) -> str:
    """The file name the config and prose checks judge, lower case: a copy's or template's without
    its suffix (`config.ini~` -> `config.ini`); one without an extension (README, INSTALL,
    `credentials`, `.bundle/config`, an unsaved `scratchpad`) as text, `.txt`: nothing says it is
    code, and its `key = value` lines were sent unread when it counted as code."""
    name = origin.lower().rsplit("/", 1)[-1]
    stripped = True
    while stripped and name:
        stripped = False
        for suffix in _COPY_SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix) and name[: -len(suffix)].strip("."):
                name, stripped = name[: -len(suffix)], True
                break
    if name and "." not in name.lstrip(".") and name not in _CODE_NAMES and name not in CONFIG_NAMES:
        return f"{name}.txt"
    return name


def bare_is_config(line: str, origin: str) -> bool:
    """A bare value on `line` is a literal: the file is config or shell, or (no origin) the line looks so."""
    name = judged_name(origin)
    if name.endswith(CONFIG_SUFFIXES) or name in CONFIG_NAMES or name.startswith((".env", "dockerfile")):
        return True
    if origin:
        return False
    # No origin: judge by the line's shape (NAME=value is shell/.env, `key: value` alone is YAML,
    # `machine h login u password p` is .netrc).
    return bool(_ENV_LINE.match(line) or _YAML_LINE.match(line) or _NETRC_LINE.match(line))


_COMMENT_START = ("#", "//", "/*", "<!--", "--", ";")
_COMMENT_LINE = re.compile(r"\s*(?:\*|#|//|--|;|%|>|REM\b)")


@dataclass(frozen=True)
class LineLayout:
    """Where a line's comment starts (outside string literals; -1: none) and its string literals'
    spans, read in one pass, so that asking about each of many hits on a long line stays linear."""

    comment: int
    strings: tuple[tuple[int, int], ...]

    def in_string(self, col: int) -> bool:
        """Column `col` is inside a literal opened before it (what `inside_string(line[:col])` says)."""
        i = bisect.bisect_left(self.strings, (col, -1)) - 1  # the last literal opened before col
        return i >= 0 and col <= self.strings[i][1]


def line_layout(line: str) -> LineLayout:
    comment = -1
    spans: list[tuple[int, int]] = []
    quote, opened, i = "", 0, 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                spans.append((opened, i))
                quote = ""
        elif c in "\"'`":
            quote, opened = c, i
        elif comment < 0 and line.startswith(_COMMENT_START, i):
            comment = i
        i += 1
    if quote:
        spans.append((opened, len(line)))
    return LineLayout(comment, tuple(spans))


# (A diff's added or removed line keeps its `+`/`-` marker in front.)
_KEY_AT_START = re.compile(r"[+-]?\s*(?:-\s+|export\s+)?[\"']?[\w.$-]+[\"']?\s*[:=]")
_PROSE_SUFFIXES = (".md", ".txt", ".rst", ".history", "history")


def is_prose_file(origin: str) -> bool:
    """Markdown, plain text, reStructuredText (a copy's or template's judged as what it copies)."""
    return judged_name(origin).endswith(_PROSE_SUFFIXES)


def is_config_value(col: int, layout: LineLayout, line: str, origin: str) -> bool:
    """The bare value at `col` is a config key's value: a config file that is not prose, the key
    first on its line, the value outside any string literal."""
    if layout.in_string(col):
        return False
    if judged_name(origin).endswith(_PROSE_SUFFIXES):
        return bool(_ENV_LINE.match(line))  # a shell line in a README (`export PW=...`), not prose
    if not line[:col].strip():
        return bare_is_config(line, origin)  # alone on its line: its key is on a line above
    return bare_is_config(line, origin) and bool(_KEY_AT_START.match(line))


def in_prose(col: int, layout: LineLayout, line: str, origin: str) -> bool:
    """Column `col` of `line` is prose: in a comment, inside a string literal, or in a file of
    prose or config (Markdown, INI, .env...), where a bare word is text, not code."""
    if bare_is_config(line, origin) or _COMMENT_LINE.match(line):
        return True
    return (0 <= layout.comment < col) or layout.in_string(col)


def shannon(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


# The base64 of a file format's first bytes: PNG, JPEG, GIF, WebP/RIFF, PDF, SVG (`<svg`), ICO.
_FILE_MAGIC = ("iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "JVBERi0", "PHN2Zy", "AAABAA")


def is_high_entropy(value: str, before: str, bits: float = 4.0, shortest: int = 20) -> bool:
    """Random-looking literals, minus digests, UUIDs, SHAs, public keys, data URIs (`bits`: the cap).

    Values from `shortest` to 19 characters must mix digits, upper and lower case."""
    if len(value) < shortest or len(value) > 1000:
        return False
    if len(value) < 20 and not _three_classes(value):
        return False
    if _HEX.match(value) or _UUID.match(value) or _DIGEST_PREFIX.match(value) or _HEX_0X.match(value):
        return False  # digests, ids, hex words and 0x-addresses (a private key in hex has its own rule)
    if _DIGEST_NAME.search(before):
        return False  # a digest (NuGet's `"contentHash": "..."`), a public key's pin, an IV
    if is_ciphertext(value):
        return False  # encrypted (a DPAPI blob), its key elsewhere
    if _JWK_PUBLIC.search(before):
        return False  # a public JWK member (n, e, x, y, x5c...): public key material
    lowered_before = before[-24:].lower()
    if any(
        mark in lowered_before
        for mark in (
            "sha1-",
            "sha256-",
            "sha384-",
            "sha512-",
            "sha256:",
            "sha1:",
            "sha256=",  # a wheel's RECORD: path,sha256=<urlsafe base64>,size
            "sha384=",
            "sha512=",
            "base64,",
            "ssh-",
            "ecdsa-",
            "enc[aes256_gcm,data:",  # SOPS: the value encrypted, its IV and tag
            ",iv:",
            ",tag:",
        )
    ):
        return False
    if value.startswith(("AAAAB3Nza", "AAAAC3Nza", "AAAAE2VjZHNh", "MII")) and "PUBLIC" in before.upper():
        return False
    if value.startswith(("AAAAB3Nza", "AAAAC3Nza", "AAAAE2VjZHNh")):
        return False
    if value.startswith(_FILE_MAGIC):
        return False  # an image or a document in base64 (a notebook's `"image/png": "iVBORw0KGgo..."`)
    if encodes_text(value):
        return False  # base64 of readable text (a documented payload, a JSON header), not a key
    if _OBJECT_ID.match(value):
        return False  # a prefixed public object id (cus_..., pi_..., ch_...): providers' secrets have rules
    if "/" in value and value.count("/") >= 2 and re.search(r"[a-z]{3,}/[a-z]{3,}", value):
        return False  # a path
    if before.endswith(":") and _URL_REST.match(value):
        return False  # a URL read after its scheme's colon (`https: //host/...`); URL secrets have rules
    if "." in value and re.fullmatch(r"[\w-]+(?:\.[\w-]+)+", value) and re.search(r"\.[a-z]{2,}\b", value):
        return False  # a dotted name or host
    has_digit = any(c.isdigit() for c in value)
    has_upper = any(c.isupper() for c in value)
    has_lower = any(c.islower() for c in value)
    if not (has_digit and has_lower and (has_upper or len(value) >= 32)):
        return False
    if re.fullmatch(r"[a-z0-9_]+|[A-Z0-9_]+", value) or wordlike(value):
        return False
    return shannon(value) >= min(bits, 0.8 * math.log2(len(value)))


def encodes_text(value: str) -> bool:
    """`value` is base64 of readable text: words with spaces, or JSON. A key or a token decodes to
    random bytes; encoded secrets that decode to text (Basic auth, Kubernetes data) have rules.
    Decoded as the redactor's base64 view decodes a run (views.decode_base64)."""
    if len(value) < 24:
        return False
    decoded = decode_base64(value)
    return decoded is not None and (" " in decoded or '"' in decoded)


def _three_classes(value: str) -> bool:
    digit = any(c.isdigit() for c in value)
    return digit and any(c.isupper() for c in value) and any(c.islower() for c in value)


def looks_random(value: str, need: int = 3) -> bool:
    """Context rules: a candidate must mix `need` character classes (not a word, path or identifier)."""
    if _HEX.match(value) or _UUID.match(value):
        return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    classes = sum(
        (any(c.isdigit() for c in value), any(c.isupper() for c in value), any(c.islower() for c in value))
    )
    return classes >= need and shannon(value) >= 3.5


_SEGMENT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def wordlike(value: str) -> bool:
    """Identifiers built from words (PPLCNetV4SqueezeModule, coord_tuple_transform_to), not random text."""
    letters = sum(c.isalpha() for c in value)
    long_parts = sum(len(p) for p in _SEGMENT.findall(value) if p.isalpha() and len(p) >= 4)
    return letters > 0 and long_parts / letters > 0.5
