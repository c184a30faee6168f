"""Issue 23 on Oracle, as text (no database here): a HYBRID store has a keyword passage table
``OM_<ID>_KWP`` with its own CONTEXT index ``OM_<ID>_KTX`` (store schema version 4); a store
that groups (its recorded chunk policy counts tokens) writes each record's passages there
(``keyword_text`` of ``add_json`` / ``update_json``), its keyword leg ranks them, the sync
and the erasure scan cover them, and the upgrade fills them for records written before. The
driver side and the fake's copy of the rule: tests/oracle/test_keyword_passages_fake.py.
Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from .plsql_gate import _code_without_comments
from .test_store_findings import src, unit

ADMIN = _code_without_comments(src("oramem_admin.pkb"))
STORE = _code_without_comments(src("oramem_store.pkb"))
REGISTRY = _code_without_comments(src("oramem_registry.pkb"))
SEARCH = _code_without_comments(src("oramem_search.pkb"))


def test_the_registry_names_the_passage_objects_and_says_which_stores_group():
    spec = src("oramem_registry.pks")
    assert re.search(r"gc_obj_passages\s+CONSTANT VARCHAR2\(8 CHAR\) := 'KWP'", spec)
    assert re.search(r"gc_obj_passage_text\s+CONSTANT VARCHAR2\(8 CHAR\) := 'KTX'", spec)
    name = unit(REGISTRY, "object_name")
    assert "WHEN gc_obj_passages THEN 'OM_' || l_id || '_KWP'" in name
    assert "WHEN gc_obj_passage_text THEN 'OM_' || l_id || '_KTX'" in name
    # the rule of oramem.chunking.keyword_row_chars, for HYBRID stores only
    find = unit(REGISTRY, "find_store")
    assert ("CASE WHEN s.search_strategy = 'hybrid'\n"
            "                       AND JSON_VALUE(s.embedder, '$.chunking.unit') = 'tokens' THEN 1 ELSE 0 END") in find


def test_every_hybrid_store_gets_the_table_and_its_context_index_filled_first():
    ensure = unit(ADMIN, "ensure_objects")
    hybrid = ensure[ensure.index("ELSIF l_store.search_strategy = 'hybrid' THEN"):]
    assert hybrid.index("gc_tpl_hybrid") < hybrid.index("ensure_passages(in_store_id, l_store, l_rec_q, l_chk_q);") \
        < hybrid.index("l_hybrid := 1;")
    keyword = ensure[ensure.index("IF l_store.search_strategy = 'keyword' THEN"):ensure.index("ELSIF l_store.search_strategy = 'hybrid'")]
    assert "ensure_passages" not in keyword
    passages = unit(ADMIN, "ensure_passages")
    create = passages.index("IF NOT table_exists(l_kwp) THEN")
    fill = passages.index("IF in_store.keyword_passages = 1 THEN")
    index = passages.index("IF NOT index_exists(l_ktx) THEN")
    assert create < fill < index, "table, then the fill (grouping stores only), then the index over it"
    assert "exec_ddl(REPLACE(REPLACE(gc_tpl_fill_passages, '#KWP#', l_kwp_q), '#CHK#', in_chk_q));" in passages
    built = passages[index:]
    assert built.index("create_text_prefs(in_store_id, in_store.keyword_language);") < built.index("gc_tpl_passage_index")
    assert "text_prefs(in_store_id) || CASE WHEN text_params(in_store.search_index_sync) IS NOT NULL" in built
    assert passages.index("IF index_broken(l_ktx) THEN") < index


def test_the_templates_key_passages_by_record_and_fill_only_records_without_one():
    src_admin = src("oramem_admin.pkb")
    table = src_admin[src_admin.index("gc_tpl_passages CONSTANT"):src_admin.index("gc_tpl_passage_index CONSTANT")]
    assert "passage_text CLOB" in table
    assert "PRIMARY KEY (record_type, record_id, chunk_no)" in table
    assert "REFERENCES #REC# (record_type, record_id) ON DELETE CASCADE" in table
    index = src_admin[src_admin.index("gc_tpl_passage_index CONSTANT"):src_admin.index("gc_tpl_fill_passages CONSTANT")]
    assert "CREATE INDEX #KTX# ON #KWP# (passage_text) INDEXTYPE IS CTXSYS.CONTEXT PARAMETERS ('#PARAMS#')" in index
    fill = src_admin[src_admin.index("gc_tpl_fill_passages CONSTANT"):]
    fill = fill[:fill.index("]';")]
    assert "SELECT c.record_type, c.record_id, c.chunk_no, c.chunk_text FROM #CHK# c" in fill
    assert "WHERE NOT EXISTS (SELECT 1 FROM #KWP# p" in fill
    assert "p.record_type = c.record_type AND p.record_id = c.record_id" in fill


def test_a_hybrid_store_is_complete_only_with_both_and_dropped_with_both():
    complete = unit(ADMIN, "objects_complete")
    assert "NOT table_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_passages))" in complete
    assert "NOT index_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_passage_text))" in complete
    assert "index_broken(oramem_registry.object_name(l_id, oramem_registry.gc_obj_passage_text))" in complete
    drop = unit(ADMIN, "drop_objects")
    assert "gc_obj_passage_text), TRUE);" in drop
    dropped = drop.index("oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_passages)")
    assert "|| ' CASCADE CONSTRAINTS PURGE'" in drop[dropped:dropped + 160]
    assert dropped < drop.index("IF table_exists(l_rec) THEN")


def test_the_erasure_scan_reads_the_passages_and_their_token_table():
    scan = unit(ADMIN, "erasure_scan_json")
    assert "l_kinds(3) := oramem_registry.gc_obj_passage_text;" in scan
    assert "IF table_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_passages)) THEN" in scan
    assert "' WHERE DBMS_LOB.INSTR(LOWER(passage_text), :t) > 0'" in scan
    assert "l_where.append('table:' || oramem_registry.object_name(l_id, oramem_registry.gc_obj_passages));" in scan


def test_add_checks_every_records_passages_before_it_writes_and_writes_them_after_the_rows():
    add = unit(STORE, "add_json")
    validate = add.index("collect_passages(l_store, l_types(i + 1), l_ids(i + 1), get_chunks(l_r, 'chunks', l_where),")
    assert "l_where || '.chunks', FALSE," in add[validate:validate + 300]
    first_write = min(add.index("DELETE FROM ' || l_rec_tab"), add.index("FORALL i IN l_lo .. l_hi"))
    assert validate < first_write, "the rule is checked before anything of the call is written"
    collect = add.index("TRUE, l_p_types, l_p_ids, l_p_nos, l_p_texts);")
    assert add.index("FORALL i IN l_lo .. l_hi") < collect
    assert add.index("flush_chunks(l_store, l_c_types") < add.index("flush_passages(l_store, l_p_types") < add.index("l_lo := l_hi + 1;")


def test_an_update_replaces_or_clears_the_passages_with_the_rows():
    upd = unit(STORE, "update_json")
    check = upd.index("'update request.chunks', FALSE, l_p_types")
    assert check < upd.index("EXECUTE IMMEDIATE l_rec_upd"), "checked before the record is updated"
    clear = upd[upd.index("WHEN 'clear' THEN"):upd.index("WHEN 'replace' THEN")]
    assert "'DELETE FROM ' || l_kwp_tab || ' WHERE record_type = :1 AND record_id = :2'" in clear
    replace = upd[upd.index("WHEN 'replace' THEN"):upd.index("WHEN 'revector' THEN")]
    assert replace.index("'DELETE FROM ' || l_kwp_tab") < replace.index("flush_chunks(") \
        < replace.index("'update request.chunks', TRUE, l_p_types") < replace.index("flush_passages(")
    assert "IF l_store.search_strategy = 'hybrid' THEN" in upd


def test_the_passage_rule_is_the_fakes():
    rule = unit(STORE, "collect_passages")
    assert "IF l_with > 0 AND in_store.keyword_passages <> 1 THEN" in rule
    assert "IF l_with > 0 AND l_with < in_chunks.get_size THEN" in rule
    # the messages the fake's PassageRule raises (tests/oracle/test_keyword_passages_fake.py)
    assert "keyword_text is accepted only by a HYBRID store whose chunk policy '" in rule
    assert "give keyword_text on every chunk of a record or on none (" in rule
    assert "keyword_text must be a non-empty string (the first row starts a passage)" in rule
    assert "bad_argument" not in rule and rule.count("bad_payload(") == 5   # -20002, gc_invalid_payload
    # without keyword_text a grouping store takes each row's own text as its passage
    assert "IF l_with = 0 THEN\n            l_text := NVL(get_long_text(l_obj, 'text'" in rule
    assert "IF in_collect AND l_text IS NOT NULL THEN" in rule
    flush = unit(STORE, "flush_passages")
    assert "oramem_registry.quoted_name(in_store.memory_store_id, oramem_registry.gc_obj_passages)" in flush
    assert "(record_type, record_id, chunk_no, passage_text) VALUES (:1, :2, :3, :4)" in flush


def test_the_sync_covers_the_passage_index():
    sync = unit(STORE, "sync_search_index")
    passages = sync[sync.index("IF l_store.has_hybrid_index = 1 THEN\n            l_index"):]
    assert "oramem_registry.gc_obj_passage_text" in passages
    assert "CTX_DDL.SYNC_INDEX(idx_name => :1); END;' USING l_index;" in passages
    # inside the block whose compile error means a missing CTX_DDL grant
    assert passages.index("USING l_index;") < passages.index("WHEN e_plsql_compile THEN")


def test_the_keyword_leg_of_a_grouping_store_ranks_its_passages():
    kr = unit(SEARCH, "keyword_ranking")
    branch = kr[kr.index("IF in_store.has_text_index = 1 OR in_store.keyword_passages = 1 THEN"):kr.index("l_topn := ")]
    assert "oramem_registry.quoted_name(in_store.memory_store_id, oramem_registry.gc_obj_passages)" in branch
    assert "' c WHERE CONTAINS(c.passage_text, :q, 1) > 0 AND '" in branch
    # mapped to records as a row is: best score per record, ties in binary order (SC-6.1)
    assert "GROUP BY s.record_type, s.record_id" in branch


def test_bobs_keyword_leg_over_passages_keeps_his_scope_predicate():
    """B vs A (SC-13.1): a passage is Alice's record's text; the grouping branch ranks passages
    only inside the request's candidate predicate (scope, types, expiry, metadata filter), the
    same one the row branch uses, and that predicate names no column the passage table lacks."""
    kr = unit(SEARCH, "keyword_ranking")
    branch = kr[kr.index("IF in_store.has_text_index = 1 OR in_store.keyword_passages = 1 THEN"):kr.index("l_topn := ")]
    case = branch[branch.index("|| CASE WHEN in_store.keyword_passages = 1"):]
    # both arms end in "AND ", and the candidates follow the CASE in the same statement
    assert case.count("> 0 AND '") == 2
    assert re.search(r"END\s*\|\|\s*in_candidates\s*\|\|\s*'\) s'", case)
    search = unit(SEARCH, "search_json")
    candidates = search[search.index("l_candidates := "):search.index("';", search.index("l_candidates := ")) + 2]
    assert "(c.record_type, c.record_id) IN (SELECT r.record_type, r.record_id FROM '" in candidates
    assert "l_rec_where" in candidates  # the scope and filters: built above it for every leg
    used = set(re.findall(r"\bc\.(\w+)", candidates))
    table = src("oramem_admin.pkb")
    table = table[table.index("gc_tpl_passages CONSTANT"):table.index("gc_tpl_passage_index CONSTANT")]
    assert used and all(re.search(rf"\b{col}\b", table) for col in used)


def test_describe_store_says_whether_the_store_groups_keyword_passages():
    """ora31: describe_store / list_stores (describe_obj) report ``keyword_passages`` (true or
    false, never absent), computed by find_store's one rule (store_t.keyword_passages), in
    any lifecycle state; the spec's settings-in-force JSON names it."""
    describe = unit(ADMIN, "describe_obj")
    call = describe.index("oramem_registry.find_store(in_store_id, l_store, l_found);")
    branch = re.search(r"IF l_found AND l_store\.keyword_passages = 1 THEN\s+l_obj\.put\('keyword_passages', TRUE\);"
                       r"\s+ELSE\s+l_obj\.put\('keyword_passages', FALSE\);\s+END IF;", describe)
    assert branch and call < branch.start()
    assert "ready_store" not in describe  # find_store: no state check (a BROKEN store is described too)
    spec = src("oramem_admin.pks")
    assert re.search(r'"keyword_passages": true \| false,', spec)
    assert "describe_obj(" in unit(ADMIN, "describe_store")
    listing = ADMIN[ADMIN.index("FUNCTION list_stores RETURN CLOB"): ADMIN.index("END list_stores;")]
    assert "describe_obj(" in listing
