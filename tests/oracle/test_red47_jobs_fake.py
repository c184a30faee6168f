"""red47 on the Oracle path, over the driver-shaped fake (the knowledge SQL runs for real,
rows shaped as python-oracledb returns them: JSON columns as objects). Static-checked, not run
against Oracle.

- ``consolidate`` carries the provenance of the existing observations it showed the model
  (their ``supporting_event_ids`` and the source events of their ``supporting_fact_ids``, read
  from the JSON columns as the driver returns them).
- ``ownership.user_rows`` (the erasure's selection, as ``forget`` runs it on Oracle through
  SQLAlchemy) takes, for an entity whose display name her erased events extended, its summary,
  the clusters holding its facts and the community themes citing them."""

from __future__ import annotations

import dataclasses

import pytest
import sqlalchemy as sa

from oramem.knowledge.ownership import user_rows
from oramem.testing import ScriptedLLM

from .test_knowledge_oracle_fake import knowledge_over_fake

from knowledge.helpers import add_all, extract  # tests/ is on sys.path (rootdir conftest)

AGENT = "desk"


@pytest.fixture
def over_fake(monkeypatch):
    llm = ScriptedLLM({"reconcile": add_all, "resolve_entity": {"match_index": 0},
                       "event_emotion": {"emotion": "neutral", "intensity": 0.2, "energy": "medium"}})
    km, store, rec, clock = knowledge_over_fake(monkeypatch, llm=llm)
    km.config = dataclasses.replace(km.config, consolidation_min_events=1, community_similarity_threshold=-1.0,
                                    enable_reranker=False)
    yield km, store, llm, clock
    km.close()


def test_a_consolidation_observation_carries_what_the_existing_ones_shown_were_drawn_from(over_fake):
    km, store, llm, clock = over_fake
    t = km.runtime.tables
    mo, f = t.meta_observation, t.fact
    closed = km.add_fact(AGENT, "Room 12", "Room 12's code is 4417", subject_type="place").facts_added[0]["fact_id"]
    with km.runtime.backend.write("test", AGENT) as conn:
        source = conn.execute(sa.select(f.c.source_event_id).where(f.c.id == closed)).scalar_one()
        conn.execute(sa.update(f).where(f.c.id == closed).values(valid_to=clock()))  # not shown as a fact
        conn.execute(sa.insert(mo).values(
            id="old-1", agent_id=AGENT, user_id=None, observation_type="pattern", title="Room 12 code 4417",
            text="Guests give codes.", supporting_event_ids=["ev-gone"], supporting_fact_ids=[closed], confidence=0.7,
            importance=0.5, times_reinforced=0, is_active=True, embedding_vec=None, first_detected_at=clock(),
            last_reinforced_at=clock(), created_at=clock()))
    clock.advance(days=km.config.consolidation_lookback_days + 1)
    km.add_fact(AGENT, "Pool", "The pool opens at 9", subject_type="place")
    clock.advance()
    shown = []

    def reply(payload):
        shown.append(payload)
        return {"observations": [{"type": "insight", "title": "Pool and " + payload["existing"][0]["title"], "text": "x",
                                  "supporting_event_indices": [1], "supporting_fact_indices": [1]}]}

    llm.route("consolidate", reply)
    assert km.consolidate(AGENT).observations_created == 1
    assert [o["title"] for o in shown[0]["existing"]] == ["Room 12 code 4417"]
    assert not any("4417" in x["text"] for x in shown[0]["facts"] + shown[0]["events"])
    with km.runtime.backend.read() as conn:
        (new,) = conn.execute(sa.select(mo.c.supporting_event_ids).where(mo.c.observation_type == "insight")).scalars()
    assert {"ev-gone", source} <= set(new), new


def test_the_erasure_takes_what_the_jobs_wrote_under_a_name_her_words_extended(over_fake):
    km, store, llm, clock = over_fake
    llm.route("extract", extract([("Amelia", "person")], [("Amelia", "Amelia works on the third floor"),
                                                          ("Amelia", "Amelia parks in bay 4")]))
    km.write(AGENT, "the desk's own notes", "Desk", session_id="lobby")
    clock.advance()
    llm.route("extract", extract([("Pool", "place")], [("Pool", "The pool opens at 9"), ("Pool", "The pool closes at 8")]))
    km.write(AGENT, "the desk's own notes", "Desk", session_id="lobby")
    clock.advance()
    llm.route("extract", extract([("Amelia Quinlan", "person"), ("Room 12", "place")], [("Room 12", "Room 12 is ready")]))
    hers = km.write(AGENT, "Tell Amelia Quinlan room 12 is ready", "Desk", session_id="alice-chat").event_id
    clock.advance()
    llm.route("entity_summary", lambda p: {"summary": f"{p['display_name']}: " + "; ".join(p["facts"])})
    llm.route("cluster_summary", lambda p: {"summary": f"{p['label']}: " + "; ".join(p["facts"])})
    llm.route("community", lambda p: {"title": "Who works where", "summary": " / ".join(c["label"] for c in p["clusters"])})
    for job in (km.refresh_summaries, km.cluster_facts, km.detect_communities):
        job(AGENT)
    t = km.runtime.tables
    with km.runtime.backend.read() as conn:
        clusters = {r.label: r.id for r in conn.execute(sa.select(t.cluster.c.id, t.cluster.c.label))}
        themes = {r[0] for r in conn.execute(sa.select(t.meta_observation.c.id).where(
            t.meta_observation.c.observation_type == "community_theme"))}
        assert set(clusters) == {"Amelia Quinlan", "Pool"} and len(themes) == 1
        # her erasure's selection, as forget runs it (her shared event's message record erased with her thread)
        sel = user_rows(conn, t, {"alice"}, {("message", hers)})
    assert sel.renames and (AGENT, None, "person:amelia") in sel.summaries
    assert clusters["Amelia Quinlan"] in sel.clusters and clusters["Pool"] not in sel.clusters
    assert themes <= sel.metas
