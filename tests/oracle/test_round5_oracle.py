"""Red-team round 5 (2026-12-06 j, helper red17), the checks only a live database can show.
Oracle-marked: skipped, with the reason printed, when no Oracle database is available
(conftest.py). The fixes are tested over the recording fake (tests/oracle/test_colour_parity_fake.py)
and on the PL/SQL text (tests/plsql/test_round5_findings.py). Static-checked, not run against
Oracle: these tests have never run."""

from __future__ import annotations

import json

import pytest

from oramem import OracleDBMemoryStore, SchemaPolicy, StoreError
from oramem.embedders import HashEmbedder

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize("key", ["user_id", "thread_id", "agent_id"])
def test_an_empty_scope_id_is_refused_not_stored_as_none(pool, conn, store_id, key):
    """A PL/SQL caller writing for a user whose id arrived as "" stored a record of no user
    (Oracle's '' is null), shared with Alice and every other user. It is -20001 now."""
    import oracledb

    store = OracleDBMemoryStore(HashEmbedder(8), pool, memory_store_id=store_id,
                                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    record = {"id": "b1", "record_type": "memory", "content": "bob's note", "user_id": "bob", "chunks": []}
    with conn.cursor() as cur:
        with pytest.raises(oracledb.DatabaseError, match="ORA-20001"):
            cur.callfunc("oramem_store.add_json", oracledb.DB_TYPE_CLOB,
                         [store_id, json.dumps({"records": [record | {key: ""}]}), 100])
    assert store.list("memory", user_id=None) == [] and store.get("memory", "b1") is None


def test_her_profile_cascade_without_knowledge_memory_is_refused_on_a_store_with_knowledge(pool, store_id):
    """SC-13.3: Alice's profile cascade on a store with knowledge tables and no KnowledgeMemory
    open refuses before anything is deleted (as forget does); with it open, it erases her."""
    from oramem.knowledge import KnowledgeMemory

    store = OracleDBMemoryStore(HashEmbedder(8), pool, memory_store_id=store_id,
                                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    km = KnowledgeMemory(store, None)
    km.add_fact("a", "Alice", "Alice likes tea", subject_type="person", user_id="alice")
    km.close()
    plain = OracleDBMemoryStore(HashEmbedder(8), pool, memory_store_id=store_id)
    plain.add_user("alice", "Alice")
    with pytest.raises(StoreError, match="nothing was deleted"):
        plain.delete("user_profile", "alice", cascade=True)
    assert plain.get("user_profile", "alice") is not None
    km = KnowledgeMemory(plain, None)
    assert plain.delete("user_profile", "alice", cascade=True) == 1
    assert km.get_all("a", user_id="alice") == []
    km.close()
