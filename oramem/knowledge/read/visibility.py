"""What a retrieve sees (KC-0.3 at ``(as_of, known_at)``, KC-5.2's time range, stale facts):
applied twice, as store metadata filters before the store's top-k cut (SC-6.5) and on the
knowledge rows themselves (the rows are the source of truth; store metadata mirrors them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional

import sqlalchemy as sa

from ..db import queries as reads
from ..text import iso

__all__ = ["View", "fact_visible", "store_filter", "sql_visible", "edge_visible", "p_sql_visible", "p_edge_visible"]


@dataclass
class View:
    """The point of view of one retrieve call (KC-0.3, KC-5.3, KC-5.8)."""

    now: datetime
    as_of: Optional[datetime]
    known_at: Optional[datetime]
    include_stale: bool
    trange: Optional[tuple[datetime, datetime]]

    @property
    def at(self) -> datetime:
        return self.as_of or self.now

    @property
    def known(self) -> datetime:
        return self.known_at or self.now

    @property
    def hide_stale(self) -> bool:
        return self.as_of is None and not self.include_stale


def fact_visible(row: dict[str, Any], v: View) -> bool:
    if row["ingested_at"] > v.known:
        return False
    if row.get("invalidated_at") is not None and row["invalidated_at"] <= v.known:
        return False
    if reads.is_expired(row, v.now):
        return False
    if v.trange is not None:
        start, end = v.trange
        if not (row["valid_from"] < end and (row.get("valid_to") is None or row["valid_to"] > start)):
            return False
    elif row["valid_from"] > v.at or (row.get("valid_to") is not None and row["valid_to"] <= v.at):
        return False
    if v.hide_stale and row.get("is_stale"):
        return False
    return True


def store_filter(v: View, *, min_confidence: Optional[float], entity_keys: Optional[list[str]]) -> dict[str, Any]:
    """The same visibility as store metadata filters (SC-9.3), so it applies before top-k."""
    conds: list[dict[str, Any]] = [{"kg_ingested_at": {"$lte": iso(v.known)}}]
    if v.known_at is None:
        conds.append({"kg_invalidated_at": {"$exists": False}})
    else:
        conds.append({"$or": [{"kg_invalidated_at": {"$exists": False}}, {"kg_invalidated_at": {"$gt": iso(v.known)}}]})
    if v.trange is not None:
        start, end = v.trange
        conds.append({"kg_valid_from": {"$lt": iso(end)}})
        conds.append({"$or": [{"kg_valid_to": {"$exists": False}}, {"kg_valid_to": {"$gt": iso(start)}}]})
    else:
        conds.append({"kg_valid_from": {"$lte": iso(v.at)}})
        if v.as_of is None:
            conds.append({"$or": [{"kg_valid_to": {"$exists": False}}, {"kg_valid_to": {"$gt": iso(v.at)}}]})
        else:
            conds.append({"$or": [{"kg_valid_to": {"$exists": False}}, {"kg_valid_to": {"$gt": iso(v.at)}}]})
    if v.hide_stale:
        conds.append({"kg_is_stale": False})
    if min_confidence is not None:
        conds.append({"kg_confidence": {"$gte": float(min_confidence)}})
    if entity_keys is not None:
        conds.append({"kg_entity_keys": {"$array_contains_any": list(entity_keys)}})
    return {"$and": conds}


def sql_visible(f: sa.Table, v: View) -> list[Any]:
    """KC-0.3 visibility as SQL conditions on the fact table (expiry is checked on rows)."""
    conds = [f.c.ingested_at <= v.known, sa.or_(f.c.invalidated_at.is_(None), f.c.invalidated_at > v.known)]
    if v.trange is not None:
        start, end = v.trange
        conds += [f.c.valid_from < end, sa.or_(f.c.valid_to.is_(None), f.c.valid_to > start)]
    else:
        conds += [f.c.valid_from <= v.at, sa.or_(f.c.valid_to.is_(None), f.c.valid_to > v.at)]
    if v.hide_stale:
        conds.append(f.c.is_stale == False)  # noqa: E712
    return conds


def edge_visible(r: sa.Table, v: View) -> list[Any]:
    """KC-5.8: edges are filtered by their current single interval."""
    if v.as_of is None and v.known_at is None:
        return [r.c.valid_to.is_(None), r.c.invalidated_at.is_(None)]
    return [
        r.c.created_at <= v.known,
        sa.or_(r.c.invalidated_at.is_(None), r.c.invalidated_at > v.known),
        r.c.valid_from <= v.at,
        sa.or_(r.c.valid_to.is_(None), r.c.valid_to > v.at),
    ]


def p_sql_visible(f: sa.Table, has_trange: bool, hide_stale: bool) -> list[sa.ColumnElement[bool]]:
    """:func:`sql_visible` with ``p_known``, ``p_at`` (or ``p_start``/``p_end``) bound."""
    known: sa.BindParameter[Any] = sa.bindparam("p_known")
    conds = [f.c.ingested_at <= known, sa.or_(f.c.invalidated_at.is_(None), f.c.invalidated_at > known)]
    # valid_from's bound through COALESCE(valid_from, valid_from) (the same value: the column
    # is NOT NULL), so that no index takes it as a range: with FACT_AGT_ENT_VF_IX's
    # (agent_id, entity_key, valid_from) SQLite (no statistics) would read an entity's facts by
    # that range and sort them all, instead of walking the rank index to its first rows
    # (tests/knowledge/test_retrieve_query_plans.py); a read ordered by valid_from still walks it
    valid_from = sa.func.coalesce(f.c.valid_from, f.c.valid_from)
    if has_trange:
        conds += [valid_from < sa.bindparam("p_end"), sa.or_(f.c.valid_to.is_(None), f.c.valid_to > sa.bindparam("p_start"))]
    else:
        at: sa.BindParameter[Any] = sa.bindparam("p_at")
        conds += [valid_from <= at, sa.or_(f.c.valid_to.is_(None), f.c.valid_to > at)]
    if hide_stale:
        conds.append(f.c.is_stale == False)  # noqa: E712
    return conds


def p_edge_visible(r: sa.Table, current: bool) -> list[sa.ColumnElement[bool]]:
    """:func:`edge_visible` with ``p_known`` and ``p_at`` bound (``current``: no as_of/known_at)."""
    if current:
        return [r.c.valid_to.is_(None), r.c.invalidated_at.is_(None)]
    known: sa.BindParameter[Any] = sa.bindparam("p_known")
    at: sa.BindParameter[Any] = sa.bindparam("p_at")
    return [
        r.c.created_at <= known,
        sa.or_(r.c.invalidated_at.is_(None), r.c.invalidated_at > known),
        r.c.valid_from <= at,
        sa.or_(r.c.valid_to.is_(None), r.c.valid_to > at),
    ]
