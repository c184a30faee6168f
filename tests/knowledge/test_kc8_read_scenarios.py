"""KC §8 acceptance scenarios, read side and jobs: 1, 2, 3 (retrieve), 8, 9, 13 (retrieve
half), 14 (retrieve after delete, isolation), 15 (trigger, context, expiry), 17, 19, 20."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa


from .helpers import T0, extract, reconcile
from .read_helpers import hybrid_store, ids_of, write_facts
from .test_kc8_scenarios import scenario1


@pytest.fixture
def store(engine, tmp_path, clock):
    s = hybrid_store(tmp_path, clock)
    yield s
    s.close()


def test_s1_retrieve_current_and_as_of(km, llm, clock):
    f1, f2, f3, t2, t3 = scenario1(km, llm, clock)
    r = km.retrieve("a1", "Where does Pedro live?")
    got = ids_of(r)
    assert f3 in got and f1 not in got and f2 not in got
    assert r.warnings == []
    past = km.retrieve("a1", "Where does Pedro live?", as_of=t2 + timedelta(minutes=1))
    assert [f for f in ids_of(past) if f in (f1, f2, f3)] == [f2]
    assert "Pedro lives in Curitiba" in past.context and "Known facts:" in past.context


def test_s2_retraction_retrieve(km, llm, clock):
    r1 = write_facts(km, llm, [("Pedro", "person"), ("Vertix", "organization")], [("Pedro", "Pedro works at Vertix", "employer")],
                     [("Pedro", "Vertix", "works at")])
    f1 = r1.facts_added[0]["fact_id"]
    clock.advance()
    llm.route("reconcile", reconcile(("DELETE", 1, 1)))
    write_facts(km, llm, [("Pedro", "person"), ("Vertix", "organization")], [("Pedro", "Pedro no longer works at Vertix", "employer")])
    assert f1 not in ids_of(km.retrieve("a1", "Where does Pedro work?"))
    assert f1 in ids_of(km.retrieve("a1", "Where does Pedro work?", as_of=T0))


def test_s3_correction_time_travel(km, llm, clock):
    r1 = write_facts(km, llm, [("Pedro", "person"), ("Rex", "pet")], [("Pedro", "Pedro's dog is called Rex", "pet_name")])
    f1 = r1.facts_added[0]["fact_id"]
    clock.advance()
    llm.route("reconcile", reconcile(("UPDATE", 1, 1, "correction")))
    r2 = write_facts(km, llm, [("Pedro", "person"), ("Max", "pet")], [("Pedro", "Pedro's dog is called Max", "pet_name")])
    f2 = r2.facts_updated[0]["fact_id"]
    q = "What is the name of Pedro's dog?"
    t1m = T0 + timedelta(minutes=1)
    now_view = ids_of(km.retrieve("a1", q, as_of=t1m))
    assert f2 in now_view and f1 not in now_view
    old_view = ids_of(km.retrieve("a1", q, as_of=t1m, known_at=t1m))
    assert f1 in old_view and f2 not in old_view


def _s8_world(km, llm):
    r = write_facts(km, llm, [("Pedro", "person"), ("Ana", "person")],
                    [("Ana", "Ana plays the violin"), ("Pedro", "Pedro and Ana are partners")],
                    [("Pedro", "Ana", "partner of")])
    f = r.facts_added[0]["fact_id"]
    r2 = write_facts(km, llm, [("Vertix", "organization")], [("Vertix", "Vertix sells accounting software")])
    g = r2.facts_added[0]["fact_id"]
    return f, g


def test_s8_usage_feeds_vitality(km, llm, clock):
    f, g = _s8_world(km, llm)
    clock.now = T0 + timedelta(days=1)
    for _ in range(3):
        r = km.retrieve("a1", "Pedro violin")
        assert f in ids_of(r) and g not in ids_of(r)
    ff, gg = km.get("a1", f), km.get("a1", g)
    assert (ff.times_retrieved, ff.last_retrieved_at) == (3, T0 + timedelta(days=1))
    assert gg.times_retrieved == 0 and gg.last_retrieved_at is None
    edges = km.relationships("a1")
    assert [e.rel_type for e in edges] == ["partner_of"] and edges[0].last_used_at == T0 + timedelta(days=1)
    m = km.memify("a1")
    assert m.facts_scored >= 2
    assert km.get("a1", f).vitality_score == pytest.approx(0.6134, abs=1e-3)
    assert km.get("a1", g).vitality_score == pytest.approx(0.4381, abs=1e-3)
    # the used edge is reinforced once (watermark), not again on a rerun
    assert m.edges_reinforced == 1 and km.memify("a1").edges_reinforced == 0
    assert km.relationships("a1")[0].strength == pytest.approx(edges[0].strength + 0.05)


def test_s9_stale_exclusion(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person")], [
        {"subject": "Pedro", "fact": "Pedro went to a jazz concert", "category": "specific_event", "confidence": "weak_inference"},
        {"subject": "Pedro", "fact": "Pedro was born in Recife", "category": "biographical_milestone", "confidence": "explicit_statement"},
    ]))
    r = km.write("a1", "I went to a jazz concert. I was born in Recife.", "Pedro")
    s_id, p_id = r.facts_added[0]["fact_id"], r.facts_added[1]["fact_id"]
    clock.now = T0 + timedelta(days=400)
    m = km.memify("a1")
    assert m.facts_marked_stale == 1
    s, p = km.get("a1", s_id), km.get("a1", p_id)
    assert s.is_stale and s.status == "stale" and s.vitality_score == pytest.approx(0.1315, abs=1e-3)
    assert not p.is_stale
    for q in ("jazz concert", "Pedro went to a jazz concert", "Pedro"):
        got = ids_of(km.retrieve("a1", q))
        assert s_id not in got, q
    assert p_id in ids_of(km.retrieve("a1", "Pedro"))  # graph still answers with the protected fact
    # as_of ignores stale flags; include_stale_facts brings it back
    assert s_id in ids_of(km.retrieve("a1", "jazz concert", as_of=clock.now))
    assert s_id in ids_of(km.retrieve("a1", "jazz concert", config_overrides={"include_stale_facts": True}))
    # a NOOP re-confirmation clears the flag
    clock.advance()
    llm.route("extract", extract([("Pedro", "person")], [{"subject": "Pedro", "fact": "Pedro went to a jazz concert",
                                                             "category": "specific_event"}]))
    llm.route("reconcile", reconcile(("NOOP", 1, 1)))
    km.write("a1", "I went to a jazz concert", "Pedro")
    assert not km.get("a1", s_id).is_stale
    assert s_id in ids_of(km.retrieve("a1", "jazz concert"))


async def test_s13_concurrent_retrieves_count_exactly(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro collects vinyl records")]))
    r = await km.write_async("a1", "I collect vinyl records", "Pedro")
    f = r.facts_added[0]["fact_id"]
    results = await asyncio.gather(*[km.retrieve_async("a1", "vinyl records") for _ in range(10)])
    assert all(f in ids_of(x) for x in results)
    assert all(x.warnings == [] for x in results)
    assert (await km.get_async("a1", f)).times_retrieved == 10


def test_s14_retrieve_after_delete_and_isolation(km, llm, clock):
    f1, f2, f3, *_ = scenario1(km, llm, clock)
    assert f3 in ids_of(km.retrieve("a1", "Where does Pedro live?"))
    assert km.retrieve("a2", "Where does Pedro live?").facts == []
    assert km.delete("a1", f3) is True
    r = km.retrieve("a1", "Where does Pedro live?")
    assert not set(ids_of(r)) & {f1, f2, f3}
    assert km.relationships("a1", include_inactive=True) == []


def test_s15_trigger_context_and_expiry(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person")], [],
                                 intentions=[{"trigger_type": "time", "trigger_condition": "on 2025-01-06",
                                              "intended_action": "call the dentist", "due_date": "2025-01-06"},
                                             {"trigger_type": "time", "trigger_condition": "on 2025-01-02",
                                              "intended_action": "renew the passport", "due_date": "2025-01-02"}],
                                 observations=[{"content": "Pedro needs to see the dentist", "topic": "health"}]))
    km.write("a1", "Remind me to call the dentist on 2025-01-06 and to renew the passport on 2025-01-02", "Pedro", session_id="s1")
    dentist = [i for i in km.intentions("a1") if i.intended_action == "call the dentist"][0]
    clock.now = datetime(2025, 1, 7, 9, 0, tzinfo=timezone.utc)
    r = km.retrieve("a1", "what should I do today?", session_id="s1")
    assert "Pending intentions:" in r.context and "- call the dentist (when: on 2025-01-06)" in r.context
    assert "Session notes:" in r.context and "- Pedro needs to see the dentist" in r.context
    assert dentist.id in [i.id for i in r.intentions]
    got = {i.id: i for i in km.intentions("a1")}
    assert got[dentist.id].status == "triggered" and got[dentist.id].triggered_at == clock.now
    t = km._tables
    with km._backend.read() as c:
        obs = c.execute(sa.select(t.session_observation)).mappings().one()
    assert obs["referenced_at"] == clock.now and obs["relative_offset"] == "0 messages ago"
    assert km.fulfill_intention("a1", dentist.id) is True
    assert km.intentions("a1", status="fulfilled")[0].id == dentist.id
    clock.now = datetime(2025, 1, 10, 9, 0, tzinfo=timezone.utc)
    km.memify("a1")
    assert [i.intended_action for i in km.intentions("a1", status="expired")] == ["renew the passport"]
    assert "call the dentist" not in km.retrieve("a1", "what should I do today?", session_id="s1").context


def _s17_world(km, llm, clock):
    write_facts(km, llm, [("Pedro", "person")], [("Pedro", "Pedro plays chess"), ("Pedro", "Pedro drinks coffee"),
                                                 ("Pedro", "Pedro runs marathons")])
    clock.advance()
    write_facts(km, llm, [("Ana Souza", "person")], [("Ana Souza", "Ana Souza works as a nurse"),
                                                    ("Ana Souza", "Ana Souza grows tomatoes")])
    clock.advance()
    write_facts(km, llm, [("Pedro", "person")], [], message="nothing new today, just saying hi again")


def test_s17_jobs_and_idempotence(km, llm, clock):
    _s17_world(km, llm, clock)
    llm.route("cluster_summary", {"summary": "Hobbies and habits."})
    llm.route("entity_summary", {"summary": "A person with hobbies."})
    llm.route("community", {"title": "Everyday life", "summary": "Hobbies and work."})
    llm.route("consolidate", {"observations": []})
    llm.route("entity_merge", {"should_merge": False})
    first = km.run_background("a1")
    assert first.errors == {}
    assert list(first.results) == ["entity_importance", "summary_refresh", "clustering", "community_detection",
                                   "consolidation", "emotional_trends", "memify"]
    assert first.results["clustering"].clusters_created == 2
    assert first.results["entity_importance"].top_entities[0][0] == "person:pedro"
    assert first.results["summary_refresh"].summaries_refreshed >= 2
    second = km.run_background("a1")
    assert second.errors == {}
    assert second.results["clustering"].clusters_created == 0
    assert second.results["clustering"].summaries_generated == 0
    assert second.results["clustering"].facts_assigned == 0
    assert second.results["summary_refresh"].summaries_refreshed == 0
    assert second.results["community_detection"].communities_created == 0


def test_s19_emotions_and_directives(make_km, llm, clock):
    km = make_km(contradiction_similarity_threshold=0.3)
    llm.route("event_emotion", {"emotion": "joy", "intensity": 0.8, "energy": "high"})
    for i in range(5):
        write_facts(km, llm, [("Pedro", "person")], [], message=f"what a wonderful sunny morning number {i}")
        clock.advance(hours=6)
    tr = km.emotional_trends("a1")
    assert (tr.dominant_emotion, tr.trend_direction, tr.observation_created, tr.events_analyzed) == ("joy", "stable", True, 5)
    pref = {"type": "behavioral_preference", "title": "Prefers short answers", "text": "Keep replies brief.",
            "supporting_event_indices": [1], "supporting_fact_indices": []}
    llm.route("consolidate", {"observations": [pref]})
    a = km.consolidate("a1")
    b = km.consolidate("a1")
    assert (a.observations_created, b.observations_reinforced) == (1, 1)
    llm.route("directives", {"directives_block": "- Keep replies brief.", "directives_used": 1})
    d1 = km.directives("a1")
    d2 = km.directives("a1")
    assert len(llm.calls_for("directives")) == 1
    assert (d1.text, d1.cache_hit, d2.cache_hit) == ("- Keep replies brief.", False, True)
    llm.route("consolidate", {"observations": [dict(pref, title="Prefers detailed answers", text="Explain in depth.")]})
    llm.route("contradiction", {"has_contradiction": True, "conflicting_directive": "Prefers short answers"})
    c = km.consolidate("a1")
    assert c.observations_created == 1
    t = km._tables
    with km._backend.read() as conn:
        rows = conn.execute(sa.select(t.meta_observation.c.title, t.meta_observation.c.is_active).where(
            t.meta_observation.c.observation_type == "behavioral_preference").order_by(t.meta_observation.c.title)).all()
    assert rows == [("Prefers detailed answers", True), ("Prefers short answers", False)]


CELLO = "She plays the cello in the Lisbon symphony orchestra every Friday evening with her old friends"


def test_s20_entity_merge(make_km, llm, clock):
    km = make_km(fuzzy_threshold=1.0, enable_llm_resolution=False)
    llm.route("extract", extract([("Ana Souza Silva", "person")], [("Ana Souza Silva", CELLO)]))
    km.write("a1", "Ana Souza Silva plays the cello in an orchestra", "Pedro")
    clock.advance()
    # a second "Ana Souza …" makes the short name ambiguous, so it is created on its own
    llm.route("extract", extract([("Ana Souza Lima", "person")], [("Ana Souza Lima", "Ana Souza Lima flies airplanes")]))
    km.write("a1", "Ana Souza Lima flies airplanes", "Pedro")
    clock.advance()
    llm.route("extract", extract([("Zé", "person"), ("Ana Souza", "person")],
                                 [("Ana Souza", CELLO)],
                                 [("Zé", "Ana Souza", "friend of")]))
    km.write("a1", "Ana Souza plays the cello in an orchestra; Zé is her friend", "Pedro")
    keys = sorted(e.canonical_key for e in km.entities("a1"))
    assert "person:ana_souza" in keys and "person:ana_souza_silva" in keys
    pair = {"person:ana_souza", "person:ana_souza_silva"}
    llm.route("entity_merge", lambda p: {"should_merge": {p["a"]["key"], p["b"]["key"]} == pair})
    m = km.memify("a1")
    assert m.merges_executed == 1
    ents = {e.canonical_key: e for e in km.entities("a1", include_inactive=True)}
    assert ents["person:ana_souza"].is_active and not ents["person:ana_souza_silva"].is_active
    assert "ana_souza_silva" in ents["person:ana_souza"].aliases
    assert all(f.entity_key != "person:ana_souza_silva" and "person:ana_souza_silva" not in f.entity_keys
               for f in km.get_all("a1", include_inactive=True))
    assert all("person:ana_souza_silva" not in (r.source_entity_key, r.target_entity_key)
               for r in km.relationships("a1", include_inactive=True))
    assert ents["person:ana_souza"].fact_count == len(km.get_all("a1", entity_keys=["person:ana_souza"]))
    r = km.retrieve("a1", "cello", entity_keys=["ana_souza_silva"])
    assert r.warnings == [] and r.expanded.primed_entities[0] == "person:ana_souza"
    assert r.facts and all("person:ana_souza" in km.get("a1", f.fact_id).entity_keys for f in r.facts)
    assert any(f.fact_text == CELLO and f.entity_key == "person:ana_souza" for f in r.facts)
    assert km.memify("a1").merges_executed == 0
