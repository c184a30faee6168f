"""Live checks that decide the round-3 findings only a database can settle (plsql/VERIFY.md rows
D9(b), N10, N13). Skipped, with the reason printed, when no Oracle database is available
(conftest.py). Not run here: static-checked, not run against Oracle. Each test asserts what the
code and the recording fake currently assume; a failure is the live answer, and the VERIFY row
says what then has to change."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from oramem import SchemaPolicy, SearchStrategy
from oramem.requests import AddRequest, StoreSettings

from . import fakes
from .test_review_findings_oracle import _records, _search

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize("nbytes", [1_500, fakes.MAX_SQL_STRING_BIND - 10])
def test_d9b_untyped_sql_str_bind_below_4000_bytes_into_json_table(conn, nbytes):
    """D9(b): the fake accepts an untyped SQL ``str`` bind up to 4000 bytes (MAX_SQL_STRING_BIND).
    The thin driver sends any such str over 1000 bytes as LONG; this decides whether the server
    accepts it inside JSON_TABLE(:x ...). A failure (ORA-00997 / ORA-01461) means the fake's
    threshold must drop to 1000 bytes."""
    items = []
    while len(("[" + ",".join(items) + "]").encode()) < nbytes - 12:
        items.append('"' + "x" * 40 + '"')
    doc = "[" + ",".join(items) + "]"
    assert 1000 < len(doc.encode()) <= fakes.MAX_SQL_STRING_BIND
    with conn.cursor() as cur:
        cur.execute("select count(*) from json_table(:x, '$[*]' columns (v varchar2(64) path '$'))", x=doc)
        assert cur.fetchone()[0] == len(items)


def test_n10_add_duplicate_check_plan_uses_the_record_primary_key(pool, conn, store_id):
    """N10: with statistics on a store of 3,000 records, the add's duplicate check
    (JSON_TABLE join, oramem_store.pkb) runs as NESTED LOOPS + INDEX UNIQUE SCAN of the record
    table's primary key, not a full scan. Needs SELECT on V$SQL (SELECT_CATALOG_ROLE); skips
    otherwise."""
    import oracledb

    from oramem.oracle import SyncOracleEngine

    engine = SyncOracleEngine(pool)
    engine.open(StoreSettings(store_id, 8, SearchStrategy.VECTOR, None, None), SchemaPolicy.CREATE_IF_NECESSARY)
    rng = np.random.default_rng(10)
    recs = _records(3_000, 8, rng)
    for start in range(0, 3_000, 500):
        engine.add(AddRequest(recs[start:start + 500], 256))
    rec_tab = f"OM_{store_id}_REC"
    with conn.cursor() as cur:
        cur.callproc("dbms_stats.gather_table_stats", keyword_parameters={
            "ownname": None, "tabname": rec_tab, "no_invalidate": False})
    more = tuple(dataclasses.replace(r, id=f"n{i}") for i, r in enumerate(_records(5, 8, rng)))
    engine.add(AddRequest(more, 256))
    with conn.cursor() as cur:
        try:
            cur.execute(
                "select sql_id, child_number from v$sql where sql_text like 'SELECT r.record_type, r.record_id"
                " FROM JSON_TABLE%' and sql_text like :t order by last_active_time desc fetch first 1 row only",
                t=f"%{rec_tab}%")
        except oracledb.DatabaseError as exc:
            pytest.skip(f"no access to V$SQL ({exc}); grant SELECT_CATALOG_ROLE to run the N10 plan check")
        row = cur.fetchone()
        assert row is not None, "the duplicate-check cursor of this store is not in V$SQL"
        cur.execute("select plan_table_output from table(dbms_xplan.display_cursor(:s, :c, 'BASIC'))",
                    s=row[0], c=row[1])
        plan = "\n".join(r[0] or "" for r in cur)
    assert "NESTED LOOPS" in plan, plan
    assert "INDEX UNIQUE SCAN" in plan and f"OM_{store_id}_REC_PK" in plan, plan
    assert "TABLE ACCESS FULL" not in plan, plan


def test_n13_metadata_numbers_outside_number_range_round_trip_and_filter(pool, store_id):
    """N13: metadata numbers outside NUMBER's range (1e300, -1e-300) or precision (41 digits,
    2**63-1, 2**53+1) come back from get unchanged, as on SQLite, and an $eq filter on 1e300
    matches. A failure means oramem_store must refuse them (-20001, a fits_number check in
    get_metadata) or document the rounding."""
    from oramem.oracle import SyncOracleEngine

    meta = {"x": 1e300, "z": -1e-300, "y": 12345678901234567890123456789012345678901,
            "w": 2**63 - 1, "v": 2**53 + 1}
    engine = SyncOracleEngine(pool)
    engine.open(StoreSettings(store_id, 8, SearchStrategy.VECTOR, None, None), SchemaPolicy.CREATE_IF_NECESSARY)
    rec = dataclasses.replace(_records(1, 8, np.random.default_rng(13))[0], metadata=meta)
    engine.add(AddRequest((rec,), 256))
    got = engine.get("memory", rec.id)
    assert got is not None and dict(got.metadata or {}) == meta
    hits = engine.search(dataclasses.replace(_search(SearchStrategy.VECTOR, 1, vector=rec.chunks[0].vector),
                                             metadata_filter={"x": {"$eq": 1e300}}))
    assert [h.id for h, *_ in hits] == [rec.id]
