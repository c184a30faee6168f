"""OramemSession (OpenAI Agents SDK Session) on SQLite: items round-trip over thread messages.

The SDK's own session tests run against it too (tests/integrations/upstream_openai_agents_plugin.py)."""

from __future__ import annotations

import pytest

from integrations.extras import require_extra

require_extra("agents", "openai-agents")

from agents import Agent, Runner, set_tracing_disabled  # noqa: E402
from agents.memory import Session  # noqa: E402
from agents.testing import ScriptedModel, assistant_message  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.openai_agents import OramemSession  # noqa: E402

set_tracing_disabled(True)

USER = {"role": "user", "content": "hello"}
CALL = {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"}
REPLY = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "hi", "annotations": []}, {"type": "output_text", "text": "there"}],
}


@pytest.fixture
def store():
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        yield s


async def test_items_round_trip_in_order_as_thread_messages(store):
    session = OramemSession("s1", store, user_id="alice")
    assert isinstance(session, Session)
    await session.add_items([USER, CALL, REPLY])
    assert await session.get_items() == [USER, CALL, REPLY]
    assert await session.get_items(limit=2) == [CALL, REPLY]
    assert await session.get_items(limit=0) == []
    messages = store.list_thread_messages("s1")
    assert [m.role for m in messages] == ["user", "function_call", "assistant"]
    assert messages[0].content == "hello" and messages[2].content == "hi\nthere"
    assert {m.user_id for m in messages} == {"alice"}
    assert [r.id for r, _ in store.search("there", thread_id="s1")] == [messages[2].id]


async def test_pop_and_clear(store):
    session = OramemSession("s1", store)
    other = OramemSession("s2", store)
    await session.add_items([USER, REPLY])
    await other.add_items([USER])
    assert await session.pop_item() == REPLY
    assert await session.get_items() == [USER]
    await session.clear_session()
    assert await session.get_items() == [] and await session.pop_item() is None
    assert await other.get_items() == [USER]


async def test_settings_limit_and_bad_input(store):
    session = OramemSession("s1", store, session_settings={"limit": 1})
    await session.add_items([USER, REPLY])
    assert await session.get_items() == [REPLY]
    assert await session.get_items(limit=5) == [USER, REPLY]
    with pytest.raises(ValueError, match="limit"):
        await session.get_items(limit=-1)
    with pytest.raises(TypeError):
        await session.add_items([USER, {"role": "user", "content": object()}])
    with pytest.raises(TypeError, match="items\\[0\\]"):
        await session.add_items(["not a dict"])
    assert await session.get_items(limit=10) == [USER, REPLY]  # nothing of the bad calls was written
    with pytest.raises(ValueError, match="session_id"):
        OramemSession("", store)


async def test_messages_written_by_oramem_appear_as_items(store):
    store.add(["remember me"], "message", thread_ids="s1", roles="user")
    assert await OramemSession("s1", store).get_items() == [{"role": "user", "content": "remember me"}]


async def test_runner_keeps_history_across_turns(store):
    session = OramemSession("chat", store)
    model = ScriptedModel()
    agent = Agent(name="a", model=model)
    model.enqueue([assistant_message("first")])
    await Runner.run(agent, "one", session=session)
    model.enqueue([assistant_message("second")])
    result = await Runner.run(agent, "two", session=session)
    assert result.final_output == "second"
    assert len(model.calls[-1].input) == 3
    assert [m.content for m in store.list_thread_messages("chat")] == ["one", "first", "two", "second"]


async def test_closed_store_is_refused_even_for_an_empty_add():
    store = SQLiteMemoryStore(search_strategy="keyword")
    session = OramemSession("s1", store)
    store.close()
    for operation in (lambda: session.add_items([]), lambda: session.add_items([USER]), session.get_items,
                      session.pop_item, session.clear_session):
        with pytest.raises(ValueError, match="store is closed"):
            await operation()


async def test_unserialisable_item_writes_nothing_and_the_session_stays_usable(store):
    session = OramemSession("s1", store)
    with pytest.raises(TypeError):
        await session.add_items([USER, {"role": "user", "content": object()}])
    assert await session.get_items() == []
    await session.add_items([USER])
    assert await session.get_items() == [USER]
