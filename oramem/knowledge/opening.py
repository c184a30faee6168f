"""Opening the knowledge layer on a store (KC-1.2): the constructor's checks, the knowledge
tables under the schema policy (with the KC-3.7 user-dimension upgrade of older stores), the
:class:`KnowledgeRuntime` and the deletion hooks through which the store's deletes reach the
knowledge tables (SC-8.5, SC-8.6). ``KnowledgeMemory.__init__`` is :func:`open_runtime`."""

from __future__ import annotations

import functools
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from ..embedders.identity import identity_of
from ..types import NOT_SET, SchemaPolicy, SearchStrategy
from . import deletes
from .config import KnowledgeConfig, merge_config
from ..sql_access import SQLAccess
from .db.schema import KGTables, apply_schema_policy, bind_json_as_oson, build_tables, oracle_upgrade_ddl, upgrade_sqlite
from .llm.providers import NoLLM
from .observe import otel_available
from .runtime import KnowledgeRuntime

__all__ = ["NO_LLM_CONFIG", "ORACLE_DELETION_HOOK", "open_runtime", "check_embedder_identity"]

log = logging.getLogger("oramem.knowledge")

#: What ``KnowledgeMemory(llm=None)`` switches off: the steps only a model can do.
NO_LLM_CONFIG = {"enable_llm_resolution": False, "enable_emotion_tagging": False, "enable_reranker": False}

#: the PL/SQL deletion hook of the knowledge layer on Oracle (plsql/oramem_kg_jobs.pks)
ORACLE_DELETION_HOOK = "ORAMEM_KG_JOBS.ON_STORE_DELETE"


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def open_runtime(store: Any, llm: Any, embedder: Any, *, config: Optional[KnowledgeConfig], schema_policy: Any,
                 clock: Optional[Callable[[], datetime]], tracer_provider: Any) -> tuple[KnowledgeRuntime, KnowledgeConfig]:
    """Check the constructor's arguments, create or check the knowledge tables and register the
    deletion hooks; returns the runtime and the effective config (``llm=None`` switches the
    LLM-only steps off, :data:`NO_LLM_CONFIG`). Nothing is created when an argument is bad."""
    from ..store import OracleDBMemoryStore, SQLiteMemoryStore

    if not isinstance(store, (SQLiteMemoryStore, OracleDBMemoryStore)):
        raise TypeError(f"store must be an open SQLiteMemoryStore or OracleDBMemoryStore, got {type(store).__name__}")
    if llm is not None and not hasattr(llm, "complete_async"):
        raise TypeError("llm must implement LLMProvider (async complete_async), or be None for deterministic use")
    if config is None:
        config = KnowledgeConfig()
    if not isinstance(config, KnowledgeConfig):
        raise TypeError(f"config must be a KnowledgeConfig, got {type(config).__name__}")
    if llm is None:
        # deterministic use (add_fact & co., reads, deterministic jobs): the LLM-only steps are off
        config = merge_config(config, NO_LLM_CONFIG)
    if clock is not None and not callable(clock):
        raise TypeError("clock must be a zero-argument callable returning a datetime")
    if tracer_provider is not None:
        if not otel_available():
            raise ValueError("tracer_provider needs the OpenTelemetry API: pip install 'oramem[otel]'")
        if not hasattr(tracer_provider, "get_tracer"):
            raise TypeError("tracer_provider must be an OpenTelemetry TracerProvider (with get_tracer)")
    embedder = embedder if embedder is not None else store.embedder
    if embedder is None:
        raise ValueError("KnowledgeMemory needs an embedder: pass one or open the store with one")
    if store.search_strategy is SearchStrategy.KEYWORD or store.vector_dim is None:
        raise ValueError("KnowledgeMemory needs a store with vector search (search_strategy vector or hybrid)")
    dim = int(embedder.embedding_dimension)
    if dim != store.vector_dim:
        raise ValueError(
            f"embedder dimension {dim} differs from the store's vector_dim {store.vector_dim}; use one embedder for both"
        )
    check_embedder_identity(store, embedder)
    policy = SchemaPolicy.coerce(store.schema_policy if schema_policy is NOT_SET else schema_policy, "schema_policy")
    backend = store.sql_access(configure=bind_json_as_oson)
    tables = build_tables(store.memory_store_id, dim)
    if backend.dialect_name == "oracle":
        backend.agent_table = tables.agent
    with backend.lock():
        apply_schema_policy(backend.sa_engine, tables, policy, upgrade=functools.partial(_upgrade_schema, backend, tables))
    rt = KnowledgeRuntime(
        store=store, llm=llm if llm is not None else NoLLM(), embedder=embedder, dim=dim, backend=backend,
        tables=tables, executor=ThreadPoolExecutor(max_workers=4, thread_name_prefix="oramem-kg"),
        clock=clock or _utc_now, log=log, tracer_provider=tracer_provider, identity=identity_of(embedder),
    )
    if backend.dialect_name == "sqlite":
        store.register_deletion_hook(functools.partial(deletes.deletion_hook, rt))
    else:
        # Oracle: the PL/SQL twin of deletes.deletion_hook (ORACLE_DELETION_HOOK) runs inside the
        # store's delete, cascade and purge transactions for every store with knowledge
        # tables (oramem_store.call_hook; SC-8.5, KC-3.6; reviews F16, D5): nothing is
        # registered, so the store's one PL/SQL hook slot stays the application's.
        # forget (SC-8.6): the whole erasure of oramem.knowledge.deletes runs in the
        # store's forget transaction, through SQLAlchemy on its connection
        eraser = deletes.OracleEraser(backend.sa_engine, tables, deletes.purger(rt))
        store.register_erasure(eraser)
    return rt, config


def _upgrade_schema(backend: SQLAccess, tables: KGTables, names: list[str]) -> None:
    """KC-3.7: add the user dimension to knowledge tables of an older store, in one
    transaction (SQLite: table rebuilds; Oracle: the block of ``oracle_upgrade_ddl``)."""
    if backend.dialect_name == "sqlite":
        with backend.write("knowledge schema upgrade", None) as conn:
            upgrade_sqlite(conn, tables, names)
        log.warning("oramem.knowledge: upgraded %d knowledge table(s) of store %s to the user dimension "
                    "(existing knowledge is the agent's shared knowledge)", len(names), tables.store_id)
    else:
        with backend.sa_engine.connect() as conn:
            conn.exec_driver_sql(oracle_upgrade_ddl(tables.store_id).rstrip().rstrip("/").rstrip())


def check_embedder_identity(store: Any, embedder: Any) -> None:
    """Defect 4 (KC-1.2): the knowledge layer writes explicit vectors into the store, so its
    embedder must be the one that built the store's vectors, not only of the same dimension."""
    from ..embedders.identity import describe_identity, how_to_open, identity_of, same_identity

    if embedder is store.embedder:
        return
    stored = getattr(store.settings, "embedder", None)
    if stored is None:
        stored = identity_of(store.embedder)
    if stored is None:
        return
    mine = identity_of(embedder)
    if mine is not None and not same_identity(stored, mine):
        raise ValueError(
            f"KnowledgeMemory embedder {describe_identity(mine)} differs from the embedder that built store "
            f"{store.memory_store_id!r} ({describe_identity(stored)}): its vectors would be written into another "
            f"vector space. Pass embedder=None to use the store's own embedder, or {how_to_open(stored)}"
        )
