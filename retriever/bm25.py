"""BM25 over chunk lists: the lexical baseline `codectx eval` compares against.

Identifiers are split (camelCase, snake_case, digits) and both the whole
identifier and its parts are terms, so `sendRequest` matches "send request".
Kept in memory with an inverted index: fine for one repository's chunks.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from codectx.indexer.model import Chunk

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

# Words so common in code and prose that they only add noise to scores.
_STOPWORDS_TEXT = (
    "a an and are as at be by for from if in into is it of on or that the this to was were will "
    "with self def return none true false "
)
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


def split_identifier(word: str) -> list[str]:
    """`sendHTTPRequest_v2` -> ['send', 'http', 'request', 'v', '2'] (lowercased)."""
    parts: list[str] = []
    for piece in word.split("_"):
        parts.extend(p.lower() for p in _PARTS.findall(piece))
    return parts


def tokenize(text: str) -> list[str]:
    """Terms of a text: each identifier lowercased, plus its parts when it has several."""
    terms: list[str] = []
    for match in _IDENT.finditer(text):
        word = match.group()
        lowered = word.lower()
        parts = split_identifier(word)
        if lowered not in STOPWORDS:
            terms.append(lowered)
        if len(parts) > 1:
            terms.extend(p for p in parts if p not in STOPWORDS and len(p) > 1)
    return terms


_TERM_SETS: dict[str, frozenset[str]] = {}
TERM_SETS_MAX = 20_000
TERM_SETS_TEXT_MAX = 600  # characters: a definition's head is its name and first three lines


def term_set(text: str) -> frozenset[str]:
    """`tokenize`'s terms as a set, cached by text when short: completion context compares the
    same definition heads with each scope on every request. Long texts (a scope changes with
    each keystroke) are not kept, so the cache stays a few megabytes."""
    if len(text) > TERM_SETS_TEXT_MAX:
        return frozenset(tokenize(text))
    found = _TERM_SETS.get(text)
    if found is None:
        if len(_TERM_SETS) >= TERM_SETS_MAX:
            _TERM_SETS.clear()
        found = _TERM_SETS[text] = frozenset(tokenize(text))
    return found


def chunk_document(chunk: Chunk) -> str:
    """The text a chunk is matched on: path, names, signature, doc and body."""
    return " ".join((chunk.path, chunk.qualname, chunk.signature, chunk.doc, chunk.text))


@dataclass(frozen=True)
class BM25Hit:
    index: int
    score: float


class BM25:
    """Okapi BM25 (k1=1.2, b=0.75) over a fixed list of documents."""

    def __init__(self, documents: Iterable[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self._lengths: list[int] = []
        for doc_id, text in enumerate(documents):
            counts = Counter(tokenize(text))
            self._lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self._postings[term].append((doc_id, tf))
        n = len(self._lengths)
        self._avg = (sum(self._lengths) / n) if n else 0.0
        self._idf = {
            term: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for term, p in self._postings.items()
        }

    def __len__(self) -> int:
        return len(self._lengths)

    def search(self, query: str, k: int = 10, exclude: Sequence[int] = ()) -> list[BM25Hit]:
        scores: dict[int, float] = defaultdict(float)
        k1, b, avg = self.k1, self.b, self._avg or 1.0
        for term in set(tokenize(query)):
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = self._idf[term]
            for doc_id, tf in postings:
                norm = k1 * (1 - b + b * self._lengths[doc_id] / avg)
                scores[doc_id] += idf * tf * (k1 + 1) / (tf + norm)
        skip = set(exclude)
        ranked = sorted(
            ((d, s) for d, s in scores.items() if d not in skip), key=lambda item: (-item[1], item[0])
        )
        return [BM25Hit(d, s) for d, s in ranked[:k]]

    def score_text(self, query: str, text: str) -> float:
        """The score an arbitrary text would get as a document of this corpus (eval hides docstrings)."""
        counts = Counter(tokenize(text))
        length = sum(counts.values())
        k1, b, avg = self.k1, self.b, self._avg or 1.0
        norm = k1 * (1 - b + b * length / avg)
        total = 0.0
        for term in set(tokenize(query)):
            tf = counts.get(term, 0)
            if tf:
                idf = self._idf.get(term, math.log(1 + (len(self._lengths) + 0.5) / 0.5))
                total += idf * tf * (k1 + 1) / (tf + norm)
        return total


class ChunkBM25:
    """BM25 over chunks, answering chunks."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)
        self._bm25 = BM25(chunk_document(c) for c in self.chunks)

    def search(self, query: str, k: int = 10, exclude: Sequence[int] = ()) -> list[tuple[Chunk, float]]:
        return [(self.chunks[h.index], h.score) for h in self._bm25.search(query, k, exclude)]

    def score_chunk(self, query: str, chunk: Chunk) -> float:
        return self._bm25.score_text(query, chunk_document(chunk))
