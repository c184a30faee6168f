"""Contract checks of store findings of reviews/oracle-store.md that only a live database can
show (S6 filter keys, S7 numbers outside NUMBER's range, S23 the set-based writes, S24 the
list indexes and the store schema version 2 upgrade). The same inputs run on the SQLite
engine here, so both engines are held to one answer. Oracle-marked: skipped, with the reason
printed, when no Oracle database is available (conftest.py). Static-checked, not run
against Oracle."""

from __future__ import annotations

import json

import pytest

from oramem import OracleDBMemoryStore, SchemaPolicy, SQLiteMemoryStore
from oramem.embedders import HashEmbedder

pytestmark = pytest.mark.oracle

# keys the old allow-list refused with -20004 (S6), and numbers NUMBER cannot hold (S7)
KEYS = ['q"t', "ap'o", "d$x", "b\\s", "[0]", "s*r", "🙂", "\t", "a$.b", "x' OR '1'='1", "ctl\x01\x1f"]
FILTERS = [{k: 1} for k in KEYS] + [
    {'q"t': {"$exists": True}}, {"b\\s": {"$in": [1, 2]}}, {"ap'o": {"x\"y": 2}},
    {"big": 1e300}, {"big": {"$gt": 1e299}}, {"big": {"$lt": 1e301}}, {"tiny": -1e-300},
    {"tiny": {"$ne": 0}}, {"tiny": {"$lt": 0}}, {"zero": {"$gt": -1e-300}}, {"big": {"$in": [2, 1e300]}},
]
DOCS = {
    "k": {k: 1 for k in KEYS} | {"ap'o": {"x\"y": 2}},
    "big": {"big": 1e300, "tiny": -1e-300, "zero": 0},
    "plain": {"big": 5, "tiny": 0, "zero": 0},
}


def _answers(store):
    store.add([f"text {rid}" for rid in DOCS], "memory", record_ids=list(DOCS), user_ids="u1",
              metadata=list(DOCS.values()))
    return [sorted(r.id for r in store.list("memory", user_id="u1", metadata_filter=f, limit=None))
            for f in FILTERS]


def test_s6_s7_odd_keys_and_double_range_numbers_match_the_sqlite_engine(pool, store_id, tmp_path):
    oracle = OracleDBMemoryStore(HashEmbedder(8), pool, memory_store_id=store_id,
                                 schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    sqlite = SQLiteMemoryStore(tmp_path / "s.db", embedder=HashEmbedder(8))
    want = _answers(sqlite)
    assert want[0] == ["k"] and want[FILTERS.index({"big": 1e300})] == ["big"]
    assert want[FILTERS.index({"tiny": {"$ne": 0}})] == ["big", "k"]  # -1e-300 is not 0 ("k" has no tiny)
    assert _answers(oracle) == want


def _index_columns(conn, store_id):
    with conn.cursor() as cur:
        cur.execute("SELECT index_name, LISTAGG(column_name, ',') WITHIN GROUP (ORDER BY column_position) "
                    "FROM user_ind_columns WHERE table_name = :t GROUP BY index_name", t=f"OM_{store_id}_REC")
        return {cols: name for name, cols in cur.fetchall()}


def test_s24_list_indexes_and_the_upgrade_of_a_version_1_store(pool, conn, store_id):
    import oracledb

    from oramem import SchemaError, SearchStrategy
    from oramem.oracle import SyncOracleEngine
    from oramem.requests import StoreSettings

    engine = SyncOracleEngine(pool)
    engine.open(StoreSettings(store_id, 8, SearchStrategy.VECTOR, None, None), SchemaPolicy.CREATE_IF_NECESSARY)
    cols = _index_columns(conn, store_id)
    assert "RECORD_TYPE,SEQ_NO" in cols and "THREAD_ID,RECORD_TYPE,SEQ_NO" in cols
    # a store as schema version 1 left it: without the two indexes
    with conn.cursor() as cur:
        for key in ("RECORD_TYPE,SEQ_NO", "THREAD_ID,RECORD_TYPE,SEQ_NO"):
            cur.execute(f'DROP INDEX "{cols[key]}"')
        cur.execute("UPDATE oramem_stores SET schema_version = 1 WHERE memory_store_id = :s", s=store_id)
        conn.commit()
    with pytest.raises(SchemaError, match="schema version 1"):
        SyncOracleEngine(pool).open(StoreSettings(store_id, 8, SearchStrategy.VECTOR, None, None),
                                SchemaPolicy.REQUIRE_EXISTING)
    with conn.cursor() as cur:
        cur.callfunc("oramem_admin.upgrade_store", oracledb.DB_TYPE_CLOB, [store_id])
        caps = json.loads(cur.callfunc("oramem_admin.capabilities", oracledb.DB_TYPE_CLOB).read())
        cur.execute("SELECT schema_version FROM oramem_stores WHERE memory_store_id = :s", s=store_id)
        assert cur.fetchone()[0] == caps["code_schema_version"]  # 3 since issue 11 item 5
    cols = _index_columns(conn, store_id)
    assert "RECORD_TYPE,SEQ_NO" in cols and "THREAD_ID,RECORD_TYPE,SEQ_NO" in cols


def test_s23_batched_chunk_rows_and_timestamps(pool, conn, store_id):
    import json

    import oracledb

    store = OracleDBMemoryStore(HashEmbedder(8), pool, memory_store_id=store_id,
                                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    n = 300  # more than one slice of the default batch_size (256)
    ids = store.add([f"note {i} " + "word " * 50 for i in range(n)], "memory", record_ids=[f"r{i}" for i in range(n)],
                    user_ids="u1", timestamps=["2026-02-03T04:05:06.123456+02:00"] * n, batch_size=256)
    assert ids == [f"r{i}" for i in range(n)]
    assert store.get("memory", "r299").timestamp.startswith("2026-02-03T02:05:06.123456")
    hits = store.search("note 7", k=3, user_id="u1")
    assert hits and hits[0][0].id.startswith("r")
    # PL/SQL's own timestamp check (the Python layer refuses this first): -20007, nothing stored
    bad = {"records": [{"id": "bad", "record_type": "memory", "content": "x", "timestamp": "2026-13-01T00:00:00Z"}]}
    with conn.cursor() as cur, pytest.raises(oracledb.DatabaseError, match="ORA-20007"):
        cur.callfunc("oramem_store.add_json", oracledb.DB_TYPE_CLOB, [store_id, json.dumps(bad), 256])
    assert store.get("memory", "bad") is None
    # duplicate check over the key list: an id of the store is refused with its name
    dup = {"records": [{"id": "r5", "record_type": "memory", "content": "again"}]}
    with conn.cursor() as cur, pytest.raises(oracledb.DatabaseError, match="record id r5 already exists"):
        cur.callfunc("oramem_store.add_json", oracledb.DB_TYPE_CLOB, [store_id, json.dumps(dup), 256])
