"""OpenAI Agents SDK: ``OramemSession``, a ``Session`` whose items are the messages of an oramem thread.

Install with ``pip install 'oramem[openai-agents]'``. The SDK's session protocol is async
only; every method calls the store's native async API (both engines).

Mapping: ``session_id`` is the oramem ``thread_id``; each session item is one ``message``
record of that thread, in insertion order (``seq_no``). The record keeps the item itself,
unchanged, in ``metadata["openai_agents_item"]`` (what ``get_items`` returns), its ``role``
(or, for items without one such as tool calls, its ``type``) as the message role, and as
content the item's text (a message's string content, or its text parts joined by newlines;
other items: the item as JSON), so oramem search and the CLI see the conversation as text.
The knowledge layer learns only from what the application passes to ``KnowledgeMemory.write``
(e.g. each user turn, with ``session_id`` = this session id and the same ``user_id``): it
extracts nothing from session items by itself.

Trust (SC-15.4): under a firewall policy the message role is the record's source label, so
an item's ``role`` (or ``type``) decides its trust, as ``store.add(roles=...)`` does for any
caller of the store. The session is the application's writer, not a remote client's (the MCP
server, whose clients cannot name a source): the SDK writes the input the application gave
``Runner.run`` and the model's items. An application that forwards its end users' input
items as given lets them choose the role; give their text as a string (the SDK makes it a
``user`` item) or set each item's role itself.

Scope: ``user_id`` / ``agent_id`` given to the constructor are written on every message and
limit every read, pop and clear, matched exactly (``None`` = messages without one). A session id
is a conversation name, not a grant: Bob's ``OramemSession("conversation-1", user_id="bob")``
never reads, pops or clears Alice's messages in a thread of the same id. Messages written to
the thread by other means (``store.add(..., "message", thread_ids=..., user_ids=...)``) with the
same scope appear as ``{"role": ..., "content": ...}`` items; knowledge-layer event records
(``KnowledgeMemory.write(..., session_id=...)``) are not items.

``clear_session`` deletes, in one transaction, every record of the session's scope in the
thread (its messages and any memory / fact / preference / guideline records bound to it);
other users' and other agents' records stay (``store.delete_thread`` removes a whole thread).
``pop_item`` removes the scope's newest message. ``get_items(limit)`` returns the newest
``limit`` items, oldest first (``limit`` falls back to ``session_settings.limit``; ``0`` returns
nothing; negative is an error).
"""

from __future__ import annotations

import json
from typing import Any, Optional

from ..errors import StoreClosed
from . import check_scope_ids, check_store, require
from ._colour import call, run_async, run_async_in_transaction
from ._threads import ThreadScope

require("agents", "openai-agents")

from agents.memory import SessionSettings  # noqa: E402
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit  # noqa: E402

__all__ = ["OramemSession"]

ITEM_KEY = "openai_agents_item"


def _text_of(item: Any) -> str:
    content = item.get("content") if isinstance(item, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if parts:
            return "\n".join(parts)
    return json.dumps(item, ensure_ascii=False, default=str)


def _role_of(item: Any) -> str:
    for key in ("role", "type"):
        value = item.get(key)
        if isinstance(value, str) and value:
            return value
    return "item"


def _item_of(record: Any) -> Any:
    meta = record.metadata or {}
    if ITEM_KEY in meta:
        return meta[ITEM_KEY]
    return {"role": getattr(record, "role", None) or "user", "content": record.content or ""}


class OramemSession:
    """``OramemSession("conversation-1", store, user_id="alice")``: pass it as ``session=`` to ``Runner.run``."""

    session_settings: Optional[SessionSettings] = None

    def __init__(
        self,
        session_id: str,
        store: Any,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        session_settings: Optional[SessionSettings | dict] = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValueError(f"session_id must be a non-empty str, not only white space (it is the oramem thread_id), got {session_id!r}")
        check_scope_ids(("user_id", user_id), ("agent_id", agent_id))
        check_store(store, "OramemSession")
        self.session_id = session_id
        # as the SDK's own sessions: a dict is validated (unknown keys are a TypeError)
        self.session_settings = (
            coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()
        )
        self._store = store
        self._user_id = user_id
        self._agent_id = agent_id
        self._scope = ThreadScope(session_id, user_id, agent_id)

    async def get_items(self, limit: Optional[int] = None) -> list[Any]:
        return await run_async(self._store, self._get(resolve_session_limit(limit, self.session_settings)))

    async def add_items(self, items: list[Any]) -> None:
        # the thread check and the write in one transaction (ThreadScope.write_refusal)
        await run_async_in_transaction(self._store, self._add(items))

    async def pop_item(self) -> Optional[Any]:
        # the newest item's lookup and its delete in one transaction (ThreadScope.pop)
        return await run_async_in_transaction(self._store, self._pop())

    async def clear_session(self) -> None:
        await run_async_in_transaction(self._store, self._scope.clear())

    # one body per operation, driven by the store's async API (see _colour)
    def _get(self, limit: Optional[int]):
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValueError(f"limit must be None (all items) or an int >= 0, got {limit!r}")
        if limit == 0:
            return []
        records = yield from self._scope.messages(limit)
        return [_item_of(r) for r in records]

    def _add(self, items: list[Any]):
        items = list(items)
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise TypeError(f"items[{i}] must be a dict (a TResponseInputItem), got {type(item).__name__}")
            json.dumps(item)  # not JSON-serialisable: TypeError before anything is written
        if not items:
            if self._store.closed:  # the empty fast path must not hide a closed store
                raise StoreClosed("this store is closed; open a new one")
            return None
        refusal = yield from self._scope.write_refusal()
        if refusal is not None:
            raise ValueError(refusal)
        yield call(
            "add",
            [_text_of(item) for item in items],
            "message",
            thread_ids=self.session_id,
            user_ids=self._user_id,
            agent_ids=self._agent_id,
            roles=[_role_of(item) for item in items],
            metadata=[{ITEM_KEY: item} for item in items],
        )
        return None

    def _pop(self):
        record = yield from self._scope.pop()
        return None if record is None else _item_of(record)
