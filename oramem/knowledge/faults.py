"""Failure injection points of the commit phase (KC-7.4); driven by
``oramem.testing.fail_at`` (an injected database error) and :func:`kill_at` (the process
is killed with SIGKILL there: the crash test). Context variables, so concurrent tests do
not interfere and worker threads started with ``asyncio.to_thread`` inherit them."""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
from typing import Iterator

from ..errors import StoreError

__all__ = ["COMMIT_STEPS", "FAIL_AT", "KILL_STEPS", "check", "kill_at"]

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
#: where :func:`kill_at` can stop a process: every commit step, after the store records
#: were written, just before the block's COMMIT, and just after it
KILL_STEPS = COMMIT_STEPS + ("store_records", "commit", "committed")
FAIL_AT: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("oramem_kg_fail_at", default=frozenset())
KILL_AT: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("oramem_kg_kill_at", default=frozenset())


class InjectedDatabaseError(StoreError):
    """A database error injected by ``oramem.testing.fail_at``."""


@contextlib.contextmanager
def armed(var: contextvars.ContextVar[frozenset[str]], steps: tuple[str, ...], known: tuple[str, ...],
          name: str) -> Iterator[None]:
    """Add ``steps`` (each among ``known``) to ``var`` for the block (``fail_at``, ``kill_at``)."""
    unknown = [s for s in steps if s not in known]
    if unknown or not steps:
        raise ValueError(f"{name} takes steps among {', '.join(known)}; got {list(steps)!r}")
    token = var.set(var.get() | frozenset(steps))
    try:
        yield
    finally:
        var.reset(token)


def kill_at(*steps: str) -> contextlib.AbstractContextManager[None]:
    """Kill this process (SIGKILL: no cleanup, no atexit, like a power cut for the
    database) when a write reaches one of ``steps`` (names in :data:`KILL_STEPS`)."""
    return armed(KILL_AT, steps, KILL_STEPS, "kill_at")


def check(step: str) -> None:
    if step in KILL_AT.get():
        os.kill(os.getpid(), signal.SIGKILL)
    if step in FAIL_AT.get():
        raise InjectedDatabaseError(f"injected database error at commit step {step!r}")
