"""KC §0 conventions and KC §1 public API: exports, constructor, sync/async twins, seed
types (every field name and default), KnowledgeConfig."""

from __future__ import annotations

import dataclasses
import inspect
from datetime import datetime, timezone

import pytest

import oramem.knowledge as K
from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.knowledge.text import entity_key, estimate_tokens, norm, slug
from oramem.testing import HashEmbedder, ScriptedLLM

from .helpers import T0, Clock, extract


def test_helpers_kc05():
    assert estimate_tokens("abcdefghi") == 2
    assert norm("  ¡São   Paulo!! ") == "sao paulo"
    assert norm("Ana\tSouza.") == "ana souza"
    assert slug("São Paulo") == "sao_paulo" and slug("  Ana -- Souza ") == "ana_souza"
    assert entity_key("person", "Ana Souza") == "person:ana_souza"


def test_exports_kc11():
    names = ["KnowledgeMemory", "KnowledgeConfig", "KnowledgeError", "LLMError", "LLMTimeout", "EmbeddingError",
             "ExtractionError", "ConflictError", "LLMProvider", "BaseLLMProvider", "LLMResult", "TokenUsage",
             "OpenAICompatibleProvider", "OpenAICompatibleEmbedder", "classify_input", "select_strategy",
             "normalize_rel_type", "detect_corrections", "estimate_tokens", "tag_event_emotion", "WriteResult",
             "RetrieveResult", "ScoredFact", "FactDetail", "EntityDetail", "RelationshipDetail", "IntentionDetail",
             "PipelineTrace", "PipelineStep", "InputType", "ExtractionMode", "InputClassification", "ExtractionStrategy",
             "CorrectionResult", "ExpandedQuery", "PatternQuery", "RetrievalPlan", "RetrievalCandidate",
             "GraphRetrievalResult", "SpreadingActivationResult", "CompressedContext", "EmotionalTrendsResult",
             "DirectiveBlock", "ContradictionResult", "ClusteringResult", "CommunityDetectionResult",
             "ConsolidationResult", "MemifyResult", "EntityImportanceResult", "SummaryRefreshResult"]
    for n in names:
        assert hasattr(K, n) and n in K.__all__, n
    assert issubclass(K.LLMTimeout, K.LLMError) and issubclass(K.LLMError, K.KnowledgeError)
    import oramem.testing as T

    assert set(T.__all__) == {"ScriptedLLM", "Delay", "HashEmbedder", "fail_at"}


SEED = {
    "CorrectionResult": {"corrections_detected": 0, "corrected_keys": [], "facts_corrected_ids": []},
    "PatternQuery": {"entity_pattern": None, "attribute_filter": None},
    "RetrievalPlan": {"strategy": "multi_signal", "entities": [], "pattern_queries": [], "similarity_query": None,
                      "max_facts": 50, "reason": "", "latency_ms": 0.0, "as_of_range": None, "broad_query": False},
    "RetrievalCandidate": {"fact": None, "scores": {}, "final_score": 0.0},
    "GraphRetrievalResult": {"facts": [], "neighbor_keys": [], "edges_traversed": 0, "edges": []},
    "SpreadingActivationResult": {"candidates": [], "meta_observations": [], "entities_explored": [], "clusters_explored": [],
                                  "hop1_count": 0, "hop2_count": 0, "kg_relationships_explored": 0},
    "CompressedContext": {"context_text": "", "hot_count": 0, "warm_count": 0, "cold_count": 0, "total_tokens": 0},
    "EmotionalTrendsResult": {"emotion_counts": {}, "trend_direction": "stable", "dominant_emotion": None,
                              "trigger_keywords": [], "avg_intensity": 0.0, "dominant_intensity": 0.0,
                              "dominant_energy": "medium", "events_analyzed": 0, "observation_created": False,
                              "observation_id": None},
    "DirectiveBlock": {"text": "", "directive_count": 0, "cache_hit": False},
    "ContradictionResult": {"has_contradiction": False, "conflicting_directive": None, "resolution": None},
    "ClusteringResult": {"clusters_created": 0, "clusters_reinforced": 0, "summaries_generated": 0, "facts_assigned": 0},
    "CommunityDetectionResult": {"communities_created": 0, "communities_reinforced": 0, "clusters_in_communities": 0,
                                 "skipped": False, "skip_reason": None},
    "ConsolidationResult": {"events_processed": 0, "observations_created": 0, "observations_reinforced": 0,
                            "skipped": False, "skip_reason": None},
    "MemifyResult": {"facts_scored": 0, "facts_marked_stale": 0, "edges_reinforced": 0, "merges_executed": 0},
    "EntityImportanceResult": {"entities_scored": 0, "top_entities": []},
    "SummaryRefreshResult": {"summaries_refreshed": 0, "summaries_skipped": 0, "summaries_cleared": 0},
    "InputClassification": {"input_type": None, "char_count": None, "estimated_tokens": None, "has_headers": None,
                            "has_bullets": None, "has_tables": None, "section_count": None, "line_count": None},
    "ExtractionStrategy": {"mode": None, "reason": None, "max_tokens_per_call": None, "estimated_chunks": None,
                           "chunk_context_hint": None},
    "ExpandedQuery": {"primed_entities": None, "temporal_range": None, "expanded_terms": None},
}
REQUIRED = {"PatternQuery": {"entity_pattern"}, "RetrievalCandidate": {"fact"},
            "InputClassification": set(SEED["InputClassification"]), "ExtractionStrategy": set(SEED["ExtractionStrategy"]),
            "ExpandedQuery": set(SEED["ExpandedQuery"])}


@pytest.mark.parametrize("name", sorted(SEED))
def test_seed_types_field_names_and_defaults(name):
    cls = getattr(K, name)
    fields = dataclasses.fields(cls)
    assert [f.name for f in fields] == list(SEED[name])
    for f in fields:
        if f.name in REQUIRED.get(name, set()):
            assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING, (name, f.name)
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        assert default == SEED[name][f.name], (name, f.name)


def test_seed_enums():
    assert [(m.name, m.value) for m in K.InputType] == [("SHORT", "short"), ("MEDIUM", "medium"), ("LONG", "long"),
                                                         ("STRUCTURED", "structured")]
    assert [(m.name, m.value) for m in K.ExtractionMode] == [("SINGLE_SHOT", "single_shot"), ("CHUNKED", "chunked")]
    assert issubclass(K.InputType, str)
    sig = inspect.signature(K.tag_event_emotion)
    assert list(sig.parameters) == ["event_text", "llm"] and inspect.iscoroutinefunction(K.tag_event_emotion)


@pytest.mark.parametrize("name", ["WriteResult", "RetrieveResult", "ScoredFact", "FactDetail", "EntityDetail",
                                  "RelationshipDetail", "IntentionDetail", "PipelineTrace", "PipelineStep"])
def test_result_types_have_defaults(name):
    obj = getattr(K, name)()
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, (list, dict)):
            assert len(v) == 0


def test_write_result_fields():
    assert [f.name for f in dataclasses.fields(K.WriteResult)] == [
        "event_id", "facts_added", "facts_updated", "facts_unchanged", "facts_deleted", "entities_resolved", "relations",
        "corrections", "classification", "strategy", "emotion", "intentions_created", "observations_created",
        "duration_ms", "pipeline", "tokens_used", "success", "error", "warnings", "stats", "job_id", "degraded",
        "firewall"]
    r = K.WriteResult()
    assert r.success is True and r.error is None and r.corrections == K.CorrectionResult() and r.tokens_used == K.TokenUsage()


CONFIG_DEFAULTS = dict(
    extraction_timeout_sec=30, enable_informed_extraction=True, informed_extraction_topk=10,
    informed_extraction_context_budget_tokens=800, informed_min_similarity=.30, max_facts_per_event=100,
    max_input_chars=200000, dedup_similarity=.85, enable_emotion_tagging=True, on_extraction_failure="keep_event",
    llm_concurrency=4, timezone="UTC",
    confidence_level_map={"explicit_statement": .95, "strong_inference": .80, "weak_inference": .60, "speculation": .40},
    confidence_default=.60,
    importance_category_map={"biographical_milestone": .90, "relationship_change": .85, "stable_preference": .80,
                             "specific_event": .60, "routine_activity": .30, "conversational": .10},
    needs_confirmation_below=.60, fuzzy_threshold=.85, llm_resolution_min_similarity=.50, enable_llm_resolution=True,
    resolution_timeout_sec=5, extra_self_references=frozenset(), reconcile_similarity_gate=.50, reconcile_candidates=3,
    reconcile_timeout_sec=15, initial_relation_strength=.8, relation_reinforce_step=.1, mirror_fact_confidence=.60,
    attribute_promotion_threshold=3, extra_attribute_keys=frozenset(), attribute_aliases={},
    topk_facts=20, topk_events=8, event_max_scan=200, min_similarity=.20, min_confidence=.55, min_score=.15,
    recency_half_life_days=14, score_weights={"semantic": .70, "recency": .20, "importance": .10},
    signal_factors={"semantic": 1.0, "keyword": .8, "graph": .8, "spreading": 1.0}, context_signal_weight=.5,
    event_score_weights=(.6, .3, .1),
    include_stale_facts=False, track_usage=True, enable_reranker=True, reranker_timeout_sec=5, reranker_weight=.70,
    min_reranker_score=.10, graph_min_confidence=.30, graph_max_facts=30, graph_hop2_min_strength=.5,
    graph_hop_factors=(.5, 1.0, .5), spreading_activation_hops=2, spreading_decay_factor=.5,
    spreading_max_related_entities=5, spreading_facts_per_entity=3, context_max_tokens=2000, hot_tier_ratio=.5,
    warm_tier_ratio=.3, cold_overflow_tokens=400, event_snippet_chars=300, intention_trigger_similarity=.75,
    intention_expiry_days=7, emotional_trend_window_days=30, emotional_trend_min_events=5, directive_max_tokens=300,
    directive_cache_ttl_minutes=30, contradiction_similarity_threshold=.80, cluster_max_age_days=90, cluster_min_facts=2,
    community_similarity_threshold=.75, community_min_clusters=2, consolidation_min_events=3,
    consolidation_lookback_days=7, observation_dedup_similarity=.82, importance_recency_halflife_days=30,
    summary_refresh_interval_days=7, summary_refresh_max_entities=10, vitality_stale_threshold=.2,
    memify_merge_similarity_threshold=.90, job_llm_timeout_sec=15, max_pairwise_items=2000,
)


def test_config_defaults_kc17():
    cfg = KnowledgeConfig()
    assert cfg.as_dict() == CONFIG_DEFAULTS
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.topk_facts = 3  # type: ignore[misc]


def test_config_overrides_validation(km, llm):
    llm.route("extract", extract([("Pedro", "person")], []))
    with pytest.raises(ValueError, match="unknown config_overrides"):
        km.write("a1", "hi there", "Pedro", config_overrides={"no_such_field": 1})
    with pytest.raises(ValueError, match="dedup_similarity"):
        km.write("a1", "hi there", "Pedro", config_overrides={"dedup_similarity": "high"})
    with pytest.raises(ValueError, match="max_facts_per_event"):
        km.write("a1", "hi there", "Pedro", config_overrides={"max_facts_per_event": 2.5})
    assert llm.calls == []
    assert km.write("a1", "hi there", "Pedro", config_overrides={"dedup_similarity": 1}).success


def test_constructor_checks(tmp_path, llm):
    s = SQLiteMemoryStore(str(tmp_path / "x.db"), vector_dim=384)
    with pytest.raises(ValueError, match="embedder"):
        KnowledgeMemory(s, llm)
    with pytest.raises(ValueError, match="64.*384|384.*64"):
        KnowledgeMemory(s, llm, HashEmbedder(64))
    s.close()
    k = SQLiteMemoryStore(str(tmp_path / "k.db"), search_strategy="keyword")
    with pytest.raises(ValueError, match="vector search"):
        KnowledgeMemory(k, llm, HashEmbedder(384))
    k.close()
    with pytest.raises(TypeError):
        KnowledgeMemory(object(), llm)


async def test_sync_twin_in_running_loop_raises(km):
    with pytest.raises(RuntimeError, match="write_async"):
        km.write("a1", "hello", "Pedro")


def test_sync_async_signatures_match():
    names = ["write", "reprocess_event", "get", "history", "get_all", "delete", "delete_all", "entities",
             "relationships", "intentions", "fulfill_intention", "confirm_fact", "annotate_fact"]
    for n in names:
        sync, asy = getattr(KnowledgeMemory, n), getattr(KnowledgeMemory, n + "_async")
        assert inspect.iscoroutinefunction(asy) and not inspect.iscoroutinefunction(sync)
        assert inspect.signature(sync) == inspect.signature(asy), n


def test_agent_scope_kc01(km, llm):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro likes tea")]))
    fid = km.write("a1", "I like tea", "Pedro").facts_added[0]["fact_id"]
    assert km.get("a1", fid) is not None
    assert km.get("a1", fid).id == km.get("a1", fid).fact_id == fid  # the contract's column name
    assert km.get("a2", fid) is None and km.history("a2", fid) == [] and km.get_all("a2") == []
    assert km.confirm_fact("a2", fid) is False and km.annotate_fact("a2", fid, "x") is False
    assert km.delete("a2", fid) is False and km.get("a1", fid) is not None
    for bad in ("", "x" * 257, None):
        with pytest.raises(ValueError):
            km.get(bad, fid)


def test_clock_read_once_and_utc_kc02(store, llm):
    calls = []

    def clock():
        calls.append(1)
        return datetime(2025, 1, 1, 12, 0)  # naive means UTC

    km = KnowledgeMemory(store, llm, clock=clock)
    llm.route("extract", extract([("Pedro", "person"), ("Rio", "place")], [("Pedro", "Pedro lives in Rio", "residence")],
                                 [("Pedro", "Rio", "lives in")]))
    r = km.write("a1", "I live in Rio", "Pedro", occurred_at=datetime(2024, 5, 1, 8, 0))
    assert len(calls) == 1
    f = km.get("a1", r.facts_added[0]["fact_id"])
    assert f.valid_from == datetime(2024, 5, 1, 8, tzinfo=timezone.utc) and f.valid_from.tzinfo is not None
    assert f.ingested_at == T0 and f.created_at.utcoffset().total_seconds() == 0
    km.close()


def _rows_without_ids(km, agent):
    facts = [(f.entity_key, f.fact_text, f.valid_from, f.valid_to, f.confidence, f.importance, f.status, tuple(f.entity_keys))
             for f in km.get_all(agent, include_inactive=True)]
    ents = [(e.canonical_key, e.display_name, e.fact_count, tuple(e.aliases)) for e in km.entities(agent)]
    rels = [(r.source_entity_key, r.target_entity_key, r.rel_type, r.strength) for r in km.relationships(agent, include_inactive=True)]
    return sorted(facts), sorted(ents), sorted(rels)


def test_determinism_kc04(tmp_path):
    out = []
    for i in range(2):
        clock = Clock()
        store = SQLiteMemoryStore(str(tmp_path / f"d{i}.db"), embedder=HashEmbedder(384), clock=clock)
        llm = ScriptedLLM({"event_emotion": {"emotion": "joy", "intensity": .5, "energy": "high"},
                           "extract": extract([("Pedro", "person"), ("Ana", "person"), ("Rio", "place")],
                                              [("Pedro", "Pedro lives in Rio", "residence"), ("Ana", "Ana is Pedro's sister")],
                                              [("Pedro", "Rio", "lives in"), ("Ana", "Pedro", "sister")])})
        km = KnowledgeMemory(store, llm, clock=clock)
        r = km.write("a1", "I live in Rio, Ana is my sister", "Pedro")
        out.append((_rows_without_ids(km, "a1"), [(f["entity_key"], f["fact_text"]) for f in r.facts_added], r.relations,
                    r.entities_resolved, r.tokens_used))
        km.close()
        store.close()
    assert out[0] == out[1]
