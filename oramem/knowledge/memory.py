"""``KnowledgeMemory``: the public API of the knowledge layer (KC-1), a facade. Each method
checks what belongs to the call and hands the work to one module: ``opening.py`` (the
constructor), ``write/`` (write, add_*, reprocess, edits), ``read/`` (``read/entry.py``)
(retrieve, the plain and procedural reads), ``jobs/`` (background jobs, the extraction queue,
the worker's ``lifecycle.py``), ``deletes.py``; argument checks several methods share: ``checks.py``.

Decision (issue 25, at most ~500 lines): a method here is its signature, docstring and one call;
logic beyond that (worker lifecycle, shared checks, retrieve's run) lives in the module owning it.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any, Callable, Optional

from .._sync import sync_method
from ..trust.firewall import VERDICT_KEY
from ..types import NOT_SET
from . import checks, deletes
from .read import entry as read_entry
from .config import KnowledgeConfig
from .db.queries import check_page
from .jobs import run as jobs_mod
from .jobs import worker as worker_mod
from .jobs.lifecycle import Lifecycle, require_llm
from .opening import open_runtime
from .read import facts
from .write import edits
from .write.entry import manual_run, reprocess_run, write_message
from .write.run import run_write
from .types import (
    BackgroundRunResult, ClusteringResult, CommunityDetectionResult, ConsolidationResult, ContradictionResult,
    DirectiveBlock, EmotionalTrendsResult, EntityDetail, EntityImportanceResult, FactDetail, IntentionDetail,
    JobInfo, JobQueueStatus, MemifyResult, RelationshipDetail, RetrieveResult, SummaryRefreshResult, WorkerReport,
    WriteResult,
)

__all__ = ["KnowledgeMemory"]


class KnowledgeMemory:
    """Long-term knowledge over an open oramem store (KC-1.2).

    ``KnowledgeMemory(store, llm, embedder=None, *, config=None, schema_policy=NOT_SET, clock=None,
    tracer_provider=None)``.
    The knowledge tables live in the store's database under its ``memory_store_id``.
    """

    def __init__(
        self, store: Any, llm: Any, embedder: Any = None, *, config: Optional[KnowledgeConfig] = None,
        schema_policy: Any = NOT_SET, clock: Optional[Callable[[], datetime]] = None, tracer_provider: Any = None,
    ) -> None:
        self.runtime, self.config = open_runtime(store, llm, embedder, config=config, schema_policy=schema_policy,
                                                 clock=clock, tracer_provider=tracer_provider)
        self.has_llm = llm is not None
        self._life = Lifecycle(self.runtime, f"oramem-kg-{store.memory_store_id}")
        self._loop_runner = self._life.loop  # the sync twins' loop (``sync_method``)

    # the runtime's parts under the names the tests and ``trust.audit`` read (no second copy)
    _store = property(lambda self: self.runtime.store)
    _backend = property(lambda self: self.runtime.backend)
    _tables = property(lambda self: self.runtime.tables)
    _clock = property(lambda self: self.runtime.clock)

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        """Release this layer's connections (the store stays open; close it yourself)."""
        self._life.close()

    async def close_async(self) -> None:
        """:meth:`close` in a worker thread: stopping the in-process worker and joining this
        instance's loop and executor can take a while, and the caller's loop keeps running."""
        if not self.runtime.closed:
            await asyncio.to_thread(self.close)

    def __enter__(self) -> "KnowledgeMemory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _now(self) -> datetime:
        return self.runtime.now()

    # -- write ---------------------------------------------------------------------------------
    async def write_async(
        self, agent_id: str, message: str, speaker_name: str, *, user_id: Optional[str] = None, source: str = "api",
        session_id: Optional[str] = None, occurred_at: Any = None, recent_messages: Optional[list[Any]] = None,
        dry_run: bool = False, config_overrides: Optional[dict[str, Any]] = None, verbose: bool = False,
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
        return await write_message(
            self.runtime, self.config, self.has_llm, self._life.wake, agent_id, message, speaker_name, user_id=user_id,
            source=source, session_id=session_id, occurred_at=occurred_at, recent_messages=recent_messages,
            dry_run=dry_run, config_overrides=config_overrides, verbose=verbose, background=background)

    write = sync_method(write_async)

    async def reprocess_event_async(self, agent_id: str, event_id: str, *, config_overrides: Optional[dict[str, Any]] = None,
                                    user_id: Optional[str] = None) -> WriteResult:
        """Complete an event whose extraction failed (KC-7.3); only an event of the scope
        ``user_id`` (KC-3.7: the result quotes the message)."""
        run = await reprocess_run(self.runtime, self.config, agent_id, event_id, config_overrides, user_id)
        return await run_write(self.runtime, run, event_mode="update")

    reprocess_event = sync_method(reprocess_event_async)

    # -- background extraction (jobs/worker.py, jobs/queue.py, jobs/lifecycle.py) ---------------
    # The queue operations below are the operator's (red24): they take no user and act on every
    # user's queued writes (session ids, errors). No scoped surface (the MCP server, the
    # framework adapters) offers them; a layer acting for one user must not either.
    async def process_jobs_async(
        self, *, max_jobs: Optional[int] = None, lease_seconds: float = 300.0, backoff_base: float = 2.0,
        backoff_max: float = 300.0, worker_id: Optional[str] = None, _stop: Any = None,
    ) -> WorkerReport:
        """Process queued background writes until none is due (or ``max_jobs`` were taken):
        claim one, run the write pipeline on it, mark it done in the same transaction as its
        knowledge rows; a failed attempt is retried after ``min(backoff_base * 2^(n-1),
        backoff_max)`` seconds, up to the job's ``max_attempts``. The lease on a job
        (``lease_seconds``) is renewed every third of it while the job runs; a job whose
        worker died is claimed again once its lease has expired. Several workers (threads or
        processes) can run at once: no job is taken by two. An operator's call: every user's
        queued writes (see the note above)."""
        require_llm(self.has_llm, "process_jobs")
        return await worker_mod.process_jobs(
            self.runtime, self.config, max_jobs=max_jobs, lease_seconds=lease_seconds, backoff_base=backoff_base,
            backoff_max=backoff_max, worker_id=worker_id, stop=_stop)

    process_jobs = sync_method(process_jobs_async)

    def start_worker(self, *, poll_interval: float = 1.0, lease_seconds: float = 300.0, backoff_base: float = 2.0,
                     backoff_max: float = 300.0) -> None:
        """Run a worker on this instance's event loop until :meth:`stop_worker` (or
        :meth:`close`): it processes due jobs, then waits ``poll_interval`` seconds (a
        background write of this instance wakes it at once)."""
        self._life.start_worker(self.has_llm, poll_interval, lambda stop: self.process_jobs_async(
            _stop=stop, lease_seconds=lease_seconds, backoff_base=backoff_base, backoff_max=backoff_max))

    def stop_worker(self, timeout: Optional[float] = None) -> Optional[WorkerReport]:
        """Stop the in-process worker after its current job; returns what it did (None
        when no worker runs). Re-raises the error that stopped it, if any; ``TimeoutError``
        when its current job outlasts ``timeout`` (the worker keeps running: call again)."""
        return self._life.stop_worker(timeout)

    async def job_status_async(self, agent_id: Optional[str] = None, *, errors: int = 5) -> JobQueueStatus:
        """Counts of the extraction queue by state, the oldest pending job, the last errors.
        An operator's call: every user's queued writes, their errors included."""
        return await worker_mod.job_status(self.runtime, agent_id, errors)

    job_status = sync_method(job_status_async)

    async def jobs_async(self, agent_id: Optional[str] = None, *, status: Optional[str] = None,
                         limit: int = 100) -> list[JobInfo]:
        """Queued background writes (``JobInfo``), oldest first. An operator's call: every
        user's queued writes, their errors included."""
        return await worker_mod.list_jobs(self.runtime, agent_id, status, limit)

    jobs = sync_method(jobs_async)

    async def get_job_async(self, job_id: str) -> Optional[JobInfo]:
        """One queued background write by its id (``None`` when there is none), whoever's it
        is: an operator's call."""
        return await worker_mod.get_job(self.runtime, job_id)

    get_job = sync_method(get_job_async)

    async def retry_jobs_async(self, job_ids: Optional[list[str]] = None, *, agent_id: Optional[str] = None) -> int:
        """Put ``failed`` jobs (these ids, or all of the agent, or all) back to ``pending``
        with a fresh set of attempts; returns how many. An operator's call (every user's jobs)."""
        return await worker_mod.retry_jobs(self.runtime, job_ids, agent_id)

    retry_jobs = sync_method(retry_jobs_async)

    # -- deterministic writes (no LLM extraction) -----------------------------------------------
    async def add_knowledge_async(
        self, agent_id: str, *, entities: Optional[list[Any]] = None, facts: Optional[list[Any]] = None,
        relations: Optional[list[Any]] = None, user_id: Optional[str] = None, source: str = "api",
        session_id: Optional[str] = None, occurred_at: Any = None, config_overrides: Optional[dict[str, Any]] = None,
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
        policy = await self.runtime.in_thread(self.runtime.store.get_firewall)
        run, reply, screened = manual_run(
            self.runtime, self.config, self.has_llm, agent_id, entities=entities, facts=facts,
            relations=relations, user_id=user_id, source=source, session_id=session_id, occurred_at=occurred_at,
            config_overrides=config_overrides, policy=policy)
        verdict = None if screened is None else (screened.metadata or {})[VERDICT_KEY]
        if screened is not None and screened.verdict == "flagged":  # SC-15.6, as a flagged message
            return WriteResult(firewall=verdict, warnings=[
                "the store's firewall flagged these items (" + ", ".join(screened.findings)
                + "): they were not stored"])
        result = await run_write(self.runtime, run, event_mode="insert", prepared=reply)
        result.firewall = verdict
        return result

    add_knowledge = sync_method(add_knowledge_async)

    async def add_entity_async(
        self, agent_id: str, name: str, *, type: str = "other", aliases: Optional[list[Any]] = None,
        source: str = "api", user_id: Optional[str] = None,
    ) -> WriteResult:
        """One entity, resolved against the agent's entities like an extracted one (see
        :meth:`add_knowledge_async`)."""
        entity = {"name": name, "type": type, **_given(aliases=aliases)}
        return await self.add_knowledge_async(agent_id, entities=[entity], source=source, user_id=user_id)

    add_entity = sync_method(add_entity_async)

    async def add_fact_async(
        self, agent_id: str, subject: str, fact: str, *, subject_type: Optional[str] = None,
        attribute_key: Optional[str] = None, value: Any = None, valid_from: Any = None,
        confidence: Optional[float] = None, source: str = "api", user_id: Optional[str] = None,
    ) -> WriteResult:
        """One fact about ``subject`` (see :meth:`add_knowledge_async`)."""
        item = {"subject": subject, "fact": fact, **_given(subject_type=subject_type, attribute_key=attribute_key,
                                                             value=value, valid_from=valid_from, confidence=confidence)}
        return await self.add_knowledge_async(agent_id, facts=[item], source=source, user_id=user_id)

    add_fact = sync_method(add_fact_async)

    async def add_relation_async(
        self, agent_id: str, source: str, target: str, rel_type: str, *, source_type: Optional[str] = None,
        target_type: Optional[str] = None, origin: str = "api", user_id: Optional[str] = None,
    ) -> WriteResult:
        """One relationship ``source —rel_type→ target`` (see :meth:`add_knowledge_async`);
        ``origin`` is the event's source."""
        item = {"source": source, "target": target, "rel_type": rel_type,
                **_given(source_type=source_type, target_type=target_type)}
        return await self.add_knowledge_async(agent_id, relations=[item], source=origin, user_id=user_id)

    add_relation = sync_method(add_relation_async)

    async def retract_fact_async(self, agent_id: str, fact_id: str, *, user_id: Optional[str] = None) -> bool:
        """Retract a current fact now: its ``valid_to`` becomes now, so it stays in
        :meth:`history` but leaves current reads and retrieval, and the relationships it
        evidences are closed with it (the invalidation cascade). ``False`` when the agent has no
        current fact with that id in the scope ``user_id`` (KC-3.7: a user retracts only her own
        facts; ``None``: the agent's shared facts). For erasure use :meth:`delete`."""
        user_id = checks.scope(agent_id, user_id)
        checks.row_id(fact_id, "fact_id", checks.FACT_ID_HINT)
        now = self._now()
        return await self.runtime.in_thread(edits.retract_fact, self.runtime, agent_id, fact_id, user_id, now)

    retract_fact = sync_method(retract_fact_async)

    # -- retrieve (KC-5) ------------------------------------------------------------------------
    async def retrieve_async(
        self, agent_id: str, query: str, *, session_id: Optional[str] = None, entity_keys: Optional[list[Any]] = None,
        as_of: Any = None, known_at: Any = None, include_directives: bool = False,
        config_overrides: Optional[dict[str, Any]] = None, verbose: bool = False, user_id: Optional[str] = None,
    ) -> RetrieveResult:
        """Facts, events, intentions and a compressed context for ``query`` (KC-5). KC-3.8:
        ``user_id``'s knowledge plus the agent's shared knowledge, never another user's;
        ``None``: the shared knowledge only. A query over ``oramem.knowledge.MAX_QUERY_CHARS`` (20,000) characters
        is a ``ValueError`` (KC-5.1)."""
        return await read_entry.retrieve(
            self.runtime, self.config, self, agent_id, query, session_id=session_id, entity_keys=entity_keys, as_of=as_of,
            known_at=known_at, include_directives=include_directives, config_overrides=config_overrides,
            verbose=verbose, user_id=user_id)

    retrieve = sync_method(retrieve_async)

    async def emotional_trends_async(self, agent_id: str, *, user_id: Optional[str] = None) -> EmotionalTrendsResult:
        """KC-5.13: deterministic emotion statistics over the trend window; upserts an
        ``emotional_trend`` meta-observation."""
        return await read_entry.emotional_trends(self.runtime, self.config, agent_id, user_id)

    emotional_trends = sync_method(emotional_trends_async)

    async def directives_async(self, agent_id: str, *, persona_text: str = "", user_id: Optional[str] = None) -> DirectiveBlock:
        """KC-5.10: the behavioural directives block (one LLM call; cached per instance)."""
        return await read_entry.directives(self.runtime, self.config, agent_id, persona_text, user_id)

    directives = sync_method(directives_async)

    async def check_contradiction_async(self, agent_id: str, new_directive: str, *,
                                        user_id: Optional[str] = None) -> ContradictionResult:
        """KC-5.10: does ``new_directive`` contradict the nearest active behavioural preference?"""
        return await read_entry.check_contradiction(self.runtime, self.config, agent_id, new_directive, user_id)

    check_contradiction = sync_method(check_contradiction_async)

    # -- background jobs (KC-6; each in the one scope ``user_id``, KC-6.0) ---------------------------

    async def cluster_facts_async(self, agent_id: str, *, user_id: Optional[str] = None) -> ClusteringResult:
        """KC-6.2: one cluster per entity with enough recent current facts."""
        return await jobs_mod.in_scope(self.runtime, self.config, jobs_mod.cluster_facts, agent_id, user_id)

    cluster_facts = sync_method(cluster_facts_async)

    async def detect_communities_async(self, agent_id: str, *, user_id: Optional[str] = None) -> CommunityDetectionResult:
        """KC-6.3: similar clusters of different entities become community themes."""
        return await jobs_mod.in_scope(self.runtime, self.config, jobs_mod.detect_communities, agent_id, user_id)

    detect_communities = sync_method(detect_communities_async)

    async def consolidate_async(self, agent_id: str, *, user_id: Optional[str] = None) -> ConsolidationResult:
        """KC-6.4: recent events and facts become meta-observations."""
        return await jobs_mod.in_scope(self.runtime, self.config, jobs_mod.consolidate, agent_id, user_id)

    consolidate = sync_method(consolidate_async)

    async def memify_async(self, agent_id: str, *, user_id: Optional[str] = None) -> MemifyResult:
        """KC-6.5: vitality, stale marking, edge reinforcement/decay, entity merges, intention expiry."""
        return await jobs_mod.in_scope(self.runtime, self.config, jobs_mod.memify, agent_id, user_id)

    memify = sync_method(memify_async)

    async def score_entity_importance_async(self, agent_id: str, *, user_id: Optional[str] = None) -> EntityImportanceResult:
        """KC-6.6: importance of every active entity from density, recency, retrievals and degree."""
        return await jobs_mod.in_scope(self.runtime, self.config, jobs_mod.score_entity_importance, agent_id, user_id)

    score_entity_importance = sync_method(score_entity_importance_async)

    async def refresh_summaries_async(self, agent_id: str, *, user_id: Optional[str] = None) -> SummaryRefreshResult:
        """KC-6.7: stale summaries of the most important entities are rewritten."""
        return await jobs_mod.in_scope(self.runtime, self.config, jobs_mod.refresh_summaries, agent_id, user_id)

    refresh_summaries = sync_method(refresh_summaries_async)

    async def run_background_async(self, agent_id: str, jobs: Optional[list[Any]] = None, *,
                                   user_id: Optional[str] = None) -> BackgroundRunResult:
        """KC-6.1: entity_importance, summary_refresh, clustering, community_detection,
        consolidation, emotional_trends and memify, in that order (or the named subset);
        a failing job goes to ``errors`` and the rest still run. KC-6.0: in the scope
        ``user_id`` (None: the agent's shared knowledge); :meth:`scopes` lists the scopes."""
        user_id = checks.scope(agent_id, user_id)
        names = jobs_mod.job_names(jobs)
        return await jobs_mod.run_background(self.runtime, agent_id, names, self.config, self._now(), user_id)

    run_background = sync_method(run_background_async)

    async def scopes_async(self, agent_id: str) -> list[Optional[str]]:
        """KC-6.0: the scopes of the agent that hold knowledge: ``None`` (shared) first, then
        every user id with rows, sorted: run background jobs once per scope. An operator's call:
        it names every user of the agent (red24); no scoped surface offers it."""
        checks.scope(agent_id, None)
        return await self.runtime.read(lambda c: facts.scopes(c, self.runtime.tables, agent_id))

    scopes = sync_method(scopes_async)

    # -- reads -----------------------------------------------------------------------------------
    async def get_async(self, agent_id: str, fact_id: str, *, user_id: Optional[str] = None) -> Optional[FactDetail]:
        """A fact in any version or state; ``None`` for another agent's fact (KC-0.1) or another
        user's (KC-3.8)."""
        user_id, now = checks.scoped(self.runtime, agent_id, user_id)
        checks.row_id(fact_id, "fact_id", checks.FACT_ID_HINT)
        return await self.runtime.read(lambda c: facts.get_fact(c, self.runtime.tables, agent_id, fact_id, user_id, now))

    get = sync_method(get_async)

    async def history_async(self, agent_id: str, fact_id: str, *, user_id: Optional[str] = None) -> list[FactDetail]:
        """The whole ``supersedes_fact_id`` chain through ``fact_id``, oldest first; empty for a
        fact ``user_id`` may not read (KC-3.8)."""
        user_id, now = checks.scoped(self.runtime, agent_id, user_id)
        checks.row_id(fact_id, "fact_id", checks.FACT_ID_HINT)
        return await self.runtime.read(lambda c: facts.history(c, self.runtime.tables, agent_id, fact_id, user_id, now))

    history = sync_method(history_async)

    async def get_all_async(
        self, agent_id: str, *, limit: int = 100, offset: int = 0, entity_keys: Optional[list[Any]] = None,
        include_inactive: bool = False, user_id: Optional[str] = None,
    ) -> list[FactDetail]:
        """Current facts incl. stale; ``include_inactive`` adds closed, invalidated and expired
        (``created_at DESC, id``). KC-3.8: ``user_id``'s facts plus the agent's shared facts;
        ``None``: the shared facts only."""
        user_id = checks.scope(agent_id, user_id)
        check_page(limit, offset)
        now = self._now()
        return await self.runtime.read(lambda c: facts.all_facts(
            c, self.runtime.tables, agent_id, limit=limit, offset=offset, entity_keys=entity_keys,
            include_inactive=include_inactive, user_id=user_id, now=now))

    get_all = sync_method(get_all_async)

    async def entities_async(self, agent_id: str, *, limit: int = 100, offset: int = 0, include_inactive: bool = False,
                             user_id: Optional[str] = None) -> list[EntityDetail]:
        """Entities of the agent (KC-3.8: ``user_id``'s plus the shared ones; ``None``: shared only)."""
        user_id = checks.scope(agent_id, user_id)
        check_page(limit, offset)
        now = self._now()
        return await self.runtime.read(lambda c: facts.entities(
            c, self.runtime.tables, agent_id, limit=limit, offset=offset, include_inactive=include_inactive, user_id=user_id,
            now=now))

    entities = sync_method(entities_async)

    async def relationships_async(self, agent_id: str, *, entity_key: Optional[str] = None, include_inactive: bool = False,
                                  user_id: Optional[str] = None) -> list[RelationshipDetail]:
        """Relationships of the agent, of ``entity_key`` if given (KC-3.8 as :meth:`entities`)."""
        user_id = checks.scope(agent_id, user_id)
        return await self.runtime.read(lambda c: facts.relationships(
            c, self.runtime.tables, agent_id, entity_key=entity_key, include_inactive=include_inactive, user_id=user_id))

    relationships = sync_method(relationships_async)

    async def intentions_async(self, agent_id: str, *, status: Optional[str] = None,
                               user_id: Optional[str] = None) -> list[IntentionDetail]:
        """Intentions (KC-3.8: ``user_id``'s plus the shared ones; ``None``: shared only)."""
        user_id = checks.scope(agent_id, user_id)
        checks.intention_status(status)
        return await self.runtime.read(lambda c: facts.intentions(c, self.runtime.tables, agent_id, status=status, user_id=user_id))

    intentions = sync_method(intentions_async)

    # -- small writes ------------------------------------------------------------------------------
    async def fulfill_intention_async(self, agent_id: str, intention_id: str, outcome_note: Optional[str] = None, *,
                                      user_id: Optional[str] = None) -> bool:
        """A pending or triggered intention becomes ``fulfilled`` (with ``outcome_note``); only
        one of the scope ``user_id`` (KC-3.7). ``False`` when there is no such intention."""
        user_id = checks.scope(agent_id, user_id)
        checks.row_id(intention_id, "intention_id", "the intention's id (IntentionDetail.id, as intentions lists it)")
        checks.text(outcome_note, "outcome_note", optional=True)
        now = self._now()
        return await edits.fulfill_intention(self.runtime, agent_id, intention_id, outcome_note, user_id, now)

    fulfill_intention = sync_method(fulfill_intention_async)

    async def confirm_fact_async(self, agent_id: str, fact_id: str, *, user_id: Optional[str] = None) -> bool:
        """The fact no longer needs confirmation; ``last_confirmed_at`` becomes now (scope and
        ``False`` as :meth:`fulfill_intention`)."""
        user_id, now = checks.scoped(self.runtime, agent_id, user_id)
        checks.row_id(fact_id, "fact_id", checks.FACT_ID_HINT)
        return await edits.confirm_fact(self.runtime, agent_id, fact_id, user_id, now)

    confirm_fact = sync_method(confirm_fact_async)

    async def annotate_fact_async(self, agent_id: str, fact_id: str, text: str, *, user_id: Optional[str] = None) -> bool:
        """``text`` becomes the fact's ``agent_annotation`` (scope and ``False`` as :meth:`fulfill_intention`)."""
        user_id = checks.scope(agent_id, user_id)
        checks.row_id(fact_id, "fact_id", checks.FACT_ID_HINT)
        checks.text(text, "text")
        return await edits.annotate_fact(self.runtime, agent_id, fact_id, text, user_id)

    annotate_fact = sync_method(annotate_fact_async)

    # -- deletes (KC-3.6) ----------------------------------------------------------------------------
    async def delete_async(self, agent_id: str, fact_id: str, *, user_id: Optional[str] = None) -> bool:
        """Hard delete of the fact and its whole version chain, their links, store records
        and every relationship evidenced by any of them; only a fact of the scope ``user_id``
        (KC-3.7)."""
        return await deletes.delete_fact_async(self.runtime, agent_id, fact_id, user_id)

    delete = sync_method(delete_async)

    async def delete_all_async(self, agent_id: str) -> int:
        """Every row of the agent in all 11 knowledge tables, its queued background writes and
        its knowledge store records, in one transaction; returns how many facts it removed. A
        delete, not an erasure (KC-3.6): no receipt, and a write in flight that commits after it
        is stored; to erase the agent use :meth:`forget` with ``agent_id``."""
        return await deletes.delete_agent_async(self.runtime, agent_id)

    delete_all = sync_method(delete_all_async)

    async def forget_async(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
                           names: Optional[list[Any]] = None) -> dict[str, int]:
        """Erase a user (her scope on every agent) or an agent from the store and the knowledge
        tables in one transaction (SC-8.6; what is erased: ``oramem.knowledge.deletes``, KC-3.10).
        A user is found by her id only, never by a name: ``names`` is no longer accepted (review
        finding 5: matching names erased other people and other tenants). Returns the rows
        erased per table; ``ValueError`` when ``names`` is given."""
        return await deletes.forget_async(self.runtime, user_id, agent_id, names)

    forget = sync_method(forget_async)


def _given(**items: Any) -> dict[str, Any]:
    """The optional items of an ``add_*`` call that were given (not None)."""
    return {k: v for k, v in items.items() if v is not None}
