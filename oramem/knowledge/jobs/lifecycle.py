"""What a ``KnowledgeMemory`` starts and must stop: its event loop (the sync twins' and the
in-process worker's), at most one in-process worker (``start_worker``/``stop_worker``, woken
by background writes), and on ``close`` the runtime's worker pool and database backend."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Optional

from ..._sync import BackgroundLoop
from ...errors import StoreClosed
from ..runtime import KnowledgeRuntime
from ..types import WorkerReport
from .queue import BackgroundWorker, StopFlag

__all__ = ["Lifecycle", "require_llm"]


def require_llm(has_llm: bool, what: str) -> None:
    """The queue's jobs are extracted by an LLM: refuse ``what`` on an instance without one."""
    if not has_llm:
        raise ValueError(f"{what} extracts knowledge with an LLM and this KnowledgeMemory has none: pass llm=...")


class Lifecycle:
    """One per ``KnowledgeMemory``: ``loop`` runs its sync twins and its worker (the instance
    keeps it as ``_loop_runner``); ``worker`` is the running in-process worker or None."""

    def __init__(self, rt: KnowledgeRuntime, name: str) -> None:
        self.rt = rt
        self.loop = BackgroundLoop(name)
        rt.home = self.loop
        self.worker: Optional[BackgroundWorker] = None

    def start_worker(self, has_llm: bool, poll_interval: Any,
                     work: Callable[[StopFlag], Coroutine[Any, Any, WorkerReport]]) -> None:
        """``KnowledgeMemory.start_worker``: ``work(stop)`` (its ``process_jobs_async`` bound
        to the worker's stop flag) as a task on :attr:`loop`, checked before it starts."""
        if self.rt.closed:
            raise StoreClosed("this KnowledgeMemory is closed; open a new one")
        if self.worker is not None:
            raise ValueError("a worker already runs on this KnowledgeMemory; call stop_worker() first")
        require_llm(has_llm, "start_worker")
        if isinstance(poll_interval, bool) or not isinstance(poll_interval, (int, float)) or not poll_interval > 0:
            raise ValueError("poll_interval must be a number > 0")
        self.worker = BackgroundWorker(self.loop, float(poll_interval), work)

    def stop_worker(self, timeout: Optional[float] = None) -> Optional[WorkerReport]:
        """``KnowledgeMemory.stop_worker``: None when no worker runs; on ``TimeoutError`` the
        handle is kept, so stopping can be tried again."""
        worker, self.worker = self.worker, None
        if worker is None:
            return None
        try:
            return worker.stop(timeout)
        except TimeoutError:
            self.worker = worker  # still running
            raise

    def wake(self) -> None:
        """A background write was queued: the worker (if any) looks for due jobs now."""
        if self.worker is not None:
            self.worker.wake()

    def close(self) -> None:
        """``KnowledgeMemory.close`` (idempotent): stop the worker, then refuse new calls
        (``rt.closed``), join the loop, the worker pool, and close the backend."""
        if self.rt.closed:
            return
        if self.worker is not None:
            self.stop_worker()
        self.rt.closed = True
        self.loop.close()
        self.rt.executor.shutdown(wait=True)
        self.rt.backend.close()
