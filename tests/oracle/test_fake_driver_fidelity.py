"""The recording fake fails where python-oracledb (thin mode) fails, for the rules added by the
fidelity audit fake33 (the driver sources are cited in fakes.py: impl/thin/statement.pyx,
impl/thin/var.pyx, impl/thin/cursor.pyx, impl/base/cursor.pyx, cursor.py, connection.py):
bind placeholders against the binds given (DPY-4008/4009/4010), the shape of execute's
parameters (DPY-2003/2005), closed cursors (DPY-1006), closed or released connections
(DPY-1001), fetching from a statement that is not a query (DPY-1003), and the roll back of
uncommitted work when a connection is closed or released. Each test fails on the fake before
the audit (it accepted all of these)."""

from __future__ import annotations

import asyncio

import oracledb
import pytest

from .fakes import FakeAsyncConnection, FakeConnection, FakePool, Recorder, SQLBackend, parse_statement


def _conn(rec: Recorder | None = None) -> FakeConnection:
    rec = rec or Recorder()
    return FakeConnection(rec)


def _backend_rec() -> Recorder:
    rec = Recorder()
    rec.backend = SQLBackend()
    rec.backend.db.execute("CREATE TABLE t (a INTEGER, b VARCHAR(10))")
    return rec


# -- placeholders (impl/thin/statement.pyx StatementParser) ---------------------------------
@pytest.mark.parametrize("sql, kind, names", [
    ("select :a, :\"b\", :1 from t where x = :a", "query", ["A", "b", "1", "A"]),
    ("begin :x := f(:y, :x); end;", "plsql", ["X", "Y"]),  # PL/SQL: a repeated name is one bind
    ("select 'a:b' || q'[:c]' from t -- :d\n where y = :e /* :f */", "query", ["E"]),
    ("create table t (a int default :x)", "ddl", []),  # parsing stops at a DDL keyword
    ("  UPDATE t SET a = :a RETURNING b INTO :b", "dml", ["A", "B"]),
    ("SAVEPOINT oramem_block_1", "", []),
    ("select 1 from t where a = :Owner_1$#x", "query", ["OWNER_1$#X"]),
    ("begin x := 1; end;", "plsql", []),  # := is no placeholder
])
def test_statement_parser(sql, kind, names):
    assert parse_statement(sql) == (kind, names)


def test_a_named_bind_the_sql_does_not_have_is_dpy_4008():
    cur = _conn().cursor()
    with pytest.raises(oracledb.DatabaseError, match="DPY-4008"):
        cur.execute("select 1 from dual where :a is not null", a="x", b="y")
    with pytest.raises(oracledb.DatabaseError, match="DPY-4008"):  # a DDL statement has none
        cur.execute("create table t (a varchar2(10) default :a)", a="x")


def test_an_input_size_for_a_name_the_sql_does_not_have_is_dpy_4008():
    cur = _conn().cursor()
    cur.setinputsizes(now=oracledb.DB_TYPE_TIMESTAMP, other=oracledb.DB_TYPE_TIMESTAMP)
    with pytest.raises(oracledb.DatabaseError, match="DPY-4008"):
        cur.execute("select 1 from dual where :now is not null", now=None)


def test_a_placeholder_without_a_value_is_dpy_4010():
    cur = _conn().cursor()
    with pytest.raises(oracledb.DatabaseError, match="DPY-4010"):
        cur.execute("select 1 from dual where :a = :b", a="x")
    with pytest.raises(oracledb.DatabaseError, match="DPY-4010"):
        cur.execute("select 1 from dual where :a is null")


def test_a_positional_count_other_than_the_placeholders_is_dpy_4009():
    cur = _conn().cursor()
    with pytest.raises(oracledb.DatabaseError, match="DPY-4009"):
        cur.execute("select 1 from dual where :1 = :2", ["x"])


def test_binds_that_fit_pass_case_insensitively_and_quoted():
    cur = _conn().cursor()
    cur.execute("select 1 from dual where :A = :\"b\" -- :c", {"a": 1, '"b"': 2})
    cur.execute("begin :x := :x + 1; end;", [1])  # one PL/SQL placeholder, one value


def test_execute_parameters_shape_is_dpy_2005_and_dpy_2003():
    cur = _conn().cursor()
    with pytest.raises(oracledb.ProgrammingError, match="DPY-2005"):
        cur.execute("select 1 from dual where :a = :b", {"a": 1}, b=2)
    with pytest.raises(oracledb.ProgrammingError, match="DPY-2003"):
        cur.execute("select 1 from dual where :a is null", "x")


# -- closed cursors and connections (cursor.py _verify_open, connection.py _verify_connected) --
def test_a_closed_cursor_is_dpy_1006():
    conn = _conn()
    with conn.cursor() as cur:
        pass
    with pytest.raises(oracledb.InterfaceError, match="DPY-1006"):
        cur.execute("select 1 from dual")
    cur2 = conn.cursor()
    cur2.close()
    with pytest.raises(oracledb.InterfaceError, match="DPY-1006"):
        cur2.close()


def test_leaving_with_closes_a_standalone_connection_too():
    conn = _conn()
    with conn:
        cur = conn.cursor()
    with pytest.raises(oracledb.InterfaceError, match="DPY-1001"):
        conn.cursor()
    with pytest.raises(oracledb.InterfaceError, match="DPY-1001"):
        cur.execute("select 1 from dual")
    with pytest.raises(oracledb.InterfaceError, match="DPY-1001"):
        conn.commit()


def test_a_released_pooled_connection_is_dpy_1001():
    rec = Recorder()
    with FakePool(rec).acquire() as conn:
        pass
    assert [c.kind for c in rec.calls] == ["acquire", "release"]
    with pytest.raises(oracledb.InterfaceError, match="DPY-1001"):
        conn.cursor()


def test_fetching_after_a_statement_that_is_not_a_query_is_dpy_1003():
    rec = _backend_rec()
    cur = FakeConnection(rec).cursor()
    with pytest.raises(oracledb.InterfaceError, match="DPY-1003"):
        cur.fetchone()  # nothing executed yet
    cur.execute("insert into t (a) values (:a)", a=1)
    with pytest.raises(oracledb.InterfaceError, match="DPY-1003"):
        cur.fetchall()
    cur.execute("select a from t")
    assert cur.fetchall() == [(1,)]


# -- transactions end with the connection (connection.py Connection.__exit__) ---------------
def test_releasing_a_connection_rolls_back_its_uncommitted_dml():
    rec = _backend_rec()
    pool = FakePool(rec)
    with pool.acquire() as conn, conn.cursor() as cur:
        cur.execute("insert into t (a) values (:a)", a=1)
    with pool.acquire() as conn, conn.cursor() as cur:
        cur.execute("insert into t (a) values (:a)", a=2)
        conn.commit()
    with pool.acquire() as conn, conn.cursor() as cur:
        cur.execute("select a from t")
        assert cur.fetchall() == [(2,)]
    assert [c.name for c in rec.of("rollback")] == ["on release"]


def test_async_cursor_has_executemany_and_fetchmany():
    rec = _backend_rec()

    async def run():
        conn = FakeAsyncConnection(rec)
        with conn.cursor() as cur:  # AsyncCursor keeps BaseCursor's sync context manager
            await cur.executemany("insert into t (a) values (:a)", [{"a": 1}, {"a": 2}])
            await cur.execute("select a from t order by a")
            return await cur.fetchmany(1)

    assert asyncio.run(run()) == [(1,)]


# -- bind value types (impl/base/metadata.pyx from_value, impl/base/connection.pyx _check_value) --
def test_an_untyped_datetime_is_a_date_and_loses_its_fractional_seconds():
    import datetime as dt

    rec = Recorder()
    rec.backend = SQLBackend({"at": "datetime"})
    rec.backend.db.execute("CREATE TABLE d (k INTEGER, at VARCHAR(32))")
    at = dt.datetime(2025, 1, 2, 3, 4, 5, 678901)
    cur = FakeConnection(rec).cursor()
    cur.execute("insert into d (k, at) values (1, :at)", at=at)  # DB_TYPE_DATE (review D12)
    cur.setinputsizes(at=oracledb.DB_TYPE_TIMESTAMP)
    cur.execute("insert into d (k, at) values (2, :at)", at=at)
    cur.setinputsizes(at=oracledb.DATETIME)  # SQLAlchemy's DateTime: DB_TYPE_DATE as well
    cur.execute("insert into d (k, at) values (3, :at)", at=at)
    cur.execute("select k, at from d order by k")
    assert cur.fetchall() == [(1, at.replace(microsecond=0)), (2, at), (3, at.replace(microsecond=0))]


def test_executemany_rows_must_fit_the_type_the_first_value_gave_a_bind():
    rec = _backend_rec()
    cur = FakeConnection(rec).cursor()
    with pytest.raises(oracledb.NotSupportedError, match="DPY-3013"):
        cur.executemany("insert into t (a, b) values (:a, :b)", [{"a": 1, "b": "x"}, {"a": "2", "b": "y"}])
    # None defers the type; NUMBER takes int, float and bool alike
    cur.executemany("insert into t (a, b) values (:a, :b)", [{"a": None, "b": None}, {"a": 1, "b": "x"},
                                                             {"a": 2.5, "b": None}, {"a": True, "b": "y"}])


def test_the_one_sqlite_backend_refuses_what_only_separate_sessions_could_answer():
    """Oracle keeps sessions' transactions apart (read committed); the fake's backend is one
    SQLite connection, so a statement or commit on one connection while another holds
    uncommitted DML fails the test instead of seeing (or committing) the other's rows."""
    rec = _backend_rec()
    a, b = FakeConnection(rec), FakeConnection(rec)
    a.cursor().execute("insert into t (a) values (:a)", a=1)
    with pytest.raises(AssertionError, match="uncommitted DML"):
        b.cursor().execute("select a from t")
    with pytest.raises(AssertionError, match="uncommitted DML"):
        b.commit()
    a.commit()
    cur = b.cursor()
    cur.execute("select a from t")
    assert cur.fetchall() == [(1,)]


def test_a_reserved_word_as_an_unquoted_sql_bind_name_is_ora_01745():
    cur = _conn().cursor()
    with pytest.raises(oracledb.DatabaseError, match="ORA-01745"):
        cur.execute("insert into t (a, b) values (:id, :size)", id=1, size=2)
    cur.execute('insert into t (a, b) values (:id, :"size")', {"id": 1, '"size"': 2})  # quoted: fine
    cur.execute("insert into t (a, b) values (:id, :type)", id=1, type=2)  # TYPE is no reserved word


def test_a_read_only_transaction_refuses_writes_until_it_ends():
    rec = _backend_rec()
    conn = FakeConnection(rec)
    cur = conn.cursor()
    cur.execute("insert into t (a) values (:a)", a=1)
    with pytest.raises(oracledb.DatabaseError, match="ORA-01453"):  # not the first statement
        cur.execute("SET TRANSACTION READ ONLY")
    conn.commit()
    cur.execute("SET TRANSACTION READ ONLY")
    cur.execute("select a from t")
    with pytest.raises(oracledb.DatabaseError, match="ORA-01456"):
        cur.execute("update t set a = :a", a=2)
    with pytest.raises(oracledb.DatabaseError, match="ORA-01456"):
        cur.callproc("oramem_admin.log_erasure", keyword_parameters={"in_store_id": "S", "in_receipt": "{}"})
    cur.callfunc("oramem_admin.get_erasure_log_json", oracledb.DB_TYPE_CLOB, keyword_parameters={"in_store_id": "S"})
    conn.rollback()  # the transaction ends: writes are allowed again
    cur.execute("update t set a = :a", a=2)


def test_a_pool_with_a_checked_out_connection_does_not_close_and_a_closed_pool_lends_none():
    rec = Recorder()
    pool = FakePool(rec)
    conn = pool.acquire()
    with pytest.raises(oracledb.InterfaceError, match="DPY-1005"):
        pool.close()
    conn.close()
    pool.close()
    with pytest.raises(oracledb.InterfaceError, match="DPY-1002"):
        pool.acquire()
    forced = FakePool(rec)
    forced.acquire()
    forced.close(force=True)
