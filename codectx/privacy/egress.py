"""The egress choke point: every request body is built, scanned as a whole, then sent.

`EgressGate.prepare` turns a request body into the exact bytes that will go on
the wire: it refuses never-send sources, strips invisible Unicode, optionally
anonymises paths, redacts every JSON string value, serialises compactly
(UTF-8, ensure_ascii=False), re-scans the final text, and checks the size.
Any scanner failure or a scan past `privacy.scan_timeout_s` raises
EgressBlocked: it fails closed. The transport sends `prepared.content`
byte-for-byte, but only after `intend` has made the request's audit entry
durable (nothing is sent when it cannot be written); `record` appends each
attempt's outcome. Requests without a body get `bodyless` (the same entry, 0
bytes). Never-send rules and the workspace boundary are judged on each
source's workspace path and on its resolved real path.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from codectx.privacy.audit import AuditLog
from codectx.privacy.errors import AuditError, EgressBlocked, PrivacyError, ScanTimeout
from codectx.privacy.keys import tag
from codectx.privacy.policy import never_send_match
from codectx.privacy.redact import TOKEN_PREFIX, Redactor
from codectx.privacy.sanitize import sanitize

if TYPE_CHECKING:
    from codectx.settings import Settings


@dataclass(frozen=True)
class SourceSpan:
    """A file region whose text is in the request (0-based inclusive lines, workspace-relative path)."""

    path: str
    start_line: int
    end_line: int

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "start_line": self.start_line, "end_line": self.end_line}


@dataclass(frozen=True)
class RedactionEvent:
    """One redaction in a request: rule, where (JSON field, line in it, likely file), length, tag."""

    rule: str
    field: str
    line: int
    length: int
    hmac8: str
    file: str | None = None
    stage: str = "gate"  # "gate": found by the gate's scan; "piece": masked before the prompt was built

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "file": self.file,
            "field": self.field,
            "line": self.line,
            "length": self.length,
            "hmac8": self.hmac8,
            "stage": self.stage,
        }


@dataclass(frozen=True)
class PreparedRequest:
    endpoint: str
    content: bytes  # exactly what may be sent
    sha256: str
    findings: list[RedactionEvent]
    sources: list[SourceSpan]
    stripped_chars: int = 0
    offline: bool = False
    ruleset: str = ""
    aliases: dict[str, str] = field(default_factory=dict)  # real path -> alias, when anonymising
    method: str = "POST"

    @property
    def size(self) -> int:
        return len(self.content)


class EgressGate:
    """The single gate every outgoing request body passes; see the module docstring."""

    def __init__(
        self, settings: Settings, audit: AuditLog | None = None, redactor: Redactor | None = None
    ) -> None:
        self.settings = settings
        self._audit = audit
        self.redactor = redactor or Redactor(settings)

    @property
    def offline(self) -> bool:
        """True: build and log, never send (privacy.offline)."""
        return bool(self.settings.privacy.offline)

    @property
    def audit(self) -> AuditLog:
        if self._audit is None:
            self._audit = AuditLog()
        return self._audit

    def refusal(self, path: str) -> str | None:
        """Why a file may not contribute to any request, or None.

        Judged on the workspace path (a symlink's own name) and on the real path it resolves
        to: a never-send glob on either, or a real path outside the workspace, refuses it.
        """
        pattern = never_send_match(path, self.settings)
        if pattern:
            return f"{path} matches the never-send pattern '{pattern}'"
        root = self.settings.root
        if root is None:
            return None
        real, inside = self._real(path)
        if not inside:
            return f"{path} resolves to {real}, outside the workspace {root}"
        real_rel = os.path.relpath(real, os.path.realpath(root))
        pattern = never_send_match(real_rel, self.settings) if real_rel != path else None
        if pattern:
            return f"{path} is a link to {real_rel}, which matches the never-send pattern '{pattern}'"
        return None

    def _real(self, path: str) -> tuple[str, bool]:
        """(real path of a workspace path, whether it stays inside the workspace root)."""
        root = os.path.realpath(self.settings.root or ".")
        real = os.path.realpath(os.path.join(root, path))
        return real, real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    def allowed(self, path: str) -> bool:
        return self.refusal(path) is None

    def alias(self, path: str) -> str:
        """The opaque name a path gets when privacy.anonymize_paths is on (stable per install)."""
        suffix = path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
        return f"file_{tag(self.redactor.key, 'path:' + path)}" + (f".{suffix}" if suffix else "")

    # ------------------------------------------------------------------ prepare

    def prepare(self, endpoint: str, body: dict[str, Any], sources: list[SourceSpan]) -> PreparedRequest:
        """The exact redacted bytes for `body`, or EgressBlocked (nothing may be sent)."""
        spans = [_as_span(s) for s in sources]
        for span in spans:
            reason = self.refusal(span.path)
            if reason:
                raise EgressBlocked(f"refused to send: {reason} (secret-bearing files never leave)")
        limit = int(self.settings.privacy.max_request_bytes)
        if _text_size(body) > 2 * limit + 4096:
            # Far over the limit: refuse before spending a scan on it (redaction only adds ~40 B a secret).
            raise EgressBlocked(
                f"request body is far over privacy.max_request_bytes ({limit:,} bytes); nothing was sent"
            )
        deadline = time.monotonic() + float(self.settings.privacy.scan_timeout_s)
        aliases = {s.path: self.alias(s.path) for s in spans} if self.settings.privacy.anonymize_paths else {}
        try:
            walker = _Walker(self.redactor, bool(self.settings.privacy.redact), deadline, spans, aliases)
            cleaned = walker.walk(body, "")
            if walker.secrets:
                # A secret found in one field is redacted wherever else it appears in the body.
                walker.propagating = True
                cleaned = walker.walk(cleaned, "")
            content = json.dumps(cleaned, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            if self.settings.privacy.redact:
                content = self._rescan(content, deadline, walker)
            if len(content) > limit:
                raise EgressBlocked(
                    f"request body is {len(content):,} bytes, over privacy.max_request_bytes ({limit:,}); "
                    "nothing was sent"
                )
            if time.monotonic() > deadline:
                raise ScanTimeout("the secret scan ran past its time limit")
        except EgressBlocked:
            raise
        except ScanTimeout:
            raise EgressBlocked(
                f"secret scan took longer than privacy.scan_timeout_s "
                f"({self.settings.privacy.scan_timeout_s:g} s); nothing was sent"
            ) from None
        except Exception as exc:
            # Fail closed: whatever went wrong, an unscanned body never leaves.
            raise EgressBlocked(
                f"secret scan failed ({type(exc).__name__}: {exc}); nothing was sent"
            ) from None
        return PreparedRequest(
            endpoint=endpoint,
            content=content,
            sha256=hashlib.sha256(content).hexdigest(),
            findings=walker.events,
            sources=spans,
            stripped_chars=walker.stripped,
            offline=self.offline,
            ruleset=self.redactor.version,
            aliases=aliases,
        )

    def _rescan(self, content: bytes, deadline: float, walker: _Walker) -> bytes:
        """Scan the final bytes as one text; anything left is redacted in place if JSON-safe, else blocked.

        The scan reads an escape-aware view of the text (same offsets): inside a string, a `\\n`, `\\t`,
        `\\r` or `\\"` is seen as the whitespace or quote it stands for, not as two stray characters,
        so `password changes.\\n` in a serialised docstring is judged like the source line the walker
        already scanned, while a key in one string and a value in the next is still caught.
        """
        text = content.decode("utf-8")
        view = _scan_view(text)
        result = self.redactor.redact(view, "", deadline)
        if not result.findings:
            return content
        out: list[str] = []
        pos = 0
        for finding in result.findings:
            span = text[finding.start : finding.end]
            if "\\" in span or '"' in span or span != view[finding.start : finding.end]:
                raise EgressBlocked(
                    f"a secret ({finding.rule}) survived redaction across JSON structure; nothing was sent"
                )
            out.append(text[pos : finding.start])
            out.append(f"{TOKEN_PREFIX}{finding.rule}:{finding.hmac8}]")
            pos = finding.end
            walker.events.append(
                RedactionEvent(finding.rule, "<body>", finding.line, finding.length, finding.hmac8)
            )
        out.append(text[pos:])
        redacted = "".join(out)
        json.loads(redacted)  # still one valid JSON document
        return redacted.encode("utf-8")

    def bodyless(self, method: str, url: str) -> PreparedRequest:
        """A request without a body (GET /v1/models, /metrics) that carries credentials: logged too."""
        return PreparedRequest(
            endpoint=url,
            content=b"",
            sha256=hashlib.sha256(b"").hexdigest(),
            findings=[],
            sources=[],
            offline=self.offline,
            method=method,
        )

    # ------------------------------------------------------------------ record

    def _entry(self, prepared: PreparedRequest) -> dict[str, Any]:
        root = self.settings.root
        sources = []
        for span in prepared.sources:
            item = span.as_dict()
            item["real"] = self._real(span.path)[0] if root is not None else None
            sources.append(item)
        entry: dict[str, Any] = {
            "method": getattr(prepared, "method", "POST"),
            "endpoint": prepared.endpoint,
            "bytes": len(prepared.content),
            "sha256": prepared.sha256,
            "root": os.path.realpath(root) if root is not None else None,
            "sources": sources,
            "redactions": [e.as_dict() for e in prepared.findings],
            "stripped_chars": prepared.stripped_chars,
            "ruleset": prepared.ruleset,
            "offline": self.offline,
        }
        if prepared.aliases:
            entry["aliases"] = prepared.aliases
        return entry

    def _append(self, entry: dict[str, Any], prepared: PreparedRequest, sync: bool = True) -> dict[str, Any]:
        keep = self.settings.privacy.keep_payloads and prepared.content
        try:
            return self.audit.append(entry, prepared.content if keep else None, sync_payload=sync)
        except OSError as exc:  # AuditLog turns its own I/O errors into AuditError; this is a backstop
            raise AuditError(f"cannot write the audit log: {exc}") from None

    def intend(self, prepared: PreparedRequest) -> str:
        """Make the request's entry durable before anything is sent; returns its id.

        Raises AuditError when it cannot be written: the caller then sends nothing.
        """
        entry = self._entry(prepared)
        entry["state"] = "about to send"
        return str(self._append(entry, prepared, sync=False)["id"])  # the entry is fsynced, not the copy

    def record(self, prepared: PreparedRequest, sent: bool, status: str, intent: str | None = None) -> str:
        """The outcome of one attempt of an `intend`ed request, or (intent None) the one entry of a
        request that was never sent (dry run, offline). Returns the request's audit id."""
        if intent is not None:
            self.audit.outcome(intent, sent, status)
            if self.settings.privacy.keep_payloads and prepared.content:
                self.audit.sync_payload(prepared.sha256)
            return intent
        entry = self._entry(prepared)
        entry["sent"] = bool(sent)
        entry["status"] = status
        return str(self._append(entry, prepared)["id"])

    def handed_out(self, prepared: PreparedRequest, call: dict[str, Any]) -> str:
        """The one entry of bytes handed to a local tool client (an MCP agent, which sends them to its
        model): written, fsynced, before the bytes are returned. `call` names the tool call that
        asked (its arguments already redacted). Returns the entry's id."""
        entry = self._entry(prepared)
        entry.update(method="TOOL", sent=True, status="returned to the tool client", call=call)
        return str(self._append(entry, prepared)["id"])


class _Walker:
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
            self.events.append(
                RedactionEvent(
                    finding.rule,
                    where,
                    finding.line,
                    finding.length,
                    finding.hmac8,
                    self._file_at(text, finding.start),
                )
            )
        return result.text

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
        for finding in result.findings:
            self.events.append(
                RedactionEvent(
                    finding.rule,
                    where,
                    finding.line,
                    finding.length,
                    finding.hmac8,
                    self._file_at(text, finding.start),
                )
            )
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


def _text_size(value: Any) -> int:
    """Characters of text in a JSON-like body (a cheap lower bound of its serialised size)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + _text_size(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return sum(_text_size(v) for v in value)
    return 0


# What an escape means to the scanner, two characters for two (offsets are kept): whitespace stays
# whitespace (a real newline keeps line-based checks on source lines) and an escaped quote ends a value
# (a value that starts after one starts with a space, and is dropped as prose: the walker judged it).
_VIEW_ESCAPES = {"n": " \n", "t": " \t", "r": " \r", "f": " \f", '"': '" '}


def _scan_view(text: str) -> str:
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


def _as_span(source: Any) -> SourceSpan:
    if isinstance(source, SourceSpan):
        return source
    if isinstance(source, dict):
        return SourceSpan(str(source["path"]), int(source["start_line"]), int(source["end_line"]))
    try:
        return SourceSpan(str(source.path), int(source.start_line), int(source.end_line))
    except AttributeError:
        raise EgressBlocked(f"cannot tell which file a request source {source!r} comes from") from None
