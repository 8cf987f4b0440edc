"""The shapes of what comes through the index door (codectx.app.index), as Protocols and dataclasses.

Everything above the index (codectx.app, codectx.lsp, codectx.mcp, the shell commands) depends
on these shapes, not on the concrete classes of codectx.indexer and codectx.retriever; mypy
checks that the concrete ones have them where codectx.app.index returns them. Importing this
module imports nothing heavy (the concrete types are named for annotations only).

The Protocols share their fields by inheritance: `Span` (a workspace path and 0-based,
inclusive lines) and `Named` (a qualified name and kind) for definitions, context pieces and
search hits; `IndexCounts` for what an index holds and what an indexing run did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypedDict

if TYPE_CHECKING:  # concrete types, for annotations only
    from codectx.indexer.storage.reader import IndexReader

# An open index: the storage's typed reader (codectx.indexer.storage.reader). The app hands it to
# the retriever and asks it for definitions by name; named here only for types, so importing
# codectx.app does not import LanceDB.
Store: TypeAlias = "IndexReader"

ProgressCallback = Callable[..., None]


class Span(Protocol):
    """A region of a workspace file: its path and 0-based, inclusive lines."""

    @property
    def path(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...


class Named(Protocol):
    """What a definition is called and what it is."""

    @property
    def qualname(self) -> str: ...
    @property
    def kind(self) -> str: ...  # function, method, class, interface, struct, enum, variable, ...


class DefinitionSite(Span, Named, Protocol):
    """Where a symbol is defined (codectx.indexer.model.Definition)."""

    @property
    def name(self) -> str: ...
    @property
    def language(self) -> str: ...


class QueryEmbedder(Protocol):
    """Turns a query into a vector (codectx.indexer.embedding.embedder.Embedder)."""

    @property
    def model_id(self) -> str: ...

    def embed_query(self, text: str) -> Any: ...


class ContextPiece(Span, Protocol):
    """One item of completion context (codectx.retriever.context.ContextItem)."""

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


class RecentRegion(ContextPiece, Protocol):
    """A region the user edited lately (codectx.retriever.context.RecentEdit; make one with `recent_edit`)."""


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


class SearchHit(ContextPiece, Named, Protocol):
    """One search result (codectx.retriever.search.SearchResult)."""

    @property
    def symbol(self) -> str: ...
    @property
    def score(self) -> float: ...

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


class SearchFilters(TypedDict, total=False):
    """What a search takes besides the query and k, by keyword (left out: Searcher.search's default)."""

    languages: Sequence[str] | None
    glob: str | None
    dense: bool


class Searcher(Protocol):
    """Hybrid search over one index (codectx.retriever.search.HybridSearcher); a session's `search`
    takes the same arguments (codectx.app.session)."""

    def search(
        self,
        query: str,
        k: int | None = None,
        languages: Sequence[str] | None = None,
        glob: str | None = None,
        dense: bool = True,
    ) -> SearchAnswer: ...


class IndexCounts(Protocol):
    """How much an index holds."""

    @property
    def files(self) -> int: ...  # indexed files
    @property
    def chunks(self) -> int: ...
    @property
    def vectors_pending(self) -> int: ...  # chunks still without a vector


class IndexRun(IndexCounts, Protocol):
    """What an indexing run reports (codectx.indexer.report.IndexReport); counts after the run."""

    @property
    def vectors_embedded(self) -> int: ...  # in this run
    @property
    def warnings(self) -> Sequence[str]: ...
    @property
    def quick(self) -> bool: ...  # nothing had changed: answered from the manifest, no table touched


class IndexFigures(IndexCounts, Protocol):
    """What an index holds (codectx.indexer.store.IndexStats)."""

    @property
    def symbols(self) -> int: ...
    @property
    def vectors_done(self) -> int: ...
    @property
    def last_indexed(self) -> float | None: ...
    @property
    def model_id(self) -> str | None: ...


class NameLookup(Protocol):
    """What definition lookups read: an open index, or its in-memory snapshot (`index.in_memory`)."""

    def symbols_named(self, name: str) -> Sequence[DefinitionSite]: ...
    def file_imports(self, path: str) -> Sequence[Any]: ...


@dataclass(frozen=True)
class DefinitionMatch:
    """A definition the name at a position refers to, and how it was resolved (import, same-file,
    name, ...: retriever.definitions.CONFIDENCE, best first)."""

    site: DefinitionSite
    used_as: str  # the identifier or chain as written at the position
    how: str


@dataclass(frozen=True)
class ReferenceSite:
    """One use of an identifier (0-based line and column); `chain` is the attribute chain ending at
    it ("self.session.send"), "" for a bare name."""

    path: str
    line: int
    column: int
    name: str
    chain: str
