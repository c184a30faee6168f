"""PL/SQL text tests for the findings of reviews/oracle-search-admin-driver.md (F-ids) whose
fix is in oramem_search / oramem_admin. Static: they read the package sources; the
behaviour on a live database is covered by tests/oracle/test_review_findings_oracle.py.
Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from .plsql_gate import REPO

SEARCH = (REPO / "plsql" / "oramem_search.pkb").read_text()
ADMIN = (REPO / "plsql" / "oramem_admin.pkb").read_text()


def _code(text: str) -> str:
    """The source without /* */ and -- comments (so a comment quoting the old code does not count)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


def _function(text: str, name: str) -> str:
    m = re.search(rf"FUNCTION\s+{name}\b.*?END\s+{name}\s*;", text, re.S | re.I)
    assert m, f"{name} not found"
    return m.group(0)


def test_f2_hybrid_request_uses_one_search_construct():
    # 23/vecse/search.html: a top-level search_text and vector/text sub-elements are two
    # constructs that "cannot [be used] both ... in one query". The only SEARCH request left
    # (keyword search on a hybrid store, F8) has the text sub-element and nothing else.
    code = _code(SEARCH)
    assert "l_hreq.put('text', l_sub)" in code
    assert not re.search(r"l_hreq\.put\(\s*'search_text'", code), "top-level search_text next to vector/text"
    assert "l_hreq.put('vector'" not in code


def test_f8_keyword_search_on_a_hybrid_store_uses_the_documented_pure_keyword_mode():
    # The docs show keyword search over a hybrid vector index only through
    # DBMS_HYBRID_VECTOR.SEARCH ("pure keyword" mode: the text sub-element); CONTAINS is used
    # only on a keyword store's CONTEXT index.
    # Issue 23: a grouping HYBRID store's keyword passages have a CONTEXT index of their own
    # (OM_<ID>_KTX on OM_<ID>_KWP.passage_text), which CONTAINS queries in the same branch;
    # the hybrid index's column (chunk_text of a HYBRID store) is still never given to CONTAINS.
    kr = _code(_function(SEARCH, "keyword_ranking"))
    contains_branch = kr[kr.index("IF in_store.has_text_index = 1 OR in_store.keyword_passages = 1 THEN"):
                         kr.index("l_topn := ")]
    assert "CONTAINS(c.chunk_text, :q, 1)" in contains_branch
    assert "CONTAINS(c.passage_text, :q, 1)" in contains_branch
    passages = contains_branch[contains_branch.index("CASE WHEN in_store.keyword_passages = 1"):]
    assert passages.index("gc_obj_passages") < passages.index("CONTAINS(c.passage_text") \
        < passages.index("ELSE in_chk_tab") < passages.index("CONTAINS(c.chunk_text")
    assert kr.count("CONTAINS(") == 2, "CONTAINS outside the CONTEXT-index branch"
    search_branch = kr[kr.index("l_topn := "):]
    assert "DBMS_HYBRID_VECTOR.SEARCH(JSON(:q))" in search_branch
    assert "l_hreq.put('search_fusion', 'TEXT_ONLY')" in search_branch
    assert "l_sub.put('contains', in_query)" in search_branch
    # the search entry point reaches CONTAINS only through keyword_ranking
    body = _code(_function(SEARCH, "search_json"))
    assert "CONTAINS(" not in body and "keyword_ranking(l_store," in body


def test_f3_hybrid_index_sync_is_under_manual_maintenance():
    # SYNC settings of a hybrid vector index apply only with MAINTENANCE MANUAL
    # (23/vecse/create-hybrid-vector-index.html; 23/ccapp/using-automatic-maintenance-index.html).
    hp = _function(_code(ADMIN), "hybrid_params")
    assert "'MAINTENANCE MANUAL SYNC (MANUAL)'" in hp
    assert "'MAINTENANCE MANUAL SYNC (ON COMMIT)'" in hp
    assert re.search(r"WHEN\s+'auto'\s+THEN\s+''", hp)
    code = _code(ADMIN)
    # the hybrid DDL uses hybrid_params, the CONTEXT index keeps plain text_params
    hybrid_ddl = code[code.index("gc_tpl_hybrid, '#HVI#'"):]
    hybrid_ddl = hybrid_ddl[: hybrid_ddl.index(";")]
    assert "hybrid_params(" in hybrid_ddl and "text_params(" not in hybrid_ddl


KG_SPEC = (REPO / "plsql" / "oramem_kg_jobs.pks").read_text()
KG_BODY = (REPO / "plsql" / "oramem_kg_jobs.pkb").read_text()


def _procedure(text: str, name: str) -> str:
    m = re.search(rf"PROCEDURE\s+{name}\s*\(.*?END\s+{name}\s*;", text, re.S | re.I)
    assert m, f"{name} not found"
    return m.group(0)


def test_f16_knowledge_deletion_hook_mirrors_the_sqlite_hook():
    assert re.search(r"PROCEDURE\s+on_store_delete\s*\(\s*in_event\s+IN\s+CLOB\s*\)", KG_SPEC, re.I)
    body = _code(_procedure(KG_BODY, "on_store_delete"))
    # runs in the store's transaction: never commits or rolls back, no autonomous transaction
    assert not re.search(r"\b(COMMIT|ROLLBACK|AUTONOMOUS_TRANSACTION)\b", body, re.I)
    # what KnowledgeMemory._deletion_hook does on SQLite, through the hook's templates
    templates = dict(re.findall(r"\b(gc_tpl_hk_\w+)\s+CONSTANT\s+VARCHAR2\(\d+(?: CHAR)?\)\s*:=\s*q'\[(.*?)\]'", KG_BODY, re.S))
    assert templates and all(f"sql_for({name}, l_sid" in body for name in templates), "every hook template is used"
    used = " ".join(templates.values()) + body
    for needle in ("DELETE FROM #LINK# WHERE fact_id = :1", "DELETE FROM #REL# WHERE evidence_fact_id = :1",
                   "SET supersedes_fact_id = NULL", "DELETE FROM #OBS# WHERE id = :1", "SET fact_count =",
                   "WHERE session_id = :1", "SET source_event_id = NULL", "DELETE FROM #TAB# WHERE agent_id = :1",
                   "get_array('agent_ids')", "get_array('thread_ids')"):
        assert needle in used, needle
    # the agent-wide delete covers the 11 tables of KGTables.all_agent_tables, in its order
    from oramem.knowledge.db.schema import build_tables

    order = [t.name.split("_KG_", 1)[1] for t in build_tables("S1", 8).all_agent_tables()]
    listed = re.search(r"sfx_t\((.*?)\);", body, re.S).group(1)
    assert re.findall(r"'([A-Z_]+)'", listed) == order
    # and KnowledgeMemory registers it
    from oramem.knowledge.opening import ORACLE_DELETION_HOOK

    assert ORACLE_DELETION_HOOK == "ORAMEM_KG_JOBS.ON_STORE_DELETE"


def test_count_words_decomposes_bounded_pieces():
    # DECOMPOSE "may be a few times longer than string" and silently truncates past the
    # VARCHAR2 maximum (SQL Language Reference 23, DECOMPOSE): 8,000 characters of Hangul
    # (3 bytes each, 9 bytes decomposed) did not fit the VARCHAR2(32767). count_words now
    # decomposes pieces whose worst case fits, computed here from Unicode's own data.
    import unicodedata

    worst = max(len(unicodedata.normalize("NFKD", chr(cp)).encode("utf-8"))
                for cp in range(0x110000) if not 0xD800 <= cp < 0xE000)
    assert worst >= 33  # U+FDFA (33 bytes) as of Unicode 14; the bound in the PL/SQL comment
    assert len(unicodedata.normalize("NFKD", "\ud55c").encode("utf-8")) == 9  # a Hangul syllable
    piece = int(re.search(r"gc_word_piece_chars\s+CONSTANT PLS_INTEGER := (\d+);", KG_BODY).group(1))
    # LOWER adds at most half (a 2-byte letter whose lower case has 3 bytes)
    assert piece * worst * 3 // 2 <= 32767
    cw = _code(_procedure(KG_BODY, "count_words"))
    assert cw.count("DECOMPOSE(") == 1 and "DECOMPOSE(l_piece, 'COMPATIBILITY')" in cw
    assert "DBMS_LOB.SUBSTR(in_text, LEAST(gc_word_piece_chars, l_end - l_off + 1), l_off)" in cw
    assert "DBMS_LOB.SUBSTR(in_text, gc_text_chars" not in cw, "the whole text decomposed at once"
    # a piece ends after its last blank when more text follows, so no word is split; the
    # offset advances in the CLOB's units (UCS-2 code points)
    assert "REGEXP_INSTR(l_piece, '[[:space:]][^[:space:]]*$')" in cw
    assert "l_off := l_off + LENGTH2(l_piece);" in cw
    assert "l_end := LEAST(DBMS_LOB.GETLENGTH(in_text), gc_text_chars);" in cw


def test_f11_keyword_query_is_cut_at_whole_tokens_in_bytes():
    kq = _code(_function(SEARCH, "keyword_query"))
    assert "LENGTHB(l_piece) > gc_max_query_bytes" in kq
    # no character cut of the finished query, and long runs never reach l_tok uncut
    assert "SUBSTR(l_query" not in _code(SEARCH)
    assert "l_tok := LOWER(SUBSTR(REGEXP_SUBSTR(" in kq
    spec = (REPO / "plsql" / "oramem_search.pks").read_text()
    assert re.search(r"gc_max_query_bytes\s+CONSTANT\s+PLS_INTEGER\s*:=\s*4000;", spec)


def test_f17_hybrid_widening_stops_when_the_index_returned_fewer_rows():
    code = _code(SEARCH)
    assert "DBMS_HYBRID_VECTOR.SEARCH(JSON(:q))" in code and code.count("DBMS_HYBRID_VECTOR.SEARCH") == 1
    assert re.search(r"EXIT WHEN l_doc\.n >= in_k OR l_topn >= gc_max_hybrid_topn OR l_raw < l_topn;",
                     code)


def test_f19_query_vector_is_bound_once_in_the_approximate_query():
    vr = _code(_function(SEARCH, "vector_ranking"))
    approx = vr[vr.index("IF NOT in_exact THEN"):vr.index("'TO_VECTOR(:qv1, ")]
    assert ":qv2" not in approx
    assert approx.count("TO_VECTOR(:qv, ") == 2 and approx.count("add_bind(l_binds, 'qv',") == 1


def test_f19_results_are_not_parsed_and_reserialised():
    # Review F19 (second half): the result was built as JSON in SQL ({"n", "results"}),
    # parsed with JSON_OBJECT_T and written again with to_clob, twice when the exact fallback
    # ran. Now the count and the array are two columns of one row: the count is read as a
    # NUMBER, the array goes out as SQL wrote it.
    code = _code(SEARCH)
    for name in ("result_sql", "keys_sql"):
        sql = _function(code, name)
        assert "RETURN 'SELECT COUNT(*), JSON_ARRAYAGG(" in sql, name
        assert "''n'' VALUE" not in sql and "''results'' VALUE" not in sql and "''keys'' VALUE" not in sql
    # no JSON parse of a ranking anywhere: the only parse left is the request's (and no DOM
    # serialisation of results or keys)
    assert code.count(".parse(") == 1 and "JSON_ELEMENT_T.parse(in_request)" in code
    assert "get_array('results')" not in code and "get_array('keys')" not in code
    assert "get_number('n')" not in code
    # the two columns are read with DBMS_SQL as NUMBER and CLOB
    run = _function(code, "count_and_doc")
    assert "DBMS_SQL.DEFINE_COLUMN(l_cursor, 1, l_out.n);" in run
    assert "DBMS_SQL.DEFINE_COLUMN(l_cursor, 2, l_out.doc);" in run
    assert "oramem_filter.bind_all(l_cursor, in_binds);" in run
    assert "DBMS_SQL.CLOSE_CURSOR(l_cursor);" in run.split("EXCEPTION", 1)[1], "cursor closed on error"
    assert re.search(r"TYPE ranking_t IS RECORD \(\s*n\s+NUMBER,\s*doc\s+CLOB\s*\);", code)
    for name in ("vector_ranking", "keyword_ranking", "ranked"):
        assert re.search(r"\)\s*RETURN ranking_t\b", _function(code, name)), name
    # the search returns the array once, '[]' when nothing ranked (an aggregate over no rows
    # is NULL); the HYBRID legs pass their key arrays straight to the fusion query
    body = _function(code, "search_json")
    assert body.rstrip().count("RETURN array_or_empty(l_doc.doc);") == 1
    assert body.count(").doc);") == 2
    empty = _function(code, "array_or_empty")
    assert "in_doc IS NULL OR DBMS_LOB.GETLENGTH(in_doc) = 0" in empty and "TO_CLOB('[]')" in empty


def test_f18_fewer_than_k_approximate_records_count_before_going_exact():
    # An approximate search may return fewer than k rows (SQL Language Reference, SELECT,
    # APPROX). The fix: after a short approximate round, count the candidate chunks (a
    # row-limited count) and either run one wider approximate round or go exact at once.
    vr = _code(_function(SEARCH, "vector_ranking"))
    loop = vr[vr.index("FOR l_round IN 1 .. 2 LOOP"):vr.index("END LOOP;")]
    assert "IF l_doc.n >= in_k THEN" in loop and "RETURN l_doc;" in loop
    count = loop[loop.index("'lim'"):]
    assert "FETCH FIRST :lim ROWS ONLY" in count and "l_nfetch * gc_overfetch + 1" in count
    assert "EXIT WHEN l_count <= l_nfetch * gc_overfetch;" in count
    assert "l_nfetch := l_nfetch * gc_overfetch;" in count
    # the count comes after the first round, so a search that finds k records pays nothing more
    assert loop.index("ranked(l_rank") < loop.index("'lim'")
    # the exact query still ends every path that did not return k records (SC-6.5)
    tail = vr[vr.index("END LOOP;"):]
    assert "c.embedding IS NOT NULL AND ' || in_candidates" in tail and "RETURN ranked(" in tail
    # and both VECTOR and HYBRID's vector leg go through it
    body = _code(_function(SEARCH, "search_json"))
    assert body.count("vector_ranking(l_chk_tab,") == 2


def test_query_text_is_copied_byte_safely():
    # a character SUBSTR(..., 32767) into VARCHAR2(32767) overflows with multibyte text
    body = _code(_function(SEARCH, "search_json"))
    assert "SUBSTR(l_req.get_string('query_text'), 1, 32767)" not in body
    assert "l_text := DBMS_LOB.SUBSTR(l_req.get_clob('query_text'), gc_text_chars, 1);" in body
    chars = int(re.search(r"gc_text_chars\s+CONSTANT PLS_INTEGER := (\d+);", SEARCH).group(1))
    assert chars * 4 <= 32767  # AL32UTF8: at most 4 bytes a character
    # the text handed to VECTOR_EMBEDDING (VARCHAR2 in SQL) is cut to whole characters in bytes
    assert "USING text_prefix(in_text, gc_embed_bytes)" in _code(_function(SEARCH, "embed_query"))
    tp = _code(_function(SEARCH, "text_prefix"))
    assert "LENGTHB(SUBSTR(in_text, 1, l_n)) > in_max_bytes" in tp


def test_hybrid_is_the_weighted_rrf_of_the_two_legs():
    # the SQLite engine's fusion (oramem.sqlite.keyword.fuse): wv/(rrf_k+rank_v) + wk/(rrf_k+rank_k),
    # distance 1 - score/top, top = (wv+wk)/(rrf_k+1), rounded to 12 places, clamped, ties by type then id
    body = _code(_function(SEARCH, "search_json"))
    hybrid = body[body.index("a hybrid search needs query_text"):]
    assert "NVL(:wv / (:rk + v.rn), 0) + NVL(:wk / (:rk + t.rn), 0)" in hybrid
    assert "ROUND(1 - (" in hybrid and "/ :top, 12)" in hybrid
    assert "add_bind(l_run_binds, 'top', 'N', in_num => (l_wv + l_wk) / (l_rrf_k + 1));" in hybrid
    assert "rn FOR ORDINALITY" in hybrid and "FULL OUTER JOIN JSON_TABLE(:tkeys" in hybrid
    assert "NLSSORT(NVL(v.record_id, t.record_id), ''NLS_SORT=BINARY'') FETCH FIRST :k ROWS ONLY" in hybrid
    # a leg of weight 0 is not run (SQLite adds no keys from it)
    assert "IF l_wv > 0 THEN" in hybrid and "IF l_wk > 0 AND l_query IS NOT NULL THEN" in hybrid
    # each leg ranks in the order SC-6.1 gives results: distance, record type, id
    assert ("ORDER BY b.dist, NLSSORT(b.record_type, ''NLS_SORT=BINARY''), NLSSORT(b.record_id, ''NLS_SORT=BINARY'')"
            in _function(SEARCH, "keys_sql"))
    # the parameters come from the request, with HybridConfig's defaults
    for key in ("vector_weight", "keyword_weight", "rrf_k", "depth"):
        assert f"hybrid_number(l_cfg, '{key}'," in hybrid, key
    spec = (REPO / "plsql" / "oramem_search.pks").read_text()
    from oramem.sqlite.keyword import HybridConfig

    cfg = HybridConfig()
    for name, value in (("gc_vector_weight", cfg.vector_weight), ("gc_keyword_weight_gated", cfg.keyword_weight),
                        ("gc_rrf_k_gated", cfg.rrf_k), ("gc_rrf_k", HybridConfig(fusion="rrf").rrf_k)):
        m = re.search(rf"{name}\s+CONSTANT NUMBER\s+:= ([0-9.]+);", spec)
        assert m and float(m.group(1)) == value, name
    assert "LEAST(GREATEST(10 * l_k, 200), gc_max_fusion_depth)" in hybrid  # HybridConfig.fusion_depth
    assert "GREATEST(l_k, l_depth)" in hybrid


def test_f12_s4_search_statements_are_clobs_so_no_filter_overflows():
    """F12 (ORA-06502 on an oversized filter) and S4 (round 3: its 32,767-byte bound refused
    filters SQLite accepts): the record WHERE, the candidate subquery and every ranking
    statement are CLOBs, parsed by DBMS_SQL.PARSE's CLOB overload."""
    body = _code(_function(SEARCH, "search_json"))
    aw = _code(re.search(r"PROCEDURE\s+append_where\b.*?END\s+append_where\s*;", SEARCH, re.S).group(0))
    assert re.search(r"io_where IN OUT NOCOPY CLOB", aw) and "gc_max_where_bytes" not in SEARCH
    for var in ("l_filter", "l_rec_where", "l_candidates", "l_rank"):
        assert re.search(rf"\b{var}\s+CLOB;", body), var
    assert "l_filter := oramem_filter.compile_filter(" in body
    assert body.count("append_where(l_rec_where,") == 3
    assert "WHEN VALUE_ERROR" not in body
    assert "IF NOT l_seen.EXISTS(l_type) THEN" in body
    for fn, param in (("vector_ranking", "in_candidates"), ("keyword_ranking", "in_candidates"),
                      ("count_and_doc", "in_sql"), ("ranked", "in_rank_sql"), ("result_sql", "in_rank_sql"),
                      ("keys_sql", "in_rank_sql")):
        assert re.search(rf"{param}\s+IN CLOB", _function(SEARCH, fn)), fn
    for fn in ("vector_ranking", "keyword_ranking"):
        assert re.search(r"\bl_rank\s+CLOB;", _function(SEARCH, fn)), fn
    for fn in ("result_sql", "keys_sql"):
        assert re.search(r"\)\s*RETURN CLOB", _function(SEARCH, fn)), fn


def test_f12_kg_jobs_trigger_words_are_built_in_a_clob():
    body = _code(_procedure(KG_BODY, "emotional_trends"))
    assert re.search(r"\bl_keywords\s+CLOB;", body) and re.search(r"\bl_text\s+CLOB;", body)


def test_verify_md_has_one_row_per_finding_f1_to_f21():
    text = (REPO / "plsql" / "VERIFY.md").read_text()
    section = text[text.index("## Review findings F1–F21 (oracle-search-admin-driver.md)"):]
    section = section.split("\n## ", 1)[0]
    rows = re.findall(r"^\| (F\d+) \|[^|]*\| ([^|]+) \|", section, re.M)
    assert sorted(r[0] for r in rows) == sorted(f"F{i}" for i in range(1, 22)) and len(rows) == 21
    # first-call failures first, as the review marks them, then runtime, deviation, performance
    assert [r[0] for r in rows][:6] == ["F1", "F2", "F4", "F6", "F8", "F9"]
    for fid, status in rows:
        assert re.match(r"(fixed|partly fixed|not fixed|not done|not a defect|PL/SQL side|Python side|search side)",
                        status.strip()), (fid, status)


def test_f21_open_store_validates_a_ready_store_before_taking_the_lock():
    body = _code(_function(ADMIN, "open_store"))
    fast, lock = body.index("gc_state_ready"), body.index("lock_store(l_set.store_id, in_lock_timeout)")
    assert fast < lock
    path = body[:lock]
    for cond in ("l_policy <> gc_policy_recreate", "schema_version = oramem_registry.gc_store_schema_version",
                 "NOT reconcile(l_store, l_set, l_policy)", "objects_complete(l_store)"):
        assert cond in path, cond
    # reconcile, used without the lock, changes nothing
    rec = _code(_function(ADMIN, "reconcile"))
    assert not re.search(r"\b(INSERT|UPDATE|DELETE|MERGE|exec_ddl|exec_block|save_settings|g_warnings)\b", rec)


def test_keyword_query_english_drops_the_sqlite_stopwords_and_stems():
    # issue 11 item 5 on Oracle: the same query stopwords as the SQLite engine, Oracle Text's
    # stem operator ($word) for plain words, braces for reserved words and anything else
    from oramem.sqlite.keyword import _ENGLISH_STOPWORDS

    listed = re.search(r"gc_english_stopwords CONSTANT VARCHAR2\(\d+ CHAR\) := '([^']*)';", SEARCH).group(1)
    assert listed.startswith(" ") and listed.endswith(" ")
    assert set(listed.split()) == set(_ENGLISH_STOPWORDS)
    reserved = set(re.search(r"gc_text_reserved CONSTANT VARCHAR2\(\d+ CHAR\) := '([^']*)';", SEARCH).group(1).split())
    # Oracle Text Reference, Reserved Words and Characters (the word operators)
    assert {"about", "accum", "and", "equiv", "fuzzy", "minus", "near", "not", "or", "within", "syn", "sqe"} <= reserved
    kq = _code(_function(SEARCH, "keyword_query"))
    assert "IF NOT (l_english AND l_content AND INSTR(gc_english_stopwords, ' ' || l_tok || ' ') > 0) THEN" in kq
    assert "THEN '$' || l_tok" in kq and "REGEXP_LIKE(l_tok, '^[[:alpha:]]+$', 'c')" in kq
    assert "INSTR(gc_text_reserved, ' ' || l_tok || ' ') = 0" in kq
    assert "ELSE '{' || REPLACE(l_tok, '}', '}}') || '}' END" in kq
    # lower-cased, each word once (SQLite: dict.fromkeys(word.lower() ...))
    assert "l_tok := LOWER(SUBSTR(REGEXP_SUBSTR(" in kq and "IF NOT l_seen.EXISTS(l_tok) THEN" in kq
    # both keyword paths get the store's persisted language (a request may only repeat it)
    body = _code(_function(SEARCH, "search_json"))
    assert body.count("keyword_query(l_text, l_language)") == 2
    assert "l_language   VARCHAR2(16 CHAR) := NVL(l_store.keyword_language, oramem_registry.gc_default_language);" in body
    assert "<> l_language" in body and "leave keyword_language out of the request" in body
    assert not re.search(r"l_language\s*:=\s*LOWER", body), "the request must not replace the store's language"
    spec = (REPO / "plsql" / "oramem_search.pks").read_text()
    assert "in_language IN VARCHAR2 DEFAULT 'english'" in spec


def test_issue28_vector_ranking_adds_the_requests_tail_handicap_to_later_chunks():
    """Both the approximate and the exact statement rank a record by its first chunk, or a
    later chunk (chunk_no > 1) plus the request's tail_handicap, capped at 2; the handicap is
    a bind (no number formatted into SQL text, whatever the NLS settings), read from the
    request and checked to lie in [0, 2]; absent, 0 (best chunk, as SQLite without tail
    windows). Static-checked, not run against Oracle."""
    vr = _code(_function(SEARCH, "vector_ranking"))
    approx = vr[vr.index("IF NOT in_exact THEN"):vr.index("'TO_VECTOR(:qv1, ")]
    exact = vr[vr.rindex("l_rank := "):]
    term = "CASE WHEN {}.chunk_no > 1 THEN :h ELSE 0 END"
    assert "MIN(LEAST(2, a.dist + " + term.format("a") in approx and "c.chunk_no, VECTOR_DISTANCE" in approx
    assert term.format("c") in exact and "MIN(LEAST(2, VECTOR_DISTANCE(" in exact
    assert approx.count("add_bind(l_binds, 'h', 'N', in_num => in_handicap)") == 1
    assert exact.count("add_bind(l_binds, 'h', 'N', in_num => in_handicap)") == 1
    body = _code(_function(SEARCH, "search_json"))
    assert "l_handicap := l_req.get_number('tail_handicap')" in body
    assert "IF l_handicap < 0 OR l_handicap > 2 THEN" in body
    assert body.count("l_handicap)") == 2 and "l_exact, TRUE, l_handicap).doc" in body  # vector and hybrid


def test_an_actors_cascade_takes_only_its_rows_of_the_removed_threads_and_a_forget_none():
    """2026-12-06 red team (SQLite: deletes._of_removed_thread): a user's or an agent's removed
    thread may hold another scope's knowledge rows without store records (a queued background
    write of another user); the PL/SQL hook takes, of a cascade's threads, only the actor's
    rows (a user's: hers and those without a user), delete_thread everything. A forget deletes
    nothing here: the Python eraser forget runs next does it all, as on SQLite (deleting her
    events and facts first hid what cites them from it). Static-checked, not run against Oracle."""
    body = _code(_procedure(KG_BODY, "on_store_delete"))
    # nor a profile cascade whose caller erases next (delete_record_json in_reason 'erase')
    forget = ("IF l_doc.get_string('reason') = 'forget'\n"
              "         OR (l_doc.has('knowledge') AND l_doc.get_string('knowledge') = 'caller')\n"
              "      THEN\n         RETURN;\n      END IF;")
    assert forget in body and body.index(forget) < body.index("EXECUTE IMMEDIATE")
    clause = re.search(r"gc_hk_of_removed\s+CONSTANT\s+VARCHAR2\(\d+ CHAR\)\s*:=(.*?);", KG_BODY, re.S).group(1)
    assert "(:2 = 0 OR user_id IS NULL OR user_id IN (SELECT j.v FROM JSON_TABLE(:3, '$[*]'" in clause
    assert "(:4 = 0 OR agent_id IN (SELECT j.v FROM JSON_TABLE(:5, '$[*]'" in clause
    # no q'[...]' literal may hold "]'" (it would end there): the clause uses q'~...~'
    assert "q'[" not in clause and clause.count("q'~") == 2
    for name in ("gc_tpl_hk_thread_events", "gc_tpl_hk_del_session", "gc_tpl_hk_del_session_int"):
        assert re.search(rf"{name}\s+CONSTANT\s+VARCHAR2\(\d+ CHAR\)\s*:=\s*q'\[[^\]]*\]'\s*\|\|\s*gc_hk_of_removed;", KG_BODY), name
    # every statement of those templates binds the thread and the actors, in that order
    assert body.count("USING l_arr.get_string(i), l_by_user, l_users, l_by_agt, l_agents") == 4
    assert "l_scoped := NVL(l_doc.get_string('reason'), 'delete') = 'cascade';" in body
    assert "IF l_arr IS NOT NULL AND NOT (l_scoped AND l_by_user = 0 AND l_by_agt = 0) THEN" in body

    # the clause, evaluated in Python, is the SQLite rule for a cascade
    from types import SimpleNamespace

    import sqlalchemy as sa

    from oramem.knowledge.deletes import _of_removed_thread

    table = sa.table("t", sa.column("user_id"), sa.column("agent_id"))

    def plsql(reason, users, agents, row):
        if reason == "forget":
            return False  # the hook returns before any statement
        scoped = reason == "cascade"
        by_user, by_agent = int(scoped and bool(users)), int(scoped and bool(agents))
        if scoped and not by_user and not by_agent:
            return False
        return ((by_user == 0 or row[0] is None or row[0] in users)
                and (by_agent == 0 or row[1] in agents))

    def sqlite(reason, users, agents, row):
        cond = _of_removed_thread(table, SimpleNamespace(reason=reason, user_ids=users, agent_ids=agents))
        engine = sa.create_engine("sqlite://")
        with engine.connect() as conn:
            conn.execute(sa.text("CREATE TABLE t (user_id TEXT, agent_id TEXT)"))
            conn.execute(sa.text("INSERT INTO t VALUES (:u, :a)"), {"u": row[0], "a": row[1]})
            return conn.execute(sa.select(sa.func.count()).select_from(table).where(cond)).scalar() == 1

    rows = [(None, "a1"), ("alice", "a1"), ("bob", "a1"), ("alice", "a2"), (None, "a2")]
    for users, agents in ((["alice"], []), ([], ["a1"]), (["alice"], ["a1"]), ([], [])):
        for row in rows:
            assert plsql("cascade", users, agents, row) == sqlite("cascade", users, agents, row), (users, agents, row)
            assert plsql("delete", users, agents, row) is True
        assert not any(plsql("forget", users, agents, r) for r in rows)
