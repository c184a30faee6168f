"""The colour-free half of the Oracle engine: :class:`OracleEngine`.

Everything both colours share is written once here: the table of PL/SQL calls
(:data:`CALLS`), argument checks, request payloads (through :mod:`oramem.oracle.codec`),
reply decoding, error translation and the engine's state. Each operation is a
``_prepare_*`` method returning a :class:`_Prepared` call, typed by its result; a colour
class runs it: :class:`~oramem.oracle.sync_engine.SyncOracleEngine` (``oracledb.create_pool``
/ ``oracledb.connect``) and :class:`~oramem.oracle.async_engine.AsyncOracleEngine`
(``oracledb.create_pool_async`` / ``oracledb.connect_async``). As in python-oracledb
(``Connection`` / ``AsyncConnection`` over one implementation), the caller picks the colour by
the constructor it calls; the argument is only checked, never used to choose.

``OracleEngine`` itself holds no I/O and cannot be instantiated: ``OracleEngine(pool)`` is a
``TypeError`` naming the two colour classes. Static-checked, not run against Oracle.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import dataclasses
import logging
import re
import threading
from typing import Any, Callable, ClassVar, Generic, Mapping, Optional, TypeVar

import oracledb

from ..chunking import keyword_row_chars
from ..engine import Engine
from ..embedders.identity import MOVE_ORACLE, mismatch_message, same_identity
from ..errors import StoreClosed, StoreError, StoreSettingsMismatch
from ..requests import (
    AddRequest,
    DeletionEvent,
    ErasureReport,
    ForgetRequest,
    ListRequest,
    SearchRequest,
    StoreSettings,
    UpdateRequest,
    ON_CONFLICT,
)
from ..sqlite.keyword import DEFAULT_KEYWORD_LANGUAGE, check_language
from ..types import Record, SchemaPolicy, SearchStrategy
from .calls import PlsqlCall, REEMBED_CALLS
from .codec import (
    _loads,
    _none,
    _record_or_none,
    add_json,
    check_hybrid,
    list_json,
    record_from_json,
    search_json,
    settings_from_json,
    settings_json,
    update_json,
)
from .errors import translate

__all__ = ["OracleEngine", "ALL_CALLS", "CALLS"]

_V, _C, _I = "VARCHAR2", "CLOB", "PLS_INTEGER"
T = TypeVar("T")

#: Every PL/SQL call the driver makes, by operation (checked against plsql/*.pks).
CALLS: dict[str, PlsqlCall] = {
    "open": PlsqlCall("oramem_admin", "open_store",
                      (("in_settings", _C), ("in_policy", _V), ("in_lock_timeout", _I)), _C),
    # read-only: the recorded embedder after open_store refused a setting (issue 28)
    "describe": PlsqlCall("oramem_admin", "describe_store", (("in_store_id", _V),), _C),
    "set_deletion_hook": PlsqlCall("oramem_admin", "set_deletion_hook",
                                   (("in_store_id", _V), ("in_procedure_name", _V))),
    "add": PlsqlCall("oramem_store", "add_json",
                     (("in_store_id", _V), ("in_batch", _C), ("in_batch_size", _I)), _C),
    # in_lock 1 inside a caller's block (SC-12.10: the row stays locked until the block ends)
    "get": PlsqlCall("oramem_store", "get_json",
                     (("in_store_id", _V), ("in_record_type", _V), ("in_record_id", _V), ("in_lock", _I)), _C),
    "list": PlsqlCall("oramem_store", "list_json", (("in_store_id", _V), ("in_request", _C)), _C),
    "list_thread_messages": PlsqlCall("oramem_store", "list_thread_messages_json",
                                      (("in_store_id", _V), ("in_thread_id", _V), ("in_last_n", _I)), _C),
    "update": PlsqlCall("oramem_store", "update_json", (("in_store_id", _V), ("in_request", _C)), _I),
    "delete": PlsqlCall("oramem_store", "delete_record_json",
                        (("in_store_id", _V), ("in_record_type", _V), ("in_record_id", _V),
                         ("in_cascade", _I)), _C),
    # N4: the cascade of an erasure (the hook's event says reason "forget" and has the names;
    # a profile cascade with an eraser passes in_reason 'erase'), and the records the erasers
    # name, in one statement without the hook
    "profile_cascade": PlsqlCall("oramem_store", "delete_record_json",
                                (("in_store_id", _V), ("in_record_type", _V), ("in_record_id", _V),
                                 ("in_cascade", _I), ("in_reason", _V), ("in_names", _C)), _C),
    "delete_keys": PlsqlCall("oramem_store", "delete_keys_json", (("in_store_id", _V), ("in_keys", _C)), _C),
    "delete_thread": PlsqlCall("oramem_store", "delete_thread_json",
                               (("in_store_id", _V), ("in_thread_id", _V)), _C),
    "purge_expired": PlsqlCall("oramem_store", "purge_expired_json",
                               (("in_store_id", _V), ("in_commit", _I)), _C),
    "sync_search_index": PlsqlCall("oramem_store", "sync_search_index", (("in_store_id", _V),)),
    "search": PlsqlCall("oramem_search", "search_json", (("in_store_id", _V), ("in_request", _C)), _C),
    "has_knowledge": PlsqlCall("oramem_kg_jobs", "has_knowledge", (("in_store_id", _V),), _I),
    "get_options": PlsqlCall("oramem_admin", "get_options_json", (("in_store_id", _V),), _C),
    "set_option": PlsqlCall("oramem_admin", "set_option", (("in_store_id", _V), ("in_name", _V), ("in_value", _C))),
    # SC-14: the erasure log (a receipt per forget, salted hashes only) and the verification scan
    "log_erasure": PlsqlCall("oramem_admin", "log_erasure", (("in_store_id", _V), ("in_receipt", _C))),
    "erasure_log": PlsqlCall("oramem_admin", "get_erasure_log_json", (("in_store_id", _V),), _C),
    "erasure_scan": PlsqlCall("oramem_admin", "erasure_scan_json", (("in_store_id", _V), ("in_tokens", _C)), _C),
    # rek47: a layer's own vectors (a KnowledgeMemory's embedder) against the recorded identity,
    # for its writes and reads of knowledge-table vectors that no store call carries
    "check_embedder": PlsqlCall("oramem_admin", "check_embedder",
                                (("in_store_id", _V), ("in_identity", _C), ("in_what", _V))),
}

#: oramem_errors.gc_embedder_mismatch (-20108): ``open_store`` refused the caller's embedder
EMBEDDER_MISMATCH = 20108

#: Flat tuple for the static gate (tests/plsql) and the DBA tooling.
ALL_CALLS: tuple[PlsqlCall, ...] = tuple(CALLS.values()) + tuple(REEMBED_CALLS.values())

_RETURN_TYPES = {"CLOB": oracledb.DB_TYPE_CLOB, "PLS_INTEGER": int, "NUMBER": int, "VARCHAR2": str}
#: PL/SQL string binds are limited to 32767 bytes (ORACLE_NOTES 11.2); bigger CLOB
#: arguments are bound as CLOBs.
_MAX_STRING_BIND = 32767
_LOCK_TIMEOUT_SECONDS = 60
#: stands for "the opened store's id" in call arguments; resolved after the colour check
_STORE: Any = type("_OpenedStore", (), {"__repr__": lambda self: "<opened store id>"})()
log = logging.getLogger("oramem.oracle")
_HOOK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_$#]{0,127}(\.[A-Za-z][A-Za-z0-9_$#]{0,127}){0,2}$")


#: the python-oracledb classes of each colour, and what ``source_kind`` calls them
SYNC_SOURCES: tuple[tuple[type, str], ...] = ((oracledb.ConnectionPool, "pool"), (oracledb.Connection, "conn"))
ASYNC_SOURCES: tuple[tuple[type, str], ...] = (
    (oracledb.AsyncConnectionPool, "async_pool"), (oracledb.AsyncConnection, "async_conn"),
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
class _Prepared(Generic[T]):
    """One operation, ready to run: the :data:`CALLS` entry, whether it commits, its
    argument values (``_STORE`` resolved at run time) and how the reply becomes the result
    (of type ``T``). Built once by the shared ``OracleEngine._prepare_*`` methods; each
    colour class only runs it (``SyncOracleEngine._do`` / ``AsyncOracleEngine._do``)."""

    op: str
    commit: bool
    values: dict[str, Any]
    decode: Callable[[Any], T]


class OracleEngine(Engine):
    """Persistence for one store in Oracle AI Database through the oramem packages: the
    colour-free base of :class:`~oramem.oracle.sync_engine.SyncOracleEngine` and
    :class:`~oramem.oracle.async_engine.AsyncOracleEngine` (pick one by its constructor,
    as with ``oracledb.connect`` / ``connect_async``; ``OracleEngine(...)`` is a
    ``TypeError`` naming them).

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
    #: the python-oracledb classes this colour accepts (set by each colour class)
    _SOURCES: ClassVar[tuple[tuple[type, str], ...]] = ()
    #: the other colour's classes and the engine class that takes them (for the error)
    _OTHER_SOURCES: ClassVar[tuple[tuple[type, str], ...]] = ()
    _OTHER_ENGINE: ClassVar[str] = ""
    _FACTORIES: ClassVar[str] = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> "OracleEngine":
        if not cls._SOURCES:
            raise TypeError(
                f"{cls.__name__} is the colour-free base of the Oracle engine and cannot be instantiated: "
                "pick the colour by the constructor, as python-oracledb does: SyncOracleEngine(pool) for a pool "
                "or connection from oracledb.create_pool() / oracledb.connect(), AsyncOracleEngine(pool) for "
                "one from oracledb.create_pool_async() / oracledb.connect_async() (both in oramem.oracle)"
            )
        return super().__new__(cls)

    def __init__(
        self, connection_or_pool: Any, *, embedding_model: Optional[str] = None, hybrid: Any = None,
        keyword_language: Optional[str] = None,
    ) -> None:
        self._kind = self._accept(connection_or_pool)
        self._hybrid = check_hybrid(hybrid)
        #: the open's request (None = adopt the stored one) and the language in force
        self._requested_language = None if keyword_language is None else check_language(keyword_language)
        self._keyword_language = self._requested_language or DEFAULT_KEYWORD_LANGUAGE
        self._target = connection_or_pool
        if embedding_model is not None:
            from .embedder import validate_model_name

            embedding_model = validate_model_name(embedding_model)
        self._embedding_model = embedding_model
        #: the embedder identity the last open asked for (issue 28; None: no embedder)
        self._requested_embedder: Optional[dict[str, Any]] = None
        self._store_id: Optional[str] = None
        #: the open store's keyword passages (issue 23): a HYBRID store whose recorded chunk
        #: policy counts tokens groups its rows by this many characters (None: it does not)
        self._keyword_group: Optional[int] = None
        self._closed = False
        self._pending_hook: Optional[str] = None
        #: forget()'s erasure of derived data (the knowledge layer registers one)
        self._erasers: dict[Any, Any] = {}
        #: one given connection: calls and blocks take turns on it
        self._conn_lock = threading.RLock()
        self._async_conn_lock: Optional[asyncio.Lock] = None

    @classmethod
    def _accept(cls, target: Any) -> str:
        """The source kind of ``target`` if this colour takes it, else a ``TypeError`` that
        names the engine class (and python-oracledb factories) that does."""
        for source_cls, kind in cls._SOURCES:
            if isinstance(target, source_cls):
                return kind
        if any(isinstance(target, source_cls) for source_cls, _ in cls._OTHER_SOURCES):
            raise TypeError(
                f"{cls.__name__} was given an {type(target).__name__}, python-oracledb's other colour: use "
                f"{cls._OTHER_ENGINE} for it, or give {cls.__name__} a pool or connection from {cls._FACTORIES}"
            )
        raise TypeError(
            f"{cls.__name__} needs a python-oracledb connection or pool (from {cls._FACTORIES}), "
            f"got {type(target).__name__}"
        )

    # -- plumbing ----------------------------------------------------------------------
    @property
    def is_async(self) -> bool:
        """True for the async colour (:class:`~oramem.oracle.async_engine.AsyncOracleEngine`)."""
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
            raise StoreClosed("this OracleEngine is closed; open a new store")

    def _wrong_colour(self, method: str) -> TypeError:
        """The error of a method of the other colour (``method`` is its name); a closed
        engine says it is closed first."""
        self._check_open()
        if method.endswith("_async"):
            base = method[: -len("_async")]
            return TypeError(
                f"{type(self).__name__}.{method}() needs an async pool or connection but the engine was given an "
                f"{type(self._target).__name__}; call {base}() instead, or create the pool with "
                "oracledb.create_pool_async() and use AsyncOracleEngine"
            )
        return TypeError(
            f"{type(self).__name__}.{method}() is synchronous but the engine was given an "
            f"{type(self._target).__name__}; call {method}_async() instead, or pass an "
            "oracledb.ConnectionPool / Connection to SyncOracleEngine for synchronous use"
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
        # D8: only a HYBRID store uses an in-database model (its vectorizer); the packages
        # take a model of their own schema (USER_MINING_MODELS), so an OWNER.MODEL name is
        # refused here, before any call, instead of failing every store with -20011.
        model = None
        if SearchStrategy.coerce(settings.search_strategy, "search_strategy") is SearchStrategy.HYBRID:
            model = self._embedding_model
            if model is not None and "." in model:
                raise ValueError(
                    f"embedding model {model!r}: a HYBRID store's model must be loaded in the schema that owns "
                    "the oramem packages; load it there (DBMS_VECTOR.LOAD_ONNX_MODEL) and pass its name without "
                    "the schema. VECTOR and KEYWORD stores can embed with OracleDBEmbedder('OWNER.MODEL')"
                )
        self._requested_embedder = settings.embedder  # compared with the one the store reports
        return dict(
            in_settings=settings_json(settings, model, self._requested_language),
            in_policy=policy.value.upper(),
            in_lock_timeout=_LOCK_TIMEOUT_SECONDS,
        )

    def _opened(self, text: Optional[str]) -> StoreSettings:
        obj = _loads(text)
        if not isinstance(obj, dict):
            raise RuntimeError("oramem_admin.open_store returned no settings; check `oramem db status`")
        result = settings_from_json(obj)
        # oramem_admin.open_store refuses another embedder itself (-20108, before anything is
        # written); this is the same rule on what it reports, so a package that compared
        # nothing (or a concurrent first adoption) cannot leave a store open with another one
        refusal = self._embedder_refusal(result.memory_store_id, result.embedder)
        if refusal is not None:
            raise refusal
        self._store_id = result.memory_store_id
        # the rule oramem_registry.find_store applies to the same recorded identity (column
        # keyword_passages): a HYBRID store whose recorded chunk policy counts tokens
        self._keyword_group = (keyword_row_chars(result.embedder)
                               if result.search_strategy is SearchStrategy.HYBRID else None)
        # the store's persisted language (packages older than store schema version 3 do not
        # report one: the requested one, or english, stays in force)
        language = obj.get("keyword_language")
        if language is not None:
            self._keyword_language = check_language(language)
        return result

    def _embedder_refusal(self, store_id: str, recorded: Any) -> Optional[StoreSettingsMismatch]:
        """The ``StoreSettingsMismatch`` of this open when the store records another embedder
        than the one asked for (the SQLite engine's message, with Oracle's way to move a
        store), else None."""
        requested = self._requested_embedder
        if requested is None or not isinstance(recorded, dict) or same_identity(recorded, requested):
            return None
        return StoreSettingsMismatch(mismatch_message(store_id, recorded, requested, MOVE_ORACLE))

    def _refused_open(self, store_id: str, described: Optional[str]) -> Optional[StoreSettingsMismatch]:
        """After ``open_store`` refused the embedder (-20108, :data:`EMBEDDER_MISMATCH`): the
        message the SQLite engine gives (``describe_store``'s reply names the recorded
        identity), or None when the reply does not show another one (the package's own
        message then stands)."""
        obj = _loads(described)
        return self._embedder_refusal(store_id, obj.get("embedder") if isinstance(obj, dict) else None)

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

    def _take_pending_hook(self) -> Optional[_Prepared[None]]:
        """The remembered deletion hook's registration, once the store is open."""
        if self._pending_hook is None or self._store_id is None:
            return None
        hook, self._pending_hook = self._pending_hook, None
        return self._prepare_set_hook(hook)

    @staticmethod
    def _prepare_set_hook(name: str) -> _Prepared[None]:
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

    def _prepare_add(self, request: AddRequest) -> _Prepared[builtins.list[str]]:
        self._check_batch(request)
        values = dict(in_store_id=_STORE, in_batch=add_json(request, self._keyword_group, self._requested_embedder),
                      in_batch_size=request.batch_size)
        return _Prepared("add", True, values, lambda text: list(_loads(text) or []))

    def _prepare_update(self, request: UpdateRequest) -> _Prepared[int]:
        if not isinstance(request, UpdateRequest):
            raise TypeError(f"request must be an UpdateRequest, got {type(request).__name__}")
        return _Prepared("update", True,
                         dict(in_store_id=_STORE, in_request=update_json(request, self._keyword_group,
                                                                           self._requested_embedder)), int)

    def _prepare_delete(self, record_type: str, record_id: str, cascade: bool) -> _Prepared[int]:
        _check_id(record_type, "record_type"), _check_id(record_id, "record_id")
        values = dict(in_store_id=_STORE, in_record_type=record_type, in_record_id=record_id,
                      in_cascade=1 if cascade else 0)
        return _Prepared("delete", True, values, self._count)

    @staticmethod
    def _prepare_profile_cascade(profile: str, actor: str, reason: Optional[str], names: Optional[str], *,
                                 commit: bool) -> _Prepared[Any]:
        """``delete_record_json`` of a profile with ``in_cascade = 1`` and ``in_reason``
        (``'forget'``; ``'erase'``: a profile cascade whose knowledge rows the registered
        erasers erase next in its transaction, the knowledge hook leaving them the rows as for
        a forget; ``None``: a plain cascade, its PL/SQL hook erasing them), its whole reply
        kept: ``count`` and the deletion ``event`` (:meth:`_reply_event`)."""
        values = dict(in_store_id=_STORE, in_record_type=profile, in_record_id=actor, in_cascade=1,
                      in_reason=reason, in_names=names)
        return _Prepared("profile_cascade", commit, values, _loads)

    def _prepare_delete_thread(self, thread_id: str) -> _Prepared[int]:
        _check_id(thread_id, "thread_id")
        return _Prepared("delete_thread", True, dict(in_store_id=_STORE, in_thread_id=thread_id), self._count)

    def _prepare_check_vectors_of(self, identity: Mapping[str, Any], what: str) -> _Prepared[None]:
        """``oramem_admin.check_embedder`` (:meth:`Engine.check_vectors_of`, rek47): -20108,
        ``StoreSettingsMismatch``, when the store records another embedder than ``identity``.
        Commits nothing; inside a block it runs on the block's connection."""
        if not isinstance(identity, Mapping) or not isinstance(identity.get("kind"), str):
            raise TypeError("identity must be an embedder identity (a dict with a 'kind' string)")
        if not isinstance(what, str) or not what:
            raise TypeError("what must say what did not happen, e.g. 'nothing was written'")
        values = dict(in_store_id=_STORE, in_identity=json.dumps(dict(identity), sort_keys=True), in_what=what)
        return _Prepared("check_embedder", False, values, lambda _: None)

    def _prepare_purge_expired(self) -> _Prepared[int]:
        return _Prepared("purge_expired", True, dict(in_store_id=_STORE, in_commit=0), self._count)

    def sql_access(self, store: Any, configure: Optional[Callable[[Any], Any]] = None) -> Any:
        from .sql_access import OracleAccess

        return OracleAccess(store, configure=configure)

    # -- forget (SC-8.6) ---------------------------------------------------------------
    def register_erasure(self, eraser: Any) -> None:
        """Add what ``forget`` also erases, in its transaction on its connection: an object
        with ``snapshot()`` (taken before the actor's cascade; e.g. row counts) and
        ``erase(event, snapshot)`` returning an :class:`ErasureReport` (rows per table, and
        store records derived from the actor, which ``forget`` deletes too). The knowledge
        layer registers its erasure here on Oracle (``oramem.knowledge.deletes``). An optional
        ``erase_cascade(event)`` also runs in a user's profile cascade, after its PL/SQL hook
        (SC-13.3: the cascade erases her as ``forget`` does). An optional ``lock()`` runs
        first in both transactions, before the cascade deletes anything (the lock order of
        an erasure on Oracle: ``SyncOracleEngine._lock_erasers``). An eraser
        with the ``key`` of one registered before replaces it (a new KnowledgeMemory over
        the same store replaces the previous one, as its PL/SQL deletion hook does)."""
        if not (callable(getattr(eraser, "snapshot", None)) and callable(getattr(eraser, "erase", None))):
            raise TypeError("an eraser has snapshot() and erase(event, snapshot) methods")
        self._erasers[getattr(eraser, "key", id(eraser))] = eraser

    def _prepare_forget(self, request: ForgetRequest) -> _Prepared[Any]:
        """The actor's SC-8.2 cascade through ``delete_record_json`` (its reply keeps the event)."""
        if not isinstance(request, ForgetRequest):
            raise TypeError(f"request must be a ForgetRequest, got {type(request).__name__}")
        if (request.user_id is None) == (request.agent_id is None):
            raise ValueError("forget erases one actor: pass exactly one of user_id and agent_id")
        profile = "user_profile" if request.user_id is not None else "agent_profile"
        actor = request.user_id if request.user_id is not None else request.agent_id
        _check_id(actor, "user_id" if request.user_id is not None else "agent_id")
        names = None if request.names is None else json.dumps(list(request.names))
        return self._prepare_profile_cascade(profile, str(actor), "forget", names, commit=False)

    @staticmethod
    def _prepare_delete_keys(keys: builtins.list[tuple[str, str]]) -> _Prepared[int]:
        """N4: the records the erasers named, one call, no deletion hook (SQLite delete_keys)."""
        return _Prepared("delete_keys", False, dict(in_store_id=_STORE, in_keys=json.dumps([list(k) for k in keys])),
                         lambda reply: int((_loads(reply) or {}).get("count") or 0))

    @staticmethod
    def _prepare_get_options() -> _Prepared[dict[str, Any]]:
        return _Prepared("get_options", False, dict(in_store_id=_STORE), lambda text: dict(_loads(text) or {}))

    @staticmethod
    def _prepare_set_option(name: str, text: Optional[str]) -> _Prepared[None]:
        return _Prepared("set_option", True, dict(in_store_id=_STORE, in_name=name, in_value=text), _none)

    @staticmethod
    def _prepare_log_erasure(receipt: str, commit: bool) -> _Prepared[None]:
        """SC-14.3: one receipt of the erasure log (in forget's transaction: commit False)."""
        return _Prepared("log_erasure", commit, dict(in_store_id=_STORE, in_receipt=receipt), _none)

    @staticmethod
    def _prepare_erasure_log() -> _Prepared[builtins.list[dict[str, Any]]]:
        return _Prepared("erasure_log", False, dict(in_store_id=_STORE), lambda text: list(_loads(text) or []))

    @staticmethod
    def _prepare_erasure_scan(tokens: builtins.list[str]) -> _Prepared[dict[str, Any]]:
        return _Prepared("erasure_scan", False, dict(in_store_id=_STORE, in_tokens=json.dumps(tokens)),
                         lambda text: dict(_loads(text) or {}))

    @staticmethod
    def _prepare_has_knowledge() -> _Prepared[int]:
        return _Prepared("has_knowledge", False, dict(in_store_id=_STORE), int)

    def _no_eraser_error(self) -> StoreError:
        return StoreError(
            f"store {self._store_id!r} has knowledge tables, and nothing erased the actor from them: call "
            "KnowledgeMemory(store, llm=None).forget(...) (or run `oramem forget`); nothing was deleted"
        )

    def _no_cascade_eraser_error(self, user_id: str) -> StoreError:
        """A user's profile cascade (SC-13.3: an erasure, as ``forget``) on a store with
        knowledge tables and no eraser of this engine to run its knowledge part: refused before
        anything is deleted, as ``forget`` is. Without it only the PL/SQL hook's part ran (her
        events and facts), and the rows of other scopes citing them (the shared meta and session
        observations, clusters and entity summaries other users read), her own scope's rows and
        her queued writes stayed."""
        return StoreError(
            f"store {self._store_id!r} has knowledge tables, and nothing here erases user {user_id!r} from them "
            "(the cascade of a user_profile erases her, SC-13.3): open KnowledgeMemory(store, llm=None) over a "
            "synchronous pool first (or call its forget(user_id=...)); nothing was deleted"
        )

    @staticmethod
    def _forget_event(reply: Any, request: ForgetRequest, store_id: str) -> DeletionEvent:
        return OracleEngine._reply_event(reply, store_id, "forget", request.names)

    @staticmethod
    def _reply_event(reply: Any, store_id: str, reason: str, names: Any = None) -> DeletionEvent:
        """The deletion event of a ``delete_record_json`` reply, as the PL/SQL hook got it."""
        event = (reply or {}).get("event") or {}
        return DeletionEvent(
            memory_store_id=store_id,
            records=tuple((str(t), str(i)) for t, i in event.get("records") or ()),
            scopes=tuple((s.get("agent_id"), s.get("user_id")) for s in event.get("scopes") or ()),
            thread_ids=tuple(event.get("thread_ids") or ()),
            user_ids=tuple(event.get("user_ids") or ()),
            agent_ids=tuple(event.get("agent_ids") or ()),
            reason=reason,
            names=names,
            actor_thread_ids=tuple(event.get("actor_thread_ids") or ()),
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

    def _prepare_sync_search_index(self, method: str) -> _Prepared[None]:
        self._refuse_in_block(f"{method}()", self._SYNC_IN_BLOCK)
        return _Prepared("sync_search_index", False, dict(in_store_id=_STORE), _none)

    @staticmethod
    def _prepare_get(record_type: str, record_id: str, lock: bool) -> _Prepared[Optional[Record]]:
        """``get_json``; ``lock`` (the call runs in a caller's block) locks the record's row
        until the block ends (SC-12.10): a scope check made on it holds for the update,
        delete or pop it guards, as on SQLite, where the block holds the write lock. Outside
        a block the read locks nothing (its transaction ends with the call)."""
        _check_id(record_type, "record_type"), _check_id(record_id, "record_id")
        values = dict(in_store_id=_STORE, in_record_type=record_type, in_record_id=record_id, in_lock=1 if lock else 0)
        return _Prepared("get", False, values, _record_or_none)

    def _prepare_list(self, request: ListRequest) -> _Prepared[builtins.list[Record]]:
        return _Prepared("list", False, dict(in_store_id=_STORE, in_request=list_json(request)), self._records)

    def _prepare_list_thread_messages(self, thread_id: str, last_n: Optional[int]) -> _Prepared[builtins.list[Record]]:
        _check_id(thread_id, "thread_id")
        self._check_last_n(last_n)
        values = dict(in_store_id=_STORE, in_thread_id=thread_id, in_last_n=last_n)
        return _Prepared("list_thread_messages", False, values, self._records)

    def _prepare_search(self, request: SearchRequest) -> _Prepared[builtins.list[tuple[Record, float]]]:
        payload = search_json(request, self._hybrid, self._keyword_language, self._requested_embedder)
        bound = request.max_distance
        if bound is None:
            return _Prepared("search", False, dict(in_store_id=_STORE, in_request=payload), self._hits)

        def within(text: Optional[str]) -> list[tuple[Record, float]]:
            # the package returns its k nearest, nearest first: those within the bound are a
            # prefix, so this is the k nearest within it (the PL/SQL API takes no bound)
            return [hit for hit in self._hits(text) if hit[1] <= bound]

        return _Prepared("search", False, dict(in_store_id=_STORE, in_request=payload), within)

    # -- lifecycle without I/O (both colours) -------------------------------------------
    def close(self) -> None:
        """Stop using the connection or pool (which stays open: its owner closes it)."""
        self._refuse_in_block("close()", "the block still holds a connection")
        self._closed = True

    async def close_async(self) -> None:
        self._refuse_in_block("close_async()", "the block still holds a connection")
        self._closed = True

    def register_deletion_hook(self, hook: Any) -> None:
        """Remember the PL/SQL procedure ``hook`` (a name) as the store's deletion hook; it is
        registered by the next call that does I/O (``open`` / ``open_async`` included), before
        that call. :class:`~oramem.oracle.sync_engine.SyncOracleEngine` registers at once when the store is open."""
        self._pending_hook = self._hook_name(hook)

