"""SC-5: time to live.

Engine-agnostic expiry uses ``ttl_anchor=TIMESTAMP`` with an old event time (already
expired at insert); the injected ``clock=`` variants run on SQLite only.
"""

from __future__ import annotations

import warnings
from datetime import datetime, timedelta

import pytest

from oramem import MemoryRetentionConfig, TimeToLiveAnchor

from ._support import UTC, FakeClock, close_to, hit_ids, ids, parse_ts, snapshot, vec

OLD = "2020-01-01T00:00:00+00:00"
TS = TimeToLiveAnchor.TIMESTAMP


def _lifetime(rec) -> timedelta:
    return parse_ts(rec.expires_at) - parse_ts(rec.created_at)


# ---------------------------------------------------------------- SC-5.1
@pytest.mark.parametrize("rtype", ["message", "memory", "guideline", "fact", "preference"])
def test_sc_5_1_ttl_accepted_on_message_and_memory_like(store, rtype):
    store.add(["x"], record_type=rtype, record_ids="r1", thread_ids="t", ttl_days=3)
    r = store.get(rtype, "r1")
    assert close_to(parse_ts(r.created_at) + timedelta(days=3), parse_ts(r.expires_at), 1)


@pytest.mark.parametrize("rtype", ["user_profile", "agent_profile"])
def test_sc_5_1_ttl_rejected_elsewhere(store, rtype):
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.add(["x"], record_type=rtype, record_ids="p", ttl_days=3)
    with pytest.raises(ValueError):
        store.add(["x"], record_type=rtype, record_ids="p", ttl_anchor=TS, timestamps=OLD)
    assert snapshot(store) == before


@pytest.mark.parametrize("rtype", ["user_profile", "agent_profile"])
def test_sc_5_1_ttl_rejected_on_profile_update(store, rtype):
    (store.add_user if rtype == "user_profile" else store.add_agent)("p", "info")
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.update(rtype, "p", ttl_days=3)
    assert snapshot(store) == before


# ---------------------------------------------------------------- SC-5.2
def test_sc_5_2_omitted_ttl_uses_default(make_store):
    s = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=7, max_ttl_days=30))
    s.add(["x"], record_type="memory", record_ids="m1")
    assert close_to(parse_ts(s.get("memory", "m1").created_at) + timedelta(days=7),
                    parse_ts(s.get("memory", "m1").expires_at), 1)


def test_sc_5_2_no_retention_omitted_never_expires(store):
    store.add(["x"], record_type="memory", record_ids="m1")
    assert store.get("memory", "m1").expires_at is None


def test_sc_5_2_none_uses_max_when_set(make_store):
    s = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=7, max_ttl_days=30))
    s.add(["x"], record_type="memory", record_ids="m1", ttl_days=None)
    assert abs(_lifetime(s.get("memory", "m1")) - timedelta(days=30)) <= timedelta(seconds=1)


def test_sc_5_2_none_without_max_never_expires(make_store):
    s = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=7))
    s.add(["x"], record_type="memory", record_ids="m1", ttl_days=None)
    assert s.get("memory", "m1").expires_at is None


def test_sc_5_2_above_max_clamped_with_warning(make_store):
    s = make_store(memory_retention_config=MemoryRetentionConfig(max_ttl_days=30))
    with pytest.warns(UserWarning, match="30"):
        s.add(["x", "y"], record_type="memory", record_ids=["m1", "m2"], ttl_days=[365, 10])
    assert abs(_lifetime(s.get("memory", "m1")) - timedelta(days=30)) <= timedelta(seconds=1)
    assert abs(_lifetime(s.get("memory", "m2")) - timedelta(days=10)) <= timedelta(seconds=1)


def test_sc_5_2_at_max_no_warning(make_store):
    s = make_store(memory_retention_config=MemoryRetentionConfig(max_ttl_days=30))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        s.add(["x"], record_type="memory", record_ids="m1", ttl_days=30)


@pytest.mark.parametrize("bad", [-1, 1.5, "3"], ids=["negative", "float", "string"])
def test_sc_5_2_negative_or_non_integer_rejected(store, bad):
    before = snapshot(store)
    with pytest.raises(ValueError) as ei:
        store.add(["x"], record_type="memory", ttl_days=bad)
    assert "ttl_days" in str(ei.value)
    assert snapshot(store) == before


def test_sc_5_2_retention_config_validation():
    with pytest.raises(ValueError):
        MemoryRetentionConfig(default_ttl_days=-1)
    with pytest.raises(ValueError):
        MemoryRetentionConfig(default_ttl_days=10, max_ttl_days=5)


# ---------------------------------------------------------------- SC-5.3 anchors
def test_sc_5_3_created_at_anchor_ignores_old_event_time(store):
    store.add(["x"], record_type="memory", record_ids="m1", timestamps=OLD, ttl_days=2,
              ttl_anchor=TimeToLiveAnchor.CREATED_AT)
    r = store.get("memory", "m1")
    assert r is not None
    assert abs(_lifetime(r) - timedelta(days=2)) <= timedelta(seconds=1)


def test_sc_5_3_default_anchor_is_created_at(store):
    store.add(["x"], record_type="memory", record_ids="m1", timestamps=OLD, ttl_days=2)
    assert store.get("memory", "m1") is not None


def test_sc_5_3_timestamp_anchor_counts_from_event_time(store):
    store.add(["x"], record_type="memory", record_ids="m1", timestamps="2099-05-01T10:00:00+00:00", ttl_days=7,
              ttl_anchor=TS)
    assert parse_ts(store.get("memory", "m1").expires_at) == datetime(2099, 5, 8, 10, 0, tzinfo=UTC)


def test_sc_5_3_timestamp_anchor_string_and_naive(store):
    store.add(["x"], record_type="memory", record_ids="m1", timestamps="2099-05-01T10:00:00", ttl_days=1,
              ttl_anchor="timestamp")
    assert parse_ts(store.get("memory", "m1").expires_at) == datetime(2099, 5, 2, 10, 0, tzinfo=UTC)


def test_sc_5_3_per_record_anchor_list(store):
    store.add(["a", "b"], record_type="memory", record_ids=["a", "b"], timestamps=OLD, ttl_days=5,
              ttl_anchor=[TS, TimeToLiveAnchor.CREATED_AT])
    assert store.get("memory", "a") is None  # 2020 + 5 days: long gone
    assert store.get("memory", "b") is not None


def test_sc_5_3_timestamp_anchor_requires_timestamp(store):
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.add(["x"], record_type="memory", ttl_days=5, ttl_anchor=TS)
    with pytest.raises(ValueError):
        store.add(["x", "y"], record_type="memory", ttl_days=5, ttl_anchor=TS, timestamps=[OLD, None])
    assert snapshot(store) == before


# ---------------------------------------------------------------- SC-5.4 invisibility
@pytest.fixture
def with_expired(store):
    store.add(["pizza fresh", "pizza stale"], record_type="message", record_ids=["fresh", "stale"],
              thread_ids="t1", roles="user", timestamps=[None, OLD], ttl_days=[None, 1],
              ttl_anchor=[TimeToLiveAnchor.CREATED_AT, TS], embeddings=[vec(1), vec(1)])
    store.add(["pizza memory stale"], record_type="memory", record_ids="mstale", thread_ids="t1",
              timestamps=OLD, ttl_days=1, ttl_anchor=TS, embeddings=[vec(1)])
    return store


def test_sc_5_4_expired_invisible_to_get(with_expired):
    assert with_expired.get("message", "stale") is None
    assert with_expired.get("memory", "mstale") is None
    assert with_expired.get("message", "fresh").content == "pizza fresh"


def test_sc_5_4_expired_invisible_to_list(with_expired):
    assert ids(with_expired.list("message")) == ["fresh"]
    assert ids(with_expired.list("message", limit=None, thread_id="t1")) == ["fresh"]
    assert ids(with_expired.list("memory")) == []


def test_sc_5_4_expired_invisible_to_thread_messages(with_expired):
    assert ids(with_expired.list_thread_messages("t1")) == ["fresh"]
    assert ids(with_expired.list_thread_messages("t1", last_n=1)) == ["fresh"]


def test_sc_5_4_expired_invisible_to_search(with_expired):
    assert hit_ids(with_expired.search(query_vector=vec(1), k=10)) == ["fresh"]
    assert hit_ids(with_expired.search("pizza", k=10)) == ["fresh"]


def test_sc_5_4_expired_invisible_to_keyword_search(kw_store):
    kw_store.add(["zebra old", "zebra new"], record_type="memory", record_ids=["old", "new"],
                 timestamps=[OLD, None], ttl_days=[1, None], ttl_anchor=[TS, TimeToLiveAnchor.CREATED_AT])
    assert hit_ids(kw_store.search("zebra", k=5)) == ["new"]


def test_sc_5_4_clock_expiry_without_purge(make_store):
    """SQLite with an injected clock: records vanish the moment the clock passes expiry."""
    clock = FakeClock(datetime.now(UTC))
    s = make_store(clock=clock)
    s.add(["pizza"], record_type="memory", record_ids="m1", ttl_days=1, embeddings=[vec(2)])
    s.add(["pizza"], record_type="memory", record_ids="m2", ttl_days=3, embeddings=[vec(2)])
    clock.now += timedelta(days=2)
    assert s.get("memory", "m1") is None
    assert ids(s.list("memory")) == ["m2"]
    assert hit_ids(s.search(query_vector=vec(2), k=5)) == ["m2"]
    clock.now += timedelta(days=2)
    assert ids(s.list("memory")) == []


# ---------------------------------------------------------------- SC-5.5 purge
def test_sc_5_5_purge_removes_and_counts(kw_store):
    kw_store.add(["", "", ""], record_type="memory", record_ids=["e1", "e2", "live"],
                 timestamps=[OLD, OLD, None], ttl_days=[1, 1, None],
                 ttl_anchor=[TS, TS, TimeToLiveAnchor.CREATED_AT])
    kw_store.add([""], record_type="message", record_ids="e3", thread_ids="t", timestamps=OLD, ttl_days=1,
                 ttl_anchor=TS)
    assert kw_store.purge_expired() == 3
    assert kw_store.purge_expired() == 0
    assert ids(kw_store.list("memory")) == ["live"]
    # physically gone: a revive attempt finds nothing (SC-5.6 applies only before purge)
    assert kw_store.update("memory", "e1", ttl_days=None) == 0
    assert kw_store.get("memory", "e1") is None


def test_sc_5_5_purged_ids_reusable(kw_store):
    kw_store.add(["zebra"], record_type="memory", record_ids="e1", timestamps=OLD, ttl_days=1, ttl_anchor=TS)
    kw_store.purge_expired()
    assert kw_store.add(["zebra again"], record_type="memory", record_ids="e1") == ["e1"]
    assert hit_ids(kw_store.search("zebra", k=5)) == ["e1"]


def test_sc_5_5_purge_calls_deletion_hook(kw_store):
    events = []
    kw_store.register_deletion_hook(lambda handle, ev: events.append(ev))
    kw_store.add(["", ""], record_type="memory", record_ids=["e1", "live"], timestamps=[OLD, None],
                 ttl_days=[1, None], ttl_anchor=[TS, TimeToLiveAnchor.CREATED_AT])
    assert kw_store.purge_expired() == 1
    purged = [r for ev in events if ev.reason == "purge" for r in ev.records]
    assert purged == [("memory", "e1")]


def test_sc_5_5_sqlite_purges_on_open(make_store, sqlite_only):
    """SQLite runs purge_expired() when a store is opened."""
    clock = FakeClock(datetime.now(UTC))
    s = make_store(clock=clock)
    s.add(["", ""], record_type="memory", record_ids=["e1", "live"], ttl_days=[1, None])
    s.close()
    clock.now += timedelta(days=5)
    s2 = make_store(clock=clock)
    assert s2.purge_expired() == 0  # already purged by the open
    assert ids(s2.list("memory")) == ["live"]


def test_sc_5_5_clock_purge(make_store):
    clock = FakeClock(datetime.now(UTC))
    s = make_store(clock=clock)
    s.add(["a", "b"], record_type="memory", record_ids=["m1", "m2"], ttl_days=[1, 10], embeddings=[vec(1), vec(2)])
    assert s.purge_expired() == 0
    clock.now += timedelta(days=2)
    assert s.purge_expired() == 1
    assert hit_ids(s.search(query_vector=vec(1), k=5)) == ["m2"]


# ---------------------------------------------------------------- SC-5.6 revive
def test_sc_5_6_update_expiry_revives_unpurged_record(store):
    store.add(["back from the dead"], record_type="memory", record_ids="m1", timestamps=OLD, ttl_days=1,
              ttl_anchor=TS, embeddings=[vec(4)])
    assert store.get("memory", "m1") is None
    assert store.update("memory", "m1", ttl_days=None) == 1
    r = store.get("memory", "m1")
    assert r is not None and r.content == "back from the dead" and r.expires_at is None
    assert hit_ids(store.search(query_vector=vec(4), k=1)) == ["m1"]


def test_sc_5_6_non_expiry_update_of_expired_record_is_zero(store):
    store.add(["x"], record_type="memory", record_ids="m1", timestamps=OLD, ttl_days=1, ttl_anchor=TS)
    assert store.update("memory", "m1", metadata={"a": 1}) == 0
    assert store.get("memory", "m1") is None


def test_sc_5_2_default_ttl_not_applied_to_profiles(make_store):
    s = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=1, max_ttl_days=2))
    s.add_user("u1", "info")
    s.add_agent("a1", "info")
    assert s.get("user_profile", "u1").expires_at is None
    assert s.get("agent_profile", "a1").expires_at is None


def test_sc_5_2_default_applies_to_messages(make_store):
    s = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=4))
    s.add(["hi"], record_type="message", record_ids="x", thread_ids="t", roles="user")
    assert abs(_lifetime(s.get("message", "x")) - timedelta(days=4)) <= timedelta(seconds=1)


def test_sc_5_4_expired_do_not_consume_top_k(store):
    """SC-5.4 with SC-6.5: 100 expired records nearest to the query never crowd out live ones."""
    n = 100
    store.add([f"e{i}" for i in range(n)], record_type="memory", record_ids=[f"e{i:03d}" for i in range(n)],
              timestamps=OLD, ttl_days=1, ttl_anchor=TS, embeddings=[vec(0)] * n)
    store.add([f"l{i}" for i in range(3)], record_type="memory", record_ids=["l0", "l1", "l2"],
              embeddings=[vec((0, 0.2), (1, 1.0))] * 3)
    assert hit_ids(store.search(query_vector=vec(0), k=3)) == ["l0", "l1", "l2"]


def test_sc_5_4_expired_invisible_in_hybrid_and_manual(make_store, hybrid_capable):
    from oramem import SearchIndexSyncMode, SearchStrategy

    s = make_store(search_strategy=SearchStrategy.HYBRID, search_index_sync=SearchIndexSyncMode.MANUAL)
    s.add(["zebra old", "zebra new"], record_type="memory", record_ids=["old", "new"], timestamps=[OLD, None],
          ttl_days=[1, None], ttl_anchor=[TS, TimeToLiveAnchor.CREATED_AT])
    s.sync_search_index()
    for strategy in ("keyword", "vector", "hybrid"):
        assert hit_ids(s.search("zebra", k=5, strategy=strategy)) == ["new"], strategy
