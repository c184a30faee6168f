"""SC-2: record types, scope, threads, profiles."""

from __future__ import annotations

import pytest

from ._support import ids, snapshot

BAD_TYPE = "note"


def _assert_names_types(excinfo):
    msg = str(excinfo.value)
    for t in ("message", "memory", "guideline", "fact", "preference"):
        assert t in msg, f"error message should list accepted type {t!r}: {msg}"


def test_sc_2_1_unknown_type_add_is_value_error_naming_types(store):
    before = snapshot(store)
    with pytest.raises(ValueError) as ei:
        store.add(["x"], record_type=BAD_TYPE)
    _assert_names_types(ei)
    assert snapshot(store) == before


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.get(BAD_TYPE, "x"),
        lambda s: s.list(BAD_TYPE),
        lambda s: s.update(BAD_TYPE, "x", metadata={"a": 1}),
        lambda s: s.delete(BAD_TYPE, "x"),
        lambda s: s.search("x", record_types={BAD_TYPE}),
    ],
    ids=["get", "list", "update", "delete", "search"],
)
def test_sc_2_1_unknown_type_rejected_on_every_entry_point(store, call):
    store.add(["x"], record_type="memory", record_ids="m1")
    with pytest.raises(ValueError):
        call(store)
    assert ids(store.list("memory")) == ["m1"]


@pytest.mark.parametrize("rtype", ["message", "memory", "guideline", "fact", "preference"])
def test_sc_2_1_every_scoped_type_round_trips(store, rtype):
    out = store.add(["hello " + rtype], record_type=rtype, record_ids="r1", thread_ids="t1", user_ids="u1", agent_ids="a1")
    assert out == ["r1"]
    r = store.get(rtype, "r1")
    assert (r.id, r.record_type, r.content, r.thread_id, r.user_id, r.agent_id) == (
        "r1", rtype, "hello " + rtype, "t1", "u1", "a1")
    # types are separate namespaces for get
    other = "memory" if rtype != "memory" else "fact"
    assert store.get(other, "r1") is None


def test_sc_2_2_scope_values_may_be_none(store):
    store.add(["a", "b"], record_type="memory", record_ids=["m1", "m2"], thread_ids=[None, "t"], user_ids=["u", None], agent_ids=None)
    r1, r2 = store.get("memory", "m1"), store.get("memory", "m2")
    assert (r1.thread_id, r1.user_id, r1.agent_id) == (None, "u", None)
    assert (r2.thread_id, r2.user_id, r2.agent_id) == ("t", None, None)


@pytest.mark.parametrize("rtype", ["memory", "guideline", "fact", "preference"])
def test_sc_2_2_role_only_for_messages(store, rtype):
    before = snapshot(store)
    with pytest.raises(ValueError) as ei:
        store.add(["x"], record_type=rtype, roles="user")
    assert "role" in str(ei.value)
    assert snapshot(store) == before


def test_sc_2_2_message_role_is_stored(store):
    store.add(["hi", "hello"], record_type="message", record_ids=["a", "b"], thread_ids="t1", roles=["user", "assistant"])
    assert store.get("message", "a").role == "user"
    assert store.get("message", "b").role == "assistant"


def test_sc_2_3_thread_created_implicitly_and_deletable(store):
    store.add(["m"], record_type="memory", record_ids="m1", thread_ids="t-implicit")
    assert store.delete_thread("t-implicit") == 1
    assert store.get("memory", "m1") is None
    assert store.delete_thread("t-implicit") == 0


def test_sc_2_3_delete_unknown_thread_returns_zero(store):
    assert store.delete_thread("never-seen") == 0


def test_sc_2_3_thread_created_by_message_write(store):
    store.add(["hi"], record_type="message", record_ids="x1", thread_ids="t-msg", roles="user")
    assert store.delete_thread("t-msg") == 1


def test_sc_2_4_add_user_and_agent_return_id(store):
    assert store.add_user("u-1", "Likes tea", metadata={"tier": "gold"}) == "u-1"
    assert store.add_agent("a-1", "Support bot") == "a-1"
    u = store.get("user_profile", "u-1")
    a = store.get("agent_profile", "a-1")
    assert (u.id, u.record_type, u.content, u.metadata) == ("u-1", "user_profile", "Likes tea", {"tier": "gold"})
    assert (a.id, a.record_type, a.content, a.metadata) == ("a-1", "agent_profile", "Support bot", None)
    # a user and an agent are separate namespaces
    assert store.get("agent_profile", "u-1") is None


def test_sc_2_4_duplicate_profile_is_value_error(store):
    store.add_user("u-1", "first")
    store.add_agent("a-1", "first")
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.add_user("u-1", "second")
    with pytest.raises(ValueError):
        store.add_agent("a-1", "second")
    assert snapshot(store) == before
    assert store.get("user_profile", "u-1").content == "first"


@pytest.mark.parametrize(
    "kwargs",
    [{"thread_ids": "t1"}, {"user_ids": "u9"}, {"agent_ids": "a9"}, {"roles": "user"}, {"ttl_days": 3}],
    ids=["thread", "user", "agent", "role", "ttl"],
)
@pytest.mark.parametrize("rtype", ["user_profile", "agent_profile"])
def test_sc_2_4_profiles_reject_scope_role_ttl(store, rtype, kwargs):
    before = snapshot(store)
    with pytest.raises(ValueError):
        store.add(["info"], record_type=rtype, record_ids="p1", **kwargs)
    assert snapshot(store) == before
