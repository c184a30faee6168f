"""The root group's machinery: clean ``Error:`` lines, lazily loaded groups, global options
accepted after a subcommand, and API argument names rewritten as the flags that feed them."""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any, Optional

import click

from ..sqlite._sqlite import sqlite3
from ..errors import ArgumentError, ArgumentTypeError, Error, NoEmbedder, StoreBusy
from ..jsonl import JSONLError
from ..trust.erasure import ErasedSubjectError
from ..trust.firewall import FirewallRejected
from ..sqlite import admin as sqlite_admin



# ----------------------------------------------------------------------------- errors
class CLIError(click.ClickException):
    """A clean one-line error with a chosen exit status."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        # click declares exit_code a ClassVar, yet reads it per instance; a per-error status is intended
        self.exit_code = exit_code  # type: ignore[misc]


def ask_password(prompt: str, missing: str) -> str:
    """A hidden prompt for a password, or, with no terminal on stdin (a script, CI, a pipe),
    one error saying how to give it (``missing``) instead of click's "Warning: Can not control
    echo on the terminal ... Aborted!" (exit 1) once stdin ran dry."""
    if not sys.stdin.isatty():
        raise CLIError(f"{missing} (stdin is not a terminal, so there is no prompt)", EXIT_USAGE)
    return str(click.prompt(prompt, hide_input=True, err=True))


#: Exit statuses (documented in the README, after the command-line examples)
EXIT_ERROR = 1  # the store's state, a service, the database file, the file system
EXIT_USAGE = 2  # a bad flag or argument (click's own usage errors exit 2 too); nothing was written
EXIT_BUSY = 3  # another process held the database lock longer than the wait: retry later

#: Exception class -> exit status. The most specific class of an error's MRO that is listed
#: wins (FirewallRejected is a StoreError and a ValueError: the table says 2). Errors not
#: listed (a bug: KeyError, AttributeError...) keep their traceback. ValueError and TypeError
#: stay listed for the parts of the library that predate ArgumentError.
EXIT_CODES: dict[type[BaseException], int] = {
    ArgumentError: EXIT_USAGE,
    ArgumentTypeError: EXIT_USAGE,
    FirewallRejected: EXIT_USAGE,  # the content given was refused by the store's policy
    ErasedSubjectError: EXIT_USAGE,  # the --user/--agent given was erased
    JSONLError: EXIT_USAGE,  # the input file given is not valid oramem JSONL
    ValueError: EXIT_USAGE,
    TypeError: EXIT_USAGE,
    StoreBusy: EXIT_BUSY,
    Error: EXIT_ERROR,
    OSError: EXIT_ERROR,
    sqlite3.Error: EXIT_ERROR,
}


def exit_code_for(exc: BaseException) -> Optional[int]:
    """The exit status of ``exc`` by its class (``EXIT_CODES``), or None for a bug."""
    for cls in type(exc).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return None


#: Command groups imported only when used, so ``oramem --help`` and the SQLite commands
#: load neither SQLAlchemy (knowledge layer) nor python-oracledb: name -> (module,
#: attribute, short help).
LAZY_GROUPS = {
    "db": ("oramem.cli.cmd_db", "db", "Install, upgrade, inspect and remove oramem's PL/SQL packages in an Oracle schema."),
    "knowledge": ("oramem.cli.cmd_knowledge", "knowledge", "Knowledge graph over the store: write messages, list facts, entities and history."),
    "kg": ("oramem.cli.cmd_knowledge", "kg", "Knowledge-graph maintenance: the extraction queue and background jobs (SQLite --db, or Oracle)."),
}
#: Global options also accepted after a (non-group) subcommand: name -> takes a value.
MOVABLE_OPTIONS = {"--json": False, "--db": True, "--store": True, "--read-only": False}


#: ``ctx.meta`` key: the command line asks for a help page (:meth:`OramemGroup.parse_args`)
HELP_REQUESTED = "oramem.help_requested"


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
        # a help request anywhere before "--" (``oramem --db "" search --help``): the root
        # callback then leaves --db alone, so the help is shown whatever --db says
        words = args[: args.index("--")] if "--" in args else args
        ctx.meta[HELP_REQUESTED] = any(w in ("-h", "--help") for w in words)
        args = hoist_global_options(self, args)
        if not ctx.resilient_parsing:
            refuse_repeated_options(self, ctx, args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            # the reader closed our stdout (``| head``): stop quietly, successfully
            quiet_stdout()
            raise click.exceptions.Exit(0) from None
        except Exception as exc:
            code = exit_code_for(exc)
            if code is None or os.environ.get("ORAMEM_DEBUG"):
                raise  # not an error oramem reports: a bug, shown with its traceback
            raise CLIError(self._message(ctx, exc, code), code) from None

    def _message(self, ctx: click.Context, exc: Exception, code: int) -> str:
        if isinstance(exc, NoEmbedder):
            hint = getattr(ctx.obj, "embedder_hint", None)
            if hint:  # the store's embedder could not be rebuilt here: say which flag gives one
                return str(hint)
        if isinstance(exc, sqlite3.Error):  # a damaged, read-only or unreachable database file
            path = getattr(ctx.obj, "db", None) or "the database"
            return sqlite_admin.explain_error(path, exc)
        if code == EXIT_USAGE:
            return in_cli_words(one_line(exc), self._flags_of(ctx))
        return one_line(exc)

    def _flags_of(self, ctx: click.Context) -> dict[str, str]:
        """Python parameter name -> first long flag, over every option of the invoked
        subcommand (and its own subcommands), then the root group's own options (not its
        other commands': a name there would become a flag the user cannot give here)."""
        flags: dict[str, str] = {}

        def add(command: Optional[click.Command]) -> None:
            if command is None:
                return
            for name, flag in command_flags(command).items():
                flags.setdefault(name, flag)
            if isinstance(command, click.Group):
                for sub in command.commands.values():
                    add(sub)

        add(self.get_command(ctx, ctx.invoked_subcommand) if ctx.invoked_subcommand else None)
        for name, flag in command_flags(self).items():
            flags.setdefault(name, flag)
        return flags


def command_flags(command: click.Command) -> dict[str, str]:
    """One command's parameters, Python name -> how the command line names it: an option's
    first long flag (``as_of`` -> ``--as-of``), an argument's metavar (``agent_id`` -> ``AGENT_ID``)."""
    flags: dict[str, str] = {}
    for param in command.params:
        longs = [o for o in getattr(param, "opts", []) if o.startswith("--")]
        if isinstance(param, click.Option) and longs and param.name:
            flags.setdefault(param.name, longs[0])
        elif isinstance(param, click.Argument) and param.name:
            flags.setdefault(param.name, param.human_readable_name)
    return flags


#: store API argument -> the CLI option (python name) that feeds it, where the names differ
_API_TO_OPTION = {
    "user_ids": "user_id", "agent_ids": "agent_id", "thread_ids": "thread_id", "record_ids": "record_ids",
    "record_types": "types", "metadata_filter": "metadata_filter", "ttl_days": "ttl_days",
    "memory_store_id": "store_id", "index_texts": "index_text", "metadatas": "metadata",
    "timestamps": "timestamp", "roles": "role", "search_strategy": "store_strategy",
    "speaker_name": "speaker",  # KnowledgeMemory.write's argument behind knowledge write --speaker
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
    # an argument shown with its value (``timestamp='nope'``) is the flag of that name too
    plain = sorted((n for n in flags if "_" not in n), key=len, reverse=True)
    if plain:
        message = re.sub(r"(?<![-\w])(" + "|".join(map(re.escape, plain)) + r")(?==['\"\w])", lambda m: flags[m.group(1)], message)
        # ... and so is one the message opens with (``since must be an ISO-8601 time``)
        message = re.sub(r"^(" + "|".join(map(re.escape, plain)) + r")(?= must\b| is not\b)", lambda m: flags[m.group(1)], message)
    message = message.replace("--role apply only", "--role applies only")
    message = message.replace("--role entries must be non-empty strings or None", "--role must not be empty")
    message = message.replace(
        "is upgraded by that open under CREATE_IF_NECESSARY",
        "is upgraded by a command that writes (oramem add, oramem import) with that flag",
    )
    message = message.replace("(pass None for no value)", "(leave the flag out for no value)")
    message = message.replace("(or None for no value)", "(or leave the flag out for no value)")
    message = message.replace(", or None for ", ", or leave the flag out for ")
    message = message.replace("must be a datetime or an ISO-8601 string", "must be an ISO-8601 time")
    return re.sub(r"; pass None to (\w+)", r"; leave the flag out to \1", message)


def hoist_global_options(group: click.Group, args: list[str]) -> list[str]:
    """Move ``--json``/``--db X``/``--store X``/``--read-only`` found after a subcommand in
    front of it (where the group parses them). In a command group (``stores list``,
    ``knowledge facts``, ``kg jobs status``) the path is followed down to the command that
    runs, and an option that command (or a group on the way) defines itself (``db status
    --json``, ``kg jobs list --json``) stays where it is. Anything after ``--`` is left alone."""
    args = list(args)
    i = _skip_options(group, args, 0)
    if i >= len(args):
        return args
    movable = dict(MOVABLE_OPTIONS)
    command: Optional[click.Command] = group.commands.get(args[i])
    if command is None and args[i] in LAZY_GROUPS:
        command = group.get_command(click.Context(group), args[i])
    j = i + 1
    while command is not None:
        for param in command.params:
            for opt in getattr(param, "opts", []):
                movable.pop(opt, None)
        if not isinstance(command, click.Group):
            break
        j = _skip_options(command, args, j)
        if j >= len(args):
            break
        command = command.commands.get(args[j])
        j += 1
    return move_before_subcommand(args, i, movable)


def refuse_repeated_options(group: click.Group, ctx: click.Context, args: list[str]) -> None:
    """A one-value option given twice on the way to the command that runs (``search tea
    --user alice --user bob``; ``--db a.db list --db b.db``) is a usage error: click keeps
    the last value silently, so a script that builds a command line could act on another
    user or file than the one it named first (new-user trial 31). Flags and repeatable
    options (``--types``) may repeat. A command line click cannot parse is left to the real
    parse, which reports it."""
    command: Optional[click.Command] = group
    sub_ctx = ctx
    rest = list(args)
    while command is not None:
        try:
            _, positional, order = command.make_parser(sub_ctx).parse_args(args=list(rest))
        except click.UsageError:
            return
        seen: set[str] = set()
        for param in order:
            if not isinstance(param, click.Option) or param.multiple or param.count or param.is_flag or not param.name:
                continue
            if param.name in seen:
                # every spelling: `-k 5 -k 6` is the same option as `--limit`, named by either
                flag = "/".join(param.opts)
                raise click.UsageError(f"{flag} is given more than once; it takes one value: give it once", sub_ctx)
            seen.add(param.name)
        if not isinstance(command, click.Group) or not positional:
            return
        name, rest = positional[0], positional[1:]
        sub_ctx = click.Context(command, info_name=name, parent=sub_ctx)
        try:
            command = command.get_command(sub_ctx, name)
        except Exception:  # an unknown or unloadable command: the real parse says so
            return
        if command is not None:
            sub_ctx = click.Context(command, info_name=name, parent=sub_ctx.parent)


def _skip_options(command: click.Command, args: list[str], i: int) -> int:
    """The index of the first argument at or after ``i`` that is not one of ``command``'s
    options (or an option's value)."""
    valued = {o for p in command.params if isinstance(p, click.Option) and not p.is_flag for o in p.opts}
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        name = args[i].split("=", 1)[0]
        i += 2 if name in valued and "=" not in args[i] else 1
    return i


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


def one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())


def show_warning(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None) -> None:
    click.echo(f"Warning: {message}", err=True)



def quiet_stdout() -> None:
    # Python flushes stdout again at exit; point it at /dev/null so that does not fail.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
