"""KC-6.3 / KC-3.10 (red35): a community theme's text is the model's, written from its member
clusters' summaries, which quote their facts; its ``supporting_fact_ids`` keep at most 50 of
them (KC-6.3), the first 50 by id. An erasure took a theme of another scope only through those
ids, so in a community of more than 50 facts a fact of Alice's (a shared write in her private
thread) outside the first 50 left the theme quoting her after her ``forget``. Now a created
theme's ``supporting_event_ids`` name the events every member fact was learned from (its
provenance, uncapped); ``supporting_fact_ids`` stay the first 50 (retrieval reads them)."""

from __future__ import annotations

import dataclasses
import uuid

import sqlalchemy as sa

from oramem.knowledge.write import reconcile as reconcile_mod

from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"
CODE = "4417"


def _themes(km) -> list[tuple[str, list]]:
    mo = km.runtime.tables.meta_observation
    with km.runtime.backend.read() as conn:
        return [(r[0], r[1]) for r in conn.execute(sa.select(mo.c.text, mo.c.supporting_fact_ids)
                                                    .where(mo.c.observation_type == "community_theme"))]


def test_erasing_alice_takes_a_community_theme_quoting_her_fact_beyond_the_first_50(env, monkeypatch):  # noqa: F811
    _, store, km, llm, clock = env
    km.config = dataclasses.replace(km.config, community_similarity_threshold=-1.0)
    for room in ("Room 12", "Room 14"):
        km.add_knowledge(AGENT, facts=[{"subject": room, "fact": f"{room} has feature number {i}", "subject_type": "place"}
                                       for i in range(30)], session_id="lobby")
        clock.advance(minutes=1)
    store.add([f"alice: my room code is {CODE}"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    # her fact's id sorts after every other (ids are random: the test pins the order it needs)
    monkeypatch.setattr(reconcile_mod, "new_id", lambda: "ffffffff-ffff-4fff-bfff-" + uuid.uuid4().hex[:12])
    km.add_knowledge(AGENT, facts=[{"subject": "Room 12", "fact": f"Room 12 door code is {CODE}", "subject_type": "place"}],
                     session_id="alice-chat")
    monkeypatch.undo()
    llm.route("cluster_summary", lambda p: {"summary": " / ".join(p["facts"])})
    llm.route("community", lambda p: {"title": "Rooms", "summary": " | ".join(c["summary"] for c in p["clusters"])})
    assert km.cluster_facts(AGENT).clusters_created == 2
    assert km.detect_communities(AGENT).communities_created == 1
    ((text, cited),) = _themes(km)
    assert CODE in text and len(cited) == 50  # the theme quotes her fact, and does not cite it

    km.forget(user_id="alice")

    assert all(CODE not in text for text, _ in _themes(km)), _themes(km)
