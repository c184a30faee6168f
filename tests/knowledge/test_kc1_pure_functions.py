"""KC-1.1 pure functions whose callers (read pipeline, jobs) are not built yet: their
formulas against the contract's numbers (KC-5.2, KC-5.5, KC-5.6, KC-6.5, scenario 8/9/18)."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from oramem.knowledge import compute_vitality, dynamic_importance, plan_retrieval, recency_score

from .helpers import T0


def test_recency_score():
    assert recency_score(T0, T0 + timedelta(days=14)) == pytest.approx(0.5)
    assert recency_score(T0, T0 + timedelta(days=7), half_life_days=7) == pytest.approx(0.5)
    assert recency_score(None, T0) == 0.5


def test_vitality_matches_scenarios_8_and_9():
    d1 = T0 + timedelta(days=1)
    f = compute_vitality(now=d1, ingested_at=T0, confidence=0.95, times_retrieved=3, last_retrieved_at=d1)
    g = compute_vitality(now=d1, ingested_at=T0, confidence=0.95)
    assert f == pytest.approx(0.6134, abs=1e-3) and g == pytest.approx(0.4381, abs=1e-3)
    s = compute_vitality(now=T0 + timedelta(days=400), ingested_at=T0, confidence=0.60)
    assert s == pytest.approx(0.1315, abs=1e-3)
    assert compute_vitality(now=T0, ingested_at=T0, confidence=1.0, user_correction_count=9) == pytest.approx(
        (0.25 + 0.20) * 0.8 ** 5)


def test_dynamic_importance():
    assert dynamic_importance(0.5) == pytest.approx(0.5)
    v = dynamic_importance(0.5, times_retrieved=10, days_since_retrieved=0, user_correction_count=1, cited_by_observation=True)
    assert v == pytest.approx(0.5 * (1 + 0.3 + 0.2) * 0.8 * 1.3)
    assert dynamic_importance(0.01) == 0.05 and dynamic_importance(5.0, 10, 0) == 3.0


def test_plan_retrieval():
    assert plan_retrieval("oi!").strategy == "skip"
    assert plan_retrieval("Hello, how are you?").strategy == "skip"
    assert plan_retrieval("hello Ana").strategy == "multi_signal"
    p = plan_retrieval("tell me everything about Ana")
    assert p.broad_query and p.max_facts == 100 and p.similarity_query == "tell me everything about Ana"
    p = plan_retrieval("which people like jazz? favorite music", entity_types=["person", "place"],
                       active_attribute_keys=["favorite_music"])
    assert [(q.entity_pattern, q.attribute_filter) for q in p.pattern_queries] == [("person:%", "favorite_music")]
    assert plan_retrieval("which cities", entity_types=[]).pattern_queries == []
    assert plan_retrieval("x", as_of=T0).as_of_range == (T0, T0)
    assert not math.isnan(plan_retrieval("x").latency_ms)
