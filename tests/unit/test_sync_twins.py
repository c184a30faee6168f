"""The shared sync-twin helper (oramem._sync): one background loop per owner, typed twins."""
from __future__ import annotations

import asyncio
import inspect
import multiprocessing
import threading
import warnings

import pytest

from oramem._sync import BackgroundLoop, run_sync, sync_method


class Owner:
    def __init__(self) -> None:
        self._loop_runner = BackgroundLoop("test-owner")

    async def where_async(self, tag: str, *, times: int = 1) -> tuple[int, str, str]:
        await asyncio.sleep(0)
        return id(asyncio.get_running_loop()), threading.current_thread().name, tag * times

    where = sync_method(where_async)

    async def fail_async(self) -> None:
        raise KeyError("boom")

    fail = sync_method(fail_async)


def test_sync_calls_share_one_loop_per_owner() -> None:
    a, b = Owner(), Owner()
    try:
        first, second = a.where("x"), a.where("y", times=2)
        assert first[0] == second[0] and first[1] == "test-owner"
        assert second[2] == "yy"
        assert b.where("z")[0] != first[0]
    finally:
        a._loop_runner.close()
        b._loop_runner.close()


def test_twin_keeps_the_async_signature_and_name() -> None:
    assert Owner.where.__name__ == "where"
    assert Owner.where.__qualname__ == "Owner.where"
    assert inspect.signature(Owner.where) == inspect.signature(Owner.where_async)


def test_exceptions_keep_their_type() -> None:
    owner = Owner()
    try:
        with pytest.raises(KeyError, match="boom"):
            owner.fail()
    finally:
        owner._loop_runner.close()


async def test_a_twin_on_a_running_loop_refuses_and_leaves_no_unawaited_coroutine() -> None:
    owner = Owner()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeError, match=r"where\(\) called on a thread running an event loop; await where_async"):
            owner.where("x")
    owner._loop_runner.close()


def test_closed_loop_refuses_and_its_thread_ends() -> None:
    owner = Owner()
    owner.where("x")
    thread = owner._loop_runner._thread
    assert thread is not None and thread.is_alive()
    owner._loop_runner.close()
    assert not thread.is_alive()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeError, match="closed"):
            owner.where("x")
    owner._loop_runner.close()  # idempotent


def _child(queue: multiprocessing.Queue, owner: Owner) -> None:
    queue.put(owner.where("child")[2])


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs the fork start method")
def test_a_forked_child_gets_a_fresh_loop() -> None:
    owner = Owner()
    owner.where("parent")  # the parent's loop thread exists and does not survive the fork
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue, owner))
    proc.start()
    try:
        assert queue.get(timeout=30) == "child"
    finally:
        proc.join(timeout=30)
        owner._loop_runner.close()
    assert proc.exitcode == 0


def test_run_sync_uses_one_shared_loop() -> None:
    async def loop_id() -> int:
        return id(asyncio.get_running_loop())

    assert run_sync(loop_id()) == run_sync(loop_id())


# The typed-twins check of KnowledgeMemory is tests/typecheck/test_twin_types.py (mypy over
# reveal_type): inspect.signature follows functools.wraps' __wrapped__, so comparing a sync
# twin's signature with its async method compared the async signature with itself.
