"""PL/SQL text tests for left36 (2026-12-07 p): the nested JSON objects of the store's requests
and of the open_store settings refuse a member they do not read, as red32 made the requests
themselves do (``oramem_filter.check_keys``, -20002).

Before, each of these ignored an unknown member while the call answered as if it had applied:
- a record's or an update's ``ttl`` (``ttl_expiry``): ``{"days": 3, "anchour": "timestamp"}``
  counted from created_at; ``{"ttl_days": 3}`` stored a record that never expires;
- a record's ``restored_times`` (add_json): ``{"created_at": ..., "expires": ...}`` restored a
  record that expired in the backup as one that never expires;
- each retrieval row of ``chunks`` (collect_passages, the pass before anything is written):
  ``{"text": ..., "embedding": [...]}`` stored a row without its vector;
- an update's ``chunks`` with a retrieval other than replace, ``vectors`` other than revector:
  ``{"retrieval": "keep", "chunks": [...]}`` changed no retrieval row and answered 1;
- the open_store / create_store settings and their ``retention`` (parse_settings):
  ``{"vector_dimension": 384}`` created a store without vectors, ``{"default_ttl": 30}`` one
  whose records never expire.
The ``embedder`` settings member is an identity recorded and compared whole (every member
kept), so it has no list of its own. Static-checked, not run against Oracle.

The member lists are read from the text as tests/plsql/test_red32_request_keys.py does: the
names ``check_keys`` accepts must be exactly the names the body reads from that object, and
the check must come before the first read.
"""

from __future__ import annotations

import json
import re

import pytest

from .test_red32_request_keys import _known, _reads, _refused
from .test_round3_findings import code
from .test_store_findings import unit

NESTED = {
    # (file, subprograms whose reads of the object count, the object, Bob's mistake)
    "ttl": ("oramem_store.pkb", ("check_ttl", "ttl_expiry"), "in_ttl", {"days": 3, "anchour": "timestamp"}),
    "restored_times": ("oramem_store.pkb", ("add_json",), "l_kept",
                       {"created_at": "2025-01-01T00:00:00+00:00", "expires": "2025-02-01T00:00:00+00:00"}),
    "chunk": ("oramem_store.pkb", ("collect_passages", "collect_chunks"), "l_obj",
              {"text": "Bob drinks tea", "embedding": [1.0, 0.0]}),
    "settings": ("oramem_admin.pkb", ("parse_settings",), "l_obj", {"memory_store_id": "S1", "vector_dimension": 384}),
    "retention": ("oramem_admin.pkb", ("parse_settings",), "l_ret", {"default_ttl": 30}),
}


@pytest.mark.parametrize("name", sorted(NESTED))
def test_a_nested_member_the_call_does_not_read_is_refused(name):
    filename, units, obj, wrong = NESTED[name]
    checked = unit(code(filename), units[0])
    known, at = _known(checked, obj)
    reads: set[str] = set()
    for u in units:
        reads |= _reads(unit(code(filename), u), obj)[0]
    assert known == reads, f"{name}: check_keys({obj}): {sorted(known ^ reads)}"
    before = checked[:at]
    assert not re.search(rf"\b{obj}\.(?:has|get\w*)\('|\b\w+\(\s*{obj}\s*,\s*'", before), \
        f"{name}: the key check comes before the first read of {obj}"
    assert _refused(known, wrong), wrong


def test_the_chunk_check_runs_in_the_pass_before_anything_is_written():
    """collect_passages(..., FALSE) is add's and update's validation pass (before the first
    INSERT / UPDATE); the chunk check sits in its first loop, before the early return of a
    store that does not group."""
    body = unit(code("oramem_store.pkb"), "collect_passages")
    check = body.index("oramem_filter.check_keys(l_obj")
    assert check < body.index("IF l_with > 0 AND in_store.keyword_passages <> 1 THEN")
    assert check < body.index("IF in_store.keyword_passages <> 1 THEN\n         RETURN;")
    add = unit(code("oramem_store.pkb"), "add_json")
    assert add.index("l_where || '.chunks', FALSE,") < add.index("FORALL i IN l_lo .. l_hi")
    kept = add.index("oramem_filter.check_keys(l_kept")
    assert add.index("SAVEPOINT") < kept < add.index("FORALL i IN l_lo .. l_hi")


def test_an_update_refuses_chunks_or_vectors_its_retrieval_does_not_read():
    body = unit(code("oramem_store.pkb"), "update_json")
    for member, reader in (("chunks", "replace"), ("vectors", "revector")):
        m = re.search(rf"IF\s+l_req\.has\('{member}'\)\s+AND\s+l_retrieval\s*<>\s*'{reader}'\s+THEN\s+bad_payload\(",
                      body)
        assert m, f"{member} without retrieval {reader} is refused"
        assert m.start() < body.index("EXECUTE IMMEDIATE l_rec_upd"), "before the record is updated"
        assert m.start() < body.index("' FOR UPDATE'"), "before the record is read"
    assert "ttl_expiry(l_req.get_object('ttl'), l_created, l_event_ts, 'update request.ttl')" in body


def test_the_embedder_identity_is_kept_whole_not_read_member_by_member():
    """Not a defect: parse_settings keeps the embedder object whole (to_clob), recorded and
    compared by identity_core, which reads every member; so it has no key list."""
    body = unit(code("oramem_admin.pkb"), "parse_settings")
    assert "l_set.embedder := l_emb.to_clob;" in body
    assert "check_keys(l_emb" not in body


def test_every_settings_request_the_python_driver_sends_passes_the_check():
    from oramem.oracle import codec
    from oramem.requests import StoreSettings
    from oramem.types import MemoryRetentionConfig, SearchIndexSyncMode, SearchStrategy

    body = unit(code("oramem_admin.pkb"), "parse_settings")
    top, retention = _known(body, "l_obj")[0], _known(body, "l_ret")[0]
    sent = 0
    for strategy in SearchStrategy:
        for dim in (None, 8):
            for ret in (None, MemoryRetentionConfig(default_ttl_days=3, max_ttl_days=9),
                        MemoryRetentionConfig(default_ttl_days=None, max_ttl_days=None)):
                for sync in (None, SearchIndexSyncMode.MANUAL):
                    settings = StoreSettings(memory_store_id="S1", vector_dim=dim, search_strategy=strategy,
                                             search_index_sync=sync, retention=ret,
                                             embedder={"kind": "hash", "dim": 8})
                    for model, language in ((None, None), ("MINILM", "english")):
                        request = json.loads(codec.settings_json(settings, model, language))
                        assert not _refused(top, request), request
                        if "retention" in request:
                            assert not _refused(retention, request["retention"]), request
                        sent += 1
    assert sent == 3 * 2 * 3 * 2 * 2
    # plsql/README.md's example and the selftest's calls (oramem/cli/selftest.py)
    for example in ({"memory_store_id": "APPDEMO", "vector_dim": 3, "search_strategy": "vector"},
                    {"memory_store_id": "S", "keyword_language": "none"}):
        assert not _refused(top, example)


def test_the_recording_fake_refuses_what_the_packages_refuse():
    """The stand-in (add / update) and the fake's open_store / create_store accept exactly the
    members the packages accept, and refuse the rest with -20002."""
    import oracledb

    from oracle import fakes
    from oracle.fakes import Call, FakePool, Recorder
    from oracle.plsql_standin import StoreStandIn

    store = code("oramem_store.pkb")
    assert StoreStandIn.TTL_KEYS == _known(unit(store, "check_ttl"), "in_ttl")[0]
    assert StoreStandIn.RESTORED_KEYS == _known(unit(store, "add_json"), "l_kept")[0]
    assert StoreStandIn.CHUNK_KEYS == _known(unit(store, "collect_passages"), "l_obj")[0]
    settings = unit(code("oramem_admin.pkb"), "parse_settings")
    assert fakes.SETTINGS_KEYS == _known(settings, "l_obj")[0]
    assert fakes.RETENTION_KEYS == _known(settings, "l_ret")[0]

    standin = StoreStandIn()
    rec = {"id": "b1", "record_type": "memory", "user_id": "bob"}
    for name, what, request in (
            ("add", "in_batch", {"records": [{**rec, "ttl": {"days": 3, "anchour": "timestamp"}}]}),
            ("add", "in_batch", {"records": [{**rec, "restored_times": {"created_at": "2025-01-01T00:00:00Z",
                                                                        "expires": None}}]}),
            ("add", "in_batch", {"records": [{**rec, "chunks": [{"text": "t", "embedding": [1.0]}]}]}),
            ("update", "in_request", {"record_type": "memory", "record_id": "b1", "ttl": {"ttl_days": 3}}),
            ("update", "in_request", {"record_type": "memory", "record_id": "b1", "retrieval": "replace",
                                      "chunks": [{"txt": "t"}]}),
            ("update", "in_request", {"record_type": "memory", "record_id": "b1", "chunks": [{"text": "t"}]}),
            ("update", "in_request", {"record_type": "memory", "record_id": "b1", "retrieval": "replace",
                                      "vectors": [[1.0]]})):
        with pytest.raises(oracledb.DatabaseError, match="ORA-20002"):
            getattr(standin, name)(Call("callfunc", binds={what: json.dumps(request)}))
    assert standin.records == {}

    recorder = Recorder()
    conn = FakePool(recorder).acquire()
    cur = conn.cursor()
    for name in ("oramem_admin.open_store", "oramem_admin.create_store"):
        for bad in ({"memory_store_id": "S1", "vector_dimension": 384},
                    {"memory_store_id": "S1", "retention": {"default_ttl": 30}}):
            with pytest.raises(oracledb.DatabaseError, match="ORA-20002"):
                cur.callfunc(name, oracledb.DB_TYPE_CLOB, keyword_parameters={"in_settings": json.dumps(bad)})
    assert recorder.plsql == [], "refused before the call is recorded as made"


def test_every_add_update_and_open_the_python_driver_sends_passes_over_the_fake():
    """The driver's batches (TTL, a restore with kept times, chunks with keyword_text on a
    grouping store is covered by test_keyword_passages_fake), updates (every retrieval) and
    its open, over the recording fake whose stand-in refuses what the packages refuse."""
    from oramem import PendingRecordBatch
    from oracle.plsql_standin import standin_store

    store, rec = standin_store(dim=4)
    try:
        store.add(["Bob drinks tea"], "message", record_ids="m1", user_ids="bob", thread_ids="t1", roles="user",
                  timestamps="2026-01-01T00:00:00", ttl_days=3, ttl_anchor="timestamp")
        store.add(["Bob's memory"], "memory", record_ids="b1", user_ids="bob", ttl_days=None)
        store.restore_batches([PendingRecordBatch(["kept"], "memory", record_ids=["k1"], user_ids="bob")],
                              times=[("2025-01-01T00:00:00+00:00", "2099-01-01T00:00:00+00:00")])
        store.update("memory", "b1", text="Bob drinks coffee", ttl_days=5, ttl_anchor="created_at")
        store.update("memory", "b1", index_text="coffee")
        store.update("memory", "b1", embedding=[1.0, 0.0, 0.0, 0.0])
        store.update("memory", "b1", embedding=None)
        store.update("memory", "b1", text=None)
    finally:
        store.close()
    batches = [json.loads(getattr(c.binds["in_batch"], "data", c.binds["in_batch"]))
               for c in rec.calls if c.name == "oramem_store.add_json"]
    updates = [json.loads(getattr(c.binds["in_request"], "data", c.binds["in_request"]))
               for c in rec.calls if c.name == "oramem_store.update_json"]
    assert len(batches) == 3 and len(updates) == 5
    assert any(isinstance(r.get("ttl"), dict) for b in batches for r in b["records"])
    assert any(r.get("restored_times") for b in batches for r in b["records"])
    assert any(r.get("chunks") for b in batches for r in b["records"])
    assert any(isinstance(u.get("ttl"), dict) for u in updates)
    assert {u.get("retrieval") for u in updates} >= {"replace", "revector", "strip_vectors"}
    assert any(c.name == "oramem_admin.open_store" for c in rec.calls)
