"""The commit phase of a write (KC-4.2 step 7, KC-4.11 to KC-4.19, KC-7.4, KC-7.5).

One transaction: the store's block (``store.transaction()``, SC-12; SQLite ``BEGIN
IMMEDIATE`` on the store's connection, Oracle the connection the block holds), in order:

1. re-check every decision against the current rows (a stale target raises
   :class:`StaleDecisions`; the caller reconciles once more, then gives up with
   ``ConflictError``); racing inserts of the same entity reuse the winner's row;
2. store records: new fact and event records with explicit vectors, metadata of changed
   facts (store operations joining the block);
3. the knowledge rows: event, entities and aliases, fact upserts and cascades, links,
   relations, registry, intentions, session observations, ``fact_count``, ``trace_json``.

Any error, and a process crash at any point before the block's COMMIT, leaves nothing of
the write: store records, knowledge rows and keyword-index rows commit together
(``tests/knowledge/test_crash_atomicity.py`` kills a process at every step).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

import numpy as np
import sqlalchemy as sa

from ..._plans import run_sync
from ...batches import PendingRecordBatch
from ...kg_vectors import fact_index_text
from ...threads import write_refusal
from .. import faults
from . import erasures
from ..db import dml
from ..db import queries as reads
from ..errors import ConflictError, KnowledgeError
from ..model import new_id
from ..ownership import PROVENANCE
from .extract import infer_value_type
from .reconcile import mentions
from .state import WriteRun
from ..db.schema import KGTables
from ..text import iso, norm

__all__ = ["StaleDecisions", "commit_write", "fact_metadata", "predict_relations", "store_fact_metadata_for"]



class StaleDecisions(KnowledgeError):
    def __init__(self, subject_keys: set[str]) -> None:
        super().__init__(f"decisions went stale for {len(subject_keys)} subject(s)")
        self.subject_keys = subject_keys


def fact_metadata(row: dict[str, Any], entity_keys: list[str]) -> dict[str, Any]:
    """KC-3.5 flat store metadata of a fact (ISO UTC strings; NULLs omitted)."""
    md: dict[str, Any] = {
        "kg_entity_keys": list(entity_keys),
        "kg_primary": row["entity_key"],
        "kg_valid_from": iso(row["valid_from"]),
        "kg_ingested_at": iso(row["ingested_at"]),
        "kg_is_stale": bool(row.get("is_stale") or False),
        "kg_confidence": float(row["confidence"]),
    }
    if row.get("valid_to") is not None:
        md["kg_valid_to"] = iso(row["valid_to"])
    if row.get("invalidated_at") is not None:
        md["kg_invalidated_at"] = iso(row["invalidated_at"])
    if row.get("attribute_key"):
        md["kg_attribute_key"] = row["attribute_key"]
    if row.get("user_id") is not None:
        md["kg_user"] = row["user_id"]  # KC-3.7: the scope, for store searches (reads.store_scope)
    return md


def event_metadata(run: WriteRun) -> dict[str, Any]:
    """Metadata of an event's store ``message`` record: ``kg_event`` marks it as a knowledge
    event (KC-3.9: not a chat item of the thread), ``kg_user`` carries its scope."""
    md: dict[str, Any] = {"kg_event": True, "kg_speaker": run.speaker, "kg_source": run.source}
    if run.user_id is not None:
        md["kg_user"] = run.user_id
    return md


def update_fact_record(store: Any, fact_id: str, agent_id: str, md: dict[str, Any]) -> bool:
    """Write a fact row's store metadata ``md`` (:func:`fact_metadata`) into its own store
    record only: the ``fact`` record under its id of the same agent and user (``kg_user``,
    the row's scope). Store ids are unique per record type only and callers may choose
    them (SC-4.3): another agent's or user's fact record under the id (a row restored
    without its record, or imported under a record's id) is not the row's and gets none of
    its metadata. False when it was left alone."""
    with store.transaction():  # the check and the write commit together (SQLite: one writer)
        if not _own_record(store, "fact", fact_id, agent_id, md.get("kg_user")):
            return False
        return bool(store.update("fact", fact_id, metadata=md))


def _own_record(store: Any, record_type: str, record_id: str, agent_id: str, user_id: Optional[str]) -> bool:
    """Whether the store record under a knowledge row's id is there and is the row's own: of
    the same agent and user (``agent_id``, ``user_id``). Called in the write's block: on Oracle
    the ``get`` locks the record's row until the block ends (SC-12.10), so no other session
    can delete it and store another scope's record under its id before the write. An absent
    record is not written to by id: another session could store one under the id meanwhile
    (no row to lock), and updating or deleting an absent record does nothing anyway."""
    record = store.get(record_type, record_id)
    return record is not None and (record.agent_id, record.user_id) == (agent_id, user_id)


def delete_own_record(store: Any, record_type: str, record_id: str, agent_id: str, user_id: Optional[str]) -> bool:
    """Delete a knowledge row's store record (``fact`` / ``message``) when it is the row's own:
    of the same agent and user. As for :func:`update_fact_record`, a record of another agent or
    user under the row's id (a row restored without its record) is not the row's and stays
    (SC-13.1). False when nothing was deleted."""
    with store.transaction():  # the check and the write commit together (SQLite: one writer)
        if not _own_record(store, record_type, record_id, agent_id, user_id):
            return False
        return bool(store.delete(record_type, record_id))


def update_own_text(store: Any, record_type: str, record_id: str, agent_id: str, user_id: Optional[str],
                    text: str) -> bool:
    """Replace the text of a knowledge row's own store record (as :func:`delete_own_record`
    checks it): an ``add_knowledge`` event that lost a deleted fact's line (del48). Its
    retrieval rows become the new text without a vector (``embedding=None``), as the store-side
    deletion hook leaves it (SC-8.5 [ext]): a delete never needs the embedder (an unreachable
    embedding service, or a store another process moved with ``reembed``, would otherwise
    refuse the deletion of the fact). When the store's firewall policy, changed since the
    record was written, refuses the lines left, the record goes instead (it is screened before
    anything is written; the deletion must not fail on what stays). False when it was left
    alone."""
    from ...trust.firewall import FirewallRejected

    with store.transaction():
        if not _own_record(store, record_type, record_id, agent_id, user_id):
            return False
        try:
            return bool(store.update(record_type, record_id, text=text, embedding=None))
        except FirewallRejected:
            return bool(store.delete(record_type, record_id))


def store_fact_metadata_for(conn: sa.Connection, t: KGTables, agent_id: str, fact_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Current store metadata of facts, rebuilt from their rows and links."""
    f = t.fact
    cols = [c for c in f.c if c.name != "embedding_vec"]
    rows: dict[str, dict[str, Any]] = {}
    for batch in reads.chunked(sorted(set(fact_ids))):
        for r in conn.execute(sa.select(*cols).where(f.c.id.in_(batch))).mappings():
            if r["agent_id"] == agent_id:
                rows[r["id"]] = dict(r)
    links = reads.links_of(conn, t, agent_id, list(rows))
    return {fid: fact_metadata(r, links.get(fid, [r["entity_key"]])) for fid, r in rows.items()}


# ----------------------------------------------------------------------------- planning
class Plan:
    def __init__(self) -> None:
        self.entity_inserts: list[dict[str, Any]] = []
        self.entity_updates: dict[str, dict[str, Any]] = {}
        self.alias_inserts: list[dict[str, Any]] = []
        self.fact_inserts: list[dict[str, Any]] = []
        self.fact_updates: dict[str, dict[str, Any]] = {}
        self.closing: dict[str, tuple[str, datetime]] = {}  # old fact id -> ("valid_to"|"invalidated_at", when)
        self.links: list[dict[str, Any]] = []
        self.new_links: dict[str, list[str]] = {}
        self.store_new: list[dict[str, Any]] = []
        self.store_meta: dict[str, dict[str, Any]] = {}
        self.recount_keys: set[str] = set()
        self.renamed: dict[str, list[Optional[str]]] = {}  # key -> [display name before, after] (provenance)


def recheck(run: WriteRun, conn: sa.Connection) -> None:
    """KC-7.5: every decision is re-checked under the lock."""
    t = run.t
    targets = [d.target["id"] for d in run.decisions if d.target is not None]
    current = reads.current_facts_by_ids(conn, t, run.agent_id, targets, run.now, run.user_id) if targets else {}
    stale = {d.fact.subject_key for d in run.decisions if d.target is not None and d.target["id"] not in current}
    if stale:
        raise StaleDecisions(stale)
    for d in run.decisions:
        if d.target is not None:
            d.target = current[d.target["id"]]
    # an ADD that a concurrent write already stored becomes a NOOP on the stored row (same
    # subject, same text: what concurrent writes of one extraction produce); indexed by
    # (agent_id, entity_key, valid_to), never a scan of the subject's facts
    adds = [d for d in run.decisions if d.action == "ADD"]
    if adds:
        f = t.fact
        keys = sorted({d.fact.subject_key for d in adds})
        texts = sorted({d.fact.fact for d in adds})
        no_user = run.user_id is None
        q = reads.cached_stmt(f, ("recheck_adds", no_user), lambda: sa.select(*[c for c in f.c if c.name != "embedding_vec"]).where(
            reads.p_owned(f, no_user), f.c.entity_key.in_(reads.expanding("p_keys")), f.c.valid_to.is_(None),
            f.c.invalidated_at.is_(None), f.c.fact_text.in_(reads.expanding("p_texts")),
        ).order_by(f.c.created_at, f.c.id))
        existing: dict[tuple[str, str], dict[str, Any]] = {}
        for batch in reads.chunked(keys):
            for tbatch in reads.chunked(texts):
                params = {"p_agent": run.agent_id, "p_user": run.user_id, "p_keys": batch, "p_texts": tbatch}
                for m in conn.execute(q, params).mappings():
                    r = dict(m)
                    if not reads.is_expired(r, run.now):
                        existing.setdefault((r["entity_key"], r["fact_text"]), r)
        taken = {d.target["id"] for d in run.decisions if d.target is not None}
        for d in adds:
            hit = existing.get((d.fact.subject_key, d.fact.fact))
            if hit is not None and hit["id"] not in taken:
                d.action, d.target, d.fact.new_id = "NOOP", hit, None
                taken.add(hit["id"])


def _ttl_for(run: WriteRun, attribute_key: Optional[str], fact_ttl: Optional[int]) -> Optional[int]:
    if fact_ttl is not None:
        return fact_ttl
    row = run.registry.get(attribute_key) if attribute_key else None
    return row.get("ttl_days") if row else None


def build_plan(run: WriteRun, conn: sa.Connection) -> Plan:
    t = run.t
    p = Plan()
    now, ag, user = run.now, run.agent_id, run.user_id
    # entities: racing inserts of the same key reuse the winner's row
    existing = reads.load_entities(conn, t, ag, set(run.created) | run.touched_keys, user)
    for key, ne in sorted(run.created.items()):
        if key in existing:
            continue
        p.entity_inserts.append(
            {
                "id": new_id(),
                "agent_id": ag,
                "user_id": user,
                "canonical_key": key,
                "display_name": ne.display_name[:256],
                "entity_type": ne.entity_type,
                "summary_text": ne.summary,
                "embedding_vec": ne.vec,
                "fact_count": 0,
                "importance_score": None,
                "is_active": True,
                "first_seen_at": now,
                "last_seen_at": now,
                "summary_refreshed_at": None,
                "created_at": now,
            }
        )
    summaries: dict[str, str] = {}
    for name, text in run.updated_summaries.items():
        summary_key = run.resolved.get(norm(name), (None,))[0]
        if summary_key:
            summaries.setdefault(summary_key, text)
    for ins in p.entity_inserts:
        if ins["summary_text"] is None and ins["canonical_key"] in summaries:
            ins["summary_text"] = summaries[ins["canonical_key"]]
    for key in sorted(run.touched_keys):
        if key in existing:
            upd: dict[str, Any] = {"last_seen_at": now}
            if key in run.display_updates:
                upd["display_name"] = run.display_updates[key][:256]
                p.renamed[key] = [existing[key]["display_name"], upd["display_name"]]
            if existing[key]["summary_text"] is None and key in summaries:
                upd["summary_text"] = summaries[key]
            p.entity_updates[key] = upd
    # aliases: never rebound
    bound = reads.lookup_aliases(conn, t, ag, list(run.alias_regs), user)
    for alias, (key, etype) in sorted(run.alias_regs.items()):
        if alias in bound:
            if bound[alias][0] != key:
                run.warn(f"alias conflict: {alias!r} is bound to {bound[alias][0]}, not rebound to {key}")
            continue
        p.alias_inserts.append(
            {"id": new_id(), "agent_id": ag, "user_id": user, "alias": alias[:256], "canonical_entity_key": key,
             "canonical_entity_type": etype, "created_at": now}
        )
    # facts
    for d in run.decisions:
        f = d.fact
        if d.action in ("ADD", "UPDATE"):
            old = d.target
            valid_from = f.valid_from or run.t_event
            count = 0
            supersedes = None
            valid_to = None
            if d.action == "UPDATE" and old is not None:
                if d.kind == "correction":
                    valid_from = f.valid_from or old["valid_from"]
                    count = int(old["user_correction_count"]) + 1
                    supersedes = old["id"]
                    p.fact_updates[old["id"]] = {"invalidated_at": now, "user_correction_count": count}
                    p.closing[old["id"]] = ("invalidated_at", now)
                elif valid_from < old["valid_from"]:
                    d.late = True  # late arrival: inserted closed, old stays current
                    valid_to = old["valid_from"]
                else:
                    count = int(old["user_correction_count"])
                    supersedes = old["id"]
                    p.fact_updates[old["id"]] = {"valid_to": valid_from}
                    p.closing[old["id"]] = ("valid_to", run.t_event)
            conf = float(f.confidence)
            row = {
                "id": f.new_id,
                "agent_id": ag,
                "user_id": user,
                "entity_type": f.subject_type,
                "entity_key": f.subject_key,
                "entity_name": f.subject_name[:256],
                "attribute_key": f.attribute_key,
                "fact_text": f.fact,
                "category": f.category,
                "confidence": conf,
                "importance": float(f.importance),
                "is_sensitive": bool(f.is_sensitive),
                "valid_from": valid_from,
                "valid_to": valid_to,
                "ttl_days": _ttl_for(run, f.attribute_key, f.ttl_days),
                "source_event_id": run.event_id,
                "supersedes_fact_id": supersedes,
                "embedding_vec": f.vec,
                "vitality_score": None,
                "is_stale": False,
                "cluster_id": None,
                "value_json": f.value,
                "needs_confirmation": conf < run.cfg.needs_confirmation_below,
                "last_confirmed_at": now,
                "times_retrieved": 0,
                "last_retrieved_at": None,
                "user_correction_count": count,
                "source_context": f.source_context[:512],
                "agent_annotation": None,
                "created_at": now,
                "ingested_at": now,
                "invalidated_at": None,
                "speaker": run.speaker,
                "reinforcement_count": 0,
            }
            p.fact_inserts.append(row)
        elif d.action == "NOOP":
            old = d.target
            assert old is not None  # a NOOP decision names the fact it confirms
            conf = max(float(old["confidence"]), float(f.confidence))
            upd = {
                "last_confirmed_at": now,
                "reinforcement_count": int(old["reinforcement_count"]) + 1,
                "is_stale": False,
                "confidence": conf,
            }
            if conf >= run.cfg.needs_confirmation_below:
                upd["needs_confirmation"] = False
            p.fact_updates[old["id"]] = upd
        elif d.action == "DELETE":
            assert d.target is not None  # a DELETE decision names the fact it closes
            p.fact_updates[d.target["id"]] = {"valid_to": run.t_event}
            p.closing[d.target["id"]] = ("valid_to", run.t_event)
    # links (KC-4.12)
    rel_ends: dict[str, set[str]] = {}
    for r in run.relations:
        if r.evidence is not None and r.evidence.evidence_id:
            rel_ends.setdefault(r.evidence.evidence_id, set()).update({r.source_key, r.target_key})
    from ..text import word_tokens

    write_keys = sorted(run.touched_keys | set(run.created))
    for row in p.fact_inserts:
        keys = [row["entity_key"]]
        words = word_tokens(row["fact_text"])
        for k in write_keys:
            if k not in keys and mentions(run, words, k):
                keys.append(k)
        for k in sorted(rel_ends.get(row["id"], set())):
            if k not in keys:
                keys.append(k)
        p.new_links[row["id"]] = keys
        for i, k in enumerate(keys):
            p.links.append({"id": new_id(), "fact_id": row["id"], "entity_key": k, "is_primary": i == 0, "agent_id": ag,
                            "user_id": user})
        p.recount_keys.update(keys)
    # store payloads
    for row in p.fact_inserts:
        p.store_new.append(row)
    changed = sorted(p.fact_updates)
    if changed:
        before = store_fact_metadata_for(conn, t, ag, changed)
        old_links = reads.links_of(conn, t, ag, changed)
        for fid in changed:
            for k in old_links.get(fid, []):
                p.recount_keys.add(k)
            if fid not in before:
                continue
            target = next(d.target for d in run.decisions if d.target is not None and d.target["id"] == fid)
            merged = {**target, **p.fact_updates[fid]}
            p.store_meta[fid] = fact_metadata(merged, old_links.get(fid, [target["entity_key"]]))
    p.recount_keys.update(run.touched_keys)
    p.recount_keys.update(run.created)
    return p


# ----------------------------------------------------------------------------- relations
def _edge_state(row: Optional[dict[str, Any]], closing: dict[str, tuple[str, datetime]]) -> str:
    if row is None:
        return "none"
    active = row["valid_to"] is None and row["invalidated_at"] is None
    if active and row["evidence_fact_id"] in closing:
        return "closed"
    return "active" if active else "closed"


def predict_relations(run: WriteRun, conn: sa.Connection, closing: dict[str, Any]) -> list[dict[str, Any]]:
    """Relation actions without writing (dry run, and the commit's own planning)."""
    t = run.t
    r_ = t.relationship
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    no_user = run.user_id is None
    edge = reads.cached_stmt(r_, ("edge", no_user), lambda: sa.select(r_).where(
        reads.p_owned(r_, no_user), r_.c.source_entity_key == sa.bindparam("p_source"),
        r_.c.target_entity_key == sa.bindparam("p_target"), r_.c.rel_type == sa.bindparam("p_type")))
    for r in run.relations:
        key = (r.source_key, r.target_key, r.rel_type)
        if key in seen:
            continue
        if r.source_key == r.target_key:
            run.warn(f"relation dropped: {r.rel_type} resolves both ends to {r.source_key}")
            continue
        seen.add(key)
        row = conn.execute(edge, {"p_agent": run.agent_id, "p_user": run.user_id, "p_source": r.source_key,
                                  "p_target": r.target_key, "p_type": r.rel_type}).mappings().first()
        state = _edge_state(dict(row) if row else None, closing)
        action = {"none": "created", "active": "reinforced", "closed": "reactivated"}[state]
        out.append({"rel": r, "row": dict(row) if row else None, "action": action})
    return out


# ----------------------------------------------------------------------------- commit
def _store_apply(run: WriteRun, plan: Plan, with_event: bool) -> None:
    """Store records (step 2), inside the write's block. The records' vectors are this
    instance's embedder's: the add carries its identity (``rt.made_by``), and the store refuses
    it when another process moved the store to another embedder since this instance was
    opened (rek47); a write that adds no store record checks the same in its transaction
    (``rt.check_embedder``), so no vector of the old space reaches the knowledge tables
    either (they were moved by the reembed, rek43). Checked before the knowledge rows are
    written; a refusal rolls the whole block back."""
    store = run.rt.store
    faults.check("store_index")
    batches = []
    if with_event:
        # SC-13.3 (oramem.threads): her event may not be the first record of hers in a thread
        # that holds only shared records (of no user): her erasure would take that thread
        # whole, the shared events and the facts learned from them included. Checked here,
        # in the write's block, so no other write slips in between
        refusal = run_sync(store, write_refusal(run.session_id, run.user_id, run.agent_id))
        if refusal is not None:
            raise ValueError(refusal)
        batches.append(
            PendingRecordBatch(
                [run.message],
                "message",
                record_ids=[run.event_id],
                embeddings=[run.event_vec],
                thread_ids=run.session_id,
                agent_ids=run.agent_id,
                user_ids=run.user_id,
                roles="user",
                timestamps=[iso(run.t_event)],
                metadata=[event_metadata(run)],
            )
        )
    if plan.store_new:
        rows = plan.store_new
        batches.append(
            PendingRecordBatch(
                [r["fact_text"] for r in rows],
                "fact",
                index_texts=[fact_index_text(r["entity_name"], r["fact_text"]) for r in rows],
                embeddings=[np.asarray(r["embedding_vec"], dtype=np.float32) for r in rows],
                record_ids=[r["id"] for r in rows],
                agent_ids=run.agent_id,
                thread_ids=None,
                user_ids=run.user_id,
                timestamps=[iso(r["valid_from"]) for r in rows],
                metadata=[fact_metadata(r, plan.new_links[r["id"]]) for r in rows],
                ttl_days=[r["ttl_days"] for r in rows],
            )
        )
    if batches:
        with run.rt.made_by():
            store.add_batches(batches)
    else:
        run.rt.check_embedder("nothing was written")
    for fid, md in sorted(plan.store_meta.items()):
        update_fact_record(store, fid, run.agent_id, md)
    faults.check("store_records")


def provenance_of(run: WriteRun, plan: Plan) -> dict[str, Any]:
    """What the write's event records of the entity rows it reached (KC-3.10, KC-4.19):
    ``entities`` every canonical key it resolved, touched or created (an ``add_entity`` too:
    one event records that call), ``entities_created`` the keys of the rows it inserted,
    ``aliases`` every alias it registered or found bound to its entities, ``aliases_created``
    those it inserted, ``summaries_seeded`` the keys whose summary it wrote from the message
    (KC-4.9 ``updated_summaries``), ``renamed`` the display names it extended (``{key:
    [before, after]}``, KC-4.9). All in the write's own scope."""
    return {
        "entities": sorted(run.touched_keys | set(run.created)),
        "entities_created": sorted(str(r["canonical_key"]) for r in plan.entity_inserts),
        "aliases": sorted(run.alias_regs),
        "aliases_created": sorted(str(r["alias"]) for r in plan.alias_inserts),
        "summaries_seeded": sorted({str(r["canonical_key"]) for r in plan.entity_inserts if r["summary_text"] is not None}
                                   | {k for k, u in plan.entity_updates.items() if u.get("summary_text") is not None}),
        "renamed": dict(sorted(plan.renamed.items())),
    }


#: the key of an ``add_knowledge`` event's ``trace_json`` that lists its text's lines and the
#: fact each one lists (:func:`given_of`; KC-3.6 [ext], del48)
GIVEN = "given"


def given_of(run: WriteRun) -> Optional[dict[str, Any]]:
    """What an ``add_knowledge`` call's event records of its text (KC-3.6 [ext], del48):
    ``lines`` the lines of its text (``run.given_lines``) and ``fact_ids`` per line the id of
    the fact row that line's item was stored as or confirmed (ADD / UPDATE: the new row, NOOP:
    the current row; ``None`` for a relation or entity line, or an item that stored nothing).
    A deleted fact's line leaves the text (``deletes.strip_given_events``). None for a message's
    event: a conversation is not rewritten by a fact delete."""
    if run.given_lines is None:
        return None
    by_idx: dict[int, str] = {}
    for d in run.decisions:
        fid = d.evidence_id
        if fid is not None and not d.fact.mirror:
            by_idx.setdefault(d.fact.idx, fid)

    def norm(line: str) -> str:
        return " ".join(line.split()).casefold()

    lines = [line for line, _ in run.given_lines]
    ids = [None if idx is None else by_idx.get(idx) for _, idx in run.given_lines]
    # an item dropped as a duplicate of another in the call (the same subject and text, up to
    # case and spaces) lists that one's row
    seen = {norm(line): fid for line, fid in zip(lines, ids) if fid is not None}
    ids = [seen.get(norm(line)) if fid is None and idx is not None else fid
           for line, fid, (_, idx) in zip(lines, ids, run.given_lines)]
    return {"lines": lines, "fact_ids": ids}


def _knowledge_tx(run: WriteRun, conn: sa.Connection, plan: Plan, event_mode: str, trace: dict[str, Any]) -> list[dict[str, Any]]:
    t = run.t
    ag, now = run.agent_id, run.now
    trace = {**trace, PROVENANCE: provenance_of(run, plan)}
    given = given_of(run)
    if given is not None:
        trace[GIVEN] = given
    # event
    faults.check("event")
    emotion = run.emotion or {}
    importance = max(
        (d.fact.importance for d in run.decisions if d.action in ("ADD", "UPDATE", "NOOP")), default=0.5
    )
    if event_mode == "insert":
        dml.insert_rows(conn, t.event, [dict(
            id=run.event_id, agent_id=ag, user_id=run.user_id, occurred_at=run.t_event, text=run.message, source=run.source,
            importance=importance, embedding_vec=run.event_vec, trace_json=trace, created_at=now,
            emotion_primary=emotion.get("emotion"), emotion_intensity=emotion.get("intensity"),
            energy_level=emotion.get("energy"), session_id=run.session_id, speaker=run.speaker,
        )])
    else:
        values: dict[str, Any] = {"importance": importance, "trace_json": trace}
        if run.emotion:
            values.update(emotion_primary=emotion.get("emotion"), emotion_intensity=emotion.get("intensity"),
                          energy_level=emotion.get("energy"))
        dml.update_owned(conn, t.event, ag, run.user_id, "id", run.event_id, values)
    # entities and aliases
    faults.check("entities")
    dml.insert_rows(conn, t.entity, plan.entity_inserts)
    dml.update_owned_many(conn, t.entity, ag, run.user_id, "canonical_key", plan.entity_updates)
    dml.insert_rows(conn, t.alias, plan.alias_inserts)
    # facts and cascades
    faults.check("facts")
    dml.insert_rows(conn, t.fact, plan.fact_inserts)
    dml.update_owned_many(conn, t.fact, ag, run.user_id, "id", plan.fact_updates)
    r_ = t.relationship
    for fid, (col, when) in plan.closing.items():
        no_user = run.user_id is None
        close = reads.cached_stmt(r_, ("close_by_evidence", col, no_user), lambda: (
            sa.update(r_)
            .where(reads.p_owned(r_, no_user), r_.c.evidence_fact_id == sa.bindparam("p_key"), r_.c.valid_to.is_(None),
                   r_.c.invalidated_at.is_(None))
            .values({col: sa.bindparam("v_when", type_=r_.c[col].type), "updated_at": sa.bindparam("v_now", type_=r_.c.updated_at.type)})))
        conn.execute(close, {"p_agent": ag, "p_user": run.user_id, "p_key": fid, "v_when": when, "v_now": now})
    # links
    faults.check("links")
    dml.insert_rows(conn, t.link, plan.links)
    # relations (after facts, so an edge re-asserted in the write that cascaded it ends up active)
    faults.check("relations")
    rel_out: list[dict[str, Any]] = []
    for item in predict_relations(run, conn, {}):
        r, row, action = item["rel"], item["row"], item["action"]
        ev = r.evidence.evidence_id if r.evidence is not None else None
        if row is None:
            dml.insert_rows(conn, r_, [dict(
                id=new_id(), agent_id=ag, user_id=run.user_id, source_entity_key=r.source_key, target_entity_key=r.target_key,
                rel_type=r.rel_type, strength=float(run.cfg.initial_relation_strength), evidence_fact_id=ev,
                provenance="llm", valid_from=run.t_event, valid_to=None, created_at=now, updated_at=now,
                last_used_at=None, invalidated_at=None,
            )])
        else:
            rel_values: dict[str, Any] = {
                "strength": min(1.0, float(row["strength"]) + float(run.cfg.relation_reinforce_step)),
                "updated_at": now,
            }
            if ev is not None:
                rel_values["evidence_fact_id"] = ev
            if action == "reactivated":
                rel_values.update(valid_to=None, invalidated_at=None, valid_from=run.t_event)
            dml.update_by_id(conn, r_, row["id"], rel_values)
        rel_out.append(
            {"source_entity_key": r.source_key, "target_entity_key": r.target_key, "rel_type": r.rel_type, "action": action}
        )
    # attribute registry (KC-4.16)
    faults.check("registry")
    _apply_registry(run, conn)
    # intentions (KC-4.17)
    faults.check("intentions")
    _apply_intentions(run, conn)
    # session observations (KC-4.18)
    faults.check("observations")
    _apply_observations(run, conn)
    # fact_count: the exact number of current facts linked
    recount(conn, t, ag, plan.recount_keys, now, run.user_id)
    if run.on_commit is not None:  # a background job marks itself done in this transaction
        run.on_commit(conn)
    return rel_out


def recount(conn: sa.Connection, t: KGTables, agent_id: str, keys: set[str], now: datetime, user_id: Optional[str]) -> None:
    """``fact_count`` = the exact number of distinct current facts linked in the scope
    ``(agent_id, user_id)`` (KC-3.7): counted in SQL; only facts with a TTL are fetched to
    apply expiry, and only when the first pass saw one. The statements are cached per table
    and scope shape (values bound)."""
    lk, f, e = t.link, t.fact, t.entity
    no_user = user_id is None

    def base() -> sa.Select[Any]:
        return (
            sa.select(lk.c.entity_key)
            .select_from(lk.join(f, f.c.id == lk.c.fact_id))
            .where(reads.p_owned(lk, no_user), lk.c.entity_key.in_(reads.expanding("p_batch")), f.c.valid_to.is_(None),
                   f.c.invalidated_at.is_(None))
        )

    # one pass over the links: the distinct facts without a TTL, and how many links lead to a
    # fact with one (their rows are read only when there are some: they need the expiry check)
    counted = reads.cached_stmt(lk, ("recount", no_user), lambda: (
        base().add_columns(sa.func.count(sa.distinct(sa.case((f.c.ttl_days.is_(None), f.c.id)))),
                           sa.func.count(f.c.ttl_days)).group_by(lk.c.entity_key)))
    with_ttl = reads.cached_stmt(lk, ("recount_ttl", no_user), lambda: (
        base().where(f.c.ttl_days.is_not(None)).add_columns(f.c.id, f.c.ingested_at, f.c.ttl_days)))
    store = reads.cached_stmt(e, ("recount_store", no_user), lambda: (
        sa.update(e).where(reads.p_owned(e, no_user), e.c.canonical_key == sa.bindparam("b_key"))
        .values(fact_count=sa.bindparam("b_n"))))
    for batch in reads.chunked(sorted(keys)):
        params = {"p_agent": agent_id, "p_user": user_id, "p_batch": batch}
        counts = {k: 0 for k in batch}
        with_ttl_links = 0
        for key, n, n_ttl in conn.execute(counted, params):
            counts[key] += int(n)
            with_ttl_links += int(n_ttl)
        seen: set[tuple[str, str]] = set()
        for r in (conn.execute(with_ttl, params).mappings() if with_ttl_links else ()):
            if (r["entity_key"], r["id"]) not in seen and not reads.is_expired(dict(r), now):
                seen.add((r["entity_key"], r["id"]))
                counts[r["entity_key"]] += 1
        conn.execute(store, [{"p_agent": agent_id, "p_user": user_id, "b_key": k, "b_n": n} for k, n in counts.items()])


def _apply_registry(run: WriteRun, conn: sa.Connection) -> None:
    t = run.t
    reg = t.registry
    cfg = run.cfg
    keys: dict[str, Any] = {}
    for d in run.decisions:
        f = d.fact
        if f.attribute_key and f.attribute_key not in keys:
            keys[f.attribute_key] = f
    rows = reads.registry_rows(conn, t, run.agent_id, list(keys))
    extra = {k for k in cfg.extra_attribute_keys}
    seen_updates: dict[str, dict[str, Any]] = {}
    for key, f in keys.items():
        row = rows.get(key)
        if row is None:
            user = key in extra
            status = "active" if user or cfg.attribute_promotion_threshold <= 1 else "proposed"
            dml.insert_rows(conn, reg, [dict(
                id=new_id(), agent_id=run.agent_id, key=key, status=status,
                value_type=infer_value_type(f.value) if f.value is not None else "string",
                conflict_policy="supersede", ttl_days=None, seen_count=1, proposed_by="user" if user else "llm",
                reason=f"extracted from event {run.event_id}", first_seen_at=run.now, last_seen_at=run.now,
                example_raw_key=(f.raw_attribute_key or key)[:128], created_at=run.now, updated_at=run.now,
            )])
        else:
            seen = int(row["seen_count"]) + 1
            values: dict[str, Any] = {"seen_count": seen, "last_seen_at": run.now, "updated_at": run.now}
            if row["status"] == "proposed" and seen >= cfg.attribute_promotion_threshold:
                values["status"] = "active"
            seen_updates[row["id"]] = values
    dml.update_by_id_many(conn, reg, seen_updates)


def _apply_intentions(run: WriteRun, conn: sa.Connection) -> None:
    t = run.t
    it = t.intention
    run.intentions_created = []
    if not run.intentions:
        return
    pending = conn.execute(
        sa.select(it.c.trigger_condition, it.c.intended_action).where(reads.owned(it, run.agent_id, run.user_id),
                                                                      it.c.status == "pending")
    ).all()
    seen = {(norm(c), norm(a)) for c, a in pending}
    for x in run.intentions:
        sig = (norm(x.trigger_condition), norm(x.intended_action))
        if sig in seen:
            continue
        seen.add(sig)
        iid = new_id()
        conn.execute(
            sa.insert(it).values(
                id=iid, agent_id=run.agent_id, user_id=run.user_id, trigger_type=x.trigger_type, trigger_condition=x.trigger_condition,
                intended_action=x.intended_action, due_date=x.due_date, status="pending", trigger_embedding_vec=x.vec,
                source_context=run.session_id, outcome_note=None, created_at=run.now, triggered_at=None,
                fulfilled_at=None,
            )
        )
        run.intentions_created.append(
            {"intention_id": iid, "trigger_type": x.trigger_type, "trigger_condition": x.trigger_condition,
             "intended_action": x.intended_action, "due_date": x.due_date}
        )


def _apply_observations(run: WriteRun, conn: sa.Connection) -> None:
    t = run.t
    so = t.session_observation
    run.observations_created = []
    for x in run.observations:
        oid = new_id()
        sources = [run.event_id]
        if x.topic:
            older = conn.execute(
                sa.select(so.c.id, so.c.topic, so.c.source_message_ids).where(
                    reads.owned(so, run.agent_id, run.user_id), so.c.session_id == run.session_id,
                    so.c.is_active == True  # noqa: E712
                ).order_by(so.c.created_at, so.c.id)
            ).mappings().all()
            for o in older:
                if o["topic"] and norm(o["topic"]) == norm(x.topic):
                    for s in o["source_message_ids"] or []:
                        if s not in sources:
                            sources.append(s)
                    conn.execute(sa.update(so).where(so.c.id == o["id"]).values(is_active=False, merged_into_id=oid))
        conn.execute(
            sa.insert(so).values(
                id=oid, agent_id=run.agent_id, user_id=run.user_id, content=x.content, topic=x.topic, entities_mentioned=x.entity_keys,
                created_at=run.now, referenced_at=None, relative_offset=None, source_message_ids=sources,
                is_active=True, merged_into_id=None, emotion_label=(run.emotion or {}).get("emotion"),
                embedding_vec=x.vec, session_id=run.session_id,
            )
        )
        run.observations_created.append(
            {"observation_id": oid, "content": x.content, "topic": x.topic, "entities_mentioned": list(x.entity_keys)}
        )


def _check_event_left(run: WriteRun, conn: sa.Connection, event_mode: str) -> None:
    """``reprocess_event`` (``event_mode="update"``) completes an event it read before the model
    call; in its commit transaction the event must still be there, in its scope: when it was
    deleted meanwhile (its user erased, KC-3.10; its thread or the event deleted) nothing of
    its message is stored (before, the reprocess wrote the facts, entities and fact records
    of an erased user back after her ``forget``). The row is locked (``FOR UPDATE``; SQLite
    serialises writers) so an erasure that has not reached it waits for this commit. On
    Oracle the agent's lock row is taken first (``OracleAccess.write``), which an erasure's
    ``LOCK TABLE <ID>_KG_AGENT IN EXCLUSIVE MODE`` (its first statement) conflicts with: an
    erasure that deleted her facts before this commit has locked the table, so this commit
    waits for it and then finds the event gone (plsql/VERIFY.md)."""
    if event_mode != "update":
        return
    ev = run.t.event
    left = conn.execute(sa.select(ev.c.id).where(reads.owned(ev, run.agent_id, run.user_id), ev.c.id == run.event_id)
                        .with_for_update()).first()
    if left is None:
        raise ConflictError(
            f"event {run.event_id!r} was deleted (or its user erased) while it was reprocessed: nothing was stored")


def commit_write(run: WriteRun, *, event_mode: str, trace: dict[str, Any], with_event_record: bool) -> list[dict[str, Any]]:
    """Run the commit phase (sync; called in a worker thread) in one transaction. Returns
    the relation actions."""
    backend = run.backend
    with backend.lock():
        with backend.write("knowledge write", run.agent_id) as conn:
            _check_event_left(run, conn, event_mode)
            erasures.check_run(run, conn)  # KC-3.10: her erasure committed while this write ran
            recheck(run, conn)
            plan = build_plan(run, conn)
            _store_apply(run, plan, with_event_record)
            rel_out = _knowledge_tx(run, conn, plan, event_mode, trace)
            faults.check("commit")
        faults.check("committed")
    run.plan = plan
    return rel_out


def commit_event_only(run: WriteRun, *, trace: dict[str, Any], event_mode: str) -> None:
    """KC-7.3 keep_event: the event (and its store record) with ``trace_json.status``."""
    backend = run.backend
    plan = Plan()
    run.decisions = []
    run.relations = []
    run.intentions = []
    run.observations = []
    with backend.lock():
        with backend.write("knowledge write (event only)", run.agent_id) as conn:
            _check_event_left(run, conn, event_mode)
            erasures.check_run(run, conn)  # KC-3.10
            _store_apply(run, plan, event_mode == "insert")
            _knowledge_tx(run, conn, plan, event_mode, trace)
