"""Parsing one file: languages, tree-sitter grammars and queries, chunks, symbols, imports (README.md)."""
