"""The index's lookup files: its symbol, chunk and import tables as Arrow IPC files, for start-up.

A language server opening an indexed folder answers its first requests from index lookups
(indexer/storage/columns.py). Reading those tables through LanceDB costs its import and open
(about 1.5 s on this machine) and a scan (0.3 s on Django); the same tables as uncompressed
Arrow IPC files are memory-mapped in a few milliseconds with pyarrow alone. So every index run
ends by writing them (`refresh`), and a server reads them (`read`) while LanceDB opens behind
its first answers.

They are a cache, never the index: each file carries a stamp of the LanceDB tables it was
copied from (the names, sizes and times of their version manifests, listed without LanceDB),
and `read` returns nothing unless all three carry the stamp the tables have now. A write since
(another process, a crash between the commit and the copy), damage or an unknown layout all
read as "no lookup files", and the caller opens the store as before. The index folder lives in
the workspace, so a file here is untrusted input: anything pyarrow cannot read is refused the
same way.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
from pathlib import Path
from typing import Any

from codectx.indexer.storage.layout import open_new

log = logging.getLogger(__name__)

LOOKUPS_DIR = "lookups"
TABLES = ("symbols", "chunks", "files")  # the tables copied (vectors are not needed at start-up)
STAMP_KEY = b"codectx-stamp"
STAMP_FILE = "stamp"  # the stamp of the last complete copy, written after its three files
FILES_COLUMNS = ["path", "imports"]


def stamp(index_dir: Path) -> str | None:
    """The tables' current stamp: any write to one of them changes it. None when a table's
    version folder is missing or unreadable (no index, or a layout this code does not know)."""
    digest = hashlib.sha256()
    for name in TABLES:
        versions = Path(index_dir) / "db" / f"{name}.lance" / "_versions"
        try:
            entries = sorted(os.scandir(versions), key=lambda e: e.name)
            listed = [(e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in entries if e.is_file()]
        except OSError:
            return None
        if not any(n.endswith(".manifest") for n, _s, _m in listed):
            return None
        digest.update(repr((name, listed)).encode())
    return digest.hexdigest()


def read(index_dir: Path) -> dict[str, Any] | None:
    """The three tables (pyarrow Tables, memory-mapped) if the lookup files match the index now."""
    current = stamp(index_dir)
    if current is None:
        return None
    import pyarrow as pa

    folder = Path(index_dir) / LOOKUPS_DIR
    if folder.is_symlink():
        return None
    tables: dict[str, Any] = {}
    try:
        for name in TABLES:
            path = folder / f"{name}.arrow"
            if not path.is_file() or path.is_symlink():
                return None
            table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
            if (table.schema.metadata or {}).get(STAMP_KEY) != current.encode():
                return None
            tables[name] = table
    except (OSError, pa.ArrowException, ValueError) as exc:
        log.info("lookup files of %s not used: %s", index_dir, exc)
        return None
    # The copy was made between two equal stamps; one more check closes the window in which a
    # writer could have moved the tables while these files were opened.
    return tables if stamp(index_dir) == current else None


def is_current(index_dir: Path) -> bool:
    """Whether the last copy written matches the index now (its stamp file; no pyarrow import,
    so an "up to date" check stays cheap). `read` still checks each file's own stamp."""
    current = stamp(index_dir)
    try:
        written = (Path(index_dir) / LOOKUPS_DIR / STAMP_FILE).read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return current is not None and written == current


def refresh(index_dir: Path, tables: Any) -> bool:
    """Write the lookup files from `tables` (a TableColumns over the store just written) unless
    they are current; False when the tables moved while they were read (nothing written)."""
    index_dir = Path(index_dir)
    if is_current(index_dir):
        return True
    before = stamp(index_dir)
    if before is None:
        return False
    copies = tables.arrow_tables()
    if stamp(index_dir) != before:
        return False
    write(index_dir, copies, before)
    return True


def write(index_dir: Path, copies: dict[str, Any], at: str) -> None:
    """Write each table with the stamp `at`: a temp file, then renamed over the old one (a reader
    that sees a mix of old and new files finds their stamps differ and reads none). The index
    folder is in the workspace, so nothing here follows a link planted in it."""
    import pyarrow as pa

    folder = _own_folder(Path(index_dir))
    for name in TABLES:
        table = copies[name]
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), STAMP_KEY: at.encode()})

        def body(fh: Any, table: Any = table) -> None:
            with pa.ipc.new_file(fh, table.schema) as writer:
                writer.write_table(table)

        _replace(folder / f"{name}.arrow", body)
    _replace(folder / STAMP_FILE, lambda fh: fh.write((at + "\n").encode()))


def _own_folder(index_dir: Path) -> Path:
    """The lookup folder, made if missing; OSError if it is a link or not a folder."""
    folder = index_dir / LOOKUPS_DIR
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise OSError(errno.EEXIST, "not a folder of codectx's", str(folder))
    folder.mkdir(exist_ok=True)
    return folder


def _replace(target: Path, body: Any) -> None:
    """Write `target` through a new temp file (never opened through a link), renamed over it."""
    tmp = target.with_name(target.name + ".tmp")
    try:
        with open_new(tmp) as fh:  # a planted link at that name goes, not what it points at
            body(fh)
        os.replace(tmp, target)
    except BaseException:  # a full disk: no half-written file left; the old one is stale, not wrong
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def remove(index_dir: Path) -> None:
    """Delete the lookup files (an index reset)."""
    folder = Path(index_dir) / LOOKUPS_DIR
    for name in [*(f"{t}{suffix}" for t in TABLES for suffix in (".arrow", ".arrow.tmp")), STAMP_FILE]:
        with contextlib.suppress(OSError):
            (folder / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()


class LookupReader:
    """The part of the store's read API that index lookups use, answered from the lookup files.

    A stand-in for the store while LanceDB opens: names, a file's definitions, imports and
    chunks come from the copies; searches find nothing (full-text and vector search start when
    the store is open, a second or two later); the versions are the copies' stamp.
    """

    def __init__(self, index_dir: Path, tables: dict[str, Any], at: str) -> None:
        from codectx.indexer.storage.columns import TableColumns

        self.index_dir = Path(index_dir)
        self.views: dict[str, Any] = {}  # the snapshot made of it lives here, as on a store
        self._columns = TableColumns.from_arrow(tables)
        self._chunks = int(tables["chunks"].num_rows)
        self._at = at

    @classmethod
    def open(cls, index_dir: Path) -> LookupReader | None:
        """A reader over the lookup files if they match the index now, else None."""
        at = stamp(index_dir)
        tables = read(index_dir) if at is not None else None
        return cls(index_dir, tables, at) if tables is not None and at is not None else None

    @property
    def at(self) -> str:
        """The stamp of the tables these copies were made from."""
        return self._at

    def columns(self) -> Any:
        return self._columns

    def table_versions(self) -> tuple[str, ...]:
        return (self._at,)

    def vector_versions(self) -> tuple[Any, ...]:
        return ()

    def reload_meta(self) -> None:
        """Nothing to reload: the copies do not change."""

    def chunk_count(self) -> int:
        return self._chunks

    def fts_search(self, query: str, k: int, *args: Any, **kwargs: Any) -> list[Any]:
        return []

    def vector_search(self, vector: Any, k: int, model_id: str, **kwargs: Any) -> list[Any]:
        return []

    def chunks_with_hashes(self, hashes: Any) -> dict[str, Any]:
        return {}
