"""numpy brute force: the physical reference for exact search.

The same float32 unit matrix oramem holds, one matrix-vector product per query and
``argpartition`` for the top k. Filters are boolean masks over int code columns computed
per query (what an in-memory engine can do at best without a per-user index), followed by
the gather of the selected rows. Persisted as ``.npy`` files so "open" means loading them.
"""

from __future__ import annotations

import os

import numpy as np

from ..corpus import TOPICS, Corpus
from .base import Adapter, Unsupported


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest scores, best first."""
    if k >= scores.size:
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]


class NumpyBruteForce(Adapter):
    name = "numpy"
    description = "numpy float32 matrix @ q + argpartition (exact reference); filters as code-column masks"

    def create(self) -> None:
        os.makedirs(self.workdir, exist_ok=True)

    def load_memory(self, corpus: Corpus) -> None:
        """Hold the corpus in memory only (the paired in-process reference)."""
        m = np.ascontiguousarray(corpus.vectors, dtype=np.float32)
        m = m / np.linalg.norm(m, axis=1, keepdims=True)
        self.matrix = m.astype(np.float32, copy=False)
        self.users = corpus.user_codes.copy()
        self.topics = corpus.topic_codes.copy()
        self.priorities = corpus.priorities.copy()

    def insert(self, corpus: Corpus) -> None:
        self.load_memory(corpus)
        for name in ("matrix", "users", "topics", "priorities"):
            np.save(os.path.join(self.workdir, name + ".npy"), getattr(self, name))

    def open(self) -> None:
        for name in ("matrix", "users", "topics", "priorities"):
            setattr(self, name, np.load(os.path.join(self.workdir, name + ".npy")))

    def close(self) -> None:
        self.matrix = None

    def search(self, q, k):
        return top_k(self.matrix @ q, k).tolist()

    def _masked(self, q, k, mask):
        rows = np.flatnonzero(mask)
        return rows[top_k(self.matrix[rows] @ q, k)].tolist()

    def search_user(self, q, k, user):
        return self._masked(q, k, self.users == user)

    def search_meta(self, q, k, topic, min_priority):
        return self._masked(q, k, (self.topics == TOPICS.index(topic)) & (self.priorities >= min_priority))

    def keyword(self, text, k):
        raise Unsupported("numpy has no full-text search")
