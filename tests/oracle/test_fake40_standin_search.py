"""The stand-in's search returns the records ``oramem_search.search_json`` may return (fake40,
2026-12-07 q), and its add / update keep the ttl as the package does.

Before, ``StoreStandIn.search`` answered ``[]`` whatever was stored, so no run over the
recording fake could see which records a search returns: a scope that leaked Alice's record
to Bob, or an expired record, passed unseen. Its ``update`` never applied a ``ttl`` (the
record's expires_at stayed), and its ``add`` checked a ttl's member names only. Now the
search builds the package's candidate set (record types, expiry, the SC-6.2 scope of
``oramem_filter.scope_condition``, the metadata filter) and ranks it by the stand-in's own
simple distance (its module docstring: which records, not their scores); the same script over
the fake and over ``SQLiteMemoryStore`` returns the same records.
"""

from __future__ import annotations

import json

import oracledb
import pytest

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder

from .fakes import Call
from .plsql_standin import StoreStandIn, standin_store

#: (type, id, user, thread, metadata, ttl_days): Alice's and Bob's records, a shared one, a
#: thread's message, Bob's expired memory (ttl 0 days: expired as it is written)
RECORDS = [
    ("memory", "a1", "alice", None, {"topic": "travel"}, None),
    ("memory", "a2", "alice", "t1", None, None),
    ("memory", "b1", "bob", None, {"topic": "travel"}, None),
    ("memory", "b2", "bob", None, {"topic": "food"}, None),
    ("memory", "bx", "bob", None, {"topic": "travel"}, 0),
    ("memory", "s1", None, None, {"topic": "travel"}, None),
    ("preference", "p1", "bob", None, None, None),
    ("message", "m1", "bob", "t1", None, None),
]

#: (search arguments, what the SQLite engine returns, by id)
CASES = [
    ({"user_id": "bob"}, ["b1", "b2", "bob", "m1", "p1"]),
    ({"user_id": "alice"}, ["a1", "a2", "alice"]),
    ({"user_id": "bob", "record_types": ["memory"]}, ["b1", "b2"]),
    ({"user_id": "bob", "metadata_filter": {"topic": "travel"}}, ["b1"]),
    ({"user_id": "bob", "thread_id": "t1"}, ["m1"]),
    ({"thread_id": "t1"}, ["a2", "m1"]),
    ({"exact_user_match": True}, ["s1"]),
    ({"exact_thread_match": True, "user_id": "alice"}, ["a1", "alice"]),
    ({"record_types": ["user_profile"]}, ["alice", "bob"]),
    ({"metadata_filter": {"topic": "travel"}}, ["a1", "b1", "s1"]),
    ({}, ["a1", "a2", "alice", "b1", "b2", "bob", "m1", "p1", "s1"]),
]


def _add(store) -> None:
    for rtype, rid, user, thread, meta, ttl in RECORDS:
        kwargs = {"roles": "user"} if rtype == "message" else {}
        if ttl is not None:
            kwargs["ttl_days"] = ttl
        store.add([f"{user or 'everyone'} drinks tea ({rid})"], rtype, record_ids=rid, user_ids=user,
                  thread_ids=thread, metadata=meta, **kwargs)
    store.add_user("alice", "Alice drinks tea")
    store.add_user("bob", "Bob drinks tea")


def _search(store, kwargs) -> list[str]:
    return [r.id for r, _ in store.search("who drinks tea?", k=50, **kwargs)]


@pytest.fixture(scope="module")
def searched():
    """Every case searched over the fake (the stand-in) and over the SQLite engine."""
    fake, rec = standin_store(dim=8)
    lite = SQLiteMemoryStore(":memory:", embedder=HashEmbedder(8))
    try:
        _add(fake)
        _add(lite)
        yield {i: (_search(fake, kw), _search(lite, kw)) for i, (kw, _) in enumerate(CASES)}, rec
    finally:
        fake.close()
        lite.close()


@pytest.mark.parametrize("i", range(len(CASES)), ids=[json.dumps(c[0]) for c in CASES])
def test_the_fake_searches_the_records_the_sqlite_engine_searches(searched, i):
    by_case, _ = searched
    over_fake, over_sqlite = by_case[i]
    assert sorted(over_sqlite) == CASES[i][1], "the SQLite engine's answer (the expectation)"
    assert sorted(over_fake) == sorted(over_sqlite)


def test_bobs_search_never_returns_alices_records(searched):
    by_case, rec = searched
    for i, (kwargs, expected) in enumerate(CASES):
        if kwargs.get("user_id") == "bob":
            found = by_case[i][0]
            assert found, kwargs   # Bob finds his own records ...
            assert not {rid for rid in found if rid.startswith("a") or rid == "alice"}, kwargs  # ... never hers
    # the scope reached the package call (it is not applied by the driver)
    sent = [json.loads(c.binds["in_request"]) for c in rec.calls if c.name == "oramem_search.search_json"]
    assert {"match": "equals", "value": "bob"} in [r.get("user") for r in sent]


def test_an_expired_record_is_not_returned_and_a_new_ttl_revives_it():
    store, _ = standin_store(dim=8)
    try:
        store.add(["Bob drinks tea"], "memory", record_ids="b1", user_ids="bob")
        store.add(["Bob drank tea"], "memory", record_ids="bx", user_ids="bob", ttl_days=0)
        assert [r.id for r, _ in store.search("tea", k=5, user_id="bob")] == ["b1"]
        # SC-5.6: an update without a ttl does not touch an expired record; a ttl revives it
        assert store.update("memory", "bx", text="Bob drinks coffee") == 0
        assert store.update("memory", "b1", ttl_days=0) == 1     # the stand-in's update applies the ttl
        assert store.search("tea", k=5, user_id="bob") == []
        assert store.update("memory", "bx", ttl_days=None) == 1
        assert [r.id for r, _ in store.search("tea", k=5, user_id="bob")] == ["bx"]
    finally:
        store.close()


def _standin_with(*records: dict, now: str = StoreStandIn.NOW) -> StoreStandIn:
    standin = StoreStandIn(vector_dim=2, now=now)
    standin.add(Call("callfunc", binds={"in_batch": json.dumps({"records": list(records)})}))
    return standin


def _update(standin: StoreStandIn, **request) -> int:
    return standin.update(Call("callfunc", binds={"in_request": json.dumps(request)}))


def test_update_applies_the_ttl_from_the_anchor_ttl_expiry_reads():
    standin = _standin_with({"id": "b1", "record_type": "memory", "user_id": "bob", "content": "tea",
                             "timestamp": "2024-12-30T08:00:00+01:00"})
    rec = standin.records[("memory", "b1")]
    assert rec["created_at"] == "2025-01-01T12:00:00.000000+00:00" and rec["expires_at"] is None
    assert _update(standin, record_type="memory", record_id="b1", ttl={"days": 3}) == 1
    assert rec["expires_at"] == "2025-01-04T12:00:00.000000+00:00"          # created_at + 3 days
    assert _update(standin, record_type="memory", record_id="b1", ttl={"days": 3, "anchor": "TIMESTAMP"}) == 1
    assert rec["expires_at"] == "2025-01-02T07:00:00.000000+00:00"          # the timestamp (UTC) + 3 days
    # a new timestamp in the same update is the anchor (l_event_ts := l_ts before ttl_expiry)
    assert _update(standin, record_type="memory", record_id="b1", timestamp="2025-01-10T00:00:00Z",
                   ttl={"days": 1, "anchor": "timestamp"}) == 1
    assert rec["expires_at"] == "2025-01-11T00:00:00.000000+00:00"
    assert _update(standin, record_type="memory", record_id="b1", ttl={"days": None}) == 1
    assert rec["expires_at"] is None
    with pytest.raises(oracledb.DatabaseError, match="ORA-20001"):
        _update(standin, record_type="memory", record_id="b1", ttl={"days": 3_000_000})
    assert rec["expires_at"] is None


def test_a_timestamp_anchor_on_a_record_without_timestamp_is_20008():
    standin = _standin_with({"id": "b1", "record_type": "memory", "user_id": "bob", "content": "tea"})
    with pytest.raises(oracledb.DatabaseError, match="ORA-20008"):
        _update(standin, record_type="memory", record_id="b1", ttl={"days": 3, "anchor": "timestamp"})
    assert standin.records[("memory", "b1")]["expires_at"] is None


BAD_TTLS = [
    ({"days": -1}, "ORA-20001"), ({"days": 1.5}, "ORA-20001"), ({"days": "3"}, "ORA-20002"),
    ({"days": 3, "anchor": "updated_at"}, "ORA-20001"), ({"days": 3, "anchor": 1}, "ORA-20002"), (3, "ORA-20002"),
]


@pytest.mark.parametrize("ttl,error", BAD_TTLS)
def test_add_refuses_a_ttl_check_ttl_refuses_and_stores_nothing(ttl, error):
    """add_json reads a record's ttl through ttl_expiry, hence check_ttl: its value rules, not
    only its member names (the stand-in checked only those); the whole batch is refused."""
    standin = StoreStandIn(vector_dim=2)
    batch = {"records": [{"id": "b0", "record_type": "memory", "user_id": "bob", "content": "ok"},
                         {"id": "b1", "record_type": "memory", "user_id": "bob", "content": "tea", "ttl": ttl}]}
    with pytest.raises(oracledb.DatabaseError, match=error):
        standin.add(Call("callfunc", binds={"in_batch": json.dumps(batch)}))
    assert standin.records == {}


def test_add_refuses_a_ttl_on_a_profile_and_ttl_with_restored_times():
    standin = StoreStandIn(vector_dim=2)
    for record in ({"id": "bob", "record_type": "user_profile", "content": "Bob", "ttl": {"days": 3}},
                   {"id": "b1", "record_type": "memory", "content": "tea", "ttl": {"days": 3},
                    "restored_times": {"created_at": "2024-01-01T00:00:00Z", "expires_at": None}}):
        with pytest.raises(oracledb.DatabaseError, match="ORA-20001"):
            standin.add(Call("callfunc", binds={"in_batch": json.dumps({"records": [record]})}))
    assert standin.records == {}


def _search_standin(standin: StoreStandIn, **request) -> list[str]:
    reply = standin.search(Call("callfunc", binds={"in_request": json.dumps(request)}))
    return [h["record"]["id"] for h in json.loads(reply)]


def test_the_keyword_and_hybrid_legs_return_records_that_contain_a_query_word():
    standin = _standin_with(
        {"id": "b1", "record_type": "memory", "user_id": "bob", "content": "Bob drinks tea",
         "chunks": [{"text": "Bob drinks tea", "vector": [1.0, 0.0]}]},
        {"id": "b2", "record_type": "memory", "user_id": "bob", "content": "Bob plays chess",
         "chunks": [{"text": "Bob plays chess", "vector": [0.0, 1.0]}]},
        {"id": "a1", "record_type": "memory", "user_id": "alice", "content": "Alice drinks tea",
         "chunks": [{"text": "Alice drinks tea", "vector": [1.0, 0.0]}]},
        {"id": "n1", "record_type": "memory", "user_id": "bob", "content": "tea, no retrieval row"})
    bob = {"match": "equals", "value": "bob"}
    assert _search_standin(standin, strategy="keyword", k=5, query_text="tea", user=bob) == ["b1"]
    assert _search_standin(standin, strategy="keyword", k=5, query_text="tea") == ["a1", "b1"]
    assert _search_standin(standin, strategy="keyword", k=5, query_text="...", user=bob) == []
    assert _search_standin(standin, strategy="vector", k=5, query_vector=[0.0, 1.0], user=bob) == ["b2", "b1"]
    assert _search_standin(standin, strategy="vector", k=1, query_vector=[0.0, 1.0], user=bob) == ["b2"]
    assert _search_standin(standin, strategy="hybrid", k=5, query_text="tea", query_vector=[0.0, 1.0],
                           user=bob) == ["b1", "b2"]


@pytest.mark.parametrize("request_,error", [
    ({"k": 5, "query_vector": [1.0, 0.0], "user": {"value": "bob"}}, "ORA-20002"),     # a value without equals
    ({"k": 5, "query_vector": [1.0, 0.0], "user": "bob"}, "ORA-20002"),
    ({"k": 5, "query_vector": [1.0, 0.0], "user": {"match": "equals"}}, "ORA-20001"),
    ({"k": 5, "query_vector": [1.0, 0.0], "user": {"match": "equals", "value": " "}}, "ORA-20001"),
    ({"k": 5, "query_vector": [1.0, 0.0], "record_types": "memory"}, "ORA-20003"),
    ({"k": 5, "query_vector": [1.0, 0.0], "record_types": ["memories"]}, "ORA-20003"),
    ({"k": 5, "query_vector": [1.0, 0.0], "metadata_filter": ["topic"]}, "ORA-20004"),
    ({"k": 5, "query_vector": [1.0, 0.0, 0.0]}, "ORA-20006"),
    ({"k": 0, "query_vector": [1.0, 0.0]}, "ORA-20001"),
    ({"k": 5}, "ORA-20001"),
    ({"k": 5, "strategy": "keyword"}, "ORA-20001"),
])
def test_a_search_the_package_refuses_is_refused_even_with_no_rows(request_, error):
    with pytest.raises(oracledb.DatabaseError, match=error):
        _search_standin(StoreStandIn(vector_dim=2), **request_)


@pytest.mark.parametrize("record,error", [
    ({"record_type": "memory", "content": "tea"}, "ORA-20001"),                                # no id
    ({"id": "b1", "record_type": "gadget", "content": "tea"}, "ORA-20003"),
    ({"id": "b1", "record_type": "memory", "timestamp": "yesterday"}, "ORA-20007"),
    ({"id": "b1", "record_type": "memory", "restored_times": "2024-01-01"}, "ORA-20002"),
    ({"id": "b1", "record_type": "memory", "restored_times": {"expires_at": None}}, "ORA-20001"),
    ({"id": "bob", "record_type": "user_profile", "content": "Bob",
      "restored_times": {"created_at": "2024-01-01T00:00:00Z", "expires_at": "2024-02-01T00:00:00Z"}}, "ORA-20001"),
])
def test_add_refuses_the_times_add_json_refuses_and_stores_nothing(record, error):
    standin = StoreStandIn(vector_dim=2)
    with pytest.raises(oracledb.DatabaseError, match=error):
        standin.add(Call("callfunc", binds={"in_batch": json.dumps({"records": [record]})}))
    assert standin.records == {}


def test_add_keeps_restored_times():
    standin = _standin_with({"id": "k1", "record_type": "memory", "user_id": "bob", "content": "kept",
                             "restored_times": {"created_at": "2024-01-01T00:00:00+02:00",
                                                "expires_at": "2024-03-01T00:00:00Z"}})
    rec = standin.records[("memory", "k1")]
    assert (rec["created_at"], rec["expires_at"]) == ("2023-12-31T22:00:00.000000+00:00",
                                                      "2024-03-01T00:00:00.000000+00:00")
