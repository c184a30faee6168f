"""PL/SQL text tests for the red-team rounds of 2026-12-06 j: the Oracle twins of the user
boundaries (helper red16), and where Oracle's own rules make the PL/SQL API read a payload
differently from the SQLite engine (helper red17). Each test fails on the text before its fix.
Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from oramem.oracle.codec import _scope
from oramem.requests import Scope, ScopeMatch

from .test_round3_findings import code
from .test_store_findings import unit


def test_a_scope_value_with_a_match_other_than_equals_is_refused_not_read_as_any():
    """SC-6.2 / SC-3.3 on the PL/SQL API: ``scope_condition`` (list_json and search_json)
    took ``{"user": {"value": "bob"}}`` (no match), ``{"match": null, ...}`` or ``{"match":
    "any", "value": "bob"}`` as no user condition at all, so a PL/SQL caller acting for Bob
    listed and searched every user's records (fail open, the shape red13's fix left: the
    value was a string, the match null or a string). A value now goes with ``equals`` only;
    any other match with a value is -20002, checked before the ``any`` early return."""
    body = unit(code("oramem_filter.pkb"), "scope_condition")
    check = re.search(r"IF\s+in_value\s+IS\s+NOT\s+NULL\s+AND\s+NVL\(l_match,\s*'any'\)\s*<>\s*'equals'\s+THEN(.*?)END\s+IF\s*;",
                      body, re.S)
    assert check, "a value with a match other than equals must be checked"
    assert "oramem_errors.gc_invalid_payload" in check.group(1)
    early = re.search(r"IF\s+l_match\s+IS\s+NULL\s+OR\s+l_match\s*=\s*'any'\s+THEN\s+RETURN\s+NULL\s*;", body)
    assert early and check.start() < early.start(), "the check must come before 'any' returns no condition"
    # an unknown match is still named as such (checked first, without the value)
    unknown = re.search(r"IF\s+l_match\s+IS\s+NOT\s+NULL\s+AND\s+l_match\s+NOT\s+IN\s+\('any',\s*'equals',\s*'is_null'\)", body)
    assert unknown and unknown.start() < check.start()


def test_the_python_driver_sends_a_scope_value_with_equals_only():
    """What the refusal above must never refuse: the driver's own scopes (``codec._scope``)."""
    assert _scope(Scope(ScopeMatch.EQUALS, "bob")) == {"match": "equals", "value": "bob"}
    for match in (ScopeMatch.ANY, ScopeMatch.IS_NULL):
        assert "value" not in _scope(Scope(match, None))


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


def test_the_stale_flag_goes_only_into_the_facts_own_store_record():
    """KC-3.5 / KC-3.7 on the PL/SQL twin of the deterministic job: memify's sync_stale_metadata
    read the ``fact`` store record under a changed fact row's id and wrote ``kg_is_stale`` into
    its metadata, whoever's record it was. Store ids are unique per record type only and
    callers choose them (SC-4.3), so Bob's fact record under the id of Alice's fact row (a row
    restored without its record) got her fact's staleness, flipped with her fact's vitality.
    The Python job writes a fact row's metadata only into its own record, of the same agent
    and user (commit.update_fact_record, 2026-12-06 i, red14); the PL/SQL now does the same
    check, through the hook's "another scope under this id" count (DECODE: NULLs match)."""
    body = unit(code("oramem_kg_jobs.pkb"), "sync_stale_metadata")
    check = re.search(r"sql_for\(gc_tpl_hk_other_scope,\s*in_sid,\s*'FACT'\)\s+INTO\s+(\w+)\s+USING\s+in_fact_id,\s*(\w+),\s*(\w+)",
                      body)
    assert check, "the record's agent and user are compared with its fact row's"
    count, agent, user = check.groups()
    for var, key in ((agent, "agent_id"), (user, "user_id")):
        assert re.search(rf"{var}\s*:=\s*l_obj\.get_string\('{key}'\)", body), f"{var} is the record's {key}"
    skip = re.search(rf"IF\s+{count}\s*>\s*0\s+THEN\s+RETURN\s*;", body)
    update = body.index("oramem_store.update_json(")
    assert skip and skip.start() > check.start() and skip.start() < update, "another scope's record is left alone"
