"""A conversation seen from one scope: what the session adapters read, pop and clear.

A thread id is a conversation name, not a grant: several users (or one user with several
agents) may write messages under the same id, and knowledge-layer events live there too. The
OpenAI Agents session and the LangChain chat history therefore never act on the thread as a
whole. Each works on the records of *its own scope* in the thread — ``thread_id`` plus the
``user_id`` / ``agent_id`` given to its constructor, matched exactly (``None`` = records without
one) — and ignores knowledge-layer event records, which are not conversation items:

- reads list the scope's ``message`` records of the thread, oldest first;
- ``pop`` deletes the newest of them;
- ``clear`` deletes, in one transaction, every record of the scope in the thread (messages and
  memory / fact / preference / guideline records bound to it). Other users' records in a thread
  with the same id, other agents' records and knowledge events stay; so does the empty thread
  container (``store.delete_thread`` removes a thread with everything in it, whoever wrote it).
- writes of a user's scope check first, in the write's transaction (:mod:`oramem.threads`),
  that the thread is not one that holds only records of no user (shared records, such as the
  agent's knowledge events of a shared session): erasing her would take such a thread whole,
  the shared records and the knowledge learned from them included (SC-13.3, KC-3.10), so by
  writing one message there a user could erase what the agent learned for every user. The MCP
  server refuses the same threads to a client of one user.
"""

from __future__ import annotations

from typing import Any, Optional

from ..threads import THREAD_SCOPED_TYPES, write_refusal
from ._colour import call

# Knowledge-layer event records are `message` records of the write's session thread. They carry
# `kg_event: true` (stores written by this version) or `kg_source` (older stores); neither key is
# written by the adapters, whose metadata is one key of their own.
NOT_KNOWLEDGE_EVENT: dict[str, Any] = {"kg_event": {"$exists": False}, "kg_source": {"$exists": False}}



class ThreadScope:
    """One (thread, user, agent) scope; plan builders for the session adapters (see module doc)."""

    def __init__(self, thread_id: str, user_id: Optional[str], agent_id: Optional[str]) -> None:
        self.thread_id = thread_id
        self.user_id = user_id
        self.agent_id = agent_id

    def _filter(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "user_id": self.user_id, "agent_id": self.agent_id}

    def messages(self, last_n: Optional[int] = None):
        """The scope's conversation messages, oldest first; ``last_n`` keeps the newest n."""
        records = yield call("list", "message", limit=last_n, metadata_filter=NOT_KNOWLEDGE_EVENT, **self._filter())
        return records

    def pop(self):
        """Delete and return the scope's newest conversation message (None when there is none);
        run it in one transaction (between the lookup and the delete, another scope's record
        could take the id of this scope's message deleted meanwhile)."""
        while True:
            newest = yield from self.messages(1)
            if not newest:
                return None
            # read again by id: on Oracle a get inside the block locks the row until the block
            # ends (SC-12.10), so the id still names this scope's message when it is deleted
            # (the list locked nothing: another session may have deleted it and stored another
            # scope's record under its id since)
            record = yield call("get", "message", newest[0].id)
            if record is None or (record.thread_id, record.user_id, record.agent_id) != (
                    self.thread_id, self.user_id, self.agent_id) or set(record.metadata or {}) & set(NOT_KNOWLEDGE_EVENT):
                continue  # gone meanwhile (a concurrent pop took it): look again
            removed = yield call("delete", "message", record.id)
            if removed:
                return newest[0]

    def clear(self):
        """Delete every record of the scope in the thread; run it in one transaction. Each
        type's records go in sorted id order, the order the LangChain vector store's
        ``delete`` locks in (on Oracle a delete holds its row until the transaction ends: one
        order for both, so neither waits for the other holding what it needs)."""
        removed = 0
        for record_type in THREAD_SCOPED_TYPES:
            extra = {"metadata_filter": NOT_KNOWLEDGE_EVENT} if record_type == "message" else {}
            records = yield call("list", record_type, limit=None, **self._filter(), **extra)
            for record in sorted(records, key=lambda r: r.id):
                removed += yield call("delete", record_type, record.id)
        return removed

    def write_refusal(self):
        """Why this scope may not write into its thread (None: it may): :func:`oramem.threads.write_refusal`;
        run it in the write's transaction."""
        return (yield from write_refusal(self.thread_id, self.user_id, self.agent_id))
