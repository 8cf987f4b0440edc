"""Text prepared for the full-text index: identifiers split so identifier queries hit.

LanceDB's tokenizer already splits `snake_case` at underscores but lowercases
`getUserName` into one token, so camelCase words are added separately, both
to each chunk's search text and to the query (the splitter is
indexer/parsing/identifiers.py).
"""

from __future__ import annotations

import re

from codectx.indexer.model import Chunk
from codectx.indexer.parsing.identifiers import camel_words


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
