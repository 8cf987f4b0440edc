"""Parsing one file: its chunks, definitions, references and imports.

`parse_file` is the indexer's entry point per file; it never raises on bad
source: syntax errors are counted (`ParsedFile.syntax_errors`) and the rest of
the file is chunked as usual. `has_syntax_errors` answers "does this text
parse cleanly" for the language server, which refuses edits that do not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codectx.indexer.chunker import SourceText, chunk_text, chunk_tree
from codectx.indexer.errors import IndexerError
from codectx.indexer.imports import imports
from codectx.indexer.languages import get_parser, is_tree_sitter
from codectx.indexer.model import ParsedFile
from codectx.indexer.symbols import definitions, references

from codectx.settings import Settings


class UnsupportedLanguage(IndexerError):
    """No tree-sitter grammar for the language asked for."""


def parse_source(text: str, language: str) -> Any:
    """The tree-sitter tree of `text`; UnsupportedLanguage when the language has no grammar."""
    if not is_tree_sitter(language):
        raise UnsupportedLanguage(f"no tree-sitter grammar for language {language!r}")
    return get_parser(language).parse(text.encode("utf-8", errors="surrogatepass"))


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
    return bool(parse_source(text, language).root_node.has_error)


def parse_file(
    path: str, text: str, language: str, settings: Settings, root: Path | None = None
) -> ParsedFile:
    """Chunks and symbols of one file; `root` (the workspace) lets imports resolve to paths."""
    budget: int = settings.index.chunk_max_chars
    if not is_tree_sitter(language):
        return ParsedFile(path=path, language=language, chunks=chunk_text(path, language, text, budget))
    src = SourceText(text)
    tree = get_parser(language).parse(src.data)
    parsed = ParsedFile(path=path, language=language)
    parsed.syntax_errors = count_errors(tree.root_node)
    try:
        parsed.chunks = chunk_tree(path, language, src, tree.root_node, budget)
    except RecursionError:
        # Pathologically deep nesting: index the file as plain text rather than lose it.
        parsed.chunks = chunk_text(path, language, text, budget)
    parsed.definitions = definitions(tree.root_node, language, path)
    parsed.references = references(tree.root_node, language)
    parsed.imports = imports(tree.root_node, language, path, root)
    return parsed
