"""KC-6.4 / KC-3.10 (red47): the ``consolidate`` prompt also shows the scope's active
observations (``existing``: up to 10 types and titles), and a title is the model's text: it can
quote what the observation was written from. A new observation drawn from that prompt may
repeat such a title, but its provenance (red35: every event shown, the source events of the
facts and notes shown) did not name what the shown observations were drawn from, and the job's
write did not check that they were still there.

Bob's seat, through the shared scope: the desk notes, as the hotel's knowledge, what Alice said
in her private thread (a shared write there is hers to erase, KC-3.10). Consolidation writes
an observation whose title quotes her room code. A week later her event and note are out of
the window; the next consolidation of the shared scope shows only the lobby's rows and that
title, and writes a new observation repeating it. Her ``forget`` took the first observation
(it cites her event) and left the second: Bob's retrieve about the pool showed her code under
"Observed patterns". And when her ``forget`` committed while the model answered, the job wrote
the new observation from the erased one's title."""

from __future__ import annotations

import sqlalchemy as sa

from .helpers import extract
from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"
CODE = "4417"


def _observation_texts(km) -> list[str]:
    mo = km.runtime.tables.meta_observation
    with km.runtime.backend.read() as conn:
        return [f"{r[0]} | {r[1]}" for r in conn.execute(sa.select(mo.c.title, mo.c.text))]


def _title_from_her_note(payload: dict) -> dict:
    """Consolidation #1: a pattern titled with the session note shown (her code)."""
    note = next(n for n in payload["session_observations"] if CODE in n)
    return {"observations": [{"type": "pattern", "title": note, "text": "Guests give their room codes at the desk.",
                              "supporting_event_indices": [1], "supporting_fact_indices": []}]}


def _repeat_the_existing_titles(payload: dict) -> dict:
    """Consolidation #2: an insight citing the pool's event and fact that repeats the titles of
    the observations shown as ``existing``."""
    ev = next(e["index"] for e in payload["events"] if "pool" in e["text"])
    fa = next(f["index"] for f in payload["facts"] if "pool" in f["text"])
    earlier = "; ".join(o["title"] for o in payload["existing"])
    return {"observations": [{"type": "insight", "title": f"Guests ask about the pool (earlier: {earlier})",
                              "text": f"Earlier: {earlier}. The pool opens at 9.",
                              "supporting_event_indices": [ev], "supporting_fact_indices": [fa]}]}


def _her_pattern_then_the_lobby(km, store, llm, clock) -> None:
    """Her shared note and the first observation (its title quotes her code), then, a week
    later (her event and note out of the window), the lobby's fact."""
    store.add([f"alice: my room code is {CODE}"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    llm.route("extract", extract([], [], observations=[{"content": f"The guest of room 12 gave code {CODE}",
                                                        "topic": "rooms"}]))
    km.write(AGENT, f"Room 12's code is {CODE}", "Desk", session_id="alice-chat")  # shared, in her thread
    clock.advance(minutes=1)
    llm.route("consolidate", _title_from_her_note)
    assert km.consolidate(AGENT).observations_created == 1
    assert any(CODE in t for t in _observation_texts(km))
    clock.advance(days=km.config.consolidation_lookback_days + 1)
    llm.route("extract", extract([("Pool", "place")], [("Pool", "The pool opens at 9")]))
    km.write(AGENT, "The pool opens at 9", "Desk", session_id="lobby")
    clock.advance(minutes=1)


def test_erasing_alice_takes_an_observation_repeating_the_title_of_one_drawn_from_her_thread(env):  # noqa: F811
    _, store, km, llm, clock = env
    _her_pattern_then_the_lobby(km, store, llm, clock)
    calls = []
    llm.route("consolidate", lambda p: calls.append(p) or _repeat_the_existing_titles(p))
    assert km.consolidate(AGENT).observations_created == 1
    shown = calls[0]
    # her code reached the prompt only through the existing observation's title
    assert not any(CODE in e["text"] for e in shown["events"]) and not any(CODE in n for n in shown["session_observations"])
    assert not any(CODE in f["text"] for f in shown["facts"]) and any(CODE in o["title"] for o in shown["existing"])
    assert sum(CODE in t for t in _observation_texts(km)) == 2
    seen = km.retrieve(AGENT, "when does the pool open?", user_id="bob").context
    assert "pool" in seen.lower() and CODE in seen  # shown to Bob with the pool's fact

    km.forget(user_id="alice")

    assert all(CODE not in t for t in _observation_texts(km)), _observation_texts(km)
    seen = km.retrieve(AGENT, "when does the pool open?", user_id="bob").context
    assert "pool" in seen.lower() and CODE not in seen, seen
    assert [f.fact_text for f in km.get_all(AGENT)] == ["The pool opens at 9"]


def test_an_observation_shown_as_existing_and_erased_while_the_model_answered_is_not_repeated(env):  # noqa: F811
    _, store, km, llm, clock = env
    _her_pattern_then_the_lobby(km, store, llm, clock)

    def erase_then_answer(payload):
        store.forget(user_id="alice")  # commits before the job's write transaction
        return _repeat_the_existing_titles(payload)

    llm.route("consolidate", erase_then_answer)
    assert km.consolidate(AGENT).observations_created == 0
    assert all(CODE not in t for t in _observation_texts(km)), _observation_texts(km)


def test_an_observation_drawn_from_the_lobby_only_stays_when_alice_is_erased(env):  # noqa: F811
    """Not an over-reach: the lobby's observation shown as existing, repeated by a new one,
    and Alice erased: nothing of hers was in either, both stay."""
    _, store, km, llm, clock = env
    store.add(["alice: hello"], "message", thread_ids="alice-chat", user_ids="alice", agent_ids=AGENT, roles="user")
    llm.route("extract", extract([("Pool", "place")], [("Pool", "The pool opens at 9")]))
    km.write(AGENT, "The pool opens at 9", "Desk", session_id="lobby")
    clock.advance(minutes=1)
    llm.route("consolidate", {"observations": [{"type": "pattern", "title": "Pool hours asked often", "text": "Guests ask.",
                                                "supporting_event_indices": [1], "supporting_fact_indices": [1]}]})
    assert km.consolidate(AGENT).observations_created == 1
    clock.advance(days=km.config.consolidation_lookback_days + 1)
    km.write(AGENT, "The pool opens at 9 again", "Desk", session_id="lobby")
    clock.advance(minutes=1)
    llm.route("consolidate", _repeat_the_existing_titles)
    assert km.consolidate(AGENT).observations_created == 1
    before = sorted(_observation_texts(km))
    assert len(before) == 2
    km.forget(user_id="alice")
    assert sorted(_observation_texts(km)) == before


def test_an_observation_naming_only_her_fact_passes_its_event_on_to_one_repeating_its_title(env):  # noqa: F811
    """An observation written before red35 names the facts it cites only (no events): the new
    observation carries the events those facts were learned from. Her fact is closed (not
    shown to the model as a current fact), the old observation still cites it."""
    _, store, km, llm, clock = env
    store.add([f"alice: my room code is {CODE}"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    llm.route("extract", extract([("Room 12", "place")], [("Room 12", f"Room 12 door code is {CODE}")]))
    km.write(AGENT, f"Room 12's code is {CODE}", "Desk", session_id="alice-chat")  # shared, in her thread
    t = km.runtime.tables
    mo, f = t.meta_observation, t.fact
    with km.runtime.backend.write("test", AGENT) as conn:
        fid = conn.execute(sa.select(f.c.id).where(f.c.fact_text.contains(CODE))).scalar_one()
        conn.execute(sa.update(f).where(f.c.id == fid).values(valid_to=clock()))
        conn.execute(sa.insert(mo).values(
            id="legacy-1", agent_id=AGENT, user_id=None, observation_type="pattern", title=f"Room 12 code {CODE}",
            text="Guests give their codes.", supporting_event_ids=[], supporting_fact_ids=[fid], confidence=0.7,
            importance=0.5, times_reinforced=0, is_active=True, embedding_vec=None, first_detected_at=clock(),
            last_reinforced_at=clock(), created_at=clock()))
    clock.advance(days=km.config.consolidation_lookback_days + 1)
    llm.route("extract", extract([("Pool", "place")], [("Pool", "The pool opens at 9")]))
    km.write(AGENT, "The pool opens at 9", "Desk", session_id="lobby")
    clock.advance(minutes=1)
    calls = []
    llm.route("consolidate", lambda p: calls.append(p) or _repeat_the_existing_titles(p))
    assert km.consolidate(AGENT).observations_created == 1
    assert not any(CODE in x["text"] for x in calls[0]["facts"] + calls[0]["events"])
    assert sum(CODE in t for t in _observation_texts(km)) == 2

    km.forget(user_id="alice")

    assert all(CODE not in t for t in _observation_texts(km)), _observation_texts(km)
