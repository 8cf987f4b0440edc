"""The gate's walk over a request body: every JSON string sanitised, anonymised and redacted.

`BodyWalker` visits each string of a JSON-like body (values and keys), strips invisible
Unicode, replaces workspace paths by their aliases when anonymising, and redacts secrets,
keeping a `RedactionEvent` for each (which field, which line, the likely file). A second,
`propagating` pass redacts other occurrences of a value found secret in any field. The gate
(codectx.privacy.egress) then serialises the result and scans the final bytes as one text,
through `scan_view`, an escape-aware view of the serialised JSON.
"""

from __future__ import annotations

import re
from typing import Any

from codectx.privacy.errors import PrivacyError
from codectx.privacy.redact import TOKEN_PREFIX, RedactionResult, Redactor
from codectx.privacy.request import RedactionEvent, SourceSpan
from codectx.privacy.sanitize import sanitize


class BodyWalker:
    """Recursively sanitise, anonymise and redact every string in a JSON-like body."""

    def __init__(
        self,
        redactor: Redactor,
        redact: bool,
        deadline: float,
        spans: list[SourceSpan],
        aliases: dict[str, str],
    ) -> None:
        self.redactor = redactor
        self.redact = redact
        self.deadline = deadline
        self.paths = sorted({s.path for s in spans}, key=len, reverse=True)
        self.aliases = aliases
        self.events: list[RedactionEvent] = []
        self.stripped = 0
        self.secrets: dict[str, str] = {}  # value -> rule, for this request only (never stored)
        self.propagating = False

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
        return self._logged(result, text, where)

    def _placed(self, text: str, where: str) -> None:
        """Tokens already in the text (pieces redacted before the prompt was built) go in the log too."""
        for m in _PLACED.finditer(text):
            line = text.count("\n", 0, m.start())
            self.events.append(
                RedactionEvent(
                    m.group(1), where, line, 0, m.group(2), self._file_at(text, m.start()), stage="piece"
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
