"""KC §5 read pipeline, rule by rule (SQLite; Oracle-parametrised and skipped with the
printed reason). Each signal is shown to contribute on its own."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from oramem import SQLiteMemoryStore
from oramem.knowledge import CompressedContext, KnowledgeConfig, KnowledgeMemory, ScoredFact, compress_context
from oramem.knowledge.read.temporal import temporal_range
from oramem.knowledge.text import estimate_tokens
from oramem.testing import HashEmbedder

from .helpers import T0, extract
from .read_helpers import hybrid_store, ids_of, write_facts


@pytest.fixture
def store(engine, tmp_path, clock):
    s = hybrid_store(tmp_path, clock)
    yield s
    s.close()


def _world(km, llm, clock):
    """Pedro —partner_of→ Ana —works_at→ Vertix; facts on each; a fact on Lisbon (unlinked)."""
    r = write_facts(km, llm, [("Pedro", "person"), ("Ana", "person")],
                    [("Ana", "Ana plays the violin"), ("Pedro", "Pedro and Ana are partners")], [("Pedro", "Ana", "partner of")])
    clock.advance()
    r2 = write_facts(km, llm, [("Ana", "person"), ("Vertix", "organization")],
                     [("Vertix", "Vertix sells accounting software"), ("Ana", "Ana works at Vertix")], [("Ana", "Vertix", "works at")])
    clock.advance()
    r3 = write_facts(km, llm, [("Lisbon", "place")], [("Lisbon", "Lisbon has a famous tram number 28")])
    clock.advance()
    return {"violin": r.facts_added[0]["fact_id"], "vertix": r2.facts_added[0]["fact_id"], "tram": r3.facts_added[0]["fact_id"]}


# ----------------------------------------------------------------------------- KC-5.1
def test_empty_query_and_validation(km):
    r = km.retrieve("a1", "   ")
    assert r.warnings == ["empty query"] and r.facts == []
    with pytest.raises(TypeError):
        km.retrieve("a1", 42)
    with pytest.raises(ValueError):
        km.retrieve("", "x")
    with pytest.raises(ValueError):
        km.retrieve("a1", "x", as_of="not a date")


def test_entity_keys_resolution_and_unknown(km, llm, clock):
    ids = _world(km, llm, clock)
    r = km.retrieve("a1", "software", entity_keys=["vertix"])  # slug
    assert ids["vertix"] in ids_of(r) and r.warnings == []
    assert all("organization:vertix" in km.get("a1", f).entity_keys for f in ids_of(r))
    r = km.retrieve("a1", "software", entity_keys=["organization:vertix", "nobody"])
    assert "unknown entity key: nobody" in r.warnings and ids["vertix"] in ids_of(r)
    r = km.retrieve("a1", "software", entity_keys=["nobody"])
    assert r.facts == [] and r.warnings == ["unknown entity key: nobody"]


# ----------------------------------------------------------------------------- KC-5.2
def test_skip_plan_no_llm_no_usage(km, llm, clock):
    ids = _world(km, llm, clock)
    n = len(llm.calls)
    r = km.retrieve("a1", "oi!", config_overrides={"enable_reranker": True})
    assert r.plan.strategy == "skip" and r.facts == [] and len(llm.calls) == n
    assert km.get("a1", ids["violin"]).times_retrieved == 0


def test_broad_query_doubles_topk_and_patterns_feed_keyword(km, llm, clock):
    _world(km, llm, clock)
    narrow = km.retrieve("a1", "Ana", config_overrides={"topk_facts": 1, "min_score": 0.0})
    broad = km.retrieve("a1", "tell me everything about Ana", config_overrides={"topk_facts": 1, "min_score": 0.0})
    assert len(narrow.facts) == 1 and len(broad.facts) == 2 and broad.plan.broad_query and broad.plan.max_facts == 100
    r = km.retrieve("a1", "which people do I know", config_overrides={"min_similarity": 0.99})
    assert [p.entity_pattern for p in r.plan.pattern_queries] == ["person:%"]
    person = [f for f in r.facts if f.entity_key.startswith("person:")]
    assert person and all(f.scores["keyword"] == 1.0 for f in person)


# ----------------------------------------------------------------------------- KC-5.3
def test_expansion_primes_aliases_names_neighbours_terms(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person"), ("Ana Souza", "person", ["Aninha"])],
                                 [{"subject": "Ana Souza", "fact": "Ana Souza's favourite food is lasagna", "attribute_key": "favorite_food",
                                   "value": "lasagna"}], [("Pedro", "Ana Souza", "partner of")]))
    km.write("a1", "Aninha loves lasagna", "Pedro")
    r = km.retrieve("a1", "what does aninha like?")
    assert r.expanded.primed_entities[:2] == ["person:ana_souza", "person:pedro"]
    assert r.plan.entities == r.expanded.primed_entities
    assert "favorite food" in r.expanded.expanded_terms and "lasagna" in r.expanded.expanded_terms


def test_expansion_terms_leave_out_expired_facts(km, llm, clock):
    """KC-5.3's terms come from the primed entities' current facts: a fact past its TTL adds
    none, one still within it does."""
    llm.route("extract", extract([("Ana Souza", "person")], [
        {"subject": "Ana Souza", "fact": "Ana Souza is in Porto this week", "attribute_key": "current_city", "value": "Porto",
         "ttl_days": 2},
        {"subject": "Ana Souza", "fact": "Ana Souza's favourite food is lasagna", "attribute_key": "favorite_food",
         "value": "lasagna"},
    ]))
    km.write("a1", "Ana is in Porto this week and loves lasagna", "Pedro")
    terms = km.retrieve("a1", "what about Ana Souza?").expanded.expanded_terms
    assert {"current city", "Porto", "favorite food", "lasagna"} <= set(terms)
    clock.advance(days=3)
    terms = km.retrieve("a1", "what about Ana Souza?").expanded.expanded_terms
    assert "favorite food" in terms and "lasagna" in terms
    assert "current city" not in terms and "Porto" not in terms


def test_temporal_range_phrases():
    now = datetime(2025, 3, 12, 15, 0, tzinfo=timezone.utc)  # a Wednesday
    d = lambda *a: datetime(*a, tzinfo=timezone.utc)  # noqa: E731
    assert temporal_range("what did I do yesterday", now) == (d(2025, 3, 11), d(2025, 3, 12))
    assert temporal_range("o que fiz hoje", now) == (d(2025, 3, 12), d(2025, 3, 13))
    assert temporal_range("last week", now) == (d(2025, 3, 3), d(2025, 3, 10))
    assert temporal_range("mês passado", now) == (d(2025, 2, 1), d(2025, 3, 1))
    assert temporal_range("ano passado", now) == (d(2024, 1, 1), d(2025, 1, 1))
    assert temporal_range("in March 2024", now) == (d(2024, 3, 1), d(2024, 4, 1))
    assert temporal_range("em 2023", now) == (d(2023, 1, 1), d(2024, 1, 1))
    assert temporal_range("on 2025-01-05", now) == (d(2025, 1, 5), d(2025, 1, 6))
    assert temporal_range("3 days ago", now) == temporal_range("há 3 dias", now) == (d(2025, 3, 9), d(2025, 3, 10))
    assert temporal_range("where do I live", now) is None
    sp = temporal_range("today", now, "America/Sao_Paulo")
    assert sp == (d(2025, 3, 12, 3), d(2025, 3, 13, 3))


def test_temporal_range_overlap_includes_closed_facts(km, llm, clock):
    from .helpers import reconcile

    r1 = write_facts(km, llm, [("Pedro", "person"), ("Porto", "place")], [("Pedro", "Pedro lives in Porto", "residence")])
    f1 = r1.facts_added[0]["fact_id"]
    clock.now = T0 + timedelta(days=40)
    llm.route("reconcile", reconcile(("UPDATE", 1, 1)))
    r2 = write_facts(km, llm, [("Pedro", "person"), ("Braga", "place")], [("Pedro", "Pedro lives in Braga", "residence")])
    f2 = r2.facts_updated[0]["fact_id"]
    r = km.retrieve("a1", "where did Pedro live on 2025-01-02")
    assert r.expanded.temporal_range[0] == datetime(2025, 1, 2, tzinfo=timezone.utc)
    assert f1 in ids_of(r) and f2 not in ids_of(r)  # the closed fact overlaps the range, the current one does not
    assert f2 in ids_of(km.retrieve("a1", "where does Pedro live")) and f1 not in ids_of(km.retrieve("a1", "where does Pedro live"))


# ----------------------------------------------------------------------------- KC-5.4: each signal contributes
def test_graph_only_fact_is_returned(km, llm, clock):
    ids = _world(km, llm, clock)
    # semantic off by threshold; no query word occurs in the Vertix fact; Pedro → Ana → Vertix is hop 2
    r = km.retrieve("a1", "Pedro", config_overrides={"min_similarity": 0.99})
    got = {f.fact_id: f for f in r.facts}
    assert ids["vertix"] in got
    s = got[ids["vertix"]].scores
    assert s["graph"] > 0 and s["semantic"] == 0 and s["keyword"] == 0
    hops = {e["target_key"]: e["hop"] for e in r.graph.edges}
    assert hops == {"person:ana": 1, "organization:vertix": 2}
    assert r.graph.neighbor_keys == ["organization:vertix", "person:ana"]
    # hop 2 follows only edges with strength >= graph_hop2_min_strength
    r = km.retrieve("a1", "Pedro", config_overrides={"min_similarity": 0.99, "graph_hop2_min_strength": 0.95,
                                                      "spreading_activation_hops": 0})
    assert ids["vertix"] not in ids_of(r)


def test_keyword_only_fact_is_returned(km, llm, clock):
    ids = _world(km, llm, clock)
    r = km.retrieve("a1", "tram", config_overrides={"min_similarity": 0.99})
    got = {f.fact_id: f for f in r.facts}
    assert ids["tram"] in got and got[ids["tram"]].scores["keyword"] > 0
    assert got[ids["tram"]].scores["semantic"] == 0 and got[ids["tram"]].scores["graph"] == 0


class _SynonymEmbedder(HashEmbedder):
    """Maps 'fiddle' to 'violin' before hashing: a purely semantic link."""

    def embed(self, texts, is_query=False):
        return super().embed([t.replace("fiddle", "violin") for t in texts], is_query=is_query)


def test_semantic_only_fact_is_returned(tmp_path, clock, llm, engine):
    s = SQLiteMemoryStore(str(tmp_path / "syn.db"), embedder=_SynonymEmbedder(384), clock=clock,
                          search_strategy="hybrid")
    km = KnowledgeMemory(s, llm, config=KnowledgeConfig(enable_reranker=False), clock=clock)
    try:
        ids = _world(km, llm, clock)
        r = km.retrieve("a1", "fiddle")
        got = {f.fact_id: f for f in r.facts}
        assert ids["violin"] in got
        sc = got[ids["violin"]].scores
        assert sc["semantic"] > 0.2 and sc["keyword"] == 0 and sc["graph"] == 0
    finally:
        km.close()
        s.close()


def test_keyword_unavailable_on_vector_store(tmp_path, clock, llm, engine):
    s = SQLiteMemoryStore(str(tmp_path / "v.db"), embedder=HashEmbedder(384), clock=clock)
    km = KnowledgeMemory(s, llm, config=KnowledgeConfig(enable_reranker=False), clock=clock)
    try:
        ids = _world(km, llm, clock)
        r = km.retrieve("a1", "Ana plays the violin")
        assert "keyword signal unavailable" in r.warnings and ids["violin"] in ids_of(r)
    finally:
        km.close()
        s.close()


def test_events_signal(km, llm, clock):
    _world(km, llm, clock)
    r = km.retrieve("a1", "Lisbon has a famous tram number 28")
    assert r.events and r.events[0]["text"] == "Lisbon has a famous tram number 28"
    w = km.config.event_score_weights
    assert r.events[0]["score"] <= w[0] + w[1] + w[2]
    assert "Relevant conversations:" in r.context
    assert len(km.retrieve("a1", "Lisbon tram", config_overrides={"topk_events": 1}).events) == 1


def test_embedder_failure_keeps_keyword_and_graph(km, llm, clock, monkeypatch):
    ids = _world(km, llm, clock)

    def boom(*a, **k):
        raise RuntimeError("embedder down")

    monkeypatch.setattr(km.runtime.embedder, "embed", boom)
    r = km.retrieve("a1", "Pedro tram")
    assert any(w.startswith("embedding:") for w in r.warnings)
    assert ids["tram"] in ids_of(r) and ids["violin"] in ids_of(r) and r.events == []


# ----------------------------------------------------------------------------- KC-5.5
def test_scoring_formula_and_weights(km, llm, clock):
    ids = _world(km, llm, clock)
    r = km.retrieve("a1", "Ana plays the violin")
    f = [x for x in r.facts if x.fact_id == ids["violin"]][0]
    s = f.scores
    fac, cw = km.config.signal_factors, km.config.context_signal_weight
    direct = max(fac[k] * s[k] for k in ("semantic", "keyword"))
    context = max(fac[k] * s[k] for k in ("graph", "spreading"))
    assert direct > 0 and context > 0  # the violin fact is found both directly and through Ana
    assert s["relevance"] == pytest.approx(direct + (1 - direct) * cw * context)
    w = km.config.score_weights
    assert s["formula"] == pytest.approx(w["semantic"] * s["relevance"] + w["recency"] * s["recency"] + w["importance"] * s["importance"])
    assert f.score == pytest.approx(s["formula"]) and 0.10 <= s["confidence"] <= 1
    assert [x.score for x in r.facts] == sorted((x.score for x in r.facts), reverse=True)
    r2 = km.retrieve("a1", "Ana plays the violin", config_overrides={"score_weights": {"semantic": 0.0, "recency": 0.0, "importance": 1.0},
                                                                      "min_score": 0.0})
    assert all(x.score == pytest.approx(x.scores["importance"]) for x in r2.facts)
    r3 = km.retrieve("a1", "Ana plays the violin", config_overrides={"signal_factors": {"semantic": 0.0, "keyword": 0.0, "graph": 0.0,
                                                                                         "spreading": 0.0}})
    assert all(x.scores["relevance"] == 0 for x in r3.facts)


def test_the_answer_outranks_graph_only_neighbours_without_the_reranker(km, llm, clock):
    """Review scenario (feature-checks row 25): with the reranker off, "Where does Pedro work?"
    scored the answer the same as facts reached only through the graph, and the tie fell to ids."""
    answer = write_facts(km, llm, [("Pedro", "person"), ("Lisbon", "place"), ("Talho", "organization")],
                         [("Pedro", "Pedro works at Talho in Lisbon"), ("Lisbon", "Lisbon trams are yellow"),
                          ("Lisbon", "Lisbon has seven hills"), ("Talho", "Talho roasts coffee")],
                         [("Pedro", "Lisbon", "lives in"), ("Pedro", "Talho", "works at")]).facts_added[0]["fact_id"]
    clock.advance()
    r = km.retrieve("a1", "Where does Pedro work?", config_overrides={"min_score": 0.0})
    assert r.facts and r.facts[0].fact_id == answer
    top = r.facts[0]
    graph_only = [f for f in r.facts if f.scores["semantic"] == 0 and f.scores["keyword"] == 0 and f.scores["graph"] > 0]
    assert graph_only, [(f.fact_text, f.scores) for f in r.facts]
    assert all(f.score < top.score for f in graph_only)
    assert all(f.scores["relevance"] < top.scores["relevance"] for f in graph_only)
    # the context weight is the knob: at 0 graph-only facts have no relevance at all
    r0 = km.retrieve("a1", "Where does Pedro work?", config_overrides={"min_score": 0.0, "context_signal_weight": 0.0})
    assert all(f.scores["relevance"] == 0 for f in r0.facts if f.scores["semantic"] == 0 and f.scores["keyword"] == 0)
    with pytest.raises(ValueError, match="context_signal_weight"):
        km.retrieve("a1", "x", config_overrides={"context_signal_weight": 1.5})


def test_relevance_rule_edges():
    from oramem.knowledge.read.scoring import relevance

    f = {"semantic": 1.0, "keyword": 0.8, "graph": 0.8, "spreading": 1.0}
    assert relevance({}, f, 0.5) == 0.0
    assert relevance({"graph": 0.8}, f, 0.5) == pytest.approx(0.5 * 0.64)
    assert relevance({"semantic": 0.4}, f, 0.5) == pytest.approx(0.4)
    assert relevance({"semantic": 0.4, "graph": 0.8}, f, 0.5) == pytest.approx(0.4 + 0.6 * 0.5 * 0.64)
    assert relevance({"semantic": 1.0, "graph": 1.0}, f, 1.0) == pytest.approx(1.0)
    assert relevance({"keyword": 1.0, "spreading": 1.0}, {"keyword": 2.0}, 1.0) == pytest.approx(1.0)


# ----------------------------------------------------------------------------- KC-5.6
def test_spreading_activation_adds_entity_neighbours(km, llm, clock):
    ids = _world(km, llm, clock)
    # only the violin fact matches; Ana's other facts and Vertix come by spreading
    r = km.retrieve("a1", "violin", config_overrides={"min_similarity": 0.3})
    sp = {f.fact_id: f.scores["spreading"] for f in r.facts if f.scores["spreading"] > 0}
    assert sp and ids["violin"] not in sp
    assert r.spreading.hop1_count >= 1 and "person:ana" in r.spreading.entities_explored
    off = km.retrieve("a1", "violin", config_overrides={"min_similarity": 0.3, "spreading_activation_hops": 0})
    assert all(f.scores["spreading"] == 0 for f in off.facts) and len(off.facts) < len(r.facts)


def test_meta_observations_feed_context(km, llm, clock):
    from oramem.knowledge.model import new_id

    ids = _world(km, llm, clock)
    t = km._tables
    with km._backend.write("test", "a1") as c:
        c.execute(sa.insert(t.meta_observation).values(
            id=new_id(), agent_id="a1", observation_type="pattern", title="Music runs in the family", text="x",
            supporting_event_ids=[], supporting_fact_ids=[ids["violin"]], is_active=True, first_detected_at=clock.now,
            last_reinforced_at=clock.now, created_at=clock.now))
    r = km.retrieve("a1", "Ana plays the violin")
    assert [m["title"] for m in r.spreading.meta_observations] == ["Music runs in the family"]
    assert "Observed patterns:\n- Music runs in the family" in r.context


# ----------------------------------------------------------------------------- KC-5.7
def test_reranker_reorders_and_degrades(make_km, llm, clock):
    km = make_km(enable_reranker=True)
    ids = _world(km, llm, clock)

    def rr(payload):
        return {"scores": [1.0 if "tram" in c["text"] else 0.05 for c in payload["candidates"]]}

    llm.route("rerank", rr)
    r = km.retrieve("a1", "Ana Lisbon tram violin")
    assert r.facts[0].fact_id == ids["tram"] and "reranker" in r.facts[0].scores
    assert len(r.facts) == 1  # r < min_reranker_score gives final 0, dropped by min_score
    llm.route("rerank", {"scores": [0.5]})
    r = km.retrieve("a1", "Ana Lisbon tram violin")
    assert any(w.startswith("reranker:") for w in r.warnings) and len(r.facts) > 1
    llm.route("rerank", RuntimeError("down"))
    r = km.retrieve("a1", "Ana Lisbon tram violin")
    assert any(w.startswith("reranker:") for w in r.warnings) and all("reranker" not in f.scores for f in r.facts)


# ----------------------------------------------------------------------------- KC-5.9
def _sf(text):
    return ScoredFact(fact_id=text, fact_text=text)


def test_compress_context_tiers_and_sections():
    cfg = KnowledgeConfig(context_max_tokens=100, hot_tier_ratio=0.5, warm_tier_ratio=0.3, cold_overflow_tokens=20)
    facts = [_sf(f"fact number {i} " + "x" * 40) for i in range(10)]
    c = compress_context(facts, config=cfg, directives="- be brief", broad_query=True, cluster_summaries=["summary A"],
                         observations=["pattern A"], session_notes=["note A"],
                         intentions=[{"intended_action": "call mom", "trigger_condition": "sunday"}], emotional_state="calm",
                         events=[{"text": "short", "occurred_at": T0}, {"text": "a long enough conversation", "occurred_at": T0}])
    assert isinstance(c, CompressedContext)
    text = c.context_text
    assert text.startswith("Directives:\n- be brief")
    assert c.hot_count >= 1 and "Known facts:" in text
    assert c.total_tokens == estimate_tokens(text) <= 120
    order = [h for h in ("Directives:", "Known facts:", "Related facts:", "Overview:", "Observed patterns:", "Session notes:",
                         "Pending intentions:", "Emotional state:", "Relevant conversations:") if h in text]
    assert order == sorted(order, key=text.index)
    assert "short" not in text
    big = compress_context([_sf("y" * 2000)], config=cfg)
    assert big.hot_count == 1 and big.total_tokens <= 120


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=300), max_size=30), st.integers(10, 400), st.integers(0, 100))
def test_compress_context_budget_property(texts, budget, overflow):
    cfg = KnowledgeConfig(context_max_tokens=budget, cold_overflow_tokens=overflow)
    c = compress_context([_sf(t) for t in texts], config=cfg, session_notes=texts[:3], observations=texts[:3])
    assert c.total_tokens == estimate_tokens(c.context_text) <= budget + overflow
    if any(t.strip() for t in texts):
        assert c.hot_count >= 1


# ----------------------------------------------------------------------------- KC-5.10
def test_directives_none_and_fallback_and_contradiction_gate(make_km, llm, clock):
    from oramem.knowledge.model import new_id

    km = make_km(contradiction_similarity_threshold=0.5)
    assert km.directives("a1").text == "" and llm.calls_for("directives") == []
    t = km._tables
    vec = np.asarray(km.runtime.embedder.embed(["Prefers short answers"]), dtype=np.float32)[0]
    with km._backend.write("test", "a1") as c:
        c.execute(sa.insert(t.meta_observation).values(
            id=new_id(), agent_id="a1", observation_type="behavioral_preference", title="Prefers short answers", text="brief",
            supporting_event_ids=[], supporting_fact_ids=[], times_reinforced=1, is_active=True, embedding_vec=vec,
            first_detected_at=clock.now, last_reinforced_at=clock.now, created_at=clock.now))
    llm.route("directives", RuntimeError("down"))
    d = km.directives("a1")
    assert (d.text, d.directive_count, d.cache_hit) == ("- Prefers short answers", 1, False)
    llm.route("directives", {"directives_block": "- Answer briefly.", "directives_used": 1})
    r = km.retrieve("a1", "hello world question", include_directives=True)
    assert r.directives.text == "- Answer briefly." and r.context.startswith("Directives:\n- Answer briefly.")
    assert km.check_contradiction("a1", "Loves astronomy and telescopes").has_contradiction is False
    assert llm.calls_for("contradiction") == []
    llm.route("contradiction", {"has_contradiction": True, "conflicting_directive": "Prefers short answers", "resolution": "ask"})
    res = km.check_contradiction("a1", "Prefers long answers")
    assert res.has_contradiction and res.resolution == "ask"
    llm.route("contradiction", RuntimeError("down"))
    assert km.check_contradiction("a1", "Prefers long answers").has_contradiction is False


# ----------------------------------------------------------------------------- KC-5.11, KC-5.12
def test_event_intention_triggered_by_similarity(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person")], [], intentions=[
        {"trigger_type": "event", "trigger_condition": "when Pedro talks about the garden", "intended_action": "ask about tomatoes"}]))
    km.write("a1", "Next time I talk about the garden ask me about tomatoes", "Pedro")
    r = km.retrieve("a1", "quantum physics lecture")
    assert r.intentions == [] and km.intentions("a1")[0].status == "pending"
    r = km.retrieve("a1", "when Pedro talks about the garden")
    assert [i.intended_action for i in r.intentions] == ["ask about tomatoes"]
    assert km.intentions("a1")[0].status == "triggered"
    assert "- ask about tomatoes (when: when Pedro talks about the garden)" in r.context


def test_usage_tracking_off_and_failure_warns(km, llm, clock, monkeypatch):
    ids = _world(km, llm, clock)
    km.retrieve("a1", "violin", config_overrides={"track_usage": False})
    assert km.get("a1", ids["violin"]).times_retrieved == 0
    from oramem.knowledge.read import run as rmod

    async def broken(self, *a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(rmod, "track_usage", broken)
    r = km.retrieve("a1", "violin")
    assert ids["violin"] in ids_of(r) and any(w.startswith("usage tracking:") for w in r.warnings)
    assert km.get("a1", ids["violin"]).times_retrieved == 0


def test_verbose_trace_and_config_effective(km, llm, clock):
    _world(km, llm, clock)
    r = km.retrieve("a1", "violin", verbose=True, config_overrides={"topk_facts": 3})
    assert r.config_effective["topk_facts"] == 3
    assert [s.name for s in r.pipeline.steps][:2] == ["plan", "expand"] and r.duration_ms > 0
    assert km.retrieve("a1", "violin").pipeline is None


# ----------------------------------------------------------------------------- KC-5.13
def _emotion_events(km, llm, clock, seq):
    for emo, inten, energy, text in seq:
        llm.route("event_emotion", {"emotion": emo, "intensity": inten, "energy": energy})
        write_facts(km, llm, [("Pedro", "person")], [], message=text)
        clock.advance()


def test_emotional_trends_rules(km, llm, clock):
    _emotion_events(km, llm, clock, [("sadness", 0.9, "low", "the deadline stress again"), ("joy", 0.2, "high", "nice lunch today"),
                                     ("sadness", 0.8, "low", "deadline stress and traffic"), ("joy", 0.3, "high", "good coffee break"),
                                     ("sadness", 0.75, "medium", "stress stress deadline")])
    r = km.emotional_trends("a1")
    assert r.emotion_counts == {"joy": 2, "sadness": 3} and r.events_analyzed == 5
    # halves of floor(5/2)=2: sadness 1 then 1 (middle skipped) → stable
    assert (r.dominant_emotion, r.trend_direction) == ("sadness", "stable")
    assert r.trigger_keywords == ["stress", "deadline", "again"]
    assert r.dominant_energy == "low" and r.dominant_intensity == pytest.approx((0.9 + 0.8 + 0.75) / 3)
    assert r.observation_created
    again = km.emotional_trends("a1")
    assert not again.observation_created and again.observation_id == r.observation_id
    _emotion_events(km, llm, clock, [("sadness", 0.5, "low", "more sad news here")] * 2)
    r3 = km.emotional_trends("a1")
    assert r3.trend_direction == "increasing"


def test_emotional_trends_under_minimum_only_counts(km, llm, clock):
    _emotion_events(km, llm, clock, [("joy", 0.5, "high", "a good day at the park")])
    r = km.emotional_trends("a1")
    assert r.emotion_counts == {"joy": 1} and r.dominant_emotion is None and not r.observation_created


def test_directives_cache_is_per_user_and_keyed_by_the_text(make_km, llm, clock):
    """KC-5.10's per-instance cache: Bob's directives never evict Alice's cached block (one
    agent, two users), and an observation edited in place (same id, same reinforcement count)
    is not answered from the cache with its old text."""
    from oramem.knowledge.model import new_id

    km = make_km()
    t = km._tables
    ids = {}
    with km._backend.write("test", "a1") as c:
        for user, title in (("alice", "Prefers short answers"), ("bob", "Prefers long answers")):
            ids[user] = new_id()
            vec = np.asarray(km.runtime.embedder.embed([title]), dtype=np.float32)[0]
            c.execute(sa.insert(t.meta_observation).values(
                id=ids[user], agent_id="a1", user_id=user, observation_type="behavioral_preference", title=title,
                text=title.lower(), supporting_event_ids=[], supporting_fact_ids=[], times_reinforced=1, is_active=True,
                embedding_vec=vec, first_detected_at=clock.now, last_reinforced_at=clock.now, created_at=clock.now))
    llm.route("directives", {"directives_block": "- block", "directives_used": 1})
    a1 = km.directives("a1", user_id="alice")
    b1 = km.directives("a1", user_id="bob")
    a2 = km.directives("a1", user_id="alice")
    assert (a1.cache_hit, b1.cache_hit, a2.cache_hit) == (False, False, True)
    assert len(llm.calls_for("directives")) == 2
    sent = [call for call in llm.calls_for("directives")]
    assert "short" in str(sent[0]) and "long" not in str(sent[0]) and "long" in str(sent[1])
    with km._backend.write("test", "a1") as c:
        c.execute(sa.update(t.meta_observation).where(t.meta_observation.c.id == ids["alice"]).values(text="explain in depth"))
    a3 = km.directives("a1", user_id="alice")
    assert a3.cache_hit is False and len(llm.calls_for("directives")) == 3
    assert "explain in depth" in str(llm.calls_for("directives")[-1])
    assert km.directives("a1", user_id="bob").cache_hit is True


def test_retrieves_directives_are_the_readers_own_plus_the_shared_ones(make_km, llm, clock):
    """KC-3.8 / KC-5.10: ``retrieve(..., include_directives=True, user_id=U)`` builds its
    directives block from U's behavioural preferences plus the agent's shared ones, as
    ``directives(user_id=U)`` does: never another user's (Alice's retrieve never carries Bob's,
    and Bob's never Alice's), and not the shared ones alone (the reader's own were dropped)."""
    from oramem.knowledge.model import new_id

    km = make_km()
    t = km._tables
    with km._backend.write("test", "a1") as c:
        for user, title in (("alice", "Prefers short answers"), ("bob", "Prefers long answers"), (None, "Greets by name")):
            vec = np.asarray(km.runtime.embedder.embed([title]), dtype=np.float32)[0]
            c.execute(sa.insert(t.meta_observation).values(
                id=new_id(), agent_id="a1", user_id=user, observation_type="behavioral_preference", title=title,
                text=title.lower(), supporting_event_ids=[], supporting_fact_ids=[], times_reinforced=1, is_active=True,
                embedding_vec=vec, first_detected_at=clock.now, last_reinforced_at=clock.now, created_at=clock.now))
    llm.route("directives", lambda p: {"directives_block": "\n".join(f"- {d['title']}" for d in p["directives"]),
                                       "directives_used": len(p["directives"])})
    seen = {}
    for user in ("alice", "bob", None):
        block = km.retrieve("a1", "hello world question", include_directives=True, user_id=user).directives.text
        assert block == km.directives("a1", user_id=user).text, user
        seen[user] = set(block.splitlines())
    assert seen == {"alice": {"- Prefers short answers", "- Greets by name"},
                    "bob": {"- Prefers long answers", "- Greets by name"},
                    None: {"- Greets by name"}}


def test_expansion_terms_are_read_past_expired_facts_in_the_cut(km, llm, clock, monkeypatch):
    """KC-5.3: the terms come from the first TERMS_CUT *current* facts in rank order; a fact past
    its TTL that the store has not purged yet does not take a place of the cut (here the cut
    is one place, and the newest fact, ranked first, is the expired one)."""
    from oramem.knowledge.read import signals

    monkeypatch.setattr(signals, "TERMS_CUT", 1)
    llm.route("extract", extract([("Ana Souza", "person")], [
        {"subject": "Ana Souza", "fact": "Ana Souza's favourite food is lasagna", "attribute_key": "favorite_food",
         "value": "lasagna"}]))
    km.write("a1", "Ana loves lasagna", "Pedro")
    clock.advance(hours=1)
    llm.route("extract", extract([("Ana Souza", "person")], [
        {"subject": "Ana Souza", "fact": "Ana Souza is in Porto this week", "attribute_key": "current_city",
         "value": "Porto", "ttl_days": 1}]))
    km.write("a1", "Ana is in Porto this week", "Pedro")
    assert {"current city", "Porto"} <= set(km.retrieve("a1", "what about Ana Souza?").expanded.expanded_terms)
    clock.advance(days=2)
    terms = km.retrieve("a1", "what about Ana Souza?").expanded.expanded_terms
    assert "favorite food" in terms and "lasagna" in terms
    assert "Porto" not in terms


def test_the_refill_past_expired_facts_still_stops_at_the_first_current_ones(km, llm, clock, monkeypatch):
    """KC-5.3: refilling the cut (twice the places each time, so the statement's LIMIT
    literal takes few values) still reads terms from the first TERMS_CUT current facts only:
    the third current fact, ranked after them, adds nothing, and the cuts asked for are
    TERMS_CUT doubled."""
    import sqlalchemy as sa

    from oramem.knowledge.read import signals

    monkeypatch.setattr(signals, "TERMS_CUT", 2)
    # in rank order: the expired one first, then the two current facts of the cut, then a third
    facts = [("current_city", "Porto", 1), ("favorite_food", "lasagna", None), ("hometown", "Braga", None),
             ("favorite_color", "teal", None)]
    for attribute, value, ttl in reversed(facts):  # the last written ranks first (newest)
        fact = {"subject": "Ana Souza", "fact": f"Ana Souza {attribute} {value}", "attribute_key": attribute,
                "value": value, **({"ttl_days": ttl} if ttl else {})}
        llm.route("extract", extract([("Ana Souza", "person")], [fact]))
        km.write("a1", f"Ana: {attribute} is {value}", "Pedro")
        clock.advance(hours=1)
    clock.advance(days=2)  # Porto has lapsed, not purged
    limits: list[str] = []

    def spy(conn, cursor, statement, params, context, executemany):
        head = statement.split("FROM", 1)[0]  # the terms statement's select list: these four columns
        if head.count(",") == 3 and "attribute_key" in head and "ingested_at" in head and "LIMIT" in statement.upper():
            limits.append(statement.upper().rsplit("LIMIT", 1)[1].split()[0])

    sa.event.listen(sa.Engine, "before_cursor_execute", spy)
    try:
        terms = km.retrieve("a1", "what about Ana Souza?").expanded.expanded_terms
    finally:
        sa.event.remove(sa.Engine, "before_cursor_execute", spy)
    assert "lasagna" in terms and "Braga" in terms
    assert "teal" not in terms and "Porto" not in terms
    assert limits == ["2", "4"], limits
