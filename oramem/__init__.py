"""oramem: long-term memory for AI agents, native to Oracle AI Database.

The record store API (STORE_CONTRACT §1): ``SQLiteMemoryStore`` is the embedded,
zero-setup engine; ``OracleDBMemoryStore`` drives the ``oramem_*`` PL/SQL packages.
"""

from typing import Any as _Any

from .embedders.base import IEmbedder
from .errors import (
    ArgumentError,
    ArgumentTypeError,
    CapabilityError,
    DuplicateRecordError,
    Error,
    SchemaError,
    StoreBusy,
    StoreClosed,
    StoreError,
    StoreNotFound,
    StoreSettingsMismatch,
)
from .store import IMemoryStore, OracleDBMemoryStore, OracleMemoryStore, SQLiteMemoryStore
from .batches import PendingRecordBatch
from .types import (
    MAX_LIST_LIMIT,
    NOT_SET,
    MemoryRetentionConfig,
    MessageRecord,
    Record,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
    TimeToLiveAnchor,
)

__version__ = "0.1.0"

__all__ = [
    "IMemoryStore",
    "OracleMemoryStore",
    "OracleDBMemoryStore",
    "SQLiteMemoryStore",
    "Record",
    "MessageRecord",
    "PendingRecordBatch",
    "SchemaPolicy",
    "SearchStrategy",
    "SearchIndexSyncMode",
    "MemoryRetentionConfig",
    "TimeToLiveAnchor",
    "IEmbedder",
    "OracleDBEmbedder",
    "NOT_SET",
    "MAX_LIST_LIMIT",
    "Error",
    "ArgumentError",
    "ArgumentTypeError",
    "DuplicateRecordError",
    "StoreError",
    "StoreClosed",
    "SchemaError",
    "StoreNotFound",
    "StoreSettingsMismatch",
    "StoreBusy",
    "CapabilityError",
]


def __getattr__(name: str) -> _Any:
    # OracleDBEmbedder lives with the Oracle driver; imported on first use so that
    # `import oramem` stays light for embedded users.
    if name == "OracleDBEmbedder":
        from .oracle.embedder import OracleDBEmbedder

        return OracleDBEmbedder
    raise AttributeError(f"module 'oramem' has no attribute {name!r}")
