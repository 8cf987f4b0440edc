"""Parsing one file: its chunks, definitions, references and imports.

`parse_file` is the indexer's entry point per file; it never raises on bad
source: syntax errors are counted (`ParsedFile.syntax_errors`) and the rest of
the file is chunked as usual. `has_syntax_errors` answers "does this text
parse cleanly" for the language server, which refuses edits that do not.

Work per file is bounded: tree-sitter gets `index.parse_timeout_s` (some valid
inputs take it minutes, e.g. thousands of comment lines inside one Python
block); past that the file is chunked as plain text, like a file without a
grammar, and `ParsedFile.parse_timed_out` says so.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from codectx.indexer.errors import IndexerError
from codectx.indexer.model import Import, ParsedFile
from codectx.indexer.parsing.chunker import SourceText, chunk_text, chunk_tree
from codectx.indexer.parsing.imports import imports
from codectx.indexer.parsing.languages import get_parser, is_tree_sitter
from codectx.indexer.parsing.symbols import definitions, references

from codectx.settings import Settings


class UnsupportedLanguage(IndexerError):
    """No tree-sitter grammar for the language asked for."""


class ParseTimeout(IndexerError):
    """tree-sitter did not finish within the time budget."""


PARSE_TIMEOUT_S = 2.0  # when no settings say otherwise (the language server's edit checks)
_READ_WINDOW = 1 << 22  # bytes handed to tree-sitter per read: the whole of any indexable file


def parse_bounded(parser: Any, data: bytes, timeout_s: float | None) -> Any:
    """`parser.parse(data)`, abandoned with ParseTimeout once `timeout_s` has passed."""
    if not timeout_s:
        return parser.parse(data)
    deadline = time.monotonic() + timeout_s
    try:
        # Only the read-callback form of parse takes a progress callback; it must get bytes.
        tree = parser.parse(
            lambda offset, _point: data[offset : offset + _READ_WINDOW],
            progress_callback=lambda _offset, _errors: time.monotonic() > deadline,
        )
    except ValueError:  # "Parsing failed": the progress callback asked to stop
        parser.reset()  # or the next parse would resume this one
        raise ParseTimeout(f"parsing took longer than {timeout_s:g} s") from None
    # A tree parsed from a callback reads node text through it; one re-parse from the bytes (it
    # reuses the whole old tree: a small share of the first) gives a tree that holds its source.
    return parser.parse(data, old_tree=tree)


def parse_source(text: str, language: str, timeout_s: float | None = PARSE_TIMEOUT_S) -> Any:
    """The tree-sitter tree of `text`; UnsupportedLanguage when the language has no grammar,
    ParseTimeout past `timeout_s`."""
    if not is_tree_sitter(language):
        raise UnsupportedLanguage(f"no tree-sitter grammar for language {language!r}")
    return parse_bounded(get_parser(language), text.encode("utf-8", errors="surrogatepass"), timeout_s)


def count_errors(root: Any) -> int:
    """ERROR and MISSING nodes under `root` (only subtrees flagged with errors are visited)."""
    if not root.has_error:
        return 0
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
            continue
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return count


def has_syntax_errors(text: str, language: str) -> bool:
    """True if `text` does not parse cleanly; languages without a grammar always parse."""
    if not is_tree_sitter(language):
        return False
    try:
        return bool(parse_source(text, language).root_node.has_error)
    except ParseTimeout:
        return True  # cannot tell that it parses: treated as not parsing


def parse_file(
    path: str, text: str, language: str, settings: Settings, root: Path | None = None
) -> ParsedFile:
    """Chunks and symbols of one file; `root` (the workspace) lets imports resolve to paths."""
    budget: int = settings.index.chunk_max_chars
    if not is_tree_sitter(language):
        return ParsedFile(path=path, language=language, chunks=chunk_text(path, language, text, budget))
    src = SourceText(text)
    try:
        tree = parse_bounded(get_parser(language), src.data, float(settings.index.parse_timeout_s))
    except ParseTimeout:
        chunks = chunk_text(path, language, text, budget)
        return ParsedFile(path=path, language=language, chunks=chunks, parse_timed_out=True)
    parsed = ParsedFile(path=path, language=language)
    memo: dict[int, Any] = {}  # classify answers, shared by the chunker and the symbol extractor
    parsed.syntax_errors = count_errors(tree.root_node)
    try:
        parsed.chunks = chunk_tree(path, language, src, tree.root_node, budget, memo)
    except RecursionError:
        # Pathologically deep nesting: index the file as plain text rather than lose it.
        parsed.chunks = chunk_text(path, language, text, budget)
    parsed.definitions = definitions(tree.root_node, language, path, memo)
    parsed.references = references(tree.root_node, language)
    parsed.imports = imports(tree.root_node, language, path, root)
    return parsed


def file_imports(
    path: str, text: str, language: str, settings: Settings, root: Path | None = None
) -> list[Import]:
    """Only the imports of one file (no chunks or symbols: a fraction of `parse_file`'s time)."""
    if not is_tree_sitter(language):
        return []
    src = SourceText(text)
    try:
        tree = parse_bounded(get_parser(language), src.data, float(settings.index.parse_timeout_s))
    except ParseTimeout:
        return []
    return imports(tree.root_node, language, path, root)
