"""PL/SQL text tests for fake39 (2026-12-07 p): ``oramem_store.update_json`` checks the
request's ``ttl`` (its type, that it is an object, its members, days and anchor) before the
record is looked up. Before, those checks ran after the lookup, so a bad ttl on a missing (or
expired, ttl-less) record answered 0 instead of -20001/-20002: Bob's
``{"record_id": "gone", "ttl": {"ttl_days": 3}}`` looked like "no such record" rather than the
mistake it is. The expiry itself still needs the record's created_at / timestamp
(``ttl_expiry`` after the lookup). Static-checked, not run against Oracle.

The stand-in (tests/oracle/plsql_standin.py) refuses the same requests the same way, whether
or not the record exists.
"""

from __future__ import annotations

import copy
import json
import re

import pytest

from .test_round3_findings import code
from .test_store_findings import unit


def _update() -> str:
    return unit(code("oramem_store.pkb"), "update_json")


def test_the_ttl_is_checked_before_the_record_is_looked_up():
    body = _update()
    lookup = body.index("' FOR UPDATE'")
    assert lookup < body.index("RETURN 0;"), "the missing-record answer comes after the lookup"
    check = body.index("check_ttl(l_req.get_object('ttl'), 'update request.ttl',")
    assert check < lookup, "check_ttl runs before the record is read"
    for rule in (r"IF\s+NOT\s+oramem_registry\.is_scoped_type\(l_type\)\s+THEN\s+bad_argument\('ttl applies only",
                 r"IF\s+NOT\s+l_req\.get\('ttl'\)\.is_object\s+THEN\s+bad_payload\('update request\.ttl must be"):
        found = [m.start() for m in re.finditer(rule, body)]
        assert len(found) == 1, rule
        assert found[0] < check, f"{rule}: before the ttl's members are read"
    # the expiry, which needs the record's times, is computed after the lookup
    assert lookup < body.index("ttl_expiry(l_req.get_object('ttl'), l_created, l_event_ts, 'update request.ttl')")


def test_check_ttl_holds_every_ttl_rule_that_needs_no_record():
    check = unit(code("oramem_store.pkb"), "check_ttl")
    keys = check.index("oramem_filter.check_keys(in_ttl, 'days,anchor', in_where);")
    days = check.index("out_days   := get_count(in_ttl, 'days', in_where);")
    anchor = check.index("get_text(in_ttl, 'anchor', in_where, 32)")
    rule = check.index("IF out_anchor NOT IN ('created_at', 'timestamp') THEN")
    assert keys < days < anchor < rule
    assert "bad_argument(in_where || '.anchor must be created_at or timestamp');" in check
    # ttl_expiry reads the ttl through check_ttl only, first, so add and update share the rules
    expiry = unit(code("oramem_store.pkb"), "ttl_expiry")
    first = re.search(r"\bBEGIN\s+(\w+)\(", expiry)
    assert first and first.group(1) == "check_ttl"
    assert "check_ttl(in_ttl, in_where, l_days, l_anchor);" in expiry
    assert not re.search(r"\bin_ttl\.(?:has|get\w*)\(|\b(?:get_count|get_text)\(\s*in_ttl\b", expiry)
    # check_ttl is defined before its first use (a private subprogram of the body)
    text = code("oramem_store.pkb")
    assert text.index("PROCEDURE check_ttl(") < text.index("FUNCTION ttl_expiry(")


BAD_TTLS = [
    # (record type, ttl, the error): Bob's mistakes, each refused whether or not the record exists
    ("memory", {"ttl_days": 3}, "ORA-20002"),
    ("memory", {"days": 3, "anchour": "timestamp"}, "ORA-20002"),
    ("memory", 3, "ORA-20002"),
    ("memory", {"days": -1}, "ORA-20001"),
    ("memory", {"days": 1.5}, "ORA-20001"),
    ("memory", {"days": "3"}, "ORA-20002"),
    ("memory", {"days": 3, "anchor": "updated_at"}, "ORA-20001"),
    ("memory", {"days": 3, "anchor": 1}, "ORA-20002"),
    ("user_profile", {"days": 3}, "ORA-20001"),
]


@pytest.mark.parametrize("exists", [False, True], ids=["missing", "existing"])
@pytest.mark.parametrize("record_type,ttl,error", BAD_TTLS)
def test_the_stand_in_refuses_a_bad_ttl_whatever_the_records_state(exists, record_type, ttl, error):
    import oracledb

    from oracle.fakes import Call
    from oracle.plsql_standin import StoreStandIn

    standin = StoreStandIn()
    if exists:
        standin.add(Call("callfunc", binds={"in_batch": json.dumps(
            {"records": [{"id": "b1", "record_type": record_type, "user_id": "bob", "content": "Bob drinks tea"}]})}))
    before = copy.deepcopy(standin.records)
    request = {"record_type": record_type, "record_id": "b1", "content": "Bob drinks coffee", "ttl": ttl}
    with pytest.raises(oracledb.DatabaseError, match=error):
        standin.update(Call("callfunc", binds={"in_request": json.dumps(request)}))
    assert standin.records == before, "nothing written"


def test_the_stand_in_still_answers_0_for_a_missing_record_with_a_good_ttl():
    from oracle.fakes import Call
    from oracle.plsql_standin import StoreStandIn

    standin = StoreStandIn()
    for ttl in ({"days": 3}, {"days": None}, {"days": 0, "anchor": "TIMESTAMP"}, {}):
        request = {"record_type": "memory", "record_id": "gone", "ttl": ttl}
        assert standin.update(Call("callfunc", binds={"in_request": json.dumps(request)})) == 0


def test_the_stand_in_keys_match_check_ttl():
    from oracle.plsql_standin import StoreStandIn

    from .test_red32_request_keys import _known

    assert StoreStandIn.TTL_KEYS == _known(unit(code("oramem_store.pkb"), "check_ttl"), "in_ttl")[0]
