"""A maintenance job that runs while a user is erased (KC-3.10, KC-6.0): a job reads its
scope, awaits the LLM, then writes in a second transaction. Alice's ``forget`` may commit in
between. What the job then writes must not bring back rows of hers (a cluster, a theme, an
observation, an alias in her scope, or text drawn from her erased facts). Deterministic: the
LLM route of the job runs her erasure before it answers."""

from __future__ import annotations

import sqlalchemy as sa

from .helpers import write_keeper
from .read_helpers import write_facts
from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)


def _rows(km, table, *where):
    with km._backend.read() as c:
        return [dict(r) for r in c.execute(sa.select(table).where(*where)).mappings()]


def _erase_then(store, reply):
    def route(payload):
        store.forget(user_id="alice")
        return reply
    return route


def _hers(km):
    """Every knowledge row of Alice's scope, per table (none after her erasure)."""
    t = km._tables
    out = {}
    for table in t.all_agent_tables():
        if "user_id" in table.c:
            n = len(_rows(km, table, table.c.user_id == "alice"))
            if n:
                out[table.name] = n
    return out


def _alice_facts(km, llm, clock, facts, entity="Pedro"):
    write_facts(km, llm, [(entity, "person")], [(entity, f) for f in facts], user_id="alice")
    clock.advance()


def test_clustering_does_not_bring_back_an_erased_users_cluster(km, llm, clock, store):
    _alice_facts(km, llm, clock, ["Pedro plays chess", "Pedro drinks coffee"])
    llm.route("cluster_summary", _erase_then(store, {"summary": "Pedro plays chess and drinks coffee."}))
    km.cluster_facts("a1", user_id="alice")
    assert _hers(km) == {}
    assert not [c for c in _rows(km, km._tables.cluster) if "chess" in (c["summary_text"] or "")]


def test_consolidation_does_not_bring_back_an_erased_users_observation(km, llm, clock, store):
    for i in range(3):
        _alice_facts(km, llm, clock, [f"Pedro walked {i + 3} kilometres"])
    good = {"type": "pattern", "title": "Walks daily", "text": "Pedro walks every day.", "supporting_event_indices": [1, 2],
            "supporting_fact_indices": [1]}
    llm.route("consolidate", _erase_then(store, {"observations": [good]}))
    km.consolidate("a1", user_id="alice")
    assert _hers(km) == {}
    assert not [o for o in _rows(km, km._tables.meta_observation) if "walks" in (o["text"] or "")]


def test_communities_do_not_bring_back_an_erased_users_theme(km, llm, clock, store):
    _alice_facts(km, llm, clock, ["Pedro plays chess", "Pedro drinks coffee"])
    _alice_facts(km, llm, clock, ["Ana grows tomatoes", "Ana keeps bees"], entity="Ana")
    llm.route("cluster_summary", {"summary": "Hobbies at home."})
    km.cluster_facts("a1", user_id="alice")
    llm.route("community", _erase_then(store, {"title": "Home hobbies", "summary": "Pedro and Ana have home hobbies."}))
    km.detect_communities("a1", user_id="alice")
    assert _hers(km) == {}
    assert not [o for o in _rows(km, km._tables.meta_observation) if "hobbies" in (o["text"] or "")]


def test_entity_merge_does_not_bring_back_an_erased_users_aliases(make_km, llm, clock, store):
    km = make_km(memify_merge_similarity_threshold=-1.0)
    _alice_facts(km, llm, clock, ["Pedro plays chess"])
    _alice_facts(km, llm, clock, ["Peter plays chess"], entity="Peter")
    llm.route("entity_merge", _erase_then(store, {"should_merge": True}))
    assert km.memify("a1", user_id="alice").merges_executed == 0
    assert _hers(km) == {}


def test_summary_refresh_does_not_write_back_an_erased_users_fact(env):  # noqa: F811
    """KC-3.10's backstop case (a shared fact learned from Alice's message): her erasure
    clears the shared entity's summary written from it; a refresh that read the fact before
    her erasure and writes after it must not put the fact's text back for Bob."""
    _, store, km, llm, clock = env
    write_keeper(km, llm, clock, "alice", "Alice", "passport", "Alice keeps the passport in the drawer")
    km.add_fact("desk", "Hotel", "The guest keeps the passport in the hotel safe", subject_type="place")  # shared
    km.add_fact("desk", "Hotel", "The hotel opens at 7", subject_type="place")
    t = km.runtime.tables
    with km.runtime.backend.write("test", "desk") as conn:  # learned from her message, before the user dimension
        her_event = conn.execute(sa.select(t.event.c.id).where(t.event.c.user_id == "alice")).scalars().first()
        conn.execute(sa.update(t.fact).where(t.fact.c.user_id.is_(None), t.fact.c.fact_text.contains("passport"))
                     .values(source_event_id=her_event))

    def route(payload):
        if "Hotel" in str(payload.get("display_name")):
            store.forget(user_id="alice")
        return {"summary": " / ".join(payload["facts"]) or "nothing"}

    llm.route("entity_summary", route)
    km.refresh_summaries("desk")
    texts = [e.summary_text or "" for e in km.entities("desk", user_id="bob", include_inactive=True)]
    assert not any("passport" in text for text in texts), texts
    assert km.refresh_summaries("desk").summaries_refreshed
    (hotel,) = [e for e in km.entities("desk", user_id="bob") if e.canonical_key == "place:hotel"]
    assert hotel.summary_text == "The hotel opens at 7"


def _jobs(km):
    return _rows(km, km._tables.job)


def _private_thread_with_queued_writes(km, store):
    """Alice's private thread T (her message and the agent's reply; no store record of another
    user), with two background writes queued into it: the agent's (no user) and Bob's, whose
    context quotes her."""
    store.add(["my passport is in zanzibar"], "message", thread_ids="T", user_ids="alice", agent_ids="a1", roles="user")
    store.add(["noted"], "message", thread_ids="T", agent_ids="a1", roles="assistant")
    km.write("a1", "the assistant noted the zanzibar passport", "Assistant", session_id="T", background=True)
    km.write("a1", "Bob says hi", "Bob", user_id="bob", session_id="T", background=True,
             recent_messages=["Alice: my passport is in zanzibar"])
    assert len(_jobs(km)) == 2


def test_forget_takes_the_queued_writes_of_her_private_thread_as_her_cascade_does(km, llm, clock, store):
    """SC-13.3 / KC-3.10: ``forget`` removes her private thread whole, as her profile's cascade
    does, and of the knowledge rows naming it her rows and those of no user: the agent's
    queued write into her conversation goes (processed later, it would write its text back
    into the thread). Bob's queued write stays, his, without the turns of her conversation
    copied into it as context. Before, ``forget`` kept both jobs as they were."""
    _private_thread_with_queued_writes(km, store)
    km.forget(user_id="alice")
    assert store.list("message", thread_id="T") == []
    (left,) = _jobs(km)
    assert left["user_id"] == "bob" and "zanzibar" not in str(left["payload_json"])
    llm.route("extract", {"entities": [], "facts": []})
    km.process_jobs()
    assert all("zanzibar" not in str(call.get("recent_messages")) for call in llm.calls_for("extract"))


def test_her_profile_cascade_leaves_bobs_queued_write_without_her_turns(km, llm, clock, store):
    _private_thread_with_queued_writes(km, store)
    store.delete("user_profile", "alice", cascade=True)
    (left,) = _jobs(km)
    assert left["user_id"] == "bob" and "zanzibar" not in str(left["payload_json"])
