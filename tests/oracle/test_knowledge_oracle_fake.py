"""The knowledge layer's Oracle backend over the recording fake (no database): SQLAlchemy's pool
(F5), the colour of store searches (architecture review A13), JSON binds (F13) of
reviews/oracle-search-admin-driver.md. Static-checked, not run against Oracle."""

from __future__ import annotations

import asyncio
import json
import types

import oracledb
import sqlalchemy as sa
from sqlalchemy.dialects.oracle import oracledb as sa_oracledb
from sqlalchemy.pool import NullPool

from oramem import OracleDBMemoryStore, SchemaPolicy
from oramem.embedders import HashEmbedder
from oramem.knowledge.db import OracleBackend
from oramem.knowledge.memory import KnowledgeMemory
from oramem.knowledge.schema import build_tables

from .fakes import FakePool, Recorder
from .test_driver_fake import SETTINGS_OUT


def store_over_fake(rec=None):
    rec = rec or Recorder()
    rec.answers.setdefault("oramem_admin.open_store", json.dumps(dict(SETTINGS_OUT, vector_dim=8)))
    rec.answers.setdefault("oramem_search.search_json", "[]")
    pool = FakePool(rec)
    store = OracleDBMemoryStore(HashEmbedder(8), pool, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                memory_store_id="mystore")
    return store, pool, rec


def test_f5_sqlalchemy_does_not_pool_the_stores_connections():
    store, pool, rec = store_over_fake()
    backend = OracleBackend(store)
    try:
        assert isinstance(backend.sa_engine.pool, NullPool)
        # a checkout acquires from the store's pool; SQLAlchemy's outputtypehandler is taken
        # off again when the connection goes back
        conn = backend._acquire(pool)
        assert rec.calls[-1].kind == "acquire"
        mine = object()
        conn.outputtypehandler = mine
        backend._restore_handler(conn, None)
        assert conn.outputtypehandler is None
    finally:
        backend.close()


def test_a13_knowledge_search_on_a_sync_oracle_store_uses_the_sync_call():
    store, _, rec = store_over_fake()

    async def in_thread(fn, *a, **kw):
        return fn(*a, **kw)

    # KnowledgeMemory._search delegates to its KnowledgeRuntime (km.runtime.search)
    from oramem.knowledge.runtime import KnowledgeRuntime

    rt = types.SimpleNamespace(store=store, in_thread=in_thread)
    hits = asyncio.run(KnowledgeRuntime.search(rt, query="x", k=3))
    assert hits == []
    assert [c.name for c in rec.plsql][-1] == "oramem_search.search_json"


def test_f13_json_columns_are_bound_as_clob_on_oracle():
    dialect = sa_oracledb.dialect(dbapi=oracledb)
    tables = build_tables("S1", 8)
    json_cols = [c for t in tables.__dict__.values() if isinstance(t, sa.Table) for c in t.columns
                 if type(c.type).__name__ == "JSONValue"]
    assert json_cols, "the knowledge tables have JSON columns"
    for col in json_cols:
        assert col.type._unwrapped_dialect_impl(dialect).get_dbapi_type(oracledb) is oracledb.CLOB, col
    # the dialect puts CLOB into setinputsizes (it is in include_set_input_sizes)
    assert oracledb.CLOB in dialect.include_set_input_sizes


def test_f16_knowledge_memory_registers_the_plsql_deletion_hook(monkeypatch):
    import oramem.knowledge.memory as memory_mod

    store, _, rec = store_over_fake()
    rec.answers["oramem_admin.set_deletion_hook"] = None
    monkeypatch.setattr(memory_mod, "apply_schema_policy", lambda *a, **k: None)  # no tables to create here

    class LLM:
        async def complete_async(self, *a, **k):
            raise AssertionError("not called")

    km = KnowledgeMemory(store, LLM())
    try:
        hooks = [c for c in rec.plsql if c.name == "oramem_admin.set_deletion_hook"]
        assert [c.binds["in_procedure_name"] for c in hooks] == ["ORAMEM_KG_JOBS.ON_STORE_DELETE"]
        assert hooks[0].binds["in_store_id"] == "MYSTORE"
    finally:
        km.close()
