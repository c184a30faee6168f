"""The write paths of the SQLite engine: insert, update, delete, cascade, purge and
search-index sync, each running inside one :class:`WriteTx` (one ``BEGIN IMMEDIATE``
transaction) opened by :class:`oramem.sqlite.SQLiteEngine`."""

from __future__ import annotations

import json
from oramem.sqlite._sqlite import sqlite3
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, NoReturn, Optional, Sequence

import numpy as np

from ..errors import DuplicateRecordError
from ..requests import AddRequest, ChunkRow, DeletionEvent, RecordRewrite, RetrievalChange, UpdateRequest
from ..types import NOT_SET, PROFILE_TYPES, NotSetType, SCOPED_TYPES, SearchIndexSyncMode, SearchStrategy
from .records import dump_metadata
from .schema import SCHEMA_VERSION, SCOPED_FTS_VERSION, StoreTables, has_keyword
from .timefmt import expiry

__all__ = [
    "Catalog", "WriteTx", "resolve_conflicts", "check_restore", "add_records", "update_record", "delete_record", "delete_thread", "purge",
    "forget", "delete_keys", "release_actor",
]

_IN_SEQS = "(SELECT value FROM json_each(:seqs))"
#: little-endian float32, the stored vector format
_F4 = np.dtype("<f4")

#: a delete of fewer keyword rows always uses FTS5 secure-delete (WriteTx._merge_instead)
MERGE_MIN_ROWS = 64
#: a delete of D keyword tokens from an index of T merges it when D² ≥ MERGE_FACTOR · T
MERGE_FACTOR = 23


@dataclass(frozen=True)
class Catalog:
    """The catalog row of the store as this transaction sees it."""

    generation: str
    change_seq: int
    capability: SearchStrategy
    vector_dim: Optional[int]
    sync: SearchIndexSyncMode
    schema_version: int = SCHEMA_VERSION
    #: None: a schema-1 store (``legacy`` keyword language)
    keyword_language: Optional[str] = None
    #: how the keyword index groups a record's retrieval rows (``StoreTables.keyword_rows``;
    #: :func:`oramem.chunking.keyword_row_chars` of the recorded embedder identity)
    keyword_rows: Optional[int] = None
    #: the recorded embedder identity as the catalog holds it (JSON text; None: unrecorded)
    embedder: Optional[str] = None

    @property
    def version(self) -> tuple[str, int]:
        return (self.generation, self.change_seq)

    @property
    def scoped_fts(self) -> bool:
        """The FTS rows carry the scope column (schema version 3 and later)."""
        return self.schema_version >= SCOPED_FTS_VERSION


@dataclass
class WriteTx:
    """One write transaction: connection, tables, catalog, clock reading, and the record
    seqs it touched (their cached vectors are refreshed after commit)."""

    conn: sqlite3.Connection
    tables: StoreTables
    catalog: Catalog
    now: str
    touched: set[int] = field(default_factory=set)
    #: FTS rows were deleted: the transaction ends with :func:`erase_deleted_text`.
    fts_deleted: bool = False
    #: rows deleted per table name (what ``forget`` reports)
    erased: dict[str, int] = field(default_factory=dict)
    #: retrieval rows were deleted or their vectors replaced: the old vectors go from the
    #: sidecar snapshot too (engine._write)
    vectors_dropped: bool = False
    #: whether an unfinished reembed's work table exists (None: not looked up yet)
    reembed_work: Optional[bool] = None

    def count(self, kind: str, cursor: sqlite3.Cursor) -> None:
        name = self.tables.names[kind]
        self.erased[name] = self.erased.get(name, 0) + max(cursor.rowcount, 0)

    def vector_blob(self, vector: Optional[np.ndarray]) -> Optional[bytes]:
        if vector is None:
            return None
        if type(vector) is np.ndarray and vector.dtype == _F4 and vector.ndim == 1:
            # what normalize hands over (float32 rows): the bytes as they are, without
            # the per-row asarray/reshape (~3 µs a chunk of a bulk add)
            if self.catalog.vector_dim is None or vector.shape[0] == self.catalog.vector_dim:
                return vector.tobytes()
        array = np.asarray(vector, dtype="<f4").reshape(-1)
        dim = self.catalog.vector_dim
        if dim is not None and array.shape[0] != dim:
            raise ValueError(f"a vector has dimension {array.shape[0]}, the store's vector_dim is {dim}")
        return array.tobytes()

    def insert_chunks(self, rows: list[tuple[int, int, str, Optional[bytes]]], batch_size: int) -> None:
        t = self.tables
        for start in range(0, len(rows), batch_size):
            self.conn.executemany(
                f"INSERT INTO {t.chunks} (record_seq, chunk_index, text, vector) VALUES (?, ?, ?, ?)",
                rows[start : start + batch_size],
            )
        seqs = sorted({row[0] for row in rows})
        if seqs and has_keyword(self.catalog.capability):
            # MANUAL mode parks new rows until sync_search_index(); ON_COMMIT/AUTO index them now.
            # one add's new records have consecutive seqs: a range the chunk index seeks
            # once, instead of a json_each lookup per record
            dense = seqs[-1] - seqs[0] == len(seqs) - 1
            where = "record_seq BETWEEN :lo AND :hi" if dense else f"record_seq IN {_IN_SEQS}"
            params = {"lo": seqs[0], "hi": seqs[-1]} if dense else {"seqs": json.dumps(seqs)}
            if self.catalog.sync == SearchIndexSyncMode.MANUAL:
                sql = f"INSERT INTO {t.pending} (chunk_id) SELECT chunk_id FROM {t.chunks} WHERE {where}"
            else:
                sql = t.fts_fill(f"c.{where}", self.catalog.scoped_fts, self.catalog.keyword_rows)
            self.conn.execute(sql, params)

    def delete_chunks(self, seqs: Sequence[int]) -> None:
        t = self.tables
        params = {"seqs": json.dumps(list(seqs))}
        of_records = f"(SELECT chunk_id FROM {t.chunks} WHERE record_seq IN {_IN_SEQS})"
        if has_keyword(self.catalog.capability):
            merge = self._merge_instead(params)
            if merge:
                self.conn.execute(f"INSERT INTO {t.fts}({t.fts}, rank) VALUES ('secure-delete', 0)")
            self.count("fts", self.conn.execute(f"DELETE FROM {t.fts} WHERE rowid IN {of_records}", params))
            if merge:
                # one merge of every segment drops the deleted rows' entries (and the delete
                # markers) from the index blobs; the freed pages are zeroed (secure_delete pragma)
                self.conn.execute(f"INSERT INTO {t.fts}({t.fts}) VALUES ('optimize')")
                self.conn.execute(t.secure_delete_sql)
            self.count("fts_pending", self.conn.execute(f"DELETE FROM {t.pending} WHERE chunk_id IN {of_records}", params))
            self.fts_deleted = self.fts_deleted or bool(seqs)
        if self._reembed_pending():
            # an unfinished reembed's work table holds each copied row's text: a deleted or
            # re-texted row's goes with it (a profile cascade, a delete, a purge, an update),
            # not only at the next forget (SC-8.1, SC-14.2: the erasure scan counts a word
            # still in the work table as another live row's)
            work = f'"{t.names["reembed"]}"'
            self.count("reembed", self.conn.execute(f"DELETE FROM {work} WHERE chunk_id IN {of_records}", params))
        cursor = self.conn.execute(f"DELETE FROM {t.chunks} WHERE record_seq IN {_IN_SEQS}", params)
        self.count("chunks", cursor)
        self.vectors_dropped = self.vectors_dropped or cursor.rowcount > 0
        self.touched.update(seqs)

    def _reembed_pending(self) -> bool:
        """Whether the store has a reembed's work table (looked up once per transaction)."""
        if self.reembed_work is None:
            self.reembed_work = self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (self.tables.names["reembed"],)
            ).fetchone() is not None
        return self.reembed_work

    def _merge_instead(self, params: dict[str, Any]) -> bool:
        """Whether this delete erases its keyword rows by one merge of the whole index
        instead of FTS5 secure-delete. Secure-delete costs per deleted row and term (each
        term is sought in every segment and its page rewritten: a 23-token row ~0.12 ms at
        10k rows, ~0.5 ms at 100k, ~1.6 ms at 1M); the merge (``'optimize'``) costs per
        token of the index (~0.07 µs). For 23-token rows they cross near sqrt(rows) deleted
        rows (~125, 300 and 940 measured at 10k, 100k and 1M), i.e. where the deleted tokens
        D and the index's tokens T satisfy D² ≈ 23·T: a delete with D² ≥ MERGE_FACTOR·T (and
        at least MERGE_MIN_ROWS rows) merges (``delete_thread``, a cascade, a TTL purge;
        bench/results/delete_cost.md). Only an index with secure-delete (an older one
        rebuilds anyway, :func:`erase_deleted_text`)."""
        t = self.tables
        (rows,) = self.conn.execute(f"SELECT count(*) FROM {t.chunks} WHERE record_seq IN {_IN_SEQS}", params).fetchone()
        if rows < MERGE_MIN_ROWS or not t.has_secure_delete(self.conn):
            return False
        deleted = t.fts_tokens_of(self.conn, _IN_SEQS, params)
        return deleted * deleted >= MERGE_FACTOR * t.fts_token_count(self.conn)

    def delete_records(self, victims: Sequence[tuple[Any, ...]]) -> None:
        seqs = [v[0] for v in victims]
        self.delete_chunks(seqs)
        cursor = self.conn.execute(f"DELETE FROM {self.tables.records} WHERE seq IN {_IN_SEQS}", {"seqs": json.dumps(seqs)})
        self.count("records", cursor)


# -- add -----------------------------------------------------------------------------------
def resolve_conflicts(tx: WriteTx, request: AddRequest) -> tuple[AddRequest, Optional[DeletionEvent]]:
    """Apply ``request.on_conflict`` to ids already stored: "fail" leaves the request as it
    is (``add_records`` refuses it), "skip" drops those records, "replace" deletes the
    stored ones (retrieval rows included) in this transaction and reports them."""
    if request.on_conflict == "fail":
        return request, None
    keys = json.dumps([[r.record_type, r.id] for r in request.records])
    in_keys = "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(:keys))"
    victims = _victims(tx, f"(record_type, id) IN {in_keys}", {"keys": keys})
    if not victims:
        return request, None
    if request.on_conflict == "skip":
        stored = {(v[1], v[2]) for v in victims}
        kept = tuple(r for r in request.records if (r.record_type, r.id) not in stored)
        return AddRequest(kept, request.batch_size), None
    _refuse_foreign_replace(request, victims)
    tx.delete_records(victims)
    event = DeletionEvent(
        memory_store_id=tx.tables.store_id, **_event_records(victims), reason="replace"
    )
    return AddRequest(request.records, request.batch_size), event


def _refuse_foreign_replace(request: AddRequest, victims: Sequence[Victim]) -> None:
    refuse_foreign({(r.record_type, r.id): (r.agent_id, r.user_id) for r in request.records}, victims)


def refuse_foreign(wanted: Mapping[tuple[str, str], tuple[Optional[str], Optional[str]]],
                   victims: Sequence[Victim]) -> None:
    """``wanted``: the new records' ``(agent_id, user_id)`` by ``(record_type, id)``;
    ``victims``: the stored rows under those keys.

    "replace" restores a record from a backup over the same record: a stored record of
    another user or agent under the id is another actor's record that happens to share it
    (ids are the application's), and deleting it would lose her memory to his line (red40).
    A thread row (``restore_threads``, SC-13.6) names who opened the thread (SC-13.2): one
    of another user or agent, or of no user where the line names one (or the reverse), is
    refused the same way (imp47): replacing it would hand Alice's private thread to Bob, or
    make him the opener of the agent's shared thread, which decides what ``forget``, a
    scoped export and ``oramem.threads.write_refusal`` do there. NULL equals only NULL.
    Refused, naming the ids (never whose they are), before anything is written (the batch's
    own check, and :func:`check_restore`'s over a whole file before its first batch, imp48)."""
    foreign = sorted(((v[1], v[2]) for v in victims if wanted.get((v[1], v[2]), (v[3], v[4])) != (v[3], v[4])),
                     key=lambda c: (c[1], c[0]))
    if not foreign:
        return
    listed = ", ".join(f"{rid!r} ({rtype})" for rtype, rid in foreign[:5])
    more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
    threads = ("; a thread row says who opened the thread, which replace never changes (restore_threads with "
               "on_conflict=\"skip\" and `oramem import --on-conflict skip` keep the stored row)"
               if any(rtype == "thread" for rtype, _ in foreign) else "")
    raise DuplicateRecordError(
        f"record_ids stored for another user or agent than the new records name: {listed}{more}; replace only "
        "replaces a record of the same user and agent (the same record, restored), so nothing was added: give "
        f"these records other ids, or delete the stored ones first if they are to go{threads}", foreign)


def add_records(tx: WriteTx, request: AddRequest) -> list[str]:
    t, conn = tx.tables, tx.conn
    in_keys = "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"

    def keys() -> str:
        return json.dumps([[r.record_type, r.id] for r in request.records])

    types = {r.record_type for r in request.records}
    if len(types) == 1:  # one add: one type, so only the ids are looked up (half the cost)
        clashes = conn.execute(
            f"SELECT record_type, id FROM {t.records} WHERE record_type = ? AND id IN (SELECT value FROM json_each(?))",
            (next(iter(types)), json.dumps([r.id for r in request.records])),
        ).fetchall()
    else:
        clashes = conn.execute(f"SELECT record_type, id FROM {t.records} WHERE (record_type, id) IN {in_keys}", (keys(),)).fetchall()
    if clashes:
        refuse_stored(clashes)

    rows = []
    for rec in request.records:
        ttl = rec.ttl
        if rec.restored_times is not None:
            created, expires = rec.restored_times
        elif ttl is None or ttl.days is None:  # never expires (what expiry() returns first)
            created, expires = tx.now, None
        else:
            created = tx.now
            expires = expiry(ttl, tx.now, rec.timestamp, f"record {rec.id!r}")
        thread_id = (rec.thread_id or rec.id) if rec.record_type == "thread" else rec.thread_id
        rows.append(
            (
                rec.record_type,
                rec.id,
                rec.content,
                rec.timestamp,
                rec.metadata_json if rec.metadata_json is not None else dump_metadata(rec.metadata),
                thread_id,
                rec.user_id,
                rec.agent_id,
                rec.role,
                created,
                expires,
            )
        )
    size = request.batch_size
    seqs: Optional[list[int]] = []
    for start in range(0, len(rows), size):
        batch = rows[start : start + size]
        conn.executemany(
            f"""INSERT INTO {t.records} (record_type, id, content, timestamp, metadata, thread_id, user_id,
                                         agent_id, role, created_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            batch,
        )
        if seqs is not None:
            seqs = _batch_seqs(tx, batch, seqs)
    if seqs is None:  # not derivable from the batches: look every record up
        seq_of = {
            (rtype, rid): seq
            for seq, rtype, rid in conn.execute(
                f"SELECT seq, record_type, id FROM {t.records} WHERE (record_type, id) IN {in_keys}", (keys(),)
            )
        }
        seqs = [seq_of[(rec.record_type, rec.id)] for rec in request.records]
    chunk_rows = [
        (seq, index, chunk.text, tx.vector_blob(chunk.vector))
        for rec, seq in zip(request.records, seqs)
        for index, chunk in enumerate(rec.chunks)
    ]
    tx.insert_chunks(chunk_rows, size)

    # SC-2.3: the first scoped write naming a thread creates it; that write's user and
    # agent are recorded on the thread row as the ones who opened it (SC-13.2: a record of
    # who opened it, not a grant over other records in it).
    # (one row per thread: a later record naming the same thread would be DO NOTHING)
    first_naming: dict[str, tuple[Any, ...]] = {}
    for rec in request.records:
        if rec.record_type in SCOPED_TYPES and rec.thread_id is not None and rec.thread_id not in first_naming:
            first_naming[rec.thread_id] = ("thread", rec.thread_id, rec.thread_id, rec.user_id, rec.agent_id, tx.now)
    threads = list(first_naming.values())
    for start in range(0, len(threads), size):
        conn.executemany(
            f"""INSERT INTO {t.records} (record_type, id, thread_id, user_id, agent_id, created_at)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (record_type, id) DO NOTHING""",
            threads[start : start + size],
        )
    tx.touched.update(seqs)
    return [rec.id for rec in request.records]


def _batch_seqs(tx: WriteTx, batch: list[tuple[Any, ...]], seqs: list[int]) -> Optional[list[int]]:
    """``seqs`` extended by the seqs of the just-inserted ``batch`` (rows in insertion
    order, record_type and id first), or None when they cannot be derived.

    AUTOINCREMENT gives every new row a seq larger than any before it, so the batch's seqs
    increase in insertion order; if the first and last rows (looked up by their key) are
    ``len(batch) - 1`` apart, the batch holds exactly the seqs in between, in order."""
    sql = f"SELECT seq FROM {tx.tables.records} WHERE record_type = ? AND id = ?"
    (first,) = tx.conn.execute(sql, batch[0][:2]).fetchone()
    (last,) = tx.conn.execute(sql, batch[-1][:2]).fetchone()
    if last - first != len(batch) - 1:
        return None
    seqs.extend(range(first, last + 1))
    return seqs


def refuse_stored(clashes: Sequence[tuple[str, str]]) -> NoReturn:
    """"fail": ids stored already (``(record_type, id)`` pairs) refuse the add, naming them."""
    raise DuplicateRecordError(_duplicate_message(list(clashes)), sorted(clashes, key=lambda c: (c[1], c[0])))


def check_restore(conn: Any, tables: Any, keys: Sequence[tuple[str, str, Optional[str], Optional[str]]],
                  on_conflict: str) -> None:
    """What :func:`resolve_conflicts` and :func:`add_records` would refuse for records of
    ``keys`` (``(record_type, id, agent_id, user_id)``, ids unique per type), read in the
    caller's transaction, writing nothing (imp48: ``jsonl.import_records`` runs it over the
    whole file before its first batch, so a file a later batch would refuse writes nothing).
    "fail": any stored key (:func:`refuse_stored`); "replace": a stored row of another scope
    (:func:`refuse_foreign`); "skip" refuses nothing. The stored rows are looked up
    ``RESTORE_CHECK_CHUNK`` keys per statement, as ``resolve_conflicts`` looks them up."""
    if on_conflict == "skip" or not keys:
        return
    in_keys = "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(:keys))"
    stored: list[Victim] = []
    for start in range(0, len(keys), RESTORE_CHECK_CHUNK):
        part = json.dumps([[k[0], k[1]] for k in keys[start:start + RESTORE_CHECK_CHUNK]])
        stored.extend(conn.execute(f"SELECT seq, record_type, id, agent_id, user_id FROM {tables.records} r "
                                   f"WHERE (record_type, id) IN {in_keys}", {"keys": part}).fetchall())
    if not stored:
        return
    if on_conflict == "fail":
        refuse_stored(sorted(((v[1], v[2]) for v in stored), key=lambda c: (c[1], c[0])))
    refuse_foreign({(k[0], k[1]): (k[2], k[3]) for k in keys}, stored)


#: keys per statement of :func:`check_restore`
RESTORE_CHECK_CHUNK = 500


def _duplicate_message(clashes: list[tuple[str, str]]) -> str:
    profiles = [(rtype, rid) for rtype, rid in clashes if rtype in PROFILE_TYPES]
    if profiles:
        rtype, rid = profiles[0]
        return f"{rtype.replace('_', ' ')} {rid!r} already exists; update it instead of adding it again"
    listed = ", ".join(f"{rid!r} ({rtype})" for rtype, rid in clashes[:5])
    more = f" and {len(clashes) - 5} more" if len(clashes) > 5 else ""
    return f"record_ids already stored: {listed}{more}; nothing was added"


# -- update --------------------------------------------------------------------------------
def update_record(tx: WriteTx, request: UpdateRequest) -> int:
    t, conn = tx.tables, tx.conn
    found = conn.execute(
        f"SELECT seq, timestamp, created_at, expires_at FROM {t.records} WHERE record_type = ? AND id = ?",
        (request.record_type, request.record_id),
    ).fetchone()
    if found is None:
        return 0
    seq, stored_timestamp, created_at, expires_at = found
    # SC-5.6: an expired, not yet purged record can only be revived by a new expiry.
    if expires_at is not None and expires_at <= tx.now and request.ttl is NOT_SET:
        return 0

    sets: dict[str, object] = {}
    if request.content is not NOT_SET:
        sets["content"] = request.content
    if not isinstance(request.metadata, NotSetType):
        sets["metadata"] = dump_metadata(request.metadata)
    if request.timestamp is not NOT_SET:
        sets["timestamp"] = request.timestamp
    if not isinstance(request.ttl, NotSetType):
        anchor_time = stored_timestamp if isinstance(request.timestamp, NotSetType) else request.timestamp
        sets["expires_at"] = expiry(request.ttl, created_at, anchor_time, f"{request.record_type} {request.record_id!r}")

    _change_retrieval(tx, seq, request)
    if sets:
        assignments = ", ".join(f"{column} = :{column}" for column in sets)  # fixed column names
        conn.execute(f"UPDATE {t.records} SET {assignments} WHERE seq = :seq", {**sets, "seq": seq})
    tx.touched.add(seq)
    return 1


def _change_retrieval(tx: WriteTx, seq: int, request: UpdateRequest) -> None:
    t, conn, change = tx.tables, tx.conn, request.retrieval
    if change == RetrievalChange.KEEP:
        return
    if change in (RetrievalChange.CLEAR, RetrievalChange.REPLACE):
        tx.delete_chunks([seq])
        if change == RetrievalChange.REPLACE:
            rows = [(seq, i, chunk.text, tx.vector_blob(chunk.vector)) for i, chunk in enumerate(request.chunks)]
            tx.insert_chunks(rows, max(1, len(rows)))
        return
    if change == RetrievalChange.STRIP_VECTORS:
        conn.execute(f"UPDATE {t.chunks} SET vector = NULL WHERE record_seq = ?", (seq,))
        tx.vectors_dropped = True
        return
    if change == RetrievalChange.REVECTOR:
        chunk_ids = [cid for (cid,) in conn.execute(
            f"SELECT chunk_id FROM {t.chunks} WHERE record_seq = ? ORDER BY chunk_index", (seq,)
        )]
        if len(chunk_ids) != len(request.vectors):
            raise ValueError(
                f"embedding gives {len(request.vectors)} vector(s) but {request.record_type} "
                f"{request.record_id!r} has {len(chunk_ids)} retrieval row(s); give one vector per row, "
                "or pass index_text together with the embedding"
            )
        conn.executemany(
            f"UPDATE {t.chunks} SET vector = ? WHERE chunk_id = ?",
            [(tx.vector_blob(v), cid) for v, cid in zip(request.vectors, chunk_ids)],
        )
        tx.vectors_dropped = True
        return
    raise ValueError(f"unknown retrieval change {change!r}")


# -- delete, cascade, purge ----------------------------------------------------------------
#: a record to delete: (seq, record_type, id, agent_id, user_id)
Victim = tuple[int, str, str, Optional[str], Optional[str]]


def _victims(tx: WriteTx, where: str, params: dict[str, Any]) -> list[Victim]:
    return tx.conn.execute(
        f"SELECT seq, record_type, id, agent_id, user_id FROM {tx.tables.records} r WHERE {where}", params).fetchall()


def _event_records(victims: Sequence[Victim]) -> dict[str, Any]:
    """A deletion event's ``records`` and their owners (``scopes``, SC-8.5)."""
    return {"records": tuple((v[1], v[2]) for v in victims), "scopes": tuple((v[3], v[4]) for v in victims)}


def release_actor(tx: WriteTx, column: str, actor: str) -> list[str]:
    """SC-13, before an actor's erasure: the threads removed whole, and the thread rows
    that stay lose the actor's id.

    ``column`` is ``user_id`` (a user) or ``agent_id`` (an agent), a fixed name. A thread
    is removed whole when the actor writes in it and no record of it carries another value
    of ``column`` (SC-13.3: a user's private conversation, her unscoped assistant replies
    included; SC-13.4: for an agent, also no record without an agent, so the thread holds
    nothing but the agent's own records). The thread row is not one of the thread's records
    here: who opened a thread decides nothing about its erasure (SC-13.2), so a thread another
    user opened, whose records of his are gone, is the actor's alone too, and goes whole with
    its row. Every other thread row naming the actor (it opened the thread) stays, without
    the actor's id (SC-13.2). Only live records decide (SC-5.4): another user's expired,
    not yet purged record does not make a thread shared (it is invisible to every read,
    the scoped export's answer too), and it stays where it is for the purge
    (:func:`cascade_victims`), so nothing carrying another value of ``column`` is touched.
    Returns the ids of the threads removed whole."""
    assert column in ("user_id", "agent_id")
    r = tx.tables.records
    other = _other_actor("o", column)
    params = {"actor": actor, "now": tx.now}
    private = [
        tid
        for (tid,) in tx.conn.execute(
            f"""SELECT DISTINCT p.thread_id FROM {r} p
                WHERE p.{column} = :actor AND p.thread_id IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM {r} o WHERE o.thread_id = p.thread_id
                                  AND o.record_type <> 'thread' AND {other}
                                  AND (o.expires_at IS NULL OR o.expires_at > :now))""",
            params,
        )
    ]
    tx.conn.execute(
        f"""UPDATE {r} SET {column} = NULL
            WHERE record_type = 'thread' AND {column} = :actor
              AND EXISTS (SELECT 1 FROM {r} o WHERE o.thread_id = {r}.id
                          AND o.record_type <> 'thread' AND {other}
                          AND (o.expires_at IS NULL OR o.expires_at > :now))""",
        params,
    )
    return sorted(private)


def actor_thread_ids(tx: WriteTx, column: str, actor: str) -> tuple[str, ...]:
    """Every thread holding one of the actor's own records (the thread rows aside: opening a
    thread is not writing in it), before its cascade: the event's ``actor_thread_ids``
    (KC-3.10, a layer above takes the actor's words out of what it copied from them)."""
    assert column in ("user_id", "agent_id")
    return tuple(row[0] for row in tx.conn.execute(
        f"SELECT DISTINCT thread_id FROM {tx.tables.records} WHERE {column} = ? AND thread_id IS NOT NULL "
        "AND record_type <> 'thread' ORDER BY thread_id", (actor,)))


def _other_actor(alias: str, column: str) -> str:
    """The rows of ``alias`` that carry another value of ``column`` than ``:actor``: for a
    user another user (a row without a user is not another user's, SC-13.3), for an agent
    another agent or none (SC-13.4). Never NULL (so ``NOT`` of it is safe)."""
    if column == "user_id":
        return f"({alias}.{column} IS NOT NULL AND {alias}.{column} <> :actor)"
    return f"({alias}.{column} IS NULL OR {alias}.{column} <> :actor)"


def cascade_victims(tx: WriteTx, column: str, actor: str, thread_ids: Sequence[str]) -> list[Victim]:
    """The records an actor's cascade removes besides its profile (SC-13.3, SC-13.4): its
    own records anywhere, and everything in the threads removed whole (``thread_ids``, from
    :func:`release_actor`) except another actor's expired, not yet purged records, which
    did not count there and are the purge's to remove (SC-5.5)."""
    other = _other_actor("r", column)
    return _victims(
        tx,
        f"record_type NOT IN ('user_profile', 'agent_profile') AND "
        f"({column} = :actor OR (thread_id IN (SELECT value FROM json_each(:threads)) "
        f"AND NOT (record_type <> 'thread' AND expires_at IS NOT NULL AND expires_at <= :now AND {other})))",
        {"actor": actor, "threads": json.dumps(list(thread_ids)), "now": tx.now},
    )


def delete_record(tx: WriteTx, record_type: str, record_id: str, cascade: bool) -> tuple[int, Optional[DeletionEvent]]:
    """Delete one record (a profile with ``cascade`` also the actor's own records and its
    private threads, SC-8.2, SC-13). Returns the count (1 only for a visible record) and
    the event; the event's ``thread_ids`` are the threads removed whole."""
    target = _victims(tx, "record_type = :type AND id = :id", {"type": record_type, "id": record_id})
    visible = tx.conn.execute(
        f"SELECT 1 FROM {tx.tables.records} WHERE record_type = ? AND id = ? AND (expires_at IS NULL OR expires_at > ?)",
        (record_type, record_id, tx.now),
    ).fetchone()
    victims = list(target)
    thread_ids: list[str] = []
    users: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    actor_threads: tuple[str, ...] = ()
    if cascade and record_type in PROFILE_TYPES:
        column = "user_id" if record_type == "user_profile" else "agent_id"  # one of two fixed names
        actor_threads = actor_thread_ids(tx, column, record_id)
        thread_ids = release_actor(tx, column, record_id)
        victims += cascade_victims(tx, column, record_id, thread_ids)
        users, agents = ((record_id,), ()) if record_type == "user_profile" else ((), (record_id,))
    tx.delete_records(victims)
    event = None
    if victims or users or agents:
        event = DeletionEvent(
            memory_store_id=tx.tables.store_id,
            **_event_records(victims),
            thread_ids=tuple(thread_ids),
            user_ids=users,
            agent_ids=agents,
            reason="cascade" if (users or agents) else "delete",
            actor_thread_ids=actor_threads,
        )
    return (1 if visible else 0), event


def delete_thread(tx: WriteTx, thread_id: str) -> tuple[int, DeletionEvent]:
    """SC-8.3: the thread row and every record scoped to the thread."""
    victims = _victims(tx, "thread_id = :tid OR (record_type = 'thread' AND id = :tid)", {"tid": thread_id})
    existed = any(v[1] == "thread" for v in victims)
    tx.delete_records(victims)
    event = DeletionEvent(
        memory_store_id=tx.tables.store_id,
        **_event_records(victims),
        thread_ids=(thread_id,),
        reason="delete_thread",
    )
    return (1 if existed else 0), event


def purge(tx: WriteTx) -> tuple[int, Optional[DeletionEvent]]:
    """SC-5.5: physically remove expired records and their retrieval rows."""
    victims = _victims(tx, "expires_at IS NOT NULL AND expires_at <= :now", {"now": tx.now})
    if not victims:
        return 0, None
    tx.delete_records(victims)
    return len(victims), DeletionEvent(memory_store_id=tx.tables.store_id, **_event_records(victims), reason="purge")


def delete_keys(tx: WriteTx, keys: Sequence[tuple[str, str]]) -> None:
    """Delete the records of no user named by ``(record_type, record_id)`` pairs (absent
    ones are ignored) with their retrieval rows; deletion hooks are not run again. What
    ``forget``'s erasers name after the actor's cascade: the cascade already removed every
    record of the erased user, so the ones left to take are unscoped (a shared fact learned
    from her message); a record of another user under a named key is his (an eraser names
    its rows' ids, and a knowledge row imported or written under another user's record id
    would otherwise take that record) and stays (SC-13.1)."""
    if not keys:
        return
    in_keys = "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(:keys))"
    tx.delete_records(_victims(tx, f"(record_type, id) IN {in_keys} AND user_id IS NULL",
                               {"keys": json.dumps([list(k) for k in keys])}))


def rewrite_records(tx: WriteTx, rewrites: Sequence[RecordRewrite]) -> None:
    """SC-8.5 [ext] (del48): what a deletion hook rewrites in other records of the deleting
    transaction. A record of the rewrite's owner only (agent and user; another owner's record
    under the id stays, SC-13.1): deleted when ``content`` is None (deletion hooks are not run
    again), else its text replaced and its retrieval rows by one row of that text without a
    vector (no embedder runs inside a delete), as ``update(text=..., embedding=None)``."""
    for rw in rewrites:
        victims = _victims(tx, "record_type = :t AND id = :i AND agent_id IS :a AND user_id IS :u",
                           {"t": rw.record_type, "i": rw.record_id, "a": rw.agent_id, "u": rw.user_id})
        if not victims:
            continue
        if rw.content is None:
            tx.delete_records(victims)
            continue
        update_record(tx, UpdateRequest(rw.record_type, rw.record_id, content=rw.content,
                                        retrieval=RetrievalChange.REPLACE, chunks=(ChunkRow(rw.content, None),)))


def forget(tx: WriteTx, profile_type: str, actor_id: str) -> DeletionEvent:
    """SC-8.6, store part: the SC-8.2 cascade of the actor's profile (present or not), and
    the deleted chunks' rows in an unfinished re-embedding's work table (they hold text;
    chunk ids are never reused, so a work row without its chunk is a deleted one). Each
    delete takes its chunks' work rows (``WriteTx.delete_chunks``); this sweep also takes
    those an older oramem left behind."""
    _, event = delete_record(tx, profile_type, actor_id, True)
    assert event is not None  # a cascade always reports its actor
    work = tx.tables.names["reembed"]
    if tx.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (work,)).fetchone():
        cursor = tx.conn.execute(f'DELETE FROM "{work}" WHERE chunk_id NOT IN (SELECT chunk_id FROM {tx.tables.chunks})')
        tx.count("reembed", cursor)
    return event


def erase_deleted_text(tx: WriteTx) -> None:
    """Erase deleted rows' words from a keyword index WITHOUT FTS5 ``secure-delete``: an
    older file opened without upgrading it (schema.py, ``_secure_delete``). An index with
    secure-delete (every index created or upgraded by this oramem) already lost them in
    the delete itself, and nothing runs here. Otherwise an FTS5 delete only adds a
    tombstone (the words stay in ``*_fts_data`` until their segment is merged, and VACUUM
    does not merge), so the index is rebuilt from its content: it re-tokenizes the whole
    index (0.1 s per 50k chunks). FTS5 ``'optimize'`` corrupted the index on SQLite 3.40.1
    after many updates and deletes (tests/hardening/test_fts_rebuild.py)."""
    if tx.tables.has_secure_delete(tx.conn):
        return
    fts = tx.tables.fts
    tx.conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")


def sync_index(tx: WriteTx) -> None:
    """SC-10.5: index the retrieval rows parked by MANUAL mode."""
    if not has_keyword(tx.catalog.capability):
        return
    t = tx.tables
    tx.conn.execute(t.fts_fill(f"c.chunk_id IN (SELECT chunk_id FROM {t.pending})", tx.catalog.scoped_fts,
                               tx.catalog.keyword_rows))
    tx.conn.execute(f"DELETE FROM {t.pending}")


def cache_rows(tx: WriteTx, seqs: Iterable[int], row_sql: str) -> list[Any]:
    """Current cacheable rows (with vectors) of ``seqs`` inside the transaction."""
    t = tx.tables
    return tx.conn.execute(
        f"{row_sql} FROM {t.chunks} c JOIN {t.records} r ON r.seq = c.record_seq "
        f"WHERE c.vector IS NOT NULL AND c.record_seq IN {_IN_SEQS}",
        {"seqs": json.dumps(sorted(seqs))},
    ).fetchall()
