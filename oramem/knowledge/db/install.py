"""The knowledge layer installs and drops its own tables; the engines' admin modules do not
import the layer above them (layer rule, pyproject.toml ``[tool.importlinter]``).

- :func:`install_oracle` creates the knowledge tables ``<STORE_ID>_KG_*`` of one store in an
  Oracle schema through ``oramem.oracle.admin.run_ddl`` (was ``oracle.admin.install_knowledge``).
- Importing this module registers :func:`table_names` with ``oramem.sqlite.admin`` so that
  ``drop_store`` drops a store's knowledge tables with it (``oramem.knowledge`` imports it).
"""

from __future__ import annotations

from typing import Any, Callable

from ...sqlite import admin as sqlite_admin
from .schema import build_tables, oracle_ddl

__all__ = ["install_oracle", "table_names"]


def table_names(store_id: str) -> list[str]:
    """The knowledge tables of a store, children before parents."""
    return [t.name for t in reversed(build_tables(store_id, 1).metadata.sorted_tables)]


def install_oracle(conn: Any, store_id: str, vector_dim: int, echo: Callable[[str], None] = print) -> int:
    """Create the knowledge tables ``<STORE_ID>_KG_*`` of one store (idempotent: ``CREATE ...
    IF NOT EXISTS``, the DDL of :func:`oramem.knowledge.db.schema.oracle_ddl`; ddl/knowledge/ holds
    the same for store DEFAULT at 384 dimensions). The PL/SQL side of the knowledge layer
    (``oramem_kg_jobs``, its deletion hook included) comes with ``oramem.oracle.admin.install``.
    Returns the number of statements. Static-checked, not run against Oracle."""
    if isinstance(vector_dim, bool) or not isinstance(vector_dim, int) or not 1 <= vector_dim <= 65535:
        raise ValueError(f"vector_dim must be an int in 1..65535 (the store's dimension), got {vector_dim!r}")
    text = oracle_ddl(store_id, vector_dim)  # validates the store id before anything runs
    echo(f"knowledge tables of store {store_id.upper()} ({vector_dim} dimensions)")
    from ...oracle import admin as oracle_admin  # python-oracledb only when installing on Oracle

    return oracle_admin.run_ddl(conn, text, f"knowledge DDL of {store_id.upper()}")


sqlite_admin.register_dependent_tables(table_names)
