"""The index's vectors in memory: one matrix per model, and nearest-neighbour scans over it.

A LanceDB vector query costs ~30 ms at 50k rows; an exact scan of the same vectors held as one
float32 matrix costs a tenth of that, so long-lived processes keep each model's matrix here,
loaded once per index version (the snapshot drops it when a vectors table moves). Large
indexes also get a projection on the top principal axes for completion context's approximate
search. Everything here answers content hashes and scores; the snapshot turns them into chunks.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # the store's module imports LanceDB (over a second): types only here
    from codectx.indexer.storage.reader import IndexReader

APPROX_MIN_ROWS = 20_000  # from this many vectors, context's similar-code search scans a projection
APPROX_DIMS = 96
APPROX_POOL = 256  # candidates of the projected pass that get an exact cosine

Scored = list[tuple[str, float]]  # (content hash, cosine), best first


class VectorCache:
    """Each model's vectors of one store as a matrix (hashes, float32 rows); safe between threads."""

    def __init__(self, store: IndexReader) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._matrices: dict[str, tuple[list[str], Any]] = {}
        self._rows: dict[str, tuple[Any, dict[str, int]]] = {}
        self._projections: dict[str, tuple[Any, Any, Any]] = {}

    def clear(self) -> None:
        """Forget every matrix: the vectors moved (the next request loads them again)."""
        with self._lock:
            self._matrices = {}
            self._rows = {}
            self._projections = {}

    def matrix(self, model_id: str) -> tuple[list[str], Any] | None:
        """All vectors of a model: (content hashes, matrix with one row each), or None."""
        found = self._matrices.get(model_id)
        if found is not None:
            return found
        found = self.store.vector_matrix(model_id)
        if found is None:
            return None
        with self._lock:
            self._matrices[model_id] = found
        return found

    def rows(self, model_id: str) -> tuple[Any, dict[str, int]] | None:
        """The model's matrix and each chunk hash's row in it (built once per loaded matrix)."""
        loaded = self.matrix(model_id)
        if loaded is None:
            return None
        hashes, matrix = loaded
        found = self._rows.get(model_id)
        if found is None or found[0] is not matrix:
            found = (matrix, {h: i for i, h in enumerate(hashes)})
            with self._lock:
                self._rows[model_id] = found
        return found

    def nearest(self, vector: Any, k: int, model_id: str) -> Scored | None:
        """The `k` nearest hashes by cosine, an exact scan; None when the model has no vectors."""
        loaded = self.matrix(model_id)
        if loaded is None:
            return None
        hashes, matrix = loaded
        if not hashes or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).ravel()
        sims = matrix @ query
        take = min(len(hashes), k)
        top = np.argpartition(-sims, take - 1)[:take]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(hashes[int(i)], float(sims[i])) for i in top]

    def approx_nearest(self, vector: Any, k: int, model_id: str) -> Scored | None:
        """Nearest hashes for completion context on large indexes: a first pass over the vectors
        projected on their top principal axes, then exact cosines for the best few hundred.

        The exact scan reads every vector (~65 MB at 44k chunks: 6-20 ms here, the more under
        load); the first pass reads a quarter of that. Small indexes are scanned exactly.
        """
        loaded = self.matrix(model_id)
        if loaded is None or len(loaded[0]) < APPROX_MIN_ROWS or k <= 0:
            return self.nearest(vector, k, model_id)
        hashes, matrix = loaded
        basis, projected = self.projection(model_id, matrix)
        query = np.asarray(vector, dtype=np.float32).ravel()
        coarse = projected @ (query @ basis)
        pool = min(len(hashes), max(APPROX_POOL, 8 * k))
        found = np.argpartition(-coarse, pool - 1)[:pool]
        found.sort()  # a fixed order for the exact pass, so equal cosines break ties by row
        sims = matrix[found] @ query
        order = np.argsort(-sims, kind="stable")[:k]
        return [(hashes[int(found[i])], float(sims[i])) for i in order]

    def projection(self, model_id: str, matrix: Any) -> tuple[Any, Any]:
        """The top principal axes of a model's vectors (uncentred: cosines are dot products) and
        every vector projected on them; computed once per loaded matrix (~1 s at 44k chunks)."""
        found = self._projections.get(model_id)
        if found is not None and found[0] is matrix:
            return found[1], found[2]
        _values, vectors = np.linalg.eigh(matrix.T @ matrix)
        basis = np.ascontiguousarray(vectors[:, ::-1][:, :APPROX_DIMS], dtype=np.float32)
        projected = np.ascontiguousarray(matrix @ basis)
        with self._lock:
            self._projections[model_id] = (matrix, basis, projected)
        return basis, projected

    def warm(self, model_id: str) -> None:
        """Load the vectors and their projection now rather than on the first completion."""
        loaded = self.matrix(model_id)
        if loaded is not None and len(loaded[0]) >= APPROX_MIN_ROWS:
            self.projection(model_id, loaded[1])
