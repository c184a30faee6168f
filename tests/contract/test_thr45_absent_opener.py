"""SC-13.2 / SC-13.3 seen from the writes (iso42's finding, decided in thr45).

The engines take a thread whole with the user who opened it while no other user has a live
record there (SC-13.3: her private conversation, the records of no user in it included). So a
user who opened a thread under a name the agent later uses for its shared conversation, and
deleted her own records, would erase the agent's shared records with her ``forget``.
``oramem.threads.write_refusal`` (the adapters' and the knowledge layer's check) now refuses a
write of no user into such a thread, names no user, and lets the opener herself write there
again (her erasure takes the thread whole whatever she writes)."""

from __future__ import annotations

from oramem import SQLiteMemoryStore
from oramem._plans import run_sync
from oramem.threads import write_refusal


def _store() -> SQLiteMemoryStore:
    return SQLiteMemoryStore(":memory:", search_strategy="keyword")


def test_no_user_write_refused_in_a_thread_a_user_opened_and_left():
    with _store() as s:
        s.add(["hi"], "message", record_ids="b1", thread_ids="lobby", user_ids="bob", agent_ids="desk")
        # bob is in his conversation: the agent's reply of no user is part of it (allowed)
        assert run_sync(s, write_refusal("lobby", None, "desk")) is None
        s.delete("message", "b1")
        refusal = run_sync(s, write_refusal("lobby", None, "desk"))
        assert refusal is not None and "opened by a user" in refusal and "bob" not in refusal
        # bob may come back to his own thread: his erasure takes it whole anyway
        assert run_sync(s, write_refusal("lobby", "bob", "desk")) is None


def test_no_user_write_allowed_where_a_user_writes_or_nobody_opened():
    with _store() as s:
        s.add(["agent notice"], "memory", thread_ids="hall", agent_ids="desk")   # opened by no user
        assert run_sync(s, write_refusal("hall", None, "desk")) is None
        assert run_sync(s, write_refusal("new-thread", None, "desk")) is None     # no row yet
        s.add(["hi"], "message", record_ids="b1", thread_ids="lobby", user_ids="bob")
        s.delete("message", "b1")
        s.add(["hello"], "message", record_ids="a1", thread_ids="lobby", user_ids="alice")
        # alice writes there now: the thread is not bob's alone, a record of no user is hers/shared
        assert run_sync(s, write_refusal("lobby", None, "desk")) is None


def test_a_user_still_may_not_start_in_a_thread_of_no_user_records_she_did_not_open():
    with _store() as s:
        s.add(["agent notice"], "memory", thread_ids="hall", agent_ids="desk")
        assert "holds only records of no user" in run_sync(s, write_refusal("hall", "alice", "desk"))
        s.add(["hi"], "message", record_ids="b1", thread_ids="lobby", user_ids="bob")
        s.add(["reply"], "message", record_ids="r1", thread_ids="lobby", agent_ids="desk", roles="assistant")
        s.delete("message", "b1")
        # lobby: bob opened it, only the reply of no user lives there: alice may not start in it
        assert "holds only records of no user" in run_sync(s, write_refusal("lobby", "alice", "desk"))
        assert run_sync(s, write_refusal("lobby", "bob", "desk")) is None


def test_bobs_erasure_never_takes_the_agents_records_written_through_the_check():
    """The attack end to end on the store API with the check in front of every write of no
    user: bob opens "lobby", leaves it; the agent's shared write is refused (it would have
    been erased with bob), so his forget takes nothing of the agent's."""
    with _store() as s:
        s.add(["hi"], "message", record_ids="b1", thread_ids="lobby", user_ids="bob", agent_ids="desk")
        s.delete("message", "b1")
        s.add(["Breakfast is served until 10"], "memory", thread_ids="hall", agent_ids="desk")
        for thread in ("lobby", "hall"):
            if run_sync(s, write_refusal(thread, None, "desk")) is None:
                s.add([f"The hotel opens at 7 ({thread})"], "memory", thread_ids=thread, agent_ids="desk")
        s.forget(user_id="bob")
        assert sorted(r.content for r in s.list("memory", limit=None)) == [
            "Breakfast is served until 10", "The hotel opens at 7 (hall)"]
