"""KC §4: the write pipeline, rule by rule, with the scripted LLM and a real SQLite store."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
import sqlalchemy as sa

from oramem.knowledge import ExtractionMode, InputType, classify_input, detect_corrections, normalize_rel_type, select_strategy
from oramem.knowledge.write.classify import split_chunks

from .helpers import T0, extract, reconcile


def rows(km, table, **where):
    t = getattr(km._tables, table)
    q = sa.select(t)
    for k, v in where.items():
        q = q.where(t.c[k] == v)
    with km._backend.read() as c:
        return [dict(r) for r in c.execute(q).mappings()]


# ----------------------------------------------------------------------------- KC-4.1
@pytest.mark.parametrize("args, exc", [
    (("a1", 42, "Pedro"), TypeError),
    (("a1", "hi", "  "), ValueError),
    (("", "hi", "Pedro"), ValueError),
    (("a" * 257, "hi", "Pedro"), ValueError),
])
def test_validation_before_any_llm_call(km, llm, args, exc):
    with pytest.raises(exc):
        km.write(*args)
    assert llm.calls == [] and rows(km, "event") == []


def test_validation_occurred_at_and_max_chars(km, llm):
    with pytest.raises(ValueError, match="occurred_at"):
        km.write("a1", "hi", "Pedro", occurred_at="last tuesday")
    with pytest.raises(ValueError, match="max_input_chars"):
        km.write("a1", "x" * 11, "Pedro", config_overrides={"max_input_chars": 10})
    assert llm.calls == []


def test_empty_message_is_a_no_op(km, llm):
    r = km.write("a1", "   \n ", "Pedro")
    assert r == type(r)() and llm.calls == [] and rows(km, "event") == []


# ----------------------------------------------------------------------------- KC-4.3/4.4/4.5
def test_classify_input_boundaries():
    assert classify_input("x" * 499).input_type is InputType.SHORT
    assert classify_input("x" * 500).input_type is InputType.MEDIUM
    assert classify_input("- item\n" + "x" * 500).input_type is InputType.STRUCTURED
    assert classify_input("x" * 2000).input_type is InputType.MEDIUM
    assert classify_input("x" * 2001).input_type is InputType.LONG
    c = classify_input("IMPORTANT NOTES\n\n1) first\n\na | b | c\n" + "y" * 600)
    assert (c.has_headers, c.has_bullets, c.has_tables, c.section_count, c.line_count) == (True, False, True, 3, 6)
    assert classify_input("ABCD\n" + "z" * 600).has_headers is False  # caps line needs >= 5 capitals
    assert classify_input("ÁRVORE\n" + "z" * 600).has_headers is True


def test_select_strategy_table():
    s = select_strategy(classify_input("x" * 100))
    assert (s.mode, s.max_tokens_per_call, s.estimated_chunks, s.chunk_context_hint) == (ExtractionMode.SINGLE_SHOT, 4096, 1, None)
    assert select_strategy(classify_input("x" * 1000)).max_tokens_per_call == 6144
    s = select_strategy(classify_input("word " * 4000))
    assert (s.mode, s.estimated_chunks, s.chunk_context_hint) == (ExtractionMode.CHUNKED, 8, "long unstructured text")
    s = select_strategy(classify_input("# h\n" + "x" * 2500))
    assert (s.estimated_chunks, s.chunk_context_hint) == (2, "structured document with headers/sections")
    assert all(select_strategy(classify_input(t)).reason for t in ("a", "x" * 3000))


def test_chunks_cut_at_lines_and_repeat_table_header():
    lines = ["# Report", ""] + ["| col a | col b |", "|---|---|"] + [f"| row {i} value | {'v' * 40} |" for i in range(120)]
    text = "\n".join(lines)
    c = classify_input(text)
    s = select_strategy(c)
    chunks = split_chunks(text, c, s)
    assert 2 <= len(chunks) <= 8 and [ch.index for ch in chunks] == list(range(1, len(chunks) + 1))
    for ch in chunks[1:]:  # a continued piece repeats the section header, then the table's header rows
        assert ch.text.startswith("# Report\n| col a | col b |\n|---|---|\n| row ")
        assert ch.heading == "# Report"
    body_lines = [ln for ch in chunks for ln in ch.text.split("\n")]
    for ln in lines:
        if ln.strip():
            assert ln in body_lines


def _sized(chunks, target):
    for ch in chunks:
        lines = ch.text.split("\n")
        repeated = sum(len(ln) + 1 for ln in lines[:3] if ln.startswith(("#", "|")))
        assert len(ch.text) <= target + repeated, (len(ch.text), target, ch.text[:80])
        assert any(ln.strip() and not ln.startswith("#") for ln in lines), f"header-only chunk: {ch.text!r}"
        assert not [ln for ln in lines if ln.strip()][-1].startswith("#"), f"chunk ends on a header: {ch.text[-80:]!r}"


def test_long_sections_are_cut_inside_their_bodies_with_the_header_repeated():
    """Review scenario (feature-checks row 20): 4 sections of ~2k chars, each body longer than the
    target, gave chunks [10, 2015, 10, 2015, 4052]: two held only '## Part N', one was twice the target."""
    sections = []
    for i in range(1, 5):
        paras = [f"Part {i} paragraph {j}: " + " ".join(f"w{i}{j}{k}" for k in range(60)) + "." for j in range(5)]
        sections.append(f"## Part {i}\n\n" + "\n\n".join(paras))
    text = "\n\n".join(sections)
    c = classify_input(text)
    s = select_strategy(c)
    chunks = split_chunks(text, c, s)
    target = -(-len(text) // s.estimated_chunks)
    assert 2 <= len(chunks) <= s.estimated_chunks
    _sized(chunks, int(target * 1.05 ** 3))
    for ch in chunks:
        assert ch.text.startswith(f"{ch.heading}\n")
    for sec in sections:  # every paragraph kept whole, in some chunk, under its own header
        head, *paras = sec.split("\n\n")
        for para in paras:
            assert any(para in ch.text and ch.text.startswith(head) for ch in chunks)


def test_a_table_without_blank_lines_is_split_and_long_text_cuts_at_sentences():
    rows = "\n".join(f"| item {i} | {'detail ' * 8}|" for i in range(150))
    text = "# Inventory\n| name | detail |\n|---|---|\n" + rows
    c = classify_input(text)
    chunks = split_chunks(text, c, select_strategy(c))
    assert len(chunks) >= 2
    assert all(ch.text.startswith("# Inventory\n| name | detail |\n|---|---|\n") for ch in chunks)
    _sized(chunks, int(-(-len(text) // select_strategy(c).estimated_chunks) * 1.05 ** 3))
    long_text = " ".join(f"Sentence number {i} says something plain." for i in range(400))
    c = classify_input(long_text)
    chunks = split_chunks(long_text, c, select_strategy(c))
    assert len(chunks) >= 2 and all(ch.text.endswith(".") for ch in chunks)
    assert " ".join(ch.text for ch in chunks) == long_text
    no_stops = "## Notes\n\n" + "word " * 3000  # one line, no sentence end: cut between words
    c = classify_input(no_stops)
    n = select_strategy(c).estimated_chunks
    chunks = split_chunks(no_stops, c, select_strategy(c))
    assert len(chunks) >= 2 and all(len(ch.text) <= -(-len(no_stops) // n) * 1.05 ** 3 + 10 for ch in chunks)
    assert all(ch.text.startswith("## Notes\n") for ch in chunks)
    assert sum(ch.text.count("word") for ch in chunks) == 3000


# ----------------------------------------------------------------------------- KC-4.6
def test_memory_aware_extraction_payload(km, llm, clock):
    llm.route("extract", extract([("Ana Souza", "person")], [("Ana Souza", "Ana Souza works as a nurse"),
                                                             ("Ana Souza", "Ana Souza needs confirmation maybe",
                                                              None, None)]))
    km.write("a1", "Ana Souza is a nurse", "Pedro")
    clock.advance()
    llm.route("extract", extract([], []))
    km.write("a1", "I saw Ana Souza today, she is a nurse", "Pedro", recent_messages=["m" * 400] * 7)
    p = llm.calls_for("extract")[-1]
    assert p["speaker"] == "Pedro" and p["timezone"] == "UTC" and p["chunk"] is None
    assert p["occurred_at"].startswith("2025-01-01T13:00:00")
    assert len(p["recent_messages"]) == 5 and all(len(m) == 300 for m in p["recent_messages"])
    ek = p["existing_knowledge"]
    assert [e["entity_key"] for e in ek] == ["person:ana_souza"] and ek[0]["summary"] is None
    assert "Ana Souza works as a nurse" in ek[0]["facts"]
    km.write("a1", "Ana Souza again", "Pedro", config_overrides={"enable_informed_extraction": False})
    assert llm.calls_for("extract")[-1]["existing_knowledge"] == []
    km.write("a1", "Ana Souza again", "Pedro", config_overrides={"informed_min_similarity": 0.99})
    assert llm.calls_for("extract")[-1]["existing_knowledge"][0]["facts"] == []
    km.write("a1", "Ana Souza again", "Pedro", config_overrides={"informed_extraction_context_budget_tokens": 10})
    assert llm.calls_for("extract")[-1]["existing_knowledge"] == []


def test_summary_seeded_once_and_used_for_priming(km, llm, clock):
    llm.route("extract", extract([("Ana Souza", "person")], [], updated_summaries={"Ana Souza": "Pedro's sister, a nurse"}))
    km.write("a1", "Ana Souza is my sister", "Pedro")
    llm.route("extract", extract([("Ana Souza", "person")], [], updated_summaries={"Ana Souza": "something else"}))
    km.write("a1", "Ana Souza visited", "Pedro")
    e = [e for e in km.entities("a1") if e.canonical_key == "person:ana_souza"][0]
    assert e.summary_text == "Pedro's sister, a nurse"
    assert llm.calls_for("extract")[-1]["existing_knowledge"][0]["summary"] == "Pedro's sister, a nurse"


# ----------------------------------------------------------------------------- KC-4.7
def test_emotion_stored_and_switchable(km, llm):
    llm.route("event_emotion", {"emotion": "joy", "intensity": 0.9, "energy": "high"})
    llm.route("extract", extract([], []))
    r = km.write("a1", "Best day ever", "Pedro")
    ev = rows(km, "event")[0]
    assert (ev["emotion_primary"], ev["emotion_intensity"], ev["energy_level"]) == ("joy", 0.9, "high")
    assert r.emotion == {"emotion": "joy", "intensity": 0.9, "energy": "high"}
    n = len(llm.calls_for("event_emotion"))
    km.write("a1", "Another day", "Pedro", config_overrides={"enable_emotion_tagging": False})
    assert len(llm.calls_for("event_emotion")) == n


async def test_tag_event_emotion_never_raises():
    from oramem.knowledge import tag_event_emotion
    from oramem.testing import ScriptedLLM

    assert await tag_event_emotion("x", ScriptedLLM({"event_emotion": {"emotion": "fear", "intensity": 0.3, "energy": "low"}})) == {
        "emotion": "fear", "intensity": 0.3, "energy": "low"}
    assert await tag_event_emotion("x", ScriptedLLM({"event_emotion": {"emotion": "fear", "intensity": 1.3, "energy": "low"}})) is None
    assert await tag_event_emotion("x", ScriptedLLM({"event_emotion": RuntimeError})) is None


# ----------------------------------------------------------------------------- KC-4.8
def test_postprocess_identity_selfloop_dedup_and_scores(km, llm):
    llm.route("extract", extract(
        [("Pedro", "person"), ("Robert Smith", "person")],
        [("Robert Smith", "Robert Smith likes chess", None, "stable_preference"),
         ("robert smith", "Robert Smith likes chess."),
         ("Robert Smith", "Robert Smith likes the chess"),
         {"subject": "Bob", "fact": "Bob is a pilot", "confidence": 7, "category": "made_up"},
         {"subject": "Pedro", "fact": "Pedro might move", "confidence": "speculation"},
         {"subject": "Pedro", "fact": "x" * 2001}],
        [("Robert Smith", "Bob", "also known as"), ("Pedro", "Pedro", "friend"), ("Pedro", "Robert Smith", "")],
    ))
    r = km.write("a1", "Robert Smith (Bob) likes chess", "Pedro")
    texts = sorted(f["fact_text"] for f in r.facts_added)
    assert texts == ["Bob is a pilot", "Pedro might move", "Robert Smith likes chess"]
    assert any("2000" in w for w in r.warnings) and any("self-loop" in w for w in r.warnings)
    assert any("empty rel_type" in w for w in r.warnings)
    assert km.relationships("a1") == []  # identity relation is never an edge
    facts = {f.fact_text: f for f in km.get_all("a1")}
    assert facts["Bob is a pilot"].entity_key == "person:robert_smith"  # "Bob" became an alias
    assert facts["Bob is a pilot"].confidence == 1.0 and facts["Bob is a pilot"].category is None
    assert facts["Bob is a pilot"].importance == 0.5
    assert facts["Pedro might move"].confidence == pytest.approx(0.4) and facts["Pedro might move"].needs_confirmation
    assert facts["Robert Smith likes chess"].importance == pytest.approx(0.8)


def test_dedup_similarity_and_max_facts_are_read(km, llm):
    reply = extract([("Pedro", "person")], [("Pedro", "Pedro likes green tea"), ("Pedro", "Pedro likes the green tea"),
                                            ("Pedro", "Pedro owns a red bicycle")])
    llm.route("extract", reply)
    r = km.write("a1", "tea", "Pedro", dry_run=True)
    assert len(r.facts_added) == 2
    r = km.write("a1", "tea", "Pedro", dry_run=True, config_overrides={"dedup_similarity": 1.01})
    assert len(r.facts_added) == 3
    r = km.write("a1", "tea", "Pedro", dry_run=True, config_overrides={"dedup_similarity": 1.01, "max_facts_per_event": 1})
    assert len(r.facts_added) == 1 and any("max_facts_per_event" in w for w in r.warnings)


# ----------------------------------------------------------------------------- KC-4.9
def test_speaker_self_references_and_relationship_words(km, llm):
    llm.route("extract", extract([("my brother", "person")], [("I", "Pedro is tall"), ("eu", "Pedro is Brazilian"),
                                                              ("my brother", "my brother is a chef")]))
    r = km.write("a1", "I am tall, eu sou brasileiro, my brother is a chef", "Pedro")
    res = {x["name"]: (x["entity_key"], x["method"]) for x in r.entities_resolved}
    assert res["I"] == ("person:pedro", "speaker") and res["eu"] == ("person:pedro", "speaker")
    assert res["my brother"] == ("person:my_brother", "created")
    llm.route("extract", extract([], [("boss-man", "boss-man likes golf")]))
    r = km.write("a1", "boss-man likes golf", "Pedro", config_overrides={"extra_self_references": frozenset({"boss-man"})})
    assert r.entities_resolved[0]["entity_key"] == "person:pedro"


def test_entity_type_mapping_and_exact_by_slug(km, llm):
    llm.route("extract", extract([("Vertix", "Company"), ("Lisbon", "city"), ("Thing", ""), ("Big Project", "Side Project")], []))
    r = km.write("a1", "Vertix in Lisbon", "Pedro")
    keys = sorted(x["entity_key"] for x in r.entities_resolved)
    assert keys == ["organization:vertix", "other:thing", "place:lisbon", "side_project:big_project"]
    llm.route("extract", extract([("VERTIX", "organization")], []))
    r = km.write("a1", "VERTIX again", "Pedro")
    assert r.entities_resolved == [{"name": "VERTIX", "entity_key": "organization:vertix", "method": "exact"}]


def test_embedding_resolution_same_type_and_fuzzy_threshold(km, llm, clock):
    llm.route("extract", extract([("Joaquim Barbosa Lima", "person"), ("Joaquim Barbosa Lima", "person")], []))
    km.write("a1", "seed", "Pedro")
    clock.advance()
    llm.route("extract", extract([("Joaquim Barbosa Limas", "person")], []))
    r = km.write("a1", "Joaquim Barbosa Limas", "Pedro", dry_run=True, config_overrides={"fuzzy_threshold": 0.5})
    assert r.entities_resolved[0]["method"] == "embedding" and r.entities_resolved[0]["entity_key"] == "person:joaquim_barbosa_lima"
    llm.route("extract", extract([("Joaquim Barbosa Limas", "place")], []))
    r = km.write("a1", "Joaquim Barbosa Limas", "Pedro", dry_run=True, config_overrides={"fuzzy_threshold": 0.5})
    assert r.entities_resolved[0]["method"] == "created"  # another type never matches
    llm.route("extract", extract([("Joaquim Barbosa Limas", "person")], []))
    llm.route("resolve_entity", {"match_index": 1})
    r = km.write("a1", "Joaquim Barbosa Limas", "Pedro", dry_run=True, config_overrides={"fuzzy_threshold": 0.999})
    assert r.entities_resolved[0]["method"] == "llm"
    n = len(llm.calls_for("resolve_entity"))
    r = km.write("a1", "Joaquim Barbosa Limas", "Pedro", dry_run=True,
                 config_overrides={"fuzzy_threshold": 0.999, "enable_llm_resolution": False})
    assert r.entities_resolved[0]["method"] == "created" and len(llm.calls_for("resolve_entity")) == n
    r = km.write("a1", "Joaquim Barbosa Limas", "Pedro", dry_run=True,
                 config_overrides={"fuzzy_threshold": 0.999, "llm_resolution_min_similarity": 0.999})
    assert r.entities_resolved[0]["method"] == "created" and len(llm.calls_for("resolve_entity")) == n


def test_resolution_timeout_warns_and_creates(km, llm, clock):
    from oramem.testing import Delay

    llm.route("extract", extract([("Ana Souza", "person")], []))
    km.write("a1", "seed", "Pedro")
    llm.route("extract", extract([("Ana Lima", "person")], []))
    llm.route("resolve_entity", Delay(0.3, {"match_index": 1}))
    r = km.write("a1", "Ana Lima", "Pedro", config_overrides={"resolution_timeout_sec": 0.05})
    assert r.entities_resolved[0]["method"] == "created" and any(w.startswith("resolution:") for w in r.warnings)


def test_display_name_extends_and_alias_conflict(km, llm, clock):
    llm.route("extract", extract([("Ana", "person", ["Nani"])], []))
    km.write("a1", "Ana", "Pedro")
    llm.route("extract", extract([("Bia", "person", ["Nani"])], []))
    r = km.write("a1", "Bia", "Pedro")
    assert any(w.startswith("alias conflict:") for w in r.warnings)
    llm.route("extract", extract([("Ana Souza", "person")], []))
    r = km.write("a1", "Ana Souza", "Pedro")
    assert r.entities_resolved[0] == {"name": "Ana Souza", "entity_key": "person:ana", "method": "nickname"}
    ents = {e.canonical_key: e for e in km.entities("a1")}
    assert ents["person:ana"].display_name == "Ana Souza" and "nani" in ents["person:ana"].aliases
    assert "nani" not in ents["person:bia"].aliases


# ----------------------------------------------------------------------------- KC-4.10
def _seed_fact(km, llm, text="Pedro works at Vertix", key="employer"):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", text, key)]))
    return km.write("a1", text, "Pedro").facts_added[0]["fact_id"]


def test_reconcile_gate_and_candidates(km, llm, clock):
    f1 = _seed_fact(km, llm)
    clock.advance()
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro works at Vertix since 2020")]))
    llm.route("reconcile", reconcile(("NOOP", 1, 1)))
    r = km.write("a1", "x", "Pedro")
    call = llm.calls_for("reconcile")[-1]
    assert call["subject_key"] == "person:pedro" and call["existing"][0]["fact_id"] == f1
    assert [f["fact_id"] for f in r.facts_unchanged] == [f1]
    n = len(llm.calls_for("reconcile"))
    r = km.write("a1", "x", "Pedro", config_overrides={"reconcile_similarity_gate": 0.99})
    assert len(llm.calls_for("reconcile")) == n and len(r.facts_added) == 1
    # reconcile_candidates bounds the store search
    km.write("a1", "y", "Pedro", config_overrides={"reconcile_candidates": 1, "reconcile_similarity_gate": 0.0})
    assert len(llm.calls_for("reconcile")[-1]["existing"]) == 1


def test_reconcile_repairs_and_failure(km, llm, clock):
    f1 = _seed_fact(km, llm)
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro works at Vertix now", "employer"),
                                                         ("Pedro", "Pedro works at Vertix on Mondays", "employer"),
                                                         ("Pedro", "Pedro works at Vertix remotely", "employer")]))
    llm.route("reconcile", {"decisions": [{"new_fact_index": 1, "action": "EXPLODE"},
                                          {"new_fact_index": 2, "action": "UPDATE", "existing_fact_index": 9},
                                          {"new_fact_index": 3, "action": "NOOP"}]})
    r = km.write("a1", "x", "Pedro", dry_run=True, config_overrides={"dedup_similarity": 1.01})
    assert len(r.facts_added) == 2 and r.facts_unchanged == [] and any("NOOP without" in w for w in r.warnings)
    llm.route("reconcile", {"decisions": [{"new_fact_index": 1, "action": "NOOP", "existing_fact_index": 1},
                                          {"new_fact_index": 2, "action": "UPDATE", "existing_fact_index": 1}]})
    r = km.write("a1", "x", "Pedro", dry_run=True, config_overrides={"dedup_similarity": 1.01})
    assert [f["fact_id"] for f in r.facts_unchanged] == [f1] and len(r.facts_added) == 2
    llm.route("reconcile", RuntimeError("down"))
    r = km.write("a1", "x", "Pedro", dry_run=True, config_overrides={"dedup_similarity": 1.01})
    # KC-4.22 (issue 23 item 4): the rules decide: the first same-attribute fact replaces the old one
    assert len(r.facts_added) == 2 and [u["previous_fact_id"] for u in r.facts_updated] == [f1]
    assert any(w.startswith("reconcile degraded") for w in r.warnings) and r.success and r.degraded == ["reconcile"]
    from oramem.testing import Delay

    llm.route("reconcile", Delay(0.3, reconcile(("NOOP", 1, 1))))
    r = km.write("a1", "x", "Pedro", dry_run=True, config_overrides={"reconcile_timeout_sec": 0.05})
    assert any(w.startswith("reconcile degraded") for w in r.warnings) and r.degraded == ["reconcile"]


# ----------------------------------------------------------------------------- KC-4.11
def test_noop_effects(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person")], [{"subject": "Pedro", "fact": "Pedro likes jazz", "confidence": 0.5}]))
    f1 = km.write("a1", "jazz", "Pedro").facts_added[0]["fact_id"]
    assert km.get("a1", f1).needs_confirmation is True
    t2 = clock.advance()
    llm.route("extract", extract([("Pedro", "person")], [{"subject": "Pedro", "fact": "Pedro likes jazz", "confidence": 0.9}]))
    llm.route("reconcile", reconcile(("NOOP", 1, 1)))
    km.write("a1", "jazz", "Pedro")
    f = km.get("a1", f1)
    assert (f.reinforcement_count, f.confidence, f.needs_confirmation, f.last_confirmed_at, f.is_stale) == (1, 0.9, False, t2, False)


def test_late_arrival_and_needs_confirmation_below(km, llm, clock):
    f1 = _seed_fact(km, llm, "Pedro lives in Porto", "residence")
    clock.advance()
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro lived in Braga", "residence")]))
    llm.route("reconcile", reconcile(("UPDATE", 1, 1)))
    r = km.write("a1", "Back in 2020 I lived in Braga", "Pedro", occurred_at="2020-01-01T00:00:00Z",
                 config_overrides={"needs_confirmation_below": 0.99})
    assert len(r.facts_added) == 1 and r.facts_updated == []
    late = km.get("a1", r.facts_added[0]["fact_id"])
    assert late.valid_to == T0 and late.status == "closed" and late.supersedes_fact_id is None and late.needs_confirmation
    assert km.get("a1", f1).status == "active"


def test_ttl_from_registry(km, llm):
    _seed_fact(km, llm, "Pedro is at the beach", "current_location")
    t = km._tables
    with km._backend.write("t", "a1") as c:
        c.execute(sa.update(t.registry).where(t.registry.c.key == "current_location").values(ttl_days=3))
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro is at the mountains", "current_location")]))
    llm.route("reconcile", reconcile(("ADD", 1)))
    r = km.write("a1", "mountains", "Pedro")
    assert km.get("a1", r.facts_added[0]["fact_id"]).ttl_days == 3



def test_fact_count_counts_facts_with_a_ttl_until_they_expire(km, llm, clock):
    """KC-3.7: ``fact_count`` is the number of current facts linked, an expired TTL fact not
    among them (recount reads the TTL facts' rows only when the count pass saw one)."""
    _seed_fact(km, llm, "Pedro works at Vertix", "employer")
    t = km._tables
    with km._backend.write("t", "a1") as c:
        c.execute(sa.update(t.registry).where(t.registry.c.key == "employer").values(ttl_days=None))
    _seed_fact(km, llm, "Pedro is at the beach", "current_location")
    with km._backend.write("t", "a1") as c:
        c.execute(sa.update(t.registry).where(t.registry.c.key == "current_location").values(ttl_days=3))
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro is at the mountains", "current_location")]))
    llm.route("reconcile", reconcile(("ADD", 1)))
    km.write("a1", "mountains", "Pedro")
    assert {e.canonical_key: e.fact_count for e in km.entities("a1")} == {"person:pedro": 3}
    clock.advance(days=4)  # the mountains fact (TTL 3 days) has expired; the next write recounts
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro likes tea", "drink")]))
    llm.route("reconcile", reconcile(("ADD", 1)))
    km.write("a1", "tea", "Pedro")
    assert {e.canonical_key: e.fact_count for e in km.entities("a1")} == {"person:pedro": 3}

# ----------------------------------------------------------------------------- KC-4.12/4.13
def test_links_primary_and_secondary(km, llm):
    llm.route("extract", extract([("Pedro", "person"), ("Ana Souza", "person"), ("Vertix", "organization")],
                                 [("Pedro", "Pedro met Ana Souza at Vertix"), ("Pedro", "Pedro is happy")]))
    km.write("a1", "x", "Pedro")
    by = {f.fact_text: f.entity_keys for f in km.get_all("a1")}
    assert by["Pedro met Ana Souza at Vertix"] == ["person:pedro", "organization:vertix", "person:ana_souza"]
    assert by["Pedro is happy"] == ["person:pedro"]
    ents = {e.canonical_key: e.fact_count for e in km.entities("a1")}
    assert ents == {"person:pedro": 2, "person:ana_souza": 1, "organization:vertix": 1}


def test_detect_corrections_pure():
    ds = [{"action": "UPDATE", "update_kind": "correction", "attribute_key": "pet_name", "entity_key": "person:p", "existing_fact_id": "f1"},
          {"action": "UPDATE", "update_kind": "change", "attribute_key": "x", "entity_key": "person:p", "existing_fact_id": "f2"},
          {"action": "UPDATE", "update_kind": "correction", "attribute_key": None, "entity_key": "person:p", "existing_fact_id": "f3"}]
    c = detect_corrections(ds)
    assert (c.corrections_detected, c.corrected_keys, c.facts_corrected_ids) == (2, ["pet_name", "person:p"], ["f1", "f3"])


# ----------------------------------------------------------------------------- KC-4.14/4.15
def test_normalize_rel_type_table():
    cases = {"Mentored By": "mentored_by", "  Works-At ": "works_at", "boss": "reports_to", "subordinate": "manages",
             "co-worker": "works_with", "works for": "works_at", "girlfriend": "partner_of", "mother": "family_of",
             "best friend": "friend_of", "based in": "lives_in", "attends": "studies_at", "has pet": "owns",
             "part of": "member_of", "roommate": "roommate", "Ca$h!!flow": "cahflow", "": "", "x" * 80: "x" * 64}
    assert {k: normalize_rel_type(k) for k in cases} == cases


def test_relation_reinforce_and_strength_config(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person"), ("Ana", "person")], [("Pedro", "Pedro and Ana are friends")],
                                 [("Pedro", "Ana", "friend")]))
    km.write("a1", "x", "Pedro", config_overrides={"initial_relation_strength": 0.5})
    clock.advance()
    llm.route("reconcile", reconcile(("NOOP", 1, 1)))
    r = km.write("a1", "x", "Pedro", config_overrides={"relation_reinforce_step": 0.25})
    assert r.relations[0]["action"] == "reinforced"
    (edge,) = km.relationships("a1")
    assert edge.rel_type == "friend_of" and edge.strength == pytest.approx(0.75) and edge.provenance == "llm"


def test_mirror_confidence_and_cascade_invalidation(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person"), ("Acme", "organization")], [], [("Pedro", "Acme", "works for")]))
    r = km.write("a1", "x", "Pedro", config_overrides={"mirror_fact_confidence": 0.7})
    mirror = km.get("a1", r.facts_added[0]["fact_id"])
    assert mirror.fact_text == "Pedro works at Acme" and mirror.confidence == pytest.approx(0.7)
    clock.advance()
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro never worked at Acme")]))
    llm.route("reconcile", reconcile(("UPDATE", 1, 1, "correction")))
    r2 = km.write("a1", "I never worked at Acme", "Pedro")
    (edge,) = km.relationships("a1", include_inactive=True)
    assert edge.invalidated_at == clock.now and edge.valid_to is None and not edge.is_active
    assert r2.corrections.facts_corrected_ids == [mirror.fact_id]


# ----------------------------------------------------------------------------- KC-4.16
def test_registry_extra_keys_aliases_and_promotion(km, llm):
    llm.route("extract", extract([("Pedro", "person")], [{"subject": "Pedro", "fact": "Pedro's shoe size is 42",
                                                          "attribute_key": "Shoe-Size", "value": 42}]))
    km.write("a1", "x", "Pedro", config_overrides={"attribute_promotion_threshold": 1})
    reg = rows(km, "registry")[0]
    assert (reg["key"], reg["status"], reg["value_type"], reg["seen_count"]) == ("shoe_size", "active", "number", 1)
    assert reg["reason"].startswith("extracted from event ")
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro's job is nurse", "job")]))
    r = km.write("a1", "x", "Pedro", config_overrides={"attribute_aliases": {"job": "occupation"},
                                                       "extra_attribute_keys": frozenset({"occupation"})})
    reg = rows(km, "registry", key="occupation")[0]
    assert (reg["status"], reg["proposed_by"]) == ("active", "user")
    assert km.get("a1", r.facts_added[0]["fact_id"]).attribute_key == "occupation"


# ----------------------------------------------------------------------------- KC-4.17/4.18/4.19
def test_intentions_types_and_dedup(km, llm):
    its = [{"trigger_type": "time", "trigger_condition": "someday", "intended_action": "water plants"},
           {"trigger_type": "event", "trigger_condition": "when Ana arrives", "intended_action": "give her the keys"}]
    llm.route("extract", extract([("Pedro", "person")], [], intentions=its))
    r = km.write("a1", "x", "Pedro", session_id="s" * 40)
    assert len(r.intentions_created) == 2
    got = km.intentions("a1")
    assert [(i.trigger_type, i.status, i.source_context) for i in got] == [("event", "pending", "s" * 40)] * 2  # the whole session id (KC-3.7, finding 14)
    r = km.write("a1", "x", "Pedro")
    assert r.intentions_created == [] and len(km.intentions("a1")) == 2
    assert rows(km, "intention")[0]["trigger_embedding_vec"].shape == (384,)


def test_session_observation_merge(km, llm, clock):
    llm.route("event_emotion", {"emotion": "sadness", "intensity": 0.6, "energy": "low"})
    llm.route("extract", extract([("Pedro", "person")], [], observations=[{"content": "Pedro has a cold", "topic": "Health", "entities": ["I"]}]))
    r1 = km.write("a1", "I have a cold", "Pedro", session_id="s1")
    clock.advance()
    llm.route("extract", extract([("Pedro", "person")], [], observations=[{"content": "Pedro feels better", "topic": "health"}]))
    r2 = km.write("a1", "I feel better", "Pedro", session_id="s1")
    obs = sorted(rows(km, "session_observation"), key=lambda o: o["created_at"])
    assert [o["is_active"] for o in obs] == [False, True]
    assert obs[0]["merged_into_id"] == obs[1]["id"]
    assert obs[1]["source_message_ids"] == [r2.event_id, r1.event_id]
    assert obs[0]["entities_mentioned"] == ["person:pedro"] and obs[1]["emotion_label"] == "sadness"


def test_event_row_importance_and_trace(km, llm):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro got married", None, "biographical_milestone"),
                                                         ("Pedro", "Pedro had coffee", None, "routine_activity")]))
    r = km.write("a1", "I got married and had coffee", "Pedro", source="chat", session_id="s7")
    ev = rows(km, "event")[0]
    assert ev["importance"] == pytest.approx(0.9) and ev["source"] == "chat" and ev["session_id"] == "s7"
    assert ev["speaker"] == "Pedro" and ev["occurred_at"] == T0
    tr = ev["trace_json"]
    assert tr["status"] == "ok" and tr["decisions"] == {"ADD": 2} and tr["classification"]["input_type"] == "short"
    assert tr["tokens"]["total"] == r.tokens_used.total_tokens > 0


def test_verbose_pipeline_trace(km, llm):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro likes tea")]))
    assert km.write("a1", "tea", "Pedro").pipeline is None
    r = km.write("a1", "tea", "Pedro", verbose=True)
    names = [s.name for s in r.pipeline.steps]
    assert set(names) == {"classify", "embed_event", "informed_context", "extract", "emotion", "post_process", "resolve",
                          "reconcile", "side_vectors", "commit"}
    assert names[0] == "classify" and names[-1] == "commit" and all(s.duration_ms >= 0 for s in r.pipeline.steps)
    # the stats carry the same steps, with or without verbose
    assert [s.name for s in r.stats.steps] == names
    # (emotion tagging runs alongside memory-aware priming and extraction: their order varies)
    assert sorted(s.name for s in km.write("a1", "tea", "Pedro").stats.steps) == sorted(names)


# ----------------------------------------------------------------------------- KC-4.20
def test_dry_run_writes_nothing_even_entities(km, llm, store):
    llm.route("extract", extract([("Zed", "person")], [("Zed", "Zed plays drums")], [("Zed", "Pedro", "friend")],
                                 intentions=[{"trigger_type": "event", "trigger_condition": "c", "intended_action": "a"}]))
    r = km.write("a1", "Zed plays drums", "Pedro", dry_run=True)
    assert r.facts_added and all(f["fact_id"] is None for f in r.facts_added)
    assert {"name": "Zed", "entity_key": "person:zed", "method": "created"} in r.entities_resolved
    for table in ("event", "fact", "entity", "alias", "relationship", "link", "registry", "intention", "session_observation"):
        assert rows(km, table) == [], table
    assert store.list("fact", limit=None) == [] and store.list("message", limit=None) == []


# ----------------------------------------------------------------------------- KC-1.7: more write-side fields
def test_timezone_is_read(km, llm):
    llm.route("extract", extract([("Pedro", "person")], [{"subject": "Pedro", "fact": "Pedro has a meeting", "valid_from": "2025-02-01T09:00"}],
                                 intentions=[{"trigger_type": "time", "trigger_condition": "on 2025-02-03",
                                              "intended_action": "call mom", "due_date": "2025-02-03"}]))
    r = km.write("a1", "x", "Pedro", config_overrides={"timezone": "America/Sao_Paulo"})
    assert llm.calls_for("extract")[-1]["timezone"] == "America/Sao_Paulo"
    assert llm.calls_for("extract")[-1]["occurred_at"] == "2025-01-01T09:00:00-03:00"
    f = km.get("a1", r.facts_added[0]["fact_id"])
    assert f.valid_from == datetime(2025, 2, 1, 12, tzinfo=timezone.utc)
    assert km.intentions("a1")[0].due_date == datetime(2025, 2, 3, 3, tzinfo=timezone.utc)
    with pytest.raises(ValueError):
        km.write("a1", "x", "Pedro", config_overrides={"timezone": "Mars/Olympus"})


def test_scoring_maps_and_default_are_read(km, llm):
    llm.route("extract", extract([("Pedro", "person")], [
        {"subject": "Pedro", "fact": "Pedro adopted a cat", "category": "specific_event", "confidence": "strong_inference"},
        {"subject": "Pedro", "fact": "Pedro prefers mornings", "confidence": "no idea"}]))
    km.write("a1", "x", "Pedro", dry_run=False, config_overrides={
        "importance_category_map": {"specific_event": 0.33}, "confidence_level_map": {"strong_inference": 0.77},
        "confidence_default": 0.42})
    got = {f.fact_text: (f.importance, f.confidence, f.category) for f in km.get_all("a1")}
    assert got["Pedro adopted a cat"] == (0.33, 0.77, "specific_event")
    assert got["Pedro prefers mornings"] == (0.5, 0.42, None)


def test_informed_topk_and_llm_concurrency_are_read(km, llm, clock):
    import time as _time

    from oramem.testing import Delay

    llm.route("extract", extract([("Ana Souza", "person")], [("Ana Souza", f"Ana Souza fact number {w}") for w in
                                                             ("alpha", "bravo", "charlie", "delta")]))
    km.write("a1", "Ana Souza facts", "Pedro", config_overrides={"dedup_similarity": 1.01})
    llm.route("extract", extract([], []))
    km.write("a1", "Ana Souza fact number", "Pedro", config_overrides={"informed_extraction_topk": 2, "informed_min_similarity": 0.0})
    assert len(llm.calls_for("extract")[-1]["existing_knowledge"][0]["facts"]) == 2
    doc = "\n\n".join(f"Paragraph {i}. " + "word " * 300 for i in range(4))
    llm.route("extract", Delay(0.2, extract([], [])))
    t0 = _time.perf_counter()
    km.write("a1", doc, "Pedro", config_overrides={"llm_concurrency": 1, "enable_emotion_tagging": False})
    serial = _time.perf_counter() - t0
    t0 = _time.perf_counter()
    km.write("a1", doc, "Pedro", config_overrides={"llm_concurrency": 4, "enable_emotion_tagging": False})
    parallel = _time.perf_counter() - t0
    assert serial >= 0.2 * 3 and parallel < serial - 0.2


def test_nickname_and_attribute_key_rules():
    from oramem.knowledge.write.extract import canonical_attribute_key
    from oramem.knowledge.write.resolve import is_nickname

    assert is_nickname("Ana", "Ana Souza") and is_nickname("Ana Souza", "Ana")
    assert is_nickname("Rob", "Robert") and is_nickname("Rob", "Robert Smith")
    assert not is_nickname("Ro", "Robert") and not is_nickname("Ana", "Ana") and not is_nickname("Ana Lima", "Ana Souza")
    assert not is_nickname("Bob", "Robert")
    assert canonical_attribute_key("Favorite Food", {}) == "favorite_food"
    assert canonical_attribute_key("job", {"job": "occupation"}) == "occupation"
    assert canonical_attribute_key("Home-Town", {}) == "home_town"
    assert canonical_attribute_key("2nd home", {}) is None and canonical_attribute_key("x" * 65, {}) is None
    assert canonical_attribute_key("address.city", {}) == "address.city" and canonical_attribute_key("city_", {}) == "city"
