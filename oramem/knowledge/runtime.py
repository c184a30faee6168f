"""``KnowledgeRuntime``: what the knowledge modules share with their ``KnowledgeMemory``.

One per ``KnowledgeMemory`` (``km.runtime``): the store, the LLM provider, the embedder and its
dimension, the knowledge tables and their database backend, the worker pool for blocking
database work, and the per-instance directive cache (KC-5.10). The write pipeline, retrieval,
the jobs and the procedural layer take what they need from here instead of reaching into
``KnowledgeMemory``'s private attributes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar, Union

import numpy as np

from .._sync import BackgroundLoop
from ..errors import StoreClosed
from .text import to_utc

if TYPE_CHECKING:  # typing only: runtime.py imports no knowledge module but the leaf text.py (no import cycles)
    from ..embedders.base import IEmbedder
    from ..store import OracleMemoryStore
    from ..sql_access import SQLAccess
    from .llm.providers import LLMProvider
    from .db.schema import KGTables

__all__ = ["KnowledgeRuntime"]

T = TypeVar("T")


@dataclass(eq=False)
class KnowledgeRuntime:
    store: OracleMemoryStore  # SQLite or Oracle engine
    llm: LLMProvider  # NoLLM when the layer runs without one
    embedder: IEmbedder  # the store's embedder unless one was given
    dim: int  # embedder dimension == store.vector_dim
    backend: SQLAccess  # the knowledge tables' database: the store's (``store.sql_access()``)
    tables: KGTables  # the knowledge tables of this store
    executor: ThreadPoolExecutor
    #: the instance's clock (``KnowledgeMemory(clock=...)``), unchecked; :meth:`now` checks what it returns
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(timezone.utc))
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("oramem.knowledge"))
    directive_cache: dict[Any, Any] = field(default_factory=dict)  # KC-5.10: per instance, never module-global
    #: OpenTelemetry ``TracerProvider`` of ``KnowledgeMemory(tracer_provider=...)``, or None (observe.py)
    tracer_provider: Any = None
    #: set by ``KnowledgeMemory.close``: :meth:`now` refuses work from then on
    closed: bool = False
    #: the instance's own event loop (its sync twins and in-process worker run there; set by
    #: ``jobs.lifecycle.Lifecycle``), or None
    home: Optional[BackgroundLoop] = None
    #: the identity of ``embedder`` (``oramem.embedders.identity``): sent with the store calls
    #: that carry its vectors and checked before its vectors are written to or compared with
    #: the knowledge tables (rek47), so an instance opened before another process's
    #: ``reembed`` refuses its embedding work instead of mixing two vector spaces
    identity: Optional[dict[str, Any]] = None

    def now(self) -> datetime:
        """KC-0.2: the instance's clock, read once per public call, as an aware UTC datetime;
        ``StoreClosed`` once this instance or its store is closed."""
        if self.closed:
            raise StoreClosed("this KnowledgeMemory is closed; open a new one")
        if self.store.closed:
            raise StoreClosed("the store of this KnowledgeMemory is closed; open a new store and KnowledgeMemory")
        moment = self.clock()
        if not isinstance(moment, datetime):
            raise TypeError(f"clock returned {type(moment).__name__}, not a datetime")
        return to_utc(moment)

    def drop_cached(self, agent_ids: Any = (), user_ids: Any = ()) -> None:
        """Drop what this instance caches of the scopes of ``agent_ids`` (every scope of those
        agents) and of ``user_ids`` (their scopes on every agent): the KC-5.10 directives
        blocks, the model's text over a scope's behavioural preferences. Called when those
        actors' rows are deleted or erased (KC-3.10), so the process keeps none of an erased
        user's words; another scope's entries stay. Over-dropping only costs a recompute."""
        agents, users = set(agent_ids), set(user_ids)
        if not (agents or users):
            return
        cache = self.directive_cache
        for key in list(cache):  # list(dict): one step under the GIL, safe beside other threads
            if key[0] in agents or (key[1] is not None and key[1] in users):
                cache.pop(key, None)

    def check_embedder(self, what: str) -> None:
        """rek47: refuse (``StoreSettingsMismatch``, ``what`` says what did not happen) when the
        store no longer records this instance's embedder: another process moved it with
        ``reembed`` after this instance was opened, so its vectors are of the old space. For
        work that writes or compares this instance's vectors in the knowledge tables without a
        store call carrying them (those carry :attr:`identity`: :meth:`made_by`). Inside a
        knowledge write (``backend.write``) it runs in the write's transaction. Blocking: call
        it in :meth:`in_thread` or inside a write."""
        if self.identity is not None:
            self.backend.check_embedder(self.identity, what)

    def made_by(self) -> contextlib.AbstractContextManager[None]:
        """The store calls inside carry this instance's embedder identity with the vectors they
        pass (``embeddings``, ``query_vector``): the store refuses them after another process's
        ``reembed`` (rek47; :func:`oramem.embedders.identity.vectors_made_by`)."""
        from ..embedders.identity import vectors_made_by

        return vectors_made_by(self.identity)

    def runs_inline(self) -> bool:
        """Blocking work may run right here, on the calling coroutine's thread: the coroutine
        runs on the instance's own loop (a sync twin, the in-process worker: no caller's loop
        to keep free) and the store does one database call at a time anyway
        (``SQLAccess.serial``: the embedded SQLite store), so a worker thread would add two
        thread hand-offs per call and no overlap (bench/results/knowledge_speed.md, round h)."""
        home = self.home
        return self.backend.serial and home is not None and home.is_current()

    async def in_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run blocking database work off the event loop, on the worker pool (created once per
        instance, so sync twins do not start threads per call), or inline where
        :meth:`runs_inline` says a thread buys nothing. The caller's context variables
        (``fail_at``) go along either way, and ``fn``'s changes to them stay in its copy."""
        if self.runs_inline():
            return contextvars.copy_context().run(fn, *args, **kwargs)
        return await self._pool(fn, *args, **kwargs)

    async def _pool(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        ctx = contextvars.copy_context()
        call = functools.partial(fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self.executor, ctx.run, call)

    async def search(self, **kwargs: Any) -> Any:
        """Store search in the store's colour: a store opened on a sync source (SQLite, a
        sync python-oracledb pool or connection) runs its sync call through :meth:`in_thread`; an
        async-only store (an async pool) its async twin (python-oracledb's native asyncio).
        A vector query is a pure vector search on every store (SC-6.6), also on a hybrid one."""
        from ..trust.audit import internal  # SC-16.3: the layer's own searches are not audit entries

        kwargs = _vector_first(kwargs)
        with internal(), self.made_by():
            if not self.store.async_only:
                return await self.in_thread(self.store.search, **kwargs)
            return await self.store.search_async(**kwargs)

    async def search_and_read(
        self,
        searches: Union[list[dict[str, Any]], Callable[[Any], list[dict[str, Any]]]],
        fn: Callable[[list[Any], Any], T],
    ) -> tuple[list[Any], T]:
        """The store searches ``searches`` (keyword arguments of :meth:`search`, in order),
        then ``fn(results, conn)`` on a read connection of the knowledge backend: on a sync
        store one :meth:`in_thread` call for all of it (a trip to the pool costs thread handoffs),
        on an async-only store the searches in its async twin, then the read on the pool.

        ``searches`` may be a function ``plan(conn)`` that returns them: it reads what decides
        the searches on a read connection of its own, in the same trip. That connection is
        closed before the searches run, so a trip never holds two connections of one pool."""
        from ..trust.audit import internal

        def planned() -> list[dict[str, Any]]:
            if not callable(searches):
                return [_vector_first(kw) for kw in searches]
            with self.backend.read() as conn:
                return [_vector_first(kw) for kw in searches(conn)]

        def read(results: list[Any]) -> T:
            with self.backend.read() as conn:
                return fn(results, conn)

        if self.store.async_only:
            prepared = await self.in_thread(planned) if callable(searches) else planned()
            with internal(), self.made_by():
                results = [await self.store.search_async(**kw) for kw in prepared]
            return results, await self.in_thread(read, results)

        def both() -> tuple[list[Any], T]:
            prepared = planned()
            with internal(), self.made_by():
                found = [self.store.search(**kw) for kw in prepared]
            return found, read(found)

        return await self.in_thread(both)

    async def embed(self, texts: list[str], is_query: bool, *, alongside: bool = False) -> np.ndarray:
        """The embedder's vectors of ``texts``. A model computed in this process runs inline like
        the database work (:meth:`runs_inline`), unless the caller runs other work ``alongside``
        it; anything else (a service, the database's model) runs on the pool, where other
        writes overlap it."""
        emb = self.embedder
        if hasattr(emb, "embed"):
            if not alongside and getattr(emb, "computes_locally", False) is True and self.runs_inline():
                return contextvars.copy_context().run(emb.embed, texts, is_query=is_query)
            return await self._pool(emb.embed, texts, is_query=is_query)
        return await emb.embed_async(texts, is_query=is_query)

    async def read(self, fn: Callable[[Any], T]) -> T:
        """``fn(conn)`` on a read connection of the knowledge backend, where :meth:`in_thread` runs it."""

        def run() -> T:
            with self.backend.read() as conn:
                return fn(conn)

        return await self.in_thread(run)


def _vector_first(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A vector query is a pure vector search on every store (SC-6.6), also on a hybrid one."""
    if kwargs.get("query_vector") is not None and kwargs.get("strategy") is None:
        return {**kwargs, "strategy": "vector"}
    return kwargs
