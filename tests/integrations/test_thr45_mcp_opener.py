"""The MCP server's thread rule after thr45 (iso42's finding): a server of no user never writes
into a thread a user opened (her erasure would take it whole, SC-13.2 / SC-13.3), and a client of
one user may come back to a thread she opened that holds only records of no user."""

from __future__ import annotations

import pytest

from integrations.extras import require_extra

require_extra("mcp.server.mcpserver", "mcp")

from mcp import Client  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.mcp import build_server  # noqa: E402


@pytest.fixture
def store():
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        yield s


async def test_a_server_of_no_user_never_writes_into_a_thread_a_user_opened_and_left(store):
    store.add(["hi"], "message", record_ids="b1", thread_ids="lobby", user_ids="bob", agent_ids="desk")
    store.delete("message", "b1")
    async with Client(build_server(store, agent_id="desk")) as agent:
        result = await agent.call_tool("add_memory", {"text": "The hotel opens at 7", "thread_id": "lobby"})
        assert result.is_error and "not open to this client" in result.content[0].text
        assert "bob" not in result.content[0].text
        ok = await agent.call_tool("add_memory", {"text": "Breakfast until 10", "thread_id": "hall"})
        assert not ok.is_error, ok.content
    store.forget(user_id="bob")
    assert [r.content for r in store.list("memory", limit=None)] == ["Breakfast until 10"]


async def test_a_client_of_one_user_may_come_back_to_the_thread_she_opened(store):
    store.add(["hi"], "message", record_ids="b1", thread_ids="lobby", user_ids="bob", agent_ids="desk")
    store.add(["reply"], "message", record_ids="r1", thread_ids="lobby", agent_ids="desk", roles="assistant")
    store.delete("message", "b1")
    async with Client(build_server(store, user_id="bob", agent_id="desk")) as bob, \
            Client(build_server(store, user_id="alice", agent_id="desk")) as alice:
        refused = await alice.call_tool("add_memory", {"text": "alice here", "thread_id": "lobby"})
        assert refused.is_error and "not open to this client" in refused.content[0].text
        back = await bob.call_tool("add_memory", {"text": "bob is back", "thread_id": "lobby"})
        assert not back.is_error, back.content
