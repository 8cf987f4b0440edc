"""Loading an index snapshot's in-memory structures off the request path.

A language server opening a Django-size index would otherwise answer its first completion
only after every structure is in memory (tens of seconds of CPU on 2 cores, the BM25 build
most of it: `bench/bench_startup.py` has the split). Instead `IndexSnapshot.load_in_background`
answers from index lookups while `load_all` reads everything here, on a thread that
- runs at a lower CPU priority (`codectx.tuning.background_thread`);
- gives way to requests: between batches it waits while a request is being served (`Pacer`),
  so a request under CPU contention is not stuck behind a GIL-holding loop;
and hands the result back in one piece (`Loaded`), swapped in at once by the snapshot, so
answers change only at that one, logged, moment.

`hold_loads_until` is a test hook: background loads wait until a file exists, so a test can
send requests that arrive, deterministically, before the snapshot is ready.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codectx.indexer.model import Chunk, Definition, Import
from codectx.retriever.lexical import LexicalIndex
from codectx.retriever.receivers import ReceiverCalls

if TYPE_CHECKING:  # the store's module imports LanceDB (over a second): types only here
    from codectx.indexer.storage.reader import IndexReader

MAX_GIVE_WAY_S = 0.25  # the longest one pause waits for requests to finish
BATCH_ROWS = 1024

_gate: Path | None = None


def hold_loads_until(path: Path | None) -> None:
    """Test hook: background loads start only once `path` exists (None: no hold)."""
    global _gate
    _gate = path


def loads_held() -> bool:
    """Whether the test hook holds background loads (they then run for small indexes too)."""
    return _gate is not None


def wait_for_gate(poll_s: float = 0.05) -> None:
    gate = _gate
    while gate is not None and not gate.exists():
        time.sleep(poll_s)


class Pacer:
    """Requests mark themselves `serving()`; background loops call `pause()` between batches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._serving = 0

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        with self._lock:
            self._serving += 1
        try:
            yield
        finally:
            with self._lock:
                self._serving -= 1

    @property
    def busy(self) -> bool:
        return self._serving > 0

    def pause(self) -> None:
        """Wait (bounded) while a request is served, else just let other threads take the GIL."""
        waited = 0.0
        while self._serving > 0 and waited < MAX_GIVE_WAY_S:
            time.sleep(0.002)
            waited += 0.002
        if waited == 0.0:
            time.sleep(0)


@dataclass
class Loaded:
    """Every in-memory structure of one index version, read in the background."""

    versions: tuple[Any, ...]
    stamps: dict[str, float]
    imports: dict[str, list[Import]]
    chunks: dict[str, list[Chunk]]
    by_name: dict[str, list[Definition]]
    lexical: LexicalIndex
    receivers: ReceiverCalls
    timings_ms: dict[str, float] = field(default_factory=dict)


def symbol_table(definitions: list[Definition]) -> dict[str, list[Definition]]:
    """Definitions by short and qualified name, each list by (path, start line)."""
    table: dict[str, list[Definition]] = {}
    for d in definitions:
        table.setdefault(d.name, []).append(d)
        if d.qualname and d.qualname != d.name:
            table.setdefault(d.qualname, []).append(d)
    for defs in table.values():
        defs.sort(key=lambda d: (d.path, d.start_line))
    return table


def load_all(
    store: IndexReader, versions: Callable[[], tuple[Any, ...]], pause: Callable[[], None]
) -> Loaded:
    """Read the small tables, the chunks and their full text, and build the lookup maps, the BM25
    index and the receiver counts, pausing between batches."""
    timings: dict[str, float] = {}
    seen = versions()

    def timed(name: str, since: float) -> None:
        timings[name] = round((time.perf_counter() - since) * 1000, 1)

    t = time.perf_counter()
    stamps: dict[str, float] = {}
    imports: dict[str, list[Import]] = {}
    for batch in store.iter_file_imports(BATCH_ROWS):
        for record in batch:
            stamps[record.path] = record.indexed_at
            imports[record.path] = record.imports
        pause()
    timed("imports", t)
    t = time.perf_counter()
    chunks: dict[str, list[Chunk]] = {p: [] for p in imports}
    texts: list[tuple[str, str]] = []
    for stored in store.iter_chunks(BATCH_ROWS, search_text=True):
        for item in stored:
            chunks.setdefault(item.chunk.path, []).append(item.chunk)
            texts.append((item.chunk.id, item.search_text))
        pause()
    for file_chunks in chunks.values():
        file_chunks.sort(key=lambda c: (c.start_line, c.start_byte))
    timed("chunks", t)
    t = time.perf_counter()
    definitions: list[Definition] = []
    for symbols in store.iter_symbols(BATCH_ROWS):
        definitions.extend(symbols)
        pause()
    by_name = symbol_table(definitions)
    timed("symbols", t)
    t = time.perf_counter()
    lexical = LexicalIndex(texts, pause=pause)
    timed("bm25", t)
    t = time.perf_counter()
    receivers = ReceiverCalls()
    for chains in store.iter_reference_chains(BATCH_ROWS // 4):
        for path, used in chains.items():
            receivers.set_file(path, used)
        pause()
    timed("receivers", t)
    return Loaded(seen, stamps, imports, chunks, by_name, lexical, receivers, timings)
