"""keyword_language as a persisted Oracle store setting (issue 11 item 5): PL/SQL text tests
of the catalog column and its upgrade script, the registry record, the open/compare path of
oramem_admin, the Oracle Text preferences per language, the per-store 2 -> 3 rebuild, and
the search side. Each fails on the code before the change (query-side language only).
The Python side is in tests/oracle/test_keyword_language_fake.py. Static-checked, not run
against Oracle."""

from __future__ import annotations

import re

from oramem.sqlite.keyword import KEYWORD_LANGUAGES

from .plsql_gate import REPO, _code_without_comments
from .plsql_parse import split_script
from .test_store_findings import src, unit

ADMIN = _code_without_comments(src("oramem_admin.pkb"))
UPGRADE = (REPO / "ddl" / "upgrades" / "001_to_002.sql").read_text()


def _constant(spec: str, name: str) -> str:
    m = re.search(rf"\b{name}\s+CONSTANT\s+[\w() ]+?:=\s*('?[\w]+'?)\s*;", spec)
    assert m, name
    return m.group(1).strip("'")


def test_the_languages_are_the_sqlite_ones():
    reg = src("oramem_registry.pks")
    names = {_constant(reg, "gc_language_english"), _constant(reg, "gc_language_none")}
    assert names == set(KEYWORD_LANGUAGES)
    assert _constant(reg, "gc_default_language") == "english"
    body = unit(_code_without_comments(src("oramem_registry.pkb")), "check_language")
    assert "NOT IN (gc_language_english, gc_language_none)" in body and "gc_invalid_argument" in body
    # the catalog's check constraint allows exactly these (and NULL: not recorded yet)
    assert "keyword_language IS NULL OR keyword_language IN (''english'', ''none'')" in UPGRADE


def test_the_catalog_upgrade_adds_the_column_once_and_records_version_2():
    items = [i for i in split_script(UPGRADE) if i.kind in ("plsql", "sql")]
    kinds = [i.kind for i in items]
    assert kinds[0] == "plsql" and "MERGE INTO oramem_schema_version" in items[1].text
    block = items[0].text
    # runs from catalog version 1 only, and adds what USER_TAB_COLUMNS / USER_CONSTRAINTS lack
    assert "WHERE component = 'CATALOG'" in block and "IF l_version = 1 THEN" in block
    assert "column_name = 'KEYWORD_LANGUAGE'" in block and "IF l_count = 0 THEN" in block
    assert "ADD (keyword_language VARCHAR2(16 CHAR))" in block
    assert "constraint_name = 'ORAMEM_STORES_LANGUAGE_CK'" in block
    assert "WHEN OTHERS" not in block
    assert "2 AS version" in items[1].text and "WHERE v.version < s.version" in items[1].text
    reg = src("oramem_registry.pks")
    assert _constant(reg, "gc_catalog_version") == "5"  # 004_to_005: the embedder identity (issue 28)
    # install.sql runs it after the base catalog and before any package
    install = (REPO / "plsql" / "install.sql").read_text()
    at = install.index("@@../ddl/upgrades/001_to_002.sql")
    assert install.index("@@../ddl/001_catalog.sql") < at < install.index("@@oramem_errors.pks")
    # 001_catalog.sql (a released script) is not edited for the column
    assert "keyword_language" not in (REPO / "ddl" / "001_catalog.sql").read_text().lower()


def test_the_registry_record_carries_the_language():
    spec = src("oramem_registry.pks")
    assert re.search(r"keyword_language\s+oramem_stores\.keyword_language%TYPE", spec)
    find = unit(src("oramem_registry.pkb"), "find_store")
    assert "s.purge_job_name, s.keyword_language" in find
    # the SELECT list has as many columns as store_t has fields: the stored columns (s.x),
    # and keyword_passages (issue 23), computed from two of them by one CASE
    fields = re.findall(r"^\s+(\w+)\s+oramem_stores\.\w+%TYPE", spec, re.M)
    select = find[find.index("SELECT"):find.index("INTO")]
    computed = re.findall(r"CASE WHEN .*? END", select, re.S)
    assert len(computed) == 1 and fields[-1] == "keyword_passages"
    plain = select.replace(computed[0], "")
    assert len(fields) == plain.count("s.") + 1
    # version 4 (issue 23) keeps the language step of version 3
    assert _constant(spec, "gc_store_schema_version") == "4"


def test_settings_parse_store_and_describe_the_language():
    parse = unit(ADMIN, "parse_settings")
    assert "l_obj.has('keyword_language') AND NOT l_obj.get('keyword_language').is_null" in parse
    assert "oramem_registry.check_language(" in parse
    save = unit(ADMIN, "save_settings")
    assert "s.keyword_language  = in_language" in save and "in_language, 0, in_state" in save
    create = unit(ADMIN, "create_new")
    assert "ELSE oramem_registry.gc_default_language END" in create
    assert re.search(r"save_settings\(in_set\.store_id,.*?l_language,", create, re.S)
    assert "l_obj.put('keyword_language', l_row.keyword_language)" in unit(ADMIN, "describe_obj")


def test_a_different_language_is_a_mismatch_before_anything_is_written():
    rec = unit(ADMIN, "reconcile")
    check = rec[rec.index("IF in_set.has_language"):]
    check = check[:check.index("END IF;")]
    assert "in_store.keyword_language IS NOT NULL" in check
    assert "in_set.language <> in_store.keyword_language" in check
    assert "mismatch(in_store.memory_store_id, 'keyword_language', in_store.keyword_language," in check
    assert "in_set.language," in check and "omit keyword_language" in check
    # mismatch raises -20103 (StoreSettingsMismatch) naming the setting, both values and the hint
    mm = unit(ADMIN, "mismatch")
    assert "oramem_errors.gc_settings_mismatch" in mm
    assert "in_persisted" in mm and "in_requested" in mm and "in_hint" in mm
    # reconcile writes nothing, and open_store runs it before the lock, save_settings and any DDL
    assert not re.search(r"\b(INSERT|UPDATE|DELETE|MERGE|exec_ddl|exec_block|save_settings)\b", rec)
    body = unit(ADMIN, "open_store")
    first = body.index("reconcile(l_store, l_set, l_policy)")
    for write in ("lock_store(", "save_settings(", "remove_store(", "create_new(", "upgrade_to("):
        assert first < body.index(write), write
    # under the lock (a BROKEN / outdated store), reconcile also runs before upgrade_to
    ready = body[body.index("ELSIF l_store.state <> oramem_registry.gc_state_ready THEN"):]
    assert ready.index("reconcile(l_store, l_set, l_policy)") < ready.index("upgrade_to(l_store, l_set)")


def test_the_upgrade_records_the_requested_or_default_language():
    up = unit(ADMIN, "upgrade_to")
    assert "COALESCE(in_store.keyword_language," in up
    assert "CASE WHEN in_set.has_language THEN in_set.language END" in up
    assert "oramem_registry.gc_default_language" in up
    assert "in_store.deletion_hook, l_language, oramem_registry.gc_state_upgrading" in up


def test_text_preferences_per_language():
    prefs = unit(ADMIN, "create_text_prefs")
    assert prefs.index("drop_text_prefs(in_store_id)") < prefs.index("CREATE_PREFERENCE")
    assert "CTX_DDL.CREATE_PREFERENCE(l_name, ''BASIC_LEXER'')" in prefs
    assert "CTX_DDL.SET_ATTRIBUTE(l_name, ''BASE_LETTER'', ''YES'')" in prefs
    assert "CTX_DDL.SET_ATTRIBUTE(l_name, ''INDEX_STEMS'', '" in prefs
    assert "CASE WHEN l_english THEN '''ENGLISH''' ELSE '''NONE''' END" in prefs
    assert "CTX_DDL.CREATE_PREFERENCE(l_name, ''BASIC_WORDLIST'')" in prefs
    assert "CTX_DDL.SET_ATTRIBUTE(l_name, ''STEMMER'', '" in prefs
    assert "CASE WHEN l_english THEN '''ENGLISH''' ELSE '''NULL''' END" in prefs
    # an empty stoplist (no ADD_STOPWORD): every word is indexed, as in SQLite's FTS5 index
    assert "CTX_DDL.CREATE_STOPLIST(:1, ''BASIC_STOPLIST'')" in prefs
    assert "ADD_STOPWORD" not in ADMIN and "EMPTY_STOPLIST" not in ADMIN and "DEFAULT_STOPLIST" not in ADMIN
    # names only through the bind, never concatenated into the block
    assert prefs.count(":1") == 3
    drop = unit(ADMIN, "drop_text_prefs")
    assert drop.count("CTX_DDL.DROP_PREFERENCE(:1)") == 2 and "CTX_DDL.DROP_STOPLIST(:1)" in drop
    assert "drop_text_prefs(in_store_id);" in unit(ADMIN, "drop_objects")
    tp = unit(ADMIN, "text_prefs")
    for kind, word in (("gc_obj_lexer", "'LEXER '"), ("gc_obj_wordlist", "' WORDLIST '"), ("gc_obj_stoplist", "' STOPLIST '")):
        assert word in tp and kind in tp
    names = unit(_code_without_comments(src("oramem_registry.pkb")), "object_name")
    for suffix in ("_LEX'", "_WL'", "_STOP'"):
        assert suffix in names


def test_both_text_indexes_are_built_with_the_preferences():
    ensure = unit(ADMIN, "ensure_objects")
    keyword = ensure[ensure.index("IF l_store.search_strategy = 'keyword' THEN"):ensure.index("ELSIF l_store.search_strategy = 'hybrid' THEN")]
    assert keyword.index("create_text_prefs(in_store_id, l_store.keyword_language)") < keyword.index("gc_tpl_text")
    assert "text_prefs(in_store_id) ||" in keyword
    hybrid = ensure[ensure.index("ELSIF l_store.search_strategy = 'hybrid' THEN"):]
    assert hybrid.index("create_text_prefs(in_store_id, l_store.keyword_language)") < hybrid.index("gc_tpl_hybrid")
    assert "|| ' ' || text_prefs(in_store_id)" in hybrid


def test_the_2_to_3_step_rebuilds_the_text_index():
    build = unit(ADMIN, "build_store")
    step = build[build.index("IF l_found AND l_store.schema_version < 3 THEN"):]
    assert step.index("gc_obj_text), TRUE);") < step.index("ensure_objects(in_store_id);")
    assert step.index("gc_obj_hybrid), TRUE);") < step.index("ensure_objects(in_store_id);")
    # the registry row is read before the step marks the store UPGRADING/CREATING
    assert build.index("oramem_registry.find_store(in_store_id, l_store, l_found)") < build.index("set_state(")
    # mark_ready (schema_version := the code's) only after the rebuild
    assert build.index("ensure_objects(in_store_id);") < build.index("mark_ready(in_store_id);")
    readme = (REPO / "ddl" / "README.md").read_text()
    assert "**2 -> 3**" in readme and "**3 -> 4**" in readme and "(currently 4)" in readme


def test_search_uses_the_store_language():
    search = _code_without_comments(src("oramem_search.pkb"))
    body = unit(search, "search_json")
    assert "NVL(l_store.keyword_language, oramem_registry.gc_default_language)" in body
    check = body[body.index("IF l_req.has('keyword_language')"):body.index("IF l_req.has('query_text')")]
    assert "oramem_registry.check_language(" in check and "<> l_language" in check
    assert "bad_argument(" in check


def test_docs_state_the_differences_and_the_checks():
    doc = (REPO / "docs" / "oracle-search.md").read_text()
    assert "not persisted" not in doc
    for word in ("OM_<ID>_STOP", "INDEX_STEMS", "STEMMER", "BASE_LETTER", "StoreSettingsMismatch",
                 "static-checked, not run against Oracle"):
        assert word in doc, word
    verify = (REPO / "plsql" / "VERIFY.md").read_text()
    assert "## Keyword language (issue 11 item 5)" in verify
    for construct in ("CTX_DDL.CREATE_STOPLIST", "CTX_DDL.CREATE_PREFERENCE", "CTX_DDL.SET_ATTRIBUTE",
                      "CTX_DDL.DROP_PREFERENCE", "CTX_DDL.DROP_STOPLIST", "INDEX_STEMS", "STEMMER",
                      "BASE_LETTER", "CTX_USER_STOPLISTS", "EMPTY_STOPLIST"):
        assert construct in verify, construct
