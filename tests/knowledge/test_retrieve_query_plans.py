"""Issue 25 item 6 (round e): retrieve's reads and usage writes of rows by id use the primary
key. SQLite has no statistics on the knowledge tables, so a ``WHERE agent_id = ? AND id IN
(...)`` made it search the ``(agent_id, ...)`` index: every fact of the agent for the usage
tracking's UPDATE, every event of the agent for the event rows (55 ms of a 100k-fact retrieve).
This test records every statement a retrieve runs (as user A, as user B and as the shared
scope) and asks SQLite for each one's plan: a statement that names rows by id must not walk
an index by agent alone. A query plan, not a timing: it holds on any machine."""

from __future__ import annotations

import re
from typing import Any

import pytest
import sqlalchemy as sa

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.testing import HashEmbedder, ScriptedLLM

from .helpers import Clock, write_keeper

NEUTRAL = {"emotion": "neutral", "intensity": 0.2, "energy": "medium"}


def _add_all(payload: dict[str, Any]) -> dict[str, Any]:
    return {"decisions": [{"new_fact_index": f["index"], "action": "ADD"} for f in payload["new_facts"]]}


@pytest.fixture
def loaded(tmp_path):
    clock = Clock()
    store = SQLiteMemoryStore(str(tmp_path / "plans.db"), embedder=HashEmbedder(384), clock=clock, search_strategy="hybrid")
    llm = ScriptedLLM({"event_emotion": NEUTRAL, "reconcile": _add_all, "resolve_entity": {"match_index": 0}})
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False, dedup_similarity=1.01), clock=clock)
    for user, who, thing in (("alice", "Alice", "ruby"), ("bob", "Bob", "opal"), (None, "Hotel", "key")):
        write_keeper(km, llm, clock, user, who, f"the {thing}", f"{who} keeps the {thing} in the drawer")
    try:
        yield km
    finally:
        km.close()
        store.close()


def test_rows_named_by_id_are_read_and_updated_by_primary_key(loaded):
    km = loaded
    engine = km.runtime.backend.sa_engine
    seen: list[tuple[str, Any]] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        for user in ("alice", "bob", None):
            r = km.retrieve("desk", "Alice keeps the ruby in the drawer", user_id=user)
            assert r.facts, user
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    statements = [(s, p) for s, p in seen if re.match(r"\s*(SELECT|UPDATE|WITH)\b", s)]
    touched = {t for s, _ in statements for t in re.findall(r'"(\w+)"\.id IN \(', s)}
    # the retrieve reads facts and events by id and updates facts and edges by id
    assert {"DEFAULT_KG_FACT", "DEFAULT_KG_EVENT", "DEFAULT_KG_RELATIONSHIP"} <= touched, touched
    bad = []
    with km.runtime.backend.read() as conn:
        for statement, params in statements:
            by_id = set(re.findall(r'"(\w+)"\.id IN \(', statement))
            if not by_id:
                continue
            for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all():
                detail = row[-1]
                for table in by_id:
                    if re.search(rf"\b{table}\b USING (COVERING )?INDEX \w+ \(agent_id=\?\)", detail):
                        bad.append((detail, " ".join(statement.split())[:160]))
    assert not bad, bad


# -- round f (ix25): the fact table's rank, same-key and current-fact indexes


def _plans(km, statements):
    out = []
    with km.runtime.backend.read() as conn:
        for statement, params in statements:
            plan = [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()]
            out.append((" ".join(statement.split()), plan))
    return out


def _recorded(km, action):
    engine = km.runtime.backend.sa_engine
    seen: list[tuple[str, Any]] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if not executemany:
            seen.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        action()
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    return [(s, p) for s, p in seen if re.match(r"\s*(SELECT|WITH)\b", s)]


TERMS = r"SELECT \S+\.attribute_key, \S+\.value_json, \S+\.ttl_days, \S+\.ingested_at "  # the expansion's terms


def test_an_entitys_facts_are_read_in_rank_order_from_the_rank_index(loaded):
    """Spreading's facts per entity and the expansion's terms keep an entity's first facts by
    (importance, valid_from) newest first: each read walks the rank index from the top and
    stops (at 100k facts an entity holds ~1,000), for every scope (fails on main: the
    ROW_NUMBER query and the terms' query read every fact of the keys by
    FACT_AGT_ENT_VT_IX and sorted them)."""
    km = loaded

    def run():
        for user in ("alice", "bob", None):
            assert km.retrieve("desk", "Alice keeps the ruby in the drawer", user_id=user).facts, user

    ranked = []
    for statement, plan in _plans(km, _recorded(km, run)):
        by_key = [line for line in plan if re.search(r"\bDEFAULT_KG_FACT\b USING .*\(agent_id=\? AND entity_key=\?", line)]
        if by_key and re.search(r'"DEFAULT_KG_FACT"\.importance DESC', statement):
            ranked.append((statement[:160], by_key))
    # spreading's facts of the seeds' entities in each scope, the expansion's terms (Alice is
    # primed for her own retrieve only)
    assert len(ranked) >= 4 and any(re.match(TERMS, s) for s, _ in ranked), ranked
    bad = [(s, lines) for s, lines in ranked if any("DEFAULT_KG_FACT_AGT_ENT_RANK_IX" not in line for line in lines)]
    assert not bad, bad


def test_write_reads_same_key_facts_and_recounts_from_their_indexes(loaded):
    """The write path's same-key read goes by (agent, entity, attribute) and the recount
    checks each linked fact from FACT_ID_CUR_IX alone (fails on main: both walked the
    entity's facts or read every linked fact's row)."""
    km = loaded
    llm = km.runtime.llm
    clock = km.runtime.clock
    from .helpers import extract

    def run():
        for user in ("alice", None):
            llm.route("extract", extract(entities=[("Alice", "person")], facts=[("Alice", "Alice lives in Porto", "city")]))
            km.write("desk", "Alice lives in Porto", "Alice", user_id=user)
            clock.advance(minutes=1)  # type: ignore[attr-defined]

    plans = _plans(km, _recorded(km, run))
    same_key = [p for s, p in plans if re.search(r'"DEFAULT_KG_FACT"\.attribute_key IN \(', s) and "valid_to IS NULL" in s]
    recount = [p for s, p in plans if "count(DISTINCT" in s and "DEFAULT_KG_FACT_ENTITY_LINK" in s]
    assert same_key and len(recount) >= 2, (len(same_key), len(recount))
    assert all(any("DEFAULT_KG_FACT_AGT_ENT_ATTR_IX" in line for line in p) for p in same_key), same_key
    assert all(any("COVERING INDEX DEFAULT_KG_FACT_ID_CUR_IX" in line for line in p) for p in recount), recount
