"""Write steps 1-4 (KC-4.3 to KC-4.8): classify the message and choose a strategy, tag the
emotion, build the memory-aware extraction context, extract (chunked), post-process the
reply (aliases, identity relations, confidence, value types) and de-duplicate its facts."""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
import zoneinfo
from datetime import datetime
from typing import Any, Optional, TypeVar

import numpy as np
import sqlalchemy as sa

from ... import timeutil
from ..db import queries as reads
from .classify import Chunk, classify_input, select_strategy, split_chunks
from ..llm.emotion import tag_emotion_detailed
from ..errors import ExtractionError, LLMError, plain_text
from ..model import XEntity, XFact, XIntention, XObservation, XRelation
from .relations import IDENTITY_REL_TYPES, clean_rel_type, normalize_rel_type
from ..text import (
    canonical_entity_type,
    estimate_tokens,
    ngrams,
    norm,
    to_utc,
)
from .state import MAX_FACT_CHARS, WriteRun, _ATTR_RE, _CURRENT_FILTER

T = TypeVar("T")

__all__ = ["classify_message", "emotion_step", "informed_context", "extract_chunks", "postprocess", "dedup",
           "canonical_attribute_key", "infer_value_type"]

def canonical_attribute_key(raw: Any, aliases: dict[str, Any]) -> Optional[str]:
    """KC-4.16: ``attribute_aliases`` first, then ``norm`` with spaces and ``-`` → ``_``;
    must match ``^[a-z][a-z0-9_.]*[a-z0-9]$`` and be at most 64 chars, else None."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    key = aliases.get(raw, aliases.get(norm(raw), raw))
    key = re.sub(r"[\s\-]+", "_", norm(key))
    if len(key) > 64 or not _ATTR_RE.match(key):
        return None
    return key


def _clamp01(x: float) -> float:
    return 0.0 if x < 0 else 1.0 if x > 1 else x


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return float(value)


def _parse_dt(value: Any, tz: zoneinfo.ZoneInfo) -> Optional[datetime]:
    """ISO date or datetime from the LLM; naive values are in the configured timezone."""
    if not isinstance(value, str) or not value.strip():
        return None
    moment = timeutil.try_parse_iso(value, naive=tz)
    return None if moment is None else to_utc(moment)


def infer_value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, (dict, list)):
        return "json"
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value.strip())
            return "date"
        except ValueError:
            return "string"
    return "string"


async def classify_message(run: WriteRun) -> list[Chunk]:
    t0 = time.perf_counter()
    run.classification = classification = classify_input(run.message)
    run.strategy = strategy = select_strategy(classification)
    chunks = split_chunks(run.message, classification, strategy)
    run.step("classify", t0, input_type=classification.input_type.value, chunks=len(chunks))
    return chunks


async def emotion_step(run: WriteRun) -> None:
    if not run.cfg.enable_emotion_tagging:
        return
    t0 = time.perf_counter()
    result, reason = await tag_emotion_detailed(run.message, run.call, run.cfg.extraction_timeout_sec)
    if result is None:
        run.warn(f"emotion: {reason}")
    run.emotion = result
    run.step("emotion", t0, emotion=result)


async def informed_context(run: WriteRun) -> list[dict[str, Any]]:
    """KC-4.6: alias n-gram priming (indexed), then summaries or similar current facts."""
    cfg = run.cfg
    if not cfg.enable_informed_extraction:
        return []
    grams = [g for g in ngrams(run.message, 4) if len(g) >= 3]
    t = run.t
    keys: list[str] = []
    ents: dict[str, dict[str, Any]] = {}
    need: list[str] = []

    def plan(conn: sa.Connection) -> list[dict[str, Any]]:
        """The entities the message names (indexed alias lookup), and one search per entity
        without a summary for its facts most similar to the message."""
        hits = reads.lookup_aliases(conn, t, run.agent_id, grams, run.user_id)
        for g in grams:
            if g in hits and hits[g][0] not in keys:
                keys.append(hits[g][0])
        if keys:
            ents.update(reads.load_entities(conn, t, run.agent_id, keys, run.user_id))
            # KC-4.6 / KC-6.7 [ext]: not a summary that may quote a fact expired since it was
            # written: the entity's current facts are searched instead
            for _, k in reads.summaries_outlived(conn, t, run.agent_id, list(ents.values()), run.now):
                ents[k] = {**ents[k], "summary_text": None}
        keys[:] = [k for k in keys if k in ents and ents[k]["is_active"]]
        n = len(keys)
        per_entity = cfg.informed_extraction_topk if n <= 2 else max(3, cfg.informed_extraction_context_budget_tokens // n // 20)
        need.extend(k for k in keys if not ents[k]["summary_text"])
        return [dict(
            query_vector=run.event_vec,
            k=per_entity,
            agent_id=run.agent_id,
            record_types=["fact"],
            **reads.store_user(run.user_id),
            metadata_filter=reads.with_scope({"kg_primary": k, **_CURRENT_FILTER}, run.user_id),
        ) for k in need]

    def similar(results: list[Any], c: sa.Connection) -> tuple[list[list[str]], dict[str, dict[str, Any]]]:
        ids = [[r.id for r, d in hits if 1.0 - d >= cfg.informed_min_similarity] for hits in results]
        return ids, reads.current_facts_by_ids(c, t, run.agent_id, [i for found in ids for i in found], run.now, run.user_id,
                                            brief=True)

    # the alias lookup, the searches and the read of their facts: one trip on a sync store
    _, (found, rows) = await run.rt.search_and_read(plan, similar)
    if not keys:
        return []
    similar_ids = dict(zip(need, found))
    block: list[dict[str, Any]] = []
    for k in keys:
        e = ents[k]
        item = {"entity_key": k, "display_name": e["display_name"], "summary": e["summary_text"], "facts": []}
        for fid in similar_ids.get(k, []):
            if fid in rows:
                r = rows[fid]
                flag = " [needs confirmation]" if r["needs_confirmation"] else ""
                item["facts"].append(f"{r['fact_text']}{flag}")
        block.append(item)
    # cap the block at the token budget (drop facts from the end, then entities)
    budget = cfg.informed_extraction_context_budget_tokens
    while block and estimate_tokens(json.dumps(block, ensure_ascii=False)) > budget:
        last = block[-1]
        if last["facts"]:
            last["facts"].pop()
        elif last["summary"] and len(last["summary"]) > 40:
            last["summary"] = last["summary"][: len(last["summary"]) // 2]
        else:
            block.pop()
    return block


def extract_payload(run: WriteRun, chunk: Chunk, existing: list[dict[str, Any]]) -> dict[str, Any]:
    recent = [m[:300] for m in run.recent_messages[-5:]]
    return {
        "message": chunk.text,
        "speaker": run.speaker,
        "occurred_at": run.t_event.astimezone(run.tz).isoformat(),
        "timezone": run.cfg.timezone,
        "recent_messages": recent,
        "existing_knowledge": existing,
        "chunk": None
        if chunk.count <= 1
        else {"index": chunk.index, "count": chunk.count, "hint": run.chosen_strategy().chunk_context_hint, "heading": chunk.heading},
    }


async def extract_chunks(run: WriteRun, chunks: list[Chunk], existing: list[dict[str, Any]]) -> list[tuple[Chunk, dict[str, Any]]]:
    """KC-4.5: one ``extract`` call per piece, at most ``llm_concurrency`` at once; a
    failed piece is retried once; a second failure fails the extraction."""
    t0 = time.perf_counter()
    sem = asyncio.Semaphore(run.cfg.llm_concurrency)
    chunked_mode = len(chunks) > 1

    async def one(chunk: Chunk) -> dict[str, Any]:
        payload = extract_payload(run, chunk, existing)
        attempts = 2 if chunked_mode else 1
        last: Optional[Exception] = None
        for _ in range(attempts):
            async with sem:
                try:
                    return await run.call(
                        "extract", payload, run.cfg.extraction_timeout_sec, run.chosen_strategy().max_tokens_per_call
                    )
                except LLMError as exc:
                    last = exc
        where = f"chunk {chunk.index}/{chunk.count}: " if chunked_mode else ""
        raise ExtractionError(f"{where}{last}", plain=f"{where}{plain_text(last) if last is not None else last}")

    results = await asyncio.gather(*(one(c) for c in chunks), return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        for r in failures:
            if not isinstance(r, ExtractionError):
                raise r
        raise failures[0]
    run.step("extract", t0, calls=len(chunks))
    return list(zip(chunks, [r for r in results if not isinstance(r, BaseException)]))


def postprocess(run: WriteRun, replies: list[tuple[Chunk, dict[str, Any]]]) -> None:
    """KC-4.8: alias rewriting (keeping every other field), identity relations,
    normalised confidence/importance, exact dedup; semantic dedup runs in ``dedup``."""
    cfg = run.cfg
    by_norm: dict[str, XEntity] = {}
    raw_facts: list[tuple[dict[str, Any], str]] = []
    raw_rels: list[dict[str, Any]] = []
    for chunk, reply in replies:
        ctx = "conversation" if chunk.count <= 1 else f"chunk {chunk.index}/{chunk.count}"
        for e in reply.get("entities", []):
            name = e["name"].strip()
            n = norm(name)
            if not n:
                continue
            aliases = [a.strip() for a in (e.get("aliases") or []) if isinstance(a, str) and a.strip()]
            if n in by_norm:
                ent = by_norm[n]
                for a in aliases:
                    if a not in ent.aliases:
                        ent.aliases.append(a)
            else:
                by_norm[n] = XEntity(name, canonical_entity_type(e.get("type")), aliases)
        for f in reply.get("facts", []):
            raw_facts.append((f, ctx))
        raw_rels.extend(reply.get("relations") or [])
        for i in reply.get("intentions") or []:
            add_intention(run, i)
        for o in reply.get("observations") or []:
            names = [x.strip() for x in (o.get("entities") or []) if isinstance(x, str) and x.strip()]
            topic = o.get("topic") if isinstance(o.get("topic"), str) else None
            run.observations.append(XObservation(o["content"].strip(), (topic or "").strip()[:64] or None, names))
        us = reply.get("updated_summaries") or {}
        for k, v in us.items():
            if isinstance(k, str) and isinstance(v, str) and v.strip():
                run.updated_summaries.setdefault(k.strip(), v.strip())
    run.entities = list(by_norm.values())
    # alias → canonical display name, within this write
    alias_to_name: dict[str, str] = {}
    for ent in run.entities:
        for a in ent.aliases:
            if norm(a) != norm(ent.name):
                alias_to_name.setdefault(norm(a), ent.name)
    run.alias_to_name = alias_to_name
    # identity relations never become edges: the second name becomes an alias of the first
    for r in raw_rels:
        if normalize_rel_type(r.get("rel_type")) in IDENTITY_REL_TYPES:
            src = rewrite_alias(run, r["source"].strip())
            tgt = rewrite_alias(run, r["target"].strip())
            if norm(src) != norm(tgt) and norm(tgt) not in alias_to_name:
                alias_to_name[norm(tgt)] = src
                run.identity_aliases.append((tgt, src))
    for r in raw_rels:
        rt = normalize_rel_type(r.get("rel_type"))
        if rt in IDENTITY_REL_TYPES:
            continue
        src = rewrite_alias(run, r["source"].strip())
        tgt = rewrite_alias(run, r["target"].strip())
        if not rt:
            run.warn(f"relation dropped: empty rel_type between {src!r} and {tgt!r}")
            continue
        if norm(src) == norm(tgt):
            run.warn(f"relation dropped: self-loop on {src!r}")
            continue
        run.relations.append(XRelation(src, tgt, rt, said=clean_rel_type(r.get("rel_type"))))
    # facts
    seen: set[tuple[str, str]] = set()
    aliases_cfg = dict(cfg.attribute_aliases)
    for idx, (f, ctx) in enumerate(raw_facts):
        text = f["fact"].strip()
        if len(text) > MAX_FACT_CHARS:
            run.warn(f"fact dropped: fact_text over {MAX_FACT_CHARS} chars")
            continue
        subject = rewrite_alias(run, f["subject"].strip())
        key = (norm(subject), norm(text))
        if key in seen:
            continue
        seen.add(key)
        conf = confidence_of(run, f.get("confidence"))
        category = f.get("category") if isinstance(f.get("category"), str) else None
        if category not in cfg.importance_category_map:
            category = None
        importance = cfg.importance_category_map[category] if category else 0.5
        raw_attr = f.get("attribute_key") if isinstance(f.get("attribute_key"), str) else None
        attr = canonical_attribute_key(raw_attr, aliases_cfg) if raw_attr else None
        if raw_attr and attr is None:
            run.warn(f"attribute key rejected: {raw_attr!r} is not a valid key (fact kept with attribute_key=NULL)")
        ttl = _num(f.get("ttl_days"))
        run.facts.append(
            XFact(
                idx=idx,
                subject=subject,
                fact=text,
                category=category,
                confidence=conf,
                importance=importance,
                raw_attribute_key=raw_attr,
                attribute_key=attr,
                value=f.get("value"),
                is_sensitive=bool(f.get("is_sensitive")) if isinstance(f.get("is_sensitive"), bool) else False,
                valid_from=_parse_dt(f.get("valid_from"), run.tz),
                ttl_days=None if ttl is None else int(max(0, min(ttl, 36500))),
                source_context=ctx,
            )
        )


def rewrite_alias(run: WriteRun, name: str) -> str:
    return run.alias_to_name.get(norm(name), name)


def confidence_of(run: WriteRun, raw: Any) -> float:
    x = _num(raw)
    if x is not None:
        return _clamp01(x)
    if isinstance(raw, str) and raw in run.cfg.confidence_level_map:
        return float(run.cfg.confidence_level_map[raw])
    return float(run.cfg.confidence_default)


def add_intention(run: WriteRun, raw: dict[str, Any]) -> None:
    due = _parse_dt(raw.get("due_date"), run.tz)
    tt = raw.get("trigger_type")
    trigger_type = "time" if tt == "time" and due is not None else "event"
    run.intentions.append(
        XIntention(trigger_type, raw["trigger_condition"].strip(), raw["intended_action"].strip(), due)
    )


async def dedup(run: WriteRun) -> None:
    """Semantic dedup within a subject: one vectorised similarity matrix per subject;
    then the ``max_facts_per_event`` cut."""
    if not run.facts:
        return
    vecs = await run.embed([f.fact for f in run.facts])
    groups: dict[str, list[int]] = {}
    for i, f in enumerate(run.facts):
        groups.setdefault(norm(f.subject), []).append(i)
    drop: set[int] = set()
    for idxs in groups.values():
        if len(idxs) < 2:
            continue
        m = vecs[idxs]
        sims = m @ m.T
        np.fill_diagonal(sims, -1.0)
        sims = np.triu(sims, 1)  # only (earlier, later) pairs
        keep = np.ones(len(idxs), dtype=bool)
        for j in range(1, len(idxs)):
            earlier_kept = keep[:j]
            if np.any(sims[:j, j][earlier_kept] >= run.cfg.dedup_similarity):
                keep[j] = False
        drop.update(idxs[j] for j in range(len(idxs)) if not keep[j])
    run.facts = [f for i, f in enumerate(run.facts) if i not in drop]
    limit = run.cfg.max_facts_per_event
    if len(run.facts) > limit:
        run.warn(f"facts over max_facts_per_event dropped: {len(run.facts) - limit}")
        run.facts = run.facts[:limit]
