"""Chat over LSP (docs/chat-protocol.md): thin handlers over codectx.app.chat.ChatService.

Streaming is by notifications: `codectx/chat/delta` for answer text and `codectx/chat/notice` for
refusals, compaction and budget notes, all sent before the `codectx/chat/send` response. A send is
stopped by `codectx/chat/cancel` or `$/cancelRequest`; both give a result with `cancelled: true`
and the text so far, and close the model stream (vLLM aborts the request). Each turn is also
recorded in the request history, so `codectx.showContext` shows it like a completion.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from codectx.lsp.custom import _params
from codectx.lsp.errors import LspError
from codectx.lsp.folders import lexical_names
from codectx.lsp.handlers import guarded, in_worker
from codectx.lsp.positions import Codec, clamp, split_lines
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from codectx.app.chat import ChatService, TurnInput
from codectx.app.chat_apply import target_refusal
from codectx.app.chat_mentions import mention_items
from codectx.app.chat_model import MENTION_KINDS, Mention, mentions_in, union
from codectx.app.refactor import EditRefused
from codectx.app.results import SentRequest

if TYPE_CHECKING:
    from codectx.lsp.folders import Folder
    from codectx.lsp.server import CodectxServer

DELTA = "codectx/chat/delta"
NOTICE = "codectx/chat/notice"
INDEX_WAIT_S = 60.0  # a turn waits this long for a first index that is being built


class InvalidParams(JsonRpcException):
    CODE = -32602


def _need(args: dict[str, object], *names: str) -> list[str]:
    """The string values of `names` in a request's params (InvalidParams when one is missing)."""
    found = [args.get(name) for name in names]
    strings = [value for value in found if isinstance(value, str)]
    if len(strings) != len(names):
        raise InvalidParams(f"this chat request needs {{{', '.join(f'{n}: string' for n in names)}}}")
    return strings


def _diagnostics(value: object) -> list[dict[str, Any]]:
    """The editor's diagnostics for @problems: the objects of a list, anything else left out."""
    return [d for d in value if isinstance(d, dict)] if isinstance(value, list) else []


def _conversation(params: Any) -> str:
    """The `conversationId` of a request's params (InvalidParams when there is none)."""
    args = _params(params)
    return _need(args, "conversationId")[0]


def _position(value: Any) -> types.Position | None:
    try:
        return types.Position(line=int(value["line"]), character=int(value["character"]))
    except (KeyError, TypeError, ValueError):
        return None


def _mentions(raw: Any) -> list[Mention]:
    out = []
    for m in raw or []:
        if isinstance(m, dict) and m.get("kind") in MENTION_KINDS:
            out.append(Mention(str(m["kind"]), str(m.get("value") or "")))
    return out


def register(server: CodectxServer) -> None:
    chat = ChatService()

    def folder_of(ls: CodectxServer, uri: str) -> Folder:
        if uri:
            with contextlib.suppress(Exception):
                return ls.workspaces.locate(uri)[0]
        return ls.workspaces.by_root()

    def uri_of(folder: Folder) -> Any:
        return lambda rel: (folder.root / rel).as_uri()

    async def index_ready(folder: Folder) -> None:
        """A turn right after the workspace opened waits for the first index (its symbols), which
        the server starts when the client says it is initialized."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + INDEX_WAIT_S
        while folder.settings.lsp.index_on_open and loop.time() < deadline:
            first_run_pending = folder.runs == 0 and folder.state == "idle"
            if not (first_run_pending or (folder.runs == 1 and folder.state == "indexing")):
                return
            await asyncio.sleep(0.05)

    def where(ls: CodectxServer, args: dict[str, Any], turn: TurnInput) -> None:
        """The editor's file, cursor and selection (converted from the client's encoding)."""
        uri = str(args.get("uri") or "")
        if not uri:
            return
        try:
            _folder, _path, rel, text = ls.document(uri)
        except Exception:  # outside the workspace, never-send, unreadable: no implicit file
            return
        lines = split_lines(text)
        codec = Codec.of(ls.workspace.position_encoding)
        turn.path, turn.text = rel, "\n".join(lines)
        pos = _position(args.get("position"))
        if pos is not None:
            turn.position = clamp(lines, pos, codec)
        sel = args.get("selection")
        if isinstance(sel, dict):
            a, b = _position(sel.get("start")), _position(sel.get("end"))
            if a is not None and b is not None and (a.line, a.character) != (b.line, b.character):
                turn.selection = (*clamp(lines, a, codec), *clamp(lines, b, codec))
        turn.recent = ls.recent_edits(_folder, uri)

    @server.feature("codectx/chat/start")
    @guarded()
    async def start(ls: CodectxServer, params: Any) -> dict[str, Any]:
        title = _params(params).get("title")
        return chat.start(title if isinstance(title, str) else None).summary_wire()

    @server.feature("codectx/chat/send")
    @guarded()
    async def send(ls: CodectxServer, params: Any) -> dict[str, Any]:
        args = _params(params)
        cid, message = _need(args, "conversationId", "message")
        chat.get(cid)  # an unknown conversation fails before anything else
        uri = str(args.get("uri") or "")
        folder = folder_of(ls, uri)
        mentions = union(mentions_in(message), _mentions(args.get("mentions")))
        turn = TurnInput(message, mentions=mentions, diagnostics=_diagnostics(args.get("diagnostics")))
        where(ls, args, turn)
        session = ls.session(folder)
        line, character = turn.position or (0, 0)
        record = ls.history.start("chat", uri, turn.path or "", line, character)

        def delta(turn_id: str, text: str) -> None:
            ls.protocol.notify(DELTA, {"conversationId": cid, "turnId": turn_id, "text": text})

        def notice(kind: str, text: str, turn_id: str | None) -> None:
            payload: dict[str, Any] = {"conversationId": cid, "kind": kind, "message": text}
            if turn_id:
                payload["turnId"] = turn_id
            ls.protocol.notify(NOTICE, payload)

        try:
            result = await chat.send(
                session,
                cid,
                turn,
                on_delta=delta,
                on_notice=notice,
                uri=uri,
                before=lambda: index_ready(folder),
            )
        except Exception as exc:
            record.status, record.error = "error", str(exc)
            raise
        sent = result.turn.record
        record.status = sent.get("status", "ok")
        record.items = list(sent.get("items", []))
        record.budget = dict(sent.get("budget", {}))
        record.text = result.turn.text
        record.model = str(sent.get("model", ""))
        body = str(sent.get("payload", "")).encode()
        record.remember(
            SentRequest(
                "chat",
                turn.path or "",
                str(sent.get("endpoint", "")),
                body,
                record.items,
                [],
                result.audit_id,
            )
        )
        record.redactions = list(sent.get("redactions", []))
        return result.wire(uri_of(folder))

    @server.feature("codectx/chat/cancel")
    @guarded()
    async def cancel(ls: CodectxServer, params: Any) -> dict[str, Any]:
        return {"cancelled": chat.cancel(_conversation(params))}

    @server.feature("codectx/chat/list")
    @guarded()
    async def list_(ls: CodectxServer, params: Any) -> dict[str, Any]:
        return {"conversations": [c.summary_wire() for c in chat.conversations()]}

    @server.feature("codectx/chat/get")
    @guarded()
    async def get(ls: CodectxServer, params: Any) -> dict[str, Any]:
        conv = chat.get(_conversation(params))
        folder = folder_of(ls, "")
        return {"conversation": conv.summary_wire(), "turns": [t.wire(uri_of(folder)) for t in conv.turns]}

    @server.feature("codectx/chat/delete")
    @guarded()
    async def delete(ls: CodectxServer, params: Any) -> dict[str, Any]:
        return {"deleted": chat.delete(_conversation(params))}

    @server.feature("codectx/chat/export")
    @guarded()
    async def export(ls: CodectxServer, params: Any) -> dict[str, Any]:
        return {"markdown": chat.export(_conversation(params))}

    @server.feature("codectx/chat/context")
    @guarded()
    async def context(ls: CodectxServer, params: Any) -> dict[str, Any]:
        args = _params(params)
        cid, turn_id = _need(args, "conversationId", "turnId")
        return chat.record(cid, turn_id)

    @server.feature("codectx/chat/mentions")
    @guarded()
    async def mentions(ls: CodectxServer, params: Any) -> dict[str, Any]:
        args = _params(params)
        uri = str(args.get("uri") or "")
        folder = folder_of(ls, uri)
        current = ""
        if uri:
            with contextlib.suppress(Exception):
                current = ls.workspaces.locate(uri)[2]
        asked = args.get("kind")
        kind = asked if isinstance(asked, str) and asked in MENTION_KINDS else None
        gate = ls.session(folder).client.gate

        def allowed(path: str) -> bool:
            return gate.refusal(path) is None

        items = await in_worker(
            mention_items,
            folder.open_store(),
            folder.root,
            str(args.get("query") or ""),
            kind,
            current,
            allowed,
        )
        return {"items": [i.wire() for i in items]}

    @server.feature("codectx/chat/applyBlock")
    @guarded()
    async def apply_block(ls: CodectxServer, params: Any) -> dict[str, Any]:
        args = _params(params)
        cid, turn_id, uri = _need(args, "conversationId", "turnId", "uri")
        index = args.get("blockIndex")
        if not isinstance(index, int) or isinstance(index, bool):
            raise InvalidParams("codectx/chat/applyBlock needs blockIndex: number")
        # Judged before the file is read (a never-send file's text never goes into newText, and
        # nothing is proposed for `.git/`, whose config names commands git runs): on the path, its
        # real path and a link's own name (`p/.git` -> ...); the gate adds real paths outside.
        folder, path, rel = ls.workspaces.locate(uri)
        names = dict.fromkeys([rel, *lexical_names(path, ls.workspaces.folders)])
        refused = next(filter(None, (target_refusal(n, folder.settings, folder.root) for n in names)), None)
        why = refused or ls.session(folder).client.gate.refusal(rel)  # as the mentions' list does
        if why:
            raise EditRefused(refused or f"refused to apply the code block to {rel}: {why}")
        folder, _path, rel, text = ls.document(uri)
        lines = split_lines(text)
        selection = None
        rng = args.get("range")
        if isinstance(rng, dict):
            a, b = _position(rng.get("start")), _position(rng.get("end"))
            if a is None or b is None:
                raise LspError("range needs {start, end} positions")
            codec = Codec.of(ls.workspace.position_encoding)
            selection = (*clamp(lines, a, codec), *clamp(lines, b, codec))
        shown = ls.session(folder).redaction.shown(rel)
        new, warnings = chat.apply(cid, turn_id, index, rel, text, selection, shown)
        edit = {
            "changes": {
                uri: [{"range": {"start": {"line": 0, "character": 0}, "end": _end(text)}, "newText": new}]
            }
        }
        return {"edit": edit, "newText": new, "warnings": warnings}


def _end(text: str) -> dict[str, int]:
    """The LSP position after the last character of `text` (utf-16 columns)."""
    rows = text.split("\n")
    return {"line": len(rows) - 1, "character": len(rows[-1].encode("utf-16-le")) // 2}
