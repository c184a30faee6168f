"""On Oracle the search package returns its k nearest records and the driver cuts them at
``max_distance`` (nearest first, the records within it are a prefix, so the answer is the k
nearest within the bound); the request the package gets is the same as without it."""

from __future__ import annotations

import asyncio
import json

from oramem import OracleDBMemoryStore, SchemaPolicy
from oramem.embedders import HashEmbedder

from .fakes import FakeAsyncPool, Recorder
from .test_driver_fake import MSG, REC, SETTINGS_OUT
from .test_knowledge_oracle_fake import store_over_fake

HITS = [{"record": REC, "distance": 0.25}, {"record": dict(MSG, id="m0"), "distance": 0.5},
        {"record": MSG, "distance": 0.75}]


def _requests(rec):
    return [json.loads(c.binds["in_request"]) for c in rec.plsql if c.name == "oramem_search.search_json"]


def test_the_driver_cuts_the_package_answer_at_the_bound():
    store, _pool, rec = store_over_fake()
    rec.answers["oramem_search.search_json"] = json.dumps(HITS)
    try:
        got = store.search(query_vector=[0.5] * 8, k=5, strategy="vector", max_distance=0.5)
        assert [(r.id, d) for r, d in got] == [("r1", 0.25), ("m0", 0.5)]
        everything = store.search(query_vector=[0.5] * 8, k=5, strategy="vector")
        assert [r.id for r, _ in everything] == ["r1", "m0", "m1"]
        bounded, unbounded = _requests(rec)[-2:]
        assert bounded == unbounded and "max_distance" not in bounded
    finally:
        store.close()


def test_the_async_driver_cuts_it_too():
    rec = Recorder()
    rec.answers.update({"oramem_admin.open_store": json.dumps(dict(SETTINGS_OUT, vector_dim=8)),
                        "oramem_search.search_json": json.dumps(HITS)})

    async def go():
        store = await OracleDBMemoryStore.connect_async(HashEmbedder(8), FakeAsyncPool(rec), memory_store_id="mystore",
                                                        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
        try:
            return await store.search_async(query_vector=[0.5] * 8, k=5, strategy="vector", max_distance=0.3)
        finally:
            await store.close_async()

    got = asyncio.run(go())
    assert [(r.id, d) for r, d in got] == [("r1", 0.25)]
    assert "max_distance" not in _requests(rec)[-1]
