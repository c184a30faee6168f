"""imp47 (Oracle parity), as text: ``oramem_store.add_json``'s replace branch compared the
stored record's (agent_id, user_id) with the new one's for every record but thread rows
(ora44 left them to SC-13.6), so a ``restore_threads(on_conflict="replace")`` of Bob's line
for Alice's private thread made him its opener. The check now covers every stored row under
the ids, thread rows included, before the DELETE; a refusal over a thread row says that
replace never changes a thread's opener and that "skip" keeps the stored row. The driver's
path is ``tests/oracle/test_imp47_thread_replace_fake.py``. Static-checked, not run against
Oracle."""

from __future__ import annotations

import re

from .test_round3_findings import code
from .test_store_findings import unit


def _replace_branch(body: str) -> str:
    start = body.index("ELSIF l_st_ids.COUNT > 0 THEN", body.index("l_mode = 'skip'"))
    return body[start: body.index("call_hook(l_store, l_event)", start)]


def test_every_stored_row_is_compared_thread_rows_included():
    branch = _replace_branch(unit(code("oramem_store.pkb"), "add_json"))
    loop = branch[branch.index("FOR s IN 1 .. l_st_ids.COUNT LOOP"): branch.index("END LOOP;")]
    assert "'thread'" not in loop.split("IF NOT (same_id(")[0], "no record type is left out of the comparison"
    assert re.search(r"FOR s IN 1 \.\. l_st_ids\.COUNT LOOP\s+l_j := l_seen\(l_st_types\(s\) \|\| '\|' \|\| "
                     r"l_st_ids\(s\)\);\s+IF NOT \(same_id\(l_agents\(l_j\), l_st_agents\(s\)\) AND "
                     r"same_id\(l_users\(l_j\), l_st_users\(s\)\)\) THEN", loop)


def test_a_thread_refusal_says_what_keeps_the_row_before_the_delete():
    body = unit(code("oramem_store.pkb"), "add_json")
    branch = _replace_branch(body)
    assert re.search(r"l_thr_foreign\s+BOOLEAN;", body) and re.search(r"l_message\s+VARCHAR2\(2600 CHAR\);", body)
    assert "l_thr_foreign := FALSE;" in branch  # reset before the loop, every call
    assert re.search(r"IF l_st_types\(s\) = 'thread' THEN\s+l_thr_foreign := TRUE;", branch)
    hint = branch.index("who opened the thread")
    refusal = branch.index("oramem_errors.raise_error(oramem_errors.gc_duplicate_record_id, l_message)")
    delete = branch.index("'DELETE FROM '")
    assert hint < refusal < delete
    # the hint is appended only when set (no reliance on NULL || text)
    assert re.search(r"IF l_thr_foreign THEN\s+(?:--[^\n]*\n\s+)?l_message := l_message \|\| ", branch)
    message = branch[branch.index("l_message := 'record_ids"):refusal]
    assert "l_st_users(s)" not in message and "l_st_agents(s)" not in message  # never whose
