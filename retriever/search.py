"""Hybrid search: vectors, LanceDB full text and symbol names, fused with weights.

Each source gives a ranked list of chunks; `weighted_rrf` fuses them. The
dense list is skipped when no vectors exist yet (a partial index still
answers, and says so). Identifier-like queries (`send_request`,
`Client.send`) also look names up in the symbol table and lean on the
lexical side, where embeddings are weak. Prose queries also get a list of
the definitions whose names are made of the query's words (`names`,
`retriever/namewords.py`: "the price of a basket" -> `total_basket_price`),
weighted by `retriever.name_words_weight`, when no vectors are searched; on
the development set's natural-language tasks (bench/devset.toml, docstrings
hidden) it lifted recall@10 on the lexical path from 0.505 to 0.617 through
`codectx eval`, no repository lower; on 100 queries written independently from
the packages' documentation (bench/nl_queries.toml) it was neutral (0.67 with,
0.69 without). See `names_list_applies` for why not with vectors.

The dense score of a chunk mixes two cosines: with its body vector and with
its name vector (symbol words and signature; see `indexer.embedding.embedder.name_text`),
weighted by `retriever.name_weight`. A prose query often says what a
function is called more than what its body looks like; on `codectx eval`'s
natural-language tasks (requests, click, flask) the mix lifted recall@10 from
0.80 to 0.87. Indexes without name vectors rank by the body alone.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from codectx.indexer.embedding.embedder import name_model_id
from codectx.indexer.model import Chunk, Definition
from codectx.indexer.parsing.identifiers import split_identifier
from codectx.indexer.storage.pathglob import path_glob
from codectx.retriever.calledby import CALLS_POOL, called_by_hits
from codectx.retriever.errors import BadRequest
from codectx.retriever.fusion import Fused, weighted_rrf
from codectx.retriever.snapshot import IndexSource, snapshot_of
from codectx.retriever.testfiles import is_test_path

from codectx.settings import Settings

_IDENT_QUERY = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*\(?\)?$")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CALLED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(")
_CAMEL_HUMP = re.compile(r"[a-z][A-Z]")
# Full-text queries are plain terms: tantivy's query syntax would choke on code punctuation.
MAX_FTS_TERMS = 40
OVERFETCH = 4
NAME_WORD_DEFS = 3  # definitions per name in the name-words list (a shared name is a weak hint)
NAME_RERANK = 4  # the body list is read this much deeper than asked, then re-ranked by the mix
NAME_RERANK_EXTRA = 100  # ...but at most this many rows deeper (a chat turn asks for 100 hits)
SPARE_ROWS = 8  # re-ranked by hash, a few more chunks are read than kept: a stale vector has none


class QueryEmbedder(Protocol):
    model_id: str

    def embed_query(self, text: str) -> Any: ...


@dataclass(frozen=True)
class DenseHit:
    chunk: Chunk
    score: float


@dataclass(frozen=True)
class _Rows:
    """One vector matrix of the snapshot and where each content hash sits in it."""

    matrix: Any
    row_of: dict[str, int]


@dataclass
class SearchResult:
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    language: str
    score: float
    text: str
    qualname: str = ""
    sources: dict[str, int] = field(default_factory=dict)  # list name -> rank there

    def as_dict(self, show: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "symbol": self.symbol,
            "qualname": self.qualname or self.symbol,  # `Order.total`, as the text output shows it
            "kind": self.kind,
            "language": self.language,
            "score": round(self.score, 6),
        }
        if show:
            data["text"] = self.text
        return data


@dataclass
class SearchResponse:
    query: str
    results: list[SearchResult]
    partial: bool = False  # some or all vectors pending
    vectors_pending: int = 0
    dense_used: bool = True
    notes: list[str] = field(default_factory=list)
    elapsed_ms: float = 0.0


def is_identifier_query(query: str) -> bool:
    return bool(_IDENT_QUERY.match(query.strip()))


def fts_terms(text: str, limit: int = MAX_FTS_TERMS) -> str:
    """Turn any text (code included) into a safe full-text query of distinct words."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text):
        if len(word) < 2:
            continue
        for term in (word, *split_identifier(word)):
            key = term.lower()
            if len(key) > 1 and key not in seen:
                seen[key] = None
        if len(seen) >= limit:
            break
    return " ".join(list(seen)[:limit])


def symbol_names(query: str) -> list[str]:
    """Names worth a symbol-table lookup: the identifier query itself, or code-like words in prose."""
    text = query.strip().rstrip("()")
    if is_identifier_query(query):
        parts = re.split(r"\.|::|->", text)
        return list(dict.fromkeys([parts[-1], *parts[:-1]]))
    called = set(_CALLED.findall(query))
    names = []
    for word in _WORD.findall(query):
        if "_" in word.strip("_") or _CAMEL_HUMP.search(word) or word in called:
            names.append(word)
    return list(dict.fromkeys(names))


def _dotted(query: str) -> str:
    """An identifier query's qualified form (`Session.send`, `a::b` as `a.b`); "" for a bare name."""
    if not is_identifier_query(query):
        return ""
    text = re.sub(r"::|->", ".", query.strip().rstrip("()"))
    return text if "." in text else ""


def _qualifies(qualname: str, dotted: str) -> bool:
    """Is `qualname` what the qualified query names: the same, the query its tail (`Session.send`
    for `Outer.Session.send`), or it the query's tail after a module path (`sessions.Session.send`)?"""
    if not dotted or not qualname:
        return False
    if qualname == dotted or qualname.endswith("." + dotted):
        return True
    return "." in qualname and dotted.endswith("." + qualname)


# A question about tests themselves ("which test covers retries") keeps them where they rank.
ASKS_FOR_TESTS = re.compile(
    r"\b(tests?|testing|tested|fixtures?|asserts?|assertions?|mocks?|specs?)\b", re.IGNORECASE
)


# Documentation, not code: a prose query matches its prose as well as it matches the code that
# does what the prose describes. Module-level code outside definitions (kind "module": a
# module's docstring and imports, top-level statements such as `urlpatterns = [...]`) is
# weighed the same way: searched for what it does, a definition is the better answer more
# often (devset hidden-doc NL lexical 0.658 with the head chunk alone, 0.667 with all of it).
DOC_LANGUAGES = frozenset({"markdown", "rst", "text"})
DOC_KINDS = frozenset({"module"})
# A question about the documentation itself keeps it where it ranks.
ASKS_FOR_DOCS = re.compile(r"\b(docs|documentation|documented|readme|changelog|tutorials?)\b", re.IGNORECASE)


def is_documentation(chunk: Chunk) -> bool:
    """Prose about the code (a guide) or module-level code outside any definition."""
    return chunk.language in DOC_LANGUAGES or chunk.kind in DOC_KINDS


def names_list_applies(query: str, settings: Settings, dense: bool = False) -> bool:
    """Whether the names list joins a search: a prose query, and a weight above 0 for the kind of
    search (`name_words_weight` without vectors, `name_words_dense_weight` with them)."""
    cfg = settings.retriever
    weight = cfg.name_words_dense_weight if dense else cfg.name_words_weight
    return not is_identifier_query(query) and weight > 0


def chunk_for_definition(chunks: Sequence[Chunk], definition: Definition) -> Chunk | None:
    """The chunk representing a definition: one starting at it, else the tightest one containing it."""
    starting = [c for c in chunks if c.start_line == definition.start_line]
    if starting:
        return min(starting, key=lambda c: (c.symbol != definition.name, c.qualname != definition.qualname))
    containing = [c for c in chunks if c.start_line <= definition.start_line <= c.end_line]
    if containing:
        return min(containing, key=lambda c: (c.end_line - c.start_line, c.start_line))
    return None


def _matches(chunk: Chunk, languages: Sequence[str] | None, glob: str | None) -> bool:
    if languages and chunk.language not in languages:
        return False
    if not glob:
        return True
    return path_glob(glob).matches(chunk.path)


class HybridSearcher:
    """Searches one index; holds the store, settings and a lazily loaded embedder."""

    def __init__(
        self,
        store: IndexSource,
        settings: Settings,
        embedder: QueryEmbedder | None = None,
        embedder_factory: Callable[[], QueryEmbedder] | None = None,
        preload: bool = False,
    ) -> None:
        self.store = snapshot_of(store)
        if preload:  # long-lived callers (batch, language server): all chunks in memory
            self.store.preload()
        self.settings = settings
        self._embedder = embedder
        self._factory = embedder_factory

    def progress(self) -> tuple[int, int]:
        """(vectors done, vectors pending), cached until the index changes."""
        return self.store.progress()

    def embedder(self) -> QueryEmbedder | None:
        if self._embedder is None and self._factory is not None:
            self._embedder = self._factory()
            self._factory = None
        return self._embedder

    def chunks_for_file(self, path: str) -> list[Chunk]:
        return self.store.chunks_for_file(path)

    def ranked_lists(
        self,
        query: str,
        depth: int,
        languages: Sequence[str] | None = None,
        glob: str | None = None,
        dense: bool = True,
        vector: Any = None,
    ) -> tuple[dict[str, list[str]], dict[str, Chunk], bool]:
        """The per-source ranked chunk-id lists, the chunks by id, and whether dense ran."""
        chunks: dict[str, Chunk] = {}
        lists: dict[str, list[str]] = {}
        fetch = depth * (OVERFETCH if (languages or glob) else 1)

        def take(name: str, found: Sequence[Chunk]) -> None:
            ids = []
            for chunk in found:
                if _matches(chunk, languages, glob):
                    chunks.setdefault(chunk.id, chunk)
                    ids.append(chunk.id)
            lists[name] = ids[:depth]

        terms = fts_terms(query)
        take("fts", [h.chunk for h in self.store.fts_search(terms, fetch)] if terms else [])

        names = symbol_names(query)
        dotted = _dotted(query)
        found: list[Chunk] = []
        qualified: list[Chunk] = []  # chunks of the definitions the qualified name names
        for name in names:
            # `Session.send` names that method first, before every other `send` in path order
            # (`BaseAdapter.send`, a test's `RedirectSession.send`).
            defs = sorted(
                self.store.symbols_named(name),
                key=lambda d: (
                    not _qualifies(d.qualname, dotted),
                    d.qualname != dotted,  # the whole name before a tail of it
                    not d.exported,
                    d.path,
                    d.start_line,
                ),
            )
            for definition in defs[:fetch]:
                chunk = self.chunk_for_definition(definition)
                if chunk is not None:
                    found.append(chunk)
                    if _qualifies(definition.qualname, dotted):
                        qualified.append(chunk)
        take("symbol", found)
        if dotted:
            # The qualified name matched as a whole is a list of its own: in the symbol list alone
            # its first place lost to a short `RedirectSession.send` that full text ranks high.
            # Judged by the definition's name: a chunk may be an enclosing one, named otherwise.
            take("qualified", qualified)

        dense_used = False
        done, _pending = self.progress()
        if dense and (done > 0 or vector is not None):
            embedder = self.embedder()
            if embedder is not None:
                vec = vector if vector is not None else embedder.embed_query(query)
                hits = self.dense_hits(vec, fetch, embedder.model_id)
                take("dense", [h.chunk for h in hits])
                dense_used = True
        if names_list_applies(query, self.settings, dense_used):
            take("names", self._named_like(query, fetch))
        return lists, chunks, dense_used

    def _named_like(self, query: str, limit: int) -> list[Chunk]:
        """Chunks of the definitions whose names the query's words make (retriever/namewords.py),
        best first; a name with several definitions gives its exported ones first."""
        index = self.store.name_words()
        if index is None:
            return []
        found: list[Chunk] = []
        for hit in index.search(query, limit):
            defs = sorted(
                self.store.symbols_named(hit.name), key=lambda d: (not d.exported, d.path, d.start_line)
            )
            for definition in defs[:NAME_WORD_DEFS]:
                chunk = self.chunk_for_definition(definition)
                if chunk is not None:
                    found.append(chunk)
            if len(found) >= limit:
                break
        return found

    def _matrix_rows(self, model_id: str) -> _Rows | None:
        """The snapshot's matrix for `model_id` with its hash -> row map (both rebuilt together)."""
        loaded = self.store.dense_rows(model_id)
        return _Rows(*loaded) if loaded is not None else None

    def dense_hits(self, vector: Any, k: int, model_id: str) -> list[DenseHit]:
        """The `k` chunks nearest to a query vector by the mixed body/name score, best first.

        The body list is read `NAME_RERANK` times deeper (at most `NAME_RERANK_EXTRA` rows more)
        and re-ranked by the mix: scanning the name matrix too would double the scan (+10-20 ms
        on Django), and on the eval's tasks the re-ranked pool of 4x gives the same recall as a
        full scan of both. A chunk whose name vector is still missing keeps its body score.
        """
        weight = self.settings.retriever.name_weight
        names = self._matrix_rows(name_model_id(model_id)) if weight > 0 else None
        if names is None:
            return [DenseHit(h.chunk, float(h.score)) for h in self.store.vector_search(vector, k, model_id)]
        import numpy as np

        query = np.asarray(vector, dtype=np.float32).ravel()
        depth = min(k * NAME_RERANK, k + NAME_RERANK_EXTRA)
        scored = self.store.nearest_hashes(query, depth, model_id)
        if scored is not None:
            # Re-ranked by hash, so only the chunks kept are read (a one-shot `codectx ask` reads
            # them from LanceDB: k + SPARE_ROWS rows, not the pool). Stale vectors (content no
            # chunk has any more: recently edited code leaves them) are skipped by reading on.
            rows = np.fromiter((names.row_of.get(h, -1) for h, _s in scored), np.int64, len(scored))
            mixed = self._mixed(
                np.fromiter((s for _h, s in scored), np.float32, len(scored)), rows, names, query
            )
            order = np.argsort(-mixed, kind="stable")
            kept: list[Any] = []
            start = 0
            while len(kept) < k and start < len(order):
                take = order[start : start + k - len(kept) + SPARE_ROWS]
                kept += self.store.hits_for([(scored[i][0], float(mixed[i])) for i in take])
                start += len(take)
            return [DenseHit(h.chunk, h.score) for h in kept[:k]]
        hits = list(self.store.vector_search(query, depth, model_id))
        row_of = names.row_of
        rows = np.fromiter((row_of.get(h.chunk.content_hash, -1) for h in hits), np.int64, len(hits))
        scores = self._mixed(np.fromiter((h.score for h in hits), np.float32, len(hits)), rows, names, query)
        order = np.argsort(-scores, kind="stable")[:k]  # stable: ties keep the body list's order
        return [DenseHit(hits[i].chunk, float(scores[i])) for i in order]

    def _mixed(self, scores: Any, rows: Any, names: _Rows, query: Any) -> Any:
        """Body cosines mixed with the name cosines of the chunks that have a name vector (row
        >= 0 in the name matrix); the others keep their body score."""
        weight = self.settings.retriever.name_weight
        known = rows >= 0
        if known.any():
            scores[known] = (1 - weight) * scores[known] + weight * (names.matrix[rows[known]] @ query)
        return scores

    @staticmethod
    def _mix(body: float, names: _Rows, chunk: Chunk, query: Any, weight: float) -> float:
        row = names.row_of.get(chunk.content_hash)
        if row is None:
            return body
        return (1 - weight) * body + weight * float(names.matrix[row] @ query)

    def mixed_score(self, vector: Any, chunk: Chunk, body: float, model_id: str) -> float:
        """The dense score `chunk` would get given its body cosine `body` (the eval computes that
        cosine for a chunk with its doc hidden; the name vector never holds the doc)."""
        weight = self.settings.retriever.name_weight
        names = self._matrix_rows(name_model_id(model_id)) if weight > 0 else None
        if names is None:
            return body
        import numpy as np

        return self._mix(body, names, chunk, np.asarray(vector, dtype=np.float32).ravel(), weight)

    def fuse(
        self,
        query: str,
        lists: dict[str, list[str]],
        chunks: dict[str, Chunk],
        limit: int,
        languages: Sequence[str] | None = None,
        glob: str | None = None,
    ) -> list[Fused[str]]:
        """The lists fused by weighted RRF, best first. For a prose query a chunk of test code
        scores `retriever.test_weight` times its fused score: a question is mostly about what the
        code does, and a test named after the behaviour (`test_url_relative_only_valid`) matches
        it as well as the code. Documentation and module-level code score `retriever.doc_weight`
        times theirs, for the same reason. A query naming an identifier keeps both as they rank;
        one asking about tests keeps tests, one asking about the docs keeps documentation.
        A prose query with a dense list also fuses the `calls` list: what its first fused hits
        call (retriever/calledby.py), within the search's `languages` and `glob` like the other
        lists; it adds the chunks it lists to `chunks`. Only once the snapshot holds the index's
        chunks in memory: resolving those calls by index lookups costs a one-shot `codectx ask`
        on Django 70-250 ms per turn (about 5 ms in memory)."""
        cfg = self.settings.retriever
        weights = self.weights(query, "dense" in lists)
        prose = not is_identifier_query(query)
        if prose and "dense" in lists and cfg.calls_weight > 0 and self.store.in_memory:
            lists = {**lists, "calls": self._calls_list(lists, weights, chunks, languages, glob)}
            weights["calls"] = cfg.calls_weight
        tests = cfg.test_weight if prose and not ASKS_FOR_TESTS.search(query) else 1.0
        docs = cfg.doc_weight if prose and not ASKS_FOR_DOCS.search(query) else 1.0
        if tests == 1 and docs == 1:
            return weighted_rrf(lists, weights, k=cfg.rrf_k, limit=limit)
        fused = []
        for f in weighted_rrf(lists, weights, k=cfg.rrf_k):
            chunk = chunks[f.key]
            factor = (tests if is_test_path(chunk.path) else 1.0) * (docs if is_documentation(chunk) else 1.0)
            fused.append(replace(f, score=f.score * factor) if factor != 1 else f)
        fused.sort(key=lambda f: -f.score)  # stable: equal scores keep the fused order
        return fused[:limit]

    def _calls_list(
        self,
        lists: dict[str, list[str]],
        weights: dict[str, float],
        chunks: dict[str, Chunk],
        languages: Sequence[str] | None,
        glob: str | None,
    ) -> list[str]:
        """The `calls` list (retriever/calledby.py) of the first fused hits, as fused before the
        test and documentation factors (a test named after the behaviour is the best witness);
        the chunks it keeps (those the filters allow) join `chunks`."""
        pool = weighted_rrf(lists, weights, k=self.settings.retriever.rrf_k, limit=CALLS_POOL)
        called = called_by_hits(
            self.store, [(chunks[f.key], f.score) for f in pool], self.chunk_for_definition
        )
        # As deep as the other lists are read: a definition further down adds next to nothing.
        depth = self.settings.retriever.search_depth
        kept = [chunk for chunk in called if _matches(chunk, languages, glob)][:depth]
        for chunk in kept:
            chunks.setdefault(chunk.id, chunk)
        return [chunk.id for chunk in kept]

    def chunk_for_definition(self, definition: Definition) -> Chunk | None:
        """The chunk representing `definition` in this index (`chunk_for_definition`)."""
        return chunk_for_definition(self.chunks_for_file(definition.path), definition)

    def weights(self, query: str, dense: bool = False) -> dict[str, float]:
        """The lists' fusion weights; `dense`: the search has a dense list (the names list then
        weighs `name_words_dense_weight`)."""
        cfg = self.settings.retriever
        weights = {
            "dense": cfg.dense_weight,
            "fts": cfg.fts_weight,
            "symbol": cfg.symbol_weight,
            "names": cfg.name_words_dense_weight if dense else cfg.name_words_weight,
        }
        if is_identifier_query(query):
            # An identifier names code exactly; embeddings of a bare name are vague.
            weights["fts"] = cfg.fts_weight * cfg.identifier_boost
            weights["symbol"] = cfg.symbol_weight * cfg.identifier_boost
            weights["qualified"] = weights["symbol"]
        return weights

    def search(
        self,
        query: str,
        k: int | None = None,
        languages: Sequence[str] | None = None,
        glob: str | None = None,
        dense: bool = True,
    ) -> SearchResponse:
        if not query or not query.strip():
            raise BadRequest("the search query is empty")
        started = time.perf_counter()
        k = k or self.settings.retriever.k
        depth = max(k, self.settings.retriever.search_depth)
        lists, chunks, dense_used = self.ranked_lists(query, depth, languages, glob, dense)
        fused = self.fuse(query, lists, chunks, k, languages, glob)
        results = [
            SearchResult(
                path=chunks[f.key].path,
                start_line=chunks[f.key].start_line,
                end_line=chunks[f.key].end_line,
                symbol=chunks[f.key].symbol,
                kind=chunks[f.key].kind,
                language=chunks[f.key].language,
                score=f.score,
                text=chunks[f.key].text,
                qualname=chunks[f.key].qualname,
                sources=dict(f.ranks),
            )
            for f in fused
        ]
        _done, pending = self.progress()
        notes = []
        if pending and dense:
            notes.append(
                f"partial index: {pending} chunk(s) still lack vectors; results use full text and "
                "symbols for those (run `codectx index` to finish)"
            )
        if dense and not dense_used:
            notes.append("no vectors yet: searched full text and symbol names only")
        return SearchResponse(
            query=query,
            results=results,
            partial=bool(pending) or (dense and not dense_used),
            vectors_pending=pending,
            dense_used=dense_used,
            notes=notes,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )
