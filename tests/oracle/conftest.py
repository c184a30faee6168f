"""Fixtures of the Oracle-only tests: a database from ORACLE_DSN or Docker (see
oracle_env.py), else every test using them is skipped with the printed reason (no Docker
engine), or fails with the error and the container log's tail (Docker answered and the
database did not come up: ``oracle_target()`` raises pytest's failure, review D10).

The fake-driver tests in this folder use none of these fixtures and always run.
"""

from __future__ import annotations

import secrets

import pytest

from . import oracle_env


@pytest.fixture(scope="session")
def oracle_params():
    target = oracle_env.oracle_target()
    if target is None:
        reason = oracle_env.skip_reason()
        print(reason)
        pytest.skip(reason)
    return target


@pytest.fixture
def conn(oracle_params):
    import oracledb

    dsn, user, password = oracle_params
    c = oracledb.connect(user=user, password=password, dsn=dsn)
    c.call_timeout = 120_000
    yield c
    c.rollback()
    c.close()


@pytest.fixture(scope="session")
def pool(oracle_params):
    import oracledb

    dsn, user, password = oracle_params
    p = oracledb.create_pool(user=user, password=password, dsn=dsn, min=1, max=4, increment=1)
    yield p
    p.close(force=True)


@pytest.fixture
def store_id(conn):
    """A fresh store id (<= 16 chars) dropped after the test."""
    sid = f"T{secrets.token_hex(4).upper()}"
    yield sid
    with conn.cursor() as cur:
        cur.callproc("oramem_admin.drop_store", keyword_parameters={"in_store_id": sid, "in_if_exists": 1})


@pytest.fixture
def onnx_model(conn):
    """The first ONNX model loaded in the schema (skips the test when there is none)."""
    with conn.cursor() as cur:
        cur.execute("select model_name from user_mining_models where algorithm = 'ONNX' order by model_name")
        row = cur.fetchone()
    if row is None:
        pytest.skip("no ONNX model loaded in this schema (oramem db load-model / DBMS_VECTOR.LOAD_ONNX_MODEL)")
    return row[0]
