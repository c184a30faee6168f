"""Schema of the SQLite engine: the store catalog, the per-store tables, and the schema
policies of ``open`` (SC-10.2 to SC-10.5).

Layout of one file:

- ``oramem_stores``: the catalog, one row per ``memory_store_id`` with the persisted
  settings, ``schema_version``, lifecycle ``state``, and a change counter (``generation``
  token + ``change_seq``) that every write bumps so other processes can tell that their
  cached vectors are stale.
- per store ``<ID>`` (the id matches ``^[A-Z][A-Z0-9_]{0,15}$``; it is the only text ever
  built into SQL identifiers): ``om_<ID>_records`` (records, threads and profiles; the
  AUTOINCREMENT ``seq`` is the per-store ``seq_no``), ``om_<ID>_chunks`` (retrieval rows,
  vectors as float32 BLOBs), and for keyword-capable stores ``om_<ID>_fts`` (FTS5, rowid =
  chunk id) plus ``om_<ID>_fts_pending`` (chunks not yet indexed in MANUAL sync mode).

Capability and upgrades: the catalog's ``capability`` is what the schema can answer —
``vector`` (vectors only), ``keyword`` (FTS only) or ``hybrid`` (both). The strategy an
open asks for must be within the capability; ``open`` returns the requested strategy as
the one in force. Under ``CREATE_IF_NECESSARY`` a request beyond the capability upgrades
it to ``hybrid`` when that loses nothing: a vector store gains an FTS index built from its
existing retrieval texts; a keyword store gains vector search only when every existing
retrieval row already has a vector (else ``StoreSettingsMismatch``, since rows without
vectors could never be found by vector search). The sync mode of a store that had no
keyword index is adopted from the request during such an upgrade.

Keyword language (schema version 2): the catalog's ``keyword_language`` fixes the FTS5
tokenizer and the query stopwords (:mod:`.keyword`; ``english`` = porter stemming +
English stopwords, the default; ``none`` = no stemming, no stopwords). The open's
``keyword_language`` (``None`` = adopt) must equal the persisted one. A store of schema
version 1 (``unicode61``, no stemming) is upgraded by an open under
``CREATE_IF_NECESSARY``: the catalog gains the column, and a keyword-capable store's FTS
index is dropped and rebuilt from its retrieval rows with the new tokenizer (rows still
pending in MANUAL sync stay pending), in the open's transaction, so a failure leaves the
store as it was. Other policies would open a version-1 store as it is (keyword language
``legacy``: every query word kept, no stemming) and say how to upgrade if a keyword
language is asked for; but a version-1 or -2 keyword index also lacks FTS5 secure-delete,
which a writable open under them refuses (``_secure_delete``), so in practice only
``CREATE_IF_NECESSARY`` (upgrade) or ``read_only`` opens them.

Scope in the keyword index (schema version 3): the FTS rows carry a ``scope`` column with
the record's thread/user/agent tokens (:mod:`.keyword`), so a scoped keyword search only
visits the rows of its scope. A version-2 store is upgraded by an open under
``CREATE_IF_NECESSARY`` the same way (FTS index rebuilt in the open's transaction, rows
pending in MANUAL sync stay pending); other policies open it as it is, and its keyword
searches apply the scope after the match (same results, cost of the whole store's
matches). Every write reads the schema version in its own transaction, so a process that
opened a version-2 store keeps indexing correctly after another process upgraded it.

Other settings: ``vector_dim``, ``search_index_sync`` and the retention config given on
open must equal the persisted ones (``None`` = not given = adopt). Two exceptions under
``CREATE_IF_NECESSARY``: an explicit retention config replaces the stored one (the vendor
rule; expiries already stored are not recomputed), and a store without a ``vector_dim``
records the one given.

Embedder identity (``oramem.embedders.identity``): a vector-capable store records, in the
catalog's ``embedder`` column, the identity of the embedder it was created with, and an open
with another embedder is a ``StoreSettingsMismatch`` naming both and what to pass (checked
before ``vector_dim``). Opens without an embedder (vectors given by the caller) are not
checked. A store without a recorded identity (made before identities existed, or only ever
opened without an embedder) adopts the identity of the first embedder that opens it, under
any policy: it is a catalog annotation, not a schema change. ``oramem reembed``
(:mod:`oramem.sqlite.reembed`) moves a store to another embedder.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from oramem.sqlite._sqlite import sqlite3
import uuid
from dataclasses import dataclass
from typing import Any, Optional

from ..chunking import keyword_row_chars
from ..embedders.identity import decode_identity, encode_identity, mismatch_message, same_identity
from ..errors import SchemaError, StoreNotFound, StoreSettingsMismatch
from ..requests import StoreSettings
from ..types import MemoryRetentionConfig, SchemaPolicy, SearchIndexSyncMode, SearchStrategy
from .keyword import DEFAULT_KEYWORD_LANGUAGE, LEGACY_LANGUAGE, scope_tokens_sql, tokenizer
from .options import drop_options

__all__ = ["SCHEMA_VERSION", "SCOPED_FTS_VERSION", "StoreTables", "StoreState", "apply_policy", "has_keyword", "has_vector"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
#: the first schema version whose FTS rows carry the scope column
SCOPED_FTS_VERSION = 3
CATALOG = "oramem_stores"
_STORE_ID = re.compile(r"^[A-Z][A-Z0-9_]{0,15}$")

_CATALOG_DDL = f"""
CREATE TABLE IF NOT EXISTS {CATALOG} (
    store_id          TEXT PRIMARY KEY,
    schema_version    INTEGER NOT NULL,
    state             TEXT NOT NULL,
    capability        TEXT NOT NULL,
    vector_dim        INTEGER,
    search_index_sync TEXT NOT NULL,
    default_ttl_days  INTEGER,
    max_ttl_days      INTEGER,
    generation        TEXT NOT NULL,
    change_seq        INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT NOT NULL,
    embedder          TEXT,
    reembed_target    TEXT,
    keyword_language  TEXT
)"""
#: Catalog columns added after the first release, with their declarations: an older
#: catalog gains them (nullable, no data change) on the first open by this version.
_CATALOG_ADDED = {"embedder": "TEXT", "reembed_target": "TEXT", "keyword_language": "TEXT"}


def has_vector(capability: SearchStrategy) -> bool:
    return capability in (SearchStrategy.VECTOR, SearchStrategy.HYBRID)


def has_keyword(capability: SearchStrategy) -> bool:
    return capability in (SearchStrategy.KEYWORD, SearchStrategy.HYBRID)


class StoreTables:
    """Quoted table names of one store, built only from a validated store id."""

    def __init__(self, store_id: str) -> None:
        if not isinstance(store_id, str) or not _STORE_ID.match(store_id):
            raise ValueError(
                f"memory_store_id {store_id!r} must be 1-16 characters matching ^[A-Z][A-Z0-9_]*$ (upper-cased)"
            )
        self.store_id = store_id
        self.names = {kind: f"om_{store_id}_{kind}" for kind in ("records", "chunks", "fts", "fts_pending", "reembed")}
        self.records = f'"{self.names["records"]}"'
        self.chunks = f'"{self.names["chunks"]}"'
        self.fts = f'"{self.names["fts"]}"'
        self.pending = f'"{self.names["fts_pending"]}"'

    def base_ddl(self) -> list[str]:
        r, c, sid = self.records, self.chunks, self.store_id
        return [
            f"""CREATE TABLE IF NOT EXISTS {r} (
                seq         INTEGER PRIMARY KEY AUTOINCREMENT,
                record_type TEXT NOT NULL,
                id          TEXT NOT NULL,
                content     TEXT,
                timestamp   TEXT,
                metadata    TEXT,
                thread_id   TEXT,
                user_id     TEXT,
                agent_id    TEXT,
                role        TEXT,
                created_at  TEXT NOT NULL,
                expires_at  TEXT,
                UNIQUE (record_type, id))""",
            f'CREATE INDEX IF NOT EXISTS "om_{sid}_rec_type" ON {r} (record_type, seq)',
            f'CREATE INDEX IF NOT EXISTS "om_{sid}_rec_thread" ON {r} (thread_id)',
            f'CREATE INDEX IF NOT EXISTS "om_{sid}_rec_user" ON {r} (user_id)',
            f'CREATE INDEX IF NOT EXISTS "om_{sid}_rec_agent" ON {r} (agent_id)',
            f'CREATE INDEX IF NOT EXISTS "om_{sid}_rec_expiry" ON {r} (expires_at) WHERE expires_at IS NOT NULL',
            f"""CREATE TABLE IF NOT EXISTS {c} (
                chunk_id    INTEGER PRIMARY KEY AUTOINCREMENT,
                record_seq  INTEGER NOT NULL,
                chunk_index INTEGER NOT NULL,
                text        TEXT NOT NULL,
                vector      BLOB,
                UNIQUE (record_seq, chunk_index))""",
        ]

    def keyword_ddl(self, language: str) -> list[str]:
        return [
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {self.fts} USING fts5(text, scope, tokenize = '{tokenizer(language)}')",
            f"CREATE TABLE IF NOT EXISTS {self.pending} (chunk_id INTEGER PRIMARY KEY)",
            self.secure_delete_sql,
        ]

    @property
    def secure_delete_sql(self) -> str:
        """FTS5 ``secure-delete`` (persistent, in ``*_fts_config``): a deleted row's entries
        leave the index blobs in the delete itself, not at a later merge
        (docs/store-decisions.md, "Which SQLite the engine runs on")."""
        return f"INSERT INTO {self.fts}({self.fts}, rank) VALUES ('secure-delete', 1)"

    def has_secure_delete(self, conn: sqlite3.Connection) -> bool:
        config = f'"{self.names["fts"]}_config"'
        row = conn.execute(f"SELECT v FROM {config} WHERE k = 'secure-delete'").fetchone()
        return row is not None and row[0] == 1

    def fts_token_count(self, conn: sqlite3.Connection) -> int:
        """Tokens in the keyword index (all columns), read from FTS5's averages record
        (``*_fts_data`` id 1: the row count, then one token total per column, as varints)
        instead of a scan of the index."""
        averages = self.fts_averages(conn)
        return sum(_varints(averages)[1:]) if averages else 0

    def fts_averages(self, conn: sqlite3.Connection) -> bytes:
        """FTS5's averages record (``*_fts_data`` id 1: the row count, then one token total
        per column, as varints; empty for an empty index): it changes with the index's
        rows and their sizes."""
        row = conn.execute(f'SELECT block FROM "{self.names["fts"]}_data" WHERE id = 1').fetchone()
        return bytes(row[0]) if row is not None and row[0] else b""

    @staticmethod
    def fts_row_count(averages: bytes) -> int:
        """Rows in the keyword index as bm25 counts them (what ``xRowCount`` returns), from
        :meth:`fts_averages`."""
        return _varints(averages)[0] if averages else 0

    def fts_tokens_of(self, conn: sqlite3.Connection, seqs_sql: str, params: dict[str, Any]) -> int:
        """Tokens of the indexed rows of the records ``seqs_sql`` selects, from FTS5's
        per-row sizes (``*_fts_docsize``: one varint per column)."""
        rows = conn.execute(
            f'SELECT sz FROM "{self.names["fts"]}_docsize" WHERE id IN '
            f"(SELECT chunk_id FROM {self.chunks} WHERE record_seq IN {seqs_sql})", params)
        return sum(sum(_varints(sz)) for (sz,) in rows if sz)

    def keyword_rows(self, condition: str, group_chars: Optional[int] = None) -> str:
        """``SELECT chunk_id, record_seq, text`` of the keyword rows made of the retrieval
        rows (``c``) that satisfy ``condition``. ``group_chars`` None: one keyword row per
        retrieval row. Else (a ``tokens`` chunk policy, :func:`oramem.chunking.keyword_row_chars`)
        a record's retrieval rows whose start lies in the same stretch of ``group_chars``
        characters of its rows' texts laid end to end form one keyword row: their texts
        joined by a space in chunk order, keyed by the first one's ``chunk_id``. A record's
        retrieval rows are written together, so ``condition`` takes all or none of them."""
        if group_chars is None:
            return f"SELECT c.chunk_id, c.record_seq, c.text FROM {self.chunks} c WHERE {condition}"
        size = int(group_chars)
        # the group's text on every one of its rows (window over the whole group, in chunk
        # order), kept on its first row
        return (
            "SELECT chunk_id, record_seq, text FROM (SELECT chunk_id, record_seq, "
            "group_concat(text, ' ') OVER (PARTITION BY record_seq, grp ORDER BY chunk_index "
            "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS text, "
            "row_number() OVER (PARTITION BY record_seq, grp ORDER BY chunk_index) AS nth FROM ("
            "SELECT c.chunk_id, c.record_seq, c.chunk_index, c.text, "
            "(sum(length(c.text)) OVER (PARTITION BY c.record_seq ORDER BY c.chunk_index ROWS UNBOUNDED PRECEDING) "
            f"- length(c.text)) / {size} AS grp FROM {self.chunks} c WHERE {condition})) WHERE nth = 1"
        )

    def fts_fill(self, condition: str, scoped: bool = True, group_chars: Optional[int] = None) -> str:
        """``INSERT`` into the FTS index the keyword rows (:meth:`keyword_rows`) of the
        retrieval rows (``c``) that satisfy ``condition``; ``scoped``: the index has the
        scope column (schema version 3), else only the text is indexed (an older store
        opened without upgrading)."""
        rows = self.keyword_rows(condition, group_chars)
        if not scoped:
            return f"INSERT INTO {self.fts} (rowid, text) SELECT k.chunk_id, k.text FROM ({rows}) k"
        return (
            f"INSERT INTO {self.fts} (rowid, text, scope) SELECT k.chunk_id, k.text, {scope_tokens_sql('r')} "
            f"FROM ({rows}) k JOIN {self.records} r ON r.seq = k.record_seq"
        )

    def existing(self, conn: sqlite3.Connection) -> set[str]:
        """Which of this store's tables exist (by kind)."""
        wanted = {name: kind for kind, name in self.names.items()}
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (SELECT value FROM json_each(?))",
            (json.dumps(list(wanted)),),
        ).fetchall()
        return {wanted[name] for (name,) in rows}

    def drop(self, conn: sqlite3.Connection) -> None:
        for kind in ("reembed", "fts", "fts_pending", "chunks", "records"):
            conn.execute(f'DROP TABLE IF EXISTS "{self.names[kind]}"')


def _varints(data: bytes) -> list[int]:
    """The SQLite varints ``data`` holds (big-endian 7-bit groups, a 9th byte of 8 bits)."""
    out: list[int] = []
    value = length = 0
    for byte in data:
        length += 1
        if length == 9:
            out.append((value << 8) | byte)
            value = length = 0
            continue
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            out.append(value)
            value = length = 0
    return out


def has_knowledge_tables(conn: sqlite3.Connection, store_id: str) -> bool:
    """Whether the knowledge layer created its tables for ``store_id`` in this file (their
    names are ``<STORE_ID>_KG_<NAME>``, oramem.knowledge.db.schema; the event table stands for
    all eleven)."""
    name = f"{store_id.upper()}_KG_EVENT"
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


@dataclass(frozen=True)
class StoreState:
    """What ``open`` established: the settings in force, the schema capability, and the
    change counter at the end of the open transaction."""

    settings: StoreSettings
    capability: SearchStrategy
    generation: str
    change_seq: int
    keyword_language: str = DEFAULT_KEYWORD_LANGUAGE


def apply_policy(
    conn: sqlite3.Connection,
    tables: StoreTables,
    requested: StoreSettings,
    policy: SchemaPolicy,
    now: str,
    keyword_language: Optional[str] = None,
    read_only: bool = False,
) -> StoreState:
    """Run inside a write transaction: create, validate or upgrade the store.
    ``keyword_language``: a checked name (:func:`.keyword.check_language`) or None (adopt);
    ``read_only``: the connection cannot write (a store without FTS5 secure-delete is
    read as it is: it cannot delete either)."""
    catalog_exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (CATALOG,)
    ).fetchone()
    if policy == SchemaPolicy.REQUIRE_EXISTING and not catalog_exists:
        raise _not_found(tables.store_id)
    conn.execute(_CATALOG_DDL)
    upgrade_catalog(conn)
    row = _catalog_row(conn, tables.store_id)
    objects = tables.existing(conn)

    if policy == SchemaPolicy.RECREATE:
        tables.drop(conn)
        conn.execute(f"DELETE FROM {CATALOG} WHERE store_id = ?", (tables.store_id,))
        drop_options(conn, tables.store_id)
        return _create(conn, tables, requested, now, keyword_language)
    if row is None:
        if policy == SchemaPolicy.REQUIRE_EXISTING:
            raise _not_found(tables.store_id)
        if policy == SchemaPolicy.CREATE_IF_EMPTY and objects:
            raise SchemaError(
                f"store {tables.store_id!r} is partly present (tables {sorted(objects)} exist without a catalog "
                "entry), so CREATE_IF_EMPTY will not touch it; open with CREATE_IF_NECESSARY to complete it "
                "or RECREATE to start over"
            )
        return _create(conn, tables, requested, now, keyword_language)

    if row["state"] != "ready":
        raise SchemaError(
            f"store {tables.store_id!r} is in state {row['state']!r}; open it with RECREATE to rebuild it"
        )
    if row["schema_version"] > SCHEMA_VERSION:
        raise SchemaError(
            f"store {tables.store_id!r} has schema version {row['schema_version']}, newer than this oramem "
            f"({SCHEMA_VERSION}); upgrade oramem"
        )
    capability = SearchStrategy(row["capability"])
    language = _language(conn, tables, row, capability, policy, keyword_language)
    needed = {"records", "chunks"} | ({"fts", "fts_pending"} if has_keyword(capability) else set())
    missing = needed - objects
    if missing:
        if policy != SchemaPolicy.CREATE_IF_NECESSARY:
            raise SchemaError(
                f"store {tables.store_id!r} lacks {sorted(missing)}; open it with CREATE_IF_NECESSARY to "
                "create the missing objects"
            )
        _create_objects(conn, tables, capability, language)
    if has_keyword(capability) and not read_only and not tables.has_secure_delete(conn):
        _secure_delete(conn, tables, policy)
    return _reconcile(conn, tables, row, capability, requested, policy, language)


def _secure_delete(conn: sqlite3.Connection, tables: StoreTables, policy: SchemaPolicy) -> None:
    """A keyword index written by an earlier oramem (no FTS5 ``secure-delete``; every
    deleting transaction rebuilt the whole index instead) is switched to secure-delete under
    CREATE_IF_NECESSARY, and rebuilt once so no entry of a row deleted before stays in it.
    The other policies change nothing (SC-10.2: they validate a *current* store), so a
    writable open under them is refused with the policy that upgrades it: used as it is,
    each of its deletes would rebuild the whole index (a cost that grows with the store).
    Read-only opens never get here (they cannot delete)."""
    if policy != SchemaPolicy.CREATE_IF_NECESSARY:
        raise SchemaError(
            f"store {tables.store_id!r} has a keyword index from an older oramem (no FTS5 secure-delete, so each "
            f"delete would rebuild the whole index); {policy.name} does not upgrade a store: open it once with "
            "schema_policy=CREATE_IF_NECESSARY (it switches the index to secure-delete and rebuilds it once), "
            "or open it with read_only=True to read it as it is"
        )
    conn.execute(tables.secure_delete_sql)
    conn.execute(f"INSERT INTO {tables.fts}({tables.fts}) VALUES ('rebuild')")


def _catalog_columns(conn: sqlite3.Connection) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({CATALOG})")}


def _ensure_language_column(conn: sqlite3.Connection) -> None:
    """A catalog created by schema version 1 lacks ``keyword_language`` (NULL = version 1)."""
    if "keyword_language" not in _catalog_columns(conn):
        conn.execute(f"ALTER TABLE {CATALOG} ADD COLUMN keyword_language TEXT")


def _language(
    conn: sqlite3.Connection,
    tables: StoreTables,
    row: dict[str, Any],
    capability: SearchStrategy,
    policy: SchemaPolicy,
    requested: Optional[str],
) -> str:
    """The keyword language in force; upgrades an older store under CREATE_IF_NECESSARY
    (version 1: stemming and stopwords; version 2: the scope column of the FTS rows)."""
    sid = tables.store_id
    stored: Optional[str] = row.get("keyword_language")
    if row["schema_version"] >= 2 and stored:
        if requested is not None and requested != stored:
            raise StoreSettingsMismatch(
                f"keyword_language: store {sid!r} indexes text as {stored!r}, the open asked for {requested!r}; "
                "omit keyword_language to use the stored one, or RECREATE the store"
            )
        if row["schema_version"] >= SCHEMA_VERSION or policy != SchemaPolicy.CREATE_IF_NECESSARY:
            return stored  # a version-2 store opened as it is: keyword search filters scope after the match
        language = stored
    else:
        if policy != SchemaPolicy.CREATE_IF_NECESSARY:
            if requested is not None:
                raise StoreSettingsMismatch(
                    f"keyword_language: store {sid!r} has schema version {row['schema_version']} (no stemming, no "
                    "stopwords); open it with CREATE_IF_NECESSARY to upgrade it (its keyword index is rebuilt)"
                )
            return LEGACY_LANGUAGE
        language = requested or DEFAULT_KEYWORD_LANGUAGE
    _ensure_language_column(conn)
    if has_keyword(capability):
        _rebuild_fts(conn, tables, language, keyword_rows_of(row.get("embedder")))
    conn.execute(
        f"UPDATE {CATALOG} SET schema_version = ?, keyword_language = ?, change_seq = change_seq + 1 "
        "WHERE store_id = ?",
        (SCHEMA_VERSION, language, sid),
    )
    row["change_seq"] += 1
    row["schema_version"] = SCHEMA_VERSION
    result: str = language
    return result


@functools.lru_cache(maxsize=64)
def keyword_rows_of(identity_json: Optional[str]) -> Optional[int]:
    """How the keyword index groups retrieval rows (``StoreTables.keyword_rows``) under the
    recorded embedder identity, given as the JSON text the catalog holds (the engine reads it
    on every transaction: decoded once per text)."""
    return keyword_row_chars(decode_identity(identity_json))


def _rebuild_fts(conn: sqlite3.Connection, tables: StoreTables, language: str, group_chars: Optional[int]) -> None:
    """Drop the FTS index and build it anew (``language``'s tokenizer, the scope column)
    from the retrieval rows (those pending in MANUAL sync stay pending)."""
    conn.execute(f"DROP TABLE IF EXISTS {tables.fts}")
    _create_objects(conn, tables, SearchStrategy.KEYWORD, language)
    conn.execute(tables.fts_fill(f"c.chunk_id NOT IN (SELECT chunk_id FROM {tables.pending})", True, group_chars))


def upgrade_catalog(conn: sqlite3.Connection) -> None:
    """Add the catalog columns an older oramem did not create (see ``_CATALOG_ADDED``)."""
    present = {r[1] for r in conn.execute(f"PRAGMA table_info({CATALOG})")}
    for column, declaration in _CATALOG_ADDED.items():
        if column not in present:
            conn.execute(f"ALTER TABLE {CATALOG} ADD COLUMN {column} {declaration}")  # fixed names


def _reconcile(
    conn: sqlite3.Connection,
    tables: StoreTables,
    row: dict[str, Any],
    capability: SearchStrategy,
    requested: StoreSettings,
    policy: SchemaPolicy,
    language: str,
) -> StoreState:
    sid = tables.store_id
    may_change = policy == SchemaPolicy.CREATE_IF_NECESSARY
    dim: Optional[int] = row["vector_dim"]
    sync = SearchIndexSyncMode(row["search_index_sync"])
    retention = MemoryRetentionConfig(row["default_ttl_days"], row["max_ttl_days"])
    updates: dict[str, object] = {}

    if requested.retention is not None and requested.retention != retention and may_change:
        # vendor rule: an explicit config replaces the stored one (existing expiries stay)
        retention = requested.retention
        updates["default_ttl_days"] = retention.default_ttl_days
        updates["max_ttl_days"] = retention.max_ttl_days
    elif requested.retention is not None and requested.retention != retention:
        raise StoreSettingsMismatch(
            f"memory_retention_config: store {sid!r} persists {retention}, the open asked for "
            f"{requested.retention}; omit memory_retention_config to use the stored one, or open with "
            "CREATE_IF_NECESSARY to replace it"
        )
    identity = decode_identity(row.get("embedder"))
    if requested.embedder is not None and identity is not None and not same_identity(identity, requested.embedder):
        raise StoreSettingsMismatch(mismatch_message(sid, identity, requested.embedder))
    if requested.vector_dim is not None and requested.vector_dim != dim:
        if dim is not None:
            if requested.embedder is not None and identity is not None:
                raise StoreSettingsMismatch(mismatch_message(sid, identity, requested.embedder))
            raise StoreSettingsMismatch(
                f"vector_dim: store {sid!r} holds {dim}-dimensional vectors, the open asked for "
                f"{requested.vector_dim}; open it with the embedder that built its vectors (a different "
                "embedder of the same dimension would mix two vector spaces), move it to another embedder "
                "with `oramem reembed`, or RECREATE the store"
            )
        if may_change:
            dim = requested.vector_dim
            updates["vector_dim"] = dim

    wanted = requested.search_strategy
    gains_keyword = has_keyword(wanted) and not has_keyword(capability)
    gains_vector = has_vector(wanted) and not has_vector(capability)
    if gains_keyword or gains_vector:
        unvectored = _unvectored_rows(conn, tables) if gains_vector else 0
        if not may_change:
            mismatch = StoreSettingsMismatch(
                f"search_strategy: store {sid!r} supports {capability.value} search, the open asked for "
                f"{wanted.value}; "
                + (
                    _copy_advice(unvectored, wanted)
                    if unvectored
                    else f"open with CREATE_IF_NECESSARY to upgrade it, or open it with search_strategy={capability.value!r}"
                )
            )
            mismatch.upgradable = not unvectored
            raise mismatch
        if gains_vector:
            _check_vector_upgrade(sid, dim, wanted, unvectored)
        capability = SearchStrategy.HYBRID
        updates["capability"] = capability.value
        if gains_keyword:
            if language == LEGACY_LANGUAGE:  # not reached: a version-1 store is upgraded first
                raise SchemaError(f"store {sid!r}: upgrade its schema before adding keyword search")
            _create_objects(conn, tables, capability, language)
            conn.execute(f"DELETE FROM {tables.fts}")
            conn.execute(tables.fts_fill("1", True, keyword_rows_of(row.get("embedder"))))
            if requested.search_index_sync is not None:
                sync = requested.search_index_sync
                updates["search_index_sync"] = sync.value

    if requested.search_index_sync is not None and requested.search_index_sync != sync:
        raise StoreSettingsMismatch(
            f"search_index_sync: store {sid!r} persists {sync.value}, the open asked for "
            f"{requested.search_index_sync.value}; omit search_index_sync to use the stored one, or RECREATE"
        )
    if has_vector(capability) and dim is None:
        raise ValueError(f"store {sid!r} needs vector_dim for {capability.value} search; pass vector_dim or an embedder")
    if identity is None and requested.embedder is not None and has_vector(capability):
        # a store made before identities were recorded (or by callers that gave vectors
        # only) adopts the identity of the first embedder that opens it
        identity = requested.embedder
        updates["embedder"] = encode_identity(identity)

    change_seq = row["change_seq"]
    if updates:
        change_seq += 1
        updates["change_seq"] = change_seq
        assignments = ", ".join(f"{column} = :{column}" for column in updates)  # fixed column names
        conn.execute(f"UPDATE {CATALOG} SET {assignments} WHERE store_id = :sid", {**updates, "sid": sid})
    settings = StoreSettings(sid, dim, wanted, sync, retention, identity)
    return StoreState(settings, capability, row["generation"], change_seq, language)


def _unvectored_rows(conn: sqlite3.Connection, tables: StoreTables) -> int:
    (count,) = conn.execute(f"SELECT count(*) FROM {tables.chunks} WHERE vector IS NULL").fetchone()
    return int(count)


def _copy_advice(unvectored: int, wanted: SearchStrategy) -> str:
    """What to do with a keyword store that holds records when a vector strategy is asked for:
    an open cannot embed its rows, so they move into a new store that embeds them on import."""
    return (
        f"it holds {unvectored} retrieval rows without vectors, so an open cannot make it {wanted.value}: "
        f"open it with search_strategy='keyword', or copy its records into a new {wanted.value} store "
        f"(export them with oramem.jsonl.export_records and import them into another memory_store_id "
        f"opened with search_strategy={wanted.value!r}, which embeds them)"
    )


def _check_vector_upgrade(sid: str, dim: Optional[int], wanted: SearchStrategy, unvectored: int) -> None:
    if unvectored:  # first: no embedder would help
        mismatch = StoreSettingsMismatch(f"search_strategy: keyword store {sid!r}: {_copy_advice(unvectored, wanted)}")
        mismatch.upgradable = False
        raise mismatch
    if dim is None:
        raise ValueError(f"upgrading store {sid!r} to {wanted.value} search needs vector_dim or an embedder")


def _create(
    conn: sqlite3.Connection, tables: StoreTables, requested: StoreSettings, now: str, keyword_language: Optional[str]
) -> StoreState:
    capability = requested.search_strategy
    language = keyword_language or DEFAULT_KEYWORD_LANGUAGE
    _ensure_language_column(conn)
    if has_vector(capability) and requested.vector_dim is None:
        raise ValueError(
            f"creating a {capability.value} store needs vector_dim; pass vector_dim or an embedder that reports it"
        )
    sync = requested.search_index_sync or SearchIndexSyncMode.ON_COMMIT
    retention = requested.retention or MemoryRetentionConfig()
    identity = requested.embedder if has_vector(capability) else None
    _create_objects(conn, tables, capability, language)
    generation = uuid.uuid4().hex
    conn.execute(
        f"""INSERT INTO {CATALOG} (store_id, schema_version, state, capability, vector_dim, search_index_sync,
                                   default_ttl_days, max_ttl_days, generation, change_seq, created_at, embedder,
                                   keyword_language)
            VALUES (?, ?, 'ready', ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)""",
        (
            tables.store_id,
            SCHEMA_VERSION,
            capability.value,
            requested.vector_dim,
            sync.value,
            retention.default_ttl_days,
            retention.max_ttl_days,
            generation,
            now,
            encode_identity(identity),
            language,
        ),
    )
    settings = StoreSettings(tables.store_id, requested.vector_dim, capability, sync, retention, identity)
    return StoreState(settings, capability, generation, 0, language)


def _create_objects(conn: sqlite3.Connection, tables: StoreTables, capability: SearchStrategy, language: str) -> None:
    for ddl in tables.base_ddl() + (tables.keyword_ddl(language) if has_keyword(capability) else []):
        conn.execute(ddl)


def _catalog_row(conn: sqlite3.Connection, store_id: str) -> Optional[dict[str, Any]]:
    cur = conn.execute(f"SELECT * FROM {CATALOG} WHERE store_id = ?", (store_id,))
    names = [d[0] for d in cur.description]
    raw = cur.fetchone()
    return None if raw is None else dict(zip(names, raw))


def _not_found(store_id: str) -> StoreNotFound:
    return StoreNotFound(
        f"no store {store_id!r} exists here; open it with schema_policy=CREATE_IF_NECESSARY "
        "(or CREATE_IF_EMPTY) to create it"
    )
