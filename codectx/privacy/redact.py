"""The redaction engine: finds secrets in text and replaces each with `[REDACTED:<rule>:<hmac8>]`.

Only the secret's own span is replaced; everything around it, and the number
of lines, stays as it was (a multi-line private key becomes one token followed
by the same number of newlines). Findings carry offsets, the line and an HMAC
tag, never the value. The tag is keyed per install, so one secret always maps
to one token here and cannot be linked across installs.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import re2

from codectx.privacy import filters, notebook, sqlrows, tables, views
from codectx.privacy.errors import ScanTimeout
from codectx.privacy.keys import load_or_create_key, tag
from codectx.privacy.policy import never_send_match
from codectx.privacy.rules import Rule, RuleSet, default_rules

if TYPE_CHECKING:
    from codectx.settings import Settings

TOKEN_PREFIX = "[REDACTED:"
ECHO_MIN_CHARS = 8  # shorter values are too likely to occur innocently elsewhere
# Our own tokens are never secrets: matches inside them are dropped (re-scans stay clean).
_TOKEN = re2.compile(r"\[REDACTED:[a-z0-9-]+:[0-9a-f]{8}\]")
_INTEGRITY = re2.compile(r"sha(?:1|224|256|384|512)-$")


@dataclass(frozen=True)
class Finding:
    """One redacted secret: where it was, which rule, its tag. Never the value."""

    rule: str
    start: int  # offset in the original text
    end: int
    line: int  # 0-based line of `start`
    hmac8: str

    @property
    def length(self) -> int:
        return self.end - self.start

    def as_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "start": self.start,
            "end": self.end,
            "line": self.line,
            "length": self.length,
            "hmac8": self.hmac8,
        }


@dataclass(frozen=True)
class RedactionResult:
    text: str
    findings: list[Finding] = field(default_factory=list)


@dataclass(frozen=True)
class _Hit:
    start: int
    end: int
    priority: int
    rule: str


class _Lines:
    """Offset -> line number, and the text of a line, for one scanned text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts: list[int] | None = None
        self._layouts: dict[int, filters.LineLayout] | None = None
        self._sealed: bool | None = None

    @property
    def may_be_sealed(self) -> bool:
        """The text holds a SealedSecret's `encryptedData:` map (looked for once, not per value)."""
        if self._sealed is None:
            self._sealed = "encryptedData:" in self.text
        return self._sealed

    @property
    def starts(self) -> list[int]:
        if self._starts is None:  # built only when a candidate needs it: most texts have none
            self._starts = [0, *itertools.accumulate(len(line) + 1 for line in self.text.split("\n"))][:-1]
        return self._starts

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def line_text(self, line: int) -> str:
        start = self.starts[line]
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
        return self.text[start:end]

    def at(self, offset: int) -> tuple[int, int, str]:
        """(line, column, the line's text) of an offset."""
        row = self.line_of(offset)
        return row, offset - self.starts[row], self.line_text(row)

    def layout(self, line: int) -> filters.LineLayout:
        """The line's comment and string literals (filters.line_layout), read once per line."""
        if self._layouts is None:
            self._layouts = {}
        found = self._layouts.get(line)
        if found is None:
            found = self._layouts[line] = filters.line_layout(self.line_text(line))
        return found

    def window(self, line: int, radius: int) -> str:
        lo = self.starts[max(0, line - radius)]
        hi_line = line + radius + 1
        hi = self.starts[hi_line] if hi_line < len(self.starts) else len(self.text)
        return self.text[lo:hi]


PROSE_DIGITS = 1  # is_high_entropy wants a digit: a long word without one stops before its line is read
CLEAN_CACHE_CHARS = 256  # texts up to this long are remembered as they are once found clean
CLEAN_CACHE_SIZE = 16384  # at most this many, short and long (then the memory starts over)


def _clean_key(origin: str, text: str) -> tuple[str, str | int, bytes]:
    """How the clean memory knows a text: a short one as it is, a long one by length and digest."""
    if len(text) <= CLEAN_CACHE_CHARS:
        return (origin, text, b"")
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()
    return (origin, len(text), digest)


class Redactor:
    """Scan text with the rule set and replace secrets; see `redact`."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        key: bytes | None = None,
        strict: bool | None = None,
        rules: RuleSet | None = None,
    ) -> None:
        self.settings = settings  # whose never-send globs a notebook's `!cat FILE` is judged by
        self.rules = rules or default_rules()
        self.strict = bool(strict if strict is not None else (settings.privacy.strict if settings else False))
        self._key = key
        # Texts found clean, by (origin, text), a long text by its length and digest: a body's keys,
        # kinds, paths and names recur in every request, and a conversation's or a completion's
        # regions of the same files in the next one; the outcome depends only on the text, its
        # origin, the rules and `strict` (all fixed here). Values known secret elsewhere in a
        # request are checked before it is consulted.
        self._clean: dict[tuple[str, str | int, bytes], None] = {}
        # Tag -> length of the values masked in pieces before a prompt is built (codectx/privacy/
        # pieces.py): the gate then sees only their tags, and its audit entry still says how long
        # each was. Lengths and tags only, never a value.
        self._lengths: dict[str, int] = {}

    def remember_length(self, hmac8: str, length: int) -> None:
        if len(self._lengths) > 4096:
            self._lengths.clear()
        self._lengths[hmac8] = length

    def length_of(self, hmac8: str) -> int:
        """The length of a value this redactor masked under `hmac8` in a piece; 0 if unknown."""
        return self._lengths.get(hmac8, 0)

    @property
    def key(self) -> bytes:
        if self._key is None:
            from codectx.settings import state_dir

            self._key = load_or_create_key(state_dir())
        return self._key

    @property
    def version(self) -> str:
        return self.rules.version

    def scan(self, text: str, origin: str = "", deadline: float | None = None) -> list[Finding]:
        """Findings in `text` without changing it."""
        return self.redact(text, origin, deadline).findings

    def redact(
        self,
        text: str,
        origin: str = "",
        deadline: float | None = None,
        known: Iterable[tuple[str, str]] = (),
    ) -> RedactionResult:
        """`text` with every secret span replaced, and the findings (offsets into `text`).

        Once a value is found to be a secret, every other occurrence of it in the text (a password
        repeated in a comment, say) is redacted too, and so are the `known` (value, rule) pairs
        found elsewhere in the same request.
        """
        if not text:
            return RedactionResult(text, [])
        known = tuple(known)
        remember = not any(value in text for value, _ in known)
        clean_key = _clean_key(origin, text) if remember else None
        if clean_key is not None and clean_key in self._clean:
            return RedactionResult(text, [])
        # Lone CRs, NEL and U+2028 as line breaks, Unicode spaces as spaces, fullwidth as ASCII: the
        # same offsets (views.folded).
        scan = views.folded(text)
        hits = self._hits(scan, origin, deadline)
        hits += self._view_hits(scan, origin, deadline)
        hits += self._cell_hits(scan, origin, deadline)
        if notebook.is_notebook(origin):
            hits += self._notebook_hits(scan, origin, deadline)
        hits += _echoes(text, hits, known, len(self.rules.rules))
        if not hits:
            if clean_key is not None:
                if len(self._clean) >= CLEAN_CACHE_SIZE:
                    self._clean.clear()
                self._clean[clean_key] = None
            return RedactionResult(text, [])
        lines = _Lines(text)
        findings: list[Finding] = []
        out: list[str] = []
        pos = 0
        for start, end, rule in _merge(hits):
            value = text[start:end]
            mark = tag(self.key, value)
            findings.append(Finding(rule, start, end, lines.line_of(start), mark))
            out.append(text[pos:start])
            out.append(f"{TOKEN_PREFIX}{rule}:{mark}]" + "\n" * value.count("\n"))
            pos = end
        out.append(text[pos:])
        return RedactionResult("".join(out), findings)

    def _hits(self, text: str, origin: str, deadline: float | None) -> list[_Hit]:
        data = text.encode("utf-8", "surrogatepass")
        candidates = self.rules.candidates(data, self.strict)
        if not candidates:
            return []
        offsets = _Offsets(text, data)
        ascii_text = len(data) == len(text)
        own_tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)] if TOKEN_PREFIX in text else []
        lines = _Lines(text)
        hits: list[_Hit] = []
        for priority, rule in candidates:
            if deadline is not None and time.monotonic() > deadline:
                raise ScanTimeout("the secret scan ran past its time limit")
            if rule.path is not None and not rule.path.search(origin):
                continue  # a rule for one kind of file (Terraform, say): only with that file's path
            for n, match in enumerate(rule.regex.finditer(data), 1):
                if n % 512 == 0 and deadline is not None and time.monotonic() > deadline:
                    raise ScanTimeout("the secret scan ran past its time limit")
                span = _secret_span(match, rule, rule.check == "unquoted")
                if span is None:
                    continue
                start, end = offsets.char(span[0]), offsets.char(span[1])
                if not ascii_text:
                    end = _before_cjk(text, start, end)
                    if end <= start:
                        continue
                if any(s < end and start < e for s, e in own_tokens):
                    continue
                name = None
                if rule.name_group is not None and match.start(rule.name_group) >= 0:
                    name = match.group(rule.name_group).decode("utf-8", "surrogatepass")
                if self._keep(rule, name, text, start, end, lines, origin):
                    hits.append(_Hit(start, end, priority, rule.id))
        return hits

    def _view_hits(self, text: str, origin: str, deadline: float | None) -> list[_Hit]:
        """Secrets split by concatenation (joined view), base64-encoded (decoded view) or spelled
        with percent or character escapes (unescaped view)."""
        out: list[_Hit] = []
        for lo, hi in views.junction_regions(text, origin):
            view = views.joined(text[lo:hi], origin)
            if view is None:
                continue
            for h in self._hits(view.text, origin, deadline):
                s, e = view.start(h.start), view.end(h.end)
                if view.crosses(s, e) or view.touches(s, e):
                    out.append(_Hit(lo + s, lo + e, h.priority, h.rule))
        for s, e, decoded in views.encoded_runs(text):
            if views.is_credential_pair(decoded):
                out.append(_Hit(s, e, len(self.rules.rules), "encoded-credentials"))
                continue
            out += self._run_hit(s, e, decoded, origin, deadline)
        for s, e, decoded in views.unescaped_runs(text):
            out += self._run_hit(s, e, decoded, origin, deadline)
        for run in views.spelled_runs(text):
            out += self._run_hit(run.start, run.end, run.text, origin, deadline, head=f'{run.head} "')
        plain = views.escaped_view(text)
        if plain is not None:
            out += self._hits(plain, origin, deadline)
        return out

    def _notebook_hits(self, text: str, origin: str, deadline: float | None) -> list[_Hit]:
        """A notebook's cells read as code and text (its JSON taken off), and the outputs of cells
        that show a secret by its name (notebook.py)."""
        settings = self.settings

        def refused(path: str) -> bool:
            return never_send_match(path, settings) is not None

        reading = notebook.read(text, refused)
        out = self._hits(reading.code, f"{origin}.py", deadline)
        out += self._hits(reading.prose, f"{origin}.txt", deadline)
        shown = len(self.rules.rules)
        return out + [_Hit(s, e, shown, "notebook-shown-secret") for s, e in reading.shown]

    def _cell_hits(self, text: str, origin: str, deadline: float | None) -> list[_Hit]:
        """Values of SQL rows and table cells under secret-named columns, each judged as
        `column = "value"` by the assignment rules (sqlrows.py, tables.py)."""
        out: list[_Hit] = []
        cells = itertools.chain(
            sqlrows.secret_cells(text, deadline), tables.secret_cells(text, origin, deadline)
        )
        for cell in cells:
            value = text[cell.start : cell.end]
            quote = '"' if '"' not in value else "'"
            if quote in value or "\n" in value or "\\" in value:
                out.append(_Hit(cell.start, cell.end, len(self.rules.rules), "sql-secret-column"))
                continue  # cannot be judged as one plain literal: masked whole rather than let through
            out += [
                _Hit(cell.start + h.start, cell.start + h.end, h.priority, h.rule)
                for h in self._judged(f"{cell.column} = {quote}", value, origin, deadline)
            ]
        return out

    def judge(self, name: str, value: str, origin: str = "", deadline: float | None = None) -> list[str]:
        """The rules that find `value` a secret where `name` puts it (`password = "<value>"`): a
        value seen without its name (a type checker's `Literal['...']`) judged as if it had one."""
        quote = "'" if '"' in value and "'" not in value else '"'
        probe = value.replace('"', "'") if quote == '"' else value  # the same length: offsets hold
        return [h.rule for h in self._judged(f"{name} = {quote}", probe, origin, deadline)]

    def _judged(self, head: str, value: str, origin: str, deadline: float | None) -> list[_Hit]:
        """Hits of `value` read after `head` (which opens a literal: `column = "`), offsets into
        `value`, cut to it."""
        at, stop = len(head), len(head) + len(value)
        quote = head[-1:] if head[-1:] in "\"'" else ""
        return [
            _Hit(max(h.start, at) - at, min(h.end, stop) - at, h.priority, h.rule)
            for h in self._hits(f"{head}{value}{quote}\n", origin, deadline)
            if h.start < stop and h.end > at
        ]

    def _run_hit(
        self, start: int, end: int, decoded: str, origin: str, deadline: float | None, head: str = ""
    ) -> list[_Hit]:
        """A decoded run (base64, escapes, character codes) holding a secret is redacted whole, under
        the rule that found it (its randomness alone does not count: decoding makes any run look
        random). `head`: text read in front of it (a name, an opening quote), found in no hit alone."""
        hits = (
            self._judged(head, decoded, origin, deadline) if head else self._hits(decoded, origin, deadline)
        )
        inner = [h for h in hits if h.rule != "high-entropy"]
        if not inner:
            return []
        best = min(inner, key=lambda h: h.priority)
        return [_Hit(start, end, best.priority, best.rule)]

    def _keep(
        self, rule: Rule, name: str | None, text: str, start: int, end: int, lines: _Lines, origin: str
    ) -> bool:
        value = text[start:end]
        if "\\" in value or "&#" in value:
            value = views.unescape_value(value)  # judged as the characters it stands for: `"\\x48\\x65..."`
        if len(value) < rule.min_len:
            return False
        if rule.check == "unquoted" and text[end : end + 1] == "(" and _CALLED.match(value):
            return False  # a call's name (`System.fetch_env!("KEY")`): the value is what it returns
        if origin.endswith((".diff", ".patch")):
            origin = filters.diff_target(text, start) or origin  # a hunk's lines are its file's
        if filters.is_placeholder(value, self.rules.markers, self.rules.allow_values):
            return False
        if filters.is_ciphertext(value):
            return False  # hiera-eyaml's `ENC[PKCS7,...]`, a DPAPI blob: encrypted, the key elsewhere
        if _INTEGRITY.search(text[max(0, start - 8) : start]):
            return False  # a lockfile integrity hash (sha512-...), not a token
        if lines.may_be_sealed and filters.in_sealed_data(text, start):
            return False  # a SealedSecret's encryptedData: encrypted, made to be committed
        if rule.reject_wordlike and rule.check != "corpus" and filters.wordlike(value.replace(".", "")):
            return False
        if rule.reject and rule.check != "corpus" and any(r.search(value) for r in rule.reject):
            return False
        if rule.check == "format":
            return True
        if rule.check == "corpus":
            return _corpus_keeps(rule, value)
        if rule.check == "context":
            if not filters.looks_random(value, rule.classes):
                return False
            window = lines.window(lines.line_of(start), rule.window)
            return bool(rule.context.search(window))
        if rule.check == "entropy":
            if rule.bare and not filters.bare_is_config(lines.line_text(lines.line_of(start)), origin):
                return False
            if rule.prose:
                if sum(c.isdigit() for c in value) < PROSE_DIGITS:
                    return False  # checked before the line is read: most long words have no digit
                row, col, line_text = lines.at(start)
                if not filters.in_prose(col, lines.layout(row), line_text, origin):
                    return False
            if filters.in_public_block(text, start):
                return False  # the body of a public key, certificate or PGP public block
            if value.startswith(_PUBLIC_PREFIXES):
                return False  # a key made to be published (Stripe's pk_, PostHog's phc_): no secret
            before = text[max(0, start - 40) : start]
            if _PUBLIC_NAME.search(before):
                # `PublicKey = <base64>`, `public key:` and `peer:` in `wg show` (WireGuard, age
                # recipients): the public half of a key pair, which is made to be shared.
                return False
            return filters.is_high_entropy(value, before, rule.bits, max(rule.min_len, 16))
        # "value" and "unquoted": generic literals.
        if value.startswith(_PUBLIC_PREFIXES):
            return False  # a publishable key, even where a secret goes (`Bearer pk_live_...`)
        if name and filters.is_excluded_name(name):
            return False
        if _ARN_BEFORE.search(text[max(0, start - 160) : start]):
            return False  # `...:secret:prod/stripe-AbCdEf` is the name in a secret manager's ARN
        # Dotted words where a password goes (`password: amber.walnut.falcon` in config): a passphrase,
        # not an attribute chain.
        dotted = filters.dotted_passphrase(value) and (
            rule.id in _PASSWORD_SLOTS or filters.names_a_password(name)
        )
        if dotted and rule.check == "unquoted":
            row, col, line_text = lines.at(start)
            dotted = filters.is_config_value(col, lines.layout(row), line_text, origin)
        if filters.is_reference(value, bare=rule.check == "unquoted") and not dotted:
            return False
        if rule.reject_words and filters.is_weak_literal(value):
            strong = rule.id in _PASSWORD_SLOTS or filters.is_password_name(name)
            if strong and rule.check == "unquoted":
                # A bare word counts as a password only as a config key's value: `password:
                # hunter` in YAML, PW=... in .env; not the word after "pass:" in a docstring,
                # a log message or Markdown ("Second pass: resolves every import").
                row, col, line_text = lines.at(start)
                strong = filters.is_config_value(col, lines.layout(row), line_text, origin)
            passphrase = strong and (rule.id in _PASSWORD_SLOTS or filters.names_a_password(name))
            spaced = passphrase and filters.spaced_passphrase(value)
            if not (spaced or dotted or filters.letters_secret(value, strong, passphrase)):
                return False
        if rule.check == "unquoted":
            row, col, line_text = lines.at(start)
            if filters.inside_string(line_text[:col]):
                return True  # `"host=db password=hunter2x"`: inside a string literal, a bare value is text
            comment = lines.layout(row).comment
            if 0 <= comment < col:
                return True  # `# root pw on the bastion is rnRB...`: a comment holds no expressions
            return filters.bare_value_is_literal(value, line_text, origin)
        return True


# A function's qualified name or a macro's (`System.fetch_env!`, `Ed25519PrivateKey.from_private_bytes`):
# before `(` it is called; a password with a parenthesis (`Xk9mP2qLz(8)w`) is none of these.
_CALLED = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)+!?\Z|[A-Za-z_]\w*!\Z")
# Keys meant to be public, by their documented prefixes: Stripe publishable keys, PostHog project
# keys, Supabase publishable keys, Mapbox public tokens (pk. + a JWT's base64).
_PUBLIC_PREFIXES = ("pk_live_", "pk_test_", "phc_", "sb_publishable_", "pk.eyJ")
# Python's re: these read a few characters of text that may hold lone surrogates (RE2 takes UTF-8 only).
_PUBLIC_NAME = re.compile(r"(?i)(?:\bpub(?:lic)?[ _.-]?key|(?:^|\n)[ \t]*peer)[\"']?\s*[:=]\s*[\"']?$")
_ARN_BEFORE = re.compile(r"arn:aws[\w-]*:[\w:/+=,.@-]*$")  # ARN characters only: `;Password=` ends it

# Rules whose captured value is a password by the syntax around it (a URL's or a connection
# string's password field, `curl -u user:pw`, `IDENTIFIED BY '...'`).
_PASSWORD_SLOTS = frozenset(
    {
        "url-password",
        "dsn-password",
        "connection-string-password",
        "curl-user",
        "sql-password",
        "cli-password-flag",
        "login-pair",
        "basic-auth-pair",
        "positional-password",
        "powershell-secure-string",
        "network-shared-secret",
        "redis-acl-password",
    }
)


def _corpus_keeps(rule: Rule, value: str) -> bool:
    """A corpus rule's own filters (see codectx.privacy.corpus)."""
    if rule.min_entropy and filters.shannon(value) < rule.min_entropy:
        return False
    if rule.reject_wordlike and filters.wordlike(value):
        return False
    if any(r.search(value) for r in rule.reject):
        return False
    low = value.lower()
    return not any(s in low for s in rule.reject_contains)


class _Offsets:
    """UTF-8 byte offsets (what RE2 reports on bytes) to string offsets."""

    def __init__(self, text: str, data: bytes) -> None:
        self.data = data
        self.ascii = len(data) == len(text)

    def char(self, byte_offset: int) -> int:
        if self.ascii:
            return byte_offset
        return len(self.data[:byte_offset].decode("utf-8", "surrogatepass"))


def _secret_span(match: Any, rule: Rule, bare: bool) -> tuple[int, int] | None:
    """The byte span of the secret: the first secret* group that took part, else the whole match."""
    for index in rule.secret_groups:
        start = match.start(index)
        if start >= 0:
            end = match.end(index)
            # After a bare value, a trailing full stop or comma ends the sentence or list, not the secret.
            while bare and end > start and match.string[end - 1 : end] in (b".", b","):
                end -= 1
            return (start, end) if end > start else None
    if rule.secret_groups and not rule.any_group:
        return None
    return match.start(), match.end()


# CJK scripts (a value ends where one starts: a password in them is rare, and `token：访问令牌，...`
# read with its fullwidth colon folded is a question, not an assignment).
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def _before_cjk(text: str, start: int, end: int) -> int:
    """`end` moved back to the first CJK character in text[start:end], and off the punctuation
    before it (a folded `，`)."""
    cut = _CJK.search(text, start, end)
    if cut is None:
        return end
    end = cut.start()
    while end > start and text[end - 1] in ",.;:!?、。 ":
        end -= 1
    return end


def _echoes(text: str, hits: list[_Hit], known: Iterable[tuple[str, str]], priority: int) -> list[_Hit]:
    """Other occurrences of values already judged secret (at least ECHO_MIN_CHARS long)."""
    values = {text[h.start : h.end]: h.rule for h in hits}
    values.update(dict(known))
    echoes = []
    for value, rule in values.items():
        if len(value) < ECHO_MIN_CHARS:
            continue
        pos = text.find(value)
        while pos != -1:
            echoes.append(_Hit(pos, pos + len(value), priority, rule))
            pos = text.find(value, pos + len(value))
    return echoes


def _merge(hits: list[_Hit]) -> list[tuple[int, int, str]]:
    """Overlapping hits become one span (their union), named after the highest-priority rule."""
    hits.sort(key=lambda h: (h.start, h.priority))
    merged: list[tuple[int, int, int, str]] = []
    for hit in hits:
        if merged and hit.start < merged[-1][1]:
            start, end, priority, rule = merged[-1]
            if hit.priority < priority:
                priority, rule = hit.priority, hit.rule
            merged[-1] = (start, max(end, hit.end), priority, rule)
        else:
            merged.append((hit.start, hit.end, hit.priority, hit.rule))
    return [(s, e, r) for s, e, _, r in merged]
