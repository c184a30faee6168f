"""Ranking parity of the two engines (issue 11 items 5-6): the same small corpus, the same
embedder and the same HybridConfig in a SQLite store and an Oracle HYBRID store; VECTOR must
rank alike, and KEYWORD and HYBRID must put the same record first for queries with one
clear answer (the keyword scores differ: bm25 vs Oracle Text, docs/oracle-search.md).
Needs a live database and an in-database ONNX model (skipped with the reason otherwise);
not run here: static-checked, not run against Oracle."""

from __future__ import annotations

import pytest

from oramem import SchemaPolicy, SearchStrategy

pytestmark = pytest.mark.oracle

CORPUS = [
    "I am allergic to peanuts and carry an epinephrine pen",
    "My sister Ana lives in Lisbon and works as an architect",
    "I run five kilometres every Tuesday morning before work",
    "The car is a blue 2015 Volvo estate with a roof box",
    "I prefer green tea without sugar in the afternoon",
    "Our cat Miso sleeps on the radiator in winter",
    "The dentist appointment is on the third of March at nine",
    "I am learning Portuguese with a tutor on Thursdays",
    "My laptop is a ten year old ThinkPad that still works",
    "We planted tomatoes, basil and peppers in the garden",
]
QUERIES = {  # query -> index of the one memory that answers it
    "peanut allergy": 0,
    "where does my sister live": 1,
    "running schedule tuesdays": 2,
    "what car do I drive": 3,
    "tea preference": 4,
    "cat sleeping radiator": 5,
    "dentist appointment": 6,
    "portuguese lessons tutor": 7,
}


@pytest.fixture
def stores(pool, conn, store_id, onnx_model):
    from oramem import OracleDBEmbedder, OracleDBMemoryStore, SQLiteMemoryStore
    from oramem.sqlite import HybridConfig

    embedder = OracleDBEmbedder(conn, onnx_model)
    cfg = HybridConfig()  # the defaults of both engines
    ora = OracleDBMemoryStore(embedder, pool, memory_store_id=store_id, search_strategy=SearchStrategy.HYBRID,
                              schema_policy=SchemaPolicy.CREATE_IF_NECESSARY, search_index_sync="on_commit",
                              hybrid=cfg, keyword_language="english")
    lite = SQLiteMemoryStore(":memory:", embedder=embedder, search_strategy=SearchStrategy.HYBRID, hybrid=cfg,
                             vector_sidecar=False, keyword_language="english")
    ids = [f"m{i}" for i in range(len(CORPUS))]
    for store in (ora, lite):
        store.add(CORPUS, "memory", record_ids=ids, user_ids=["u1"] * len(CORPUS))
    yield ora, lite
    lite.close()
    ora.close()


def _ids(hits):
    return [r.id for r, _ in hits]


def test_vector_rankings_are_the_same(stores):
    ora, lite = stores
    for query in QUERIES:
        assert _ids(ora.search(query, k=5, strategy="vector")) == _ids(lite.search(query, k=5, strategy="vector")), query


@pytest.mark.parametrize("strategy", ["keyword", "hybrid"])
def test_keyword_and_hybrid_agree_on_the_clear_answer(stores, strategy):
    ora, lite = stores
    for query, answer in QUERIES.items():
        o, s = _ids(ora.search(query, k=3, strategy=strategy)), _ids(lite.search(query, k=3, strategy=strategy))
        assert o[:1] == s[:1] == [f"m{answer}"], (query, o, s)


def test_hybrid_distances_follow_the_same_fusion(stores):
    # a record first in both legs has distance 0 on both engines; the fused distances agree to 1e-9
    ora, lite = stores
    o = ora.search("peanut allergy", k=3, strategy="hybrid")
    s = lite.search("peanut allergy", k=3, strategy="hybrid")
    assert o[0][1] == pytest.approx(0.0, abs=1e-9) and s[0][1] == pytest.approx(0.0, abs=1e-9)
