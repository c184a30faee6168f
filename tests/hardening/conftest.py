"""Fixtures of the hardening suite (issue 7).

``make_store(**kwargs)`` opens a store of the engine under test, like the contract
suite: SQLite always (a temp file per test, the same file for every call inside one
test), Oracle when ``ORACLE_DSN`` (or the Docker provider of ``tests/oracle``) gives a
database, else the Oracle parametrisation skips with the printed reason. Tests that need
an injected clock, raw SQLite tables or SIGKILL of a local process use ``sqlite_only``.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

from contract.engines import ENGINES, engine_store_factory


@pytest.fixture(params=ENGINES)
def engine(request) -> str:
    return request.param


@pytest.fixture
def db_path(tmp_path) -> str:
    return str(tmp_path / "hardening.db")


@pytest.fixture
def make_store(engine: str, db_path: str) -> Callable[..., Any]:
    factory, close_all = engine_store_factory(engine, db_path, 32)
    yield factory
    close_all()


@pytest.fixture
def sqlite_only(engine: str) -> None:
    if engine != "sqlite":
        reason = "SQLite-only by nature (injected clock / raw SQLite tables / SIGKILL of a local process)"
        print(reason)
        pytest.skip(reason)


@pytest.fixture
def hybrid_engine(engine: str) -> None:
    if engine == "oracle":
        reason = "HYBRID on Oracle needs an in-database OracleDBEmbedder (ONNX model); covered by tests/oracle"
        print(reason)
        pytest.skip(reason)
