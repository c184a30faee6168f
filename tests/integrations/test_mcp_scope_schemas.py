"""The MCP tools' schemas offer ``user_id``/``agent_id`` only where a call may choose its scope
(adp38, from trial33): the default server (``--user``, no ``--allow-scope-per-call``) listed
them on every tool, so an LLM client saw arguments it would always be refused for. They are
left out of ``tools/list`` there; a client that sends them anyway is still refused (another
scope) with the message saying how to allow it, and an argument no tool has is still refused."""

from __future__ import annotations

import pytest

from integrations.extras import require_extra

require_extra("mcp.server.mcpserver", "mcp")

from mcp import Client  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.embedders import HashEmbedder  # noqa: E402
from oramem.integrations.mcp import build_server  # noqa: E402
from oramem.knowledge import KnowledgeMemory  # noqa: E402

SCOPE = {"user_id", "agent_id"}
#: the scope arguments each tool's function takes
TAKES = {"add_memory": SCOPE, "search_memories": SCOPE, "get_memory": SCOPE, "update_memory": SCOPE,
         "delete_memory": SCOPE, "forget": {"user_id"}, "retrieve_knowledge": SCOPE}


@pytest.fixture
def kstore():
    with SQLiteMemoryStore(embedder=HashEmbedder(64), search_strategy="hybrid") as s:
        km = KnowledgeMemory(s, None)
        try:
            yield s, km
        finally:
            km.close()


async def _schemas(server):
    async with Client(server) as client:
        return {t.name: t.input_schema for t in (await client.list_tools()).tools}


async def test_a_server_of_one_scope_lists_no_scope_arguments(kstore):
    store, km = kstore
    for server in (build_server(store, user_id="alice", agent_id="desk", knowledge=km), build_server(store, user_id="alice"),
                   build_server(store)):
        schemas = await _schemas(server)
        assert set(schemas) >= set(TAKES) - {"retrieve_knowledge"}
        for name, schema in schemas.items():
            assert not SCOPE & set(schema["properties"]), (name, schema["properties"])
            assert not SCOPE & set(schema.get("required", [])), name
    # the other arguments are still there
    assert {"text", "record_type", "metadata", "thread_id", "ttl_days"} <= set(schemas["add_memory"]["properties"])


async def test_a_server_with_per_call_scope_lists_them(kstore):
    store, km = kstore
    schemas = await _schemas(build_server(store, agent_id="desk", allow_scope_per_call=True, knowledge=km))
    assert set(schemas) == set(TAKES)
    for name, schema in schemas.items():
        assert SCOPE & set(schema["properties"]) == TAKES[name], name


async def test_sent_anyway_they_are_still_refused_for_another_scope(kstore):
    store, _ = kstore
    async with Client(build_server(store, user_id="alice")) as alice:
        for tool, args in (("add_memory", {"text": "x"}), ("search_memories", {"query": "x"}), ("forget", {})):
            result = await alice.call_tool(tool, dict(args, user_id="bob"))
            assert result.is_error and "--allow-scope-per-call" in result.content[0].text, (tool, result.content)
        result = await alice.call_tool("add_memory", {"text": "x", "agent_id": "other"})
        assert result.is_error and "--allow-scope-per-call" in result.content[0].text
        # her own scope, named: as before (no other scope chosen)
        result = await alice.call_tool("add_memory", {"text": "alice likes tea", "user_id": "alice"})
        assert not result.is_error
        # forget takes no agent_id: refused as an argument it does not have, listing what it shows
        result = await alice.call_tool("forget", {"agent_id": "desk"})
        assert result.is_error and result.content[0].text == "forget has no argument 'agent_id'; it accepts: no arguments"
        result = await alice.call_tool("get_memory", {"record_id": "r", "colour": "red"})
        assert result.is_error
        assert result.content[0].text == "get_memory has no argument 'colour'; it accepts: record_id, record_type"
    assert [r.content for r in store.list("memory", limit=None)] == ["alice likes tea"]


async def test_the_thread_refusal_says_what_to_do_in_the_same_words_for_both_closed_threads(kstore):
    """adp38, from trial33: the refusal's last clause was garbled ("a client of one user, not
    into a thread of records of no user only either"). It now says nothing was written, what
    to give instead and the two rules; still one text whichever rule closed the thread (red24:
    it must not tell whose records are there)."""
    store, _ = kstore
    store.add(["bob's words"], "message", thread_ids="bob-chat", user_ids="bob")
    store.add(["the hotel opens at 7"], "message", thread_ids="lobby", agent_ids="desk", roles="assistant")
    async with Client(build_server(store, user_id="alice", agent_id="desk")) as alice:
        texts = []
        for thread in ("bob-chat", "lobby"):
            result = await alice.call_tool("add_memory", {"text": "hello", "thread_id": thread})
            assert result.is_error
            texts.append(result.content[0].text)
        # the default session of another scope: its own message, with what to do
        result = await alice.call_tool("add_memory", {"text": "hello", "thread_id": "kg-default-other"})
        assert result.is_error and result.content[0].text.endswith(" (use a thread id of your own)")
    assert texts[0] == texts[1].replace("'lobby'", "'bob-chat'")
    assert texts[0] == (
        "Error executing tool add_memory: thread 'bob-chat' is not open to this client, so nothing was written. Give a thread id of your own: a new "
        "one, or one of this client's conversations. A client never writes into a thread that holds another user's "
        "records, and a client of one user (a server started with --user) never into a thread that holds only "
        "records of no user, such as the agent's shared conversation")
    assert "either" not in texts[0] and "(use a thread id" not in texts[0]
    assert sorted(r.content for r in store.list("message", limit=None)) == ["bob's words", "the hotel opens at 7"]
