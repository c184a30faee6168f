"""rek47: a KnowledgeMemory opened before another process's ``reembed`` (SQLite).

red40 made a *store object* opened before the move refuse what its embedder would embed, and
rek43 moved the knowledge tables' vectors with the store's. A KnowledgeMemory kept embedding
with its own (old) embedder all the same: its writes hand the store *explicit* vectors
(``AddRequest.embedded`` is False, so the store checked nothing), it writes entity / fact /
event / intention / observation vectors straight into the knowledge tables, and its
retrieve compares old-space query vectors with the re-embedded ones. Same dimension: nothing
said so, and Bob's new facts were lost to every later search.

Now its store calls carry its embedder's identity (``vectors_made_by``) and its writes of
knowledge vectors without a store record check the catalog in their transaction: the
embedding work is refused with ``StoreSettingsMismatch`` naming both embedders, nothing is
written anywhere; its reads and what needs no embedder keep working; a KnowledgeMemory
opened after the move works. The refusal names no user and no record."""

from __future__ import annotations

import subprocess
import sys

import pytest

from oramem import SQLiteMemoryStore, StoreSettingsMismatch
from oramem.embedders import HashEmbedder
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.sqlite._sqlite import sqlite3
from oramem.sqlite.reembed import reembed_store
from oramem.testing import ScriptedLLM

from .helpers import NEUTRAL, Clock, add_all, extract

ALICE, BOB = "alice-4f7a", "bob-9c21"
OLD, NEW = HashEmbedder(32, seed=0), HashEmbedder(32, seed=7)  # same dimension: the silent case
ALICE_WORDS = ("warfarin", "Oporto", "Alice")

_REEMBED = (
    "import sys; from oramem.sqlite.reembed import reembed_store; from oramem.embedders import HashEmbedder; "
    "reembed_store(sys.argv[1], HashEmbedder(32, seed=7))"
)


def _llm() -> ScriptedLLM:
    return ScriptedLLM({"event_emotion": NEUTRAL, "reconcile": add_all, "resolve_entity": {"match_index": 0},
                        "cluster_summary": {"summary": "Bob's trains."}})


def _open(path: str, embedder, llm: ScriptedLLM, clock: Clock) -> tuple[SQLiteMemoryStore, KnowledgeMemory]:
    store = SQLiteMemoryStore(path, embedder=embedder, clock=clock, search_strategy="hybrid")
    return store, KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False), clock=clock)


def _seed(km: KnowledgeMemory, llm: ScriptedLLM, clock: Clock) -> None:
    llm.route("extract", extract([("Alice", "person"), ("Oporto", "place")],
                                 [("Alice", "Alice takes warfarin")], [("Alice", "Oporto", "lives_in")]))
    km.write("a1", "I take warfarin, I live in Oporto", "Alice", session_id="s-alice", user_id=ALICE)
    clock.advance(minutes=1)
    llm.route("extract", extract([("Bob", "person")], [("Bob", "Bob likes steam trains")]))
    km.write("a1", "I like steam trains", "Bob", session_id="s-bob", user_id=BOB)
    clock.advance(minutes=1)


def _dump(path: str) -> dict[str, list[tuple]]:
    """Every row of every table of the file (store records, retrieval rows, catalog,
    knowledge tables), by table."""
    conn = sqlite3.connect(path)
    try:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {n: sorted(conn.execute(f'SELECT * FROM "{n}"').fetchall(), key=repr) for n in names}
    finally:
        conn.close()


def _refused(call, what: str) -> str:
    with pytest.raises(StoreSettingsMismatch, match=what) as err:
        call()
    text = str(err.value)
    assert "HashEmbedder(dim=32, seed=0)" in text and "HashEmbedder(dim=32, seed=7)" in text, text
    assert "KnowledgeMemory" in text and "open a new store object with embedder=HashEmbedder(32, seed=7)" in text, text
    assert not any(w in text for w in ALICE_WORDS + (ALICE, BOB)), text  # names no user, no record
    return text


def test_a_knowledge_memory_opened_before_anothers_reembed_refuses_its_embedding_work(tmp_path):
    path = str(tmp_path / "m.db")
    clock, llm = Clock(), _llm()
    store, km = _open(path, OLD, llm, clock)  # Bob's worker: opened, used
    try:
        _seed(km, llm, clock)
        # another store object (the operator's `oramem reembed`) moves the store to NEW
        reembed_store(path, NEW)
        before = _dump(path)

        # a write with a new subject: no store search before the commit; its fact record is refused
        llm.route("extract", extract([("Bob", "person"), ("Lima", "place")], [("Bob", "Bob moved to Lima")]))
        _refused(lambda: km.write("a1", "I moved to Lima", "Bob", session_id="s-bob", user_id=BOB),
                 "nothing was (written|searched)")
        _refused(lambda: km.add_fact("a1", "Carol", "Carol sells maps", subject_type="person", user_id=BOB),
                 "nothing was written")
        # a known subject: its store search by the old-space vector is refused first
        _refused(lambda: km.add_fact("a1", "Bob", "Bob rides diesel trains", subject_type="person", user_id=BOB),
                 "nothing was (searched|written)")
        _refused(lambda: km.retrieve("a1", "steam trains", user_id=BOB), "nothing was searched")
        _refused(lambda: km.cluster_facts("a1", user_id=BOB), "nothing was written")
        _refused(lambda: km.check_contradiction("a1", "Always answer in French", user_id=BOB), "nothing was compared")
        assert _dump(path) == before  # nothing anywhere: store records, retrieval rows, knowledge rows

        # what needs no embedding still works through the same objects
        facts = km.get_all("a1", user_id=BOB)
        assert [f.fact_text for f in facts] == ["Bob likes steam trains"]
        assert km.get("a1", facts[0].id, user_id=BOB).fact_text == "Bob likes steam trains"
        assert {e.canonical_key for e in km.entities("a1", user_id=BOB)} >= {"person:bob"}
        assert [r.id for r, _ in store.search("steam", k=3, user_id=BOB, record_types=["fact"], strategy="keyword")] == [facts[0].id]
    finally:
        km.close()
        store.close()

    # a KnowledgeMemory opened after the move, with the store's new embedder, works; Alice's
    # knowledge is as it was, Bob's new fact is found by the new embedder
    clock2, llm2 = Clock(clock.now), _llm()
    store2, km2 = _open(path, NEW, llm2, clock2)
    try:
        llm2.route("extract", extract([("Bob", "person"), ("Lima", "place")], [("Bob", "Bob moved to Lima")]))
        assert km2.write("a1", "I moved to Lima", "Bob", session_id="s-bob", user_id=BOB).facts_added
        got = {f.fact_text for f in km2.retrieve("a1", "Where does Bob live now? Lima", user_id=BOB).facts}
        assert "Bob moved to Lima" in got and not any("warfarin" in t for t in got)
        assert sorted(f.fact_text for f in km2.get_all("a1", user_id=ALICE)) == ["Alice lives in Oporto", "Alice takes warfarin"]
        assert "Alice takes warfarin" in {f.fact_text for f in km2.retrieve("a1", "warfarin", user_id=ALICE).facts}
    finally:
        km2.close()
        store2.close()


def test_a_reprocess_that_writes_knowledge_vectors_but_no_store_record_is_refused(tmp_path):
    """The commit of a reprocessed event adds no store record (the event's is there) when the
    extraction finds only a new entity: its entity vector goes straight into the knowledge
    table, so the commit checks the catalog in its own transaction (``rt.check_embedder``)."""
    path = str(tmp_path / "m.db")
    clock, llm = Clock(), _llm()
    store, km = _open(path, OLD, llm, clock)
    try:
        llm.route("extract", RuntimeError("model down"))  # KC-7.3: the event is kept, extraction_failed
        kept = km.write("a1", "I was in Lisbon last week", "Bob", session_id="s-bob", user_id=BOB)
        assert not kept.success and kept.event_id
        event = kept.event_id
        reembed_store(path, NEW)
        before = _dump(path)
        llm.route("extract", extract([("Lisbon", "place")], []))
        _refused(lambda: km.reprocess_event("a1", event, user_id=BOB), "nothing was written")
        assert _dump(path) == before
    finally:
        km.close()
        store.close()


def test_a_reembed_in_another_process(tmp_path):
    """The same with the move in a real second process (its own connection and catalog
    write): the worker's next knowledge write is refused, nothing written."""
    path = str(tmp_path / "m.db")
    clock, llm = Clock(), _llm()
    store, km = _open(path, OLD, llm, clock)
    try:
        _seed(km, llm, clock)
        out = subprocess.run([sys.executable, "-c", _REEMBED, path], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        before = _dump(path)
        _refused(lambda: km.add_fact("a1", "Dora", "Dora keeps bees", subject_type="person", user_id=BOB),
                 "nothing was written")
        _refused(lambda: km.retrieve("a1", "bees", user_id=BOB), "nothing was searched")
        assert _dump(path) == before
    finally:
        km.close()
        store.close()
