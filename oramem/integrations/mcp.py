"""MCP server: oramem memories as tools for any MCP client, on the official ``mcp`` SDK (2.x).

Install with ``pip install 'oramem[mcp]'``; run with ``oramem mcp`` (stdio) or ``oramem mcp
--transport http`` (streamable HTTP, ``127.0.0.1:8765`` unless ``--host``/``--port`` say
otherwise). In Python: ``build_server(store, ...)`` returns an ``MCPServer``.

Tools: ``add_memory``, ``search_memories``, ``get_memory``, ``update_memory``,
``delete_memory``, ``forget`` and, when a ``KnowledgeMemory`` is given
(``oramem mcp --knowledge``), ``retrieve_knowledge``. They call the store's async API (both engines).
A call with an argument the tool does not define is refused (nothing is silently ignored).

**Who the client is** is fixed by the server's configuration, never by the client: ``user_id``
/ ``agent_id`` given to ``build_server`` (``--user`` / ``--agent``).

- Every record the client writes carries that scope; every read (``search_memories``,
  ``get_memory``) is limited to records of exactly that scope, with a missing value meaning
  "records without one"; ``get``/``update``/``delete`` of a record outside it answer "not found".
- ``add_memory`` with a ``thread_id`` writes into that thread only if no other user has records
  there (a thread id is a conversation name, not a grant: a client cannot plant text in
  another user's conversation). A new thread, or one holding the client's own records (and
  perhaps records without a user, such as an assistant's replies), is open to it, except the
  knowledge layer's default session of another agent or user (``kg-default-…``, the agent's
  shared session among them: :func:`oramem.threads.default_session_refusal`). A thread that
  holds only records without a user is not open to a client of one user: erasing her would
  take such a thread whole (SC-13.3), shared records included, unless she opened it (her
  erasure takes it whole anyway). Both refusals are one message,
  which does not say whose records closed the thread. A server without a user may
  write only where no user has records, and not into a thread a user opened (SC-13.2: her
  erasure would take it whole, the server's records with it; iso42). On SQLite the check and the write are one ``BEGIN
  IMMEDIATE`` transaction; on Oracle another session can still write between them (read
  committed). ``update_memory`` / ``delete_memory`` check the record's scope and write in one
  transaction the same way: on SQLite no other writer can replace the record under its id
  (another user's record under a chosen id, SC-4.3) between the check and the write.
- ``forget`` erases the configured **user** and nothing else: her records on every agent and,
  with a ``KnowledgeMemory``, what the knowledge layer derived from them (SC-8.6). It never
  erases an agent (run ``oramem forget --agent ID`` for that) and takes no argument that widens
  it. A server without a user (no ``--user``) has no ``forget``-able user: ``forget`` is refused.
- A server **without** ``--user`` acts as "no user": it reads and writes only records that have
  no user (the agent's shared records, with ``--agent``), cannot write into a thread where any
  user has records, and cannot erase anything.
- Only with ``allow_scope_per_call=True`` (``--allow-scope-per-call``) may a call pass its own
  ``user_id`` / ``agent_id`` (a trusted orchestrator serving several users: the rules above
  then apply to the scope the call names); without it a call naming another scope is refused,
  and the tools' schemas (``tools/list``) leave ``user_id`` / ``agent_id`` out.

Over HTTP the server requires a bearer token (``build_server(..., token=...)``; ``oramem mcp``
always sets one, see the README's "Several users"), checked in constant time through the SDK's
bearer-auth middleware, and keeps the SDK's DNS-rebinding protection (Host and Origin
allow-lists, :func:`http_security`). stdio needs neither: the client launched the
process and owns its pipes.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import ipaddress
import re
import urllib.parse
from typing import Any, Iterable, Optional

from .._http import is_loopback
from ..errors import StoreError
from ..threads import default_session_refusal
from . import check_scope_ids, check_store, require

require("mcp.server.mcpserver", "mcp")

from mcp.server.auth.provider import AccessToken  # noqa: E402
from mcp.server.auth.settings import AuthSettings  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from mcp.server.transport_security import TransportSecuritySettings  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402
from pydantic import AnyHttpUrl  # noqa: E402  (installed with mcp)

__all__ = ["build_server", "http_security", "check_token", "MIN_TOKEN_LENGTH"]

_MEMORY_TYPES = ("memory", "fact", "preference", "guideline", "message")
# the record types that carry a thread_id (SC-2.1): what "has records in a thread" looks at
_THREAD_TYPES = ("message", "memory", "fact", "preference", "guideline")

#: Shortest bearer token accepted (``secrets.token_urlsafe(32)``, what ``oramem mcp`` generates, has 43).
MIN_TOKEN_LENGTH = 16
# RFC 6750 b64token characters: what fits in "Authorization: Bearer <token>" unchanged
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def check_token(token: Any) -> str:
    """``token`` if it can be a bearer token (see :data:`MIN_TOKEN_LENGTH`), else ``ValueError``."""
    if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH or not _TOKEN_CHARS.fullmatch(token):
        raise ValueError(
            f"the MCP bearer token must be at least {MIN_TOKEN_LENGTH} characters of A-Z a-z 0-9 - . _ ~ + / "
            "(generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


class _StaticTokenVerifier:
    """The SDK's ``TokenVerifier`` for one shared secret: constant-time comparison of digests
    (equal length whatever the candidate, so the comparison time says nothing about the token)."""

    def __init__(self, token: str) -> None:
        self._digest = hashlib.sha256(token.encode("utf-8")).digest()

    async def verify_token(self, token: str) -> Optional[AccessToken]:
        candidate = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        if hmac.compare_digest(candidate, self._digest):
            return AccessToken(token=token, client_id="oramem-mcp-client", scopes=[])
        return None


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return host in ("", "*")


def _host_header(host: str, port: int) -> str:
    try:
        if ipaddress.ip_address(host.strip("[]")).version == 6:
            return f"[{host.strip('[]')}]:{port}"
    except ValueError:
        pass
    return f"{host}:{port}"


def http_security(
    host: str, port: int, *, allow_hosts: Iterable[str] = (), allow_origins: Iterable[str] = ()
) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection for a server listening on ``host:port``; always on.

    On a loopback ``host`` the ``Host`` header must name loopback (``127.0.0.1``, ``localhost``,
    ``[::1]`` or ``host`` itself, any port) and a browser ``Origin`` must be such an ``http://``
    origin, as the SDK does by default. On any other address only the address itself
    (``HOST:PORT``, not for ``0.0.0.0`` / ``::``) and the names given in ``allow_hosts`` are
    accepted, and only the origins in ``allow_origins``. A listed host without a port is accepted on ``port``; ``NAME:*``
    accepts any port. A request without an ``Origin`` (not a browser) passes the origin check.
    Raises ``ValueError`` for a wildcard address with no ``allow_hosts`` (nothing could be
    served) and for a malformed entry."""
    hosts: list[str] = []
    for entry in allow_hosts:
        if not isinstance(entry, str) or not entry or any(c in entry for c in "/@ ,") or entry.startswith(":"):
            raise ValueError(f"--allow-host takes a host name or address, optionally with :PORT or :*, got {entry!r}")
        has_port = "]:" in entry if entry.startswith("[") else entry.count(":") == 1
        hosts.append(entry if has_port else _host_header(entry, port))
    origins: list[str] = []
    for entry in allow_origins:
        parts = urllib.parse.urlsplit(entry) if isinstance(entry, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("",) \
                or parts.query or parts.fragment or "@" in parts.netloc:
            raise ValueError(f"--allow-origin takes an origin like https://app.example.com[:PORT], got {entry!r}")
        origins.append(entry)
    if is_loopback(host.strip("[]")):
        hosts += _LOOPBACK_HOSTS
        origins += _LOOPBACK_ORIGINS
        literal = _host_header(host, port).rsplit(":", 1)[0]  # e.g. 127.0.0.2, or a *.localhost name
        hosts.append(f"{literal}:*")
        origins.append(f"http://{literal}:*")
    elif _is_wildcard(host):
        if not hosts:
            raise ValueError(
                f"--host {host} listens on every interface: name the host names clients will use with "
                "--allow-host NAME[:PORT] (one per name); requests naming any other Host are refused (DNS rebinding)"
            )
    else:
        hosts.append(_host_header(host, port))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=list(dict.fromkeys(hosts)), allowed_origins=list(dict.fromkeys(origins))
    )


#: the tools every server offers (``retrieve_knowledge`` too when given a knowledge layer)
TOOLS = ("add_memory", "search_memories", "get_memory", "update_memory", "delete_memory", "forget")


def _instructions(disabled: set[str]) -> str:
    """The server's instructions to the client, naming only the tools it serves."""
    parts = [("add_memory", "add_memory stores a fact about the user or task"),
             ("search_memories", "search_memories finds relevant memories before answering"),
             ("get_memory", "get_memory reads one by id"),
             ("update_memory", "update_memory keeps them correct"),
             ("delete_memory", "delete_memory removes one"),
             ("forget", "forget erases everything about the configured user")]
    return "Long-term memory. " + "; ".join(text for tool, text in parts if tool not in disabled) + "."


class _RefuseUnknownArguments:
    """Server middleware: a ``tools/call`` naming an argument the tool does not define is a tool
    error listing the accepted ones (the SDK would drop it silently: ``forget(actor="agent")``
    must not quietly become ``forget()``)."""

    def __init__(self) -> None:
        self.server: Any = None
        self._accepted: dict[str, frozenset[str]] = {}

    async def _accepted_for(self, name: str) -> Optional[frozenset[str]]:
        if name not in self._accepted:
            # every argument the tool's function takes, those the schemas leave out too (the
            # scope arguments of a server without per-call scope: the tool refuses another
            # scope with a message saying how to allow it)
            for tool in await self.server.all_tools():
                self._accepted[tool.name] = frozenset((tool.input_schema or {}).get("properties", {}))
        return self._accepted.get(name)

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        params = ctx.params if isinstance(ctx.params, dict) else None
        if ctx.method == "tools/call" and params is not None and isinstance(params.get("arguments"), dict):
            accepted = await self._accepted_for(str(params.get("name")))
            unknown = sorted(set(params["arguments"]) - accepted) if accepted is not None else []
            if unknown:
                shown = sorted((accepted or frozenset()) - self.server.hidden_arguments)
                text = (
                    f"{params.get('name')} has no argument {', '.join(map(repr, unknown))}; it accepts: "
                    f"{', '.join(shown) or 'no arguments'}"
                )
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return await call_next(ctx)


#: the arguments that name a call's scope; a server without per-call scope leaves them out of
#: its tools' schemas (adp38, from trial33: an LLM client saw arguments it would always be
#: refused for) and still refuses another scope when a client sends them anyway
_SCOPE_ARGUMENTS = frozenset({"user_id", "agent_id"})


def _without_arguments(schema: Any, names: frozenset[str]) -> Any:
    """A copy of a tool's input schema without the properties ``names``."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return schema
    out = dict(schema, properties={k: v for k, v in schema["properties"].items() if k not in names})
    if isinstance(schema.get("required"), list):
        out["required"] = [k for k in schema["required"] if k not in names]
    return out


class _Server(MCPServer):
    """The SDK's server whose ``tools/list`` leaves ``hidden_arguments`` out of the tools'
    input schemas; :meth:`all_tools` lists them whole (what the tools' functions take)."""

    hidden_arguments: frozenset[str] = frozenset()

    async def all_tools(self) -> list[Any]:
        return await super().list_tools()

    async def list_tools(self) -> list[Any]:
        tools = await super().list_tools()
        if not self.hidden_arguments:
            return tools
        return [t.model_copy(update={"input_schema": _without_arguments(t.input_schema, self.hidden_arguments)})
                for t in tools]


def _closed_thread(thread_id: str) -> str:
    """The refusal of a write into a thread that is not open to the client (see the module
    doc): the same words for another user's conversation and for a thread of records of no
    user only, so a refused id says nothing about who wrote there."""
    return (
        f"thread {thread_id!r} is not open to this client, so nothing was written. Give a thread id of your own: a new "
        "one, or one of this client's conversations. A client never writes into a thread that holds another user's "
        "records, and a client of one user (a server started with --user) never into a thread that holds only "
        "records of no user, such as the agent's shared conversation"
    )


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


def _client_text(text: Any) -> None:
    """A memory's text from a client: some words. An empty or white-space text was stored as a
    memory no search can find (trial33; ``oramem add ""`` is refused the same way)."""
    if isinstance(text, str) and not text.strip():
        raise ValueError("text is empty or only white space: give the memory some words "
                         "(a blank memory can never be found by search_memories)")


def _client_metadata(metadata: Any) -> None:
    """A client's metadata may not name the record's source: the store's firewall maps the
    metadata ``"source"`` to a trust label (SC-15.4), so a client of one user claiming
    ``"system"`` would get that source's trust for what it writes into the agent's memory
    (red team round 2). Its records keep the default source (``"api"``)."""
    if isinstance(metadata, dict) and "source" in metadata:
        raise ValueError("metadata 'source' is not a client's to set: the store's firewall gives a record the trust "
                         "label of its source; remove the key (records written here have the default source, 'api')")


def _client_text_update(record: Any, keeps_metadata: bool) -> None:
    """A client may not rewrite the text of a record whose source someone else named: its
    metadata ``"source"`` (which a client cannot set) or its message role is the label the
    store's firewall gives the record's trust by (SC-15.4), and an update keeps it, so the
    client's text would be stored as the application's or the assistant's words with their
    trust (red29). New metadata (``keeps_metadata`` False) replaces the source, not the role."""
    source = (record.metadata or {}).get("source") if keeps_metadata else None
    label = f"source {source!r}" if isinstance(source, str) else None
    role = getattr(record, "role", None)
    if label is None and isinstance(role, str):
        label = f"role {role!r}"
    if label is not None:
        raise ValueError(f"this memory was written with {label}, which gives it its trust label; a client cannot "
                         "rewrite its text under that label: add a new memory instead"
                         + (", or give new metadata with the text" if label.startswith("source") else ""))


#: what of an erasure receipt's verification (SC-14.2) a client sees
_CLIENT_VERIFICATION = ("status", "tokens_checked", "verified_at")
#: the scan's label of a text index's token table (Oracle Text, ``DR$<index>$I``; SC-14.2)
_TOKEN_TABLE = "text-index:"


def _client_receipt(receipt: dict[str, Any]) -> dict[str, Any]:
    """The receipt as a client of one user gets it: the scan's verdict, without its per-token
    results. ``tokens_shared`` counts the user's erased words that a live row of anyone still
    holds, and ``residue`` lists where the others were found: a client that writes one word
    and calls ``forget`` would learn whether any other user's data (or deleted data) holds
    that word. The full receipt stays in the store's erasure log (``oramem audit``,
    ``erasure_log``) for the operator."""
    out = dict(receipt)
    verification = receipt.get("verification")
    if isinstance(verification, dict):
        shown = {k: verification[k] for k in _CLIENT_VERIFICATION if k in verification}
        shown["detail"] = "per-token results are in the store's erasure log, for the operator (oramem audit)"
        if any(str(place).startswith(_TOKEN_TABLE) for place in verification.get("scanned") or ()):
            # Oracle: a text index's token table (DR$<index>$I) keeps a deleted document's
            # words until the index is optimized in FULL mode, so each of the client's erased
            # words is still there, counted as residue when no live row holds it and as shared
            # when another user's row does: the verdict would be the bit tokens_shared was
            shown["status"] = "withheld"
            shown["detail"] = ("the verdict is in the store's erasure log, for the operator (oramem audit): this store's "
                               "text index keeps deleted words until it is optimized, so the verdict would tell whether "
                               "other users' data holds the erased words")
        out["verification"] = shown
    return out


def build_server(
    store: Any,
    *,
    user_id: Optional[str] = None,
    agent_id: Optional[str] = None,
    allow_scope_per_call: bool = False,
    knowledge: Any = None,
    name: str = "oramem",
    token: Optional[str] = None,
    disabled_tools: Iterable[str] = (),
) -> MCPServer:
    """An ``MCPServer`` exposing ``store`` within the configured scope (see the module doc).

    ``disabled_tools``: tool names left out of the server (``["forget"]``: a client that any
    prompt can steer never sees an erasing tool; ``oramem mcp --disable-tool NAME``). An
    unknown name, or every tool, is a ``ValueError`` before the server is built.

    ``token``: the bearer token every HTTP request must carry (``Authorization: Bearer
    <token>``; else 401). Without it the server has no HTTP authentication: serve it over
    stdio or in-process only (``oramem mcp --transport http`` always sets one)."""
    check_scope_ids(("user_id", user_id), ("agent_id", agent_id))
    check_store(store, "build_server")
    offered = TOOLS + (("retrieve_knowledge",) if knowledge is not None else ())
    if isinstance(disabled_tools, (str, bytes)) or not isinstance(disabled_tools, Iterable):
        raise TypeError(f"disabled_tools must be a list of tool names, e.g. ['forget'] (or () for none), "
                        f"got {type(disabled_tools).__name__}")
    disabled = set(disabled_tools)
    unknown = sorted(disabled - set(offered))
    if unknown:
        raise ValueError(f"no tool {', '.join(map(repr, unknown))} to disable; this server's tools: {', '.join(offered)}")
    if disabled >= set(offered):
        raise ValueError("every tool would be disabled: leave at least one")
    auth: dict[str, Any] = {}
    if token is not None:
        auth = {
            "token_verifier": _StaticTokenVerifier(check_token(token)),
            # the SDK's bearer middleware needs AuthSettings; no OAuth server or metadata route is
            # served (resource_server_url=None), so the issuer URL is never used or shown
            "auth": AuthSettings(issuer_url=AnyHttpUrl("http://127.0.0.1"), resource_server_url=None),
        }

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

    async def thread_refusal(thread_id: str, user: Optional[str], agent: Optional[str]) -> Optional[str]:
        """Why ``user`` (on ``agent``) may not write into the thread (None: it may); inside the caller's block.
        One message whatever the thread holds (red24): which of another user's records or
        only records of no user (the agent's) would tell the client whether some user has a
        conversation under that id."""
        mine = nobodys = False
        for record_type in _THREAD_TYPES:
            for record in await store.list_async(record_type, limit=None, thread_id=thread_id):
                if record.user_id is None:
                    nobodys = True
                elif record.user_id == user:
                    mine = True
                else:
                    return _closed_thread(thread_id)
        if user is None or (nobodys and not mine):
            # who opened the thread (SC-13.2) takes it whole at her erasure while no other user
            # writes in it (SC-13.3): a client of no user never writes into a thread a user
            # opened (none has records here any more: the loop above), and a client of one user
            # starts writing where only records of nobody are only in a thread she opened
            # (her erasure takes it whole anyway; iso42)
            opened = await store.get_async("thread", thread_id)
            opener = None if opened is None else opened.user_id
            if (opener is not None) if user is None else opener != user:
                return _closed_thread(thread_id)
        # new or not: another scope's default session
        refusal = default_session_refusal(thread_id, user, agent)
        return None if refusal is None else refusal + " (use a thread id of your own)"

    refuse_unknown = _RefuseUnknownArguments()
    server = _Server(
        name,
        instructions=_instructions(disabled),
        middleware=[refuse_unknown],
        **auth,
    )
    if not allow_scope_per_call:
        server.hidden_arguments = _SCOPE_ARGUMENTS
    refuse_unknown.server = server

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
        """Store one memory (types: memory, fact, preference, guideline, message); returns its id.
        A thread_id is accepted only for a new thread or one of this client's own conversations
        (no other user's records in it)."""
        chosen = scope(user_id, agent_id)
        _client_text(text)
        _client_metadata(metadata)
        kwargs: dict[str, Any] = {}
        if ttl_days is not None:
            if isinstance(ttl_days, int) and not isinstance(ttl_days, bool) and ttl_days == 0:
                # stored and invisible at once: an id for a memory nobody can ever read
                raise ValueError("ttl_days 0 would expire the memory at once; give 1 or more days, "
                                 "or leave ttl_days out for no expiry")
            kwargs["ttl_days"] = ttl_days
        record_type = record_type_of(record_type)

        async def write() -> list[str]:
            return await store.add_async(
                [text],
                record_type,
                metadata=metadata,
                thread_ids=thread_id,
                user_ids=chosen["user_id"],
                agent_ids=chosen["agent_id"],
                **kwargs,
            )

        if thread_id is None:
            ids = await write()
        else:
            async with store.transaction_async():  # the check and the write commit together
                refusal = await thread_refusal(thread_id, chosen["user_id"], chosen["agent_id"])
                if refusal is not None:
                    raise ValueError(refusal)
                ids = await write()
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
        _client_text(text)
        _client_metadata(metadata)
        changes: dict[str, Any] = {}
        if text is not None:
            changes["text"] = text
        if metadata is not None:
            changes["metadata"] = metadata
        chosen = scope(user_id, agent_id)
        async with store.transaction_async():  # the check and the write commit together
            record = await visible(record_type, record_id, chosen)
            if record is None:
                return {"updated": 0}
            if text is not None:
                _client_text_update(record, keeps_metadata=metadata is None)
            return {"updated": await store.update_async(record_type, record_id, **changes)}

    @server.tool()
    @_client_errors
    async def delete_memory(
        record_id: str, record_type: str = "memory", user_id: Optional[str] = None, agent_id: Optional[str] = None
    ) -> dict[str, Any]:
        """Delete one memory by id."""
        chosen = scope(user_id, agent_id)
        async with store.transaction_async():  # the check and the write commit together
            if await visible(record_type, record_id, chosen) is None:
                return {"deleted": 0}
            return {"deleted": await store.delete_async(record_type, record_id)}

    @server.tool()
    @_client_errors
    async def forget(user_id: Optional[str] = None) -> dict[str, Any]:
        """Erase this server's user everywhere: her records on every agent and what the knowledge
        layer derived from them (SC-8.6). Never another user, never the agent. Irreversible;
        returns rows erased per table and the erasure receipt (SC-14)."""
        target_user = scope(user_id, None)["user_id"]
        if target_user is None:
            raise ValueError(
                "forget erases the server's user, and this server has none (start it with --user ID); "
                "to erase a user or an agent as the operator, run: oramem --db PATH forget --user ID | --agent ID"
            )
        target = knowledge if knowledge is not None else store
        try:
            counts = await target.forget_async(user_id=target_user)
        except StoreError as exc:
            raise ToolError(str(exc)) from exc
        out: dict[str, Any] = {"forgotten": target_user, "erased": {t: n for t, n in counts.items() if n}}
        if hasattr(counts, "to_json"):  # SC-14.1: the erasure receipt (salted hash, verification scan)
            out["receipt"] = _client_receipt(counts.to_json())
        return out

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

    for tool_name in sorted(disabled):
        server.remove_tool(tool_name)
    return server
