"""Procedural memory and emotions: ``directives`` and ``check_contradiction`` (KC-5.10) and
``emotional_trends`` (KC-5.13)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from datetime import datetime, timedelta
from typing import Any, Optional

import numpy as np
import sqlalchemy as sa

from ..runtime import KnowledgeRuntime
from ..db import queries as reads
from ..errors import LLMError
from ..model import new_id
from ..llm.tasks import TaskCall
from ..text import norm
from ..types import ContradictionResult, DirectiveBlock, EmotionalTrendsResult

__all__ = ["directives_for", "check_contradiction", "emotional_trends"]

log = logging.getLogger("oramem.knowledge")

_STOP = frozenset("""
the and for are but not you your with this that from have has had was were will would can could should about
into over than then them they their there what when where which who whom why how all any some just very more most
out off our ours she her his him its it's i'm im yes now too also been being because while did does doing done
que com para por uma umas uns dos das nos nas pelo pela pelos pelas mas nao sim isso esse essa este esta aqui ali
muito muita muitos muitas mais menos como quando onde quem qual quais seu sua seus suas meu minha meus minhas
ele ela eles elas voce voces tem ter foi era sao estou estava tudo nada
los las del una unos unas pero porque como cuando donde quien cual mas muy esto esta estos estas ese esa eso
tengo tiene fue era son estoy estaba todo nada para por sin sobre
""".split())


def _weeks(since: Optional[datetime], now: datetime) -> float:
    if since is None:
        return 0.0
    return max(0.0, (now - since).total_seconds() / (7 * 86400.0))


def _unit(v: Any) -> Optional[np.ndarray]:
    if v is None:
        return None
    a = np.asarray(v, dtype=np.float32)
    n = float(np.linalg.norm(a))
    return a / n if n > 0 else None


#: KC-5.10: the most preferences one directives block is written from
_DIRECTIVES = 10


async def directives_for(rt: KnowledgeRuntime, agent_id: str, persona_text: str, cfg: Any, now: datetime, call: Optional[TaskCall] = None,
                         *, user_id: Optional[str] = None) -> DirectiveBlock:
    """KC-5.10: active behavioral_preference observations (times_reinforced ≥ 1), ≤10, one
    ``directives`` call (fallback ``"- {title}"`` lines), per-instance cache."""
    mo = rt.tables.meta_observation

    stmt = (sa.select(mo.c.id, mo.c.title, mo.c.text, mo.c.confidence, mo.c.times_reinforced, mo.c.last_reinforced_at,
                      mo.c.supporting_fact_ids)
            .where(reads.visible(mo, agent_id, user_id), mo.c.is_active == True,  # noqa: E712
                   mo.c.observation_type == "behavioral_preference", mo.c.times_reinforced >= 1)
            .order_by(sa.desc(mo.c.times_reinforced), sa.desc(mo.c.last_reinforced_at), mo.c.id))

    def load(c: sa.Connection) -> list[dict[str, Any]]:
        # KC-6.4 [ext] (obs47): not a preference written from a fact that has expired since.
        # Read page by page in the served order (the order ends with the primary key, so the
        # pages neither overlap nor skip a row) until 10 are kept: a call reads about 10 rows,
        # not every preference of the scope (rev48: obs47 had dropped the LIMIT 10)
        out: list[dict[str, Any]] = []
        offset, page = 0, _DIRECTIVES
        while len(out) < _DIRECTIVES:
            found = [dict(r) for r in c.execute(stmt.limit(page).offset(offset)).mappings()]
            outlived = reads.observations_quoting_expired(c, rt.tables, found, now)
            out += [r for r in found if r["id"] not in outlived]
            if len(found) < page:
                break
            offset += len(found)
            page = min(4 * page, 500)  # many expired ones: fewer round trips
        return out[:_DIRECTIVES]

    rows = await rt.read(load)
    if not rows:
        return DirectiveBlock()
    # keyed by what the call is given: the observations' titles and texts (an edit that keeps
    # an id and its reinforcement count changes the block), and the persona
    shown = json.dumps([[r["id"], int(r["times_reinforced"]), r["title"], r["text"]] for r in sorted(rows, key=lambda r: r["id"])])
    key = (agent_id, user_id, hashlib.sha256(shown.encode("utf-8")).hexdigest(),
           hashlib.sha256((persona_text or "").encode("utf-8")).hexdigest())
    cache = rt.directive_cache
    hit = cache.get(key)
    if hit is not None and hit[0] > now:
        return DirectiveBlock(text=hit[1].text, directive_count=hit[1].directive_count, cache_hit=True)
    items = [
        {"title": r["title"], "text": r["text"],
         "confidence": round(max(0.10, float(r["confidence"]) * 0.95 ** _weeks(r["last_reinforced_at"], now)), 4)}
        for r in rows
    ]
    call = call or TaskCall(rt.llm)
    try:
        reply = await call("directives", {"persona": persona_text or "", "max_tokens": cfg.directive_max_tokens, "directives": items},
                           cfg.job_llm_timeout_sec)
        used = reply.get("directives_used", len(items))
        count = len(used) if isinstance(used, list) else int(used)
        block = DirectiveBlock(text=reply["directives_block"].strip(), directive_count=max(0, min(count, len(items))))
    except LLMError as exc:  # KC-7.3: directives degrade to the fallback text
        log.warning("directives: LLM failed (%s); fallback text used", type(exc).__name__)
        return DirectiveBlock(text="\n".join(f"- {i['title']}" for i in items), directive_count=len(items))
    # drop expired entries, and this scope's older ones (its observations changed); another
    # user's entry of the same agent stays
    for k in [k for k, v in cache.items() if v[0] <= now or k[:2] == (agent_id, user_id)]:
        del cache[k]
    cache[key] = (now + timedelta(minutes=cfg.directive_cache_ttl_minutes), block)
    return block


async def check_contradiction(rt: KnowledgeRuntime, agent_id: str, new_directive: str, cfg: Any, *, exclude_id: Optional[str] = None,
                              call: Optional[TaskCall] = None, user_id: Optional[str] = None,
                              now: Optional[datetime] = None) -> tuple[ContradictionResult, Optional[str]]:
    """KC-5.10: the nearest active behavioral_preference by embedding; below the threshold no
    LLM call; otherwise one ``contradiction`` call. Returns the result and the id of the
    observation it was compared with (when contradicted)."""
    vec = _unit(np.asarray(await rt.embed([new_directive], False), dtype=np.float32)[0])
    mo = rt.tables.meta_observation
    # rek47: the stored vectors must be of this instance's embedder (not moved by another
    # process's reembed since it was opened), or the similarities mean nothing
    await rt.in_thread(rt.check_embedder, "nothing was compared")
    at = rt.now() if now is None else now

    def load(c: sa.Connection) -> list[dict[str, Any]]:
        found = [dict(r) for r in c.execute(
            sa.select(mo.c.id, mo.c.title, mo.c.text, mo.c.embedding_vec, mo.c.supporting_fact_ids)
            .where(reads.owned(mo, agent_id, user_id), mo.c.is_active == True,  # noqa: E712
                   mo.c.observation_type == "behavioral_preference")
            .order_by(mo.c.id)
        ).mappings()]
        # KC-6.4 [ext] (obs47): not compared with (nor named by the result) a preference
        # written from a fact that has expired since
        outlived = reads.observations_quoting_expired(c, rt.tables, found, at)
        return [r for r in found if r["id"] not in outlived]

    rows = await rt.read(load)
    rows = [r for r in rows if r["id"] != exclude_id and r["embedding_vec"] is not None]
    if vec is None or not rows:
        return ContradictionResult(), None
    mat = np.stack([np.asarray(r["embedding_vec"], dtype=np.float32) for r in rows])
    norms = np.linalg.norm(mat, axis=1)
    norms[norms == 0] = 1.0
    sims = (mat @ vec) / norms
    best = int(np.argmax(sims))
    if float(sims[best]) < cfg.contradiction_similarity_threshold:
        return ContradictionResult(), None
    target = rows[best]
    call = call or TaskCall(rt.llm)
    try:
        reply = await call("contradiction", {"new_directive": new_directive, "existing": {"title": target["title"], "text": target["text"]}},
                           cfg.job_llm_timeout_sec)
    except LLMError as exc:  # KC-5.10: a failure gives ContradictionResult() plus a log warning
        log.warning("contradiction check failed (%s)", type(exc).__name__)
        return ContradictionResult(), None
    if not reply["has_contradiction"]:
        return ContradictionResult(), None
    return ContradictionResult(
        has_contradiction=True, conflicting_directive=reply.get("conflicting_directive") or target["title"],
        resolution=reply.get("resolution"),
    ), target["id"]


def emotional_trends(rt: KnowledgeRuntime, conn: sa.Connection, agent_id: str, cfg: Any, now: datetime,
                     user_id: Optional[str] = None) -> EmotionalTrendsResult:
    """KC-5.13 (deterministic; runs inside a write transaction)."""
    ev, mo = rt.tables.event, rt.tables.meta_observation
    rows = [dict(r) for r in conn.execute(
        sa.select(ev.c.id, ev.c.text, ev.c.occurred_at, ev.c.emotion_primary, ev.c.emotion_intensity, ev.c.energy_level)
        .where(reads.owned(ev, agent_id, user_id), ev.c.emotion_primary.is_not(None),
               ev.c.occurred_at >= now - timedelta(days=cfg.emotional_trend_window_days), ev.c.occurred_at <= now)
        .order_by(ev.c.occurred_at, ev.c.id)
    ).mappings()]
    n = len(rows)
    counts = Counter(r["emotion_primary"] for r in rows)
    res = EmotionalTrendsResult(emotion_counts=dict(sorted(counts.items())), events_analyzed=n)
    if n < cfg.emotional_trend_min_events or n == 0:
        return res
    def inten(r: Any) -> float:
        return float(r["emotion_intensity"] or 0.0)

    mean_int = {e: sum(inten(r) for r in rows if r["emotion_primary"] == e) / c for e, c in counts.items()}
    dominant = sorted(counts, key=lambda e: (-counts[e], -mean_int[e], e))[0]
    half = n // 2
    first = sum(1 for r in rows[:half] if r["emotion_primary"] == dominant)
    second = sum(1 for r in rows[n - half:] if r["emotion_primary"] == dominant) if half else 0
    direction = "increasing" if second > first else "decreasing" if second < first else "stable"
    words: Counter[str] = Counter()
    said: dict[str, set[str]] = {}  # an intense event's words (its id -> words)
    for r in rows:
        if inten(r) >= 0.7:
            found = [w for w in re.findall(r"[^\W\d_]{3,}", norm(r["text"] or "")) if w not in _STOP]
            said[r["id"]] = set(found)
            words.update(found)
    keywords = [w for w, _ in sorted(words.items(), key=lambda x: (-x[1], x[0]))[:3]]
    dom_rows = [r for r in rows if r["emotion_primary"] == dominant]
    energies = Counter(r["energy_level"] for r in dom_rows if r["energy_level"])
    energy = "medium"
    if energies:
        top = max(energies.values())
        modes = [e for e, c in energies.items() if c == top]
        energy = modes[0] if len(modes) == 1 else "medium"
    res.dominant_emotion = dominant
    res.trend_direction = direction
    res.trigger_keywords = keywords
    res.avg_intensity = sum(inten(r) for r in rows) / n
    res.dominant_intensity = mean_int[dominant]
    res.dominant_energy = energy
    title = f"Emotional trend: {dominant} ({direction})"
    text = (f"Mostly {dominant} over the last {cfg.emotional_trend_window_days} days "
            f"({counts[dominant]} of {n} events, intensity {res.dominant_intensity:.2f}, energy {energy}, {direction})"
            + (f"; triggers: {', '.join(keywords)}" if keywords else ""))
    recent = conn.execute(
        sa.select(mo.c.id, mo.c.supporting_event_ids).where(
            reads.owned(mo, agent_id, user_id), mo.c.is_active == True, mo.c.observation_type == "emotional_trend",  # noqa: E712
            mo.c.last_reinforced_at >= now - timedelta(hours=24),
        ).order_by(sa.desc(mo.c.last_reinforced_at), mo.c.id).limit(1)
    ).first()
    # the newest 50 events, and every event whose words are among the trigger keywords the text
    # quotes (red35): an erasure takes the observation through these ids (KC-3.10), and a
    # keyword may come from an older event than the newest 50
    support = [r["id"] for i, r in enumerate(rows) if i >= n - 50 or said.get(r["id"], set()).intersection(keywords)]
    if recent is not None:
        conn.execute(sa.update(mo).where(mo.c.id == recent[0]).values(
            times_reinforced=mo.c.times_reinforced + 1, last_reinforced_at=now, title=title[:256], text=text,
            supporting_event_ids=support))
        res.observation_id = recent[0]
        return res
    conn.execute(sa.update(mo).where(reads.owned(mo, agent_id, user_id), mo.c.is_active == True,  # noqa: E712
                                     mo.c.observation_type == "emotional_trend").values(is_active=False))
    oid = new_id()
    conn.execute(sa.insert(mo).values(
        id=oid, agent_id=agent_id, user_id=user_id, observation_type="emotional_trend", title=title[:256], text=text,
        supporting_event_ids=support, supporting_fact_ids=[], confidence=0.7, importance=0.5, times_reinforced=0,
        is_active=True, embedding_vec=None, first_detected_at=now, last_reinforced_at=now, created_at=now,
    ))
    res.observation_created = True
    res.observation_id = oid
    return res

