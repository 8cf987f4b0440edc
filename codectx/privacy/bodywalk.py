"""The gate's walk over a request body: every JSON string sanitised, anonymised and redacted.

`BodyWalker` visits each string of a JSON-like body (values and keys), strips invisible
Unicode, replaces workspace paths by their aliases when anonymising, and redacts secrets,
keeping a `RedactionEvent` for each (which field, which line, the likely file). A second,
`propagating` pass redacts other occurrences of a value found secret in any field. The gate
(codectx.privacy.egress) then serialises the result and scans the final bytes as one text,
through `scan_view`, an escape-aware view of the serialised JSON.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from typing import Any

from codectx.privacy.errors import PrivacyError
from codectx.privacy.redact import TOKEN_PREFIX, RedactionResult, Redactor
from codectx.privacy.request import RedactionEvent, SourceSpan
from codectx.privacy.sanitize import sanitize


class CleanMemo:
    """Digests of long strings a gate walked that came out unchanged with nothing to log: no
    secret, no invisible character, no path to alias, no placeholder. A later request repeating
    one (a conversation's history, resent each turn) is not walked through it again; the gate's
    final scan still reads every byte of every request. A digest covers the string, the rules'
    version and the aliases in effect, so a change of either is a miss. Bounded; thread-safe."""

    MIN_CHARS = 512  # shorter strings cost less to scan than to remember

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    def key(self, text: str, redactor: Redactor, aliases: dict[str, str]) -> bytes:
        digest = hashlib.blake2b(f"{redactor.version}\0{redactor.strict}".encode(), digest_size=20)
        for path, alias in sorted(aliases.items()):
            digest.update(f"\0{path}\0{alias}".encode("utf-8", "surrogatepass"))
        digest.update(b"\1")
        digest.update(text.encode("utf-8", "surrogatepass"))
        return digest.digest()

    def seen(self, key: bytes) -> bool:
        with self._lock:
            if key not in self._seen:
                return False
            self._seen.move_to_end(key)
            return True

    def add(self, key: bytes) -> None:
        with self._lock:
            self._seen[key] = None
            while len(self._seen) > self.limit:
                self._seen.popitem(last=False)


class BodyWalker:
    """Recursively sanitise, anonymise and redact every string in a JSON-like body."""

    def __init__(
        self,
        redactor: Redactor,
        redact: bool,
        deadline: float,
        spans: list[SourceSpan],
        aliases: dict[str, str],
        memo: CleanMemo | None = None,
    ) -> None:
        self.memo = memo
        self.redactor = redactor
        self.redact = redact
        self.deadline = deadline
        self.paths = sorted({s.path for s in spans}, key=len, reverse=True)
        self.aliases = aliases
        self.events: list[RedactionEvent] = []
        self.stripped = 0
        self.secrets: dict[str, str] = {}  # value -> rule, for this request only (never stored)
        self.propagating = False
        self._nothing_logged = False  # the last string walked: no finding, nothing stripped or placed

    def walk(self, value: Any, where: str) -> Any:
        if isinstance(value, str):
            return self._string(value, where or "<body>")
        if isinstance(value, bool) or value is None or isinstance(value, int):
            return value
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise PrivacyError(f"{where}: {value} is not valid JSON")
            return value
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise PrivacyError(f"{where}: JSON object keys must be strings, got {key!r}")
                path = f"{where}.{key}" if where else key
                out[self._string(key, path + "<key>")] = self.walk(item, path)
            return out
        if isinstance(value, (list, tuple)):
            return [self.walk(item, f"{where}[{i}]") for i, item in enumerate(value)]
        raise PrivacyError(f"{where or '<body>'}: cannot send a {type(value).__name__}")

    def _string(self, text: str, where: str) -> str:
        if self.propagating:
            return self._propagate(text, where)
        key = None
        if self.memo is not None and self.redact and len(text) >= CleanMemo.MIN_CHARS:
            key = self.memo.key(text, self.redactor, self.aliases)
            if self.memo.seen(key):
                return text
        cleaned = self._clean(text, where)
        if key is not None and cleaned == text and self._nothing_logged:
            assert self.memo is not None
            self.memo.add(key)
        return cleaned

    def _clean(self, text: str, where: str) -> str:
        self._nothing_logged = False
        original, stripped_before = text, self.stripped
        # Lone surrogates (undecodable bytes read with surrogateescape) cannot be UTF-8 encoded.
        text = text.encode("utf-8", "replace").decode("utf-8") if _has_surrogate(text) else text
        text, count = sanitize(text)
        self.stripped += count
        for path in self.paths:
            if path in self.aliases and path in text:
                text = text.replace(path, self.aliases[path])
        if not self.redact:
            return text
        if TOKEN_PREFIX in text:
            self._placed(text, where)
        result = self.redactor.redact(text, "", self.deadline)
        for finding in result.findings:
            self.secrets.setdefault(text[finding.start : finding.end], finding.rule)
        self._nothing_logged = (
            not result.findings and self.stripped == stripped_before and TOKEN_PREFIX not in original
        )
        return self._logged(result, text, where)

    def _placed(self, text: str, where: str) -> None:
        """Tokens already in the text (pieces redacted before the prompt was built) go in the log too."""
        for m in _PLACED.finditer(text):
            line = text.count("\n", 0, m.start())
            self.events.append(
                RedactionEvent(
                    m.group(1),
                    where,
                    line,
                    self.redactor.length_of(m.group(2)),
                    m.group(2),
                    self._file_at(text, m.start()),
                    stage="piece",
                )
            )

    def _propagate(self, text: str, where: str) -> str:
        """Second pass: redact other occurrences of values found secret in any field."""
        if not any(value in text for value in self.secrets):
            return text
        result = self.redactor.redact(text, "", self.deadline, known=self.secrets.items())
        return self._logged(result, text, where)

    def _logged(self, result: RedactionResult, text: str, where: str) -> str:
        """The redacted text of a field; each of its findings goes in the log with its likely file."""
        for f in result.findings:
            event = RedactionEvent(f.rule, where, f.line, f.length, f.hmac8, self._file_at(text, f.start))
            self.events.append(event)
        return result.text

    def _file_at(self, text: str, offset: int) -> str | None:
        """The source whose path (or alias) appears last before `offset`: the file a finding came from."""
        best: tuple[int, str] | None = None
        for path in self.paths:
            shown = self.aliases.get(path, path)
            pos = text.rfind(shown, 0, offset)
            if pos != -1 and (best is None or pos > best[0]):
                best = (pos, path)
        return best[1] if best else None


_PLACED = re.compile(r"\[REDACTED:([a-z0-9-]+):([0-9a-f]{8})\]")


def text_size(value: Any) -> int:
    """Characters of text in a JSON-like body (a cheap lower bound of its serialised size)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + text_size(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return sum(text_size(v) for v in value)
    return 0


# What an escape means to the scanner, two characters for two (offsets are kept): whitespace stays
# whitespace (a real newline keeps line-based checks on source lines) and an escaped quote ends a value
# (a value that starts after one starts with a space, and is dropped as prose: the walker judged it).
_VIEW_ESCAPES = {"n": " \n", "t": " \t", "r": " \r", "f": " \f", '"': '" '}


def scan_view(text: str) -> str:
    """`text` (compact JSON) with each string escape replaced by what it stands for, offsets unchanged."""
    if "\\" not in text:
        return text
    out: list[str] = []
    pos = 0
    index = text.find("\\")
    while index != -1:
        out.append(text[pos:index])
        pair = text[index : index + 2]
        out.append(_VIEW_ESCAPES.get(pair[1:], pair))
        pos = index + len(pair)
        index = text.find("\\", pos)
    out.append(text[pos:])
    return "".join(out)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
