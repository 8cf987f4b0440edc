"""What the egress gate hands the transport, and what it logs: the request's bytes and sources.

`PreparedRequest` is a request body as the gate let it out (its `content` is exactly what may
be sent, its sha256 what the audit log records); `SourceSpan` a file region whose text is in
it; `RedactionEvent` one secret replaced in it (where and which rule; never the value).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codectx.privacy.errors import EgressBlocked


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


def as_span(source: Any) -> SourceSpan:
    """A request source (a SourceSpan, a dict, or anything with path and lines) as a SourceSpan."""
    if isinstance(source, SourceSpan):
        return source
    if isinstance(source, dict):
        return SourceSpan(str(source["path"]), int(source["start_line"]), int(source["end_line"]))
    try:
        return SourceSpan(str(source.path), int(source.start_line), int(source.end_line))
    except AttributeError:
        raise EgressBlocked(f"cannot tell which file a request source {source!r} comes from") from None
