"""The worker side of background writes (``write(..., background=True)``, KC-4.22): queueing
a message, claiming due jobs, running the write pipeline on them with a renewed lease, and
recording each attempt's outcome (the queue's rows: ``queue.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime, timedelta
from typing import Any, Optional

import sqlalchemy as sa

from ..._plans import run_sync
from ...threads import write_refusal
from ...trust.firewall import FirewallRejected
from ..config import KnowledgeConfig, merge_config
from ..db.queries import check_page
from ..errors import plain_text
from ..model import new_id
from ..observe import finish_span, operation_span
from ..runtime import KnowledgeRuntime
from ..text import iso, parse_when, validate_agent_id
from ..types import JobInfo, JobQueueStatus, OperationStats, StepTiming, WorkerReport, WriteResult
from ..write import erasures
from ..write.erasures import ErasureMark
from ..write.state import WriteRun
from ..write.run import run_write
from . import queue as queue_mod

__all__ = ["submit", "process_jobs", "run_job", "job_status", "list_jobs", "get_job", "retry_jobs"]


async def submit(rt: KnowledgeRuntime, agent_id: str, message: str, speaker_name: str, *, source: str, session_id: str,
                 occurred_at: datetime, recent: list[Any], overrides: Optional[dict[str, Any]], now: datetime,
                 user_id: Optional[str], mark: Optional[ErasureMark] = None) -> WriteResult:
    """``write(..., background=True)``: one job row, nothing else. A user's write into a thread
    of shared records only is refused here already (KC-3.10a; the job's commit checks again in
    its block). ``mark``: the erasures of the write's scope when the call started; when one
    committed since, no job is queued (``ConflictError``, KC-3.10; a job queued before it is
    deleted by the erasure)."""
    refusal = await rt.in_thread(run_sync, rt.store, write_refusal(session_id, user_id, agent_id))
    if refusal is not None:
        raise ValueError(refusal)
    job_id, event_id = new_id(), new_id()
    payload = {"message": message, "speaker_name": speaker_name, "source": source, "session_id": session_id,
               "occurred_at": iso(occurred_at), "recent_messages": recent, "config_overrides": overrides or None,
               "user_id": user_id}

    def run() -> None:
        with rt.backend.write("knowledge background write", agent_id) as conn:
            if mark is not None:
                erasures.check(conn, rt.backend.dialect_name, rt.tables.store_id, mark)
            queue_mod.insert_job(conn, rt.tables, job_id=job_id, agent_id=agent_id, event_id=event_id,
                                 session_id=session_id, payload=payload, now=now,
                                 max_attempts=queue_mod.DEFAULT_MAX_ATTEMPTS, user_id=user_id)

    started = time.perf_counter()
    await rt.in_thread(run)
    ms = (time.perf_counter() - started) * 1000.0
    return WriteResult(event_id=event_id, job_id=job_id, duration_ms=ms,
                       stats=OperationStats(steps=(StepTiming("enqueue", ms),), total_ms=ms))


def check_worker_args(max_jobs: Any, lease_seconds: Any, backoff_base: Any, backoff_max: Any, worker_id: Any) -> None:
    if max_jobs is not None and (isinstance(max_jobs, bool) or not isinstance(max_jobs, int) or max_jobs < 1):
        raise ValueError("max_jobs must be an int >= 1 or None")
    for name, value in (("lease_seconds", lease_seconds), ("backoff_base", backoff_base), ("backoff_max", backoff_max)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{name} must be a number > 0")
    if worker_id is not None and (not isinstance(worker_id, str) or not worker_id.strip() or len(worker_id) > 128):
        raise ValueError("worker_id must be a non-empty string of at most 128 characters")


async def process_jobs(rt: KnowledgeRuntime, config: KnowledgeConfig, *, max_jobs: Optional[int], lease_seconds: float,
                       backoff_base: float, backoff_max: float, worker_id: Optional[str], stop: Any) -> WorkerReport:
    """Claim and run due jobs until none is due (or ``max_jobs`` were taken, or ``stop`` is
    set); see ``KnowledgeMemory.process_jobs``."""
    check_worker_args(max_jobs, lease_seconds, backoff_base, backoff_max, worker_id)
    wid = worker_id or queue_mod.new_worker_id()
    counts = {"done": 0, "retried": 0, "failed": 0, "already_done": 0, "lost": 0}
    ids: list[str] = []
    while max_jobs is None or len(ids) < max_jobs:
        if stop is not None and stop.stopping.is_set():
            break
        processed = await _process_one(rt, config, wid, float(lease_seconds), float(backoff_base), float(backoff_max))
        if processed is None:
            if stop is None:
                break
            await stop.idle(stop.poll_interval)
            continue
        outcome, job_id = processed
        counts[outcome] += 1
        ids.append(job_id)
    return WorkerReport(job_ids=tuple(ids), **counts)


async def _process_one(rt: KnowledgeRuntime, config: KnowledgeConfig, wid: str, lease_s: float, base: float,
                       cap: float) -> Optional[tuple[str, str]]:
    """(outcome, job id) of one claimed job, or None when none is due."""
    now = rt.now()
    job = await rt.in_thread(queue_mod.claim, rt, wid, now, now + timedelta(seconds=lease_s))
    if job is None:
        return None
    beat = asyncio.ensure_future(_heartbeat(rt, job["id"], wid, lease_s))
    try:
        outcome = await run_job(rt, config, job, wid, base, cap)
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
    rt.log.info("oramem.knowledge job %s attempt %s: %s", job["id"], job["attempts"], outcome)
    return outcome, job["id"]


async def _heartbeat(rt: KnowledgeRuntime, job_id: str, wid: str, lease_s: float) -> None:
    while True:
        await asyncio.sleep(lease_s / 3.0)
        now = rt.now()
        if not await rt.in_thread(queue_mod.renew, rt, job_id, wid, now + timedelta(seconds=lease_s), now):
            return


async def run_job(rt: KnowledgeRuntime, config: KnowledgeConfig, job: dict[str, Any], wid: str, base: float,
                   cap: float) -> str:
    t = rt.tables
    agent, eid, jid = job["agent_id"], job["event_id"], job["id"]
    payload = job["payload_json"] or {}
    now = rt.now()

    def already() -> bool:
        with rt.backend.read() as conn:
            return queue_mod.event_exists(conn, t, agent, eid)

    if await rt.in_thread(already):
        done = await rt.in_thread(queue_mod.finish_without_work, rt, jid, wid, now,
                                  {"event_id": eid, "note": "already processed by an earlier attempt"}, payload,
                                  agent_id=agent)
        return "already_done" if done else "lost"
    try:
        # a crashed attempt may have left the event's store record (written before the
        # knowledge transaction): remove it so this attempt can write it again. Only that
        # record: an event record of this job's scope. Store ids are caller-chosen, so a
        # record of another scope under the event id is someone else's; it stays, and this
        # attempt's write of the event record fails on the id (the job retries, then fails)
        left = await rt.in_thread(rt.store.get, "message", eid)
        if (left is not None and left.agent_id == agent and left.user_id == job.get("user_id")
                and (left.metadata or {}).get("kg_event")):
            await rt.in_thread(rt.store.delete, "message", eid)
        cfg = merge_config(merge_config(config, payload.get("config_overrides")),
                           {"on_extraction_failure": "rollback"})  # a failed attempt leaves nothing: it is retried
        # SC-15.6: the job is screened under the store's policy now, as a write is: one queued
        # before the policy was set went to the LLM and into rows unscreened (red30). A job
        # screened when queued is unchanged by it (its redactions hold no finding); a rejected
        # category raises (the attempt fails, retried as any failure, its error says why)
        from ..write.entry import screen

        message, speaker, recent, _, flagged, _ = await screen(
            rt, payload["message"], payload["source"], list(payload.get("recent_messages") or []),
            payload["speaker_name"])
        if flagged is not None:  # not extracted, as a flagged write is not: nothing is stored
            done = await rt.in_thread(queue_mod.finish_without_work, rt, jid, wid, now,
                                      {"event_id": eid, "note": "the store's firewall flagged the queued message ("
                                       + ", ".join((flagged.firewall or {}).get("findings", [])) + "): it was not extracted"},
                                      payload, agent_id=agent)
            return "done" if done else "lost"
        run = WriteRun(
            rt, agent_id=agent, message=message, speaker_name=speaker,
            source=payload["source"], session_id=payload["session_id"],
            occurred_at=parse_when(payload.get("occurred_at"), "occurred_at"),
            recent_messages=recent, dry_run=False, cfg=cfg, now=now,
            verbose=False, event_id=eid, user_id=job.get("user_id"),
        )

        def on_commit(conn: Any) -> None:
            counts: dict[str, int] = {}
            for d in run.decisions:
                counts[d.action] = counts.get(d.action, 0) + 1
            queue_mod.mark_done(conn, t, jid, wid, now, {"event_id": eid, "attempt": int(job["attempts"]),
                                                          "decisions": counts}, payload)

        run.on_commit = on_commit
        with operation_span(rt.tracer_provider, "job", run, job_id=jid, attempt=int(job["attempts"])) as span:
            result = await run_write(rt, run, event_mode="insert")
            finish_span(span, result.stats, result.success)
    except queue_mod.LostClaim:
        return "lost"
    except FirewallRejected as exc:
        # the store's trust policy refused the job's text: the same text under the same policy
        # is refused again, so the job fails now instead of after every attempt (left34); the
        # reason (detector names, never the text) is its last_error, with what to do
        error = (f"{type(exc).__name__}: {plain_text(exc)} [not retried: a firewall refusal repeats; after changing "
                 "the policy, retry the job: oramem kg jobs retry, or retry_jobs]")
        return await rt.in_thread(queue_mod.fail_attempt, rt, job, wid, error, rt.now(), base, cap, final=True)
    except Exception as exc:  # noqa: BLE001 - every other failure of an attempt is recorded and retried
        error = f"{type(exc).__name__}: {plain_text(exc)}"  # stored as last_error: no quoted model reply
    else:
        if result.success:
            return "done"
        error = result.error or "extraction failed"
    return await rt.in_thread(queue_mod.fail_attempt, rt, job, wid, error, rt.now(), base, cap)



# ----------------------------------------------------------------------------- the queue seen from outside
async def job_status(rt: KnowledgeRuntime, agent_id: Optional[str], errors: Any) -> JobQueueStatus:
    if agent_id is not None:
        validate_agent_id(agent_id)
    if isinstance(errors, bool) or not isinstance(errors, int) or errors < 0:
        raise ValueError("errors must be an int >= 0")
    now = rt.now()
    return await rt.read(lambda c: queue_mod.status(c, rt.tables, agent_id, now, errors))


async def list_jobs(rt: KnowledgeRuntime, agent_id: Optional[str], status: Optional[str], limit: Any) -> list[JobInfo]:
    if agent_id is not None:
        validate_agent_id(agent_id)
    if status is not None and status not in queue_mod.JOB_STATES:
        raise ValueError(f"status must be one of {', '.join(queue_mod.JOB_STATES)}, got {status!r}")
    check_page(limit, 0)
    return await rt.read(lambda c: queue_mod.list_jobs(c, rt.tables, agent_id, status, limit))


async def get_job(rt: KnowledgeRuntime, job_id: Any) -> Optional[JobInfo]:
    if not isinstance(job_id, str) or not job_id.strip():  # SC-2.2: white space only names no job
        raise ValueError(f"job_id must be a non-empty string (not only white space), got {job_id!r}: give a job's id "
                         "(km.jobs() or oramem kg jobs list)")
    j = rt.tables.job
    row = await rt.read(lambda c: c.execute(sa.select(j).where(j.c.id == job_id)).mappings().first())
    return None if row is None else queue_mod.job_info(row)


async def retry_jobs(rt: KnowledgeRuntime, job_ids: Any, agent_id: Optional[str]) -> int:
    if job_ids is not None:
        if isinstance(job_ids, str) or not isinstance(job_ids, (list, tuple)) or not job_ids \
                or not all(isinstance(x, str) for x in job_ids):
            raise TypeError("job_ids must be a non-empty list of job id strings, or None for every failed job")
        blank = [x for x in job_ids if not x.strip()]
        if blank:  # SC-2.2: an empty or white-space-only id names no job (it matched none: 0, no error)
            raise ValueError(f"job_ids must be job ids (not empty, not only white space), got {blank[0]!r}: give a failed "
                             "job's id (km.jobs(status='failed') or oramem kg jobs list), or None for every failed job")
    if agent_id is not None:
        validate_agent_id(agent_id)
    now = rt.now()
    return await rt.in_thread(queue_mod.retry, rt, None if job_ids is None else list(job_ids), agent_id, now)
