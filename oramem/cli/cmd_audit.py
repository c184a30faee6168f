"""The ``audit`` group (SC-16): the retrieval audit (enable, disable, status, list, export) and
the self-check (``oramem audit check``, also ``oramem audit --check``)."""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

import click

from ..errors import CapabilityError
from ..trust import audit as audit_mod

from .app import cli
from .group import CLIError, in_cli_words
from .output import emit_json, render_table
from .state import State, pass_state


@cli.group(short_help="Retrieval audit (which memories went into which answer) and memory self-checks.",
           invoke_without_command=True)
@click.option("--check", "check_flag", is_flag=True, help="Run the self-check (same as `oramem audit check`).")
@click.pass_context
def audit(ctx: click.Context, check_flag: bool) -> None:
    """The retrieval audit: when enabled, every search and knowledge retrieve records a
    request id, the time, the caller's scope, a keyed hash of the query (never its text) and
    the ids served (facts with their valid/known times). `check` runs self-tests on this
    database: leaks between users, stale records, superseded facts still current, erasure
    receipts; exit status 1 on a failure."""
    if check_flag:
        if ctx.invoked_subcommand is not None:
            raise CLIError("give either --check or a subcommand, not both", 2)
        ctx.invoke(audit_check)
    elif ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _describe(settings: audit_mod.AuditSettings) -> dict[str, Any]:
    return settings.to_json()


def _print_settings(settings: audit_mod.AuditSettings) -> None:
    if not settings.enabled:
        kept = "" if settings.ttl_days is None else f"; entries written are kept {settings.ttl_days} days"
        click.echo(f"retrieval audit: off (`oramem audit enable` turns it on){kept}")
        return
    keep = "until forget" if settings.ttl_days is None else f"{settings.ttl_days} days"
    click.echo(f"retrieval audit: on (entries kept {keep})")


def _show(state: State, settings: audit_mod.AuditSettings) -> None:
    if state.json:
        emit_json(_describe(settings))
    else:
        _print_settings(settings)


def _set(store: Any, enabled: bool, ttl_days: Optional[int]) -> audit_mod.AuditSettings:
    try:
        return audit_mod.set_audit(store, enabled, ttl_days=ttl_days)
    except CapabilityError as exc:
        raise CLIError(str(exc), 1) from None
    except ValueError as exc:
        raise CLIError(str(exc).replace("ttl_days", "--ttl-days"), 2) from None


@audit.command(name="enable")
@click.option("--ttl-days", type=int, default=None, help="Delete entries older than this many days (when `oramem purge` runs); default: keep until forget.")
@pass_state
def audit_enable(state: State, ttl_days: Optional[int]) -> None:
    """Turn the retrieval audit on for this store."""
    settings = _set(state.open(create=True), True, ttl_days)
    _show(state, settings)


@audit.command(name="disable")
@click.option("--ttl-days", type=int, default=None, help="Retention of the entries already written (default: the TTL set on enable).")
@pass_state
def audit_disable(state: State, ttl_days: Optional[int]) -> None:
    """Turn the retrieval audit off (entries already written stay until their TTL, forget or drop)."""
    settings = _set(state.open(create=False), False, ttl_days)
    _show(state, settings)


@audit.command(name="status")
@pass_state
def audit_status(state: State) -> None:
    """Show whether the retrieval audit is on, and its TTL."""
    settings = audit_mod.audit_settings(state.open(create=False, reading=True))
    _show(state, settings)


def _filters(fn: Any) -> Any:
    for option in reversed([
        click.option("--request-id", help="Only this request."),
        click.option("--user", "user_id", help="Only requests made in this user's scope."),
        click.option("--agent", "agent_id", help="Only requests made in this agent's scope."),
        click.option("--since", help="From this time (ISO-8601, inclusive)."),
        click.option("--until", help="Before this time (ISO-8601, exclusive)."),
        click.option("--query", help="Only requests with exactly this query (matched by its keyed hash)."),
        click.option("--limit", type=int, default=None, help="At most this many entries (oldest first)."),
    ]):
        fn = option(fn)
    return fn


#: the filters' Python names -> their flags
_FILTER_FLAGS = {"request_id": "--request-id", "user_id": "--user", "agent_id": "--agent", "since": "--since",
                 "until": "--until", "query": "--query", "limit": "--limit"}


def _find(state: State, **filters: Any) -> list[audit_mod.AuditEntry]:
    for name, value in filters.items():  # an empty id or query matches nothing: refused, not "no entries"
        if isinstance(value, str) and not value.strip() and name in ("request_id", "user_id", "agent_id", "query"):
            raise CLIError(f"{_FILTER_FLAGS[name]} is empty; give a value or leave the flag out", 2)
    store = state.open(create=False, reading=True)
    try:
        return audit_mod.find(store, **filters)
    except CapabilityError as exc:
        raise CLIError(str(exc), 1) from None
    except ValueError as exc:  # in the filters' flags (``since must be ...`` -> ``--since must be ...``)
        raise CLIError(in_cli_words(str(exc), _FILTER_FLAGS), 2) from None


@audit.command(name="list")
@_filters
@pass_state
def audit_list(state: State, **filters: Any) -> None:
    """List audit entries (oldest first)."""
    entries = _find(state, **filters)
    if state.json:
        emit_json([e.to_json() for e in entries])
        return
    if not entries:
        click.echo("no audit entries")
        return
    rows = [[e.at[:19], e.request_id, e.surface, e.user_id or "-", e.agent_id or "-",
             ", ".join(f"{s.get('type')}:{s.get('id')}" for s in e.served) or "-"] for e in entries]
    click.echo(render_table(["time", "request", "surface", "user", "agent", "served"], rows, flex=5))


@audit.command(name="export")
@_filters
@click.option("--out", "out", type=click.Path(dir_okay=False, writable=True), help="Write to this file (default: stdout).")
@pass_state
def audit_export(state: State, out: Optional[str], **filters: Any) -> None:
    """Export audit entries as JSON lines (one entry a line)."""
    entries = _find(state, **filters)
    lines = "".join(json.dumps(e.to_json(), sort_keys=True) + "\n" for e in entries)
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(lines)
        click.echo(f"exported {len(entries)} audit entries to {out}", err=True)
    else:
        sys.stdout.write(lines)


@audit.command(name="check")
@pass_state
def audit_check(state: State) -> None:
    """Self-tests on this database (read-only): cross-user probes on every read surface,
    records past their TTL still returned, audit entries past the audit TTL, superseded facts
    still current, erasure receipts re-verified. Exit status 1 when a check fails."""
    from ..trust.selfcheck import self_check

    store = state.open(create=False, reading=True)
    try:
        report = self_check(store)
    except CapabilityError as exc:
        raise CLIError(str(exc), 1) from None
    if state.json:
        emit_json(report.to_json())
    else:
        for check in report.checks:
            mark = "ok  " if check.ok else "FAIL"
            note = f" ({check.note})" if check.note else ""
            click.echo(f"{mark} {check.name}: {check.checked} checked{note}")
            for problem in check.problems:
                click.echo(f"     - {problem}")
        click.echo("self-check passed" if report.ok else f"self-check FAILED: {len(report.failures)} check(s)")
    if not report.ok:
        raise SystemExit(1)
