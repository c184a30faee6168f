"""An MCP server without some of its tools (round-3 F-20, still open in trial 31: the
``forget`` tool, which erases the server's user irreversibly, could not be left out of a
server whose client any prompt can steer)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from integrations.extras import require_extra

require_extra("mcp", "mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.mcp import TOOLS, build_server  # noqa: E402


@pytest.fixture
def store():
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        yield s


async def _names(client) -> list[str]:
    listed = await client.list_tools()
    return sorted(t.name for t in getattr(listed, "tools", listed))


async def test_a_disabled_tool_is_not_listed_nor_callable(store):
    server = build_server(store, user_id="alice", disabled_tools=["forget"])
    async with Client(server) as client:
        assert await _names(client) == sorted(set(TOOLS) - {"forget"})
        added = await client.call_tool("add_memory", {"text": "Alice prefers green tea"})
        assert not added.is_error
        result = await client.call_tool("forget", {})
        assert result.is_error
    assert [r.content for r in store.list("memory", user_id="alice")] == ["Alice prefers green tea"]


async def test_all_tools_by_default(store):
    async with Client(build_server(store, user_id="alice")) as client:
        assert await _names(client) == sorted(TOOLS)


def test_unknown_or_all_tools_are_refused(store):
    with pytest.raises(ValueError, match=r"no tool 'forgett' to disable; this server's tools: add_memory"):
        build_server(store, user_id="alice", disabled_tools=["forgett"])
    with pytest.raises(ValueError, match="leave at least one"):
        build_server(store, user_id="alice", disabled_tools=list(TOOLS))
    with pytest.raises(TypeError, match="list of tool names"):
        build_server(store, user_id="alice", disabled_tools="forget")


def _cli(db, *args):
    return [sys.executable, "-m", "oramem.cli", "--db", str(db), "--store-strategy", "keyword", "mcp", *args]


async def test_cli_disable_tool_over_stdio(tmp_path):
    command = _cli(tmp_path / "m.db", "--user", "alice", "--disable-tool", "forget", "--disable-tool", "delete_memory")
    async with Client(StdioServerParameters(command=command[0], args=command[1:])) as client:
        assert await _names(client) == sorted(set(TOOLS) - {"forget", "delete_memory"})
    refused = subprocess.run(_cli(tmp_path / "m.db", "--disable-tool", "nope"), capture_output=True, text=True,
                             stdin=subprocess.DEVNULL)
    assert refused.returncode == 2 and "--disable-tool nope: no such tool" in refused.stderr


@pytest.mark.parametrize("given", [None, 5, b"forget"])
def test_disabled_tools_not_a_list_is_a_clear_error(store, given):
    """red27: disabled_tools=None (or a number) failed with Python's "'NoneType' object is not
    iterable", which names neither the argument nor what to pass."""
    with pytest.raises(TypeError, match=r"disabled_tools must be a list of tool names, e.g. \['forget'\]"):
        build_server(store, user_id="alice", disabled_tools=given)
