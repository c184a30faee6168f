"""The seam between the store API and a storage engine.

:class:`oramem.OracleMemoryStore` validates and normalises user arguments and then calls
exactly one :class:`Engine` method per operation with a request from
:mod:`oramem.requests`. An engine owns persistence, transactions and everything that
needs stored state. Each method is one transaction: on any error nothing is written.

Engines provide sync methods and ``*_async`` twins. The default async twins run the sync
method in a worker thread (right for SQLite); the Oracle engine overrides them with
python-oracledb's native asyncio.
"""

from __future__ import annotations

import abc
import asyncio
import builtins
from typing import Any, Callable, Optional, Union

import numpy as np

from .errors import CapabilityError
from .requests import AddRequest, DeletionEvent, ErasureReport, ForgetRequest, ListRequest, SearchRequest, StoreSettings, UpdateRequest
from .types import Record, SchemaPolicy

__all__ = ["Engine", "DeletionHook", "DeletionHookSpec"]

#: A deletion hook receives the engine-specific transactional handle (the sqlite3
#: connection for SQLite) and the event; it runs inside the deleting transaction and may
#: raise to abort the delete. For a ``forget`` event it returns an :class:`ErasureReport` of
#: what it erased (other events: None).
DeletionHook = Callable[[Any, DeletionEvent], Optional[ErasureReport]]
#: What ``register_deletion_hook`` takes: a :data:`DeletionHook` (SQLite) or the name of a
#: PL/SQL procedure (Oracle); each engine refuses the other kind.
DeletionHookSpec = Union[DeletionHook, str]


class Engine(abc.ABC):
    """Persistence for one store (one ``memory_store_id``)."""

    #: True for engines that can only be driven through the ``*_async`` methods (an
    #: async Oracle pool); the store then opens on its first async call.
    async_only: bool = False

    # -- lifecycle ---------------------------------------------------------------------
    @abc.abstractmethod
    def open(self, settings: StoreSettings, policy: SchemaPolicy) -> StoreSettings:
        """Apply the schema policy (SC-10.2) under a lock (SC-10.3) and return the
        settings in force. Raises a ``SchemaError`` subclass naming the policy to use
        when the policy forbids what is needed, ``StoreSettingsMismatch`` naming the
        setting when the persisted settings differ (SC-10.4). ``settings.vector_dim``
        may be None when an existing store supplies it."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections. Idempotent."""

    # -- writes --------------------------------------------------------------------------
    @abc.abstractmethod
    def add(self, request: AddRequest) -> list[str]:
        """Insert every record and its retrieval rows in one transaction; create threads
        implicitly (SC-2.3). Duplicate ids against the store are a ``ValueError`` and
        nothing is stored (SC-4.3); an existing profile id likewise (SC-2.4)."""

    @abc.abstractmethod
    def update(self, request: UpdateRequest) -> int:
        """Apply an update; 1 when an unexpired record was updated, else 0 (SC-7)."""

    @abc.abstractmethod
    def delete(self, record_type: str, record_id: str, cascade: bool) -> int:
        """SC-8.1/8.2; runs deletion hooks in the same transaction."""

    @abc.abstractmethod
    def delete_thread(self, thread_id: str) -> int:
        """SC-8.3; runs deletion hooks in the same transaction."""

    @abc.abstractmethod
    def purge_expired(self) -> int:
        """Physically remove expired records and their retrieval rows (SC-5.5)."""

    @abc.abstractmethod
    def sync_search_index(self) -> None:
        """Bring keyword/hybrid indexes up to date (SC-10.5)."""

    def forget(self, request: ForgetRequest) -> dict[str, int]:
        """Erase an actor (SC-8.6) in one transaction, deletion hooks included; rows
        erased per table. Engines without it raise ``CapabilityError`` before any write."""
        raise CapabilityError(
            f"forget (erasing a user or agent everywhere) is not supported by the {type(self).__name__} in this "
            "version; delete the profile with cascade=True and the knowledge with KnowledgeMemory.delete_all"
        )

    # -- reads ---------------------------------------------------------------------------
    @abc.abstractmethod
    def get(self, record_type: str, record_id: str) -> Optional[Record]:
        """SC-3.2."""

    @abc.abstractmethod
    def list(self, request: ListRequest) -> list[Record]:
        """SC-3.3."""

    @abc.abstractmethod
    def list_thread_messages(self, thread_id: str, last_n: Optional[int]) -> builtins.list[Record]:
        """SC-3.4."""

    @abc.abstractmethod
    def search(self, request: SearchRequest) -> builtins.list[tuple[Record, float]]:
        """SC-6: filters before the top-k cut, ascending distance, ties by type then id."""

    # -- knowledge-layer seam ------------------------------------------------------------
    @abc.abstractmethod
    def register_deletion_hook(self, hook: DeletionHookSpec) -> None:
        """SC-8.5: call ``hook`` inside every delete/cascade/purge transaction."""

    def embed_texts(self, texts: builtins.list[str], is_query: bool) -> Optional[np.ndarray]:
        """Engines with an in-database embedder may embed here; default: not supported."""
        return None

    # -- async twins ---------------------------------------------------------------------
    async def open_async(self, settings: StoreSettings, policy: SchemaPolicy) -> StoreSettings:
        return await asyncio.to_thread(self.open, settings, policy)

    async def close_async(self) -> None:
        await asyncio.to_thread(self.close)

    async def add_async(self, request: AddRequest) -> builtins.list[str]:
        return await asyncio.to_thread(self.add, request)

    async def update_async(self, request: UpdateRequest) -> int:
        return await asyncio.to_thread(self.update, request)

    async def delete_async(self, record_type: str, record_id: str, cascade: bool) -> int:
        return await asyncio.to_thread(self.delete, record_type, record_id, cascade)

    async def delete_thread_async(self, thread_id: str) -> int:
        return await asyncio.to_thread(self.delete_thread, thread_id)

    async def purge_expired_async(self) -> int:
        return await asyncio.to_thread(self.purge_expired)

    async def sync_search_index_async(self) -> None:
        await asyncio.to_thread(self.sync_search_index)

    async def forget_async(self, request: ForgetRequest) -> dict[str, int]:
        return await asyncio.to_thread(self.forget, request)

    async def get_async(self, record_type: str, record_id: str) -> Optional[Record]:
        return await asyncio.to_thread(self.get, record_type, record_id)

    async def list_async(self, request: ListRequest) -> builtins.list[Record]:
        return await asyncio.to_thread(self.list, request)

    async def list_thread_messages_async(self, thread_id: str, last_n: Optional[int]) -> builtins.list[Record]:
        return await asyncio.to_thread(self.list_thread_messages, thread_id, last_n)

    async def search_async(self, request: SearchRequest) -> builtins.list[tuple[Record, float]]:
        return await asyncio.to_thread(self.search, request)
