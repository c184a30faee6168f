"""Running the write pipeline over a :class:`WriteRun` (KC-4.2): the order of the steps, the
commit with its one retry on stale decisions (KC-7.4), and the :class:`WriteResult` (or the
dry-run prediction) built from the run's state. ``KnowledgeMemory.write``, ``add_knowledge``,
``reprocess_event`` and the background worker all come through :func:`run_write`."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Optional

from ..errors import ConflictError, ExtractionError, plain_text
from ..model import Decision
from ..observe import stats_of
from ..runtime import KnowledgeRuntime
from ..types import CorrectionResult, WriteResult
from . import commit as commit_mod
from . import erasures
from .classify import Chunk, classify_input, select_strategy
from .extract import classify_message, dedup, emotion_step, extract_chunks, informed_context, postprocess
from .reconcile import assign_ids, evidence, mirror_facts, reconcile
from .resolve import resolve_all
from .state import WriteRun

__all__ = ["run_write", "decide", "trace_of"]


async def run_write(rt: KnowledgeRuntime, run: WriteRun, *, event_mode: str,
                    prepared: Optional[dict[str, Any]] = None) -> WriteResult:
    """The write pipeline; ``prepared`` is a validated extraction reply given by the caller
    (deterministic writes): no classification or extraction call, the rest is the same."""
    started = time.perf_counter()
    await erasures.mark_async(run)  # KC-3.10: before the write reads or calls the model
    if prepared is not None:
        run.classification = classify_input(run.message)
        run.strategy = select_strategy(run.classification)
        chunks = [Chunk(1, 1, run.message, None)]
    else:
        chunks = await classify_message(run)
    if run.event_vec is None:
        t_embed = time.perf_counter()
        run.event_vec = (await run.embed([run.message]))[0]
        run.step("embed_event", t_embed)
    emotion_task = asyncio.ensure_future(emotion_step(run))
    try:
        if prepared is not None:
            replies = [(chunks[0], prepared)]
        else:
            t_informed = time.perf_counter()
            existing = await informed_context(run)
            run.step("informed_context", t_informed)
            replies = await extract_chunks(run, chunks, existing)
    except ExtractionError as exc:
        await emotion_task
        return await _extraction_failed(rt, run, exc, event_mode, started)
    except BaseException:
        emotion_task.cancel()
        raise
    await emotion_task
    t_post = time.perf_counter()
    postprocess(run, replies)
    await dedup(run)
    run.step("post_process", t_post, facts=len(run.facts), entities=len(run.entities))
    await resolve_all(run)
    await decide(run)
    t_side = time.perf_counter()
    await _side_vectors(run)
    run.step("side_vectors", t_side)
    result: Optional[WriteResult] = None
    for attempt in (1, 2):
        if run.dry_run:
            result = await rt.in_thread(_dry_run_result, rt, run)
            break
        trace = trace_of(run, "ok")
        t_commit = time.perf_counter()
        try:
            rel_out = await rt.in_thread(
                commit_mod.commit_write, run, event_mode=event_mode, trace=trace,
                with_event_record=event_mode == "insert",
            )
        except commit_mod.StaleDecisions as stale:
            if attempt == 2:
                raise ConflictError(
                    f"write conflicted with a concurrent write on {len(stale.subject_keys)} subject(s); nothing stored"
                ) from None
            await decide(run, only=stale.subject_keys)
            continue
        run.step("commit", t_commit, decisions=trace["decisions"])
        result = _result(run, rel_out)
        break
    assert result is not None  # the second attempt either breaks with a result or raises
    result.duration_ms = (time.perf_counter() - started) * 1000.0
    result.stats = stats_of(run, result.duration_ms)
    return result


async def decide(run: WriteRun, only: Optional[set[str]] = None) -> None:
    """Step 6 plus relation evidence and mirror facts (which reconcile too)."""
    facts = run.facts if only is None else [f for f in run.facts if f.subject_key in only]
    kept = [] if only is None else [d for d in run.decisions if d.fact.subject_key not in only and not d.fact.mirror]
    for d in run.decisions:
        d.fact.new_id = None
    run.decisions = kept + await reconcile(run, facts)
    for r in run.relations:
        r.evidence = None
    missing = evidence(run)
    if missing:
        mirrors = mirror_facts(run, missing)
        mdec = await reconcile(run, mirrors)
        by_fact = {id(d.fact): d for d in mdec}
        run.decisions.extend(mdec)
        for r, f in zip(missing, mirrors):
            md = by_fact.get(id(f))
            if md is not None and md.action in ("ADD", "UPDATE", "NOOP"):
                r.evidence = md
    assign_ids(run)


async def _side_vectors(run: WriteRun) -> None:
    texts = [i.trigger_condition for i in run.intentions] + [o.content for o in run.observations]
    speaker = run.created.get(run.speaker_key)
    if speaker is not None and speaker.vec is None:
        texts.append(run.speaker)
    if not texts:
        return
    vecs = await run.embed(texts)
    n = len(run.intentions)
    for i, x in enumerate(run.intentions):
        x.vec = vecs[i]
    for j, o in enumerate(run.observations):
        o.vec = vecs[n + j]
    if speaker is not None and speaker.vec is None:
        speaker.vec = vecs[-1]


def trace_of(run: WriteRun, status: str, error: Optional[str] = None) -> dict[str, Any]:
    """The event row's ``trace_json`` (KC-4.19)."""
    counts: dict[str, int] = {}
    for d in run.decisions:
        counts[d.action] = counts.get(d.action, 0) + 1
    c, s = run.classification, run.strategy
    u = run.call.usage
    return {
        "status": status,
        "error": error,
        "classification": None if c is None else {"input_type": c.input_type.value, "char_count": c.char_count,
                                                  "section_count": c.section_count},
        "strategy": None if s is None else {"mode": s.mode.value, "estimated_chunks": s.estimated_chunks},
        "decisions": counts,
        "tokens": {"input": u.input_tokens, "output": u.output_tokens, "total": u.total_tokens},
        "warnings": list(run.warnings),
    }


async def _extraction_failed(rt: KnowledgeRuntime, run: WriteRun, exc: ExtractionError, event_mode: str,
                             started: float) -> WriteResult:
    error = f"ExtractionError: {plain_text(exc)}"  # returned and stored (the trace): no quoted reply
    result = WriteResult(
        classification=run.classification, strategy=run.strategy, emotion=run.emotion, success=False, error=error,
        warnings=list(run.warnings), tokens_used=run.call.usage, pipeline=run.trace,
    )
    keep = run.cfg.on_extraction_failure == "keep_event" and not run.dry_run
    if keep:
        trace = trace_of(run, "extraction_failed", error)
        await rt.in_thread(commit_mod.commit_event_only, run, trace=trace, event_mode=event_mode)
        result.event_id = run.event_id
    result.duration_ms = (time.perf_counter() - started) * 1000.0
    result.stats = stats_of(run, result.duration_ms)
    return result


def _fact_dict(d: Decision, fact_id: Optional[str], previous: Optional[str]) -> dict[str, Any]:
    f = d.fact
    return {
        "fact_id": fact_id,
        "entity_key": f.subject_key,
        "fact_text": f.fact,
        "attribute_key": f.attribute_key,
        "category": f.category,
        "previous_fact_id": previous,
    }


def _fill(run: WriteRun, result: WriteResult, dry: bool) -> None:
    for d in run.decisions:
        new = None if dry else d.fact.new_id
        old = d.target["id"] if d.target is not None else None
        if d.action == "ADD" or (d.action == "UPDATE" and d.late):
            result.facts_added.append(_fact_dict(d, new, None))
        elif d.action == "UPDATE":
            result.facts_updated.append(_fact_dict(d, new, old))
        elif d.action == "NOOP":
            result.facts_unchanged.append(_fact_dict(d, old, None))
        elif d.action == "DELETE":
            result.facts_deleted.append(_fact_dict(d, old, None))
    result.entities_resolved = list(run.resolved_order)
    result.corrections = detect_corrections(run.decisions) if run.decisions else CorrectionResult()


def _result(run: WriteRun, rel_out: list[dict[str, Any]]) -> WriteResult:
    result = WriteResult(
        event_id=run.event_id, classification=run.classification, strategy=run.strategy, emotion=run.emotion,
        relations=rel_out, intentions_created=list(run.intentions_created),
        observations_created=list(run.observations_created), pipeline=run.trace,
        tokens_used=run.call.usage, warnings=list(run.warnings), degraded=list(run.degraded),
    )
    _fill(run, result, dry=False)
    return result


def _dry_run_result(rt: KnowledgeRuntime, run: WriteRun) -> WriteResult:
    with rt.backend.lock():
        with rt.backend.read() as conn:
            commit_mod.recheck(run, conn)
            plan = commit_mod.build_plan(run, conn)
            rels = commit_mod.predict_relations(run, conn, plan.closing)
    result = WriteResult(
        event_id="", classification=run.classification, strategy=run.strategy, emotion=run.emotion,
        relations=[
            {"source_entity_key": x["rel"].source_key, "target_entity_key": x["rel"].target_key,
             "rel_type": x["rel"].rel_type, "action": x["action"]}
            for x in rels
        ],
        intentions_created=[
            {"intention_id": None, "trigger_type": i.trigger_type, "trigger_condition": i.trigger_condition,
             "intended_action": i.intended_action, "due_date": i.due_date}
            for i in run.intentions
        ],
        observations_created=[
            {"observation_id": None, "content": o.content, "topic": o.topic, "entities_mentioned": list(o.entity_keys)}
            for o in run.observations
        ],
        pipeline=run.trace, tokens_used=run.call.usage, warnings=list(run.warnings), degraded=list(run.degraded),
    )
    _fill(run, result, dry=True)
    return result


def detect_corrections(decisions: list[Any]) -> CorrectionResult:
    """KC-4.13: applied UPDATEs of kind ``correction`` → ``CorrectionResult``.

    Accepts pipeline decisions or plain dicts with ``action``, ``update_kind``,
    ``attribute_key``, ``entity_key`` and ``existing_fact_id``."""

    keys: list[str] = []
    ids: list[str] = []
    for d in decisions:
        if isinstance(d, Decision):
            action, kind = d.action, d.kind
            attr, ekey = d.fact.attribute_key, d.fact.subject_key
            old = d.target["id"] if d.target else None
            if d.late:
                continue
        else:
            action, kind = d.get("action"), d.get("update_kind", "change")
            attr, ekey, old = d.get("attribute_key"), d.get("entity_key"), d.get("existing_fact_id")
        if action != "UPDATE" or kind != "correction" or old is None:
            continue
        k = attr or ekey
        if k not in keys:
            keys.append(k)
        ids.append(old)
    return CorrectionResult(len(ids), keys, ids)
