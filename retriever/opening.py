"""Opening what a retriever command needs: settings, the index, the embedder, file paths.

The I/O edge of the retriever: CLI commands (and tools like the benchmark)
call these; the search and context logic only receive the opened objects.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from codectx.retriever.errors import EmptyIndex, FileTooLarge, UnknownFile

from codectx.settings import Settings
from codectx.workspace import too_broad

MAX_DOCUMENT_BYTES = 5_000_000


@dataclass
class Opened:
    root: Path
    settings: Settings
    store: Any


def document_root(file: Path, root: str | Path | None = None) -> Path:
    """The workspace of a document, which must hold the document's real path.

    With `root` (the user named it: `--root`), that folder. Otherwise the nearest folder above
    the document as named (a symlink is not followed to find it) that holds .git, .codectx.toml
    or an index; without any, the current folder when the document is inside it (unless that
    is / or the home folder). A document in no workspace, or whose real path leaves it (a
    symlink to /etc/passwd inside a repository), is refused naming both: codectx reads and
    sends only what is inside the workspace.
    """
    given = Path(os.path.abspath(file.expanduser()))
    if root is not None:
        found = Path(root).expanduser().resolve()
        if not found.is_dir():
            raise UnknownFile(f"--root {root}: not a folder")
    else:
        marked = _marked_workspace(given.parent) or _current_workspace(given)
        if marked is None:
            raise UnknownFile(
                f"{file} is not inside a workspace (no .git, .codectx.toml or index in the folders above "
                f"it, and it is not under the current folder {Path.cwd()}); name the workspace with "
                "--root DIR to use a file there"
            )
        found = marked
    confined(found, given)
    return found


def _marked_workspace(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        if (folder / ".git").exists() or (folder / ".codectx.toml").exists():
            return folder.resolve()
        if (folder / ".codectx" / "meta.json").exists():
            return folder.resolve()
    return None


def _current_workspace(given: Path) -> Path | None:
    cwd = Path(os.path.abspath(Path.cwd()))
    if too_broad(cwd) is not None:
        return None  # never the whole disk or the home folder by accident
    if given == cwd or cwd in given.parents:
        return cwd.resolve()
    return None


def confined(root: Path, path: Path, real_root: Path | None = None) -> Path:
    """`path`'s real path, or UnknownFile when it is outside `root` (naming both); `real_root`:
    the root's real path when the caller has it."""
    real = Path(os.path.realpath(path))
    real_root = real_root or Path(os.path.realpath(root))
    if real != real_root and real_root not in real.parents:
        shown = f"{path} (a link to {real})" if real != Path(os.path.abspath(path)) else str(path)
        raise UnknownFile(
            f"{shown} is outside the workspace {real_root}; codectx reads and sends only files inside the "
            "workspace (name another with --root DIR)"
        )
    return real


def open_store(settings: Settings, require_chunks: bool = True) -> Any:
    """The workspace's index; IndexNotFound (from the indexer) names the command to build it."""
    from codectx.indexer.storage.store import IndexStore

    store = IndexStore.open(settings.index_dir())
    if require_chunks:
        count = store.chunk_count()
        if not count:
            raise EmptyIndex(
                f"the index at {settings.index_dir()} holds no chunks; run `codectx index` in the "
                "workspace (or check that it contains source files codectx understands)"
            )
    return store


def embedder_factory(settings: Settings) -> Any:
    """A callable loading the query embedder once, when first needed."""

    def make() -> Any:
        from codectx.indexer.embedding.embedder import Embedder

        return Embedder.from_settings(settings)

    return make


def relative_path(root: Path, path: str | Path) -> str:
    """A path given by the user, as a POSIX path relative to the workspace root.

    The name as given (a symlink's own name) when it lies in the root, else its real path's;
    either way the real path must be inside the root (UnknownFile naming both otherwise).
    Strings, not pathlib: a chat turn reads tens of files, and Path objects cost more than the
    two realpath calls.
    """
    candidate = os.path.expanduser(os.fspath(path))
    if "\0" in candidate:  # the OS takes no such name; realpath would raise a bare ValueError
        raise UnknownFile(f"{candidate!r}: a file name cannot contain a NUL character")
    if not os.path.isabs(candidate):
        candidate = os.path.join(os.getcwd(), candidate)
    lexical = os.path.abspath(candidate)
    root_resolved = os.path.realpath(root)
    real = os.path.realpath(lexical)
    if real != root_resolved and not real.startswith(root_resolved.rstrip(os.sep) + os.sep):
        confined(root, Path(lexical), Path(root_resolved))  # raises UnknownFile, naming both
    for base in (os.path.abspath(root), root_resolved):
        if lexical == base:
            return "."
        prefix = base.rstrip(os.sep) + os.sep
        if lexical.startswith(prefix):
            return lexical[len(prefix) :]
    return "." if real == root_resolved else real[len(root_resolved.rstrip(os.sep) + os.sep) :]


def read_regular(path: Path, max_bytes: int) -> bytes:
    """A regular file's bytes, refused (UnknownFile) when it is missing, a folder, something else
    than a regular file, or over `max_bytes`: the size is checked before anything is read, and a
    named pipe or device in the workspace is never opened for a blocking read (a FIFO named
    `secret.py` would hang the reader until some process wrote to it)."""
    try:  # one open, no stat before it: a chat turn reads tens of files
        # Non-blocking, so that opening a pipe returns at once (and is then refused); a terminal
        # device must not become this process's controlling terminal.
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags)
    except ValueError:  # a NUL character in the name: no file can have it
        raise UnknownFile(f"{str(path)!r}: a file name cannot contain a NUL character") from None
    except (FileNotFoundError, NotADirectoryError):  # as exists() judged: a file in the path too
        raise UnknownFile(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UnknownFile(f"{path}: is a folder, not a file") from None
    except OSError as exc:
        raise UnknownFile(f"{path}: cannot read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise UnknownFile(f"{path}: is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise UnknownFile(f"{path}: not a regular file (a pipe, socket or device)")
        if info.st_size > max_bytes:
            raise FileTooLarge(f"{path}: too large ({info.st_size} bytes, at most {max_bytes})")
        with open(fd, "rb", closefd=False) as file:
            data = file.read(max_bytes + 1)  # one byte more: the file may have grown since the stat
    except OSError as exc:
        raise UnknownFile(f"{path}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise FileTooLarge(f"{path}: too large (over {max_bytes} bytes)")
    return data


def read_document(path: Path) -> str:
    """A document's text for context assembly; clear errors for what cannot be one."""
    return document_text(read_regular(path, MAX_DOCUMENT_BYTES), str(path))


def read_stream_document(stream: BinaryIO, shown: str) -> str:
    """An unsaved document's text from a byte stream (`--stdin`), read and decoded as a file on
    disk is: the same size limit, binary refused, bad bytes replaced (a text-mode read kept them
    as lone surrogates, which the tokenizer refused with a TypeError)."""
    data = stream.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise FileTooLarge(f"{shown}: too large (over {MAX_DOCUMENT_BYTES} bytes)")
    return document_text(data, shown)


def document_text(data: bytes, shown: str) -> str:
    """A document's bytes as text: UTF-8 with bad bytes replaced; UnknownFile if it looks binary."""
    if b"\0" in data[:8192]:
        raise UnknownFile(f"{shown}: looks binary")
    return data.decode("utf-8", errors="replace")
