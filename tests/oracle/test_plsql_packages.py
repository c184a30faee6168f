"""The PL/SQL packages called directly (as a PL/SQL application would), on a real database.
Skipped, with the reason printed, when no Oracle database is available (conftest.py)."""

from __future__ import annotations

import json

import oracledb
import pytest

pytestmark = pytest.mark.oracle

VEC = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.7, 0.7, 0.0]]


def call(conn, name, rtype=oracledb.DB_TYPE_CLOB, **kw):
    with conn.cursor() as cur:
        out = cur.callfunc(name, rtype, keyword_parameters=kw)
        return out.read() if isinstance(out, oracledb.LOB) else out


def create(conn, sid, strategy="vector"):
    settings = json.dumps({"memory_store_id": sid, "vector_dim": 3, "search_strategy": strategy})
    return json.loads(call(conn, "oramem_admin.open_store", in_settings=settings, in_policy="CREATE_IF_NECESSARY"))


def add(conn, sid, records):
    return json.loads(call(conn, "oramem_store.add_json", in_store_id=sid,
                           in_batch=json.dumps({"records": records})))


def rec(i, vec, **kw):
    base = {"id": i, "record_type": "memory", "content": f"text {i}", "thread_id": None, "user_id": "u1",
            "agent_id": None, "role": None, "timestamp": None, "metadata": {"n": int(i[-1])},
            "ttl": {"days": None, "anchor": "created_at"}, "chunks": [{"text": f"text {i}", "vector": vec}]}
    base.update(kw)
    return base


def test_open_unknown_store_with_require_existing_is_20101(conn, store_id):
    settings = json.dumps({"memory_store_id": store_id})
    with pytest.raises(oracledb.DatabaseError) as info:
        call(conn, "oramem_admin.open_store", in_settings=settings, in_policy="REQUIRE_EXISTING")
    assert info.value.args[0].code == 20101


def test_add_then_vector_search_with_filter(conn, store_id):
    out = create(conn, store_id)
    assert out["state"] == "READY" and out["vector_dim"] == 3
    assert add(conn, store_id, [rec("r1", VEC[0]), rec("r2", VEC[1]), rec("r3", VEC[2])]) == ["r1", "r2", "r3"]
    conn.commit()
    req = {"strategy": "vector", "k": 2, "query_text": None, "query_vector": [1.0, 0.1, 0.0],
           "thread": {"match": "any"}, "user": {"match": "equals", "value": "u1"}, "agent": {"match": "any"},
           "record_types": ["memory"], "metadata_filter": None}
    hits = json.loads(call(conn, "oramem_search.search_json", in_store_id=store_id, in_request=json.dumps(req)))
    assert [h["record"]["id"] for h in hits] == ["r1", "r3"]
    assert hits[0]["distance"] <= hits[1]["distance"]
    # the filter applies before the top-k cut (SC-6.5)
    req["metadata_filter"] = {"n": {"$gte": 2}}
    hits = json.loads(call(conn, "oramem_search.search_json", in_store_id=store_id, in_request=json.dumps(req)))
    assert [h["record"]["id"] for h in hits] == ["r3", "r2"]


def test_duplicate_ids_store_nothing(conn, store_id):
    create(conn, store_id)
    with pytest.raises(oracledb.DatabaseError) as info:
        add(conn, store_id, [rec("r1", VEC[0]), rec("r1", VEC[1])])
    assert info.value.args[0].code == 20005
    assert call(conn, "oramem_store.get_json", in_store_id=store_id, in_record_type="memory", in_record_id="r1") is None


@pytest.mark.parametrize("bad", [{"$regex": "x"}, {"k": {"$in": []}}, {"k": {"$gt": 1}, "$or": "x"}, {"a\"b": 1}])
def test_filter_compile_errors_are_20004(conn, bad):
    with conn.cursor() as cur, pytest.raises(oracledb.DatabaseError) as info:
        cur.callproc("oramem_filter.validate_filter", keyword_parameters={"in_filter": json.dumps(bad)})
    assert info.value.args[0].code == 20004


def test_purge_removes_expired_rows(conn, store_id):
    create(conn, store_id)
    add(conn, store_id, [rec("r1", VEC[0], ttl={"days": 0, "anchor": "created_at"}), rec("r2", VEC[1])])
    conn.commit()
    assert call(conn, "oramem_store.get_json", in_store_id=store_id, in_record_type="memory", in_record_id="r1") is None
    out = json.loads(call(conn, "oramem_store.purge_expired_json", in_store_id=store_id, in_commit=0))
    conn.commit()
    assert out["count"] == 1
    assert call(conn, "oramem_store.get_json", in_store_id=store_id, in_record_type="memory", in_record_id="r2")


def test_keyword_query_escapes_user_text(conn):
    q = call(conn, "oramem_search.keyword_query", oracledb.DB_TYPE_VARCHAR, in_text="near(a, b) OR {x}")
    # spec: tokens split on non-alphanumerics, each in {...}, joined with ' ACCUM '
    assert q == "{near} ACCUM {a} ACCUM {b} ACCUM {OR} ACCUM {x}"
    assert call(conn, "oramem_search.keyword_query", oracledb.DB_TYPE_VARCHAR, in_text="  ,;  ") is None


def test_oracledb_embedder_with_a_loaded_model(conn, onnx_model):
    from oramem.oracle import OracleDBEmbedder

    emb = OracleDBEmbedder(conn, onnx_model)
    out = emb.embed(["hello world", "goodbye"])
    assert out.shape == (2, emb.embedding_dimension) and out.dtype.name == "float32"


def test_engine_round_trip_through_a_pool(pool, store_id):
    import numpy as np

    from oramem import SchemaPolicy, SearchStrategy
    from oramem.oracle import SyncOracleEngine
    from oramem.requests import AddRequest, ChunkRow, NewRecord, Scope, SearchRequest, StoreSettings

    engine = SyncOracleEngine(pool)
    got = engine.open(StoreSettings(store_id, 3, SearchStrategy.VECTOR, None, None), SchemaPolicy.CREATE_IF_NECESSARY)
    assert got.memory_store_id == store_id.upper() and got.vector_dim == 3
    rec_ = NewRecord("a", "memory", "hello", None, "u1", None, None, None, {"k": 1}, None,
                     (ChunkRow("hello", np.array([1, 0, 0], dtype=np.float32)),))
    assert engine.add(AddRequest((rec_,), 256)) == ["a"]
    assert engine.get("memory", "a").metadata == {"k": 1}
    hits = engine.search(SearchRequest(SearchStrategy.VECTOR, 1, None, np.array([1, 0, 0], dtype=np.float32),
                                       Scope.any(), Scope.any(), Scope.any(), ("memory",), None))
    assert [r.id for r, _ in hits] == ["a"] and hits[0][1] == pytest.approx(0.0, abs=1e-6)
    assert engine.delete("memory", "a", False) == 1
    engine.close()
