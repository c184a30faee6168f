"""Sync twins of async APIs: one background event loop, typed wrappers.

The knowledge layer and the LLM providers are written async-first. Their sync methods run the
coroutine on a long-lived event loop in a daemon thread instead of ``asyncio.run`` per call, so

- a call costs a thread hand-off, not a new loop (``asyncio.run`` builds and tears down a loop,
  its default executor and its async generators every time);
- loop-bound resources created during a sync call (HTTP clients, pools, locks) stay usable by
  the next sync call;
- the wrappers keep the async method's parameters for type checkers (``ParamSpec``).

A sync twin called on a thread that is itself running an event loop raises ``RuntimeError``
naming the ``_async`` method: blocking that loop until our loop answers could deadlock it.
A ``BackgroundLoop`` is restarted transparently in a child process after ``fork`` (the thread
does not survive a fork).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from .errors import StoreClosed

__all__ = ["BackgroundLoop", "HasBackgroundLoop", "run_sync", "sync_method"]

P = ParamSpec("P")
R = TypeVar("R")


class BackgroundLoop:
    """An asyncio event loop running in a daemon thread, started on first use."""

    def __init__(self, name: str = "oramem-loop") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._closed = False

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise StoreClosed(f"{self._name}: this object is closed")
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def _serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=_serve, name=self._name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread, self._pid = loop, thread, os.getpid()
            return self._loop

    def is_current(self) -> bool:
        """True on this loop's own thread: the caller is a coroutine or callback it runs."""
        thread = self._thread
        return thread is not None and self._pid == os.getpid() and threading.current_thread() is thread

    def run(self, coro: Coroutine[Any, Any, R], *, name: str = "this call", use: str | None = None) -> R:
        """Run ``coro`` on the background loop and wait for its result (or exception).

        ``name`` and ``use`` word the error raised on a thread that runs an event loop
        ("name() called ...; use use"); ``use`` defaults to ``name + "_async"``."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise RuntimeError(
                f"{name}() called on a thread running an event loop; await {use or name + '_async'}() instead"
            )
        try:
            loop = self._ensure()
        except BaseException:
            coro.close()
            raise
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def submit(self, coro: Coroutine[Any, Any, R]) -> concurrent.futures.Future[R]:
        """Schedule ``coro`` on the background loop without waiting for it (a long-running
        task of the owner, e.g. the knowledge layer's in-process worker)."""
        try:
            loop = self._ensure()
        except BaseException:
            coro.close()
            raise
        return asyncio.run_coroutine_threadsafe(coro, loop)

    def close(self) -> None:
        """Stop the loop and join its thread (idempotent); later calls raise ``RuntimeError``."""
        with self._lock:
            self._closed = True
            loop, thread, pid = self._loop, self._thread, self._pid
            self._loop = self._thread = None
        if loop is None or thread is None or pid != os.getpid():
            return
        if threading.current_thread() is thread:
            loop.call_soon(loop.stop)
            return

        async def _drain() -> None:
            await loop.shutdown_asyncgens()
            await loop.shutdown_default_executor()

        try:
            asyncio.run_coroutine_threadsafe(_drain(), loop).result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            if not thread.is_alive():
                loop.close()


_SHARED = BackgroundLoop("oramem-shared-loop")


def run_sync(coro: Coroutine[Any, Any, R], *, name: str = "this call", use: str | None = None) -> R:
    """Run ``coro`` on the process-wide background loop (for objects that own no loop)."""
    return _SHARED.run(coro, name=name, use=use)


class HasBackgroundLoop(Protocol):
    _loop_runner: BackgroundLoop


S = TypeVar("S", bound=HasBackgroundLoop)


def sync_method(async_fn: Callable[Concatenate[S, P], Awaitable[R]]) -> Callable[Concatenate[S, P], R]:
    """The sync twin of an ``async def x_async(self, ...)`` method, run on ``self._loop_runner``."""
    name = async_fn.__name__.removesuffix("_async")

    @functools.wraps(async_fn)
    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        async def _call() -> R:
            return await async_fn(self, *args, **kwargs)

        return self._loop_runner.run(_call(), name=name)

    wrapper.__name__ = name
    owner = async_fn.__qualname__.rsplit(".", 1)[0]
    wrapper.__qualname__ = f"{owner}.{name}"
    wrapper.__doc__ = f"Sync twin of :meth:`{async_fn.__name__}` (same arguments and result)."
    return wrapper
