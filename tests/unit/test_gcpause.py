"""oramem.gcpause: the collector is paused only for large writes, restored exactly, nested
and across threads; a caller's own gc.disable() is kept."""

from __future__ import annotations

import gc
import threading

import pytest

from oramem import SQLiteMemoryStore, gcpause


@pytest.fixture(autouse=True)
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_small_writes_leave_the_collector_alone():
    with gcpause.paused(gcpause.MIN_RECORDS - 1):
        assert gc.isenabled()


def test_pause_nests_and_restores():
    with gcpause.paused(5000):
        assert not gc.isenabled()
        with gcpause.paused(5000):
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_restored_after_an_exception():
    with pytest.raises(RuntimeError):
        with gcpause.paused(5000):
            raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_caller_who_disabled_the_collector_keeps_it_disabled():
    gc.disable()
    with gcpause.paused(5000):
        pass
    assert not gc.isenabled()


def test_overlapping_pauses_from_threads_restore_once_the_last_ends():
    inside, release = threading.Event(), threading.Event()

    def other():
        with gcpause.paused(5000):
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with gcpause.paused(5000):
        thread.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other thread's pause is still running
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_bulk_add_pauses_and_restores(monkeypatch):
    seen = []
    store = SQLiteMemoryStore(":memory:", search_strategy="keyword")
    real = store._engine.add
    monkeypatch.setattr(store._engine, "add", lambda request: seen.append(gc.isenabled()) or real(request))
    n = gcpause.MIN_RECORDS
    store.add([f"text {i}" for i in range(n)], "memory")
    store.add(["one more"], "memory")
    assert seen == [False, True] and gc.isenabled()
    store.close()
