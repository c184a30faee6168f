"""The ``mcp`` command: serve the store to MCP clients."""

from __future__ import annotations

import os
import secrets
import sys
from typing import Optional

import click


from .app import cli
from .group import CLIError
from .state import State, pass_state

TOKEN_ENV = "ORAMEM_MCP_TOKEN"


@cli.command(short_help="Serve the store to MCP clients (stdio or streamable HTTP).")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True, help="stdio for a client that launches the server; http for streamable HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP address to listen on (loopback unless you choose otherwise; another address needs a token you give).")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="HTTP port.")
@click.option("--token", help=f"HTTP bearer token clients must send (Authorization: Bearer TOKEN). Prefer ${TOKEN_ENV}: a command line is visible to other local users. Without either, a loopback server generates one and prints it once on stderr.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME[:PORT]", help="HTTP: also accept requests whose Host header is NAME (repeatable; for a server reached by name, e.g. behind a proxy).")
@click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN", help="HTTP: also accept browser requests from ORIGIN, e.g. https://app.example.com (repeatable).")
@click.option("--user", "user_id", help="Fix the user of every call: clients read and write only this user's records, and forget erases only this user.")
@click.option("--agent", "agent_id", help="Fix the agent scope of every call.")
@click.option("--allow-scope-per-call", is_flag=True, help="Let calls pass their own user_id/agent_id (trusted clients only).")
@click.option("--knowledge", is_flag=True, help="Also serve retrieve_knowledge over this database's knowledge layer (needs --agent, or --allow-scope-per-call; no LLM is called).")
@click.option("--disable-tool", "disabled_tools", multiple=True, metavar="NAME", help="Leave tool NAME out of the server (repeatable), e.g. --disable-tool forget for a client that untrusted text can steer.")
@pass_state
def mcp(state: State, transport: str, host: str, port: int, token: Optional[str], allow_hosts: tuple[str, ...], allow_origins: tuple[str, ...],
        user_id: Optional[str], agent_id: Optional[str], allow_scope_per_call: bool, knowledge: bool,
        disabled_tools: tuple[str, ...]) -> None:
    """Run an MCP server over the store (needs: pip install 'oramem[mcp]').

    Tools: add_memory, search_memories, get_memory, update_memory, delete_memory,
    forget, and with --knowledge retrieve_knowledge (--disable-tool NAME leaves
    one out). Scope is fixed by
    --user/--agent: a --user server acts only as that user; a server without
    --user reads and writes only records that have no user and erases nothing
    (see the README's "Several users").

    HTTP always requires a bearer token: --token or $ORAMEM_MCP_TOKEN; on a
    loopback --host without one, a random token is generated and printed once on
    stderr. A non-loopback --host needs a token you give, and --allow-host for
    0.0.0.0 / ::. Requests without the token get 401; a Host or Origin header
    that is not allowed gets 421 / 403.
    """
    http_only = {"--host": host != "127.0.0.1", "--port": port != 8765, "--token": token is not None,
                 "--allow-host": bool(allow_hosts), "--allow-origin": bool(allow_origins)}
    if transport == "stdio" and any(http_only.values()):
        given = ", ".join(flag for flag, used in http_only.items() if used)
        raise click.UsageError(f"{given} apply to --transport http only")
    if knowledge and agent_id is None and not allow_scope_per_call:
        raise click.UsageError("--knowledge needs --agent ID (the knowledge layer is per agent), or --allow-scope-per-call")
    try:
        from ..integrations.mcp import TOOLS, build_server, check_token, http_security
    except ImportError as exc:
        raise CLIError(str(exc)) from exc
    offered = TOOLS + (("retrieve_knowledge",) if knowledge else ())
    unknown = sorted(set(disabled_tools) - set(offered))
    if unknown:
        raise click.UsageError(f"--disable-tool {', '.join(unknown)}: no such tool; the tools: {', '.join(offered)}")
    if set(disabled_tools) >= set(offered):
        raise click.UsageError("--disable-tool would disable every tool: leave at least one")
    from .._http import is_loopback

    security = None
    generated = False
    if transport == "http":
        if token is None and TOKEN_ENV in os.environ:
            token = os.environ[TOKEN_ENV]
            if not token:
                raise click.UsageError(f"${TOKEN_ENV} is set but empty: set it to the token, or unset it")
        if token is None:
            if not is_loopback(host.strip("[]")):
                raise click.UsageError(
                    f"--host {host} is not loopback: other machines could call forget and every other tool, so give "
                    f"the bearer token clients must send with ${TOKEN_ENV} (or --token)"
                )
            token, generated = secrets.token_urlsafe(32), True
        try:
            check_token(token)
            security = http_security(host, port, allow_hosts=allow_hosts, allow_origins=allow_origins)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from exc
    store = state.open(create=True)
    km = None
    if knowledge:
        from ..knowledge import KnowledgeMemory

        km = KnowledgeMemory(store, None)  # retrieval only: no LLM is configured or called
    try:
        server = build_server(store, user_id=user_id, agent_id=agent_id, allow_scope_per_call=allow_scope_per_call,
                              knowledge=km, token=token if transport == "http" else None,
                              disabled_tools=disabled_tools)
        if transport == "stdio":
            server.run("stdio")
        else:
            if generated:
                # printed once, on stderr (stdout belongs to nothing here, but keep it clean): the only copy
                print(f"oramem mcp: no token given; clients must send  Authorization: Bearer {token}", file=sys.stderr, flush=True)
            server.run("streamable-http", host=host, port=port, transport_security=security)
    finally:
        if km is not None:
            km.close()
