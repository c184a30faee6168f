"""The state of one retrieve call (``RetrieveState``) and of one candidate fact (``Cand``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Optional, TypeVar

import numpy as np
import sqlalchemy as sa

from ..db import queries as reads
from ..db.schema import KGTables
from ..llm.tasks import TaskCall
from ..observe import record_step
from ..runtime import KnowledgeRuntime
from ..types import FactDetail, PipelineTrace, RetrievalPlan, StepTiming
from .visibility import View

__all__ = ["RetrieveState", "Cand", "detail_of"]

_T = TypeVar("_T")


@dataclass
class Cand:
    row: dict[str, Any]
    scores: dict[str, Any] = field(default_factory=dict)  # raw signal scores
    edges: set[Any] = field(default_factory=set)  # relationship ids that yielded it
    final: float = 0.0
    formula: float = 0.0
    relevance: float = 0.0
    recency: float = 0.5
    importance: float = 0.5


@dataclass(eq=False)
class RetrieveState:
    """Everything one retrieve call reads and builds (KC-5): its arguments, what it sees
    (``view``), the candidates and their signal scores, the warnings, timings and LLM usage.
    The steps (``signals.py``, ``spreading.py``, ``scoring.py``, ``run.py``) are functions over
    it; the methods below are the small accessors they share."""

    rt: KnowledgeRuntime
    agent_id: str
    query: str
    session_id: Optional[str]
    entity_keys_in: Optional[list[Any]]  # the caller's entity keys, unresolved
    cfg: Any  # KnowledgeConfig with the call's overrides
    now: datetime
    verbose: bool
    include_directives: bool
    view: View
    #: KC-3.8: the reader; she sees her rows plus the agent's shared rows (None: shared only)
    user_id: Optional[str] = None
    t: KGTables = field(init=False)
    call: TaskCall = field(init=False)
    trace: Optional[PipelineTrace] = field(init=False)
    warnings: list[str] = field(default_factory=list)
    timings: list[StepTiming] = field(default_factory=list)  # every step's latency (OperationStats)
    tracer: Any = None  # an OpenTelemetry tracer while the operation's span records
    cands: dict[str, Cand] = field(default_factory=dict)
    qvec: Optional[np.ndarray] = None
    #: the reader's name when the query speaks in the first person (KC-5.4 [ext]) and the
    #: vector the semantic signal also searches facts with: the query with "I" read as the reader
    #: ("where do I live?" -> "where do Carol live?"; None when that is the query as spoken)
    reader: Optional[str] = None
    fact_qvec: Optional[np.ndarray] = None
    #: the query with "my"/"mine" also read as the reader's, searched only when the other two
    #: vectors find no fact (None: no reader, or no "my" in the query)
    mine_qvec: Optional[np.ndarray] = None
    #: the query with "my <word>" read as the entity her graph relates her to by that word
    #: ("what does my sister do?" -> "what does Dana do?"; KC-5.4 [ext]; empty: no such word)
    relatives: list[str] = field(default_factory=list)
    #: those of :attr:`relatives` that name the relation with her, for a question that asks
    #: only who the relative is ("who is Carol's sister Dana?"; set by ``reader_relatives``)
    relation_readings: set[str] = field(default_factory=set)
    #: the vectors of the relation readings, searched with the two above (empty: none, no reader)
    reading_qvecs: list[np.ndarray] = field(default_factory=list)
    #: the vectors of the readings about her or about a relative of hers, not about the relation
    #: between them: the other relatives readings ("what does Dana do?") and the query with "my
    #: <attribute>" read as hers ("what's my job?" -> "what's Carol's job?"). Searched with the
    #: ones above, their similarity is not given to a relation's mirror fact ("Ines is Carol's
    #: partner": the names in the reading lift it above her job, or above what Ines does)
    about_qvecs: list[np.ndarray] = field(default_factory=list)
    plan: RetrievalPlan = field(default_factory=RetrievalPlan)

    def __post_init__(self) -> None:
        self.t = self.rt.tables
        self.call = TaskCall(self.rt.llm)
        self.trace = PipelineTrace() if self.verbose else None

    @classmethod
    def start(cls, rt: KnowledgeRuntime, *, agent_id: str, query: str, session_id: Optional[str],
              entity_keys: Optional[list[Any]], as_of: Optional[datetime], known_at: Optional[datetime],
              include_directives: bool, cfg: Any, now: datetime, verbose: bool,
              user_id: Optional[str] = None) -> "RetrieveState":
        view = View(now, as_of, known_at, bool(cfg.include_stale_facts), None)
        return cls(rt, agent_id, query, session_id, entity_keys, cfg, now, verbose, include_directives, view, user_id)

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def step(self, name: str, started: float, **data: Any) -> None:
        record_step(self, name, started, data)

    async def read(self, fn: Callable[[sa.Connection], _T]) -> _T:
        return await self.rt.read(fn)

    def fact_cols(self) -> list[Any]:
        return [c for c in self.t.fact.c if c.name != "embedding_vec"]

    def shape(self) -> tuple[bool, bool, bool, bool]:
        """What the cached statements' structure depends on (never a value)."""
        v = self.view
        return (self.user_id is None, v.trange is not None, v.hide_stale, v.as_of is None and v.known_at is None)

    def params(self, **more: Any) -> dict[str, Any]:
        """The bound values of the cached statements for this call."""
        v = self.view
        out: dict[str, Any] = {"p_agent": self.agent_id, "p_user": self.user_id, "p_known": v.known, "p_at": v.at}
        if v.trange is not None:
            out["p_start"], out["p_end"] = v.trange
        out.update(more)
        return out

    def facts_by_ids(self, conn: sa.Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
        f = self.t.fact
        out: dict[str, dict[str, Any]] = {}
        stmt = reads.cached_stmt(f, ("facts_by_ids",), lambda: sa.select(*self.fact_cols()).where(f.c.id.in_(reads.expanding("p_ids"))))
        for batch in reads.chunked(sorted(set(ids))):
            for d in reads.rows_of(conn.execute(stmt, {"p_ids": batch})):
                if reads.row_visible(d, self.agent_id, self.user_id):
                    out[d["id"]] = d
        return out

    def add(self, row: dict[str, Any], signal: str, score: float, edges: tuple[Any, ...] = ()) -> bool:
        c = self.cands.get(row["id"])
        new = c is None
        if c is None:
            c = self.cands[row["id"]] = Cand(row)
        if score > c.scores.get(signal, -1.0):
            c.scores[signal] = float(score)
        c.edges.update(edges)
        return new


def detail_of(row: dict[str, Any], now: datetime) -> FactDetail:
    data = {k: v for k, v in row.items() if k in FactDetail.__dataclass_fields__ or k == "id"}
    data["fact_id"] = data.pop("id")
    data.pop("entity_keys", None)
    return FactDetail(**data, status=reads.fact_status(row, now))
