"""One workspace's session: the single entry every surface calls (shell, language server, chat
(codectx.app.chat, over a session), later MCP).

A session holds what a workspace's requests need: its settings, its index (through an
`IndexSource`, so the language server can reopen the store after a reindex while the shell
opens it once), the query embedder, the model-server client with its privacy gate, the
redaction of each request's pieces, and the last request it sent (for "show context").

    session = WorkspaceSession(settings, index=source, embedder=lambda: embedder)
    ctx = session.context("pkg/mod.py", text, line, character)      # blocking: a worker thread
    done = await session.completer.complete("pkg/mod.py", text, line, character, context=ctx)
    edit = await session.refactor_edit("pkg/mod.py", text, (l0, c0, l1, c1), "use pathlib", context=ctx)
    prose = await session.explain("pkg/mod.py", text, first_line, last_line)
    hits = session.search("parse the config")                        # blocking: a worker thread
    sites = session.definitions("Session.send")                       # blocking
    found = session.definitions_at("pkg/mod.py", 12, 8)                # blocking; resolved via imports
    uses = session.references("send")                                  # blocking
    figures = session.index_figures()                                  # blocking
    lines = session.read_file("pkg/mod.py", 10, 40)                   # blocking; redacted
    await session.aclose()

Which methods block and which await is in their type: `context`, `search`, `definitions`,
`definitions_at`, `references`, `index_figures`, `read_file`, `warm_up_gate` and what
`session.handout` does (tool results' redaction and audit: codectx.app.handout) use the CPU and
the disk (call them off an event loop); the `async` ones talk to the model server and are
cancellable (cancelling closes the stream, so vLLM aborts the request). Completions are the
session's `completer` (codectx.app.completion.Completer: `complete`, `dry_run`), called directly,
so their parameters are declared once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Unpack

from codectx.app import explain as explaining
from codectx.app import refactor as refactoring
from codectx.app.completion import Completer
from codectx.app.files import read_confined
from codectx.app.handout import Handout
from codectx.app.index import (
    AssembledContext,
    DefinitionMatch,
    DefinitionSite,
    IndexFigures,
    NameLookup,
    QueryEmbedder,
    RecentRegion,
    ReferenceSite,
    SearchAnswer,
    Searcher,
    Store,
    assemble,
    definitions_at,
    in_memory,
    index_figures,
    references_to,
    searcher,
    snapshot_phase,
)
from codectx.app.index_types import SearchFilters
from codectx.app.model import ServedModel
from codectx.app.redaction import OpenText, RequestRedaction
from codectx.app.refactor import Selection
from codectx.app.results import Explanation, FileText, RefactorEdit, SentRequest
from codectx.backend.client import BackendClient
from codectx.errors import CodectxError
from codectx.settings import Settings

if TYPE_CHECKING:
    from codectx.retriever.snapshot import IndexSnapshot

log = logging.getLogger(__name__)

EmbedderSource = Callable[[], "QueryEmbedder | None"]  # the query embedder, loaded at first call


class IndexSource(Protocol):
    """Where a session finds its workspace's index."""

    def open_store(self) -> Store | None:
        """The index as it is now; None while there is none yet (context then cuts the document)."""
        ...

    def context_source(self) -> Store | IndexSnapshot | None:
        """Where completion context reads the index: the store, or, while a starting editor opens
        it, index lookups over its lookup files (codectx.app.keeper.IndexKeeper.context_source)."""
        ...


class NoIndex(CodectxError):
    """A request needs the index and the workspace has none yet."""


class WorkspaceSession:
    """Completions, refactors, explanations, context and search for one workspace."""

    def __init__(
        self,
        settings: Settings,
        *,
        index: IndexSource,
        embedder: EmbedderSource,
        client: BackendClient | None = None,
        read_open: OpenText | None = None,
        preload_search: bool = False,
    ) -> None:
        self.settings = settings
        self.index = index
        self.embedder = embedder
        self.client = client if client is not None else BackendClient(settings)
        self.redaction = RequestRedaction(settings, self.client.gate, read_open)
        self.model = ServedModel(settings, self.client)
        # Completions (`complete`, `dry_run`): the completer is their one owner, called directly.
        self.completer = Completer(settings, self.model, self.redaction, self._remember)
        self.handout = Handout(settings, self.redaction)  # what a tool client (MCP) is handed
        self.last: SentRequest | None = None  # what the last model request sent (or would have)
        self._preload = preload_search
        self._searcher: tuple[Store, Searcher] | None = None

    def _remember(self, sent: SentRequest) -> None:
        self.last = sent

    # ---- the index (blocking: CPU and disk) ---------------------------------------------------

    def context(
        self, path: str, text: str, line: int, character: int, *, recent: Sequence[RecentRegion] = ()
    ) -> AssembledContext | None:
        """Completion context at a 0-based cursor of `path`; None when there is no index yet (the
        prompt is then cut from the document alone)."""
        source = self.index.context_source()
        if source is None:
            return None
        return assemble(
            source, self.settings, path, text, line, character, recent=recent, embedder=self.embedder()
        )

    def search(self, query: str, k: int | None = None, **filters: Unpack[SearchFilters]) -> SearchAnswer:
        """Hybrid search of the workspace index (it may embed the query); `filters`: languages, glob
        and dense, as Searcher.search takes them."""
        store = self._store()
        if self._searcher is None or self._searcher[0] is not store:
            self._searcher = (store, searcher(store, self.settings, self.embedder, preload=self._preload))
        return self._searcher[1].search(query, k, **filters)

    def definitions(self, name: str) -> list[DefinitionSite]:
        """Where `name` (a short name such as `send`, or a qualified one such as `Session.send`) is
        defined in the workspace, by path and line."""
        return list(self._names().symbols_named(name))

    def definitions_of(self, names: Sequence[str]) -> dict[str, list[DefinitionSite]]:
        """`definitions` of several names at once: one index scan for all of them, or in-memory
        lookups in a preloading session. Names with no definition are left out."""
        store = self._store()
        if self._in_memory(store):
            lookup = in_memory(store)
            return {n: list(found) for n in dict.fromkeys(names) if (found := lookup.symbols_named(n))}
        return {n: list(found) for n, found in store.symbols_named_any(names).items()}

    def definitions_at(
        self, path: str, line: int, character: int, *, text: str | None = None
    ) -> list[DefinitionMatch]:
        """Definitions of the name at a 0-based (line, character) of the workspace file `path`
        (confined, never-send refused; `text`: the document's unsaved text), best first."""
        whole = self.read_file(path, redact=False)  # confined, never-send refused; stays here
        document = whole.text if text is None else text
        return definitions_at(self._names(), whole.path, document, line, character)

    def references(self, name: str, limit: int = 100) -> list[ReferenceSite]:
        """Where `name` (its last part when qualified) is used in the workspace, by name."""
        return references_to(self._store(), name, limit=limit)

    def index_figures(self) -> IndexFigures:
        """How much the index holds: files, chunks, symbols, vectors done and pending."""
        return index_figures(self._store())

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None, *, redact: bool = True
    ) -> FileText:
        """Lines of a workspace file (0-based, inclusive; default all) for a surface to show or send:
        confined to the workspace, never-send files refused, secrets redacted unless `redact=False`
        (for text that stays on this machine)."""
        return read_confined(self.settings, self.redaction, path, start_line, end_line, redact=redact)

    def _store(self) -> Store:
        store = self.index.open_store()
        if store is None:
            raise NoIndex("no index is ready yet; indexing runs in the background (see progress)")
        return store

    def _names(self) -> NameLookup:
        """Where names are looked up: the in-memory snapshot in a long-lived (preloading) session."""
        store = self._store()
        return in_memory(store) if self._in_memory(store) else store

    def _in_memory(self, store: Store) -> bool:
        """Name lookups go to the snapshot in a preloading session, and wherever the snapshot is
        loading or loaded in the background (the language server): Arrow copies, then the loaded
        tables, instead of a LanceDB scan per name."""
        return self._preload or snapshot_phase(store) != "direct"

    def warm_up_gate(self) -> None:
        """The privacy gate compiles its rules and loads its key on first use (about a second)."""
        self.client.gate.prepare("/v1/completions", {"prompt": "warm up"}, [])

    # ---- the model (async, cancellable) -----------------------------------------------------

    async def refactor_edit(
        self,
        path: str,
        text: str,
        selection: Selection,
        instruction: str,
        *,
        context: AssembledContext | None = None,
    ) -> RefactorEdit:
        """The replacement for `selection` = (start line, start char, end line, end char), 0-based, by a
        free-text instruction (`.code`: the new text); secrets the model saw as placeholders are put
        back. EditRefused when the file would no longer parse (unless it did not parse before either)."""
        try:
            ask = refactoring.RefactorAsk(path, text, selection, instruction, context)
            edit = await refactoring.refactor_edit(self.model, self.redaction, ask)
        except refactoring.EditRefused as exc:  # the request was made all the same
            self.last = exc.sent
            raise
        self.last = edit.sent
        return edit

    async def explain(self, path: str, text: str, start_line: int, end_line: int) -> Explanation:
        """The model's explanation of lines start_line..end_line (0-based, inclusive) of `path`."""
        answer = await explaining.explain(self.model, self.redaction, path, text, start_line, end_line)
        self.last = answer.sent
        return answer

    async def ask_server(self) -> None:
        """The model server's answers a first completion needs before its request, asked ahead
        (model name, stop-token ids, prompt room; built-in samples only, no code)."""
        await self.completer.ask_server()

    async def warm_up(self) -> None:
        """Ask the server once for its model and stop-token ids, and run the scanner once. No code."""
        await self.completer.warm_up()

    # Chat is codectx.app.chat.ChatService: conversations whose turns run on a session.

    # ---- lifetime -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> WorkspaceSession:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
