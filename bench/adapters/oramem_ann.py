"""oramem.ann (HNSW) over the same corpus: what the engine's approximate path would do.

The index is built from the same unit vectors (build time is its insert time, on top of
whatever the store itself costs); filters use the index's over-fetch with a vectorised
predicate over row keys, falling back to an exact scan of the matching rows when the index
cannot serve the filter (as :mod:`oramem.ann` specifies).
"""

from __future__ import annotations

import os

import numpy as np

from ..corpus import TOPICS, Corpus
from .base import Adapter, NotMeasured, Unsupported
from .numpy_bf import top_k


class OramemAnn(Adapter):
    name = "oramem-ann"
    description = ("oramem.ann.AnnIndex (HNSW, default AnnConfig, ef calibrated at build to recall@10 >= 0.95 on "
                   "64 held-out perturbed records) over the same vectors; filtered queries over-fetch, exact fallback")
    approximate = True

    def check(self) -> None:
        try:
            from oramem.ann import available_backends
        except Exception as exc:
            raise NotMeasured(f"oramem.ann not importable: {exc}") from exc
        if not available_backends():
            raise NotMeasured("no ANN backend installed (pip install 'oramem[ann]')")
        self.backend = available_backends()[0]
        self.description += f"; backend {self.backend}"

    @property
    def path(self) -> str:
        return os.path.join(self.workdir, "ann.bin")

    def create(self) -> None:
        os.makedirs(self.workdir, exist_ok=True)

    def insert(self, corpus: Corpus) -> None:
        from oramem.ann import AnnIndex

        self.index = AnnIndex(self.dim)
        self.index.build(np.arange(corpus.size), corpus.vectors)
        # what an engine would do after a build: measure recall on its own data (stored
        # records plus noise, not the benchmark's queries) and raise ef until it is met
        rng = np.random.default_rng(2024)
        picks = rng.choice(corpus.size, size=min(64, corpus.size), replace=False)
        cal = corpus.vectors[picks] + rng.standard_normal((len(picks), corpus.dim), dtype=np.float32) * 0.05
        cal /= np.linalg.norm(cal, axis=1, keepdims=True)
        truth = [top_k(corpus.vectors @ q, 10) for q in cal]
        ef, recall = self.index.calibrate(cal, truth, k=10, target_recall=0.95)
        self.notes = {"calibrated_ef": ef, "calibration_recall": round(recall, 4)}
        self.index.save(self.path)
        self._columns(corpus)
        np.savez(os.path.join(self.workdir, "columns.npz"), matrix=self.matrix, users=self.users,
                 topics=self.topics, priorities=self.priorities, ef=np.array([ef]))

    def _columns(self, corpus: Corpus) -> None:
        # the exact fallback needs the vectors; the engine already holds them in its matrix
        self.matrix = corpus.vectors
        self.users = corpus.user_codes
        self.topics = corpus.topic_codes
        self.priorities = corpus.priorities

    def open(self) -> None:
        from oramem.ann import AnnIndex

        self.index = AnnIndex.load(self.path, self.dim)
        cols = np.load(os.path.join(self.workdir, "columns.npz"))
        self.matrix, self.users, self.topics, self.priorities = (
            cols["matrix"], cols["users"], cols["topics"], cols["priorities"])
        self.index.expansion_search = int(cols["ef"][0])

    def search(self, q, k):
        found = self.index.query(q, k)
        if found is None:  # the graph search answered short: exact, as the engine does
            return top_k(self.matrix @ q, k).tolist()
        return found[0].tolist()

    def _filtered(self, q, k, mask):
        selectivity = float(mask.mean())
        if self.index.use_for(len(self.index), selectivity):
            found = self.index.query(q, k, accept=lambda keys: mask[keys], selectivity=selectivity)
            if found is not None:
                return found[0].tolist()
        rows = np.flatnonzero(mask)
        return rows[top_k(self.matrix[rows] @ q, k)].tolist()

    def search_user(self, q, k, user):
        return self._filtered(q, k, self.users == user)

    def search_meta(self, q, k, topic, min_priority):
        return self._filtered(q, k, (self.topics == TOPICS.index(topic)) & (self.priorities >= min_priority))

    def keyword(self, text, k):
        raise Unsupported("keyword search does not use the ANN index (same as oramem exact)")
