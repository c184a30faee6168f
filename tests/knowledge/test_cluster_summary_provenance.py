"""KC-6.2 / KC-3.6 / KC-3.10 (red35): a cluster's ``summary_text`` (and its embedding) is written
by the model from the cluster's member facts, and is shown to every reader of its scope (the
"Overview" of a broad retrieve). Erasure finds a cluster through its members' ``cluster_id``,
and the clustering job rewrites a summary only when the membership it compares changed. Before
this rule a summary outlived the facts it names:

- ``delete`` of a fact (and the store-side delete the deletion hook sees) took the row, so the
  next run saw equal memberships and never rewrote the summary: Bob's broad retrieve went on
  showing the agent's deleted door code, for good;
- ``retract_fact``: shown until the next clustering run;
- a cluster deactivated (below ``cluster_min_facts``) kept its summary with no member left, so
  erasing Alice left her words (a shared fact learned in her private thread) in it;
- a changed cluster whose rewrite failed kept the old summary while the facts that left lost
  their ``cluster_id``: after Alice's erasure, Bob's Overview still quoted her.

Now a summary (and the vector embedded from it) is cleared when a fact it was written from
leaves by delete, retract or purge, or when its cluster is deactivated or its rewrite failed
after facts left; a cluster without a summary gets one at the next run."""

from __future__ import annotations

import sqlalchemy as sa

from oramem.knowledge.errors import LLMError

from .helpers import extract, reconcile
from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"
ROOM = [("Room 12", "place")]
CODE = "4417"


def _echo(llm) -> None:
    llm.route("cluster_summary", lambda p: {"summary": " / ".join(p["facts"])})


def _shared_room(km, llm, clock, texts, session_id="lobby") -> list[str]:
    ids = []
    for text in texts:
        fact = ("Room 12", text, "door_code") if "door code" in text else ("Room 12", text)
        llm.route("extract", extract(ROOM, [fact]))
        ids += [f["fact_id"] for f in km.write(AGENT, text, "Desk", session_id=session_id).facts_added]
        clock.advance(minutes=1)
    return ids


def _cluster_texts(km) -> list[str]:
    """Every cluster's summary, active or not, of every scope."""
    cl = km.runtime.tables.cluster
    with km.runtime.backend.read() as conn:
        return [r[0] or "" for r in conn.execute(sa.select(cl.c.summary_text))]


def _bobs_overview(km) -> str:
    result = km.retrieve(AGENT, "tell me everything about all the rooms", user_id="bob")
    assert result.plan is not None and result.plan.broad_query  # the broad query shows cluster summaries
    return result.context


def _summary_calls(llm) -> list:
    return [p for name, p in llm.calls if name == "cluster_summary"]


def test_a_deleted_shared_fact_leaves_no_cluster_summary_bob_reads(env):  # noqa: F811
    _, store, km, llm, clock = env
    code, view, beds = _shared_room(km, llm, clock, [f"Room 12 door code is {CODE}", "Room 12 has a sea view",
                                                    "Room 12 has two beds"])
    _echo(llm)
    assert km.cluster_facts(AGENT).clusters_created == 1
    assert CODE in _bobs_overview(km)
    assert km.delete(AGENT, code)
    assert CODE not in _bobs_overview(km), "the deleted fact, quoted by its cluster's summary"
    # the next run writes the summary again from the facts left
    calls = len(_summary_calls(llm))
    km.cluster_facts(AGENT)
    assert len(_summary_calls(llm)) == calls + 1
    assert CODE not in _bobs_overview(km) and "sea view" in _bobs_overview(km)
    assert all(CODE not in text for text in _cluster_texts(km))
    # and a run after that has nothing left to do (KC-6.1)
    res = km.cluster_facts(AGENT)
    assert (res.clusters_created, res.clusters_reinforced, res.summaries_generated, res.facts_assigned) == (0, 0, 0, 0)
    assert len(_summary_calls(llm)) == calls + 1


def test_a_fact_record_deleted_in_the_store_leaves_no_cluster_summary(env):  # noqa: F811
    """The deletion hook's path (a store ``delete`` of the fact record, as a TTL purge)."""
    _, store, km, llm, clock = env
    code, _, _ = _shared_room(km, llm, clock, [f"Room 12 door code is {CODE}", "Room 12 has a sea view",
                                               "Room 12 has two beds"])
    _echo(llm)
    km.cluster_facts(AGENT)
    assert store.delete("fact", code) == 1
    assert CODE not in _bobs_overview(km)
    km.cluster_facts(AGENT)
    assert all(CODE not in text for text in _cluster_texts(km))


def test_a_retracted_fact_leaves_the_overview_at_once(env):  # noqa: F811
    _, store, km, llm, clock = env
    code, _, _ = _shared_room(km, llm, clock, [f"Room 12 door code is {CODE}", "Room 12 has a sea view",
                                               "Room 12 has two beds"])
    _echo(llm)
    km.cluster_facts(AGENT)
    assert km.retract_fact(AGENT, code)
    assert CODE not in _bobs_overview(km), "the retracted fact, quoted by its cluster's summary"


def _alices_room(km, llm, clock, store) -> str:
    """A shared write in Alice's private thread (the desk notes what she said as the hotel's
    knowledge): erasing her takes it (KC-3.10, a fact learned from an event of her thread)."""
    store.add([f"alice: my room code is {CODE}"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    (fact,) = _shared_room(km, llm, clock, [f"Room 12 door code is {CODE}"], session_id="alice-chat")
    return fact


def test_erasing_alice_leaves_no_deactivated_cluster_quoting_her(env):  # noqa: F811
    _, store, km, llm, clock = env
    _alices_room(km, llm, clock, store)
    (view,) = _shared_room(km, llm, clock, ["Room 12 has a sea view"])
    _echo(llm)
    assert km.cluster_facts(AGENT).clusters_created == 1
    assert km.retract_fact(AGENT, view)
    km.cluster_facts(AGENT)  # one current fact left: the cluster is deactivated
    km.forget(user_id="alice")
    assert [f.fact_text for f in km.get_all(AGENT, include_inactive=True)] == ["Room 12 has a sea view"]
    assert all(CODE not in text for text in _cluster_texts(km)), _cluster_texts(km)


def test_erasing_alice_after_a_failed_rewrite_leaves_no_overview_quoting_her(env):  # noqa: F811
    _, store, km, llm, clock = env
    _alices_room(km, llm, clock, store)
    _shared_room(km, llm, clock, ["Room 12 has a sea view", "Room 12 has two beds"])
    _echo(llm)
    km.cluster_facts(AGENT)
    assert CODE in _bobs_overview(km)
    # the desk learns the new code in the lobby: it replaces hers (KC-4.11, an UPDATE) ...
    llm.route("reconcile", reconcile(("UPDATE", 1, 1)))
    _shared_room(km, llm, clock, ["Room 12 door code is 5520"])
    assert {f.fact_text for f in km.get_all(AGENT)} == {"Room 12 door code is 5520", "Room 12 has a sea view",
                                                        "Room 12 has two beds"}
    # ... and the next run's rewrite fails: her fact left the cluster, the old summary named it
    llm.route("cluster_summary", LLMError("model down"))
    km.cluster_facts(AGENT)
    km.forget(user_id="alice")
    assert CODE not in _bobs_overview(km)
    assert all(CODE not in text for text in _cluster_texts(km)), _cluster_texts(km)
    # the model answers again: the cluster gets its summary back, from the facts it holds
    _echo(llm)
    assert km.cluster_facts(AGENT).summaries_generated == 1
    assert "5520" in _bobs_overview(km) and CODE not in _bobs_overview(km)


def test_a_fact_record_deleted_in_the_store_leaves_no_entity_summary_naming_it(env):  # noqa: F811
    """KC-6.7 on the deletion hook's path: red33 cleared the summaries of a deleted or retracted
    fact's entities for ``delete`` and ``retract_fact``; a store ``delete`` of the fact record
    (or its TTL purge) reached the hook, which purged the fact and left the summary naming it."""
    _, store, km, llm, clock = env
    code, _, _ = _shared_room(km, llm, clock, [f"Room 12 door code is {CODE}", "Room 12 has a sea view",
                                               "Room 12 has two beds"])
    llm.route("entity_summary", lambda p: {"summary": "; ".join(p["facts"])})
    assert km.refresh_summaries(AGENT).summaries_refreshed == 1
    assert CODE in {e.canonical_key: e.summary_text for e in km.entities(AGENT)}["place:room_12"]
    assert store.delete("fact", code) == 1
    summary = {e.canonical_key: e.summary_text for e in km.entities(AGENT)}["place:room_12"]
    assert summary is None or CODE not in summary, summary
    assert km.refresh_summaries(AGENT).summaries_refreshed == 1  # written again from the facts left
    summary = {e.canonical_key: e.summary_text for e in km.entities(AGENT)}["place:room_12"]
    assert "sea view" in summary and CODE not in summary


def test_erasing_alice_leaves_no_merged_away_entity_summary_quoting_her(env):  # noqa: F811
    """KC-6.5 merges / KC-3.10: a merge moves the loser's facts and links to the winner and
    deactivates the loser, which kept the summary written from those facts. An erasure clears
    the summaries of the entities linked to her facts (the winner now), so the loser's summary
    quoted her after her ``forget``, in every reader's ``entities(include_inactive=True)``."""
    import dataclasses

    _, store, km, llm, clock = env
    km.add_knowledge(AGENT, facts=[{"subject": "Room 12", "fact": f"Room 12 has feature {i}", "subject_type": "place"}
                                   for i in range(3)], session_id="lobby")
    # the lobby names "Room Twelve" first: the entity is not born of her words, so it stays
    # after her erasure (KC-3.10 by provenance; one only her words made goes whole, kg41)
    km.add_entity(AGENT, "Room Twelve", type="place")
    store.add([f"alice: my room code is {CODE}"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    km.add_knowledge(AGENT, facts=[{"subject": "Room Twelve", "fact": f"Room Twelve door code is {CODE}",
                                    "subject_type": "place"}], session_id="alice-chat")
    llm.route("entity_summary", lambda p: {"summary": "; ".join(p["facts"])})
    assert km.refresh_summaries(AGENT).summaries_refreshed == 2
    km.config = dataclasses.replace(km.config, memify_merge_similarity_threshold=-1.0)
    llm.route("entity_merge", {"should_merge": True})
    assert km.memify(AGENT).merges_executed == 1
    # the winner now holds the loser's facts: its summary is rewritten from all of them
    assert km.refresh_summaries(AGENT).summaries_refreshed == 1
    assert CODE in {e.canonical_key: e.summary_text for e in km.entities(AGENT)}["place:room_12"]

    km.forget(user_id="alice")

    texts = {e.canonical_key: e.summary_text for e in km.entities(AGENT, user_id="bob", include_inactive=True)}
    assert "place:room_twelve" in texts and all(CODE not in (t or "") for t in texts.values()), texts
