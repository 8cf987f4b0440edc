"""Indexing a workspace: discover, parse, commit the lexical index, then fill in vectors.

Stage 1 (lexical + symbols) is committed in batches and is searchable at once;
stage 2 embeds only chunk contents that have no vector yet for the model, so
unchanged, moved or duplicated chunks are never embedded twice, and a run
interrupted anywhere is completed by the next one. Re-runs touch only what
changed: size and mtime first, then the content hash.

`index_workspace` is what the CLI and the language server call; `index_paths`
re-indexes a few files (an editor's save). Both hold the index lock, decide which files change,
and run the stages (indexer/stages.py) on them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from codectx.indexer.embedding.embedder import Embedder, name_model_id
from codectx.indexer.embedding.order import Near
from codectx.indexer.errors import IndexCorrupt, IndexLocked, unwritable
from codectx.indexer.report import IndexReport, ProgressEvent, ProgressFn
from codectx.indexer.stages import (
    commit_lexical,
    embed_pending,
    emit,
    emit_chunk_count,
    open_for_write,
    why,
)
from codectx.indexer.storage import lookupfiles
from codectx.indexer.storage.lock import IndexLock
from codectx.indexer.storage.store import FileRecord, IndexStore
from codectx.indexer.walk.content import sniff
from codectx.indexer.walk.discovery import SourceFile, discover_files
from codectx.indexer.walk.manifest import (
    Manifest,
    QuickCheck,
    check_workspace,
    db_snapshot,
    fingerprint,
    summary,
)
from codectx.indexer.walk.walkrecord import discover_cached

from codectx.privacy.policy import is_never_index
from codectx.settings import Settings

__all__ = ["IndexReport", "ProgressEvent", "ProgressFn", "index_paths", "index_workspace", "write_lookups"]


def _finish(
    store: IndexStore, report: IndexReport, model_id: str | None, embedded: bool, lookups: bool = True
) -> None:
    stats = store.stats(model_id)
    report.files = stats.files
    report.chunks = stats.chunks
    report.chunks_per_language = stats.chunks_per_language
    report.model_id = model_id
    report.vectors_pending = stats.vectors_pending
    meta: dict[str, Any] = {"last_indexed": time.time()}
    if model_id and embedded:
        meta["model_id"] = model_id
    store.update_meta(**meta)
    if lookups:
        refresh_lookups(store, report)


def refresh_lookups(store: IndexStore, report: IndexReport) -> None:
    """Copy the tables into the index's lookup files (indexer/storage/lookupfiles.py), which an
    editor reads at start-up instead of opening LanceDB; a failure is a warning, not an error:
    the editor then opens the store first, as it did before there were such files."""
    try:
        lookupfiles.refresh(store.index_dir, store.columns())
    except OSError as exc:
        report.warnings.append(f"the index's lookup files were not written ({exc.strerror or exc})")


def _embedder_for(settings: Settings, embedder: Embedder | None, embed: bool | None) -> Embedder | None:
    if embed is None:
        embed = bool(settings.index.embed)
    if not embed:
        return None
    return embedder or Embedder.from_settings(settings)


def _start(
    root: Path | str, settings: Settings, lock_wait_s: float
) -> tuple[Path, Path, IndexReport, IndexLock]:
    """A run's resolved root, index folder and empty report, and the index lock, now held."""
    resolved = Path(root).resolve()
    index_dir = settings.index_dir()
    lock = IndexLock(index_dir)
    lock.acquire(lock_wait_s)
    return resolved, index_dir, IndexReport(root=str(resolved), index_dir=str(index_dir)), lock


def index_workspace(
    root: Path,
    settings: Settings,
    progress: ProgressFn | None = None,
    *,
    embed: bool | None = None,
    embedder: Embedder | None = None,
    lock_wait_s: float = 0.0,
    check_manifest: bool = True,
    checked: QuickCheck | None = None,
    near: Near | None = None,
) -> IndexReport:
    """Bring the index of `root` up to date: lexical stage first, then vectors.

    `check_manifest=False` skips the quick no-op check; a caller that has just made it
    passes its outcome as `checked`, and the run reuses its walk of the workspace.

    `embed` overrides settings.index.embed; `embedder` reuses a loaded model (the language server);
    `near` names the files whose vectors come first (indexer/embedding/order.py).
    """
    root, index_dir, report, lock = _start(root, settings, lock_wait_s)
    try:
        t0 = time.perf_counter()
        wants_vectors = bool(settings.index.embed) if embed is None else embed
        walked_before = checked.walk_s if checked is not None else 0.0
        if checked is None and check_manifest:
            checked = check_workspace(root, settings, wants_vectors)
        quick = checked.report if checked is not None else None
        if quick is not None and not lookupfiles.is_current(index_dir):
            # Nothing changed, but the lookup files are missing or stale (an index written
            # before them, or a copy that failed): copy the tables once.
            refresh_lookups(IndexStore.open(index_dir), quick)
        if quick is not None:  # nothing changed since the last complete run
            quick.timings["total"] = time.perf_counter() - t0
            emit(progress, "done", quick.files, quick.files)
            return quick
        notes = list(checked.notes) if checked is not None else []
        deep = not (checked is not None and checked.vouched)
        try:
            report.warnings.extend(notes)
            started = (t0, walked_before)
            return _index_once(
                root, settings, report, checked, progress, embed, embedder, deep, started, near
            )
        except IndexCorrupt as exc:
            # Damage found midway (a table file that no longer reads): rebuild once, now.
            report = IndexReport(root=str(root), index_dir=str(index_dir), warnings=notes)
            report.rebuilt = why(exc)
            IndexStore.reset(index_dir, keep_vectors=True)
            return _index_once(
                root, settings, report, None, progress, embed, embedder, False, (t0, 0.0), near
            )
    except OSError as exc:  # the index's own files (manifest, meta): a full disk, a read-only mount
        raise unwritable(index_dir, exc) from None
    finally:
        lock.release()


def _index_once(
    root: Path,
    settings: Settings,
    report: IndexReport,
    checked: QuickCheck | None,
    progress: ProgressFn | None,
    embed: bool | None,
    embedder: Embedder | None,
    deep: bool,
    started: tuple[float, float],
    near: Near | None = None,
) -> IndexReport:
    """One run past the quick check (the caller holds the lock); `deep`: read every table back
    before trusting it. `started`: when the run began, and how long the caller's walk took
    before that (it counts as discovery when the run reuses it)."""
    index_dir = settings.index_dir()
    t0, walked_before = started
    store = open_for_write(index_dir, report, deep)
    emit(progress, "discover", 0, 0)
    known = _indexed_files(store, checked, report)
    # The quick check's walk is good when it trusted exactly these records (no writer since).
    if checked is not None and checked.found is not None and checked.known == known:
        found = checked.found
        t0 -= walked_before  # the caller's walk is this run's discovery stage
    else:
        found = discover_cached(root, settings, index_dir, fingerprint(settings), known=known)
    report.note_discovery(found)
    t1 = time.perf_counter()
    report.timings["discover"] = t1 - t0
    emit(progress, "discover", len(found.files), len(found.files))

    current = {sf.path for sf in found.files}
    removed = sorted(p for p in known if p not in current)
    removed_set = set(removed)
    changed = []
    for sf in found.files:
        if known.get(sf.path) == (sf.size, sf.mtime_ns):
            report.unchanged += 1
        else:
            changed.append(sf)
    written: dict[str, FileRecord] = {}
    commit_lexical(store, changed, removed, set(known), settings, root, report, progress, written)
    t2 = time.perf_counter()
    report.timings["lexical"] = t2 - t1
    store.update_meta(lexical_indexed=time.time())
    emit_chunk_count(store, progress)

    emb = _embedder_for(settings, embedder, embed)
    if emb is not None:
        embed_pending(store, emb, report, progress, near=near)
        report.timings["embed"] = time.perf_counter() - t2
        store.prune_vectors(emb.model_id)
        store.prune_vectors(name_model_id(emb.model_id))
    store.compact()
    _finish(store, report, emb.model_id if emb else store.model_id, emb is not None)
    # The files table now holds the records read above, less the removed paths, plus the
    # records just written (a file that failed to parse keeps its old record): no re-read.
    files = {p: v for p, v in known.items() if p not in removed_set}
    files.update((p, (r.size, r.mtime_ns)) for p, r in written.items())
    _write_manifest(store, settings, report, files, embedded=emb is not None)
    report.timings["total"] = time.perf_counter() - t0
    emit(progress, "done", report.files, report.files)
    return report


def _indexed_files(
    store: IndexStore, checked: QuickCheck | None, report: IndexReport
) -> dict[str, tuple[int, int]]:
    """The (size, mtime_ns) of every file the index holds.

    From the files table, unless the manifest the quick check read is still there, untouched:
    every write to the index drops the manifest first and only a complete run writes a new one,
    so an untouched manifest lists exactly the index's files (and reading the table costs a
    tenth of a one-file re-index).
    """
    if (
        checked is not None
        and checked.known is not None
        and checked.manifest_sig is not None
        and not report.rebuilt
        and not report.recovered
        and Manifest.current_sig(store.index_dir) == checked.manifest_sig
    ):
        return dict(checked.known)
    return {p: (r.size, r.mtime_ns) for p, r in store.file_records().items()}


def _write_manifest(
    store: IndexStore,
    settings: Settings,
    report: IndexReport,
    files: dict[str, tuple[int, int]],
    embedded: bool,
) -> None:
    """Record what this complete run indexed, so that an unchanged workspace is checked quickly.

    `files`: the (size, mtime_ns) of every file record in the index now.
    """
    embedded = embedded and not report.vectors_pending
    manifest = Manifest(fingerprint(settings), files, embedded, summary(report))
    manifest = replace(manifest, db_files=db_snapshot(store.index_dir))  # vouches for the tables
    manifest.write(store.index_dir)


def _relative(root: Path, path: Path | str) -> str | None:
    p = Path(path)
    if not p.is_absolute():
        p = root / p
    try:
        return p.resolve().relative_to(root).as_posix()
    except ValueError:
        return None


def index_paths(
    root: Path,
    paths: Iterable[Path | str],
    settings: Settings,
    progress: ProgressFn | None = None,
    *,
    embed: bool | None = None,
    embedder: Embedder | None = None,
    lock_wait_s: float = 5.0,
    lookups: bool = True,
    near: Near | None = None,
) -> IndexReport:
    """Re-index a few files (absolute or workspace-relative): changed ones rewritten, missing ones dropped.

    Files the index already knows are re-checked against the never-index list, the size cap and
    the binary sniff; unknown files go through discovery (`discover_files`) so ignore rules apply.
    `lookups=False` leaves the lookup files stale (copying the tables costs more than a one-file
    run on a large index): the caller brings them up to date later (`write_lookups`).
    """
    root, index_dir, report, lock = _start(root, settings, lock_wait_s)
    try:
        t0 = time.perf_counter()
        store = open_for_write(index_dir, report)
        if not report.rebuilt:
            try:
                return _index_some(
                    store, root, paths, settings, report, progress, embed, embedder, t0, lookups, near
                )
            except IndexCorrupt as exc:  # found midway: the tables need a rebuild
                report.rebuilt = why(exc)
                IndexStore.reset(index_dir, keep_vectors=True)
        # A fresh index: the few files asked for would be all of it. Index the workspace.
        lock.release()
        full = index_workspace(
            root, settings, progress, embed=embed, embedder=embedder, lock_wait_s=lock_wait_s, near=near
        )
        full.rebuilt = report.rebuilt
        return full
    finally:
        lock.release()


def _index_some(
    store: IndexStore,
    root: Path,
    paths: Iterable[Path | str],
    settings: Settings,
    report: IndexReport,
    progress: ProgressFn | None,
    embed: bool | None,
    embedder: Embedder | None,
    t0: float,
    lookups: bool = True,
    near: Near | None = None,
) -> IndexReport:
    """The body of `index_paths` (the caller holds the lock)."""
    records = store.file_records()
    wanted: list[str] = []
    for path in paths:
        rel = _relative(root, path)
        if rel is None:
            report.errors.append(f"{path}: outside the workspace {root}")
        else:
            wanted.append(rel)
    unknown = [p for p in wanted if p not in records and (root / p).is_file()]
    discovered: dict[str, SourceFile] = {}
    if unknown:
        # The same rules as a full walk (ignore files along each path, never-index, symlinks),
        # for these paths only: a language server's first files in an unindexed Django took
        # 1.8 s of walking before.
        found = discover_files(root, settings, unknown)
        discovered = {sf.path: sf for sf in found.files}
    changed: list[SourceFile] = []
    removed: list[str] = []
    for rel in wanted:
        sf = discovered.get(rel) or _known_file(root, rel, records, settings)
        if sf is None:
            if rel in records:
                removed.append(rel)
            continue
        changed.append(sf)
    commit_lexical(store, changed, removed, set(records), settings, root, report, progress)
    emit_chunk_count(store, progress)
    emb = _embedder_for(settings, embedder, embed)
    if emb is not None:
        embed_pending(store, emb, report, progress, near=near)
    _finish(store, report, emb.model_id if emb else store.model_id, emb is not None, lookups)
    report.timings["total"] = time.perf_counter() - t0
    return report


def write_lookups(index_dir: Path) -> bool:
    """Bring the index's lookup files up to date after runs that left them stale; False when
    another writer holds the index (its run writes them) or the tables moved meanwhile."""
    if lookupfiles.is_current(index_dir):
        return True
    lock = IndexLock(index_dir)
    try:
        lock.acquire(0.0)
    except IndexLocked:
        return False
    try:
        return lookupfiles.refresh(index_dir, IndexStore.open(index_dir).columns())
    finally:
        lock.release()


def _known_file(
    root: Path, rel: str, records: dict[str, FileRecord], settings: Settings
) -> SourceFile | None:
    """A file already in the index, re-checked cheaply; None if it is gone or no longer indexable."""
    record = records.get(rel)
    if record is None or is_never_index(rel, settings):
        return None
    path = root / rel
    if is_never_index(os.path.relpath(os.path.realpath(path), os.path.realpath(root)), settings):
        return None  # a symlink that now leads to a secret-bearing file
    try:
        st = path.stat()
        if not path.is_file() or st.st_size > settings.index.max_file_bytes:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO swapped in meanwhile never blocks
        try:
            if sniff(os.read(fd, 8192), path.name) is not None:
                return None
        finally:
            os.close(fd)
    except OSError:
        return None
    return SourceFile(rel, str(path), st.st_size, st.st_mtime_ns, record.language)
