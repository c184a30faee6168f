"""PL/SQL text tests for the third review (reviews/round3/oracle-store.md N1-N13 and
oracle-search-admin-driver.md D1-D15, plus the reopened S4, S22, F10, F16): each fails on the
code the review read (commit dad5b46) and passes on the fix. They read the PL/SQL; what only a
database can show is in the `oracle`-marked tests. Static-checked, not run against Oracle."""

from __future__ import annotations

import re

import sqlalchemy as sa

from .plsql_gate import REPO, _code_without_comments
from .test_store_findings import src, unit


def code(name: str) -> str:
    return _code_without_comments(src(name))


# N1: drop_store / RECREATE / uninstall drop the knowledge layer's <ID>_KG_* tables and job.
def test_n1_drop_objects_drops_exactly_the_knowledge_tables():
    from oramem.knowledge.db.schema import build_tables

    body = unit(code("oramem_admin.pkb"), "drop_knowledge")
    listed = re.search(r"suffix_tab_t\((.*?)\);", body, re.S).group(1)
    suffixes = re.findall(r"'([A-Z_]+)'", listed)
    tables = build_tables("S1", 8)
    names = sorted(t.name for t in vars(tables).values() if isinstance(t, sa.Table))
    assert sorted("S1_KG_" + s for s in suffixes) == names, "the PL/SQL list is the knowledge schema's"
    assert "LIKE" not in body.upper(), "exact names only: another store's tables must stay"
    assert "'ORAMEM_KG_' || in_store_id" in body, "the store's knowledge job goes too"
    assert "drop_knowledge(in_store_id)" in unit(code("oramem_admin.pkb"), "drop_objects")
    # drop_objects is what remove_store (drop_store, RECREATE) runs, and uninstall.sql drops
    # every registered store through drop_store
    assert "drop_objects(in_store_id)" in unit(code("oramem_admin.pkb"), "remove_store")
    assert "oramem_admin.drop_store" in _code_without_comments((REPO / "plsql" / "uninstall.sql").read_text())
    # an id with only knowledge tables left (dropped before this fix) can be dropped
    assert "_KG_EVENT'" in unit(code("oramem_admin.pkb"), "drop_store")


# N3: thread deletes as SQLite's delete_thread: the hook always runs with the thread named,
# count = the thread row existed, reason delete_thread also through delete('thread', id).
def test_n3_thread_delete_always_runs_the_hook_and_counts_the_thread_row():
    body = unit(code("oramem_store.pkb"), "remove_thread")
    assert not re.search(r"IF\s+l_types\.COUNT\s*>\s*0\s+THEN[^;]*call_hook", body, re.S), \
        "the hook must run when no row was left (SQLite always runs it)"
    assert "call_hook(in_store, out_event)" in body and "l_threads(1) := in_thread_id" in body
    assert re.search(r"IF\s+l_types\(i\)\s*=\s*'thread'\s+THEN\s+l_existed\s*:=\s*1", body)
    assert "RETURN l_existed" in body
    delete = unit(code("oramem_store.pkb"), "delete_record_json")
    assert "remove_thread(l_store, in_record_id, 'delete_thread', l_event)" in delete
    assert "LEAST(remove_thread" not in code("oramem_store.pkb")


# D4: the keyword store's CONTEXT index: SYNC settings only under MAINTENANCE MANUAL (23ai
# makes automatic maintenance the default and takes no other SYNC setting with it).
def test_d4_context_index_sync_is_under_manual_maintenance():
    body = unit(code("oramem_admin.pkb"), "text_params")
    assert "'MAINTENANCE MANUAL SYNC (MANUAL)'" in body
    assert "'MAINTENANCE MANUAL SYNC (ON COMMIT)'" in body
    assert re.search(r"WHEN\s+'auto'\s+THEN\s+''", body)
    assert not re.search(r"'SYNC \(", body), "no SYNC setting without MAINTENANCE MANUAL"


# N2 / S22 (reopened): the python driver's purge (purge_expired_json) keeps no events unless asked.
def test_n2_purge_expired_json_collects_events_only_when_asked():
    body = unit(code("oramem_store.pkb"), "purge_expired_json")
    call = re.search(r"purge_rows\((.*?)\);", body, re.S).group(1)
    assert "TRUE" not in call, "events must not be collected unconditionally (N2)"
    assert "in_with_events = 1" in call
    assert re.search(r"in_with_events\s+IN\s+PLS_INTEGER\s+DEFAULT\s+0", code("oramem_store.pks"))


# F10 (reopened): only PLS-00201/PLS-00904 under ORA-06550 are reported as a missing grant.
def test_f10_only_an_invisible_object_is_reported_as_a_missing_grant():
    for name in ("oramem_search.pkb", "oramem_store.pkb"):
        text = code(name)
        helper = re.search(r"FUNCTION\s+missing_grant\s+RETURN\s+BOOLEAN(.*?)END\s+missing_grant;", text, re.S).group(1)
        assert "'PLS-00201'" in helper and "'PLS-00904'" in helper and "FORMAT_ERROR_STACK" in helper
        for m in re.finditer(r"WHEN\s+e_plsql_compile\s+THEN(.*?)(?:WHEN\s+\w+\s+THEN|END;)", text, re.S):
            handler = m.group(1)
            assert re.match(r"\s*IF\s+NOT\s+missing_grant\s+THEN\s+RAISE;\s+END\s+IF;", handler), (name, handler[:200])


# N12: hybrid_available probes the privilege (a compiled reference), not the object's name.
def test_n12_hybrid_available_compiles_a_reference():
    body = re.search(r"FUNCTION\s+hybrid_available\s+RETURN\s+BOOLEAN(.*?)END\s+hybrid_available;",
                     code("oramem_registry.pkb"), re.S).group(1)
    assert "all_objects" not in body.lower()
    assert "DBMS_HYBRID_VECTOR.SEARCH" in body and "EXECUTE IMMEDIATE" in body
    assert re.search(r"IF\s+1\s*=\s*0\s+THEN", body), "the probe never runs SEARCH"
    assert re.search(r"WHEN\s+e_plsql_compile\s+THEN\s+g_hybrid_ok\s*:=\s*FALSE", body)


# N4: an erasure's cascade says reason "forget" (and the names) to the PL/SQL hook; what the
# erasers name is deleted in one statement without the hook.
def test_n4_forget_cascade_reason_and_one_delete_keys_statement():
    body = unit(code("oramem_store.pkb"), "delete_record_json")
    assert "CASE WHEN in_reason = 'forget' THEN 'forget' ELSE 'cascade' END" in body
    assert "l_event.put('names', JSON_ARRAY_T.parse(in_names))" in body
    # 'erase': a profile cascade whose caller erases the knowledge layer next (SyncOracleEngine
    # .delete with an eraser); the event stays a cascade and tells the knowledge hook so
    assert "in_reason NOT IN ('forget', 'erase') OR in_cascade <> 1" in body
    assert re.search(r"IF in_reason = 'erase' THEN\s+l_event\.put\('knowledge', 'caller'\);\s+END IF;", body)
    assert "in_reason = 'erase' (with in_cascade = 1 on a profile type)" in src("oramem_store.pks")
    keys = re.search(r"FUNCTION\s+delete_keys_json(.*?)END\s+delete_keys_json;", code("oramem_store.pkb"), re.S).group(1)
    assert "call_hook" not in keys, "the named records are deleted without the hook (SQLite delete_keys)"
    assert keys.count("EXECUTE IMMEDIATE") == 1 and "(r.record_type, r.record_id) IN (" in keys
    assert "FUNCTION delete_keys_json" in code("oramem_store.pks")


def test_delete_keys_takes_only_records_of_no_user():
    """As SQLite's delete_keys: after the actor's cascade, what the erasers name is deleted only
    when no user owns it; another user's record under a knowledge row's id stays (SC-13.1;
    tests/knowledge/test_tenant_redteam.py, Bob's imported event under Alice's message id)."""
    keys = re.search(r"FUNCTION\s+delete_keys_json(.*?)END\s+delete_keys_json;", code("oramem_store.pkb"), re.S).group(1)
    statement = keys[keys.index("EXECUTE IMMEDIATE"):keys.index("USING in_keys")]
    assert "' AND r.user_id IS NULL'" in statement


# D15: the contract text says what Oracle does (RRF in PL/SQL, the F15 exception to SC-6.5).
def test_d15_spec_names_the_rrf_fusion_and_the_f15_exception():
    spec = (REPO / "docs" / "spec" / "store.md").read_text()
    sc64 = spec[spec.index("- SC-6.4"):spec.index("- SC-6.5")]
    sc65 = spec[spec.index("- SC-6.5"):spec.index("- SC-6.6")]
    assert "fused on both engines by `HybridConfig`" in sc64 and "hybrid vector index and" not in sc64
    assert "F15" in sc65 and "fewer than k" in sc65
    assert "HYBRID = 1 - score/100" not in src("oramem_search.pks")


# N11: a ttl/timestamp-only update does not assign the CLOB content and JSON metadata to themselves.
def test_n11_update_sets_content_and_metadata_only_when_asked():
    body = unit(code("oramem_store.pkb"), "update_json")
    assert "ELSE r.content END" not in body and "ELSE r.metadata END" not in body
    assert "CASE WHEN l_set_c = 1 THEN ' r.content = :c,' END" in body
    assert "CASE WHEN l_set_m = 1 THEN ' r.metadata = CASE WHEN :m IS NULL THEN NULL ELSE JSON(:mj) END,' END" in body
    # one USING list per shape, each with as many binds as its statement has placeholders
    placeholders = {(True, True): 9, (True, False): 7, (False, True): 8, (False, False): 6}
    usings = re.findall(r"EXECUTE IMMEDIATE l_rec_upd\s+USING ([^;]*);", body)
    assert sorted(len(u.split(",")) for u in usings) == sorted(placeholders.values())


# N6: list reads the raw scope column (SQLite's list, profiles=False), not the search's
# effective-column OR form that keeps the scope index out of the plan.
def test_n6_list_uses_the_raw_scope_column():
    body = unit(code("oramem_store.pkb"), "list_json")
    assert re.search(r"oramem_filter\.scope_condition\([^;]*in_raw\s*=>\s*1\)", body, re.S)
    scope = unit(code("oramem_filter.pkb"), "scope_condition")
    raw = scope[scope.index("IF in_raw = 1 THEN"):]
    raw = raw[:raw.index("END IF;\n      IF l_match = 'equals' THEN")]
    assert "record_type" not in raw and "RETURN '(' || l_col || ' = :f' || l_n || ')';" in raw
    # search keeps the effective columns (SC-6.2)
    assert "in_raw" not in code("oramem_search.pkb")


# N7: ties are ordered byte-wise whatever the session's NLS_SORT, and regular expressions are
# case-sensitive whatever NLS_SORT says (match parameter 'c').
#: the HYBRID fusion code of oramem_search (keys_sql, the legs' arrays, and the fused query in
#: search_json) is H5's (issue 24 brief): its two orderings are noted for them in
#: coord/NOTES.md and listed here until changed
PENDING_N7_FUSION_ORDER_BY = 0
PENDING_N7_FUSION_KEYS = "FUNCTION keys_sql("


def test_n7_rank_ties_and_regexps_do_not_follow_nls_sort():
    text = code("oramem_search.pkb")
    keys = text[text.index(PENDING_N7_FUSION_KEYS):text.index("END keys_sql;")]
    plain = re.findall(r"ORDER BY [^']*?\b(?:\w\.)?record_type, (?:\w\.)?record_id", text.replace(keys, ""))
    assert plain == [], plain
    assert text.count("ORDER BY 3, 1, 2") == PENDING_N7_FUSION_ORDER_BY
    # 1 aggregate + 1 approximate + 3 exact/keyword rankings + the legs (keys_sql) + the two
    # fused HYBRID queries, 2 each
    assert text.count("NLSSORT(") == 16
    for name in ("oramem_registry.pkb", "oramem_filter.pkb", "oramem_admin.pkb", "oramem_search.pkb"):
        for m in re.finditer(r"REGEXP_LIKE\((.*?)\)\s*(?:THEN|OR|AND|\n)", code(name), re.S):
            assert m.group(1).rstrip().endswith("'c'"), (name, m.group(0)[:120])


# D5 / F16 (reopened): the knowledge hook runs next to the registered one, never instead of it.
def test_d5_call_hook_runs_the_knowledge_hook_and_the_registered_one():
    text = code("oramem_store.pkb")
    body = re.search(r"PROCEDURE\s+call_hook\((.*?)END\s+call_hook;", text, re.S).group(1)
    assert "gc_kg_hook CONSTANT VARCHAR2(64 CHAR) := 'ORAMEM_KG_JOBS.ON_STORE_DELETE'" in text
    assert "|| '_KG_EVENT'" in body, "the knowledge hook runs only for stores with knowledge tables"
    kg = body.index("'BEGIN ' || gc_kg_hook || '(:1); END;'")
    app = body.index("'BEGIN ' || l_hook || '(:1); END;'")
    assert kg < app and "UPPER(in_store.deletion_hook) <> gc_kg_hook" in body, "both run, the KG hook once"
    # and KnowledgeMemory no longer takes the store's one registration slot
    layer = [p.read_text() for p in (REPO / "oramem" / "knowledge").rglob("*.py")]
    assert any("register_deletion_hook(" in text for text in layer)  # the SQLite hook is registered
    assert not any("register_deletion_hook(ORACLE_DELETION_HOOK)" in text for text in layer)


# N9: long strings fail with the documented error, measured on the CLOB form before get_string.
def test_n9_string_lengths_are_checked_before_get_string():
    get_text = unit(code("oramem_store.pkb"), "get_text")
    assert get_text.index("DBMS_LOB.GETLENGTH(in_obj.get_clob(in_key)) > in_max_len") < get_text.index("get_string")
    flt = code("oramem_filter.pkb")
    i = flt.index("l_str := l_arr.get_string(0);")
    assert "DBMS_LOB.GETLENGTH(l_arr.get_clob(0)) > 4000" in flt[i - 400:i]
    search = code("oramem_search.pkb")
    j = search.index("l_cond := oramem_filter.scope_condition(")
    assert "DBMS_LOB.GETLENGTH(l_scope.get_clob('value')) > 255" in search[j - 500:j]


# (found in this round, not in the reviews) a package body declaring items after a subprogram
# body does not compile (PLS-00103): main's oramem_search.pkb declared gc_english_stopwords,
# gc_text_reserved and TYPE ranking_t after its first subprograms. Rule (d) of the gate.
def test_declaration_order_rule_catches_an_item_after_a_subprogram():
    from .plsql_gate import declaration_order_findings

    bad = ("CREATE OR REPLACE PACKAGE BODY p\nAS\n   g_a PLS_INTEGER := 1;\n   PROCEDURE x\n   IS\n   BEGIN\n"
           "      NULL;\n   END x;\n   gc_b CONSTANT VARCHAR2(10 CHAR) := 'b';\n   TYPE t IS RECORD (n NUMBER);\n"
           "   FUNCTION y RETURN NUMBER\n   IS\n      l_v NUMBER;\n   BEGIN\n      RETURN 1;\n   END y;\nEND p;\n/\n")
    found = declaration_order_findings(bad)
    assert [f.split(":")[0] for f in found] == ["line 9", "line 10"], found
    good = bad.replace("   gc_b CONSTANT VARCHAR2(10 CHAR) := 'b';\n   TYPE t IS RECORD (n NUMBER);\n", "")
    assert declaration_order_findings(good) == []
    for name in ("oramem_search.pkb", "oramem_store.pkb"):
        assert declaration_order_findings(src(name)) == []


def test_verify_md_has_one_row_per_round3_id():
    text = (REPO / "plsql" / "VERIFY.md").read_text()
    section = text[text.index("## Review round 3"):].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([^|]+?) \| [^|]+ \| ([^|]+) \|", section, re.M)
    ids = [r[0] for r in rows if r[0] not in ("id", "---")]
    expected = ([f"N{i}" for i in range(1, 14)] + ["S22", "S4", "F10", "F16 / D5", "(decl-order)"]
                + [f"D{i}" for i in (1, 4, 6, 7, 8, 9, 11, 12, 13, 14, 15)])
    assert sorted(ids) == sorted(expected)
    for rid, status in rows:
        if rid in ("id", "---"):
            continue
        assert re.match(r"(fixed|open|not a defect)", status.strip()), (rid, status)
        if status.strip().startswith("fixed"):
            assert re.search(r"[0-9a-f]{7}", status), (rid, status)  # the commit
