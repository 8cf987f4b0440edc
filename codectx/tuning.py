"""Process-wide tuning that the entry points switch on: a quick LanceDB import, the collector, BLAS,
an import codectx never uses.

Each switch below changes the whole process, so none of it happens when codectx is imported or
an index is opened: the `codectx` command's `main` (so `codectx lsp` too) and the benchmarks call
them, and a program that embeds codectx as a library keeps its own settings. (The telemetry
switches are in codectx/runtime.py, for the same reason.) What each does, and the measurement
behind it:

- `light_lancedb_import()` (every `codectx` command; the benchmarks): the next `import lancedb`
  skips work codectx never uses, about half of LanceDB's 3 s import (`python -X importtime -c
  "import lancedb"`), which on a 2-core machine cost more than a one-file `codectx index`:
  - `lance_namespace` imports every API module of `lance_namespace_urllib3_client`, a generated
    REST client wrapped in pydantic validators (~1.5 s). The index is a local folder; that client
    is never called. The client's package is put into `sys.modules` without running its
    `__init__`: submodules (`...models`, which `lance_namespace` does need) import normally
    through the package path, and the first attribute read on the package itself runs the real
    `__init__`, so code that does use the REST client still gets all of it.
  - On Python < 3.12 LanceDB marks ~100 methods with `overrides.override`, which disassembles the
    class body's bytecode at definition time to check the override (~0.2 s). On 3.12+ LanceDB
    uses `typing.override`, which only sets `__override__`; 3.11 gets the same decorator (the
    `EnforceOverrides` check reads that attribute). This one stays patched for the process.
  - `lance_namespace` defines ~150 pydantic models, and pydantic builds each one's validator and
    serializer as the class is created (~0.2 s), though a local index never validates one.
    LanceDB's import runs with pydantic's own `defer_build` option set for the classes created
    meanwhile: each builds on first use instead. The option is restored right after.
  - `LANCEDB_LOG=error` unless the user set it: LanceDB's Rust log writes warnings straight to
    stderr (a damaged index gives a dozen lines); codectx reports what it finds itself.
  It is an import hook: nothing is imported until something imports LanceDB, so a command that
  never opens the index (a no-op `codectx index` answered from the manifest, `codectx redact`)
  pays nothing. Nothing on disk changes; each step is skipped when its module is missing or was
  imported already.
- `import_frozen(name)` (`codectx index` in its own process): the indexer's import leaves ~100k
  long-lived objects behind; they go to the collector's permanent generation (`gc.freeze`), so
  the run's collections skip them and interpreter shutdown no longer walks them (0.3 s of a 2 s
  one-file re-index on Django).
- `serve_queries()` (the commands that answer queries: `search`, `context`, `eval`, `complete`,
  `lsp`, `--batch` modes; bench/bench_retriever.py) switches on two settings that take effect
  when the index snapshot (retriever/snapshot.py) says the time has come: a BLAS library can only
  be limited once it is loaded, and only what is loaded can be frozen. Without `serve_queries()`
  both calls do nothing.
  - `query_threads()`, when a snapshot is made (numpy is loaded by then): one BLAS thread. Query
    products are matrix-vector (memory-bound: a second thread gains little), and idle BLAS
    threads spin for milliseconds after each call, taking the core the query encoder and the
    next step need (context p95 on Django 68.6 -> 53.3 ms with this alone, 40.9 ms with the
    encoder's own pool not spinning).
  - `settle_heap()`, once the snapshot has loaded the index. A process that preloads a
    Django-size index holds ~200k long-lived container objects, and every full collection
    walked them all: 26 pauses of 58 ms on average (113 ms at most) in one
    `bench/bench_retriever.py` latency run, which made up its slowest requests (context p95
    57 ms; 42 ms without them). So what is loaded then moves to the permanent generation
    (`gc.freeze`: still freed by reference counting when the index changes; the index's objects
    hold no reference cycles), and full collections come after `FULL_EVERY` collections of the
    middle generation instead of Python's 10. Young garbage is collected as often as before.
- `background_thread()` (the language server's indexing thread and its snapshot loader, each
  on its own thread): that thread runs at a lower CPU priority (Linux gives each thread its own
  nice value), so a request under CPU contention gets the core first. It changes only the
  calling thread, and only ever lowers priority (raising it back needs privileges).
- `skip_httpx_cli()` (every `codectx` command): httpx's import leaves out httpx's own
  command-line client and what it imports (rich, click, pygments), which codectx never runs.
"""

from __future__ import annotations

import gc
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, TypeVar

CLIENT = "lance_namespace_urllib3_client"
FULL_EVERY = 1000

_lock = threading.Lock()
_F = TypeVar("_F", bound=Callable[..., Any])
_queries = False
_blas_limited = False


# ---- imports that codectx never uses --------------------------------------------------------------


def skip_httpx_cli() -> None:
    """httpx imported without its own command-line client. `httpx/__init__.py` imports
    `httpx._main`, which imports rich, click and pygments for the `httpx` command (0.05-0.1 s of
    every codectx start, `python -X importtime`); codectx never calls it. httpx imports it in a
    try block and, when it cannot, installs a `main` that says what is missing; a None entry in
    `sys.modules` makes that import fail so. A no-op once httpx is imported (every `codectx`
    command calls it first)."""
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


# ---- the quick LanceDB import ---------------------------------------------------------------------


def light_lancedb_import() -> None:
    """Make the next `import lancedb` the quick one (see the module docstring); idempotent, and a
    no-op once LanceDB is imported."""
    if "lancedb" in sys.modules or any(isinstance(f, _LanceDBFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _LanceDBFinder())


class _LanceDBFinder(importlib.abc.MetaPathFinder):
    """Prepares LanceDB's import when it is first imported, then steps aside."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "lancedb":
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        os.environ.setdefault("LANCEDB_LOG", "error")
        defer_namespace_client()
        _light_override()
        spec = importlib.util.find_spec("lancedb")
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _DeferredBuildLoader(spec.loader)
        return spec


class _DeferredBuildLoader(importlib.abc.Loader):
    """LanceDB's own loader, run with pydantic's model building deferred."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        # What imports later sees LanceDB's own loader, not this wrapper.
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        with deferred_model_build():
            self._loader.exec_module(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


@contextmanager
def deferred_model_build() -> Iterator[None]:
    """Pydantic models created inside build their validators on first use, not at creation."""
    try:
        import pydantic
    except ImportError:
        yield
        return
    base = pydantic.BaseModel
    saved = base.model_config
    if saved.get("defer_build"):
        yield
        return
    # Subclasses merge their bases' `model_config` when created: this reaches every model
    # defined meanwhile, and only those (each keeps its own merged copy).
    base.model_config = {**saved, "defer_build": True}
    try:
        yield
    finally:
        base.model_config = saved


def defer_namespace_client() -> bool:
    """Install the deferred client package; True if it was installed by this call."""
    with _lock:
        if CLIENT in sys.modules:
            return False
        spec = importlib.util.find_spec(CLIENT)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return False
        module = importlib.util.module_from_spec(spec)
        loader = spec.loader
        loaded = threading.Event()

        def __getattr__(name: str) -> Any:
            with _lock:
                if not loaded.is_set():
                    loaded.set()
                    del module.__dict__["__getattr__"]
                    loader.exec_module(module)
            try:
                return module.__dict__[name]
            except KeyError:
                raise AttributeError(f"module {CLIENT!r} has no attribute {name!r}") from None

        module.__dict__["__getattr__"] = __getattr__
        sys.modules[CLIENT] = module
        return True


def is_deferred(module: ModuleType) -> bool:
    """Whether the client package's own `__init__` has not run yet (tests use this)."""
    return "__getattr__" in module.__dict__


def mark_override(method: _F | None = None, **_options: Any) -> Any:
    """`typing.override` of Python 3.12, accepting `overrides.override`'s keyword form."""
    if method is None:
        return mark_override
    try:
        method.__override__ = True  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass  # a builtin or slotted object: nothing to mark, as in typing.override
    return method


def _light_override() -> None:
    if sys.version_info >= (3, 12) or importlib.util.find_spec("overrides") is None:
        return
    import overrides

    overrides.override = mark_override  # type: ignore[assignment]


# ---- the collector and BLAS -----------------------------------------------------------------------


def import_frozen(name: str) -> None:
    """Import a module for a process that exits soon, its long-lived objects frozen (see above).

    No collection runs during the import (it would only find live objects)."""
    if name in sys.modules:
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        importlib.import_module(name)
    finally:
        if enabled:
            gc.enable()
    gc.freeze()


def serve_queries() -> None:
    """Tune this process for answering queries: one BLAS thread (`query_threads`), the heap
    settled after the index loads (`settle_heap`); see the module docstring. Idempotent."""
    global _queries
    _queries = True


def query_threads() -> None:
    """One BLAS thread from now on, in a process that called `serve_queries()` (else nothing)."""
    global _blas_limited
    if not _queries or _blas_limited:
        return
    _blas_limited = True
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1, user_api="blas")


def settle_heap() -> None:
    """Keep the collector out of later requests: what is loaded now is frozen and full collections
    become rare. Only in a process that called `serve_queries()`; otherwise nothing."""
    if not _queries:
        return
    gc.freeze()
    young, middle, full = gc.get_threshold()
    if full < FULL_EVERY:
        gc.set_threshold(young, middle, FULL_EVERY)


# ---- background threads -------------------------------------------------------------------------

BACKGROUND_NICE = 10  # added to a background thread's nice value


_lowered = threading.local()


def background_thread() -> None:
    """Lower the calling thread's CPU priority, once per thread (Linux; elsewhere, and when
    refused, nothing). Once lowered it stays lowered: only a privileged process may raise it."""
    if sys.platform != "linux" or not hasattr(os, "setpriority") or getattr(_lowered, "done", False):
        return
    _lowered.done = True
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE)
    except OSError:
        return
