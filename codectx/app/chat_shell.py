"""The interactive `codectx chat` loop: line editing and history, rich rendering, slash commands.

Questions are read with `input()` over readline (arrow keys, history kept in the state folder);
on a terminal the answer is rendered as Markdown while it streams (rich's Live view), elsewhere
it is written as plain text. Errors of a turn (a dead model server, a refused file) are printed
and the loop goes on; nothing is lost, the conversation is saved after every turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape

from codectx.app.chat import ChatService
from codectx.app.chat_cli import HELP, run_turn
from codectx.app.chat_model import TurnResult, listed_citations
from codectx.clikit import shown_name
from codectx.errors import CodectxError
from codectx.positions import split_location

if TYPE_CHECKING:
    from codectx.app.chat_cli import Workspace


class Shell:
    def __init__(self, chat: ChatService, space: Workspace, conversation_id: str, history: Path) -> None:
        self.chat = chat
        self.space = space
        self.cid = conversation_id
        self.history = history
        self.tty = sys.stdin.isatty() and sys.stdout.isatty()
        self.out = Console(highlight=False, soft_wrap=not self.tty)
        self.err = Console(stderr=True, highlight=False)
        # The exit status: the first failed turn's (a script piping questions in learns that one
        # got no answer); 0 when every turn was answered.
        self.status = 0
        self.created: set[str] = set()  # conversations started here (dropped at exit if still empty)

    def run(self) -> int:
        self._readline()
        conv = self.chat.get(self.cid)
        self.err.print(
            f"[dim]codectx chat: {self.space.root} — conversation {self.cid}; /help for commands[/dim]"
        )
        for turn in conv.turns:  # a resumed conversation shows where it was
            self.out.print(f"[bold]{'you' if turn.role == 'user' else 'codectx'}>[/bold] {turn.text}")
        loop = asyncio.new_event_loop()
        session = self.space.session(long_lived=True)
        try:
            while True:
                try:
                    line = input("you> " if self.tty else "")
                except EOFError:
                    break
                except KeyboardInterrupt:
                    self.out.print()
                    continue
                line = line.strip()
                if not line:
                    continue
                if line.startswith("/"):
                    if not self.command(line):
                        break
                    continue
                self.ask(loop, session, line)
        finally:
            loop.run_until_complete(session.aclose())
            loop.close()
            self._save_history()
        return self.status

    def ask(self, loop: asyncio.AbstractEventLoop, session: Any, line: str) -> None:
        text = ""
        live = Live(Markdown(""), console=self.out, refresh_per_second=8) if self.tty else None

        def delta(_turn: str, piece: str) -> None:
            nonlocal text
            text += piece
            if live is not None:
                live.update(Markdown(text))
            else:
                sys.stdout.write(piece)
                sys.stdout.flush()

        def notice(kind: str, message: str, _turn: str | None) -> None:
            self.err.print(f"[yellow]\\[{kind}][/yellow] {message}")

        try:
            with live if live is not None else contextlib.nullcontext():
                result = run_turn(
                    self.chat,
                    session,
                    loop,
                    self.cid,
                    self.space.turn(line),
                    on_delta=delta,
                    on_notice=notice,
                )
                if live is not None:
                    live.update(Markdown(result.turn.text))
        except CodectxError as exc:
            self.err.print(f"[red]codectx: error:[/red] {exc}")
            self.status = self.status or exc.exit_code
            return
        if live is None and not result.turn.text.endswith("\n"):
            sys.stdout.write("\n")
        self.footer(result)

    def footer(self, result: TurnResult) -> None:
        if result.turn.cancelled:
            self.err.print("[yellow]\\[stopped][/yellow]")
        shown, more = listed_citations(result.turn.citations)
        for c in shown:
            what = escape(f"{c.reason}: {shown_name(c.symbol)}" if c.symbol else c.reason)
            self.out.print(
                f"[dim]  {escape(shown_name(c.path))}:{c.start_line + 1}-{c.end_line + 1} ({what})[/dim]"
            )
        if more:
            self.out.print(f"[dim]  ... and {more} more search hits (their matching lines)[/dim]")
        self.err.print(f"[dim]context {result.context_tokens}/{result.budget_tokens} tokens[/dim]")

    def command(self, line: str) -> bool:
        """Run a slash command; False to leave."""
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        try:
            if name in ("/quit", "/exit"):
                return False
            if name == "/help":
                self.out.print(HELP)
            elif name == "/clear":
                self.cid = self.chat.start().conversation_id
                self.created.add(self.cid)
                self.err.print(f"[dim]new conversation {self.cid}[/dim]")
            elif name == "/file":
                self.set_file(rest)
            elif name in ("/save", "/save!"):
                self.save(rest, overwrite=name == "/save!")
            else:
                self.err.print(f"unknown command {name}; /help lists them")
        except (CodectxError, OSError) as exc:
            self.err.print(f"[red]codectx: error:[/red] {exc}")
        return True

    def save(self, rest: str, *, overwrite: bool) -> None:
        """Export the conversation to a file; an existing one (a link too) only with `/save!`."""
        target = Path(rest or f"codectx-chat-{self.cid}.md").expanduser()
        text = self.chat.export(self.cid) + "\n"
        try:
            # "x": created here, never an existing file (checked and created in one step).
            with target.open("w" if overwrite else "x", encoding="utf-8") as out:
                out.write(text)
        except FileExistsError:
            name = escape(str(target))
            self.err.print(
                f"[red]codectx: error:[/red] {name} exists; nothing saved (/save! {name} overwrites it, "
                "or give another name)",
                soft_wrap=True,  # the path whole, to copy
            )
            return
        self.err.print(f"saved to {escape(str(target))}", soft_wrap=True)

    def set_file(self, rest: str) -> None:
        if not rest:
            self.space.path = self.space.line = None
            self.err.print("no current file")
            return
        parts = rest.rsplit(" ", 1)
        line = int(parts[1]) if len(parts) == 2 and parts[1].isdigit() else None
        name = parts[0] if line is not None else rest
        if line is None:  # `/file src/app.py:42`, as rg and compilers print it
            located, row, _column = split_location(rest)
            if row is not None and row.isdigit():
                name, line = located, int(row)
        self.space.set_file(name, line)
        self.err.print(f"current file: {self.space.path}" + (f" line {line}" if line else ""))

    def _readline(self) -> None:
        try:
            import readline
        except ImportError:  # no line editing on this platform: plain input() still works
            return
        with contextlib.suppress(OSError):
            readline.read_history_file(self.history)
        readline.set_history_length(1000)

    def _save_history(self) -> None:
        try:
            import readline

            self.history.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(self.history)
        except (ImportError, OSError):
            pass
