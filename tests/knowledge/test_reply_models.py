"""KC-2.4: the pydantic reply models at the LLM boundary (issue 25 item 2).

Every task's model refuses what its step cannot use, with ONE ``LLMReplyError`` that names the
task and the field; hostile replies that pass the gate (SQL in names, NUL, huge numbers,
out-of-range indices) are contained by the step that reads them."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from oramem.knowledge import KnowledgeConfig, LLMError, LLMReplyError
from oramem.knowledge.llm.replies import REPLY_MODELS, validate_reply
from oramem.knowledge.llm.tasks import call_task
from oramem.testing import ScriptedLLM

from .helpers import extract, reconcile

GOOD = {
    "extract": {"entities": [{"name": "Ana", "type": "person"}], "facts": [{"subject": "Ana", "fact": "Ana likes tea"}]},
    "event_emotion": {"emotion": "joy", "intensity": 1, "energy": "high"},
    "resolve_entity": {"match_index": 0},
    "reconcile": {"decisions": []},
    "rerank": {"scores": [0, 0.5, 1e308]},
    "cluster_summary": {"summary": "s"},
    "entity_summary": {"summary": "s"},
    "community": {"title": "t", "summary": "s"},
    "consolidate": {"observations": [{"type": "pattern", "supporting_event_indices": [99]}]},
    "entity_merge": {"should_merge": False},
    "directives": {"directives_block": "", "directives_used": ["a"]},
    "contradiction": {"has_contradiction": True, "conflicting_directive": None},
}

# (task, reply, field the error names)
BAD = [
    ("extract", {"facts": []}, "entities"),
    ("extract", {"entities": None, "facts": []}, "entities"),
    ("extract", {"entities": [{"name": "Ana"}], "facts": [{"subject": "Ana", "fact": "x"}, {"subject": " ", "fact": "y"}]},
     "facts[1].subject"),
    ("extract", {"entities": [{"name": 123}], "facts": []}, "entities[0].name"),
    ("extract", {"entities": ["Ana"], "facts": []}, "entities[0]"),
    ("extract", {"entities": [], "facts": [], "relations": [{"source": "a", "target": None}]}, "relations[0].target"),
    ("extract", {"entities": [], "facts": [], "intentions": [{"trigger_condition": "x"}]}, "intentions[0].intended_action"),
    ("extract", {"entities": [], "facts": [], "observations": [{"content": ""}]}, "observations[0].content"),
    ("extract", {"entities": [], "facts": [], "updated_summaries": ["x"]}, "updated_summaries"),
    ("event_emotion", {"emotion": "rage", "intensity": 0.5, "energy": "low"}, "emotion"),
    ("event_emotion", {"emotion": "joy", "intensity": 1e308, "energy": "low"}, "intensity"),
    ("event_emotion", {"emotion": "joy", "intensity": "0.5", "energy": "low"}, "intensity"),
    ("event_emotion", {"emotion": "joy", "intensity": True, "energy": "low"}, "intensity"),
    ("event_emotion", {"emotion": "joy", "intensity": 0.5, "energy": "max"}, "energy"),
    ("resolve_entity", {"match_index": 1e308}, "match_index"),
    ("resolve_entity", {"match_index": "1"}, "match_index"),
    ("resolve_entity", {"match_index": True}, "match_index"),
    ("resolve_entity", {}, "match_index"),
    ("reconcile", {"decisions": "ADD"}, "decisions"),
    ("reconcile", {"decisions": [1]}, "decisions[0]"),
    ("rerank", {"scores": [0.5, "high"]}, "scores[1]"),
    ("rerank", {"scores": [0.5, False]}, "scores[1]"),
    ("rerank", {"scores": [0.5, math.nan]}, "scores[1]"),
    ("rerank", {"scores": [math.inf]}, "scores[0]"),
    ("rerank", {"scores": {"1": 0.5}}, "scores"),
    ("cluster_summary", {"summary": ""}, "summary"),
    ("entity_summary", {"summary": None}, "summary"),
    ("community", {"title": "t"}, "summary"),
    ("community", {"title": 7, "summary": "s"}, "title"),
    ("consolidate", {}, "observations"),
    ("consolidate", {"observations": ["pattern"]}, "observations[0]"),
    ("entity_merge", {"should_merge": "yes"}, "should_merge"),
    ("entity_merge", {"should_merge": 1}, "should_merge"),
    ("directives", {"directives_used": 2}, "directives_block"),
    ("directives", {"directives_block": "b", "directives_used": True}, "directives_used"),
    ("directives", {"directives_block": "b", "directives_used": None}, "directives_used"),
    ("contradiction", {"has_contradiction": "false"}, "has_contradiction"),
    ("contradiction", {"has_contradiction": True, "resolution": 3}, "resolution"),
]


def test_every_task_has_a_model_and_a_rejection_case():
    assert set(GOOD) == set(REPLY_MODELS)
    assert {t for t, _, _ in BAD} == set(REPLY_MODELS)


@pytest.mark.parametrize("task", sorted(GOOD))
async def test_a_conforming_reply_passes_unchanged(task):
    reply = dict(GOOD[task], extra_key="kept")
    assert validate_reply(task, reply) is reply
    got, _ = await call_task(ScriptedLLM({task: reply}), task, {"x": 1}, 5.0)
    assert got == reply


@pytest.mark.parametrize(("task", "reply", "field"), BAD, ids=[f"{t}-{f}-{i}" for i, (t, _, f) in enumerate(BAD)])
async def test_a_bad_reply_is_one_typed_error_naming_task_and_field(task, reply, field):
    text = json.dumps(reply)  # NaN/Infinity go out as the non-JSON tokens json.loads accepts
    with pytest.raises(LLMReplyError) as info:
        await call_task(ScriptedLLM({task: text}), task, {"x": 1}, 5.0)
    err = info.value
    assert isinstance(err, LLMError)
    assert (err.task, err.field) == (task, field)
    assert str(err).startswith(f"{task}: reply field {field}: ")


async def test_an_unparsable_reply_names_the_task():
    with pytest.raises(LLMReplyError) as info:
        await call_task(ScriptedLLM({"extract": "no JSON at all"}), "extract", {"x": 1}, 5.0)
    assert (info.value.task, info.value.field) == ("extract", None)
    assert str(info.value).startswith("extract: unparsable reply")


async def test_a_provider_usage_of_the_wrong_type_is_an_llm_error():
    class OddUsage(ScriptedLLM):
        async def complete_async(self, messages, **kw):
            r = await super().complete_async(messages, **kw)
            return SimpleNamespace(text=r.text, usage={"input_tokens": 1})  # a provider bug

    with pytest.raises(LLMError, match="entity_merge: the provider's usage is a dict"):
        await call_task(OddUsage({"entity_merge": {"should_merge": True}}), "entity_merge", {}, 5.0)


# -- hostile replies that conform are contained downstream ------------------------------------


def test_nul_and_sql_in_extracted_names_are_data(km, llm):
    evil = "Ana\x00'); DELETE FROM \"DEFAULT_KG_FACT\";--"
    llm.route("extract", extract([(evil, "person")], [{"subject": evil, "fact": f"{evil} likes tea"}]))
    first = km.write("a1", "hello", "Pedro")
    assert first.success
    llm.route("extract", extract([("Bo", "person")], [("Bo", "Bo likes coffee")]))
    assert km.write("a1", "hi", "Pedro").success
    facts = km.get_all("a1")
    assert len(facts) == 2 and any("\x00" not in f.entity_key and "ana" in f.entity_key for f in facts)


def test_out_of_range_and_huge_reconcile_indices_are_ignored(km, llm):
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana lives in Porto", "residence")]))
    assert km.write("a1", "Porto", "Pedro").success
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana lives in Braga", "residence")]))
    llm.route("reconcile", {"decisions": [{"action": "UPDATE", "new_fact_index": 1e308, "existing_fact_index": 1},
                                          {"action": "DELETE", "new_fact_index": 1, "existing_fact_index": 99}]})
    r = km.write("a1", "Braga", "Pedro")
    assert r.success
    # the first decision has no valid new_fact_index; the second points at no existing fact:
    # it is dropped with a warning and nothing is deleted
    assert [f.fact_text for f in km.get_all("a1")] == ["Ana lives in Porto"]
    assert any("DELETE without a valid existing fact dropped" in w for w in r.warnings)
    llm.route("reconcile", {"decisions": [{"action": "UPDATE", "new_fact_index": 1, "existing_fact_index": -5}]})
    assert km.write("a1", "Braga again", "Pedro").success  # an UPDATE without a valid target is an ADD
    assert sorted(f.fact_text for f in km.get_all("a1")) == ["Ana lives in Braga", "Ana lives in Porto"]


def test_a_nan_rerank_score_keeps_the_order_and_warns(make_km, llm):
    km = make_km(enable_reranker=True)
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana likes tea"), ("Ana", "Ana likes green tea")]))
    assert km.write("a1", "tea", "Pedro").success
    llm.route("rerank", '{"scores": [NaN, NaN]}')
    r = km.retrieve("a1", "what does Ana like", config_overrides={"min_score": 0.0})
    assert r.facts and all(not math.isnan(f.score) for f in r.facts)
    assert any("reranker: rerank: reply field scores[0]" in w for w in r.warnings)


def test_config_types_are_checked_by_the_model_with_the_same_messages():
    with pytest.raises(ValueError, match=r"config field dedup_similarity must be float, got str \('high'\)"):
        KnowledgeConfig(dedup_similarity="high")
    with pytest.raises(ValueError, match="config field max_facts_per_event must be int, got float"):
        KnowledgeConfig(max_facts_per_event=2.5)
    with pytest.raises(ValueError, match="config field enable_reranker must be bool, got int"):
        KnowledgeConfig(enable_reranker=1)
    with pytest.raises(ValueError, match="config field extra_self_references must be frozenset, got list"):
        KnowledgeConfig(extra_self_references=["me"])
    with pytest.raises(ValueError, match="config field graph_hop_factors must be tuple, got list"):
        KnowledgeConfig(graph_hop_factors=[0.5, 1.0, 0.5])
    assert KnowledgeConfig(dedup_similarity=1).dedup_similarity == 1
    assert KnowledgeConfig(extra_self_references={"me"}).extra_self_references == {"me"}


def test_reconcile_helper_still_builds_valid_replies():
    assert validate_reply("reconcile", reconcile(("ADD", 1))) == reconcile(("ADD", 1))
