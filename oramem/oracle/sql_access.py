"""The Oracle engines' :class:`~oramem.sql_access.SQLAccess` (``store.sql_access()``):
SQLAlchemy over the store's python-oracledb pool, one pooled connection per task; inside a
store block, the block's connection. One agent's writes are serialised by a row lock in the
layer's agent table (``agent_table``). Static-checked, not run against Oracle."""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator, Optional

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from ..errors import StoreError
from ..sql_access import SharedConnection, SQLAccess, lock_agent_id, translated

__all__ = ["OracleAccess"]


class OracleAccess(SQLAccess):
    """Oracle: SQLAlchemy over the store's python-oracledb pool, one pooled connection per
    task; one agent's commit phases are serialised by a row lock in ``<ID>_KG_AGENT``.
    Written against the mapping of ``schema.py``; not run here (no Oracle database)."""

    dialect_name = "oracle"

    def __init__(self, store: Any, agent_table: Any = None, configure: Optional[Callable[[sa.Engine], Any]] = None) -> None:
        target, kind = store.engine.source, store.engine.source_kind
        self.store = store
        self._handlers: dict[int, Any] = {}
        if kind in ("pool", "conn"):
            # NullPool: every SQLAlchemy checkout asks _connect for a DBAPI connection and
            # every checkin gives it back (SQLAlchemy, dialects/oracle/oracledb.py "Using
            # python-oracledb Connection Pooling"). The default QueuePool would keep up to
            # 15 of the store's pooled connections checked out and block the store (F5).
            self.sa_engine = sa.create_engine(
                "oracle+oracledb://", creator=lambda: self._connect(target, kind), poolclass=NullPool)
            if configure is not None:
                configure(self.sa_engine)  # the layer's bind rules (knowledge: JSON columns as OSON)
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
    def write(self, what: str, agent_id: Optional[str]) -> Iterator[sa.Connection]:
        """One knowledge write in the store's block (joined when one is open): the block's
        connection, committed by the block together with the store calls made inside it.
        First ``agent_id``'s row of the agent table is locked (inserted when missing);
        ``None`` locks no row (:meth:`SQLAccess.write`; ``''`` is refused before anything
        runs: Oracle binds it as NULL, and ``agent_id = NULL`` names no row)."""
        lock_agent_id(agent_id)
        with translated(what), self.store.transaction(), self.sa_engine.connect() as conn:
            if self.agent_table is not None and agent_id is not None:
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
    def try_write(self, what: str, agent_id: Optional[str]) -> Iterator[Optional[sa.Connection]]:
        """The agent's lock row with ``FOR UPDATE NOWAIT``: ORA-00054 (row locked by another
        writer) yields ``None`` at once. Static-checked, not run against Oracle."""
        lock_agent_id(agent_id)
        with translated(what), self.store.transaction(), self.sa_engine.connect() as conn:
            t = self.agent_table
            if t is not None and agent_id is not None:
                try:
                    with conn.begin_nested():
                        conn.execute(sa.select(t.c.agent_id).where(t.c.agent_id == agent_id).with_for_update(nowait=True))
                except sa.exc.DBAPIError as exc:
                    if "ORA-00054" not in str(exc):
                        raise
                    yield None
                    return
            yield conn

    def dbapi_turn(self) -> contextlib.AbstractContextManager[Any]:
        """A pooled connection, or the store's single connection held for the caller (other
        threads' store blocks wait, review D3): the store engine's ``connection_turn``."""
        turn: contextlib.AbstractContextManager[Any] = self.store.engine.connection_turn()
        return turn

    @contextlib.contextmanager
    def hook_connection(self, dbapi_conn: Any) -> Iterator[sa.Connection]:
        raise StoreError("on Oracle the deletion hook is the PL/SQL procedure of the store (SC-8.5), not Python")
        yield  # pragma: no cover

    def close(self) -> None:
        # the pool or connection belongs to the store; only SQLAlchemy's wrappers are dropped
        self.sa_engine.dispose(close=False)
