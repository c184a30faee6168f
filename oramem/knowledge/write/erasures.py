"""A write in flight during its scope's erasure stores nothing (KC-3.10, SC-14.3).

A knowledge write reads, awaits the model, then commits in a second transaction. When its
user (or its agent) is erased by ``forget`` in between, the rows it commits would be hers
after her erasure: the receipt says clean, then her event and facts are back. A write whose
call started before her erasure committed is erased data, not new data.

How: ``forget``, and a profile's cascade (SC-8.2, red25), writes a tombstone in the erasure
log in its own transaction (SC-14.3: the store's ``oramem_erasure_log``, one row per receipt
with the subject's salted hash, on SQLite and Oracle). Before the write reads, :func:`note` keeps the receipt ids the log holds for
the write's subjects (``("user", U)`` when the write has a user, and ``("agent", A)``); its
commit transaction (:func:`check`) looks again and raises :class:`ConflictError`, before any
row or store record is written, when a receipt of those subjects appeared since. A write
that starts after the erasure committed sees its receipt in :func:`note` and is stored
normally (new data).

The catalog tables are read with SQL on the knowledge connection: SQLite ``store_id``,
Oracle ``memory_store_id`` (``ddl/upgrades/002_to_003.sql``, ``003_to_004.sql``). Happy
path of the commit: one lookup in the log by (store id, subject hashes) (on SQLite through
the index ``oramem_erasure_log_subject``, created with the log, plus the catalog check that
the table exists; on Oracle through ``ORAMEM_ERASURE_LOG_SUBJECT``, catalog upgrade
``004_to_005.sql``); before the store's first erasure (no salt yet) one
lookup of the salt option by its primary key. On SQLite writers are serialised, so a
commit either precedes the erasure (which then deletes its rows) or sees its tombstone.
On Oracle (read committed) the erasure's tombstone is visible only once it committed, so the
two sides take one lock: the erasure's first statement is ``LOCK TABLE <ID>_KG_AGENT IN
EXCLUSIVE MODE`` (``deletes.OracleEraser.lock``), and this commit runs after its agent's row
of that table is locked (``OracleAccess.write``). A commit in flight when the erasure starts
ends before the erasure reads and deletes (its rows are erased); a later one waits for the
erasure to commit and then sees its tombstone here (plsql/VERIFY.md, "One lock order for an
erasure and the writes it races"). Oracle: SQLAlchemy-generated SQL, static-checked, not run
against Oracle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import sqlalchemy as sa

from ...trust.erasure import SALT_OPTION, subject_hash
from ..errors import ConflictError

if TYPE_CHECKING:
    from ..runtime import KnowledgeRuntime
    from .state import WriteRun

__all__ = ["ErasureMark", "note", "check", "note_async", "mark_async", "check_run"]

LOG_TABLE = "oramem_erasure_log"
OPTIONS_TABLE = "oramem_store_options"


@dataclass(frozen=True)
class ErasureMark:
    """What :func:`note` saw before the write read: its subjects, the store's erasure salt
    (None before the store's first erasure) and the receipt ids of the subjects' erasures."""

    subjects: tuple[tuple[str, str], ...]
    salt: Optional[str]
    seen: frozenset[str]


def _store_column(dialect: str) -> str:
    return "memory_store_id" if dialect == "oracle" else "store_id"


def _catalog(conn: sa.Connection, dialect: str) -> set[str]:
    """Which of the two catalog tables exist (SQLite creates them at their first write;
    the Oracle catalog DDL creates both)."""
    if dialect != "sqlite":
        return {LOG_TABLE, OPTIONS_TABLE}
    rows = conn.execute(sa.text("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (:log, :options)"),
                        {"log": LOG_TABLE, "options": OPTIONS_TABLE}).scalars()
    return {str(name) for name in rows}


def _catalog_tables(column: str) -> tuple[sa.TableClause, sa.TableClause]:
    options = sa.table(OPTIONS_TABLE, sa.column(column), sa.column("name"), sa.column("value", sa.Text()))
    log = sa.table(LOG_TABLE, sa.column(column), sa.column("receipt_id"), sa.column("subject_hash"))
    return options, log


#: the two catalog tables per engine (built once, so SQLAlchemy's statement cache serves them)
_TABLES = {"sqlite": _catalog_tables("store_id"), "oracle": _catalog_tables("memory_store_id")}


def salt_query(dialect: str, store_id: str) -> sa.Select[Any]:
    options, _ = _TABLES["oracle" if dialect == "oracle" else "sqlite"]
    column = options.c[_store_column(dialect)]
    return sa.select(options.c.value).where(column == store_id, options.c.name == SALT_OPTION)


def receipts_query(dialect: str, store_id: str, hashes: list[str]) -> sa.Select[Any]:
    _, log = _TABLES["oracle" if dialect == "oracle" else "sqlite"]
    column = log.c[_store_column(dialect)]
    return sa.select(log.c.receipt_id, log.c.subject_hash).where(column == store_id, log.c.subject_hash.in_(hashes))


def _salt(conn: sa.Connection, dialect: str, store_id: str, catalog: set[str]) -> Optional[str]:
    if OPTIONS_TABLE not in catalog:
        return None
    text: Any = conn.execute(salt_query(dialect, store_id)).scalar()
    if hasattr(text, "read"):  # an Oracle CLOB fetched as a LOB (SQLAlchemy converts it by default)
        text = text.read()
    value = json.loads(text) if isinstance(text, str) else None
    return value if isinstance(value, str) else None


def _receipts(conn: sa.Connection, dialect: str, store_id: str, salt: str, subjects: tuple[tuple[str, str], ...],
              catalog: set[str]) -> dict[str, tuple[str, str]]:
    """``{receipt id: the subject it erased}`` for the subjects' receipts in the log."""
    if LOG_TABLE not in catalog:
        return {}
    by_hash = {subject_hash(salt, kind, sid): (kind, sid) for kind, sid in subjects}
    rows = conn.execute(receipts_query(dialect, store_id, sorted(by_hash))).all()
    return {str(rid): by_hash[str(h)] for rid, h in rows if str(h) in by_hash}


def note(conn: sa.Connection, dialect: str, store_id: str, agent_id: str, user_id: Optional[str]) -> ErasureMark:
    """Before the write reads or calls the model: the erasures of its user and agent so far."""
    subjects = ((("user", user_id),) if user_id is not None else ()) + (("agent", agent_id),)
    catalog = _catalog(conn, dialect)
    salt = _salt(conn, dialect, store_id, catalog)
    seen = frozenset(_receipts(conn, dialect, store_id, salt, subjects, catalog)) if salt is not None else frozenset()
    return ErasureMark(subjects, salt, seen)


def check(conn: sa.Connection, dialect: str, store_id: str, mark: ErasureMark) -> None:
    """In the write's commit transaction, before anything is written: :class:`ConflictError`
    when an erasure of the write's user or agent committed since :func:`note`."""
    catalog = _catalog(conn, dialect)
    salt = mark.salt if mark.salt is not None else _salt(conn, dialect, store_id, catalog)
    if salt is None:
        return  # no erasure in this store yet
    erased = {subject for rid, subject in _receipts(conn, dialect, store_id, salt, mark.subjects, catalog).items()
              if rid not in mark.seen}
    if not erased:
        return
    who = " and ".join(f"{kind} {sid!r}" for kind, sid in mark.subjects if (kind, sid) in erased)
    raise ConflictError(
        f"the {who} of this write was erased (forget, or the cascade of its profile) while it ran: what it would store is erased data, so it "
        "was withheld and nothing was stored. A write made after the erasure is stored as new data: call it again "
        "only if the message should be kept")


async def note_async(rt: KnowledgeRuntime, agent_id: str, user_id: Optional[str]) -> ErasureMark:
    """:func:`note` in a read of its own (``write`` takes it when the call starts)."""
    dialect, store_id = rt.backend.dialect_name, rt.tables.store_id
    return await rt.read(lambda conn: note(conn, dialect, store_id, agent_id, user_id))


async def mark_async(run: WriteRun) -> None:
    """Take the run's :class:`ErasureMark`, unless it has one (taken when the call started)
    or is a dry run (it commits nothing)."""
    if run.erasure_mark is None and not run.dry_run:
        run.erasure_mark = await note_async(run.rt, run.agent_id, run.user_id)


def check_run(run: WriteRun, conn: sa.Connection) -> None:
    """:func:`check` for the run in its commit transaction."""
    if run.erasure_mark is not None:
        check(conn, run.backend.dialect_name, run.t.store_id, run.erasure_mark)
