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
    """The source without -- comments (so a comment quoting the old code does not count)."""
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


def _function(text: str, name: str) -> str:
    m = re.search(rf"FUNCTION\s+{name}\b.*?END\s+{name}\s*;", text, re.S | re.I)
    assert m, f"{name} not found"
    return m.group(0)


def test_f2_hybrid_request_uses_one_search_construct():
    # 23/vecse/search.html: a top-level search_text and vector/text sub-elements are two
    # constructs that "cannot [be used] both ... in one query".
    code = _code(SEARCH)
    assert "l_hreq.put('vector', l_sub)" in code
    assert not re.search(r"l_hreq\.put\(\s*'search_text'", code), "top-level search_text next to vector/text"


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
                   "SET supersedes_fact_id = NULL", "SET supporting_fact_ids = JSON(:1)", "SET fact_count =",
                   "WHERE session_id = :1", "SET source_event_id = NULL", "DELETE FROM #TAB# WHERE agent_id = :1",
                   "get_array('agent_ids')", "get_array('thread_ids')"):
        assert needle in used, needle
    # the agent-wide delete covers the 11 tables of KGTables.all_agent_tables, in its order
    from oramem.knowledge.schema import build_tables

    order = [t.name.split("_KG_", 1)[1] for t in build_tables("S1", 8).all_agent_tables()]
    listed = re.search(r"sfx_t\((.*?)\);", body, re.S).group(1)
    assert re.findall(r"'([A-Z_]+)'", listed) == order
    # and KnowledgeMemory registers it
    from oramem.knowledge.memory import ORACLE_DELETION_HOOK

    assert ORACLE_DELETION_HOOK == "ORAMEM_KG_JOBS.ON_STORE_DELETE"


def test_f11_keyword_query_is_cut_at_whole_tokens_in_bytes():
    kq = _code(_function(SEARCH, "keyword_query"))
    assert "LENGTHB(l_piece) > gc_max_query_bytes" in kq
    # no character cut of the finished query, and long runs never reach l_tok uncut
    assert "SUBSTR(l_query" not in _code(SEARCH)
    assert "l_tok := SUBSTR(REGEXP_SUBSTR(" in kq
    spec = (REPO / "plsql" / "oramem_search.pks").read_text()
    assert re.search(r"gc_max_query_bytes\s+CONSTANT\s+PLS_INTEGER\s*:=\s*4000;", spec)


def test_f17_hybrid_widening_stops_when_the_index_returned_fewer_rows():
    code = _code(SEARCH)
    assert "DBMS_HYBRID_VECTOR.SEARCH(JSON(:q))" in code and code.count("DBMS_HYBRID_VECTOR.SEARCH") == 1
    assert re.search(r"EXIT WHEN l_n >= l_k OR l_topn >= gc_max_hybrid_topn OR l_raw < l_topn;", code)


def test_f19_query_vector_is_bound_once_in_the_approximate_query():
    code = _code(SEARCH)
    approx = code[code.index("IF NOT l_exact THEN"):code.index("IF l_exact OR l_n < l_k THEN")]
    assert ":qv1" not in approx and ":qv2" not in approx
    assert approx.count("TO_VECTOR(:qv, ") == 2 and approx.count("add_bind(l_run_binds, 'qv',") == 1


def test_f12_oversized_filters_raise_the_filter_error_not_ora_06502():
    code = _code(SEARCH)
    guard = code[code.index("oramem_filter.compile_filter("):code.index("l_candidates := ")]
    assert "WHEN VALUE_ERROR THEN" in guard and guard.count("gc_invalid_filter") == 2
    assert "32767 - gc_sql_reserve" in guard
    # the reserve covers what is wrapped around l_candidates: result_sql + the longest rank text
    reserve = int(re.search(r"gc_sql_reserve\s+CONSTANT\s+PLS_INTEGER\s*:=\s*(\d+);", SEARCH).group(1))
    wrappers = re.findall(r"l_rank := (.*?);\n", code, re.S)
    longest = max(len(w.encode()) for w in wrappers)
    result = _function(code, "result_sql")
    registry = (REPO / "plsql" / "oramem_registry.pkb").read_text()
    record_sql = _function(_code(registry), "record_json_sql")
    assert longest + len(result.encode()) + len(record_sql.encode()) < reserve


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
