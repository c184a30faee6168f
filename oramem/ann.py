"""Optional approximate nearest-neighbour (ANN) index over ``(row_key, vector)`` pairs.

Exact search stays the default everywhere. This index is for an engine that holds many
vectors and whose caller has allowed approximate results: an HNSW graph (``hnswlib``, or
``usearch`` when that is what is installed; ``pip install oramem[ann]``) answers a top-k
query in well under a millisecond where an exact scan of 100k x 384 floats costs ~10 ms.

The index knows nothing about records, scopes or metadata. Keys are non-negative integers
chosen by the caller (an engine uses its row key, e.g. ``record_seq`` or ``chunk_id``), and
a filtered query takes a vectorised predicate over candidate keys. Because HNSW finds
neighbours first and filters afterwards, a filtered query over-fetches; when the predicate
rejects too much to find k accepted keys within the budget, :meth:`AnnIndex.query` returns
``None`` and the caller must answer exactly (SC-6.5: never fewer than k results because of a
filter). :meth:`AnnIndex.use_for` tells whether a query is worth sending to the index at
all.

Distances are cosine distances (1 - cos) of unit-normalised vectors, as float64, the same
scale the exact path uses. The index is not thread-safe for writes: the caller serialises
``add``/``remove``/``build`` against queries (an engine already does under its lock).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from .errors import Error

__all__ = ["AnnConfig", "AnnIndex", "AnnUnavailable", "available_backends"]

#: preferred first
_BACKENDS = ("hnswlib", "usearch")


class AnnUnavailable(Error, ImportError):
    """No ANN backend is installed; the message says how to get one."""


def available_backends() -> list[str]:
    """Installed backends, preferred first."""
    found = []
    for name in _BACKENDS:
        try:
            if name == "usearch":
                import usearch.index  # noqa: F401
            else:
                import hnswlib  # noqa: F401
        except ImportError:
            continue
        found.append(name)
    return found


@dataclasses.dataclass(frozen=True)
class AnnConfig:
    """HNSW parameters and the policy of when to use the index.

    ``connectivity`` (M) and ``expansion_add`` (efConstruction) shape the graph;
    ``expansion_search`` (ef) trades latency for recall per query. ``min_rows``: below it
    an exact scan is about as fast, so :meth:`AnnIndex.use_for` says no. A filtered query
    over-fetches ``k / selectivity * overfetch`` candidates, growing up to ``max_fetch``;
    below ``min_selectivity`` the exact scan of the few matching rows is both exact and
    cheaper, so it is used directly.
    """

    connectivity: int = 16
    expansion_add: int = 64
    expansion_search: int = 128
    min_rows: int = 20_000
    min_selectivity: float = 0.02
    overfetch: float = 2.0
    max_fetch: int = 4096

    def __post_init__(self) -> None:
        for name in ("connectivity", "expansion_add", "expansion_search", "max_fetch"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"AnnConfig.{name} must be a positive int, got {value!r}")
        if not isinstance(self.min_rows, int) or self.min_rows < 0:
            raise ValueError(f"AnnConfig.min_rows must be an int >= 0, got {self.min_rows!r}")
        if not 0.0 <= self.min_selectivity <= 1.0:
            raise ValueError(f"AnnConfig.min_selectivity must be in [0, 1], got {self.min_selectivity!r}")
        if not self.overfetch >= 1.0:
            raise ValueError(f"AnnConfig.overfetch must be >= 1, got {self.overfetch!r}")


Accept = Callable[[np.ndarray], np.ndarray]
#: record keys: a sequence of ints or an integer array
Keys = Union[Sequence[int], np.ndarray]


class AnnIndex:
    """An HNSW index of unit vectors under integer keys (see the module docstring)."""

    def __init__(self, dim: int, config: Optional[AnnConfig] = None, backend: Optional[str] = None) -> None:
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
            raise ValueError(f"dim must be a positive int, got {dim!r}")
        self.dim = dim
        self.config = config or AnnConfig()
        found = available_backends()
        if backend is None:
            if not found:
                raise AnnUnavailable(
                    "no ANN backend installed: pip install 'oramem[ann]' (hnswlib), or usearch"
                )
            backend = found[0]
        elif backend not in _BACKENDS:
            raise ValueError(f"unknown ANN backend {backend!r}; choose one of {', '.join(_BACKENDS)}")
        elif backend not in found:
            raise AnnUnavailable(f"ANN backend {backend!r} is not installed (pip install {backend})")
        self.backend = backend
        #: ef used by queries; starts at ``config.expansion_search``, :meth:`calibrate` raises it
        self.expansion_search = self.config.expansion_search
        self._impl = _Usearch(dim, self.config) if backend == "usearch" else _Hnswlib(dim, self.config)

    # -- contents ------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._impl.count()

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (int, np.integer)) or isinstance(key, bool) or key < 0:
            return False
        return bool(self._impl.contains(np.asarray([key], dtype=np.uint64))[0])

    def build(self, keys: Keys, vectors: np.ndarray) -> None:
        """Replace the whole contents (a bulk, multi-threaded insert)."""
        key_arr, unit = self._checked(keys, vectors)
        self._impl.reset(len(key_arr))
        if len(key_arr):
            self._impl.upsert(key_arr, unit)

    def add(self, keys: Keys, vectors: np.ndarray) -> None:
        """Insert or replace (a key already present gets the new vector)."""
        key_arr, unit = self._checked(keys, vectors)
        if not len(key_arr):
            return
        self._impl.upsert(key_arr, unit)

    def remove(self, keys: Keys) -> int:
        """Remove the keys that are present; returns how many were."""
        key_arr = _keys(keys)
        if not len(key_arr):
            return 0
        present = key_arr[self._impl.contains(key_arr)]
        if len(present):
            self._impl.remove(present)
        return int(len(present))

    # -- queries -------------------------------------------------------------------------
    def use_for(self, n_rows: int, selectivity: float = 1.0) -> bool:
        """Whether a query over ``n_rows`` indexed rows, of which the fraction
        ``selectivity`` passes the caller's filter, should go to the index (else: exact)."""
        return n_rows >= self.config.min_rows and selectivity >= self.config.min_selectivity

    def query(
        self,
        vector: np.ndarray,
        k: int,
        accept: Optional[Accept] = None,
        selectivity: Optional[float] = None,
    ) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """``(keys int64, cosine distances float64)`` of up to ``k`` approximate nearest
        keys, nearest first. Fewer than ``k`` only when the index was searched whole: every
        key (every accepted key, with ``accept``) is in the answer.

        ``accept(keys) -> bool array`` filters candidates; ``selectivity`` (the fraction of
        keys it accepts, when the caller knows it) sizes the first fetch. Returns ``None``
        when a filtered query cannot collect ``k`` accepted keys within
        ``config.max_fetch`` candidates while more keys exist, or when the backend returns
        fewer candidates than asked while more keys exist (a graph search need not reach
        every node: usearch then answers short; which keys it missed is unknown): answer
        that query exactly.
        """
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        q = _unit_rows(np.asarray(vector, dtype=np.float32).reshape(1, -1), self.dim)[0]
        n = self._impl.count()
        if n == 0:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        if accept is None:
            want = min(k, n)
            keys, dists = self._impl.search(q, want, self.expansion_search)
            return (keys, dists) if len(keys) >= want else None
        share = selectivity if selectivity and selectivity > 0 else 0.1
        fetch = min(n, max(k, math.ceil(k / share * self.config.overfetch)))
        while True:
            keys, dists = self._impl.search(q, fetch, self.expansion_search)
            ok = np.asarray(accept(keys), dtype=bool)
            if ok.shape != keys.shape:
                raise ValueError("accept(keys) must return one bool per key")
            if ok.sum() >= k:
                return keys[ok][:k], dists[ok][:k]
            if len(keys) < fetch:
                return None  # the search stopped short of the keys asked for
            if fetch >= n:
                return keys[ok][:k], dists[ok][:k]  # every key seen: what is accepted is all there is
            if fetch >= self.config.max_fetch:
                return None
            fetch = min(n, self.config.max_fetch, fetch * 4)

    def calibrate(
        self,
        queries: np.ndarray,
        truth: Sequence[Sequence[int]],
        k: int = 10,
        target_recall: float = 0.95,
        max_expansion: int = 4096,
    ) -> tuple[int, float]:
        """Measure recall@k of ``queries`` against ``truth`` (their exact top-k keys, which
        the caller computes with its exact path) and double ``expansion_search`` until the
        recall reaches ``target_recall`` or ``max_expansion``. Sets the ef found and returns
        ``(ef, recall)``: recall is measured on the caller's data, never assumed (it falls
        as an index grows: on the bench's clustered corpus the default ef gives 0.98 at
        100k records and far less at 1M)."""
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[0] != len(truth) or queries.shape[0] == 0:
            raise ValueError("need one truth list per query, and at least one query")
        ef = self.config.expansion_search
        while True:
            self.expansion_search = ef
            hits = total = 0
            for q, truth_keys in zip(queries, truth):
                expected = {int(x) for x in list(truth_keys)[:k]}
                found = self.query(q, k)
                assert found is not None  # an unfiltered query always answers
                hits += len(expected & set(found[0].tolist()))
                total += len(expected)
            recall = hits / total if total else 1.0
            if recall >= target_recall or ef >= max_expansion:
                return ef, recall
            ef = min(max_expansion, ef * 2)

    # -- persistence -----------------------------------------------------------------------
    def save(self, path: str) -> None:
        """Write the index to ``path`` (a file the caller owns, e.g. beside the database;
        the hnswlib backend also writes ``path + ".live.npy"``)."""
        self._impl.save(path)

    @classmethod
    def load(cls, path: str, dim: int, config: Optional[AnnConfig] = None, backend: Optional[str] = None) -> "AnnIndex":
        """An index saved by :meth:`save` with the same backend and dimension."""
        index = cls(dim, config, backend)
        index._impl.load(path)
        return index

    # -- helpers -------------------------------------------------------------------------
    def _checked(self, keys: Keys, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key_arr = _keys(keys)
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim == 1 and len(key_arr) == 1:
            vectors = vectors.reshape(1, -1)
        if vectors.ndim != 2 or vectors.shape[0] != len(key_arr):
            raise ValueError(f"need one vector per key: {len(key_arr)} keys, vectors of shape {vectors.shape}")
        if len(np.unique(key_arr)) != len(key_arr):
            raise ValueError("keys must be distinct")
        return key_arr, _unit_rows(vectors, self.dim)


def _keys(keys: Keys) -> np.ndarray:
    arr = np.asarray(keys)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.size and (arr.dtype.kind not in "iu" or arr.min() < 0):
        raise ValueError("keys must be non-negative integers")
    return arr.astype(np.uint64)


def _unit_rows(vectors: np.ndarray, dim: int) -> np.ndarray:
    if vectors.shape[1] != dim:
        raise ValueError(f"vectors have dimension {vectors.shape[1]}, the index {dim}")
    if not np.isfinite(vectors).all():
        raise ValueError("vectors must be finite")
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64))[:, None]  # no float32 overflow
    return np.ascontiguousarray(np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0))


class _Usearch:
    def __init__(self, dim: int, config: AnnConfig) -> None:
        self.dim = dim
        self.config = config
        self.index = self._new()

    def _new(self) -> Any:
        from usearch.index import Index

        return Index(
            ndim=self.dim, metric="cos", dtype="f32", connectivity=self.config.connectivity,
            expansion_add=self.config.expansion_add, expansion_search=self.config.expansion_search,
        )

    def count(self) -> int:
        return len(self.index)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        return np.asarray(self.index.contains(keys), dtype=bool).reshape(-1)

    def reset(self, capacity: int) -> None:
        self.index = self._new()

    def upsert(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        present = self.contains(keys)
        if present.any():
            self.index.remove(keys[present])
        self.index.add(keys, vectors)

    def remove(self, keys: np.ndarray) -> None:
        self.index.remove(keys)

    def search(self, q: np.ndarray, count: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
        ef = max(ef, count)
        if self.index.expansion_search != ef:
            self.index.expansion_search = ef
        matches = self.index.search(q, count)
        return matches.keys.astype(np.int64), matches.distances.astype(np.float64)

    def save(self, path: str) -> None:
        self.index.save(path)

    def load(self, path: str) -> None:
        self.index = self._new()
        self.index.load(path)


class _Hnswlib:
    def __init__(self, dim: int, config: AnnConfig) -> None:
        self.dim = dim
        self.config = config
        self.reset(0)

    def reset(self, capacity: int) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="cosine", dim=self.dim)
        self.index.init_index(
            max_elements=max(1024, capacity), ef_construction=self.config.expansion_add,
            M=self.config.connectivity,
        )
        self.index.set_ef(self.config.expansion_search)
        self.live: set[int] = set()
        self.deleted: set[int] = set()  # labels marked deleted (kept by hnswlib)

    def count(self) -> int:
        return len(self.live)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        return np.fromiter((int(key) in self.live for key in keys), dtype=bool, count=len(keys))

    def upsert(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        # A label hnswlib already holds (live or marked deleted) is updated in place:
        # deleting it and adding it again with replace_deleted can leave the label's
        # lookup entry pointing at a reused slot ("Label not found" on a later remove).
        known = np.fromiter((int(k) in self.live or int(k) in self.deleted for k in keys), dtype=bool, count=len(keys))
        for key in keys[known]:
            if int(key) in self.deleted:
                self.index.unmark_deleted(int(key))
                self.deleted.discard(int(key))
        if known.any():
            self.index.add_items(vectors[known], keys[known], replace_deleted=False)
        fresh = ~known
        if fresh.any():
            need = self.index.element_count + int(fresh.sum())
            if need > self.index.max_elements:
                self.index.resize_index(max(need, 2 * self.index.max_elements))
            self.index.add_items(vectors[fresh], keys[fresh], replace_deleted=False)
        self.live.update(int(key) for key in keys)

    def remove(self, keys: np.ndarray) -> None:
        for key in keys:
            self.index.mark_deleted(int(key))
            self.live.discard(int(key))
            self.deleted.add(int(key))

    def search(self, q: np.ndarray, count: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
        self.index.set_ef(max(ef, count))
        labels, dists = self.index.knn_query(q, k=count)
        return labels[0].astype(np.int64), dists[0].astype(np.float64)

    def save(self, path: str) -> None:
        self.index.save_index(path)
        # hnswlib keeps deleted labels in its file and cannot list the live ones cheaply
        np.save(path + ".live.npy", np.fromiter(self.live, dtype=np.int64, count=len(self.live)))

    def load(self, path: str) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="cosine", dim=self.dim)
        self.index.load_index(path)
        self.index.set_ef(self.config.expansion_search)
        self.live = set(np.load(path + ".live.npy").tolist())
        self.deleted = set(int(label) for label in self.index.get_ids_list()) - self.live
