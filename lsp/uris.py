"""Which document URIs the server will touch: local files inside a workspace folder only.

Anything else (untitled buffers, remote schemes, files outside every
workspace folder, paths that escape through `..` or symlinks) is refused,
so an editor can never make the server read or send code it was not given.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlparse

from codectx.lsp.errors import UriRefused


def uri_to_path(uri: str) -> Path:
    """The local path of a `file:` URI; any other scheme is refused."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        scheme = parsed.scheme or "(none)"
        raise UriRefused(f"codectx only works on local files; refused a '{scheme}:' document")
    if parsed.netloc not in ("", "localhost"):
        raise UriRefused(f"codectx only works on local files; refused a file on host '{parsed.netloc}'")
    if parsed.query or parsed.fragment:
        # Editors percent-encode `?` and `#` in file names; a raw one is a query or fragment, which
        # names no file (`.env?x=1` was read as `.env`, but judged apart from it in places).
        # The path only: a query can hold a password, and this message goes to logs.
        raise UriRefused(f"not a document: a file URI with a query or fragment ({unquote(parsed.path)})")
    raw = unquote(parsed.path)
    if "\0" in raw:  # `%00`: no file has such a name, and the OS calls would raise ValueError
        raise UriRefused(f"not a file name (it contains a NUL character): {uri}")
    if not raw.startswith("/"):
        raise UriRefused(f"not an absolute file URI: {uri}")
    return Path(raw)


def path_to_uri(path: Path) -> str:
    return path.absolute().as_uri()


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        # A symlink loop or an unreadable parent: fall back to the lexical form.
        return Path(*Path(path).absolute().parts)


def folder_for(path: Path, folders: Iterable[Path]) -> Path:
    """The innermost workspace folder holding `path`, after resolving symlinks and `..`."""
    real = _resolved(path)
    best: Path | None = None
    for folder in folders:
        root = _resolved(folder)
        inside = real == root or root in real.parents
        if inside and (best is None or len(root.parts) > len(best.parts)):
            best = root
    if best is None:
        raise UriRefused(f"{path} is outside the workspace folders; codectx ignores it")
    return best


def relative_posix(path: Path, root: Path) -> str:
    return _resolved(path).relative_to(root).as_posix()
