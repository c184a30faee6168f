"""Indexed reads used by the write pipeline and the public getters (sync; run in a worker
thread under the backend's read context)."""

from __future__ import annotations

from datetime import datetime, timedelta
import threading
import weakref
from typing import Any, Callable, Iterable, Mapping, Optional, TypeVar, cast

import sqlalchemy as sa

from .schema import KGTables

__all__ = [
    "chunked",
    "lookup_aliases",
    "load_entities",
    "entities_by_slug",
    "active_entities_of_type",
    "current_facts_by_ids",
    "current_same_key_facts",
    "is_expired",
    "ttl_lapsed",
    "fact_status",
    "clear_summaries_citing",
    "clear_cluster_summaries",
    "delete_observations_citing",
    "observations_quoting_expired",
]

IN_BATCH = 500
_S = TypeVar("_S")


def owned(table: sa.Table, agent_id: str, user_id: Optional[str]) -> sa.ColumnElement[bool]:
    """KC-3.7: the rows a write in scope ``(agent_id, user_id)`` may see and change: the
    user's own rows, or (``user_id=None``) the agent's shared rows."""
    u = table.c.user_id
    return sa.and_(table.c.agent_id == agent_id, u.is_(None) if user_id is None else u == user_id)


def visible(table: sa.Table, agent_id: str, user_id: Optional[str]) -> sa.ColumnElement[bool]:
    """KC-3.8: the rows a read for ``user_id`` sees: hers plus the agent's shared rows;
    ``user_id=None``: the shared rows only."""
    u = table.c.user_id
    return sa.and_(table.c.agent_id == agent_id, u.is_(None) if user_id is None else sa.or_(u.is_(None), u == user_id))


def store_scope(user_id: Optional[str], *, read: bool = False) -> dict[str, Any]:
    """The scope of :func:`owned` / :func:`visible` as a store metadata filter over the
    ``kg_user`` key of knowledge store records (absent on shared records), so a store search
    applies it before its top-k cut (SC-6.5)."""
    shared = {"kg_user": {"$exists": False}}
    if user_id is None:
        return shared
    if read:
        return {"$or": [shared, {"kg_user": user_id}]}
    return {"kg_user": user_id}


def with_scope(metadata_filter: dict[str, Any], user_id: Optional[str], *, read: bool = False) -> dict[str, Any]:
    return {"$and": [metadata_filter, store_scope(user_id, read=read)]}


def store_user(user_id: Optional[str]) -> dict[str, Any]:
    """The store scope arguments of a knowledge store search in the one scope ``user_id``: the
    records' own ``user_id``, matched exactly (``None``: records without a user). Metadata is
    written by whoever writes a record, so ``kg_user`` (:func:`store_scope`) cannot be the
    boundary alone: a user's client may write records of its own scope whose metadata claims
    another user's (or the shared) scope, and such records would fill another user's top-k
    before the knowledge rows are read. The record's ``user_id`` is set only by a writer of
    that scope."""
    return {"user_id": user_id, "exact_user_match": True}


# -- cached statements (issue 25 item 6)
# The hot read statements are built once per table set and shape, with every value a bound
# parameter (``p_*``), not once per retrieve: building a SELECT of the fact table's columns,
# its subquery proxies and its cache key cost more CPU than running it. A cached statement
# holds table structure only; the agent, the user and the view are bound per execution, so
# nothing one user reads is kept for another (tests/knowledge/test_retrieve_stmt_cache.py).
_STMTS: "weakref.WeakKeyDictionary[sa.Table, dict[tuple[Any, ...], Any]]" = weakref.WeakKeyDictionary()
_STMTS_LOCK = threading.Lock()


def cached_stmt(table: sa.Table, key: tuple[Any, ...], build: Callable[[], _S]) -> _S:
    """The statement ``build()`` made once for ``table`` (a store's own table object) and the
    structural ``key``; it must bind every value (``sa.bindparam``)."""
    with _STMTS_LOCK:
        per = _STMTS.get(table)
        if per is None:
            per = _STMTS[table] = {}
        stmt = per.get(key)
    if stmt is None:
        stmt = build()
        with _STMTS_LOCK:
            stmt = per.setdefault(key, stmt)
    return cast(_S, stmt)


def p_visible(table: sa.FromClause, shared_only: bool) -> sa.ColumnElement[bool]:
    """:func:`reads.visible` with the agent (``p_agent``) and the user (``p_user``) bound."""
    return sa.and_(table.c.agent_id == sa.bindparam("p_agent"), p_user_visible(table, shared_only))


def p_owned(table: sa.Table, no_user: bool) -> sa.ColumnElement[bool]:
    """:func:`owned` with the agent (``p_agent``) and the user (``p_user``) bound."""
    u = table.c.user_id
    return sa.and_(table.c.agent_id == sa.bindparam("p_agent"), u.is_(None) if no_user else u == sa.bindparam("p_user"))


def p_scope(table: sa.Table, user_id: Optional[str], read: bool) -> sa.ColumnElement[bool]:
    """:func:`visible` (``read``) or :func:`owned`, with the values bound."""
    return p_visible(table, user_id is None) if read else p_owned(table, user_id is None)


def expanding(name: str) -> sa.BindParameter[Any]:
    return sa.bindparam(name, expanding=True)


def shared_last(table: sa.Table) -> sa.ColumnElement[int]:
    """An ORDER BY key that puts the user's own rows before the shared ones (portable CASE)."""
    return sa.case((table.c.user_id.is_(None), 1), else_=0)


def row_owned(row: Any, agent_id: str, user_id: Optional[str]) -> bool:
    return bool(row.get("agent_id") == agent_id and row.get("user_id") == user_id)


def row_visible(row: Any, agent_id: str, user_id: Optional[str]) -> bool:
    return row.get("agent_id") == agent_id and row.get("user_id") in (None, user_id)


def check_user_id(user_id: object) -> Optional[str]:
    """KC-0.1: ``user_id`` is None (the agent's shared knowledge) or a store user id."""
    if user_id is None:
        return None
    if not isinstance(user_id, str):
        raise TypeError(f"user_id must be a str or None, got {type(user_id).__name__}")
    if not user_id.strip() or len(user_id) > 255 or "\x00" in user_id:
        raise ValueError("user_id must be a non-empty string (not only white space) of at most 255 characters without NUL, or None "
                         "for the agent's shared knowledge")
    return user_id


def chunked(values: list[Any], size: int = IN_BATCH) -> Iterable[list[Any]]:
    for i in range(0, len(values), size):
        yield values[i : i + size]


def in_batches(column: Any, values: Iterable[Any]) -> list[Any]:
    """``column IN (...)`` conditions over :func:`chunked` batches of ``values`` (sorted)."""
    return [column.in_(batch) for batch in chunked(sorted(set(values)))]


def any_in(column: Any, values: Iterable[Any]) -> Any:
    """``column`` in any of ``values`` (false for none), batched as :func:`in_batches`."""
    conds = in_batches(column, values)
    return sa.or_(*conds) if conds else sa.false()


def clear_summaries_citing(conn: sa.Connection, t: KGTables, fact_ids: Iterable[str]) -> None:
    """KC-6.7: the summaries of the entities linked to ``fact_ids`` cleared (``summary_text`` and
    ``summary_refreshed_at`` NULL: stale, so the next refresh rewrites them from the facts left),
    in the scope of each link (the summary job summarises an entity from its own scope's
    links). Called before those facts leave current reads (delete, retract): a summary written
    from them is not stale otherwise (it is recent and no fact is newer), so it went on naming
    a deleted or retracted fact while other facts kept the entity (red33)."""
    lk, e = t.link, t.entity
    keys = {(r[0], r[1], r[2]) for cond in in_batches(lk.c.fact_id, fact_ids)
            for r in conn.execute(sa.select(lk.c.agent_id, lk.c.user_id, lk.c.entity_key).where(cond))}
    for agent, user, key in sorted(keys, key=repr):
        conn.execute(sa.update(e).where(owned(e, agent, user), e.c.canonical_key == key, e.c.summary_text.is_not(None))
                     .values(summary_text=None, summary_refreshed_at=None))


def clear_cluster_summaries(conn: sa.Connection, t: KGTables, fact_ids: Iterable[str]) -> None:
    """KC-6.2 / KC-3.6 (red35): the summaries of the clusters holding ``fact_ids`` cleared, with
    the vector embedded from them (``summary_text`` and ``embedding_vec`` NULL; the next
    clustering run writes both again from the members left). Called before those facts leave
    the cluster's current members (delete, retract, the deletion hook's purge): a summary names
    every fact it was written from, and a delete leaves the memberships the job compares equal,
    so it was never rewritten (a broad retrieve's "Overview" went on quoting the deleted fact,
    to every reader of the scope)."""
    f, cl = t.fact, t.cluster
    ids = {r[0] for cond in in_batches(f.c.id, fact_ids)
           for r in conn.execute(sa.select(f.c.cluster_id).where(cond, f.c.cluster_id.is_not(None)).distinct())}
    for cond in in_batches(cl.c.id, ids):
        conn.execute(sa.update(cl).where(cond).values(summary_text=None, embedding_vec=None))


def delete_observations_citing(conn: sa.Connection, t: KGTables, fact_ids: Iterable[str], agent_id: Optional[str] = None) -> int:
    """KC-6.3 / KC-6.4 [ext] (obs47): the meta observations (consolidation observations,
    community themes) of the agents of ``fact_ids`` that cite one of them in
    ``supporting_fact_ids`` deleted, row and text; returns how many. Called before those facts
    go (delete, the deletion hook's purge of a store-side delete or TTL purge, the erasers):
    the model wrote the title and text from the facts it cites, and taking only the id out of
    the list left the text quoting a deleted fact to every reader of its scope (a retrieve's
    "Observed patterns", directives, exports). Any scope of the agent: a row that cites the
    fact was written from it. The next job run writes observations again from what is left.
    ``agent_id``: only facts of that agent (as ``deletes.purge_facts`` removes them)."""
    f, mo = t.fact, t.meta_observation
    gone = set(fact_ids)
    mine = sa.true() if agent_id is None else f.c.agent_id == agent_id
    agents = {r[0] for cond in in_batches(f.c.id, gone)
              for r in conn.execute(sa.select(f.c.agent_id).where(cond, mine).distinct())}
    gone = {r[0] for cond in in_batches(f.c.id, gone) for r in conn.execute(sa.select(f.c.id).where(cond, mine))}
    ids = [oid for agent in sorted(agents)
           for oid, sup in conn.execute(sa.select(mo.c.id, mo.c.supporting_fact_ids).where(mo.c.agent_id == agent))
           if sup and gone.intersection(x for x in sup if isinstance(x, str))]
    for cond in in_batches(mo.c.id, ids):
        conn.execute(sa.delete(mo).where(cond))
    return len(ids)


def observations_quoting_expired(conn: sa.Connection, t: KGTables, rows: Iterable[Mapping[str, Any]], now: datetime) -> set[str]:
    """KC-6.3 / KC-6.4 [ext] (obs47, as :func:`clusters_quoting_expired` for summaries): the ids
    of the meta observation ``rows`` (with ``id`` and ``supporting_fact_ids``) that cite a fact
    whose TTL has passed at ``now``. Their title and text were written from it: no read serves
    them, and the next run of the job that wrote them retires them. Expiry is not erasure:
    nothing is deleted or changed here."""
    f = t.fact
    citing: dict[str, set[str]] = {}
    for r in rows:
        for fid in r.get("supporting_fact_ids") or ():
            if isinstance(fid, str):
                citing.setdefault(fid, set()).add(r["id"])
    out: set[str] = set()
    for cond in in_batches(f.c.id, citing):
        for fid, ttl_days, ingested_at in conn.execute(
                sa.select(f.c.id, f.c.ttl_days, f.c.ingested_at).where(cond, f.c.ttl_days.is_not(None))):
            if ttl_lapsed(ingested_at, ttl_days, now):
                out |= citing[fid]
    return out


def lookup_aliases(conn: sa.Connection, t: KGTables, agent_id: str, norms: list[str], user_id: Optional[str] = None,
                   *, read: bool = False) -> dict[str, tuple[str, str]]:
    """Indexed lookup of ``norm``-ed alias texts (unique ``(agent_id, alias)``)."""
    out: dict[str, tuple[str, str]] = {}
    a = t.alias
    stmt = cached_stmt(a, ("lookup_aliases", read, user_id is None), lambda: (
        sa.select(a.c.alias, a.c.canonical_entity_key, a.c.canonical_entity_type).where(
            p_scope(a, user_id, read), a.c.alias.in_(expanding("p_batch"))
        ).order_by(shared_last(a))))  # her own binding first, then the shared one
    for batch in chunked(sorted(set(norms))):
        rows = conn.execute(stmt, {"p_agent": agent_id, "p_user": user_id, "p_batch": batch})
        for alias, key, etype in rows:
            out.setdefault(alias, (key, etype))
    return out


def load_entities(conn: sa.Connection, t: KGTables, agent_id: str, keys: Iterable[str], user_id: Optional[str] = None,
                  *, read: bool = False) -> dict[str, dict[str, Any]]:
    e = t.entity
    out: dict[str, dict[str, Any]] = {}
    stmt = cached_stmt(e, ("load_entities", read, user_id is None), lambda: (
        sa.select(e).where(p_scope(e, user_id, read), e.c.canonical_key.in_(expanding("p_batch"))).order_by(shared_last(e))))
    for batch in chunked(sorted(set(keys))):
        for row in conn.execute(stmt, {"p_agent": agent_id, "p_user": user_id, "p_batch": batch}).mappings():
            out.setdefault(row["canonical_key"], dict(row))
    return out


def entities_by_slug(conn: sa.Connection, t: KGTables, agent_id: str, slug_value: str, user_id: Optional[str] = None,
                     *, read: bool = False) -> list[dict[str, Any]]:
    """Active entities whose key's slug part equals ``slug_value`` (any type), by key."""
    e = t.entity
    key = e.c.canonical_key
    rows = conn.execute(
        sa.select(e.c.canonical_key, e.c.entity_type, e.c.display_name)
        .where(
            (visible if read else owned)(e, agent_id, user_id),
            e.c.is_active == True,  # noqa: E712
            sa.func.substr(key, sa.func.instr(key, ":") + 1) == slug_value,
        )
        .order_by(key)
    ).mappings()
    return [dict(r) for r in rows]


def entities_by_slugs(conn: sa.Connection, t: KGTables, agent_id: str, slugs: list[str], user_id: Optional[str] = None,
                      *, read: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Batched :func:`entities_by_slug`: slug → active entities whose key's slug part equals it."""
    e = t.entity
    key = e.c.canonical_key
    out: dict[str, list[dict[str, Any]]] = {}

    def build() -> sa.Select[Any]:
        part = sa.func.substr(key, sa.func.instr(key, ":") + 1)
        return (sa.select(e.c.canonical_key, e.c.entity_type, e.c.display_name, part.label("slug_part"))
                .where(p_scope(e, user_id, read), e.c.is_active == True, part.in_(expanding("p_batch")))  # noqa: E712
                .order_by(key))

    stmt = cached_stmt(e, ("entities_by_slugs", read, user_id is None), build)
    for batch in chunked(sorted(set(s for s in slugs if s))):
        rows = conn.execute(stmt, {"p_agent": agent_id, "p_user": user_id, "p_batch": batch}).mappings()
        for r in rows:
            out.setdefault(r["slug_part"], []).append(dict(r))
    return out


def active_entities_of_type(conn: sa.Connection, t: KGTables, agent_id: str, entity_type: str, with_vec: bool,
                            user_id: Optional[str] = None) -> list[dict[str, Any]]:
    e = t.entity
    cols = [e.c.canonical_key, e.c.display_name, e.c.entity_type]
    if with_vec:
        cols.append(e.c.embedding_vec)
    rows = conn.execute(
        sa.select(*cols)
        .where(owned(e, agent_id, user_id), e.c.entity_type == entity_type, e.c.is_active == True)  # noqa: E712
        .order_by(e.c.canonical_key)
    ).mappings()
    return [dict(r) for r in rows]


def is_expired(row: dict[str, Any], now: datetime) -> bool:
    return ttl_lapsed(row["ingested_at"], row.get("ttl_days"), now)


def ttl_lapsed(ingested_at: datetime, ttl_days: Optional[int], now: datetime) -> bool:
    """Has a fact ingested at ``ingested_at`` with ``ttl_days`` (None: no TTL) expired at ``now``?"""
    return ttl_days is not None and ingested_at + timedelta(days=int(ttl_days)) <= now


def clusters_quoting_expired(conn: sa.Connection, t: KGTables, cluster_ids: Iterable[str], now: datetime) -> set[str]:
    """KC-6.2 [ext]: the clusters of ``cluster_ids`` holding a member fact whose TTL has passed
    at ``now``. Their summary was written from it (the clustering job takes an expired fact out
    of its cluster and writes the summary again at its next run, so a member is expired only
    until then): it is not served meanwhile. Expiry is not erasure: nothing is deleted."""
    f = t.fact
    out: set[str] = set()
    for cond in in_batches(f.c.cluster_id, cluster_ids):
        for cid, ttl_days, ingested_at in conn.execute(
                sa.select(f.c.cluster_id, f.c.ttl_days, f.c.ingested_at).where(cond, f.c.ttl_days.is_not(None))):
            if ttl_lapsed(ingested_at, ttl_days, now):
                out.add(cid)
    return out


def summaries_outlived(conn: sa.Connection, t: KGTables, agent_id: str, entities: Iterable[dict[str, Any]],
                       now: datetime) -> set[tuple[Optional[str], str]]:
    """KC-6.7 [ext]: ``(user_id, canonical_key)`` of the ``entities`` (rows with ``user_id``,
    ``canonical_key``, ``summary_text``, ``summary_refreshed_at``) whose summary may quote a
    fact that has expired since: a fact linked to the entity in its scope whose TTL passed
    after the summary was written (or at any time, for a summary with no refresh time, seeded
    by a write) and by ``now``. Such a summary is not served, and the refresh counts it stale;
    one written after the fact expired was written without it (the refresh reads current facts)."""
    lk, f = t.link, t.fact
    out: set[tuple[Optional[str], str]] = set()
    by_scope: dict[Optional[str], dict[str, Any]] = {}
    for r in entities:
        if r.get("summary_text"):
            by_scope.setdefault(r["user_id"], {})[r["canonical_key"]] = r.get("summary_refreshed_at")
    for user_id, written in by_scope.items():
        for cond in in_batches(lk.c.entity_key, written):
            for key, ttl_days, ingested_at in conn.execute(
                    sa.select(lk.c.entity_key, f.c.ttl_days, f.c.ingested_at).select_from(lk.join(f, f.c.id == lk.c.fact_id))
                    .where(owned(lk, agent_id, user_id), cond, f.c.ttl_days.is_not(None))):
                expires = ingested_at + timedelta(days=int(ttl_days))
                at = written[key]
                if expires <= now and (at is None or expires > at):
                    out.add((user_id, key))
    return out


def fact_status(row: dict[str, Any], now: datetime) -> str:
    """KC-0.3: the first that applies of invalidated, closed, expired, stale, active."""
    if row.get("invalidated_at") is not None:
        return "invalidated"
    if row.get("valid_to") is not None:
        return "closed"
    if is_expired(row, now):
        return "expired"
    if row.get("is_stale"):
        return "stale"
    return "active"


def _fact_cols(t: KGTables) -> list[Any]:
    return [c for c in t.fact.c if c.name != "embedding_vec"]


#: the columns of a candidate fact: what reconciliation shows the model and its rules compare,
#: what informed extraction shows, and what ownership and expiry read (``brief=True`` reads)
_BRIEF_FACT_COLUMNS = ("id", "agent_id", "user_id", "entity_key", "fact_text", "attribute_key", "valid_from",
                       "needs_confirmation", "ttl_days", "ingested_at")


def current_facts_by_ids(conn: sa.Connection, t: KGTables, agent_id: str, ids: list[str], now: datetime,
                         user_id: Optional[str] = None, *, brief: bool = False) -> dict[str, dict[str, Any]]:
    """The current facts among ``ids`` that the scope ``(agent_id, user_id)`` owns, unexpired,
    by id: every column but the vector, or with ``brief`` only ``_BRIEF_FACT_COLUMNS`` (a
    candidate's row; a decision's target is read whole again under the commit lock)."""
    f = t.fact
    out: dict[str, dict[str, Any]] = {}
    # looked up by primary key only (with agent_id in the WHERE clause SQLite picks the
    # (agent_id, ...) index and scans the agent's facts); the agent is checked here
    cols = [f.c[n] for n in _BRIEF_FACT_COLUMNS] if brief else _fact_cols(t)
    stmt = cached_stmt(f, ("current_facts_by_ids", brief), lambda: sa.select(*cols).where(
        f.c.id.in_(expanding("p_ids")), f.c.valid_to.is_(None), f.c.invalidated_at.is_(None)))
    for batch in chunked(sorted(set(ids))):
        rows = conn.execute(stmt, {"p_ids": batch}).mappings()
        for r in rows:
            d = dict(r)
            if row_owned(d, agent_id, user_id) and not is_expired(d, now):
                out[d["id"]] = d
    return out


def current_same_key_facts(
    conn: sa.Connection, t: KGTables, agent_id: str, wanted: Mapping[str, list[str]], now: datetime,
    user_id: Optional[str] = None,
) -> dict[str, list[dict[str, Any]]]:
    """Per entity key of ``wanted``, the current unexpired facts of the scope ``(agent_id,
    user_id)`` whose attribute key is one of the key's ``wanted[key]``, oldest first (brief
    rows: ``_BRIEF_FACT_COLUMNS``); one statement for every key (``entity_key IN`` and
    ``attribute_key IN``, the pairs checked here)."""
    pairs = {(key, attr) for key, attrs in wanted.items() for attr in attrs}
    out: dict[str, list[dict[str, Any]]] = {key: [] for key in wanted}
    if not pairs:
        return out
    f = t.fact
    stmt = cached_stmt(f, ("current_same_key_facts", user_id is None), lambda: (
        sa.select(*[f.c[n] for n in _BRIEF_FACT_COLUMNS])
        .where(
            p_owned(f, user_id is None),
            f.c.entity_key.in_(expanding("p_keys")),
            f.c.valid_to.is_(None),
            f.c.invalidated_at.is_(None),
            f.c.attribute_key.in_(expanding("p_attrs")),
        )))
    # ordered here, not in SQL: with an ORDER BY valid_from SQLite (no statistics) walks every
    # fact of the entity by FACT_AGT_ENT_VF_IX instead of the same-key rows by
    # FACT_AGT_ENT_ATTR_IX (tests/knowledge/test_retrieve_query_plans.py)
    attrs = sorted({attr for _, attr in pairs})
    for batch in chunked(sorted({key for key, _ in pairs})):
        rows = conn.execute(stmt, {"p_agent": agent_id, "p_user": user_id, "p_keys": batch, "p_attrs": attrs}).mappings()
        for d in sorted((dict(r) for r in rows), key=lambda d: (d["valid_from"], d["id"])):
            if (d["entity_key"], d["attribute_key"]) in pairs and not is_expired(d, now):
                out[d["entity_key"]].append(d)
    return out


def registry_rows(conn: sa.Connection, t: KGTables, agent_id: str, keys: list[str]) -> dict[str, dict[str, Any]]:
    r = t.registry
    out: dict[str, dict[str, Any]] = {}
    stmt = cached_stmt(r, ("registry_rows",), lambda: sa.select(r).where(r.c.agent_id == sa.bindparam("p_agent"),
                                                                         r.c.key.in_(expanding("p_batch"))))
    for batch in chunked(sorted(set(keys))):
        for row in conn.execute(stmt, {"p_agent": agent_id, "p_batch": batch}).mappings():
            out[row["key"]] = dict(row)
    return out


def links_of(conn: sa.Connection, t: KGTables, agent_id: str, fact_ids: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    lk = t.link
    for batch in chunked(sorted(set(fact_ids))):
        rows = conn.execute(
            sa.select(lk.c.fact_id, lk.c.entity_key, lk.c.is_primary, lk.c.agent_id)
            .where(lk.c.fact_id.in_(batch))  # by the fact_id index; the agent is checked below
            .order_by(lk.c.fact_id, sa.desc(lk.c.is_primary), lk.c.entity_key)
        )
        for fid, key, _, owner in rows:
            if owner == agent_id:
                out.setdefault(fid, []).append(key)
    return out


def check_page(limit: Any, offset: Any) -> None:
    """A page's ``limit`` (>= 1) and ``offset`` (>= 0), as ints."""
    for name, v, lo in (("limit", limit, 1), ("offset", offset, 0)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name} must be an int")
        if v < lo:
            raise ValueError(f"{name} must be >= {lo}")


# -- retrieve's reads and usage writes by primary key (issue 25 item 6, round e)


def visible_ids(conn: sa.Connection, table: sa.Table, agent_id: str, user_id: Optional[str], ids: list[str]) -> list[str]:
    """The ids among ``ids`` (one batch) of ``table``'s rows that ``user_id`` sees (KC-3.8),
    looked up by primary key only: with ``agent_id`` in the WHERE clause SQLite (no
    statistics) picks the ``(agent_id, ...)`` index and scans every row of the agent. The
    scope is checked here on the rows read, as :func:`row_visible` does. KC-5.12: the rows a
    retrieve's usage goes on, the shared ones it returned included: a user's read of a shared
    fact counts in its usage, so shared knowledge that only users read does not age as unread
    (the usage columns are then an aggregate over every reader of the agent, as documented
    in KC-5.12; a per-user usage record is the design that would keep them apart)."""
    stmt = cached_stmt(table, ("visible_ids",), lambda: sa.select(table.c.id, table.c.agent_id, table.c.user_id).where(
        table.c.id.in_(expanding("p_ids"))))
    return sorted(i for i, a, u in conn.execute(stmt, {"p_ids": ids}) if a == agent_id and u in (None, user_id))


def touch_by_ids(conn: sa.Connection, table: sa.Table, ids: list[str], now: datetime) -> None:
    """KC-5.12 usage on rows already checked visible (:func:`visible_ids`, in the same write
    transaction): a fact's ``times_retrieved + 1`` and ``last_retrieved_at``, an edge's
    ``last_used_at``; by primary key, one cached statement per table."""
    if not ids:
        return

    def build() -> sa.Update:
        if "times_retrieved" in table.c:
            return sa.update(table).where(table.c.id.in_(expanding("p_ids"))).values(
                times_retrieved=table.c.times_retrieved + 1,
                last_retrieved_at=sa.bindparam("p_now", type_=table.c.last_retrieved_at.type))
        return sa.update(table).where(table.c.id.in_(expanding("p_ids"))).values(
            last_used_at=sa.bindparam("p_now", type_=table.c.last_used_at.type))

    conn.execute(cached_stmt(table, ("touch_by_ids",), build), {"p_ids": ids, "p_now": now})


def rows_of(result: sa.CursorResult[Any]) -> list[dict[str, Any]]:
    """A result's rows as dicts (the same as ``[dict(m) for m in result.mappings()]``, with the
    column names read once, not once per row)."""
    keys = list(result.keys())
    return [dict(zip(keys, row)) for row in result]


def p_user_visible(table: sa.FromClause, shared_only: bool) -> sa.ColumnElement[bool]:
    """The user half of :func:`p_visible` (``p_user`` bound): for a table joined to one whose
    agent is already bound, with ``table.agent_id`` equal to that table's agent."""
    u = table.c.user_id
    return u.is_(None) if shared_only else sa.or_(u.is_(None), u == sa.bindparam("p_user"))


# -- an entity's first facts in rank order, read from the rank index (issue 25, round f)

#: the numbers of keys a ranked-facts statement is built for (the keys are padded with NULL,
#: which matches no row, up to the next one), so a handful of statements serve every call
RANK_ARMS = (1, 2, 4, 8, 16, 32)


def rank_arms(n_keys: int) -> int:
    """The number of per-key branches for ``n_keys`` keys (at most ``RANK_ARMS[-1]``: chunk)."""
    for n in RANK_ARMS:
        if n >= n_keys:
            return n
    raise ValueError(f"at most {RANK_ARMS[-1]} keys per ranked-facts statement, got {n_keys}")


def ranked_facts(f: sa.Table, n_arms: int, conds: list[sa.ColumnElement[bool]], cut: sa.BindParameter[Any]) -> sa.Subquery:
    """Per entity key (bound ``p_k0`` .. ``p_k<n-1>``), its first ``cut`` facts meeting
    ``conds`` in rank order (importance, then valid_from, newest first, then id), one
    ``ORDER BY ... LIMIT`` branch per key under ``UNION ALL``: with the fact table's
    ``(agent_id, entity_key, importance DESC, valid_from DESC, id)`` index each branch reads
    its key's facts in that order and stops after ``cut`` kept rows, where one ranked query
    over every key (``ROW_NUMBER() OVER (PARTITION BY entity_key ...)``, or one ``ORDER BY``
    over all of them) read and sorted every fact of the keys (~1,000 per key at 100k facts).

    The subquery's columns are ``id``, ``entity_key``, ``importance`` and ``valid_from``
    only (for the caller's ORDER BY): the caller joins the fact table on ``id`` for the rest.
    No LOB or JSON column goes through the ``UNION ALL`` (Oracle's JSON type in a set
    operator is stated nowhere in its documentation)."""
    picked = [f.c.id, f.c.entity_key, f.c.importance, f.c.valid_from]
    arms: list[sa.Select[Any]] = []
    for i in range(n_arms):
        arm = (
            sa.select(*picked)
            .where(*conds, f.c.entity_key == sa.bindparam(f"p_k{i}", type_=f.c.entity_key.type))
            .order_by(sa.desc(f.c.importance), sa.desc(f.c.valid_from), f.c.id)
            .limit(cut)
            .subquery(f"kg_arm{i}")
        )
        arms.append(sa.select(arm))
    if n_arms == 1:
        return arms[0].subquery("kg_ranked")
    return sa.union_all(*arms).subquery("kg_ranked")


def rank_keys(keys: list[str], n_arms: int) -> dict[str, Optional[str]]:
    """The ``p_k<i>`` values of :func:`ranked_facts` (NULL past the last key)."""
    return {f"p_k{i}": keys[i] if i < len(keys) else None for i in range(n_arms)}
