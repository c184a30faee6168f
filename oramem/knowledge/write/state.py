"""The state of one write (KC-4): :class:`WriteState` declares everything a write carries
between its steps; :class:`WriteRun` builds it from the call's arguments and holds the small
helpers the steps share (warnings, step timings, reads, embeddings). The steps are functions
over it: ``extract.py`` (steps 1-4), ``resolve.py`` (step 5), ``reconcile.py`` (step 6),
``commit.py`` (step 7); ``run.py`` runs them in order."""

from __future__ import annotations

import logging
import re
import zoneinfo
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

import numpy as np
import sqlalchemy as sa

from ..runtime import KnowledgeRuntime
from ..config import KnowledgeConfig
from ..errors import EmbeddingError
from ..model import Decision, NewEntity, XEntity, XFact, XIntention, XObservation, XRelation, new_id
from ..llm.tasks import TaskCall
from ..text import (
    entity_key,
)
from ..observe import record_step
from ..types import ExtractionStrategy, InputClassification, PipelineTrace, StepTiming


T = TypeVar("T")

__all__ = ["WriteState", "WriteRun", "SELF_REFERENCES"]

if TYPE_CHECKING:
    from ...sql_access import SQLAccess
    from ..db.schema import KGTables

log = logging.getLogger("oramem.knowledge")

SELF_REFERENCES = frozenset({"user", "me", "i", "myself", "eu", "mim", "yo", "mi", "je", "moi", "ich"})
_ATTR_RE = re.compile(r"^[a-z][a-z0-9_.]*[a-z0-9]$")
MAX_FACT_CHARS = 2000
#: the store metadata filter of a current fact record
_CURRENT_FILTER = {"kg_valid_to": {"$exists": False}, "kg_invalidated_at": {"$exists": False}}


@dataclass(eq=False, slots=True)
class WriteState:
    """Everything one ``write`` (or ``reprocess_event``) carries between its steps, declared
    in one place (issue 25 item 1): the inputs, then each step's products. The steps and the
    commit step (commit.py) read and set these fields only: the class has slots, so setting
    an undeclared attribute is an ``AttributeError``, not a new hidden field."""

    rt: KnowledgeRuntime
    #: KC-3.7: the scope of this write: the user's rows, or (None) the agent's shared rows
    user_id: Optional[str]
    t: KGTables
    backend: SQLAccess
    agent_id: str
    message: str
    speaker: str
    speaker_key: str
    source: str
    session_id: str
    occurred_at: Optional[datetime]
    t_event: datetime
    recent_messages: list[str]
    dry_run: bool
    cfg: KnowledgeConfig
    now: datetime
    verbose: bool
    tz: zoneinfo.ZoneInfo
    call: TaskCall
    reprocess_event_id: Optional[str]
    event_id: str
    trace: Optional[PipelineTrace]
    rule_based_reconcile: bool = False  # deterministic writes without an LLM
    #: an ``add_knowledge`` call's event lines (``deterministic.event_lines``): the event its
    #: commit writes records which fact each line lists (KC-3.6 [ext], del48); None for a message
    given_lines: Optional[list[tuple[str, Optional[int]]]] = None
    degraded: list[str] = field(default_factory=list)  # KC-4.22: LLM steps that fell back to rules
    #: erasures.ErasureMark: the erasures of the write's user and agent seen before it read;
    #: its commit refuses when one committed since (KC-3.10)
    erasure_mark: Any = None
    #: called with the connection at the end of the knowledge transaction (queue.py)
    on_commit: Optional[Callable[[Any], None]] = None
    timings: list[StepTiming] = field(default_factory=list)  # every step's latency (OperationStats)
    warnings: list[str] = field(default_factory=list)
    tracer: Any = None  # an OpenTelemetry tracer while the operation's span records
    # products of the steps
    classification: Optional[InputClassification] = None
    strategy: Optional[ExtractionStrategy] = None
    # set by the commit step (commit.py): what it created, and its plan (a commit.Plan)
    intentions_created: list[dict[str, Any]] = field(default_factory=list)
    observations_created: list[dict[str, Any]] = field(default_factory=list)
    plan: Any = None
    emotion: Optional[dict[str, Any]] = None
    event_vec: Optional[np.ndarray] = None
    extraction_error: Optional[str] = None
    entities: list[XEntity] = field(default_factory=list)
    facts: list[XFact] = field(default_factory=list)
    relations: list[XRelation] = field(default_factory=list)
    intentions: list[XIntention] = field(default_factory=list)
    observations: list[XObservation] = field(default_factory=list)
    updated_summaries: dict[str, str] = field(default_factory=dict)
    identity_aliases: list[tuple[str, str]] = field(default_factory=list)  # (alias name, canonical name)
    alias_to_name: dict[str, str] = field(default_factory=dict)  # postprocess: norm(alias) -> name
    # resolution
    resolved: dict[str, tuple[str, str]] = field(default_factory=dict)  # norm(name) -> (key, method)
    resolved_order: list[dict[str, Any]] = field(default_factory=list)
    created: dict[str, NewEntity] = field(default_factory=dict)
    touched_keys: set[str] = field(default_factory=set)
    key_names: dict[str, set[str]] = field(default_factory=dict)  # entity key -> names/aliases used in this write
    alias_regs: dict[str, tuple[str, str]] = field(default_factory=dict)  # norm(alias) -> (key, type)
    name_vecs: dict[str, np.ndarray] = field(default_factory=dict)
    persons_cache: Optional[list[dict[str, Any]]] = None
    type_cache: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # resolve_all's prefetch (one read for every name of the write)
    alias_cache: Any = None
    slug_cache: Any = None
    prefetched_slugs: set[str] = field(default_factory=set)
    prefetched_norms: set[str] = field(default_factory=set)
    known_entities: dict[str, dict[str, Any]] = field(default_factory=dict)
    display_updates: dict[str, str] = field(default_factory=dict)
    # reconciliation
    decisions: list[Decision] = field(default_factory=list)
    registry: dict[str, dict[str, Any]] = field(default_factory=dict)


class WriteRun(WriteState):
    """One ``write`` (or ``reprocess_event``) call: its :class:`WriteState` and the steps
    over it."""

    __slots__ = ()

    def __init__(
        self,
        rt: KnowledgeRuntime,
        *,
        agent_id: str,
        message: str,
        speaker_name: str,
        source: str,
        session_id: str,
        occurred_at: Optional[datetime],
        recent_messages: list[str],
        dry_run: bool,
        cfg: KnowledgeConfig,
        now: datetime,
        verbose: bool,
        event_id: Optional[str] = None,
        user_id: Optional[str] = None,
    ) -> None:
        speaker = speaker_name.strip()
        WriteState.__init__(
            self, rt=rt, user_id=user_id, t=rt.tables, backend=rt.backend, agent_id=agent_id,
            message=message, speaker=speaker, speaker_key=entity_key("person", speaker), source=source,
            session_id=session_id, occurred_at=occurred_at, t_event=occurred_at or now,
            recent_messages=recent_messages, dry_run=dry_run, cfg=cfg, now=now, verbose=verbose,
            tz=zoneinfo.ZoneInfo(cfg.timezone), call=TaskCall(rt.llm), reprocess_event_id=event_id,
            event_id=event_id or new_id(), trace=PipelineTrace() if verbose else None,
        )

    def warn(self, text: str) -> None:
        self.warnings.append(text)
        log.warning("oramem.knowledge write %s: %s", self.event_id, text.split(":")[0])

    def step(self, name: str, started: float, **data: Any) -> None:
        record_step(self, name, started, data)

    async def read(self, fn: Callable[[sa.Connection], T]) -> T:
        def run() -> T:
            with self.backend.read() as conn:
                return fn(conn)

        return await self.rt.in_thread(run)

    async def embed(self, texts: list[str], is_query: bool = False) -> np.ndarray:
        """KC-7.6: an exception, a wrong count or a wrong dimension is ``EmbeddingError``."""
        if not texts:
            return np.zeros((0, self.rt.dim), dtype=np.float32)
        try:
            out = await self.rt.embed(list(texts), is_query)
        except EmbeddingError:
            raise
        except Exception as exc:  # noqa: BLE001 - any embedder failure is an EmbeddingError
            raise _embedding_error(exc) from exc
        return self._vectors(texts, out)

    async def read_and_embed(self, fn: Callable[[sa.Connection], T], texts: list[str]) -> tuple[T, np.ndarray]:
        """``fn(conn)`` on a read connection, then :meth:`embed` of ``texts``: one trip to the
        worker pool when the embedder is sync (the read connection is closed before the
        embedder runs); an async embedder is awaited after the read. Where blocking work runs
        inline (``KnowledgeRuntime.runs_inline``) there is no trip to save: the read, then
        :meth:`embed`."""
        embed = getattr(self.rt.embedder, "embed", None)
        if not texts or embed is None or self.rt.runs_inline():  # no trip to save
            return await self.read(fn), await self.embed(texts)

        def both() -> tuple[T, Any, Optional[Exception]]:
            with self.backend.read() as conn:
                value = fn(conn)
            try:
                return value, embed(list(texts), is_query=False), None
            except Exception as exc:  # noqa: BLE001 - raised as EmbeddingError by the caller
                return value, None, exc

        value, out, failed = await self.rt.in_thread(both)
        if isinstance(failed, EmbeddingError):
            raise failed
        if failed is not None:
            raise _embedding_error(failed) from failed
        return value, self._vectors(texts, out)

    def _vectors(self, texts: list[str], out: Any) -> np.ndarray:
        try:
            arr = np.asarray(out, dtype=np.float32)
        except Exception as exc:  # noqa: BLE001 - an embedder reply that is no array
            raise _embedding_error(exc) from exc
        if arr.ndim != 2 or arr.shape[0] != len(texts):
            raise EmbeddingError(f"embedder returned {arr.shape[0] if arr.ndim else 0} vectors for {len(texts)} texts")
        if arr.shape[1] != self.rt.dim:
            raise EmbeddingError(f"embedder returned dimension {arr.shape[1]}, the store's vector_dim is {self.rt.dim}")
        if not np.all(np.isfinite(arr)):
            raise EmbeddingError("embedder returned non-finite values")
        return arr

    def chosen_strategy(self) -> ExtractionStrategy:
        """The strategy ``extract.classify_message`` chose (it runs first)."""
        assert self.strategy is not None, "classify_message() runs before extraction"
        return self.strategy


def _embedding_error(exc: Exception) -> EmbeddingError:
    """KC-7.6: an embedder failure (any exception) as ``EmbeddingError``."""
    return EmbeddingError(f"embedder failed: {type(exc).__name__}: {exc}")
