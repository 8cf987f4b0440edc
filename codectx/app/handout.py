"""What a session hands to a tool client (an MCP agent): every byte of it is egress.

An agent sends what its tools return to its own model, so a tool result is treated like a request
to the model server: each piece of code in it is redacted first with its own path and file type
(`codectx.privacy.pieces`, the secrets found in the file around the cut, as for a completion's
context), chunks of never-send files are dropped, then the whole answer passes the egress gate
(never-send and outside-the-workspace sources refused, every string redacted again, the size
limit `privacy.max_request_bytes`) and gets one hash-chained audit entry with the sha256 of the
exact bytes returned and the tool call that asked, fsynced before the bytes are handed back.

    out = Handout(settings, redaction)
    texts = out.redacted(hits)                                   # [(hit, redacted text)]
    released = out.release("search_code", {"query": q}, payload, sources)
    released.content                                             # the bytes to return, as audited
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from codectx.app.index import ContextPiece
from codectx.app.redaction import RequestRedaction, redact_around_cursor, source_reader
from codectx.errors import CodectxError
from codectx.privacy.egress import EgressGate, SourceSpan
from codectx.settings import Settings

P = TypeVar("P", bound=ContextPiece)
MAX_ARGUMENT_CHARS = 2000  # of one string argument kept in the audit entry (redacted)


@dataclass(frozen=True)
class Released:
    """A tool result as it may leave: exactly `content`, recorded under `audit_id`."""

    content: bytes  # compact UTF-8 JSON, redacted
    sha256: str
    audit_id: str
    redactions: int  # secrets the gate's own scan replaced (pieces were redacted before)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8")


class Handout:
    """Redaction and audit of tool results for one workspace session."""

    def __init__(self, settings: Settings, redaction: RequestRedaction) -> None:
        self.settings = settings
        self.redaction = redaction

    def _gate(self) -> EgressGate:
        gate = self.redaction.gate
        if not isinstance(gate, EgressGate):  # a test's stand-in gate cannot audit tool results
            raise CodectxError("tool results need the privacy egress gate; this session has another")
        return gate

    def redacted(self, items: Sequence[P]) -> list[tuple[P, str]]:
        """Each item of a sendable file with its text redacted on its own (path and lines unchanged);
        items of never-send files are left out."""
        kept = self.redaction.sendable(items)
        pieces = self.redaction.pieces()
        if pieces is None:
            return [(item, item.text) for item in kept]
        read = source_reader(self.settings.root, limit=self.redaction.source_limit)
        texts = [pieces.chunk(i.text, i.path, i.start_line, read(i.path)) for i in kept]
        # A value found secret in one piece is masked wherever it recurs.
        return [(item, pieces.echo(text)) for item, text in zip(kept, texts, strict=True)]

    def around_cursor(
        self, path: str, text: str, line: int, character: int, prefix: str, suffix: str
    ) -> tuple[str, str]:
        """A cursor's prefix and suffix (cut from `text`) redacted as a completion's are."""
        pieces = self.redaction.pieces()
        if pieces is None:
            return prefix, suffix
        return redact_around_cursor(pieces, path, text, line, character, prefix, suffix)

    def release(
        self, tool: str, arguments: Mapping[str, Any], payload: dict[str, Any], sources: Sequence[SourceSpan]
    ) -> Released:
        """The exact bytes of `payload` that may be returned, audited; EgressBlocked (nothing may be
        returned) for a never-send or outside source, a failed scan or an answer over the size limit."""
        gate = self._gate()
        prepared = gate.prepare(f"mcp:{tool}", payload, list(sources))
        call = {"tool": tool, "arguments": {k: self._argument(v) for k, v in arguments.items()}}
        audit_id = gate.handed_out(prepared, call)
        return Released(prepared.content, prepared.sha256, audit_id, len(prepared.findings))

    def _argument(self, value: Any) -> Any:
        """An argument as the audit log keeps it: strings redacted and cut (an agent may paste a
        secret into a query; cut first, a secret's head would no longer look like one), other JSON
        values as they are."""
        if isinstance(value, str):
            return self._gate().redactor.redact(value).text[:MAX_ARGUMENT_CHARS]
        if isinstance(value, (int, float, bool)) or value is None:
            return value
        if isinstance(value, (list, tuple)):
            return [self._argument(v) for v in value]
        if isinstance(value, dict):
            return {str(k): self._argument(v) for k, v in value.items()}
        return type(value).__name__
