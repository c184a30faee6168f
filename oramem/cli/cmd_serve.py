"""The ``mcp`` command: serve the store to MCP clients."""

from __future__ import annotations

from typing import Optional

import click


from .app import cli
from .group import CLIError
from .state import State, pass_state


@cli.command(short_help="Serve the store to MCP clients (stdio or streamable HTTP).")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True, help="stdio for a client that launches the server; http for streamable HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP address to listen on (loopback unless you choose otherwise).")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="HTTP port.")
@click.option("--user", "user_id", help="Fix the user scope of every call (clients never see other users).")
@click.option("--agent", "agent_id", help="Fix the agent scope of every call.")
@click.option("--allow-scope-per-call", is_flag=True, help="Let calls pass their own user_id/agent_id (trusted clients only).")
@click.option("--knowledge", is_flag=True, help="Also serve retrieve_knowledge over this database's knowledge layer (needs --agent, or --allow-scope-per-call; no LLM is called).")
@pass_state
def mcp(state: State, transport: str, host: str, port: int, user_id: Optional[str], agent_id: Optional[str], allow_scope_per_call: bool, knowledge: bool) -> None:
    """Run an MCP server over the store (needs: pip install 'oramem[mcp]').

    Tools: add_memory, search_memories, get_memory, update_memory, delete_memory,
    forget, and with --knowledge retrieve_knowledge. Scope is fixed by
    --user/--agent (see the README's MCP recipe).
    """
    if transport == "stdio" and (host != "127.0.0.1" or port != 8765):
        raise click.UsageError("--host and --port apply to --transport http only")
    if knowledge and agent_id is None and not allow_scope_per_call:
        raise click.UsageError("--knowledge needs --agent ID (the knowledge layer is per agent), or --allow-scope-per-call")
    try:
        from ..integrations.mcp import build_server
    except ImportError as exc:
        raise CLIError(str(exc)) from exc
    store = state.open(create=True)
    km = None
    if knowledge:
        from ..knowledge import KnowledgeMemory

        km = KnowledgeMemory(store, None)  # retrieval only: no LLM is configured or called
    try:
        server = build_server(store, user_id=user_id, agent_id=agent_id, allow_scope_per_call=allow_scope_per_call, knowledge=km)
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        if km is not None:
            km.close()
