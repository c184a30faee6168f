"""Retrieval audit (issue 27 item 2, SC-16.1 to SC-16.7): which memories went into which answer.

Opt-in per store (the store option ``"audit"`` = ``{"enabled": true, "ttl_days": N}``): every
store ``search`` (sync and async, every strategy; the MCP server and the framework adapters go
through it) and every knowledge ``retrieve`` writes one entry: a request id, the time, the
caller scope as passed (user / agent / thread), a keyed hash of the query, and what was served
(records: type, id, score; knowledge facts: fact id with its valid and known times, which pin
the fact's version).

Decisions (SC-16):
- the query TEXT is not kept: the audit is personal data and a query often names a person; the
  entry keeps ``HMAC-SHA256(store salt, normalised query)`` — whoever can read the store can
  ask "was this exact query asked" (``find(..., query=)``), nobody can read queries back;
- the caller learns the request id from :func:`last_request_id` (a context variable: per thread
  and per asyncio task, so concurrent callers never see each other's id) after a store search
  or an async retrieve; a knowledge ``retrieve`` also returns it as
  ``RetrieveResult.audit_request_id`` (the sync twin runs on the layer's own loop thread);
- the entry is written after the read, in its own transaction; if it cannot be written (a store
  opened read-only, a full disk) the search fails: an audit that silently skips is no audit;
- the store searches that the knowledge layer runs for itself (a retrieve's candidates, the write
  pipeline's duplicates check) are not entries of their own: the retrieve's entry names the
  facts it served;
- entries older than ``ttl_days`` are deleted by ``purge_expired`` (and :func:`purge`);
  ``forget(user_id=U)`` deletes U's entries in the erasure's own transaction; dropping the store
  drops its entries;
- nothing of an erased subject is written after the erasure: a search or retrieve of U's (or
  agent A's) scope notes, before it reads, which erasures of U and A the erasure log holds
  (:func:`guard`); its entry's transaction looks again, and when an erasure of U or A committed
  in between (its tombstone is in the log) the entry is not written and the read fails with
  ``StoreError`` (its results were read before her erasure; the caller searches again); a
  store search naming a thread does the same when an erasure removed that thread whole
  meanwhile (red30: an agent-wide read of her private thread names neither her nor the
  agent). SQLite
  serialises the two writes, so either the erasure deletes an entry committed before it, or
  the entry's check sees the erasure's tombstone.
SQLite only: enabling the audit on another engine raises ``CapabilityError`` (not done on Oracle).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator, Optional, Sequence

from ..errors import StoreError
from ..sqlite._sqlite import sqlite3
from ..sqlite.audit import AUDIT_DDL, AUDIT_TABLE, audit_exists as _exists, drop_entries, receipt_count, thread_open, tombstones

__all__ = [
    "AUDIT_OPTION", "AuditEntry", "AuditSettings", "audit_settings", "set_audit", "set_audit_async",
    "last_request_id", "find", "find_async", "purge", "query_hash", "drop_entries",
]

AUDIT_OPTION = "audit"
_MAX_TTL_DAYS = 36500

_LAST: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("oramem_audit_request_id", default=None)
_INTERNAL: contextvars.ContextVar[bool] = contextvars.ContextVar("oramem_audit_internal", default=False)


@dataclass(frozen=True)
class AuditSettings:
    enabled: bool = False
    ttl_days: Optional[int] = None  # None: entries are kept until forget / drop

    def to_json(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "ttl_days": self.ttl_days}


@dataclass(frozen=True)
class AuditEntry:
    request_id: str
    at: str
    surface: str  # "search" | "retrieve"
    user_id: Optional[str]
    agent_id: Optional[str]
    thread_id: Optional[str]
    query_hash: Optional[str]
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def served(self) -> list[dict[str, Any]]:
        return list(self.detail.get("served", []))

    def to_json(self) -> dict[str, Any]:
        return {"request_id": self.request_id, "at": self.at, "surface": self.surface, "user_id": self.user_id,
                "agent_id": self.agent_id, "thread_id": self.thread_id, "query_hash": self.query_hash, **self.detail}


# ---------------------------------------------------------------------------- settings
def _check_ttl(ttl_days: Any) -> Optional[int]:
    if ttl_days is None:
        return None
    if isinstance(ttl_days, bool) or not isinstance(ttl_days, int) or not 1 <= ttl_days <= _MAX_TTL_DAYS:
        raise ValueError(f"audit ttl_days must be a whole number of days from 1 to {_MAX_TTL_DAYS}, or None "
                         f"(keep entries until forget), got {ttl_days!r}")
    return ttl_days


def settings_of(value: Any) -> AuditSettings:
    if not isinstance(value, dict):
        return AuditSettings()
    ttl = value.get("ttl_days")  # kept when the audit is turned off: the entries written keep their retention
    return AuditSettings(bool(value.get("enabled")), ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0 else None)


def audit_settings(store: Any) -> AuditSettings:
    """The store's audit settings (off unless enabled)."""
    return settings_of(store.get_option(AUDIT_OPTION))


def _is_sqlite(store: Any) -> bool:
    from ..sqlite.engine import SQLiteEngine

    return isinstance(getattr(store, "_engine", None), SQLiteEngine)


def wanted(store: Any) -> bool:
    """Is the audit option set? On SQLite the store's options are read (once per store object);
    on another engine (where it cannot be enabled, SC-16.7) only options already read count, so
    its reads make no extra round trip; a set option there makes the read raise."""
    if _is_sqlite(store):
        return bool(store._loaded_options().get(AUDIT_OPTION))
    return bool((getattr(store, "_options", None) or {}).get(AUDIT_OPTION))


async def wanted_async(store: Any) -> bool:
    """Async twin of :func:`wanted`."""
    if _is_sqlite(store):
        return bool((await store._loaded_options_async()).get(AUDIT_OPTION))
    return bool((getattr(store, "_options", None) or {}).get(AUDIT_OPTION))


def _engine(store: Any) -> Any:
    from ..sqlite.engine import SQLiteEngine

    engine = getattr(store, "_engine", None)
    if not isinstance(engine, SQLiteEngine):
        from ..errors import CapabilityError

        raise CapabilityError(
            f"the retrieval audit is not supported by the {type(engine).__name__} (SQLite only; "
            "not done on Oracle yet)")
    return engine


async def _off_loop(store: Any, fn: Any, *args: Any) -> Any:
    """``fn(*args)`` off the event loop where the store's engine runs its sync work: inside
    ``async with store.transaction_async()`` on the block's worker (SC-12), as the sync twins
    run on the block's thread; a plain ``asyncio.to_thread`` was refused there as "another
    thread" (red28). As ``erasure.verify_receipts_async`` does."""
    return await store.engine._off_loop(fn, *args)


def set_audit(store: Any, enabled: bool = True, *, ttl_days: Optional[int] = None) -> AuditSettings:
    """Turn the store's retrieval audit on (``enabled=True``; ``ttl_days``: entries older than
    that are deleted by ``purge_expired``) or off (entries already written are kept until their
    TTL, ``forget`` or the store's drop)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool, got {enabled!r}")
    ttl = _check_ttl(ttl_days)
    if enabled:
        _engine(store)
    if not enabled and ttl is None:  # turning it off keeps the retention of the entries already written
        ttl = audit_settings(store).ttl_days
    settings = AuditSettings(enabled, ttl)
    store.set_option(AUDIT_OPTION, settings.to_json() if enabled or ttl else None)
    if enabled:
        _salt(store)  # the query-hash key exists before the first (possibly read-only) search
    return settings


async def set_audit_async(store: Any, enabled: bool = True, *, ttl_days: Optional[int] = None) -> AuditSettings:
    """Async twin of :func:`set_audit`."""
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool, got {enabled!r}")
    ttl = _check_ttl(ttl_days)
    if enabled:
        _engine(store)
    if not enabled and ttl is None:
        ttl = settings_of(await store.get_option_async(AUDIT_OPTION)).ttl_days
    settings = AuditSettings(enabled, ttl)
    await store.set_option_async(AUDIT_OPTION, settings.to_json() if enabled or ttl else None)
    if enabled:
        await _off_loop(store, _salt, store)
    return settings


def last_request_id() -> Optional[str]:
    """The request id of the last audited read in this thread / asyncio task (None before any,
    or when the store's audit is off)."""
    return _LAST.get()


@contextlib.contextmanager
def internal() -> Iterator[None]:
    """Store searches run inside are the caller's own plumbing (not entries of their own)."""
    token = _INTERNAL.set(True)
    try:
        yield
    finally:
        _INTERNAL.reset(token)


# ---------------------------------------------------------------------------- hashing
def _normalise(query: str) -> str:
    return " ".join(query.casefold().split())


def _salt(store: Any) -> str:
    from .erasure import SALT_OPTION, _SQLiteOps

    salt = store.get_option(SALT_OPTION)
    if not isinstance(salt, str):
        salt = _SQLiteOps(_engine(store)).ensure_salt()
        store._options = None  # the salt was written behind the store's option cache
    return salt


def query_hash(store: Any, query: Optional[str]) -> Optional[str]:
    """The keyed hash an entry keeps of ``query`` (None for a vector-only query)."""
    if query is None:
        return None
    key = _salt(store).encode("utf-8")
    return hmac.new(key, _normalise(query).encode("utf-8"), hashlib.sha256).hexdigest()


# ---------------------------------------------------------------------------- writing
def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _iso(value: Any) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        result: Optional[str] = value.astimezone(timezone.utc).isoformat(timespec="microseconds")
        return result
    return str(value)


def begin() -> str:
    """A new request id, made visible to the caller (:func:`last_request_id`)."""
    rid = uuid.uuid4().hex
    _LAST.set(rid)
    return rid


@dataclass(frozen=True)
class ReadGuard:
    """Taken before an audited read (:func:`guard`): whether the audit is on, the erasure
    subjects of the read's scope (``("user", U)``, ``("agent", A)``) and the receipt ids of
    their erasures the log held then; for a read naming a thread (or session), the thread,
    whether its row was there and how many erasures the log held (an erasure of the thread's
    private owner removes it whole and takes its entries, whoever read it: red30)."""

    enabled: bool
    subjects: tuple[tuple[str, str], ...] = ()
    seen: frozenset[str] = frozenset()
    thread: Optional[str] = None
    thread_was_open: bool = False
    receipts: int = 0


def _subject_erasures(conn: sqlite3.Connection, store_id: str, subjects: Sequence[tuple[str, str]]) -> set[str]:
    from ..sqlite.options import read_options
    from .erasure import SALT_OPTION, subject_hash

    salt = read_options(conn, store_id).get(SALT_OPTION)  # the erasures' salt (SC-14.1), read in this transaction
    if not subjects or not isinstance(salt, str):
        return set()
    return tombstones(conn, store_id, [subject_hash(salt, kind, sid) for kind, sid in subjects])


def _guard(store: Any, user_id: Optional[str], agent_id: Optional[str], thread_id: Optional[str] = None) -> ReadGuard:
    if _INTERNAL.get() or not audit_settings(store).enabled:
        return ReadGuard(False)
    subjects = tuple((kind, sid) for kind, sid in (("user", user_id), ("agent", agent_id)) if sid is not None)
    if not subjects and thread_id is None:
        return ReadGuard(True)
    with _engine(store)._read("audit") as (conn, tables, _):
        seen = frozenset(_subject_erasures(conn, tables.store_id, subjects))
        if thread_id is None:
            return ReadGuard(True, subjects, seen)
        return ReadGuard(True, subjects, seen, thread_id, thread_open(conn, tables.records, thread_id),
                         receipt_count(conn, tables.store_id))


def guard(store: Any, request: Any) -> ReadGuard:
    """Before a store search (SC-16.6): see :class:`ReadGuard`."""
    return _guard(store, _scope_value(request.user), _scope_value(request.agent), _scope_value(request.thread))


def _write(store: Any, entry: AuditEntry, guard: Optional[ReadGuard] = None) -> None:
    engine = _engine(store)
    qhash = entry.query_hash
    with engine._write("the retrieval audit (on for this store, SC-16.4)") as tx:
        if guard is not None and guard.subjects:
            erased = _subject_erasures(tx.conn, tx.tables.store_id, guard.subjects) - guard.seen
            if erased:
                # SC-16.6: the read's scope was erased while it ran; its entry would bring the
                # subject's id back into the store after the erasure, and its results are what
                # was read before it
                raise StoreError(
                    "the user or agent this read was scoped to was erased (forget) while it ran: its results are "
                    "withheld and no audit entry was written; run it again")
        if (guard is not None and guard.thread is not None and guard.thread_was_open
                and receipt_count(tx.conn, tx.tables.store_id) > guard.receipts
                and not thread_open(tx.conn, tx.tables.records, guard.thread)):
            # SC-16.6: an erasure removed the read's thread whole (its owner's private
            # conversation) while the read ran and took the thread's entries; this one would
            # name her thread and her records after it (red30)
            raise StoreError(
                "the thread this read was scoped to was removed by an erasure (forget) while it ran: its results are "
                "withheld and no audit entry was written; run it again")
        for ddl in AUDIT_DDL:
            tx.conn.execute(ddl)
        tx.conn.execute(
            f"INSERT INTO {AUDIT_TABLE} (store_id, request_id, at, surface, user_id, agent_id, thread_id, query_hash, detail) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (tx.tables.store_id, entry.request_id, entry.at, entry.surface, entry.user_id, entry.agent_id,
             entry.thread_id, qhash, json.dumps(entry.detail, sort_keys=True)),
        )


def _scope_value(scope: Any) -> Optional[str]:
    return getattr(scope, "value", None)


def _search_entry(store: Any, rid: str, request: Any, query: Optional[str], results: Sequence[tuple[Any, float]]) -> AuditEntry:
    served = [{"type": r.record_type, "id": r.id, "score": round(float(s), 6)} for r, s in results]
    detail = {"strategy": request.strategy.value, "k": request.k, "served": served,
              "scope_match": {"user": request.user.match.value, "agent": request.agent.match.value,
                              "thread": request.thread.match.value}}
    return AuditEntry(rid, _now(), "search", _scope_value(request.user), _scope_value(request.agent),
                      _scope_value(request.thread), query_hash(store, query), detail)


def after_search(store: Any, request: Any, query: Optional[str], results: list[tuple[Any, float]],
                 guard: ReadGuard) -> list[tuple[Any, float]]:
    """Store hook (SC-16.1): called after a sync search when the store's audit option is set,
    with the :func:`guard` taken before the search read."""
    if _INTERNAL.get() or not guard.enabled:
        return results
    rid = begin()
    _write(store, _search_entry(store, rid, request, query, results), guard)
    return results


async def after_search_async(store: Any, request: Any, query: Optional[str], results: list[tuple[Any, float]],
                             guard: ReadGuard) -> list[tuple[Any, float]]:
    """Async twin of :func:`after_search` (the write runs on a worker thread)."""
    if _INTERNAL.get() or not guard.enabled:
        return results
    rid = begin()
    entry = await _off_loop(store, _search_entry, store, rid, request, query, results)
    await _off_loop(store, _write, store, entry, guard)
    return results


def _fact_times(km: Any, ids: list[str]) -> dict[str, dict[str, Optional[str]]]:
    if not ids:
        return {}
    f = km.runtime.tables.fact
    out: dict[str, dict[str, Optional[str]]] = {}
    with km.runtime.backend.read() as conn:
        for start in range(0, len(ids), 500):
            rows = conn.execute(
                f.select().with_only_columns(f.c.id, f.c.valid_from, f.c.valid_to, f.c.ingested_at, f.c.invalidated_at)
                .where(f.c.id.in_(ids[start:start + 500]))
            ).mappings().all()
            for row in rows:
                out[row["id"]] = {"valid_from": _iso(row["valid_from"]), "valid_to": _iso(row["valid_to"]),
                                  "known_from": _iso(row["ingested_at"]), "known_to": _iso(row["invalidated_at"])}
    return out


def _retrieve_entry(km: Any, rid: str, agent_id: str, user_id: Optional[str], session_id: Optional[str], query: str,
                    as_of: Any, known_at: Any, result: Any) -> AuditEntry:
    store = km._store
    ids = [f.fact_id for f in result.facts]
    times = _fact_times(km, ids)
    served = [{"type": "fact", "id": f.fact_id, "user_id": f.user_id, "score": round(float(f.score), 6),
               **times.get(f.fact_id, {})} for f in result.facts]
    served += [{"type": "event", "id": e.get("event_id") or e.get("id")} for e in result.events
               if isinstance(e, dict) and (e.get("event_id") or e.get("id"))]
    detail = {"as_of": _iso(as_of), "known_at": _iso(known_at), "served": served}
    return AuditEntry(rid, _now(), "retrieve", user_id, agent_id, session_id, query_hash(store, query), detail)


async def guard_retrieve_async(km: Any, agent_id: str, user_id: Optional[str],
                               session_id: Optional[str] = None) -> ReadGuard:
    """Before a knowledge ``retrieve`` reads (SC-16.6): see :class:`ReadGuard`."""
    store = km._store
    if _INTERNAL.get() or not settings_of(await km.runtime.in_thread(store.get_option, AUDIT_OPTION)).enabled:
        return ReadGuard(False)
    result: ReadGuard = await km.runtime.in_thread(_guard, store, user_id, agent_id, session_id)
    return result


async def after_retrieve_async(km: Any, agent_id: str, user_id: Optional[str], session_id: Optional[str], query: str,
                               as_of: Any, known_at: Any, result: Any, guard: ReadGuard) -> Optional[str]:
    """Knowledge hook (SC-16.2): one entry per ``retrieve`` with the facts served and their
    times; returns its request id (also ``RetrieveResult.audit_request_id``: the sync twin runs
    on another thread, where :func:`last_request_id` does not reach the caller). ``guard``:
    :func:`guard_retrieve_async`, taken before the retrieve read."""
    store = km._store
    if _INTERNAL.get() or not guard.enabled:
        return None
    rid = begin()
    entry = await km.runtime.in_thread(_retrieve_entry, km, rid, agent_id, user_id, session_id, query, as_of, known_at, result)
    await km.runtime.in_thread(_write, store, entry, guard)
    return rid


# ---------------------------------------------------------------------------- reading, retention, erasure
def _bound(value: Any, name: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{name} must be an ISO-8601 time, e.g. 2026-12-05T10:00:00+00:00, got {value!r}") from None
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime or an ISO-8601 string, got {type(value).__name__}")
    return _iso(value)


def find(store: Any, *, request_id: Optional[str] = None, user_id: Optional[str] = None, agent_id: Optional[str] = None,
         since: Any = None, until: Any = None, query: Optional[str] = None, limit: Optional[int] = None) -> list[AuditEntry]:
    """The store's audit entries, oldest first, filtered by request id, user, agent, time range
    (``since`` inclusive, ``until`` exclusive) and/or the exact query (matched by its hash).
    ``user_id`` matches the entries a user's scope asked for: a user sees only her own entries."""
    engine = _engine(store)
    lo, hi = _bound(since, "since"), _bound(until, "until")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive whole number, got {limit!r}")
    qhash = None
    if query is not None:
        from .erasure import SALT_OPTION

        if not isinstance(store.get_option(SALT_OPTION), str):
            return []  # no key yet: no entry was ever written (and a read never writes one)
        qhash = query_hash(store, query)
    with engine._read("audit") as (conn, tables, _):
        if not _exists(conn):
            return []
        sql = f"SELECT request_id, at, surface, user_id, agent_id, thread_id, query_hash, detail FROM {AUDIT_TABLE} WHERE store_id = ?"
        params: list[Any] = [tables.store_id]
        for column, value in (("request_id", request_id), ("user_id", user_id), ("agent_id", agent_id), ("query_hash", qhash)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        if lo is not None:
            sql += " AND at >= ?"
            params.append(lo)
        if hi is not None:
            sql += " AND at < ?"
            params.append(hi)
        sql += " ORDER BY at, request_id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = conn.execute(sql, params).fetchall()
    return [AuditEntry(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7])) for r in rows]


async def find_async(store: Any, **filters: Any) -> list[AuditEntry]:
    return await _off_loop(store, lambda: find(store, **filters))


def purge(store: Any, now: Optional[datetime] = None) -> int:
    """Delete the entries older than the store's ``ttl_days`` (SC-16.5); returns how many."""
    settings = audit_settings(store)
    from ..sqlite.engine import SQLiteEngine

    engine = getattr(store, "_engine", None)
    if settings.ttl_days is None or not isinstance(engine, SQLiteEngine):
        return 0
    cutoff = _iso((now or datetime.now(timezone.utc)) - timedelta(days=settings.ttl_days))
    with engine._write("audit retention") as tx:
        if not _exists(tx.conn):
            return 0
        return tx.conn.execute(f"DELETE FROM {AUDIT_TABLE} WHERE store_id = ? AND at < ?",
                               (tx.tables.store_id, cutoff)).rowcount
