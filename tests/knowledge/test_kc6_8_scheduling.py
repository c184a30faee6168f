"""KC-6.8 scheduling: ``oramem kg run-jobs`` (SQLite path run here; the Oracle path is
argument-checked only), ``oramem kg install-scheduler`` (argument checks only), and the
PL/SQL package ``oramem_kg_jobs`` (static checks here; the Python/PL/SQL parity test needs
Oracle and is skipped with the printed reason)."""

from __future__ import annotations

import json
import re
from oramem.sqlite._sqlite import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.testing import HashEmbedder, ScriptedLLM

from .conftest import oracle_skip_reason
from .helpers import Clock, extract

REPO = Path(__file__).resolve().parents[2]
SID = "KC68"
DET = {"entity_importance", "emotional_trends", "memify"}


def _seed(km, llm, agent, entities, facts, relations=()):
    llm.route("extract", extract(entities, facts, relations))
    r = km.write(agent, "; ".join(f[1] for f in facts), "Pedro")
    assert r.success, r.error


@pytest.fixture
def kg_db(tmp_path):
    """A SQLite file with store KC68: agent a1 (Pedro, Ana, one relation), agent a2 (Rui)."""
    path = str(tmp_path / "kg.db")
    clock = Clock(datetime.now(timezone.utc).replace(microsecond=0))
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(384), clock=clock, memory_store_id=SID)
    llm = ScriptedLLM({"event_emotion": {"emotion": "joy", "intensity": 0.8, "energy": "high"}})
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False), clock=clock)
    try:
        _seed(km, llm, "a1", [("Pedro", "person"), ("Ana", "person")],
              [("Pedro", "Pedro plays chess"), ("Ana", "Ana keeps bees")], [("Pedro", "Ana", "friend_of")])
        clock.advance()
        _seed(km, llm, "a2", [("Rui", "person")], [("Rui", "Rui sails boats")])
    finally:
        km.close()
        store.close()
    return path


def _invoke(args, **kw):
    return CliRunner().invoke(cli, args, **kw)


def _lines(res):
    return [json.loads(x) for x in res.stdout.splitlines() if x.strip()]


def _current_facts(path, agent):
    with sqlite3.connect(path) as c:
        return c.execute(f"SELECT count(*) FROM {SID}_KG_FACT WHERE agent_id = ? AND valid_to IS NULL "
                         "AND invalidated_at IS NULL", (agent,)).fetchone()[0]


def _entity_scores(path):
    with sqlite3.connect(path) as c:
        return {(a, k): s for a, k, s in c.execute(f"SELECT agent_id, canonical_key, importance_score FROM {SID}_KG_ENTITY")}


# ----------------------------------------------------------------------------- run-jobs, SQLite
def test_run_jobs_sqlite_all_agents_prints_one_json_object_per_agent(kg_db):
    before = _entity_scores(kg_db)
    assert before and all(s is None for s in before.values())
    res = _invoke(["kg", "run-jobs", "--sqlite", kg_db, "--store-id", SID.lower(), "--all-agents"])
    assert res.exit_code == 0, res.output
    out = _lines(res)
    assert [o["agent_id"] for o in out] == ["a1", "a2"]
    for o in out:
        assert set(o["results"]) == DET and o["errors"] == {}
    a1 = out[0]["results"]
    assert a1["entity_importance"]["entities_scored"] == 2
    assert a1["memify"]["facts_scored"] == _current_facts(kg_db, "a1") >= 2
    assert out[1]["results"]["entity_importance"]["entities_scored"] == 1
    after = _entity_scores(kg_db)
    assert all(s is not None for s in after.values())
    # the written scores are the ones reported
    top = dict((k, s) for k, s in a1["entity_importance"]["top_entities"])
    assert {k: pytest.approx(v) for k, v in top.items()} == {k: after[("a1", k)] for k in top}
    with sqlite3.connect(kg_db) as c:
        assert c.execute(f"SELECT count(*) FROM {SID}_KG_FACT WHERE vitality_score IS NULL").fetchone()[0] == 0


def test_run_jobs_one_agent_and_a_job_subset_touch_only_that(kg_db):
    res = _invoke(["kg", "run-jobs", "--sqlite", kg_db, "--store-id", SID, "--agent-id", "a1", "--jobs", "entity_importance"])
    assert res.exit_code == 0, res.output
    out = _lines(res)
    assert [o["agent_id"] for o in out] == ["a1"] and set(out[0]["results"]) == {"entity_importance"}
    scores = _entity_scores(kg_db)
    assert all(s is not None for (a, _), s in scores.items() if a == "a1")
    assert all(s is None for (a, _), s in scores.items() if a == "a2")  # KC-0.1: a2 untouched
    with sqlite3.connect(kg_db) as c:  # memify did not run
        assert c.execute(f"SELECT count(*) FROM {SID}_KG_FACT WHERE vitality_score IS NOT NULL").fetchone()[0] == 0


def test_run_jobs_failing_job_exits_1_and_the_others_still_run(kg_db):
    with sqlite3.connect(kg_db) as c:  # a database error in entity_importance only
        c.execute(f"CREATE TRIGGER kc68_fail BEFORE UPDATE OF importance_score ON {SID}_KG_ENTITY "
                  "BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
    res = _invoke(["kg", "run-jobs", "--sqlite", kg_db, "--store-id", SID, "--agent-id", "a1"])
    assert res.exit_code == 1, res.output
    (o,) = _lines(res)
    assert set(o["errors"]) == {"entity_importance"} and "injected failure" in o["errors"]["entity_importance"]
    assert set(o["results"]) == {"emotional_trends", "memify"} and o["results"]["memify"]["facts_scored"] == _current_facts(kg_db, "a1")


def test_run_jobs_unknown_store_in_file_is_a_usage_error(kg_db):
    res = _invoke(["kg", "run-jobs", "--sqlite", kg_db, "--store-id", "OTHER", "--all-agents"])
    assert res.exit_code == 2 and "no store 'OTHER'" in res.output


# ----------------------------------------------------------------------------- argument errors
BAD = [
    (["--store-id", SID, "--all-agents"], "no database at ./oramem.db"),  # the root --db's default
    (["--dsn", "h/p", "--user", "u", "--sqlite", "x.db", "--store-id", SID, "--all-agents"], "exactly one of --dsn"),
    (["--dsn", "h/p", "--store-id", SID, "--all-agents"], "--dsn needs --user"),
    (["--sqlite", "x.db", "--user", "u", "--store-id", SID, "--all-agents"], "go with --dsn"),
    (["--sqlite", "x.db", "--store-id", SID], "exactly one of --agent-id"),
    (["--sqlite", "x.db", "--store-id", SID, "--agent-id", "a1", "--all-agents"], "exactly one of --agent-id"),
    (["--sqlite", "x.db", "--store-id", "1bad", "--all-agents"], "Invalid value for --store-id: '1bad' is invalid"),
    (["--sqlite", "x.db", "--store-id", "A" * 17, "--all-agents"], "Invalid value for --store-id: 'AAAAAAAAAAAAAAAAA' is invalid"),
    (["--sqlite", "x.db", "--all-agents"], "no database at x.db"),  # --store-id defaults to the default store
    (["--sqlite", "x.db", "--store-id", SID, "--all-agents", "--jobs", "memify,bogus"], "unknown job(s): bogus"),
    (["--sqlite", "x.db", "--store-id", SID, "--all-agents", "--jobs", "clustering"], "call an LLM"),
    (["--sqlite", "x.db", "--store-id", SID, "--all-agents", "--llm-base-url", "http://x"], "go together"),
    (["--sqlite", "x.db", "--store-id", SID, "--all-agents", "--password", "pw"], "No such option"),
    (["--sqlite", "nowhere.db", "--store-id", SID, "--all-agents"], "no database at nowhere.db"),
    (["--dsn", "h/p", "--user", "u", "--store-id", SID, "--all-agents"], "no password"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[m for _, m in BAD])
def test_run_jobs_bad_arguments_exit_2_with_a_clear_message(args, message, tmp_path, monkeypatch):
    monkeypatch.delenv("ORAMEM_PASSWORD", raising=False)
    monkeypatch.chdir(tmp_path)
    res = _invoke(["kg", "run-jobs", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert res.stdout == ""  # nothing on stdout: no half JSON for a caller to parse


def test_password_stdin_empty_is_a_usage_error(monkeypatch):
    monkeypatch.setenv("ORAMEM_PASSWORD", "ignored-when-stdin-is-asked-for")
    res = _invoke(["kg", "run-jobs", "--dsn", "h/p", "--user", "u", "--password-stdin", "--store-id", SID, "--all-agents"],
                  input="")
    assert res.exit_code == 2 and "stdin is empty" in res.output


INSTALL_BAD = [
    (["--store-id", SID], "pass --dsn and --user"),
    (["--dsn", "h/p", "--store-id", SID], "pass --dsn and --user"),
    (["--dsn", "h/p", "--user", "u", "--store-id", "x-y"], "Invalid value for --store-id: 'x-y' is invalid"),
    (["--dsn", "h/p", "--user", "u", "--store-id", SID, "--every-hours", "0"], "--every-hours"),
    (["--dsn", "h/p", "--user", "u", "--store-id", SID], "no password"),
]


@pytest.mark.parametrize("args,message", INSTALL_BAD, ids=[m for _, m in INSTALL_BAD])
def test_install_scheduler_bad_arguments_exit_2(args, message, monkeypatch):
    monkeypatch.delenv("ORAMEM_PASSWORD", raising=False)
    res = _invoke(["kg", "install-scheduler", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output


def test_knowledge_jobs_command_still_uses_the_shared_runner(kg_db, tmp_path):
    """``oramem knowledge jobs`` and ``oramem kg run-jobs`` share job_names/run_jobs."""
    res = _invoke(["--db", kg_db, "--store", SID, "--embed-dim", "384", "knowledge", "jobs", "a2"])
    assert res.exit_code == 0, res.output
    (o,) = _lines(res)
    assert o["agent_id"] == "a2" and set(o["results"]) == DET


# ----------------------------------------------------------------------------- PL/SQL, static
PKS = REPO / "plsql" / "oramem_kg_jobs.pks"
PKB = REPO / "plsql" / "oramem_kg_jobs.pkb"


def test_kg_job_calls_match_the_package_spec():
    from oramem.oracle.calls import KG_JOB_CALLS, check_calls_against
    from plsql.plsql_parse import package_signatures  # tests/ is on sys.path (rootdir-relative imports)

    from oramem.oracle.scripts import split_script

    specs = {}
    for item in split_script(PKS.read_text()):
        if item.kind == "plsql":
            pkg = package_signatures(item.text, item.line)
            if pkg is not None:
                specs[pkg.name] = pkg
    assert "ORAMEM_KG_JOBS" in specs
    assert check_calls_against(KG_JOB_CALLS.values(), specs) == []


def test_install_and_uninstall_scripts_list_the_package_in_dependency_order():
    inst = [ln.strip() for ln in (REPO / "plsql" / "install.sql").read_text().splitlines() if ln.startswith("@@")]
    for unit in ("oramem_kg_jobs.pks", "oramem_kg_jobs.pkb"):
        assert f"@@{unit}" in inst
    assert inst.index("@@oramem_kg_jobs.pks") > inst.index("@@oramem_registry.pks")
    assert inst.index("@@oramem_kg_jobs.pkb") > max(inst.index("@@oramem_errors.pkb"), inst.index("@@oramem_registry.pkb"))
    assert "'ORAMEM_KG_JOBS'" in (REPO / "plsql" / "install.sql").read_text()
    un = (REPO / "plsql" / "uninstall.sql").read_text()
    assert "'ORAMEM_KG_JOBS'" in un
    # dropped before the packages it depends on
    assert un.index("'ORAMEM_KG_JOBS'") < un.index("'ORAMEM_REGISTRY'")


def _const(text, name):
    m = re.search(rf"\b{name}\s+CONSTANT\s+[A-Z_0-9() ]+:=\s*([0-9.]+)\s*;", text, re.I)
    assert m, f"{name} not declared"
    return float(m.group(1))


def test_plsql_constants_equal_the_python_config_defaults():
    """The PL/SQL job mirrors jobs.py with the KnowledgeConfig defaults (KC-6.8)."""
    cfg = KnowledgeConfig()
    spec = PKS.read_text()
    assert _const(spec, "gc_vitality_stale_threshold") == cfg.vitality_stale_threshold
    assert _const(spec, "gc_importance_halflife_days") == cfg.importance_recency_halflife_days
    assert _const(spec, "gc_intention_expiry_days") == cfg.intention_expiry_days
    assert _const(spec, "gc_trend_window_days") == cfg.emotional_trend_window_days
    assert _const(spec, "gc_trend_min_events") == cfg.emotional_trend_min_events


def test_plsql_stopwords_equal_the_python_list():
    from oramem.knowledge.read.procedural import _STOP

    body = PKB.read_text()
    m = re.search(r"gc_stopwords\s+CONSTANT\s+VARCHAR2\(\d+(?: CHAR)?\)\s*:=\s*q'\[(.*?)\]'\s*;", body, re.S)
    assert m, "gc_stopwords not declared in the body"
    text = m.group(1)
    assert text.startswith(" ") and text.endswith(" ")  # INSTR(' ' || w || ' ') finds every word
    assert set(text.split()) == set(_STOP)


def test_plsql_builds_table_names_only_through_dbms_assert():
    body = PKB.read_text()
    assert "DBMS_ASSERT.SIMPLE_SQL_NAME(in_sid || '_KG_' || in_suffix)" in body
    # every dynamic statement is a template with table names substituted by sql_for
    stmts = re.findall(r"EXECUTE IMMEDIATE\s+([^\s]+)", body)
    assert stmts and all(s.startswith(("sql_for(gc_tpl_", "in_sql")) for s in stmts), stmts
    assert re.search(r"in_sql\s+IN VARCHAR2", body) and "key_counts(sql_for(gc_tpl_" in body
    # templates hold no concatenation: values are binds, names are #PLACEHOLDER#s
    templates = re.findall(r"gc_tpl_\w+\s+CONSTANT\s+VARCHAR2\(\d+(?: CHAR)?\)\s*:=\s*q'\[(.*?)\]'", body, re.S)
    assert len(templates) >= 15 and not [t for t in templates if "||" in t]
    placeholders = set(re.findall(r"#([A-Z]+)#", " ".join(templates)))
    assert placeholders == {"EVENT", "ENT", "LINK", "FACT", "REL", "INT", "OBS", "AGENT", "TAB"}
    for name in placeholders:
        assert f"REPLACE(l_sql, '#{name}#', kg_table(in_sid, " in body


# ----------------------------------------------------------------------------- parity (Oracle)
@pytest.fixture(params=["oracle"])
def oracle_engine(request):
    reason = oracle_skip_reason()
    print(reason)
    pytest.skip(reason)


def test_plsql_and_python_deterministic_jobs_agree(oracle_engine):  # pragma: no cover - needs Oracle
    """Same rows for agents "py" and "pl"; Python runs the deterministic jobs for "py",
    oramem_kg_jobs.run_deterministic for "pl"; scores, stale flags, edge strengths,
    intention states and the emotional-trend observation must agree."""
    import os

    import oracledb

    from oramem.cli.cmd_knowledge import DETERMINISTIC_JOBS
    from oramem.oracle.admin import _call
    from oramem.oracle.calls import KG_JOB_CALLS
    from oramem.store import OracleDBMemoryStore
    from oramem.types import SchemaPolicy

    pool = oracledb.create_pool(user=os.environ["ORACLE_USER"], password=os.environ["ORACLE_PASSWORD"],
                                dsn=os.environ["ORACLE_DSN"], min=1, max=2, increment=1)
    store = OracleDBMemoryStore(HashEmbedder(384), pool, schema_policy=SchemaPolicy.RECREATE, memory_store_id="KC68P")
    llm = ScriptedLLM({"event_emotion": {"emotion": "joy", "intensity": 0.8, "energy": "high"}})
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False))
    try:
        for agent in ("py", "pl"):
            for i in range(6):
                _seed(km, llm, agent, [("Pedro", "person"), ("Ana", "person")],
                      [("Pedro", f"Pedro plays chess {i}"), ("Ana", f"Ana keeps bees {i}")], [("Pedro", "Ana", "friend_of")])
        km.run_background("py", jobs=list(DETERMINISTIC_JOBS))
        with pool.acquire() as conn:
            _call(conn, KG_JOB_CALLS["run_deterministic"], in_store_id="KC68P", in_agent_id="pl")
        t = km._tables
        with km._backend.read() as c:
            def snap(agent):
                ents = {k: s for k, s in c.execute(sa.select(t.entity.c.canonical_key, t.entity.c.importance_score)
                                                   .where(t.entity.c.agent_id == agent))}
                facts = {x: (v, bool(s)) for x, v, s in c.execute(
                    sa.select(t.fact.c.fact_text, t.fact.c.vitality_score, t.fact.c.is_stale).where(t.fact.c.agent_id == agent))}
                edges = {(a, b): s for a, b, s in c.execute(sa.select(
                    t.relationship.c.source_entity_key, t.relationship.c.target_entity_key, t.relationship.c.strength)
                    .where(t.relationship.c.agent_id == agent))}
                obs = sorted((o, ti) for o, ti in c.execute(sa.select(t.meta_observation.c.observation_type, t.meta_observation.c.title)
                                                             .where(t.meta_observation.c.agent_id == agent, t.meta_observation.c.is_active == True)))  # noqa: E712
                return ents, facts, edges, obs
            (e1, f1, r1, o1), (e2, f2, r2, o2) = snap("py"), snap("pl")
        assert e1.keys() == e2.keys() and all(e1[k] == pytest.approx(e2[k], abs=1e-3) for k in e1)
        assert f1.keys() == f2.keys() and all(f1[k][1] == f2[k][1] and f1[k][0] == pytest.approx(f2[k][0], abs=1e-3) for k in f1)
        assert r1 == pytest.approx(r2) and o1 == o2
    finally:
        km.close()
        store.close()
        pool.close()
