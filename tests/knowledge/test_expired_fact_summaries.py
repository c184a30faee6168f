"""KC-0.3 / KC-5.9 / KC-6.2 / KC-6.7 (kg41, red35's leftover): a fact whose TTL has passed is
*expired*, not current, and no read serves it. But the text the jobs wrote from it did: a
cluster's summary (a broad retrieve's "Overview", Bob's and the shared scope's) and an entity's
summary (``entities()``) went on quoting the expired fact until the next clustering run or
summary refresh, or until the store purged the fact's record (its deletion hook clears them,
red35). Expiry is not erasure (the row stays, ``get`` shows it ``expired``), so nothing is
deleted at expiry; the reads decide: a cluster summary is not served while one of its member
facts has expired (the next clustering run takes the fact out and writes it again), an entity
summary is not served when a fact linked to the entity expired after the summary was written,
and the summary refresh counts such an entity stale, so it is written again from the facts
left."""

from __future__ import annotations

from .test_cluster_summary_provenance import AGENT, CODE, _bobs_overview, _echo
from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)


def _room(km, clock) -> None:
    km.add_knowledge(AGENT, facts=[
        {"subject": "Room 12", "fact": f"Room 12 door code is {CODE}", "subject_type": "place", "ttl_days": 1},
        {"subject": "Room 12", "fact": "Room 12 has a sea view", "subject_type": "place"},
        {"subject": "Room 12", "fact": "Room 12 has two beds", "subject_type": "place"},
    ], session_id="lobby")
    clock.advance(minutes=1)


def _entity_summary(km, user_id=None):
    return {e.canonical_key: e.summary_text for e in km.entities(AGENT, user_id=user_id)}["place:room_12"]


def test_an_expired_fact_leaves_the_overview_before_the_next_clustering_run(env):  # noqa: F811
    _, store, km, llm, clock = env
    _room(km, clock)
    _echo(llm)
    assert km.cluster_facts(AGENT).clusters_created == 1
    assert CODE in _bobs_overview(km)
    clock.advance(days=2)  # the code's TTL passed; no purge, no job ran
    assert [f.status for f in km.get_all(AGENT, include_inactive=True) if CODE in f.fact_text] == ["expired"]
    overview = _bobs_overview(km)
    assert CODE not in overview, overview
    assert "sea view" in km.retrieve(AGENT, "tell me everything about all the rooms").context  # the facts still are
    shared = km.retrieve(AGENT, "tell me everything about all the rooms").context
    assert CODE not in shared
    # the next run takes the expired fact out and writes the summary again: served again
    assert km.cluster_facts(AGENT).summaries_generated == 1
    overview = _bobs_overview(km)
    assert "Overview:" in overview and "sea view" in overview and CODE not in overview


def test_an_expired_fact_leaves_the_entity_summary_until_it_is_rewritten(env):  # noqa: F811
    _, store, km, llm, clock = env
    _room(km, clock)
    llm.route("entity_summary", lambda p: {"summary": "; ".join(p["facts"])})
    assert km.refresh_summaries(AGENT).summaries_refreshed == 1
    assert CODE in _entity_summary(km, "bob")
    clock.advance(days=2)
    assert _entity_summary(km, "bob") is None and _entity_summary(km) is None
    # stale now: the refresh writes it again from the facts left (not after the 7-day interval)
    assert km.refresh_summaries(AGENT).summaries_refreshed == 1
    summary = _entity_summary(km, "bob")
    assert "sea view" in summary and CODE not in summary
    clock.advance(days=1)
    assert _entity_summary(km, "bob") == summary  # a fact that expired before it was written does not hide it
    assert km.refresh_summaries(AGENT).summaries_refreshed == 0


def test_a_summary_without_expiring_facts_is_served_as_before(env):  # noqa: F811
    _, store, km, llm, clock = env
    km.add_knowledge(AGENT, facts=[{"subject": "Room 12", "fact": t, "subject_type": "place"}
                                   for t in ("Room 12 has a sea view", "Room 12 has two beds")], session_id="lobby")
    _echo(llm)
    llm.route("entity_summary", lambda p: {"summary": "; ".join(p["facts"])})
    km.cluster_facts(AGENT)
    km.refresh_summaries(AGENT)
    clock.advance(days=3)
    assert "sea view" in _bobs_overview(km).split("Overview:")[1]
    assert "sea view" in _entity_summary(km, "bob")


def test_a_write_after_expiry_does_not_show_the_model_a_summary_quoting_the_expired_fact(env):  # noqa: F811
    """KC-4.6: memory-aware extraction sends a named entity's summary as existing knowledge;
    one quoting an expired fact is replaced by the entity's current facts."""
    from .helpers import extract

    _, store, km, llm, clock = env
    _room(km, clock)
    llm.route("entity_summary", lambda p: {"summary": "; ".join(p["facts"])})
    km.refresh_summaries(AGENT)
    clock.advance(days=2)
    llm.route("extract", extract([("Room 12", "place")], [("Room 12", "Room 12 has a balcony")]))
    km.write(AGENT, "Room 12 got a new balcony", "Desk", session_id="lobby")
    (prompt,) = [p for name, p in llm.calls if name == "extract"]
    (room,) = [x for x in prompt["existing_knowledge"] if x["entity_key"] == "place:room_12"]
    assert room["summary"] is None and CODE not in str(prompt), room
