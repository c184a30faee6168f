"""chromadb (embedded ``PersistentClient``; HNSW, cosine), with embeddings passed
explicitly so no embedding model is loaded.

Chroma's vector search is approximate (HNSW, default parameters); filters are ``where``
clauses on metadata. Its document filter (``$contains``) is a substring match without
ranking, measured as its "keyword search" and labelled as such.
"""

from __future__ import annotations

import os

from ..corpus import Corpus
from .base import Adapter, NotMeasured, row_of


class Chroma(Adapter):
    name = "chromadb"
    description = "chromadb PersistentClient, HNSW cosine (approximate, defaults); keyword = unranked $contains"
    approximate = True

    def check(self) -> None:
        try:
            import chromadb
        except Exception as exc:
            raise NotMeasured(f"chromadb not importable: {type(exc).__name__}: {exc}") from exc
        self.version = f"chromadb {chromadb.__version__}"

    def _client(self):
        import chromadb
        from chromadb.config import Settings

        return chromadb.PersistentClient(path=os.path.join(self.workdir, "chroma"),
                                         settings=Settings(anonymized_telemetry=False))

    def create(self) -> None:
        os.makedirs(self.workdir, exist_ok=True)
        self.client = self._client()
        self.col = self.client.create_collection("bench", embedding_function=None,
                                                 metadata={"hnsw:space": "cosine"})

    def insert(self, corpus: Corpus) -> None:
        step = min(5000, self.client.get_max_batch_size())
        for start in range(0, corpus.size, step):
            stop = min(corpus.size, start + step)
            rows = range(start, stop)
            metas = []
            for i in rows:
                md = corpus.metadata(i)
                metas.append({"user_id": corpus.user_id(i), "thread_id": corpus.thread_id(i), "topic": md["topic"],
                              "priority": md["priority"], "tags": ",".join(md["tags"])})
            self.col.add(ids=[corpus.record_id(i) for i in rows], embeddings=corpus.vectors[start:stop],
                         documents=corpus.texts[start:stop], metadatas=metas)

    def open(self) -> None:
        self.client = self._client()
        self.col = self.client.get_collection("bench", embedding_function=None)

    def _q(self, q, k, where=None):
        res = self.col.query(query_embeddings=[q], n_results=k, where=where, include=[])
        return [row_of(i) for i in res["ids"][0]]

    def search(self, q, k):
        return self._q(q, k)

    def search_user(self, q, k, user):
        return self._q(q, k, {"user_id": f"user{user}"})

    def search_meta(self, q, k, topic, min_priority):
        return self._q(q, k, {"$and": [{"topic": topic}, {"priority": {"$gte": min_priority}}]})

    def keyword(self, text, k):
        words = text.split()
        doc = {"$or": [{"$contains": w} for w in words]} if len(words) > 1 else {"$contains": words[0]}
        res = self.col.get(where_document=doc, limit=k, include=[])
        return [row_of(i) for i in res["ids"]]
