"""SC-4: add / add_batches."""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest

import oramem
from oramem import PendingRecordBatch, TimeToLiveAnchor

from ._support import UTC, CountingEmbedder, close_to, hit_ids, ids, parse_ts, snapshot, vec


# ---------------------------------------------------------------- SC-4.1 contents
def test_sc_4_1_bare_string_is_type_error(store):
    before = snapshot(store)
    with pytest.raises(TypeError):
        store.add("just a string", record_type="memory")
    assert snapshot(store) == before


def test_sc_4_1_none_falls_back_to_metadata_content(store):
    store.add([None, "explicit"], record_type="memory", record_ids=["m1", "m2"],
              metadata=[{"content": "from metadata"}, {"content": "ignored"}])
    assert store.get("memory", "m1").content == "from metadata"
    assert store.get("memory", "m2").content == "explicit"


def test_sc_4_1_explicit_empty_string_kept(store):
    store.add([""], record_type="memory", record_ids="m1", metadata={"content": "fallback"})
    assert store.get("memory", "m1").content == ""


# ---------------------------------------------------------------- SC-4.2 broadcast/alignment
def test_sc_4_2_scalars_broadcast(store):
    store.add(["a", "b", "c"], record_type="message", record_ids=["x", "y", "z"], thread_ids="t", user_ids="u",
              agent_ids="ag", roles="user", timestamps="2026-01-01T00:00:00Z", metadata={"k": 1})
    for rid in ("x", "y", "z"):
        r = store.get("message", rid)
        assert (r.thread_id, r.user_id, r.agent_id, r.role, r.metadata) == ("t", "u", "ag", "user", {"k": 1})
        assert parse_ts(r.timestamp) == datetime(2026, 1, 1, tzinfo=UTC)


def test_sc_4_2_lists_align(store):
    store.add(["a", "b"], record_type="message", record_ids=["x", "y"], thread_ids=["t1", "t2"],
              roles=["user", "assistant"], metadata=[{"i": 0}, None])
    x, y = store.get("message", "x"), store.get("message", "y")
    assert (x.thread_id, x.role, x.metadata) == ("t1", "user", {"i": 0})
    assert (y.thread_id, y.role, y.metadata) == ("t2", "assistant", None)


MISALIGNED = {
    "index_texts": ["a", "b", "c"],
    "embeddings": [vec(0), vec(1), vec(2)],
    "record_ids": ["x", "y", "z"],
    "thread_ids": ["t1"],
    "user_ids": ["u1", "u2", "u3"],
    "agent_ids": ["a1"],
    "roles": ["user", "user", "user"],
    "timestamps": ["2026-01-01T00:00:00Z"],
    "metadata": [{"a": 1}, {"b": 2}, {"c": 3}],
    "ttl_days": [1, 2, 3],
    "ttl_anchor": [TimeToLiveAnchor.CREATED_AT],
}


@pytest.mark.parametrize("arg", sorted(MISALIGNED))
def test_sc_4_2_misaligned_list_is_value_error_naming_argument(store, arg):
    before = snapshot(store)
    with pytest.raises(ValueError) as ei:
        kwargs = {"thread_ids": "t", arg: MISALIGNED[arg]}
        store.add(["one", "two"], record_type="message", **kwargs)
    assert arg in str(ei.value)
    assert snapshot(store) == before


# ---------------------------------------------------------------- SC-4.3 record ids
def test_sc_4_3_string_id_for_one_record(store):
    assert store.add(["a"], record_type="memory", record_ids="only") == ["only"]


def test_sc_4_3_generated_ids_are_uuid4(store):
    out = store.add(["a", "b"], record_type="memory")
    assert len(out) == 2 and out[0] != out[1]
    for rid in out:
        assert uuid.UUID(rid).version == 4
        assert str(uuid.UUID(rid)) == rid
    assert ids(store.list("memory")) == out


def test_sc_4_3_none_entries_generate_ids(store):
    out = store.add(["a", "b"], record_type="memory", record_ids=["given", None])
    assert out[0] == "given" and uuid.UUID(out[1]).version == 4


def test_sc_4_3_duplicate_ids_within_call_store_nothing(store):
    store.add(["keep"], record_type="memory", record_ids="k")
    before = snapshot(store)
    with pytest.raises(oramem.DuplicateRecordError):
        store.add(["a", "b", "c"], record_type="memory", record_ids=["n1", "dup", "dup"])
    assert snapshot(store) == before


def test_sc_4_3_duplicate_ids_against_store_store_nothing(store):
    store.add(["keep"], record_type="memory", record_ids="existing")
    before = snapshot(store)
    with pytest.raises(oramem.DuplicateRecordError):
        store.add(["a", "b"], record_type="memory", record_ids=["fresh", "existing"])
    assert snapshot(store) == before
    assert store.get("memory", "fresh") is None
    assert store.get("memory", "existing").content == "keep"


def test_sc_4_3_string_id_with_many_records_is_value_error(store):
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.add(["a", "b"], record_type="memory", record_ids="same")
    assert snapshot(store) == before


# ---------------------------------------------------------------- SC-4.4 one transaction
def test_sc_4_4_late_error_stores_nothing(store):
    """The 3rd record lacks the timestamp its TIMESTAMP anchor needs: nothing is stored."""
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.add(["a", "b", "c"], record_type="memory", record_ids=["a", "b", "c"],
                  timestamps=["2030-01-01T00:00:00Z", "2030-01-01T00:00:00Z", None],
                  ttl_days=5, ttl_anchor=TimeToLiveAnchor.TIMESTAMP)
    assert snapshot(store) == before


def test_sc_4_4_failed_call_leaves_no_retrieval_rows(kw_store):
    kw_store.add(["keep"], record_type="memory", record_ids="dup")
    with pytest.raises(ValueError):
        kw_store.add(["xylophone one", "xylophone two"], record_type="memory", record_ids=["new", "dup"])
    assert kw_store.search("xylophone", k=5) == []


# ---------------------------------------------------------------- SC-4.5 retrieval text
def test_sc_4_5_omitted_index_text_uses_content(kw_store):
    kw_store.add(["zebra crossing"], record_type="memory", record_ids="m1")
    assert hit_ids(kw_store.search("zebra", k=5)) == ["m1"]


def test_sc_4_5_none_index_text_entry_uses_resolved_content(kw_store):
    kw_store.add(["zebra crossing", None], record_type="memory", record_ids=["m1", "m2"],
                 index_texts=[None, None], metadata=[None, {"content": "walrus tusk"}])
    assert hit_ids(kw_store.search("zebra", k=5)) == ["m1"]
    assert hit_ids(kw_store.search("walrus", k=5)) == ["m2"]


def test_sc_4_5_string_index_text_replaces_retrieval_text(kw_store):
    kw_store.add(["stored apple"], record_type="memory", record_ids="m1", index_texts=["searched banana"])
    assert hit_ids(kw_store.search("banana", k=5)) == ["m1"]
    assert kw_store.search("apple", k=5) == []
    assert kw_store.get("memory", "m1").content == "stored apple"


def test_sc_4_5_list_index_text_is_caller_chunks(kw_store):
    kw_store.add(["stored"], record_type="memory", record_ids="m1", index_texts=[["kiwi fruit", "", "mango fruit"]])
    assert hit_ids(kw_store.search("kiwi", k=5)) == ["m1"]
    assert hit_ids(kw_store.search("mango", k=5)) == ["m1"]
    # each record at most once even when several chunks match
    assert hit_ids(kw_store.search("fruit", k=5)) == ["m1"]


def test_sc_4_5_list_index_text_rows_counted_by_embedding_only_update(store):
    """Caller chunks are never re-split and empty strings make no row: 2 rows here, as the
    embedding-only update (which must match the row count, SC-7.4) proves."""
    store.add(["stored"], record_type="memory", record_ids="m1",
              index_texts=[["kiwi " * 300, "", "mango " * 300]])
    with pytest.raises(ValueError):
        store.update("memory", "m1", embedding=[vec(1), vec(2), vec(3)])
    assert store.update("memory", "m1", embedding=[vec(1), vec(2)]) == 1
    res = store.search(query_vector=vec(2), k=1)
    assert hit_ids(res) == ["m1"] and res[0][1] == pytest.approx(0.0, abs=1e-5)


@pytest.mark.parametrize("empty", ["", []], ids=["empty-string", "empty-list"])
def test_sc_4_5_empty_index_text_stores_but_never_found(kw_store, empty):
    kw_store.add(["zebra hidden", "zebra visible"], record_type="memory", record_ids=["h", "v"],
                 index_texts=[empty, None])
    assert kw_store.get("memory", "h").content == "zebra hidden"
    assert hit_ids(kw_store.search("zebra", k=5)) == ["v"]


def test_sc_4_5_empty_index_text_never_found_by_vector(store):
    store.add(["pizza", "pizza"], record_type="memory", record_ids=["h", "v"], index_texts=["", None])
    assert hit_ids(store.search("pizza", k=5)) == ["v"]


# ---------------------------------------------------------------- SC-4.6 explicit embeddings
def test_sc_4_6_one_vector_per_record(store):
    store.add(["a", "b"], record_type="memory", record_ids=["a", "b"], embeddings=[vec(0), vec(1)])
    res = store.search(query_vector=vec(1), k=2)
    assert hit_ids(res) == ["b", "a"]
    assert res[0][1] == pytest.approx(0.0, abs=1e-5)
    assert res[1][1] == pytest.approx(1.0, abs=1e-5)


def test_sc_4_6_numpy_vectors_accepted(store):
    import numpy as np

    store.add(["a"], record_type="memory", record_ids="a", embeddings=np.array([vec(3)], dtype=np.float32))
    assert hit_ids(store.search(query_vector=np.array(vec(3)), k=1)) == ["a"]


def test_sc_4_6_one_vector_covers_long_text_unsplit(store):
    """One vector for a long text = one retrieval row (an embedding-only update with one
    vector works, with two vectors it is a count mismatch)."""
    long_text = " ".join(f"word{i}" for i in range(4000))
    store.add([long_text], record_type="memory", record_ids="m1", embeddings=[vec(5)])
    res = store.search(query_vector=vec(5), k=3)
    assert hit_ids(res) == ["m1"]
    with pytest.raises(ValueError):
        store.update("memory", "m1", embedding=[vec(6), vec(7)])
    assert store.update("memory", "m1", embedding=vec(6)) == 1
    assert store.search(query_vector=vec(6), k=1)[0][1] == pytest.approx(0.0, abs=1e-5)


def test_sc_4_6_chunk_vectors_with_chunk_texts(store):
    store.add(["stored"], record_type="memory", record_ids="m1", index_texts=[["kiwi", "mango"]],
              embeddings=[[vec(1), vec(2)]])
    store.add(["other"], record_type="memory", record_ids="m2", embeddings=[vec((1, 1.0), (3, 1.0))])
    res = store.search(query_vector=vec(2), k=5)
    assert hit_ids(res) == ["m1", "m2"]  # m1 once, with its best chunk
    assert res[0][1] == pytest.approx(0.0, abs=1e-5)


def test_sc_4_6_chunk_vectors_without_chunk_list_rejected(store):
    before = snapshot(store)
    with pytest.raises(ValueError) as ei:
        store.add(["text"], record_type="memory", embeddings=[[vec(1), vec(2)]])
    assert "embedding" in str(ei.value).lower()
    assert snapshot(store) == before


def test_sc_4_6_chunk_vector_count_must_match(store):
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.add(["text"], record_type="memory", index_texts=[["a", "b", "c"]], embeddings=[[vec(1), vec(2)]])
    assert snapshot(store) == before


def test_sc_4_6_wrong_dimension_rejected(store):
    before = snapshot(store)
    with pytest.raises(ValueError) as ei:
        store.add(["a"], record_type="memory", embeddings=[vec(1, dim=32)])
    assert "dim" in str(ei.value).lower()
    assert snapshot(store) == before


def test_sc_4_6_mixed_dimensions_rejected(store):
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.add(["a", "b"], record_type="memory", embeddings=[vec(1), vec(1, dim=65)])
    assert snapshot(store) == before


def test_sc_4_6_empty_payload_only_without_retrieval_rows(store):
    store.add(["stored only"], record_type="memory", record_ids="ok", index_texts=[""], embeddings=[[]])
    assert store.get("memory", "ok").content == "stored only"
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.add(["has text"], record_type="memory", record_ids="bad", embeddings=[[]])
    assert snapshot(store) == before


def test_sc_4_6_vector_with_empty_retrieval_text_is_stored(store):
    """One explicit vector with an empty retrieval text: the vector is stored without a
    companion chunk text (vendor doc) and is found by vector search."""
    store.add([""], record_type="memory", record_ids="m1", embeddings=[vec(9)])
    res = store.search(query_vector=vec(9), k=1)
    assert hit_ids(res) == ["m1"]


def test_sc_4_6_explicit_vectors_do_not_call_embedder(make_store):
    from oramem.embedders import HashEmbedder

    emb = CountingEmbedder(HashEmbedder(dim=64))
    s = make_store(embedder=emb)
    emb.texts.clear()
    s.add(["alpha text", "beta text"], record_type="memory", embeddings=[vec(1), vec(2)])
    s.add(["gamma"], record_type="memory", index_texts=[["c1", "c2"]], embeddings=[[vec(1), vec(2)]])
    assert emb.texts == []
    s.add(["delta text"], record_type="memory")
    assert emb.texts  # and without vectors it is called


# ---------------------------------------------------------------- SC-4.7 embedder needed
def test_sc_4_7_vector_store_without_embedder_or_vectors_rejected(make_store):
    s = make_store(embedder=None, vector_dim=64)
    s.add(["with vector"], record_type="memory", record_ids="ok", embeddings=[vec(1)])
    before = snapshot(s)
    with pytest.raises(ValueError):
        s.add(["no vector"], record_type="memory", record_ids="bad")
    assert snapshot(s) == before


def test_sc_4_7_store_embedder_is_used(store):
    store.add(["the quick brown fox"], record_type="memory", record_ids="fox")
    store.add(["completely unrelated sentence"], record_type="memory", record_ids="other")
    res = store.search("the quick brown fox", k=2)
    assert hit_ids(res)[0] == "fox"
    assert res[0][1] == pytest.approx(0.0, abs=1e-4)


# ---------------------------------------------------------------- SC-4.8 timestamps
@pytest.mark.parametrize(
    "given, expected",
    [
        ("2026-01-02T03:04:05", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02T03:04:05+00:00", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02T05:04:05+02:00", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02T03:04:05Z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02T03:04:05.123456+00:00", datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
    ],
)
def test_sc_4_8_timestamps_iso_naive_is_utc(store, given, expected):
    store.add(["a"], record_type="memory", record_ids="m1", timestamps=given)
    assert parse_ts(store.get("memory", "m1").timestamp) == expected


def test_sc_4_8_omitted_timestamp_is_unset(store):
    store.add(["a", "b"], record_type="memory", record_ids=["m1", "m2"], timestamps=[None, "2026-01-01T00:00:00Z"])
    assert store.get("memory", "m1").timestamp is None
    store.add(["c"], record_type="memory", record_ids="m3")
    assert store.get("memory", "m3").timestamp is None


@pytest.mark.parametrize("bad", ["yesterday", "2026-13-01T00:00:00", "01/02/2026", ""])
def test_sc_4_8_non_iso_timestamp_rejected(store, bad):
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.add(["a"], record_type="memory", timestamps=bad)
    assert snapshot(store) == before


# ---------------------------------------------------------------- SC-4.9 batch_size
def test_sc_4_9_batch_size_slices_do_not_change_result(store):
    out = store.add([f"t{i}" for i in range(7)], record_type="memory",
                    record_ids=[f"m{i}" for i in range(7)], batch_size=2)
    assert out == [f"m{i}" for i in range(7)]
    assert ids(store.list("memory")) == out


def test_sc_4_9_unknown_store_kwarg_is_type_error(store):
    before = snapshot(store)
    with pytest.raises(TypeError) as ei:
        store.add(["a"], record_type="memory", bogus_option=1)
    assert "bogus_option" in str(ei.value)
    assert snapshot(store) == before


# ---------------------------------------------------------------- SC-4.10 add_batches
def test_sc_4_10_mixed_batches_batch_then_row_order(store):
    out = store.add_batches([
        PendingRecordBatch(texts=["m-a", "m-b"], record_type="memory", record_ids=["ma", "mb"]),
        PendingRecordBatch(texts=["hello"], record_type="message", record_ids="x1", thread_ids="t1", roles="user"),
        PendingRecordBatch(contents=["f"], record_type="fact", record_ids=["f1"], metadata={"k": 1}),
    ])
    assert out == ["ma", "mb", "x1", "f1"]
    assert ids(store.list("memory")) == ["ma", "mb"]
    assert store.get("message", "x1").role == "user"
    assert store.get("fact", "f1").metadata == {"k": 1}


def test_sc_4_10_batches_are_one_transaction(store):
    store.add(["keep"], record_type="fact", record_ids="taken")
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.add_batches([
            PendingRecordBatch(texts=["ok"], record_type="memory", record_ids="fine"),
            PendingRecordBatch(texts=["dup"], record_type="fact", record_ids="taken"),
        ])
    assert snapshot(store) == before


def test_sc_4_10_duplicate_ids_across_batches_rejected(store):
    before = snapshot(store)
    with pytest.raises(oramem.DuplicateRecordError):
        store.add_batches([
            PendingRecordBatch(texts=["a"], record_type="memory", record_ids="same"),
            PendingRecordBatch(texts=["b"], record_type="memory", record_ids="same"),
        ])
    assert snapshot(store) == before


def test_sc_4_10_texts_and_contents_both_is_value_error():
    with pytest.raises(ValueError):
        PendingRecordBatch(texts=["a"], contents=["a"], record_type="memory")


def test_sc_4_10_contents_alias():
    b = PendingRecordBatch(contents=["a", "b"], record_type="memory")
    assert b.texts == ["a", "b"] and b.contents == ["a", "b"]


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"texts": "bare", "record_type": "memory"}, TypeError),
        ({"texts": ["a", "b"], "record_type": "memory", "thread_ids": ["t1"]}, ValueError),
        ({"texts": ["a"], "record_type": "note"}, ValueError),
        ({"texts": ["a"], "record_type": "memory", "roles": "user"}, ValueError),
        ({"texts": ["a"], "record_type": "memory", "ttl_days": -1}, ValueError),
        ({"texts": ["a", "b"], "record_type": "memory", "record_ids": ["x", "x"]}, ValueError),
    ],
    ids=["bare-string", "misaligned", "bad-type", "role-on-memory", "negative-ttl", "dup-ids"],
)
def test_sc_4_10_batch_validated_on_construction(kwargs, exc):
    with pytest.raises(exc):
        PendingRecordBatch(**kwargs)



def test_sc_4_5_long_content_is_chunked_by_store(kw_store):
    """Omitted index text: the store chunks long content; every part stays searchable."""
    words = [f"filler{i}" for i in range(3000)]
    words[5] = "aardvark"
    words[-5] = "zeppelin"
    kw_store.add([" ".join(words)], record_type="memory", record_ids="long")
    assert hit_ids(kw_store.search("aardvark", k=3)) == ["long"]
    assert hit_ids(kw_store.search("zeppelin", k=3)) == ["long"]


def test_sc_4_5_long_content_makes_several_rows(store):
    """Store chunking of a long text yields more than one retrieval row (an embedding-only
    update with a single vector is then a count mismatch, SC-7.4)."""
    store.add([" ".join(f"word{i}" for i in range(4000))], record_type="memory", record_ids="long")
    with pytest.raises(ValueError):
        store.update("memory", "long", embedding=vec(1))


def test_sc_4_5_keyword_unicode(kw_store):
    kw_store.add(["café crème brûlée", "plain tea"], record_type="memory", record_ids=["c", "t"])
    assert hit_ids(kw_store.search("café", k=5)) == ["c"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"contents": ["ok", 5]},
        {"contents": ["ok", "fine"], "metadata": [{"ok": 1}, {"bad": object()}]},
        {"contents": ["ok", "fine"], "metadata": [{"ok": 1}, "not a dict"]},
        {"contents": ["ok", "fine"], "record_ids": ["a", 7]},
        {"contents": ["ok", "fine"], "thread_ids": ["t", 3.5]},
        {"contents": ["ok", "fine"], "metadata": [{"ok": 1}, {"nan": float("nan")}]},
    ],
    ids=["int-content", "unserialisable-metadata", "metadata-not-dict", "int-id", "float-thread", "nan-metadata"],
)
def test_sc_11_bad_argument_types_write_nothing(store, kwargs):
    """§11: bad arguments raise ValueError/TypeError before anything is written."""
    before = snapshot(store)
    contents = kwargs.pop("contents")
    with pytest.raises((TypeError, ValueError)):
        store.add(contents, record_type="memory", **kwargs)
    assert snapshot(store) == before


# ---------------------------------------------------------------- restore_batches (backups)
# Both engines: the embedded one and Oracle's oramem_store.add_json ("restored_times",
# "on_conflict"), so a backup or a migration into either keeps what it restores.
KEPT = ("2020-05-01T10:00:00.000000+00:00", "2999-01-01T00:00:00.000000+00:00")


def test_restore_keeps_created_at_and_expires_at(store):
    batch = PendingRecordBatch(["kept", "gone", "forever"], "memory", record_ids=["k1", "k2", "k3"], thread_ids="t9")
    times = [KEPT, ("2020-05-01T10:00:00+00:00", "2021-01-01T00:00:00+00:00"), ("2019-01-01T00:00:00Z", None)]
    assert store.restore_batches([batch], times=times) == ["k1", "k2", "k3"]
    k1 = store.get("memory", "k1")
    assert parse_ts(k1.created_at) == parse_ts(KEPT[0]) and parse_ts(k1.expires_at) == parse_ts(KEPT[1])
    assert store.get("memory", "k2") is None  # restored already expired: stored, never visible
    k3 = store.get("memory", "k3")
    assert parse_ts(k3.created_at) == datetime(2019, 1, 1, tzinfo=UTC) and k3.expires_at is None
    assert ids(store.list("thread")) == ["t9"]


def test_restore_skip_keeps_the_stored_record_and_returns_only_the_ids_written(store):
    store.add(["stored"], record_type="memory", record_ids="s1", thread_ids="t1")
    before = store.get("memory", "s1")
    batch = PendingRecordBatch(["new one", "other", "third"], "memory", record_ids=["s1", "s2", "s3"],
                               thread_ids=["t1", "t2", "t2"])
    with pytest.raises(ValueError, match="s1"):
        store.restore_batches([batch])  # on_conflict="fail" is the default: nothing written
    assert store.get("memory", "s2") is None
    assert store.restore_batches([batch], times=[KEPT, KEPT, None], on_conflict="skip") == ["s2", "s3"]
    assert store.get("memory", "s1") == before
    assert parse_ts(store.get("memory", "s2").created_at) == parse_ts(KEPT[0])
    assert close_to(parse_ts(store.get("memory", "s3").created_at), datetime.now(UTC), seconds=60)  # no kept times: now
    assert ids(store.list("thread")) == ["t1", "t2"]
    assert store.restore_batches([batch], on_conflict="skip") == []  # a rerun writes nothing


def test_restore_replace_swaps_the_record_and_its_retrieval_rows(store):
    store.add(["alpha text"], record_type="memory", record_ids="r1", embeddings=[vec(1)])
    batch = PendingRecordBatch(["beta text"], "memory", record_ids=["r1"], embeddings=[vec(2)])
    assert store.restore_batches([batch], times=[KEPT], on_conflict="replace") == ["r1"]
    r1 = store.get("memory", "r1")
    assert r1.content == "beta text" and parse_ts(r1.created_at) == parse_ts(KEPT[0])
    hits = store.search(query_vector=vec(2), record_types=["memory"], k=5)
    assert hit_ids(hits) == ["r1"] and hits[0][1] == pytest.approx(0.0, abs=1e-5)
    with pytest.raises(ValueError, match="on_conflict must be one of"):
        store.restore_batches([batch], on_conflict="merge")
