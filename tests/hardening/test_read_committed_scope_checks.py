"""SC-12.10 / SC-13.5 under read committed (Oracle): a scope check and the write it guards.

On SQLite a block holds the write lock, so nothing changes between a check and its write. On
Oracle another session's commit lands between any two statements of a block unless a statement
locked the row: a get inside a block now locks the record it returns (``get_json`` with
``in_lock`` 1, tests/oracle/test_transaction_fake.py), but a list locks nothing, and no lock can
be taken on a record that is not there. These tests model the interleavings that stay possible on
Oracle: another session's record stored under the id right after a statement that locked
nothing (done here on the block's own store, so the next statement sees it, as a committed
change is seen by the next statement under read committed). Each fails on the code before
the fix: the pop deleted the record the list had not locked; a knowledge row's own-record write
went ahead on an absent record and hit the one stored under its id meanwhile."""

from __future__ import annotations

import pytest

from oramem import SQLiteMemoryStore
from oramem._plans import run_sync_in_transaction
from oramem.integrations._threads import ThreadScope
from oramem.knowledge.write import commit


def _store(tmp_path):
    return SQLiteMemoryStore(str(tmp_path / "rc.db"), search_strategy="keyword")


def test_a_pop_never_deletes_another_scopes_message_stored_under_the_id_after_its_list(tmp_path, monkeypatch):
    with _store(tmp_path) as store:
        (mid,) = store.add(["bob: see you at 5"], "message", thread_ids="chat", user_ids="bob", agent_ids="desk",
                           roles="user")
        real_list = store.list
        swapped = []

        def list_then_swap(*a, **kw):
            found = real_list(*a, **kw)
            if any(r.id == mid for r in found) and not swapped:
                swapped.append(mid)  # another session: Bob's message goes, Alice's takes its id
                store.delete("message", mid)
                store.add(["alice: my flat key is under the mat"], "message", record_ids=mid, thread_ids="chat",
                          user_ids="alice", agent_ids="desk", roles="user")
            return found

        monkeypatch.setattr(store, "list", list_then_swap)
        assert run_sync_in_transaction(store, ThreadScope("chat", "bob", "desk").pop()) is None
        left = store.get("message", mid)
        assert swapped and left is not None and left.user_id == "alice"


def test_a_pop_deletes_the_scopes_newest_message_it_read_again():
    """The pop's plan: list the newest, get it by id (the locking read), delete it."""
    scope = ThreadScope("chat", "bob", "desk")
    plan = scope.pop()
    method, args, _ = next(plan)
    assert (method, args[0]) == ("list", "message")

    class Rec:
        id, thread_id, user_id, agent_id, metadata = "m1", "chat", "bob", "desk", None

    assert plan.send([Rec()])[:2] == ("get", ("message", "m1"))
    assert plan.send(Rec())[:2] == ("delete", ("message", "m1"))
    with pytest.raises(StopIteration) as done:
        plan.send(1)
    assert done.value.value.id == "m1"


def test_an_own_record_write_never_touches_a_record_stored_under_the_id_after_its_check(tmp_path, monkeypatch):
    with _store(tmp_path) as store:
        real_get = store.get

        def absent_then_stored(record_type, record_id):
            got = real_get(record_type, record_id)
            if got is None:  # another session stores Bob's record under the absent id
                store.add(["Bob's own text"], record_type, record_ids=[record_id], user_ids="bob", agent_ids="agent",
                          metadata={"owner": "bob"})
            return got

        monkeypatch.setattr(store, "get", absent_then_stored)
        assert commit.delete_own_record(store, "fact", "f-1", "agent", "alice") is False
        assert commit.update_fact_record(store, "f-2", "agent", {"kg_user": "alice", "owner": "alice"}) is False
        for rid in ("f-1", "f-2"):
            left = real_get("fact", rid)
            assert left is not None and left.user_id == "bob" and left.metadata == {"owner": "bob"}
