"""Reading an index: every query the retriever, `codectx eval` and the snapshot make, typed.

`IndexReader` is the read half of the store (indexer/storage/store.py adds writing): lookups by
name, file and content hash, the full-text and vector searches, and whole-table reads for
in-memory views. It answers with the dataclasses of indexer/storage/tables.py and the indexer's
model (Chunk, Definition, Import, Reference); no caller builds SQL on the tables or decodes their
JSON columns. Readers always see the latest commit (`read_consistency_interval=0`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from codectx.indexer.model import Chunk, Definition, Import, Reference
from codectx.indexer.storage.columns import TableColumns
from codectx.indexer.storage.fulltext import query_text
from codectx.indexer.storage.layout import META_FILE, SCHEMA_VERSION
from codectx.indexer.storage.pathglob import path_glob as path_glob_filter
from codectx.indexer.storage.storeguard import guard_methods
from codectx.indexer.storage.tables import (
    CHUNK_COLUMNS,
    FILES_SCHEMA,
    SYMBOLS_SCHEMA,
    ChunkHit,
    FileImports,
    FileRecord,
    IndexStats,
    StoredChunk,
    batched,
    chains_from_json,
    chunk_from_row,
    definition_from_row,
    filter_sql,
    imports_from_json,
    in_list,
    references_from_json,
    sql_str,
    vectors_table_name,
)


def _glob_exact(hits: list[ChunkHit], path_glob: str | None) -> list[ChunkHit]:
    """The exact glob test on what the SQL superset let through (`pathglob.py`)."""
    if not path_glob:
        return hits
    glob = path_glob_filter(path_glob)
    return [hit for hit in hits if glob.matches(hit.chunk.path)]


def _path_filters(paths: Sequence[str] | None) -> Iterator[str | None]:
    """SQL filters on `path` for `paths` in batches (None: one pass over every row)."""
    if paths is None:
        yield None
        return
    for part in batched(list(paths)):
        yield in_list("path", part)


class IndexReader:
    """Typed read access to one index folder (open one with `IndexStore.open`)."""

    def __init__(self, index_dir: Path, db: Any, meta: dict[str, Any]) -> None:
        self.index_dir = index_dir
        self._db = db
        self._meta = meta
        self._tables: dict[str, Any] = {}
        # In-memory views that other layers build over this store (the retriever's snapshot):
        # they live and die with it.
        self.views: dict[str, Any] = {}

    def _table(self, name: str) -> Any:
        table = self._tables.get(name)
        if table is None:
            table = self._db.open_table(name)
            self._tables[name] = table
        return table

    def _vectors(self, model_id: str) -> Any | None:
        name = vectors_table_name(model_id)
        if name in self._tables:
            return self._tables[name]
        try:
            table = self._db.open_table(name)
        except (ValueError, FileNotFoundError, RuntimeError):
            return None
        self._tables[name] = table
        return table

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self._meta)

    @property
    def model_id(self) -> str | None:
        return self._meta.get("model_id")

    def reload_meta(self) -> None:
        """Re-read meta.json: another writer (the CLI beside a language server) may have moved the
        model or the last run. A missing or damaged file keeps what was read at open."""
        try:
            meta = json.loads((self.index_dir / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(meta, dict):
            self._meta = meta

    def _scan(self, table: str, where: str | None, columns: list[str] | None = None) -> list[dict[str, Any]]:
        query = self._table(table).search()
        if where:
            query = query.where(where)
        if columns:
            query = query.select(columns)
        return query.limit(None).to_arrow().to_pylist()  # type: ignore[no-any-return]

    # ---- whole tables, for in-memory views (the retriever's snapshot): one scan, not many lookups

    def all_symbols(self) -> list[Definition]:
        """Every definition, in no particular order."""
        return [definition_from_row(row) for row in self._scan("symbols", None)]

    def imports_by_file(self, paths: Sequence[str] | None = None) -> dict[str, FileImports]:
        """Each file's imports and write time: every file, or those of `paths` that are indexed."""
        out: dict[str, FileImports] = {}
        for where in _path_filters(paths):
            for row in self._scan("files", where, ["path", "indexed_at", "imports"]):
                path, stamp = row["path"], float(row["indexed_at"] or 0.0)
                out[path] = FileImports(path, stamp, imports_from_json(row["imports"]))
        return out

    def reference_chains(self, paths: Sequence[str] | None = None) -> dict[str, list[str]]:
        """The attribute chains each file uses ("self.session.send"): every file, or `paths`."""
        out: dict[str, list[str]] = {}
        for where in _path_filters(paths):
            for row in self._scan("files", where, ["path", "references"]):
                out[row["path"]] = chains_from_json(row["references"])
        return out

    def chunks_of_files(
        self, paths: Sequence[str] | None = None, search_text: bool = False
    ) -> list[StoredChunk]:
        """The chunks of every file, or of `paths`, in no particular order; with `search_text`,
        each with the text its full-text index holds (else "")."""
        columns = [*CHUNK_COLUMNS, "search"] if search_text else CHUNK_COLUMNS
        out: list[StoredChunk] = []
        for where in _path_filters(paths):
            for row in self._scan("chunks", where, columns):
                out.append(StoredChunk(chunk_from_row(row), (row["search"] or "") if search_text else ""))
        return out

    def columns(self) -> TableColumns:
        """The symbol, chunk and import tables as Arrow columns, rows decoded per lookup (read on
        first use; a fresh one sees later writes)."""
        return TableColumns(self._table)

    # ---- the same whole tables in batches, for a background load that pauses between them

    def _batches(self, table: str, columns: list[str], size: int) -> Iterator[list[dict[str, Any]]]:
        reader = self._table(table).search().select(columns).limit(None).to_batches(size)
        for batch in reader:
            yield batch.to_pylist()

    def iter_file_imports(self, size: int = 1024) -> Iterator[list[FileImports]]:
        """Every file's imports and write time (`imports_by_file`), `size` files at a time."""
        for rows in self._batches("files", ["path", "indexed_at", "imports"], size):
            yield [
                FileImports(r["path"], float(r["indexed_at"] or 0.0), imports_from_json(r["imports"]))
                for r in rows
            ]

    def iter_chunks(self, size: int = 1024, search_text: bool = False) -> Iterator[list[StoredChunk]]:
        """Every chunk (`chunks_of_files`), `size` at a time."""
        columns = [*CHUNK_COLUMNS, "search"] if search_text else CHUNK_COLUMNS
        for rows in self._batches("chunks", columns, size):
            yield [StoredChunk(chunk_from_row(r), (r["search"] or "") if search_text else "") for r in rows]

    def iter_symbols(self, size: int = 1024) -> Iterator[list[Definition]]:
        """Every definition (`all_symbols`), `size` at a time."""
        for rows in self._batches("symbols", [f.name for f in SYMBOLS_SCHEMA], size):
            yield [definition_from_row(r) for r in rows]

    def iter_reference_chains(self, size: int = 256) -> Iterator[dict[str, list[str]]]:
        """Each file's attribute chains (`reference_chains`), `size` files at a time."""
        for rows in self._batches("files", ["path", "references"], size):
            yield {r["path"]: chains_from_json(r["references"]) for r in rows}

    def search_texts(self) -> dict[str, str]:
        """Chunk id -> the text its full-text index holds, for every chunk."""
        return {row["id"]: row["search"] or "" for row in self._scan("chunks", None, ["id", "search"])}

    def table_versions(self) -> tuple[int, ...]:
        """Versions of the symbols, files and chunks tables: any write moves at least one."""
        return tuple(int(self._table(name).version) for name in ("symbols", "files", "chunks"))

    def vector_versions(self) -> tuple[tuple[str, int], ...]:
        """(table, version) of every vectors table (body and name vectors): embedding moves them."""
        found = []
        for name in sorted(self._db.list_tables().tables):
            if name.startswith("vectors_"):
                table = self._tables.get(name)
                if table is None:
                    try:
                        table = self._tables[name] = self._db.open_table(name)
                    except (ValueError, FileNotFoundError, RuntimeError):
                        continue
                found.append((name, int(table.version)))
        return tuple(found)

    def vector_matrix(self, model_id: str) -> tuple[list[str], np.ndarray] | None:
        """All vectors of a model: (content hashes, float32 matrix with one row each), or None."""
        table = self._vectors(model_id)
        if table is None:
            return None
        data = table.search().select(["content_hash", "vector"]).limit(None).to_arrow()
        hashes = data.column("content_hash").to_pylist()
        flat = data.column("vector").combine_chunks()
        dims = flat.type.list_size
        values = flat.values.to_numpy(zero_copy_only=False)
        return hashes, np.asarray(values, dtype=np.float32).reshape(-1, dims)

    def chunk_count(self) -> int:
        """Chunks in the index (cheap: no rows read)."""
        return int(self._table("chunks").count_rows())

    def fts_search(
        self,
        query: str,
        k: int,
        *,
        languages: Sequence[str] | None = None,
        path_glob: str | None = None,
    ) -> list[ChunkHit]:
        """Best `k` chunks for a keyword query (BM25 over names, signature, doc, body and path),
        among `languages` and paths matching `path_glob` when given (the filter's SQL is built
        here, from values only)."""
        if not query.strip() or k <= 0:
            return []
        search = (
            self._table("chunks")
            .search(query_text(query), query_type="fts", fts_columns="search")
            .select([*CHUNK_COLUMNS, "_score"])
        )
        sql = filter_sql(languages, path_glob)
        if sql:
            search = search.where(sql, prefilter=True)
        rows = search.limit(k).to_arrow().to_pylist()
        hits = [ChunkHit(chunk_from_row(row), float(row["_score"])) for row in rows]
        return _glob_exact(hits, path_glob)

    def vector_search(
        self,
        vector: np.ndarray,
        k: int,
        model_id: str,
        *,
        languages: Sequence[str] | None = None,
        path_glob: str | None = None,
    ) -> list[ChunkHit]:
        """Nearest `k` chunks by cosine similarity among chunks that have a vector for `model_id`.

        Exact search. Chunks with identical content share a vector; each copy is returned.
        """
        table = self._vectors(model_id)
        if table is None or k <= 0:
            return []
        sql = filter_sql(languages, path_glob)
        total = table.count_rows()
        # Filters drop rows after the nearest-neighbour step, so a filtered search reads deeper
        # at once. An unfiltered one reads k and a margin for stale vectors (content no chunk has
        # any more): the scan and the chunk lookup both cost in proportion (k=200 on Django: 4k
        # cost 112 + 45 ms, k 97 + 30 ms). Too few rows back reads 4x deeper.
        fetch = max(4 * k, 64) if sql or path_glob else k + max(16, k // 4)
        query = np.asarray(vector, dtype=np.float32).ravel()
        while True:
            near = (
                table.search(query, vector_column_name="vector")
                .distance_type("cosine")
                .select(["content_hash", "_distance"])
                .limit(fetch)
                .to_arrow()
            )
            score_of: dict[str, float] = {}
            for h, dist in zip(
                near.column("content_hash").to_pylist(), near.column("_distance").to_pylist(), strict=True
            ):
                score_of.setdefault(h, 1.0 - float(dist))
            hits: list[ChunkHit] = []
            if score_of:
                clause = in_list("content_hash", score_of)
                rows = self._scan("chunks", f"{clause} AND ({sql})" if sql else clause, CHUNK_COLUMNS)
                hits = [ChunkHit(chunk_from_row(r), score_of[r["content_hash"]]) for r in rows]
                hits = _glob_exact(hits, path_glob)
            if len(hits) >= k or fetch >= total:
                hits.sort(key=lambda h: (-h.score, h.chunk.path, h.chunk.start_line))
                return hits[:k]
            fetch *= 4

    def symbols_named(self, name: str) -> list[Definition]:
        """Definitions whose short name or qualified name is `name`."""
        rows = self._scan("symbols", f"name = {sql_str(name)} OR qualname = {sql_str(name)}")
        return sorted((definition_from_row(row) for row in rows), key=lambda d: (d.path, d.start_line))

    def symbols_named_any(self, names: Sequence[str]) -> dict[str, list[Definition]]:
        """`symbols_named` for several names in one scan (a scan costs the same for one name or
        twenty): name -> its definitions, sorted; names without a definition are left out."""
        wanted = list(dict.fromkeys(n for n in names if n))
        if not wanted:
            return {}
        out: dict[str, list[Definition]] = {}
        keys = set(wanted)
        rows = self._scan("symbols", f"{in_list('name', wanted)} OR {in_list('qualname', wanted)}")
        for row in rows:
            found = definition_from_row(row)
            for key in {found.name, found.qualname} & keys:
                out.setdefault(key, []).append(found)
        for found_list in out.values():
            found_list.sort(key=lambda d: (d.path, d.start_line))
        return out

    def symbols_in_file(self, path: str) -> list[Definition]:
        rows = self._scan("symbols", f"path = {sql_str(path)}")
        return sorted((definition_from_row(row) for row in rows), key=lambda d: d.start_line)

    def _file_column(self, path: str, column: str) -> str | None:
        rows = self._scan("files", f"path = {sql_str(path)}", [column])
        return rows[0][column] if rows else None

    def file_imports(self, path: str) -> list[Import]:
        return imports_from_json(self._file_column(path, "imports"))

    def file_references(self, path: str) -> list[Reference]:
        return references_from_json(self._file_column(path, "references"))

    def chunks_for_file(self, path: str) -> list[Chunk]:
        rows = self._scan("chunks", f"path = {sql_str(path)}", CHUNK_COLUMNS)
        return sorted((chunk_from_row(r) for r in rows), key=lambda c: (c.start_line, c.start_byte))

    def all_chunks(self, batch_size: int = 2048) -> Iterator[Chunk]:
        """Every chunk, in no particular order, streamed in batches."""
        reader = self._table("chunks").search().select(CHUNK_COLUMNS).limit(None).to_batches(batch_size)
        for batch in reader:
            for row in batch.to_pylist():
                yield chunk_from_row(row)

    def file_records(self) -> dict[str, FileRecord]:
        columns = [f.name for f in FILES_SCHEMA if f.name not in ("imports", "references")]
        rows = self._scan("files", None, columns)
        return {row["path"]: FileRecord(**row) for row in rows}

    def chunk_hashes(self) -> set[str]:
        return set(
            self._table("chunks")
            .search()
            .select(["content_hash"])
            .limit(None)
            .to_arrow()
            .column("content_hash")
            .to_pylist()
        )

    def vector_hashes(self, model_id: str) -> set[str]:
        table = self._vectors(model_id)
        if table is None:
            return set()
        return set(
            table.search().select(["content_hash"]).limit(None).to_arrow().column("content_hash").to_pylist()
        )

    def chunks_with_hashes(self, hashes: Sequence[str]) -> dict[str, Chunk]:
        """One chunk per content hash (any copy: they have the same text)."""
        out: dict[str, Chunk] = {}
        for part in batched(list(hashes)):
            for row in self._scan("chunks", in_list("content_hash", part), CHUNK_COLUMNS):
                out.setdefault(row["content_hash"], chunk_from_row(row))
        return out

    def stats(self, model_id: str | None = None) -> IndexStats:
        model_id = model_id or self.model_id
        chunk_rows = (
            self._table("chunks").search().select(["language", "content_hash"]).limit(None).to_arrow()
        )
        per_lang: dict[str, int] = {}
        for lang in chunk_rows.column("language").to_pylist():
            per_lang[lang] = per_lang.get(lang, 0) + 1
        hashes = set(chunk_rows.column("content_hash").to_pylist())
        done = len(hashes & self.vector_hashes(model_id)) if model_id else 0
        files = self._table("files").search().select(["language", "syntax_errors"]).limit(None).to_arrow()
        files_per_lang: dict[str, int] = {}
        for lang in files.column("language").to_pylist():
            files_per_lang[lang] = files_per_lang.get(lang, 0) + 1
        return IndexStats(
            index_dir=str(self.index_dir),
            schema_version=SCHEMA_VERSION,
            model_id=model_id,
            files=files.num_rows,
            chunks=chunk_rows.num_rows,
            symbols=self._table("symbols").count_rows(),
            chunks_per_language=dict(sorted(per_lang.items())),
            files_per_language=dict(sorted(files_per_lang.items())),
            vectors_done=done,
            vectors_pending=len(hashes) - done,
            last_indexed=self._meta.get("last_indexed"),
            syntax_error_files=sum(1 for n in files.column("syntax_errors").to_pylist() if n),
        )


# Every way into the store translates LanceDB's failures (one place: storeguard.lance_failure).
guard_methods(IndexReader, skip=("meta", "model_id"))
