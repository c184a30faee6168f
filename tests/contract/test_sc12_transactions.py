"""SC-12: store.transaction() / transaction_async() group store operations into one
transaction (commit at the end, rollback on an exception, savepoints when nested)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from oramem import SearchStrategy, StoreError

from ._support import hit_ids, ids, vec


class Boom(Exception):
    pass


def test_sc12_1_commit_at_end_rollback_on_exception(store):
    with store.transaction():
        store.add(["a"], "memory", record_ids="m1", embeddings=[vec(1)])
        store.add_user("u1", "a user")
    assert ids(store.list("memory")) == ["m1"] and store.get("user_profile", "u1") is not None
    with pytest.raises(Boom):
        with store.transaction():
            store.add(["b"], "memory", record_ids="m2", embeddings=[vec(2)])
            store.update("memory", "m1", text="changed")
            store.delete("user_profile", "u1")
            raise Boom
    assert ids(store.list("memory")) == ["m1"]
    assert store.get("memory", "m1").content == "a"
    assert store.get("user_profile", "u1") is not None


def test_sc12_2_a_failed_operation_undoes_only_itself(store):
    with store.transaction():
        store.add(["a"], "memory", record_ids="m1", embeddings=[vec(1)])
        with pytest.raises(ValueError, match="already stored"):
            store.add(["x", "y"], "memory", record_ids=["m9", "m1"], embeddings=[vec(3), vec(4)])
        store.add(["b"], "memory", record_ids="m2", embeddings=[vec(2)])
    assert ids(store.list("memory")) == ["m1", "m2"]


def test_sc12_3_nested_blocks_are_savepoints(store):
    with store.transaction():
        store.add(["a"], "memory", record_ids="m1", embeddings=[vec(1)])
        with pytest.raises(Boom):
            with store.transaction():
                store.add(["b"], "memory", record_ids="m2", embeddings=[vec(2)])
                with store.transaction():
                    store.add(["c"], "memory", record_ids="m3", embeddings=[vec(3)])
                raise Boom
        assert ids(store.list("memory")) == ["m1"]
        with store.transaction():
            store.add(["d"], "memory", record_ids="m4", embeddings=[vec(4)])
    assert ids(store.list("memory")) == ["m1", "m4"]
    assert hit_ids(store.search(query_vector=vec(2), k=1)) != ["m2"]


def test_sc12_4_reads_inside_see_the_blocks_writes(make_store):
    store = make_store(search_strategy=SearchStrategy.HYBRID)
    with store.transaction():
        store.add(["the quick brown fox"], "message", record_ids="x1", thread_ids="t1", embeddings=[vec(5)])
        assert store.get("message", "x1").content == "the quick brown fox"
        assert ids(store.list_thread_messages("t1")) == ["x1"]
        assert hit_ids(store.search(query_vector=vec(5), k=1, strategy="vector")) == ["x1"]
        assert hit_ids(store.search("fox", k=1, strategy="keyword")) == ["x1"]
        store.delete_thread("t1")
        assert store.search("fox", k=1, strategy="keyword") == []
        assert store.search(query_vector=vec(5), k=1, strategy="vector") == []
    assert store.get("message", "x1") is None


def test_sc12_6_not_transactional_operations_are_refused(store):
    with store.transaction():
        for call in (store.sync_search_index, store.close, lambda: store.register_deletion_hook(lambda c, e: None),
                     lambda: store.forget(user_id="u1")):
            with pytest.raises(StoreError, match="inside store.transaction"):
                call()
        store.add(["a"], "memory", record_ids="m1", embeddings=[vec(1)])
    assert ids(store.list("memory")) == ["m1"]


async def test_sc12_async_block(store):
    async with store.transaction_async():
        await asyncio.gather(*(store.add_async([f"n{i}"], "memory", record_ids=f"n{i}", embeddings=[vec(i)])
                               for i in range(4)))
        assert len(await store.list_async("memory")) == 4
        with pytest.raises(Boom):
            async with store.transaction_async():
                await store.delete_async("memory", "n0")
                raise Boom
        assert (await store.get_async("memory", "n0")) is not None
    with pytest.raises(Boom):
        async with store.transaction_async():
            await store.add_async(["z"], "memory", record_ids="z", embeddings=[vec(9)])
            raise Boom
    assert sorted(ids(await store.list_async("memory"))) == ["n0", "n1", "n2", "n3"]


def test_sc12_5_other_threads_wait_and_inherited_contexts_are_refused(store, sqlite_only):
    """SQLite: another thread's operation waits for the block; a thread that inherited the
    block's context raises instead of waiting for itself."""
    seen: list = []
    started = threading.Event()

    def other() -> None:
        started.set()
        seen.append(ids(store.list("memory")))

    with store.transaction():
        store.add(["a"], "memory", record_ids="m1", embeddings=[vec(1)])
        worker = threading.Thread(target=other)
        worker.start()
        started.wait()
        worker.join(timeout=0.3)
        assert worker.is_alive() and seen == []  # waiting for the block
        with pytest.raises(StoreError, match="another thread"):
            asyncio.run(asyncio.to_thread(store.get, "memory", "m1"))
    worker.join(timeout=10)
    assert seen == [["m1"]]


async def test_sc12_5_sync_call_inside_an_async_block_is_refused(store, sqlite_only):
    async with store.transaction_async():
        with pytest.raises(StoreError, match="_async methods"):
            store.get("memory", "m1")
