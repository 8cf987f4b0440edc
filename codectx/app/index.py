"""The application layer's one door to the index and the retriever (codectx.indexer, codectx.retriever).

Everything in codectx.app, codectx.lsp, codectx.backend and the shell commands that needs the
index, the embedder, context assembly, search, parsing or background indexing goes through
this module; nothing there imports indexer/ or retriever/ directly. What comes back is typed
by the Protocols below, so callers depend on the shape, not on the concrete classes (mypy
checks that the concrete ones have it, here, where they are returned).

The heavy modules (LanceDB, tree-sitter, onnxruntime) are imported inside the functions, at
first use: importing codectx.app costs nothing, and the language server pays for them in a
worker thread while it warms up (`warm_imports`), never on its event loop.

The shapes of what comes through (Protocols and dataclasses) are in codectx.app.index_types,
re-exported here; the lookups for tool clients (MCP) are this module's last section.
"""

from __future__ import annotations

import importlib
import io
import logging
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

# The shapes of what this door returns; their home is codectx.app.index_types (re-exported here).
from codectx.app.index_types import AssembledContext as AssembledContext
from codectx.app.index_types import ContextBudget as ContextBudget
from codectx.app.index_types import ContextPiece as ContextPiece
from codectx.app.index_types import DefinitionMatch as DefinitionMatch
from codectx.app.index_types import DefinitionSite as DefinitionSite
from codectx.app.index_types import IndexCounts as IndexCounts
from codectx.app.index_types import IndexFigures as IndexFigures
from codectx.app.index_types import IndexRun as IndexRun
from codectx.app.index_types import Named as Named
from codectx.app.index_types import NameLookup as NameLookup
from codectx.app.index_types import ProgressCallback as ProgressCallback
from codectx.app.index_types import QueryEmbedder as QueryEmbedder
from codectx.app.index_types import RankedPiece as RankedPiece
from codectx.app.index_types import RecentRegion as RecentRegion
from codectx.app.index_types import ReferenceSite as ReferenceSite
from codectx.app.index_types import SearchAnswer as SearchAnswer
from codectx.app.index_types import Searcher as Searcher
from codectx.app.index_types import SearchHit as SearchHit
from codectx.app.index_types import Span as Span
from codectx.app.index_types import Store as Store
from codectx.errors import UsageError

# The retriever's request errors, re-exported for the shell commands.
from codectx.retriever.errors import BadRequest as BadRequest
from codectx.retriever.errors import FileTooLarge as FileTooLarge
from codectx.retriever.errors import UnknownFile as UnknownFile
from codectx.settings import Settings

if TYPE_CHECKING:  # concrete types, for annotations and a cast only
    from codectx.retriever.context import RecentEdit
    from codectx.retriever.snapshot import IndexSnapshot

log = logging.getLogger(__name__)

# What the language server imports ahead of the first request (LanceDB and parsers take seconds).
HEAVY_MODULES = (
    "codectx.indexer.storage.store",
    "codectx.indexer.parsing.parse",
    "codectx.retriever.context",
)


# ---- opening ------------------------------------------------------------------------------------


def open_index(settings: Settings, require_chunks: bool = True) -> Store:
    """The workspace's index for a command; IndexNotFound / EmptyIndex name the command to build it."""
    from codectx.retriever.opening import open_store

    store: Store = open_store(settings, require_chunks)
    return store


def index_exists(index_dir: Path) -> bool:
    """Whether an index was written at `index_dir` (its meta file), read without importing LanceDB."""
    from codectx.indexer.storage.layout import index_exists as written

    found: bool = written(index_dir)
    return found


def open_existing(index_dir: Path) -> Store:
    """An index that is already there (never created here); CodectxError while there is none.

    No index: the answer comes before LanceDB is imported (a second on 2 cores), so a caller
    that only asks whether there is one yet (the language server's event loop) is not held."""
    from codectx.indexer.storage.layout import require_index

    require_index(index_dir)
    from codectx.indexer.storage.store import IndexStore

    store: Store = IndexStore.open(index_dir, create=False)
    return store


def load_embedder(settings: Settings) -> QueryEmbedder:
    """The embedding model of these settings, loaded now (seconds)."""
    from codectx.indexer.embedding.embedder import Embedder

    embedder: QueryEmbedder = Embedder.from_settings(settings)
    return embedder


def embedder_key(settings: Settings) -> tuple[str, str]:
    """Settings that load the same model share one embedder."""
    return settings.index.model, settings.index.embed_backend


def warm_imports() -> list[str]:
    """Import the heavy modules now (call it from a worker thread); returns what failed to load."""
    missing: list[str] = []
    for name in HEAVY_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:
            missing.append(f"{name}: {exc}")
    try:  # the token counter reads its vocabulary on first use (~0.1 s of the first context)
        from codectx.retriever.tokens import default_counter

        default_counter().count("warm up")
    except Exception as exc:
        missing.append(f"token counter: {exc}")
    return missing


# ---- documents ----------------------------------------------------------------------------------


def document_root(file: Path, root: str | Path | None = None) -> Path:
    """The workspace of a document named on the command line (its real path must be inside)."""
    from codectx.retriever.opening import document_root as find

    found: Path = find(file, root)
    return found


def relative_path(root: Path, path: str | Path) -> str:
    """A user-given path as a POSIX path relative to the workspace root (inside it, or UnknownFile)."""
    from codectx.retriever.opening import relative_path as rel

    posix: str = rel(root, path)
    return posix


def read_document(path: Path) -> str:
    """A document's text; clear errors for folders, binary and huge files."""
    from codectx.retriever.opening import read_document as read

    text: str = read(path)
    return text


def read_stdin_document(shown: str) -> str:
    """The text of an unsaved document piped on stdin (`--stdin`), handled as `read_document`
    handles a file: the same size limit, binary refused, undecodable bytes replaced."""
    from codectx.retriever.opening import read_stream_document

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # stdin replaced by a text stream (an embedding host, a test): its text
        stream = io.BytesIO(sys.stdin.read().encode("utf-8", errors="surrogateescape"))
    text: str = read_stream_document(stream, shown)
    return text


def read_regular(path: Path, max_bytes: int) -> bytes:
    """A regular file's bytes up to `max_bytes` (FileTooLarge over it, checked before reading);
    UnknownFile for a missing path, a folder, a pipe or a device (never opened for a blocking read)."""
    from codectx.retriever.opening import read_regular as read

    data: bytes = read(path, max_bytes)
    return data


def language_for(path: str) -> str | None:
    """The language of a workspace path by its name; None when codectx does not parse it."""
    try:
        from codectx.indexer.parsing.languages import language_for as lookup
    except ImportError:
        return None
    language: str | None = lookup(path)
    return language


def enclosing_definition(
    text: str, language: str | None, line: int, character: int
) -> tuple[int, int] | None:
    """(first line, last line) of the innermost definition around a position, or None."""
    try:
        from codectx.retriever.cursor_info import cursor_info

        scope = cursor_info(text, language, line, character).enclosing
    except Exception:  # no parser for it, or a parse failure: the caller uses nearby lines
        return None
    return None if scope is None else (int(scope.start_line), int(scope.end_line))


def has_syntax_errors(text: str, language: str) -> bool:
    """Whether tree-sitter finds syntax errors; raises when there is no grammar for `language`."""
    from codectx.indexer.parsing.parse import has_syntax_errors as check

    return bool(check(text, language))


# ---- context and search -------------------------------------------------------------------------


def recent_edit(path: str, start_line: int, end_line: int, text: str) -> RecentRegion:
    """A region the user edited lately, as context assembly takes it."""
    from codectx.retriever.context import RecentEdit

    region: RecentRegion = RecentEdit(path, start_line, end_line, text)
    return region


def assemble(
    store: Store | IndexSnapshot,
    settings: Settings,
    path: str,
    text: str,
    line: int,
    character: int,
    *,
    recent: Sequence[RecentRegion] = (),
    embedder: QueryEmbedder | None = None,
) -> AssembledContext:
    """Completion context at a 0-based (line, character) of `path` (blocking: CPU and disk)."""
    from codectx.retriever.context import assemble_context

    edits = cast("list[RecentEdit]", list(recent))  # made by recent_edit
    result: AssembledContext = assemble_context(
        store, settings, path, text, line, character, recent=edits, embedder=embedder
    )
    return result


def searcher(
    store: Store,
    settings: Settings,
    embedder: Callable[[], QueryEmbedder | None],
    *,
    preload: bool = False,
) -> Searcher:
    """Hybrid search over `store`; the embedder is asked for only when a query needs vectors."""
    from codectx.retriever.search import HybridSearcher

    # The retriever types its factory as never answering None; the app's answers None when vectors
    # are off, which the searcher handles (it then searches lexically).
    factory: Any = embedder
    engine: Searcher = HybridSearcher(store, settings, embedder_factory=factory, preload=preload)
    return engine


# ---- background indexing ------------------------------------------------------------------------


def index_folder(
    root: Path,
    settings: Settings,
    paths: Sequence[Path] | None,
    *,
    progress: ProgressCallback,
    embedder: QueryEmbedder | None,
    near: Callable[[], Sequence[str]] | None = None,
) -> IndexRun:
    """Build or refresh a folder's index (blocking): only `paths` when given, else the whole folder.
    `near`: the workspace-relative files whose vectors come first (the open documents' neighbourhood)."""
    from codectx.indexer.pipeline import index_paths, index_workspace

    shared: Any = embedder  # the session's loaded model, so indexing loads no second copy
    report: IndexRun
    if paths:
        # The lookup files are copied later, once saves pause (IndexKeeper): on a large index the
        # copy costs more than the run itself.
        report = index_paths(
            root, list(paths), settings, progress=progress, embedder=shared, lookups=False, near=near
        )
    else:
        report = index_workspace(
            root, settings, progress=progress, embedder=shared, lock_wait_s=2.0, near=near
        )
    return report


def write_lookup_files(settings: Settings) -> bool:
    """Bring the folder's lookup files up to date (blocking); False if another writer holds it."""
    from codectx.indexer.pipeline import write_lookups

    return bool(write_lookups(settings.index_dir()))


def first_files(root: Path, settings: Settings, opened: Sequence[Path], limit: int = 60) -> list[Path]:
    """What an unindexed workspace indexes first, at most `limit`, in this order: the open files,
    what they import, the other files of their folders, then what the imports import (and so on,
    through the workspace files the imports resolve to). The full run follows."""
    from codectx.indexer.parsing.languages import language_for as lookup
    from codectx.indexer.parsing.parse import file_imports

    root = root.resolve()

    def inside(path: Path) -> bool:
        return path.is_file() and root in path.parents

    def imported_by(path: Path) -> list[Path]:
        rel = path.relative_to(root).as_posix()
        language = lookup(rel)
        if not language:
            return []
        try:
            found = file_imports(rel, path.read_text("utf-8", errors="replace"), language, settings, root)
        except Exception:  # unreadable or unparsable: its imports stay unknown
            return []
        return [root / i.resolved for i in found if i.resolved]

    out: dict[Path, None] = {}

    def take(paths: Sequence[Path]) -> list[Path]:
        added = []
        for path in paths:
            if len(out) >= limit:
                break
            if path not in out and inside(path):
                out[path] = None
                added.append(path)
        return added

    level = take([p.resolve() for p in opened])
    folders = list(dict.fromkeys(p.parent for p in level))
    level = take([i for p in level for i in imported_by(p)])
    for folder in folders:
        take([e for e in sorted(folder.iterdir()) if lookup(e.name)])
    while level and len(out) < limit:
        level = take([i for p in level for i in imported_by(p)])
    return list(out)


# ---- lookups for tool clients (MCP): definitions at a position, references, index figures ---------


_NAME_CHARS = re.compile(r"[\w$]")


def chain_at(line_text: str, character: int) -> str:
    """The identifier chain that ends with the word under a 0-based character ("self.session" with
    the cursor on `session` of `self.session.send()`), "" when there is no word there."""
    at = min(max(character, 0), len(line_text))
    if at == len(line_text) or not _NAME_CHARS.match(line_text[at]):
        if at > 0 and _NAME_CHARS.match(line_text[at - 1]):
            at -= 1  # just after a word: that word
        else:
            return ""
    end = at
    while end < len(line_text) and _NAME_CHARS.match(line_text[end]):
        end += 1
    start = at
    while start > 0 and (_NAME_CHARS.match(line_text[start - 1]) or line_text[start - 1] in ".:>-"):
        start -= 1
    return line_text[start:end].lstrip(".:>-")


def definitions_at(
    store: NameLookup, path: str, text: str, line: int, character: int
) -> list[DefinitionMatch]:
    """Definitions of the name at a 0-based (line, character) of `path` (its text `text`), resolved
    through the file's imports and scope like completion context is, best first."""
    from codectx.retriever.definitions import DefinitionResolver, local_types

    rows = text.split("\n")
    chain = chain_at(rows[line], character) if 0 <= line < len(rows) else ""
    if not chain:
        return []
    concrete: Any = store
    resolver = DefinitionResolver(
        concrete, path, language_for(path) or "", concrete.file_imports(path), local_types(text)
    )
    return [DefinitionMatch(r.definition, r.used_as, r.how) for r in resolver.resolve(chain)]


def references_to(store: Store, name: str, *, limit: int, candidates: int = 400) -> list[ReferenceSite]:
    """Uses of `name` (its last part when qualified: `Session.send` -> `send`) in the files whose
    chunks full-text search finds for it (the best `candidates` chunks), at most `limit`, by path
    and line. By name: a use of another `send` counts too."""
    short = re.split(r"[.:>]", name.strip())[-1]
    if not short:
        return []
    concrete: Any = store
    paths = list(dict.fromkeys(hit.chunk.path for hit in concrete.fts_search(short, candidates)))
    found: list[ReferenceSite] = []
    for path in sorted(paths):
        for ref in concrete.file_references(path):
            if ref.name == short:
                found.append(ReferenceSite(path, int(ref.line), int(ref.column), ref.name, ref.chain))
                if len(found) >= limit:
                    return found
    return found


def in_memory(store: Store) -> NameLookup:
    """The store's shared in-memory copy of its small tables (symbols, imports; the retriever's
    snapshot, the one a preloading searcher uses): name lookups of long-lived sessions in
    microseconds instead of a LanceDB scan each."""
    from codectx.retriever.snapshot import snapshot_of

    snapshot: NameLookup = snapshot_of(store)
    return snapshot


def early_snapshot(index_dir: Path) -> IndexSnapshot | None:
    """Index lookups over the index's lookup files, if they match the index now (no LanceDB
    import: indexer/storage/lookupfiles.py); None when there are none or they are stale."""
    from codectx.indexer.storage.lookupfiles import LookupReader
    from codectx.retriever.snapshot import IndexSnapshot

    reader = LookupReader.open(index_dir)
    return IndexSnapshot.over_lookup_files(reader) if reader is not None else None


def hand_over(early: IndexSnapshot, store: Store) -> None:
    """The store just opened after `early` answered: its lookups reuse the tables `early` read
    when the index has not moved since (no second read of them through LanceDB)."""
    from codectx.indexer.storage.lookupfiles import LookupReader, stamp
    from codectx.retriever.snapshot import snapshot_of

    copies = cast(LookupReader, early.store)  # the snapshot `early_snapshot` made
    if copies.at == stamp(store.index_dir):
        snapshot_of(store).seed_lookups(copies.columns())


def load_in_background(store: Store, after: Callable[[], object] | None = None) -> None:
    """Start loading the store's in-memory snapshot on a background thread (once per store):
    until it is in, context and name lookups are answered from index lookups, then from memory
    (the switch is logged). For long-lived processes; a small index is left to load at once on
    first use, as before (it takes well under a second). `after`: a wait the loading thread
    makes before it starts (the language server's: its first answer, bounded)."""
    from codectx.retriever.snapshot import snapshot_of

    snapshot_of(store).load_in_background(after)


def warm_lookups(store: Store) -> None:
    """While the store's snapshot loads in the background, read the tables its lookups answer
    from now (blocking: a worker thread), so the first request does not wait for them."""
    from codectx.retriever.snapshot import snapshot_of

    snapshot_of(store).warm_lookups()


def see_changes(store: Store) -> None:
    """After a write to the index, make the store's snapshot read what changed now (not at its
    next periodic check)."""
    from codectx.retriever.snapshot import snapshot_of

    snapshot_of(store).refresh_now()


def snapshot_phase(store: Store) -> str:
    """How the store's lookups are answered: "direct", "lookup" (the snapshot is loading in the
    background) or "memory" (loaded)."""
    from codectx.retriever.snapshot import snapshot_of

    phase: str = snapshot_of(store).phase
    return phase


def hold_background_loads(gate: Path | None) -> None:
    """Test hook (`CODECTX_TEST_SNAPSHOT_GATE`): background snapshot loads wait until `gate` exists."""
    from codectx.retriever.snapshotload import hold_loads_until

    hold_loads_until(gate)


def index_figures(store: Store) -> IndexFigures:
    """Files, chunks, symbols and vectors of an open index (reads the chunk table: ~tens of ms)."""
    concrete: Any = store
    figures: IndexFigures = concrete.stats()
    return figures


def search_filters(languages: Sequence[str] | None, glob: str | None) -> tuple[list[str] | None, str | None]:
    """Search filters checked once for every surface: a language no file can have and a malformed
    glob are `UsageError`s naming the value (and the nearest known languages)."""
    import difflib

    from codectx.indexer.parsing.languages import known_languages
    from codectx.indexer.storage.pathglob import path_glob

    names = [name.strip().lower() for name in languages or () if name.strip()]
    known = known_languages()
    for name in names:
        if name not in known:
            near = difflib.get_close_matches(name, sorted(known), n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else f"; known: {', '.join(sorted(known))}"
            raise UsageError(f"unknown language {name!r}{hint}")
    if glob:
        path_glob(glob)
    return names or None, glob or None
