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
import stat
import time
from typing import TYPE_CHECKING, Any

from codectx.privacy.audit import AuditLog
from codectx.privacy.bodywalk import BodyWalker, CleanMemo, scan_view, text_size
from codectx.privacy.errors import AuditError, EgressBlocked, ScanTimeout
from codectx.privacy.keys import tag
from codectx.privacy.policy import never_send_match
from codectx.privacy.redact import TOKEN_PREFIX, Redactor

# The request types, importable from here where the gate is (their home: codectx.privacy.request).
from codectx.privacy.request import PreparedRequest as PreparedRequest
from codectx.privacy.request import RedactionEvent as RedactionEvent
from codectx.privacy.request import SourceSpan as SourceSpan
from codectx.privacy.request import as_span

if TYPE_CHECKING:
    from codectx.settings import Settings


class EgressGate:
    """The single gate every outgoing request body passes; see the module docstring."""

    def __init__(
        self, settings: Settings, audit: AuditLog | None = None, redactor: Redactor | None = None
    ) -> None:
        self.settings = settings
        self._audit = audit
        self.redactor = redactor or Redactor(settings)
        self._root_seen: tuple[str, int, int, str] | None = None  # (root, st_dev, st_ino, real path)
        self._paths_shown: dict[str, str] = {}  # path -> as the audit log holds it (_path_shown)
        # Long strings this gate already walked clean (a conversation's history, resent each turn).
        self._clean = CleanMemo()

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
        base = self.root_real()
        real, inside = self._real(path, base)
        if not inside:
            return f"{path} resolves to {real}, outside the workspace {root}"
        real_rel = os.path.relpath(real, base)
        pattern = never_send_match(real_rel, self.settings) if real_rel != path else None
        if pattern:
            return f"{path} is a link to {real_rel}, which matches the never-send pattern '{pattern}'"
        return None

    def _real(self, path: str, base: str | None = None) -> tuple[str, bool]:
        """(real path of a workspace path, whether it stays inside the workspace root); `base`: the
        root's real path, when the caller has it."""
        root = base if base is not None else self.root_real()
        real = resolve_below(root, path)
        return real, real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    def root_real(self) -> str:
        """The workspace root's real path. Every source of every request is judged against it, so
        it is kept while the folder it names is the same one (one stat instead of an lstat per
        component of the root); a root moved or re-linked elsewhere is resolved again."""
        root = str(self.settings.root or ".")
        try:
            found = os.stat(root)
        except OSError:
            return os.path.realpath(root)
        seen = self._root_seen
        if seen is not None and seen[:3] == (root, found.st_dev, found.st_ino):
            return seen[3]
        real = os.path.realpath(root)
        self._root_seen = (root, found.st_dev, found.st_ino, real)
        return real

    def allowed(self, path: str) -> bool:
        return self.refusal(path) is None

    def alias(self, path: str) -> str:
        """The opaque name a path gets when privacy.anonymize_paths is on (stable per install)."""
        suffix = path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
        return f"file_{tag(self.redactor.key, 'path:' + path)}" + (f".{suffix}" if suffix else "")

    # ------------------------------------------------------------------ prepare

    def prepare(self, endpoint: str, body: dict[str, Any], sources: list[SourceSpan]) -> PreparedRequest:
        """The exact redacted bytes for `body`, or EgressBlocked (nothing may be sent)."""
        spans = [as_span(s) for s in sources]
        for path in dict.fromkeys(s.path for s in spans):  # a file's pieces share its judgement
            reason = self.refusal(path)
            if reason:
                raise EgressBlocked(f"refused to send: {reason} (secret-bearing files never leave)")
        limit = int(self.settings.privacy.max_request_bytes)
        if text_size(body) > 2 * limit + 4096:
            # Far over the limit: refuse before spending a scan on it (redaction only adds ~40 B a secret).
            raise EgressBlocked(
                f"request body is far over privacy.max_request_bytes ({limit:,} bytes); nothing was sent"
            )
        deadline = time.monotonic() + float(self.settings.privacy.scan_timeout_s)
        aliases = {s.path: self.alias(s.path) for s in spans} if self.settings.privacy.anonymize_paths else {}
        try:
            walker = BodyWalker(
                self.redactor, bool(self.settings.privacy.redact), deadline, spans, aliases, self._clean
            )
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

    def _rescan(self, content: bytes, deadline: float, walker: BodyWalker) -> bytes:
        """Scan the final bytes as one text; anything left is redacted in place if JSON-safe, else blocked.

        The scan reads an escape-aware view of the text (same offsets): inside a string, a `\\n`, `\\t`,
        `\\r` or `\\"` is seen as the whitespace or quote it stands for, not as two stray characters,
        so `password changes.\\n` in a serialised docstring is judged like the source line the walker
        already scanned, while a key in one string and a value in the next is still caught.
        """
        text = content.decode("utf-8")
        view = scan_view(text)
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
        """A request without a body (GET /v1/models, /metrics, a health probe): logged too."""
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
            item["path"] = self._path_shown(span.path)
            item["real"] = self._path_shown(self._real(span.path)[0]) if root is not None else None
            sources.append(item)
        redactions = []
        for event in prepared.findings:
            item = event.as_dict()
            if isinstance(item.get("file"), str):
                item["file"] = self._path_shown(item["file"])
            redactions.append(item)
        entry: dict[str, Any] = {
            "method": getattr(prepared, "method", "POST"),
            "endpoint": prepared.endpoint,
            "bytes": len(prepared.content),
            "sha256": prepared.sha256,
            "root": self._path_shown(self.root_real()) if root is not None else None,
            "sources": sources,
            "redactions": redactions,
            "stripped_chars": prepared.stripped_chars,
            "ruleset": prepared.ruleset,
            "offline": self.offline,
        }
        if prepared.aliases:
            entry["aliases"] = {self._path_shown(p): alias for p, alias in prepared.aliases.items()}
        return entry

    def _path_shown(self, path: str) -> str:
        """A path as the audit log may hold it: a secret in a file's name (`cache/glpat-....json`)
        is masked as in the request body, since the log holds "never a value"."""
        if not self.settings.privacy.redact:
            return path
        shown = self._paths_shown.get(path)
        if shown is None:
            shown = self.redactor.redact(path, "").text
            if len(self._paths_shown) > 4096:
                self._paths_shown.clear()
            self._paths_shown[path] = shown
        return shown

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


def resolve_below(base: str, path: str) -> str:
    """`os.path.realpath(base/path)` for a `base` that is already a real path, with one lstat per
    component of `path`: realpath would lstat every component of `base` again, for every source
    of every request. A link, `.`, `..`, an empty part or an absolute path takes realpath's way."""
    parts = path.split("/")
    if os.sep != "/" or os.path.isabs(path) or any(p in ("", ".", "..") for p in parts):
        return os.path.realpath(os.path.join(base, path))
    current = base
    for part in parts:
        current = os.path.join(current, part)
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return os.path.realpath(os.path.join(base, path))
        except OSError:
            break  # missing: realpath keeps the rest of the path as it is, and so does this
    return os.path.join(base, path)
