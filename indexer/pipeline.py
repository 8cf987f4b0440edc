"""Indexing a workspace: discover, parse, commit the lexical index, then fill in vectors.

Stage 1 (lexical + symbols) is committed in batches and is searchable at once;
stage 2 embeds only chunk contents that have no vector yet for the model, so
unchanged, moved or duplicated chunks are never embedded twice, and a run
interrupted anywhere is completed by the next one. Re-runs touch only what
changed: size and mtime first, then the content hash.

`index_workspace` is what the CLI and the language server call; `index_paths`
re-indexes a few files (an editor's save). Both hold the index lock.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from codectx.indexer.embedding.embedder import Embedder, name_model_id
from codectx.indexer.errors import IndexCorrupt, IndexSchemaMismatch, unwritable
from codectx.indexer.parsing.parse import parse_file
from codectx.indexer.report import IndexReport, ProgressEvent, ProgressFn
from codectx.indexer.storage.lock import IndexLock
from codectx.indexer.storage.store import FileData, FileRecord, IndexStore
from codectx.indexer.walk.content import decode_source, sniff
from codectx.indexer.walk.discovery import SourceFile, discover
from codectx.indexer.walk.manifest import (
    Manifest,
    QuickCheck,
    check_workspace,
    db_snapshot,
    fingerprint,
    summary,
)
from codectx.indexer.walk.reading import NotIndexed, read_discovered
from codectx.indexer.walk.walkrecord import discover_cached

from codectx.privacy.policy import is_never_index
from codectx.settings import Settings

__all__ = ["IndexReport", "ProgressEvent", "ProgressFn", "index_paths", "index_workspace"]

COMMIT_FILES = 400  # files per lexical commit: bigger is faster, smaller shows results sooner
EMBED_COMMIT = 256  # vectors per commit: a kill loses at most this much embedding work


def _emit(progress: ProgressFn | None, stage: str, done: int, total: int, message: str = "") -> None:
    if progress is not None:
        progress(ProgressEvent(stage, done, total, message))


def _why(exc: Exception) -> str:
    return str(exc).split("; run `codectx index`")[0]


def open_for_write(index_dir: Path, report: IndexReport, deep: bool = False) -> IndexStore:
    """Open (or create) the index for writing, checked (`IndexStore.verify`, every row read with
    `deep`); an incompatible or broken one is rebuilt, keeping the vectors that read back."""
    if not IndexStore.exists(index_dir) and (index_dir / "db").exists():
        report.rebuilt = f"{index_dir / 'meta.json'} is missing, so the tables beside it cannot be trusted"
    try:
        store = IndexStore.open(index_dir, create=True)
        report.warnings.extend(store.verify(deep))
    except IndexSchemaMismatch as exc:
        report.rebuilt = _why(exc)
        IndexStore.reset(index_dir)
        store = IndexStore.open(index_dir, create=True)
    except IndexCorrupt as exc:
        report.rebuilt = _why(exc)
        IndexStore.reset(index_dir, keep_vectors=True)
        store = IndexStore.open(index_dir, create=True)
    recovered = store.recover()
    if recovered == ["*"]:
        report.warnings.append("journal.json was not a journal of this codectx; every file is indexed again")
    report.recovered = len(recovered)
    return store


def parse_one(sf: SourceFile, settings: Settings, root: Path) -> tuple[FileData | None, NotIndexed | None]:
    """Parse one file into rows, or return why it was not (never raises for a bad file).

    The file is re-checked as it is read (`read_discovered`): still a regular file, still
    inside the workspace, still under the size cap. A parse past the time budget gives rows
    (plain-text chunks) and a NotIndexed with reason "parse-timeout" as a warning.
    """
    data = read_discovered(sf, root, settings)
    if isinstance(data, NotIndexed):
        return None, data
    text = decode_source(data)
    try:
        parsed = parse_file(sf.path, text, sf.language, settings, root)
    except Exception as exc:  # a parser bug on one file must not stop the run
        return None, NotIndexed("cannot-parse", f"{sf.path}: cannot parse: {type(exc).__name__}: {exc}")
    note = None
    if parsed.parse_timed_out:
        note = NotIndexed(
            "parse-timeout",
            f"{sf.path}: parsing took longer than index.parse_timeout_s "
            f"({settings.index.parse_timeout_s:g} s); indexed as plain text, without symbols",
        )
    record = FileRecord(
        path=sf.path,
        size=sf.size,
        mtime_ns=sf.mtime_ns,
        content_hash=hashlib.sha256(data).hexdigest(),
        language=sf.language,
        n_chunks=len(parsed.chunks),
        syntax_errors=parsed.syntax_errors,
    )
    return FileData(record, parsed.chunks, parsed.definitions, parsed.imports, parsed.references), note


def _parsed(
    changed: Sequence[SourceFile], settings: Settings, root: Path
) -> Iterator[tuple[SourceFile, FileData | None, NotIndexed | None]]:
    """Parse results in input order.

    Sequential: a process pool would need `python -m codectx` to be import-safe for spawned
    workers (codectx/__main__.py has no `__name__` guard), and fork is unsafe with LanceDB's threads.
    """
    for sf in changed:
        item, error = parse_one(sf, settings, root)
        yield sf, item, error


def _commit_lexical(
    store: IndexStore,
    changed: Sequence[SourceFile],
    removed: Sequence[str],
    known: set[str],
    settings: Settings,
    root: Path,
    report: IndexReport,
    progress: ProgressFn | None,
    written: dict[str, FileRecord] | None = None,
) -> None:
    """Parse changed files and commit them in batches; adds "parse" and "commit" timings.

    `written` receives the file record of every file committed.
    """
    batch: list[FileData] = []
    pending_removed = list(removed)
    parse_s = commit_s = 0.0
    done = 0

    def commit() -> None:
        nonlocal batch, pending_removed, commit_s
        t = time.perf_counter()
        store.write_files(batch, pending_removed, known)
        commit_s += time.perf_counter() - t
        if written is not None:
            written.update((item.record.path, item.record) for item in batch)
        if batch or pending_removed:
            _emit(progress, "commit", done, len(changed))
        batch, pending_removed = [], []

    t = time.perf_counter()
    for i, (sf, item, error) in enumerate(_parsed(changed, settings, root), 1):
        done = i
        parse_s += time.perf_counter() - t
        if error is not None and item is None:
            report.errors.append(error.message)
            report.add_skipped(sf.path, error.reason)
        elif error is not None:
            report.warnings.append(error.message)
        if item is not None:
            if item.record.syntax_errors:
                report.syntax_error_files.append(sf.path)
            batch.append(item)
            if sf.path in known:
                report.updated += 1
            else:
                report.added += 1
            report.chunks_written += len(item.chunks)
        if len(batch) >= COMMIT_FILES:
            commit()
        if i % 50 == 0 or i == len(changed):
            _emit(progress, "parse", i, len(changed), sf.path)
        t = time.perf_counter()
    commit()
    t = time.perf_counter()
    store.ensure_fts()
    commit_s += time.perf_counter() - t
    report.removed += len(removed)
    report.timings["parse"] = report.timings.get("parse", 0.0) + parse_s
    report.timings["commit"] = report.timings.get("commit", 0.0) + commit_s


def embed_pending(
    store: IndexStore,
    embedder: Embedder,
    report: IndexReport,
    progress: ProgressFn | None = None,
    only: Iterable[str] | None = None,
) -> None:
    """Embed every chunk content that has no vector for the embedder's model, committing as it goes;
    then the same for name vectors (`name_model_id`), which are short and cheap.

    `only` limits the work to some content hashes (e.g. the chunks of a just-saved file).
    """
    model_id = embedder.model_id
    names_id = name_model_id(model_id)
    live = store.chunk_hashes()
    pending_set = live - store.vector_hashes(model_id)
    names_set = live - store.vector_hashes(names_id)
    if only is not None:
        pending_set &= set(only)
        names_set &= set(only)
    pending = sorted(pending_set)
    report.model_id = model_id
    if not pending and not names_set:
        return
    _emit(progress, "model", 0, len(pending), f"loading embedding model {model_id}")
    report.embed_backend = embedder.backend
    chunks = store.chunks_with_hashes(sorted(pending_set | names_set))
    todo = [h for h in pending if h in chunks]
    done = 0
    _emit(progress, "embed", 0, len(todo))
    for start in range(0, len(todo), EMBED_COMMIT):
        part = todo[start : start + EMBED_COMMIT]
        base = done

        def tick(n: int, _base: list[int] = [base]) -> None:  # noqa: B006 - running count per part
            _base[0] += n
            _emit(progress, "embed", _base[0], len(todo))

        vectors = embedder.embed_documents([chunks[h] for h in part], tick)
        store.add_vectors(model_id, part, vectors)
        done += len(part)
        report.vectors_embedded += len(part)
    names = [h for h in sorted(names_set) if h in chunks]
    if names:
        _emit(progress, "names", 0, len(names))
    for start in range(0, len(names), EMBED_COMMIT * 4):
        part = names[start : start + EMBED_COMMIT * 4]
        store.add_vectors(names_id, part, embedder.embed_names([chunks[h] for h in part]))
        _emit(progress, "names", start + len(part), len(names))


def _finish(store: IndexStore, report: IndexReport, model_id: str | None, embedded: bool) -> None:
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
) -> IndexReport:
    """Bring the index of `root` up to date: lexical stage first, then vectors.

    `check_manifest=False` skips the quick no-op check; a caller that has just made it
    passes its outcome as `checked`, and the run reuses its walk of the workspace.

    `embed` overrides settings.index.embed; `embedder` reuses a loaded model (the language server).
    """
    root, index_dir, report, lock = _start(root, settings, lock_wait_s)
    try:
        t0 = time.perf_counter()
        wants_vectors = bool(settings.index.embed) if embed is None else embed
        walked_before = checked.walk_s if checked is not None else 0.0
        if checked is None and check_manifest:
            checked = check_workspace(root, settings, wants_vectors)
        quick = checked.report if checked is not None else None
        if quick is not None:  # nothing changed since the last complete run
            quick.timings["total"] = time.perf_counter() - t0
            _emit(progress, "done", quick.files, quick.files)
            return quick
        notes = list(checked.notes) if checked is not None else []
        deep = not (checked is not None and checked.vouched)
        try:
            report.warnings.extend(notes)
            started = (t0, walked_before)
            return _index_once(root, settings, report, checked, progress, embed, embedder, deep, started)
        except IndexCorrupt as exc:
            # Damage found midway (a table file that no longer reads): rebuild once, now.
            report = IndexReport(root=str(root), index_dir=str(index_dir), warnings=notes)
            report.rebuilt = _why(exc)
            IndexStore.reset(index_dir, keep_vectors=True)
            return _index_once(root, settings, report, None, progress, embed, embedder, False, (t0, 0.0))
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
) -> IndexReport:
    """One run past the quick check (the caller holds the lock); `deep`: read every table back
    before trusting it. `started`: when the run began, and how long the caller's walk took
    before that (it counts as discovery when the run reuses it)."""
    index_dir = settings.index_dir()
    t0, walked_before = started
    store = open_for_write(index_dir, report, deep)
    _emit(progress, "discover", 0, 0)
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
    _emit(progress, "discover", len(found.files), len(found.files))

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
    _commit_lexical(store, changed, removed, set(known), settings, root, report, progress, written)
    t2 = time.perf_counter()
    report.timings["lexical"] = t2 - t1
    store.update_meta(lexical_indexed=time.time())

    emb = _embedder_for(settings, embedder, embed)
    if emb is not None:
        embed_pending(store, emb, report, progress)
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
    _emit(progress, "done", report.files, report.files)
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
) -> IndexReport:
    """Re-index a few files (absolute or workspace-relative): changed ones rewritten, missing ones dropped.

    Files the index already knows are re-checked against the never-index list, the size cap and
    the binary sniff; unknown files go through full discovery so ignore rules apply.
    """
    root, index_dir, report, lock = _start(root, settings, lock_wait_s)
    try:
        t0 = time.perf_counter()
        store = open_for_write(index_dir, report)
        if not report.rebuilt:
            try:
                return _index_some(store, root, paths, settings, report, progress, embed, embedder, t0)
            except IndexCorrupt as exc:  # found midway: the tables need a rebuild
                report.rebuilt = _why(exc)
                IndexStore.reset(index_dir, keep_vectors=True)
        # A fresh index: the few files asked for would be all of it. Index the workspace.
        lock.release()
        full = index_workspace(
            root, settings, progress, embed=embed, embedder=embedder, lock_wait_s=lock_wait_s
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
        found = discover(root, settings)
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
    _commit_lexical(store, changed, removed, set(records), settings, root, report, progress)
    emb = _embedder_for(settings, embedder, embed)
    if emb is not None:
        embed_pending(store, emb, report, progress)
    _finish(store, report, emb.model_id if emb else store.model_id, emb is not None)
    report.timings["total"] = time.perf_counter() - t0
    return report


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
