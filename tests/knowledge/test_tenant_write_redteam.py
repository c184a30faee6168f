"""Red team of the knowledge layer's WRITE pipeline at the user boundary (KC-3.7, KC-4.6 to
KC-4.12). One agent, two users in one thread: Bob's write names every person and place Alice's
knowledge holds (her aliases, a nickname of her person, a near-duplicate place) and a model that
follows every instruction tries to update, confirm, close, rename, re-summarise and alias her rows.

- What the LLM sees: no prompt of Bob's write (emotion, extraction with its informed context,
  entity resolution, reconciliation) carries a word of Alice's knowledge, nor of the agent's
  shared knowledge (KC-3.7: a write sees only the rows of its own scope).
- What Bob's write changes: no row of hers nor of the shared scope, and none of their store
  records; only the agent-wide attribute registry (KC-3.7 keeps it out of the user dimension)."""

from __future__ import annotations

import json
from typing import Any, Optional

import sqlalchemy as sa

from .helpers import extract, scope_rows
from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"
#: words only Alice's knowledge (or the shared one) holds: none may reach a prompt of Bob's write
HERS = ("Vantongeren", "Quxie", "blue drawer", "ALICESUMMARY", "room 714", "Lima", "alice-only")
SHARED = ("opens at 7", "SHAREDSUMMARY")


def _scope(km, store, user: Optional[str]) -> dict[str, Any]:
    return scope_rows(km, store, user)


def _world(km, llm, clock) -> None:
    """Alice's person (alias, summary), her place, her facts, edge and intention; the agent's
    shared place and fact; Bob's own person and place of the same names (so his write runs
    every step: informed context, nickname band, embedding band, reconciliation)."""
    llm.route("extract", extract(
        entities=[("Quxbert Vantongeren", "person", ["Quxie"]), ("Hotel Zephyr", "place")],
        facts=[("Quxbert Vantongeren", "Quxbert Vantongeren hides the passport in the blue drawer", "passport_location"),
               ("Hotel Zephyr", "Hotel Zephyr room 714 is where Quxie meets her alice-only contact")],
        relations=[("Quxbert Vantongeren", "Hotel Zephyr", "visits")],
        intentions=[{"trigger_type": "keyword", "trigger_condition": "Lima", "intended_action": "alice-only reminder"}],
        updated_summaries={"Quxbert Vantongeren": "ALICESUMMARY", "Hotel Zephyr": "ALICESUMMARY place"}))
    km.write(AGENT, "Quxie (Quxbert Vantongeren) hides the passport in the blue drawer; room 714; Lima",
             "Alice", user_id="alice", session_id="lobby")
    clock.advance(minutes=1)
    km.add_knowledge(AGENT, entities=[{"name": "Hotel Zephyr", "type": "place"}],
                     facts=[{"subject": "Hotel Zephyr", "fact": "Hotel Zephyr opens at 7", "attribute_key": "opening_hours"}])
    t = km.runtime.tables
    with km.runtime.backend.write("test", AGENT) as conn:  # a shared summary, as a refresh writes it
        conn.execute(sa.update(t.entity).where(t.entity.c.user_id.is_(None)).values(summary_text="SHAREDSUMMARY"))
    clock.advance(minutes=1)
    km.add_knowledge(AGENT, entities=[{"name": "Quxbert Smith", "type": "person"}, {"name": "Quxbert Jones", "type": "person"}],
                     facts=[{"subject": "Hotel Zephyr", "fact": "Hotel Zephyr has a bar", "attribute_key": "passport_location"}],
                     user_id="bob")
    clock.advance(minutes=1)


def _bobs_write(km, llm) -> Any:
    """Bob's message names her person by nickname and alias, her place, and a look-alike; the
    model extracts facts that repeat and contradict hers, aliases and identity relations onto her
    names, summaries for her entities; it picks the first candidate of every resolution and
    replaces, confirms or closes the first existing fact of every reconciliation."""
    llm.route("extract", extract(
        entities=[("Quxbert", "person"), ("Quxie", "person", ["Vantongeren"]), ("Hotel Zephyr", "place"),
                  ("Zephyr Hotel", "place")],
        facts=[("Quxbert", "Quxbert hides the passport in the red drawer", "passport_location"),
               ("Hotel Zephyr", "Hotel Zephyr opens at 7"),
               ("Hotel Zephyr", "Hotel Zephyr room 9 is closed", "passport_location"),
               ("Zephyr Hotel", "Zephyr Hotel has a pool"),
               ("me", "I met Quxie at the bar")],
        relations=[("Quxbert", "Hotel Zephyr", "visits"), ("Quxie", "Quxbert Vantongeren", "same_as")],
        updated_summaries={"Quxbert Vantongeren": "BOB RENAMED HER", "Hotel Zephyr": "BOB SUMMARY", "Quxie": "BOB"}))
    llm.route("resolve_entity", {"match_index": 1})
    llm.route("reconcile", lambda p: {"decisions": [
        {"new_fact_index": f["index"], "action": ("UPDATE", "NOOP", "DELETE")[i % 3], "existing_fact_index": 1,
         "update_kind": "correction"} for i, f in enumerate(p["new_facts"])]})
    return km.write(AGENT, "Quxbert (Quxie) hides the passport in the red drawer; Hotel Zephyr opens at 7; "
                           "Zephyr Hotel has a pool; I met Quxie", "Bob", user_id="bob", session_id="lobby")


def test_no_prompt_of_bobs_write_carries_alices_or_the_shared_knowledge(env):  # noqa: F811
    _, _, km, llm, clock = env
    _world(km, llm, clock)
    start = len(llm.calls)
    result = _bobs_write(km, llm)
    assert result.success, result.error
    calls = llm.calls[start:]
    tasks = {task for task, _ in calls}
    # every step that shows stored knowledge to the model ran, so the check below means something
    assert {"extract", "resolve_entity", "reconcile"} <= tasks, tasks
    (extraction,) = [p for task, p in calls if task == "extract"]
    assert extraction["existing_knowledge"], "the informed context named Bob's own Hotel Zephyr"
    for task, payload in calls:
        text = json.dumps(payload, ensure_ascii=False)
        # words of Bob's own message may come back; words only her (or the shared) rows hold may not
        for word in HERS + SHARED:
            if word.lower() in _bobs_message().lower():
                continue
            assert word not in text, (task, word, text)
        # no id, key or name of another scope's row either
        assert "alice" not in text.lower(), (task, text)


def _bobs_message() -> str:
    return ("Quxbert (Quxie) hides the passport in the red drawer; Hotel Zephyr opens at 7; "
            "Zephyr Hotel has a pool; I met Quxie")


def test_bobs_write_changes_no_row_of_alice_nor_of_the_shared_scope(env):  # noqa: F811
    _, store, km, llm, clock = env
    _world(km, llm, clock)
    alice, shared = _scope(km, store, "alice"), _scope(km, store, None)
    assert alice["store:fact"] and shared["store:fact"]
    result = _bobs_write(km, llm)
    assert result.success, result.error
    # the model's instructions were carried out, on Bob's own rows only
    assert result.facts_updated or result.facts_unchanged or result.facts_deleted
    assert {f["entity_key"] for f in result.facts_added + result.facts_updated} <= {
        e.canonical_key for e in km.entities(AGENT, user_id="bob") if e.user_id == "bob"}
    assert _scope(km, store, "alice") == alice
    assert _scope(km, store, None) == shared
    # her view: every fact, the summary and the display name as she wrote them
    mine = {f.fact_text for f in km.get_all(AGENT, user_id="alice") if f.user_id == "alice"}
    assert "Quxbert Vantongeren hides the passport in the blue drawer" in mine
    assert not any("red drawer" in f.fact_text or "pool" in f.fact_text for f in km.get_all(AGENT, user_id="alice"))
    hers = {e.canonical_key: e for e in km.entities(AGENT, user_id="alice") if e.user_id == "alice"}
    assert hers["person:quxbert_vantongeren"].summary_text == "ALICESUMMARY"
    assert hers["person:quxbert_vantongeren"].display_name == "Quxbert Vantongeren"


def test_bobs_explicit_targets_never_reach_alices_or_the_shared_rows(env):  # noqa: F811
    """Q3: the deterministic writes given her names and keys build Bob's own rows; the
    id-based edits given her ids or the shared scope's are refused (KC-3.7: a user edits her own
    rows only, not the agent's shared ones), and so is completing her failed event or a shared one."""
    _, store, km, llm, clock = env
    _world(km, llm, clock)
    llm.route("extract", {"not": "an extraction reply"})  # a failed extraction keeps its event (KC-7.3)
    failed = {u: km.write(AGENT, f"a message of {u or 'the agent'}", "X", user_id=u, session_id="lobby").event_id
              for u in ("alice", None)}
    assert all(failed.values())
    alice, shared = _scope(km, store, "alice"), _scope(km, store, None)
    ids = {u: {"fact": next(f.fact_id for f in km.get_all(AGENT, user_id=u) if f.user_id == u)} for u in ("alice", None)}
    ids["alice"]["intention"] = km.intentions(AGENT, user_id="alice")[0].id
    for u in ("alice", None):
        fid = ids[u]["fact"]
        assert km.confirm_fact(AGENT, fid, user_id="bob") is False
        assert km.annotate_fact(AGENT, fid, "bob was here", user_id="bob") is False
        assert km.retract_fact(AGENT, fid, user_id="bob") is False
        assert km.delete(AGENT, fid, user_id="bob") is False
        try:
            km.reprocess_event(AGENT, failed[u], user_id="bob")
        except ValueError as exc:
            assert "no event" in str(exc)
        else:
            raise AssertionError(f"Bob completed the failed event of scope {u!r}")
    assert km.fulfill_intention(AGENT, ids["alice"]["intention"], "done by bob", user_id="bob") is False
    # her display name, her alias and her entity key given to the deterministic writes
    km.add_entity(AGENT, "Quxbert Vantongeren", type="person", aliases=["Quxie", "Hotel Zephyr"], user_id="bob")
    km.add_fact(AGENT, "Quxie", "Quxie owes Bob money", subject_type="person", attribute_key="passport_location",
                user_id="bob")
    km.add_relation(AGENT, "person:quxbert_vantongeren", "Hotel Zephyr", "owns", user_id="bob")
    km.add_knowledge(AGENT, facts=[{"subject": "Hotel Zephyr", "fact": "Hotel Zephyr opens at 7"}], user_id="bob")
    assert _scope(km, store, "alice") == alice
    assert _scope(km, store, None) == shared
