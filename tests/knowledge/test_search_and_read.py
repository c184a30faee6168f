"""``KnowledgeRuntime.search_and_read`` (issue 25 item 6): a write's store searches and the read
of their facts in one trip to the worker pool on a sync store; on an async-only store (an
async python-oracledb pool) the searches go through the store's async twin, never its sync
call, and only the read runs on the pool. A vector query is a pure vector search (SC-6.6)."""

from __future__ import annotations

import asyncio
import contextlib
import types

import pytest

from oramem.knowledge.runtime import KnowledgeRuntime


class _Store:
    def __init__(self, async_only: bool) -> None:
        self.async_only = async_only
        self.calls: list[tuple[str, dict]] = []

    def search(self, **kw):
        if self.async_only:
            raise AssertionError("an async-only store's sync search was called")
        self.calls.append(("sync", kw))
        return [("hit", kw["k"])]

    async def search_async(self, **kw):
        self.calls.append(("async", kw))
        return [("hit", kw["k"])]


class _Backend:
    def __init__(self) -> None:
        self.reads = 0

    @contextlib.contextmanager
    def read(self):
        self.reads += 1
        yield "conn"


def _runtime(async_only: bool):
    trips: list[str] = []

    async def in_thread(fn, *a, **kw):
        trips.append(getattr(fn, "__name__", "?"))
        return fn(*a, **kw)

    rt = types.SimpleNamespace(store=_Store(async_only), backend=_Backend(), in_thread=in_thread,
                               made_by=contextlib.nullcontext)  # rek47: a runtime whose embedder names no identity
    return rt, trips


@pytest.mark.parametrize("async_only", [False, True])
def test_searches_then_read_in_the_stores_colour(async_only):
    rt, trips = _runtime(async_only)
    searches = [dict(query_vector=[1.0, 0.0], k=3), dict(query="words", k=5), dict(query_vector=[0.0, 1.0], k=2, strategy="hybrid")]

    def fn(results, conn):
        assert conn == "conn"
        return [n for hits in results for _, n in hits]

    results, read = asyncio.run(KnowledgeRuntime.search_and_read(rt, searches, fn))
    assert read == [3, 5, 2] and [n for hits in results for _, n in hits] == [3, 5, 2]
    colour = "async" if async_only else "sync"
    assert [c for c, _ in rt.store.calls] == [colour] * 3
    strategies = [kw.get("strategy") for _, kw in rt.store.calls]
    assert strategies == ["vector", None, "hybrid"]  # a vector query without a strategy is a vector search
    assert rt.backend.reads == 1
    # sync: one trip for the searches and the read; async-only: the read alone on the pool
    assert trips == (["read"] if async_only else ["both"])
    assert "strategy" not in searches[0]  # the caller's arguments are not changed


class _TrackingBackend(_Backend):
    """Knows whether a read connection is open, so a test can see that none is held while
    the store searches (a trip never holds two connections of one pool)."""

    def __init__(self) -> None:
        super().__init__()
        self.open = 0

    @contextlib.contextmanager
    def read(self):
        self.reads += 1
        self.open += 1
        try:
            yield "conn"
        finally:
            self.open -= 1


@pytest.mark.parametrize("async_only", [False, True])
def test_a_plan_reads_then_decides_the_searches(async_only):
    rt, trips = _runtime(async_only)
    rt.backend = _TrackingBackend()
    searched_with_open: list[int] = []
    real = rt.store.search, rt.store.search_async

    def search(**kw):
        searched_with_open.append(rt.backend.open)
        return real[0](**kw)

    async def search_async(**kw):
        searched_with_open.append(rt.backend.open)
        return await real[1](**kw)

    rt.store.search, rt.store.search_async = search, search_async
    planned: list[str] = []

    def plan(conn):
        assert conn == "conn"
        planned.append("read")
        return [dict(query_vector=[1.0, 0.0], k=k) for k in (4, 1)]

    def fn(results, conn):
        return [n for hits in results for _, n in hits]

    results, read = asyncio.run(KnowledgeRuntime.search_and_read(rt, plan, fn))
    assert planned == ["read"] and read == [4, 1]
    assert [kw["strategy"] for _, kw in rt.store.calls] == ["vector", "vector"]
    assert searched_with_open == [0, 0]  # the plan's connection is closed before the searches
    assert rt.backend.reads == 2
    # sync: the plan, the searches and the read in one trip; async-only: the plan and the read on the pool
    assert trips == (["planned", "read"] if async_only else ["both"])


def test_an_empty_plan_searches_nothing_and_still_reads():
    rt, trips = _runtime(False)
    results, read = asyncio.run(KnowledgeRuntime.search_and_read(rt, lambda conn: [], lambda found, conn: ("read", found)))
    assert results == [] and read == ("read", []) and rt.store.calls == [] and trips == ["both"]
