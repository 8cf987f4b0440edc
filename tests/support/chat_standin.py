"""TEMPORARY stand-in for the chat part of `codectx lsp`: a test fixture, never shipped; to be replaced.

The editor side of chat (VS Code's chat view, Neovim's :CodectxChat) is built against
docs/chat-protocol.md before the real server implements it. This small pygls server implements that
contract with deterministic answers (no model, no retriever), so the editor tests can run now:
tests/e2e/test_vscode_chat.py (code-server), tests/e2e/test_nvim_chat.py (Neovim) and
tests/lsp/test_chat_contract.py (the protocol from a plain LSP client, which holds this stand-in to
the written contract).

What it does as the protocol says: deltas (many, `turnId` in each) and notices before the send's
response, the result's text authoritative; one running turn per conversation (-32803 otherwise);
cancel by `codectx/chat/cancel` or `$/cancelRequest`, both giving a `cancelled: true` result with the
text so far; -32602 for params of the wrong shape, -32803 for an unknown conversation or an empty
message; mentions in the text syntax and structured, their union each once; an `@file` of a
never-send file (.env, keys) refused with a `refused` notice and never read; citations (0-based,
`endLine` inclusive) for `@file`, `@symbol`, `@folder`, the definition around the editor's cursor or
selection, and the definitions the question names; the answer's fenced blocks with their `path`;
applyBlock's whole-file `newText` and a one-file `edit`, refused when the result does not parse;
list/get/delete/export; `codectx/chat/context` with the fields of `codectx.showContext`'s record.
Conversations are saved under XDG_STATE_HOME. What it does not do: a model, redaction, the audit log,
history compaction, `@codebase`/`@diff`/`@problems` content (accepted, not used).

WHERE IT IS SELECTED: `server_command()` below. The environment variable CODECTX_CHAT_SERVER picks
the server the chat tests start: `standin` (the default, this file), `real` (`python -m codectx lsp`
with a loopback model server that answers with `answer_for()`, from `real_mode_backend()`; the tests
pass its URL as the backend setting), or a JSON list (any command). Once `codectx lsp` implements
chat, make `real` the default and delete this file's server part (`serve()` and its helpers); the
tests and `answer_for()`/the questions they share stay as they are. CODECTX_STANDIN_DELTA_MS sets the
pause between deltas (default 40).

Run as a program (`python tests/support/chat_standin.py`) it serves LSP on stdin/stdout.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import sys
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

HERE = Path(__file__).resolve().parent

# The questions the tests ask; `answer_for` recognises them inside whatever prompt carries them.
QUESTION = "How does scale work?"
LONG_QUESTION = "Explain the whole package at length"
REFUSED_QUESTION = "What is in @file:.env ?"
NOTE = "# checked by codectx"
NEVER_SEND = re.compile(r"(^|/)(\.env(\..*)?|.*\.pem|.*\.key|id_rsa.*)$")
UNTITLED = "New conversation"
DEFINITION = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")


def server_mode() -> str:
    return os.environ.get("CODECTX_CHAT_SERVER", "standin")


def server_command() -> list[str]:
    """The command that starts the chat server the editor tests talk to (see the docstring)."""
    mode = server_mode()
    if mode == "standin":
        return [sys.executable, str(Path(__file__).resolve())]
    if mode == "real":
        return [sys.executable, "-m", "codectx", "lsp"]
    command = json.loads(mode)
    assert isinstance(command, list) and command, "CODECTX_CHAT_SERVER: standin, real or a JSON list"
    return [str(part) for part in command]


def real_mode_backend(root: Path) -> Any:
    """In `real` mode, a started loopback model server whose chat answers are `answer_for`; else None.

    The real server puts the user's question into the prompt's last user message; the test
    questions are recognised inside it. Stop it with `.stop()`.
    """
    if server_mode() == "standin":
        return None
    from tests.support.lsp_helpers import FixedBackend

    def chat(body: dict[str, Any]) -> str:
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        content = users[-1].get("content", "") if users else ""
        text = content if isinstance(content, str) else json.dumps(content)
        question = next((q for q in (LONG_QUESTION, REFUSED_QUESTION, QUESTION) if q in text), text)
        return answer_for(question, root)

    return FixedBackend(chat=chat, chunk_delay_s=0.01).start()


# --- deterministic answers (shared with the real-server mode's loopback model) -------------------


@dataclass
class Definition:
    path: str
    name: str
    start: int  # 0-based, inclusive
    end: int
    source: str


def source_files(root: Path) -> list[Path]:
    skip = {".git", ".venv", "node_modules", "__pycache__", ".codectx"}
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not (set(p.relative_to(root).parts) & skip) and p.stat().st_size < 200_000
    )


def definitions(root: Path) -> list[Definition]:
    """Top-level Python definitions: each from its `def`/`class` line to its last non-blank line."""
    found: list[Definition] = []
    for path in source_files(root):
        if path.suffix != ".py":
            continue
        lines = path.read_text("utf-8", errors="replace").splitlines()
        found.extend(definitions_in(path.relative_to(root).as_posix(), lines))
    return found


def definitions_in(rel: str, lines: list[str]) -> list[Definition]:
    found = []
    starts = [i for i, line in enumerate(lines) if DEFINITION.match(line)]
    for i in starts:
        end = i
        for j in range(i + 1, len(lines)):
            if lines[j].strip() and not lines[j][0].isspace():
                break
            if lines[j].strip():
                end = j
        name = DEFINITION.match(lines[i]).group(1)  # type: ignore[union-attr]
        found.append(Definition(rel, name, i, end, "\n".join(lines[i : end + 1])))
    return found


def named_in(question: str, root: Path) -> list[Definition]:
    words = set(re.findall(r"[A-Za-z_]\w*", question))
    return [d for d in definitions(root) if d.name in words]


def annotated(definition: Definition) -> str:
    """The definition with NOTE after its first line: the code block the answer proposes."""
    head, _, rest = definition.source.partition("\n")
    return f"{head}\n    {NOTE}\n{rest}" if rest else f"{head}\n    {NOTE}\n    pass"


def answer_for(question: str, root: Path) -> str:
    if LONG_QUESTION in question:
        return "".join(f"Part {i}: the package keeps its helpers small and composable.\n" for i in range(400))
    if REFUSED_QUESTION.split("@")[0].strip() in question and "@file:.env" in question:
        return "I cannot see that file: it was not sent.\n"
    named = named_in(question, root)
    if not named:
        return "I found nothing in the workspace by that name.\n"
    first = named[0]
    return (
        f"`{first.name}` is defined in `{first.path}` (lines {first.start + 1}-{first.end + 1}).\n\n"
        f"A version with a note:\n\n"
        f"```python path={first.path}\n{annotated(first)}\n```\n\n"
        f"Apply the block to update `{first.path}`.\n"
    )


def blocks_of(text: str) -> list[dict[str, Any]]:
    blocks = []
    for match in re.finditer(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", text, re.S | re.M):
        info = match.group(1).strip().split()
        language, path = (info[0] if info else ""), None
        if ":" in language:
            language, path = language.split(":", 1)
        for word in info[1:]:
            if word.startswith("path="):
                path = word[5:]
        block = {"index": len(blocks), "language": language, "text": match.group(2).rstrip("\n")}
        if path:
            block["path"] = path
        blocks.append(block)
    return blocks


def mentions_in(text: str) -> list[dict[str, str]]:
    """The protocol's text syntax: `@kind:value`, `@kind:"quoted value"`, `@codebase:` to line end."""
    found = []
    for match in re.finditer(r"(?:^|(?<=[\s(]))@(file|symbol|folder|codebase|diff|problems)\b(:?)", text):
        kind, colon = match.group(1), match.group(2)
        rest = text[match.end() :]
        if not colon:
            found.append({"kind": kind})
        elif kind == "codebase":
            found.append({"kind": kind, "value": rest.split("\n", 1)[0].strip()})
        elif rest.startswith('"'):
            found.append({"kind": kind, "value": rest[1:].split('"', 1)[0]})
        else:
            found.append({"kind": kind, "value": (rest.split() or [""])[0]})
    # A valued kind written with nothing after the colon names nothing (the clients drop it too).
    return [m for m in found if m["kind"] in ("diff", "problems") or m.get("value")]


# --- the stand-in server --------------------------------------------------------------------------


@dataclass
class Conversation:
    conversationId: str
    title: str
    createdAt: str
    updatedAt: str
    turns: list[dict[str, Any]] = field(default_factory=list)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        users = sum(1 for t in self.turns if t["role"] == "user")
        return {
            "conversationId": self.conversationId,
            "title": self.title,
            "createdAt": self.createdAt,
            "updatedAt": self.updatedAt,
            "turns": users,
        }


class RequestFailed(JsonRpcException):
    """LSP's RequestFailed: the message is shown to the user as is."""

    CODE = -32803


class InvalidParams(JsonRpcException):
    """JSON-RPC's InvalidParams: a request whose params do not have the protocol's shape."""

    CODE = -32602


def unique(citations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each snippet once (the first reason wins), as a real server sends each snippet once."""
    seen: set[tuple[str, int, int]] = set()
    out = []
    for c in citations:
        key = (c["path"], c["startLine"], c["endLine"])
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Store:
    """Conversations in one JSON file under the state folder (XDG_STATE_HOME), never the workspace."""

    def __init__(self) -> None:
        state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
        self.path = state / "codectx-chat-standin" / "conversations.json"
        self.items: dict[str, Conversation] = {}
        if self.path.exists():
            for raw in json.loads(self.path.read_text("utf-8")):
                self.items[raw["conversationId"]] = Conversation(**raw)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps([asdict(c) for c in self.items.values()]), "utf-8")

    def get(self, conversation_id: Any) -> Conversation:
        found = self.items.get(str(conversation_id))
        if found is None:
            raise RequestFailed(f"no conversation {conversation_id!r}")
        return found


def _relative(uri: str, root: Path) -> str:
    try:
        return Path(to_fs_path(uri) or "").relative_to(root).as_posix() if uri else ""
    except ValueError:
        return ""


def _plain(value: Any) -> Any:
    as_dict = getattr(value, "_asdict", None)
    if callable(as_dict):
        return {k: _plain(v) for k, v in as_dict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def serve() -> None:
    server = LanguageServer("codectx-chat-standin", "0")
    store = Store()
    running: dict[str, asyncio.Event] = {}
    delay = int(os.environ.get("CODECTX_STANDIN_DELTA_MS", "40")) / 1000

    def root() -> Path:
        folders = list(server.workspace.folders.values())
        return Path(to_fs_path(folders[0].uri) if folders else server.workspace.root_path or ".")

    def read(uri: str) -> str:
        return server.workspace.get_text_document(uri).source

    def cite(d: Definition, reason: str) -> dict[str, Any]:
        uri = from_fs_path(str(root() / d.path))
        return {
            "path": d.path,
            "uri": uri,
            "startLine": d.start,
            "endLine": d.end,
            "symbol": d.name,
            "reason": reason,
        }

    def enclosing(args: dict[str, Any]) -> list[dict[str, Any]]:
        """The implicit context a real server starts from: the definition around the cursor/selection."""
        uri, position = args.get("uri"), (args.get("selection") or {}).get("start") or args.get("position")
        if not uri or not position:
            return []
        path = Path(to_fs_path(uri) or "")
        try:
            rel = path.relative_to(root()).as_posix()
            lines = read(uri).splitlines()
        except (ValueError, OSError):
            return []
        line = position.get("line", -1)
        return [cite(d, "enclosing scope") for d in definitions_in(rel, lines) if d.start <= line <= d.end]

    def notify(method: str, params: dict[str, Any]) -> None:
        server.protocol.notify(method, params)

    @server.feature("codectx/chat/start")
    def start(params: Any) -> dict[str, Any]:
        args = _plain(params) or {}
        stamp = now()
        conv = Conversation(uuid.uuid4().hex[:12], args.get("title") or UNTITLED, stamp, stamp)
        store.items[conv.conversationId] = conv
        store.save()
        return conv.summary()

    @server.feature("codectx/chat/send")
    async def send(params: Any) -> dict[str, Any]:
        args = _plain(params) or {}
        if not isinstance(args.get("conversationId"), str) or not isinstance(args.get("message"), str):
            raise InvalidParams("codectx/chat/send needs {conversationId: string, message: string}")
        conv = store.get(args["conversationId"])
        message = args["message"].strip()
        if not message:
            raise RequestFailed("the message is empty")
        if conv.conversationId in running:
            raise RequestFailed("a turn of this conversation is still running; stop it or wait")
        stop = running[conv.conversationId] = asyncio.Event()
        n = sum(1 for t in conv.turns if t["role"] == "user") + 1
        turn_id = f"a{n}"
        if n == 1 and conv.title == UNTITLED:
            conv.title = message[:60]
        conv.turns.append(
            {
                "turnId": f"u{n}",
                "role": "user",
                "text": message,
                "citations": [],
                "blocks": [],
                "createdAt": now(),
            }
        )
        notices, citations = [], []
        mentions = mentions_in(message) + list(args.get("mentions") or [])
        seen: set[tuple[str, str]] = set()
        for m in mentions:
            key = (m.get("kind", ""), m.get("value") or "")
            if key in seen:
                continue
            seen.add(key)
            if m.get("kind") == "file" and NEVER_SEND.search(m.get("value") or ""):
                notices.append(f"@file {m['value']} refused: never-send file")
                notify(
                    "codectx/chat/notice",
                    {"conversationId": conv.conversationId, "kind": "refused", "message": notices[-1]},
                )
            elif m.get("kind") == "file" and (root() / str(m.get("value"))).is_file():
                lines = (root() / str(m["value"])).read_text("utf-8", errors="replace").splitlines()
                citations.append(
                    {
                        "path": m["value"],
                        "uri": from_fs_path(str(root() / m["value"])),
                        "startLine": 0,
                        "endLine": max(len(lines) - 1, 0),
                        "reason": "@file",
                    }
                )
            elif m.get("kind") == "symbol":
                citations += [cite(d, "@symbol") for d in definitions(root()) if d.name == m.get("value")]
            elif m.get("kind") == "folder":
                folder = str(m.get("value") or "").strip("/") + "/"
                citations += [cite(d, "@folder") for d in definitions(root()) if d.path.startswith(folder)]
        citations += enclosing(args)
        citations += [cite(d, "named in the question") for d in named_in(message, root())]
        citations = unique(citations)
        text = answer_for(message, root())
        sent, cancelled = "", False
        try:
            for i in range(0, len(text), 12):
                if stop.is_set():
                    cancelled = True
                    break
                piece = text[i : i + 12]
                sent += piece
                notify(
                    "codectx/chat/delta",
                    {"conversationId": conv.conversationId, "turnId": turn_id, "text": piece},
                )
                await asyncio.sleep(delay)
        except asyncio.CancelledError:  # $/cancelRequest: pygls cancels this task
            cancelled = True
        finally:
            running.pop(conv.conversationId, None)
        blocks = blocks_of(sent)
        conv.turns.append(
            {
                "turnId": turn_id,
                "role": "assistant",
                "text": sent,
                "citations": citations,
                "blocks": blocks,
                "createdAt": now(),
                "notices": notices,
                "cancelled": cancelled,
            }
        )
        payload = f"system: you are codectx\nuser: {message}\n" + "".join(
            f"snippet {c['path']}:{c['startLine']}-{c['endLine']}\n" for c in citations
        )
        position = args.get("position") or {}
        uri = str(args.get("uri") or "")
        # The same fields as `codectx.showContext`'s record (lsp/history.py RequestRecord), kind "chat".
        conv.contexts[turn_id] = {
            "id": f"chat-{conv.conversationId}-{turn_id}",
            "kind": "chat",
            "uri": uri,
            "path": _relative(uri, root()),
            "line": position.get("line", 0),
            "character": position.get("character", 0),
            "time": datetime.now(UTC).timestamp(),
            "status": "cancelled" if cancelled else "ok",
            "error": "",
            "items": [
                {
                    "path": c["path"],
                    "start_line": c["startLine"],
                    "end_line": c["endLine"],
                    "symbol": c.get("symbol") or "",
                    "reason": c["reason"],
                    "score": 1.0,
                    "tokens": 10,
                }
                for c in citations
            ],
            "budget": {"total": 4096, "used": 10 * len(citations)},
            "redactions": [],
            "payload": payload,
            "endpoint": "stand-in (no model server)",
            "sha256": hashlib.sha256(payload.encode()).hexdigest(),
            "audit_id": "",
            "text": sent,
            "model": "stand-in",
            "timings": {},
        }
        conv.updatedAt = now()
        store.save()
        return {
            "conversationId": conv.conversationId,
            "turnId": turn_id,
            "text": sent,
            "citations": citations,
            "blocks": blocks,
            "notices": notices,
            "auditId": None,
            "cancelled": cancelled,
            "usage": {"promptTokens": len(payload) // 4, "completionTokens": len(sent) // 4},
            "contextTokens": 10 * len(citations),
            "budgetTokens": 4096,
        }

    @server.feature("codectx/chat/cancel")
    def cancel(params: Any) -> dict[str, Any]:
        stop = running.get(str(_plain(params).get("conversationId")))
        if stop:
            stop.set()
        return {"cancelled": stop is not None}

    @server.feature("codectx/chat/list")
    def list_(params: Any) -> dict[str, Any]:
        convs = sorted(store.items.values(), key=lambda c: c.updatedAt, reverse=True)
        return {"conversations": [c.summary() for c in convs]}

    @server.feature("codectx/chat/get")
    def get(params: Any) -> dict[str, Any]:
        conv = store.get(_plain(params).get("conversationId"))
        return {"conversation": conv.summary(), "turns": conv.turns}

    @server.feature("codectx/chat/delete")
    def delete(params: Any) -> dict[str, Any]:
        deleted = store.items.pop(str(_plain(params).get("conversationId")), None) is not None
        store.save()
        return {"deleted": deleted}

    @server.feature("codectx/chat/export")
    def export(params: Any) -> dict[str, Any]:
        conv = store.get(_plain(params).get("conversationId"))
        out = [f"# {conv.title}", ""]
        for t in conv.turns:
            out += [f"## {'You' if t['role'] == 'user' else 'codectx'}", "", t["text"].rstrip(), ""]
            out += [
                f"- {c['path']}:{c['startLine'] + 1}-{c['endLine'] + 1} ({c['reason']})"
                for c in t["citations"]
            ]
            if t["citations"]:
                out.append("")
        return {"markdown": "\n".join(out)}

    @server.feature("codectx/chat/mentions")
    def mentions(params: Any) -> dict[str, Any]:
        args = _plain(params) or {}
        query, kind = str(args.get("query") or "").lower(), args.get("kind")
        items: list[dict[str, Any]] = []
        files = [p.relative_to(root()).as_posix() for p in source_files(root())]
        current = _relative(str(args.get("uri") or ""), root())
        files.sort(key=lambda f: f != current)  # the most relevant first: the editor's file
        if kind in (None, "file"):
            items += [{"kind": "file", "value": f, "label": f} for f in files if query in f.lower()]
        if kind in (None, "folder"):
            folders = sorted({f.rsplit("/", 1)[0] + "/" for f in files if "/" in f})
            items += [{"kind": "folder", "value": f, "label": f} for f in folders if query in f.lower()]
        if kind in (None, "symbol"):
            items += [
                {"kind": "symbol", "value": d.name, "label": d.name, "detail": f"{d.path}:{d.start + 1}"}
                for d in definitions(root())
                if query in d.name.lower()
            ]
        return {"items": items[:50]}

    @server.feature("codectx/chat/applyBlock")
    def apply_block(params: Any) -> dict[str, Any]:
        args = _plain(params)
        conv = store.get(args.get("conversationId"))
        turn = next(
            (t for t in conv.turns if t["turnId"] == args.get("turnId") and t["role"] == "assistant"), None
        )
        blocks = (turn or {}).get("blocks") or []
        index = args.get("blockIndex")
        if not isinstance(index, int) or not 0 <= index < len(blocks):
            raise RequestFailed(f"turn {args.get('turnId')!r} has no code block {index!r}")
        block, uri = blocks[index]["text"], str(args.get("uri"))
        old = read(uri)
        lines = old.splitlines()
        rng = args.get("range")
        if rng:
            start, end = rng["start"], rng["end"]
            offsets = [0]
            for line in old.splitlines(keepends=True):
                offsets.append(offsets[-1] + len(line))
            at = lambda p: offsets[min(p["line"], len(offsets) - 1)] + p["character"]  # noqa: E731
            new = old[: at(start)] + block + old[at(end) :]
        else:
            name = DEFINITION.match(block.lstrip())
            target = next((d for d in definitions_in("", lines) if name and d.name == name.group(1)), None)
            if target:
                new = "\n".join(lines[: target.start] + block.split("\n") + lines[target.end + 1 :]) + "\n"
            else:
                new = old.rstrip("\n") + "\n\n" + block + "\n"
        if uri.endswith(".py"):
            try:
                compile(new, uri, "exec")
            except SyntaxError as err:
                raise RequestFailed(
                    f"the result does not parse (line {err.lineno}: {err.msg}); nothing applied"
                ) from None
        last = old.splitlines(keepends=True)
        end = {"line": len(last), "character": 0}
        if last and not last[-1].endswith("\n"):
            end = {"line": len(last) - 1, "character": len(last[-1])}
        edit = {
            "changes": {uri: [{"range": {"start": {"line": 0, "character": 0}, "end": end}, "newText": new}]}
        }
        return {"edit": edit, "newText": new, "warnings": []}

    @server.feature("codectx/chat/context")
    def context(params: Any) -> dict[str, Any]:
        args = _plain(params)
        record = store.get(args.get("conversationId")).contexts.get(str(args.get("turnId")))
        if record is None:
            raise RequestFailed(f"no turn {args.get('turnId')!r} in this conversation")
        return record

    server.start_io()


if __name__ == "__main__":
    serve()
