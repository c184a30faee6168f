"""sqlite-vec (``vec0`` virtual table, exact KNN) through apsw, with FTS5 for keywords.

The usual SQLite vector stack: one ``vec0`` table holding the vector, the filter columns
as vec0 metadata columns (user, topic, priority; filtered inside the KNN scan) and the text
and JSON metadata as auxiliary columns, plus an FTS5 table over the same texts (rowid =
record row). Inserted in one transaction with ``executemany``.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

from ..corpus import Corpus
from .base import Adapter, NotMeasured

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def fts_or_query(text: str) -> str:
    """Plain words as quoted FTS5 strings joined by OR (as oramem does)."""
    return " OR ".join(f'"{w.lower()}"' for w in dict.fromkeys(_WORD.findall(text)))


class SqliteVec(Adapter):
    name = "sqlite-vec"
    description = "sqlite-vec vec0 (exact, cosine; metadata columns for filters) + FTS5, via apsw"

    def check(self) -> None:
        try:
            import apsw  # noqa: F401
            import sqlite_vec  # noqa: F401
        except Exception as exc:
            raise NotMeasured(f"apsw/sqlite-vec not importable: {exc}") from exc
        import apsw

        self.version = f"sqlite-vec via apsw {apsw.apsw_version()} (SQLite {apsw.sqlite_lib_version()})"

    @property
    def path(self) -> str:
        return os.path.join(self.workdir, "sqlite_vec.db")

    def _connect(self):
        import apsw
        import sqlite_vec

        con = apsw.Connection(self.path)
        con.enable_load_extension(True)
        con.load_extension(sqlite_vec.loadable_path())
        con.execute("PRAGMA journal_mode=WAL")
        return con

    def create(self) -> None:
        os.makedirs(self.workdir, exist_ok=True)
        self.con = self._connect()
        self.con.execute(
            f"CREATE VIRTUAL TABLE vec USING vec0(rid INTEGER PRIMARY KEY, embedding float[{self.dim}] "
            "distance_metric=cosine, user_id TEXT, topic TEXT, priority INTEGER, "
            "+thread_id TEXT, +content TEXT, +metadata TEXT)"
        )
        self.con.execute("CREATE VIRTUAL TABLE fts USING fts5(content)")

    def insert(self, corpus: Corpus) -> None:
        vectors = np.ascontiguousarray(corpus.vectors, dtype="<f4")
        with self.con:
            self.con.executemany(
                "INSERT INTO vec(rid, embedding, user_id, topic, priority, thread_id, content, metadata) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (i, vectors[i].tobytes(), corpus.user_id(i), md["topic"], md["priority"],
                     corpus.thread_id(i), corpus.texts[i], json.dumps(md))
                    for i in range(corpus.size)
                    for md in (corpus.metadata(i),)
                ),
            )
            self.con.executemany(
                "INSERT INTO fts(rowid, content) VALUES (?, ?)", ((i, corpus.texts[i]) for i in range(corpus.size))
            )

    def open(self) -> None:
        self.con = self._connect()

    def close(self) -> None:
        self.con.close()

    def _knn(self, q, k, where="", params=()):
        sql = f"SELECT rid FROM vec WHERE embedding MATCH ? AND k = ?{where} ORDER BY distance"
        return [row[0] for row in self.con.execute(sql, (np.asarray(q, dtype="<f4").tobytes(), k, *params))]

    def search(self, q, k):
        return self._knn(q, k)

    def search_user(self, q, k, user):
        return self._knn(q, k, " AND user_id = ?", (f"user{user}",))

    def search_meta(self, q, k, topic, min_priority):
        return self._knn(q, k, " AND topic = ? AND priority >= ?", (topic, min_priority))

    def keyword(self, text, k):
        sql = "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?"
        return [row[0] for row in self.con.execute(sql, (fts_or_query(text), k))]
