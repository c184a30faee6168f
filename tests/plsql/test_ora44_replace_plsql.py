"""ora44 (Oracle parity of red40's restore fix), as text: ``oramem_store.add_json`` with
``"on_conflict": "replace"`` deleted whatever record was stored under a line's (record_type,
id), so Bob's restore of his ``note-1`` deleted Alice's ``note-1`` (ids are the
application's). The replace branch now reads each stored record's agent_id and user_id with
the ids (the one SELECT of step 2, no new statement) and, before its DELETE, refuses with
-20005 (``gc_duplicate_record_id``, ``DuplicateRecordError`` in the driver) when one of them,
thread rows included since imp47, differs from the new record's; NULL (no user, no agent)
equals only NULL.
The driver's path is ``tests/oracle/test_ora44_replace_fake.py``. Static-checked, not run
against Oracle."""

from __future__ import annotations

import re

from .test_round3_findings import code
from .test_store_findings import unit


def _replace_branch(body: str) -> str:
    """add_json's replace branch: from the last ``ELSIF l_st_ids.COUNT > 0 THEN`` of step 2
    to the end of its DELETE statement."""
    start = body.index("ELSIF l_st_ids.COUNT > 0 THEN", body.index("l_mode = 'skip'"))
    return body[start: body.index("call_hook(l_store, l_event)", start)]


def test_step2_reads_the_stored_records_scopes_with_their_ids():
    body = unit(code("oramem_store.pkb"), "add_json")
    select = re.search(r"'SELECT r\.record_type, r\.record_id, r\.agent_id, r\.user_id FROM JSON_TABLE\(:1.*?"
                       r"BULK COLLECT INTO l_st_types, l_st_ids, l_st_agents, l_st_users USING l_key_doc;",
                       body, re.S)
    assert select, "the stored ids' SELECT collects their agent_id and user_id"
    assert select.start() < body.index("l_mode = 'fail'")


def test_replace_refuses_another_scopes_record_before_its_delete():
    branch = _replace_branch(unit(code("oramem_store.pkb"), "add_json"))
    check = branch.index("same_id(l_agents(l_j), l_st_agents(s)) AND same_id(l_users(l_j), l_st_users(s))")
    refusal = branch.index("oramem_errors.raise_error(oramem_errors.gc_duplicate_record_id")
    delete = branch.index("'DELETE FROM '")
    assert check < refusal < delete, "the refusal comes before the replace's DELETE"
    # the new record compared is the line's own: l_seen maps (type|id) to its index
    assert "l_j := l_seen(l_st_types(s) || '|' || l_st_ids(s));" in branch
    # thread rows are compared too, as on SQLite (imp47: a thread row names its opener,
    # SC-13.2; ora44 left them out): the loop's first statement is the lookup
    assert re.search(r"FOR s IN 1 \.\. l_st_ids\.COUNT LOOP\s+l_j := l_seen", branch)
    # the message is built just before the raise (imp47: a thread row's hint appended)
    built = branch.index("l_message := 'record_ids stored for another user or agent")
    assert check < built < refusal
    message = branch[built:delete]
    assert "another user or agent" in message and "nothing was added" in message
    assert "l_st_users(s)" not in message and "l_st_agents(s)" not in message  # never whose


def test_same_id_is_null_safe():
    """NULL = 'alice' is NULL in PL/SQL, and IF NOT (NULL) skips its branch: Bob's line over
    a shared record (no user) must still be 'another scope', so same_id decides NULL first."""
    body = unit(code("oramem_store.pkb"), "same_id")
    assert re.search(r"IF in_a IS NULL OR in_b IS NULL THEN\s+RETURN in_a IS NULL AND in_b IS NULL;\s+END IF;"
                     r"\s+RETURN in_a = in_b;", body)
