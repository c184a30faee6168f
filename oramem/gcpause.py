"""Pausing Python's cyclic garbage collector around one bulk write.

Normalising and inserting a large ``add`` allocates several container objects per record
(drafts, plans, rows); each few hundred allocations trigger a collection that walks every
tracked object of the process, so a 10,000-record ``add`` in a process holding a large
corpus spent ~15 % of its CPU in the collector (bench/results/FINDINGS.md, issue 14). The
write path creates no reference cycles, so nothing is left for the collector to do.

:func:`paused` turns automatic collection off for the duration of a call that writes at
least :data:`MIN_RECORDS` records and restores it afterwards. It is process-wide (that is
how the collector works), nested and thread-safe: the first pause remembers whether
collection was on, the last resume restores exactly that. A caller that disabled the
collector itself keeps it disabled. Smaller writes never touch it. Async calls do not use
it (other tasks would run with it paused across an ``await``).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

__all__ = ["paused", "MIN_RECORDS"]

#: Writes smaller than this leave the collector alone.
MIN_RECORDS = 1000

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def paused(records: int) -> Iterator[None]:
    """Pause automatic collection while the block runs, if it writes ``records`` >=
    :data:`MIN_RECORDS` records."""
    global _depth, _was_enabled
    if records < MIN_RECORDS:
        yield
        return
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
