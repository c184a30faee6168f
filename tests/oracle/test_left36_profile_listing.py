"""left36 item 2: listing profiles (and threads) with a scope, on both engines.

What each engine did (verified 2026-12-07 p): the Python ``list`` ignores ``thread_id`` /
``user_id`` / ``agent_id`` for the unscoped types (user_profile, agent_profile, thread): SC-3.3,
from the vendor's API ("user_profile e agent_profile são tipos de registro sem escopo ...
thread_id, user_id e agent_id são ignorados"), so ``list("user_profile", user_id="bob")``
returns every profile on SQLite and, through the driver (which sends no scope for them), on
Oracle. A PL/SQL application calling ``oramem_store.list_json`` itself with a scope on those
types got the raw columns instead: ``{"record_type": "user_profile", "user": {"match":
"equals", "value": "bob"}}`` answered [] (a profile's user_id is null), ``is_null`` every
profile, and a ``thread`` listing the threads that user opened: two answers to one question.

Decided: the Python rule stands (the contract and the vendor's API say it); the PL/SQL now
refuses such a scope (-20001, before anything is read) instead of answering either way: reading
the raw columns disagreed with the contract, and ignoring it as Python does would list Alice's
profile (and threads) to Bob's request. Every request the driver sends passes, so both engines
answer every Python call alike. Static-checked, not run against Oracle.
"""

from __future__ import annotations

import json

import oracledb
import pytest

from oramem import SQLiteMemoryStore
from oramem.testing import HashEmbedder

from .fakes import Call
from .plsql_standin import StoreStandIn, standin_store

SCOPES = [{}, {"user_id": "bob"}, {"user_id": None}, {"user_id": "alice"}, {"agent_id": "desk"}, {"agent_id": None},
          {"thread_id": "tb"}, {"thread_id": None}, {"user_id": "bob", "agent_id": None, "thread_id": "tb"}]


def _fill(store) -> None:
    store.add_user("alice", "Alice, tea drinker")
    store.add_user("bob", "Bob, chess player")
    store.add_agent("desk", "the help desk")
    store.add(["Alice's memory"], "memory", record_ids="ma", user_ids="alice", agent_ids="desk", thread_ids="ta")
    store.add(["Bob's memory"], "memory", record_ids="mb", user_ids="bob", thread_ids="tb")
    store.add(["a shared fact"], "fact", record_ids="f0")


def _ids(records) -> list[str]:
    return [r.id for r in records]


def test_both_engines_list_profiles_and_scoped_records_alike():
    """SQLite (real) and Oracle (the driver over the recording fake, whose stand-in applies
    list_json's rule): the same ids for every type and scope the Python list takes."""
    oracle, rec = standin_store(dim=8)
    try:
        with SQLiteMemoryStore(":memory:", embedder=HashEmbedder(8)) as sqlite:
            _fill(sqlite)
            _fill(oracle)
            compared = 0
            for record_type in ("user_profile", "agent_profile", "memory", "fact"):
                for kwargs in SCOPES:
                    got = _ids(oracle.list(record_type, **kwargs))
                    assert got == _ids(sqlite.list(record_type, **kwargs)), (record_type, kwargs)
                    compared += 1
            assert compared == 4 * len(SCOPES)
            # SC-3.3 (the vendor's rule): a profile listing ignores the scope on both engines
            assert _ids(sqlite.list("user_profile", user_id="bob")) == ["alice", "bob"]
            # scoped types: Bob's listing holds his records only, on both engines
            for store in (sqlite, oracle):
                assert _ids(store.list("memory", user_id="bob")) == ["mb"]
                assert _ids(store.list("fact", user_id="bob")) == []
    finally:
        oracle.close()
    # what the driver sent for an unscoped type: no scope, so list_json never refuses it
    sent = [json.loads(getattr(c.binds["in_request"], "data", c.binds["in_request"]))
            for c in rec.calls if c.name == "oramem_store.list_json"]
    profiles = [r for r in sent if r["record_type"] in ("user_profile", "agent_profile")]
    assert len(profiles) == 2 * len(SCOPES)
    assert all(r[d] == {"match": "any"} for r in profiles for d in ("thread", "user", "agent"))


@pytest.mark.parametrize("record_type", ["user_profile", "agent_profile", "thread"])
def test_bobs_plsql_listing_with_a_scope_on_an_unscoped_type_is_refused_never_answered(record_type):
    """Bob's PL/SQL application asks for "his" profiles: before, [] (raw user_id) or, had the
    PL/SQL ignored the scope as Python does, Alice's profile too. Now -20001, nothing listed."""
    standin = StoreStandIn()
    for rid, rtype in (("alice", "user_profile"), ("bob", "user_profile"), ("desk", "agent_profile")):
        standin.records[(rtype, rid)] = {"id": rid, "record_type": rtype, "seq_no": len(standin.records),
                                         "user_id": None, "agent_id": None, "thread_id": None}
    for dim in ("user", "agent", "thread"):
        for scope in ({"match": "equals", "value": "bob"}, {"match": "is_null"}):
            request = {"record_type": record_type, dim: scope}
            with pytest.raises(oracledb.DatabaseError, match="ORA-20001.*not listed by"):
                standin.list(Call("callfunc", binds={"in_request": json.dumps(request)}))
    listed = json.loads(standin.list(Call("callfunc", binds={"in_request": json.dumps(
        {"record_type": "user_profile", "user": {"match": "any"}})})))
    assert [r["id"] for r in listed] == ["alice", "bob"]  # no scope: every profile, as SC-3.3

