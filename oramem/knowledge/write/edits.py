"""Edits of single rows outside the write pipeline: retracting a fact, confirming or
annotating one, fulfilling an intention. Each runs in one knowledge transaction and touches
only rows of its scope (``reads.owned``: KC-3.7, a user edits her own rows only; ``None``:
the agent's shared rows). The free text of an annotation or an outcome note is screened by
the store's firewall first (SC-15.6, :func:`oramem.trust.gate.screen_note`)."""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Optional, TypeVar

import sqlalchemy as sa

from ...trust.gate import screen_note
from ..db import queries as reads
from ..runtime import KnowledgeRuntime
from . import commit as commit_mod

__all__ = ["small_write", "retract_fact", "fulfill_intention", "confirm_fact", "annotate_fact"]

T = TypeVar("T")


async def small_write(rt: KnowledgeRuntime, agent_id: str, fn: Callable[[sa.Connection], T]) -> T:
    """``fn(conn)`` in one knowledge write transaction of the agent (``KnowledgeRuntime.in_thread``)."""
    def run() -> T:
        with rt.backend.write("knowledge update", agent_id) as conn:
            return fn(conn)

    return await rt.in_thread(run)


async def note(rt: KnowledgeRuntime, text: Optional[str], what: str) -> Optional[str]:
    """``text`` as the store's firewall lets it be stored (SC-15.6): redacted, or
    :class:`~oramem.trust.FirewallRejected` when rejected or flagged; as given without a policy."""
    if text is None:
        return None
    policy = await rt.in_thread(rt.store.get_firewall)
    return text if policy is None else screen_note(policy, text, what)


def retract_fact(rt: KnowledgeRuntime, agent_id: str, fact_id: str, user_id: Optional[str], now: datetime) -> bool:
    """``valid_to = now`` on a current fact of the scope, the relationships it evidences closed
    with it (the invalidation cascade) and its store record's metadata updated, in one
    transaction; False when the scope has no such current fact."""
    t = rt.tables
    with rt.backend.lock():
        with rt.backend.write("knowledge retract", agent_id) as conn:
            if fact_id not in reads.current_facts_by_ids(conn, t, agent_id, [fact_id], now, user_id):
                return False
            conn.execute(sa.update(t.fact).where(reads.owned(t.fact, agent_id, user_id), t.fact.c.id == fact_id)
                         .values(valid_to=now))
            reads.clear_summaries_citing(conn, t, [fact_id])  # KC-6.7: not left naming it (red33)
            reads.clear_cluster_summaries(conn, t, [fact_id])  # KC-6.2: nor its cluster's (red35)
            r = t.relationship
            conn.execute(
                sa.update(r)
                .where(reads.owned(r, agent_id, user_id), r.c.evidence_fact_id == fact_id, r.c.valid_to.is_(None),
                       r.c.invalidated_at.is_(None))
                .values(valid_to=now, updated_at=now)
            )
            meta = commit_mod.store_fact_metadata_for(conn, t, agent_id, [fact_id])
            # the store record's metadata changes in the same transaction
            for fid, md in meta.items():
                commit_mod.update_fact_record(rt.store, fid, agent_id, md)
        return True


async def fulfill_intention(rt: KnowledgeRuntime, agent_id: str, intention_id: str, outcome_note: Optional[str],
                            user_id: Optional[str], now: datetime) -> bool:
    outcome_note = await note(rt, outcome_note, "outcome_note")
    it = rt.tables.intention
    return await small_write(
        rt, agent_id,
        lambda c: c.execute(
            sa.update(it).where(reads.owned(it, agent_id, user_id), it.c.id == intention_id,
                                it.c.status.in_(("pending", "triggered")))
            .values(status="fulfilled", fulfilled_at=now, outcome_note=outcome_note)
        ).rowcount == 1,
    )


async def confirm_fact(rt: KnowledgeRuntime, agent_id: str, fact_id: str, user_id: Optional[str], now: datetime) -> bool:
    f = rt.tables.fact
    return await small_write(
        rt, agent_id,
        lambda c: c.execute(
            sa.update(f).where(reads.owned(f, agent_id, user_id), f.c.id == fact_id)
            .values(needs_confirmation=False, last_confirmed_at=now)
        ).rowcount == 1,
    )


async def annotate_fact(rt: KnowledgeRuntime, agent_id: str, fact_id: str, text: str, user_id: Optional[str]) -> bool:
    screened = await note(rt, text, "text")
    f = rt.tables.fact
    return await small_write(
        rt, agent_id,
        lambda c: c.execute(sa.update(f).where(reads.owned(f, agent_id, user_id), f.c.id == fact_id)
                            .values(agent_annotation=screened)).rowcount == 1,
    )
