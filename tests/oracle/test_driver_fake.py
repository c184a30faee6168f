"""OracleEngine against a recording fake of python-oracledb (no database needed).

Checks, for every operation and in both colours (sync pool / connection, async pool /
connection): the package subprogram called, function vs procedure, the return type, the
exact keyword parameter names (== oramem.oracle.calls), the JSON shape of the payloads
(plsql/README.md), commit/rollback behaviour, error mapping, and argument errors raised
before any round trip.
"""

from __future__ import annotations

import asyncio
import inspect
import json

import numpy as np
import oracledb
import pytest

from oramem import (
    CapabilityError,
    DuplicateRecordError,
    MemoryRetentionConfig,
    MessageRecord,
    Record,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
    SchemaError,
    StoreBusy,
    StoreError,
    StoreNotFound,
    StoreSettingsMismatch,
    TimeToLiveAnchor,
)
from oramem.engine import Engine
from oramem.oracle import AsyncOracleEngine, OracleEngine, SyncOracleEngine
from oramem.oracle.driver import CALLS
from oramem.requests import (
    AddRequest,
    ChunkRow,
    ListRequest,
    NewRecord,
    RetrievalChange,
    Scope,
    ScopeMatch,
    SearchRequest,
    StoreSettings,
    TTLSpec,
    UpdateRequest,
)
from oramem.types import NOT_SET

from .fakes import FakeAsyncConnection, FakeAsyncPool, FakeConnection, FakePool, Recorder, db_error

SETTINGS_OUT = {
    "memory_store_id": "MYSTORE", "vector_dim": 3, "search_strategy": "vector",
    "search_index_sync": "on_commit", "retention": {"default_ttl_days": 30, "max_ttl_days": None},
    "embedding_model": None, "deletion_hook": None, "supported_strategies": ["vector"],
    "schema_version": 1, "code_schema_version": 1, "state": "READY", "purge_job": None,
    "created": True, "upgraded": False, "warnings": [], "last_error": None,
}
REC = {"id": "r1", "record_type": "memory", "content": "hello", "timestamp": None, "metadata": {"k": 1},
       "thread_id": "t1", "user_id": "u1", "agent_id": None, "created_at": "2026-11-30T17:08:01.000000+00:00",
       "expires_at": None, "role": None, "seq_no": 7}
MSG = dict(REC, id="m1", record_type="message", role="user", seq_no=8)

KINDS = ["pool", "conn", "async_pool", "async_conn"]
#: the colour is the caller's choice of class (python-oracledb's connect / connect_async)
ENGINE_OF = {"pool": SyncOracleEngine, "conn": SyncOracleEngine, "async_pool": AsyncOracleEngine,
             "async_conn": AsyncOracleEngine}


def make(kind: str, answers=None):
    rec = Recorder(answers)
    rec.answers.setdefault("oramem_admin.open_store", json.dumps(SETTINGS_OUT))
    rec.answers.setdefault("oramem_kg_jobs.has_knowledge", 0)  # no knowledge tables unless a test says so
    target = {"pool": FakePool, "conn": FakeConnection, "async_pool": FakeAsyncPool,
              "async_conn": FakeAsyncConnection}[kind](rec)
    return ENGINE_OF[kind](target), rec


def run(engine: OracleEngine, method: str, *args):
    """Call ``method`` in the engine's colour."""
    if engine.is_async:
        return asyncio.run(getattr(engine, method + "_async")(*args))
    return getattr(engine, method)(*args)


def opened(kind: str, answers=None):
    engine, rec = make(kind, answers)
    run(engine, "open", settings(), SchemaPolicy.CREATE_IF_NECESSARY)
    rec.calls.clear()
    return engine, rec


def settings(**kw):
    base = dict(memory_store_id="mystore", vector_dim=3, search_strategy=SearchStrategy.VECTOR,
                search_index_sync=SearchIndexSyncMode.ON_COMMIT, retention=MemoryRetentionConfig(30, None))
    base.update(kw)
    return StoreSettings(**base)


def the_call(rec: Recorder, op: str):
    (call,) = rec.plsql
    spec = CALLS[op]
    assert call.name == spec.qualified_name
    assert call.kind == ("callfunc" if spec.is_function else "callproc")
    assert list(call.binds) == list(spec.param_names), "keyword names must be exactly the call table's"
    if spec.is_function:
        expected_rt = oracledb.DB_TYPE_CLOB if spec.returns == "CLOB" else int
        assert call.return_type is expected_rt
    return call


def committed(rec: Recorder) -> bool:
    return bool(rec.of("commit"))


def record(i="r1", rtype="memory", **kw):
    base = dict(id=i, record_type=rtype, content="hello", thread_id="t1", user_id="u1", agent_id=None, role=None,
                timestamp="2026-11-30T17:08:00.000000+00:00", metadata={"topic": "x"},
                ttl=TTLSpec(30, TimeToLiveAnchor.CREATED_AT),
                chunks=(ChunkRow("hello", np.array([0.1, 0.2, 0.3], dtype=np.float32)), ChunkRow("more", None)))
    base.update(kw)
    return NewRecord(**base)


# -- construction and colours -----------------------------------------------------------

def test_rejects_non_oracledb_objects():
    with pytest.raises(TypeError, match="python-oracledb connection or pool"):
        SyncOracleEngine(object())


@pytest.mark.parametrize("kind", KINDS)
def test_the_colour_is_the_class_the_caller_picks(kind):
    """Issue 24 / architecture review refactor 2: as python-oracledb's connect / connect_async,
    the caller picks the colour by the class; the base is not a factory, and a source of the
    other colour is a TypeError naming the right class, before any call."""
    rec = Recorder()
    target = {"pool": FakePool, "conn": FakeConnection, "async_pool": FakeAsyncPool,
              "async_conn": FakeAsyncConnection}[kind](rec)
    with pytest.raises(TypeError, match=r"SyncOracleEngine\(pool\).*AsyncOracleEngine\(pool\)"):
        OracleEngine(target)
    right, wrong = (SyncOracleEngine, AsyncOracleEngine) if kind in ("pool", "conn") else (
        AsyncOracleEngine, SyncOracleEngine)
    with pytest.raises(TypeError, match=f"other colour: use {right.__name__}"):
        wrong(target)
    assert type(right(target)) is right
    assert rec.calls == []


def test_every_async_twin_is_native():
    names = [n for n in dir(Engine) if n.endswith("_async")]
    assert names
    for n in names:
        assert getattr(AsyncOracleEngine, n) is not getattr(Engine, n), f"{n} falls back to a worker thread"
        if n == "transaction_async":  # an async context manager (SC-12)
            assert inspect.isasyncgenfunction(inspect.unwrap(getattr(AsyncOracleEngine, n)))
        else:
            assert inspect.iscoroutinefunction(getattr(AsyncOracleEngine, n))
    src = inspect.getsource(inspect.getmodule(AsyncOracleEngine))
    assert "to_thread" not in src


@pytest.mark.parametrize("kind", ["async_pool", "async_conn"])
def test_sync_call_on_async_source_is_a_type_error(kind):
    engine, rec = make(kind)
    with pytest.raises(TypeError, match="open_async"):
        engine.open(settings(), SchemaPolicy.REQUIRE_EXISTING)
    assert rec.calls == []


@pytest.mark.parametrize("kind", ["pool", "conn"])
def test_async_call_on_sync_source_is_a_type_error(kind):
    engine, rec = make(kind)
    with pytest.raises(TypeError, match="create_pool_async"):
        asyncio.run(engine.open_async(settings(), SchemaPolicy.REQUIRE_EXISTING))
    assert rec.calls == []


@pytest.mark.parametrize("kind", KINDS)
def test_operations_before_open_fail_clearly(kind):
    engine, rec = make(kind)
    with pytest.raises(RuntimeError, match="open"):
        run(engine, "get", "memory", "x")
    assert rec.plsql == []


# -- open ------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_open_sends_settings_and_policy(kind):
    engine, rec = make(kind)
    out = run(engine, "open", settings(), SchemaPolicy.CREATE_IF_NECESSARY)
    call = the_call(rec, "open")
    assert call.binds["in_policy"] == "CREATE_IF_NECESSARY"
    assert call.binds["in_lock_timeout"] == 60
    assert json.loads(call.binds["in_settings"]) == {
        "memory_store_id": "mystore", "search_strategy": "vector", "vector_dim": 3,
        "search_index_sync": "on_commit", "retention": {"default_ttl_days": 30, "max_ttl_days": None},
    }
    assert out == StoreSettings("MYSTORE", 3, SearchStrategy.VECTOR, SearchIndexSyncMode.ON_COMMIT,
                                MemoryRetentionConfig(30, None))
    assert engine.memory_store_id == "MYSTORE"
    assert not committed(rec)
    if kind.endswith("pool"):
        assert rec.of("acquire") and rec.of("release")


def test_open_leaves_adoptable_settings_absent_and_warns():
    out = dict(SETTINGS_OUT, warnings=["purge job not created: CREATE JOB is missing"])
    engine, rec = make("pool", {"oramem_admin.open_store": json.dumps(out)})
    with pytest.warns(UserWarning, match="CREATE JOB"):
        engine.open(settings(vector_dim=None, search_index_sync=None, retention=None), "require_existing")
    sent = json.loads(rec.plsql[0].binds["in_settings"])
    assert sent == {"memory_store_id": "mystore", "search_strategy": "vector"}
    assert rec.plsql[0].binds["in_policy"] == "REQUIRE_EXISTING"


def test_open_rejects_bad_policy_before_any_call():
    engine, rec = make("pool")
    with pytest.raises(ValueError, match="schema_policy"):
        engine.open(settings(), "sometimes")
    with pytest.raises(TypeError, match="StoreSettings"):
        engine.open({"memory_store_id": "x"}, SchemaPolicy.RECREATE)
    assert rec.calls == []


def test_embedding_model_is_sent_for_hybrid():
    rec = Recorder({"oramem_admin.open_store": json.dumps(SETTINGS_OUT)})
    engine = SyncOracleEngine(FakePool(rec), embedding_model="oramem_embed")
    engine.open(settings(search_strategy=SearchStrategy.HYBRID), SchemaPolicy.CREATE_IF_NECESSARY)
    assert json.loads(rec.plsql[0].binds["in_settings"])["embedding_model"] == "ORAMEM_EMBED"
    with pytest.raises(ValueError, match="model_name"):
        SyncOracleEngine(FakePool(rec), embedding_model="x; drop table t")


# -- writes ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_add_sends_one_batch_and_commits(kind):
    engine, rec = opened(kind, {"oramem_store.add_json": '["r1","m1"]'})
    req = AddRequest((record(), record("m1", "message", role="user", ttl=TTLSpec(None, TimeToLiveAnchor.TIMESTAMP),
                                       chunks=()),), batch_size=128)
    assert run(engine, "add", req) == ["r1", "m1"]
    call = the_call(rec, "add")
    assert call.binds["in_store_id"] == "MYSTORE" and call.binds["in_batch_size"] == 128
    batch = json.loads(call.binds["in_batch"])
    assert batch == {"records": [
        {"id": "r1", "record_type": "memory", "content": "hello", "thread_id": "t1", "user_id": "u1",
         "agent_id": None, "role": None, "timestamp": "2026-11-30T17:08:00.000000+00:00",
         "metadata": {"topic": "x"}, "ttl": {"days": 30, "anchor": "created_at"},
         "chunks": [{"text": "hello", "vector": [0.1, 0.2, 0.3]},
                    {"text": "more", "vector": None}]},
        {"id": "m1", "record_type": "message", "content": "hello", "thread_id": "t1", "user_id": "u1",
         "agent_id": None, "role": "user", "timestamp": "2026-11-30T17:08:00.000000+00:00",
         "metadata": {"topic": "x"}, "ttl": {"days": None, "anchor": "timestamp"}, "chunks": []},
    ]}
    # float32 values survive the JSON round trip exactly
    assert np.array_equal(np.array(batch["records"][0]["chunks"][0]["vector"], dtype=np.float32),
                          np.array([0.1, 0.2, 0.3], dtype=np.float32))
    assert committed(rec) and not rec.of("rollback")


@pytest.mark.parametrize("kind", KINDS)
def test_restored_times_and_conflict_modes_reach_add_json(kind):
    """A backup's kept times go as "restored_times" (the ttl is not sent with them: the
    package refuses both) and on_conflict as the batch's "on_conflict"; "fail" is the
    package's default and is not sent; the reply is the ids written."""
    import dataclasses

    engine, rec = opened(kind, {"oramem_store.add_json": '["r2"]'})
    kept = dataclasses.replace(
        record(), restored_times=("2020-01-01T00:00:00.000000+00:00", "2030-01-01T00:00:00.000000+00:00")
    )
    other = dataclasses.replace(record(), id="r2")
    assert run(engine, "add", AddRequest((kept, other), batch_size=8, on_conflict="skip")) == ["r2"]
    batch = json.loads(the_call(rec, "add").binds["in_batch"])
    assert batch["on_conflict"] == "skip"
    first, second = batch["records"]
    assert first["restored_times"] == {"created_at": "2020-01-01T00:00:00.000000+00:00",
                                       "expires_at": "2030-01-01T00:00:00.000000+00:00"}
    assert first["ttl"] is None
    assert "restored_times" not in second and second["ttl"] == {"days": 30, "anchor": "created_at"}
    run(engine, "add", AddRequest((record(),), batch_size=8, on_conflict="replace"))
    assert json.loads(rec.plsql[-1].binds["in_batch"])["on_conflict"] == "replace"
    run(engine, "add", AddRequest((record(),), batch_size=8))
    assert "on_conflict" not in json.loads(rec.plsql[-1].binds["in_batch"])


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_conflict_mode_is_refused_before_any_call(kind):
    engine, rec = opened(kind, {"oramem_store.add_json": '["r1"]'})
    before = len(rec.plsql)
    with pytest.raises(ValueError, match="on_conflict must be one of fail, skip, replace"):
        run(engine, "add", AddRequest((record(),), batch_size=8, on_conflict="merge"))
    assert len(rec.plsql) == before


@pytest.mark.parametrize("kind", ["pool", "async_pool"])
def test_big_batches_are_bound_as_clob(kind):
    engine, rec = opened(kind, {"oramem_store.add_json": "[]"})
    big = record(content="x" * 40000, chunks=())
    run(engine, "add", AddRequest((big,), batch_size=256))
    call = rec.plsql[0]
    # both colours: a temporary CLOB, never named setinputsizes (DPY-2006, review F1)
    assert [c.binds["data"][:12] for c in rec.of("createlob")] == ['{"records":[']
    assert call.input_sizes == {}
    assert isinstance(call.binds["in_batch"], oracledb.LOB if kind == "pool" else oracledb.AsyncLOB)


@pytest.mark.parametrize("kind", KINDS)
def test_argument_errors_before_any_call(kind):
    engine, rec = opened(kind)
    bad_vec = record(chunks=(ChunkRow("x", np.array([np.nan, 0, 0], dtype=np.float32)),))
    with pytest.raises(ValueError, match="finite"):
        run(engine, "add", AddRequest((bad_vec,), batch_size=10))
    with pytest.raises(ValueError, match="batch_size"):
        run(engine, "add", AddRequest((record(),), batch_size=0))
    with pytest.raises(ValueError, match="NaN"):
        run(engine, "add", AddRequest((record(metadata={"x": float("inf")}),), batch_size=10))
    with pytest.raises(TypeError, match="record_id"):
        run(engine, "delete", "memory", 5, False)
    with pytest.raises(ValueError, match="last_n"):
        run(engine, "list_thread_messages", "t1", 0)
    assert rec.plsql == []


@pytest.mark.parametrize("kind", KINDS)
def test_update_request_json(kind):
    engine, rec = opened(kind, {"oramem_store.update_json": 1})
    req = UpdateRequest("memory", "r1", content="new", retrieval=RetrievalChange.REPLACE,
                        chunks=(ChunkRow("new", np.array([1, 0, 0], dtype=np.float32)),),
                        metadata=None, ttl=TTLSpec(7, TimeToLiveAnchor.TIMESTAMP))
    assert run(engine, "update", req) == 1
    call = the_call(rec, "update")
    assert json.loads(call.binds["in_request"]) == {
        "record_type": "memory", "record_id": "r1", "retrieval": "replace", "content": "new",
        "chunks": [{"text": "new", "vector": [1.0, 0.0, 0.0]}], "metadata": None,
        "ttl": {"days": 7, "anchor": "timestamp"},
    }
    assert committed(rec)


def test_update_omits_not_set_fields_and_sends_revector():
    engine, rec = opened("pool", {"oramem_store.update_json": 0})
    req = UpdateRequest("fact", "f1", retrieval=RetrievalChange.REVECTOR,
                        vectors=(np.array([0, 1, 0], dtype=np.float32), np.array([0, 0, 1], dtype=np.float32)))
    assert engine.update(req) == 0
    assert json.loads(rec.plsql[0].binds["in_request"]) == {
        "record_type": "fact", "record_id": "f1", "retrieval": "revector",
        "vectors": [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
    }
    assert UpdateRequest("fact", "f1").content is NOT_SET


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cascade", [False, True])
def test_delete(kind, cascade):
    answer = json.dumps({"count": 1, "event": {"memory_store_id": "MYSTORE", "records": [["user_profile", "u1"]],
                                               "thread_ids": [], "user_ids": ["u1"], "agent_ids": [],
                                               "reason": "cascade"}})
    engine, rec = opened(kind, {"oramem_store.delete_record_json": answer})
    assert run(engine, "delete", "user_profile", "u1", cascade) == 1
    if cascade:  # a user's erasure asks first whether the store has knowledge tables (none here)
        assert [c.name for c in rec.plsql] == ["oramem_kg_jobs.has_knowledge", "oramem_store.delete_record_json"]
        rec.calls = [c for c in rec.calls if c.name != "oramem_kg_jobs.has_knowledge"]
    call = the_call(rec, "delete")
    assert call.binds == {"in_store_id": "MYSTORE", "in_record_type": "user_profile", "in_record_id": "u1",
                          "in_cascade": 1 if cascade else 0}
    assert committed(rec)


@pytest.mark.parametrize("kind", KINDS)
def test_delete_thread_purge_and_sync(kind):
    engine, rec = opened(kind, {"oramem_store.delete_thread_json": '{"count": 0, "event": null}',
                                "oramem_store.purge_expired_json": '{"count": 12, "events": []}'})
    assert run(engine, "delete_thread", "t9") == 0
    assert the_call(rec, "delete_thread").binds == {"in_store_id": "MYSTORE", "in_thread_id": "t9"}
    rec.calls.clear()
    assert run(engine, "purge_expired") == 12
    assert the_call(rec, "purge_expired").binds == {"in_store_id": "MYSTORE", "in_commit": 0}
    assert committed(rec)
    rec.calls.clear()
    assert run(engine, "sync_search_index") is None
    assert the_call(rec, "sync_search_index").binds == {"in_store_id": "MYSTORE"}


# -- reads -----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_get(kind):
    engine, rec = opened(kind, {"oramem_store.get_json": json.dumps(MSG)})
    got = run(engine, "get", "message", "m1")
    assert isinstance(got, MessageRecord) and got.role == "user" and got.seq_no == 8 and got.metadata == {"k": 1}
    assert the_call(rec, "get").binds == {"in_store_id": "MYSTORE", "in_record_type": "message", "in_record_id": "m1",
                                          "in_lock": 0}
    assert not committed(rec)
    rec.answers["oramem_store.get_json"] = None
    assert run(engine, "get", "message", "nope") is None


@pytest.mark.parametrize("kind", KINDS)
def test_list_and_thread_messages(kind):
    engine, rec = opened(kind, {"oramem_store.list_json": json.dumps([REC]),
                                "oramem_store.list_thread_messages_json": json.dumps([MSG])})
    req = ListRequest("memory", None, Scope(ScopeMatch.EQUALS, "t1"), Scope.any(), Scope(ScopeMatch.IS_NULL),
                      NOT_SET)
    (r,) = run(engine, "list", req)
    assert type(r) is Record and r.id == "r1"
    assert json.loads(the_call(rec, "list").binds["in_request"]) == {
        "record_type": "memory", "limit": None, "thread": {"match": "equals", "value": "t1"},
        "user": {"match": "any"}, "agent": {"match": "is_null"},
    }
    rec.calls.clear()
    run(engine, "list", ListRequest("memory", 5, Scope.any(), Scope.any(), Scope.any(), None))
    assert json.loads(rec.plsql[0].binds["in_request"])["metadata_filter"] is None
    rec.calls.clear()
    (m,) = run(engine, "list_thread_messages", "t1", 3)
    assert isinstance(m, MessageRecord)
    assert the_call(rec, "list_thread_messages").binds == {"in_store_id": "MYSTORE", "in_thread_id": "t1",
                                                            "in_last_n": 3}


@pytest.mark.parametrize("kind", KINDS)
def test_search(kind):
    hits = [{"record": REC, "distance": 0.25}, {"record": MSG, "distance": 1}]
    engine, rec = opened(kind, {"oramem_search.search_json": json.dumps(hits)})
    req = SearchRequest(SearchStrategy.VECTOR, 5, None, np.array([0.5, 0.25, 0], dtype=np.float32),
                        Scope.any(), Scope(ScopeMatch.EQUALS, "u1"), Scope.any(), ("memory", "message"),
                        {"topic": {"$in": ["a", "b"]}})
    out = run(engine, "search", req)
    assert [(r.id, d) for r, d in out] == [("r1", 0.25), ("m1", 1.0)]
    assert all(type(d) is float for _, d in out)
    assert json.loads(the_call(rec, "search").binds["in_request"]) == {
        "strategy": "vector", "k": 5, "query_text": None, "query_vector": [0.5, 0.25, 0.0],
        "thread": {"match": "any"}, "user": {"match": "equals", "value": "u1"}, "agent": {"match": "any"},
        "record_types": ["memory", "message"], "metadata_filter": {"topic": {"$in": ["a", "b"]}},
    }
    assert not committed(rec)


# -- errors ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "code,cls",
    [(20101, StoreNotFound), (20005, DuplicateRecordError), (1, DuplicateRecordError), (20103, StoreSettingsMismatch), (20201, StoreBusy),
     (54, StoreBusy), (51962, CapabilityError), (20301, CapabilityError)],
)
def test_database_errors_are_mapped_and_rolled_back(kind, code, cls):
    engine, rec = opened(kind, {"oramem_store.add_json": db_error(code, "store MYSTORE: something to fix")})
    with pytest.raises(cls) as info:
        run(engine, "add", AddRequest((record(),), batch_size=1))
    msg = str(info.value)
    assert "something to fix" in msg and f"ORA-{code:05d}" in msg and "ORA-06512" not in msg
    assert isinstance(info.value.__cause__, oracledb.DatabaseError)
    assert rec.of("rollback") and not committed(rec)
    if cls is DuplicateRecordError:  # a ValueError as before, naming no records (the message does)
        assert isinstance(info.value, ValueError) and info.value.records == ()


def test_unmapped_errors_pass_through():
    engine, rec = opened("pool", {"oramem_store.get_json": db_error(12899, "value too large")})
    with pytest.raises(oracledb.DatabaseError):
        engine.get("memory", "r1")


def test_missing_packages_say_what_to_do():
    engine, _ = make("conn", {"oramem_admin.open_store": db_error(6550, "PLS-00201: identifier must be declared")})
    with pytest.raises(Exception, match="oramem db install"):
        engine.open(settings(), SchemaPolicy.REQUIRE_EXISTING)


def test_f10_ora_06550_from_a_missing_grant_names_the_grant():
    # a dynamic block inside the packages failing on a grant, e.g. CTX_DDL.SYNC_INDEX
    err = db_error(6550, "line 1, column 7:\nPLS-00201: identifier 'CTX_DDL.SYNC_INDEX' must be declared")
    engine, _ = opened("conn", {"oramem_store.sync_search_index": err})
    with pytest.raises(SchemaError) as info:
        engine.sync_search_index()
    text = str(info.value)
    assert "CTX_DDL.SYNC_INDEX" in text and "GRANT EXECUTE" in text and "oramem db doctor" in text


# -- deletion hooks and close ------------------------------------------------------------

def test_deletion_hook_must_be_a_procedure_name():
    engine, rec = opened("pool")
    with pytest.raises(TypeError, match="PL/SQL procedure"):
        engine.register_deletion_hook(lambda conn, event: None)
    with pytest.raises(ValueError, match="procedure name"):
        engine.register_deletion_hook("app.hook; drop table x")
    assert rec.plsql == []
    engine.register_deletion_hook("APP.ORAMEM_HOOKS.ON_DELETE")
    assert the_call(rec, "set_deletion_hook").binds == {"in_store_id": "MYSTORE",
                                                        "in_procedure_name": "APP.ORAMEM_HOOKS.ON_DELETE"}


@pytest.mark.parametrize("kind", ["pool", "async_pool"])
def test_hook_registered_before_open_is_applied_on_open(kind):
    engine, rec = make(kind)
    if engine.is_async:
        asyncio.run(engine.register_deletion_hook_async("ON_DELETE"))
    else:
        engine.register_deletion_hook("ON_DELETE")
    assert rec.calls == []
    run(engine, "open", settings(), SchemaPolicy.REQUIRE_EXISTING)
    assert [c.name for c in rec.plsql] == ["oramem_admin.open_store", "oramem_admin.set_deletion_hook"]


@pytest.mark.parametrize("kind", KINDS)
def test_close_does_not_close_the_callers_pool(kind):
    engine, rec = opened(kind)
    run(engine, "close")
    run(engine, "close")  # idempotent
    assert not rec.of("close")
    with pytest.raises(RuntimeError, match="closed"):
        run(engine, "get", "memory", "r1")


def test_sync_registration_on_an_async_engine_is_applied_before_the_next_call():
    """The store's register_deletion_hook_async calls the engine's sync method (no I/O)."""
    engine, rec = opened("async_pool", {"oramem_store.get_json": None})
    engine.register_deletion_hook("APP.ON_DELETE")
    assert rec.plsql == []
    asyncio.run(engine.get_async("memory", "r1"))
    assert [c.name for c in rec.plsql] == ["oramem_admin.set_deletion_hook", "oramem_store.get_json"]
    assert rec.plsql[0].binds == {"in_store_id": "MYSTORE", "in_procedure_name": "APP.ON_DELETE"}
    rec.calls.clear()
    asyncio.run(engine.get_async("memory", "r1"))
    assert [c.name for c in rec.plsql] == ["oramem_store.get_json"]


def test_f20_vectors_are_sent_as_shortest_float32_decimals():
    from oramem.oracle.codec import _vector

    rng = np.random.default_rng(7)
    v = np.concatenate([rng.standard_normal(380), [1e-30, -3.4e38, 0.0, 7.0]]).astype(np.float32)
    sent = _vector(v)
    # exact float32 round trip (what TO_VECTOR(..., FLOAT32) reads back)
    assert np.array_equal(np.array(sent, dtype=np.float32), v)
    text = json.dumps(sent, separators=(",", ":"))
    widened = json.dumps([float(x) for x in v], separators=(",", ":"))
    assert len(text) < 0.6 * len(widened), (len(text), len(widened))
    assert json.dumps(_vector(np.array([0.1, 0.5], dtype=np.float32))) == "[0.1, 0.5]"


@pytest.mark.parametrize("kind", ["async_pool", "async_conn"])
def test_forget_on_an_async_pool_is_refused_before_any_call(kind):
    """The knowledge layer's erasure needs a synchronous connection on Oracle."""
    from oramem.requests import ForgetRequest

    engine, rec = opened(kind, {})
    with pytest.raises(CapabilityError, match="forget_async on an asynchronous Oracle pool is not supported"):
        run(engine, "forget", ForgetRequest(user_id="u1", names=("u1",)))
    assert rec.plsql == []


CASCADE_REPLY = json.dumps({"count": 1, "event": {
    "memory_store_id": "MYSTORE", "records": [["user_profile", "u1"], ["message", "m1"], ["thread", "t1"]],
    "thread_ids": ["t1"], "user_ids": ["u1"], "agent_ids": [], "reason": "cascade"}})


@pytest.mark.parametrize("kind", ["pool", "conn"])
def test_forget_without_an_eraser_on_a_store_with_knowledge_refuses_before_deleting(kind):
    from oramem.requests import ForgetRequest

    engine, rec = opened(kind, {"oramem_kg_jobs.has_knowledge": 1, "oramem_store.delete_record_json": CASCADE_REPLY})
    with pytest.raises(StoreError, match="has knowledge tables, and nothing erased the actor"):
        engine.forget(ForgetRequest(user_id="u1", names=("u1",)))
    assert [c.name for c in rec.plsql] == ["oramem_kg_jobs.has_knowledge"]
    assert rec.of("rollback") and not committed(rec)


@pytest.mark.parametrize("kind", ["pool", "conn"])
def test_forget_without_knowledge_tables_is_the_cascade(kind):
    from oramem.requests import ForgetRequest

    engine, rec = opened(kind, {"oramem_kg_jobs.has_knowledge": 0, "oramem_store.delete_record_json": CASCADE_REPLY})
    assert engine.forget(ForgetRequest(user_id="u1", names=("u1",))) == {"OM_MYSTORE_REC": 3}
    assert [c.name for c in rec.plsql] == ["oramem_kg_jobs.has_knowledge", "oramem_store.delete_record_json"]
    assert rec.plsql[1].binds["in_cascade"] == 1 and len(rec.of("commit")) == 1


@pytest.mark.parametrize("kind", ["pool", "conn"])
def test_forget_runs_cascade_and_erasers_in_one_transaction(kind):
    """SC-8.6 on Oracle: snapshot, the actor's cascade (delete_record_json, cascade 1), the
    eraser with the "forget" event and the names, then the store records the eraser names,
    all on one connection, committed once."""
    from oramem.requests import ErasureReport, ForgetRequest

    engine, rec = opened(kind, {"oramem_store.delete_record_json": CASCADE_REPLY,
                                "oramem_store.delete_keys_json": '{"count": 2}'})
    seen = []

    class Eraser:
        key = ("knowledge", "MYSTORE")

        def snapshot(self):
            seen.append(("snapshot", [c.name for c in rec.plsql]))
            return {"MYSTORE_KG_FACT": 3}

        def erase(self, event, before):
            seen.append(("erase", event, before))
            return ErasureReport({"MYSTORE_KG_FACT": 2, "MYSTORE_KG_EVENT": 1}, (("fact", "f9"), ("message", "e4")))

    engine.register_erasure(Eraser())
    engine.register_erasure(Eraser())  # same key: replaces, not doubles
    counts = engine.forget(ForgetRequest(user_id="u1", names=("u1", "Ana")))
    assert counts == {"OM_MYSTORE_REC": 5, "MYSTORE_KG_FACT": 2, "MYSTORE_KG_EVENT": 1}
    assert seen[0] == ("snapshot", [])  # before any store call
    _, event, before = seen[1]
    assert (event.reason, event.names, event.user_ids, event.thread_ids) == ("forget", ("u1", "Ana"), ("u1",), ("t1",))
    assert ("message", "m1") in event.records and before == {"MYSTORE_KG_FACT": 3}
    calls = [(c.name, c.binds.get("in_record_type"), c.binds.get("in_record_id"), c.binds.get("in_cascade"))
             for c in rec.plsql]
    # N4: the cascade tells the PL/SQL hook it is an erasure (reason, names); the records the
    # erasers name go in one delete_keys_json call, without the hook (SQLite delete_keys)
    assert calls == [("oramem_store.delete_record_json", "user_profile", "u1", 1),
                     ("oramem_store.delete_keys_json", None, None, None)]
    assert (rec.plsql[0].binds["in_reason"], json.loads(rec.plsql[0].binds["in_names"])) == ("forget", ["u1", "Ana"])
    assert json.loads(rec.plsql[1].binds["in_keys"]) == [["fact", "f9"], ["message", "e4"]]
    assert len({c.conn for c in rec.plsql}) == 1 and len(rec.of("commit")) == 1
    with pytest.raises(ValueError, match="exactly one of user_id and agent_id"):
        engine.forget(ForgetRequest())
    with pytest.raises(TypeError, match=r"snapshot\(\) and erase"):
        engine.register_erasure(object())


@pytest.mark.parametrize("kind", ["pool", "conn"])
def test_a_user_profile_cascade_runs_the_erasers_cascade_in_its_transaction(kind):
    """SC-13.3 on Oracle (as the SQLite hook since the 2026-12-06 red team): a user's profile
    cascade erases her as forget does. After delete_record_json (whose PL/SQL hook runs), each
    eraser's erase_cascade gets the "cascade" event, on the same connection, committed once;
    other deletes, and erasers without erase_cascade, are left as they were."""
    engine, rec = opened(kind, {"oramem_store.delete_record_json": CASCADE_REPLY})
    seen = []

    class Eraser:
        key = ("knowledge", "MYSTORE")

        def snapshot(self):
            raise AssertionError("a cascade takes no snapshot")

        def erase(self, event, before):
            raise AssertionError("a cascade is not a forget")

        def erase_cascade(self, event):
            seen.append((event, [c.name for c in rec.plsql]))

    engine.register_erasure(Eraser())
    assert engine.delete("user_profile", "u1", True) == 1
    (event, before), = seen
    assert before == ["oramem_store.delete_record_json"]  # after the store's cascade and its hook
    assert (event.reason, event.user_ids, event.thread_ids, event.memory_store_id) == ("cascade", ("u1",), ("t1",), "MYSTORE")
    assert ("message", "m1") in event.records
    call = rec.plsql[0]
    assert (call.binds["in_record_type"], call.binds["in_record_id"], call.binds["in_cascade"]) == ("user_profile", "u1", 1)
    # the PL/SQL knowledge hook leaves the rows to erase_cascade, as for a forget: what cites
    # her events and facts is matched while they are still there
    assert (call.binds["in_reason"], call.binds["in_names"]) == ("erase", None)
    assert len(rec.of("commit")) == 1 and len({c.conn for c in rec.plsql}) == 1
    # not for an agent's cascade, a profile without cascade, or another record
    for args in (("agent_profile", "a1", True), ("user_profile", "u1", False), ("memory", "m1", True)):
        engine.delete(*args)
    assert len(seen) == 1
    assert all("in_reason" not in c.binds for c in rec.plsql[1:])


@pytest.mark.parametrize("kind", ["pool", "conn"])
def test_a_cascade_with_an_eraser_that_only_forgets_is_the_plain_cascade(kind):
    engine, rec = opened(kind, {"oramem_store.delete_record_json": CASCADE_REPLY})

    class Eraser:
        def snapshot(self):
            return {}

        def erase(self, event, before):
            raise AssertionError("a cascade is not a forget")

    engine.register_erasure(Eraser())
    assert engine.delete("user_profile", "u1", True) == 1
    # no knowledge tables: nothing of hers is in them, the PL/SQL hook has nothing to do
    assert [c.name for c in rec.plsql] == ["oramem_kg_jobs.has_knowledge", "oramem_store.delete_record_json"]
    assert "in_reason" not in rec.plsql[1].binds


def test_the_knowledge_erasers_cascade_is_the_sqlite_hooks(monkeypatch):
    """OracleEraser.erase_cascade runs what the SQLite hook runs (deletes.apply_store_delete)
    for its own store's user cascades, and nothing else."""
    from oramem.knowledge import deletes
    from oramem.requests import DeletionEvent

    calls = []
    monkeypatch.setattr(deletes, "apply_store_delete", lambda conn, t, event, purge, **kw: calls.append((event, kw)))

    class Tables:
        store_id = "MYSTORE"

    class Engine:
        def connect(self):
            import contextlib

            return contextlib.nullcontext("conn")

    eraser = deletes.OracleEraser(Engine(), Tables(), lambda *a: None)

    def event(store="mystore", users=("u1",)):
        return DeletionEvent(memory_store_id=store, records=(), thread_ids=(), user_ids=users, agent_ids=(),
                             reason="cascade")

    eraser.erase_cascade(event())
    eraser.erase_cascade(event(store="other"))
    eraser.erase_cascade(event(users=()))
    assert [(e.user_ids, kw) for e, kw in calls] == [(("u1",), {})]


@pytest.mark.parametrize("kind", ["pool", "conn"])
def test_an_erasure_takes_its_erasers_locks_first_in_its_transaction(kind):
    """KC-3.10 on Oracle: forget and a user's profile cascade call each eraser's ``lock()``
    (the knowledge layer's LOCK TABLE of its agents' table) inside their transaction, before
    the store's cascade or any other store call; an eraser without ``lock()`` is still one.
    Static-checked, not run against Oracle."""
    from oramem.requests import ErasureReport, ForgetRequest

    engine, rec = opened(kind, {"oramem_store.delete_record_json": CASCADE_REPLY,
                                "oramem_store.delete_keys_json": '{"count": 0}'})
    seen = []

    class Locking:
        key = ("knowledge", "MYSTORE")

        def lock(self):
            seen.append(("lock", engine.in_transaction, [c.name for c in rec.plsql]))

        def snapshot(self):
            seen.append(("snapshot",))
            return {}

        def erase(self, event, before):
            seen.append(("erase",))
            return ErasureReport({}, ())

        def erase_cascade(self, event):
            seen.append(("erase_cascade",))

    class Plain:
        def snapshot(self):
            return {}

        def erase(self, event, before):
            return None

    engine.register_erasure(Locking())
    engine.register_erasure(Plain())
    engine.forget(ForgetRequest(user_id="u1"))
    assert seen == [("lock", True, []), ("snapshot",), ("erase",)]
    seen.clear()
    before = len(rec.plsql)
    engine.delete("user_profile", "u1", True)
    assert seen == [("lock", True, [c.name for c in rec.plsql[:before]]), ("erase_cascade",)]
    assert [c.name for c in rec.plsql[before:]] == ["oramem_store.delete_record_json"]
