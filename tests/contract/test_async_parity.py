"""Every public sync method has an ``_async`` twin with the same signature (DESIGN:
"one API in two colours"), and the async twins work end to end on SQLite."""

from __future__ import annotations

import inspect

import pytest

import oramem
from oramem import PendingRecordBatch

from ._support import hit_ids, ids, vec

CLASSES = ["IMemoryStore", "OracleMemoryStore", "SQLiteMemoryStore", "OracleDBMemoryStore"]
#: the contract names the async twin of close() ``aclose`` (STORE_CONTRACT §1)
ALIASES = {"close": ("close_async", "aclose")}
#: context-manager methods: the twin returns an async context manager (SC-12)
CONTEXT_MANAGERS = {"transaction"}
EXPECTED = ["add", "add_batches", "add_user", "add_agent", "get", "list", "list_thread_messages", "search",
            "update", "delete", "delete_thread", "purge_expired", "sync_search_index", "close", "transaction"]


def _public_sync_methods(cls):
    out = []
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or name.endswith("_async") or name == "aclose":
            continue
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, (property, staticmethod, classmethod)):
            continue
        if inspect.isfunction(member) and not inspect.iscoroutinefunction(member):
            out.append(name)
    return out


def _shape(fn):
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


@pytest.mark.parametrize("cls_name", CLASSES)
def test_expected_methods_exist(cls_name):
    cls = getattr(oramem, cls_name)
    missing = [m for m in EXPECTED if not hasattr(cls, m)]
    assert missing == []


@pytest.mark.parametrize("cls_name", CLASSES)
def test_every_sync_method_has_async_twin_with_same_signature(cls_name):
    cls = getattr(oramem, cls_name)
    problems = []
    methods = _public_sync_methods(cls)
    assert set(EXPECTED) <= set(methods) | {"close"}
    for name in methods:
        candidates = ALIASES.get(name, (name + "_async",))
        twin = next((getattr(cls, c) for c in candidates if hasattr(cls, c)), None)
        if twin is None:
            problems.append(f"{name}: no async twin ({' or '.join(candidates)})")
            continue
        if name in CONTEXT_MANAGERS:
            if not inspect.isasyncgenfunction(inspect.unwrap(twin)):
                problems.append(f"{name}: twin is not an async context manager")
        elif not inspect.iscoroutinefunction(twin):
            problems.append(f"{name}: twin is not a coroutine function")
        if _shape(twin) != _shape(getattr(cls, name)):
            problems.append(f"{name}: {inspect.signature(getattr(cls, name))} != {inspect.signature(twin)}")
    assert problems == []


@pytest.mark.parametrize("cls_name", CLASSES)
def test_no_orphan_async_methods(cls_name):
    cls = getattr(oramem, cls_name)
    orphans = [n for n, m in inspect.getmembers(cls) if n.endswith("_async") and not n.startswith("_")
               and not hasattr(cls, n[: -len("_async")])]
    assert orphans == []


@pytest.fixture
def sqlite_store(tmp_path):
    from oramem import SQLiteMemoryStore
    from oramem.embedders import HashEmbedder

    s = SQLiteMemoryStore(str(tmp_path / "a.db"), embedder=HashEmbedder(dim=64))
    yield s
    s.close()


async def test_async_end_to_end(sqlite_store):
    s = sqlite_store
    assert await s.add_async(["hello async"], record_type="message", record_ids="x1", thread_ids="t1",
                             roles="user", embeddings=[vec(1)]) == ["x1"]
    assert await s.add_batches_async([PendingRecordBatch(texts=["b"], record_type="memory", record_ids="b1",
                                                         embeddings=[vec(2)])]) == ["b1"]
    assert await s.add_user_async("u1", "user") == "u1"
    assert await s.add_agent_async("a1", "agent") == "a1"
    assert (await s.get_async("message", "x1")).content == "hello async"
    assert ids(await s.list_async("memory")) == ["b1"]
    assert ids(await s.list_thread_messages_async("t1")) == ["x1"]
    res = await s.search_async(query_vector=vec(2), k=1)
    assert hit_ids(res) == ["b1"] and type(res[0][1]) is float
    assert await s.update_async("memory", "b1", text="changed") == 1
    assert (await s.get_async("memory", "b1")).content == "changed"
    assert await s.delete_async("memory", "b1") == 1
    assert await s.delete_thread_async("t1") == 1
    assert await s.purge_expired_async() == 0
    await s.sync_search_index_async()


async def test_async_errors_match_sync(sqlite_store):
    with pytest.raises(ValueError):
        await sqlite_store.search_async("x", k=0)
    with pytest.raises(TypeError):
        await sqlite_store.add_async("bare", record_type="memory")
    assert await sqlite_store.list_async("memory") == []


async def test_async_close(tmp_path):
    from oramem import SQLiteMemoryStore
    from oramem.embedders import HashEmbedder

    s = SQLiteMemoryStore(str(tmp_path / "c.db"), embedder=HashEmbedder(dim=64))
    await s.add_async(["x"], record_type="memory", record_ids="m1")
    closer = getattr(s, "aclose", None) or getattr(s, "close_async")
    await closer()
    s2 = SQLiteMemoryStore(str(tmp_path / "c.db"), embedder=HashEmbedder(dim=64))
    assert ids(s2.list("memory")) == ["m1"]
    s2.close()


async def test_async_concurrent_calls_on_one_store(sqlite_store):
    """Many async calls in flight on one store (worker threads on SQLite) stay consistent."""
    import asyncio

    s = sqlite_store
    adds = [s.add_async([f"n{i}"], record_type="memory", record_ids=f"n{i:02d}", embeddings=[vec(i % 8)])
            for i in range(30)]
    out = await asyncio.gather(*adds)
    assert sorted(x for (x,) in out) == [f"n{i:02d}" for i in range(30)]
    results = await asyncio.gather(*[s.search_async(query_vector=vec(j), k=4) for j in range(8)])
    for j, res in enumerate(results):
        exact = [f"n{i:02d}" for i in range(30) if i % 8 == j][:4]
        assert len(res) == 4
        assert [r.id for r, d in res if d < 1e-5] == exact
    gets = await asyncio.gather(*[s.get_async("memory", f"n{i:02d}") for i in range(30)])
    assert [g.content for g in gets] == [f"n{i}" for i in range(30)]
    dels = await asyncio.gather(*[s.delete_async("memory", f"n{i:02d}") for i in range(0, 30, 2)])
    assert dels == [1] * 15
    assert len(await s.list_async("memory", limit=None)) == 15
