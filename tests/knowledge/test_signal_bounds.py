"""The semantic and event signals pass ``max_distance = 1 - min_similarity`` to their store
searches, so the store reads no record the signal would drop; the retrieve answers exactly as
without the bound (the store's bounded answer is a prefix of the unbounded one), for every
user of a shared agent, with events and facts on both sides of the similarity floor."""

from __future__ import annotations


import pytest

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.knowledge.read import signals
from oramem.testing import HashEmbedder

from .helpers import Clock, adding_llm, extract

USERS = ("alice", "bob", None)


@pytest.fixture
def km(tmp_path):
    clock = Clock()
    store = SQLiteMemoryStore(str(tmp_path / "b.db"), embedder=HashEmbedder(64), clock=clock, search_strategy="hybrid")
    llm = adding_llm()
    k = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False, dedup_similarity=1.01, min_similarity=0.2),
                        clock=clock)
    messages = ["Ana rode her bike to the lake", "the lake was cold today", "Ana likes tea", "quarterly tax forms",
                "bike repair shop opens at nine", "a recipe for lentil soup"]
    for i, text in enumerate(messages * 2):
        user = USERS[i % 3]
        llm.route("extract", extract(entities=[("Ana", "person")], facts=[("Ana", f"Ana {text} {i}")]))
        k.write("desk", text, "Ana", user_id=user)
        clock.advance(hours=3)
    yield k
    k.close()
    store.close()


def _answer(km, query, user):
    r = km.retrieve("desk", query, user_id=user, config_overrides={"track_usage": False})
    return ([(f.fact_id, round(f.score, 12), sorted(f.scores)) for f in r.facts],
            [(e["event_id"], round(e["score"], 12)) for e in r.events])


def test_the_bounds_change_no_answer(km, monkeypatch):
    store = km.runtime.store
    real = store.search
    returned = {"bounded": 0, "unbounded": 0}
    mode = ["bounded"]

    def counting(*a, **kw):
        found = real(*a, **kw)
        returned[mode[0]] += len(found)
        return found

    events = facts = 0
    for query in ("Ana bike lake", "tax forms", "soup recipe", "what does Ana like?"):
        for user in USERS:
            monkeypatch.setattr(store, "search", counting)
            mode[0] = "bounded"
            got = _answer(km, query, user)
            monkeypatch.setattr(signals, "below_similarity", lambda m: 2.0)  # no bound: every hit read
            mode[0] = "unbounded"
            want = _answer(km, query, user)
            monkeypatch.undo()
            assert got == want, (query, user)
            events += len(got[1])
            facts += len(got[0])
    assert events and facts  # events and facts on the answer's side of the floor
    assert returned["unbounded"] > returned["bounded"]  # and hits beyond it, which the bound left unread


def test_both_vector_signals_pass_the_similarity_floor_as_the_bound(km, monkeypatch):
    calls = []
    real = km.runtime.store.search

    def counting(*a, **kw):
        found = real(*a, **kw)
        calls.append((kw.get("record_types"), kw.get("max_distance"), len(found)))
        return found

    monkeypatch.setattr(km.runtime.store, "search", counting)
    km.retrieve("desk", "quarterly tax forms", user_id="alice")
    vector = [c for c in calls if c[1] is not None]
    assert {tuple(c[0]) for c in vector} == {("fact",), ("message",)}
    assert all(abs(c[1] - 0.8) < 1e-6 for c in vector)
