"""workspace/executeCommand: reindex, search, showContext, refactor, and helpers.

Arguments are one JSON object (`arguments: [{...}]`), so editors can call
them by name. Results are plain JSON or LSP structures (Location[],
WorkspaceEdit).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codectx.lsp import actions
from codectx.lsp.errors import LspError
from codectx.lsp.handlers import guarded, in_worker
from codectx.lsp.positions import Codec, split_lines
from codectx.lsp.server import CodectxServer  # at run time: pygls reads command handlers' annotations
from lsprotocol import types

from codectx.app.index import SearchAnswer, SearchHit, language_for

REINDEX = "codectx.reindex"
SEARCH = "codectx.search"
SHOW_CONTEXT = "codectx.showContext"
REFACTOR = "codectx.refactor"
APPLY_ACTION = "codectx.applyAction"
ACCEPTED = "codectx.accepted"
STATUS = "codectx.status"


# A command's one argument, a JSON object as the editor sent it (untrusted: values are checked
# where they are read). Handlers take `*args: object`: pygls passes them as they came.
Arguments = dict[str, object]


def first_arg(args: tuple[object, ...]) -> Arguments:
    """The command's JSON object (none: empty; a bare string: a search query)."""
    if not args or args[0] is None:
        return {}
    if isinstance(args[0], dict):
        return {str(k): v for k, v in args[0].items()}
    if isinstance(args[0], str):
        return {"query": args[0]}  # `codectx.search "words"` from a command line
    raise LspError('command arguments must be one object, e.g. [{"query": "..."}]')


def folder_status(ls: CodectxServer) -> list[dict[str, Any]]:
    return [
        {
            "root": str(f.root),
            "uri": f.root.as_uri(),
            "state": f.state,
            "error": f.error,
            "runs": f.runs,
            "files": f.progress.files,
            "chunks": f.progress.chunks,
            "vectors": f.progress.vectors,
            # lookup: answered from LanceDB while the index loads into memory; memory: loaded
            "snapshot": f.snapshot_phase(),
        }
        for f in ls.workspaces.folders.values()
    ]


def search_locations(results: Sequence[SearchHit], root: Path) -> list[types.Location]:
    out = []
    for r in results:
        end_line = max(r.start_line, r.end_line)
        out.append(
            types.Location(
                uri=(root / r.path).as_uri(),
                range=types.Range(
                    start=types.Position(line=r.start_line, character=0),
                    end=types.Position(line=end_line + 1, character=0),
                ),
            )
        )
    return out


@dataclass(frozen=True)
class SearchQuery:
    """A search request's arguments, checked: {query, k?} (`codectx.search`, `codectx/search`)."""

    query: str
    k: int | None = None

    @classmethod
    def of(cls, args: Mapping[str, object]) -> SearchQuery:
        query = str(args.get("query") or "").strip()
        if not query:
            raise LspError('codectx.search needs a query: [{"query": "what to find", "k": 10}]')
        k = args.get("k")
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000):
            raise LspError("k must be a whole number between 1 and 1000")
        return cls(query, k)


async def run_search(
    ls: CodectxServer, request: SearchQuery
) -> tuple[list[types.Location], list[tuple[Path, SearchHit]], SearchAnswer]:
    """Search every folder's index (the query is embedded in a worker thread): (locations, (root,
    hit) pairs, the last folder's answer for its notes and timing)."""
    folders = list(ls.workspaces.folders.values())
    if not folders:
        raise LspError("no workspace folder is open")
    locations: list[types.Location] = []
    results: list[tuple[Path, SearchHit]] = []
    response = None
    for folder in folders:
        if folder.open_store() is None:
            continue
        response = await in_worker(ls.session(folder).search, request.query, request.k)
        locations.extend(search_locations(response.results, folder.root))
        results.extend((folder.root, r) for r in response.results)
    if response is None:
        raise LspError("no index is ready yet; indexing runs in the background (see progress)")
    return locations, results, response


def register(server: CodectxServer) -> None:
    @server.command(REINDEX)
    @guarded()
    async def reindex(ls: CodectxServer, *args: object) -> dict[str, Any]:
        """Starts reindexing every folder; with {"wait": true} answers when it is done."""
        opts = first_arg(args)
        folders = list(ls.workspaces.folders.values())
        for folder in folders:
            ls.workspaces.request_reindex(folder)
        if opts.get("wait"):
            await asyncio.gather(*(ls.workspaces.wait_idle(f) for f in folders))
        return {"folders": folder_status(ls)}

    @server.command(STATUS)
    @guarded()
    async def status(ls: CodectxServer, *args: object) -> dict[str, Any]:
        """Index state per folder; never blocks."""
        return {
            "folders": folder_status(ls),
            "warm": ls.warm,
            "backend_problem": ls.notices.active("backend"),
        }

    @server.command(SEARCH)
    @guarded()
    async def search(ls: CodectxServer, *args: object) -> list[types.Location]:
        """Hybrid search over every folder's index (query embedding in a worker thread)."""
        locations, _, _ = await run_search(ls, SearchQuery.of(first_arg(args)))
        return locations

    @server.command(SHOW_CONTEXT)
    @guarded()
    async def show_context(ls: CodectxServer, *args: object) -> dict[str, Any]:
        """The items, redactions and exact payload of the last (or a given) request; never blocks."""
        opts = first_arg(args)
        record = ls.history.get(_request_id(opts), with_payload=True)
        return record.as_json()

    @server.command(REFACTOR)
    @guarded()
    async def refactor(ls: CodectxServer, *args: object) -> types.WorkspaceEdit | None:
        """Rewrites a range by a free-text instruction; awaits the backend. {"apply": true} applies it."""
        opts = first_arg(args)
        uri = str(opts.get("uri") or "")
        instruction = str(opts.get("instruction") or "").strip()
        if not uri or "range" not in opts:
            raise LspError("codectx.refactor needs {uri, range, instruction}")
        if not instruction:
            raise LspError("codectx.refactor needs an instruction (what should change?)")
        try:
            rng = ls.protocol._converter.structure(opts["range"], types.Range)
        except Exception:
            raise LspError("range must be an LSP range {start: {line, character}, end: {...}}") from None
        _, _, rel, text = ls.document(uri)
        span = actions.target_span(text, language_for(rel), rng, Codec.of(ls.workspace.position_encoding))
        data = {"uri": uri, "action": "refactor", "instruction": instruction, **actions.span_data(span)}
        edit, message = await actions.resolve_edit(ls, data)
        if edit is None:
            raise LspError(message)
        if opts.get("apply"):
            await _apply(ls, edit, "codectx: refactor")
        return edit

    @server.command(APPLY_ACTION)
    @guarded()
    async def apply_action(ls: CodectxServer, *args: object) -> dict[str, Any]:
        """Computes and applies an action's edit (clients without resolve). Awaits the backend."""
        data = first_arg(args)
        edit, message = await actions.resolve_edit(ls, data)
        if edit is not None:
            await _apply(ls, edit, f"codectx: {data.get('action', 'refactor')}")
        return {"applied": edit is not None, "message": message}

    @server.command(ACCEPTED)
    @guarded()
    async def accepted(ls: CodectxServer, *args: object) -> None:
        """Notes that a suggestion was accepted; never blocks."""
        opts = first_arg(args)
        try:
            ls.history.get(_request_id(opts) or "").status = "accepted"
        except LspError:
            pass


def _request_id(args: Mapping[str, object]) -> str | None:
    """The `requestId` of a request in the history, or None (the last request)."""
    value = args.get("requestId")
    return str(value) if value else None


async def _apply(ls: CodectxServer, edit: types.WorkspaceEdit, label: str) -> None:
    result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label))
    if not result.applied:
        raise LspError(f"the editor did not apply the edit: {result.failure_reason or 'no reason given'}")


__all__ = ["split_lines"]
