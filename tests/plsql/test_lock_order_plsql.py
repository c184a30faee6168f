"""PL/SQL text tests for the locks of 2026-12-07 l (helper ora29): a get inside a caller's
block locks the record it reads (SC-12.10), so a scope check and the write it guards hold
together on Oracle (read committed). Each test fails on the text before its fix.
Static-checked, not run against Oracle."""

from __future__ import annotations

import re

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
