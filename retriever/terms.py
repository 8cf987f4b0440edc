"""Identifier terms of code and prose, for the retriever's word-overlap measures.

`tokenize` gives a text's identifiers lowercased, plus their parts when they have several
(`parse_config` -> parse_config, parse, config), stop words left out; it is what the `codectx
eval` baseline's BM25 indexes (retriever/lexical.py scores it) and what completion context
compares definition heads with the scope by (retriever/rankdefs.py, retriever/deflists.py).
Identifiers are split by the one splitter, indexer/parsing/identifiers.py.
"""

from __future__ import annotations

import re

from codectx.indexer.model import Chunk
from codectx.indexer.parsing.identifiers import split_identifier

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")

# Words so common in code and prose that they only add noise to scores.
_STOPWORDS_TEXT = (
    "a an and are as at be by for from if in into is it of on or that the this to was were will "
    "with self def return none true false "
)
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
TERM_SETS_MAX = 20_000
TERM_SETS_TEXT_MAX = 600  # characters: a definition's head is its name and first three lines


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


class TermSets:
    """`tokenize`'s terms as sets, cached by text when short: completion context compares the same
    definition heads with each scope on every request. One per index snapshot (the heads are its
    chunks'); long texts (a scope changes with each keystroke) are not kept, so it stays a few
    megabytes."""

    def __init__(self) -> None:
        self._sets: dict[str, frozenset[str]] = {}

    def of(self, text: str) -> frozenset[str]:
        if len(text) > TERM_SETS_TEXT_MAX:
            return frozenset(tokenize(text))
        found = self._sets.get(text)
        if found is None:
            if len(self._sets) >= TERM_SETS_MAX:
                self._sets.clear()
            found = self._sets[text] = frozenset(tokenize(text))
        return found


def chunk_document(chunk: Chunk) -> str:
    """The text a chunk is matched on: path, names, signature, doc and body."""
    return " ".join((chunk.path, chunk.qualname, chunk.signature, chunk.doc, chunk.text))
