"""The embedded SQLite engine of oramem (stdlib ``sqlite3`` + FTS5 + numpy)."""

from .engine import SQLiteEngine

__all__ = ["SQLiteEngine"]
