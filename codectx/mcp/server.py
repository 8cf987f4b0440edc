"""The MCP server: the six codectx tools registered with the official SDK (`mcp` 2.x,
`mcp.server.mcpserver.MCPServer`), served over stdio or Streamable HTTP on loopback.

A tool's answer is one text content block holding exactly the bytes its root's `Handout`
released and audited (`codectx.mcp.tools`); a refusal or a missing index is a tool error
(`isError`, a message an agent can act on), never a crash or a traceback. Tool functions are
plain functions: the SDK runs them in worker threads, so calls are answered concurrently and
the event loop stays free. Input schemas come from the annotated signatures below (pydantic
validates every call against them before it reaches codectx).
"""

from __future__ import annotations

import inspect
import ipaddress
import logging
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from codectx import __version__
from codectx.app.handout import Released
from codectx.errors import CodectxError, UsageError
from codectx.mcp.tools import Tools

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "codectx searches and reads this machine's code through a local index. Everything it returns "
    "has secrets replaced by [REDACTED:rule:tag] placeholders and is recorded in codectx's audit "
    "log; never-send files (.env, keys, credentials) and paths outside the workspace are refused. "
    "Lines are 1-based and inclusive; paths are relative to the workspace root. Start with "
    "search_code, follow names with find_definition and find_references, read more with read_code."
)
ToolFn = Callable[..., CallToolResult]
READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

Path_ = Annotated[str, Field(description="File path relative to the workspace root, e.g. src/app.py")]
Line = Annotated[int, Field(ge=1, description="1-based line number")]
Column = Annotated[int, Field(ge=1, description="1-based character (column) in the line")]
Root = Annotated[
    str | None, Field(description="With several workspace roots: the root's name (default: the first)")
]


def _answer(call: Callable[[], Released]) -> CallToolResult:
    """Run one tool; codectx errors become tool errors with their own message."""
    try:
        released = call()
    except CodectxError as exc:
        raise ToolError(str(exc)) from None
    return CallToolResult(content=[TextContent(type="text", text=released.text)])


def _described(app: MCPServer, annotations: ToolAnnotations) -> Callable[[ToolFn], ToolFn]:
    """`app.tool` with the function's name, and its docstring as one paragraph for the description."""

    def register(fn: ToolFn) -> ToolFn:
        description = " ".join(inspect.cleandoc(fn.__doc__ or "").split())
        app.tool(name=fn.__name__, description=description, annotations=annotations)(fn)
        return fn

    return register


def build_server(tools: Tools) -> MCPServer:
    app = MCPServer(
        name="codectx", title="codectx", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    read_only = _described(app, READ_ONLY)

    @read_only
    def search_code(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=2000,
                description="What to find: natural language ('where are retries configured'), an "
                "identifier (parse_config) or a qualified name (Session.send)",
            ),
        ],
        k: Annotated[int, Field(ge=1, le=50, description="Number of results")] = 10,
        glob: Annotated[
            str | None, Field(description="Only paths matching this glob, e.g. 'src/**/*.py'")
        ] = None,
        language: Annotated[str | None, Field(description="Only this language, e.g. python")] = None,
        root: Root = None,
    ) -> CallToolResult:
        """Hybrid search of the workspace index (vectors, full text and symbol names fused). Each
        result: path, 1-based start_line/end_line, symbol, kind, score and the code (redacted).
        While vectors are still being computed the answer says so (vectors_pending) and ranks by
        full text and names."""
        return _answer(lambda: tools.search_code(query, k, glob, language, root))

    @read_only
    def find_definition(
        symbol: Annotated[
            str | None, Field(description="A name (send) or qualified name (Session.send) to look up")
        ] = None,
        path: Annotated[
            str | None, Field(description="Or: the file where the name is used (with line, character)")
        ] = None,
        line: Annotated[int | None, Field(ge=1, description="1-based line of the name in path")] = None,
        character: Annotated[int, Field(ge=1, description="1-based column of the name in path")] = 1,
        root: Root = None,
    ) -> CallToolResult:
        """Where a symbol is defined, with its source. Give `symbol`, or `path` + `line` +
        `character` of a use: the name there is resolved through that file's imports and scope
        (resolved_by says how: import, same-file, class, name, ...)."""
        return _answer(lambda: tools.find_definition(symbol, path, line, character, root))

    @read_only
    def find_references(
        symbol: Annotated[str, Field(min_length=1, description="The name whose uses to find (send)")],
        limit: Annotated[int, Field(ge=1, le=200, description="Most uses to return")] = 50,
        root: Root = None,
    ) -> CallToolResult:
        """Where a name is used across the workspace: path, 1-based line and column, the
        attribute chain (self.session.send) and the line's text. Matched by name."""
        return _answer(lambda: tools.find_references(symbol, limit, root))

    @read_only
    def get_context(path: Path_, line: Line, character: Column = 1) -> CallToolResult:
        """What codectx would give a code completion at this position: the code before and after
        the cursor (prefix, suffix) and the ranked definitions and snippets that fit the token
        budget (each with path, 1-based lines, symbol, why it is there as kind, and its text)."""
        return _answer(lambda: tools.get_context(path, line, character))

    @read_only
    def read_code(
        path: Path_,
        start_line: Line = 1,
        end_line: Annotated[int | None, Field(ge=1, description="1-based last line (inclusive)")] = None,
    ) -> CallToolResult:
        """Lines of a workspace file (whole lines, at most 400 and 75,000 characters a call:
        end_line is the last line returned, and a cut answer says from which line to ask again),
        secrets redacted. Refused: paths outside the workspace (.., absolute paths, symlinks that
        lead out) and never-send files (.env, private keys, credentials)."""
        return _answer(lambda: tools.read_code(path, start_line, end_line))

    @_described(app, ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False))
    def index_status(
        wait: Annotated[
            bool,
            Field(description="Check for changed files now and wait for the index to catch up"),
        ] = False,
    ) -> CallToolResult:
        """The state of each root's index: files, chunks, symbols, vectors done and pending, when
        it was last indexed, and any problem. The index follows file changes by itself; pass
        wait=true after editing files to be sure the next answers see the edits."""
        return _answer(lambda: tools.index_status(wait))

    return app


def loopback_address(spec: str) -> tuple[str, int]:
    """(host, port) of `--http HOST:PORT`, refusing any address that is not loopback."""
    host, sep, port_text = spec.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", spec
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f"--http wants HOST:PORT, e.g. 127.0.0.1:8765 (got '{spec}')") from None
    if not 0 < port < 65536:
        raise UsageError(f"--http port {port} is not between 1 and 65535")
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise UsageError(
                f"--http {host} is not a loopback address: codectx serves code only to this machine "
                "(use 127.0.0.1 or ::1)"
            )
    return ("127.0.0.1" if host == "localhost" else host), port


def serve_http(app: MCPServer, host: str, port: int) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp, loopback only, with the SDK's DNS-rebinding checks
    (Host and Origin must name the loopback address), for this account's processes only: any local
    account can connect to a loopback port (red team 12 read a workspace as another user), so each
    request's peer is checked as `codectx lsp --tcp` checks its connections (lsp/peers.py)."""
    import anyio
    import uvicorn

    shown = f"[{host}]" if ":" in host else host
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{shown}:{port}", f"localhost:{port}"],
        allowed_origins=[f"http://{shown}:{port}", f"http://localhost:{port}"],
    )
    inner = app.streamable_http_app(transport_security=security, host=host)
    config = uvicorn.Config(_owner_only(inner), host=host, port=port, log_level="warning")
    anyio.run(uvicorn.Server(config).serve)


def _owner_only(inner: Any) -> Any:
    """An ASGI app that answers 403 to a request from another account's process, else `inner`."""
    from codectx.lsp import peers

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            server, client = scope.get("server"), scope.get("client")
            why = (
                peers.refusal((server[0], server[1]), (client[0], client[1]))
                if server and client
                else "the connecting process's owner cannot be told"
            )
            if why is not None:
                log.warning("codectx mcp: refused a connection: %s", why)
                body = f"codectx mcp: {why}\n".encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 403,
                        "headers": [
                            (b"content-type", b"text/plain"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await inner(scope, receive, send)

    return guarded
