"""Indexed reads used by the write pipeline and the public getters (sync; run in a worker
thread under the backend's read context)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Iterable

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
    "fact_status",
]

IN_BATCH = 500


def chunked(values: list, size: int = IN_BATCH) -> Iterable[list]:
    for i in range(0, len(values), size):
        yield values[i : i + size]


def lookup_aliases(conn: sa.Connection, t: KGTables, agent_id: str, norms: list[str]) -> dict[str, tuple[str, str]]:
    """Indexed lookup of ``norm``-ed alias texts (unique ``(agent_id, alias)``)."""
    out: dict[str, tuple[str, str]] = {}
    a = t.alias
    for batch in chunked(sorted(set(norms))):
        rows = conn.execute(
            sa.select(a.c.alias, a.c.canonical_entity_key, a.c.canonical_entity_type).where(
                a.c.agent_id == agent_id, a.c.alias.in_(batch)
            )
        )
        for alias, key, etype in rows:
            out[alias] = (key, etype)
    return out


def load_entities(conn: sa.Connection, t: KGTables, agent_id: str, keys: Iterable[str]) -> dict[str, dict]:
    e = t.entity
    out: dict[str, dict] = {}
    for batch in chunked(sorted(set(keys))):
        for row in conn.execute(sa.select(e).where(e.c.agent_id == agent_id, e.c.canonical_key.in_(batch))).mappings():
            out[row["canonical_key"]] = dict(row)
    return out


def entities_by_slug(conn: sa.Connection, t: KGTables, agent_id: str, slug_value: str) -> list[dict]:
    """Active entities whose key's slug part equals ``slug_value`` (any type), by key."""
    e = t.entity
    key = e.c.canonical_key
    rows = conn.execute(
        sa.select(e.c.canonical_key, e.c.entity_type, e.c.display_name)
        .where(
            e.c.agent_id == agent_id,
            e.c.is_active == True,  # noqa: E712
            sa.func.substr(key, sa.func.instr(key, ":") + 1) == slug_value,
        )
        .order_by(key)
    ).mappings()
    return [dict(r) for r in rows]


def entities_by_slugs(conn: sa.Connection, t: KGTables, agent_id: str, slugs: list[str]) -> dict[str, list[dict]]:
    """Batched :func:`entities_by_slug`: slug → active entities whose key's slug part equals it."""
    e = t.entity
    key = e.c.canonical_key
    part = sa.func.substr(key, sa.func.instr(key, ":") + 1)
    out: dict[str, list[dict]] = {}
    for batch in chunked(sorted(set(s for s in slugs if s))):
        rows = conn.execute(
            sa.select(e.c.canonical_key, e.c.entity_type, e.c.display_name, part.label("slug_part"))
            .where(e.c.agent_id == agent_id, e.c.is_active == True, part.in_(batch))  # noqa: E712
            .order_by(key)
        ).mappings()
        for r in rows:
            out.setdefault(r["slug_part"], []).append(dict(r))
    return out


def active_entities_of_type(conn: sa.Connection, t: KGTables, agent_id: str, entity_type: str, with_vec: bool) -> list[dict]:
    e = t.entity
    cols = [e.c.canonical_key, e.c.display_name, e.c.entity_type]
    if with_vec:
        cols.append(e.c.embedding_vec)
    rows = conn.execute(
        sa.select(*cols)
        .where(e.c.agent_id == agent_id, e.c.entity_type == entity_type, e.c.is_active == True)  # noqa: E712
        .order_by(e.c.canonical_key)
    ).mappings()
    return [dict(r) for r in rows]


def is_expired(row: dict, now: datetime) -> bool:
    ttl = row.get("ttl_days")
    return ttl is not None and row["ingested_at"] + timedelta(days=int(ttl)) <= now


def fact_status(row: dict, now: datetime) -> str:
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


def _fact_cols(t: KGTables) -> list:
    return [c for c in t.fact.c if c.name != "embedding_vec"]


def current_facts_by_ids(conn: sa.Connection, t: KGTables, agent_id: str, ids: list[str], now: datetime) -> dict[str, dict]:
    f = t.fact
    out: dict[str, dict] = {}
    for batch in chunked(sorted(set(ids))):
        # looked up by primary key only (with agent_id in the WHERE clause SQLite picks the
        # (agent_id, ...) index and scans the agent's facts); the agent is checked here
        rows = conn.execute(
            sa.select(*_fact_cols(t)).where(f.c.id.in_(batch), f.c.valid_to.is_(None), f.c.invalidated_at.is_(None))
        ).mappings()
        for r in rows:
            d = dict(r)
            if d["agent_id"] == agent_id and not is_expired(d, now):
                out[d["id"]] = d
    return out


def current_same_key_facts(
    conn: sa.Connection, t: KGTables, agent_id: str, entity_key: str, attribute_keys: list[str], now: datetime
) -> list[dict]:
    if not attribute_keys:
        return []
    f = t.fact
    rows = conn.execute(
        sa.select(*_fact_cols(t))
        .where(
            f.c.agent_id == agent_id,
            f.c.entity_key == entity_key,
            f.c.valid_to.is_(None),
            f.c.invalidated_at.is_(None),
            f.c.attribute_key.in_(sorted(set(attribute_keys))),
        )
        .order_by(f.c.valid_from, f.c.id)
    ).mappings()
    return [d for d in (dict(r) for r in rows) if not is_expired(d, now)]


def registry_rows(conn: sa.Connection, t: KGTables, agent_id: str, keys: list[str]) -> dict[str, dict]:
    r = t.registry
    out: dict[str, dict] = {}
    for batch in chunked(sorted(set(keys))):
        for row in conn.execute(sa.select(r).where(r.c.agent_id == agent_id, r.c.key.in_(batch))).mappings():
            out[row["key"]] = dict(row)
    return out

