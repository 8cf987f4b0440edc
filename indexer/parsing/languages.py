"""Which language a file is, and the cached tree-sitter parser for it.

Languages come in two groups: those with a tree-sitter grammar that the
chunker understands (functions, classes, imports), and plain text formats
that get the line-window chunker. Anything else is not indexed.
"""

from __future__ import annotations

import functools
import posixpath
import re
import threading
from typing import Any

# Languages parsed with tree-sitter; the value is the grammar's name in
# tree_sitter_language_pack (they happen to match ours, but keep them apart).
TREE_SITTER_LANGUAGES: dict[str, str] = {
    "python": "python",
    "javascript": "javascript",
    "typescript": "typescript",
    "tsx": "tsx",
    "go": "go",
    "rust": "rust",
    "java": "java",
    "c": "c",
    "cpp": "cpp",
    "csharp": "csharp",
    "ruby": "ruby",
    "php": "php",
    "kotlin": "kotlin",
    "bash": "bash",
}

# Languages chunked by line windows (kind "text"); markdown splits at headings.
TEXT_LANGUAGES: frozenset[str] = frozenset(
    {
        "markdown",
        "yaml",
        "toml",
        "json",
        "text",
        "ini",
        "xml",
        "html",
        "css",
        "sql",
        "rst",
        "dockerfile",
        "makefile",
        "proto",
        "graphql",
        "scss",
        "lua",
        "swift",
        "scala",
        "perl",
        "r",
        "dart",
    }
)

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".inl": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".jsonc": "json",
    ".ini": "ini",
    ".cfg": "ini",
    ".conf": "ini",
    ".properties": "ini",
    ".xml": "xml",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".sql": "sql",
    ".proto": "proto",
    ".graphql": "graphql",
    ".gql": "graphql",
    ".lua": "lua",
    ".swift": "swift",
    ".scala": "scala",
    ".pl": "perl",
    ".pm": "perl",
    ".r": "r",
    ".dart": "dart",
}

FILENAMES: dict[str, str] = {
    "Makefile": "makefile",
    "GNUmakefile": "makefile",
    "makefile": "makefile",
    "Dockerfile": "dockerfile",
    "Containerfile": "dockerfile",
    "Rakefile": "ruby",
    "Gemfile": "ruby",
    "Vagrantfile": "ruby",
    "README": "text",
    "LICENSE": "text",
    "CHANGELOG": "text",
    "NOTICE": "text",
    "AUTHORS": "text",
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".zshrc": "bash",
    ".profile": "bash",
    "CMakeLists.txt": "text",
}

# First-line interpreters for files without an extension (scripts).
SHEBANGS: dict[str, str] = {
    "python": "python",
    "python3": "python",
    "bash": "bash",
    "sh": "bash",
    "zsh": "bash",
    "node": "javascript",
    "ruby": "ruby",
    "php": "php",
}


def known_languages() -> frozenset[str]:
    """Every language name the index can hold (what `--lang` and tool filters accept)."""
    return frozenset(
        [
            *TREE_SITTER_LANGUAGES,
            *TEXT_LANGUAGES,
            *EXTENSIONS.values(),
            *FILENAMES.values(),
            *SHEBANGS.values(),
        ]
    )


def language_for(path: str) -> str | None:
    """The language of a workspace-relative path by its name; None: not indexed."""
    name = posixpath.basename(path)
    if name in FILENAMES:
        return FILENAMES[name]
    if name.startswith("Dockerfile."):
        return "dockerfile"
    _, ext = posixpath.splitext(name)
    if ext:
        return EXTENSIONS.get(ext.lower())
    return None


def language_from_shebang(first_line: str) -> str | None:
    """The language named by a `#!` line (`#!/usr/bin/env python3`), if any."""
    if not first_line.startswith("#!"):
        return None
    words = first_line[2:].strip().split()
    if not words:
        return None
    prog = posixpath.basename(words[0])
    if prog == "env" and len(words) > 1:
        prog = words[1]
    return SHEBANGS.get(prog.rstrip("0123456789.") or prog) or SHEBANGS.get(prog)


# Indentation at a line's start is `[^\S\n]*`: `^\s*` crossed blank lines, so a run of them was
# read again from each of its lines (seconds at 20,000 blank lines).
_CPP_MARKERS = re.compile(
    rb"^[^\S\n]*(?:class\s+\w+\s*[:{]|namespace\s+\w+|template\s*<|#include\s*<[a-z_]+>\s*$)", re.M
)


def refine_language(language: str, path: str, head: bytes) -> str:
    """A better guess from a file's first bytes where its name is ambiguous (a `.h` file may be C++)."""
    if language == "c" and path.endswith(".h") and _CPP_MARKERS.search(head):
        return "cpp"
    return language


def is_tree_sitter(language: str) -> bool:
    return language in TREE_SITTER_LANGUAGES


@functools.cache
def get_language(language: str) -> Any:
    from tree_sitter_language_pack import get_language as _get

    return _get(TREE_SITTER_LANGUAGES[language])  # type: ignore[arg-type]


_local = threading.local()


def get_parser(language: str) -> Any:
    """The tree-sitter parser for one of TREE_SITTER_LANGUAGES.

    Cached per thread: a tree-sitter Parser must not be used by two threads at once.
    """
    cache: dict[str, Any] | None = getattr(_local, "parsers", None)
    if cache is None:
        cache = _local.parsers = {}
    parser = cache.get(language)
    if parser is None:
        if language not in TREE_SITTER_LANGUAGES:
            raise KeyError(f"no tree-sitter grammar for {language!r}")
        from tree_sitter_language_pack import get_parser as _get

        parser = cache[language] = _get(TREE_SITTER_LANGUAGES[language])  # type: ignore[arg-type]
    return parser
