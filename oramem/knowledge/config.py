"""``KnowledgeConfig`` (KC-1.7): one frozen dataclass; ``config_overrides`` merge per call.

The field types are checked by a pydantic model built from the dataclass's own fields
(``_Model``), so the declaration is written once; the dataclass stays the public type (same
constructor, attributes, ``dataclasses.replace``, and mypy sees a plain frozen dataclass). The
rules that relate fields (tier ratios, the timezone) stay in ``__post_init__``.

Which fields are read by what is listed in ``STATUS.md``; a field belonging to a part of
the layer that is not built yet (retrieval, jobs) is listed there as not yet read.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Annotated, Any, Optional, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Strict, ValidationError, create_model

__all__ = ["KnowledgeConfig", "merge_config"]


def _d(**kw: float) -> Any:
    return field(default_factory=lambda: dict(kw))


@dataclass(frozen=True)
class KnowledgeConfig:
    # -- extraction
    extraction_timeout_sec: float = 30
    enable_informed_extraction: bool = True
    informed_extraction_topk: int = 10
    informed_extraction_context_budget_tokens: int = 800
    informed_min_similarity: float = 0.30
    max_facts_per_event: int = 100
    max_input_chars: int = 200000
    dedup_similarity: float = 0.85
    enable_emotion_tagging: bool = True
    on_extraction_failure: str = "keep_event"
    llm_concurrency: int = 4
    timezone: str = "UTC"
    # -- fact scoring
    confidence_level_map: dict[str, float] = _d(explicit_statement=0.95, strong_inference=0.80, weak_inference=0.60, speculation=0.40)
    confidence_default: float = 0.60
    importance_category_map: dict[str, float] = _d(
        biographical_milestone=0.90,
        relationship_change=0.85,
        stable_preference=0.80,
        specific_event=0.60,
        routine_activity=0.30,
        conversational=0.10,
    )
    needs_confirmation_below: float = 0.60
    # -- resolution, reconcile, relations, attributes
    fuzzy_threshold: float = 0.85
    llm_resolution_min_similarity: float = 0.50
    enable_llm_resolution: bool = True
    resolution_timeout_sec: float = 5
    extra_self_references: frozenset[str] = frozenset()
    reconcile_similarity_gate: float = 0.50
    reconcile_candidates: int = 3
    reconcile_timeout_sec: float = 15
    initial_relation_strength: float = 0.8
    relation_reinforce_step: float = 0.1
    mirror_fact_confidence: float = 0.60
    attribute_promotion_threshold: int = 3
    extra_attribute_keys: frozenset[str] = frozenset()
    attribute_aliases: dict[str, Any] = field(default_factory=dict)
    # -- retrieval
    topk_facts: int = 20
    topk_events: int = 8
    event_max_scan: int = 200
    min_similarity: float = 0.20
    min_confidence: float = 0.55
    min_score: float = 0.15
    recency_half_life_days: float = 14
    score_weights: dict[str, float] = _d(semantic=0.70, recency=0.20, importance=0.10)
    signal_factors: dict[str, float] = _d(semantic=1.0, keyword=0.8, graph=0.8, spreading=1.0)
    # KC-5.5: weight of the context signals (graph, spreading) next to the direct ones
    context_signal_weight: float = 0.5
    event_score_weights: tuple[float, ...] = (0.6, 0.3, 0.1)
    include_stale_facts: bool = False
    track_usage: bool = True
    enable_reranker: bool = True
    reranker_timeout_sec: float = 5
    reranker_weight: float = 0.70
    min_reranker_score: float = 0.10
    # -- graph, context
    graph_min_confidence: float = 0.30
    graph_max_facts: int = 30
    graph_hop2_min_strength: float = 0.5
    graph_hop_factors: tuple[float, ...] = (0.5, 1.0, 0.5)
    spreading_activation_hops: int = 2
    spreading_decay_factor: float = 0.5
    spreading_max_related_entities: int = 5
    spreading_facts_per_entity: int = 3
    context_max_tokens: int = 2000
    hot_tier_ratio: float = 0.5
    warm_tier_ratio: float = 0.3
    cold_overflow_tokens: int = 400
    event_snippet_chars: int = 300
    # -- other reads
    intention_trigger_similarity: float = 0.75
    intention_expiry_days: int = 7
    emotional_trend_window_days: int = 30
    emotional_trend_min_events: int = 5
    directive_max_tokens: int = 300
    directive_cache_ttl_minutes: int = 30
    contradiction_similarity_threshold: float = 0.80
    # -- jobs
    cluster_max_age_days: int = 90
    cluster_min_facts: int = 2
    community_similarity_threshold: float = 0.75
    community_min_clusters: int = 2
    consolidation_min_events: int = 3
    consolidation_lookback_days: int = 7
    observation_dedup_similarity: float = 0.82
    importance_recency_halflife_days: int = 30
    summary_refresh_interval_days: int = 7
    summary_refresh_max_entities: int = 10
    vitality_stale_threshold: float = 0.2
    memify_merge_similarity_threshold: float = 0.90
    job_llm_timeout_sec: float = 15
    max_pairwise_items: int = 2000

    def __post_init__(self) -> None:
        _check_types(self.as_dict())
        if self.on_extraction_failure not in ("keep_event", "rollback"):
            raise ValueError(
                f"on_extraction_failure must be 'keep_event' or 'rollback', got {self.on_extraction_failure!r}"
            )
        if not 0.0 <= float(self.context_signal_weight) <= 1.0:
            raise ValueError(f"context_signal_weight must be between 0 and 1, got {self.context_signal_weight!r}")
        if self.llm_concurrency < 1:
            raise ValueError("llm_concurrency must be >= 1")
        if self.max_facts_per_event < 0 or self.max_input_chars < 1:
            raise ValueError("max_facts_per_event must be >= 0 and max_input_chars >= 1")
        # KC-5.9: the context stays within context_max_tokens + cold_overflow_tokens only when the
        # hot and warm tiers share at most the whole budget (feature-check defect 2)
        hot, warm = float(self.hot_tier_ratio), float(self.warm_tier_ratio)
        if not (0.0 <= hot <= 1.0 and 0.0 <= warm <= 1.0 and hot + warm <= 1.0):
            raise ValueError(
                f"hot_tier_ratio ({self.hot_tier_ratio!r}) and warm_tier_ratio ({self.warm_tier_ratio!r}) must each be "
                "between 0 and 1 and add up to at most 1 (they are shares of context_max_tokens)"
            )
        if self.context_max_tokens < 1 or self.cold_overflow_tokens < 0:
            raise ValueError("context_max_tokens must be >= 1 and cold_overflow_tokens >= 0")
        try:
            import zoneinfo

            zoneinfo.ZoneInfo(self.timezone)
        except Exception as exc:  # noqa: BLE001 - any lookup failure is a bad argument
            raise ValueError(f"timezone {self.timezone!r} is not a known IANA zone ({exc})") from None

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


_NAMES: dict[str, type] = {"float": float, "int": int, "bool": bool, "str": str, "dict": dict, "frozenset": frozenset, "tuple": tuple}


def _is_number(value: Any) -> Any:
    # an int is accepted for a float (KC-1.7); bool is an int subclass and is refused
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("not a number")
    return value


def _instance(value: Any, kinds: Union[type, tuple[type, ...]]) -> Any:
    if not isinstance(value, kinds):
        raise ValueError("wrong type")
    return value


#: the pydantic type that checks a field of each declared type: exact types, no coercion
#: ("1" is not an int, 2.5 is not an int, True is not a float); a set is accepted for a frozenset
_CHECKS: dict[type, Any] = {
    float: Annotated[Any, BeforeValidator(_is_number)],
    int: Annotated[int, Strict()],
    bool: Annotated[bool, Strict()],
    str: Annotated[str, Strict()],
    dict: Annotated[Any, BeforeValidator(lambda v: _instance(v, dict))],
    frozenset: Annotated[Any, BeforeValidator(lambda v: _instance(v, (frozenset, set)))],
    tuple: Annotated[Any, BeforeValidator(lambda v: _instance(v, tuple))],
}

#: declared type of every field, by name (also the list of valid config_overrides keys)
_TYPES: dict[str, type] = {
    f.name: _NAMES[(f.type if isinstance(f.type, str) else f.type.__name__).split("[")[0]] for f in dataclasses.fields(KnowledgeConfig)
}

#: the field types of KnowledgeConfig as one pydantic model (the dataclass stays the public type:
#: its constructor, attributes and ``frozen`` semantics are unchanged, and mypy reads it as a
#: plain dataclass)
_FIELDS: dict[str, Any] = {name: (_CHECKS[want], ...) for name, want in _TYPES.items()}
_Model: type[BaseModel] = create_model(
    "KnowledgeConfigTypes", __config__=ConfigDict(extra="forbid"), **_FIELDS
)


def _check_types(values: dict[str, Any]) -> None:
    try:
        _Model.model_validate(values)
    except ValidationError as exc:
        name = str(exc.errors(include_url=False)[0]["loc"][0])
        value = values[name]
        raise ValueError(f"config field {name} must be {_TYPES[name].__name__}, got {type(value).__name__} ({value!r})") from None


def merge_config(base: KnowledgeConfig, overrides: Optional[Mapping[str, Any]]) -> KnowledgeConfig:
    """Apply per-call ``config_overrides`` (KC-1.7): unknown keys and wrong types are
    ``ValueError``s; an ``int`` is accepted for a ``float``."""
    if overrides is None:
        return base
    if not isinstance(overrides, Mapping):
        raise TypeError(f"config_overrides must be a mapping, got {type(overrides).__name__}")
    unknown = sorted(k for k in overrides if k not in _TYPES)
    if unknown:
        raise ValueError(f"unknown config_overrides key(s): {', '.join(map(str, unknown))}")
    if not overrides:
        return base
    values = dict(overrides)
    for k, v in values.items():
        if _TYPES[k] is frozenset and isinstance(v, set):
            values[k] = frozenset(v)
    # the types are checked by the replaced config's __post_init__ (same message as the constructor)
    return dataclasses.replace(base, **values)
