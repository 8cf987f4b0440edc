"""Chat's data: conversations, turns, citations, code blocks, mentions (docs/chat-protocol.md).

Pure data and parsing, no I/O. A conversation keeps, next to what the user sees (the question, the
answer with secrets put back), what the model saw: each user turn's content exactly as it was sent
(`sent`) and each answer exactly as the model wrote it (`raw`, placeholders and all). Later turns
resend those bytes unchanged, so the prefix of every request is the previous request (the server's
prefix cache hits), also after a restart.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

MENTION_KINDS = ("file", "symbol", "folder", "codebase", "diff", "problems")
VALUED = ("file", "symbol", "folder", "codebase")
UNTITLED = "New conversation"

_MENTION = re.compile(r"(?:^|(?<=[\s(]))@(file|symbol|folder|codebase|diff|problems)\b(:?)")
_BLOCK = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def fields_wire(record: Any) -> dict[str, Any]:
    """A dataclass's fields, camelCased as the protocol names them; an optional text field (one that
    defaults to "") is left out when empty."""
    return {_camel(f.name): v for f in fields(record) if (v := getattr(record, f.name)) or f.default != ""}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


@dataclass(frozen=True)
class WireRecord:
    """A record whose wire form is `fields_wire` of it."""

    def wire(self) -> dict[str, Any]:
        return fields_wire(self)


@dataclass(frozen=True)
class Mention:
    kind: str  # one of MENTION_KINDS
    value: str = ""  # path for file/folder, name for symbol, query for codebase


def mentions_in(text: str) -> list[Mention]:
    """The protocol's text syntax: `@kind:value`, `@kind:"quoted value"`, `@codebase:` to line end."""
    found: list[Mention] = []
    for match in _MENTION.finditer(text):
        kind, colon = match.group(1), match.group(2)
        rest = text[match.end() :]
        if not colon:
            found.append(Mention(kind))
        elif kind == "codebase":
            found.append(Mention(kind, rest.split("\n", 1)[0].strip()))
        elif rest.startswith('"'):
            found.append(Mention(kind, rest[1:].split('"', 1)[0]))
        else:
            found.append(Mention(kind, (rest.split() or [""])[0].rstrip(",.;:)?!")))
    return [m for m in found if m.kind not in VALUED or m.value]


def union(text_mentions: list[Mention], structured: list[Mention]) -> list[Mention]:
    """Both lists, each mention once (first seen first)."""
    out: list[Mention] = []
    for m in [*text_mentions, *structured]:
        if m not in out:
            out.append(m)
    return out


@dataclass(frozen=True)
class Citation:
    """One snippet a turn sent (lines 0-based, end inclusive)."""

    path: str
    start_line: int
    end_line: int
    reason: str
    symbol: str = ""

    def wire(self, uri: str) -> dict[str, Any]:
        return {"path": self.path, "uri": uri} | fields_wire(self)  # the uri goes next to the path


# A turn's search sends up to a hundred hits, most cut to a few lines: surfaces list every other
# citation and the first few search hits, then say how many more there are (`--json`, the quickfix
# list and Show Context Sent have them all).
LISTED_SEARCH_HITS = 5


def listed_citations(citations: list[Citation]) -> tuple[list[Citation], int]:
    """The citations a surface lists under an answer, and how many search hits it leaves out."""
    shown: list[Citation] = []
    searched = 0
    for c in citations:
        if c.reason == "search":
            searched += 1
            if searched > LISTED_SEARCH_HITS:
                continue
        shown.append(c)
    return shown, len(citations) - len(shown)


@dataclass(frozen=True)
class CodeBlock(WireRecord):
    index: int
    language: str
    text: str
    path: str = ""


def blocks_of(text: str) -> list[CodeBlock]:
    """The fenced blocks of an answer in order, with the path their info string names, if any."""
    blocks: list[CodeBlock] = []
    for match in _BLOCK.finditer(text):
        info = match.group(1).strip().split()
        language, path = (info[0] if info else ""), ""
        if ":" in language:
            language, path = language.split(":", 1)
        for word in info[1:]:
            if word.startswith("path="):
                path = word[5:]
        blocks.append(CodeBlock(len(blocks), language, match.group(2).rstrip("\n"), path))
    return blocks


@dataclass
class Turn:
    turn_id: str
    role: str  # "user" | "assistant"
    text: str  # what the user sees (an answer with placeholders put back)
    created_at: str = field(default_factory=now)
    citations: list[Citation] = field(default_factory=list)
    blocks: list[CodeBlock] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    cancelled: bool = False
    sent: str = ""  # user: the content as the model saw it; assistant: the model's raw answer
    record: dict[str, Any] = field(default_factory=dict)  # assistant: what the turn sent (context)
    shown: str = ""  # user: the question as the model saw it (secrets masked); "" in older turns

    def content_wire(self, uri_of: Any) -> dict[str, Any]:
        """What a turn says, on the wire: its text, citations and code blocks."""
        return {
            "text": self.text,
            "citations": [c.wire(uri_of(c.path)) for c in self.citations],
            "blocks": [b.wire() for b in self.blocks],
        }

    def wire(self, uri_of: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "turnId": self.turn_id,
            "role": self.role,
            **self.content_wire(uri_of),
            "createdAt": self.created_at,
        }
        if self.role == "assistant":
            out["notices"] = list(self.notices)
            out["cancelled"] = self.cancelled
        return out


@dataclass
class Conversation:
    conversation_id: str
    title: str
    created_at: str
    updated_at: str
    turns: list[Turn] = field(default_factory=list)
    summary: str = ""  # the model's summary of the turns before `first_kept` (as sent)
    first_kept: int = 0  # index into `turns` of the first turn still sent in full

    @property
    def user_turns(self) -> int:
        return sum(1 for t in self.turns if t.role == "user")

    def turn(self, turn_id: str) -> Turn | None:
        return next((t for t in self.turns if t.turn_id == turn_id), None)

    def summary_wire(self) -> dict[str, Any]:
        return {
            "conversationId": self.conversation_id,
            "title": self.title,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "turns": self.user_turns,
        }

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> Conversation:
        turns = []
        for raw in data.get("turns", []):
            raw = dict(raw)
            raw["citations"] = [Citation(**c) for c in raw.get("citations", [])]
            raw["blocks"] = [CodeBlock(**b) for b in raw.get("blocks", [])]
            turns.append(Turn(**raw))
        fields = {k: v for k, v in data.items() if k != "turns"}
        return Conversation(**fields, turns=turns)


def markdown(conv: Conversation, redact: Callable[[str], str] = lambda text: text) -> str:
    """A conversation as Markdown: each turn under its speaker, citations listed (1-based lines).

    Answers as the model wrote them, placeholders and all: an export is a file to share (saved in
    the current folder, perhaps the workspace, perhaps committed), and the answer the user saw has
    the redacted secrets put back. The user's lines are the questions as the request had them (a
    token pasted into a question was masked there, and stays masked here); turns stored before
    that was kept, the title and the notices (which quote mentions) are passed through `redact`. The
    conversation store keeps the text as typed and seen in the user's state folder, readable by
    the user only."""
    out = [f"# {redact(conv.title)}", ""]
    for t in conv.turns:
        shown = (t.sent or t.text) if t.role == "assistant" else (t.shown or redact(t.text))
        out += [f"## {'You' if t.role == 'user' else 'codectx'}", "", shown.rstrip(), ""]
        out += [f"- {c.path}:{c.start_line + 1}-{c.end_line + 1} ({c.reason})" for c in t.citations]
        if t.citations:
            out.append("")
        out += [f"> {redact(n)}" for n in t.notices]  # a mention's text is the user's: `@file:<a token>`
        if t.notices:
            out.append("")
    return "\n".join(out)


@dataclass
class TurnResult:
    """What a finished (or stopped) turn returns to the surface."""

    conversation_id: str
    turn: Turn
    notices: list[str]
    audit_id: str | None
    prompt_tokens: int
    completion_tokens: int
    context_tokens: int
    budget_tokens: int
    error: str = ""

    def wire(self, uri_of: Any) -> dict[str, Any]:
        return {
            "conversationId": self.conversation_id,
            "turnId": self.turn.turn_id,
            **self.turn.content_wire(uri_of),
            "notices": list(self.notices),
            "auditId": self.audit_id,
            "cancelled": self.turn.cancelled,
            "usage": {"promptTokens": self.prompt_tokens, "completionTokens": self.completion_tokens},
            "contextTokens": self.context_tokens,
            "budgetTokens": self.budget_tokens,
        }
