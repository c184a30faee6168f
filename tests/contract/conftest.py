"""Fixtures of the engine-parametrised contract suite (STORE_CONTRACT.md).

``make_store(**kwargs)`` builds a store of the engine under test with the public
constructor arguments; see ``engines.py`` for how each engine is reached and how the
Oracle engine is plugged in.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

from .engines import ENGINES, engine_store_factory



@pytest.fixture(params=ENGINES)
def engine(request) -> str:
    """The engine under test: ``"sqlite"`` or ``"oracle"``."""
    return request.param


@pytest.fixture
def make_store(engine: str, tmp_path) -> Callable[..., Any]:
    """Factory: ``make_store(**store_kwargs)`` -> an open store of the engine under test.

    Defaults: ``embedder=HashEmbedder(dim=64)`` (pass ``embedder=None`` for none), SQLite
    path ``tmp_path/"store.db"`` (the same file for every call of one test). ``clock=`` is
    SQLite-only (the test is skipped on Oracle). Every store is closed at teardown.
    """
    factory, close_all = engine_store_factory(engine, str(tmp_path / "store.db"), 64)
    yield factory
    close_all()


@pytest.fixture
def store(make_store):
    """A fresh VECTOR store with ``HashEmbedder(dim=64)``."""
    return make_store()


@pytest.fixture
def kw_store(make_store):
    """A fresh KEYWORD store without embedder."""
    from oramem import SearchStrategy

    return make_store(embedder=None, search_strategy=SearchStrategy.KEYWORD)


@pytest.fixture
def sqlite_only(engine):
    if engine != "sqlite":
        pytest.skip("SQLite-specific behaviour (see the test docstring)")


@pytest.fixture
def oracle_only(engine):
    if engine != "oracle":
        pytest.skip("OracleDBMemoryStore-specific behaviour (see the test docstring)")


@pytest.fixture
def hybrid_capable(engine):
    """HYBRID on Oracle needs an in-database OracleDBEmbedder (ONNX model); the contract
    suite runs HYBRID on SQLite and leaves Oracle HYBRID to tests/oracle."""
    if engine == "oracle":
        pytest.skip("HYBRID on Oracle needs an OracleDBEmbedder (in-database ONNX model); covered by tests/oracle")
