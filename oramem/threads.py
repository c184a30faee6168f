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

The same harm comes the other way round through the knowledge layer's default sessions
(:func:`default_session_id`, KC-4.21): the agent's shared session is predictable and new until
the agent's first shared write, so a user who wrote there first would own it for her erasure,
and the shared writes would follow hers. A default session belongs to its (agent, user):
:func:`default_session_refusal` refuses every other user's write into it, new or not (used by
:func:`write_refusal` and by the MCP server).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Generator, Optional

from ._plans import call

__all__ = ["THREAD_SCOPED_TYPES", "DEFAULT_SESSION_PREFIX", "default_session_id", "default_session_refusal",
           "write_refusal"]

#: the record types that carry a thread_id (SC-2.1)
THREAD_SCOPED_TYPES = ("message", "memory", "fact", "preference", "guideline")

#: the thread ids of the knowledge layer's default sessions (:func:`default_session_id`)
DEFAULT_SESSION_PREFIX = "kg-default-"


def default_session_id(agent_id: Optional[str], user_id: Optional[str] = None) -> str:
    """KC-4.21: the thread of a knowledge write that names no ``session_id``: one per (agent,
    user), so no two agents or users share a default conversation (review finding 4)."""
    digest = hashlib.sha256(json.dumps([agent_id, user_id]).encode("utf-8")).hexdigest()[:32]
    return f"{DEFAULT_SESSION_PREFIX}{digest}"


def default_session_refusal(thread_id: str, user_id: Optional[str], agent_id: Optional[str]) -> Optional[str]:
    """Why a write of user ``user_id`` on agent ``agent_id`` may not go into ``thread_id`` because
    it is the knowledge layer's default session of another (agent, user) (None: it may). The
    agent's shared session (``default_session_id(agent, None)``) is predictable and new until
    the agent's first shared write: a user who wrote there first (her record, or only the
    thread row naming her once it is deleted) made it her thread, and her erasure took it
    whole with the shared events and the facts learned from them, for every user (SC-13.3,
    KC-3.10). Writes of no user are the agent's and are not judged here."""
    if user_id is None or not thread_id.startswith(DEFAULT_SESSION_PREFIX):
        return None
    if thread_id == default_session_id(agent_id, user_id):
        return None
    return (
        f"thread {thread_id!r} is not the default session of user {user_id!r} on agent {agent_id!r}, and "
        f"{DEFAULT_SESSION_PREFIX} ids are reserved for the knowledge layer's default session of another agent or "
        "user (KC-4.21: one per agent and user; the agent's shared session among them): the user cannot write "
        "into it, because her erasure would take the thread whole, another scope's records and what the knowledge "
        "layer learned from them included (SC-13.3). Give her conversation a thread (session) id of its own"
    )


def write_refusal(thread_id: str, user_id: Optional[str],
                  agent_id: Optional[str] = None) -> Generator[Any, Any, Optional[str]]:
    """Why ``user_id`` (writing on agent ``agent_id``) may not write into ``thread_id`` (None:
    it may). A user may write where she already has live records, in a thread she opened
    (her erasure takes it whole whatever she writes there, SC-13.3), where nobody has records,
    and where other users have (a shared conversation stays shared when one of them is
    erased); not where the only live records are of no user, and never into the knowledge
    layer's default session of another scope (:func:`default_session_refusal`), new or not.
    A write of no user (the unscoped part of a conversation, SC-13.3) may go anywhere except
    into a thread a user opened in which no user has live records any more
    (:func:`_absent_opener_refusal`)."""
    if user_id is None:
        return (yield from _absent_opener_refusal(thread_id))
    # refused whatever the thread holds, her records too (a thread of shared records only gets
    # the message at the end instead)
    reserved = default_session_refusal(thread_id, user_id, agent_id)
    for record_type in THREAD_SCOPED_TYPES:  # hers already: the usual case, one indexed probe
        if (yield call("list", record_type, limit=1, thread_id=thread_id, user_id=user_id)):
            return reserved
    opened = yield call("get", "thread", thread_id)
    if opened is not None and opened.user_id == user_id:
        return reserved  # her thread: her erasure takes it whole already (SC-13.2, SC-13.3)
    shared = False
    for record_type in THREAD_SCOPED_TYPES:
        if (yield call("list", record_type, limit=1, thread_id=thread_id, user_id=None)):
            shared = True
            break
    if not shared:
        return reserved
    for record_type in THREAD_SCOPED_TYPES:  # another user's records: a shared conversation
        for record in (yield call("list", record_type, limit=None, thread_id=thread_id)):
            if record.user_id is not None:
                return reserved
    return (
        f"thread {thread_id!r} holds only records of no user (shared records, e.g. the agent's knowledge events "
        f"of a shared session), and none of user {user_id!r}: her conversation cannot start in it, because "
        "erasing her would then take the whole thread, the shared records and what the knowledge layer learned "
        "from them included (SC-13.3). Give her conversation a thread (session) id of its own"
    )


def _absent_opener_refusal(thread_id: str) -> Generator[Any, Any, Optional[str]]:
    """Why a write of no user may not go into ``thread_id`` (None: it may): the thread's row
    names the user who opened it (SC-13.2), no user has a live record in it, and erasing that
    user therefore takes the thread whole (SC-13.3: a thread she opened and no other user
    writes in is hers alone), the records of no user in it included. So one user could open a
    thread under a name the agent later uses for its shared conversation, delete her own
    records, and erase the agent's shared records with her ``forget`` (iso42). Where a user has
    live records, a record of no user there is a reply in that conversation (hers when she is
    alone in it, kept when several users are) and is allowed, as before. The message names no
    user."""
    row = yield call("get", "thread", thread_id)
    if row is None or row.user_id is None:
        return None
    for record_type in THREAD_SCOPED_TYPES:
        for record in (yield call("list", record_type, limit=None, thread_id=thread_id)):
            if record.user_id is not None:
                return None
    return (
        f"thread {thread_id!r} was opened by a user who has no records in it any more: a write of no user there "
        "would be erased with that user (SC-13.3: the thread is hers alone while no other user writes in it), "
        "so nothing was written. Give the shared conversation a thread (session) id of its own"
    )
