"""``oramem migrate SOURCE TARGET``: copy every store of a database, with the knowledge
layer's tables, to another database, batched and resumable, then compare counts and
checksums of both sides.

Locations: ``sqlite:PATH`` (or a plain path) and ``oracle://USER@HOST:PORT/SERVICE``, on
either side (SQLite -> SQLite, SQLite -> Oracle, Oracle -> SQLite, Oracle -> Oracle). The
Oracle password comes from ``oracle_password``, else ``ORAMEM_PASSWORD``; or pass
``oracle_connect(user, dsn)`` returning a python-oracledb connection (a wallet, a proxy
user): it is asked once per Oracle side.

What is copied, per store: the store's settings (strategy, vector_dim, keyword language,
retention, index sync, the embedder identity), every live record with its ids,
scope, role, content, event time, metadata, ``created_at`` and ``expires_at``, and its
retrieval rows as they are (caller chunks and their vectors: nothing is re-chunked or
re-embedded); the thread rows first, exactly as they are (id, who opened the thread,
``created_at``: SC-13.6), so the records that name them do not re-create them; then every
row of the store's knowledge tables. A rerun after
an interruption skips what is already there (records by id, knowledge rows by primary
key), so it resumes. Records go through the store API's ``restore_batches`` (on Oracle:
``oramem_store.add_json`` with ``restored_times`` and ``on_conflict`` "skip"); Oracle
records are read with ``oramem_store.export_json``; knowledge rows move through the
knowledge layer's SQLAlchemy mapping (``oramem.knowledge.db.schema``), so each side converts
its own types.

Embedders: an Oracle HYBRID store's hybrid vector index embeds its text with an in-database
model, so a HYBRID store copied
into Oracle needs ``oracle_model`` (the in-database ONNX model loaded with ``oramem db
load-model``, which must be the source store's embedder); without it the copy is refused
before anything is written. The copy records the source's embedder identity with its chunk
policy (issue 28; an Oracle copy from its first open, a SQLite copy at the end), so it is
opened with the source's embedder and chunks new records as the source did; a HYBRID source
without one gives an Oracle copy the in-database model's identity without a chunk policy
(the copied rows keep the legacy chunking). A SQLite copy of a store built with the
in-database model (``oracle-db``) records no embedder (the model cannot run there): open it
with the same model's local embedder.

The comparison: per store, the number of live records and a SHA-256 over every record's
fields, chunk texts and vector bytes (threads by id, opener and created_at), and per knowledge table
the row count and a SHA-256 over its rows as the mapping reads them (times in UTC, JSON
canonical, vectors as float32 bytes); any difference is reported.

Static-checked, not run against Oracle: the Oracle sides are tested over the recording
fake of python-oracledb only (``tests/oracle/test_migrate_oracle_fake.py``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence

from .errors import StoreError
from .sqlite._sqlite import sqlite3
from .batches import PendingRecordBatch
from .types import Record

__all__ = ["Location", "parse_location", "migrate", "MigrationReport", "StoreComparison"]

#: ``progress(done, total)``; total is None when the source cannot count cheaply (Oracle)
Progress = Callable[[int, Optional[int]], None]
#: ``oracle_connect(user, dsn)`` -> a python-oracledb connection
OracleConnect = Callable[[str, str], Any]
#: (seq, record, [(chunk text, float32 little-endian vector bytes or None), ...])
Row = tuple[int, Record, list[tuple[str, Optional[bytes]]]]


@dataclass(frozen=True)
class Location:
    kind: str  # "sqlite" | "oracle"
    target: str  # a path, or user@host:port/service


def parse_location(text: str, argument: str) -> Location:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{argument} is empty; give sqlite:PATH or oracle://USER@HOST:PORT/SERVICE")
    if text.startswith("oracle://"):
        rest = text[len("oracle://"):]
        user = rest.rsplit("@", 1)[0] if "@" in rest else ""
        if ":" in user or "/" in user:
            # oracle://app:pw@host/svc: the password would be sent as part of the user name and
            # printed in every message naming the user (dba33 F1); the location is not repeated
            raise ValueError(f"{argument}: an Oracle location holds no password (oracle://USER@HOST:PORT/SERVICE); "
                             "give the password in ORAMEM_PASSWORD or at the prompt (a password on the command "
                             "line is visible to every user of this machine)")
        if "@" not in rest or not rest.split("@", 1)[0] or "/" not in rest.split("@", 1)[1]:
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
    #: subjects erased on the source while the store was copied (a receipt written after the
    #: copy read the log) whose rows the target still holds: ``{"user": [...], "agent": [...]}``
    erased_during_copy: dict[str, list[str]] = field(default_factory=lambda: {"user": [], "agent": []})

    @property
    def ok(self) -> bool:
        return self.records_match and self.knowledge_match and not any(self.erased_during_copy.values())


@dataclass
class MigrationReport:
    copied_records: int = 0
    skipped_records: int = 0
    copied_knowledge_rows: int = 0
    stores: list[StoreComparison] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.stores)


@dataclass(frozen=True)
class StoreInfo:
    """One store's settings, as both kinds of database describe them."""

    store_id: str
    strategy: str
    vector_dim: Optional[int]
    default_ttl_days: Optional[int]
    max_ttl_days: Optional[int]
    search_index_sync: Optional[str]
    keyword_language: Optional[str]
    embedder: Optional[str] = None  # SQLite: the recorded embedder identity (JSON text)


# ----------------------------------------------------------------------------- sides
class _SQLiteSide:
    kind = "sqlite"

    def __init__(self, path: str) -> None:
        self.path = path
        self.name = path

    def stores(self) -> dict[str, StoreInfo]:
        from .sqlite import admin

        out = {}
        for sid, row in admin.list_stores(self.path).items():
            language = row.get("keyword_language") if row.get("schema_version", 0) >= 2 else None
            out[sid] = StoreInfo(sid, row["capability"], row.get("vector_dim"), row.get("default_ttl_days"),
                                 row.get("max_ttl_days"), row.get("search_index_sync"), language, row.get("embedder"))
        return out

    def rows(self, store_id: str, after: int, limit: int, now: str) -> list[Row]:
        from .sqlite import admin

        return admin.read_record_rows(self.path, store_id, after, limit, now)

    def threads(self, store_id: str, now: str) -> list[tuple[str, Any, Any, Any]]:
        from .sqlite import admin

        return admin.read_thread_rows(self.path, store_id)

    def live_count(self, store_id: str, now: str) -> Optional[int]:
        from .sqlite.schema import StoreTables

        t = StoreTables(store_id)
        conn = self._ro()
        try:
            return int(conn.execute(
                f"SELECT count(*) FROM {t.records} WHERE record_type != 'thread' AND (expires_at IS NULL OR expires_at > ?)",
                (now,),
            ).fetchone()[0])
        finally:
            conn.close()

    def _ro(self) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{os.path.abspath(self.path)}?mode=ro", uri=True)

    def open_store(self, info: StoreInfo, oracle_model: Optional[str]) -> Any:
        from . import SQLiteMemoryStore
        from .types import MemoryRetentionConfig, SchemaPolicy

        kwargs: dict[str, Any] = dict(
            memory_store_id=info.store_id, search_strategy=info.strategy, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
            memory_retention_config=MemoryRetentionConfig(info.default_ttl_days, info.max_ttl_days),
            search_index_sync=info.search_index_sync, vector_sidecar=False, read_only=False,
        )
        if info.vector_dim:
            kwargs["vector_dim"] = info.vector_dim
        if info.keyword_language:
            kwargs["keyword_language"] = info.keyword_language
        return SQLiteMemoryStore(self.path, **kwargs)

    def keep_embedder(self, info: StoreInfo) -> None:
        if info.embedder:
            from .embedders.identity import decode_identity
            from .sqlite import admin

            identity = decode_identity(info.embedder)
            if identity is not None and identity.get("kind") == "oracle-db":
                return  # the in-database model cannot run here: opened with its local twin
            admin.record_embedder(self.path, info.store_id, identity)

    def sa_engine(self, read_only: bool) -> Any:
        import sqlalchemy as sa

        if read_only:
            uri = f"file:{os.path.abspath(self.path)}?mode=ro"
            return sa.create_engine("sqlite://", creator=lambda: sqlite3.connect(uri, uri=True), module=sqlite3)
        # module=: the engine's SQLite build (see oramem/sqlite/_sqlite.py), never a second
        # library on the same file in one process
        return sa.create_engine(f"sqlite:///{os.path.abspath(self.path)}", module=sqlite3)

    def knowledge_tables(self) -> set[str]:
        conn = self._ro()
        try:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()

    def ensure_knowledge(self, engine: Any, store_id: str, vector_dim: int) -> None:
        from .knowledge.db.schema import apply_schema_policy, build_tables
        from .types import SchemaPolicy

        apply_schema_policy(engine, build_tables(store_id, vector_dim), SchemaPolicy.CREATE_IF_NECESSARY)

    def end_snapshot(self) -> None:
        pass  # every read is its own transaction here

    def close(self) -> None:
        pass


class _OracleSide:
    """An Oracle database through one python-oracledb connection (thin mode)."""

    kind = "oracle"
    #: the store whose pages the open READ ONLY transaction reads (N5), if one is open
    _snapshot_of: Optional[str] = None

    def __init__(self, location: Location, connect: OracleConnect) -> None:
        user, dsn = location.target.split("@", 1)
        self.name = f"oracle://{location.target}"
        self.conn = connect(user, dsn)

    def stores(self) -> dict[str, StoreInfo]:
        from .oracle import admin

        out = {}
        from .embedders.identity import encode_identity

        for d in admin.list_stores(self.conn):
            ret = d.get("retention") or {}
            sid = str(d["memory_store_id"]).upper()
            identity = d.get("embedder")  # catalog version 5 (issue 28); older packages report none
            out[sid] = StoreInfo(sid, d["search_strategy"], d.get("vector_dim"), ret.get("default_ttl_days"),
                                 ret.get("max_ttl_days"), d.get("search_index_sync"), d.get("keyword_language"),
                                 encode_identity(identity) if isinstance(identity, dict) else None)
        return out

    def rows(self, store_id: str, after: int, limit: int, now: str) -> list[Row]:
        # export_json filters expiry with the database clock, at the moment of the call
        import numpy as np

        from .oracle import admin
        from .oracle.codec import record_from_json

        if after == 0 and getattr(self, "_snapshot_of", None) != store_id:
            # N5: seq_no (an identity) is drawn at INSERT, not at COMMIT, so pages read in
            # separate transactions can skip a row committed late below the last seq read. All
            # pages of a store (and its knowledge copy and comparison) read one snapshot: "All
            # subsequent queries in that transaction see only changes that were committed
            # before the transaction began" (SQL Language Reference, SET TRANSACTION READ ONLY).
            # The thread pre-pass (threads) and the record pass share it: one snapshot per store.
            self.conn.rollback()
            with self.conn.cursor() as cur:
                cur.execute("SET TRANSACTION READ ONLY")
            self._snapshot_of = store_id
        out: list[Row] = []
        for item in admin.export_page(self.conn, store_id, after, limit):
            record = record_from_json(item["record"])
            chunks = [
                (ch.get("text") or "", None if ch.get("vector") is None else np.asarray(ch["vector"], dtype="<f4").tobytes())
                for ch in (item.get("chunks") or ())
            ]
            out.append((int(item["record"]["seq_no"]), record, chunks))
        return out

    def threads(self, store_id: str, now: str) -> list[tuple[str, Any, Any, Any]]:
        # export_json is the one Oracle entry point that returns thread rows with their
        # times: one pass over the store, keeping the thread rows
        return [(r.id, r.user_id, r.agent_id, r.created_at)
                for rows in _pages(self, store_id, now, 2000) for _, r, _ in rows if r.record_type == "thread"]

    def live_count(self, store_id: str, now: str) -> Optional[int]:
        return None  # no count entry point: the progress has no total

    def open_store(self, info: StoreInfo, oracle_model: Optional[str]) -> Any:
        from .oracle import SyncOracleEngine
        from .oracle.embedder import OracleDBEmbedder
        from .store import OracleMemoryStore
        from .types import MemoryRetentionConfig, SchemaPolicy

        embedder = None
        if info.strategy == "hybrid":
            if not oracle_model:
                raise ValueError(
                    f"store {info.store_id} is HYBRID: an Oracle HYBRID store embeds queries in the database, so "
                    "name the in-database model of the source's embedder (--oracle-model NAME, loaded with "
                    "`oramem db load-model`)"
                )
            embedder = OracleDBEmbedder(self.conn, oracle_model, embedding_dimension=info.vector_dim)
        kwargs: dict[str, Any] = dict(
            memory_store_id=info.store_id, search_strategy=info.strategy, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
            memory_retention_config=MemoryRetentionConfig(info.default_ttl_days, info.max_ttl_days),
        )
        if info.search_index_sync:
            kwargs["search_index_sync"] = info.search_index_sync
        if info.vector_dim:
            kwargs["vector_dim"] = info.vector_dim
        # the copy records the source's embedder identity (issue 28), so it is opened with
        # the source's embedder and keeps its chunking; a HYBRID copy embeds in the database
        engine = SyncOracleEngine(self.conn, embedding_model=oracle_model if embedder is not None else None,
                                  keyword_language=info.keyword_language)
        return OracleMemoryStore(engine, embedder=_CopiedVectors.of(info, embedder), **kwargs)

    def keep_embedder(self, info: StoreInfo) -> None:
        pass  # recorded when the copy was opened (_CopiedVectors)

    def sa_engine(self, read_only: bool) -> Any:
        import sqlalchemy as sa
        from sqlalchemy.pool import StaticPool

        from .sql_access import SharedConnection

        from .knowledge.db.schema import bind_json_as_oson

        shared = SharedConnection(self.conn, owns_transaction=True)
        return bind_json_as_oson(sa.create_engine("oracle+oracledb://", creator=lambda: shared, poolclass=StaticPool))

    def knowledge_tables(self) -> set[str]:
        with self.conn.cursor() as cur:
            cur.execute("SELECT table_name FROM user_tables WHERE table_name LIKE :pattern ESCAPE '\\'",
                        pattern="%\\_KG\\_%")
            return {r[0] for r in cur.fetchall()}

    def ensure_knowledge(self, engine: Any, store_id: str, vector_dim: int) -> None:
        from .knowledge.db.install import install_oracle

        install_oracle(self.conn, store_id, vector_dim, echo=lambda _line: None)

    def end_snapshot(self) -> None:
        """End the READ ONLY transaction :meth:`rows` began (N5), so the next read sees what
        committed since and a write on this connection is not refused (ORA-01456)."""
        if self._snapshot_of is not None:
            self.conn.rollback()
            self._snapshot_of = None

    def close(self) -> None:
        self.conn.close()


def _default_connect(password: Optional[str]) -> OracleConnect:
    def connect(user: str, dsn: str) -> Any:
        secret = password if password is not None else os.environ.get("ORAMEM_PASSWORD")
        if secret is None:
            raise ValueError(
                f"no password for Oracle user {user}: set ORAMEM_PASSWORD (or pass oracle_password / oracle_connect)"
            )
        import oracledb

        return oracledb.connect(user=user, password=secret, dsn=dsn)

    return connect


def _side(location: Location, connect: OracleConnect) -> Any:
    return _OracleSide(location, connect) if location.kind == "oracle" else _SQLiteSide(location.target)


# ----------------------------------------------------------------------------- migrate
def migrate(source_text: str, target_text: str, *, stores: Optional[list[str]] = None, batch_size: int = 500,
            progress: Optional[Progress] = None, oracle_password: Optional[str] = None,
            oracle_connect: Optional[OracleConnect] = None, oracle_model: Optional[str] = None,
            allow_erased: bool = False) -> MigrationReport:
    """Copy ``stores`` (default: all) from SOURCE to TARGET and compare both sides.

    SC-14.4: a store holding records of a user or agent named by an erasure receipt of the
    source's or the target's store is refused (:class:`oramem.trust.erasure.ErasedSubjectError`,
    before anything is written) unless ``allow_erased``; the source's receipts are copied
    into the target's erasure log."""
    from .normalize import validate_store_id

    source = parse_location(source_text, "SOURCE")
    target = parse_location(target_text, "TARGET")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= 10000:
        raise ValueError(f"batch_size must be an int in 1..10000, got {batch_size!r}")
    if source.kind == "sqlite" and not os.path.isfile(source.target):
        raise StoreError(f"no database file at {source.target!r} (SOURCE)")
    if target.kind == "sqlite":  # one clear error before SQLite's "unable to open database file"
        where = os.path.dirname(os.path.abspath(target.target))
        if os.path.isdir(target.target):
            raise ValueError(f"TARGET {target.target!r} is a directory; give a database file path")
        if not os.path.exists(target.target) and not os.path.isdir(where):
            raise StoreError(f"cannot create TARGET {target.target}: directory {where} does not exist")
    if source.kind == target.kind == "sqlite" and os.path.exists(target.target) and os.path.samefile(source.target, target.target):
        raise ValueError("SOURCE and TARGET are the same file")
    if source.kind == target.kind == "oracle" and source.target.split("@", 1)[1] == target.target.split("@", 1)[1]:
        raise ValueError("SOURCE and TARGET are the same Oracle database: a store cannot be copied onto itself")
    connect = oracle_connect or _default_connect(oracle_password)
    src = _side(source, connect)
    dst: Any = None
    try:
        catalog = src.stores()
        wanted = [validate_store_id(s) for s in stores] if stores else sorted(catalog)
        missing = [s for s in wanted if s not in catalog]
        if missing:
            raise ValueError(f"no store {', '.join(missing)} in {src.name} (stores there: {', '.join(catalog) or 'none'})")
        if target.kind == "oracle" and not oracle_model:
            hybrid = [s for s in wanted if catalog[s].strategy == "hybrid"]
            if hybrid:
                raise ValueError(
                    f"store {', '.join(hybrid)} is HYBRID: an Oracle HYBRID store embeds queries in the database, so "
                    "name the in-database model of the source's embedder (--oracle-model NAME, loaded with "
                    "`oramem db load-model`); nothing was written"
                )
        dst = _side(target, connect)
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")
        receipts = {sid: _erasure_entries(src, sid) for sid in wanted}
        for sid in wanted:
            _refuse_erased(src, dst, sid, receipts[sid], now, allow_erased)
        counts = [src.live_count(sid, now) for sid in wanted]
        total = None if any(c is None for c in counts) else sum(c or 0 for c in counts)
        done = 0
        report = MigrationReport()

        def step(n: int) -> None:
            nonlocal done
            done += n
            if progress is not None:
                progress(done, total)

        for sid in wanted:
            info = catalog[sid]
            _copy_records(src, dst, info, now, batch_size, report, step, oracle_model, receipts[sid])
            _copy_knowledge(src, dst, info, batch_size, report, step)
            comparison = _compare(src, dst, info, now)
            comparison.erased_during_copy = _erased_during_copy(src, dst, info, now, receipts[sid], oracle_model,
                                                                allow_erased)
            report.stores.append(comparison)
        return report
    finally:
        src.close()
        if dst is not None:
            dst.close()


# ----------------------------------------------------------------------------- erasure log (SC-14)
def _erasure_entries(side: Any, store_id: str) -> list[dict]:
    """The receipts of a store's erasure log (none when the database or its log does not exist)."""
    import json

    from .sqlite.erasure import LOG_TABLE

    if side.kind == "oracle":
        from .oracle import admin

        return admin.erasure_log(side.conn, store_id)
    if not os.path.isfile(side.path):
        return []
    conn = side._ro()
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (LOG_TABLE,)).fetchone():
            return []
        return [json.loads(row[0]) for row in conn.execute(
            f"SELECT receipt FROM {LOG_TABLE} WHERE store_id = ? ORDER BY erased_at, receipt_id", (store_id,))]
    finally:
        conn.close()


def _scopes(side: Any, store_id: str, now: str) -> tuple[set[str], set[str]]:
    """Every user and agent id a store's records and thread rows name (profiles included)."""
    users: set[str] = set()
    agents: set[str] = set()
    for _, user, agent, _c in side.threads(store_id, now):
        users.update([user] if user else [])
        agents.update([agent] if agent else [])
    for rows in _pages(side, store_id, now, 2000):
        for _, record, _ch in rows:
            if record.record_type == "user_profile":
                users.add(record.id)
            elif record.record_type == "agent_profile":
                agents.add(record.id)
            users.update([record.user_id] if record.user_id else [])
            agents.update([record.agent_id] if record.agent_id else [])
    kg_users, kg_agents = _knowledge_scopes(side, store_id)
    return users | kg_users, agents | kg_agents


def _knowledge_scopes(side: Any, store_id: str) -> tuple[set[str], set[str]]:
    """Every user and agent id the store's knowledge rows name (``user_id`` / ``agent_id``
    columns), as an import reads them from a file's knowledge lines (SC-14.4): an erased
    user's events, facts and entities are copied by :func:`_copy_knowledge` whether or not a
    live store record still names her (hers may have expired and been purged)."""
    import sqlalchemy as sa

    tables = _kg_tables(side, store_id, 1)
    if not tables:
        return set(), set()
    users: set[str] = set()
    agents: set[str] = set()
    engine = side.sa_engine(read_only=True)
    try:
        insp = sa.inspect(engine)
        with engine.connect() as conn:
            for table in tables:
                have = {c["name"].lower() for c in insp.get_columns(table.name)}
                for name, bucket in (("user_id", users), ("agent_id", agents)):
                    if name in table.c and name in have:
                        column = table.c[name]
                        bucket.update(v for (v,) in conn.execute(sa.select(column).where(column.is_not(None)).distinct())
                                      if isinstance(v, str))
    finally:
        engine.dispose()
    return users, agents


def _refuse_erased(src: Any, dst: Any, store_id: str, receipts: list[dict], now: str, allow_erased: bool) -> None:
    entries = receipts + _erasure_entries(dst, store_id)
    if allow_erased or not entries:
        return
    from .trust.erasure import refuse_erased

    users, agents = _scopes(src, store_id, now)
    refuse_erased(entries, users, agents, what=f"store {store_id} of {src.name}")


def _erased_during_copy(src: Any, dst: Any, info: StoreInfo, now: str, seen: list[dict], oracle_model: Optional[str],
                        allow_erased: bool) -> dict[str, list[str]]:
    """After a store's copy: the source's receipts written since :func:`migrate` read its log
    (an erasure that committed while the pages were read) go into the target's log too, and
    the subjects they name that the target still holds (rows copied before the erasure) are
    returned, so the copy is reported as not done (SC-14.3, SC-14.4)."""
    have = {e.get("receipt_id") for e in seen}
    # an Oracle source read its pages in one snapshot: the log is read after it, so a receipt
    # committed during the copy is seen; an Oracle target's snapshot (the comparison) ends
    # before the log write
    src.end_snapshot()
    dst.end_snapshot()
    late = [e for e in _erasure_entries(src, info.store_id) if e.get("receipt_id") not in have]
    if not late:
        return {"user": [], "agent": []}
    from .trust.erasure import find_erased, merge_log

    store = dst.open_store(info, oracle_model)
    try:
        merge_log(store, late)
    finally:
        store.close()
    if allow_erased:
        return {"user": [], "agent": []}
    try:
        users, agents = _scopes(dst, info.store_id, now)
    finally:
        dst.end_snapshot()  # the next store's copy writes on this connection
    hit = find_erased(late, users, agents)
    return {"user": sorted(hit["user"]), "agent": sorted(hit["agent"])}


# ----------------------------------------------------------------------------- records
def _pages(side: Any, store_id: str, now: str, size: int) -> Iterator[list[Row]]:
    after = 0
    while True:
        rows = side.rows(store_id, after, size, now)
        if not rows:
            return
        after = rows[-1][0]
        yield rows


def _batch(items: list[tuple[Record, list]], dim: Optional[int]) -> list[PendingRecordBatch]:
    """One restore batch per record type (the API's unit), in seq order within each."""
    import numpy as np

    by_type: dict[str, list] = {}
    for record, chunks in items:
        by_type.setdefault(record.record_type, []).append((record, chunks))
    out = []
    for rtype, group in by_type.items():
        index_texts, embeddings = [], []
        vectors_known = all(all(v is not None for _, v in ch) for _, ch in group)
        for record, chunks in group:
            index_texts.append([text for text, _ in chunks] if chunks else "")
            if chunks:
                embeddings.append([np.frombuffer(v, dtype="<f4") for _, v in chunks] if vectors_known else None)
            else:
                embeddings.append([])
        kwargs: dict[str, Any] = dict(
            record_ids=[r.id for r, _ in group], thread_ids=[r.thread_id for r, _ in group],
            user_ids=[None if rtype == "user_profile" else r.user_id for r, _ in group],
            agent_ids=[None if rtype == "agent_profile" else r.agent_id for r, _ in group],
            timestamps=[r.timestamp for r, _ in group], metadata=[r.metadata for r, _ in group],
            index_texts=index_texts,
        )
        if rtype == "message":
            kwargs["roles"] = [getattr(r, "role", None) for r, _ in group]
        if dim is not None and vectors_known:
            kwargs["embeddings"] = embeddings
        out.append(PendingRecordBatch([r.content for r, _ in group], rtype, **kwargs))
    return out


def _copy_records(src: Any, dst: Any, info: StoreInfo, now: str, batch_size: int, report: MigrationReport,
                  step: Callable[[int], None], oracle_model: Optional[str], receipts: Sequence[Any] = ()) -> None:
    store = dst.open_store(info, oracle_model)
    try:
        if receipts:
            from .trust.erasure import merge_log

            merge_log(store, receipts)
        # SC-13.6: the thread rows as they are, before any record that names them (a record
        # would create its thread row implicitly, with its own scope as the opener)
        threads = src.threads(info.store_id, now)
        for start in range(0, len(threads), batch_size):
            store.restore_threads(threads[start:start + batch_size], on_conflict="skip")
        for rows in _pages(src, info.store_id, now, batch_size):
            items = [(r, ch) for _, r, ch in rows if r.record_type != "thread"]
            batches = _batch(items, info.vector_dim)
            times = [(r.created_at, r.expires_at) for b in batches for r, _ in items if r.record_type == b.record_type]
            if batches:
                # a store copy keeps the verdicts the source's firewall wrote (callers cannot
                # write the key, SC-15.4); a target with a policy screens them again
                written = store.restore_batches(batches, times=times, on_conflict="skip", batch_size=batch_size,
                                                keep_verdicts=True)
                report.copied_records += len(written)
                report.skipped_records += len(times) - len(written)
            step(len(times))
    finally:
        store.close()
    dst.keep_embedder(info)


class _CopiedVectors:
    """The embedder an Oracle copy is opened with: it reports the identity the copied
    vectors came from, so the copy records it (issue 28; docs/embeddings.md) and keeps its
    chunk policy: the source's recorded identity; for a HYBRID source without one, the
    in-database model's without ``chunking`` (the copied rows keep the legacy chunking). It
    embeds only rows copied without a vector, with the in-database model of a HYBRID copy."""

    def __init__(self, identity: dict[str, Any], dimension: int, model: Any) -> None:
        self.embedder_identity = identity
        self.embedding_dimension = dimension
        self._model = model

    @classmethod
    def of(cls, info: StoreInfo, model: Any) -> Any:
        """The embedder to open the copy of ``info`` with (``model``: the HYBRID copy's
        ``OracleDBEmbedder``, else None); None when there is no identity to record."""
        from .embedders.identity import decode_identity, identity_of

        identity = decode_identity(info.embedder) if info.embedder else None
        if identity is None and model is not None:
            identity = {k: v for k, v in (identity_of(model) or {}).items() if k != "chunking"}
        if identity is None or not info.vector_dim:
            return model
        return cls(identity, int(info.vector_dim), model)

    def embed(self, texts: Sequence[str], is_query: bool = False) -> Any:
        if self._model is None:
            raise StoreError(
                "a row without a vector cannot be copied into this Oracle store (it embeds nothing itself); "
                "re-embed the source first (`oramem reembed`)"
            )
        return self._model.embed(texts, is_query=is_query)


# ----------------------------------------------------------------------------- knowledge
def _kg_tables(side: Any, store_id: str, vector_dim: int) -> list[Any]:
    """The store's knowledge tables present on this side, parents first."""
    from .knowledge.db.schema import build_tables

    present = side.knowledge_tables()
    return [t for t in build_tables(store_id, vector_dim).metadata.sorted_tables if t.name in present]


def _copy_knowledge(src: Any, dst: Any, info: StoreInfo, batch_size: int, report: MigrationReport,
                    step: Callable[[int], None]) -> None:
    """Rows the target lacks (by primary key), in batches of one transaction each."""
    dim = int(info.vector_dim or 1)  # the table names do not depend on the dimension
    tables = _kg_tables(src, info.store_id, dim)
    if not tables:
        return
    source = src.sa_engine(read_only=True)
    try:
        target = dst.sa_engine(read_only=False)
        try:
            dst.ensure_knowledge(target, info.store_id, dim)
            with source.connect() as rconn:
                for table in tables:
                    pk = list(table.primary_key.columns)
                    result = rconn.execution_options(stream_results=True).execute(table.select().order_by(*pk))
                    while True:
                        chunk = [dict(r._mapping) for r in result.fetchmany(batch_size)]
                        if not chunk:
                            break
                        with target.begin() as wconn:
                            report.copied_knowledge_rows += _insert_missing(wconn, table, pk, chunk)
                        step(len(chunk))
        finally:
            target.dispose()
    finally:
        source.dispose()


def _insert_missing(conn: Any, table: Any, pk: list, rows: list[dict]) -> int:
    import sqlalchemy as sa

    from .knowledge.db.queries import chunked

    keys = [tuple(r[c.name] for c in pk) for r in rows]
    present: set = set()
    # D7: Oracle allows at most 1000 expressions in a list (ORA-01795) and --batch-size goes
    # to 10,000: look the keys up in chunks of reads.IN_BATCH (500)
    for part in chunked(keys):
        cond = pk[0].in_([k[0] for k in part]) if len(pk) == 1 else sa.tuple_(*pk).in_(part)
        present.update(tuple(r) for r in conn.execute(sa.select(*pk).where(cond)))
    fresh = [r for r, k in zip(rows, keys) if k not in present]
    if fresh:
        conn.execute(table.insert(), fresh)
    return len(fresh)


# ----------------------------------------------------------------------------- comparison
def _records_digest(side: Any, store_id: str, now: str) -> tuple[int, str]:
    lines = []
    for rows in _pages(side, store_id, now, 2000):
        for _, r, chunks in rows:
            if r.record_type == "thread":
                lines.append(json.dumps(["thread", r.id, r.user_id, r.agent_id, _instant(r.created_at)]))
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


def _instant(text: Optional[str]) -> Optional[str]:
    """An ISO-8601 time in one spelling (UTC, microseconds), whichever engine wrote it."""
    if text is None:
        return None
    value = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return value.astimezone(_dt.timezone.utc).isoformat(timespec="microseconds")


def _canonical(value: Any) -> Any:
    """A knowledge value as both engines' mappings read it, in one spelling."""
    import numpy as np

    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return value.isoformat(timespec="microseconds")
    if isinstance(value, np.ndarray):
        return value.astype("<f4").tobytes().hex()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (dict, list)):
        return json.dumps(_same_numbers(value), sort_keys=True, default=str)
    return _same_numbers(value)


def _same_numbers(value: Any) -> Any:
    """D1: an Oracle JSON column keeps numbers as NUMBER, so 1.0 written comes back as 1
    (python-oracledb: Decimal('1'), oramem.knowledge.db.schema: int); SQLite's text keeps 1.0. The
    digest spells an integral float as the int on both sides (equal values compare equal)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _same_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_same_numbers(v) for v in value]
    return value


def _knowledge_digest(side: Any, store_id: str, vector_dim: int) -> dict[str, tuple[int, str]]:
    tables = _kg_tables(side, store_id, vector_dim)
    if not tables:
        return {}
    engine = side.sa_engine(read_only=True)
    try:
        out = {}
        with engine.connect() as conn:
            for table in tables:
                names = sorted(c.name for c in table.columns)
                rows = sorted(
                    json.dumps([_canonical(r._mapping[n]) for n in names], default=str) for r in conn.execute(table.select())
                )
                out[table.name] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest())
        return out
    finally:
        engine.dispose()


def _compare(src: Any, dst: Any, info: StoreInfo, now: str) -> StoreComparison:
    sid, dim = info.store_id, int(info.vector_dim or 1)
    (n_src, h_src), (n_dst, h_dst) = _records_digest(src, sid, now), _records_digest(dst, sid, now)
    comparison = StoreComparison(sid, (n_src, n_dst), h_src == h_dst)
    k_src, k_dst = _knowledge_digest(src, sid, dim), _knowledge_digest(dst, sid, dim)
    for name in sorted(set(k_src) | set(k_dst)):
        a, b = k_src.get(name, (0, "")), k_dst.get(name, (0, ""))
        comparison.knowledge[name] = (a[0], b[0])
        if a != b:
            comparison.knowledge_match = False
    return comparison
