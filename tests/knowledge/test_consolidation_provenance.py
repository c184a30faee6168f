"""KC-6.4 / KC-3.10 (red35): what a consolidation observation was drawn from. The ``consolidate``
prompt holds the window's events, its session notes and current facts, and the model's reply
may quote any of them (the job's own write already refuses to store a reply when one of the
rows shown was erased since the read). An erasure took an observation of another scope only
when its ``supporting_event_ids`` / ``supporting_fact_ids`` (the indices the model chose to
cite) named her rows. In the shared scope, a shared write in Alice's private thread (the desk
noting what she said as the hotel's knowledge) is hers to erase (KC-3.10); an observation that
quoted it while citing only the lobby's rows survived her ``forget``, and Bob's retrieve about
the pool showed it under "Observed patterns".

Now a created observation's ``supporting_event_ids`` also list every event shown to the model,
the events the shown facts were learned from and the events the shown session notes were built
from (its provenance; ``supporting_fact_ids`` stay the cited facts, which retrieval reads)."""

from __future__ import annotations

import sqlalchemy as sa

from .helpers import extract
from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"
CODE = "4417"


def _quote_everything_cite_the_pool(payload: dict) -> dict:
    """A model that writes from every row shown and cites only the pool's event and fact."""
    ev = next(e["index"] for e in payload["events"] if "pool" in e["text"])
    fa = next(f["index"] for f in payload["facts"] if "pool" in f["text"])
    text = " ".join([e["text"] for e in payload["events"]] + [f["text"] for f in payload["facts"]]
                    + list(payload["session_observations"]))
    title = (list(payload["session_observations"]) or ["Guests ask about the hotel"])[0]
    return {"observations": [{"type": "pattern", "title": title, "text": text,
                              "supporting_event_indices": [ev], "supporting_fact_indices": [fa]}]}


def _observation_texts(km) -> list[str]:
    mo = km.runtime.tables.meta_observation
    with km.runtime.backend.read() as conn:
        return [r[0] for r in conn.execute(sa.select(mo.c.text))]


def test_erasing_alice_takes_a_shared_observation_drawn_from_her_thread_but_not_citing_it(env):  # noqa: F811
    _, store, km, llm, clock = env
    store.add([f"alice: my room code is {CODE}"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    llm.route("extract", extract([("Room 12", "place")], [("Room 12", f"Room 12 door code is {CODE}")],
                                 observations=[{"content": f"The guest of room 12 gave code {CODE}", "topic": "rooms"}]))
    km.write(AGENT, f"Room 12's code is {CODE}", "Desk", session_id="alice-chat")  # shared, in her thread
    clock.advance(minutes=1)
    llm.route("extract", extract([("Pool", "place")], [("Pool", "The pool opens at 9")]))
    km.write(AGENT, "The pool opens at 9", "Desk", session_id="lobby")
    clock.advance(minutes=1)
    llm.route("consolidate", _quote_everything_cite_the_pool)
    assert km.consolidate(AGENT).observations_created == 1
    assert any(CODE in t for t in _observation_texts(km))
    seen = km.retrieve(AGENT, "when does the pool open?", user_id="bob").context
    assert "pool" in seen.lower() and CODE in seen  # the observation is shown to Bob with the pool's fact

    km.forget(user_id="alice")

    assert all(CODE not in t for t in _observation_texts(km)), _observation_texts(km)
    seen = km.retrieve(AGENT, "when does the pool open?", user_id="bob").context
    assert "pool" in seen.lower() and CODE not in seen, seen
    assert [f.fact_text for f in km.get_all(AGENT)] == ["The pool opens at 9"]


def test_a_shared_observation_drawn_only_from_the_lobby_stays(env):  # noqa: F811
    """Not an over-reach: an observation whose prompt held nothing of hers is not erased."""
    _, store, km, llm, clock = env
    store.add(["alice: hello"], "message", thread_ids="alice-chat", user_ids="alice", agent_ids=AGENT, roles="user")
    llm.route("extract", extract([("Pool", "place")], [("Pool", "The pool opens at 9")]))
    km.write(AGENT, "The pool opens at 9", "Desk", session_id="lobby")
    clock.advance(minutes=1)
    llm.route("consolidate", _quote_everything_cite_the_pool)
    assert km.consolidate(AGENT).observations_created == 1
    before = _observation_texts(km)
    km.forget(user_id="alice")
    assert _observation_texts(km) == before


def test_erasing_alice_takes_an_observation_quoting_her_fact_when_her_event_is_out_of_the_window(env):  # noqa: F811
    """Her event is older than the lookback (not shown), her fact is current (shown as a fact)."""
    _, store, km, llm, clock = env
    store.add([f"alice: my room code is {CODE}"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    llm.route("extract", extract([("Room 12", "place")], [("Room 12", f"Room 12 door code is {CODE}")]))
    km.write(AGENT, f"Room 12's code is {CODE}", "Desk", session_id="alice-chat")
    clock.advance(days=km.config.consolidation_lookback_days + 1)
    llm.route("extract", extract([("Pool", "place")], [("Pool", "The pool opens at 9")]))
    km.write(AGENT, "The pool opens at 9", "Desk", session_id="lobby")
    clock.advance(minutes=1)
    calls = []
    llm.route("consolidate", lambda p: calls.append(p) or _quote_everything_cite_the_pool(p))
    assert km.consolidate(AGENT).observations_created == 1
    assert [e["text"] for e in calls[0]["events"]] == ["The pool opens at 9"]  # her event is not shown
    assert any(CODE in t for t in _observation_texts(km))  # her fact is

    km.forget(user_id="alice")

    assert all(CODE not in t for t in _observation_texts(km)), _observation_texts(km)


def test_erasing_alice_takes_an_observation_quoting_a_session_note_of_hers_whose_event_was_not_shown(env):  # noqa: F811
    """The prompt shows the window's 50 newest events and all its session notes: her note
    (built from her event, KC-4.18) is shown, her event, 50 events older than the lobby's, is not."""
    _, store, km, llm, clock = env
    store.add([f"alice: my room code is {CODE}"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    llm.route("extract", extract([], [], observations=[{"content": f"The guest of room 12 gave code {CODE}",
                                                        "topic": "rooms"}]))
    km.write(AGENT, f"Room 12's code is {CODE}", "Desk", session_id="alice-chat")
    llm.route("extract", extract([("Pool", "place")], [("Pool", "The pool opens at 9")]))
    km.write(AGENT, "The pool opens at 9", "Desk", session_id="lobby")
    llm.route("extract", extract())
    for i in range(50):
        clock.advance(minutes=1)
        km.write(AGENT, f"lobby chat number {i}", "Desk", session_id="lobby")
    calls = []

    def model(p):
        calls.append(p)
        p = dict(p, events=[*p["events"], {"index": 0, "text": "pool"}])  # cite no event: the pool's is not shown
        reply = _quote_everything_cite_the_pool(p)
        reply["observations"][0]["supporting_event_indices"] = []
        return reply

    llm.route("consolidate", model)
    assert km.consolidate(AGENT).observations_created == 1
    assert not any(CODE in e["text"] for e in calls[0]["events"]) and any(CODE in n for n in calls[0]["session_observations"])
    assert any(CODE in t for t in _observation_texts(km))

    km.forget(user_id="alice")

    assert all(CODE not in t for t in _observation_texts(km)), _observation_texts(km)
