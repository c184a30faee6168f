"""SC-13.3 / SC-13.4 with SC-5.4: only live records decide which threads an erasure takes
whole. Bob wrote in ``t1`` once, with a one-day TTL; his message expired and is not purged
yet. Alice wrote there and the agent answered her, quoting her. Before this rule Bob's
invisible record made ``t1`` "shared": erasing Alice kept the agent's reply quoting her, and
no later purge brought it back to her erasure (she was gone). Now ``t1`` is hers alone and
goes whole (her message, the reply, the row), while Bob's expired record itself is never
touched by her erasure (SC-13.1): it stays for the purge, or for Bob to revive it (SC-5.6).
The scoped export (SC-13.9), which reads only live records, now agrees with the erasure."""

from __future__ import annotations

import datetime as dt

import pytest

from oramem import SQLiteMemoryStore, jsonl
from oramem.sqlite._sqlite import sqlite3

START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


def _raw_ids(path) -> list[str]:
    with sqlite3.connect(path) as conn:
        (table,) = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                    if n.endswith("_records")]
        return sorted(i for (i,) in conn.execute(f'SELECT id FROM "{table}" WHERE record_type <> \'thread\''))


def _world(store, clock: Clock) -> None:
    store.add(["bob was here once"], "message", record_ids="b1", thread_ids="t1", user_ids="bob", roles="user",
              ttl_days=1)
    store.add(["my passport is in the drawer"], "message", record_ids="a1", thread_ids="t1", user_ids="alice",
              roles="user", ttl_days=None)
    store.add(["noted, your passport is in the drawer"], "message", record_ids="r1", thread_ids="t1",
              agent_ids="desk", roles="assistant", ttl_days=None)
    # t2 stays shared: Bob's record there is live
    store.add(["bob's ticket"], "message", record_ids="b2", thread_ids="t2", user_ids="bob", roles="user",
              ttl_days=None)
    store.add(["alice in bob's ticket"], "message", record_ids="a2", thread_ids="t2", user_ids="alice",
              roles="user", ttl_days=None)
    store.add(["reply in bob's ticket"], "message", record_ids="r2", thread_ids="t2", agent_ids="desk",
              roles="assistant", ttl_days=None)
    clock.now = START + dt.timedelta(days=2)  # b1 has expired; nothing purged it


@pytest.mark.parametrize("how", ["forget", "profile cascade"])
def test_another_users_expired_record_does_not_keep_her_thread(tmp_path, how):
    clock = Clock()
    path = tmp_path / "s.db"
    with SQLiteMemoryStore(path, search_strategy="keyword", clock=clock) as store:
        _world(store, clock)
        assert store.get("message", "b1") is None  # SC-5.4: invisible before any purge
        if how == "forget":
            store.forget(user_id="alice")
        else:
            store.delete("user_profile", "alice", cascade=True)
        assert sorted(r.id for r in store.list("message", limit=None)) == ["b2", "r2"]
        assert [r.id for r in store.list("thread", limit=None)] == ["t2"]
        assert store.search("passport", strategy="keyword") == []
        # SC-13.1: her erasure never removed Bob's record, expired or not
        assert _raw_ids(path) == ["b1", "b2", "r2"]
        # SC-5.6: Bob can still revive it; it is his, unchanged
        assert store.update("message", "b1", ttl_days=5) == 1
        revived = store.get("message", "b1")
        assert revived is not None and revived.user_id == "bob" and revived.content == "bob was here once"


def test_purge_removes_what_her_erasure_left(tmp_path):
    clock = Clock()
    path = tmp_path / "s.db"
    with SQLiteMemoryStore(path, search_strategy="keyword", clock=clock) as store:
        _world(store, clock)
        store.forget(user_id="alice")
        assert store.purge_expired() == 1
        assert _raw_ids(path) == ["b2", "r2"]


def test_her_export_is_what_her_erasure_removes(tmp_path):
    """SC-13.9: ``export --user alice`` and ``forget(user_id="alice")`` now decide ``t1`` alike
    (before, the export counted it hers and the erasure shared)."""
    clock = Clock()
    with SQLiteMemoryStore(tmp_path / "s.db", search_strategy="keyword", clock=clock) as store:
        _world(store, clock)
        exported = sorted(jsonl.select_scope(store, "user", ["alice"]).keys)
        before = {(r.record_type, r.id) for t in ("message", "thread") for r in store.list(t, limit=None)}
        store.forget(user_id="alice")
        after = {(r.record_type, r.id) for t in ("message", "thread") for r in store.list(t, limit=None)}
        # the export leaves out only the row of a thread another user opened (it names him)
        assert sorted(before - after) == sorted([*exported, ("thread", "t1")])
        assert exported == [("message", "a1"), ("message", "a2"), ("message", "r1")]


def test_an_agents_thread_goes_whole_past_another_agents_expired_record(tmp_path):
    """SC-13.4: a thread goes whole when nothing but the agent's records is in it; another
    agent's expired record there neither keeps it nor is removed with it."""
    clock = Clock()
    path = tmp_path / "s.db"
    with SQLiteMemoryStore(path, search_strategy="keyword", clock=clock) as store:
        store.add(["old helper note"], "message", record_ids="h1", thread_ids="t3", agent_ids="helper",
                  roles="assistant", ttl_days=1)
        store.add(["desk note one"], "message", record_ids="d1", thread_ids="t3", agent_ids="desk",
                  roles="assistant", ttl_days=None)
        store.add(["helper live note"], "message", record_ids="h2", thread_ids="t4", agent_ids="helper",
                  roles="assistant", ttl_days=None)
        store.add(["desk note two"], "message", record_ids="d2", thread_ids="t4", agent_ids="desk",
                  roles="assistant", ttl_days=None)
        clock.now = START + dt.timedelta(days=2)
        store.forget(agent_id="desk")
        assert [r.id for r in store.list("message", limit=None)] == ["h2"]
        assert [r.id for r in store.list("thread", limit=None)] == ["t4"]
        assert _raw_ids(path) == ["h1", "h2"]
