"""What the session's methods return: completions, edits, explanations, and what each one sent.

`SentRequest` is the record behind "show context" in an editor and `--json` in the shell: the
exact bytes the privacy gate let out (or would have), the context items that went in and the
redactions made. Every model call of a session leaves one in `session.last`, also when it
fails or is cancelled half way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from codectx.backend.gate import Finding, Prepared
from codectx.backend.prompts import FimPrompt


@dataclass
class SentRequest:
    """One request to the model server and why it holds what it holds."""

    kind: str  # "completion", "refactor", "explain" or "dry-run"
    path: str
    endpoint: str
    body: bytes  # the exact bytes the gate let out (or would have)
    items: list[dict[str, Any]]  # the context items that went in (path, lines, symbol, reason, tokens)
    findings: Sequence[Finding]  # the gate's redactions (never a value)
    audit_id: str | None
    prompt: str = ""

    @classmethod
    def of(
        cls,
        kind: str,
        path: str,
        prepared: Prepared | None,
        items: list[dict[str, Any]],
        audit_id: str | None,
        prompt: str = "",
    ) -> SentRequest:
        """The record of a request as the gate prepared it (None: it failed before the gate)."""
        if prepared is None:
            return cls(kind, path, "", b"", items, [], audit_id, prompt)
        return cls(
            kind, path, prepared.endpoint, prepared.content, items, list(prepared.findings), audit_id, prompt
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "endpoint": self.endpoint,
            "bytes": len(self.body),
            "body": self.body.decode("utf-8", errors="replace"),
            "items": self.items,
            "findings": [f.as_dict() for f in self.findings],
            "audit_id": self.audit_id,
        }


@dataclass
class Completion:
    text: str  # what the editor inserts (post-processed, placeholders restored)
    raw_text: str
    model: str
    mode: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    request_id: str | None  # the audit id of the request
    timings: dict[str, float] = field(default_factory=dict)  # context_ms, ttft_ms, total_ms
    sent: SentRequest | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "raw_text": self.raw_text,
            "model": self.model,
            "mode": self.mode,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "request_id": self.request_id,
            "timings": {k: round(v, 2) for k, v in self.timings.items()},
        }


@dataclass(frozen=True)
class DryRun:
    """A completion request built, redacted and logged as not sent."""

    body: bytes
    endpoint: str
    audit_id: str | None
    prompt: FimPrompt
    note: str = ""  # why the body is not exactly what `complete` sends (the server did not answer)


@dataclass(frozen=True)
class RefactorEdit:
    """The replacement for a selection, placeholders put back; `notes` say which lines were kept as
    they are in the file because the model lost a redacted secret there."""

    code: str
    notes: list[str]
    sent: SentRequest | None = None


@dataclass(frozen=True)
class Explanation:
    text: str  # prose, placeholders put back
    model: str
    sent: SentRequest | None = None


@dataclass(frozen=True)
class FileText:
    """Lines of one workspace file as a surface may show or send them (WorkspaceSession.read_file)."""

    path: str  # workspace-relative, POSIX
    start_line: int  # 0-based, inclusive
    end_line: int
    text: str
    redacted: bool  # secrets replaced by placeholders (privacy.redact on)

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "text": self.text,
            "redacted": self.redacted,
        }
