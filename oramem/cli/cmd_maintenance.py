"""Maintenance: purge, check, reembed."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

import click

from ..embedders.identity import describe_identity

from .app import cli
from .group import CLIError, one_line
from .output import emit_json
from .state import State, pass_state, check_db_path, read_catalog


@cli.command(short_help="Remove expired records.")
@pass_state
def purge(state: State) -> None:
    """Physically remove expired records; prints how many."""
    store = state.open(create=False)
    count = store.purge_expired()
    if state.json:
        emit_json({"purged": count})
    else:
        click.echo(f"purged {count} expired record(s)")


@cli.command(short_help="Check the database file: integrity, settings, index consistency.")
@pass_state
def check(state: State) -> None:
    """Check --db without writing to it: SQLite's integrity check, then per store (all, or
    --store) its settings, records against retrieval rows, the keyword index against the
    retrieval rows, vector lengths, the vector sidecar, and the knowledge tables' facts
    against their store records. Exit 1 when a check fails."""
    from ..sqlite.health import check_file

    if state.db == ":memory:" or not os.path.exists(state.db):
        raise CLIError(f"no database at {state.db}")
    check_db_path(state.db, exists=True, create=False, reading=True)
    findings = check_file(state.db, state.store_key() if state.store_id else None)
    failed = [f for f in findings if not f.ok]
    if state.json:
        emit_json({"ok": not failed, "checks": [{"check": f.check, "ok": f.ok, "detail": f.detail} for f in findings]})
    else:
        width = max(len(f.check) for f in findings)
        for f in findings:
            click.echo(f"{'ok  ' if f.ok else 'FAIL'}  {f.check.ljust(width)}  {f.detail}")
    if failed:
        raise CLIError(f"{len(failed)} check(s) failed: {', '.join(f.check for f in failed)}")


# ----------------------------------------------------------------------------- reembed
def _reembed_target(state: State) -> Any:
    """The embedder the --embed-* options select; without them the default model, never the
    offline fallback: `oramem reembed` offline (no cached model, no ONNX Runtime) moved the store,
    whatever its embedder (a service's semantic one too), to the lexical HashEmbedder(256) with
    a notice about "this new store" and exit 0 (red31). Refused before anything is read or
    written; HashEmbedder stays choosable by name (--embed-dim)."""
    if state._embedder_flags() or state.new_store_embedder is not None:
        return state.embedder()
    from ..embedders.defaults import DEFAULT_MODEL_ID, default_embedder, fallback_reason
    from ..embedders.hashing import HashEmbedder

    try:
        embedder = default_embedder(notify=False)
    except ImportError as exc:
        raise CLIError(str(exc), 2) from None
    except RuntimeError as exc:  # ModelNotAvailable for a bad $ORAMEM_ONNX_MODEL
        raise CLIError(one_line(exc), 1) from None
    reason = fallback_reason()
    if isinstance(embedder, HashEmbedder) and reason is not None:
        raise CLIError(
            f"reembed without --embed-* options moves the store to the default model {DEFAULT_MODEL_ID}, which is "
            f"not usable here: {reason}; get it with `oramem models pull` (HF_ENDPOINT may name a Hub mirror), or name "
            "the target embedder (--embed-onnx DIR, --embed-url URL --embed-model NAME, or --embed-dim N for the "
            "lexical HashEmbedder); nothing was changed", 2)
    return embedder


@cli.command(short_help="Re-embed a store with another embedder (resumable).")
@click.option("--batch-size", default=256, show_default=True, type=click.IntRange(min=1), help="Texts per embedding batch.")
@click.option("--restart", is_flag=True, help="Discard an unfinished reembed to a different embedder and start over.")
@pass_state
def reembed(state: State, batch_size: int, restart: bool) -> None:
    """Move the store to the embedder the --embed-* options select, in batches.

    Re-embeds every retrieval row with the new embedder and then swaps all vectors in at
    once, recording the new embedder (and dimension) in the store. The knowledge layer's
    vectors (KnowledgeMemory: facts, entities, events, intentions, observations, clusters)
    are re-embedded from their texts in that same swap. Interrupted (Ctrl-C, a failing
    service), it keeps what was done: run the same command again to resume. Until it
    finishes, the store answers with its old vectors and old embedder. Stop the processes
    that write with the old embedder first, and reopen them with the new one after.

    An Oracle store: --db oracle://USER@HOST:PORT/SERVICE (password from ORAMEM_PASSWORD,
    else a prompt); the same steps run through oramem_admin's reembed calls (static-checked,
    not run against Oracle). When the dimension changes, the store refuses calls during the
    final column swap (seconds to minutes: the vector index is rebuilt); rerun to finish it
    if it was interrupted. An Oracle store whose knowledge tables hold vectors is refused
    before anything changes: re-embedding them on Oracle is not built.
    """
    oracle = state.db.startswith("oracle://")
    if oracle:
        from ..migrate import parse_location

        try:
            location = parse_location(state.db, "--db")
        except ValueError as exc:
            raise CLIError(str(exc), 2) from None
        sid = state.store_key()
        row: Optional[dict[str, Any]] = None
    else:
        if state.db == ":memory:" or not os.path.exists(state.db):
            raise CLIError(f"no database at {state.db}")
        sid = state.store_key()
        row = read_catalog(state.db).get(sid)
        if row is None:
            raise CLIError(f"no store {sid!r} in {state.db}; pick one with --store")
    # a keyword store has no vectors: reembed_store refuses it, whatever the target
    embedder = state.embedder() if row is not None and row.get("capability") == "keyword" else _reembed_target(state)
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if state.json:
            return
        if bar is None:
            bar = click.progressbar(length=max(total, 1), label=f"re-embedding {sid}", file=sys.stderr)
            bar.__enter__()
            bar.update(done)
        else:
            bar.update(done - bar.pos)

    try:
        if oracle:
            from ..oracle_reembed import reembed_store as reembed_oracle
            from .cmd_backup import oracle_connect

            user, dsn = location.target.split("@", 1)
            conn = oracle_connect(user, dsn)
            try:
                result = reembed_oracle(conn, embedder, memory_store_id=sid, batch_size=batch_size, progress=progress,
                                        restart=restart)
            finally:
                conn.close()
        else:
            from ..sqlite.reembed import reembed_store

            result = reembed_store(state.db, embedder, memory_store_id=sid, batch_size=batch_size, progress=progress,
                                   restart=restart)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if state.json:
        emit_json(
            {
                "memory_store_id": result.memory_store_id,
                "rows": result.rows,
                "resumed": result.resumed,
                "total": result.total,
                "vector_dim": result.vector_dim,
                "embedder": result.embedder,
                "previous": result.previous,
                "rechunked": result.rechunked,
                "kept": result.kept,
                "knowledge": result.knowledge,
            }
        )
        return
    resumed = f" ({result.resumed} done by an earlier run)" if result.resumed else ""
    click.echo(
        f"re-embedded {result.rows} of {result.total} rows{resumed} of store {result.memory_store_id}: "
        f"{describe_identity(result.previous)} -> {describe_identity(result.embedder)}"
    )
    if result.knowledge:
        click.echo(f"re-embedded {result.knowledge} vector(s) of the knowledge tables from their texts")
    if result.rechunked or result.kept:
        click.echo(f"re-chunked {result.rechunked} record(s) to the embedder's window; kept the rows of "
                   f"{result.kept} record(s) whose rows the store did not chunk from their content")
