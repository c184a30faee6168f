"""KC §6 background jobs, rule by rule (SQLite; Oracle-parametrised and skipped)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from oramem.errors import StoreError
from oramem.testing import ScriptedLLM

from .helpers import T0, extract
from .read_helpers import hybrid_store, write_facts


@pytest.fixture
def store(engine, tmp_path, clock):
    s = hybrid_store(tmp_path, clock)
    yield s
    s.close()


def _rows(km, table, *where):
    with km._backend.read() as c:
        return [dict(r) for r in c.execute(sa.select(table).where(*where)).mappings()]


def _two_entities(km, llm, clock):
    write_facts(km, llm, [("Pedro", "person")], [("Pedro", "Pedro plays chess"), ("Pedro", "Pedro drinks coffee")])
    clock.advance()
    write_facts(km, llm, [("Ana", "person")], [("Ana", "Ana grows tomatoes"), ("Ana", "Ana keeps bees")])
    clock.advance()


# ----------------------------------------------------------------------------- KC-6.2
def test_clustering_members_summary_lines_and_deactivation(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person")], [
        {"subject": "Pedro", "fact": "Pedro's favourite colour is green", "attribute_key": "favorite_color", "value": "green"},
        {"subject": "Pedro", "fact": "Pedro plays chess"}]))
    km.write("a1", "my favourite colour is green and I play chess", "Pedro")
    llm.route("cluster_summary", {"summary": "Pedro's tastes."})
    r = km.cluster_facts("a1")
    assert (r.clusters_created, r.facts_assigned, r.summaries_generated) == (1, 2, 1)
    lines = llm.calls_for("cluster_summary")[0]["facts"]
    assert "Pedro's favourite colour is green [favorite_color = green]" in lines and "Pedro plays chess" in lines
    assert all("None" not in x and "unknown" not in x for x in lines)
    cl = _rows(km, km._tables.cluster)[0]
    assert (cl["cluster_type"], cl["label"], cl["fact_count"], cl["summary_text"]) == ("entity", "Pedro", 2, "Pedro's tastes.")
    assert cl["embedding_vec"] is not None
    again = km.cluster_facts("a1")
    assert (again.clusters_created, again.clusters_reinforced, again.facts_assigned, again.summaries_generated) == (0, 0, 0, 0)
    # a third fact changes membership: reinforced, summary regenerated
    clock.advance()
    write_facts(km, llm, [("Pedro", "person")], [("Pedro", "Pedro runs marathons")])
    r = km.cluster_facts("a1")
    assert (r.clusters_created, r.clusters_reinforced, r.facts_assigned, r.summaries_generated) == (0, 1, 1, 1)
    # past cluster_max_age_days the group falls below the minimum: deactivated, facts unassigned
    clock.now = T0 + timedelta(days=200)
    r = km.cluster_facts("a1")
    assert r.facts_assigned == 3
    assert _rows(km, km._tables.cluster)[0]["is_active"] is False
    assert all(f.cluster_id is None for f in km.get_all("a1"))


def test_clustering_llm_failure_uses_mean_vector(km, llm, clock):
    _two_entities(km, llm, clock)
    llm.route("cluster_summary", RuntimeError("down"))
    r = km.cluster_facts("a1")
    assert (r.clusters_created, r.summaries_generated) == (2, 0)
    assert all(c["embedding_vec"] is not None and c["summary_text"] is None for c in _rows(km, km._tables.cluster))


# ----------------------------------------------------------------------------- KC-6.3
def test_communities_skip_create_and_reinforce(km, llm, clock):
    assert km.detect_communities("a1").skip_reason == "insufficient clusters"
    _two_entities(km, llm, clock)
    llm.route("cluster_summary", {"summary": "Hobbies at home."})  # identical summaries: cosine 1
    km.cluster_facts("a1")
    llm.route("community", {"title": "Home hobbies", "summary": "Both have home hobbies."})
    r = km.detect_communities("a1")
    assert (r.communities_created, r.clusters_in_communities, r.skipped) == (1, 2, False)
    mo = _rows(km, km._tables.meta_observation)[0]
    assert (mo["observation_type"], mo["title"], mo["confidence"], mo["importance"]) == ("community_theme", "Home hobbies", 0.7, 0.8)
    assert len(mo["supporting_fact_ids"]) == 4 and mo["embedding_vec"] is not None
    r2 = km.detect_communities("a1")
    assert (r2.communities_created, r2.communities_reinforced) == (0, 1)
    assert _rows(km, km._tables.meta_observation)[0]["times_reinforced"] == 1
    assert len(llm.calls_for("community")) == 1


def test_communities_need_different_entities_and_threshold(make_km, llm, clock):
    km = make_km(community_similarity_threshold=1.01)
    _two_entities(km, llm, clock)
    llm.route("cluster_summary", {"summary": "Hobbies at home."})
    km.cluster_facts("a1")
    r = km.detect_communities("a1")
    assert (r.communities_created, r.clusters_in_communities) == (0, 0)


# ----------------------------------------------------------------------------- KC-6.4
def test_consolidation_rules(km, llm, clock):
    r = km.consolidate("a1")
    assert (r.skipped, r.skip_reason) == (True, "insufficient events")
    llm.route("event_emotion", RuntimeError("no emotion"))
    for i in range(3):
        write_facts(km, llm, [("Pedro", "person")], [("Pedro", f"Pedro walked {i + 3} kilometres")])
        clock.advance()
    llm.route("event_emotion", {"emotion": "trust", "intensity": 0.4, "energy": "low"})
    llm.route("consolidate", RuntimeError("boom"))
    r = km.consolidate("a1")
    assert r.skipped and r.skip_reason.startswith("llm: ") and r.events_processed == 3
    # events lacking an emotion were tagged first
    assert all(e["emotion_primary"] == "trust" for e in _rows(km, km._tables.event))
    good = {"type": "pattern", "title": "Walks daily", "text": "Pedro walks every day.", "supporting_event_indices": [1, 2],
            "supporting_fact_indices": [1]}
    bad = [dict(good, type="gossip"), dict(good, title=""), dict(good, supporting_event_indices=[99])]
    llm.route("consolidate", {"observations": bad + [good]})
    r = km.consolidate("a1")
    assert (r.observations_created, r.observations_reinforced, r.skipped) == (1, 0, False)
    payload = llm.calls_for("consolidate")[-1]
    assert len(payload["events"]) == 3 and len(payload["facts"]) == 3
    r = km.consolidate("a1")
    assert (r.observations_created, r.observations_reinforced) == (0, 1)
    mo = _rows(km, km._tables.meta_observation)[0]
    assert mo["times_reinforced"] == 1 and mo["confidence"] == pytest.approx(0.75)


# ----------------------------------------------------------------------------- KC-6.5
def test_memify_edge_decay_stale_clear_and_store_metadata(km, llm, clock, store):
    llm.route("extract", extract([("Pedro", "person"), ("Ana", "person")], [
        {"subject": "Pedro", "fact": "Pedro went to a jazz concert", "category": "specific_event", "confidence": "weak_inference"}],
        [("Pedro", "Ana", "friend of")]))
    r = km.write("a1", "I went to a jazz concert with my friend Ana", "Pedro")
    s_id = r.facts_added[0]["fact_id"]
    clock.now = T0 + timedelta(days=400)
    edge0 = km.relationships("a1")[0]
    m = km.memify("a1")
    # the jazz fact and the relation's mirror fact (confidence .6) are both below the threshold
    assert m.facts_marked_stale == 2 and m.edges_reinforced == 0 and km.get("a1", s_id).is_stale
    assert km.relationships("a1")[0].strength == pytest.approx(max(0.1, 0.9 * edge0.strength))
    md = {x.id: x.metadata for x in store.list("fact", agent_id="a1", limit=None)}
    assert md[s_id]["kg_is_stale"] is True
    # the decayed edge's watermark moved: no second decay at the same time
    assert km.memify("a1").facts_marked_stale == 0
    assert km.relationships("a1")[0].strength == pytest.approx(max(0.1, 0.9 * edge0.strength))
    # a lower threshold clears the flag (and the store metadata follows)
    km2_cfg = {"vitality_stale_threshold": 0.05}
    from oramem.knowledge import KnowledgeConfig, KnowledgeMemory

    km2 = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False, **km2_cfg), clock=clock)
    try:
        km2.memify("a1")
        assert not km2.get("a1", s_id).is_stale
        md = {x.id: x.metadata for x in store.list("fact", agent_id="a1", limit=None)}
        assert md[s_id]["kg_is_stale"] is False
    finally:
        km2.close()


# ----------------------------------------------------------------------------- KC-6.6, KC-6.7
def test_entity_importance_and_summary_refresh(km, llm, clock):
    write_facts(km, llm, [("Pedro", "person"), ("Ana", "person")], [("Pedro", "Pedro plays chess"), ("Pedro", "Pedro drinks coffee"),
                                                                     ("Ana", "Ana keeps bees")], [("Pedro", "Ana", "friend of")])
    r = km.score_entity_importance("a1")
    assert r.entities_scored == 2 and r.top_entities[0][0] == "person:pedro"
    assert {e.canonical_key: e.importance_score for e in km.entities("a1")}["person:pedro"] == pytest.approx(r.top_entities[0][1])
    llm.route("entity_summary", lambda p: {"summary": f"About {p['display_name']} ({len(p['facts'])} facts)."})
    s = km.refresh_summaries("a1")
    assert (s.summaries_refreshed, s.summaries_skipped) == (2, 0)
    assert {e.canonical_key: e.summary_text for e in km.entities("a1")}["person:pedro"] == "About Pedro (3 facts)."
    s = km.refresh_summaries("a1")
    assert (s.summaries_refreshed, s.summaries_skipped) == (0, 2)
    clock.advance()
    write_facts(km, llm, [("Ana", "person")], [("Ana", "Ana grows tomatoes")])
    s = km.refresh_summaries("a1")
    assert (s.summaries_refreshed, s.summaries_skipped) == (1, 1)
    clock.now = clock.now + timedelta(days=8)
    assert km.refresh_summaries("a1").summaries_refreshed == 2
    with_limit = km.run_background("a1", jobs=["summary_refresh"])
    assert list(with_limit.results) == ["summary_refresh"]


def test_entity_importance_all_equal_is_half(km, llm, clock):
    write_facts(km, llm, [("Ana", "person"), ("Bia", "person")], [("Ana", "Ana keeps bees"), ("Bia", "Bia keeps bees")])
    r = km.score_entity_importance("a1")
    scores = dict(r.top_entities)
    # density, recency and retrievals are equal (0.5 each); Pedro-less world, no edges: degree equal too
    assert scores["person:ana"] == pytest.approx(0.5) and scores["person:bia"] == pytest.approx(0.5)


# ----------------------------------------------------------------------------- KC-6.1
def test_run_background_isolates_failures(km, llm, clock, monkeypatch):
    from oramem.knowledge.jobs import run as jobs

    _two_entities(km, llm, clock)

    async def broken(*a, **k):
        raise StoreError("disk gone")

    monkeypatch.setattr(jobs, "cluster_facts", broken)
    llm.route("entity_summary", {"summary": "s"})
    llm.route("consolidate", {"observations": []})
    r = km.run_background("a1")
    assert r.errors == {"clustering": "StoreError: disk gone"}
    assert "memify" in r.results and "entity_importance" in r.results and r.duration_ms > 0
    with pytest.raises(ValueError):
        km.run_background("a1", jobs=["nope"])


# ----------------------------------------------------------------------------- KC-6.8 CLI
def _state(tmp_path, as_json=False):
    from oramem.cli import State

    return State(db=str(tmp_path / "cli.db"), store_id=None, json=as_json, embed_url=None, embed_model=None,
                 embed_dim=None, store_strategy="hybrid", db_given=True)


def test_cli_retrieve_and_jobs(tmp_path, monkeypatch, engine):
    from oramem.knowledge import KnowledgeMemory
    from oramem.cli.cmd_knowledge import knowledge

    monkeypatch.delenv("ORAMEM_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("ORAMEM_LLM_MODEL", raising=False)
    st = _state(tmp_path)
    store = st.open(create=True)
    llm = ScriptedLLM({"event_emotion": {"emotion": "joy", "intensity": 0.5, "energy": "high"},
                       "extract": extract([("Pedro", "person")], [("Pedro", "Pedro lives in Lisbon")])})
    km = KnowledgeMemory(store, llm)
    km.write("a1", "I live in Lisbon", "Pedro")
    km.close()
    st.close()
    runner = CliRunner()
    st = _state(tmp_path)
    res = runner.invoke(knowledge, ["retrieve", "a1", "Where does Pedro live?"], obj=st)
    st.close()
    assert res.exit_code == 0, res.output
    assert "Pedro lives in Lisbon" in res.output and "Known facts:" in res.output
    st = _state(tmp_path)
    res = runner.invoke(knowledge, ["jobs", "--all-agents"], obj=st)
    st.close()
    assert res.exit_code == 0, res.output
    out = [json.loads(x) for x in res.output.splitlines()]
    assert [o["agent_id"] for o in out] == ["a1"]
    assert set(out[0]["results"]) == {"entity_importance", "emotional_trends", "memify"} and out[0]["errors"] == {}
    assert out[0]["results"]["memify"]["facts_scored"] == 1
    st = _state(tmp_path)
    res = runner.invoke(knowledge, ["jobs", "a1", "--jobs", "bogus"], obj=st)
    st.close()
    assert res.exit_code == 2
    st = _state(tmp_path)
    res = runner.invoke(knowledge, ["jobs"], obj=st)
    st.close()
    assert res.exit_code == 2
    st = _state(tmp_path)
    res = runner.invoke(knowledge, ["jobs", "a1", "--jobs", "consolidation"], obj=st)
    st.close()
    # without an LLM endpoint consolidation still runs; it has too few events and says so
    assert res.exit_code == 0 and json.loads(res.output)["results"]["consolidation"]["skip_reason"] == "insufficient events"
