"""The retrieval audit's table on SQLite (SC-16, :mod:`oramem.trust.audit`): one catalog-level
table keyed by store id, created by the first audited read, emptied of a store's rows when the
store is dropped or recreated."""

from __future__ import annotations

import json
from typing import Iterable

from ._sqlite import sqlite3
from .erasure import LOG_TABLE

__all__ = ["AUDIT_TABLE", "AUDIT_DDL", "audit_exists", "drop_entries", "erase_subject", "receipt_count", "thread_open",
           "tombstones"]

AUDIT_TABLE = "oramem_audit_log"
AUDIT_DDL = (
    f"CREATE TABLE IF NOT EXISTS {AUDIT_TABLE} ("
    "store_id TEXT NOT NULL, request_id TEXT NOT NULL, at TEXT NOT NULL, surface TEXT NOT NULL, "
    "user_id TEXT, agent_id TEXT, thread_id TEXT, query_hash TEXT, detail TEXT NOT NULL, "
    "PRIMARY KEY (store_id, request_id)) WITHOUT ROWID",
    f"CREATE INDEX IF NOT EXISTS {AUDIT_TABLE}_at ON {AUDIT_TABLE} (store_id, at)",
    f"CREATE INDEX IF NOT EXISTS {AUDIT_TABLE}_user ON {AUDIT_TABLE} (store_id, user_id)",
)


def audit_exists(conn: sqlite3.Connection) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (AUDIT_TABLE,)
    ).fetchone() is not None


def drop_entries(conn: sqlite3.Connection, store_id: str) -> None:
    """Inside the transaction that drops (or recreates) the store."""
    if audit_exists(conn):
        conn.execute(f"DELETE FROM {AUDIT_TABLE} WHERE store_id = ?", (store_id,))


def erase_subject(conn: sqlite3.Connection, store_id: str, kind: str, subject_id: str,
                  thread_ids: Iterable[str] = ()) -> int:
    """Inside ``forget``'s transaction: the entries made in the erased subject's scope
    (SC-16.6); ``kind`` is ``"user"`` or ``"agent"``. ``thread_ids``: the threads the erasure
    removed whole (her private conversations, SC-13.3): an entry made in one of them (an
    agent-wide read of her thread) names her conversation and served her records, so it goes
    too (red29: it stayed, with a thread id that often holds her name, under a clean receipt)."""
    if not audit_exists(conn):
        return 0
    column = "user_id" if kind == "user" else "agent_id"  # one of two fixed names
    erased = int(conn.execute(f"DELETE FROM {AUDIT_TABLE} WHERE store_id = ? AND {column} = ?",
                              (store_id, subject_id)).rowcount)
    threads = sorted(set(thread_ids))
    if threads:
        erased += int(conn.execute(
            f"DELETE FROM {AUDIT_TABLE} WHERE store_id = ? AND thread_id IN (SELECT value FROM json_each(?))",
            (store_id, json.dumps(threads))).rowcount)
    return erased


def tombstones(conn: sqlite3.Connection, store_id: str, subject_hashes: Iterable[str]) -> set[str]:
    """The receipt ids of the store's erasure-log rows (SC-14.3) whose subject hash is one of
    ``subject_hashes``: the erasures of those subjects so far."""
    hashes = sorted(set(subject_hashes))
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (LOG_TABLE,)).fetchone()
    if not hashes or exists is None:
        return set()
    marks = ", ".join("?" for _ in hashes)
    return {row[0] for row in conn.execute(
        f"SELECT receipt_id FROM {LOG_TABLE} WHERE store_id = ? AND subject_hash IN ({marks})", (store_id, *hashes))}


def receipt_count(conn: sqlite3.Connection, store_id: str) -> int:
    """How many erasures the store's log holds (rows are only ever added)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (LOG_TABLE,)).fetchone()
    if exists is None:
        return 0
    return int(conn.execute(f"SELECT COUNT(*) FROM {LOG_TABLE} WHERE store_id = ?", (store_id,)).fetchone()[0])


def thread_open(conn: sqlite3.Connection, records_table: str, thread_id: str) -> bool:
    """Whether the store holds the thread's row (SC-13.2): an erasure that removes the thread
    whole deletes it."""
    return conn.execute(f"SELECT 1 FROM {records_table} WHERE record_type = 'thread' AND id = ?",
                        (thread_id,)).fetchone() is not None
