"""The plain reads of the knowledge tables (KC-1.4): a fact, its version chain, the agent's
facts, entities, relationships, intentions and scopes. Each function runs on one read
connection; visibility is KC-3.8's (``user_id``'s rows plus the agent's shared rows; ``None``:
the shared rows only) unless a function says otherwise."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

import sqlalchemy as sa

from ..db import queries as reads
from ..db.schema import KGTables
from ..types import EntityDetail, FactDetail, IntentionDetail, RelationshipDetail

__all__ = ["fact_cols", "fact_details", "get_fact", "chain_ids", "history", "all_facts", "entities",
           "relationships", "intentions", "scopes"]


def fact_cols(t: KGTables) -> list[Any]:
    return [c for c in t.fact.c if c.name != "embedding_vec"]


def _detail(row: dict[str, Any], links: list[str], superseded_by: Optional[str], now: datetime) -> FactDetail:
    data = {k: v for k, v in row.items() if k != "embedding_vec"}
    data["fact_id"] = data.pop("id")
    return FactDetail(**data, entity_keys=links, status=reads.fact_status(row, now), superseded_by=superseded_by)


def fact_details(conn: sa.Connection, t: KGTables, agent_id: str, rows: list[dict[str, Any]], now: datetime) -> list[FactDetail]:
    """``FactDetail`` of fact rows: their entity links and the successor of each (a successor
    is of the fact's own scope)."""
    ids = [r["id"] for r in rows]
    scoped = {(r["id"], r.get("user_id")) for r in rows}
    links = reads.links_of(conn, t, agent_id, ids)
    succ: dict[str, str] = {}
    f = t.fact
    for batch in reads.chunked(ids):
        for sid, new, owner, owner_user in conn.execute(
            sa.select(f.c.supersedes_fact_id, f.c.id, f.c.agent_id, f.c.user_id).where(f.c.supersedes_fact_id.in_(batch))
            .order_by(f.c.created_at, f.c.id)
        ):
            if owner == agent_id and (sid, owner_user) in scoped:
                succ.setdefault(sid, new)
    return [_detail(r, links.get(r["id"], []), succ.get(r["id"]), now) for r in rows]


def get_fact(conn: sa.Connection, t: KGTables, agent_id: str, fact_id: str, user_id: Optional[str],
             now: datetime) -> Optional[FactDetail]:
    f = t.fact
    row = conn.execute(sa.select(*fact_cols(t)).where(reads.visible(f, agent_id, user_id), f.c.id == fact_id)).mappings().first()
    return None if row is None else fact_details(conn, t, agent_id, [dict(row)], now)[0]


def chain_ids(conn: sa.Connection, t: KGTables, agent_id: str, fact_id: str, user_id: Optional[str],
              *, own: bool = False) -> list[str]:
    """The version chain of a fact, within one scope: a chain never crosses users. ``own``:
    the fact must be of the scope ``user_id`` itself (writes), not merely visible to it."""
    f = t.fact
    start = conn.execute(sa.select(f.c.id, f.c.supersedes_fact_id, f.c.user_id).where(
        (reads.owned if own else reads.visible)(f, agent_id, user_id), f.c.id == fact_id)).first()
    if start is None:
        return []
    back: list[str] = [start[0]]
    prev = start[1]
    seen = {start[0]}
    scope = reads.owned(f, agent_id, start[2])
    while prev and prev not in seen:
        row = conn.execute(sa.select(f.c.id, f.c.supersedes_fact_id).where(scope, f.c.id == prev)).first()
        if row is None:
            break
        seen.add(row[0])
        back.append(row[0])
        prev = row[1]
    chain = list(reversed(back))
    frontier = [fact_id]
    while frontier:
        nxt = [
            r[0]
            for r in conn.execute(
                sa.select(f.c.id, f.c.agent_id, f.c.user_id).where(f.c.supersedes_fact_id.in_(frontier))
                .order_by(f.c.valid_from, f.c.created_at, f.c.id)
            )
            if r[0] not in seen and r[1] == agent_id and r[2] == start[2]
        ]
        seen.update(nxt)
        chain.extend(nxt)
        frontier = nxt
    return chain


def history(conn: sa.Connection, t: KGTables, agent_id: str, fact_id: str, user_id: Optional[str],
            now: datetime) -> list[FactDetail]:
    f = t.fact
    ids = chain_ids(conn, t, agent_id, fact_id, user_id)
    rows = {
        r["id"]: dict(r)
        for r in conn.execute(sa.select(*fact_cols(t)).where(f.c.id.in_(ids))).mappings()
        if reads.row_visible(r, agent_id, user_id)
    }
    return fact_details(conn, t, agent_id, [rows[i] for i in ids if i in rows], now)


def all_facts(conn: sa.Connection, t: KGTables, agent_id: str, *, limit: int, offset: int,
              entity_keys: Optional[list[Any]], include_inactive: bool, user_id: Optional[str],
              now: datetime) -> list[FactDetail]:
    f, lk = t.fact, t.link
    stmt = sa.select(*fact_cols(t)).where(reads.visible(f, agent_id, user_id))
    if not include_inactive:
        stmt = stmt.where(f.c.valid_to.is_(None), f.c.invalidated_at.is_(None))
    if entity_keys:
        sub = sa.select(lk.c.fact_id).where(reads.visible(lk, agent_id, user_id), lk.c.entity_key.in_(list(entity_keys)))
        stmt = stmt.where(f.c.id.in_(sub))
    stmt = stmt.order_by(sa.desc(f.c.created_at), f.c.id)
    rows = [dict(r) for r in conn.execute(stmt).mappings()]
    if not include_inactive:
        rows = [r for r in rows if not reads.is_expired(r, now)]
    return fact_details(conn, t, agent_id, rows[offset : offset + limit], now)


def entities(conn: sa.Connection, t: KGTables, agent_id: str, *, limit: int, offset: int, include_inactive: bool,
             user_id: Optional[str], now: datetime) -> list[EntityDetail]:
    e, a = t.entity, t.alias
    stmt = sa.select(e).where(reads.visible(e, agent_id, user_id))
    if not include_inactive:
        stmt = stmt.where(e.c.is_active == True)  # noqa: E712
    rows = [dict(r) for r in conn.execute(stmt.order_by(sa.desc(e.c.last_seen_at), e.c.id).limit(limit).offset(offset)).mappings()]
    keys = sorted({r["canonical_key"] for r in rows})
    aliases: dict[tuple[Optional[str], str], list[str]] = {}
    for batch in reads.chunked(keys):
        for alias, key, owner in conn.execute(
            sa.select(a.c.alias, a.c.canonical_entity_key, a.c.user_id)
            .where(reads.visible(a, agent_id, user_id), a.c.canonical_entity_key.in_(batch)).order_by(a.c.alias)
        ):
            aliases.setdefault((owner, key), []).append(alias)
    # KC-6.7 [ext]: not a summary that may quote a fact expired since it was written
    outlived = reads.summaries_outlived(conn, t, agent_id, rows, now)
    return [
        EntityDetail(
            entity_id=r["id"], canonical_key=r["canonical_key"], display_name=r["display_name"], entity_type=r["entity_type"],
            summary_text=None if (r["user_id"], r["canonical_key"]) in outlived else r["summary_text"], fact_count=r["fact_count"],
            importance_score=r["importance_score"], is_active=r["is_active"], first_seen_at=r["first_seen_at"],
            last_seen_at=r["last_seen_at"], summary_refreshed_at=r["summary_refreshed_at"],
            aliases=aliases.get((r["user_id"], r["canonical_key"]), []), user_id=r["user_id"],
        )
        for r in rows
    ]


def relationships(conn: sa.Connection, t: KGTables, agent_id: str, *, entity_key: Optional[str],
                  include_inactive: bool, user_id: Optional[str]) -> list[RelationshipDetail]:
    r_ = t.relationship
    stmt = sa.select(r_).where(reads.visible(r_, agent_id, user_id))
    if entity_key is not None:
        stmt = stmt.where(sa.or_(r_.c.source_entity_key == entity_key, r_.c.target_entity_key == entity_key))
    if not include_inactive:
        stmt = stmt.where(r_.c.valid_to.is_(None), r_.c.invalidated_at.is_(None))
    stmt = stmt.order_by(r_.c.source_entity_key, r_.c.rel_type, r_.c.target_entity_key, r_.c.id)
    return [
        RelationshipDetail(**dict(r), is_active=r["valid_to"] is None and r["invalidated_at"] is None)
        for r in conn.execute(stmt).mappings()
    ]


def intentions(conn: sa.Connection, t: KGTables, agent_id: str, *, status: Optional[str],
               user_id: Optional[str]) -> list[IntentionDetail]:
    it = t.intention
    cols = [c for c in it.c if c.name != "trigger_embedding_vec"]
    stmt = sa.select(*cols).where(reads.visible(it, agent_id, user_id))
    if status is not None:
        stmt = stmt.where(it.c.status == status)
    stmt = stmt.order_by(it.c.created_at, it.c.id)
    return [IntentionDetail(**dict(r)) for r in conn.execute(stmt).mappings()]


def scopes(conn: sa.Connection, t: KGTables, agent_id: str) -> list[Optional[str]]:
    """KC-6.0: ``None`` (shared) first, then every user id with rows of the agent, sorted."""
    users: set[str] = set()
    for table in (t.event, t.fact, t.entity):
        users.update(r[0] for r in conn.execute(
            sa.select(table.c.user_id).where(table.c.agent_id == agent_id, table.c.user_id.is_not(None)).distinct()))
    return [None, *sorted(users)]
