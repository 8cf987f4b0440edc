"""BM25 in memory: the chunks' full-text index for long-lived processes, and codectx's one BM25.

LanceDB's full-text search costs 25-50 ms per query on a Django-size index,
most of it fixed overhead; this index answers the same kind of query in a few
milliseconds with numpy. It mirrors LanceDB's default FTS analysis (split on
non-alphanumerics, lowercase, drop tokens over 40 characters and English stop
words, Snowball English stemming via PyStemmer) so that the fusion weights tuned on LanceDB's
list carry over.

The postings live in flat arrays sorted by term (a compressed sparse column
layout): a query gathers each term's slice and sums weights with `bincount`.
Changes after the build go to a small second index; removed chunks are masked
out of the main one; `needs_rebuild` says when the second index has grown
enough that a fresh build pays off.

The analysis is a parameter (`Analysis`): LanceDB's by default; `codectx eval`'s
baseline scores identifier terms (retriever/terms.py) with the same BM25.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import Stemmer

K1 = 1.2
B = 0.75
MAX_TOKEN = 40
# Tantivy's English stop words, which LanceDB's FTS removes by default.
_STOP_WORDS_TEXT = (
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with"
)
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
REBUILD_SHARE = 0.1  # rebuild once the delta holds this share of the main index's documents
PAUSE_EVERY = 256  # documents between a background build's pauses

_TOKEN = re.compile(r"[^\W_]+")
_stemmer = Stemmer.Stemmer("english")  # Snowball English in C: the stemmer tantivy uses


_STEMS: dict[str, str] = {}


def _stem_all(words: list[str]) -> list[str]:
    missing = [w for w in words if w not in _STEMS]
    if missing:
        if len(_STEMS) > 500_000:  # more than a large monorepo's vocabulary: start over
            _STEMS.clear()
        _STEMS.update(zip(missing, _stemmer.stemWords(missing), strict=True))
    return [_STEMS[w] for w in words]


def _keep(word: str) -> bool:
    return len(word) <= MAX_TOKEN and word not in STOP_WORDS


def analyze(text: str) -> list[str]:
    """The terms of a text, the way LanceDB's default full-text analyzer sees them."""
    return _stem_all([w for w in _TOKEN.findall(text.lower()) if _keep(w)])


def term_counts(text: str) -> Counter[str]:
    """`Counter(analyze(text))`, computed word-first: each distinct word is stemmed once."""
    words = Counter(_TOKEN.findall(text.lower()))
    kept = [w for w in words if _keep(w)]
    out: Counter[str] = Counter()
    for word, stem in zip(kept, _stem_all(kept), strict=True):
        out[stem] += words[word]
    return out


@dataclass(frozen=True)
class Analysis:
    """How text becomes BM25 terms: `counts` for a document, `terms` for a query (distinct)."""

    counts: Callable[[str], Counter[str]]
    terms: Callable[[str], list[str]]


LANCEDB = Analysis(term_counts, lambda query: list(dict.fromkeys(analyze(query))))


@dataclass(frozen=True)
class LexicalHit:
    key: str  # the document key given at build time (a chunk id)
    score: float


class _Segment:
    """BM25 postings for a fixed list of documents."""

    def __init__(
        self,
        keys: Sequence[str],
        texts: Iterable[str],
        counts_of: Callable[[str], Counter[str]],
        pause: Callable[[], None] | None = None,
    ) -> None:
        self.keys = list(keys)
        # A new term gets the next id on first lookup, without a Python-level branch per posting.
        vocab: defaultdict[str, int] = defaultdict()
        vocab.default_factory = vocab.__len__
        term_ids = array("i")
        doc_ids = array("i")
        tfs = array("i")
        lengths = np.zeros(len(self.keys), dtype=np.float32)
        for doc, text in enumerate(texts):
            if pause is not None and doc % PAUSE_EVERY == 0:
                pause()  # a background build gives way to requests (retriever/snapshotload.py)
            counts = counts_of(text)
            lengths[doc] = counts.total()
            term_ids.extend(map(vocab.__getitem__, counts))
            tfs.extend(counts.values())
            doc_ids.extend(repeat(doc, len(counts)))
        vocab.default_factory = None
        self.vocab = dict(vocab)
        self.n_docs = len(self.keys)
        self.lengths = lengths
        self.total_length = float(lengths.sum())
        terms = np.frombuffer(term_ids, dtype=np.int32)
        order = np.argsort(terms, kind="stable")
        self.docs = np.frombuffer(doc_ids, dtype=np.int32)[order]
        self.tfs = np.frombuffer(tfs, dtype=np.int32)[order].astype(np.float32)
        self.indptr = np.zeros(len(self.vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=len(self.vocab)), out=self.indptr[1:])
        self.alive = np.ones(self.n_docs, dtype=bool)

    def doc_freq(self, term: str) -> int:
        t = self.vocab.get(term)
        if t is None:
            return 0
        docs = self.docs[self.indptr[t] : self.indptr[t + 1]]
        return int(self.alive[docs].sum())

    def scores(self, terms: Sequence[str], idf: dict[str, float], avg_length: float) -> np.ndarray:
        out_docs = []
        out_weights = []
        norm = K1 * (1 - B + B * self.lengths / max(avg_length, 1e-9))
        for term in terms:
            t = self.vocab.get(term)
            if t is None:
                continue
            lo, hi = self.indptr[t], self.indptr[t + 1]
            docs = self.docs[lo:hi]
            tf = self.tfs[lo:hi]
            out_docs.append(docs)
            out_weights.append(idf[term] * tf * (K1 + 1) / (tf + norm[docs]))
        if not out_docs:
            return np.zeros(self.n_docs, dtype=np.float32)
        scores = np.bincount(
            np.concatenate(out_docs), weights=np.concatenate(out_weights), minlength=self.n_docs
        )
        scores[~self.alive] = 0.0
        return scores


class LexicalIndex:
    """BM25 over documents keyed by id; supports removing and adding documents after the build."""

    def __init__(
        self,
        items: Sequence[tuple[str, str]],
        analysis: Analysis = LANCEDB,
        pause: Callable[[], None] | None = None,
    ) -> None:
        self.analysis = analysis
        self._main = _Segment([k for k, _ in items], (t for _, t in items), analysis.counts, pause)
        self._where = {k: (0, i) for i, k in enumerate(self._main.keys)}
        self._delta: _Segment | None = None
        self._delta_items: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._where) + len(self._delta_items)

    def needs_rebuild(self) -> bool:
        return len(self._delta_items) > max(200, REBUILD_SHARE * self._main.n_docs)

    def update(self, removed: Iterable[str], added: Sequence[tuple[str, str]]) -> None:
        """Remove documents by key and add (key, text) pairs; the delta index is rebuilt (small)."""
        for key in removed:
            self._delta_items.pop(key, None)
            where = self._where.pop(key, None)
            if where is not None:
                self._main.alive[where[1]] = False
        for key, text in added:
            where = self._where.pop(key, None)
            if where is not None:
                self._main.alive[where[1]] = False
            self._delta_items[key] = text
        items = list(self._delta_items.items())
        if items:
            self._delta = _Segment([k for k, _ in items], (t for _, t in items), self.analysis.counts)
        else:
            self._delta = None

    def _segments(self) -> list[_Segment]:
        return [s for s in (self._main, self._delta) if s is not None]

    def _stats(self, terms: Sequence[str]) -> tuple[dict[str, float], float]:
        """Each term's idf and the average document length, over the live documents."""
        segments = self._segments()
        n_docs = len(self)
        length = sum(float(s.lengths[s.alive].sum()) for s in segments)
        idf = {}
        for term in terms:
            df = sum(s.doc_freq(term) for s in segments)
            idf[term] = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
        return idf, length / n_docs

    def search(self, query: str, k: int, exclude: Collection[str] = ()) -> list[LexicalHit]:
        """The best `k` documents for a query, best first (equal scores by key); `exclude`: keys
        left out."""
        terms = self.analysis.terms(query)
        if not terms or k <= 0 or len(self) == 0:
            return []
        idf, avg = self._stats(terms)
        want = k + len(exclude)
        hits: list[LexicalHit] = []
        for segment in self._segments():
            scores = segment.scores(terms, idf, avg)
            take = min(want, int(np.count_nonzero(scores)))
            if take == 0:
                continue
            top = np.argpartition(-scores, take - 1)[:take]
            hits.extend(LexicalHit(segment.keys[i], float(scores[i])) for i in top)
        if exclude:
            hits = [h for h in hits if h.key not in exclude]
        hits.sort(key=lambda h: (-h.score, h.key))
        return hits[:k]

    def score_text(self, query: str, text: str) -> float:
        """The score any text would get as a document of this index (`codectx eval` hides a
        docstring and asks where the rest would rank)."""
        terms = self.analysis.terms(query)
        if not terms or len(self) == 0:
            return 0.0
        counts = self.analysis.counts(text)
        idf, avg = self._stats(terms)
        norm = K1 * (1 - B + B * counts.total() / max(avg, 1e-9))
        total = 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if tf:
                total += idf[term] * tf * (K1 + 1) / (tf + norm)
        return total
