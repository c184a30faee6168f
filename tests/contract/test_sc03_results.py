"""SC-3: result types, get, list, list_thread_messages."""

from __future__ import annotations

from datetime import datetime

import pytest

from oramem import MAX_LIST_LIMIT, MessageRecord, Record, TimeToLiveAnchor

from ._support import UTC, close_to, ids, parse_ts


def test_sc_3_1_record_fields(store):
    store.add(["body"], record_type="memory", record_ids="m1", thread_ids="t1", user_ids="u1", agent_ids="a1",
              timestamps="2026-03-04T05:06:07+00:00", metadata={"k": [1, "two", {"x": None}]}, ttl_days=None)
    r = store.get("memory", "m1")
    assert isinstance(r, Record) and not isinstance(r, MessageRecord)
    assert r.id == "m1" and r.record_type == "memory" and r.content == "body"
    assert parse_ts(r.timestamp) == datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    assert r.metadata == {"k": [1, "two", {"x": None}]}
    assert (r.thread_id, r.user_id, r.agent_id) == ("t1", "u1", "a1")
    assert isinstance(r.created_at, str)
    assert close_to(parse_ts(r.created_at), datetime.now(UTC), seconds=120)
    assert r.expires_at is None


def test_sc_3_1_record_is_frozen(store):
    store.add(["body"], record_type="memory", record_ids="m1")
    r = store.get("memory", "m1")
    with pytest.raises(Exception):
        r.content = "changed"  # type: ignore[misc]


def test_sc_3_1_message_record_role_and_monotonic_seq_no(store):
    store.add(["a", "b"], record_type="message", record_ids=["x1", "x2"], thread_ids="t1", roles=["user", "assistant"])
    store.add(["c"], record_type="message", record_ids="x3", thread_ids="t2", roles="user")
    recs = [store.get("message", i) for i in ("x1", "x2", "x3")]
    assert all(isinstance(r, MessageRecord) for r in recs)
    assert [r.role for r in recs] == ["user", "assistant", "user"]
    seqs = [r.seq_no for r in recs]
    assert all(isinstance(s, int) for s in seqs)
    assert seqs[0] < seqs[1] < seqs[2]  # monotonic per store, across threads


def test_sc_3_2_get_missing_is_none(store):
    assert store.get("memory", "nope") is None


def test_sc_3_2_get_expired_is_none(store):
    store.add(["old"], record_type="memory", record_ids="m-old", timestamps="2020-01-01T00:00:00+00:00",
              ttl_days=1, ttl_anchor=TimeToLiveAnchor.TIMESTAMP)
    assert store.get("memory", "m-old") is None


@pytest.fixture
def scoped(store):
    store.add(
        ["a", "b", "c", "d"],
        record_type="memory",
        record_ids=["m1", "m2", "m3", "m4"],
        thread_ids=["t1", "t1", None, "t2"],
        user_ids=["u1", None, "u1", "u2"],
        agent_ids=[None, "a1", "a1", None],
        metadata=[{"x": 1}, None, {"x": 2}, None],
    )
    return store


def test_sc_3_3_omitted_filters_apply_no_filter(scoped):
    assert ids(scoped.list("memory")) == ["m1", "m2", "m3", "m4"]


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"thread_id": "t1"}, ["m1", "m2"]),
        ({"thread_id": None}, ["m3"]),
        ({"user_id": "u1"}, ["m1", "m3"]),
        ({"user_id": None}, ["m2"]),
        ({"agent_id": "a1"}, ["m2", "m3"]),
        ({"agent_id": None}, ["m1", "m4"]),
        ({"thread_id": "t1", "agent_id": None}, ["m1"]),
        ({"metadata_filter": None}, ["m2", "m4"]),
        ({"metadata_filter": {"x": 2}}, ["m3"]),
        ({"thread_id": "zz"}, []),
    ],
)
def test_sc_3_3_list_filters_explicit_none_means_null(scoped, kwargs, expected):
    assert ids(scoped.list("memory", **kwargs)) == expected


def test_sc_3_3_unscoped_types_ignore_scope_filters(store):
    store.add_user("u1", "one")
    store.add_user("u2", "two")
    assert ids(store.list("user_profile", user_id=None)) == ["u1", "u2"]
    assert ids(store.list("user_profile", user_id="u2", thread_id="t", agent_id=None)) == ["u1", "u2"]


def test_sc_3_3_limit_keeps_most_recent_oldest_first(store):
    store.add(["1", "2", "3", "4"], record_type="memory", record_ids=["a", "b", "c", "d"])
    assert ids(store.list("memory", limit=2)) == ["c", "d"]
    assert ids(store.list("memory", limit=None)) == ["a", "b", "c", "d"]
    assert ids(store.list("memory", limit=10)) == ["a", "b", "c", "d"]


def test_sc_3_3_insertion_order_not_id_order(store):
    store.add(["z"], record_type="fact", record_ids="zzz")
    store.add(["a"], record_type="fact", record_ids="aaa")
    store.add(["m"], record_type="fact", record_ids="mmm")
    assert ids(store.list("fact")) == ["zzz", "aaa", "mmm"]


def test_sc_3_3_default_limit_is_max_list_limit(store):
    """Omitted limit = the 10,000 most recent; limit=None = all."""
    assert MAX_LIST_LIMIT == 10_000
    n = MAX_LIST_LIMIT + 3
    rid = [f"r{i:05d}" for i in range(n)]
    # empty contents: no retrieval rows, so no embedding work
    store.add([""] * n, record_type="memory", record_ids=rid, batch_size=2000)
    default = store.list("memory")
    assert len(default) == MAX_LIST_LIMIT
    assert default[0].id == rid[3] and default[-1].id == rid[-1]
    assert len(store.list("memory", limit=None)) == n


def test_sc_3_3_list_excludes_other_types(store):
    store.add(["m"], record_type="memory", record_ids="m1")
    store.add(["f"], record_type="fact", record_ids="f1")
    assert ids(store.list("memory")) == ["m1"]
    assert ids(store.list("fact")) == ["f1"]


@pytest.fixture
def thread(store):
    store.add(["q1", "a1", "q2", "a2"], record_type="message", record_ids=["m1", "m2", "m3", "m4"],
              thread_ids="t1", roles=["user", "assistant", "user", "assistant"])
    store.add(["other"], record_type="message", record_ids="o1", thread_ids="t2", roles="user")
    store.add(["mem in t1"], record_type="memory", record_ids="mem1", thread_ids="t1")
    store.add(["q3"], record_type="message", record_ids="m5", thread_ids="t1", roles="user")
    return store


def test_sc_3_4_thread_messages_oldest_first(thread):
    msgs = thread.list_thread_messages("t1")
    assert ids(msgs) == ["m1", "m2", "m3", "m4", "m5"]
    assert all(isinstance(m, MessageRecord) for m in msgs)
    assert [m.content for m in msgs] == ["q1", "a1", "q2", "a2", "q3"]


def test_sc_3_4_last_n_keeps_newest(thread):
    assert ids(thread.list_thread_messages("t1", last_n=2)) == ["m4", "m5"]
    assert ids(thread.list_thread_messages("t1", last_n=None)) == ["m1", "m2", "m3", "m4", "m5"]
    assert ids(thread.list_thread_messages("t1", last_n=50)) == ["m1", "m2", "m3", "m4", "m5"]


def test_sc_3_4_unknown_thread_is_empty(thread):
    assert thread.list_thread_messages("nope") == []


def test_sc_3_3_memory_store_path_memory(make_store):
    """`:memory:` SQLite stores work too (on Oracle the path is ignored)."""
    s = make_store(path=":memory:")
    s.add(["in memory"], record_type="memory", record_ids="m1")
    assert s.get("memory", "m1").content == "in memory"
    assert ids(s.list("memory")) == ["m1"]


def test_sc_3_1_message_records_from_every_read_path(store):
    store.add(["q"], record_type="message", record_ids="x1", thread_ids="t1", roles="user", embeddings=[[1.0] + [0.0] * 63])
    for rec in (store.list("message")[0], store.list_thread_messages("t1")[0],
                store.search(query_vector=[1.0] + [0.0] * 63, k=1)[0][0]):
        assert isinstance(rec, MessageRecord)
        assert (rec.id, rec.role, rec.thread_id) == ("x1", "user", "t1")
        assert isinstance(rec.seq_no, int)


def test_sc_3_3_limit_applies_after_filters(store):
    store.add([str(i) for i in range(6)], record_type="memory", record_ids=[f"m{i}" for i in range(6)],
              thread_ids=["t1", "t2"] * 3)
    assert ids(store.list("memory", thread_id="t1", limit=2)) == ["m2", "m4"]
    assert ids(store.list("memory", metadata_filter=None, thread_id="t2", limit=1)) == ["m5"]


def test_sc_3_1_unicode_round_trip(store):
    text = "café naïve — 日本語 ✓ \U0001F600 'quoted' \"double\" \\ back"
    store.add([text], record_type="memory", record_ids="ü-id", metadata={"ключ": "значение", "emoji": "\U0001F600"},
              thread_ids="thread-é")
    r = store.get("memory", "ü-id")
    assert r.content == text
    assert r.metadata == {"ключ": "значение", "emoji": "\U0001F600"}
    assert ids(store.list("memory", thread_id="thread-é")) == ["ü-id"]


def test_sc_3_3_memory_stores_are_independent(make_store, sqlite_only):
    a = make_store(path=":memory:")
    b = make_store(path=":memory:")
    a.add(["x"], record_type="memory", record_ids="m1")
    assert b.list("memory") == []
