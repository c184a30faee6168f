"""KC-6.0 (red47, a pin, not a fix): Bob against Alice through every background job. One hall
thread where Alice, Bob and the desk (the agent's shared knowledge) all write about "Emma", "Nora"
and "the gym" (the same entity keys in three scopes), with facts, edges, intentions, session
notes and emotions; Alice's words carry a marker. Every job runs in Bob's scope and in the
shared scope, with a model that writes back everything it is shown and agrees to every merge
(the merge threshold lowered so every same-type pair is asked): no prompt of those runs holds
her marker, and no row Bob or the shared scope can read does. Her own scope's runs do see it
(the probe is not vacuous). Checked failing by mutation: ``refresh_summaries``' link read with
the agent condition only (no user), and ``consolidate``'s event read over Alice's scope."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.knowledge.jobs.run import JOB_ORDER
from oramem.testing import HashEmbedder, ScriptedLLM

from .helpers import Clock, add_all, extract

AGENT = "desk"
MARK = "zorblax"  # in every text of Alice's


def _echo(task):
    """Replies built from the whole prompt: whatever the job was shown ends up in what it writes."""
    def reply(payload):
        shown = json.dumps(payload, sort_keys=True)[:3000]
        if task in ("cluster_summary", "entity_summary"):
            return {"summary": shown}
        if task == "community":
            return {"title": shown[:70], "summary": shown}
        if task == "consolidate":
            return {"observations": [{"type": "pattern", "title": shown[:200], "text": shown,
                                      "supporting_event_indices": [1] if payload["events"] else [],
                                      "supporting_fact_indices": [1] if payload["facts"] else []}]}
        if task == "entity_merge":
            return {"should_merge": True}
        if task == "event_emotion":
            return {"emotion": "fear", "intensity": 0.9, "energy": "high"}
        if task == "contradiction":
            return {"has_contradiction": False}
        raise AssertionError(task)
    return reply


@pytest.fixture
def world(tmp_path):
    clock = Clock()
    store = SQLiteMemoryStore(str(tmp_path / "t.db"), embedder=HashEmbedder(384), clock=clock, search_strategy="hybrid")
    llm = ScriptedLLM({"reconcile": add_all, "resolve_entity": {"match_index": 0},
                       "event_emotion": {"emotion": "fear", "intensity": 0.9, "energy": "high"}})
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(
        enable_reranker=False, consolidation_min_events=1, community_min_clusters=2, community_similarity_threshold=-1.0,
        memify_merge_similarity_threshold=-1.0, emotional_trend_min_events=1), clock=clock)

    def says(user, who, facts, *, relations=(), intentions=(), notes=()):
        tag = MARK if user == "alice" else (user or "desk")
        llm.route("extract", extract(
            [("Emma", "person"), ("Gym", "place"), ("Nora", "person")],
            [(s, f"{f} ({tag})") for s, f in facts], relations,
            intentions=[{"trigger_type": "event", "trigger_condition": f"{c} {tag}", "intended_action": f"remind {tag}"}
                        for c in intentions],
            observations=[{"content": f"{n} {tag}", "topic": "gym", "entities": ["Emma"]} for n in notes]))
        km.write(AGENT, f"{who}: " + "; ".join(f for _, f in facts) + f" {tag}", who, session_id="hall", user_id=user)
        clock.advance(minutes=3)

    for round_ in range(2):
        says("alice", "Alice", [("Emma", f"Emma is my oncologist, visit {round_}"), ("Gym", f"The gym hurts my knee, round {round_}"),
                                ("Nora", f"Nora is my nurse, round {round_}")],
             relations=[("Emma", "Gym", "works_at")], intentions=["knee surgery"], notes=["knee pain at the gym"])
        says("bob", "Bob", [("Emma", f"Emma is my sister, visit {round_}"), ("Gym", f"The gym opens at 6, round {round_}"),
                            ("Nora", f"Nora is my cousin, round {round_}")],
             relations=[("Emma", "Gym", "trains_at")], intentions=["sister's birthday"], notes=["lifting at the gym"])
        says(None, "Desk", [("Emma", f"Emma manages the front desk, shift {round_}"), ("Gym", f"The gym has {round_ + 3} rooms"),
                            ("Nora", f"Nora cleans the gym, round {round_}")],
             relations=[("Emma", "Gym", "manages")], notes=["gym cleaning"])
    for task in ("cluster_summary", "entity_summary", "community", "consolidate", "entity_merge", "contradiction"):
        llm.route(task, _echo(task))
    llm.route("event_emotion", _echo("event_emotion"))
    yield store, km, llm, clock
    km.close()
    store.close()


def _rows_readable_by(km, user) -> str:
    """Every knowledge row of the scopes ``user`` reads (hers and the shared ones), as text."""
    out = []
    with km.runtime.backend.read() as conn:
        for table in km.runtime.tables.all_agent_tables():
            if "user_id" not in table.c:
                continue
            cond = table.c.user_id.is_(None) if user is None else sa.or_(table.c.user_id.is_(None), table.c.user_id == user)
            cols = [c for c in table.c if not c.name.endswith("_vec")]
            out += [repr(tuple(r)) for r in conn.execute(sa.select(*cols).where(cond))]
    return "\n".join(out)


def test_no_job_of_bob_or_of_the_shared_scope_is_shown_or_writes_alices_words(world):
    store, km, llm, clock = world
    assert MARK not in _rows_readable_by(km, "bob") and MARK in _rows_readable_by(km, "alice")
    clock.advance(days=1)
    for user in ("bob", None):
        before = len(llm.calls)
        result = km.run_background(AGENT, user_id=user)
        assert not result.errors, result.errors
        prompts = llm.calls[before:]
        asked = {task for task, _ in prompts}
        assert result.results["emotional_trends"].observation_created  # the trend's keywords are the scope's words
        # every LLM job ran in this scope (the probe is not vacuous)
        assert {"cluster_summary", "entity_summary", "community", "consolidate", "entity_merge"} <= asked, asked
        leaked = [task for task, payload in prompts if MARK in json.dumps(payload)]
        assert leaked == [], (user, leaked)
    assert MARK not in _rows_readable_by(km, "bob")
    assert MARK not in _rows_readable_by(km, None)
    # Bob's and the shared scope's jobs ran twice more after hers: still nothing of hers
    before = len(llm.calls)
    assert not km.run_background(AGENT, user_id="alice").errors
    assert any(MARK in json.dumps(p) for _, p in llm.calls[before:])  # her own jobs are shown her words
    for user in ("bob", None):
        before = len(llm.calls)
        clock.advance(days=1)
        assert not km.run_background(AGENT, user_id=user).errors
        assert not [t for t, p in llm.calls[before:] if MARK in json.dumps(p)]
    assert MARK not in _rows_readable_by(km, "bob")


def test_every_job_is_in_the_probe():
    """A job added to run_background is added to the probe's expectations too."""
    assert JOB_ORDER == ("entity_importance", "summary_refresh", "clustering", "community_detection", "consolidation",
                         "emotional_trends", "memify")
