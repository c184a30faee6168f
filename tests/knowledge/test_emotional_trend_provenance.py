"""KC-5.13 / KC-3.10 (red35): an ``emotional_trend`` observation quotes up to three trigger
keywords, the most frequent words of the window's intense events, and lists the newest 50
events as its supporting ids. An erasure takes an observation of another scope through those
ids, so a keyword from an older event outlived the erasure of the user who said it: in the
shared scope, a shared write in Alice's private thread (hers to erase, KC-3.10) followed by 50
calmer lobby events left "triggers: chemotherapy, ..." in the agent's shared trend, which every
user's retrieve reads. Now the supporting ids also name every event that said one of the
keywords (Python, and the PL/SQL scheduler's ``emotional_trends``, static-checked)."""

from __future__ import annotations

import sqlalchemy as sa

from .helpers import NEUTRAL, extract
from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"
WORD = "chemotherapy"


def _emotion(payload: dict) -> dict:
    if WORD in payload["text"]:
        return {"emotion": "sadness", "intensity": 0.9, "energy": "low"}
    return NEUTRAL


def _trend_texts(km) -> list[str]:
    mo = km.runtime.tables.meta_observation
    with km.runtime.backend.read() as conn:
        return [r[0] for r in conn.execute(sa.select(mo.c.text).where(mo.c.observation_type == "emotional_trend"))]


def test_erasing_alice_takes_the_shared_trend_quoting_her_words_beyond_the_newest_50(env):  # noqa: F811
    _, store, km, llm, clock = env
    llm.route("event_emotion", _emotion)
    llm.route("extract", extract())
    store.add([f"alice: my {WORD} starts monday"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    km.write(AGENT, f"The guest's {WORD} starts monday, {WORD} is hard", "Desk", session_id="alice-chat")  # shared
    for i in range(50):
        clock.advance(minutes=1)
        km.write(AGENT, f"lobby chat number {i}", "Desk", session_id="lobby")
    result = km.emotional_trends(AGENT)
    assert result.events_analyzed == 51 and WORD in result.trigger_keywords
    assert any(WORD in t for t in _trend_texts(km))

    km.forget(user_id="alice")

    assert all(WORD not in t for t in _trend_texts(km)), _trend_texts(km)
    # the next run writes the trend from what is left
    assert WORD not in km.emotional_trends(AGENT).trigger_keywords
    assert all(WORD not in t for t in _trend_texts(km))


def test_the_trend_supports_the_newest_50_and_the_keyword_events_only(env):  # noqa: F811
    """Bounded as before for the events that gave no keyword (not every event of the window)."""
    _, store, km, llm, clock = env
    llm.route("event_emotion", _emotion)
    llm.route("extract", extract())
    for i in range(5):
        km.write(AGENT, f"calm old chat {i}", "Desk", session_id="lobby")
        clock.advance(minutes=1)
    km.write(AGENT, f"my {WORD} starts monday", "Desk", session_id="lobby")
    ids = []
    for i in range(50):
        clock.advance(minutes=1)
        ids.append(km.write(AGENT, f"lobby chat number {i}", "Desk", session_id="lobby").event_id)
    km.emotional_trends(AGENT)
    mo, ev = km.runtime.tables.meta_observation, km.runtime.tables.event
    with km.runtime.backend.read() as conn:
        (support,) = conn.execute(sa.select(mo.c.supporting_event_ids)).scalars().all()
        said = conn.execute(sa.select(ev.c.id).where(ev.c.text.like(f"%{WORD}%"))).scalars().all()
    assert support == said + ids
