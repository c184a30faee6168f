"""The public store API (STORE_CONTRACT §1-§10).

:class:`IMemoryStore` is the interface; :class:`OracleMemoryStore` implements it once for
every engine: it validates and normalises arguments (via :mod:`oramem.normalize`), embeds
retrieval text with the store's embedder, and makes exactly one engine call per operation.
:class:`SQLiteMemoryStore` and :class:`OracleDBMemoryStore` only choose the engine.
"""

from __future__ import annotations

import abc
import asyncio
import builtins
import contextlib
import dataclasses
import functools
import inspect
import json
from oramem.sqlite._sqlite import sqlite3
import types
import warnings
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Iterator, Mapping, Optional, Sequence, Union

from . import gcpause
from .embedders.identity import identity_of, vectors_maker
from .engine import DeletionHookSpec, Engine
from .errors import ArgumentError, ArgumentTypeError, CapabilityError, StoreClosed, StoreError
from .normalize import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_STORE_ID,
    Normalizer,
    RecordDraft,
    _positive_int,
    check_id,
    check_record_type,
    draft_records,
    parse_timestamp,
    validate_store_id,
)
from .options import check_option_name, encode_option
from .requests import ON_CONFLICT, AddRequest, ForgetRequest, NewRecord, SearchRequest, StoreSettings
from .trust.firewall import OPTION_NAME as FIREWALL_OPTION
from .trust.firewall import VERDICT_KEY, FirewallPolicy
from .trust.gate import check_reserved, drop_verdicts, screen_drafts, screen_update
from .batches import PendingRecordBatch
from .types import (
    NOT_SET,
    NotSetType,
    PROFILE_TYPES,
    TTL_TYPES,
    MemoryRetentionConfig,
    Record,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["IMemoryStore", "OracleMemoryStore", "SQLiteMemoryStore", "OracleDBMemoryStore"]

_STORE_KWARGS = frozenset({"batch_size"})
#: the reserved verdict key as it appears in a metadata JSON text (``_screened``)
_VERDICT_JSON = json.dumps(VERDICT_KEY)
#: a store option that is really a misspelt per-record argument of ``add`` (mem0 says ``user_id=``)
_ADD_ARGUMENT_HINTS = {
    "user_id": "user_ids", "agent_id": "agent_ids", "thread_id": "thread_ids", "record_id": "record_ids",
    "id": "record_ids", "ids": "record_ids", "role": "roles", "timestamp": "timestamps", "index_text": "index_texts",
    "embedding": "embeddings", "vectors": "embeddings", "metadatas": "metadata", "ttl": "ttl_days", "text": "contents",
    "texts": "contents", "type": "record_type",
}


def _restored_times(times: Any, drafts: builtins.list[RecordDraft]) -> builtins.list[Optional[tuple[str, Optional[str]]]]:
    """Validated ``(created_at, expires_at)`` per draft (None = assign as ``add`` does)."""
    if times is None:
        return [None] * len(drafts)
    if not isinstance(times, (list, tuple)) or len(times) != len(drafts):
        raise ArgumentError(f"times must be a list with one entry per record ({len(drafts)}), or None")
    out: builtins.list[Optional[tuple[str, Optional[str]]]] = []
    for i, (entry, draft) in enumerate(zip(times, drafts)):
        if entry is None:
            out.append(None)
            continue
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            raise ArgumentError(f"times[{i}] must be a (created_at, expires_at) pair or None")
        created = parse_timestamp(entry[0], f"times[{i}] created_at")
        expires = None if entry[1] is None else parse_timestamp(entry[1], f"times[{i}] expires_at")
        if expires is not None and draft.record_type not in TTL_TYPES:
            raise ArgumentError(f"times[{i}]: a {draft.record_type} record never expires; its expires_at must be None")
        out.append((created, expires))
    return out


class IMemoryStore(abc.ABC):
    """The record store interface: every method has an ``_async`` twin with the same
    signature and result."""

    @abc.abstractmethod
    def add(self, contents: Sequence[Optional[str]], record_type: str, *, index_texts: Any = NOT_SET, embeddings: Any = NOT_SET, record_ids: Any = NOT_SET,
            thread_ids: Any = NOT_SET, user_ids: Any = NOT_SET, agent_ids: Any = NOT_SET, roles: Any = NOT_SET, timestamps: Any = NOT_SET,
            metadata: Any = NOT_SET, ttl_days: Any = NOT_SET, ttl_anchor: Any = NOT_SET, **store_kwargs: Any) -> list[str]:
        """Add records of one type in one transaction (SC-4); returns their ids in input order.

        Args:
            contents: list of texts, one per record (a bare string is a TypeError; a None entry
                takes ``metadata["content"]``).
            record_type: ``"memory"``, ``"message"``, ``"fact"``, ``"preference"`` or ``"guideline"``
                (``add_user``/``add_agent`` add profiles).
            index_texts: what search sees instead of the content (a string, caller-owned chunks
                as a list of strings, ``""`` for no retrieval rows); per record (SC-4.5).
            embeddings: vectors you computed (one per record, or one per caller-owned chunk);
                the embedder is not called for them (SC-4.6).
            record_ids: ids to use (default: generated uuid4 text).
            thread_ids, user_ids, agent_ids: the scope of each record; a scalar applies to every
                record (``user_ids="alice"``), a list gives one per record. Note the plural: the
                search/list filters are ``user_id=`` etc.
            roles: message roles (``"user"``, ``"assistant"``, ...), for ``message`` records.
            timestamps: ISO-8601 event times (naive = UTC).
            metadata: a JSON-able dict per record (or one for all).
            ttl_days: days until expiry (omitted: the store's default; None: never/the maximum).
            ttl_anchor: ``"created_at"`` (default) or ``"timestamp"``: what ``ttl_days`` counts from.
            batch_size: (keyword) rows per executemany slice (default 256).

        Every per-record argument is a scalar (broadcast) or a list aligned with ``contents``.
        Any error stores nothing."""

    @abc.abstractmethod
    def add_batches(self, batches: Sequence[PendingRecordBatch], **store_kwargs: Any) -> list[str]:
        """Add caller-prepared batches (``PendingRecordBatch``, mixed record types) in one
        transaction (SC-4.10); returns the ids in batch-then-row order.

        Args:
            batches: a list of :class:`~oramem.PendingRecordBatch` (each validated when built).
            batch_size: (keyword) rows per executemany slice (default 256)."""

    @abc.abstractmethod
    def add_user(self, user_id: str, information: str, metadata: Optional[Mapping[str, Any]] = None) -> str:
        """Add a user profile; returns ``user_id``, which is also its record id (SC-2.4).

        Args:
            user_id: the user's id (adding an existing profile is a ValueError).
            information: the profile text (what search sees).
            metadata: optional JSON-able dict."""

    @abc.abstractmethod
    def add_agent(self, agent_id: str, information: str, metadata: Optional[Mapping[str, Any]] = None) -> str:
        """Add an agent profile; returns ``agent_id``, which is also its record id (SC-2.4).

        Args:
            agent_id: the agent's id (adding an existing profile is a ValueError).
            information: the profile text (what search sees).
            metadata: optional JSON-able dict."""

    @abc.abstractmethod
    def get(self, record_type: str, record_id: str) -> Optional[Record]:
        """One record, or None when absent or expired (SC-3.2).

        Args:
            record_type: the record's type (``"memory"``, ``"message"``, ...).
            record_id: its id (as returned by ``add``)."""

    @abc.abstractmethod
    def list(self, record_type: str, limit: Union[int, None, NotSetType] = NOT_SET, thread_id: Union[str, None, NotSetType] = NOT_SET, user_id: Union[str, None, NotSetType] = NOT_SET, agent_id: Union[str, None, NotSetType] = NOT_SET,
             metadata_filter: Union[Mapping[str, Any], None, NotSetType] = NOT_SET) -> list[Record]:
        """Records of one type, oldest to newest within the window (SC-3.3).

        Args:
            record_type: the type to list.
            limit: at most this many, the most recent (omitted: 10,000; None: all).
            thread_id, user_id, agent_id: filter by scope; omitted = no filter, an explicit None =
                only records without that scope.
            metadata_filter: a filter on metadata, e.g. ``{"topic": "travel"}`` or
                ``{"importance": {"$gte": 3}}`` (README: 'Metadata filter operators')."""

    @abc.abstractmethod
    def list_thread_messages(self, thread_id: str, last_n: Optional[int] = None) -> builtins.list[Record]:
        """A thread's messages, oldest first (SC-3.4).

        Args:
            thread_id: the thread.
            last_n: keep only the newest n (None: all)."""

    @abc.abstractmethod
    def search(self, query: Optional[str] = None, k: int = 10, *, query_vector: Any = None, thread_id: Optional[str] = None, user_id: Optional[str] = None, agent_id: Optional[str] = None,
               exact_user_match: bool = False, exact_agent_match: bool = False, exact_thread_match: bool = False, record_types: Optional[Sequence[str]] = None,
               metadata_filter: Optional[Mapping[str, Any]] = None, strategy: Optional[Union[SearchStrategy, str]] = None,
               max_distance: Optional[float] = None) -> builtins.list[tuple[Record, float]]:
        """At most ``k`` ``(record, distance)`` pairs, nearest first (SC-6).

        Args:
            query: the text to search for (or give ``query_vector``; exactly one of the two).
            k: how many results at most (>= 1); mem0's ``limit``.
            query_vector: a vector you computed instead of ``query``.
            thread_id, user_id, agent_id: only records in that scope (one value each; note the
                singular, unlike ``add``'s ``user_ids``); None leaves the dimension open.
            exact_user_match, exact_agent_match, exact_thread_match: True makes a None scope mean
                "only records without that scope".
            record_types: only these types (e.g. ``["memory", "fact"]``).
            metadata_filter: a filter on metadata, applied before the top-k cut (README: 'Metadata filter operators').
            strategy: ``"vector"``, ``"keyword"`` or ``"hybrid"`` for this call (within what the
                store was opened for); default: the store's.
            max_distance: vector search only: leave out records farther than this cosine
                distance (0 to 2; e.g. 0.5), so fewer than ``k`` may come back; the answer is
                the k nearest records within it. Keyword and hybrid distances rank results within
                one search and do not compare across searches, so they take no bound.

        Distances are floats: cosine distance (vector), ``1 - normalised score`` (keyword,
        hybrid; in [0, 1])."""

    @abc.abstractmethod
    def update(self, record_type: str, record_id: str, *, text: Union[str, None, NotSetType] = NOT_SET, index_text: Union[str, None, NotSetType] = NOT_SET, embedding: Any = NOT_SET,
               metadata: Union[Mapping[str, Any], None, NotSetType] = NOT_SET, timestamp: Union[Union[str, datetime], None, NotSetType] = NOT_SET, ttl_days: Any = NOT_SET, ttl_anchor: Any = NOT_SET) -> int:
        """Update one record; returns 1 if updated, 0 if absent or expired (SC-7). Omitted
        arguments keep their value; giving none is a ValueError.

        Args:
            record_type: the record's type.
            record_id: its id.
            text: new stored text (re-embedded unless ``index_text``/``embedding`` say otherwise);
                None clears it.
            index_text: new retrieval text (as ``add``'s ``index_texts``); None clears retrieval rows.
            embedding: a vector you computed (or one per retrieval chunk); None stores no vectors.
            metadata: replaces the whole mapping (None clears it).
            timestamp: new ISO-8601 event time (None clears it).
            ttl_days, ttl_anchor: new expiry, as in ``add``."""

    @abc.abstractmethod
    def delete(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        """Delete one record with its retrieval rows; returns 1 or 0 (SC-8).

        Args:
            record_type: the record's type.
            record_id: its id.
            cascade: for a ``user_profile``/``agent_profile``/``thread``: also delete everything
                scoped to it, in the same transaction. A profile's cascade is an erasure
                (SC-13.3, SC-13.4): it logs ``forget``'s receipt in the erasure log (SC-14.1,
                ``trust.erasure.erasure_log``), its tombstone in the cascade's transaction."""

    @abc.abstractmethod
    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread with its messages and every record scoped to it; 1 or 0 (SC-8.3).

        Args:
            thread_id: the thread."""

    @abc.abstractmethod
    def purge_expired(self) -> int:
        """Physically remove expired records (already invisible to reads); returns the count (SC-5.5)."""

    @abc.abstractmethod
    def forget(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None, names: Optional[Sequence[str]] = None) -> dict[str, int]:
        """Erase a user (``user_id``) or an agent (``agent_id``, exactly one of the two)
        everywhere, in one transaction, by its id only (SC-8.6, SC-13); returns the rows
        erased per table (an ``oramem.trust.ErasureReceipt``, a ``dict`` with the receipt's
        attributes, where the engine keeps erasure receipts, SC-14). ``names`` is refused
        (``ValueError``): names are no longer matched."""

    @abc.abstractmethod
    def sync_search_index(self) -> None:
        """Refresh the keyword/hybrid index of a store opened with ``search_index_sync=MANUAL`` (SC-10.5)."""

    @abc.abstractmethod
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """``with store.transaction():`` the store operations inside join one transaction,
        committed when the block ends, rolled back when an exception leaves it; nested
        blocks are savepoints (SC-12)."""
        yield  # abstract: the generator shape is what the async-parity check compares

    @abc.abstractmethod
    def close(self) -> None:
        """Release the store's resources. Idempotent."""

    # async twins ---------------------------------------------------------------------
    @abc.abstractmethod
    async def add_async(self, contents: Sequence[Optional[str]], record_type: str, *, index_texts: Any = NOT_SET, embeddings: Any = NOT_SET,
                        record_ids: Any = NOT_SET, thread_ids: Any = NOT_SET, user_ids: Any = NOT_SET, agent_ids: Any = NOT_SET,
                        roles: Any = NOT_SET, timestamps: Any = NOT_SET, metadata: Any = NOT_SET, ttl_days: Any = NOT_SET,
                        ttl_anchor: Any = NOT_SET, **store_kwargs: Any) -> builtins.list[str]:
        """Async twin of :meth:`add`."""

    @abc.abstractmethod
    async def add_batches_async(self, batches: Sequence[PendingRecordBatch], **store_kwargs: Any) -> builtins.list[str]:
        """Async twin of :meth:`add_batches`."""

    @abc.abstractmethod
    async def add_user_async(self, user_id: str, information: str, metadata: Optional[Mapping[str, Any]] = None) -> str:
        """Async twin of :meth:`add_user`."""

    @abc.abstractmethod
    async def add_agent_async(self, agent_id: str, information: str, metadata: Optional[Mapping[str, Any]] = None) -> str:
        """Async twin of :meth:`add_agent`."""

    @abc.abstractmethod
    async def get_async(self, record_type: str, record_id: str) -> Optional[Record]:
        """Async twin of :meth:`get`."""

    @abc.abstractmethod
    async def list_async(self, record_type: str, limit: Union[int, None, NotSetType] = NOT_SET, thread_id: Union[str, None, NotSetType] = NOT_SET, user_id: Union[str, None, NotSetType] = NOT_SET,
                         agent_id: Union[str, None, NotSetType] = NOT_SET, metadata_filter: Union[Mapping[str, Any], None, NotSetType] = NOT_SET) -> builtins.list[Record]:
        """Async twin of :meth:`list`."""

    @abc.abstractmethod
    async def list_thread_messages_async(self, thread_id: str, last_n: Optional[int] = None) -> builtins.list[Record]:
        """Async twin of :meth:`list_thread_messages`."""

    @abc.abstractmethod
    async def search_async(self, query: Optional[str] = None, k: int = 10, *, query_vector: Any = None, thread_id: Optional[str] = None, user_id: Optional[str] = None,
                           agent_id: Optional[str] = None, exact_user_match: bool = False, exact_agent_match: bool = False,
                           exact_thread_match: bool = False, record_types: Optional[Sequence[str]] = None, metadata_filter: Optional[Mapping[str, Any]] = None,
                           strategy: Optional[Union[SearchStrategy, str]] = None, max_distance: Optional[float] = None) -> builtins.list[tuple[Record, float]]:
        """Async twin of :meth:`search`."""

    @abc.abstractmethod
    async def update_async(self, record_type: str, record_id: str, *, text: Union[str, None, NotSetType] = NOT_SET, index_text: Union[str, None, NotSetType] = NOT_SET,
                           embedding: Any = NOT_SET, metadata: Union[Mapping[str, Any], None, NotSetType] = NOT_SET, timestamp: Union[Union[str, datetime], None, NotSetType] = NOT_SET, ttl_days: Any = NOT_SET,
                           ttl_anchor: Any = NOT_SET) -> int:
        """Async twin of :meth:`update`."""

    @abc.abstractmethod
    async def delete_async(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        """Async twin of :meth:`delete`."""

    @abc.abstractmethod
    async def delete_thread_async(self, thread_id: str) -> int:
        """Async twin of :meth:`delete_thread`."""

    @abc.abstractmethod
    async def purge_expired_async(self) -> int:
        """Async twin of :meth:`purge_expired`."""

    @abc.abstractmethod
    async def forget_async(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None, names: Optional[Sequence[str]] = None) -> dict[str, int]:
        """Async twin of :meth:`forget`."""

    @abc.abstractmethod
    async def sync_search_index_async(self) -> None:
        """Async twin of :meth:`sync_search_index`."""

    @abc.abstractmethod
    @contextlib.asynccontextmanager
    async def transaction_async(self) -> AsyncIterator[None]:
        """``async with store.transaction_async():`` async twin of :meth:`transaction`."""
        yield  # abstract: the generator shape is what the async-parity check compares

    @abc.abstractmethod
    async def close_async(self) -> None:
        """Async twin of :meth:`close`."""

    async def aclose(self) -> None:
        """Alias of :meth:`close_async`."""
        await self.close_async()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close_async()


class OracleMemoryStore(IMemoryStore):
    """Common base of the concrete stores: validates and normalises arguments once, then
    calls its :class:`~oramem.engine.Engine`.

    Subclasses pass an engine and the store arguments; the engine is opened here with the
    schema policy, unless it can only be opened asynchronously (an async Oracle pool), in
    which case the first ``*_async`` call opens it.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Give each subclass its own copies of the inherited public methods, named after it:
        Python names a function's ``__qualname__`` in the errors it raises for a call's
        arguments, so ``SQLiteMemoryStore.add() missing ... 'record_type'`` names the class the
        user constructed, not ``OracleMemoryStore`` (new-user trial F-6). ``search`` and
        ``list`` (and twins) also add a hint to such an error for names other libraries use
        (``user_ids=``, ``limit=``)."""
        super().__init_subclass__(**kwargs)
        for name, original in OracleMemoryStore.__dict__.items():
            if name.startswith("_") or not isinstance(original, types.FunctionType) or hasattr(original, "__wrapped__"):
                continue
            current = inspect.getattr_static(cls, name)
            if getattr(getattr(current, "_oramem_original", current), "__code__", None) is not original.__code__:
                continue  # overridden on the way down: keep the override
            copy = types.FunctionType(original.__code__, original.__globals__, original.__name__,
                                      original.__defaults__, original.__closure__)
            copy.__kwdefaults__ = original.__kwdefaults__
            copy.__annotations__ = original.__annotations__
            copy.__module__ = original.__module__
            copy.__doc__ = inspect.getdoc(original)
            copy.__qualname__ = f"{cls.__name__}.{name}"
            method: Any = _with_call_hints(copy, _CALL_HINTS[name]) if name in _CALL_HINTS else copy
            method._oramem_original = original
            setattr(cls, name, method)

    def __init__(
        self,
        engine: Engine,
        *,
        embedder: Any = None,
        schema_policy: Any = SchemaPolicy.REQUIRE_EXISTING,
        vector_dim: Optional[int] = None,
        memory_store_id: Any = NOT_SET,
        search_strategy: Any = SearchStrategy.VECTOR,
        search_index_sync: Any = NOT_SET,
        memory_retention_config: Any = NOT_SET,
    ) -> None:
        self._engine = engine
        self._closed = False
        self._embedder = _check_embedder(embedder)
        policy = SchemaPolicy.coerce(schema_policy, "schema_policy")
        strategy = SearchStrategy.coerce(search_strategy, "search_strategy")
        sync = None if search_index_sync is NOT_SET else SearchIndexSyncMode.coerce(search_index_sync, "search_index_sync")
        if sync is SearchIndexSyncMode.AUTO and strategy is not SearchStrategy.HYBRID:
            raise ArgumentError("search_index_sync=AUTO is supported only with search_strategy=HYBRID (SC-10.5)")
        if memory_retention_config is NOT_SET or memory_retention_config is None:
            retention = None
        elif isinstance(memory_retention_config, MemoryRetentionConfig):
            retention = memory_retention_config
        else:
            raise ArgumentTypeError(
                f"memory_retention_config must be a MemoryRetentionConfig, got {type(memory_retention_config).__name__}"
            )
        if vector_dim is not None:
            vector_dim = _positive_int(vector_dim, "vector_dim")
        if self._embedder is not None:
            emb_dim = _positive_int(self._embedder.embedding_dimension, "embedder.embedding_dimension")
            if vector_dim is not None and vector_dim != emb_dim:
                raise ArgumentError(
                    f"vector_dim={vector_dim} differs from the embedder's dimension {emb_dim}; omit vector_dim or fix it"
                )
            vector_dim = emb_dim
        store_id = DEFAULT_STORE_ID if memory_store_id is NOT_SET else validate_store_id(memory_store_id)
        identity = identity_of(self._embedder)
        self._requested = StoreSettings(store_id, vector_dim, strategy, sync, retention, identity)
        self._policy = policy
        self._norm: Optional[Normalizer] = None
        self._open_lock: Optional[asyncio.Lock] = None
        self._options: Optional[dict[str, Any]] = None
        if not engine.async_only:
            self._opened(engine.open(self._requested, policy))

    # -- opening ---------------------------------------------------------------------------
    def _opened(self, settings: StoreSettings) -> None:
        if settings.search_strategy is not SearchStrategy.KEYWORD and settings.vector_dim is None:
            raise ArgumentError(f"{settings.search_strategy.value} store without vector_dim; pass vector_dim or an embedder")
        self._norm = Normalizer(settings, self._embedder)

    def _n(self) -> Normalizer:
        if self._closed:
            raise StoreClosed("this store is closed; open a new one")
        if self._norm is None:
            raise ArgumentTypeError("this store uses an async connection pool: use the *_async methods")
        return self._norm

    async def _na(self) -> Normalizer:
        if self._closed:
            raise StoreClosed("this store is closed; open a new one")
        if self._norm is None:
            if self._open_lock is None:
                self._open_lock = asyncio.Lock()
            async with self._open_lock:
                if self._norm is None:
                    self._opened(await self._engine.open_async(self._requested, self._policy))
        assert self._norm is not None  # set by _opened()
        return self._norm

    # -- settings ----------------------------------------------------------------------------
    @property
    def settings(self) -> StoreSettings:
        """The settings in force (persisted with the store)."""
        return self._n().settings

    @property
    def memory_store_id(self) -> str:
        return self._requested.memory_store_id

    @property
    def vector_dim(self) -> Optional[int]:
        return self.settings.vector_dim

    @property
    def search_strategy(self) -> SearchStrategy:
        return self.settings.search_strategy

    @property
    def embedder(self) -> Any:
        return self._embedder

    @property
    def schema_policy(self) -> SchemaPolicy:
        """The schema policy this store was opened with (layers above reuse it)."""
        return self._policy

    @property
    def engine(self) -> Engine:
        """The engine behind this store: the seam for layers above the store API (the
        knowledge layer keeps its tables in the same database and transaction). Not for
        application code: everything an application needs is a store method."""
        return self._engine

    # -- options and the write-time firewall (SC-15) ------------------------------------------
    def _loaded_options(self) -> dict[str, Any]:
        self._n()
        if self._engine.async_only:  # as every other sync call of an async store, cached or not
            raise ArgumentTypeError("this store uses an async connection pool: use the *_async methods")
        if self._options is None:
            try:
                self._options = self._engine.get_options()
            except CapabilityError:  # an engine without options has no firewall policy
                self._options = {}
        return self._options

    async def _loaded_options_async(self) -> dict[str, Any]:
        await self._na()
        if self._options is None:
            try:
                self._options = await self._engine.get_options_async()
            except CapabilityError:
                self._options = {}
        return self._options

    def get_option(self, name: str) -> Any:
        """The value of store option ``name`` (:mod:`oramem.options`), or None. Options are
        read once per store object and kept: a change made through another store object
        applies to objects opened after it (SC-15.1)."""
        return self._loaded_options().get(check_option_name(name))

    async def get_option_async(self, name: str) -> Any:
        """Async twin of :meth:`get_option`."""
        return (await self._loaded_options_async()).get(check_option_name(name))

    def set_option(self, name: str, value: Any) -> None:
        """Persist store option ``name`` (a JSON value; None removes it), in one transaction."""
        name = check_option_name(name)
        text = encode_option(name, value)
        self._n()
        self._engine.set_option(name, text)
        self._options = None

    async def set_option_async(self, name: str, value: Any) -> None:
        """Async twin of :meth:`set_option`."""
        name = check_option_name(name)
        text = encode_option(name, value)
        await self._na()
        await self._engine.set_option_async(name, text)
        self._options = None

    @staticmethod
    def _policy_of(options: dict[str, Any]) -> Optional[FirewallPolicy]:
        value = options.get(FIREWALL_OPTION)
        return None if value is None else FirewallPolicy.from_json(value)

    def get_firewall(self) -> Optional[FirewallPolicy]:
        """The store's write-time firewall policy (SC-15), or None when it has none."""
        return self._policy_of(self._loaded_options())

    async def get_firewall_async(self) -> Optional[FirewallPolicy]:
        """Async twin of :meth:`get_firewall`."""
        return self._policy_of(await self._loaded_options_async())

    def set_firewall(self, policy: Optional[FirewallPolicy]) -> None:
        """Store ``policy`` with the store (None: no firewall). Records written before keep
        their text and verdict; every later write by a store object opened after (or by this
        one) is screened (SC-15.1)."""
        if policy is not None and not isinstance(policy, FirewallPolicy):
            raise ArgumentTypeError(f"policy must be an oramem.trust.FirewallPolicy or None, got {type(policy).__name__}")
        if policy is not None:
            policy.active_detectors()  # its custom detectors exist here
        self.set_option(FIREWALL_OPTION, None if policy is None else policy.to_json())

    async def set_firewall_async(self, policy: Optional[FirewallPolicy]) -> None:
        """Async twin of :meth:`set_firewall`."""
        if policy is not None and not isinstance(policy, FirewallPolicy):
            raise ArgumentTypeError(f"policy must be an oramem.trust.FirewallPolicy or None, got {type(policy).__name__}")
        if policy is not None:
            policy.active_detectors()
        await self.set_option_async(FIREWALL_OPTION, None if policy is None else policy.to_json())

    def _screened(self, drafts: builtins.list[RecordDraft], policy: Optional[FirewallPolicy], restoring: bool = False,
                  what: str = "contents") -> builtins.list[RecordDraft]:
        if not restoring:
            for d in drafts:
                # a draft's metadata_json is its metadata's JSON text: a dict holding the
                # reserved key has the key's JSON string in it, so the others need no check
                if d.metadata_json is None or _VERDICT_JSON in d.metadata_json:
                    check_reserved(d.metadata)
        return drafts if policy is None else screen_drafts(policy, drafts, restoring=restoring, what=what)

    def sql_access(self, *, configure: Optional[Callable[[Any], Any]] = None) -> Any:
        """SQLAlchemy access to this store's database for a layer built on the store (the
        knowledge layer): an :class:`oramem.sql_access.SQLAccess` whose writes join the store's
        transaction block (SC-12). ``configure(sa_engine)`` runs once on the SQLAlchemy engine it
        creates. A new object per call; close it when done (the store keeps its connections)."""
        return self._engine.sql_access(self, configure)

    async def sql_access_async(self, *, configure: Optional[Callable[[Any], Any]] = None) -> Any:
        """Async twin of :meth:`sql_access` (creating the access does no I/O)."""
        return self._engine.sql_access(self, configure)

    def register_erasure(self, eraser: Any) -> None:
        """SC-8.6: on an engine whose ``forget`` runs in the database (Oracle), add what
        ``forget`` also erases in its transaction (see ``Engine.register_erasure``)."""
        self._engine.register_erasure(eraser)

    async def register_erasure_async(self, eraser: Any) -> None:
        """Async twin of :meth:`register_erasure` (registration does no I/O)."""
        self._engine.register_erasure(eraser)

    def register_deletion_hook(self, hook: DeletionHookSpec) -> None:
        """SC-8.5: ``hook`` runs inside every delete, cascade and purge transaction (SQLite:
        a callable ``hook(connection, event)``; Oracle: the name of a PL/SQL procedure)."""
        self._engine.register_deletion_hook(hook)

    async def register_deletion_hook_async(self, hook: DeletionHookSpec) -> None:
        """Async twin of :meth:`register_deletion_hook` (registration does no I/O)."""
        self._engine.register_deletion_hook(hook)

    # -- add ---------------------------------------------------------------------------------
    @staticmethod
    def _batch_size(store_kwargs: dict[str, Any]) -> int:
        unknown = sorted(set(store_kwargs) - _STORE_KWARGS)
        if unknown:
            hints = [f"{_ADD_ARGUMENT_HINTS[n]}=" for n in unknown if n in _ADD_ARGUMENT_HINTS]
            hint = (
                f" (did you mean {', '.join(hints)}? add takes each record's scope, one value for all or a list: "
                "user_ids='alice')" if hints else ""
            )
            raise ArgumentTypeError(f"unknown store option(s) {', '.join(unknown)}{hint}; supported: batch_size (SC-4.9)")
        return _positive_int(store_kwargs.get("batch_size", DEFAULT_BATCH_SIZE), "batch_size")

    @staticmethod
    def _batch_drafts(batches: Any) -> builtins.list[RecordDraft]:
        if isinstance(batches, PendingRecordBatch) or not isinstance(batches, (list, tuple)):
            raise ArgumentTypeError("batches must be a list of PendingRecordBatch")
        drafts = []
        for i, batch in enumerate(batches):
            if not isinstance(batch, PendingRecordBatch):
                raise ArgumentTypeError(f"batches[{i}] must be a PendingRecordBatch, got {type(batch).__name__}")
            drafts.extend(batch._normalised)
        return drafts

    def _write(self, norm: Normalizer, drafts: builtins.list[RecordDraft], batch_size: int) -> builtins.list[str]:
        # the collector is paused for the bulk bookkeeping, not for the embedder's call
        with gcpause.paused(len(drafts)):
            plans, texts = norm.plan_records(drafts)
        vectors = norm.embed(texts, is_query=False)
        with gcpause.paused(len(drafts)):
            records = norm.finish_records(plans, vectors)
            if not records:
                return []
            return self._engine.add(AddRequest(tuple(records), batch_size, embedded=bool(texts), vectors_of=vectors_maker()))

    async def _write_async(self, norm: Normalizer, drafts: builtins.list[RecordDraft], batch_size: int) -> builtins.list[str]:
        plans, texts = norm.plan_records(drafts)
        records = norm.finish_records(plans, await norm.embed_async(texts, is_query=False))
        if not records:
            return []
        return await self._engine.add_async(AddRequest(tuple(records), batch_size, embedded=bool(texts), vectors_of=vectors_maker()))

    def add(self, contents: Sequence[Optional[str]], record_type: str, *, index_texts: Any = NOT_SET, embeddings: Any = NOT_SET, record_ids: Any = NOT_SET,
            thread_ids: Any = NOT_SET, user_ids: Any = NOT_SET, agent_ids: Any = NOT_SET, roles: Any = NOT_SET, timestamps: Any = NOT_SET,
            metadata: Any = NOT_SET, ttl_days: Any = NOT_SET, ttl_anchor: Any = NOT_SET, **store_kwargs: Any) -> list[str]:
        norm = self._n()
        size = self._batch_size(store_kwargs)
        with gcpause.paused(len(contents) if isinstance(contents, list) else 0):
            drafts = draft_records(
                contents, record_type, index_texts=index_texts, embeddings=embeddings, record_ids=record_ids,
                thread_ids=thread_ids, user_ids=user_ids, agent_ids=agent_ids, roles=roles, timestamps=timestamps,
                metadata=metadata, ttl_days=ttl_days, ttl_anchor=ttl_anchor,
            )
        return self._write(norm, self._screened(drafts, self.get_firewall()), size)

    async def add_async(self, contents: Sequence[Optional[str]], record_type: str, *, index_texts: Any = NOT_SET, embeddings: Any = NOT_SET,
                        record_ids: Any = NOT_SET, thread_ids: Any = NOT_SET, user_ids: Any = NOT_SET, agent_ids: Any = NOT_SET,
                        roles: Any = NOT_SET, timestamps: Any = NOT_SET, metadata: Any = NOT_SET, ttl_days: Any = NOT_SET,
                        ttl_anchor: Any = NOT_SET, **store_kwargs: Any) -> list[str]:
        norm = await self._na()
        size = self._batch_size(store_kwargs)
        drafts = draft_records(
            contents, record_type, index_texts=index_texts, embeddings=embeddings, record_ids=record_ids,
            thread_ids=thread_ids, user_ids=user_ids, agent_ids=agent_ids, roles=roles, timestamps=timestamps,
            metadata=metadata, ttl_days=ttl_days, ttl_anchor=ttl_anchor,
        )
        return await self._write_async(norm, self._screened(drafts, await self.get_firewall_async()), size)

    def add_batches(self, batches: Sequence[PendingRecordBatch], **store_kwargs: Any) -> list[str]:
        norm = self._n()
        drafts = self._screened(self._batch_drafts(batches), self.get_firewall(), what="batches")
        return self._write(norm, drafts, self._batch_size(store_kwargs))

    async def add_batches_async(self, batches: Sequence[PendingRecordBatch], **store_kwargs: Any) -> list[str]:
        norm = await self._na()
        drafts = self._screened(self._batch_drafts(batches), await self.get_firewall_async(), what="batches")
        return await self._write_async(norm, drafts, self._batch_size(store_kwargs))

    # -- restore (backups: oramem.jsonl) ------------------------------------------------------
    def _restore_records(self, norm: Normalizer, batches: Any, times: Any, on_conflict: Any,
                         policy: Optional[FirewallPolicy], keep_verdicts: Any) -> tuple[Any, ...]:
        if on_conflict not in ON_CONFLICT:
            raise ArgumentError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}, got {on_conflict!r}")
        if not isinstance(keep_verdicts, bool):
            raise ArgumentTypeError(f"keep_verdicts must be True or False, got {type(keep_verdicts).__name__}")
        drafts = self._batch_drafts(batches)
        if policy is None and not keep_verdicts:
            drafts = drop_verdicts(drafts)  # SC-15.4: a backup's verdict is a claim, not a screening
        drafts = self._screened(drafts, policy, restoring=True, what="batches")
        plans, texts = norm.plan_records(drafts)
        kept = _restored_times(times, drafts)
        return plans, texts, kept

    @staticmethod
    def _restored(norm: Normalizer, plans: builtins.list[Any], vectors: Any, kept: builtins.list[Any]) -> tuple[NewRecord, ...]:
        records = norm.finish_records(plans, vectors)
        return tuple(
            dataclasses.replace(rec, restored_times=t) if t is not None else rec for rec, t in zip(records, kept)
        )

    def restore_batches(self, batches: Sequence[PendingRecordBatch], *, times: Any = None, on_conflict: str = "fail",
                        keep_verdicts: bool = False, **store_kwargs: Any) -> list[str]:
        """``add_batches`` for backups: ``times`` (one entry per record, in batch order, or
        None) gives each record's kept ``(created_at, expires_at)`` instead of "now" and the
        TTL (``expires_at`` None = never expires); ``on_conflict`` says what a stored id does:
        "fail" (nothing written), "skip" (keep the stored record) or "replace" (delete it,
        in the same transaction; only a stored record of the same user and agent is replaced,
        another's is refused with ``DuplicateRecordError``, nothing written, on both engines;
        red40, ora44). A record's firewall verdict (metadata ``oramem_firewall``)
        is recomputed when this store has a policy; without one it is dropped, unless
        ``keep_verdicts=True`` (the caller vouches for the verdicts: its own backup, a store
        copy; SC-15.4). Returns the ids written, in input order."""
        norm = self._n()
        size = self._batch_size(store_kwargs)
        plans, texts, kept = self._restore_records(norm, batches, times, on_conflict, self.get_firewall(), keep_verdicts)
        records = self._restored(norm, plans, norm.embed(texts, is_query=False), kept)
        if not records:
            return []
        return self._engine.add(AddRequest(records, size, on_conflict, embedded=bool(texts)))

    async def restore_batches_async(self, batches: Sequence[PendingRecordBatch], *, times: Any = None, on_conflict: str = "fail",
                                    keep_verdicts: bool = False, **store_kwargs: Any) -> list[str]:
        """Async twin of :meth:`restore_batches`."""
        norm = await self._na()
        size = self._batch_size(store_kwargs)
        plans, texts, kept = self._restore_records(norm, batches, times, on_conflict, await self.get_firewall_async(),
                                                   keep_verdicts)
        records = self._restored(norm, plans, await norm.embed_async(texts, is_query=False), kept)
        if not records:
            return []
        return await self._engine.add_async(AddRequest(records, size, on_conflict, embedded=bool(texts)))

    def _check_restore(self, keys: Sequence[tuple[str, str, Optional[str], Optional[str]]], on_conflict: str) -> bool:
        """Before a restore's first batch (``jsonl.import_records``, imp48): raise the
        ``DuplicateRecordError`` that :meth:`restore_batches` / :meth:`restore_threads` of
        records with ``keys`` (``(record_type, id, agent_id, user_id)``) under ``on_conflict``
        would raise for the ids stored now, writing nothing. False when this store's engine
        has no such read (Oracle: its batches find the refusal, -20005), True when checked."""
        self._n()
        try:
            self._engine.check_restore(keys, on_conflict)
        except CapabilityError:
            return False
        return True

    @staticmethod
    def _thread_rows(threads: Any, on_conflict: Any) -> tuple[NewRecord, ...]:
        """Validated thread rows for :meth:`restore_threads` (SC-13.6)."""
        if on_conflict not in ON_CONFLICT:
            raise ArgumentError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}, got {on_conflict!r}")
        if isinstance(threads, (str, bytes)) or not isinstance(threads, (list, tuple)):
            raise ArgumentTypeError("threads must be a list of (thread_id, user_id, agent_id, created_at) tuples")
        now = parse_timestamp(datetime.now(tz=timezone.utc), "now")
        rows: builtins.list[NewRecord] = []
        seen: set[str] = set()
        for i, entry in enumerate(threads):
            if not isinstance(entry, (list, tuple)) or len(entry) != 4:
                raise ArgumentError(f"threads[{i}] must be a (thread_id, user_id, agent_id, created_at) tuple")
            tid = check_id(entry[0], f"threads[{i}] thread_id")
            if tid in seen:
                raise ArgumentError(f"thread {tid!r} appears twice in threads; nothing was written")
            seen.add(tid)
            user = check_id(entry[1], f"threads[{i}] user_id", optional=True)
            agent = check_id(entry[2], f"threads[{i}] agent_id", optional=True)
            created = now if entry[3] is None else parse_timestamp(entry[3], f"threads[{i}] created_at")
            rows.append(NewRecord(id=tid, record_type="thread", content=None, thread_id=tid, user_id=user,
                                  agent_id=agent, role=None, timestamp=None, metadata=None, ttl=None, chunks=(),
                                  restored_times=(created, None)))
        return tuple(rows)

    def restore_threads(self, threads: Sequence[Any], *, on_conflict: str = "skip") -> builtins.list[str]:
        """SC-13.6: write ``thread`` rows as a backup or a source store has them: one
        ``(thread_id, user_id, agent_id, created_at)`` per thread (who opened it, SC-13.2;
        ``created_at`` None = now). ``on_conflict``: "skip" (default: a thread that exists
        keeps its row), "fail" or "replace" (restores a stored row of the same opener, user
        and agent, e.g. its ``created_at``; a stored row of another opener, or of no user
        where the new row names one and the reverse, is refused with
        ``DuplicateRecordError`` naming the thread ids, nothing written, on both engines:
        replace never changes who opened a thread, imp47). Call it before restoring the
        records that name the threads (records create missing thread rows implicitly,
        SC-2.3). Returns the thread ids written."""
        self._n()
        rows = self._thread_rows(threads, on_conflict)
        if not rows:
            return []
        return self._engine.add(AddRequest(rows, DEFAULT_BATCH_SIZE, on_conflict))

    async def restore_threads_async(self, threads: Sequence[Any], *, on_conflict: str = "skip") -> builtins.list[str]:
        """Async twin of :meth:`restore_threads`."""
        await self._na()
        rows = self._thread_rows(threads, on_conflict)
        if not rows:
            return []
        return await self._engine.add_async(AddRequest(rows, DEFAULT_BATCH_SIZE, on_conflict))

    @staticmethod
    def _profile_drafts(record_type: str, actor_id: Any, information: Any, metadata: Any) -> builtins.list[RecordDraft]:
        argument = "user_id" if record_type == "user_profile" else "agent_id"
        actor_id = check_id(actor_id, argument)
        if not isinstance(information, str):
            raise ArgumentTypeError(f"information must be a str, got {type(information).__name__}")
        return draft_records([information], record_type, record_ids=[actor_id], metadata=[metadata])

    def add_user(self, user_id: str, information: str, metadata: Optional[Mapping[str, Any]] = None) -> str:
        norm = self._n()
        drafts = self._screened(self._profile_drafts("user_profile", user_id, information, metadata), self.get_firewall())
        return self._write(norm, drafts, DEFAULT_BATCH_SIZE)[0]

    async def add_user_async(self, user_id: str, information: str, metadata: Optional[Mapping[str, Any]] = None) -> str:
        norm = await self._na()
        drafts = self._profile_drafts("user_profile", user_id, information, metadata)
        drafts = self._screened(drafts, await self.get_firewall_async())
        return (await self._write_async(norm, drafts, DEFAULT_BATCH_SIZE))[0]

    def add_agent(self, agent_id: str, information: str, metadata: Optional[Mapping[str, Any]] = None) -> str:
        norm = self._n()
        drafts = self._screened(self._profile_drafts("agent_profile", agent_id, information, metadata), self.get_firewall())
        return self._write(norm, drafts, DEFAULT_BATCH_SIZE)[0]

    async def add_agent_async(self, agent_id: str, information: str, metadata: Optional[Mapping[str, Any]] = None) -> str:
        norm = await self._na()
        drafts = self._profile_drafts("agent_profile", agent_id, information, metadata)
        drafts = self._screened(drafts, await self.get_firewall_async())
        return (await self._write_async(norm, drafts, DEFAULT_BATCH_SIZE))[0]

    # -- reads -------------------------------------------------------------------------------
    def get(self, record_type: str, record_id: str) -> Optional[Record]:
        self._n()
        return self._engine.get(check_record_type(record_type), check_id(record_id, "record_id"))

    async def get_async(self, record_type: str, record_id: str) -> Optional[Record]:
        await self._na()
        return await self._engine.get_async(check_record_type(record_type), check_id(record_id, "record_id"))

    def list(self, record_type: str, limit: Union[int, None, NotSetType] = NOT_SET, thread_id: Union[str, None, NotSetType] = NOT_SET, user_id: Union[str, None, NotSetType] = NOT_SET, agent_id: Union[str, None, NotSetType] = NOT_SET,
             metadata_filter: Union[Mapping[str, Any], None, NotSetType] = NOT_SET) -> list[Record]:
        request = self._n().list_request(record_type, limit, thread_id, user_id, agent_id, metadata_filter)
        return self._engine.list(request)

    async def list_async(self, record_type: str, limit: Union[int, None, NotSetType] = NOT_SET, thread_id: Union[str, None, NotSetType] = NOT_SET, user_id: Union[str, None, NotSetType] = NOT_SET,
                         agent_id: Union[str, None, NotSetType] = NOT_SET, metadata_filter: Union[Mapping[str, Any], None, NotSetType] = NOT_SET) -> builtins.list[Record]:
        request = (await self._na()).list_request(record_type, limit, thread_id, user_id, agent_id, metadata_filter)
        return await self._engine.list_async(request)

    @staticmethod
    def _thread_args(thread_id: Any, last_n: Any) -> tuple[str, Optional[int]]:
        thread_id = check_id(thread_id, "thread_id")
        if last_n is not None:
            last_n = _positive_int(last_n, "last_n", "or None for all messages")
        return thread_id, last_n

    def list_thread_messages(self, thread_id: str, last_n: Optional[int] = None) -> builtins.list[Record]:
        self._n()
        return self._engine.list_thread_messages(*self._thread_args(thread_id, last_n))

    async def list_thread_messages_async(self, thread_id: str, last_n: Optional[int] = None) -> builtins.list[Record]:
        await self._na()
        return await self._engine.list_thread_messages_async(*self._thread_args(thread_id, last_n))

    def search(self, query: Optional[str] = None, k: int = 10, *, query_vector: Any = None, thread_id: Optional[str] = None, user_id: Optional[str] = None, agent_id: Optional[str] = None,
               exact_user_match: bool = False, exact_agent_match: bool = False, exact_thread_match: bool = False, record_types: Optional[Sequence[str]] = None,
               metadata_filter: Optional[Mapping[str, Any]] = None, strategy: Optional[Union[SearchStrategy, str]] = None,
               max_distance: Optional[float] = None) -> builtins.list[tuple[Record, float]]:
        norm = self._n()
        request, to_embed = norm.search_plan(
            query, k, query_vector, thread_id, user_id, agent_id, exact_user_match, exact_agent_match,
            exact_thread_match, record_types, metadata_filter, strategy, max_distance,
        )
        if to_embed is not None:
            request = norm.with_query_vector(request, norm.embed([to_embed], is_query=True)[0])
        elif query_vector is not None:
            request = _made_by(request)
        from .trust import audit  # SC-16.1: the retrieval audit's entry

        guard = audit.guard(self, request) if audit.wanted(self) else None  # SC-16.6: before the read
        results = _as_float(self._engine.search(request))
        if guard is not None:
            audit.after_search(self, request, query, results, guard)
        return results

    async def search_async(self, query: Optional[str] = None, k: int = 10, *, query_vector: Any = None, thread_id: Optional[str] = None, user_id: Optional[str] = None,
                           agent_id: Optional[str] = None, exact_user_match: bool = False, exact_agent_match: bool = False,
                           exact_thread_match: bool = False, record_types: Optional[Sequence[str]] = None, metadata_filter: Optional[Mapping[str, Any]] = None,
                           strategy: Optional[Union[SearchStrategy, str]] = None, max_distance: Optional[float] = None) -> builtins.list[tuple[Record, float]]:
        norm = await self._na()
        request, to_embed = norm.search_plan(
            query, k, query_vector, thread_id, user_id, agent_id, exact_user_match, exact_agent_match,
            exact_thread_match, record_types, metadata_filter, strategy, max_distance,
        )
        if to_embed is not None:
            vec = (await norm.embed_async([to_embed], is_query=True))[0]
            request = norm.with_query_vector(request, vec)
        elif query_vector is not None:
            request = _made_by(request)
        from .trust import audit  # SC-16.1

        # SC-12: inside `async with transaction_async()` the guard reads on the block's worker, as the sync
        # search reads on the block's thread (asyncio.to_thread was refused as "another thread")
        guard = await self._engine._off_loop(audit.guard, self, request) if await audit.wanted_async(self) else None
        results = _as_float(await self._engine.search_async(request))
        if guard is not None:
            await audit.after_search_async(self, request, query, results, guard)
        return results

    # -- update / delete ---------------------------------------------------------------------
    def update(self, record_type: str, record_id: str, *, text: Union[str, None, NotSetType] = NOT_SET, index_text: Union[str, None, NotSetType] = NOT_SET, embedding: Any = NOT_SET,
               metadata: Union[Mapping[str, Any], None, NotSetType] = NOT_SET, timestamp: Union[Union[str, datetime], None, NotSetType] = NOT_SET, ttl_days: Any = NOT_SET, ttl_anchor: Any = NOT_SET) -> int:
        norm = self._n()
        check_reserved(metadata)
        policy = self.get_firewall()
        if policy is not None and (text is not NOT_SET or index_text is not NOT_SET or metadata is not NOT_SET):
            norm.update_plan(record_type, record_id, text, index_text, embedding, metadata, timestamp, ttl_days, ttl_anchor)
            current = self.get(record_type, record_id)
            if current is None and (ttl_days is not NOT_SET or ttl_anchor is not NOT_SET):
                # SC-5.6: a new expiry revives an expired record, which get does not return, and
                # its text went in unscreened under its old verdict (red29): revive it first, in
                # a block, then screen what it will hold; a refusal rolls the revival back
                with self.transaction():
                    if not self.update(record_type, record_id, timestamp=timestamp, ttl_days=ttl_days, ttl_anchor=ttl_anchor):
                        return 0
                    if self.get(record_type, record_id) is None:
                        raise ArgumentError(_still_expired(record_type, record_id))
                    return self.update(record_type, record_id, text=text, index_text=index_text, embedding=embedding,
                                       metadata=metadata, timestamp=timestamp, ttl_days=ttl_days, ttl_anchor=ttl_anchor)
            screened = screen_update(policy, current, text, index_text, metadata)
            text, index_text, metadata = screened.text, screened.index_text, screened.metadata
        fields, texts = norm.update_plan(record_type, record_id, text, index_text, embedding, metadata,
                                         timestamp, ttl_days, ttl_anchor)
        return self._engine.update(norm.finish_update(fields, norm.embed(texts, is_query=False)))

    async def update_async(self, record_type: str, record_id: str, *, text: Union[str, None, NotSetType] = NOT_SET, index_text: Union[str, None, NotSetType] = NOT_SET,
                           embedding: Any = NOT_SET, metadata: Union[Mapping[str, Any], None, NotSetType] = NOT_SET, timestamp: Union[Union[str, datetime], None, NotSetType] = NOT_SET, ttl_days: Any = NOT_SET,
                           ttl_anchor: Any = NOT_SET) -> int:
        norm = await self._na()
        check_reserved(metadata)
        policy = await self.get_firewall_async()
        if policy is not None and (text is not NOT_SET or index_text is not NOT_SET or metadata is not NOT_SET):
            norm.update_plan(record_type, record_id, text, index_text, embedding, metadata, timestamp, ttl_days, ttl_anchor)
            current = await self.get_async(record_type, record_id)
            if current is None and (ttl_days is not NOT_SET or ttl_anchor is not NOT_SET):
                # SC-5.6 / SC-15.5: revive first, in a block, then screen (as update() does)
                async with self.transaction_async():
                    if not await self.update_async(record_type, record_id, timestamp=timestamp, ttl_days=ttl_days,
                                                   ttl_anchor=ttl_anchor):
                        return 0
                    if await self.get_async(record_type, record_id) is None:
                        raise ArgumentError(_still_expired(record_type, record_id))
                    return await self.update_async(record_type, record_id, text=text, index_text=index_text,
                                                   embedding=embedding, metadata=metadata, timestamp=timestamp,
                                                   ttl_days=ttl_days, ttl_anchor=ttl_anchor)
            screened = screen_update(policy, current, text, index_text, metadata)
            text, index_text, metadata = screened.text, screened.index_text, screened.metadata
        fields, texts = norm.update_plan(record_type, record_id, text, index_text, embedding, metadata,
                                         timestamp, ttl_days, ttl_anchor)
        vectors = await norm.embed_async(texts, is_query=False)
        return await self._engine.update_async(norm.finish_update(fields, vectors))

    @staticmethod
    def _delete_args(record_type: Any, record_id: Any, cascade: Any) -> tuple[str, str, bool]:
        record_type = check_record_type(record_type)
        record_id = check_id(record_id, "record_id")
        if not isinstance(cascade, bool):
            raise ArgumentTypeError(f"cascade must be a bool, got {cascade!r}")
        if cascade and record_type not in PROFILE_TYPES and record_type != "thread":
            raise ArgumentError(
                f"cascade=True applies to user_profile, agent_profile and thread records, not {record_type!r} (SC-8.2)"
            )
        return record_type, record_id, cascade

    def delete(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        self._n()
        record_type, record_id, cascade = self._delete_args(record_type, record_id, cascade)
        if not (cascade and record_type in PROFILE_TYPES):
            return self._engine.delete(record_type, record_id, cascade)
        # SC-13.3 / SC-13.4: a profile's cascade is an erasure, and it leaves forget's proof
        # (SC-14.1-14.4): its receipt in the erasure log, its tombstone written in the
        # cascade's transaction (KC-3.10: a knowledge write in flight refuses), the
        # verification scan after the commit. It returns what delete returns (1 or 0).
        from .trust import erasure

        self._engine.check_profile_cascade(record_type, record_id)  # a refusal writes nothing, not even the salt
        plan = erasure.prepare(self, *self._cascade_subject(record_type, record_id))
        if plan is None:  # an engine that keeps no erasure log (an asynchronous Oracle pool)
            return self._engine.delete(record_type, record_id, cascade)
        count, rows = self._engine.erase_profile(record_type, record_id, plan.tombstone())
        if not self._engine.in_transaction:  # in a block nothing is committed yet: no scan, the receipt stays pending
            erasure.finish(self, plan, rows)
        return count

    async def delete_async(self, record_type: str, record_id: str, cascade: bool = False) -> int:
        await self._na()
        record_type, record_id, cascade = self._delete_args(record_type, record_id, cascade)
        if not (cascade and record_type in PROFILE_TYPES):
            return await self._engine.delete_async(record_type, record_id, cascade)
        from .trust import erasure  # SC-14 for a profile cascade, as delete() does

        await self._engine._off_loop(self._engine.check_profile_cascade, record_type, record_id)
        plan = await self._engine._off_loop(erasure.prepare, self, *self._cascade_subject(record_type, record_id))
        if plan is None:
            return await self._engine.delete_async(record_type, record_id, cascade)
        count, rows = await self._engine.erase_profile_async(record_type, record_id, plan.tombstone())
        if not self._engine.in_transaction:
            await self._engine._off_loop(erasure.finish, self, plan, rows)
        return count

    @staticmethod
    def _cascade_subject(record_type: str, record_id: str) -> tuple[str, str]:
        return ("user" if record_type == "user_profile" else "agent"), record_id

    def delete_thread(self, thread_id: str) -> int:
        self._n()
        return self._engine.delete_thread(check_id(thread_id, "thread_id"))

    async def delete_thread_async(self, thread_id: str) -> int:
        await self._na()
        return await self._engine.delete_thread_async(check_id(thread_id, "thread_id"))

    def purge_expired(self) -> int:
        self._n()
        purged = self._engine.purge_expired()
        from .trust import audit  # SC-16.5: the audit's own retention

        if audit.wanted(self):
            audit.purge(self)
        return purged

    async def purge_expired_async(self) -> int:
        await self._na()
        purged = await self._engine.purge_expired_async()
        from .trust import audit  # SC-16.5

        if await audit.wanted_async(self):
            await self._engine._off_loop(audit.purge, self)  # in a block: its worker (SC-12)
        return purged

    @staticmethod
    def _forget_request(user_id: Any, agent_id: Any, names: Any) -> ForgetRequest:
        if (user_id is None) == (agent_id is None):
            raise ArgumentError("forget needs exactly one of user_id or agent_id")
        if names is not None:
            # SC-13.3 / KC-3.10: an actor is erased by its id, never by a name (a name may be
            # another person's or another tenant's); refused rather than silently ignored.
            raise ArgumentError(
                "forget no longer matches names: a user or agent is erased by its id only (SC-13.3, "
                "KC-3.10: a name may belong to another person or tenant); drop names=")
        if agent_id is not None:
            return ForgetRequest(agent_id=check_id(agent_id, "agent_id"))
        user_id = check_id(user_id, "user_id")
        return ForgetRequest(user_id=user_id, names=(user_id,))

    def forget(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None, names: Optional[Sequence[str]] = None) -> dict[str, int]:
        """SC-8.6: erase a user (``user_id``) or an agent (``agent_id``) everywhere, in one
        transaction, by its id only (SC-13); returns the rows erased per table. ``names`` is
        refused (``ValueError``): names are no longer matched."""
        self._n()
        from .trust import erasure  # SC-14: the receipt (salted subject hash, verification scan, log row)

        request = self._forget_request(user_id, agent_id, names)
        self._engine.check_forget()  # a refused forget writes nothing, not the salt either
        plan = erasure.prepare(self, *self._forget_subject(request))
        # SC-16.6: the engine erases the actor's audit entries in the erasure's transaction
        counts = self._engine.forget(dataclasses.replace(request, tombstone=plan.tombstone() if plan else None))
        return erasure.finish(self, plan, counts)

    async def forget_async(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None, names: Optional[Sequence[str]] = None) -> dict[str, int]:
        await self._na()
        from .trust import erasure

        request = self._forget_request(user_id, agent_id, names)
        # on the engine's worker (a block's, SC-12), as delete_async's cascade: in a block forget is
        # refused with forget()'s own reason, not as a call from "another thread", before
        # anything (the salt) is written
        await self._engine._off_loop(self._engine.check_forget)
        plan = await self._engine._off_loop(erasure.prepare, self, *self._forget_subject(request))
        counts = await self._engine.forget_async(dataclasses.replace(request, tombstone=plan.tombstone() if plan else None))
        return await self._engine._off_loop(erasure.finish, self, plan, counts)

    @staticmethod
    def _forget_subject(request: ForgetRequest) -> tuple[str, str]:
        return ("user", request.user_id) if request.user_id is not None else ("agent", str(request.agent_id))

    def sync_search_index(self) -> None:
        self._n()
        self._engine.sync_search_index()

    async def sync_search_index_async(self) -> None:
        await self._na()
        await self._engine.sync_search_index_async()

    @property
    def closed(self) -> bool:
        """True once ``close()`` / ``close_async()`` ran; every operation then raises."""
        return self._closed

    @property
    def async_only(self) -> bool:
        """True for a store opened on python-oracledb's asyncio (an async pool or connection):
        only the ``*_async`` methods work on it."""
        return bool(self._engine.async_only)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        self._n()
        with self._engine.transaction():
            yield

    @contextlib.asynccontextmanager
    async def transaction_async(self) -> AsyncIterator[None]:
        await self._na()
        async with self._engine.transaction_async():
            yield

    def close(self) -> None:
        if not self._closed:
            self._engine.close()
            self._closed = True

    async def close_async(self) -> None:
        if not self._closed:
            await self._engine.close_async()
            self._closed = True

    def __repr__(self) -> str:
        s = self._requested
        return f"{type(self).__name__}(memory_store_id={s.memory_store_id!r}, search_strategy={s.search_strategy.value!r})"


_READ_HINTS = {"user_ids": "user_id", "agent_ids": "agent_id", "thread_ids": "thread_id", "user": "user_id",
               "agent": "agent_id", "thread": "thread_id", "filters": "metadata_filter",
               "filter": "metadata_filter", "where": "metadata_filter", "metadata": "metadata_filter"}
_SEARCH_HINTS = {**_READ_HINTS, "limit": "k", "top_k": "k", "n_results": "k", "record_type": "record_types",
                 "text": "query", "query_text": "query"}
_LIST_HINTS = {**_READ_HINTS, "k": "limit", "top_k": "limit"}
#: mem0 addresses a memory by its id alone (``get(memory_id)``, ``update(memory_id, data)``);
#: here a record's address is its type and id. Key ``*positional``: the note for a call whose
#: positional arguments do not fit.
_ADDRESS_HINTS = {"memory_id": "record_id", "id": "record_id", "type": "record_type"}
_GET_HINTS = {**_ADDRESS_HINTS, "*positional": "get takes the record's type and id: get('memory', record_id)"}
_DELETE_HINTS = {**_ADDRESS_HINTS, "*positional": "delete takes the record's type and id: delete('memory', record_id)"}
_UPDATE_HINTS = {**_ADDRESS_HINTS, "data": "text", "content": "text", "memory": "text", "metadatas": "metadata",
                 "*positional": "update takes the record's type and id, then keyword arguments: "
                                "update('memory', record_id, text=...)"}
#: per method: argument names other memory libraries use -> this API's name (for the hint)
_CALL_HINTS = {"search": _SEARCH_HINTS, "search_async": _SEARCH_HINTS, "list": _LIST_HINTS, "list_async": _LIST_HINTS,
               "get": _GET_HINTS, "get_async": _GET_HINTS, "delete": _DELETE_HINTS, "delete_async": _DELETE_HINTS,
               "update": _UPDATE_HINTS, "update_async": _UPDATE_HINTS}


def _hinted(exc: TypeError, kwargs: Mapping[str, Any], hints: Mapping[str, str]) -> Optional[TypeError]:
    """``exc`` (raised by Python binding a call's arguments) with "did you mean" for the names
    in ``hints``, or the ``*positional`` note when the positional arguments do not fit; None
    when nothing applies."""
    meant = [f"{hints[n]}=" for n in kwargs if n in hints and not n.startswith("*") and f"'{n}'" in str(exc)]
    if meant:
        return TypeError(f"{exc} (did you mean {', '.join(meant)}?)")
    if "*positional" in hints and "positional argument" in str(exc):
        return TypeError(f"{exc} ({hints['*positional']})")
    return None


def _with_call_hints(function: Any, hints: Mapping[str, str]) -> Any:
    """``function`` with a hint added to its argument-binding TypeErrors (not to TypeErrors from
    inside it: those have a deeper traceback)."""
    if inspect.iscoroutinefunction(function):
        @functools.wraps(function)
        async def hinted_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await function(*args, **kwargs)
            except TypeError as exc:
                better = _hinted(exc, kwargs, hints) if exc.__traceback__ is not None and exc.__traceback__.tb_next is None else None
                if better is None:
                    raise
                raise better from None
        return hinted_async

    @functools.wraps(function)
    def hinted(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except TypeError as exc:
            better = _hinted(exc, kwargs, hints) if exc.__traceback__ is not None and exc.__traceback__.tb_next is None else None
            if better is None:
                raise
            raise better from None
    return hinted


def _still_expired(record_type: str, record_id: str) -> str:
    return (f"this update leaves {record_type} {record_id!r} expired (its new expiry is already past), and under the "
            "store's firewall the text and metadata of a record nobody can read are not changed; nothing was "
            "written. Give an expiry that makes it visible (e.g. ttl_days=None), or update only its expiry")


def _made_by(request: SearchRequest) -> SearchRequest:
    """A search by the caller's ``query_vector`` inside ``vectors_made_by(identity)``: the
    request carries that identity (``SearchRequest.vectors_of``; rek47)."""
    maker = vectors_maker()
    return request if maker is None else dataclasses.replace(request, vectors_of=maker)


def _as_float(results: builtins.list[tuple[Record, float]]) -> builtins.list[tuple[Record, float]]:
    return [(record, float(distance)) for record, distance in results]


def _check_embedder(embedder: Any) -> Any:
    if embedder is None:
        return None
    missing = [name for name in ("embed", "embedding_dimension") if not hasattr(embedder, name)]
    if missing:
        hint = ""
        if isinstance(embedder, str):  # a model name or path, as some libraries take it
            hint = (f"; for a local ONNX model pass embedder=ONNXEmbedder({embedder!r}) (oramem.embedders), "
                    "or leave embedder out for the default model")
        raise ArgumentTypeError(
            f"embedder must implement IEmbedder (embed, embedding_dimension); {type(embedder).__name__} lacks "
            f"{', '.join(missing)}{hint}"
        )
    return embedder


#: the catalog of an existing file could not be read (not a database, damaged, no access)
_UNREADABLE: dict[str, Any] = {}


def _catalog_row(path: str, memory_store_id: Any) -> Optional[dict[str, Any]]:
    """The catalog row of an existing SQLite store (None: new or in memory; ``_UNREADABLE``:
    the engine's open reports why; a bad store id is left for the normal checks)."""
    import os

    from .sqlite import admin

    if path == ":memory:" or not os.path.isfile(path):
        return None
    try:
        store_id = DEFAULT_STORE_ID if memory_store_id is NOT_SET else validate_store_id(memory_store_id)
    except (TypeError, ValueError):
        return None
    try:
        return admin.list_stores(path).get(store_id)
    except StoreError:
        return _UNREADABLE


def _missing_and_not_created(path: str, schema_policy: Any, read_only: Optional[bool]) -> bool:
    """One clear error for a SQLite path that cannot be opened, before an embedder is chosen
    (for a new store that may mean downloading the default model): a directory, or a new file
    in a directory that does not exist. True when the file does not exist and this open will
    not create it (``REQUIRE_EXISTING``, ``read_only=True``: the engine raises
    ``StoreNotFound``). Bad policies are left for the normal checks."""
    import os

    if path in ("", ":memory:") or path.startswith("file::memory:"):
        return False
    if os.path.isdir(path):
        raise ArgumentError(
            f"{path!r} is a directory; give a database file path, e.g. {os.path.join(path, 'oramem.db')!r}"
        )
    if os.path.exists(path):
        return False
    try:
        creating = read_only is not True and SchemaPolicy.coerce(schema_policy, "schema_policy") \
            is not SchemaPolicy.REQUIRE_EXISTING
    except (TypeError, ValueError):
        return False
    if not creating:
        return True
    where = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(where):
        raise StoreError(f"cannot create {path}: directory {where} does not exist (create it first, or give another path)")
    return False


def _implicit_embedder(row: Optional[dict[str, Any]], search_strategy: Any) -> Any:
    """The embedder of a SQLite store opened with neither ``embedder`` nor ``vector_dim``:
    for an existing store (``row``), the one its recorded identity names when it can be
    rebuilt here (else None: keyword search and reads need none); for a new vector-capable
    store, the semantic default (``oramem.embedders.defaults``). Bad arguments are left for
    the normal checks."""
    from .embedders.defaults import default_embedder, embedder_for
    from .embedders.identity import decode_identity

    if row is not None:
        return embedder_for(decode_identity(row.get("embedder")))
    try:
        strategy = SearchStrategy.coerce(search_strategy, "search_strategy")
    except (TypeError, ValueError):
        return None
    if strategy is SearchStrategy.KEYWORD:
        return None
    return default_embedder()


def _is_db_embedder(embedder: Any) -> bool:
    from .oracle.embedder import OracleDBEmbedder

    return isinstance(embedder, OracleDBEmbedder)


class SQLiteMemoryStore(OracleMemoryStore):
    """The embedded engine: one SQLite file (or ``":memory:"``) holding any number of
    stores. Creates what it needs by default (``CREATE_IF_NECESSARY``).

    ``clock`` (keyword-only, optional) is a zero-argument callable returning an aware UTC
    ``datetime``: the store's notion of "now" for insert times, expiry and purge. Tests
    inject one to exercise TTL without sleeping.

    ``approximate_search`` (keyword-only, optional): an :class:`oramem.ann.AnnConfig` to
    answer top-k vector searches from an in-process HNSW index once the store holds
    ``min_rows`` vectors (needs ``pip install 'oramem[ann]'``). Candidates come from the
    index, distances are still exact; the default ``None`` is exact search.

    ``vector_sidecar`` (keyword-only, default True): keep a memory-mapped snapshot of the
    store's vectors next to the database file (``<file>.<store id>.oramem-vectors``), so a
    fresh process's first search maps it instead of re-reading every vector from SQLite.
    It is validated against the catalog's change counter on every load and rebuilt when
    stale or damaged (docs/sqlite-vector-sidecar.md); False never reads or writes it.

    ``search_strategy``: what the store is opened (and, when new, created) for: ``"vector"``,
    ``"keyword"`` or ``"hybrid"``. Omitted, an existing store opens with the strategy it was
    created with (as the CLI opens it) and a new one is VECTOR.

    With neither ``embedder`` nor ``vector_dim``, an existing store reuses the embedder its
    catalog records when it can be rebuilt here (else none: keyword search and reads need
    none), and a new vector store gets the semantic default (docs/embeddings.md). A file that
    is not a SQLite database raises ``StoreError`` saying so.

    ``keyword_language`` (keyword-only, optional): how KEYWORD/HYBRID stores index text:
    ``"english"`` (the default for a new store: porter stemming, English stopwords dropped
    from queries) or ``"none"`` (no stemming, no stopwords). Persisted with the store; an
    open that names another one is a ``StoreSettingsMismatch``; ``None`` adopts the stored one.

    ``hybrid`` (keyword-only, optional): an :class:`oramem.sqlite.HybridConfig` with the weights,
    RRF constant and depth of HYBRID fusion for this store object (not persisted).

    ``read_only`` (keyword-only): ``True`` opens an existing file read-only (``mode=ro``; reads
    only, nothing created, upgraded or purged; writes raise ``StoreError``); ``None`` (the
    default) does so when the existing file or its directory is not writable by this process;
    ``False`` always opens it writable. A WAL file in a read-only directory is opened
    ``immutable`` (nobody may write it meanwhile). Expired records are not purged on a
    read-only open; reads skip them as always.
    """

    def __init__(
        self,
        path: Any = ":memory:",
        *,
        embedder: Any = None,
        schema_policy: Any = SchemaPolicy.CREATE_IF_NECESSARY,
        vector_dim: Optional[int] = None,
        memory_store_id: Any = NOT_SET,
        search_strategy: Any = NOT_SET,
        search_index_sync: Any = NOT_SET,
        memory_retention_config: Any = NOT_SET,
        clock: Optional[Callable[[], datetime]] = None,
        approximate_search: Any = None,
        vector_sidecar: bool = True,
        keyword_language: Optional[str] = None,
        hybrid: Any = None,
        read_only: Optional[bool] = None,
    ) -> None:
        import os

        from .sqlite import SQLiteEngine

        if not isinstance(path, (str, os.PathLike)):
            raise ArgumentTypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        if clock is not None and not callable(clock):
            raise ArgumentTypeError("clock must be a zero-argument callable returning an aware UTC datetime")
        missing = _missing_and_not_created(os.fspath(path), schema_policy, read_only)
        implicit = embedder is None and vector_dim is None and not missing
        row = _catalog_row(os.fspath(path), memory_store_id) if (implicit or search_strategy is NOT_SET) else None
        if search_strategy is NOT_SET:  # an existing store opens as it is (the CLI does the same)
            search_strategy = SearchStrategy(row["capability"]) if row else SearchStrategy.VECTOR
        if implicit and row is not _UNREADABLE:
            embedder = _implicit_embedder(row, search_strategy)
        engine = SQLiteEngine(
            os.fspath(path), clock=clock, approximate_search=approximate_search, vector_sidecar=vector_sidecar,
            keyword_language=keyword_language, hybrid=hybrid, read_only=read_only,
        )
        try:
            super().__init__(
                engine,
                embedder=embedder,
                schema_policy=schema_policy,
                vector_dim=vector_dim,
                memory_store_id=memory_store_id,
                search_strategy=search_strategy,
                search_index_sync=search_index_sync,
                memory_retention_config=memory_retention_config,
            )
        except sqlite3.DatabaseError as exc:
            engine.close()
            low = str(exc).lower()
            if "not a database" not in low and "malformed" not in low and "unable to open" not in low:
                raise
            from .sqlite.admin import explain_error

            raise StoreError(explain_error(os.fspath(path), exc)) from None
        except BaseException:
            engine.close()
            raise


class OracleDBMemoryStore(OracleMemoryStore):
    """The Oracle engine: a thin driver over the ``oramem_*`` PL/SQL packages.

    Two colours, picked by the factory you call, as in python-oracledb (``oracledb.connect`` /
    ``connect_async``, ``create_pool`` / ``create_pool_async``):

    - ``OracleDBMemoryStore(embedder, pool, ...)`` (or its alias ``OracleDBMemoryStore.connect``)
      takes a pool or connection from ``oracledb.create_pool()`` / ``oracledb.connect()``, opens
      the store at once and serves the sync methods;
    - ``store = await OracleDBMemoryStore.connect_async(embedder, pool, ...)`` takes one from
      ``oracledb.create_pool_async()`` / ``oracledb.connect_async()``, opens the store before it
      returns and serves the ``*_async`` methods (native asyncio, no threads).

    A pool of the other colour is a ``TypeError`` naming the factory to call.
    ``table_name_prefix`` is the deprecated name of ``memory_store_id``.

    Convenience: instead of a pool, ``dsn=``, ``user=`` and ``password=`` (keyword-only) make
    the store create a small pool (thin mode, 1..4 connections: ``oracledb.create_pool``, or
    ``create_pool_async`` for ``connect_async``) that it owns and closes in ``close()`` /
    ``close_async()`` (an owned async pool only in ``close_async()``). Give a pool of your own
    when it is shared (e.g. with :class:`OracleDBEmbedder`).

    ``hybrid`` (keyword-only, optional): an :class:`oramem.sqlite.HybridConfig` for HYBRID
    search, the same weighted reciprocal-rank fusion as :class:`SQLiteMemoryStore` (run in
    PL/SQL); a ``depth`` over 10,000 is a ``CapabilityError`` (docs/oracle-search.md).

    ``keyword_language`` (keyword-only, optional): ``"english"`` (the default for a new store:
    English stemming, English stopwords dropped from queries) or ``"none"``, as on SQLite:
    persisted with the store (its Oracle Text index is built for it); an open that names
    another one is a ``StoreSettingsMismatch``; ``None`` adopts the stored one
    (docs/oracle-search.md).
    """

    def __init__(
        self,
        embedder: Any,
        pool: Any = None,
        schema_policy: Any = SchemaPolicy.REQUIRE_EXISTING,
        vector_dim: Optional[int] = None,
        table_name_prefix: Any = NOT_SET,
        search_strategy: Any = SearchStrategy.VECTOR,
        search_index_sync: Any = NOT_SET,
        memory_retention_config: Any = NOT_SET,
        memory_store_id: Any = NOT_SET,
        *,
        dsn: Optional[str] = None,
        user: Optional[str] = None,
        password: Optional[str] = None,
        hybrid: Any = None,
        keyword_language: Optional[str] = None,
    ) -> None:
        self._setup(
            False, embedder, pool, schema_policy, vector_dim, table_name_prefix, search_strategy, search_index_sync,
            memory_retention_config, memory_store_id, dsn, user, password, hybrid, keyword_language,
        )

    @classmethod
    def connect(
        cls,
        embedder: Any,
        pool: Any = None,
        schema_policy: Any = SchemaPolicy.REQUIRE_EXISTING,
        vector_dim: Optional[int] = None,
        table_name_prefix: Any = NOT_SET,
        search_strategy: Any = SearchStrategy.VECTOR,
        search_index_sync: Any = NOT_SET,
        memory_retention_config: Any = NOT_SET,
        memory_store_id: Any = NOT_SET,
        *,
        dsn: Optional[str] = None,
        user: Optional[str] = None,
        password: Optional[str] = None,
        hybrid: Any = None,
        keyword_language: Optional[str] = None,
    ) -> "OracleDBMemoryStore":
        """The sync store over a pool or connection from ``oracledb.create_pool()`` /
        ``oracledb.connect()`` (or one it creates from ``dsn=``): the constructor, named as
        the twin of :meth:`connect_async`."""
        return cls(
            embedder, pool, schema_policy, vector_dim, table_name_prefix, search_strategy, search_index_sync,
            memory_retention_config, memory_store_id, dsn=dsn, user=user, password=password, hybrid=hybrid,
            keyword_language=keyword_language,
        )

    @classmethod
    async def connect_async(
        cls,
        embedder: Any,
        pool: Any = None,
        schema_policy: Any = SchemaPolicy.REQUIRE_EXISTING,
        vector_dim: Optional[int] = None,
        table_name_prefix: Any = NOT_SET,
        search_strategy: Any = SearchStrategy.VECTOR,
        search_index_sync: Any = NOT_SET,
        memory_retention_config: Any = NOT_SET,
        memory_store_id: Any = NOT_SET,
        *,
        dsn: Optional[str] = None,
        user: Optional[str] = None,
        password: Optional[str] = None,
        hybrid: Any = None,
        keyword_language: Optional[str] = None,
    ) -> "OracleDBMemoryStore":
        """The async store over a pool or connection from ``oracledb.create_pool_async()`` /
        ``oracledb.connect_async()`` (or an async pool it creates from ``dsn=`` and closes in
        ``close_async()``), opened before it returns: ``store = await
        OracleDBMemoryStore.connect_async(embedder, pool, ...)``."""
        store = cls.__new__(cls)
        store._owned_pool = None
        try:
            store._setup(
                True, embedder, pool, schema_policy, vector_dim, table_name_prefix, search_strategy,
                search_index_sync, memory_retention_config, memory_store_id, dsn, user, password, hybrid,
                keyword_language,
            )
        except BaseException:
            await store._close_owned_pool_async()
            raise
        try:
            await store._na()
        except BaseException:
            await store.close_async()
            raise
        return store

    def _setup(
        self, is_async: bool, embedder: Any, pool: Any, schema_policy: Any, vector_dim: Optional[int],
        table_name_prefix: Any, search_strategy: Any, search_index_sync: Any, memory_retention_config: Any,
        memory_store_id: Any, dsn: Optional[str], user: Optional[str], password: Optional[str], hybrid: Any,
        keyword_language: Optional[str],
    ) -> None:
        from .oracle import AsyncOracleEngine, SyncOracleEngine

        self._owned_pool: Any = None
        self._owned_pool_async: bool = is_async
        pool = self._pool_argument(pool, dsn, user, password, is_async)
        if table_name_prefix is not NOT_SET:
            if memory_store_id is not NOT_SET:
                raise ArgumentError("pass memory_store_id only; table_name_prefix is its deprecated alias (SC-10.1)")
            warnings.warn(
                "table_name_prefix is deprecated; use memory_store_id", DeprecationWarning, stacklevel=3
            )
            memory_store_id = table_name_prefix
        # A HYBRID store embeds queries in the database with the embedder's ONNX model.
        model = getattr(embedder, "model_name", None) if _is_db_embedder(embedder) else None
        engine_cls = AsyncOracleEngine if is_async else SyncOracleEngine
        try:
            super().__init__(
                engine_cls(pool, embedding_model=model, hybrid=hybrid, keyword_language=keyword_language),
                embedder=embedder,
                schema_policy=schema_policy,
                vector_dim=vector_dim,
                memory_store_id=memory_store_id,
                search_strategy=search_strategy,
                search_index_sync=search_index_sync,
                memory_retention_config=memory_retention_config,
            )
        except BaseException:
            if not is_async:  # an owned async pool is closed by connect_async's close_async()
                self._close_owned_pool()
            raise

    def _pool_argument(self, pool: Any, dsn: Any, user: Any, password: Any, is_async: bool) -> Any:
        import oracledb

        given = {k: v for k, v in (("dsn", dsn), ("user", user), ("password", password)) if v is not None}
        factory = "OracleDBMemoryStore.connect_async" if is_async else "OracleDBMemoryStore"
        if pool is not None:
            if given:
                raise ArgumentError(f"pass either a pool or dsn/user/password, not both (got pool and {', '.join(given)})")
            if isinstance(pool, str):
                raise ArgumentTypeError(
                    "pool must be a python-oracledb pool or connection, not a string: for a DSN pass "
                    f"{factory}(embedder, dsn='host:1521/service', user='...', password='...')"
                )
            async_source = isinstance(pool, (oracledb.AsyncConnectionPool, oracledb.AsyncConnection))
            sync_source = isinstance(pool, (oracledb.ConnectionPool, oracledb.Connection))
            if async_source and not is_async:
                raise ArgumentTypeError(
                    f"OracleDBMemoryStore(...) was given an {type(pool).__name__} (python-oracledb's async colour, "
                    "from create_pool_async() / connect_async()): open the store with "
                    "`store = await OracleDBMemoryStore.connect_async(embedder, pool, ...)`"
                )
            if sync_source and is_async:
                raise ArgumentTypeError(
                    f"OracleDBMemoryStore.connect_async(...) was given an {type(pool).__name__} (python-oracledb's "
                    "sync colour, from create_pool() / connect()): open the store with "
                    "`OracleDBMemoryStore(embedder, pool, ...)`, or pass a pool from oracledb.create_pool_async()"
                )
            return pool
        missing = [k for k in ("dsn", "user", "password") if k not in given]
        if missing:
            raise ArgumentTypeError(
                f"{factory} needs a pool (oracledb.{'create_pool_async' if is_async else 'create_pool'}(...)) or "
                f"dsn=, user= and password=; missing {', '.join(missing)}"
            )
        for k, v in given.items():
            if not isinstance(v, str) or not v:
                raise ArgumentTypeError(f"{k} must be a non-empty str")
        create = oracledb.create_pool_async if is_async else oracledb.create_pool
        self._owned_pool = create(user=user, password=password, dsn=dsn, min=1, max=4, increment=1)
        return self._owned_pool

    def _close_owned_pool(self) -> None:
        pool, self._owned_pool = self._owned_pool, None
        if pool is not None:
            pool.close()

    def close(self) -> None:
        if self._engine.in_transaction:
            raise StoreError("close() inside store.transaction(): leave the block first (it commits or rolls back)")
        if self._owned_pool is not None and self._owned_pool_async:
            raise ArgumentTypeError(
                "this store created its own async pool (connect_async with dsn=): close it with "
                "`await store.close_async()`; nothing was closed"
            )
        try:
            super().close()
        finally:
            self._close_owned_pool()

    async def close_async(self) -> None:
        if self._engine.in_transaction:
            raise StoreError(
                "close_async() inside store.transaction_async(): leave the block first (it commits or rolls back)"
            )
        try:
            await super().close_async()
        finally:
            await self._close_owned_pool_async()

    async def _close_owned_pool_async(self) -> None:
        pool, self._owned_pool = self._owned_pool, None
        if pool is not None:
            if self._owned_pool_async:
                await pool.close()
            else:  # a sync pool's close() does network I/O: off the event loop
                await asyncio.to_thread(pool.close)
