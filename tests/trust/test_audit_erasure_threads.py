"""SC-16.6 (red team red29): an erasure takes the audit entries made in the scope of the threads
it removes whole (the user's private conversations, SC-13.3), not only those made in her user
scope. The application reading her thread agent-wide (no user) wrote an entry keyed by her
thread id (which often holds her name) with her records' ids; it stayed after her erasure,
under a receipt that said clean. A thread shared with another user stays, and so do its entries."""

from __future__ import annotations

import pytest

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.trust.audit import find, set_audit
from oramem.trust.erasure import verify_receipts


@pytest.fixture
def store(tmp_path):
    with SQLiteMemoryStore(str(tmp_path / "a.db"), embedder=HashEmbedder(64), schema_policy="create_if_necessary") as s:
        set_audit(s, True)
        s.add(["I need a loan for my bakery"], "message", thread_ids="chat-alice-fernandes", user_ids="alice",
              roles=["user"])
        s.add(["loan question from bob", "alice asked too"], "message", thread_ids="shared-desk",
              user_ids=["bob", "alice"], roles=["user", "user"])
        s.search("loan", thread_id="chat-alice-fernandes")  # the application, agent-wide, over her thread
        s.search("loan", thread_id="shared-desk")
        s.search("loan", user_id="bob")
        yield s


@pytest.mark.parametrize("how", ["forget", "profile cascade"])
def test_erasure_takes_the_entries_of_her_private_threads(store, how):
    if how == "forget":
        receipt = store.forget(user_id="alice")
        assert receipt["oramem_audit_log"] == 1
    else:
        store.add_user("alice", "a baker")
        assert store.delete("user_profile", "alice", cascade=True) == 1
    threads = sorted(e.thread_id or "" for e in find(store))
    assert threads == ["", "shared-desk"]  # bob's search, and the shared thread's entry, stay
    assert all(c.ok for c in verify_receipts(store))


# ------------------------------------------------------------------ red30: the same read racing her erasure
def _two_stores(tmp_path):
    def one():
        return SQLiteMemoryStore(str(tmp_path / "r.db"), embedder=HashEmbedder(64), schema_policy="create_if_necessary")
    return one(), one()


def _erased_during_read(monkeypatch, store, other, colour):
    """The read's engine call erases Alice through another store object, on another thread,
    after it read (the racy moment)."""
    import threading

    engine = store._engine
    real, real_async = engine.search, engine.search_async

    def erase():
        t = threading.Thread(target=lambda: other.forget(user_id="alice"))
        t.start()
        t.join()

    def search(request):
        hits = real(request)
        erase()
        return hits

    async def search_async(request):
        hits = await real_async(request)
        erase()
        return hits

    monkeypatch.setattr(engine, "search", search if colour == "sync" else real)
    monkeypatch.setattr(engine, "search_async", search_async if colour == "async" else real_async)


def _search(store, colour, thread_id):
    if colour == "sync":
        return store.search("loan", thread_id=thread_id)
    import asyncio

    return asyncio.run(store.search_async("loan", thread_id=thread_id))


@pytest.mark.parametrize("colour", ["sync", "async"])
def test_an_agent_wide_read_of_her_thread_in_flight_when_she_is_erased_writes_no_entry(tmp_path, monkeypatch, colour):
    """The guard watched only the user and agent the read names; an agent-wide read of her
    private thread names neither, so its entry (her thread id, her records' ids) was written
    after the erasure had taken the thread's entries, under a clean receipt."""
    from oramem.errors import StoreError

    store, other = _two_stores(tmp_path)
    with store, other:
        set_audit(store, True)
        store.add(["I need a loan for my bakery"], "message", thread_ids="chat-alice-fernandes", user_ids="alice",
                  roles=["user"])
        _erased_during_read(monkeypatch, store, other, colour)
        with pytest.raises(StoreError, match="removed by an erasure"):
            _search(store, colour, "chat-alice-fernandes")
        assert find(store) == []
        assert all(c.ok for c in verify_receipts(store))


@pytest.mark.parametrize("colour", ["sync", "async"])
def test_a_read_of_a_shared_thread_racing_her_erasure_keeps_its_entry(tmp_path, monkeypatch, colour):
    """A thread shared with Bob stays after her erasure, and so do its entries (as above)."""
    store, other = _two_stores(tmp_path)
    with store, other:
        set_audit(store, True)
        store.add(["loan question from bob", "alice asked too"], "message", thread_ids="shared-desk",
                  user_ids=["bob", "alice"], roles=["user", "user"])
        _erased_during_read(monkeypatch, store, other, colour)
        _search(store, colour, "shared-desk")
        assert [e.thread_id for e in find(store)] == ["shared-desk"]
