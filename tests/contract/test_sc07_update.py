"""SC-7: update (stored text / retrieval text / embedding matrix, metadata, time, expiry)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from oramem import MemoryRetentionConfig, TimeToLiveAnchor

from ._support import UTC, hit_ids, parse_ts, snapshot, vec

TS = TimeToLiveAnchor.TIMESTAMP


def _lifetime(rec) -> timedelta:
    return parse_ts(rec.expires_at) - parse_ts(rec.created_at)


def _near(a: timedelta, b: timedelta) -> bool:
    return abs(a - b) <= timedelta(seconds=1)


# ---------------------------------------------------------------- SC-7.1
def test_sc_7_1_returns_one_or_zero(store):
    store.add(["a"], record_type="memory", record_ids="m1")
    assert store.update("memory", "m1", metadata={"x": 1}) == 1
    assert store.update("memory", "missing", metadata={"x": 1}) == 0
    assert store.update("fact", "m1", metadata={"x": 1}) == 0  # wrong type = no such record
    assert store.get("memory", "m1").metadata == {"x": 1}


def test_sc_7_1_all_omitted_is_value_error(store):
    store.add(["a"], record_type="memory", record_ids="m1")
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.update("memory", "m1")
    assert snapshot(store) == before


def test_sc_7_1_profile_update(store):
    store.add_user("u1", "old info")
    assert store.update("user_profile", "u1", text="new info") == 1
    assert store.get("user_profile", "u1").content == "new info"


# ---------------------------------------------------------------- SC-7.2 text
def test_sc_7_2_text_replaces_stored_and_retrieval(kw_store):
    kw_store.add(["zebra old"], record_type="memory", record_ids="m1")
    assert kw_store.update("memory", "m1", text="walrus new") == 1
    assert kw_store.get("memory", "m1").content == "walrus new"
    assert hit_ids(kw_store.search("walrus", k=5)) == ["m1"]
    assert kw_store.search("zebra", k=5) == []


def test_sc_7_2_text_re_embeds_with_embedder(store):
    store.add(["alpha"], record_type="memory", record_ids="m1", embeddings=[vec(1)])
    store.update("memory", "m1", text="totally new words")
    res = store.search("totally new words", k=1)
    assert hit_ids(res) == ["m1"] and res[0][1] == pytest.approx(0.0, abs=1e-4)
    assert store.search(query_vector=vec(1), k=1)[0][1] > 0.01


def test_sc_7_2_text_with_index_text(kw_store):
    kw_store.add(["zebra"], record_type="memory", record_ids="m1")
    kw_store.update("memory", "m1", text="stored walrus", index_text="searched otter")
    assert kw_store.get("memory", "m1").content == "stored walrus"
    assert hit_ids(kw_store.search("otter", k=5)) == ["m1"]
    assert kw_store.search("walrus", k=5) == []
    assert kw_store.search("zebra", k=5) == []


def test_sc_7_2_text_with_single_embedding(store):
    store.add(["a"], record_type="memory", record_ids="m1", embeddings=[vec(1)])
    store.update("memory", "m1", text=" ".join(["long"] * 3000), embedding=vec(8))
    assert store.search(query_vector=vec(8), k=1)[0][1] == pytest.approx(0.0, abs=1e-5)
    # one vector = one row for the whole text
    with pytest.raises(ValueError):
        store.update("memory", "m1", embedding=[vec(1), vec(2)])


def test_sc_7_2_text_with_chunk_vectors_needs_chunk_list(store):
    store.add(["a"], record_type="memory", record_ids="m1", embeddings=[vec(1)])
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.update("memory", "m1", text="new text", embedding=[vec(2), vec(3)])
    assert snapshot(store) == before
    assert store.update("memory", "m1", text="new text", index_text=["p1", "p2"], embedding=[vec(2), vec(3)]) == 1
    assert hit_ids(store.search(query_vector=vec(3), k=1)) == ["m1"]


def test_sc_7_2_text_none_clears_text_and_retrieval(kw_store):
    kw_store.add(["zebra"], record_type="memory", record_ids="m1", metadata={"keep": True})
    assert kw_store.update("memory", "m1", text=None) == 1
    r = kw_store.get("memory", "m1")
    assert r.content is None and r.metadata == {"keep": True}
    assert kw_store.search("zebra", k=5) == []


@pytest.mark.parametrize(
    "extra",
    [{"index_text": "otter"}, {"index_text": ["otter"]}, {"embedding": vec(1)}],
    ids=["index_text", "index_list", "embedding"],
)
def test_sc_7_2_text_none_with_non_none_payload_rejected(store, extra):
    store.add(["zebra"], record_type="memory", record_ids="m1")
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.update("memory", "m1", text=None, **extra)
    assert snapshot(store) == before


def test_sc_7_2_text_none_with_none_payloads_allowed(store):
    store.add(["zebra"], record_type="memory", record_ids="m1")
    assert store.update("memory", "m1", text=None, index_text=None, embedding=None) == 1
    assert store.get("memory", "m1").content is None


@pytest.mark.parametrize("rtype", ["user_profile", "agent_profile"])
def test_sc_7_2_profiles_reject_text_none(store, rtype):
    (store.add_user if rtype == "user_profile" else store.add_agent)("p1", "info")
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.update(rtype, "p1", text=None)
    assert snapshot(store) == before


def test_sc_7_2_empty_text_keeps_empty_content_no_retrieval(kw_store):
    kw_store.add(["zebra"], record_type="memory", record_ids="m1")
    assert kw_store.update("memory", "m1", text="") == 1
    assert kw_store.get("memory", "m1").content == ""
    assert kw_store.search("zebra", k=5) == []


# ---------------------------------------------------------------- SC-7.3 index_text
def test_sc_7_3_index_text_string_keeps_stored_text(kw_store):
    kw_store.add(["zebra stored"], record_type="memory", record_ids="m1")
    assert kw_store.update("memory", "m1", index_text="otter") == 1
    assert kw_store.get("memory", "m1").content == "zebra stored"
    assert hit_ids(kw_store.search("otter", k=5)) == ["m1"]
    assert kw_store.search("zebra", k=5) == []


def test_sc_7_3_index_text_list_is_caller_chunks(store):
    store.add(["stored"], record_type="memory", record_ids="m1")
    assert store.update("memory", "m1", index_text=["kiwi", "", "mango", "papaya"]) == 1
    with pytest.raises(ValueError):
        store.update("memory", "m1", embedding=[vec(1), vec(2)])
    assert store.update("memory", "m1", embedding=[vec(1), vec(2), vec(3)]) == 1


def test_sc_7_3_index_text_none_clears_retrieval_keeps_text(kw_store):
    kw_store.add(["zebra"], record_type="memory", record_ids="m1")
    assert kw_store.update("memory", "m1", index_text=None) == 1
    assert kw_store.get("memory", "m1").content == "zebra"
    assert kw_store.search("zebra", k=5) == []


@pytest.mark.parametrize("empty", ["", []], ids=["empty-string", "empty-list"])
def test_sc_7_3_empty_index_text_clears_retrieval(kw_store, empty):
    kw_store.add(["zebra"], record_type="memory", record_ids="m1")
    assert kw_store.update("memory", "m1", index_text=empty) == 1
    assert kw_store.search("zebra", k=5) == []
    assert kw_store.get("memory", "m1").content == "zebra"


def test_sc_7_3_index_text_none_with_embedding_rejected(store):
    store.add(["zebra"], record_type="memory", record_ids="m1", embeddings=[vec(1)])
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.update("memory", "m1", index_text=None, embedding=vec(2))
    with pytest.raises(ValueError):
        store.update("memory", "m1", index_text=None, embedding=[vec(2)])
    assert snapshot(store) == before
    assert hit_ids(store.search(query_vector=vec(1), k=1)) == ["m1"]


def test_sc_7_3_index_text_none_with_empty_embedding_allowed(store):
    store.add(["zebra"], record_type="memory", record_ids="m1", embeddings=[vec(1)])
    assert store.update("memory", "m1", index_text=None, embedding=[]) == 1
    assert store.search(query_vector=vec(1), k=5) == []


def test_sc_7_3_index_text_with_embedding(store):
    store.add(["a"], record_type="memory", record_ids="m1", embeddings=[vec(1)])
    assert store.update("memory", "m1", index_text="other words", embedding=vec(6)) == 1
    assert store.search(query_vector=vec(6), k=1)[0][1] == pytest.approx(0.0, abs=1e-5)
    assert store.get("memory", "m1").content == "a"


# ---------------------------------------------------------------- SC-7.4 embedding
def test_sc_7_4_embedding_only_reuses_rows(store):
    store.add(["stored"], record_type="memory", record_ids="m1", index_texts=[["kiwi", "mango"]],
              embeddings=[[vec(1), vec(2)]])
    assert store.update("memory", "m1", embedding=[vec(3), vec(4)]) == 1
    res = store.search(query_vector=vec(4), k=1)
    assert hit_ids(res) == ["m1"] and res[0][1] == pytest.approx(0.0, abs=1e-5)
    assert store.search(query_vector=vec(1), k=1)[0][1] == pytest.approx(1.0, abs=1e-5)
    assert store.get("memory", "m1").content == "stored"


def test_sc_7_4_embedding_only_reuses_rows_for_keyword(make_store, hybrid_capable):
    """The retrieval texts survive an embedding-only update (the keyword side still finds them)."""
    from oramem import SearchStrategy

    s = make_store(search_strategy=SearchStrategy.HYBRID)
    s.add(["stored"], record_type="memory", record_ids="m1", index_texts=[["kiwi", "mango"]])
    s.update("memory", "m1", embedding=[vec(3), vec(4)])
    assert hit_ids(s.search("mango", k=5, strategy="keyword")) == ["m1"]


@pytest.mark.parametrize("n", [1, 3])
def test_sc_7_4_embedding_count_mismatch(store, n):
    store.add(["stored"], record_type="memory", record_ids="m1", index_texts=[["kiwi", "mango"]],
              embeddings=[[vec(1), vec(2)]])
    before = snapshot(store)
    payload = vec(5) if n == 1 else [vec(5), vec(6), vec(7)]
    with pytest.raises(ValueError) as ei:
        store.update("memory", "m1", embedding=payload)
    assert "2" in str(ei.value)  # names the existing row count
    assert snapshot(store) == before
    assert store.search(query_vector=vec(2), k=1)[0][1] == pytest.approx(0.0, abs=1e-5)


def test_sc_7_4_embedding_wrong_dimension(store):
    store.add(["a"], record_type="memory", record_ids="m1", embeddings=[vec(1)])
    with pytest.raises(ValueError):
        store.update("memory", "m1", embedding=vec(1, dim=16))
    assert store.search(query_vector=vec(1), k=1)[0][1] == pytest.approx(0.0, abs=1e-5)


def test_sc_7_4_embedding_none_strips_vectors(store):
    store.add(["zebra"], record_type="memory", record_ids="m1", embeddings=[vec(1)])
    store.add(["other"], record_type="memory", record_ids="m2", embeddings=[vec(2)])
    assert store.update("memory", "m1", embedding=None) == 1
    assert hit_ids(store.search(query_vector=vec(1), k=5)) == ["m2"]
    assert store.get("memory", "m1").content == "zebra"
    # rows kept: a later embedding-only update still has one row to attach to
    assert store.update("memory", "m1", embedding=vec(1)) == 1
    assert hit_ids(store.search(query_vector=vec(1), k=1)) == ["m1"]


def test_sc_7_4_embedding_none_keeps_text_rows_for_keyword(make_store, hybrid_capable):
    from oramem import SearchStrategy

    s = make_store(search_strategy=SearchStrategy.HYBRID)
    s.add(["zebra"], record_type="memory", record_ids="m1")
    assert s.update("memory", "m1", embedding=None) == 1
    assert hit_ids(s.search("zebra", k=5, strategy="keyword")) == ["m1"]


def test_sc_7_4_text_with_embedding_none(store):
    store.add(["zebra"], record_type="memory", record_ids="m1", embeddings=[vec(1)])
    assert store.update("memory", "m1", text="new text", embedding=None) == 1
    assert store.get("memory", "m1").content == "new text"
    assert store.search(query_vector=vec(1), k=5) == []
    assert store.search("new text", k=5) == []


def test_sc_7_4_embedding_only_without_rows_rejected(store):
    store.add(["stored"], record_type="memory", record_ids="m1", index_texts=[""])
    with pytest.raises(ValueError):
        store.update("memory", "m1", embedding=[vec(1), vec(2)])


def test_sc_7_4_embedding_does_not_call_embedder(make_store):
    from oramem.embedders import HashEmbedder

    from ._support import CountingEmbedder

    emb = CountingEmbedder(HashEmbedder(dim=64))
    s = make_store(embedder=emb)
    s.add(["a"], record_type="memory", record_ids="m1")
    emb.texts.clear()
    s.update("memory", "m1", text="new", embedding=vec(1))
    s.update("memory", "m1", embedding=vec(2))
    assert emb.texts == []


# ---------------------------------------------------------------- SC-7.5 metadata / timestamp
def test_sc_7_5_metadata_replaces_whole_mapping(store):
    store.add(["a"], record_type="memory", record_ids="m1", metadata={"a": 1, "b": 2})
    store.update("memory", "m1", metadata={"c": 3})
    assert store.get("memory", "m1").metadata == {"c": 3}
    store.update("memory", "m1", metadata=None)
    assert store.get("memory", "m1").metadata is None
    assert [r.id for r in store.list("memory", metadata_filter=None)] == ["m1"]


def test_sc_7_5_timestamp_set_and_clear(store):
    store.add(["a"], record_type="memory", record_ids="m1", timestamps="2026-01-01T00:00:00Z")
    store.update("memory", "m1", timestamp="2027-02-03T04:05:06")
    assert parse_ts(store.get("memory", "m1").timestamp) == datetime(2027, 2, 3, 4, 5, 6, tzinfo=UTC)
    store.update("memory", "m1", timestamp=None)
    assert store.get("memory", "m1").timestamp is None


def test_sc_7_5_bad_timestamp_rejected(store):
    store.add(["a"], record_type="memory", record_ids="m1", timestamps="2026-01-01T00:00:00Z")
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.update("memory", "m1", timestamp="next tuesday")
    assert snapshot(store) == before


def test_sc_7_5_omitted_fields_unchanged(store):
    store.add(["a"], record_type="memory", record_ids="m1", metadata={"a": 1}, timestamps="2026-01-01T00:00:00Z",
              thread_ids="t", ttl_days=5)
    r0 = store.get("memory", "m1")
    store.update("memory", "m1", text="b")
    r1 = store.get("memory", "m1")
    assert (r1.content, r1.metadata, r1.timestamp, r1.thread_id, r1.expires_at, r1.created_at) == (
        "b", r0.metadata, r0.timestamp, "t", r0.expires_at, r0.created_at)


# ---------------------------------------------------------------- SC-7.6 expiry
@pytest.fixture
def ret_store(make_store):
    return make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=10, max_ttl_days=100))


def test_sc_7_6_both_omitted_keep_expiry(ret_store):
    ret_store.add(["a"], record_type="memory", record_ids="m1", ttl_days=3)
    before = ret_store.get("memory", "m1").expires_at
    ret_store.update("memory", "m1", metadata={"x": 1}, timestamp="2030-01-01T00:00:00Z")
    assert ret_store.get("memory", "m1").expires_at == before


def test_sc_7_6_ttl_days_created_at(ret_store):
    ret_store.add(["a"], record_type="memory", record_ids="m1", ttl_days=3)
    assert ret_store.update("memory", "m1", ttl_days=50) == 1
    assert _near(_lifetime(ret_store.get("memory", "m1")), timedelta(days=50))


def test_sc_7_6_ttl_none_uses_max(ret_store):
    ret_store.add(["a"], record_type="memory", record_ids="m1", ttl_days=3)
    ret_store.update("memory", "m1", ttl_days=None)
    assert _near(_lifetime(ret_store.get("memory", "m1")), timedelta(days=100))


def test_sc_7_6_ttl_none_without_max_clears(store):
    store.add(["a"], record_type="memory", record_ids="m1", ttl_days=3)
    store.update("memory", "m1", ttl_days=None)
    assert store.get("memory", "m1").expires_at is None


def test_sc_7_6_anchor_alone_uses_default(ret_store):
    ret_store.add(["a"], record_type="memory", record_ids="m1", ttl_days=3)
    ret_store.update("memory", "m1", ttl_anchor=TimeToLiveAnchor.CREATED_AT)
    assert _near(_lifetime(ret_store.get("memory", "m1")), timedelta(days=10))


def test_sc_7_6_anchor_alone_without_default_never_expires(store):
    store.add(["a"], record_type="memory", record_ids="m1", ttl_days=3)
    store.update("memory", "m1", ttl_anchor=TimeToLiveAnchor.CREATED_AT)
    assert store.get("memory", "m1").expires_at is None


def test_sc_7_6_timestamp_anchor_new_time(ret_store):
    ret_store.add(["a"], record_type="memory", record_ids="m1")
    ret_store.update("memory", "m1", timestamp="2099-01-01T00:00:00", ttl_days=5, ttl_anchor=TS)
    r = ret_store.get("memory", "m1")
    assert parse_ts(r.expires_at) == datetime(2099, 1, 6, tzinfo=UTC)
    assert parse_ts(r.timestamp) == datetime(2099, 1, 1, tzinfo=UTC)


def test_sc_7_6_timestamp_anchor_stored_time(ret_store):
    ret_store.add(["a"], record_type="memory", record_ids="m1", timestamps="2099-03-01T12:00:00+00:00")
    ret_store.update("memory", "m1", ttl_days=2, ttl_anchor="timestamp")
    assert parse_ts(ret_store.get("memory", "m1").expires_at) == datetime(2099, 3, 3, 12, tzinfo=UTC)


def test_sc_7_6_timestamp_anchor_alone_uses_default_days(ret_store):
    ret_store.add(["a"], record_type="memory", record_ids="m1", timestamps="2099-03-01T12:00:00+00:00")
    ret_store.update("memory", "m1", ttl_anchor=TS)
    assert parse_ts(ret_store.get("memory", "m1").expires_at) == datetime(2099, 3, 11, 12, tzinfo=UTC)


def test_sc_7_6_timestamp_anchor_without_time_rejected(ret_store):
    ret_store.add(["a"], record_type="memory", record_ids="m1", ttl_days=3)
    before = snapshot(ret_store)
    with pytest.raises(ValueError):
        ret_store.update("memory", "m1", ttl_days=5, ttl_anchor=TS)
    with pytest.raises(ValueError):
        ret_store.update("memory", "m1", ttl_days=5, ttl_anchor=TS, timestamp=None)
    assert snapshot(ret_store) == before


def test_sc_7_6_update_clamps_with_warning(ret_store):
    ret_store.add(["a"], record_type="memory", record_ids="m1")
    with pytest.warns(UserWarning):
        ret_store.update("memory", "m1", ttl_days=1000)
    assert _near(_lifetime(ret_store.get("memory", "m1")), timedelta(days=100))


@pytest.mark.parametrize("bad", [-3, 2.5])
def test_sc_7_6_bad_ttl_rejected(ret_store, bad):
    ret_store.add(["a"], record_type="memory", record_ids="m1", ttl_days=3)
    before = snapshot(ret_store)
    with pytest.raises(ValueError):
        ret_store.update("memory", "m1", ttl_days=bad)
    assert snapshot(ret_store) == before


def test_sc_7_6_update_can_expire_record(store):
    store.add(["a"], record_type="memory", record_ids="m1", timestamps="2020-01-01T00:00:00Z")
    assert store.update("memory", "m1", ttl_days=1, ttl_anchor=TS) == 1
    assert store.get("memory", "m1") is None


def test_sc_7_bad_metadata_type_writes_nothing(store):
    store.add(["a"], record_type="memory", record_ids="m1", metadata={"a": 1})
    before = snapshot(store)
    with pytest.raises((TypeError, ValueError)):
        store.update("memory", "m1", text="new", metadata={"bad": object()})
    with pytest.raises((TypeError, ValueError)):
        store.update("memory", "m1", text="new", metadata="nope")
    assert snapshot(store) == before


def test_sc_7_update_replaces_caller_chunks_with_text(kw_store):
    kw_store.add(["stored"], record_type="memory", record_ids="m1", index_texts=[["kiwi", "mango"]])
    kw_store.update("memory", "m1", text="papaya")
    assert hit_ids(kw_store.search("papaya", k=5)) == ["m1"]
    assert kw_store.search("kiwi", k=5) == [] and kw_store.search("mango", k=5) == []


def test_sc_7_6_revive_with_anchor_only(store):
    """SC-5.6 via ttl_anchor alone: no default TTL -> never expires -> visible again."""
    store.add(["x"], record_type="memory", record_ids="m1", timestamps="2020-01-01T00:00:00Z", ttl_days=1,
              ttl_anchor=TS)
    assert store.get("memory", "m1") is None
    assert store.update("memory", "m1", ttl_anchor=TimeToLiveAnchor.CREATED_AT) == 1
    assert store.get("memory", "m1").expires_at is None
