"""What the index's tables hold: their Arrow schemas, the rows' dataclasses, and the conversions.

The storage package's own vocabulary: the store writes rows made here and the reader turns rows
back into the dataclasses below, so the files table's JSON columns (`imports`, `references`) are
encoded and decoded in this module only, and SQL filters over the tables are built here only.

Tables: `chunks` (every Chunk field, its id and an FTS-indexed `search` column), `symbols`
(definitions), `files` (one record per indexed file, with its imports and references as JSON)
and one `vectors_<model>` table per embedding model, keyed by chunk content hash.

Filters: read calls take `languages` (list of language names) and `path_glob` (a gitignore-style
glob on the workspace-relative path, `pathglob.py`: the SQL keeps a superset, callers test each
row exactly), or a raw LanceDB SQL `where` clause over the chunk columns; all given filters are
combined with AND.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from hashlib import sha1
from typing import Any

import pyarrow as pa
from codectx.indexer.model import Chunk, Definition, Import, Reference
from codectx.indexer.storage.fulltext import chunk_search_text
from codectx.indexer.storage.pathglob import path_glob as path_glob_filter

_CHUNK_FIELDS: list[tuple[str, pa.DataType]] = [
    ("id", pa.string()),
    ("path", pa.string()),
    ("language", pa.string()),
    ("kind", pa.string()),
    ("symbol", pa.string()),
    ("qualname", pa.string()),
    ("signature", pa.string()),
    ("doc", pa.string()),
    ("start_line", pa.int32()),
    ("end_line", pa.int32()),
    ("start_byte", pa.int64()),
    ("end_byte", pa.int64()),
    ("text", pa.string()),
    ("content_hash", pa.string()),
]
CHUNKS_SCHEMA = pa.schema([*_CHUNK_FIELDS, ("search", pa.string())])
CHUNK_COLUMNS = [name for name, _ in _CHUNK_FIELDS if name != "id"]
SYMBOLS_SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("qualname", pa.string()),
        ("kind", pa.string()),
        ("path", pa.string()),
        ("language", pa.string()),
        ("start_line", pa.int32()),
        ("end_line", pa.int32()),
        ("exported", pa.bool_()),
    ]
)
FILES_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("mtime_ns", pa.int64()),
        ("content_hash", pa.string()),
        ("language", pa.string()),
        ("n_chunks", pa.int32()),
        ("syntax_errors", pa.int32()),
        ("imports", pa.string()),
        ("references", pa.string()),
        ("indexed_at", pa.float64()),
    ]
)


@dataclass(frozen=True)
class ChunkHit:
    chunk: Chunk
    score: float  # higher is better; BM25 for fts_search, cosine similarity for vector_search


@dataclass(frozen=True)
class FileRecord:
    """What the index knows about one file; size+mtime spot changes, content_hash confirms them."""

    path: str
    size: int
    mtime_ns: int
    content_hash: str
    language: str
    n_chunks: int = 0
    syntax_errors: int = 0
    indexed_at: float = 0.0


@dataclass(frozen=True)
class FileData:
    """A parsed file ready to be written: its record and everything extracted from it."""

    record: FileRecord
    chunks: Sequence[Chunk] = ()
    definitions: Sequence[Definition] = ()
    imports: Sequence[Import] = ()
    references: Sequence[Reference] = ()


@dataclass(frozen=True)
class IndexStats:
    index_dir: str
    schema_version: int
    model_id: str | None
    files: int
    chunks: int
    symbols: int
    chunks_per_language: dict[str, int] = field(default_factory=dict)
    files_per_language: dict[str, int] = field(default_factory=dict)
    vectors_done: int = 0  # distinct chunk contents that have a vector for model_id
    vectors_pending: int = 0
    last_indexed: float | None = None  # epoch seconds of the last completed run
    syntax_error_files: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FileImports:
    """One file's imports as the index holds them, and when the file was last written."""

    path: str
    indexed_at: float  # epoch seconds; changes whenever the file's rows are rewritten
    imports: list[Import]


@dataclass(frozen=True)
class StoredChunk:
    """A chunk with the text its full-text index sees (`fulltext.chunk_search_text`)."""

    chunk: Chunk
    search_text: str


def sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def filter_sql(
    languages: Sequence[str] | None = None, path_glob: str | None = None, where: str | None = None
) -> str | None:
    """One SQL filter from the helper arguments (see the module docstring), or None."""
    parts: list[str] = []
    if languages:
        parts.append(f"language IN ({', '.join(sql_str(lang) for lang in languages)})")
    like = path_glob_filter(path_glob).like_prefilter() if path_glob else None
    if like:  # a superset: the caller tests each candidate with PathGlob.matches
        parts.append(f"path LIKE {sql_str(like)} ESCAPE '\\'")
    if where:
        parts.append(f"({where})")
    return " AND ".join(parts) if parts else None


def in_list(column: str, values: Iterable[str]) -> str:
    return f"{column} IN ({', '.join(sql_str(v) for v in values)})"


def batched(values: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def chunk_from_row(row: dict[str, Any]) -> Chunk:
    return Chunk(**{name: row[name] for name in CHUNK_COLUMNS})


def chunk_row(chunk: Chunk) -> dict[str, Any]:
    row = {name: getattr(chunk, name) for name in CHUNK_COLUMNS}
    row["id"] = chunk.id
    row["search"] = chunk_search_text(chunk)
    return row


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def flat(item: Any) -> dict[str, Any]:
    """A flat dataclass as a dict: `asdict` without its deep copy (a third of a big file's commit)."""
    return {name: getattr(item, name) for name in _field_names(type(item))}


def vectors_table_name(model_id: str) -> str:
    return "vectors_" + sha1(model_id.encode()).hexdigest()[:16]


def imports_json(imports: Iterable[Import]) -> str:
    return json.dumps([flat(i) for i in imports], separators=(",", ":"))


def references_json(references: Iterable[Reference]) -> str:
    return json.dumps([flat(r) for r in references], separators=(",", ":"))


def imports_from_json(raw: str | None) -> list[Import]:
    """The files table's `imports` column back as Imports."""
    if not raw:
        return []
    return [
        Import(
            module=d["module"],
            names=tuple((n, a) for n, a in d.get("names", ())),
            alias=d.get("alias", ""),
            resolved=d.get("resolved", ""),
            line=d.get("line", 0),
        )
        for d in json.loads(raw)
    ]


def references_from_json(raw: str | None) -> list[Reference]:
    """The files table's `references` column back as References."""
    return [Reference(**d) for d in json.loads(raw)] if raw else []


def chains_from_json(raw: str | None) -> list[str]:
    """Only the attribute chains of the `references` column (cheaper than whole References)."""
    return [d["chain"] for d in json.loads(raw) if d.get("chain")] if raw else []


def definition_from_row(row: dict[str, Any]) -> Definition:
    return Definition(**row)
