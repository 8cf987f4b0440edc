"""Text prepared for the full-text index: identifiers split so identifier queries hit.

LanceDB's tokenizer already splits `snake_case` at underscores but lowercases
`getUserName` into one token, so camelCase words are added separately, both
to each chunk's search text and to the query.
"""

from __future__ import annotations

import re

from codectx.indexer.model import Chunk

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
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
    for ident in dict.fromkeys(_IDENT.findall(text)):
        if ident.islower() or ident.isupper():
            continue
        words = split_identifier(ident)
        if len(words) > 1:
            for word in words:
                seen.setdefault(word, None)
    return list(seen)


def chunk_search_text(chunk: Chunk) -> str:
    """What the FTS index sees for a chunk: path words, names, signature, doc, body and split words."""
    path_words = " ".join(re.split(r"[/._-]+", chunk.path))
    header = " ".join(
        part for part in (path_words, chunk.symbol, chunk.qualname, chunk.signature, chunk.doc) if part
    )
    extra = " ".join(camel_words(f"{chunk.qualname} {chunk.signature} {chunk.text}"))
    return f"{header}\n{chunk.text}\n{extra}"


def query_text(query: str) -> str:
    """A query with its camelCase identifiers also split into words."""
    extra = camel_words(query)
    return f"{query} {' '.join(extra)}" if extra else query
