"""The MCP server (oramem.integrations.mcp, `oramem mcp`): tools through the SDK's own client,
in-process, over stdio and over streamable HTTP on loopback; scope isolation."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from integrations.extras import require_extra

require_extra("mcp.server.mcpserver", "mcp")

import httpx2  # noqa: E402  (the mcp SDK's HTTP client: how it takes headers)
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.mcp import build_server  # noqa: E402


@pytest.fixture
def store():
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        yield s


async def call(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    data = result.structured_content
    return data["result"] if set(data) == {"result"} else data


async def refused(client, tool, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text


async def test_tools_round_trip_in_process(store):
    async with Client(build_server(store, user_id="alice")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"add_memory", "search_memories", "get_memory", "update_memory", "delete_memory", "forget"}
        added = await call(client, "add_memory", text="Alice likes dark roast coffee", metadata={"topic": "food"})
        await call(client, "add_memory", text="Alice moved to Lyon", record_type="fact", thread_id="t1")
        hits = await call(client, "search_memories", query="coffee")
        assert [h["id"] for h in hits] == [added["id"]] and hits[0]["user_id"] == "alice"
        assert await call(client, "search_memories", query="coffee", metadata_filter={"topic": "work"}) == []
        assert [h["content"] for h in await call(client, "search_memories", query="Lyon", thread_id="t1")] == ["Alice moved to Lyon"]
        assert (await call(client, "get_memory", record_id=added["id"]))["content"] == "Alice likes dark roast coffee"
        assert (await call(client, "update_memory", record_id=added["id"], text="Alice likes tea"))["updated"] == 1
        assert [h["content"] for h in await call(client, "search_memories", query="tea")] == ["Alice likes tea"]
        assert (await call(client, "delete_memory", record_id=added["id"]))["deleted"] == 1
        assert (await call(client, "get_memory", record_id=added["id"])) == {"found": False}
        assert "record_type" in await refused(client, "add_memory", text="x", record_type="thread")
        assert "text and/or metadata" in await refused(client, "update_memory", record_id="x")


async def test_a_client_never_reads_another_scope(store):
    async with Client(build_server(store, user_id="alice")) as alice, Client(build_server(store, user_id="bob")) as bob, Client(build_server(store)) as nobody:
        mine = await call(alice, "add_memory", text="alice's secret plan")
        assert await call(bob, "search_memories", query="secret plan") == []
        assert await call(nobody, "search_memories", query="secret plan") == []
        assert await call(bob, "get_memory", record_id=mine["id"]) == {"found": False}
        assert (await call(bob, "update_memory", record_id=mine["id"], text="x"))["updated"] == 0
        assert (await call(bob, "delete_memory", record_id=mine["id"]))["deleted"] == 0
        assert "--allow-scope-per-call" in await refused(bob, "search_memories", query="plan", user_id="alice")
        assert store.get("memory", mine["id"]).content == "alice's secret plan"


async def test_scope_per_call_only_when_configured(store):
    async with Client(build_server(store, allow_scope_per_call=True)) as trusted:
        await call(trusted, "add_memory", text="carol drinks mate", user_id="carol")
        assert [h["user_id"] for h in await call(trusted, "search_memories", query="mate", user_id="carol")] == ["carol"]
        assert await call(trusted, "search_memories", query="mate") == []  # no user given: unscoped records only


async def test_forget_removes_everything_of_the_user(store):
    store.add(["other user's note"], "memory", user_ids="bob")
    async with Client(build_server(store, user_id="alice")) as client:
        await call(client, "add_memory", text="note one")
        await call(client, "add_memory", text="note two", thread_id="t1")
        out = await call(client, "forget")
        assert out["forgotten"] == "alice" and out["erased"]["om_DEFAULT_records"] == 3  # two notes, thread t1
        assert await call(client, "search_memories", query="note") == []
        # forget has no actor (never the agent) and no names: such arguments are refused, not ignored
        assert "no argument 'actor'" in await refused(client, "forget", actor="agent")
        assert "no argument 'names'" in await refused(client, "forget", names=["Bob"])
    assert [r.content for r in store.list("memory")] == ["other user's note"]


async def test_forget_with_knowledge_erases_the_users_facts_on_a_shared_agent():
    from oramem.embedders import HashEmbedder
    from oramem.knowledge import KnowledgeMemory

    with SQLiteMemoryStore(embedder=HashEmbedder(64), search_strategy="hybrid") as kstore:
        with KnowledgeMemory(kstore, None) as km:
            await km.add_fact_async("agent-1", "ana", "ana's locker code is 3141", subject_type="person", user_id="ana")
            await km.add_fact_async("agent-1", "Bo", "Bo's locker code is 2718", subject_type="person", user_id="bo")
            async with Client(build_server(kstore, user_id="ana", agent_id="agent-1", knowledge=km)) as client:
                out = await call(client, "forget")
            assert out["erased"]["DEFAULT_KG_FACT"] == 1
            assert [f.fact_text for f in await km.get_all_async("agent-1", user_id="bo")] == ["Bo's locker code is 2718"]


async def test_knowledge_retrieval_tool_when_configured(store):
    from oramem.embedders import HashEmbedder
    from oramem.knowledge import KnowledgeMemory

    with SQLiteMemoryStore(embedder=HashEmbedder(64), search_strategy="hybrid") as kstore:
        km = KnowledgeMemory(kstore, None)
        try:
            await km.add_fact_async("agent-1", "Ana", "Ana lives in Lisbon")
            async with Client(build_server(kstore, agent_id="agent-1", knowledge=km)) as client:
                found = await call(client, "retrieve_knowledge", query="where does Ana live?")
                assert [f["fact_text"] for f in found["facts"]][:1] == ["Ana lives in Lisbon"]
            async with Client(build_server(kstore)) as unscoped:
                assert "retrieve_knowledge" not in {t.name for t in (await unscoped.list_tools()).tools}
        finally:
            await km.close_async()


def _cli(db, *args):
    return [sys.executable, "-m", "oramem.cli", "--db", str(db), "mcp", *args]


async def test_stdio_client_adds_and_finds_a_memory(tmp_path):
    command = _cli(tmp_path / "m.db", "--user", "alice")
    async with Client(StdioServerParameters(command=command[0], args=command[1:])) as client:
        added = await call(client, "add_memory", text="stdio: Alice prefers green tea")
        assert [h["id"] for h in await call(client, "search_memories", query="green tea")] == [added["id"]]
    with SQLiteMemoryStore(str(tmp_path / "m.db"), schema_policy="require_existing", search_strategy="hybrid") as s:
        assert s.get("memory", added["id"]).user_id == "alice"


async def test_stdio_knowledge_tool_from_the_cli(tmp_path):
    from oramem.embedders import HashEmbedder
    from oramem.knowledge import KnowledgeMemory

    db = tmp_path / "k.db"
    # an explicit embedder (the CLI reopens the store with the one it records), not the
    # offline fallback of the default model, which warns
    with SQLiteMemoryStore(str(db), embedder=HashEmbedder(256), search_strategy="hybrid") as kstore:
        km = KnowledgeMemory(kstore, None)
        try:
            await km.add_fact_async("agent-1", "Ana", "Ana lives in Lisbon")
        finally:
            await km.close_async()
    command = _cli(db, "--agent", "agent-1", "--knowledge")
    async with Client(StdioServerParameters(command=command[0], args=command[1:])) as client:
        found = await call(client, "retrieve_knowledge", query="where does Ana live?")
        assert [f["fact_text"] for f in found["facts"]][:1] == ["Ana lives in Lisbon"]
    refused = subprocess.run(_cli(db, "--knowledge"), capture_output=True, text=True)
    assert refused.returncode == 2 and "--knowledge needs --agent" in refused.stderr


async def test_streamable_http_on_loopback(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = "loopback-test-token-0123456789"
    env = {**os.environ, "ORAMEM_MCP_TOKEN": token}
    server = subprocess.Popen(_cli(tmp_path / "h.db", "--transport", "http", "--port", str(port), "--user", "u"), stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "HTTP server did not start"
                time.sleep(0.2)
        # the SDK leaves a client it is given open: the test owns it and closes it
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http, \
                Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
            added = await call(client, "add_memory", text="over http")
            assert [h["id"] for h in await call(client, "search_memories", query="http")] == [added["id"]]
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_cli_does_not_import_mcp_unless_invoked():
    code = "import sys, oramem.cli; sys.exit(any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
    done = subprocess.run(_cli(":memory:", "--port", "9"), capture_output=True, text=True)
    assert done.returncode == 2 and "--transport http" in done.stderr


async def test_add_memory_refuses_a_ttl_of_zero(store):
    """ttl_days=0 from a client stored a memory that had expired before anyone could read it
    (the tool returned its id); `oramem add --ttl-days 0` refuses the same."""
    async with Client(build_server(store, user_id="bob")) as bob, Client(build_server(store, user_id="alice")) as alice:
        kept = await call(alice, "add_memory", text="Alice keeps this", ttl_days=1)
        message = await refused(bob, "add_memory", text="Bob's note", ttl_days=0)
        assert "ttl_days 0 would expire the memory at once" in message
        assert "must be >= 0" in await refused(bob, "add_memory", text="Bob's note", ttl_days=-1)
        assert await call(bob, "search_memories", query="note") == []
        assert [h["id"] for h in await call(alice, "search_memories", query="keeps")] == [kept["id"]]
    assert [(r.user_id, r.content) for r in store.list("memory")] == [("alice", "Alice keeps this")]


@pytest.mark.parametrize("blank", ["", " ", "\n\t"], ids=repr)
async def test_add_and_update_memory_refuse_a_blank_text(store, blank):
    """trial33: add_memory(text="") returned an id for an empty memory no search can find, and
    update_memory(text=" ") emptied one (`oramem add ""` is refused); nothing is written."""
    async with Client(build_server(store, user_id="alice")) as alice:
        kept = await call(alice, "add_memory", text="Alice likes tea")
        for message in (await refused(alice, "add_memory", text=blank),
                        await refused(alice, "update_memory", record_id=kept["id"], text=blank)):
            assert "text is empty or only white space: give the memory some words" in message
        assert (await call(alice, "get_memory", record_id=kept["id"]))["content"] == "Alice likes tea"
        # metadata alone still updates (text left out)
        assert (await call(alice, "update_memory", record_id=kept["id"], metadata={"topic": "food"}))["updated"] == 1
    assert [r.content for r in store.list("memory")] == ["Alice likes tea"]


async def test_a_bare_url_client_sends_no_token_and_is_refused(tmp_path):
    """README "MCP server" (trial33): the recipe said `Client(url)` also works; against `oramem mcp
    --transport http` (which always wants a token) it sends none: the server answers 401 and the
    client raises MCPError 'Server returned an error response' in an ExceptionGroup, as the README
    now says; the token goes through the SDK's HTTP client (test_streamable_http_on_loopback)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "ORAMEM_MCP_TOKEN": "bare-url-test-token-0123456789"}
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(_cli(tmp_path / "h.db", "--transport", "http", "--port", str(port), "--user", "u"),
                                  stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "HTTP server did not start"
                time.sleep(0.2)
        with pytest.raises(Exception) as failed:  # an ExceptionGroup (builtin from Python 3.11)
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                await client.call_tool("search_memories", {"query": "x"})
        assert "MCPError: Server returned an error response" in _flat(failed.value)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert '"POST /mcp HTTP/1.1" 401' in log.read_text(errors="replace")


def _flat(exc: BaseException) -> str:
    """Every message in an exception group, nested groups included."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, tuple):
        return " ".join(_flat(e) for e in inner)
    return f"{type(exc).__name__}: {exc}"
