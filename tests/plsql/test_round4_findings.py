"""PL/SQL text tests for the red-team round 4 (2026-12-06 i, helper red13): the Oracle twins of
the user boundaries, compared case by case with the SQLite engine. Each test fails on the text
before its fix (commit f573b04) and passes after. Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from .test_round3_findings import code
from .test_store_findings import unit


def _scope_loop(body: str) -> str:
    """The FOR d IN 1 .. 3 loop that turns the thread / user / agent dimensions into conditions."""
    start = re.search(r"FOR\s+d\s+IN\s+1\s*\.\.\s*3\s+LOOP", body)
    assert start, "the scope loop"
    end = re.search(r"END\s+LOOP\s*;", body[start.end():])
    # the loop holds a DECLARE block; its END LOOP is the first one after it
    return body[start.start(): start.end() + end.end()]


def _raises_payload_when(loop: str, condition: str) -> bool:
    """``IF <condition> THEN`` followed, before the next END IF, by an invalid-payload error."""
    for m in re.finditer(r"IF\s+" + condition + r"\s+THEN(.*?)END\s+IF\s*;", loop, re.S):
        if re.search(r"(oramem_errors\.gc_invalid_payload|bad_payload\()", m.group(1)):
            return True
    return False


def test_search_refuses_a_malformed_scope_as_list_does():
    """SC-6.2 on the PL/SQL API: search_json took a scope dimension that was present but not
    an object ("user": "bob", the bare id) or whose match was not a string ({"match": 1,
    "value": "bob"}) as no scope at all, so the search ran over every user's records (fail
    open); list_json refuses both with -20002 (get_text / bad_payload), and the SQLite engine
    takes only a typed Scope. Both now refuse the same shapes."""
    search = _scope_loop(unit(code("oramem_search.pkb"), "search_json"))
    assert not re.search(r"IF\s+l_req\.has\(l_dim_name\)\s+AND\s+l_req\.get\(l_dim_name\)\.is_object\s+THEN", search), \
        "a dimension that is not an object must not be skipped as 'any'"
    assert _raises_payload_when(search, r"NOT\s+l_req\.get\(l_dim_name\)\.is_object"), \
        "a present, non-null dimension that is not an object is -20002"
    for member in ("match", "value"):
        assert _raises_payload_when(
            search,
            rf"l_scope\.has\('{member}'\)\s+AND\s+NOT\s+l_scope\.get\('{member}'\)\.is_null\s+"
            rf"AND\s+NOT\s+l_scope\.get\('{member}'\)\.is_string",
        ), f"a {member} that is neither null nor a string is -20002"
    # the twin already refuses both (what the search now matches)
    listing = _scope_loop(unit(code("oramem_store.pkb"), "list_json"))
    assert _raises_payload_when(listing, r"NOT\s+l_req\.get\(l_dim\)\.is_object")
    assert "get_text(l_scope, 'match'" in listing and "get_text(l_scope, 'value'" in listing


def test_deletion_events_carry_each_records_owner_and_the_hook_checks_it():
    """DeletionEvent.scopes on Oracle (SC-8.5; the SQLite engine's events and
    ``deletes._own_rows``): every deleting statement that builds an event returns each
    record's agent_id and user_id, make_event writes them as "scopes", and on_store_delete
    takes a fact / event row for a deleted record only when no row of another agent or user
    is under its id (B-vs-A on SQLite: tests/knowledge/test_tenant_redteam.py
    ::test_bobs_record_under_alices_knowledge_id_deletes_only_his_record)."""
    store = code("oramem_store.pkb")
    make = unit(store, "make_event")
    assert "l_event.put('scopes', l_arr);" in make
    assert "l_scope.put('agent_id', in_rec_agents(i));" in make and "l_scope.put('user_id', in_rec_users(i));" in make
    calls = re.findall(r":?=\s*make_event\((.*?)\);", store, re.S)
    assert len(calls) == 5 and all(len(re.findall(r",", c.split("CASE")[0])) == 8 for c in calls), calls
    returning = re.findall(r"RETURNING\s+([^']*?)\s+INTO\s+:", re.sub(r"'\s*\|\|\s*'", "", store))
    deleting = [r for r in returning if "record_type" in r]
    assert len(deleting) == 5 and all("agent_id" in r and "user_id" in r for r in deleting), deleting
    hook = unit(code("oramem_kg_jobs.pkb"), "on_store_delete")
    check = hook.index("sql_for(gc_tpl_hk_other_scope")
    assert hook.index("l_scope.get_string('user_id')") < check < hook.index("l_facts(l_facts.COUNT + 1)")
    assert "IF l_other > 0 THEN" in hook
    tpl = re.search(r"gc_tpl_hk_other_scope CONSTANT [^;]*;", code("oramem_kg_jobs.pkb")).group(0)
    assert "DECODE(agent_id, :2, 1, 0) = 1 AND DECODE(user_id, :3, 1, 0) = 1" in tpl
