"""Red-team rounds 4 (2026-12-06 i, helper red13) and 5 (2026-12-06 j, helper red16), the
checks only a live database can show: the PL/SQL list and search APIs called directly by a
caller acting for Bob, over a store that holds Alice's record. Oracle-marked: skipped, with the
reason printed, when no Oracle database is available (conftest.py). The text of the fixes is
tested in tests/plsql/test_round4_findings.py and test_round5_findings.py.
Static-checked, not run against Oracle."""

from __future__ import annotations

import json

import pytest

from oramem import OracleDBMemoryStore, SchemaPolicy
from oramem.embedders import HashEmbedder

pytestmark = pytest.mark.oracle

MALFORMED = [
    "bob",                                   # the bare id
    {"match": 1, "value": "bob"},            # a match that is not a string
    {"match": "equals", "value": 7},         # a value that is not a string
    ["equals", "bob"],
]


def _alice_and_bob(pool, store_id):
    """A store holding Alice's record and Bob's, a query vector near hers, and a search request."""
    store = OracleDBMemoryStore(HashEmbedder(8), pool, memory_store_id=store_id,
                                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    store.add(["alice secret plan"], "memory", record_ids=["a1"], user_ids="alice")
    store.add(["bob shopping list"], "memory", record_ids=["b1"], user_ids="bob")
    vector = [float(x) for x in HashEmbedder(8).embed(["alice secret plan"])[0]]
    return store, vector, {"strategy": "vector", "k": 10, "query_vector": vector, "record_types": ["memory"]}


def _both_refuse(cur, store_id, request, user) -> None:
    """``search_json`` and ``list_json`` called with the scope ``user`` both raise -20002."""
    import oracledb

    with pytest.raises(oracledb.DatabaseError, match="ORA-20002"):
        cur.callfunc("oramem_search.search_json", oracledb.DB_TYPE_CLOB, [store_id, json.dumps(request | {"user": user})])
    with pytest.raises(oracledb.DatabaseError, match="ORA-20002"):
        cur.callfunc("oramem_store.list_json", oracledb.DB_TYPE_CLOB,
                     [store_id, json.dumps({"record_type": "memory", "user": user})])


@pytest.mark.parametrize("user", MALFORMED, ids=["bare-id", "match-number", "value-number", "array"])
def test_bobs_malformed_user_scope_is_refused_not_read_as_every_user(pool, conn, store_id, user):
    import oracledb

    store, vector, request = _alice_and_bob(pool, store_id)
    with conn.cursor() as cur:
        scoped = json.loads(cur.callfunc("oramem_search.search_json", oracledb.DB_TYPE_CLOB, [
            store_id, json.dumps(request | {"user": {"match": "equals", "value": "bob"}})]).read())
        assert [hit["record"]["id"] for hit in scoped] == ["b1"]
        # before the fix: no scope at all, Alice's record first (list_json refused these already)
        _both_refuse(cur, store_id, request, user)


# red-team round of 2026-12-06 j (helper red16): a scope value whose match is not ``equals``
# (the text of the fix: tests/plsql/test_round5_findings.py)
IGNORED_VALUE = [
    {"value": "bob"},                        # no match
    {"match": None, "value": "bob"},
    {"match": "any", "value": "bob"},
    {"match": "is_null", "value": "bob"},
]


@pytest.mark.parametrize("user", IGNORED_VALUE, ids=["no-match", "null-match", "any", "is-null"])
def test_bobs_scope_value_without_equals_is_refused_not_read_as_every_user(pool, conn, store_id, user):

    store, vector, request = _alice_and_bob(pool, store_id)
    with conn.cursor() as cur:
        # before the fix: no user condition, Alice's record first
        _both_refuse(cur, store_id, request, user)
    # the driver's own scopes still work
    assert [r.id for r in store.list("memory", user_id="bob")] == ["b1"]
    assert [r.id for r, _ in store.search(query_vector=vector, user_id="bob", record_types=["memory"])] == ["b1"]
