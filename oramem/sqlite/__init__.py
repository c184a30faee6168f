"""The embedded SQLite engine of oramem (stdlib ``sqlite3`` + FTS5 + numpy)."""

from .engine import SQLiteEngine
from .keyword import KEYWORD_LANGUAGES, HybridConfig
from .reembed import ReembedResult, reembed_store

__all__ = ["SQLiteEngine", "reembed_store", "ReembedResult", "HybridConfig", "KEYWORD_LANGUAGES"]
