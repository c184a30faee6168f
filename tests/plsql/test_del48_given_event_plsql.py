"""del48 on the Oracle path: ``KnowledgeMemory.delete`` strips a deleted fact's line from the
``add_knowledge`` events listing it through SQLAlchemy (``deletes.strip_given_events``) and
``store.update`` (the public store API). The statements it sends, compiled with SQLAlchemy's
Oracle dialect over a recording connection (no database): plain SELECTs on key columns,
``trace_json IS NOT NULL`` (no comparison against the JSON value in SQL: ORA-40796), an UPDATE
of the event row's text, its JSON ``trace_json`` (a bound value) and ``embedding_vec = NULL``.
Static-checked, not run against Oracle. The PL/SQL ``on_store_delete`` (a store-side delete or
purge of a fact record on Oracle) does not strip events yet (KC-3.6 [ext], STATUS.md)."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy.dialects import oracle


def test_the_statements_compile_for_oracle():
    from oramem.knowledge.db.schema import build_tables
    from oramem.knowledge.deletes import strip_given_events

    t = build_tables("MYSTORE", 8)
    sent: list[tuple[str, dict]] = []
    when = datetime(2025, 1, 1, tzinfo=timezone.utc)
    given = {"status": "ok", "given": {"lines": ["Room: code 1", "Room: blue door"], "fact_ids": ["f1", "f2"]}}

    class _Conn:
        def execute(self, stmt):
            compiled = stmt.compile(dialect=oracle.dialect())
            text = str(compiled)
            sent.append((text, dict(compiled.params)))
            if text.startswith('SELECT "MYSTORE_KG_FACT".source_event_id'):
                return [("e1", "a1", "alice", when, when, 1)]  # confirmed once (a NOOP)
            if text.startswith('SELECT "MYSTORE_KG_EVENT".id'):
                return [("e1", "a1", "alice", given)]
            return []

    [rw] = strip_given_events(_Conn(), t, ["f1"])
    assert (rw.record_type, rw.record_id, rw.agent_id, rw.user_id, rw.content) == ("message", "e1", "a1", "alice",
                                                                                   "Room: blue door")
    texts = [s for s, _ in sent]
    assert '"MYSTORE_KG_FACT".id IN (' in texts[0]
    assert all('trace_json IS NOT NULL' in s for s in texts[1:3])
    assert '"MYSTORE_KG_EVENT".user_id = :user_id_1' in texts[2] and '"MYSTORE_KG_EVENT".created_at >=' in texts[2]
    assert '"MYSTORE_KG_EVENT".created_at <=' in texts[2]
    update, params = sent[3]
    assert update.startswith('UPDATE "MYSTORE_KG_EVENT" SET ') and update.endswith('WHERE "MYSTORE_KG_EVENT".id = :id_1')
    assert {"text=:text", "trace_json=:trace_json", "embedding_vec=:embedding_vec"} <= set(
        update.split(" SET ")[1].split(" WHERE ")[0].split(", "))
    assert params["embedding_vec"] is None and params["trace_json"]["given"] == {"lines": ["Room: blue door"], "fact_ids": ["f2"]}
    assert len(sent) == 4


def test_a_never_confirmed_fact_reads_no_window_of_its_scopes_events():
    """Only a fact a later call confirmed (reinforcement_count > 0) makes the delete read its
    scope's events, between the fact and its last confirmation: deleting a never-confirmed fact
    reads its source event by id and nothing else (a scan of the scope's events made every fact
    delete grow with the scope: 2,000 events, 3.4 -> 31 ms per store delete)."""
    from oramem.knowledge.db.schema import build_tables
    from oramem.knowledge.deletes import strip_given_events

    t = build_tables("MYSTORE", 8)
    sent: list[str] = []
    when = datetime(2025, 1, 1, tzinfo=timezone.utc)

    class _Conn:
        def execute(self, stmt):
            text = str(stmt.compile(dialect=oracle.dialect()))
            sent.append(text)
            if text.startswith('SELECT "MYSTORE_KG_FACT".source_event_id'):
                return [("e1", "a1", "alice", when, when, 0)]
            return []

    assert strip_given_events(_Conn(), t, ["f1"]) == []
    assert len(sent) == 2 and '"MYSTORE_KG_EVENT".id IN (' in sent[1]
    assert not any("created_at >=" in s for s in sent)
