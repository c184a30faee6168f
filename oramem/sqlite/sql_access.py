"""The SQLite engine's :class:`~oramem.sql_access.SQLAccess` (``store.sql_access()``): the
layer's tables live in the store's file and use **the store's own connection** (a ``sqlite3``
connection plus a re-entrant lock). That is required for ``":memory:"`` stores (each
connection would be another database) and it makes the store's lock the layer's lock too:
every read or write runs holding it, writes in the store's ``BEGIN IMMEDIATE`` block (KC-7.5),
and deletion hooks run on the very connection and transaction that deletes store records
(SC-8.5). Each concurrent task opens its own SQLAlchemy ``Connection`` object; they share one
DBAPI connection under the lock (the store's threading model)."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional

import sqlalchemy as sa
from sqlalchemy.pool import StaticPool

from ..errors import StoreError, is_sqlite_busy
from ..sql_access import SharedConnection, SQLAccess, lock_agent_id, translated
from ._sqlite import sqlite3

__all__ = ["SQLiteAccess"]


class SQLiteAccess(SQLAccess):
    dialect_name = "sqlite"
    serial = True  # the store's one connection, under its lock

    def __init__(self, store: Any, configure: Optional[Callable[[sa.Engine], Any]] = None) -> None:
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
        if configure is not None:
            configure(self.sa_engine)

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
    def write(self, what: str, agent_id: Optional[str]) -> Iterator[sa.Connection]:
        """One knowledge write: the store's block (joined when one is open), so store
        operations called inside commit with these rows. SQLite serialises writers, so
        ``agent_id`` locks nothing here; it is checked as on Oracle (:func:`lock_agent_id`)."""
        lock_agent_id(agent_id)
        with translated(what), self.store.transaction():
            with self.sa_engine.connect() as conn:
                yield conn

    @contextlib.contextmanager
    def try_write(self, what: str, agent_id: Optional[str]) -> Iterator[Optional[sa.Connection]]:
        lock_agent_id(agent_id)
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
