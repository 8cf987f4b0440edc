"""Makes `import lancedb` skip work that codectx never uses (half of a 3 s import).

`codectx index` after a one-file edit is a fresh process, and on a 2-core machine the
LanceDB import cost more than the edit itself (`python -X importtime -c "import lancedb"`).
Two parts of it do nothing for us:

- `lance_namespace` imports every API module of `lance_namespace_urllib3_client`, a
  generated REST client wrapped in pydantic validators (~1.5 s). The index is a local
  folder; that client is never called. `prepare_lancedb_import()` puts the client's
  package into `sys.modules` without running its `__init__`: submodules (`...models`, which
  `lance_namespace` does need) import normally through the package path, and the first
  attribute read on the package itself runs the real `__init__`, so code that does use the
  REST client still gets all of it.
- On Python < 3.12 LanceDB marks ~100 methods with `overrides.override`, which
  disassembles the class body's bytecode at definition time to check the override
  (~0.2 s). On 3.12+ LanceDB uses `typing.override`, which only sets `__override__`;
  we give 3.11 the same decorator (the `EnforceOverrides` check reads that attribute).
- `lance_namespace` still defines ~150 pydantic models, and pydantic builds each one's
  validator and serializer as the class is created (~0.2 s), though a local index never
  validates one. `prepare_lancedb_import()` imports LanceDB itself with pydantic's own
  `defer_build` option set for the classes created meanwhile: each builds on its first use
  instead, exactly as it would have at import. The option is restored right after, so no
  other model is affected.

Nothing on disk changes. Each step is skipped when its module is missing or was imported
already.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, TypeVar

CLIENT = "lance_namespace_urllib3_client"

_lock = threading.Lock()
_F = TypeVar("_F", bound=Callable[..., Any])


def prepare_lancedb_import() -> None:
    """Call before the first `import lancedb`: imports it the quick way (harmless after it)."""
    if "lancedb" in sys.modules:
        return
    # LanceDB's Rust log writes warnings straight to stderr (a damaged index gives a dozen lines
    # of them); codectx reports what it finds itself. LANCEDB_LOG set by the user still wins.
    os.environ.setdefault("LANCEDB_LOG", "error")
    defer_namespace_client()
    _light_override()
    with deferred_model_build():
        import lancedb  # noqa: F401


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
