"""The Oracle side of the knowledge user dimension over the recording fake (no database):
usage tracking takes the agent's lock row with FOR UPDATE NOWAIT and gives up on ORA-00054
(KC-5.14, review finding 16); reads and writes carry the scope in SQL (KC-3.7, KC-3.8).
Static-checked, not run against Oracle."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import oracle

from oramem import OracleDBMemoryStore, SchemaPolicy
from oramem.embedders import HashEmbedder
from oramem.knowledge.db import queries as reads
from oramem.oracle.sql_access import OracleAccess
from oramem.knowledge.db.schema import build_tables

fakes = pytest.importorskip("oracle.fakes")
driver_fake = pytest.importorskip("oracle.test_driver_fake")


def _store(rec):
    rec.answers.setdefault("oramem_admin.open_store", json.dumps(dict(driver_fake.SETTINGS_OUT, vector_dim=8)))
    pool = fakes.FakePool(rec)
    return OracleDBMemoryStore(HashEmbedder(8), pool, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                               memory_store_id="mystore")


class _SAConn:
    """Stands in for SQLAlchemy's Connection over python-oracledb (the fake driver cannot run
    SQLAlchemy's dialect initialisation): records the compiled statements, raises ``error`` on
    a FOR UPDATE NOWAIT."""

    def __init__(self, error):
        self.error, self.sql = error, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def begin_nested(self):
        return self

    def execute(self, stmt):
        text = str(stmt.compile(dialect=oracle.dialect()))
        self.sql.append(text)
        if self.error is not None and "FOR UPDATE NOWAIT" in text:
            raise sa.exc.DBAPIError(text, {}, self.error)


class _SAEngine:
    def __init__(self, conn):
        self.conn = conn

    def connect(self):
        return self.conn

    def dispose(self, close=True):
        pass


def test_f16_usage_tracking_gives_up_on_a_locked_agent_row():
    busy = fakes.db_error(54, "resource busy and acquire with NOWAIT specified or timeout expired")
    rec = fakes.Recorder()
    backend = OracleAccess(_store(rec), agent_table=build_tables("MYSTORE", 8).agent)
    try:
        backend.sa_engine = _SAEngine(_SAConn(busy))
        with backend.try_write("knowledge usage tracking", "a1") as conn:
            assert conn is None
        assert backend.sa_engine.conn.sql[-1].rstrip().endswith("FOR UPDATE NOWAIT")
        backend.sa_engine = _SAEngine(_SAConn(None))
        with backend.try_write("knowledge usage tracking", "a1") as conn:
            assert conn is backend.sa_engine.conn
        # another database error is not swallowed
        other = fakes.db_error(942, "table or view does not exist")
        backend.sa_engine = _SAEngine(_SAConn(other))
        with pytest.raises(Exception, match="ORA-00942"):
            with backend.try_write("knowledge usage tracking", "a1"):
                pass
    finally:
        backend.sa_engine = _SAEngine(None)
        backend.close()


def test_scope_conditions_compile_for_oracle():
    t = build_tables("MYSTORE", 8)
    d = oracle.dialect()
    own = str(sa.select(t.fact.c.id).where(reads.owned(t.fact, "a", "u")).compile(dialect=d))
    shared = str(sa.select(t.fact.c.id).where(reads.owned(t.fact, "a", None)).compile(dialect=d))
    seen = str(sa.select(t.fact.c.id).where(reads.visible(t.fact, "a", "u")).compile(dialect=d))
    assert '"MYSTORE_KG_FACT".user_id = :user_id_1' in own
    assert '"MYSTORE_KG_FACT".user_id IS NULL' in shared and ":user_id" not in shared
    assert '("MYSTORE_KG_FACT".user_id IS NULL OR "MYSTORE_KG_FACT".user_id = :user_id_1)' in seen
