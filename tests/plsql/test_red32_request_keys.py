"""PL/SQL text tests for red32 (2026-12-07 o): a PL/SQL application calling the packages for
Bob, compared with the Python API for the same call.

``oramem_store.list_json`` and ``oramem_search.search_json`` ignored a request member they do
not read. The add batch and the record object spell a scope ``"user_id": "bob"``; a list or
search request written the same way (``{"record_type": "memory", "user_id": "bob"}``) ran with
no user condition and returned Alice's records to Bob's listing and search (fail open). The
Python API refuses the same mistake (``store.list("memory", user="bob")`` is a ``TypeError``
naming the argument; ``tests/hardening/test_async_twin_parity.py`` drives it on both colours).
Both packages now pass the request, each scope object and the hybrid object through
``oramem_filter.check_keys``: a member outside the names the call reads is -20002, before
anything is read. Static-checked, not run against Oracle; the live twin of these tests is
``tests/oracle/test_red32_oracle.py``.

How these tests read the text: the member names a call reads are collected from the body
(``l_req.has('x')``, ``l_req.get_*('x')``, ``get_text(l_req, 'x', ...)``, the scope loop's
dimension names); ``check_keys``' list must be exactly those names (a name read but refused, or
accepted but never read, fails); the rule ``check_keys`` applies is re-stated in Python
(``_refused``) from its text, and requests are run through it: Bob's spellings are refused,
every request the Python driver sends (``oramem.oracle.codec``) passes.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from oramem.oracle import codec
from oramem.requests import ListRequest, Scope, ScopeMatch, SearchRequest
from oramem.sqlite.keyword import HybridConfig
from oramem.types import NOT_SET, SearchStrategy

from .test_round3_findings import code
from .test_store_findings import unit

CHECK = re.compile(r"oramem_filter\.check_keys\(\s*(\w+)\s*,\s*((?:'[^']*'\s*(?:\|\|\s*)?)+),", re.S)


def _known(body: str, obj: str) -> tuple[set[str], int]:
    """The names ``check_keys(obj, '...')`` accepts in ``body``, and where the call is."""
    calls = [m for m in CHECK.finditer(body) if m.group(1) == obj]
    assert len(calls) == 1, f"one check_keys({obj}, ...) call, found {len(calls)}"
    literal = "".join(re.findall(r"'([^']*)'", calls[0].group(2)))
    names = literal.split(",")
    assert all(names) and len(names) == len(set(names)), literal
    return set(names), calls[0].start()


def _reads(body: str, obj: str) -> tuple[set[str], int]:
    """The member names ``body`` reads from ``obj``, and where it first reads one."""
    found = [(m.start(), m.group(1)) for m in re.finditer(rf"\b{obj}\.(?:has|get\w*)\('(\w+)'\)", body)]
    found += [(m.start(), m.group(1)) for m in re.finditer(rf"\b\w+\(\s*{obj}\s*,\s*'(\w+)'", body)]
    # get_metadata(obj, where) reads the member 'metadata' (oramem_store.pkb)
    found += [(m.start(), "metadata") for m in re.finditer(rf"\bget_metadata\(\s*{obj}\s*,", body)]
    if re.search(rf"\b{obj}\.(?:has|get\w*)\((l_dim|l_dim_name)\)|\bhas_value\(\s*{obj}\s*,\s*l_dim\b", body):
        loop = re.search(r"CASE\s+d\s+WHEN\s+1\s+THEN\s+'(\w+)'\s+WHEN\s+2\s+THEN\s+'(\w+)'\s+ELSE\s+'(\w+)'", body)
        assert loop, "the scope loop's dimension names"
        found += [(loop.start(), n) for n in loop.groups()]
    return {n for _, n in found}, min((p for p, _ in found), default=len(body))


def _refused(known: set[str], request: dict) -> bool:
    """check_keys' rule (plsql/oramem_filter.pkb), in Python."""
    body = unit(code("oramem_filter.pkb"), "check_keys")
    assert "in_obj.get_keys" in body
    assert re.search(r"INSTR\(l_key,\s*','\)\s*>\s*0\s+OR\s+INSTR\(','\s*\|\|\s*in_known\s*\|\|\s*',',\s*"
                     r"','\s*\|\|\s*l_key\s*\|\|\s*','\)\s*=\s*0", body), "unknown: not in the list, or holding a comma"
    assert "oramem_errors.gc_invalid_payload" in body, "refused with -20002"
    return any("," in k or k not in known for k in request)


CALLS = {
    # (file, subprogram, the request variable, the scope variable, other objects checked)
    "list_json": ("oramem_store.pkb", "l_req", "l_scope", ()),
    "search_json": ("oramem_search.pkb", "l_req", "l_scope", ("l_cfg",)),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_request_member_the_call_does_not_read_is_refused_before_anything_is_read(name):
    filename, req, scope, others = CALLS[name]
    body = unit(code(filename), name)
    for obj in (req, scope, *others):
        known, at = _known(body, obj)
        reads, first = _reads(body, obj)
        assert known == reads, f"{name}: check_keys({obj}) accepts {sorted(known - reads)} without reading them, " \
                               f"or refuses {sorted(reads - known)} that it reads"
        if obj == req:
            assert at < first, f"{name}: the key check comes before the first read of the request"
    known, _ = _known(body, req)
    base = ({"strategy": "vector", "k": 5, "query_vector": [1.0, 0.0], "record_types": ["memory"]}
            if name == "search_json" else {"record_type": "memory"})
    assert not _refused(known, {**base, "user": {"match": "equals", "value": "bob"}})
    # Bob's request written with the add batch's and the record's spelling (or another
    # library's): before the fix each ran with no user condition, over every user's records
    for wrong in ({"user_id": "bob"}, {"user_id": {"match": "equals", "value": "bob"}}, {"users": ["bob"]},
                  {"filter": {"owner": "bob"}}, {"user,agent": 1}):
        assert _refused(known, {**base, **wrong}), wrong
    if name == "search_json":  # list's spelling of the type in a search: it searched every type
        assert _refused(known, {**base, "record_type": "memory"})
    scope_known, _ = _known(body, scope)
    assert scope_known == {"match", "value"}
    assert _refused(scope_known, {"match": "equals", "values": "bob"})


def test_check_keys_hints_the_scope_spelling_for_a_scope_column_name():
    body = unit(code("oramem_filter.pkb"), "check_keys")
    assert "IN ('user_id', 'agent_id', 'thread_id')" in body
    assert '": {"match": "equals", "value": "..."}' in body
    spec = code("oramem_filter.pks")
    assert re.search(r"PROCEDURE\s+check_keys\(\s*in_obj\s+IN\s+JSON_OBJECT_T,\s*in_known\s+IN\s+VARCHAR2,"
                     r"\s*in_what\s+IN\s+VARCHAR2\s*\)", spec)


def _scopes() -> list[tuple[Scope, Scope, Scope]]:
    any_, none, bob = Scope.any(), Scope(ScopeMatch.IS_NULL, None), Scope(ScopeMatch.EQUALS, "bob")
    return [(any_, any_, any_), (bob, none, bob), (none, bob, any_)]


def test_every_request_the_python_driver_sends_passes_the_check():
    """The driver's requests (oramem.oracle.codec), in every shape it builds: each member is
    one the call reads, so nothing the driver sends is refused."""
    listing = unit(code("oramem_store.pkb"), "list_json")
    search = unit(code("oramem_search.pkb"), "search_json")
    list_known, search_known = _known(listing, "l_req")[0], _known(search, "l_req")[0]
    scope_known, hybrid_known = _known(search, "l_scope")[0], _known(search, "l_cfg")[0]
    sent = 0
    for thread, user, agent in _scopes():
        for metadata_filter in (NOT_SET, None, {"topic": "food"}):
            request = json.loads(codec.list_json(ListRequest("memory", None, thread, user, agent, metadata_filter)))
            assert not _refused(list_known, request), request
            assert not any(_refused(scope_known, request[d]) for d in ("thread", "user", "agent"))
            sent += 1
        for strategy in SearchStrategy:
            for handicap in (0.0, 0.1):
                request = json.loads(codec.search_json(
                    SearchRequest(strategy, 5, "tea", np.ones(4, dtype=np.float32), thread, user, agent,
                                  ("memory", "fact"), {"topic": "food"}, handicap),
                    HybridConfig(depth=50), "english"))
                assert not _refused(search_known, request), request
                assert not any(_refused(scope_known, request[d]) for d in ("thread", "user", "agent"))
                if "hybrid" in request:
                    assert not _refused(hybrid_known, request["hybrid"]), request["hybrid"]
                sent += 1
    assert sent == 3 * (3 + 3 * 2)


def test_the_recording_fakes_stand_in_refuses_what_the_packages_refuse():
    """tests/oracle/plsql_standin.py answers list_json / search_json for runs over the fake:
    it accepts exactly the members the packages accept (and refuses the rest with -20002)."""
    from oracle.plsql_standin import StoreStandIn  # tests/ is on sys.path (rootdir conftest)

    listing = unit(code("oramem_store.pkb"), "list_json")
    search = unit(code("oramem_search.pkb"), "search_json")
    assert StoreStandIn.LIST_KEYS == _known(listing, "l_req")[0]
    assert StoreStandIn.SEARCH_KEYS == _known(search, "l_req")[0]
    add, update = unit(code("oramem_store.pkb"), "add_json"), unit(code("oramem_store.pkb"), "update_json")
    assert StoreStandIn.ADD_KEYS == _known(add, "l_doc")[0]
    assert StoreStandIn.RECORD_KEYS == _known(add, "l_r")[0]
    assert StoreStandIn.UPDATE_KEYS == _known(update, "l_req")[0]
    import oracledb

    from oracle.fakes import Call

    standin = StoreStandIn()
    for name, what, request in (
            ("list", "in_request", {"record_type": "memory", "user_id": "bob"}),
            ("list", "in_request", {"record_type": "memory", "user": {"match": "equals", "value": "bob", "x": 1}}),
            ("search", "in_request", {"k": 5, "user_id": "bob"}),
            ("add", "in_batch", {"records": [{"id": "b1", "record_type": "memory", "user": "bob"}]}),
            ("update", "in_request", {"record_type": "memory", "record_id": "b1", "text": "x"})):
        with pytest.raises(oracledb.DatabaseError, match="ORA-20002"):
            getattr(standin, name)(Call("callfunc", binds={what: json.dumps(request)}))
    assert standin.records == {}


WRITES = {
    # subprogram: the objects checked, each with Bob's mistake (the list request's spelling, or another library's)
    "add_json": {"l_doc": {"records": [], "record": {}}, "l_r": {"id": "b1", "record_type": "memory", "user": "bob"}},
    "update_json": {"l_req": {"record_type": "memory", "record_id": "b1", "text": "x"}},
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_a_write_member_the_call_does_not_read_is_refused_before_anything_is_written(name):
    """add_json stored a record written as ``{"id": "b1", ..., "user": "bob"}`` (list's
    spelling) as no user's: his erasure left it and every reader of unscoped records got it;
    update_json applied what it read of ``{"text": ..., "metadata": ...}`` and answered 1.
    The Python API refuses both (``add(..., user="bob")``, ``update(..., data=...)``)."""
    body = unit(code("oramem_store.pkb"), name)
    for obj, wrong in WRITES[name].items():
        known, at = _known(body, obj)
        reads, first = _reads(body, obj)
        assert known == reads, f"{name}: check_keys({obj}): {sorted(known ^ reads)}"
        assert at < first, f"{name}: the key check comes before the first read of {obj}"
        assert _refused(known, wrong), wrong
    assert body.index("SAVEPOINT") < body.index("oramem_filter.check_keys") < body.index("INSERT" if name == "add_json"
                                                                                       else "UPDATE")


def test_every_add_and_update_the_python_driver_sends_passes_the_check():
    """The driver's add batches (plain, with TTL, a restore with kept times and on_conflict,
    profiles) and updates (each retrieval change) over the recording fake: every member is one
    the calls read."""
    from oramem import PendingRecordBatch
    from oracle.plsql_standin import standin_store  # tests/ is on sys.path (rootdir conftest)

    add = unit(code("oramem_store.pkb"), "add_json")
    update = unit(code("oramem_store.pkb"), "update_json")
    batch_known, record_known, update_known = _known(add, "l_doc")[0], _known(add, "l_r")[0], _known(update, "l_req")[0]
    store, rec = standin_store(dim=4)
    try:
        store.add(["Bob drinks tea"], "message", record_ids="m1", user_ids="bob", agent_ids="desk", thread_ids="t1",
                  roles="user", timestamps="2026-01-01T00:00:00", metadata={"k": 1}, ttl_days=3)
        store.add(["Bob's memory"], "memory", record_ids="b1", user_ids="bob", index_texts=[["a", "b"]])
        store.add_user("bob", "Bob, chess player")
        store.restore_batches([PendingRecordBatch(["kept"], "memory", record_ids=["k1"], user_ids="bob")],
                              times=[("2025-01-01T00:00:00+00:00", None)], on_conflict="skip")
        store.update("memory", "b1", text="Bob drinks coffee", metadata={"k": 2}, timestamp=None, ttl_days=5)
        # the revector while the record has its one retrieval row (fake40: after index_text=None
        # cleared the rows, a vector is -20006 "1 vector(s) but 0 retrieval row(s)", as in update_json)
        store.update("memory", "b1", embedding=[1.0, 0.0, 0.0, 0.0])
        store.update("memory", "b1", embedding=None)
        store.update("memory", "b1", index_text=None)
        store.update("memory", "b1", text=None)
    finally:
        store.close()
    batches = [json.loads(getattr(c.binds["in_batch"], "data", c.binds["in_batch"]))
               for c in rec.calls if c.name == "oramem_store.add_json"]
    updates = [json.loads(getattr(c.binds["in_request"], "data", c.binds["in_request"]))
               for c in rec.calls if c.name == "oramem_store.update_json"]
    assert len(batches) == 4 and len(updates) == 5
    assert any("on_conflict" in b for b in batches) and any("restored_times" in r for b in batches for r in b["records"])
    assert {u.get("retrieval") for u in updates} >= {"replace", "clear", "revector", "strip_vectors"}
    for b in batches:
        assert not _refused(batch_known, b), b
        assert not any(_refused(record_known, r) for r in b["records"]), b
    for u in updates:
        assert not _refused(update_known, u), u


def test_a_cascade_of_a_type_without_one_is_refused_as_the_python_store_refuses_it():
    """delete_record_json(in_cascade => 1) of a memory (or any type but the profiles and
    thread) was a plain delete with the flag ignored; the Python store refuses it (SC-8.2).
    The PL/SQL now refuses it with -20001 before anything is deleted."""
    from oramem import SQLiteMemoryStore
    from oramem.testing import HashEmbedder

    with SQLiteMemoryStore(":memory:", embedder=HashEmbedder(8)) as store:
        store.add(["x"], "memory", record_ids=["m1"], user_ids="bob")
        with pytest.raises(ValueError, match="cascade=True applies to user_profile, agent_profile and thread"):
            store.delete("memory", "m1", cascade=True)
        assert store.get("memory", "m1") is not None
    body = unit(code("oramem_store.pkb"), "delete_record_json")
    check = re.search(r"IF\s+in_cascade\s*=\s*1\s+AND\s+l_type\s*<>\s*'thread'\s+AND\s+NOT\s+"
                      r"oramem_registry\.is_profile_type\(l_type\)\s+THEN\s+bad_argument\(", body)
    assert check, "a cascade of another type is -20001"
    first_write = min(body.index(w) for w in ("remove_thread(", "lock_erasers(", "DELETE FROM") if w in body)
    assert body.index("SAVEPOINT") < check.start() < first_write


def test_the_packages_own_update_request_passes_the_check():
    """oramem_kg_jobs.sync_stale_metadata builds an update request in PL/SQL (the memify job's
    kg_is_stale flag): each member it puts is one update_json reads."""
    update_known = _known(unit(code("oramem_store.pkb"), "update_json"), "l_req")[0]
    body = unit(code("oramem_kg_jobs.pkb"), "sync_stale_metadata")
    assert "oramem_store.update_json(" in body
    put = set(re.findall(r"l_req\.put\('(\w+)'", body))
    assert put == {"record_type", "record_id", "metadata"} and not _refused(update_known, dict.fromkeys(put))


def test_a_search_member_of_the_wrong_type_is_refused_not_ignored():
    """search_json ignored a strategy that is not a string (a vector search ran), an "exact"
    that is not a boolean, and record_types that is not a list ("record_types": "memory":
    every type was searched); the Python store refuses the same mistakes (a strategy of
    another type, record_types given as one string). Each is now an error naming the member."""
    from oramem import SQLiteMemoryStore
    from oramem.testing import HashEmbedder

    with SQLiteMemoryStore(":memory:", embedder=HashEmbedder(8)) as store:
        for bad in ({"strategy": 5}, {"record_types": "memory"}):
            with pytest.raises(TypeError):
                store.search("tea", **bad)
    body = unit(code("oramem_search.pkb"), "search_json")

    def refused(member: str, kind: str, error: str) -> bool:
        return bool(re.search(
            rf"IF\s+l_req\.has\('{member}'\)\s+THEN\s+IF\s+NOT\s+l_req\.get\('{member}'\)\.is_null\s+"
            rf"(?:THEN\s+IF\s+NOT|AND\s+NOT)\s+l_req\.get\('{member}'\)\.{kind}\s+THEN\s+{error}", body))

    assert refused("strategy", "is_string", r"bad_argument\(")
    assert refused("exact", "is_boolean", r"bad_argument\(")
    assert refused("record_types", "is_array", r"oramem_errors\.raise_error\(oramem_errors\.gc_invalid_record_type")
    assert not re.search(r"IF\s+l_req\.has\('(strategy|exact)'\)\s+AND", body), "no member skipped for its type"
