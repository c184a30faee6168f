"""Red-team round red32 (2026-12-07 o), the check only a live database can show: the PL/SQL
list and search APIs called directly for Bob with a request spelled as the add batch and the
record object spell a scope (``"user_id"``), over a store that holds Alice's record.
Oracle-marked: skipped, with the reason printed, when no Oracle database is available
(conftest.py). The text of the fix is tested in tests/plsql/test_red32_request_keys.py.
Static-checked, not run against Oracle."""

from __future__ import annotations

import json

import pytest

from .test_round4_oracle import _alice_and_bob

pytestmark = pytest.mark.oracle

UNREAD = [
    {"user_id": "bob"},                                   # the add batch's / the record's spelling
    {"user_id": {"match": "equals", "value": "bob"}},
    {"users": ["bob"]},
    {"user": {"match": "equals", "value": "bob", "agent": "desk"}},   # a scope member it does not read
]


@pytest.mark.parametrize("extra", UNREAD, ids=["user_id", "user_id-object", "users", "scope-member"])
def test_bobs_request_member_the_call_does_not_read_is_refused_not_ignored(pool, conn, store_id, extra):
    import oracledb

    store, vector, request = _alice_and_bob(pool, store_id)
    with conn.cursor() as cur:
        # before the fix: the member was ignored, no user condition, Alice's record listed and found
        with pytest.raises(oracledb.DatabaseError, match="ORA-20002"):
            cur.callfunc("oramem_search.search_json", oracledb.DB_TYPE_CLOB, [store_id, json.dumps(request | extra)])
        with pytest.raises(oracledb.DatabaseError, match="ORA-20002"):
            cur.callfunc("oramem_store.list_json", oracledb.DB_TYPE_CLOB,
                         [store_id, json.dumps({"record_type": "memory"} | extra)])
    # the driver's own requests still work
    assert [r.id for r in store.list("memory", user_id="bob")] == ["b1"]
    assert [r.id for r, _ in store.search(query_vector=vector, user_id="bob", record_types=["memory"])] == ["b1"]


def test_bobs_record_with_a_member_add_does_not_read_is_refused_not_stored_as_no_users(pool, conn, store_id):
    import oracledb

    store, vector, _ = _alice_and_bob(pool, store_id)
    record = {"id": "b9", "record_type": "memory", "content": "bob private", "user": "bob",
              "chunks": [{"text": "bob private", "vector": vector}]}
    with conn.cursor() as cur:
        # before the fix: stored with user_id NULL (his erasure left it; unscoped readers got it)
        with pytest.raises(oracledb.DatabaseError, match="ORA-20002"):
            cur.callfunc("oramem_store.add_json", oracledb.DB_TYPE_CLOB, [store_id, json.dumps({"records": [record]})])
        with pytest.raises(oracledb.DatabaseError, match="ORA-20002"):
            cur.callfunc("oramem_store.update_json", oracledb.DB_TYPE_NUMBER,
                         [store_id, json.dumps({"record_type": "memory", "record_id": "b1", "text": "x",
                                                "metadata": {"k": 1}})])
        conn.rollback()
    assert store.get("memory", "b9") is None
    assert store.get("memory", "b1").metadata is None
