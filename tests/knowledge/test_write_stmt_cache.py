"""Issue 25 item 6: the write path's INSERT/UPDATE statements are built once per table and
shape (``oramem.knowledge.db.dml``, ``reads.cached_stmt``) and reused by every later write.
Three scopes of one agent (alice, bob, the shared one) write about the same people, so the
entity, relationship and count statements cached by one scope's write are executed for the
next with the same keys (``person:ana``): each scope's rows must change, and only its own
(a statement that kept the first writer's user would update her rows for everybody)."""

from __future__ import annotations

import pytest

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.knowledge.db import queries as reads
from oramem.sqlite._sqlite import sqlite3
from oramem.testing import HashEmbedder, ScriptedLLM

from .helpers import Clock, extract, reconcile

NEUTRAL = {"emotion": "neutral", "intensity": 0.2, "energy": "medium"}


def _add_all(payload):
    return {"decisions": [{"new_fact_index": f["index"], "action": "ADD"} for f in payload["new_facts"]]}


def _rows(path, sql):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("order", [("alice", "bob", None), (None, "alice", "bob"), ("bob", None, "alice")])
def test_cached_write_statements_change_only_the_writers_rows(tmp_path, order):
    path = str(tmp_path / "kg.db")
    clock = Clock()
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(384), clock=clock)
    llm = ScriptedLLM({"event_emotion": NEUTRAL, "reconcile": _add_all, "resolve_entity": {"match_index": 0}})
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False, dedup_similarity=1.01), clock=clock)
    seen_at = {}
    try:
        # round 1: every scope creates Ana and Ben, one fact about Ana and their friendship
        for user in order:
            llm.route("extract", extract(entities=[("Ana", "person"), ("Ben", "person")],
                                         facts=[("Ana", f"Ana lives in city-{user}", "residence")],
                                         relations=[("Ana", "Ben", "friend")]))
            km.write("desk", f"Ana is Ben's friend ({user})", "Pedro", user_id=user)
            clock.advance(minutes=1)
        assert reads._STMTS, "the write cached no statement: the test no longer covers the cache"
        # round 2: only the first scope writes again; its entity rows are touched, its fact is
        # superseded, its edge reinforced, its count recounted; the others keep theirs
        first = order[0]
        llm.route("extract", extract(entities=[("Ana", "person"), ("Ben", "person")],
                                     facts=[("Ana", f"Ana moved to town-{first}", "residence")],
                                     relations=[("Ana", "Ben", "friend")]))
        llm.route("reconcile", reconcile(("UPDATE", 1, 1)))
        when = clock.advance(minutes=5)
        km.write("desk", f"Ana moved ({first})", "Pedro", user_id=first)
        seen_at[first] = when
    finally:
        km.close()
        store.close()

    entities = _rows(path, 'SELECT user_id, canonical_key, fact_count, last_seen_at FROM "DEFAULT_KG_ENTITY" '
                           "WHERE canonical_key = 'person:ana'")
    by_user = {u: (n, last) for u, _, n, last in entities}
    assert set(by_user) == set(order), entities
    for user in order:
        n, last = by_user[user]
        assert n == 2, (user, entities)  # the residence fact (the first scope's latest) and the friendship's mirror fact
        touched = last.startswith(seen_at[first].strftime("%Y-%m-%dT%H:%M"))
        assert touched == (user == first), (user, last, entities)

    facts = _rows(path, 'SELECT user_id, fact_text, valid_to FROM "DEFAULT_KG_FACT" ORDER BY user_id, fact_text')
    current = {(u, text) for u, text, valid_to in facts if valid_to is None}
    for user in order[1:]:  # the other scopes' facts are as round 1 left them
        assert {text for u, text in current if u == user} == {f"Ana lives in city-{user}", "Ben is Ana's friend"}, facts
    assert {text for u, text in current if u == first} == {f"Ana moved to town-{first}", "Ben is Ana's friend"}, facts
    closed = {(u, text) for u, text, valid_to in facts if valid_to is not None}
    assert (first, f"Ana lives in city-{first}") in closed and {u for u, _ in closed} == {first}, facts

    edges = _rows(path, 'SELECT user_id, strength, rel_type FROM "DEFAULT_KG_RELATIONSHIP"')
    assert len(edges) == 3, edges  # one friendship per scope
    strength = {u: s for u, s, _ in edges}
    assert set(strength) == set(order), edges
    assert all(strength[first] > strength[u] for u in order[1:]), edges  # reinforced once, the others never
    assert len({strength[u] for u in order[1:]}) == 1, edges


def test_informed_extraction_and_reconciliation_show_only_the_writers_facts(tmp_path):
    """One shared agent and thread; alice and bob each know Ana. Bob's write primes Ana in
    his scope (informed extraction's searches and the read of their facts run in one trip,
    as do reconciliation's): the extract and reconcile prompts carry his facts about Ana,
    never alice's, and his write changes none of her rows."""
    clock = Clock()
    store = SQLiteMemoryStore(str(tmp_path / "kg.db"), embedder=HashEmbedder(384), clock=clock)
    llm = ScriptedLLM({"event_emotion": NEUTRAL, "resolve_entity": {"match_index": 0}})
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False, dedup_similarity=1.01), clock=clock)
    try:
        for user, secret in (("alice", "ruby"), ("bob", "opal")):
            llm.route("extract", extract(entities=[("Ana", "person")],
                                         facts=[("Ana", f"Ana keeps the {secret} in the drawer", "keeps")]))
            km.write("desk", f"Ana keeps the {secret} in the drawer", "Pedro", user_id=user, session_id="shared")
            clock.advance(minutes=1)
        before = {f.fact_id: f.status for f in km.get_all("desk", user_id="alice")}
        llm.calls.clear()
        llm.route("extract", extract(entities=[("Ana", "person")], facts=[("Ana", "Ana keeps the jade in the drawer", "keeps")]))
        llm.route("reconcile", reconcile(("UPDATE", 1, 1)))
        km.write("desk", "Ana keeps the jade in the drawer now", "Pedro", user_id="bob", session_id="shared")
        extract_prompts = " ".join(str(p) for p in llm.calls_for("extract"))
        reconcile_prompts = " ".join(str(p) for p in llm.calls_for("reconcile"))
        assert "opal" in extract_prompts and "opal" in reconcile_prompts  # his own facts were shown
        assert "ruby" not in extract_prompts and "ruby" not in reconcile_prompts
        assert {f.fact_id: f.status for f in km.get_all("desk", user_id="alice")} == before
        assert "Ana keeps the ruby in the drawer" in {f.fact_text for f in km.get_all("desk", user_id="alice")}
    finally:
        km.close()
        store.close()
