"""The ``demo`` command."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from importlib import resources
from typing import Any

import click

from ..embedders import HashEmbedder
from ..embedders.identity import describe_identity, identity_of

from .app import cli
from .cmd_backup import parse_jsonl, import_lines
from .group import CLIError
from .output import record_to_dict, emit_json, results_table
from .state import State


# ----------------------------------------------------------------------------- demo
DEMO_QUERIES: tuple[dict[str, Any], ...] = (
    {"strategy": "vector", "query": "what coffee does she drink", "user_id": "alice"},
    {"strategy": "keyword", "query": "peanut allergy", "record_types": None},
    {"strategy": "hybrid", "query": "vector index latency", "thread_id": "alice-db"},
    {"strategy": "hybrid", "query": "hotel budget per night", "metadata_filter": {"topic": "travel"}},
    {"strategy": "vector", "query": "safety rules before recommending food", "metadata_filter": {"tags": {"$array_contains": "safety"}}, "record_types": ["guideline", "fact", "preference"]},
    {"strategy": "keyword", "query": "offline mode sqlite", "user_id": "chen", "metadata_filter": {"importance": {"$gte": 3}}},
)


def demo_records() -> list[str]:
    return resources.files("oramem").joinpath("data/demo.jsonl").read_text(encoding="utf-8").splitlines()


def describe_query(q: dict[str, Any]) -> str:
    parts = []
    for key in ("user_id", "thread_id", "agent_id"):
        if q.get(key):
            parts.append(f"{key.split('_')[0]}={q[key]}")
    if q.get("record_types"):
        parts.append("types=" + ",".join(q["record_types"]))
    if q.get("metadata_filter"):
        parts.append("filter=" + json.dumps(q["metadata_filter"]))
    return " ".join(parts) or "all records"


@cli.command(short_help="Load demo conversations and search them.")
@click.option("-k", "k", default=3, show_default=True, type=click.IntRange(min=1), help="Results per search.")
@click.pass_context
def demo(ctx: click.Context, k: int) -> None:
    """Load a small multi-user conversation set into a fresh store and search it.

    Uses a temporary database unless --db/ORAMEM_DB is given; an explicit path must not
    exist yet (the demo never writes into an existing database).
    """
    state: State = ctx.obj
    from ..types import SchemaPolicy

    tmpdir = None
    if state.db_given:
        if state.db != ":memory:" and os.path.exists(state.db):
            raise CLIError(f"{state.db} already exists; the demo only writes to a new file (pick another --db or omit it)")
        path = state.db
    else:
        tmpdir = tempfile.mkdtemp(prefix="oramem-demo-")
        path = os.path.join(tmpdir, "demo.db")
    state.store_strategy = "hybrid"
    try:
        store = state.open(create=True, path=path, policy=SchemaPolicy.CREATE_IF_EMPTY)
        lines = parse_jsonl(demo_records(), "oramem/data/demo.jsonl")
        started = time.perf_counter()
        written = import_lines(store, lines, 500, progress=False).imported
        load_s = time.perf_counter() - started
        users = sorted({ln.fields["user_id"] for ln in lines if ln.fields.get("user_id")})
        threads = sorted({ln.fields["thread_id"] for ln in lines if ln.fields.get("thread_id")})
        runs = []
        for q in DEMO_QUERIES:
            kwargs = {key: q[key] for key in ("user_id", "thread_id", "agent_id", "record_types", "metadata_filter") if q.get(key)}
            t0 = time.perf_counter()
            results = store.search(q["query"], k, strategy=q["strategy"], **kwargs)
            runs.append((q, results, time.perf_counter() - t0))
        if state.json:
            emit_json(
                {
                    "database": path if tmpdir is None else None,
                    "embedder": identity_of(store.embedder),
                    "loaded": written,
                    "users": users,
                    "threads": threads,
                    "searches": [
                        {
                            "strategy": q["strategy"],
                            "query": q["query"],
                            "scope": describe_query(q),
                            "results": [
                                {"rank": i, "distance": d, "record": record_to_dict(r)} for i, (r, d) in enumerate(res, 1)
                            ],
                        }
                        for q, res, _ in runs
                    ],
                }
            )
            return
        click.echo(
            f"Loaded {written} records ({len(users)} users, {len(threads)} threads) in {load_s:.2f}s "
            f"into a HYBRID store; embedder: {describe_identity(identity_of(store.embedder))}"
            f"{' (lexical, not semantic)' if isinstance(store.embedder, HashEmbedder) else ''}."
        )
        for q, results, secs in runs:
            click.echo()
            title = f"[{q['strategy'].upper()}] \"{q['query']}\""
            click.echo(click.style(title, fg="cyan", bold=True) + f"   {describe_query(q)}   ({secs * 1000:.1f} ms)")
            click.echo(results_table(results) if results else "no results")
        click.echo()
        if tmpdir is None:
            click.echo(f"Explore it: oramem --db {path} search \"marathon snacks\" --strategy hybrid")
        else:
            click.echo("Keep the data with: oramem --db demo.db demo   then: oramem --db demo.db search \"...\"")
    finally:
        state.close()
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
