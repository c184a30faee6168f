"""The asynchronous colour of the Oracle engine: :class:`AsyncOracleEngine`, for a pool or
connection from ``oracledb.create_pool_async()`` / ``oracledb.connect_async()``:
python-oracledb's native asyncio (thin mode), never threads.

The twin of :class:`~oramem.oracle.sync_engine.SyncOracleEngine` over the same ``_prepare_*``
methods of :class:`~oramem.oracle.base.OracleEngine`; caller blocks
(``store.transaction_async()``) hold one connection as the sync ones do, and the block's tasks
take turns on it. A deletion hook remembered before the store opened is registered by the
next call. The synchronous methods of the :class:`~oramem.engine.Engine` seam are refused
with a ``TypeError`` naming the ``*_async`` one. Static-checked, not run against Oracle.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import threading
from typing import Any, AsyncIterator, Iterator, NoReturn, Optional

import oracledb

from ..engine import Block
from ..errors import CapabilityError, StoreSettingsMismatch
from ..requests import AddRequest, ForgetRequest, ListRequest, SearchRequest, StoreSettings, UpdateRequest
from ..types import Record, SchemaPolicy
from .base import _RETURN_TYPES, ASYNC_SOURCES, CALLS, EMBEDDER_MISMATCH, SYNC_SOURCES, OracleEngine, T, _Held, _Prepared, log
from .calls import PlsqlCall
from .errors import package_state_reset, translate

__all__ = ["AsyncOracleEngine"]


class AsyncOracleEngine(OracleEngine):
    """The asynchronous colour: ``AsyncOracleEngine(pool_or_connection, ...)`` for an
    ``oracledb.AsyncConnectionPool`` or one ``oracledb.AsyncConnection``, python-oracledb's
    native asyncio (thin mode), never threads; a sync pool or connection is a ``TypeError``
    naming :class:`~oramem.oracle.sync_engine.SyncOracleEngine`. Keyword arguments: see
    :class:`~oramem.oracle.base.OracleEngine`."""

    _SOURCES = ASYNC_SOURCES
    _OTHER_SOURCES = SYNC_SOURCES
    _OTHER_ENGINE = "SyncOracleEngine"
    _FACTORIES = "oracledb.create_pool_async() or oracledb.connect_async()"

    # -- I/O -----------------------------------------------------------------------------
    async def _call_on_async(self, conn: Any, call: PlsqlCall, binds: dict[str, Any]) -> Any:
        for n in self._big(binds, call):  # AsyncCursor: bind big text as a temporary CLOB
            binds[n] = await conn.createlob(oracledb.DB_TYPE_CLOB, binds[n])
        with conn.cursor() as cur:
            if call.is_function:
                assert call.returns is not None  # a function's return type is in the call table
                rtype = _RETURN_TYPES[call.returns]
                result = await cur.callfunc(call.qualified_name, rtype, keyword_parameters=binds)
            else:
                await cur.callproc(call.qualified_name, keyword_parameters=binds)
                result = None
            if isinstance(result, oracledb.AsyncLOB):
                result = await result.read()
            return result

    async def _run_async(self, op: str, commit: bool, **values: Any) -> Any:
        self._check_open()
        if op not in ("open", "set_deletion_hook"):
            hook = self._take_pending_hook()
            if hook is not None:
                await self._do(hook)
        block = self._check_block_thread(f"{op}_async()")
        call = CALLS[op]
        binds = call.bind(**self._resolve(values))
        if block is not None:  # the block commits; its tasks take turns on its connection
            async with block.handle.lock:
                return await self._run_on_async(block.handle.conn, call, binds, False)
        if self._kind == "async_pool":
            async with self._target.acquire() as conn:
                return await self._run_on_async(conn, call, binds, commit, retry=True)
        async with self._conn_lock_async():
            return await self._run_on_async(self._target, call, binds, commit, retry=True)

    async def _run_on_async(self, conn: Any, call: PlsqlCall, binds: dict[str, Any], commit: bool,
                            retry: bool = False) -> Any:
        try:
            result = await self._call_on_async(conn, call, binds)
            if commit:
                await conn.commit()
            return result
        except oracledb.DatabaseError as e:
            if commit:
                try:
                    await conn.rollback()
                except oracledb.Error:  # the call's error propagates; this one is logged, not lost
                    log.warning("oramem: rolling back after a failed %s failed", call.qualified_name, exc_info=True)
            if retry and package_state_reset(e):
                # D11: outside a block the call did not run and nothing else is undone
                return await self._run_on_async(conn, call, binds, commit)
            mapped = translate(e)
            if mapped is e:
                raise
            raise mapped from e

    def _conn_lock_async(self) -> asyncio.Lock:
        if self._async_conn_lock is None:
            self._async_conn_lock = asyncio.Lock()
        return self._async_conn_lock

    async def _do(self, prepared: _Prepared[T]) -> T:
        return prepared.decode(await self._run_async(prepared.op, prepared.commit, **prepared.values))

    # -- caller blocks (SC-12) ---------------------------------------------------------
    @contextlib.asynccontextmanager
    async def transaction_async(self) -> AsyncIterator[None]:
        """Async twin of :meth:`SyncOracleEngine.transaction` (python-oracledb's native asyncio)."""
        self._check_open()
        outer = self._check_block_thread("store.transaction_async()")
        if outer is not None:
            held = outer.handle
            name = self._savepoint(held.depth)
            async with held.lock:
                with held.conn.cursor() as cur:
                    await cur.execute(f"SAVEPOINT {name}")
            held.depth += 1
            try:
                yield
            except BaseException:
                async with held.lock:
                    with held.conn.cursor() as cur:
                        await cur.execute(f"ROLLBACK TO SAVEPOINT {name}")
                raise
            finally:
                held.depth -= 1
            return
        async with contextlib.AsyncExitStack() as stack:
            if self._kind == "async_pool":
                conn = await stack.enter_async_context(self._target.acquire())
            else:
                await stack.enter_async_context(self._conn_lock_async())
                conn = self._target
            with self._entered(Block(self, threading.get_ident(), handle=_Held(conn, asyncio.Lock()))):
                try:
                    yield
                except BaseException:
                    await self._rollback_block_async(conn)
                    raise
                try:
                    await conn.commit()
                except oracledb.DatabaseError as e:
                    await self._rollback_block_async(conn)
                    raise self._translated(e) from e

    @staticmethod
    async def _rollback_block_async(conn: Any) -> None:
        try:
            await conn.rollback()
        except oracledb.Error:
            log.exception("oramem: rolling back a store.transaction_async() block failed")

    # -- lifecycle -----------------------------------------------------------------------
    async def open_async(self, settings: StoreSettings, policy: SchemaPolicy) -> StoreSettings:
        self._check_open()
        args = self._open_args(settings, policy)
        try:
            text = await self._run_async("open", False, **args)
        except StoreSettingsMismatch as e:
            if getattr(e, "oracle_code", None) != EMBEDDER_MISMATCH:
                raise
            described = await self._run_async("describe", False, in_store_id=settings.memory_store_id)
            refusal = self._refused_open(settings.memory_store_id, described)
            if refusal is None:
                raise
            raise refusal from e
        result = self._opened(text)
        hook = self._take_pending_hook()
        if hook is not None:
            await self._do(hook)
        return result

    async def register_deletion_hook_async(self, hook: Any) -> None:
        """Register the PL/SQL procedure ``hook`` (a name) as the store's deletion hook: at
        once when the store is open, else remembered and registered by :meth:`open_async`."""
        name = self._hook_name(hook)
        if self._store_id is None:
            self._pending_hook = name
            return
        self._refuse_in_block("register_deletion_hook_async()", "registration is not transactional")
        await self._do(self._prepare_set_hook(name))

    # -- writes --------------------------------------------------------------------------
    async def add_async(self, request: AddRequest) -> builtins.list[str]:
        return await self._do(self._prepare_add(request))

    async def update_async(self, request: UpdateRequest) -> int:
        return await self._do(self._prepare_update(request))

    async def delete_async(self, record_type: str, record_id: str, cascade: bool) -> int:
        prepared = self._prepare_delete(record_type, record_id, cascade)
        # SC-13.3: a user's profile cascade is her erasure; the knowledge layer's part of it
        # runs through SQLAlchemy on a synchronous connection (no eraser here, as for
        # forget_async), so on a store with knowledge tables it is refused before any delete
        if cascade and record_type == "user_profile":
            has_knowledge: int = await self._do(self._prepare_has_knowledge())
            if has_knowledge:
                raise self._no_cascade_eraser_error(record_id)
        return await self._do(prepared)

    async def delete_thread_async(self, thread_id: str) -> int:
        return await self._do(self._prepare_delete_thread(thread_id))

    async def purge_expired_async(self) -> int:
        return await self._do(self._prepare_purge_expired())

    async def sync_search_index_async(self) -> None:
        await self._do(self._prepare_sync_search_index("sync_search_index_async"))

    async def get_options_async(self) -> dict[str, Any]:
        return await self._do(self._prepare_get_options())

    async def set_option_async(self, name: str, text: Optional[str]) -> None:
        await self._do(self._prepare_set_option(name, text))

    async def forget_async(self, request: ForgetRequest) -> dict[str, int]:
        # The knowledge layer's erasure runs on Oracle through SQLAlchemy, which needs a
        # synchronous connection (KnowledgeMemory refuses an async pool): refused before any call.
        raise CapabilityError(
            "forget_async on an asynchronous Oracle pool is not supported in this version: open the store with a "
            "synchronous pool (oracledb.create_pool) and call forget(), or forget_async() through KnowledgeMemory there"
        )

    async def erase_profile_async(self, record_type: str, record_id: str, tombstone: str) -> tuple[int, dict[str, int]]:
        # no erasure log on an asynchronous pool (trust.erasure keeps none there, as for
        # forget_async): the store's profile cascade calls delete_async instead
        raise CapabilityError(
            "an erasure-log tombstone for a profile cascade is not supported on an asynchronous Oracle pool in this "
            "version: open the store with a synchronous pool (oracledb.create_pool)"
        )

    # -- reads ---------------------------------------------------------------------------
    async def get_async(self, record_type: str, record_id: str) -> Optional[Record]:
        return await self._do(self._prepare_get(record_type, record_id, self.in_transaction))

    async def list_async(self, request: ListRequest) -> builtins.list[Record]:
        return await self._do(self._prepare_list(request))

    async def list_thread_messages_async(self, thread_id: str, last_n: Optional[int]) -> builtins.list[Record]:
        return await self._do(self._prepare_list_thread_messages(thread_id, last_n))

    async def search_async(self, request: SearchRequest) -> builtins.list[tuple[Record, float]]:
        return await self._do(self._prepare_search(request))

    # -- the sync seam: refused (this colour never blocks the event loop) -----------------
    def open(self, settings: StoreSettings, policy: SchemaPolicy) -> NoReturn:
        raise self._wrong_colour("open")

    def add(self, request: AddRequest) -> NoReturn:
        raise self._wrong_colour("add")

    def update(self, request: UpdateRequest) -> NoReturn:
        raise self._wrong_colour("update")

    def delete(self, record_type: str, record_id: str, cascade: bool) -> NoReturn:
        raise self._wrong_colour("delete")

    def delete_thread(self, thread_id: str) -> NoReturn:
        raise self._wrong_colour("delete_thread")

    def purge_expired(self) -> NoReturn:
        raise self._wrong_colour("purge_expired")

    def forget(self, request: ForgetRequest) -> NoReturn:
        raise self._wrong_colour("forget")

    def erase_profile(self, record_type: str, record_id: str, tombstone: str) -> NoReturn:
        raise self._wrong_colour("erase_profile")

    def sync_search_index(self) -> NoReturn:
        raise self._wrong_colour("sync_search_index")

    def get_options(self) -> NoReturn:
        raise self._wrong_colour("get_options")

    def set_option(self, name: str, text: Optional[str]) -> NoReturn:
        raise self._wrong_colour("set_option")

    def get(self, record_type: str, record_id: str) -> NoReturn:
        raise self._wrong_colour("get")

    def list(self, request: ListRequest) -> NoReturn:
        raise self._wrong_colour("list")

    def list_thread_messages(self, thread_id: str, last_n: Optional[int]) -> NoReturn:
        raise self._wrong_colour("list_thread_messages")

    def search(self, request: SearchRequest) -> NoReturn:
        raise self._wrong_colour("search")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[NoReturn]:
        raise self._wrong_colour("transaction")
        yield  # a generator: the error is raised on entering the block
