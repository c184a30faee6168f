"""The write path's INSERT and UPDATE statements, built once per table and shape (issue 25
item 6).

Building ``sa.update(table).where(owned(...), ...).values(...)`` per row cost more CPU than
running it (its clause objects, operator coercions and cache key, ~0.1-0.2 ms each, a dozen
times per knowledge write). These statements are made once per table object and column set
by :func:`queries.cached_stmt`, with every value a bound parameter: the agent (``p_agent``),
the user (``p_user``), the row key (``p_key``) and each new value (``v_<column>``). A cached
statement holds table structure only, so nothing one user writes is kept for another
(tests/knowledge/test_write_stmt_cache.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Optional

import sqlalchemy as sa

from .queries import cached_stmt, p_owned

__all__ = ["insert_rows", "update_owned", "update_owned_many", "update_by_id", "update_by_id_many"]


def _set_clause(table: sa.Table, columns: tuple[str, ...]) -> dict[str, Any]:
    return {c: sa.bindparam(f"v_{c}", type_=table.c[c].type) for c in columns}


def _values(values: Mapping[str, Any]) -> dict[str, Any]:
    return {f"v_{c}": v for c, v in values.items()}


def insert_rows(conn: sa.Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """INSERT ``rows`` (dicts with the same keys; nothing when empty)."""
    if rows:
        conn.execute(cached_stmt(table, ("insert",), lambda: sa.insert(table)), rows)


def update_owned(conn: sa.Connection, table: sa.Table, agent_id: str, user_id: Optional[str], key_column: str, key: Any,
                 values: Mapping[str, Any]) -> None:
    """UPDATE the row of ``table`` whose ``key_column`` is ``key`` among the rows the write's
    scope owns (:func:`queries.owned`: the agent's, and the user's or the shared ones)."""
    update_owned_many(conn, table, agent_id, user_id, key_column, {key: values})


def update_owned_many(conn: sa.Connection, table: sa.Table, agent_id: str, user_id: Optional[str], key_column: str,
                      updates: Mapping[Any, Mapping[str, Any]]) -> None:
    """:func:`update_owned` for each ``key: values`` of ``updates``, in their order: one
    executemany per run of keys that set the same columns."""
    no_user = user_id is None
    for columns, params in _runs(updates, lambda key: {"p_agent": agent_id, "p_user": user_id, "p_key": key}):
        stmt = cached_stmt(table, ("update_owned", key_column, columns, no_user), lambda: (
            sa.update(table)
            .where(p_owned(table, no_user), table.c[key_column] == sa.bindparam("p_key", type_=table.c[key_column].type))
            .values(_set_clause(table, columns))))
        conn.execute(stmt, params)


def update_by_id(conn: sa.Connection, table: sa.Table, row_id: str, values: Mapping[str, Any]) -> None:
    """UPDATE the row of ``table`` with primary key ``id`` = ``row_id`` (a row the caller
    read in the write's scope)."""
    update_by_id_many(conn, table, {row_id: values})


def update_by_id_many(conn: sa.Connection, table: sa.Table, updates: Mapping[str, Mapping[str, Any]]) -> None:
    """:func:`update_by_id` for each ``row_id: values`` of ``updates``, in their order: one
    executemany per run of rows that set the same columns."""
    for columns, params in _runs(updates, lambda key: {"p_key": key}):
        stmt = cached_stmt(table, ("update_by_id", columns), lambda: (
            sa.update(table).where(table.c.id == sa.bindparam("p_key", type_=table.c.id.type)).values(_set_clause(table, columns))))
        conn.execute(stmt, params)


def _runs(updates: Mapping[Any, Mapping[str, Any]], where: Callable[[Any], dict[str, Any]]
          ) -> Iterator[tuple[tuple[str, ...], list[dict[str, Any]]]]:
    """The parameter sets of ``updates``, grouped into runs of consecutive updates that set the
    same columns (the order of the updates is kept)."""
    run: list[dict[str, Any]] = []
    run_columns: tuple[str, ...] = ()
    for key, values in updates.items():
        if not values:
            raise ValueError("an update needs at least one column to set")
        columns = tuple(sorted(values))
        if run and columns != run_columns:
            yield run_columns, run
            run = []
        run_columns = columns
        run.append({**where(key), **_values(values)})
    if run:
        yield run_columns, run
