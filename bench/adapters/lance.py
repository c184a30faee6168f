"""LanceDB (embedded, Lance files): flat (exact) vector search, since no vector index is
built, with SQL ``where`` prefilters, and its native full-text index (BM25).
"""

from __future__ import annotations

import os

import numpy as np

from ..corpus import Corpus
from .base import Adapter, NotMeasured


class Lance(Adapter):
    name = "lancedb"
    description = "lancedb flat (exact) cosine search with prefilter; native FTS index (BM25)"

    def check(self) -> None:
        try:
            import lancedb
            import pyarrow  # noqa: F401
        except Exception as exc:
            raise NotMeasured(f"lancedb not importable: {type(exc).__name__}: {exc}") from exc
        self.version = f"lancedb {lancedb.__version__}"

    def _db(self):
        import lancedb

        return lancedb.connect(os.path.join(self.workdir, "lance"))

    def create(self) -> None:
        os.makedirs(self.workdir, exist_ok=True)
        self.db = self._db()

    def insert(self, corpus: Corpus) -> None:
        import pyarrow as pa

        flat = pa.array(np.ascontiguousarray(corpus.vectors, dtype=np.float32).reshape(-1))
        table = pa.table({
            "rid": pa.array(np.arange(corpus.size, dtype=np.int64)),
            "vector": pa.FixedSizeListArray.from_arrays(flat, corpus.dim),
            "user_id": pa.array([corpus.user_id(i) for i in range(corpus.size)]),
            "thread_id": pa.array([corpus.thread_id(i) for i in range(corpus.size)]),
            "topic": pa.array([corpus.metadata(i)["topic"] for i in range(corpus.size)]),
            "priority": pa.array(corpus.priorities.astype(np.int64)),
            "tags": pa.array([corpus.tags(i) for i in range(corpus.size)], type=pa.list_(pa.string())),
            "text": pa.array(corpus.texts),
        })
        self.tbl = self.db.create_table("bench", table)
        self.tbl.create_fts_index("text", use_tantivy=False)

    def open(self) -> None:
        self.db = self._db()
        self.tbl = self.db.open_table("bench")

    def _rids(self, query) -> list[int]:
        return query.select(["rid"]).to_arrow()["rid"].to_pylist()

    def _vq(self, q, k):
        return self.tbl.search(np.asarray(q, dtype=np.float32)).distance_type("cosine").limit(k)

    def search(self, q, k):
        return self._rids(self._vq(q, k))

    def search_user(self, q, k, user):
        return self._rids(self._vq(q, k).where(f"user_id = 'user{int(user)}'", prefilter=True))

    def search_meta(self, q, k, topic, min_priority):
        return self._rids(self._vq(q, k).where(f"topic = '{topic}' AND priority >= {int(min_priority)}", prefilter=True))

    def keyword(self, text, k):
        return self._rids(self.tbl.search(text, query_type="fts").limit(k))
