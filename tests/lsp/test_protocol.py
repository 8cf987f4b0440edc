"""Protocol-level tests of the real `codectx lsp` process: lifecycle, documents, refusals, config.

Each test starts the server as editors do (`python -m codectx lsp` over
stdio) and talks LSP to it with pytest-lsp's client.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.lsp_helpers import FixedBackend, lsp_session, open_doc, wait_for


def _no_index(url: str | None = None) -> dict:
    opts: dict = {"codectx": {"index": {"embed": False}, "lsp": {"index_on_open": False}}}
    if url:
        opts["codectx"]["backend"] = {"url": url}
    return opts


async def test_initialize_advertises_features(tmp_path: Path, repo: Path) -> None:
    async with lsp_session(tmp_path, repo, _no_index()) as lsp:
        caps = lsp.init_result.capabilities
        assert lsp.init_result.server_info.name == "codectx"
        assert caps.completion_provider is not None
        assert caps.inline_completion_provider
        assert caps.code_action_provider.resolve_provider is True
        commands = set(caps.execute_command_provider.commands)
        assert {"codectx.reindex", "codectx.search", "codectx.showContext", "codectx.refactor"} <= commands


@pytest.mark.parametrize(
    "uri",
    [
        "untitled:Untitled-1",
        "https://example.com/x.py",
        "file://otherhost/etc/passwd",
        "file:///etc/passwd",
    ],
)
async def test_bad_uris_are_refused_without_crashing(tmp_path: Path, repo: Path, uri: str) -> None:
    async with lsp_session(tmp_path, repo, _no_index()) as lsp:
        lsp.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text="x = 1\n")
            )
        )
        result = await lsp.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=0, character=5),
            )
        )
        assert result is not None and list(result.items) == []
        with pytest.raises(JsonRpcException) as err:
            await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="codectx.refactor",
                    arguments=[
                        {
                            "uri": uri,
                            "range": {
                                "start": {"line": 0, "character": 0},
                                "end": {"line": 0, "character": 5},
                            },
                            "instruction": "rename x",
                        }
                    ],
                )
            )
        assert "local files" in str(err.value) or "outside the workspace" in str(err.value)
        # Still alive and serving.
        status = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.status")
        )
        assert status["folders"][0]["root"] == str(repo.resolve())


async def test_symlink_escaping_workspace_is_refused(tmp_path: Path, repo: Path) -> None:
    outside = tmp_path / "secret.py"
    outside.write_text("API = 'x'\n")
    link = repo / "calc" / "link.py"
    link.symlink_to(outside)
    async with lsp_session(tmp_path, repo, _no_index()) as lsp:
        with pytest.raises(JsonRpcException, match="outside the workspace"):
            await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="codectx.refactor",
                    arguments=[
                        {
                            "uri": link.as_uri(),
                            "range": {
                                "start": {"line": 0, "character": 0},
                                "end": {"line": 0, "character": 3},
                            },
                            "instruction": "x",
                        }
                    ],
                )
            )


async def test_binary_and_huge_documents_get_no_completion(
    tmp_path: Path, repo: Path, backend: FixedBackend
) -> None:
    opts = _no_index(backend.url)
    opts["codectx"]["lsp"]["max_document_bytes"] = 4096
    async with lsp_session(tmp_path, repo, opts) as lsp:
        for name, text in (("bin.py", "abc\x00\x01def\n"), ("huge.py", "x = 1\n" * 5000)):
            path = repo / name
            uri = open_doc(lsp, path, text)
            result = await lsp.text_document_completion_async(
                types.CompletionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(line=0, character=3),
                )
            )
            assert list(result.items) == []
        assert backend.completions() == []  # nothing was sent for either


async def test_handler_crash_does_not_take_server_down(tmp_path: Path, repo: Path) -> None:
    async with lsp_session(tmp_path, repo, _no_index()) as lsp:
        # Malformed arguments and unknown request ids: errors, not a dead server.
        with pytest.raises(JsonRpcException):
            await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(command="codectx.search", arguments=[42])
            )
        with pytest.raises(JsonRpcException, match="no request"):
            await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(command="codectx.showContext", arguments=[{"requestId": "nope"}])
            )
        with pytest.raises(JsonRpcException):
            await lsp.code_action_resolve_async(
                types.CodeAction(title="x", data={"uri": (repo / "calc/ops.py").as_uri(), "sl": "bad"})
            )
        status = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.status")
        )
        assert status["folders"]


async def test_invalid_settings_reported_once_and_defaults_used(tmp_path: Path, repo: Path) -> None:
    opts = {"codectx": {"lsp": {"debounce_ms": "soon", "index_on_open": False}, "nosuch": {"x": 1}}}
    async with lsp_session(tmp_path, repo, opts) as lsp:
        await wait_for(lambda: any("debounce_ms" in m.message for m in lsp.messages), timeout=20)
        lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=opts))
        status = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.status")
        )
        assert status["folders"]
        about_debounce = [m for m in lsp.messages if "debounce_ms" in m.message]
        assert len(about_debounce) == 1, [m.message for m in lsp.messages]
        assert any("nosuch" in m.message for m in lsp.messages)


async def test_privacy_keys_only_from_user_level(tmp_path: Path, repo: Path, backend: FixedBackend) -> None:
    """A folder-scoped backend.url (a repository's settings) is ignored; the user-level one is used."""
    evil = FixedBackend(completion="EVIL").start()
    try:
        folder_scope = {repo.resolve().as_uri(): {"codectx": {"backend": {"url": evil.url}}}}
        opts = _no_index(backend.url)
        opts["codectx"]["lsp"]["debounce_ms"] = 0
        async with lsp_session(tmp_path, repo, opts, configuration=folder_scope) as lsp:
            await wait_for(lambda: any("backend.url" in m.message for m in lsp.messages), timeout=20)
            path = repo / "calc" / "report.py"
            uri = open_doc(lsp, path)
            await lsp.text_document_completion_async(
                types.CompletionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(line=16, character=4),
                )
            )
            assert evil.requests == []
    finally:
        evil.stop()


async def _tcp_server(tmp_path: Path, repo: Path) -> tuple[subprocess.Popen[bytes], int]:
    """`codectx lsp --tcp` on a free loopback port, once it listens (waited for without connecting:
    pygls serves exactly one connection)."""
    import asyncio
    import socket

    import psutil

    from tests.support.lsp_helpers import SERVER_COMMAND, server_env

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [*SERVER_COMMAND, "--tcp", f"127.0.0.1:{port}"],
        env=server_env(tmp_path),
        cwd=repo,
        stderr=subprocess.PIPE,
    )
    server = psutil.Process(proc.pid)
    for _ in range(1200):
        if any(c.status == psutil.CONN_LISTEN for c in server.net_connections(kind="tcp")):
            break
        await asyncio.sleep(0.1)
    return proc, port


async def test_tcp_mode_serves_lsp(tmp_path: Path, repo: Path) -> None:
    """`codectx lsp --tcp 127.0.0.1:PORT` (debugging) speaks the same protocol over a socket."""
    import asyncio
    import contextlib

    from pygls.lsp.client import LanguageClient

    from tests.support.lsp_helpers import capabilities

    proc, port = await _tcp_server(tmp_path, repo)
    client = LanguageClient("tcp-test", "1")
    try:
        await asyncio.wait_for(client.start_tcp("127.0.0.1", port), timeout=30)
        result = await asyncio.wait_for(
            client.initialize_async(
                types.InitializeParams(
                    capabilities=capabilities(),
                    workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="repo")],
                    initialization_options=_no_index(),
                )
            ),
            timeout=60,
        )
        assert result.server_info is not None and result.server_info.name == "codectx"
        await asyncio.wait_for(client.shutdown_async(None), timeout=30)
        client.exit(None)
        proc.wait(timeout=30)  # the server exits when the client says exit
    finally:
        proc.kill()
        proc.wait(timeout=20)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.stop(), timeout=5)


def test_tcp_argument_errors_are_clear() -> None:
    import subprocess

    from tests.support.lsp_helpers import SERVER_COMMAND

    done = subprocess.run([*SERVER_COMMAND, "--tcp", "nonsense"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "codectx: error: --tcp expects HOST:PORT" in done.stderr and "Traceback" not in done.stderr
    # Other machines could connect, and no owner can be checked for them (red team 4).
    done = subprocess.run(
        [*SERVER_COMMAND, "--tcp", "0.0.0.0:2087"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "not a loopback address" in done.stderr


def test_a_tcp_peers_owner_is_read_from_the_kernels_socket_table(tmp_path: Path) -> None:
    from codectx.lsp import peers

    table = tmp_path / "tcp"
    header = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    )
    rest = " 00000000:00000000 00:00000000 00000000"
    table.write_text(
        header
        # The server's side (127.0.0.1:2087 <- :50000), and the client's (uid 65534).
        + f"   0: 0100007F:0827 0100007F:C350 01{rest}  1000 0 1 1\n"
        + f"   1: 0100007F:C350 0100007F:0827 01{rest} 65534 0 2 1\n"
        # The owner's own connection from 192.168.1.5:50001 to a remote :2087: same ports, other
        # addresses, taken for nobody's (second review).
        + f"   2: 0501A8C0:C351 0A000001:0827 01{rest}  1000 0 3 1\n"
        # A socket in another state (TIME_WAIT, 06) is no live client.
        + f"   3: 0100007F:C352 0100007F:0827 06{rest}  1000 0 4 1\n"
    )
    server = ("127.0.0.1", 2087)
    assert peers.peer_uid(server, ("127.0.0.1", 50000), (table,)) == 65534
    assert "another account" in (peers.refusal(server, ("127.0.0.1", 50000), (table,)) or "")
    assert peers.peer_uid(server, ("127.0.0.1", 50001), (table,)) is None
    assert peers.peer_uid(server, ("127.0.0.1", 50002), (table,)) is None
    assert "cannot be told" in (peers.refusal(server, ("127.0.0.1", 50001), (table,)) or "")
    # IPv6 loopback as /proc/net/tcp6 writes it.
    assert peers.proc_form(("::1", 2087)) == {"00000000000000000000000001000000:0827"}


@pytest.mark.skipif(os.name != "posix" or os.getuid() != 0, reason="needs root to connect as another account")
async def test_tcp_mode_refuses_other_accounts(tmp_path: Path, repo: Path) -> None:
    """Red team 4: another local account connected to `--tcp`, named its own model server and read
    the owner's conversations. Its connection is closed unanswered; the owner's is served."""
    import sys

    proc, port = await _tcp_server(tmp_path, repo)
    intruder = (
        "import os, socket, sys, json\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "body = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',\n"
        "                   'params': {'capabilities': {}}})\n"
        # A bytes host: the other account cannot read this Python's idna codec under /root.
        f"c = socket.socket(); c.connect((b'127.0.0.1', {port}))\n"
        "c.sendall(f'Content-Length: {len(body)}\\r\\n\\r\\n{body}'.encode())\n"
        "c.settimeout(20)\n"
        "try:\n    data = c.recv(65536)\nexcept ConnectionResetError:\n    data = b''\n"
        "print('ANSWERED' if data else 'CLOSED')\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", intruder], capture_output=True, text=True, timeout=60)
        assert done.stdout.strip() == "CLOSED", done.stderr
        assert proc.poll() is None  # still serving its owner
    finally:
        proc.kill()
        proc.wait(timeout=20)
        assert proc.stderr is not None
        log = proc.stderr.read().decode(errors="replace")
    assert "another account (uid 65534)" in log


async def test_the_home_folder_and_the_disk_root_are_no_workspace_folders(tmp_path: Path, repo: Path) -> None:
    """Red team 2: an editor opened on `~` (or `/`) made the server index the whole home (its own
    state folder with it) or the disk, and take every path on the machine for a workspace file.
    The command line never takes them; nor does the server now: it says why, and serves the rest."""
    home = tmp_path / "_home"  # the server's HOME (server_env)
    home.mkdir()
    (home / "notes.py").write_text("def secret_notes():\n    return 1\n")
    async with lsp_session(tmp_path, home, wait_warm=False) as lsp:
        await wait_for(lambda: any("does not index" in m.message for m in lsp.messages), timeout=60)
        assert any("your home folder" in m.message for m in lsp.messages)
        lsp.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[
                        types.WorkspaceFolder(uri="file:///", name="root"),
                        types.WorkspaceFolder(uri=repo.as_uri(), name="repo"),
                    ],
                    removed=[],
                )
            )
        )
        await wait_for(lambda: any("the root of the disk" in m.message for m in lsp.messages), timeout=60)
        status = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.status")
        )
        assert [f["root"] for f in status["folders"]] == [str(repo.resolve())]
    assert not (home / ".codectx").exists() and not Path("/.codectx").exists()
