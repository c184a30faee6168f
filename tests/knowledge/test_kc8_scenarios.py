"""KC §8 acceptance scenarios that concern writing: 1-7, 10-16, 18 and 20's resolution
part. Retrieval-side expectations of these scenarios (``retrieve`` results) belong to the
read pipeline, which is not built yet; they are checked here through the visibility rule
of KC-0.3 applied to ``get_all(include_inactive=True)`` rows."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa

from oramem.knowledge import CorrectionResult, EmbeddingError, InputType, ExtractionMode
from oramem.testing import fail_at

from .helpers import T0, extract, reconcile


def visible(km, agent, as_of=None, known_at=None, now=None):
    """KC-0.3 visibility over all rows of an agent (reference implementation for tests)."""
    rows = km.get_all(agent, include_inactive=True, limit=10_000)
    now = now or km._clock()
    known = known_at or now
    at = as_of or now
    out = []
    for r in rows:
        if r.ingested_at > known:
            continue
        if r.invalidated_at is not None and r.invalidated_at <= known:
            continue
        if r.valid_from > at or (r.valid_to is not None and r.valid_to <= at):
            continue
        out.append(r.fact_id)
    return set(out)


def table_counts(km, agent=None):
    t = km._tables
    out = {}
    with km._backend.read() as c:
        for table in t.all_agent_tables():
            q = sa.select(sa.func.count()).select_from(table)
            if agent:
                q = q.where(table.c.agent_id == agent)
            out[table.name] = c.execute(q).scalar()
    return out


def store_ids(store, agent="a1"):
    return sorted(r.id for rt in ("fact", "message") for r in store.list(rt, agent_id=agent, limit=None))


LIVES = [("Pedro", "person"), ("São Paulo", "place")]


def w_lives(llm, place):
    llm.route(
        "extract",
        extract([("Pedro", "person"), (place, "place")], [("Pedro", f"Pedro lives in {place}", "residence", "biographical_milestone")],
                [("Pedro", place, "Lives In")]),
    )


def scenario1(km, llm, clock):
    w_lives(llm, "São Paulo")
    r1 = km.write("a1", "I live in São Paulo", "Pedro")
    t2 = clock.advance()
    w_lives(llm, "Curitiba")
    llm.route("reconcile", reconcile(("UPDATE", 1, 1)))
    r2 = km.write("a1", "I moved to Curitiba", "Pedro")
    t3 = clock.advance()
    w_lives(llm, "São Paulo")
    r3 = km.write("a1", "I moved back to São Paulo", "Pedro")
    f1 = r1.facts_added[0]["fact_id"]
    f2 = r2.facts_updated[0]["fact_id"]
    f3 = r3.facts_updated[0]["fact_id"]
    return f1, f2, f3, t2, t3


def test_s1_move_and_move_back(km, llm, clock, store):
    f1, f2, f3, t2, t3 = scenario1(km, llm, clock)
    active = km.relationships("a1")
    assert [(r.rel_type, r.target_entity_key, round(r.strength, 6), r.evidence_fact_id) for r in active] == [
        ("lives_in", "place:sao_paulo", 0.9, f3)
    ]
    curitiba = [r for r in km.relationships("a1", include_inactive=True) if r.target_entity_key == "place:curitiba"]
    assert len(curitiba) == 1 and curitiba[0].valid_to == t3 and not curitiba[0].is_active
    hist = km.history("a1", f3)
    assert [h.fact_id for h in hist] == [f1, f2, f3]
    assert hist[0].valid_to == hist[1].valid_from == t2
    assert hist[1].valid_to == t3
    assert all(h.invalidated_at is None for h in hist)
    assert len(km.entities("a1")) == 3
    current = km.get_all("a1")
    assert [f.fact_id for f in current if f.attribute_key == "residence"] == [f3]
    assert visible(km, "a1") == {f3}
    assert visible(km, "a1", as_of=t2 + timedelta(minutes=1)) == {f2}
    # the store indexes every version with its state in metadata (KC-3.5)
    md = {r.id: r.metadata for r in store.list("fact", agent_id="a1", limit=None)}
    assert md[f1]["kg_valid_to"].startswith("2025-01-01T13:00:00") and "kg_valid_to" not in md[f3]


def test_s2_retraction(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person"), ("Vertix", "organization")], [("Pedro", "Pedro works at Vertix", "employer")],
                                 [("Pedro", "Vertix", "works at")]))
    r1 = km.write("a1", "I work at Vertix", "Pedro")
    f1 = r1.facts_added[0]["fact_id"]
    t2 = clock.advance()
    llm.route("extract", extract([("Pedro", "person"), ("Vertix", "organization")], [("Pedro", "Pedro no longer works at Vertix", "employer")]))
    llm.route("reconcile", reconcile(("DELETE", 1, 1)))
    r2 = km.write("a1", "I no longer work at Vertix", "Pedro")
    assert [d["fact_id"] for d in r2.facts_deleted] == [f1]
    g = km.get("a1", f1)
    assert g.status == "closed" and g.valid_to == t2
    assert km.relationships("a1") == []
    assert km.get_all("a1") == []
    assert visible(km, "a1") == set()
    assert visible(km, "a1", as_of=T0) == {f1}


def test_s3_correction(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro's dog is called Rex", "pet_name")]))
    r1 = km.write("a1", "My dog is called Rex", "Pedro")
    f1 = r1.facts_added[0]["fact_id"]
    t2 = clock.advance()
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro's dog is called Max", "pet_name")]))
    llm.route("reconcile", reconcile(("UPDATE", 1, 1, "correction")))
    r2 = km.write("a1", "Sorry, he's Max, not Rex", "Pedro")
    f2 = r2.facts_updated[0]["fact_id"]
    assert r2.corrections == CorrectionResult(1, ["pet_name"], [f1])
    g1, g2 = km.get("a1", f1), km.get("a1", f2)
    assert g1.invalidated_at == t2 and g1.valid_to is None and g1.user_correction_count == 1
    assert g1.status == "invalidated"
    assert g2.valid_from == g1.valid_from == T0 and g2.user_correction_count == 1
    assert visible(km, "a1", as_of=T0 + timedelta(minutes=1)) == {f2}
    assert visible(km, "a1", as_of=T0 + timedelta(minutes=1), known_at=T0 + timedelta(minutes=1)) == {f1}


def test_s4_category_survives_aliasing(km, llm, clock):
    llm.route("extract", extract([("Ana Souza", "person", ["Aninha"])], []))
    km.write("a1", "My friend Ana Souza, Aninha for short", "Pedro")
    clock.advance()
    llm.route("extract", extract([("Aninha", "person")], [("Aninha", "Aninha got engaged", None, "relationship_change")]))
    r = km.write("a1", "Aninha got engaged", "Pedro")
    fid = r.facts_added[0]["fact_id"]
    f = km.get("a1", fid)
    assert f.entity_key == "person:ana_souza"
    assert f.category == "relationship_change" and f.importance == pytest.approx(0.85)


def test_s5_event_time(km, llm):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro ran a marathon")]))
    r = km.write("a1", "I ran a marathon", "Pedro", occurred_at="2024-03-10T09:00:00Z")
    f = km.get("a1", r.facts_added[0]["fact_id"])
    assert f.valid_from == datetime(2024, 3, 10, 9, tzinfo=timezone.utc)
    assert f.ingested_at == T0
    assert visible(km, "a1", as_of=datetime(2024, 3, 11, tzinfo=timezone.utc)) == {f.fact_id}
    assert visible(km, "a1", as_of=datetime(2024, 3, 9, tzinfo=timezone.utc)) == set()


def _seed_entities(km, llm, clock, ents):
    llm.route("resolve_entity", {"match_index": 0})
    for e in ents:
        llm.route("extract", extract([e], []))
        km.write("a1", f"seed {e[0]}", "Pedro")
        clock.advance()


def test_s6_nickname_without_llm(km, llm, clock):
    _seed_entities(km, llm, clock, [("Ana Souza", "person"), ("Ana Labs", "organization")])
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana called Pedro")]))
    n_before = len(llm.calls_for("resolve_entity"))
    r = km.write("a1", "Ana called me", "Pedro")
    assert {"name": "Ana", "entity_key": "person:ana_souza", "method": "nickname"} in r.entities_resolved
    assert len(llm.calls_for("resolve_entity")) == n_before == 0


def test_s6_ambiguous_nickname_goes_to_llm(km, llm, clock):
    _seed_entities(km, llm, clock, [("Ana Souza", "person"), ("Ana Labs", "organization"), ("Ana Lima", "person")])
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana called Pedro")]))
    llm.route("resolve_entity", {"match_index": 0})
    seeded = len(llm.calls_for("resolve_entity"))
    r = km.write("a1", "Ana called me", "Pedro")
    calls = llm.calls_for("resolve_entity")[seeded:]
    assert len(calls) == 1 and len(calls[0]["candidates"]) == 2
    assert {c["canonical_key"] for c in calls[0]["candidates"]} == {"person:ana_souza", "person:ana_lima"}
    assert {"name": "Ana", "entity_key": "person:ana", "method": "created"} in r.entities_resolved


def test_s7_relation_types_and_mirror_facts(km, llm):
    llm.route(
        "extract",
        extract(
            [("Pedro", "person"), ("Carla", "person"), ("Acme", "organization"), ("Julia", "person"), ("Bruno", "person")],
            [],
            [("Pedro", "Carla", "Mentored By"), ("Pedro", "Acme", "Employee Of"), ("Pedro", "Julia", "spouse"),
             ("Pedro", "Bruno", "roommate")],
        ),
    )
    r = km.write("a1", "I was mentored by Carla, work at Acme, married Julia and live with Bruno", "Pedro")
    rels = {(x.rel_type, x.target_entity_key): x for x in km.relationships("a1")}
    assert sorted(k[0] for k in rels) == ["mentored_by", "partner_of", "roommate", "works_at"]
    assert len(r.facts_added) == 4
    by_id = {f["fact_id"]: f for f in r.facts_added}
    for rel in rels.values():
        fact = km.get("a1", rel.evidence_fact_id)
        assert rel.evidence_fact_id in by_id
        assert fact.source_context == "inferred_from_relation" and fact.confidence == pytest.approx(0.6)
        assert set(fact.entity_keys) >= {rel.source_entity_key, rel.target_entity_key}
    assert km.get("a1", rels[("mentored_by", "person:carla")].evidence_fact_id).fact_text == "Pedro mentored by Carla"


CHUNK_FACTS = ["Pedro designed the onboarding flow", "Pedro audits quarterly budgets", "Pedro mentors junior engineers"]
CHUNK_FACTS2 = ["Pedro plays violin on weekends", "Pedro speaks fluent Japanese", "Pedro grows tomatoes at home"]


def _document() -> str:
    parts = ["# Handbook", ""]
    for i in range(1, 7):
        parts.append(f"## Section {i}")
        parts.append(" ".join(f"Sentence {i}.{j} about topic {i} with detail." for j in range(14)))
        parts.append("")
    parts.append("| name | role |")
    parts.append("|------|------|")
    for i in range(6):
        parts.append(f"| person{i} | role{i} |")
    text = "\n".join(parts)
    pad = 4500 - len(text)
    assert pad > 0
    return text.replace("Sentence 1.0", "Sentence 1.0" + " x" * (pad // 2) + " " * (pad % 2), 1)


def test_s10_chunked_extraction_and_reprocess(km, llm):
    doc = _document()
    assert len(doc) == 4500
    from oramem.knowledge import classify_input, select_strategy

    c = classify_input(doc)
    s = select_strategy(c)
    assert c.input_type is InputType.STRUCTURED and s.mode is ExtractionMode.CHUNKED and s.estimated_chunks == 3

    def per_chunk(payload):
        ch = payload["chunk"]
        return extract([("Pedro", "person")], [("Pedro", CHUNK_FACTS[ch["index"] - 1])])

    llm.route("extract", per_chunk)
    r = km.write("a1", doc, "Pedro")
    calls = llm.calls_for("extract")
    assert [(p["chunk"]["index"], p["chunk"]["count"]) for p in calls] == [(1, 3), (2, 3), (3, 3)]
    assert r.strategy.estimated_chunks == 3
    contexts = sorted(km.get("a1", f["fact_id"]).source_context for f in r.facts_added)
    assert contexts == ["chunk 1/3", "chunk 2/3", "chunk 3/3"]

    # chunk 2 failing (twice: retried once) fails the extraction and keeps the event
    def failing(payload):
        if payload["chunk"]["index"] == 2:
            raise RuntimeError("chunk two is broken")
        return per_chunk(payload)

    llm.route("extract", failing)
    before = len(km.get_all("a1"))
    bad = km.write("a1", doc.replace("Handbook", "Playbook"), "Pedro")
    assert bad.success is False and bad.error.startswith("ExtractionError") and "chunk 2/3" in bad.error
    assert len(km.get_all("a1")) == before and bad.event_id
    t = km._tables
    with km._backend.read() as conn:
        ev = conn.execute(sa.select(t.event.c.trace_json).where(t.event.c.id == bad.event_id)).scalar()
    assert ev["status"] == "extraction_failed"
    llm.route("extract", lambda p: extract([("Pedro", "person")], [("Pedro", CHUNK_FACTS2[p["chunk"]["index"] - 1])]))
    fixed = km.reprocess_event("a1", bad.event_id)
    assert fixed.success and len(fixed.facts_added) == 3 and fixed.event_id == bad.event_id
    with km._backend.read() as conn:
        ev = conn.execute(sa.select(t.event.c.trace_json).where(t.event.c.id == bad.event_id)).scalar()
    assert ev["status"] == "ok"


def test_s11_failures_are_visible(km, llm, clock, store):
    scenario1(km, llm, clock)
    clock.advance()
    for task in ("extract", "reconcile", "resolve_entity", "event_emotion"):
        llm.route(task, RuntimeError("down"))
    r = km.write("a1", "I bought a bike", "Pedro")
    assert r.success is False and r.error.startswith("ExtractionError") and r.event_id
    assert any(w.startswith("emotion:") for w in r.warnings)
    assert store.get("message", r.event_id) is not None
    # a raising embedder: EmbeddingError and nothing changes
    counts, ids = table_counts(km), store_ids(store)

    class Broken:
        embedding_dimension = 384

        def embed(self, texts, *, is_query=False):
            raise OSError("embedding service down")

    km.runtime.embedder = Broken()
    w_lives(llm, "Rio")
    with pytest.raises(EmbeddingError):
        km.write("a1", "I live in Rio", "Pedro")
    assert table_counts(km) == counts and store_ids(store) == ids


def test_s11_only_emotion_failing(km, llm):
    llm.route("event_emotion", {"emotion": "ecstatic", "intensity": 3, "energy": "high"})
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro likes tea")]))
    r = km.write("a1", "I like tea", "Pedro")
    assert r.success is True and r.error is None and r.emotion is None
    assert any(w.startswith("emotion:") for w in r.warnings)


@pytest.mark.parametrize("step", ["event", "entities", "facts", "links", "relations", "registry", "intentions",
                                  "observations", "store_index"])
def test_s12_atomicity(km, llm, clock, store, step):
    scenario1(km, llm, clock)
    clock.advance()
    llm.route(
        "extract",
        extract([("Pedro", "person"), ("Rio", "place"), ("Ana Souza", "person", ["Aninha"])],
                [("Pedro", "Pedro lives in Rio", "residence", "biographical_milestone"), ("Ana Souza", "Ana Souza likes jazz", "music")],
                [("Pedro", "Rio", "lives in"), ("Pedro", "Ana Souza", "friend")],
                intentions=[{"trigger_type": "time", "trigger_condition": "on 2025-02-01", "intended_action": "call Ana",
                             "due_date": "2025-02-01"}],
                observations=[{"content": "Pedro is planning a move", "topic": "moving", "entities": ["Rio"]}]),
    )
    llm.route("reconcile", reconcile(("UPDATE", 1, 1)))
    counts, ids = table_counts(km), store_ids(store)
    threads = sorted(r.id for r in store.list("thread", limit=None))
    with pytest.raises(Exception) as info:
        with fail_at(step):
            km.write("a1", "I moved to Rio; Ana Souza likes jazz", "Pedro", session_id="s-new")
    assert "injected database error" in str(info.value)
    assert table_counts(km) == counts
    assert store_ids(store) == ids
    assert sorted(r.id for r in store.list("thread", limit=None)) == threads
    md = {r.id: r.metadata for r in store.list("fact", agent_id="a1", limit=None)}
    assert sum(1 for m in md.values() if "kg_valid_to" not in m) == 1
    # and the same write succeeds afterwards
    ok = km.write("a1", "I moved to Rio; Ana Souza likes jazz", "Pedro", session_id="s-new")
    assert ok.success and len(ok.facts_updated) == 1


async def test_s13_concurrent_writes_one_entity(km, llm):
    llm.route("extract", extract([("Ana Souza", "person")], [("Ana Souza", "Ana Souza is Pedro's friend")]))
    llm.route("reconcile", reconcile(("NOOP", 1, 1)))
    results = await asyncio.gather(*(km.write_async("a1", f"Ana Souza is my friend ({i})", "Pedro") for i in range(10)))
    assert all(r.success and not r.warnings for r in results)
    ents = [e for e in await km.entities_async("a1") if e.canonical_key == "person:ana_souza"]
    assert len(ents) == 1
    current = await km.get_all_async("a1", entity_keys=["person:ana_souza"])
    assert len(current) == 1
    assert ents[0].fact_count == len(current)


def test_s14_delete_and_isolation(km, llm, clock, store):
    f1, f2, f3, _, _ = scenario1(km, llm, clock)
    # a second agent
    w_lives(llm, "Recife")
    km.write("a2", "I live in Recife", "Pedro")
    a2_counts = table_counts(km, "a2")
    assert km.get("a2", f1) is None  # KC-0.1
    assert km.delete("a1", f3) is True
    for f in (f1, f2, f3):
        assert km.get("a1", f) is None and store.get("fact", f) is None
    assert [r for r in km.relationships("a1", include_inactive=True) if r.rel_type == "lives_in"] == []
    with km._backend.read() as c:
        t = km._tables
        assert c.execute(sa.select(sa.func.count()).select_from(t.link).where(t.link.c.fact_id.in_([f1, f2, f3]))).scalar() == 0
    assert km.delete_all("a1") == 0
    assert all(v == 0 for v in table_counts(km, "a1").values())
    assert store_ids(store, "a1") == []
    assert table_counts(km, "a2") == a2_counts
    store.delete("agent_profile", "a2", cascade=True)
    assert all(v == 0 for v in table_counts(km, "a2").values())


def test_s15_intentions_and_session_notes_write(km, llm):
    llm.route(
        "extract",
        extract([("Pedro", "person")], [],
                intentions=[{"trigger_type": "time", "trigger_condition": "on 2025-01-06", "intended_action": "call the dentist",
                             "due_date": "2025-01-06"}],
                observations=[{"content": "Pedro needs to see the dentist", "topic": "health"}]),
    )
    r = km.write("a1", "Remind me to call the dentist on 2025-01-06", "Pedro", session_id="s1")
    its = km.intentions("a1")
    assert [(i.status, i.due_date, i.trigger_type, i.source_context) for i in its] == [
        ("pending", datetime(2025, 1, 6, tzinfo=timezone.utc), "time", "s1")
    ]
    assert len(r.observations_created) == 1 and r.observations_created[0]["topic"] == "health"
    t = km._tables
    with km._backend.read() as c:
        rows = c.execute(sa.select(t.session_observation)).mappings().all()
    assert [(o["session_id"], o["topic"], o["is_active"], o["source_message_ids"]) for o in rows] == [
        ("s1", "health", True, [r.event_id])
    ]
    assert km.fulfill_intention("a1", its[0].id, "done") is True
    assert km.intentions("a1", status="fulfilled")[0].outcome_note == "done"


def test_s16_attribute_registry(km, llm, clock):
    t = km._tables

    def reg():
        with km._backend.read() as c:
            return c.execute(sa.select(t.registry).where(t.registry.c.key == "favorite_food")).mappings().first()

    for i, food in enumerate(["pizza", "sushi", "tacos"]):
        llm.route("extract", extract([("Pedro", "person")], [("Pedro", f"Pedro's favorite food is {food}", "Favorite Food")]))
        llm.route("reconcile", reconcile(("ADD", 1)))
        km.write("a1", f"My favorite food is {food}", "Pedro")
        clock.advance()
        row = reg()
        assert row["seen_count"] == i + 1
        assert row["status"] == ("active" if i == 2 else "proposed")
        assert row["example_raw_key"] == "Favorite Food" and row["proposed_by"] == "llm"
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro has a beach house", "2nd home")]))
    r = km.write("a1", "I have a beach house", "Pedro")
    assert km.get("a1", r.facts_added[0]["fact_id"]).attribute_key is None
    assert any("2nd home" in w for w in r.warnings)


def test_s18_dry_run(km, llm, store):
    llm.route("extract", extract(LIVES, [("Pedro", "Pedro lives in São Paulo", "residence")], [("Pedro", "São Paulo", "lives in")]))
    counts, ids = table_counts(km), store_ids(store)
    r = km.write("a1", "I live in São Paulo", "Pedro", dry_run=True)
    assert r.success and r.event_id == ""
    assert [f["fact_id"] for f in r.facts_added] == [None]
    assert {"name": "São Paulo", "entity_key": "place:sao_paulo", "method": "created"} in r.entities_resolved
    assert r.relations == [{"source_entity_key": "person:pedro", "target_entity_key": "place:sao_paulo", "rel_type": "lives_in",
                            "action": "created"}]
    assert r.tokens_used.total_tokens > 0
    assert table_counts(km) == counts and store_ids(store) == ids
    assert store.list("thread", limit=None) == []


def test_s20_resolution_of_merged_style_aliases(km, llm, clock):
    """Resolution part of scenario 20: a name whose alias points at another entity resolves
    there ("exact" via the alias index), whatever its own slug would be."""
    llm.route("extract", extract([("Ana Souza", "person", ["Ana Souza Silva"])], []))
    km.write("a1", "Ana Souza (Ana Souza Silva)", "Pedro")
    clock.advance()
    llm.route("extract", extract([("Ana Souza Silva", "person")], [("Ana Souza Silva", "Ana Souza Silva plays chess")]))
    r = km.write("a1", "Ana Souza Silva plays chess", "Pedro")
    assert {"name": "Ana Souza Silva", "entity_key": "person:ana_souza", "method": "exact"} in r.entities_resolved
    assert [e.canonical_key for e in km.entities("a1") if e.canonical_key.startswith("person:ana")] == ["person:ana_souza"]
