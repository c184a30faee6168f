"""The in-memory vector index of one store: a numpy matrix of unit-length retrieval
vectors plus, per row, the columns that scope/type/TTL filters need, so those filters
become one boolean mask computed before the top-k cut (SC-6.5).

The cache is versioned by the catalog's ``(generation, change_seq)``. Writes of this
process patch it in place (rows of the touched records are dropped and reloaded from the
writing transaction); a version that moved without us — another process wrote, or the
store was recreated — makes the next read reload it from SQLite.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional, Sequence

import numpy as np

from ..requests import Scope, ScopeMatch
from ..types import RECORD_TYPES
from .timefmt import epoch_micros

__all__ = ["VectorCache", "CACHE_ROW_SQL", "GaveUp"]

#: Columns of one cached row, in order; the engine appends its FROM/WHERE clause.
CACHE_ROW_SQL = (
    "SELECT c.chunk_id, c.record_seq, c.vector, r.record_type, r.id, "
    "r.thread_id, r.user_id, r.agent_id, r.expires_at"
)
_TYPE_CODE = {name: code for code, name in enumerate(RECORD_TYPES)}
_NULL = -1  # scope code of SQL NULL
#: Bound on float32 matrix-product noise between identical rows (a few ulps of 1.0).
_NOISE_SLACK = 1e-5
Version = tuple[str, int]
#: ``accept(record_seqs) -> set of the seqs that pass`` (see :meth:`VectorCache.nearest`).
Accept = Callable[[list], set]


class VectorCache:
    """Unit vectors and filter columns of every retrieval row that has a vector."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.version: Optional[Version] = None
        self._codes: dict[str, int] = {}
        self._set_rows([])

    # -- maintenance -------------------------------------------------------------------
    def invalidate(self) -> None:
        self.version = None
        self._set_rows([])

    def load(self, rows: Iterable[Sequence], version: Version) -> None:
        self._set_rows(list(rows))
        self.version = version

    def patch(self, before: Version, after: Version, record_seqs: Sequence[int], rows: Iterable[Sequence]) -> None:
        """Apply this process's own write: drop the rows of ``record_seqs`` and add
        ``rows`` (their current rows). Only valid when the cache was at ``before``."""
        if self.version != before:
            self.invalidate()
            return
        keep = ~np.isin(self.seqs, np.asarray(record_seqs, dtype=np.int64))
        old = (self.seqs[keep], self.matrix[keep], self.types[keep], self.scopes[keep], self.expires[keep])
        self._set_rows(list(rows))
        self.seqs = np.concatenate([old[0], self.seqs])
        self.matrix = np.concatenate([old[1], self.matrix])
        self.types = np.concatenate([old[2], self.types])
        self.scopes = np.concatenate([old[3], self.scopes])
        self.expires = np.concatenate([old[4], self.expires])
        self.version = after

    def _code(self, value: Optional[str]) -> int:
        if value is None:
            return _NULL
        return self._codes.setdefault(value, len(self._codes))

    def _set_rows(self, rows: list) -> None:
        n = len(rows)
        self.seqs = np.fromiter((row[1] for row in rows), dtype=np.int64, count=n)
        matrix = np.empty((n, self.dim), dtype=np.float32)
        for i, row in enumerate(rows):
            vector = np.frombuffer(row[2], dtype="<f4")
            if vector.shape[0] != self.dim:
                raise ValueError(
                    f"retrieval row {row[0]} holds a {vector.shape[0]}-dimensional vector in a "
                    f"{self.dim}-dimensional store"
                )
            matrix[i] = vector
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        self.types = np.fromiter((_TYPE_CODE[row[3]] for row in rows), dtype=np.int8, count=n)
        # effective scope: a user/agent profile is in the scope of its own actor id (SC-6.2)
        self.scopes = np.array(
            [
                (
                    self._code(row[5]),
                    self._code(row[4] if row[3] == "user_profile" else row[6]),
                    self._code(row[4] if row[3] == "agent_profile" else row[7]),
                )
                for row in rows
            ],
            dtype=np.int64,
        ).reshape(n, 3)
        self.expires = np.fromiter((epoch_micros(row[8]) for row in rows), dtype=np.int64, count=n)

    # -- queries -------------------------------------------------------------------------
    def mask(
        self,
        record_types: Sequence[str],
        scopes: tuple[Scope, Scope, Scope],
        now_micros: int,
        allowed_seqs: Optional[np.ndarray],
    ) -> np.ndarray:
        """Rows passing the type, scope (thread, user, agent), TTL and metadata filters."""
        mask = np.isin(self.types, [_TYPE_CODE[t] for t in record_types]) & (self.expires > now_micros)
        for column, scope in enumerate(scopes):
            if scope.match == ScopeMatch.IS_NULL:
                mask &= self.scopes[:, column] == _NULL
            elif scope.match == ScopeMatch.EQUALS:
                code = self._codes.get(scope.value) if scope.value is not None else None
                if code is None:
                    return np.zeros_like(mask)
                mask &= self.scopes[:, column] == code
        if allowed_seqs is not None:
            mask &= np.isin(self.seqs, allowed_seqs)
        return mask

    def nearest(
        self,
        query: np.ndarray,
        mask: np.ndarray,
        k: Optional[int],
        accept: Optional[Accept] = None,
    ) -> list[tuple[int, float]]:
        """``(record_seq, cosine distance)`` of the best row per record among ``mask``,
        nearest first; the ``k`` nearest records plus every record tied with the k-th
        (the caller orders ties), or all of them when ``k`` is None (costly on large
        stores: every row is rescored exactly).

        ``accept`` is a further record filter (the metadata filter, evaluated in SQL) that
        is asked only about records in growing windows of nearest candidates, so a
        filtered search costs about what an unfiltered one does while the result stays
        exactly "filter first, then top-k" (SC-6.5). ``accept`` returns ``None`` when it
        prefers to be given up (the window grew past a quarter of the rows): the caller
        then filters every record in one SQL statement and calls again with a mask."""
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"the query vector has dimension {q.shape[0]}, the store's vector_dim is {self.dim}")
        norm = float(np.linalg.norm(q))
        q = q / norm if norm > 0 else q
        if rows.size * 4 > self.matrix.shape[0]:
            # most rows pass: one product over the whole matrix beats gathering a copy
            sims = (self.matrix @ q)[rows]
        else:
            sims = self.matrix[rows] @ q
        distances = np.clip(1.0 - sims.astype(np.float64), 0.0, 2.0)
        seqs = self.seqs[rows]
        # BLAS results depend on a row's position in the matrix (last-bit noise), so
        # identical vectors could get different distances: select generously, then
        # rescore the candidates with a position-independent float64 reduction so that
        # ties are exact ties, broken by type and id (SC-6.1).
        candidates = np.arange(rows.size)
        if accept is not None:
            found = _accepted_window(distances, seqs, k, accept)
            if found is None:
                raise GaveUp()
            candidates = found
        if k is not None and k < candidates.size:
            candidates = candidates[
                _top_with_ties(distances[candidates], np.arange(candidates.size), seqs[candidates], k, slack=_NOISE_SLACK)
            ]
        cand_rows = rows[candidates]
        exact = 1.0 - (self.matrix[cand_rows].astype(np.float64) * q.astype(np.float64)).sum(axis=1)
        distances, seqs = np.clip(exact, 0.0, 2.0), seqs[candidates]
        if k is not None and k < distances.size:
            keep = _top_with_ties(distances, np.arange(distances.size), seqs, k, slack=0.0)
            distances, seqs = distances[keep], seqs[keep]
        order = np.lexsort((distances, seqs))
        seqs, distances = seqs[order], distances[order]
        first = np.ones(seqs.size, dtype=bool)
        first[1:] = seqs[1:] != seqs[:-1]
        seqs, distances = seqs[first], distances[first]
        order = np.argsort(distances, kind="stable")
        return [(int(s), float(d)) for s, d in zip(seqs[order], distances[order])]


class GaveUp(Exception):
    """Raised by :meth:`VectorCache.nearest` when lazy filtering stops paying off."""


def _accepted_window(distances: np.ndarray, seqs: np.ndarray, k: Optional[int], accept: Accept) -> Optional[np.ndarray]:
    """Positions of the candidate rows of accepted records, checking records window by
    window in ascending distance until k accepted records are certainly the nearest (all
    rows outside the window are farther than the k-th, beyond float noise); ``None`` when
    the window would exceed a quarter of the rows (one SQL filter is cheaper then)."""
    n = distances.size
    if k is None:
        return None
    verdicts: dict[int, bool] = {}
    m = min(n, max(8 * k, 64))
    while True:
        window = np.argpartition(distances, m - 1)[:m] if m < n else np.arange(n)
        fresh = [int(x) for x in np.unique(seqs[window]) if int(x) not in verdicts]
        if fresh:
            passed = accept(fresh)
            for seq in fresh:
                verdicts[seq] = seq in passed
        ok = np.fromiter((verdicts[int(x)] for x in seqs[window]), dtype=bool, count=window.size)
        hits = window[ok]
        if m >= n:
            return hits
        edge = float(distances[window].max())
        best: dict[int, float] = {}
        for i in hits:
            s, d = int(seqs[i]), float(distances[i])
            if d < best.get(s, np.inf):
                best[s] = d
        if sum(1 for d in best.values() if d < edge - _NOISE_SLACK) >= k:
            return hits
        m *= 4
        if m * 4 > n:
            return None


def _top_with_ties(
    distances: np.ndarray, positions: np.ndarray, seqs: np.ndarray, k: int, slack: float
) -> np.ndarray:
    """Positions of the rows that can be among the k best records: widen an argpartition
    window until it holds k distinct records, then keep every row within the k-th
    record's distance (plus ``slack``)."""
    n = distances.size
    if k >= n:
        return positions
    m = k
    while True:
        window = np.argpartition(distances, m - 1)[:m] if m < n else np.arange(n)
        best: dict[int, float] = {}
        for i in window:
            s = int(seqs[i])
            d = float(distances[i])
            if d < best.get(s, np.inf):
                best[s] = d
        if len(best) >= k or m >= n:
            break
        m = min(n, m * 2)
    threshold = sorted(best.values())[min(k, len(best)) - 1]
    return positions[distances <= threshold + slack]
