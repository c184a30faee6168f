"""HYBRID fusion parameters on Oracle, against the recording fake of python-oracledb: the
store's :class:`oramem.sqlite.HybridConfig` reaches ``oramem_search.search_json`` in every
HYBRID request (both colours), nothing is silently dropped, and what Oracle cannot honour
is refused before any round trip. The fusion itself runs in PL/SQL (text tests in
tests/plsql/test_review_search_admin.py; live ranking comparison in
test_search_parity_oracle.py). Static-checked, not run against Oracle."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from oramem import CapabilityError, SchemaPolicy, SearchIndexSyncMode, SearchStrategy
from oramem.oracle import AsyncOracleEngine, SyncOracleEngine
from oramem.oracle.driver import MAX_FUSION_DEPTH
from oramem.requests import Scope, SearchRequest, StoreSettings
from oramem.sqlite import HybridConfig

from .fakes import FakeAsyncPool, FakePool, Recorder

OPENED = {
    "memory_store_id": "HY", "vector_dim": 3, "search_strategy": "hybrid",
    "search_index_sync": "on_commit", "retention": {"default_ttl_days": None, "max_ttl_days": None},
    "embedding_model": "M", "deletion_hook": None, "supported_strategies": ["vector", "keyword", "hybrid"],
    "schema_version": 1, "code_schema_version": 1, "state": "READY", "purge_job": None,
    "created": False, "upgraded": False, "warnings": [], "last_error": None,
}


def _engine(kind, hybrid):
    rec = Recorder({"oramem_admin.open_store": json.dumps(OPENED), "oramem_search.search_json": "[]"})
    target = (FakePool if kind == "pool" else FakeAsyncPool)(rec)
    engine = (SyncOracleEngine if kind == "pool" else AsyncOracleEngine)(target, embedding_model="M", hybrid=hybrid)
    settings = StoreSettings("hy", 3, SearchStrategy.HYBRID, SearchIndexSyncMode.ON_COMMIT, None)
    _run(engine, "open", settings, SchemaPolicy.REQUIRE_EXISTING)
    rec.calls.clear()
    return engine, rec


def _run(engine, method, *args):
    if engine.is_async:
        return asyncio.run(getattr(engine, method + "_async")(*args))
    return getattr(engine, method)(*args)


def _request(strategy, k=5):
    vector = np.array([1, 0, 0], dtype=np.float32) if strategy is not SearchStrategy.KEYWORD else None
    return SearchRequest(strategy, k, "peanut allergy", vector, Scope.any(), Scope.any(), Scope.any(),
                         ("memory",), None)


def _sent(rec):
    (call,) = rec.plsql
    assert call.name == "oramem_search.search_json"
    return json.loads(call.binds["in_request"])


@pytest.mark.parametrize("kind", ["pool", "async_pool"])
def test_every_hybrid_config_field_reaches_the_search_call(kind):
    engine, rec = _engine(kind, HybridConfig(vector_weight=0.5, keyword_weight=2.0, rrf_k=3, depth=77, fusion="rrf"))
    _run(engine, "search", _request(SearchStrategy.HYBRID))
    assert _sent(rec)["hybrid"] == {"fusion": "rrf", "vector_weight": 0.5, "keyword_weight": 2.0, "rrf_k": 3.0,
                                    "depth": 77}


@pytest.mark.parametrize("kind", ["pool", "async_pool"])
def test_the_default_config_is_sent_explicitly(kind):
    # PL/SQL has the same defaults, but the request says what Python means
    engine, rec = _engine(kind, None)
    _run(engine, "search", _request(SearchStrategy.HYBRID))
    d = HybridConfig()
    assert d.fusion == "gated-rrf" and d.rrf_k == 1.0
    assert _sent(rec)["hybrid"] == {"fusion": "gated-rrf", "vector_weight": d.vector_weight,
                                    "keyword_weight": d.keyword_weight, "rrf_k": d.rrf_k, "depth": None}


@pytest.mark.parametrize("strategy", [SearchStrategy.VECTOR, SearchStrategy.KEYWORD])
def test_other_strategies_carry_no_fusion_parameters(strategy):
    engine, rec = _engine("pool", HybridConfig(keyword_weight=1.0))
    _run(engine, "search", _request(strategy))
    assert "hybrid" not in _sent(rec)


def test_a_depth_oracle_cannot_honour_is_refused_before_any_call():
    with pytest.raises(CapabilityError, match=f"at most {MAX_FUSION_DEPTH} candidates"):
        SyncOracleEngine(FakePool(Recorder()), hybrid=HybridConfig(depth=MAX_FUSION_DEPTH + 1))
    SyncOracleEngine(FakePool(Recorder()), hybrid=HybridConfig(depth=MAX_FUSION_DEPTH))  # the cap itself is fine


def test_hybrid_must_be_a_hybrid_config():
    with pytest.raises(TypeError, match="HybridConfig"):
        SyncOracleEngine(FakePool(Recorder()), hybrid={"rrf_k": 10})


def test_the_store_passes_its_hybrid_config_to_the_engine():
    from oramem import OracleDBMemoryStore
    from oramem.embedders import HashEmbedder

    rec = Recorder({"oramem_admin.open_store": json.dumps(OPENED), "oramem_search.search_json": "[]"})
    cfg = HybridConfig(vector_weight=0.25, keyword_weight=1.5, rrf_k=60, depth=300, fusion="rrf")
    store = OracleDBMemoryStore(HashEmbedder(3), FakePool(rec), memory_store_id="hy",
                                search_strategy=SearchStrategy.HYBRID, hybrid=cfg)
    rec.calls.clear()
    store.search("peanut allergy", k=3, strategy=SearchStrategy.HYBRID)
    assert _sent(rec)["hybrid"] == {"fusion": "rrf", "vector_weight": 0.25, "keyword_weight": 1.5, "rrf_k": 60.0,
                                    "depth": 300}


@pytest.mark.parametrize("kind", ["pool", "async_pool"])
@pytest.mark.parametrize("language", [None, "english", "none", "NONE"])
def test_keyword_language_reaches_keyword_and_hybrid_searches(kind, language):
    rec = Recorder({"oramem_admin.open_store": json.dumps(OPENED), "oramem_search.search_json": "[]"})
    engine = (SyncOracleEngine if kind == "pool" else AsyncOracleEngine)((FakePool if kind == "pool" else FakeAsyncPool)(rec), embedding_model="M",
                          keyword_language=language)
    _run(engine, "open", StoreSettings("hy", 3, SearchStrategy.HYBRID, SearchIndexSyncMode.ON_COMMIT, None),
         SchemaPolicy.REQUIRE_EXISTING)
    expected = (language or "english").lower()
    for strategy in (SearchStrategy.KEYWORD, SearchStrategy.HYBRID, SearchStrategy.VECTOR):
        rec.calls.clear()
        _run(engine, "search", _request(strategy))
        sent = _sent(rec)
        if strategy is SearchStrategy.VECTOR:
            assert "keyword_language" not in sent
        else:
            assert sent["keyword_language"] == expected, strategy


def test_an_unknown_keyword_language_is_refused_before_any_call():
    rec = Recorder()
    with pytest.raises(ValueError, match="keyword_language 'klingon' is not supported"):
        SyncOracleEngine(FakePool(rec), keyword_language="klingon")
    assert rec.calls == []


def test_the_store_passes_its_keyword_language_to_the_engine():
    from oramem import OracleDBMemoryStore
    from oramem.embedders import HashEmbedder

    rec = Recorder({"oramem_admin.open_store": json.dumps(OPENED), "oramem_search.search_json": "[]"})
    store = OracleDBMemoryStore(HashEmbedder(3), FakePool(rec), memory_store_id="hy",
                                search_strategy=SearchStrategy.HYBRID, keyword_language="none")
    rec.calls.clear()
    store.search("peanut allergy", k=3, strategy=SearchStrategy.KEYWORD)
    assert _sent(rec)["keyword_language"] == "none"
