"""Red team of the knowledge layer's user boundary (KC-3.7, KC-3.8, KC-6.0), after
``test_tenant_knowledge``: Bob, on the agent Alice uses, acts on her rows by every public
method that takes a user, an id or an entity key, and the background jobs run in Bob's scope
and in the shared scope with a model that agrees to every merge. Alice's rows (every knowledge
table) and her store records must come out byte for byte as they were, and nothing Bob reads
may carry her words."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any, Optional

import pytest
import sqlalchemy as sa

from oramem import jsonl
from oramem.knowledge.ownership import owned_rows
from oramem.sqlite._sqlite import sqlite3

from .helpers import extract, scope_rows, write_keeper
from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"
SECRET = "passport"


def _alices_rows(km, store) -> dict[str, Any]:
    """Every row of Alice's scope, per knowledge table, plus her store records."""
    return scope_rows(km, store, "alice", ("message", "fact", "memory"))


def _world(km, llm, clock) -> dict[str, str]:
    """Alice's facts, edge and intention; Bob's and the shared ones name the same people."""
    write_keeper(km, llm, clock, "alice", "Alice", SECRET, f"Alice keeps the {SECRET} in the drawer")
    llm.route("extract", extract(entities=[("Alice", "person")], facts=[("Alice", "Alice flies to Lima on Friday")],
                                 intentions=[{"trigger_type": "keyword", "trigger_condition": "Lima",
                                              "intended_action": f"remind Alice of the {SECRET}"}]))
    km.write(AGENT, "Remind me of the passport when I mention Lima", "Alice", user_id="alice",
             session_id="alice-chat")
    clock.advance(minutes=1)
    # Bob's scope and the shared scope hold entities of the same names (merge and alias bait)
    write_keeper(km, llm, clock, "bob", "Bob", "keys", "Bob keeps the keys in the drawer")
    km.add_fact(AGENT, "Alice", "Alice is Bob's neighbour", subject_type="person", user_id="bob")
    km.add_entity(AGENT, "Alice Friend", type="person", user_id="bob")
    km.add_fact(AGENT, "Alice", "Alice is a guest of the hotel", subject_type="person")  # shared
    alice_fact = next(f.fact_id for f in km.get_all(AGENT, user_id="alice") if SECRET in f.fact_text)
    (intention,) = km.intentions(AGENT, user_id="alice")
    return {"fact": alice_fact, "intention": intention.id}


def test_bob_and_the_shared_scope_never_change_or_read_alices_knowledge(env):  # noqa: F811
    _, store, km, llm, clock = env
    ids = _world(km, llm, clock)
    # a model that agrees to every merge and writes summaries from what it is shown
    llm.route("entity_merge", {"should_merge": True})
    llm.route("entity_summary", lambda p: {"summary": " / ".join(p["facts"]) or "nothing"})
    llm.route("cluster_summary", {"summary": "Things kept in drawers."})
    llm.route("community", {"title": "Drawers", "summary": "Things kept in drawers."})
    llm.route("consolidate", lambda p: {"observations": [
        {"type": "pattern", "title": "Keeps things", "text": " ".join(e["text"] for e in p["events"])[:500],
         "supporting_event_indices": [1], "supporting_fact_indices": []}]})
    # every pair of same-type entities of a scope is a merge candidate
    km.config = dataclasses.replace(km.config, memify_merge_similarity_threshold=-1.0)
    before = _alices_rows(km, store)
    assert before["store:fact"] and before["store:message"] and all(before[t.name] for t in (
        km.runtime.tables.fact, km.runtime.tables.entity, km.runtime.tables.relationship, km.runtime.tables.intention))

    # Bob's id-based calls on Alice's rows: refused as unknown, nothing changed
    assert km.annotate_fact(AGENT, ids["fact"], "bob was here", user_id="bob") is False
    assert km.fulfill_intention(AGENT, ids["intention"], "done by bob", user_id="bob") is False
    assert km.fulfill_intention(AGENT, ids["intention"], "done by nobody") is False
    assert km.confirm_fact(AGENT, ids["fact"], user_id="bob") is False
    assert km.retract_fact(AGENT, ids["fact"], user_id="bob") is False
    assert km.delete(AGENT, ids["fact"], user_id="bob") is False
    assert km.get(AGENT, ids["fact"], user_id="bob") is None and km.history(AGENT, ids["fact"], user_id="bob") == []

    # Bob's reads, aimed at her entity, her session and her trigger word
    for user in ("bob", None):
        result = km.retrieve(AGENT, f"where is the {SECRET}? Lima", user_id=user, session_id="alice-chat",
                             entity_keys=["person:alice"], include_directives=False)
        seen = result.context + " ".join(f.fact_text for f in result.facts)
        assert SECRET not in seen and "Lima" not in seen, (user, seen)
        assert {f.user_id for f in result.facts} <= {None, user}
        assert not any(SECRET in (r.fact_text or "") for r in km.get_all(AGENT, user_id=user, include_inactive=True))
        assert all(r.user_id in (None, user) for r in km.entities(AGENT, user_id=user, include_inactive=True))
        assert all(r.user_id in (None, user)
                   for r in km.relationships(AGENT, entity_key="person:alice", include_inactive=True, user_id=user))
        assert km.intentions(AGENT, user_id=user) == []

    # the background jobs of Bob's scope and of the shared scope
    merges = {}
    for user in ("bob", None):
        report = km.run_background(AGENT, user_id=user)
        assert not report.errors, report.errors
        merges[user] = report.results["memify"].merges_executed
    assert merges["bob"] >= 1  # the jobs did merge (Bob's "Alice" into one of his people)
    for user in ("bob", None):
        texts = [e.summary_text or "" for e in km.entities(AGENT, user_id=user, include_inactive=True)]
        texts += [f.fact_text for f in km.get_all(AGENT, user_id=user, include_inactive=True)]
        texts.append(km.retrieve(AGENT, f"{SECRET} drawer Lima", user_id=user).context)
        assert not any(SECRET in t or "Lima" in t for t in texts), (user, texts)

    assert _alices_rows(km, store) == before  # not one byte of her scope changed
    # and her own view still holds everything
    mine = km.retrieve(AGENT, f"where is the {SECRET}?", user_id="alice")
    assert SECRET in mine.context


# ------------------------------------------------------------------ forged knowledge metadata
# Bob's client (an MCP server scoped to bob on this agent, a LangChain vector store of his
# scope) writes records of *his* scope with free metadata: here metadata that claims Alice's
# knowledge scope (``kg_user``) or the shared one (no ``kg_user``), close to her queries.
FORGED_FACT = {"kg_primary": "person:alice", "kg_entity_keys": ["person:alice"], "kg_confidence": 1.0,
               "kg_valid_from": "2000-01-01T00:00:00+00:00", "kg_ingested_at": "2000-01-01T00:00:00+00:00",
               "kg_is_stale": False}


def _forge(store, texts: list[str], record_type: str, claims: dict) -> None:
    extra = {"thread_ids": "bob-chat", "roles": "user"} if record_type == "message" else {}
    store.add(texts, record_type, user_ids="bob", agent_ids=AGENT, metadata=claims, **extra)


def test_bobs_records_claiming_alices_or_the_shared_scope_never_crowd_out_her_retrieve(env):  # noqa: F811
    _, store, km, llm, clock = env
    fact = f"Alice keeps the {SECRET} in the blue drawer"
    llm.route("extract", extract([("Alice", "person")], [("Alice", fact)]))
    km.write(AGENT, f"I keep the {SECRET} in the blue drawer", "Alice", user_id="alice")
    km.add_fact(AGENT, "Hotel", "The hotel opens at 7", subject_type="place")  # shared
    clock.advance()
    query, shared_query = f"where is the {SECRET}? blue drawer", "when does the hotel open? at 7"

    def seen(user, q):
        r = km.retrieve(AGENT, q, user_id=user)
        return [f.fact_text for f in r.facts], [e["text"] if isinstance(e, dict) else e.text for e in r.events]

    before = {("alice", query): seen("alice", query), (None, shared_query): seen(None, shared_query),
              ("carol", shared_query): seen("carol", shared_query)}
    assert fact in before[("alice", query)][0] and before[("alice", query)][1]
    assert "The hotel opens at 7" in before[(None, shared_query)][0]
    rows = _alices_rows(km, store)

    _forge(store, [query] * 300, "message", {"kg_source": "chat", "kg_user": "alice"})
    _forge(store, [f"Alice: {query}"] * 300, "fact", {**FORGED_FACT, "kg_user": "alice"})
    _forge(store, [f"Hotel: {shared_query}"] * 300, "fact", {**FORGED_FACT, "kg_primary": "place:hotel"})
    _forge(store, [shared_query] * 300, "message", {"kg_source": "chat"})
    assert _alices_rows(km, store) == rows

    for (user, q), expected in before.items():
        assert seen(user, q) == expected, (user, q)


def test_bobs_records_claiming_alices_scope_never_hide_her_facts_from_her_reconciliation(env):  # noqa: F811
    _, store, km, llm, clock = env
    old, new = f"Alice keeps the {SECRET} in the blue drawer", f"Alice keeps the {SECRET} in the red drawer now"
    llm.route("extract", extract([("Alice", "person")], [("Alice", old)]))
    old_id = km.write(AGENT, f"I keep the {SECRET} in the blue drawer", "Alice", user_id="alice").facts_added[0]["fact_id"]
    clock.advance()
    # records of Bob's scope nearer to her next fact than her own fact is
    _forge(store, [f"Alice: {new}"] * 300, "fact", {**FORGED_FACT, "kg_user": "alice"})
    llm.route("extract", extract([("Alice", "person")], [("Alice", new)]))
    llm.route("reconcile", {"decisions": [{"new_fact_index": 1, "action": "UPDATE", "existing_fact_index": 1}]})
    km.write(AGENT, f"I keep the {SECRET} in the red drawer now", "Alice", user_id="alice")
    (call,) = llm.calls_for("reconcile")  # her own fact was offered for reconciliation
    assert [e["fact_id"] for e in call["existing"]] == [old_id]
    assert [f.fact_text for f in km.get_all(AGENT, user_id="alice")] == [new]


def test_bobs_records_claiming_alices_scope_never_hide_her_facts_from_her_informed_extraction(env):  # noqa: F811
    _, store, km, llm, clock = env
    old = f"Alice keeps the {SECRET} in the blue drawer"
    llm.route("extract", extract([("Alice", "person")], [("Alice", old)]))
    km.write(AGENT, old, "Alice", user_id="alice")
    km.add_entity(AGENT, "Alice", type="person", aliases=["Ali"], user_id="alice")  # the message names her so
    clock.advance()
    message = f"Ali moved the {SECRET} to the red drawer"
    _forge(store, [message] * 300, "fact", {**FORGED_FACT, "kg_user": "alice"})
    llm.route("extract", extract([("Alice", "person")], [("Alice", message)]))
    km.write(AGENT, message, "Alice", user_id="alice")
    (known,) = llm.calls_for("extract")[-1]["existing_knowledge"]  # KC-4.6: her facts about the entity named
    assert (known["entity_key"], known["facts"]) == ("person:alice", [old])


# ------------------------------------------------------------------ erasing one actor by the store
# SC-13.3 / SC-13.7: erasing a user (``forget`` or her profile's cascade) removes her private
# threads whole, a thread being "hers alone" when no store record of another user is in it.
# A background write Bob queued into a thread he shares with Alice has no store record yet (its
# event is written when a worker runs it), nor has what his deleted message there taught, so
# her erasure must not take his queued message, intention or session note with her thread;
# and the cascade, an erasure of the user like ``forget``, must leave no
# knowledge row of hers (entities, aliases, intentions, observations, clusters) behind.
def _scope_rows(km, user: Optional[str]) -> dict[str, Any]:
    """Every knowledge row (the 11 tables and the job queue) of the scope ``user``."""
    t = km.runtime.tables
    out: dict[str, Any] = {}
    with km.runtime.backend.read() as conn:
        for table in [*t.all_agent_tables(), t.job]:
            if "user_id" not in table.c:
                continue
            cond = table.c.user_id.is_(None) if user is None else table.c.user_id == user
            rows = conn.execute(sa.select(table).where(cond)).mappings().all()
            out[table.name] = sorted((sorted((k, repr(v)) for k, v in r.items()) for r in rows), key=repr)
    return out


def _alice_bob_and_shared(km, llm, clock, store) -> str:
    """Alice's knowledge (with derived rows), Bob's, a shared fact, and Bob's background write
    queued into ``ticket-1``, a thread in which only Alice has a store record so far."""
    store.add(["alice: my card was charged twice"], "message", thread_ids="ticket-1", user_ids="alice",
              agent_ids=AGENT, roles="user")
    write_keeper(km, llm, clock, "alice", "Alice", SECRET, f"Alice keeps the {SECRET} in the drawer")
    llm.route("extract", extract(entities=[("Alice", "person")], facts=[("Alice", "Alice flies to Lima on Friday")],
                                 intentions=[{"trigger_type": "keyword", "trigger_condition": "Lima",
                                              "intended_action": f"remind Alice of the {SECRET}"}],
                                 observations=[{"content": "Alice travels soon", "topic": "travel"}]))
    km.write(AGENT, "Remind me of the passport when I mention Lima", "Alice", user_id="alice", session_id="ticket-1")
    llm.route("cluster_summary", {"summary": "Alice's travel papers."})
    llm.route("consolidate", {"observations": [{"type": "pattern", "title": "Keeps papers", "text": "Keeps papers safe",
                                                "supporting_event_indices": [1], "supporting_fact_indices": [1]}]})
    assert km.cluster_facts(AGENT, user_id="alice").clusters_created and km.consolidate(AGENT, user_id="alice").observations_created
    write_keeper(km, llm, clock, "bob", "Bob", "keys", "Bob keeps the keys in the drawer")
    km.add_fact(AGENT, "Hotel", "The hotel opens at 7", subject_type="place")  # shared
    # Bob's message in the ticket taught an intention and a session note; his app then deleted
    # the message record (the knowledge it taught stays, KC-3.6), so the thread holds no store
    # record of his
    llm.route("extract", extract([("Bob", "person")], [("Bob", "Bob waits for a refund")],
                                 intentions=[{"trigger_type": "keyword", "trigger_condition": "refund",
                                              "intended_action": "tell Bob about his refund"}],
                                 observations=[{"content": "Bob asked about a refund", "topic": "billing"}]))
    store.delete("message", km.write(AGENT, "I want a refund", "Bob", user_id="bob", session_id="ticket-1").event_id)
    assert km.intentions(AGENT, user_id="bob") and "DEFAULT_KG_SESSION_OBSERVATION" in {
        name for name, rows in _scope_rows(km, "bob").items() if rows}
    llm.route("extract", extract([("Bob", "person")], [("Bob", "Bob has account 999")]))
    job = km.write(AGENT, "my account is 999", "Bob", user_id="bob", session_id="ticket-1", background=True).job_id
    assert job and km.get_job(job).status == "pending"
    return job


@pytest.mark.parametrize("how", ["profile cascade", "forget"])
def test_erasing_alice_keeps_bobs_rows_naming_their_thread_and_leaves_nothing_of_hers(env, how):  # noqa: F811
    _, store, km, llm, clock = env
    job = _alice_bob_and_shared(km, llm, clock, store)
    assert all(_scope_rows(km, "alice")[name] for name in (
        "DEFAULT_KG_ENTITY", "DEFAULT_KG_ENTITY_ALIAS", "DEFAULT_KG_INTENTION", "DEFAULT_KG_SESSION_OBSERVATION",
        "DEFAULT_KG_CLUSTER", "DEFAULT_KG_META_OBSERVATION"))
    bob, shared = _scope_rows(km, "bob"), _scope_rows(km, None)

    if how == "forget":
        km.forget(user_id="alice")
    else:
        store.delete("user_profile", "alice", cascade=True)

    assert _scope_rows(km, "bob") == bob and _scope_rows(km, None) == shared  # not one row of Bob's or shared changed
    assert all(rows == [] for rows in _scope_rows(km, "alice").values()), _scope_rows(km, "alice")
    assert store.list("message", user_id="alice", limit=None) == []
    # Bob's queued message is still there, and the worker turns it into his knowledge
    assert km.get_job(job).status == "pending"
    assert km.process_jobs().done == 1
    assert "Bob has account 999" in {f.fact_text for f in km.get_all(AGENT, user_id="bob")}
    assert [m.user_id for m in store.list("message", thread_id="ticket-1", limit=None)] == ["bob"]


def test_an_agents_profile_cascade_keeps_another_agents_queued_write_in_its_thread(env):  # noqa: F811
    _, store, km, llm, _ = env
    store.add(["desk notes for the night shift"], "message", thread_ids="handover", agent_ids=AGENT, roles="assistant")
    km.add_fact(AGENT, "Hotel", "The hotel opens at 7", subject_type="place")
    llm.route("extract", extract([("Bob", "person")], [("Bob", "Bob has account 999")]))
    # another agent's shared write (no user: a user's write may not start in a thread of shared
    # records only, KC-3.10a) queued into the thread
    job = km.write("bank", "my account is 999", "Bob", session_id="handover", background=True).job_id
    store.delete("agent_profile", AGENT, cascade=True)  # the thread held only the desk agent's records
    assert km.get_all(AGENT) == []
    assert km.get_job(job).status == "pending"
    assert km.process_jobs().done == 1
    assert [f.fact_text for f in km.get_all("bank")] == ["Bob has account 999"]


def test_a_profile_cascade_leaves_no_half_erased_shared_fact_of_her_private_thread(env):  # noqa: F811
    """A shared write into a thread only Alice wrote in: the cascade removes its event record with
    her thread (SC-13.3) but cannot delete store records from its hook, so the shared fact stays
    whole (row and store record, ``source_event_id`` cleared, as after ``delete_thread``)."""
    _, store, km, llm, _ = env
    store.add(["alice: hello"], "message", thread_ids="alice-chat", user_ids="alice", agent_ids=AGENT, roles="user")
    llm.route("extract", extract([("Hotel", "place")], [("Hotel", "The hotel opens at 7")]))
    (fact,) = [f["fact_id"] for f in km.write(AGENT, "We open at 7", "Desk", session_id="alice-chat").facts_added]
    store.delete("user_profile", "alice", cascade=True)
    assert store.list("message", thread_id="alice-chat", limit=None) == []
    row = km.get(AGENT, fact)
    assert row is not None and row.source_event_id is None
    assert store.get("fact", fact) is not None


class _TransactionConnections:
    """What the knowledge layer's Oracle engine does for the eraser (``OracleAccess._connect``
    reaches the store transaction's connection), with the SQLite hook's connection."""

    def __init__(self, km, dbapi_conn) -> None:
        self._km, self._dbapi_conn = km, dbapi_conn

    def connect(self):
        return self._km.runtime.backend.hook_connection(self._dbapi_conn)


def _in_oracles_order(km, store) -> None:
    """The store's knowledge hook replaced by what a user's profile cascade does on Oracle with
    the knowledge layer open: the PL/SQL hook deletes no knowledge row for it (the driver's
    ``delete_record_json`` passes ``in_reason => 'erase'``) and ``OracleEraser.erase_cascade``
    runs next in the cascade's transaction (``SyncOracleEngine.delete``)."""
    from oramem.knowledge import deletes

    rt = km.runtime
    hooks = store._engine._hooks
    (i,) = [n for n, h in enumerate(hooks) if getattr(h, "func", None) is deletes.deletion_hook]

    def hook(dbapi_conn, event):
        if event.reason == "cascade" and event.user_ids:
            eraser = deletes.OracleEraser(_TransactionConnections(km, dbapi_conn), rt.tables, deletes.purger(rt))
            eraser.erase_cascade(event)
        else:
            deletes.deletion_hook(rt, dbapi_conn, event)

    hooks[i] = hook


@pytest.mark.parametrize("order", ["SQLite hook", "Oracle driver"])
def test_a_profile_cascade_takes_the_shared_rows_citing_her_and_only_those(env, order):  # noqa: F811
    """SC-13.3 / KC-3.10 on both engines' order: a meta observation of the shared scope
    supported by one of Alice's events or facts quotes her; her profile cascade deletes it (as
    forget does) and leaves the shared one citing Bob's. On Oracle the PL/SQL hook used to
    delete her events and facts first, so the eraser that ran after it no longer matched what
    cites them: such an observation stayed, only its supporting ids trimmed."""
    _, store, km, llm, clock = env
    job = _alice_bob_and_shared(km, llm, clock, store)
    t = km.runtime.tables
    with km.runtime.backend.read() as conn:
        def first(table, user):
            return conn.execute(sa.select(table.c.id).where(table.c.user_id == user)).scalars().first()

        her_event, her_fact = first(t.event, "alice"), first(t.fact, "alice")
        his_fact = first(t.fact, "bob")
    assert her_event and her_fact and his_fact
    now = clock()
    rows = [("of-her-event", [her_event], []), ("of-her-fact", [], [her_fact]), ("of-his-fact", [], [his_fact])]
    with km.runtime.backend.write("test", AGENT) as conn:
        for oid, events, facts in rows:
            conn.execute(sa.insert(t.meta_observation).values(
                id=oid, agent_id=AGENT, user_id=None, observation_type="pattern", title=oid, text=f"shared note {oid}",
                supporting_event_ids=events, supporting_fact_ids=facts, first_detected_at=now,
                last_reinforced_at=now, created_at=now))
    bob, shared = _scope_rows(km, "bob"), _scope_rows(km, None)
    if order == "Oracle driver":
        _in_oracles_order(km, store)

    store.delete("user_profile", "alice", cascade=True)

    with km.runtime.backend.read() as conn:
        left = conn.execute(sa.select(t.meta_observation.c.id, t.meta_observation.c.supporting_fact_ids)
                            .where(t.meta_observation.c.user_id.is_(None))).all()
    assert [(r.id, r.supporting_fact_ids) for r in left] == [("of-his-fact", [his_fact])]
    name = t.meta_observation.name
    shared[name] = [r for r in shared[name] if ("id", repr("of-his-fact")) in r]
    assert _scope_rows(km, "bob") == bob and _scope_rows(km, None) == shared
    assert all(rows == [] for rows in _scope_rows(km, "alice").values()), _scope_rows(km, "alice")
    assert km.get_job(job).status == "pending"


@pytest.mark.parametrize("how", ["forget", "forget_async", "profile cascade", "profile cascade, Oracle driver"])
def test_erasing_bob_never_takes_alices_knowledge_through_his_records_under_her_ids(env, how):  # noqa: F811
    """Store ids are unique per record type only (SC-4.3), and a caller may choose them (the
    API's ``record_ids``, ``oramem add --id``, a LangChain vector store's ``ids``): Bob keeps
    a ``fact`` record under the id of Alice's knowledge event and a ``message`` under the id
    of one of her facts. His erasure takes the knowledge rows whose store record was one of
    his (KC-3.10) - by type: a fact row for a fact record, an event row for a message
    record. Matched by id alone it erased her event and every fact learned from it."""
    _, store, km, llm, clock = env
    write_keeper(km, llm, clock, "alice", "Alice", SECRET, f"Alice keeps the {SECRET} in the drawer")
    write_keeper(km, llm, clock, "bob", "Bob", "keys", "Bob keeps the keys in the drawer")
    shared_fact = km.add_fact(AGENT, "Hotel", "The hotel opens at 7", subject_type="place").facts_added[0]["fact_id"]
    (event,) = store.list("message", user_id="alice", limit=None)
    fact = next(f.fact_id for f in km.get_all(AGENT, user_id="alice") if f.user_id == "alice")
    store.add(["bob's note"], "fact", record_ids=event.id, user_ids="bob", agent_ids=AGENT)
    store.add(["bob: hi", "bob: bye"], "message", record_ids=[fact, shared_fact], user_ids="bob", agent_ids=AGENT,
              thread_ids="bob-chat", roles="user")
    before = _alices_rows(km, store)
    alice, shared = _scope_rows(km, "alice"), _scope_rows(km, None)
    assert alice["DEFAULT_KG_EVENT"] and alice["DEFAULT_KG_FACT"] and shared["DEFAULT_KG_FACT"]
    # his scoped export (SC-13.9, the same selection as his erasure) hands him none of it either
    scope = jsonl.select_scope(store, "user", ["bob"])
    with km.runtime.backend.read() as conn:
        exported = owned_rows(conn, km.runtime.tables, "user", ["bob"], scope.keys)
    assert not {event.id, fact, shared_fact} & set().union(*exported.values())

    if how == "forget":
        km.forget(user_id="bob")
    elif how == "forget_async":
        asyncio.run(km.forget_async(user_id="bob"))
    else:
        if how.endswith("Oracle driver"):
            _in_oracles_order(km, store)
        store.delete("user_profile", "bob", cascade=True)

    assert _scope_rows(km, "alice") == alice and _scope_rows(km, None) == shared
    assert _alices_rows(km, store) == before
    assert store.get("fact", event.id) is None and store.get("message", fact) is None  # his records went
    assert all(rows == [] for rows in _scope_rows(km, "bob").values())


def test_bob_cannot_start_his_conversation_in_the_shared_session_and_erase_it(env):  # noqa: F811
    """SC-13.3 / KC-3.10 (oramem.threads): the shared session's thread holds only records of no
    user (the agent's shared events). Had Bob's write landed there, it would be his private
    thread, and his forget would take it whole: the shared events and every fact learned from
    them, for every user (reproduced before this rule). His write into it is refused in the
    write's block, nothing of it is stored; his own session, and a session Alice shares with
    him, stay open."""
    from oramem.knowledge.write.entry import default_session_id

    _, store, km, llm, clock = env
    llm.route("extract", extract(entities=[("Hotel", "place")], facts=[("Hotel", "The hotel opens at 7")]))
    km.write(AGENT, "The hotel opens at 7", "Desk")  # shared: no user
    shared = default_session_id(AGENT, None)
    before = {r.id for r in store.list("message", limit=None)}
    llm.route("extract", extract(entities=[("Bob", "person")], facts=[("Bob", "Bob likes tea")]))
    with pytest.raises(ValueError, match="holds only records of no user"):
        km.write(AGENT, "Bob likes tea", "Bob", user_id="bob", session_id=shared)
    with pytest.raises(ValueError, match="holds only records of no user"):
        asyncio.run(km.write_async(AGENT, "Bob likes tea", "Bob", user_id="bob", session_id=shared))
    assert {r.id for r in store.list("message", limit=None)} == before
    km.forget(user_id="bob")
    assert {f.fact_text for f in km.get_all(AGENT)} == {"The hotel opens at 7"}
    # his own session and a conversation Alice shares with him stay open
    km.write(AGENT, "Bob likes tea", "Bob", user_id="bob")
    llm.route("extract", extract(entities=[("Alice", "person")], facts=[("Alice", "Alice likes jazz")]))
    km.write(AGENT, "Alice likes jazz", "Alice", user_id="alice", session_id="group")
    llm.route("extract", extract(entities=[("Bob", "person")], facts=[("Bob", "Bob likes chess")]))
    km.write(AGENT, "Bob likes chess", "Bob", user_id="bob", session_id="group")
    assert {"Bob likes tea", "Bob likes chess"} <= {f.fact_text for f in km.get_all(AGENT, user_id="bob")}


def test_bobs_background_write_into_the_shared_session_is_refused_at_submit(env):  # noqa: F811
    """KC-3.10a for ``write(..., background=True)``: refused before a job is queued."""
    from oramem.knowledge.write.entry import default_session_id

    _, store, km, llm, clock = env
    llm.route("extract", extract(entities=[("Hotel", "place")], facts=[("Hotel", "The hotel opens at 7")]))
    km.write(AGENT, "The hotel opens at 7", "Desk")
    with pytest.raises(ValueError, match="holds only records of no user"):
        km.write(AGENT, "Bob likes tea", "Bob", user_id="bob", session_id=default_session_id(AGENT, None),
                 background=True)
    assert km.job_status().counts["pending"] == 0


@pytest.mark.parametrize("how", ["forget", "forget_async", "export"])
def test_bobs_imported_knowledge_row_never_adopts_alices_record_under_its_id(env, how):  # noqa: F811
    """The reverse of the test above, through a backup: Bob's file (``oramem import``'s
    knowledge lines) carries a knowledge event of his under the id of Alice's message record
    (ids are not secrets: thread listings, audit entries and agent-wide results show them).
    His erasure deletes the store records of his knowledge rows, and his scoped export adds
    them to his file (KC-3.10, SC-13.9): matched by (type, id) alone, his forget deleted
    Alice's message and his export handed him her words. A record of another user is never
    one of his knowledge records."""
    path, store, km, llm, clock = env
    write_keeper(km, llm, clock, "bob", "Bob", "keys", "Bob keeps the keys in the drawer")
    [alices] = store.add([f"alice: my {SECRET} number is X1234"], "message", user_ids="alice", agent_ids=AGENT,
                         thread_ids="alice-chat", roles="user")
    engine = sa.create_engine(f"sqlite:///{path}", module=sqlite3)
    try:
        lines: list[str] = []
        jsonl.export_knowledge(engine, store.memory_store_id, store.vector_dim, lines.append)
        [event] = [json.loads(x) for x in lines if '"kg_table": "EVENT"' in x and '"user_id": "bob"' in x]
        event["row"]["id"] = alices
        jsonl.import_knowledge(engine, store.memory_store_id, store.vector_dim, jsonl.parse_lines([json.dumps(event)]), policy=None)
        before = _alices_rows(km, store)
        alice = _scope_rows(km, "alice")
        if how == "export":
            scope = jsonl.select_scope(store, "user", ["bob"])
            jsonl.knowledge_scope(engine, store, scope)
            assert scope.records and all(r.user_id in (None, "bob") for r in scope.records)
            assert not [r for r in scope.records if SECRET in (r.content or "")]
            return
    finally:
        engine.dispose()
    if how == "forget":
        km.forget(user_id="bob")
    else:
        asyncio.run(km.forget_async(user_id="bob"))
    assert _alices_rows(km, store) == before and _scope_rows(km, "alice") == alice
    assert store.get("message", alices).user_id == "alice"
    assert all(rows == [] for rows in _scope_rows(km, "bob").values())


def test_erasing_alice_clears_a_shared_entity_summary_written_from_her_fact(env):  # noqa: F811
    """KC-3.10's backstop (rows from before the user dimension, or direct writes): a shared
    fact learned from Alice's message is erased with her, and so are the cluster and the
    observations citing it, but the shared entity's summary, which the summary job wrote
    from that fact, kept quoting it for Bob's ``entities`` (red team round 3). Erasing her
    clears the summaries of other scopes' entities linked to her erased facts (the next
    refresh writes them again from what is left)."""
    _, store, km, llm, clock = env
    write_keeper(km, llm, clock, "alice", "Alice", SECRET, f"Alice keeps the {SECRET} in the drawer")
    km.add_fact(AGENT, "Hotel", f"The guest keeps the {SECRET} in the hotel safe", subject_type="place")  # shared
    km.add_fact(AGENT, "Hotel", "The hotel opens at 7", subject_type="place")
    t = km.runtime.tables
    with km.runtime.backend.write("test", AGENT) as conn:  # learned from her message, before the user dimension
        her_event = conn.execute(sa.select(t.event.c.id).where(t.event.c.user_id == "alice")).scalars().first()
        conn.execute(sa.update(t.fact).where(t.fact.c.user_id.is_(None), t.fact.c.fact_text.contains(SECRET))
                     .values(source_event_id=her_event))
    llm.route("entity_summary", lambda p: {"summary": " / ".join(p["facts"]) or "nothing"})
    assert km.refresh_summaries(AGENT).summaries_refreshed
    (hotel,) = [e for e in km.entities(AGENT, user_id="bob") if e.canonical_key == "place:hotel"]
    assert SECRET in (hotel.summary_text or "")

    km.forget(user_id="alice")

    assert [f.fact_text for f in km.get_all(AGENT, user_id="bob")] == ["The hotel opens at 7"]
    texts = [e.summary_text or "" for e in km.entities(AGENT, user_id="bob", include_inactive=True)]
    assert texts and not any(SECRET in text for text in texts), texts
    assert km.refresh_summaries(AGENT).summaries_refreshed
    (hotel,) = [e for e in km.entities(AGENT, user_id="bob") if e.canonical_key == "place:hotel"]
    assert hotel.summary_text == "The hotel opens at 7"


def _import_row(path, store, kg_table: str, user: str, new_id: str) -> None:
    """Copy one knowledge row of ``user`` (an ``oramem import`` knowledge line) under
    ``new_id``: a knowledge row without a store record of its own under that id."""
    engine = sa.create_engine(f"sqlite:///{path}", module=sqlite3)
    try:
        lines: list[str] = []
        jsonl.export_knowledge(engine, store.memory_store_id, store.vector_dim, lines.append)
        row = next(json.loads(x) for x in lines
                   if f'"kg_table": "{kg_table}"' in x and f'"user_id": "{user}"' in x)
        row["row"]["id"] = new_id
        jsonl.import_knowledge(engine, store.memory_store_id, store.vector_dim, jsonl.parse_lines([json.dumps(row)]), policy=None)
    finally:
        engine.dispose()


@pytest.mark.parametrize("how", ["delete", "purge"])
def test_bobs_record_under_alices_knowledge_id_deletes_only_his_record(env, how):  # noqa: F811
    """The deletion hook (SC-8.5) takes the knowledge row of a deleted ``message`` / ``fact``
    record only when the record was that row's own (same agent and user). Alice's event and
    fact restored from a backup have no store record; Bob adds a message and a fact record
    under their ids (ids are not secrets; SC-4.3 lets him choose them) and deletes them, or
    lets them expire and be purged: matched by id alone, the hook deleted her event and fact."""
    path, store, km, llm, clock = env
    write_keeper(km, llm, clock, "alice", "Alice", SECRET, f"Alice keeps the {SECRET} in the drawer")
    _import_row(path, store, "EVENT", "alice", "restored-event")
    _import_row(path, store, "FACT", "alice", "restored-fact")
    alice = _scope_rows(km, "alice")
    assert "restored-event" in repr(alice["DEFAULT_KG_EVENT"]) and "restored-fact" in repr(alice["DEFAULT_KG_FACT"])
    ttl = 1 if how == "purge" else None
    store.add(["bob: hi"], "message", record_ids="restored-event", user_ids="bob", agent_ids=AGENT,
              thread_ids="bob-chat", roles="user", ttl_days=ttl)
    store.add(["bob's note"], "fact", record_ids="restored-fact", user_ids="bob", agent_ids=AGENT, ttl_days=ttl)
    if how == "delete":
        assert store.delete("message", "restored-event") == 1 and store.delete("fact", "restored-fact") == 1
    else:
        clock.advance(days=2)
        assert store.purge_expired() == 2
    assert store.get("message", "restored-event") is None and store.get("fact", "restored-fact") is None
    assert _scope_rows(km, "alice") == alice


@pytest.mark.parametrize("owner", ["alice's row, bob's record", "bob's row, alice's record"])
def test_fact_metadata_sync_touches_only_the_rows_own_record(env, owner):  # noqa: F811
    """memify and entity merges rewrite a fact's store metadata (KC-3.5, ``_sync_store_metadata``)
    only in the fact row's own record (same agent and user): a fact record of another user
    under the row's id got the row's metadata (Alice's entity keys and scope in Bob's record,
    or Bob's scope label in Alice's record, which store searches read as the scope)."""
    from oramem.knowledge.jobs.run import _sync_store_metadata

    path, store, km, llm, clock = env
    write_keeper(km, llm, clock, "alice", "Alice", SECRET, f"Alice keeps the {SECRET} in the drawer")
    write_keeper(km, llm, clock, "bob", "Bob", "keys", "Bob keeps the keys in the drawer")
    row_user, record_user = ("alice", "bob") if owner.startswith("alice") else ("bob", "alice")
    _import_row(path, store, "FACT", row_user, "planted")
    store.add([f"{record_user}'s note"], "fact", record_ids="planted", user_ids=record_user, agent_ids=AGENT,
              metadata={"note": record_user})
    own = next(f.fact_id for f in km.get_all(AGENT, user_id=row_user) if f.user_id == row_user and f.fact_id != "planted")
    own_before = store.get("fact", own).metadata
    store.update("fact", own, metadata={"stale": "copy"})
    _sync_store_metadata(km.runtime, AGENT, ["planted", own])
    record = store.get("fact", "planted")
    assert record.user_id == record_user and record.metadata == {"note": record_user}
    assert store.get("fact", own).metadata == own_before  # the row's own record is rewritten


def test_oracle_reply_event_keeps_the_records_owners():
    """The Oracle driver's events (the ``*_json`` replies) hand Python hooks the owners of the
    deleted records, as the SQLite engine's events do (``DeletionEvent.scopes``)."""
    from oramem.oracle.base import OracleEngine

    reply = {"event": {"records": [["message", "m1"], ["fact", "f1"]],
                       "scopes": [{"agent_id": "desk", "user_id": "bob"}, {"agent_id": "desk"}]}}
    event = OracleEngine._reply_event(reply, "S", "delete")
    assert event.records == (("message", "m1"), ("fact", "f1"))
    assert event.scopes == (("desk", "bob"), ("desk", None))


@pytest.mark.parametrize("how", ["forget", "profile cascade"])
def test_erasing_bob_leaves_alices_restored_rows_under_his_record_ids(env, how):  # noqa: F811
    """KC-3.10 with same-type ids: Bob's ``message`` and ``fact`` records carry the ids of
    Alice's event and fact restored without their records. His erasure takes the knowledge
    rows whose store record was one of his only when they are not another user's (a row
    without a user: written before the user dimension); matched by (type, id) alone it
    erased her event and fact."""
    path, store, km, llm, clock = env
    write_keeper(km, llm, clock, "alice", "Alice", SECRET, f"Alice keeps the {SECRET} in the drawer")
    write_keeper(km, llm, clock, "bob", "Bob", "keys", "Bob keeps the keys in the drawer")
    _import_row(path, store, "EVENT", "alice", "restored-event")
    _import_row(path, store, "FACT", "alice", "restored-fact")
    alice = _scope_rows(km, "alice")
    store.add(["bob: hi"], "message", record_ids="restored-event", user_ids="bob", agent_ids=AGENT,
              thread_ids="bob-chat", roles="user")
    store.add(["bob's note"], "fact", record_ids="restored-fact", user_ids="bob", agent_ids=AGENT)
    if how == "forget":
        km.forget(user_id="bob")
    else:
        store.delete("user_profile", "bob", cascade=True)
    assert store.get("message", "restored-event") is None and store.get("fact", "restored-fact") is None
    assert _scope_rows(km, "alice") == alice


def test_retracting_alices_fact_leaves_bobs_record_under_its_id(env):  # noqa: F811
    """``retract_fact`` rewrites the fact's store metadata (KC-3.5) in the fact's own record
    only (``commit.update_fact_record``, as memify's sync and a write's reconcile): Alice's
    fact restored without its record, Bob's fact record under its id; her retraction wrote
    her entity keys, scope and validity into his record."""
    path, store, km, llm, clock = env
    write_keeper(km, llm, clock, "alice", "Alice", SECRET, f"Alice keeps the {SECRET} in the drawer")
    _import_row(path, store, "FACT", "alice", "restored-fact")
    store.add(["bob's note"], "fact", record_ids="restored-fact", user_ids="bob", agent_ids=AGENT,
              metadata={"note": "bob"})
    own = next(f.fact_id for f in km.get_all(AGENT, user_id="alice") if f.user_id == "alice" and f.fact_id != "restored-fact")
    assert km.retract_fact(AGENT, "restored-fact", user_id="alice")
    assert km.retract_fact(AGENT, own, user_id="alice")
    record = store.get("fact", "restored-fact")
    assert record.user_id == "bob" and record.metadata == {"note": "bob"}
    assert "kg_valid_to" in store.get("fact", own).metadata  # her own record is still rewritten


@pytest.mark.parametrize("how", ["forget", "cascade", "forget after delete_thread"])
def test_erasing_alice_takes_her_first_sighting_of_an_attribute_key_from_the_agents_registry(env, how):  # noqa: F811
    """The attribute registry is the agent's vocabulary (KC-3.7, one row per key for every
    user), and a key's first sighting writes the raw key of that message and the event's id
    into it (KC-4.16: ``example_raw_key``, ``reason``). Erasing Alice left both, so her words
    ("Quxbert insurance id") outlived her erasure in a row of the agent. Now: a key she first
    used that no remaining fact uses goes with her; a key Bob's facts use too stays (it is his
    vocabulary as well), without her raw key and her event's id. A row Bob first wrote is
    left as it was. Also when her conversation was deleted before (its events are gone, her
    facts stay): the keys her facts carry decide then."""
    _, store, km, llm, clock = env

    def write(user: str, who: str, raw_key: str, value: str) -> str:
        llm.route("extract", extract([(who, "person")], [{"subject": who, "fact": f"{who}'s {raw_key} is {value}",
                                                           "attribute_key": raw_key, "value": value,
                                                           "confidence": "explicit_statement"}]))
        event = km.write(AGENT, f"my {raw_key} is {value}", who, user_id=user).event_id
        clock.advance(minutes=1)
        return event

    alices = write("alice", "Alice", "Quxbert insurance id", "77")
    write("alice", "Alice", "FAVOURITE-colour", "teal")
    write("bob", "Bob", "favourite colour", "red")
    write("bob", "Bob", "shoe size", "44")
    t = km.runtime.tables

    def registry() -> dict[str, dict[str, Any]]:
        with km.runtime.backend.read() as conn:
            return {r["key"]: dict(r) for r in conn.execute(sa.select(t.registry)).mappings()}

    before = registry()
    assert before["quxbert_insurance_id"]["reason"] == f"extracted from event {alices}"
    assert before["favourite_colour"]["example_raw_key"] == "FAVOURITE-colour"

    if how == "cascade":
        store.delete("user_profile", "alice", cascade=True)
    else:
        if how == "forget after delete_thread":
            from oramem.knowledge.write.entry import default_session_id

            store.delete_thread(default_session_id(AGENT, "alice"))
            assert km.get(AGENT, km.get_all(AGENT, user_id="alice")[0].fact_id, user_id="alice").source_event_id is None
        km.forget(user_id="alice")

    after = registry()
    assert set(after) == {"favourite_colour", "shoe_size"}
    kept = after["favourite_colour"]
    assert kept["example_raw_key"] is None and kept["reason"] is None
    assert {k: v for k, v in kept.items() if k not in ("example_raw_key", "reason")} == {
        k: v for k, v in before["favourite_colour"].items() if k not in ("example_raw_key", "reason")}
    assert after["shoe_size"] == before["shoe_size"]  # Bob's first sighting: untouched
    # Bob's next write with the key still finds it (its policy and count are the agent's)
    write("bob", "Bob", "favourite colour", "blue")
    assert registry()["favourite_colour"]["seen_count"] == before["favourite_colour"]["seen_count"] + 1


def test_erasing_alice_keeps_a_registry_row_an_operator_configured(env):  # noqa: F811
    """As above, for a key no fact uses after her erasure but whose policy an operator set
    (the row is the agent's configuration, not her data): it stays, without her raw key and
    her event's id."""
    _, store, km, llm, clock = env
    llm.route("extract", extract([("Alice", "person")], [{"subject": "Alice", "fact": "Alice's Quxbert tags are red",
                                                           "attribute_key": "Quxbert tags", "value": "red",
                                                           "confidence": "explicit_statement"}]))
    km.write(AGENT, "my Quxbert tags are red", "Alice", user_id="alice")
    reg = km.runtime.tables.registry
    with km.runtime.backend.write("test", AGENT) as conn:
        conn.execute(sa.update(reg).where(reg.c.key == "quxbert_tags").values(conflict_policy="accumulate"))
    km.forget(user_id="alice")
    with km.runtime.backend.read() as conn:
        rows = [dict(r) for r in conn.execute(sa.select(reg)).mappings()]
    assert [(r["key"], r["conflict_policy"], r["example_raw_key"], r["reason"]) for r in rows] == [
        ("quxbert_tags", "accumulate", None, None)]


@pytest.mark.parametrize("how", ["delete", "delete_all"])
def test_deleting_alices_fact_leaves_bobs_record_under_its_id(env, how):  # noqa: F811
    """``KnowledgeMemory.delete`` (her fact's chain) and ``delete_all`` (the agent's rows) take
    the store records of the deleted facts and events, each its own record only (same agent and
    user, as ``commit.update_fact_record``): Alice's fact and event restored without their
    records, Bob's ``fact`` / ``message`` records under their ids (on the same agent, and on
    another agent for ``delete_all``); her delete removed his records."""
    path, store, km, llm, clock = env
    write_keeper(km, llm, clock, "alice", "Alice", SECRET, f"Alice keeps the {SECRET} in the drawer")
    _import_row(path, store, "FACT", "alice", "restored-fact")
    _import_row(path, store, "EVENT", "alice", "restored-event")
    agent = AGENT if how == "delete" else "concierge"
    store.add(["bob's note"], "fact", record_ids="restored-fact", user_ids="bob", agent_ids=agent)
    store.add(["bob: hi"], "message", record_ids="restored-event", user_ids="bob", agent_ids=agent,
              thread_ids="bob-chat", roles="user")
    own = next(f.fact_id for f in km.get_all(AGENT, user_id="alice") if f.fact_id != "restored-fact")
    if how == "delete":
        assert km.delete(AGENT, "restored-fact", user_id="alice")
        assert km.delete(AGENT, own, user_id="alice")
    else:
        assert km.delete_all(AGENT) >= 2
    assert store.get("fact", "restored-fact").user_id == "bob"
    assert store.get("message", "restored-event").user_id == "bob"
    assert store.get("fact", own) is None  # her own fact's record still goes


def test_bob_cannot_open_the_shared_session_before_the_agent_and_erase_it(env):  # noqa: F811
    """The order the test above does not cover (KC-4.21, SC-13.3): the agent's shared session
    (``default_session_id(agent, None)``, predictable) is new, so no rule refused Bob's write
    into it; the agent's shared writes then went into a thread he had opened, and his forget
    took it whole, the shared events and the facts learned from them, for every user (deleting
    his record first would not help: the thread row names him, SC-13.2). A ``kg-default-``
    thread is the default session of one (agent, user): another scope's write is refused there,
    new or not, now or queued; his own default session stays open."""
    from oramem.knowledge.write.entry import default_session_id

    _, store, km, llm, clock = env
    shared = default_session_id(AGENT, None)
    llm.route("extract", extract(entities=[("Bob", "person")], facts=[("Bob", "Bob likes tea")]))
    refused = []
    for session, background in ((shared, False), (shared, True), (default_session_id(AGENT, "alice"), False),
                                (default_session_id("concierge", "bob"), False)):
        try:
            km.write(AGENT, "Bob likes tea", "Bob", user_id="bob", session_id=session, background=background)
        except ValueError as exc:
            refused.append("default session of another" in str(exc))
    stored = (store.list("message", limit=None), store.list("thread", limit=None), km.job_status().counts["pending"])
    llm.route("extract", extract(entities=[("Hotel", "place")], facts=[("Hotel", "The hotel opens at 7")]))
    km.write(AGENT, "The hotel opens at 7", "Desk")  # shared: no user, the shared session
    km.write(AGENT, "Bob likes tea", "Bob", user_id="bob")  # his own default session
    km.forget(user_id="bob")
    assert {f.fact_text for f in km.get_all(AGENT)} == {"The hotel opens at 7"}  # before: set()
    assert refused == [True] * 4 and stored == ([], [], 0)
    assert {r.thread_id for r in store.list("message", limit=None)} == {shared}
