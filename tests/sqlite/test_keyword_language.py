"""Keyword language (stemming + stopwords), the schema-1 -> 2 upgrade that rebuilds the FTS
index, and the HYBRID fusion settings."""

from __future__ import annotations

from oramem.sqlite._sqlite import sqlite3

import pytest

from oramem import SchemaError, SchemaPolicy, StoreSettingsMismatch
from oramem.sqlite import HybridConfig
from oramem.sqlite.keyword import fuse
from oramem.sqlite.schema import SCHEMA_VERSION

from .conftest import vec

DIET = ["I have a severe peanut allergy", "I am lactose intolerant", "We went running by the river"]


def _kw(make, **kwargs):
    kwargs.setdefault("memory_store_id", "KW")
    return make(search_strategy="keyword", vector_dim=None, **kwargs)


def test_stemming_matches_word_forms(make):
    s = _kw(make)
    s.add(["she peels the peanuts", "he runs every morning"], record_type="memory", record_ids=["p", "r"])
    assert [r.id for r, _ in s.search("peanut", k=3)] == ["p"]
    assert [r.id for r, _ in s.search("running", k=3)] == ["r"]


def test_stopwords_do_not_match(make):
    s = _kw(make)
    s.add(DIET, record_type="memory", record_ids=["peanut", "lactose", "river"])
    assert [r.id for r, _ in s.search("What food should I avoid? peanuts?", k=3)] == ["peanut"]
    assert s.search("What should I avoid?", k=3) == []  # only "avoid" is left, and nothing has it
    # a query of nothing but stopwords keeps them
    assert [r.id for r, _ in s.search("I am", k=3)][0] == "lactose"


def test_language_none_neither_stems_nor_drops(make):
    s = _kw(make, keyword_language="none")
    s.add(["she peels the peanuts", "what a day"], record_type="memory", record_ids=["p", "w"])
    assert s.search("peanut", k=3) == []
    assert [r.id for r, _ in s.search("what food", k=3)] == ["w"]


def test_language_is_persisted_and_checked(make, db_path):
    _kw(make, keyword_language="none").close()
    assert [r.id for r, _ in _kw(make).search("x", k=1)] == []  # None adopts "none"
    with pytest.raises(StoreSettingsMismatch, match="keyword_language"):
        _kw(make, keyword_language="english")
    with pytest.raises(ValueError, match="not supported"):
        _kw(make, memory_store_id="OTHER", keyword_language="klingon")
    with pytest.raises(TypeError):
        _kw(make, memory_store_id="OTHER", keyword_language=3)


def _downgrade_to_v1(db_path: str, store_id: str) -> None:
    """Rewrite a store as schema version 1 wrote it: unicode61 FTS, no catalog column. The
    index keeps FTS5 secure-delete (version 1 never set it, and a writable open that may
    not upgrade refuses such an index; the test removes it after checking the version-1
    reads): the schema version and the delete setting are independent checks."""
    with sqlite3.connect(db_path) as conn:
        conn.execute("ALTER TABLE oramem_stores DROP COLUMN keyword_language")
        conn.execute("UPDATE oramem_stores SET schema_version = 1 WHERE store_id = ?", (store_id,))
        conn.execute(f'DROP TABLE "om_{store_id}_fts"')
        conn.execute(f"CREATE VIRTUAL TABLE \"om_{store_id}_fts\" USING fts5(text, tokenize = 'unicode61')")
        conn.execute(f'INSERT INTO "om_{store_id}_fts"("om_{store_id}_fts", rank) VALUES (\'secure-delete\', 1)')
        conn.execute(
            f'INSERT INTO "om_{store_id}_fts" (rowid, text) SELECT chunk_id, text FROM "om_{store_id}_chunks" '
            f'WHERE chunk_id NOT IN (SELECT chunk_id FROM "om_{store_id}_fts_pending")'
        )


def test_version_1_store_is_upgraded_only_under_create_if_necessary(make, db_path):
    s = _kw(make, search_index_sync="manual")
    s.add(["she peels the peanuts"], record_type="memory", record_ids="p")
    s.sync_search_index()
    s.add(["pending peanuts"], record_type="memory", record_ids="q")  # not yet indexed
    s.close()
    _downgrade_to_v1(db_path, "KW")

    old = _kw(make, schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert old.search("peanut", k=3) == []  # as version 1 did: no stemming
    assert [r.id for r, _ in old.search("peanuts", k=3)] == ["p"]
    old.close()
    with pytest.raises(StoreSettingsMismatch, match="CREATE_IF_NECESSARY"):
        _kw(make, schema_policy=SchemaPolicy.REQUIRE_EXISTING, keyword_language="english")
    # as version 1 really left it: no FTS5 secure-delete either, which only an upgrade fixes
    with sqlite3.connect(db_path) as conn:
        conn.execute("DELETE FROM om_KW_fts_config WHERE k = 'secure-delete'")
    with pytest.raises(SchemaError, match="CREATE_IF_NECESSARY"):
        _kw(make, schema_policy=SchemaPolicy.REQUIRE_EXISTING)

    new = _kw(make)
    assert [r.id for r, _ in new.search("peanut", k=3)] == ["p"]  # rebuilt with porter; q still pending
    new.sync_search_index()
    assert sorted(r.id for r, _ in new.search("peanut", k=3)) == ["p", "q"]
    with sqlite3.connect(db_path) as conn:
        version, language = conn.execute(
            "SELECT schema_version, keyword_language FROM oramem_stores WHERE store_id = 'KW'").fetchone()
        (ddl,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'om_KW_fts'").fetchone()
        secure = conn.execute("SELECT v FROM om_KW_fts_config WHERE k = 'secure-delete'").fetchone()
    assert (version, language) == (SCHEMA_VERSION, "english") and "porter" in ddl and "scope" in ddl
    assert secure == (1,)


def test_version_1_vector_store_upgrade_then_keyword(make, db_path):
    s = make(memory_store_id="V", search_strategy="vector")
    s.add(["peanuts"], record_type="memory", record_ids="p", embeddings=[vec(1)])
    s.close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("ALTER TABLE oramem_stores DROP COLUMN keyword_language")
        conn.execute("UPDATE oramem_stores SET schema_version = 1")
    h = make(memory_store_id="V", search_strategy="hybrid")
    assert [r.id for r, _ in h.search("peanut", k=1, strategy="keyword")] == ["p"]


@pytest.mark.parametrize("bad", [
    {"vector_weight": -1}, {"vector_weight": 0, "keyword_weight": 0}, {"rrf_k": 0}, {"rrf_k": float("nan")},
    {"depth": 0}, {"depth": 2.5}, {"keyword_weight": "1"}, {"vector_weight": True}, {"fusion": "rsf"},
    {"fusion": None},
])
def test_hybrid_config_is_validated(bad):
    with pytest.raises(ValueError):
        HybridConfig(**bad)


def test_hybrid_config_type_is_checked(make):
    with pytest.raises(TypeError, match="HybridConfig"):
        make(memory_store_id="H", search_strategy="hybrid", hybrid={"rrf_k": 10})


def test_weighted_fusion_follows_the_weights():
    for fusion, vector, keyword in (("rrf", [1, 2, 3], [3, 2, 1]),
                                    ("score", [(1, 0.1), (2, 0.2), (3, 0.3)], [(3, 0.1), (2, 0.2), (1, 0.3)])):
        assert [key for key, _ in fuse(vector, keyword, HybridConfig(1.0, 0.0, fusion=fusion))] == [1, 2, 3]
        assert [key for key, _ in fuse(vector, keyword, HybridConfig(0.0, 1.0, fusion=fusion))] == [3, 2, 1]
        assert fuse(vector, keyword, HybridConfig(1.0, 0.5, fusion=fusion))[0][0] == 1
        assert dict(fuse(vector[:1], vector[:1], HybridConfig(1.0, 0.3, fusion=fusion)))[1] == 0.0


def test_hybrid_depth_and_weights_reach_the_search(make):
    s = make(memory_store_id="H", search_strategy="hybrid", hybrid=HybridConfig(vector_weight=0.0, keyword_weight=1.0))
    s.add(["zebra crossing", "nothing alike"], record_type="memory", record_ids=["a", "b"],
          embeddings=[vec(0), vec(1)])
    hits = s.search(query_vector=vec(1), k=2, strategy="vector")
    assert hits[0][0].id == "b"
    with pytest.raises(ValueError):
        s.search(query_vector=vec(1), k=2, strategy="hybrid")  # hybrid needs a text too
