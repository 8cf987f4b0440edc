"""textDocument/codeAction and codeAction/resolve: AI refactors of a selection.

Listing actions is cheap and never calls the model; `codeAction/resolve`
(or, for clients without resolve, the `codectx.applyAction` command) asks
the model for the replacement, turns it into a minimal WorkspaceEdit and
refuses it when the result does not parse. "Explain" edits nothing: the
model's answer opens as a markdown document (window/showDocument), or is
shown as a message to clients that cannot open documents.

With an empty selection, the action applies to the enclosing definition
(or the current line when there is none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codectx.lsp import observe
from codectx.lsp.answers import show_answer
from codectx.lsp.edits import Span, workspace_edit
from codectx.lsp.errors import LspError
from codectx.lsp.handlers import guarded
from codectx.lsp.positions import Codec, clamp, split_lines
from lsprotocol import types

from codectx.app.actions import ACTIONS, KIND_EXPLAIN, KIND_FIX, KIND_REWRITE, ActionSpec
from codectx.app.index import enclosing_definition, language_for
from codectx.app.refactor import EditRefused

if TYPE_CHECKING:
    from codectx.lsp.folders import Folder
    from codectx.lsp.server import CodectxServer


def _wanted(kind: str, only: list[str] | None) -> bool:
    return not only or any(kind == o or kind.startswith(o + ".") for o in only)


def target_span(text: str, language: str | None, rng: types.Range, codec: Codec) -> Span:
    """The selection, or the enclosing definition / current line when the selection is empty."""
    lines = split_lines(text)
    s_line, s_col = clamp(lines, rng.start, codec)
    e_line, e_col = clamp(lines, rng.end, codec)
    if (s_line, s_col) != (e_line, e_col):
        return Span(s_line, s_col, e_line, e_col)
    enclosing = enclosing_definition(text, language, s_line, s_col)
    if enclosing is not None:
        last = min(enclosing[1], len(lines) - 1)
        return Span(enclosing[0], 0, last, len(lines[last]))
    return Span(s_line, 0, s_line, len(lines[s_line]))


def span_data(span: Span) -> dict[str, int]:
    """A span as an action's JSON data (the editor hands it back on resolve)."""
    return {"sl": span.start_line, "sc": span.start_col, "el": span.end_line, "ec": span.end_col}


def _span_from(data: dict[str, Any]) -> Span:
    try:
        return Span(int(data["sl"]), int(data["sc"]), int(data["el"]), int(data["ec"]))
    except (KeyError, TypeError, ValueError):
        raise LspError("this code action is stale or malformed; ask for code actions again") from None


def _supports_resolve(ls: CodectxServer) -> bool:
    caps = ls.client_capabilities
    td = caps.text_document if caps else None
    ca = td.code_action if td else None
    support = ca.resolve_support if ca else None
    return bool(support and "edit" in (support.properties or []))


async def resolve_edit(ls: CodectxServer, data: dict[str, Any]) -> tuple[types.WorkspaceEdit | None, str]:
    """(edit, message) for an action's data: asks the model, checks the result. Awaits the backend."""
    uri = str(data.get("uri", ""))
    folder, _path, rel, text = ls.document(uri)
    codec = Codec.of(ls.workspace.position_encoding)
    span = _span_from(data)
    lines = split_lines(text)
    if span.end_line >= len(lines):
        raise LspError("the document changed since the action was offered; ask for code actions again")
    instruction = str(data.get("instruction") or "").strip()
    if not instruction:
        raise LspError("a refactor needs an instruction (what should change?)")
    if data.get("action") == "explain":
        answer = await explain(ls, folder, uri, rel, "\n".join(lines), span)
        code = "\n".join(lines[span.start_line : span.end_line + 1])
        show_answer(ls, rel, span, answer, code, language_for(rel))
        return None, answer
    replacement = await refactor(ls, folder, uri, rel, "\n".join(lines), span, instruction)
    doc = ls.workspace.text_documents.get(uri)
    version = doc.version if doc is not None else None
    edit = workspace_edit(uri, text, span, replacement, codec, version)
    return edit, "" if edit else "the model proposed no change"


async def refactor(
    ls: CodectxServer, folder: Folder, uri: str, rel: str, text: str, span: Span, instruction: str
) -> str:
    """The model's replacement for a span (awaits the backend; context assembled in a thread)."""
    record = ls.history.start("refactor", uri, rel, span.start_line, span.start_col)
    session = ls.session(folder)
    observe.started(ls, "refactor")
    try:
        context = await ls.context(folder, uri, rel, text, span.start_line, span.start_col)
        if context is not None:
            record.used(context)
        selection = (span.start_line, span.start_col, span.end_line, span.end_col)
        edit = await session.refactor_edit(rel, text, selection, instruction, context=context)
    except Exception as exc:
        if isinstance(exc, EditRefused) and exc.sent is not None:
            record.remember(exc.sent)  # refused here, but it was sent: "show context" has it
        record.status, record.error = "error", str(exc)
        observe.finished(ls, record, exc)
        ls.health.observe_exception(folder.settings, exc)
        raise
    if edit.sent is not None:
        record.remember(edit.sent)
    ls.health.ok(folder.settings, None, None)
    record.status, record.text = "ok", edit.code
    for note in edit.notes:
        # The edit keeps lines from the file where the model lost a redacted secret: say so.
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=f"codectx: {note}")
        )
    observe.finished(ls, record)
    return edit.code


async def explain(ls: CodectxServer, folder: Folder, uri: str, rel: str, text: str, span: Span) -> str:
    """The model's explanation of a span's lines, through the same client, privacy gate and audit log."""
    record = ls.history.start("explain", uri, rel, span.start_line, span.start_col)
    session = ls.session(folder)
    observe.started(ls, "explain")
    try:
        answer = await session.explain(rel, text, span.start_line, span.end_line)
    except Exception as exc:
        record.status, record.error = "error", str(exc)
        observe.finished(ls, record, exc)
        ls.health.observe_exception(folder.settings, exc)
        raise
    ls.health.ok(folder.settings, answer.model, None)
    if answer.sent is not None:
        record.remember(answer.sent)
    record.status, record.text = "ok", answer.text
    observe.finished(ls, record)
    return answer.text


def register(server: CodectxServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[KIND_REWRITE, KIND_FIX, KIND_EXPLAIN], resolve_provider=True
        ),
    )
    @guarded(default=list)
    async def code_action(ls: CodectxServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        """Lists actions; never calls the model, never blocks."""
        uri = params.text_document.uri
        _folder, _path, rel, text = ls.document(uri)
        codec = Codec.of(ls.workspace.position_encoding)
        span = target_span(text, language_for(rel), params.range, codec)
        only = list(params.context.only or []) or None
        resolvable = _supports_resolve(ls)
        actions: list[types.CodeAction] = []
        entries: list[tuple[str, ActionSpec, str, str]] = []
        for name in ("rewrite", "docstring", "types"):
            spec = ACTIONS[name]
            entries.append((name, spec, spec.title, spec.instruction))
        for diagnostic in params.context.diagnostics[:3]:
            spec = ACTIONS["fix"]
            message = (
                diagnostic.message.strip().splitlines()[0][:120] if diagnostic.message.strip() else "problem"
            )
            entries.append(
                ("fix", spec, spec.title.format(message=message), spec.instruction.format(message=message))
            )
        spec = ACTIONS["explain"]
        entries.append(("explain", spec, spec.title, spec.instruction))
        for name, spec, title, instruction in entries:
            if not _wanted(spec.kind, only):
                continue
            data = {"uri": uri, "action": name, "instruction": instruction, **span_data(span)}
            action = types.CodeAction(title=title, kind=spec.kind, data=data)
            if not resolvable:
                action.command = types.Command(title=title, command="codectx.applyAction", arguments=[data])
            actions.append(action)
        return actions

    @server.feature(types.CODE_ACTION_RESOLVE)
    @guarded()
    async def code_action_resolve(ls: CodectxServer, action: types.CodeAction) -> types.CodeAction:
        """Asks the model for the edit (awaits the backend; bounded by backend timeouts)."""
        data = action.data if isinstance(action.data, dict) else {}
        edit, message = await resolve_edit(ls, data)
        if data.get("action") == "explain":
            return action  # the answer is shown as a document or message; nothing to edit
        if edit is None:
            raise LspError(message)
        action.edit = edit
        action.command = None
        return action
