"""False-positive filters: is a matched value a real literal secret, or a placeholder/reference?

Pure functions over the matched value and the line it sits on; the rule's
`check` field picks which ones run (see rules.toml).
"""

from __future__ import annotations

import math
import re
from collections import Counter

# File types whose bare `key = value` / `key: value` is a literal (not a variable reference).
CONFIG_SUFFIXES = (
    ".env", ".ini", ".cfg", ".conf", ".config", ".properties", ".yaml", ".yml", ".toml",
    ".sh", ".bash", ".zsh", ".envrc", ".tfvars", ".netrc", ".pgpass", ".npmrc", ".pypirc",
    ".md", ".txt", ".rst", ".sql", ".netrc", ".service", ".socket", ".timer", ".mount", ".desktop",
    ".history", ".env.example", ".gradle.properties", ".tfvars", ".hcl", ".tf",
)  # fmt: skip
CONFIG_NAMES = (
    "dockerfile", ".env", ".envrc", ".netrc", "netrc", ".npmrc", ".pypirc", "makefile", ".bash_history",
    ".zsh_history", ".sh_history", ".history", "history", ".pgpass", "containerfile",
)  # fmt: skip

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DOTTED = re.compile(r"[A-Za-z_$@][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*)+\Z")
_DIGITS = re.compile(r"[0-9]+\Z")
_DIGEST_PREFIX = re.compile(r"(?:sha|md)[0-9]*[-:]", re.IGNORECASE)
_NUMBER = re.compile(
    r"[0-9][0-9_]{0,15}(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?[jJlLfFuU]?\Z"  # 129_599, 1e-5, 10L
    r"|0[xX][0-9a-fA-F_]{1,16}\Z"
)
_COLOR = re.compile(r"#[0-9a-fA-F]{3,8}\Z")
_HEX = re.compile(r"[0-9a-fA-F]+\Z")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_SUBSCRIPT = re.compile(r"[A-Za-z_][\w.]*\[[\w.,'\" \[\]|]*\][),:;]*\Z")
_HEX_0X = re.compile(r"0[xX][0-9a-fA-F]+\Z")
_JWK_MEMBERS = r"n|e|x|y|x5c|x5t|x5t#S256|kid|crv|kty|alg|use|key_ops"
_JWK_PUBLIC = re.compile(rf"[\"'](?:{_JWK_MEMBERS})[\"']\s*:\s*\[?\s*[\"']$")
_SECRET_REF = re.compile(
    r"(?:arn:aws[\w-]*:(?:secretsmanager|ssm|kms):|op://|vault:|akv://|sm://|gcp-secret://|azure-keyvault://|"
    r"projects/[^/\s]+/secrets/|\{\{resolve:|ssm:/|secretsmanager:|keyvault:)",
    re.IGNORECASE,
)
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
)
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def is_excluded_name(name: str) -> bool:
    """Identifiers that end in `token`, `pass`... without naming a credential."""
    if _NAME_EXCLUDE.search(_CAMEL.sub(r"\1_\2", name).lower()):
        return True
    low = name.lower()
    # `pass`/`pwd` only count as a whole segment (db_pass, dbPass, PASS), not inside a word (bypass).
    for short in ("pass", "pwd"):
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
    )
)


def is_placeholder(value: str, markers: tuple[str, ...], allow: frozenset[str]) -> bool:
    """Documentation examples, templates and filler like `xxxx`, `<your-key>`, `${TOKEN}`."""
    if value in allow:
        return True
    low = value.lower()
    # In long random values (key blocks) a short marker like "fake" turns up by chance: skip those.
    long_value = len(value) > 64
    if any(marker in low for marker in markers if not (long_value and len(marker) < 5)):
        return True
    return set(low) <= set("x*.-_#0 •●·∙…")


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


def is_weak_literal(value: str) -> bool:
    """Words, prose and short numbers: field names, labels and constants, not credentials."""
    if any(c.isspace() for c in value):
        return True
    if value.lower() in _NOT_SECRET_WORDS:
        return True
    if all(c.isalpha() or c in "_.-'" for c in value):
        return True
    if (_DIGITS.match(value) and len(value) < 10) or _NUMBER.match(value):
        return True
    if _COLOR.match(value):
        return True
    return value.startswith(("/", "./", "../", "~/", "http://", "https://", "file:"))


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


def bare_is_config(line: str, origin: str) -> bool:
    """A bare value on `line` is a literal: the file is config or shell, or (no origin) the line looks so."""
    low = origin.lower()
    name = low.rsplit("/", 1)[-1]
    if name.endswith(CONFIG_SUFFIXES) or name in CONFIG_NAMES or name.startswith((".env", "dockerfile")):
        return True
    if origin:
        return False
    # No origin: judge by the line's shape (NAME=value is shell/.env, `key: value` alone is YAML,
    # `machine h login u password p` is .netrc).
    return bool(_ENV_LINE.match(line) or _YAML_LINE.match(line) or _NETRC_LINE.match(line))


def shannon(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def is_high_entropy(value: str, before: str, bits: float = 4.0, shortest: int = 20) -> bool:
    """Random-looking literals, minus digests, UUIDs, SHAs, public keys, data URIs (`bits`: the cap).

    Values from `shortest` to 19 characters must mix digits, upper and lower case."""
    if len(value) < shortest or len(value) > 1000:
        return False
    if len(value) < 20 and not _three_classes(value):
        return False
    if _HEX.match(value) or _UUID.match(value) or _DIGEST_PREFIX.match(value) or _HEX_0X.match(value):
        return False  # digests, ids, hex words and 0x-addresses (a private key in hex has its own rule)
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
            "base64,",
            "ssh-",
            "ecdsa-",
        )
    ):
        return False
    if value.startswith(("AAAAB3Nza", "AAAAC3Nza", "AAAAE2VjZHNh", "MII")) and "PUBLIC" in before.upper():
        return False
    if value.startswith(("AAAAB3Nza", "AAAAC3Nza", "AAAAE2VjZHNh")):
        return False
    if _OBJECT_ID.match(value):
        return False  # a prefixed public object id (cus_..., pi_..., ch_...): providers' secrets have rules
    if "/" in value and value.count("/") >= 2 and re.search(r"[a-z]{3,}/[a-z]{3,}", value):
        return False  # a path
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
