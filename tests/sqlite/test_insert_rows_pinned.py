"""The direct object building of ``add`` (issue 26 item 2, helper ins27): drafts, plans and
resolved records are built without their per-record dict displays, the checks that cannot
refuse a 2-D embedding block without index texts are skipped, the store's default TTL is
resolved once, and only metadata whose JSON text names the firewall's verdict key is
checked for it. These tests pin what that must not change: the stored rows of a varied
set of adds (records, retrieval rows, keyword rows) byte for byte as the code before it
stored them, the error messages of bad inputs (nothing stored), and one user's add in a
thread shared with another leaving the other's rows and keyword tokens untouched."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import warnings

import numpy as np
import pytest

from oramem import MemoryRetentionConfig, SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.normalize import RecordDraft, draft_records
from oramem.requests import ChunkRow, NewRecord
from oramem.sqlite._sqlite import sqlite3
from oramem.sqlite.keyword import scope_token

DIM = 8
NOW = dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone.utc)


def _vectors(n: int, offset: float = 0.0) -> np.ndarray:
    return (np.arange(n * DIM, dtype=np.float32).reshape(n, DIM) % 7 + 1 + offset) / 8


def _store(path: str, **kwargs) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(
        path, embedder=HashEmbedder(DIM), search_strategy="hybrid", clock=lambda: NOW,
        memory_retention_config=MemoryRetentionConfig(default_ttl_days=7, max_ttl_days=30), **kwargs,
    )


def _dump(path: str) -> dict[str, list[list]]:
    """Every stored row of the store's three tables, in key order, blobs as hex."""
    conn = sqlite3.connect(path)
    try:
        def rows(sql: str) -> list[list]:
            return [[v.hex() if isinstance(v, bytes) else v for v in row] for row in conn.execute(sql)]

        return {
            "records": rows("SELECT * FROM om_DEFAULT_records ORDER BY seq"),
            "chunks": rows("SELECT * FROM om_DEFAULT_chunks ORDER BY chunk_id"),
            "keyword": rows("SELECT rowid, text, scope FROM om_DEFAULT_fts ORDER BY rowid"),
        }
    finally:
        conn.close()


def _varied_adds(store: SQLiteMemoryStore) -> None:
    """Adds through every branch the change touched: a 2-D block with and without index
    texts, vector lists, caller chunks, embedder-computed vectors, the store's default TTL,
    explicit TTLs and anchors, roles, timestamps, the content fallback, awkward scope ids
    (unicode, spaces, None), the verdict key's name where it is not a top-level key, a
    profile."""
    store.add(
        ["alice keeps her passport in the drawer", None, "ünïcødé tëxt ✓", "plain words here", None], "memory",
        embeddings=_vectors(5),
        record_ids=["m1", "id with space", "ü-1", "m4", "no text"],
        user_ids=["alice", "Bob Smith", "ünï", None, "alice"],
        thread_ids=["t 1", "t 1", None, "ťhread", None],
        agent_ids="agent/x",
        metadata=[{"k": 1, "nested": {"a": [1, 2.5, None]}}, {"content": "fallback text"},
                  {"note": "oramem_firewall"}, {"inner": {"oramem_firewall": 1}}, None],
    )
    store.add(["block with its own index text", "second"], "memory", embeddings=_vectors(2, 0.5),
              record_ids=["ix1", "ix2"], index_texts=["searched instead", None], user_ids="alice",
              ttl_days=[None, 3])
    store.add(
        ["hello there", "general kenobi", "an event"], "message", embeddings=list(_vectors(3, 1.0)),
        record_ids=["msg1", "msg2", "msg3"], roles=["user", "assistant", None],
        timestamps=["2025-12-31T23:00:00Z", "2026-01-01T00:00:00+02:00", "2026-01-01T12:00:00"],
        thread_ids="t 1", user_ids=["alice", None, "alice"], ttl_days=[1, None, 2], ttl_anchor="timestamp",
    )
    store.add(["a fact with two chunks"], "fact", record_ids=["f1"], index_texts=[["chunk one", "chunk two"]],
              embeddings=[list(_vectors(2, 2.0))], user_ids="Bob Smith")
    store.add(["computed by the embedder", "and this one", ""], "preference", record_ids=["p1", "p2", "p3"],
              user_ids=["alice", "alice", "alice"], ttl_days=0)
    store.add_user("alice", "likes green tea", {"since": 2020})


#: sha256 of the JSON of ``_dump`` after ``_varied_adds``, as the code before this change
#: (main 657ae0e) stored it; the row counts and some rows are spelt out in the test
PINNED_SHA256 = "98a10f8badfb55e5be42db14124e5d6ae3b8d20e2636869837beee0499222e6d"


def test_stored_rows_of_varied_adds_are_as_before(tmp_path) -> None:
    path = str(tmp_path / "pinned.db")
    store = _store(path)
    try:
        _varied_adds(store)
    finally:
        store.close()
    dump = _dump(path)
    text = json.dumps(dump, ensure_ascii=False, sort_keys=True)
    assert {k: len(v) for k, v in dump.items()} == {"records": 17, "chunks": 15, "keyword": 15}, dump
    by_id = {row[2]: row for row in dump["records"]}
    assert by_id["id with space"][3:] == [
        "fallback text", None, '{"content": "fallback text"}', "t 1", "Bob Smith", "agent/x", None,
        "2026-01-02T03:04:05.123456+00:00", "2026-01-09T03:04:05.123456+00:00"]  # the store's default TTL
    chunk_of = {row[1]: row for row in dump["chunks"]}
    assert chunk_of[by_id["no text"][0]][3] == ""  # one explicit vector, no text (SC-4.6)
    assert chunk_of[by_id["ix1"][0]][3] == "searched instead"
    keyword = {row[0]: row for row in dump["keyword"]}
    space_row = keyword[chunk_of[by_id["id with space"][0]][0]]
    assert space_row[1:] == ["fallback text", "xt7420310 xu426F6220536D6974680 xa6167656E742F780"]
    profile_row = keyword[chunk_of[by_id["alice"][0]][0]]
    assert profile_row[1:] == ["likes green tea", "xtn0 xu616C6963650 xan0"]  # a profile's user is its id
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == PINNED_SHA256, text


def test_drafts_and_records_hold_every_field_of_their_class() -> None:
    """The directly built objects are complete instances: every dataclass field, nothing
    else, each column in its own field; equal to the constructor's objects."""
    vectors = _vectors(2)
    drafts = draft_records(
        ["one", None], "message", embeddings=vectors, record_ids=["d1", "d2"], thread_ids=["t", None],
        user_ids=["u", "v"], agent_ids=[None, "a"], roles=["user", None], timestamps=["2026-01-01T00:00:00Z", None],
        metadata=[{"x": 1}, {"content": "from metadata"}], ttl_days=[5, None], ttl_anchor="timestamp",
    )
    names = {f.name for f in dataclasses.fields(RecordDraft)}
    for d in drafts:
        assert set(vars(d)) == names
        assert d == RecordDraft(**vars(d))
    d1, d2 = drafts
    assert (d1.id, d1.record_type, d1.content, d1.thread_id, d1.user_id, d1.agent_id, d1.role) == (
        "d1", "message", "one", "t", "u", None, "user")
    assert (d2.id, d2.content, d2.thread_id, d2.user_id, d2.agent_id, d2.role) == (
        "d2", "from metadata", None, "v", "a", None)
    assert (d1.timestamp, d2.timestamp) == ("2026-01-01T00:00:00.000000+00:00", None)
    assert (d1.metadata, d1.metadata_json, d2.metadata_json) == ({"x": 1}, '{"x": 1}', '{"content": "from metadata"}')
    assert (d1.ttl_days, d2.ttl_days) == (5, None)
    assert d1.payload[0] == "one" and np.array_equal(d1.payload[1], vectors[0])

    store = SQLiteMemoryStore(":memory:", vector_dim=DIM, search_strategy="vector")
    try:
        norm = store._n()
        plans, texts = norm.plan_records(drafts)
        assert texts == []
        records = norm.finish_records(plans, [])
    finally:
        store.close()
    record_names = {f.name for f in dataclasses.fields(NewRecord)}
    for rec, d in zip(records, drafts):
        assert set(vars(rec)) == record_names
        assert rec == NewRecord(**vars(rec))
        assert (rec.id, rec.record_type, rec.content, rec.thread_id, rec.user_id, rec.agent_id, rec.role,
                rec.timestamp, rec.metadata, rec.metadata_json, rec.restored_times) == (
            d.id, d.record_type, d.content, d.thread_id, d.user_id, d.agent_id, d.role, d.timestamp, d.metadata,
            d.metadata_json, None)
        (row,) = rec.chunks
        assert set(vars(row)) == {"text", "vector"} and row == ChunkRow(**vars(row))
        assert row.text == d.content and np.array_equal(row.vector, d.payload[1])
    assert (records[0].ttl.days, records[1].ttl.days) == (5, None)


# -- errors: the messages as before, nothing stored -------------------------------------------
BAD_ADDS = [
    (dict(contents=["a", "b"], record_type="memory", roles=["user", None]), ValueError,
     "roles apply only to message records, not 'memory' (SC-2.2)"),
    (dict(contents=["a", "b"], record_type="message", roles=["user", ""]), ValueError,
     "roles entries must be non-empty strings or None"),
    (dict(contents=["a", "b"], record_type="message", roles=["user", 3]), TypeError,
     "roles must be a str or None, got int"),
    (dict(contents=["a", "b"], record_type="memory", timestamps=[None, "yesterday"]), ValueError, None),
    (dict(contents=["a", "b"], record_type="memory", embeddings=_vectors(2), index_texts=[None, ["x", "y"]]),
     ValueError, "embeddings[1] is one vector but index_texts[1] has 2 chunks; pass one vector per chunk (SC-4.6)"),
    (dict(contents=["a", ""], record_type="memory", embeddings=[_vectors(1)[0], np.zeros(0, np.float32)],
          index_texts=[None, "has text"]), ValueError,
     "embeddings[1] is empty but record 1 has retrieval text; an empty vector payload is allowed only where there "
     "are no retrieval rows (SC-4.6)"),
    (dict(contents=["a", "b"], record_type="memory", embeddings=[np.ones(DIM, np.float32), np.ones(3, np.float32)]),
     ValueError, "all explicit embeddings of one call must have one dimension, got [3, 8] (SC-4.6)"),
    (dict(contents=["a", "b"], record_type="memory", embeddings=np.ones((2, 3), np.float32), record_ids=["x1", "x2"]),
     ValueError, "embedding of record 'x1' has dimension 3 but the store's vector_dim is 8 (SC-4.6)"),
    (dict(contents=["a", "b"], record_type="memory", metadata=[{"ok": 1}, {"oramem_firewall": "allow"}]), ValueError,
     "metadata has the key 'oramem_firewall', which is reserved for the write-time firewall's verdict; rename it "
     "(the firewall sets it on every record written under a policy)"),
    (dict(contents=["a", "b"], record_type="memory", ttl_days=[3, 4], ttl_anchor="timestamp",
          timestamps=["2026-01-01T00:00:00Z", None], record_ids=["y1", "y2"]), ValueError,
     "record 'y2': ttl_anchor=TIMESTAMP needs an ISO-8601 timestamp for every record that expires (SC-5.3)"),
]


@pytest.mark.parametrize("call, error, message", BAD_ADDS, ids=[m or "timestamp" for _, _, m in BAD_ADDS])
def test_bad_adds_keep_their_messages_and_store_nothing(tmp_path, call, error, message) -> None:
    path = str(tmp_path / "bad.db")
    store = _store(path)
    try:
        store.add(["before"], "memory", record_ids=["kept"], embeddings=_vectors(1))
        before = _dump(path)
        call = dict(call)
        with pytest.raises(error) as info:
            store.add(call.pop("contents"), call.pop("record_type"), **call)
        if message is None:
            assert str(info.value).startswith("timestamps"), str(info.value)
        else:
            assert str(info.value) == message
        assert _dump(path) == before
    finally:
        store.close()


def test_a_keyword_store_refuses_block_embeddings_as_before(tmp_path) -> None:
    store = SQLiteMemoryStore(str(tmp_path / "kw.db"), search_strategy="keyword")
    try:
        with pytest.raises(ValueError) as info:
            store.add(["a"], "memory", record_ids=["k1"], embeddings=np.ones((1, 4), np.float32))
        assert str(info.value).startswith("embedding of record 'k1': this store has no vector column")
        assert store.list("memory") == []
    finally:
        store.close()


def test_default_ttl_resolved_once_is_the_store_default(tmp_path) -> None:
    """Omitted ttl_days takes the store's default, None its maximum, a larger value is
    clamped with one warning per record (as before: the clamp is not cached)."""
    store = _store(str(tmp_path / "ttl.db"))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store.add(["a", "b"], "memory", record_ids=["e1", "e2"], embeddings=_vectors(2))
            store.add(["c"], "memory", record_ids=["e3"], embeddings=_vectors(1), ttl_days=None)
            store.add(["d", "e"], "memory", record_ids=["e4", "e5"], embeddings=_vectors(2), ttl_days=[40, 50])
        assert [str(w.message).split(";")[0] for w in caught] == [
            "ttl_days=40 exceeds the store's max_ttl_days=30", "ttl_days=50 exceeds the store's max_ttl_days=30"]
        expires = {rid: store.get("memory", rid).expires_at for rid in ("e1", "e2", "e3", "e4", "e5")}
        assert expires["e1"] == expires["e2"] == "2026-01-09T03:04:05.123456+00:00"
        assert expires["e3"] == expires["e4"] == expires["e5"] == "2026-02-01T03:04:05.123456+00:00"
    finally:
        store.close()


# -- B against A ------------------------------------------------------------------------------
def test_b_adding_in_a_shared_thread_leaves_a_untouched(tmp_path) -> None:
    """Alice and Bob write in one shared thread with one agent. Bob's adds (a block, a
    vector list, a refused add naming the verdict key) leave Alice's records, retrieval
    rows and keyword rows byte for byte as they were; Bob's keyword rows carry Bob's user
    token and the shared thread's, and Bob's keyword search scoped to him finds none of
    Alice's records."""
    path = str(tmp_path / "shared.db")
    store = _store(path)
    try:
        store.add(["alice passport drawer", "alice passport safe"], "memory", embeddings=_vectors(2),
                  record_ids=["a1", "a2"], user_ids="alice", thread_ids="shared t", agent_ids="helper",
                  metadata=[{"owner": "alice"}, {"owner": "alice"}])
        alice_before = _dump(path)

        store.add(["bob passport garden", "bob tomatoes"], "memory", embeddings=_vectors(2, 0.25),
                  record_ids=["b1", "b2"], user_ids="bob", thread_ids="shared t", agent_ids="helper",
                  metadata=[{"owner": "bob"}, {"note": "oramem_firewall"}])
        store.add(["bob message"], "message", embeddings=list(_vectors(1, 0.75)), record_ids=["b3"],
                  user_ids="bob", thread_ids="shared t", roles=["user"])
        with pytest.raises(ValueError, match="reserved for the write-time firewall"):
            store.add(["bob bad", "bob worse"], "memory", embeddings=_vectors(2), record_ids=["b4", "b5"],
                      user_ids="bob", thread_ids="shared t", metadata=[None, {"oramem_firewall": "x"}])

        after = _dump(path)
        n_rec, n_chunks = len(alice_before["records"]), len(alice_before["chunks"])
        assert after["records"][:n_rec] == alice_before["records"]
        assert after["chunks"][:n_chunks] == alice_before["chunks"]
        assert after["keyword"][:n_chunks] == alice_before["keyword"]

        bob_seqs = {row[0] for row in after["records"] if row[7] == "bob"}
        assert {row[2] for row in after["records"] if row[0] in bob_seqs} == {"b1", "b2", "b3"}
        bob_chunks = {row[0] for row in after["chunks"] if row[1] in bob_seqs}
        expected_scope = " ".join([scope_token("thread", "shared t"), scope_token("user", "bob")])
        for rowid, _text, scope in after["keyword"]:
            if rowid in bob_chunks:
                assert scope.lower().startswith(expected_scope.lower()), scope
                assert scope_token("user", "alice").lower() not in scope.lower()
        assert len([r for r in after["keyword"] if r[0] in bob_chunks]) == 3

        hits = {r.id for r, _ in store.search("passport", k=10, strategy="keyword", user_id="bob",
                                               thread_id="shared t")}
        assert hits == {"b1"}
        alice_hits = {r.id for r, _ in store.search("passport", k=10, strategy="keyword", user_id="alice")}
        assert alice_hits == {"a1", "a2"}
    finally:
        store.close()
