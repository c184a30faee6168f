"""Write step 6, reconciliation (KC-4.10, KC-4.14 to KC-4.16): each subject's new facts against
its current ones (the LLM, or rules without one), the attribute registry, relation evidence
and mirror facts, and the ids of what will be written."""

from __future__ import annotations

import time
from typing import Any, Optional, TypeVar

import sqlalchemy as sa

from ..db import queries as reads
from ..errors import LLMError, plain_text
from ..model import Decision, XFact, XRelation, new_id
from .relations import MIRROR_SOURCE_CONTEXT, mirror_text
from ..text import (
    contains_words,
    norm,
    word_tokens,
)
from .resolve import display_name
from .state import WriteRun, _CURRENT_FILTER

T = TypeVar("T")

__all__ = ["reconcile", "evidence", "mirror_facts", "assign_ids", "mentions", "names_of", "fact_vectors"]

async def fact_vectors(run: WriteRun, facts: list[XFact]) -> None:
    todo = [f for f in facts if f.vec is None]
    if todo:
        vecs = await run.embed([f.index_text for f in todo])
        for f, v in zip(todo, vecs):
            f.vec = v


def policy_of(run: WriteRun, key: Optional[str]) -> str:
    row = run.registry.get(key) if key else None
    return (row or {}).get("conflict_policy") or "supersede"


async def reconcile(run: WriteRun, facts: list[XFact]) -> list[Decision]:
    """KC-4.10: per subject; candidates from the store's vector search plus same-key
    current facts (supersede policy); one ``reconcile`` call per subject when needed."""
    t0 = time.perf_counter()
    cfg = run.cfg
    t = run.t
    await fact_vectors(run, facts)
    groups: dict[str, list[XFact]] = {}
    for f in facts:
        groups.setdefault(f.subject_key, []).append(f)
    order = sorted(groups, key=lambda k: min(f.idx for f in groups[k]))
    searched = [k for k in order if k not in run.created]  # a new subject has nothing to reconcile with
    missing = sorted({f.attribute_key for f in facts if f.attribute_key and f.attribute_key not in run.registry})
    sims: dict[str, dict[str, float]] = {k: {} for k in searched}
    per_fact_best: dict[int, float] = {}

    def plan(c: sa.Connection) -> list[dict[str, Any]]:
        """The attribute registry rows the facts name (their conflict policies), and one
        vector search per fact of a known subject over the subject's current facts."""
        if missing:
            run.registry.update(reads.registry_rows(c, t, run.agent_id, missing))
        return [dict(
            query_vector=f.vec,
            k=cfg.reconcile_candidates,
            agent_id=run.agent_id,
            record_types=["fact"],
            **reads.store_user(run.user_id),
            metadata_filter=reads.with_scope({"kg_primary": key, **_CURRENT_FILTER}, run.user_id),
        ) for key in searched for f in groups[key]]

    def candidates(results: list[Any], c: sa.Connection) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, Any]]]:
        found = iter(results)
        same_keys: dict[str, list[str]] = {}
        for key in searched:
            for f in groups[key]:
                hits = next(found)
                best = 0.0
                for rec, dist in hits:
                    s = 1.0 - float(dist)
                    sims[key][rec.id] = max(sims[key].get(rec.id, -1.0), s)
                    best = max(best, s)
                per_fact_best[f.idx] = best if hits else -1.0
            same_keys[key] = [f.attribute_key for f in groups[key] if f.attribute_key and policy_of(run, f.attribute_key) == "supersede"]
        ids = [i for key in searched for i in sims[key]]
        return (reads.current_same_key_facts(c, t, run.agent_id, same_keys, run.now, run.user_id),
                reads.current_facts_by_ids(c, t, run.agent_id, ids, run.now, run.user_id, brief=True))

    # the registry, every subject's searches and the read of their facts: one trip on a sync store
    same_of: dict[str, list[dict[str, Any]]] = {}
    current: dict[str, dict[str, Any]] = {}
    if searched or missing:
        _, (same_of, current) = await run.rt.search_and_read(plan, candidates)
    out: list[Decision] = []
    calls = 0
    for key in order:
        group = groups[key]
        if key in run.created:
            out.extend(Decision(f, "ADD") for f in group)
            continue
        rows = {i: current[i] for i in sims[key] if i in current}
        same = same_of[key]
        for r in same:
            rows.setdefault(r["id"], r)
        same_by_attr: dict[str, list[str]] = {}
        for r in same:
            same_by_attr.setdefault(r["attribute_key"], []).append(r["id"])
        needs: list[XFact] = []
        for f in group:
            has_same = bool(f.attribute_key and same_by_attr.get(f.attribute_key) and policy_of(run, f.attribute_key) == "supersede")
            best = per_fact_best.get(f.idx, -1.0)
            if not rows or (best < cfg.reconcile_similarity_gate and not has_same):
                out.append(Decision(f, "ADD"))
            else:
                needs.append(f)
        if not needs:
            continue
        existing = sorted(rows.values(), key=lambda r: (-sims[key].get(r["id"], 0.0), r["valid_from"], r["id"]))
        calls += 1
        out.extend(await reconcile_call(run, key, needs, existing))
    run.step("reconcile", t0, facts=len(facts), calls=calls)
    return out


async def reconcile_call(run: WriteRun, key: str, needs: list[XFact], existing: list[dict[str, Any]]) -> list[Decision]:
    payload = {
        "subject_key": key,
        "subject_name": needs[0].subject_name,
        "new_facts": [
            {"index": i + 1, "fact": f.fact, "attribute_key": f.attribute_key} for i, f in enumerate(needs)
        ],
        "existing": [
            {
                "index": i + 1,
                "fact_id": r["id"],
                "fact": r["fact_text"],
                "attribute_key": r["attribute_key"],
                "valid_from": r["valid_from"].isoformat(),
            }
            for i, r in enumerate(existing)
        ],
    }
    if run.rule_based_reconcile:
        return reconcile_by_rules(run, needs, existing)
    try:
        reply = await run.call("reconcile", payload, run.cfg.reconcile_timeout_sec)
    except LLMError as exc:
        # KC-4.22: the deterministic rules decide (same text confirms, same attribute under a
        # supersede policy replaces), and the result says the write degraded
        run.warn(f"reconcile degraded to rules ({type(exc).__name__}: {plain_text(exc)})")
        if "reconcile" not in run.degraded:
            run.degraded.append("reconcile")
        return reconcile_by_rules(run, needs, existing)
    by_new: dict[int, dict[str, Any]] = {}
    for d in reply["decisions"]:
        idx = d.get("new_fact_index")
        if isinstance(idx, int) and not isinstance(idx, bool) and 1 <= idx <= len(needs) and idx not in by_new:
            by_new[idx] = d
    used: set[str] = set()
    out: list[Decision] = []
    for i, f in enumerate(needs, 1):
        d = by_new.get(i)
        action = str(d.get("action", "")).upper() if d else "ADD"
        if action not in ("ADD", "UPDATE", "NOOP", "DELETE"):
            action = "ADD"
        target = None
        ei = d.get("existing_fact_index") if d else None
        if isinstance(ei, int) and not isinstance(ei, bool) and 1 <= ei <= len(existing):
            target = existing[ei - 1]
        if action == "ADD":
            out.append(Decision(f, "ADD"))
            continue
        if target is None:
            if action == "UPDATE":
                out.append(Decision(f, "ADD"))
            else:
                run.warn(f"reconcile: {action} without a valid existing fact dropped")
            continue
        if target["id"] in used:
            out.append(Decision(f, "ADD"))
            continue
        used.add(target["id"])
        kind = "correction" if action == "UPDATE" and d is not None and d.get("update_kind") == "correction" else "change"
        out.append(Decision(f, action, target, kind))
    return out


def reconcile_by_rules(run: WriteRun, needs: list[XFact], existing: list[dict[str, Any]]) -> list[Decision]:
    """Reconciliation without an LLM: the same text confirms (NOOP), the same attribute key
    under the supersede policy replaces (UPDATE), anything else is new (ADD)."""
    used: set[str] = set()
    out: list[Decision] = []
    for f in needs:
        free = [r for r in existing if r["id"] not in used]
        same_text = next((r for r in free if norm(r["fact_text"]) == norm(f.fact)), None)
        same_key = None
        if f.attribute_key and policy_of(run, f.attribute_key) == "supersede":
            same_key = next((r for r in free if r["attribute_key"] == f.attribute_key), None)
        if same_text is not None:
            used.add(same_text["id"])
            out.append(Decision(f, "NOOP", same_text))
        elif same_key is not None:
            used.add(same_key["id"])
            out.append(Decision(f, "UPDATE", same_key, "change"))
        else:
            out.append(Decision(f, "ADD"))
    return out


def names_of(run: WriteRun, key: str) -> set[str]:
    names = set(run.key_names.get(key, set()))
    if key in run.created:
        names.add(run.created[key].display_name)
    row = run.known_entities.get(key)
    if row and row.get("display_name"):
        names.add(row["display_name"])
    if key in run.display_updates:
        names.add(run.display_updates[key])
    if key == run.speaker_key:
        names.add(run.speaker)
    return {n for n in names if len(norm(n)) >= 3 or key == run.speaker_key}


def mentions(run: WriteRun, words: list[str], key: str) -> bool:
    return any(contains_words(words, n) for n in names_of(run, key))


def evidence(run: WriteRun) -> list[XRelation]:
    """Pick each relation's evidence among this write's ADD/UPDATE/NOOP decisions;
    return the relations that have none (they get mirror facts)."""
    usable = [d for d in run.decisions if d.action in ("ADD", "UPDATE", "NOOP")]
    words = {id(d): word_tokens(d.fact.fact) for d in usable}
    missing: list[XRelation] = []
    for r in run.relations:
        best: Optional[tuple[Any, ...]] = None
        for d in usable:
            w = words[id(d)]
            has_src, has_tgt = mentions(run, w, r.source_key), mentions(run, w, r.target_key)
            subj = d.fact.subject_key
            if has_src and has_tgt:
                rank = 0
            elif (subj == r.source_key and has_tgt) or (subj == r.target_key and has_src):
                rank = 1
            else:
                continue
            cand = (rank, -d.fact.confidence, d.fact.idx)
            if best is None or cand < best[0]:
                best = (cand, d)
        if best is None:
            missing.append(r)
        else:
            r.evidence = best[1]
    return missing


def mirror_facts(run: WriteRun, rels: list[XRelation]) -> list[XFact]:
    out: list[XFact] = []
    base = max((f.idx for f in run.facts), default=-1) + 1
    for i, r in enumerate(rels):
        src = display_name(run, r.source_key, r.source)
        tgt = display_name(run, r.target_key, r.target)
        f = XFact(
            idx=base + i,
            subject=src,
            fact=mirror_text(src, tgt, r.said or r.rel_type, r.rel_type),
            category=None,
            confidence=float(run.cfg.mirror_fact_confidence),
            importance=0.5,
            source_context=MIRROR_SOURCE_CONTEXT,
            mirror=True,
            subject_key=r.source_key,
            subject_name=src,
            subject_type=r.source_key.split(":", 1)[0],
        )
        out.append(f)
    return out


def assign_ids(run: WriteRun) -> None:
    for d in run.decisions:
        if d.action in ("ADD", "UPDATE") and d.fact.new_id is None:
            d.fact.new_id = new_id()
