"""A record's scope is checked and the record written in one transaction (SQLite), so no other
writer can put another user's record under the id in between (SC-4.3: callers choose ids).

Each test lets a second connection (another process's store, as far as SQLite can tell) try to
swap Alice's record for Bob's under the same id right after the scope check. With the check and
the write in one transaction the swap waits for Alice's write to commit, and lands after it:
Bob's record is never the one Alice's call changes or deletes. Without it, the swap lands in
between and Alice's call writes into Bob's record (the code before this test)."""

from __future__ import annotations

import threading

import pytest

from oramem import SQLiteMemoryStore
from oramem.knowledge.write import commit

SWAP_WAIT_S = 0.5  # how long the check waits for the swap to land (it does when nothing holds the lock)


@pytest.fixture
def stores(tmp_path):
    path = str(tmp_path / "race.db")
    with SQLiteMemoryStore(path, search_strategy="keyword") as alice_side, \
            SQLiteMemoryStore(path, search_strategy="keyword") as other:
        yield alice_side, other


def swap_after_check(store, other, record_type: str, record_id: str, monkeypatch) -> threading.Thread:
    """Make ``store.get`` (the scope check) start, on ``other``, the replacement of the record by
    Bob's under the same id, and give it ``SWAP_WAIT_S`` to land before the caller goes on."""
    real_get = store.get
    swapper = threading.Thread(target=lambda: (
        other.delete(record_type, record_id),
        other.add(["Bob's own text"], record_type, record_ids=[record_id], user_ids="bob", agent_ids="agent",
                  metadata={"owner": "bob"}),
    ))

    def get(*args, **kwargs):
        found = real_get(*args, **kwargs)
        if not swapper.is_alive() and swapper.ident is None:
            swapper.start()
            swapper.join(SWAP_WAIT_S)
        return found

    monkeypatch.setattr(store, "get", get)
    return swapper


def bobs(store, record_type: str, record_id: str):
    record = store.get(record_type, record_id)
    assert record is not None and record.user_id == "bob", record
    return record


def test_a_fact_rows_metadata_never_lands_in_bobs_record_swapped_in_after_the_check(stores, monkeypatch):
    alice_side, other = stores
    [fid] = alice_side.add(["Alice's fact"], "fact", user_ids="alice", agent_ids="agent", metadata={"owner": "alice"})
    swapper = swap_after_check(alice_side, other, "fact", fid, monkeypatch)
    assert commit.update_fact_record(alice_side, fid, "agent", {"kg_user": "alice", "kg_fact": True}) is True
    swapper.join(10)
    assert not swapper.is_alive()
    assert bobs(other, "fact", fid).metadata == {"owner": "bob"}  # the swap came after Alice's write


def test_a_rows_own_record_delete_never_deletes_bobs_record_swapped_in_after_the_check(stores, monkeypatch):
    alice_side, other = stores
    [fid] = alice_side.add(["Alice's fact"], "fact", user_ids="alice", agent_ids="agent")
    swapper = swap_after_check(alice_side, other, "fact", fid, monkeypatch)
    assert commit.delete_own_record(alice_side, "fact", fid, "agent", "alice") is True
    swapper.join(10)
    assert not swapper.is_alive()
    assert bobs(other, "fact", fid).content == "Bob's own text"
