"""Compatibility module: the Oracle engine's public names, from where they live now.

The engine was split (issue 24, architecture review refactor 2) into
:mod:`oramem.oracle.codec` (requests -> JSON payloads, replies -> results),
:mod:`oramem.oracle.base` (the colour-free :class:`OracleEngine` and the call table
:data:`CALLS`), :mod:`oramem.oracle.sync_engine` (:class:`SyncOracleEngine`, for
``oracledb.create_pool()`` / ``connect()``) and :mod:`oramem.oracle.async_engine`
(:class:`AsyncOracleEngine`, for ``oracledb.create_pool_async()`` / ``connect_async()``).
The caller picks the colour by the class it calls; ``OracleEngine(pool)`` is a ``TypeError``
naming the two. New code imports from :mod:`oramem.oracle`.
"""

from __future__ import annotations

from .async_engine import AsyncOracleEngine
from .base import ALL_CALLS, CALLS, OracleEngine
from .codec import (
    MAX_FUSION_DEPTH,
    add_json,
    check_hybrid,
    list_json,
    record_from_json,
    search_json,
    settings_from_json,
    settings_json,
    update_json,
)
from .sync_engine import SyncOracleEngine

__all__ = [
    "ALL_CALLS", "CALLS", "MAX_FUSION_DEPTH", "AsyncOracleEngine", "OracleEngine", "SyncOracleEngine",
    "add_json", "check_hybrid", "list_json", "record_from_json", "search_json", "settings_from_json",
    "settings_json", "update_json",
]
