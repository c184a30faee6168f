"""Record commands: add, get, list, update, delete, delete-thread, forget."""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

import click

from .. import jsonl
from ..sqlite import admin as sqlite_admin
from ..types import MAX_LIST_LIMIT, NOT_SET, PROFILE_TYPES, RECORD_TYPES, SCOPED_TYPES, Record

from .app import cli
from .group import CLIError
from .output import parse_json_option, record_to_dict, emit_json, records_table, full_option, record_scope_options, scope_options, shown_scope
from .state import State, pass_state


ADDABLE_TYPES = jsonl.ADDABLE_TYPES
#: record types the store lists without regard to scope filters (SC-3.3)
UNSCOPED_TYPES = tuple(t for t in RECORD_TYPES if t not in SCOPED_TYPES)


# ----------------------------------------------------------------------------- add
@cli.command(short_help="Add records from TEXT arguments or stdin.")
@click.argument("texts", nargs=-1)
@click.option("--type", "record_type", default="memory", show_default=True, type=click.Choice(ADDABLE_TYPES), help="Record type.")
@record_scope_options
@click.option("--role", help="Speaker role (message records only).")
@click.option("--metadata", help="Metadata as a JSON object.")
@click.option("--timestamp", help="ISO-8601 event time.")
@click.option("--ttl-days", type=int, help="Days until the record expires.")
@click.option("--no-expiry", is_flag=True, help="Never expire (in a store with a max_ttl_days, expire after that maximum).")
@click.option("--id", "record_ids", multiple=True, help="Record id (repeat once per text); required for profiles.")
@pass_state
def add(
    state: State,
    texts: tuple[str, ...],
    record_type: str,
    thread_id: Optional[str],
    user_id: Optional[str],
    agent_id: Optional[str],
    role: Optional[str],
    metadata: Optional[str],
    timestamp: Optional[str],
    ttl_days: Optional[int],
    no_expiry: bool,
    record_ids: tuple[str, ...],
) -> None:
    """Add records: one per TEXT argument, or the whole of stdin as one record ('-' or no TEXT)."""
    items = list(texts)
    if not items or items == ["-"]:
        if sys.stdin is None or (sys.stdin.isatty() and not items):
            raise CLIError("give the text as arguments or pipe it on stdin", 2)
        data = sys.stdin.read()
        if data.endswith("\n"):
            data = data[:-1]
        items = [data]
    if ttl_days is not None and no_expiry:
        raise CLIError("--ttl-days and --no-expiry exclude each other", 2)
    if ttl_days is not None and ttl_days < 1:
        raise CLIError(f"--ttl-days {ttl_days} would expire the record at once; give 1 or more days, or leave it out", 2)
    blank = [i for i, text in enumerate(items, 1) if not text.strip()]
    if blank:
        raise CLIError(f"text {blank[0]} is empty or blank; give each record some text", 2)
    if record_ids and len(record_ids) != len(items):
        raise CLIError(f"--id was given {len(record_ids)} time(s) for {len(items)} text(s); give one id per text", 2)
    kwargs: dict[str, Any] = {}
    for name, value in (("thread_ids", thread_id), ("user_ids", user_id), ("agent_ids", agent_id), ("roles", role), ("timestamps", timestamp)):
        if value is not None:
            kwargs[name] = value
    md = parse_json_option(metadata, "--metadata")
    if md is not NOT_SET:
        kwargs["metadata"] = md
    if ttl_days is not None:
        kwargs["ttl_days"] = ttl_days
    elif no_expiry:
        kwargs["ttl_days"] = None
    if record_ids:
        kwargs["record_ids"] = list(record_ids)
    store = state.open(create=True)
    ids = store.add(items, record_type, **kwargs)
    if state.json:
        emit_json({"ids": ids})
    else:
        for rid in ids:
            click.echo(rid)


# ----------------------------------------------------------------------------- get / list
def print_record(record: Record) -> None:
    data = record_to_dict(record)
    width = max(len(k) for k in data)
    for key, value in data.items():
        if key == "metadata" and value is not None:
            value = json.dumps(value, ensure_ascii=False)
        click.echo(f"{click.style(key.ljust(width), bold=True)}  {'-' if value is None else value}")


class RecordTypeArgument(click.Choice):
    """TYPE of `get`, `update` and `delete`. A value that is no record type (the id given alone,
    as mem0's ``get(memory_id)`` takes it, or the two arguments swapped) is refused with the
    order of the arguments and, when the file holds a record with that id, its type and the
    command to run."""

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            command = ctx.info_name if ctx is not None else None
            if not isinstance(value, str) or command not in ("get", "update", "delete"):
                raise
            types = [t for t in self.choices if _holds(ctx, str(t), value)]
            message = f"{value!r} is not a record type (one of: {', '.join(map(str, self.choices))}); TYPE comes first, then the id"
            if types:
                options = " OPTIONS" if command == "update" else ""
                message += f"; it is a {' and a '.join(types)} record: oramem {command} {types[0]} {value}{options}"
            self.fail(message, param, ctx)


def _holds(ctx: Optional[click.Context], record_type: str, record_id: str) -> bool:
    """Whether the command's store holds ``record_id`` as a ``record_type`` (False when the
    store cannot be opened here: the TYPE error stands without the hint)."""
    state = ctx.find_object(State) if ctx is not None else None
    if state is None or record_type == "thread":
        return False
    try:
        return state.open(create=False, reading=True).get(record_type, record_id) is not None
    except Exception:
        return False


def not_found(store: Any, record_type: str, record_id: str, command: str) -> CLIError:
    """"No such record", naming the type the id has when it is stored under another one (TYPE
    is part of a record's address: `get`, `update` and `delete` take it first)."""
    others = [t for t in ADDABLE_TYPES if t != record_type and store.get(t, record_id) is not None]
    hint = ""
    if others:
        options = " OPTIONS" if command == "update" else ""
        hint = f"; it is a {' and a '.join(others)} record: oramem {command} {others[0]} {record_id}{options}"
    return CLIError(f"no {record_type} record with id {record_id!r}{hint}")


@cli.command(short_help="Show one record.")
@click.argument("record_type", metavar="TYPE", type=RecordTypeArgument(RECORD_TYPES))
@click.argument("record_id", metavar="ID")
@pass_state
def get(state: State, record_type: str, record_id: str) -> None:
    """Show one record (exit status 1 when it does not exist or has expired)."""
    store = state.open(create=False, reading=True)
    record = store.get(record_type, record_id)
    if record is None:
        raise not_found(store, record_type, record_id, "get")
    if state.json:
        emit_json(record_to_dict(record))
    else:
        print_record(record)


@cli.command(name="list", short_help="List records of one type.")
@click.option("--type", "record_type", default="memory", show_default=True, type=click.Choice(RECORD_TYPES))
@click.option("--limit", type=click.IntRange(min=1), help="Keep the newest N (default 10,000).")
@click.option("--all", "no_limit", is_flag=True, help="No limit.")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True, help="Skip the newest N first (page back with --offset/--limit).")
@scope_options
@click.option("--no-thread", is_flag=True, help="Only records without a thread.")
@click.option("--no-user", is_flag=True, help="Only records without a user.")
@click.option("--no-agent", is_flag=True, help="Only records without an agent.")
@click.option("--filter", "metadata_filter", help="Metadata filter as a JSON object; 'null' = records without metadata.")
@full_option
@pass_state
def list_(
    state: State,
    record_type: str,
    limit: Optional[int],
    no_limit: bool,
    offset: int,
    thread_id: Optional[str],
    user_id: Optional[str],
    agent_id: Optional[str],
    no_thread: bool,
    no_user: bool,
    no_agent: bool,
    metadata_filter: Optional[str],
    full: bool,
) -> None:
    """List records of one type, oldest first: the newest --limit of them, after skipping the
    newest --offset (so --offset 100 --limit 100 is the second page counted from the newest).
    For profiles and threads --user/--agent/--thread match the scope shown: a profile's own id,
    a thread's id and who opened it."""
    if limit is not None and no_limit:
        raise CLIError("--limit and --all exclude each other", 2)
    if offset and no_limit:
        raise CLIError("--offset pages with --limit; it cannot be combined with --all", 2)
    kwargs: dict[str, Any] = {}
    for name, value, none_flag, flag_name in (
        ("thread_id", thread_id, no_thread, "--no-thread"),
        ("user_id", user_id, no_user, "--no-user"),
        ("agent_id", agent_id, no_agent, "--no-agent"),
    ):
        if value is not None and none_flag:
            raise CLIError(f"--{name.split('_')[0]} and {flag_name} exclude each other", 2)
        if value is not None:
            kwargs[name] = value
        elif none_flag:
            kwargs[name] = None
    # one row more than shown tells whether the window cut anything off
    shown = None if no_limit else (limit or MAX_LIST_LIMIT)
    kwargs["limit"] = None if shown is None else offset + shown + 1
    flt = parse_json_option(metadata_filter, "--filter")
    if flt is not NOT_SET:
        kwargs["metadata_filter"] = flt
    store = state.open(create=False, reading=True)
    scoped = {name: kwargs.pop(name) for name in ("thread_id", "user_id", "agent_id") if name in kwargs}
    if scoped and record_type in UNSCOPED_TYPES:
        # the store's list ignores scope filters for profiles and threads (SC-3.3); the CLI
        # applies them to the scope the table shows (a thread's opener, a profile's own id)
        window = kwargs.pop("limit")
        records = [r for r in store.list(record_type, limit=None, **kwargs)
                   if all(shown_scope(r)[name] == value for name, value in scoped.items())]
        if window is not None:
            records = records[-window:]
    else:
        records = store.list(record_type, **kwargs, **scoped)
    if offset:
        records = records[: max(len(records) - offset, 0)]  # oldest first: the newest `offset` go
    if shown is not None and len(records) > shown:
        records = records[1:]  # oldest first: drop the extra (oldest) row
        first, last = offset + 1, offset + shown
        window = f"the newest {shown:,}" if not offset else f"{first:,}-{last:,} counted from the newest of the"
        click.echo(
            f"showing {window} {record_type} records; there are more: --offset {last} for the next page, "
            "raise --limit, or use --all", err=True)
    elif offset and not records:
        click.echo(f"--offset {offset} skips every {record_type} record", err=True)
    if state.json:
        emit_json([record_to_dict(r) for r in records])
    elif not records:
        click.echo(f"no {record_type} records")
    else:
        click.echo(records_table(records, full=full))


# ----------------------------------------------------------------------------- update / delete
@cli.command(short_help="Update one record.")
@click.argument("record_type", metavar="TYPE", type=RecordTypeArgument(ADDABLE_TYPES))
@click.argument("record_id", metavar="ID")
@click.option("--text", help="New stored text (also re-indexed).")
@click.option("--clear-text", is_flag=True, help="Clear the stored text and its retrieval rows.")
@click.option("--index-text", help="New retrieval text (what search sees); '' = not searchable.")
@click.option("--metadata", help="Replace metadata with this JSON object; 'null' clears it.")
@click.option("--timestamp", help="New ISO-8601 event time.")
@click.option("--clear-timestamp", is_flag=True, help="Clear the event time.")
@click.option("--ttl-days", type=int, help="New time to live in days.")
@click.option("--no-expiry", is_flag=True, help="Never expire (in a store with a max_ttl_days, expire after that maximum).")
@pass_state
def update(
    state: State,
    record_type: str,
    record_id: str,
    text: Optional[str],
    clear_text: bool,
    index_text: Optional[str],
    metadata: Optional[str],
    timestamp: Optional[str],
    clear_timestamp: bool,
    ttl_days: Optional[int],
    no_expiry: bool,
) -> None:
    """Update one record; omitted options keep their value (exit 1 when it does not exist)."""
    kwargs: dict[str, Any] = {}
    for a, b, names in (
        (text is not None, clear_text, "--text and --clear-text"),
        (timestamp is not None, clear_timestamp, "--timestamp and --clear-timestamp"),
        (ttl_days is not None, no_expiry, "--ttl-days and --no-expiry"),
    ):
        if a and b:
            raise CLIError(f"{names} exclude each other", 2)
    if text is not None:
        kwargs["text"] = text
    elif clear_text:
        kwargs["text"] = None
    if index_text is not None:
        kwargs["index_text"] = index_text
    md = parse_json_option(metadata, "--metadata")
    if md is not NOT_SET:
        kwargs["metadata"] = md
    if timestamp is not None:
        kwargs["timestamp"] = timestamp
    elif clear_timestamp:
        kwargs["timestamp"] = None
    if ttl_days is not None:
        kwargs["ttl_days"] = ttl_days
    elif no_expiry:
        kwargs["ttl_days"] = None
    if not kwargs:
        raise CLIError("nothing to update: give at least one of --text, --clear-text, --index-text, --metadata, --timestamp, --clear-timestamp, --ttl-days, --no-expiry", 2)
    if ttl_days is not None and ttl_days < 0:
        raise CLIError(f"--ttl-days must be >= 0, got {ttl_days}", 2)
    store = state.open(create=False)
    if ttl_days is not None:
        _refuse_expiring_at_once(store, record_type, record_id, ttl_days)
    count = store.update(record_type, record_id, **kwargs)
    if state.json:
        emit_json({"updated": count})
    if count == 0:
        raise not_found(store, record_type, record_id, "update")
    if not state.json:
        click.echo(f"updated {record_type} {record_id}")


def _refuse_expiring_at_once(store: Any, record_type: str, record_id: str, ttl_days: int) -> None:
    """A new TTL counts from the record's insert time (SC-7.6): one that has already run out
    would make the record vanish at the next open's purge, an erasure by typo. As `add`
    refuses --ttl-days 0, `update` refuses a TTL that is over when it is set."""
    import datetime as _dt

    from ..timeutil import try_parse_iso

    record = store.get(record_type, record_id)
    created = None if record is None or record.created_at is None else try_parse_iso(record.created_at)
    if created is None:
        return  # the update itself says "not found"
    now = _dt.datetime.now(_dt.timezone.utc)
    if created + _dt.timedelta(days=ttl_days) > now:
        return
    age = (now - created).days
    raise CLIError(
        f"--ttl-days {ttl_days} counts from the record's insert time ({created.isoformat(timespec='seconds')}, "
        f"{age} day(s) ago), so it would expire the record at once; give more than {age} day(s), or delete it with "
        f"`oramem delete {record_type} {record_id}`", 2)


@cli.command(short_help="Delete one record (--cascade for profiles).")
@click.argument("record_type", metavar="TYPE", type=RecordTypeArgument(RECORD_TYPES))
@click.argument("record_id", metavar="ID")
@click.option("--cascade", is_flag=True, help="For profiles: also erase the actor (SC-13): its own records and the threads that are its alone, never another user's records.")
@pass_state
def delete(state: State, record_type: str, record_id: str, cascade: bool) -> None:
    """Delete one record (exit 1 when nothing was deleted, except cascades)."""
    if cascade and record_type not in UNSCOPED_TYPES:
        raise CLIError(f"--cascade applies to user_profile, agent_profile and thread records, not {record_type!r} (SC-8.2)", 2)
    store = state.open(create=False)
    actor = record_type in PROFILE_TYPES and cascade
    # an actor's cascade erases every record of the actor (SC-13.3, SC-13.4): what it erased
    # is what the actor had before it, counted in the delete's own transaction so that no
    # write lands between the count and the cascade
    with store.transaction():
        erased = _actor_records(store, record_type, record_id) if actor else 0
        if record_type == "thread":
            count = store.delete_thread(record_id)  # a thread always takes what is in it
        else:
            count = store.delete(record_type, record_id, cascade=cascade)
    if state.json:
        emit_json({"deleted": count, **({"cascaded": erased} if actor else {})})
    if count == 0 and not actor:
        if record_type == "thread":
            raise CLIError(f"no thread with id {record_id!r}")
        raise not_found(store, record_type, record_id, "delete")
    if state.json:
        return
    if actor:
        who = "user" if record_type == "user_profile" else "agent"
        profile = f"deleted {record_type} {record_id}" if count else f"no {record_type} {record_id!r}"
        click.echo(f"{profile}; the cascade erased {erased} record(s) of {who} {record_id} (and the threads that were its alone)")
    else:
        click.echo(f"deleted {count} {record_type} record(s)")


def _actor_records(store: Any, record_type: str, actor_id: str) -> int:
    """Live records of the user (``user_profile``) or agent (``agent_profile``) ``actor_id``."""
    scope = {"user_id": actor_id} if record_type == "user_profile" else {"agent_id": actor_id}
    return sum(len(store.list(t, limit=None, **scope)) for t in ADDABLE_TYPES if t not in PROFILE_TYPES)


@cli.command(name="delete-thread", short_help="Delete a thread and everything in it.")
@click.argument("thread_id")
@pass_state
def delete_thread(state: State, thread_id: str) -> None:
    """Delete a thread with its messages and every record scoped to it, whoever wrote them
    (SC-13.5: the one operation that removes other users' records of a thread)."""
    store = state.open(create=False)
    count = store.delete_thread(thread_id)
    if state.json:
        emit_json({"deleted": count})
    if count == 0:
        raise CLIError(f"no thread with id {thread_id!r}")
    if not state.json:
        click.echo(f"deleted thread {thread_id}")


@cli.command(short_help="Erase a user or an agent everywhere (store and knowledge).")
@click.option("--user", "user_id", help="The user to erase (on every agent, shared ones too).")
@click.option("--agent", "agent_id", help="The agent to erase, with all its knowledge.")
@click.option("--yes", is_flag=True, help="Confirm without a prompt (needed when stdin is not a terminal).")
@pass_state
def forget(state: State, user_id: Optional[str], agent_id: Optional[str], yes: bool) -> None:
    """Erase everything about a user (--user) or an agent (--agent) in one transaction: the
    profile, its own records and the threads that are its alone (never a record of another
    user, even in a thread it opened: SC-13), and in the knowledge layer what was derived
    from them (events, facts from or about the user, her entity, aliases, edges,
    observations). Prints the rows erased per table and a receipt (SC-14): its id and time, a
    salted hash of the subject (never the id), and the result of a scan for the subject's
    own words in every file, index and table of the database; the receipt is kept in the
    store's erasure log, and import and migrate then refuse her records (--allow-erased).
    The deleted text is in no table, index or vector snapshot, and in no byte of the
    database files (the FTS index is merged and the WAL checkpointed). Irreversible; exit 1
    when the scan finds a trace. `oramem export --user U` (--agent A) writes first exactly
    what this erases, e.g. for the user's own copy.
    """
    if (user_id is None) == (agent_id is None):
        raise CLIError("give exactly one of --user or --agent", 2)
    given = user_id if user_id is not None else (agent_id or "")
    if not given.strip():  # before the confirmation, which would name nobody
        raise CLIError(f"--{'user' if user_id is not None else 'agent'} must not be empty or only white space; "
                       "give the id to erase", 2)
    who = f"user {user_id}" if user_id is not None else f"agent {agent_id}"
    store = state.open(create=False)
    if not yes:
        if not sys.stdin.isatty():
            raise CLIError(f"forget erases {who} irreversibly; repeat with --yes to confirm", 2)
        click.confirm(f"Erase {who} and everything derived from it from {state.db}?", abort=True, err=True)
    if state.db != ":memory:" and sqlite_admin.knowledge_tables_exist(state.db, state.store_key()):
        from ..knowledge import KnowledgeMemory

        with KnowledgeMemory(store, None) as km:
            counts = km.forget(user_id=user_id, agent_id=agent_id)
    else:
        counts = store.forget(user_id=user_id, agent_id=agent_id)
    erased = {table: n for table, n in counts.items() if n}
    receipt = counts.to_json() if hasattr(counts, "to_json") else None  # SC-14.1
    if state.json:
        emit_json({"user_id": user_id, "agent_id": agent_id, "erased": erased, "total": sum(erased.values()),
                   "receipt": receipt})
        return
    if not erased:
        click.echo(f"nothing stored about {who}")
    else:
        click.echo(f"erased {who}: {sum(erased.values())} row(s)")
        width = max(len(t) for t in erased)
        for table, n in sorted(erased.items()):
            click.echo(f"  {table.ljust(width)}  {n}")
    if receipt is not None:
        check = receipt["verification"]
        click.echo(f"receipt {receipt['receipt_id']} at {receipt['erased_at']}, subject hash {receipt['subject_hash'][:16]}...")
        state_line = ("no trace found" if check["status"] == "clean"
                      else f"RESIDUE: {len(check['residue'])} token(s) still in {sorted({w for r in check['residue'] for w in r['where']})}")
        click.echo(f"verification: {check['tokens_checked']} token(s) looked for in {len(check['scanned'])} file(s), "
                   f"index(es) and table(s): {state_line}")
        if check["status"] != "clean":
            raise CLIError("the verification scan found the erased subject's tokens (see above)", 1)
