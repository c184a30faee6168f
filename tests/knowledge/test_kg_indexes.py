"""Issue 25 item 6 (round f): the fact table's rank, same-key and current-fact indexes reach
stores made before them. A store's knowledge tables were created once; ``create_all`` leaves
an existing table's indexes alone, so opening such a store under ``CREATE_IF_NECESSARY``
creates the missing ones, and under another policy it opens with a warning naming them.
On Oracle the same indexes come with ``oracle_ddl`` and, for existing schemas,
``ddl/knowledge/003_kg_indexes.sql`` (static-checked, not run against Oracle)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import sqlalchemy as sa

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeMemory
from oramem.knowledge.db.schema import build_tables, oracle_ddl, oracle_index_ddl, plain_indexes
from oramem.testing import HashEmbedder

NEW = ("DEFAULT_KG_FACT_AGT_ENT_RANK_IX", "DEFAULT_KG_FACT_AGT_ENT_ATTR_IX", "DEFAULT_KG_FACT_ID_CUR_IX",
       "DEFAULT_KG_FACT_AGT_ENT_VF_IX",  # the graph signal's newest facts per key (2026-12-06)
       "DEFAULT_KG_EVENT_AGT_USR_OCC_IX")  # who "I" is in a reader's first-person query (2026-12-07, KC-5.4)


def _index_names(path: str) -> set[str]:
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as c:
            return {r[0] for r in c.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'index'")}
    finally:
        engine.dispose()


def test_an_older_store_gets_the_new_indexes_on_open(tmp_path, caplog):
    path = str(tmp_path / "old.db")
    with SQLiteMemoryStore(path, embedder=HashEmbedder(384)) as st:
        with KnowledgeMemory(st, None) as km:
            km.add_fact("a", "person:ana", "Ana lives in Porto", user_id="ana")
    assert set(NEW) <= _index_names(path)
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as c:  # the tables as main's DDL made them
        for name in NEW:
            c.exec_driver_sql(f'DROP INDEX "{name}"')
    engine.dispose()
    # another policy: nothing changed, a warning that names the indexes and the way to add them
    with caplog.at_level(logging.WARNING, logger="oramem.knowledge"):
        with SQLiteMemoryStore(path, embedder=HashEmbedder(384), schema_policy="REQUIRE_EXISTING") as st:
            with KnowledgeMemory(st, None) as km:
                assert [f.fact_text for f in km.get_all("a", user_id="ana")] == ["Ana lives in Porto"]
    warned = [r.getMessage() for r in caplog.records if "lack index" in r.getMessage()]
    assert warned and all(n in warned[0] for n in NEW) and "CREATE_IF_NECESSARY" in warned[0], warned
    assert not set(NEW) & _index_names(path)
    # CREATE_IF_NECESSARY (the default): created on open, the rows untouched
    with SQLiteMemoryStore(path, embedder=HashEmbedder(384)) as st:
        with KnowledgeMemory(st, None) as km:
            assert [f.fact_text for f in km.get_all("a", user_id="ana")] == ["Ana lives in Porto"]
            assert km.get_all("a", user_id="bo") == []
    assert set(NEW) <= _index_names(path)


def test_oracle_index_upgrade_script_is_generated_and_idempotent():
    path = Path(__file__).resolve().parents[2] / "ddl" / "knowledge" / "003_kg_indexes.sql"
    text = path.read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--")).strip() + "\n"
    assert body == oracle_index_ddl("DEFAULT")
    statements = [s.strip() for s in body.split(";") if s.strip()]
    assert len(statements) == len(plain_indexes(build_tables("DEFAULT", 1)))
    assert all(re.match(r'^CREATE INDEX IF NOT EXISTS "DEFAULT_KG_\w+" ON "DEFAULT_KG_\w+" \(', s) for s in statements)
    for name in NEW:  # in the upgrade and in the install DDL
        assert f'"{name}"' in body and f'"{name}"' in oracle_ddl("DEFAULT", 384)
    assert ('"DEFAULT_KG_FACT_AGT_ENT_RANK_IX" ON "DEFAULT_KG_FACT" (agent_id, entity_key, importance DESC, '
            'valid_from DESC, id)') in body
    assert '"S2_KG_FACT_ID_CUR_IX" ON "S2_KG_FACT"' in oracle_index_ddl("s2")
