"""A user's session never adopts a thread of shared records (SC-13.3 with the sessions).

Erasing a user takes her private threads whole: a thread she wrote in where no record carries
another user, the records of no user in it included (the agent's replies; and the agent's
shared knowledge events, whose facts KC-3.10 erases with them). So a thread that holds only
records of no user (the agent's shared conversation, e.g. the knowledge layer's shared
session) must not become Bob's by Bob writing one message there through his session: his
``forget`` would then erase what the agent keeps for every user (found by the red team of
2026-12-06 i; the MCP server already refused such threads to a client of one user). A thread
where he already writes, a new one, and a conversation other users share stay open to him."""

from __future__ import annotations

import asyncio

import pytest

from integrations.extras import require_extra

require_extra("agents", "openai-agents")
require_extra("langchain_core", "langchain")

from langchain_core.messages import HumanMessage  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.langchain import OramemChatMessageHistory  # noqa: E402
from oramem.integrations.openai_agents import OramemSession  # noqa: E402

ITEM = {"role": "user", "content": "hello from bob"}


@pytest.fixture
def store():
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        # the agent's shared conversation: records of no user only
        s.add(["The hotel opens at 7", "Breakfast is served until 10"], "message", thread_ids="lobby",
              agent_ids="desk", roles="assistant")
        yield s


def _lobby(store) -> list[str]:
    return sorted(r.content for r in store.list("message", limit=None, thread_id="lobby"))


def _bobs_writes():
    return {
        "openai session": lambda s: asyncio.run(OramemSession("lobby", s, user_id="bob").add_items([ITEM])),
        "langchain history": lambda s: OramemChatMessageHistory(s, "lobby", user_id="bob").add_messages(
            [HumanMessage("hello from bob")]),
        "langchain history async": lambda s: asyncio.run(OramemChatMessageHistory(s, "lobby", user_id="bob")
                                                         .aadd_messages([HumanMessage("hello from bob")])),
    }


@pytest.mark.parametrize("how", list(_bobs_writes()))
def test_bobs_session_cannot_adopt_the_agents_shared_thread(store, how):
    with pytest.raises(ValueError, match="holds only records of no user"):
        _bobs_writes()[how](store)
    assert _lobby(store) == ["Breakfast is served until 10", "The hotel opens at 7"]  # nothing written
    store.forget(user_id="bob")
    assert _lobby(store) == ["Breakfast is served until 10", "The hotel opens at 7"]


@pytest.mark.parametrize("how", list(_bobs_writes()))
def test_threads_open_to_bob(store, how):
    """His own thread (with the agent's replies in it), a conversation Alice shares, and a new
    thread stay open to his session; a session of no user may join the agent's thread."""
    store.add(["bob's first words"], "message", thread_ids="t-bob", user_ids="bob", roles="user")
    store.add(["a reply to bob"], "message", thread_ids="t-bob", agent_ids="desk", roles="assistant")
    store.add(["alice speaking"], "message", thread_ids="t-group", user_ids="alice", roles="user")
    store.add(["a reply to the group"], "message", thread_ids="t-group", agent_ids="desk", roles="assistant")
    for thread in ("t-bob", "t-group", "t-new"):
        writes = {
            "openai session": lambda: asyncio.run(OramemSession(thread, store, user_id="bob").add_items([ITEM])),
            "langchain history": lambda: OramemChatMessageHistory(store, thread, user_id="bob").add_messages(
                [HumanMessage("hello from bob")]),
            "langchain history async": lambda: asyncio.run(OramemChatMessageHistory(store, thread, user_id="bob")
                                                           .aadd_messages([HumanMessage("hello from bob")])),
        }
        writes[how]()
        assert [r.content for r in store.list("message", limit=1, thread_id=thread, user_id="bob")] == ["hello from bob"]
    asyncio.run(OramemSession("lobby", store, agent_id="desk").add_items([{"role": "assistant", "content": "hi"}]))
    assert "hi" in _lobby(store)


def test_alices_expired_records_do_not_make_the_shared_thread_a_group(store):
    """Only live records count (SC-5.4): Alice's expired message in the agent's thread does
    not open it to Bob (her record would not keep the thread shared at his erasure)."""
    store.add(["alice long ago"], "message", thread_ids="lobby", user_ids="alice", roles="user",
              timestamps="2020-01-01T00:00:00", ttl_days=1, ttl_anchor="timestamp")
    with pytest.raises(ValueError, match="holds only records of no user"):
        asyncio.run(OramemSession("lobby", store, user_id="bob").add_items([ITEM]))


def test_a_langgraph_store_mapping_threads_from_namespaces_never_adopts_the_agents_thread(store):
    """The same rule for ``OramemStore`` items whose thread comes from the namespace: Bob's item
    may not be his first record in the agent's shared thread; his own thread stays open."""
    require_extra("langgraph.store.base", "langgraph")
    from oramem.integrations.langgraph import OramemStore

    items = OramemStore(store, scope_from_namespace={"user_id": 1, "thread_id": 2})
    with pytest.raises(ValueError, match="holds only records of no user"):
        items.put(("memories", "bob", "lobby"), "k", {"text": "bob's note"})
    assert _lobby(store) == ["Breakfast is served until 10", "The hotel opens at 7"]
    items.put(("memories", "bob", "t-bob"), "k", {"text": "bob's note"})
    assert items.get(("memories", "bob", "t-bob"), "k").value == {"text": "bob's note"}


def test_a_langchain_vector_store_bound_to_a_thread_never_adopts_the_agents_thread(store):
    """The same rule for ``OramemVectorStore(..., thread_id=...)`` documents of a user."""
    from oramem.integrations.langchain import OramemVectorStore

    with pytest.raises(ValueError, match="holds only records of no user"):
        OramemVectorStore(store, user_id="bob", thread_id="lobby").add_texts(["bob's note"])
    assert _lobby(store) == ["Breakfast is served until 10", "The hotel opens at 7"]
    assert OramemVectorStore(store, user_id="bob", thread_id="t-bob").add_texts(["bob's note"])


def test_a_refused_add_texts_changes_nothing(store):
    """``add_texts`` is one transaction: Alice's call that updates her "x" and then meets an
    id of Bob's is refused whole (before, her "x" stayed updated)."""
    from oramem.integrations.langchain import OramemVectorStore

    alice = OramemVectorStore(store, user_id="alice")
    alice.add_texts(["x first"], ids=["x"])
    OramemVectorStore(store, user_id="bob").add_texts(["bob's y"], ids=["y"])
    with pytest.raises(ValueError, match="another scope"):
        alice.add_texts(["x second", "mine now"], ids=["x", "y"])
    assert [d.page_content for d in alice.get_by_ids(["x"])] == ["x first"]
    with pytest.raises(ValueError, match="another scope"):
        asyncio.run(alice.aadd_texts(["x second", "mine now"], ids=["x", "y"]))
    assert [d.page_content for d in alice.get_by_ids(["x"])] == ["x first"]


@pytest.mark.parametrize("colour", ["sync", "async"])
def test_a_langgraph_batch_with_a_refused_put_writes_nothing(store, colour):
    """A batch with a put is one transaction (the thread check and the writes see one state):
    Bob's batch whose second put would adopt the agent's thread is refused whole, so his first
    put in his own thread is not left behind either (before, it stayed written)."""
    require_extra("langgraph.store.base", "langgraph")
    from langgraph.store.base import PutOp

    from oramem.integrations.langgraph import OramemStore

    items = OramemStore(store, scope_from_namespace={"user_id": 1, "thread_id": 2})
    ops = [PutOp(("memories", "bob", "t-bob"), "k1", {"text": "bob's note"}),
           PutOp(("memories", "bob", "lobby"), "k2", {"text": "bob's other note"})]
    with pytest.raises(ValueError, match="holds only records of no user"):
        if colour == "sync":
            items.batch(ops)
        else:
            asyncio.run(items.abatch(ops))
    assert items.get(("memories", "bob", "t-bob"), "k1") is None
    assert store.list("memory", limit=None, user_id="bob") == []
    assert _lobby(store) == ["Breakfast is served until 10", "The hotel opens at 7"]


def _adapters_writing_into(thread: str, agent: str = "desk"):
    """Bob's write into ``thread`` through each adapter whose thread check passes the agent."""
    from oramem.integrations.langchain import OramemVectorStore
    from oramem.integrations.langgraph import OramemStore

    return {
        "openai session": lambda s: asyncio.run(OramemSession(thread, s, user_id="bob", agent_id=agent)
                                                .add_items([ITEM])),
        "langchain history": lambda s: OramemChatMessageHistory(s, thread, user_id="bob", agent_id=agent)
        .add_messages([HumanMessage("hello from bob")]),
        "langchain vector store": lambda s: OramemVectorStore(s, user_id="bob", agent_id=agent, thread_id=thread)
        .add_texts(["bob's note"]),
        "langgraph store": lambda s: OramemStore(s, agent_id=agent, scope_from_namespace={"user_id": 1, "thread_id": 2})
        .put(("memories", "bob", thread), "k", {"text": "bob's note"}),
    }


@pytest.mark.parametrize("how", ["openai session", "langchain history", "langchain vector store", "langgraph store"])
def test_no_adapter_lets_bob_open_the_agents_shared_knowledge_session_first(how):
    """KC-4.21 / SC-13.3 through the adapters: the knowledge layer's shared session
    (``default_session_id(agent, None)``) is new until the agent's first shared write, so the
    shared-thread rule let Bob's first write open it; the agent's shared writes then went into
    his thread and his ``forget`` took them. A ``kg-default-`` thread that is not his own
    default session on the adapter's agent is refused, new or not; his own stays open."""
    require_extra("langgraph.store.base", "langgraph")
    from oramem.threads import default_session_id

    shared = default_session_id("desk", None)
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        refused = None
        try:
            _adapters_writing_into(shared)[how](s)
        except ValueError as exc:
            refused = str(exc)
        # the agent's shared knowledge event, as the knowledge layer writes it, then Bob's erasure
        s.add(["The hotel opens at 7"], "message", thread_ids=shared, agent_ids="desk", roles="user",
              metadata={"kg_event": True})
        s.forget(user_id="bob")
        assert [r.content for r in s.list("message", limit=None, thread_id=shared)] == ["The hotel opens at 7"]
        assert refused is not None and "default session of another" in refused
        _adapters_writing_into(default_session_id("desk", "bob"))[how](s)  # his own default session
