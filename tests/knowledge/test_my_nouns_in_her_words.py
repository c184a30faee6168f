"""KC-5.4 [ext] (left37 item 2): "my <noun>" that no synonym list holds ("my parrot", "my
professor", "my therapist", "my landlord") is read as the entity of one of her edges when her
own words that gave the edge said "my <noun> <its name>" ("My landlord Mr. Berg raised the
rent"): the evidence fact's event, of her scope and spoken by her.

Before: only a word that KC-4.14 normalises to the type of an edge of hers was read; these
edges are owns, supervises, patient_of, tenant_of, so the query stayed as spoken and her own
facts came first ("what can my parrot do?": rank 8, bench/results/knowledge_quality.md)."""

from __future__ import annotations

import pytest

from oramem.knowledge.read import run as read_run

from .helpers import adding_llm, extract


@pytest.fixture
def relatives_seen(monkeypatch):
    seen: list[list[str]] = []
    real = read_run.reader_relatives

    def spy(st, conn, reader):
        out = real(st, conn, reader)
        seen.append(list(out))
        return out

    monkeypatch.setattr(read_run, "reader_relatives", spy)
    return seen


def _routes(llm):
    for task in ("reconcile", "resolve_entity"):
        llm.route(task, adding_llm().routes[task])


def _say(km, llm, clock, user, speaker, message, fact, other=None, rel=None, other_type="person", session=None):
    """One write of ``speaker`` in ``user``'s scope: a fact of ``other`` (or the speaker) and,
    with ``rel``, the edge (speaker's entity, other, rel) or the pair ``rel`` gives."""
    ents = [(speaker, "person")] + ([(other, other_type)] if other else [])
    relations = [] if rel is None else [rel] if isinstance(rel, tuple) else [(speaker, other, rel)]
    llm.route("extract", extract(entities=ents, facts=[(other or speaker, fact)], relations=relations))
    assert km.write("support", message, speaker, user_id=user, session_id=session).success
    clock.advance(minutes=1)


def _ask(km, relatives_seen, query, user):
    relatives_seen.clear()
    facts = [f.fact_text for f in km.retrieve("support", query, user_id=user).facts]
    return relatives_seen[0], facts


@pytest.mark.parametrize("message, other, other_type, fact, rel, query, reading", [
    ("My parrot Zuzu can whistle the national anthem", "Zuzu", "animal", "Zuzu can whistle the national anthem",
     "owns", "what can my parrot do?", "what can Zuzu do?"),
    ("My professor Dr. Keller assigned a thesis on cardiology", "Dr. Keller", "person",
     "Dr. Keller assigned a thesis on cardiology", ("Dr. Keller", "Kofi", "supervises"),
     "what did my professor assign?", "what did Dr. Keller assign?"),
    ("My therapist Dr. Vidal sees me on Wednesdays", "Dr. Vidal", "person", "Dr. Vidal has sessions with Kofi on Wednesdays",
     "patient_of", "when do I see my therapist?", "when do I see Dr. Vidal?"),  # I: read as Kofi later
    ("My landlord, Mr. Berg, raised the rent", "Mr. Berg", "person", "Mr. Berg raised the rent", "tenant_of",
     "who is my landlord?", "who is Kofi's landlord Mr. Berg?"),
    ("my step-dad Rui fixes boats", "Rui", "person", "Rui fixes boats", "lives_with", "what does my step dad fix?",
     "what does Rui fix?"),
])
def test_my_noun_is_read_through_her_own_words(km, llm, clock, relatives_seen, message, other, other_type, fact, rel,
                                               query, reading):
    _routes(llm)
    _say(km, llm, clock, "kofi", "Kofi", "I grew up in Kumasi", "Kofi grew up in Kumasi")
    _say(km, llm, clock, "kofi", "Kofi", message, fact, other, rel, other_type)
    seen, facts = _ask(km, relatives_seen, query, "kofi")
    assert seen == [reading]
    assert fact in facts


def test_only_the_entity_her_words_name_after_the_noun(km, llm, clock, relatives_seen):
    """One message names two entities of hers; 'my parrot' is the one after the noun, not her
    friend Ama whose edge came from the same words; a noun she never said reads nothing."""
    _routes(llm)
    llm.route("extract", extract(entities=[("Kofi", "person"), ("Zuzu", "animal"), ("Ama", "person")],
                                 facts=[("Zuzu", "Zuzu sits on Ama's shoulder")],
                                 relations=[("Kofi", "Zuzu", "owns"), ("Kofi", "Ama", "friend_of")]))
    assert km.write("support", "My parrot Zuzu sits on my friend Ama's shoulder", "Kofi", user_id="kofi").success
    assert _ask(km, relatives_seen, "what does my parrot eat?", "kofi")[0] == ["what does Zuzu eat?"]
    assert _ask(km, relatives_seen, "what does my tortoise eat?", "kofi")[0] == []
    assert _ask(km, relatives_seen, "who is my friend?", "kofi")[0] == ["who is Kofi's friend Ama?"]  # by type, as before


def test_another_users_words_are_never_read_in_a_shared_thread(km, llm, clock, relatives_seen):
    """Alice and Bob speak in one thread. Alice's 'my landlord Mr. Berg' is hers: Bob's 'who is my
    landlord?' reads nothing, even when Bob's scope holds an edge of his to Mr. Berg learnt from
    Alice's words (an event of his scope that Alice spoke: her "my", not his)."""
    _routes(llm)
    thread = "flat-7"
    _say(km, llm, clock, "alice", "Alice", "My landlord Mr. Berg raised the rent", "Mr. Berg raised the rent", "Mr. Berg",
         "tenant_of", session=thread)
    _say(km, llm, clock, "bob", "Bob", "I cook on Sundays", "Bob cooks on Sundays", session=thread)
    _say(km, llm, clock, "bob", "Bob", "I run marathons", "Bob runs marathons", session=thread)
    _say(km, llm, clock, "bob", "Alice", "My landlord Mr. Berg is Bob's uncle", "Mr. Berg is Bob's uncle", "Mr. Berg",
         ("Bob", "Mr. Berg", "knows"), session=thread)
    _say(km, llm, clock, "bob", "Bob", "I like the flat", "Bob likes the flat", session=thread)
    assert _ask(km, relatives_seen, "who is my landlord?", "alice")[0] == ["who is Alice's landlord Mr. Berg?"]
    seen, facts = _ask(km, relatives_seen, "who is my landlord?", "bob")
    assert seen == []
    assert "Mr. Berg raised the rent" not in facts  # Alice's fact
    assert _ask(km, relatives_seen, "what did my landlord do?", "carol")[0] == []  # no events, no edges


def test_the_evidence_events_read_compiles_for_oracle_with_the_clob_only_selected():
    """The new read on Oracle (static: no database here): the event's text (CLOB) is in the
    select list only, never in WHERE or the join (LOB restrictions, plsql/VERIFY.md); each bind
    name is used once."""
    import re

    from sqlalchemy.dialects import oracle

    from oramem.knowledge.db import schema
    from oramem.knowledge.read.signals import evidence_events_stmt

    t = schema.build_tables("MYSTORE", 384)
    assert str(t.event.c.text.type.compile(dialect=oracle.dialect())) == "CLOB"
    sql = " ".join(str(evidence_events_stmt(t.fact, t.event).compile(dialect=oracle.dialect())).split())
    select, rest = sql.split(" FROM ", 1)
    assert '"MYSTORE_KG_EVENT".text' in select and ".text" not in rest
    assert 'JOIN "MYSTORE_KG_EVENT" ON "MYSTORE_KG_EVENT".id = "MYSTORE_KG_FACT".source_event_id' in rest
    binds = re.findall(r":(\w+)", rest)
    assert sorted(binds) == ["p_agent", "p_user"] and "POSTCOMPILE_p_ids" in rest, binds


def test_my_attribute_reads_no_events(km, llm, clock, relatives_seen, monkeypatch):
    """'my job' is hers (ATTRIBUTE_WORDS), never a relative: a question about it does not read
    her evidence events, even with edges of hers and her own "my job <name>" words; a noun
    after it ("my work colleague") still does."""
    from oramem.knowledge.read import signals

    _routes(llm)
    _say(km, llm, clock, "kofi", "Kofi", "My job Acme pays well", "Acme pays Kofi well", "Acme", "works_for", "organization")
    _say(km, llm, clock, "kofi", "Kofi", "My work colleague Ama sings", "Ama sings", "Ama", "knows")
    reads: list[int] = []
    real = signals._her_evidence_events

    def spy(*args, **kwargs):
        reads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(signals, "_her_evidence_events", spy)
    assert _ask(km, relatives_seen, "what is my job?", "kofi")[0] == []
    assert reads == []
    assert _ask(km, relatives_seen, "what does my work colleague sing?", "kofi")[0] == ["what does Ama sing?"]
    assert reads == [1]


@pytest.mark.parametrize("message", [
    "My parrot, who is called Zuzu, can whistle the national anthem",
    "My parrot, whose name is Zuzu, can whistle the national anthem",
    "My parrot, named Zuzu, can whistle the national anthem",
    "My parrot called Zuzu can whistle the national anthem",
    "My parrot who\u2019s called Zuzu can whistle the national anthem",
    "my parrot which is named Zuzu can whistle the national anthem",
])
def test_the_name_in_a_relative_clause_after_the_noun(km, llm, clock, relatives_seen, message):
    """kg41: her words may give the name in a clause after the noun ("my parrot, who is called
    Zuzu"), not only right after it. Bob, asking in the same thread what his parrot is called,
    never gets hers: the reading is of her edges and her own spoken events only."""
    _routes(llm)
    thread = "pets"
    _say(km, llm, clock, "alice", "Alice", message, "Zuzu can whistle the national anthem", "Zuzu", "owns", "animal",
         session=thread)
    _say(km, llm, clock, "bob", "Bob", "I walk my dog at noon", "Bob walks his dog at noon", session=thread)
    seen, facts = _ask(km, relatives_seen, "what can my parrot do?", "alice")
    assert seen == ["what can Zuzu do?"] and "Zuzu can whistle the national anthem" in facts
    assert _ask(km, relatives_seen, "what is my parrot called?", "alice")[0] == ["what is Alice's parrot Zuzu called?"]
    seen, facts = _ask(km, relatives_seen, "what is my parrot called?", "bob")
    assert seen == [] and "Zuzu can whistle the national anthem" not in facts


@pytest.mark.parametrize("message", [
    "My parrot, who is called by the vet Zuzu, bites",     # not a naming clause: the name does not follow it
    "My parrot likes Zuzu",                                 # another entity after the noun
    "My parrot, who is afraid of Zuzu, hides",
])
def test_a_clause_that_does_not_name_the_noun_reads_nothing(km, llm, clock, relatives_seen, message):
    _routes(llm)
    _say(km, llm, clock, "alice", "Alice", message, "Zuzu lives next door", "Zuzu", "knows", "animal")
    assert _ask(km, relatives_seen, "what can my parrot do?", "alice")[0] == []
