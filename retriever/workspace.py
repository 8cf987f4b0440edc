"""Opening what a retriever command needs: settings, the index, the embedder, file paths.

The I/O edge of the retriever: CLI commands (and tools like the benchmark)
call these; the search and context logic only receive the opened objects.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codectx.retriever.errors import EmptyIndex, UnknownFile

from codectx.settings import Settings

MAX_DOCUMENT_BYTES = 5_000_000


@dataclass
class Opened:
    root: Path
    settings: Settings
    store: Any


def document_root(file: Path) -> Path:
    """The workspace of a document: the nearest folder above it with .git, .codectx.toml or an index.

    Without any, the current folder when the file is inside it, else the file's folder.
    """
    start = file.expanduser().resolve().parent
    for folder in [start, *start.parents]:
        if (folder / ".git").exists() or (folder / ".codectx.toml").exists():
            return folder
        if (folder / ".codectx" / "meta.json").exists():
            return folder
    cwd = Path.cwd().resolve()
    if start == cwd or cwd in start.parents:
        return cwd
    return start


def open_store(settings: Settings, require_chunks: bool = True) -> Any:
    """The workspace's index; IndexNotFound (from the indexer) names the command to build it."""
    from codectx.indexer.store import IndexStore

    store = IndexStore.open(settings.index_dir())
    if require_chunks:
        count = store.row_count("chunks") if hasattr(store, "row_count") else store.stats().chunks
        if not count:
            raise EmptyIndex(
                f"the index at {settings.index_dir()} holds no chunks; run `codectx index` in the "
                "workspace (or check that it contains source files codectx understands)"
            )
    return store


def embedder_factory(settings: Settings) -> Any:
    """A callable loading the query embedder once, when first needed."""

    def make() -> Any:
        from codectx.indexer.embedder import Embedder

        return Embedder.from_settings(settings)

    return make


def relative_path(root: Path, path: str | Path) -> str:
    """A path given by the user, as a POSIX path relative to the workspace root."""
    candidate = Path(path).expanduser()
    if not candidate.is_absolute():
        candidate = Path.cwd() / candidate
    resolved = Path(os.path.abspath(candidate))
    root_resolved = root.resolve()
    try:
        rel = resolved.relative_to(root_resolved)
    except ValueError:
        try:
            rel = candidate.resolve().relative_to(root_resolved)
        except ValueError:
            raise UnknownFile(f"{path}: outside the workspace {root}") from None
    return rel.as_posix()


def read_document(path: Path) -> str:
    """A document's text for context assembly; clear errors for what cannot be one."""
    if not path.exists():
        raise UnknownFile(f"{path}: no such file")
    if path.is_dir():
        raise UnknownFile(f"{path}: is a folder, not a file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UnknownFile(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) > MAX_DOCUMENT_BYTES:
        raise UnknownFile(f"{path}: too large for completion context ({len(data)} bytes)")
    if b"\0" in data[:8192]:
        raise UnknownFile(f"{path}: looks binary")
    return data.decode("utf-8", errors="replace")
