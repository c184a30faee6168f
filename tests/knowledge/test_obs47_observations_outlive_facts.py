"""KC-6.3 / KC-6.4 / KC-3.6 (obs47, kg41's finding): a meta observation (a consolidation
observation, a community theme) is written by the model from the facts it cites, and its title
and text are shown to every reader of its scope (a retrieve's "Observed patterns", the
directives block, ``result.spreading``) and written by every export. Removing a fact took only
its id out of ``supporting_fact_ids`` (``deletes.purge_facts``, and the PL/SQL
``on_store_delete``): the text stayed, so after ``delete`` of the agent's door code, a
store-side delete of its record or its TTL purge, Bob's retrieve about the room still showed
the code (the observation still cites the room's other facts), and the export kept it. A fact
whose TTL passed (not purged) stayed quoted the same way.

Now an observation citing a removed fact goes with it (delete, retract, the deletion hook:
store delete and TTL purge, the erasers), in every scope of the agent, as ``forget`` already
took it; the next job run writes observations again from what is left. An observation citing
an expired fact is not served (TTL is not erasure: the row stays) and the next run of the job
that wrote it retires it (``is_active`` false) and writes again from the current facts."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Optional

import pytest
import sqlalchemy as sa

from oramem import jsonl
from oramem.sqlite._sqlite import sqlite3

from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"
CODE = "4417"            # the shared door code (the agent's knowledge)
ALICE_CODE = "9921"      # Alice's safe code (her scope)
BOB_CODE = "5530"        # Bob's locker code (his scope)
CODES = {None: CODE, "alice": ALICE_CODE, "bob": BOB_CODE}
PLACES = {None: "Room 12", "alice": "Alice's safe", "bob": "Bob's locker"}


def _observe_everything(payload: dict) -> dict:
    """A model that writes one pattern quoting (title and text) every fact it is shown, and
    cites them all."""
    facts = payload["facts"]
    if not facts:
        return {"observations": []}
    quoted = "; ".join(f["text"] for f in facts)
    return {"observations": [{"type": "pattern", "title": f"Guests keep asking: {quoted}"[:200], "text": f"Asked daily: {quoted}",
                              "supporting_event_indices": [], "supporting_fact_indices": [f["index"] for f in facts]}]}


def _scope(km, clock, user: Optional[str], ttl: Optional[int] = None) -> dict[str, str]:
    """Two facts of ``user``'s scope (None: shared) about one place: its code (``ttl``) and a
    view; returns their ids by kind."""
    place, code = PLACES[user], CODES[user]
    ids = {}
    for kind, text in (("code", f"{place} code is {code}"), ("view", f"{place} has a sea view")):
        item: dict[str, Any] = {"subject": place, "fact": text, "subject_type": "place"}
        if kind == "code" and ttl is not None:
            item["ttl_days"] = ttl
        ids[kind] = km.add_knowledge(AGENT, facts=[item], user_id=user, session_id=f"s-{user}").facts_added[0]["fact_id"]
        clock.advance(minutes=1)
    return ids


def _observations(km) -> dict[str, tuple[Optional[str], str, str, bool, list]]:
    """Every meta observation row: id -> (user, title, text, active, cited facts)."""
    mo = km.runtime.tables.meta_observation
    with km.runtime.backend.read() as conn:
        return {r[0]: (r[1], r[2], r[3], bool(r[4]), list(r[5] or [])) for r in conn.execute(
            sa.select(mo.c.id, mo.c.user_id, mo.c.title, mo.c.text, mo.c.is_active, mo.c.supporting_fact_ids))}


def _exported_observations(path: str, store) -> str:
    lines: list[str] = []
    engine = sa.create_engine(f"sqlite:///{path}", module=sqlite3)
    try:
        jsonl.export_knowledge(engine, store.memory_store_id, store.vector_dim, lines.append)
    finally:
        engine.dispose()
    rows = [json.loads(x) for x in lines]
    return json.dumps([d for d in rows if d[jsonl.KG_KEY].endswith("META_OBSERVATION")])


def _served(km, user: Optional[str], place: str) -> str:
    """The observations a retrieve about ``place`` serves ``user``: its context's facts and
    "Observed patterns" (not "Relevant conversations": a fact's own event is a message of the
    store, which a fact's removal leaves) and the spreading result's observations (title and
    text)."""
    r = km.retrieve(AGENT, f"what about {place} and its sea view?", user_id=user)
    obs = [(o["title"], o["text"]) for o in (r.spreading.meta_observations if r.spreading else [])]
    parts = [p for p in r.context.split("\n\n") if not p.startswith("Relevant conversations:")]
    return "\n\n".join(parts) + "\n" + repr(obs)


def _world(km, llm, clock, ttl: Optional[int] = None) -> dict[Optional[str], dict[str, str]]:
    """The shared scope, Alice's and Bob's: two facts each, and one consolidation observation
    each quoting both."""
    facts = {user: _scope(km, clock, user, ttl if user is None else None) for user in (None, "alice", "bob")}
    llm.route("consolidate", _observe_everything)
    for user in (None, "alice", "bob"):
        assert km.consolidate(AGENT, user_id=user).observations_created == 1
    obs = _observations(km)
    for user in (None, "alice", "bob"):
        (row,) = [o for o in obs.values() if o[0] == user]
        assert CODES[user] in row[1] and CODES[user] in row[2] and sorted(row[4]) == sorted(facts[user].values())
    # served before: the shared observation to every reader, hers to her
    for reader in (None, "alice", "bob"):
        assert CODE in _served(km, reader, "Room 12")
    assert ALICE_CODE in _served(km, "alice", "Alice's safe")
    return facts


def _remove(how: str, km, store, clock, fid: str, user: Optional[str]) -> None:
    if how == "delete":
        assert km.delete(AGENT, fid, user_id=user)
    elif how == "store_delete":
        assert store.delete("fact", fid) == 1
    else:  # the fact's TTL passed and the store purged its record
        clock.advance(days=2)
        assert store.purge_expired() >= 1
    assert store.get("fact", fid) is None and km.get(AGENT, fid, user_id=user) is None


@pytest.mark.parametrize("how", ["delete", "store_delete", "ttl_purge"])
def test_a_removed_shared_fact_leaves_no_observation_quoting_it(env, how):  # noqa: F811
    path, store, km, llm, clock = env
    facts = _world(km, llm, clock, ttl=1 if how == "ttl_purge" else None)
    others = {k: v for k, v in _observations(km).items() if v[0] is not None}

    _remove(how, km, store, clock, facts[None]["code"], None)

    for reader in (None, "alice", "bob"):
        seen = _served(km, reader, "Room 12")
        assert "sea view" in seen and CODE not in seen, (reader, seen)  # the view fact is still served
    assert all(CODE not in title + text for _, title, text, _, _ in _observations(km).values()), _observations(km)
    assert CODE not in _exported_observations(path, store)
    # Alice's and Bob's observations cite nothing of the shared scope: unchanged
    assert {k: v for k, v in _observations(km).items() if v[0] is not None} == others
    # the next run writes the shared observation again from the fact left
    assert km.consolidate(AGENT).observations_created == 1
    seen = _served(km, "bob", "Room 12")
    assert "Guests keep asking: Room 12 has a sea view" in seen and CODE not in seen


@pytest.mark.parametrize("how", ["delete", "store_delete"])
def test_bob_removing_his_fact_leaves_alices_and_the_shared_observations(env, how):  # noqa: F811
    path, store, km, llm, clock = env
    facts = _world(km, llm, clock)
    before = _observations(km)

    _remove(how, km, store, clock, facts["bob"]["code"], "bob")

    after = _observations(km)
    assert {k: v for k, v in after.items() if v[0] != "bob"} == {k: v for k, v in before.items() if v[0] != "bob"}
    assert not [v for v in after.values() if v[0] == "bob"]  # his own, quoting his code, went
    assert BOB_CODE not in _served(km, "bob", "Bob's locker") and BOB_CODE not in _exported_observations(path, store)
    assert ALICE_CODE in _served(km, "alice", "Alice's safe") and CODE in _served(km, "bob", "Room 12")


def test_an_expired_fact_is_not_served_through_an_observation_and_the_next_run_rewrites_it(env):  # noqa: F811
    path, store, km, llm, clock = env
    facts = _world(km, llm, clock, ttl=1)
    clock.advance(days=2)  # the shared code's TTL passed: no purge
    assert km.get(AGENT, facts[None]["code"]).status == "expired"
    for reader in (None, "alice", "bob"):
        seen = _served(km, reader, "Room 12")
        assert "sea view" in seen and CODE not in seen, (reader, seen)
    assert ALICE_CODE in _served(km, "alice", "Alice's safe")  # hers cites no expired fact: served
    # TTL is not erasure: nothing was cleared at expiry
    (shared,) = [(k, v) for k, v in _observations(km).items() if v[0] is None]
    assert CODE in shared[1][2] and shared[1][3]
    # the next run retires it and writes again from the current facts
    assert km.consolidate(AGENT).observations_created == 1
    rows = [v for v in _observations(km).values() if v[0] is None]
    assert [(CODE in v[2], v[3]) for v in sorted(rows, key=lambda v: CODE not in v[2])] == [(True, False), (False, True)]
    seen = _served(km, "bob", "Room 12")
    assert "Guests keep asking: Room 12 has a sea view" in seen and CODE not in seen
    assert km.consolidate(AGENT).observations_created == 0  # KC-6.1: nothing new
    # the purge of its record then takes the retired one with the fact
    assert store.purge_expired() >= 1
    assert all(CODE not in v[1] + v[2] for v in _observations(km).values())


def test_directives_do_not_serve_a_preference_citing_an_expired_fact(env):  # noqa: F811
    """KC-5.10: the directives block is written from active behavioral_preference observations."""
    _, store, km, llm, clock = env
    facts = _scope(km, clock, None, ttl=1)
    pref = {"type": "behavioral_preference", "title": f"Always give the code {CODE} first", "text": f"Lead with {CODE}.",
            "supporting_event_indices": [], "supporting_fact_indices": [1, 2]}
    llm.route("consolidate", {"observations": [pref]})
    llm.route("directives", lambda p: {"directives_block": " / ".join(d["title"] for d in p["directives"]),
                                       "directives_used": len(p["directives"])})
    assert km.consolidate(AGENT).observations_created == 1
    assert km.consolidate(AGENT).observations_reinforced == 1  # times_reinforced 1: a directive now
    assert CODE in km.directives(AGENT, user_id="bob").text
    # check_contradiction names the preference it was compared with (its title, by default)
    llm.route("contradiction", {"has_contradiction": True, "conflicting_directive": None, "resolution": None})
    assert CODE in (km.check_contradiction(AGENT, pref["title"]).conflicting_directive or "")
    clock.advance(days=2)
    assert km.get(AGENT, facts["code"]).status == "expired"
    assert CODE not in km.directives(AGENT, user_id="bob").text
    assert CODE not in (km.retrieve(AGENT, "Room 12", include_directives=True).directives.text or "")
    calls = len(llm.calls)
    assert not km.check_contradiction(AGENT, pref["title"]).has_contradiction
    assert len(llm.calls) == calls  # no preference left to compare with: no call


def _rooms(km, clock, ttl: Optional[int] = None) -> str:
    """Two rooms of shared facts; returns the id of Room 12's door code."""
    code = ""
    for room in ("Room 12", "Room 14"):
        items: list[dict[str, Any]] = [{"subject": room, "fact": f"{room} has feature number {i}", "subject_type": "place"}
                                       for i in range(2)]
        if room == "Room 12":
            items.append({"subject": room, "fact": f"Room 12 door code is {CODE}", "subject_type": "place",
                          **({"ttl_days": ttl} if ttl else {})})
        got = km.add_knowledge(AGENT, facts=items, session_id="lobby").facts_added
        code = code or next((f["fact_id"] for f in got if CODE in f["fact_text"]), "")
        clock.advance(minutes=1)
    return code


def _theme_setup(km, llm) -> None:
    km.config = dataclasses.replace(km.config, community_similarity_threshold=-1.0)
    llm.route("cluster_summary", lambda p: {"summary": " / ".join(p["facts"])})
    llm.route("community", lambda p: {"title": "Rooms: " + " | ".join(c["summary"] for c in p["clusters"])[:70],
                                      "summary": " | ".join(c["summary"] for c in p["clusters"])})


def _themes(km) -> list[tuple[str, str, bool]]:
    return [(v[1], v[2], v[3]) for v in _observations(km).values()]


@pytest.mark.parametrize("how", ["delete", "store_delete"])
def test_a_community_theme_quoting_a_removed_fact_goes(env, how):  # noqa: F811
    path, store, km, llm, clock = env
    code = _rooms(km, clock)
    _theme_setup(km, llm)
    assert km.cluster_facts(AGENT).clusters_created == 2
    assert km.detect_communities(AGENT).communities_created == 1
    assert CODE in _themes(km)[0][1]
    _remove(how, km, store, clock, code, None)
    assert all(CODE not in title + text for title, text, _ in _themes(km)), _themes(km)
    assert CODE not in _exported_observations(path, store)
    # the next runs write the cluster summary and the theme again from the facts left
    km.cluster_facts(AGENT)
    assert km.detect_communities(AGENT).communities_created == 1
    assert [CODE in text for _, text, _ in _themes(km)] == [False]


def test_a_community_theme_quoting_an_expired_fact_is_retired_by_the_next_run(env):  # noqa: F811
    path, store, km, llm, clock = env
    code = _rooms(km, clock, ttl=1)
    _theme_setup(km, llm)
    km.cluster_facts(AGENT)
    assert km.detect_communities(AGENT).communities_created == 1
    seen = _served(km, "bob", "Room 12")
    assert CODE in seen  # the theme, through the room's facts it cites
    clock.advance(days=2)
    assert km.get(AGENT, code).status == "expired"
    assert CODE not in _served(km, "bob", "Room 12") and CODE not in _served(km, None, "Room 12")
    km.cluster_facts(AGENT)  # the cluster's summary is written again without the expired fact
    assert km.detect_communities(AGENT).communities_created == 1
    assert sorted((CODE in text, active) for _, text, active in _themes(km)) == [(False, True), (True, False)]
    assert CODE not in _served(km, "bob", "Room 12")
