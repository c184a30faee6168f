"""The SQLite connection of one engine and its transactions.

Threading model: one ``sqlite3`` connection per engine, shared by every thread under a
re-entrant lock (``check_same_thread=False``). Each engine call holds the lock for its
whole transaction, so calls from several threads are serialised inside a process, and
the in-memory vector cache, which lives next to the connection, needs no other lock. The
same shape serves ``":memory:"``, where every connection would be a separate database.

Processes share a file through SQLite's own locking: WAL journal, writes in ``BEGIN
IMMEDIATE`` (so a writer takes the write lock before reading what it will change) and a
busy timeout; a lock held longer than the timeout is :class:`oramem.StoreBusy`.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
from oramem.sqlite._sqlite import sqlite3
import threading
import time
from typing import Any, Callable, Iterator, Optional

from ..errors import StoreBusy, StoreClosed, StoreError, is_sqlite_busy

__all__ = ["Database", "connect_read_only", "is_writable"]

BUSY_TIMEOUT_S = 30.0
#: Page size of database files this engine creates.
NEW_FILE_PAGE_SIZE = 16384
#: Bytes of the database file SQLite reads through a memory map (``PRAGMA mmap_size``)
#: instead of ``read()`` into its 2 MiB page cache. Random lookups into a large store
#: (a keyword search joins ~100-300 retrieval rows, each on its own page of the chunk
#: table) then cost a memory access instead of a system call and a 16 KiB copy once the
#: page is in the OS cache. Reads only: SQLite still writes through ``write()`` and the
#: WAL, so durability and crash behaviour are unchanged (bench/results/FINDINGS.md).
MMAP_SIZE = 1 << 30


def is_writable(path: str) -> bool:
    """Whether this process may write ``path`` (an existing file) and create the WAL
    journal files beside it."""
    where = os.path.dirname(os.path.abspath(path))
    return os.access(path, os.W_OK) and os.access(where, os.W_OK | os.X_OK)


def connect_read_only(path: str, busy_timeout: float = BUSY_TIMEOUT_S, **kwargs: Any) -> tuple[sqlite3.Connection, bool]:
    """A read-only connection to an existing file (``mode=ro``), and whether it had to be
    opened ``immutable``: a WAL database whose ``-shm``/``-wal`` files cannot be created
    (read-only directory) can only be read that way, on the promise that nobody writes the
    file meanwhile. Nothing is written, no journal file is created."""
    uri = pathlib.Path(path).resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout, **kwargs)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn, False
    except sqlite3.OperationalError as exc:
        conn.close()
        low = str(exc).lower()
        where = os.path.dirname(os.path.abspath(path))
        if ("readonly" not in low and "unable to open" not in low) or os.access(where, os.W_OK | os.X_OK):
            raise
    conn = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=busy_timeout, **kwargs)
    return conn, True


class Database:
    """A connection, its lock and transaction helpers. ``read_only``: a ``mode=ro``
    connection (see :func:`connect_read_only`) that refuses write transactions."""

    def __init__(self, path: str, busy_timeout: float = BUSY_TIMEOUT_S, *, read_only: bool = False) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.lock = threading.RLock()
        self.read_only = read_only
        self.immutable = False
        self.read_only_reason: Optional[str] = None
        self._conn: Optional[sqlite3.Connection]
        if read_only:
            self._conn, self.immutable = connect_read_only(
                path, busy_timeout, isolation_level=None, check_same_thread=False
            )
        else:
            self._conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        #: a store operation is running (its deletion hooks must not start another)
        self._op = False
        #: nesting depth of caller blocks (store.transaction()); 0 = none
        self._depth = 0
        #: SQLite ended the block's transaction by itself after an error
        self._broken = False
        self._before_commit: list[Callable[[], None]] = []
        self._after_rollback: list[Callable[[], None]] = []
        try:
            self._configure()
        except BaseException:
            self.close()
            raise

    def _configure(self) -> None:
        conn = self.conn
        conn.execute(f"PRAGMA mmap_size={MMAP_SIZE}")
        if self.read_only:
            conn.execute("PRAGMA query_only=ON")
            conn.execute("PRAGMA foreign_keys=OFF")
            return
        if self.path != ":memory:" and not self.path.startswith("file::memory:"):
            # A new (empty) file gets larger pages: fewer B-tree pages per 1.5 KB vector
            # row, less WAL and checkpoint work per insert (bench/results/FINDINGS.md §3).
            # It must be set before the first write and before WAL mode; existing files
            # keep theirs.
            if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
                conn.execute(f"PRAGMA page_size={NEW_FILE_PAGE_SIZE}")
            # Switching to WAL needs a moment without other writers; retry within the timeout.
            deadline = time.monotonic() + self.busy_timeout
            while True:
                try:
                    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                    break
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc) or time.monotonic() > deadline:
                        raise _translate(exc, "switching the database to WAL mode") from exc
                    time.sleep(0.05)
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path!r} could not be put in WAL journal mode (got {mode!r})")
        conn.execute("PRAGMA synchronous=NORMAL")
        # deleted content is overwritten with zeros, not left in free pages (erasure)
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("PRAGMA foreign_keys=OFF")

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreClosed("the store is closed; open a new store object")
        return self._conn

    @property
    def closed(self) -> bool:
        return self._conn is None

    def close(self) -> None:
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- transactions ------------------------------------------------------------------
    @property
    def in_block(self) -> bool:
        """True while a :meth:`block` (``store.transaction()``) is open on this connection."""
        return self._depth > 0

    def on_block_end(self, before_commit: Callable[[], None] | None = None,
                     after_rollback: Callable[[], None] | None = None) -> None:
        """Inside a block: run ``before_commit`` once, just before the outermost COMMIT
        (inside the transaction), and ``after_rollback`` after any rollback of the block
        or of one of its nested levels. Callbacks are keyed by identity (registered once)."""
        if before_commit is not None and before_commit not in self._before_commit:
            self._before_commit.append(before_commit)
        if after_rollback is not None and after_rollback not in self._after_rollback:
            self._after_rollback.append(after_rollback)

    def _rolled_back(self) -> None:
        for callback in list(self._after_rollback):
            callback()

    def _refuse_read_only(self, what: str) -> None:
        if self.read_only:
            raise StoreError(
                f"{what} needs to write, and {self.path} was opened read-only"
                f"{' (' + self.read_only_reason + ')' if self.read_only_reason else ''}; "
                "open it writable (write access to the file and its directory) to change it"
            )

    @contextlib.contextmanager
    def block(self) -> Iterator[sqlite3.Connection]:
        """A caller's transaction (SC-12): ``BEGIN IMMEDIATE`` at the outermost level, a
        SAVEPOINT at each nested one; store operations run inside it join it (see
        :meth:`transaction`). Holds the lock for the whole block, so other threads of this
        process wait until it ends. An exception rolls back the level it leaves."""
        with self.lock:
            conn = self.conn
            self._refuse_read_only("store.transaction()")
            if self._op:
                raise StoreError("store.transaction() was opened from inside a store operation (e.g. a deletion hook)")
            if self._depth == 0:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError as exc:
                    raise _translate(exc, "store.transaction()") from exc
                self._depth, self._broken = 1, False
                try:
                    yield conn
                    self._check_intact()
                    for callback in list(self._before_commit):
                        callback()
                    conn.execute("COMMIT")
                except BaseException as exc:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    self._rolled_back()
                    if isinstance(exc, sqlite3.OperationalError):
                        raise _translate(exc, "store.transaction()") from exc
                    raise
                finally:
                    self._depth = 0
                    self._before_commit.clear()
                    self._after_rollback.clear()
                return
            self._check_intact()
            name = f"oramem_block_{self._depth}"
            conn.execute(f"SAVEPOINT {name}")  # name: a fixed prefix and a number
            self._depth += 1
            try:
                yield conn
                self._check_intact()
                conn.execute(f"RELEASE {name}")
            except BaseException:
                if conn.in_transaction and not self._broken:
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
                self._rolled_back()
                raise
            finally:
                self._depth -= 1

    def _check_intact(self) -> None:
        if self._broken or not self.conn.in_transaction:
            self._broken = True
            raise StoreError(
                "SQLite rolled the whole store.transaction() back after an error inside it; nothing of the "
                "block is stored: leave the block and run it again"
            )

    @contextlib.contextmanager
    def transaction(self, write: bool, what: str) -> Iterator[sqlite3.Connection]:
        """One store operation. Outside a :meth:`block`: one transaction, ``BEGIN
        IMMEDIATE`` for writes, a deferred read snapshot otherwise; inside a block: a
        SAVEPOINT for writes (the operation stays atomic, its changes commit with the
        block), nothing for reads (they see the block's writes). Any exception rolls the
        operation back; busy/locked errors become ``StoreBusy``."""
        with self.lock:
            conn = self.conn
            if write:
                self._refuse_read_only(what)
            if self._op:
                raise StoreError(f"{what} was called from inside another store operation (e.g. a deletion hook)")
            if self._depth:
                self._check_intact()
                self._op = True
                try:
                    if not write:
                        yield conn
                        return
                    conn.execute("SAVEPOINT oramem_op")
                    try:
                        yield conn
                        conn.execute("RELEASE oramem_op")
                    except BaseException as exc:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK TO oramem_op")
                            conn.execute("RELEASE oramem_op")
                        else:
                            self._broken = True
                        if isinstance(exc, sqlite3.OperationalError):
                            raise _translate(exc, what) from exc
                        raise
                finally:
                    self._op = False
                return
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.OperationalError as exc:
                raise _translate(exc, what) from exc
            self._op = True
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError):
                    raise _translate(exc, what) from exc
                raise
            finally:
                self._op = False


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    return is_sqlite_busy(exc)  # by the error code (SQLITE_BUSY/LOCKED), not the message


def _translate(exc: sqlite3.OperationalError, what: str) -> Exception:
    if _is_busy(exc):
        return StoreBusy(
            f"{what}: another connection held the database lock for more than "
            f"{BUSY_TIMEOUT_S:g}s ({exc}); retry, or find the long-running writer"
        )
    if "database or disk is full" in str(exc):
        # finding 21: say that space is what is missing, and for an erasure why it needs any
        why = (" (an erasure writes before it frees: it rewrites the keyword index without the erased words, so it "
               "needs free space about the size of that index)") if what == "forget" else ""
        return StoreError(
            f"{what} failed: the disk holding the database is full{why}; nothing was changed; free some disk space "
            f"there (or raise the quota) and run it again ({exc})"
        )
    return StoreError(f"{what} failed in SQLite: {exc}")
