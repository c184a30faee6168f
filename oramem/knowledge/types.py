"""Value types of the knowledge layer: the seed's types with its exact names and defaults
(KC-1.6) and the result dataclasses of KC-1.5 (every field has a default)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Optional

__all__ = [
    "InputType",
    "ExtractionMode",
    "InputClassification",
    "ExtractionStrategy",
    "CorrectionResult",
    "ExpandedQuery",
    "PatternQuery",
    "RetrievalPlan",
    "RetrievalCandidate",
    "GraphRetrievalResult",
    "SpreadingActivationResult",
    "CompressedContext",
    "EmotionalTrendsResult",
    "DirectiveBlock",
    "ContradictionResult",
    "ClusteringResult",
    "CommunityDetectionResult",
    "ConsolidationResult",
    "MemifyResult",
    "EntityImportanceResult",
    "SummaryRefreshResult",
    "TokenUsage",
    "PipelineStep",
    "PipelineTrace",
    "WriteResult",
    "RetrieveResult",
    "ScoredFact",
    "FactDetail",
    "EntityDetail",
    "RelationshipDetail",
    "IntentionDetail",
    "BackgroundRunResult",
    "StepTiming",
    "OperationStats",
    "JobInfo",
    "JobQueueStatus",
    "WorkerReport",
]


# ----------------------------------------------------------------------------- seed: write
class InputType(str, Enum):
    SHORT = "short"
    MEDIUM = "medium"
    LONG = "long"
    STRUCTURED = "structured"


class ExtractionMode(str, Enum):
    SINGLE_SHOT = "single_shot"
    CHUNKED = "chunked"


@dataclass
class InputClassification:
    input_type: InputType
    char_count: int
    estimated_tokens: int
    has_headers: bool
    has_bullets: bool
    has_tables: bool
    section_count: int
    line_count: int


@dataclass
class ExtractionStrategy:
    mode: ExtractionMode
    reason: str
    max_tokens_per_call: int
    estimated_chunks: int
    chunk_context_hint: Optional[str]


@dataclass
class CorrectionResult:
    corrections_detected: int = 0
    corrected_keys: list[str] = field(default_factory=list)
    facts_corrected_ids: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- seed: read
@dataclass
class ExpandedQuery:
    primed_entities: list[str]
    temporal_range: Optional[tuple[datetime, datetime]]
    expanded_terms: list[str]


@dataclass
class PatternQuery:
    entity_pattern: str
    attribute_filter: Optional[str] = None


@dataclass
class RetrievalPlan:
    strategy: str = "multi_signal"
    entities: list[str] = field(default_factory=list)
    pattern_queries: list[PatternQuery] = field(default_factory=list)
    similarity_query: Optional[str] = None
    max_facts: int = 50
    reason: str = ""
    latency_ms: float = 0.0
    as_of_range: Optional[tuple[datetime, datetime]] = None
    broad_query: bool = False


@dataclass
class RetrievalCandidate:
    fact: "FactDetail"
    scores: dict[str, float] = field(default_factory=dict)
    final_score: float = 0.0


@dataclass
class GraphRetrievalResult:
    facts: list[dict[str, Any]] = field(default_factory=list)
    neighbor_keys: list[str] = field(default_factory=list)
    edges_traversed: int = 0
    edges: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SpreadingActivationResult:
    candidates: list[RetrievalCandidate] = field(default_factory=list)
    meta_observations: list[Any] = field(default_factory=list)
    entities_explored: list[str] = field(default_factory=list)
    clusters_explored: list[str] = field(default_factory=list)
    hop1_count: int = 0
    hop2_count: int = 0
    kg_relationships_explored: int = 0


@dataclass
class CompressedContext:
    context_text: str = ""
    hot_count: int = 0
    warm_count: int = 0
    cold_count: int = 0
    total_tokens: int = 0


@dataclass
class EmotionalTrendsResult:
    emotion_counts: dict[str, int] = field(default_factory=dict)
    trend_direction: str = "stable"
    dominant_emotion: Optional[str] = None
    trigger_keywords: list[str] = field(default_factory=list)
    avg_intensity: float = 0.0
    dominant_intensity: float = 0.0
    dominant_energy: str = "medium"
    events_analyzed: int = 0
    observation_created: bool = False
    observation_id: Optional[str] = None


@dataclass
class DirectiveBlock:
    text: str = ""
    directive_count: int = 0
    cache_hit: bool = False


@dataclass
class ContradictionResult:
    has_contradiction: bool = False
    conflicting_directive: Optional[str] = None
    resolution: Optional[str] = None


# ----------------------------------------------------------------------------- seed: jobs
@dataclass
class ClusteringResult:
    clusters_created: int = 0
    clusters_reinforced: int = 0
    summaries_generated: int = 0
    facts_assigned: int = 0


@dataclass
class CommunityDetectionResult:
    communities_created: int = 0
    communities_reinforced: int = 0
    clusters_in_communities: int = 0
    skipped: bool = False
    skip_reason: Optional[str] = None


@dataclass
class ConsolidationResult:
    events_processed: int = 0
    observations_created: int = 0
    observations_reinforced: int = 0
    skipped: bool = False
    skip_reason: Optional[str] = None


@dataclass
class MemifyResult:
    facts_scored: int = 0
    facts_marked_stale: int = 0
    edges_reinforced: int = 0
    merges_executed: int = 0


@dataclass
class EntityImportanceResult:
    entities_scored: int = 0
    top_entities: list[tuple[str, float]] = field(default_factory=list)


@dataclass
class SummaryRefreshResult:
    summaries_refreshed: int = 0
    summaries_skipped: int = 0
    #: entities left with no current fact whose summary was cleared (no LLM call; KC-6.7)
    summaries_cleared: int = 0


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class TokenUsage:
    """Token accounting of one LLM call or the sum over an operation (supports ``+``)."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: "TokenUsage") -> "TokenUsage":
        if other is None:
            return self
        if not isinstance(other, TokenUsage):
            return NotImplemented
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
        )

    __radd__ = __add__


@dataclass
class PipelineStep:
    name: str = ""
    duration_ms: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class PipelineTrace:
    steps: list[PipelineStep] = field(default_factory=list)


@dataclass(frozen=True)
class StepTiming:
    """Wall-clock time of one pipeline step (steps may overlap: emotion tagging runs alongside
    extraction)."""

    name: str
    duration_ms: float


@dataclass(frozen=True)
class OperationStats:
    """What one ``write`` / ``retrieve`` cost: LLM calls, tokens (the provider's ``usage``
    when it reports one; ``tokens_estimated`` is True when some call had none and its tokens
    were estimated from the text), and the latency of each step, always collected (the
    ``verbose`` trace adds each step's data)."""

    llm_calls: int = 0
    tokens: TokenUsage = field(default_factory=TokenUsage)
    tokens_estimated: bool = False
    steps: tuple[StepTiming, ...] = ()
    total_ms: float = 0.0

    def step_ms(self, name: str) -> float:
        """Summed duration of the steps called ``name`` (0.0 when it did not run)."""
        return sum(s.duration_ms for s in self.steps if s.name == name)


@dataclass
class WriteResult:
    event_id: str = ""
    facts_added: list[dict[str, Any]] = field(default_factory=list)
    facts_updated: list[dict[str, Any]] = field(default_factory=list)
    facts_unchanged: list[dict[str, Any]] = field(default_factory=list)
    facts_deleted: list[dict[str, Any]] = field(default_factory=list)
    entities_resolved: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)
    corrections: CorrectionResult = field(default_factory=CorrectionResult)
    classification: Optional[InputClassification] = None
    strategy: Optional[ExtractionStrategy] = None
    emotion: Optional[dict[str, Any]] = None
    intentions_created: list[dict[str, Any]] = field(default_factory=list)
    observations_created: list[dict[str, Any]] = field(default_factory=list)
    duration_ms: float = 0.0
    pipeline: Optional[PipelineTrace] = None
    tokens_used: TokenUsage = field(default_factory=TokenUsage)
    success: bool = True
    error: Optional[str] = None
    warnings: list[str] = field(default_factory=list)
    stats: OperationStats = field(default_factory=OperationStats)
    #: set by ``write(..., background=True)``: the message is queued as this job (its facts
    #: lists stay empty; ``event_id`` is the id the event will have once a worker ran it)
    job_id: Optional[str] = None
    #: KC-4.22: the steps that fell back to deterministic rules because the LLM failed (e.g.
    #: ``["reconcile"]``); empty when every LLM step answered
    degraded: list[str] = field(default_factory=list)
    #: SC-15.6: the store's write-time firewall verdict on the message (``verdict``,
    #: ``findings``, ``source``, ``trust``); None when the store has no firewall policy. A
    #: ``flagged`` message is not extracted (nothing is stored) and ``success`` stays True.
    firewall: Optional[dict[str, Any]] = None


@dataclass
class ScoredFact:
    fact_id: str = ""
    entity_key: str = ""
    entity_name: Optional[str] = None
    attribute_key: Optional[str] = None
    fact_text: str = ""
    score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)
    speaker: Optional[str] = None
    #: KC-3.7: whose fact (None: the agent's shared knowledge)
    user_id: Optional[str] = None


@dataclass
class RetrieveResult:
    facts: list[ScoredFact] = field(default_factory=list)
    context: str = ""
    total_candidates: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    intentions: list["IntentionDetail"] = field(default_factory=list)
    directives: Optional[DirectiveBlock] = None
    plan: Optional[RetrievalPlan] = None
    expanded: Optional[ExpandedQuery] = None
    graph: Optional[GraphRetrievalResult] = None
    spreading: Optional[SpreadingActivationResult] = None
    compressed: Optional[CompressedContext] = None
    duration_ms: float = 0.0
    pipeline: Optional[PipelineTrace] = None
    tokens_used: TokenUsage = field(default_factory=TokenUsage)
    config_effective: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    stats: OperationStats = field(default_factory=OperationStats)
    #: SC-16.2: the retrieval audit's request id of this retrieve (None when the audit is off)
    audit_request_id: Optional[str] = None


@dataclass
class FactDetail:
    """Every fact column of KC-3.1 except vectors, plus ``entity_keys``, ``status`` and
    ``superseded_by``. ``id`` is the ``id`` column; ``fact_id`` is the same value, kept for
    existing callers."""

    fact_id: str = ""
    agent_id: str = ""
    #: KC-3.7: the user the row belongs to (None: the agent's shared knowledge)
    user_id: Optional[str] = None
    entity_type: str = ""
    entity_key: str = ""
    entity_name: Optional[str] = None
    attribute_key: Optional[str] = None
    fact_text: str = ""
    category: Optional[str] = None
    confidence: float = 0.8
    importance: float = 0.5
    is_sensitive: bool = False
    valid_from: Optional[datetime] = None
    valid_to: Optional[datetime] = None
    ttl_days: Optional[int] = None
    source_event_id: Optional[str] = None
    supersedes_fact_id: Optional[str] = None
    vitality_score: Optional[float] = None
    is_stale: bool = False
    cluster_id: Optional[str] = None
    value_json: Any = None
    needs_confirmation: bool = False
    last_confirmed_at: Optional[datetime] = None
    times_retrieved: int = 0
    last_retrieved_at: Optional[datetime] = None
    user_correction_count: int = 0
    source_context: Optional[str] = None
    agent_annotation: Optional[str] = None
    created_at: Optional[datetime] = None
    ingested_at: Optional[datetime] = None
    invalidated_at: Optional[datetime] = None
    speaker: Optional[str] = None
    reinforcement_count: int = 0
    entity_keys: list[str] = field(default_factory=list)
    status: str = "active"
    superseded_by: Optional[str] = None

    @property
    def id(self) -> str:
        """The fact's ``id`` column (KC-3.1), the same value as ``fact_id``."""
        return self.fact_id


@dataclass
class EntityDetail:
    entity_id: str = ""
    canonical_key: str = ""
    display_name: Optional[str] = None
    entity_type: str = ""
    summary_text: Optional[str] = None
    fact_count: int = 0
    importance_score: Optional[float] = None
    is_active: bool = True
    first_seen_at: Optional[datetime] = None
    last_seen_at: Optional[datetime] = None
    summary_refreshed_at: Optional[datetime] = None
    aliases: list[str] = field(default_factory=list)
    #: KC-3.7: the user the entity belongs to (None: the agent's shared knowledge)
    user_id: Optional[str] = None


@dataclass
class RelationshipDetail:
    id: str = ""
    agent_id: str = ""
    #: KC-3.7: the user the row belongs to (None: the agent's shared knowledge)
    user_id: Optional[str] = None
    source_entity_key: str = ""
    target_entity_key: str = ""
    rel_type: str = ""
    strength: float = 0.8
    evidence_fact_id: Optional[str] = None
    provenance: str = "llm"
    valid_from: Optional[datetime] = None
    valid_to: Optional[datetime] = None
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None
    last_used_at: Optional[datetime] = None
    invalidated_at: Optional[datetime] = None
    is_active: bool = True


@dataclass
class IntentionDetail:
    id: str = ""
    agent_id: str = ""
    #: KC-3.7: the user the row belongs to (None: the agent's shared knowledge)
    user_id: Optional[str] = None
    trigger_type: str = ""
    trigger_condition: str = ""
    intended_action: str = ""
    due_date: Optional[datetime] = None
    status: str = "pending"
    source_context: Optional[str] = None
    outcome_note: Optional[str] = None
    created_at: Optional[datetime] = None
    triggered_at: Optional[datetime] = None
    fulfilled_at: Optional[datetime] = None


@dataclass
class BackgroundRunResult:
    results: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    duration_ms: float = 0.0


# ----------------------------------------------------------------------------- background extraction queue
@dataclass(frozen=True)
class JobInfo:
    """One queued extraction (``write(..., background=True)``). ``status``: ``pending``
    (waiting, possibly until ``available_at`` after a failed attempt), ``running`` (claimed by
    ``worker_id`` until ``lease_until``), ``done``, ``failed`` (out of attempts; ``last_error``
    says why; ``retry_jobs`` puts it back)."""

    id: str
    agent_id: str
    event_id: str
    status: str
    attempts: int
    max_attempts: int
    session_id: Optional[str]
    created_at: datetime
    updated_at: datetime
    available_at: datetime
    lease_until: Optional[datetime] = None
    worker_id: Optional[str] = None
    last_error: Optional[str] = None
    finished_at: Optional[datetime] = None
    result: Optional[dict[str, Any]] = None
    #: whose write it is (KC-3.7; None: the agent's shared knowledge)
    user_id: Optional[str] = None


@dataclass(frozen=True)
class JobQueueStatus:
    """Counts by state (every state present, 0 included), the oldest pending job's creation
    time and age, and the most recent errors (failed jobs first, then retrying ones)."""

    counts: dict[str, int]
    oldest_pending_at: Optional[datetime]
    oldest_pending_age_s: Optional[float]
    last_errors: tuple[JobInfo, ...] = ()


@dataclass(frozen=True)
class WorkerReport:
    """What one ``process_jobs`` run did: jobs completed, retried later, failed for good,
    found already processed (an earlier attempt committed), and lost (another worker took
    the job over after this worker's lease expired; its work was rolled back)."""

    done: int = 0
    retried: int = 0
    failed: int = 0
    already_done: int = 0
    lost: int = 0
    job_ids: tuple[str, ...] = ()
