"""``KnowledgeMemory``: the public API of the knowledge layer (KC-1)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
import logging
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional, TypeVar, cast

import sqlalchemy as sa

from .._sync import BackgroundLoop, sync_method
from .write.deterministic import build_reply, event_text
from .llm.providers import NoLLM
from .runtime import KnowledgeRuntime
from ..trust.firewall import VERDICT_KEY
from ..trust.gate import screen_message
from ..types import NOT_SET, SchemaPolicy, SearchStrategy
from .write import commit as commit_mod
from . import deletes as erasure
from .db import queries as reads
from .jobs import queue as queue_mod
from .observe import finish_span, operation_span, otel_available, stats_of
from .config import KnowledgeConfig, merge_config
from .db.backend import backend_for
from ..errors import StoreClosed
from .errors import ConflictError, ExtractionError
from .model import Decision
from .write.classify import Chunk, classify_input, select_strategy
from .write.pipeline import WriteRun, detect_corrections
from .db.schema import apply_schema_policy, build_tables, oracle_upgrade_ddl, upgrade_sqlite
from .model import new_id
from .text import iso, parse_when, to_utc, validate_agent_id
from .db.queries import check_user_id
from .types import (
    BackgroundRunResult,
    ClusteringResult,
    CommunityDetectionResult,
    ConsolidationResult,
    EntityImportanceResult,
    MemifyResult,
    SummaryRefreshResult,
    ContradictionResult,
    CorrectionResult,
    DirectiveBlock,
    EmotionalTrendsResult,
    RetrieveResult,
    EntityDetail,
    FactDetail,
    IntentionDetail,
    JobInfo,
    JobQueueStatus,
    OperationStats,
    RelationshipDetail,
    StepTiming,
    WorkerReport,
    WriteResult,
)

__all__ = ["KnowledgeMemory"]

T = TypeVar("T")

#: What ``KnowledgeMemory(llm=None)`` switches off: the steps only a model can do.
_NO_LLM_CONFIG = {"enable_llm_resolution": False, "enable_emotion_tagging": False, "enable_reranker": False}

log = logging.getLogger("oramem.knowledge")


def default_session_id(agent_id: str, user_id: Optional[str] = None) -> str:
    """KC-4.21: the thread of a write that names no ``session_id``: one per (agent, user), so
    no two agents or users share a default conversation (review finding 4)."""
    digest = hashlib.sha256(json.dumps([agent_id, user_id]).encode("utf-8")).hexdigest()[:32]
    return f"kg-default-{digest}"


def _origin(source: Any, session_id: Any, occurred_at: Any) -> Optional[datetime]:
    """Checks ``source`` and ``session_id`` of a write and parses ``occurred_at``."""
    if not isinstance(source, str) or not source.strip():
        raise ValueError("source must be a non-empty string")
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 255:
        raise ValueError("session_id must be a non-empty string of at most 255 characters (it is a store thread id), "
                         "or None for the (agent, user) default thread")
    when: Optional[datetime] = parse_when(occurred_at, "occurred_at")
    return when


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


#: the PL/SQL deletion hook of the knowledge layer on Oracle (plsql/oramem_kg_jobs.pks)
ORACLE_DELETION_HOOK = "ORAMEM_KG_JOBS.ON_STORE_DELETE"


class KnowledgeMemory:
    """Long-term knowledge over an open oramem store (KC-1.2).

    ``KnowledgeMemory(store, llm, embedder=None, *, config=None, schema_policy=NOT_SET, clock=None)``.
    The knowledge tables live in the store's database under its ``memory_store_id``.
    """

    def __init__(
        self,
        store: Any,
        llm: Any,
        embedder: Any = None,
        *,
        config: Optional[KnowledgeConfig] = None,
        schema_policy: Any = NOT_SET,
        clock: Optional[Callable[[], datetime]] = None,
        tracer_provider: Any = None,
    ) -> None:
        from ..store import OracleDBMemoryStore, SQLiteMemoryStore

        if not isinstance(store, (SQLiteMemoryStore, OracleDBMemoryStore)):
            raise TypeError(f"store must be an open SQLiteMemoryStore or OracleDBMemoryStore, got {type(store).__name__}")
        if llm is not None and not hasattr(llm, "complete_async"):
            raise TypeError("llm must implement LLMProvider (async complete_async), or be None for deterministic use")
        if config is None:
            config = KnowledgeConfig()
        if not isinstance(config, KnowledgeConfig):
            raise TypeError(f"config must be a KnowledgeConfig, got {type(config).__name__}")
        self.has_llm = llm is not None
        if llm is None:
            # deterministic use (add_fact & co., reads, deterministic jobs): the LLM-only steps are off
            config = merge_config(config, _NO_LLM_CONFIG)
            llm = NoLLM()
        if clock is not None and not callable(clock):
            raise TypeError("clock must be a zero-argument callable returning a datetime")
        if tracer_provider is not None:
            if not otel_available():
                raise ValueError("tracer_provider needs the OpenTelemetry API: pip install 'oramem[otel]'")
            if not hasattr(tracer_provider, "get_tracer"):
                raise TypeError("tracer_provider must be an OpenTelemetry TracerProvider (with get_tracer)")
        self._tracer_provider = tracer_provider
        embedder = embedder if embedder is not None else store.embedder
        if embedder is None:
            raise ValueError("KnowledgeMemory needs an embedder: pass one or open the store with one")
        if store.search_strategy is SearchStrategy.KEYWORD or store.vector_dim is None:
            raise ValueError("KnowledgeMemory needs a store with vector search (search_strategy vector or hybrid)")
        dim = int(embedder.embedding_dimension)
        if dim != store.vector_dim:
            raise ValueError(
                f"embedder dimension {dim} differs from the store's vector_dim {store.vector_dim}; use one embedder for both"
            )
        _check_embedder_identity(store, embedder)
        policy = store.schema_policy if schema_policy is NOT_SET else schema_policy
        self._store = store
        self.config = config
        self._clock = clock or _utc_now
        self._backend = backend_for(store)
        self._tables = build_tables(store.memory_store_id, dim)
        if self._backend.dialect_name == "oracle":
            self._backend.agent_table = self._tables.agent
        with self._backend.lock():
            apply_schema_policy(self._backend.sa_engine, self._tables, SchemaPolicy.coerce(policy, "schema_policy"),
                                upgrade=self._upgrade_schema)
        self._closed = False
        self._worker: Optional[queue_mod.BackgroundWorker] = None
        self._loop_runner = BackgroundLoop(f"oramem-kg-{store.memory_store_id}")
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="oramem-kg")
        #: what the other knowledge modules share with this instance (no private reaches)
        self.runtime = KnowledgeRuntime(
            store=store, llm=llm, embedder=embedder, dim=dim, backend=self._backend,
            tables=self._tables, executor=self._executor, clock=self._clock, log=log,
        )
        if self._backend.dialect_name == "sqlite":
            store.register_deletion_hook(self._deletion_hook)
        else:
            # Oracle: the PL/SQL twin of _deletion_hook (ORACLE_DELETION_HOOK) runs inside the
            # store's delete, cascade and purge transactions for every store with knowledge
            # tables (oramem_store.call_hook; SC-8.5, KC-3.6; reviews F16, D5): nothing is
            # registered, so the store's one PL/SQL hook slot stays the application's.
            # forget (SC-8.6): the whole erasure of oramem.knowledge.deletes runs in the
            # store's forget transaction, through SQLAlchemy on its connection
            eraser = erasure.OracleEraser(self._backend.sa_engine, self._tables, self._purge_facts)
            cast(Any, store.engine).register_erasure(eraser)

    def _upgrade_schema(self, names: list[str]) -> None:
        """KC-3.7: add the user dimension to knowledge tables of an older store, in one
        transaction (SQLite: table rebuilds; Oracle: the block of ``oracle_upgrade_ddl``)."""
        if self._backend.dialect_name == "sqlite":
            with self._backend.write("knowledge schema upgrade", "") as conn:
                upgrade_sqlite(conn, self._tables, names)
            log.warning("oramem.knowledge: upgraded %d knowledge table(s) of store %s to the user dimension "
                        "(existing knowledge is the agent's shared knowledge)", len(names), self._tables.store_id)
        else:
            with self._backend.sa_engine.connect() as conn:
                conn.exec_driver_sql(oracle_upgrade_ddl(self._tables.store_id).rstrip().rstrip("/").rstrip())

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        """Release this layer's connections (the store stays open; close it yourself)."""
        if not self._closed:
            if self._worker is not None:
                self.stop_worker()
            self._closed = True
            self._loop_runner.close()
            self._executor.shutdown(wait=True)
            self._backend.close()

    async def close_async(self) -> None:
        """:meth:`close` in a worker thread: stopping the in-process worker and joining this
        instance's loop and executor can take a while, and the caller's loop keeps running."""
        if not self._closed:
            await asyncio.to_thread(self.close)

    def __enter__(self) -> "KnowledgeMemory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _now(self) -> datetime:
        if self._closed:
            raise StoreClosed("this KnowledgeMemory is closed; open a new one")
        if self._store.closed:
            raise StoreClosed("the store of this KnowledgeMemory is closed; open a new store and KnowledgeMemory")
        moment = self._clock()
        if not isinstance(moment, datetime):
            raise TypeError(f"clock returned {type(moment).__name__}, not a datetime")
        return to_utc(moment)

    # -- write ---------------------------------------------------------------------------------
    async def write_async(
        self,
        agent_id: str,
        message: str,
        speaker_name: str,
        *,
        user_id: Optional[str] = None,
        source: str = "api",
        session_id: Optional[str] = None,
        occurred_at: Any = None,
        recent_messages: Optional[list[Any]] = None,
        dry_run: bool = False,
        config_overrides: Optional[dict[str, Any]] = None,
        verbose: bool = False,
        background: bool = False,
    ) -> WriteResult:
        """Turn one message into knowledge (KC-4). Raises on bad arguments and database
        errors (nothing stored); reports LLM failures in the result.

        ``background=True``: validate as usual, store the message and every argument as a
        pending job (``<ID>_KG_JOB``) and return at once, without an LLM call; the result
        carries ``job_id`` and the ``event_id`` the event will get, and a worker
        (:meth:`process_jobs`, :meth:`start_worker`, ``oramem kg worker``) extracts it later,
        exactly once, with retries. ``occurred_at`` defaults to the time of this call.
        ``dry_run`` and ``verbose`` do not apply to a background write (ValueError).

        ``user_id`` (KC-3.7): the user whose message this is; what it teaches is hers (only her
        reads see it, only her writes change it). ``None``: the agent's shared knowledge.
        ``session_id`` defaults to the (agent, user) thread :func:`default_session_id`."""
        # KC-4.1 validation, before any LLM call or row
        if not isinstance(message, str):
            raise TypeError(f"message must be a str, got {type(message).__name__}")
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        if session_id is None:
            session_id = default_session_id(agent_id, user_id)
        if not isinstance(speaker_name, str):
            raise TypeError(f"speaker_name must be a str, got {type(speaker_name).__name__}")
        if not speaker_name.strip():
            raise ValueError("speaker_name must not be empty")
        when = _origin(source, session_id, occurred_at)
        if recent_messages is None:
            recent: list[str] = []
        elif isinstance(recent_messages, (list, tuple)) and all(isinstance(m, str) for m in recent_messages):
            recent = list(recent_messages)
        else:
            raise TypeError("recent_messages must be a list of str")
        if not isinstance(background, bool):
            raise TypeError("background must be a bool")
        if background and (dry_run or verbose):
            raise ValueError("dry_run and verbose apply to a write that runs now, not to background=True; "
                             "inspect the job's result with get_job(job_id)")
        if not self.has_llm and not background:
            raise ValueError(
                "write() extracts knowledge with an LLM and this KnowledgeMemory has none: pass llm=... to "
                "KnowledgeMemory, or store structured knowledge with add_fact / add_entity / add_relation / add_knowledge "
                "(or queue the message with background=True for a worker that has an LLM)"
            )
        cfg = merge_config(self.config, config_overrides)
        if len(message) > cfg.max_input_chars:
            raise ValueError(f"message has {len(message)} chars, over max_input_chars={cfg.max_input_chars}")
        now = self._now()
        if not message.strip():
            return WriteResult()
        verdict = None
        policy = await self.runtime.in_thread(self._store.get_firewall)
        if policy is not None:  # SC-15.6: before the LLM, the embedder or any row sees it
            screened = screen_message(policy, message, source if isinstance(source, str) else "api")
            message = screened.texts[0] or ""
            verdict = (screened.metadata or {})[VERDICT_KEY]
            if screened.verdict == "flagged":
                return WriteResult(firewall=verdict, warnings=[
                    "the store's firewall flagged this message (" + ", ".join(screened.findings)
                    + "): it was not extracted into knowledge"])
        if background:
            queued = await self._submit(agent_id, message, speaker_name, source=source, session_id=session_id,
                                        occurred_at=when or now, recent=recent, overrides=config_overrides, now=now,
                                        user_id=user_id)
            queued.firewall = verdict
            return queued
        run = WriteRun(
            self.runtime, agent_id=agent_id, message=message, speaker_name=speaker_name, source=source,
            session_id=session_id, occurred_at=when, recent_messages=recent, dry_run=bool(dry_run), cfg=cfg,
            now=now, verbose=bool(verbose), user_id=user_id,
        )
        with operation_span(self._tracer_provider, "write", run, dry_run=bool(dry_run)) as span:
            result = await self._run(run, event_mode="insert")
            finish_span(span, result.stats, result.success)
        result.firewall = verdict
        return result

    write = sync_method(write_async)

    async def reprocess_event_async(self, agent_id: str, event_id: str, *, config_overrides: Optional[dict[str, Any]] = None,
                                    user_id: Optional[str] = None) -> WriteResult:
        """Complete an event whose extraction failed (KC-7.3); only an event of the scope
        ``user_id`` (KC-3.7: the result quotes the message)."""
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        if not isinstance(event_id, str) or not event_id:
            raise ValueError("event_id must be a non-empty string")
        cfg = merge_config(self.config, config_overrides)
        now = self._now()
        t = self._tables
        row = await self.runtime.read(
            lambda c: c.execute(sa.select(t.event).where(reads.owned(t.event, agent_id, user_id), t.event.c.id == event_id)).mappings().first()
        )
        if row is None:
            raise ValueError(f"no event {event_id!r} for agent {agent_id!r}" + (f" and user {user_id!r}" if user_id else ""))
        status = (row["trace_json"] or {}).get("status")
        if status != "extraction_failed":
            raise ValueError(f"event {event_id!r} has status {status!r}; only extraction_failed events are reprocessed")
        run = WriteRun(
            self.runtime, agent_id=agent_id, message=row["text"], speaker_name=row["speaker"] or "user", source=row["source"],
            session_id=row["session_id"] or default_session_id(agent_id, row["user_id"]), occurred_at=row["occurred_at"],
            recent_messages=[], dry_run=False, cfg=cfg, now=now, verbose=False, event_id=event_id, user_id=row["user_id"],
        )
        run.event_vec = row["embedding_vec"]
        if row["emotion_primary"]:
            run.cfg = merge_config(cfg, {"enable_emotion_tagging": False})
        return await self._run(run, event_mode="update")

    reprocess_event = sync_method(reprocess_event_async)

    # -- background extraction (queue.py) -----------------------------------------------------
    async def _submit(self, agent_id: str, message: str, speaker_name: str, *, source: str, session_id: str,
                      occurred_at: datetime, recent: list[Any], overrides: Optional[dict[str, Any]], now: datetime,
                      user_id: Optional[str]) -> WriteResult:
        """``write(..., background=True)``: one job row, nothing else (queue.py)."""
        job_id, event_id = new_id(), new_id()
        payload = {"message": message, "speaker_name": speaker_name, "source": source, "session_id": session_id,
                   "occurred_at": iso(occurred_at), "recent_messages": recent, "config_overrides": overrides or None,
                   "user_id": user_id}

        def run() -> None:
            with self._backend.write("knowledge background write", agent_id) as conn:
                queue_mod.insert_job(conn, self._tables, job_id=job_id, agent_id=agent_id, event_id=event_id,
                                     session_id=session_id, payload=payload, now=now,
                                     max_attempts=queue_mod.DEFAULT_MAX_ATTEMPTS, user_id=user_id)

        started = time.perf_counter()
        await self.runtime.in_thread(run)
        worker = self._worker
        if worker is not None:
            worker.wake()
        ms = (time.perf_counter() - started) * 1000.0
        return WriteResult(event_id=event_id, job_id=job_id, duration_ms=ms,
                           stats=OperationStats(steps=(StepTiming("enqueue", ms),), total_ms=ms))

    async def process_jobs_async(
        self,
        *,
        max_jobs: Optional[int] = None,
        lease_seconds: float = 300.0,
        backoff_base: float = 2.0,
        backoff_max: float = 300.0,
        worker_id: Optional[str] = None,
        _stop: Any = None,
    ) -> WorkerReport:
        """Process queued background writes until none is due (or ``max_jobs`` were taken):
        claim one, run the write pipeline on it, mark it done in the same transaction as its
        knowledge rows; a failed attempt is retried after ``min(backoff_base * 2^(n-1),
        backoff_max)`` seconds, up to the job's ``max_attempts``. The lease on a job
        (``lease_seconds``) is renewed every third of it while the job runs; a job whose
        worker died is claimed again once its lease has expired. Several workers (threads or
        processes) can run at once: no job is taken by two."""
        if not self.has_llm:
            raise ValueError("process_jobs extracts knowledge with an LLM and this KnowledgeMemory has none: pass llm=...")
        if max_jobs is not None and (isinstance(max_jobs, bool) or not isinstance(max_jobs, int) or max_jobs < 1):
            raise ValueError("max_jobs must be an int >= 1 or None")
        for name, value in (("lease_seconds", lease_seconds), ("backoff_base", backoff_base), ("backoff_max", backoff_max)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a number > 0")
        if worker_id is not None and (not isinstance(worker_id, str) or not worker_id.strip() or len(worker_id) > 128):
            raise ValueError("worker_id must be a non-empty string of at most 128 characters")
        wid = worker_id or queue_mod.new_worker_id()
        counts = {"done": 0, "retried": 0, "failed": 0, "already_done": 0, "lost": 0}
        ids: list[str] = []
        while max_jobs is None or len(ids) < max_jobs:
            if _stop is not None and _stop.stopping.is_set():
                break
            processed = await self._process_one(wid, float(lease_seconds), float(backoff_base), float(backoff_max))
            if processed is None:
                if _stop is None:
                    break
                await _stop.idle(_stop.poll_interval)
                continue
            outcome, job_id = processed
            counts[outcome] += 1
            ids.append(job_id)
        return WorkerReport(job_ids=tuple(ids), **counts)

    process_jobs = sync_method(process_jobs_async)

    def start_worker(self, *, poll_interval: float = 1.0, lease_seconds: float = 300.0, backoff_base: float = 2.0,
                     backoff_max: float = 300.0) -> None:
        """Run a worker on this instance's event loop until :meth:`stop_worker` (or
        :meth:`close`): it processes due jobs, then waits ``poll_interval`` seconds (a
        background write of this instance wakes it at once)."""
        if self._closed:
            raise StoreClosed("this KnowledgeMemory is closed; open a new one")
        if self._worker is not None:
            raise ValueError("a worker already runs on this KnowledgeMemory; call stop_worker() first")
        if not self.has_llm:
            raise ValueError("start_worker extracts knowledge with an LLM and this KnowledgeMemory has none: pass llm=...")
        if isinstance(poll_interval, bool) or not isinstance(poll_interval, (int, float)) or not poll_interval > 0:
            raise ValueError("poll_interval must be a number > 0")
        self._worker = queue_mod.BackgroundWorker(
            self._loop_runner, float(poll_interval),
            lambda stop: self.process_jobs_async(_stop=stop, lease_seconds=lease_seconds,
                                                 backoff_base=backoff_base, backoff_max=backoff_max))

    def stop_worker(self, timeout: Optional[float] = None) -> Optional[WorkerReport]:
        """Stop the in-process worker after its current job; returns what it did (None
        when no worker runs). Re-raises the error that stopped it, if any."""
        worker, self._worker = self._worker, None
        if worker is None:
            return None
        try:
            return worker.stop(timeout)
        except TimeoutError:
            self._worker = worker  # still running: keep the handle so stop_worker can be called again
            raise

    async def _process_one(self, wid: str, lease_s: float, base: float, cap: float) -> Optional[tuple[str, str]]:
        """(outcome, job id) of one claimed job, or None when none is due."""
        now = self._now()
        job = await self.runtime.in_thread(queue_mod.claim, self.runtime, wid, now, now + timedelta(seconds=lease_s))
        if job is None:
            return None
        beat = asyncio.ensure_future(self._heartbeat(job["id"], wid, lease_s))
        try:
            outcome = await self._run_job(job, wid, base, cap)
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        log.info("oramem.knowledge job %s attempt %s: %s", job["id"], job["attempts"], outcome)
        return outcome, job["id"]

    async def _heartbeat(self, job_id: str, wid: str, lease_s: float) -> None:
        while True:
            await asyncio.sleep(lease_s / 3.0)
            now = self._now()
            if not await self.runtime.in_thread(queue_mod.renew, self.runtime, job_id, wid, now + timedelta(seconds=lease_s), now):
                return

    async def _run_job(self, job: dict[str, Any], wid: str, base: float, cap: float) -> str:
        t = self._tables
        agent, eid, jid = job["agent_id"], job["event_id"], job["id"]
        payload = job["payload_json"] or {}
        now = self._now()

        def already() -> bool:
            with self._backend.read() as conn:
                return queue_mod.event_exists(conn, t, agent, eid)

        if await self.runtime.in_thread(already):
            done = await self.runtime.in_thread(queue_mod.finish_without_work, self.runtime, jid, wid, now,
                                         {"event_id": eid, "note": "already processed by an earlier attempt"})
            return "already_done" if done else "lost"
        try:
            # a crashed attempt may have left the event's store record (written before the
            # knowledge transaction): remove it so this attempt can write it again
            if await self.runtime.in_thread(self._store.get, "message", eid) is not None:
                await self.runtime.in_thread(self._store.delete, "message", eid)
            cfg = merge_config(merge_config(self.config, payload.get("config_overrides")),
                               {"on_extraction_failure": "rollback"})  # a failed attempt leaves nothing: it is retried
            run = WriteRun(
                self.runtime, agent_id=agent, message=payload["message"], speaker_name=payload["speaker_name"],
                source=payload["source"], session_id=payload["session_id"],
                occurred_at=parse_when(payload.get("occurred_at"), "occurred_at"),
                recent_messages=list(payload.get("recent_messages") or []), dry_run=False, cfg=cfg, now=now,
                verbose=False, event_id=eid, user_id=job.get("user_id"),
            )

            def on_commit(conn: Any) -> None:
                counts: dict[str, int] = {}
                for d in run.decisions:
                    counts[d.action] = counts.get(d.action, 0) + 1
                queue_mod.mark_done(conn, t, jid, wid, now, {"event_id": eid, "attempt": int(job["attempts"]),
                                                              "decisions": counts}, payload)

            run.on_commit = on_commit
            with operation_span(self._tracer_provider, "job", run, job_id=jid, attempt=int(job["attempts"])) as span:
                result = await self._run(run, event_mode="insert")
                finish_span(span, result.stats, result.success)
        except queue_mod.LostClaim:
            return "lost"
        except Exception as exc:  # noqa: BLE001 - every failure of an attempt is recorded and retried
            error = f"{type(exc).__name__}: {exc}"
        else:
            if result.success:
                return "done"
            error = result.error or "extraction failed"
        return await self.runtime.in_thread(queue_mod.fail_attempt, self.runtime, job, wid, error, self._now(), base, cap)

    async def job_status_async(self, agent_id: Optional[str] = None, *, errors: int = 5) -> JobQueueStatus:
        """Counts of the extraction queue by state, the oldest pending job, the last errors."""
        if agent_id is not None:
            validate_agent_id(agent_id)
        if isinstance(errors, bool) or not isinstance(errors, int) or errors < 0:
            raise ValueError("errors must be an int >= 0")
        now = self._now()
        return await self.runtime.read(lambda c: queue_mod.status(c, self._tables, agent_id, now, errors))

    job_status = sync_method(job_status_async)

    async def jobs_async(self, agent_id: Optional[str] = None, *, status: Optional[str] = None,
                         limit: int = 100) -> list[JobInfo]:
        """Queued background writes (``JobInfo``), oldest first."""
        if agent_id is not None:
            validate_agent_id(agent_id)
        if status is not None and status not in queue_mod.JOB_STATES:
            raise ValueError(f"status must be one of {', '.join(queue_mod.JOB_STATES)}, got {status!r}")
        _check_page(limit, 0)
        return await self.runtime.read(lambda c: queue_mod.list_jobs(c, self._tables, agent_id, status, limit))

    jobs = sync_method(jobs_async)

    async def get_job_async(self, job_id: str) -> Optional[JobInfo]:
        if not isinstance(job_id, str) or not job_id:
            raise ValueError("job_id must be a non-empty string")
        j = self._tables.job
        row = await self.runtime.read(lambda c: c.execute(sa.select(j).where(j.c.id == job_id)).mappings().first())
        return None if row is None else queue_mod.job_info(row)

    get_job = sync_method(get_job_async)

    async def retry_jobs_async(self, job_ids: Optional[list[str]] = None, *, agent_id: Optional[str] = None) -> int:
        """Put ``failed`` jobs (these ids, or all of the agent, or all) back to ``pending``
        with a fresh set of attempts; returns how many."""
        if job_ids is not None:
            if isinstance(job_ids, str) or not isinstance(job_ids, (list, tuple)) or not job_ids \
                    or not all(isinstance(x, str) and x for x in job_ids):
                raise TypeError("job_ids must be a non-empty list of job id strings, or None for every failed job")
        if agent_id is not None:
            validate_agent_id(agent_id)
        now = self._now()
        return await self.runtime.in_thread(queue_mod.retry, self.runtime, None if job_ids is None else list(job_ids), agent_id, now)

    retry_jobs = sync_method(retry_jobs_async)

    # -- deterministic writes (no LLM extraction) -----------------------------------------------
    async def add_knowledge_async(
        self,
        agent_id: str,
        *,
        entities: Optional[list[Any]] = None,
        facts: Optional[list[Any]] = None,
        relations: Optional[list[Any]] = None,
        user_id: Optional[str] = None,
        source: str = "api",
        session_id: Optional[str] = None,
        occurred_at: Any = None,
        config_overrides: Optional[dict[str, Any]] = None,
    ) -> WriteResult:
        """Store caller-given knowledge without LLM extraction, through the same entity
        resolution, reconciliation, bi-temporal upsert, invalidation cascade and indexing as
        :meth:`write`. ``entities``: ``{"name", "type"?, "aliases"?}``; ``facts``: ``{"subject",
        "fact", "subject_type"?, "attribute_key"?, "value"?, "valid_from"?, "confidence"?,
        "category"?, "ttl_days"?}``; ``relations``: ``{"source", "target", "rel_type",
        "source_type"?, "target_type"?}``. Without an LLM, reconciliation is rule-based: the same
        text on the subject confirms the current fact, the same ``attribute_key`` (supersede
        policy) replaces it, anything else is added. One event records the call (its text lists
        what was given; ``source`` is its source and speaker). Every item is validated before
        anything is stored. ``user_id``: whose knowledge it is (KC-3.7; None: the agent's shared
        knowledge)."""
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        if session_id is None:
            session_id = default_session_id(agent_id, user_id)
        when = _origin(source, session_id, occurred_at)
        reply = build_reply(entities, facts, relations)
        cfg = merge_config(self.config, config_overrides)
        if not self.has_llm:
            cfg = merge_config(cfg, _NO_LLM_CONFIG)
        cfg = merge_config(cfg, {"enable_emotion_tagging": False})
        text = event_text(reply)
        if len(text) > cfg.max_input_chars:
            raise ValueError(f"the call describes {len(text)} chars, over max_input_chars={cfg.max_input_chars}; split it")
        now = self._now()
        run = WriteRun(
            self.runtime, agent_id=agent_id, message=text, speaker_name=source, source=source, session_id=session_id,
            occurred_at=when, recent_messages=[], dry_run=False, cfg=cfg, now=now, verbose=False, user_id=user_id,
        )
        run.rule_based_reconcile = not self.has_llm
        return await self._run(run, event_mode="insert", prepared=reply)

    add_knowledge = sync_method(add_knowledge_async)

    async def add_entity_async(
        self, agent_id: str, name: str, *, type: str = "other", aliases: Optional[list[Any]] = None, source: str = "api",
        user_id: Optional[str] = None,
    ) -> WriteResult:
        """One entity, resolved against the agent's entities like an extracted one (see
        :meth:`add_knowledge_async`)."""
        entity: dict[str, Any] = {"name": name, "type": type}
        if aliases is not None:
            entity["aliases"] = aliases
        return await self.add_knowledge_async(agent_id, entities=[entity], source=source, user_id=user_id)

    add_entity = sync_method(add_entity_async)

    async def add_fact_async(
        self,
        agent_id: str,
        subject: str,
        fact: str,
        *,
        subject_type: Optional[str] = None,
        attribute_key: Optional[str] = None,
        value: Any = None,
        valid_from: Any = None,
        confidence: Optional[float] = None,
        source: str = "api",
        user_id: Optional[str] = None,
    ) -> WriteResult:
        """One fact about ``subject`` (see :meth:`add_knowledge_async`)."""
        item: dict[str, Any] = {"subject": subject, "fact": fact}
        for key, val in (("subject_type", subject_type), ("attribute_key", attribute_key), ("value", value),
                         ("valid_from", valid_from), ("confidence", confidence)):
            if val is not None:
                item[key] = val
        return await self.add_knowledge_async(agent_id, facts=[item], source=source, user_id=user_id)

    add_fact = sync_method(add_fact_async)

    async def add_relation_async(
        self, agent_id: str, source: str, target: str, rel_type: str, *, source_type: Optional[str] = None,
        target_type: Optional[str] = None, origin: str = "api", user_id: Optional[str] = None,
    ) -> WriteResult:
        """One relationship ``source —rel_type→ target`` (see :meth:`add_knowledge_async`);
        ``origin`` is the event's source."""
        item: dict[str, Any] = {"source": source, "target": target, "rel_type": rel_type}
        if source_type is not None:
            item["source_type"] = source_type
        if target_type is not None:
            item["target_type"] = target_type
        return await self.add_knowledge_async(agent_id, relations=[item], source=origin, user_id=user_id)

    add_relation = sync_method(add_relation_async)

    async def retract_fact_async(self, agent_id: str, fact_id: str, *, user_id: Optional[str] = None) -> bool:
        """Retract a current fact now: its ``valid_to`` becomes now, so it stays in
        :meth:`history` but leaves current reads and retrieval, and the relationships it
        evidences are closed with it (the invalidation cascade). ``False`` when the agent has no
        current fact with that id in the scope ``user_id`` (KC-3.7: a user retracts only her own
        facts; ``None``: the agent's shared facts). For erasure use :meth:`delete`."""
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        if not isinstance(fact_id, str) or not fact_id:
            raise ValueError("fact_id must be a non-empty string")
        now = self._now()
        t = self._tables

        def run() -> bool:
            with self._backend.lock():
                with self._backend.write("knowledge retract", agent_id) as conn:
                    if fact_id not in reads.current_facts_by_ids(conn, t, agent_id, [fact_id], now, user_id):
                        return False
                    conn.execute(sa.update(t.fact).where(reads.owned(t.fact, agent_id, user_id), t.fact.c.id == fact_id)
                                 .values(valid_to=now))
                    r = t.relationship
                    conn.execute(
                        sa.update(r)
                        .where(reads.owned(r, agent_id, user_id), r.c.evidence_fact_id == fact_id, r.c.valid_to.is_(None),
                               r.c.invalidated_at.is_(None))
                        .values(valid_to=now, updated_at=now)
                    )
                    meta = commit_mod.store_fact_metadata_for(conn, t, agent_id, [fact_id])
                    # the store record's metadata changes in the same transaction
                    for fid, md in meta.items():
                        self._store.update("fact", fid, metadata=md)
                return True

        return await self.runtime.in_thread(run)

    retract_fact = sync_method(retract_fact_async)

    async def _run(self, run: WriteRun, *, event_mode: str, prepared: Optional[dict[str, Any]] = None) -> WriteResult:
        """The write pipeline; ``prepared`` is a validated extraction reply given by the caller
        (deterministic writes): no classification or extraction call, the rest is the same."""
        started = time.perf_counter()
        if prepared is not None:
            run.classification = classify_input(run.message)
            run.strategy = select_strategy(run.classification)
            chunks = [Chunk(1, 1, run.message, None)]
        else:
            chunks = await run.classify()
        if run.event_vec is None:
            t_embed = time.perf_counter()
            run.event_vec = (await run.embed([run.message]))[0]
            run.step("embed_event", t_embed)
        emotion_task = asyncio.ensure_future(run.emotion_step())
        try:
            if prepared is not None:
                replies = [(chunks[0], prepared)]
            else:
                t_informed = time.perf_counter()
                existing = await run.informed_context()
                run.step("informed_context", t_informed)
                replies = await run.extract(chunks, existing)
        except ExtractionError as exc:
            await emotion_task
            return await self._extraction_failed(run, exc, event_mode, started)
        except BaseException:
            emotion_task.cancel()
            raise
        await emotion_task
        t_post = time.perf_counter()
        run.postprocess(replies)
        await run.dedup()
        run.step("post_process", t_post, facts=len(run.facts), entities=len(run.entities))
        await run.resolve_all()
        await self._decide(run)
        t_side = time.perf_counter()
        await self._side_vectors(run)
        run.step("side_vectors", t_side)
        result: Optional[WriteResult] = None
        for attempt in (1, 2):
            if run.dry_run:
                result = await self.runtime.in_thread(self._dry_run_result, run)
                break
            trace = self._trace(run, "ok")
            t_commit = time.perf_counter()
            try:
                rel_out = await self.runtime.in_thread(
                    commit_mod.commit_write, run, event_mode=event_mode, trace=trace,
                    with_event_record=event_mode == "insert",
                )
            except commit_mod.StaleDecisions as stale:
                if attempt == 2:
                    raise ConflictError(
                        f"write conflicted with a concurrent write on {len(stale.subject_keys)} subject(s); nothing stored"
                    ) from None
                await self._decide(run, only=stale.subject_keys)
                continue
            run.step("commit", t_commit, decisions=trace["decisions"])
            result = self._result(run, rel_out)
            break
        assert result is not None  # the second attempt either breaks with a result or raises
        result.duration_ms = (time.perf_counter() - started) * 1000.0
        result.stats = stats_of(run, result.duration_ms)
        return result

    async def _decide(self, run: WriteRun, only: Optional[set[str]] = None) -> None:
        """Step 6 plus relation evidence and mirror facts (which reconcile too)."""
        facts = run.facts if only is None else [f for f in run.facts if f.subject_key in only]
        kept = [] if only is None else [d for d in run.decisions if d.fact.subject_key not in only and not d.fact.mirror]
        for d in run.decisions:
            d.fact.new_id = None
        run.decisions = kept + await run.reconcile(facts)
        for r in run.relations:
            r.evidence = None
        missing = run.evidence()
        if missing:
            mirrors = run.mirror_facts(missing)
            mdec = await run.reconcile(mirrors)
            by_fact = {id(d.fact): d for d in mdec}
            run.decisions.extend(mdec)
            for r, f in zip(missing, mirrors):
                md = by_fact.get(id(f))
                if md is not None and md.action in ("ADD", "UPDATE", "NOOP"):
                    r.evidence = md
        run.assign_ids()

    async def _side_vectors(self, run: WriteRun) -> None:
        texts = [i.trigger_condition for i in run.intentions] + [o.content for o in run.observations]
        speaker = run.created.get(run.speaker_key)
        if speaker is not None and speaker.vec is None:
            texts.append(run.speaker)
        if not texts:
            return
        vecs = await run.embed(texts)
        n = len(run.intentions)
        for i, x in enumerate(run.intentions):
            x.vec = vecs[i]
        for j, o in enumerate(run.observations):
            o.vec = vecs[n + j]
        if speaker is not None and speaker.vec is None:
            speaker.vec = vecs[-1]

    def _trace(self, run: WriteRun, status: str, error: Optional[str] = None) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for d in run.decisions:
            counts[d.action] = counts.get(d.action, 0) + 1
        c, s = run.classification, run.strategy
        u = run.call.usage
        return {
            "status": status,
            "error": error,
            "classification": None if c is None else {"input_type": c.input_type.value, "char_count": c.char_count,
                                                      "section_count": c.section_count},
            "strategy": None if s is None else {"mode": s.mode.value, "estimated_chunks": s.estimated_chunks},
            "decisions": counts,
            "tokens": {"input": u.input_tokens, "output": u.output_tokens, "total": u.total_tokens},
            "warnings": list(run.warnings),
        }

    async def _extraction_failed(self, run: WriteRun, exc: ExtractionError, event_mode: str, started: float) -> WriteResult:
        error = f"ExtractionError: {exc}"
        result = WriteResult(
            classification=run.classification, strategy=run.strategy, emotion=run.emotion, success=False, error=error,
            warnings=list(run.warnings), tokens_used=run.call.usage, pipeline=run.trace,
        )
        keep = run.cfg.on_extraction_failure == "keep_event" and not run.dry_run
        if keep:
            trace = self._trace(run, "extraction_failed", error)
            await self.runtime.in_thread(commit_mod.commit_event_only, run, trace=trace, event_mode=event_mode)
            result.event_id = run.event_id
        result.duration_ms = (time.perf_counter() - started) * 1000.0
        result.stats = stats_of(run, result.duration_ms)
        return result

    def _fact_dict(self, d: Decision, fact_id: Optional[str], previous: Optional[str]) -> dict[str, Any]:
        f = d.fact
        return {
            "fact_id": fact_id,
            "entity_key": f.subject_key,
            "fact_text": f.fact,
            "attribute_key": f.attribute_key,
            "category": f.category,
            "previous_fact_id": previous,
        }

    def _fill(self, run: WriteRun, result: WriteResult, dry: bool) -> None:
        for d in run.decisions:
            new = None if dry else d.fact.new_id
            old = d.target["id"] if d.target is not None else None
            if d.action == "ADD" or (d.action == "UPDATE" and d.late):
                result.facts_added.append(self._fact_dict(d, new, None))
            elif d.action == "UPDATE":
                result.facts_updated.append(self._fact_dict(d, new, old))
            elif d.action == "NOOP":
                result.facts_unchanged.append(self._fact_dict(d, old, None))
            elif d.action == "DELETE":
                result.facts_deleted.append(self._fact_dict(d, old, None))
        result.entities_resolved = list(run.resolved_order)
        result.corrections = detect_corrections(run.decisions) if run.decisions else CorrectionResult()

    def _result(self, run: WriteRun, rel_out: list[dict[str, Any]]) -> WriteResult:
        result = WriteResult(
            event_id=run.event_id, classification=run.classification, strategy=run.strategy, emotion=run.emotion,
            relations=rel_out, intentions_created=list(getattr(run, "intentions_created", [])),
            observations_created=list(getattr(run, "observations_created", [])), pipeline=run.trace,
            tokens_used=run.call.usage, warnings=list(run.warnings), degraded=list(run.degraded),
        )
        self._fill(run, result, dry=False)
        return result

    def _dry_run_result(self, run: WriteRun) -> WriteResult:
        with self._backend.lock():
            with self._backend.read() as conn:
                commit_mod.recheck(run, conn)
                plan = commit_mod.build_plan(run, conn)
                rels = commit_mod.predict_relations(run, conn, plan.closing)
        result = WriteResult(
            event_id="", classification=run.classification, strategy=run.strategy, emotion=run.emotion,
            relations=[
                {"source_entity_key": x["rel"].source_key, "target_entity_key": x["rel"].target_key,
                 "rel_type": x["rel"].rel_type, "action": x["action"]}
                for x in rels
            ],
            intentions_created=[
                {"intention_id": None, "trigger_type": i.trigger_type, "trigger_condition": i.trigger_condition,
                 "intended_action": i.intended_action, "due_date": i.due_date}
                for i in run.intentions
            ],
            observations_created=[
                {"observation_id": None, "content": o.content, "topic": o.topic, "entities_mentioned": list(o.entity_keys)}
                for o in run.observations
            ],
            pipeline=run.trace, tokens_used=run.call.usage, warnings=list(run.warnings), degraded=list(run.degraded),
        )
        self._fill(run, result, dry=True)
        return result

    # -- retrieve (KC-5) ------------------------------------------------------------------------
    async def retrieve_async(
        self,
        agent_id: str,
        query: str,
        *,
        session_id: Optional[str] = None,
        entity_keys: Optional[list[Any]] = None,
        as_of: Any = None,
        known_at: Any = None,
        include_directives: bool = False,
        config_overrides: Optional[dict[str, Any]] = None,
        verbose: bool = False,
        user_id: Optional[str] = None,
    ) -> RetrieveResult:
        """Facts, events, intentions and a compressed context for ``query`` (KC-5). KC-3.8:
        ``user_id``'s knowledge plus the agent's shared knowledge, never another user's;
        ``None``: the shared knowledge only."""
        from ..trust import audit
        from .read.retrieve import RetrieveRun

        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
            raise ValueError("session_id must be a non-empty string or None")
        if entity_keys is not None:
            if isinstance(entity_keys, str) or not isinstance(entity_keys, (list, tuple, set, frozenset)):
                raise TypeError("entity_keys must be a list of str")
            if not all(isinstance(k, str) for k in entity_keys):
                raise TypeError("entity_keys must be a list of str")
        as_of_dt = parse_when(as_of, "as_of")
        known_dt = parse_when(known_at, "known_at")
        cfg = merge_config(self.config, config_overrides)
        now = self._now()
        if not query.strip():
            return RetrieveResult(warnings=["empty query"], config_effective=cfg.as_dict())
        run = RetrieveRun(
            self.runtime, agent_id=agent_id, query=query, session_id=session_id,
            entity_keys=list(entity_keys) if entity_keys is not None else None, as_of=as_of_dt, known_at=known_dt,
            include_directives=bool(include_directives), cfg=cfg, now=now, verbose=bool(verbose), user_id=user_id,
        )
        with operation_span(self._tracer_provider, "retrieve", run) as span:
            result = await run.run()
            finish_span(span, result.stats)
        result.audit_request_id = await audit.after_retrieve_async(self, agent_id, user_id, session_id, query, as_of_dt, known_dt, result)  # SC-16.2
        return result

    retrieve = sync_method(retrieve_async)

    async def emotional_trends_async(self, agent_id: str, *, user_id: Optional[str] = None) -> EmotionalTrendsResult:
        """KC-5.13: deterministic emotion statistics over the trend window; upserts an
        ``emotional_trend`` meta-observation."""
        from .read.procedural import emotional_trends

        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        now = self._now()
        cfg = self.config
        return await self._small_write(agent_id, lambda c: emotional_trends(self.runtime, c, agent_id, cfg, now, user_id))

    emotional_trends = sync_method(emotional_trends_async)

    async def directives_async(self, agent_id: str, *, persona_text: str = "", user_id: Optional[str] = None) -> DirectiveBlock:
        """KC-5.10: the behavioural directives block (one LLM call; cached per instance)."""
        from .read.procedural import directives_for

        validate_agent_id(agent_id)
        if not isinstance(persona_text, str):
            raise TypeError("persona_text must be a str")
        user_id = check_user_id(user_id)
        now = self._now()
        return await directives_for(self.runtime, agent_id, persona_text, self.config, now, user_id=user_id)

    directives = sync_method(directives_async)

    async def check_contradiction_async(self, agent_id: str, new_directive: str, *,
                                        user_id: Optional[str] = None) -> ContradictionResult:
        """KC-5.10: does ``new_directive`` contradict the nearest active behavioural preference?"""
        from .read.procedural import check_contradiction

        validate_agent_id(agent_id)
        if not isinstance(new_directive, str):
            raise TypeError("new_directive must be a str")
        if not new_directive.strip():
            raise ValueError("new_directive must not be empty")
        self._now()
        result, _ = await check_contradiction(self.runtime, agent_id, new_directive, self.config, user_id=check_user_id(user_id))
        return result

    check_contradiction = sync_method(check_contradiction_async)

    # -- background jobs (KC-6) -------------------------------------------------------------------
    async def _job(self, name: str, agent_id: str, result_type: type[T], user_id: Optional[str]) -> T:
        from .jobs import run as jobs

        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        now = self._now()
        # KC-6.0: a job works in one scope (the user's rows, or the shared rows): what it
        # writes (clusters, observations, summaries) cites that scope's rows only
        result = await getattr(jobs, name)(self.runtime, agent_id, self.config, now, user_id)
        if not isinstance(result, result_type):
            raise TypeError(f"job {name} returned {type(result).__name__}, not {result_type.__name__}")
        return result

    async def cluster_facts_async(self, agent_id: str, *, user_id: Optional[str] = None) -> ClusteringResult:
        """KC-6.2: one cluster per entity with enough recent current facts."""
        return await self._job("cluster_facts", agent_id, ClusteringResult, user_id)

    cluster_facts = sync_method(cluster_facts_async)

    async def detect_communities_async(self, agent_id: str, *, user_id: Optional[str] = None) -> CommunityDetectionResult:
        """KC-6.3: similar clusters of different entities become community themes."""
        return await self._job("detect_communities", agent_id, CommunityDetectionResult, user_id)

    detect_communities = sync_method(detect_communities_async)

    async def consolidate_async(self, agent_id: str, *, user_id: Optional[str] = None) -> ConsolidationResult:
        """KC-6.4: recent events and facts become meta-observations."""
        return await self._job("consolidate", agent_id, ConsolidationResult, user_id)

    consolidate = sync_method(consolidate_async)

    async def memify_async(self, agent_id: str, *, user_id: Optional[str] = None) -> MemifyResult:
        """KC-6.5: vitality, stale marking, edge reinforcement/decay, entity merges, intention expiry."""
        return await self._job("memify", agent_id, MemifyResult, user_id)

    memify = sync_method(memify_async)

    async def score_entity_importance_async(self, agent_id: str, *, user_id: Optional[str] = None) -> EntityImportanceResult:
        """KC-6.6: importance of every active entity from density, recency, retrievals and degree."""
        return await self._job("score_entity_importance", agent_id, EntityImportanceResult, user_id)

    score_entity_importance = sync_method(score_entity_importance_async)

    async def refresh_summaries_async(self, agent_id: str, *, user_id: Optional[str] = None) -> SummaryRefreshResult:
        """KC-6.7: stale summaries of the most important entities are rewritten."""
        return await self._job("refresh_summaries", agent_id, SummaryRefreshResult, user_id)

    refresh_summaries = sync_method(refresh_summaries_async)

    async def run_background_async(self, agent_id: str, jobs: Optional[list[Any]] = None, *,
                                   user_id: Optional[str] = None) -> BackgroundRunResult:
        """KC-6.1: entity_importance, summary_refresh, clustering, community_detection,
        consolidation, emotional_trends and memify, in that order (or the named subset);
        a failing job goes to ``errors`` and the rest still run. KC-6.0: in the scope
        ``user_id`` (None: the agent's shared knowledge); :meth:`scopes` lists the scopes."""
        from .jobs import run as jobs_mod
        from .read.procedural import emotional_trends

        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        names = list(jobs_mod.JOB_ORDER)
        if jobs is not None:
            if isinstance(jobs, str) or not all(isinstance(j, str) for j in jobs):
                raise TypeError("jobs must be a list of job names")
            unknown = sorted(set(jobs) - set(names))
            if unknown:
                raise ValueError(f"unknown job(s): {', '.join(unknown)}; known: {', '.join(names)}")
            names = [n for n in names if n in set(jobs)]
        now = self._now()
        cfg = self.config
        started = time.perf_counter()
        fns = {
            "entity_importance": jobs_mod.score_entity_importance,
            "summary_refresh": jobs_mod.refresh_summaries,
            "clustering": jobs_mod.cluster_facts,
            "community_detection": jobs_mod.detect_communities,
            "consolidation": jobs_mod.consolidate,
            "memify": jobs_mod.memify,
        }
        out = BackgroundRunResult()
        for name in names:
            try:
                if name == "emotional_trends":
                    out.results[name] = await self._small_write(
                        agent_id, lambda c: emotional_trends(self.runtime, c, agent_id, cfg, now, user_id))
                else:
                    out.results[name] = await fns[name](self.runtime, agent_id, cfg, now, user_id)
            except Exception as exc:  # noqa: BLE001 - KC-6.1: the rest still run
                log.warning("background job %s failed (%s)", name, type(exc).__name__)
                out.errors[name] = f"{type(exc).__name__}: {exc}"
        out.duration_ms = (time.perf_counter() - started) * 1000.0
        return out

    run_background = sync_method(run_background_async)

    async def scopes_async(self, agent_id: str) -> list[Optional[str]]:
        """KC-6.0: the scopes of the agent that hold knowledge: ``None`` (shared) first, then
        every user id with rows, sorted: run background jobs once per scope."""
        validate_agent_id(agent_id)
        t = self._tables

        def q(conn: sa.Connection) -> list[Optional[str]]:
            users: set[str] = set()
            for table in (t.event, t.fact, t.entity):
                users.update(r[0] for r in conn.execute(
                    sa.select(table.c.user_id).where(table.c.agent_id == agent_id, table.c.user_id.is_not(None)).distinct()))
            return [None, *sorted(users)]

        return await self.runtime.read(q)

    scopes = sync_method(scopes_async)

    # -- reads -----------------------------------------------------------------------------------
    def _detail(self, row: dict[str, Any], links: list[str], superseded_by: Optional[str], now: datetime) -> FactDetail:
        data = {k: v for k, v in row.items() if k != "embedding_vec"}
        data["fact_id"] = data.pop("id")
        return FactDetail(**data, entity_keys=links, status=reads.fact_status(row, now), superseded_by=superseded_by)

    def _details(self, conn: sa.Connection, agent_id: str, rows: list[dict[str, Any]], now: datetime) -> list[FactDetail]:
        t = self._tables
        ids = [r["id"] for r in rows]
        scoped = {(r["id"], r.get("user_id")) for r in rows}  # a successor is of the fact's own scope
        links = commit_mod.links_of(conn, t, agent_id, ids)
        succ: dict[str, str] = {}
        f = t.fact
        for batch in reads.chunked(ids):
            for sid, new, owner, owner_user in conn.execute(
                sa.select(f.c.supersedes_fact_id, f.c.id, f.c.agent_id, f.c.user_id).where(f.c.supersedes_fact_id.in_(batch))
                .order_by(f.c.created_at, f.c.id)
            ):
                if owner == agent_id and (sid, owner_user) in scoped:
                    succ.setdefault(sid, new)
        return [self._detail(r, links.get(r["id"], []), succ.get(r["id"]), now) for r in rows]

    def _fact_cols(self) -> list[Any]:
        return [c for c in self._tables.fact.c if c.name != "embedding_vec"]

    async def get_async(self, agent_id: str, fact_id: str, *, user_id: Optional[str] = None) -> Optional[FactDetail]:
        """A fact in any version or state; ``None`` for another agent's fact (KC-0.1) or another
        user's (KC-3.8)."""
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        now = self._now()
        f = self._tables.fact

        def q(conn: sa.Connection) -> Optional[FactDetail]:
            row = conn.execute(sa.select(*self._fact_cols()).where(reads.visible(f, agent_id, user_id), f.c.id == fact_id)).mappings().first()
            return None if row is None else self._details(conn, agent_id, [dict(row)], now)[0]

        return await self.runtime.read(q)

    get = sync_method(get_async)

    def _chain_ids(self, conn: sa.Connection, agent_id: str, fact_id: str, user_id: Optional[str],
                   *, own: bool = False) -> list[str]:
        """The version chain of a fact, within one scope: a chain never crosses users."""
        f = self._tables.fact
        start = conn.execute(sa.select(f.c.id, f.c.supersedes_fact_id, f.c.user_id).where(
            (reads.owned if own else reads.visible)(f, agent_id, user_id), f.c.id == fact_id)).first()
        if start is None:
            return []
        back: list[str] = [start[0]]
        prev = start[1]
        seen = {start[0]}
        scope = reads.owned(f, agent_id, start[2])
        while prev and prev not in seen:
            row = conn.execute(sa.select(f.c.id, f.c.supersedes_fact_id).where(scope, f.c.id == prev)).first()
            if row is None:
                break
            seen.add(row[0])
            back.append(row[0])
            prev = row[1]
        chain = list(reversed(back))
        frontier = [fact_id]
        while frontier:
            nxt = [
                r[0]
                for r in conn.execute(
                    sa.select(f.c.id, f.c.agent_id, f.c.user_id).where(f.c.supersedes_fact_id.in_(frontier))
                    .order_by(f.c.valid_from, f.c.created_at, f.c.id)
                )
                if r[0] not in seen and r[1] == agent_id and r[2] == start[2]
            ]
            seen.update(nxt)
            chain.extend(nxt)
            frontier = nxt
        return chain

    async def history_async(self, agent_id: str, fact_id: str, *, user_id: Optional[str] = None) -> list[FactDetail]:
        """The whole ``supersedes_fact_id`` chain through ``fact_id``, oldest first; empty for a
        fact ``user_id`` may not read (KC-3.8)."""
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        now = self._now()
        f = self._tables.fact

        def q(conn: sa.Connection) -> list[FactDetail]:
            ids = self._chain_ids(conn, agent_id, fact_id, user_id)
            rows = {
                r["id"]: dict(r)
                for r in conn.execute(sa.select(*self._fact_cols()).where(f.c.id.in_(ids))).mappings()
                if reads.row_visible(r, agent_id, user_id)
            }
            return self._details(conn, agent_id, [rows[i] for i in ids if i in rows], now)

        return await self.runtime.read(q)

    history = sync_method(history_async)

    async def get_all_async(
        self, agent_id: str, *, limit: int = 100, offset: int = 0, entity_keys: Optional[list[Any]] = None,
        include_inactive: bool = False, user_id: Optional[str] = None,
    ) -> list[FactDetail]:
        """Current facts incl. stale; ``include_inactive`` adds closed, invalidated and expired
        (``created_at DESC, id``). KC-3.8: ``user_id``'s facts plus the agent's shared facts;
        ``None``: the shared facts only."""
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        _check_page(limit, offset)
        now = self._now()
        t = self._tables
        f, lk = t.fact, t.link

        def q(conn: sa.Connection) -> list[FactDetail]:
            stmt = sa.select(*self._fact_cols()).where(reads.visible(f, agent_id, user_id))
            if not include_inactive:
                stmt = stmt.where(f.c.valid_to.is_(None), f.c.invalidated_at.is_(None))
            if entity_keys:
                sub = sa.select(lk.c.fact_id).where(reads.visible(lk, agent_id, user_id), lk.c.entity_key.in_(list(entity_keys)))
                stmt = stmt.where(f.c.id.in_(sub))
            stmt = stmt.order_by(sa.desc(f.c.created_at), f.c.id)
            rows = [dict(r) for r in conn.execute(stmt).mappings()]
            if not include_inactive:
                rows = [r for r in rows if not reads.is_expired(r, now)]
            return self._details(conn, agent_id, rows[offset : offset + limit], now)

        return await self.runtime.read(q)

    get_all = sync_method(get_all_async)

    async def entities_async(self, agent_id: str, *, limit: int = 100, offset: int = 0, include_inactive: bool = False,
                             user_id: Optional[str] = None) -> list[EntityDetail]:
        """Entities of the agent (KC-3.8: ``user_id``'s plus the shared ones; ``None``: shared only)."""
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        _check_page(limit, offset)
        t = self._tables
        e, a = t.entity, t.alias

        def q(conn: sa.Connection) -> list[EntityDetail]:
            stmt = sa.select(e).where(reads.visible(e, agent_id, user_id))
            if not include_inactive:
                stmt = stmt.where(e.c.is_active == True)  # noqa: E712
            rows = [dict(r) for r in conn.execute(stmt.order_by(sa.desc(e.c.last_seen_at), e.c.id).limit(limit).offset(offset)).mappings()]
            keys = sorted({r["canonical_key"] for r in rows})
            aliases: dict[tuple[Optional[str], str], list[str]] = {}
            for batch in reads.chunked(keys):
                for alias, key, owner in conn.execute(
                    sa.select(a.c.alias, a.c.canonical_entity_key, a.c.user_id)
                    .where(reads.visible(a, agent_id, user_id), a.c.canonical_entity_key.in_(batch)).order_by(a.c.alias)
                ):
                    aliases.setdefault((owner, key), []).append(alias)
            return [
                EntityDetail(
                    entity_id=r["id"], canonical_key=r["canonical_key"], display_name=r["display_name"],
                    entity_type=r["entity_type"], summary_text=r["summary_text"], fact_count=r["fact_count"],
                    importance_score=r["importance_score"], is_active=r["is_active"], first_seen_at=r["first_seen_at"],
                    last_seen_at=r["last_seen_at"], summary_refreshed_at=r["summary_refreshed_at"],
                    aliases=aliases.get((r["user_id"], r["canonical_key"]), []), user_id=r["user_id"],
                )
                for r in rows
            ]

        return await self.runtime.read(q)

    entities = sync_method(entities_async)

    async def relationships_async(self, agent_id: str, *, entity_key: Optional[str] = None, include_inactive: bool = False,
                                  user_id: Optional[str] = None) -> list[RelationshipDetail]:
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        r_ = self._tables.relationship

        def q(conn: sa.Connection) -> list[RelationshipDetail]:
            stmt = sa.select(r_).where(reads.visible(r_, agent_id, user_id))
            if entity_key is not None:
                stmt = stmt.where(sa.or_(r_.c.source_entity_key == entity_key, r_.c.target_entity_key == entity_key))
            if not include_inactive:
                stmt = stmt.where(r_.c.valid_to.is_(None), r_.c.invalidated_at.is_(None))
            stmt = stmt.order_by(r_.c.source_entity_key, r_.c.rel_type, r_.c.target_entity_key, r_.c.id)
            return [
                RelationshipDetail(**dict(r), is_active=r["valid_to"] is None and r["invalidated_at"] is None)
                for r in conn.execute(stmt).mappings()
            ]

        return await self.runtime.read(q)

    relationships = sync_method(relationships_async)

    async def intentions_async(self, agent_id: str, *, status: Optional[str] = None,
                               user_id: Optional[str] = None) -> list[IntentionDetail]:
        """Intentions (KC-3.8: ``user_id``'s plus the shared ones; ``None``: shared only)."""
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        if status is not None and status not in ("pending", "triggered", "fulfilled", "expired"):
            raise ValueError(f"status must be pending, triggered, fulfilled or expired, got {status!r}")
        it = self._tables.intention

        def q(conn: sa.Connection) -> list[IntentionDetail]:
            cols = [c for c in it.c if c.name != "trigger_embedding_vec"]
            stmt = sa.select(*cols).where(reads.visible(it, agent_id, user_id))
            if status is not None:
                stmt = stmt.where(it.c.status == status)
            stmt = stmt.order_by(it.c.created_at, it.c.id)
            return [IntentionDetail(**dict(r)) for r in conn.execute(stmt).mappings()]

        return await self.runtime.read(q)

    intentions = sync_method(intentions_async)

    # -- small writes ------------------------------------------------------------------------------
    async def _small_write(self, agent_id: str, fn: Callable[[sa.Connection], T]) -> T:
        def run() -> T:
            with self._backend.write("knowledge update", agent_id) as conn:
                return fn(conn)

        return await self.runtime.in_thread(run)

    async def fulfill_intention_async(self, agent_id: str, intention_id: str, outcome_note: Optional[str] = None, *,
                                      user_id: Optional[str] = None) -> bool:
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        if outcome_note is not None and not isinstance(outcome_note, str):
            raise TypeError("outcome_note must be a str or None")
        now = self._now()
        it = self._tables.intention
        return await self._small_write(
            agent_id,
            lambda c: c.execute(
                sa.update(it).where(reads.owned(it, agent_id, user_id), it.c.id == intention_id,
                                    it.c.status.in_(("pending", "triggered")))
                .values(status="fulfilled", fulfilled_at=now, outcome_note=outcome_note)
            ).rowcount == 1,
        )

    fulfill_intention = sync_method(fulfill_intention_async)

    async def confirm_fact_async(self, agent_id: str, fact_id: str, *, user_id: Optional[str] = None) -> bool:
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        now = self._now()
        f = self._tables.fact
        return await self._small_write(
            agent_id,
            lambda c: c.execute(
                sa.update(f).where(reads.owned(f, agent_id, user_id), f.c.id == fact_id)
                .values(needs_confirmation=False, last_confirmed_at=now)
            ).rowcount == 1,
        )

    confirm_fact = sync_method(confirm_fact_async)

    async def annotate_fact_async(self, agent_id: str, fact_id: str, text: str, *, user_id: Optional[str] = None) -> bool:
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        if not isinstance(text, str):
            raise TypeError("text must be a str")
        f = self._tables.fact
        return await self._small_write(
            agent_id,
            lambda c: c.execute(sa.update(f).where(reads.owned(f, agent_id, user_id), f.c.id == fact_id)
                                .values(agent_annotation=text)).rowcount == 1,
        )

    annotate_fact = sync_method(annotate_fact_async)

    # -- deletes (KC-3.6) ----------------------------------------------------------------------------
    async def delete_async(self, agent_id: str, fact_id: str, *, user_id: Optional[str] = None) -> bool:
        """Hard delete of the fact and its whole version chain, their links, store records
        and every relationship evidenced by any of them; only a fact of the scope ``user_id``
        (KC-3.7)."""
        validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        self._now()

        def run() -> bool:
            with self._backend.lock():
                with self._backend.read() as conn:
                    ids = self._chain_ids(conn, agent_id, fact_id, user_id, own=True)
                if not ids:
                    return False
                with self._backend.write("knowledge delete", agent_id) as conn:
                    self._purge_facts(conn, agent_id, ids)
                    for fid in ids:  # same transaction (the deletion hook finds nothing left)
                        self._store.delete("fact", fid)
                return True

        return await self.runtime.in_thread(run)

    delete = sync_method(delete_async)

    async def delete_all_async(self, agent_id: str) -> int:
        """Every row of the agent in all 11 tables plus its knowledge store records."""
        validate_agent_id(agent_id)
        self._now()
        t = self._tables

        def run() -> int:
            with self._backend.lock():
                with self._backend.read() as conn:
                    fact_ids = [r[0] for r in conn.execute(sa.select(t.fact.c.id).where(t.fact.c.agent_id == agent_id))]
                    event_ids = [r[0] for r in conn.execute(sa.select(t.event.c.id).where(t.event.c.agent_id == agent_id))]
                with self._backend.write("knowledge delete_all", agent_id) as conn:
                    for table in t.all_agent_tables():
                        conn.execute(sa.delete(table).where(table.c.agent_id == agent_id))
                    # queued messages of the agent go too (a pending one would bring it back)
                    conn.execute(sa.delete(t.job).where(t.job.c.agent_id == agent_id))
                    for fid in fact_ids:  # same transaction
                        self._store.delete("fact", fid)
                    for eid in event_ids:
                        self._store.delete("message", eid)
                return len(fact_ids)

        return await self.runtime.in_thread(run)

    delete_all = sync_method(delete_all_async)

    async def forget_async(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
                           names: Optional[list[Any]] = None) -> dict[str, int]:
        """Erase a user (her scope on every agent) or an agent from the store and the knowledge
        tables in one transaction (SC-8.6; what is erased: ``oramem.knowledge.deletes``, KC-3.10).
        A user is found by her id only, never by a name: ``names`` is no longer accepted (review
        finding 5: matching names erased other people and other tenants). Returns the rows
        erased per table."""
        self._now()
        if names is not None:
            raise ValueError(
                "forget no longer matches names (KC-3.10: a name may belong to another person or tenant); "
                "knowledge is erased by its user_id: write a user's messages with write(..., user_id=...) "
                "and call forget(user_id=...)"
            )
        if agent_id is not None:
            validate_agent_id(agent_id)
        user_id = check_user_id(user_id)
        return await self.runtime.in_thread(self._store.forget, user_id=user_id, agent_id=agent_id)

    forget = sync_method(forget_async)

    def _purge_facts(self, conn: sa.Connection, agent_id: Optional[str], ids: list[str]) -> None:
        """Remove facts with their links and evidenced edges; references stop naming them."""
        t = self._tables
        f, lk, r_, mo = t.fact, t.link, t.relationship, t.meta_observation
        keys: set[tuple[str, Optional[str], str]] = set()
        for batch in reads.chunked(sorted(set(ids))):
            cond_f: sa.ColumnElement[bool] = f.c.id.in_(batch)
            if agent_id is not None:
                cond_f = sa.and_(cond_f, f.c.agent_id == agent_id)
            owners = [r[0] for r in conn.execute(sa.select(f.c.agent_id).where(cond_f).distinct())]
            keys.update((a, u, k) for a, u, k in conn.execute(
                sa.select(lk.c.agent_id, lk.c.user_id, lk.c.entity_key).where(lk.c.fact_id.in_(batch))))
            conn.execute(sa.delete(lk).where(lk.c.fact_id.in_(batch)))
            conn.execute(sa.delete(r_).where(r_.c.evidence_fact_id.in_(batch)))
            conn.execute(sa.update(f).where(f.c.supersedes_fact_id.in_(batch)).values(supersedes_fact_id=None))
            conn.execute(sa.delete(f).where(cond_f))
            for owner in owners:
                rows = conn.execute(sa.select(mo.c.id, mo.c.supporting_fact_ids).where(mo.c.agent_id == owner)).all()
                gone = set(batch)
                for oid, sup in rows:
                    if sup and gone.intersection(sup):
                        conn.execute(sa.update(mo).where(mo.c.id == oid).values(supporting_fact_ids=[x for x in sup if x not in gone]))
        now = self._clock()
        by_scope: dict[tuple[str, Optional[str]], set[str]] = {}
        for a, u, k in keys:
            by_scope.setdefault((a, u), set()).add(k)
        for (a, u), ks in by_scope.items():
            commit_mod.recount(conn, t, a, ks, to_utc(now), u)

    def _deletion_hook(self, dbapi_conn: Any, event: Any) -> Any:
        """SC-8.5: store-side deletes, cascades and purges reach the knowledge tables in the
        same transaction (KC-3.6)."""
        if event.memory_store_id.upper() != self._tables.store_id:
            return
        t = self._tables
        if event.reason == "forget":
            with self._backend.hook_connection(dbapi_conn) as conn:
                return erasure.erase(conn, t, event, self._purge_facts)
        fact_ids = [rid for rtype, rid in event.records if rtype == "fact"]
        msg_ids = [rid for rtype, rid in event.records if rtype == "message"]
        with self._backend.hook_connection(dbapi_conn) as conn:
            if fact_ids:
                self._purge_facts(conn, None, fact_ids)
            ev = t.event
            if event.thread_ids:
                so, it = t.session_observation, t.intention
                for batch in reads.chunked(list(event.thread_ids)):
                    msg_ids.extend(r[0] for r in conn.execute(sa.select(ev.c.id).where(ev.c.session_id.in_(batch))))
                    # what was noted in the deleted conversation goes with it: its session
                    # observations, and the intentions extracted in it (source_context holds the
                    # whole session id, KC-3.7: another session sharing a prefix is not touched)
                    conn.execute(sa.delete(so).where(so.c.session_id.in_(batch)))
                    conn.execute(sa.delete(it).where(it.c.source_context.in_(batch)))
                    # the thread's queued background writes go too: processed later, they
                    # would bring the deleted conversation back (a worker holding one of them
                    # loses its lease check and rolls back)
                    conn.execute(sa.delete(t.job).where(t.job.c.session_id.in_(batch)))
            for batch in reads.chunked(sorted(set(msg_ids))):
                conn.execute(sa.update(t.fact).where(t.fact.c.source_event_id.in_(batch)).values(source_event_id=None))
                conn.execute(sa.delete(ev).where(ev.c.id.in_(batch)))
            for agent in event.agent_ids:
                for table in t.all_agent_tables():
                    conn.execute(sa.delete(table).where(table.c.agent_id == agent))
                conn.execute(sa.delete(t.job).where(t.job.c.agent_id == agent))


def _check_embedder_identity(store: Any, embedder: Any) -> None:
    """Defect 4 (KC-1.2): the knowledge layer writes explicit vectors into the store, so its
    embedder must be the one that built the store's vectors, not only of the same dimension."""
    from ..embedders.identity import describe_identity, how_to_open, identity_of, same_identity

    if embedder is store.embedder:
        return
    stored = getattr(store.settings, "embedder", None)
    if stored is None:
        stored = identity_of(store.embedder)
    if stored is None:
        return
    mine = identity_of(embedder)
    if mine is not None and not same_identity(stored, mine):
        raise ValueError(
            f"KnowledgeMemory embedder {describe_identity(mine)} differs from the embedder that built store "
            f"{store.memory_store_id!r} ({describe_identity(stored)}): its vectors would be written into another "
            f"vector space. Pass embedder=None to use the store's own embedder, or {how_to_open(stored)}"
        )


def _check_page(limit: Any, offset: Any) -> None:
    for name, v, lo in (("limit", limit, 1), ("offset", offset, 0)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name} must be an int")
        if v < lo:
            raise ValueError(f"{name} must be >= {lo}")
