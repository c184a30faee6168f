"""``store.sql_access()`` (oramem/sql_access.py): the SQLAlchemy access a layer above the store
(the knowledge layer) gets instead of reaching into the engine (issue 25 item 3)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.errors import CapabilityError
from oramem.sql_access import SQLAccess


@pytest.fixture()
def store(tmp_path):
    s = SQLiteMemoryStore(str(tmp_path / "m.db"), embedder=HashEmbedder(16))
    yield s
    s.close()


def _table(access: SQLAccess) -> sa.Table:
    t = sa.Table("layer_rows", sa.MetaData(), sa.Column("id", sa.String(8), primary_key=True))
    with access.write("create", "a1") as conn:
        t.create(conn)
    return t


def test_writes_join_the_stores_block_and_roll_back_with_it(store):
    access = store.sql_access()
    assert isinstance(access, SQLAccess) and access.dialect_name == "sqlite"
    t = _table(access)
    with pytest.raises(RuntimeError, match="boom"):
        with store.transaction():
            store.add(["kept only if the block commits"], "memory", user_ids="u1")
            with access.write("layer write", "a1") as conn:
                conn.execute(sa.insert(t).values(id="r1"))
            raise RuntimeError("boom")
    with access.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t)).scalar() == 0
    assert store.list("memory", user_id="u1") == []
    with store.transaction():
        store.add(["committed together"], "memory", user_ids="u1")
        with access.write("layer write", "a1") as conn:
            conn.execute(sa.insert(t).values(id="r2"))
    with access.read() as conn:
        assert [r[0] for r in conn.execute(sa.select(t.c.id))] == ["r2"]
    assert len(store.list("memory", user_id="u1")) == 1
    access.close()


def test_configure_sees_the_sqlalchemy_engine_once(store):
    seen = []
    access = store.sql_access(configure=seen.append)
    assert seen == [access.sa_engine]


def test_sqlite_takes_no_erasure_it_runs_deletion_hooks(store):
    with pytest.raises(CapabilityError, match="deletion hook"):
        store.register_erasure(object())
