"""The ``oramem`` command line: the store API on the embedded SQLite engine.

Every command opens one store (``--db`` file, ``--store`` id), does one thing and closes
it. Human output is aligned text; ``--json`` prints one JSON document for machines. Bad
arguments print ``Error: ...`` and exit with status 2; store-state and service errors exit
with status 1; no traceback unless ``ORAMEM_DEBUG=1``.

Embedder: :class:`~oramem.embedders.HashEmbedder` (lexical feature hashing, dimension
256) unless ``--embed-url``/``--embed-model`` select an OpenAI-compatible service. A store
keeps the dimension it was created with, so keep using the same embedder for one store.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from importlib import resources
from typing import Any, Iterable, Iterator, Optional, Sequence

import click

from .embedders import EmbeddingServiceError, HashEmbedder, OpenAICompatibleEmbedder
from .embedders.identity import decode_identity, describe_identity
from .errors import StoreError
from .normalize import DEFAULT_STORE_ID, validate_store_id
from .knowledge.cli import kg as kg_group, knowledge as knowledge_group
from .oracle.cli import db as oracle_db_group
from .sqlite import admin as sqlite_admin
from .types import NOT_SET, PROFILE_TYPES, RECORD_TYPES, MessageRecord, PendingRecordBatch, Record

__all__ = ["main", "cli"]

DEFAULT_DB = "./oramem.db"
#: Dimension of the default HashEmbedder the CLI uses.
HASH_DIM = 256
#: Record types ``export`` walks, in this order (threads are implicit, profiles first so
#: an import recreates actors before their records).
EXPORT_TYPES = ("user_profile", "agent_profile", "message", "memory", "guideline", "fact", "preference")
ADDABLE_TYPES = tuple(t for t in RECORD_TYPES if t != "thread")
#: Fields an import line may carry; ``created_at``/``expires_at``/``seq_no`` (written by
#: export) are accepted and ignored because the store assigns them.
IMPORT_FIELDS = frozenset(
    {
        "record_type",
        "content",
        "id",
        "thread_id",
        "user_id",
        "agent_id",
        "role",
        "timestamp",
        "metadata",
        "ttl_days",
        "ttl_anchor",
        "index_text",
        "embedding",
    }
)
IMPORT_IGNORED = frozenset({"created_at", "expires_at", "seq_no"})


# ----------------------------------------------------------------------------- errors
class CLIError(click.ClickException):
    """A clean one-line error with a chosen exit status."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class OramemGroup(click.Group):
    """Turns argument and store errors raised by commands into ``Error: ...`` lines."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except (ValueError, TypeError) as exc:
            if os.environ.get("ORAMEM_DEBUG"):
                raise
            raise CLIError(_one_line(exc), 2) from None
        except (StoreError, EmbeddingServiceError, OSError) as exc:
            if os.environ.get("ORAMEM_DEBUG"):
                raise
            raise CLIError(_one_line(exc), 1) from None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())


def _show_warning(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None) -> None:
    click.echo(f"Warning: {message}", err=True)


# ----------------------------------------------------------------------------- catalog
def read_catalog(path: str) -> dict[str, dict[str, Any]]:
    """Catalog rows of an existing database file, by store id ({} for a non-oramem file)."""
    try:
        return sqlite_admin.list_stores(path)
    except StoreError as exc:
        raise CLIError(str(exc)) from None


# ----------------------------------------------------------------------------- state
@dataclass
class State:
    db: str
    store_id: Optional[str]
    json: bool
    embed_url: Optional[str]
    embed_model: Optional[str]
    embed_dim: Optional[int]
    store_strategy: str
    db_given: bool
    embed_onnx: Optional[str] = None
    strategy_given: bool = False
    _store: Any = None

    def embedder(self) -> Any:
        if self.embed_onnx:
            if self.embed_url or self.embed_model:
                raise click.UsageError("--embed-onnx and --embed-url/--embed-model are alternatives; give one")
            from .embedders import ONNXEmbedder

            try:
                onnx = ONNXEmbedder(self.embed_onnx)
            except ImportError as exc:
                raise CLIError(str(exc), 2) from None
            except RuntimeError as exc:  # ModelNotAvailable
                raise CLIError(_one_line(exc), 1) from None
            if self.embed_dim is not None and self.embed_dim != onnx.embedding_dimension:
                raise click.UsageError(
                    f"--embed-dim {self.embed_dim} differs from the ONNX model's dimension {onnx.embedding_dimension}; omit it"
                )
            return onnx
        if self.embed_url or self.embed_model:
            if not (self.embed_url and self.embed_model):
                raise click.UsageError("--embed-url and --embed-model go together")
            return OpenAICompatibleEmbedder(self.embed_model, base_url=self.embed_url, dimension=self.embed_dim)
        return HashEmbedder(self.embed_dim or HASH_DIM)

    def store_key(self) -> str:
        """The upper-cased memory_store_id this invocation addresses."""
        if not self.store_id:
            return DEFAULT_STORE_ID
        return validate_store_id(self.store_id)

    def open(self, *, create: bool, path: Optional[str] = None, policy: Any = None) -> Any:
        """Open (and remember) the store.

        An existing store is opened with the strategy it supports unless --store-strategy
        was given, so the CLI never upgrades a store by accident; a new store is created
        (only when ``create``) with --store-strategy (default hybrid). Reading commands
        (``create=False``) refuse a missing file or store instead of creating one.
        """
        if self._store is not None:
            return self._store
        from . import SQLiteMemoryStore
        from .types import SchemaPolicy

        path = path or self.db
        sid = self.store_key()
        exists = path != ":memory:" and os.path.exists(path)
        if not create and path != ":memory:" and not exists:
            raise CLIError(
                f"no database at {path}; add records first (oramem add / oramem import) or point --db / ORAMEM_DB at one"
            )
        catalog = read_catalog(path) if exists else {}
        row = catalog.get(sid)
        if row is None and not create:
            known = ", ".join(sorted(catalog)) or "none"
            raise CLIError(f"no store {sid!r} in {path} (stores there: {known}); pick one with --store")
        strategy = self.store_strategy
        if row is not None and not self.strategy_given:
            strategy = row["capability"]
        kwargs: dict[str, Any] = {
            "embedder": self.embedder(),
            "schema_policy": policy or (SchemaPolicy.CREATE_IF_NECESSARY if create else SchemaPolicy.REQUIRE_EXISTING),
            "search_strategy": strategy,
        }
        if self.store_id:
            kwargs["memory_store_id"] = self.store_id
        self._store = SQLiteMemoryStore(path, **kwargs)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            store, self._store = self._store, None
            store.close()


pass_state = click.make_pass_decorator(State)


# ----------------------------------------------------------------------------- parsing
def parse_json_option(value: Optional[str], option: str, *, want_object: bool = True, allow_null: bool = True) -> Any:
    """Parse a JSON option value; ``None`` (option absent) stays NOT_SET."""
    if value is None:
        return NOT_SET
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise CLIError(f"{option} is not valid JSON ({exc.msg} at position {exc.pos}): {value!r}", 2) from None
    if parsed is None and allow_null:
        return None
    if want_object and not isinstance(parsed, dict):
        raise CLIError(f"{option} must be a JSON object{' or null' if allow_null else ''}, got {value!r}", 2)
    return parsed


def split_types(values: Sequence[str]) -> Optional[list[str]]:
    out: list[str] = []
    for v in values:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return out or None


# ----------------------------------------------------------------------------- output
def record_to_dict(record: Record) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": record.id,
        "record_type": record.record_type,
        "content": record.content,
        "timestamp": record.timestamp,
        "metadata": dict(record.metadata) if record.metadata is not None else None,
        "thread_id": record.thread_id,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "created_at": record.created_at,
        "expires_at": record.expires_at,
    }
    if isinstance(record, MessageRecord):
        out["role"] = record.role
        out["seq_no"] = record.seq_no
    return out


def scope_text(record: Record) -> str:
    """``user=.. agent=.. thread=..``; a profile shows the actor it describes."""
    if record.record_type == "user_profile":
        return f"user={record.id}"
    if record.record_type == "agent_profile":
        return f"agent={record.id}"
    parts = []
    for label, value in (("user", record.user_id), ("agent", record.agent_id), ("thread", record.thread_id)):
        if value is not None:
            parts.append(f"{label}={value}")
    return " ".join(parts) or "-"


def type_text(record: Record) -> str:
    """The record type, with the speaker role of a message: ``message(user)``."""
    if isinstance(record, MessageRecord) and record.role:
        return f"{record.record_type}({record.role})"
    return record.record_type


def snippet(text: Optional[str], width: int) -> str:
    if text is None:
        return "(no text)"
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    return flat[: max(width - 1, 1)] + "…"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, flex: int) -> str:
    """Aligned columns; column ``flex`` (the text) takes the width that is left."""
    term = shutil.get_terminal_size((110, 24)).columns
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            if i != flex:
                widths[i] = max(widths[i], len(cell))
    fixed = sum(w for i, w in enumerate(widths) if i != flex) + 2 * (len(headers) - 1)
    widths[flex] = max(40, term - fixed - 1)
    lines = ["  ".join(click.style(h.ljust(widths[i]) if i != len(headers) - 1 else h, bold=True) for i, h in enumerate(headers))]
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            if i == flex:
                cell = snippet(cell, widths[i])
            cells.append(cell if i == len(headers) - 1 else cell.ljust(widths[i]))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))


def results_table(results: Sequence[tuple[Record, float]], *, with_id: bool = False) -> str:
    """rank, distance, type, scope, (id,) content; ``with_id`` for follow-up get/update."""
    rows = []
    for rank, (record, distance) in enumerate(results, 1):
        row = [str(rank), f"{distance:.4f}", type_text(record), scope_text(record)]
        rows.append(row + ([record.id] if with_id else []) + [record.content or ""])
    headers = ["rank", "distance", "type", "scope"] + (["id"] if with_id else []) + ["content"]
    return render_table(headers, rows, flex=len(headers) - 1)


def records_table(records: Sequence[Record]) -> str:
    rows = [[r.id, type_text(r), scope_text(r), (r.created_at or "")[:19], r.content or ""] for r in records]
    return render_table(["id", "type", "scope", "created_at", "content"], rows, flex=4)


# ----------------------------------------------------------------------------- group
@click.group(cls=OramemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    default=DEFAULT_DB,
    show_default=True,
    envvar="ORAMEM_DB",
    show_envvar=True,
    help="SQLite database file (':memory:' for a throw-away store).",
)
@click.option("--store", "store_id", envvar="ORAMEM_STORE", show_envvar=True, help="memory_store_id (default store when omitted).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.option("--embed-url", envvar="ORAMEM_EMBED_URL", help="OpenAI-compatible API root, e.g. http://localhost:8000/v1.")
@click.option("--embed-model", envvar="ORAMEM_EMBED_MODEL", help="Embedding model name for --embed-url.")
@click.option("--embed-dim", type=click.IntRange(min=2), envvar="ORAMEM_EMBED_DIM", help="Embedding dimension (default: 256 for the hash embedder, probed for --embed-url).")
@click.option(
    "--embed-onnx",
    envvar="ORAMEM_ONNX_MODEL",
    show_envvar=True,
    help="Local ONNX embedding model: a model directory, an .onnx file or a model id (needs oramem[onnx]).",
)
@click.option(
    "--store-strategy",
    type=click.Choice(["vector", "keyword", "hybrid"], case_sensitive=False),
    default="hybrid",
    show_default=True,
    envvar="ORAMEM_STRATEGY",
    help="Search strategy the store is opened (and created) with; hybrid can answer all three.",
)
@click.version_option(package_name="oramem")
@click.pass_context
def cli(
    ctx: click.Context,
    db: str,
    store_id: Optional[str],
    as_json: bool,
    embed_url: Optional[str],
    embed_model: Optional[str],
    embed_dim: Optional[int],
    embed_onnx: Optional[str],
    store_strategy: str,
) -> None:
    """Long-term memory for AI agents: the oramem store on an embedded SQLite file.

    The default embedder is HashEmbedder (lexical feature hashing, 256 dimensions): good
    for demos and tests, not semantic. Use --embed-url/--embed-model for a real model.
    """
    source = ctx.get_parameter_source("db")
    state = State(
        db=db,
        store_id=store_id,
        json=as_json,
        embed_url=embed_url,
        embed_model=embed_model,
        embed_dim=embed_dim,
        embed_onnx=embed_onnx,
        store_strategy=store_strategy.lower(),
        db_given=source not in (None, click.core.ParameterSource.DEFAULT),
        strategy_given=ctx.get_parameter_source("store_strategy") not in (None, click.core.ParameterSource.DEFAULT),
    )
    ctx.obj = state
    ctx.call_on_close(state.close)
    warnings.showwarning = _show_warning


# ----------------------------------------------------------------------------- add
def scope_options(fn: Any) -> Any:
    fn = click.option("--agent", "agent_id", help="agent_id scope.")(fn)
    fn = click.option("--user", "user_id", help="user_id scope.")(fn)
    fn = click.option("--thread", "thread_id", help="thread_id scope.")(fn)
    return fn


@cli.command(short_help="Add records from TEXT arguments or stdin.")
@click.argument("texts", nargs=-1)
@click.option("--type", "record_type", default="memory", show_default=True, type=click.Choice(ADDABLE_TYPES), help="Record type.")
@scope_options
@click.option("--role", help="Speaker role (message records only).")
@click.option("--metadata", help="Metadata as a JSON object.")
@click.option("--timestamp", help="ISO-8601 event time.")
@click.option("--ttl-days", type=int, help="Days until the record expires.")
@click.option("--no-expiry", is_flag=True, help="Never expire (ttl_days=None; capped by the store's max_ttl_days).")
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


# ----------------------------------------------------------------------------- search
@cli.command(short_help="Search (vector, keyword or hybrid).")
@click.argument("query")
@click.option("-k", "k", default=10, show_default=True, type=int, help="Number of results.")
@click.option("--strategy", type=click.Choice(["vector", "keyword", "hybrid"], case_sensitive=False), help="Per-call strategy (default: the store's).")
@scope_options
@click.option("--exact-thread", is_flag=True, help="Without --thread: only records with no thread.")
@click.option("--exact-user", is_flag=True, help="Without --user: only records with no user.")
@click.option("--exact-agent", is_flag=True, help="Without --agent: only records with no agent.")
@click.option("--types", multiple=True, help="Record types to search (comma-separated or repeated).")
@click.option("--filter", "metadata_filter", help="Metadata filter as a JSON object.")
@pass_state
def search(
    state: State,
    query: str,
    k: int,
    strategy: Optional[str],
    thread_id: Optional[str],
    user_id: Optional[str],
    agent_id: Optional[str],
    exact_thread: bool,
    exact_user: bool,
    exact_agent: bool,
    types: tuple[str, ...],
    metadata_filter: Optional[str],
) -> None:
    """Search the store for QUERY; prints rank, distance, type, scope and content."""
    flt = parse_json_option(metadata_filter, "--filter", allow_null=False)
    store = state.open(create=False)
    kwargs: dict[str, Any] = dict(
        thread_id=thread_id,
        user_id=user_id,
        agent_id=agent_id,
        exact_thread_match=exact_thread,
        exact_user_match=exact_user,
        exact_agent_match=exact_agent,
        record_types=split_types(types),
        metadata_filter=None if flt is NOT_SET else flt,
    )
    if strategy:
        kwargs["strategy"] = strategy.lower()
    results = store.search(query, k, **kwargs)
    if state.json:
        emit_json([{"rank": i, "distance": d, "record": record_to_dict(r)} for i, (r, d) in enumerate(results, 1)])
    elif not results:
        click.echo("no results")
    else:
        click.echo(results_table(results, with_id=True))


# ----------------------------------------------------------------------------- get / list
def print_record(record: Record) -> None:
    data = record_to_dict(record)
    width = max(len(k) for k in data)
    for key, value in data.items():
        if key == "metadata" and value is not None:
            value = json.dumps(value, ensure_ascii=False)
        click.echo(f"{click.style(key.ljust(width), bold=True)}  {'-' if value is None else value}")


@cli.command(short_help="Show one record.")
@click.argument("record_type", type=click.Choice(RECORD_TYPES))
@click.argument("record_id")
@pass_state
def get(state: State, record_type: str, record_id: str) -> None:
    """Show one record (exit status 1 when it does not exist or has expired)."""
    store = state.open(create=False)
    record = store.get(record_type, record_id)
    if record is None:
        raise CLIError(f"no {record_type} record with id {record_id!r}")
    if state.json:
        emit_json(record_to_dict(record))
    else:
        print_record(record)


@cli.command(name="list", short_help="List records of one type.")
@click.option("--type", "record_type", default="memory", show_default=True, type=click.Choice(RECORD_TYPES))
@click.option("--limit", type=click.IntRange(min=1), help="Keep the newest N (default 10,000).")
@click.option("--all", "no_limit", is_flag=True, help="No limit.")
@scope_options
@click.option("--no-thread", is_flag=True, help="Only records without a thread.")
@click.option("--no-user", is_flag=True, help="Only records without a user.")
@click.option("--no-agent", is_flag=True, help="Only records without an agent.")
@click.option("--filter", "metadata_filter", help="Metadata filter as a JSON object; 'null' = records without metadata.")
@pass_state
def list_(
    state: State,
    record_type: str,
    limit: Optional[int],
    no_limit: bool,
    thread_id: Optional[str],
    user_id: Optional[str],
    agent_id: Optional[str],
    no_thread: bool,
    no_user: bool,
    no_agent: bool,
    metadata_filter: Optional[str],
) -> None:
    """List records of one type, oldest first."""
    if limit is not None and no_limit:
        raise CLIError("--limit and --all exclude each other", 2)
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
    if no_limit:
        kwargs["limit"] = None
    elif limit is not None:
        kwargs["limit"] = limit
    flt = parse_json_option(metadata_filter, "--filter")
    if flt is not NOT_SET:
        kwargs["metadata_filter"] = flt
    store = state.open(create=False)
    records = store.list(record_type, **kwargs)
    if state.json:
        emit_json([record_to_dict(r) for r in records])
    elif not records:
        click.echo(f"no {record_type} records")
    else:
        click.echo(records_table(records))


# ----------------------------------------------------------------------------- update / delete
@cli.command(short_help="Update one record.")
@click.argument("record_type", type=click.Choice(ADDABLE_TYPES))
@click.argument("record_id")
@click.option("--text", help="New stored text (also re-indexed).")
@click.option("--clear-text", is_flag=True, help="Clear the stored text and its retrieval rows.")
@click.option("--index-text", help="New retrieval text (what search sees); '' = not searchable.")
@click.option("--metadata", help="Replace metadata with this JSON object; 'null' clears it.")
@click.option("--timestamp", help="New ISO-8601 event time.")
@click.option("--clear-timestamp", is_flag=True, help="Clear the event time.")
@click.option("--ttl-days", type=int, help="New time to live in days.")
@click.option("--no-expiry", is_flag=True, help="Never expire (ttl_days=None).")
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
    store = state.open(create=False)
    count = store.update(record_type, record_id, **kwargs)
    if state.json:
        emit_json({"updated": count})
    if count == 0:
        raise CLIError(f"no {record_type} record with id {record_id!r}")
    if not state.json:
        click.echo(f"updated {record_type} {record_id}")


@cli.command(short_help="Delete one record (--cascade for profiles).")
@click.argument("record_type", type=click.Choice(RECORD_TYPES))
@click.argument("record_id")
@click.option("--cascade", is_flag=True, help="For profiles: also delete the actor's threads and scoped records.")
@pass_state
def delete(state: State, record_type: str, record_id: str, cascade: bool) -> None:
    """Delete one record (exit 1 when nothing was deleted, except cascades)."""
    store = state.open(create=False)
    if record_type == "thread":
        count = store.delete_thread(record_id)
    else:
        count = store.delete(record_type, record_id, cascade=cascade)
    if state.json:
        emit_json({"deleted": count})
    if count == 0 and not cascade:
        raise CLIError(f"no {record_type} record with id {record_id!r}")
    if not state.json:
        click.echo(f"deleted {count} {record_type} record(s)" + (" (cascade)" if cascade else ""))


@cli.command(name="delete-thread", short_help="Delete a thread and everything in it.")
@click.argument("thread_id")
@pass_state
def delete_thread(state: State, thread_id: str) -> None:
    """Delete a thread with its messages and every record scoped to it."""
    store = state.open(create=False)
    count = store.delete_thread(thread_id)
    if state.json:
        emit_json({"deleted": count})
    if count == 0:
        raise CLIError(f"no thread with id {thread_id!r}")
    if not state.json:
        click.echo(f"deleted thread {thread_id}")


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


# ----------------------------------------------------------------------------- import / export
@dataclass
class ImportLine:
    lineno: int
    record_type: str
    fields: dict[str, Any]


def parse_import_lines(lines: Iterable[str], source: str) -> list[ImportLine]:
    """Parse and validate every line (nothing is written here). Blank lines are skipped."""
    out: list[ImportLine] = []
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        where = f"{source}:{lineno}"
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            raise CLIError(f"{where}: not valid JSON ({exc.msg})", 2) from None
        if not isinstance(obj, dict):
            raise CLIError(f"{where}: expected a JSON object, got {type(obj).__name__}", 2)
        if "text" in obj and "content" not in obj:
            obj["content"] = obj.pop("text")
        if "type" in obj and "record_type" not in obj:
            obj["record_type"] = obj.pop("type")
        unknown = sorted(set(obj) - IMPORT_FIELDS - IMPORT_IGNORED)
        if unknown:
            raise CLIError(f"{where}: unknown field(s) {', '.join(unknown)}; accepted: {', '.join(sorted(IMPORT_FIELDS))}", 2)
        record_type = obj.get("record_type")
        if record_type not in ADDABLE_TYPES:
            raise CLIError(f"{where}: record_type must be one of {', '.join(ADDABLE_TYPES)}, got {record_type!r}", 2)
        fields = {k: v for k, v in obj.items() if k in IMPORT_FIELDS and k != "record_type"}
        if record_type in PROFILE_TYPES and fields.get("role") is None:
            fields.pop("role", None)
        line = ImportLine(lineno, record_type, fields)
        try:
            make_batch([line])
        except (ValueError, TypeError) as exc:
            raise CLIError(f"{where}: {_one_line(exc)}", 2) from None
        out.append(line)
    return out


_BATCH_ARGS = (
    ("content", None),
    ("id", "record_ids"),
    ("thread_id", "thread_ids"),
    ("user_id", "user_ids"),
    ("agent_id", "agent_ids"),
    ("role", "roles"),
    ("timestamp", "timestamps"),
    ("metadata", "metadata"),
    ("index_text", "index_texts"),
    ("embedding", "embeddings"),
    ("ttl_days", "ttl_days"),
    ("ttl_anchor", "ttl_anchor"),
)
#: Fields whose omission means something different from null; lines are only grouped
#: into one PendingRecordBatch when they agree on having them.
_PRESENCE_SENSITIVE = ("ttl_days", "ttl_anchor")


def _group_key(line: ImportLine) -> tuple:
    return (line.record_type,) + tuple(f in line.fields for f in _PRESENCE_SENSITIVE)


def make_batch(lines: Sequence[ImportLine]) -> PendingRecordBatch:
    """One PendingRecordBatch for lines of one record type and one presence pattern."""
    kwargs: dict[str, Any] = {}
    for field_name, arg in _BATCH_ARGS:
        if arg is None:
            continue
        if not any(field_name in l.fields for l in lines):
            continue
        kwargs[arg] = [l.fields.get(field_name) for l in lines]
    return PendingRecordBatch(texts=[l.fields.get("content") for l in lines], record_type=lines[0].record_type, **kwargs)


def make_batches(lines: Sequence[ImportLine]) -> list[PendingRecordBatch]:
    batches: list[PendingRecordBatch] = []
    run: list[ImportLine] = []
    for line in lines:
        if run and _group_key(run[-1]) != _group_key(line):
            batches.append(make_batch(run))
            run = []
        run.append(line)
    if run:
        batches.append(make_batch(run))
    return batches


def chunks(seq: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


def import_lines(store: Any, lines: Sequence[ImportLine], batch_size: int, *, progress: bool) -> int:
    """Write validated lines, ``batch_size`` per transaction; returns records written."""
    written = 0
    bar_cm = click.progressbar(length=len(lines), label="importing", file=sys.stderr) if progress else contextlib.nullcontext()
    with bar_cm as bar:
        for part in chunks(lines, batch_size):
            try:
                store.add_batches(make_batches(part))
            except (ValueError, TypeError, StoreError) as exc:
                raise CLIError(
                    f"lines {part[0].lineno}-{part[-1].lineno}: {_one_line(exc)} "
                    f"({written} record(s) imported before this batch; this batch wrote nothing)",
                    2 if isinstance(exc, (ValueError, TypeError)) else 1,
                ) from None
            written += len(part)
            if bar is not None:
                bar.update(len(part))
    return written


@cli.command(name="import", short_help="Import records from JSON Lines.")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(min=1), help="Records per transaction.")
@pass_state
def import_(state: State, file: Any, batch_size: int) -> None:
    """Import FILE ('-' = stdin): JSON Lines, one record per line with the add fields.

    Fields: record_type, content (alias text), id, thread_id, user_id, agent_id, role,
    timestamp, metadata, ttl_days, ttl_anchor, index_text, embedding. Every line is
    validated before anything is written; then each batch is one transaction.
    """
    source = getattr(file, "name", "<stdin>")
    lines = parse_import_lines(file, source)
    store = state.open(create=True)
    show = not state.json and len(lines) >= 2000 and sys.stderr.isatty()
    started = time.perf_counter()
    written = import_lines(store, lines, batch_size, progress=show)
    elapsed = time.perf_counter() - started
    counts: dict[str, int] = {}
    for line in lines:
        counts[line.record_type] = counts.get(line.record_type, 0) + 1
    if state.json:
        emit_json({"imported": written, "by_type": counts, "seconds": round(elapsed, 3)})
    else:
        detail = ", ".join(f"{n} {t}" for t, n in counts.items())
        click.echo(f"imported {written} record(s) in {elapsed:.2f}s" + (f" ({detail})" if detail else ""))


def export_dict(record: Record) -> dict[str, Any]:
    data = record_to_dict(record)
    out: dict[str, Any] = {"record_type": data.pop("record_type"), "id": data.pop("id")}
    out.update({k: v for k, v in data.items() if v is not None or k == "content"})
    return out


@cli.command(short_help="Export records as JSON Lines.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, writable=True), help="Write to this file instead of stdout.")
@click.option("--type", "types", multiple=True, type=click.Choice(EXPORT_TYPES), help="Only these record types (repeatable).")
@pass_state
def export(state: State, out_path: Optional[str], types: tuple[str, ...]) -> None:
    """Export records as JSON Lines that `oramem import` reads back.

    Retrieval rows and vectors are not exported (import re-embeds the content);
    created_at, expires_at and seq_no are written for reference and ignored on import.
    """
    store = state.open(create=False)
    wanted = [t for t in EXPORT_TYPES if not types or t in types]
    handle = open(out_path, "w", encoding="utf-8") if out_path else None
    count = 0
    try:
        write = handle.write if handle else (lambda s: click.echo(s, nl=False))
        for record_type in wanted:
            for record in store.list(record_type, limit=None):
                write(json.dumps(export_dict(record), ensure_ascii=False) + "\n")
                count += 1
    finally:
        if handle:
            handle.close()
    if out_path:
        click.echo(f"exported {count} record(s) to {out_path}", err=True)


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
    from .types import SchemaPolicy

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
        lines = parse_import_lines(demo_records(), "oramem/data/demo.jsonl")
        started = time.perf_counter()
        written = import_lines(store, lines, 500, progress=False)
        load_s = time.perf_counter() - started
        users = sorted({l.fields["user_id"] for l in lines if l.fields.get("user_id")})
        threads = sorted({l.fields["thread_id"] for l in lines if l.fields.get("thread_id")})
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
            f"into a HYBRID store; embedder: HashEmbedder(dim={HASH_DIM}) (lexical, not semantic)."
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


# ----------------------------------------------------------------------------- reembed
@cli.command(short_help="Re-embed a store with another embedder (resumable).")
@click.option("--batch-size", default=256, show_default=True, type=click.IntRange(min=1), help="Texts per embedding batch.")
@click.option("--restart", is_flag=True, help="Discard an unfinished reembed to a different embedder and start over.")
@pass_state
def reembed(state: State, batch_size: int, restart: bool) -> None:
    """Move the store to the embedder the --embed-* options select, in batches.

    Re-embeds every retrieval row with the new embedder and then swaps all vectors in at
    once, recording the new embedder (and dimension) in the store. Interrupted (Ctrl-C, a
    failing service), it keeps what was done: run the same command again to resume. Until
    it finishes, the store answers with its old vectors and old embedder.
    """
    from .sqlite.reembed import reembed_store

    if state.db == ":memory:" or not os.path.exists(state.db):
        raise CLIError(f"no database at {state.db}")
    sid = state.store_key()
    row = read_catalog(state.db).get(sid)
    if row is None:
        raise CLIError(f"no store {sid!r} in {state.db}; pick one with --store")
    embedder = state.embedder()
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
        result = reembed_store(state.db, embedder, memory_store_id=sid, batch_size=batch_size, progress=progress, restart=restart)
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
            }
        )
        return
    resumed = f" ({result.resumed} done by an earlier run)" if result.resumed else ""
    click.echo(
        f"re-embedded {result.rows} of {result.total} rows{resumed} of store {result.memory_store_id}: "
        f"{describe_identity(result.previous)} -> {describe_identity(result.embedder)}"
    )


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
        "schema_version": row["schema_version"],
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
@click.option("--yes", is_flag=True, help="Confirm: the store and all its records are deleted.")
@pass_state
def stores_drop(state: State, store_id: str, yes: bool) -> None:
    """Delete STORE_ID with all its records (needs --yes)."""
    sid = validate_store_id(store_id)
    catalog = _catalog_or_fail(state)
    if sid not in catalog:
        raise CLIError(f"no store {sid!r} in {state.db} (stores there: {', '.join(catalog) or 'none'})")
    if not yes:
        raise CLIError(f"dropping store {sid!r} deletes all its records; repeat with --yes to confirm", 2)
    sqlite_admin.drop_store(state.db, sid)
    if state.json:
        emit_json({"dropped": sid})
    else:
        click.echo(f"dropped store {sid}")


# The Oracle DBA commands: ``oramem db install|upgrade|uninstall|status|doctor``.
cli.add_command(oracle_db_group)
cli.add_command(knowledge_group)
cli.add_command(kg_group)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="oramem")


if __name__ == "__main__":  # pragma: no cover
    main()
