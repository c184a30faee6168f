"""The knowledge tables (KC-3.1, KC-3.3, KC-3.4) as SQLAlchemy 2 Core tables that map onto
SQLite and Oracle.

Eleven tables ``<STORE_ID>_KG_<NAME>`` plus the ``<STORE_ID>_KG_AGENT`` lock table and the
``<STORE_ID>_KG_JOB`` extraction queue (``queue.py``). Each
has every column of its seed model under the seed's name with the seed's default; the
Postgres-only ``embedding`` (JSON fallback) and ``search_vector`` (TSVECTOR) columns are
mapped, not stored: the vector is ``embedding_vec`` on both engines and the keyword index
is the store's index over the fact's store record (KC-3.2).

Engine mapping (type decorators, one seam):

========== ============================== ==========================================
seed       SQLite                         Oracle
========== ============================== ==========================================
UUID       TEXT (uuid4 text)              VARCHAR2(36)
DateTime   TEXT, fixed-format ISO UTC     TIMESTAMP (UTC)
JSONB      TEXT (json1)                   JSON
Vector     BLOB of float32                VECTOR(<store vector_dim>, FLOAT32)
Boolean    INTEGER 0/1                    BOOLEAN
========== ============================== ==========================================
"""

from __future__ import annotations

import array
import functools
import json
import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Optional

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine, UserDefinedType

from ... import timeutil
from ...errors import SchemaError
from ...types import SchemaPolicy
from ..text import iso, to_utc

__all__ = ["KGTables", "build_tables", "TABLE_NAMES", "apply_schema_policy", "KnowledgeTablesMissing", "oracle_ddl", "oracle_index_ddl",
           "ensure_indexes", "missing_indexes", "plain_indexes", "INDEXES_ADDED_TO"]

_log = logging.getLogger("oramem.knowledge")

TABLE_NAMES = (
    "EVENT",
    "FACT",
    "ENTITY",
    "ENTITY_ALIAS",
    "RELATIONSHIP",
    "FACT_ENTITY_LINK",
    "CLUSTER",
    "META_OBSERVATION",
    "ATTRIBUTE_REGISTRY",
    "INTENTION",
    "SESSION_OBSERVATION",
)


# ----------------------------------------------------------------------------- Oracle types
class _OracleBoolean(UserDefinedType[bool]):
    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "BOOLEAN"


class _OracleJSON(UserDefinedType[Any]):
    """Oracle ``JSON`` column, bound as ``DB_TYPE_JSON`` (OSON): python-oracledb encodes the
    Python value itself (``impl/base/oson.pyx`` ``encode_node``), so no temporary LOB is
    created per value as a CLOB bind does (``impl/thin/var.pyx``, ``conn.createlob``; review
    D13). SQLAlchemy's oracledb dialect leaves ``DB_TYPE_JSON`` out of its
    ``include_set_input_sizes``, so :func:`bind_json_as_oson` puts it into each statement's
    input sizes on the engines the knowledge layer creates. Static-checked, not run against
    Oracle."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "JSON"

    def get_dbapi_type(self, dbapi: Any) -> Any:
        return dbapi.DB_TYPE_JSON


def _json_input_sizes(inputsizes: dict[Any, Any], cursor: Any, statement: Any, parameters: Any, context: Any) -> None:
    """``do_setinputsizes`` listener: every bind of a :class:`JSONValue` column goes as
    ``DB_TYPE_JSON``. The driver cannot infer it: an untyped dict raises DPY-3002
    (``impl/base/metadata.pyx`` ``from_value``) and an untyped list is bound as a PL/SQL array
    (``impl/base/bind_var.pyx`` ``_create_var_from_value``; ORA-01484 in SQL), and a scalar
    would arrive as text for the column to parse."""
    dbtype = context.dialect.dbapi.DB_TYPE_JSON
    for bindparam in inputsizes:
        if isinstance(bindparam.type, JSONValue):
            inputsizes[bindparam] = dbtype


def bind_json_as_oson(engine: Any) -> Any:
    """Make ``engine``, when it is an ``oracle+oracledb`` SQLAlchemy engine, bind the knowledge
    tables' JSON columns as ``DB_TYPE_JSON`` (the documented way to send a Python value to a
    JSON column: python-oracledb user guide, "Using the Oracle Database 21c JSON Type"); other
    dialects have nothing to do. Returns the engine (``store.sql_access(configure=...)``)."""
    if engine.dialect.name == "oracle":
        sa.event.listen(engine, "do_setinputsizes", _json_input_sizes)
    return engine


class _OracleVector(UserDefinedType[Any]):
    cache_ok = True

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def get_col_spec(self, **kw: Any) -> str:
        return f"VECTOR({self.dim}, FLOAT32)"


# ----------------------------------------------------------------------------- decorators
class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes; fixed-format ISO text on SQLite, TIMESTAMP on Oracle."""

    impl = sa.String(32)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "oracle":
            return dialect.type_descriptor(sa.TIMESTAMP())
        return dialect.type_descriptor(sa.String(32))

    def process_bind_param(self, value: Optional[datetime | str], dialect: Dialect) -> Optional[datetime | str]:
        if value is None:
            return None
        if isinstance(value, str):
            return value
        if dialect.name == "oracle":
            return to_utc(value).replace(tzinfo=None)
        return iso(value)

    def process_result_value(self, value: Optional[Any], dialect: Dialect) -> Optional[datetime]:
        if value is None:
            return None
        if isinstance(value, datetime):
            return to_utc(value)
        return _utc_of_text(value)


@functools.lru_cache(maxsize=1 << 16)
def _utc_of_text(value: str) -> datetime:
    """A stored timestamp's text as an aware UTC datetime, memoised: a retrieve decodes the
    same rows' timestamps again and again (datetimes are immutable, the result depends on the
    text only, so sharing it across stores and users shows nobody anything)."""
    return to_utc(timeutil.parse_iso(value))


class Bool(TypeDecorator[bool]):
    impl = sa.Boolean(create_constraint=False)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "oracle":
            return dialect.type_descriptor(_OracleBoolean())
        return dialect.type_descriptor(sa.Boolean(create_constraint=False))

    def process_bind_param(self, value: Optional[Any], dialect: Dialect) -> Optional[bool | int]:
        if value is None:
            return None
        return bool(value) if dialect.name == "oracle" else int(bool(value))

    def process_result_value(self, value: Optional[Any], dialect: Dialect) -> Optional[bool]:
        return None if value is None else bool(value)


class JSONValue(TypeDecorator[Any]):
    impl = sa.Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "oracle":
            return dialect.type_descriptor(_OracleJSON())
        return dialect.type_descriptor(sa.Text())

    def process_bind_param(self, value: Optional[Any], dialect: Dialect) -> Any:
        if value is None:
            return None
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        if dialect.name == "oracle":
            # D13: the value itself, bound as DB_TYPE_JSON (bind_json_as_oson), in the plain
            # JSON types SQLite stores (what json.dumps(default=str) makes of a date, a set...),
            # so both engines keep the same value; no temporary LOB
            return json.loads(text)
        return text

    def process_result_value(self, value: Optional[Any], dialect: Dialect) -> Any:
        if value is None:
            return None
        if dialect.name == "oracle":
            # D1: python-oracledb decodes a JSON column itself (impl/base/oson.pyx,
            # _decode_node: str, bool, None, dict, list, every number a Decimal); decoding
            # again would fail on "Talho" or Decimal('42'). Numbers become int/float as on SQLite.
            return _plain_json(value)
        if isinstance(value, (dict, list)):
            return value
        return json.loads(value)


def _plain_json(value: Any) -> Any:
    """A driver-decoded JSON value with its Decimal numbers as int (integral) or float."""
    from decimal import Decimal

    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_json(v) for v in value]
    return value


class Vector(TypeDecorator[np.ndarray]):
    """float32 vectors: BLOB on SQLite, ``VECTOR(dim, FLOAT32)`` on Oracle."""

    impl = sa.LargeBinary
    cache_ok = True

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "oracle":
            return dialect.type_descriptor(_OracleVector(self.dim))
        return dialect.type_descriptor(sa.LargeBinary())

    def process_bind_param(self, value: Optional[Any], dialect: Dialect) -> Optional[array.array[float] | bytes]:
        if value is None:
            return None
        vec = np.asarray(value, dtype=np.float32).reshape(-1)
        if dialect.name == "oracle":
            return array.array("f", vec.tolist())
        return vec.tobytes()

    def process_result_value(self, value: Optional[Any], dialect: Dialect) -> Optional[np.ndarray]:
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return np.frombuffer(bytes(value), dtype=np.float32)
        return np.asarray(value, dtype=np.float32)


# ----------------------------------------------------------------------------- tables
def _id(name: str = "id", **kw: Any) -> sa.Column[Any]:
    return sa.Column(name, sa.String(36), **kw)


def _ts(name: str, nullable: bool = True) -> sa.Column[Any]:
    return sa.Column(name, UTCDateTime(), nullable=nullable)


def _agent() -> sa.Column[Any]:
    return sa.Column("agent_id", sa.String(256), nullable=False)


#: KC-3.7: the user a row belongs to; NULL is the agent's shared knowledge
USER_COLUMN = "user_id"


def _user() -> sa.Column[Any]:
    return sa.Column(USER_COLUMN, sa.String(255), nullable=True)


@dataclass
class KGTables:
    metadata: sa.MetaData
    store_id: str
    vector_dim: int
    event: sa.Table
    fact: sa.Table
    entity: sa.Table
    alias: sa.Table
    relationship: sa.Table
    link: sa.Table
    cluster: sa.Table
    meta_observation: sa.Table
    registry: sa.Table
    intention: sa.Table
    session_observation: sa.Table
    agent: sa.Table
    job: sa.Table

    def all_agent_tables(self) -> list[sa.Table]:
        """The 11 knowledge tables (every one has ``agent_id``)."""
        return [
            self.link,
            self.relationship,
            self.alias,
            self.fact,
            self.event,
            self.entity,
            self.cluster,
            self.meta_observation,
            self.registry,
            self.intention,
            self.session_observation,
        ]


def build_tables(store_id: str, vector_dim: int) -> KGTables:
    """The table objects of one store; names are built only from a validated store id."""
    if not store_id or not store_id.replace("_", "").isalnum() or not store_id[0].isalpha() or len(store_id) > 16:
        raise ValueError(f"invalid memory_store_id {store_id!r}")
    p = f"{store_id.upper()}_KG_"
    md = sa.MetaData()
    def V(name: str) -> sa.Column[Any]:
        return sa.Column(name, Vector(vector_dim))

    event = sa.Table(
        p + "EVENT", md,
        _id(primary_key=True), _agent(), _user(),
        _ts("occurred_at", False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("source", sa.String(64), nullable=False, server_default="api"),
        sa.Column("importance", sa.Float, nullable=False, server_default=sa.text("0.5")),
        V("embedding_vec"),
        sa.Column("trace_json", JSONValue()),
        _ts("created_at", False),
        sa.Column("emotion_primary", sa.String(32)),
        sa.Column("emotion_intensity", sa.Float),
        sa.Column("energy_level", sa.String(16)),
        sa.Column("session_id", sa.String(256)),
        sa.Column("speaker", sa.String(256)),
        sa.Index(f"{p}EVENT_AGT_OCC_IX", "agent_id", "occurred_at"),
        # a reader's own newest events (KC-5.4 [ext]: who "I" is in her query), however many
        # other users' events the agent holds
        sa.Index(f"{p}EVENT_AGT_USR_OCC_IX", "agent_id", "user_id", "occurred_at"),
    )
    fact = sa.Table(
        p + "FACT", md,
        _id(primary_key=True), _agent(), _user(),
        sa.Column("entity_type", sa.String(32), nullable=False),
        sa.Column("entity_key", sa.String(128), nullable=False),
        sa.Column("entity_name", sa.String(256)),
        sa.Column("attribute_key", sa.String(64)),
        sa.Column("fact_text", sa.Text, nullable=False),
        sa.Column("category", sa.String(50)),
        sa.Column("confidence", sa.Float, nullable=False, server_default=sa.text("0.8")),
        sa.Column("importance", sa.Float, nullable=False, server_default=sa.text("0.5")),
        sa.Column("is_sensitive", Bool(), nullable=False, server_default=sa.text("0")),
        _ts("valid_from", False),
        _ts("valid_to"),
        sa.Column("ttl_days", sa.Integer),
        _id("source_event_id"),
        _id("supersedes_fact_id"),
        V("embedding_vec"),
        sa.Column("vitality_score", sa.Float),
        sa.Column("is_stale", Bool(), nullable=False, server_default=sa.text("0")),
        _id("cluster_id"),
        sa.Column("value_json", JSONValue()),
        sa.Column("needs_confirmation", Bool(), nullable=False, server_default=sa.text("0")),
        _ts("last_confirmed_at"),
        sa.Column("times_retrieved", sa.Integer, nullable=False, server_default=sa.text("0")),
        _ts("last_retrieved_at"),
        sa.Column("user_correction_count", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("source_context", sa.String(512)),
        sa.Column("agent_annotation", sa.Text),
        _ts("created_at", False),
        _ts("ingested_at", False),
        _ts("invalidated_at"),
        sa.Column("speaker", sa.String(256)),
        sa.Column("reinforcement_count", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Index(f"{p}FACT_AGT_ENT_VT_IX", "agent_id", "entity_key", "valid_to"),
        # issue 25 (round f): an entity's facts in retrieve's rank order (spreading's facts
        # per entity, the expansion's terms), so a read stops after the rows it keeps
        sa.Index(f"{p}FACT_AGT_ENT_RANK_IX", "agent_id", "entity_key", sa.text("importance DESC"), sa.text("valid_from DESC"), "id"),
        # an entity's facts newest first (the graph signal's facts per hop key), so that read
        # stops after the rows it keeps, however many facts the entity holds
        sa.Index(f"{p}FACT_AGT_ENT_VF_IX", "agent_id", "entity_key", sa.text("valid_from DESC"), "id"),
        # the write path's same-key read (agent, entity, attribute, current)
        sa.Index(f"{p}FACT_AGT_ENT_ATTR_IX", "agent_id", "entity_key", "attribute_key", "valid_to"),
        # the recount's "is this linked fact current" probe, answered from the index alone
        sa.Index(f"{p}FACT_ID_CUR_IX", "id", "valid_to", "invalidated_at", "ttl_days"),
        sa.Index(f"{p}FACT_SUPERSEDES_IX", "supersedes_fact_id"),
        sa.Index(f"{p}FACT_EVENT_IX", "source_event_id"),
    )
    entity = sa.Table(
        p + "ENTITY", md,
        _id(primary_key=True), _agent(), _user(),
        sa.Column("canonical_key", sa.String(128), nullable=False),
        sa.Column("display_name", sa.String(256)),
        sa.Column("entity_type", sa.String(32), nullable=False),
        sa.Column("summary_text", sa.Text),
        V("embedding_vec"),
        sa.Column("fact_count", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("importance_score", sa.Float),
        sa.Column("is_active", Bool(), nullable=False, server_default=sa.text("1")),
        _ts("first_seen_at", False),
        _ts("last_seen_at", False),
        _ts("summary_refreshed_at"),
        _ts("created_at", False),
        sa.UniqueConstraint("agent_id", "user_id", "canonical_key", name=f"{p}ENTITY_UK"),
        sa.Index(f"{p}ENTITY_AGT_TYPE_IX", "agent_id", "entity_type"),
    )
    alias = sa.Table(
        p + "ENTITY_ALIAS", md,
        _id(primary_key=True), _agent(), _user(),
        sa.Column("alias", sa.String(256), nullable=False),
        sa.Column("canonical_entity_key", sa.String(128), nullable=False),
        sa.Column("canonical_entity_type", sa.String(32), nullable=False),
        _ts("created_at", False),
        sa.UniqueConstraint("agent_id", "user_id", "alias", name=f"{p}ALIAS_UK"),
        sa.Index(f"{p}ALIAS_KEY_IX", "agent_id", "canonical_entity_key"),
    )
    relationship = sa.Table(
        p + "RELATIONSHIP", md,
        _id(primary_key=True), _agent(), _user(),
        sa.Column("source_entity_key", sa.String(128), nullable=False),
        sa.Column("target_entity_key", sa.String(128), nullable=False),
        sa.Column("rel_type", sa.String(64), nullable=False),
        sa.Column("strength", sa.Float, nullable=False, server_default=sa.text("0.8")),
        _id("evidence_fact_id"),
        sa.Column("provenance", sa.String(16), nullable=False, server_default="llm"),
        _ts("valid_from", False),
        _ts("valid_to"),
        _ts("created_at", False),
        _ts("updated_at", False),
        _ts("last_used_at"),
        _ts("invalidated_at"),
        sa.UniqueConstraint("agent_id", "user_id", "source_entity_key", "target_entity_key", "rel_type", name=f"{p}REL_UK"),
        sa.Index(f"{p}REL_AGT_TGT_IX", "agent_id", "target_entity_key"),
        sa.Index(f"{p}REL_EVIDENCE_IX", "evidence_fact_id"),
    )
    link = sa.Table(
        p + "FACT_ENTITY_LINK", md,
        _id(primary_key=True),
        _id("fact_id", nullable=False),
        sa.Column("entity_key", sa.String(128), nullable=False),
        sa.Column("is_primary", Bool(), nullable=False, server_default=sa.text("0")),
        _agent(), _user(),
        sa.UniqueConstraint("fact_id", "entity_key", name=f"{p}LINK_UK"),
        sa.Index(f"{p}LINK_AGT_ENT_IX", "agent_id", "entity_key"),
        sa.Index(f"{p}LINK_FACT_IX", "fact_id"),
    )
    cluster = sa.Table(
        p + "CLUSTER", md,
        _id(primary_key=True), _agent(), _user(),
        sa.Column("label", sa.String(128), nullable=False),
        sa.Column("summary_text", sa.Text),
        sa.Column("cluster_type", sa.String(32), nullable=False, server_default="auto"),
        sa.Column("fact_count", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("importance", sa.Float, nullable=False, server_default=sa.text("0.5")),
        V("embedding_vec"),
        sa.Column("is_active", Bool(), nullable=False, server_default=sa.text("1")),
        _ts("last_updated_at", False),
        _ts("created_at", False),
    )
    meta_observation = sa.Table(
        p + "META_OBSERVATION", md,
        _id(primary_key=True), _agent(), _user(),
        sa.Column("observation_type", sa.String(32), nullable=False),
        sa.Column("title", sa.String(256), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("supporting_event_ids", JSONValue(), nullable=False, server_default="[]"),
        sa.Column("supporting_fact_ids", JSONValue(), nullable=False, server_default="[]"),
        sa.Column("confidence", sa.Float, nullable=False, server_default=sa.text("0.7")),
        sa.Column("importance", sa.Float, nullable=False, server_default=sa.text("0.5")),
        sa.Column("times_reinforced", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("is_active", Bool(), nullable=False, server_default=sa.text("1")),
        V("embedding_vec"),
        _ts("first_detected_at", False),
        _ts("last_reinforced_at", False),
        _ts("created_at", False),
    )
    registry = sa.Table(
        p + "ATTRIBUTE_REGISTRY", md,
        _id(primary_key=True), _agent(),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("status", sa.String(20), nullable=False, server_default="proposed"),
        sa.Column("value_type", sa.String(20), nullable=False, server_default="string"),
        sa.Column("conflict_policy", sa.String(20), nullable=False, server_default="supersede"),
        sa.Column("ttl_days", sa.Integer),
        sa.Column("seen_count", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("proposed_by", sa.String(20), nullable=False, server_default="llm"),
        sa.Column("reason", sa.Text),
        _ts("first_seen_at", False),
        _ts("last_seen_at", False),
        sa.Column("example_raw_key", sa.String(128)),
        _ts("created_at", False),
        _ts("updated_at"),
        sa.UniqueConstraint("agent_id", "key", name=f"{p}REGISTRY_UK"),
    )
    intention = sa.Table(
        p + "INTENTION", md,
        _id(primary_key=True), _agent(), _user(),
        sa.Column("trigger_type", sa.String(16), nullable=False),
        sa.Column("trigger_condition", sa.Text, nullable=False),
        sa.Column("intended_action", sa.Text, nullable=False),
        _ts("due_date"),
        sa.Column("status", sa.String(16), nullable=False, server_default="pending"),
        V("trigger_embedding_vec"),
        sa.Column("source_context", sa.String(256)),
        sa.Column("outcome_note", sa.Text),
        _ts("created_at", False),
        _ts("triggered_at"),
        _ts("fulfilled_at"),
        sa.Index(f"{p}INTENTION_AGT_ST_IX", "agent_id", "status", "due_date"),
    )
    session_observation = sa.Table(
        p + "SESSION_OBSERVATION", md,
        _id(primary_key=True), _agent(), _user(),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("topic", sa.String(64)),
        sa.Column("entities_mentioned", JSONValue(), nullable=False, server_default="[]"),
        _ts("created_at", False),
        _ts("referenced_at"),
        sa.Column("relative_offset", sa.String(64)),
        sa.Column("source_message_ids", JSONValue(), nullable=False, server_default="[]"),
        sa.Column("is_active", Bool(), nullable=False, server_default=sa.text("1")),
        _id("merged_into_id"),
        sa.Column("emotion_label", sa.String(32)),
        V("embedding_vec"),
        sa.Column("session_id", sa.String(256)),
        sa.Index(f"{p}SESSOBS_AGT_SES_IX", "agent_id", "session_id", "is_active"),
    )
    agent = sa.Table(
        p + "AGENT", md,
        sa.Column("agent_id", sa.String(256), primary_key=True),
        _ts("last_write_at"),
    )
    # the durable extraction queue (queue.py): one row per background write
    job = sa.Table(
        p + "JOB", md,
        _id(primary_key=True), _agent(), _user(),
        _id("event_id", nullable=False),
        sa.Column("kind", sa.String(16), nullable=False, server_default="write"),
        sa.Column("status", sa.String(16), nullable=False, server_default="pending"),
        sa.Column("session_id", sa.String(256)),
        sa.Column("payload_json", JSONValue(), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("max_attempts", sa.Integer, nullable=False, server_default=sa.text("5")),
        _ts("available_at", False),
        _ts("lease_until"),
        sa.Column("worker_id", sa.String(128)),
        sa.Column("last_error", sa.Text),
        sa.Column("result_json", JSONValue()),
        _ts("created_at", False),
        _ts("updated_at", False),
        _ts("finished_at"),
        sa.UniqueConstraint("event_id", name=f"{p}JOB_EVENT_UK"),
        sa.Index(f"{p}JOB_ST_AVAIL_IX", "status", "available_at"),
        sa.Index(f"{p}JOB_AGT_ST_IX", "agent_id", "status"),
    )
    # KC-3.7: shared rows (user_id NULL) are unique per agent too. Oracle's composite UNIQUE
    # constraint already treats rows whose non-null keys are equal and whose user_id is NULL as
    # duplicates; SQLite treats NULLs as distinct, so it gets partial unique indexes (SQLite only).
    for table, cols, name in (
        (entity, ("agent_id", "canonical_key"), "ENTITY_SHR_UK"),
        (alias, ("agent_id", "alias"), "ALIAS_SHR_UK"),
        (relationship, ("agent_id", "source_entity_key", "target_entity_key", "rel_type"), "REL_SHR_UK"),
    ):
        sa.Index(
            p + name, *(table.c[c] for c in cols), unique=True, sqlite_where=table.c.user_id.is_(None),
            info={"sqlite_only": True},
        ).ddl_if(dialect="sqlite")
    return KGTables(
        md, store_id.upper(), vector_dim, event, fact, entity, alias, relationship, link, cluster,
        meta_observation, registry, intention, session_observation, agent, job,
    )


# ----------------------------------------------------------------------------- policies
class KnowledgeTablesMissing(SchemaError):
    """The store lacks knowledge tables and the schema policy in force does not create them;
    ``missing`` names them (the CLI turns the Python advice into its own command)."""

    def __init__(self, message: str, store_id: str, missing: list[str]) -> None:
        super().__init__(message)
        self.store_id = store_id
        self.missing = list(missing)


def apply_schema_policy(engine: sa.Engine, tables: KGTables, policy: SchemaPolicy,
                        upgrade: Optional[Callable[[list[str]], None]] = None) -> None:
    """Create, validate or recreate the knowledge tables under the store's policy (SC-10.2)."""
    policy = SchemaPolicy.coerce(policy, "schema_policy")
    insp = sa.inspect(engine)
    wanted = list(tables.metadata.sorted_tables)
    existing = {t.name for t in wanted if insp.has_table(t.name)}
    if policy is SchemaPolicy.RECREATE:
        tables.metadata.drop_all(engine)
        tables.metadata.create_all(engine)
        return
    if policy is SchemaPolicy.CREATE_IF_NECESSARY or (policy is SchemaPolicy.CREATE_IF_EMPTY and not existing):
        tables.metadata.create_all(engine, checkfirst=True)
        existing = {t.name for t in wanted}
        insp = sa.inspect(engine)
    missing = [t.name for t in wanted if t.name not in existing]
    if missing:
        raise KnowledgeTablesMissing(
            f"knowledge tables missing for store {tables.store_id}: {', '.join(missing)}; "
            f"open with schema_policy=CREATE_IF_NECESSARY to create them (policy in force: {policy.value})",
            tables.store_id, missing,
        )
    lacking_of = _lacking_columns(insp, wanted)
    if lacking_of and all(set(cols) <= UPGRADABLE for cols in lacking_of.values()):
        # KC-3.7: a store made before the user dimension; upgraded in place on open under
        # CREATE_IF_NECESSARY (existing rows become the agent's shared knowledge), refused otherwise
        if policy is not SchemaPolicy.CREATE_IF_NECESSARY:
            raise SchemaError(
                f"the knowledge tables of store {tables.store_id} predate the user dimension (no {USER_COLUMN} column); "
                "open once with schema_policy=CREATE_IF_NECESSARY to upgrade them in place (existing knowledge becomes "
                "the agent's shared knowledge), or on Oracle run ddl/knowledge/002_user_scope.sql "
                f"(policy in force: {policy.value})"
            )
        if upgrade is None:
            raise SchemaError(
                f"the knowledge tables of store {tables.store_id} predate the user dimension (no {USER_COLUMN} column): "
                "open the store once with KnowledgeMemory(store, None) under schema_policy=CREATE_IF_NECESSARY to "
                "upgrade them in place, then retry"
            )
        upgrade(sorted(lacking_of))
        lacking_of = _lacking_columns(sa.inspect(engine), wanted)
    for name, lacking in lacking_of.items():
        raise SchemaError(
            f"knowledge table {name} lacks column(s) {', '.join(lacking)}; "
            "upgrade with schema_policy=CREATE_IF_NECESSARY is not supported for these columns: use RECREATE (destructive)"
        )
    ensure_indexes(engine, tables, policy)


def plain_indexes(tables: KGTables) -> list[sa.Index]:
    """The knowledge tables' plain (non-unique) indexes, by table then name: the ones an
    existing schema may lack (the unique ones come with their tables)."""
    return [ix for t in tables.metadata.sorted_tables for ix in sorted(t.indexes, key=lambda i: i.name or "")
            if not ix.unique and not ix.info.get("sqlite_only")]


#: the tables (name suffix after ``<ID>_KG_``) whose plain indexes grew after stores were
#: made with them; only these are inspected on open (reading every table's indexes cost
#: ~5 ms per open here). A table that gains an index goes on this list.
INDEXES_ADDED_TO = ("FACT", "EVENT")


def missing_indexes(insp: Any, tables: KGTables) -> list[sa.Index]:
    """The plain indexes of the :data:`INDEXES_ADDED_TO` tables an existing schema lacks (names
    compared case-blind: Oracle's dictionary holds them in capitals, SQLAlchemy reports those
    in lower case)."""
    checked = {f"{tables.store_id}_KG_{t}" for t in INDEXES_ADDED_TO}
    have: dict[str, set[str]] = {}
    out = []
    for ix in plain_indexes(tables):
        name = ix.table.name  # type: ignore[union-attr]  # every index here belongs to its table
        if name not in checked:
            continue
        if name not in have:
            have[name] = {str(i["name"]).upper() for i in insp.get_indexes(name) if i.get("name")}
        if str(ix.name).upper() not in have[name]:
            out.append(ix)
    return out


def create_index_sql(ix: sa.Index, dialect: Dialect) -> str:
    """``CREATE INDEX IF NOT EXISTS`` of one index (SQLite; Oracle 23ai: SQLAlchemy's Oracle
    compiler leaves the clause out, so it is put in)."""
    from sqlalchemy.schema import CreateIndex

    stmt = str(CreateIndex(ix, if_not_exists=True).compile(dialect=dialect)).strip()
    if "IF NOT EXISTS" not in stmt:
        stmt = stmt.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)
    return stmt


def ensure_indexes(engine: sa.Engine, tables: KGTables, policy: SchemaPolicy) -> None:
    """Issue 25 (round f): knowledge tables made before an index was added get it on open
    under ``CREATE_IF_NECESSARY`` (``CREATE INDEX IF NOT EXISTS``). Under another policy
    nothing is changed: a missing index costs speed, not correctness, so the open goes on
    with a warning that says how to add them."""
    missing = missing_indexes(sa.inspect(engine), tables)
    if not missing:
        return
    names = ", ".join(str(ix.name) for ix in missing)
    if policy is not SchemaPolicy.CREATE_IF_NECESSARY:
        _log.warning(
            "oramem.knowledge: the knowledge tables of store %s lack index(es) %s: retrieve and write read "
            "more rows than they keep; open once with schema_policy=CREATE_IF_NECESSARY to make them, or on Oracle "
            "run ddl/knowledge/003_kg_indexes.sql (oracle_index_ddl(%r) for another store) (policy in force: %s)",
            tables.store_id, names, tables.store_id, policy.value)
        return
    with engine.begin() as conn:
        for ix in missing:
            conn.exec_driver_sql(create_index_sql(ix, engine.dialect))
    _log.info("oramem.knowledge: store %s: created index(es) %s", tables.store_id, names)


#: columns an older store may lack that :func:`upgrade_sqlite` / ``002_user_scope.sql`` add
UPGRADABLE = frozenset({USER_COLUMN})


def _lacking_columns(insp: Any, wanted: list[sa.Table]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in wanted:
        have = {c["name"].lower() for c in insp.get_columns(t.name)}
        lacking = [c.name for c in t.columns if c.name.lower() not in have]
        if lacking:
            out[t.name] = lacking
    return out


def upgrade_sqlite(conn: sa.Connection, tables: KGTables, names: list[str]) -> None:
    """KC-3.7 upgrade of SQLite knowledge tables made before the user dimension, inside the
    caller's transaction: each table is rebuilt (SQLite cannot change a UNIQUE constraint in
    place): renamed aside, created anew with its indexes, its rows copied (``user_id`` NULL:
    the agent's shared knowledge), the old table dropped."""
    by_name = {t.name: t for t in tables.metadata.sorted_tables}
    for name in names:
        t = by_name[name]
        old = f"{name}__PRE_USER"
        cols = [r[1] for r in conn.exec_driver_sql(f'PRAGMA table_info("{name}")')]
        for (ix_name,) in conn.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL", (name,)
        ).all():
            conn.exec_driver_sql(f'DROP INDEX "{ix_name}"')
        conn.exec_driver_sql(f'ALTER TABLE "{name}" RENAME TO "{old}"')
        t.create(conn)
        common = ", ".join(f'"{c}"' for c in cols if c in t.c)
        conn.exec_driver_sql(f'INSERT INTO "{name}" ({common}) SELECT {common} FROM "{old}"')
        conn.exec_driver_sql(f'DROP TABLE "{old}"')


def oracle_ddl(store_id: str, vector_dim: int) -> str:
    """The Oracle DDL of one store's knowledge tables: ``CREATE TABLE IF NOT EXISTS`` and
    ``CREATE INDEX IF NOT EXISTS`` (23ai), one statement per ``;``-terminated block."""
    from sqlalchemy.dialects import oracle
    from sqlalchemy.schema import CreateTable

    dialect = oracle.dialect()  # type: ignore[no-untyped-call]  # SQLAlchemy leaves the dialect constructor untyped
    tables = build_tables(store_id, vector_dim)
    out: list[str] = []
    for t in tables.metadata.sorted_tables:
        ddl = str(CreateTable(t, if_not_exists=True).compile(dialect=dialect)).strip()
        ddl = re.sub(r"BOOLEAN DEFAULT 1", "BOOLEAN DEFAULT TRUE", ddl)
        ddl = re.sub(r"BOOLEAN DEFAULT 0", "BOOLEAN DEFAULT FALSE", ddl)
        out.append(ddl + ";")
        for ix in sorted(t.indexes, key=lambda i: i.name or ""):
            if ix.info.get("sqlite_only"):
                continue
            out.append(create_index_sql(ix, dialect) + ";")
    return "\n\n".join(out) + "\n"


def oracle_index_ddl(store_id: str) -> str:
    """Issue 25 (round f): the Oracle upgrade of one store's knowledge tables made before the
    retrieve and write indexes: every plain index of the tables, ``CREATE INDEX IF NOT EXISTS``
    (23ai; the ones a schema has are left as they are). Static-checked, not run against Oracle."""
    from sqlalchemy.dialects import oracle

    dialect = oracle.dialect()  # type: ignore[no-untyped-call]  # SQLAlchemy leaves the dialect constructor untyped
    tables = build_tables(store_id, 1)
    out = [create_index_sql(ix, dialect) + ";" for ix in plain_indexes(tables)]
    return "\n\n".join(out) + "\n"


#: KC-3.7: the UNIQUE constraints that gain ``user_id`` (suffix -> columns)
_USER_UNIQUES = (
    ("ENTITY", "ENTITY_UK", "agent_id, user_id, canonical_key"),
    ("ENTITY_ALIAS", "ALIAS_UK", "agent_id, user_id, alias"),
    ("RELATIONSHIP", "REL_UK", "agent_id, user_id, source_entity_key, target_entity_key, rel_type"),
)


def oracle_upgrade_ddl(store_id: str) -> str:
    """KC-3.7: the Oracle upgrade of one store's knowledge tables made before the user
    dimension, as one idempotent PL/SQL block: ``user_id`` added where missing (existing
    rows become the agent's shared knowledge), the three UNIQUE constraints rebuilt with it,
    ``INTENTION.source_context`` widened to a whole session id. Static-checked, not run
    against Oracle."""
    tables = build_tables(store_id, 1)
    sid = tables.store_id
    scoped = sorted(t.name for t in tables.metadata.sorted_tables if USER_COLUMN in t.c)
    lines = [
        "DECLARE",
        "   l_count PLS_INTEGER;",
        "   PROCEDURE add_user_column(in_table IN VARCHAR2) IS",
        "   BEGIN",
        "      SELECT COUNT(*) INTO l_count FROM user_tab_columns",
        "       WHERE table_name = in_table AND column_name = 'USER_ID';",
        "      IF l_count = 0 THEN",
        "         EXECUTE IMMEDIATE 'ALTER TABLE ' || DBMS_ASSERT.ENQUOTE_NAME(in_table, FALSE)",
        "            || ' ADD (user_id VARCHAR2(255 CHAR))';",
        "      END IF;",
        "   END add_user_column;",
        "   PROCEDURE rebuild_unique(in_table IN VARCHAR2, in_constraint IN VARCHAR2, in_columns IN VARCHAR2) IS",
        "   BEGIN",
        "      SELECT COUNT(*) INTO l_count FROM user_cons_columns",
        "       WHERE table_name = in_table AND constraint_name = in_constraint AND column_name = 'USER_ID';",
        "      IF l_count = 0 THEN",
        "         SELECT COUNT(*) INTO l_count FROM user_constraints",
        "          WHERE table_name = in_table AND constraint_name = in_constraint;",
        "         IF l_count > 0 THEN",
        "            EXECUTE IMMEDIATE 'ALTER TABLE ' || DBMS_ASSERT.ENQUOTE_NAME(in_table, FALSE)",
        "               || ' DROP CONSTRAINT ' || DBMS_ASSERT.ENQUOTE_NAME(in_constraint, FALSE) || ' DROP INDEX';",
        "         END IF;",
        "         EXECUTE IMMEDIATE 'ALTER TABLE ' || DBMS_ASSERT.ENQUOTE_NAME(in_table, FALSE)",
        "            || ' ADD CONSTRAINT ' || DBMS_ASSERT.ENQUOTE_NAME(in_constraint, FALSE)",
        "            || ' UNIQUE (' || in_columns || ')';",
        "      END IF;",
        "   END rebuild_unique;",
        "BEGIN",
    ]
    lines += [f"   add_user_column('{name}');" for name in scoped]
    lines += [f"   rebuild_unique('{sid}_KG_{tab}', '{sid}_KG_{uk}', '{cols}');" for tab, uk, cols in _USER_UNIQUES]
    lines += [
        f"   EXECUTE IMMEDIATE 'ALTER TABLE \"{sid}_KG_INTENTION\" MODIFY (source_context VARCHAR2(256 CHAR))';",
        "END;",
        "/",
    ]
    return "\n".join(lines) + "\n"
