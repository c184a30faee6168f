"""KC §3: tables, seed columns and defaults, constraints, engine mapping, store indexing and
two-way delete cascades (SC-8.5 deletion hook)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from oramem import SchemaError, SQLiteMemoryStore
from oramem.knowledge import KnowledgeMemory
from oramem.knowledge.db.schema import TABLE_NAMES, oracle_ddl
from oramem.testing import HashEmbedder

from .helpers import T0, extract

SEED_COLUMNS = {
    "FACT": "id agent_id entity_type entity_key entity_name attribute_key fact_text category confidence importance "
            "is_sensitive valid_from valid_to ttl_days source_event_id supersedes_fact_id embedding_vec vitality_score "
            "is_stale cluster_id value_json needs_confirmation last_confirmed_at times_retrieved last_retrieved_at "
            "user_correction_count source_context agent_annotation created_at ingested_at invalidated_at speaker "
            "reinforcement_count",
    "ENTITY": "id agent_id canonical_key display_name entity_type summary_text embedding_vec fact_count importance_score "
              "is_active first_seen_at last_seen_at summary_refreshed_at created_at",
    "ENTITY_ALIAS": "id agent_id alias canonical_entity_key canonical_entity_type created_at",
    "RELATIONSHIP": "id agent_id source_entity_key target_entity_key rel_type strength evidence_fact_id provenance "
                    "valid_from valid_to created_at updated_at last_used_at invalidated_at",
    "EVENT": "id agent_id occurred_at text source importance embedding_vec trace_json created_at emotion_primary "
             "emotion_intensity energy_level session_id speaker",
    "CLUSTER": "id agent_id label summary_text cluster_type fact_count importance embedding_vec is_active last_updated_at created_at",
    "META_OBSERVATION": "id agent_id observation_type title text supporting_event_ids supporting_fact_ids confidence "
                        "importance times_reinforced is_active embedding_vec first_detected_at last_reinforced_at created_at",
    "FACT_ENTITY_LINK": "id fact_id entity_key is_primary agent_id",
    "ATTRIBUTE_REGISTRY": "id key status value_type conflict_policy ttl_days seen_count proposed_by reason first_seen_at "
                          "last_seen_at example_raw_key created_at updated_at agent_id",
    "INTENTION": "id agent_id trigger_type trigger_condition intended_action due_date status trigger_embedding_vec "
                 "source_context outcome_note created_at triggered_at fulfilled_at",
    "SESSION_OBSERVATION": "id agent_id content topic entities_mentioned created_at referenced_at relative_offset "
                           "source_message_ids is_active merged_into_id emotion_label embedding_vec session_id",
}


def test_eleven_tables_with_seed_columns(km):
    insp = sa.inspect(km._backend.sa_engine)
    assert len(TABLE_NAMES) == 11
    for name in TABLE_NAMES:
        cols = {c["name"] for c in insp.get_columns(f"DEFAULT_KG_{name}")}
        # KC-3.7: every table but the attribute registry adds the user dimension to the seed's columns
        extra = set() if name == "ATTRIBUTE_REGISTRY" else {"user_id"}
        assert cols == set(SEED_COLUMNS[name].split()) | extra, name
    assert insp.has_table("DEFAULT_KG_AGENT")


def test_seed_defaults_kc31(km):
    t = km._tables
    now = T0
    with km._backend.write("t", "a1") as c:
        c.execute(sa.insert(t.fact).values(id="f", agent_id="a1", entity_type="person", entity_key="person:x", fact_text="x",
                                           valid_from=now, created_at=now, ingested_at=now))
        c.execute(sa.insert(t.event).values(id="e", agent_id="a1", occurred_at=now, text="t", created_at=now))
        c.execute(sa.insert(t.relationship).values(id="r", agent_id="a1", source_entity_key="a", target_entity_key="b",
                                                   rel_type="x", valid_from=now, created_at=now, updated_at=now))
        c.execute(sa.insert(t.meta_observation).values(id="m", agent_id="a1", observation_type="pattern", title="t", text="t",
                                                       first_detected_at=now, last_reinforced_at=now, created_at=now))
        c.execute(sa.insert(t.registry).values(id="g", agent_id="a1", key="k", first_seen_at=now, last_seen_at=now, created_at=now))
        c.execute(sa.insert(t.intention).values(id="i", agent_id="a1", trigger_type="event", trigger_condition="c",
                                                intended_action="a", created_at=now))
        c.execute(sa.insert(t.cluster).values(id="c", agent_id="a1", label="l", last_updated_at=now, created_at=now))
    with km._backend.read() as c:
        f = c.execute(sa.select(t.fact)).mappings().one()
        assert (f["confidence"], f["importance"], f["is_sensitive"], f["is_stale"], f["reinforcement_count"]) == (0.8, 0.5, False, False, 0)
        e = c.execute(sa.select(t.event)).mappings().one()
        assert (e["source"], e["importance"]) == ("api", 0.5)
        assert c.execute(sa.select(t.relationship.c.strength)).scalar() == 0.8
        assert c.execute(sa.select(t.meta_observation.c.confidence)).scalar() == 0.7
        g = c.execute(sa.select(t.registry)).mappings().one()
        assert (g["value_type"], g["conflict_policy"]) == ("string", "supersede")
        assert c.execute(sa.select(t.intention.c.status)).scalar() == "pending"
        assert c.execute(sa.select(t.cluster.c.cluster_type)).scalar() == "auto"


def test_constraints_and_indexes_kc33(km):
    insp = sa.inspect(km._backend.sa_engine)
    uniques = {n: {tuple(u["column_names"]) for u in insp.get_unique_constraints(f"DEFAULT_KG_{n}")}
               for n in ("ENTITY", "ENTITY_ALIAS", "RELATIONSHIP", "FACT_ENTITY_LINK", "ATTRIBUTE_REGISTRY")}
    # KC-3.7: unique per (agent, user); shared rows (user_id NULL) unique per agent (SQLite: partial indexes)
    assert ("agent_id", "user_id", "canonical_key") in uniques["ENTITY"]
    assert ("agent_id", "user_id", "alias") in uniques["ENTITY_ALIAS"]
    assert ("agent_id", "user_id", "source_entity_key", "target_entity_key", "rel_type") in uniques["RELATIONSHIP"]
    assert ("fact_id", "entity_key") in uniques["FACT_ENTITY_LINK"]
    assert ("agent_id", "key") in uniques["ATTRIBUTE_REGISTRY"]
    idx = lambda n: {tuple(i["column_names"]) for i in insp.get_indexes(f"DEFAULT_KG_{n}")}  # noqa: E731
    assert ("agent_id", "entity_key", "valid_to") in idx("FACT")
    assert {("agent_id", "entity_key"), ("fact_id",)} <= idx("FACT_ENTITY_LINK")
    assert ("agent_id", "target_entity_key") in idx("RELATIONSHIP")
    assert ("agent_id", "occurred_at") in idx("EVENT")
    assert ("agent_id", "status", "due_date") in idx("INTENTION")


def test_oracle_ddl_file_is_generated_and_static_checkable():
    path = Path(__file__).resolve().parents[2] / "ddl" / "knowledge" / "001_kg_tables.sql"
    text = path.read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--")).strip() + "\n"
    assert body == oracle_ddl("DEFAULT", 384)
    statements = [s.strip() for s in body.split(";") if s.strip()]
    assert len(statements) == 13 + sum(1 for s in statements if s.startswith("CREATE INDEX"))
    for s in statements:
        assert re.match(r"^CREATE (TABLE|INDEX) IF NOT EXISTS ", s), s[:60]
    assert "VECTOR(384, FLOAT32)" in body and " JSON" in body and "BOOLEAN DEFAULT TRUE" in body
    assert "VECTOR(1536" not in oracle_ddl("S1", 768) and "VECTOR(768, FLOAT32)" in oracle_ddl("S1", 768)


def test_vectors_are_float32_blobs_of_store_dim(km, llm):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro likes tea")]))
    km.write("a1", "I like tea", "Pedro")
    t = km._tables
    with km._backend.read() as c:
        v = c.execute(sa.select(t.fact.c.embedding_vec)).scalar()
        raw = c.exec_driver_sql('SELECT typeof(embedding_vec), length(embedding_vec), typeof(valid_from), valid_from FROM "DEFAULT_KG_FACT"').one()
    assert isinstance(v, np.ndarray) and v.dtype == np.float32 and v.shape == (384,)
    assert raw[0] == "blob" and raw[1] == 384 * 4 and raw[2] == "text" and raw[3] == "2025-01-01T12:00:00.000000Z"


def test_store_indexing_kc35(km, llm, store):
    llm.route("extract", extract([("Pedro", "person"), ("Rio", "place")],
                                 [{"subject": "Pedro", "fact": "Pedro lives in Rio", "attribute_key": "residence", "ttl_days": 30}],
                                 [("Pedro", "Rio", "lives in")]))
    r = km.write("a1", "I live in Rio", "Pedro", session_id="s9", source="chat")
    fid = r.facts_added[0]["fact_id"]
    rec = store.get("fact", fid)
    assert rec.content == "Pedro lives in Rio" and rec.agent_id == "a1" and rec.thread_id is None and rec.user_id is None
    assert rec.timestamp.startswith("2025-01-01T12:00:00")
    assert rec.expires_at is not None and rec.expires_at.startswith("2025-01-31")
    assert rec.metadata == {"kg_entity_keys": ["person:pedro", "place:rio"], "kg_primary": "person:pedro",
                            "kg_valid_from": "2025-01-01T12:00:00.000000Z", "kg_ingested_at": "2025-01-01T12:00:00.000000Z",
                            "kg_is_stale": False, "kg_confidence": 0.6, "kg_attribute_key": "residence"}
    ev = store.get("message", r.event_id)
    assert ev.role == "user" and ev.thread_id == "s9" and ev.agent_id == "a1"
    assert ev.metadata == {"kg_event": True, "kg_speaker": "Pedro", "kg_source": "chat"}  # KC-3.9 marker
    hits = store.search("where does Pedro live Rio", agent_id="a1", record_types=["fact"],
                        metadata_filter={"kg_entity_keys": {"$array_contains": "place:rio"}})
    assert [h[0].id for h in hits] == [fid]


def _write_rio(km, llm):
    llm.route("extract", extract([("Pedro", "person"), ("Rio", "place")], [("Pedro", "Pedro lives in Rio", "residence")],
                                 [("Pedro", "Rio", "lives in")]))
    return km.write("a1", "I live in Rio", "Pedro", session_id="s1")


def test_store_delete_of_fact_record_cascades_kc36(km, llm, store):
    r = _write_rio(km, llm)
    fid = r.facts_added[0]["fact_id"]
    assert store.delete("fact", fid) == 1
    assert km.get("a1", fid) is None and km.relationships("a1", include_inactive=True) == []
    assert {e.canonical_key: e.fact_count for e in km.entities("a1")} == {"person:pedro": 0, "place:rio": 0}


def test_delete_thread_removes_event_and_nulls_source_kc36(km, llm, store):
    r = _write_rio(km, llm)
    fid = r.facts_added[0]["fact_id"]
    assert km.get("a1", fid).source_event_id == r.event_id
    store.delete_thread("s1")
    assert km.get("a1", fid).source_event_id is None
    t = km._tables
    with km._backend.read() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(t.event)).scalar() == 0


def test_delete_thread_removes_session_observations_and_intentions(km, llm, store):
    """feature-checks row 4: notes from a deleted conversation must not survive it."""
    llm.route("extract", extract([("Pedro", "person")], [],
                                 intentions=[{"trigger_type": "event", "trigger_condition": "sees Ana", "intended_action": "ask about Rio"}],
                                 observations=[{"content": "Pedro talks about home", "topic": "home"}]))
    km.write("a1", "remind me to ask Ana about Rio; I miss home", "Pedro", session_id="s1")
    llm.route("extract", extract([("Pedro", "person")], [],
                                 intentions=[{"trigger_type": "event", "trigger_condition": "sees Bo", "intended_action": "call"}],
                                 observations=[{"content": "Pedro is busy", "topic": "work"}]))
    km.write("a1", "remind me to call Bo; busy week", "Pedro", session_id="s2")
    t = km._tables

    def rows(table, column):
        with km._backend.read() as c:
            return sorted(r[0] for r in c.execute(sa.select(table.c[column])))

    assert rows(t.session_observation, "session_id") == ["s1", "s2"]
    assert rows(t.intention, "source_context") == ["s1", "s2"]
    store.delete_thread("s1")
    assert rows(t.session_observation, "session_id") == ["s2"]
    assert rows(t.intention, "source_context") == ["s2"]


def test_ttl_purge_removes_knowledge_fact(km, llm, store, clock):
    llm.route("extract", extract([("Pedro", "person")], [{"subject": "Pedro", "fact": "Pedro is in Lisbon this week", "ttl_days": 2}]))
    fid = km.write("a1", "I'm in Lisbon this week", "Pedro").facts_added[0]["fact_id"]
    clock.advance(days=3)
    assert km.get("a1", fid).status == "expired" and km.get_all("a1") == []
    assert store.purge_expired() >= 1
    assert km.get("a1", fid) is None


def test_schema_policy_require_existing(tmp_path, llm):
    s = SQLiteMemoryStore(str(tmp_path / "p.db"), embedder=HashEmbedder(384))
    with pytest.raises(SchemaError, match="CREATE_IF_NECESSARY"):
        KnowledgeMemory(s, llm, schema_policy="require_existing")
    KnowledgeMemory(s, llm).close()  # the store's policy (CREATE_IF_NECESSARY) creates them
    KnowledgeMemory(s, llm, schema_policy="require_existing").close()
    s.close()


def test_memory_store_shares_connection(llm):
    s = SQLiteMemoryStore(":memory:", embedder=HashEmbedder(384), memory_store_id="kg2")
    km = KnowledgeMemory(s, llm)
    assert km._tables.fact.name == "KG2_KG_FACT"
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro likes tea")]))
    llm.route("event_emotion", {"emotion": "joy", "intensity": 0.3, "energy": "low"})
    r = km.write("a1", "I like tea", "Pedro")
    assert s.get("fact", r.facts_added[0]["fact_id"]) is not None
    km.close()
    s.close()


def test_oracle_backend_refuses_async_sources_and_unknown_stores():
    from oramem import StoreError
    from oramem.oracle.sql_access import OracleAccess

    class Engine:
        source_kind, source = "async_pool", object()

    class Store:
        engine = Engine()

    with pytest.raises(StoreError, match="synchronous"):
        OracleAccess(Store())
    Engine.source_kind = None
    with pytest.raises(StoreError, match="connection source"):
        OracleAccess(Store())
