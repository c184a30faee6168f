"""``OracleEngine``: the thin python-oracledb driver over oramem's PL/SQL packages.

Each :class:`oramem.engine.Engine` operation is **one** named-parameter call of a package
subprogram listed in :data:`ALL_CALLS` (``oramem_admin``, ``oramem_store``,
``oramem_search``; payload formats in ``plsql/README.md``). Requests are serialised to JSON
here; no SQL text is assembled. Data calls never commit inside PL/SQL: the engine commits
after every successful write (each method is one transaction) and rolls back on error.

``OracleEngine(connection_or_pool)`` accepts:

- ``oracledb.ConnectionPool`` (acquire per call) or ``oracledb.Connection`` - sync methods;
- ``oracledb.AsyncConnectionPool`` or ``oracledb.AsyncConnection`` - ``*_async`` methods,
  with python-oracledb's native asyncio (thin mode), never threads.

Colours (issue 12): ``OracleEngine(source)`` returns a :class:`SyncOracleEngine` or an
:class:`AsyncOracleEngine`. Everything colour-free (argument checks, JSON payloads, reply
decoding, error translation, state) is written once in :class:`OracleEngine` as
``_prepare_*`` methods that return a ``_Prepared`` call; each colour class only does the
I/O (acquire, call, commit/rollback, caller blocks) and each public method is a one-line
twin over the same ``_prepare_*``. We chose thin twins over one implementation (the
python-oracledb ``Connection`` / ``AsyncConnection`` shape) rather than generating the sync
class from the async one (psycopg): what differs between the colours here is a dozen lines
of I/O, so a generator and its ``--check`` step would cost more than they save.
``tests/unit/test_colour_parity.py`` checks the twins' signatures (and ``Engine``'s, and
``KnowledgeMemory``'s).

Calling the sync methods on an async pool (or the reverse) is a ``TypeError`` saying which
to use. The engine never closes what it was given: ``close()`` only stops the engine.
With a single connection the engine commits on that connection after each write, so give
it a connection that does not carry other uncommitted work; calls from several threads (or
tasks) on one connection take turns.

Caller blocks (SC-12, ``store.transaction()`` / ``transaction_async()``): the block holds
one connection (acquired from the pool, or the given connection, which other threads then
wait for) until it ends; operations inside it run on that connection and do not commit;
the block commits once at its end, or rolls back when an exception leaves it. Each
write subprogram sets a savepoint and rolls back to it on error (``oramem_store.pkb``), so a
failed operation inside a block undoes only itself. Nested blocks are ``SAVEPOINT`` /
``ROLLBACK TO SAVEPOINT``.

Deletion hooks (SC-8.5) on Oracle are PL/SQL procedures:
``register_deletion_hook("APP.ON_ORAMEM_DELETE")`` registers a procedure taking one
``IN CLOB`` (the DeletionEvent JSON) that the delete/cascade/purge paths call in the same
transaction (``oramem_admin.set_deletion_hook``). A Python callable is a ``TypeError``.

Static-checked against the package specs, not run against Oracle here.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import dataclasses
import json
import logging
import math
import re
import threading
import warnings
from typing import Any, AsyncIterator, Callable, Iterator, Mapping, Optional, cast

import numpy as np
import oracledb

from ..engine import Block, Engine
from ..errors import CapabilityError, StoreError
from ..sqlite.keyword import DEFAULT_KEYWORD_LANGUAGE, HybridConfig, check_language
from ..requests import (
    ON_CONFLICT,
    AddRequest,
    ChunkRow,
    DeletionEvent,
    ErasureReport,
    ForgetRequest,
    ListRequest,
    NewRecord,
    Scope,
    SearchRequest,
    StoreSettings,
    TTLSpec,
    UpdateRequest,
)
from ..types import (
    NOT_SET,
    MemoryRetentionConfig,
    MessageRecord,
    Record,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)
from .calls import PlsqlCall
from .errors import translate

__all__ = ["OracleEngine", "SyncOracleEngine", "AsyncOracleEngine", "ALL_CALLS", "CALLS"]

_V, _C, _I = "VARCHAR2", "CLOB", "PLS_INTEGER"

#: Every PL/SQL call the driver makes, by operation (checked against plsql/*.pks).
CALLS: dict[str, PlsqlCall] = {
    "open": PlsqlCall("oramem_admin", "open_store",
                      (("in_settings", _C), ("in_policy", _V), ("in_lock_timeout", _I)), _C),
    "set_deletion_hook": PlsqlCall("oramem_admin", "set_deletion_hook",
                                   (("in_store_id", _V), ("in_procedure_name", _V))),
    "add": PlsqlCall("oramem_store", "add_json",
                     (("in_store_id", _V), ("in_batch", _C), ("in_batch_size", _I)), _C),
    "get": PlsqlCall("oramem_store", "get_json",
                     (("in_store_id", _V), ("in_record_type", _V), ("in_record_id", _V)), _C),
    "list": PlsqlCall("oramem_store", "list_json", (("in_store_id", _V), ("in_request", _C)), _C),
    "list_thread_messages": PlsqlCall("oramem_store", "list_thread_messages_json",
                                      (("in_store_id", _V), ("in_thread_id", _V), ("in_last_n", _I)), _C),
    "update": PlsqlCall("oramem_store", "update_json", (("in_store_id", _V), ("in_request", _C)), _I),
    "delete": PlsqlCall("oramem_store", "delete_record_json",
                        (("in_store_id", _V), ("in_record_type", _V), ("in_record_id", _V),
                         ("in_cascade", _I)), _C),
    "delete_thread": PlsqlCall("oramem_store", "delete_thread_json",
                               (("in_store_id", _V), ("in_thread_id", _V)), _C),
    "purge_expired": PlsqlCall("oramem_store", "purge_expired_json",
                               (("in_store_id", _V), ("in_commit", _I)), _C),
    "sync_search_index": PlsqlCall("oramem_store", "sync_search_index", (("in_store_id", _V),)),
    "search": PlsqlCall("oramem_search", "search_json", (("in_store_id", _V), ("in_request", _C)), _C),
    "has_knowledge": PlsqlCall("oramem_kg_jobs", "has_knowledge", (("in_store_id", _V),), _I),
}

#: Flat tuple for the static gate (tests/plsql) and the DBA tooling.
ALL_CALLS: tuple[PlsqlCall, ...] = tuple(CALLS.values())

_RETURN_TYPES = {"CLOB": oracledb.DB_TYPE_CLOB, "PLS_INTEGER": int, "NUMBER": int, "VARCHAR2": str}
#: PL/SQL string binds are limited to 32767 bytes (ORACLE_NOTES 11.2); bigger CLOB
#: arguments are bound as CLOBs.
_MAX_STRING_BIND = 32767
_LOCK_TIMEOUT_SECONDS = 60
#: stands for "the opened store's id" in call arguments; resolved after the colour check
_STORE: Any = type("_OpenedStore", (), {"__repr__": lambda self: "<opened store id>"})()
log = logging.getLogger("oramem.oracle")
_HOOK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_$#]{0,127}(\.[A-Za-z][A-Za-z0-9_$#]{0,127}){0,2}$")


# --------------------------------------------------------------------------------------
# request -> JSON (plsql/README.md "JSON payloads")
# --------------------------------------------------------------------------------------

def _vector(v: Optional[np.ndarray]) -> Optional[list[float]]:
    if v is None:
        return None
    arr = np.asarray(v)
    if arr.ndim != 1:
        raise ValueError(f"a vector must be 1-D, got shape {arr.shape}")
    # The shortest decimal that reads back as the same float32 (numpy's str of a float32),
    # not the float32 widened to a double ("0.1", not "0.10000000149011612"): about half
    # the payload (review F20); TO_VECTOR(..., FLOAT32) rounds it to the same float32.
    out = [float(str(x)) for x in arr.astype(np.float32)]
    if not all(math.isfinite(x) for x in out):
        raise ValueError("vectors must contain finite numbers only (no NaN or infinity)")
    return out


def _chunks(chunks: tuple[ChunkRow, ...]) -> list[dict[str, Any]]:
    return [{"text": c.text, "vector": _vector(c.vector)} for c in chunks]


def _ttl(ttl: Optional[TTLSpec]) -> Optional[dict[str, Any]]:
    if ttl is None:
        return None
    return {"days": ttl.days, "anchor": str(ttl.anchor.value)}


def _record(r: NewRecord) -> dict[str, Any]:
    out = {
        "id": r.id,
        "record_type": r.record_type,
        "content": r.content,
        "thread_id": r.thread_id,
        "user_id": r.user_id,
        "agent_id": r.agent_id,
        "role": r.role,
        "timestamp": r.timestamp,
        "metadata": dict(r.metadata) if r.metadata is not None else None,
        "ttl": _ttl(r.ttl),
        "chunks": _chunks(r.chunks),
    }
    if r.restored_times is not None:
        # a backup's kept times replace this call's time and the ttl (oramem_store.add_json)
        created, expires = r.restored_times
        out["ttl"] = None
        out["restored_times"] = {"created_at": created, "expires_at": expires}
    return out


def _scope(s: Scope) -> dict[str, Any]:
    if s.match.value == "equals":
        return {"match": "equals", "value": s.value}
    return {"match": s.match.value}


def _dumps(payload: Any) -> str:
    try:
        return json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError as e:  # NaN/inf in metadata
        raise ValueError(f"the request cannot be sent as JSON: {e}; remove NaN/infinity values") from None
    except TypeError as e:
        raise TypeError(f"the request cannot be sent as JSON: {e}") from None


def settings_json(
    settings: StoreSettings, embedding_model: Optional[str], keyword_language: Optional[str] = None
) -> str:
    """The open_store settings JSON: a ``None`` adoptable setting is left out (absent =
    accept the persisted value; ``keyword_language`` too: a new store then gets ``english``)."""
    out: dict[str, Any] = {
        "memory_store_id": settings.memory_store_id,
        "search_strategy": SearchStrategy.coerce(settings.search_strategy, "search_strategy").value,
    }
    if settings.vector_dim is not None:
        out["vector_dim"] = settings.vector_dim
    if settings.search_index_sync is not None:
        out["search_index_sync"] = SearchIndexSyncMode.coerce(settings.search_index_sync, "search_index_sync").value
    if settings.retention is not None:
        out["retention"] = {
            "default_ttl_days": settings.retention.default_ttl_days,
            "max_ttl_days": settings.retention.max_ttl_days,
        }
    if embedding_model is not None:
        out["embedding_model"] = embedding_model
    if keyword_language is not None:
        out["keyword_language"] = keyword_language
    return _dumps(out)


def add_json(request: AddRequest) -> str:
    out: dict[str, Any] = {"records": [_record(r) for r in request.records]}
    if request.on_conflict != "fail":
        out["on_conflict"] = request.on_conflict
    return _dumps(out)


def list_json(request: ListRequest) -> str:
    out: dict[str, Any] = {
        "record_type": request.record_type,
        "limit": request.limit,
        "thread": _scope(request.thread),
        "user": _scope(request.user),
        "agent": _scope(request.agent),
    }
    if request.metadata_filter is not NOT_SET:
        f = request.metadata_filter
        out["metadata_filter"] = dict(f) if f is not None else None  # type: ignore[arg-type]
    return _dumps(out)


#: the most candidates a HYBRID leg contributes on Oracle (oramem_search.gc_max_fusion_depth)
MAX_FUSION_DEPTH = 10000


def check_hybrid(hybrid: Any) -> HybridConfig:
    """A :class:`HybridConfig` Oracle can honour: every field reaches ``oramem_search``; a
    ``depth`` above :data:`MAX_FUSION_DEPTH` cannot, so it is a ``CapabilityError``."""
    if hybrid is None:
        return HybridConfig()
    if not isinstance(hybrid, HybridConfig):
        raise TypeError(f"hybrid must be an oramem.sqlite.HybridConfig or None, got {type(hybrid).__name__}")
    if hybrid.depth is not None and hybrid.depth > MAX_FUSION_DEPTH:
        raise CapabilityError(
            f"HybridConfig.depth={hybrid.depth}: Oracle fuses at most {MAX_FUSION_DEPTH} candidates a leg "
            f"(oramem_search.gc_max_fusion_depth); pass depth <= {MAX_FUSION_DEPTH}, or None for max(10 * k, 200)"
        )
    return hybrid


def search_json(
    request: SearchRequest, hybrid: Optional[HybridConfig] = None, keyword_language: Optional[str] = None
) -> str:
    strategy = SearchStrategy.coerce(request.strategy, "strategy")
    out: dict[str, Any] = {
        "strategy": strategy.value,
        "k": request.k,
        "query_text": request.query_text,
        "query_vector": _vector(request.query_vector),
        "thread": _scope(request.thread),
        "user": _scope(request.user),
        "agent": _scope(request.agent),
        "record_types": list(request.record_types),
        "metadata_filter": dict(request.metadata_filter) if request.metadata_filter is not None else None,
    }
    if strategy is not SearchStrategy.VECTOR:
        out["keyword_language"] = keyword_language or DEFAULT_KEYWORD_LANGUAGE
    if strategy is SearchStrategy.HYBRID:
        cfg = check_hybrid(hybrid)
        out["hybrid"] = {
            "vector_weight": float(cfg.vector_weight),
            "keyword_weight": float(cfg.keyword_weight),
            "rrf_k": float(cfg.rrf_k),
            "depth": cfg.depth,
        }
    return _dumps(out)


def update_json(request: UpdateRequest) -> str:
    out: dict[str, Any] = {
        "record_type": request.record_type,
        "record_id": request.record_id,
        "retrieval": request.retrieval.value,
    }
    if request.content is not NOT_SET:
        out["content"] = request.content
    if request.retrieval.value == "replace":
        out["chunks"] = _chunks(request.chunks)
    if request.retrieval.value == "revector":
        out["vectors"] = [_vector(v) for v in request.vectors]
    if request.metadata is not NOT_SET:
        out["metadata"] = dict(request.metadata) if request.metadata is not None else None  # type: ignore[arg-type]
    if request.timestamp is not NOT_SET:
        out["timestamp"] = request.timestamp
    if request.ttl is not NOT_SET:
        out["ttl"] = _ttl(request.ttl)  # type: ignore[arg-type]
    return _dumps(out)


# --------------------------------------------------------------------------------------
# JSON -> results
# --------------------------------------------------------------------------------------

def record_from_json(obj: Mapping[str, Any]) -> Record:
    common = dict(
        id=obj["id"],
        record_type=obj["record_type"],
        content=obj.get("content"),
        timestamp=obj.get("timestamp"),
        metadata=obj.get("metadata"),
        thread_id=obj.get("thread_id"),
        user_id=obj.get("user_id"),
        agent_id=obj.get("agent_id"),
        created_at=obj.get("created_at"),
        expires_at=obj.get("expires_at"),
    )
    if obj["record_type"] == "message":
        seq = obj.get("seq_no")
        return MessageRecord(**common, role=obj.get("role"), seq_no=int(seq) if seq is not None else None)
    return Record(**common)


def settings_from_json(obj: Mapping[str, Any]) -> StoreSettings:
    for w in obj.get("warnings") or ():
        warnings.warn(f"oramem store {obj.get('memory_store_id')}: {w}", UserWarning, stacklevel=4)
    ret = obj.get("retention") or {}
    dim = obj.get("vector_dim")
    return StoreSettings(
        memory_store_id=obj["memory_store_id"],
        vector_dim=int(dim) if dim is not None else None,
        search_strategy=SearchStrategy(obj["search_strategy"]),
        search_index_sync=SearchIndexSyncMode(obj["search_index_sync"]),
        retention=MemoryRetentionConfig(
            default_ttl_days=ret.get("default_ttl_days"), max_ttl_days=ret.get("max_ttl_days")
        ),
    )


def _loads(text: Optional[str]) -> Any:
    return None if text is None else json.loads(text)


# --------------------------------------------------------------------------------------
# the engine
# --------------------------------------------------------------------------------------

def _kind(target: Any) -> str:
    if isinstance(target, oracledb.AsyncConnectionPool):
        return "async_pool"
    if isinstance(target, oracledb.ConnectionPool):
        return "pool"
    if isinstance(target, oracledb.AsyncConnection):
        return "async_conn"
    if isinstance(target, oracledb.Connection):
        return "conn"
    raise TypeError(
        "OracleEngine needs a python-oracledb connection or pool (oracledb.connect / create_pool, or "
        f"connect_async / create_pool_async), got {type(target).__name__}"
    )


def _check_id(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


class _Held:
    """The connection a caller block holds, its nesting depth, and (async) the lock that
    makes the block's tasks take turns on it."""

    def __init__(self, conn: Any, lock: Optional[asyncio.Lock] = None) -> None:
        self.conn = conn
        self.depth = 1
        self.lock = lock


@dataclasses.dataclass(frozen=True)
class _Prepared:
    """One operation, ready to run: the :data:`CALLS` entry, whether it commits, its
    argument values (``_STORE`` resolved at run time) and how the reply becomes the result.
    Built once by the shared ``OracleEngine._prepare_*`` methods; each colour class only
    runs it (``SyncOracleEngine._do`` / ``AsyncOracleEngine._do``)."""

    op: str
    commit: bool
    values: dict[str, Any]
    decode: Callable[[Any], Any]


class OracleEngine(Engine):
    """Persistence for one store in Oracle AI Database through the oramem packages.

    ``OracleEngine(connection_or_pool)`` returns a :class:`SyncOracleEngine` for an
    ``oracledb.ConnectionPool`` / ``Connection`` and an :class:`AsyncOracleEngine` for an
    ``AsyncConnectionPool`` / ``AsyncConnection`` (both are ``OracleEngine`` instances). This
    class holds everything colour-free: argument checks, request payloads, reply decoding,
    error translation and the engine's state; the two colour classes hold only the I/O
    (acquire, call, commit/rollback, caller blocks) and are thin twins over
    ``_prepare_*`` (the python-oracledb shape: ``Connection`` / ``AsyncConnection`` over one
    implementation). A method of the other colour raises a ``TypeError`` that names the
    right one. ``tests/unit/test_colour_parity.py`` checks the twins' signatures.

    ``embedding_model`` (keyword-only, optional) names the in-database ONNX model of a
    HYBRID store (sent as ``embedding_model`` on open; ``OracleDBEmbedder.model_name``).
    ``hybrid`` (keyword-only, optional): the :class:`oramem.sqlite.HybridConfig` of HYBRID
    fusion (weights, RRF constant, depth), sent with every HYBRID search; the same
    weighted RRF as the SQLite engine runs in ``oramem_search`` (docs/oracle-search.md).
    ``keyword_language`` (keyword-only, optional): ``"english"`` (English stemming, English
    stopwords dropped from queries) or ``"none"`` (every word as written), a store setting as
    on SQLite: sent on open (``None``: adopt the stored one; a new store gets ``"english"``),
    persisted with the store (it shapes its Oracle Text index), and another one than the
    stored one is a ``StoreSettingsMismatch`` raised by ``oramem_admin.open_store`` before
    anything is written. The one in force (:attr:`keyword_language`) goes with every KEYWORD
    and HYBRID search (docs/oracle-search.md).
    """

    engine_name = "OracleEngine"

    def __new__(cls, connection_or_pool: Any, *args: Any, **kwargs: Any) -> "OracleEngine":
        if cls is OracleEngine:
            kind = _kind(connection_or_pool)
            cls = AsyncOracleEngine if kind in ("async_pool", "async_conn") else SyncOracleEngine
        return super().__new__(cls)

    def __init__(
        self, connection_or_pool: Any, *, embedding_model: Optional[str] = None, hybrid: Any = None,
        keyword_language: Optional[str] = None,
    ) -> None:
        self._hybrid = check_hybrid(hybrid)
        #: the open's request (None = adopt the stored one) and the language in force
        self._requested_language = None if keyword_language is None else check_language(keyword_language)
        self._keyword_language = self._requested_language or DEFAULT_KEYWORD_LANGUAGE
        self._kind = _kind(connection_or_pool)
        if self.is_async != isinstance(self, AsyncOracleEngine):
            right = "AsyncOracleEngine" if self.is_async else "SyncOracleEngine"
            raise TypeError(
                f"{type(self).__name__} was given an {type(connection_or_pool).__name__}; use {right} "
                "(or OracleEngine, which picks the colour from the connection or pool)"
            )
        self._target = connection_or_pool
        if embedding_model is not None:
            from .embedder import validate_model_name

            embedding_model = validate_model_name(embedding_model)
        self._embedding_model = embedding_model
        self._store_id: Optional[str] = None
        self._closed = False
        self._pending_hook: Optional[str] = None
        #: forget()'s erasure of derived data (the knowledge layer registers one)
        self._erasers: dict[Any, Any] = {}
        #: one given connection: calls and blocks take turns on it
        self._conn_lock = threading.RLock()
        self._async_conn_lock: Optional[asyncio.Lock] = None

    # -- plumbing ----------------------------------------------------------------------
    @property
    def is_async(self) -> bool:
        return self._kind in ("async_pool", "async_conn")

    @property
    def source(self) -> Any:
        """The python-oracledb connection or pool this engine was given (layers above
        the store, like the knowledge layer, open their own sessions from it)."""
        return self._target

    @property
    def source_kind(self) -> str:
        """``"pool"``, ``"conn"``, ``"async_pool"`` or ``"async_conn"``."""
        return self._kind

    @property
    def async_only(self) -> bool:  # type: ignore[override]
        """Engine seam: an async source can only be driven by the ``*_async`` methods."""
        return self.is_async

    @property
    def keyword_language(self) -> str:
        """The keyword language in force: the store's, after :meth:`open` (else the requested
        one, or ``"english"``)."""
        return self._keyword_language

    @property
    def memory_store_id(self) -> Optional[str]:
        """The store id in force after :meth:`open` (upper-cased by the database)."""
        return self._store_id

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this OracleEngine is closed; open a new store")

    def _wrong_colour(self, method: str) -> TypeError:
        """The error of a method of the other colour (``method`` is its name); a closed
        engine says it is closed first."""
        self._check_open()
        if method.endswith("_async"):
            base = method[: -len("_async")]
            return TypeError(
                f"OracleEngine.{method}() needs an async pool or connection but the engine was given an "
                f"{type(self._target).__name__}; call {base}() instead, or create the pool with "
                "oracledb.create_pool_async()"
            )
        return TypeError(
            f"OracleEngine.{method}() is synchronous but the engine was given an "
            f"{type(self._target).__name__}; call {method}_async() instead, or pass an "
            "oracledb.ConnectionPool / Connection for synchronous use"
        )

    def _sid(self) -> str:
        if self._store_id is None:
            raise RuntimeError("OracleEngine.open() must be called before any other operation")
        return self._store_id

    @staticmethod
    def _big(binds: Mapping[str, Any], call: PlsqlCall) -> list[str]:
        return [
            n for n, t in call.params
            if t == "CLOB" and isinstance(binds[n], str) and len(binds[n].encode("utf-8")) > _MAX_STRING_BIND
        ]

    def _resolve(self, values: dict[str, Any]) -> dict[str, Any]:
        return {k: (self._sid() if v is _STORE else v) for k, v in values.items()}

    @staticmethod
    def _savepoint(depth: int) -> str:
        return f"oramem_block_{depth}"  # a fixed prefix and a number: no caller text

    @staticmethod
    def _translated(e: BaseException) -> BaseException:
        mapped = translate(e)
        return e if mapped is e else mapped

    def sql_connection(self) -> Any:
        """The python-oracledb connection the current block holds, for layers above the
        store that write their own tables in it (the knowledge layer). Its transaction
        belongs to the block: never commit or roll it back. Outside a block: ``StoreError``."""
        block = self._check_block_thread("sql_connection()")
        if block is None:
            raise StoreError("sql_connection() is only available inside store.transaction()")
        return block.handle.conn

    # -- argument preparation and reply decoding, shared by both colours ----------------
    def _open_args(self, settings: StoreSettings, policy: SchemaPolicy) -> dict[str, Any]:
        if not isinstance(settings, StoreSettings):
            raise TypeError(f"settings must be a StoreSettings, got {type(settings).__name__}")
        policy = SchemaPolicy.coerce(policy, "schema_policy")
        return dict(
            in_settings=settings_json(settings, self._embedding_model, self._requested_language),
            in_policy=policy.value.upper(),
            in_lock_timeout=_LOCK_TIMEOUT_SECONDS,
        )

    def _opened(self, text: Optional[str]) -> StoreSettings:
        obj = _loads(text)
        if not isinstance(obj, dict):
            raise RuntimeError("oramem_admin.open_store returned no settings; check `oramem db status`")
        result = settings_from_json(obj)
        self._store_id = result.memory_store_id
        # the store's persisted language (packages older than store schema version 3 do not
        # report one: the requested one, or english, stays in force)
        language = obj.get("keyword_language")
        if language is not None:
            self._keyword_language = check_language(language)
        return result

    @staticmethod
    def _hook_name(hook: Any) -> str:
        if callable(hook) and not isinstance(hook, str):
            raise TypeError(
                "on Oracle a deletion hook is a PL/SQL procedure, not a Python callable: pass its name, e.g. "
                "register_deletion_hook('APP.ON_ORAMEM_DELETE'), for a procedure taking one IN CLOB "
                "(the DeletionEvent JSON, plsql/README.md) that does not commit"
            )
        if not isinstance(hook, str):
            raise TypeError(f"a deletion hook is a PL/SQL procedure name (str), got {type(hook).__name__}")
        if not _HOOK_NAME.match(hook):
            raise ValueError(
                f"deletion hook {hook!r} is not a [schema.][package.]procedure name of plain identifiers"
            )
        return hook

    def _take_pending_hook(self) -> Optional[_Prepared]:
        """The remembered deletion hook's registration, once the store is open."""
        if self._pending_hook is None or self._store_id is None:
            return None
        hook, self._pending_hook = self._pending_hook, None
        return self._prepare_set_hook(hook)

    @staticmethod
    def _prepare_set_hook(name: str) -> _Prepared:
        return _Prepared("set_deletion_hook", False, dict(in_store_id=_STORE, in_procedure_name=name), _none)

    @staticmethod
    def _count(text: Optional[str]) -> int:
        obj = _loads(text)
        return int(obj["count"]) if obj else 0

    @staticmethod
    def _records(text: Optional[str]) -> list[Record]:
        return [record_from_json(o) for o in (_loads(text) or [])]

    @staticmethod
    def _hits(text: Optional[str]) -> list[tuple[Record, float]]:
        return [(record_from_json(h["record"]), float(h["distance"])) for h in (_loads(text) or [])]

    @staticmethod
    def _check_batch(request: AddRequest) -> None:
        if not isinstance(request, AddRequest):
            raise TypeError(f"request must be an AddRequest, got {type(request).__name__}")
        if isinstance(request.batch_size, bool) or not isinstance(request.batch_size, int) or not (
            1 <= request.batch_size <= 10000
        ):
            raise ValueError(f"batch_size must be an int in 1..10000, got {request.batch_size!r}")
        if request.on_conflict not in ON_CONFLICT:
            raise ValueError(
                f"on_conflict must be one of {', '.join(ON_CONFLICT)}, got {request.on_conflict!r}"
            )

    @staticmethod
    def _check_last_n(last_n: Optional[int]) -> None:
        if last_n is not None and (isinstance(last_n, bool) or not isinstance(last_n, int) or last_n < 1):
            raise ValueError(f"last_n must be None or an int >= 1, got {last_n!r}")

    def _prepare_add(self, request: AddRequest) -> _Prepared:
        self._check_batch(request)
        values = dict(in_store_id=_STORE, in_batch=add_json(request), in_batch_size=request.batch_size)
        return _Prepared("add", True, values, lambda text: list(_loads(text) or []))

    @staticmethod
    def _prepare_update(request: UpdateRequest) -> _Prepared:
        if not isinstance(request, UpdateRequest):
            raise TypeError(f"request must be an UpdateRequest, got {type(request).__name__}")
        return _Prepared("update", True, dict(in_store_id=_STORE, in_request=update_json(request)), int)

    def _prepare_delete(self, record_type: str, record_id: str, cascade: bool) -> _Prepared:
        _check_id(record_type, "record_type"), _check_id(record_id, "record_id")
        values = dict(in_store_id=_STORE, in_record_type=record_type, in_record_id=record_id,
                      in_cascade=1 if cascade else 0)
        return _Prepared("delete", True, values, self._count)

    def _prepare_delete_thread(self, thread_id: str) -> _Prepared:
        _check_id(thread_id, "thread_id")
        return _Prepared("delete_thread", True, dict(in_store_id=_STORE, in_thread_id=thread_id), self._count)

    def _prepare_purge_expired(self) -> _Prepared:
        return _Prepared("purge_expired", True, dict(in_store_id=_STORE, in_commit=0), self._count)

    # -- forget (SC-8.6) ---------------------------------------------------------------
    def register_erasure(self, eraser: Any) -> None:
        """Add what ``forget`` also erases, in its transaction on its connection: an object
        with ``snapshot()`` (taken before the actor's cascade; e.g. row counts) and
        ``erase(event, snapshot)`` returning an :class:`ErasureReport` (rows per table, and
        store records derived from the actor, which ``forget`` deletes too). The knowledge
        layer registers its erasure here on Oracle (``oramem.knowledge.erasure``). An eraser
        with the ``key`` of one registered before replaces it (a new KnowledgeMemory over
        the same store replaces the previous one, as its PL/SQL deletion hook does)."""
        if not (callable(getattr(eraser, "snapshot", None)) and callable(getattr(eraser, "erase", None))):
            raise TypeError("an eraser has snapshot() and erase(event, snapshot) methods")
        self._erasers[getattr(eraser, "key", id(eraser))] = eraser

    def _prepare_forget(self, request: ForgetRequest) -> _Prepared:
        """The actor's SC-8.2 cascade through ``delete_record_json`` (its reply keeps the event)."""
        if not isinstance(request, ForgetRequest):
            raise TypeError(f"request must be a ForgetRequest, got {type(request).__name__}")
        if (request.user_id is None) == (request.agent_id is None):
            raise ValueError("forget erases one actor: pass exactly one of user_id and agent_id")
        profile = "user_profile" if request.user_id is not None else "agent_profile"
        actor = request.user_id if request.user_id is not None else request.agent_id
        _check_id(actor, "user_id" if request.user_id is not None else "agent_id")
        values = dict(in_store_id=_STORE, in_record_type=profile, in_record_id=actor, in_cascade=1)
        return _Prepared("delete", False, values, _loads)

    @staticmethod
    def _prepare_has_knowledge() -> _Prepared:
        return _Prepared("has_knowledge", False, dict(in_store_id=_STORE), int)

    def _no_eraser_error(self) -> StoreError:
        return StoreError(
            f"store {self._store_id!r} has knowledge tables, and nothing erased the actor from them: call "
            "KnowledgeMemory(store, llm=None).forget(...) (or run `oramem forget`); nothing was deleted"
        )

    @staticmethod
    def _forget_event(reply: Any, request: ForgetRequest, store_id: str) -> DeletionEvent:
        event = (reply or {}).get("event") or {}
        return DeletionEvent(
            memory_store_id=store_id,
            records=tuple((str(t), str(i)) for t, i in event.get("records") or ()),
            thread_ids=tuple(event.get("thread_ids") or ()),
            user_ids=tuple(event.get("user_ids") or ()),
            agent_ids=tuple(event.get("agent_ids") or ()),
            reason="forget",
            names=request.names,
        )

    @staticmethod
    def _forget_counts(event: DeletionEvent, reports: builtins.list[ErasureReport], derived: int) -> dict[str, int]:
        # rows per table by table name, as on SQLite: the store's record table OM_<ID>_REC
        # (oramem_registry.object_name); its retrieval rows go by ON DELETE CASCADE, uncounted
        counts = {f"OM_{event.memory_store_id}_REC": len(event.records) + derived}
        for report in reports:
            for table, n in report.tables.items():
                counts[table] = counts.get(table, 0) + int(n)
        return counts

    _SYNC_IN_BLOCK = ("Oracle Text synchronises in an autonomous transaction (oramem_store.sync_search_index), "
                      "which cannot see the block's rows")

    def _prepare_sync_search_index(self, method: str) -> _Prepared:
        self._refuse_in_block(f"{method}()", self._SYNC_IN_BLOCK)
        return _Prepared("sync_search_index", False, dict(in_store_id=_STORE), _none)

    @staticmethod
    def _prepare_get(record_type: str, record_id: str) -> _Prepared:
        _check_id(record_type, "record_type"), _check_id(record_id, "record_id")
        values = dict(in_store_id=_STORE, in_record_type=record_type, in_record_id=record_id)
        return _Prepared("get", False, values, _record_or_none)

    def _prepare_list(self, request: ListRequest) -> _Prepared:
        return _Prepared("list", False, dict(in_store_id=_STORE, in_request=list_json(request)), self._records)

    def _prepare_list_thread_messages(self, thread_id: str, last_n: Optional[int]) -> _Prepared:
        _check_id(thread_id, "thread_id")
        self._check_last_n(last_n)
        values = dict(in_store_id=_STORE, in_thread_id=thread_id, in_last_n=last_n)
        return _Prepared("list_thread_messages", False, values, self._records)

    def _prepare_search(self, request: SearchRequest) -> _Prepared:
        payload = search_json(request, self._hybrid, self._keyword_language)
        return _Prepared("search", False, dict(in_store_id=_STORE, in_request=payload), self._hits)

    # -- lifecycle without I/O (both colours) -------------------------------------------
    def close(self) -> None:
        """Stop using the connection or pool (which stays open: its owner closes it)."""
        self._refuse_in_block("close()", "the block still holds a connection")
        self._closed = True

    async def close_async(self) -> None:
        self._refuse_in_block("close_async()", "the block still holds a connection")
        self._closed = True


    # -- the other colour's methods: each raises the TypeError that names the right one ----
    # (SyncOracleEngine overrides the sync ones, AsyncOracleEngine the *_async ones; both
    # colours' signatures stay visible on OracleEngine for type checkers.)

    def open(self, settings: StoreSettings, policy: SchemaPolicy) -> StoreSettings:
        raise self._wrong_colour("open")

    async def open_async(self, settings: StoreSettings, policy: SchemaPolicy) -> StoreSettings:
        raise self._wrong_colour("open_async")

    def add(self, request: AddRequest) -> builtins.list[str]:
        raise self._wrong_colour("add")

    async def add_async(self, request: AddRequest) -> builtins.list[str]:
        raise self._wrong_colour("add_async")

    def update(self, request: UpdateRequest) -> int:
        raise self._wrong_colour("update")

    async def update_async(self, request: UpdateRequest) -> int:
        raise self._wrong_colour("update_async")

    def delete(self, record_type: str, record_id: str, cascade: bool) -> int:
        raise self._wrong_colour("delete")

    async def delete_async(self, record_type: str, record_id: str, cascade: bool) -> int:
        raise self._wrong_colour("delete_async")

    def delete_thread(self, thread_id: str) -> int:
        raise self._wrong_colour("delete_thread")

    async def delete_thread_async(self, thread_id: str) -> int:
        raise self._wrong_colour("delete_thread_async")

    def purge_expired(self) -> int:
        raise self._wrong_colour("purge_expired")

    async def purge_expired_async(self) -> int:
        raise self._wrong_colour("purge_expired_async")

    def forget(self, request: ForgetRequest) -> dict[str, int]:
        raise self._wrong_colour("forget")

    def sync_search_index(self) -> None:
        raise self._wrong_colour("sync_search_index")

    async def sync_search_index_async(self) -> None:
        raise self._wrong_colour("sync_search_index_async")

    def get(self, record_type: str, record_id: str) -> Optional[Record]:
        raise self._wrong_colour("get")

    async def get_async(self, record_type: str, record_id: str) -> Optional[Record]:
        raise self._wrong_colour("get_async")

    def list(self, request: ListRequest) -> builtins.list[Record]:
        raise self._wrong_colour("list")

    async def list_async(self, request: ListRequest) -> builtins.list[Record]:
        raise self._wrong_colour("list_async")

    def list_thread_messages(self, thread_id: str, last_n: Optional[int]) -> builtins.list[Record]:
        raise self._wrong_colour("list_thread_messages")

    async def list_thread_messages_async(self, thread_id: str, last_n: Optional[int]) -> builtins.list[Record]:
        raise self._wrong_colour("list_thread_messages_async")

    def search(self, request: SearchRequest) -> builtins.list[tuple[Record, float]]:
        raise self._wrong_colour("search")

    async def search_async(self, request: SearchRequest) -> builtins.list[tuple[Record, float]]:
        raise self._wrong_colour("search_async")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        raise self._wrong_colour("transaction")
        yield  # a generator: the error is raised on entering the block

    @contextlib.asynccontextmanager
    async def transaction_async(self) -> AsyncIterator[None]:
        raise self._wrong_colour("transaction_async")
        yield  # an async generator: the error is raised on entering the block

    def register_deletion_hook(self, hook: Any) -> None:
        """Remember the PL/SQL procedure ``hook`` (a name) as the store's deletion hook; it is
        registered by the next call that does I/O (``open`` / ``open_async`` included), before
        that call. :class:`SyncOracleEngine` registers at once when the store is open."""
        self._pending_hook = self._hook_name(hook)

    async def register_deletion_hook_async(self, hook: Any) -> None:
        raise self._wrong_colour("register_deletion_hook_async")

    async def forget_async(self, request: Any) -> dict[str, int]:
        raise self._wrong_colour("forget_async")


def _none(_reply: Any) -> None:
    return None


def _record_or_none(text: Any) -> Optional[Record]:
    obj = _loads(text)
    return record_from_json(obj) if obj else None


class SyncOracleEngine(OracleEngine):
    """The synchronous colour: an ``oracledb.ConnectionPool`` (a connection acquired per
    call) or one ``oracledb.Connection`` (calls take turns on it). Each method checks and
    prepares through :class:`OracleEngine` and runs the one PL/SQL call here."""

    # -- I/O -----------------------------------------------------------------------------
    def _call_on(self, conn: Any, call: PlsqlCall, binds: dict[str, Any]) -> Any:
        # Big text goes as a temporary CLOB, as on the async path. Not setinputsizes(name=...):
        # callfunc/callproc turn keyword_parameters into positional binds, and named input
        # sizes with positional binds is DPY-2006 (python-oracledb cursor.py
        # _call_get_execute_args, impl/base/cursor.pyx setinputsizes; review F1).
        for n in self._big(binds, call):
            binds[n] = conn.createlob(oracledb.DB_TYPE_CLOB, binds[n])
        with conn.cursor() as cur:
            if call.is_function:
                assert call.returns is not None  # a function's return type is in the call table
                result = cur.callfunc(call.qualified_name, _RETURN_TYPES[call.returns], keyword_parameters=binds)
            else:
                cur.callproc(call.qualified_name, keyword_parameters=binds)
                result = None
            if isinstance(result, oracledb.LOB):
                result = result.read()
            return result

    def _run(self, op: str, commit: bool, **values: Any) -> Any:
        self._check_open()
        block = self._check_block_thread(f"{op}()")
        call = CALLS[op]
        binds = call.bind(**self._resolve(values))
        if block is not None:  # the block commits
            return self._run_on(block.handle.conn, call, binds, False)
        if self._kind == "pool":
            with self._target.acquire() as conn:
                return self._run_on(conn, call, binds, commit)
        with self._conn_lock:
            return self._run_on(self._target, call, binds, commit)

    def _run_on(self, conn: Any, call: PlsqlCall, binds: dict[str, Any], commit: bool) -> Any:
        try:
            result = self._call_on(conn, call, binds)
            if commit:
                conn.commit()
            return result
        except oracledb.DatabaseError as e:
            if commit:
                try:
                    conn.rollback()
                except oracledb.Error:
                    pass
            mapped = translate(e)
            if mapped is e:
                raise
            raise mapped from e

    def _do(self, prepared: _Prepared) -> Any:
        return prepared.decode(self._run(prepared.op, prepared.commit, **prepared.values))

    # -- caller blocks (SC-12) ---------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """SC-12: see the module docstring. Static-checked, not run against Oracle."""
        self._check_open()
        outer = self._check_block_thread("store.transaction()")
        if outer is not None:
            held = outer.handle
            name = self._savepoint(held.depth)
            with held.conn.cursor() as cur:
                cur.execute(f"SAVEPOINT {name}")
            held.depth += 1
            try:
                yield
            except BaseException:
                with held.conn.cursor() as cur:
                    cur.execute(f"ROLLBACK TO SAVEPOINT {name}")
                raise
            finally:
                held.depth -= 1
            return
        with contextlib.ExitStack() as stack:
            if self._kind == "pool":
                # leaving acquire()'s context releases the connection (rolling back what
                # is uncommitted: python-oracledb connection.py Connection.__exit__)
                conn = stack.enter_context(self._target.acquire())
            else:
                stack.enter_context(self._conn_lock)
                conn = self._target
            with self._entered(Block(self, threading.get_ident(), handle=_Held(conn))):
                try:
                    yield
                except BaseException:
                    self._rollback_block(conn)
                    raise
                try:
                    conn.commit()
                except oracledb.DatabaseError as e:
                    self._rollback_block(conn)
                    raise self._translated(e) from e

    @staticmethod
    def _rollback_block(conn: Any) -> None:
        try:
            conn.rollback()
        except oracledb.Error:  # the original error propagates; a pooled connection is released rolled back
            log.exception("oramem: rolling back a store.transaction() block failed")

    # -- lifecycle -----------------------------------------------------------------------
    def open(self, settings: StoreSettings, policy: SchemaPolicy) -> StoreSettings:
        self._check_open()
        result = self._opened(self._run("open", False, **self._open_args(settings, policy)))
        hook = self._take_pending_hook()
        if hook is not None:
            self._do(hook)
        return result

    def register_deletion_hook(self, hook: Any) -> None:
        """Register the PL/SQL procedure ``hook`` (a name) as the store's deletion hook: at
        once when the store is open, else remembered and registered by :meth:`open`."""
        name = self._hook_name(hook)
        if self._store_id is None:
            self._pending_hook = name
            return
        self._refuse_in_block("register_deletion_hook()", "registration is not transactional")
        self._do(self._prepare_set_hook(name))

    # -- writes --------------------------------------------------------------------------
    def add(self, request: AddRequest) -> list[str]:
        return cast("list[str]", self._do(self._prepare_add(request)))

    def update(self, request: UpdateRequest) -> int:
        return cast(int, self._do(self._prepare_update(request)))

    def delete(self, record_type: str, record_id: str, cascade: bool) -> int:
        return cast(int, self._do(self._prepare_delete(record_type, record_id, cascade)))

    def delete_thread(self, thread_id: str) -> int:
        return cast(int, self._do(self._prepare_delete_thread(thread_id)))

    def purge_expired(self) -> int:
        return cast(int, self._do(self._prepare_purge_expired()))

    def forget(self, request: ForgetRequest) -> dict[str, int]:
        """SC-8.6 in one transaction: the actor's cascade (``delete_record_json``, whose
        PL/SQL deletion hook runs as for any cascade), every registered eraser, and the
        store records the erasers name. With knowledge tables and no eraser it refuses
        before anything is deleted. Static-checked, not run against Oracle."""
        self._refuse_in_block("forget()", "an erasure is one transaction of its own")
        cascade = self._prepare_forget(request)
        with self.transaction():
            if not self._erasers and self._do(self._prepare_has_knowledge()):
                raise self._no_eraser_error()
            erasers = list(self._erasers.values())
            snapshots = [e.snapshot() for e in erasers]
            event = self._forget_event(self._do(cascade), request, str(self._store_id))
            reports = [r for r in (e.erase(event, snap) for e, snap in zip(erasers, snapshots))
                       if isinstance(r, ErasureReport)]
            keys = sorted({key for r in reports for key in r.records})
            for rtype, rid in keys:
                self._do(self._prepare_delete(rtype, rid, False))
        return self._forget_counts(event, reports, len(keys))

    def sync_search_index(self) -> None:
        self._do(self._prepare_sync_search_index("sync_search_index"))

    # -- reads ---------------------------------------------------------------------------
    def get(self, record_type: str, record_id: str) -> Optional[Record]:
        return cast(Optional[Record], self._do(self._prepare_get(record_type, record_id)))

    def list(self, request: ListRequest) -> list[Record]:
        return cast("list[Record]", self._do(self._prepare_list(request)))

    def list_thread_messages(self, thread_id: str, last_n: Optional[int]) -> builtins.list[Record]:
        return cast("builtins.list[Record]", self._do(self._prepare_list_thread_messages(thread_id, last_n)))

    def search(self, request: SearchRequest) -> builtins.list[tuple[Record, float]]:
        return cast("builtins.list[tuple[Record, float]]", self._do(self._prepare_search(request)))


class AsyncOracleEngine(OracleEngine):
    """The asynchronous colour: an ``oracledb.AsyncConnectionPool`` or one
    ``oracledb.AsyncConnection``, python-oracledb's native asyncio (thin mode), never
    threads. The twin of :class:`SyncOracleEngine` over the same ``_prepare_*`` methods."""

    # -- I/O -----------------------------------------------------------------------------
    async def _call_on_async(self, conn: Any, call: PlsqlCall, binds: dict[str, Any]) -> Any:
        for n in self._big(binds, call):  # AsyncCursor: bind big text as a temporary CLOB
            binds[n] = await conn.createlob(oracledb.DB_TYPE_CLOB, binds[n])
        with conn.cursor() as cur:
            if call.is_function:
                assert call.returns is not None  # a function's return type is in the call table
                rtype = _RETURN_TYPES[call.returns]
                result = await cur.callfunc(call.qualified_name, rtype, keyword_parameters=binds)
            else:
                await cur.callproc(call.qualified_name, keyword_parameters=binds)
                result = None
            if isinstance(result, oracledb.AsyncLOB):
                result = await result.read()
            return result

    async def _run_async(self, op: str, commit: bool, **values: Any) -> Any:
        self._check_open()
        if op not in ("open", "set_deletion_hook"):
            hook = self._take_pending_hook()
            if hook is not None:
                await self._do(hook)
        block = self._check_block_thread(f"{op}_async()")
        call = CALLS[op]
        binds = call.bind(**self._resolve(values))
        if block is not None:  # the block commits; its tasks take turns on its connection
            async with block.handle.lock:
                return await self._run_on_async(block.handle.conn, call, binds, False)
        if self._kind == "async_pool":
            async with self._target.acquire() as conn:
                return await self._run_on_async(conn, call, binds, commit)
        async with self._conn_lock_async():
            return await self._run_on_async(self._target, call, binds, commit)

    async def _run_on_async(self, conn: Any, call: PlsqlCall, binds: dict[str, Any], commit: bool) -> Any:
        try:
            result = await self._call_on_async(conn, call, binds)
            if commit:
                await conn.commit()
            return result
        except oracledb.DatabaseError as e:
            if commit:
                try:
                    await conn.rollback()
                except oracledb.Error:
                    pass
            mapped = translate(e)
            if mapped is e:
                raise
            raise mapped from e

    def _conn_lock_async(self) -> asyncio.Lock:
        if self._async_conn_lock is None:
            self._async_conn_lock = asyncio.Lock()
        return self._async_conn_lock

    async def _do(self, prepared: _Prepared) -> Any:
        return prepared.decode(await self._run_async(prepared.op, prepared.commit, **prepared.values))

    # -- caller blocks (SC-12) ---------------------------------------------------------
    @contextlib.asynccontextmanager
    async def transaction_async(self) -> AsyncIterator[None]:
        """Async twin of :meth:`SyncOracleEngine.transaction` (python-oracledb's native asyncio)."""
        self._check_open()
        outer = self._check_block_thread("store.transaction_async()")
        if outer is not None:
            held = outer.handle
            name = self._savepoint(held.depth)
            async with held.lock:
                with held.conn.cursor() as cur:
                    await cur.execute(f"SAVEPOINT {name}")
            held.depth += 1
            try:
                yield
            except BaseException:
                async with held.lock:
                    with held.conn.cursor() as cur:
                        await cur.execute(f"ROLLBACK TO SAVEPOINT {name}")
                raise
            finally:
                held.depth -= 1
            return
        async with contextlib.AsyncExitStack() as stack:
            if self._kind == "async_pool":
                conn = await stack.enter_async_context(self._target.acquire())
            else:
                await stack.enter_async_context(self._conn_lock_async())
                conn = self._target
            with self._entered(Block(self, threading.get_ident(), handle=_Held(conn, asyncio.Lock()))):
                try:
                    yield
                except BaseException:
                    await self._rollback_block_async(conn)
                    raise
                try:
                    await conn.commit()
                except oracledb.DatabaseError as e:
                    await self._rollback_block_async(conn)
                    raise self._translated(e) from e

    @staticmethod
    async def _rollback_block_async(conn: Any) -> None:
        try:
            await conn.rollback()
        except oracledb.Error:
            log.exception("oramem: rolling back a store.transaction_async() block failed")

    # -- lifecycle -----------------------------------------------------------------------
    async def open_async(self, settings: StoreSettings, policy: SchemaPolicy) -> StoreSettings:
        self._check_open()
        result = self._opened(await self._run_async("open", False, **self._open_args(settings, policy)))
        hook = self._take_pending_hook()
        if hook is not None:
            await self._do(hook)
        return result

    async def register_deletion_hook_async(self, hook: Any) -> None:
        """Register the PL/SQL procedure ``hook`` (a name) as the store's deletion hook: at
        once when the store is open, else remembered and registered by :meth:`open_async`."""
        name = self._hook_name(hook)
        if self._store_id is None:
            self._pending_hook = name
            return
        self._refuse_in_block("register_deletion_hook_async()", "registration is not transactional")
        await self._do(self._prepare_set_hook(name))

    # -- writes --------------------------------------------------------------------------
    async def add_async(self, request: AddRequest) -> builtins.list[str]:
        return cast("builtins.list[str]", await self._do(self._prepare_add(request)))

    async def update_async(self, request: UpdateRequest) -> int:
        return cast(int, await self._do(self._prepare_update(request)))

    async def delete_async(self, record_type: str, record_id: str, cascade: bool) -> int:
        return cast(int, await self._do(self._prepare_delete(record_type, record_id, cascade)))

    async def delete_thread_async(self, thread_id: str) -> int:
        return cast(int, await self._do(self._prepare_delete_thread(thread_id)))

    async def purge_expired_async(self) -> int:
        return cast(int, await self._do(self._prepare_purge_expired()))

    async def sync_search_index_async(self) -> None:
        await self._do(self._prepare_sync_search_index("sync_search_index_async"))

    async def forget_async(self, request: Any) -> dict[str, int]:
        # The knowledge layer's erasure runs on Oracle through SQLAlchemy, which needs a
        # synchronous connection (KnowledgeMemory refuses an async pool): refused before any call.
        raise CapabilityError(
            "forget_async on an asynchronous Oracle pool is not supported in this version: open the store with a "
            "synchronous pool (oracledb.create_pool) and call forget(), or forget_async() through KnowledgeMemory there"
        )

    # -- reads ---------------------------------------------------------------------------
    async def get_async(self, record_type: str, record_id: str) -> Optional[Record]:
        return cast(Optional[Record], await self._do(self._prepare_get(record_type, record_id)))

    async def list_async(self, request: ListRequest) -> builtins.list[Record]:
        return cast("builtins.list[Record]", await self._do(self._prepare_list(request)))

    async def list_thread_messages_async(self, thread_id: str, last_n: Optional[int]) -> builtins.list[Record]:
        return cast("builtins.list[Record]",
                    await self._do(self._prepare_list_thread_messages(thread_id, last_n)))

    async def search_async(self, request: SearchRequest) -> builtins.list[tuple[Record, float]]:
        return cast("builtins.list[tuple[Record, float]]", await self._do(self._prepare_search(request)))
