"""Issue 25 item 1: ``KnowledgeMemory`` stays a thin facade (at most ~500 lines) whose public
methods all say what they do; the worker lifecycle that moved to ``jobs/lifecycle.py`` keeps
its contract (a timed-out ``stop_worker`` keeps the worker, so it can be stopped again)."""

from __future__ import annotations

import inspect
import threading
from pathlib import Path

import pytest

from oramem.knowledge import KnowledgeMemory, memory

from .helpers import extract

FACADE_MAX_LINES = 500


def test_the_facade_stays_thin():
    lines = len(Path(memory.__file__).read_text(encoding="utf-8").splitlines())
    assert lines <= FACADE_MAX_LINES, (
        f"oramem/knowledge/memory.py has {lines} lines: move logic that is more than a signature, "
        f"a docstring and one call into the module that owns it")


def test_every_public_method_says_what_it_does():
    undocumented = sorted(n for n, fn in inspect.getmembers(KnowledgeMemory, callable)
                          if not n.startswith("_") and not (inspect.getdoc(fn) or "").strip())
    assert undocumented == []


def test_a_timed_out_stop_worker_keeps_the_worker(km, llm):
    entered, release = threading.Event(), threading.Event()
    reply = extract([("Ana", "person")], [("Ana", "Ana likes tea")])

    def slow(payload: dict) -> dict:
        entered.set()
        release.wait(20)
        return reply

    llm.route("extract", slow)
    assert km.write("a1", "tea", "Pedro", background=True).job_id
    km.start_worker(poll_interval=0.05)
    try:
        assert entered.wait(20)  # the worker is inside its job
        with pytest.raises(TimeoutError):
            km.stop_worker(timeout=0.05)
        with pytest.raises(ValueError, match="already runs"):  # the handle was kept
            km.start_worker()
    finally:
        release.set()
    report = km.stop_worker(timeout=20)
    assert report is not None and report.done == 1
    assert km.stop_worker() is None
