"""PL/SQL text tests for fake40 (2026-12-07 q): ``oramem_store.update_json`` checks every
member of the request before the record is looked up, as fake39 did for the ``ttl``. Before,
``content``, ``metadata``, ``timestamp``, the replacement ``chunks`` (their text and vectors)
and the ``vectors`` of a revector were read after ``SELECT ... FOR UPDATE``, so a malformed
one on a missing (or expired, ttl-less) record answered 0 instead of -2000x: Bob's
``{"record_id": "gone", "metadata": [1]}`` looked like "no such record" rather than the
mistake it is. What needs the record stays after the lookup: the ttl's expiry (its
created_at / timestamp), the new timestamp as the record's event time, and the count of
vectors against the record's retrieval rows. Static-checked, not run against Oracle.

The stand-in (tests/oracle/plsql_standin.py) refuses the same requests the same way, whether
the record exists, is missing or has expired.
"""

from __future__ import annotations

import copy
import json
import re

import pytest

from .test_round3_findings import code
from .test_store_findings import unit

LOOKUP = "' FOR UPDATE'"


def _update() -> str:
    return unit(code("oramem_store.pkb"), "update_json")


def _without_comments(text: str) -> str:
    return re.sub(r"--[^\n]*", "", text)


READS_BEFORE = [
    # each member's check, as it must stand before the lookup
    "l_content := get_long_text(l_req, 'content', 'update request');",
    "bad_argument('text=None is not allowed for ' || l_type || ' records');",
    "l_meta := get_metadata(l_req, 'update request');",
    "l_ts := oramem_registry.parse_utc(get_text(l_req, 'timestamp', 'update request', 64), 'timestamp');",
    "l_chunks := get_chunks(l_req, 'chunks', 'update request');",
    "collect_chunks(l_store, l_type, l_id, l_chunks,",
    "l_vectors := get_chunks(l_req, 'vectors', 'update request');",
    "l_vec := get_vector(l_vectors.get(i), l_store.vector_dim, 'vectors[' || i || ']');",
]


@pytest.mark.parametrize("read", READS_BEFORE)
def test_every_member_is_checked_before_the_record_is_looked_up(read):
    body = _update()
    lookup = body.index(LOOKUP)
    assert body.count(read) == 1, read
    assert body.index(read) < lookup, f"{read}: after the lookup"


def test_after_the_lookup_the_request_is_read_only_for_the_ttl_expiry():
    """No member of l_req is read (get_*) after the lookup but the ttl object ttl_expiry needs
    with the record's times (its members checked by check_ttl before); only has() tests."""
    body = _without_comments(_update())
    after = body[body.index(LOOKUP):]
    reads = re.findall(r"\bl_req\.get\w*\([^)]*\)|\b(?:get_\w+|parse_utc|collect_\w+)\(\s*l_req\b[^)]*\)", after)
    assert reads == ["l_req.get_object('ttl')"], reads
    assert "ttl_expiry(l_req.get_object('ttl'), l_created, l_event_ts, 'update request.ttl')" in after
    # the new timestamp is the record's event time only once the record was read (the ttl's
    # TIMESTAMP anchor reads it), and the vector count needs the record's rows
    assert re.search(r"IF l_set_t = 1 THEN\s+l_event_ts := l_ts;", after)
    assert after.index("l_event_ts := l_ts;") < after.index("ttl_expiry(")
    assert "IF l_vectors.get_size <> l_rows THEN" in after
    before = body[:body.index(LOOKUP)]
    assert "l_event_ts" not in before.replace("l_event_ts   TIMESTAMP(6);", "")


BAD = [
    # (record type, the request's members, the error): Bob's mistakes
    ("memory", {"content": 3}, "ORA-20002"),
    ("memory", {"content": ["Bob drinks tea"]}, "ORA-20002"),
    ("user_profile", {"content": None}, "ORA-20001"),
    ("memory", {"metadata": [1]}, "ORA-20002"),
    ("memory", {"metadata": "k=1"}, "ORA-20002"),
    ("memory", {"timestamp": "yesterday"}, "ORA-20007"),
    ("memory", {"timestamp": "2026-13-01T00:00:00"}, "ORA-20007"),
    ("memory", {"timestamp": 1767225600}, "ORA-20002"),
    ("memory", {"retrieval": "replace", "chunks": "Bob drinks tea"}, "ORA-20002"),
    ("memory", {"retrieval": "replace", "chunks": ["Bob drinks tea"]}, "ORA-20002"),
    ("memory", {"retrieval": "replace", "chunks": [{"text": 3}]}, "ORA-20002"),
    ("memory", {"retrieval": "replace", "chunks": [{"text": "tea", "vector": [1.0, 0.0]}]}, "ORA-20006"),
    ("memory", {"retrieval": "replace", "chunks": [{"text": "tea", "vector": [1, 0, 0, "x"]}]}, "ORA-20002"),
    ("memory", {"retrieval": "revector", "vectors": [1.0, 0.0, 0.0, 0.0]}, "ORA-20002"),
    ("memory", {"retrieval": "revector", "vectors": [[1.0, 0.0]]}, "ORA-20006"),
    ("memory", {"retrieval": "sideways"}, "ORA-20001"),
    ("gadget", {"content": "Bob drinks coffee"}, "ORA-20003"),
]

STATES = ["missing", "existing", "expired"]


def _standin(state: str, record_type: str):
    from oracle.fakes import Call
    from oracle.plsql_standin import StoreStandIn

    standin = StoreStandIn(vector_dim=4)
    if state != "missing" and record_type != "gadget":
        record = {"id": "b1", "record_type": record_type, "content": "Bob drinks tea",
                  "chunks": [{"text": "Bob drinks tea", "vector": [1.0, 0.0, 0.0, 0.0]}]}
        if record_type == "memory":
            record.update(user_id="bob", ttl={"days": 0} if state == "expired" else None)
        standin.add(Call("callfunc", binds={"in_batch": json.dumps({"records": [record]})}))
    return standin


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("record_type,members,error", BAD)
def test_the_stand_in_refuses_a_bad_member_whatever_the_records_state(state, record_type, members, error):
    import oracledb

    from oracle.fakes import Call

    standin = _standin(state, record_type)
    before = (copy.deepcopy(standin.records), copy.deepcopy(standin.rows))
    request = {"record_type": record_type, "record_id": "b1", **members}
    with pytest.raises(oracledb.DatabaseError, match=error):
        standin.update(Call("callfunc", binds={"in_request": json.dumps(request)}))
    assert (standin.records, standin.rows) == before, "nothing written"


@pytest.mark.parametrize("state", ["missing", "expired"])
def test_the_stand_in_still_answers_0_for_a_good_request_on_a_missing_or_expired_record(state):
    from oracle.fakes import Call

    standin = _standin(state, "memory")
    for members in ({"content": "Bob drinks coffee"}, {"metadata": {"k": 2}, "timestamp": "2026-01-01T00:00:00Z"},
                    {"retrieval": "replace", "chunks": [{"text": "coffee", "vector": [0.0, 1.0, 0.0, 0.0]}]},
                    {"retrieval": "revector", "vectors": [[0.0, 1.0, 0.0, 0.0]]}, {"retrieval": "clear"}):
        request = {"record_type": "memory", "record_id": "b1", **members}
        assert standin.update(Call("callfunc", binds={"in_request": json.dumps(request)})) == 0, members
