"""What a new user tripped on in trial 32 (the knowledge layer from the README and docs/: one
support agent, three users, an OpenAI-compatible endpoint): `oramem knowledge retrieve --json`
failed on its own config echo, `--llm-timeout` (and `OpenAICompatibleProvider(timeout=...)`)
bounded nothing, and a backup's knowledge vectors went into a store of another embedder."""

from __future__ import annotations

import json

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
