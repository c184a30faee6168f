"""Write step 5, entity resolution (KC-4.9): the speaker, exact names and aliases, nicknames,
embeddings and the LLM band, then new entities; aliases registered, display names extended."""

from __future__ import annotations

import time
from typing import Any, Optional, TypeVar

import numpy as np
import sqlalchemy as sa

from ..db import queries as reads
from ..errors import LLMError, plain_text
from ..model import NewEntity
from ..text import (
    entity_key,
    norm,
    slug,
)
from .extract import rewrite_alias
from .state import SELF_REFERENCES, WriteRun

T = TypeVar("T")

__all__ = ["resolve_all", "resolve_name", "is_self", "is_nickname"]

def is_nickname(a: str, b: str) -> bool:
    """KC-4.9 phase 1.5: the shorter name equals the longer one's leading word(s), or is a
    ≥3-char prefix of its first word (Ana/Ana Souza, Rob/Robert)."""
    wa, wb = norm(a).split(), norm(b).split()
    if not wa or not wb or wa == wb:
        return False
    short, long_ = (wa, wb) if (len(" ".join(wa)), len(wa)) < (len(" ".join(wb)), len(wb)) else (wb, wa)
    if len(short) < len(long_) and long_[: len(short)] == short:
        return True
    return len(short) == 1 and len(short[0]) >= 3 and long_[0].startswith(short[0]) and long_[0] != short[0]


def mention_type_of(run: WriteRun, name: str) -> Optional[str]:
    n = norm(name)
    for e in run.entities:
        if norm(e.name) == n or n in (norm(a) for a in e.aliases):
            return e.type
    return None


def names_to_resolve(run: WriteRun) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()

    def add(x: str) -> None:
        if norm(x) and norm(x) not in seen:
            seen.add(norm(x))
            names.append(x)

    for e in run.entities:
        add(e.name)
    for f in run.facts:
        add(f.subject)
    for r in run.relations:
        add(r.source)
        add(r.target)
    for o in run.observations:
        for x in o.entity_names:
            add(rewrite_alias(run, x))
    for alias, canonical in run.identity_aliases:
        add(canonical)
    return names


def is_self(run: WriteRun, name: str) -> bool:
    n = norm(name)
    return n in SELF_REFERENCES or n in {norm(x) for x in run.cfg.extra_self_references} or n == norm(run.speaker)


async def resolve_all(run: WriteRun) -> None:
    t0 = time.perf_counter()
    names = names_to_resolve(run)
    to_embed = [n for n in names if not is_self(run, n)]
    # one batched read for the exact phase of every name (aliases, key slugs, entities)
    t = run.t
    norms = [norm(n) for n in to_embed]
    slugs = [slug(n) for n in to_embed]

    def prefetch(
        conn: sa.Connection,
    ) -> tuple[dict[str, tuple[str, str]], dict[str, list[dict[str, Any]]], dict[str, dict[str, Any]]]:
        aliases = reads.lookup_aliases(conn, t, run.agent_id, norms, run.user_id)
        by_slug = reads.entities_by_slugs(conn, t, run.agent_id, slugs, run.user_id)
        keys = {k for k, _ in aliases.values()} | {r["canonical_key"] for rs in by_slug.values() for r in rs}
        keys.add(run.speaker_key)
        return aliases, by_slug, reads.load_entities(conn, t, run.agent_id, keys, run.user_id)

    # the prefetch and the names' vectors: one trip to the worker pool at most (a sync embedder)
    (run.alias_cache, run.slug_cache, known), vecs = await run.read_and_embed(prefetch, to_embed)
    run.prefetched_slugs = set(slugs)
    run.prefetched_norms = set(norms)
    run.known_entities.update(known)
    run.name_vecs = {norm(n): vecs[i] for i, n in enumerate(to_embed)}
    for name in names:
        await resolve_name(run, name)
    # identity relations: the alias name joins the canonical entity unless already taken
    for alias_name, canonical in run.identity_aliases:
        key = run.resolved.get(norm(canonical), (None,))[0]
        if key is None or key == run.speaker_key and norm(alias_name) in SELF_REFERENCES:
            continue
        register_alias(run, alias_name, key)
    # extraction aliases of resolved entities
    for e in run.entities:
        key = run.resolved.get(norm(e.name), (None, None))[0]
        if key is None or key == run.speaker_key:
            continue
        for a in e.aliases:
            register_alias(run, a, key)
    for f in run.facts:
        key, _ = run.resolved[norm(f.subject)]
        f.subject_key = key
        f.subject_type = key.split(":", 1)[0]
        f.subject_name = display_name(run, key, f.subject)
    for r in run.relations:
        r.source_key = run.resolved[norm(r.source)][0]
        r.target_key = run.resolved[norm(r.target)][0]
    for o in run.observations:
        for x in o.entity_names:
            k = run.resolved.get(norm(rewrite_alias(run, x)), (None,))[0]
            if k and k not in o.entity_keys:
                o.entity_keys.append(k)
    run.step("resolve", t0, names=len(names), created=len(run.created))


def display_name(run: WriteRun, key: str, fallback: str) -> str:
    if key in run.created:
        return run.created[key].display_name
    if key in run.display_updates:
        return run.display_updates[key]
    row = run.known_entities.get(key)
    if row and row.get("display_name"):
        return str(row["display_name"])
    return fallback


def register_alias(run: WriteRun, name: str, key: str) -> None:
    n = norm(name)
    if not n:
        return
    etype = key.split(":", 1)[0]
    prev = run.alias_regs.get(n)
    if prev is not None and prev[0] != key:
        run.warn(f"alias conflict: {n!r} is bound to {prev[0]}, not rebound to {key}")
        return
    run.alias_regs[n] = (key, etype)
    run.key_names.setdefault(key, set()).add(name)


def record_resolution(run: WriteRun, name: str, key: str, method: str) -> tuple[str, str]:
    run.resolved[norm(name)] = (key, method)
    run.resolved_order.append({"name": name, "entity_key": key, "method": method})
    run.touched_keys.add(key)
    run.key_names.setdefault(key, set()).add(name)
    if method != "speaker":
        register_alias(run, name, key)
    return key, method


async def resolve_name(run: WriteRun, name: str) -> tuple[str, str]:
    """KC-4.9 phases: speaker, exact, nickname, embedding, LLM, create."""
    n = norm(name)
    if n in run.resolved:
        return run.resolved[n]
    t = run.t
    # 0 speaker
    if is_self(run, name):
        if run.speaker_key not in run.created and run.speaker_key not in run.known_entities:
            rows = await run.read(lambda c: reads.load_entities(c, t, run.agent_id, [run.speaker_key], run.user_id))
            if rows:
                run.known_entities.update(rows)
            else:
                run.created[run.speaker_key] = NewEntity(run.speaker_key, run.speaker, "person", None)
        return record_resolution(run, name, run.speaker_key, "speaker")
    mention_type = mention_type_of(run, name)
    # 1 exact: entities of this write first, then the alias index and key slugs
    s = slug(name)
    for key, ent in run.created.items():
        if norm(ent.display_name) == n or key.split(":", 1)[1] == s:
            return record_resolution(run, name, key, "exact")
    if n in run.alias_regs:
        return record_resolution(run, name, run.alias_regs[n][0], "exact")
    if n in run.prefetched_norms:
        hit = run.alias_cache  # prefetched in resolve_all (a miss there is a miss here)
    else:
        hit = await run.read(lambda c: reads.lookup_aliases(c, t, run.agent_id, [n], run.user_id))
    if n in hit:
        key = hit[n][0]
        if key not in run.known_entities:
            run.known_entities.update(await run.read(lambda c: reads.load_entities(c, t, run.agent_id, [key], run.user_id)))
        if key in run.known_entities and run.known_entities[key]["is_active"]:
            return record_resolution(run, name, key, "exact")
    if s:
        if s in run.prefetched_slugs:
            by_slug = run.slug_cache.get(s, [])
        else:
            by_slug = await run.read(lambda c: reads.entities_by_slug(c, t, run.agent_id, s, run.user_id))
        if by_slug:
            pick = next((r for r in by_slug if r["entity_type"] == mention_type), by_slug[0])
            if pick["canonical_key"] not in run.known_entities:
                run.known_entities.update(
                    await run.read(lambda c: reads.load_entities(c, t, run.agent_id, [pick["canonical_key"]], run.user_id))
                )
            return record_resolution(run, name, pick["canonical_key"], "exact")
    vec = run.name_vecs.get(n)
    llm_candidates: list[dict[str, Any]] = []
    # 1.5 nickname (mention and candidate both person)
    if mention_type == "person":
        persons = await person_entities(run)
        cands = [p for p in persons if is_nickname(name, p["display_name"] or p["canonical_key"].split(":", 1)[1])]
        if len(cands) == 1:
            key = cands[0]["canonical_key"]
            await maybe_extend_display(run, key, name)
            return record_resolution(run, name, key, "nickname")
        if len(cands) > 1:
            llm_candidates = cands[:3]
    # 2 embedding, same entity_type only
    etype = mention_type or "other"
    if not llm_candidates and vec is not None:
        pool = await entities_of_type(run, etype)
        if pool:
            mat = np.stack([p["embedding_vec"] for p in pool])
            sims = mat @ vec
            order = sorted(range(len(pool)), key=lambda i: (-float(sims[i]), pool[i]["canonical_key"]))
            best = float(sims[order[0]])
            if best >= run.cfg.fuzzy_threshold:
                key = pool[order[0]]["canonical_key"]
                await maybe_extend_display(run, key, name)
                return record_resolution(run, name, key, "embedding")
            if best >= run.cfg.llm_resolution_min_similarity:
                llm_candidates = [
                    pool[i] for i in order[:3] if float(sims[i]) >= run.cfg.llm_resolution_min_similarity
                ]
    # 3 LLM
    if llm_candidates and run.cfg.enable_llm_resolution:
        payload = {
            "name": name,
            "type": etype,
            "context": run.message[:300],
            "candidates": [
                {
                    "index": i + 1,
                    "canonical_key": c["canonical_key"],
                    "display_name": c["display_name"],
                    "entity_type": c["entity_type"],
                }
                for i, c in enumerate(llm_candidates)
            ],
        }
        try:
            reply = await run.call("resolve_entity", payload, run.cfg.resolution_timeout_sec)
            idx = int(reply["match_index"])
            if 1 <= idx <= len(llm_candidates):
                key = llm_candidates[idx - 1]["canonical_key"]
                await maybe_extend_display(run, key, name)
                return record_resolution(run, name, key, "llm")
        except LLMError as exc:
            run.warn(f"resolution: {plain_text(exc)}")
    # create
    key = entity_key(etype, name)
    if not key.split(":", 1)[1]:
        key = entity_key(etype, f"entity {len(run.created) + 1}")
    if key not in run.created:
        run.created[key] = NewEntity(key, name, etype, vec)
    return record_resolution(run, name, key, "created")


async def person_entities(run: WriteRun) -> list[dict[str, Any]]:
    persons = run.persons_cache
    if persons is None:
        t = run.t

        def load(c: sa.Connection) -> list[dict[str, Any]]:
            return reads.active_entities_of_type(c, t, run.agent_id, "person", with_vec=False, user_id=run.user_id)

        loaded = await run.read(load)
        run.persons_cache = persons = loaded
    extra = [
        {"canonical_key": k, "display_name": e.display_name, "entity_type": e.entity_type}
        for k, e in sorted(run.created.items())
        if e.entity_type == "person" and k != run.speaker_key
    ]
    return sorted(persons + extra, key=lambda p: p["canonical_key"])


async def entities_of_type(run: WriteRun, etype: str) -> list[dict[str, Any]]:
    if etype not in run.type_cache:
        t = run.t
        rows = await run.read(lambda c: reads.active_entities_of_type(c, t, run.agent_id, etype, with_vec=True, user_id=run.user_id))
        run.type_cache[etype] = [r for r in rows if r["embedding_vec"] is not None]
    extra = [
        {"canonical_key": k, "display_name": e.display_name, "entity_type": e.entity_type, "embedding_vec": e.vec}
        for k, e in sorted(run.created.items())
        if e.entity_type == etype and e.vec is not None
    ]
    return run.type_cache[etype] + extra


async def maybe_extend_display(run: WriteRun, key: str, name: str) -> None:
    """``display_name`` changes only when the new name extends the old one."""
    if key in run.created:
        old = run.created[key].display_name
        if is_nickname(old, name) and len(norm(name)) > len(norm(old)) and norm(name).startswith(norm(old)):
            run.created[key].display_name = name
        return
    t = run.t
    rows = await run.read(lambda c: reads.load_entities(c, t, run.agent_id, [key], run.user_id))
    run.known_entities.update(rows)
    old = (rows.get(key) or {}).get("display_name") or ""
    current = run.display_updates.get(key, old)
    if norm(name).startswith(norm(current) + " "):
        run.display_updates[key] = name
