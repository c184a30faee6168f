"""PL/SQL text tests of the Oracle reembed (plsql/oramem_admin.pkb, "re-embedding";
oramem_store.lock_retrieval_rows): what tests/oracle/reembed_standin.py assumes of the
package is what its text does. Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from .test_round3_findings import code
from .test_store_findings import unit

ADMIN = code("oramem_admin.pkb")


def test_the_shadow_column_and_the_swap_ddl_are_fixed_templates_run_autonomously():
    assert "q'[ALTER TABLE #CHK# ADD (embedding_new VECTOR(#DIM#, FLOAT32))]'" in ADMIN
    assert "q'[ALTER TABLE #CHK# SET UNUSED (#COL#)]'" in ADMIN
    assert "q'[ALTER TABLE #CHK# RENAME COLUMN embedding_new TO embedding]'" in ADMIN
    for name in ("reembed_begin_json", "reembed_finish_json"):
        body = unit(ADMIN, name)
        # DDL only through exec_ddl (autonomous, commits only itself), under the store's lock
        assert "EXECUTE IMMEDIATE" not in body
        assert body.index("lock_store(") < body.index("exec_ddl(") and "unlock_store;" in body
        assert re.search(r"WHEN OTHERS THEN.*unlock_store;\s*RAISE;", body, re.S)


def test_begin_records_the_target_before_the_column_and_leaves_another_pending_alone():
    body = unit(ADMIN, "reembed_begin_json")
    assert body.index("save_reembed_target(l_id, l_value.to_clob);") < body.index("gc_tpl_add_new_embedding")
    refuse = body.index("l_out.put('started', FALSE);")
    assert body.index("AND in_restart = 0 THEN") < refuse < body.index("save_reembed_target(")
    assert "RETURN l_out.to_clob;" in body[refuse: refuse + 200]
    save = unit(ADMIN, "save_reembed_target")
    assert "PRAGMA AUTONOMOUS_TRANSACTION;" in save and "COMMIT;" in save


def test_save_writes_only_rows_still_there_with_the_text_embedded():
    body = unit(ADMIN, "reembed_save_json")
    stmt = re.search(r"l_sql := 'UPDATE '.*?;\n", body, re.S).group(0)
    assert "SET c.embedding_new = TO_VECTOR(:1, " in stmt
    assert "WHERE c.record_type = :2 AND c.record_id = :3 AND c.chunk_no = :4" in stmt
    assert "AND ((NVL(DBMS_LOB.GETLENGTH(c.chunk_text), 0) = 0 AND :5 IS NULL)'" in stmt
    assert "' OR DBMS_LOB.COMPARE(c.chunk_text, :6) = 0)'" in stmt
    assert "USING l_row.get(4).to_clob, l_row.get_string(0), l_row.get_string(1), l_row.get_number(2),\n" \
           "                  l_text, l_text;" in body  # one value per placeholder, in order
    assert "INSERT" not in body and "COMMIT" not in body  # no copy of a text, the caller commits
    # every row is checked (shape, dimension) before the first is written
    assert body.index("gc_vector_mismatch") < body.index("EXECUTE IMMEDIATE l_sql")
    assert body.index("reembed_check(") < body.index("BEGIN")  # the pending target first


def test_same_dimension_swap_is_one_update_in_the_callers_transaction():
    body = unit(ADMIN, "reembed_swap_json")
    same = body[body.index("IF l_pending.get_number('vector_dim') = l_store.vector_dim THEN"): body.index("ELSE", body.index("record_reembed("))]
    assert "' SET embedding = embedding_new'" in same and "record_reembed(l_store.memory_store_id, l_pending);" in same
    assert "exec_ddl" not in body and "COMMIT" not in body
    # refused while a row still lacks its new vector
    assert body.index("' WHERE embedding_new IS NULL'") < body.index("SET embedding = embedding_new")
    other = body[body.index("ELSE", body.index("record_reembed(")):]
    assert "state       = oramem_registry.gc_state_upgrading" in other
    record = unit(ADMIN, "record_reembed")
    assert "COMMIT" not in record and "gc_reembed_option" in record and "embedder    = l_embedder," in record


def test_finish_steps_are_idempotent_and_in_order():
    body = unit(ADMIN, "reembed_finish_json")
    steps = [body.index(s) for s in (
        "drop_index_if_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_hnsw), FALSE);",
        "IF column_exists(l_chk, 'EMBEDDING_NEW') THEN",
        "'#COL#', 'embedding'));",
        "exec_ddl(REPLACE(gc_tpl_rename_new, '#CHK#', l_chk_q));",
        "IF NOT index_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_hnsw)) THEN",
        "record_reembed_committed(l_id, l_pending);",
    )]
    assert steps == sorted(steps)
    committed = unit(ADMIN, "record_reembed_committed")
    assert "PRAGMA AUTONOMOUS_TRANSACTION;" in committed and "COMMIT;" in committed


def test_the_reembed_lock_takes_the_erasure_lock_order_first():
    body = unit(code("oramem_store.pkb"), "lock_retrieval_rows")
    assert body.index("lock_erasers(l_store);") < body.index("' IN EXCLUSIVE MODE'")
    assert "gc_obj_chunks" in body and "COMMIT" not in body


def test_a_hybrid_store_takes_only_the_embedder_it_records_before_anything_is_written():
    body = unit(ADMIN, "reembed_begin_json")
    check = body.index("IF l_store.search_strategy = 'hybrid'")
    cond = body[check: body.index("THEN", check)]
    assert "l_prev IS NULL OR NOT same_embedder(l_prev, l_target.to_clob)" in cond
    assert check < body.index("save_reembed_target(") and check < body.index("exec_ddl(")
    assert "gc_invalid_argument" in body[check: check + 700]


def test_a_store_whose_knowledge_tables_hold_vectors_is_refused_before_anything_is_written():
    """rek43: the Oracle reembed moves the retrieval rows only, so a store whose knowledge
    tables hold a vector is refused by begin (READY: before the target and the shadow column
    are written) and by the swap (a vector written since the begin), with -20001."""
    begin = unit(ADMIN, "reembed_begin_json")
    check = begin.index("refuse_knowledge_vectors(l_id);")
    assert check < begin.index("save_reembed_target(") and check < begin.index("exec_ddl(")
    guard = begin[begin.rindex("IF ", 0, check): check]
    assert "l_store.state = oramem_registry.gc_state_ready" in guard
    swap = unit(ADMIN, "reembed_swap_json")
    at = swap.index("refuse_knowledge_vectors(l_store.memory_store_id);")
    assert at < swap.index("SET embedding = embedding_new") and at < swap.index("gc_state_upgrading,")
    refuse = unit(ADMIN, "refuse_knowledge_vectors")
    assert "IF knowledge_vectors_exist(in_store_id) THEN" in refuse and "gc_invalid_argument" in refuse
    assert "Keep this embedder" in refuse


def test_the_knowledge_vector_columns_checked_are_those_of_kg_vectors():
    """The (table, vector column) pairs knowledge_vectors_exist reads are every knowledge
    vector oramem/kg_vectors.py names (and the schema has): a vector table added there
    without the check here would slip past the refusal."""
    from oramem.kg_vectors import CLUSTER_TABLE, SOURCES
    from oramem.knowledge.db.schema import Vector, build_tables

    body = unit(ADMIN, "knowledge_vectors_exist")
    lists = re.findall(r"name_tab_t\((.*?)\);", body, re.S)
    tables, columns = ([x.strip().strip("'") for x in part.split(",")] for part in lists)
    pairs = set(zip(tables, columns))
    assert pairs == {(s.table, s.column.upper()) for s in SOURCES} | {(CLUSTER_TABLE, "EMBEDDING_VEC")}
    kg = build_tables("S1", 8)
    in_schema = {(t.name[len("S1_KG_"):], c.name.upper()) for t in kg.metadata.sorted_tables for c in t.c
                 if isinstance(c.type, Vector)}
    assert pairs == in_schema
    assert "DBMS_ASSERT.ENQUOTE_NAME(DBMS_ASSERT.SIMPLE_SQL_NAME(l_name), TRUE)" in body
    assert "IF table_exists(l_name) THEN" in body and "ROWNUM = 1" in body
