"""KC-4.14 / KC-5.4 [ext]: "my <relation word>" is read through the reader's graph, "my
<attribute>" as hers, and a relation's mirror fact keeps the word that was said.

Before: "daughter", "father", "wife" ... were normalised to family_of / partner_of and the mirror
fact said "Maya family of Emma" (which relative lost); "partner", "grandmother", "parent_of",
"son_of" ... were not normalised at all; a user-scoped retrieve left "my sister" and "my job" as
spoken unless nothing at all was found, so "what does my father do?" ranked the father's fact
below her own and "what's my job?" missed her job when another fact matched first
(bench/results/knowledge_quality.md, kq36).
"""

from __future__ import annotations

import pytest

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory, normalize_rel_type
from oramem.knowledge.read import run as read_run
from oramem.knowledge.text import in_third_person_attributes, my_phrases
from oramem.knowledge.write.relations import mirror_text

from .helpers import Clock, adding_llm, extract
from .test_first_person_reader import _real_model


@pytest.mark.parametrize("said, canonical", [
    ("partner", "partner_of"), ("Fiancée", "partner_of"), ("fiancee", "partner_of"), ("grandmother", "family_of"),
    ("Grandfather", "family_of"), ("cousin", "family_of"), ("Mother in law", "family_of"), ("parent_of", "family_of"),
    ("son of", "family_of"), ("grandchild_of", "family_of"), ("nephew_of", "family_of"), ("team lead", "reports_to"),
    # as before
    ("daughter", "family_of"), ("wife", "partner_of"), ("boss", "reports_to"), ("roommate", "roommate"),
    ("mentored_by", "mentored_by"),
])
def test_kinship_and_partner_words_are_normalised(said, canonical):
    assert normalize_rel_type(said) == canonical


@pytest.mark.parametrize("source, target, said, text", [
    ("Maya", "Emma", "daughter", "Emma is Maya's daughter"),
    ("Omar", "Hank", "boss", "Hank is Omar's boss"),
    ("Sofia", "Ines", "partner", "Ines is Sofia's partner"),
    ("Sofia", "Rosa", "Grandmother", "Rosa is Sofia's grandmother"),
    ("Ana", "Bea", "step-daughter", "Bea is Ana's step daughter"),
    # a <kin>_of edge: the target's role for the source, in a neutral word
    ("Kenji", "Aiko", "father_of", "Aiko is Kenji's child"),
    ("Kenji", "Hiroshi", "son of", "Hiroshi is Kenji's parent"),
    ("Sofia", "Rosa", "grandchild_of", "Rosa is Sofia's grandparent"),
    ("Kofi", "Efua", "nephew_of", "Efua is Kofi's aunt or uncle"),
    ("Ana", "Rui", "half_brother_of", "Ana half brother of Rui"),
    ("Pedro", "Acme", "Employee Of", "Pedro works at Acme"),
    ("Pedro", "Carla", "Mentored By", "Pedro mentored by Carla"),
    ("Dev", "Kevin", "roommate", "Dev roommate Kevin"),
])
def test_a_mirror_fact_keeps_the_role_word_that_was_said(source, target, said, text):
    from oramem.knowledge.write.relations import clean_rel_type

    assert mirror_text(source, target, clean_rel_type(said), normalize_rel_type(said)) == text


@pytest.mark.parametrize("query, words", [
    ("who is my team lead?", ["team_lead", "team"]),
    ("what is my grandfather's hobby?", ["grandfather"]),
    ("where do my parents live?", ["parents_live", "parents", "parent"]),
    ("what does my sister do?", ["sister_do", "sister"]),
    ("where do I live?", []),
])
def test_my_phrases_lists_the_words_after_my_longest_first(query, words):
    found = [w for phrase in my_phrases(query) for _, _, w in phrase]
    assert found == words
    for phrase in my_phrases(query):
        assert all(query[start:start + 3].lower() == "my " for start, _, _ in phrase)


@pytest.mark.parametrize("query, expected", [
    ("what's my job?", "what's Maya's job?"),
    ("where is my office?", "where is Maya's office?"),
    ("what is my favourite colour?", "what is Maya's favourite colour?"),
    ("what does my sister do?", "what does my sister do?"),  # another entity: as spoken
    ("what can my parrot do?", "what can my parrot do?"),
    ("where do I keep my job offers?", "where do Maya keep Maya's job offers?"),
])
def test_my_before_an_attribute_word_is_the_readers(query, expected):
    assert in_third_person_attributes(query, "Maya") == expected


def _maya(km, llm, clock, user="maya", speaker="Maya"):
    """Maya's scope: a daughter, a father, a husband (one write each, with its relation)."""
    items = [
        ("My daughter Emma just turned seven", "Emma", "Emma just turned seven", "daughter"),
        ("My father Tomas repairs clocks", "Tomas", "Tomas repairs antique clocks", "father"),
        ("My husband Leon teaches chemistry", "Leon", "Leon teaches chemistry", "husband"),
        ("I work as a pediatric nurse", None, "Maya works as a pediatric nurse", None),
        ("My office is on the third floor", None, "Maya's office is on the third floor", None),
    ]
    for message, other, fact, rel in items:
        ents = [(speaker, "person")] + ([(other, "person")] if other else [])
        llm.route("extract", extract(entities=ents, facts=[(other or speaker, fact)],
                                     relations=[(speaker, other, rel)] if rel else []))
        km.write("support", message, speaker, user_id=user)
        clock.advance(minutes=1)


@pytest.fixture
def relatives_seen(monkeypatch):
    """The texts ``reader_relatives`` gave each retrieve (the real function, spied on)."""
    seen: list[list[str]] = []
    real = read_run.reader_relatives

    def spy(st, conn, reader):
        out = real(st, conn, reader)
        seen.append(list(out))
        return out

    monkeypatch.setattr(read_run, "reader_relatives", spy)
    return seen


def test_the_mirror_fact_names_the_relative_as_said(km, llm, clock):
    for task in ("reconcile", "resolve_entity"):
        llm.route(task, adding_llm().routes[task])
    _maya(km, llm, clock)
    edges = {(r.rel_type, r.target_entity_key): km.get("support", r.evidence_fact_id, user_id="maya").fact_text
             for r in km.relationships("support", user_id="maya")}
    assert edges == {("family_of", "person:emma"): "Emma is Maya's daughter",
                     ("family_of", "person:tomas"): "Tomas is Maya's father",
                     ("partner_of", "person:leon"): "Leon is Maya's husband"}


def test_my_relation_word_is_read_as_her_relative_never_another_users(km, llm, clock, relatives_seen):
    """'my father' is Tomas (the edge whose mirror fact says "Maya's father", not Emma, the other
    family_of edge); 'who is my daughter?' asks for the relation, so it names it. Another user
    whose speaker is also called Maya, and the agent's shared scope, each have a sister: Maya's
    'my sister' reads her own scope's edges only, and no retrieve of hers returns another user's
    facts."""
    for task in ("reconcile", "resolve_entity"):
        llm.route(task, adding_llm().routes[task])
    _maya(km, llm, clock)
    for user, sister in (("maya2", "Zoe"), (None, "Ursula")):
        llm.route("extract", extract(entities=[("Maya", "person"), (sister, "person")],
                                     facts=[(sister, f"{sister} sells maps")], relations=[("Maya", sister, "sister")]))
        km.write("support", f"My sister {sister} sells maps", "Maya", user_id=user)
        clock.advance(minutes=1)

    def ask(query, user="maya"):
        relatives_seen.clear()
        facts = [f.fact_text for f in km.retrieve("support", query, user_id=user).facts]
        return relatives_seen[0], facts

    assert ask("what does my father do?")[0] == ["what does Tomas do?"]
    assert ask("how old is my daughter?")[0] == ["how old is Emma?"]
    assert ask("who is my daughter?")[0] == ["who is Maya's daughter Emma?"]
    assert ask("who is my husband?")[0] == ["who is Maya's husband Leon?"]
    assert ask("what is my job?")[0] == []  # no edge of hers is a "job"
    # no edge of hers says "Maya's sister": every family_of edge of hers, newest first; never Zoe
    # (another user's scope) nor Ursula (the shared scope's edge; its fact she may see, KC-3.8)
    seen, facts = ask("what does my sister do?")
    assert seen == ["what does Tomas do?", "what does Emma do?"]
    assert not any("Zoe" in f for f in facts)
    assert ask("what does my sister do?", user="maya2")[0] == ["what does Zoe do?"]  # her own, not Maya's relatives
    assert ask("what does my father do?", user="maya2")[0] == ["what does Zoe do?"]  # her family edge; never Tomas
    relatives_seen.clear()
    km.retrieve("support", "what does my sister do?")  # shared only: no reader, no relatives
    assert relatives_seen == [[]]


def test_a_kin_of_edge_is_read_through_its_neutral_word(km, llm, clock, relatives_seen):
    """Kenji's edges were said 'father_of' Aiko and 'son_of' Hiroshi (and 'cousin' Daichi): 'my
    father' is Hiroshi ("Hiroshi is Kenji's parent"), 'my daughter' is Aiko ("Aiko is Kenji's
    child"); before, the mirror facts said "Kenji father of Aiko" and 'my father' read every
    family_of edge of his, Aiko first."""
    for task in ("reconcile", "resolve_entity"):
        llm.route(task, adding_llm().routes[task])
    for other, fact, rel in (("Aiko", "Aiko is learning to swim", "father_of"), ("Hiroshi", "Hiroshi grows bonsai", "son_of"),
                             ("Daichi", "Daichi lives in Osaka", "cousin")):
        llm.route("extract", extract(entities=[("Kenji", "person"), (other, "person")], facts=[(other, fact)],
                                     relations=[("Kenji", other, rel)]))
        km.write("support", fact, "Kenji", user_id="kenji")
        clock.advance(minutes=1)
    for query, texts in (("what does my father grow?", ["what does Hiroshi grow?"]),
                         ("who is my daughter?", ["who is Kenji's daughter Aiko?"]),
                         ("where does my cousin live?", ["where does Daichi live?"])):
        relatives_seen.clear()
        km.retrieve("support", query, user_id="kenji")
        assert relatives_seen == [texts], query


@pytest.mark.skipif(_real_model() is None, reason="no all-MiniLM-L6-v2 ONNX export here (ORAMEM_TEST_ONNX_MODEL)")
def test_my_relative_and_my_attribute_questions_find_their_fact_first_real_model(tmp_path):
    """With the default model (vector store): before, 'what does my father do?' ranked Tomas's
    fact below the mirror facts and her own, and 'what's my job?' missed her job fact (the query
    as spoken found the office fact, so the 'my' fallback never ran)."""
    from oramem.embedders.onnx import ONNXEmbedder

    clock = Clock()
    llm = adding_llm()
    store = SQLiteMemoryStore(str(tmp_path / "k.db"), embedder=ONNXEmbedder(str(_real_model())), clock=clock)
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False), clock=clock)
    try:
        _maya(km, llm, clock)
        llm.route("extract", extract(entities=[("Maya", "person")], facts=[("Maya", "Maya lives in Porto")]))
        km.write("support", "I live in Porto", "Maya", user_id="maya")
        questions = {
            "what does my father do?": "Tomas repairs antique clocks",
            "how old is my daughter?": "Emma just turned seven",
            "who is my daughter?": "Emma is Maya's daughter",
            "what's my job?": "Maya works as a pediatric nurse",
            "where is my office?": "Maya's office is on the third floor",
            "where do I live?": "Maya lives in Porto",
        }
        firsts = {q: [f.fact_text for f in km.retrieve("support", q, user_id="maya").facts][:1] for q in questions}
    finally:
        km.close()
        store.close()
    assert firsts == {q: [fact] for q, fact in questions.items()}


def test_a_query_saying_my_relative_many_times_costs_a_bounded_number_of_readings(km, llm, clock, relatives_seen,
                                                                                   monkeypatch):
    """red33: each reading is the whole query embedded and searched once more. "what does my
    sister do?" said 300 times (a 7 KB query) made 600 readings: 602 texts (4.3 MB) in one
    embedding call and 600 more store searches. Now the first MY_PHRASES_MAX "my" only and at
    most READINGS_MAX readings in all; a single "my sister" reads as before."""
    for task in ("reconcile", "resolve_entity"):
        llm.route(task, adding_llm().routes[task])
    _maya(km, llm, clock)
    batches: list[int] = []
    real = km.runtime.embed

    async def spy(texts, *args, **kwargs):
        batches.append(len(texts))
        return await real(texts, *args, **kwargs)

    monkeypatch.setattr(km.runtime, "embed", spy)
    km.retrieve("support", "what does my sister do? " * 300, user_id="maya")
    assert len(relatives_seen[0]) <= 6  # signals.READINGS_MAX
    # the query, I/me read as her, "my" read as hers, the attribute reading, and the readings
    assert batches and batches[0] <= 4 + 6
    relatives_seen.clear()
    km.retrieve("support", "what does my sister do?", user_id="maya")
    assert relatives_seen == [["what does Tomas do?", "what does Emma do?"]]
