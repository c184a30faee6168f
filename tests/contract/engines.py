"""How the contract suite reaches each engine.

The contract tests never build a store themselves: they call the ``make_store`` fixture
(``tests/contract/conftest.py``), which delegates here. Two engines:

* ``sqlite`` - always available; one temp-file database per test (``tmp_path``), so every
  ``make_store(...)`` call inside one test opens the *same* file (reopen semantics), and
  ``path=":memory:"`` may be passed explicitly.
* ``oracle`` - :func:`oracle_store_factory` builds an ``OracleDBMemoryStore`` from a
  python-oracledb pool. Where the pool comes from is decided by :func:`oracle_dsn`:

  1. the ``ORACLE_DSN`` / ``ORACLE_USER`` / ``ORACLE_PASSWORD`` environment variables;
  2. otherwise whatever DSN provider was registered with
     :func:`register_oracle_dsn_provider` - **the hook for the Docker set-up**:
     ``tests/oracle`` (pytest-docker + ``docker/compose.yml``) can call
     ``register_oracle_dsn_provider(fn)`` from a conftest/plugin, where ``fn()`` starts
     (or finds) the container and returns ``(dsn, user, password)`` or ``None`` when no
     Docker engine answered;
  3. otherwise the Oracle parametrisation is skipped with :data:`ORACLE_SKIP_REASON`.

Isolation on Oracle: all tests share one schema, so the factory maps every
``memory_store_id`` a test passes (and the omitted/default one) onto a store id unique to
the running test (``<id>_<token>``, still within the 16-character limit: tests keep their
own ids at most 8 characters). Ids are mapped case-preservingly, so case-insensitivity
tests keep their meaning. The first open of each mapped id inside a test uses
``SchemaPolicy.RECREATE`` unless the test chose a policy, which makes the store fresh like
the SQLite temp file.
"""

from __future__ import annotations

import os
import secrets
from typing import Any, Callable, Optional

ORACLE_SKIP_REASON = (
    "Oracle engine: ORACLE_DSN not set and no Docker engine answered; see README 'Oracle' section"
)

#: Engine names the contract suite is parametrised over.
ENGINES = ("sqlite", "oracle")

_dsn_provider: Optional[Callable[[], Optional[tuple[str, str, str]]]] = None
_pool: Any = None
_pool_key: Optional[tuple[str, str, str]] = None


def register_oracle_dsn_provider(provider: Callable[[], Optional[tuple[str, str, str]]]) -> None:
    """Plug a DSN source (e.g. a pytest-docker started Oracle Database Free container)
    into the contract suite. ``provider()`` returns ``(dsn, user, password)`` or ``None``."""
    global _dsn_provider
    _dsn_provider = provider


def oracle_dsn() -> Optional[tuple[str, str, str]]:
    """``(dsn, user, password)`` of the Oracle database to test against, or ``None``."""
    dsn = os.environ.get("ORACLE_DSN")
    if dsn:
        return dsn, os.environ.get("ORACLE_USER", "oramem"), os.environ.get("ORACLE_PASSWORD", "")
    if _dsn_provider is not None:
        try:
            return _dsn_provider()
        except Exception:  # a Docker engine that does not answer means "not available"
            return None
    return None


def oracle_pool() -> Any:
    """One python-oracledb pool per test session (created lazily)."""
    global _pool, _pool_key
    params = oracle_dsn()
    if params is None:
        return None
    if _pool is None or _pool_key != params:
        import oracledb

        dsn, user, password = params
        _pool = oracledb.create_pool(user=user, password=password, dsn=dsn, min=1, max=4, increment=1)
        _pool_key = params
    return _pool


class OracleIdMapper:
    """Maps the store ids of one test onto ids unique to that test (see module doc)."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(3)  # 6 hex chars
        self.opened: set[str] = set()

    def map(self, memory_store_id: Any) -> Any:
        from oramem import NOT_SET

        if memory_store_id is NOT_SET or memory_store_id is None:
            return f"CT_{self.token}"
        if isinstance(memory_store_id, str) and 1 <= len(memory_store_id) <= 8:
            return f"{memory_store_id}_{self.token}"
        return memory_store_id  # invalid ids go through untouched: validation must reject them


def oracle_store_factory(mapper: OracleIdMapper, **kwargs: Any):
    """Build an ``OracleDBMemoryStore`` for the contract suite, or return ``None`` when no
    Oracle database is reachable (the caller skips with :data:`ORACLE_SKIP_REASON`).

    ``kwargs`` are the public constructor arguments (embedder, schema_policy, vector_dim,
    search_strategy, search_index_sync, memory_retention_config, memory_store_id,
    table_name_prefix). ``raw_id=True`` passes ``memory_store_id`` unmapped.
    """
    from oramem import NOT_SET, OracleDBMemoryStore, SchemaPolicy

    pool = oracle_pool()
    if pool is None:
        return None
    raw_id = kwargs.pop("raw_id", False)
    kwargs.pop("path", None)
    if not raw_id and "table_name_prefix" not in kwargs:
        mapped = mapper.map(kwargs.get("memory_store_id", NOT_SET))
        kwargs["memory_store_id"] = mapped
        if "schema_policy" not in kwargs:
            key = mapped.upper() if isinstance(mapped, str) else repr(mapped)
            kwargs["schema_policy"] = (
                SchemaPolicy.CREATE_IF_NECESSARY if key in mapper.opened else SchemaPolicy.RECREATE
            )
            mapper.opened.add(key)
    embedder = kwargs.pop("embedder", None)
    return OracleDBMemoryStore(embedder, pool, **kwargs)


def engine_store_factory(engine: str, default_path: str, embedder_dim: int):
    """``(factory, close_all)`` for an engine-parametrised fixture: ``factory(**kwargs)``
    opens a store of ``engine`` with the public constructor arguments (default embedder
    ``HashEmbedder(embedder_dim)``, pass ``embedder=None`` for none; SQLite path
    ``default_path`` unless ``path=`` is given; ``clock=`` skips on Oracle; an unreachable
    Oracle skips with the printed reason); ``close_all()`` closes every store it opened."""
    import pytest

    stores: list = []
    mapper = OracleIdMapper()

    def factory(**kwargs):
        from oramem.embedders import HashEmbedder

        if "embedder" not in kwargs:
            kwargs["embedder"] = HashEmbedder(dim=embedder_dim)
        if engine == "sqlite":
            from oramem import SQLiteMemoryStore

            kwargs.pop("raw_id", None)
            store = SQLiteMemoryStore(kwargs.pop("path", default_path), **kwargs)
        else:
            if "clock" in kwargs:
                pytest.skip("an injected clock is SQLite-only (Oracle uses the database time)")
            store = oracle_store_factory(mapper, **kwargs)
            if store is None:
                print(ORACLE_SKIP_REASON)
                pytest.skip(ORACLE_SKIP_REASON)
        stores.append(store)
        return store

    def close_all() -> None:
        # teardown: a store a test already closed, or broke on purpose, must not mask the
        # test's own outcome, so close errors are reported as warnings, not raised
        import warnings

        for store in reversed(stores):
            try:
                store.close()
            except Exception as exc:  # noqa: BLE001
                warnings.warn(f"closing a test store failed: {exc!r}")

    return factory, close_all
