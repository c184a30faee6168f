"""The SQLite the embedded engine runs on: `sqlean.py`'s bundled build (SQLite 3.50), not
the interpreter's library (3.40.1 on Debian 12 and in CI).

Every engine module, and everything that handles the engine's connection (the knowledge
layer, the CLI, the store facade), imports ``sqlite3`` from here, so connections and the
exceptions they raise come from one module. The reasons (FTS5 ``secure-delete``, 3.42+)
are in docs/store-decisions.md, "Which SQLite the engine runs on".

For the type checker the module is the standard library's: ``sqlean`` is a copy of its
``sqlite3`` package (same DB-API, same classes and exceptions) compiled against a
current amalgamation, and ships no stubs of its own.
"""

from __future__ import annotations

import json
import math
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3  # noqa: TID251 (the type checker's view of sqlean: the same classes)
else:
    import sqlean as sqlite3

#: FTS5 ``secure-delete`` (3.42.0) removes a deleted row's entries from the index at once.
MIN_SQLITE = (3, 42, 0)

if tuple(int(p) for p in sqlite3.sqlite_version.split(".")[:3]) < MIN_SQLITE:  # pragma: no cover
    raise ImportError(
        f"oramem's embedded engine needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer; "
        f"the sqlean.py package loaded links {sqlite3.sqlite_version}: pip install -U 'sqlean.py>=3.45'"
    )

_parser_lock = threading.Lock()
_parser: "sqlite3.Connection | None" = None


def sqlite_double(value: "int | float") -> float:
    """``value`` as this SQLite build reads it back from JSON text.

    Metadata is stored as JSON text (Python's shortest round-trip spelling) and a filter
    compares what SQLite's own text-to-double conversion makes of it. That conversion is
    not correctly rounded in every build: SQLite 3.50.4 reads ``-1e-300`` as
    ``-9.999999999999999e-301`` (one ulp off; 3.40.1 and 3.53 read it exactly). Comparing
    that with the bound Python double would miss an equal value, so a filter's number goes
    through the same parser as the stored one: equal JSON spellings give equal doubles on
    any SQLite version (docs/sqlite-build.md)."""
    if isinstance(value, float) and not math.isfinite(value):
        return value
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = sqlite3.connect(":memory:", check_same_thread=False)
        row = _parser.execute("SELECT json_extract(?, '$')", (json.dumps(value),)).fetchone()
    parsed = row[0]
    return float(parsed) if isinstance(parsed, (int, float)) else float(value)


__all__ = ["sqlite3", "MIN_SQLITE", "sqlite_double"]
