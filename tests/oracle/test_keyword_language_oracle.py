"""keyword_language on a live Oracle database (issue 11 item 5): the language is persisted,
shapes the store's Oracle Text preferences (english stems, none does not; both index every
word), a mismatching open is refused, and a store of schema version 2 is upgraded (its text
index rebuilt) through the schema policies. Oracle-marked: skipped, with the reason printed,
when no Oracle database is available (conftest.py). Written without a database:
static-checked, not run against Oracle."""

from __future__ import annotations

import json

import pytest

from oramem import OracleDBMemoryStore, SchemaError, SchemaPolicy, SearchStrategy, StoreSettingsMismatch
from oramem.embedders import HashEmbedder

pytestmark = pytest.mark.oracle


def _needs_text(conn):
    import oracledb

    with conn.cursor() as cur:
        caps = json.loads(cur.callfunc("oramem_admin.capabilities", oracledb.DB_TYPE_CLOB).read())
    if not caps["oracle_text"]:
        pytest.skip("Oracle Text is not installed in this database")


def _store(pool, store_id, language, policy=SchemaPolicy.CREATE_IF_NECESSARY):
    return OracleDBMemoryStore(HashEmbedder(8), pool, memory_store_id=store_id, schema_policy=policy,
                               search_strategy=SearchStrategy.KEYWORD, keyword_language=language)


def _ids(store, text):
    return {r.id for r, _ in store.search(text, k=5, strategy=SearchStrategy.KEYWORD)}


@pytest.mark.parametrize("language", ["english", "none"])
def test_the_language_is_persisted_and_shapes_the_index(pool, conn, store_id, language):
    _needs_text(conn)
    store = _store(pool, store_id, language)
    store.add(["she is allergic to peanuts", "and so on"], "memory", record_ids=["p", "a"])
    assert _ids(store, "and") == {"a"}  # an empty stoplist: a stopword alone is still found
    assert ("p" in _ids(store, "peanut")) is (language == "english")  # stemming only for english
    with conn.cursor() as cur:
        cur.execute("SELECT keyword_language FROM oramem_stores WHERE memory_store_id = :s", s=store_id)
        assert cur.fetchone()[0] == language
        cur.execute("SELECT COUNT(*) FROM ctx_user_stoplists WHERE spl_name = :n", n=f"OM_{store_id}_STOP")
        assert cur.fetchone()[0] == 1
    other = "none" if language == "english" else "english"
    with pytest.raises(StoreSettingsMismatch, match=f"keyword_language={language}"):
        _store(pool, store_id, other)
    assert _ids(_store(pool, store_id, None, SchemaPolicy.REQUIRE_EXISTING), "and") == {"a"}


def test_a_version_2_store_is_upgraded_and_its_text_index_rebuilt(pool, conn, store_id):
    _needs_text(conn)
    store = _store(pool, store_id, None)
    store.add(["she is allergic to peanuts"], "memory", record_ids=["p"])
    with conn.cursor() as cur:  # as schema version 2 left it: no language recorded
        cur.execute("UPDATE oramem_stores SET schema_version = 2, keyword_language = NULL "
                    "WHERE memory_store_id = :s", s=store_id)
        conn.commit()
    with pytest.raises(SchemaError, match="schema version 2"):
        _store(pool, store_id, None, SchemaPolicy.REQUIRE_EXISTING)
    upgraded = _store(pool, store_id, "none")
    assert _ids(upgraded, "peanuts") == {"p"} and _ids(upgraded, "peanut") == set()
    with conn.cursor() as cur:
        cur.execute("SELECT schema_version, keyword_language FROM oramem_stores WHERE memory_store_id = :s",
                    s=store_id)
        assert tuple(cur.fetchone()) == (3, "none")
