"""Option parsing and output shared by the commands: JSON options, aligned tables, ``--json``."""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any, Optional, Sequence

import click

from .. import jsonl
from ..types import NOT_SET, RECORD_TYPES, MessageRecord, Record

from .group import CLIError


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
    searchable = [t for t in RECORD_TYPES if t != "thread"]
    unknown = [t for t in out if t not in searchable]
    if unknown:  # said here: below the CLI it is "record_type", which reads as add's --type
        raise CLIError(f"unknown --types value {unknown[0]!r}; accepted types: {', '.join(searchable)}", 2)
    return out or None


# ----------------------------------------------------------------------------- output
record_to_dict = jsonl.record_to_dict


def shown_scope(record: Record) -> dict[str, Optional[str]]:
    """The scope a table shows for ``record``: a profile's is the actor it describes."""
    if record.record_type == "user_profile":
        return {"user_id": record.id, "agent_id": None, "thread_id": None}
    if record.record_type == "agent_profile":
        return {"user_id": None, "agent_id": record.id, "thread_id": None}
    return {"user_id": record.user_id, "agent_id": record.agent_id, "thread_id": record.thread_id}


def scope_text(record: Record) -> str:
    """``user=.. agent=.. thread=..``; a profile shows the actor it describes."""
    scope = shown_scope(record)
    parts = [f"{label}={scope[label + '_id']}" for label in ("user", "agent", "thread") if scope[label + "_id"] is not None]
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
    its whole text, on one line). Output that goes to a pipe or a file is never cut: there
    is no terminal width, and ``oramem list | grep WORD`` must see every word."""
    if not full and not _stdout_is_terminal():
        full = True
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


def _stdout_is_terminal() -> bool:
    stream: Any = sys.stdout  # what click.echo writes to (a test runner's capture included)
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed or detached stream
        return False


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
    return click.option("--full", is_flag=True, help="Show the whole content (default: cut to the terminal width; output to a pipe or a file is never cut).")(fn)



def scope_options(fn: Any) -> Any:
    """--thread/--user/--agent as filters (list, search)."""
    fn = click.option("--agent", "agent_id", help="Only records of this agent (its id).")(fn)
    fn = click.option("--user", "user_id", help="Only records of this user (her id).")(fn)
    fn = click.option("--thread", "thread_id", help="Only records of this thread (its id).")(fn)
    return fn


def record_scope_options(fn: Any) -> Any:
    """--thread/--user/--agent as the scope of the records written (add)."""
    fn = click.option("--agent", "agent_id", help="The agent the records belong to (its id).")(fn)
    fn = click.option("--user", "user_id", help="The user the records belong to (her id).")(fn)
    fn = click.option("--thread", "thread_id", help="The thread the records belong to (its id; created on first use).")(fn)
    return fn
