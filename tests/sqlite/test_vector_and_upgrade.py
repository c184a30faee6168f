"""Vector search details (filters before top-k, best chunk, ties, profile scope) and the
capability upgrades of CREATE_IF_NECESSARY."""

from __future__ import annotations

from oramem.sqlite._sqlite import sqlite3

import pytest

from oramem import SchemaPolicy, StoreSettingsMismatch

from .conftest import vec


def test_filters_apply_before_top_k(store):
    # 50 near records of another user, 3 far records of u1: k=3 still finds u1's three
    store.add([f"n{i}" for i in range(50)], record_type="memory", user_ids="u2",
              embeddings=[vec(0) for _ in range(50)])
    store.add(["f1", "f2", "f3"], record_type="memory", record_ids=["f1", "f2", "f3"], user_ids="u1",
              metadata={"keep": True}, embeddings=[vec(1), vec(1, 0), vec(2)])
    assert sorted(r.id for r, _ in store.search(query_vector=vec(0), k=3, user_id="u1")) == ["f1", "f2", "f3"]
    hits = store.search(query_vector=vec(0), k=3, metadata_filter={"keep": True})
    assert sorted(r.id for r, _ in hits) == ["f1", "f2", "f3"]


def test_each_record_once_with_best_chunk_and_ties_by_type_then_id(store):
    store.add(["multi"], record_type="memory", record_ids="z", index_texts=[["a", "b", "c"]],
              embeddings=[[vec(3), vec(0), vec(0)]])
    store.add(["same"], record_type="fact", record_ids="b", embeddings=[vec(0)])
    store.add(["same"], record_type="fact", record_ids="a", embeddings=[vec(0)])
    store.add(["far"], record_type="memory", record_ids="far", embeddings=[vec(5)])
    hits = store.search(query_vector=vec(0), k=3)
    assert [(r.record_type, r.id) for r, _ in hits] == [("fact", "a"), ("fact", "b"), ("memory", "z")]
    assert all(type(d) is float for _, d in hits)
    assert hits[0][1] == pytest.approx(0.0, abs=1e-6)
    # the k-th place is tied: the tie-break decides, not the partition order
    assert [r.id for r, _ in store.search(query_vector=vec(0), k=1)] == ["a"]


def test_profiles_are_in_their_own_actor_scope(store):
    store.add(["likes tea"], record_type="user_profile", record_ids="u1", embeddings=[vec(0)])
    store.add(["helpful"], record_type="agent_profile", record_ids="a1", embeddings=[vec(0)])
    store.add(["m"], record_type="memory", record_ids="m", user_ids="u2", embeddings=[vec(0)])
    assert [r.id for r, _ in store.search(query_vector=vec(0), k=5, user_id="u1")] == ["u1"]
    assert [r.id for r, _ in store.search(query_vector=vec(0), k=5, agent_id="a1")] == ["a1"]


def test_vector_to_hybrid_upgrade_indexes_existing_rows(make, db_path):
    v = make(memory_store_id="UP")
    v.add(["the otter swims"], record_type="memory", record_ids="o", embeddings=[vec(0)])
    v.close()
    with pytest.raises(StoreSettingsMismatch, match="CREATE_IF_NECESSARY"):
        make(memory_store_id="UP", search_strategy="hybrid", schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    kw = make(memory_store_id="UP", search_strategy="keyword")
    assert [r.id for r, _ in kw.search("otter", k=3)] == ["o"]
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT capability FROM oramem_stores WHERE store_id = 'UP'").fetchone() == ("hybrid",)
    # the upgraded store still answers vector search, and a HYBRID open needs no upgrade now
    hy = make(memory_store_id="UP", search_strategy="hybrid", schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert [r.id for r, _ in hy._engine.search(_vector_request(vec(0)))] == ["o"]


def test_keyword_store_without_vectors_cannot_become_vector(make):
    kw = make(memory_store_id="K", search_strategy="keyword", vector_dim=None)
    kw.add(["words only"], record_type="memory", record_ids="w")
    kw.close()
    with pytest.raises(StoreSettingsMismatch, match="search_strategy"):
        make(memory_store_id="K", search_strategy="hybrid")


def test_empty_keyword_store_can_gain_vectors(make):
    make(memory_store_id="K", search_strategy="keyword", vector_dim=None).close()
    hy = make(memory_store_id="K", search_strategy="hybrid")
    hy.add(["fresh"], record_type="memory", record_ids="f", embeddings=[vec(1)])
    assert [r.id for r, _ in hy._engine.search(_vector_request(vec(1)))] == ["f"]


def test_recreate_wipes_tables(make, db_path):
    make().add(["x"], record_type="memory", record_ids="x", embeddings=[vec(0)])
    fresh = make(schema_policy=SchemaPolicy.RECREATE)
    assert fresh.list("memory") == []


def _vector_request(vector, k=3):
    import numpy as np

    from oramem.requests import Scope, SearchRequest
    from oramem.types import SearchStrategy

    return SearchRequest(SearchStrategy.VECTOR, k, None, np.asarray(vector, dtype=np.float32), Scope.any(),
                         Scope.any(), Scope.any(), ("memory",), None)
