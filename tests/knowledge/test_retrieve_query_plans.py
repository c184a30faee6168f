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
