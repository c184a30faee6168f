"""Issue 25 item 6: retrieve's read statements are built once per table set and shape
(``reads.cached_stmt``) and live beyond one call. These tests act as user B (and as the
shared scope) right after user A filled the cache, in one store and across two stores, and
check that no cached statement holds a value (an agent, a user, a time): values are bound per
execution."""

from __future__ import annotations

from datetime import datetime

import pytest

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.knowledge.db import queries as reads
from oramem.testing import HashEmbedder, ScriptedLLM

from .helpers import Clock, write_keeper

NEUTRAL = {"emotion": "neutral", "intensity": 0.2, "energy": "medium"}


def _add_all(payload):
    return {"decisions": [{"new_fact_index": f["index"], "action": "ADD"} for f in payload["new_facts"]]}


def _km(path: str, clock: Clock) -> tuple[SQLiteMemoryStore, KnowledgeMemory, ScriptedLLM]:
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(384), clock=clock, search_strategy="hybrid")
    llm = ScriptedLLM({"event_emotion": NEUTRAL, "reconcile": _add_all, "resolve_entity": {"match_index": 0}})
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False, dedup_similarity=1.01), clock=clock)
    return store, km, llm


def _load(km: KnowledgeMemory, llm: ScriptedLLM, clock: Clock, user: str | None, who: str, secret: str) -> None:
    # a subject with facts, a friend with facts and an edge between them: graph BFS and
    # spreading activation both run (the cached statements are those of _graph and _spread)
    write_keeper(km, llm, clock, user, who, secret, f"{who} told me about {secret}")


def _seen(km: KnowledgeMemory, query: str, user: str | None) -> tuple[set, str]:
    r = km.retrieve("desk", query, user_id=user)
    return {f.user_id for f in r.facts}, r.context + " ".join(f["fact_id"] for f in r.graph.facts)


@pytest.mark.parametrize("order", [("alice", "bob", None), (None, "bob", "alice"), ("bob", "alice", None)])
def test_cached_statements_never_carry_one_users_rows_to_another(tmp_path, order):
    clock = Clock()
    stores = []
    try:
        kms = []
        for name in ("one.db", "two.db"):  # two stores in one process share nothing either
            store, km, llm = _km(str(tmp_path / name), clock)
            stores.append((store, km))
            _load(km, llm, clock, "alice", "Alice", f"ruby-{name}")
            _load(km, llm, clock, "bob", "Bob", f"opal-{name}")
            _load(km, llm, clock, None, "Hotel", f"key-{name}")
            kms.append((name, km))
        for _ in range(2):
            for name, km in kms:
                for user in order:
                    users, text = _seen(km, "what does Alice keep, what does Bob keep, where is the Hotel key?", user)
                    assert users <= {None, user}, (name, user, users)
                    other = {"ruby": "alice", "opal": "bob"}
                    for word, owner in other.items():
                        if owner != user:
                            assert word not in text, (name, user, word)
                    for other_name, _ in kms:  # never a row of the other store
                        if other_name != name:
                            assert f"-{other_name}" not in text, (name, user)
                    if user is not None:  # her own rows and the shared ones are found
                        mine = "ruby" if user == "alice" else "opal"
                        assert f"{mine}-{name}" in text and f"key-{name}" in text, (name, user, text)
        assert reads._STMTS, "retrieve cached no statement: the test no longer covers the cache"
    finally:
        for store, km in stores:
            km.close()
            store.close()


def test_no_cached_statement_holds_a_value(tmp_path):
    """A cached statement keeps structure only: every bound value is None or a constant of
    the SQL itself (the walk's hop 0 and start strength, the graph's hop numbers 0-2 and 9,
    the ':' of an entity key, the expansion's LIMIT 200), never an agent, a user, a time or a threshold."""
    clock = Clock()
    store, km, llm = _km(str(tmp_path / "t.db"), clock)
    try:
        _load(km, llm, clock, "alice", "Alice", "ruby")
        for user in ("alice", None):
            km.retrieve("desk", "what does Alice keep?", user_id=user)
    finally:
        km.close()
        store.close()
    seen = 0
    for per in list(reads._STMTS.values()):
        for stmt in per.values():
            seen += 1
            for name, value in stmt.compile().params.items():
                assert value is None or value == ":" or (not isinstance(value, (str, datetime)) and value in (0, 1, 2, 9, 1.0, 200)), \
                    (name, value)
    assert seen
