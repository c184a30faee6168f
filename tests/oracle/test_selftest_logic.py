"""``oramem db selftest`` logic in the default run (no database): the contract checks run
against the SQLite engine (same contract, so every store check must PASS there), the PL/SQL
and EXPLAIN PLAN checks against the recording fake; reporting, exit codes, JSON shape and
scratch-store cleanup on failure."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.cli import cmd_db as dbcli
from oramem.cli import selftest as st
from oramem.types import SearchStrategy

from .fakes import FakeConnection, Recorder, db_error

RUN = "ABC123"
SIDS = [f"OMST{RUN}V", f"OMST{RUN}K", f"OMST{RUN}H", f"OMST{RUN}P"]   # P: the keyword-passage store
PLAN_OK = [("| Id | Operation | Name |",), ("|  0 | SELECT STATEMENT |  |",),
           ("|  4 |  TABLE ACCESS BY INDEX ROWID | OM_X_CHK |",), ("|  5 |   VECTOR INDEX HNSW SCAN | OM_X_HNSW |",)]
PLAN_FULL = [("| Id | Operation | Name |",), ("|  0 | SELECT STATEMENT |  |",),
             ("|  1 |  SORT ORDER BY STOPKEY |  |",), ("|  2 |   TABLE ACCESS FULL | OM_X_CHK |",)]


def answers(plan=PLAN_OK):
    def describe(call):
        return json.dumps({"memory_store_id": call.binds["in_store_id"], "state": "READY", "vector_dim": 64,
                           "keyword_language": "english"})

    def export(call):
        if call.binds["in_limit"] < 1:
            raise db_error(20001, "limit must be between 1 and 10000")
        rec = {"id": "st-t1", "record_type": "thread", "seq_no": 4}
        return json.dumps([{"record": rec, "chunks": None},
                           {"record": dict(rec, id="st-m1", record_type="message", seq_no=5),
                            "chunks": [{"text": "I drink green tea", "vector": [0.5] * 64}]}])

    return {
        "oramem_store.export_json": export,
        "oramem_admin.capabilities": json.dumps({"oracle_text": True, "hybrid_vector": True,
                                                 "code_schema_version": 1}),
        "oramem_admin.list_stores": json.dumps([{"memory_store_id": s} for s in SIDS]),
        "oramem_admin.describe_store": describe,
        "oramem_admin.create_store": db_error(20102, "store exists"),
        "oramem_admin.open_store": db_error(20103, "store X was created with keyword_language=english but "
                                                   "keyword_language=none was requested"),
        "oramem_admin.upgrade_store": json.dumps({"upgraded": False}),
        "oramem_search.keyword_query": "$green ACCUM $tea",
        "oramem_store.delete_record": 0,
        "oramem_store.delete_thread": 0,
        "oramem_store.purge_expired": 0,
        "sql:dbms_xplan.display": plan,
    }


def sqlite_factory(opened=None):
    def factory(strategy, sid):
        s = SQLiteMemoryStore(":memory:", embedder=HashEmbedder(64), memory_store_id=sid, search_strategy=strategy)
        if opened is not None:
            opened.append(sid)
        return s
    return factory


def passage_factory(sid):
    """The keyword-passage store on the reference engine: HYBRID, token windows (issue 23)."""
    return SQLiteMemoryStore(":memory:", embedder=st.PassageEmbedder(64), memory_store_id=sid,
                             search_strategy=SearchStrategy.HYBRID)


def run(rec=None, factory=None, **kw):
    rec = rec or Recorder(answers())
    kw.setdefault("passage_factory", passage_factory)
    t = st.SelfTest(FakeConnection(rec), store_factory=factory or sqlite_factory(), run_id=RUN, **kw)
    return t, t.run(), rec


def dropped(rec):
    return [c.binds["in_store_id"] for c in rec.plsql if c.name == "oramem_admin.drop_store"]


def test_every_check_passes_on_the_reference_engine():
    _, results, rec = run()
    bad = [st.format_result(r) for r in results if r.status != "PASS"]
    assert not bad, "\n".join(bad)
    names = [r.name for r in results]
    for strategy in ("vector", "keyword", "hybrid"):
        for op in ("add", "add_batches", "get", "list", "list_thread_messages", "update", "TTL expiry",
                   "sync_search_index", "delete", "delete cascade", "delete_thread", "purge_expired"):
            assert f"{strategy}: {op}" in names
    for s in ("vector", "keyword", "hybrid"):
        assert f"hybrid: search {s} (scope)" in names
    assert "keyword: search keyword (stemming)" in names and "hybrid: search keyword (stemming)" in names
    assert "oramem_admin.open_store (another keyword_language)" in names
    assert "vector: EXPLAIN PLAN uses the HNSW index" in names
    assert "keyword: EXPLAIN PLAN uses the HNSW index" not in names
    assert "hybrid (token windows): keyword leg ranks passages" in names
    assert st.exit_code(results) == 0
    assert dropped(rec) == SIDS  # every scratch store dropped, if_exists=1
    assert all(c.binds["in_if_exists"] == 1 for c in rec.plsql if c.name == "oramem_admin.drop_store")


def test_plan_without_hnsw_fails_with_the_fix():
    _, results, _ = run(Recorder(answers(plan=PLAN_FULL)))
    r = next(r for r in results if r.name == "vector: EXPLAIN PLAN uses the HNSW index")
    assert r.status == "FAIL" and "TABLE ACCESS FULL" in r.detail and "VECTOR_MEMORY_SIZE" in r.detail
    assert st.exit_code(results) == 1


def test_explain_statement_shape():
    t = st.SelfTest(FakeConnection(Recorder()), run_id=RUN)
    stmt, sql, vec = t.plan_sql(SearchStrategy.VECTOR, 3)
    assert stmt == f"ORAMEM_ST_OMST{RUN}V"
    assert f'FROM "OM_OMST{RUN}V_CHK" c' in sql and "FETCH APPROX FIRST 10 ROWS ONLY" in sql
    assert "TO_VECTOR(:v, 3, FLOAT32), COSINE)" in sql and vec == "[0.1,0.1,0.1]"


def test_d6_explain_binds_the_vector_and_hints_the_index():
    """D6: a 1024-d model's vector is a bind (no literal over 4000 characters, ORA-01704) typed
    CLOB, and the statement asks for the vector index (VECTOR_INDEX_SCAN)."""
    import re

    import oracledb

    t = st.SelfTest(FakeConnection(Recorder()), run_id=RUN)
    _, sql, vec = t.plan_sql(SearchStrategy.VECTOR, 1024)
    assert len(vec) > 4000 and vec not in sql
    assert max((len(m) for m in re.findall(r"'[^']*'", sql)), default=0) <= 4000
    assert "/*+ VECTOR_INDEX_SCAN(c) */" in sql
    rec = Recorder(answers())
    run(rec)
    explain = [c for c in rec.calls if c.kind == "execute" and c.name.startswith("EXPLAIN PLAN")]
    assert explain and all(c.input_sizes == {"v": oracledb.DB_TYPE_CLOB} and c.binds["v"].startswith("[")
                           for c in explain)


class _Broken:
    """A store whose get answers against the contract, and whose delete_thread raises an
    ORA- error, to see both kinds of FAIL line."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def get(self, record_type, record_id):
        return None

    def delete_thread(self, thread_id):
        raise RuntimeError("lock") from db_error(54, "resource busy and acquire with NOWAIT specified")


def test_failures_are_reported_with_code_and_fix_and_stores_are_still_dropped():
    base = sqlite_factory()
    _, results, rec = run(factory=lambda s, sid: _Broken(base(s, sid)))
    get = next(r for r in results if r.name == "vector: get")
    assert get.status == "FAIL" and get.ora is None and "get of a stored memory returned None" in get.detail
    assert "oramem db upgrade" in get.fix
    dt = next(r for r in results if r.name == "vector: delete_thread")
    assert dt.status == "FAIL" and dt.ora == "ORA-00054" and "locked" in dt.fix
    assert st.exit_code(results) == 1
    assert dropped(rec) == SIDS


def test_a_store_that_cannot_be_opened_is_still_dropped():
    def factory(strategy, sid):
        raise db_error(1031, "insufficient privileges")

    _, results, rec = run(factory=factory)
    opens = [r for r in results if r.name.endswith("open (create) store")]
    assert [r.status for r in opens] == ["FAIL"] * 3 and all(r.ora == "ORA-01031" for r in opens)
    assert "privilege" in opens[0].fix
    assert dropped(rec) == SIDS  # half-created stores are dropped too
    assert any(r.name == "PL/SQL entry points" and r.status == "SKIP" for r in results)


def test_cleanup_runs_when_the_run_itself_is_interrupted():
    opened = []
    base = sqlite_factory(opened)

    class Boom(BaseException):
        pass

    def factory(strategy, sid):
        if strategy is SearchStrategy.KEYWORD:
            raise Boom()
        return base(strategy, sid)

    rec = Recorder(answers())
    with pytest.raises(Boom):
        st.SelfTest(FakeConnection(rec), store_factory=factory, run_id=RUN).run()
    assert dropped(rec) == SIDS[:2]


def test_missing_prerequisites_are_skips_not_failures():
    a = answers()
    a["oramem_admin.capabilities"] = json.dumps({"oracle_text": False, "hybrid_vector": False,
                                                 "code_schema_version": 1})
    _, results, rec = run(Recorder(a))
    skipped = {r.name for r in results if r.status == "SKIP"}
    assert {"keyword: open (create) store", "hybrid: open (create) store"} <= skipped
    assert st.exit_code(results) == 0
    assert dropped(rec) == SIDS[:1]


def test_hybrid_without_a_model_is_skipped_with_the_fix():
    rec = Recorder(answers())
    t = st.SelfTest(FakeConnection(rec), run_id=RUN)
    with pytest.raises(st._Skip) as e:
        t._oracle_store(SearchStrategy.HYBRID, SIDS[2])
    assert "oramem db load-model" in e.value.fix


def test_model_name_is_validated():
    with pytest.raises(ValueError):
        st.SelfTest(FakeConnection(Recorder()), model="x; drop table t")


def test_ora_code_sources():
    assert st.ora_code(db_error(20101, "x")) == 20101
    e = ValueError("boom")
    e.oracle_code = 20103
    assert st.ora_code(e) == 20103
    assert st.ora_code(RuntimeError("ORA-51962: vector memory")) == 51962
    assert st.ora_code(RuntimeError("no code")) is None


@pytest.fixture
def cli_env(monkeypatch):
    rec = Recorder(answers())
    monkeypatch.setattr(dbcli, "connect", lambda dsn, user, pw: FakeConnection(rec))
    monkeypatch.setenv("ORAMEM_PASSWORD", "pw")
    orig = st.SelfTest.__init__

    def init(self, conn, **kw):
        kw.setdefault("store_factory", sqlite_factory())
        kw.setdefault("passage_factory", passage_factory)
        kw.setdefault("run_id", RUN)
        orig(self, conn, **kw)

    monkeypatch.setattr(st.SelfTest, "__init__", init)
    return rec


def test_cli_lines_and_exit_0(cli_env):
    res = CliRunner().invoke(dbcli.db, ["--dsn", "h/p", "--user", "u", "selftest"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("PASS  oramem_admin.capabilities")
    assert lines[-1].endswith("0 failed, 0 skipped")


def test_cli_json_and_exit_1(cli_env):
    cli_env.answers["oramem_admin.upgrade_store"] = json.dumps({"upgraded": True})
    res = CliRunner().invoke(dbcli.db, ["--dsn", "h/p", "--user", "u", "selftest", "--json"])
    assert res.exit_code == 1
    doc = json.loads(res.output)
    assert doc["ok"] is False and doc["counts"]["FAIL"] == 1
    assert set(doc["checks"][0]) == {"name", "status", "detail", "ora", "fix"}
    assert doc["store_ids"] == SIDS
    failed = [c for c in doc["checks"] if c["status"] == "FAIL"]
    assert failed[0]["name"] == "oramem_admin.upgrade_store"


def test_cli_rejects_a_bad_model_name(cli_env):
    res = CliRunner().invoke(dbcli.db, ["--dsn", "h/p", "--user", "u", "selftest", "--model", "a b"])
    assert res.exit_code == 2 and "--model" in res.output


def test_a_failing_drop_is_a_failed_check_naming_the_store():
    a = answers()
    a["oramem_admin.drop_store"] = db_error(20201, "lock timeout")
    t, results, _ = run(Recorder(a))
    drops = [r for r in results if r.name.startswith("cleanup:")]
    assert [r.status for r in drops] == ["FAIL"] * 4 and all(r.ora == "ORA-20201" for r in drops)
    assert drops[0].name == f"cleanup: oramem_admin.drop_store {SIDS[0]}" and "retry" in drops[0].fix
    assert t.created == SIDS and st.exit_code(results) == 1


def test_the_passage_check_fails_where_the_keyword_leg_ranks_windows(monkeypatch):
    """Issue 23: the check's records tell passages from windows. The reference engine with
    its keyword rows left per window (no grouping) puts st-one first (a tie, broken by id)."""
    import oramem.sqlite.engine as engine

    monkeypatch.setattr(engine, "keyword_rows_of", lambda identity: None)
    _, results, rec = run()
    r = next(r for r in results if r.name == "hybrid (token windows): keyword leg ranks passages")
    assert r.status == "FAIL" and "expected st-whole first" in r.detail and "['st-one'" in r.detail
    assert dropped(rec) == SIDS   # dropped after the failure too


def test_the_passage_check_is_skipped_without_a_factory():
    rec = Recorder(answers())
    t = st.SelfTest(FakeConnection(rec), store_factory=sqlite_factory(), run_id=RUN)
    results = t.run()
    r = next(r for r in results if r.name == "hybrid (token windows): keyword leg ranks passages")
    assert r.status == "SKIP" and f"OMST{RUN}P" not in dropped(rec)


def test_the_oracle_passage_store_is_hybrid_with_a_token_window_and_the_in_database_model():
    t = st.SelfTest(FakeConnection(Recorder()), run_id=RUN)
    with pytest.raises(st._Skip, match="no in-database ONNX model"):
        t._oracle_passage_store(f"OMST{RUN}P")
    from oramem.chunking import keyword_row_chars, policy_for
    from oramem.embedders.base import input_window

    embedder = st.PassageEmbedder(8)
    assert policy_for(input_window(embedder)).unit == "tokens"
    assert keyword_row_chars({"kind": "hash", "chunking": {"unit": "tokens", "size": 128, "overlap": 0}}) == 2000
