"""The public write calls up to the pipeline (KC-4.1): their argument checks
(before any LLM call or row), the store firewall's screening of the message (SC-15.6), the
default thread of a write, and the :class:`WriteRun` of ``write``, ``add_knowledge`` and
``reprocess_event``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Optional

import sqlalchemy as sa

from ...threads import default_session_id
from ...trust.firewall import VERDICT_KEY, FirewallRejected
from ...trust.gate import screen_context, screen_knowledge, screen_message
from .. import checks
from ..config import KnowledgeConfig, merge_config
from ..db import queries as reads
from ..db.queries import check_user_id
from ..jobs import worker as worker_mod
from ..observe import finish_span, operation_span
from ..opening import NO_LLM_CONFIG
from ..runtime import KnowledgeRuntime
from ..text import parse_when, validate_agent_id
from ..types import WriteResult
from . import erasures
from .deterministic import build_reply, event_lines, event_text
from .run import run_write
from .state import WriteRun

__all__ = ["default_session_id", "check_write", "screen", "manual_run", "reprocess_run", "write_message"]

#: emotion tagging off: for deterministic writes, and for a reprocessed event that already has its tag
_NO_EMOTION = {"enable_emotion_tagging": False}


def _origin(source: Any, session_id: Any, occurred_at: Any) -> Optional[datetime]:
    """Checks ``source`` and ``session_id`` of a write and parses ``occurred_at``."""
    if not isinstance(source, str) or not source.strip():
        raise ValueError("source must be a non-empty string")
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 255:
        raise ValueError("session_id must be a non-empty string (not only white space) of at most 255 characters (it is a store thread id), "
                         "or None for the (agent, user) default thread")
    when: Optional[datetime] = parse_when(occurred_at, "occurred_at")
    return when


def check_write(agent_id: Any, message: Any, speaker_name: Any, *, user_id: Any, source: Any, session_id: Any,
                occurred_at: Any, recent_messages: Any, background: Any, dry_run: Any, verbose: Any, has_llm: bool,
                cfg: KnowledgeConfig) -> tuple[Optional[str], str, Optional[datetime], list[str]]:
    """KC-4.1: ``write``'s arguments; returns (user_id, session_id, occurred_at, recent messages)."""
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, got {type(message).__name__}")
    validate_agent_id(agent_id)
    user_id = check_user_id(user_id)
    if session_id is None:
        session_id = default_session_id(agent_id, user_id)
    if not isinstance(speaker_name, str):
        raise TypeError(f"speaker_name must be a str, got {type(speaker_name).__name__}")
    if not speaker_name.strip():
        raise ValueError("speaker_name must not be empty")
    when = _origin(source, session_id, occurred_at)
    if recent_messages is None:
        recent: list[str] = []
    elif isinstance(recent_messages, (list, tuple)) and all(isinstance(m, str) for m in recent_messages):
        recent = list(recent_messages)
    else:
        raise TypeError("recent_messages must be a list of str")
    if not isinstance(background, bool):
        raise TypeError("background must be a bool")
    if background and (dry_run or verbose):
        raise ValueError("dry_run and verbose apply to a write that runs now, not to background=True; "
                         "inspect the job's result with get_job(job_id)")
    if not has_llm and not background:
        raise ValueError(
            "write() extracts knowledge with an LLM and this KnowledgeMemory has none: pass llm=... to "
            "KnowledgeMemory, or store structured knowledge with add_fact / add_entity / add_relation / add_knowledge "
            "(or queue the message with background=True for a worker that has an LLM)"
        )
    if len(message) > cfg.max_input_chars:
        raise ValueError(f"message has {len(message)} chars, over max_input_chars={cfg.max_input_chars}")
    return user_id, session_id, when, recent


async def screen(rt: KnowledgeRuntime, message: str, source: str, recent: list[str], speaker: str,
                 ) -> tuple[str, str, list[str], Any, Optional[WriteResult], list[str]]:
    """SC-15.6: the store firewall sees the message with its speaker name, and the
    ``recent_messages`` that go to the LLM with it (in a shared thread other users' turns),
    before the LLM, the embedder or any row: (the message to use, the speaker name to use,
    the recent messages to use, the verdict to report, the result to return at once when
    the message is flagged, warnings). The speaker name goes to the LLM and becomes a person
    entity, so it is screened with the message (red29: it went past the policy). The recent messages are
    screened as the message is (:func:`oramem.trust.gate.screen_context`): a flagged one is
    left out, secrets are redacted, a rejected category raises."""
    policy = await rt.in_thread(rt.store.get_firewall)
    if policy is None:
        return message, speaker, recent, None, None, []
    warnings: list[str] = []
    if recent:
        recent, left_out = screen_context(policy, recent, source)
        if left_out:
            warnings.append(f"the store's firewall flagged {left_out} of the recent messages: they were left out "
                            "of the extraction's context")
    screened = screen_message(policy, message, source, speaker)
    verdict = (screened.metadata or {})[VERDICT_KEY]
    if screened.verdict == "flagged":
        return message, speaker, recent, verdict, WriteResult(firewall=verdict, warnings=[
            "the store's firewall flagged this message (" + ", ".join(screened.findings)
            + "): it was not extracted into knowledge", *warnings]), warnings
    return screened.texts[0] or "", screened.texts[1] or speaker, recent, verdict, None, warnings


def manual_run(rt: KnowledgeRuntime, config: KnowledgeConfig, has_llm: bool, agent_id: Any, *, entities: Any, facts: Any, relations: Any, user_id: Any, source: Any, session_id: Any,
               occurred_at: Any, config_overrides: Optional[dict[str, Any]], policy: Any = None,
               ) -> tuple[WriteRun, dict[str, Any], Any]:
    """``add_knowledge``: the checked items as an extraction reply, the run that writes
    them (rule-based reconciliation without an LLM; no emotion tagging) and, under the
    store's firewall ``policy``, the items' screening (SC-15.6: the reply holds the redacted
    texts; a rejected category raises; the caller stores nothing of a flagged call), else None."""
    validate_agent_id(agent_id)
    user_id = check_user_id(user_id)
    if session_id is None:
        session_id = default_session_id(agent_id, user_id)
    when = _origin(source, session_id, occurred_at)
    reply = build_reply(entities, facts, relations)
    screened = None
    if policy is not None:
        reply, screened = screen_knowledge(policy, reply, source)
    cfg = merge_config(config, config_overrides)
    if not has_llm:
        cfg = merge_config(cfg, NO_LLM_CONFIG)
    cfg = merge_config(cfg, _NO_EMOTION)
    text = event_text(reply)
    if len(text) > cfg.max_input_chars:
        raise ValueError(f"the call describes {len(text)} chars, over max_input_chars={cfg.max_input_chars}; split it")
    now = rt.now()
    run = WriteRun(
        rt, agent_id=agent_id, message=text, speaker_name=source, source=source, session_id=session_id,
        occurred_at=when, recent_messages=[], dry_run=False, cfg=cfg, now=now, verbose=False, user_id=user_id,
    )
    run.rule_based_reconcile = not has_llm
    run.given_lines = event_lines(reply)
    return run, reply, screened


async def reprocess_run(rt: KnowledgeRuntime, config: KnowledgeConfig, agent_id: Any, event_id: Any,
                        config_overrides: Optional[dict[str, Any]], user_id: Any) -> WriteRun:
    """KC-7.3: the run that completes an ``extraction_failed`` event of the scope ``user_id``."""
    validate_agent_id(agent_id)
    user_id = check_user_id(user_id)
    checks.row_id(event_id, "event_id", "the event's id (as oramem knowledge write printed it: kept event ...)")
    cfg = merge_config(config, config_overrides)
    now = rt.now()
    t = rt.tables
    row = await rt.read(
        lambda c: c.execute(sa.select(t.event).where(reads.owned(t.event, agent_id, user_id), t.event.c.id == event_id)).mappings().first()
    )
    if row is None:
        raise ValueError(f"no event {event_id!r} for agent {agent_id!r}" + (f" and user {user_id!r}" if user_id else ""))
    status = (row["trace_json"] or {}).get("status")
    if status != "extraction_failed":
        raise ValueError(f"event {event_id!r} has status {status!r}; only extraction_failed events are reprocessed")
    # SC-15.6: the event's text goes to the LLM again, under the store's policy now (an event
    # stored before the policy was set went to it unscreened; red30); a flagged text is not
    # extracted, a rejected category raises
    message, speaker, _, _, flagged, _ = await screen(rt, row["text"], row["source"], [], row["speaker"] or "user")
    if flagged is not None:
        findings = list((flagged.firewall or {}).get("findings", []))
        raise FirewallRejected(
            f"the store's firewall flags event {event_id!r} (" + ", ".join(findings)
            + "): it is not extracted into knowledge, as a flagged write is not; leave it failed, or delete it",
            [(0, name) for name in findings])
    run = WriteRun(
        rt, agent_id=agent_id, message=message, speaker_name=speaker, source=row["source"],
        session_id=row["session_id"] or default_session_id(agent_id, row["user_id"]), occurred_at=row["occurred_at"],
        recent_messages=[], dry_run=False, cfg=cfg, now=now, verbose=False, event_id=event_id, user_id=row["user_id"],
    )
    run.event_vec = row["embedding_vec"]
    if row["emotion_primary"]:
        run.cfg = merge_config(cfg, _NO_EMOTION)
    return run


async def write_message(rt: KnowledgeRuntime, config: KnowledgeConfig, has_llm: bool, wake: Callable[[], None],
                        agent_id: Any, message: Any, speaker_name: Any, *, user_id: Any, source: Any, session_id: Any,
                        occurred_at: Any, recent_messages: Any, dry_run: Any, config_overrides: Optional[dict[str, Any]],
                        verbose: Any, background: Any) -> WriteResult:
    """``KnowledgeMemory.write``: checks, the firewall, then the pipeline now or a queued job
    (``wake`` tells this instance's worker, if one runs, that a job is due)."""
    cfg = merge_config(config, config_overrides)
    user_id, session_id, when, recent = check_write(
        agent_id, message, speaker_name, user_id=user_id, source=source, session_id=session_id,
        occurred_at=occurred_at, recent_messages=recent_messages, background=background, dry_run=dry_run,
        verbose=verbose, has_llm=has_llm, cfg=cfg)
    now = rt.now()
    if not message.strip():
        return WriteResult()
    # KC-3.10: the erasures of its scope when the call starts; one committed after this makes
    # the write's commit (or its job's insert) refuse
    mark = None if dry_run else await erasures.note_async(rt, agent_id, user_id)
    message, speaker_name, recent, verdict, flagged, warnings = await screen(rt, message, source, recent, speaker_name)
    if flagged is not None:
        return flagged
    if background:
        queued = await worker_mod.submit(rt, agent_id, message, speaker_name, source=source, session_id=session_id,
                                         occurred_at=when or now, recent=recent, overrides=config_overrides, now=now,
                                         user_id=user_id, mark=mark)
        wake()
        queued.firewall = verdict
        queued.warnings.extend(warnings)
        return queued
    run = WriteRun(
        rt, agent_id=agent_id, message=message, speaker_name=speaker_name, source=source, session_id=session_id,
        occurred_at=when, recent_messages=recent, dry_run=bool(dry_run), cfg=cfg, now=now, verbose=bool(verbose),
        user_id=user_id,
    )
    run.erasure_mark = mark
    with operation_span(rt.tracer_provider, "write", run, dry_run=bool(dry_run)) as span:
        result = await run_write(rt, run, event_mode="insert")
        finish_span(span, result.stats, result.success)
    result.firewall = verdict
    result.warnings.extend(warnings)
    return result
