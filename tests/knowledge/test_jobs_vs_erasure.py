"""A maintenance job that runs while a user is erased (KC-3.10, KC-6.0): a job reads its
scope, awaits the LLM, then writes in a second transaction. Alice's ``forget`` may commit in
between. What the job then writes must not bring back rows of hers (a cluster, a theme, an
observation, an alias in her scope, or text drawn from her erased facts). Deterministic: the
LLM route of the job runs her erasure before it answers."""

from __future__ import annotations

import pytest
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


# --------------------------------------------------------------------------- her turns in other users' queued writes
# KC-3.10: a queued write's context (recent_messages) is turns its writer copied from a
# conversation, plain strings naming no speaker. After Alice's erasure no queued write keeps
# her words: in a thread she wrote in (shared, so it stays) another user's queued write loses
# its whole context and still runs on his own message; elsewhere an entry that is one of her
# message texts goes. Before, only the threads removed whole with her were stripped.

def _shared_thread_with_bobs_queued_write(km, store):
    store.add(["my passport is in zanzibar"], "message", thread_ids="S", user_ids="alice", agent_ids="a1", roles="user")
    store.add(["I keep mine at home"], "message", thread_ids="S", user_ids="bob", agent_ids="a1", roles="user")
    km.write("a1", "Bob keeps his passport at home", "Bob", user_id="bob", session_id="S", background=True,
             recent_messages=["Alice: my passport is in zanzibar", "Bob: I keep mine at home"])


@pytest.mark.parametrize("erase", ["forget", "cascade"])
def test_bobs_queued_write_in_a_shared_thread_loses_her_turns_and_still_runs(km, llm, clock, store, erase):
    _shared_thread_with_bobs_queued_write(km, store)
    if erase == "forget":
        km.forget(user_id="alice")
    else:
        store.delete("user_profile", "alice", cascade=True)
    assert [m.content for m in store.list("message", thread_id="S")] == ["I keep mine at home"]  # the thread stays
    (left,) = _jobs(km)
    assert left["user_id"] == "bob" and "zanzibar" not in str(left["payload_json"])
    assert left["payload_json"]["message"] == "Bob keeps his passport at home"
    llm.route("extract", {"entities": [], "facts": []})
    assert km.process_jobs().done == 1  # his write runs on what remains
    calls = llm.calls_for("extract")
    assert calls and all("zanzibar" not in str(call) for call in calls)


def test_an_entry_that_is_her_message_leaves_a_queued_write_in_another_thread(km, llm, clock, store):
    """Bob's queued write into his own thread quotes her knowledge message (written in her
    thread): that entry goes, his own turn stays."""
    llm.route("extract", {"entities": [], "facts": []})
    km.write("a1", "my passport is in zanzibar", "Alice", user_id="alice", session_id="her")
    km.write("a1", "Bob keeps his passport at home", "Bob", user_id="bob", session_id="his", background=True,
             recent_messages=["Alice said: My passport is in Zanzibar", "Bob: I keep mine at home", "ok"])
    km.forget(user_id="alice")
    (left,) = _jobs(km)
    assert left["payload_json"]["recent_messages"] == ["Bob: I keep mine at home", "ok"]


def test_a_write_running_with_her_turns_when_she_is_erased_is_rolled_back_and_rerun(km, llm, clock, store):
    """The worker claimed Bob's write and sent its context (her turn) to the model; her erasure
    commits before its reply. The attempt must not commit what it drew from her words: its
    claim is revoked, it rolls back, and the rerun reads the context without them."""
    _shared_thread_with_bobs_queued_write(km, store)
    replies = iter([
        {"entities": [{"name": "Alice", "type": "person"}],
         "facts": [{"subject": "Alice", "fact_text": "Alice keeps her passport in zanzibar", "category": "specific_event",
                    "confidence": "explicit_statement"}]},
    ])

    def route(payload):
        if "zanzibar" in str(payload):
            store.forget(user_id="alice")
            return next(replies)
        return {"entities": [], "facts": []}

    llm.route("extract", route)
    report = km.process_jobs()
    assert report.lost == 1 and report.done == 1
    assert not [f for f in _rows(km, km._tables.fact) if "zanzibar" in f["fact_text"]]
    assert not [e for e in _rows(km, km._tables.event) if "zanzibar" in str(e)]
    (job,) = _jobs(km)
    assert job["status"] == "done" and job["attempts"] == 1
    assert "zanzibar" not in str(llm.calls_for("extract")[-1])


def test_the_oracle_forget_event_carries_her_threads_to_the_eraser(km, llm, clock, store):
    """Oracle: the eraser (``OracleEraser.erase`` runs :func:`deletes.erase`) gets the event
    the driver reads from ``delete_record_json``'s reply; the reply's ``actor_thread_ids``
    must reach it, or Bob's queued write in their shared thread keeps her turn. The reply
    here is shaped as the PL/SQL builds it (tests/plsql/test_round6_findings.py)."""
    from oramem.knowledge import deletes
    from oramem.oracle.base import OracleEngine
    from oramem.requests import ForgetRequest

    _shared_thread_with_bobs_queued_write(km, store)
    reply = {"count": 0, "event": {"memory_store_id": "X", "records": [["message", "m1"]],
                                   "scopes": [{"agent_id": "a1", "user_id": "alice"}], "thread_ids": [],
                                   "user_ids": ["alice"], "agent_ids": [], "actor_thread_ids": ["S"], "reason": "forget"}}
    event = OracleEngine._forget_event(reply, ForgetRequest(user_id="alice", names=("alice",)), km._tables.store_id)
    assert event.actor_thread_ids == ("S",)
    with km.runtime.backend.write("test", "a1") as conn:
        deletes.erase(conn, km._tables, event, deletes.purger(km.runtime))
    (left,) = _jobs(km)
    assert left["user_id"] == "bob" and "zanzibar" not in str(left["payload_json"])


def test_a_reprocess_in_flight_when_she_is_erased_stores_nothing_of_hers(km, llm, clock, store):
    """KC-7.3 / KC-3.10: ``reprocess_event`` reads her failed event, asks the model, then
    commits in a second transaction. Her erasure commits in between (deterministic: the
    extract route runs it). Before, the reprocess stored her facts, entities, aliases, links
    and a fact record after her ``forget``; now it raises and stores nothing."""
    from oramem.knowledge.errors import ConflictError

    from .helpers import extract

    def down(payload):
        raise RuntimeError("model down")

    llm.route("extract", down)
    failed = km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")
    assert not failed.success and failed.event_id
    llm.route("extract", _erase_then(store, extract(
        [("Alice", "person"), ("Zanzibar", "place")], [("Alice", "Alice hides her passport in Zanzibar", "hiding_place")])))
    with pytest.raises(ConflictError, match="erased"):
        km.reprocess_event("a1", failed.event_id, user_id="alice")
    assert _hers(km) == {}
    assert not [r for t in ("fact", "message") for r in store.list(t, limit=None) if "Zanzibar" in (r.content or "")]


# --------------------------------------------------------------------------- delete_all is a delete, not an erasure
# KC-3.6 (red24): ``delete_all(agent)`` writes no erasure receipt (no verification, no tombstone:
# ``forget(agent_id=A)`` is the agent's erasure, SC-13.4, and refuses the writes in flight,
# KC-3.10). What it guarantees about queued writes: a job a worker is running when it commits
# loses its claim (its row is gone), so nothing of that job is stored after the delete.

def test_a_queued_write_running_during_delete_all_stores_nothing(km, llm, clock, store):
    from oramem.knowledge.deletes import delete_agent
    from oramem.trust.erasure import erasure_log

    km.write("a1", "Pedro keeps bees", "Pedro", session_id="s1", background=True)

    def delete_then_answer(payload):
        delete_agent(km.runtime, "a1")  # commits while the worker awaits the model
        return {"entities": [{"name": "Pedro", "type": "person"}],
                "facts": [{"subject": "Pedro", "fact": "Pedro keeps bees", "confidence": "explicit_statement"}]}

    llm.route("extract", delete_then_answer)
    llm.route("reconcile", {"decisions": []})
    report = km.process_jobs()
    assert report.lost == 1 and report.done == 0
    assert km.get_all("a1") == [] and km.jobs() == []
    assert store.list("message", thread_id="s1") == [] and store.list("fact") == []
    assert erasure_log(store) == []  # a delete: no receipt


def test_a_job_found_already_done_keeps_no_copy_of_the_context(km, llm, clock, store, monkeypatch):
    """A claimed job whose event already exists is marked done without work (the queue's belt
    and braces). A done job keeps no message or context (``queue.mark_done``), and an erasure
    does not look into done jobs (``deletes._contexts``); this path kept both, so Alice's turn
    copied into Bob's job stayed after her forget (red24)."""
    from oramem.knowledge.jobs import queue as queue_mod

    _shared_thread_with_bobs_queued_write(km, store)
    monkeypatch.setattr(queue_mod, "event_exists", lambda conn, t, agent, eid: True)
    assert km.process_jobs().already_done == 1
    (done,) = _jobs(km)
    assert done["status"] == "done"
    assert "message" not in done["payload_json"] and "recent_messages" not in done["payload_json"]
    km.forget(user_id="alice")
    assert "zanzibar" not in str(_jobs(km))
