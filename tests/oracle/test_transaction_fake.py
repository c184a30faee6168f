"""SC-12 on Oracle over the recording fake: a block holds one connection, its operations run
on it without committing, one COMMIT at the end, ROLLBACK on an exception, SAVEPOINTs when
nested; the knowledge layer's writes run on the block's connection. Static-checked, not run
against Oracle."""

from __future__ import annotations

import asyncio
import json

import pytest

from oramem import OracleDBMemoryStore, SchemaPolicy, StoreError
from oramem.embedders import HashEmbedder
from oramem.oracle.sql_access import OracleAccess
from oramem.sql_access import SharedConnection

from .fakes import FakeAsyncPool, FakeConnection, FakePool, Recorder
from .test_driver_fake import SETTINGS_OUT


class Boom(Exception):
    pass


def recorder() -> Recorder:
    return Recorder({
        "oramem_admin.open_store": json.dumps(dict(SETTINGS_OUT, vector_dim=8)),
        "oramem_store.add_json": json.dumps(["a"]),
        "oramem_store.update_json": 1,
        "oramem_store.delete_record_json": json.dumps({"count": 1}),
        "oramem_store.get_json": None,
    })


def sync_store(rec: Recorder, target=None) -> OracleDBMemoryStore:
    store = OracleDBMemoryStore(HashEmbedder(8), target or FakePool(rec),
                                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY, memory_store_id="mystore")
    store.get_firewall()  # the store reads its options once, on its first write (SC-15.1): done here
    return store


def after(rec: Recorder, mark: int) -> list:
    return rec.calls[mark:]


def test_a_block_is_one_connection_and_one_commit():
    rec = recorder()
    store = sync_store(rec)
    mark = len(rec.calls)
    with store.transaction():
        store.add(["hello"], "memory", record_ids="a")
        store.update("memory", "a", text="changed")
        store.get("memory", "a")
        store.delete("memory", "a")
    calls = after(rec, mark)
    assert [c.kind for c in calls] == ["acquire", "callfunc", "callfunc", "callfunc", "callfunc", "commit", "release"]
    assert len({c.conn for c in calls if c.kind != "acquire"}) == 1
    # outside a block every write commits on its own pooled connection
    mark = len(rec.calls)
    store.add(["x"], "memory", record_ids="a")
    store.delete("memory", "a")
    assert [c.kind for c in after(rec, mark)] == ["acquire", "callfunc", "commit", "release"] * 2


def test_an_exception_rolls_the_block_back_and_nothing_commits():
    rec = recorder()
    store = sync_store(rec)
    mark = len(rec.calls)
    with pytest.raises(Boom):
        with store.transaction():
            store.add(["hello"], "memory", record_ids="a")
            raise Boom
    assert [c.kind for c in after(rec, mark)] == ["acquire", "callfunc", "rollback", "release"]


def test_nested_blocks_are_savepoints_on_the_same_connection():
    rec = recorder()
    store = sync_store(rec)
    mark = len(rec.calls)
    with store.transaction():
        store.add(["a"], "memory", record_ids="a")
        with pytest.raises(Boom):
            with store.transaction():
                store.add(["b"], "memory", record_ids="a")
                raise Boom
        with store.transaction():
            store.add(["c"], "memory", record_ids="a")
    calls = after(rec, mark)
    assert [(c.kind, c.name) for c in calls if c.kind == "execute"] == [
        ("execute", "SAVEPOINT oramem_block_1"), ("execute", "ROLLBACK TO SAVEPOINT oramem_block_1"),
        ("execute", "SAVEPOINT oramem_block_1"),
    ]
    assert [c.kind for c in calls].count("commit") == 1 and [c.kind for c in calls].count("rollback") == 0
    assert len({c.conn for c in calls if c.kind != "acquire"}) == 1


def test_a_given_connection_is_used_and_committed_once():
    rec = recorder()
    conn = FakeConnection(rec)
    store = sync_store(rec, conn)
    mark = len(rec.calls)
    with store.transaction():
        store.add(["hello"], "memory", record_ids="a")
        store.delete("memory", "a")
    assert [c.kind for c in after(rec, mark)] == ["callfunc", "callfunc", "commit"]


def test_not_transactional_calls_are_refused_inside_a_block():
    rec = recorder()
    store = sync_store(rec)
    with store.transaction():
        mark = len(rec.calls)
        for call in (store.sync_search_index, store.close, lambda: store.register_deletion_hook("APP.ON_DELETE")):
            with pytest.raises(StoreError, match="inside store.transaction"):
                call()
        assert after(rec, mark) == []


def test_async_pool_block_is_one_connection_and_one_commit():
    rec = recorder()

    async def go():
        store = await OracleDBMemoryStore.connect_async(HashEmbedder(8), FakeAsyncPool(rec), memory_store_id="mystore")
        mark = len(rec.calls)
        async with store.transaction_async():
            await asyncio.gather(store.add_async(["a"], "memory", record_ids="a"),
                                 store.update_async("memory", "a", text="b"))
            with pytest.raises(Boom):
                async with store.transaction_async():
                    await store.delete_async("memory", "a")
                    raise Boom
        return after(rec, mark)

    calls = asyncio.run(go())
    kinds = [c.kind for c in calls]
    assert kinds[0] == "acquire" and kinds[-2:] == ["commit", "release"]
    assert kinds.count("commit") == 1 and kinds.count("rollback") == 0 and kinds.count("acquire") == 1
    assert [c.name for c in calls if c.kind == "execute"] == [
        "SAVEPOINT oramem_block_1", "ROLLBACK TO SAVEPOINT oramem_block_1"]
    assert len({c.conn for c in calls if c.kind != "acquire"}) == 1


def test_knowledge_writes_run_on_the_blocks_connection():
    rec = recorder()
    store = sync_store(rec)
    backend = OracleAccess(store)
    try:
        with store.transaction():
            held = store.engine.sql_connection()
            shared = backend._connect(store.engine.source, "pool")
            assert isinstance(shared, SharedConnection) and shared._conn is held
            mark = len(rec.calls)
            shared.commit()
            shared.rollback()
            shared.close()
            assert after(rec, mark) == []  # the block ends the transaction, not SQLAlchemy
        with pytest.raises(StoreError, match="only available inside"):
            store.engine.sql_connection()
    finally:
        backend.close()


# -- D3: one python-oracledb connection as the store's source ------------------------------

def _block_in_thread(store, started, release, finished):
    """Thread A: a store block with an uncommitted write, held until ``release`` is set."""
    def run():
        with store.transaction():
            store.add(["a's row"], "memory", record_ids="a")
            started.set()
            release.wait(10)
        finished.set()
    import threading

    t = threading.Thread(target=run)
    t.start()
    return t


@pytest.mark.parametrize("path", ["knowledge read (SQLAlchemy checkout/checkin)", "job claim"])
def test_a_single_connection_is_lent_to_the_knowledge_layer_only_between_blocks(path):
    """Review D3: with one oracledb.Connection as the source, a knowledge read (SQLAlchemy
    rolls back on checkin and after its first connect) or a job claim (commits) in thread B
    ran on the connection while thread A's block was open and ended A's transaction. Now B
    waits for A's block: no commit or rollback reaches the connection before A's commit."""
    import threading
    import time
    from types import SimpleNamespace

    from oramem.knowledge.jobs import queue as queue_mod

    rec = recorder()
    conn = FakeConnection(rec)
    store = sync_store(rec, conn)
    backend = OracleAccess(store)
    started, release, finished, b_done = (threading.Event() for _ in range(4))

    def knowledge_side():
        if path == "job claim":
            with queue_mod._oracle_dbapi(SimpleNamespace(store=store, backend=backend)) as c:
                c.commit()  # claim_oracle's commit
        else:
            shared = backend._connect(store.engine.source, "conn")  # SQLAlchemy's checkout
            shared.rollback()  # reset-on-return / first-connect rollback
            shared.close()  # checkin
        b_done.set()

    try:
        a = _block_in_thread(store, started, release, finished)
        assert started.wait(10)
        mark = len(rec.calls)
        b = threading.Thread(target=knowledge_side)
        b.start()
        time.sleep(0.3)  # room for B to run on the connection if nothing stops it
        assert not b_done.is_set(), "the knowledge layer used the connection inside another thread's block"
        assert [c.kind for c in after(rec, mark)] == []
        release.set()
        a.join(10)
        b.join(10)
        kinds = [c.kind for c in after(rec, mark)]
        assert kinds == ["commit", "rollback" if path != "job claim" else "commit"], kinds
        assert b_done.is_set() and finished.is_set()
        # the same thread may read between its own calls: the turn is reentrant, and lent back
        shared = backend._connect(store.engine.source, "conn")
        shared.close()
        with store.transaction():
            store.get("memory", "a")
    finally:
        release.set()
        backend.close()


def test_the_single_connection_cannot_be_lent_inside_a_block():
    """Inside a block on one connection, ending a transaction on it would end the block's:
    the engine refuses before anything runs (the knowledge layer uses sql_connection() there)."""
    rec = recorder()
    store = sync_store(rec, FakeConnection(rec))
    with store.transaction():
        mark = len(rec.calls)
        with pytest.raises(StoreError, match="sql_connection"):
            with store.engine.connection_turn():
                pass
        assert after(rec, mark) == []
    # from a pool a separate connection is lent, inside a block too (its own transaction)
    rec2 = recorder()
    pooled = sync_store(rec2)
    with pooled.transaction():
        with pooled.engine.connection_turn() as c:
            assert c is not pooled.engine.sql_connection()


def test_a_get_inside_a_block_locks_the_record_it_reads():
    """SC-12.10 (static-checked, not run against Oracle): a scope check and the write it
    guards (the adapters' update / delete / pop, the knowledge layer's own-record writes)
    run in one block; on Oracle (read committed) another session could still delete the
    checked record and store another scope's record under its id between the two
    statements. A get inside a block asks get_json to lock the row (in_lock 1, SELECT ...
    FOR UPDATE until the block ends), on the block's connection; outside one it locks
    nothing (in_lock 0: the call's transaction ends with it). Sync pool, given connection
    and async pool alike."""
    rec = recorder()
    for target in (FakePool(rec), FakeConnection(rec)):
        store = sync_store(rec, target)
        store.get("memory", "a")
        with store.transaction():
            store.get("memory", "a")
            with store.transaction():  # a nested block is the same transaction
                store.get("memory", "b")
        gets = [c for c in rec.calls if c.name == "oramem_store.get_json"]
        assert [(c.binds["in_record_id"], c.binds["in_lock"]) for c in gets] == [("a", 0), ("a", 1), ("b", 1)]
        assert gets[1].conn == gets[2].conn
        rec.calls.clear()

    async def go():
        store = await OracleDBMemoryStore.connect_async(HashEmbedder(8), FakeAsyncPool(rec), memory_store_id="mystore")
        await store.get_async("memory", "a")
        async with store.transaction_async():
            await store.get_async("memory", "a")

    asyncio.run(go())
    gets = [c for c in rec.calls if c.name == "oramem_store.get_json"]
    assert [c.binds["in_lock"] for c in gets] == [0, 1]
