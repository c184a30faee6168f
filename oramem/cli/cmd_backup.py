"""Backup and transfer: import, export (with salvage of a damaged file), migrate."""

from __future__ import annotations

import contextlib
import json
import re
import os
import sys
import time
from typing import Any, Iterable, Iterator, Optional, Sequence

import click

from .. import jsonl
from ..embedders.identity import describe_identity, identity_of
from ..errors import DuplicateRecordError, StoreError
from ..sqlite import admin as sqlite_admin

from .app import cli
from ..oracle_logon import logon_failure
from .group import CLIError, ask_password, one_line
from .output import emit_json
from .state import State, pass_state


# ----------------------------------------------------------------------------- import / export
def parse_jsonl(lines: Iterable[str], source: str, **kwargs: Any) -> list[jsonl.ImportLine]:
    try:
        return jsonl.parse_lines(lines, source, **kwargs)
    except jsonl.JSONLError as exc:
        # the default type of lines without one is --type here
        message = str(exc).replace("or a default type)", "or --type TYPE for the lines without one)")
        # a line is one record: the store's per-record list arguments are the line's fields
        message = re.sub(r"\b(user|agent|thread)_ids\[0\]", r"\1_id", message)
        message = re.sub(r"\brecord_ids\[0\]", "id", message)
        message = re.sub(r"\b(timestamp|role|metadata|index_text)s\[0\]", r"\1", message)
        raise CLIError(message, 2) from None


def import_lines(store: Any, lines: Sequence[jsonl.ImportLine], batch_size: int, *, progress: bool, on_conflict: str = "fail",
                 allow_erased: bool = False, keep_verdicts: bool = False) -> jsonl.ImportResult:
    """Write validated lines, ``batch_size`` per transaction; a failure or Ctrl-C says how
    far it got (exit 2 for bad input, 1 for store errors, 130 for Ctrl-C)."""
    bar_cm = click.progressbar(length=len(lines), label="importing", file=sys.stderr) if progress else contextlib.nullcontext()
    with bar_cm as bar:
        try:
            return jsonl.import_records(
                store, lines, on_conflict=on_conflict, batch_size=batch_size, progress=bar.update if bar is not None else None,
                allow_erased=allow_erased, keep_verdicts=keep_verdicts,
            )
        except jsonl.ImportStopped as stop:
            cause = stop.cause
            if isinstance(cause, KeyboardInterrupt):
                raise CLIError(f"interrupted: {stop.summary()}; resume with: oramem import --on-conflict skip FILE", 130) from None
            code = 2 if isinstance(cause, (ValueError, TypeError)) else 1
            hint = "; fix it and re-run with --on-conflict skip to resume" if stop.result.imported else ""
            message = one_line(cause)
            if (on_conflict == "fail" and isinstance(cause, DuplicateRecordError)
                    and ("already exists" in message or "already stored" in message)):
                # an id of the file is in the store already: say which flag decides (the
                # SQLite engine names the clashes; Oracle's message names them itself)
                if cause.records:
                    listed = ", ".join(f"{rid!r} ({rtype})" for rtype, rid in cause.records[:5])
                    more = f" and {len(cause.records) - 5} more" if len(cause.records) > 5 else ""
                    message = f"ids already stored: {listed}{more}"
                hint = ("; --on-conflict skip keeps the stored records (and resumes an interrupted import), "
                        "--on-conflict replace overwrites them with the file's (those of the same user and agent)")
            if isinstance(stop, jsonl.ImportRefused):
                # imp48: found over the whole file before its first batch (SQLite)
                listed = ", ".join(map(str, stop.linenos[:10])) + (
                    f" and {len(stop.linenos) - 10} more" if len(stop.linenos) > 10 else "")
                where = f"line{'s' if len(stop.linenos) > 1 else ''} {listed}"
                raise CLIError(f"{where}: {message} (nothing was written: 0 of {stop.result.total} record(s) "
                               f"imported{hint})", code) from None
            where = f"lines {stop.lineno}-{stop.last_lineno}" if stop.last_lineno != stop.lineno else f"line {stop.lineno}"
            raise CLIError(f"{where}: {message} ({stop.summary()}; this batch wrote nothing{hint})", code) from None


def _check_vector_source(header: dict[str, Any], store: Any, source: str) -> None:
    """Vectors in a file go only into a store that embeds with the embedder that made them
    (a foreign vector space would silently corrupt search, new-user-trial #2)."""
    from ..embedders.identity import same_identity

    theirs, ours = header.get("embedder"), identity_of(store.embedder)
    if theirs is None:
        return  # vectors the caller made: the store's dimension check still applies
    if ours is None or not same_identity(theirs, ours):
        raise CLIError(
            f"{source} holds vectors made by {describe_identity(theirs)}; this store embeds with "
            f"{describe_identity(ours) if ours else 'no embedder'}: import into a store opened with that embedder "
            "(--embed-*), or pass --no-vectors to re-embed the text",
            2,
        )


def _check_knowledge_vectors(header: dict[str, Any], dims: dict[int, int], store: Any, source: str) -> None:
    """The knowledge rows' vectors (never re-embedded on import) go only into a store of the
    embedder that made them (trial32 F3: a backup of a 384-d ONNX store imported into a new
    256-d HashEmbedder file said "imported", and the next knowledge write failed in numpy),
    refused before anything is written. The file's header names that embedder (exports
    write it whenever knowledge rows follow); an older file without one is checked by
    dimension only."""
    from ..embedders.identity import same_identity

    theirs, ours = header.get("embedder"), identity_of(store.embedder)
    how = ("import into a store opened with the embedder that made them (--embed-*; a new --db file takes the "
           "embedder the file's header names when it can be rebuilt here), or export the records alone "
           "(export --no-knowledge) and let new writes rebuild the knowledge; no record or knowledge row was written")
    if theirs is not None and (ours is None or not same_identity(theirs, ours)):
        raise CLIError(
            f"{source} holds knowledge rows whose vectors were made by {describe_identity(theirs)}; this store embeds "
            f"with {describe_identity(ours) if ours else 'no embedder'}, and knowledge vectors are never re-embedded: {how}",
            2,
        )
    wrong = sorted(d for d in dims if d != store.vector_dim)
    if wrong:
        raise CLIError(
            f"{source} holds {sum(dims[d] for d in wrong)} knowledge row(s) with {'/'.join(map(str, wrong))}-dimensional "
            f"vectors; this store's vectors have {store.vector_dim} dimensions, and knowledge vectors are never "
            f"re-embedded: {how}",
            2,
        )


@cli.command(name="import", short_help="Import (restore) records from JSON Lines.")
@click.argument("file", type=click.File("r", encoding="utf-8-sig"))
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(min=1), help="Records per transaction.")
@click.option(
    "--on-conflict",
    type=click.Choice(jsonl.ON_CONFLICT),
    default="fail",
    show_default=True,
    help="An id already stored: fail (stop), skip (keep the stored record; resumes an interrupted import) or replace (a stored record, thread row or knowledge row of the same user and agent only; another's under the id stops the import). A SQLite store checks the whole file first: a refused file writes nothing; an Oracle store stops at the batch that holds the id (the batches before it stay written).",
)
@click.option("--type", "default_type", type=click.Choice(jsonl.ADDABLE_TYPES), help="Record type of lines without record_type.")
@click.option("--fresh-times", is_flag=True, help="Ignore created_at/expires_at in the file: set created_at to now and expiry from ttl_days, as add does.")
@click.option("--no-vectors", is_flag=True, help="Ignore the vectors in the file (export --with-vectors) and embed with this store's embedder.")
@click.option("--allow-erased", is_flag=True, help="Import records of users or agents erased (`oramem forget`, or the cascade of their profile) (named in the store's or the file's erasure log), which are refused otherwise.")
@click.option("--keep-verdicts", is_flag=True, help="Keep the firewall verdicts (metadata oramem_firewall) the file's records carry, when this store has no firewall policy: only for a backup of your own store that nobody edited since (a verdict in a file is a claim anyone can write). Without it they are dropped. Refused for a store with a policy, which screens every record again.")
@pass_state
def import_(state: State, file: Any, batch_size: int, on_conflict: str, default_type: Optional[str], fresh_times: bool,
            no_vectors: bool, allow_erased: bool, keep_verdicts: bool) -> None:
    """Import FILE ('-' = stdin): JSON Lines, one record per line, e.g. a file from
    `oramem export` (a backup: ids, scope, content, metadata, created_at and expires_at
    are restored as they were).

    Fields: record_type (alias type), content (alias text), id, thread_id, user_id,
    agent_id, role, timestamp, metadata, ttl_days, ttl_anchor, index_text, embedding,
    created_at, expires_at (seq_no is ignored). A thread line (record_type thread: id,
    user_id, agent_id, created_at) restores who opened the thread, before the records (a
    thread that exists keeps its row; --on-conflict replace restores only a row of the same
    opener, and another opener's stops the import); knowledge lines
    ({"kg_table": NAME, "row": {...}}) go into the knowledge tables after the records, in
    one transaction, and are checked against the stored rows before any record is written
    (a stored key under fail, another user's or agent's row under replace: exit 2, nothing
    written).
    Every line is validated (at most 64 Mi characters, 100 levels of nesting, Unicode text),
    and ids repeated in the file are found, before anything is written; then each batch is
    one transaction. The ids the store holds are checked for the whole file before anything
    is written on a SQLite store (a stored id under fail, another user's or agent's record or
    thread row under replace: exit 2 naming the ids and lines, nothing written, the file's
    erasure-log lines included); an Oracle store finds them batch by batch, so the batches
    before the refused one stay written (re-run with --on-conflict skip to resume).
    Ctrl-C or a failing batch prints how many records landed (exit 130 for Ctrl-C).
    Records (and thread and knowledge lines) of a user or agent erased (`oramem forget`, or the cascade of their profile)
    — named in this store's erasure log or in the file's erasure-log lines — are refused
    before anything is written (exit 2) unless --allow-erased; the file's erasure-log lines
    join the store's log (SC-14.4). One erased in this store while the import runs, whose
    records it then wrote again, is reported after it (exit 1: erase them again).
    Firewall verdicts in the file are screened again under this store's policy, or dropped
    when it has none (--keep-verdicts keeps them; SC-15.4).
    """
    source = getattr(file, "name", "<stdin>")
    if isinstance(source, str) and os.path.isfile(source):
        with open(source, "rb") as raw:
            if raw.read(16) == b"SQLite format 3\x00":  # a database, not an export of one
                raise CLIError(
                    f"{source} is a SQLite database, not a JSON Lines export: open it as it is with --db {source}, "
                    f"copy all of it with `oramem migrate sqlite:{source} sqlite:TARGET`, or make an export with "
                    f"`oramem export --db {source} --out FILE`; nothing was written", 2)
    header: dict[str, Any] = {}
    # read line by line with a bounded length (jsonl.bounded_lines, finding 18)
    lines = parse_jsonl(file, source, default_type=default_type, keep_times=not fresh_times, header=header)
    if no_vectors:
        for ln in lines:
            ln.fields.pop("embedding", None)
    _refuse_erased(None, lines, allow_erased, source)  # the file's own erasure log, before the store is opened
    kg_lines = [ln for ln in lines if ln.record_type == "kg_row"]
    lines = [ln for ln in lines if ln.record_type != "kg_row"]
    kg_vectors = jsonl.knowledge_vector_dims(kg_lines)  # the knowledge rows' vectors are kept as they are
    if kg_lines and state.db == ":memory:":
        raise CLIError("the file holds knowledge rows, which go into a database file: give --db FILE", 2)
    if kg_vectors or any("embedding" in ln.fields for ln in lines):
        state.adopt_for_new_store(header.get("embedder"))  # a fresh file takes the backup's embedder
    store = state.open(create=True)
    if keep_verdicts and store.get_firewall() is not None:  # no option silently without effect
        raise CLIError("--keep-verdicts keeps a file's verdicts only in a store without a firewall policy; this store "
                       "has one and screens every imported record again (its verdict replaces the file's): drop "
                       "--keep-verdicts; nothing was written", 2)
    _refuse_erased(store, lines + kg_lines, allow_erased, source)
    if any("embedding" in ln.fields for ln in lines):
        _check_vector_source(header, store, source)
    if kg_vectors:
        _check_knowledge_vectors(header, kg_vectors, store, source)
    show = not state.json and len(lines) >= 2000 and sys.stderr.isatty()
    started = time.perf_counter()
    # SC-15.6: the knowledge rows under this store's policy, before any record is written
    policy = store.get_firewall() if kg_lines else None
    jsonl.screen_knowledge(policy, kg_lines)
    # the knowledge rows' keys against the stored rows (a stored key under fail, another
    # scope's row under replace: imp47), before any record is written
    _check_knowledge(state, store, kg_lines, on_conflict)
    result = import_lines(store, lines, batch_size, progress=show, on_conflict=on_conflict, allow_erased=allow_erased,
                          keep_verdicts=keep_verdicts)
    kg_written, kg_skipped = _import_knowledge(state, store, kg_lines, on_conflict, batch_size, policy)
    elapsed = time.perf_counter() - started
    if state.json:
        emit_json({"imported": result.imported, "skipped": result.skipped, "by_type": result.by_type,
                   "knowledge_rows": kg_written, "knowledge_rows_skipped": kg_skipped, "seconds": round(elapsed, 3),
                   "erased_during_import": {"users": len(result.erased_during_import["user"]),
                                            "agents": len(result.erased_during_import["agent"])}})
    else:
        detail = ", ".join(f"{n} {t}" for t, n in result.by_type.items())
        skipped = f"; {result.skipped} skipped (already stored)" if result.skipped else ""
        knowledge = ""
        if kg_lines:
            knowledge = f"; {kg_written} knowledge row(s)" + (f" ({kg_skipped} already stored)" if kg_skipped else "")
        click.echo(f"imported {result.imported} record(s) in {elapsed:.2f}s" + (f" ({detail})" if detail else "") + skipped
                   + knowledge)
    late = result.erased_during_import
    if any(late.values()):
        # SC-14.4: counts only, as every erasure message (the ids are in the Python result)
        raise CLIError(
            f"{len(late['user'])} user(s) and {len(late['agent'])} agent(s) of the file were erased in this store while "
            "the import ran, and records of theirs that it wrote after the erasure are in the store again: erase them "
            "again (`oramem forget --user ID`, an agent `oramem forget --agent ID`; "
            "jsonl.import_records(...).erased_during_import names them)"
        )


def _refuse_erased(store: Any, lines: Sequence[jsonl.ImportLine], allow_erased: bool, source: str) -> None:
    from ..trust.erasure import ErasedSubjectError

    try:
        jsonl.check_erased(store, lines, allow_erased=allow_erased, what=source, store_log=store is not None)
    except ErasedSubjectError as exc:
        raise CLIError(str(exc), 2) from None


def _sa_engine(path: str, read_only: bool) -> Any:
    import sqlalchemy as sa

    from ..sqlite._sqlite import sqlite3
    from ..sqlite.connection import connect_read_only

    # module=: the engine's SQLite build, never the interpreter's: two SQLite libraries in one
    # process lose each other's POSIX locks on the same file (SQLite's "How To Corrupt",
    # 2.2.1), and SQLAlchemy wraps only its module's exceptions
    target = os.path.abspath(path)
    if read_only:  # as the store reads it: mode=ro, immutable in a read-only directory
        return sa.create_engine("sqlite://", creator=lambda: connect_read_only(target)[0], module=sqlite3)
    return sa.create_engine(f"sqlite:///{target}", module=sqlite3)


def _check_knowledge(state: State, store: Any, lines: list, on_conflict: str) -> None:
    """What the knowledge rows' import would refuse (jsonl.check_knowledge), before any record
    of the file is written: exit 2, nothing written."""
    if not lines:
        return
    engine = _sa_engine(state.db, read_only=False)
    try:
        jsonl.check_knowledge(engine, store.memory_store_id, store.vector_dim, lines, on_conflict=on_conflict)
    except jsonl.JSONLError as exc:
        raise CLIError(f"{exc} (nor any record: nothing was written)", 2) from None
    finally:
        engine.dispose()


def _import_knowledge(state: State, store: Any, lines: list, on_conflict: str, batch_size: int,
                      policy: Any) -> tuple[int, int]:
    """The knowledge rows of a backup (finding 10), after its records, into the store's
    ``<ID>_KG_*`` tables; a bad or conflicting row stops before any knowledge row is written."""
    if not lines:
        return 0, 0
    engine = _sa_engine(state.db, read_only=False)
    try:
        return jsonl.import_knowledge(engine, store.memory_store_id, store.vector_dim, lines, policy=policy,
                                      on_conflict=on_conflict,
                                      batch_size=batch_size)
    except jsonl.JSONLError as exc:
        raise CLIError(f"{exc} (the records were imported)", 2) from None
    finally:
        engine.dispose()


@cli.command(short_help="Export (back up) records as JSON Lines, all or one user's, agent's or thread's.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), help="Write to this file instead of stdout (written to a temporary file next to it, mode 0600, and renamed at the end; never the database or its files).")
@click.option("--type", "types", multiple=True, type=click.Choice(jsonl.EXPORT_TYPES), help="Only these record types (repeatable).")
@click.option("--with-vectors", is_flag=True, help="Also write each record's retrieval rows as they are (chunk texts and vectors) and a header line naming the embedder.")
@click.option("--no-knowledge", is_flag=True, help="Leave out the knowledge layer's rows (facts, entities, events...); --type leaves them out too.")
@click.option("--user", "users", multiple=True, metavar="USER_ID", help="Only what belongs to this user: what `oramem forget --user` would erase (repeatable: several users' together).")
@click.option("--agent", "agents", multiple=True, metavar="AGENT_ID", help="Only what belongs to this agent, every user's records with it included: what `oramem forget --agent` would erase (repeatable).")
@click.option("--thread", "threads", multiple=True, metavar="THREAD_ID", help="Only this thread: its row and every record in it, whoever wrote it (repeatable).")
@pass_state
def export(state: State, out_path: Optional[str], types: tuple[str, ...], with_vectors: bool, no_knowledge: bool,
           users: tuple[str, ...], agents: tuple[str, ...], threads: tuple[str, ...]) -> None:
    """Export records as JSON Lines (one JSON object per line) that `oramem import`
    restores: ids, type, scope, role, content, event timestamp, metadata, created_at and
    expires_at, one line per thread (who opened it), and the rows of the store's knowledge
    tables ({"kg_table": NAME, "row": {...}}) unless --type or --no-knowledge is given. With --with-vectors also each record's retrieval rows as they are (chunk texts
    and vectors) after a header line naming the embedder; an import writes them back
    without re-embedding into a store with that embedder. Without it, import re-chunks and
    re-embeds the content; seq_no is written for reference only. Knowledge rows keep their
    vectors as they are, so a file with them starts with that header line too (an import
    refuses them into a store of another embedder). The store's erasure log
    ({"erasure_log": {receipt}}, salted hashes only) is written too, so an import of the file
    refuses the erased users and agents as this store does (SC-14.4).

    \b
    One scope only (a data-access or portability request), with the same line format:
      --user U     what `oramem forget --user U` erases: U's profile, every record of U
                   (user_id U, in any thread), her private threads whole (threads where no
                   other user has a record, the assistant's replies there included), the
                   rows of the threads she opened, and her knowledge rows (her scope, the
                   rows of her records and what is derived from them, never a row of
                   another user's scope). In a thread shared with other users only her own
                   records: not theirs, not the unscoped replies there.
      --agent A    what `oramem forget --agent A` erases: every user's records with A, its
                   profile and thread rows, and A's knowledge rows (an operator's export).
      --thread T   what `oramem delete-thread T` removes: the thread row, every record in
                   it whoever wrote it, and the thread's knowledge rows.
    Each is repeatable (the union of the scopes); --user, --agent and --thread do not
    combine (exit 2). --type, --with-vectors, --no-knowledge and --out apply as above. A
    scoped export carries no erasure-log lines (they are about other, erased users), and
    an id with nothing stored gives an empty export with a notice on stderr (exit 0).
    """
    from ..sqlite.health import is_intact

    kind, ids = _export_scope(users, agents, threads)
    target = _check_out_path(out_path, state.db) if out_path else None
    # a damaged file is read row by row instead (decided before the first line is written)
    intact = state.db == ":memory:" or not os.path.exists(state.db) or is_intact(state.db)
    if kind is not None and not intact:
        from ..sqlite.health import RECOVER_HINT

        raise CLIError(f"{state.db} is damaged: a --{kind} export needs the intact store to tell whose rows are whose; "
                       f"recover the file first with: {RECOVER_HINT.format(path=state.db)}; nothing was written")
    store = state.open(create=False, reading=True) if intact else None
    scope: Optional[jsonl.ExportScope] = None
    kg_rows: Optional[dict[str, set[Any]]] = None
    with_knowledge = store is not None and not types and not no_knowledge and state.db != ":memory:"
    # a store without knowledge tables has no knowledge rows: no SQLAlchemy to load (the SQLite
    # commands import neither it nor oracledb, docs/new-user-trial.md #26)
    no_tables = (store is None or state.db == ":memory:"
                 or not sqlite_admin.knowledge_tables_exist(state.db, store.memory_store_id))
    if kind is not None:
        try:
            scope = jsonl.select_scope(store, kind, ids)
        except (ValueError, TypeError) as exc:
            raise CLIError(f"--{kind}: {one_line(exc)}; nothing was written", 2) from None
        if no_tables:
            kg_rows = {} if state.db != ":memory:" else None
        else:
            # her knowledge rows, and the store records of her knowledge facts and events (with
            # --type or --no-knowledge too), before the first line: knowledge that cannot be cut
            # by scope is refused
            engine = _sa_engine(state.db, read_only=True)
            try:
                kg_rows = jsonl.knowledge_scope(engine, store, scope)
            except jsonl.JSONLError as exc:
                raise CLIError(str(exc)) from None
            finally:
                engine.dispose()
    kg_count: Optional[int] = None
    with _replacing(target) as handle:
        write = handle.write if handle else (lambda s: click.echo(s, nl=False))
        if (store is not None and with_knowledge and not no_tables and not with_vectors
                and (scope is None or any((kg_rows or {}).values()))):  # an empty scoped export stays empty
            # the knowledge rows carry their vectors as they are (FACT, ENTITY, EVENT, CLUSTER...):
            # the header names their embedder, so a fresh target adopts it and another is refused
            jsonl.write_export_header(write, _export_header(store))
        if store is not None and with_vectors:
            count = _export_with_vectors(state, store, write, set(types) or None,
                                         keys=scope.keys if scope is not None else None)
        elif store is not None:
            count = jsonl.export_records(store, write, list(types) or None, scope=scope)
        else:
            count = _salvage_export(state, write, set(types) or None)
        if store is not None and with_knowledge and (scope is None or kg_rows is not None):
            kg_count = 0  # no knowledge tables, no rows: SQLAlchemy is not loaded for nothing
            if not no_tables:
                engine = _sa_engine(state.db, read_only=True)
                try:
                    kg_count = jsonl.export_knowledge(engine, store.memory_store_id, store.vector_dim, write, rows=kg_rows)
                finally:
                    engine.dispose()
        # the erasure log is the store's, about other (erased) subjects: not in one scope's copy
        receipts = jsonl.export_erasure_log(store, write) if store is not None and scope is None else 0
    if scope is not None and not count and not kg_count:
        of = f" of type {', '.join(types)}" if types else ""
        click.echo(f"nothing{of} stored about {kind} {', '.join(ids)}: the export is empty", err=True)
    if out_path:
        if kg_count is not None:
            left = ""
        elif store is None:
            left = " (knowledge rows left out: the file is damaged)"
        else:
            left = " (knowledge rows left out: --type or --no-knowledge)"
        knowledge = f" and {kg_count} knowledge row(s)" if kg_count else ""
        erasure = f" and {receipts} erasure receipt(s)" if receipts else ""
        of = f" of {kind} {', '.join(ids)}" if kind is not None else ""
        click.echo(f"exported {count} record(s){knowledge}{erasure}{of} to {out_path}{left}", err=True)


def _export_scope(users: tuple[str, ...], agents: tuple[str, ...],
                  threads: tuple[str, ...]) -> tuple[Optional[str], tuple[str, ...]]:
    """``export --user/--agent/--thread``: the one scope given (kind and ids, checked), or
    ``(None, ())``; exit 2 before anything is opened or written."""
    given = [(kind, ids) for kind, ids in (("user", users), ("agent", agents), ("thread", threads)) if ids]
    if not given:
        return None, ()
    if len(given) > 1:
        flags = " and ".join(f"--{kind}" for kind, _ in given)
        raise CLIError(f"{flags} do not combine: export one scope at a time (each flag is repeatable); "
                       "nothing was written", 2)
    kind, ids = given[0]
    try:
        return kind, jsonl.check_scope(kind, ids)
    except (ValueError, TypeError) as exc:
        raise CLIError(f"--{kind}: {one_line(exc)}; nothing was written", 2) from None


def _check_out_path(out_path: str, db: str) -> str:
    """``export --out``: never a file the export reads (finding 9): the database, its
    ``-wal`` / ``-shm`` / ``-journal`` (present or not: SQLite may create them meanwhile),
    its vector sidecars and ANN files (existing ``DB.*`` files).
    Returns the target path; raises exit 2 before anything is opened."""
    if db == ":memory:":
        return out_path
    real_out = os.path.realpath(out_path)
    real_db = os.path.realpath(db)
    inputs = [real_db + suffix for suffix in ("", "-wal", "-shm", "-journal")]
    # DB.<store>.oramem-vectors, DB.<token>.ann...: the sidecars the store reads, when they exist
    same = real_out in inputs or (real_out.startswith(real_db + ".") and os.path.exists(real_out))
    if not same and os.path.exists(out_path):
        for path in inputs:
            with contextlib.suppress(OSError):
                same = same or os.path.samefile(out_path, path)
    if same:
        raise CLIError(
            f"--out {out_path} is the database this export reads (or one of its files); write the export "
            "to another file, e.g. --out backup.jsonl; nothing was written",
            2,
        )
    if os.path.isdir(out_path):
        raise CLIError(f"--out {out_path} is a directory; give a file name; nothing was written", 2)
    return out_path


@contextlib.contextmanager
def _replacing(target: Optional[str]) -> Iterator[Optional[Any]]:
    """A handle on a new temporary file next to ``target`` (mode 0600), renamed over
    ``target`` only when the block ends normally: an export that fails or is interrupted
    leaves ``target`` as it was. ``None`` target: no file (stdout)."""
    if target is None:
        yield None
        return
    import tempfile

    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise CLIError(f"cannot write --out {target}: directory {directory} does not exist (create it first); "
                       "nothing was written", 1)
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise CLIError(f"cannot write next to --out {target}: {one_line(exc)}; nothing was written", 1) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _export_header(store: Any) -> dict[str, Any]:
    """The header line's content: the store, its embedder's identity and its dimension."""
    return {"memory_store_id": store.memory_store_id, "embedder": identity_of(store.embedder),
            "vector_dim": store.vector_dim}


def _export_with_vectors(state: State, store: Any, write: Any, types: Optional[set[str]],
                         keys: Optional[set[tuple[str, str]]] = None) -> int:
    """``export --with-vectors``: the store's rows as they are, oldest first (only the
    records ``keys`` names, ``(record_type, id)``, when given: a scoped export)."""
    import datetime as _dt

    if state.db == ":memory:":
        raise CLIError("--with-vectors needs a database file", 2)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")
    header = _export_header(store)

    def rows() -> Iterable[tuple[Any, list]]:
        after = 0
        while True:
            batch = sqlite_admin.read_record_rows(state.db, store.memory_store_id, after, 1000, now)
            if not batch:
                return
            after = batch[-1][0]
            for _, record, chunks in batch:
                if (types is None or record.record_type in types) and (
                        keys is None or (record.record_type, record.id) in keys):
                    yield record, chunks

    return jsonl.export_with_vectors(write, header, rows())


def _salvage_export(state: State, write: Any, types: Optional[set[str]]) -> int:
    """A damaged file: read what can be read, row range by row range (nothing is written to
    it), and say what was lost and how to recover the rest; exit 1 when rows were lost."""
    from ..sqlite.health import RECOVER_HINT, SalvageReport, salvage_records

    report = SalvageReport()
    for record in salvage_records(state.db, state.store_key(), types, report):
        write(json.dumps(jsonl.export_dict(record), ensure_ascii=False) + "\n")
    hint = RECOVER_HINT.format(path=state.db)
    if report.unreadable:
        raise CLIError(
            f"{state.db} is damaged: exported the {report.read} readable record(s), {report.unreadable} row(s) could "
            f"not be read ({'; '.join(report.errors[:2])}); recover the rest with: {hint}"
        )
    click.echo(
        f"Warning: {state.db} is damaged (its indexes or other tables); all {report.read} record(s) were read "
        f"row by row; repair the file with: {hint}",
        err=True,
    )
    return report.read


def oracle_connect(user: str, dsn: str) -> Any:
    """A python-oracledb connection for an ``oracle://USER@HOST:PORT/SERVICE`` location (migrate,
    reembed); the password from ORAMEM_PASSWORD, else a prompt."""
    import oracledb

    password = os.environ.get("ORAMEM_PASSWORD")
    if password is None:
        password = ask_password(f"password for Oracle user {user} at {dsn}",
                                f"no password for Oracle user {user} at {dsn}: set ORAMEM_PASSWORD")
    try:
        return oracledb.connect(user=user, password=password, dsn=dsn)
    except (oracledb.Error, OSError) as exc:  # OSError: the host name does not resolve (dba33 F2)
        raise StoreError(logon_failure(exc, user, dsn, password, f"cannot connect to Oracle as {user} at {dsn}")) from None


@cli.command(short_help="Copy every store and its knowledge to another database (resumable).")
@click.argument("source")
@click.argument("target")
@click.option("--only", "only", multiple=True, help="Copy only this store id (repeatable; default: every store).")
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(min=1, max=10000), help="Records (or knowledge rows) per transaction.")
@click.option("--oracle-model", default=None, metavar="NAME",
              help="Into Oracle: the in-database ONNX model (oramem db load-model) a HYBRID store's hybrid vector "
                   "index embeds its text with; it must be the source store's embedder.")
@click.option("--allow-erased", is_flag=True, help="Copy records of users or agents erased (`oramem forget`, or the cascade of their profile) (named in an erasure log), which are refused otherwise.")
def migrate(source: str, target: str, only: tuple[str, ...], batch_size: int, oracle_model: Optional[str],
            allow_erased: bool) -> None:
    """Copy every store of SOURCE, with its knowledge tables, into TARGET, then compare
    record counts and checksums of both sides. Locations: sqlite:PATH (or a path) and
    oracle://USER@HOST:PORT/SERVICE, on either side. Records keep their ids, scope,
    metadata, created_at, expires_at, retrieval rows and vectors (nothing is re-embedded).
    Interrupted, run the same command again: what is already in TARGET is skipped. Exit 1
    when the comparison finds a difference, or when a user or agent erased on SOURCE while
    it was copied still has rows in TARGET (their receipts are copied; erase them there).
    The Oracle password comes from ORAMEM_PASSWORD, else a prompt (with no terminal on
    stdin: exit 2, set ORAMEM_PASSWORD). (--db and --store are not used: SOURCE and TARGET
    name the databases.)
    A store with records of a user or agent erased (`oramem forget`, or the cascade of their profile) (named in its own or
    the target's erasure log) is refused before anything is written unless --allow-erased;
    the erasure log is copied along (SC-14.4)."""
    from .. import migrate as migration
    from ..normalize import validate_store_id

    state: State = click.get_current_context().obj
    bar: Any = None
    for store_id in only:  # below the CLI it is "memory_store_id", which the root would call --store
        try:
            validate_store_id(store_id)
        except ValueError as exc:
            raise CLIError(str(exc).replace("memory_store_id", "--only", 1) + "; nothing was copied", 2) from None

    def progress(done: int, total: Optional[int]) -> None:
        nonlocal bar
        if state.json or not sys.stderr.isatty():
            return
        if total is None:  # an Oracle source does not count ahead: a running count
            click.echo(f"\rmigrating: {done} row(s)", nl=False, err=True)
            return
        if bar is None:
            bar = click.progressbar(length=max(total, 1), label="migrating", file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)

    try:
        report = migration.migrate(source, target, stores=list(only) or None, batch_size=batch_size, progress=progress,
                                   oracle_connect=oracle_connect, oracle_model=oracle_model, allow_erased=allow_erased)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    stores_out = [
        {"memory_store_id": s.store_id, "records": {"source": s.records[0], "target": s.records[1]},
         "records_match": s.records_match, "knowledge": {t: {"source": a, "target": b} for t, (a, b) in s.knowledge.items()},
         "knowledge_match": s.knowledge_match,
         "erased_during_copy": {"users": len(s.erased_during_copy["user"]), "agents": len(s.erased_during_copy["agent"])}}
        for s in report.stores
    ]
    if state.json:
        emit_json({"ok": report.ok, "copied_records": report.copied_records, "skipped_records": report.skipped_records,
                   "copied_knowledge_rows": report.copied_knowledge_rows, "stores": stores_out})
    else:
        click.echo(f"copied {report.copied_records} record(s) ({report.skipped_records} already there) and "
                   f"{report.copied_knowledge_rows} knowledge row(s)")
        for s in report.stores:
            kg = sum(a for a, _ in s.knowledge.values())
            verdict = "match" if s.ok else "DIFFER"
            click.echo(f"  {s.store_id}: {s.records[0]} -> {s.records[1]} records, {kg} knowledge rows; checksums {verdict}")
    late = [(s.store_id, len(s.erased_during_copy["user"]), len(s.erased_during_copy["agent"]))
            for s in report.stores if any(s.erased_during_copy.values())]
    if late:
        # SC-14.4: counts only, as every erasure message (the ids stay in the Python report)
        said = "; ".join(f"store {sid}: {users} user(s), {agents} agent(s)" for sid, users, agents in late)
        raise CLIError(
            f"subjects were erased on SOURCE while it was copied, and TARGET still holds their rows ({said}); "
            "their receipts were copied into TARGET's erasure log. Erase them on TARGET too (a SQLite TARGET: "
            "`oramem --db TARGET forget --user ID`, an agent `oramem --db TARGET forget --agent ID`; an Oracle one: "
            "the store's forget(user_id=ID) or forget(agent_id=ID); "
            "migrate.migrate(...).stores[i].erased_during_copy names them), or drop the store on TARGET and run "
            "migrate again"
        )
    if not report.ok:
        raise CLIError("the copy differs from the source: " + ", ".join(s.store_id for s in report.stores if not s.ok))
