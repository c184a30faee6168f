"""SC-13.3 / SC-13.4 with SC-5.4, SQLite specifics (the engine-independent case is
``tests/contract/test_sc08_delete.py::test_sc_13_3_another_users_expired_record_neither_keeps_nor_goes_with_her_thread``):
only live records decide which threads an erasure takes whole. Bob's only record in ``t1``
expired and is not purged yet; Alice wrote there and the agent answered her, quoting her.
Before this rule Bob's invisible record made ``t1`` "shared": erasing Alice kept the agent's
reply quoting her, and no later purge brought it back to her erasure (she was gone). Now
``t1`` is hers alone and goes whole, while Bob's expired record itself stays in the file,
untouched by her erasure (SC-13.1), for the purge. The scoped export (SC-13.9), which reads
only live records, now agrees with the erasure."""

from __future__ import annotations

import datetime as dt

import pytest
from contract._support import ERASE_USER_WAYS, erase_user, expired_peer_world

from oramem import SQLiteMemoryStore, jsonl
from oramem.sqlite._sqlite import sqlite3


def _raw_ids(path) -> list[str]:
    with sqlite3.connect(path) as conn:
        (table,) = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                    if n.endswith("_records")]
        return sorted(i for (i,) in conn.execute(f'SELECT id FROM "{table}" WHERE record_type <> \'thread\''))


@pytest.mark.parametrize("how", ERASE_USER_WAYS)
def test_her_erasure_leaves_his_expired_record_in_the_file_for_the_purge(tmp_path, how):
    path = tmp_path / "s.db"
    with SQLiteMemoryStore(path, search_strategy="keyword") as store:
        expired_peer_world(store)
        erase_user(store, "alice", how)
        assert sorted(r.id for r in store.list("message", limit=None)) == ["b2", "r2"]
        assert _raw_ids(path) == ["b1", "b2", "r2"]
        assert store.purge_expired() == 1
        assert _raw_ids(path) == ["b2", "r2"]


def test_her_export_is_what_her_erasure_removes(tmp_path):
    """SC-13.9: ``export --user alice`` and ``forget(user_id="alice")`` now decide ``t1`` alike
    (before, the export counted it hers and the erasure shared)."""
    with SQLiteMemoryStore(tmp_path / "s.db", search_strategy="keyword") as store:
        expired_peer_world(store)
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
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    now = [start]
    path = tmp_path / "s.db"
    with SQLiteMemoryStore(path, search_strategy="keyword", clock=lambda: now[0]) as store:
        store.add(["old helper note"], "message", record_ids="h1", thread_ids="t3", agent_ids="helper",
                  roles="assistant", ttl_days=1)
        store.add(["desk note one"], "message", record_ids="d1", thread_ids="t3", agent_ids="desk",
                  roles="assistant", ttl_days=None)
        store.add(["helper live note"], "message", record_ids="h2", thread_ids="t4", agent_ids="helper",
                  roles="assistant", ttl_days=None)
        store.add(["desk note two"], "message", record_ids="d2", thread_ids="t4", agent_ids="desk",
                  roles="assistant", ttl_days=None)
        now[0] = start + dt.timedelta(days=2)
        store.forget(agent_id="desk")
        assert [r.id for r in store.list("message", limit=None)] == ["h2"]
        assert [r.id for r in store.list("thread", limit=None)] == ["t4"]
        assert _raw_ids(path) == ["h1", "h2"]
