"""TTL with an injected clock, purge (physical removal, hooks, on open), expiry updates."""

from __future__ import annotations

from oramem.sqlite._sqlite import sqlite3

import pytest

from oramem import MemoryRetentionConfig, TimeToLiveAnchor

from .conftest import vec


def counts(db_path: str, store_id: str = "DEFAULT") -> tuple[int, int]:
    with sqlite3.connect(db_path) as conn:
        records = conn.execute(f'SELECT count(*) FROM "om_{store_id}_records" WHERE record_type != \'thread\'').fetchone()[0]
        chunks = conn.execute(f'SELECT count(*) FROM "om_{store_id}_chunks"').fetchone()[0]
    return records, chunks


def test_expired_rows_vanish_from_every_read_then_purge_removes_them(store, clock, db_path):
    store.add(["short", "long"], record_type="message", record_ids=["s", "l"], thread_ids="t",
              ttl_days=[1, 10], embeddings=[vec(0), vec(0)])
    assert store.get("message", "s").expires_at == "2030-01-02T12:00:00.000000+00:00"
    clock.advance(days=1)  # expiry is exclusive: at the instant of expiry the row is gone
    assert store.get("message", "s") is None
    assert [r.id for r in store.list("message")] == ["l"]
    assert [r.id for r in store.list_thread_messages("t")] == ["l"]
    assert [r.id for r, _ in store.search(query_vector=vec(0), k=5)] == ["l"]
    assert counts(db_path) == (2, 2)
    assert store.purge_expired() == 1
    assert counts(db_path) == (1, 1)
    assert store.purge_expired() == 0


def test_purge_removes_keyword_rows_and_calls_hooks(kw_store, clock, db_path):
    events = []
    kw_store.register_deletion_hook(lambda conn, event: events.append(event))
    kw_store.add(["ephemeral lynx"], record_type="memory", record_ids="x", ttl_days=0)
    assert kw_store.search("lynx", k=3) == []
    assert kw_store.purge_expired() == 1
    assert [e.reason for e in events] == ["purge"] and events[0].records == (("memory", "x"),)
    with sqlite3.connect(db_path) as conn:
        assert conn.execute('SELECT count(*) FROM "om_KW_fts"').fetchone()[0] == 0


def test_purge_runs_on_open(make, clock, db_path):
    make().add(["gone"], record_type="memory", record_ids="g", ttl_days=1, embeddings=[vec(0)])
    clock.advance(days=2)
    make()
    assert counts(db_path) == (0, 0)


def test_timestamp_anchor_counts_from_event_time(store):
    store.add(["old event"], record_type="memory", record_ids="e", timestamps="2029-12-25T00:00:00",
              ttl_days=3, ttl_anchor=TimeToLiveAnchor.TIMESTAMP, embeddings=[vec(0)])
    assert store.get("memory", "e") is None  # 2029-12-28 is before the clock's now


def test_update_revives_expired_record(store, clock):
    store.add(["m"], record_type="memory", record_ids="m", ttl_days=1, embeddings=[vec(0)])
    clock.advance(days=2)
    assert store.update("memory", "m", metadata={"a": 1}) == 0  # invisible, expiry unchanged
    assert store.update("memory", "m", ttl_days=5) == 1
    record = store.get("memory", "m")
    assert record.expires_at == "2030-01-06T12:00:00.000000+00:00" and record.metadata is None
    assert [r.id for r, _ in store.search(query_vector=vec(0), k=3)] == ["m"]


def test_update_timestamp_anchor_without_event_time_writes_nothing(store):
    store.add(["m"], record_type="memory", record_ids="m", embeddings=[vec(0)])
    with pytest.raises(ValueError, match="timestamp"):
        store.update("memory", "m", text="changed", embedding=vec(1), ttl_days=1,
                     ttl_anchor=TimeToLiveAnchor.TIMESTAMP)
    record = store.get("memory", "m")
    assert record.content == "m" and record.expires_at is None
    assert [r.id for r, _ in store.search(query_vector=vec(0), k=3)] == ["m"]


def test_update_timestamp_anchor_uses_stored_event_time(store):
    store.add(["m"], record_type="memory", record_ids="m", timestamps="2030-01-01T00:00:00+00:00",
              embeddings=[vec(0)])
    assert store.update("memory", "m", ttl_days=2, ttl_anchor=TimeToLiveAnchor.TIMESTAMP) == 1
    assert store.get("memory", "m").expires_at == "2030-01-03T00:00:00.000000+00:00"


def test_default_ttl_from_retention(make, clock):
    s = make(memory_store_id="RET", memory_retention_config=MemoryRetentionConfig(default_ttl_days=2))
    s.add(["m"], record_type="memory", record_ids="m", embeddings=[vec(0)])
    clock.advance(days=2, seconds=-1)
    assert s.get("memory", "m") is not None
    clock.advance(seconds=1)
    assert s.get("memory", "m") is None


def test_hook_failure_rolls_back_the_delete(store, db_path):
    store.add(["keep me"], record_type="memory", record_ids="k", embeddings=[vec(0)])

    def refuse(conn, event):
        conn.execute('DELETE FROM "om_DEFAULT_records"')  # proves the hook shares the transaction
        raise RuntimeError("derived rows could not be removed")

    store.register_deletion_hook(refuse)
    with pytest.raises(RuntimeError):
        store.delete("memory", "k")
    assert store.get("memory", "k").content == "keep me"
    assert [r.id for r, _ in store.search(query_vector=vec(0), k=3)] == ["k"]
    assert counts(db_path) == (1, 1)


def test_hook_sees_the_same_connection_and_transaction(store):
    store.add(["a"], record_type="memory", record_ids="a", thread_ids="t", embeddings=[vec(0)])
    seen = []

    def hook(conn, event):
        seen.append((conn.in_transaction, event.reason, event.thread_ids, sorted(event.records)))

    store.register_deletion_hook(hook)
    assert store.delete_thread("t") == 1
    assert seen == [(True, "delete_thread", ("t",), [("memory", "a"), ("thread", "t")])]
