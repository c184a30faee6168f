"""The recording fake enforces python-oracledb's binding rules (issue 10, item 2), so fake-driver
tests fail where the real driver or server would. The rules and the driver source they come from
are in the docstring of fakes.py (python-oracledb 26.1: cursor.py ``_call_get_execute_args``,
impl/base/cursor.pyx ``setinputsizes`` / ``_prepare_for_execute``, impl/thin/messages/base.pyx
``_write_bind_params_row``, impl/thin/capabilities.pyx ``_adjust_for_server_runtime_caps``).

Each rule is shown twice: the pattern the review found (F1, F4) fails against the fake, and the
fixed code passes."""

from __future__ import annotations

import json

import numpy as np
import oracledb
import pytest

from oramem import SchemaPolicy, SearchStrategy
from oramem.oracle import OracleDBEmbedder, SyncOracleEngine
from oramem.requests import AddRequest, ChunkRow, NewRecord, StoreSettings

from .fakes import FakeConnection, FakePool, Recorder

BIG = json.dumps({"records": [{"content": "x" * 40_000}]})  # > 32767 bytes, as 4 x 384-d records


def test_named_setinputsizes_with_keyword_parameters_is_dpy_2006():
    # the F1 pattern (driver.py before the fix): named input sizes, then callfunc(keyword_parameters=)
    cur = FakeConnection(Recorder()).cursor()
    cur.setinputsizes(in_batch=oracledb.DB_TYPE_CLOB)
    with pytest.raises(oracledb.ProgrammingError, match="DPY-2006"):
        cur.callfunc("oramem_store.add_json", oracledb.DB_TYPE_CLOB,
                     keyword_parameters={"in_store_id": "S", "in_batch": BIG, "in_batch_size": 256})


def test_positional_input_sizes_with_named_execute_binds_is_dpy_2006():
    cur = FakeConnection(Recorder()).cursor()
    cur.setinputsizes(oracledb.DB_TYPE_CLOB)
    with pytest.raises(oracledb.ProgrammingError, match="DPY-2006"):
        cur.execute("select 1 from dual where :a is not null", a="x")


def test_d9_plsql_string_bind_over_32767_bytes_becomes_a_temporary_clob():
    """D9: thin mode turns a PL/SQL str bind over 32,767 bytes into a temporary CLOB
    (impl/thin/var.pyx ThinVarImpl._bind; python-oracledb's tests/test_4100_cursor_callproc.py
    "calling a procedure with a string > 32767 characters"); the fake no longer refuses it
    (it raised ORA-06502, a rule the driver does not have) and records the temporary LOB."""
    rec = Recorder()
    conn = FakeConnection(rec)
    conn.cursor().callfunc("oramem_store.add_json", oracledb.DB_TYPE_CLOB,
                           keyword_parameters={"in_store_id": "S", "in_batch": BIG, "in_batch_size": 1})
    assert [c.binds["data"] for c in rec.of("createlob")] == [BIG]
    # 32,767 bytes exactly stays a string bind
    conn.cursor().callfunc("oramem_store.add_json", oracledb.DB_TYPE_CLOB,
                           keyword_parameters={"in_store_id": "S", "in_batch": "x" * 32767, "in_batch_size": 1})
    assert len(rec.of("createlob")) == 1


def test_sql_string_bind_over_4000_bytes_is_a_long_unless_typed_clob():
    # the F4 pattern (embedder.py before the fix): a str JSON array into JSON_TABLE
    sql = "select t from json_table(:texts, '$[*]' columns (t varchar2(4000) path '$'))"
    payload = json.dumps(["y" * 600] * 10)
    cur = FakeConnection(Recorder()).cursor()
    with pytest.raises(oracledb.DatabaseError, match="LONG"):
        cur.execute(sql, texts=payload)
    cur.execute(sql, texts="z" * 4000)  # 4000 bytes is still a VARCHAR2
    cur.setinputsizes(texts=oracledb.DB_TYPE_CLOB)
    cur.execute(sql, texts=payload)  # the fix
    with pytest.raises(oracledb.DatabaseError, match="LONG"):
        cur.execute(sql, texts=payload)  # input sizes apply to one execute only
    # the limit is in bytes (UTF-8), not characters
    with pytest.raises(oracledb.DatabaseError, match="LONG"):
        cur.execute(sql, texts="é" * 2001)


def _store(rec):
    engine = SyncOracleEngine(FakePool(rec))
    engine.open(StoreSettings("S1", 384, SearchStrategy.VECTOR, None, None), SchemaPolicy.CREATE_IF_NECESSARY)
    return engine


def test_f1_sync_add_of_384d_records_over_32767_bytes_passes_the_fake():
    rec = Recorder({"oramem_admin.open_store": json.dumps(
        {"memory_store_id": "S1", "vector_dim": 384, "search_strategy": "vector",
         "search_index_sync": "on_commit", "retention": {}}),
        "oramem_store.add_json": json.dumps([f"a{i}" for i in range(8)])})
    rng = np.random.default_rng(1)
    recs = tuple(NewRecord(f"a{i}", "memory", "c", None, None, None, None, None, None, None,
                           (ChunkRow("c", rng.standard_normal(384).astype(np.float32)),)) for i in range(8))
    assert _store(rec).add(AddRequest(recs, 256)) == [f"a{i}" for i in range(8)]
    (call,) = [c for c in rec.plsql if c.name == "oramem_store.add_json"]
    assert isinstance(call.binds["in_batch"], oracledb.LOB) and call.input_sizes == {}
    (lob,) = rec.of("createlob")
    assert len(lob.binds["data"].encode()) > 32767


def test_f4_embedder_batch_over_4000_bytes_passes_the_fake():
    def embed(call):
        assert call.input_sizes == {"texts": oracledb.DB_TYPE_CLOB}
        return [(np.zeros(3, dtype=np.float32),) for _ in json.loads(call.binds["texts"])]

    rec = Recorder({"sql:from all_mining_models": [(1,)], "sql:json_table(:texts": embed})
    out = OracleDBEmbedder(FakeConnection(rec), "M", embedding_dimension=3).embed(["w" * 600] * 10)
    assert out.shape == (10, 3)
