"""What a client of one user learns about another user's data without reading it (red24):
for every id-taking call of a scoped surface, Alice's id must give Bob the answer an id
that does not exist gives (same result, same error text), and a refused write must not say
whose records made it refuse. The MCP server (in-process), the LangChain vector store and
the OpenAI Agents session, sync and async where both exist. The queue operations of the
knowledge layer (``jobs``, ``get_job``, ``retry_jobs``, ``job_status``, ``process_jobs``)
are the operator's: every user's queued writes, their errors included; no scoped surface
offers them."""

from __future__ import annotations

import ast
import pathlib

import pytest

from integrations.extras import require_extra

require_extra("mcp.server.mcpserver", "mcp")

from mcp import Client  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.mcp import build_server  # noqa: E402

#: the operator's calls of ``KnowledgeMemory``: every user's queued writes, or every user's id
QUEUE_OPERATIONS = {"jobs", "get_job", "retry_jobs", "job_status", "process_jobs", "start_worker", "stop_worker",
                    "scopes"}


@pytest.fixture
def store():
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        yield s


async def _answer(client, tool, **arguments):
    """(is_error, the whole answer) of one tool call."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        return True, result.content[0].text
    return False, result.structured_content


def _alice(store) -> str:
    (rid,) = store.add(["alice's diagnosis"], "memory", user_ids="alice", agent_ids="concierge", thread_ids="alice-chat")
    return rid


async def test_mcp_id_calls_answer_alices_id_as_a_missing_one(store):
    rid = _alice(store)
    async with Client(build_server(store, user_id="bob", agent_id="concierge")) as bob:
        for tool, extra in (("get_memory", {}), ("update_memory", {"text": "mine now"}), ("delete_memory", {}),
                            ("update_memory", {"metadata": {"k": 1}})):
            for record_type in ("memory", "fact", "message"):
                theirs = await _answer(bob, tool, record_id=rid, record_type=record_type, **extra)
                missing = await _answer(bob, tool, record_id="no-such-id", record_type=record_type, **extra)
                assert theirs == missing, (tool, record_type)
    assert [r.content for r in store.list("memory", limit=None)] == ["alice's diagnosis"]


async def test_mcp_thread_refusal_says_nothing_about_who_wrote_there(store):
    """Bob may not write into Alice's conversation, nor into a thread of the agent's records
    only; the two refusals are one message (before, "holds another user's records" against
    "holds only records of no user" told him whether some user had a conversation under the
    id)."""
    _alice(store)
    store.add(["agent notice"], "message", thread_ids="lobby", agent_ids="concierge")
    async with Client(build_server(store, user_id="bob", agent_id="concierge")) as bob:
        users = await _answer(bob, "add_memory", text="hi", thread_id="alice-chat")
        agents = await _answer(bob, "add_memory", text="hi", thread_id="lobby")
        assert users[0] and agents[0]
        assert users[1].replace("'alice-chat'", "'T'") == agents[1].replace("'lobby'", "'T'")
        # a new thread of his own is open to him
        assert not (await _answer(bob, "add_memory", text="hi", thread_id="bob-chat"))[0]


def test_langchain_vector_store_answers_alices_id_as_a_missing_one(store):
    require_extra("langchain_core", "langchain")
    from oramem.integrations.langchain import OramemVectorStore

    rid = _alice(store)
    bob = OramemVectorStore(store, user_id="bob", agent_id="concierge", thread_id="alice-chat")
    assert bob.get_by_ids([rid]) == bob.get_by_ids(["no-such-id"]) == []
    assert bob.delete([rid]) == bob.delete(["no-such-id"]) is False
    assert store.get("memory", rid) is not None


async def test_langchain_vector_store_async_answers_alices_id_as_a_missing_one(store):
    require_extra("langchain_core", "langchain")
    from oramem.integrations.langchain import OramemVectorStore

    rid = _alice(store)
    bob = OramemVectorStore(store, user_id="bob", agent_id="concierge", thread_id="alice-chat")
    assert await bob.aget_by_ids([rid]) == await bob.aget_by_ids(["no-such-id"]) == []
    assert await bob.adelete([rid]) == await bob.adelete(["no-such-id"]) is False
    assert store.get("memory", rid) is not None


def test_no_scoped_surface_offers_the_job_queue():
    """The queue operations list every user's queued writes (a job's ``last_error`` and
    session id included): operator-only, documented as such on ``KnowledgeMemory``; no
    integration calls them and the MCP server has no tool for them."""
    import oramem.integrations as integrations
    from oramem.knowledge import KnowledgeMemory

    for name in QUEUE_OPERATIONS & set(dir(KnowledgeMemory)):
        if name.endswith("_worker"):
            continue
        doc = getattr(KnowledgeMemory, name + "_async", getattr(KnowledgeMemory, name)).__doc__ or ""
        assert "operator" in doc, name
    for path in pathlib.Path(integrations.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        reached = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        reached |= {node.attr.removesuffix("_async") for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        assert not reached & QUEUE_OPERATIONS, (path.name, reached & QUEUE_OPERATIONS)


async def test_mcp_server_has_no_queue_tool(store):
    async with Client(build_server(store, user_id="bob", agent_id="concierge")) as bob:
        names = {tool.name for tool in (await bob.list_tools()).tools}
    assert names and not {n for n in names if "job" in n or "queue" in n or "worker" in n}
