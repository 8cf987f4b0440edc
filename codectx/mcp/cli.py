"""`codectx mcp`: codectx's search, definitions, references, context and confined reads as an MCP
server for coding agents (Claude Code, VS Code, Cursor, Continue, Zed, Codex CLI: docs/mcp.md)."""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from codectx.app.embedders import Embedders
from codectx.app.keeper import IndexKeeper
from codectx.app.session import WorkspaceSession
from codectx.clikit import add_command, add_index_dir, settings_for, workspace_root
from codectx.errors import UsageError
from codectx.mcp.workspaces import KeptIndex, Roots, Workspace, root_names
from codectx.workspace import refusal as too_broad_refusal

RECHECK_S = 2.0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(
        sub,
        "mcp",
        help="serve search, definitions and context to coding agents (Model Context Protocol)",
        description="An MCP server over stdio (the default: an agent starts it) or Streamable HTTP "
        "on loopback. It builds or opens each folder's index and keeps it fresh as files change. "
        "Everything it returns is redacted and recorded in the audit log (`codectx audit`); "
        "never-send files and paths outside the folders are refused.",
        examples=[
            "claude mcp add codectx -- codectx mcp /path/to/repo",
            "codectx mcp --http 127.0.0.1:8765 ~/src/api ~/src/web",
        ],
        see="configuration for each agent: docs/mcp.md",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="workspace folders (default: the current one)")
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback addresses only)",
    )
    p.add_argument(
        "--recheck-s",
        type=float,
        default=RECHECK_S,
        metavar="S",
        help=f"look for changed files when a call comes more than S seconds after the last look "
        f"(default {RECHECK_S:g}; 0: on every call)",
    )
    p.add_argument(
        "--lexical", action="store_true", help="no vectors: full text and symbol names only (no model load)"
    )
    add_index_dir(p)
    p.set_defaults(func=_mcp)


def _warm_up(workspace: Workspace) -> None:
    """Load a fresh index's tables and search structures now, not in the next agent's call."""
    with workspace.lock:
        workspace.session.definitions("codectx_warm_up")
        workspace.session.search("warm up", 1, dense=False)


def _mcp(args: argparse.Namespace) -> int:
    from codectx.mcp.server import build_server, loopback_address, serve_http
    from codectx.mcp.tools import Tools

    address = loopback_address(args.http) if args.http else None  # refused before any index work
    if args.recheck_s < 0:
        raise UsageError("--recheck-s must be 0 or more")
    roots = [workspace_root(p) for p in (args.paths or ["."])]
    for root in roots:
        # An agent reads any file of a root: the home folder (codectx's own state, every other
        # project) or the disk's root would be all of them.
        why = too_broad_refusal(root, "name a project folder (`codectx mcp PATH`) or start it in one")
        if why is not None:
            raise UsageError(why)
    if len(set(roots)) != len(roots):
        raise UsageError("a folder is named twice")
    if args.index_dir and len(roots) > 1:
        raise UsageError("--index-dir names one index: give one folder with it")
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="codectx mcp: %(message)s")
    embedders = Embedders()
    # One index thread for all roots; it lowers its CPU priority after a first run's files
    # (codectx/app/keeper.py): tool calls get the cores first.
    index_pool = ThreadPoolExecutor(1, thread_name_prefix="codectx-index")
    extra: dict[str, Any] = {"index.embed": False} if args.lexical else {}
    workspaces = []
    for name, root in zip(root_names(roots), roots, strict=True):
        settings = settings_for(root, args, extra)
        kept = KeptIndex(IndexKeeper(root, settings, embedders, index_pool), args.recheck_s)
        kept.keeper.listener = kept.ran

        def embedder(s: Any = settings) -> Any:
            return embedders.get_or_none(s)

        # A long-lived process: search keeps the small tables and a BM25 index in memory.
        session = WorkspaceSession(settings, index=kept, embedder=embedder, preload_search=True)
        workspace = Workspace(name, root, settings, kept, session, threading.Lock())
        kept.on_ready = partial(_warm_up, workspace)
        workspaces.append(workspace)
    for workspace in workspaces:
        workspace.index.poke(force=True)  # open or build each index now, in the background
    app = build_server(Tools(Roots(workspaces)))
    if address is None:
        app.run()
        return 0
    host, port = address
    shown = f"[{host}]" if ":" in host else host
    print(f"codectx mcp: serving {len(workspaces)} folder(s) at http://{shown}:{port}/mcp", file=sys.stderr)
    serve_http(app, host, port)
    return 0
