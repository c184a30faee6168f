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

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3
else:
    import sqlean as sqlite3

#: FTS5 ``secure-delete`` (3.42.0) removes a deleted row's entries from the index at once.
MIN_SQLITE = (3, 42, 0)

if tuple(int(p) for p in sqlite3.sqlite_version.split(".")[:3]) < MIN_SQLITE:  # pragma: no cover
    raise ImportError(
        f"oramem's embedded engine needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer; "
        f"the sqlean.py package loaded links {sqlite3.sqlite_version}: pip install -U 'sqlean.py>=3.45'"
    )

__all__ = ["sqlite3", "MIN_SQLITE"]
