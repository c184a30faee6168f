"""File-level administration of an embedded database: list, describe and drop the stores
in one SQLite file without opening any of them (what ``oramem stores`` runs).

These functions own the knowledge of the catalog table and the per-store table names, so
no caller builds SQL against the engine's layout. Reads use a read-only connection and
never create a file; a drop is one ``BEGIN IMMEDIATE`` transaction.
"""

from __future__ import annotations

import datetime as _dt
import os
import pathlib
from oramem.sqlite._sqlite import sqlite3
from typing import Any, Callable, Sequence

from ..errors import StoreError, StoreNotFound
from . import sidecar
from .connection import BUSY_TIMEOUT_S, connect_read_only
from .options import drop_options
from .schema import CATALOG, StoreTables, has_knowledge_tables
from .timefmt import iso

__all__ = [
    "list_stores", "count_live_records", "drop_store", "register_dependent_tables", "explain_error", "knowledge_tables_exist", "read_record_rows",
    "read_thread_rows",
]


def _connect_ro(path: str) -> sqlite3.Connection:
    if not pathlib.Path(path).is_file():
        raise StoreNotFound(f"no database file at {path!r}")
    try:
        return connect_read_only(path, BUSY_TIMEOUT_S)[0]
    except sqlite3.DatabaseError as exc:
        raise StoreError(explain_error(path, exc)) from None


def list_stores(path: str) -> dict[str, dict[str, Any]]:
    """Catalog rows by store id (``{}`` for a SQLite file without oramem stores)."""
    conn = _connect_ro(path)
    try:
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (CATALOG,)).fetchone()
        if not has:
            return {}
        cur = conn.execute(f"SELECT * FROM {CATALOG} ORDER BY store_id")
        names = [d[0] for d in cur.description]
        return {row[0]: dict(zip(names, row)) for row in cur.fetchall()}
    except sqlite3.DatabaseError as exc:
        raise StoreError(explain_error(path, exc)) from None
    finally:
        conn.close()


def unvectored_rows(path: str, store_id: str) -> int:
    """How many of store ``store_id``'s retrieval rows hold no vector (a keyword store's rows,
    which keep it from becoming a vector or hybrid store)."""
    conn = _connect_ro(path)
    try:
        (count,) = conn.execute(f"SELECT count(*) FROM {StoreTables(store_id).chunks} WHERE vector IS NULL").fetchone()
        return int(count)
    except sqlite3.DatabaseError as exc:
        raise StoreError(explain_error(path, exc)) from None
    finally:
        conn.close()


def explain_error(path: str, exc: BaseException) -> str:
    """One line saying what a SQLite error on ``path`` means for the user and what to do."""
    text = str(exc)
    low = text.lower()
    if "malformed" in low:
        return (
            f"{path} is damaged ({text}); recover what you can into a new file with: "
            f"sqlite3 {path} .recover | sqlite3 recovered.db"
        )
    if "readonly" in low or "read-only" in low:
        return (
            f"{path} is read-only here ({text}): writing needs write access to the file and its directory "
            "(WAL journal); reading works read-only (SQLiteMemoryStore(..., read_only=True), oramem --read-only)"
        )
    if "unable to open" in low:
        where = os.path.dirname(os.path.abspath(path))
        state = "does not exist" if not os.path.isdir(where) else "is not writable"
        return f"cannot open or create {path}: the directory {where} {state} ({text})"
    return f"{path} is not an oramem SQLite database ({text})"


def knowledge_tables_exist(path: str, store_id: str) -> bool:
    """Whether the knowledge layer's tables of ``store_id`` are in the file."""
    conn = _connect_ro(path)
    try:
        return has_knowledge_tables(conn, store_id)
    except sqlite3.DatabaseError as exc:
        raise StoreError(explain_error(path, exc)) from None
    finally:
        conn.close()


def count_live_records(path: str, store_id: str, now: _dt.datetime | None = None) -> dict[str, int]:
    """Unexpired records per record type of one store."""
    tables = StoreTables(store_id)
    moment = iso(now or _dt.datetime.now(_dt.timezone.utc))
    conn = _connect_ro(path)
    try:
        rows = conn.execute(
            f"SELECT record_type, count(*) FROM {tables.records} "
            "WHERE expires_at IS NULL OR expires_at > ? GROUP BY record_type ORDER BY record_type",
            (moment,),
        ).fetchall()
    finally:
        conn.close()
    return {t: n for t, n in rows}


#: Providers of the tables a layer above the engine keeps per store (the knowledge layer's
#: ``<ID>_KG_*``, registered by ``oramem.knowledge.db.install``): store id -> table names,
#: children before parents. :func:`drop_store` drops them with the store. The engine does
#: not import the layers above it (layer rule, pyproject.toml [tool.importlinter]).
_DEPENDENT_TABLES: list[Callable[[str], Sequence[str]]] = []


def register_dependent_tables(provider: Callable[[str], Sequence[str]]) -> None:
    """Have :func:`drop_store` also drop the tables ``provider(store_id)`` names (idempotent)."""
    if provider not in _DEPENDENT_TABLES:
        _DEPENDENT_TABLES.append(provider)


def knowledge_table_names(store_id: str) -> list[str]:
    """The registered dependent tables of a store (the knowledge layer's), children first."""
    return [name for provider in _DEPENDENT_TABLES for name in provider(store_id)]


def drop_store(path: str, store_id: str) -> bool:
    """Delete a store's tables, its knowledge layer's tables (``<ID>_KG_*``, when there) and
    its catalog row in one transaction; False when absent. Engines that have the store open
    see ``StoreNotFound`` on their next call."""
    tables = StoreTables(store_id)
    if not pathlib.Path(path).is_file():
        raise StoreNotFound(f"no database file at {path!r}")
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = conn.execute(f"SELECT 1 FROM {CATALOG} WHERE store_id = ?", (tables.store_id,)).fetchone()
            if found:
                tables.drop(conn)
                if has_knowledge_tables(conn, tables.store_id):
                    names = knowledge_table_names(tables.store_id)
                    if not names:
                        raise StoreError(
                            f"store {tables.store_id} has knowledge tables and the knowledge layer is not loaded: "
                            "import oramem.knowledge before drop_store (it registers its tables), or run "
                            "`oramem stores drop`; nothing was dropped"
                        )
                    for name in names:  # fixed names of a validated id
                        conn.execute(f'DROP TABLE IF EXISTS "{name}"')
                conn.execute(f"DELETE FROM {CATALOG} WHERE store_id = ?", (tables.store_id,))
                drop_options(conn, tables.store_id)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()
    sidecar.remove(path, tables.store_id)  # its vector snapshot (oramem/sqlite/sidecar.py)
    return bool(found)


def read_record_rows(path: str, store_id: str, after_seq: int, limit: int, now: str) -> list[tuple[int, Any, list[Any]]]:
    """Live records of one store with seq above ``after_seq``, oldest first, at most
    ``limit``: ``(seq, Record, [(chunk text, vector bytes or None), ...])`` in chunk order
    (what ``oramem migrate`` copies; read-only)."""
    from .records import RECORD_COLUMNS, to_record

    tables = StoreTables(store_id)
    conn = _connect_ro(path)
    try:
        rows = conn.execute(
            f"SELECT {RECORD_COLUMNS} FROM {tables.records} r WHERE r.seq > ? AND (r.expires_at IS NULL OR r.expires_at > ?) "
            "ORDER BY r.seq LIMIT ?",
            (after_seq, now, limit),
        ).fetchall()
        chunks: dict[int, list[Any]] = {}
        if rows:
            for seq, text, vector in conn.execute(
                f"SELECT record_seq, text, vector FROM {tables.chunks} WHERE record_seq BETWEEN ? AND ? "
                "ORDER BY record_seq, chunk_index",
                (rows[0][0], rows[-1][0]),
            ):
                chunks.setdefault(seq, []).append((text, vector))
        return [(row[0], to_record(row), chunks.get(row[0], [])) for row in rows]
    finally:
        conn.close()


def read_thread_rows(path: str, store_id: str) -> list[tuple[str, Any, Any, str]]:
    """Every ``thread`` row of one store, oldest first: ``(thread_id, user_id, agent_id,
    created_at)`` (what ``restore_threads`` takes, SC-13.6; read-only)."""
    tables = StoreTables(store_id)
    conn = _connect_ro(path)
    try:
        return [
            (tid, user, agent, created)
            for tid, user, agent, created in conn.execute(
                f"SELECT id, user_id, agent_id, created_at FROM {tables.records} WHERE record_type = 'thread' ORDER BY seq"
            )
        ]
    finally:
        conn.close()


def record_embedder(path: str, store_id: str, identity: Any) -> None:
    """Record the embedder identity of a store (a migrated copy keeps its source's)."""
    from ..embedders.identity import encode_identity

    tables = StoreTables(store_id)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"UPDATE {CATALOG} SET embedder = ? WHERE store_id = ?", (encode_identity(identity), tables.store_id))
        conn.execute("COMMIT")
    finally:
        conn.close()
