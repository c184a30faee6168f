"""Fixtures of the SQLite-engine tests: a temp database file, an injectable clock, and a
store factory that closes what it opened."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore

DIM = 8


def vec(*hot: int, dim: int = DIM) -> list[float]:
    """Unit vector with ones at the ``hot`` positions."""
    v = np.zeros(dim)
    for i in hot:
        v[i] = 1.0
    return list(v / np.linalg.norm(v))


class FakeClock:
    """A settable UTC clock for TTL tests."""

    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, 12, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


class RecordingConnection:
    """Stands in for the engine's sqlite3 connection and keeps the SQL text *before*
    parameter binding (the sqlite3 trace callback reports it with values expanded)."""

    def __init__(self, conn):
        self._conn = conn
        self.statements: list[str] = []
        self.calls: list[tuple[str, str]] = []

    def execute(self, sql, *args):
        self.statements.append(sql)
        self.calls.append(("execute", sql))
        return self._conn.execute(sql, *args)

    def executemany(self, sql, *args):
        self.statements.append(sql)
        self.calls.append(("executemany", sql))
        return self._conn.executemany(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


@pytest.fixture
def db_path(tmp_path) -> str:
    return str(tmp_path / "memory.db")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make(db_path, clock):
    opened = []

    def factory(**kwargs):
        kwargs.setdefault("vector_dim", DIM)
        kwargs.setdefault("clock", clock)
        path = kwargs.pop("path", db_path)
        store = SQLiteMemoryStore(path, **kwargs)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make):
    return make()


@pytest.fixture
def kw_store(make):
    return make(memory_store_id="KW", search_strategy="keyword", vector_dim=None)


@pytest.fixture
def decoded_ids(monkeypatch) -> list:
    """The ids of the records the SQLite engine's searches decode (its ``to_record`` calls),
    in order: a search reads and decodes only what it returns."""
    from oramem.sqlite import engine as engine_module

    seen: list = []
    real = engine_module.to_record

    def counting(row):
        seen.append(row[2])
        return real(row)

    monkeypatch.setattr(engine_module, "to_record", counting)
    return seen


@pytest.fixture
def runner(monkeypatch):
    """A click runner for the CLI with none of the environment's store settings (ORAMEM_DB,
    ORAMEM_STORE, ORAMEM_STRATEGY), so a test's --db and flags decide."""
    for var in ("ORAMEM_DB", "ORAMEM_STORE", "ORAMEM_STRATEGY"):
        monkeypatch.delenv(var, raising=False)
    return CliRunner()
