"""A scoped export covers what the scope's erasure removes (oramem/knowledge/ownership.py):
every store record and knowledge row that ``forget(user_id=U)`` erases is in
``export --user U``, and nothing else of hers is left out; likewise ``forget(agent_id=A)`` and
``--agent A``, ``delete_thread(T)`` and ``--thread T``. The one exception, on purpose: a row of
another user's scope that forget erases because it cites her rows is not handed to her."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import sqlalchemy as sa

from oramem import SQLiteMemoryStore, jsonl
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.sqlite._sqlite import sqlite3
from oramem.testing import HashEmbedder, ScriptedLLM

from .helpers import Clock, extract

ALICE, BOB = "u-alice", "u-bob"


def _llm() -> ScriptedLLM:
    return ScriptedLLM({"event_emotion": {"emotion": "neutral", "intensity": 0.2, "energy": "medium"}})


def _engine(path: str) -> sa.Engine:
    return sa.create_engine(f"sqlite:///{path}", module=sqlite3)


@pytest.fixture
def world(tmp_path):
    """Alice and Bob on one agent ("shared"), in a shared thread and each in private ones,
    with knowledge rows of both, shared knowledge, and another agent's."""
    path = str(tmp_path / "own.db")
    clock = Clock()
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(64), clock=clock, search_strategy="hybrid")
    llm = _llm()
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False), clock=clock)
    for user, name, city in ((ALICE, "Alice", "Oporto"), (BOB, "Bob", "Lima")):
        store.add_user(user, f"{name}'s profile")
        store.add([f"{name} keeps a memory"], "memory", user_ids=user, agent_ids="shared")
        store.add([f"{name} alone says hi"], "message", user_ids=user, agent_ids="shared", thread_ids=f"t-{user}",
                  roles="user")
        # the assistant's reply in her private thread has no user: it goes with her conversation
        store.add([f"reply to {name} alone"], "message", agent_ids="shared", thread_ids=f"t-{user}", roles="assistant")
        km.add_fact("shared", name, f"{name}'s code word is {name.lower()}code", subject_type="person", user_id=user)
        llm.route("extract", extract(
            [(name, "person"), (city, "place")], [(name, f"{name} hides things in {city}", "hiding_place")],
            [(name, city, "visits")],
            intentions=[{"trigger_type": "event", "trigger_condition": f"{name} asks", "intended_action": "remind"}],
            observations=[{"content": f"{name} talks about {city}", "topic": "travel"}]))
        km.write("shared", f"I hide things in {city}", name, session_id=f"s-{user}", user_id=user)
        km.write("shared", f"later from {name}", name, session_id="s-both", background=True, user_id=user)
    # a thread both write in, opened by Bob, with an unscoped reply; and one Alice opened
    for thread, first, second in (("t-bob-first", BOB, ALICE), ("t-alice-first", ALICE, BOB)):
        for user in (first, second):
            store.add([f"{user} in {thread}"], "message", user_ids=user, agent_ids="shared", thread_ids=thread,
                      roles="user")
        store.add([f"reply in {thread}"], "message", agent_ids="shared", thread_ids=thread, roles="assistant")
    km.add_fact("shared", "Office", "The office is in Berlin", subject_type="place")  # shared knowledge
    km.add_fact("other", "Bob", "Bob as the other agent knows him", subject_type="person", user_id=BOB)
    store.add_agent("other", "the other agent's profile")  # in its actor's scope (SC-6.2)
    t = km._tables
    with _engine(path).begin() as conn:
        bob_fact = conn.execute(sa.select(t.fact.c.id).where(t.fact.c.user_id == BOB, t.fact.c.agent_id == "shared")
                                ).scalars().first()
        bob_event = conn.execute(sa.select(t.event.c.id).where(t.event.c.user_id == BOB)).scalars().first()
        # a shared fact learned from Bob's message (forget takes it: derived from his event)
        conn.execute(sa.update(t.fact).where(t.fact.c.fact_text == "The office is in Berlin")
                     .values(source_event_id=bob_event))
        # a row of Alice's scope citing Bob's fact (only a direct write makes one, KC-6.0)
        now = clock()
        conn.execute(sa.insert(t.cluster).values(id="alice-cluster", agent_id="shared", user_id=ALICE, label="alice's",
                                                 summary_text="Alice's own summary", fact_count=1, importance=0.5,
                                                 is_active=True, last_updated_at=now, created_at=now))
        conn.execute(sa.update(t.fact).where(t.fact.c.id == bob_fact).values(cluster_id="alice-cluster"))
        for agent in ("shared", "other"):  # the agents' lock rows (KC-6: the background writer's)
            if not conn.execute(sa.select(t.agent.c.agent_id).where(t.agent.c.agent_id == agent)).first():
                conn.execute(sa.insert(t.agent).values(agent_id=agent, last_write_at=now))
    yield path, store, km
    km.close()
    store.close()


def _records(store: SQLiteMemoryStore) -> dict[tuple[str, str], dict[str, Any]]:
    lines: list[str] = []
    jsonl.export_records(store, lines.append)
    return {(d["record_type"], d["id"]): d for d in map(json.loads, lines)}


def _kg_rows(path: str, store: SQLiteMemoryStore) -> dict[tuple[str, Any], dict[str, Any]]:
    lines: list[str] = []
    engine = _engine(path)
    try:
        jsonl.export_knowledge(engine, store.memory_store_id, store.vector_dim, lines.append)
    finally:
        engine.dispose()
    out = {}
    for d in map(json.loads, lines):
        key = d["row"].get("id", d["row"].get("agent_id"))
        out[(d["kg_table"], key)] = d["row"]
    return out


def _export(path: str, store: SQLiteMemoryStore, kind: str, ids: list[str]):
    scope = jsonl.select_scope(store, kind, ids)
    lines: list[str] = []
    engine = _engine(path)
    try:
        rows = jsonl.knowledge_scope(engine, store, scope)  # adds the store records of her knowledge rows
        jsonl.export_records(store, lines.append, scope=scope)
        jsonl.export_knowledge(engine, store.memory_store_id, store.vector_dim, lines.append, rows=rows)
    finally:
        engine.dispose()
    recs, kg = set(), set()
    for d in map(json.loads, lines):
        if "kg_table" in d:
            kg.add((d["kg_table"], d["row"].get("id", d["row"].get("agent_id"))))
        else:
            recs.add((d["record_type"], d["id"]))
    return recs, kg


def test_export_user_covers_exactly_what_forget_erases(world):
    path, store, km = world
    recs_before, kg_before = _records(store), _kg_rows(path, store)
    exported_recs, exported_kg = _export(path, store, "user", [BOB])
    km.forget(user_id=BOB)
    recs_after, kg_after = _records(store), _kg_rows(path, store)

    erased_recs = set(recs_before) - set(recs_after)
    # the rows of the threads he opened that stay: forget clears his id from them (SC-13.2)
    released = {k for k, d in recs_before.items() if k[0] == "thread" and d.get("user_id") == BOB and k in recs_after}
    assert released == {("thread", "t-bob-first")}
    assert exported_recs == erased_recs | released
    # his private thread whole, its unscoped reply included; nothing of the shared threads but his
    assert ("thread", "t-u-bob") in exported_recs
    contents = {recs_before[k].get("content") for k in exported_recs}
    assert "reply to Bob alone" in contents and "Bob's profile" in contents
    assert not {"reply in t-bob-first", "reply in t-alice-first", "reply to Alice alone"} & contents
    assert not [k for k in exported_recs if recs_before[k].get("user_id") == ALICE]

    erased_kg = set(kg_before) - set(kg_after)
    others = {k for k in erased_kg if kg_before[k].get("user_id") not in (None, BOB)}
    assert others == {("CLUSTER", "alice-cluster")}  # forget's precaution, not his data
    assert exported_kg == erased_kg - others
    assert ("FACT", next(k[1] for k, r in kg_before.items() if r.get("fact_text") == "The office is in Berlin")) \
        in exported_kg  # shared knowledge learned from his message
    kinds = {table for table, _ in exported_kg}
    assert {"EVENT", "FACT", "ENTITY", "FACT_ENTITY_LINK", "RELATIONSHIP", "INTENTION", "SESSION_OBSERVATION",
            "JOB"} <= kinds
    assert not [k for k in exported_kg if kg_before[k].get("user_id") == ALICE]


def test_export_agent_covers_exactly_what_forget_erases(world):
    path, store, km = world
    recs_before, kg_before = _records(store), _kg_rows(path, store)
    exported_recs, exported_kg = _export(path, store, "agent", ["other"])
    km.forget(agent_id="other")
    recs_after, kg_after = _records(store), _kg_rows(path, store)
    assert exported_kg == set(kg_before) - set(kg_after) and exported_kg
    assert ("AGENT", "other") in exported_kg and ("AGENT", "shared") not in exported_kg
    assert ("agent_profile", "other") in exported_recs
    erased = set(recs_before) - set(recs_after)
    released = {k for k, d in recs_before.items() if k[0] == "thread" and d.get("agent_id") == "other" and k in recs_after}
    assert exported_recs == erased | released and erased

    recs_before, kg_before = _records(store), _kg_rows(path, store)
    exported_recs, exported_kg = _export(path, store, "agent", ["shared"])
    km.forget(agent_id="shared")
    recs_after, kg_after = _records(store), _kg_rows(path, store)
    assert exported_kg == set(kg_before) - set(kg_after)
    assert ("AGENT", "shared") in exported_kg
    erased = set(recs_before) - set(recs_after)
    released = {k for k, d in recs_before.items() if k[0] == "thread" and d.get("agent_id") == "shared" and k in recs_after}
    assert exported_recs == erased | released
    # every user's records with the agent; the profiles have no agent and stay out
    assert {recs_before[k].get("user_id") for k in exported_recs} >= {ALICE, BOB}
    assert ("user_profile", BOB) not in exported_recs


@pytest.mark.parametrize("thread", ["t-bob-first", "t-u-bob", "s-u-bob", "s-both"])
def test_export_thread_covers_exactly_what_delete_thread_removes(world, thread):
    path, store, km = world
    recs_before, kg_before = _records(store), _kg_rows(path, store)
    exported_recs, exported_kg = _export(path, store, "thread", [thread])
    store.delete_thread(thread)
    recs_after, kg_after = _records(store), _kg_rows(path, store)
    assert exported_recs == set(recs_before) - set(recs_after)
    assert exported_kg == set(kg_before) - set(kg_after)
    assert exported_recs or exported_kg


def test_export_user_of_nobody_is_empty(world):
    path, store, _ = world
    assert _export(path, store, "user", [f"nobody-{uuid.uuid4().hex}"]) == (set(), set())


def test_export_user_has_the_rows_of_no_user_in_her_private_threads_that_forget_erases(world):
    """SC-13.9 / KC-3.10: forget takes her private threads whole, and of the knowledge rows
    naming them hers and those of no user (the agent's queued write into her conversation, a
    session note and an intention of no user noted there). Her export left those out (it
    matched knowledge rows by user and by her erased records only): 'export U' must show
    what 'forget U' erases. Another user's queued write there stays with him (not exported)."""
    path, store, km = world
    km.write("shared", "the assistant notes the lima trip", "Assistant", session_id=f"t-{BOB}", background=True)
    km.write("shared", "Alice writes into his thread", "Alice", session_id=f"t-{BOB}", background=True, user_id=ALICE,
             recent_messages=["Bob alone says hi"])
    t = km._tables
    now = km.runtime.now()
    with _engine(path).begin() as conn:
        conn.execute(sa.insert(t.session_observation).values(
            id="note-in-his-thread", agent_id="shared", user_id=None, content="the user plans a Lima trip",
            topic="travel", entities_mentioned=[], created_at=now, source_message_ids=[], is_active=True,
            session_id=f"t-{BOB}"))
        conn.execute(sa.insert(t.intention).values(
            id="intent-in-his-thread", agent_id="shared", user_id=None, trigger_type="event",
            trigger_condition="Lima", intended_action="mention the trip", status="pending",
            source_context=f"t-{BOB}", created_at=now))
    kg_before = _kg_rows(path, store)
    exported_recs, exported_kg = _export(path, store, "user", [BOB])
    km.forget(user_id=BOB)
    kg_after = _kg_rows(path, store)
    erased_kg = set(kg_before) - set(kg_after)
    others = {k for k in erased_kg if kg_before[k].get("user_id") not in (None, BOB)}
    no_user_there = {k for k in erased_kg if kg_before[k].get("user_id") is None
                     and f"t-{BOB}" in (kg_before[k].get("session_id"), kg_before[k].get("source_context"))}
    assert {k[0] for k in no_user_there} == {"JOB", "SESSION_OBSERVATION", "INTENTION"}
    assert exported_kg == erased_kg - others
    # Alice's queued write into his thread is hers: it stays, never in his file
    assert [k for k in kg_after if k[0] == "JOB" and kg_after[k].get("user_id") == ALICE and
            kg_after[k].get("session_id") == f"t-{BOB}"]
    assert not [k for k in exported_kg if kg_before[k].get("user_id") == ALICE]
