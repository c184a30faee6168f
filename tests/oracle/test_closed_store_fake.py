"""Issue 25 item 4 on the Oracle engine (recording fake): a closed engine and a closed
OracleDBMemoryStore raise ``oramem.StoreClosed`` in both colours (before: ``RuntimeError``
from the engine, ``ValueError`` from the store)."""

from __future__ import annotations

import asyncio
import json

import pytest

from oramem import OracleDBMemoryStore, SchemaPolicy, StoreClosed
from oramem.embedders import HashEmbedder

from .fakes import FakeAsyncPool, FakePool, Recorder
from .test_driver_fake import KINDS, SETTINGS_OUT, opened, run


@pytest.mark.parametrize("kind", KINDS)
def test_closed_oracle_engine_raises_store_closed(kind):
    engine, _ = opened(kind)
    run(engine, "close")
    with pytest.raises(StoreClosed, match="closed"):
        run(engine, "get", "memory", "r1")


def _recorder() -> Recorder:
    return Recorder({"oramem_admin.open_store": json.dumps(dict(SETTINGS_OUT, vector_dim=8))})


def test_closed_oracle_store_raises_store_closed_sync():
    store = OracleDBMemoryStore(HashEmbedder(8), FakePool(_recorder()), memory_store_id="s",
                                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    store.close()
    with pytest.raises(StoreClosed, match="closed"):
        store.get("memory", "a")


def test_closed_oracle_store_raises_store_closed_async():
    async def go():
        store = await OracleDBMemoryStore.connect_async(HashEmbedder(8), FakeAsyncPool(_recorder()), memory_store_id="s")
        await store.close_async()
        with pytest.raises(StoreClosed, match="closed"):
            await store.get_async("memory", "a")

    asyncio.run(go())
