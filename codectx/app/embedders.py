"""Loaded embedding models, shared by every session of one process (the language server owns one).

Loading a model takes seconds and hundreds of MB, so sessions whose settings name the same model
and backend share one copy, and so does background indexing. The cache is an object the entry
point creates and passes in, not a module global: two servers in one process (tests) keep
their own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from codectx.app.index import QueryEmbedder, embedder_key, load_embedder, warm_imports
from codectx.settings import Settings

log = logging.getLogger(__name__)


class Embedders:
    """One embedder per (model, backend); thread-safe (context assembly runs in worker threads)."""

    def __init__(self, before_first_load: Callable[[], None] | None = None) -> None:
        self._loaded: dict[tuple[str, str], QueryEmbedder] = {}
        self._lock = threading.Lock()
        self._before_first_load = before_first_load  # e.g. quieting the model libraries' loggers

    def get(self, settings: Settings) -> QueryEmbedder | None:
        """The embedder for these settings, loaded on first use; None when vectors are off."""
        if not settings.index.embed:
            return None
        key = embedder_key(settings)
        with self._lock:
            if key not in self._loaded:
                if self._before_first_load is not None:
                    self._before_first_load()
                    self._before_first_load = None
                self._loaded[key] = load_embedder(settings)
            return self._loaded[key]

    def get_or_none(self, settings: Settings) -> QueryEmbedder | None:
        """`get`, or None (logged) when the model cannot be loaded: context then uses full text and
        symbols only."""
        try:
            return self.get(settings)
        except Exception:
            log.warning("embedder unavailable; context uses full text and symbols only", exc_info=True)
            return None

    def warm_up(self, settings: Settings) -> list[str]:
        """Import the heavy modules and load this model before the first request (blocking: call it
        from a worker thread; LanceDB and the model take seconds). Returns what could not be loaded."""
        missing = warm_imports()
        try:
            embedder = self.get(settings)
            if embedder is not None:
                embedder.embed_query("warm up")
        except Exception as exc:
            missing.append(f"embedder: {exc}")
        return missing
