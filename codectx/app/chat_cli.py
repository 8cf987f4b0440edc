"""`codectx ask` (one question, for scripts) and `codectx chat` (interactive) in the shell.

Both run the same ChatService as the editors (codectx.app.chat) on a WorkspaceSession of the
workspace: the same context, redaction, audit log and saved conversations (under the state
folder; `codectx chat --list` shows them, `--resume ID` goes on with one). `ask` prints the answer
as it streams, then its sources; `--json` prints the turn's result as the language server sends
it. `chat` reads questions with line editing and history (arrow keys), renders answers with rich,
and takes /file, /clear, /save (/save! to overwrite), /help and /quit; Ctrl-C stops an answer, Ctrl-D leaves.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codectx.app.chat import ChatService, TurnInput
from codectx.app.chat_model import TurnResult, listed_citations, mentions_in
from codectx.app.cli import CommandIndex
from codectx.app.complete_cli import NotedEmbedder
from codectx.app.index import document_root, load_in_background, read_document, relative_path
from codectx.app.session import WorkspaceSession
from codectx.backend.errors import BackendNotConfigured
from codectx.clikit import (
    add_command,
    add_json,
    add_root,
    named_file,
    print_json,
    settings_for,
    shown_name,
    stderr,
    workspace_root,
)
from codectx.errors import CodectxError, UsageError
from codectx.positions import Cursor, cursor_from_args, split_location, to_zero_based, zero_based_json
from codectx.settings import Settings, state_dir

HELP = """commands:
  /file PATH [LINE]   the current file (and 1-based line, or PATH:LINE) for context; /file alone clears it
  /clear              start a new conversation
  /save [PATH]        export the conversation as Markdown (default: ./codectx-chat-ID.md); never
                      overwrites a file
  /save! PATH         the same, replacing PATH if it exists
  /help               this list
  /quit               leave (Ctrl-D too); Ctrl-C stops an answer
mentions: @file:PATH @symbol:NAME @folder:PATH @codebase:QUERY @diff"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    ask = add_command(
        sub,
        "ask",
        help="ask one question about the codebase (context, redaction and audit as in the editor)",
        description="Ask the model server one question about the workspace. The context is chosen as "
        "in the editor's chat: the file and line you name, the definitions the question names, a "
        "search, and @-mentions (@file:PATH, @symbol:NAME, @folder:PATH, @codebase:QUERY, @diff). "
        "The answer streams to stdout, then its sources; the conversation is saved (codectx chat --list).",
        examples=[
            'codectx ask "where are settings read?"',
            'codectx ask "what does this do?" --file src/app.py --line 42',
            'codectx ask "summarise @file:README.md" --json | jq .citations',
        ],
    )
    ask.add_argument("question", help="the question (quote it)")
    _common(ask)
    ask.add_argument("--conversation", metavar="ID", help="continue this saved conversation")
    add_json(ask)
    ask.set_defaults(func=_ask)

    chat = add_command(
        sub,
        "chat",
        help="interactive chat about the codebase",
        description="A conversation with the model server about the workspace, with the same context, "
        "redaction and audit log as the editors' chat. Exit status: 0 when every question got an "
        "answer, else the first failure's (3: the model server could not answer).\n\n" + HELP,
        examples=[
            "codectx chat",
            "codectx chat --file src/app.py",
            "codectx chat --list",
            "codectx chat --resume 3f2a9c1b7d4e",
            "codectx chat --export 3f2a9c1b7d4e > talk.md",
        ],
    )
    _common(chat)
    # One action at a time: `--list --export X` listed and ignored the export.
    action = chat.add_mutually_exclusive_group()
    action.add_argument("--resume", metavar="ID", help="go on with a saved conversation")
    action.add_argument("--list", action="store_true", help="list saved conversations and exit")
    action.add_argument(
        "--export",
        metavar="ID",
        help="print a saved conversation as Markdown and exit (answers as the model saw them: "
        "redacted secrets stay placeholders)",
    )
    action.add_argument("--delete", metavar="ID", help="delete a saved conversation and exit")
    add_json(chat, "with --list: the conversations as JSON (for one question as JSON: codectx ask --json)")
    chat.set_defaults(func=_chat)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--file",
        metavar="F",
        help="the current file, for the implicit context (F or F:LINE, 1-based; F:FIRST-LAST, as search "
        "prints it, is line FIRST)",
    )
    p.add_argument("--line", metavar="L", help="1-based line in --file (the enclosing scope goes in)")
    p.add_argument("--backend-url", metavar="URL", help="model server, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", help="served model name (default: backend.model, else the server's first)")
    p.add_argument("--lexical", action="store_true", help="search without vectors (no model load)")
    add_root(p)


class Workspace:
    """The session of the command's workspace, and the file the user is looking at."""

    def __init__(self, args: argparse.Namespace) -> None:
        line: int | None = None
        if args.file and (args.line is not None or split_location(args.file)[1] is not None):
            cursor = cursor_from_args(args.file, args.line, None)
            args.file, line = cursor.file, cursor.line
        file = named_file(args.file) if args.file else None
        if file is not None and not file.is_file():
            raise UsageError(f"no such file: {args.file}")
        self.root = document_root(file, args.root) if file is not None else workspace_root(args.root)
        extra = {"backend.url": args.backend_url, "backend.model": args.model}
        self.settings: Settings = settings_for(self.root, args, extra)
        if not self.settings.backend.url:
            raise BackendNotConfigured()
        self.path: str | None = None
        self.line: int | None = None
        if file is not None:
            self.set_file(str(file), line)

    def set_file(self, name: str, line: int | None) -> None:
        target = named_file(name)
        target = target if target.is_absolute() else Path.cwd() / target
        if line is not None and line < 1:
            raise UsageError("--line is 1-based")
        self.path = relative_path(self.root, target)
        text = read_document(self.root / self.path)  # a clear error now for folders, binary, huge files
        if line is not None:
            to_zero_based(Cursor(self.path, line, 1), text, self.path)  # past the end: a clear error
        self.line = line

    def session(self, long_lived: bool = False) -> WorkspaceSession:
        """The workspace's session. A `long_lived` one (the interactive shell) starts reading the
        index into memory on a background thread now, while the user types, as the language
        server does: later turns search memory, not LanceDB (`codectx ask` would only wait)."""
        index = CommandIndex(self.settings, on_missing=lambda exc: stderr(f"codectx: note: no index ({exc})"))
        store = index.open_store() if long_lived else None
        if store is not None:
            load_in_background(store)
        # Long-lived, searches keep the index in memory: a small index (no background load) is
        # read at the first turn, as the language server's is.
        return WorkspaceSession(
            self.settings,
            index=index,
            embedder=NotedEmbedder(self.settings, True),
            preload_search=store is not None,
        )

    def turn(self, message: str) -> TurnInput:
        turn = TurnInput(message, mentions=mentions_in(message))
        if self.path is not None:
            turn.path = self.path
            turn.text = read_document(self.root / self.path)
            if self.line is not None:
                turn.position = (self.line - 1, 0)
        return turn

    def uri_of(self) -> Callable[[str], str]:
        return lambda rel: (self.root / rel).as_uri()


def _sources(result: TurnResult) -> list[str]:
    shown, more = listed_citations(result.turn.citations)
    lines = [
        f"  {shown_name(c.path)}:{c.start_line + 1}-{c.end_line + 1}  "
        f"({c.reason}{': ' + shown_name(c.symbol) if c.symbol else ''})"
        for c in shown
    ]
    if more:
        lines.append(f"  ... and {more} more search hits (their matching lines; --json lists them all)")
    return lines


def _ask(args: argparse.Namespace) -> int:
    if not args.question.strip():
        raise UsageError("the question is empty")
    if args.line is not None and not args.file:
        raise UsageError("--line needs --file (the file the line is in)")
    space = Workspace(args)
    chat = ChatService()
    conv = chat.get(args.conversation) if args.conversation else chat.start()

    def delta(_turn: str, text: str) -> None:
        if not args.json:
            sys.stdout.write(text)
            sys.stdout.flush()

    def notice(kind: str, message: str, _turn: str | None) -> None:
        stderr(f"codectx: {kind}: {message}")

    async def run() -> TurnResult:
        async with space.session() as session:
            return await chat.send(
                session, conv.conversation_id, space.turn(args.question), on_delta=delta, on_notice=notice
            )

    try:
        result = asyncio.run(run())
    finally:
        if not args.conversation:
            _drop_if_empty(chat, conv.conversation_id)
    if args.json:
        wire = {**result.wire(space.uri_of()), "title": chat.get(conv.conversation_id).title}
        print_json(zero_based_json(wire))  # citations' startLine/endLine, as the editors get them
        return 0
    if not result.turn.text.endswith("\n"):
        sys.stdout.write("\n")
    if result.turn.citations:
        sys.stdout.write("\nSources:\n" + "\n".join(_sources(result)) + "\n")
    stderr(
        f"codectx: conversation {conv.conversation_id} (go on: codectx chat --resume {conv.conversation_id})"
    )
    return 0


def _chat(args: argparse.Namespace) -> int:
    if args.json and not args.list:
        raise UsageError("chat --json applies to --list; for one question as JSON use: codectx ask --json")
    chat = ChatService()
    if args.list:
        return _list(chat, args.json)
    if args.export:
        sys.stdout.write(chat.export(args.export) + "\n")
        return 0
    if args.delete:
        if not chat.delete(args.delete):
            raise UsageError(f"no conversation {args.delete!r}")
        stderr(f"codectx: deleted conversation {args.delete}")
        return 0
    from codectx.app.chat_shell import Shell

    space = Workspace(args)
    conv = chat.get(args.resume) if args.resume else chat.start()
    shell = Shell(chat, space, conv.conversation_id, history=state_dir() / "chat_history")
    if not args.resume:
        shell.created.add(conv.conversation_id)
    try:
        return shell.run()
    finally:
        for cid in shell.created:
            _drop_if_empty(chat, cid)


def _drop_if_empty(chat: ChatService, conversation_id: str) -> None:
    """A conversation this command started and no turn made it into: not left in `--list` as
    "0 turns  New conversation" (a dead server, an empty input)."""
    try:
        if not chat.get(conversation_id).turns:
            chat.delete(conversation_id)
    except CodectxError:  # already gone
        pass


def _list(chat: ChatService, as_json: bool) -> int:
    convs = chat.conversations()
    if as_json:
        print_json([c.summary_wire() for c in convs])
    for c in [] if as_json else convs:
        print(
            f"{c.conversation_id}  {c.updated_at[:16].replace('T', ' ')}  {c.user_turns:3} turns  {c.title}"
        )
    if not convs and not as_json:
        stderr("codectx: no saved conversations")
    return 0


def run_turn(
    chat: ChatService,
    session: WorkspaceSession,
    loop: asyncio.AbstractEventLoop,
    cid: str,
    turn: TurnInput,
    **callbacks: Any,
) -> TurnResult:
    """One turn on `loop`; Ctrl-C (SIGINT) stops the answer instead of the program."""
    task = loop.create_task(chat.send(session, cid, turn, **callbacks))
    try:
        loop.add_signal_handler(signal.SIGINT, lambda: chat.cancel(cid))
    except (NotImplementedError, RuntimeError):  # no signal handlers here: Ctrl-C ends the program
        pass
    try:
        return loop.run_until_complete(task)
    finally:
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):
            pass


__all__ = ["HELP", "CodectxError", "Workspace", "register", "run_turn"]
