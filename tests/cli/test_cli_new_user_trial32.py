"""What a new user tripped on in trial 32 (the knowledge layer from the README and docs/: one
support agent, three users, an OpenAI-compatible endpoint): `oramem knowledge retrieve --json`
failed on its own config echo, `--llm-timeout` (and `OpenAICompatibleProvider(timeout=...)`)
bounded nothing, and a backup's knowledge vectors went into a store of another embedder."""

from __future__ import annotations

import json

import pytest

from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.embedders import HashEmbedder
from oramem.knowledge import KnowledgeMemory


def run(runner: CliRunner, *args: str, expect: int = 0, **kw):
    result = runner.invoke(cli, list(args), catch_exceptions=False, **kw)
    assert result.exit_code == expect, (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    return result


def _three_users(db: str, dim: int = 64) -> None:
    with SQLiteMemoryStore(db, embedder=HashEmbedder(dim), search_strategy="hybrid") as store:
        with KnowledgeMemory(store, None) as km:
            for user, city in (("alice", "Lisbon"), ("bob", "Berlin"), ("carol", "Madrid")):
                km.add_fact("support", user.title(), f"{user.title()} lives in {city}", subject_type="person",
                            attribute_key="residence", user_id=user)


# ----------------------------------------------------------------------------- F1: retrieve --json
def test_retrieve_json_is_one_document(runner, tmp_path):
    """`oramem knowledge retrieve A Q --json` printed `Error: Object of type frozenset is not JSON
    serializable` (exit 2, nothing on stdout): the result's config echo holds frozensets."""
    db = str(tmp_path / "k.db")
    _three_users(db)
    for args in (("knowledge", "retrieve", "support", "where does Bob live?", "--user", "bob", "--json", "--db", db),
                 ("--db", db, "--json", "knowledge", "retrieve", "support", "where does Bob live?", "--user", "bob")):
        doc = json.loads(run(runner, *args).stdout)
        assert [f["fact_text"] for f in doc["facts"]] == ["Bob lives in Berlin"]
        assert doc["config_effective"]["extra_attribute_keys"] == []
        assert "Lisbon" not in json.dumps(doc) and "Madrid" not in json.dumps(doc)


# ----------------------------------------------------------------------------- F2: --llm-timeout
def _slow_server(delay: float):
    from knowledge.helpers import extract
    from knowledge.llm_server import LLMServer

    from oramem.testing import ScriptedLLM

    srv = LLMServer(ScriptedLLM({
        "event_emotion": {"emotion": "neutral", "intensity": 0.1, "energy": "low"},
        "extract": extract([("Alice", "person"), ("Lisbon", "place")], [("Alice", "Alice lives in Lisbon", "residence")]),
    }))
    srv.delay = delay
    return srv


async def test_a_provider_timeout_bounds_each_request_the_layer_makes():
    """`OpenAICompatibleProvider(timeout=...)` only filled in for a call without a timeout, and
    the knowledge layer passes every step's (extraction 30 s): the constructor's bounded nothing."""
    from knowledge.llm_server import LLMServer

    from oramem.knowledge import LLMTimeout, OpenAICompatibleProvider
    from oramem.knowledge.llm.tasks import build_messages
    from oramem.testing import ScriptedLLM

    srv = LLMServer(ScriptedLLM({"echo": {"ok": 1}}))
    srv.delay = 1.5
    try:
        p = OpenAICompatibleProvider(srv.base_url, "m", timeout=0.2, max_retries=0)
        with pytest.raises(LLMTimeout):
            await p.complete_async(build_messages("echo", {"x": 1}), timeout=30)
        # without a constructor timeout the call's own applies (the layer's step timeouts)
        p = OpenAICompatibleProvider(srv.base_url, "m", max_retries=0)
        assert p._timeout(30) == 30 and p._timeout(None) == 30.0
        with pytest.raises(LLMTimeout):
            await p.complete_async(build_messages("echo", {"x": 1}), timeout=0.2)
    finally:
        srv.close()


def test_llm_timeout_bounds_the_write(runner, tmp_path):
    """`oramem knowledge write ... --llm-timeout 1` against a server taking 8 s per reply
    succeeded after 17 s: the flag went to the provider, which the steps' own timeouts
    overrode. It now sets every step's timeout: the extraction fails as a timeout."""
    db = str(tmp_path / "k.db")
    srv = _slow_server(1.5)
    try:
        res = run(runner, "--db", db, "--embed-dim", "64", "knowledge", "write", "support", "I live in Lisbon",
                  "--speaker", "Alice", "--user", "alice", "--llm-base-url", srv.base_url, "--llm-model", "m",
                  "--llm-timeout", "0.3", expect=1)
        assert "success=False" in res.stdout and "extract: timed out after 0.3s" in res.stdout
        srv.delay = 0
        res = run(runner, "--db", db, "knowledge", "write", "support", "I live in Lisbon", "--speaker", "Alice",
                  "--user", "alice", "--llm-base-url", srv.base_url, "--llm-model", "m", "--llm-timeout", "20")
        assert "Alice lives in Lisbon" in res.stdout
    finally:
        srv.close()


def test_llm_timeout_where_no_llm_call_runs_is_refused(runner, tmp_path):
    """--llm-timeout with --background (the worker extracts) or without an endpoint (no
    reranker, deterministic jobs only) was accepted and ignored."""
    db = str(tmp_path / "k.db")
    _three_users(db)
    err = run(runner, "--db", db, "knowledge", "write", "support", "I live in Oslo", "--speaker", "Alice", "--user",
              "alice", "--background", "--llm-timeout", "5", expect=2).stderr
    assert "pass it to `oramem --db" in err and "kg worker`" in err
    assert json.loads(run(runner, "--db", db, "kg", "jobs", "status", "--json").stdout)["counts"]["pending"] == 0
    env = {"ORAMEM_LLM_BASE_URL": "", "ORAMEM_LLM_MODEL": ""}
    err = run(runner, "--db", db, "knowledge", "retrieve", "support", "where", "--llm-timeout", "5", env=env,
              expect=2).stderr
    assert "--llm-timeout bounds the reranker's LLM calls" in err
    err = run(runner, "--db", db, "knowledge", "jobs", "support", "--llm-timeout", "5", env=env, expect=2).stderr
    assert "--llm-timeout bounds the jobs' LLM calls" in err
    err = run(runner, "--db", db, "kg", "run-jobs", "--agent-id", "support", "--llm-timeout", "5", env=env,
              expect=2).stderr
    assert "--llm-timeout bounds the jobs' LLM calls" in err


# ----------------------------------------------------------------------------- F3: knowledge vectors on import
def _backup(runner, tmp_path, dim: int = 64) -> str:
    src = str(tmp_path / "src.db")
    _three_users(src, dim)
    out = str(tmp_path / "full.jsonl")
    run(runner, "--db", src, "export", "--out", out)
    return out


def _records(db: str) -> int:
    from oramem.sqlite._sqlite import sqlite3

    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM om_DEFAULT_records").fetchone()[0]


def test_a_backup_names_the_embedder_of_its_knowledge_vectors_and_a_new_file_takes_it(runner, tmp_path):
    """A backup of a store built with one embedder, imported into a new file that got the
    default embedder: the records were re-embedded, the knowledge rows' vectors written as
    they were (384-d in a 256-d store), `import` said "imported" and the next knowledge
    write failed in numpy (`matmul: ... size 256 is different from 384`)."""
    backup = _backup(runner, tmp_path, dim=64)
    first = json.loads(open(backup).readline())
    assert first["oramem_export"]["embedder"] == {"kind": "hash", "dimension": 64, "seed": 0}
    db = str(tmp_path / "copy.db")
    run(runner, "--db", db, "import", backup)
    with SQLiteMemoryStore(db) as store:  # the store the import made: the backup's embedder
        assert store.vector_dim == 64
        with KnowledgeMemory(store, None) as km:
            km.add_fact("support", "Bob", "Bob lives in Hamburg", subject_type="person", attribute_key="residence",
                        user_id="bob")
            assert [f.fact_text for f in km.get_all("support", user_id="bob")] == ["Bob lives in Hamburg"]


def test_knowledge_vectors_of_another_embedder_are_refused_before_anything_is_written(runner, tmp_path):
    backup = _backup(runner, tmp_path, dim=64)
    # another dimension, named by the flags of a new file
    db = str(tmp_path / "other-dim.db")
    err = run(runner, "--db", db, "--embed-dim", "32", "import", backup, expect=2).stderr
    assert "knowledge rows whose vectors were made by HashEmbedder(dim=64, seed=0)" in err
    assert "no record or knowledge row was written" in err and _records(db) == 0
    # the same dimension, another embedder (seed): vectors of another space, refused too
    db = str(tmp_path / "other-seed.db")
    with SQLiteMemoryStore(db, embedder=HashEmbedder(64, seed=1)) as store:
        store.add(["an unrelated memory"], "memory")
    err = run(runner, "--db", db, "import", backup, expect=2).stderr
    assert "this store embeds with HashEmbedder(dim=64, seed=1)" in err and _records(db) == 1
    # a file from before the header: its vectors' length is checked
    old = tmp_path / "old.jsonl"
    old.write_text("".join(open(backup).readlines()[1:]))
    db = str(tmp_path / "old.db")
    err = run(runner, "--db", db, "--embed-dim", "32", "import", str(old), expect=2).stderr
    assert "knowledge row(s) with 64-dimensional vectors; this store's vectors have 32 dimensions" in err
    assert _records(db) == 0
    # with the embedder that made them, it imports
    db = str(tmp_path / "right.db")
    assert "knowledge row(s)" in run(runner, "--db", db, "--embed-dim", "64", "import", str(old)).stdout


def test_import_knowledge_refuses_a_vector_of_another_length(tmp_path):
    """The Python path (`oramem.jsonl.import_knowledge`) checks the length too, before any row."""
    import sqlalchemy as sa

    from oramem import jsonl

    lines = [jsonl.ImportLine(1, "kg_row", {"table": "ENTITY", "row": {
        "id": "e1", "agent_id": "a", "canonical_key": "person:x", "display_name": "X", "entity_type": "person",
        "first_seen_at": "2026-01-01T00:00:00+00:00", "last_seen_at": "2026-01-01T00:00:00+00:00",
        "created_at": "2026-01-01T00:00:00+00:00", "embedding_vec": [0.1] * 8}})]
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'k.db'}")
    try:
        with pytest.raises(jsonl.JSONLError, match="8-dimensional embedding_vec; this store's vectors have 16"):
            jsonl.import_knowledge(engine, "DEFAULT", 16, lines, policy=None)
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM DEFAULT_KG_ENTITY")).scalar() == 0
    finally:
        engine.dispose()


# ----------------------------------------------------------------------------- F4: whose queued write
def test_kg_jobs_list_names_whose_write_each_job_is(runner, tmp_path):
    """`oramem kg jobs list` (and --json) named the agent of a queued write but not its user,
    though the worker runs it in that user's scope: an operator retrying a failed job could
    not tell whose it was."""
    db = str(tmp_path / "q.db")
    _three_users(db)
    run(runner, "--db", db, "knowledge", "write", "support", "My order is late", "--speaker", "Bob", "--user", "bob",
        "--background")
    run(runner, "--db", db, "knowledge", "write", "support", "Opening hours are 9 to 5", "--speaker", "Agent",
        "--background")
    jobs = json.loads(run(runner, "--db", db, "kg", "jobs", "list", "--json").stdout)
    assert [j["user_id"] for j in jobs] == ["bob", None]
    lines = run(runner, "--db", db, "kg", "jobs", "list").stdout.splitlines()
    assert "agent=support  user=bob  " in lines[0] and "agent=support  user=(shared)  " in lines[1]


# ----------------------------------------------------------------------------- F8: history without --user
def test_history_without_user_says_a_users_fact_is_read_with_user(runner, tmp_path):
    """`oramem knowledge history A F` of a user's fact said "no fact F for agent A", while
    `facts` says a user's facts are listed with --user: a newcomer thought the fact was gone."""
    db = str(tmp_path / "h.db")
    _three_users(db)
    facts = json.loads(run(runner, "--db", db, "knowledge", "facts", "support", "--user", "bob", "--json").stdout)
    fid = facts[0]["fact_id"]
    err = run(runner, "--db", db, "knowledge", "history", "support", fid, expect=1).stderr
    assert f"no fact {fid} for agent support in the shared knowledge (a user's facts are read with --user ID)" in err
    # another user's view: the plain answer (nothing there for her), no hint about scopes
    err = run(runner, "--db", db, "knowledge", "history", "support", fid, "--user", "alice", expect=1).stderr
    assert err.strip() == f"Error: no fact {fid} for agent support"
    out = run(runner, "--db", db, "knowledge", "history", "support", fid, "--user", "bob").stdout
    assert "Bob lives in Berlin" in out


# ----------------------------------------------------------------------------- F5: a failed extraction, completed
def test_a_failed_extraction_says_its_event_was_kept_and_reprocess_completes_it(runner, tmp_path):
    """A write whose extraction failed (an LLM down or replying garbage) said success=False
    and kept the event for `reprocess_event` (KC-7.3), which the CLI did not offer: the user
    wrote the message again, and the failed event stayed beside the new one."""
    from knowledge.helpers import extract
    from knowledge.llm_server import LLMServer

    from oramem.testing import ScriptedLLM

    reply: dict = {"extract": "Sure! The user lives somewhere nice."}
    srv = LLMServer(ScriptedLLM({"event_emotion": {"emotion": "neutral", "intensity": 0.1, "energy": "low"},
                                 "extract": lambda payload: reply["extract"]}))
    db = str(tmp_path / "r.db")
    llm = ["--llm-base-url", srv.base_url, "--llm-model", "m"]
    try:
        out = run(runner, "--db", db, "--embed-dim", "64", "knowledge", "write", "support", "I live in Basel",
                  "--speaker", "Alice", "--user", "alice", *llm, expect=1).stdout
        event = out.split()[1]
        assert f"kept      event {event} (extraction failed, nothing learned from it): complete it with " \
               f"`oramem --db {db} knowledge reprocess support {event} --user alice` once the LLM answers" in out
        err = run(runner, "--db", db, "knowledge", "reprocess", "support", event, *llm, expect=2).stderr
        assert "(a user's event is reprocessed with --user ID)" in err
        reply["extract"] = extract([("Alice", "person"), ("Basel", "place")], [("Alice", "Alice lives in Basel", "residence")])
        out = run(runner, "--db", db, "knowledge", "reprocess", "support", event, "--user", "alice", *llm).stdout
        assert out.startswith(f"event {event}  success=True") and "Alice lives in Basel" in out
        facts = json.loads(run(runner, "--db", db, "knowledge", "facts", "support", "--user", "alice", "--json").stdout)
        assert [f["fact_text"] for f in facts] == ["Alice lives in Basel"] and facts[0]["source_event_id"] == event
        err = run(runner, "--db", db, "knowledge", "reprocess", "support", event, "--user", "alice", *llm, expect=2).stderr
        assert "only extraction_failed events are reprocessed" in err
    finally:
        srv.close()


def test_check_finds_knowledge_vectors_of_another_dimension(runner, tmp_path):
    """A store an import filled with another embedder's knowledge vectors (before imports
    checked them) passed `oramem check`; its next knowledge write failed in numpy."""
    from oramem.sqlite._sqlite import sqlite3

    db = str(tmp_path / "c.db")
    _three_users(db, 64)
    out = run(runner, "--db", db, "check").stdout
    assert "DEFAULT knowledge vectors" in out and "0 not of the store's 64 dimensions" in out
    with sqlite3.connect(db) as conn:  # what such an import left: a 32-d vector in a 64-d store
        conn.execute("UPDATE DEFAULT_KG_FACT SET embedding_vec = zeroblob(128) WHERE id = "
                     "(SELECT min(id) FROM DEFAULT_KG_FACT)")
    res = run(runner, "--db", db, "check", expect=1)
    assert "FAIL  DEFAULT knowledge vectors" in res.stdout and "1 not of the store's 64 dimensions" in res.stdout
    assert "import the backup into a new --db file" in res.stdout
