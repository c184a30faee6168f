"""SC-13.2 / SC-13.3: who opened a thread decides nothing about its erasure. Bob opened
``t1``; his message there is gone; Alice wrote there and the agent answered her (quoting
her). Erasing Alice takes the thread whole - her message, the reply to her and the thread
row - exactly as if she had opened it (the stateful tenant model found that the thread row
counted as a record of Bob's, so the reply quoting her survived her erasure). Bob's other
thread, where he still writes, keeps his records and his row."""

from __future__ import annotations

import pytest
from contract._support import ERASE_USER_WAYS, erase_user

from oramem import SQLiteMemoryStore, jsonl


def _world(store):
    store.add(["hello from bob"], "message", record_ids="b1", thread_ids="t1", user_ids="bob", roles="user")
    store.add(["my passport is in the drawer"], "message", record_ids="a1", thread_ids="t1", user_ids="alice",
              roles="user")
    store.add(["noted, your passport is in the drawer"], "message", record_ids="r1", thread_ids="t1",
              agent_ids="desk", roles="assistant")
    store.delete("message", "b1")
    store.add(["bob's ticket"], "message", record_ids="b2", thread_ids="t2", user_ids="bob", roles="user")
    store.add(["alice in bob's ticket"], "message", record_ids="a2", thread_ids="t2", user_ids="alice", roles="user")
    store.add(["reply in bob's ticket"], "message", record_ids="r2", thread_ids="t2", agent_ids="desk",
              roles="assistant")


@pytest.mark.parametrize("how", ERASE_USER_WAYS)
def test_her_private_thread_goes_whole_whoever_opened_it(how):
    with SQLiteMemoryStore(search_strategy="keyword") as store:
        _world(store)
        erase_user(store, "alice", how)
        assert sorted(r.id for r in store.list("message", limit=None)) == ["b2", "r2"]
        assert [(r.id, r.user_id) for r in store.list("thread", limit=None)] == [("t2", "bob")]
        assert store.search("passport", strategy="keyword") == []


def test_her_export_holds_that_thread_but_not_the_row_naming_bob():
    """``export --user alice`` writes what her erasure removes (SC-13.9), except the row of a
    thread another user opened: it names him."""
    with SQLiteMemoryStore(search_strategy="keyword") as store:
        _world(store)
        scope = jsonl.select_scope(store, "user", ["alice"])
        assert sorted(scope.keys) == [("message", "a1"), ("message", "a2"), ("message", "r1")]
