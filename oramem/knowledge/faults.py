"""Failure injection points of the commit phase (KC-7.4); driven by
``oramem.testing.fail_at``. A context variable, so concurrent tests do not interfere and
worker threads started with ``asyncio.to_thread`` inherit it."""

from __future__ import annotations

import contextvars

from ..errors import StoreError

__all__ = ["COMMIT_STEPS", "FAIL_AT", "check"]

COMMIT_STEPS = (
    "event",
    "entities",
    "facts",
    "links",
    "relations",
    "registry",
    "intentions",
    "observations",
    "store_index",
)
FAIL_AT: contextvars.ContextVar[frozenset] = contextvars.ContextVar("oramem_kg_fail_at", default=frozenset())


class InjectedDatabaseError(StoreError):
    """A database error injected by ``oramem.testing.fail_at``."""


def check(step: str) -> None:
    if step in FAIL_AT.get():
        raise InjectedDatabaseError(f"injected database error at commit step {step!r}")
