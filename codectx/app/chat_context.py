"""A chat turn's context: what the question implies and what the user mentioned, within a budget.

In order, while the turn's budget lasts: the @-mentions (`@file`, `@symbol`, `@folder`,
`@codebase`, `@diff`, `@problems`), the editor's selection, the definition around the cursor,
the definitions of the symbols the question and selection name (through the index's symbol
table, as completions resolve them), the user's recent edits, a hybrid search with the question
and the previous question (a hundred hits: the first three whole up to an item's share of the
budget, the rest cut to a small share; a cut hit keeps the lines that name most of the
question's words, codectx.app.chat_focus), and definitions named by the question's plain words.
Each snippet goes once per conversation (one already sent in a turn still in the window is not
sent again, and counts against the turn's budget as if it were: the model reads it there), never
from a never-send file (an `@file` of one is refused with a notice and never read), and redacted
with its own path, the secrets found in its whole file. Blocking (disk, index, embedder): call
it from a worker thread.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from codectx.app import gitdiff
from codectx.app.chat_focus import focus, terms
from codectx.app.chat_model import Mention
from codectx.app.documents import DocumentCache, line_sums
from codectx.app.files import NeverSend
from codectx.app.index import RecentRegion, enclosing_definition, language_for, read_document
from codectx.backend.gate import Gate
from codectx.errors import CodectxError
from codectx.privacy.notebook import is_notebook
from codectx.privacy.pieces import PieceRedactor

log = logging.getLogger(__name__)

Span = tuple[str, int, int]  # (path, first line, last line), 0-based inclusive
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?")
MAX_NAMES = 24  # identifiers of a question looked up in the symbol table
# The search's hits: its first SEARCH_WHOLE take up to 1/ITEM_SHARE of the budget each, like any
# implicit item; the rest, down to rank SEARCH_K, up to 1/SEARCH_SHARE (cut to the lines the question
# names, chat_focus: a signature and the ten or so lines that match). Chosen on the development set
# (bench/chat_sweep.py: bench/devset.toml's 12 repositories, questions from hidden docstrings).
# Pooled recall of the gold function among a turn's pieces: twenty hits, five whole, the rest cut to
# 1/14 of a 2048-token budget: 0.806. A hundred cut to 1/64 of 6144 tokens
# (retriever.chat_budget_tokens): 0.919 with five whole, 0.926 with three, 0.911 with eight; no
# repository lower than at 0.806. 8192 tokens gave 0.930, for a send-to-first-byte p95 over 100 ms
# on Django; 130 hits 0.916.
SEARCH_K = 100
MAX_PROBLEMS = 200  # diagnostics read per @problems (an editor may send thousands)
SEARCH_WHOLE = 3
SEARCH_SHARE = 64
CODEBASE_K = 12  # an explicit @codebase search: its hits are sent whole, budget permitting
ITEM_SHARE = 6  # an implicit item takes at most 1/6 of the budget (its head when longer)
SITES_PER_WORD = 2  # definitions per plain word of the question
MIN_PIECE = 24  # tokens: below this much budget left, no further search hit is considered


class ChatSession(Protocol):
    """What context gathering needs of a WorkspaceSession (kept narrow so it is easy to follow)."""

    def search(self, query: str, k: int | None = None) -> Any: ...
    def warm_up_gate(self) -> None: ...
    def definitions(self, name: str) -> Sequence[Any]: ...
    def definitions_of(self, names: Sequence[str]) -> dict[str, list[Any]]: ...
    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None, *, redact: bool = True
    ) -> Any: ...


@dataclass(frozen=True)
class Piece:
    """One snippet of a turn's context as the model sees it (redacted)."""

    path: str
    start_line: int  # 0-based, inclusive
    end_line: int
    text: str
    reason: str
    symbol: str = ""

    @property
    def span(self) -> Span:
        return (self.path, self.start_line, self.end_line)


@dataclass
class TurnInput:
    """What the editor says about a turn beside the message."""

    message: str
    path: str | None = None  # the editor's current file, workspace-relative
    text: str | None = None  # its text now (an open buffer's unsaved edits)
    position: tuple[int, int] | None = None  # 0-based (line, character)
    selection: tuple[int, int, int, int] | None = None  # (start line, char, end line, char)
    mentions: list[Mention] = field(default_factory=list)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)  # LSP shape, for @problems
    recent: Sequence[RecentRegion] = ()
    previous: str = ""  # the conversation's previous question (for the search)


@dataclass
class Gathered:
    pieces: list[Piece] = field(default_factory=list)
    notices: list[tuple[str, str]] = field(default_factory=list)  # (kind, message)
    tokens: int = 0  # the budget spent: the pieces, and those already in the conversation
    budget: int = 0
    in_history: int = 0  # pieces this turn would send that an earlier turn in the window sent


class Gatherer:
    """Collects one turn's pieces; `chars_per_token` prices them against `budget` tokens."""

    def __init__(
        self,
        session: ChatSession,
        gate: Gate,
        pieces: PieceRedactor | None,
        budget: int,
        chars_per_token: float,
        already: set[Span],
        root: Any,
        scan_timeout_s: float = 2.0,
        documents: DocumentCache | None = None,
        read_open: Callable[[str], str | None] | None = None,
    ) -> None:
        self.session = session
        self.documents = documents  # files' texts kept across turns (a stat checks each)
        # path -> an open buffer's text: a region the user just edited is judged with the buffer it
        # was cut from, not the file on disk (an unsaved row of a dump has no INSERT line there).
        self.read_open = read_open
        self.gate = gate
        self.redactor = pieces
        self.ratio = max(chars_per_token, 1.0)
        self.already: dict[str, list[tuple[int, int]]] = {}  # sent spans by path: looked up per hit
        for path, start, end in already:
            self.already.setdefault(path, []).append((start, end))
        self.root = root
        self.out = Gathered(budget=budget)
        self._files: dict[str, str | None] = {}
        self._no_index = False
        self._named_sites: dict[str, list[Any]] | None = None  # the question's names, looked up at once
        self._counted: set[Span] = set()  # pieces already in the conversation, counted once
        self._refusals: dict[str, str | None] = {}
        self._sums: dict[str, tuple[str, list[int]]] = {}  # path -> (text, its lines' summed lengths)
        self.scan_timeout_s = scan_timeout_s

    # ---- pricing and adding ------------------------------------------------------------------

    def cost(self, text: str) -> int:
        return int(len(text) / self.ratio) + 12  # the label and fence around it

    def add(
        self, piece: Piece, explicit: bool = False, share: int = ITEM_SHARE, words: Sequence[str] = ()
    ) -> bool:
        """Add a piece within the budget; a long implicit one is cut to its share: to the lines
        that name most of `words` (a search hit's question, chat_focus), else to its head."""
        cap = self.cap(share)
        if self.sent_before(piece):
            if not explicit:
                self._count_sent(piece, cap)
            return False
        if any(_inside(piece, p) for p in self.out.pieces):
            return False
        if not explicit and self.cost(piece.text) > cap:
            piece = self.head(self.focused(piece, cap, words) if words else piece, cap)
        cost = self.cost(piece.text)
        left = self.out.budget - self.out.tokens
        if cost > left:
            if not explicit or left < 64:
                if explicit:
                    self.notice(
                        "budget", f"{piece.reason} {piece.path}: left out, the context budget is spent"
                    )
                return False
            piece = self.head(piece, left)
            self.notice(
                "budget",
                f"{piece.reason} {piece.path}: cut to lines "
                f"{piece.start_line + 1}-{piece.end_line + 1} to fit the context budget",
            )
            cost = self.cost(piece.text)
        self.out.pieces.append(piece)
        self.out.tokens += cost
        return True

    def cap(self, share: int) -> int:
        """The most an implicit item of this share of the budget may take."""
        return max(self.out.budget // share, 96)

    def _count_sent(self, piece: Piece, cap: int) -> None:
        """A piece this turn would send that an earlier turn still in the window sent: the model
        reads it there, so it counts against this turn's budget as if sent again (once). A
        follow-up about the same code then adds little new context, and the conversation's
        prefix, which the server has cached, is most of the next request."""
        span = (piece.path, piece.start_line, piece.end_line)
        if span in self._counted:
            return
        self._counted.add(span)
        cost = min(self.cost(piece.text), cap)
        if cost <= self.out.budget - self.out.tokens:
            self.out.tokens += cost
            self.out.in_history += 1

    def head(self, piece: Piece, tokens: int) -> Piece:
        """The first lines of a piece that fit `tokens` (a long function's signature and start)."""
        keep = max(1, int((tokens - 12) * self.ratio))
        lines = piece.text[:keep].split("\n")
        lines = lines[:-1] if len(lines) > 1 else lines
        last = piece.start_line + len(lines) - 1
        return Piece(piece.path, piece.start_line, last, "\n".join(lines), piece.reason, piece.symbol)

    def focused(self, piece: Piece, tokens: int, words: Sequence[str]) -> Piece:
        """The window of a piece's lines that fits `tokens` and names most of `words`."""
        lines = piece.text.split("\n")
        first, last = focus(lines, max(1, int((tokens - 12) * self.ratio)), list(words))
        if first == 0:
            return piece
        text = "\n".join(lines[first : last + 1])
        return Piece(
            piece.path, piece.start_line + first, piece.start_line + last, text, piece.reason, piece.symbol
        )

    def sent_before(self, piece: Piece) -> bool:
        """Already in the conversation: the same start (a head, or the whole) or inside a sent span."""
        return any(
            start == piece.start_line or start <= piece.start_line <= piece.end_line <= end
            for start, end in self.already.get(piece.path, ())
        )

    def notice(self, kind: str, message: str) -> None:
        if (kind, message) not in self.out.notices:
            self.out.notices.append((kind, message))

    # ---- reading and redacting ---------------------------------------------------------------

    def refusal(self, path: str) -> str | None:
        """Why a file may not be sent (the gate's judgement, asked once a path per turn)."""
        if path not in self._refusals:
            self._refusals[path] = self.gate.refusal(path)
        return self._refusals[path]

    def _gate_root(self) -> bool:
        """The gate judges paths against the root this gatherer reads from."""
        root = getattr(getattr(self.gate, "settings", None), "root", None)
        return self.root is not None and root is not None and Path(root) == Path(self.root)

    def file_text(self, path: str, current: TurnInput | None = None, opened: bool = False) -> str | None:
        """A file's text: the turn's current document's, an open buffer's (`opened`: for a region cut
        from the buffer, a recent edit), else the file on disk (what the index and git know)."""
        if current is not None and current.path == path and current.text is not None:
            return current.text
        if opened and self.read_open is not None:
            buffer = self.read_open(path)
            if buffer is not None:
                return buffer
        if path not in self._files:
            try:
                if self._refusals.get(path, "unchecked") is None and self._gate_root():
                    # The gate has judged this path this turn (inside the workspace, its real path
                    # too, and not never-send): read it as the session would, without judging again.
                    self._files[path] = (
                        self.documents.text(self.root / path)
                        if self.documents is not None
                        else read_document(self.root / path)
                    )
                else:
                    self._files[path] = self.session.read_file(path, redact=False).text
            except CodectxError as exc:
                log.info("chat context: %s", exc)
                self._files[path] = None
        return self._files[path]

    def line_start(self, path: str, text: str, line: int) -> int:
        """Where line `line` of a file's text starts (`line` = the line count: one past the end).
        The lines' lengths are summed once a file, by accumulate over map(len): no Python-level
        loop per line (files of thousands of lines, tens of files a turn)."""
        known = self._sums.get(path)
        if known is None or known[0] is not text:
            sums = (
                self.documents.sums(self.root / path, text)
                if self.documents is not None and self.root is not None
                else line_sums(text)
            )
            known = (text, sums)
            self._sums[path] = known
        return known[1][line] + line

    def line_count(self, path: str, text: str) -> int:
        self.line_start(path, text, 0)
        return len(self._sums[path][1]) - 1

    def clamped(self, path: str, text: str, first: int, last: int) -> tuple[int, int]:
        """first..last within the file (a stale hit past its end: first > last, no lines)."""
        last = min(last, self.line_count(path, text) - 1)
        return min(max(first, 0), last + 1), last

    def raw_piece(self, path: str, text: str, first: int, last: int, reason: str, symbol: str = "") -> Piece:
        """Lines first..last of a file as they are (not redacted: for choosing what to send)."""
        first, last = self.clamped(path, text, first, last)
        start, end = self.line_start(path, text, first), self.line_start(path, text, last + 1) - 1
        return Piece(path, first, last, text[start:end], reason, symbol)

    def lines_piece(
        self, path: str, text: str, first: int, last: int, reason: str, symbol: str = ""
    ) -> Piece:
        """Lines first..last of a file, redacted with the whole file around them."""
        first, last = self.clamped(path, text, first, last)
        start, end = self.line_start(path, text, first), max(0, self.line_start(path, text, last + 1) - 1)
        body = text[start:end]
        if self.redactor is not None:
            self._fresh_deadline()
            body = self.redactor.document(text, path, [(start, end)])[0]
        return Piece(path, first, last, body, reason, symbol)

    def redact(self, text: str, origin: str, message: bool = False) -> str:
        """A standalone piece redacted; `message`: a tool's message, whose quoted literals are judged
        too (PieceRedactor.message)."""
        if self.redactor is None:
            return text
        self._fresh_deadline()
        read = self.redactor.message if message else self.redactor.text
        return self.redactor.echo(read(text, origin))

    def redact_at(self, text: str, origin: str, start_line: int) -> str:
        """Lines of a file, redacted with the file around them when they are found there at
        `start_line` (a row of a dump or a table is a secret by its header far above), else alone."""
        if self.redactor is None:
            return text
        self._fresh_deadline()
        source = self.file_text(origin, opened=True)
        return self.redactor.echo(self.redactor.chunk(text, origin, start_line, source))

    def _fresh_deadline(self) -> None:
        """Each piece gets the scan's time limit (a turn gathers many, between index lookups)."""
        if self.redactor is not None:
            self.redactor.deadline = time.monotonic() + self.scan_timeout_s

    # ---- the sources, in order ---------------------------------------------------------------

    def gather(self, turn: TurnInput) -> Gathered:
        self.session.warm_up_gate()  # the rules compile once (about a second), not inside a deadline
        for mention in turn.mentions:
            self.mention(mention, turn)
        if turn.path and turn.text is not None:
            reason = self.refusal(turn.path)
            if reason is None:
                self.around_cursor(turn)
            else:  # the current file (`ask --file .env`, the editor's .env tab) left out: say so
                self.notice("refused", f"the current file {turn.path} is not sent: {reason}")
        identifiers, words = self.named(turn)
        try:  # every name's definitions in one lookup: a scan per name cost ~35 ms on Django
            self._named_sites = self.session.definitions_of([*identifiers, *words])
        except CodectxError:
            self._named_sites = None  # each lookup below fails the same way and says so
        for name in identifiers:  # `parse_config`, `Session.send`, `camelCase`: surely symbols
            self.symbol(name, "named in the question")
        # The user's recent edits before the search: its hundred hits can fill the budget.
        for region in turn.recent:
            if self.refusal(region.path) is None:
                text = self.redact_at(region.text, region.path, region.start_line)
                self.add(Piece(region.path, region.start_line, region.end_line, text, "recently edited"))
        self.searched(" ".join(x for x in (turn.message, turn.previous) if x), "search", SEARCH_K)
        for name in words:  # plain words ("scale") may be symbols too: after the search's hits
            self.symbol(name, "named in the question", sites=SITES_PER_WORD)
        self._echo_known()
        return self.out

    def _echo_known(self) -> None:
        """Mask in every piece the values found secret in any piece of this turn: a piece gathered
        early (a diagnostic quoting `Literal['hunter2...']`) does not know what a later one's
        file said."""
        if self.redactor is None:
            return
        for n, piece in enumerate(self.out.pieces):
            text = self.redactor.echo(piece.text)
            if text != piece.text:
                self.out.tokens += self.cost(text) - self.cost(piece.text)
                self.out.pieces[n] = replace(piece, text=text)

    def mention(self, m: Mention, turn: TurnInput) -> None:
        if m.kind == "file":
            self.mentioned_file(m.value, turn)
        elif m.kind == "symbol":
            if not self.symbol(m.value, "@symbol", explicit=True) and not self._no_index:
                self.notice("error", f"@symbol {m.value}: no definition of that name in the index")
        elif m.kind == "folder":
            self.folder(m.value)
        elif m.kind == "codebase":
            self.searched(m.value, "@codebase", CODEBASE_K)
        elif m.kind == "diff":
            self.diff()
        elif m.kind == "problems":
            self.problems(turn)

    def mentioned_file(self, path: str, turn: TurnInput) -> None:
        path = path.strip()
        path = path[2:] if path.startswith("./") else path
        why = self.refusal(path)
        if why is not None:
            self.notice("refused", f"@file {path} refused: {why}; it was not read")
            return
        try:
            text = (
                turn.text
                if turn.path == path and turn.text is not None
                else self.session.read_file(path, redact=False).text
            )
        except NeverSend as exc:
            self.notice("refused", f"@file {path} refused: {exc}")
            return
        except CodectxError as exc:
            # Named from the workspace: a notice is exported with the conversation, to share.
            where = f"{self.root}{os.sep}" if self.root is not None else None
            self.notice("error", f"@file {path}: {str(exc).replace(where, '') if where else exc}")
            return
        self.add(self.lines_piece(path, text, 0, max(0, len(text.splitlines()) - 1), "@file"), explicit=True)

    def around_cursor(self, turn: TurnInput) -> None:
        assert turn.path is not None and turn.text is not None
        rows = turn.text.split("\n")
        if turn.selection is not None:
            l0, c0, l1, c1 = turn.selection
            last = l1 - 1 if c1 == 0 and l1 > l0 else l1
            self.add(self.lines_piece(turn.path, turn.text, l0, last, "selection"), explicit=True)
            line, character = l0, c0
        elif turn.position is not None:
            line, character = turn.position
        else:
            return
        line = max(0, min(line, len(rows) - 1))
        scope = enclosing_definition(turn.text, language_for(turn.path), line, character)
        if scope is None:
            first, last, reason = max(0, line - 10), min(len(rows) - 1, line + 10), "around the cursor"
        else:
            first, last, reason = scope[0], scope[1], "enclosing scope"
        self.add(self.lines_piece(turn.path, turn.text, first, last, reason), share=2)

    def named(self, turn: TurnInput) -> tuple[list[str], list[str]]:
        """(identifier-like names, plain words) of the question and selection, each once."""
        words = [turn.message]
        if turn.selection is not None and turn.text is not None:
            rows = turn.text.split("\n")
            words.append("\n".join(rows[turn.selection[0] : turn.selection[2] + 1]))
        seen: list[str] = []
        for word in _WORD.findall("\n".join(words)):
            if len(word) >= 3 and word not in seen:
                seen.append(word)
        seen = seen[:MAX_NAMES]
        code = [
            w for w in seen if "_" in w or "." in w or (w[1:] != w[1:].lower() and w[1:] != w[1:].upper())
        ]
        return code, [w for w in seen if w not in code]

    def symbol(self, name: str, reason: str, explicit: bool = False, sites: int = 3) -> bool:
        try:
            if self._named_sites is not None and not explicit:
                found_sites = list(self._named_sites.get(name, ()))  # looked up with the others
            else:
                found_sites = list(self.session.definitions(name))
            if not explicit:  # a plain word matching a variable or parameter is noise
                found_sites = [d for d in found_sites if d.kind not in ("variable", "parameter", "field")]
        except CodectxError:
            self._note_no_index()
            return False
        found = False
        for site in found_sites[:sites]:
            if self.refusal(site.path) is not None:
                continue
            text = self.file_text(site.path)
            if text is not None:
                piece = self.lines_piece(site.path, text, site.start_line, site.end_line, reason, site.name)
                if piece.start_line > piece.end_line:
                    continue  # the file is shorter than when it was indexed: a stale site
                found = self.add(piece, explicit) or found or site_in(piece.span, self)
        return found

    def searched(self, query: str, reason: str, k: int) -> None:
        if not query.strip():
            return
        try:
            answer = self.session.search(query, k)
        except CodectxError:
            self._note_no_index()
            return
        explicit = reason == "@codebase"  # sent whole, never cut: no window to choose
        words = [] if explicit else terms(query)
        for rank, hit in enumerate(answer.results):
            if not explicit and self.out.budget - self.out.tokens < MIN_PIECE:
                break  # nothing more fits: the rest is neither read nor redacted
            if self.refusal(hit.path) is not None:
                continue
            text = self.file_text(hit.path)
            if text is None:
                continue
            share = ITEM_SHARE if rank < SEARCH_WHOLE else SEARCH_SHARE
            first, last = hit.start_line, hit.end_line
            if not explicit:
                # The lines to send are chosen before redacting, so that only they are redacted
                # (around them: a secret crossing their edge is still found whole); `add` cuts
                # again in the rare case the placeholders made the piece longer.
                raw = self.raw_piece(hit.path, text, first, last, reason, hit.symbol)
                if raw.start_line > raw.end_line:
                    continue  # the file is shorter than when it was indexed: a stale hit
                if self.sent_before(raw) or any(_inside(raw, p) for p in self.out.pieces):
                    self.add(raw, share=share)  # counted as already in the conversation, or skipped
                    continue
                cap = self.cap(share)
                if self.cost(raw.text) > cap:
                    raw = self.head(self.focused(raw, cap, words) if words else raw, cap)
                first, last = raw.start_line, raw.end_line
            piece = self.lines_piece(hit.path, text, first, last, reason, hit.symbol)
            self.add(piece, explicit=explicit, share=share, words=words)

    def folder(self, value: str) -> None:
        base = (self.root / value.strip().strip("/")).resolve() if self.root is not None else None
        if base is None or not base.is_dir() or not base.is_relative_to(self.root.resolve()):
            self.notice("error", f"@folder {value}: no such folder in the workspace")
            return
        files = sorted(p for p in base.rglob("*") if p.is_file() and language_for(p.name))
        left_out = 0
        for path in files:
            rel = path.relative_to(self.root.resolve()).as_posix()
            if self.refusal(rel) is not None or any(part.startswith(".") for part in rel.split("/")):
                continue
            text = self.file_text(rel)
            if text is None or not self.add(
                self.lines_piece(rel, text, 0, max(0, len(text.splitlines()) - 1), "@folder")
            ):
                left_out += text is not None
        if left_out:
            self.notice("budget", f"@folder {value}: {left_out} file(s) left out to fit the context budget")

    def diff(self) -> None:
        if self.root is None:
            return
        try:
            text = gitdiff.working_diff(self.root)
        except gitdiff.GitFailed as exc:
            self.notice("error", f"@diff: {exc}")
            return
        if not text.strip():
            self.notice("error", "@diff: the working tree has no changes")
        sendable = []
        for section in gitdiff.sections(text):
            # A rename or copy is judged on both names: `git mv .pgpass hosts.txt` shows .pgpass's lines.
            refused = next((p for p in sorted(section.paths) if self.refusal(p) is not None), None)
            if refused is not None:
                self.notice("refused", f"@diff: the changes to {refused} were left out (never-send file)")
                continue
            sendable.append(section)
        if self.redactor is not None:
            unchecked = self._learn_hunks(sendable)
            for path in sorted(unchecked):
                self.notice(
                    "refused",
                    f"@diff: the changes to {path} were left out (the file could not be read to check them)",
                )
            sendable = [s for s in sendable if s.path not in unchecked]
        for section in sendable:
            first, last = section.changed_lines()
            self.add(
                Piece(section.path, first, last, self.redact(section.text, section.path), "@diff"),
                explicit=True,
            )

    def _learn_hunks(self, sections: list[gitdiff.Section]) -> set[str]:
        """Judge each hunk's lines with its file around them, as a piece is judged (a changed line
        inside a key block shows the key's lines but not its BEGIN line): the file now for the new
        side, HEAD's version for the old one (never an open buffer: the diff's lines are the disk's).
        Returns the paths of sections a side of which could not be read (a file over the size a
        document is read at, git failing): judged alone, a dump's changed row is no secret without
        its INSERT line, so they are left out."""
        assert self.redactor is not None and self.root is not None
        try:
            heads = gitdiff.head_texts(self.root, [s.old_path for s in sections if s.old_ranges])
        except gitdiff.GitFailed as exc:
            log.info("chat context: @diff: %s", exc)
            heads = {}
        unchecked: set[str] = set()
        for section in sections:
            self._fresh_deadline()
            now = self.file_text(section.path)
            if now is not None:
                self.redactor.learn(now, section.path, _hunk_cuts(now, section.path, section.new_ranges))
            elif any(count for _, count in section.new_ranges):
                unchecked.add(section.path)
            before = heads.get(section.old_path)
            if before is not None:
                self.redactor.learn(
                    before, section.old_path, _hunk_cuts(before, section.old_path, section.old_ranges)
                )
            elif any(count for _, count in section.old_ranges):
                unchecked.add(section.path)
        return unchecked

    def problems(self, turn: TurnInput) -> None:
        if not turn.path or not turn.diagnostics:
            self.notice("error", "@problems: the editor sent no diagnostics for the current file")
            return
        if self.refusal(turn.path) is not None:
            self.notice("refused", f"@problems: {turn.path} is a never-send file; its problems were left out")
            return
        if len(turn.diagnostics) > MAX_PROBLEMS:
            self.notice(
                "budget", f"@problems: the first {MAX_PROBLEMS} of {len(turn.diagnostics)} diagnostics"
            )
        rows, lines = [], []
        for d in turn.diagnostics[:MAX_PROBLEMS]:
            line = int(((d.get("range") or {}).get("start") or {}).get("line", 0))
            severity = {1: "error", 2: "warning", 3: "info", 4: "hint"}.get(d.get("severity") or 1, "error")
            rows.append(f"line {line + 1}: {severity}: {d.get('message', '')}")
            lines.append(line)
        # The diagnosed lines' secrets are learned first: a message may quote a value found only
        # with its line (`Type "Literal['...']" is not assignable` under `DB_PASSWORD: int = ...`).
        source = self.file_text(turn.path, turn)
        if source is not None and self.redactor is not None:
            self._fresh_deadline()
            self.redactor.learn(source, turn.path, _line_cuts(source, _line_runs(lines)))
        text = self.redact("\n".join(rows), turn.path, message=True)
        self.add(Piece(turn.path, min(lines), max(lines), text, "@problems"), explicit=True)

    def _note_no_index(self) -> None:
        if not self._no_index:
            self._no_index = True
            self.notice("budget", "no index yet: the context has the current file and mentions only")


def site_in(span: Span, gatherer: Gatherer) -> bool:
    """The definition was already sent earlier in the conversation (it counts as found)."""
    return gatherer.sent_before(Piece(span[0], span[1], span[2], "", ""))


def _inside(a: Piece, b: Piece) -> bool:
    return a.path == b.path and b.start_line <= a.start_line and a.end_line <= b.end_line


def _hunk_cuts(text: str, path: str, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Where a diff's hunks are judged in their file: their lines, or the whole of a notebook (an
    output is a secret by the cell that shows it, which may be far from the changed lines)."""
    return [(0, len(text))] if is_notebook(path) else _line_cuts(text, ranges)


def _line_cuts(text: str, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Offsets of 1-based (first, count) line ranges in `text`."""
    starts = [0, *(m.end() for m in re.finditer("\n", text))]
    cuts = []
    for first, count in ranges:
        a = min(max(first - 1, 0), len(starts) - 1)
        b = min(a + max(count, 1), len(starts))
        cuts.append((starts[a], starts[b] if b < len(starts) else len(text)))
    return cuts


def _line_runs(lines: Sequence[int], gap: int = 8) -> list[tuple[int, int]]:
    """0-based line numbers as 1-based (first, count) runs, lines up to `gap` apart in one run:
    a file's many diagnostics are scanned as a few regions, not one region each."""
    runs: list[list[int]] = []
    for line in sorted(set(lines)):
        if runs and line - runs[-1][1] <= gap:
            runs[-1][1] = line
        else:
            runs.append([line, line])
    return [(a + 1, b - a + 1) for a, b in runs]
