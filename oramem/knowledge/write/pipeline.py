"""The write pipeline, steps 1-6 (KC-4.1 to KC-4.18): classify, emotion, extract,
post-process and dedup, resolve entities, reconcile. These steps only read; the commit
phase (``commit.py``) applies the result in one transaction."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
import zoneinfo
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

import numpy as np
import sqlalchemy as sa

from ..runtime import KnowledgeRuntime
from ... import timeutil
from ..db import queries as reads
from .classify import Chunk, classify_input, select_strategy, split_chunks
from ..config import KnowledgeConfig
from ..llm.emotion import tag_emotion_detailed
from ..errors import EmbeddingError, ExtractionError, LLMError
from ..model import Decision, NewEntity, XEntity, XFact, XIntention, XObservation, XRelation, new_id
from .relations import IDENTITY_REL_TYPES, normalize_rel_type, rel_words
from ..llm.tasks import TaskCall
from ..text import (
    canonical_entity_type,
    contains_words,
    entity_key,
    estimate_tokens,
    ngrams,
    norm,
    slug,
    to_utc,
    word_tokens,
)
from ..observe import record_step
from ..types import CorrectionResult, ExtractionStrategy, InputClassification, PipelineTrace, StepTiming

T = TypeVar("T")

__all__ = ["WriteRun", "SELF_REFERENCES", "canonical_attribute_key", "detect_corrections", "is_nickname"]

if TYPE_CHECKING:
    from ..db.backend import Backend
    from ..db.schema import KGTables

log = logging.getLogger("oramem.knowledge")

SELF_REFERENCES = frozenset({"user", "me", "i", "myself", "eu", "mim", "yo", "mi", "je", "moi", "ich"})
_ATTR_RE = re.compile(r"^[a-z][a-z0-9_.]*[a-z0-9]$")
MAX_FACT_CHARS = 2000


# ----------------------------------------------------------------------------- pure helpers
def canonical_attribute_key(raw: Any, aliases: dict[str, Any]) -> Optional[str]:
    """KC-4.16: ``attribute_aliases`` first, then ``norm`` with spaces and ``-`` → ``_``;
    must match ``^[a-z][a-z0-9_.]*[a-z0-9]$`` and be at most 64 chars, else None."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    key = aliases.get(raw, aliases.get(norm(raw), raw))
    key = re.sub(r"[\s\-]+", "_", norm(key))
    if len(key) > 64 or not _ATTR_RE.match(key):
        return None
    return key


def is_nickname(a: str, b: str) -> bool:
    """KC-4.9 phase 1.5: the shorter name equals the longer one's leading word(s), or is a
    ≥3-char prefix of its first word (Ana/Ana Souza, Rob/Robert)."""
    wa, wb = norm(a).split(), norm(b).split()
    if not wa or not wb or wa == wb:
        return False
    short, long_ = (wa, wb) if (len(" ".join(wa)), len(wa)) < (len(" ".join(wb)), len(wb)) else (wb, wa)
    if len(short) < len(long_) and long_[: len(short)] == short:
        return True
    return len(short) == 1 and len(short[0]) >= 3 and long_[0].startswith(short[0]) and long_[0] != short[0]


def detect_corrections(decisions: list[Any]) -> CorrectionResult:
    """KC-4.13: applied UPDATEs of kind ``correction`` → ``CorrectionResult``.

    Accepts pipeline decisions or plain dicts with ``action``, ``update_kind``,
    ``attribute_key``, ``entity_key`` and ``existing_fact_id``."""

    keys: list[str] = []
    ids: list[str] = []
    for d in decisions:
        if isinstance(d, Decision):
            action, kind = d.action, d.kind
            attr, ekey = d.fact.attribute_key, d.fact.subject_key
            old = d.target["id"] if d.target else None
            if d.late:
                continue
        else:
            action, kind = d.get("action"), d.get("update_kind", "change")
            attr, ekey, old = d.get("attribute_key"), d.get("entity_key"), d.get("existing_fact_id")
        if action != "UPDATE" or kind != "correction" or old is None:
            continue
        k = attr or ekey
        if k not in keys:
            keys.append(k)
        ids.append(old)
    return CorrectionResult(len(ids), keys, ids)


def _clamp01(x: float) -> float:
    return 0.0 if x < 0 else 1.0 if x > 1 else x


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return float(value)


def _parse_dt(value: Any, tz: zoneinfo.ZoneInfo) -> Optional[datetime]:
    """ISO date or datetime from the LLM; naive values are in the configured timezone."""
    if not isinstance(value, str) or not value.strip():
        return None
    moment = timeutil.try_parse_iso(value, naive=tz)
    return None if moment is None else to_utc(moment)


def infer_value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, (dict, list)):
        return "json"
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value.strip())
            return "date"
        except ValueError:
            return "string"
    return "string"


# ----------------------------------------------------------------------------- the run
@dataclass(eq=False, slots=True)
class WriteState:
    """Everything one ``write`` (or ``reprocess_event``) carries between its steps, declared
    in one place (issue 25 item 1): the inputs, then each step's products. The steps and the
    commit step (commit.py) read and set these fields only: the class has slots, so setting
    an undeclared attribute is an ``AttributeError``, not a new hidden field."""

    rt: KnowledgeRuntime
    #: KC-3.7: the scope of this write: the user's rows, or (None) the agent's shared rows
    user_id: Optional[str]
    t: KGTables
    backend: Backend
    agent_id: str
    message: str
    speaker: str
    speaker_key: str
    source: str
    session_id: str
    occurred_at: Optional[datetime]
    t_event: datetime
    recent_messages: list[str]
    dry_run: bool
    cfg: KnowledgeConfig
    now: datetime
    verbose: bool
    tz: zoneinfo.ZoneInfo
    call: TaskCall
    reprocess_event_id: Optional[str]
    event_id: str
    trace: Optional[PipelineTrace]
    rule_based_reconcile: bool = False  # deterministic writes without an LLM
    degraded: list[str] = field(default_factory=list)  # KC-4.22: LLM steps that fell back to rules
    #: called with the connection at the end of the knowledge transaction (queue.py)
    on_commit: Optional[Callable[[Any], None]] = None
    timings: list[StepTiming] = field(default_factory=list)  # every step's latency (OperationStats)
    warnings: list[str] = field(default_factory=list)
    tracer: Any = None  # an OpenTelemetry tracer while the operation's span records
    # products of the steps
    classification: Optional[InputClassification] = None
    strategy: Optional[ExtractionStrategy] = None
    # set by the commit step (commit.py): what it created, and its plan (a commit.Plan)
    intentions_created: list[dict[str, Any]] = field(default_factory=list)
    observations_created: list[dict[str, Any]] = field(default_factory=list)
    plan: Any = None
    emotion: Optional[dict[str, Any]] = None
    event_vec: Optional[np.ndarray] = None
    extraction_error: Optional[str] = None
    entities: list[XEntity] = field(default_factory=list)
    facts: list[XFact] = field(default_factory=list)
    relations: list[XRelation] = field(default_factory=list)
    intentions: list[XIntention] = field(default_factory=list)
    observations: list[XObservation] = field(default_factory=list)
    updated_summaries: dict[str, str] = field(default_factory=dict)
    identity_aliases: list[tuple[str, str]] = field(default_factory=list)  # (alias name, canonical name)
    _alias_to_name: dict[str, str] = field(default_factory=dict)  # postprocess: norm(alias) -> name
    # resolution
    resolved: dict[str, tuple[str, str]] = field(default_factory=dict)  # norm(name) -> (key, method)
    resolved_order: list[dict[str, Any]] = field(default_factory=list)
    created: dict[str, NewEntity] = field(default_factory=dict)
    touched_keys: set[str] = field(default_factory=set)
    key_names: dict[str, set[str]] = field(default_factory=dict)  # entity key -> names/aliases used in this write
    alias_regs: dict[str, tuple[str, str]] = field(default_factory=dict)  # norm(alias) -> (key, type)
    name_vecs: dict[str, np.ndarray] = field(default_factory=dict)
    _persons_cache: Optional[list[dict[str, Any]]] = None
    _type_cache: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # resolve_all's prefetch (one read for every name of the write)
    _alias_cache: Any = None
    _slug_cache: Any = None
    _prefetched_slugs: set[str] = field(default_factory=set)
    _prefetched_norms: set[str] = field(default_factory=set)
    _known_entities: dict[str, dict[str, Any]] = field(default_factory=dict)
    display_updates: dict[str, str] = field(default_factory=dict)
    # reconciliation
    decisions: list[Decision] = field(default_factory=list)
    registry: dict[str, dict[str, Any]] = field(default_factory=dict)


class WriteRun(WriteState):
    """One ``write`` (or ``reprocess_event``) call: its :class:`WriteState` and the steps
    over it."""

    __slots__ = ()

    def __init__(
        self,
        rt: KnowledgeRuntime,
        *,
        agent_id: str,
        message: str,
        speaker_name: str,
        source: str,
        session_id: str,
        occurred_at: Optional[datetime],
        recent_messages: list[str],
        dry_run: bool,
        cfg: KnowledgeConfig,
        now: datetime,
        verbose: bool,
        event_id: Optional[str] = None,
        user_id: Optional[str] = None,
    ) -> None:
        speaker = speaker_name.strip()
        WriteState.__init__(
            self, rt=rt, user_id=user_id, t=rt.tables, backend=rt.backend, agent_id=agent_id,
            message=message, speaker=speaker, speaker_key=entity_key("person", speaker), source=source,
            session_id=session_id, occurred_at=occurred_at, t_event=occurred_at or now,
            recent_messages=recent_messages, dry_run=dry_run, cfg=cfg, now=now, verbose=verbose,
            tz=zoneinfo.ZoneInfo(cfg.timezone), call=TaskCall(rt.llm), reprocess_event_id=event_id,
            event_id=event_id or new_id(), trace=PipelineTrace() if verbose else None,
        )

    # -- plumbing ------------------------------------------------------------------------
    def warn(self, text: str) -> None:
        self.warnings.append(text)
        log.warning("oramem.knowledge write %s: %s", self.event_id, text.split(":")[0])

    def step(self, name: str, started: float, **data: Any) -> None:
        record_step(self, name, started, data)

    async def read(self, fn: Callable[[sa.Connection], T]) -> T:
        def run() -> T:
            with self.backend.read() as conn:
                return fn(conn)

        return await self.rt.in_thread(run)

    async def embed(self, texts: list[str], is_query: bool = False) -> np.ndarray:
        """KC-7.6: an exception, a wrong count or a wrong dimension is ``EmbeddingError``."""
        if not texts:
            return np.zeros((0, self.rt.dim), dtype=np.float32)
        try:
            out = await self.rt.embed(list(texts), is_query)
            arr = np.asarray(out, dtype=np.float32)
        except EmbeddingError:
            raise
        except Exception as exc:  # noqa: BLE001 - any embedder failure is an EmbeddingError
            raise EmbeddingError(f"embedder failed: {type(exc).__name__}: {exc}") from exc
        if arr.ndim != 2 or arr.shape[0] != len(texts):
            raise EmbeddingError(f"embedder returned {arr.shape[0] if arr.ndim else 0} vectors for {len(texts)} texts")
        if arr.shape[1] != self.rt.dim:
            raise EmbeddingError(f"embedder returned dimension {arr.shape[1]}, the store's vector_dim is {self.rt.dim}")
        if not np.all(np.isfinite(arr)):
            raise EmbeddingError("embedder returned non-finite values")
        return arr

    # -- steps 1-3 -------------------------------------------------------------------------
    def chosen_strategy(self) -> ExtractionStrategy:
        """The strategy :meth:`classify` chose (it runs first)."""
        assert self.strategy is not None, "classify() runs before extraction"
        return self.strategy

    async def classify(self) -> list[Chunk]:
        t0 = time.perf_counter()
        self.classification = classification = classify_input(self.message)
        self.strategy = strategy = select_strategy(classification)
        chunks = split_chunks(self.message, classification, strategy)
        self.step("classify", t0, input_type=classification.input_type.value, chunks=len(chunks))
        return chunks

    async def emotion_step(self) -> None:
        if not self.cfg.enable_emotion_tagging:
            return
        t0 = time.perf_counter()
        result, reason = await tag_emotion_detailed(self.message, self.call, self.cfg.extraction_timeout_sec)
        if result is None:
            self.warn(f"emotion: {reason}")
        self.emotion = result
        self.step("emotion", t0, emotion=result)

    async def informed_context(self) -> list[dict[str, Any]]:
        """KC-4.6: alias n-gram priming (indexed), then summaries or similar current facts."""
        cfg = self.cfg
        if not cfg.enable_informed_extraction:
            return []
        grams = [g for g in ngrams(self.message, 4) if len(g) >= 3]
        t = self.t
        def primed(conn: sa.Connection) -> tuple[list[str], dict[str, dict[str, Any]]]:
            hits = reads.lookup_aliases(conn, t, self.agent_id, grams, self.user_id)
            keys: list[str] = []
            for g in grams:
                if g in hits and hits[g][0] not in keys:
                    keys.append(hits[g][0])
            return keys, (reads.load_entities(conn, t, self.agent_id, keys, self.user_id) if keys else {})

        keys, ents = await self.read(primed)
        if not keys:
            return []
        keys = [k for k in keys if k in ents and ents[k]["is_active"]]
        n = len(keys)
        per_entity = cfg.informed_extraction_topk if n <= 2 else max(3, cfg.informed_extraction_context_budget_tokens // n // 20)
        block: list[dict[str, Any]] = []
        for k in keys:
            e = ents[k]
            item = {"entity_key": k, "display_name": e["display_name"], "summary": e["summary_text"], "facts": []}
            if not e["summary_text"]:
                hits2 = await self.rt.search(
                    query_vector=self.event_vec,
                    k=per_entity,
                    agent_id=self.agent_id,
                    record_types=["fact"],
                    metadata_filter=reads.with_scope({"kg_primary": k, **_CURRENT_FILTER}, self.user_id),
                )
                ids = [r.id for r, d in hits2 if 1.0 - d >= cfg.informed_min_similarity]
                rows = await self.read(lambda c: reads.current_facts_by_ids(c, t, self.agent_id, ids, self.now, self.user_id))
                for fid in ids:
                    if fid in rows:
                        r = rows[fid]
                        flag = " [needs confirmation]" if r["needs_confirmation"] else ""
                        item["facts"].append(f"{r['fact_text']}{flag}")
            block.append(item)
        # cap the block at the token budget (drop facts from the end, then entities)
        budget = cfg.informed_extraction_context_budget_tokens
        while block and estimate_tokens(json.dumps(block, ensure_ascii=False)) > budget:
            last = block[-1]
            if last["facts"]:
                last["facts"].pop()
            elif last["summary"] and len(last["summary"]) > 40:
                last["summary"] = last["summary"][: len(last["summary"]) // 2]
            else:
                block.pop()
        return block

    def _extract_payload(self, chunk: Chunk, existing: list[dict[str, Any]]) -> dict[str, Any]:
        recent = [m[:300] for m in self.recent_messages[-5:]]
        return {
            "message": chunk.text,
            "speaker": self.speaker,
            "occurred_at": self.t_event.astimezone(self.tz).isoformat(),
            "timezone": self.cfg.timezone,
            "recent_messages": recent,
            "existing_knowledge": existing,
            "chunk": None
            if chunk.count <= 1
            else {"index": chunk.index, "count": chunk.count, "hint": self.chosen_strategy().chunk_context_hint, "heading": chunk.heading},
        }

    async def extract(self, chunks: list[Chunk], existing: list[dict[str, Any]]) -> list[tuple[Chunk, dict[str, Any]]]:
        """KC-4.5: one ``extract`` call per piece, at most ``llm_concurrency`` at once; a
        failed piece is retried once; a second failure fails the extraction."""
        t0 = time.perf_counter()
        sem = asyncio.Semaphore(self.cfg.llm_concurrency)
        chunked_mode = len(chunks) > 1

        async def one(chunk: Chunk) -> dict[str, Any]:
            payload = self._extract_payload(chunk, existing)
            attempts = 2 if chunked_mode else 1
            last: Optional[Exception] = None
            for _ in range(attempts):
                async with sem:
                    try:
                        return await self.call(
                            "extract", payload, self.cfg.extraction_timeout_sec, self.chosen_strategy().max_tokens_per_call
                        )
                    except LLMError as exc:
                        last = exc
            where = f"chunk {chunk.index}/{chunk.count}: " if chunked_mode else ""
            raise ExtractionError(f"{where}{last}")

        results = await asyncio.gather(*(one(c) for c in chunks), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            for r in failures:
                if not isinstance(r, ExtractionError):
                    raise r
            raise failures[0]
        self.step("extract", t0, calls=len(chunks))
        return list(zip(chunks, [r for r in results if not isinstance(r, BaseException)]))

    # -- step 4 ------------------------------------------------------------------------------
    def postprocess(self, replies: list[tuple[Chunk, dict[str, Any]]]) -> None:
        """KC-4.8: alias rewriting (keeping every other field), identity relations,
        normalised confidence/importance, exact dedup; semantic dedup runs in ``dedup``."""
        cfg = self.cfg
        by_norm: dict[str, XEntity] = {}
        raw_facts: list[tuple[dict[str, Any], str]] = []
        raw_rels: list[dict[str, Any]] = []
        for chunk, reply in replies:
            ctx = "conversation" if chunk.count <= 1 else f"chunk {chunk.index}/{chunk.count}"
            for e in reply.get("entities", []):
                name = e["name"].strip()
                n = norm(name)
                if not n:
                    continue
                aliases = [a.strip() for a in (e.get("aliases") or []) if isinstance(a, str) and a.strip()]
                if n in by_norm:
                    ent = by_norm[n]
                    for a in aliases:
                        if a not in ent.aliases:
                            ent.aliases.append(a)
                else:
                    by_norm[n] = XEntity(name, canonical_entity_type(e.get("type")), aliases)
            for f in reply.get("facts", []):
                raw_facts.append((f, ctx))
            raw_rels.extend(reply.get("relations") or [])
            for i in reply.get("intentions") or []:
                self._intention(i)
            for o in reply.get("observations") or []:
                names = [x.strip() for x in (o.get("entities") or []) if isinstance(x, str) and x.strip()]
                topic = o.get("topic") if isinstance(o.get("topic"), str) else None
                self.observations.append(XObservation(o["content"].strip(), (topic or "").strip()[:64] or None, names))
            us = reply.get("updated_summaries") or {}
            for k, v in us.items():
                if isinstance(k, str) and isinstance(v, str) and v.strip():
                    self.updated_summaries.setdefault(k.strip(), v.strip())
        self.entities = list(by_norm.values())
        # alias → canonical display name, within this write
        alias_to_name: dict[str, str] = {}
        for ent in self.entities:
            for a in ent.aliases:
                if norm(a) != norm(ent.name):
                    alias_to_name.setdefault(norm(a), ent.name)
        self._alias_to_name = alias_to_name
        # identity relations never become edges: the second name becomes an alias of the first
        for r in raw_rels:
            if normalize_rel_type(r.get("rel_type")) in IDENTITY_REL_TYPES:
                src = self.rewrite(r["source"].strip())
                tgt = self.rewrite(r["target"].strip())
                if norm(src) != norm(tgt) and norm(tgt) not in alias_to_name:
                    alias_to_name[norm(tgt)] = src
                    self.identity_aliases.append((tgt, src))
        for r in raw_rels:
            rt = normalize_rel_type(r.get("rel_type"))
            if rt in IDENTITY_REL_TYPES:
                continue
            src = self.rewrite(r["source"].strip())
            tgt = self.rewrite(r["target"].strip())
            if not rt:
                self.warn(f"relation dropped: empty rel_type between {src!r} and {tgt!r}")
                continue
            if norm(src) == norm(tgt):
                self.warn(f"relation dropped: self-loop on {src!r}")
                continue
            self.relations.append(XRelation(src, tgt, rt))
        # facts
        seen: set[tuple[str, str]] = set()
        aliases_cfg = dict(cfg.attribute_aliases)
        for idx, (f, ctx) in enumerate(raw_facts):
            text = f["fact"].strip()
            if len(text) > MAX_FACT_CHARS:
                self.warn(f"fact dropped: fact_text over {MAX_FACT_CHARS} chars")
                continue
            subject = self.rewrite(f["subject"].strip())
            key = (norm(subject), norm(text))
            if key in seen:
                continue
            seen.add(key)
            conf = self._confidence(f.get("confidence"))
            category = f.get("category") if isinstance(f.get("category"), str) else None
            if category not in cfg.importance_category_map:
                category = None
            importance = cfg.importance_category_map[category] if category else 0.5
            raw_attr = f.get("attribute_key") if isinstance(f.get("attribute_key"), str) else None
            attr = canonical_attribute_key(raw_attr, aliases_cfg) if raw_attr else None
            if raw_attr and attr is None:
                self.warn(f"attribute key rejected: {raw_attr!r} is not a valid key (fact kept with attribute_key=NULL)")
            ttl = _num(f.get("ttl_days"))
            self.facts.append(
                XFact(
                    idx=idx,
                    subject=subject,
                    fact=text,
                    category=category,
                    confidence=conf,
                    importance=importance,
                    raw_attribute_key=raw_attr,
                    attribute_key=attr,
                    value=f.get("value"),
                    is_sensitive=bool(f.get("is_sensitive")) if isinstance(f.get("is_sensitive"), bool) else False,
                    valid_from=_parse_dt(f.get("valid_from"), self.tz),
                    ttl_days=None if ttl is None else int(max(0, min(ttl, 36500))),
                    source_context=ctx,
                )
            )

    def rewrite(self, name: str) -> str:
        return self._alias_to_name.get(norm(name), name)

    def _confidence(self, raw: Any) -> float:
        x = _num(raw)
        if x is not None:
            return _clamp01(x)
        if isinstance(raw, str) and raw in self.cfg.confidence_level_map:
            return float(self.cfg.confidence_level_map[raw])
        return float(self.cfg.confidence_default)

    def _intention(self, raw: dict[str, Any]) -> None:
        due = _parse_dt(raw.get("due_date"), self.tz)
        tt = raw.get("trigger_type")
        trigger_type = "time" if tt == "time" and due is not None else "event"
        self.intentions.append(
            XIntention(trigger_type, raw["trigger_condition"].strip(), raw["intended_action"].strip(), due)
        )

    async def dedup(self) -> None:
        """Semantic dedup within a subject: one vectorised similarity matrix per subject;
        then the ``max_facts_per_event`` cut."""
        if not self.facts:
            return
        vecs = await self.embed([f.fact for f in self.facts])
        groups: dict[str, list[int]] = {}
        for i, f in enumerate(self.facts):
            groups.setdefault(norm(f.subject), []).append(i)
        drop: set[int] = set()
        for idxs in groups.values():
            if len(idxs) < 2:
                continue
            m = vecs[idxs]
            sims = m @ m.T
            np.fill_diagonal(sims, -1.0)
            sims = np.triu(sims, 1)  # only (earlier, later) pairs
            keep = np.ones(len(idxs), dtype=bool)
            for j in range(1, len(idxs)):
                earlier_kept = keep[:j]
                if np.any(sims[:j, j][earlier_kept] >= self.cfg.dedup_similarity):
                    keep[j] = False
            drop.update(idxs[j] for j in range(len(idxs)) if not keep[j])
        self.facts = [f for i, f in enumerate(self.facts) if i not in drop]
        limit = self.cfg.max_facts_per_event
        if len(self.facts) > limit:
            self.warn(f"facts over max_facts_per_event dropped: {len(self.facts) - limit}")
            self.facts = self.facts[:limit]

    # -- step 5 ----------------------------------------------------------------------------
    def _mention_type(self, name: str) -> Optional[str]:
        n = norm(name)
        for e in self.entities:
            if norm(e.name) == n or n in (norm(a) for a in e.aliases):
                return e.type
        return None

    def _names_to_resolve(self) -> list[str]:
        names: list[str] = []
        seen: set[str] = set()

        def add(x: str) -> None:
            if norm(x) and norm(x) not in seen:
                seen.add(norm(x))
                names.append(x)

        for e in self.entities:
            add(e.name)
        for f in self.facts:
            add(f.subject)
        for r in self.relations:
            add(r.source)
            add(r.target)
        for o in self.observations:
            for x in o.entity_names:
                add(self.rewrite(x))
        for alias, canonical in self.identity_aliases:
            add(canonical)
        return names

    def is_self(self, name: str) -> bool:
        n = norm(name)
        return n in SELF_REFERENCES or n in {norm(x) for x in self.cfg.extra_self_references} or n == norm(self.speaker)

    async def resolve_all(self) -> None:
        t0 = time.perf_counter()
        names = self._names_to_resolve()
        to_embed = [n for n in names if not self.is_self(n)]
        # one batched read for the exact phase of every name (aliases, key slugs, entities)
        t = self.t
        norms = [norm(n) for n in to_embed]
        slugs = [slug(n) for n in to_embed]

        def prefetch(
            conn: sa.Connection,
        ) -> tuple[dict[str, tuple[str, str]], dict[str, list[dict[str, Any]]], dict[str, dict[str, Any]]]:
            aliases = reads.lookup_aliases(conn, t, self.agent_id, norms, self.user_id)
            by_slug = reads.entities_by_slugs(conn, t, self.agent_id, slugs, self.user_id)
            keys = {k for k, _ in aliases.values()} | {r["canonical_key"] for rs in by_slug.values() for r in rs}
            keys.add(self.speaker_key)
            return aliases, by_slug, reads.load_entities(conn, t, self.agent_id, keys, self.user_id)

        self._alias_cache, self._slug_cache, known = await self.read(prefetch)
        self._prefetched_slugs = set(slugs)
        self._prefetched_norms = set(norms)
        self._known_entities.update(known)
        vecs = await self.embed(to_embed) if to_embed else np.zeros((0, self.rt.dim), np.float32)
        self.name_vecs = {norm(n): vecs[i] for i, n in enumerate(to_embed)}
        for name in names:
            await self.resolve(name)
        # identity relations: the alias name joins the canonical entity unless already taken
        for alias_name, canonical in self.identity_aliases:
            key = self.resolved.get(norm(canonical), (None,))[0]
            if key is None or key == self.speaker_key and norm(alias_name) in SELF_REFERENCES:
                continue
            self._register_alias(alias_name, key)
        # extraction aliases of resolved entities
        for e in self.entities:
            key = self.resolved.get(norm(e.name), (None, None))[0]
            if key is None or key == self.speaker_key:
                continue
            for a in e.aliases:
                self._register_alias(a, key)
        for f in self.facts:
            key, _ = self.resolved[norm(f.subject)]
            f.subject_key = key
            f.subject_type = key.split(":", 1)[0]
            f.subject_name = self._display_name(key, f.subject)
        for r in self.relations:
            r.source_key = self.resolved[norm(r.source)][0]
            r.target_key = self.resolved[norm(r.target)][0]
        for o in self.observations:
            for x in o.entity_names:
                k = self.resolved.get(norm(self.rewrite(x)), (None,))[0]
                if k and k not in o.entity_keys:
                    o.entity_keys.append(k)
        self.step("resolve", t0, names=len(names), created=len(self.created))

    def _display_name(self, key: str, fallback: str) -> str:
        if key in self.created:
            return self.created[key].display_name
        if key in self.display_updates:
            return self.display_updates[key]
        row = self._known_entities.get(key)
        if row and row.get("display_name"):
            return str(row["display_name"])
        return fallback

    def _register_alias(self, name: str, key: str) -> None:
        n = norm(name)
        if not n:
            return
        etype = key.split(":", 1)[0]
        prev = self.alias_regs.get(n)
        if prev is not None and prev[0] != key:
            self.warn(f"alias conflict: {n!r} is bound to {prev[0]}, not rebound to {key}")
            return
        self.alias_regs[n] = (key, etype)
        self.key_names.setdefault(key, set()).add(name)

    def _record(self, name: str, key: str, method: str) -> tuple[str, str]:
        self.resolved[norm(name)] = (key, method)
        self.resolved_order.append({"name": name, "entity_key": key, "method": method})
        self.touched_keys.add(key)
        self.key_names.setdefault(key, set()).add(name)
        if method != "speaker":
            self._register_alias(name, key)
        return key, method

    async def resolve(self, name: str) -> tuple[str, str]:
        """KC-4.9 phases: speaker, exact, nickname, embedding, LLM, create."""
        n = norm(name)
        if n in self.resolved:
            return self.resolved[n]
        t = self.t
        # 0 speaker
        if self.is_self(name):
            if self.speaker_key not in self.created and self.speaker_key not in self._known_entities:
                rows = await self.read(lambda c: reads.load_entities(c, t, self.agent_id, [self.speaker_key], self.user_id))
                if rows:
                    self._known_entities.update(rows)
                else:
                    self.created[self.speaker_key] = NewEntity(self.speaker_key, self.speaker, "person", None)
            return self._record(name, self.speaker_key, "speaker")
        mention_type = self._mention_type(name)
        # 1 exact: entities of this write first, then the alias index and key slugs
        s = slug(name)
        for key, ent in self.created.items():
            if norm(ent.display_name) == n or key.split(":", 1)[1] == s:
                return self._record(name, key, "exact")
        if n in self.alias_regs:
            return self._record(name, self.alias_regs[n][0], "exact")
        if n in getattr(self, "_prefetched_norms", ()):
            hit = self._alias_cache  # prefetched in resolve_all (a miss there is a miss here)
        else:
            hit = await self.read(lambda c: reads.lookup_aliases(c, t, self.agent_id, [n], self.user_id))
        if n in hit:
            key = hit[n][0]
            if key not in self._known_entities:
                self._known_entities.update(await self.read(lambda c: reads.load_entities(c, t, self.agent_id, [key], self.user_id)))
            if key in self._known_entities and self._known_entities[key]["is_active"]:
                return self._record(name, key, "exact")
        if s:
            if s in getattr(self, "_prefetched_slugs", ()):
                by_slug = self._slug_cache.get(s, [])
            else:
                by_slug = await self.read(lambda c: reads.entities_by_slug(c, t, self.agent_id, s, self.user_id))
            if by_slug:
                pick = next((r for r in by_slug if r["entity_type"] == mention_type), by_slug[0])
                if pick["canonical_key"] not in self._known_entities:
                    self._known_entities.update(
                        await self.read(lambda c: reads.load_entities(c, t, self.agent_id, [pick["canonical_key"]], self.user_id))
                    )
                return self._record(name, pick["canonical_key"], "exact")
        vec = self.name_vecs.get(n)
        llm_candidates: list[dict[str, Any]] = []
        # 1.5 nickname (mention and candidate both person)
        if mention_type == "person":
            persons = await self._persons()
            cands = [p for p in persons if is_nickname(name, p["display_name"] or p["canonical_key"].split(":", 1)[1])]
            if len(cands) == 1:
                key = cands[0]["canonical_key"]
                await self._maybe_extend_display(key, name)
                return self._record(name, key, "nickname")
            if len(cands) > 1:
                llm_candidates = cands[:3]
        # 2 embedding, same entity_type only
        etype = mention_type or "other"
        if not llm_candidates and vec is not None:
            pool = await self._of_type(etype)
            if pool:
                mat = np.stack([p["embedding_vec"] for p in pool])
                sims = mat @ vec
                order = sorted(range(len(pool)), key=lambda i: (-float(sims[i]), pool[i]["canonical_key"]))
                best = float(sims[order[0]])
                if best >= self.cfg.fuzzy_threshold:
                    key = pool[order[0]]["canonical_key"]
                    await self._maybe_extend_display(key, name)
                    return self._record(name, key, "embedding")
                if best >= self.cfg.llm_resolution_min_similarity:
                    llm_candidates = [
                        pool[i] for i in order[:3] if float(sims[i]) >= self.cfg.llm_resolution_min_similarity
                    ]
        # 3 LLM
        if llm_candidates and self.cfg.enable_llm_resolution:
            payload = {
                "name": name,
                "type": etype,
                "context": self.message[:300],
                "candidates": [
                    {
                        "index": i + 1,
                        "canonical_key": c["canonical_key"],
                        "display_name": c["display_name"],
                        "entity_type": c["entity_type"],
                    }
                    for i, c in enumerate(llm_candidates)
                ],
            }
            try:
                reply = await self.call("resolve_entity", payload, self.cfg.resolution_timeout_sec)
                idx = int(reply["match_index"])
                if 1 <= idx <= len(llm_candidates):
                    key = llm_candidates[idx - 1]["canonical_key"]
                    await self._maybe_extend_display(key, name)
                    return self._record(name, key, "llm")
            except LLMError as exc:
                self.warn(f"resolution: {exc}")
        # create
        key = entity_key(etype, name)
        if not key.split(":", 1)[1]:
            key = entity_key(etype, f"entity {len(self.created) + 1}")
        if key not in self.created:
            self.created[key] = NewEntity(key, name, etype, vec)
        return self._record(name, key, "created")

    async def _persons(self) -> list[dict[str, Any]]:
        persons = self._persons_cache
        if persons is None:
            t = self.t

            def load(c: sa.Connection) -> list[dict[str, Any]]:
                return reads.active_entities_of_type(c, t, self.agent_id, "person", with_vec=False, user_id=self.user_id)

            loaded = await self.read(load)
            self._persons_cache = persons = loaded
        extra = [
            {"canonical_key": k, "display_name": e.display_name, "entity_type": e.entity_type}
            for k, e in sorted(self.created.items())
            if e.entity_type == "person" and k != self.speaker_key
        ]
        return sorted(persons + extra, key=lambda p: p["canonical_key"])

    async def _of_type(self, etype: str) -> list[dict[str, Any]]:
        if etype not in self._type_cache:
            t = self.t
            rows = await self.read(lambda c: reads.active_entities_of_type(c, t, self.agent_id, etype, with_vec=True, user_id=self.user_id))
            self._type_cache[etype] = [r for r in rows if r["embedding_vec"] is not None]
        extra = [
            {"canonical_key": k, "display_name": e.display_name, "entity_type": e.entity_type, "embedding_vec": e.vec}
            for k, e in sorted(self.created.items())
            if e.entity_type == etype and e.vec is not None
        ]
        return self._type_cache[etype] + extra

    async def _maybe_extend_display(self, key: str, name: str) -> None:
        """``display_name`` changes only when the new name extends the old one."""
        if key in self.created:
            old = self.created[key].display_name
            if is_nickname(old, name) and len(norm(name)) > len(norm(old)) and norm(name).startswith(norm(old)):
                self.created[key].display_name = name
            return
        t = self.t
        rows = await self.read(lambda c: reads.load_entities(c, t, self.agent_id, [key], self.user_id))
        self._known_entities.update(rows)
        old = (rows.get(key) or {}).get("display_name") or ""
        current = self.display_updates.get(key, old)
        if norm(name).startswith(norm(current) + " "):
            self.display_updates[key] = name

    # -- step 6 ----------------------------------------------------------------------------
    async def fact_vectors(self, facts: list[XFact]) -> None:
        todo = [f for f in facts if f.vec is None]
        if todo:
            vecs = await self.embed([f.index_text for f in todo])
            for f, v in zip(todo, vecs):
                f.vec = v

    async def load_registry(self, keys: list[str]) -> None:
        missing = [k for k in keys if k and k not in self.registry]
        if missing:
            t = self.t
            rows = await self.read(lambda c: reads.registry_rows(c, t, self.agent_id, missing))
            self.registry.update(rows)

    def policy(self, key: Optional[str]) -> str:
        row = self.registry.get(key) if key else None
        return (row or {}).get("conflict_policy") or "supersede"

    async def reconcile(self, facts: list[XFact]) -> list[Decision]:
        """KC-4.10: per subject; candidates from the store's vector search plus same-key
        current facts (supersede policy); one ``reconcile`` call per subject when needed."""
        t0 = time.perf_counter()
        cfg = self.cfg
        t = self.t
        await self.fact_vectors(facts)
        await self.load_registry([f.attribute_key for f in facts if f.attribute_key])
        groups: dict[str, list[XFact]] = {}
        for f in facts:
            groups.setdefault(f.subject_key, []).append(f)
        out: list[Decision] = []
        calls = 0
        for key in sorted(groups, key=lambda k: min(f.idx for f in groups[k])):
            group = groups[key]
            if key in self.created:
                out.extend(Decision(f, "ADD") for f in group)
                continue
            sims: dict[str, float] = {}
            per_fact_best: dict[int, float] = {}
            for f in group:
                hits = await self.rt.search(
                    query_vector=f.vec,
                    k=cfg.reconcile_candidates,
                    agent_id=self.agent_id,
                    record_types=["fact"],
                    metadata_filter=reads.with_scope({"kg_primary": key, **_CURRENT_FILTER}, self.user_id),
                )
                best = 0.0
                for rec, dist in hits:
                    s = 1.0 - float(dist)
                    sims[rec.id] = max(sims.get(rec.id, -1.0), s)
                    best = max(best, s)
                per_fact_best[f.idx] = best if hits else -1.0
            same_keys = [f.attribute_key for f in group if f.attribute_key and self.policy(f.attribute_key) == "supersede"]
            same, rows = await self.read(
                lambda c: (
                    reads.current_same_key_facts(c, t, self.agent_id, key, same_keys, self.now, self.user_id),
                    reads.current_facts_by_ids(c, t, self.agent_id, list(sims), self.now, self.user_id),
                )
            )
            for r in same:
                rows.setdefault(r["id"], r)
            same_by_attr: dict[str, list[str]] = {}
            for r in same:
                same_by_attr.setdefault(r["attribute_key"], []).append(r["id"])
            needs: list[XFact] = []
            for f in group:
                has_same = bool(f.attribute_key and same_by_attr.get(f.attribute_key) and self.policy(f.attribute_key) == "supersede")
                best = per_fact_best.get(f.idx, -1.0)
                if not rows or (best < cfg.reconcile_similarity_gate and not has_same):
                    out.append(Decision(f, "ADD"))
                else:
                    needs.append(f)
            if not needs:
                continue
            existing = sorted(rows.values(), key=lambda r: (-sims.get(r["id"], 0.0), r["valid_from"], r["id"]))
            calls += 1
            out.extend(await self._reconcile_call(key, needs, existing))
        self.step("reconcile", t0, facts=len(facts), calls=calls)
        return out

    async def _reconcile_call(self, key: str, needs: list[XFact], existing: list[dict[str, Any]]) -> list[Decision]:
        payload = {
            "subject_key": key,
            "subject_name": needs[0].subject_name,
            "new_facts": [
                {"index": i + 1, "fact": f.fact, "attribute_key": f.attribute_key} for i, f in enumerate(needs)
            ],
            "existing": [
                {
                    "index": i + 1,
                    "fact_id": r["id"],
                    "fact": r["fact_text"],
                    "attribute_key": r["attribute_key"],
                    "valid_from": r["valid_from"].isoformat(),
                }
                for i, r in enumerate(existing)
            ],
        }
        if self.rule_based_reconcile:
            return self._reconcile_by_rules(needs, existing)
        try:
            reply = await self.call("reconcile", payload, self.cfg.reconcile_timeout_sec)
        except LLMError as exc:
            # KC-4.22: the deterministic rules decide (same text confirms, same attribute under a
            # supersede policy replaces), and the result says the write degraded
            self.warn(f"reconcile degraded to rules ({type(exc).__name__}: {exc})")
            if "reconcile" not in self.degraded:
                self.degraded.append("reconcile")
            return self._reconcile_by_rules(needs, existing)
        by_new: dict[int, dict[str, Any]] = {}
        for d in reply["decisions"]:
            idx = d.get("new_fact_index")
            if isinstance(idx, int) and not isinstance(idx, bool) and 1 <= idx <= len(needs) and idx not in by_new:
                by_new[idx] = d
        used: set[str] = set()
        out: list[Decision] = []
        for i, f in enumerate(needs, 1):
            d = by_new.get(i)
            action = str(d.get("action", "")).upper() if d else "ADD"
            if action not in ("ADD", "UPDATE", "NOOP", "DELETE"):
                action = "ADD"
            target = None
            ei = d.get("existing_fact_index") if d else None
            if isinstance(ei, int) and not isinstance(ei, bool) and 1 <= ei <= len(existing):
                target = existing[ei - 1]
            if action == "ADD":
                out.append(Decision(f, "ADD"))
                continue
            if target is None:
                if action == "UPDATE":
                    out.append(Decision(f, "ADD"))
                else:
                    self.warn(f"reconcile: {action} without a valid existing fact dropped")
                continue
            if target["id"] in used:
                out.append(Decision(f, "ADD"))
                continue
            used.add(target["id"])
            kind = "correction" if action == "UPDATE" and d is not None and d.get("update_kind") == "correction" else "change"
            out.append(Decision(f, action, target, kind))
        return out

    def _reconcile_by_rules(self, needs: list[XFact], existing: list[dict[str, Any]]) -> list[Decision]:
        """Reconciliation without an LLM: the same text confirms (NOOP), the same attribute key
        under the supersede policy replaces (UPDATE), anything else is new (ADD)."""
        used: set[str] = set()
        out: list[Decision] = []
        for f in needs:
            free = [r for r in existing if r["id"] not in used]
            same_text = next((r for r in free if norm(r["fact_text"]) == norm(f.fact)), None)
            same_key = None
            if f.attribute_key and self.policy(f.attribute_key) == "supersede":
                same_key = next((r for r in free if r["attribute_key"] == f.attribute_key), None)
            if same_text is not None:
                used.add(same_text["id"])
                out.append(Decision(f, "NOOP", same_text))
            elif same_key is not None:
                used.add(same_key["id"])
                out.append(Decision(f, "UPDATE", same_key, "change"))
            else:
                out.append(Decision(f, "ADD"))
        return out

    # -- relations, evidence and mirror facts (KC-4.14) -------------------------------------
    def names_of(self, key: str) -> set[str]:
        names = set(self.key_names.get(key, set()))
        if key in self.created:
            names.add(self.created[key].display_name)
        row = getattr(self, "_known_entities", {}).get(key)
        if row and row.get("display_name"):
            names.add(row["display_name"])
        if key in self.display_updates:
            names.add(self.display_updates[key])
        if key == self.speaker_key:
            names.add(self.speaker)
        return {n for n in names if len(norm(n)) >= 3 or key == self.speaker_key}

    def mentions(self, words: list[str], key: str) -> bool:
        return any(contains_words(words, n) for n in self.names_of(key))

    def evidence(self) -> list[XRelation]:
        """Pick each relation's evidence among this write's ADD/UPDATE/NOOP decisions;
        return the relations that have none (they get mirror facts)."""
        usable = [d for d in self.decisions if d.action in ("ADD", "UPDATE", "NOOP")]
        words = {id(d): word_tokens(d.fact.fact) for d in usable}
        missing: list[XRelation] = []
        for r in self.relations:
            best: Optional[tuple[Any, ...]] = None
            for d in usable:
                w = words[id(d)]
                has_src, has_tgt = self.mentions(w, r.source_key), self.mentions(w, r.target_key)
                subj = d.fact.subject_key
                if has_src and has_tgt:
                    rank = 0
                elif (subj == r.source_key and has_tgt) or (subj == r.target_key and has_src):
                    rank = 1
                else:
                    continue
                cand = (rank, -d.fact.confidence, d.fact.idx)
                if best is None or cand < best[0]:
                    best = (cand, d)
            if best is None:
                missing.append(r)
            else:
                r.evidence = best[1]
        return missing

    def mirror_facts(self, rels: list[XRelation]) -> list[XFact]:
        out: list[XFact] = []
        base = max((f.idx for f in self.facts), default=-1) + 1
        for i, r in enumerate(rels):
            src = self._display_name(r.source_key, r.source)
            tgt = self._display_name(r.target_key, r.target)
            f = XFact(
                idx=base + i,
                subject=src,
                fact=f"{src} {rel_words(r.rel_type)} {tgt}",
                category=None,
                confidence=float(self.cfg.mirror_fact_confidence),
                importance=0.5,
                source_context="inferred_from_relation",
                mirror=True,
                subject_key=r.source_key,
                subject_name=src,
                subject_type=r.source_key.split(":", 1)[0],
            )
            out.append(f)
        return out

    def assign_ids(self) -> None:
        for d in self.decisions:
            if d.action in ("ADD", "UPDATE") and d.fact.new_id is None:
                d.fact.new_id = new_id()


_CURRENT_FILTER = {"kg_valid_to": {"$exists": False}, "kg_invalidated_at": {"$exists": False}}
