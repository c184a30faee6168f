"""Health of an embedded database file: ``oramem check`` (integrity, store settings, index
consistency) and the salvage read ``oramem export`` falls back to when the file is damaged.

Both read through a read-only connection and never write, so they work on a damaged, a
read-only or a busy file.
"""

from __future__ import annotations

import datetime as _dt
import os
from oramem.sqlite._sqlite import sqlite3
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from ..embedders.identity import decode_identity, describe_identity
from ..threads import DEFAULT_SESSION_PREFIX, default_session_id
from ..types import Record, SearchStrategy
from . import sidecar
from .connection import connect_read_only
from .records import RECORD_COLUMNS, to_record
from .schema import CATALOG, StoreTables, has_keyword, has_knowledge_tables, has_vector, keyword_rows_of
from .timefmt import iso

__all__ = ["Finding", "check_file", "is_intact", "SalvageReport", "salvage_records", "RECOVER_HINT"]

#: what to run to get the rest of a damaged file's data out
RECOVER_HINT = "sqlite3 {path} .recover | sqlite3 recovered.db"


@dataclass(frozen=True)
class Finding:
    """One line of ``oramem check``: ``ok`` False for a problem."""

    check: str
    ok: bool
    detail: str


def _count(conn: sqlite3.Connection, sql: str, *params: Any) -> int:
    return int(conn.execute(sql, params).fetchone()[0])


def is_intact(path: str) -> bool:
    """SQLite's quick check of the whole file (read-only): False when it is damaged."""
    try:
        conn, _ = connect_read_only(path)
    except sqlite3.DatabaseError:
        return False
    try:
        return [r[0] for r in conn.execute("PRAGMA quick_check(1)")] == ["ok"]
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def check_file(path: str, store_id: Optional[str] = None) -> list[Finding]:
    """Integrity of the file, then per store (or only ``store_id``): settings, records vs
    retrieval rows, FTS rows vs retrieval rows, vector lengths and the vector sidecar."""
    conn, immutable = connect_read_only(path)
    out: list[Finding] = []
    try:
        try:
            lines = [r[0] for r in conn.execute("PRAGMA integrity_check(20)")]
        except sqlite3.DatabaseError as exc:
            lines = [str(exc)]
        ok = lines == ["ok"]
        detail = "ok" if ok else "; ".join(lines[:5]) + f"; recover with: {RECOVER_HINT.format(path=path)}"
        out.append(Finding("integrity", ok, detail + (" (read immutable: read-only directory)" if immutable else "")))
        if not ok:
            return out
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (CATALOG,)).fetchone():
            out.append(Finding("catalog", False, f"{path} holds no oramem stores"))
            return out
        cur = conn.execute(f"SELECT * FROM {CATALOG} ORDER BY store_id")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        if store_id is not None:
            rows = [r for r in rows if r["store_id"] == store_id]
            if not rows:
                out.append(Finding("catalog", False, f"no store {store_id!r} in {path}"))
        for row in rows:
            out.extend(_check_store(conn, path, row))
    finally:
        conn.close()
    return out


def _check_store(conn: sqlite3.Connection, path: str, row: dict) -> list[Finding]:
    t = StoreTables(row["store_id"])
    sid = t.store_id
    capability = SearchStrategy(row["capability"])
    identity = decode_identity(row.get("embedder"))
    out = [
        Finding(
            f"{sid} settings",
            row["state"] == "ready",
            f"state {row['state']}, {capability.value} search, vector_dim {row['vector_dim'] or '-'}, "
            f"embedder {describe_identity(identity) if identity else '-'}, schema version {row['schema_version']}, "
            f"keyword language {row.get('keyword_language') or '-'}, sync {row['search_index_sync']}",
        )
    ]
    records = _count(conn, f"SELECT count(*) FROM {t.records}")
    chunks = _count(conn, f"SELECT count(*) FROM {t.chunks}")
    orphans = _count(conn, f"SELECT count(*) FROM {t.chunks} c WHERE NOT EXISTS (SELECT 1 FROM {t.records} r WHERE r.seq = c.record_seq)")
    out.append(Finding(f"{sid} retrieval rows", orphans == 0,
                       f"{records} records, {chunks} retrieval rows, {orphans} without their record"))
    if has_keyword(capability):
        # every keyword row the retrieval rows make (one per row, or one per group of a
        # record's rows: StoreTables.keyword_rows), keyed by its first row's chunk_id
        expected = t.keyword_rows(f"c.chunk_id NOT IN (SELECT chunk_id FROM {t.pending})", keyword_rows_of(row.get("embedder")))
        missing = _count(conn, f"SELECT count(*) FROM ({expected}) k WHERE k.chunk_id NOT IN (SELECT rowid FROM {t.fts})")
        stray = _count(conn, f"SELECT count(*) FROM {t.fts} WHERE rowid NOT IN (SELECT chunk_id FROM {t.chunks})")
        pending = _count(conn, f"SELECT count(*) FROM {t.pending}")
        out.append(Finding(f"{sid} keyword index", missing == 0 and stray == 0,
                           f"{missing} keyword rows not indexed, {stray} index rows without a retrieval row, "
                           f"{pending} waiting for sync_search_index"))
    if has_vector(capability) and row["vector_dim"]:
        size = 4 * int(row["vector_dim"])
        bad = _count(conn, f"SELECT count(*) FROM {t.chunks} WHERE vector IS NOT NULL AND length(vector) != ?", size)
        none = _count(conn, f"SELECT count(*) FROM {t.chunks} WHERE vector IS NULL")
        out.append(Finding(f"{sid} vectors", bad == 0,
                           f"{chunks - none} vectors, {bad} of the wrong length, {none} retrieval rows without one"))
        stamp = sidecar.stamp_of(conn, t, row["generation"], row["change_seq"])
        side = sidecar.sidecar_path(path, sid)
        snapshot = sidecar.read(side, stamp, int(row["vector_dim"]))
        state = "current" if snapshot is not None else ("stale: rebuilt by the next search" if os.path.exists(side) else "none yet")
        out.append(Finding(f"{sid} vector sidecar", True, state))
    out.append(_default_sessions(conn, t))
    if has_knowledge_tables(conn, sid):
        facts = _count(conn, f'SELECT count(*) FROM "{sid}_KG_FACT"')
        missing = _count(
            conn,
            f'SELECT count(*) FROM "{sid}_KG_FACT" f WHERE NOT EXISTS '
            f"(SELECT 1 FROM {t.records} r WHERE r.record_type = 'fact' AND r.id = f.id)",
        )
        out.append(Finding(f"{sid} knowledge", missing == 0, f"{facts} facts, {missing} without their store record"))
        if row["vector_dim"]:
            out.append(_knowledge_vectors(conn, sid, int(row["vector_dim"])))
    return out


def _knowledge_vectors(conn: Any, sid: str, dim: int) -> Finding:
    """The knowledge rows' vectors (``embedding_vec``, ``trigger_embedding_vec``: float32
    blobs) have the store's dimension. An import before 2026-12-07 wrote a backup's knowledge
    vectors as they were into a store of another embedder (trial32 F3), and every later
    knowledge write or retrieve that compares them failed."""
    total = bad = 0
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ? ESCAPE '\\'",
        (sid.replace("_", "\\_") + "\\_KG\\_%",))]
    for table in sorted(tables):
        for col in [c[1] for c in conn.execute(f'PRAGMA table_info("{table}")') if str(c[1]).endswith("embedding_vec")]:
            total += _count(conn, f'SELECT count(*) FROM "{table}" WHERE "{col}" IS NOT NULL')
            bad += _count(conn, f'SELECT count(*) FROM "{table}" WHERE "{col}" IS NOT NULL AND length("{col}") != ?', 4 * dim)
    detail = f"{total} knowledge vectors, {bad} not of the store's {dim} dimensions"
    if bad:
        detail += (" (made by another embedder: a backup imported into this store before imports checked it; import "
                   "the backup into a new --db file, which takes its embedder)")
    return Finding(f"{sid} knowledge vectors", bad == 0, detail)


def _default_sessions(conn: sqlite3.Connection, t: StoreTables) -> Finding:
    """The knowledge layer's default sessions (``kg-default-…``, one per agent and user, KC-4.21)
    that hold live or expired records of a user whose own default session they are not, or
    were opened by one (the thread row): the agent's shared session among them. Writes like
    these have been refused since 2026-12-06 (``oramem.threads.default_session_refusal``); a
    store written before may hold them, and that user's erasure would take the thread whole,
    the other scope's records and what the knowledge layer learned from them included
    (SC-13.3)."""
    rows = conn.execute(
        f"SELECT DISTINCT thread_id, agent_id, user_id FROM {t.records} "
        "WHERE user_id IS NOT NULL AND thread_id IS NOT NULL AND substr(thread_id, 1, ?) = ?",
        (len(DEFAULT_SESSION_PREFIX), DEFAULT_SESSION_PREFIX),
    ).fetchall()
    foreign: dict[str, set[str]] = {}
    for thread, agent, user in rows:
        if thread != default_session_id(agent, user):
            foreign.setdefault(thread, set()).add(user)
    if not foreign:
        return Finding(f"{t.store_id} default sessions", True, "no user's records in another scope's default session")
    shown = "; ".join(f"{thread} (user {', '.join(sorted(users))})" for thread, users in sorted(foreign.items())[:3])
    more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
    return Finding(
        f"{t.store_id} default sessions", False,
        f"{len(foreign)} knowledge default session(s) of another agent or user hold a user's records or were "
        f"opened by one: {shown}{more}. That user's erasure would take the whole thread, the agent's shared "
        "knowledge learned in it included. Delete her records there (oramem list --type TYPE --thread ID --user U, "
        "then oramem delete TYPE RECORD_ID); a thread row naming her as the one who opened it (oramem get thread ID) "
        "keeps the thread hers for her erasure until the thread is rebuilt without her (oramem export --thread ID, "
        "oramem delete-thread ID, then import the file without her records and that row)",
    )


@dataclass
class SalvageReport:
    """What a salvage read got: records read, rows or ranges it could not read."""

    read: int = 0
    unreadable: int = 0
    errors: list[str] = field(default_factory=list)


def salvage_records(path: str, store_id: str, types: Optional[set[str]], report: SalvageReport,
                    now: Optional[_dt.datetime] = None) -> Iterator[Record]:
    """Every readable live record of a damaged file, by seq ranges; a range that fails is
    split down to single rows, and a row that cannot be read is counted and skipped."""
    t = StoreTables(store_id)
    moment = iso(now or _dt.datetime.now(_dt.timezone.utc))
    conn, _ = connect_read_only(path)
    try:
        top = _highest_seq(conn, t)
        sql = f"SELECT {RECORD_COLUMNS} FROM {t.records} r WHERE r.seq BETWEEN ? AND ? ORDER BY r.seq"

        def read(lo: int, hi: int) -> Iterator[Record]:
            try:
                rows = conn.execute(sql, (lo, hi)).fetchall()
            except sqlite3.DatabaseError as exc:
                if lo == hi:
                    report.unreadable += 1
                    if len(report.errors) < 5:
                        report.errors.append(f"seq {lo}: {exc}")
                    return
                mid = (lo + hi) // 2
                yield from read(lo, mid)
                yield from read(mid + 1, hi)
                return
            for row in rows:
                try:
                    record = to_record(row)
                except (ValueError, TypeError) as exc:  # a row whose bytes were damaged
                    report.unreadable += 1
                    if len(report.errors) < 5:
                        report.errors.append(f"seq {row[0]}: {exc}")
                    continue
                if record.expires_at is not None and record.expires_at <= moment:
                    continue
                if types is not None and record.record_type not in types:
                    continue
                report.read += 1
                yield record

        for lo in range(1, top + 1, 512):
            yield from read(lo, min(lo + 511, top))
    finally:
        conn.close()


def _highest_seq(conn: sqlite3.Connection, t: StoreTables) -> int:
    """The largest seq ever given (AUTOINCREMENT keeps it in sqlite_sequence), or what can be
    read of the table itself."""
    for sql, params in (
        ("SELECT seq FROM sqlite_sequence WHERE name = ?", (t.names["records"],)),
        (f"SELECT max(seq) FROM {t.records}", ()),
    ):
        try:
            row = conn.execute(sql, params).fetchone()
        except sqlite3.DatabaseError:
            continue
        if row is not None and row[0] is not None:
            return int(row[0])
    return 0
