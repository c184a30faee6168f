"""MCP server: oramem memories as tools for any MCP client, on the official ``mcp`` SDK (2.x).

Install with ``pip install 'oramem[mcp]'``; run with ``oramem mcp`` (stdio) or ``oramem mcp
--transport http`` (streamable HTTP, ``127.0.0.1:8765`` unless ``--host``/``--port`` say
otherwise). In Python: ``build_server(store, ...)`` returns an ``MCPServer``.

Tools: ``add_memory``, ``search_memories``, ``get_memory``, ``update_memory``,
``delete_memory``, ``forget`` and, when a ``KnowledgeMemory`` is given
(``oramem mcp --knowledge``), ``retrieve_knowledge``. They call the store's async API (both engines).

Scope (who the client is) is fixed by the server's configuration: ``user_id`` /
``agent_id`` given to ``build_server`` (``--user`` / ``--agent``). Every record the client
writes carries that scope; every read is limited to it, with a missing value meaning
"records without one" (so a server without ``--user`` sees only records that have no user).
``get``/``update``/``delete`` of a record outside the scope answer "not found". Only with
``allow_scope_per_call=True`` (``--allow-scope-per-call``) may a call pass its own
``user_id`` / ``agent_id`` (use it for a trusted orchestrator serving several users); without
it a call that names a scope other than the configured one is refused. ``thread_id`` is
always per call (a conversation inside the scope). ``forget`` erases the scope's user
(or agent) everywhere (``forget``, SC-8.6): every record scoped to it and, with a
``KnowledgeMemory``, what the knowledge layer derived from it; the names a user has in the
knowledge layer default to her user id and can be chosen per call only with
``allow_scope_per_call``.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

from ..errors import StoreError
from . import require

require("mcp.server.mcpserver", "mcp")

from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402

__all__ = ["build_server"]

_MEMORY_TYPES = ("memory", "fact", "preference", "guideline", "message")


def _record_dict(record: Any, distance: Optional[float] = None) -> dict[str, Any]:
    out = {
        "id": record.id,
        "record_type": record.record_type,
        "content": record.content,
        "metadata": record.metadata,
        "thread_id": record.thread_id,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "created_at": record.created_at,
        "expires_at": record.expires_at,
    }
    if distance is not None:
        out["distance"] = distance
    return out


def _client_errors(fn):
    """Bad arguments reach the client as a tool error with the message (what to do), not a crash."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            raise ToolError(str(exc)) from exc

    return wrapper


def build_server(
    store: Any,
    *,
    user_id: Optional[str] = None,
    agent_id: Optional[str] = None,
    allow_scope_per_call: bool = False,
    knowledge: Any = None,
    name: str = "oramem",
) -> MCPServer:
    """An ``MCPServer`` exposing ``store`` within the configured scope (see the module doc)."""
    for label, value in (("user_id", user_id), ("agent_id", agent_id)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"{label} must be a non-empty str or None, got {value!r}")

    def scope(call_user: Optional[str], call_agent: Optional[str]) -> dict[str, Optional[str]]:
        chosen = {"user_id": user_id, "agent_id": agent_id}
        for label, value in (("user_id", call_user), ("agent_id", call_agent)):
            if value is None:
                continue
            if allow_scope_per_call:
                chosen[label] = value
            elif value != chosen[label]:
                raise ValueError(
                    f"this server is configured for {label}={chosen[label]!r}; a call cannot choose another "
                    "scope (start the server with --allow-scope-per-call to let trusted clients do so)"
                )
        return chosen

    def record_type_of(record_type: str) -> str:
        if record_type not in _MEMORY_TYPES:
            raise ValueError(f"record_type must be one of {list(_MEMORY_TYPES)}, got {record_type!r}")
        return record_type

    async def visible(record_type: str, record_id: str, chosen: dict) -> Any:
        record = await store.get_async(record_type_of(record_type), record_id)
        if record is None or record.user_id != chosen["user_id"] or record.agent_id != chosen["agent_id"]:
            return None
        return record

    server = MCPServer(
        name,
        instructions=(
            "Long-term memory. add_memory stores a fact about the user or task; search_memories finds "
            "relevant memories before answering; update/delete keep them correct; forget erases "
            "everything about the configured user."
        ),
    )

    @server.tool()
    @_client_errors
    async def add_memory(
        text: str,
        record_type: str = "memory",
        metadata: Optional[dict[str, Any]] = None,
        thread_id: Optional[str] = None,
        ttl_days: Optional[int] = None,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
    ) -> dict[str, Any]:
        """Store one memory (types: memory, fact, preference, guideline, message); returns its id."""
        chosen = scope(user_id, agent_id)
        kwargs: dict[str, Any] = {}
        if ttl_days is not None:
            kwargs["ttl_days"] = ttl_days
        ids = await store.add_async(
            [text],
            record_type_of(record_type),
            metadata=metadata,
            thread_ids=thread_id,
            user_ids=chosen["user_id"],
            agent_ids=chosen["agent_id"],
            **kwargs,
        )
        return {"id": ids[0], "record_type": record_type}

    @server.tool()
    @_client_errors
    async def search_memories(
        query: str,
        k: int = 5,
        record_types: Optional[list[str]] = None,
        metadata_filter: Optional[dict[str, Any]] = None,
        thread_id: Optional[str] = None,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
    ) -> list[dict[str, Any]]:
        """Find the k memories closest to query (the store's strategy), optionally by type, thread and metadata filter."""
        chosen = scope(user_id, agent_id)
        types = [record_type_of(t) for t in (record_types or ["memory", "fact", "preference", "guideline"])]
        hits = await store.search_async(
            query,
            k=k,
            record_types=types,
            metadata_filter=metadata_filter,
            thread_id=thread_id,
            user_id=chosen["user_id"],
            agent_id=chosen["agent_id"],
            exact_user_match=True,
            exact_agent_match=True,
        )
        return [_record_dict(record, distance) for record, distance in hits]

    @server.tool()
    @_client_errors
    async def get_memory(
        record_id: str, record_type: str = "memory", user_id: Optional[str] = None, agent_id: Optional[str] = None
    ) -> dict[str, Any]:
        """One memory by id ({"found": false} when it does not exist in this scope)."""
        record = await visible(record_type, record_id, scope(user_id, agent_id))
        return {"found": False} if record is None else {"found": True, **_record_dict(record)}

    @server.tool()
    @_client_errors
    async def update_memory(
        record_id: str,
        text: Optional[str] = None,
        metadata: Optional[dict[str, Any]] = None,
        record_type: str = "memory",
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
    ) -> dict[str, Any]:
        """Replace a memory's text and/or metadata (the whole mapping)."""
        if text is None and metadata is None:
            raise ValueError("give text and/or metadata to update")
        if await visible(record_type, record_id, scope(user_id, agent_id)) is None:
            return {"updated": 0}
        changes: dict[str, Any] = {}
        if text is not None:
            changes["text"] = text
        if metadata is not None:
            changes["metadata"] = metadata
        return {"updated": await store.update_async(record_type, record_id, **changes)}

    @server.tool()
    @_client_errors
    async def delete_memory(
        record_id: str, record_type: str = "memory", user_id: Optional[str] = None, agent_id: Optional[str] = None
    ) -> dict[str, Any]:
        """Delete one memory by id."""
        if await visible(record_type, record_id, scope(user_id, agent_id)) is None:
            return {"deleted": 0}
        return {"deleted": await store.delete_async(record_type, record_id)}

    @server.tool()
    @_client_errors
    async def forget(
        actor: str = "user", names: Optional[list[str]] = None, user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
    ) -> dict[str, Any]:
        """Erase the scope's user (actor="user") or agent (actor="agent") everywhere: its records and
        what the knowledge layer derived from them (SC-8.6). Irreversible; returns rows erased per table."""
        if actor not in ("user", "agent"):
            raise ValueError('actor must be "user" or "agent"')
        chosen = scope(user_id, agent_id)
        actor_id = chosen[f"{actor}_id"]
        if actor_id is None:
            raise ValueError(f"no {actor} in this server's scope (start it with --{actor} ID)")
        if names is not None and not allow_scope_per_call:
            # names reach other people's knowledge (an entity "Bob"): only a trusted caller picks them
            raise ValueError("names can be given only on a server started with --allow-scope-per-call")
        target = knowledge if knowledge is not None else store
        kwargs: dict[str, Any] = {f"{actor}_id": actor_id}
        if actor == "user" and names is not None:
            kwargs["names"] = names
        try:
            counts = await target.forget_async(**kwargs)
        except StoreError as exc:
            raise ToolError(str(exc)) from exc
        return {"forgotten": actor_id, "actor": actor, "erased": {t: n for t, n in counts.items() if n}}

    if knowledge is not None:

        @server.tool()
        @_client_errors
        async def retrieve_knowledge(
            query: str, session_id: Optional[str] = None, agent_id: Optional[str] = None,
            user_id: Optional[str] = None,
        ) -> dict[str, Any]:
            """Facts from the knowledge layer relevant to query, with a ready-to-use context text:
            the scope's user's knowledge plus the agent's shared knowledge (KC-3.8)."""
            chosen = scope(user_id, agent_id)
            if chosen["agent_id"] is None:
                raise ValueError("the knowledge layer is per agent: start the server with --agent ID")
            result = await knowledge.retrieve_async(chosen["agent_id"], query, session_id=session_id,
                                                    user_id=chosen["user_id"])
            return {
                "context": result.context,
                "facts": [{"fact_text": f.fact_text, "score": getattr(f, "score", None)} for f in result.facts],
            }

    return server
