"""SC-2.2 / docs/store-decisions.md "Identifiers": an id that is only white space (record,
thread, user, agent) names no one and is refused with a ValueError that says what to do,
before anything is written, on every entry point; an id with a visible character is kept
verbatim, its leading and trailing spaces included (ids are exact-match keys, never
stripped). Before the fix " " and "\\t" were stored as ids and scope values (left34)."""

from __future__ import annotations

import pytest

from ._support import snapshot

BLANKS = [" ", "\t", "  \n", "\u00a0", "\u3000"]


@pytest.mark.parametrize("blank", BLANKS)
@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda s, b: s.add(["x"], "memory", record_ids=b), id="record_ids"),
        pytest.param(lambda s, b: s.add(["x", "y"], "memory", record_ids=["ok-1", b]), id="record_ids-list"),
        pytest.param(lambda s, b: s.add(["x"], "memory", user_ids=b), id="user_ids"),
        pytest.param(lambda s, b: s.add(["x", "y"], "memory", user_ids=["alice", b]), id="user_ids-list"),
        pytest.param(lambda s, b: s.add(["x"], "memory", agent_ids=b), id="agent_ids"),
        pytest.param(lambda s, b: s.add(["x"], "message", thread_ids=b, roles="user"), id="thread_ids"),
        pytest.param(lambda s, b: s.add_user(b, "info"), id="add_user"),
        pytest.param(lambda s, b: s.add_agent(b, "info"), id="add_agent"),
    ],
)
def test_a_blank_id_is_refused_on_write_and_nothing_is_stored(store, call, blank):
    before = snapshot(store)
    with pytest.raises(ValueError, match="only white space; give an id with a visible character"):
        call(store, blank)
    assert snapshot(store) == before


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda s: s.get("memory", " "), id="get"),
        pytest.param(lambda s: s.update("memory", " ", text="y"), id="update"),
        pytest.param(lambda s: s.delete("memory", " "), id="delete"),
        pytest.param(lambda s: s.delete("user_profile", " ", cascade=True), id="cascade"),
        pytest.param(lambda s: s.delete_thread(" "), id="delete_thread"),
        pytest.param(lambda s: s.list_thread_messages(" "), id="list_thread_messages"),
        pytest.param(lambda s: s.list("memory", user_id=" "), id="list-user"),
        pytest.param(lambda s: s.list("memory", thread_id="\t"), id="list-thread"),
        pytest.param(lambda s: s.search("x", agent_id=" "), id="search-agent"),
    ],
)
def test_a_blank_id_is_refused_on_read_update_and_delete(store, call):
    store.add(["x"], "memory", record_ids="r1", user_ids="alice")
    before = snapshot(store)
    with pytest.raises(ValueError, match="only white space"):
        call(store)
    assert snapshot(store) == before


def test_leading_and_trailing_spaces_are_kept_verbatim(store):
    """The decision written in docs/store-decisions.md: " alice" is an id of its own, not
    "alice" (no silent strip that would merge or split two users)."""
    store.add(["a"], "memory", record_ids=" r1 ", user_ids=" alice")
    store.add(["b"], "memory", record_ids="r1", user_ids="alice")
    assert store.get("memory", " r1 ").user_id == " alice"
    assert [r.id for r in store.list("memory", user_id=" alice")] == [" r1 "]
    assert [r.id for r in store.list("memory", user_id="alice")] == ["r1"]
