"""The read side's entry points that are more than one call, as ``write/entry.py`` is for the
write side: ``retrieve`` (checks, effective config, the empty-query answer, the traced run,
the audit entry) and the procedural reads (KC-5.10, KC-5.13) with their argument checks."""

from __future__ import annotations

from typing import Any, Optional

from .. import checks
from ..config import KnowledgeConfig, merge_config
from ..db.queries import check_user_id
from ..observe import finish_span, operation_span
from ..runtime import KnowledgeRuntime
from ..text import validate_agent_id
from ..types import ContradictionResult, DirectiveBlock, EmotionalTrendsResult, RetrieveResult
from ..write import edits

__all__ = ["retrieve", "emotional_trends", "directives", "check_contradiction"]


async def retrieve(rt: KnowledgeRuntime, config: KnowledgeConfig, audited: Any, agent_id: str, query: str, *,
                   session_id: Optional[str], entity_keys: Optional[list[Any]], as_of: Any, known_at: Any,
                   include_directives: bool, config_overrides: Optional[dict[str, Any]], verbose: bool,
                   user_id: Optional[str]) -> RetrieveResult:
    """``KnowledgeMemory.retrieve``; ``audited`` is the instance, whose audit entry (SC-16.2)
    ``trust.audit`` writes from its store and runtime."""
    from ...trust import audit
    from .run import check_retrieve, run_retrieve
    from .state import RetrieveState

    user_id, as_of_dt, known_dt = check_retrieve(agent_id, query, session_id, entity_keys, as_of, known_at, user_id)
    cfg = merge_config(config, config_overrides)
    now = rt.now()
    if not query.strip():
        return RetrieveResult(warnings=["empty query"], config_effective=cfg.as_dict())
    run = RetrieveState.start(
        rt, agent_id=agent_id, query=query, session_id=session_id,
        entity_keys=list(entity_keys) if entity_keys is not None else None, as_of=as_of_dt, known_at=known_dt,
        include_directives=bool(include_directives), cfg=cfg, now=now, verbose=bool(verbose), user_id=user_id,
    )
    guard = await audit.guard_retrieve_async(audited, agent_id, user_id, session_id)  # SC-16.6: before the read
    with operation_span(rt.tracer_provider, "retrieve", run) as span:
        result = await run_retrieve(run)
        finish_span(span, result.stats)
    result.audit_request_id = await audit.after_retrieve_async(audited, agent_id, user_id, session_id, query, as_of_dt,
                                                               known_dt, result, guard)
    return result


async def emotional_trends(rt: KnowledgeRuntime, config: KnowledgeConfig, agent_id: str,
                           user_id: Optional[str]) -> EmotionalTrendsResult:
    """``KnowledgeMemory.emotional_trends``: the statistics and their meta-observation, in one
    small write."""
    from .procedural import emotional_trends as trends

    user_id, now = checks.scoped(rt, agent_id, user_id)
    return await edits.small_write(rt, agent_id, lambda c: trends(rt, c, agent_id, config, now, user_id))


async def directives(rt: KnowledgeRuntime, config: KnowledgeConfig, agent_id: str, persona_text: str,
                     user_id: Optional[str]) -> DirectiveBlock:
    """``KnowledgeMemory.directives``."""
    from .procedural import directives_for

    validate_agent_id(agent_id)
    checks.text(persona_text, "persona_text")
    user_id = check_user_id(user_id)
    return await directives_for(rt, agent_id, persona_text, config, rt.now(), user_id=user_id)


async def check_contradiction(rt: KnowledgeRuntime, config: KnowledgeConfig, agent_id: str, new_directive: str,
                              user_id: Optional[str]) -> ContradictionResult:
    """``KnowledgeMemory.check_contradiction``: the result (not the id of the preference it was
    compared with)."""
    from .procedural import check_contradiction as check

    validate_agent_id(agent_id)
    checks.text(new_directive, "new_directive")
    if not new_directive.strip():
        raise ValueError("new_directive must not be empty")
    now = rt.now()
    result, _ = await check(rt, agent_id, new_directive, config, user_id=check_user_id(user_id), now=now)
    return result
