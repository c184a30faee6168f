"""oramem's error hierarchy: one root, :class:`Error` (STORE_CONTRACT §11).

Every exception oramem raises on purpose is an :class:`Error`, so ``except oramem.Error``
catches them all (as ``psycopg.Error`` and ``oracledb.Error`` do for those drivers)::

    Error
    ├── ArgumentError (also ValueError)       a bad argument; nothing was written
    │   ├── NoEmbedder                         texts to embed and no embedder
    │   └── DuplicateRecordError               an added id already stored or repeated
    ├── ArgumentTypeError (also TypeError)     an argument of the wrong type
    ├── StoreError                             the state of a store
    │   ├── SchemaError ── StoreNotFound, StoreSettingsMismatch
    │   ├── StoreBusy                          a lock held longer than the wait allowed
    │   ├── StoreClosed (also ValueError, RuntimeError)
    │   ├── CapabilityError                    the database lacks a feature
    │   └── FirewallRejected (also ValueError) oramem.trust
    ├── KnowledgeError                         the knowledge layer (oramem.knowledge.errors)
    ├── ErasedSubjectError (also ValueError)   oramem.trust.erasure
    ├── JSONLError (also ValueError)           oramem.jsonl
    ├── EmbeddingServiceError (also RuntimeError), ModelNotAvailable (also RuntimeError)
    ├── AnnUnavailable (also ImportError)      oramem.ann
    ├── ScriptError (also RuntimeError)        oramem.oracle.admin
    └── HTTPFailure                            oramem._http

**Dual bases.** The classes marked "also X" keep the built-in base they had before the root
existed, so code written against those releases (``except ValueError``, ``except
RuntimeError``, ``pytest.raises(TypeError)``) keeps working. :class:`StoreClosed` replaces
three types a closed object raised before: ``ValueError`` (the store facade, the knowledge
layer), ``RuntimeError`` (the Oracle engine, the knowledge layer's background loop) and
``StoreError`` (the SQLite connection); it keeps all three. New code should catch the oramem
class. The built-in bases are kept at least until 1.0.

Bad arguments raise :class:`ArgumentError` (a ``ValueError``) or :class:`ArgumentTypeError`
(a ``TypeError``) before anything is written. Parts of the package that predate the root
still raise a plain ``ValueError``/``TypeError``; the CLI treats both alike (exit status 2).
The Oracle engine maps each PL/SQL error code of ``plsql/oramem_errors.pks`` onto one of
these classes (see ``oramem.oracle.errors``).
"""

from __future__ import annotations

__all__ = [
    "Error",
    "ArgumentError",
    "ArgumentTypeError",
    "NoEmbedder",
    "DuplicateRecordError",
    "StoreError",
    "SchemaError",
    "StoreNotFound",
    "StoreSettingsMismatch",
    "StoreBusy",
    "StoreClosed",
    "CapabilityError",
    "is_sqlite_busy",
]


class Error(Exception):
    """Root of every error oramem raises on purpose."""


class ArgumentError(Error, ValueError):
    """A bad argument (value out of range, empty, inconsistent with another); raised
    before anything is written. Also a ``ValueError``."""


class ArgumentTypeError(Error, TypeError):
    """An argument of the wrong type; raised before anything is written. Also a
    ``TypeError`` (not a ``ValueError``: ``except ValueError`` blocks keep letting type
    errors through, as before)."""


class NoEmbedder(ArgumentError):
    """The call needs vectors (a text to embed) and the store has no embedder: pass one to
    the store, or give the vectors yourself."""


class DuplicateRecordError(ArgumentError):
    """An ``add`` named a record id that is already stored (SC-4.3; a profile's id is its
    user or agent) or repeated within the call; nothing was written. Also a ``ValueError``.

    ``records``: the ``(record_type, id)`` pairs the engine found, in id order, when it
    names them (the SQLite engine does; Oracle's error, ``-20005`` / ``ORA-00001``, names
    them in its message only, so ``records`` is empty there). Catch it to update instead
    (``store.update``), or add with ``on_conflict="skip"`` where the call takes it."""

    def __init__(self, message: str, records: "tuple[tuple[str, str], ...] | list[tuple[str, str]]" = ()) -> None:
        super().__init__(message)
        self.records: tuple[tuple[str, str], ...] = tuple((str(t), str(i)) for t, i in records)


class StoreError(Error):
    """Base class of every store state error."""


class SchemaError(StoreError):
    """The store's schema objects are missing, partial, outdated or in a bad lifecycle
    state for the requested schema policy."""


class StoreNotFound(SchemaError):
    """No store with that ``memory_store_id`` exists (and the policy may not create it)."""


class StoreSettingsMismatch(SchemaError):
    """The store exists with settings (vector_dim, strategy, sync mode, retention) that
    differ from the ones requested on open (SC-10.4)."""

    #: A ``search_strategy`` the store lacks: whether an open under ``CREATE_IF_NECESSARY``
    #: can add it (False: a keyword store holding records, whose rows have no vectors).
    #: None for every other setting.
    upgradable: "bool | None" = None


class StoreBusy(StoreError):
    """Another session holds the store's lock for longer than the wait allowed."""


class StoreClosed(StoreError, ValueError, RuntimeError):
    """The store (or the KnowledgeMemory, or an engine) was closed; open a new one.

    Also a ``ValueError`` and a ``RuntimeError``: before 0.2 a closed object raised one of
    ``ValueError``, ``RuntimeError`` or ``StoreError`` depending on the engine and colour."""


class CapabilityError(StoreError):
    """The database lacks a feature the store needs (e.g. Oracle Text, vector memory,
    the CREATE JOB privilege)."""


#: SQLite primary result codes of a lock held by another connection (sqlite3.h)
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6


def is_sqlite_busy(exc: BaseException) -> bool:
    """Whether ``exc`` (a ``sqlite3``/``sqlean`` error, or a SQLAlchemy error wrapping one)
    says the database is locked by another connection: SQLITE_BUSY or SQLITE_LOCKED,
    extended codes (``SQLITE_BUSY_SNAPSHOT``...) included.

    Decided by the error code (``sqlite_errorcode``, set by ``sqlite3`` on Python 3.11+ and
    by ``sqlean``); only an error without one (Python 3.10's ``sqlite3``) falls back to the
    message text."""
    orig = getattr(exc, "orig", None)  # SQLAlchemy's DBAPIError keeps the driver's error there
    if isinstance(orig, BaseException):
        exc = orig
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    text = str(exc).lower()
    return "locked" in text or "busy" in text
