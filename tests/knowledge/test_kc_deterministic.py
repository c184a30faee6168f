"""Deterministic writes (issue: writes without an LLM): add_fact / add_entity / add_relation /
add_knowledge go through the write pipeline's resolution, reconciliation, bi-temporal upsert and
indexing without an extraction call; KnowledgeMemory(llm=None) allows them."""
from __future__ import annotations

import pytest
import sqlalchemy as sa

from oramem.knowledge import KnowledgeConfig, KnowledgeMemory

from .helpers import extract


@pytest.fixture
def det(store, clock):
    km = KnowledgeMemory(store, None, config=KnowledgeConfig(), clock=clock)
    yield km
    km.close()


def _counts(km) -> dict[str, int]:
    t = km._tables
    with km._backend.read() as conn:
        return {name: conn.execute(sa.select(sa.func.count()).select_from(tab)).scalar_one()
                for name, tab in (("fact", t.fact), ("entity", t.entity), ("rel", t.relationship), ("event", t.event))}


def test_without_an_llm_the_llm_steps_are_off_and_write_is_refused(det):
    assert det.has_llm is False
    assert (det.config.enable_reranker, det.config.enable_llm_resolution, det.config.enable_emotion_tagging) == (False,) * 3
    before = _counts(det)
    with pytest.raises(ValueError, match="add_fact"):
        det.write("a1", "I like tea", "Pedro")
    assert _counts(det) == before


def test_add_fact_adds_confirms_and_supersedes_by_rules(det, clock):
    r1 = det.add_fact("a1", "Pedro", "Pedro works at Talho", subject_type="person", attribute_key="employer", value="Talho")
    assert r1.success and len(r1.facts_added) == 1 and r1.tokens_used.total_tokens == 0
    first = r1.facts_added[0]["fact_id"]
    f = det.get("a1", first)
    assert (f.entity_key, f.attribute_key, f.value_json, f.status) == ("person:pedro", "employer", "Talho", "active")
    clock.advance()
    r2 = det.add_fact("a1", "Pedro", "Pedro works at Talho", attribute_key="employer", value="Talho")
    assert r2.facts_added == [] and r2.facts_updated == [] and len(r2.facts_unchanged) == 1
    assert det.get("a1", first).reinforcement_count == 1
    clock.advance()
    r3 = det.add_fact("a1", "Pedro", "Pedro works at Vertix", attribute_key="employer", value="Vertix")
    assert len(r3.facts_updated) == 1 and r3.facts_updated[0]["previous_fact_id"] == first
    assert det.get("a1", first).status != "active"  # closed by the bi-temporal upsert
    clock.advance()
    r4 = det.add_fact("a1", "Pedro", "Pedro likes trams")
    assert len(r4.facts_added) == 1
    current = {f.fact_text for f in det.get_all("a1")}
    assert current == {"Pedro works at Vertix", "Pedro likes trams"}
    hits = det.retrieve("a1", "Where does Pedro work?").facts
    assert hits and hits[0].fact_text == "Pedro works at Vertix"


def test_entities_resolve_to_one_and_relations_make_edges(det):
    det.add_entity("a1", "Ana Souza", type="person", aliases=["Ana"])
    det.add_entity("a1", "Ana Souza", type="person")
    r = det.add_relation("a1", "Pedro", "Ana Souza", "partner of", source_type="person")
    assert r.relations and r.relations[0]["rel_type"] == "partner_of" and r.relations[0]["action"] == "created"
    keys = sorted(e.canonical_key for e in det.entities("a1"))
    assert keys == ["person:ana_souza", "person:pedro"]
    assert [x.rel_type for x in det.relationships("a1")] == ["partner_of"]


def test_bulk_add_is_validated_whole_before_anything_is_stored(det):
    before = _counts(det)
    bad = [
        dict(facts=[{"subject": "Pedro", "fact": "ok"}, {"subject": "", "fact": "x"}]),
        dict(facts=[{"subject": "Pedro", "fact": "x", "confidence": 1.5}]),
        dict(facts=[{"subject": "Pedro", "fact": "x", "colour": "red"}]),
        dict(facts=[{"subject": "I", "fact": "I like tea"}]),
        dict(relations=[{"source": "Pedro", "target": "pedro", "rel_type": "knows"}]),
        dict(entities=[{"name": "Ana", "type": "person"}], facts=[{"subject": "Ana", "fact": "x", "subject_type": "place"}]),
        dict(facts=[{"subject": "Pedro", "fact": "x", "valid_from": "not a date"}]),
        dict(),
    ]
    for kwargs in bad:
        with pytest.raises((ValueError, TypeError)):
            det.add_knowledge("a1", **kwargs)
    assert _counts(det) == before
    r = det.add_knowledge(
        "a1",
        entities=[{"name": "Lisbon", "type": "place"}],
        facts=[{"subject": "Pedro", "fact": "Pedro lives in Lisbon", "subject_type": "person", "valid_from": "2024-05-01"},
               {"subject": "Lisbon", "fact": "Lisbon trams are yellow"}],
        relations=[{"source": "Pedro", "target": "Lisbon", "rel_type": "lives in"}],
        source="crm-import",
    )
    assert len(r.facts_added) == 2 and r.event_id
    lives = [f for f in det.get_all("a1") if f.fact_text == "Pedro lives in Lisbon"][0]
    assert lives.valid_from.isoformat().startswith("2024-05-01")
    after = _counts(det)
    assert after["event"] == before["event"] + 1 and after["rel"] == before["rel"] + 1


def test_with_an_llm_reconciliation_asks_it(km, llm, clock):
    first = km.add_fact("a1", "Pedro", "Pedro works at Talho", subject_type="person").facts_added[0]["fact_id"]
    clock.advance()
    llm.route("reconcile", {"decisions": [{"new_fact_index": 1, "action": "UPDATE", "existing_fact_index": 1}]})
    r = km.add_fact("a1", "Pedro", "Pedro works at Talho Lda", subject_type="person")
    assert llm.calls_for("reconcile") and not llm.calls_for("extract")
    assert r.facts_updated and r.facts_updated[0]["previous_fact_id"] == first


def test_a_deterministic_fact_is_found_by_write_reconciliation_later(km, llm, clock):
    km.add_fact("a1", "Pedro", "Pedro likes tea", subject_type="person")
    clock.advance()
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro likes tea")]))
    r = km.write("a1", "I like tea", "Pedro")
    assert r.facts_added == [] and len(r.facts_unchanged) == 1


def test_retract_fact_closes_it_and_the_edges_it_evidences(det, clock):
    r = det.add_knowledge("a1", facts=[{"subject": "Pedro", "fact": "Pedro works at Talho", "subject_type": "person"}],
                          relations=[{"source": "Pedro", "target": "Talho", "rel_type": "works at", "target_type": "organization"}])
    fid = r.facts_added[0]["fact_id"]
    edge_facts = {f.fact_id for f in det.get_all("a1")} - {fid}
    clock.advance()
    assert det.retract_fact("a1", fid) is True
    assert det.retract_fact("a1", fid) is False and det.retract_fact("a2", fid) is False
    assert fid not in {f.fact_id for f in det.get_all("a1")}
    assert [h.fact_id for h in det.history("a1", fid)] == [fid] and det.get("a1", fid).valid_to is not None
    hits = det.retrieve("a1", "Where does Pedro work?", config_overrides={"min_score": 0.0}).facts
    assert fid not in {h.fact_id for h in hits}
    for other in edge_facts:  # the relation's mirror fact evidences the edge; retracting it closes the edge
        det.retract_fact("a1", other)
    assert det.relationships("a1") == []
    with pytest.raises(ValueError):
        det.retract_fact("a1", "")
