"""The synchronous colour of the Oracle engine: :class:`SyncOracleEngine`, for a pool or
connection from ``oracledb.create_pool()`` / ``oracledb.connect()``.

Each method checks and prepares through :class:`~oramem.oracle.base.OracleEngine` and runs
the one PL/SQL call here. With a single connection the engine commits on that connection
after each write, so give it a connection that does not carry other uncommitted work; calls
from several threads on one connection take turns.

Caller blocks (SC-12, ``store.transaction()``): the block holds one connection (acquired from
the pool, or the given connection, which other threads then wait for) until it ends;
operations inside it run on that connection and do not commit; the block commits once at its
end, or rolls back when an exception leaves it. Each write subprogram sets a savepoint and
rolls back to it on error (``oramem_store.pkb``), so a failed operation inside a block undoes
only itself. Nested blocks are ``SAVEPOINT`` / ``ROLLBACK TO SAVEPOINT``.

The ``*_async`` methods of the :class:`~oramem.engine.Engine` seam are refused with a
``TypeError`` naming the sync method (they would otherwise run in a worker thread): use
:class:`~oramem.oracle.async_engine.AsyncOracleEngine` for asyncio. Static-checked, not run
against Oracle.
"""

from __future__ import annotations

import builtins
import contextlib
import threading
from typing import Any, AsyncIterator, Iterator, Mapping, NoReturn, Optional

import oracledb

from ..engine import Block
from ..errors import StoreSettingsMismatch
from ..requests import AddRequest, ErasureReport, ForgetRequest, ListRequest, SearchRequest, StoreSettings, UpdateRequest
from ..types import PROFILE_TYPES, Record, SchemaPolicy
from .base import _RETURN_TYPES, CALLS, EMBEDDER_MISMATCH, SYNC_SOURCES, ASYNC_SOURCES, OracleEngine, T, _Held, _Prepared, log
from .calls import PlsqlCall
from .errors import package_state_reset, translate

__all__ = ["SyncOracleEngine"]


class SyncOracleEngine(OracleEngine):
    """The synchronous colour: ``SyncOracleEngine(pool_or_connection, ...)`` for an
    ``oracledb.ConnectionPool`` (a connection acquired per call) or one ``oracledb.Connection``
    (calls take turns on it); an async pool or connection is a ``TypeError`` naming
    :class:`~oramem.oracle.async_engine.AsyncOracleEngine`. Keyword arguments: see
    :class:`~oramem.oracle.base.OracleEngine`."""

    _SOURCES = SYNC_SOURCES
    _OTHER_SOURCES = ASYNC_SOURCES
    _OTHER_ENGINE = "AsyncOracleEngine"
    _FACTORIES = "oracledb.create_pool() or oracledb.connect()"

    # -- I/O -----------------------------------------------------------------------------
    def _call_on(self, conn: Any, call: PlsqlCall, binds: dict[str, Any]) -> Any:
        # Big text goes as a temporary CLOB, as on the async path. Not setinputsizes(name=...):
        # callfunc/callproc turn keyword_parameters into positional binds, and named input
        # sizes with positional binds is DPY-2006 (python-oracledb cursor.py
        # _call_get_execute_args, impl/base/cursor.pyx setinputsizes; review F1).
        for n in self._big(binds, call):
            binds[n] = conn.createlob(oracledb.DB_TYPE_CLOB, binds[n])
        with conn.cursor() as cur:
            if call.is_function:
                assert call.returns is not None  # a function's return type is in the call table
                result = cur.callfunc(call.qualified_name, _RETURN_TYPES[call.returns], keyword_parameters=binds)
            else:
                cur.callproc(call.qualified_name, keyword_parameters=binds)
                result = None
            if isinstance(result, oracledb.LOB):
                result = result.read()
            return result

    def _run(self, op: str, commit: bool, **values: Any) -> Any:
        self._check_open()
        block = self._check_block_thread(f"{op}()")
        call = CALLS[op]
        binds = call.bind(**self._resolve(values))
        if block is not None:  # the block commits
            return self._run_on(block.handle.conn, call, binds, False)
        if self._kind == "pool":
            with self._target.acquire() as conn:
                return self._run_on(conn, call, binds, commit, retry=True)
        with self._conn_lock:
            return self._run_on(self._target, call, binds, commit, retry=True)

    def _run_on(self, conn: Any, call: PlsqlCall, binds: dict[str, Any], commit: bool, retry: bool = False) -> Any:
        try:
            result = self._call_on(conn, call, binds)
            if commit:
                conn.commit()
            return result
        except oracledb.DatabaseError as e:
            if commit:
                try:
                    conn.rollback()
                except oracledb.Error:  # the call's error propagates; this one is logged, not lost
                    log.warning("oramem: rolling back after a failed %s failed", call.qualified_name, exc_info=True)
            if retry and package_state_reset(e):
                # D11: outside a block the call did not run and nothing else is undone
                return self._run_on(conn, call, binds, commit)
            mapped = translate(e)
            if mapped is e:
                raise
            raise mapped from e

    def _do(self, prepared: _Prepared[T]) -> T:
        return prepared.decode(self._run(prepared.op, prepared.commit, **prepared.values))

    # -- caller blocks (SC-12) ---------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """SC-12: see the module docstring. Static-checked, not run against Oracle."""
        self._check_open()
        outer = self._check_block_thread("store.transaction()")
        if outer is not None:
            held = outer.handle
            name = self._savepoint(held.depth)
            with held.conn.cursor() as cur:
                cur.execute(f"SAVEPOINT {name}")
            held.depth += 1
            try:
                yield
            except BaseException:
                with held.conn.cursor() as cur:
                    cur.execute(f"ROLLBACK TO SAVEPOINT {name}")
                raise
            finally:
                held.depth -= 1
            return
        with contextlib.ExitStack() as stack:
            if self._kind == "pool":
                # leaving acquire()'s context releases the connection (rolling back what
                # is uncommitted: python-oracledb connection.py Connection.__exit__)
                conn = stack.enter_context(self._target.acquire())
            else:
                stack.enter_context(self._conn_lock)
                conn = self._target
            with self._entered(Block(self, threading.get_ident(), handle=_Held(conn))):
                try:
                    yield
                except BaseException:
                    self._rollback_block(conn)
                    raise
                try:
                    conn.commit()
                except oracledb.DatabaseError as e:
                    self._rollback_block(conn)
                    raise self._translated(e) from e

    @contextlib.contextmanager
    def connection_turn(self) -> Iterator[Any]:
        """A python-oracledb connection of this engine's source for a layer above the store (the
        knowledge layer) to run its own SQL on, outside a block, and to end its own transaction
        on: from a pool, one acquired for the duration (released rolled back if left open); a
        single given connection, held for the duration: other threads' store calls and blocks
        wait for it, and it waits for theirs, so the borrower's commit or rollback never ends
        another thread's transaction (review D3). On a single connection inside a block:
        ``StoreError`` (that connection's transaction belongs to the block: use
        :meth:`sql_connection`)."""
        self._check_open()
        if self._kind == "pool":
            with self._target.acquire() as conn:
                yield conn
            return
        self._refuse_in_block("connection_turn()", "the store's single connection carries the block's "
                              "transaction; use sql_connection()")
        with self._conn_lock:
            yield self._target

    @staticmethod
    def _rollback_block(conn: Any) -> None:
        try:
            conn.rollback()
        except oracledb.Error:  # the original error propagates; a pooled connection is released rolled back
            log.exception("oramem: rolling back a store.transaction() block failed")

    # -- lifecycle -----------------------------------------------------------------------
    def open(self, settings: StoreSettings, policy: SchemaPolicy) -> StoreSettings:
        self._check_open()
        args = self._open_args(settings, policy)
        try:
            text = self._run("open", False, **args)
        except StoreSettingsMismatch as e:
            if getattr(e, "oracle_code", None) != EMBEDDER_MISMATCH:
                raise
            refusal = self._refused_open(settings.memory_store_id,
                                         self._run("describe", False, in_store_id=settings.memory_store_id))
            if refusal is None:
                raise
            raise refusal from e
        result = self._opened(text)
        hook = self._take_pending_hook()
        if hook is not None:
            self._do(hook)
        return result

    def register_deletion_hook(self, hook: Any) -> None:
        """Register the PL/SQL procedure ``hook`` (a name) as the store's deletion hook: at
        once when the store is open, else remembered and registered by :meth:`open`."""
        name = self._hook_name(hook)
        if self._store_id is None:
            self._pending_hook = name
            return
        self._refuse_in_block("register_deletion_hook()", "registration is not transactional")
        self._do(self._prepare_set_hook(name))

    # -- writes --------------------------------------------------------------------------
    def add(self, request: AddRequest) -> builtins.list[str]:
        return self._do(self._prepare_add(request))

    def update(self, request: UpdateRequest) -> int:
        return self._do(self._prepare_update(request))

    def delete(self, record_type: str, record_id: str, cascade: bool) -> int:
        return self._delete(record_type, record_id, cascade, None)[0]

    def erase_profile(self, record_type: str, record_id: str, tombstone: str) -> tuple[int, dict[str, int]]:
        """SC-8.2 / SC-13.3 / SC-13.4 with SC-14.3: a profile's cascade and its erasure-log
        tombstone (``oramem_admin.log_erasure``) in one transaction, after the erasers' lock
        (KC-3.10: a knowledge write waiting for that lock then sees the tombstone).
        Static-checked, not run against Oracle."""
        if record_type not in PROFILE_TYPES:
            raise ValueError(f"erase_profile takes a user_profile or agent_profile, not {record_type!r}")
        # the store checked the refusal first (check_profile_cascade), before the receipt's salt
        return self._delete(record_type, record_id, True, tombstone, checked=True)

    def _cascaders(self, record_type: str) -> builtins.list[Any]:
        return ([e.erase_cascade for e in self._erasers.values() if callable(getattr(e, "erase_cascade", None))]
                if record_type == "user_profile" else [])

    def check_profile_cascade(self, record_type: str, record_id: str) -> None:
        if record_type == "user_profile" and not self._cascaders(record_type):
            # a user's erasure with knowledge tables and nothing to erase her from them is
            # refused before anything is deleted, as forget is (the PL/SQL hook alone leaves
            # what other scopes derived from her rows); a store without them cascades plainly
            if self._do(self._prepare_has_knowledge()):
                raise self._no_cascade_eraser_error(record_id)

    def _delete(self, record_type: str, record_id: str, cascade: bool, tombstone: Optional[str], *,
                checked: bool = False) -> tuple[int, dict[str, int]]:
        prepared = self._prepare_delete(record_type, record_id, cascade)
        profile = cascade and record_type in PROFILE_TYPES
        if not profile:
            return self._do(prepared), {}
        cascades = self._cascaders(record_type)
        if not checked:
            self.check_profile_cascade(record_type, record_id)
        if not cascades and tombstone is None:
            return self._do(prepared), {}
        # SC-13.3: a user's profile cascade erases her as forget does. With an eraser the
        # store's cascade runs with in_reason 'erase', so the PL/SQL knowledge hook deletes
        # nothing (as for a forget); each registered eraser with an ``erase_cascade(event)``
        # (the knowledge layer's) then does all the SQLite hook does, in the cascade's
        # transaction: what cites her events and facts (observations, clusters of any scope)
        # is matched while they are still there, then her scope's rows, her removed threads'
        # rows and her events and facts go. Without such an eraser (one without
        # ``erase_cascade`` is not one; an agent's cascade) the PL/SQL hook erases the
        # knowledge rows (in_reason NULL: a plain cascade). SC-14.3 / KC-3.10: the tombstone
        # (``tombstone``, from trust.erasure) is logged in the same transaction, after the
        # erasers' lock and the cascade, as forget logs its own; a knowledge write waiting for
        # the lock sees it once this commits. Static-checked, not run against Oracle.
        with self.transaction():
            self._lock_erasers()  # the erasure lock order: before the cascade deletes anything
            reply = self._do(self._prepare_profile_cascade(record_type, record_id, "erase" if cascades else None,
                                                           None, commit=True))
            event = self._reply_event(reply, str(self._store_id), "cascade")
            for erase_cascade in cascades:
                erase_cascade(event)
            if tombstone is not None:
                self._do(self._prepare_log_erasure(tombstone, False))
        return int((reply or {}).get("count") or 0), self._forget_counts(event, [], 0)

    def delete_thread(self, thread_id: str) -> int:
        return self._do(self._prepare_delete_thread(thread_id))

    def purge_expired(self) -> int:
        return self._do(self._prepare_purge_expired())

    def check_vectors_of(self, identity: Mapping[str, Any], what: str) -> None:
        """:meth:`Engine.check_vectors_of`: one call of ``oramem_admin.check_embedder`` (in the
        block's transaction when one is open). Static-checked, not run against Oracle."""
        self._do(self._prepare_check_vectors_of(identity, what))

    def check_forget(self) -> None:
        self._refuse_in_block("forget()", "an erasure is one transaction of its own")

    def forget(self, request: ForgetRequest) -> dict[str, int]:
        """SC-8.6 in one transaction: the actor's cascade (``delete_record_json``, whose
        PL/SQL deletion hook runs as for any cascade), every registered eraser, and the
        store records the erasers name. With knowledge tables and no eraser it refuses
        before anything is deleted. Static-checked, not run against Oracle."""
        self.check_forget()
        cascade = self._prepare_forget(request)
        with self.transaction():
            if not self._erasers and self._do(self._prepare_has_knowledge()):
                raise self._no_eraser_error()
            erasers = list(self._erasers.values())
            self._lock_erasers()  # the erasure lock order: before the cascade deletes anything
            snapshots = [e.snapshot() for e in erasers]
            event = self._forget_event(self._do(cascade), request, str(self._store_id))
            reports = [r for r in (e.erase(event, snap) for e, snap in zip(erasers, snapshots))
                       if isinstance(r, ErasureReport)]
            keys = sorted({key for r in reports for key in r.records})
            derived = self._do(self._prepare_delete_keys(keys)) if keys else 0
            if request.tombstone is not None:  # SC-14.3: the tombstone commits with the erasure
                self._do(self._prepare_log_erasure(request.tombstone, False))
        return self._forget_counts(event, reports, derived)

    def _lock_erasers(self) -> None:
        """KC-3.10 on Oracle (read committed): the first statements of an erasure's transaction
        are its erasers' locks (an eraser's optional ``lock()``: the knowledge layer's
        ``LOCK TABLE <ID>_KG_AGENT IN EXCLUSIVE MODE``, which every knowledge write's commit
        meets first at its agent's lock row). A write that committed before the lock was
        granted is seen and deleted by this erasure; one that waits for it sees the erasure's
        tombstone, or its event gone, once the erasure committed. Static-checked, not run
        against Oracle."""
        for eraser in self._erasers.values():
            lock = getattr(eraser, "lock", None)
            if callable(lock):
                lock()

    def sync_search_index(self) -> None:
        self._do(self._prepare_sync_search_index("sync_search_index"))

    def get_options(self) -> dict[str, Any]:
        return self._do(self._prepare_get_options())

    def set_option(self, name: str, text: Optional[str]) -> None:
        self._do(self._prepare_set_option(name, text))

    # -- reads ---------------------------------------------------------------------------
    def get(self, record_type: str, record_id: str) -> Optional[Record]:
        return self._do(self._prepare_get(record_type, record_id, self.in_transaction))

    def list(self, request: ListRequest) -> builtins.list[Record]:
        return self._do(self._prepare_list(request))

    def list_thread_messages(self, thread_id: str, last_n: Optional[int]) -> builtins.list[Record]:
        return self._do(self._prepare_list_thread_messages(thread_id, last_n))

    def search(self, request: SearchRequest) -> builtins.list[tuple[Record, float]]:
        return self._do(self._prepare_search(request))

    # -- the async seam: refused (this colour does no I/O off the calling thread) ---------
    async def open_async(self, settings: StoreSettings, policy: SchemaPolicy) -> NoReturn:
        raise self._wrong_colour("open_async")

    async def add_async(self, request: AddRequest) -> NoReturn:
        raise self._wrong_colour("add_async")

    async def update_async(self, request: UpdateRequest) -> NoReturn:
        raise self._wrong_colour("update_async")

    async def delete_async(self, record_type: str, record_id: str, cascade: bool) -> NoReturn:
        raise self._wrong_colour("delete_async")

    async def delete_thread_async(self, thread_id: str) -> NoReturn:
        raise self._wrong_colour("delete_thread_async")

    async def purge_expired_async(self) -> NoReturn:
        raise self._wrong_colour("purge_expired_async")

    async def forget_async(self, request: ForgetRequest) -> NoReturn:
        raise self._wrong_colour("forget_async")

    async def erase_profile_async(self, record_type: str, record_id: str, tombstone: str) -> NoReturn:
        raise self._wrong_colour("erase_profile_async")

    async def sync_search_index_async(self) -> NoReturn:
        raise self._wrong_colour("sync_search_index_async")

    async def get_options_async(self) -> NoReturn:
        raise self._wrong_colour("get_options_async")

    async def set_option_async(self, name: str, text: Optional[str]) -> NoReturn:
        raise self._wrong_colour("set_option_async")

    async def get_async(self, record_type: str, record_id: str) -> NoReturn:
        raise self._wrong_colour("get_async")

    async def list_async(self, request: ListRequest) -> NoReturn:
        raise self._wrong_colour("list_async")

    async def list_thread_messages_async(self, thread_id: str, last_n: Optional[int]) -> NoReturn:
        raise self._wrong_colour("list_thread_messages_async")

    async def search_async(self, request: SearchRequest) -> NoReturn:
        raise self._wrong_colour("search_async")

    async def register_deletion_hook_async(self, hook: Any) -> NoReturn:
        raise self._wrong_colour("register_deletion_hook_async")

    @contextlib.asynccontextmanager
    async def transaction_async(self) -> AsyncIterator[NoReturn]:
        raise self._wrong_colour("transaction_async")
        yield  # an async generator: the error is raised on entering the block
