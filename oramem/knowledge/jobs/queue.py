"""The durable extraction queue: ``write(..., background=True)`` and its workers.

A background write validates its arguments exactly like ``write``, then stores one row in
``<ID>_KG_JOB`` (the message and every argument in ``payload_json``, the event id it will
get) and returns; nothing else is written and no LLM is called. A worker
(:meth:`KnowledgeMemory.process_jobs`, :meth:`KnowledgeMemory.start_worker`,
``oramem kg worker``) claims jobs one at a time and runs the ordinary write pipeline on
them.

States: ``pending`` → ``running`` (claimed: ``worker_id``, ``lease_until``, ``attempts``
+ 1) → ``done``; a failed attempt (an LLM failure, a database error, anything raised) goes
back to ``pending`` with ``available_at`` pushed out by an exponential backoff, or, after
``max_attempts`` attempts, to ``failed`` with its ``last_error`` (kept until
``retry_jobs`` puts it back to ``pending``).

Exactly once per message:

- the job is marked ``done`` inside the knowledge transaction that commits its event,
  facts and entities, and only while this worker still holds it (``status = 'running'
  AND worker_id = me``); otherwise the transaction — the store's block, with the attempt's
  store records (SC-12) — rolls back (:class:`LostClaim`), so a job's knowledge rows and
  store records exist if and only if it is ``done``;
- a worker that dies (SIGKILL, power loss) leaves its job ``running``; once the lease
  expires any worker claims it again (a live worker renews its lease while it works);
- before running, a claimed job whose event row exists is marked ``done`` without work
  (belt and braces for the rule above), and a store message record without its event row
  (left by versions whose commit was two-phase, before SC-12) is deleted so the retry can
  write it again.

Claiming: SQLite runs ``UPDATE … WHERE id = (SELECT … LIMIT 1) RETURNING …`` inside a
``BEGIN IMMEDIATE`` transaction, so two workers (threads or processes) never take the same
job. Oracle runs ``SELECT id … FOR UPDATE SKIP LOCKED`` and the ``UPDATE`` of the one row it
fetched in one transaction over python-oracledb (static-checked against the Oracle SQL
reference's for_update_clause, not run against Oracle); the query has no ORDER BY or row
limit, so on Oracle jobs are claimed in no guaranteed order.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from datetime import datetime, timedelta
from typing import Any, Callable, Coroutine, Iterator, Optional

import sqlalchemy as sa

from ..._sync import BackgroundLoop
from ..errors import KnowledgeError
from ..db.schema import KGTables, UTCDateTime
from ..runtime import KnowledgeRuntime
from ..types import JobInfo, JobQueueStatus, WorkerReport

__all__ = [
    "JOB_STATES",
    "DEFAULT_MAX_ATTEMPTS",
    "LostClaim",
    "backoff_seconds",
    "claim_oracle",
    "new_worker_id",
]

log = logging.getLogger("oramem.knowledge")

JOB_STATES = ("pending", "running", "done", "failed")
#: attempts of a background write before it stays ``failed``
DEFAULT_MAX_ATTEMPTS = 5
#: ``last_error`` of a job whose worker stopped without finishing it
LEASE_EXPIRED = "the worker processing this job stopped before finishing it (its lease expired)"


class LostClaim(KnowledgeError):
    """This worker's lease on a job ended (another worker claimed it); its attempt is rolled back."""


def new_worker_id() -> str:
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def backoff_seconds(attempts: int, base: float, cap: float) -> float:
    """Delay before attempt ``attempts + 1``: ``min(base * 2 ** (attempts - 1), cap)``."""
    return float(min(base * (2 ** max(0, attempts - 1)), cap))


def job_info(row: Any) -> JobInfo:
    return JobInfo(
        id=row["id"], agent_id=row["agent_id"], event_id=row["event_id"], status=row["status"],
        attempts=int(row["attempts"]), max_attempts=int(row["max_attempts"]), session_id=row["session_id"],
        created_at=row["created_at"], updated_at=row["updated_at"], available_at=row["available_at"],
        lease_until=row["lease_until"], worker_id=row["worker_id"], last_error=row["last_error"],
        finished_at=row["finished_at"], result=row["result_json"], user_id=row["user_id"],
    )


# ----------------------------------------------------------------------------- submit
def insert_job(conn: sa.Connection, t: KGTables, *, job_id: str, agent_id: str, event_id: str, session_id: str,
               payload: dict[str, Any], now: datetime, max_attempts: int, user_id: Optional[str] = None) -> None:
    conn.execute(sa.insert(t.job).values(
        id=job_id, agent_id=agent_id, user_id=user_id, event_id=event_id, kind="write", status="pending", session_id=session_id,
        payload_json=payload, attempts=0, max_attempts=max_attempts, available_at=now, created_at=now, updated_at=now,
    ))


# ----------------------------------------------------------------------------- claim
def claim_sqlite(rt: KnowledgeRuntime, worker_id: str, now: datetime, lease_until: datetime) -> Optional[dict[str, Any]]:
    """Claim the next due job in one ``BEGIN IMMEDIATE`` transaction (SQLite)."""
    j = rt.tables.job
    with rt.backend.write("knowledge job claim", None) as conn:  # SQLite: BEGIN IMMEDIATE serialises it
        expired = sa.and_(j.c.status == "running", j.c.lease_until < now)
        conn.execute(
            sa.update(j).where(expired, j.c.attempts >= j.c.max_attempts)
            .values(status="failed", last_error=LEASE_EXPIRED, updated_at=now, finished_at=now, lease_until=None)
        )
        due = sa.or_(sa.and_(j.c.status == "pending", j.c.available_at <= now), expired)
        pick = sa.select(j.c.id).where(due).order_by(j.c.available_at, j.c.created_at, j.c.id).limit(1).scalar_subquery()
        row = conn.execute(
            sa.update(j).where(j.c.id == pick)
            .values(status="running", worker_id=worker_id, lease_until=lease_until, attempts=j.c.attempts + 1,
                    updated_at=now, last_error=sa.case((j.c.status == "running", LEASE_EXPIRED), else_=j.c.last_error))
            .returning(*j.c)
        ).mappings().first()
        return dict(row) if row is not None else None


def _oracle_table(rt: KnowledgeRuntime) -> str:
    # the name comes from the validated store id (build_tables), never from user text
    name: str = rt.tables.job.name
    return '"' + name + '"'


def claim_oracle(dbapi_conn: Any, table: str, worker_id: str, now: datetime, lease_until: datetime) -> Optional[str]:
    """Claim one due job on Oracle over a python-oracledb connection; returns its id.

    One transaction: jobs out of attempts whose lease expired become ``failed``; ``SELECT id
    … FOR UPDATE SKIP LOCKED`` locks due rows no other session holds (rows another worker is
    claiming are skipped, not waited for); the first fetched row is updated to ``running``;
    commit. ``table`` is the quoted job table name built from the validated store id.
    Timestamps are bound as naive UTC datetimes (the columns are TIMESTAMP, UTC)."""
    n = now.replace(tzinfo=None)
    lease = lease_until.replace(tzinfo=None)
    try:
        with dbapi_conn.cursor() as cur:
            return _claim_on(dbapi_conn, cur, table, worker_id, n, lease)
    except BaseException:
        dbapi_conn.rollback()
        raise


def _timestamps(cur: Any, *names: str) -> None:
    """D12: python-oracledb binds a datetime as DATE (impl/base/metadata.pyx, from_value), which
    drops the fractional seconds; the columns are TIMESTAMP, so the binds are typed so too."""
    import oracledb

    cur.setinputsizes(**{n: oracledb.DB_TYPE_TIMESTAMP for n in names})


def _claim_on(dbapi_conn: Any, cur: Any, table: str, worker_id: str, n: datetime, lease: datetime) -> Optional[str]:
    _timestamps(cur, "now")
    cur.execute(
        f"UPDATE {table} SET status = 'failed', last_error = :lost, updated_at = :now, finished_at = :now, "
        "lease_until = NULL WHERE status = 'running' AND lease_until < :now AND attempts >= max_attempts",
        {"lost": LEASE_EXPIRED, "now": n},
    )
    cur.arraysize = 1
    cur.prefetchrows = 1
    _timestamps(cur, "now")
    cur.execute(
        f"SELECT id, status FROM {table} WHERE (status = 'pending' AND available_at <= :now) "
        "OR (status = 'running' AND lease_until < :now) FOR UPDATE SKIP LOCKED",
        {"now": n},
    )
    row = cur.fetchone()
    if row is None:
        dbapi_conn.commit()
        return None
    job_id: str = row[0]
    status = row[1]
    note = ", last_error = :lost" if status == "running" else ""
    binds = {"worker": worker_id, "lease": lease, "now": n, "id": job_id}
    if note:
        binds["lost"] = LEASE_EXPIRED
    _timestamps(cur, "now", "lease")
    cur.execute(
        f"UPDATE {table} SET status = 'running', worker_id = :worker, lease_until = :lease, "
        f"attempts = attempts + 1, updated_at = :now{note} WHERE id = :id",
        binds,
    )
    dbapi_conn.commit()
    return job_id


@contextlib.contextmanager
def _oracle_dbapi(rt: KnowledgeRuntime) -> Iterator[Any]:
    """A connection ``claim_oracle`` may commit and roll back: a pooled one, or the store's single
    connection held for the claim (other threads' store blocks wait, review D3)."""
    with rt.backend.dbapi_turn() as conn:
        yield conn


def claim(rt: KnowledgeRuntime, worker_id: str, now: datetime, lease_until: datetime) -> Optional[dict[str, Any]]:
    """Claim the next due job for ``worker_id`` (``rt``: the KnowledgeRuntime)."""
    if rt.backend.dialect_name == "sqlite":
        return claim_sqlite(rt, worker_id, now, lease_until)
    with _oracle_dbapi(rt) as conn:
        job_id = claim_oracle(conn, _oracle_table(rt), worker_id, now, lease_until)
    if job_id is None:
        return None
    j = rt.tables.job
    with rt.backend.read() as c:
        row = c.execute(sa.select(j).where(j.c.id == job_id)).mappings().first()
    return dict(row) if row is not None else None


# ----------------------------------------------------------------------------- state changes
def renew(rt: KnowledgeRuntime, job_id: str, worker_id: str, lease_until: datetime, now: datetime) -> bool:
    """The lease of a job this worker holds. No agent's lock row (``write(..., None)``): it
    changes the lease and nothing of the agent's knowledge or of the job's text, and must not
    wait behind the job's own commit, which holds that row. Against an erasure's rewrite of
    the job row the row lock orders them: after a rewrite the job is no longer ``running`` as
    this worker's, the update matches nothing and the heartbeat stops."""
    j = rt.tables.job
    with rt.backend.write("knowledge job lease", None) as conn:
        res = conn.execute(
            sa.update(j).where(j.c.id == job_id, j.c.worker_id == worker_id, j.c.status == "running")
            .values(lease_until=lease_until, updated_at=now)
        )
        return bool(res.rowcount)


def mark_done(conn: sa.Connection, t: KGTables, job_id: str, worker_id: str, now: datetime, result: dict[str, Any],
              payload: Optional[dict[str, Any]] = None) -> None:
    """Inside the knowledge transaction of the job's write: ``done`` only while this worker
    still holds the job; else :class:`LostClaim` rolls the whole write back. The message
    text leaves the job row (the event holds it now; the queue keeps no second copy)."""
    j = t.job
    values: dict[str, Any] = dict(status="done", updated_at=now, finished_at=now, lease_until=None, last_error=None,
                                  result_json=result)
    if payload is not None:
        values["payload_json"] = {k: v for k, v in payload.items() if k not in ("message", "recent_messages")}
    res = conn.execute(
        sa.update(j).where(j.c.id == job_id, j.c.worker_id == worker_id, j.c.status == "running").values(**values)
    )
    if not res.rowcount:
        raise LostClaim(f"job {job_id}: another worker holds it now (this worker's lease expired); attempt rolled back")


def finish_without_work(rt: KnowledgeRuntime, job_id: str, worker_id: str, now: datetime, result: dict[str, Any],
                        payload: Optional[dict[str, Any]] = None, *, agent_id: str) -> bool:
    """``done`` without running the write (its event exists already); like every done job it
    keeps no message or context (``payload``: the job's, stripped as :func:`mark_done` does;
    an erasure looks into queued writes only, red24). Under the job's agent's lock row
    (``agent_id``), as :func:`mark_done` runs in the job's write commit."""
    with rt.backend.write("knowledge job done", agent_id) as conn:
        try:
            mark_done(conn, rt.tables, job_id, worker_id, now, result, payload)
        except LostClaim:
            return False
    return True


def fail_attempt(rt: KnowledgeRuntime, job: dict[str, Any], worker_id: str, error: str, now: datetime, base: float, cap: float,
                 *, final: bool = False) -> str:
    """Record a failed attempt: back to ``pending`` after the backoff, or ``failed`` when
    out of attempts or ``final`` (a failure no retry can change: the store's firewall refused
    the job's text). Returns the new state (``lost`` when another worker holds the job).

    Under the job's agent's lock row (KC-3.10, the erasure lock order): ``last_error`` may
    quote the context the attempt sent (a provider's exception), and an erasure that takes
    the erased actor's words out of this job's context replaces that text with a note
    (``deletes._strip_queued_context``) and takes the job back from its worker. On Oracle
    (read committed) an erasure that read the job before this update committed would keep
    the new text; with the lock the erasure (``LOCK TABLE <ID>_KG_AGENT IN EXCLUSIVE MODE``
    first) waits for this commit and reads the text, or this update waits for the erasure
    and then finds the job no longer this worker's (``lost``). Before, the write named the
    agent ``''``: NULL on Oracle, a row lock of no row."""
    j = rt.tables.job
    attempts = int(job["attempts"])
    final = final or attempts >= int(job["max_attempts"])
    values: dict[str, Any] = {"last_error": error[:4000], "updated_at": now, "lease_until": None}
    if final:
        values.update(status="failed", finished_at=now)
    else:
        values.update(status="pending", available_at=now + timedelta(seconds=backoff_seconds(attempts, base, cap)))
    with rt.backend.write("knowledge job failure", job["agent_id"]) as conn:
        res = conn.execute(
            sa.update(j).where(j.c.id == job["id"], j.c.worker_id == worker_id, j.c.status == "running").values(**values)
        )
    if not res.rowcount:
        return "lost"
    return "failed" if final else "retried"


def retry(rt: KnowledgeRuntime, job_ids: Optional[list[str]], agent_id: Optional[str], now: datetime) -> int:
    """Failed jobs back to ``pending`` with a fresh set of attempts. Under ``agent_id``'s
    lock row when given; every agent's (``None``) locks none: it changes states, attempts and
    times, no text, and an erasure's rewrite of the same job rows waits for its row locks."""
    j = rt.tables.job
    cond = [j.c.status == "failed"]
    if job_ids is not None:
        cond.append(j.c.id.in_(job_ids))
    if agent_id is not None:
        cond.append(j.c.agent_id == agent_id)
    with rt.backend.write("knowledge job retry", agent_id) as conn:
        res = conn.execute(
            sa.update(j).where(*cond).values(status="pending", attempts=0, available_at=now, updated_at=now,
                                             finished_at=None, worker_id=None)
        )
        return int(res.rowcount or 0)


# ----------------------------------------------------------------------------- reads
def status(conn: sa.Connection, t: KGTables, agent_id: Optional[str], now: datetime, errors: int) -> JobQueueStatus:
    j = t.job
    scope = [j.c.agent_id == agent_id] if agent_id is not None else []
    counts = {s: 0 for s in JOB_STATES}
    for state, n in conn.execute(sa.select(j.c.status, sa.func.count()).where(*scope).group_by(j.c.status)):
        counts[state] = int(n)
    oldest = conn.execute(
        sa.select(sa.func.min(j.c.created_at)).where(j.c.status == "pending", *scope)
    ).scalar()
    if isinstance(oldest, str):  # an aggregate loses the column type on SQLite
        oldest = UTCDateTime().process_result_value(oldest, conn.dialect)
    age = None if oldest is None else max(0.0, (now - oldest).total_seconds())
    rows = conn.execute(
        sa.select(j).where(j.c.last_error.is_not(None), j.c.status.in_(("failed", "pending")), *scope)
        .order_by(sa.case((j.c.status == "failed", 0), else_=1), j.c.updated_at.desc(), j.c.id).limit(errors)
    ).mappings().all()
    return JobQueueStatus(counts=counts, oldest_pending_at=oldest, oldest_pending_age_s=age,
                          last_errors=tuple(job_info(r) for r in rows))


def list_jobs(conn: sa.Connection, t: KGTables, agent_id: Optional[str], state: Optional[str], limit: int) -> list[JobInfo]:
    j = t.job
    cond = []
    if agent_id is not None:
        cond.append(j.c.agent_id == agent_id)
    if state is not None:
        cond.append(j.c.status == state)
    rows = conn.execute(sa.select(j).where(*cond).order_by(j.c.created_at, j.c.id).limit(limit)).mappings().all()
    return [job_info(r) for r in rows]


def event_exists(conn: sa.Connection, t: KGTables, agent_id: str, event_id: str) -> bool:
    ev = t.event
    return conn.execute(sa.select(ev.c.id).where(ev.c.agent_id == agent_id, ev.c.id == event_id)).first() is not None


# ----------------------------------------------------------------------------- stopping and waking workers
class StopFlag:
    """How a long-running worker is told to stop (``stopping``) or to look for work now
    (``wake``); between polls it waits ``poll_interval`` seconds in short sleeps."""

    def __init__(self, poll_interval: float) -> None:
        self.poll_interval = poll_interval
        self.stopping = threading.Event()
        self.woken = threading.Event()

    def wake(self) -> None:
        self.woken.set()

    async def idle(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.stopping.is_set() and not self.woken.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        self.woken.clear()


class BackgroundWorker(StopFlag):
    """``KnowledgeMemory.start_worker``: ``process_jobs_async`` as a task on the instance's own
    event loop (the loop its sync twins run on; no loop of its own) until :meth:`stop`;
    background writes of the same instance :meth:`wake` it."""

    def __init__(self, loop: BackgroundLoop, poll_interval: float,
                 work: Callable[[StopFlag], Coroutine[Any, Any, WorkerReport]]) -> None:
        super().__init__(poll_interval)
        #: ``work(self)`` is the instance's ``process_jobs_async`` bound to this stop flag
        self.future: concurrent.futures.Future[WorkerReport] = loop.submit(work(self))
        self.future.add_done_callback(self._log_error)

    @staticmethod
    def _log_error(future: concurrent.futures.Future[WorkerReport]) -> None:
        if not future.cancelled() and future.exception() is not None:
            log.error("oramem.knowledge: the background worker stopped on an error", exc_info=future.exception())

    def stop(self, timeout: Optional[float] = None) -> Optional[WorkerReport]:
        """Stop after the current job and return the report; re-raises the error that stopped
        the worker, if any; ``TimeoutError`` when the current job outlasts ``timeout``."""
        self.stopping.set()
        try:
            return self.future.result(timeout)
        except concurrent.futures.TimeoutError:  # an alias of TimeoutError from Python 3.11
            raise TimeoutError("the background worker did not finish its current job in time") from None
