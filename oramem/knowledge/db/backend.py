"""Database access of the knowledge layer: one seam per engine.

Every knowledge write runs inside the store's own transaction block
(``store.transaction()``, SC-12): the store records it adds or changes and the knowledge
rows commit together or not at all (KC-7.4), on both engines.

SQLite — the knowledge tables live in the store's file and use **the store's own
connection** (``store.engine.database``: a ``sqlite3`` connection plus a re-entrant lock). That
is required for ``":memory:"`` stores (each connection would be another database) and it
makes the store's lock the knowledge layer's lock too: every knowledge read or write runs
holding it, writes in the store's ``BEGIN IMMEDIATE`` block (KC-7.5), and deletion hooks run on
the very connection and transaction that deletes store records (SC-8.5). Oracle: SQLAlchemy
over the connection the store's block holds (``store.engine.sql_connection()``) for writes,
over a connection of the store's pool (or its connection) for reads.

SQLAlchemy builds and runs statements; it never ends a transaction it does not own. The
DBAPI connection it is given for a store block (:class:`SharedConnection`, through the
documented ``creator`` hook) ignores ``commit()``/``rollback()``/``close()``: the block
commits or rolls back. No SQLAlchemy internals are patched.

Each concurrent task opens its own SQLAlchemy ``Connection`` object; on SQLite they share
one DBAPI connection under the lock (the store's threading model), so nothing is used by
two tasks at once.
"""

from __future__ import annotations

import contextlib
from oramem.sqlite._sqlite import sqlite3
import threading
from typing import Any, Iterator, Optional

import sqlalchemy as sa
from sqlalchemy.pool import NullPool, StaticPool

from ...errors import StoreBusy, StoreError, is_sqlite_busy
from .schema import bind_json_as_oson

__all__ = ["Backend", "SQLiteBackend", "OracleBackend", "backend_for"]


@contextlib.contextmanager
def translated(what: str) -> Iterator[None]:
    """KC-7.1: database problems surface as the store's ``StoreError`` family with a
    message that says what to do, not as SQLAlchemy/driver exceptions."""
    try:
        yield
    except sa.exc.SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None) or exc
        text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
        if is_sqlite_busy(exc):  # by the error code (SQLITE_BUSY/LOCKED), not the message
            raise StoreBusy(f"{what}: the database stayed locked by another writer ({text}); retry") from exc
        if isinstance(exc, sa.exc.IntegrityError):
            raise StoreError(f"{what}: a constraint of the knowledge tables was violated ({text}); nothing was stored") from exc
        raise StoreError(
            f"{what} failed in the database ({text}); check that the knowledge tables exist and match this "
            "version (open with schema_policy=CREATE_IF_NECESSARY)"
        ) from exc


class SharedConnection:
    """A DBAPI connection lent to SQLAlchemy by its owner (the store).

    ``owns_transaction=False`` (a store block's connection, or the SQLite store connection):
    ``commit()`` and ``rollback()`` do nothing, the owner ends the transaction.
    ``owns_transaction=True`` (a python-oracledb connection given to the store, used
    outside a block, while the store's engine lends it: ``turn``): they are the connection's
    own. ``close()`` never closes it (the owner does); it ends the ``turn`` (a context manager
    entered by the lender), so the store's other threads may use the connection again. An
    ``outputtypehandler`` SQLAlchemy sets (its Oracle dialect does on connect) is kept here
    and given to the cursors it opens, so the owner's own calls never see it."""

    def __init__(self, conn: Any, *, owns_transaction: bool = False, turn: Any = None) -> None:
        self.__dict__.update(_conn=conn, _owns=owns_transaction, outputtypehandler=None, _turn=turn)

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        cur = self._conn.cursor(*args, **kwargs)
        if self.outputtypehandler is not None:
            cur.outputtypehandler = self.outputtypehandler
        return cur

    def commit(self) -> None:
        if self._owns:
            self._conn.commit()

    def rollback(self) -> None:
        if self._owns:
            self._conn.rollback()

    def close(self) -> None:
        """The owner closes the connection; a lent one goes back to the owner."""
        turn, self.__dict__["_turn"] = self._turn, None
        if turn is not None:
            turn.__exit__(None, None, None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class Backend:
    dialect_name = ""
    sa_engine: sa.Engine
    #: the Oracle backend's agent table (set by KnowledgeMemory; unused on SQLite)
    agent_table: Any = None

    def read(self) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def write(self, what: str, agent_id: str) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def lock(self) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def try_write(self, what: str, agent_id: str) -> contextlib.AbstractContextManager[Any]:
        """Like :meth:`write`, but never waits for another writer: yields ``None`` at once
        when the write lock is taken (KC-5.14: usage tracking of a read, review finding 16)."""
        raise NotImplementedError

    def hook_connection(self, dbapi_conn: Any) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def close(self) -> None:
        """Drop references; the store owns the database connection."""


class SQLiteBackend(Backend):
    dialect_name = "sqlite"

    def __init__(self, store: Any) -> None:
        try:
            db = store.engine.database
        except StoreError as exc:
            raise StoreError(f"open the store before KnowledgeMemory: {exc}") from None
        self.db = db
        self.store = store
        # transactions are the store's (store.transaction(): BEGIN IMMEDIATE ... COMMIT /
        # ROLLBACK); SQLAlchemy only builds and runs statements on the shared connection.
        shared = SharedConnection(db.conn)
        self.sa_engine = sa.create_engine(
            "sqlite://", creator=lambda: shared, poolclass=StaticPool, pool_reset_on_return=None,
            module=sqlite3,  # the engine's DB-API module, so SQLAlchemy wraps its exceptions
        )

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        with self.db.lock:
            yield

    @contextlib.contextmanager
    def read(self) -> Iterator[sa.Connection]:
        with self.db.lock, translated("knowledge read"):
            with self.sa_engine.connect() as conn:
                yield conn

    @contextlib.contextmanager
    def write(self, what: str, agent_id: str) -> Iterator[sa.Connection]:
        """One knowledge write: the store's block (joined when one is open), so store
        operations called inside commit with these rows."""
        with translated(what), self.store.transaction():
            with self.sa_engine.connect() as conn:
                yield conn

    @contextlib.contextmanager
    def try_write(self, what: str, agent_id: str) -> Iterator[Optional[sa.Connection]]:
        db = self.db
        # the in-process lock is the one every read of this store takes too (the store's
        # threading model); what a read must never wait for is another process's write lock
        db.lock.acquire()
        try:
            conn = db.conn
            if conn.in_transaction:
                # this thread is inside a store block: join it (no wait, the lock is ours)
                with self.write(what, agent_id) as joined:
                    yield joined
                return
            (old,) = conn.execute("PRAGMA busy_timeout").fetchone()
            conn.execute("PRAGMA busy_timeout = 0")
            try:
                conn.execute("BEGIN IMMEDIATE")
                began = True
            except sqlite3.OperationalError as exc:
                if not is_sqlite_busy(exc):
                    raise
                began = False  # another process holds the write lock
            finally:
                conn.execute(f"PRAGMA busy_timeout = {int(old)}")
            if not began:
                yield None
                return
            try:
                with translated(what), self.sa_engine.connect() as c:
                    yield c
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        finally:
            db.lock.release()

    @contextlib.contextmanager
    def hook_connection(self, dbapi_conn: Any) -> Iterator[sa.Connection]:
        if dbapi_conn is not self.db.conn:
            raise StoreError("deletion hook called on a connection the knowledge layer does not know")
        with self.sa_engine.connect() as conn:
            yield conn


class OracleBackend(Backend):
    """Oracle: SQLAlchemy over the store's python-oracledb pool, one pooled connection per
    task; one agent's commit phases are serialised by a row lock in ``<ID>_KG_AGENT``.
    Written against the mapping of ``schema.py``; not run here (no Oracle database)."""

    dialect_name = "oracle"

    def __init__(self, store: Any, agent_table: Any = None) -> None:
        target, kind = store.engine.source, store.engine.source_kind
        self.store = store
        self._handlers: dict[int, Any] = {}
        if kind in ("pool", "conn"):
            # NullPool: every SQLAlchemy checkout asks _connect for a DBAPI connection and
            # every checkin gives it back (SQLAlchemy, dialects/oracle/oracledb.py "Using
            # python-oracledb Connection Pooling"). The default QueuePool would keep up to
            # 15 of the store's pooled connections checked out and block the store (F5).
            self.sa_engine = bind_json_as_oson(sa.create_engine(
                "oracle+oracledb://", creator=lambda: self._connect(target, kind), poolclass=NullPool))
            # SQLAlchemy's on_connect sets its outputtypehandler on each connection: the
            # store's own handler (if any) is put back before the connection goes home.
            sa.event.listen(self.sa_engine, "checkin", self._restore_handler)
        elif kind in ("async_pool", "async_conn"):
            raise StoreError(
                "KnowledgeMemory on Oracle needs a synchronous python-oracledb pool or connection in this version; "
                "open the OracleDBMemoryStore with oracledb.create_pool(...)"
            )
        else:
            raise StoreError("this OracleDBMemoryStore does not expose its connection source to the knowledge layer")
        self.agent_table = agent_table
        self._local = threading.RLock()

    def _connect(self, target: Any, kind: str) -> Any:
        """Inside a store block: its connection (the block commits); outside: a connection
        of the store's pool, or the store's single connection, held from SQLAlchemy's checkout
        to its checkin (``connection_turn``), so SQLAlchemy's rollback on checkin (and on first
        connect) ends only its own work, never another thread's store block (review D3)."""
        engine = self.store.engine
        if engine.in_transaction:
            return SharedConnection(engine.sql_connection())
        if kind == "conn":
            turn = engine.connection_turn()
            conn = turn.__enter__()
            return SharedConnection(conn, owns_transaction=True, turn=turn)
        return self._acquire(target)

    def _acquire(self, pool: Any) -> Any:
        conn = pool.acquire()
        self._handlers[id(conn)] = conn.outputtypehandler
        return conn

    def _restore_handler(self, dbapi_conn: Any, record: Any) -> None:
        if dbapi_conn is not None and id(dbapi_conn) in self._handlers:
            dbapi_conn.outputtypehandler = self._handlers.pop(id(dbapi_conn))

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        with self._local:
            yield

    @contextlib.contextmanager
    def read(self) -> Iterator[sa.Connection]:
        with translated("knowledge read"), self.sa_engine.connect() as conn:
            yield conn

    @contextlib.contextmanager
    def write(self, what: str, agent_id: str) -> Iterator[sa.Connection]:
        """One knowledge write in the store's block (joined when one is open): the block's
        connection, committed by the block together with the store calls made inside it."""
        with translated(what), self.store.transaction(), self.sa_engine.connect() as conn:
            if self.agent_table is not None:
                t = self.agent_table
                exists = conn.execute(sa.select(t.c.agent_id).where(t.c.agent_id == agent_id)).first()
                if exists is None:
                    try:
                        with conn.begin_nested():
                            conn.execute(sa.insert(t).values(agent_id=agent_id))
                    except sa.exc.IntegrityError:
                        pass
                conn.execute(sa.select(t.c.agent_id).where(t.c.agent_id == agent_id).with_for_update())
            yield conn

    @contextlib.contextmanager
    def try_write(self, what: str, agent_id: str) -> Iterator[Optional[sa.Connection]]:
        """The agent's lock row with ``FOR UPDATE NOWAIT``: ORA-00054 (row locked by another
        writer) yields ``None`` at once. Static-checked, not run against Oracle."""
        with translated(what), self.store.transaction(), self.sa_engine.connect() as conn:
            t = self.agent_table
            if t is not None:
                try:
                    with conn.begin_nested():
                        conn.execute(sa.select(t.c.agent_id).where(t.c.agent_id == agent_id).with_for_update(nowait=True))
                except sa.exc.DBAPIError as exc:
                    if "ORA-00054" not in str(exc):
                        raise
                    yield None
                    return
            yield conn

    @contextlib.contextmanager
    def hook_connection(self, dbapi_conn: Any) -> Iterator[sa.Connection]:
        raise StoreError("on Oracle the deletion hook is the PL/SQL procedure of the store (SC-8.5), not Python")
        yield  # pragma: no cover

    def close(self) -> None:
        # the pool or connection belongs to the store; only SQLAlchemy's wrappers are dropped
        self.sa_engine.dispose(close=False)


def backend_for(store: Any) -> Backend:
    from ...store import OracleDBMemoryStore, SQLiteMemoryStore

    if isinstance(store, SQLiteMemoryStore):
        return SQLiteBackend(store)
    if isinstance(store, OracleDBMemoryStore):
        return OracleBackend(store)
    raise TypeError(f"store must be an open SQLiteMemoryStore or OracleDBMemoryStore, got {type(store).__name__}")
