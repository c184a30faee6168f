"""--store-strategy against a store built for another strategy: what the CLI says and does.

A keyword store's retrieval rows hold no vectors, so once it holds records no open can make
it vector or hybrid: the error says so in the CLI's flags (not ``CREATE_IF_NECESSARY`` or
``memory_store_id``, not ``RECREATE``, which would drop the records) and gives the copy that
works (export, then import into a new store, which embeds). A store that can be upgraded (a
vector store given keyword search, an empty keyword store given vectors) is told which
command upgrades it. A new keyword store resolves no embedder (as from Python)."""

from __future__ import annotations

import json
import shlex

import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore, StoreSettingsMismatch
from oramem.cli import cli, state
from oramem.types import SchemaPolicy

PYTHON_WORDS = ("CREATE_IF_NECESSARY", "RECREATE", "memory_store_id", "search_strategy", "schema_policy")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("ORAMEM_ONNX_MODEL", "ORAMEM_DB", "ORAMEM_STORE", "ORAMEM_EMBED_DIM", "ORAMEM_STRATEGY"):
        monkeypatch.delenv(name, raising=False)


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def no_default_model(monkeypatch):
    def refuse():
        raise AssertionError("a keyword store resolved the default embedding model")

    monkeypatch.setattr(state, "default_embedder", refuse)


def keyword_store(db: str, monkeypatch, *texts: str) -> None:
    no_default_model(monkeypatch)
    for text in texts:
        result = run("--db", db, "--store-strategy", "keyword", "add", text)
        assert result.exit_code == 0, result.output
        assert "Warning" not in result.output  # no model notice for a store that never embeds


def test_a_new_keyword_store_resolves_no_embedder(tmp_path, monkeypatch):
    db = str(tmp_path / "k.db")
    keyword_store(db, monkeypatch, "the passport is in the blue drawer")
    listed = json.loads(run("--db", db, "--json", "stores", "list").stdout)
    assert [(s["memory_store_id"], s["search_strategy"], s["vector_dim"]) for s in listed] == [("DEFAULT", "keyword", None)]
    hits = json.loads(run("--db", db, "--json", "search", "passport").stdout)
    assert [h["record"]["content"] for h in hits] == ["the passport is in the blue drawer"]


@pytest.mark.parametrize("command", [("search", "drawer"), ("list",), ("add", "one more note")])
@pytest.mark.parametrize("wanted", ["hybrid", "vector"])
def test_a_keyword_store_with_records_is_refused_with_the_copy_that_works(tmp_path, monkeypatch, command, wanted):
    db = str(tmp_path / "k.db")
    keyword_store(db, monkeypatch, "the passport is in the blue drawer")
    result = run("--db", db, "--store-strategy", wanted, *command)  # refused before any model is resolved
    assert result.exit_code == 1
    message = result.output
    assert f"--store-strategy {wanted}: store 'DEFAULT' was built for keyword search" in message
    assert "no open can make it" in message
    assert not [w for w in PYTHON_WORDS if w in message], message
    with SQLiteMemoryStore(db) as store:  # nothing was written or upgraded
        assert store.search_strategy.value == "keyword"
        assert [r.content for r in store.list("memory")] == ["the passport is in the blue drawer"]


def test_the_advised_copy_runs_and_the_copy_searches_by_vectors(tmp_path, monkeypatch):
    db = str(tmp_path / "k.db")
    keyword_store(db, monkeypatch, "the passport is in the blue drawer", "lunch with Ana on Friday")
    monkeypatch.undo()
    message = run("--db", db, "--store-strategy", "hybrid", "search", "drawer").output
    commands = [part for i, part in enumerate(message.split("`")) if i % 2]
    assert len(commands) == 2, message
    out = str(tmp_path / "copy.jsonl")
    for command in commands:
        argv = [out if word == "FILE" else "COPY" if word == "NEW" else word for word in shlex.split(command)]
        assert argv[0] == "oramem"
        result = run(*argv[1:3], "--embed-dim", "16", *argv[3:])
        assert result.exit_code == 0, result.output
    with SQLiteMemoryStore(db, memory_store_id="COPY") as copy:
        assert copy.search_strategy.value == "hybrid"
        assert copy.search("blue drawer", k=1, strategy="vector")[0][0].content == "the passport is in the blue drawer"


def test_an_upgradable_store_is_told_which_command_upgrades_it(tmp_path):
    db = str(tmp_path / "v.db")
    assert run("--db", db, "--store-strategy", "vector", "--embed-dim", "16", "add", "blue drawer").exit_code == 0
    refused = run("--db", db, "--store-strategy", "hybrid", "search", "drawer")
    assert refused.exit_code == 1
    assert "--store-strategy hybrid: store 'DEFAULT' was built for vector search" in refused.output
    assert "give --store-strategy hybrid to a command that writes" in refused.output
    assert not [w for w in PYTHON_WORDS if w in refused.output], refused.output
    assert run("--db", db, "--store-strategy", "hybrid", "add", "green lamp").exit_code == 0
    with SQLiteMemoryStore(db) as store:
        assert store.search_strategy.value == "hybrid"
        assert [r.content for r, _ in store.search("drawer", k=1, strategy="keyword")] == ["blue drawer"]
    per_call = run("--db", str(tmp_path / "v2.db"), "--store-strategy", "vector", "--embed-dim", "16", "add", "x")
    assert per_call.exit_code == 0
    refused = run("--db", str(tmp_path / "v2.db"), "search", "x", "--strategy", "keyword")
    assert refused.exit_code == 2
    assert "CREATE_IF_NECESSARY" not in refused.output and "a command that writes" in refused.output


def test_an_empty_keyword_store_becomes_hybrid_from_the_cli(tmp_path, monkeypatch):
    db = str(tmp_path / "e.db")
    keyword_store(db, monkeypatch, "temporary")
    with SQLiteMemoryStore(db) as store:
        store.delete("memory", store.list("memory")[0].id)
    monkeypatch.undo()
    assert run("--db", db, "--store-strategy", "hybrid", "--embed-dim", "16", "add", "blue drawer").exit_code == 0
    with SQLiteMemoryStore(db) as store:
        assert (store.search_strategy.value, store.vector_dim) == ("hybrid", 16)


@pytest.mark.parametrize("policy", [SchemaPolicy.REQUIRE_EXISTING, SchemaPolicy.CREATE_IF_NECESSARY])
def test_python_says_a_keyword_store_with_records_cannot_be_upgraded(tmp_path, policy):
    from oramem.embedders import HashEmbedder

    db = str(tmp_path / "p.db")
    with SQLiteMemoryStore(db, search_strategy="keyword") as store:
        store.add(["the passport is in the blue drawer"], "memory")
    with pytest.raises(StoreSettingsMismatch) as info:
        SQLiteMemoryStore(db, embedder=HashEmbedder(16), search_strategy="hybrid", schema_policy=policy)
    assert info.value.upgradable is False
    assert "RECREATE" not in str(info.value)
    assert "import them into another memory_store_id" in str(info.value)
    with SQLiteMemoryStore(db) as store:
        assert store.search_strategy.value == "keyword" and store.vector_dim is None
