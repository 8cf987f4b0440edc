"""`codectx lsp`: run the language server over stdio (editors) or TCP (debugging)."""

from __future__ import annotations

import argparse
import ipaddress
import os
from pathlib import Path
from typing import Any

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


def serve_tcp(server: Any, host: str, port: int) -> None:
    """pygls's `start_tcp`, serving this account's processes only (lsp/peers.py): anyone who
    connects reads the code and settles settings, the model server's address among them."""
    import asyncio
    import logging
    import threading

    from codectx.lsp import peers
    from pygls.io_ import run_async

    log = logging.getLogger("codectx.lsp.tcp")
    stop_event = threading.Event()
    server._stop_event = stop_event  # pygls's shutdown() sets it and closes server._server

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        own, peer = writer.get_extra_info("sockname"), writer.get_extra_info("peername")
        why = peers.refusal((own[0], own[1]), (peer[0], peer[1]))
        if why is not None:
            log.warning("connection from port %s refused: %s", peer[1], why)
            writer.close()
            return
        server.protocol.set_writer(writer)
        await run_async(
            stop_event=stop_event,
            reader=reader,
            protocol=server.protocol,
            logger=log,
            error_handler=server.report_server_error,
        )
        server.shutdown()

    async def serve() -> None:
        server._server = await asyncio.start_server(connection, host, port)
        log.info("serving on %s:%s (this account's processes only)", host, port)
        async with server._server:
            await server._server.serve_forever()

    try:
        asyncio.run(serve())
    except asyncio.CancelledError:
        pass


def run(args: argparse.Namespace) -> int:
    from codectx.gencache import cache_generated_code

    address = parse_hostport(args.tcp) if args.tcp else None
    if address is not None and not _is_loopback(address[0]):
        # Other machines could connect, and their owner cannot be checked: forward a port over SSH.
        raise UsageError(f"--tcp: {address[0]} is not a loopback address (127.0.0.1, ::1, localhost)")

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
        if address is not None:
            serve_tcp(server, *address)
        else:
            server.start_io()
    finally:
        # A client gone without `shutdown` (an editor killed, its pipe closed): a run indexing
        # the workspace stops at its next step, rather than meeting executors that refuse work
        # once the process exits ("indexing crashed" in the log).
        server.workspaces.close_keepers()
    return 0
