"""Pure scoring functions exported by the layer (KC-1.1): ``recency_score`` (KC-5.5),
``dynamic_importance`` (KC-5.6), ``compute_vitality`` (KC-6.5) and the deterministic planner
``plan_retrieval`` (KC-5.2). The read pipeline and the jobs that call them are not built
yet (STATUS.md); these functions are complete and tested on their own."""

from __future__ import annotations

import math
import re
import time
from datetime import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Iterable, Optional

from ..text import norm, to_utc
from ..types import PatternQuery, RetrievalPlan, ScoredFact

if TYPE_CHECKING:  # the candidate scores below take the retrieve state; state.py does not import this module
    from .state import Cand, RetrieveState

__all__ = ["recency_score", "dynamic_importance", "compute_vitality", "plan_retrieval"]

_LN2 = math.log(2.0)
_LN11 = math.log(11.0)


def _clip(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


def _days(a: datetime, b: datetime) -> float:
    return max(0.0, (to_utc(b) - to_utc(a)).total_seconds() / 86400.0)


def recency_score(valid_from: Optional[datetime], now: datetime, half_life_days: float = 14) -> float:
    """``exp(−ln2·age_days/half_life)``; .5 when the time is unknown."""
    if valid_from is None:
        return 0.5
    return math.exp(-_LN2 * _days(valid_from, now) / float(half_life_days))


def dynamic_importance(
    importance: float,
    times_retrieved: int = 0,
    days_since_retrieved: Optional[float] = None,
    user_correction_count: int = 0,
    cited_by_observation: bool = False,
) -> float:
    """``importance · (1 + .3·min(1, ln(1+n)/ln 11) + .2·0.5^(d/7)) · 0.8^min(corrections, 5)
    · (1.3 if an active meta-observation cites it)``, clipped to [.05, 3]; the .2 term is 0
    when the fact was never retrieved."""
    freq = 0.3 * min(1.0, math.log1p(max(0, times_retrieved)) / _LN11)
    fresh = 0.0 if days_since_retrieved is None or times_retrieved <= 0 else 0.2 * 0.5 ** (max(0.0, days_since_retrieved) / 7.0)
    value = importance * (1.0 + freq + fresh) * 0.8 ** min(max(0, user_correction_count), 5)
    if cited_by_observation:
        value *= 1.3
    return _clip(value, 0.05, 3.0)


def compute_vitality(
    *,
    now: datetime,
    ingested_at: datetime,
    confidence: float,
    times_retrieved: int = 0,
    last_retrieved_at: Optional[datetime] = None,
    reinforcement_count: int = 0,
    user_correction_count: int = 0,
) -> float:
    """KC-6.5 step 1: ``clip01((.30·min(1, ln(1+n)/ln 11) + .25·rec + .20·confidence +
    .15·min(1, reinforcement_count/5)) · 0.8^min(user_correction_count, 5))`` with ``rec``
    a 30-day half-life since ``last_retrieved_at``, else 90 days since ``ingested_at``."""
    if last_retrieved_at is not None:
        rec = math.exp(-_LN2 * _days(last_retrieved_at, now) / 30.0)
    else:
        rec = math.exp(-_LN2 * _days(ingested_at, now) / 90.0)
    v = (
        0.30 * min(1.0, math.log1p(max(0, times_retrieved)) / _LN11)
        + 0.25 * rec
        + 0.20 * confidence
        + 0.15 * min(1.0, max(0, reinforcement_count) / 5.0)
    ) * 0.8 ** min(max(0, user_correction_count), 5)
    return _clip(v, 0.0, 1.0)


_SKIP = ["good morning", "good afternoon", "good evening", "how are you", "thank you", "bom dia", "boa tarde", "boa noite",
         "tudo bem", "e ai", "hi", "hello", "hey", "thanks", "oi", "ola", "obrigado", "obrigada", "hola"]
_SKIP_WORDS = sorted((p.split() for p in _SKIP), key=len, reverse=True)
_BROAD = ("everything about", "tell me everything", "overview", "all of my", "summary of", "summarize", "tudo sobre",
          "todos os", "todas as", "resumo")
_TYPE_WORDS = {
    "person": ("people", "persons", "pessoas"),
    "organization": ("companies", "organizations", "empresas"),
    "project": ("projects", "projetos"),
    "pet": ("pets", "animals", "animais"),
    "place": ("places", "cities", "lugares", "cidades"),
}


def _only_greetings(words: list[str]) -> bool:
    i = 0
    while i < len(words):
        for phrase in _SKIP_WORDS:
            if words[i : i + len(phrase)] == phrase:
                i += len(phrase)
                break
        else:
            return False
    return bool(words)


def plan_retrieval(
    query: str,
    *,
    entity_types: Iterable[str] = (),
    active_attribute_keys: Iterable[str] = (),
    as_of: Optional[datetime] = None,
) -> RetrievalPlan:
    """KC-5.2, pure: skip (greetings only), broad (``max_facts=100``), aggregation pattern
    queries for the given entity types, ``similarity_query`` and ``as_of_range``."""
    t0 = time.perf_counter()
    text = norm(query)
    words = re.sub(r"[^\w\s]", " ", text).split()
    if _only_greetings(words):
        return RetrievalPlan(strategy="skip", reason="greeting or small talk", latency_ms=(time.perf_counter() - t0) * 1000.0)
    joined = " ".join(words)
    broad = any(re.search(rf"\b{re.escape(b)}\b", joined) for b in _BROAD)
    types = set(entity_types)
    keys = [k for k in active_attribute_keys if k]
    attr = next((k for k in keys if re.search(rf"\b{re.escape(k.replace('_', ' '))}\b", joined) or k in words), None)
    patterns = [
        PatternQuery(f"{etype}:%", attr)
        for etype, ws in _TYPE_WORDS.items()
        if etype in types and any(w in words for w in ws)
    ]
    reasons = ["broad query" if broad else "multi-signal"]
    if patterns:
        reasons.append("aggregation over " + ", ".join(p.entity_pattern for p in patterns))
    return RetrievalPlan(
        strategy="multi_signal",
        pattern_queries=patterns,
        similarity_query=query,
        max_facts=100 if broad else 50,
        reason="; ".join(reasons),
        latency_ms=(time.perf_counter() - t0) * 1000.0,
        as_of_range=(to_utc(as_of), to_utc(as_of)) if as_of is not None else None,
        broad_query=broad,
    )


# ----------------------------------------------------------------------------- candidate scores (KC-5.5)
DIRECT_SIGNALS = ("semantic", "keyword")
CONTEXT_SIGNALS = ("graph", "spreading")


def relevance(scores: Mapping[str, float], factors: Mapping[str, float], context_weight: float) -> float:
    """KC-5.5 relevance of a candidate fact from its signal scores.

    The direct signals (semantic, keyword) say the fact answers the query; the context signals
    (graph, spreading) say it sits near something that does. ``direct = max(factor·score)`` over
    the direct signals and ``context`` likewise over the context ones; a fact with direct evidence
    scores ``direct + (1 − direct)·w·context`` (context raises it, never above 1), a fact found
    only through context scores ``w·context``. So a neighbour reached only through the graph
    cannot tie or outrank a fact that matches the query and is reached through the graph too.
    """

    def best(names: tuple[str, ...]) -> float:
        return max((float(factors.get(n, 1.0)) * float(scores[n]) for n in names if n in scores), default=0.0)

    direct, context = min(1.0, best(DIRECT_SIGNALS)), best(CONTEXT_SIGNALS)
    if direct > 0.0:
        return direct + (1.0 - direct) * context_weight * context
    return context_weight * context


def days(a: datetime, b: datetime) -> float:
    return max(0.0, (to_utc(b) - to_utc(a)).total_seconds() / 86400.0)


def clip01(x: float) -> float:
    return 0.0 if x < 0 else 1.0 if x > 1 else x


# ----------------------------------------------------------------------------- the run


def score_cand(st: RetrieveState, c: Cand) -> None:
    """KC-5.5: relevance from the direct signals, raised by the context signals;
    formula = w·(relevance, recency, importance)."""
    cfg = st.cfg
    rel = relevance(c.scores, cfg.signal_factors, float(cfg.context_signal_weight))
    rec = recency_score(c.row["valid_from"], st.now, cfg.recency_half_life_days)
    imp = float(c.row["importance"])
    w = cfg.score_weights
    c.formula = float(w.get("semantic", 0.0)) * rel + float(w.get("recency", 0.0)) * rec + float(w.get("importance", 0.0)) * imp
    c.final = c.formula
    c.relevance, c.recency, c.importance = rel, rec, imp


def ranked_cands(st: RetrieveState) -> list[Cand]:
    return sorted(st.cands.values(), key=lambda c: (-c.final, c.row["id"]))


def confidence_info(st: RetrieveState, row: dict[str, Any]) -> float:
    since = row.get("last_confirmed_at") or row.get("ingested_at")
    weeks = days(since, st.now) / 7.0 if since else 0.0
    return max(0.10, float(row["confidence"]) * float(0.95 ** weeks))


def scored_fact(st: RetrieveState, c: Cand) -> ScoredFact:
    s = {k: float(c.scores.get(k, 0.0)) for k in ("semantic", "keyword", "graph", "spreading")}
    s.update(relevance=c.relevance, recency=c.recency, importance=c.importance,
             confidence=confidence_info(st, c.row), formula=c.formula)
    if "reranker" in c.scores:
        s["reranker"] = float(c.scores["reranker"])
    row = c.row
    return ScoredFact(fact_id=row["id"], entity_key=row["entity_key"], entity_name=row["entity_name"],
                      attribute_key=row["attribute_key"], fact_text=row["fact_text"], score=c.final, scores=s,
                      speaker=row.get("speaker"), user_id=row.get("user_id"))
