"""`codectx lsp`: run the language server over stdio (editors) or TCP (debugging)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path

from codectx.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "lsp",
        help="run the language server (editors start this)",
        description="Run the codectx language server. Editors start it over stdio (the default); "
        "--tcp HOST:PORT listens on a socket instead, for debugging. Settings come from the "
        "editor (initializationOptions, workspace/didChangeConfiguration) on top of the usual "
        "config files and CODECTX_* variables.",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (default)")
    mode.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP socket, e.g. 127.0.0.1:2087")
    parser.add_argument(
        "--log-file",
        metavar="FILE",
        help="write the server log here (default: the editor's LSP log over stdio, stderr with --tcp)",
    )
    parser.add_argument(
        "--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="log detail"
    )
    parser.set_defaults(func=run)


def parse_hostport(value: str) -> tuple[str, int]:
    host, sep, port_text = value.rpartition(":")
    if not sep or not host:
        raise UsageError(f"--tcp expects HOST:PORT, e.g. 127.0.0.1:2087, got '{value}'")
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f"--tcp: '{port_text}' is not a port number") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"--tcp: port {port} is out of range")
    return host.strip("[]"), port


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    from codectx.gencache import cache_generated_code

    cache_generated_code()  # before pygls: lsprotocol's ~570 attrs classes (codectx/gencache.py)

    from codectx.lsp.logs import configure

    from codectx.runtime import quiet_dependencies

    quiet_dependencies()  # idempotent; here too for hosts that call run() without the CLI's main

    # Over stdio the log goes to the editor's LSP log; on TCP (debugging) it stays on stderr.
    bridge = configure(args.log_level, args.log_file, to_client=not args.tcp)

    gate = os.environ.get("CODECTX_TEST_SNAPSHOT_GATE")
    if gate:  # tests: requests that arrive, deterministically, before the snapshot is in memory
        from codectx.app.index import hold_background_loads

        hold_background_loads(Path(gate))

    from codectx.lsp.registry import build_server

    server = build_server()
    server.log_bridge = bridge
    try:
        if args.tcp:
            host, port = parse_hostport(args.tcp)
            if not _is_loopback(host):
                print(
                    f"codectx: warning: listening on {host}, reachable from other machines; "
                    "anyone who connects can read your code through the server",
                    file=sys.stderr,
                )
            server.start_tcp(host, port)
        else:
            server.start_io()
    finally:
        # A client gone without `shutdown` (an editor killed, its pipe closed): a run indexing
        # the workspace stops at its next step, rather than meeting executors that refuse work
        # once the process exits ("indexing crashed" in the log).
        server.workspaces.close_keepers()
    return 0
