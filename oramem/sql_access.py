"""SQLAlchemy access to a store's database for layers built on the store (the knowledge layer):
``store.sql_access()`` returns the engine's :class:`SQLAccess`, and the layer needs nothing
else of the engine (no engine module, no isinstance on engines; issue 25 item 3).

Every write runs inside the store's own transaction block (``store.transaction()``, SC-12):
the store records it adds or changes and the layer's rows commit together or not at all
(KC-7.4), on both engines. SQLite: the store's own connection and lock
(``oramem.sqlite.sql_access``); Oracle: the connection the store's block holds for writes,
a connection of the store's pool (or its connection) for reads (``oramem.oracle.sql_access``).

SQLAlchemy builds and runs statements; it never ends a transaction it does not own. The
DBAPI connection it is given for a store block (:class:`SharedConnection`, through the
documented ``creator`` hook) ignores ``commit()``/``rollback()``/``close()``: the block
commits or rolls back. No SQLAlchemy internals are patched.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

import sqlalchemy as sa

from .errors import StoreBusy, StoreError, is_sqlite_busy

__all__ = ["SQLAccess", "SharedConnection", "lock_agent_id", "translated"]


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
            raise StoreError(f"{what}: a table constraint was violated ({text}); nothing was stored") from exc
        raise StoreError(
            f"{what} failed in the database ({text}); check that the tables exist and match this "
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


def lock_agent_id(agent_id: Optional[str]) -> None:
    """``agent_id`` of :meth:`SQLAccess.write` / ``try_write`` checked: a non-empty string (the
    agent whose lock row the write takes) or None (a write that locks none). ``''`` is a
    caller's bug: Oracle reads it as NULL, so its row lock would lock nothing."""
    if agent_id is not None and (not isinstance(agent_id, str) or not agent_id):
        raise ValueError(f"agent_id of a knowledge write must name the agent whose row it locks, or be None "
                         f"for a write that locks no agent's row; got {agent_id!r} (Oracle reads '' as NULL)")


class SQLAccess:
    """What a layer above the store uses of its database: ``read()`` and ``write()``
    connections (a write joins the store's block), the store's ``lock()``, a ``try_write()``
    that never waits for another writer, the connection a deletion hook runs on, and the
    SQLAlchemy engine (``sa_engine``) for DDL. ``dialect_name`` is SQLAlchemy's."""

    dialect_name = ""
    sa_engine: sa.Engine
    #: the store object this access belongs to
    store: Any
    #: a table with an ``agent_id`` key whose row a write locks (Oracle; set by the knowledge layer)
    agent_table: Any = None
    #: every call runs on one connection under one lock (the embedded SQLite store), so a
    #: layer gains no overlap by running its database work on other threads
    serial = False

    def read(self) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def write(self, what: str, agent_id: Optional[str]) -> contextlib.AbstractContextManager[Any]:
        """One write in the store's block; on Oracle ``agent_id``'s row of ``agent_table`` is
        locked first (one agent's commits in turn, and the erasure lock order, KC-3.10).
        ``None``: a write that locks no agent's row (it changes rows of no agent's knowledge,
        e.g. a job's lease). An empty string is refused: Oracle reads ``''`` as NULL, which
        names no row, so the lock it asks for would be no lock."""
        raise NotImplementedError

    def lock(self) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def try_write(self, what: str, agent_id: Optional[str]) -> contextlib.AbstractContextManager[Any]:
        """Like :meth:`write`, but never waits for another writer: yields ``None`` at once
        when the write lock is taken (KC-5.14: usage tracking of a read, review finding 16)."""
        raise NotImplementedError

    def hook_connection(self, dbapi_conn: Any) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def check_embedder(self, identity: Any, what: str) -> None:
        """Refuse (``StoreSettingsMismatch``; ``what`` says what did not happen) when the store
        records another embedder than ``identity`` (an embedder identity dict): the layer's
        vectors and the store's would be of two spaces (another process's ``reembed``,
        rek47). Inside a :meth:`write` it runs in the write's transaction."""
        self.store.engine.check_vectors_of(identity, what)

    def dbapi_turn(self) -> contextlib.AbstractContextManager[Any]:
        """A DB-API connection the caller commits and rolls back itself (outside any store
        block): a pooled one, or the store's single connection held meanwhile."""
        raise NotImplementedError

    def close(self) -> None:
        """Drop references; the store owns the database connection."""
