"""Background jobs (KC-6): clustering, community detection, consolidation, memify, entity
importance and summary refresh, plus ``run_background``.

Every job commits its own work in short transactions (LLM calls happen between reads and
the write, never inside a transaction) and is idempotent: a rerun with no new data creates,
assigns, generates and refreshes nothing. An item whose LLM call fails is skipped; jobs
raise only on database errors. Neighbour work is one vectorised numpy matrix per group,
capped at ``max_pairwise_items`` (a warning is logged beyond the cap).
"""

from __future__ import annotations

import logging
import math
import time
from datetime import datetime, timedelta
from typing import Any, Awaitable, Callable, Optional, TypeVar

import numpy as np
import sqlalchemy as sa

from ...kg_vectors import COMMUNITY_THEME, mean_unit_vector, observation_embed_text
from .. import checks
from ..config import KnowledgeConfig
from ..runtime import KnowledgeRuntime
from ..db.schema import KGTables
from ..write import commit as commit_mod
from ..db import queries as reads
from ..llm.emotion import tag_emotion_detailed
from ..errors import LLMError, plain_text
from ..model import new_id
from ..read.scoring import compute_vitality
from ..llm.tasks import TaskCall
from ..text import merged_names, norm
from ..types import (
    BackgroundRunResult,
    ClusteringResult,
    CommunityDetectionResult,
    ConsolidationResult,
    EntityImportanceResult,
    MemifyResult,
    SummaryRefreshResult,
)

__all__ = ["JOB_ORDER", "cluster_facts", "detect_communities", "consolidate", "memify", "score_entity_importance",
           "refresh_summaries", "job_names", "run_background", "in_scope"]

log = logging.getLogger("oramem.knowledge")

T = TypeVar("T")
#: a row read as a dict of its columns
Row = dict[str, Any]

JOB_ORDER = ("entity_importance", "summary_refresh", "clustering", "community_detection", "consolidation",
             "emotional_trends", "memify")
OBS_TYPES = ("pattern", "insight", "trend", "contradiction", "cross_entity_theme", "behavioral_preference")
_LN2 = math.log(2.0)


def _fact_cols(t: KGTables) -> list[Any]:
    return [c for c in t.fact.c if c.name != "embedding_vec"]


def _current(f: sa.Table) -> list[Any]:
    return [f.c.valid_to.is_(None), f.c.invalidated_at.is_(None)]


def _unit_rows(mat: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(mat, axis=1, keepdims=True)
    n[n == 0] = 1.0
    out: np.ndarray = mat / n
    return out


def _cap(items: list[Any], cfg: KnowledgeConfig, what: str) -> list[Any]:
    if len(items) > cfg.max_pairwise_items:
        log.warning("%s: %d items over max_pairwise_items=%d; only the first are compared", what, len(items), cfg.max_pairwise_items)
        return items[: cfg.max_pairwise_items]
    return items


async def _read(rt: KnowledgeRuntime, fn: Callable[[sa.Connection], T]) -> T:
    return await rt.read(fn)


async def _write(rt: KnowledgeRuntime, agent_id: str, what: str, fn: Callable[[sa.Connection], T], *,
                 vectors: bool = False) -> T:
    """``fn(conn)`` in one knowledge write. ``vectors``: it writes vectors this instance's
    embedder made (a summary's, a theme's, an observation's): refused first, in the same
    transaction, when the store no longer records that embedder (rek47: another process's
    ``reembed`` moved the store, and the knowledge tables, to another one)."""
    def run() -> T:
        with rt.backend.write(what, agent_id) as conn:
            if vectors:
                rt.check_embedder("nothing was written")
            return fn(conn)

    return await rt.in_thread(run)


def _present(conn: sa.Connection, table: sa.Table, ids: Any) -> set[str]:
    """The ids of ``ids`` still in ``table``, read in a job's writing transaction. A job reads
    its scope, awaits the LLM and writes in a second transaction: an erasure (KC-3.10) that
    committed in between took some of what it read, and what the job drew from those rows
    (a summary, a theme, an observation, an alias in the erased user's scope) is not written."""
    out: set[str] = set()
    for batch in reads.chunked(sorted(set(ids))):
        out.update(r[0] for r in conn.execute(sa.select(table.c.id).where(table.c.id.in_(batch))))
    return out


async def _retire_outlived(rt: KnowledgeRuntime, agent_id: str, user_id: Optional[str], now: datetime, *,
                           themes: bool) -> None:
    """KC-6.3 / KC-6.4 [ext] (obs47): the active meta observations of the scope this job writes
    (``themes``: community themes, else consolidation's types) that cite a fact whose TTL has
    passed get ``is_active`` false before the job reads what it builds on. No read served them
    since the fact expired (``queries.observations_quoting_expired``); retired, they are neither
    reinforced nor shown to the model as existing, so the run writes the observation again from
    the current facts (an expired fact is not among them). TTL is not erasure: the row stays
    (the store's purge of the fact's record deletes it, ``deletes.purge_facts``). Not counted in
    the job's result (KC-0's result fields)."""
    mo = rt.tables.meta_observation
    kind = mo.c.observation_type == COMMUNITY_THEME if themes else mo.c.observation_type != COMMUNITY_THEME
    stmt = sa.select(mo.c.id, mo.c.supporting_fact_ids).where(reads.owned(mo, agent_id, user_id), mo.c.is_active == True, kind)  # noqa: E712

    def found(conn: sa.Connection) -> set[str]:
        return reads.observations_quoting_expired(conn, rt.tables, [dict(r) for r in conn.execute(stmt).mappings()], now)

    if not await _read(rt, found):  # most runs: nothing to retire, no write transaction
        return

    def retire(conn: sa.Connection) -> None:
        for cond in reads.in_batches(mo.c.id, found(conn)):  # read again under the lock
            conn.execute(sa.update(mo).where(cond, mo.c.is_active == True).values(is_active=False))  # noqa: E712

    await _write(rt, agent_id, "knowledge observation retirement", retire)


async def _embed_one(rt: KnowledgeRuntime, text: str) -> Optional[np.ndarray]:
    try:
        vec: np.ndarray = np.asarray(await rt.embed([text], False), dtype=np.float32)[0]
        return vec
    except Exception as exc:  # noqa: BLE001 - a job item without a vector is skipped, not fatal
        log.warning("job embedding failed (%s)", type(exc).__name__)
        return None


def _names_now(conn: sa.Connection, e: sa.Table, agent_id: str, user_id: Optional[str], keys: Any) -> dict[str, Optional[str]]:
    """The display names of the scope's entities ``keys``, read in a job's writing
    transaction. A job shows the model an entity's name (``entity_summary``, a cluster's
    label, ``entity_merge``) and writes what it answered in a second transaction: an erasure
    that committed in between may have given the name back (KC-3.10: a name her erased words
    extended, red47), and what the job wrote under the old name is not written."""
    out: dict[str, Optional[str]] = {}
    for batch in reads.chunked(sorted(set(keys))):
        out.update((k, n) for k, n in conn.execute(sa.select(e.c.canonical_key, e.c.display_name).where(
            reads.owned(e, agent_id, user_id), e.c.canonical_key.in_(batch))))
    return out


def _render_fact(row: dict[str, Any]) -> str:
    """``fact_text [attribute_key = value]`` (KC-6.2; no "unknown = None")."""
    text: str = row["fact_text"]
    attr, value = row.get("attribute_key"), row.get("value_json")
    if attr and value is not None and not isinstance(value, (dict, list)):
        return f"{text} [{attr} = {value}]"
    if attr:
        return f"{text} [{attr}]"
    return text


# ----------------------------------------------------------------------------- KC-6.2
async def cluster_facts(rt: KnowledgeRuntime, agent_id: str, cfg: KnowledgeConfig, now: datetime, user_id: Optional[str] = None) -> ClusteringResult:
    t = rt.tables
    f, cl, e = t.fact, t.cluster, t.entity
    res = ClusteringResult()

    def load(conn: sa.Connection) -> tuple[list[Row], dict[str, Row], dict[str, set[Any]], dict[str, str]]:
        rows = [dict(r) for r in conn.execute(
            sa.select(f.c.id, f.c.entity_key, f.c.fact_text, f.c.attribute_key, f.c.value_json, f.c.importance, f.c.cluster_id,
                      f.c.embedding_vec, f.c.ttl_days, f.c.ingested_at)
            .where(reads.owned(f, agent_id, user_id), *_current(f), f.c.valid_from >= now - timedelta(days=cfg.cluster_max_age_days))
            .order_by(f.c.entity_key, f.c.valid_from, f.c.id)
        ).mappings()]
        rows = [r for r in rows if not reads.is_expired(r, now)]
        clusters = {r["id"]: dict(r) for r in conn.execute(
            sa.select(cl.c.id, cl.c.created_at, cl.c.is_active, cl.c.summary_text)
            .where(reads.owned(cl, agent_id, user_id), cl.c.is_active == True)  # noqa: E712
        ).mappings()}
        members: dict[str, set[Any]] = {}
        for cid, fid in conn.execute(sa.select(f.c.cluster_id, f.c.id).where(reads.owned(f, agent_id, user_id), f.c.cluster_id.is_not(None))):
            members.setdefault(cid, set()).add(fid)
        names = {k: n for k, n in conn.execute(sa.select(e.c.canonical_key, e.c.display_name).where(reads.owned(e, agent_id, user_id)))}
        return rows, clusters, members, names

    rows, clusters, members, names = await _read(rt, load)
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["entity_key"], []).append(r)
    plans: list[list[Any]] = []  # (cluster_id or None, entity_key, facts, changed, summary, vector)
    chosen: set[str] = set()
    for key in sorted(groups):
        facts = groups[key]
        if len(facts) < cfg.cluster_min_facts:
            continue
        counts: dict[str, int] = {}
        for r in facts:
            if r["cluster_id"] in clusters and r["cluster_id"] not in chosen:
                counts[r["cluster_id"]] = counts.get(r["cluster_id"], 0) + 1
        existing = sorted(counts, key=lambda c: (-counts[c], clusters[c]["created_at"], c))[0] if counts else None
        ids = {r["id"] for r in facts}
        changed = existing is None or members.get(existing, set()) != ids
        if existing:
            chosen.add(existing)
        plans.append([existing, key, facts, changed, None, None])
    call = TaskCall(rt.llm)
    for p in plans:
        existing, key, facts, changed = p[:4]
        # a cluster without a summary (its facts' delete or retract cleared it, or its last
        # rewrite failed) gets one, its membership unchanged (red35)
        if not changed and not (existing and clusters[existing]["summary_text"] is None):
            continue
        label = (names.get(key) or key)[:128]
        try:
            reply = await call("cluster_summary", {"label": label, "facts": [_render_fact(r) for r in facts]}, cfg.job_llm_timeout_sec)
            p[4] = reply["summary"].strip()
            res.summaries_generated += 1
            p[5] = await _embed_one(rt, p[4])
        except LLMError as exc:  # the cluster is kept, with the mean vector
            log.warning("cluster_summary failed (%s)", type(exc).__name__)
        if p[5] is None:
            p[5] = mean_unit_vector([r["embedding_vec"] for r in facts if r["embedding_vec"] is not None])

    def write(conn: sa.Connection) -> None:
        keep: set[str] = set()
        present = _present(conn, f, [r["id"] for p in plans for r in p[2]])
        names_now = _names_now(conn, e, agent_id, user_id, [p[1] for p in plans])
        for existing, key, facts, changed, summary, vec in plans:
            ids = sorted(r["id"] for r in facts)
            # erased since the read, or the label's name given back (red47): left for the next run
            if not present.issuperset(ids) or names_now.get(key) != names.get(key):
                if existing:
                    keep.add(existing)
                continue
            imp = sum(float(r["importance"]) for r in facts) / len(facts)
            leaving = sorted(members.get(existing, set()) - set(ids)) if existing else []
            if existing is None:
                cid = new_id()
                conn.execute(sa.insert(cl).values(
                    id=cid, agent_id=agent_id, user_id=user_id, label=(names.get(key) or key)[:128], summary_text=summary, cluster_type="entity",
                    fact_count=len(ids), importance=imp, embedding_vec=vec, is_active=True, last_updated_at=now, created_at=now))
                res.clusters_created += 1
            else:
                cid = existing
                if changed:
                    vals = dict(fact_count=len(ids), importance=imp, last_updated_at=now)
                    if summary is not None:
                        vals["summary_text"] = summary
                    elif leaving:  # the old summary names facts that leave, and no new one was written
                        vals["summary_text"] = None
                    if vec is not None:
                        vals["embedding_vec"] = vec
                    conn.execute(sa.update(cl).where(cl.c.id == cid).values(**vals))
                    res.clusters_reinforced += 1
                elif summary is not None:  # the summary a delete or retract cleared, written again
                    conn.execute(sa.update(cl).where(cl.c.id == cid).values(summary_text=summary, embedding_vec=vec))
            keep.add(cid)
            if changed:
                moving = [r["id"] for r in facts if r["cluster_id"] != cid]
                for batch in reads.chunked(moving):
                    conn.execute(sa.update(f).where(reads.owned(f, agent_id, user_id), f.c.id.in_(batch)).values(cluster_id=cid))
                res.facts_assigned += len(moving)
                for batch in reads.chunked(leaving):
                    conn.execute(sa.update(f).where(reads.owned(f, agent_id, user_id), f.c.id.in_(batch)).values(cluster_id=None))
                res.facts_assigned += len(leaving)
        # clusters below the minimum (or no longer any entity's cluster) are deactivated, without
        # the summary and its vector: no member is left to name what they quote, so an erasure
        # would not find them (red35), and no reader reads an inactive cluster
        for cid in sorted(set(clusters) - keep):
            conn.execute(sa.update(cl).where(cl.c.id == cid).values(is_active=False, last_updated_at=now,
                                                                    summary_text=None, embedding_vec=None))
            gone = sorted(members.get(cid, set()))
            for batch in reads.chunked(gone):
                conn.execute(sa.update(f).where(reads.owned(f, agent_id, user_id), f.c.id.in_(batch), f.c.cluster_id == cid).values(cluster_id=None))
            res.facts_assigned += len(gone)

    await _write(rt, agent_id, "knowledge clustering", write, vectors=True)
    return res


# ----------------------------------------------------------------------------- KC-6.3
async def detect_communities(rt: KnowledgeRuntime, agent_id: str, cfg: KnowledgeConfig, now: datetime, user_id: Optional[str] = None) -> CommunityDetectionResult:
    t = rt.tables
    cl, f, mo = t.cluster, t.fact, t.meta_observation
    await _retire_outlived(rt, agent_id, user_id, now, themes=True)

    def load(conn: sa.Connection) -> tuple[list[Row], dict[str, list[tuple[str, str, Optional[str]]]], list[Row]]:
        cls = [dict(r) for r in conn.execute(
            sa.select(cl.c.id, cl.c.label, cl.c.summary_text, cl.c.embedding_vec, cl.c.importance)
            .where(reads.owned(cl, agent_id, user_id), cl.c.is_active == True, cl.c.embedding_vec.is_not(None))  # noqa: E712
            .order_by(sa.desc(cl.c.importance), cl.c.id)
        ).mappings()]
        facts: dict[str, list[tuple[str, str, Optional[str]]]] = {}
        ids = [c["id"] for c in cls]
        for batch in reads.chunked(ids):
            for cid, fid, key, source in conn.execute(
                sa.select(f.c.cluster_id, f.c.id, f.c.entity_key, f.c.source_event_id)
                .where(reads.owned(f, agent_id, user_id), f.c.cluster_id.in_(batch)).order_by(f.c.id)
            ):
                facts.setdefault(cid, []).append((fid, key, source))
        themes = [dict(r) for r in conn.execute(
            sa.select(mo.c.id, mo.c.title, mo.c.supporting_fact_ids, mo.c.embedding_vec)
            .where(reads.owned(mo, agent_id, user_id), mo.c.is_active == True, mo.c.observation_type == COMMUNITY_THEME)  # noqa: E712
            .order_by(mo.c.id)
        ).mappings()]
        return cls, facts, themes

    cls, facts, themes = await _read(rt, load)
    if len(cls) < cfg.community_min_clusters:
        return CommunityDetectionResult(skipped=True, skip_reason="insufficient clusters")
    cls = _cap(cls, cfg, "detect_communities")
    owner = {c["id"]: (facts.get(c["id"]) or [("", c["label"], None)])[0][1] for c in cls}
    mat = _unit_rows(np.stack([np.asarray(c["embedding_vec"], dtype=np.float32) for c in cls]))
    sims = mat @ mat.T
    parent = list(range(len(cls)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    ii, jj = np.nonzero(np.triu(sims >= cfg.community_similarity_threshold, k=1))
    for i, j in zip(ii.tolist(), jj.tolist()):
        if owner[cls[i]["id"]] != owner[cls[j]["id"]]:
            parent[find(i)] = find(j)
    comps: dict[int, list[int]] = {}
    for i in range(len(cls)):
        comps.setdefault(find(i), []).append(i)
    communities = sorted((sorted(v) for v in comps.values() if len(v) >= 2), key=lambda v: cls[v[0]]["id"])
    res = CommunityDetectionResult()
    call = TaskCall(rt.llm)
    actions: list[tuple[Any, ...]] = []
    for comp in communities:
        members = [cls[i] for i in comp]
        res.clusters_in_communities += len(members)
        fids = sorted({fid for c in members for fid, _, _ in facts.get(c["id"], [])})[:50]
        # KC-3.10 (red35): the theme is written from every member's summary, which quotes all its
        # facts, not only the 50 it cites: its supporting_event_ids name the events every member
        # fact was learned from, so an erasure of one of them takes the theme
        sources = sorted({src for c in members for _, _, src in facts.get(c["id"], []) if src})
        match = None
        for th in themes:
            sup = set(th["supporting_fact_ids"] or [])
            union = sup | set(fids)
            if union and len(sup & set(fids)) / len(union) >= 0.5:
                match = th["id"]
                break
        if match is None:
            try:
                reply = await call("community", {"clusters": [{"label": c["label"], "summary": c["summary_text"] or ""} for c in members]},
                                   cfg.job_llm_timeout_sec)
            except LLMError as exc:  # the community is skipped
                log.warning("community failed (%s)", type(exc).__name__)
                continue
            title, summary = reply["title"].strip()[:80], reply["summary"].strip()
            tvec = await _embed_one(rt, title)
            if tvec is not None:
                tv = tvec / (np.linalg.norm(tvec) or 1.0)
                for th in themes:
                    if th["embedding_vec"] is None:
                        continue
                    # the stored embedding is of title plus summary; compare titles by embedding them
                    other = await _embed_one(rt, th["title"])
                    if other is not None and float(np.dot(tv, other / (np.linalg.norm(other) or 1.0))) >= 0.90:
                        match = th["id"]
                        break
            if match is None:
                vec = await _embed_one(rt, observation_embed_text(COMMUNITY_THEME, title, summary))
                actions.append(("create", title, summary, fids, vec, [c["id"] for c in members], sources))
                continue
        actions.append(("reinforce", match, fids))

    def write(conn: sa.Connection) -> None:
        clusters_left = _present(conn, cl, [cid for a in actions if a[0] == "create" for cid in a[5]])
        facts_left = _present(conn, f, [fid for a in actions if a[0] == "create" for fid in a[3]])
        for a in actions:
            if a[0] == "create":
                _, title, summary, fids, vec, cids, sources = a
                if not clusters_left.issuperset(cids) or not facts_left.issuperset(fids):  # erased since the read
                    continue
                conn.execute(sa.insert(mo).values(
                    id=new_id(), agent_id=agent_id, user_id=user_id, observation_type=COMMUNITY_THEME, title=title, text=summary,
                    supporting_event_ids=sources, supporting_fact_ids=fids, confidence=0.7, importance=0.8, times_reinforced=0,
                    is_active=True, embedding_vec=vec, first_detected_at=now, last_reinforced_at=now, created_at=now))
                res.communities_created += 1
            else:
                conn.execute(sa.update(mo).where(mo.c.id == a[1]).values(times_reinforced=mo.c.times_reinforced + 1, last_reinforced_at=now))
                res.communities_reinforced += 1

    if actions:
        await _write(rt, agent_id, "knowledge communities", write, vectors=True)
    return res


# ----------------------------------------------------------------------------- KC-6.4
def _valid_indices(value: Any, n: int) -> Optional[list[int]]:
    if value is None:
        return []
    if not isinstance(value, list):
        return None
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= n:
            return None
        out.append(v)
    return out


#: how many of the scope's active observations (newest reinforced first) the ``consolidate``
#: prompt shows as ``existing`` (KC-6.4)
EXISTING_SHOWN = 10


def _observations_drawn_from(conn: sa.Connection, f: sa.Table, agent_id: str, shown: list[Row]) -> list[str]:
    """KC-3.10 (red47): the events the observations ``shown`` to the model were drawn from:
    their ``supporting_event_ids`` and the ``source_event_id`` of their ``supporting_fact_ids``
    (the agent's fact rows, any state: an observation written before red35 names its facts
    only). A new observation may repeat a shown title, so it carries these too, and an erasure
    that takes one of the shown observations takes it (``ownership.user_rows``)."""
    out = [x for o in shown for x in (o["supporting_event_ids"] or []) if isinstance(x, str)]
    fids = sorted({x for o in shown for x in (o["supporting_fact_ids"] or []) if isinstance(x, str)})
    for batch in reads.chunked(fids):
        out += [r[0] for r in conn.execute(sa.select(f.c.source_event_id).where(
            f.c.agent_id == agent_id, f.c.id.in_(batch), f.c.source_event_id.is_not(None)).order_by(f.c.id))]
    return list(dict.fromkeys(out))


async def consolidate(rt: KnowledgeRuntime, agent_id: str, cfg: KnowledgeConfig, now: datetime, user_id: Optional[str] = None) -> ConsolidationResult:
    from ..read.procedural import check_contradiction

    t = rt.tables
    ev, so, f, mo = t.event, t.session_observation, t.fact, t.meta_observation
    since = now - timedelta(days=cfg.consolidation_lookback_days)
    await _retire_outlived(rt, agent_id, user_id, now, themes=False)

    def load(conn: sa.Connection) -> tuple[list[Row], list[tuple[str, str, list[str]]], list[Row], list[Row], list[str]]:
        events = [dict(r) for r in conn.execute(
            sa.select(ev.c.id, ev.c.text, ev.c.occurred_at, ev.c.emotion_primary)
            .where(reads.owned(ev, agent_id, user_id), ev.c.occurred_at >= since, ev.c.occurred_at <= now)
            .order_by(sa.desc(ev.c.occurred_at), sa.desc(ev.c.id))
        ).mappings()]
        notes = [(r[0], r[1], [x for x in (r[2] or []) if isinstance(x, str)]) for r in conn.execute(
            sa.select(so.c.id, so.c.content, so.c.source_message_ids).where(reads.owned(so, agent_id, user_id), so.c.is_active == True, so.c.created_at >= since)  # noqa: E712
            .order_by(so.c.created_at, so.c.id)
        )]
        facts = [dict(r) for r in conn.execute(
            sa.select(f.c.id, f.c.fact_text, f.c.ttl_days, f.c.ingested_at, f.c.source_event_id)
            .where(reads.owned(f, agent_id, user_id), *_current(f))
            .order_by(sa.desc(f.c.importance), sa.desc(f.c.valid_from), f.c.id).limit(80)
        ).mappings()]
        facts = [r for r in facts if not reads.is_expired(r, now)][:40]
        obs = [dict(r) for r in conn.execute(
            sa.select(mo.c.id, mo.c.observation_type, mo.c.title, mo.c.supporting_event_ids, mo.c.supporting_fact_ids,
                      mo.c.confidence, mo.c.embedding_vec)
            .where(reads.owned(mo, agent_id, user_id), mo.c.is_active == True)  # noqa: E712
            .order_by(sa.desc(mo.c.last_reinforced_at), mo.c.id)
        ).mappings()]
        return events, notes, facts, obs, _observations_drawn_from(conn, f, agent_id, obs[:EXISTING_SHOWN])

    events, notes, facts, obs, obs_sources = await _read(rt, load)
    res = ConsolidationResult(events_processed=len(events))
    if len(events) < cfg.consolidation_min_events:
        res.skipped, res.skip_reason = True, "insufficient events"
        return res
    call = TaskCall(rt.llm)
    # tag up to 20 window events lacking an emotion
    tags = []
    for e in [e for e in events if not e["emotion_primary"]][:20]:
        out, _ = await tag_emotion_detailed(e["text"], call, cfg.job_llm_timeout_sec)
        if out is not None:
            tags.append((e["id"], out))
    if tags:
        def tag(conn: sa.Connection) -> None:
            for eid, out in tags:
                conn.execute(sa.update(ev).where(ev.c.id == eid, reads.owned(ev, agent_id, user_id)).values(
                    emotion_primary=out["emotion"], emotion_intensity=out["intensity"], energy_level=out["energy"]))

        await _write(rt, agent_id, "knowledge consolidation emotions", tag)
    shown = events[:50]
    payload = {
        "events": [{"index": i + 1, "text": (e["text"] or "")[:300], "occurred_at": e["occurred_at"].isoformat()} for i, e in enumerate(shown)],
        "session_observations": [content for _, content, _ in notes],
        "facts": [{"index": i + 1, "text": r["fact_text"]} for i, r in enumerate(facts)],
        "existing": [{"type": o["observation_type"], "title": o["title"]} for o in obs[:EXISTING_SHOWN]],
    }
    try:
        reply = await call("consolidate", payload, cfg.job_llm_timeout_sec)
    except LLMError as exc:  # KC-6.4: an LLM failure skips the job
        # plain_text: the failure without the reply it may quote (KC-5.7, KC-6.4): the prompt held
        # the scope's events and facts, so a reply can repeat them, or injected text, into the
        # result the caller logs or shows
        res.skipped, res.skip_reason = True, f"llm: {plain_text(exc)}"
        return res
    items = []
    for it in reply["observations"]:
        typ, title, text = it.get("type"), it.get("title"), it.get("text")
        if typ not in OBS_TYPES or not isinstance(title, str) or not title.strip() or not isinstance(text, str) or not text.strip():
            continue
        ei = _valid_indices(it.get("supporting_event_indices"), len(shown))
        fi = _valid_indices(it.get("supporting_fact_indices"), len(facts))
        if ei is None or fi is None:
            continue
        conf = it.get("confidence")
        conf = 0.7 if isinstance(conf, bool) or not isinstance(conf, (int, float)) else min(1.0, max(0.0, float(conf)))
        items.append({"type": typ, "title": title.strip()[:256], "text": text.strip(), "events": [shown[i - 1]["id"] for i in ei],
                      "facts": [facts[i - 1]["id"] for i in fi], "confidence": conf})
        if len(items) == 5:
            break
    actions: list[tuple[Any, ...]] = []
    for it in items:
        vec = await _embed_one(rt, observation_embed_text(it["type"], it["title"], it["text"]))
        match = None
        for o in obs:
            if o["observation_type"] != it["type"]:
                continue
            if norm(o["title"]) == norm(it["title"]):
                match = o
                break
            if vec is not None and o["embedding_vec"] is not None:
                a, b = np.asarray(o["embedding_vec"], dtype=np.float32), vec
                cos = float(np.dot(a, b) / ((np.linalg.norm(a) * np.linalg.norm(b)) or 1.0))
                if cos >= cfg.observation_dedup_similarity:
                    match = o
                    break
        if match is not None:
            actions.append(("reinforce", match, it))
            continue
        contradicted = None
        if it["type"] == "behavioral_preference":
            verdict, other = await check_contradiction(rt, agent_id, it["title"], cfg, call=call, user_id=user_id, now=now)
            if verdict.has_contradiction:
                contradicted = other
        actions.append(("create", it, vec, contradicted))

    # KC-3.10 (red35): the reply may quote any row shown, not only those it cites, so a created
    # observation's supporting_event_ids also name every event shown, the events the shown facts
    # were learned from and those the shown session notes were built from: an erasure of the
    # user (or agent) one of them was takes the observation (ownership.user_rows). Its
    # supporting_fact_ids stay the cited facts (retrieval shows an observation with them, KC-5.6).
    # red47: and what the existing observations shown were drawn from (their titles are model
    # text that may quote it): their supporting events and the events their facts came from
    drawn_from = list(dict.fromkeys(
        [e["id"] for e in shown] + [r["source_event_id"] for r in facts if r["source_event_id"]]
        + [eid for _, _, sources in notes for eid in sources] + obs_sources))
    existing_shown = [o["id"] for o in obs[:EXISTING_SHOWN]]

    def write(conn: sa.Connection) -> None:
        # the reply was drawn from every row shown: one erased since the read, nothing is written
        if (len(_present(conn, ev, [e["id"] for e in shown])) < len(shown)
                or len(_present(conn, f, [r["id"] for r in facts])) < len(facts)
                or len(_present(conn, so, [oid for oid, _, _ in notes])) < len(notes)
                or len(_present(conn, mo, existing_shown)) < len(existing_shown)):
            return
        for a in actions:
            if a[0] == "reinforce":
                o, it = a[1], a[2]
                ev_ids = list(dict.fromkeys(list(o["supporting_event_ids"] or []) + it["events"]))
                f_ids = list(dict.fromkeys(list(o["supporting_fact_ids"] or []) + it["facts"]))
                conn.execute(sa.update(mo).where(mo.c.id == o["id"]).values(
                    times_reinforced=mo.c.times_reinforced + 1, last_reinforced_at=now, supporting_event_ids=ev_ids,
                    supporting_fact_ids=f_ids, confidence=min(0.95, float(o["confidence"]) + 0.05)))
                res.observations_reinforced += 1
            else:
                _, it, vec, contradicted = a
                conn.execute(sa.insert(mo).values(
                    id=new_id(), agent_id=agent_id, user_id=user_id, observation_type=it["type"], title=it["title"], text=it["text"],
                    supporting_event_ids=list(dict.fromkeys(it["events"] + drawn_from)), supporting_fact_ids=it["facts"], confidence=it["confidence"], importance=0.5,
                    times_reinforced=0, is_active=True, embedding_vec=vec, first_detected_at=now, last_reinforced_at=now, created_at=now))
                res.observations_created += 1
                if contradicted:
                    conn.execute(sa.update(mo).where(mo.c.id == contradicted, reads.owned(mo, agent_id, user_id)).values(is_active=False))

    if actions:
        await _write(rt, agent_id, "knowledge consolidation", write, vectors=True)
    return res


# ----------------------------------------------------------------------------- KC-6.5
async def memify(rt: KnowledgeRuntime, agent_id: str, cfg: KnowledgeConfig, now: datetime, user_id: Optional[str] = None) -> MemifyResult:
    t = rt.tables
    f, r, it = t.fact, t.relationship, t.intention
    res = MemifyResult()
    changed_stale: list[str] = []

    def steps_1_2_3_5(conn: sa.Connection) -> None:
        rows = conn.execute(
            sa.select(f.c.id, f.c.times_retrieved, f.c.last_retrieved_at, f.c.ingested_at, f.c.confidence, f.c.reinforcement_count,
                      f.c.user_correction_count, f.c.importance, f.c.is_sensitive, f.c.is_stale)
            .where(reads.owned(f, agent_id, user_id), *_current(f))
        ).mappings().all()
        updates = []
        for row in rows:
            v = compute_vitality(now=now, ingested_at=row["ingested_at"], confidence=float(row["confidence"]),
                                 times_retrieved=int(row["times_retrieved"] or 0), last_retrieved_at=row["last_retrieved_at"],
                                 reinforcement_count=int(row["reinforcement_count"] or 0),
                                 user_correction_count=int(row["user_correction_count"] or 0))
            stale = bool(row["is_stale"])
            protected = float(row["importance"]) >= 0.8 or bool(row["is_sensitive"])
            if v < cfg.vitality_stale_threshold and not protected and not stale:
                stale = True
                res.facts_marked_stale += 1
                changed_stale.append(row["id"])
            elif v >= cfg.vitality_stale_threshold and stale:
                stale = False
                changed_stale.append(row["id"])
            updates.append({"b_id": row["id"], "b_v": v, "b_s": stale})
        if updates:
            conn.execute(sa.update(f).where(f.c.id == sa.bindparam("b_id")).values(
                vitality_score=sa.bindparam("b_v"), is_stale=sa.bindparam("b_s")), updates)
        res.facts_scored = len(updates)
        # edges: updated_at is the watermark
        edges = conn.execute(
            sa.select(r.c.id, r.c.strength, r.c.updated_at, r.c.last_used_at)
            .where(reads.owned(r, agent_id, user_id), r.c.valid_to.is_(None), r.c.invalidated_at.is_(None))
        ).mappings().all()
        for e in edges:
            s = float(e["strength"])
            if e["last_used_at"] is not None and e["last_used_at"] > e["updated_at"]:
                conn.execute(sa.update(r).where(r.c.id == e["id"]).values(strength=min(1.0, s + 0.05), updated_at=now))
                res.edges_reinforced += 1
            elif max(e["last_used_at"] or e["updated_at"], e["updated_at"]) < now - timedelta(days=90):
                conn.execute(sa.update(r).where(r.c.id == e["id"]).values(strength=max(0.1, 0.9 * s), updated_at=now))
        # intentions past due + expiry
        conn.execute(sa.update(it).where(
            reads.owned(it, agent_id, user_id), it.c.status.in_(("pending", "triggered")), it.c.due_date.is_not(None),
            it.c.due_date < now - timedelta(days=cfg.intention_expiry_days)).values(status="expired"))

    await _write(rt, agent_id, "knowledge memify", steps_1_2_3_5)
    if changed_stale:
        await rt.in_thread(_sync_store_metadata, rt, agent_id, changed_stale)
    res.merges_executed = await _merges(rt, agent_id, cfg, now, user_id)
    return res


def _sync_store_metadata(rt: KnowledgeRuntime, agent_id: str, fact_ids: list[str]) -> None:
    """Store metadata mirrors the fact rows (KC-3.5): rewritten for facts whose state changed,
    in each fact row's own store record only. Store ids are unique per record type only and
    callers may choose them (SC-4.3): a ``fact`` record of another agent or user under a
    fact row's id (a row restored without its record, or imported under a record's id) is
    not the row's, and gets none of its metadata."""
    t = rt.tables
    with rt.backend.read() as conn:
        rows = {}
        for batch in reads.chunked(sorted(set(fact_ids))):
            for row in conn.execute(sa.select(*_fact_cols(t)).where(t.fact.c.id.in_(batch))).mappings():
                if row["agent_id"] == agent_id:
                    rows[row["id"]] = dict(row)
        links = reads.links_of(conn, t, agent_id, list(rows))
    for fid, row in rows.items():
        commit_mod.update_fact_record(rt.store, fid, agent_id, commit_mod.fact_metadata(row, links.get(fid, [row["entity_key"]])))


async def _merges(rt: KnowledgeRuntime, agent_id: str, cfg: KnowledgeConfig, now: datetime, user_id: Optional[str] = None) -> int:
    t = rt.tables
    e, f = t.entity, t.fact

    def load(conn: sa.Connection) -> tuple[list[Row], dict[str, np.ndarray], dict[str, list[str]]]:
        ents = [dict(x) for x in conn.execute(
            sa.select(e.c.canonical_key, e.c.display_name, e.c.entity_type, e.c.embedding_vec, e.c.fact_count, e.c.first_seen_at)
            .where(reads.owned(e, agent_id, user_id), e.c.is_active == True).order_by(e.c.canonical_key)  # noqa: E712
        ).mappings()]
        sums: dict[str, list[Any]] = {}
        texts: dict[str, list[str]] = {}
        for key, vec, text in conn.execute(
            sa.select(f.c.entity_key, f.c.embedding_vec, f.c.fact_text).where(reads.owned(f, agent_id, user_id), *_current(f))
            .order_by(f.c.entity_key, sa.desc(f.c.importance), f.c.id)
        ):
            if vec is not None:
                acc = sums.setdefault(key, [np.zeros(len(vec), dtype=np.float64), 0])
                acc[0] += np.asarray(vec, dtype=np.float64)
                acc[1] += 1
            lst = texts.setdefault(key, [])
            if len(lst) < 10:
                lst.append(text)
        return ents, {k: (v[0] / v[1]) for k, v in sums.items() if v[1]}, texts

    ents, centroids, texts = await _read(rt, load)
    pairs = []
    by_type: dict[str, list[dict[str, Any]]] = {}
    for x in ents:
        by_type.setdefault(x["entity_type"], []).append(x)
    for etype, group in sorted(by_type.items()):
        group = _cap(group, cfg, f"memify merges ({etype})")
        if len(group) < 2:
            continue
        dim = rt.dim
        name_m = np.stack([np.asarray(x["embedding_vec"], dtype=np.float32) if x["embedding_vec"] is not None else np.zeros(dim, np.float32) for x in group])
        cent_m = np.stack([centroids[x["canonical_key"]].astype(np.float32) if x["canonical_key"] in centroids else np.zeros(dim, np.float32) for x in group])
        sims = np.maximum(_unit_rows(name_m) @ _unit_rows(name_m).T, _unit_rows(cent_m) @ _unit_rows(cent_m).T)
        ii, jj = np.nonzero(np.triu(sims >= cfg.memify_merge_similarity_threshold, k=1))
        for i, j in zip(ii.tolist(), jj.tolist()):
            pairs.append((-float(sims[i, j]), group[i]["canonical_key"], group[j]["canonical_key"], group[i], group[j]))
    pairs.sort(key=lambda p: p[:3])
    done: set[str] = set()
    merges = 0
    call = TaskCall(rt.llm)
    for _, ka, kb, a, b in pairs:
        if ka in done or kb in done:
            continue
        try:
            reply = await call("entity_merge", {
                "a": {"key": ka, "name": a["display_name"], "facts": texts.get(ka, [])},
                "b": {"key": kb, "name": b["display_name"], "facts": texts.get(kb, [])},
            }, cfg.job_llm_timeout_sec)
        except LLMError as exc:  # the pair is skipped
            log.warning("entity_merge failed (%s)", type(exc).__name__)
            continue
        if not reply["should_merge"]:
            continue
        win, lose = sorted([a, b], key=lambda x: (-int(x["fact_count"]), x["first_seen_at"], x["canonical_key"]))
        moved = await _write(rt, agent_id, "knowledge entity merge", lambda c: _merge(rt, c, agent_id, win, lose, now, user_id))
        if moved is None:  # erased since the read
            continue
        await rt.in_thread(_sync_store_metadata, rt, agent_id, moved)
        done.update((ka, kb))
        merges += 1
    return merges


def _merge(rt: KnowledgeRuntime, conn: sa.Connection, agent_id: str, win: dict[str, Any], lose: dict[str, Any], now: datetime,
           user_id: Optional[str]) -> Optional[list[str]]:
    t = rt.tables
    f, lk, r, al, so, e = t.fact, t.link, t.relationship, t.alias, t.session_observation, t.entity
    W, L = win["canonical_key"], lose["canonical_key"]
    alive = conn.execute(sa.select(sa.func.count()).select_from(e).where(
        reads.owned(e, agent_id, user_id), e.c.canonical_key.in_((W, L)), e.c.is_active == True)).scalar_one()  # noqa: E712
    if alive < 2:  # erased (or merged) since the read: nothing to merge
        return None
    # the names the model was shown and the merge writes (the winner's into the loser's facts,
    # the loser's as aliases): one an erasure gave back since the read (red47), no merge now
    now_named = _names_now(conn, e, agent_id, user_id, (W, L))
    if now_named.get(W) != win["display_name"] or now_named.get(L) != lose["display_name"]:
        return None
    moved = [x[0] for x in conn.execute(sa.select(lk.c.fact_id).where(reads.owned(lk, agent_id, user_id), lk.c.entity_key == L))]
    moved += [x[0] for x in conn.execute(sa.select(f.c.id).where(reads.owned(f, agent_id, user_id), f.c.entity_key == L))]
    conn.execute(sa.update(f).where(reads.owned(f, agent_id, user_id), f.c.entity_key == L).values(
        entity_key=W, entity_type=win["entity_type"], entity_name=(win["display_name"] or W)[:256]))
    # links
    for lid, fid, prim in conn.execute(sa.select(lk.c.id, lk.c.fact_id, lk.c.is_primary).where(reads.owned(lk, agent_id, user_id), lk.c.entity_key == L)).all():
        other = conn.execute(sa.select(lk.c.id).where(lk.c.fact_id == fid, lk.c.entity_key == W)).first()
        if other is None:
            conn.execute(sa.update(lk).where(lk.c.id == lid).values(entity_key=W))
        else:
            conn.execute(sa.delete(lk).where(lk.c.id == lid))
            if prim:
                conn.execute(sa.update(lk).where(lk.c.id == other[0]).values(is_primary=True))
    # edges: rewritten, self-loops dropped, duplicates keep the higher strength
    for row in conn.execute(sa.select(r).where(reads.owned(r, agent_id, user_id), sa.or_(r.c.source_entity_key == L, r.c.target_entity_key == L))).mappings().all():
        src = W if row["source_entity_key"] == L else row["source_entity_key"]
        tgt = W if row["target_entity_key"] == L else row["target_entity_key"]
        if src == tgt:
            conn.execute(sa.delete(r).where(r.c.id == row["id"]))
            continue
        dup = conn.execute(sa.select(r.c.id, r.c.strength).where(
            reads.owned(r, agent_id, user_id), r.c.source_entity_key == src, r.c.target_entity_key == tgt, r.c.rel_type == row["rel_type"])).first()
        if dup is not None:
            if float(row["strength"]) > float(dup[1]):
                conn.execute(sa.update(r).where(r.c.id == dup[0]).values(strength=float(row["strength"]), updated_at=now))
            conn.execute(sa.delete(r).where(r.c.id == row["id"]))
        else:
            conn.execute(sa.update(r).where(r.c.id == row["id"]).values(source_entity_key=src, target_entity_key=tgt, updated_at=now))
    # aliases, plus the loser's name and key slug
    conn.execute(sa.update(al).where(reads.owned(al, agent_id, user_id), al.c.canonical_entity_key == L).values(
        canonical_entity_key=W, canonical_entity_type=win["entity_type"]))
    for name in merged_names(lose["display_name"], L):
        exists = conn.execute(sa.select(al.c.id).where(reads.owned(al, agent_id, user_id), al.c.alias == name)).first()
        if exists is None:
            conn.execute(sa.insert(al).values(id=new_id(), agent_id=agent_id, user_id=user_id, alias=name[:256], canonical_entity_key=W,
                                              canonical_entity_type=win["entity_type"], created_at=now))
    # session observations' entities_mentioned
    for oid, ents in conn.execute(sa.select(so.c.id, so.c.entities_mentioned).where(reads.owned(so, agent_id, user_id))).all():
        if ents and L in ents:
            conn.execute(sa.update(so).where(so.c.id == oid).values(entities_mentioned=list(dict.fromkeys(W if x == L else x for x in ents))))
    # the loser goes inactive without the summary written from the facts it no longer holds (an
    # erasure clears the summaries of the entities her facts are linked to: the winner's now;
    # red35), and the winner's is stale: it is rewritten from all its facts at the next refresh
    conn.execute(sa.update(e).where(reads.owned(e, agent_id, user_id), e.c.canonical_key == L).values(
        is_active=False, summary_text=None, summary_refreshed_at=None))
    conn.execute(sa.update(e).where(reads.owned(e, agent_id, user_id), e.c.canonical_key == W).values(summary_refreshed_at=None))
    commit_mod.recount(conn, t, agent_id, {W, L}, now, user_id)
    return sorted(set(moved))


# ----------------------------------------------------------------------------- KC-6.6
async def score_entity_importance(rt: KnowledgeRuntime, agent_id: str, cfg: KnowledgeConfig, now: datetime, user_id: Optional[str] = None) -> EntityImportanceResult:
    t = rt.tables
    e, lk, f, r = t.entity, t.link, t.fact, t.relationship

    def run(conn: sa.Connection) -> EntityImportanceResult:
        ents = [dict(x) for x in conn.execute(
            sa.select(e.c.canonical_key, e.c.last_seen_at).where(reads.owned(e, agent_id, user_id), e.c.is_active == True)  # noqa: E712
            .order_by(e.c.canonical_key)
        ).mappings()]
        if not ents:
            return EntityImportanceResult()
        density = {k: int(n) for k, n in conn.execute(
            sa.select(lk.c.entity_key, sa.func.count(sa.distinct(f.c.id))).select_from(lk.join(f, f.c.id == lk.c.fact_id))
            .where(reads.owned(lk, agent_id, user_id), *_current(f)).group_by(lk.c.entity_key))}
        retr = {k: int(n or 0) for k, n in conn.execute(
            sa.select(lk.c.entity_key, sa.func.sum(f.c.times_retrieved)).select_from(lk.join(f, f.c.id == lk.c.fact_id))
            .where(reads.owned(lk, agent_id, user_id)).group_by(lk.c.entity_key))}
        degree: dict[str, int] = {}
        for col in (r.c.source_entity_key, r.c.target_entity_key):
            for k, n in conn.execute(sa.select(col, sa.func.count()).where(
                    reads.owned(r, agent_id, user_id), r.c.valid_to.is_(None), r.c.invalidated_at.is_(None)).group_by(col)):
                degree[k] = degree.get(k, 0) + int(n)
        keys = [x["canonical_key"] for x in ents]
        rec = {x["canonical_key"]: math.exp(-_LN2 * max(0.0, (now - x["last_seen_at"]).total_seconds() / 86400.0)
                                            / float(cfg.importance_recency_halflife_days)) for x in ents}

        def mm(values: dict[str, Any]) -> dict[str, Any]:
            vals = [float(values.get(k, 0)) for k in keys]
            lo, hi = min(vals), max(vals)
            return {k: (0.5 if hi == lo else (float(values.get(k, 0)) - lo) / (hi - lo)) for k in keys}

        nd, nr, nf, ng = mm(density), mm(rec), mm(retr), mm(degree)
        scores = {k: min(1.0, max(0.0, 0.30 * nd[k] + 0.25 * nr[k] + 0.25 * nf[k] + 0.20 * ng[k])) for k in keys}
        conn.execute(sa.update(e).where(reads.owned(e, agent_id, user_id), e.c.canonical_key == sa.bindparam("b_k")).values(
            importance_score=sa.bindparam("b_s")), [{"b_k": k, "b_s": s} for k, s in scores.items()])
        top = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        return EntityImportanceResult(entities_scored=len(keys), top_entities=[(k, float(s)) for k, s in top])

    return await _write(rt, agent_id, "knowledge entity importance", run)


# ----------------------------------------------------------------------------- KC-6.7
async def refresh_summaries(rt: KnowledgeRuntime, agent_id: str, cfg: KnowledgeConfig, now: datetime, user_id: Optional[str] = None) -> SummaryRefreshResult:
    t = rt.tables
    e, lk, f = t.entity, t.link, t.fact

    def load(conn: sa.Connection) -> list[tuple[Row, bool, list[tuple[str, str]]]]:
        ents = [dict(x) for x in conn.execute(
            sa.select(e.c.canonical_key, e.c.display_name, e.c.summary_text, e.c.summary_refreshed_at)
            .where(reads.owned(e, agent_id, user_id), e.c.is_active == True)  # noqa: E712
            .order_by(sa.case((e.c.importance_score.is_(None), 1), else_=0), sa.desc(e.c.importance_score), e.c.canonical_key)
            .limit(cfg.summary_refresh_max_entities)
        ).mappings()]
        out = []
        for x in ents:
            stale = x["summary_text"] is None or x["summary_refreshed_at"] is None
            if not stale and x["summary_refreshed_at"] < now - timedelta(days=cfg.summary_refresh_interval_days):
                stale = True
            if not stale:  # a linked fact expired since it was written (KC-6.7 [ext])
                stale = bool(reads.summaries_outlived(conn, t, agent_id, [{**x, "user_id": user_id}], now))
            if not stale:
                newer = conn.execute(
                    sa.select(f.c.id).select_from(lk.join(f, f.c.id == lk.c.fact_id))
                    .where(reads.owned(lk, agent_id, user_id), lk.c.entity_key == x["canonical_key"], f.c.ingested_at > x["summary_refreshed_at"])
                    .limit(1)).first()
                stale = newer is not None
            # read for every entity, stale or not (F10, left34): one whose facts are all gone
            # (invalidated, deleted, erased, expired) has its summary cleared, not kept naming them
            rows = conn.execute(
                sa.select(f.c.id, f.c.fact_text, f.c.ttl_days, f.c.ingested_at).select_from(lk.join(f, f.c.id == lk.c.fact_id))
                .where(reads.owned(lk, agent_id, user_id), lk.c.entity_key == x["canonical_key"], *_current(f))
                .order_by(sa.desc(f.c.importance), sa.desc(f.c.valid_from), f.c.id).limit(60)).mappings()
            facts = [(r["id"], r["fact_text"]) for r in rows if not reads.is_expired(dict(r), now)][:30]
            out.append((x, stale, facts))
        return out

    items = await _read(rt, load)
    res = SummaryRefreshResult()
    call = TaskCall(rt.llm)
    done = []
    cleared = []
    for x, stale, facts in items:
        if not facts:  # nothing to summarise: no LLM call about nothing, no summary of what is gone
            if x["summary_text"] is not None:
                cleared.append(x["canonical_key"])
            continue
        if not stale:
            continue
        try:
            reply = await call("entity_summary", {"entity_key": x["canonical_key"], "display_name": x["display_name"],
                                                  "facts": [text for _, text in facts]}, cfg.job_llm_timeout_sec)
        except LLMError as exc:  # the entity is skipped
            log.warning("entity_summary failed (%s)", type(exc).__name__)
            continue
        done.append((x["canonical_key"], reply["summary"].strip(), [fid for fid, _ in facts], x["display_name"]))
    if done or cleared:
        def write(conn: sa.Connection) -> None:
            for key in cleared:  # as an erasure clears one: the next refresh writes it again from new facts
                conn.execute(sa.update(e).where(reads.owned(e, agent_id, user_id), e.c.canonical_key == key).values(
                    summary_text=None, summary_refreshed_at=None))
            present = _present(conn, f, [fid for _, _, fids, _ in done for fid in fids])
            names_now = _names_now(conn, e, agent_id, user_id, [key for key, _, _, _ in done])
            for key, text, fids, name in done:
                # erased since the read, or its name given back (red47): stays as the erasure left it
                if not present.issuperset(fids) or names_now.get(key) != name:
                    continue
                conn.execute(sa.update(e).where(reads.owned(e, agent_id, user_id), e.c.canonical_key == key).values(
                    summary_text=text, summary_refreshed_at=now))

        await _write(rt, agent_id, "knowledge summary refresh", write)
    res.summaries_refreshed = len(done)
    res.summaries_cleared = len(cleared)
    res.summaries_skipped = len(items) - len(done) - len(cleared)
    return res



def job_names(jobs: Optional[list[Any]]) -> list[str]:
    """The jobs ``run_background`` runs, in :data:`JOB_ORDER`: all, or the named subset."""
    names = list(JOB_ORDER)
    if jobs is None:
        return names
    if isinstance(jobs, str) or not all(isinstance(j, str) for j in jobs):
        raise TypeError("jobs must be a list of job names")
    unknown = sorted(set(jobs) - set(names))
    if unknown:
        raise ValueError(f"unknown job(s): {', '.join(unknown)}; known: {', '.join(names)}")
    return [n for n in names if n in set(jobs)]


async def run_background(rt: KnowledgeRuntime, agent_id: str, names: list[str], cfg: KnowledgeConfig, now: datetime,
                         user_id: Optional[str]) -> BackgroundRunResult:
    """KC-6.1: the jobs ``names`` in order; a failing job goes to ``errors`` and the rest still
    run. KC-6.0: every job works in the one scope ``user_id``."""
    from ..read.procedural import emotional_trends

    started = time.perf_counter()
    fns: dict[str, Callable[..., Any]] = {  # looked up per call (tests replace a job function)
        "entity_importance": score_entity_importance,
        "summary_refresh": refresh_summaries,
        "clustering": cluster_facts,
        "community_detection": detect_communities,
        "consolidation": consolidate,
        "memify": memify,
    }
    out = BackgroundRunResult()
    for name in names:
        try:
            if name == "emotional_trends":
                out.results[name] = await _write(
                    rt, agent_id, "knowledge update", lambda c: emotional_trends(rt, c, agent_id, cfg, now, user_id))
            else:
                out.results[name] = await fns[name](rt, agent_id, cfg, now, user_id)
        except Exception as exc:  # noqa: BLE001 - KC-6.1: the rest still run
            log.warning("background job %s failed (%s)", name, type(exc).__name__)
            out.errors[name] = f"{type(exc).__name__}: {plain_text(exc)}"  # no quoted model reply (KC-6.1)
    out.duration_ms = (time.perf_counter() - started) * 1000.0
    return out


async def in_scope(rt: KnowledgeRuntime, cfg: KnowledgeConfig,
                   job: Callable[[KnowledgeRuntime, str, KnowledgeConfig, datetime, Optional[str]], Awaitable[T]],
                   agent_id: str, user_id: Optional[str]) -> T:
    """A ``KnowledgeMemory`` job method (``cluster_facts`` ...): its scope checked, the clock
    read once, then ``job``. KC-6.0: a job works in one scope (the user's rows, or the shared
    rows): what it writes (clusters, observations, summaries) cites that scope's rows only."""
    user_id, now = checks.scoped(rt, agent_id, user_id)
    return await job(rt, agent_id, cfg, now, user_id)
