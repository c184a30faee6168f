"""oramem's embedded SQLite engine through the public store API (exact search).

A HYBRID store (vectors + FTS5), so the same store answers vector, scoped, metadata-filtered
and keyword queries; vector queries pass ``strategy="vector"``. Records are added with their
precomputed vectors in calls of ``BATCH`` records (one transaction each).
"""

from __future__ import annotations

import os

from ..corpus import Corpus
from .base import Adapter, NotMeasured, row_of

BATCH = 10_000


class OramemSQLite(Adapter):
    name = "oramem"
    description = "oramem SQLiteMemoryStore (HYBRID store: numpy matrix + FTS5), exact search via the public API"
    paired_reference = True

    def check(self) -> None:
        try:
            from oramem import SQLiteMemoryStore  # noqa: F401
            from oramem.sqlite import SQLiteEngine  # noqa: F401
        except Exception as exc:  # engine not there yet, or broken
            raise NotMeasured(f"oramem SQLite engine not importable: {type(exc).__name__}: {exc}") from exc

    @property
    def path(self) -> str:
        return os.path.join(self.workdir, "oramem.db")

    def _store(self):
        from oramem import SQLiteMemoryStore

        return SQLiteMemoryStore(self.path, vector_dim=self.dim, search_strategy="hybrid")

    def create(self) -> None:
        os.makedirs(self.workdir, exist_ok=True)
        self.store = self._store()

    def insert(self, corpus: Corpus) -> None:
        for start in range(0, corpus.size, BATCH):
            stop = min(corpus.size, start + BATCH)
            rows = range(start, stop)
            self.store.add(
                corpus.texts[start:stop],
                "memory",
                embeddings=corpus.vectors[start:stop],
                record_ids=[corpus.record_id(i) for i in rows],
                user_ids=[corpus.user_id(i) for i in rows],
                thread_ids=[corpus.thread_id(i) for i in rows],
                metadata=[corpus.metadata(i) for i in rows],
            )

    def open(self) -> None:
        self.store = self._store()

    def close(self) -> None:
        self.store.close()

    def _ids(self, results):
        return [row_of(record.id) for record, _distance in results]

    def search(self, q, k):
        return self._ids(self.store.search(query_vector=q, k=k, strategy="vector"))

    def search_user(self, q, k, user):
        return self._ids(self.store.search(query_vector=q, k=k, user_id=f"user{user}", strategy="vector"))

    def search_meta(self, q, k, topic, min_priority):
        flt = {"topic": topic, "priority": {"$gte": min_priority}}
        return self._ids(self.store.search(query_vector=q, k=k, metadata_filter=flt, strategy="vector"))

    def keyword(self, text, k):
        return self._ids(self.store.search(text, k=k, strategy="keyword"))


class OramemSQLiteVector(OramemSQLite):
    """The same engine with a VECTOR-only store (no FTS5 index to maintain): shows what
    keyword capability costs at insert time."""

    name = "oramem-vec"
    description = "oramem SQLiteMemoryStore, VECTOR-only store (no FTS5), exact search via the public API"

    def _store(self):
        from oramem import SQLiteMemoryStore

        return SQLiteMemoryStore(self.path, vector_dim=self.dim, search_strategy="vector")

    def keyword(self, text, k):
        from .base import Unsupported

        raise Unsupported("VECTOR-only store (keyword needs a HYBRID or KEYWORD store)")


class OramemSQLiteApprox(OramemSQLite):
    """The same HYBRID store opened with ``approximate_search=AnnConfig()``: the engine's own
    HNSW path through the public API. The index is built when the vector cache loads (the
    first search after open), so insert time here includes one search, and the cold open
    includes the build (the engine does not persist the index)."""

    name = "oramem-approx"
    description = ("oramem SQLiteMemoryStore(approximate_search=AnnConfig()), HYBRID store; insert includes the "
                   "first search, which builds the HNSW index")
    approximate = True
    paired_reference = False

    def check(self) -> None:
        super().check()
        import inspect

        from oramem import SQLiteMemoryStore
        from oramem.ann import available_backends

        if "approximate_search" not in inspect.signature(SQLiteMemoryStore).parameters:
            raise NotMeasured("this oramem has no SQLiteMemoryStore(approximate_search=...)")
        if not available_backends():
            raise NotMeasured("no ANN backend installed (pip install 'oramem[ann]')")

    def _store(self):
        from oramem import SQLiteMemoryStore
        from oramem.ann import AnnConfig

        return SQLiteMemoryStore(self.path, vector_dim=self.dim, search_strategy="hybrid",
                                 approximate_search=AnnConfig())

    def insert(self, corpus: Corpus) -> None:
        super().insert(corpus)
        self.search(corpus.vectors[0], 10)  # loads the cache and builds the index
