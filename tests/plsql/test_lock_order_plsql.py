"""PL/SQL text tests for the locks of 2026-12-07 l (helper ora29): a get inside a caller's
block locks the record it reads (SC-12.10), so a scope check and the write it guards hold
together on Oracle (read committed); and of 2026-12-07 m (helper ora31): an actor's cascade
takes the erasers' lock first (KC-3.10). Each test fails on the text before its fix.
Static-checked, not run against Oracle."""

from __future__ import annotations

import re

import oracledb
import sqlalchemy as sa

from .test_round3_findings import code
from .test_store_findings import unit


def test_get_json_locks_the_row_it_reads_only_when_asked():
    body = unit(code("oramem_store.pkb"), "get_json")
    head = body[: body.index("BEGIN")]
    assert re.search(r"in_lock\s+IN\s+PLS_INTEGER\s+DEFAULT\s+0", head), "a lock flag, off by default"
    check = re.search(r"IF in_lock IS NULL OR in_lock NOT IN \(0, 1\) THEN\s*bad_argument\('lock must be 0 or 1'\);", body)
    stmt = body.index("EXECUTE IMMEDIATE")
    assert check and check.start() < stmt, "the flag is checked before the read"
    # the clause is the statement's last one, and only under in_lock = 1
    assert re.search(r"\|\| ' AND \(r\.expires_at IS NULL OR r\.expires_at > SYS_EXTRACT_UTC\(SYSTIMESTAMP\)\)'\s*"
                     r"\|\| CASE WHEN in_lock = 1 THEN ' FOR UPDATE' END\s*INTO l_out USING l_type, in_record_id;",
                     body[stmt:])
    assert body.count("FOR UPDATE") == 1
    # the single-table select FOR UPDATE allows: no DISTINCT, aggregate, GROUP BY or set operator
    select = body[stmt: body.index("INTO l_out", stmt)]
    assert not re.search(r"\b(DISTINCT|GROUP BY|UNION|INTERSECT|MINUS|COUNT\(|JSON_ARRAYAGG|JSON_OBJECTAGG)\b", select)


def test_an_actors_cascade_takes_the_erasers_lock_before_it_reads_or_deletes():
    """KC-3.10 (ora31): every erasure path takes the erasers' lock first, PL/SQL callers
    included. ``delete_record_json`` / ``delete_record`` with ``in_cascade = 1`` on a profile
    type is an erasure (``forget``'s cascade, a profile cascade, a PL/SQL application's own
    call with or without ``in_reason``); its first statement on the store is ``LOCK TABLE
    "<ID>_KG_AGENT" IN EXCLUSIVE MODE`` when the store has knowledge tables, the statement the
    Python eraser sends (``OracleEraser.lock_statement``). Before, only the Python driver took
    it: a PL/SQL caller's cascade took no lock, so a knowledge commit in flight could add her
    store records after the cascade's deletes ran."""
    from oramem.knowledge.db.schema import build_tables
    from oramem.knowledge.deletes import OracleEraser
    from oracle.fakes import SQLBackend  # tests/ is on sys.path (rootdir conftest)

    text = code("oramem_store.pkb")
    lock = unit(text, "lock_erasers")
    guard = re.search(r"SELECT COUNT\(\*\) INTO (\w+) FROM user_tables\s+WHERE\s+table_name = "
                      r"in_store\.memory_store_id \|\| '_KG_AGENT';\s+IF \1 > 0 THEN", lock)
    assert guard, "locked only when the store has the knowledge layer's agent table"
    stmt = re.search(r"EXECUTE IMMEDIATE 'LOCK TABLE '\s*\|\| DBMS_ASSERT\.ENQUOTE_NAME\(DBMS_ASSERT\.SIMPLE_SQL_NAME\("
                     r"in_store\.memory_store_id \|\| '_KG_AGENT'\),\s*capitalize => TRUE\)\s*\|\| ' IN EXCLUSIVE MODE';", lock)
    assert stmt and guard.end() < stmt.start()
    # the statement as sent, for store MYSTORE: the Python eraser's, in the LOCK TABLE grammar
    sent = 'LOCK TABLE "MYSTORE_KG_AGENT" IN EXCLUSIVE MODE'
    eraser = OracleEraser(sa.create_engine("oracle+oracledb://", module=oracledb), build_tables("MYSTORE", 8), None)
    assert eraser.lock_statement() == sent and re.match(SQLBackend._LOCK_TABLE, sent, re.I)

    body = unit(text, "delete_record_json")
    assert body.count("lock_erasers(") == 1
    cascade = body[body.index("ELSIF in_cascade = 1 AND oramem_registry.is_profile_type(l_type) THEN"):]
    first = re.search(r"THEN\s+(\w+)\(l_store\);", cascade)
    assert first and first.group(1) == "lock_erasers", "the lock is the cascade branch's first statement"
    assert cascade.index("lock_erasers(") < cascade.index("EXECUTE IMMEDIATE")
    # after the call's savepoint: a failed cascade rolls back to it and releases the lock
    assert body.index("SAVEPOINT oramem_delete;") < body.index("lock_erasers(")
    # a thread's or a single record's delete is not an erasure: no lock (VERIFY.md)
    thread = body[body.index("IF l_type = 'thread' THEN"): body.index("ELSIF in_cascade = 1")]
    single = cascade[cascade.index("      ELSE\n"):]
    assert "lock_erasers" not in thread and "lock_erasers" not in single and "LOCK TABLE" not in body
    # its definition, this call, and the reembed's lock (lock_retrieval_rows), where it comes first
    assert text.count("lock_erasers(") == 3
    door = unit(text, "lock_retrieval_rows")
    assert door.count("lock_erasers(l_store);") == 1
    assert door.index("lock_erasers(l_store);") < door.index("LOCK TABLE ") < door.index("IN EXCLUSIVE MODE")
