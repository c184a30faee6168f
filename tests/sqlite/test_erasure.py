"""Erasure leaves nothing behind: after a delete the words are in no FTS5 shadow table and
no byte of the database file (after a WAL checkpoint); secure_delete is on."""

from __future__ import annotations

from oramem.sqlite._sqlite import sqlite3

import pytest

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder

TOKEN = "zanzibarquux"


def shadow_tables(path: str) -> dict[str, bytes]:
    conn = sqlite3.connect(path)
    try:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%fts%'")]
        out = {}
        for name in names:
            blob = b"".join(
                (v if isinstance(v, bytes) else str(v).encode()) for row in conn.execute(f'SELECT * FROM "{name}"') for v in row
                if v is not None
            )
            out[name] = blob
        return out
    finally:
        conn.close()


def file_bytes(path: str) -> bytes:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(path, "rb") as fh:
        return fh.read()


@pytest.mark.parametrize("how", ["delete", "cascade", "delete_thread", "purge"])
def test_deleted_words_leave_the_index_and_the_file(tmp_path, how, monkeypatch):
    path = str(tmp_path / "e.db")
    s = SQLiteMemoryStore(path, embedder=HashEmbedder(64), search_strategy="hybrid")
    # enough other rows that the index has several segments and many pages
    s.add([f"bob note {i} about gardening and tomatoes" for i in range(300)], "memory", user_ids="bob")
    s.add_user("alice", f"Alice, {TOKEN} fan")
    ids = s.add([f"alice secret {TOKEN} number {i}" for i in range(20)], "memory", user_ids="alice", thread_ids="t-alice",
                ttl_days=1 if how == "purge" else None)
    s.add([f"more bob {i}" for i in range(50)], "memory", user_ids="bob")
    assert [r.id for r, _ in s.search(TOKEN, k=50, strategy="keyword")] != []
    assert any(TOKEN.encode() in blob for blob in shadow_tables(path).values())
    if how == "delete":
        for rid in ids:
            s.delete("memory", rid)
        s.delete("user_profile", "alice")
    elif how == "cascade":
        s.delete("user_profile", "alice", cascade=True)
    elif how == "delete_thread":
        s.delete_thread("t-alice")
        s.delete("user_profile", "alice")
    else:
        import oramem.sqlite.engine as eng
        from datetime import datetime, timedelta, timezone

        later = (datetime.now(timezone.utc) + timedelta(days=2)).isoformat(timespec="microseconds")
        monkeypatch.setattr(eng.SQLiteEngine, "_now", lambda self: later)
        assert s.purge_expired() == 20
        s.delete("user_profile", "alice")
    assert s.search(TOKEN, k=5, strategy="keyword") == []
    assert len(s.list("memory", limit=None)) == 350
    s.close()
    for name, blob in shadow_tables(path).items():
        assert TOKEN.encode() not in blob, name
    assert TOKEN.encode() not in file_bytes(path)


def test_secure_delete_is_on(tmp_path):
    s = SQLiteMemoryStore(str(tmp_path / "s.db"), embedder=HashEmbedder(16))
    assert s.engine._db.conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
    s.close()
