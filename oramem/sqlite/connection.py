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
import sqlite3
import threading
import time
from typing import Iterator, Optional

from ..errors import StoreBusy, StoreError

__all__ = ["Database", "connect_read_only", "is_writable"]

BUSY_TIMEOUT_S = 30.0
#: Page size of database files this engine creates.
NEW_FILE_PAGE_SIZE = 16384


def is_writable(path: str) -> bool:
    """Whether this process may write ``path`` (an existing file) and create the WAL
    journal files beside it."""
    where = os.path.dirname(os.path.abspath(path))
    return os.access(path, os.W_OK) and os.access(where, os.W_OK | os.X_OK)


def connect_read_only(path: str, busy_timeout: float = BUSY_TIMEOUT_S, **kwargs) -> tuple[sqlite3.Connection, bool]:
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
        self._in_transaction = False
        try:
            self._configure()
        except BaseException:
            self.close()
            raise

    def _configure(self) -> None:
        conn = self.conn
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
            raise StoreError("the store is closed; open a new store object")
        return self._conn

    @property
    def closed(self) -> bool:
        return self._conn is None

    def close(self) -> None:
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextlib.contextmanager
    def transaction(self, write: bool, what: str) -> Iterator[sqlite3.Connection]:
        """One transaction: ``BEGIN IMMEDIATE`` for writes, a deferred read snapshot
        otherwise. Any exception rolls back; busy/locked errors become ``StoreBusy``."""
        with self.lock:
            conn = self.conn
            if write and self.read_only:
                raise StoreError(
                    f"{what} needs to write, and {self.path} was opened read-only"
                    f"{' (' + self.read_only_reason + ')' if self.read_only_reason else ''}; "
                    "open it writable (write access to the file and its directory) to change it"
                )
            if self._in_transaction:
                raise StoreError(f"{what} was called from inside another store operation (e.g. a deletion hook)")
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.OperationalError as exc:
                raise _translate(exc, what) from exc
            self._in_transaction = True
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
                self._in_transaction = False


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _translate(exc: sqlite3.OperationalError, what: str) -> Exception:
    if _is_busy(exc):
        return StoreBusy(
            f"{what}: another connection held the database lock for more than "
            f"{BUSY_TIMEOUT_S:g}s ({exc}); retry, or find the long-running writer"
        )
    return StoreError(f"{what} failed in SQLite: {exc}")
