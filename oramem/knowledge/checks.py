"""Argument checks that several ``KnowledgeMemory`` methods share, run before anything is read
or written: the scope of a call (agent id, KC-0.1; user id, KC-3.7) and plain value checks.
They live here, not in ``read/``/``write/``, so the facade stays a list of signatures and calls."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from .db.queries import check_user_id
from .runtime import KnowledgeRuntime
from .text import validate_agent_id

__all__ = ["scope", "scoped", "text", "intention_status", "row_id", "FACT_ID_HINT"]

INTENTION_STATES = ("pending", "triggered", "fulfilled", "expired")
#: what :func:`row_id` tells a caller who gave a blank fact id to give instead
FACT_ID_HINT = "the fact's id (as get_all, retrieve and oramem knowledge facts list it)"


def scope(agent_id: Any, user_id: Any) -> Optional[str]:
    """The agent id (KC-0.1) and the user id (None: the agent's shared knowledge, KC-3.7),
    checked in that order; returns the user id."""
    validate_agent_id(agent_id)
    return check_user_id(user_id)


def scoped(rt: KnowledgeRuntime, agent_id: Any, user_id: Any) -> tuple[Optional[str], datetime]:
    """:func:`scope`, then the instance's clock read once for the call (KC-0.2; ``StoreClosed``
    once the instance or its store is closed): (user id, now)."""
    user_id = scope(agent_id, user_id)
    return user_id, rt.now()


def text(value: Any, name: str, *, optional: bool = False) -> None:
    """``TypeError`` unless ``value`` is a str (or None, when ``optional``)."""
    if not isinstance(value, str) and not (optional and value is None):
        raise TypeError(f"{name} must be a str or None" if optional else f"{name} must be a str")


def intention_status(status: Any) -> None:
    """An intention state filter: None or one of :data:`INTENTION_STATES`."""
    if status is not None and status not in INTENTION_STATES:
        raise ValueError(f"status must be pending, triggered, fulfilled or expired, got {status!r}")


def row_id(value: Any, name: str, what: str) -> str:
    """The id of a fact, intention or event the call looks up: a str with a visible character
    (KC-0.1, as the store's ``check_id`` for record ids, SC-2.2). '' or ' ' names no row: a
    ``ValueError`` saying to give one, not the None/False of a row that is not there."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string (not only white space), got {value!r}: give {what}")
    return value
