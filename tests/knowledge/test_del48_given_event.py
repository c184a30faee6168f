"""KC-3.6 / KC-2.x (del48, obs47's finding): ``add_knowledge`` records the call as one event
whose text lists the given items, one line each ("Alice: Alice's door code is 4471"), and that
event (its knowledge row and its store ``message`` record) is served by ``retrieve``'s
"Relevant conversations", the store's search and listing, and every export. Deleting the fact
(``delete``, a store-side delete of its record, its TTL purge) left the event quoting it.

Now the event an ``add_knowledge`` call synthesised loses the line of a deleted fact in the
delete's transaction: its text is rewritten from the lines left (its vector re-embedded, or
dropped where no embedder runs), and the event goes when no line is left. An event of a real
conversation message is the conversation and stays; so do the other facts' lines."""

from __future__ import annotations

from typing import Any, Optional

import pytest
import sqlalchemy as sa

from oramem import jsonl
from oramem.sqlite._sqlite import sqlite3

from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"
SECRET = {None: "KUMQUAT4471", "alice": "PERSIMMON8812", "bob": "QUINCE3390"}
PLACE = {None: "Room 12", "alice": "Alice's flat", "bob": "Bob's garage"}


def _items(user: Optional[str], ttl: Optional[int] = None) -> list[dict[str, Any]]:
    code: dict[str, Any] = {"subject": PLACE[user], "fact": f"{PLACE[user]} door code is {SECRET[user]}",
                            "subject_type": "place"}
    if ttl is not None:
        code["ttl_days"] = ttl
    return [code, {"subject": PLACE[user], "fact": f"{PLACE[user]} has a blue door", "subject_type": "place"}]


def _add(km, user: Optional[str], *, together: bool, ttl: Optional[int] = None) -> tuple[str, str]:
    """The code fact and the door fact of ``user``'s scope, in one call or two; their ids."""
    items = _items(user, ttl)
    if together:
        added = km.add_knowledge(AGENT, facts=items, user_id=user).facts_added
        ids = {a["fact_text"]: a["fact_id"] for a in added}
    else:
        ids = {}
        for item in items:
            a = km.add_knowledge(AGENT, facts=[item], user_id=user).facts_added[0]
            ids[a["fact_text"]] = a["fact_id"]
    return ids[items[0]["fact"]], ids[items[1]["fact"]]


def _served(path: str, store, km, user: Optional[str]) -> str:
    """Everything a reader can get of the events: the retrieves of every scope, the store's
    search and listing of message records, the knowledge event rows, both exports."""
    out = []
    for u in (None, "alice", "bob"):
        r = km.retrieve(AGENT, f"door code of {PLACE[user]}", user_id=u)
        out += [r.context, repr(r.events)]
    out += [rec.content or "" for rec, _ in store.search(f"door code {PLACE[user]}", k=50, record_types=["message"])]
    out += [r.content or "" for r in store.list("message", limit=None)]
    ev = km.runtime.tables.event
    with km.runtime.backend.read() as conn:
        out += [r[0] for r in conn.execute(sa.select(ev.c.text))]
    lines: list[str] = []
    jsonl.export_records(store, lines.append)
    engine = sa.create_engine(f"sqlite:///{path}", module=sqlite3)
    try:
        jsonl.export_knowledge(engine, store.memory_store_id, store.vector_dim, lines.append)
    finally:
        engine.dispose()
    out += lines
    return "\n".join(out)


def _delete(how: str, store, km, clock, user: Optional[str], fid: str) -> None:
    if how == "delete":
        assert km.delete(AGENT, fid, user_id=user) is True
    elif how == "store":
        assert store.delete("fact", fid) == 1
    else:
        clock.advance(days=2)
        assert store.purge_expired() >= 1


@pytest.mark.parametrize("together", [True, False])
@pytest.mark.parametrize("how", ["delete", "store", "purge"])
@pytest.mark.parametrize("user", [None, "alice"])
def test_deleted_fact_text_leaves_the_event_that_listed_it(env, how, together, user):  # noqa: F811
    path, store, km, _, clock = env
    code, door = _add(km, user, together=together, ttl=1 if how == "purge" else None)
    other = _add(km, "bob" if user != "bob" else None, together=True)  # another scope's call
    assert SECRET[user] in _served(path, store, km, user)
    _delete(how, store, km, clock, user, code)
    served = _served(path, store, km, user)
    assert SECRET[user] not in served
    # the other fact of the call, and the other scope's call, are still served
    assert f"{PLACE[user]} has a blue door" in served
    assert SECRET["bob" if user != "bob" else None] in served
    assert km.get(AGENT, door, user_id=user) is not None and km.get(AGENT, other[0], user_id="bob" if user != "bob" else None)


def _event_rows(km) -> dict[str, tuple[Optional[str], str, Any]]:
    """Every knowledge event row: id -> (user, text, vector or None)."""
    ev = km.runtime.tables.event
    with km.runtime.backend.read() as conn:
        return {r[0]: (r[1], r[2], r[3]) for r in conn.execute(sa.select(ev.c.id, ev.c.user_id, ev.c.text, ev.c.embedding_vec))}


def _nearest_message(store, text: str) -> float:
    """The distance of the nearest message record to ``text``'s vector (2.0: none)."""
    vec = store.embedder.embed([text])[0]
    hits = store.search(query_vector=vec, k=5, record_types=["message"], strategy="vector")
    return min((float(d) for _, d in hits), default=2.0)


@pytest.mark.parametrize("how", ["delete", "store", "purge"])
def test_no_vector_of_the_old_text_is_left(env, how):  # noqa: F811
    """The rewritten event's vectors (its store record's retrieval row, its knowledge row)
    are not the old text's: dropped, by ``delete`` as by a store-side delete (no embedder runs
    inside the store's delete, and a delete never needs one: the test below)."""
    path, store, km, _, clock = env
    code, _ = _add(km, "alice", together=True, ttl=1 if how == "purge" else None)
    items = _items("alice")
    old = "\n".join(f"{i['subject']}: {i['fact']}" for i in items)
    new = f"{items[1]['subject']}: {items[1]['fact']}"
    assert _nearest_message(store, old) < 1e-4
    _delete(how, store, km, clock, "alice", code)
    assert _nearest_message(store, old) > 1e-3
    [(user, text, vec)] = list(_event_rows(km).values())
    assert (user, text, vec) == ("alice", new, None)
    [record] = store.list("message", limit=None)
    assert record.content == new and record.user_id == "alice"
    assert _nearest_message(store, new) == 2.0  # no vector: vector search does not return it
    # keyword search still finds it (its one retrieval row holds the text left)
    assert [r.id for r, _ in store.search("blue door", k=5, record_types=["message"], strategy="keyword")] == [record.id]


@pytest.mark.parametrize("how", ["delete", "store", "purge"])
def test_an_event_with_no_line_left_goes_and_its_record_with_it(env, how):  # noqa: F811
    path, store, km, _, clock = env
    code, door = _add(km, "alice", together=False, ttl=1 if how == "purge" else None)
    assert len(_event_rows(km)) == 2 and len(store.list("message", limit=None)) == 2
    _delete(how, store, km, clock, "alice", code)
    rows = _event_rows(km)
    assert [t for _, t, _ in rows.values()] == [f"{PLACE['alice']}: {PLACE['alice']} has a blue door"]
    assert [r.content for r in store.list("message", limit=None)] == [t for _, t, _ in rows.values()]
    assert km.get(AGENT, door, user_id="alice").source_event_id == next(iter(rows))


@pytest.mark.parametrize("how", ["delete", "store"])
def test_a_later_call_that_confirmed_the_fact_loses_its_line_too(env, how):  # noqa: F811
    """The same text given again confirms the current fact (NOOP): that call's event lists
    the fact too, and loses the line with it."""
    path, store, km, _, clock = env
    code, _ = _add(km, "alice", together=False)
    clock.advance(minutes=5)
    again = km.add_knowledge(AGENT, facts=[_items("alice")[0], {"subject": "Alice", "fact": "Alice likes tea"}],
                             user_id="alice")
    assert [f["fact_id"] for f in again.facts_unchanged] == [code]
    assert sum(SECRET["alice"] in t for _, t, _ in _event_rows(km).values()) == 2
    _delete(how, store, km, clock, "alice", code)
    served = _served(path, store, km, "alice")
    assert SECRET["alice"] not in served and "Alice: Alice likes tea" in served


@pytest.mark.parametrize("how", ["delete", "store"])
def test_bob_deleting_his_fact_never_touches_alices_events(env, how):  # noqa: F811
    """The same items in two scopes: Bob's delete rewrites his event only."""
    path, store, km, _, clock = env
    items = [{"subject": "Lobby", "fact": "Lobby door code is MANGO5150"}, {"subject": "Lobby", "fact": "Lobby has a lift"}]
    alice = km.add_knowledge(AGENT, facts=items, user_id="alice").facts_added
    bob = km.add_knowledge(AGENT, facts=items, user_id="bob").facts_added
    before = {eid: row for eid, row in _event_rows(km).items() if row[0] == "alice"}
    alice_record = [(r.id, r.content) for r in store.list("message", limit=None, user_id="alice") if r.user_id == "alice"]
    code = next(f["fact_id"] for f in bob if "MANGO" in f["fact_text"])
    if how == "delete":
        assert km.delete(AGENT, code, user_id="bob") is True
    else:
        assert store.delete("fact", code) == 1
    after = _event_rows(km)
    assert {eid: row[:2] for eid, row in after.items() if row[0] == "alice"} == {e: r[:2] for e, r in before.items()}
    assert all(after[e][2] is not None for e in before)  # her vector kept
    assert [(r.id, r.content) for r in store.list("message", limit=None, user_id="alice") if r.user_id == "alice"] == alice_record
    assert [t for u, t, _ in after.values() if u == "bob"] == ["Lobby: Lobby has a lift"]
    assert "MANGO5150" in km.retrieve(AGENT, "lobby door code", user_id="alice").context
    assert all(km.get(AGENT, f["fact_id"], user_id="alice") is not None for f in alice)


def test_retract_keeps_the_event(env):  # noqa: F811
    """Decision (KC-3.6 [ext]): ``retract_fact`` ends the fact's validity, it does not erase
    it (it stays in ``history``, text and all), so the event that recorded the call keeps
    its line; ``delete`` erases."""
    path, store, km, _, clock = env
    code, _ = _add(km, "alice", together=True)
    assert km.retract_fact(AGENT, code, user_id="alice") is True
    assert [h.fact_text for h in km.history(AGENT, code, user_id="alice")] == [_items("alice")[0]["fact"]]
    assert [SECRET["alice"] in t for _, t, _ in _event_rows(km).values()] == [True]


def test_a_message_event_is_the_conversation_and_stays(env):  # noqa: F811
    """An event written from a message (``write``) has no ``given`` lines: deleting a fact
    learnt from it leaves the message as it was said."""
    path, store, km, llm, clock = env
    said = "Our door code is KUMQUAT4471, and the door is blue."
    km.add_knowledge(AGENT, facts=[{"subject": "Room 12", "fact": "Room 12 door code is KUMQUAT4471"}])
    ev = km.runtime.tables.event
    fid = km.get_all(AGENT)[0].fact_id
    with km.runtime.backend.write("test", AGENT) as conn:  # the event as a message's would be: no given lines
        conn.execute(sa.update(ev).values(text=said, trace_json={"status": "ok"}))
    assert km.delete(AGENT, fid) is True
    assert [t for _, t, _ in _event_rows(km).values()] == [said]


def test_a_delete_needs_no_embedder(env):  # noqa: F811
    """Stripping the deleted fact's line from the event's store record re-embedded it through
    ``store.update``, so with the embedding service unreachable (or the store moved by another
    process's ``reembed``) ``delete`` of the fact raised and the fact stayed. Now the record
    keeps the lines left without a vector, as the store-side hook leaves it: the delete goes
    through with the embedder down."""
    path, store, km, _, clock = env
    code, door = _add(km, "alice", together=True)
    items = _items("alice")

    def down(*_a: Any, **_k: Any) -> Any:
        raise ConnectionError("embedding service unreachable")

    store.embedder.embed = down  # type: ignore[method-assign]
    store.embedder.embed_async = down  # type: ignore[method-assign]
    assert km.delete(AGENT, code, user_id="alice")
    assert {f.id for f in km.get_all(AGENT, user_id="alice")} == {door}
    [record] = store.list("message", limit=None)
    assert record.content == f"{items[1]['subject']}: {items[1]['fact']}"
    assert SECRET["alice"] not in record.content


def test_a_delete_goes_through_a_firewall_policy_set_since(env):  # noqa: F811
    """The lines left are screened by ``store.update``: under a policy set after the call
    (secrets rejected) that refuses them, the delete of the other fact raised
    FirewallRejected and kept it. Now the event's record goes instead (more is removed, never
    less), and the fact is deleted."""
    from oramem.trust.firewall import FirewallPolicy

    path, store, km, _, clock = env
    key = "AK" + "IA" + "Q7X2M4P9R3T5V8W1"
    added = km.add_knowledge(AGENT, facts=[
        {"subject": "Room 12", "fact": "Room 12 door code is 4471", "subject_type": "place"},
        {"subject": "Room 12", "fact": f"Room 12 vault key is {key}", "subject_type": "place"},
    ], user_id="alice").facts_added
    code = next(a["fact_id"] for a in added if "4471" in a["fact_text"])
    store.set_firewall(FirewallPolicy(secret="reject"))
    assert km.delete(AGENT, code, user_id="alice")
    assert all("4471" not in f.fact_text for f in km.get_all(AGENT, user_id="alice"))
    assert all("4471" not in (r.content or "") for r in store.list("message", limit=None))
