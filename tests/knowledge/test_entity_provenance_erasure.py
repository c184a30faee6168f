"""KC-3.10 by provenance (kg41, red35's leftover): a shared write in Alice's private thread (the
desk notes what she said as the agent's shared knowledge) creates a shared entity, its name
and aliases. Her ``forget`` erased the event and the facts learned from it, but the entity
row and its aliases stayed: "Dr. Quinlan" was still in the file, in every reader's
``entities()``. No name is matched (review finding 5); each event now records in its
``trace_json`` which entities and aliases of its scope it created and named, and the erasure
takes an entity of another scope that only her erased events created and nothing that stays
names (a fact, a link, an edge, another event's mention, an operator's ``add_entity``, a
session observation, an alias of another source), and the aliases only her events created.
An entity something else still names keeps its row and name."""

from __future__ import annotations

import sqlalchemy as sa

from oramem.knowledge.ownership import owned_rows

from .helpers import extract
from .test_forget import _file_bytes, _table_hits
from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"
DOCTOR = ("Dr. Quinlan", "person", ["Quinny"])


def _alice_says(km, llm, clock, store, facts, *, entities=(DOCTOR,), relations=()) -> None:
    """A shared write (no user) in Alice's private thread: erasing her takes its event."""
    store.add(["alice: about my cardiologist"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    llm.route("extract", extract(list(entities), list(facts), list(relations)))
    km.write(AGENT, "Alice told the desk about her doctor", "Desk", session_id="alice-chat")
    clock.advance(minutes=1)


def _lobby_says(km, llm, clock, facts, *, entities=(("Dr. Quinlan", "person"),), user_id=None) -> None:
    llm.route("extract", extract(list(entities), list(facts)))
    km.write(AGENT, "the desk's own notes", "Desk", session_id="lobby" if user_id is None else f"s-{user_id}",
             user_id=user_id)
    clock.advance(minutes=1)


def _aliases(km, user_id=None) -> dict[str, str]:
    al = km.runtime.tables.alias
    with km.runtime.backend.read() as conn:
        q = sa.select(al.c.alias, al.c.canonical_entity_key).where(al.c.agent_id == AGENT)
        q = q.where(al.c.user_id.is_(None) if user_id is None else al.c.user_id == user_id)
        return {r[0]: r[1] for r in conn.execute(q)}


def test_a_shared_entity_born_of_alices_erased_words_goes_with_her(env):  # noqa: F811
    path, store, km, llm, clock = env
    _alice_says(km, llm, clock, store, [("Dr. Quinlan", "Dr. Quinlan is the cardiologist Alice sees")])
    assert "person:dr_quinlan" in {e.canonical_key for e in km.entities(AGENT, user_id="bob")}
    assert _table_hits(path, "Quinlan")
    km.forget(user_id="alice")
    assert km.entities(AGENT, user_id="bob", include_inactive=True) == []
    assert _aliases(km) == {}
    assert _table_hits(path, "Quinlan") == {} and _table_hits(path, "uinlan") == {}
    assert _table_hits(path, "Quinny") == {} and _table_hits(path, "quinny") == {}
    km.close()
    store.close()
    data = _file_bytes(path)
    assert b"uinlan" not in data and b"uinny" not in data


def test_an_entity_also_supported_by_the_agents_own_facts_keeps_its_name(env):  # noqa: F811
    """The lobby (the agent's own shared knowledge) says something about Dr. Quinlan too: the
    entity stays, with its name; the alias only Alice's event gave it ("quinny") goes."""
    path, store, km, llm, clock = env
    _alice_says(km, llm, clock, store, [("Dr. Quinlan", "Dr. Quinlan is the cardiologist Alice sees")])
    _lobby_says(km, llm, clock, [("Dr. Quinlan", "Dr. Quinlan works on the third floor")])
    km.forget(user_id="alice")
    (doctor,) = km.entities(AGENT, include_inactive=True)
    assert (doctor.canonical_key, doctor.display_name) == ("person:dr_quinlan", "Dr. Quinlan")
    assert [f.fact_text for f in km.get_all(AGENT)] == ["Dr. Quinlan works on the third floor"]
    assert _aliases(km) == {"dr. quinlan": "person:dr_quinlan"}  # the lobby named it so too
    assert _table_hits(path, "uinny") == {}


def test_an_entity_bob_names_in_his_own_scope_keeps_its_name(env):  # noqa: F811
    """Bob's Dr. Quinlan is his scope's row (KC-3.7): her erasure takes the shared one her words
    made, never his; his reads still find his."""
    path, store, km, llm, clock = env
    _alice_says(km, llm, clock, store, [("Dr. Quinlan", "Dr. Quinlan is the cardiologist Alice sees")])
    _lobby_says(km, llm, clock, [("Dr. Quinlan", "Bob's dentist is Dr. Quinlan")], user_id="bob")
    km.forget(user_id="alice")
    assert [(e.canonical_key, e.user_id) for e in km.entities(AGENT, user_id="bob", include_inactive=True)] == [
        ("person:dr_quinlan", "bob")]
    assert km.entities(AGENT, include_inactive=True) == []  # the shared one went with her
    assert [f.fact_text for f in km.get_all(AGENT, user_id="bob")] == ["Bob's dentist is Dr. Quinlan"]
    assert "dr. quinlan" in _aliases(km, "bob")


def test_an_entity_the_operator_added_stays_and_one_mentioned_later_stays(env):  # noqa: F811
    """Provenance, not support alone: an entity the operator created before Alice's words
    reached it is not hers, even with no fact left; one her words created that an operator's
    ``add_entity`` (a later event of the scope) names again is not hers alone."""
    path, store, km, llm, clock = env
    km.add_entity(AGENT, "Nurse Ohara", type="person")
    clock.advance(minutes=1)
    _alice_says(km, llm, clock, store,
                [("Nurse Ohara", "Nurse Ohara takes Alice's blood pressure"),
                 ("Dr. Quinlan", "Dr. Quinlan is the cardiologist Alice sees")],
                entities=(("Nurse Ohara", "person"), DOCTOR))
    km.add_entity(AGENT, "Dr. Quinlan", type="person")
    km.forget(user_id="alice")
    assert {e.display_name for e in km.entities(AGENT, include_inactive=True)} == {"Nurse Ohara", "Dr. Quinlan"}
    assert km.get_all(AGENT, include_inactive=True) == []
    assert "quinny" not in _aliases(km)


def test_an_edge_that_stays_keeps_the_entity(env):  # noqa: F811
    """A relationship of the scope not evidenced by her erased facts names the entity."""
    path, store, km, llm, clock = env
    _alice_says(km, llm, clock, store, [("Dr. Quinlan", "Dr. Quinlan is the cardiologist Alice sees")])
    km.add_relation(AGENT, "Dr. Quinlan", "Clinic Nord", "works_at", source_type="person", target_type="organization")
    km.forget(user_id="alice")
    assert {e.canonical_key for e in km.entities(AGENT)} >= {"person:dr_quinlan", "organization:clinic_nord"}


def test_her_export_holds_the_shared_entity_her_forget_takes(env):  # noqa: F811
    """One notion of "hers" (oramem.knowledge.ownership): the export writes what forget erases."""
    path, store, km, llm, clock = env
    _alice_says(km, llm, clock, store, [("Dr. Quinlan", "Dr. Quinlan is the cardiologist Alice sees")])
    _lobby_says(km, llm, clock, [("Room 12", "Room 12 has a sea view")], entities=(("Room 12", "place"),))
    t = km.runtime.tables
    records = [("message", r.id) for r in store.list("message", thread_id="alice-chat")]
    with km.runtime.backend.read() as conn:
        rows = owned_rows(conn, t, "user", ["alice"], records, threads=["alice-chat"])
        names = {r[0] for r in conn.execute(sa.select(t.entity.c.display_name).where(
            t.entity.c.id.in_(sorted(rows[t.entity.name]))))}
    assert names == {"Dr. Quinlan"}


def test_a_summary_her_words_seeded_on_an_entity_that_stays_goes(env):  # noqa: F811
    """The extraction may seed an entity's summary from the message (KC-4.9 ``updated_summaries``):
    on an entity the lobby named first, with no fact of hers linked to it, that summary is her
    words; her erasure clears it (the next refresh writes one from the facts left)."""
    path, store, km, llm, clock = env
    _lobby_says(km, llm, clock, [("Dr. Quinlan", "Dr. Quinlan works on the third floor")])
    store.add(["alice: about my cardiologist"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    llm.route("extract", extract([("Dr. Quinlan", "person"), ("Alice", "person")],
                                 [("Alice", "Alice has a heart murmur")],
                                 updated_summaries={"Dr. Quinlan": "treats Alice's murmurzz monthly"}))
    km.write(AGENT, "Alice told the desk about her doctor", "Desk", session_id="alice-chat")
    assert "murmurzz" in {e.canonical_key: e.summary_text or "" for e in km.entities(AGENT)}["person:dr_quinlan"]
    km.forget(user_id="alice")
    ents = {e.canonical_key: e for e in km.entities(AGENT, include_inactive=True)}
    assert set(ents) == {"person:dr_quinlan"} and ents["person:dr_quinlan"].display_name == "Dr. Quinlan"
    assert _table_hits(path, "murmurzz") == {}


def test_a_display_name_her_words_extended_goes_back(env):  # noqa: F811
    """KC-4.9: a longer name extends an entity's display name ("Amelia" -> "Amelia Quinlan").
    The lobby knows "Amelia"; Alice's words gave "Quinlan": after her erasure the entity is
    "Amelia" again and "Quinlan" is nowhere in the file."""
    path, store, km, llm, clock = env
    _lobby_says(km, llm, clock, [("Amelia", "Amelia works on the third floor")], entities=(("Amelia", "person"),))
    store.add(["alice: about my cardiologist"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    llm.route("extract", extract([("Amelia Quinlan", "person")], [("Amelia Quinlan", "Amelia Quinlan sees Alice")]))
    km.write(AGENT, "Alice told the desk about her doctor", "Desk", session_id="alice-chat")
    assert [e.display_name for e in km.entities(AGENT)] == ["Amelia Quinlan"]
    km.forget(user_id="alice")
    (amelia,) = km.entities(AGENT, include_inactive=True)
    assert (amelia.canonical_key, amelia.display_name) == ("person:amelia", "Amelia")
    assert _table_hits(path, "uinlan") == {}
    km.close()
    store.close()
    assert b"uinlan" not in _file_bytes(path)


def test_a_display_name_the_lobby_also_used_stays(env):  # noqa: F811
    path, store, km, llm, clock = env
    _lobby_says(km, llm, clock, [("Amelia", "Amelia works on the third floor")], entities=(("Amelia", "person"),))
    _alice_says(km, llm, clock, store, [("Amelia Quinlan", "Amelia Quinlan sees Alice")],
                entities=(("Amelia Quinlan", "person"),))
    _lobby_says(km, llm, clock, [("Amelia Quinlan", "Amelia Quinlan parks in bay 4")],
                entities=(("Amelia Quinlan", "person"),))
    km.forget(user_id="alice")
    assert [e.display_name for e in km.entities(AGENT)] == ["Amelia Quinlan"]


def test_an_entity_her_words_made_that_a_merge_folded_in_leaves_no_alias(env):  # noqa: F811
    """KC-6.5: a merge moves the loser's facts to the winner, deactivates the loser and gives
    the winner the loser's names as aliases. When the loser was born of Alice's words ("Room
    Twelve", a shared write in her private thread), her erasure takes the loser and the aliases
    the merge made of its names; the winner, the lobby's, stays with its own name."""
    import dataclasses

    path, store, km, llm, clock = env
    km.add_knowledge(AGENT, facts=[{"subject": "Room 12", "fact": f"Room 12 has feature {i}", "subject_type": "place"}
                                   for i in range(3)], session_id="lobby")
    store.add(["alice: my room"], "message", thread_ids="alice-chat", user_ids="alice", agent_ids=AGENT, roles="user")
    km.add_knowledge(AGENT, facts=[{"subject": "Room Twelve", "fact": "Room Twelve smells of lavender",
                                    "subject_type": "place"}], session_id="alice-chat")
    km.config = dataclasses.replace(km.config, memify_merge_similarity_threshold=-1.0)
    llm.route("entity_merge", {"should_merge": True})
    assert km.memify(AGENT).merges_executed == 1
    assert any("twelve" in a for a in _aliases(km))
    km.forget(user_id="alice")
    assert [(e.canonical_key, e.display_name) for e in km.entities(AGENT, include_inactive=True)] == [
        ("place:room_12", "Room 12")]
    assert not any("twelve" in a for a in _aliases(km)), _aliases(km)
    assert _table_hits(path, "welve") == {}
