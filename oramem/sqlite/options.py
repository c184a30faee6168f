"""Per-store options on SQLite (:mod:`oramem.options`): one catalog-level table,
created by the first write of an option, so opening a store never changes the file."""

from __future__ import annotations

from typing import Any, Optional

from ..options import decode_options
from ._sqlite import sqlite3

__all__ = ["OPTIONS_TABLE", "read_options", "write_option", "drop_options"]

OPTIONS_TABLE = "oramem_store_options"
_DDL = (
    f"CREATE TABLE IF NOT EXISTS {OPTIONS_TABLE} ("
    "store_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, "
    "PRIMARY KEY (store_id, name)) WITHOUT ROWID"
)


def _exists(conn: sqlite3.Connection) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (OPTIONS_TABLE,)
    ).fetchone() is not None


def read_options(conn: sqlite3.Connection, store_id: str) -> dict[str, Any]:
    if not _exists(conn):
        return {}
    rows = conn.execute(
        f"SELECT name, value FROM {OPTIONS_TABLE} WHERE store_id = ? ORDER BY name", (store_id,)
    ).fetchall()
    return decode_options(rows)


def write_option(conn: sqlite3.Connection, store_id: str, name: str, text: Optional[str]) -> None:
    """Inside a write transaction: set (``text`` the encoded value) or remove (None)."""
    if text is None:
        if _exists(conn):
            conn.execute(f"DELETE FROM {OPTIONS_TABLE} WHERE store_id = ? AND name = ?", (store_id, name))
        return
    conn.execute(_DDL)
    conn.execute(
        f"INSERT INTO {OPTIONS_TABLE} (store_id, name, value) VALUES (?, ?, ?) "
        "ON CONFLICT (store_id, name) DO UPDATE SET value = excluded.value",
        (store_id, name, text),
    )


def drop_options(conn: sqlite3.Connection, store_id: str) -> None:
    """Inside the transaction that drops (or recreates) the store."""
    if _exists(conn):
        conn.execute(f"DELETE FROM {OPTIONS_TABLE} WHERE store_id = ?", (store_id,))
    from .audit import drop_entries  # SC-16.7: the store's retrieval-audit entries go with it

    drop_entries(conn, store_id)
