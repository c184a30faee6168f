"""SC-16.6: nothing of an erased subject is written to the retrieval audit after her erasure.
An audited read writes its entry after the read, in a transaction of its own, and ``forget``
deleted the subject's entries in a transaction of its own before the erasure: an entry of
hers could land after either (a search in flight when the erasure committed, or one that
committed between the two). Deterministic: the read's engine call (or the erasure's) runs
the other operation, through a second store object, at the racy moment. Each test fails
before the fix (the entry with her id stayed)."""

from __future__ import annotations

import threading

import pytest

from oramem.errors import StoreError
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.testing import ScriptedLLM
from oramem.trust import audit

from .test_audit import ALICE, BOB, open_store, seed


def _raw(tmp_path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("a.db"))


def _in_thread(fn):
    """Run ``fn`` on another thread (another caller) and wait for it."""
    box: list = []
    t = threading.Thread(target=lambda: box.append(fn()))
    t.start()
    t.join()
    return box[0]


def _erase_alice_after_the_read(monkeypatch, other):
    """A knowledge retrieve's read erases Alice through ``other`` (another caller) after it
    read: the racy moment before its audit entry is written."""
    from oramem.knowledge.read import run as read_run

    real = read_run.run_retrieve

    async def erased_after_read(run):
        result = await real(run)
        _in_thread(lambda: other.forget(user_id=ALICE))
        return result

    monkeypatch.setattr(read_run, "run_retrieve", erased_after_read)


@pytest.mark.parametrize("colour", ["sync", "async"])
def test_a_search_in_flight_when_she_is_erased_writes_no_entry_of_hers(tmp_path, monkeypatch, colour):
    db = tmp_path / "a.db"
    with open_store(db) as store, open_store(db) as other:
        seed(store)
        audit.set_audit(store, True)
        engine = store._engine
        real, real_async = engine.search, engine.search_async

        def erased_after_read(request):
            hits = real(request)
            _in_thread(lambda: other.forget(user_id=ALICE))
            return hits

        async def erased_after_read_async(request):
            hits = await real_async(request)
            _in_thread(lambda: other.forget(user_id=ALICE))
            return hits

        monkeypatch.setattr(engine, "search", erased_after_read)
        monkeypatch.setattr(engine, "search_async", erased_after_read_async)
        with pytest.raises(StoreError, match="erased"):
            if colour == "sync":
                store.search("tea", user_id=ALICE)
            else:
                import asyncio

                asyncio.run(store.search_async("tea", user_id=ALICE))
        monkeypatch.setattr(engine, "search", real)
        assert audit.find(store, user_id=ALICE) == []
        store.search("coffee", user_id=BOB)  # another scope's read is audited as before
        assert [e.user_id for e in audit.find(store)] == [BOB]
    assert ALICE.encode() not in _raw(tmp_path)


def test_an_entry_committed_just_before_her_erasure_goes_with_it(tmp_path, monkeypatch):
    """Her entry commits after forget began (its receipt prepared) and before the erasure's
    transaction: the erasure deletes it in that transaction."""
    db = tmp_path / "a.db"
    with open_store(db) as store, open_store(db) as other:
        seed(store)
        audit.set_audit(store, True)
        engine = store._engine
        real = engine.forget

        def search_then_forget(request):
            _in_thread(lambda: other.search("tea", user_id=ALICE))
            return real(request)

        monkeypatch.setattr(engine, "forget", search_then_forget)
        receipt = store.forget(user_id=ALICE)
        assert receipt["oramem_audit_log"] == 1 and receipt.verified
        assert audit.find(store, user_id=ALICE) == []
    assert ALICE.encode() not in _raw(tmp_path)


def test_a_retrieve_in_flight_when_she_is_erased_writes_no_entry_of_hers(tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    with open_store(db) as store, open_store(db) as other:
        seed(store)
        audit.set_audit(store, True)
        km = KnowledgeMemory(store, ScriptedLLM({}), config=KnowledgeConfig(enable_reranker=False))
        KnowledgeMemory(other, None)  # the other store object's forget erases the knowledge tables too
        try:
            km.add_fact("concierge", "Alice", "Alice drinks green tea", subject_type="person", user_id=ALICE)
            _erase_alice_after_the_read(monkeypatch, other)
            with pytest.raises(StoreError, match="erased"):
                km.retrieve("concierge", "what does Alice drink?", user_id=ALICE)
            assert audit.find(store, user_id=ALICE) == []
        finally:
            km.close()
    assert ALICE.encode() not in _raw(tmp_path)


def test_an_agent_wide_retrieve_of_her_session_in_flight_when_she_is_erased_writes_no_entry(tmp_path, monkeypatch):
    """A knowledge retrieve's entry names its session as the thread. An agent-wide retrieve
    (no user) of Alice's private session names neither her nor the agent, so its guard did not
    see her erasure and the entry (her session id) was written after it (red30 left it: the
    store search's guard learnt threads, the retrieve's call did not pass its session)."""
    db = tmp_path / "a.db"
    session = "chat-alice-fernandes"
    with open_store(db) as store, open_store(db) as other:
        seed(store)
        store.add(["I need a loan for my bakery"], "message", thread_ids=session, user_ids=ALICE,
                  agent_ids="concierge", roles=["user"])
        audit.set_audit(store, True)
        km = KnowledgeMemory(store, ScriptedLLM({}), config=KnowledgeConfig(enable_reranker=False))
        KnowledgeMemory(other, None)
        try:
            km.add_fact("concierge", "Concierge", "The concierge answers loan questions", subject_type="person")
            _erase_alice_after_the_read(monkeypatch, other)
            with pytest.raises(StoreError, match="removed by an erasure"):
                km.retrieve("concierge", "who answers loan questions?", session_id=session)
            assert [e for e in audit.find(store) if e.thread_id == session] == []
        finally:
            km.close()
    assert session.encode() not in _raw(tmp_path)
