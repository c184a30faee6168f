"""The ``stores`` group: list, describe, drop."""

from __future__ import annotations

import os
from typing import Any, Optional

import click

from ..embedders.identity import decode_identity, describe_identity
from ..normalize import validate_store_id
from ..sqlite import admin as sqlite_admin
from ..sqlite.schema import has_keyword, keyword_rows_of
from ..types import SearchStrategy

from .app import cli
from .group import CLIError
from .output import render_table, emit_json
from .state import State, pass_state, read_catalog


# ----------------------------------------------------------------------------- stores
@cli.group(short_help="List, describe or drop stores.")
def stores() -> None:
    """List, describe and drop the stores of the database file."""


def _catalog_or_fail(state: State) -> dict[str, dict[str, Any]]:
    if state.db == ":memory:" or not os.path.exists(state.db):
        raise CLIError(f"no database at {state.db}")
    return read_catalog(state.db)


def _store_summary(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "memory_store_id": row["store_id"],
        "search_strategy": row["capability"],
        "vector_dim": row["vector_dim"],
        "search_index_sync": row["search_index_sync"],
        "default_ttl_days": row["default_ttl_days"],
        "max_ttl_days": row["max_ttl_days"],
        "embedder": decode_identity(row.get("embedder")),
        # issue 23: the keyword index ranks passages of a record's consecutive retrieval rows
        # (a store with a keyword index whose recorded chunk policy counts tokens: a HYBRID
        # store, as a KEYWORD store records no embedder); Oracle's describe_store says the same
        "keyword_passages": has_keyword(SearchStrategy(row["capability"])) and keyword_rows_of(row.get("embedder")) is not None,
        "schema_version": row["schema_version"],
        "keyword_language": row.get("keyword_language") or ("legacy" if row["schema_version"] < 2 else None),
        "state": row["state"],
        "created_at": row["created_at"],
    }


@stores.command(name="list")
@pass_state
def stores_list(state: State) -> None:
    """List the stores in --db with their settings."""
    catalog = _catalog_or_fail(state)
    summaries = [_store_summary(r) for r in catalog.values()]
    if state.json:
        emit_json(summaries)
        return
    if not summaries:
        click.echo(f"no stores in {state.db}")
        return
    rows = [
        [s["memory_store_id"], s["search_strategy"], str(s["vector_dim"] or "-"), s["search_index_sync"], s["state"], s["created_at"]]
        for s in summaries
    ]
    click.echo(render_table(["store", "strategy", "dim", "sync", "state", "created_at"], rows, flex=5))


@stores.command(name="describe")
@click.argument("store_id", required=False)
@pass_state
def stores_describe(state: State, store_id: Optional[str]) -> None:
    """Settings and live record counts of STORE_ID (default: --store or the default store)."""
    if store_id:
        state.store_id = store_id
    sid = state.store_key()
    catalog = _catalog_or_fail(state)
    if sid not in catalog:
        raise CLIError(f"no store {sid!r} in {state.db} (stores there: {', '.join(catalog) or 'none'})")
    info = _store_summary(catalog[sid])
    info["records"] = sqlite_admin.count_live_records(state.db, sid)
    if state.json:
        emit_json(info)
        return
    width = max(len(k) for k in info)
    for key, value in info.items():
        if key == "records":
            value = ", ".join(f"{t}={n}" for t, n in value.items()) or "none"
        elif key == "embedder" and value is not None:
            value = describe_identity(value)
        click.echo(f"{click.style(key.ljust(width), bold=True)}  {'-' if value is None else value}")


@stores.command(name="drop")
@click.argument("store_id")
@click.option("--yes", is_flag=True, help="Confirm: the store, all its records and its knowledge tables are deleted.")
@pass_state
def stores_drop(state: State, store_id: str, yes: bool) -> None:
    """Delete STORE_ID with all its records and its knowledge layer's tables (entities,
    facts, events, ...; needs --yes)."""
    sid = validate_store_id(store_id)
    catalog = _catalog_or_fail(state)
    if sid not in catalog:
        raise CLIError(f"no store {sid!r} in {state.db} (stores there: {', '.join(catalog) or 'none'})")
    if not yes:
        what = "all its records and its knowledge tables" if sqlite_admin.knowledge_tables_exist(state.db, sid) else "all its records"
        raise CLIError(f"dropping store {sid!r} deletes {what}; repeat with --yes to confirm", 2)
    if sqlite_admin.knowledge_tables_exist(state.db, sid):
        from ..knowledge.db.install import table_names  # the knowledge layer names its own tables

        sqlite_admin.register_dependent_tables(table_names)
    sqlite_admin.drop_store(state.db, sid)
    if state.json:
        emit_json({"dropped": sid})
    else:
        click.echo(f"dropped store {sid}")
