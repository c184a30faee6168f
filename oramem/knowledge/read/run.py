"""The read pipeline (KC-5) in order: plan, expand, signals (``signals.py``), scoring
(``scoring.py``), spreading activation (``spreading.py``), reranker, cut, intentions and
session notes, context compression and usage tracking, over one :class:`RetrieveState`."""

from __future__ import annotations

import asyncio
import functools
import time
from datetime import datetime, timedelta
from typing import Any, Optional

import numpy as np
import sqlalchemy as sa

from ..db import queries as reads
from ..db.queries import check_user_id
from ..errors import LLMError, plain_text
from ..observe import stats_of
from ..text import parse_when, validate_agent_id
from ..types import IntentionDetail, RetrievalPlan, RetrieveResult, SpreadingActivationResult, GraphRetrievalResult
from .context import compress_context
from .scoring import clip01, ranked_cands, score_cand, scored_fact
from .signals import (direct_signals, embed_query, event_signal, expand_query, graph_signal, plan_for, reader_name,
                      reader_relatives, resolve_keys)
from .spreading import spread
from .state import Cand, RetrieveState
from .temporal import temporal_range

__all__ = ["run_retrieve", "check_retrieve", "check_query", "MAX_QUERY_CHARS"]


async def run_retrieve(st: RetrieveState) -> RetrieveResult:
    started = time.perf_counter()
    cfg = st.cfg
    t0 = time.perf_counter()
    def plan_and_reader(c: sa.Connection) -> tuple[RetrievalPlan, Optional[str], list[str]]:
        reader = reader_name(st, c)
        return plan_for(st, c), reader, reader_relatives(st, c, reader)

    plan, st.reader, st.relatives = await st.read(plan_and_reader)
    st.step("plan", t0, strategy=plan.strategy, **({} if st.reader is None else {"first_person": st.reader}),
            **({"relatives": len(st.relatives)} if st.relatives else {}))
    result = RetrieveResult(plan=plan, config_effective=cfg.as_dict())
    if plan.strategy == "skip":
        result.warnings = list(st.warnings)
        result.duration_ms = (time.perf_counter() - started) * 1000.0
        result.stats = stats_of(st, result.duration_ms)
        return result
    st.plan = plan
    st.view.trange = temporal_range(st.query, st.now, cfg.timezone)
    topk = cfg.topk_facts * (2 if plan.broad_query else 1)
    pool = plan.max_facts
    # KC-5.1 entity keys, KC-5.3 expansion
    t0 = time.perf_counter()
    emb_task = asyncio.ensure_future(embed_query(st))
    await asyncio.sleep(0)  # the task hands the query to the pool before the reads below (inline on a sync call)

    def keys_and_expansion(c: sa.Connection) -> tuple[tuple[list[str], bool], Any]:
        keys = resolve_keys(st, c)
        return keys, expand_query(st, c, keys[0])

    # the entity keys and the expansion in one trip, while the query is embedded
    try:
        (resolved, no_facts), (expanded, direct) = await st.read(keys_and_expansion)
    except BaseException:
        emb_task.cancel()
        raise
    plan.entities = list(expanded.primed_entities)
    st.step("expand", t0, primed=len(expanded.primed_entities), terms=len(expanded.expanded_terms))
    embedding_failed = await emb_task
    if embedding_failed:  # after the key resolution's warnings, as when the query was embedded after it
        st.warn(embedding_failed)
    filter_keys = resolved if st.entity_keys_in else None
    # signals
    graph = GraphRetrievalResult()
    events: list[dict[str, Any]] = []
    if not no_facts:
        t0 = time.perf_counter()
        sem, kw = await direct_signals(st, pool, filter_keys, expanded, plan)
        st.step("semantic_keyword", t0, semantic=sem, keyword=kw)
        t0 = time.perf_counter()
        # BFS from the directly primed entities; expansion neighbours are reached at hop 1
        graph = await st.read(lambda c: graph_signal(st, c, direct, filter_keys))
        st.step("graph", t0, facts=len(graph.facts), edges=graph.edges_traversed)
    t0 = time.perf_counter()
    events = await event_signal(st)
    st.step("events", t0, events=len(events))
    # scoring, spreading, reranker, cut
    for c in st.cands.values():
        score_cand(st, c)
    ranked = ranked_cands(st)
    spreading = SpreadingActivationResult()
    if ranked and cfg.spreading_activation_hops >= 1:
        t0 = time.perf_counter()
        spreading = await st.read(lambda c: spread(st, c, ranked[:topk], filter_keys))
        st.step("spreading", t0, hop1=spreading.hop1_count, hop2=spreading.hop2_count)
        ranked = ranked_cands(st)
    result.total_candidates = len(ranked)
    if cfg.enable_reranker and ranked:
        t0 = time.perf_counter()
        ranked = await rerank(st, ranked, topk)
        st.step("rerank", t0)
    kept = [c for c in ranked[:topk] if c.final >= cfg.min_score]
    # intentions, session notes, directives, emotional state
    t0 = time.perf_counter()
    side = await st.read(functools.partial(side_reads, st))
    triggered_now = trigger(st, side["pending"])
    intentions = [i for i in side["triggered"]] + triggered_now
    intentions.sort(key=lambda i: (i["created_at"], i["id"]))
    st.step("intentions_session", t0, triggered=len(triggered_now), notes=len(side["notes"]))
    directive_block = None
    if st.include_directives:
        from .procedural import directives_for

        # KC-3.8: the reader's behavioural preferences plus the shared ones, as directives(user_id=...)
        directive_block = await directives_for(st.rt, st.agent_id, "", cfg, st.now, st.call, user_id=st.user_id)
    # context
    graph_ids = {f["fact_id"] for f in graph.facts}
    facts_out = [scored_fact(st, c) for c in kept]
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
        await track_usage(st, 
            [c.row["id"] for c in kept] if cfg.track_usage else [],
            sorted(edge_ids) if cfg.track_usage else [],
            [i["id"] for i in triggered_now], side["notes"],
        )
    except Exception as exc:  # noqa: BLE001 - the result is still returned (KC-5.12)
        st.warn(f"usage tracking: {type(exc).__name__}: {exc}")
    st.step("usage", t0, facts=len(kept), edges=len(edge_ids))
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
    result.pipeline = st.trace
    result.tokens_used = st.call.usage
    result.warnings = list(st.warnings)
    result.duration_ms = (time.perf_counter() - started) * 1000.0
    result.stats = stats_of(st, result.duration_ms)
    return result


async def rerank(st: RetrieveState, ranked: list[Cand], topk: int) -> list[Cand]:
    cfg = st.cfg
    head = ranked[: min(len(ranked), 2 * topk)]
    payload = {"query": st.query, "candidates": [
        {"index": i + 1, "text": f"{c.row['entity_name'] or c.row['entity_key']}: {c.row['fact_text']}"} for i, c in enumerate(head)
    ]}
    try:
        reply = await st.call("rerank", payload, cfg.reranker_timeout_sec)
        scores = reply["scores"]
        if len(scores) != len(head):
            raise LLMError(f"{len(scores)} scores for {len(head)} candidates")
    except LLMError as exc:  # KC-5.7: keep the order, warn
        # plain_text: what went wrong without the reply it may quote (trial F6): the prompt held
        # the candidate facts, so a reply can repeat another user's text or injected text into
        # the caller's log or UI
        st.warn(f"reranker: {plain_text(exc)}")
        return ranked
    w = float(cfg.reranker_weight)
    for c, r in zip(head, scores):
        r = clip01(float(r))
        c.scores["reranker"] = r
        c.final = 0.0 if r < cfg.min_reranker_score else c.formula * ((1.0 - w) + w * r)
    head.sort(key=lambda c: (-c.final, c.row["id"]))
    return head + ranked[len(head):]


def side_reads(st: RetrieveState, conn: sa.Connection) -> dict[str, Any]:
    t = st.t
    it, so, ev, mo, cl = t.intention, t.session_observation, t.event, t.meta_observation, t.cluster
    shared_only = st.user_id is None
    it_stmt = reads.cached_stmt(it, ("side_intentions", shared_only), lambda: (
        sa.select(it).where(reads.p_visible(it, shared_only), it.c.status.in_(reads.expanding("p_statuses")))
        .order_by(it.c.created_at, it.c.id)))
    rows = reads.rows_of(conn.execute(it_stmt, {"p_agent": st.agent_id, "p_user": st.user_id, "p_statuses": ["pending", "triggered"]}))
    notes: list[dict[str, Any]] = []
    if st.session_id:
        obs = [dict(r) for r in conn.execute(
            sa.select(so.c.id, so.c.content, so.c.source_message_ids, so.c.created_at)
            .where(reads.visible(so, st.agent_id, st.user_id), so.c.session_id == st.session_id, so.c.is_active == True)  # noqa: E712
            .order_by(so.c.created_at, so.c.id)
        ).mappings()]
        for o in obs:
            src = list(o["source_message_ids"] or [])
            newest = None
            if src:
                newest = conn.execute(
                    sa.select(ev.c.occurred_at, ev.c.id).where(ev.c.id.in_(src), reads.visible(ev, st.agent_id, st.user_id))
                    .order_by(sa.desc(ev.c.occurred_at), sa.desc(ev.c.id)).limit(1)
                ).first()
            q = sa.select(sa.func.count()).select_from(ev).where(reads.visible(ev, st.agent_id, st.user_id), ev.c.session_id == st.session_id)
            if newest is not None:
                q = q.where(sa.or_(ev.c.occurred_at > newest[0], sa.and_(ev.c.occurred_at == newest[0], ev.c.id > newest[1])))
            n = int(conn.execute(q).scalar() or 0)
            o["relative_offset"] = f"{n} messages ago"
            notes.append(o)
    emotion_stmt = reads.cached_stmt(mo, ("side_emotion", shared_only), lambda: (
        sa.select(mo.c.title, mo.c.text).where(
            reads.p_visible(mo, shared_only), mo.c.is_active == True, mo.c.observation_type == sa.bindparam("p_type"),  # noqa: E712
            mo.c.last_reinforced_at >= sa.bindparam("p_since", type_=mo.c.last_reinforced_at.type),
        ).order_by(sa.desc(mo.c.last_reinforced_at), mo.c.id).limit(1)))
    emotion = conn.execute(emotion_stmt, {"p_agent": st.agent_id, "p_user": st.user_id, "p_type": "emotional_trend",
                                          "p_since": st.now - timedelta(days=7)}).first()
    summaries: dict[str, str] = {}

    def cluster_summaries(kept: list[Cand]) -> list[str]:
        ids = []
        for c in kept:
            cid = c.row.get("cluster_id")
            if cid and cid not in ids:
                ids.append(cid)
        return [summaries[i] for i in ids if summaries.get(i)][:3]

    if st.plan.broad_query:
        for cid, text in conn.execute(
            sa.select(cl.c.id, cl.c.summary_text).where(reads.visible(cl, st.agent_id, st.user_id), cl.c.is_active == True)  # noqa: E712
        ):
            summaries[cid] = text
        # KC-6.2 [ext]: not a summary written from a member fact that has expired since
        for cid in reads.clusters_quoting_expired(conn, t, [c for c, x in summaries.items() if x], st.now):
            del summaries[cid]
    return {
        "pending": [r for r in rows if r["status"] == "pending"],
        "triggered": [r for r in rows if r["status"] == "triggered"],
        "notes": notes,
        "emotion": (emotion[1] or emotion[0]) if emotion else None,
        "cluster_summaries": cluster_summaries,
    }


def trigger(st: RetrieveState, pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """KC-5.11: time intentions due, or event intentions whose trigger is close to the query."""
    out = []
    q = None
    if st.qvec is not None:
        q = st.qvec / (np.linalg.norm(st.qvec) or 1.0)
    for i in pending:
        fire = i["due_date"] is not None and i["due_date"] <= st.now
        vec = i.get("trigger_embedding_vec")
        if not fire and q is not None and vec is not None and i["trigger_type"] != "time":
            v = np.asarray(vec, dtype=np.float32)
            nv = float(np.linalg.norm(v))
            if nv > 0 and float(np.dot(q, v) / nv) >= st.cfg.intention_trigger_similarity:
                fire = True
        if fire:
            i = dict(i, status="triggered", triggered_at=st.now)
            out.append(i)
    return out


async def track_usage(st: RetrieveState, fact_ids: list[str], edge_ids: list[str], triggered: list[str], notes: list[dict[str, Any]]) -> None:
    if not (fact_ids or edge_ids or triggered or notes):
        return
    t = st.t
    f, r, it, so = t.fact, t.relationship, t.intention, t.session_observation
    now = st.now

    def run() -> bool:
        # KC-5.14: a read never waits for the write lock (review finding 16): when another
        # writer holds it, this retrieval's usage is not recorded (a warning says so)
        with st.rt.backend.try_write("knowledge usage tracking", st.agent_id) as conn:
            if conn is None:
                return False
            # by primary key: the scope is checked on the rows first (reads.visible_ids), as an
            # agent_id condition in the UPDATE made SQLite scan the agent's facts; the shared rows
            # a user's read returned count too (KC-5.12: shared knowledge users read stays fresh)
            for table, ids in ((f, fact_ids), (r, edge_ids)):
                for batch in reads.chunked(sorted(set(ids))):
                    reads.touch_by_ids(conn, table, reads.visible_ids(conn, table, st.agent_id, st.user_id, batch), now)
            for batch in reads.chunked(sorted(set(triggered))):
                conn.execute(sa.update(it).where(reads.owned(it, st.agent_id, st.user_id), it.c.id.in_(batch), it.c.status == "pending")
                             .values(status="triggered", triggered_at=now))
            for n in notes:
                conn.execute(sa.update(so).where(reads.owned(so, st.agent_id, st.user_id), so.c.id == n["id"])
                             .values(referenced_at=now, relative_offset=n["relative_offset"][:64]))
        return True

    if not await st.rt.in_thread(run):
        st.warn("usage tracking skipped: another writer holds the store's write lock (the read did not wait)")


MAX_QUERY_CHARS = 20_000
"""KC-5.1: the longest query ``retrieve`` takes, in characters. The store's search sets no
length of its own (SC-6.1 asks only for a non-blank query), so this is the one bound on the way
to it: ten of the store's 2,000-character chunks (SC-4.5), far more than a question needs, and
short enough that embedding it, the first-person readers' scans of it and the keyword search
stay cheap (a 600 KB query took ~0.4 s in the readers alone before this bound)."""


def check_query(query: Any) -> str:
    """``retrieve``'s query: a str of at most :data:`MAX_QUERY_CHARS` characters (KC-5.1)."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"query has {len(query)} characters, over the limit of {MAX_QUERY_CHARS}; "
                         "pass a shorter query (the question, not the document it is about)")
    return query


def check_retrieve(agent_id: Any, query: Any, session_id: Any, entity_keys: Any, as_of: Any, known_at: Any,
                   user_id: Any) -> tuple[Optional[str], Optional[datetime], Optional[datetime]]:
    """``retrieve``'s arguments, before anything is read: (user_id, as_of, known_at)."""
    validate_agent_id(agent_id)
    user_id = check_user_id(user_id)
    check_query(query)
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise ValueError("session_id must be a non-empty string or None")
    if entity_keys is not None:
        if isinstance(entity_keys, str) or not isinstance(entity_keys, (list, tuple, set, frozenset)):
            raise TypeError("entity_keys must be a list of str")
        if not all(isinstance(k, str) for k in entity_keys):
            raise TypeError("entity_keys must be a list of str")
    return user_id, parse_when(as_of, "as_of"), parse_when(known_at, "known_at")
