"""How fast this machine runs what the knowledge layer is made of, for reading timings across
machines.

The knowledge-layer targets (issue 25: a write ≤ 15 ms, a retrieve ≤ 30 ms) are absolute, and
most of those milliseconds are interpreter work and handoffs between the caller's thread, the
event loop and the worker pool. Sessions ran on machines whose results for the same code differed
by 1.5x, so each bench prints these two figures beside its own. They adjust nothing; they tell a
reader whether two runs came from comparable machines.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

__all__ = ["python_loop_ms", "trip_us"]


def python_loop_ms(repeat: int = 5) -> float:
    """Best of ``repeat`` timings (ms) of a 1,000,000-step loop of integer additions."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i
        best = min(best, time.perf_counter() - t0)
    return round(best * 1000.0, 1)


def trip_us(trips: int = 2000) -> float:
    """Median over five rounds of the mean time (µs) of one trip from an event loop to a worker
    thread and back (``run_in_executor`` of a no-op): what each of the layer's trips to its
    worker pool costs before any work."""

    async def rounds() -> list[float]:
        loop = asyncio.get_running_loop()
        out = []
        with ThreadPoolExecutor(2) as pool:
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(trips):
                    await loop.run_in_executor(pool, int)
                out.append((time.perf_counter() - t0) / trips * 1e6)
        return sorted(out)

    return round(asyncio.run(rounds())[2], 1)
