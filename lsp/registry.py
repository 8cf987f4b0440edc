"""Builds the language server: the server object, then every feature module's handlers.

Each feature module has `register(server)`; this is the one place that imports them all, so
no feature module imports another's registration and nothing imports this module but the
`codectx lsp` command (and tests that build a server in process).
"""

from __future__ import annotations

from pathlib import Path

from codectx.lsp import actions, chat, commands, completion, custom, health, inline, lifecycle, observe
from codectx.lsp.server import CodectxServer

from codectx.settings import cache_dir


def build_server(answers_dir: Path | None = None) -> CodectxServer:
    """The server with every feature registered; `answers_dir` defaults to the user's codectx cache."""
    server = CodectxServer(answers_dir if answers_dir is not None else cache_dir() / "answers")
    lifecycle.register(server)
    observe.register(server)
    completion.register(server)
    inline.register(server)
    actions.register(server)
    commands.register(server)
    custom.register(server)
    chat.register(server)
    health.register(server)
    return server
