"""OracleDBMemoryStore end to end over the recording fake: the public store validates,
then makes one PL/SQL call per operation; the colour is picked by the factory
(``OracleDBMemoryStore(...)`` / ``await OracleDBMemoryStore.connect_async(...)``, as
python-oracledb's ``connect`` / ``connect_async``), an async store refuses sync calls, and a
pool the store created is closed by ``close()`` and by ``close_async()``."""

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
    # the first write reads the store's options once (the firewall policy, SC-15.1)
    assert [c.name for c in rec.plsql][1:] == ["oramem_admin.get_options_json", "oramem_store.add_json"]
    with pytest.raises(TypeError):  # validation happens before any call
        store.add("not a list", "memory")  # type: ignore[arg-type]
    assert len(rec.plsql) == 3


def test_connect_async_opens_the_store_and_rejects_sync_calls():
    rec = recorder()

    async def go():
        store = await OracleDBMemoryStore.connect_async(HashEmbedder(8), FakeAsyncPool(rec), memory_store_id="mystore")
        assert [c.name for c in rec.plsql] == ["oramem_admin.open_store"]  # opened before it returns
        with pytest.raises(TypeError, match="_async"):
            store.add(["hello"], "memory")
        return await store.add_async(["hello"], "memory", record_ids="a")

    assert asyncio.run(go()) == ["a"]
    assert [c.name for c in rec.plsql] == ["oramem_admin.open_store", "oramem_admin.get_options_json",
                                           "oramem_store.add_json"]


def test_the_colour_is_the_factory_and_the_wrong_pool_names_the_right_one():
    rec = recorder()
    with pytest.raises(TypeError, match=r"await OracleDBMemoryStore\.connect_async\(embedder, pool"):
        OracleDBMemoryStore(HashEmbedder(8), FakeAsyncPool(rec), memory_store_id="mystore")
    with pytest.raises(TypeError, match=r"OracleDBMemoryStore\(embedder, pool, \.\.\.\)"):
        asyncio.run(OracleDBMemoryStore.connect_async(HashEmbedder(8), FakePool(rec), memory_store_id="mystore"))
    assert rec.plsql == []
    # connect() is the constructor's name as the twin of connect_async()
    store = OracleDBMemoryStore.connect(HashEmbedder(8), FakePool(rec), memory_store_id="mystore")
    assert [c.name for c in rec.plsql] == ["oramem_admin.open_store"]
    assert store.add(["hello"], "memory", record_ids="a") == ["a"]


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


@pytest.mark.parametrize("how", ["close_async", "aclose", "async with"])
def test_close_async_closes_the_pool_the_store_created(monkeypatch, how):
    """The live drift of the architecture review: close() closed the store's own pool and
    close_async() (and so aclose() and `async with`) never did."""
    import oracledb

    rec = recorder()
    monkeypatch.setattr(oracledb, "create_pool", lambda **kw: _OwnedPool(rec))
    _OwnedPool.closed = 0

    async def go():
        store = OracleDBMemoryStore(HashEmbedder(8), dsn="db:1521/FREEPDB1", user="app", password="pw",
                                    memory_store_id="mystore")
        if how == "async with":
            async with store:
                pass
        else:
            await getattr(store, how)()
        assert store.closed
        await store.close_async()  # a second close closes nothing twice

    asyncio.run(go())
    assert _OwnedPool.closed == 1


class _OwnedAsyncPool(FakeAsyncPool):
    closed = 0

    async def close(self, force=False):
        type(self).closed += 1


def test_connect_async_with_dsn_makes_an_async_pool_that_close_async_closes(monkeypatch):
    import oracledb

    rec = recorder()
    seen = {}

    def create_pool_async(**kw):
        seen.update(kw)
        return _OwnedAsyncPool(rec)

    monkeypatch.setattr(oracledb, "create_pool_async", create_pool_async)
    monkeypatch.setattr(oracledb, "create_pool", lambda **kw: pytest.fail("the sync factory was called"))
    _OwnedAsyncPool.closed = 0

    async def go():
        store = await OracleDBMemoryStore.connect_async(HashEmbedder(8), dsn="db:1521/FREEPDB1", user="app",
                                                        password="pw", memory_store_id="mystore")
        assert [c.name for c in rec.plsql] == ["oramem_admin.open_store"]
        with pytest.raises(TypeError, match="await store.close_async"):
            store.close()  # cannot await the pool's close: refused, nothing closed
        assert not store.closed and _OwnedAsyncPool.closed == 0
        await store.close_async()
        assert store.closed and _OwnedAsyncPool.closed == 1
        # a failed open closes the pool it made
        rec.answers["oramem_admin.open_store"] = ValueError("boom")
        with pytest.raises(ValueError, match="boom"):
            await OracleDBMemoryStore.connect_async(HashEmbedder(8), dsn="db:1521/FREEPDB1", user="app", password="pw")
        assert _OwnedAsyncPool.closed == 2
        # bad arguments after the pool was made close it too
        with pytest.raises(ValueError, match="vector_dim"):
            await OracleDBMemoryStore.connect_async(HashEmbedder(8), vector_dim=3, dsn="db:1521/FREEPDB1",
                                                    user="app", password="pw")
        assert _OwnedAsyncPool.closed == 3

    asyncio.run(go())
    assert seen == {"user": "app", "password": "pw", "dsn": "db:1521/FREEPDB1", "min": 1, "max": 4, "increment": 1}


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


def test_a_blank_id_is_refused_before_any_plsql_call_sync_and_async():
    """left34 item 1 on the Oracle engine: a white-space-only id (record, scope, profile) is a
    ValueError from the shared normaliser; nothing reaches oramem_store (the PL/SQL refuses it
    too, for PL/SQL callers: tests/plsql/test_blank_ids_plsql.py)."""
    rec = recorder()
    store = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), memory_store_id="mystore")
    calls = len(rec.plsql)
    for call in (lambda: store.add(["x"], "memory", record_ids=" "), lambda: store.add(["x"], "memory", user_ids="\t"),
                 lambda: store.add_user("\u00a0", "info"), lambda: store.get("memory", "  "),
                 lambda: store.delete("user_profile", " ", cascade=True), lambda: store.delete_thread(" "),
                 lambda: store.list("memory", agent_id=" ")):
        with pytest.raises(ValueError, match="only white space"):
            call()
    assert len(rec.plsql) == calls

    async def go():
        astore = await OracleDBMemoryStore.connect_async(HashEmbedder(8), FakeAsyncPool(rec), memory_store_id="mystore")
        before = len(rec.plsql)
        with pytest.raises(ValueError, match="only white space"):
            await astore.add_async(["x"], "memory", thread_ids=" ", roles="user")
        with pytest.raises(ValueError, match="only white space"):
            await astore.delete_async("agent_profile", " ", cascade=True)
        assert len(rec.plsql) == before

    asyncio.run(go())
