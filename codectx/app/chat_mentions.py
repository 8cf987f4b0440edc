"""@-mention completion: the workspace's files, folders and symbols that match what the user typed.

Values only (the surfaces list the kinds themselves), most relevant first: the editor's own file,
then files in its folder, then the rest; matches of the start of a name before matches inside it.
Files come from the index (what codectx indexed: never-send and ignored files are not there),
else from a shallow walk of the workspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codectx.app.chat_model import WireRecord
from codectx.app.index import Store, language_for

LIMIT = 50
WALK_LIMIT = 5000
SKIP = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".codectx", ".tox"}


@dataclass(frozen=True)
class MentionItem(WireRecord):
    """One completion item for an @-mention (docs/chat-protocol.md)."""

    kind: str
    value: str
    label: str
    detail: str = ""


def workspace_files(store: Store | None, root: Path | None) -> list[str]:
    if store is not None:
        try:
            return sorted(store.file_records())
        except Exception:  # a damaged index: walk instead
            pass
    if root is None:
        return []
    found: list[str] = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if set(rel.parts) & SKIP or any(p.startswith(".") for p in rel.parts):
            continue
        if path.is_file() and not path.is_symlink():
            found.append(rel.as_posix())
            if len(found) >= WALK_LIMIT:
                break
    return found


def _rank(value: str, query: str, current: str) -> tuple[int, int, str]:
    name = value.rstrip("/").rsplit("/", 1)[-1].lower()
    near = current.rsplit("/", 1)[0] if "/" in current else ""
    where = 0 if value == current else (1 if near and value.startswith(near + "/") else 2)
    return (where, 0 if name.startswith(query) or value.lower().startswith(query) else 1, value)


def mention_items(
    store: Store | None,
    root: Path | None,
    query: str,
    kind: str | None,
    current: str = "",
    allowed: object = None,
) -> list[MentionItem]:
    """Up to LIMIT values of `kind` (or of files, folders and symbols) matching `query`."""
    q = query.strip().lower()
    files = [f for f in workspace_files(store, root) if allowed is None or allowed(f)]  # type: ignore[operator]
    items: list[MentionItem] = []
    if kind in (None, "file"):
        hits = sorted((f for f in files if q in f.lower()), key=lambda f: _rank(f, q, current))
        items += [MentionItem("file", f, f) for f in hits[:LIMIT]]
    if kind in (None, "folder"):
        folders = {f.rsplit("/", 1)[0] + "/" for f in files if "/" in f}
        hits = sorted((f for f in folders if q in f.lower()), key=lambda f: _rank(f, q, current))
        items += [MentionItem("folder", f, f) for f in hits[:LIMIT]]
    if kind in (None, "symbol") and store is not None:
        items += _symbols(store, files, q, current)
    return items[:LIMIT]


def _symbols(store: Store, files: list[str], q: str, current: str) -> list[MentionItem]:
    found: list[tuple[tuple[int, int, str], MentionItem]] = []
    ordered = sorted(files, key=lambda f: _rank(f, "", current)[0])
    for path in ordered[:WALK_LIMIT]:
        if not language_for(path):
            continue
        try:
            sites = store.symbols_in_file(path)
        except Exception:
            continue
        for site in sites:
            if q in site.name.lower():
                rank = (_rank(path, "", current)[0], 0 if site.name.lower().startswith(q) else 1, site.name)
                found.append(
                    (rank, MentionItem("symbol", site.name, site.name, f"{path}:{site.start_line + 1}"))
                )
        if len(found) >= LIMIT * 4:
            break
    return [item for _, item in sorted(found, key=lambda x: x[0])][:LIMIT]
