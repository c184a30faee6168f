"""Erasing an actor from the knowledge tables (``forget``, SC-8.6, KC-3.6, KC-3.10).

Runs inside the store's ``forget`` transaction, from the knowledge layer's deletion hook,
on the store's own connection. The store has already removed the actor's records (the
SC-8.2 cascade); this module removes what the knowledge layer holds for the actor and hands
back the knowledge store records (fact and event records) the store deletes in the same
transaction.

An agent is erased wholesale: every row of the agent in the eleven tables, its lock row and its
queued background writes (``<ID>_KG_JOB``).

A user is erased by her id, never by a name (KC-3.10; review finding 5: names matched other
people and other tenants): on every agent, every row whose ``user_id`` is hers (her events,
facts, entities, aliases, relationships, links, intentions, session observations, clusters,
meta observations and queued writes: her scope, KC-3.7), the knowledge rows whose store
record was one of her erased records, and what other scopes derived from her rows: the
meta observations supported by one of her events or facts, the session observations built
from her events and the clusters holding one of her facts (their LLM-written text may quote
her; feature-check defect 3). Background jobs run per scope (KC-6.0), so derived text of
another scope cites only that scope's rows; the provenance match is the backstop for rows
written before the user dimension. The agent's shared knowledge and other users' rows are
never matched by name or by thread.
"""

from __future__ import annotations

from typing import Any, Callable

import sqlalchemy as sa

from ..requests import DeletionEvent, ErasureReport
from .db import queries as reads
from .db.schema import KGTables

__all__ = ["erase", "OracleEraser"]

PurgeFacts = Callable[[sa.Connection, Any, list[str]], None]


def _counts(conn: sa.Connection, t: KGTables) -> dict[str, int]:
    tables = t.all_agent_tables() + [t.agent, t.job]
    return {tb.name: int(conn.execute(sa.select(sa.func.count()).select_from(tb)).scalar_one()) for tb in tables}


def erase(conn: sa.Connection, t: KGTables, event: DeletionEvent, purge_facts: PurgeFacts,
          before: Any = None) -> ErasureReport:
    """Erase the actor of a ``forget`` event; rows deleted per table and the store records
    to delete with them. ``before``: the row counts taken before the store's cascade, when
    a deletion hook of the cascade already removed some of the rows (Oracle)."""
    before = _counts(conn, t) if before is None else before
    records: list[tuple[str, str]] = []
    for agent in event.agent_ids:
        for table in t.all_agent_tables() + [t.agent, t.job]:
            conn.execute(sa.delete(table).where(table.c.agent_id == agent))
    if event.user_ids:
        records = _erase_user(conn, t, event, purge_facts)
    after = _counts(conn, t)
    return ErasureReport({name: before[name] - after[name] for name in before}, tuple(records))


def _in(column: Any, values: set[str]) -> list[Any]:
    """``column IN (...)`` conditions over batches of ``values``."""
    return [column.in_(batch) for batch in reads.chunked(sorted(values))]


def _any_in(column: Any, values: set[str]) -> Any:
    conds = _in(column, values)
    return sa.or_(*conds) if conds else sa.false()


def _erase_user(conn: sa.Connection, t: KGTables, event: DeletionEvent, purge_facts: PurgeFacts) -> list[tuple[str, str]]:
    ev, f, e, al, rel, lk = t.event, t.fact, t.entity, t.alias, t.relationship, t.link
    so, it, mo, cl = t.session_observation, t.intention, t.meta_observation, t.cluster
    users = set(event.user_ids)

    def mine(table: Any) -> Any:
        return _any_in(table.c.user_id, users)

    erased = {rid for rtype, rid in event.records if rtype in ("message", "fact")}

    # her events and facts: her scope, plus knowledge rows whose store record was hers
    event_rows = conn.execute(sa.select(ev.c.id, ev.c.agent_id, ev.c.user_id).where(
        sa.or_(mine(ev), _any_in(ev.c.id, erased)))).all()
    events = {r.id for r in event_rows}
    facts = {r[0] for r in conn.execute(sa.select(f.c.id).where(
        sa.or_(mine(f), _any_in(f.c.id, erased), _any_in(f.c.source_event_id, events))))}

    # derived rows of any scope that cite her rows (found before her facts go)
    clusters = {r[0] for r in conn.execute(sa.select(f.c.cluster_id).where(_any_in(f.c.id, facts))) if r[0]}
    clusters |= {r[0] for r in conn.execute(sa.select(cl.c.id).where(mine(cl)))}
    metas = {r.id for r in conn.execute(sa.select(mo.c.id, mo.c.user_id, mo.c.supporting_event_ids, mo.c.supporting_fact_ids))
             if r.user_id in users or events.intersection(r.supporting_event_ids or ())
             or facts.intersection(r.supporting_fact_ids or ())}
    observations = {r.id for r in conn.execute(sa.select(so.c.id, so.c.user_id, so.c.source_message_ids))
                    if r.user_id in users or events.intersection(r.source_message_ids or ())}

    if facts:
        purge_facts(conn, None, sorted(facts))
    for cond in _in(mo.c.id, metas):
        conn.execute(sa.delete(mo).where(cond))
    for cond in _in(so.c.id, observations):
        conn.execute(sa.delete(so).where(cond))
    for batch in reads.chunked(sorted(clusters)):
        conn.execute(sa.update(f).where(f.c.cluster_id.in_(batch)).values(cluster_id=None))
        conn.execute(sa.delete(cl).where(cl.c.id.in_(batch)))
    for batch in reads.chunked(sorted(events)):
        conn.execute(sa.update(f).where(f.c.source_event_id.in_(batch)).values(source_event_id=None))
        conn.execute(sa.delete(ev).where(ev.c.id.in_(batch)))
    # the rest of her scope: entities, aliases, relationships, links, intentions, queued writes
    for table in (rel, lk, al, e, it, t.job):
        conn.execute(sa.delete(table).where(mine(table)))
    # her knowledge store records; threads are the store's (a thread is a conversation, not
    # a grant: its row and other users' records in it are never erased from here)
    return [("fact", fid) for fid in sorted(facts)] + [("message", eid) for eid in sorted(events)]


class OracleEraser:
    """``forget`` on Oracle (``SyncOracleEngine.register_erasure``): the engine takes
    :meth:`snapshot` before the actor's cascade (whose PL/SQL deletion hook,
    ``oramem_kg_jobs.on_store_delete``, already removes the agent's rows and the facts and
    events of her records) and calls :meth:`erase` after it, both inside its transaction:
    SQLAlchemy reaches the transaction's connection through the knowledge layer's Oracle
    backend (``OracleBackend._connect``). The counts are the rows gone in both steps.
    Static-checked, not run against Oracle."""

    def __init__(self, sa_engine: sa.Engine, tables: KGTables, purge_facts: PurgeFacts) -> None:
        self._engine, self._tables, self._purge_facts = sa_engine, tables, purge_facts
        #: one eraser per store's knowledge tables: a newer one replaces an older one
        self.key = ("knowledge", tables.store_id)

    def snapshot(self) -> dict[str, int]:
        with self._engine.connect() as conn:
            return _counts(conn, self._tables)

    def erase(self, event: DeletionEvent, before: dict[str, int]) -> "ErasureReport | None":
        if event.memory_store_id.upper() != self._tables.store_id:
            return None
        with self._engine.connect() as conn:
            return erase(conn, self._tables, event, self._purge_facts, before)
