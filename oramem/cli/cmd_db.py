"""``oramem db …``: DBA commands for oramem in an Oracle schema (logic in
:mod:`oramem.oracle.admin`). The top-level ``oramem`` group adds this group with
``main.add_command(db)``.

Connection: ``--dsn`` / ``--user`` (or ``ORAMEM_DSN`` / ``ORAMEM_USER``); the password comes
from ``ORAMEM_PASSWORD``, from stdin with ``--password-stdin``, or from a hidden prompt.
Connect as the schema that owns oramem. Exit status: 0 ok, 1 a database/script problem
(or a doctor FAIL), 2 bad arguments.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

import click

from ..oracle import admin
from ..oracle_logon import dsn_credentials_problem, logon_failure
from .group import ask_password

__all__ = ["db", "connect"]


def connect(dsn: str, user: str, password: str) -> Any:
    """Open the (sync, thin-mode) connection the commands use; tests replace this."""
    import oracledb

    return oracledb.connect(user=user, password=password, dsn=dsn)


class _Settings:
    def __init__(self, dsn: Optional[str], user: Optional[str], password_stdin: bool) -> None:
        self.dsn, self.user, self.password_stdin = dsn, user, password_stdin
        self._conn: Any = None

    def connection(self) -> Any:
        if self._conn is not None:
            return self._conn
        if not self.dsn:
            raise click.UsageError("no database given: pass --dsn or set ORAMEM_DSN (e.g. localhost:1521/FREEPDB1)")
        if not self.user:
            raise click.UsageError("no user given: pass --user or set ORAMEM_USER")
        problem = dsn_credentials_problem(self.dsn)
        if problem:  # before a password is read or anything is sent (dba33 F1)
            raise click.UsageError(problem)
        import os

        if self.password_stdin:
            password = sys.stdin.readline().rstrip("\r\n")
            if not password:
                raise click.UsageError("--password-stdin read an empty first line: write the password of "
                                       f"{self.user} on the first line of stdin")
        elif os.environ.get("ORAMEM_PASSWORD") is not None:
            password = os.environ["ORAMEM_PASSWORD"]
        else:
            password = ask_password(f"password for {self.user}", f"no password for {self.user}: set ORAMEM_PASSWORD, "
                                    "or pass --password-stdin and write it on stdin")
        try:
            self._conn = connect(self.dsn, self.user, password)
        except Exception as e:  # oracledb.Error and friends: say what failed and what to do, no traceback
            raise click.ClickException(logon_failure(e, self.user, self.dsn, password)) from None
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None


def _fail(e: BaseException) -> click.ClickException:
    return click.ClickException(str(e))


class _DbGroup(click.Group):
    """``oramem db status --dsn X`` works like ``oramem db --dsn X status``: the group's
    connection options are moved in front of the subcommand (none of them is also a
    subcommand option)."""

    MOVABLE = {"--dsn": True, "--user": True, "--password-stdin": False}

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args = list(args)
        i = 0
        while i < len(args) and args[i].startswith("-") and args[i] != "--":
            name = args[i].split("=", 1)[0]
            i += 2 if self.MOVABLE.get(name) and "=" not in args[i] else 1
        if i < len(args) and args[i] in self.commands:
            from .group import move_before_subcommand

            args = move_before_subcommand(args, i, self.MOVABLE)
        return super().parse_args(ctx, args)


@click.group("db", cls=_DbGroup)
@click.option("--dsn", envvar="ORAMEM_DSN", help="Oracle DSN, e.g. localhost:1521/FREEPDB1 [env ORAMEM_DSN]")
@click.option("--user", envvar="ORAMEM_USER", help="schema that owns oramem [env ORAMEM_USER]")
@click.option("--password-stdin", is_flag=True, help="read the password from the first line of stdin "
                                                     "(else ORAMEM_PASSWORD, else a prompt)")
@click.pass_context
def db(ctx: click.Context, dsn: Optional[str], user: Optional[str], password_stdin: bool) -> None:
    """Install, upgrade, inspect and remove oramem's PL/SQL packages in an Oracle schema."""
    settings = _Settings(dsn, user, password_stdin)
    ctx.obj = settings
    ctx.call_on_close(settings.close)


def _run_scripts(settings: "_Settings", scripts_dir: Optional[str], action):
    """Locate the SQL scripts, connect, and run ``action(conn, root, echo=...)``; errors
    become one-line click errors. Returns ``(action's result, root)``."""
    try:
        root = admin.scripts_root(scripts_dir)
    except FileNotFoundError as e:
        raise _fail(e)
    conn = settings.connection()
    try:
        return action(conn, str(root), echo=click.echo), root
    except Exception as e:
        raise _fail(e)


_scripts = click.option("--scripts-dir", type=click.Path(file_okay=False), default=None,
                        help="directory holding plsql/ and ddl/ (default: ORAMEM_SQL_DIR, the source "
                             "checkout, or the installed package data)")


@db.command()
@_scripts
@click.option("--knowledge-store", "knowledge_stores", multiple=True, metavar="STORE_ID",
              help="also create the knowledge tables <STORE_ID>_KG_* of this store (repeatable; "
                   "needs --vector-dim)")
@click.option("--vector-dim", type=int, default=None, help="the stores' vector dimension, for --knowledge-store")
@click.pass_obj
def install(settings: _Settings, scripts_dir: Optional[str], knowledge_stores: tuple, vector_dim: Optional[int]) -> None:
    """Create oramem's tables and packages (idempotent; DDL commits), and with
    --knowledge-store the knowledge tables of those stores (KnowledgeMemory also creates
    them on first use with schema_policy=CREATE_IF_NECESSARY)."""
    if knowledge_stores and vector_dim is None:
        raise click.UsageError("--knowledge-store needs --vector-dim (the store's vector dimension)")
    if vector_dim is not None and not knowledge_stores:
        raise click.UsageError("--vector-dim is only used with --knowledge-store STORE_ID")
    from ..knowledge.db.install import install_oracle
    from ..knowledge.db.schema import oracle_ddl

    for sid in knowledge_stores:  # bad ids and dimensions are refused before anything runs
        try:
            if not 1 <= vector_dim <= 65535:  # type: ignore[operator]
                raise ValueError(f"--vector-dim must be in 1..65535, got {vector_dim}")
            oracle_ddl(sid, vector_dim)  # type: ignore[arg-type]
        except ValueError as e:
            raise click.UsageError(f"--knowledge-store {sid}: {e}")
    n, root = _run_scripts(settings, scripts_dir, admin.install)
    click.echo(f"oramem installed: {n} statements from {root}")
    for sid in knowledge_stores:
        try:
            k = install_oracle(settings.connection(), sid, vector_dim, echo=click.echo)  # type: ignore[arg-type]
        except Exception as e:
            raise _fail(e)
        click.echo(f"knowledge tables of {sid.upper()}: {k} statements")


@db.command()
@_scripts
@click.pass_obj
def upgrade(settings: _Settings, scripts_dir: Optional[str]) -> None:
    """Re-install the packages and upgrade every store to the code's schema version."""
    done, _ = _run_scripts(settings, scripts_dir, admin.upgrade)
    click.echo(f"oramem upgraded; stores upgraded: {', '.join(done) if done else 'none needed'}")


@db.command()
@click.option("--purge", is_flag=True, help="also drop every store and all its data")
@click.option("--yes", is_flag=True, help="do not ask for confirmation of --purge")
@_scripts
@click.pass_obj
def uninstall(settings: _Settings, purge: bool, yes: bool, scripts_dir: Optional[str]) -> None:
    """Remove oramem's packages and tables (refuses while stores exist unless --purge)."""
    try:
        root = admin.scripts_root(scripts_dir)
    except FileNotFoundError as e:
        raise _fail(e)
    if purge and not yes:
        if not sys.stdin.isatty():
            raise click.UsageError("--purge drops every store and its data: add --yes to confirm")
        click.confirm("Drop every oramem store and all its data?", abort=True)
    conn = settings.connection()
    try:
        admin.uninstall(conn, purge, str(root), echo=click.echo)
    except Exception as e:
        raise _fail(e)
    click.echo("oramem uninstalled")


@db.command()
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.pass_obj
def status(settings: _Settings, as_json: bool) -> None:
    """Show the installed packages, the database capabilities and the stores."""
    conn = settings.connection()
    try:
        st = admin.status(conn)
    except Exception as e:
        raise _fail(e)
    if as_json:
        click.echo(json.dumps(st, indent=2, sort_keys=True))
    else:
        click.echo("oramem: " + ("installed" if st["installed"] else "NOT installed"))
        for k in st["missing"]:
            click.echo(f"  missing  {k}")
        for k in st["invalid"]:
            click.echo(f"  INVALID  {k}")
        if st["capabilities"]:
            caps = st["capabilities"]
            click.echo("capabilities: " + ", ".join(f"{k}={v}" for k, v in sorted(caps.items())))
        if st["stores"]:
            click.echo(f"{'store':<17}{'state':<18}{'strategy':<10}{'dim':>6}  {'language':<9}schema")
            for s in st["stores"]:
                click.echo(f"{s.get('memory_store_id', '?'):<17}{str(s.get('state')):<18}"
                           f"{str(s.get('search_strategy')):<10}{str(s.get('vector_dim')):>6}  "
                           f"{str(s.get('keyword_language') or '-'):<9}"
                           f"{s.get('schema_version')}/{s.get('code_schema_version')}")
        elif st["installed"]:
            click.echo("no stores")
    if not st["installed"]:
        sys.exit(1)


@db.command()
@click.pass_obj
def doctor(settings: _Settings) -> None:
    """Check version, Oracle Text, vector memory, privileges and models; print fixes."""
    conn = settings.connection()
    checks = admin.doctor(conn)
    click.echo(admin.format_checks(checks))
    failed = [c for c in checks if c.label == "FAIL"]
    if failed:
        click.echo(f"{len(failed)} problem(s) to fix before oramem can run here", err=True)
        sys.exit(1)


@db.command()
@click.option("--model", default=None, metavar="NAME",
              help="in-database ONNX embedding model for every scratch store (needed for the HYBRID checks)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document instead of lines")
@click.pass_obj
def selftest(settings: _Settings, model: Optional[str], as_json: bool) -> None:
    """Run every oramem operation against scratch stores on this database and report
    PASS/FAIL/SKIP per check (with the ORA- code and the likely fix); the scratch stores
    are always dropped. Exit 1 when any check fails."""
    from . import selftest as st

    try:
        test = st.SelfTest(settings.connection(), model=model,
                           echo=None if as_json else (lambda r: click.echo(st.format_result(r))))
    except (TypeError, ValueError) as e:
        raise click.BadParameter(str(e), param_hint="--model")
    results = test.run()
    code = st.exit_code(results)
    counts = {s: sum(r.status == s for r in results) for s in ("PASS", "FAIL", "SKIP")}
    if as_json:
        click.echo(json.dumps({"ok": code == 0, "store_ids": [test.store_id(s) for s in st.STRATEGIES] + [test.passage_store_id],
                               "counts": counts, "checks": [r.to_dict() for r in results]}, indent=2))
    else:
        click.echo(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    if code:
        sys.exit(code)


@db.command("load-model")
@click.argument("file", type=click.Path(dir_okay=True, path_type=str))
@click.option("--name", required=True, metavar="NAME",
              help="model name in the database, [schema.]name (e.g. ALL_MINILM_L12_V2)")
@click.option("--metadata", default=None, metavar="JSON",
              help='model metadata JSON (default: {"function": "embedding", "embeddingOutput": "embedding", '
                   '"input": {"input": ["DATA"]}})')
@click.option("--replace", is_flag=True, help="drop an existing model of that name first")
@click.pass_obj
def load_model(settings: _Settings, file: str, name: str, metadata: Optional[str], replace: bool) -> None:
    """Load an ONNX embedding model FILE with DBMS_VECTOR.LOAD_ONNX_MODEL (needs CREATE MINING
    MODEL); prints its dimension. Use it with OracleDBEmbedder(pool, NAME) or `selftest --model`."""
    from ..oracle import models

    try:  # everything about the arguments is checked before connecting
        models.check_model_name(name)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--name")
    try:
        models.parse_metadata(metadata)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--metadata")
    try:
        models.check_model_file(file)
    except (FileNotFoundError, ValueError) as e:
        raise click.BadParameter(str(e), param_hint="FILE")
    conn = settings.connection()
    try:
        dim = models.load_model(conn, file, name, metadata=metadata, replace=replace, echo=click.echo)
    except Exception as e:
        raise _fail(e)
    click.echo(f"model {models.check_model_name(name)} loaded" + (f": {dim}-d embeddings" if dim else ""))
