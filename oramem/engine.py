"""The seam between the store API and a storage engine.

:class:`oramem.OracleMemoryStore` validates and normalises user arguments and then calls
exactly one :class:`Engine` method per operation with a request from
:mod:`oramem.requests`. An engine owns persistence, transactions and everything that
needs stored state. Each method is one transaction: on any error nothing is written.
Inside a caller's block (:meth:`Engine.transaction`, ``store.transaction()``, SC-12) each
method stays atomic but joins the block's transaction: nothing is committed before the
block ends.

Engines provide sync methods and ``*_async`` twins. The default async twins run the sync
method in a worker thread (right for SQLite); the Oracle engine overrides them with
python-oracledb's native asyncio.
"""

from __future__ import annotations

import abc
import asyncio
import builtins
import contextlib
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Iterator, Mapping, Optional, Sequence, TypeVar, Union

import numpy as np

from .errors import CapabilityError, StoreError
from .requests import AddRequest, DeletionEvent, ErasureReport, ForgetRequest, ListRequest, SearchRequest, StoreSettings, UpdateRequest
from .types import Record, SchemaPolicy

__all__ = ["Engine", "DeletionHook", "DeletionHookSpec", "Block"]

R = TypeVar("R")

#: A deletion hook receives the engine-specific transactional handle (the sqlite3
#: connection for SQLite) and the event; it runs inside the deleting transaction and may
#: raise to abort the delete. For a ``forget`` event it returns an :class:`ErasureReport` of
#: what it erased (other events: None).
DeletionHook = Callable[[Any, DeletionEvent], Optional[ErasureReport]]
#: What ``register_deletion_hook`` takes: a :data:`DeletionHook` (SQLite) or the name of a
#: PL/SQL procedure (Oracle); each engine refuses the other kind.
DeletionHookSpec = Union[DeletionHook, str]


@dataclass(frozen=True)
class Block:
    """An open caller block (``store.transaction()``) of one engine, as seen by the
    context (thread or task) that opened it and the tasks started inside it."""

    engine: "Engine"
    #: the thread whose store operations join the block (sync block: the opener; async
    #: block on a thread-backed engine: the block's own worker thread)
    thread: int
    #: async block on a thread-backed engine: the one worker its operations run on
    executor: Optional[ThreadPoolExecutor] = None
    #: engine-specific state (Oracle: the connection held for the block)
    handle: Any = None


#: the blocks open in this context, innermost last
_BLOCKS: contextvars.ContextVar[tuple[Block, ...]] = contextvars.ContextVar("oramem_blocks", default=())


class Engine(abc.ABC):
    """Persistence for one store (one ``memory_store_id``)."""

    #: True for engines that can only be driven through the ``*_async`` methods (an
    #: async Oracle pool); the store then opens on its first async call.
    async_only: bool = False
    #: the engine's name in messages (an engine family's colour classes share one)
    engine_name: str = ""

    # -- lifecycle ---------------------------------------------------------------------
    @abc.abstractmethod
    def open(self, settings: StoreSettings, policy: SchemaPolicy) -> StoreSettings:
        """Apply the schema policy (SC-10.2) under a lock (SC-10.3) and return the
        settings in force. Raises a ``SchemaError`` subclass naming the policy to use
        when the policy forbids what is needed, ``StoreSettingsMismatch`` naming the
        setting when the persisted settings differ (SC-10.4). ``settings.vector_dim``
        may be None when an existing store supplies it."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections. Idempotent."""

    # -- writes --------------------------------------------------------------------------
    @abc.abstractmethod
    def add(self, request: AddRequest) -> list[str]:
        """Insert every record and its retrieval rows in one transaction; create threads
        implicitly (SC-2.3). Duplicate ids against the store are a ``ValueError`` and
        nothing is stored (SC-4.3); an existing profile id likewise (SC-2.4)."""

    @abc.abstractmethod
    def update(self, request: UpdateRequest) -> int:
        """Apply an update; 1 when an unexpired record was updated, else 0 (SC-7)."""

    @abc.abstractmethod
    def delete(self, record_type: str, record_id: str, cascade: bool) -> int:
        """SC-8.1/8.2; runs deletion hooks in the same transaction."""

    @abc.abstractmethod
    def delete_thread(self, thread_id: str) -> int:
        """SC-8.3; runs deletion hooks in the same transaction."""

    @abc.abstractmethod
    def purge_expired(self) -> int:
        """Physically remove expired records and their retrieval rows (SC-5.5)."""

    @abc.abstractmethod
    def sync_search_index(self) -> None:
        """Bring keyword/hybrid indexes up to date (SC-10.5)."""

    def forget(self, request: ForgetRequest) -> dict[str, int]:
        """Erase an actor (SC-8.6) in one transaction, deletion hooks included; rows
        erased per table. Engines without it raise ``CapabilityError`` before any write."""
        raise CapabilityError(
            f"forget (erasing a user or agent everywhere) is not supported by the {self.engine_name or type(self).__name__} in this "
            "version; delete the profile with cascade=True and the knowledge with KnowledgeMemory.delete_all"
        )

    def check_forget(self) -> None:
        """Before forget's receipt is prepared (its salt may be created): raise what ``forget``
        itself raises before writing (inside a ``store.transaction()`` block, or an engine
        without it), so a refused forget writes nothing, not the salt either."""

    def check_profile_cascade(self, record_type: str, record_id: str) -> None:
        """Before a profile cascade's receipt is prepared (its salt may be created): raise the
        error the cascade itself would raise before deleting anything (a user's cascade on a
        store with knowledge tables and nothing to erase her from them, SC-8.6), so a refused
        cascade writes nothing. The cascade checks again in its transaction."""

    def erase_profile(self, record_type: str, record_id: str, tombstone: str) -> tuple[int, dict[str, int]]:
        """The SC-8.2 cascade of a ``user_profile`` / ``agent_profile`` (an erasure, SC-13.3,
        SC-13.4) with its erasure-log tombstone ``tombstone`` (a receipt JSON, verification
        pending, SC-14.3) written in the cascade's own transaction; returns what ``delete``
        returns (1 or 0) and the store rows erased per table (the receipt's rows). Engines
        that keep no erasure log raise ``CapabilityError`` before any write (the store calls
        ``delete`` on them: ``trust.erasure.prepare`` gives no tombstone there)."""
        raise CapabilityError(
            f"an erasure-log tombstone for a profile cascade is not supported by the {self.engine_name or type(self).__name__}"
        )

    def check_restore(self, keys: Sequence[tuple[str, str, Optional[str], Optional[str]]], on_conflict: str) -> None:
        """Raise what ``add`` of restored records with ``keys`` (``(record_type, id, agent_id,
        user_id)``, ids unique per type) under ``on_conflict`` would raise for the ids stored
        now ("fail": one stored; "replace": one stored of another user or agent,
        ``DuplicateRecordError`` as ``add`` raises it), in one read, writing nothing (imp48: an
        import checks its whole file before its first batch). ``add`` still checks in its own
        transaction. Engines without such a read raise ``CapabilityError`` (their import
        finds a refusal when its batch runs)."""
        raise CapabilityError(
            f"a restore pre-check is not supported by the {self.engine_name or type(self).__name__}")

    # -- options (oramem.options) -------------------------------------------------------
    def get_options(self) -> dict[str, Any]:
        """Every option of the store, ``{name: value}`` (SC-15.1). Engines without them
        raise ``CapabilityError``."""
        raise CapabilityError(f"store options are not supported by the {self.engine_name or type(self).__name__}")

    def set_option(self, name: str, text: Optional[str]) -> None:
        """Set option ``name`` to the encoded JSON ``text`` (None removes it), in one
        transaction (SC-15.1)."""
        raise CapabilityError(f"store options are not supported by the {self.engine_name or type(self).__name__}")

    # -- reads ---------------------------------------------------------------------------
    @abc.abstractmethod
    def get(self, record_type: str, record_id: str) -> Optional[Record]:
        """SC-3.2."""

    @abc.abstractmethod
    def list(self, request: ListRequest) -> list[Record]:
        """SC-3.3."""

    @abc.abstractmethod
    def list_thread_messages(self, thread_id: str, last_n: Optional[int]) -> builtins.list[Record]:
        """SC-3.4."""

    @abc.abstractmethod
    def search(self, request: SearchRequest) -> builtins.list[tuple[Record, float]]:
        """SC-6: filters before the top-k cut, ascending distance, ties by type then id."""

    # -- knowledge-layer seam ------------------------------------------------------------
    @abc.abstractmethod
    def register_deletion_hook(self, hook: DeletionHookSpec) -> None:
        """SC-8.5: call ``hook`` inside every delete/cascade/purge transaction."""

    def sql_access(self, store: Any, configure: Optional[Callable[[Any], Any]] = None) -> Any:
        """SQLAlchemy access to this engine's database for a layer built on the store
        (``oramem.sql_access.SQLAccess``; ``store.sql_access()``). ``configure`` is called with
        the SQLAlchemy engine it creates (the layer's bind rules). Default: not supported."""
        raise CapabilityError(f"{type(self).__name__} gives no SQL access to layers built on the store")

    def register_erasure(self, eraser: Any) -> None:
        """SC-8.6: add what ``forget`` also erases, in its transaction (engines whose
        ``forget`` runs in the database, Oracle); engines that run Python deletion hooks in
        ``forget`` (SQLite) do not need it. Default: not supported."""
        raise CapabilityError(f"{type(self).__name__} takes no erasure (register a deletion hook)")

    def check_vectors_of(self, identity: Mapping[str, Any], what: str) -> None:
        """Vectors made by the embedder ``identity`` (a layer's own: the knowledge layer's)
        are comparable with the store's only while the store records that embedder: raise
        ``StoreSettingsMismatch`` (``what`` says what did not happen) when it records another
        (another process moved it with ``reembed``; rek47), inside the current block when one
        is open. For a layer's writes and reads of its own tables' vectors; its store calls
        carry the identity with the request (``vectors_made_by``). Default: not supported."""
        raise CapabilityError(f"{type(self).__name__} cannot check an embedder identity against the store")

    def embed_texts(self, texts: builtins.list[str], is_query: bool) -> Optional[np.ndarray]:
        """Engines with an in-database embedder may embed here; default: not supported."""
        return None

    # -- caller blocks (SC-12) -------------------------------------------------------------
    def transaction(self) -> contextlib.AbstractContextManager[None]:
        """A block whose operations join one transaction, committed when the outermost
        block ends and rolled back when an exception leaves it; nested blocks are
        savepoints (SC-12). Both built-in engines implement it; an engine that does not
        raises ``CapabilityError``."""
        raise CapabilityError(f"{self.engine_name or type(self).__name__} does not support store.transaction() blocks (SC-12)")

    def _block(self) -> Optional[Block]:
        """The innermost block of this engine open in the current context, or None."""
        for block in reversed(_BLOCKS.get()):
            if block.engine is self:
                return block
        return None

    @property
    def in_transaction(self) -> bool:
        """True when the current context (thread or task) is inside a block of this engine."""
        return self._block() is not None

    @contextlib.contextmanager
    def _entered(self, block: Block) -> Iterator[Block]:
        token = _BLOCKS.set(_BLOCKS.get() + (block,))
        try:
            yield block
        finally:
            _BLOCKS.reset(token)

    def _check_block_thread(self, what: str) -> Optional[Block]:
        """The current block, after checking that this thread may use it: a block belongs
        to the thread that opened it (an async block on a thread-backed engine: to its
        worker); a store call from another thread that inherited the block's context
        (``asyncio.to_thread``, an executor, a sync call inside ``async with``) would wait
        for the block forever, so it is refused."""
        block = self._block()
        if block is not None and block.thread != threading.get_ident():
            how = (
                "inside `async with store.transaction_async()` call the *_async methods"
                if block.executor is not None
                else "call it on the thread that opened `with store.transaction()`"
            )
            raise StoreError(
                f"{what} would join a store.transaction() block opened on another thread and wait for it "
                f"forever; {how} (KnowledgeMemory calls cannot join a caller's block)"
            )
        return block

    def _refuse_in_block(self, what: str, why: str) -> None:
        if self._block() is not None:
            raise StoreError(f"{what} cannot run inside store.transaction(): {why}; call it outside the block")

    @contextlib.asynccontextmanager
    async def transaction_async(self) -> AsyncIterator[None]:
        """Async twin of :meth:`transaction` for engines whose async methods run the sync
        ones in worker threads (SQLite): the block gets one worker thread of its own, and
        every ``*_async`` operation inside it runs there (sync methods called inside the
        block are refused: they would run on the event loop's thread)."""
        loop = asyncio.get_running_loop()
        outer = self._block()
        executor = outer.executor if outer is not None and outer.executor is not None else None
        own = executor is None
        if executor is None:
            executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="oramem-transaction")
        try:
            thread = await loop.run_in_executor(executor, threading.get_ident)
            block = Block(self, thread, executor)
            manager = self.transaction()
            # the worker opens the sync block with the block already in its context
            ctx = contextvars.copy_context()
            ctx.run(_BLOCKS.set, _BLOCKS.get() + (block,))
            await loop.run_in_executor(executor, ctx.run, manager.__enter__)
            with self._entered(block):
                try:
                    yield
                except BaseException as exc:
                    await loop.run_in_executor(executor, ctx.run, manager.__exit__, type(exc), exc, exc.__traceback__)
                    raise
                else:
                    await loop.run_in_executor(executor, ctx.run, manager.__exit__, None, None, None)
        finally:
            if own:
                executor.shutdown(wait=False)

    async def _off_loop(self, fn: Callable[..., R], *args: Any) -> R:
        """Run a sync method off the event loop: in the current async block's worker when
        inside one, else in a worker thread (``asyncio.to_thread``)."""
        block = self._block()
        if block is not None and block.executor is not None:
            ctx = contextvars.copy_context()
            return await asyncio.get_running_loop().run_in_executor(block.executor, ctx.run, fn, *args)
        return await asyncio.to_thread(fn, *args)

    # -- async twins ---------------------------------------------------------------------
    async def open_async(self, settings: StoreSettings, policy: SchemaPolicy) -> StoreSettings:
        return await self._off_loop(self.open, settings, policy)

    async def close_async(self) -> None:
        await self._off_loop(self.close)

    async def add_async(self, request: AddRequest) -> builtins.list[str]:
        return await self._off_loop(self.add, request)

    async def update_async(self, request: UpdateRequest) -> int:
        return await self._off_loop(self.update, request)

    async def delete_async(self, record_type: str, record_id: str, cascade: bool) -> int:
        return await self._off_loop(self.delete, record_type, record_id, cascade)

    async def erase_profile_async(self, record_type: str, record_id: str, tombstone: str) -> tuple[int, dict[str, int]]:
        return await self._off_loop(self.erase_profile, record_type, record_id, tombstone)

    async def delete_thread_async(self, thread_id: str) -> int:
        return await self._off_loop(self.delete_thread, thread_id)

    async def purge_expired_async(self) -> int:
        return await self._off_loop(self.purge_expired)

    async def sync_search_index_async(self) -> None:
        await self._off_loop(self.sync_search_index)

    async def forget_async(self, request: ForgetRequest) -> dict[str, int]:
        return await self._off_loop(self.forget, request)

    async def get_options_async(self) -> dict[str, Any]:
        return await self._off_loop(self.get_options)

    async def set_option_async(self, name: str, text: Optional[str]) -> None:
        await self._off_loop(self.set_option, name, text)

    async def get_async(self, record_type: str, record_id: str) -> Optional[Record]:
        return await self._off_loop(self.get, record_type, record_id)

    async def list_async(self, request: ListRequest) -> builtins.list[Record]:
        return await self._off_loop(self.list, request)

    async def list_thread_messages_async(self, thread_id: str, last_n: Optional[int]) -> builtins.list[Record]:
        return await self._off_loop(self.list_thread_messages, thread_id, last_n)

    async def search_async(self, request: SearchRequest) -> builtins.list[tuple[Record, float]]:
        return await self._off_loop(self.search, request)
