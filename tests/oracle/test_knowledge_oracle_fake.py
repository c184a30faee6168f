"""The knowledge layer's Oracle backend over the recording fake (no database): SQLAlchemy's pool
(F5), the colour of store searches (architecture review A13), JSON binds (F13) of
reviews/oracle-search-admin-driver.md. Static-checked, not run against Oracle."""

from __future__ import annotations

import asyncio
import json
import types
from datetime import datetime, timedelta, timezone

import oracledb
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects.oracle import oracledb as sa_oracledb
from sqlalchemy.pool import NullPool

from oramem import OracleDBMemoryStore, SchemaPolicy
from oramem.embedders import HashEmbedder
from oramem.knowledge.db import OracleBackend
from oramem.knowledge import queue as queue_mod
from oramem.knowledge.memory import KnowledgeMemory
from oramem.knowledge.schema import build_tables

from .fakes import FakeConnection, FakePool, Recorder, db_error
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


# ----------------------------------------------------------------------------- the extraction queue (issue 16)
def test_oracle_claim_uses_for_update_skip_locked_in_one_transaction():
    rec = Recorder({"sql:FOR UPDATE SKIP LOCKED": [("job-1", "running")]})
    conn = FakeConnection(rec)
    now = datetime(2025, 1, 1, 12, tzinfo=timezone.utc)
    got = queue_mod.claim_oracle(conn, '"S1_KG_JOB"', "w1", now, now + timedelta(seconds=30))
    assert got == "job-1"
    kinds = [(c.kind, c.name.split()[0] if c.name else "") for c in rec.calls]
    assert kinds == [("execute", "UPDATE"), ("execute", "SELECT"), ("execute", "UPDATE"), ("commit", "")]
    fail_expired, select, update = (c for c in rec.calls if c.kind == "execute")
    assert select.name.rstrip().endswith("FOR UPDATE SKIP LOCKED") and "ORDER BY" not in select.name
    assert "FETCH" not in select.name and '"S1_KG_JOB"' in select.name
    assert "attempts >= max_attempts" in fail_expired.name
    assert update.binds == {"worker": "w1", "lease": (now + timedelta(seconds=30)).replace(tzinfo=None),
                            "now": now.replace(tzinfo=None), "id": "job-1", "lost": queue_mod.LEASE_EXPIRED}
    assert "last_error = :lost" in update.name and "WHERE id = :id" in update.name
    # nothing due: commit, no update
    rec2 = Recorder()
    assert queue_mod.claim_oracle(FakeConnection(rec2), '"S1_KG_JOB"', "w1", now, now) is None
    assert [c.kind for c in rec2.calls] == ["execute", "execute", "commit"]
    # a pending row: last_error is left alone
    rec3 = Recorder({"sql:FOR UPDATE SKIP LOCKED": [("job-2", "pending")]})
    queue_mod.claim_oracle(FakeConnection(rec3), '"S1_KG_JOB"', "w1", now, now)
    assert "last_error" not in [c for c in rec3.calls if c.kind == "execute"][2].name
    # a database error rolls the claim back
    rec4 = Recorder({"sql:FOR UPDATE SKIP LOCKED": db_error(54, "resource busy")})
    with pytest.raises(Exception):
        queue_mod.claim_oracle(FakeConnection(rec4), '"S1_KG_JOB"', "w1", now, now)
    assert rec4.calls[-1].kind == "rollback"


def test_job_table_is_in_the_knowledge_ddl():
    from oramem.knowledge.schema import oracle_ddl

    ddl = oracle_ddl("S1", 8)
    assert 'CREATE TABLE IF NOT EXISTS "S1_KG_JOB"' in ddl
    assert 'CONSTRAINT "S1_KG_JOB_EVENT_UK" UNIQUE (event_id)' in ddl
    assert 'CREATE INDEX IF NOT EXISTS "S1_KG_JOB_ST_AVAIL_IX" ON "S1_KG_JOB" (status, available_at)' in ddl
