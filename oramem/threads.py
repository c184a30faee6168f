"""Who may start writing into a thread (SC-13.3 seen from the writes).

A thread id is a conversation name, not a grant. Erasing a user takes her private threads
whole: a thread she wrote in where no live record carries another user, the records of no user
in it included (the agent's replies, and the agent's shared knowledge events, whose facts
KC-3.10 erases with them). So a layer writing for one user must not let her *start* writing into
a thread that holds only records of no user (the agent's shared conversation, such as the
knowledge layer's shared session, whose id is predictable): one message of hers there, and her
erasure would take what the agent keeps for every user. :func:`write_refusal` is that check, as a
plan of store calls (:mod:`oramem._plans`: driven on the sync or the async API). Run it in the
write's transaction. The MCP server's stricter rule (a client never writes where another user
has records) is its own (``oramem.integrations.mcp``).
"""

from __future__ import annotations

from typing import Any, Generator, Optional

from ._plans import call

__all__ = ["THREAD_SCOPED_TYPES", "write_refusal"]

#: the record types that carry a thread_id (SC-2.1)
THREAD_SCOPED_TYPES = ("message", "memory", "fact", "preference", "guideline")


def write_refusal(thread_id: str, user_id: Optional[str]) -> Generator[Any, Any, Optional[str]]:
    """Why ``user_id`` may not write into ``thread_id`` (None: it may). No user may write
    anywhere (its records are the unscoped part of the conversation, SC-13.3). A user may write
    where she already has live records, where nobody has, and where other users have (a
    shared conversation stays shared when one of them is erased); not where the only live
    records are of no user."""
    if user_id is None:
        return None
    for record_type in THREAD_SCOPED_TYPES:  # hers already: the usual case, one indexed probe
        if (yield call("list", record_type, limit=1, thread_id=thread_id, user_id=user_id)):
            return None
    shared = False
    for record_type in THREAD_SCOPED_TYPES:
        if (yield call("list", record_type, limit=1, thread_id=thread_id, user_id=None)):
            shared = True
            break
    if not shared:
        return None
    for record_type in THREAD_SCOPED_TYPES:  # another user's records: a shared conversation
        for record in (yield call("list", record_type, limit=None, thread_id=thread_id)):
            if record.user_id is not None:
                return None
    return (
        f"thread {thread_id!r} holds only records of no user (shared records, e.g. the agent's knowledge events "
        f"of a shared session), and none of user {user_id!r}: her conversation cannot start in it, because "
        "erasing her would then take the whole thread, the shared records and what the knowledge layer learned "
        "from them included (SC-13.3). Give her conversation a thread (session) id of its own"
    )
