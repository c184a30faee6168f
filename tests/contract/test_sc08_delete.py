"""SC-8: delete, cascade, delete_thread, deletion hooks."""

from __future__ import annotations

import pytest

from oramem import StoreError
from oramem.requests import DeletionEvent

from ._support import ERASE_USER_WAYS, erase_user, expired_peer_world, hit_ids, ids, vec


# ---------------------------------------------------------------- SC-8.1
def test_sc_8_1_delete_returns_one_then_zero(store):
    store.add(["a", "b"], record_type="memory", record_ids=["m1", "m2"])
    assert store.delete("memory", "m1") == 1
    assert store.get("memory", "m1") is None
    assert store.delete("memory", "m1") == 0
    assert store.delete("memory", "never") == 0
    assert ids(store.list("memory")) == ["m2"]


def test_sc_8_1_delete_removes_retrieval_rows(store):
    store.add(["a", "b"], record_type="memory", record_ids=["m1", "m2"], index_texts=[["x", "y"], None],
              embeddings=[[vec(1), vec(2)], vec((1, 1.0), (2, 1.0))])
    store.delete("memory", "m1")
    assert hit_ids(store.search(query_vector=vec(1), k=5)) == ["m2"]
    assert hit_ids(store.search(query_vector=vec(2), k=5)) == ["m2"]


def test_sc_8_1_delete_removes_keyword_rows(kw_store):
    kw_store.add(["zebra one", "zebra two"], record_type="memory", record_ids=["m1", "m2"])
    kw_store.delete("memory", "m1")
    assert hit_ids(kw_store.search("zebra", k=5)) == ["m2"]


def test_sc_8_1_delete_type_must_match(store):
    store.add(["a"], record_type="fact", record_ids="f1")
    assert store.delete("memory", "f1") == 0
    assert store.get("fact", "f1") is not None


def test_sc_8_1_delete_profile_without_cascade_keeps_scoped(store):
    store.add_user("u1", "profile")
    store.add(["m"], record_type="memory", record_ids="m1", user_ids="u1")
    assert store.delete("user_profile", "u1") == 1
    assert store.get("user_profile", "u1") is None
    assert store.get("memory", "m1") is not None


# ---------------------------------------------------------------- SC-8.2 cascade
@pytest.fixture
def world(store):
    store.add_user("u1", "user one")
    store.add_user("u2", "user two")
    store.add_agent("a1", "agent one")
    # thread t1 is created by u1's first write: owned by u1
    store.add(["hi"], record_type="message", record_ids="x1", thread_ids="t1", user_ids="u1", roles="user",
              embeddings=[vec(1)])
    store.add(["hello"], record_type="message", record_ids="x2", thread_ids="t1", user_ids=None, agent_ids="a1",
              roles="assistant", embeddings=[vec(1)])
    store.add(["thread memory"], record_type="memory", record_ids="tm", thread_ids="t1", user_ids=None,
              embeddings=[vec(1)])
    store.add(["u1 fact", "u1 pref"], record_type="fact", record_ids=["f1", "f2"], user_ids="u1",
              embeddings=[vec(1), vec(1)])
    store.add(["u1 guideline"], record_type="guideline", record_ids="g1", user_ids="u1", thread_ids="t9",
              embeddings=[vec(1)])
    # u2's world
    store.add(["other"], record_type="message", record_ids="y1", thread_ids="t2", user_ids="u2", roles="user",
              embeddings=[vec(1)])
    store.add(["u2 memory"], record_type="memory", record_ids="um2", user_ids="u2", agent_ids="a1",
              embeddings=[vec(1)])
    return store


def _all(store):
    out = []
    for t in ("message", "memory", "fact", "guideline", "preference", "user_profile", "agent_profile"):
        out += [(t, r.id) for r in store.list(t, limit=None)]
    return sorted(out)


REMAINING_AFTER_U1 = sorted([("user_profile", "u2"), ("agent_profile", "a1"), ("message", "y1"),
                             ("memory", "um2")])


def test_sc_8_2_user_cascade(world):
    assert world.delete("user_profile", "u1", cascade=True) == 1
    assert _all(world) == REMAINING_AFTER_U1
    assert sorted(hit_ids(world.search(query_vector=vec(1), k=50, record_types={"message", "memory", "fact",
                                                                                  "guideline"}))) == ["um2", "y1"]
    assert world.list_thread_messages("t1") == []
    assert world.delete_thread("t1") == 0  # the owned thread went too


def test_sc_8_2_cascade_runs_without_profile_row(world):
    world.delete("user_profile", "u1")
    assert world.delete("user_profile", "u1", cascade=True) == 0
    assert _all(world) == REMAINING_AFTER_U1


def test_sc_8_2_agent_cascade(world):
    assert world.delete("agent_profile", "a1", cascade=True) == 1
    got = _all(world)
    assert ("message", "x2") not in got and ("memory", "um2") not in got
    assert ("agent_profile", "a1") not in got
    assert ("message", "x1") in got and ("fact", "f1") in got and ("user_profile", "u1") in got


def test_sc_8_2_cascade_calls_hook_once_in_one_event(world):
    events: list[DeletionEvent] = []
    world.register_deletion_hook(lambda handle, ev: events.append(ev))
    world.delete("user_profile", "u1", cascade=True)
    assert events, "the deletion hook was not called"
    removed = sorted({r for ev in events for r in ev.records})
    for pair in [("user_profile", "u1"), ("message", "x1"), ("message", "x2"), ("memory", "tm"), ("fact", "f1"),
                 ("fact", "f2"), ("guideline", "g1")]:
        assert pair in removed
    assert ("message", "y1") not in removed and ("memory", "um2") not in removed
    assert any(ev.reason == "cascade" for ev in events)
    assert any("u1" in ev.user_ids for ev in events)


def test_sc_8_2_cascade_is_atomic_when_hook_fails(world):
    before = _all(world)

    def boom(handle, ev):
        raise RuntimeError("hook refuses")

    world.register_deletion_hook(boom)
    with pytest.raises((RuntimeError, StoreError)):
        world.delete("user_profile", "u1", cascade=True)
    assert _all(world) == before


# ---------------------------------------------------------------- SC-8.3 delete_thread
def test_sc_8_3_delete_thread_removes_everything_scoped(world):
    assert world.delete_thread("t1") == 1
    got = _all(world)
    for pair in [("message", "x1"), ("message", "x2"), ("memory", "tm")]:
        assert pair not in got
    for pair in [("fact", "f1"), ("guideline", "g1"), ("message", "y1"), ("user_profile", "u1")]:
        assert pair in got
    assert world.list_thread_messages("t1") == []
    assert "tm" not in hit_ids(world.search(query_vector=vec(1), k=50))
    assert world.delete_thread("t1") == 0


def test_sc_8_3_delete_thread_hook_event(world):
    events: list[DeletionEvent] = []
    world.register_deletion_hook(lambda handle, ev: events.append(ev))
    world.delete_thread("t1")
    assert [ev.reason for ev in events] == ["delete_thread"]
    ev = events[0]
    assert "t1" in ev.thread_ids
    assert sorted(r for r in ev.records if r[0] != "thread") == [("memory", "tm"), ("message", "x1"),
                                                                 ("message", "x2")]
    assert isinstance(ev.memory_store_id, str) and ev.memory_store_id


def test_sc_8_3_delete_thread_atomic_when_hook_fails(world):
    before = _all(world)
    world.register_deletion_hook(lambda h, ev: (_ for _ in ()).throw(RuntimeError("no")))
    with pytest.raises((RuntimeError, StoreError)):
        world.delete_thread("t1")
    assert _all(world) == before


def test_sc_8_3_delete_thread_keyword_rows(kw_store):
    kw_store.add(["zebra a", "zebra b"], record_type="message", record_ids=["a", "b"], thread_ids=["t1", "t2"])
    kw_store.delete_thread("t1")
    assert hit_ids(kw_store.search("zebra", k=5)) == ["b"]


# ---------------------------------------------------------------- SC-8.4 nothing derived remains
def test_sc_8_4_readd_same_id_after_delete(store):
    store.add(["x"], record_type="memory", record_ids="m1", index_texts=[["a", "b", "c"]],
              embeddings=[[vec(1), vec(2), vec(3)]])
    store.delete("memory", "m1")
    store.add(["y"], record_type="memory", record_ids="m1", embeddings=[vec(4)])
    # a single row again: stale rows of the deleted record would show as distance 0 on e1/e2
    assert store.search(query_vector=vec(1), k=5)[0][1] == pytest.approx(1.0, abs=1e-5)
    assert store.update("memory", "m1", embedding=vec(5)) == 1  # exactly one row exists
    assert hit_ids(store.search(query_vector=vec(5), k=5)) == ["m1"]


def test_sc_8_4_readd_after_thread_delete_keyword(kw_store):
    kw_store.add(["zebra"], record_type="memory", record_ids="m1", thread_ids="t")
    kw_store.delete_thread("t")
    kw_store.add(["lion"], record_type="memory", record_ids="m1", thread_ids="t")
    assert kw_store.search("zebra", k=5) == []
    assert hit_ids(kw_store.search("lion", k=5)) == ["m1"]


# ---------------------------------------------------------------- SC-8.5 hooks
def test_sc_8_5_delete_hook_event(store):
    events: list[DeletionEvent] = []
    handles = []

    def hook(handle, ev):
        handles.append(handle)
        events.append(ev)

    store.register_deletion_hook(hook)
    store.add(["a"], record_type="memory", record_ids="m1")
    store.delete("memory", "m1")
    assert len(events) == 1
    ev = events[0]
    assert isinstance(ev, DeletionEvent)
    assert ev.records == (("memory", "m1"),)
    assert ev.reason == "delete"
    assert handles[0] is not None


def test_sc_8_5_no_hook_call_when_nothing_deleted(store):
    events = []
    store.register_deletion_hook(lambda h, ev: events.append(ev))
    store.delete("memory", "missing")
    assert all(ev.records == () for ev in events)


def test_sc_8_5_hook_failure_aborts_delete(store):
    store.add(["a"], record_type="memory", record_ids="m1", embeddings=[vec(1)])

    def boom(handle, ev):
        raise RuntimeError("refused")

    store.register_deletion_hook(boom)
    with pytest.raises((RuntimeError, StoreError)):
        store.delete("memory", "m1")
    assert store.get("memory", "m1") is not None
    assert hit_ids(store.search(query_vector=vec(1), k=1)) == ["m1"]


def test_sc_8_5_several_hooks_all_called(store):
    calls = []
    store.register_deletion_hook(lambda h, ev: calls.append(("one", ev.records)))
    store.register_deletion_hook(lambda h, ev: calls.append(("two", ev.records)))
    store.add(["a"], record_type="fact", record_ids="f1")
    store.delete("fact", "f1")
    assert sorted(calls) == [("one", (("fact", "f1"),)), ("two", (("fact", "f1"),))]


def test_sc_8_5_sqlite_hook_runs_in_same_transaction(store, sqlite_only):
    """On SQLite the hook gets the sqlite3 connection, inside the open delete transaction;
    raising rolls the delete back."""
    from oramem.sqlite._sqlite import sqlite3

    seen = {}

    def hook(conn, ev):
        assert isinstance(conn, sqlite3.Connection)
        seen["in_tx"] = conn.in_transaction
        if ev.records[0][1] == "fail":
            raise RuntimeError("abort")

    store.register_deletion_hook(hook)
    store.add(["a", "b"], record_type="memory", record_ids=["ok", "fail"])
    store.delete("memory", "ok")
    assert seen["in_tx"] is True
    with pytest.raises((RuntimeError, StoreError)):
        store.delete("memory", "fail")
    assert store.get("memory", "fail") is not None


def test_sc_8_4_manual_sync_delete_never_resurfaces(make_store):
    """MANUAL keyword index: a deleted record never comes back from search, synced or not."""
    from oramem import SearchIndexSyncMode, SearchStrategy

    s = make_store(embedder=None, search_strategy=SearchStrategy.KEYWORD,
                   search_index_sync=SearchIndexSyncMode.MANUAL)
    s.add(["zebra one", "zebra two"], record_type="memory", record_ids=["a", "b"], thread_ids=["t1", "t2"])
    s.sync_search_index()
    s.delete("memory", "a")
    s.delete_thread("t2")
    assert s.search("zebra", k=5) == []
    s.sync_search_index()
    assert s.search("zebra", k=5) == []


def test_sc_8_4_hybrid_delete_cleans_both_sides(make_store, hybrid_capable):
    from oramem import SearchStrategy

    s = make_store(search_strategy=SearchStrategy.HYBRID)
    s.add(["zebra one", "zebra two"], record_type="memory", record_ids=["a", "b"], user_ids=["u1", "u2"])
    s.add_user("u1", "zebra owner")
    s.delete("user_profile", "u1", cascade=True)
    for strategy in ("keyword", "vector", "hybrid"):
        assert hit_ids(s.search("zebra", k=5, strategy=strategy)) == ["b"], strategy


# ---------------------------------------------------------------- SC-8.6 forget (store part)
def test_sc_8_6_forget_erases_the_actor_and_nothing_else(store):
    store.add_user("u1", "Ana, a gardener")
    store.add(["mine", "also mine"], record_type="memory", record_ids=["m1", "m2"], user_ids="u1")
    store.add(["hello"], record_type="message", record_ids=["g1"], thread_ids="t1", user_ids="u1", roles="user")
    store.add(["in her thread"], record_type="memory", record_ids=["m3"], thread_ids="t1")
    store.add(["someone else"], record_type="memory", record_ids=["o1"], user_ids="u2", thread_ids="t2")
    counts = store.forget(user_id="u1")
    # profile, m1, m2, g1, m3 (in her thread) and the thread t1 itself, counted under the
    # record table's name (om_<ID>_records on SQLite, OM_<ID>_REC on Oracle)
    assert [n for t, n in counts.items() if t.lower().endswith(("_records", "_rec"))] == [6]
    assert store.get("user_profile", "u1") is None
    assert all(store.get("memory", rid) is None for rid in ("m1", "m2", "m3"))
    assert store.get("message", "g1") is None and ids(store.list("thread")) == ["t2"]
    assert ids(store.list("memory")) == ["o1"]
    assert hit_ids(store.search(query_vector=vec(1), record_types=["memory"], k=10)) == ["o1"]
    with pytest.raises(ValueError, match="exactly one"):
        store.forget(user_id="u2", agent_id="a1")


@pytest.mark.parametrize("how", ERASE_USER_WAYS)
def test_sc_13_3_another_users_expired_record_neither_keeps_nor_goes_with_her_thread(make_store, how):
    """SC-13.3 with SC-5.4 (both engines): Bob's only record in ``t1`` expired, nothing purged
    it (``expired_peer_world``). Erasing Alice takes ``t1`` whole, the agent's reply quoting
    her included; Bob's record is not removed with it (SC-13.1): an update revives it, his
    and unchanged (SC-5.6)."""
    store = make_store(embedder=None, search_strategy="keyword")
    expired_peer_world(store)
    assert store.get("message", "b1") is None
    erase_user(store, "alice", how)
    assert ids(store.list("message")) == ["b2", "r2"]
    assert ids(store.list("thread")) == ["t2"]
    assert store.search("passport", k=5) == []
    assert store.update("message", "b1", ttl_days=5) == 1
    revived = store.get("message", "b1")
    assert revived is not None and (revived.user_id, revived.content) == ("bob", "bob was here once")
