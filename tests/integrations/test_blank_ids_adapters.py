"""left34 item 1 at the adapters' edge: a white-space-only user/agent/thread/session id is
refused when the adapter (or the MCP server) is built, as "" already was, not at the first
tool call (the store refuses it too: tests/contract/test_blank_ids.py)."""

from __future__ import annotations


import pytest
from integrations.extras import adapter_or_skip

from oramem import SQLiteMemoryStore

BLANKS = [" ", "\t\n", "\u00a0"]


@pytest.fixture
def store():
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        yield s


@pytest.mark.parametrize("blank", BLANKS)
def test_mcp_build_server_refuses_a_blank_scope(store, blank):
    mcp = adapter_or_skip("oramem.integrations.mcp")
    for kwargs in ({"user_id": blank}, {"agent_id": blank}):
        with pytest.raises(ValueError, match="not only white space"):
            mcp.build_server(store, **kwargs)


@pytest.mark.parametrize("blank", BLANKS)
def test_langgraph_store_refuses_a_blank_fixed_scope(store, blank):
    langgraph = adapter_or_skip("oramem.integrations.langgraph")
    for name in ("user_id", "agent_id", "thread_id"):
        with pytest.raises(ValueError, match="not only white space"):
            langgraph.OramemStore(store, **{name: blank})


@pytest.mark.parametrize("blank", BLANKS)
def test_langchain_history_refuses_a_blank_thread_or_scope(store, blank):
    langchain = adapter_or_skip("oramem.integrations.langchain")
    with pytest.raises(ValueError, match="not only white space"):
        langchain.OramemChatMessageHistory(store, blank)
    for name in ("user_id", "agent_id"):
        with pytest.raises(ValueError, match="not only white space"):
            langchain.OramemChatMessageHistory(store, "t1", **{name: blank})


@pytest.mark.parametrize("blank", BLANKS)
def test_openai_agents_session_refuses_a_blank_session_or_scope(store, blank):
    agents = adapter_or_skip("oramem.integrations.openai_agents")
    with pytest.raises(ValueError, match="not only white space"):
        agents.OramemSession(blank, store)
    for name in ("user_id", "agent_id"):
        with pytest.raises(ValueError, match="not only white space"):
            agents.OramemSession("s1", store, **{name: blank})
