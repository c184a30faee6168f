"""``SQLiteEngine``: the embedded engine behind :class:`oramem.SQLiteMemoryStore`.

It owns one SQLite file (or ``:memory:`` database), one connection per engine under a
lock (see :mod:`.connection`), the catalog/policies of :mod:`.schema`, the write paths
of :mod:`.mutations`, and per store a numpy vector cache (:mod:`.vectors`) that is
checked against the catalog's change counter at the start of every read, inside the read
transaction, so a write committed by another process is seen by the next search.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import datetime as _dt
import functools
import json
import math
import os
from oramem.sqlite._sqlite import sqlite3
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import numpy as np

from ..ann import AnnConfig, AnnUnavailable, available_backends
from ..engine import Block, DeletionHook, DeletionHookSpec, Engine
from ..embedders.identity import decode_identity, describe_identity, how_to_open, same_identity
from ..errors import StoreClosed, StoreError, StoreNotFound, StoreSettingsMismatch
from ..requests import (
    AddRequest, DeletionEvent, ErasureReport, ForgetRequest, RecordRewrite, ListRequest, Scope, ScopeMatch, SearchRequest, StoreSettings,
    UpdateRequest,
)
from ..types import PROFILE_TYPES, Record, SchemaPolicy, SearchIndexSyncMode, SearchStrategy
from . import audit as audit_log
from . import erasure as erasure_log
from . import mutations, sidecar
from .options import read_options, write_option
from .connection import Database, is_writable
from .keyword import (
    LEGACY_LANGUAGE, HybridConfig, SplitMatch, check_language, fuse, keyword_distance, match_expression, may_be_scope_token,
    query_terms, scope_token, split_match, word_phrase,
)
from .mutations import Catalog, WriteTx
from .records import RECORD_COLUMNS, Where, to_record
from .schema import (CATALOG, StoreState, StoreTables, apply_policy, has_keyword, has_knowledge_tables, has_vector,
                     keyword_rows_of)
from .timefmt import epoch_micros, iso
from ..filters import known_filter_key
from .vectors import CACHE_ROW_SQL, GaveUp, VectorCache

#: A LIMIT that stands for "all rows" (SQLite binds 64-bit integers).
_SQL_MAX_LIMIT = 2**62
#: Up to this many record seqs a statement binds them one by one (``IN (?, ?, ...)``, one
#: cached statement per count); more go as one JSON array through ``json_each``.
_BOUND_SEQS = 32

__all__ = ["SQLiteEngine"]

Clock = Callable[[], _dt.datetime]


@functools.lru_cache(maxsize=64)
def _types_json(record_types: tuple[str, ...]) -> str:
    """The JSON array a search binds for its record types (a handful of distinct tuples)."""
    return json.dumps(list(record_types))


def _is_memory(path: str) -> bool:
    return path in ("", ":memory:") or path.startswith("file::memory:")


def _sql_limit(limit: Optional[int]) -> Optional[int]:
    """A LIMIT SQLite can bind: one beyond 64 bits means "all rows"."""
    return None if limit is None or limit > 2**63 - 1 else limit


def _utc_now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


class SQLiteEngine(Engine):
    """One store (``memory_store_id``) in one SQLite file; see the module docstring.

    ``approximate_search``: an :class:`oramem.ann.AnnConfig` turns on the process-local
    HNSW index of the vector cache (not a store setting; nothing is written to disk).
    ``keyword_language``: the FTS tokenizer and query stopwords of a store being created
    (a persisted store setting; ``None`` = the stored one, ``english`` for a new store).
    ``hybrid``: a :class:`oramem.sqlite.keyword.HybridConfig` (fusion weights, RRF
    constant, depth) for HYBRID searches of this engine (not persisted)."""

    def __init__(
        self,
        path: "str | os.PathLike[str]" = ":memory:",
        *,
        clock: Optional[Clock] = None,
        approximate_search: Optional[AnnConfig] = None,
        vector_sidecar: bool = True,
        keyword_language: Optional[str] = None,
        hybrid: Optional[HybridConfig] = None,
        read_only: Optional[bool] = None,
    ) -> None:
        if read_only is not None and not isinstance(read_only, bool):
            raise TypeError(f"read_only must be True, False or None, got {type(read_only).__name__}")
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        if clock is not None and not callable(clock):
            raise TypeError("clock must be a callable returning an aware datetime")
        if approximate_search is not None:
            if not isinstance(approximate_search, AnnConfig):
                raise TypeError(
                    "approximate_search must be an oramem.ann.AnnConfig or None, "
                    f"got {type(approximate_search).__name__}"
                )
            if not available_backends():
                raise AnnUnavailable(
                    "approximate_search needs an ANN backend: pip install 'oramem[ann]' (hnswlib), or usearch"
                )
        if not isinstance(vector_sidecar, bool):
            raise TypeError(f"vector_sidecar must be True or False, got {type(vector_sidecar).__name__}")
        if hybrid is not None and not isinstance(hybrid, HybridConfig):
            raise TypeError(f"hybrid must be an oramem.sqlite.HybridConfig or None, got {type(hybrid).__name__}")
        self._keyword_language = None if keyword_language is None else check_language(keyword_language)
        self._hybrid = hybrid or HybridConfig()
        self._ann_config = approximate_search
        self._use_sidecar = vector_sidecar and not _is_memory(os.fspath(path))
        self._path = os.fspath(path)
        self._clock: Clock = clock or _utc_now
        self._db: Optional[Database] = None
        self._tables: Optional[StoreTables] = None
        self._state: Optional[StoreState] = None
        self._cache: Optional[VectorCache] = None
        #: keyword-query words worth counting (share of the rows at the last count), and which
        #: are common in one state of the index (_split_common)
        self._keyword_words: dict[str, float] = {}
        self._keyword_memo: tuple[Any, dict[str, bool]] = (None, {})
        self._hooks: list[DeletionHook] = []
        self._read_only = read_only
        #: see _remember_identity / _check_embedder
        self._identity: Optional[dict[str, Any]] = None
        self._identity_seen: Optional[str] = None

    # -- lifecycle -----------------------------------------------------------------------
    def open(self, settings: StoreSettings, policy: SchemaPolicy) -> StoreSettings:
        tables = StoreTables(settings.memory_store_id)
        policy = SchemaPolicy.coerce(policy, "schema_policy")
        if self._db is None or self._db.closed:
            if policy == SchemaPolicy.REQUIRE_EXISTING and not _is_memory(self._path) and not os.path.exists(self._path):
                raise StoreNotFound(
                    f"no database file at {self._path!r}; open it with schema_policy=CREATE_IF_NECESSARY to create it"
                )
            self._db = self._connect(policy)
        if self._db.read_only:
            # nothing may be created, upgraded or adopted: an existing store as it is
            with self._db.transaction(False, f"opening store {tables.store_id!r} read-only") as conn:
                try:
                    state = apply_policy(conn, tables, settings, SchemaPolicy.REQUIRE_EXISTING, self._now(),
                                         self._keyword_language, read_only=True)
                except sqlite3.OperationalError as exc:
                    if "readonly" not in str(exc).lower():
                        raise
                    raise StoreError(
                        f"store {tables.store_id!r} in {self._path} needs an upgrade or a setting recorded before "
                        "it can be used, which a read-only open cannot do; open it once with write access"
                    ) from None
            self._tables, self._state, self._cache = tables, state, None
            self._remember_identity(settings)
            return state.settings  # expired records stay on disk; every read skips them (SC-5.4)
        # BEGIN IMMEDIATE serialises concurrent opens of the same file (SC-10.3).
        with self._db.transaction(True, f"opening store {tables.store_id!r}") as conn:
            state = apply_policy(conn, tables, settings, policy, self._now(), self._keyword_language)
        self._tables, self._state, self._cache = tables, state, None
        self._remember_identity(settings)
        self.purge_expired()
        return state.settings

    def _remember_identity(self, settings: StoreSettings) -> None:
        """The embedder this store object embeds with (None: none, the caller's vectors), and
        the catalog text last seen to record it (``_check_embedder``)."""
        self._identity = settings.embedder
        self._identity_seen = None

    def _connect(self, policy: SchemaPolicy) -> Database:
        """The connection: read-only when asked (``read_only=True``), or by default (None)
        when the existing file or its directory is not writable by this process."""
        memory = _is_memory(self._path)
        exists = not memory and os.path.exists(self._path)
        if self._read_only and not exists:
            raise StoreNotFound(f"no database file at {self._path!r}; read_only=True opens an existing file only")
        reason = None
        if self._read_only:
            reason = "read_only=True"
        elif self._read_only is None and exists and not is_writable(self._path):
            reason = "the file or its directory is not writable by this process"
        if reason is None:
            return Database(self._path)
        db = Database(self._path, read_only=True)
        db.read_only_reason = reason + (", opened immutable" if db.immutable else "")
        return db

    @property
    def read_only(self) -> bool:
        """Whether the database was opened read-only (reads only; no purge on open)."""
        return self._db is not None and self._db.read_only

    def close(self) -> None:
        if self._db is not None:
            with self._db.lock:  # another thread's block ends first
                if self._db.in_block:
                    raise StoreError("close() inside store.transaction(): leave the block first (it commits or rolls back)")
                self._save_sidecar()
                self._db.close()
        self._cache = None
        self._keyword_words, self._keyword_memo = {}, (None, {})

    # -- caller blocks (SC-12) -------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """SC-12 on SQLite: ``BEGIN IMMEDIATE`` on the engine's connection (SAVEPOINTs when
        nested), the connection's lock held for the whole block. Inside it the vector cache
        follows the block's writes (a rollback drops it, the next search reloads it), no
        vector sidecar is written, and a keyword index without FTS5 secure-delete (an older
        file opened without upgrading it) is rebuilt once, just before the outermost COMMIT."""
        db, _ = self._open_parts()
        outer = self._check_block_thread("store.transaction()")
        with db.block():
            db.on_block_end(after_rollback=self._drop_cache)
            if outer is not None:
                yield
                return
            with self._entered(Block(self, threading.get_ident())):
                yield

    def _drop_cache(self) -> None:
        if self._cache is not None:
            self._cache.invalidate()

    def sql_connection(self) -> sqlite3.Connection:
        """The ``sqlite3`` connection of the current block, for layers above the store that
        write their own tables in it (the knowledge layer). Its transaction belongs to the
        block: never commit or roll it back. Outside a block: ``StoreError``."""
        db, _ = self._open_parts()
        if self._check_block_thread("sql_connection()") is None or not db.in_block:
            raise StoreError("sql_connection() is only available inside store.transaction()")
        return db.conn

    @staticmethod
    def _sidecar_stamp(conn: sqlite3.Connection, t: StoreTables, catalog: Catalog) -> dict[str, Any]:
        return sidecar.stamp_of(conn, t, catalog.generation, catalog.change_seq)

    def _save_sidecar(self) -> None:
        """On close: write the cache to the sidecar when it holds a newer version than the
        file and is still the catalog's current version (this process's own writes patched
        it); a cache another process's write made stale is not saved."""
        cache, db, tables = self._cache, self._db, self._tables
        if not self._use_sidecar or cache is None or db is None or db.closed or tables is None:
            return
        if cache.version is None or cache.version == cache.saved_version:
            return
        try:
            with db.transaction(False, "saving the vector sidecar") as conn:
                catalog = self._catalog(conn, tables)
                if catalog.version != cache.version or catalog.vector_dim != cache.dim:
                    return
                self._write_sidecar(cache, self._sidecar_stamp(conn, tables, catalog))
        except StoreError:  # dropped or busy: nothing worth saving, the file stays stale
            return

    def _write_sidecar(self, cache: VectorCache, stamp: dict[str, Any]) -> None:
        if self._db is not None and self._db.read_only:
            return  # a read-only store creates nothing (README): it reads a sidecar, never writes one
        path = sidecar.sidecar_path(self._path, stamp["store_id"])
        columns, matrix, codes = cache.snapshot()
        # the HNSW index is saved too when its labels are the snapshot's row keys
        ann = sidecar.write_ann(path, cache.ann) if cache.ann is not None and cache.ann_keys_are_rows() else None
        if sidecar.write(path, stamp, columns, matrix, codes, like=self._path, ann=ann):
            cache.saved_version = cache.version
            sidecar.forget_other_anns(path, ann)
        elif ann is not None:
            sidecar.forget_other_anns(path, None)

    @property
    def database(self) -> Database:
        """The connection, its lock and ``transaction()``: the seam through which the
        knowledge layer writes its tables in the store's own transactions (SC-8.5)."""
        db, _ = self._open_parts()
        return db

    @property
    def connection_path(self) -> str:
        """The database path this engine was built with."""
        return self._path

    # -- plumbing ------------------------------------------------------------------------
    def _now(self) -> str:
        moment = self._clock()
        if not isinstance(moment, _dt.datetime):
            raise TypeError(f"the clock returned {type(moment).__name__}, not a datetime")
        return iso(moment)

    def _open_parts(self) -> tuple[Database, StoreTables]:
        if self._db is not None and self._db.closed:
            raise StoreClosed("the store is closed; open a new store object")
        if self._db is None or self._tables is None:
            raise StoreError("the store is not open; call open() first")
        return self._db, self._tables

    def _catalog(self, conn: sqlite3.Connection, tables: StoreTables) -> Catalog:
        row = conn.execute(
            f"SELECT generation, change_seq, capability, vector_dim, search_index_sync, schema_version, "
            f"keyword_language, embedder FROM {CATALOG} WHERE store_id = ?",
            (tables.store_id,),
        ).fetchone()
        if row is None:
            raise StoreNotFound(
                f"store {tables.store_id!r} no longer exists (dropped by another connection?); "
                "open it again with CREATE_IF_NECESSARY"
            )
        return Catalog(row[0], row[1], SearchStrategy(row[2]), row[3], SearchIndexSyncMode(row[4]), row[5], row[6],
                       keyword_rows_of(row[7]), row[7])

    def _check_embedder(self, catalog: Catalog, store_id: str, what: str,
                        vectors_of: Optional[Mapping[str, Any]] = None) -> None:
        """Vectors of this store object's embedder (its query vectors, the vectors of its
        writes) are comparable with the store's only while the catalog still records that
        embedder: another process (or store object) may have moved the store to another one
        with ``reembed`` since this object was opened (red40), and the open-time check
        (SC-10.4) does not see that. Refused with what to do; ``what`` says what did not
        happen. Only vectors this object's embedder made are checked: the caller's own
        (``embeddings``, ``query_vector``) are the caller's to match, as at open (SC-10.4),
        unless the caller names the embedder that made them (``vectors_of``: a
        ``KnowledgeMemory``'s own embedder, rek47), which is then checked the same way."""
        if vectors_of is not None:
            self._check_identity(catalog, store_id, what, vectors_of, "a KnowledgeMemory (or another layer "
                                 "that embeds for this store object) was opened with")
            return
        mine = self._identity
        if mine is None or catalog.embedder == self._identity_seen:
            return
        self._check_identity(catalog, store_id, what, mine, "this store object was opened with")
        self._identity_seen = catalog.embedder

    @staticmethod
    def _check_identity(catalog: Catalog, store_id: str, what: str, mine: Mapping[str, Any], opened: str) -> None:
        stored = decode_identity(catalog.embedder)
        if stored is None or same_identity(stored, mine):
            return
        raise StoreSettingsMismatch(
            f"embedder: store {store_id!r} was moved to {describe_identity(stored)} (oramem reembed, by another "
            f"process or store object) after {opened} {describe_identity(mine)}; vectors "
            f"of different embedders are not comparable, so {what}. Close this store object (and any KnowledgeMemory "
            f"on it) and open a new store object with {how_to_open(stored)}"
        )

    def check_vectors_of(self, identity: Mapping[str, Any], what: str) -> None:
        """:meth:`Engine.check_vectors_of`: one primary-key read of the catalog row, in the
        current block's transaction when one is open (its ``BEGIN IMMEDIATE`` holds the write
        lock, so no reembed swap commits between the check and the block's COMMIT)."""
        with self._read("embedder check") as (_, t, catalog):
            self._check_embedder(catalog, t.store_id, what, identity)

    @contextlib.contextmanager
    def _write(self, what: str) -> Iterator[WriteTx]:
        db, tables = self._open_parts()
        self._check_block_thread(what)
        # the lock spans commit and cache patch, so no other thread sees the cache between
        with db.lock:
            with db.transaction(True, what) as conn:
                catalog = self._catalog(conn, tables)
                tx = WriteTx(conn, tables, catalog, self._now())
                yield tx
                if tx.fts_deleted:
                    if db.in_block:  # once, before the block's COMMIT
                        db.on_block_end(before_commit=self._erase_deleted_text)
                    else:
                        mutations.erase_deleted_text(tx)
                if not tx.touched:
                    return
                after = (catalog.generation, catalog.change_seq + 1)
                conn.execute(f"UPDATE {CATALOG} SET change_seq = ? WHERE store_id = ?", (after[1], tables.store_id))
                cache = self._cache
                patch = None
                if cache is not None and cache.version == catalog.version and cache.dim == catalog.vector_dim:
                    patch = mutations.cache_rows(tx, tx.touched, CACHE_ROW_SQL)
            # committed: bring this process's cache along, or drop it
            if cache is not None:
                if patch is None:
                    cache.invalidate()
                else:
                    cache.patch(catalog.version, after, sorted(tx.touched), patch)
            if tx.vectors_dropped and self._use_sidecar:
                # the snapshot (and its HNSW files) still holds the deleted rows' vectors; it is
                # stale now (change_seq moved), so the next reader rebuilds it either way
                if db.in_block:
                    db.on_block_end(before_commit=self._drop_stale_sidecar)
                else:
                    self._drop_stale_sidecar()

    def _drop_stale_sidecar(self) -> None:
        """Remove the sidecar snapshot and its HNSW files after a delete or a vector change
        (red26): a deleted row's vector must not stay beside the database, which zeroes its
        pages. A reader of an older snapshot can still write one afterwards (never used: the
        next reader replaces it); an erasure closes that gap with its checkpoint
        (``_after_erasure``)."""
        if self._tables is not None:
            sidecar.remove_stale(self._path, self._tables.store_id)

    def _erase_deleted_text(self) -> None:
        db, tables = self._open_parts()
        with db.transaction(True, "erasing deleted words from the keyword index") as conn:
            catalog = self._catalog(conn, tables)
            mutations.erase_deleted_text(WriteTx(conn, tables, catalog, self._now()))

    def _run_hooks(self, tx: WriteTx, event: Optional[DeletionEvent]) -> None:
        if event is None:
            return
        for hook in list(self._hooks):
            result = hook(tx.conn, event)
            if isinstance(result, tuple):  # SC-8.5 [ext]: the records it rewrites (del48)
                mutations.rewrite_records(tx, [r for r in result if isinstance(r, RecordRewrite)])

    # -- writes --------------------------------------------------------------------------
    def add(self, request: AddRequest) -> list[str]:
        if not request.records:
            return []
        with self._write("add") as tx:
            if request.embedded:
                self._check_embedder(tx.catalog, tx.tables.store_id, "nothing was written")
            if request.vectors_of is not None:
                self._check_embedder(tx.catalog, tx.tables.store_id, "nothing was written", request.vectors_of)
            request, replaced = mutations.resolve_conflicts(tx, request)
            self._run_hooks(tx, replaced)
            if not request.records:
                return []
            return mutations.add_records(tx, request)

    def check_restore(self, keys: Sequence[tuple[str, str, Optional[str], Optional[str]]], on_conflict: str) -> None:
        """:meth:`Engine.check_restore`: one read transaction, the stored rows looked up 500
        keys per statement, refused by the rule ``add`` applies (``mutations.check_restore``)."""
        if on_conflict == "skip" or not keys:
            return
        with self._read("import check") as (conn, t, _):
            mutations.check_restore(conn, t, keys, on_conflict)

    def update(self, request: UpdateRequest) -> int:
        with self._write("update") as tx:
            if request.embedded:
                self._check_embedder(tx.catalog, tx.tables.store_id, "nothing was written")
            return mutations.update_record(tx, request)

    def delete(self, record_type: str, record_id: str, cascade: bool) -> int:
        if record_type == "thread":
            # a thread is a container: deleting it removes what it holds (SC-8.3)
            return self.delete_thread(record_id)
        return self._delete(record_type, record_id, cascade, None)[0]

    def erase_profile(self, record_type: str, record_id: str, tombstone: str) -> tuple[int, dict[str, int]]:
        """SC-8.2 / SC-13.3 / SC-13.4 with SC-14.3: the profile's cascade and its erasure-log
        tombstone in one transaction (KC-3.10: a knowledge write in flight finds it in its
        commit and stores nothing). Outside a ``store.transaction()`` block the erasure then
        leaves the disk as ``forget``'s does (cache and sidecar dropped, WAL checkpointed);
        inside one the block's commit ends it and the files keep the old pages until the
        next checkpoint (SC-14.3: the receipt stays ``pending`` then)."""
        if record_type not in PROFILE_TYPES:
            raise ValueError(f"erase_profile takes a user_profile or agent_profile, not {record_type!r}")
        result = self._delete(record_type, record_id, True, tombstone)
        if not self.in_transaction:
            self._after_erasure()
        return result

    def check_profile_cascade(self, record_type: str, record_id: str) -> None:
        with self._read("delete") as (conn, tables, _):
            self._refuse_unerasable_cascade(conn, tables.store_id, record_type, record_id, True)

    def _refuse_unerasable_cascade(self, conn: Any, store_id: str, record_type: str, record_id: str,
                                   cascade: bool) -> None:
        if cascade and record_type == "user_profile" and not self._hooks and has_knowledge_tables(conn, store_id):
            # SC-13.3: a user's profile cascade is her erasure, and the knowledge layer's
            # part of it runs in its deletion hook: without one (no KnowledgeMemory open on
            # this store) her knowledge rows and what other scopes derived from them would
            # stay; refused before anything is deleted, as forget() is
            raise StoreError(
                f"store {store_id!r} has knowledge tables, and nothing here erases user {record_id!r} "
                "from them (the cascade of a user_profile erases her, SC-13.3): open KnowledgeMemory(store, "
                "llm=None) first, or erase her with its forget(user_id=...) or `oramem forget --user`; nothing "
                "was deleted"
            )

    def _delete(self, record_type: str, record_id: str, cascade: bool,
                tombstone: Optional[str]) -> tuple[int, dict[str, int]]:
        with self._write("delete") as tx:
            self._refuse_unerasable_cascade(tx.conn, tx.tables.store_id, record_type, record_id, cascade)
            count, event = mutations.delete_record(tx, record_type, record_id, cascade)
            self._run_hooks(tx, event)
            counts = dict(tx.erased)
            if tombstone is not None:  # SC-14.3 / KC-3.10: the tombstone commits with the cascade
                erasure_log.write_tombstone(tx.conn, tx.tables.store_id, tombstone)
                # SC-16.6: the audit entries of the erased scope go in the same transaction, as forget's
                kind = "user" if record_type == "user_profile" else "agent"
                audited = audit_log.erase_subject(tx.conn, tx.tables.store_id, kind, record_id,
                                                  event.thread_ids if event is not None else ())
                if audited:
                    counts[audit_log.AUDIT_TABLE] = audited
            return count, counts

    def delete_thread(self, thread_id: str) -> int:
        with self._write("delete_thread") as tx:
            count, event = mutations.delete_thread(tx, thread_id)
            self._run_hooks(tx, event)
            return count

    def purge_expired(self) -> int:
        with self._write("purge_expired") as tx:
            count, event = mutations.purge(tx)
            self._run_hooks(tx, event)
            return count

    def sync_search_index(self) -> None:
        self._refuse_in_block("sync_search_index()", "an index refresh is not part of a block on every engine "
                              "(Oracle Text synchronises in its own transaction)")
        with self._write("sync_search_index") as tx:
            mutations.sync_index(tx)

    def check_forget(self) -> None:
        self._refuse_in_block("forget()", "an erasure commits, drops the vector sidecar and checkpoints the WAL "
                              "at once, so that nothing of the actor stays on disk")

    def forget(self, request: ForgetRequest) -> dict[str, int]:
        """SC-8.6: the actor's cascade and every hook's erasure in one transaction; then the
        vector sidecar is removed (it holds the old vectors) and the WAL is checkpointed
        with TRUNCATE, so the erased pages leave the ``-wal`` file too."""
        self.check_forget()
        profile = "user_profile" if request.user_id is not None else "agent_profile"
        actor = request.user_id if request.user_id is not None else request.agent_id
        assert actor is not None
        with self._write("forget") as tx:
            cascade = mutations.forget(tx, profile, actor)
            event = DeletionEvent(
                memory_store_id=tx.tables.store_id, records=cascade.records, thread_ids=cascade.thread_ids,
                user_ids=cascade.user_ids, agent_ids=cascade.agent_ids, reason="forget", names=request.names,
                actor_thread_ids=cascade.actor_thread_ids,
            )
            reports = [r for r in (hook(tx.conn, event) for hook in list(self._hooks)) if isinstance(r, ErasureReport)]
            if not reports and has_knowledge_tables(tx.conn, tx.tables.store_id):
                raise StoreError(
                    f"store {tx.tables.store_id!r} has knowledge tables, and nothing erased the actor from them: "
                    "call KnowledgeMemory(store, llm=None).forget(...) (or run `oramem forget`); nothing was deleted"
                )
            mutations.delete_keys(tx, [key for r in reports for key in r.records])
            if request.tombstone is not None:  # SC-14.3: the tombstone commits with the erasure
                erasure_log.write_tombstone(tx.conn, tx.tables.store_id, request.tombstone)
            # SC-16.6: the audit entries of the actor's scope, in the erasure's transaction: an
            # audited read that committed its entry before this erasure loses it here, and one
            # that read before it and writes after finds the tombstone (trust.audit)
            kind = "user" if request.user_id is not None else "agent"
            audited = audit_log.erase_subject(tx.conn, tx.tables.store_id, kind, actor, cascade.thread_ids)
            counts = dict(tx.erased)
            if audited:
                counts[audit_log.AUDIT_TABLE] = audited
            for report in reports:
                for table, n in report.tables.items():
                    counts[table] = counts.get(table, 0) + int(n)
        self._after_erasure()
        return counts

    #: how long an erasure retries its TRUNCATE checkpoint while another connection checkpoints
    _ERASURE_CHECKPOINT_WAIT_S = 2.0

    def _after_erasure(self) -> None:
        # the cache keeps the erased actor's ids in its code tables: drop it (the next search
        # reloads from SQLite) and the sidecar snapshot with it
        with self._db.lock if self._db is not None else contextlib.nullcontext():
            self._cache = None
            # the keyword memos hold scope tokens (hex of actor ids) and query words
            self._keyword_words, self._keyword_memo = {}, (None, {})
        try:
            self._checkpoint_after_erasure()
        finally:
            # the sidecar goes after the checkpoint: TRUNCATE waits for every reader of a
            # snapshot from before the erasure, and another connection writes its sidecar
            # inside such a read (a cache it loaded there); removed earlier, that file could
            # land afterwards, the erased actor's vectors and ids in it
            if self._use_sidecar and self._tables is not None:
                sidecar.remove(self._path, self._tables.store_id)

    def _checkpoint_after_erasure(self) -> None:
        db = self._db
        if db is None or db.closed or _is_memory(self._path):
            return
        # TRUNCATE waits (busy timeout) for readers and writers, but a checkpoint that another
        # connection runs (another store object's or process's automatic one) makes it answer
        # "busy" at once, without waiting: wait that out, a little
        deadline = time.monotonic() + self._ERASURE_CHECKPOINT_WAIT_S
        while True:
            with db.lock:
                busy, _, _ = db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy or time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        if busy:
            import warnings

            warnings.warn(
                "another connection is reading the database, so the WAL could not be checkpointed: the erased "
                "pages stay in the -wal file until the next checkpoint (SQLite runs one when the last connection to "
                "the file closes)",
                stacklevel=4,
            )

    def sql_access(self, store: Any, configure: Optional[Callable[[Any], Any]] = None) -> Any:
        from .sql_access import SQLiteAccess

        return SQLiteAccess(store, configure)

    def register_deletion_hook(self, hook: DeletionHookSpec) -> None:
        if not callable(hook):
            raise TypeError(f"a deletion hook must be callable, got {type(hook).__name__}")
        self._refuse_in_block("register_deletion_hook()", "registration is not transactional")
        db = self._db
        with db.lock if db is not None else contextlib.nullcontext():
            self._hooks.append(hook)

    # -- options -------------------------------------------------------------------------
    def get_options(self) -> dict[str, Any]:
        with self._read("get_options") as (conn, t, _):
            return read_options(conn, t.store_id)

    def set_option(self, name: str, text: Optional[str]) -> None:
        with self._write("set_option") as tx:
            write_option(tx.conn, tx.tables.store_id, name, text)

    # -- reads ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _read(self, what: str) -> Iterator[tuple[Any, ...]]:
        db, tables = self._open_parts()
        self._check_block_thread(what)
        with db.transaction(False, what) as conn:
            yield conn, tables, self._catalog(conn, tables)

    def get(self, record_type: str, record_id: str) -> Optional[Record]:
        with self._read("get") as (conn, t, _):
            where = Where().add("r.record_type = :type AND r.id = :id", type=record_type, id=record_id)
            where.visible(self._now())
            row = conn.execute(f"SELECT {RECORD_COLUMNS} FROM {t.records} r WHERE {where.sql()}", where.params).fetchone()
        return None if row is None else to_record(row)

    def list(self, request: ListRequest) -> list[Record]:
        if request.limit is not None and request.limit <= 0:
            return []
        limit_value = _sql_limit(request.limit)
        where = Where().add("r.record_type = :type", type=request.record_type).visible(self._now())
        where.scopes(request.thread, request.user, request.agent, profiles=False).metadata(request.metadata_filter)
        limit = "" if limit_value is None else "LIMIT :limit"
        with self._read("list") as (conn, t, _):
            rows = conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM {t.records} r WHERE {where.sql()} ORDER BY r.seq DESC {limit}",
                {**where.params, "limit": limit_value},
            ).fetchall()
        return [to_record(row) for row in reversed(rows)]

    def list_thread_messages(self, thread_id: str, last_n: Optional[int]) -> builtins.list[Record]:
        if last_n is not None and last_n <= 0:
            return []
        last_n = _sql_limit(last_n)
        where = Where().add("r.record_type = 'message' AND r.thread_id = :tid", tid=thread_id).visible(self._now())
        limit = "" if last_n is None else "LIMIT :limit"
        with self._read("list_thread_messages") as (conn, t, _):
            rows = conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM {t.records} r WHERE {where.sql()} ORDER BY r.seq DESC {limit}",
                {**where.params, "limit": last_n},
            ).fetchall()
        return [to_record(row) for row in reversed(rows)]

    def search(self, request: SearchRequest) -> builtins.list[tuple[Record, float]]:
        now = self._now()
        where = Where().add(
            "r.record_type IN (SELECT value FROM json_each(:types))", types=_types_json(tuple(request.record_types))
        )
        where.visible(now).scopes(request.thread, request.user, request.agent, profiles=True)
        # the keyword leg asks the metadata filter apart (``base`` and ``metadata``); the
        # vector leg's SQL paths take both as ``where``
        base, metadata = where, None
        if request.metadata_filter is not None:
            metadata = Where().metadata(request.metadata_filter, known_filter_key(request.metadata_filter))
            where = base.copy().add(metadata.sql(), **metadata.params)
        with self._read("search") as (conn, t, catalog):
            strategy = self._check_strategy(request, catalog)
            if has_vector(strategy) and request.query_text is not None:  # the vector is of this object's embedder
                self._check_embedder(catalog, t.store_id, "nothing was searched")
            elif has_vector(strategy) and request.vectors_of is not None:  # the caller says whose vector it is
                self._check_embedder(catalog, t.store_id, "nothing was searched", request.vectors_of)
            vector_ranking: builtins.list[tuple[int, float]] = []
            keyword_ranking: builtins.list[tuple[int, float]] = []
            depth = request.k if strategy != SearchStrategy.HYBRID else self._hybrid.fusion_depth(request.k)
            if strategy in (SearchStrategy.VECTOR, SearchStrategy.HYBRID):
                cache = self._vector_cache(conn, t, catalog)
                scopes = (request.thread, request.user, request.agent)
                vector_ranking = self._nearest(conn, t, where, request, cache, scopes, epoch_micros(now), depth)
            if strategy in (SearchStrategy.KEYWORD, SearchStrategy.HYBRID):
                keyword_ranking = self._keyword(conn, t, base, metadata, request, depth, catalog)
            if strategy == SearchStrategy.VECTOR:
                ranked = vector_ranking  # within max_distance, if given (the cache cuts it)
            elif strategy == SearchStrategy.KEYWORD:
                ranked = keyword_ranking
            else:
                ranked = fuse(vector_ranking[:depth], keyword_ranking[:depth], self._hybrid,
                              lambda: self._terms_held(conn, t, keyword_ranking[0][0], request, catalog))
            return self._results(conn, t, ranked, request.k)

    # -- search helpers ------------------------------------------------------------------
    @staticmethod
    def _nearest(conn: sqlite3.Connection, t: StoreTables, where: Where, request: SearchRequest, cache: VectorCache,
                 scopes: tuple[Scope, Scope, Scope], now_micros: int, k: int) -> builtins.list[tuple[int, float]]:
        """Vector ranking. The cache masks type, scope and TTL; a metadata filter on
        top-level scalar fields becomes a mask over cached typed columns once its keys were
        asked for before in the same cache state (:mod:`.metamask`); otherwise it runs in
        SQL, first lazily over windows of nearest candidates, and over every record only
        when the filter is so selective that the windows would cover a quarter of the
        rows (SC-6.5 either way: the filter applies before the top-k cut)."""
        query = request.query_vector
        assert query is not None, "the normaliser embeds the query of a vector search"
        # a hybrid search has no max_distance (the normaliser refuses it)
        nearest = functools.partial(cache.nearest, query, handicap=request.tail_handicap, within=request.max_distance)
        if request.metadata_filter is None:
            return nearest(cache.mask(request.record_types, scopes, now_micros, None), k)

        def column(keys: builtins.list[str], seqs: Optional[builtins.list[Any]] = None) -> builtins.list[Any]:
            """``(seq, json_type, json_extract)`` of each of ``keys``, per record of ``seqs`` (every
            record when None): one statement for all keys."""
            values = ", ".join(f"json_type(r.metadata, :path{i}), json_extract(r.metadata, :path{i})" for i in range(len(keys)))
            params: dict[str, Any] = {f"path{i}": f'$."{key}"' for i, key in enumerate(keys)}
            sql = f"SELECT r.seq, {values} FROM {t.records} r"
            if seqs is not None:
                sql += " WHERE r.seq IN (SELECT value FROM json_each(:oramem_seqs))"
                params["oramem_seqs"] = json.dumps(seqs)
            result: builtins.list[Any] = conn.execute(sql, params).fetchall()
            return result

        in_memory = cache.metadata_mask(request.metadata_filter, column)
        if in_memory is not None:  # filter first, then top-k over the passing rows only
            if in_memory.dtype != np.bool_:  # a few rows pass: type, scope and TTL tests of those rows only
                return nearest(cache.mask_rows(in_memory, request.record_types, scopes, now_micros), k)
            mask = cache.mask(request.record_types, scopes, now_micros, None)
            return nearest(cache.restrict(mask, in_memory), k)
        mask = cache.mask(request.record_types, scopes, now_micros, None)
        sql = f"SELECT r.seq FROM {t.records} r WHERE r.seq IN (SELECT value FROM json_each(:oramem_seqs)) AND {where.sql()}"

        def accept(seqs: list[Any]) -> set[Any]:
            rows = conn.execute(sql, {**where.params, "oramem_seqs": json.dumps(seqs)})
            return {seq for (seq,) in rows}

        try:
            return nearest(mask, k, accept)
        except GaveUp:
            # A selective filter: evaluate it once, on the records the cache's type, scope
            # and TTL mask left (looked up by primary key), or on every record when the
            # mask left most of them.
            candidates = np.unique(cache.seqs_of(mask))
            if candidates.size * 2 < cache.size:
                allowed = np.fromiter(accept(candidates.tolist()), dtype=np.int64)
            else:
                matching = conn.execute(f"SELECT r.seq FROM {t.records} r WHERE {where.sql()}", where.params)
                allowed = np.fromiter((seq for (seq,) in matching), dtype=np.int64)
            return nearest(cache.mask(request.record_types, scopes, now_micros, allowed), k)

    @staticmethod
    def _check_strategy(request: SearchRequest, catalog: Catalog) -> SearchStrategy:
        strategy = SearchStrategy.coerce(request.strategy, "strategy")
        if (has_vector(strategy) and not has_vector(catalog.capability)) or (
            has_keyword(strategy) and not has_keyword(catalog.capability)
        ):
            raise ValueError(
                f"strategy={strategy.value!r} is not supported by this {catalog.capability.value} store; "
                "reopen it with search_strategy='hybrid' (a vector store is upgraded by that open under "
                "CREATE_IF_NECESSARY, a keyword store only while it holds no records)"
            )
        if has_vector(strategy) and request.query_vector is None:
            raise ValueError(f"{strategy.value} search needs a query vector (a query text and an embedder)")
        if has_keyword(strategy) and request.query_text is None:
            raise ValueError(f"{strategy.value} search needs a query text")
        return strategy

    def _vector_cache(self, conn: sqlite3.Connection, t: StoreTables, catalog: Catalog) -> VectorCache:
        if catalog.vector_dim is None:
            raise StoreError(f"store {t.store_id!r} has no vector_dim, so it holds no searchable vectors")
        if self._cache is None or self._cache.dim != catalog.vector_dim:
            self._cache = VectorCache(catalog.vector_dim, self._ann_config)
        cache = self._cache
        if cache.version != catalog.version:
            # every retrieval row (an index count: cheap) bounds the rows with a vector
            stamp = self._sidecar_stamp(conn, t, catalog)
            path = sidecar.sidecar_path(self._path, t.store_id) if self._use_sidecar else None
            snapshot = sidecar.read(path, stamp, catalog.vector_dim) if path is not None else None
            # inside a block the state read may never be committed: no sidecar is written
            writable = path is not None and not (self._db is not None and self._db.in_block)
            if snapshot is not None and path is not None:
                columns, matrix, codes, ann_entry = snapshot
                ann = sidecar.read_ann(path, ann_entry, catalog.vector_dim, self._ann_config)
                cache.load_snapshot(columns, matrix, codes, catalog.version, ann=ann)
                if ann is None and cache.ann is not None and writable:  # built just now: save it with the snapshot
                    self._write_sidecar(cache, stamp)
            else:
                rows = conn.execute(
                    f"{CACHE_ROW_SQL} FROM {t.chunks} c JOIN {t.records} r ON r.seq = c.record_seq "
                    "WHERE c.vector IS NOT NULL"
                )
                cache.load(rows, catalog.version, stamp["chunks"])
                if writable:
                    self._write_sidecar(cache, stamp)
        return cache

    #: first window of bm25-ranked FTS rows a keyword search joins to its records, as a
    #: multiple of the records it needs (then 16 times that, then every match)
    _KEYWORD_WINDOW = 2
    _KEYWORD_WINDOW_MIN = 16
    #: matching rows a keyword search reads of its window, as a multiple of the records it
    #: needs (a record with several matching rows takes several; when they fill it, all are read)
    _KEYWORD_ROWS = 2

    def _keyword(self, conn: sqlite3.Connection, t: StoreTables, where: Where, metadata: Optional[Where],
                 request: SearchRequest, needed: int, catalog: Catalog) -> builtins.list[tuple[int, float]]:
        """Per record, the best bm25 of its matching retrieval rows, for the ``needed``
        best records that pass every filter, best first (equal scores by record type and
        id, as SC-6.1 orders the results).

        The scope is part of the MATCH (the FTS rows carry scope tokens, schema version
        3), so FTS5 only visits the scope's rows. FTS5 ranks them once (bm25, in C), and
        only the rows scoring at most the ``w``-th best row (a window of ``w`` rows plus
        every row tied with its last one) are joined to the chunks and records, where the
        remaining filters (type, visibility, and the scope again; the metadata filter
        below) apply, inside the same statement, which orders the passing rows by (score,
        type, id) and returns
        the first ``_KEYWORD_ROWS`` × ``needed`` (a record's first row carries its best
        score; no GROUP BY over the window, which on tie-heavy texts is ~170 rows at 100k,
        ``bench/results/keyword_cost.md``). Every record with a row in that set has all its rows there and
        scores at least as well as any record outside it, so the answer is exact as soon
        as ``needed`` records pass the filters (ties included: the whole tie group at the
        edge is joined, so the tie-break by type and id is exact). Otherwise ``w`` grows,
        and at last every match is joined (SC-6.5: filters apply before the top-k cut).

        ``where`` holds the type, visibility and scope predicates, ``metadata`` the metadata
        filter's (None: no filter). The statement applies ``where`` only and the metadata
        filter is asked, in one statement, about the records of the rows read, in order, so
        a JSON filter is evaluated for about the records the answer needs, not for every row
        of the window: a window whose edge ties with a thousand rows (the facts of one entity
        in a knowledge store) evaluated it a thousand times, ~2.5 ms at 100k facts. The
        answer is the same: the records that pass, in the same order.

        Words in at least half of the index's rows (bm25's floor IDF) make FTS5 score most
        of the index (a knowledge store at 100k facts: 130 ms for one search). When the
        query also has rarer words, the window is taken from the rows that hold one of
        those, scored exactly as the full MATCH scores them (:class:`.keyword.SplitMatch`),
        as long as the window's edge scores better than any row of common words alone
        can; otherwise (too few such rows, or an edge that close to 0) every match is
        scored as before. The answer is the same to the bit either way."""
        language = catalog.keyword_language or LEGACY_LANGUAGE
        scopes = [
            (name, scope.value if scope.match == ScopeMatch.EQUALS else None)
            for name, scope in (("thread", request.thread), ("user", request.user), ("agent", request.agent))
            if scope.match != ScopeMatch.ANY
        ]
        terms = query_terms(request.query_text or "", language)
        if not terms:
            return []
        rank = f"bm25({t.fts}, 1.0, 0.0)" if catalog.scoped_fts else f"bm25({t.fts})"
        if catalog.scoped_fts:
            scopes = self._narrow_scopes(conn, t, scopes, catalog)
        window = min(max(self._KEYWORD_WINDOW * needed, self._KEYWORD_WINDOW_MIN), _SQL_MAX_LIMIT // 16)
        split = self._split_common(conn, t, terms, scopes, catalog.scoped_fts, catalog, window)
        full = split.full if split is not None else match_expression(request.query_text or "", language, scopes, catalog.scoped_fts)

        def statement(source: str) -> str:
            return (
                f"WITH s AS MATERIALIZED ({source}), "
                "e AS (SELECT score FROM s ORDER BY score LIMIT 1 OFFSET :oramem_window - 1), "
                "m AS MATERIALIZED (SELECT * FROM s WHERE NOT EXISTS (SELECT 1 FROM e) OR score <= (SELECT score FROM e)) "
                "SELECT NULL, (SELECT count(*) FROM s), (SELECT count(*) FROM e), (SELECT score FROM e), NULL UNION ALL "
                "SELECT * FROM (SELECT c.record_seq, m.score, NULL, r.record_type, r.id FROM m "
                f"CROSS JOIN {t.chunks} c ON c.chunk_id = m.chunk_id CROSS JOIN {t.records} r ON r.seq = c.record_seq "
                f"WHERE {where.sql()} ORDER BY m.score, r.record_type, r.id LIMIT :oramem_limit)"
            )

        scored = f"SELECT rowid AS chunk_id, {rank} AS score FROM {t.fts} WHERE {t.fts} MATCH"
        sql = statement(f"{scored} :oramem_match")
        params = {**where.params, "oramem_match": full}
        if split is not None and not split.worth_trying:
            split = None
        if split is not None:
            # the rows holding a rare term, scored as the full MATCH scores them (SplitMatch);
            # valid while the window's edge scores better than any row of common terms alone
            sql = statement(f"{scored} :oramem_match UNION ALL {scored} :oramem_match_2")
            params.update(oramem_match=split.with_common, oramem_match_2=split.without_common)
        limit = min(self._KEYWORD_ROWS * needed, _SQL_MAX_LIMIT)
        verdicts: dict[Any, bool] = {}  # record seq -> passes the metadata filter
        accept_sql = "" if metadata is None else (
            f"SELECT r.seq FROM {t.records} r WHERE r.seq IN (SELECT value FROM json_each(:oramem_seqs)) AND {metadata.sql()}")
        for size in (window, 16 * window, _SQL_MAX_LIMIT):
            params["oramem_window"] = size
            while True:
                params["oramem_limit"] = limit
                rows = conn.execute(sql, params).fetchall()
                # the one row with a NULL record seq is the window's summary, wherever UNION ALL puts it
                summary = next(row for row in rows if row[0] is None)
                edge_found = summary[2]
                if split is not None and not (edge_found and -summary[3] > split.bound):
                    # rows of common terms alone could reach the window: score every match
                    split = None
                    sql = statement(f"{scored} :oramem_match")
                    params.pop("oramem_match_2")
                    params["oramem_match"] = full
                    continue
                if split is None and summary[1] >= self._KEYWORD_SPLIT_MIN_ROWS and len(terms) > 1:
                    self._mark_words(terms, catalog.scoped_fts)  # many matches scored: count these words next time
                joined = sorted((row for row in rows if row[0] is not None), key=lambda row: (row[1], row[3], row[4]))
                # a record's first row in (score, type, id) order carries its best score, so
                # the records in order of first rows are the records in SC-6.1 order
                seen: set[Any] = set()
                hits = []
                for row in joined:
                    if row[0] not in seen:
                        seen.add(row[0])
                        hits.append(row)
                if metadata is not None:
                    fresh = [row[0] for row in hits if row[0] not in verdicts]
                    if fresh:
                        passed = {seq for (seq,) in conn.execute(accept_sql, {**metadata.params, "oramem_seqs": json.dumps(fresh)})}
                        verdicts.update((seq, seq in passed) for seq in fresh)
                    hits = [row for row in hits if verdicts[row[0]]]
                if len(joined) < limit or len(hits) >= needed or limit >= _SQL_MAX_LIMIT:
                    break  # every passing row of the window read, or needed records among the first rows
                # records with several matching rows, or records the metadata filter rejects,
                # filled the limit: read them all
                limit = _SQL_MAX_LIMIT
            if not edge_found or len(hits) >= needed:
                break  # every match joined, or needed records that no other record beats or ties
        return [(seq, keyword_distance(score)) for seq, score, *_ in hits[:needed]]

    @staticmethod
    def _terms_held(conn: sqlite3.Connection, t: StoreTables, seq: int, request: SearchRequest,
                    catalog: Catalog) -> tuple[int, int]:
        """``(held, terms)``: how many of the query's words (:func:`.keyword.query_terms`) the
        keyword rows of record ``seq`` hold, matched by the keyword index itself (its
        tokenizer and stemmer), and how many words the query has; for gated-rrf's coverage
        gate (:func:`.keyword.coverage_factor`). ``seq`` is the keyword leg's first record,
        already inside the search's scope and filters: only its own rows are read."""
        terms = query_terms(request.query_text or "", catalog.keyword_language or LEGACY_LANGUAGE)
        phrases = json.dumps([word_phrase(term, catalog.scoped_fts) for term in terms])
        (held,) = conn.execute(
            f"SELECT count(*) FROM json_each(:oramem_phrases) j WHERE EXISTS (SELECT 1 FROM {t.fts} "
            f"WHERE {t.fts} MATCH j.value AND rowid IN (SELECT chunk_id FROM {t.chunks} WHERE record_seq = :oramem_seq))",
            {"oramem_phrases": phrases, "oramem_seq": seq}).fetchone()
        return int(held), len(terms)

    #: a keyword search splits off its common terms (SplitMatch) only on an index of at
    #: least this many rows, and a search that scored at least this many matches marks its
    #: words for counting (below, scoring every match costs less than counting words)
    _KEYWORD_SPLIT_MIN_ROWS = 2000
    #: a counted word is counted again, in a later state of the index, only if it was in at
    #: least this share of the rows (a word far below half cannot be common without another
    #: search that scores many matches marking it again)
    _KEYWORD_RECOUNT_SHARE = 0.4
    #: words kept by _keyword_words and by one state's _keyword_memo (then they start over)
    _KEYWORD_MEMO_SIZE = 4096

    def _split_common(self, conn: sqlite3.Connection, t: StoreTables, terms: builtins.list[str],
                      scopes: builtins.list[tuple[str, Optional[str]]], scoped: bool, catalog: Catalog,
                      window: int) -> Optional[SplitMatch]:
        """The search's terms as common and rare ones (:class:`.keyword.SplitMatch`), or None
        when there is nothing to split off: one term, a small index, no common term, or no
        rare one. With fewer rows holding a rare one than the ``window`` the split is not
        ``worth_trying`` (rows of common words alone are in the window), and the search
        scores every match with its ``full`` MATCH at once. A term is common when at least
        half of the index's rows hold it (bm25 gives it the floor IDF): FTS5 would score
        every row that holds it, i.e. most of the index, where the split scores only the
        rows that hold a rare term.

        Only words that an earlier search marked (it scored at least
        ``_KEYWORD_SPLIT_MIN_ROWS`` matches: :meth:`_mark_words`) are counted, so a search
        of words that match little costs nothing more; a marked word is counted once per
        state of the index (catalog version and FTS5 averages record: its rows and token
        totals) and, once found far below half, not again until a search marks it again.
        Every other word is taken for rare: at worst a search that could have been split
        is not; a word is only ever taken for common on a count in the index's current
        state."""
        if len(terms) < 2:
            return None
        phrases = {term: word_phrase(term, scoped) for term in terms if not may_be_scope_token(term)}
        words = self._keyword_words
        marked = [phrase for phrase in phrases.values() if phrase in words]
        if not marked:
            return None
        total, memo = self._index_state(conn, t, catalog)
        if total < self._KEYWORD_SPLIT_MIN_ROWS:
            return None
        unknown = [phrase for phrase in marked if phrase not in memo]
        recount = [phrase for phrase in unknown if words[phrase] >= self._KEYWORD_RECOUNT_SHARE]
        memo.update(dict.fromkeys(unknown, False))
        if recount:
            half = (total + 1) // 2  # common: 2 × rows holding it ≥ total
            for phrase, count in zip(recount, _count_matches(conn, t, recount, half)):
                memo[phrase] = count >= half
                words[phrase] = count / total
        common = [term for term, phrase in phrases.items() if memo.get(phrase, False)]
        if not common or len(common) == len(terms):
            return None
        # rows holding a rare word fewer than the window: the window takes rows of common
        # words alone, so every match is scored (with the split's full MATCH: the same
        # phrase order, the same scores); known before trying (each count stops at the window)
        rare = [word_phrase(term, scoped) for term in terms if term not in common]
        worth = sum(_count_matches(conn, t, rare, window)) >= window
        return dataclasses.replace(split_match(terms, common, scopes, scoped), worth_trying=worth)

    def _index_state(self, conn: sqlite3.Connection, t: StoreTables, catalog: Catalog) -> tuple[int, dict[Any, Any]]:
        """The keyword index's row count, and what the keyword search found out about its
        current state (catalog version and FTS5 averages record: rows and token totals):
        which words are common, which scope tokens are in nearly every row."""
        averages = t.fts_averages(conn)
        state = (t.store_id, catalog.version, averages)
        memo_state, memo = self._keyword_memo
        if memo_state != state or len(memo) > self._KEYWORD_MEMO_SIZE:
            memo = {}
            self._keyword_memo = (state, memo)
        return t.fts_row_count(averages), memo

    #: a scope token in at least this share of the index's rows is left out of the MATCH
    _KEYWORD_WIDE_SCOPE = 0.9

    def _narrow_scopes(self, conn: sqlite3.Connection, t: StoreTables, scopes: builtins.list[tuple[str, Optional[str]]],
                       catalog: Catalog) -> builtins.list[tuple[str, Optional[str]]]:
        """The scopes whose tokens the MATCH keeps: a scope token in nearly every row of the
        index (one agent, one user: a store that serves one person) narrows nothing, and
        bm25 counts its rows on every search (its IDF, though its column weighs 0): 3.6 ms
        at 100k rows. Left out, its phrase adds nothing to any score (it was the last one,
        an exact +0.0), the few rows of other scopes that match are scored too, and the
        search's WHERE applies the scope to every row it joins, as it always does."""
        if not scopes:
            return scopes
        total, memo = self._index_state(conn, t, catalog)
        if total < self._KEYWORD_SPLIT_MIN_ROWS:
            return scopes
        phrases = [(scope, f'scope : "{scope_token(*scope)}"') for scope in scopes]
        unknown = [phrase for _, phrase in phrases if phrase not in memo]
        if unknown:
            wide = math.ceil(self._KEYWORD_WIDE_SCOPE * total)
            memo.update((phrase, count >= wide) for phrase, count in zip(unknown, _count_matches(conn, t, unknown, wide)))
        return [scope for scope, phrase in phrases if not memo[phrase]]

    def _mark_words(self, terms: builtins.list[str], scoped: bool) -> None:
        """Mark the words of a search that scored many matches, for :meth:`_split_common`
        to count when they come again (a marked word counts as at half until counted;
        counting costs a few per cent of the scoring that such a search just did)."""
        if len(self._keyword_words) > self._KEYWORD_MEMO_SIZE:
            self._keyword_words = {}
        for term in terms:
            self._keyword_words[word_phrase(term, scoped)] = 1.0  # counted again even if found low before

    @staticmethod
    def _results(conn: sqlite3.Connection, t: StoreTables, ranked: builtins.list[tuple[int, float]], k: int) -> builtins.list[tuple[Record, float]]:
        if not ranked:
            return []
        # only the k nearest and whatever ties the k-th can be in the answer
        cut = sorted(d for _, d in ranked)[min(k, len(ranked)) - 1]
        distance = {seq: d for seq, d in ranked if d <= cut}
        if len(distance) > k:
            # more than k records tie at the cut: every record nearer than the cut is in, and
            # the rest of the k are the first tied records by (type, id), chosen in SQL (a
            # bounded sort, only their seqs come back); then only those k rows are read and
            # decoded (a search whose k-th record ties with a thousand others read and
            # decoded all of them: ~8 ms per 1,000)
            nearer = {seq: d for seq, d in distance.items() if d < cut}
            chosen = conn.execute(
                f"SELECT r.seq FROM {t.records} r WHERE r.seq IN (SELECT value FROM json_each(:seqs)) "
                "ORDER BY r.record_type, r.id LIMIT :need",
                {"seqs": json.dumps([seq for seq, d in distance.items() if d == cut]), "need": k - len(nearer)},
            ).fetchall()
            distance = {**nearer, **{seq: cut for (seq,) in chosen}}
        seqs = list(distance)
        if len(seqs) <= _BOUND_SEQS:  # a few: bound one by one (no JSON text to build and parse)
            rows = conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM {t.records} r WHERE r.seq IN ({', '.join('?' * len(seqs))})", seqs,
            ).fetchall()
        else:
            rows = conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM {t.records} r WHERE r.seq IN (SELECT value FROM json_each(:seqs))",
                {"seqs": json.dumps(seqs)},
            ).fetchall()
        results = [(to_record(row), float(distance[row[0]])) for row in rows]
        results.sort(key=lambda pair: (pair[1], pair[0].record_type, pair[0].id))
        return results[:k]


def _count_matches(conn: sqlite3.Connection, t: StoreTables, phrases: builtins.list[str], cap: int) -> builtins.list[int]:
    """Rows of the keyword index each MATCH ``phrases[i]`` holds, each count stopped at
    ``cap`` (one statement, values bound)."""
    row = conn.execute(
        "SELECT " + ", ".join(f"(SELECT count(*) FROM (SELECT 1 FROM {t.fts} WHERE {t.fts} MATCH :p{i} LIMIT :cap))"
                              for i in range(len(phrases))),
        {"cap": cap, **{f"p{i}": phrase for i, phrase in enumerate(phrases)}},
    ).fetchone()
    return [int(n) for n in row]
