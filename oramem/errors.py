"""The store's error hierarchy (STORE_CONTRACT §11).

Bad arguments raise ``ValueError``/``TypeError`` before anything is written; problems with
the state of a store raise a :class:`StoreError` subclass whose message says what to do.
The Oracle engine maps each PL/SQL error code of ``plsql/oramem_errors.pks`` onto one of
these classes (see ``oramem.oracle.errors``).
"""

from __future__ import annotations

__all__ = [
    "StoreError",
    "SchemaError",
    "StoreNotFound",
    "StoreSettingsMismatch",
    "StoreBusy",
    "CapabilityError",
]


class StoreError(Exception):
    """Base class of every store state error."""


class SchemaError(StoreError):
    """The store's schema objects are missing, partial, outdated or in a bad lifecycle
    state for the requested schema policy."""


class StoreNotFound(SchemaError):
    """No store with that ``memory_store_id`` exists (and the policy may not create it)."""


class StoreSettingsMismatch(SchemaError):
    """The store exists with settings (vector_dim, strategy, sync mode, retention) that
    differ from the ones requested on open (SC-10.4)."""


class StoreBusy(StoreError):
    """Another session holds the store's lock for longer than the wait allowed."""


class CapabilityError(StoreError):
    """The database lacks a feature the store needs (e.g. Oracle Text, vector memory,
    the CREATE JOB privilege)."""
