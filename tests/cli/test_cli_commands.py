"""The oramem CLI against a real SQLite store file in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.embedders import HashEmbedder


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "mem.db")


@pytest.fixture
def run(db: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("ORAMEM_DB", raising=False)
    monkeypatch.delenv("ORAMEM_STORE", raising=False)
    monkeypatch.delenv("ORAMEM_STRATEGY", raising=False)
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None, expect: int = 0, db_path: str | None = db):
        argv = (["--db", db_path] if db_path is not None else []) + list(args)
        result = runner.invoke(cli, argv, input=input, catch_exceptions=False)
        assert result.exit_code == expect, (argv, result.exit_code, result.output)
        return result

    return invoke


def jrun(run, *args: str, **kw):
    return json.loads(run("--json", *args, **kw).stdout)


def test_add_get_round_trip_with_scope_metadata_and_role(run):
    ids = jrun(
        run, "add", "--type", "message", "--thread", "t1", "--user", "u1", "--agent", "a1", "--role", "user",
        "--metadata", '{"topic": "coffee", "n": 2}', "--timestamp", "2026-01-02T03:04:05Z", "I like dark roast",
    )["ids"]
    assert len(ids) == 1
    rec = jrun(run, "get", "message", ids[0])
    assert rec["content"] == "I like dark roast"
    assert (rec["thread_id"], rec["user_id"], rec["agent_id"], rec["role"]) == ("t1", "u1", "a1", "user")
    assert rec["metadata"] == {"topic": "coffee", "n": 2}
    assert rec["timestamp"].startswith("2026-01-02T03:04:05")
    human = run("get", "message", ids[0]).stdout
    assert "I like dark roast" in human and "role" in human and '"topic": "coffee"' in human


def test_add_several_texts_with_ids_and_from_stdin(run):
    out = run("add", "--id", "m1", "--id", "m2", "first note", "second note").stdout.split()
    assert out == ["m1", "m2"]
    ids = jrun(run, "add", "--user", "u9", input="from stdin\n")["ids"]
    assert jrun(run, "get", "memory", ids[0])["content"] == "from stdin"
    run("add", "--id", "m1", "only one id", "two texts", expect=2)


def test_add_profile_and_ttl(run):
    assert run("add", "--type", "user_profile", "--id", "alice", "Alice likes tea").stdout.strip() == "alice"
    assert jrun(run, "get", "user_profile", "alice")["content"] == "Alice likes tea"
    rid = jrun(run, "add", "--ttl-days", "3", "short lived")["ids"][0]
    assert jrun(run, "get", "memory", rid)["expires_at"] is not None
    rid2 = jrun(run, "add", "--no-expiry", "forever")["ids"][0]
    assert jrun(run, "get", "memory", rid2)["expires_at"] is None


def test_search_three_strategies_scope_and_filter(run):
    run("add", "--user", "alice", "--metadata", '{"topic": "food"}', "--id", "a1", "Alice prefers dark roast coffee")
    run("add", "--user", "alice", "--metadata", '{"topic": "travel"}', "--id", "a2", "Alice flies to Tokyo in April")
    run("add", "--user", "bob", "--metadata", '{"topic": "food"}', "--id", "b1", "Bob drinks green tea and coffee")
    for strategy in ("vector", "keyword", "hybrid"):
        hits = jrun(run, "search", "dark roast coffee", "--strategy", strategy, "-k", "3")
        assert hits and hits[0]["record"]["id"] == "a1", strategy
        assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
        assert all(isinstance(h["distance"], float) for h in hits)
    scoped = jrun(run, "search", "coffee", "--user", "bob", "--strategy", "keyword")
    assert [h["record"]["id"] for h in scoped] == ["b1"]
    filtered = jrun(run, "search", "alice", "--filter", '{"topic": "travel"}')
    assert [h["record"]["id"] for h in filtered] == ["a2"]
    typed = jrun(run, "search", "coffee", "--types", "fact,preference")
    assert typed == []
    table = run("search", "dark roast", "-k", "2").stdout
    lines = table.splitlines()
    assert lines[0].split()[:6] == ["rank", "distance", "type", "scope", "id", "content"]
    assert "user=alice" in lines[1] and " a1 " in lines[1] and "dark roast" in lines[1]


def test_search_exact_flags_select_null_scope(run):
    run("add", "--id", "free", "coffee without a user")
    run("add", "--user", "u1", "--id", "owned", "coffee with a user")
    ids = {h["record"]["id"] for h in jrun(run, "search", "coffee", "--exact-user")}
    assert ids == {"free"}
    ids = {h["record"]["id"] for h in jrun(run, "search", "coffee")}
    assert ids == {"free", "owned"}


def test_list_scope_null_filters_limit(run):
    run("add", "--user", "u1", "--id", "x1", "one")
    run("add", "--id", "x2", "--metadata", '{"k": 1}', "two")
    run("add", "--user", "u1", "--id", "x3", "three")
    assert [r["id"] for r in jrun(run, "list")] == ["x1", "x2", "x3"]
    assert [r["id"] for r in jrun(run, "list", "--user", "u1")] == ["x1", "x3"]
    assert [r["id"] for r in jrun(run, "list", "--no-user")] == ["x2"]
    assert [r["id"] for r in jrun(run, "list", "--filter", "null")] == ["x1", "x3"]
    assert [r["id"] for r in jrun(run, "list", "--filter", '{"k": 1}')] == ["x2"]
    assert [r["id"] for r in jrun(run, "list", "--limit", "2")] == ["x2", "x3"]
    assert [r["id"] for r in jrun(run, "list", "--all")] == ["x1", "x2", "x3"]
    assert "no fact records" in run("list", "--type", "fact").stdout
    header = run("list").stdout.splitlines()[0].split()
    assert header == ["id", "type", "scope", "created_at", "content"]


def test_update_and_delete(run):
    run("add", "--id", "r1", "--metadata", '{"a": 1}', "old text")
    assert "updated memory r1" in run("update", "memory", "r1", "--text", "new text about tea").stdout
    rec = jrun(run, "get", "memory", "r1")
    assert rec["content"] == "new text about tea" and rec["metadata"] == {"a": 1}
    run("update", "memory", "r1", "--metadata", "null")
    assert jrun(run, "get", "memory", "r1")["metadata"] is None
    hits = jrun(run, "search", "tea", "--strategy", "keyword")
    assert [h["record"]["id"] for h in hits] == ["r1"]
    run("update", "memory", "r1", expect=2)  # nothing to update
    res = run("update", "memory", "nope", "--text", "x", expect=1)
    assert "no memory record with id 'nope'" in res.output
    assert "deleted 1 memory" in run("delete", "memory", "r1").stdout
    run("get", "memory", "r1", expect=1)
    run("delete", "memory", "r1", expect=1)


def test_delete_thread_and_cascade(run):
    run("add", "--type", "user_profile", "--id", "u1", "profile")
    run("add", "--type", "message", "--thread", "t1", "--user", "u1", "--role", "user", "--id", "msg1", "hello")
    run("add", "--thread", "t2", "--id", "mem2", "in thread two")
    assert jrun(run, "delete-thread", "t2") == {"deleted": 1}
    run("get", "memory", "mem2", expect=1)
    run("delete-thread", "t2", expect=1)
    assert jrun(run, "delete", "--cascade", "user_profile", "u1") == {"deleted": 1, "cascaded": 1}
    run("get", "message", "msg1", expect=1)


def test_purge_reports_count(run):
    assert "no database at" in run("purge", expect=1).stderr
    run("add", "hello")
    assert jrun(run, "purge") == {"purged": 0}
    assert "purged 0 expired record(s)" in run("purge").stdout


def test_reading_commands_do_not_create_a_database(run, db):
    res = run("list", expect=1)
    assert "no database at" in res.output
    assert not Path(db).exists()
    run("add", "x")
    res = run("--store", "other", "list", expect=1)
    assert "no store 'OTHER'" in res.output and "DEFAULT" in res.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["add", "--metadata", "{bad", "x"], "--metadata is not valid JSON"),
        (["add", "--metadata", "[1]", "x"], "--metadata must be a JSON object"),
        (["add", "--role", "user", "x"], "--role applies only to message records"),
        (["add", "--ttl-days", "-1", "x"], "--ttl-days -1 would expire"),
        (["add", "--timestamp", "yesterday", "x"], "timestamp"),
        (["search", "x", "-k", "0"], "k"),
        (["search", "x", "--filter", '{"$bogus": 1}'], "$bogus"),
        (["search", "x", "--types", "nonsense"], "nonsense"),
        (["--store", "9bad", "add", "x"], "--store '9bad' is invalid"),
    ],
)
def test_bad_input_is_one_clean_error_line(run, args, message):
    run("add", "seed")
    res = run(*args, expect=2)
    assert "Traceback" not in res.output
    err_lines = [ln for ln in res.stderr.splitlines() if ln.startswith("Error:")]
    assert len(err_lines) == 1 and message in err_lines[0], res.stderr


def test_store_state_error_exits_1(run, db):
    # a store created with another vector dimension: the settings mismatch is a StoreError
    # (without --embed-* options the CLI would reuse the store's recorded HashEmbedder(16))
    SQLiteMemoryStore(db, embedder=HashEmbedder(16)).close()
    res = run("--store-strategy", "vector", "--embed-dim", "256", "add", "x", expect=1)
    assert res.stderr.startswith("Error:") and "vector_dim" in res.stderr and "Traceback" not in res.output
    assert "HashEmbedder(dim=16, seed=0)" in res.stderr
    run("--store-strategy", "vector", "add", "x")


def test_cli_sees_records_written_by_the_api_and_vice_versa(run, db):
    with SQLiteMemoryStore(db, embedder=HashEmbedder(256), search_strategy="hybrid") as store:
        store.add(["written by python"], "fact", record_ids="p1", user_ids="u1")
    assert jrun(run, "get", "fact", "p1")["content"] == "written by python"
    run("add", "--type", "fact", "--id", "c1", "written by the cli")
    with SQLiteMemoryStore(db, embedder=HashEmbedder(256), search_strategy="hybrid") as store:
        assert store.get("fact", "c1").content == "written by the cli"


def test_several_stores_in_one_file(run, db):
    run("--store", "alpha", "add", "--id", "a", "in alpha")
    run("--store", "beta", "--store-strategy", "keyword", "add", "--id", "b", "in beta")
    listed = jrun(run, "stores", "list")
    assert [(s["memory_store_id"], s["search_strategy"]) for s in listed] == [("ALPHA", "hybrid"), ("BETA", "keyword")]
    described = jrun(run, "stores", "describe", "beta")
    assert described["records"] == {"memory": 1} and described["search_strategy"] == "keyword"
    # the keyword store is opened as keyword without --store-strategy: no accidental upgrade
    assert [h["record"]["id"] for h in jrun(run, "--store", "beta", "search", "beta")] == ["b"]
    assert jrun(run, "stores", "list")[1]["search_strategy"] == "keyword"
    res = run("stores", "drop", "beta", expect=2)
    assert "--yes" in res.output
    run("stores", "drop", "beta", "--yes")
    assert [s["memory_store_id"] for s in jrun(run, "stores", "list")] == ["ALPHA"]
    run("--store", "beta", "list", expect=1)
    assert "ALPHA" in run("stores", "list").stdout
    run("stores", "describe", "nope", expect=1)


def test_env_vars_select_db_and_store(run, db, monkeypatch):
    monkeypatch.setenv("ORAMEM_DB", db)
    monkeypatch.setenv("ORAMEM_STORE", "envstore")
    run("add", "--id", "e1", "via env", db_path=None)
    with SQLiteMemoryStore(db, embedder=HashEmbedder(256), memory_store_id="envstore", search_strategy="hybrid") as s:
        assert s.get("memory", "e1").content == "via env"


def test_cli_keeps_a_stores_retention_and_settings(run, db):
    from oramem import MemoryRetentionConfig

    SQLiteMemoryStore(
        db, embedder=HashEmbedder(256), search_strategy="vector", memory_retention_config=MemoryRetentionConfig(5, 50)
    ).close()
    rid = jrun(run, "add", "uses the store default ttl")["ids"][0]
    assert jrun(run, "get", "memory", rid)["expires_at"] is not None
    described = jrun(run, "stores", "describe")
    assert (described["default_ttl_days"], described["max_ttl_days"]) == (5, 50)
    assert described["search_strategy"] == "vector"  # the CLI did not upgrade it to hybrid
    res = run("search", "default", "--strategy", "keyword", expect=2)
    assert "Error:" in res.stderr
    assert [h["record"]["id"] for h in jrun(run, "search", "default")] == [rid]


def test_oracle_db_group_is_registered(run):
    from oramem.cli.cmd_db import db

    assert cli.get_command(None, "db") is db  # loaded on first use (lazy group)
    out = run("db", "--help", db_path=None).stdout
    assert "install" in out and "doctor" in out


def test_a_file_that_is_not_a_database_is_a_clean_error(run, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("just some text, not SQLite\n" * 50, encoding="utf-8")
    for args in (["list"], ["add", "x"], ["stores", "list"]):
        res = run(*args, expect=1, db_path=str(notes))
        assert "is not an oramem SQLite database" in res.stderr and "Traceback" not in res.output
    assert notes.read_text(encoding="utf-8").startswith("just some text")


def test_search_fusion_flags_reach_hybrid_and_are_never_ignored(run):
    run("add", "--id", "z", "zebra crossing at the corner")
    run("add", "--id", "o", "an otter by the river")
    keyword_only = jrun(run, "search", "zebra crossing", "--strategy", "hybrid", "--vector-weight", "0")
    assert keyword_only[0]["record"]["id"] == "z" and keyword_only[0]["distance"] == 0.0
    jrun(run, "search", "zebra", "--fusion", "rrf", "--rrf-k", "60", "--keyword-weight", "1", "--fusion-depth", "5")
    jrun(run, "search", "zebra", "--fusion", "score", "--keyword-weight", "0.2")
    jrun(run, "search", "zebra", "--fusion", "gated-rrf", "--rrf-k", "2", "--keyword-weight", "1")
    jrun(run, "search", "zebra", "--rrf-k", "2")  # the default gated-rrf takes it
    refused_k = run("search", "zebra", "--fusion", "score", "--rrf-k", "60", expect=2).output
    assert "--rrf-k applies to --fusion gated-rrf or rrf only" in refused_k
    refused = run("search", "zebra", "--strategy", "keyword", "--fusion", "rrf", "--rrf-k", "5", "--fusion-depth", "3",
                  expect=2)
    assert "--fusion, --rrf-k, --fusion-depth apply only to hybrid search" in refused.output
    both_zero = run("search", "zebra", "--vector-weight", "0", "--keyword-weight", "0", expect=2)
    assert "--vector-weight and --keyword-weight are both 0" in both_zero.output
    assert "not in the range x>0" in run("search", "zebra", "--rrf-k", "0", expect=2).output


def test_keyword_language_flag_creates_and_is_checked(run):
    run("--keyword-language", "none", "--store", "plain", "add", "--id", "p", "she peels the peanuts")
    assert jrun(run, "--store", "plain", "search", "peanut", "--strategy", "keyword") == []  # no stemming
    assert [h["record"]["id"] for h in jrun(run, "--store", "plain", "search", "peanuts", "--strategy", "keyword")] == ["p"]
    refused = run("--keyword-language", "english", "--store", "plain", "search", "peanuts", expect=2)
    assert "--keyword-language english: store 'PLAIN' indexes text as 'none'" in refused.output
    run("--keyword-language", "NONE", "--store", "plain", "search", "peanuts")  # the same language: fine
    run("add", "--id", "s", "she peels the peanuts")  # default store, default language
    assert [h["record"]["id"] for h in jrun(run, "search", "peanut", "--strategy", "keyword")] == ["s"]


def test_stores_drop_removes_the_knowledge_tables_too_and_leaves_other_stores_alone(run, db):
    from oramem.sqlite._sqlite import sqlite3

    from oramem.knowledge import KnowledgeMemory

    for sid in ("GONE", "GONE_KG"):  # a store whose id extends the other's table prefix
        with SQLiteMemoryStore(db, embedder=HashEmbedder(16), memory_store_id=sid, search_strategy="hybrid") as store:
            with KnowledgeMemory(store, None) as km:
                km.add_fact("helper", "Ana", f"Ana lives in Porto ({sid})", subject_type="person")

    def tables():
        conn = sqlite3.connect(db)
        try:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()

    assert {"GONE_KG_FACT", "GONE_KG_JOB", "GONE_KG_AGENT", "GONE_KG_KG_FACT"} <= tables()
    res = run("stores", "drop", "gone", expect=2)
    assert "deletes all its records and its knowledge tables; repeat with --yes" in res.stderr
    run("stores", "drop", "gone", "--yes")
    left = tables()
    assert not {n for n in left if n.startswith("GONE_KG_") and not n.startswith("GONE_KG_KG_")}
    assert "om_GONE_records" not in left and "om_GONE_KG_records" in left and "GONE_KG_KG_FACT" in left
    with SQLiteMemoryStore(db, embedder=HashEmbedder(16), memory_store_id="GONE_KG", search_strategy="hybrid") as store:
        with KnowledgeMemory(store, None) as km:
            assert [f.fact_text for f in km.get_all("helper")] == ["Ana lives in Porto (GONE_KG)"]
