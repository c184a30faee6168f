"""``KnowledgeRuntime``: what the knowledge modules share with their ``KnowledgeMemory``.

One per ``KnowledgeMemory`` (``km.runtime``): the store, the LLM provider, the embedder and its
dimension, the knowledge tables and their database backend, the worker pool for blocking
database work, and the per-instance directive cache (KC-5.10). The write pipeline, retrieval,
the jobs and the procedural layer take what they need from here instead of reaching into
``KnowledgeMemory``'s private attributes.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

__all__ = ["KnowledgeRuntime"]

T = TypeVar("T")


@dataclass(eq=False)
class KnowledgeRuntime:
    store: Any  # OracleMemoryStore (SQLite or Oracle engine)
    llm: Any  # LLMProvider (NoLLM when the layer runs without one)
    embedder: Any  # the store's embedder unless one was given
    dim: int  # embedder dimension == store.vector_dim
    backend: Any  # oramem.knowledge.db.Backend over the store's database
    tables: Any  # oramem.knowledge.schema.Tables of this store
    executor: ThreadPoolExecutor
    directive_cache: dict = field(default_factory=dict)  # KC-5.10: per instance, never module-global

    async def in_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run blocking database work on the worker pool (created once per instance, so sync
        twins do not start threads per call); the caller's context variables (``fail_at``)
        go along."""
        ctx = contextvars.copy_context()
        call = functools.partial(fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self.executor, ctx.run, call)

    async def search(self, **kwargs: Any) -> Any:
        """Store search in the store's colour: a store opened on a sync source (SQLite, a
        sync python-oracledb pool or connection) runs its sync call on the worker pool; an
        async-only store (an async pool) its async twin (python-oracledb's native asyncio).
        A vector query is a pure vector search on every store (SC-6.6), also on a hybrid one."""
        from ..trust.audit import internal  # SC-16.3: the layer's own searches are not audit entries

        if kwargs.get("query_vector") is not None and kwargs.get("strategy") is None:
            kwargs["strategy"] = "vector"
        with internal():
            if not getattr(self.store.engine, "async_only", False):
                return await self.in_thread(self.store.search, **kwargs)
            return await self.store.search_async(**kwargs)

    async def embed(self, texts: list, is_query: bool) -> Any:
        emb = self.embedder
        if hasattr(emb, "embed"):
            return await self.in_thread(emb.embed, texts, is_query=is_query)
        return await emb.embed_async(texts, is_query=is_query)

    async def read(self, fn: Callable[[Any], T]) -> T:
        """``fn(conn)`` on a read connection of the knowledge backend, on the worker pool."""

        def run() -> T:
            with self.backend.read() as conn:
                return fn(conn)

        return await self.in_thread(run)
