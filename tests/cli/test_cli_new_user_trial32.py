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
