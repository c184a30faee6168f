"""rek43: ``oramem reembed`` (SQLite) moves the knowledge tables' vectors to the new embedder.

Before rek43 a reembed re-embedded the store's retrieval rows only: every vector of the
knowledge tables (facts, entities, events, clusters, observations, intentions) stayed in the
old embedder's space, so the knowledge layer's semantic signals (an event intention's trigger,
entity resolution by embedding, clusters, observations) compared vectors of two spaces: noise
with the same dimension, a crash of ``retrieve`` with another. These tests build the same
knowledge (Alice's, Bob's and shared) twice: once with the old embedder, then re-embedded, and
once fresh with the new one; every vector must be what the fresh write stored, and no other
column of any row may change (each row keeps its user scope)."""

from __future__ import annotations

import numpy as np
import pytest

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.sqlite._sqlite import sqlite3
from oramem.sqlite.reembed import reembed_store
from oramem.testing import ScriptedLLM

from .helpers import NEUTRAL, Clock, add_all, extract

ALICE, BOB = "alice-5e1f", "bob-77c0"
OLD, NEW = HashEmbedder(64, seed=0), HashEmbedder(48, seed=7)
VECTOR_COLUMNS = {"embedding_vec", "trigger_embedding_vec"}
#: per knowledge table, the columns that name a row the same way in two builds (ids are random)
NATURAL = {
    "EVENT": ("user_id", "text"),
    "FACT": ("user_id", "fact_text"),
    "ENTITY": ("user_id", "canonical_key"),
    "INTENTION": ("user_id", "trigger_condition"),
    "SESSION_OBSERVATION": ("user_id", "content"),
    "META_OBSERVATION": ("user_id", "observation_type", "title"),
    "CLUSTER": ("user_id", "label"),
}


def _llm() -> ScriptedLLM:
    return ScriptedLLM({"event_emotion": NEUTRAL, "reconcile": add_all, "resolve_entity": {"match_index": 0}})


def _build(path: str, embedder) -> None:
    """Alice's and Bob's knowledge (a write with an intention and a session observation, an
    API fact, a cluster with a summary for Alice and one with the mean vector for Bob, a
    consolidation's pattern for Alice) and a shared fact."""
    clock = Clock()
    store = SQLiteMemoryStore(path, embedder=embedder, clock=clock, search_strategy="hybrid")
    llm = _llm()
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False), clock=clock)
    try:
        for user, name, city in ((ALICE, "Alice", "Oporto"), (BOB, "Bob", "Lima")):
            for i, thing in enumerate(("green tea every morning", "long walks by the river", "old maps")):
                llm.route("extract", extract(
                    [(name, "person"), (city, "place")], [(name, f"{name} loves {thing}")], [(name, city, "visits")],
                    intentions=[{"trigger_type": "event", "trigger_condition": f"{name} mentions {city} trains {i}",
                                 "intended_action": "suggest the night train"}],
                    observations=[{"content": f"{name} talks about {city} and {thing}", "topic": "travel"}]))
                km.write("a1", f"I love {thing} in {city}", name, session_id=f"s-{user}", user_id=user)
                clock.advance(minutes=1)
            km.add_fact("a1", name, f"{name}'s code word is {name.lower()}code", subject_type="person", user_id=user)
            if user == ALICE:
                llm.route("cluster_summary", {"summary": "Alice's quiet pleasures."})
            else:
                llm.route("cluster_summary", RuntimeError("down"))  # the mean of the facts' vectors
            assert km.cluster_facts("a1", user_id=user).clusters_created >= 1
        llm.route("consolidate", {"observations": [{
            "type": "pattern", "title": "Morning rituals", "text": "Alice starts each day with tea.",
            "supporting_event_indices": [1], "supporting_fact_indices": [1]}]})
        assert km.consolidate("a1", user_id=ALICE).observations_created == 1
        km.add_fact("a1", "Office", "The office is in Berlin", subject_type="place")
    finally:
        km.close()
        store.close()


def _rows(path: str) -> dict[str, list[dict]]:
    """Every row of every knowledge table, by table suffix."""
    out: dict[str, list[dict]] = {}
    conn = sqlite3.connect(path)
    try:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'DEFAULT_KG_%'")]
        for name in sorted(names):
            cur = conn.execute(f'SELECT * FROM "{name}" ORDER BY 1')
            cols = [d[0] for d in cur.description]
            out[name[len("DEFAULT_KG_"):]] = [dict(zip(cols, row)) for row in cur.fetchall()]
    finally:
        conn.close()
    return out


def _vectors(rows: dict[str, list[dict]]) -> dict[tuple, np.ndarray]:
    out = {}
    for table, key in NATURAL.items():
        for row in rows[table]:
            for col in VECTOR_COLUMNS & row.keys():
                if row[col] is not None:
                    k = (table, col, *(row[c] for c in key))
                    assert k not in out, k
                    out[k] = np.frombuffer(row[col], dtype="<f4")
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("rek43")
    old_path, fresh_path = str(d / "old.db"), str(d / "fresh.db")
    _build(old_path, OLD)
    _build(fresh_path, NEW)
    before = _rows(old_path)
    result = reembed_store(old_path, NEW)
    return old_path, before, _rows(old_path), _rows(fresh_path), result


def test_every_knowledge_vector_is_what_a_fresh_write_with_the_new_embedder_stores(built):
    _, before, after, fresh, result = built
    want, got = _vectors(fresh), _vectors(after)
    tables = {k[0] for k in want}
    assert tables == set(NATURAL), tables  # the build made a vector in every table that has one
    assert got.keys() == want.keys()
    wrong = sorted((k for k in want if got[k].shape != want[k].shape or not np.allclose(got[k], want[k], atol=1e-6)), key=repr)
    assert wrong == [], wrong[:5]
    assert result.knowledge == len(want)
    # and each was the old embedder's before: the reembed changed it
    old = _vectors(before)
    assert all(old[k].shape == (64,) for k in old) and old.keys() == want.keys()


def test_a_reembed_changes_no_other_column_of_any_knowledge_row(built):
    _, before, after, _, _ = built
    assert before.keys() == after.keys()
    for table in before:
        strip = [{k: v for k, v in row.items() if k not in VECTOR_COLUMNS} for row in before[table]]
        assert strip == [{k: v for k, v in row.items() if k not in VECTOR_COLUMNS} for row in after[table]], table
    users = {row["user_id"] for row in after["FACT"]}
    assert users == {ALICE, BOB, None}


def test_an_event_intention_fires_on_a_paraphrase_after_the_reembed(built, tmp_path):
    """The semantic signal the knowledge layer computes from its own vectors: Alice's event
    intention fires when her query is close to its trigger (KC-5.11), with the new embedder."""
    import shutil

    path = str(tmp_path / "copy.db")
    shutil.copy(built[0], path)
    store = SQLiteMemoryStore(path, embedder=NEW, search_strategy="hybrid")
    km = KnowledgeMemory(store, _llm(), config=KnowledgeConfig(enable_reranker=False))
    try:
        result = km.retrieve("a1", "Alice mentions Oporto trains 2", user_id=ALICE)
        assert "Alice mentions Oporto trains 2" in [i.trigger_condition for i in result.intentions]
        assert all(i.user_id == ALICE for i in result.intentions)
    finally:
        km.close()
        store.close()


def test_same_dimension_new_space_too(tmp_path):
    """Another embedder of the same dimension: no crash would tell; the vectors must move."""
    path = str(tmp_path / "same.db")
    clock = Clock()
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(32, seed=0), clock=clock)
    km = KnowledgeMemory(store, _llm(), config=KnowledgeConfig(enable_reranker=False), clock=clock)
    km.add_fact("a1", "Alice", "Alice drinks green tea every morning", subject_type="person", user_id=ALICE)
    km.close()
    store.close()
    new = HashEmbedder(32, seed=3)
    reembed_store(path, new)
    (blob,) = [row["embedding_vec"] for row in _rows(path)["FACT"]]
    want = new.embed(["Alice: Alice drinks green tea every morning"])[0]
    assert np.allclose(np.frombuffer(blob, dtype="<f4"), want, atol=1e-6)


