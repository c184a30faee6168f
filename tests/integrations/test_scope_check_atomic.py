"""SC-13.1 / SC-13.5 at the adapters: a scope check and the write it guards commit together.
The LangChain vector store's ``delete`` and the MCP server's ``update_memory`` /
``delete_memory`` read the record, check it is the caller's (Bob's), then delete or update by
id in a later call. Ids are unique per record type only and may be chosen by callers
(LangChain's ``add_texts(ids=...)``, often a hash of the text, so two users index the same
page under one id): when Bob's record goes between the check and the write (his other request,
a purge) and Alice's app stores a record under the freed id, Bob's write hit hers. Each check
and its write now run in one store transaction (SQLite ``BEGIN IMMEDIATE``: the other writer
waits). Deterministic: the check's ``get`` starts the other writer (another store object, as
another process) and gives it time to finish; each test fails before the fix."""

from __future__ import annotations

import asyncio
import threading

import pytest

from integrations.extras import require_extra

require_extra("langchain_core", "langchain")

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.langchain import OramemVectorStore  # noqa: E402

DOC = "doc-5f0e"  # a caller-chosen id (say a hash of the page both index)


def _open(path):
    return SQLiteMemoryStore(str(path), search_strategy="keyword")


def _swap_after_check(monkeypatch, store, other, record_type, rid, alice_text):
    """After ``store``'s next ``get`` of ``rid``, another writer deletes Bob's record and stores
    Alice's under the same id; it gets up to a second to finish (it waits when the check holds
    the write lock). Returns the thread, to join at the end."""
    started: list[threading.Thread] = []

    def swap():
        other.delete(record_type, rid)
        other.add([alice_text], record_type, record_ids=rid, user_ids="alice", agent_ids="desk")

    def after(record):
        if record is not None and record.id == rid and not started:
            t = threading.Thread(target=swap)
            started.append(t)
            t.start()
            t.join(timeout=1.0)
        return record

    real_get, real_get_async = store.get, store.get_async
    monkeypatch.setattr(store, "get", lambda *a, **kw: after(real_get(*a, **kw)))

    async def get_async(*a, **kw):
        return after(await real_get_async(*a, **kw))

    monkeypatch.setattr(store, "get_async", get_async)
    return started


@pytest.mark.parametrize("colour", ["sync", "async"])
def test_bobs_langchain_delete_never_takes_alices_record_under_the_freed_id(tmp_path, monkeypatch, colour):
    path = tmp_path / "lc.db"
    with _open(path) as store, _open(path) as other:
        bob = OramemVectorStore(store, user_id="bob", agent_id="desk")
        assert bob.add_texts(["the handbook, page 1"], ids=[DOC]) == [DOC]
        started = _swap_after_check(monkeypatch, store, other, "memory", DOC, "Alice's diary: the handbook, page 1")
        if colour == "sync":
            bob.delete([DOC])
        else:
            asyncio.run(bob.adelete([DOC]))
        for t in started:
            t.join()
        left = other.get("memory", DOC)
        assert left is not None and left.user_id == "alice" and left.content.startswith("Alice's diary")


@pytest.mark.parametrize("tool", ["update_memory", "delete_memory"])
def test_bobs_mcp_update_or_delete_never_touches_alices_record_under_the_freed_id(tmp_path, monkeypatch, tool):
    require_extra("mcp", "mcp")
    from mcp import Client

    from oramem.integrations.mcp import build_server

    path = tmp_path / "mcp.db"
    with _open(path) as store, _open(path) as other:
        (rid,) = store.add(["Bob's parking spot is B2"], "memory", user_ids="bob", agent_ids="desk")
        started = _swap_after_check(monkeypatch, store, other, "memory", rid, "Alice's locker code is 7788")

        async def run():
            async with Client(build_server(store, user_id="bob", agent_id="desk")) as bob:
                args = {"record_id": rid, **({"text": "Bob's spot is B3"} if tool == "update_memory" else {})}
                result = await bob.call_tool(tool, args)
                assert not result.is_error, result.content

        asyncio.run(run())
        for t in started:
            t.join()
        left = other.get("memory", rid)
        assert left is not None and (left.user_id, left.content) == ("alice", "Alice's locker code is 7788")


def test_bobs_session_pop_never_takes_alices_message_under_the_freed_id(tmp_path, monkeypatch):
    """The OpenAI Agents session's ``pop_item`` looks up Bob's newest message, then deletes it by
    id; when it went meanwhile (his other pop) and Alice's message in the shared conversation
    took its id (an app restoring messages with their ids), the pop deleted hers."""
    require_extra("agents", "openai-agents")
    from oramem.integrations.openai_agents import OramemSession

    path = tmp_path / "oa.db"
    with _open(path) as store, _open(path) as other:
        (mid,) = store.add(["bob: see you at 5"], "message", thread_ids="chat", user_ids="bob", agent_ids="desk",
                           roles="user")
        started: list[threading.Thread] = []

        def swap():
            other.delete("message", mid)
            other.add(["alice: my flat key is under the mat"], "message", record_ids=mid, thread_ids="chat",
                      user_ids="alice", agent_ids="desk", roles="user")

        real_list_async = store.list_async

        async def list_async(*a, **kw):
            found = await real_list_async(*a, **kw)
            if any(r.id == mid for r in found) and not started:
                t = threading.Thread(target=swap)
                started.append(t)
                t.start()
                t.join(timeout=1.0)
            return found

        monkeypatch.setattr(store, "list_async", list_async)
        session = OramemSession("chat", store, user_id="bob", agent_id="desk")
        asyncio.run(session.pop_item())
        for t in started:
            t.join()
        left = other.get("message", mid)
        assert left is not None and left.user_id == "alice"
