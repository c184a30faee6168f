"""KC-3.8, adversarially: a retrieve by user B is not shaped by user A's knowledge at all. Two
stores get the same shared and B facts, written at the same clock readings; one of them also
gets A's facts about the same subjects (same names, attributes, values, words, relations).
B's retrieves, and retrieves of the shared scope only, answer the same in both: the facts
(text, entity, attribute, owner, score), the expansion (terms, primed entities), the context
text, the candidate count and the warnings. With a keyword index they do not (the hybrid case,
an expected failure): bm25's statistics are the whole index's, every user's rows."""

from __future__ import annotations

import numpy as np
import pytest

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.testing import HashEmbedder, ScriptedLLM

from .helpers import Clock

NEUTRAL = {"emotion": "neutral", "intensity": 0.2, "energy": "medium"}
SUBJECTS = [("Hotel Aurora", "place"), ("Ana Souza", "person"), ("Blue Bistro", "place")]
ATTRIBUTES = [("opening_time", ["7am", "8am", "noon"]), ("door_code", ["4471", "1234"]),
              ("favourite_dish", ["bacalhau", "pasta", "bacalhau"]), ("city", ["Porto", "Lisbon"])]
QUERIES = ["what about the Hotel Aurora?", "when does Hotel Aurora open", "Ana Souza favourite dish",
           "door code", "Blue Bistro in Porto", "tell me about Ana"]


def _open(tmp_path, name: str, clock: Clock, strategy: str = "vector"):
    store = SQLiteMemoryStore(str(tmp_path / f"{name}.db"), embedder=HashEmbedder(384), clock=clock,
                              search_strategy=strategy)
    km = KnowledgeMemory(store, ScriptedLLM({"event_emotion": NEUTRAL}),
                         config=KnowledgeConfig(enable_reranker=False), clock=clock)
    return store, km


def _answer(result) -> tuple:
    facts = sorted((-round(f.score, 9), f.fact_text, f.entity_key, f.attribute_key, f.user_id,
                    tuple(sorted((k, round(v, 9)) for k, v in f.scores.items()))) for f in result.facts)
    expanded = result.expanded
    return (facts, list(expanded.expanded_terms), sorted(expanded.primed_entities), result.context,
            result.total_candidates, sorted(result.warnings))


@pytest.mark.parametrize("seed, strategy", [
    (0, "vector"), (1, "vector"),
    # the keyword signal's scores are bm25's, whose statistics (rows holding a term, average row
    # length) are the whole FTS index's, every user's rows: alice's facts move bob's keyword
    # scores and so his ranking and cut (known, not fixed: see the audit7 report)
    pytest.param(0, "hybrid", marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason="bm25 statistics span every user's rows")),
])
def test_a_users_knowledge_never_shapes_another_users_retrieve(tmp_path, seed, strategy):
    rng = np.random.default_rng(seed)
    clocks = [Clock(), Clock()]
    with_a = _open(tmp_path, "with_a", clocks[0], strategy)
    without_a = _open(tmp_path, "without_a", clocks[1], strategy)
    try:
        writes = []
        for i in range(24):
            subject, kind = SUBJECTS[int(rng.integers(0, len(SUBJECTS)))]
            attribute, values = ATTRIBUTES[int(rng.integers(0, len(ATTRIBUTES)))]
            value = values[int(rng.integers(0, len(values)))]
            owner = [None, "bob", "alice", "alice"][int(rng.integers(0, 4))]
            text = f"{subject} {attribute.replace('_', ' ')} is {value}" + (" (private)" if owner == "alice" else "")
            writes.append((owner, subject, kind, attribute, value, text))
        # A's relations between the same subjects too (expansion reads edges)
        writes.append(("alice", "Hotel Aurora", "place", "rel", "Blue Bistro", ""))
        for owner, subject, kind, attribute, value, text in writes:
            for clock in clocks:
                clock.advance(minutes=7)
            targets = [with_a] if owner == "alice" else [with_a, without_a]
            for _, km in targets:
                if attribute == "rel":
                    km.add_relation("concierge", subject, value, "near", source_type=kind, target_type="place",
                                    user_id=owner)
                else:
                    km.add_fact("concierge", subject, text, subject_type=kind, attribute_key=attribute, value=value,
                                user_id=owner)
        for clock in clocks:
            clock.advance(hours=2)
        compared = 0
        for query in QUERIES:
            for user in ("bob", None):
                got = _answer(with_a[1].retrieve("concierge", query, user_id=user))
                want = _answer(without_a[1].retrieve("concierge", query, user_id=user))
                assert got == want, (query, user)
                assert not any(owner == "alice" for *_, owner, _ in got[0])
                assert "private" not in got[3]
                compared += bool(got[0])
        assert compared >= 6  # most retrieves found facts
    finally:
        for store, km in (with_a, without_a):
            km.close()
            store.close()


def test_another_users_attribute_keys_never_filter_a_readers_aggregation(tmp_path):
    """KC-5.2's aggregation filters a pattern query by an active attribute key named in the
    query. The registry is the agent's (one row per key for every user), so Alice's private
    facts alone made ``door_code`` active, and Bob's "door code of the places" was planned
    with ``attribute_filter="door_code"``: his plan named her key and his answer lost every
    place fact of his and the shared scope (none carries it). A key now filters a reader's
    pattern query only when a fact the reader may see carries it; Alice's own aggregation
    still uses it."""
    def answer(with_alice: bool, user):
        clock = Clock()
        store, km = _open(tmp_path, f"keys_{with_alice}_{user}", clock)
        try:
            km.add_fact("concierge", "Hotel Aurora", "Hotel Aurora opens at 7", subject_type="place",
                        attribute_key="opening_time", value="7")
            km.add_fact("concierge", "Blue Bistro", "Blue Bistro is in Porto", subject_type="place",
                        attribute_key="city", value="Porto", user_id="bob")
            if with_alice:  # three sightings: the key is promoted to active (attribute_promotion_threshold)
                for i, place in enumerate(["Alice's flat", "Alice's office", "Alice's gym"]):
                    clock.advance(minutes=1)
                    km.add_fact("concierge", place, f"{place} door code is 44{i}", subject_type="place",
                                attribute_key="door_code", value=f"44{i}", user_id="alice")
            clock.advance(hours=1)
            result = km.retrieve("concierge", "door code of the places", user_id=user)
            return result.plan.pattern_queries, sorted(f.fact_text for f in result.facts)
        finally:
            km.close()
            store.close()

    for user in ("bob", None):
        assert answer(True, user) == answer(False, user), user
        assert answer(True, user)[1], user  # the readers' place facts are found
    patterns, facts = answer(True, "alice")
    assert [p.attribute_filter for p in patterns] == ["door_code"]
    assert facts == ["Alice's flat door code is 440", "Alice's gym door code is 442", "Alice's office door code is 441"]
