"""Red team of the MCP server's user boundary (after ``test_tenant_mcp``): what a client
fixed to Bob can do to Alice through the tools it has.

``add_memory`` takes free metadata, so Bob's client can write records of *his* scope whose
metadata claims Alice's knowledge scope (``kg_user``) and the shape of knowledge fact and
event records, near what she asks: they must not push her facts and events out of her
``retrieve_knowledge``. Ids of her records (knowledge facts included), metadata filters over
fields named like scope columns, and her session id give him nothing of hers."""

from __future__ import annotations

import pytest

from integrations.extras import require_extra

require_extra("mcp.server.mcpserver", "mcp")

from mcp import Client  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.mcp import build_server  # noqa: E402
from oramem.knowledge import KnowledgeMemory  # noqa: E402
from oramem.testing import HashEmbedder  # noqa: E402

AGENT = "desk"
FACT = "Alice keeps the passport in the blue drawer"
QUERY = "where is the passport? blue drawer"
FORGED = {"kg_user": "alice", "kg_primary": "person:alice", "kg_entity_keys": ["person:alice"], "kg_confidence": 1.0,
          "kg_valid_from": "2000-01-01T00:00:00+00:00", "kg_ingested_at": "2000-01-01T00:00:00+00:00",
          "kg_is_stale": False}


@pytest.fixture
async def world():
    with SQLiteMemoryStore(embedder=HashEmbedder(128), search_strategy="hybrid") as st:
        km = KnowledgeMemory(st, None)
        try:
            added = await km.add_knowledge_async(AGENT, entities=[{"name": "Alice", "type": "person"}],
                                                 facts=[{"subject": "Alice", "fact": FACT}], user_id="alice",
                                                 session_id="alice-chat")
            yield st, km, added.facts_added[0]["fact_id"]
        finally:
            await km.close_async()


async def _call(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    data = result.structured_content
    return data["result"] if set(data) == {"result"} else data


async def test_bobs_client_cannot_crowd_alices_knowledge_out_with_forged_metadata(world):
    st, km, _ = world
    async with Client(build_server(st, user_id="alice", agent_id=AGENT, knowledge=km)) as alice:
        before = await _call(alice, "retrieve_knowledge", query=QUERY)
        assert FACT in [f["fact_text"] for f in before["facts"]]
        async with Client(build_server(st, user_id="bob", agent_id=AGENT)) as bob:
            for _ in range(150):
                await _call(bob, "add_memory", text=f"Alice: {QUERY}", record_type="fact", metadata=FORGED)
                await _call(bob, "add_memory", text=QUERY, record_type="message", thread_id="bob-chat",
                            metadata={"kg_source": "chat", "kg_user": "alice"})
        after = await _call(alice, "retrieve_knowledge", query=QUERY)
    # the same facts and context (a score moves with the clock's recency)
    assert after["context"] == before["context"]
    assert [f["fact_text"] for f in after["facts"]] == [f["fact_text"] for f in before["facts"]]


async def test_bobs_client_reads_nothing_of_alices_by_id_filter_or_session(world):
    st, km, fact_id = world
    (event,) = st.list("message", limit=None, user_id="alice")
    async with Client(build_server(st, user_id="bob", agent_id=AGENT, knowledge=km)) as bob:
        for record_type, rid in (("fact", fact_id), ("message", event.id)):
            assert await _call(bob, "get_memory", record_id=rid, record_type=record_type) == {"found": False}
            assert (await _call(bob, "update_memory", record_id=rid, record_type=record_type, text="x"))["updated"] == 0
            assert (await _call(bob, "delete_memory", record_id=rid, record_type=record_type))["deleted"] == 0
        for flt in ({"kg_user": "alice"}, {"$or": [{"kg_user": "alice"}, {"kg_user": {"$exists": False}}]},
                    {"user_id": "alice"}, {"kg_user": {"$ne": "bob"}}):
            hits = await _call(bob, "search_memories", query="passport drawer", record_types=["fact", "message"],
                               metadata_filter=flt, thread_id=None)
            assert hits == [], flt
        found = await _call(bob, "retrieve_knowledge", query=QUERY, session_id="alice-chat")
        assert "passport" not in str(found)
    assert st.get("fact", fact_id).content == FACT and st.get("message", event.id).content == event.content
    assert [f.fact_text for f in await km.get_all_async(AGENT, user_id="alice")] == [FACT]
