"""Whose knowledge rows are whose: the rows of the knowledge tables that belong to a user, an
agent or a thread, as the deleting operations decide it (KC-3.6, KC-3.10, SC-13). One notion
serves both sides: ``forget`` erases these rows (:mod:`oramem.knowledge.deletes` selects
through :func:`user_rows`) and a scoped export (``oramem export --user/--agent/--thread``,
:func:`oramem.jsonl.export_knowledge`) writes them (:func:`owned_rows`), so "export U" and
"forget U" cover the same rows.

What an export leaves out that an erasure takes: a row of *another* user's scope (its
``user_id`` names someone else). ``forget`` erases such a row when it cites the subject's rows
(a cluster holding one of her facts, an observation built from her events: its text may quote
her), but what another user told the agent is that user's data (KC-3.10), so it is never
handed to the subject. Background jobs run per scope (KC-6.0), so such rows exist only from
before the user dimension or from direct writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

import sqlalchemy as sa

from ..kg_vectors import COMMUNITY_THEME
from .db import queries as reads
from .db.schema import KGTables
from .text import merged_names, norm

__all__ = ["UserRows", "SCOPE_KINDS", "PROVENANCE", "user_rows", "born_of", "Born", "owned_rows"]

#: the scopes an export can be cut to
SCOPE_KINDS = ("user", "agent", "thread")

#: the key of an event's ``trace_json`` that records which entities and aliases of its scope
#: the write touched and created (``write.commit.provenance_of``): an erasure decides by it
#: which rows of another scope her erased events made (KC-3.10, :func:`born_of`)
PROVENANCE = "provenance"


@dataclass
class UserRows:
    """The knowledge rows erasing ``users`` removes besides the tables' own ``user_id``
    match: her events and facts (her scope, and the rows whose store record was one of her
    erased records), and the derived rows of any scope citing them. ``summaries``: the
    entities (``(agent_id, user_id, canonical_key)``) linked to one of her facts, whose
    LLM-written summary may quote it, or whose summary one of her erased events seeded from
    her message (erasure clears it; the entity row is its scope's)."""

    events: set[str]
    facts: set[str]
    clusters: set[str]
    metas: set[str]
    observations: set[str]
    summaries: set[tuple[str, Optional[str], str]]
    #: ids of entity and alias rows of another scope that only her erased events made or
    #: named (:func:`born_of`); empty for a store whose events predate the provenance record
    entities: set[str] = field(default_factory=set)
    aliases: set[str] = field(default_factory=set)
    #: entity row id -> the display name before her erased events extended it (:func:`born_of`)
    renames: dict[str, Optional[str]] = field(default_factory=dict)


def user_rows(conn: sa.Connection, t: KGTables, users: set[str], erased: Iterable[tuple[str, str]], *,
              facts_of_events: bool = True) -> UserRows:
    """KC-3.10's selection for erasing ``users``: ``erased`` are the store records
    (``(record_type, id)``) the store removes with them. An event row is matched by a
    ``message`` record's id and a fact row by a ``fact`` record's id, never across types:
    store ids are unique per record type only (SC-4.3) and a caller may choose them, so
    another user's fact record may carry the id of her event. Nor is a row of another user
    one of hers through a record of hers under its id (Bob's message record under the id of
    Alice's event restored without its record): the provenance match takes rows without a
    user only (written before the user dimension). ``facts_of_events=False`` (a
    profile cascade): the facts learned from her events are not taken with them."""
    ev, f, so, mo, cl, lk = t.event, t.fact, t.session_observation, t.meta_observation, t.cluster, t.link
    erased = set(erased)
    erased_messages = {rid for rtype, rid in erased if rtype == "message"}
    erased_facts = {rid for rtype, rid in erased if rtype == "fact"}

    def mine(table: Any) -> Any:
        return reads.any_in(table.c.user_id, users)

    event_rows = conn.execute(sa.select(ev.c.id).where(sa.or_(
        mine(ev), sa.and_(reads.any_in(ev.c.id, erased_messages), ev.c.user_id.is_(None))))).all()
    events = {r.id for r in event_rows}
    of_events = reads.any_in(f.c.source_event_id, events) if facts_of_events else sa.false()
    facts = {r[0] for r in conn.execute(sa.select(f.c.id).where(
        sa.or_(mine(f), sa.and_(reads.any_in(f.c.id, erased_facts), f.c.user_id.is_(None)), of_events)))}
    # derived rows of any scope that cite her rows
    clusters = {r[0] for r in conn.execute(sa.select(f.c.cluster_id).where(reads.any_in(f.c.id, facts))) if r[0]}
    clusters |= {r[0] for r in conn.execute(sa.select(cl.c.id).where(mine(cl)))}
    metas = {r.id for r in conn.execute(sa.select(mo.c.id, mo.c.user_id, mo.c.supporting_event_ids, mo.c.supporting_fact_ids))
             if r.user_id in users or events.intersection(r.supporting_event_ids or ())
             or facts.intersection(r.supporting_fact_ids or ())}
    observations = {r.id for r in conn.execute(sa.select(so.c.id, so.c.user_id, so.c.source_message_ids))
                    if r.user_id in users or events.intersection(r.source_message_ids or ())}
    # the entities whose summary the summary job wrote from her facts (the links of its scope)
    summaries = {(r[0], r[1], r[2]) for cond in reads.in_batches(lk.c.fact_id, facts)
                 for r in conn.execute(sa.select(lk.c.agent_id, lk.c.user_id, lk.c.entity_key).where(cond))}
    born = born_of(conn, t, users, events, facts, observations)
    # and those whose summary her erased events seeded from her message (KC-4.9)
    summaries |= born.seeded
    # what the jobs wrote under a display name her erased events extended, which goes back
    # (red47): the entity's summary (entity_summary is shown the name), the clusters holding its
    # facts (their label is the name, cluster_summary is shown it) and the community themes
    # citing those facts or their events (community is shown the clusters' labels)
    summaries |= born.renamed_keys
    renamed_clusters, themes = _written_under_names(conn, t, born.renamed_keys)
    clusters |= renamed_clusters
    metas |= themes
    return UserRows(events, facts, clusters, metas, observations, summaries, born.entities, born.aliases, born.renames)


def _provenance(trace: Any) -> dict[str, Any]:
    """An event's ``trace_json`` provenance (``write.commit.provenance_of``); empty for an
    event written before it was recorded, or one that touched no entity."""
    got = trace.get(PROVENANCE) if isinstance(trace, dict) else None
    if not isinstance(got, dict):
        return {}
    out: dict[str, Any] = {k: [x for x in v if isinstance(x, str)] for k, v in got.items() if isinstance(v, list)}
    renamed = got.get("renamed")
    out["renamed"] = {k: v for k, v in renamed.items() if isinstance(v, list) and len(v) == 2} if isinstance(renamed, dict) else {}
    return out


@dataclass
class Born:
    """What :func:`born_of` finds: ``entities`` and ``aliases`` (row ids) that go with her,
    ``seeded`` (``(agent, user, key)``) the entities whose summary her events seeded from her
    message, ``renames`` (entity row id -> display name) the names her events extended that
    go back to the name before."""

    entities: set[str] = field(default_factory=set)
    aliases: set[str] = field(default_factory=set)
    seeded: set[tuple[str, Optional[str], str]] = field(default_factory=set)
    renames: dict[str, Optional[str]] = field(default_factory=dict)
    #: ``(agent, user, key)`` of the entities of ``renames``
    renamed_keys: set[tuple[str, Optional[str], str]] = field(default_factory=set)


def _written_under_names(conn: sa.Connection, t: KGTables, keys: set[tuple[str, Optional[str], str]]) -> tuple[set[str], set[str]]:
    """The clusters (ids) of each scope's ``(agent, user, key)`` holding a fact of entity ``key``
    (a cluster groups its entity's facts, KC-6.2), and the ``community_theme`` observations
    of that scope citing one of the facts of those clusters or an event they were learned from
    (KC-6.3: a theme cites its members' facts, up to 50, and all their source events)."""
    f, cl, mo = t.fact, t.cluster, t.meta_observation
    clusters: set[str] = set()
    themes: set[str] = set()
    for agent, user, key in sorted(keys, key=repr):
        ids = {r[0] for r in conn.execute(sa.select(f.c.cluster_id).where(
            reads.owned(f, agent, user), f.c.entity_key == key, f.c.cluster_id.is_not(None)))}
        ids = {r[0] for cond in reads.in_batches(cl.c.id, ids) for r in conn.execute(sa.select(cl.c.id).where(
            reads.owned(cl, agent, user), cond))}
        if not ids:
            continue
        clusters |= ids
        members = {(r[0], r[1]) for cond in reads.in_batches(f.c.cluster_id, ids)
                   for r in conn.execute(sa.select(f.c.id, f.c.source_event_id).where(cond))}
        fids = {fid for fid, _ in members}
        sources = {src for _, src in members if src}
        themes |= {r.id for r in conn.execute(sa.select(mo.c.id, mo.c.supporting_event_ids, mo.c.supporting_fact_ids).where(
            reads.owned(mo, agent, user), mo.c.observation_type == COMMUNITY_THEME))
            if fids.intersection(r.supporting_fact_ids or ()) or sources.intersection(r.supporting_event_ids or ())}
    return clusters, themes


@dataclass
class _Made:
    """One scope's rows her erased events made, from their provenance."""

    since: Any = None
    keys: set[str] = field(default_factory=set)
    aliases: set[str] = field(default_factory=set)
    renamed: dict[str, list[Any]] = field(default_factory=dict)  # key -> [first before, last after]


def born_of(conn: sa.Connection, t: KGTables, users: set[str], events: set[str], facts: set[str],
            observations: set[str]) -> Born:
    """KC-3.10, by provenance, never by name: the entity and alias rows of another scope (a
    shared write in her private thread, a shared fact learned from her message) that her
    erased ``events`` created, as each event's ``trace_json`` provenance records it.

    Such an entity goes with her, its aliases with it, unless something that stays still
    names it in its scope: a fact or fact link not among her erased ``facts``, a relationship
    whose evidence is not one of them, an event of the scope not among her ``events`` whose
    provenance lists it (a later mention, an operator's ``add_entity``), a session
    observation not among her ``observations`` that mentions it, or an alias her events did
    not create. An entity that stays (and an entity another write created) loses the aliases
    her events created, unless an event that stays lists the alias too, the summary her
    events seeded from her message, and the display name her events extended (back to the
    name before, unless it changed since or an event that stays used the longer name). Rows
    written before the provenance was recorded are not matched (no event says who made them)."""
    ev, e, al = t.event, t.entity, t.alias
    out = Born()
    made: dict[tuple[str, Optional[str]], _Made] = {}
    hers = sorted((r for cond in reads.in_batches(ev.c.id, events) for r in conn.execute(
        sa.select(ev.c.created_at, ev.c.id, ev.c.agent_id, ev.c.user_id, ev.c.trace_json).where(cond))),
        key=lambda r: (r[0], r[1]))  # oldest first: a name she extended twice goes back to the first
    for created_at, _, agent, user, trace in hers:
        got = _provenance(trace)
        if user in users or not got:
            continue  # her own scope goes whole
        m = made.setdefault((agent, user), _Made(since=created_at))
        m.since = min(m.since, created_at)
        m.keys.update(got.get("entities_created", ()))
        m.aliases.update(got.get("aliases_created", ()))
        out.seeded.update((agent, user, key) for key in got.get("summaries_seeded", ()))
        for key, (before, after) in got["renamed"].items():
            m.renamed[key] = [m.renamed.get(key, [before])[0], after]
    for (agent, user), m in sorted(made.items(), key=repr):
        if not (m.keys or m.aliases or m.renamed):
            continue
        other_keys, other_aliases = _named_elsewhere(conn, t, agent, user, m.since, events, observations)
        rows = conn.execute(sa.select(e.c.id, e.c.canonical_key, e.c.display_name, e.c.created_at).where(
            reads.owned(e, agent, user), reads.any_in(e.c.canonical_key, m.keys | set(m.renamed)))).all()
        alias_rows = conn.execute(sa.select(al.c.id, al.c.alias, al.c.canonical_entity_key).where(
            reads.owned(al, agent, user), sa.or_(reads.any_in(al.c.alias, m.aliases),
                                                 reads.any_in(al.c.canonical_entity_key, m.keys)))).all()
        for r in rows:
            key = r.canonical_key
            if key in m.keys and not (key in other_keys or _still_named(conn, t, agent, user, key, facts) or any(
                    a.canonical_entity_key == key and a.alias not in m.aliases for a in alias_rows)):
                out.entities.add(r.id)
                out.aliases.update(a.id for a in alias_rows if a.canonical_entity_key == key)
                # a merge folded it into another entity: the aliases it made of its names
                # (KC-6.5), made after it was (every event since records the aliases it
                # registered: one no event that stays lists is the merge's)
                out.aliases.update(a.id for a in conn.execute(sa.select(al.c.id, al.c.alias).where(
                    reads.owned(al, agent, user), al.c.canonical_entity_key != key, al.c.created_at >= r.created_at,
                    reads.any_in(al.c.alias, merged_names(r.display_name, key)))) if a.alias not in other_aliases)
            elif key in m.renamed:
                before, after = m.renamed[key]
                if r.display_name == after and norm(str(after)) not in other_aliases:
                    out.renames[r.id] = before
                    out.renamed_keys.add((agent, user, key))
        out.aliases.update(a.id for a in alias_rows if a.alias in m.aliases and a.alias not in other_aliases)
    return out


def _named_elsewhere(conn: sa.Connection, t: KGTables, agent: str, user: Optional[str], since: Any, events: set[str],
                     observations: set[str]) -> tuple[set[str], set[str]]:
    """The entity keys and aliases that rows of scope ``(agent, user)`` staying after her
    erasure name: the provenance of its other events since ``since`` (her first event that
    made a row: no earlier event can name what she made) and its session observations'
    ``entities_mentioned``."""
    ev, so = t.event, t.session_observation
    keys: set[str] = set()
    aliases: set[str] = set()
    for eid, trace in conn.execute(sa.select(ev.c.id, ev.c.trace_json).where(
            reads.owned(ev, agent, user), ev.c.trace_json.is_not(None), ev.c.created_at >= since)):
        if eid not in events:
            got = _provenance(trace)
            keys.update(got.get("entities", ()))
            aliases.update(got.get("aliases", ()))
    for oid, mentioned in conn.execute(sa.select(so.c.id, so.c.entities_mentioned).where(reads.owned(so, agent, user))):
        if oid not in observations:
            keys.update(x for x in (mentioned or ()) if isinstance(x, str))
    return keys, aliases


def _still_named(conn: sa.Connection, t: KGTables, agent: str, user: Optional[str], key: str, facts: set[str]) -> bool:
    """Whether a row of scope ``(agent, user)`` that stays after her erasure names entity
    ``key``: a fact, a fact link, a relationship not evidenced by her ``facts``."""
    f, lk, rel = t.fact, t.link, t.relationship
    for table, cond in ((f, f.c.entity_key == key), (lk, lk.c.entity_key == key)):
        column = table.c.id if table is f else table.c.fact_id
        for (fid,) in conn.execute(sa.select(column).where(reads.owned(table, agent, user), cond)):
            if fid not in facts:
                return True
    for (evidence,) in conn.execute(sa.select(rel.c.evidence_fact_id).where(
            reads.owned(rel, agent, user), sa.or_(rel.c.source_entity_key == key, rel.c.target_entity_key == key))):
        if evidence is None or evidence not in facts:
            return True
    return False


def _ids(conn: sa.Connection, table: sa.Table, cond: Any) -> set[tuple[Any, Optional[str]]]:
    """``(primary key, user_id)`` of the rows matching ``cond``."""
    return {(r[0], r[1]) for r in conn.execute(sa.select(table.c.id, table.c.user_id).where(cond))}


def owned_rows(conn: sa.Connection, t: KGTables, kind: str, ids: Iterable[str],
               records: Iterable[tuple[str, str]], *, threads: Iterable[str] = ()) -> dict[str, set[Any]]:
    """The knowledge rows of a scope, by table name: the primary keys of the rows that
    ``forget(user_id=U)`` (``kind`` ``"user"``), ``forget(agent_id=A)`` (``"agent"``) or
    ``delete_thread(T)`` (``"thread"``) removes for each of ``ids``, with ``records`` the
    store records (``(record_type, id)``) that operation removes (the export's records).
    For a user, rows of another user's scope are left out (module docstring), and
    ``threads`` are the threads her ``forget`` removes whole (her private threads, SC-13.3):
    the session observations, intentions and queued writes of no user naming them go with
    them (``deletes._leave_removed_threads``), so they are hers here too."""
    wanted = set(ids)
    if kind not in SCOPE_KINDS:
        raise ValueError(f"kind must be one of {', '.join(SCOPE_KINDS)}, got {kind!r}")
    out: dict[str, set[Any]] = {}
    if not wanted:
        return out
    keys = set(records)
    if kind == "agent":  # KC-3.6: the agent's rows in every table, its lock row, its queued writes
        for table in t.all_agent_tables() + [t.job]:
            out[table.name] = {r[0] for r in conn.execute(sa.select(table.c.id).where(reads.any_in(table.c.agent_id, wanted)))}
        out[t.agent.name] = {r[0] for r in conn.execute(sa.select(t.agent.c.agent_id).where(
            reads.any_in(t.agent.c.agent_id, wanted)))}
        return out
    if kind == "thread":  # the delete_thread hook (SC-8.3, SC-13.5): everything of the conversation
        msgs = {rid for rtype, rid in keys if rtype == "message"}
        facts = {rid for rtype, rid in keys if rtype == "fact"}
        found: dict[sa.Table, set[tuple[Any, Optional[str]]]] = {
            t.event: _ids(conn, t.event, sa.or_(reads.any_in(t.event.c.id, msgs), reads.any_in(t.event.c.session_id, wanted))),
            t.fact: _ids(conn, t.fact, reads.any_in(t.fact.c.id, facts)),
            t.link: _ids(conn, t.link, reads.any_in(t.link.c.fact_id, facts)),
            t.relationship: _ids(conn, t.relationship, reads.any_in(t.relationship.c.evidence_fact_id, facts)),
            t.session_observation: _ids(conn, t.session_observation, reads.any_in(t.session_observation.c.session_id, wanted)),
            t.intention: _ids(conn, t.intention, reads.any_in(t.intention.c.source_context, wanted)),
            t.job: _ids(conn, t.job, reads.any_in(t.job.c.session_id, wanted)),
        }
        return {table.name: {pk for pk, _ in rows} for table, rows in found.items()}
    # a user (KC-3.10): her scope, the rows of her erased store records, what derives from them
    sel = user_rows(conn, t, wanted, keys)

    def mine(table: sa.Table) -> Any:
        return reads.any_in(table.c.user_id, wanted)

    found = {
        t.event: _ids(conn, t.event, reads.any_in(t.event.c.id, sel.events)),
        t.fact: _ids(conn, t.fact, reads.any_in(t.fact.c.id, sel.facts)),
        t.cluster: _ids(conn, t.cluster, reads.any_in(t.cluster.c.id, sel.clusters)),
        t.meta_observation: _ids(conn, t.meta_observation, reads.any_in(t.meta_observation.c.id, sel.metas)),
        t.session_observation: _ids(conn, t.session_observation, reads.any_in(t.session_observation.c.id, sel.observations)),
        # her facts' links and the edges they evidence go with the facts (purge_facts)
        t.link: _ids(conn, t.link, sa.or_(mine(t.link), reads.any_in(t.link.c.fact_id, sel.facts))),
        t.relationship: _ids(conn, t.relationship, sa.or_(mine(t.relationship),
                                                          reads.any_in(t.relationship.c.evidence_fact_id, sel.facts))),
    }
    for table in (t.alias, t.entity, t.intention, t.job):
        found[table] = _ids(conn, table, mine(table))
    # the shared entities and aliases only her erased events made (born_of) go with her
    found[t.alias] |= _ids(conn, t.alias, reads.any_in(t.alias.c.id, sel.aliases))
    found[t.entity] |= _ids(conn, t.entity, reads.any_in(t.entity.c.id, sel.entities))
    removed = set(threads)
    for table, column in ((t.session_observation, t.session_observation.c.session_id),
                          (t.intention, t.intention.c.source_context), (t.job, t.job.c.session_id)):
        found[table] |= _ids(conn, table, sa.and_(reads.any_in(column, removed), table.c.user_id.is_(None)))
    return {table.name: {pk for pk, user in rows if user is None or user in wanted} for table, rows in found.items()}
