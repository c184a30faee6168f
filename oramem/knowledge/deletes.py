"""Deletes in the knowledge layer (KC-3.6): ``delete`` of a fact's chain, ``delete_all`` of an
agent, the deletion hook through which store-side deletes reach the knowledge tables (SC-8.5),
and erasing an actor (``forget``, SC-8.6, KC-3.10).

Erasure runs inside the store's ``forget`` transaction, from the knowledge layer's deletion hook,
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
her; feature-check defect 3); the summaries of entities linked to one of her facts are
cleared (the entity is its scope's; the next summary refresh rewrites the text). Background jobs run per scope (KC-6.0), so derived text of
another scope cites only that scope's rows; the provenance match is the backstop for rows
written before the user dimension. The agent's shared knowledge and other users' rows are
never matched by name or by thread.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Iterator, Optional, Protocol

import sqlalchemy as sa

from ..requests import DeletionEvent, ErasureReport, RecordRewrite
from . import checks
from .db import queries as reads
from .db.schema import KGTables
from .ownership import user_rows
from .read.facts import chain_ids
from .runtime import KnowledgeRuntime
from .text import to_utc, validate_agent_id
from .write import commit as commit_mod

__all__ = ["erase", "apply_store_delete", "OracleEraser", "purge_facts", "purger", "delete_chain", "delete_agent", "deletion_hook",
           "strip_given_events",
           "delete_fact_async", "delete_agent_async", "forget_async"]


class PurgeFacts(Protocol):
    """:func:`purge_facts` bound to a runtime (:func:`purger`)."""

    def __call__(self, conn: sa.Connection, agent_id: Optional[str], ids: list[str], *,
                 given_events: bool = True) -> list[RecordRewrite]: ...


@contextlib.contextmanager
def _deleted_rows(conn: sa.Connection, t: KGTables) -> Iterator[dict[str, int]]:
    """The rows the ``DELETE`` statements run on ``conn`` inside the block removed, per
    knowledge table (each statement's row count). Not a difference of table sizes: on
    Oracle (read committed) two counts are two statements, and another session's commit
    between them would be in the difference (a store-side delete's PL/SQL hook; knowledge
    writes, jobs and other erasures wait for the erasure's table lock, :meth:`OracleEraser.lock`)."""
    gone = {tb.name: 0 for tb in t.all_agent_tables() + [t.agent, t.job]}

    def after_execute(_conn: Any, cursor: Any, _statement: Any, _params: Any, context: Any, _many: Any) -> None:
        stmt = getattr(getattr(context, "compiled", None), "statement", None)
        name = getattr(stmt.table, "name", None) if isinstance(stmt, sa.Delete) else None
        if name in gone and (cursor.rowcount or 0) > 0:
            gone[name] += int(cursor.rowcount)

    sa.event.listen(conn, "after_cursor_execute", after_execute)
    try:
        yield gone
    finally:
        sa.event.remove(conn, "after_cursor_execute", after_execute)


def erase(conn: sa.Connection, t: KGTables, event: DeletionEvent, purge_facts: PurgeFacts) -> ErasureReport:
    """Erase the actor of a ``forget`` event; rows deleted per table (this erasure's own
    deletes: :func:`_deleted_rows`; a forget's store cascade deletes no knowledge row, as
    ``oramem_kg_jobs.on_store_delete`` leaves them to this eraser on Oracle) and the store
    records to delete with them."""
    records: list[tuple[str, str]] = []
    with _deleted_rows(conn, t) as gone:
        words = _actor_words(conn, t, event)  # read before her rows go
        for agent in event.agent_ids:
            for table in t.all_agent_tables() + [t.agent, t.job]:
                conn.execute(sa.delete(table).where(table.c.agent_id == agent))
        if event.user_ids:
            records = _erase_user(conn, t, event, purge_facts)
        for batch in reads.chunked(list(event.thread_ids)):  # her private threads, gone whole (SC-13.3)
            _leave_removed_threads(conn, t, event, batch)
        _strip_queued_context(conn, t, event, words)
    return ErasureReport(dict(gone), tuple(records))


def _erase_user(conn: sa.Connection, t: KGTables, event: DeletionEvent, purge_facts: PurgeFacts,
                *, facts_of_events: bool = True) -> list[tuple[str, str]]:
    """Erase the users of ``event`` (KC-3.10); returns the knowledge store records to delete.
    ``facts_of_events=False`` (a profile cascade, whose deletion hook cannot delete store
    records): the facts of an erased event of another scope (a shared event in her private
    thread) stay, with ``source_event_id`` cleared, as after ``delete_thread``; her own facts
    are among the cascade's records."""
    ev, f, e, al, rel, lk = t.event, t.fact, t.entity, t.alias, t.relationship, t.link
    so, it, mo, cl = t.session_observation, t.intention, t.meta_observation, t.cluster
    users = set(event.user_ids)

    def mine(table: Any) -> Any:
        return reads.any_in(table.c.user_id, users)

    # her events and facts (her scope, plus knowledge rows whose store record was hers) and
    # the derived rows of any scope that cite them, found before her facts go: the selection
    # a scoped export writes too (oramem.knowledge.ownership)
    sel = user_rows(conn, t, users, event.records, facts_of_events=facts_of_events)
    events, facts, clusters, metas, observations = sel.events, sel.facts, sel.clusters, sel.metas, sel.observations

    carried = _keys_of(conn, t, facts)  # read before her facts go
    if facts:
        # the add_knowledge events listing her facts are hers and go below; one of another
        # scope listing a fact erased with her (a shared fact learnt from her message) is
        # left as it is: forget erases what ``oramem export --user`` selects
        # (ownership.user_rows), which does not select it (KC-3.6 [ext], del48: a gap)
        purge_facts(conn, None, sorted(facts), given_events=False)
    _forget_first_sightings(conn, t, events, carried)
    # summaries written from her facts: cleared (stale, so the next refresh rewrites them
    # from what is left); her own entities go below
    for agent, user, key in sorted(sel.summaries, key=repr):
        conn.execute(sa.update(e).where(reads.owned(e, agent, user), e.c.canonical_key == key, e.c.summary_text.is_not(None))
                     .values(summary_text=None, summary_refreshed_at=None))
    for cond in reads.in_batches(mo.c.id, metas):
        conn.execute(sa.delete(mo).where(cond))
    for cond in reads.in_batches(so.c.id, observations):
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
    # entities and aliases of another scope that only her erased events made (their
    # provenance), found before her rows went: a shared entity named in her private thread
    for table, ids in ((al, sel.aliases), (e, sel.entities)):
        for cond in reads.in_batches(table.c.id, ids):
            conn.execute(sa.delete(table).where(cond))
    # and the display names her erased events extended go back to the name before (KC-4.9)
    for entity_id, name in sorted(sel.renames.items()):
        conn.execute(sa.update(e).where(e.c.id == entity_id).values(display_name=name))
    # her knowledge store records; threads are the store's (a thread is a conversation, not
    # a grant: its row and other users' records in it are never erased from here)
    return [("fact", fid) for fid in sorted(facts)] + [("message", eid) for eid in sorted(events)]


def _keys_of(conn: sa.Connection, t: KGTables, facts: set[str]) -> set[tuple[str, str]]:
    """``(agent_id, attribute_key)`` of the attribute keys ``facts`` carry."""
    f = t.fact
    return {(r[0], r[1]) for cond in reads.in_batches(f.c.id, facts)
            for r in conn.execute(sa.select(f.c.agent_id, f.c.attribute_key).where(cond, f.c.attribute_key.is_not(None)))}


def _forget_first_sightings(conn: sa.Connection, t: KGTables, events: set[str], carried: set[tuple[str, str]]) -> None:
    """The attribute registry is the agent's vocabulary, one row per key for all its users
    (KC-3.7), but a key's first sighting keeps that message's raw key and its event's id
    (KC-4.16: ``example_raw_key``, ``reason``). A row first seen in one of the erased
    ``events``, or whose key her erased facts ``carried`` (her first sighting's event may be
    gone already, with its thread or a purge): it goes when no fact of the agent uses the key
    any more and it is as the write pipeline made it (no operator set its policy or TTL, nor
    listed it in ``extra_attribute_keys``); else it stays (the key is the other scopes' vocabulary too), and loses the two
    when they are hers or their event is gone. ``reason`` is a CLOB on Oracle, so it is
    compared here, not in SQL."""
    ev, reg, f = t.event, t.registry, t.fact
    agents = {agent for agent, _ in carried}
    agents |= {r[0] for cond in reads.in_batches(ev.c.id, events) for r in conn.execute(sa.select(ev.c.agent_id).where(cond))}
    prefix = "extracted from event "
    for cond in reads.in_batches(reg.c.agent_id, agents):
        rows = conn.execute(sa.select(reg.c.id, reg.c.agent_id, reg.c.key, reg.c.reason, reg.c.proposed_by,
                                      reg.c.conflict_policy, reg.c.ttl_days).where(cond)).all()
        for rid, agent, key, reason, proposed_by, policy, ttl_days in rows:
            first = reason[len(prefix):] if isinstance(reason, str) and reason.startswith(prefix) else None
            if first not in events and (agent, key) not in carried:
                continue
            # a row as the write pipeline made it (not one an operator configured) of a key no
            # fact uses any more goes
            made = (proposed_by, policy, ttl_days) == ("llm", "supersede", None)
            if made and conn.execute(sa.select(f.c.id).where(f.c.agent_id == agent, f.c.attribute_key == key)
                                     .limit(1)).first() is None:
                conn.execute(sa.delete(reg).where(reg.c.id == rid))
            elif first is not None and (first in events or conn.execute(
                    sa.select(ev.c.id).where(ev.c.id == first)).first() is None):
                conn.execute(sa.update(reg).where(reg.c.id == rid).values(example_raw_key=None, reason=None))


class OracleEraser:
    """``forget`` on Oracle (``SyncOracleEngine.register_erasure``): the engine takes
    :meth:`snapshot` before the actor's cascade (whose PL/SQL deletion hook,
    ``oramem_kg_jobs.on_store_delete``, leaves a forget's knowledge rows to this eraser, as
    the SQLite hook does: her events and facts are still there to match what cites them) and
    calls :meth:`erase` after it, both inside its transaction, after :meth:`lock` (the
    erasure's first statement, before the cascade); a user's profile cascade
    calls :meth:`erase_cascade` after the store's cascade the same way:
    SQLAlchemy reaches the transaction's connection through the knowledge layer's Oracle
    backend (``oramem.oracle.sql_access.OracleAccess._connect``). The counts are the rows gone in both steps.
    Static-checked, not run against Oracle."""

    def __init__(self, sa_engine: sa.Engine, tables: KGTables, purge_facts: PurgeFacts) -> None:
        self._engine, self._tables, self._purge_facts = sa_engine, tables, purge_facts
        #: one eraser per store's knowledge tables: a newer one replaces an older one
        self.key = ("knowledge", tables.store_id)

    def lock_statement(self) -> str:
        """``LOCK TABLE "<ID>_KG_AGENT" IN EXCLUSIVE MODE`` (the name quoted by the dialect)."""
        name = self._engine.dialect.identifier_preparer.format_table(self._tables.agent)
        return f"LOCK TABLE {name} IN EXCLUSIVE MODE"

    def lock(self) -> None:
        """The erasure's first statement, before the store's cascade deletes anything
        (KC-3.10 on Oracle, read committed): the agents' lock table in EXCLUSIVE mode. Every
        knowledge write's commit (``OracleAccess.write``), reprocess, background job and
        knowledge delete takes its agent's row of this table (``INSERT`` or ``SELECT ... FOR
        UPDATE``, a row exclusive or row share table lock) before it reads the erasure log or
        writes a row, and EXCLUSIVE conflicts with both. So a commit in flight when the
        erasure starts finishes first (the erasure's reads and deletes, which come after the
        lock, see its rows and delete them), and one that starts later waits until the
        erasure committed, then sees its tombstone (``write.erasures.check``) or its event
        gone (``write.commit._check_event_left``) and stores nothing. The whole table, not the
        agents' rows: a write for an agent with no row yet inserts its row, which a row lock
        taken by the erasure could not have covered. Held until the erasure commits or rolls
        back; no wait limit (Oracle waits until the table is available). Static-checked, not
        run against Oracle."""
        with self._engine.connect() as conn:
            conn.execute(sa.text(self.lock_statement()))

    def snapshot(self) -> dict[str, int]:
        """Nothing to take (the engine's eraser protocol asks for one): :func:`erase` counts
        its own deletes."""
        return {}

    def erase(self, event: DeletionEvent, before: dict[str, int]) -> "ErasureReport | None":
        if event.memory_store_id.upper() != self._tables.store_id:
            return None
        with self._engine.connect() as conn:
            return erase(conn, self._tables, event, self._purge_facts)

    def erase_cascade(self, event: DeletionEvent) -> None:
        """A user's profile cascade on Oracle (SC-13.3), in its transaction, after the store's
        cascade, whose PL/SQL hook deleted no knowledge row (``in_reason => 'erase'``): all
        the SQLite hook does for it (:func:`apply_store_delete`). Her scope's rows and what
        cites her events and facts are matched first, while those are still here; the
        store records ``_erase_user`` would name are the cascade's own, or a shared fact of
        her private thread, which stays."""
        if event.memory_store_id.upper() != self._tables.store_id or not event.user_ids:
            return
        with self._engine.connect() as conn:
            apply_store_delete(conn, self._tables, event, self._purge_facts)


def strip_given_events(conn: sa.Connection, t: KGTables, ids: list[str]) -> list[RecordRewrite]:
    """KC-3.6 [ext] (del48): the events ``add_knowledge`` calls synthesised that list one of
    the facts ``ids`` (``trace_json`` ``given``, ``write.commit.given_of``: the fact it was
    stored as, or the current fact it confirmed) lose that fact's line, before the facts go:
    the event row's text is rewritten from the lines left, its vector dropped (it was the
    embedding of the old text; no embedder runs inside a delete) and its ``given`` updated; an
    event with no line left is deleted (its facts' ``source_event_id`` cleared). An event of a
    conversation message (no ``given``) is the conversation and stays as it is. Returns the
    events' store ``message`` records to rewrite the same way (their owner: the event's scope)."""
    ev, f = t.event, t.fact
    gone = set(ids)
    candidates: set[str] = set()
    # a later call that only confirmed a fact (NOOP) lists it too; a NOOP is the only write
    # that raises reinforcement_count and it sets last_confirmed_at to its event's time, so
    # only a confirmed fact needs a look at its scope's events, and only at those written
    # between the fact and its last confirmation (a never-confirmed fact, the usual case,
    # costs no scan of the scope's events)
    window: dict[tuple[str, Optional[str]], tuple[Any, Any]] = {}
    for cond in reads.in_batches(f.c.id, sorted(gone)):
        for source, agent, user, created, confirmed, count in conn.execute(
                sa.select(f.c.source_event_id, f.c.agent_id, f.c.user_id, f.c.created_at, f.c.last_confirmed_at,
                          f.c.reinforcement_count).where(cond)):
            if source is not None:
                candidates.add(source)
            if not count or confirmed is None:
                continue
            key = (agent, user)
            lo, hi = window.get(key, (created, confirmed))
            window[key] = (min(lo, created), max(hi, confirmed))
    cols = (ev.c.id, ev.c.agent_id, ev.c.user_id, ev.c.trace_json)
    rows: dict[str, tuple[Any, ...]] = {}
    for cond in reads.in_batches(ev.c.id, sorted(candidates)):
        rows.update((r[0], tuple(r)) for r in conn.execute(sa.select(*cols).where(cond, ev.c.trace_json.is_not(None))))
    for (agent, user), (lo, hi) in sorted(window.items(), key=repr):
        rows.update((r[0], tuple(r)) for r in conn.execute(sa.select(*cols).where(
            reads.owned(ev, agent, user), ev.c.created_at >= lo, ev.c.created_at <= hi, ev.c.trace_json.is_not(None))))
    out: list[RecordRewrite] = []
    for eid, agent, user, trace in sorted(rows.values(), key=lambda r: str(r[0])):
        given = trace.get(commit_mod.GIVEN) if isinstance(trace, dict) else None
        if not isinstance(given, dict):
            continue
        lines, fids = list(given.get("lines") or []), list(given.get("fact_ids") or [])
        if len(lines) != len(fids) or not any(fid in gone for fid in fids):
            continue
        kept = [(line, fid) for line, fid in zip(lines, fids) if fid not in gone]
        if not kept:
            conn.execute(sa.update(f).where(f.c.source_event_id == eid).values(source_event_id=None))
            conn.execute(sa.delete(ev).where(ev.c.id == eid))
            out.append(RecordRewrite("message", eid, agent, user, None))
            continue
        text = "\n".join(line for line, _ in kept)
        new_trace = {**trace, commit_mod.GIVEN: {"lines": [x for x, _ in kept], "fact_ids": [y for _, y in kept]}}
        conn.execute(sa.update(ev).where(ev.c.id == eid).values(text=text, trace_json=new_trace, embedding_vec=None))
        out.append(RecordRewrite("message", eid, agent, user, text))
    return out


def purge_facts(rt: KnowledgeRuntime, conn: sa.Connection, agent_id: Optional[str], ids: list[str], *,
                given_events: bool = True) -> list[RecordRewrite]:
    """Remove facts with their links and evidenced edges, and the meta observations citing
    them (obs47); references stop naming them. The ``add_knowledge`` events listing them lose
    their lines (:func:`strip_given_events`, del48): returns those events' store records to
    rewrite, which the caller applies in the same transaction (``given_events=False``: an
    erasure's, which leaves them, :func:`_erase_user`)."""
    t = rt.tables
    f, lk, r_ = t.fact, t.link, t.relationship
    keys: set[tuple[str, Optional[str], str]] = set()
    own = ids
    if agent_id is not None:
        own = [r[0] for cond in reads.in_batches(f.c.id, sorted(set(ids)))
               for r in conn.execute(sa.select(f.c.id).where(cond, f.c.agent_id == agent_id))]
    rewrites = strip_given_events(conn, t, own) if given_events else []
    for batch in reads.chunked(sorted(set(ids))):
        cond_f: sa.ColumnElement[bool] = f.c.id.in_(batch)
        if agent_id is not None:
            cond_f = sa.and_(cond_f, f.c.agent_id == agent_id)
        keys.update((a, u, k) for a, u, k in conn.execute(
            sa.select(lk.c.agent_id, lk.c.user_id, lk.c.entity_key).where(lk.c.fact_id.in_(batch))))
        # the summaries written from these facts: their entities' (KC-6.7) and their clusters'
        # (KC-6.2), before the links and facts go; for every caller: delete, the erasers, and
        # the store-side deletes the deletion hook sees (a fact record deleted or purged by its
        # TTL left both naming the fact; red35)
        reads.clear_summaries_citing(conn, t, batch)
        reads.clear_cluster_summaries(conn, t, batch)
        # and the observations written from them (KC-6.3, KC-6.4 [ext], obs47): taking only
        # the id out of supporting_fact_ids left the title and text quoting the fact to every
        # reader of the scope; the next job run writes them again from the facts left
        reads.delete_observations_citing(conn, t, batch, agent_id)
        conn.execute(sa.delete(lk).where(lk.c.fact_id.in_(batch)))
        conn.execute(sa.delete(r_).where(r_.c.evidence_fact_id.in_(batch)))
        conn.execute(sa.update(f).where(f.c.supersedes_fact_id.in_(batch)).values(supersedes_fact_id=None))
        conn.execute(sa.delete(f).where(cond_f))
    now = to_utc(rt.clock())
    by_scope: dict[tuple[str, Optional[str]], set[str]] = {}
    for a, u, k in keys:
        by_scope.setdefault((a, u), set()).add(k)
    for (a, u), ks in by_scope.items():
        commit_mod.recount(conn, t, a, ks, now, u)
    return rewrites


def purger(rt: KnowledgeRuntime) -> PurgeFacts:
    """:func:`purge_facts` bound to ``rt``, as :func:`erase` and :class:`OracleEraser` call it."""
    return functools.partial(purge_facts, rt)


def delete_chain(rt: KnowledgeRuntime, agent_id: str, fact_id: str, user_id: Optional[str]) -> bool:
    """``KnowledgeMemory.delete``: the fact's whole version chain of the scope ``user_id``
    (KC-3.7), with its links, evidenced edges and store records, in one transaction."""
    with rt.backend.lock():
        with rt.backend.read() as conn:
            ids = chain_ids(conn, rt.tables, agent_id, fact_id, user_id, own=True)
        if not ids:
            return False
        with rt.backend.write("knowledge delete", agent_id) as conn:
            # clears the summaries citing them too (KC-6.7, red33), and their lines from the
            # add_knowledge events listing them (del48)
            rewrites = purge_facts(rt, conn, agent_id, ids)
            for fid in ids:  # same transaction (the deletion hook finds nothing left); own records only
                commit_mod.delete_own_record(rt.store, "fact", fid, agent_id, user_id)
            for rw in rewrites:  # the events' records: the lines left without a vector (no embedder needed), or deleted
                if rw.content is None:
                    commit_mod.delete_own_record(rt.store, rw.record_type, rw.record_id, agent_id, rw.user_id)
                else:
                    commit_mod.update_own_text(rt.store, rw.record_type, rw.record_id, agent_id, rw.user_id, rw.content)
        return True


def delete_agent(rt: KnowledgeRuntime, agent_id: str) -> int:
    """``KnowledgeMemory.delete_all``: every row of the agent in the knowledge tables, its
    queued writes and its knowledge store records, in one transaction; returns the facts."""
    t = rt.tables
    with rt.backend.lock():
        with rt.backend.read() as conn:
            # (id, user) of each row: a row's store record is the one of its agent and user
            # (commit.delete_own_record), not another scope's record under its id
            facts = conn.execute(sa.select(t.fact.c.id, t.fact.c.user_id).where(t.fact.c.agent_id == agent_id)).all()
            events = conn.execute(sa.select(t.event.c.id, t.event.c.user_id).where(t.event.c.agent_id == agent_id)).all()
        with rt.backend.write("knowledge delete_all", agent_id) as conn:
            for table in t.all_agent_tables():
                conn.execute(sa.delete(table).where(table.c.agent_id == agent_id))
            # queued messages of the agent go too (a pending one would bring it back)
            conn.execute(sa.delete(t.job).where(t.job.c.agent_id == agent_id))
            for fid, user in facts:  # same transaction
                commit_mod.delete_own_record(rt.store, "fact", fid, agent_id, user)
            for eid, user in events:
                commit_mod.delete_own_record(rt.store, "message", eid, agent_id, user)
        return len(facts)


async def delete_fact_async(rt: KnowledgeRuntime, agent_id: str, fact_id: str, user_id: Optional[str]) -> bool:
    """``KnowledgeMemory.delete_async``: the scope checked, then :func:`delete_chain` on the pool."""
    user_id, _ = checks.scoped(rt, agent_id, user_id)
    checks.row_id(fact_id, "fact_id", checks.FACT_ID_HINT)
    return await rt.in_thread(delete_chain, rt, agent_id, fact_id, user_id)


async def delete_agent_async(rt: KnowledgeRuntime, agent_id: str) -> int:
    """``KnowledgeMemory.delete_all_async``: the agent id checked, then :func:`delete_agent`."""
    validate_agent_id(agent_id)
    rt.now()
    return await rt.in_thread(delete_agent, rt, agent_id)


async def forget_async(rt: KnowledgeRuntime, user_id: Optional[str], agent_id: Optional[str], names: Any) -> dict[str, int]:
    """``KnowledgeMemory.forget_async``: a user by her id only (``names`` is refused, KC-3.10),
    or an agent; the store's ``forget`` runs :func:`erase` from the deletion hook."""
    rt.now()
    if names is not None:
        raise ValueError(
            "forget no longer matches names (KC-3.10: a name may belong to another person or tenant); "
            "knowledge is erased by its user_id: write a user's messages with write(..., user_id=...) "
            "and call forget(user_id=...)"
        )
    if agent_id is not None:
        validate_agent_id(agent_id)
    user_id = reads.check_user_id(user_id)
    report = await rt.in_thread(rt.store.forget, user_id=user_id, agent_id=agent_id)
    # KC-3.10 / KC-5.10: the erased actor's cached directives (on Oracle no Python deletion
    # hook runs: the PL/SQL twin erases the rows, this drops the instance's copy)
    rt.drop_cached(agent_ids=() if agent_id is None else (agent_id,), user_ids=() if user_id is None else (user_id,))
    return report


def deletion_hook(rt: KnowledgeRuntime, dbapi_conn: Any, event: Any) -> Any:
    """SC-8.5: store-side deletes, cascades and purges reach the knowledge tables in the
    same transaction (KC-3.6). SQLite only: on Oracle the PL/SQL twin runs."""
    t = rt.tables
    if event.memory_store_id.upper() != t.store_id:
        return
    # KC-3.10 / KC-5.10: an actor's erasure (forget, a profile cascade) takes the instance's
    # cached directives of her (its) scopes with her rows; a plain delete or purge keeps them
    if event.reason in ("forget", "cascade"):
        rt.drop_cached(agent_ids=event.agent_ids, user_ids=event.user_ids)
    with rt.backend.hook_connection(dbapi_conn) as conn:
        if event.reason == "forget":
            return erase(conn, t, event, purger(rt))
        # the add_knowledge events that listed a deleted fact: their store records are
        # rewritten by the store in this transaction (SC-8.5 [ext], del48)
        return tuple(apply_store_delete(conn, t, event, purger(rt)))


def apply_store_delete(conn: sa.Connection, t: KGTables, event: DeletionEvent, purge: PurgeFacts) -> list[RecordRewrite]:
    """What a store-side delete, cascade or purge (not a ``forget``) takes from the knowledge
    tables: the SQLite deletion hook's work, and on Oracle the knowledge eraser's for a
    user's profile cascade (:meth:`OracleEraser.erase_cascade`), whose PL/SQL hook leaves
    it every row (``oramem_store.delete_record_json`` ``in_reason => 'erase'``). Returns the
    store records of the ``add_knowledge`` events that listed a deleted fact, to rewrite
    (:func:`strip_given_events`; the SQLite engine applies them in the delete's transaction)."""
    rewrites: list[RecordRewrite] = []
    fact_ids = _own_rows(conn, t.fact, event, "fact")
    msg_ids = _own_rows(conn, t.event, event, "message")
    words = _actor_words(conn, t, event)  # an actor's cascade: read before its rows go
    if event.reason == "cascade" and event.user_ids:
        # SC-13.3: a user's profile cascade erases her as ``forget`` does (KC-3.10): the
        # rows of her scope that have no store record (entities, aliases, edges,
        # intentions, observations, clusters, queued writes) and what cites her rows
        # (found first, while her events and facts are still there to match)
        _erase_user(conn, t, event, purge, facts_of_events=False)
    if fact_ids:
        rewrites = purge(conn, None, fact_ids)
    ev = t.event
    if event.thread_ids:
        for batch in reads.chunked(list(event.thread_ids)):
            msg_ids.extend(r[0] for r in conn.execute(
                sa.select(ev.c.id).where(ev.c.session_id.in_(batch), _of_removed_thread(ev, event))))
            _leave_removed_threads(conn, t, event, batch)
    for batch in reads.chunked(sorted(set(msg_ids))):
        conn.execute(sa.update(t.fact).where(t.fact.c.source_event_id.in_(batch)).values(source_event_id=None))
        conn.execute(sa.delete(ev).where(ev.c.id.in_(batch)))
    for agent in event.agent_ids:
        for table in t.all_agent_tables():
            conn.execute(sa.delete(table).where(table.c.agent_id == agent))
        conn.execute(sa.delete(t.job).where(t.job.c.agent_id == agent))
    _strip_queued_context(conn, t, event, words)
    # an event the delete took itself (its record deleted, its thread removed) needs no rewrite
    taken = {("message", m) for m in msg_ids} | set(event.records)
    return [rw for rw in rewrites if (rw.record_type, rw.record_id) not in taken]


def _own_rows(conn: sa.Connection, table: sa.Table, event: DeletionEvent, record_type: str) -> list[str]:
    """The ids of the deleted ``record_type`` records whose knowledge row (``table``) goes
    with them: a row goes only with its own store record, of the same agent and user.
    Store ids are unique per record type only and callers may choose them (SC-4.3), so
    Bob's ``message`` record may carry the id of Alice's event restored without its
    record: deleting or purging his record leaves her event. A record whose owner the
    event does not give (``scopes`` empty: an older event) is matched by id alone."""
    scoped = len(event.scopes) == len(event.records)
    ids = [rid for rtype, rid in event.records if rtype == record_type]
    owners = {rid: scope for (rtype, rid), scope in zip(event.records, event.scopes) if rtype == record_type} if scoped else {}
    if not owners:
        return ids
    other: set[str] = set()
    for cond in reads.in_batches(table.c.id, sorted(owners)):
        for rid, agent, user in conn.execute(sa.select(table.c.id, table.c.agent_id, table.c.user_id).where(cond)):
            if owners[rid] != (agent, user):
                other.add(rid)
    return [rid for rid in ids if rid not in other]


def _leave_removed_threads(conn: sa.Connection, t: KGTables, event: DeletionEvent, batch: list[str]) -> None:
    """The knowledge rows naming threads removed whole (``batch``: ids of ``event.thread_ids``)
    that go with them (:func:`_of_removed_thread`), for a cascade and a ``forget`` alike
    (SC-13.3: ``forget`` is the profile's cascade plus the erasure)."""
    so, it, j = t.session_observation, t.intention, t.job
    # what was noted in the deleted conversation goes with it: its session observations, and
    # the intentions extracted in it (source_context holds the whole session id, KC-3.7:
    # another session sharing a prefix is not touched)
    conn.execute(sa.delete(so).where(so.c.session_id.in_(batch), _of_removed_thread(so, event)))
    conn.execute(sa.delete(it).where(it.c.source_context.in_(batch), _of_removed_thread(it, event)))
    # the thread's queued background writes go too: processed later, they would bring the
    # deleted conversation back (a worker holding one of them loses its lease check and
    # rolls back)
    conn.execute(sa.delete(j).where(j.c.session_id.in_(batch), _of_removed_thread(j, event)))
    # another user's queued write into the thread stays (it is his), but not the turns of the
    # removed conversation copied into it as its context: _strip_queued_context


#: a queued write's ``last_error`` once an erasure took entries out of its context (KC-3.10)
ERASED_ERROR = ("the error of an earlier attempt was cleared by an erasure: that attempt's prompt held the erased "
                "user's (or agent's) words, and its error could quote them")

#: a text of the erased actor this long or longer is found inside a queued write's context
#: entry too ("Alice: <her message>"); a shorter one ("ok") only as the whole entry
_CONTAINED_MIN_CHARS = 12


def _norm_words(text: str) -> str:
    return " ".join(text.casefold().split())


def _actor_words(conn: sa.Connection, t: KGTables, event: DeletionEvent) -> set[str]:
    """An actor's cascade or ``forget``: the texts of the erased actor's messages the knowledge
    tables hold (its events, the events of its erased message records, its queued writes'
    messages), normalised, read before they go; empty when no queued write of another scope
    carries a context (``recent_messages``) they could be copied into."""
    if event.reason not in ("cascade", "forget") or not (event.user_ids or event.agent_ids):
        return set()
    ev, j = t.event, t.job
    if not _contexts(conn, t, event):
        return set()
    if event.user_ids:
        users = set(event.user_ids)
        erased = {rid for rtype, rid in event.records if rtype == "message"}
        ev_cond = sa.or_(reads.any_in(ev.c.user_id, users), sa.and_(reads.any_in(ev.c.id, erased), ev.c.user_id.is_(None)))
        job_cond = reads.any_in(j.c.user_id, users)
    else:
        ev_cond = reads.any_in(ev.c.agent_id, set(event.agent_ids))
        job_cond = reads.any_in(j.c.agent_id, set(event.agent_ids))
    texts = [r[0] for r in conn.execute(sa.select(ev.c.text).where(ev_cond))]
    texts += [p.get("message") for (p,) in conn.execute(sa.select(j.c.payload_json).where(job_cond))
              if isinstance(p, dict)]
    return {_norm_words(x) for x in texts if isinstance(x, str) and x.strip()}


def _contexts(conn: sa.Connection, t: KGTables, event: DeletionEvent) -> list[Any]:
    """The queued writes of other scopes that carry a context: ``(id, status, session_id,
    payload, last_error)`` of every job not ``done`` (a done job keeps no message or context)
    whose payload has ``recent_messages``, the erased actor's own jobs aside (they go)."""
    j = t.job
    own = (reads.any_in(j.c.user_id, set(event.user_ids)) if event.user_ids
           else reads.any_in(j.c.agent_id, set(event.agent_ids)))
    rows = conn.execute(sa.select(j.c.id, j.c.status, j.c.session_id, j.c.payload_json, j.c.last_error)
                        .where(j.c.status != "done", sa.or_(sa.not_(own), j.c.user_id.is_(None))
                               if event.user_ids else sa.not_(own))).all()
    return [r for r in rows if isinstance(r[3], dict) and r[3].get("recent_messages")]


def _strip_queued_context(conn: sa.Connection, t: KGTables, event: DeletionEvent, words: set[str]) -> None:
    """KC-3.10: after an actor's cascade or ``forget``, no queued write keeps the erased
    actor's words in its context (``recent_messages``: turns its writer copied from a
    conversation, plain strings that name no speaker). A queued write of another scope stays
    (its message is its writer's, and runs on what remains), but in a thread that held one of
    the actor's records (``event.actor_thread_ids``, removed whole or shared) its whole context
    goes: the turns cannot be told apart, and each is a copy (the other writers' turns stay
    in the store as their records). Elsewhere an entry goes when it is one of the actor's
    message texts (:func:`_actor_words`). A write a worker is running with the old context
    loses its claim (back to ``pending``, the attempt not counted): its commit finds the job
    no longer its own and rolls back (``queue.mark_done``, ``LostClaim``), and the next
    attempt reads the context without her words. A job that loses context entries loses its
    ``last_error`` text too (:data:`ERASED_ERROR`): its earlier attempts sent those words to the
    model, and an error may quote them (a provider's own exception; the layer's errors quote no
    reply, ``errors.plain_text``; red24)."""
    if event.reason not in ("cascade", "forget") or not (event.user_ids or event.agent_ids):
        return
    threads = set(event.actor_thread_ids) | set(event.thread_ids)
    j = t.job
    for jid, status, session_id, payload, last_error in _contexts(conn, t, event):
        context = list(payload.get("recent_messages") or [])
        if session_id in threads:
            kept: list[Any] = []
        else:
            kept = [m for m in context if not (isinstance(m, str) and _is_theirs(_norm_words(m), words))]
        if kept == context:
            continue
        values: dict[str, Any] = {"payload_json": {**payload, "recent_messages": kept}}
        if last_error is not None:
            values["last_error"] = ERASED_ERROR
        if status == "running":
            values.update(status="pending", worker_id=None, lease_until=None,
                          attempts=sa.case((j.c.attempts > 0, j.c.attempts - 1), else_=0))
        conn.execute(sa.update(j).where(j.c.id == jid).values(**values))


def _is_theirs(entry: str, words: set[str]) -> bool:
    return entry in words or any(len(w) >= _CONTAINED_MIN_CHARS and w in entry for w in words)


def _of_removed_thread(table: sa.Table, event: Any) -> sa.ColumnElement[bool]:
    """Which knowledge rows of a removed thread go with it. ``delete_thread`` takes everything
    in the thread (SC-13.5). An actor's cascade removes a thread whole because no *store
    record* of another user (or agent) is in it (SC-13.3, SC-13.4), but knowledge rows of
    another scope may still name it: a background write another user queued into the thread
    has no store record until a worker runs it. So a cascade (and a ``forget``, the same
    cascade plus the erasure) takes only the erased actor's rows, and for a user also the rows
    without a user (the unscoped part of her conversation, as the store does with unscoped
    records there)."""
    if event.reason not in ("cascade", "forget"):
        return sa.true()
    conds: list[sa.ColumnElement[bool]] = []
    if event.user_ids:
        conds.append(sa.or_(table.c.user_id.is_(None), table.c.user_id.in_(list(event.user_ids))))
    if event.agent_ids:
        conds.append(table.c.agent_id.in_(list(event.agent_ids)))
    return sa.and_(*conds) if conds else sa.false()
