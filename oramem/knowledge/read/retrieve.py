"""The read pipeline (KC-5): plan, expand, signals (semantic, keyword and patterns through
the store's indexes; graph BFS as one recursive SQL query over the relationship table;
events), scoring, spreading activation, reranker, cut, intentions and session notes,
context compression and usage tracking.

Visibility (KC-0.3 at ``(as_of, known_at)``) is applied twice: as store metadata filters
before the store's top-k cut (SC-6.5), and on the knowledge rows themselves (the rows are
the source of truth; store metadata mirrors them).
"""

from __future__ import annotations

import asyncio
import calendar
import re
import time
import zoneinfo
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from collections.abc import Mapping
from typing import Any, Callable, Optional, TypeVar

import numpy as np
import sqlalchemy as sa

from ..runtime import KnowledgeRuntime
from ..db import queries as reads
from .context import compress_context
from ..errors import LLMError
from .scoring import dynamic_importance, plan_retrieval, recency_score
from ..observe import record_step, stats_of
from ..llm.tasks import TaskCall
from ..text import iso, ngrams, norm, slug, to_utc
from ..types import (
    ExpandedQuery,
    FactDetail,
    GraphRetrievalResult,
    IntentionDetail,
    PipelineTrace,
    RetrievalCandidate,
    RetrievalPlan,
    RetrieveResult,
    ScoredFact,
    SpreadingActivationResult,
    StepTiming,
)

__all__ = ["RetrieveRun", "temporal_range", "fact_visible"]

_T = TypeVar("_T")

MAX_NEIGHBOURS_PER_HOP = 10  # graph BFS: surplus neighbours cut by importance, then strength


# ----------------------------------------------------------------------------- temporal ranges
_MONTHS = {
    **{calendar.month_name[i].lower(): i for i in range(1, 13)},
    **{calendar.month_abbr[i].lower(): i for i in range(1, 13)},
    "janeiro": 1, "fevereiro": 2, "marco": 3, "abril": 4, "maio": 5, "junho": 6, "julho": 7, "agosto": 8,
    "setembro": 9, "outubro": 10, "novembro": 11, "dezembro": 12,
}


def _month_start(y: int, m: int, tz: tzinfo) -> datetime:
    return datetime(y, m, 1, tzinfo=tz)


def _next_month(y: int, m: int) -> tuple[int, int]:
    return (y + 1, 1) if m == 12 else (y, m + 1)


def temporal_range(query: str, now: datetime, tz_name: str = "UTC") -> Optional[tuple[datetime, datetime]]:
    """KC-5.3: a half-open UTC range resolved in ``tz_name`` from today/hoje, yesterday/ontem,
    this/last week|month|year (semana passada, mês passado, ano passado, esta semana, este
    mês, este ano), ``in <Month> <YYYY>``, ``in|em <YYYY>``, ``YYYY-MM-DD`` and ``N days
    ago`` / ``há N dias``; None when the query names no time."""
    tz = zoneinfo.ZoneInfo(tz_name)
    local = to_utc(now).astimezone(tz)
    today = datetime(local.year, local.month, local.day, tzinfo=tz)
    q = norm(query)

    def utc(a: datetime, b: datetime) -> tuple[datetime, datetime]:
        return to_utc(a), to_utc(b)

    m = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", q)
    if m:
        try:
            d = datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), tzinfo=tz)
            return utc(d, d + timedelta(days=1))
        except ValueError:
            pass
    m = re.search(r"\b(?:in|em)\s+([a-z]+)\s+(?:de\s+|of\s+)?(\d{4})\b", q)
    if m and m.group(1) in _MONTHS:
        y, mo = int(m.group(2)), _MONTHS[m.group(1)]
        return utc(_month_start(y, mo, tz), _month_start(*_next_month(y, mo), tz))
    m = re.search(r"\b(?:in|em)\s+(\d{4})\b", q)
    if m:
        y = int(m.group(1))
        return utc(datetime(y, 1, 1, tzinfo=tz), datetime(y + 1, 1, 1, tzinfo=tz))
    m = re.search(r"\b(\d{1,4})\s+days?\s+ago\b", q) or re.search(r"\bha\s+(\d{1,4})\s+dias?\b", q)
    if m:
        d = today - timedelta(days=int(m.group(1)))
        return utc(d, d + timedelta(days=1))
    if re.search(r"\b(yesterday|ontem)\b", q):
        return utc(today - timedelta(days=1), today)
    if re.search(r"\b(today|hoje)\b", q):
        return utc(today, today + timedelta(days=1))
    week0 = today - timedelta(days=today.weekday())
    if re.search(r"\blast week\b|\bsemana passada\b", q):
        return utc(week0 - timedelta(days=7), week0)
    if re.search(r"\bthis week\b|\besta semana\b", q):
        return utc(week0, week0 + timedelta(days=7))
    if re.search(r"\blast month\b|\bmes passado\b", q):
        y, mo = (local.year - 1, 12) if local.month == 1 else (local.year, local.month - 1)
        return utc(_month_start(y, mo, tz), _month_start(local.year, local.month, tz))
    if re.search(r"\bthis month\b|\beste mes\b", q):
        return utc(_month_start(local.year, local.month, tz), _month_start(*_next_month(local.year, local.month), tz))
    if re.search(r"\blast year\b|\bano passado\b", q):
        return utc(datetime(local.year - 1, 1, 1, tzinfo=tz), datetime(local.year, 1, 1, tzinfo=tz))
    if re.search(r"\bthis year\b|\beste ano\b", q):
        return utc(datetime(local.year, 1, 1, tzinfo=tz), datetime(local.year + 1, 1, 1, tzinfo=tz))
    return None


# ----------------------------------------------------------------------------- visibility
@dataclass
class View:
    """The point of view of one retrieve call (KC-0.3, KC-5.3, KC-5.8)."""

    now: datetime
    as_of: Optional[datetime]
    known_at: Optional[datetime]
    include_stale: bool
    trange: Optional[tuple[datetime, datetime]]

    @property
    def at(self) -> datetime:
        return self.as_of or self.now

    @property
    def known(self) -> datetime:
        return self.known_at or self.now

    @property
    def hide_stale(self) -> bool:
        return self.as_of is None and not self.include_stale


def fact_visible(row: dict[str, Any], v: View) -> bool:
    if row["ingested_at"] > v.known:
        return False
    if row.get("invalidated_at") is not None and row["invalidated_at"] <= v.known:
        return False
    if reads.is_expired(row, v.now):
        return False
    if v.trange is not None:
        start, end = v.trange
        if not (row["valid_from"] < end and (row.get("valid_to") is None or row["valid_to"] > start)):
            return False
    elif row["valid_from"] > v.at or (row.get("valid_to") is not None and row["valid_to"] <= v.at):
        return False
    if v.hide_stale and row.get("is_stale"):
        return False
    return True


def store_filter(v: View, *, min_confidence: Optional[float], entity_keys: Optional[list[str]]) -> dict[str, Any]:
    """The same visibility as store metadata filters (SC-9.3), so it applies before top-k."""
    conds: list[dict[str, Any]] = [{"kg_ingested_at": {"$lte": iso(v.known)}}]
    if v.known_at is None:
        conds.append({"kg_invalidated_at": {"$exists": False}})
    else:
        conds.append({"$or": [{"kg_invalidated_at": {"$exists": False}}, {"kg_invalidated_at": {"$gt": iso(v.known)}}]})
    if v.trange is not None:
        start, end = v.trange
        conds.append({"kg_valid_from": {"$lt": iso(end)}})
        conds.append({"$or": [{"kg_valid_to": {"$exists": False}}, {"kg_valid_to": {"$gt": iso(start)}}]})
    else:
        conds.append({"kg_valid_from": {"$lte": iso(v.at)}})
        if v.as_of is None:
            conds.append({"$or": [{"kg_valid_to": {"$exists": False}}, {"kg_valid_to": {"$gt": iso(v.at)}}]})
        else:
            conds.append({"$or": [{"kg_valid_to": {"$exists": False}}, {"kg_valid_to": {"$gt": iso(v.at)}}]})
    if v.hide_stale:
        conds.append({"kg_is_stale": False})
    if min_confidence is not None:
        conds.append({"kg_confidence": {"$gte": float(min_confidence)}})
    if entity_keys is not None:
        conds.append({"kg_entity_keys": {"$array_contains_any": list(entity_keys)}})
    return {"$and": conds}


def sql_visible(f: sa.Table, v: View) -> list[Any]:
    """KC-0.3 visibility as SQL conditions on the fact table (expiry is checked on rows)."""
    conds = [f.c.ingested_at <= v.known, sa.or_(f.c.invalidated_at.is_(None), f.c.invalidated_at > v.known)]
    if v.trange is not None:
        start, end = v.trange
        conds += [f.c.valid_from < end, sa.or_(f.c.valid_to.is_(None), f.c.valid_to > start)]
    else:
        conds += [f.c.valid_from <= v.at, sa.or_(f.c.valid_to.is_(None), f.c.valid_to > v.at)]
    if v.hide_stale:
        conds.append(f.c.is_stale == False)  # noqa: E712
    return conds


def edge_visible(r: sa.Table, v: View) -> list[Any]:
    """KC-5.8: edges are filtered by their current single interval."""
    if v.as_of is None and v.known_at is None:
        return [r.c.valid_to.is_(None), r.c.invalidated_at.is_(None)]
    return [
        r.c.created_at <= v.known,
        sa.or_(r.c.invalidated_at.is_(None), r.c.invalidated_at > v.known),
        r.c.valid_from <= v.at,
        sa.or_(r.c.valid_to.is_(None), r.c.valid_to > v.at),
    ]


def p_sql_visible(f: sa.Table, has_trange: bool, hide_stale: bool) -> list[sa.ColumnElement[bool]]:
    """:func:`sql_visible` with ``p_known``, ``p_at`` (or ``p_start``/``p_end``) bound."""
    known: sa.BindParameter[Any] = sa.bindparam("p_known")
    conds = [f.c.ingested_at <= known, sa.or_(f.c.invalidated_at.is_(None), f.c.invalidated_at > known)]
    if has_trange:
        conds += [f.c.valid_from < sa.bindparam("p_end"), sa.or_(f.c.valid_to.is_(None), f.c.valid_to > sa.bindparam("p_start"))]
    else:
        at: sa.BindParameter[Any] = sa.bindparam("p_at")
        conds += [f.c.valid_from <= at, sa.or_(f.c.valid_to.is_(None), f.c.valid_to > at)]
    if hide_stale:
        conds.append(f.c.is_stale == False)  # noqa: E712
    return conds


def p_edge_visible(r: sa.Table, current: bool) -> list[sa.ColumnElement[bool]]:
    """:func:`edge_visible` with ``p_known`` and ``p_at`` bound (``current``: no as_of/known_at)."""
    if current:
        return [r.c.valid_to.is_(None), r.c.invalidated_at.is_(None)]
    known: sa.BindParameter[Any] = sa.bindparam("p_known")
    at: sa.BindParameter[Any] = sa.bindparam("p_at")
    return [
        r.c.created_at <= known,
        sa.or_(r.c.invalidated_at.is_(None), r.c.invalidated_at > known),
        r.c.valid_from <= at,
        sa.or_(r.c.valid_to.is_(None), r.c.valid_to > at),
    ]


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


def _days(a: datetime, b: datetime) -> float:
    return max(0.0, (to_utc(b) - to_utc(a)).total_seconds() / 86400.0)


def _clip01(x: float) -> float:
    return 0.0 if x < 0 else 1.0 if x > 1 else x


# ----------------------------------------------------------------------------- the run
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


class RetrieveRun:
    def __init__(self, rt: KnowledgeRuntime, *, agent_id: str, query: str, session_id: Optional[str], entity_keys: Optional[list[Any]],
                 as_of: Optional[datetime], known_at: Optional[datetime], include_directives: bool, cfg: Any,
                 now: datetime, verbose: bool, user_id: Optional[str] = None) -> None:
        self.rt = rt
        self.t = rt.tables
        self.agent_id = agent_id
        #: KC-3.8: the reader; she sees her rows plus the agent's shared rows (None: shared only)
        self.user_id = user_id
        self.query = query
        self.session_id = session_id
        self.entity_keys_in = entity_keys
        self.cfg = cfg
        self.now = now
        self.verbose = verbose
        self.include_directives = include_directives
        self.call = TaskCall(rt.llm)
        self.warnings: list[str] = []
        self.trace = PipelineTrace() if verbose else None
        self.timings: list[StepTiming] = []  # every step's latency (OperationStats)
        self.tracer: Any = None  # an OpenTelemetry tracer while the operation's span records
        self.view = View(now, as_of, known_at, bool(cfg.include_stale_facts), None)
        self.cands: dict[str, Cand] = {}
        self.qvec: Optional[np.ndarray] = None

    # -- helpers -----------------------------------------------------------------------------
    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def step(self, name: str, started: float, **data: Any) -> None:
        record_step(self, name, started, data)

    async def read(self, fn: Callable[[sa.Connection], _T]) -> _T:
        return await self.rt.read(fn)

    def _fact_cols(self) -> list[Any]:
        return [c for c in self.t.fact.c if c.name != "embedding_vec"]

    def _shape(self) -> tuple[bool, bool, bool, bool]:
        """What the cached statements' structure depends on (never a value)."""
        v = self.view
        return (self.user_id is None, v.trange is not None, v.hide_stale, v.as_of is None and v.known_at is None)

    def _params(self, **more: Any) -> dict[str, Any]:
        """The bound values of the cached statements for this call."""
        v = self.view
        out: dict[str, Any] = {"p_agent": self.agent_id, "p_user": self.user_id, "p_known": v.known, "p_at": v.at}
        if v.trange is not None:
            out["p_start"], out["p_end"] = v.trange
        out.update(more)
        return out

    def _facts_by_ids(self, conn: sa.Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
        f = self.t.fact
        out: dict[str, dict[str, Any]] = {}
        stmt = reads.cached_stmt(f, ("facts_by_ids",), lambda: sa.select(*self._fact_cols()).where(f.c.id.in_(reads.expanding("p_ids"))))
        for batch in reads.chunked(sorted(set(ids))):
            for r in conn.execute(stmt, {"p_ids": batch}).mappings():
                d = dict(r)
                if reads.row_visible(d, self.agent_id, self.user_id):
                    out[d["id"]] = d
        return out

    def _add(self, row: dict[str, Any], signal: str, score: float, edges: tuple[Any, ...] = ()) -> bool:
        c = self.cands.get(row["id"])
        new = c is None
        if c is None:
            c = self.cands[row["id"]] = Cand(row)
        if score > c.scores.get(signal, -1.0):
            c.scores[signal] = float(score)
        c.edges.update(edges)
        return new

    # -- main --------------------------------------------------------------------------------
    async def run(self) -> RetrieveResult:
        started = time.perf_counter()
        cfg = self.cfg
        t0 = time.perf_counter()
        types, attr_keys = await self.read(self._plan_inputs)
        plan = plan_retrieval(self.query, entity_types=types, active_attribute_keys=attr_keys, as_of=self.view.as_of)
        self.step("plan", t0, strategy=plan.strategy)
        result = RetrieveResult(plan=plan, config_effective=cfg.as_dict())
        if plan.strategy == "skip":
            result.warnings = list(self.warnings)
            result.duration_ms = (time.perf_counter() - started) * 1000.0
            result.stats = stats_of(self, result.duration_ms)
            return result
        self.plan = plan
        self.view.trange = temporal_range(self.query, self.now, cfg.timezone)
        topk = cfg.topk_facts * (2 if plan.broad_query else 1)
        pool = plan.max_facts
        # KC-5.1 entity keys, KC-5.3 expansion
        t0 = time.perf_counter()
        resolved, no_facts = await self.read(self._resolve_keys)
        emb_task = asyncio.ensure_future(self._embed_query())
        expanded, direct = await self.read(lambda c: self._expand(c, resolved))
        plan.entities = list(expanded.primed_entities)
        self.step("expand", t0, primed=len(expanded.primed_entities), terms=len(expanded.expanded_terms))
        await emb_task
        filter_keys = resolved if self.entity_keys_in else None
        # signals
        graph = GraphRetrievalResult()
        events: list[dict[str, Any]] = []
        if not no_facts:
            t0 = time.perf_counter()
            sem, kw = await asyncio.gather(self._semantic(pool, filter_keys), self._keyword(pool, filter_keys, expanded, plan))
            self.step("semantic_keyword", t0, semantic=sem, keyword=kw)
            t0 = time.perf_counter()
            # BFS from the directly primed entities; expansion neighbours are reached at hop 1
            graph = await self.read(lambda c: self._graph(c, direct, filter_keys))
            self.step("graph", t0, facts=len(graph.facts), edges=graph.edges_traversed)
        t0 = time.perf_counter()
        events = await self._events()
        self.step("events", t0, events=len(events))
        # scoring, spreading, reranker, cut
        for c in self.cands.values():
            self._score(c)
        ranked = self._ranked()
        spreading = SpreadingActivationResult()
        if ranked and cfg.spreading_activation_hops >= 1:
            t0 = time.perf_counter()
            spreading = await self.read(lambda c: self._spread(c, ranked[:topk], filter_keys))
            self.step("spreading", t0, hop1=spreading.hop1_count, hop2=spreading.hop2_count)
            ranked = self._ranked()
        result.total_candidates = len(ranked)
        if cfg.enable_reranker and ranked:
            t0 = time.perf_counter()
            ranked = await self._rerank(ranked, topk)
            self.step("rerank", t0)
        kept = [c for c in ranked[:topk] if c.final >= cfg.min_score]
        # intentions, session notes, directives, emotional state
        t0 = time.perf_counter()
        side = await self.read(self._side_reads)
        triggered_now = self._trigger(side["pending"])
        intentions = [i for i in side["triggered"]] + triggered_now
        intentions.sort(key=lambda i: (i["created_at"], i["id"]))
        self.step("intentions_session", t0, triggered=len(triggered_now), notes=len(side["notes"]))
        directive_block = None
        if self.include_directives:
            from .procedural import directives_for

            directive_block = await directives_for(self.rt, self.agent_id, "", cfg, self.now, self.call)
        # context
        graph_ids = {f["fact_id"] for f in graph.facts}
        facts_out = [self._scored(c) for c in kept]
        lines = []
        for c in kept:
            text = c.row["fact_text"]
            if c.row.get("agent_annotation"):
                text += f" (note: {c.row['agent_annotation']})"
            lines.append(text)
        cluster_summaries = side["cluster_summaries"](kept[: max(1, len(kept))]) if plan.broad_query else []
        comp = compress_context(
            lines, config=cfg, directives=directive_block.text if directive_block else None, broad_query=plan.broad_query,
            cluster_summaries=cluster_summaries, observations=[m["title"] for m in spreading.meta_observations],
            session_notes=[n["content"] for n in side["notes"]], intentions=intentions,
            emotional_state=side["emotion"], events=events,
        )
        # KC-5.12 usage tracking (+ KC-5.11 transitions)
        t0 = time.perf_counter()
        edge_ids: set[str] = set()
        for c in kept:
            if "graph" in c.scores or "spreading" in c.scores:
                edge_ids.update(c.edges)
        try:
            await self._track(
                [c.row["id"] for c in kept] if cfg.track_usage else [],
                sorted(edge_ids) if cfg.track_usage else [],
                [i["id"] for i in triggered_now], side["notes"],
            )
        except Exception as exc:  # noqa: BLE001 - the result is still returned (KC-5.12)
            self.warn(f"usage tracking: {type(exc).__name__}: {exc}")
        self.step("usage", t0, facts=len(kept), edges=len(edge_ids))
        result.facts = facts_out
        result.context = comp.context_text
        result.compressed = comp
        result.events = events
        result.intentions = [IntentionDetail(**{k: v for k, v in i.items() if k != "trigger_embedding_vec"}) for i in intentions]
        result.directives = directive_block
        result.expanded = expanded
        graph.facts = [g for g in graph.facts if g["fact_id"] in graph_ids]
        result.graph = graph
        result.spreading = spreading
        result.pipeline = self.trace
        result.tokens_used = self.call.usage
        result.warnings = list(self.warnings)
        result.duration_ms = (time.perf_counter() - started) * 1000.0
        result.stats = stats_of(self, result.duration_ms)
        return result

    # -- plan inputs, keys, expansion ------------------------------------------------------------
    def _plan_inputs(self, conn: sa.Connection) -> tuple[list[str], list[str]]:
        e, rg = self.t.entity, self.t.registry
        types = [r[0] for r in conn.execute(
            sa.select(e.c.entity_type).where(reads.visible(e, self.agent_id, self.user_id), e.c.is_active == True).distinct()  # noqa: E712
        )]
        keys = [r[0] for r in conn.execute(
            sa.select(rg.c.key).where(rg.c.agent_id == self.agent_id, rg.c.status == "active").order_by(rg.c.key)
        )]
        return sorted(types), keys

    def _resolve_keys(self, conn: sa.Connection) -> tuple[list[str], bool]:
        """KC-5.1: canonical key, then alias, then slug; unknown keys warn."""
        if not self.entity_keys_in:
            return [], False
        e = self.t.entity
        out: list[str] = []
        for raw in self.entity_keys_in:
            key = str(raw)
            hit = conn.execute(
                sa.select(e.c.canonical_key).where(reads.visible(e, self.agent_id, self.user_id), e.c.canonical_key == key, e.c.is_active == True)  # noqa: E712
            ).first()
            found = hit[0] if hit else None
            if found is None:
                al = reads.lookup_aliases(conn, self.t, self.agent_id, [norm(key)], self.user_id, read=True)
                if norm(key) in al:
                    found = al[norm(key)][0]
            if found is None:
                part = key.split(":", 1)[1] if ":" in key else key
                al = reads.lookup_aliases(conn, self.t, self.agent_id, [norm(part), norm(part.replace("_", " "))], self.user_id, read=True)
                for a in (norm(part), norm(part.replace("_", " "))):
                    if a in al:
                        found = al[a][0]
                        break
            if found is None:
                cands = reads.entities_by_slug(conn, self.t, self.agent_id, slug(key.split(":", 1)[-1]), self.user_id, read=True)
                if cands:
                    found = cands[0]["canonical_key"]
            if found is None:
                self.warn(f"unknown entity key: {key}")
            elif found not in out:
                out.append(found)
        return out, not out

    def _expand(self, conn: sa.Connection, resolved: list[str]) -> tuple[ExpandedQuery, list[str]]:
        """Returns the expansion and the directly primed keys (aliases, names, entity_keys)."""
        t = self.t
        grams = [g for g in ngrams(self.query, 4) if len(g) >= 3]
        hits = reads.lookup_aliases(conn, t, self.agent_id, grams, self.user_id, read=True)
        primed: list[str] = []
        for k in resolved:
            if k not in primed:
                primed.append(k)
        by_slug = reads.entities_by_slugs(conn, t, self.agent_id, [slug(g) for g in grams], self.user_id, read=True)
        for g in grams:
            if g in hits and hits[g][0] not in primed:
                primed.append(hits[g][0])
            for e in by_slug.get(slug(g), []):  # display names (the speaker has no alias row)
                if e["canonical_key"] not in primed:
                    primed.append(e["canonical_key"])
        if primed:
            ents = reads.load_entities(conn, t, self.agent_id, primed, self.user_id, read=True)
            primed = [k for k in primed if k in ents and ents[k]["is_active"]][:10]
        neighbours: list[str] = []
        if primed:
            r = t.relationship
            shared_only, _, _, current = self._shape()
            rel_stmt = reads.cached_stmt(r, ("expand_edges", shared_only, current), lambda: (
                sa.select(r.c.source_entity_key, r.c.target_entity_key, r.c.strength, r.c.id)
                .where(reads.p_visible(r, shared_only),
                       sa.or_(r.c.source_entity_key.in_(reads.expanding("p_keys")), r.c.target_entity_key.in_(reads.expanding("p_keys"))),
                       *p_edge_visible(r, current))
                .order_by(sa.desc(r.c.strength), r.c.id)))
            rows = conn.execute(rel_stmt, self._params(p_keys=list(primed))).all()
            for s, tg, _, _ in rows:
                other = tg if s in primed else s
                if other not in primed and other not in neighbours:
                    neighbours.append(other)
                if len(neighbours) >= 5:
                    break
        primed_all = primed + neighbours
        terms: list[str] = []
        if primed:
            f = t.fact
            shared_only = self.user_id is None
            terms_stmt = reads.cached_stmt(f, ("expand_terms", shared_only), lambda: (
                sa.select(f.c.attribute_key, f.c.value_json, f.c.ttl_days, f.c.ingested_at)
                .where(reads.p_visible(f, shared_only), f.c.entity_key.in_(reads.expanding("p_keys")), f.c.valid_to.is_(None),
                       f.c.invalidated_at.is_(None))
                .order_by(sa.desc(f.c.importance), sa.desc(f.c.valid_from), f.c.id)
                .limit(200)))
            primed_rows = conn.execute(terms_stmt, {"p_agent": self.agent_id, "p_user": self.user_id, "p_keys": list(primed)}).mappings()
            for prow in primed_rows:
                if reads.is_expired(dict(prow), self.now):
                    continue
                for v in (prow["attribute_key"], prow["value_json"]):
                    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                        s = str(v).replace("_", " ") if v is prow["attribute_key"] else str(v)
                        if s.strip() and s not in terms:
                            terms.append(s)
                if len(terms) >= 10:
                    break
        return ExpandedQuery(primed_entities=primed_all, temporal_range=self.view.trange, expanded_terms=terms[:10]), primed

    # -- signals ------------------------------------------------------------------------------------
    async def _embed_query(self) -> None:
        try:
            out = await self.rt.embed([self.query], True)
            arr = np.asarray(out, dtype=np.float32)
            if arr.ndim != 2 or arr.shape[0] != 1 or arr.shape[1] != self.rt.dim or not np.all(np.isfinite(arr)):
                raise ValueError(f"embedder returned shape {arr.shape} for one query of dimension {self.rt.dim}")
            self.qvec = arr[0]
        except Exception as exc:  # noqa: BLE001 - KC-7.6: semantic and event signals turn off
            self.qvec = None
            self.warn(f"embedding: {type(exc).__name__}: {exc}; semantic and event signals off")

    async def _hits_to_rows(self, hits: list[Any]) -> dict[str, dict[str, Any]]:
        ids = [r.id for r, _ in hits]
        if not ids:
            return {}
        return await self.read(lambda c: self._facts_by_ids(c, ids))

    async def _semantic(self, pool: int, filter_keys: Optional[list[str]]) -> int:
        if self.qvec is None:
            return 0
        hits = await self.rt.search(
            query_vector=self.qvec, k=pool, agent_id=self.agent_id, record_types=["fact"], strategy="vector",
            metadata_filter=reads.with_scope(store_filter(self.view, min_confidence=self.cfg.min_confidence, entity_keys=filter_keys),
                                             self.user_id, read=True),
        )
        rows = await self._hits_to_rows(hits)
        n = 0
        for rec, dist in hits:
            sim = 1.0 - float(dist)
            row = rows.get(rec.id)
            if row is None or sim < self.cfg.min_similarity or not fact_visible(row, self.view):
                continue
            if float(row["confidence"]) < self.cfg.min_confidence:
                continue
            self._add(row, "semantic", sim)
            n += 1
        return n

    async def _keyword(self, pool: int, filter_keys: Optional[list[str]], expanded: ExpandedQuery, plan: RetrievalPlan) -> int:
        from ...types import SearchStrategy

        n = 0
        if self.rt.store.search_strategy is not SearchStrategy.HYBRID:
            self.warn("keyword signal unavailable")
        else:
            text = " ".join([self.query] + expanded.expanded_terms)
            hits = await self.rt.search(
                query=text, k=pool, agent_id=self.agent_id, record_types=["fact"], strategy="keyword",
                metadata_filter=reads.with_scope(store_filter(self.view, min_confidence=self.cfg.min_confidence, entity_keys=filter_keys),
                                             self.user_id, read=True),
            )
            rows = await self._hits_to_rows(hits)
            for rec, dist in hits:
                row = rows.get(rec.id)
                if row is None or not fact_visible(row, self.view) or float(row["confidence"]) < self.cfg.min_confidence:
                    continue
                self._add(row, "keyword", _clip01(1.0 - float(dist)))
                n += 1
        if plan.pattern_queries:
            pattern_rows = await self.read(lambda c: self._pattern_rows(c, plan, pool, filter_keys))
            for prow in pattern_rows:
                self._add(prow, "keyword", 1.0)
                n += 1
        return n

    def _pattern_rows(self, conn: sa.Connection, plan: RetrievalPlan, pool: int, filter_keys: Optional[list[str]]) -> list[dict[str, Any]]:
        f, lk = self.t.fact, self.t.link
        out: dict[str, dict[str, Any]] = {}
        for pq in plan.pattern_queries:
            stmt = sa.select(*self._fact_cols()).where(
                reads.visible(f, self.agent_id, self.user_id), f.c.entity_key.like(pq.entity_pattern), *sql_visible(f, self.view)
            )
            if pq.attribute_filter:
                stmt = stmt.where(f.c.attribute_key == pq.attribute_filter)
            if filter_keys is not None:
                stmt = stmt.where(f.c.id.in_(sa.select(lk.c.fact_id).where(reads.visible(lk, self.agent_id, self.user_id), lk.c.entity_key.in_(filter_keys))))
            for r in conn.execute(stmt.order_by(sa.desc(f.c.importance), sa.desc(f.c.valid_from), f.c.id).limit(pool)).mappings():
                d = dict(r)
                if fact_visible(d, self.view):
                    out.setdefault(d["id"], d)
        return list(out.values())

    def _graph(self, conn: sa.Connection, seeds: list[str], filter_keys: Optional[list[str]]) -> GraphRetrievalResult:
        """KC-5.4 graph signal: BFS from the primed entities over active edges, both directions,
        as one recursive CTE (SQLite and Oracle through SQLAlchemy)."""
        cfg = self.cfg
        res = GraphRetrievalResult()
        if not seeds:
            return res
        t = self.t
        r, e = t.relationship, t.entity
        shared_only, has_trange, hide_stale, current = self._shape()
        max_hop = min(2, len(cfg.graph_hop_factors) - 1)

        def build_walk() -> sa.Select[Any]:
            vis = p_edge_visible(r, current)
            fwd = sa.select(r.c.id.label("rid"), r.c.source_entity_key.label("a"), r.c.target_entity_key.label("b"),
                            r.c.strength.label("s")).where(reads.p_visible(r, shared_only), *vis)
            bwd = sa.select(r.c.id.label("rid"), r.c.target_entity_key.label("a"), r.c.source_entity_key.label("b"),
                            r.c.strength.label("s")).where(reads.p_visible(r, shared_only), *vis)
            und = sa.union_all(fwd, bwd).cte("kg_und")
            walk = (
                sa.select(e.c.canonical_key.label("k"), sa.literal(0, sa.Integer).label("hop"),
                          sa.literal(1.0, sa.Float).label("s"), sa.cast(sa.null(), sa.String(36)).label("rid"))
                .where(reads.p_visible(e, shared_only), e.c.canonical_key.in_(reads.expanding("p_seeds")))
                .cte("kg_walk", recursive=True)
            )
            step = (
                sa.select(und.c.b, (walk.c.hop + 1).label("hop"), und.c.s, und.c.rid)
                .select_from(walk.join(und, und.c.a == walk.c.k))
                .where(walk.c.hop < sa.bindparam("p_max_hop", type_=sa.Integer),
                       sa.or_(walk.c.hop == 0, und.c.s >= sa.bindparam("p_min_strength", type_=sa.Float)))
            )
            walk = walk.union_all(step)
            return sa.select(walk.c.k, walk.c.hop, walk.c.s, walk.c.rid)

        walk_stmt = reads.cached_stmt(r, ("graph_walk", shared_only, current), build_walk)
        rows = conn.execute(walk_stmt, self._params(p_seeds=list(seeds), p_max_hop=max_hop,
                                                    p_min_strength=cfg.graph_hop2_min_strength)).all()
        best: dict[str, tuple[int, float, Optional[str]]] = {}
        for k, hop, s, rid in rows:
            cur = best.get(k)
            if cur is None or hop < cur[0] or (hop == cur[0] and float(s) > cur[1]):
                best[k] = (int(hop), float(s), rid)
        rids = sorted({rid for _, _, _, rid in rows if rid})
        edge_rows: dict[str, dict[str, Any]] = {}
        edges_stmt = reads.cached_stmt(r, ("edges_by_ids",), lambda: sa.select(r).where(r.c.id.in_(reads.expanding("p_ids"))))
        for batch in reads.chunked(rids):
            for row in conn.execute(edges_stmt, {"p_ids": batch}).mappings():
                edge_rows[row["id"]] = dict(row)
        ents = reads.load_entities(conn, t, self.agent_id, list(best), self.user_id, read=True)
        best = {k: v for k, v in best.items() if k in ents and ents[k]["is_active"]}
        # neighbour cut per hop: importance, then strength
        kept: dict[str, tuple[int, float, Optional[str]]] = {k: v for k, v in best.items() if v[0] == 0}
        for hop in range(1, max_hop + 1):
            layer = [k for k, v in best.items() if v[0] == hop]
            layer.sort(key=lambda k: (-(ents[k]["importance_score"] or 0.0), -best[k][1], k))
            for k in layer[:MAX_NEIGHBOURS_PER_HOP]:
                kept[k] = best[k]
        res.neighbor_keys = sorted(k for k, v in kept.items() if v[0] > 0)
        names = {k: ents[k]["display_name"] for k in ents}
        seen_edges = set()
        hop_of_edge: dict[str, int] = {}  # an edge's lowest hop among the kept keys it reached
        for v in kept.values():
            if v[2] is not None and (v[2] not in hop_of_edge or v[0] < hop_of_edge[v[2]]):
                hop_of_edge[v[2]] = v[0]
        for rid in rids:
            er = edge_rows.get(rid)
            if er is None:
                continue
            hop = hop_of_edge.get(rid)
            if hop is None:
                continue
            seen_edges.add(rid)
            res.edges.append({
                "source_key": er["source_entity_key"], "source_name": names.get(er["source_entity_key"]),
                "target_key": er["target_entity_key"], "target_name": names.get(er["target_entity_key"]),
                "rel_type": er["rel_type"], "strength": float(er["strength"]), "hop": hop,
            })
        res.edges.sort(key=lambda x: (x["hop"], -x["strength"], x["source_key"], x["rel_type"], x["target_key"]))
        res.edges_traversed = len(seen_edges)
        # facts of the seeds and the neighbours, by hop then recency
        f, lk = t.fact, t.link
        def build_facts() -> sa.Select[Any]:
            # a key's hop (kept's keys are unique, so the hop lists are disjoint)
            hop_of = sa.case(*[(lk.c.entity_key.in_(reads.expanding(f"p_hop{h}")), h) for h in range(max_hop + 1)], else_=9)
            stmt = (
                sa.select(*self._fact_cols(), lk.c.entity_key.label("_via"), hop_of.label("_hop"))
                .select_from(f.join(lk, lk.c.fact_id == f.c.id))
                .where(reads.p_visible(lk, shared_only), lk.c.entity_key.in_(reads.expanding("p_kept")), reads.p_visible(f, shared_only),
                       f.c.confidence >= sa.bindparam("p_min_conf", type_=sa.Float), *p_sql_visible(f, has_trange, hide_stale))
                .order_by(hop_of, sa.desc(f.c.valid_from), f.c.id)
                .limit(sa.bindparam("p_limit", type_=sa.Integer, literal_execute=True))  # rendered as on main
            )
            if filter_keys is not None:
                stmt = stmt.where(f.c.id.in_(sa.select(lk.c.fact_id).where(reads.p_visible(lk, shared_only), lk.c.entity_key.in_(reads.expanding("p_fk")))))
            return stmt

        stmt = reads.cached_stmt(f, ("graph_facts", max_hop, shared_only, has_trange, hide_stale, filter_keys is not None), build_facts)
        gparams = self._params(p_kept=list(kept), p_min_conf=cfg.graph_min_confidence, p_limit=cfg.graph_max_facts * 3,
                               **{f"p_hop{h}": [k for k, v in kept.items() if v[0] == h] for h in range(max_hop + 1)})
        if filter_keys is not None:
            gparams["p_fk"] = list(filter_keys)
        qwords = " " + " ".join(norm(re.sub(r"[^\w\s]", " ", self.query)).split()) + " "
        taken: dict[str, dict[str, Any]] = {}
        for m in conn.execute(stmt, gparams).mappings():
            frow = dict(m)
            via, hop = frow.pop("_via"), int(frow.pop("_hop"))
            if not fact_visible(frow, self.view):
                continue
            if frow["id"] not in taken and len(taken) >= cfg.graph_max_facts:
                continue
            _, s, rid = kept[via]
            fact_age = _days(frow["valid_from"], self.now)
            edge_factor = 1.0
            if hop > 0 and rid in edge_rows:
                edge_factor = max(0.2, 1.0 / (1.0 + _days(edge_rows[rid]["updated_at"], self.now) / 90.0))
            name = norm(names.get(via) or "")
            boost = 1.5 if name and f" {name} " in qwords else 1.0
            score = _clip01(s * max(0.1, 1.0 / (1.0 + fact_age / 30.0)) * edge_factor * boost * cfg.graph_hop_factors[hop])
            prev = taken.get(frow["id"])
            if prev is None or score > prev["score"]:
                taken[frow["id"]] = {"fact_id": frow["id"], "entity_key": via, "hop": hop, "score": score, "edge_id": rid}
            self._add(frow, "graph", score, (rid,) if rid else ())
        res.facts = sorted(taken.values(), key=lambda x: (x["hop"], -x["score"], x["fact_id"]))
        return res

    async def _events(self) -> list[dict[str, Any]]:
        cfg = self.cfg
        if self.qvec is None:
            return []
        hits = await self.rt.search(
            query_vector=self.qvec, k=cfg.event_max_scan, agent_id=self.agent_id, record_types=["message"], strategy="vector",
            metadata_filter=reads.with_scope({"kg_source": {"$exists": True}}, self.user_id, read=True),
        )
        hits = [(rec, 1.0 - float(d)) for rec, d in hits if 1.0 - float(d) >= cfg.min_similarity]
        if not hits:
            return []
        ev = self.t.event

        def load(conn: sa.Connection) -> dict[str, dict[str, Any]]:
            out = {}
            for batch in reads.chunked([r.id for r, _ in hits]):
                for row in conn.execute(
                    sa.select(ev.c.id, ev.c.text, ev.c.occurred_at, ev.c.importance, ev.c.created_at)
                    .where(ev.c.id.in_(batch), reads.visible(ev, self.agent_id, self.user_id))
                ).mappings():
                    out[row["id"]] = dict(row)
            return out

        rows = await self.read(load)
        w_sim, w_rec, w_imp = cfg.event_score_weights
        out = []
        for rec, sim in hits:
            row = rows.get(rec.id)
            if row is None:
                continue
            if self.view.trange is not None and not (self.view.trange[0] <= row["occurred_at"] < self.view.trange[1]):
                continue
            if self.view.as_of is not None and row["occurred_at"] > self.view.as_of:
                continue
            if row["created_at"] > self.view.known:
                continue
            rec_s = recency_score(row["occurred_at"], self.now, cfg.recency_half_life_days)
            score = w_sim * sim + w_rec * rec_s + w_imp * float(row["importance"])
            out.append({"event_id": row["id"], "text": row["text"], "occurred_at": row["occurred_at"], "score": score})
        out.sort(key=lambda x: (-x["score"], x["event_id"]))
        return out[: cfg.topk_events]

    # -- scoring --------------------------------------------------------------------------------------
    def _score(self, c: Cand) -> None:
        """KC-5.5: relevance from the direct signals, raised by the context signals;
        formula = w·(relevance, recency, importance)."""
        cfg = self.cfg
        rel = relevance(c.scores, cfg.signal_factors, float(cfg.context_signal_weight))
        rec = recency_score(c.row["valid_from"], self.now, cfg.recency_half_life_days)
        imp = float(c.row["importance"])
        w = cfg.score_weights
        c.formula = float(w.get("semantic", 0.0)) * rel + float(w.get("recency", 0.0)) * rec + float(w.get("importance", 0.0)) * imp
        c.final = c.formula
        c.relevance, c.recency, c.importance = rel, rec, imp

    def _ranked(self) -> list[Cand]:
        return sorted(self.cands.values(), key=lambda c: (-c.final, c.row["id"]))

    def _confidence_info(self, row: dict[str, Any]) -> float:
        since = row.get("last_confirmed_at") or row.get("ingested_at")
        weeks = _days(since, self.now) / 7.0 if since else 0.0
        return max(0.10, float(row["confidence"]) * float(0.95 ** weeks))

    def _scored(self, c: Cand) -> ScoredFact:
        s = {k: float(c.scores.get(k, 0.0)) for k in ("semantic", "keyword", "graph", "spreading")}
        s.update(relevance=c.relevance, recency=c.recency, importance=c.importance,
                 confidence=self._confidence_info(c.row), formula=c.formula)
        if "reranker" in c.scores:
            s["reranker"] = float(c.scores["reranker"])
        row = c.row
        return ScoredFact(fact_id=row["id"], entity_key=row["entity_key"], entity_name=row["entity_name"],
                          attribute_key=row["attribute_key"], fact_text=row["fact_text"], score=c.final, scores=s,
                          speaker=row.get("speaker"), user_id=row.get("user_id"))

    # -- spreading activation ---------------------------------------------------------------------------
    def _neighbours(self, conn: sa.Connection, keys: list[str], limit: int) -> dict[str, list[tuple[str, float, str]]]:
        r = self.t.relationship
        out: dict[str, list[tuple[str, float, str]]] = {}
        if not keys:
            return out
        shared_only, _, _, current = self._shape()
        stmt = reads.cached_stmt(r, ("neighbours", shared_only, current), lambda: (
            sa.select(r.c.id, r.c.source_entity_key, r.c.target_entity_key, r.c.strength)
            .where(reads.p_visible(r, shared_only), sa.or_(r.c.source_entity_key.in_(reads.expanding("p_keys")), r.c.target_entity_key.in_(reads.expanding("p_keys"))),
                   *p_edge_visible(r, current))
            .order_by(sa.desc(r.c.strength), r.c.id)))
        for batch in reads.chunked(sorted(set(keys))):
            rows = conn.execute(stmt, self._params(p_keys=batch)).all()
            for rid, s_, t_, st in rows:
                for a, b in ((s_, t_), (t_, s_)):
                    if a in batch and a != b:
                        lst = out.setdefault(a, [])
                        if len(lst) < limit and all(x[0] != b for x in lst):
                            lst.append((b, float(st), rid))
        return out

    def _facts_of(self, conn: sa.Connection, col: sa.Column[Any], values: list[str], per: int, filter_keys: Optional[list[str]]) -> dict[str, list[dict[str, Any]]]:
        f, lk = self.t.fact, self.t.link
        out: dict[str, list[dict[str, Any]]] = {}
        shared_only, has_trange, hide_stale, _ = self._shape()

        def build() -> sa.Select[Any]:
            # the first few per group, cut in SQL with ROW_NUMBER() (SQLite ≥ 3.25 and Oracle)
            rn = sa.func.row_number().over(partition_by=col, order_by=(sa.desc(f.c.importance), sa.desc(f.c.valid_from), f.c.id))
            inner = sa.select(*self._fact_cols(), rn.label("rank_in_group")).where(
                reads.p_visible(f, shared_only), col.in_(reads.expanding("p_values")), *p_sql_visible(f, has_trange, hide_stale))
            if filter_keys is not None:
                inner = inner.where(f.c.id.in_(sa.select(lk.c.fact_id).where(reads.p_visible(lk, shared_only), lk.c.entity_key.in_(reads.expanding("p_fk")))))
            sub = inner.subquery("kg_ranked")
            return sa.select(*[sub.c[c.name] for c in self._fact_cols()]).where(sub.c.rank_in_group <= sa.bindparam("p_cut")).order_by(
                sub.c[col.name], sub.c.rank_in_group)

        stmt = reads.cached_stmt(f, ("facts_of", col.name, shared_only, has_trange, hide_stale, filter_keys is not None), build)
        for batch in reads.chunked(sorted(set(values))):
            params = self._params(p_values=batch, p_cut=per * 4)
            if filter_keys is not None:
                params["p_fk"] = list(filter_keys)
            for m in conn.execute(stmt, params).mappings():
                row = dict(m)
                if not fact_visible(row, self.view):
                    continue
                key = row[col.name]
                lst = out.setdefault(key, [])
                if len(lst) < per * 4:
                    lst.append(row)
        return out

    def _spread(self, conn: sa.Connection, seeds: list[Cand], filter_keys: Optional[list[str]]) -> SpreadingActivationResult:
        """KC-5.6: hop 1 from each seed's entity, cluster and neighbours; hop 2 from the
        entities first reached in hop 1."""
        cfg = self.cfg
        res = SpreadingActivationResult()
        seed_ids = {c.row["id"] for c in seeds}
        mean_final = sum(c.final for c in seeds) / len(seeds)
        decay = float(cfg.spreading_decay_factor)
        per = int(cfg.spreading_facts_per_entity)
        mo = self.t.meta_observation
        obs = [dict(r) for r in conn.execute(
            sa.select(mo.c.id, mo.c.title, mo.c.text, mo.c.observation_type, mo.c.supporting_fact_ids, mo.c.last_reinforced_at)
            .where(reads.visible(mo, self.agent_id, self.user_id), mo.c.is_active == True)  # noqa: E712
            .order_by(sa.desc(mo.c.last_reinforced_at), mo.c.id)
        ).mappings()]
        cited: set[str] = set()
        for o in obs:
            cited.update(o["supporting_fact_ids"] or [])
        res.meta_observations = [o for o in obs if seed_ids.intersection(o["supporting_fact_ids"] or [])][:3]

        def dyn(row: dict[str, Any]) -> float:
            d = _days(row["last_retrieved_at"], self.now) if row.get("last_retrieved_at") else None
            return dynamic_importance(float(row["importance"]), int(row["times_retrieved"] or 0), d,
                                      int(row["user_correction_count"] or 0), row["id"] in cited)

        def offer(row: dict[str, Any], hop: int, strength: float, rid: Optional[str]) -> bool:
            if row["id"] in self.cands:
                return False
            score = decay ** hop * mean_final * min(1.0, dyn(row)) * strength
            self._add(row, "spreading", score, (rid,) if rid else ())
            self._score(self.cands[row["id"]])
            res.candidates.append(RetrievalCandidate(fact=_detail(row, self.now), scores={"spreading": score}, final_score=self.cands[row["id"]].final))
            return True

        f = self.t.fact
        entities = sorted({c.row["entity_key"] for c in seeds})
        clusters = sorted({c.row["cluster_id"] for c in seeds if c.row.get("cluster_id")})
        res.entities_explored = list(entities)
        res.clusters_explored = list(clusters)
        by_entity = self._facts_of(conn, f.c.entity_key, entities, per, filter_keys)
        by_cluster = self._facts_of(conn, f.c.cluster_id, clusters, per, filter_keys) if clusters else {}
        nbrs = self._neighbours(conn, entities, int(cfg.spreading_max_related_entities))
        res.kg_relationships_explored = sum(len(v) for v in nbrs.values())
        first_reached = []
        for e_key in entities:
            for b, _, _ in nbrs.get(e_key, []):
                if b not in entities and b not in first_reached:
                    first_reached.append(b)
        by_nbr = self._facts_of(conn, f.c.entity_key, first_reached, per, filter_keys)
        for c in seeds:
            k = c.row["entity_key"]
            n = 0
            for row in by_entity.get(k, []):
                if n >= per:
                    break
                if row["id"] not in seed_ids and offer(row, 1, 1.0, None):
                    res.hop1_count += 1
                    n += 1
            cl = c.row.get("cluster_id")
            n = 0
            for row in by_cluster.get(cl, []) if cl else []:
                if n >= per:
                    break
                if row["id"] not in seed_ids and offer(row, 1, 1.0, None):
                    res.hop1_count += 1
                    n += 1
            for b, st, rid in nbrs.get(k, []):
                n = 0
                for row in by_nbr.get(b, []):
                    if n >= per:
                        break
                    if offer(row, 1, st, rid):
                        res.hop1_count += 1
                        n += 1
        if cfg.spreading_activation_hops >= 2 and first_reached:
            nbrs2 = self._neighbours(conn, first_reached, int(cfg.spreading_max_related_entities))
            res.kg_relationships_explored += sum(len(v) for v in nbrs2.values())
            explored = set(entities) | set(first_reached)
            second = []
            for a in first_reached:
                for b, _, _ in nbrs2.get(a, []):
                    if b not in explored and b not in second:
                        second.append(b)
            by2 = self._facts_of(conn, f.c.entity_key, second, per, filter_keys)
            for a in first_reached:
                for b, st, rid in nbrs2.get(a, []):
                    if b not in second:
                        continue
                    n = 0
                    for row in by2.get(b, []):
                        if n >= per:
                            break
                        if offer(row, 2, st, rid):
                            res.hop2_count += 1
                            n += 1
            res.entities_explored += [k for k in first_reached + second if k not in res.entities_explored]
        else:
            res.entities_explored += [k for k in first_reached if k not in res.entities_explored]
        return res

    # -- reranker --------------------------------------------------------------------------------------
    async def _rerank(self, ranked: list[Cand], topk: int) -> list[Cand]:
        cfg = self.cfg
        head = ranked[: min(len(ranked), 2 * topk)]
        payload = {"query": self.query, "candidates": [
            {"index": i + 1, "text": f"{c.row['entity_name'] or c.row['entity_key']}: {c.row['fact_text']}"} for i, c in enumerate(head)
        ]}
        try:
            reply = await self.call("rerank", payload, cfg.reranker_timeout_sec)
            scores = reply["scores"]
            if len(scores) != len(head):
                raise LLMError(f"{len(scores)} scores for {len(head)} candidates")
        except LLMError as exc:  # KC-5.7: keep the order, warn
            self.warn(f"reranker: {exc}")
            return ranked
        w = float(cfg.reranker_weight)
        for c, r in zip(head, scores):
            r = _clip01(float(r))
            c.scores["reranker"] = r
            c.final = 0.0 if r < cfg.min_reranker_score else c.formula * ((1.0 - w) + w * r)
        head.sort(key=lambda c: (-c.final, c.row["id"]))
        return head + ranked[len(head):]

    # -- intentions, session notes, emotional state ---------------------------------------------------
    def _side_reads(self, conn: sa.Connection) -> dict[str, Any]:
        t = self.t
        it, so, ev, mo, cl = t.intention, t.session_observation, t.event, t.meta_observation, t.cluster
        rows = [dict(r) for r in conn.execute(
            sa.select(it).where(reads.visible(it, self.agent_id, self.user_id), it.c.status.in_(("pending", "triggered")))
            .order_by(it.c.created_at, it.c.id)
        ).mappings()]
        notes: list[dict[str, Any]] = []
        if self.session_id:
            obs = [dict(r) for r in conn.execute(
                sa.select(so.c.id, so.c.content, so.c.source_message_ids, so.c.created_at)
                .where(reads.visible(so, self.agent_id, self.user_id), so.c.session_id == self.session_id, so.c.is_active == True)  # noqa: E712
                .order_by(so.c.created_at, so.c.id)
            ).mappings()]
            for o in obs:
                src = list(o["source_message_ids"] or [])
                newest = None
                if src:
                    newest = conn.execute(
                        sa.select(ev.c.occurred_at, ev.c.id).where(ev.c.id.in_(src), reads.visible(ev, self.agent_id, self.user_id))
                        .order_by(sa.desc(ev.c.occurred_at), sa.desc(ev.c.id)).limit(1)
                    ).first()
                q = sa.select(sa.func.count()).select_from(ev).where(reads.visible(ev, self.agent_id, self.user_id), ev.c.session_id == self.session_id)
                if newest is not None:
                    q = q.where(sa.or_(ev.c.occurred_at > newest[0], sa.and_(ev.c.occurred_at == newest[0], ev.c.id > newest[1])))
                n = int(conn.execute(q).scalar() or 0)
                o["relative_offset"] = f"{n} messages ago"
                notes.append(o)
        emotion = conn.execute(
            sa.select(mo.c.title, mo.c.text).where(
                reads.visible(mo, self.agent_id, self.user_id), mo.c.is_active == True, mo.c.observation_type == "emotional_trend",  # noqa: E712
                mo.c.last_reinforced_at >= self.now - timedelta(days=7),
            ).order_by(sa.desc(mo.c.last_reinforced_at), mo.c.id).limit(1)
        ).first()
        summaries: dict[str, str] = {}

        def cluster_summaries(kept: list[Cand]) -> list[str]:
            ids = []
            for c in kept:
                cid = c.row.get("cluster_id")
                if cid and cid not in ids:
                    ids.append(cid)
            return [summaries[i] for i in ids if summaries.get(i)][:3]

        if self.plan.broad_query:
            for cid, text in conn.execute(
                sa.select(cl.c.id, cl.c.summary_text).where(reads.visible(cl, self.agent_id, self.user_id), cl.c.is_active == True)  # noqa: E712
            ):
                summaries[cid] = text
        return {
            "pending": [r for r in rows if r["status"] == "pending"],
            "triggered": [r for r in rows if r["status"] == "triggered"],
            "notes": notes,
            "emotion": (emotion[1] or emotion[0]) if emotion else None,
            "cluster_summaries": cluster_summaries,
        }

    def _trigger(self, pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """KC-5.11: time intentions due, or event intentions whose trigger is close to the query."""
        out = []
        q = None
        if self.qvec is not None:
            q = self.qvec / (np.linalg.norm(self.qvec) or 1.0)
        for i in pending:
            fire = i["due_date"] is not None and i["due_date"] <= self.now
            vec = i.get("trigger_embedding_vec")
            if not fire and q is not None and vec is not None and i["trigger_type"] != "time":
                v = np.asarray(vec, dtype=np.float32)
                nv = float(np.linalg.norm(v))
                if nv > 0 and float(np.dot(q, v) / nv) >= self.cfg.intention_trigger_similarity:
                    fire = True
            if fire:
                i = dict(i, status="triggered", triggered_at=self.now)
                out.append(i)
        return out

    # -- usage tracking ----------------------------------------------------------------------------------
    async def _track(self, fact_ids: list[str], edge_ids: list[str], triggered: list[str], notes: list[dict[str, Any]]) -> None:
        if not (fact_ids or edge_ids or triggered or notes):
            return
        t = self.t
        f, r, it, so = t.fact, t.relationship, t.intention, t.session_observation
        now = self.now

        def run() -> bool:
            # KC-5.14: a read never waits for the write lock (review finding 16): when another
            # writer holds it, this retrieval's usage is not recorded (a warning says so)
            with self.rt.backend.try_write("knowledge usage tracking", self.agent_id) as conn:
                if conn is None:
                    return False
                for batch in reads.chunked(sorted(set(fact_ids))):
                    conn.execute(sa.update(f).where(reads.visible(f, self.agent_id, self.user_id), f.c.id.in_(batch))
                                 .values(times_retrieved=f.c.times_retrieved + 1, last_retrieved_at=now))
                for batch in reads.chunked(sorted(set(edge_ids))):
                    conn.execute(sa.update(r).where(reads.visible(r, self.agent_id, self.user_id), r.c.id.in_(batch)).values(last_used_at=now))
                for batch in reads.chunked(sorted(set(triggered))):
                    conn.execute(sa.update(it).where(reads.owned(it, self.agent_id, self.user_id), it.c.id.in_(batch), it.c.status == "pending")
                                 .values(status="triggered", triggered_at=now))
                for n in notes:
                    conn.execute(sa.update(so).where(reads.owned(so, self.agent_id, self.user_id), so.c.id == n["id"])
                                 .values(referenced_at=now, relative_offset=n["relative_offset"][:64]))
            return True

        if not await self.rt.in_thread(run):
            self.warn("usage tracking skipped: another writer holds the store's write lock (the read did not wait)")


def _detail(row: dict[str, Any], now: datetime) -> FactDetail:
    data = {k: v for k, v in row.items() if k in FactDetail.__dataclass_fields__ or k == "id"}
    data["fact_id"] = data.pop("id")
    data.pop("entity_keys", None)
    return FactDetail(**data, status=reads.fact_status(row, now))

