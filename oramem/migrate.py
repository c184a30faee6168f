"""``oramem migrate SOURCE TARGET``: copy every store of a database, with the knowledge
layer's tables, to another database, batched and resumable, then compare counts and
checksums of both sides.

Locations: ``sqlite:PATH`` (or a plain path) and ``oracle://USER@HOST:PORT/SERVICE``.

What is copied, per store: the store's settings (strategy, vector_dim, embedder identity,
keyword language, retention, index sync), every live record with its ids, scope, role,
content, event time, metadata, ``created_at`` and ``expires_at``, and its retrieval rows as
they are (caller chunks and their vectors: nothing is re-chunked or re-embedded); threads are
re-created by their records (same ids and owners; their own ``created_at`` is the copy's);
then every row of the store's knowledge tables. A rerun after an interruption skips what
is already there (records by id, knowledge rows by primary key), so it resumes.

The comparison: per store, the number of live records and a SHA-256 over every record's
fields, chunk texts and vector bytes (threads by id and owners), and per knowledge table
the row count and a SHA-256 over its rows; any difference is reported.

Oracle: migrating to or from an Oracle database is refused with ``CapabilityError`` before
anything is read or written. The Oracle engine's add entry point assigns ``created_at`` and
cannot keep a record's times or skip stored ids (``oramem_store.add_json``), so a copy would
not be faithful, and there is no catalog listing of its stores for a source side yet.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .errors import CapabilityError, StoreError
from .types import PendingRecordBatch

__all__ = ["Location", "parse_location", "migrate", "MigrationReport", "StoreComparison"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Location:
    kind: str  # "sqlite" | "oracle"
    target: str  # a path, or user@host:port/service


def parse_location(text: str, argument: str) -> Location:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{argument} is empty; give sqlite:PATH or oracle://USER@HOST:PORT/SERVICE")
    if text.startswith("oracle://"):
        rest = text[len("oracle://"):]
        if "@" not in rest or "/" not in rest.split("@", 1)[1]:
            raise ValueError(f"{argument} {text!r}: an Oracle location is oracle://USER@HOST:PORT/SERVICE")
        return Location("oracle", rest)
    if text.startswith("sqlite:"):
        text = text[len("sqlite:"):]
        if text.startswith("//"):
            text = text[2:]
    if text in ("", ":memory:"):
        raise ValueError(f"{argument}: give a database file path (a :memory: database does not outlive the command)")
    return Location("sqlite", text)


@dataclass
class StoreComparison:
    store_id: str
    records: tuple[int, int]  # source, target
    records_match: bool
    knowledge: dict[str, tuple[int, int]] = field(default_factory=dict)
    knowledge_match: bool = True

    @property
    def ok(self) -> bool:
        return self.records_match and self.knowledge_match


@dataclass
class MigrationReport:
    copied_records: int = 0
    skipped_records: int = 0
    copied_knowledge_rows: int = 0
    stores: list[StoreComparison] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.stores)


def _refuse_oracle(source: Location, target: Location) -> None:
    if target.kind == "oracle":
        raise CapabilityError(
            "migrating into Oracle is not supported in this version: the Oracle engine's add entry point assigns "
            "created_at and cannot keep a record's created_at/expires_at or skip ids already stored, so the copy "
            "would not be faithful (export/import without kept times is the way today)"
        )
    if source.kind == "oracle":
        raise CapabilityError(
            "migrating out of Oracle is not supported in this version (no catalog listing of the stores and their "
            "retrieval rows on the Oracle side yet); export each store with the Python API instead"
        )


def migrate(source_text: str, target_text: str, *, stores: Optional[list[str]] = None, batch_size: int = 500,
            progress: Optional[Progress] = None) -> MigrationReport:
    """Copy ``stores`` (default: all) from SOURCE to TARGET and compare both sides."""
    from .normalize import validate_store_id
    from .sqlite import admin

    source = parse_location(source_text, "SOURCE")
    target = parse_location(target_text, "TARGET")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    _refuse_oracle(source, target)
    if not os.path.isfile(source.target):
        raise StoreError(f"no database file at {source.target!r} (SOURCE)")
    if os.path.exists(target.target) and os.path.samefile(source.target, target.target):
        raise ValueError("SOURCE and TARGET are the same file")
    catalog = admin.list_stores(source.target)
    wanted = [validate_store_id(s) for s in stores] if stores else sorted(catalog)
    missing = [s for s in wanted if s not in catalog]
    if missing:
        raise ValueError(f"no store {', '.join(missing)} in {source.target} (stores there: {', '.join(catalog) or 'none'})")
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")
    totals = {sid: _live_count(source.target, sid, now) + _knowledge_rows(source.target, sid) for sid in wanted}
    total, done = sum(totals.values()), 0
    report = MigrationReport()

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    for sid in wanted:
        _copy_records(source.target, target.target, catalog[sid], now, batch_size, report, step)
        _copy_knowledge(source.target, target.target, catalog[sid], batch_size, report, step)
        report.stores.append(_compare(source.target, target.target, sid, now))
    return report


# ----------------------------------------------------------------------------- records
def _live_count(path: str, store_id: str, now: str) -> int:
    from .sqlite.schema import StoreTables

    t = StoreTables(store_id)
    conn = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)
    try:
        return int(conn.execute(
            f"SELECT count(*) FROM {t.records} WHERE record_type != 'thread' AND (expires_at IS NULL OR expires_at > ?)",
            (now,),
        ).fetchone()[0])
    finally:
        conn.close()


def _open_target(path: str, row: dict) -> Any:
    from . import SQLiteMemoryStore
    from .types import MemoryRetentionConfig, SchemaPolicy

    kwargs: dict[str, Any] = dict(
        memory_store_id=row["store_id"], search_strategy=row["capability"], schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        memory_retention_config=MemoryRetentionConfig(row["default_ttl_days"], row["max_ttl_days"]),
        search_index_sync=row["search_index_sync"], vector_sidecar=False, read_only=False,
    )
    if row.get("vector_dim"):
        kwargs["vector_dim"] = row["vector_dim"]
    if row.get("keyword_language") and row["schema_version"] >= 2:
        kwargs["keyword_language"] = row["keyword_language"]
    return SQLiteMemoryStore(path, **kwargs)


def _batch(rows: list, dim: Optional[int]) -> list[PendingRecordBatch]:
    """One restore batch per record type (the API's unit), in seq order within each."""
    import numpy as np

    by_type: dict[str, list] = {}
    for _, record, chunks in rows:
        if record.record_type != "thread":
            by_type.setdefault(record.record_type, []).append((record, chunks))
    out = []
    for rtype, items in by_type.items():
        index_texts, embeddings = [], []
        vectors_known = all(all(v is not None for _, v in ch) for _, ch in items)
        for record, chunks in items:
            index_texts.append([text for text, _ in chunks] if chunks else "")
            if chunks:
                embeddings.append([np.frombuffer(v, dtype="<f4") for _, v in chunks] if vectors_known else None)
            else:
                embeddings.append([])
        kwargs: dict[str, Any] = dict(
            record_ids=[r.id for r, _ in items], thread_ids=[r.thread_id for r, _ in items],
            user_ids=[None if rtype == "user_profile" else r.user_id for r, _ in items],
            agent_ids=[None if rtype == "agent_profile" else r.agent_id for r, _ in items],
            timestamps=[r.timestamp for r, _ in items], metadata=[r.metadata for r, _ in items],
            index_texts=index_texts,
        )
        if rtype == "message":
            kwargs["roles"] = [getattr(r, "role", None) for r, _ in items]
        if dim is not None and vectors_known:
            kwargs["embeddings"] = embeddings
        out.append(PendingRecordBatch([r.content for r, _ in items], rtype, **kwargs))
    return out


def _copy_records(source: str, target: str, row: dict, now: str, batch_size: int, report: MigrationReport,
                  step: Callable[[int], None]) -> None:
    from .sqlite import admin

    sid = row["store_id"]
    store = _open_target(target, row)
    try:
        after = 0
        while True:
            rows = admin.read_record_rows(source, sid, after, batch_size, now)
            if not rows:
                break
            after = rows[-1][0]
            batches = _batch(rows, row.get("vector_dim"))
            times = [(r.created_at, r.expires_at) for b in batches for r, _ in _items_of(rows, b.record_type)]
            if batches:
                written = store.restore_batches(batches, times=times, on_conflict="skip", batch_size=batch_size)
                report.copied_records += len(written)
                report.skipped_records += len(times) - len(written)
            step(len(times))
    finally:
        store.close()
    if row.get("embedder"):
        from .embedders.identity import decode_identity

        admin.record_embedder(target, sid, decode_identity(row["embedder"]))


def _items_of(rows: list, rtype: str) -> list:
    return [(r, ch) for _, r, ch in rows if r.record_type == rtype]


# ----------------------------------------------------------------------------- knowledge
def _kg_names(conn: sqlite3.Connection, store_id: str) -> list[str]:
    from .knowledge.schema import build_tables

    # every knowledge table of the store (the names do not depend on the vector dimension)
    names = [t.name for t in build_tables(store_id, 1).metadata.sorted_tables]
    present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return [n for n in names if n in present]


def _knowledge_rows(path: str, store_id: str) -> int:
    conn = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)
    try:
        return sum(int(conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]) for n in _kg_names(conn, store_id))
    finally:
        conn.close()


def _copy_knowledge(source: str, target: str, row: dict, batch_size: int, report: MigrationReport,
                    step: Callable[[int], None]) -> None:
    sid = row["store_id"]
    src = sqlite3.connect(f"file:{os.path.abspath(source)}?mode=ro", uri=True)
    try:
        names = _kg_names(src, sid)
        if not names:
            return
        import sqlalchemy as sa

        from .knowledge.schema import apply_schema_policy, build_tables
        from .types import SchemaPolicy

        engine = sa.create_engine(f"sqlite:///{os.path.abspath(target)}")
        try:
            apply_schema_policy(engine, build_tables(sid, int(row["vector_dim"])), SchemaPolicy.CREATE_IF_NECESSARY)
        finally:
            engine.dispose()
        dst = sqlite3.connect(target, isolation_level=None)
        try:
            for name in names:  # fixed names built from a validated store id
                columns = [r[1] for r in src.execute(f'PRAGMA table_info("{name}")')]
                cols = ", ".join(f'"{c}"' for c in columns)
                marks = ", ".join("?" for _ in columns)
                cursor = src.execute(f'SELECT {cols} FROM "{name}" ORDER BY rowid')
                while True:
                    chunk = cursor.fetchmany(batch_size)
                    if not chunk:
                        break
                    dst.execute("BEGIN IMMEDIATE")
                    before = dst.total_changes
                    dst.executemany(f'INSERT OR IGNORE INTO "{name}" ({cols}) VALUES ({marks})', chunk)
                    report.copied_knowledge_rows += dst.total_changes - before
                    dst.execute("COMMIT")
                    step(len(chunk))
        finally:
            dst.close()
    finally:
        src.close()


# ----------------------------------------------------------------------------- comparison
def _records_digest(path: str, store_id: str, now: str) -> tuple[int, str]:
    from .sqlite import admin

    lines, after = [], 0
    while True:
        rows = admin.read_record_rows(path, store_id, after, 2000, now)
        if not rows:
            break
        after = rows[-1][0]
        for _, r, chunks in rows:
            if r.record_type == "thread":
                lines.append(json.dumps(["thread", r.id, r.user_id, r.agent_id]))
                continue
            lines.append(json.dumps(
                [r.record_type, r.id, r.content, r.timestamp, r.metadata, r.thread_id, r.user_id, r.agent_id,
                 getattr(r, "role", None), r.created_at, r.expires_at,
                 [t for t, _ in chunks], [v.hex() if v is not None else None for _, v in chunks]],
                sort_keys=True, default=str,
            ))
    lines.sort()
    count = sum(1 for ln in lines if not ln.startswith('["thread"'))
    return count, hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _knowledge_digest(path: str, store_id: str) -> dict[str, tuple[int, str]]:
    conn = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)
    try:
        out = {}
        for name in _kg_names(conn, store_id):
            columns = sorted(r[1] for r in conn.execute(f'PRAGMA table_info("{name}")'))
            cols = ", ".join(f'"{c}"' for c in columns)
            rows = sorted(repr(r) for r in conn.execute(f'SELECT {cols} FROM "{name}"'))
            out[name] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest())
        return out
    finally:
        conn.close()


def _compare(source: str, target: str, store_id: str, now: str) -> StoreComparison:
    (n_src, h_src), (n_dst, h_dst) = _records_digest(source, store_id, now), _records_digest(target, store_id, now)
    comparison = StoreComparison(store_id, (n_src, n_dst), h_src == h_dst)
    k_src, k_dst = _knowledge_digest(source, store_id), _knowledge_digest(target, store_id)
    for name in sorted(set(k_src) | set(k_dst)):
        a, b = k_src.get(name, (0, "")), k_dst.get(name, (0, ""))
        comparison.knowledge[name] = (a[0], b[0])
        if a != b:
            comparison.knowledge_match = False
    return comparison
