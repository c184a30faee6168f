"""The adapters' name for :mod:`oramem._plans` (one body, two colours: store calls as plans)."""

from __future__ import annotations

from .._plans import Plan, StoreCall, call, run_async, run_async_in_transaction, run_sync, run_sync_in_transaction

__all__ = ["Plan", "StoreCall", "call", "run_sync", "run_async", "run_sync_in_transaction", "run_async_in_transaction"]
