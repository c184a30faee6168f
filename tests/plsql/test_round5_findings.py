"""PL/SQL text tests for the red-team round 5 (2026-12-06 j, helper red17): where Oracle's own
rules make the PL/SQL API read a payload differently from the SQLite engine. Each test fails on
the text before its fix. Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from .test_round3_findings import code
from .test_store_findings import unit


def test_add_refuses_an_empty_scope_id_that_oracle_would_store_as_none():
    """SC-2.1 / SC-13.1 on the PL/SQL API: Oracle treats a zero-length character value as null,
    so add_json stored a record whose payload said "user_id": "" as a record of no user: shared
    with every user (a list or search with user_id=None, Alice's included, returns it, and in a
    thread it counts as the agent's, not as the user's). The Python store refuses "" before any
    call (check_id), and the SQLite engine stores "" as the string it is; a PL/SQL caller acting
    for a user whose id arrived empty got a silent shared write. thread_id, user_id and agent_id
    are now read through get_id, which refuses "" with -20001 (null or absent stays "none")."""
    store = code("oramem_store.pkb")
    add = unit(store, "add_json")
    for key in ("thread_id", "user_id", "agent_id"):
        assert re.search(rf"get_id\(l_r,\s*'{key}',\s*l_where\)", add), f"{key} is read through get_id"
        assert not re.search(rf"get_text\(l_r,\s*'{key}'", add), f"{key} must not be read by get_text alone"
    get_id = unit(store, "get_id")
    assert re.search(r"l_val\s+VARCHAR2\(32767\)\s*:=\s*get_text\(in_obj,\s*in_key,\s*in_where\)", get_id)
    m = re.search(r"IF\s+l_val\s+IS\s+NULL\s+AND\s+has_value\(in_obj,\s*in_key\)\s+THEN(.*?)END\s+IF\s*;", get_id, re.S)
    assert m and "bad_argument(" in m.group(1), "a member that is a string yet reads as NULL is \"\": -20001"
    # get_id is defined before add_json uses it (PL/SQL needs a declaration before a call)
    assert store.index("FUNCTION get_id") < store.index("FUNCTION add_json")

