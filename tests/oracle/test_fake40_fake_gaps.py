"""The recording fake fails where python-oracledb and Oracle fail (fake40, 2026-12-07 q): the
known gaps carried since red35.

(a) A LOB read after its connection was closed: python-oracledb reads a LOB over its
    connection's session (``impl/thin/lob.pyx``), so after ``close()`` the read is DPY-1001
    (``impl/thin/packet.pyx`` ``_check_connected``); the fake answered the data. A read after
    the connection went back to its pool succeeds on the real driver, over a session that may
    serve another caller: the fake fails the test there. Closing the cursor changes nothing
    (the LOB keeps the connection, not the cursor).
(b) ``SELECT ... FOR UPDATE`` inside ``SET TRANSACTION READ ONLY``: the SQL Language Reference
    (SET TRANSACTION) permits "SELECT without the for_update_clause" only, and ORA-01456's
    cause names "select for update"; the fake refused DML and writing calls only.
The driver's own reads (``SyncOracleEngine._call_on``, ``AsyncOracleEngine._call_on_async``,
``admin._call``) read the returned LOB inside the cursor's block, before the connection goes
back: the store suites over the fake run on with these rules.
"""

from __future__ import annotations

import asyncio

import oracledb
import pytest

from .fakes import FakeAsyncConnection, FakeConnection, Recorder


def _clob_reply(conn):
    with conn.cursor() as cur:
        return cur.callfunc("oramem_store.get_json", oracledb.DB_TYPE_CLOB,
                            keyword_parameters={"in_store_id": "S", "in_record_type": "memory", "in_record_id": "b1",
                                                "in_lock": 0})


def _recorder() -> Recorder:
    rec = Recorder()
    rec.answers["oramem_store.get_json"] = '{"id": "b1"}'
    return rec


def test_a_lob_is_read_while_its_connection_is_open_even_after_its_cursor_closed():
    conn = FakeConnection(_recorder())
    lob = _clob_reply(conn)          # the cursor is closed by its with block
    assert lob.read() == '{"id": "b1"}'


def test_a_lob_read_after_its_connection_closed_is_dpy_1001():
    conn = FakeConnection(_recorder())
    lob = _clob_reply(conn)
    conn.close()
    with pytest.raises(oracledb.InterfaceError, match="DPY-1001"):
        lob.read()
    made = FakeConnection(_recorder())
    temp = made.createlob(oracledb.DB_TYPE_CLOB, "Bob's text")
    made.close()
    with pytest.raises(oracledb.InterfaceError, match="DPY-1001"):
        temp.read()


def test_an_async_lob_read_after_its_connection_closed_is_dpy_1001():
    async def run():
        conn = FakeAsyncConnection(_recorder())
        with conn.cursor() as cur:
            lob = await cur.callfunc("oramem_store.get_json", oracledb.DB_TYPE_CLOB,
                                     keyword_parameters={"in_store_id": "S", "in_record_type": "memory",
                                                         "in_record_id": "b1", "in_lock": 0})
        assert await lob.read() == '{"id": "b1"}'
        await conn.close()
        with pytest.raises(oracledb.InterfaceError, match="DPY-1001"):
            await lob.read()

    asyncio.run(run())


def test_a_lob_read_after_its_connection_went_back_to_the_pool_fails_the_test():
    conn = FakeConnection(_recorder(), pooled=True)
    with conn:
        lob = _clob_reply(conn)
    with pytest.raises(AssertionError, match="released to its pool"):
        lob.read()


def test_the_driver_reads_its_replies_before_the_connection_goes_back():
    """Every store call over a pool of the fake (a connection acquired per call) reads its CLOB
    reply before the release: a search, a get and a list answer, none fails the rule."""
    from .plsql_standin import standin_store

    store, rec = standin_store(dim=8)
    try:
        store.add(["Bob drinks tea"], "memory", record_ids="b1", user_ids="bob")
        assert store.get("memory", "b1").content == "Bob drinks tea"
        assert [r.id for r, _ in store.search("tea", k=3, user_id="bob")] == ["b1"]
        assert [r.id for r in store.list("memory", user_id="bob")] == ["b1"]
    finally:
        store.close()
    assert any(c.kind == "release" for c in rec.calls)


def _read_only(conn: FakeConnection) -> None:
    with conn.cursor() as cur:
        cur.execute("SET TRANSACTION READ ONLY")


def test_select_for_update_in_a_read_only_transaction_is_ora_01456():
    conn = FakeConnection(_recorder())
    _read_only(conn)
    with conn.cursor() as cur:
        with pytest.raises(oracledb.DatabaseError, match="ORA-01456"):
            cur.execute("SELECT 1 FROM dual FOR UPDATE")
        with pytest.raises(oracledb.DatabaseError, match="ORA-01456"):
            cur.execute("SELECT record_id FROM om_s_rec WHERE record_id = :1 FOR UPDATE NOWAIT", ["b1"])
        # a plain query, and "for update" inside a string or a comment, are reads
        cur.execute("SELECT 'for update' FROM dual -- for update")
        # get_json locks the row with in_lock = 1 (SC-12.10), not with 0
        cur.callfunc("oramem_store.get_json", oracledb.DB_TYPE_CLOB,
                     keyword_parameters={"in_store_id": "S", "in_record_type": "memory", "in_record_id": "b1",
                                         "in_lock": 0})
        with pytest.raises(oracledb.DatabaseError, match="ORA-01456"):
            cur.callfunc("oramem_store.get_json", oracledb.DB_TYPE_CLOB,
                         keyword_parameters={"in_store_id": "S", "in_record_type": "memory", "in_record_id": "b1",
                                             "in_lock": 1})
    conn.rollback()   # the transaction ends: the read-only rule with it
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM dual FOR UPDATE")
