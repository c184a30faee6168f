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
