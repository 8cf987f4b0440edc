"""The stages of an indexing run, each on an open store: open it for writing (checked, rebuilt
when broken), parse files into rows, commit them in batches, embed what has no vector yet.

indexer/pipeline.py decides which files go through them and holds the index lock; bench/
calls `embed_pending` on its own.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from codectx.indexer.embedding.embedder import Embedder, name_model_id
from codectx.indexer.embedding.order import EmbedQueue, Near, NearHashes
from codectx.indexer.errors import IndexCorrupt, IndexSchemaMismatch
from codectx.indexer.parsing.parse import parse_file
from codectx.indexer.report import IndexReport, ProgressEvent, ProgressFn
from codectx.indexer.storage.store import FileData, FileRecord, IndexStore
from codectx.indexer.walk.content import bom_encoding, decode_source
from codectx.indexer.walk.discovery import SourceFile
from codectx.indexer.walk.reading import NotIndexed, read_discovered

from codectx.settings import Settings

COMMIT_FILES = 400  # files per lexical commit: bigger is faster, smaller shows results sooner
EMBED_COMMIT = 256  # vectors per commit: a kill loses at most this much embedding work
# Near the open documents, smaller commits: each one is searchable as soon as it lands.
EMBED_NEAR_COMMIT = 64


def emit(progress: ProgressFn | None, stage: str, done: int, total: int, message: str = "") -> None:
    if progress is not None:
        progress(ProgressEvent(stage, done, total, message))


def emit_chunk_count(store: IndexStore, progress: ProgressFn | None) -> None:
    """The index's chunk count (stage `chunks`), once a run's lexical part is written: the
    language server's health showed 0 chunks through all of Django's ~8 minutes of vectors."""
    chunks = store.chunk_count()
    emit(progress, "chunks", chunks, chunks)


def why(exc: Exception) -> str:
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
        report.rebuilt = why(exc)
        IndexStore.reset(index_dir)
        store = IndexStore.open(index_dir, create=True)
    except IndexCorrupt as exc:
        report.rebuilt = why(exc)
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
    bad = _undecodable_at(data, text)
    if bad is not None:
        note = NotIndexed(
            "not-utf8",
            f"{sf.path}: not valid UTF-8 (first at byte {bad}); the bytes that do not decode read as "
            "U+FFFD (re-save the file as UTF-8 to index it as written)",
        )
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


def _undecodable_at(data: bytes, text: str) -> int | None:
    """Where `data` stops being UTF-8, if its text came out with replacement characters (a file
    with a UTF-16/32 byte-order mark was decoded as such: it is not checked as UTF-8; one with
    UTF-8's mark is)."""
    found = bom_encoding(data)
    if "\ufffd" not in text or (found is not None and found[0] != "utf-8"):
        return None
    try:
        data.decode("utf-8")  # a UTF-8 byte-order mark decodes too, and counts in the offset
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def parsed_in_order(
    changed: Sequence[SourceFile], settings: Settings, root: Path
) -> Iterator[tuple[SourceFile, FileData | None, NotIndexed | None]]:
    """Parse results in input order.

    Sequential: a process pool would need `python -m codectx` to be import-safe for spawned
    workers (codectx/__main__.py has no `__name__` guard), and fork is unsafe with LanceDB's threads.
    """
    for sf in changed:
        item, error = parse_one(sf, settings, root)
        yield sf, item, error


def commit_lexical(
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
            emit(progress, "commit", done, len(changed))
        batch, pending_removed = [], []

    t = time.perf_counter()
    for i, (sf, item, error) in enumerate(parsed_in_order(changed, settings, root), 1):
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
            emit(progress, "parse", i, len(changed), sf.path)
        t = time.perf_counter()
    commit()
    t = time.perf_counter()
    store.ensure_fts()
    store.ensure_lookup_indexes()
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
    near: Near | None = None,
) -> None:
    """Embed every chunk content that has no vector for the embedder's model, committing as it goes;
    then the same for name vectors (`name_model_id`), which are short and cheap.

    `only` limits the work to some content hashes (e.g. the chunks of a just-saved file). `near`
    names the files to embed first, body and name vectors, in small commits
    (indexer/embedding/order.py); their progress is reported as the stage `near`.
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
    emit(progress, "model", 0, len(pending), f"loading embedding model {model_id}")
    report.embed_backend = embedder.backend
    # Chunk texts are read when a part needs them: the neighbourhood's few first, the rest in one
    # read once the rest begins. Reading all of Django's 42k up front took 5-12 s before the
    # neighbourhood's first vector.
    chunks: dict[str, Any] = {}
    asked: set[str] = set()

    def texts(hashes: Sequence[str]) -> list[str]:
        missing = [h for h in hashes if h not in asked]
        if missing:
            asked.update(missing)
            chunks.update(store.chunks_with_hashes(missing))
        return [h for h in hashes if h in chunks]  # a row gone since the hashes were read: skipped

    queue = EmbedQueue(pending, sorted(names_set))
    total = queue.body_left
    done = 0
    near_hashes = NearHashes(near, lambda paths: _hashes_of(store, paths))
    near_done = 0
    rest_read = False
    emit(progress, "embed", 0, total)

    def embed(part: list[str]) -> None:
        nonlocal done
        base = done

        def tick(n: int, _base: list[int] = [base]) -> None:  # noqa: B006 - running count per part
            _base[0] += n
            emit(progress, "embed", _base[0], total)

        found = texts(part)
        if found:
            store.add_vectors(model_id, found, embedder.embed_documents([chunks[h] for h in found], tick))
            if store.model_id is None:
                # The index's first vectors: say whose, now. Written only when the run ended, an
                # interrupted first run left vectors that search and completion never used.
                store.update_meta(model_id=model_id)
        done += len(part)
        report.vectors_embedded += len(found)

    def embed_names(part: list[str]) -> None:
        found = texts(part)
        if found:
            store.add_vectors(names_id, found, embedder.embed_names([chunks[h] for h in found]))

    while queue.body_left:
        hashes = near_hashes.current()
        body, names = queue.take_near(hashes, EMBED_NEAR_COMMIT)
        if body or names:
            if near_done == 0 and body:
                emit(progress, "near", 0, len(body) + queue.near_left(hashes), _near_files(near_hashes))
            if body:
                embed(body)
            if names:
                embed_names(names)
            near_done += len(body)
            emit(progress, "near", near_done, near_done + queue.near_left(hashes), _near_files(near_hashes))
            continue
        if not rest_read:
            texts(queue.remaining())  # the rest's texts, in one read
            rest_read = True
        embed(queue.take(EMBED_COMMIT))
        emit(progress, "embedded", done, total)  # a commit landed (the keeper may stop here)
    if near is not None and near_done == 0:
        emit(progress, "near", 0, 0, _near_files(near_hashes))  # nothing near was pending
    names = queue.names_left()
    if names:
        emit(progress, "names", 0, len(names))
    for start in range(0, len(names), EMBED_COMMIT * 4):
        part = names[start : start + EMBED_COMMIT * 4]
        embed_names(part)
        emit(progress, "names", start + len(part), len(names))


def _hashes_of(store: IndexStore, paths: Sequence[str]) -> list[list[str]]:
    """The content hashes of each file's chunks (in line order), files in the given order."""
    by_file: dict[str, list[tuple[int, str]]] = {p: [] for p in paths}
    for c in store.chunks_of_files(list(paths)):
        by_file.setdefault(c.chunk.path, []).append((c.chunk.start_line, c.chunk.content_hash))
    return [[h for _, h in sorted(rows)] for rows in by_file.values() if rows]


def _near_files(near: NearHashes) -> str:
    return f"{near.files} files near the open documents"
