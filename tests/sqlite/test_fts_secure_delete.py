"""Deletes and text updates cost what they change (issue 26 item 1): the keyword index uses
FTS5 ``secure-delete``, so a deleting transaction erases its rows' words in the delete
itself and never runs FTS5 ``'rebuild'`` over the whole index (counted with the
connection's trace callback, not timed; the timing is bench/delete_cost.py). A keyword
index written by an earlier oramem (no secure-delete) is upgraded once under
CREATE_IF_NECESSARY, refused with that advice under REQUIRE_EXISTING / CREATE_IF_EMPTY, and
read as it is by a read-only open."""

from __future__ import annotations

import pytest

from oramem import SchemaError, SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.sqlite._sqlite import sqlite3
from oramem.types import SchemaPolicy

NEEDLE = "quokkavelvetine"


def _open(path: str, **kw) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(path, embedder=HashEmbedder(32), search_strategy="hybrid", **kw)


def _statements(store: SQLiteMemoryStore) -> list[str]:
    seen: list[str] = []
    store.engine._db.conn.set_trace_callback(seen.append)
    return seen


def _secure_delete(path: str) -> object:
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT v FROM om_DEFAULT_fts_config WHERE k = 'secure-delete'").fetchone()
    return None if row is None else row[0]


def _file_has(path: str, needle: str) -> bool:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(path, "rb") as fh:
        return needle.encode() in fh.read()


def _fill(store: SQLiteMemoryStore) -> list[str]:
    store.add([f"note {i} about gardening and tomatoes" for i in range(200)], "memory", user_ids="bob")
    return store.add([f"secret {NEEDLE} number {i}" for i in range(3)], "memory", user_ids="alice")


def test_delete_update_and_transaction_run_no_rebuild(tmp_path):
    path = str(tmp_path / "s.db")
    s = _open(path)
    try:
        ids = _fill(s)
        assert _secure_delete(path) == 1
        seen = _statements(s)
        s.delete("memory", ids[0])
        s.update("memory", ids[1], text="replaced words only")
        with s.transaction():
            s.delete("memory", ids[2])
        s.delete_thread("no-such-thread")
        s.engine._db.conn.set_trace_callback(None)
        assert any("DELETE FROM" in q and "_fts" in q for q in seen)  # the trace saw the FTS deletes
        assert not [q for q in seen if "rebuild" in q.lower()]
        assert s.search(NEEDLE, k=5, strategy="keyword") == []
        assert [r.id for r, _ in s.search("replaced", k=5, strategy="keyword")] == [ids[1]]
        s.engine._db.conn.execute("INSERT INTO om_DEFAULT_fts(om_DEFAULT_fts) VALUES ('integrity-check')")
    finally:
        s.close()
    assert not _file_has(path, NEEDLE)


def _old_file(path: str) -> list[str]:
    """A store as an earlier oramem left it: the same tables, a keyword index without
    the secure-delete setting (its ``*_config`` table then holds only ``version``)."""
    s = _open(path)
    ids = _fill(s)
    s.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM om_DEFAULT_fts_config WHERE k = 'secure-delete'")
    assert _secure_delete(path) is None
    return ids


def test_old_file_is_upgraded_under_create_if_necessary(tmp_path):
    path = str(tmp_path / "old.db")
    ids = _old_file(path)
    s = _open(path)  # CREATE_IF_NECESSARY, the default
    try:
        assert _secure_delete(path) == 1
        assert len(s.search(NEEDLE, k=5, strategy="keyword")) == 3
        seen = _statements(s)
        for rid in ids:
            s.delete("memory", rid)
        s.engine._db.conn.set_trace_callback(None)
        assert not [q for q in seen if "rebuild" in q.lower()]
        assert s.search(NEEDLE, k=5, strategy="keyword") == []
    finally:
        s.close()
    assert not _file_has(path, NEEDLE)


@pytest.mark.parametrize("policy", [SchemaPolicy.REQUIRE_EXISTING, SchemaPolicy.CREATE_IF_EMPTY])
def test_old_file_is_refused_without_upgrade_with_advice(tmp_path, policy):
    """SC-10.2: these policies change nothing, and used as it is the old index would rebuild
    itself on every delete; the open is refused, names the policy that upgrades it, and
    leaves the file as it was."""
    path = str(tmp_path / "old.db")
    _old_file(path)
    with pytest.raises(SchemaError, match="CREATE_IF_NECESSARY") as err:
        _open(path, schema_policy=policy)
    assert "read_only=True" in str(err.value) and policy.name in str(err.value)
    assert _secure_delete(path) is None  # nothing upgraded
    assert _file_has(path, NEEDLE)  # nor rebuilt or deleted
    s = _open(path)  # the advice works
    try:
        assert _secure_delete(path) == 1
        assert len(s.search(NEEDLE, k=5, strategy="keyword")) == 3
    finally:
        s.close()
    _open(path, schema_policy=policy).close()  # and the upgraded file opens under the policy


def test_old_file_opens_read_only(tmp_path):
    path = str(tmp_path / "old.db")
    _old_file(path)
    s = _open(path, read_only=True)
    try:
        assert len(s.search(NEEDLE, k=5, strategy="keyword")) == 3
    finally:
        s.close()
    assert _secure_delete(path) is None


def test_bulk_delete_merges_once_and_erases(tmp_path):
    """A delete of D keyword tokens with D² >= MERGE_FACTOR x the index's tokens (and at least
    MERGE_MIN_ROWS rows) erases them by one merge of the index instead of per-row
    secure-delete (bench/results/delete_cost.md):
    the words are gone from the file, the index is consistent, the setting is back on, and
    a later small delete is a secure one again."""
    path = str(tmp_path / "bulk.db")
    s = _open(path)
    try:
        s.add([f"note {i} about gardening and tomatoes" for i in range(300)], "memory", user_ids="bob")
        s.add([f"secret {NEEDLE} number {i} quokka" for i in range(100)], "memory", user_ids="alice", thread_ids="t1")
        keep = s.add([f"kept zebra {i}" for i in range(3)], "memory", user_ids="alice")
        seen = _statements(s)
        assert s.delete_thread("t1") == 1  # the thread and its 100 records
        s.engine._db.conn.set_trace_callback(None)
        assert [q for q in seen if "'optimize'" in q]
        assert not [q for q in seen if "rebuild" in q.lower()]
        assert _secure_delete(path) == 1
        assert s.search(NEEDLE, k=5, strategy="keyword") == []
        assert len(s.search("quokka", k=5, strategy="keyword")) == 0
        assert sorted(r.id for r, _ in s.search("zebra", k=5, strategy="keyword")) == sorted(keep)
        assert len(s.search("tomatoes", k=500, strategy="keyword")) == 300
        s.engine._db.conn.execute("INSERT INTO om_DEFAULT_fts(om_DEFAULT_fts) VALUES ('integrity-check')")
        seen = _statements(s)
        s.delete("memory", keep[0])
        s.engine._db.conn.set_trace_callback(None)
        assert not [q for q in seen if "'optimize'" in q or "rebuild" in q.lower()]
    finally:
        s.close()
    assert not _file_has(path, NEEDLE)
    assert not _file_has(path, "quokka")


def test_small_deletes_stay_secure_in_a_large_index(tmp_path):
    """Below the token rule the delete is a secure one, whatever MERGE_MIN_ROWS says."""
    path = str(tmp_path / "big.db")
    s = _open(path)
    try:
        s.add([f"note {i} about gardening" for i in range(5000)], "memory", user_ids="bob")
        ids = s.add([f"secret {NEEDLE} {i}" for i in range(65)], "memory", user_ids="alice", thread_ids="t1")
        seen = _statements(s)
        s.delete_thread("t1")  # 65 rows of 6 tokens: at MERGE_MIN_ROWS, but 390² < 23 x ~35,400
        s.engine._db.conn.set_trace_callback(None)
        assert ids and not [q for q in seen if "'optimize'" in q]
        assert s.search(NEEDLE, k=5, strategy="keyword") == []
    finally:
        s.close()
    assert not _file_has(path, NEEDLE)


def test_merge_path_survives_many_interleaved_writers(tmp_path, monkeypatch):
    """tests/hardening/test_fts_rebuild.py's workload (4 interleaved writers) with every
    delete and text update taking the merge path: FTS5 'optimize' corrupted the index on
    SQLite 3.40.1 under it; on the engine's build the index stays consistent."""
    import random

    from oramem.sqlite import mutations

    from hardening._workers import Ledger, open_store, step  # tests/ is on sys.path (rootdir conftest)

    monkeypatch.setattr(mutations, "MERGE_MIN_ROWS", 1)
    monkeypatch.setattr(mutations.WriteTx, "_merge_instead",
                        lambda self, params: self.tables.has_secure_delete(self.conn))
    store = open_store(str(tmp_path / "f.db"))
    try:
        ledgers = [Ledger(f"T{i}", False) for i in range(4)]
        rngs = [random.Random(1000 + i) for i in range(4)]
        seen = _statements(store)
        for n in range(300):
            for ledger, rng in zip(ledgers, rngs):
                step(store, ledger, rng, n)
        store.engine._db.conn.set_trace_callback(None)
        assert len([q for q in seen if "'optimize'" in q]) > 50
        conn = store.engine._db.conn
        conn.execute("INSERT INTO om_DEFAULT_fts(om_DEFAULT_fts) VALUES ('integrity-check')")
        for ledger in ledgers:
            for rid, (text, _) in list(ledger.live.items())[:5]:
                hits = store.search(text, k=3, user_id=ledger.prefix, strategy="keyword")
                assert rid in [r.id for r, _ in hits], (rid, text)
    finally:
        store.close()
