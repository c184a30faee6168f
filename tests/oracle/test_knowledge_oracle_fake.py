"""The knowledge layer's Oracle backend over the recording fake (no database): SQLAlchemy's pool
(F5), the colour of store searches (architecture review A13), JSON binds (F13) of
reviews/oracle-search-admin-driver.md. Static-checked, not run against Oracle."""

from __future__ import annotations

import asyncio
import contextlib
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
from oramem.oracle.sql_access import OracleAccess
from oramem.knowledge.jobs import queue as queue_mod
from oramem.knowledge.memory import KnowledgeMemory
from oramem.knowledge.db.schema import build_tables

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
    backend = OracleAccess(store)
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

    rt = types.SimpleNamespace(store=store, in_thread=in_thread, made_by=contextlib.nullcontext)  # rek47: no identity
    hits = asyncio.run(KnowledgeRuntime.search(rt, query="x", k=3))
    assert hits == []
    assert [c.name for c in rec.plsql][-1] == "oramem_search.search_json"


def test_d13_json_columns_are_typed_db_type_json_on_oracle():
    """D13 (replaces F13's CLOB binding): the JSON columns' DB-API type is DB_TYPE_JSON, which
    SQLAlchemy's dialect leaves out of setinputsizes, so bind_json_as_oson adds it."""
    dialect = sa_oracledb.dialect(dbapi=oracledb)
    tables = build_tables("S1", 8)
    json_cols = [c for t in tables.__dict__.values() if isinstance(t, sa.Table) for c in t.columns
                 if type(c.type).__name__ == "JSONValue"]
    assert json_cols, "the knowledge tables have JSON columns"
    for col in json_cols:
        assert col.type._unwrapped_dialect_impl(dialect).get_dbapi_type(oracledb) is oracledb.DB_TYPE_JSON, col
    assert oracledb.DB_TYPE_JSON not in dialect.include_set_input_sizes  # hence the listener


def test_fake_types_binds_as_the_driver_does():
    """The fake refuses what python-oracledb refuses (fakes._check_untyped / _check_oson): an
    untyped dict (DPY-3002), a list in SQL (an array bind: ORA-01484), a set as JSON (DPY-3003);
    a DB_TYPE_JSON bind takes any JSON-shaped value."""
    cur = FakeConnection(Recorder()).cursor()
    with pytest.raises(oracledb.NotSupportedError, match="DPY-3002"):
        cur.execute("INSERT INTO t (j) VALUES (:j)", j={"a": 1})
    with pytest.raises(oracledb.DatabaseError, match="ORA-01484"):
        cur.execute("INSERT INTO t (j) VALUES (:j)", j=[1, 2])
    cur.setinputsizes(j=oracledb.DB_TYPE_JSON)
    with pytest.raises(oracledb.NotSupportedError, match="DPY-3003"):
        cur.execute("INSERT INTO t (j) VALUES (:j)", j={"a": {1, 2}})
    for value in ({"a": [1, 2.5, None, True]}, [1, "x"], "Talho", 42, None):
        cur.setinputsizes(j=oracledb.DB_TYPE_JSON)
        cur.execute("INSERT INTO t (j) VALUES (:j)", j=value)
    # a CLOB-typed SQL bind costs a temporary LOB, as in thin mode (impl/thin/var.pyx)
    cur.setinputsizes(c=oracledb.DB_TYPE_CLOB)
    cur.execute("INSERT INTO t (c) VALUES (:c)", c="text")
    assert [c.kind for c in cur.rec.calls].count("createlob") == 1


def test_d5_knowledge_memory_leaves_the_stores_hook_slot_alone(monkeypatch):
    """D5 (F16 reopened): on Oracle the store's packages run the knowledge hook for every store
    with knowledge tables (oramem_store.call_hook), so KnowledgeMemory registers nothing and an
    application's PL/SQL hook stays registered (it replaced it before)."""
    import oramem.knowledge.opening as opening_mod

    store, _, rec = store_over_fake()
    rec.answers["oramem_admin.set_deletion_hook"] = None
    monkeypatch.setattr(opening_mod, "apply_schema_policy", lambda *a, **k: None)  # no tables to create here

    class LLM:
        async def complete_async(self, *a, **k):
            raise AssertionError("not called")

    store.register_deletion_hook("APP.AUDIT_DELETE")
    km = KnowledgeMemory(store, LLM())
    try:
        hooks = [c for c in rec.plsql if c.name == "oramem_admin.set_deletion_hook"]
        assert [c.binds["in_procedure_name"] for c in hooks] == ["APP.AUDIT_DELETE"]
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
    # D12: the datetimes are bound as TIMESTAMP, not as the driver's default DATE (no fractions)
    assert fail_expired.input_sizes == {"now": oracledb.DB_TYPE_TIMESTAMP}
    assert select.input_sizes == {"now": oracledb.DB_TYPE_TIMESTAMP}
    assert update.input_sizes == {"now": oracledb.DB_TYPE_TIMESTAMP, "lease": oracledb.DB_TYPE_TIMESTAMP}
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
    from oramem.knowledge.db.schema import oracle_ddl

    ddl = oracle_ddl("S1", 8)
    assert 'CREATE TABLE IF NOT EXISTS "S1_KG_JOB"' in ddl
    assert 'CONSTRAINT "S1_KG_JOB_EVENT_UK" UNIQUE (event_id)' in ddl
    assert 'CREATE INDEX IF NOT EXISTS "S1_KG_JOB_ST_AVAIL_IX" ON "S1_KG_JOB" (status, available_at)' in ddl


# ----------------------------------------------------------------------------- the whole layer (D1, D9)
def knowledge_over_fake(monkeypatch, llm=None):
    """KnowledgeMemory on an Oracle store over the fake: the knowledge SQL runs for real
    (fakes.SQLBackend, rows shaped as python-oracledb returns them: JSON columns as objects
    with Decimal numbers), the store's PL/SQL calls are answered by plsql_standin."""
    import oramem.knowledge.opening as opening_mod
    from oramem.knowledge import KnowledgeConfig

    from knowledge.helpers import Clock  # tests/ is on sys.path (rootdir conftest), as in tests/cli
    from .fakes import SQLBackend
    from .plsql_standin import ErasureCatalogStandIn, StoreStandIn

    rec = Recorder()
    rec.backend = SQLBackend.for_tables(build_tables("MYSTORE", 8).metadata)
    rec.answers["oramem_admin.set_deletion_hook"] = None
    StoreStandIn(vector_dim=8).install(rec.answers)
    ErasureCatalogStandIn(rec.backend).install(rec.answers)  # options and erasure log in the SQL catalog
    store, _, rec = store_over_fake(rec)
    monkeypatch.setattr(opening_mod, "apply_schema_policy", lambda *a, **k: None)  # created above
    clock = Clock()
    return KnowledgeMemory(store, llm, config=KnowledgeConfig(), clock=clock), store, rec, clock


def test_d1_knowledge_layer_runs_over_a_driver_shaped_fake(monkeypatch):
    """D1: JSON columns come back decoded (a scalar "Talho", Decimal numbers); the second
    related write, retrieve, every background job, reads, delete and forget run. Fails
    without the fix in JSONValue.process_result_value (JSONDecodeError on the second write)."""
    km, store, rec, clock = knowledge_over_fake(monkeypatch)
    try:
        r1 = km.add_fact("a1", "Pedro", "Pedro works at Talho", subject_type="person",
                         attribute_key="employer", value="Talho")
        first = r1.facts_added[0]["fact_id"]
        clock.advance()
        # the second related write reads the existing fact's value_json back
        r2 = km.add_fact("a1", "Pedro", "Pedro works at Talho", attribute_key="employer", value="Talho")
        assert len(r2.facts_unchanged) == 1 and km.get("a1", first).reinforcement_count == 1
        clock.advance()
        r3 = km.add_fact("a1", "Pedro", "Pedro works at Vertix", attribute_key="employer", value="Vertix")
        assert r3.facts_updated[0]["previous_fact_id"] == first
        age = km.add_fact("a1", "Pedro", "Pedro is 42", attribute_key="age", value=42).facts_added[0]["fact_id"]
        share = km.add_fact("a1", "Pedro", "Pedro owns half", attribute_key="share", value=0.5).facts_added[0]["fact_id"]
        flag = km.add_fact("a1", "Pedro", "Pedro is vegan", attribute_key="vegan", value=True).facts_added[0]["fact_id"]
        # values as SQLite returns them: int, float, bool, str (no Decimal leaks out)
        values = {f: km.get("a1", f).value_json for f in (age, share, flag, first)}
        assert values == {age: 42, share: 0.5, flag: True, first: "Talho"}
        assert [type(values[f]) for f in (age, share, flag)] == [int, float, bool]
        km.add_relation("a1", "Pedro", "Vertix", "works_at", source_type="person", target_type="organization")
        hits = km.retrieve("a1", "Where does Pedro work?").facts
        assert "Pedro works at Vertix" in {h.fact_text for h in hits}
        assert all(not isinstance(v, __import__("decimal").Decimal) for h in hits for v in h.scores.values())
        assert {f.fact_text for f in km.get_all("a1")} >= {"Pedro works at Vertix", "Pedro is 42"}
        assert [d.fact_text for d in km.history("a1", first)]
        assert km.entities("a1") and km.relationships("a1")
        out = km.run_background("a1")
        assert not out.errors, out.errors
        assert km.delete("a1", share) is True and km.get("a1", share) is None
        json.dumps([h.scores for h in km.retrieve("a1", "Pedro").facts])  # no Decimal anywhere
        # forget: the store's cascade (delete_record_json; its PL/SQL hook is not emulated here)
        # and the knowledge erasure's reads and deletes as real SQL on the same connection
        erased = km.forget(user_id="Pedro")
        assert set(erased) >= {t.name for t in km._tables.metadata.sorted_tables}
        cascade = [c.binds for c in rec.plsql if c.name == "oramem_store.delete_record_json"
                   and c.binds["in_record_type"] == "user_profile"]
        assert cascade == [dict(in_store_id="MYSTORE", in_record_type="user_profile", in_record_id="Pedro", in_cascade=1,
                                in_reason="forget", in_names='["Pedro"]')]
    finally:
        km.close()


def test_d13_knowledge_writes_bind_json_as_oson_without_temporary_lobs(monkeypatch):
    """D13: every JSON value of a knowledge write is bound as DB_TYPE_JSON (no temporary LOB
    per value, as the CLOB binding cost: one ``createlob`` each on main), and reads back equal."""
    km, store, rec, clock = knowledge_over_fake(monkeypatch)
    try:
        before = len(rec.calls)
        for i in range(20):
            km.add_fact("a1", "Pedro", f"Pedro note {i}", attribute_key=f"k{i}", value={"n": i, "l": [i, "x"]})
            clock.advance()
        km.run_background("a1")
        calls = rec.calls[before:]
        assert [c for c in calls if c.kind == "createlob"] == []
        fact_inserts = [c for c in calls if c.kind in ("execute", "executemany")
                        and c.name.lstrip().upper().startswith('INSERT INTO "MYSTORE_KG_FACT"')]
        assert fact_inserts and all(c.input_sizes.get("value_json") is oracledb.DB_TYPE_JSON for c in fact_inserts)
        assert {f.value_json["n"] for f in km.get_all("a1")} == set(range(20))
    finally:
        km.close()


def test_d1_json_result_processor_takes_the_drivers_objects():
    """D1: under the Oracle dialect the JSON column's value is already decoded by the driver."""
    from decimal import Decimal

    from oramem.knowledge.db.schema import JSONValue

    proc = JSONValue().result_processor(sa_oracledb.dialect(dbapi=oracledb), oracledb.DB_TYPE_JSON)
    assert proc("Talho") == "Talho" and proc("42") == "42"
    assert proc(True) is True and proc(None) is None
    assert proc(Decimal("42")) == 42 and type(proc(Decimal("42"))) is int
    assert proc(Decimal("0.5")) == 0.5 and type(proc(Decimal("0.5"))) is float
    assert proc({"n": Decimal("3"), "l": [Decimal("1.25"), "x"]}) == {"n": 3, "l": [1.25, "x"]}


def test_d1_migrate_oracle_knowledge_to_sqlite_verifies(monkeypatch, tmp_path):
    """D1: `oramem migrate` from Oracle (the driver-shaped fake) copies the knowledge tables and
    its verification compares them equal (it read Decimals and text-decoded them before)."""
    from oramem.migrate import migrate

    from .test_migrate_oracle_fake import ORACLE, OracleModel, fake_oracle

    km, store, rec, clock = knowledge_over_fake(monkeypatch)
    try:
        km.add_fact("a1", "Pedro", "Pedro works at Talho", subject_type="person", attribute_key="employer",
                    value="Talho")
        clock.advance()
        km.add_fact("a1", "Pedro", "Pedro works at Talho", attribute_key="employer", value="Talho")
        km.add_fact("a1", "Pedro", "Pedro is 42", attribute_key="age", value=42)
        km.add_fact("a1", "Pedro", "Pedro owns half", attribute_key="share", value=0.5)
        km.run_background("a1")
    finally:
        km.close()
    backend = rec.backend
    backend.db.execute("CREATE VIEW user_tables AS SELECT name AS table_name FROM sqlite_master WHERE type = 'table'")
    src_rec, connect = fake_oracle(OracleModel([]), settings={"memory_store_id": "MYSTORE", "vector_dim": 8})
    del src_rec.answers["sql:user_tables"]
    src_rec.backend = backend
    report = migrate(ORACLE, str(tmp_path / "copy.db"), batch_size=50, oracle_connect=connect)
    assert report.ok, report.stores
    (comparison,) = report.stores
    assert comparison.knowledge_match is True, comparison
    assert comparison.knowledge["MYSTORE_KG_FACT"][0] >= 3 and report.copied_knowledge_rows > 0


def test_a_knowledge_write_in_flight_when_its_user_is_erased_stores_nothing_on_oracle(monkeypatch):
    """KC-3.10 over the fake (static-checked, not run against Oracle): Alice's add_fact reads,
    her ``forget`` commits (its tombstone in ORAMEM_ERASURE_LOG, the salt in
    ORAMEM_STORE_OPTIONS, as the PL/SQL writes them), then the write's commit reads the log
    with the knowledge connection's SQL and refuses; a write after the erasure is stored."""
    from oramem.knowledge.errors import ConflictError
    from oramem.knowledge.write import run as run_mod

    km, store, rec, clock = knowledge_over_fake(monkeypatch)
    original = run_mod.resolve_all
    erase = {"on": True}

    async def resolve_then(run):
        if erase["on"]:
            erase["on"] = False
            store.forget(user_id="alice")
        await original(run)

    monkeypatch.setattr(run_mod, "resolve_all", resolve_then)
    try:
        with pytest.raises(ConflictError, match="user 'alice'"):
            km.add_fact("a1", "Pedro", "Pedro hides the passport", subject_type="person", user_id="alice")
        fact = km._tables.fact
        with km._backend.read() as conn:
            assert conn.execute(sa.select(fact.c.id).where(fact.c.user_id == "alice")).all() == []
        logged = [s for s in rec.backend.statements if "oramem_erasure_log" in s]
        assert logged and all("memory_store_id" in s for s in logged)
        clock.advance()
        assert km.add_fact("a1", "Pedro", "Pedro hides the passport", subject_type="person",
                           user_id="alice").facts_added
    finally:
        km.close()


def test_an_erasure_locks_the_agents_table_before_its_cascade_and_a_write_meets_it_first(monkeypatch):
    """KC-3.10 on Oracle (read committed; static-checked, not run against Oracle): one lock
    both sides take. ``forget``'s first statement on its connection is ``LOCK TABLE
    "<ID>_KG_AGENT" IN EXCLUSIVE MODE``, before the store's cascade (``delete_record_json``)
    and every knowledge delete, all in one transaction; a knowledge write's commit takes its
    agent's row of that table (``SELECT ... FOR UPDATE``) before it reads the erasure log or
    writes a row or a store record. Without the erasure's lock an erasure whose deletes ran
    before the write inserted and which committed after the write read the log left the
    write's rows (plsql/VERIFY.md, "One lock order for an erasure and the writes it races")."""
    km, store, rec, clock = knowledge_over_fake(monkeypatch)
    try:
        km.forget(user_id="bob")  # the store's first erasure: from now on a write's commit reads the log
        clock.advance()
        start = len(rec.calls)
        km.add_fact("a1", "Pedro", "Pedro hides the passport", subject_type="person", user_id="alice")
        write = [c for c in rec.calls[start:] if c.kind in ("execute", "executemany", "callfunc")]
        names = [c.name.lstrip() for c in write]
        lock = next(i for i, n in enumerate(names) if n.startswith('SELECT "MYSTORE_KG_AGENT".agent_id')
                    and n.rstrip().endswith("FOR UPDATE"))
        # the commit's look at the log (the first one is the write's note, before it read)
        log = [i for i, n in enumerate(names) if "oramem_erasure_log" in n][-1]
        first_write = next(i for i, n in enumerate(names) if n.startswith(("INSERT", "UPDATE", "DELETE"))
                           and "MYSTORE_KG_AGENT" not in n.split("(")[0] or n == "oramem_store.add_json")
        assert lock < log < first_write, names

        clock.advance()
        start = len(rec.calls)
        km.forget(user_id="alice")
        calls = rec.calls[start:]
        stmts = [c for c in calls if c.kind in ("execute", "executemany", "callfunc")]
        lock_at = [i for i, c in enumerate(stmts) if c.name.lstrip().upper().startswith("LOCK TABLE")]
        assert [stmts[i].name for i in lock_at] == ['LOCK TABLE "MYSTORE_KG_AGENT" IN EXCLUSIVE MODE']
        first_delete = next(i for i, c in enumerate(stmts) if c.name == "oramem_store.delete_record_json"
                            or c.name.lstrip().upper().startswith(("DELETE", "UPDATE", "INSERT")))
        assert lock_at[0] < first_delete
        # before the lock only reads (the receipt's look at her records, the knowledge check)
        reads = {"oramem_store.list_json", "oramem_store.get_json", "oramem_kg_jobs.has_knowledge",
                 "oramem_admin.get_options_json", "oramem_admin.get_erasure_log_json"}
        assert {c.name for c in stmts[:lock_at[0]]} <= reads | {c.name for c in stmts[:lock_at[0]]
                                                                 if c.name.lstrip().upper().startswith("SELECT")}
        # the lock and everything the erasure writes: one connection, one commit after them
        tx = stmts[lock_at[0]:]
        written = [c for c in tx if c.name.lstrip().upper().startswith(("DELETE", "UPDATE", "INSERT"))
                   or c.name in ("oramem_store.delete_record_json", "oramem_store.delete_keys_json",
                                 "oramem_admin.log_erasure")]
        assert written and len({c.conn for c in [stmts[lock_at[0]]] + written}) == 1
        commits = [i for i, c in enumerate(calls) if c.kind == "commit" and c.conn == stmts[lock_at[0]].conn
                   and i > calls.index(stmts[lock_at[0]])]
        assert commits and commits[0] > calls.index(written[-1])
        assert rec.backend.statements.count('LOCK TABLE "MYSTORE_KG_AGENT" IN EXCLUSIVE MODE') == 2  # bob's, hers
    finally:
        km.close()


def test_the_fake_refuses_a_lock_of_a_table_that_is_not_there():
    """The fake fails where Oracle does: LOCK TABLE of a missing table (ORA-00942), or a
    statement that is not the LOCK TABLE grammar (ORA-00900)."""
    from .fakes import SQLBackend

    backend = SQLBackend()
    backend.db.execute('CREATE TABLE "S1_KG_AGENT" (agent_id TEXT PRIMARY KEY)')
    backend.lock_table('LOCK TABLE "S1_KG_AGENT" IN EXCLUSIVE MODE')
    backend.lock_table("LOCK TABLE s1_kg_agent IN ROW SHARE MODE NOWAIT")  # unquoted: upper case
    for bad, code in (('LOCK TABLE "s1_kg_agent" IN EXCLUSIVE MODE', "ORA-00942"),
                      ('LOCK TABLE "S2_KG_AGENT" IN EXCLUSIVE MODE', "ORA-00942"),
                      ('LOCK TABLE "S1_KG_AGENT" IN EXCLUSIVE', "ORA-00900"),
                      ('LOCK TABLE "S1_KG_AGENT" IN WRITE MODE', "ORA-00900")):
        with pytest.raises(oracledb.DatabaseError, match=code):
            backend.lock_table(bad)
    assert backend.statements == ['LOCK TABLE "S1_KG_AGENT" IN EXCLUSIVE MODE',
                                  "LOCK TABLE s1_kg_agent IN ROW SHARE MODE NOWAIT"]


def test_a_reprocess_commit_takes_its_agents_row_before_its_event_and_its_rows(monkeypatch):
    """KC-7.3 / KC-3.10 on Oracle (static-checked, not run against Oracle): the reprocess's
    commit locks its agent's row of <ID>_KG_AGENT (the row an erasure's EXCLUSIVE table lock
    conflicts with) before it locks its event row, reads the erasure log or writes: an erasure
    that deleted her facts first holds the table, so the reprocess waits for it and then finds
    the event gone (the residual red21 documented)."""
    from knowledge.helpers import adding_llm, extract

    llm = adding_llm()

    def down(payload):
        raise RuntimeError("model down")

    llm.route("extract", down)
    km, store, rec, clock = knowledge_over_fake(monkeypatch, llm)
    try:
        km.forget(user_id="bob")  # the store's first erasure: a commit reads the log from now on
        clock.advance()
        failed = km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")
        assert not failed.success and failed.event_id
        llm.route("extract", extract([("Alice", "person"), ("Zanzibar", "place")],
                                     [("Alice", "Alice hides her passport in Zanzibar", "hiding_place")]))
        clock.advance()
        start = len(rec.calls)
        assert km.reprocess_event("a1", failed.event_id, user_id="alice").facts_added
        names = [c.name.lstrip() for c in rec.calls[start:] if c.kind in ("execute", "executemany", "callfunc")]
        agent = next(i for i, n in enumerate(names) if n.startswith('SELECT "MYSTORE_KG_AGENT".agent_id')
                     and n.rstrip().endswith("FOR UPDATE"))
        event = next(i for i, n in enumerate(names) if n.startswith('SELECT "MYSTORE_KG_EVENT".id')
                     and n.rstrip().endswith("FOR UPDATE"))
        log = [i for i, n in enumerate(names) if "oramem_erasure_log" in n][-1]
        first_write = next(i for i, n in enumerate(names) if n.startswith(("INSERT", "UPDATE", "DELETE"))
                           and "MYSTORE_KG_AGENT" not in n.split("(")[0] or n == "oramem_store.add_json")
        assert agent < event < log < first_write, names
    finally:
        km.close()


@pytest.mark.parametrize("profile, subject, who", [("user_profile", "alice", "user 'alice'"),
                                                   ("agent_profile", "a1", "agent 'a1'")], ids=["user", "agent"])
def test_a_profile_cascade_locks_then_cascades_then_logs_its_tombstone_and_a_write_in_flight_refuses(
        monkeypatch, profile, subject, who):
    """KC-3.10 / SC-14.3 on Oracle over the fake (static-checked, not run against Oracle): a
    profile cascade (``store.delete(profile, ID, cascade=True)``, an erasure, SC-13.3, SC-13.4)
    takes the erasers' lock, runs its cascade, and calls ``oramem_admin.log_erasure`` with its
    tombstone (verification pending) on the same connection before its one commit; the
    receipt with the scan replaces it after the commit. A knowledge write whose pipeline
    started before the cascade reads that tombstone in its commit and stores nothing."""
    from oramem.knowledge.errors import ConflictError
    from oramem.knowledge.write import run as run_mod
    from oramem.trust.erasure import SALT_OPTION, subject_hash

    km, store, rec, clock = knowledge_over_fake(monkeypatch)
    original = run_mod.resolve_all
    seen: dict[str, int] = {}

    async def resolve_then(run):
        if not seen:
            seen["start"] = len(rec.calls)
            assert store.delete(profile, subject, cascade=True) == 0  # no profile row: 0 (SC-8.2)
            seen["end"] = len(rec.calls)
        await original(run)

    monkeypatch.setattr(run_mod, "resolve_all", resolve_then)
    try:
        km.forget(user_id="bob")  # the store's first erasure: the salt exists before the write notes
        clock.advance()
        with pytest.raises(ConflictError, match=who):
            km.add_fact("a1", "Pedro", "Pedro hides the passport", subject_type="person", user_id="alice")
        fact = km._tables.fact
        with km._backend.read() as conn:
            assert conn.execute(sa.select(fact.c.id).where(fact.c.user_id == "alice")).all() == []
        calls = rec.calls[seen["start"]:seen["end"]]
        stmts = [c for c in calls if c.kind in ("execute", "executemany", "callfunc", "callproc")]
        names = [c.name.lstrip() for c in stmts]
        lock = names.index('LOCK TABLE "MYSTORE_KG_AGENT" IN EXCLUSIVE MODE')
        cascade = names.index("oramem_store.delete_record_json")
        tombs = [i for i, n in enumerate(names) if n == "oramem_admin.log_erasure"]
        assert lock < cascade < tombs[0] and len(tombs) == 2, [(c.kind, c.name[:60]) for c in calls]
        conn = stmts[lock].conn
        assert stmts[cascade].conn == stmts[tombs[0]].conn == conn
        commits = [i for i, c in enumerate(calls) if c.kind == "commit" and c.conn == conn and i > calls.index(stmts[lock])]
        assert commits and calls.index(stmts[tombs[0]]) < commits[0] < calls.index(stmts[tombs[1]])
        assert stmts[cascade].binds["in_reason"] == ("erase" if profile == "user_profile" else None)
        first, final = (json.loads(stmts[i].binds["in_receipt"]) for i in tombs)
        salt = store.get_option(SALT_OPTION)
        kind = "user" if profile == "user_profile" else "agent"
        assert first["subject_hash"] == final["subject_hash"] == subject_hash(salt, kind, subject)
        assert first["verification"] == {"status": "pending"} and final["receipt_id"] == first["receipt_id"]
        assert f"\"{subject}\"" not in json.dumps(final) and f":{subject}" not in json.dumps(final)
    finally:
        km.close()


# ----------------------------------------------------------------------------- '' is NULL on Oracle (ora31)
def test_the_fake_reads_an_empty_string_as_null_as_oracle_does():
    """Oracle treats a zero-length character value as NULL: a bound ``''`` stores NULL, matches
    no row in ``col = :x`` and is refused by a NOT NULL column with ORA-01400, an
    ``oracledb.IntegrityError`` (which SQLAlchemy's Oracle dialect raises as
    ``sa.exc.IntegrityError``). The fake used to store and match ``''`` as SQLite does, so a
    lock of agent ``''`` looked like a lock of a real row."""
    from .fakes import FakeCursor, SQLBackend

    backend = SQLBackend()
    backend.db.execute('CREATE TABLE "S1_KG_AGENT" (agent_id VARCHAR(256) NOT NULL PRIMARY KEY)')
    backend.db.execute('CREATE TABLE "S1_NOTE" (id VARCHAR(16) PRIMARY KEY, note VARCHAR(64))')
    cur = FakeCursor(Recorder())
    with pytest.raises(oracledb.IntegrityError, match="ORA-01400"):
        backend.run(cur, 'INSERT INTO "S1_KG_AGENT" (agent_id) VALUES (:a)', {"a": ""})
    backend.run(cur, 'INSERT INTO "S1_NOTE" (id, note) VALUES (:i, :n)', {"i": "n1", "n": ""})
    backend.run(cur, 'SELECT note FROM "S1_NOTE" WHERE id = :i', {"i": "n1"})
    assert cur.rows == [(None,)]
    backend.run(cur, 'SELECT id FROM "S1_NOTE" WHERE note = :n OR id = :e', {"n": "", "e": ""})
    assert cur.rows == []
    with pytest.raises(oracledb.IntegrityError, match="ORA-00001"):
        backend.run(cur, 'INSERT INTO "S1_NOTE" (id, note) VALUES (:i, :n)', {"i": "n1", "n": "x"})


def test_a_knowledge_write_refuses_an_empty_agent_id_before_anything_runs(monkeypatch, tmp_path):
    """``SQLAccess.write`` / ``try_write`` name the agent whose lock row they take, or None for
    none; ``''`` is refused on both engines before a statement runs (on Oracle it is NULL, a
    lock of no row)."""
    from oramem import SQLiteMemoryStore

    km, store, rec, clock = knowledge_over_fake(monkeypatch)
    try:
        start = len(rec.calls)
        for method in (km._backend.write, km._backend.try_write):
            with pytest.raises(ValueError, match="agent_id of a knowledge write must name the agent"):
                with method("knowledge test", ""):
                    pass
        assert rec.calls[start:] == []
    finally:
        km.close()
    with SQLiteMemoryStore(str(tmp_path / "s.db"), vector_dim=8) as lite:
        access = lite.sql_access()
        for method in (access.write, access.try_write):
            with pytest.raises(ValueError, match="Oracle reads '' as NULL"):
                with method("knowledge test", ""):
                    pass


def _agent_table_statements(rec, start):
    return [c for c in rec.calls[start:] if c.kind == "execute" and '"MYSTORE_KG_AGENT"' in c.name]


def test_a_failed_job_attempt_locks_its_agents_row_first_and_a_lease_renewal_locks_none(monkeypatch):
    """KC-3.10 on Oracle over the fake (static-checked, not run against Oracle): a failed
    attempt writes the job's ``last_error`` (which may quote the context the attempt sent)
    under the job's agent's lock row, the row an erasure's ``LOCK TABLE <ID>_KG_AGENT IN
    EXCLUSIVE MODE`` conflicts with, so an erasure that strips the job's context reads the
    committed error text or finds the job no longer the worker's. The job's state changes
    named the agent ``''`` before: on Oracle NULL, so the existence check found nothing, the
    insert of the lock row failed with ORA-01400 (swallowed as a concurrent insert) and the
    FOR UPDATE locked no row. A lease renewal and a retry of every agent's jobs take no
    agent's row (they change no text), and no statement binds an empty agent."""
    km, store, rec, clock = knowledge_over_fake(monkeypatch)
    rt = km.runtime
    try:
        queued = km.write("a1", "I keep the spare key under the mat", "Alice", user_id="alice", background=True)
        now = rt.now()
        job = queue_mod.claim(rt, "w1", now, now + timedelta(seconds=60))
        assert job is not None and job["id"] == queued.job_id and job["agent_id"] == "a1"

        start = len(rec.calls)
        assert queue_mod.renew(rt, job["id"], "w1", now + timedelta(seconds=90), now) is True
        assert _agent_table_statements(rec, start) == []

        start = len(rec.calls)
        assert queue_mod.fail_attempt(rt, job, "w1", "RuntimeError: model down", now, 1.0, 10.0) == "retried"
        calls = [c for c in rec.calls[start:] if c.kind == "execute"]
        names = [c.name.lstrip() for c in calls]
        lock = next(i for i, n in enumerate(names) if n.startswith('SELECT "MYSTORE_KG_AGENT".agent_id')
                    and n.rstrip().endswith("FOR UPDATE"))
        update = next(i for i, n in enumerate(names) if n.startswith('UPDATE "MYSTORE_KG_JOB"'))
        assert lock < update, names
        assert list(calls[lock].binds.values()) == ["a1"]
        agent_rows = _agent_table_statements(rec, start)
        assert all(v not in ("", None) for c in agent_rows for v in c.binds.values()), [c.binds for c in agent_rows]
        assert not any(n.startswith('INSERT INTO "MYSTORE_KG_AGENT"') for n in names)  # a1's row is there

        with km._backend.read() as conn:
            j = km._tables.job
            assert conn.execute(sa.select(j.c.status, j.c.last_error).where(j.c.id == job["id"])).one() == (
                "pending", "RuntimeError: model down")
            agents = km._tables.agent
            assert conn.execute(sa.select(agents.c.agent_id)).scalars().all() == ["a1"]

        start = len(rec.calls)
        assert km.retry_jobs() == 0  # nothing failed for good: no job changes, no agent row locked
        assert _agent_table_statements(rec, start) == []
    finally:
        km.close()


def test_a_write_whose_agent_row_an_agent_erasure_deleted_meanwhile_stores_nothing(monkeypatch):
    """KC-3.10 on Oracle over the fake (static-checked, not run against Oracle): a knowledge
    write found its agent's lock row (so it inserts none) and waits at its ``SELECT ... FOR
    UPDATE`` while ``forget(agent_id=...)`` holds ``<ID>_KG_AGENT`` in EXCLUSIVE mode and
    deletes that row. When the erasure commits the FOR UPDATE returns no row: the write holds
    no lock row from then on. Nothing of it survives all the same: its commit reads the
    erasure log next and finds the agent's tombstone (``erasures.check``: the receipt
    appeared after the write's note), so it raises ``ConflictError`` before it writes a
    row or a store record, and the lock table keeps no row of the erased agent. Here the
    erasure runs (on another thread, as another session) right before that FOR UPDATE."""
    import threading

    from oramem.knowledge.errors import ConflictError

    km, store, rec, clock = knowledge_over_fake(monkeypatch)
    agents, fact = km._tables.agent, km._tables.fact
    lock_sql = 'SELECT "MYSTORE_KG_AGENT".agent_id'
    fired: list[int] = []

    def erase_first(conn, cursor, statement, parameters, context, executemany):
        if fired or not (statement.lstrip().startswith(lock_sql) and statement.rstrip().endswith("FOR UPDATE")):
            return
        with km._backend.read() as c:  # the write looked and found the agent's row: it inserted none
            assert c.execute(sa.select(agents.c.agent_id)).scalars().all() == ["a1"]
        fired.append(len(rec.calls))
        outcome: list = []

        def erase():
            try:
                outcome.append(store.forget(agent_id="a1"))
            except BaseException as exc:  # shown below: the erasure must have committed
                outcome.append(exc)

        t = threading.Thread(target=erase)
        t.start()
        t.join()
        assert isinstance(outcome[0], dict), outcome

    try:
        km.add_fact("a1", "Pedro", "Pedro likes tea", subject_type="person")  # a1's lock row exists
        km.forget(user_id="bob")  # the store's first erasure: the write's note sees the salt
        clock.advance()
        sa.event.listen(km._backend.sa_engine, "before_cursor_execute", erase_first)
        with pytest.raises(ConflictError, match="agent 'a1'"):
            km.add_fact("a1", "Pedro", "Pedro hides the passport", subject_type="person")
        sa.event.remove(km._backend.sa_engine, "before_cursor_execute", erase_first)
        assert fired, "the write never took its agent's lock row"
        erasure = [c.name for c in rec.calls[fired[0]:] if c.kind in ("execute", "callfunc")]
        assert 'LOCK TABLE "MYSTORE_KG_AGENT" IN EXCLUSIVE MODE' in erasure
        with km._backend.read() as conn:
            assert conn.execute(sa.select(fact.c.id).where(fact.c.agent_id == "a1")).all() == []
            assert conn.execute(sa.select(agents.c.agent_id)).scalars().all() == []
        assert [r for r in store.list("fact", agent_id="a1")] == []
        clock.advance()  # a write after the erasure is new data: stored, with a new lock row
        assert km.add_fact("a1", "Pedro", "Pedro hides the passport", subject_type="person").facts_added
        with km._backend.read() as conn:
            assert conn.execute(sa.select(agents.c.agent_id)).scalars().all() == ["a1"]
    finally:
        km.close()


def test_forget_refused_in_a_block_sends_nothing_not_even_the_salt(monkeypatch):
    """forget() inside store.transaction() is refused before its receipt is prepared: no
    ``set_option`` of the erasure salt, no lock, no cascade goes to the database (red28)."""
    from oramem.errors import StoreError

    km, store, rec, _clock = knowledge_over_fake(monkeypatch)
    try:
        with store.transaction():
            start = len(rec.calls)
            with pytest.raises(StoreError, match="cannot run inside store.transaction"):
                store.forget(user_id="alice")
            sent = [c.name for c in rec.calls[start:] if c.kind in ("execute", "executemany", "callfunc", "callproc")]
            assert sent == []
    finally:
        km.close()
