"""Red team of the MCP server's user boundary (after ``test_tenant_mcp``): what a client
fixed to Bob can do to Alice through the tools it has.

``add_memory`` takes free metadata, so Bob's client can write records of *his* scope whose
metadata claims Alice's knowledge scope (``kg_user``) and the shape of knowledge fact and
event records, near what she asks: they must not push her facts and events out of her
``retrieve_knowledge``. Ids of her records (knowledge facts included), metadata filters over
fields named like scope columns, and her session id give him nothing of hers."""

from __future__ import annotations

import json

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


@pytest.mark.parametrize("then", ["keeps it", "deletes it"])
async def test_bobs_client_cannot_open_the_agents_shared_session_and_erase_it(then):
    """KC-4.21 / SC-13.3: the agent's shared knowledge session (``default_session_id(agent,
    None)``) is predictable and new until the agent's first shared write, so the thread rule let
    Bob's client write a memory there; the agent's shared knowledge then went into a thread Bob
    had opened, and his ``forget`` took it whole with the facts learned there, for every user
    (deleting his memory first changed nothing: the thread row names him). The knowledge layer's
    default session of another scope is refused to him, new or not."""
    from oramem.threads import default_session_id

    with SQLiteMemoryStore(embedder=HashEmbedder(128)) as st:
        km = KnowledgeMemory(st, None)
        try:
            async with Client(build_server(st, user_id="bob", agent_id=AGENT, knowledge=km)) as bob:
                shared = default_session_id(AGENT, None)
                added = await bob.call_tool("add_memory", {"text": "bob was here", "thread_id": shared})
                if not added.is_error and then == "deletes it":
                    await _call(bob, "delete_memory", record_id=added.structured_content["id"])
                await km.add_knowledge_async(AGENT, facts=[{"subject": "Hotel", "fact": "The hotel opens at 7"}])
                assert {r.thread_id for r in st.list("message", limit=None)} == {shared}  # the shared event
                await _call(bob, "forget")
            assert [f.fact_text for f in await km.get_all_async(AGENT)] == ["The hotel opens at 7"]  # before: []
            assert added.is_error and "default session of another" in added.content[0].text
        finally:
            await km.close_async()


class _OracleKnowledge:
    """What the MCP server's ``forget`` calls on a knowledge layer over a synchronous Oracle
    store: ``KnowledgeMemory.forget_async`` runs the store's ``forget`` in a worker thread (the
    store alone has no ``forget_async`` on a synchronous pool)."""

    def __init__(self, store):
        self.store = store

    async def forget_async(self, *, user_id=None, agent_id=None):
        import asyncio

        return await asyncio.to_thread(self.store.forget, user_id=user_id, agent_id=agent_id)


async def test_bobs_forget_status_on_oracle_does_not_tell_him_whether_others_hold_a_word():
    """SC-14.1 on Oracle (over the recording fake; static-checked, not run against Oracle). The
    scan also reads the Oracle Text token tables (``DR$<index>$I``), which keep a deleted
    document's words until the index is optimized in FULL mode. So after Bob's erasure his own
    word is always in that table, and it is *shared* when a live row of anyone holds it, else
    *residue*: the verdict ``status`` alone was "clean" when Alice held the word and "residue"
    when nobody did, the bit ``tokens_shared`` gave before it was withheld (red team of
    2026-12-06 j). A client now gets no verdict from a scan of text-index token tables; the
    operator's erasure log keeps it."""
    from oracle.fakes import FakePool, Recorder
    from oracle.test_driver_fake import SETTINGS_OUT
    from oramem import OracleDBMemoryStore
    from oramem.embedders import HashEmbedder
    from oramem.trust.erasure import SALT_OPTION

    cascade = json.dumps({"count": 1, "event": {
        "memory_store_id": "MYSTORE", "records": [["memory", "m1"]], "thread_ids": [], "user_ids": ["bob"],
        "agent_ids": [], "reason": "forget"}})
    mine = {"id": "m1", "record_type": "memory", "content": "note zanzibar", "timestamp": None, "metadata": None,
            "thread_id": None, "user_id": "bob", "agent_id": None, "created_at": "2026-12-05T00:00:00.000000+00:00",
            "expires_at": None, "role": None, "seq_no": 1}

    def listed(c):
        request = json.loads(c.binds["in_request"])
        wanted = (request.get("user") or {}).get("value")
        return json.dumps([mine]) if request.get("record_type") == "memory" and wanted == "bob" else "[]"

    receipts, logged = [], []
    for alice_has_it in (False, True):
        # the DR$ token table holds "zanzibar" either way (his deleted document, not optimized);
        # the record table only when Alice's live record says it
        found = {"zanzibar": (["table:OM_MYSTORE_REC"] if alice_has_it else []) + ["text-index:OM_MYSTORE_HYB"]}
        scan = {"scanned": ["table:OM_MYSTORE_REC", "table:OM_MYSTORE_CHK", "text-index:OM_MYSTORE_HYB"],
                "found": found, "shared": ["zanzibar"] if alice_has_it else []}
        rec = Recorder({
            "oramem_admin.open_store": json.dumps(dict(SETTINGS_OUT, vector_dim=8)),
            "oramem_admin.get_options_json": json.dumps({SALT_OPTION: "00112233445566778899aabbccddeeff"}),
            "oramem_store.list_json": listed, "oramem_store.get_json": None, "oramem_kg_jobs.has_knowledge": 0,
            "oramem_store.delete_record_json": cascade, "oramem_admin.erasure_scan_json": json.dumps(scan),
        })
        store = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), memory_store_id="mystore")
        async with Client(build_server(store, user_id="bob", agent_id=AGENT, knowledge=_OracleKnowledge(store))) as bob:
            receipts.append((await _call(bob, "forget"))["receipt"])
        logged.append([json.loads(c.binds["in_receipt"]) for c in rec.plsql if c.name == "oramem_admin.log_erasure"][-1])
    # the operator's log keeps the verdict, and it differs
    assert [e["verification"]["status"] for e in logged] == ["residue", "clean"]
    shown = [{k: v for k, v in r["verification"].items() if k != "verified_at"} for r in receipts]
    assert shown[0] == shown[1]
    assert shown[0]["status"] == "withheld" and shown[0]["tokens_checked"] == 3


@pytest.mark.parametrize("tool", ["update_memory", "delete_memory"])
async def test_alices_update_or_delete_never_lands_in_bobs_record_swapped_in_after_the_scope_check(tmp_path, tool):
    """The scope check and the write are one transaction: a second connection that replaces
    Alice's record with Bob's under the same id (ids are the caller's to choose, SC-4.3) right
    after the check waits for her call to commit; her call never changes or deletes his."""
    import threading

    path = str(tmp_path / "race.db")
    with SQLiteMemoryStore(path, search_strategy="keyword") as st, \
            SQLiteMemoryStore(path, search_strategy="keyword") as other:
        [rid] = st.add(["Alice's note"], "memory", user_ids="alice", agent_ids=AGENT)
        swapper = threading.Thread(target=lambda: (
            other.delete("memory", rid),
            other.add(["Bob's own note"], "memory", record_ids=[rid], user_ids="bob", agent_ids=AGENT),
        ))
        real_get = st.get_async

        async def get_async(*args, **kwargs):
            found = await real_get(*args, **kwargs)
            if swapper.ident is None:  # the first check: let the swap land if nothing holds the lock
                swapper.start()
                swapper.join(0.5)
            return found

        st.get_async = get_async
        arguments = {"record_id": rid}
        if tool == "update_memory":
            arguments["text"] = "Alice's edit"
        async with Client(build_server(st, user_id="alice", agent_id=AGENT)) as alice:
            result = await _call(alice, tool, **arguments)
        swapper.join(10)
        assert not swapper.is_alive()
        assert result == ({"updated": 1} if tool == "update_memory" else {"deleted": 1})
        record = other.get("memory", rid)
        assert (record.user_id, record.content) == ("bob", "Bob's own note")  # his, as he wrote it, after her call
