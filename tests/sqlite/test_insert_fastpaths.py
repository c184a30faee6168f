"""The batched checks of ``add`` (issue 26 item 2, insert throughput): ids, texts and
metadata of a whole call are checked at once when they are plain, and entry by entry
otherwise. These tests pin that the fast paths accept and store exactly what the
per-entry checks do, and that every bad entry still raises the per-entry error, naming
the first bad entry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oramem import SQLiteMemoryStore
from oramem.errors import ArgumentError, ArgumentTypeError
from oramem.normalize import _check_text, _checked_metadata, check_id, draft_records


class _Str(str):
    pass


def _reference(contents, record_ids, user_ids, thread_ids, metadata):
    """What the per-entry checks give, entry by entry."""
    return (
        [_check_text(c, f"contents[{i}]") for i, c in enumerate(contents)],
        [check_id(v, f"record_ids[{i}]", optional=True) for i, v in enumerate(record_ids)],
        [check_id(v, f"user_ids[{i}]", optional=True) for i, v in enumerate(user_ids)],
        [check_id(v, f"thread_ids[{i}]", optional=True) for i, v in enumerate(thread_ids)],
        [_checked_metadata(m, "metadata") for m in metadata],
    )


VARIED = dict(
    contents=["plain", "", None, "ünïcødé ✓ 𝄞", _Str("subclass"), "x" * 5000, "tab\tand\nnewline"],
    record_ids=["a", None, "é" * 255, _Str("s"), "b", "c", "d"],
    user_ids=[None, "u1", "u1", "ü", None, _Str("u2"), "u" * 255],
    thread_ids=["t", None, "t", "t2", None, None, "t3"],
    metadata=[
        {"k": 1, "nested": {"a": [1, 2.5, None, True]}, "s": "ü"},
        None,
        {"content": "fallback text"},
        {},
        {"big": 10**30, "neg": -0.0, "f": 1e-300},
        {"esc": "quote\" back\\slash \u2028 \x01"},
        {"u": "\\u0000 is not a NUL"},
    ],
)


def test_varied_batch_checks_as_the_per_entry_checks_do() -> None:
    drafts = draft_records(VARIED["contents"], "memory", **{k: v for k, v in VARIED.items() if k != "contents"})
    texts, ids, users, threads, checked = _reference(**VARIED)
    texts[2] = "fallback text"  # SC-4.1: content None takes metadata["content"]
    assert [d.content for d in drafts] == texts
    assert [d.id for d in drafts] == ids
    assert [d.user_id for d in drafts] == users
    assert [d.thread_id for d in drafts] == threads
    assert [d.metadata for d in drafts] == [c for c, _ in checked]
    assert [d.metadata_json for d in drafts] == [t for _, t in checked]
    # detached copies, not the caller's dicts
    for d, given in zip(drafts, VARIED["metadata"]):
        if given is not None:
            assert d.metadata is not given
    assert math.copysign(1.0, drafts[4].metadata["neg"]) == -1.0


@pytest.mark.parametrize(
    "field, bad_value, error, message",
    [
        ("record_ids", "\ud800", ArgumentError, "record_ids[3] contains a lone surrogate"),
        ("record_ids", "", ArgumentError, "record_ids[3] must not be empty"),
        ("record_ids", "x" * 256, ArgumentError, "record_ids[3] is 256 characters"),
        ("record_ids", "a\x00b", ArgumentError, "record_ids[3] must not contain NUL"),
        ("record_ids", 7, ArgumentTypeError, "record_ids[3] must be a str or None"),
        ("user_ids", "\udfff", ArgumentError, "user_ids[3] contains a lone surrogate"),
        ("user_ids", b"bytes", ArgumentTypeError, "user_ids[3] must be a str or None"),
        ("thread_ids", "", ArgumentError, "thread_ids[3] must not be empty"),
        ("contents", "bad \ud83d text", ArgumentError, "contents[3] contains a lone surrogate"),
        ("contents", 3.5, ArgumentTypeError, "contents[3] must be a str or None"),
    ],
)
def test_a_bad_entry_raises_the_per_entry_error(field, bad_value, error, message) -> None:
    values = {"contents": ["a", "b", "c", "d", "e"], "record_ids": ["1", "2", "3", "4", "5"],
              "user_ids": ["u", "u", None, "u", "u"], "thread_ids": [None, "t", "t", "t", None]}
    values[field] = list(values[field])
    values[field][3] = bad_value
    values[field][4] = "\ud800"  # a later bad entry: not the one named
    contents = values.pop("contents")
    with pytest.raises(error) as info:
        draft_records(contents, "memory", **values)
    assert str(info.value).startswith(message), str(info.value)


@pytest.mark.parametrize(
    "bad, error, message",
    [
        ({"n": float("nan")}, ArgumentError, "metadata must be JSON-serialisable"),
        ({"o": object()}, ArgumentError, "metadata must be JSON-serialisable"),
        ({1: "int key"}, ArgumentTypeError, "metadata keys must be strings"),
        ({"s": "\ud800"}, ArgumentError, "metadata contains a lone surrogate"),
        ({"s": "a\x00b"}, ArgumentError, "metadata keys and string values must not contain NUL"),
        ({"a\x00": 1}, ArgumentError, "metadata keys and string values must not contain NUL"),
        ("not a dict", ArgumentTypeError, "metadata must be a dict or None"),
    ],
)
def test_bad_metadata_raises_the_per_entry_error(bad, error, message) -> None:
    metadata = [{"ok": 1}, None, bad, {"also": "ok"}]
    with pytest.raises(error) as info:
        draft_records(["a", "b", "c", "d"], "memory", metadata=metadata)
    assert str(info.value).startswith(message), str(info.value)
    with pytest.raises(error) as single:
        _checked_metadata(bad, "metadata")
    assert str(single.value) == str(info.value)


def test_cyclic_metadata_keeps_its_message() -> None:
    cyclic: dict = {}
    cyclic["self"] = cyclic
    with pytest.raises(ArgumentError) as info:
        draft_records(["a", "b"], "memory", metadata=[{"x": 1}, cyclic])
    with pytest.raises(ArgumentError) as single:
        _checked_metadata(cyclic, "metadata")
    assert str(info.value) == str(single.value)


def test_first_duplicate_id_is_named() -> None:
    with pytest.raises(ArgumentError, match="duplicate record id 'b'"):
        draft_records(["1", "2", "3", "4", "5"], "memory", record_ids=["a", "b", None, "b", "a"])


def test_scalar_scope_is_checked_once_and_broadcast() -> None:
    drafts = draft_records(["a", "b"], "memory", user_ids="alice", thread_ids=None)
    assert [(d.user_id, d.thread_id) for d in drafts] == [("alice", None), ("alice", None)]
    with pytest.raises(ArgumentError, match="^user_ids must not be empty"):
        draft_records(["a"], "memory", user_ids="")
    assert draft_records([], "memory", user_ids="") == []  # nothing to scope: as before


def test_stored_rows_of_a_varied_add(tmp_path) -> None:
    """The stored records of a varied add read back as given (ids, scopes, metadata,
    content fallback, TTL, explicit chunks), through the fast paths."""
    store = SQLiteMemoryStore(str(tmp_path / "s.db"), vector_dim=3, search_strategy="hybrid")
    try:
        md = VARIED["metadata"]
        ids = store.add(
            [c if c is None else str(c) for c in VARIED["contents"]], "memory",
            record_ids=["a", "r2", "é" * 255, "s", "b", "c", "d"], user_ids=VARIED["user_ids"],
            thread_ids=VARIED["thread_ids"], metadata=md, ttl_days=[None, 1, 2, None, 3, None, 0],
            embeddings=[np.ones(3, np.float32)] * 3 + [[np.ones(3, np.float32), np.full(3, 2.0, np.float32)]]
            + [np.ones(3, np.float32)] * 3,
            index_texts=[None, None, None, ["chunk one", "chunk two"], None, None, None],
        )
        assert ids[1] == "r2"
        for rid, user, thread, meta in zip(ids, VARIED["user_ids"], VARIED["thread_ids"], md):
            rec = store.get("memory", rid)
            if rid == "d":  # ttl_days=0: expired at once, not visible
                assert rec is None
                continue
            assert rec is not None
            assert (rec.user_id, rec.thread_id) == (user, thread)
            assert rec.metadata == meta
        assert store.get("memory", "r2").content == ""
        assert store.get("memory", "é" * 255).content == "fallback text"
        assert store.get("memory", "a").expires_at is None
        assert store.get("memory", "r2").expires_at is not None
    finally:
        store.close()


# -- engine: the keyword-index fill of an add and the stored vector bytes -------------------
def _rows(path: str, sql: str) -> list:
    from oramem.sqlite._sqlite import sqlite3

    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("sync", ["on_commit", "manual"])
def test_keyword_rows_of_adds_with_and_without_gaps(tmp_path, sync) -> None:
    """An add whose records with retrieval rows have consecutive seqs fills the index by a
    seq range, one with gaps (a record without retrieval rows between) by the list; either
    way exactly the new chunks are indexed (or parked, MANUAL), once, and nothing of an
    earlier add again."""
    path = str(tmp_path / "k.db")
    store = SQLiteMemoryStore(path, vector_dim=None, search_strategy="keyword", search_index_sync=sync)
    try:
        store.add(["alpha one", "alpha two", "alpha three"], "memory", record_ids=["a1", "a2", "a3"])
        store.add(["beta one", "no rows", "beta three", "beta four"], "memory", record_ids=["b1", "b2", "b3", "b4"],
                  index_texts=[None, "", None, ["beta four chunk", "second chunk"]])
        store.add(["gamma"], "memory", record_ids=["g1"], user_ids="u")
        chunks = _rows(path, "SELECT chunk_id FROM om_DEFAULT_chunks ORDER BY chunk_id")
        table = "om_DEFAULT_fts_pending" if sync == "manual" else "om_DEFAULT_fts"
        key = "chunk_id" if sync == "manual" else "rowid"
        assert _rows(path, f"SELECT {key} FROM {table} ORDER BY {key}") == chunks
        assert len(chunks) == 3 + 4 + 1  # b2 has none, b4 has two
        if sync == "manual":
            store.sync_search_index()
        hits = {r.id for r, _ in store.search("beta", k=10, strategy="keyword")}
        assert hits == {"b1", "b3", "b4"}
        assert {r.id for r, _ in store.search("gamma", k=10, strategy="keyword", user_id="u")} == {"g1"}
        assert store.search("gamma", k=10, strategy="keyword", user_id="other") == []
    finally:
        store.close()


def test_stored_vector_bytes_whatever_the_array(tmp_path) -> None:
    """The stored blob is the little-endian float32 of the vector for every array form
    (float32 rows of a block, strided views, float64, big-endian), and a wrong dimension
    is refused before anything is written."""
    path = str(tmp_path / "v.db")
    store = SQLiteMemoryStore(path, vector_dim=4, search_strategy="vector")
    try:
        base = np.arange(1, 33, dtype=np.float32).reshape(8, 4)
        given = [base[0], base[1:3].ravel()[::2], base[3].astype(np.float64), base[4].astype(">f4"), base[:, 1][:4]]
        store.add([f"t{i}" for i in range(len(given))], "memory", record_ids=[f"v{i}" for i in range(len(given))],
                  embeddings=given)
        store.add(["block0", "block1"], "memory", record_ids=["w0", "w1"], embeddings=base[5:7])
        stored = dict(_rows(path, "SELECT r.id, c.vector FROM om_DEFAULT_chunks c JOIN om_DEFAULT_records r "
                                  "ON r.seq = c.record_seq"))
        for i, v in enumerate(given):
            assert stored[f"v{i}"] == np.asarray(v, dtype="<f4").tobytes()
        assert stored["w0"] == base[5].astype("<f4").tobytes() and stored["w1"] == base[6].astype("<f4").tobytes()
        with pytest.raises(ValueError, match="dimension"):
            store.add(["short"], "memory", record_ids=["x"], embeddings=[np.ones(3, np.float32)])
        assert store.get("memory", "x") is None
    finally:
        store.close()


def test_one_mixed_add_keeps_each_users_records_apart(tmp_path) -> None:
    """One ``add`` of A's and B's records in a shared thread and for a shared agent goes
    through the batched checks and the keyword fill by seq range; B then finds nothing of
    A's (keyword, vector, hybrid, list, with and without the shared thread/agent), and
    forgetting B erases none of A's records."""
    from oramem.embedders import HashEmbedder

    store = SQLiteMemoryStore(str(tmp_path / "m.db"), embedder=HashEmbedder(32), search_strategy="hybrid")
    try:
        users = ["alice", "bob", "alice", "bob"]
        texts = ["alice passport drawer", "bob garden tomatoes", "alice passport safe", "bob garden bees"]
        store.add(texts, "memory", record_ids=["a1", "b1", "a2", "b2"], user_ids=users, thread_ids="shared-t",
                  agent_ids="shared-agent", metadata=[{"owner": u} for u in users])
        a_ids = {"a1", "a2"}
        for strategy in ("keyword", "vector", "hybrid"):
            for extra in ({}, {"thread_id": "shared-t"}, {"agent_id": "shared-agent"},
                          {"thread_id": "shared-t", "agent_id": "shared-agent"}):
                hits = {r.id for r, _ in store.search("alice passport", k=10, strategy=strategy, user_id="bob", **extra)}
                assert not hits & a_ids, (strategy, extra, hits)
                mine = {r.id for r, _ in store.search("alice passport", k=10, strategy=strategy, user_id="alice", **extra)}
                assert mine & a_ids, (strategy, extra, mine)  # her own records are found, so the check above has teeth
        assert {r.id for r in store.list("memory", user_id="bob")} == {"b1", "b2"}
        assert all(r.metadata == {"owner": r.user_id} for r in store.list("memory", thread_id="shared-t"))
        store.forget(user_id="bob")
        assert {r.id for r in store.list("memory", thread_id="shared-t")} == a_ids
        assert {r.id for r, _ in store.search("passport", k=10, strategy="keyword", user_id="alice")} == a_ids
    finally:
        store.close()
