"""The application layer's one door to the index and the retriever (codectx.indexer, codectx.retriever).

Everything in codectx.app, codectx.lsp, codectx.backend and the shell commands that needs the
index, the embedder, context assembly, search, parsing or background indexing goes through
this module; nothing there imports indexer/ or retriever/ directly. What comes back is typed
by the Protocols below, so callers depend on the shape, not on the concrete classes (mypy
checks that the concrete ones have it, here, where they are returned).

The heavy modules (LanceDB, tree-sitter, onnxruntime) are imported inside the functions, at
first use: importing codectx.app costs nothing, and the language server pays for them in a
worker thread while it warms up (`warm_imports`), never on its event loop.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

# The retriever's request errors, re-exported for the shell commands.
from codectx.retriever.errors import BadRequest as BadRequest
from codectx.retriever.errors import UnknownFile as UnknownFile
from codectx.settings import Settings

if TYPE_CHECKING:  # the concrete type, for a cast below only
    from codectx.retriever.context import RecentEdit

log = logging.getLogger(__name__)

# What the language server imports ahead of the first request (LanceDB and parsers take seconds).
HEAVY_MODULES = (
    "codectx.indexer.store",
    "codectx.indexer.parse",
    "codectx.retriever.context",
)


class DefinitionSite(Protocol):
    """Where a symbol is defined (codectx.indexer.model.Definition); lines 0-based, inclusive."""

    @property
    def name(self) -> str: ...
    @property
    def qualname(self) -> str: ...
    @property
    def kind(self) -> str: ...  # function, method, class, interface, struct, enum, variable, ...
    @property
    def path(self) -> str: ...
    @property
    def language(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...


class Store(Protocol):
    """An open index (codectx.indexer.store.IndexStore); the app hands it to the retriever, and asks
    it for definitions by name."""

    def symbols_named(self, name: str) -> Sequence[DefinitionSite]: ...
    def symbols_in_file(self, path: str) -> Sequence[DefinitionSite]: ...
    def file_records(self) -> Mapping[str, Any]: ...  # indexed workspace paths -> their record


class QueryEmbedder(Protocol):
    """Turns a query into a vector (codectx.indexer.embedder.Embedder)."""

    @property
    def model_id(self) -> str: ...

    def embed_query(self, text: str) -> Any: ...


class ContextPiece(Protocol):
    """One item of completion context (codectx.retriever.context.ContextItem)."""

    @property
    def path(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def text(self) -> str: ...


class RankedPiece(ContextPiece, Protocol):
    """A context item as the retriever ranked it: why it is there and what it costs."""

    @property
    def symbol(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def tokens(self) -> int: ...
    @property
    def why(self) -> str: ...  # for people (`codectx context --explain`)

    def as_dict(self, text: bool = True) -> dict[str, Any]: ...


class RecentRegion(Protocol):
    """A region the user edited lately (codectx.retriever.context.RecentEdit; make one with `recent_edit`)."""

    @property
    def path(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def text(self) -> str: ...


class ContextBudget(Protocol):
    def as_dict(self) -> dict[str, Any]: ...


class AssembledContext(Protocol):
    """What the retriever assembled for a cursor (codectx.retriever.context.ContextResult)."""

    @property
    def items(self) -> Sequence[RankedPiece]: ...
    @property
    def prefix(self) -> str: ...
    @property
    def suffix(self) -> str: ...
    @property
    def prefix_start_line(self) -> int: ...
    @property
    def suffix_end_line(self) -> int: ...
    @property
    def budget(self) -> ContextBudget: ...
    @property
    def notes(self) -> Sequence[str]: ...

    def as_dict(self, text: bool = True) -> dict[str, Any]: ...


class SearchHit(Protocol):
    """One search result (codectx.retriever.search.SearchResult)."""

    @property
    def path(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def symbol(self) -> str: ...
    @property
    def qualname(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def text(self) -> str: ...

    def as_dict(self, show: bool = False) -> dict[str, Any]: ...


class SearchAnswer(Protocol):
    """A search's results and how complete they are (codectx.retriever.search.SearchResponse)."""

    @property
    def results(self) -> Sequence[SearchHit]: ...
    @property
    def partial(self) -> bool: ...
    @property
    def vectors_pending(self) -> int: ...
    @property
    def notes(self) -> Sequence[str]: ...
    @property
    def elapsed_ms(self) -> float: ...


class Searcher(Protocol):
    """Hybrid search over one index (codectx.retriever.search.HybridSearcher)."""

    def search(
        self,
        query: str,
        k: int | None = None,
        languages: Sequence[str] | None = None,
        glob: str | None = None,
        dense: bool = True,
    ) -> SearchAnswer: ...


class IndexRun(Protocol):
    """What an indexing run reports (codectx.indexer.report.IndexReport)."""

    @property
    def files(self) -> int: ...  # indexed files after the run
    @property
    def chunks(self) -> int: ...
    @property
    def vectors_embedded(self) -> int: ...  # in this run
    @property
    def vectors_pending(self) -> int: ...  # chunks still without a vector
    @property
    def warnings(self) -> Sequence[str]: ...


ProgressCallback = Callable[..., None]


# ---- opening ------------------------------------------------------------------------------------


def open_index(settings: Settings, require_chunks: bool = True) -> Store:
    """The workspace's index for a command; IndexNotFound / EmptyIndex name the command to build it."""
    from codectx.retriever.workspace import open_store

    store: Store = open_store(settings, require_chunks)
    return store


def open_existing(index_dir: Path) -> Store:
    """An index that is already there (never created here); CodectxError while there is none."""
    from codectx.indexer.store import IndexStore

    store: Store = IndexStore.open(index_dir, create=False)
    return store


def load_embedder(settings: Settings) -> QueryEmbedder:
    """The embedding model of these settings, loaded now (seconds)."""
    from codectx.indexer.embedder import Embedder

    embedder: QueryEmbedder = Embedder.from_settings(settings)
    return embedder


def embedder_key(settings: Settings) -> tuple[str, str]:
    """Settings that load the same model share one embedder."""
    return settings.index.model, settings.index.embed_backend


def warm_imports() -> list[str]:
    """Import the heavy modules now (call it from a worker thread); returns what failed to load."""
    missing: list[str] = []
    for name in HEAVY_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:
            missing.append(f"{name}: {exc}")
    return missing


# ---- documents ----------------------------------------------------------------------------------


def document_root(file: Path, root: str | Path | None = None) -> Path:
    """The workspace of a document named on the command line (its real path must be inside)."""
    from codectx.retriever.workspace import document_root as find

    found: Path = find(file, root)
    return found


def relative_path(root: Path, path: str | Path) -> str:
    """A user-given path as a POSIX path relative to the workspace root (inside it, or UnknownFile)."""
    from codectx.retriever.workspace import relative_path as rel

    posix: str = rel(root, path)
    return posix


def read_document(path: Path) -> str:
    """A document's text; clear errors for folders, binary and huge files."""
    from codectx.retriever.workspace import read_document as read

    text: str = read(path)
    return text


def language_for(path: str) -> str | None:
    """The language of a workspace path by its name; None when codectx does not parse it."""
    try:
        from codectx.indexer.languages import language_for as lookup
    except ImportError:
        return None
    language: str | None = lookup(path)
    return language


def enclosing_definition(
    text: str, language: str | None, line: int, character: int
) -> tuple[int, int] | None:
    """(first line, last line) of the innermost definition around a position, or None."""
    try:
        from codectx.retriever.cursor import cursor_info

        scope = cursor_info(text, language, line, character).enclosing
    except Exception:  # no parser for it, or a parse failure: the caller uses nearby lines
        return None
    return None if scope is None else (int(scope.start_line), int(scope.end_line))


def has_syntax_errors(text: str, language: str) -> bool:
    """Whether tree-sitter finds syntax errors; raises when there is no grammar for `language`."""
    from codectx.indexer.parse import has_syntax_errors as check

    return bool(check(text, language))


# ---- context and search -------------------------------------------------------------------------


def recent_edit(path: str, start_line: int, end_line: int, text: str) -> RecentRegion:
    """A region the user edited lately, as context assembly takes it."""
    from codectx.retriever.context import RecentEdit

    region: RecentRegion = RecentEdit(path, start_line, end_line, text)
    return region


def assemble(
    store: Store,
    settings: Settings,
    path: str,
    text: str,
    line: int,
    character: int,
    *,
    recent: Sequence[RecentRegion] = (),
    embedder: QueryEmbedder | None = None,
) -> AssembledContext:
    """Completion context at a 0-based (line, character) of `path` (blocking: CPU and disk)."""
    from codectx.retriever.context import assemble_context

    edits = cast("list[RecentEdit]", list(recent))  # made by recent_edit
    result: AssembledContext = assemble_context(
        store, settings, path, text, line, character, recent=edits, embedder=embedder
    )
    return result


def searcher(
    store: Store,
    settings: Settings,
    embedder: Callable[[], QueryEmbedder | None],
    *,
    preload: bool = False,
) -> Searcher:
    """Hybrid search over `store`; the embedder is asked for only when a query needs vectors."""
    from codectx.retriever.search import HybridSearcher

    engine: Searcher = HybridSearcher(store, settings, embedder_factory=embedder, preload=preload)  # type: ignore[arg-type, unused-ignore]
    return engine


# ---- background indexing ------------------------------------------------------------------------


def index_folder(
    root: Path,
    settings: Settings,
    paths: Sequence[Path] | None,
    *,
    progress: ProgressCallback,
    embedder: QueryEmbedder | None,
) -> IndexRun:
    """Build or refresh a folder's index (blocking): only `paths` when given, else the whole folder."""
    from codectx.indexer.pipeline import index_paths, index_workspace

    shared: Any = embedder  # the session's loaded model, so indexing loads no second copy
    report: IndexRun
    if paths:
        report = index_paths(root, list(paths), settings, progress=progress, embedder=shared)
    else:
        report = index_workspace(root, settings, progress=progress, embedder=shared, lock_wait_s=2.0)
    return report
