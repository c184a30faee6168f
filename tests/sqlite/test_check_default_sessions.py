"""``oramem check`` reports a store written before the default-session rule (red team of
2026-12-06 j): a user's records in the knowledge layer's default session of another agent or
user (the agent's shared session among them), whose erasure would take that thread whole with
the agent's shared knowledge (SC-13.3, KC-4.21). The write itself is refused now
(``oramem.threads.default_session_refusal``); the store API, which the check must catch for old
files, still takes any scope into any thread."""

from __future__ import annotations

from oramem import SQLiteMemoryStore
from oramem.sqlite.health import check_file
from oramem.threads import default_session_id


def _finding(path):
    return {f.check: f for f in check_file(str(path))}["DEFAULT default sessions"]


def test_a_users_record_in_the_agents_shared_session_is_reported(tmp_path):
    path = tmp_path / "m.db"
    shared, hers = default_session_id("desk", None), default_session_id("desk", "alice")
    with SQLiteMemoryStore(str(path), search_strategy="keyword") as store:
        store.add(["The hotel opens at 7"], "message", thread_ids=shared, agent_ids="desk", roles="assistant")
        store.add(["alice in her own session"], "message", thread_ids=hers, user_ids="alice", agent_ids="desk",
                  roles="user")
    assert _finding(path).ok, _finding(path).detail  # her own default session, and the agent's own records
    with SQLiteMemoryStore(str(path), search_strategy="keyword") as store:
        store.add(["bob was here first"], "message", thread_ids=shared, user_ids="bob", agent_ids="desk", roles="user")
    finding = _finding(path)
    assert not finding.ok
    assert shared in finding.detail and "user bob" in finding.detail
    assert hers not in finding.detail


def test_a_thread_row_naming_another_user_as_opener_is_reported(tmp_path):
    """His record deleted, the thread row still names him as the one who opened it."""
    path = tmp_path / "m.db"
    shared = default_session_id("desk", None)
    with SQLiteMemoryStore(str(path), search_strategy="keyword") as store:
        (rid,) = store.add(["bob was here first"], "message", thread_ids=shared, user_ids="bob", agent_ids="desk",
                           roles="user")
        store.add(["The hotel opens at 7"], "message", thread_ids=shared, agent_ids="desk", roles="assistant")
        store.delete("message", rid)
        assert store.get("thread", shared).user_id == "bob"
    finding = _finding(path)
    assert not finding.ok and "user bob" in finding.detail
