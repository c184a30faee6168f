"""The stand-in's list applies ``metadata_filter`` (fake39, 2026-12-07 p).

Before, ``StoreStandIn.list`` ignored the member: a run over the recording fake that listed
with a filter got every row of the type and scope, which ``oramem_store.list_json`` never
returns (it adds the compiled filter to its WHERE, or ``r.metadata IS NULL`` for null). The
stand-in now evaluates the filter with the SQLite engine's compiler, so the same script over
the fake and over ``SQLiteMemoryStore`` lists the same records.
"""

from __future__ import annotations

import json

import oracledb
import pytest

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder

from .fakes import Call
from .plsql_standin import StoreStandIn, standin_store

#: (id, user, metadata): Alice's and Bob's memories, and a shared one of no user
RECORDS = [
    ("a1", "alice", {"topic": "travel", "n": 3, "tags": ["x", "y"]}),
    ("a2", "alice", None),
    ("b1", "bob", {"topic": "travel", "n": 1, "tags": ["y"]}),
    ("b2", "bob", {"topic": "food", "n": 5}),
    ("b3", "bob", None),
    ("s1", None, {"topic": "travel", "n": 2}),
]

#: (user scope or NOT given, filter, what the SQLite engine lists, by id)
CASES = [
    ("bob", {"topic": "travel"}, ["b1"]),
    ("bob", {"n": {"$gte": 2}}, ["b2"]),
    ("bob", {"tags": {"$array_contains": "y"}}, ["b1"]),
    ("bob", {"topic": {"$ne": "travel"}}, ["b2", "b3"]),
    ("bob", {"$or": [{"topic": "food"}, {"n": 1}]}, ["b1", "b2"]),
    ("bob", None, ["b3"]),
    ("bob", {"topic": "opera"}, []),
    ("bob", {"tags": {"$array_contains": "x"}}, []),  # only Alice's a1 has "x"
    (None, {"topic": "travel"}, ["s1"]),
    ("*", {"topic": "travel"}, ["a1", "b1", "s1"]),
]


def _add(store) -> None:
    for rid, user, meta in RECORDS:
        store.add([f"memory {rid}"], "memory", record_ids=rid, user_ids=user, metadata=meta)


def _list(store, user, metadata_filter) -> list[str]:
    kwargs = {} if user == "*" else {"user_id": user}
    return [r.id for r in store.list("memory", metadata_filter=metadata_filter, limit=None, **kwargs)]


@pytest.fixture(scope="module")
def listed():
    """Every case listed over the fake (the stand-in) and over the SQLite engine."""
    fake, rec = standin_store(dim=8)
    lite = SQLiteMemoryStore(":memory:", embedder=HashEmbedder(8))
    try:
        _add(fake)
        _add(lite)
        yield {i: (_list(fake, u, f), _list(lite, u, f)) for i, (u, f, _) in enumerate(CASES)}, rec
    finally:
        fake.close()
        lite.close()


@pytest.mark.parametrize("i", range(len(CASES)), ids=[json.dumps(c[1]) + f"@{c[0]}" for c in CASES])
def test_the_fake_lists_what_the_sqlite_engine_lists(listed, i):
    by_case, _ = listed
    over_fake, over_sqlite = by_case[i]
    assert sorted(over_sqlite) == CASES[i][2], "the SQLite engine's answer (the expectation)"
    assert sorted(over_fake) == sorted(over_sqlite)


def test_bobs_filtered_listing_never_returns_alices_records(listed):
    by_case, rec = listed
    for i, (user, _, _) in enumerate(CASES):
        if user == "bob":
            assert not {rid for rid in by_case[i][0] if rid.startswith("a")}, CASES[i]
    # the filter reached the package call (it is not applied by the driver)
    sent = [json.loads(c.binds["in_request"]) for c in rec.calls if c.name == "oramem_store.list_json"]
    assert {"topic": "opera"} in [r.get("metadata_filter") for r in sent]


def test_a_filter_that_matches_nothing_lists_nothing():
    standin = StoreStandIn()
    standin.add(Call("callfunc", binds={"in_batch": json.dumps({"records": [
        {"id": rid, "record_type": "memory", "user_id": user, "metadata": meta} for rid, user, meta in RECORDS]})}))
    for f in ({"topic": "opera"}, {"n": {"$gt": 100}}, {"$and": [{"topic": "travel"}, {"topic": "food"}]}):
        request = {"record_type": "memory", "limit": None, "metadata_filter": f}
        assert json.loads(standin.list(Call("callfunc", binds={"in_request": json.dumps(request)}))) == []


@pytest.mark.parametrize("bad", [[{"topic": "travel"}], "topic", {"$nor": []}, {"n": {"$gt": [1]}}, {"topic": {}}])
def test_a_filter_the_package_refuses_is_20004_even_with_no_rows(bad):
    """list_json compiles the filter (oramem_filter.compile_filter, -20004) before it reads a
    row, and refuses a member that is neither an object nor null the same way."""
    request = {"record_type": "memory", "metadata_filter": bad}
    with pytest.raises(oracledb.DatabaseError, match="ORA-20004"):
        StoreStandIn().list(Call("callfunc", binds={"in_request": json.dumps(request)}))
