"""rek47, leftovers of ora44 on Oracle, over the recording fake.

1. The async driver path (``AsyncOracleEngine``, ``connect_async`` over an async pool) of
   ora44's check: ``add_async`` / ``update_async`` / ``search_async`` of a store object opened
   before another session's reembed send its identity as ``"embedder"`` and get -20108 as
   ``StoreSettingsMismatch``, nothing written; the caller's own vectors, keyword search and
   reads go through; explicit vectors named with ``vectors_made_by`` (a KnowledgeMemory's)
   carry that identity on the async path too.
2. -20108 raised inside a call (not by ``open_store``) said "open it with the embedder that
   built it": the advice of an open, not of a store object opened before the move, which has
   to be closed and opened again with the embedder the store records now.

Static-checked, not run against Oracle."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from oramem import OracleDBMemoryStore
from oramem.embedders import HashEmbedder
from oramem.embedders.identity import identity_of, vectors_made_by
from oramem.errors import StoreSettingsMismatch

from .fakes import FakeAsyncPool, Recorder
from .plsql_standin import StoreStandIn, standin_store
from .test_driver_fake import SETTINGS_OUT

MOVED = {"kind": "onnx", "sha256": "d" * 64, "dimension": 8, "pooling": "mean", "normalize": True}


def _sent(rec, name: str) -> dict:
    call = [c for c in rec.plsql if c.name == name][-1]
    bind = call.binds["in_batch" if name.endswith("add_json") else "in_request"]
    return json.loads(getattr(bind, "data", bind))


def _records(standin) -> str:
    return json.dumps(sorted((list(k), v) for k, v in standin.records.items()), default=str)


def test_the_async_driver_refuses_an_old_embedders_work_after_anothers_reembed():
    rec = Recorder({"oramem_admin.open_store": json.dumps(dict(SETTINGS_OUT, vector_dim=8))})
    standin = StoreStandIn(vector_dim=8)
    standin.install(rec.answers)

    async def go() -> None:
        store = await OracleDBMemoryStore.connect_async(HashEmbedder(8), FakeAsyncPool(rec), memory_store_id="mystore")
        try:
            mine = identity_of(store.embedder)
            await store.add_async(["bob: my locker code is 4471"], "memory", record_ids="note-1", user_ids="bob")
            assert _sent(rec, "oramem_store.add_json")["embedder"] == mine
            standin.embedder = MOVED  # another session's reembed swapped the store
            before = _records(standin)
            with pytest.raises(StoreSettingsMismatch, match="nothing was written") as err:
                await store.add_async(["bob: dentist on friday"], "memory", record_ids="note-2", user_ids="bob")
            assert "ORA-20108" in str(err.value)
            with pytest.raises(StoreSettingsMismatch, match="nothing was written"):
                await store.update_async("memory", "note-1", text="bob: my locker code is 9911")
            with pytest.raises(StoreSettingsMismatch, match="nothing was searched"):
                await store.search_async("locker code", k=3, strategy="vector")
            vec = np.full((1, 8), 1 / np.sqrt(8), dtype=np.float32)
            with vectors_made_by(mine):  # explicit vectors a layer names as its old embedder's
                with pytest.raises(StoreSettingsMismatch, match="nothing was written"):
                    await store.add_async(["bob: named"], "memory", record_ids="note-4", embeddings=vec)
                with pytest.raises(StoreSettingsMismatch, match="nothing was searched"):
                    await store.search_async(query_vector=vec[0], k=3, strategy="vector")
            assert _sent(rec, "oramem_search.search_json")["embedder"] == mine
            assert _records(standin) == before

            # what carries no vector of the old embedder goes through
            assert (await store.get_async("memory", "note-1")).content == "bob: my locker code is 4471"
            assert await store.add_async(["bob: own vector"], "memory", record_ids="note-3", embeddings=vec) == ["note-3"]
            assert "embedder" not in _sent(rec, "oramem_store.add_json")
            assert [r.id for r, _ in await store.search_async(query_vector=vec[0], k=1, strategy="vector")] == ["note-3"]
            assert "embedder" not in _sent(rec, "oramem_search.search_json")
        finally:
            await store.close_async()

    asyncio.run(go())


def test_an_in_call_refusal_says_to_reopen_with_the_embedder_the_store_records_now():
    store, rec = standin_store()
    try:
        rec.answers["oramem_store.add_json"].__self__.embedder = MOVED
        with pytest.raises(StoreSettingsMismatch) as err:
            store.add(["bob: dentist on friday"], "memory", record_ids="note-2")
        text = str(err.value)
        assert "open it with the embedder that built it" not in text, text  # the open's advice
        hint = text[text.index("ORA-20108"):]
        assert "close this store object" in hint and "KnowledgeMemory" in hint, hint
        assert "the embedder it records now" in hint and "describe_store" in hint, hint
    finally:
        store.close()
