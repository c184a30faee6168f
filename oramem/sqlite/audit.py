"""The retrieval audit's table on SQLite (SC-16, :mod:`oramem.trust.audit`): one catalog-level
table keyed by store id, created by the first audited read, emptied of a store's rows when the
store is dropped or recreated."""

from __future__ import annotations

from ._sqlite import sqlite3

__all__ = ["AUDIT_TABLE", "AUDIT_DDL", "audit_exists", "drop_entries"]

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
