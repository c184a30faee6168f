"""Erasing an actor from the knowledge tables (``forget``, SC-8.6, KC-3.6).

Runs inside the store's ``forget`` transaction, from the knowledge layer's deletion hook,
on the store's own connection. The store has already removed the actor's records (the
SC-8.2 cascade); this module removes what the knowledge layer derived from them and hands
back the knowledge store records (fact and event records) the store deletes in the same
transaction.

An agent is erased wholesale: every row of the agent in the eleven tables, its lock row and its
queued background writes (``<ID>_KG_JOB``); a user's queued writes (her threads, her names) go too.

A user is found on every agent, also on an agent shared by several users, by:

- her events: the events spoken under one of her names (``write(agent, message, speaker_name)``),
  the events of the threads she owned in the store (a session id that is one of her store
  threads), and the record of every deterministic ``add_*`` call that stored a fact about her
  (its text lists the call's items);
- her names: the ``names`` given to ``forget`` (default: her user id) plus the speaker names
  of the events of her threads (not of deterministic ``add_*`` calls, whose speaker is their
  ``source``);
- her entities: every entity whose key names her (``<type>:<slug of a name>``) or that one
  of her names is an alias of;
- her facts: facts spoken under her names, extracted from her events, about one of her
  entities or linked to one.

Erased with them: her entities and their aliases, every relationship touching them (and
those evidenced by her facts), the fact links, the session observations and intentions of her
sessions (her store threads, and the sessions where nobody else spoke), the session
observations built from her events or naming her entities, the observations and intentions
whose text names her (whole words of one of her names), the meta
observations supported by her events or facts, and the clusters holding her facts. Derived
text of other rows that may quote her is cleared, not kept: the summary of every other
entity one of her facts was linked to (it is rebuilt by ``refresh_summaries``). Messages
of other speakers that mention her are theirs and stay, but the facts about her extracted
from them go.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import sqlalchemy as sa

from ..requests import DeletionEvent, ErasureReport
from . import reads
from .schema import KGTables
from .text import norm, slug

__all__ = ["erase", "OracleEraser"]

PurgeFacts = Callable[[sa.Connection, Any, list], None]


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
        _erase_user_jobs(conn, t, event)
    after = _counts(conn, t)
    return ErasureReport({name: before[name] - after[name] for name in before}, tuple(records))


def _erase_user_jobs(conn: sa.Connection, t: KGTables, event: DeletionEvent) -> None:
    """Queued background writes (``<ID>_KG_JOB``) of her threads or spoken under her names: a
    pending one would bring her message back when a worker runs it."""
    names = {norm(n) for n in event.names if norm(n)}
    threads = set(event.thread_ids)
    j = t.job
    gone = [
        r.id for r in conn.execute(sa.select(j.c.id, j.c.session_id, j.c.payload_json))
        if r.session_id in threads or norm(str((r.payload_json or {}).get("speaker_name") or "")) in names
    ]
    for cond in _in(j.c.id, set(gone)):
        conn.execute(sa.delete(j).where(cond))


def _in(column: Any, values: set) -> list:
    """``column IN (...)`` conditions over batches of ``values``."""
    return [column.in_(batch) for batch in reads.chunked(sorted(values))]


def _any_in(column: Any, values: set) -> Any:
    conds = _in(column, values)
    return sa.or_(*conds) if conds else sa.false()


def _erase_user(conn: sa.Connection, t: KGTables, event: DeletionEvent, purge_facts: PurgeFacts) -> list[tuple[str, str]]:
    ev, f, e, al, rel, lk = t.event, t.fact, t.entity, t.alias, t.relationship, t.link
    so, it, mo, cl = t.session_observation, t.intention, t.meta_observation, t.cluster
    names = {norm(n) for n in event.names if norm(n)}
    threads = set(event.thread_ids)
    message_ids = {rid for rtype, rid in event.records if rtype == "message"}

    # her events: owned store messages, her threads, her names
    linked = conn.execute(
        sa.select(ev.c.id, ev.c.speaker, ev.c.source).where(sa.or_(_any_in(ev.c.id, message_ids), _any_in(ev.c.session_id, threads)))
    ).all()
    events = {row.id for row in linked}
    names |= {norm(row.speaker) for row in linked if row.speaker and row.speaker != row.source and norm(row.speaker)}
    spoken = {r.id for r in conn.execute(sa.select(ev.c.id, ev.c.speaker)) if r.speaker and norm(r.speaker) in names}
    events |= spoken

    # her entities, per agent: keys naming her, and the entities her names are aliases of
    slugs = {slug(n) for n in names if slug(n)}
    keys: set[tuple[str, str]] = set()
    for row in conn.execute(sa.select(e.c.agent_id, e.c.canonical_key)):
        if row.canonical_key.split(":", 1)[-1] in slugs:
            keys.add((row.agent_id, row.canonical_key))
    for arow in conn.execute(sa.select(al.c.agent_id, al.c.alias, al.c.canonical_entity_key)):
        if norm(arow.alias) in names:
            keys.add((arow.agent_id, arow.canonical_entity_key))
    for row in conn.execute(sa.select(lk.c.agent_id, lk.c.entity_key).distinct()):
        if row.entity_key.split(":", 1)[-1] in slugs:
            keys.add((row.agent_id, row.entity_key))
    agents_of: dict[str, set[str]] = {}
    for agent, key in keys:
        agents_of.setdefault(agent, set()).add(key)

    # her facts
    facts = {
        r.id
        for r in conn.execute(sa.select(f.c.id, f.c.speaker, f.c.source_event_id))
        if (r.speaker and norm(r.speaker) in names) or r.source_event_id in events
    }
    for agent, ks in agents_of.items():
        facts |= {r[0] for r in conn.execute(sa.select(f.c.id).where(f.c.agent_id == agent, _any_in(f.c.entity_key, ks)))}
        facts |= {r[0] for r in conn.execute(sa.select(lk.c.fact_id).where(lk.c.agent_id == agent, _any_in(lk.c.entity_key, ks)))}

    # the record of a deterministic add_* call (speaker = source) lists her facts' text
    events |= {
        r.id
        for r in conn.execute(
            sa.select(ev.c.id, ev.c.speaker, ev.c.source).where(
                _any_in(ev.c.id, {r[0] for r in conn.execute(sa.select(f.c.source_event_id).where(_any_in(f.c.id, facts))) if r[0]})
            )
        )
        if r.speaker == r.source
    }

    # derived rows that quote her, found before the facts go
    clusters = {r[0] for r in conn.execute(sa.select(f.c.cluster_id).where(_any_in(f.c.id, facts))) if r[0]}
    others = {
        (r.agent_id, r.entity_key)
        for r in conn.execute(sa.select(lk.c.agent_id, lk.c.entity_key).where(_any_in(lk.c.fact_id, facts)))
    } - keys
    metas = {
        r.id
        for r in conn.execute(sa.select(mo.c.id, mo.c.supporting_event_ids, mo.c.supporting_fact_ids))
        if events.intersection(r.supporting_event_ids or ()) or facts.intersection(r.supporting_fact_ids or ())
    }
    key_names = {k for _, k in keys}
    # her sessions: her threads, and the sessions where nobody but her spoke
    speakers_of: dict[str, set[bool]] = {}
    for r in conn.execute(sa.select(ev.c.id, ev.c.session_id)):
        if r.session_id is not None:
            speakers_of.setdefault(r.session_id, set()).add(r.id in events)
    sessions = threads | {sid for sid, whose in speakers_of.items() if whose == {True}}
    mention = re.compile("|".join(rf"\b{re.escape(n)}\b" for n in sorted(names)) or "(?!)")
    observations = {
        r.id
        for r in conn.execute(
            sa.select(so.c.id, so.c.session_id, so.c.source_message_ids, so.c.entities_mentioned, so.c.content)
        )
        if r.session_id in sessions
        or events.intersection(r.source_message_ids or ())
        or key_names.intersection(m for m in (r.entities_mentioned or ()) if isinstance(m, str))
        or mention.search(norm(r.content or ""))
    }
    intentions = {
        r.id
        for r in conn.execute(sa.select(it.c.id, it.c.source_context, it.c.trigger_condition, it.c.intended_action))
        if r.source_context in {sid[:32] for sid in sessions}
        or mention.search(norm(f"{r.trigger_condition} {r.intended_action}"))
    }

    if facts:
        purge_facts(conn, None, sorted(facts))
    for cond in _in(mo.c.id, metas):
        conn.execute(sa.delete(mo).where(cond))
    for cond in _in(so.c.id, observations):
        conn.execute(sa.delete(so).where(cond))
    for cond in _in(it.c.id, intentions):
        conn.execute(sa.delete(it).where(cond))
    for batch in reads.chunked(sorted(clusters)):
        conn.execute(sa.update(f).where(f.c.cluster_id.in_(batch)).values(cluster_id=None))
        conn.execute(sa.delete(cl).where(cl.c.id.in_(batch)))
    for batch in reads.chunked(sorted(events)):
        conn.execute(sa.update(f).where(f.c.source_event_id.in_(batch)).values(source_event_id=None))
        conn.execute(sa.delete(ev).where(ev.c.id.in_(batch)))
    for agent, ks in agents_of.items():
        for batch in reads.chunked(sorted(ks)):
            conn.execute(sa.delete(rel).where(rel.c.agent_id == agent, sa.or_(rel.c.source_entity_key.in_(batch), rel.c.target_entity_key.in_(batch))))
            conn.execute(sa.delete(lk).where(lk.c.agent_id == agent, lk.c.entity_key.in_(batch)))
            conn.execute(sa.delete(al).where(al.c.agent_id == agent, al.c.canonical_entity_key.in_(batch)))
            conn.execute(sa.delete(e).where(e.c.agent_id == agent, e.c.canonical_key.in_(batch)))
    if names:
        for batch in reads.chunked(sorted(names)):
            conn.execute(sa.delete(al).where(al.c.alias.in_(batch)))
    for agent, key in sorted(others):
        conn.execute(
            sa.update(e).where(e.c.agent_id == agent, e.c.canonical_key == key).values(summary_text=None, summary_refreshed_at=None)
        )
    # the store threads the knowledge layer opened for her sessions (event records live in them)
    return (
        [("fact", fid) for fid in sorted(facts)]
        + [("message", eid) for eid in sorted(events)]
        + [("thread", sid) for sid in sorted(sessions - threads)]
    )


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
