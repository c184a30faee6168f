"""OracleDBMemoryStore end to end over the recording fake: the public store validates,
then makes one PL/SQL call per operation; an async pool opens lazily on the first
``*_async`` call and refuses sync calls."""

from __future__ import annotations

import asyncio
import json

import pytest

from oramem import OracleDBMemoryStore, SchemaPolicy
from oramem.embedders import HashEmbedder

from .fakes import FakeAsyncPool, FakePool, Recorder
from .test_driver_fake import SETTINGS_OUT


def recorder() -> Recorder:
    out = dict(SETTINGS_OUT, vector_dim=8)
    rec = Recorder({"oramem_admin.open_store": json.dumps(out), "oramem_store.add_json": json.dumps(["a"])})
    return rec


def test_sync_pool_opens_on_construction_and_adds_in_one_call():
    rec = recorder()
    store = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                memory_store_id="mystore")
    assert [c.name for c in rec.plsql] == ["oramem_admin.open_store"]
    opened = json.loads(rec.plsql[0].binds["in_settings"])
    assert opened["memory_store_id"] == "MYSTORE" and opened["vector_dim"] == 8
    assert store.add(["hello"], "memory", record_ids="a") == ["a"]
    assert [c.name for c in rec.plsql][1:] == ["oramem_store.add_json"]
    with pytest.raises(TypeError):  # validation happens before any call
        store.add("not a list", "memory")  # type: ignore[arg-type]
    assert len(rec.plsql) == 2


def test_async_pool_opens_lazily_and_rejects_sync_calls():
    rec = recorder()
    store = OracleDBMemoryStore(HashEmbedder(8), FakeAsyncPool(rec), memory_store_id="mystore")
    assert rec.plsql == []  # nothing can be awaited in __init__
    with pytest.raises(TypeError, match="_async"):
        store.add(["hello"], "memory")

    async def go():
        return await store.add_async(["hello"], "memory", record_ids="a")

    assert asyncio.run(go()) == ["a"]
    assert [c.name for c in rec.plsql] == ["oramem_admin.open_store", "oramem_store.add_json"]


def test_table_name_prefix_is_a_deprecated_alias():
    rec = recorder()
    with pytest.warns(DeprecationWarning, match="memory_store_id"):
        OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), table_name_prefix="mystore")
    with pytest.raises(ValueError, match="deprecated alias"):
        OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), table_name_prefix="a", memory_store_id="b")


class _OwnedPool(FakePool):
    closed = 0

    def close(self, force=False):
        type(self).closed += 1


def test_dsn_user_password_make_an_owned_pool(monkeypatch):
    import oracledb

    rec = recorder()
    seen = {}

    def create_pool(**kw):
        seen.update(kw)
        return _OwnedPool(rec)

    monkeypatch.setattr(oracledb, "create_pool", create_pool)
    _OwnedPool.closed = 0
    store = OracleDBMemoryStore(HashEmbedder(8), dsn="db:1521/FREEPDB1", user="app", password="pw",
                                memory_store_id="mystore")
    assert seen == {"user": "app", "password": "pw", "dsn": "db:1521/FREEPDB1", "min": 1, "max": 4, "increment": 1}
    assert [c.name for c in rec.plsql] == ["oramem_admin.open_store"]
    store.close()
    assert _OwnedPool.closed == 1
    # a failed open closes the pool it made
    rec.answers["oramem_admin.open_store"] = ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        OracleDBMemoryStore(HashEmbedder(8), dsn="db:1521/FREEPDB1", user="app", password="pw")
    assert _OwnedPool.closed == 2


def test_pool_argument_errors_say_what_to_pass():
    rec = recorder()
    with pytest.raises(TypeError, match="dsn='host:1521/service'"):
        OracleDBMemoryStore(HashEmbedder(8), "app/pw@db:1521/FREEPDB1")
    with pytest.raises(TypeError, match="missing password"):
        OracleDBMemoryStore(HashEmbedder(8), dsn="db:1521/FREEPDB1", user="app")
    with pytest.raises(TypeError, match="needs a pool"):
        OracleDBMemoryStore(HashEmbedder(8))
    with pytest.raises(ValueError, match="not both"):
        OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), dsn="db:1521/FREEPDB1")
    assert rec.plsql == []
