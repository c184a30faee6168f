"""Contract checks of findings F1-F4 and F8 (reviews/oracle-search-admin-driver.md) that only a
live database can show (the Docker test plan of that review). Skipped, with the reason
printed, when no Oracle database is available (conftest.py); the hybrid ones also skip when
no ONNX model is loaded in the schema. Not run here: static-checked, not run against Oracle."""

from __future__ import annotations

import numpy as np
import pytest

from oramem import SchemaPolicy, SearchStrategy
from oramem.requests import AddRequest, ChunkRow, NewRecord, Scope, SearchRequest, StoreSettings

pytestmark = pytest.mark.oracle


def _records(n, dim, rng, text="note"):
    return tuple(NewRecord(f"r{i}", "memory", f"{text} {i}", None, "u1", None, None, None, None, None,
                           (ChunkRow(f"{text} {i}", rng.standard_normal(dim).astype(np.float32)),))
                 for i in range(n))


def _search(strategy, k, text=None, vector=None):
    return SearchRequest(strategy, k, text, vector, Scope.any(), Scope.any(), Scope.any(), ("memory",), None)


def test_f1_sync_add_and_search_with_big_clob_arguments(pool, store_id):
    from oramem.oracle import OracleEngine

    engine = OracleEngine(pool)
    engine.open(StoreSettings(store_id, 1536, SearchStrategy.VECTOR, None, None), SchemaPolicy.CREATE_IF_NECESSARY)
    rng = np.random.default_rng(0)
    recs = _records(8, 1536, rng)  # well over 32767 bytes of JSON
    assert engine.add(AddRequest(recs, 256)) == [r.id for r in recs]
    hits = engine.search(_search(SearchStrategy.VECTOR, 3, vector=recs[0].chunks[0].vector))
    assert hits[0][0].id == "r0"


def test_f4_embedder_batch_over_4000_bytes(conn, onnx_model):
    from oramem.oracle import OracleDBEmbedder

    emb = OracleDBEmbedder(conn, onnx_model)
    out = emb.embed(["w" * 600] * 10)
    assert out.shape == (10, emb.embedding_dimension)


@pytest.mark.parametrize("sync", ["manual", "on_commit"])
def test_f2_f3_f8_hybrid_store_sync_modes_and_searches(pool, conn, store_id, onnx_model, sync):
    from oramem.oracle import OracleDBEmbedder, OracleEngine

    model = onnx_model
    dim = OracleDBEmbedder(conn, model).embedding_dimension
    engine = OracleEngine(pool, embedding_model=model)
    engine.open(StoreSettings(store_id, dim, SearchStrategy.HYBRID, sync, None), SchemaPolicy.CREATE_IF_NECESSARY)
    rng = np.random.default_rng(1)
    engine.add(AddRequest(_records(3, dim, rng, text="zebra crossing"), 256))
    hybrid = _search(SearchStrategy.HYBRID, 3, text="zebra")
    if sync == "manual":  # F3: MAINTENANCE MANUAL SYNC (MANUAL) really defers indexing
        assert engine.search(hybrid) == []
        engine.sync_search_index()
    assert len(engine.search(hybrid)) == 3  # F2: the request is accepted
    assert len(engine.search(_search(SearchStrategy.KEYWORD, 3, text="zebra"))) == 3  # F8
