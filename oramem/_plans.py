"""One body, two colours: adapter logic written once as a generator of store calls.

An adapter operation is a generator that yields ``(method, args, kwargs)`` for each store
call it needs and receives the call's result back (or its exception, thrown in). The sync
driver calls ``store.method``; the async driver awaits ``store.method_async``. So the sync
and async adapters share one implementation, and an async-only Oracle pool is driven with
the store's native asyncio API, never through threads.
"""

from __future__ import annotations

from typing import Any, Generator

__all__ = ["Plan", "StoreCall", "call", "run_sync", "run_async", "run_sync_in_transaction", "run_async_in_transaction"]

StoreCall = tuple[str, tuple, dict]
Plan = Generator[StoreCall, Any, Any]


def call(method: str, *args: Any, **kwargs: Any) -> StoreCall:
    return (method, args, kwargs)


def run_sync(store: Any, plan: Plan) -> Any:
    try:
        request = next(plan)
        while True:
            method, args, kwargs = request
            try:
                result = getattr(store, method)(*args, **kwargs)
            except Exception as exc:
                request = plan.throw(exc)
            else:
                request = plan.send(result)
    except StopIteration as done:
        return done.value


async def run_async(store: Any, plan: Plan) -> Any:
    try:
        request = next(plan)
        while True:
            method, args, kwargs = request
            try:
                result = await getattr(store, f"{method}_async")(*args, **kwargs)
            except Exception as exc:
                request = plan.throw(exc)
            else:
                request = plan.send(result)
    except StopIteration as done:
        return done.value


def run_sync_in_transaction(store: Any, plan: Plan) -> Any:
    """``run_sync`` inside one ``store.transaction()`` block (SC-12): the plan's reads and writes
    commit together, and on SQLite no other writer runs between them (``BEGIN IMMEDIATE``)."""
    with store.transaction():
        return run_sync(store, plan)


async def run_async_in_transaction(store: Any, plan: Plan) -> Any:
    """Async twin of :func:`run_sync_in_transaction`."""
    async with store.transaction_async():
        return await run_async(store, plan)
