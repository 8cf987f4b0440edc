"""The words of code identifiers: `parseHTTPHeader_v2` -> parse, http, header, v2.

The one identifier splitter. What it yields is stored in the index twice (the full-text column,
indexer/storage/fulltext.py, and the name vectors, indexer/embedding/embedder.py), and the
retriever splits queries and code with it too (retriever/search.py `fts_terms`,
retriever/terms.py), so that a query's words are the words the index holds.
"""

from __future__ import annotations

import re

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Word starts inside an identifier: "HTTPServer" -> HTTP, Server; "getURL2" -> get, URL2.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")


def split_identifier(name: str) -> list[str]:
    """The words of one identifier, lowercased: "parseHTTPHeader_v2" -> parse, http, header, v2."""
    words: list[str] = []
    for part in name.split("_"):
        words.extend(w.lower() for w in _CAMEL.findall(part))
    return [w for w in words if w]


def camel_words(text: str) -> list[str]:
    """Sub-words of the mixed-case identifiers in `text`, each once, in first-seen order."""
    seen: dict[str, None] = {}
    for ident in dict.fromkeys(IDENTIFIER.findall(text)):
        if ident.islower() or ident.isupper():
            continue
        words = split_identifier(ident)
        if len(words) > 1:
            for word in words:
                seen.setdefault(word, None)
    return list(seen)
