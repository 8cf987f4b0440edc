"""What each MCP tool answers, shaped from the root's session and released by its Handout.

Every answer is one JSON object; the bytes an agent gets are exactly the ones the egress gate let
out and the audit log recorded (`codectx.app.handout`). Lines in answers and arguments are
1-based and inclusive, columns 1-based, paths relative to the root. Each result's text and each
answer are cut to the limits below (an agent's context is small and every byte is egress); a cut
says so (`truncated`, a note).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from codectx.app.files import NeverSend
from codectx.app.handout import Released
from codectx.app.index import search_filters
from codectx.app.session import NoIndex
from codectx.errors import CodectxError, UsageError
from codectx.indexer.errors import IndexCorrupt
from codectx.mcp.workspaces import Roots, Workspace
from codectx.positions import Cursor, to_zero_based
from codectx.privacy.egress import SourceSpan

T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    max_k: int = 50  # search results
    max_text_chars: int = 4000  # of one result's text (a long function is cut, and says so)
    max_read_lines: int = 400  # read_code per call (ask again from the next line)
    max_definitions: int = 20
    max_definition_lines: int = 150
    max_references: int = 200
    max_answer_chars: int = 150_000  # whole answer (privacy.max_request_bytes still applies)

    @property
    def max_read_chars(self) -> int:
        """read_code's text per call, in whole lines: half the answer limit (the rest is JSON)."""
        return self.max_answer_chars // 2


class ToolFailed(CodectxError):
    """A codectx error as the agent is told it: workspace paths, not this machine's."""


class IndexUnreadable(CodectxError):
    """The index failed while answering (damaged files): it is checked and rebuilt."""


# Where an untranslated damaged index's errors come from (the store translates its own reads
# into IndexCorrupt; the memory-mapped lookup files are read by Arrow directly).
_STORAGE_MODULES = ("lancedb", "lance", "pyarrow")


def _damage(exc: BaseException) -> bool:
    """A failure that says the index's files are bad: any OSError or undecodable JSON (a column
    codectx reads back), or whatever the storage libraries raised."""
    return isinstance(exc, (OSError, json.JSONDecodeError)) or _from_storage(exc)


def _from_storage(exc: BaseException) -> bool:
    """Whether `exc` was raised inside the storage libraries (the innermost frame of its traceback
    is theirs), not by codectx's own code, whose KeyError or ValueError is a bug to report."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    module = str(tb.tb_frame.f_globals.get("__name__") or "")
    return module.split(".", 1)[0] in _STORAGE_MODULES


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


def _whole_lines(text: str, limit: int) -> tuple[str, int, bool]:
    """(text, lines kept, first line cut) of `text` cut to at most `limit` characters at a line's
    end, so that an answer's end_line is the last line it holds; only a first line longer than
    `limit` by itself is cut inside (it is all there is to give)."""
    if len(text) <= limit:
        return text, text.count("\n") + 1, False
    end = text.rfind("\n", 0, limit + 1)  # the newline ending the last line that fits
    if end < 0:
        return text[:limit], 1, True
    return text[:end], text.count("\n", 0, end) + 1, False


class Tools:
    """The six tools over a server's roots."""

    def __init__(self, roots: Roots, limits: Limits | None = None) -> None:
        self.roots = roots
        self.limits = limits or Limits()

    # ---- helpers ----------------------------------------------------------------------------

    def _run(self, ws: Workspace, work: Callable[[], T]) -> T:
        """One session call: serialised per root; a missing index and a damaged one are errors an
        agent can read (the index is being built, or checked and rebuilt)."""
        with ws.lock:
            try:
                return work()
            except NoIndex:
                index = ws.index.keeper
                why = index.error or index.open_error or "it has not been built yet"
                state = "being built" if index.state == "indexing" else f"not available: {why}"
                raise NoIndex(f"the index of {ws.name} is {state}; try again shortly") from None
            except IndexCorrupt:  # the store's translation of a LanceDB/Arrow failure
                raise self._damaged(ws) from None
            except CodectxError as exc:
                message = str(exc).replace(f"{ws.root}{os.sep}", "").replace(str(ws.root), ws.name)
                if message == str(exc):
                    raise
                raise ToolFailed(message) from None
            except (OSError, RuntimeError, ValueError, KeyError) as exc:
                if not _damage(exc):
                    raise  # codectx's own failure: the SDK reports it; a rebuild would hide it
                raise self._damaged(ws) from None

    @staticmethod
    def _damaged(ws: Workspace) -> IndexUnreadable:
        """A read of the index failed on its files: a check (which rebuilds it) starts now."""
        ws.index.damaged()
        return IndexUnreadable(
            f"the index of {ws.name} could not be read; it is being checked and rebuilt, try again shortly"
        )

    def _fit(self, payload: dict[str, Any], key: str, notes: list[str]) -> dict[str, Any]:
        """Drop results from the end until the answer is within max_answer_chars."""
        items = payload[key]
        dropped = 0
        while items and len(json.dumps(payload, ensure_ascii=False)) > self.limits.max_answer_chars:
            items.pop()
            dropped += 1
        if dropped:
            notes.append(f"{dropped} more results left out for the answer size limit")
        return payload

    def _snippet(
        self, ws: Workspace, where: tuple[str, int, int], about: dict[str, Any], text: str
    ) -> dict[str, Any]:
        """One result row: `where` (path, 0-based first and last line) shown 1-based, `about` it, and
        its text cut at max_text_chars (`truncated` then says so)."""
        path, start_line, end_line = where
        shown, cut = _cut(text, self.limits.max_text_chars)
        row: dict[str, Any] = {
            "path": self.roots.shown(ws, path),
            "start_line": start_line + 1,
            "end_line": end_line + 1,
            **about,
            "text": shown,
        }
        if cut:
            row["truncated"] = True
        return row

    def _position(self, ws: Workspace, rel: str, text: str, line: int, character: int) -> tuple[int, int]:
        """The 0-based place of an agent's 1-based line and character in `text`; past the end of
        the file or of the line is an error in the agent's numbers, as on the command line
        (answering for another place would look like an answer for this one)."""
        return to_zero_based(Cursor(rel, line, character), text, self.roots.shown(ws, rel))

    def _spans(self, rows: list[dict[str, Any]], rels: list[str]) -> list[SourceSpan]:
        return [
            SourceSpan(rel, row["start_line"] - 1, row["end_line"] - 1)
            for row, rel in zip(rows, rels, strict=True)
        ]

    # ---- the tools --------------------------------------------------------------------------

    def search_code(
        self,
        query: str,
        k: int = 10,
        glob: str | None = None,
        language: str | None = None,
        root: str | None = None,
    ) -> Released:
        ws = self.roots.named(root)
        if not query.strip():
            raise UsageError("give a query: words, an identifier or a description of the code")
        k = max(1, min(k, self.limits.max_k))
        dense = ws.settings.index.embed
        languages, glob = search_filters([language] if language else None, glob)
        answer = self._run(
            ws, lambda: ws.session.search(query, k, languages=languages, glob=glob, dense=dense)
        )
        hits = self._run(ws, lambda: ws.session.handout.redacted(answer.results))
        rows, rels = [], []
        for hit, text in hits:
            about = {
                "symbol": hit.qualname or hit.symbol,
                "kind": hit.kind,
                "score": round(float(hit.score), 4),
            }
            rows.append(self._snippet(ws, (hit.path, hit.start_line, hit.end_line), about, text))
            rels.append(hit.path)
        notes = list(answer.notes)
        if answer.vectors_pending and dense:
            notes.append(
                f"{answer.vectors_pending} chunks have no vector yet: results come from full text and "
                "symbol names for those (embedding runs in the background)"
            )
        payload: dict[str, Any] = {"query": query, "results": rows, "notes": notes}
        if dense:
            payload["vectors_pending"] = answer.vectors_pending
        self._fit(payload, "results", notes)
        arguments = {"query": query, "k": k, "glob": glob, "language": language, "root": root}
        spans = self._spans(payload["results"], rels[: len(payload["results"])])
        return ws.session.handout.release("search_code", arguments, payload, spans)

    def find_definition(
        self,
        symbol: str | None = None,
        path: str | None = None,
        line: int | None = None,
        character: int = 1,
        root: str | None = None,
    ) -> Released:
        if path:
            if line is None:
                raise UsageError("with a path, give the 1-based line (and character) of the name")
            ws, rel = self.roots.locate(path)
            whole = self._run(ws, lambda: ws.session.read_file(rel, redact=False))  # stays here
            row0, col0 = self._position(ws, rel, whole.text, line, character)
            found = self._run(ws, lambda: ws.session.definitions_at(rel, row0, col0, text=whole.text))
            sites = [(m.site, m.how) for m in found]
        elif symbol and symbol.strip():
            ws = self.roots.named(root)
            sites = [(s, "name") for s in self._run(ws, lambda: ws.session.definitions(symbol.strip()))]
        else:
            raise UsageError("give a symbol name (e.g. Session.send), or a path and a line")
        rows, rels, notes = [], [], []
        for site, how in sites[: self.limits.max_definitions]:
            last = min(site.end_line, site.start_line + self.limits.max_definition_lines - 1)
            try:
                body = self._run(ws, partial(ws.session.read_file, site.path, site.start_line, last))
            except NeverSend:
                notes.append(f"a definition in {self.roots.shown(ws, site.path)} is in a never-send file")
                continue
            except UsageError:  # the file changed or went since it was indexed
                continue
            text, cut = _cut(body.text, self.limits.max_text_chars)
            row: dict[str, Any] = {
                "path": self.roots.shown(ws, site.path),
                "start_line": site.start_line + 1,
                "end_line": body.end_line + 1,
                "symbol": site.qualname or site.name,
                "kind": site.kind,
                "language": site.language,
                "resolved_by": how,
                "text": text,
            }
            if cut or last < site.end_line:
                row["truncated"] = True
                row["definition_end_line"] = site.end_line + 1
            rows.append(row)
            rels.append(site.path)
        if len(sites) > self.limits.max_definitions:
            notes.append(f"{len(sites) - self.limits.max_definitions} more definitions left out")
        if not rows and not notes:
            notes.append("no definition found in the index")
        payload: dict[str, Any] = {"definitions": rows, "notes": notes}
        self._fit(payload, "definitions", notes)
        arguments = {"symbol": symbol, "path": path, "line": line, "character": character, "root": root}
        spans = self._spans(payload["definitions"], rels[: len(payload["definitions"])])
        return ws.session.handout.release("find_definition", arguments, payload, spans)

    def find_references(self, symbol: str, limit: int = 50, root: str | None = None) -> Released:
        ws = self.roots.named(root)
        if not symbol.strip():
            raise UsageError("give a symbol name, e.g. send or Session.send")
        limit = max(1, min(limit, self.limits.max_references))
        refs = self._run(ws, lambda: ws.session.references(symbol, limit))
        rows, rels, notes = [], [], []
        never: set[str] = set()
        for ref in refs:
            if ref.path in never:
                continue
            try:
                line = self._run(ws, partial(ws.session.read_file, ref.path, ref.line, ref.line))
            except NeverSend:
                never.add(ref.path)
                continue
            except UsageError:
                continue
            text, _ = _cut(line.text, 400)
            rows.append(
                {
                    "path": self.roots.shown(ws, ref.path),
                    "start_line": ref.line + 1,
                    "end_line": ref.line + 1,
                    "column": ref.column + 1,
                    "symbol": ref.chain or ref.name,
                    "kind": "reference",
                    "text": text,
                }
            )
            rels.append(ref.path)
        if never:
            notes.append(f"uses in {len(never)} never-send files left out")
        if len(refs) >= limit:
            notes.append(
                f"stopped at {limit} uses; pass a higher limit (at most {self.limits.max_references})"
            )
        notes.append("matched by name: a use of another symbol with the same name counts too")
        payload: dict[str, Any] = {"symbol": symbol, "references": rows, "notes": notes}
        self._fit(payload, "references", notes)
        spans = self._spans(payload["references"], rels[: len(payload["references"])])
        arguments = {"symbol": symbol, "limit": limit, "root": root}
        return ws.session.handout.release("find_references", arguments, payload, spans)

    def get_context(self, path: str, line: int, character: int = 1) -> Released:
        ws, rel = self.roots.locate(path)
        whole = self._run(ws, lambda: ws.session.read_file(rel, redact=False))  # stays here
        row0, col0 = self._position(ws, rel, whole.text, line, character)
        ctx = self._run(ws, lambda: ws.session.context(whole.path, whole.text, row0, col0))
        if ctx is None:
            raise NoIndex(f"the index of {ws.name} is not built yet; try again shortly")
        handout = ws.session.handout
        prefix, suffix = handout.around_cursor(whole.path, whole.text, row0, col0, ctx.prefix, ctx.suffix)
        limit = self.limits.max_text_chars * 2
        items = []
        rels = []
        for item, text in self._run(ws, lambda: handout.redacted(ctx.items)):
            about = {"symbol": item.symbol, "kind": item.reason, "tokens": item.tokens}
            items.append(self._snippet(ws, (item.path, item.start_line, item.end_line), about, text))
            rels.append(item.path)
        notes = list(ctx.notes)
        payload: dict[str, Any] = {
            "path": self.roots.shown(ws, whole.path),
            "line": line,
            "character": character,
            "prefix": prefix[-limit:],
            "suffix": suffix[:limit],
            "items": items,
            "budget": ctx.budget.as_dict(),
            "notes": notes,
        }
        self._fit(payload, "items", notes)
        spans = self._spans(payload["items"], rels[: len(payload["items"])])
        spans.append(SourceSpan(whole.path, ctx.prefix_start_line, max(ctx.suffix_end_line, row0)))
        arguments = {"path": path, "line": line, "character": character}
        return handout.release("get_context", arguments, payload, spans)

    def read_code(self, path: str, start_line: int = 1, end_line: int | None = None) -> Released:
        ws, rel = self.roots.locate(path)
        if end_line is not None and end_line < start_line:
            raise UsageError(f"end_line {end_line} is before start_line {start_line}")
        first = start_line - 1
        most = first + self.limits.max_read_lines - 1
        last = most if end_line is None else min(end_line - 1, most)
        body = self._run(ws, lambda: ws.session.read_file(rel, first, last + 1))  # one more: is there?
        text, end = body.text, body.end_line
        if end > last:
            text, end = text.rsplit("\n", 1)[0], last
        asked_end = end
        text, kept, line_cut = _whole_lines(text, self.limits.max_read_chars)
        end = body.start_line + kept - 1
        payload: dict[str, Any] = {
            "path": self.roots.shown(ws, body.path),
            "start_line": body.start_line + 1,
            "end_line": end + 1,
            "text": text,
            "redacted": body.redacted,
        }
        notes: list[str] = []
        if line_cut:
            notes.append(
                f"line {end + 1} is longer than {self.limits.max_read_chars:,} characters: only its "
                "start is here"
            )
        more = end < asked_end or (body.end_line > last and (end_line is None or end_line - 1 > last))
        if more:
            cap = f"at most {self.limits.max_read_lines} lines and {self.limits.max_read_chars:,} characters"
            notes.append(f"more lines follow; ask again from line {end + 2} ({cap} a call)")
        if notes:
            payload["truncated"] = True
            payload["notes"] = notes
        arguments = {"path": path, "start_line": start_line, "end_line": end_line}
        spans = [SourceSpan(body.path, body.start_line, end)]
        return ws.session.handout.release("read_code", arguments, payload, spans)

    def index_status(self, wait: bool = False, wait_s: float = 120.0) -> Released:
        roots = []
        for ws in self.roots.workspaces:
            finished = ws.index.wait(wait_s) if wait else True
            entry: dict[str, Any] = {
                "root": ws.name,
                "state": ws.index.keeper.state,
                "vectors": "on" if ws.settings.index.embed else "off (full text and symbol names only)",
            }
            if not finished:
                entry["notes"] = [f"the refresh did not finish within {wait_s:g} s; it goes on"]
            if ws.index.keeper.error:
                entry["error"] = ws.index.keeper.error
            try:
                figures = self._run(ws, ws.session.index_figures)
            except CodectxError as exc:
                entry["available"] = False
                entry["problem"] = str(exc)
            else:
                entry.update(
                    available=True,
                    files=figures.files,
                    chunks=figures.chunks,
                    symbols=figures.symbols,
                    last_indexed=figures.last_indexed,
                )
                if ws.settings.index.embed:
                    entry.update(vectors_done=figures.vectors_done, vectors_pending=figures.vectors_pending)
            roots.append(entry)
        first = self.roots.workspaces[0]
        return first.session.handout.release("index_status", {"wait": wait}, {"roots": roots}, [])
