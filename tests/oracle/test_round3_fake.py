"""Fake-driver tests for the third review's driver-side findings (reviews/round3/*.md):
each fails on the code the review read. Static-checked, not run against Oracle."""

from __future__ import annotations

import json

import pytest

from oramem.errors import SchemaError

from .fakes import db_error
from .test_driver_fake import KINDS, REC, opened, run


def _once(error_code: int, then):
    state = {"n": 0}

    def answer(call):
        state["n"] += 1
        if state["n"] == 1:
            raise db_error(error_code, "existing state of packages has been discarded")
        return then

    return answer, state


# D11 / N8: after a reinstall every pooled session fails its next call once with ORA-04068;
# outside a block the engines retry that call once.
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("code", [4068, 4061, 4065])
def test_d11_package_state_reset_is_retried_once_outside_a_block(kind, code):
    answer, state = _once(code, json.dumps(REC))
    engine, rec = opened(kind, {"oramem_store.get_json": answer})
    got = run(engine, "get", "memory", "r1")
    assert got is not None and got.id == "r1" and state["n"] == 2


@pytest.mark.parametrize("kind", KINDS)
def test_d11_a_second_reset_or_another_error_is_not_retried(kind):
    engine, rec = opened(kind, {"oramem_store.get_json": db_error(4068, "discarded")})
    with pytest.raises(SchemaError, match="ORA-04068"):
        run(engine, "get", "memory", "r1")
    assert len([c for c in rec.plsql if c.name == "oramem_store.get_json"]) == 2


def test_d11_inside_a_block_the_reset_is_raised():
    """In a store.transaction() block the earlier statements' state is the caller's: no retry."""
    answer, state = _once(4068, json.dumps(REC))
    engine, rec = opened("pool", {"oramem_store.get_json": answer})
    with pytest.raises(SchemaError, match="ORA-04068"):
        with engine.transaction():
            engine.get("memory", "r1")
    assert state["n"] == 1


# D7: migrate's knowledge copy looks up existing keys in IN lists of at most 1000 (ORA-01795).
def test_d7_insert_missing_keeps_in_lists_under_1000():
    import sqlalchemy as sa
    from sqlalchemy.dialects import oracle

    from oramem.migrate import _insert_missing

    md = sa.MetaData()
    t = sa.Table("T", md, sa.Column("id", sa.String(36), primary_key=True), sa.Column("v", sa.Integer))
    engine = sa.create_engine("sqlite://")
    md.create_all(engine)
    sizes: list[int] = []

    @sa.event.listens_for(engine, "before_cursor_execute")
    def count(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SELECT"):
            compiled = context.compiled
            sizes.append(1)
            sql = str(compiled.statement.compile(dialect=oracle.dialect(), compile_kwargs={"literal_binds": True}))
            assert sql.count(",") < 1000, "an IN list over 1000 expressions is ORA-01795 on Oracle"

    rows = [{"id": f"k{i}", "v": i} for i in range(1500)]
    with engine.begin() as conn:
        conn.execute(t.insert(), rows[:10])
        assert _insert_missing(conn, t, [t.c.id], rows) == 1490
    assert len(sizes) == 3


# D8: only HYBRID sends embedding_model; a schema-qualified model on HYBRID is refused before any call.
def test_d8_model_only_for_hybrid_and_no_owner_prefix():
    from oramem import SchemaPolicy, SearchStrategy
    from oramem.oracle import SyncOracleEngine

    from .fakes import FakePool, Recorder
    from .test_driver_fake import SETTINGS_OUT, settings

    rec = Recorder({"oramem_admin.open_store": json.dumps(SETTINGS_OUT)})
    SyncOracleEngine(FakePool(rec), embedding_model="models.minilm").open(
        settings(search_strategy=SearchStrategy.VECTOR), SchemaPolicy.CREATE_IF_NECESSARY)
    assert "embedding_model" not in json.loads(rec.plsql[0].binds["in_settings"])
    rec = Recorder({"oramem_admin.open_store": json.dumps(SETTINGS_OUT)})
    with pytest.raises(ValueError, match="must be loaded in the schema that owns the oramem packages"):
        SyncOracleEngine(FakePool(rec), embedding_model="models.minilm").open(
            settings(search_strategy=SearchStrategy.HYBRID), SchemaPolicy.CREATE_IF_NECESSARY)
    assert rec.plsql == []


# D1 (migrate verification): the digest compares what both engines read back as equal values:
# an Oracle JSON column returns 1.0 as 1 (NUMBER), SQLite's text keeps 1.0.
def test_d1_knowledge_digest_spells_integral_floats_as_on_oracle():
    from decimal import Decimal

    from oramem.knowledge.db.schema import _plain_json
    from oramem.migrate import _canonical

    sqlite_side = {"score": 1.0, "items": [2.0, 0.5, "x"], "n": 3}
    oracle_side = _plain_json({"score": Decimal("1"), "items": [Decimal("2"), Decimal("0.5"), "x"], "n": Decimal("3")})
    assert _canonical(sqlite_side) == _canonical(oracle_side)
    assert _canonical(1.0) == _canonical(1) and _canonical(0.5) != _canonical(1)
