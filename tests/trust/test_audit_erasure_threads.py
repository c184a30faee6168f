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
