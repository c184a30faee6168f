"""The ``oramem`` command line: the store API on the embedded SQLite engine.

Every command opens one store (``--db`` file, ``--store`` id), does one thing and closes
it. Human output is aligned text; ``--json`` prints one JSON document for machines. Bad
arguments print ``Error: ...`` and exit with status 2; store-state and service errors exit
with status 1; no traceback unless ``ORAMEM_DEBUG=1``.

Embedder: ``--embed-onnx`` (``$ORAMEM_ONNX_MODEL``) selects a local ONNX model,
``--embed-url``/``--embed-model`` an OpenAI-compatible service, ``--embed-dim`` alone a
HashEmbedder of that dimension. With none of them, an existing store uses the embedder its
recorded identity names when it can be rebuilt here (HashEmbedder, a local ONNX model), and a
new store the semantic default (``oramem.embedders.defaults``: a local model when available,
else HashEmbedder(256) with a one-line notice). A store refuses any other embedder.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from importlib import resources
from typing import Any, Iterable, Optional, Sequence

import click

from . import jsonl
from .embedders import EmbeddingServiceError, HashEmbedder, OpenAICompatibleEmbedder
from .embedders.defaults import default_embedder, embedder_for
from .embedders.identity import decode_identity, describe_identity, identity_of
from .errors import StoreError
from .normalize import DEFAULT_STORE_ID, validate_store_id
from .sqlite import admin as sqlite_admin
from .types import MAX_LIST_LIMIT, NOT_SET, RECORD_TYPES, MessageRecord, Record

__all__ = ["main", "cli"]

DEFAULT_DB = "./oramem.db"
#: Dimension of the default HashEmbedder the CLI uses.
HASH_DIM = 256
ADDABLE_TYPES = jsonl.ADDABLE_TYPES


# ----------------------------------------------------------------------------- errors
class CLIError(click.ClickException):
    """A clean one-line error with a chosen exit status."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        # click declares exit_code a ClassVar, yet reads it per instance; a per-error status is intended
        self.exit_code = exit_code  # type: ignore[misc]


#: Command groups imported only when used, so ``oramem --help`` and the SQLite commands
#: load neither SQLAlchemy (knowledge layer) nor python-oracledb: name -> (module,
#: attribute, short help).
LAZY_GROUPS = {
    "db": ("oramem.oracle.cli", "db", "Install, upgrade, inspect and remove oramem's PL/SQL packages in an Oracle schema."),
    "knowledge": ("oramem.knowledge.cli", "knowledge", "Knowledge graph over the store: write messages, list facts, entities and history."),
    "kg": ("oramem.knowledge.cli", "kg", "Knowledge-graph maintenance on a store named by --store-id (Oracle or --sqlite)."),
}
#: Global options also accepted after a (non-group) subcommand: name -> takes a value.
MOVABLE_OPTIONS = {"--json": False, "--db": True, "--store": True, "--read-only": False}


class OramemGroup(click.Group):
    """Turns argument and store errors raised by commands into ``Error: ...`` lines, loads
    the Oracle and knowledge groups lazily, and accepts ``--json``/``--db``/``--store``
    after a subcommand too (``oramem search coffee --json``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_GROUPS))

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name in LAZY_GROUPS and name not in self.commands:
            module, attr, _ = LAZY_GROUPS[name]
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        limit = formatter.width - 6 - max(len(n) for n in self.list_commands(ctx))
        for name in self.list_commands(ctx):
            if name in LAZY_GROUPS and name not in self.commands:
                # the short help the group will have, without importing it (click's own shortening)
                rows.append((name, click.Command(name, help=LAZY_GROUPS[name][2]).get_short_help_str(limit)))
                continue
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(self, args))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            # the reader closed our stdout (``| head``): stop quietly, successfully
            _quiet_stdout()
            raise click.exceptions.Exit(0) from None
        except (ValueError, TypeError) as exc:
            if os.environ.get("ORAMEM_DEBUG"):
                raise
            raise CLIError(in_cli_words(_one_line(exc), self._flags_of(ctx)), 2) from None
        except (StoreError, EmbeddingServiceError, OSError) as exc:
            if os.environ.get("ORAMEM_DEBUG"):
                raise
            raise CLIError(_one_line(exc), 1) from None
        except sqlite3.Error as exc:  # a damaged, read-only or unreachable database file
            if os.environ.get("ORAMEM_DEBUG"):
                raise
            path = getattr(ctx.obj, "db", None) or "the database"
            raise CLIError(sqlite_admin.explain_error(path, exc), 1) from None


    def _flags_of(self, ctx: click.Context) -> dict[str, str]:
        """Python parameter name -> first long flag, over the group's options and every
        option of the invoked subcommand (and its own subcommands)."""
        flags: dict[str, str] = {}

        def add(command: Optional[click.Command]) -> None:
            if command is None:
                return
            for param in command.params:
                longs = [o for o in getattr(param, "opts", []) if o.startswith("--")]
                if isinstance(param, click.Option) and longs and param.name:
                    flags.setdefault(param.name, longs[0])
            if isinstance(command, click.Group):
                for sub in command.commands.values():
                    add(sub)

        add(self.get_command(ctx, ctx.invoked_subcommand) if ctx.invoked_subcommand else None)
        add(self)
        return flags


#: store API argument -> the CLI option (python name) that feeds it, where the names differ
_API_TO_OPTION = {
    "user_ids": "user_id", "agent_ids": "agent_id", "thread_ids": "thread_id", "record_ids": "record_ids",
    "record_types": "types", "metadata_filter": "metadata_filter", "ttl_days": "ttl_days",
    "memory_store_id": "store_id", "index_texts": "index_text", "metadatas": "metadata",
}


def in_cli_words(message: str, flags: dict[str, str]) -> str:
    """An error raised below the CLI, in the CLI's words: store API argument names become the
    flags that feed them (``user_ids must not be empty`` -> ``--user must not be empty``) and
    Python advice ("pass None ...") becomes "leave the flag out"."""
    def flag(match: "re.Match[str]") -> str:
        name = match.group(0)
        option = _API_TO_OPTION.get(name, name)
        return flags.get(option, name)

    names = sorted({*(n for n in flags if "_" in n), *(a for a, o in _API_TO_OPTION.items() if o in flags)}, key=len, reverse=True)
    if names:
        message = re.sub(r"(?<![-\w])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])", flag, message)
    message = message.replace("(pass None for no value)", "(leave the flag out for no value)")
    return re.sub(r"; pass None to (\w+)", r"; leave the flag out to \1", message)


def hoist_global_options(group: click.Group, args: list[str]) -> list[str]:
    """Move ``--json``/``--db X``/``--store X`` found after a plain subcommand in front of
    it (where the group parses them). Groups with options of their own (``db``, ``kg``,
    ``knowledge``, ``stores``) and anything after ``--`` are left alone."""
    args = list(args)
    valued = {o for p in group.params if isinstance(p, click.Option) and not p.is_flag for o in p.opts}
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        name = args[i].split("=", 1)[0]
        i += 2 if name in valued and "=" not in args[i] else 1
    if i >= len(args) or args[i] in LAZY_GROUPS or isinstance(group.commands.get(args[i]), click.Group):
        return args
    return move_before_subcommand(args, i, MOVABLE_OPTIONS)


def move_before_subcommand(args: list[str], i: int, movable: dict[str, bool]) -> list[str]:
    """``args`` with the options named in ``movable`` (name -> takes a value) that follow the
    subcommand at index ``i`` moved in front of it; anything after ``--`` stays."""
    head, sub, rest = args[:i], args[i], args[i + 1 :]
    moved: list[str] = []
    kept: list[str] = []
    j = 0
    while j < len(rest):
        token = rest[j]
        if token == "--":
            kept.extend(rest[j:])
            break
        name = token.split("=", 1)[0]
        if name in movable:
            if movable[name] and "=" not in token and j + 1 < len(rest):
                moved.extend(rest[j : j + 2])
                j += 2
                continue
            moved.append(token)
        else:
            kept.append(token)
        j += 1
    return head + moved + [sub] + kept


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
    embed_allow_http_key: bool = False
    read_only: bool = False
    keyword_language: Optional[str] = None
    hybrid: Any = None
    _store: Any = None

    def embedder(self, row: Optional[dict[str, Any]] = None) -> Any:
        """The embedder the --embed-* options select; with none of them, the one the existing
        store's recorded identity names (``row``), else for a new store the semantic default
        (a local ONNX model when available, else HashEmbedder(256) with a notice)."""
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
            return OpenAICompatibleEmbedder(
                self.embed_model, base_url=self.embed_url, dimension=self.embed_dim, allow_insecure_key=self.embed_allow_http_key
            )
        if self.embed_dim is not None:
            return HashEmbedder(self.embed_dim)
        if row is not None:
            rebuilt = embedder_for(decode_identity(row.get("embedder")))
            if rebuilt is not None:
                return rebuilt
            return HashEmbedder(HASH_DIM)
        try:
            return default_embedder()
        except ImportError as exc:
            raise CLIError(str(exc), 2) from None
        except RuntimeError as exc:  # ModelNotAvailable for a bad $ORAMEM_ONNX_MODEL
            raise CLIError(_one_line(exc), 1) from None

    def store_key(self) -> str:
        """The upper-cased memory_store_id this invocation addresses."""
        if self.store_id == "":
            raise CLIError("--store is empty; give a store id, or leave it out for the default store", 2)
        if not self.store_id:
            return DEFAULT_STORE_ID
        return validate_store_id(self.store_id)

    def open(self, *, create: bool, path: Optional[str] = None, policy: Any = None, reading: bool = False) -> Any:
        """Open (and remember) the store.

        An existing store is opened with the strategy it supports unless --store-strategy
        was given, so the CLI never upgrades a store by accident; a new store is created
        (only when ``create``) with --store-strategy (default hybrid). Commands that need
        an existing store (``create=False``) refuse a missing file or store instead of
        creating one. Commands that only read (``reading``) open the file read-only with
        --read-only, or when the file or its directory is not writable here.
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
        if self.read_only and not reading:
            raise CLIError("--read-only allows only reading commands (search, get, list, export, check)", 2)
        read_only = self.read_only
        if path != ":memory:":
            read_only = check_db_path(path, exists=exists, create=create, reading=reading) or read_only
        catalog = read_catalog(path) if exists else {}
        row = catalog.get(sid)
        if row is None and not create:
            known = ", ".join(sorted(catalog)) or "none"
            raise CLIError(f"no store {sid!r} in {path} (stores there: {known}); pick one with --store")
        strategy = self.store_strategy
        if row is not None and not self.strategy_given:
            strategy = row["capability"]
        kwargs: dict[str, Any] = {
            "embedder": self.embedder(row),
            "schema_policy": policy or (SchemaPolicy.CREATE_IF_NECESSARY if create else SchemaPolicy.REQUIRE_EXISTING),
            "search_strategy": strategy,
        }
        if self.keyword_language is not None:
            stored = None if row is None else (row.get("keyword_language") or "legacy")
            if stored is not None and stored != self.keyword_language:
                raise CLIError(
                    f"--keyword-language {self.keyword_language}: store {sid!r} indexes text as {stored!r} "
                    "(a store setting fixed at creation); omit --keyword-language, or use another --store", 2
                )
            if stored is None:
                kwargs["keyword_language"] = self.keyword_language
        if self.hybrid is not None:
            kwargs["hybrid"] = self.hybrid
        if self.store_id:
            kwargs["memory_store_id"] = self.store_id
        if path != ":memory:":
            kwargs["read_only"] = read_only
        self._store = SQLiteMemoryStore(path, **kwargs)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            store, self._store = self._store, None
            store.close()


pass_state = click.make_pass_decorator(State)


def check_db_path(path: str, *, exists: bool, create: bool, reading: bool = False) -> bool:
    """One clear error for a --db that cannot work, before SQLite is asked; True when an
    existing file can only be read here and the command only reads (open it read-only)."""
    if path == "" or os.path.isdir(path):
        raise CLIError(f"--db {path!r} is {'empty' if not path else 'a directory'}; give a database file path", 2)
    where = os.path.dirname(os.path.abspath(path))
    if not exists:
        if not os.path.isdir(where):
            raise CLIError(f"cannot create {path}: directory {where} does not exist (create it, or point --db elsewhere)")
        if create and not os.access(where, os.W_OK | os.X_OK):
            raise CLIError(f"cannot create {path}: directory {where} is not writable")
        return False
    if not os.access(path, os.R_OK):
        raise CLIError(f"cannot read {path}: permission denied")
    if not os.access(path, os.W_OK) or not os.access(where, os.W_OK | os.X_OK):
        if reading:
            return True
        raise CLIError(
            f"{path} is read-only here: this command writes, which needs write access to the file and its "
            "directory (WAL journal); reading commands (search, get, list, export, check) work on it"
        )
    return False


# ----------------------------------------------------------------------------- parsing
def parse_json_option(value: Optional[str], option: str, *, want_object: bool = True, allow_null: bool = True) -> Any:
    """Parse a JSON option value; ``None`` (option absent) stays NOT_SET."""
    if value is None:
        return NOT_SET
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
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
    if values and not out:
        raise CLIError("--types is empty; name record types (e.g. --types memory,fact) or leave it out for all", 2)
    return out or None


# ----------------------------------------------------------------------------- output
record_to_dict = jsonl.record_to_dict


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


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, flex: int, full: bool = False) -> str:
    """Aligned columns; column ``flex`` (the text) takes the width that is left (``full``:
    its whole text, on one line)."""
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
                cell = " ".join(cell.split()) if full else snippet(cell, widths[i])
            cells.append(cell if i == len(headers) - 1 else cell.ljust(widths[i]))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))


def results_table(results: Sequence[tuple[Record, float]], *, with_id: bool = False, full: bool = False) -> str:
    """rank, distance, type, scope, (id,) content; ``with_id`` for follow-up get/update."""
    rows = []
    for rank, (record, distance) in enumerate(results, 1):
        row = [str(rank), f"{distance:.4f}", type_text(record), scope_text(record)]
        rows.append(row + ([record.id] if with_id else []) + [record.content or ""])
    headers = ["rank", "distance", "type", "scope"] + (["id"] if with_id else []) + ["content"]
    return render_table(headers, rows, flex=len(headers) - 1, full=full)


def records_table(records: Sequence[Record], *, full: bool = False) -> str:
    rows = [[r.id, type_text(r), scope_text(r), (r.created_at or "")[:19], r.content or ""] for r in records]
    return render_table(["id", "type", "scope", "created_at", "content"], rows, flex=4, full=full)


def full_option(fn: Any) -> Any:
    return click.option("--full", is_flag=True, help="Show the whole content (default: cut to the terminal width).")(fn)


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
@click.option(
    "--read-only",
    "read_only",
    is_flag=True,
    help="Open the database read-only (search, get, list, export, check); automatic when the file or its directory is not writable.",
)
@click.option("--embed-url", envvar="ORAMEM_EMBED_URL", show_envvar=True, help="OpenAI-compatible API root, e.g. http://localhost:8000/v1.")
@click.option("--embed-model", envvar="ORAMEM_EMBED_MODEL", show_envvar=True, help="Embedding model name for --embed-url.")
@click.option(
    "--embed-allow-http-key",
    is_flag=True,
    help="Allow sending the embedding API key ($ORAMEM_EMBED_API_KEY; $OPENAI_API_KEY only goes to api.openai.com) over plain http to a non-loopback --embed-url.",
)
@click.option("--embed-dim", type=click.IntRange(min=2), envvar="ORAMEM_EMBED_DIM", show_envvar=True, help="Embedding dimension (default: 256 for the hash embedder, probed for --embed-url).")
@click.option(
    "--embed-onnx",
    envvar="ORAMEM_ONNX_MODEL",
    show_envvar=True,
    help="Local ONNX embedding model: a model directory, an .onnx file or a model id (needs oramem[onnx]).",
)
@click.option(
    "--keyword-language",
    type=click.Choice(["english", "none"], case_sensitive=False),
    envvar="ORAMEM_KEYWORD_LANGUAGE",
    show_envvar=True,
    help="How a new store's keyword index reads text: english (stemming, English stopwords; the default) or "
    "none (no stemming, no stopwords). An existing store keeps its own; giving another is an error.",
)
@click.option(
    "--store-strategy",
    type=click.Choice(["vector", "keyword", "hybrid"], case_sensitive=False),
    default="hybrid",
    show_default=True,
    envvar="ORAMEM_STRATEGY",
    show_envvar=True,
    help="Search strategy the store is opened (and created) with; hybrid can answer all three.",
)
@click.version_option(package_name="oramem")
@click.pass_context
def cli(
    ctx: click.Context,
    db: str,
    store_id: Optional[str],
    as_json: bool,
    read_only: bool,
    embed_url: Optional[str],
    embed_model: Optional[str],
    embed_allow_http_key: bool,
    embed_dim: Optional[int],
    embed_onnx: Optional[str],
    keyword_language: Optional[str],
    store_strategy: str,
) -> None:
    """Long-term memory for AI agents: the oramem store on an embedded SQLite file.

    Embedder: --embed-onnx (or $ORAMEM_ONNX_MODEL) for a local ONNX model, --embed-url and
    --embed-model for a service. Without them an existing store reuses the embedder it was
    built with, and a new one uses the local model if one is set up, else the lexical
    HashEmbedder(256) (not semantic; a notice says so).
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
        embed_allow_http_key=embed_allow_http_key,
        read_only=read_only,
        keyword_language=None if keyword_language is None else keyword_language.lower(),
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
@full_option
@click.option("--vector-weight", type=click.FloatRange(min=0), help="Hybrid fusion: weight of the vector ranking (default 1.0).")
@click.option("--keyword-weight", type=click.FloatRange(min=0), help="Hybrid fusion: weight of the keyword ranking (default 0.7).")
@click.option("--rrf-k", type=click.FloatRange(min=0, min_open=True), help="Hybrid fusion: reciprocal-rank constant (default 10; larger flattens the ranks).")
@click.option("--fusion-depth", type=click.IntRange(min=1), help="Hybrid fusion: candidates per ranking (default max(10*k, 200)).")
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
    full: bool,
    vector_weight: Optional[float],
    keyword_weight: Optional[float],
    rrf_k: Optional[float],
    fusion_depth: Optional[int],
) -> None:
    """Search the store for QUERY; prints rank, distance, type, scope and content.

    Hybrid search fuses the vector and keyword rankings by weighted reciprocal-rank fusion:
    score = vector-weight / (rrf-k + vector rank) + keyword-weight / (rrf-k + keyword rank),
    over the best fusion-depth candidates of each ranking."""
    flt = parse_json_option(metadata_filter, "--filter", allow_null=False)
    fusion: dict[str, Any] = {"vector_weight": vector_weight, "keyword_weight": keyword_weight, "rrf_k": rrf_k, "depth": fusion_depth}
    given = {name: value for name, value in fusion.items() if value is not None}
    if given:
        from .sqlite import HybridConfig

        if given.get("vector_weight", 1.0) == 0 and given.get("keyword_weight", 0.7) == 0:
            raise CLIError("--vector-weight and --keyword-weight are both 0; use --strategy vector or keyword instead", 2)
        state.hybrid = HybridConfig(**given)
    store = state.open(create=False, reading=True)
    if given:
        effective = (strategy or store.search_strategy.value).lower()
        if effective != "hybrid":
            flags = ", ".join("--fusion-depth" if name == "depth" else f"--{name.replace('_', '-')}" for name in given)
            raise CLIError(f"{flags} only apply to hybrid search, and this search is {effective}; "
                           "add --strategy hybrid or drop them", 2)
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
        click.echo(results_table(results, with_id=True, full=full))


# ----------------------------------------------------------------------------- get / list
def print_record(record: Record) -> None:
    data = record_to_dict(record)
    width = max(len(k) for k in data)
    for key, value in data.items():
        if key == "metadata" and value is not None:
            value = json.dumps(value, ensure_ascii=False)
        click.echo(f"{click.style(key.ljust(width), bold=True)}  {'-' if value is None else value}")


@cli.command(short_help="Show one record.")
@click.argument("record_type", metavar="TYPE", type=click.Choice(RECORD_TYPES))
@click.argument("record_id", metavar="ID")
@pass_state
def get(state: State, record_type: str, record_id: str) -> None:
    """Show one record (exit status 1 when it does not exist or has expired)."""
    store = state.open(create=False, reading=True)
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
    newest --offset (so --offset 100 --limit 100 is the second page counted from the newest)."""
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
    records = store.list(record_type, **kwargs)
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
@click.argument("record_type", metavar="TYPE", type=click.Choice(RECORD_TYPES))
@click.argument("record_id", metavar="ID")
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


@cli.command(short_help="Erase a user or an agent everywhere (store and knowledge).")
@click.option("--user", "user_id", help="The user to erase (on every agent, shared ones too).")
@click.option("--agent", "agent_id", help="The agent to erase, with all its knowledge.")
@click.option("--name", "names", multiple=True, help="With --user: a name she has as a speaker or entity in the knowledge layer (repeatable; default: the user id).")
@click.option("--yes", is_flag=True, help="Confirm without a prompt (needed when stdin is not a terminal).")
@pass_state
def forget(state: State, user_id: Optional[str], agent_id: Optional[str], names: tuple[str, ...], yes: bool) -> None:
    """Erase everything about a user (--user) or an agent (--agent) in one transaction: the
    profile, its threads and scoped records, and in the knowledge layer what was derived
    from them (events, facts from or about the user, her entity, aliases, edges,
    observations). Prints the rows erased per table. The deleted text then is in no table,
    index or vector snapshot, and in no byte of the database files (the FTS index is merged
    and the WAL checkpointed). Irreversible.
    """
    if (user_id is None) == (agent_id is None):
        raise CLIError("give exactly one of --user or --agent", 2)
    if names and agent_id is not None:
        raise CLIError("--name goes with --user (an agent is erased with all its knowledge)", 2)
    who = f"user {user_id}" if user_id is not None else f"agent {agent_id}"
    store = state.open(create=False)
    if not yes:
        if not sys.stdin.isatty():
            raise CLIError(f"forget erases {who} irreversibly; repeat with --yes to confirm", 2)
        click.confirm(f"Erase {who} and everything derived from it from {state.db}?", abort=True, err=True)
    names_arg = list(names) or None
    if state.db != ":memory:" and sqlite_admin.knowledge_tables_exist(state.db, state.store_key()):
        from .knowledge import KnowledgeMemory

        with KnowledgeMemory(store, None) as km:
            counts = km.forget(user_id=user_id, agent_id=agent_id, names=names_arg)
    else:
        counts = store.forget(user_id=user_id, agent_id=agent_id, names=names_arg)
    erased = {table: n for table, n in counts.items() if n}
    if state.json:
        emit_json({"user_id": user_id, "agent_id": agent_id, "erased": erased, "total": sum(erased.values())})
        return
    if not erased:
        click.echo(f"nothing stored about {who}")
        return
    click.echo(f"erased {who}: {sum(erased.values())} row(s)")
    width = max(len(t) for t in erased)
    for table, n in sorted(erased.items()):
        click.echo(f"  {table.ljust(width)}  {n}")


# ----------------------------------------------------------------------------- import / export
def _parse_jsonl(lines: Iterable[str], source: str, **kwargs: Any) -> list[jsonl.ImportLine]:
    try:
        return jsonl.parse_lines(lines, source, **kwargs)
    except jsonl.JSONLError as exc:
        raise CLIError(str(exc), 2) from None


def import_lines(store: Any, lines: Sequence[jsonl.ImportLine], batch_size: int, *, progress: bool, on_conflict: str = "fail") -> jsonl.ImportResult:
    """Write validated lines, ``batch_size`` per transaction; a failure or Ctrl-C says how
    far it got (exit 2 for bad input, 1 for store errors, 130 for Ctrl-C)."""
    bar_cm = click.progressbar(length=len(lines), label="importing", file=sys.stderr) if progress else contextlib.nullcontext()
    with bar_cm as bar:
        try:
            return jsonl.import_records(
                store, lines, on_conflict=on_conflict, batch_size=batch_size, progress=bar.update if bar is not None else None
            )
        except jsonl.ImportStopped as stop:
            cause = stop.cause
            if isinstance(cause, KeyboardInterrupt):
                raise CLIError(f"interrupted: {stop.summary()}; resume with: oramem import --on-conflict skip FILE", 130) from None
            code = 2 if isinstance(cause, (ValueError, TypeError)) else 1
            hint = "; fix it and re-run with --on-conflict skip to resume" if stop.result.imported else ""
            where = f"lines {stop.lineno}-{stop.last_lineno}" if stop.last_lineno != stop.lineno else f"line {stop.lineno}"
            raise CLIError(f"{where}: {_one_line(cause)} ({stop.summary()}; this batch wrote nothing{hint})", code) from None


def _check_vector_source(header: dict[str, Any], store: Any, source: str) -> None:
    """Vectors in a file go only into a store that embeds with the embedder that made them
    (a foreign vector space would silently corrupt search, new-user-trial #2)."""
    from .embedders.identity import same_identity

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


@cli.command(name="import", short_help="Import (restore) records from JSON Lines.")
@click.argument("file", type=click.File("r", encoding="utf-8-sig"))
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(min=1), help="Records per transaction.")
@click.option(
    "--on-conflict",
    type=click.Choice(jsonl.ON_CONFLICT),
    default="fail",
    show_default=True,
    help="An id already stored: fail (stop; the batch writes nothing), skip (keep the stored record; resumes an interrupted import) or replace.",
)
@click.option("--type", "default_type", type=click.Choice(jsonl.ADDABLE_TYPES), help="Record type of lines without record_type.")
@click.option("--fresh-times", is_flag=True, help="Ignore created_at/expires_at in the file: set created_at to now and expiry from ttl_days, as add does.")
@click.option("--no-vectors", is_flag=True, help="Ignore the vectors in the file (export --with-vectors) and embed with this store's embedder.")
@pass_state
def import_(state: State, file: Any, batch_size: int, on_conflict: str, default_type: Optional[str], fresh_times: bool,
            no_vectors: bool) -> None:
    """Import FILE ('-' = stdin): JSON Lines, one record per line, e.g. a file from
    `oramem export` (a backup: ids, scope, content, metadata, created_at and expires_at
    are restored as they were).

    Fields: record_type (alias type), content (alias text), id, thread_id, user_id,
    agent_id, role, timestamp, metadata, ttl_days, ttl_anchor, index_text, embedding,
    created_at, expires_at (seq_no is ignored). Every line is validated, and ids repeated
    in the file are found, before anything is written; then each batch is one transaction.
    Ctrl-C or a failing batch prints how many records landed (exit 130 for Ctrl-C).
    """
    source = getattr(file, "name", "<stdin>")
    header: dict[str, Any] = {}
    lines = _parse_jsonl(file, source, default_type=default_type, keep_times=not fresh_times, header=header)
    if no_vectors:
        for ln in lines:
            ln.fields.pop("embedding", None)
    store = state.open(create=True)
    if any("embedding" in ln.fields for ln in lines):
        _check_vector_source(header, store, source)
    show = not state.json and len(lines) >= 2000 and sys.stderr.isatty()
    started = time.perf_counter()
    result = import_lines(store, lines, batch_size, progress=show, on_conflict=on_conflict)
    elapsed = time.perf_counter() - started
    if state.json:
        emit_json({"imported": result.imported, "skipped": result.skipped, "by_type": result.by_type, "seconds": round(elapsed, 3)})
    else:
        detail = ", ".join(f"{n} {t}" for t, n in result.by_type.items())
        skipped = f"; {result.skipped} skipped (already stored)" if result.skipped else ""
        click.echo(f"imported {result.imported} record(s) in {elapsed:.2f}s" + (f" ({detail})" if detail else "") + skipped)


@cli.command(short_help="Export (back up) records as JSON Lines.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, writable=True), help="Write to this file instead of stdout.")
@click.option("--type", "types", multiple=True, type=click.Choice(jsonl.EXPORT_TYPES), help="Only these record types (repeatable).")
@click.option("--with-vectors", is_flag=True, help="Also write each record's retrieval rows as they are (chunk texts and vectors) and a header line naming the embedder.")
@pass_state
def export(state: State, out_path: Optional[str], types: tuple[str, ...], with_vectors: bool) -> None:
    """Export records as JSON Lines (one JSON object per line) that `oramem import`
    restores: ids, type, scope, role, content, event timestamp, metadata, created_at and
    expires_at. With --with-vectors also each record's retrieval rows as they are (chunk texts
    and vectors) after a header line naming the embedder; an import writes them back
    without re-embedding into a store with that embedder. Without it, import re-chunks and
    re-embeds the content; seq_no is written for reference only.
    """
    from .sqlite.health import is_intact

    # a damaged file is read row by row instead (decided before the first line is written)
    intact = state.db == ":memory:" or not os.path.exists(state.db) or is_intact(state.db)
    store = state.open(create=False, reading=True) if intact else None
    handle = open(out_path, "w", encoding="utf-8") if out_path else None
    try:
        write = handle.write if handle else (lambda s: click.echo(s, nl=False))
        if store is not None and with_vectors:
            count = _export_with_vectors(state, store, write, set(types) or None)
        elif store is not None:
            count = jsonl.export_records(store, write, list(types) or None)
        else:
            count = _salvage_export(state, write, set(types) or None)
    finally:
        if handle:
            handle.close()
    if out_path:
        click.echo(f"exported {count} record(s) to {out_path}", err=True)


def _export_with_vectors(state: State, store: Any, write: Any, types: Optional[set[str]]) -> int:
    """``export --with-vectors``: the store's rows as they are, oldest first."""
    import datetime as _dt

    if state.db == ":memory:":
        raise CLIError("--with-vectors needs a database file", 2)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")
    header = {"memory_store_id": store.memory_store_id, "embedder": identity_of(store.embedder),
              "vector_dim": store.vector_dim}

    def rows() -> Iterable[tuple[Any, list]]:
        after = 0
        while True:
            batch = sqlite_admin.read_record_rows(state.db, store.memory_store_id, after, 1000, now)
            if not batch:
                return
            after = batch[-1][0]
            for _, record, chunks in batch:
                if record.record_type != "thread" and (types is None or record.record_type in types):
                    yield record, chunks

    return jsonl.export_with_vectors(write, header, rows())


def _salvage_export(state: State, write: Any, types: Optional[set[str]]) -> int:
    """A damaged file: read what can be read, row range by row range (nothing is written to
    it), and say what was lost and how to recover the rest; exit 1 when rows were lost."""
    from .sqlite.health import RECOVER_HINT, SalvageReport, salvage_records

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


@cli.command(short_help="Check the database file: integrity, settings, index consistency.")
@pass_state
def check(state: State) -> None:
    """Check --db without writing to it: SQLite's integrity check, then per store (all, or
    --store) its settings, records against retrieval rows, the keyword index against the
    retrieval rows, vector lengths, the vector sidecar, and the knowledge tables' facts
    against their store records. Exit 1 when a check fails."""
    from .sqlite.health import check_file

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


@cli.command(short_help="Copy every store and its knowledge to another database (resumable).")
@click.argument("source")
@click.argument("target")
@click.option("--only", "only", multiple=True, help="Copy only this store id (repeatable; default: every store).")
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(min=1), help="Records (or knowledge rows) per transaction.")
def migrate(source: str, target: str, only: tuple[str, ...], batch_size: int) -> None:
    """Copy every store of SOURCE, with its knowledge tables, into TARGET, then compare
    record counts and checksums of both sides. Locations: sqlite:PATH (or a path) and
    oracle://USER@HOST:PORT/SERVICE. Records keep their ids, scope, metadata, created_at,
    expires_at, retrieval rows and vectors (nothing is re-embedded). Interrupted, run the
    same command again: what is already in TARGET is skipped. Exit 1 when the comparison
    finds a difference. The Oracle side is refused in this version (see oramem/migrate.py).
    (--db and --store are not used: SOURCE and TARGET name the databases.)"""
    from . import migrate as migration

    state: State = click.get_current_context().obj
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if state.json or not sys.stderr.isatty():
            return
        if bar is None:
            bar = click.progressbar(length=max(total, 1), label="migrating", file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)

    try:
        report = migration.migrate(source, target, stores=list(only) or None, batch_size=batch_size, progress=progress)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    stores_out = [
        {"memory_store_id": s.store_id, "records": {"source": s.records[0], "target": s.records[1]},
         "records_match": s.records_match, "knowledge": {t: {"source": a, "target": b} for t, (a, b) in s.knowledge.items()},
         "knowledge_match": s.knowledge_match}
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
    if not report.ok:
        raise CLIError("the copy differs from the source: " + ", ".join(s.store_id for s in report.stores if not s.ok))


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
        lines = _parse_jsonl(demo_records(), "oramem/data/demo.jsonl")
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


@cli.command(short_help="Serve the store to MCP clients (stdio or streamable HTTP).")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True, help="stdio for a client that launches the server; http for streamable HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP address to listen on (loopback unless you choose otherwise).")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="HTTP port.")
@click.option("--user", "user_id", help="Fix the user scope of every call (clients never see other users).")
@click.option("--agent", "agent_id", help="Fix the agent scope of every call.")
@click.option("--allow-scope-per-call", is_flag=True, help="Let calls pass their own user_id/agent_id (trusted clients only).")
@click.option("--knowledge", is_flag=True, help="Also serve retrieve_knowledge over this database's knowledge layer (needs --agent, or --allow-scope-per-call; no LLM is called).")
@pass_state
def mcp(state: State, transport: str, host: str, port: int, user_id: Optional[str], agent_id: Optional[str], allow_scope_per_call: bool, knowledge: bool) -> None:
    """Run an MCP server over the store (needs: pip install 'oramem[mcp]').

    Tools: add_memory, search_memories, get_memory, update_memory, delete_memory,
    forget, and with --knowledge retrieve_knowledge. Scope is fixed by
    --user/--agent (see the README's MCP recipe).
    """
    if transport == "stdio" and (host != "127.0.0.1" or port != 8765):
        raise click.UsageError("--host and --port apply to --transport http only")
    if knowledge and agent_id is None and not allow_scope_per_call:
        raise click.UsageError("--knowledge needs --agent ID (the knowledge layer is per agent), or --allow-scope-per-call")
    try:
        from .integrations.mcp import build_server
    except ImportError as exc:
        raise CLIError(str(exc)) from exc
    store = state.open(create=True)
    km = None
    if knowledge:
        from .knowledge import KnowledgeMemory

        km = KnowledgeMemory(store, None)  # retrieval only: no LLM is configured or called
    try:
        server = build_server(store, user_id=user_id, agent_id=agent_id, allow_scope_per_call=allow_scope_per_call, knowledge=km)
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        if km is not None:
            km.close()


def main() -> None:
    """Console-script entry point: click's standalone handling, except that Ctrl-C exits
    130 without "Aborted!" and a closed stdout (``oramem export | head``) ends quietly with
    status 0 (the reader stopped reading; nothing failed)."""
    try:
        rv = cli.main(prog_name="oramem", standalone_mode=False)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt) or isinstance(exc.__cause__, KeyboardInterrupt):
            sys.exit(130)
        click.echo("Aborted!", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(0)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
    sys.exit(rv if isinstance(rv, int) else 0)


def _quiet_stdout() -> None:
    # Python flushes stdout again at exit; point it at /dev/null so that does not fail.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":  # pragma: no cover
    main()
