"""Custom requests for clients that want structured data: `codectx/context`, `codectx/search`.

Everything here is also reachable through standard methods
(workspace/executeCommand); these just return richer JSON.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codectx.lsp.commands import Arguments, SearchQuery, first_arg, run_search
from codectx.lsp.errors import LspError
from codectx.lsp.handlers import guarded
from codectx.lsp.positions import Codec, clamp, split_lines
from lsprotocol import types

if TYPE_CHECKING:
    from codectx.lsp.server import CodectxServer

CONTEXT = "codectx/context"
SEARCH = "codectx/search"


def _params(params: object) -> Arguments:
    """A custom request's params as a JSON object (values untrusted: checked where read)."""
    if params is None:
        return {}
    if isinstance(params, dict):
        return {str(k): v for k, v in params.items()}
    # pygls hands unknown methods' params over as a namedtuple-like object
    as_dict = getattr(params, "_asdict", None)
    if callable(as_dict):
        return {k: _plain(v) for k, v in as_dict().items()}
    return first_arg((params,))


def _plain(value: object) -> object:
    as_dict = getattr(value, "_asdict", None)
    if callable(as_dict):
        return {k: _plain(v) for k, v in as_dict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def register(server: CodectxServer) -> None:
    @server.feature(SEARCH)
    @guarded()
    async def search(ls: CodectxServer, params: object) -> dict[str, Any]:
        """{query, k?} → ranked results with text; the query is embedded in a worker thread."""
        request = SearchQuery.of(_params(params))
        _locations, results, response = await run_search(ls, request)
        return {
            "query": request.query,
            "results": [{**r.as_dict(show=True), "uri": (root / r.path).as_uri()} for root, r in results],
            "partial": response.partial,
            "notes": list(response.notes),
            "elapsed_ms": response.elapsed_ms,
        }

    @server.feature(CONTEXT)
    @guarded()
    async def context(ls: CodectxServer, params: object) -> dict[str, Any]:
        """{uri, position} → the context a completion there would use; or {requestId} → a past request."""
        args = _params(params)
        request_id = args.get("requestId")
        if request_id or not args.get("uri"):
            return ls.history.get(str(request_id) if request_id else None, with_payload=True).as_json()
        uri = str(args["uri"])
        pos = _position(args.get("position"))
        folder, _path, rel, text = ls.document(uri)
        lines = split_lines(text)
        line, column = clamp(lines, pos, Codec.of(ls.workspace.position_encoding))
        result = await ls.context(folder, uri, rel, "\n".join(lines), line, column)
        if result is None:
            raise LspError("no index is ready yet; indexing runs in the background (see progress)")
        return result.as_dict(text=True)


def _position(value: object) -> types.Position:
    """A request's {line, character} as an LSP position, or a clear LspError."""
    try:
        if not isinstance(value, dict):
            raise TypeError(value)
        return types.Position(line=int(value["line"]), character=int(value["character"]))
    except (KeyError, TypeError, ValueError):
        raise LspError("codectx/context needs {uri, position: {line, character}}") from None
