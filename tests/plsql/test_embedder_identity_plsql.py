"""The embedder identity on Oracle (issue 28): PL/SQL text tests of the catalog upgrade
4 -> 5 (``ORAMEM_STORES.EMBEDDER``), the error code of a refused embedder, and the
open/compare/adopt path of oramem_admin, the same rule as
``oramem.embedders.identity.same_identity``. Each fails on the code before the change
(no column, no code, no comparison). The driver side is in
tests/oracle/test_embedder_identity_fake.py. Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from oramem.errors import StoreSettingsMismatch
from oramem.oracle.errors import ERROR_CLASSES

from .plsql_gate import REPO, _code_without_comments
from .plsql_parse import split_script
from .test_store_findings import src, unit

ADMIN = _code_without_comments(src("oramem_admin.pkb"))
UPGRADE = (REPO / "ddl" / "upgrades" / "004_to_005.sql").read_text()


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_catalog_upgrade_adds_the_json_column_once_and_records_version_5():
    items = [i for i in split_script(UPGRADE) if i.kind in ("plsql", "sql")]
    assert items[0].kind == "plsql" and "MERGE INTO oramem_schema_version" in items[1].text
    block = items[0].text
    assert "WHERE component = 'CATALOG'" in block and "IF l_version < 5 THEN" in block
    assert "column_name = 'EMBEDDER'" in block and "ADD (embedder CLOB)" in block
    assert "constraint_name = 'ORAMEM_STORES_EMBEDDER_CK'" in block and "CHECK (embedder IS JSON)" in block
    assert block.count("IF l_count = 0 THEN") == 3 and "WHEN OTHERS" not in block  # column, check, index
    assert "5 AS version" in items[1].text and "WHERE v.version < s.version" in items[1].text
    install = (REPO / "plsql" / "install.sql").read_text()
    at = install.index("@@../ddl/upgrades/004_to_005.sql")
    assert install.index("@@../ddl/upgrades/003_to_004.sql") < at < install.index("@@oramem_errors.pks")
    assert "embedder" not in (REPO / "ddl" / "001_catalog.sql").read_text().lower()  # released script untouched


def test_the_catalog_upgrade_indexes_the_erasure_log_by_the_subject_a_write_looks_up():
    """KC-3.10 (oramem.knowledge.write.erasures): a knowledge write's commit reads its user's and
    agent's receipts ``WHERE memory_store_id = :s AND subject_hash IN (...)``; the log's primary
    key is (memory_store_id, receipt_id), so without this index every receipt of the store is
    read on every write. Created once (USER_INDEXES guard), in the same catalog step 4 -> 5."""
    from oramem.knowledge.write.erasures import receipts_query
    from sqlalchemy.dialects import oracle

    block = _flat([i for i in split_script(UPGRADE) if i.kind == "plsql"][0].text)
    assert "FROM user_indexes WHERE index_name = 'ORAMEM_ERASURE_LOG_SUBJECT'" in block
    assert ("CREATE INDEX oramem_erasure_log_subject ' || 'ON oramem_erasure_log (memory_store_id, subject_hash)"
            in block)
    sql = str(receipts_query("oracle", "s1", ["h"]).compile(dialect=oracle.dialect()))
    assert "oramem_erasure_log.memory_store_id = " in sql and "oramem_erasure_log.subject_hash IN" in sql


def test_a_refused_embedder_has_its_own_code_mapped_to_store_settings_mismatch():
    spec = src("oramem_errors.pks")
    assert re.search(r"gc_embedder_mismatch\s+CONSTANT PLS_INTEGER := -20108;", spec)
    assert "PRAGMA EXCEPTION_INIT(e_embedder_mismatch, -20108)" in spec
    assert "gc_embedder_mismatch" in unit(_code_without_comments(src("oramem_errors.pkb")), "is_oramem_error")
    assert ERROR_CLASSES[20108][0] is StoreSettingsMismatch


def test_the_settings_take_an_identity_object_with_a_kind():
    body = _flat(unit(ADMIN, "parse_settings"))
    assert "l_obj.has('embedder') AND NOT l_obj.get('embedder').is_null" in body
    assert "NOT l_obj.get('embedder').is_object" in body and "bad_setting('embedder must be a JSON object" in body
    assert "IF NOT l_emb.has('kind') THEN bad_setting(" in body
    assert "ELSIF NOT l_emb.get('kind').is_string THEN bad_setting(" in body
    assert "l_set.embedder := l_emb.to_clob" in body


def test_reconcile_refuses_another_embedder_first_and_only_reads():
    body = _flat(unit(ADMIN, "reconcile"))
    check = body.index("oramem_errors.gc_embedder_mismatch")
    assert check < body.index("'vector_dim'")  # before vector_dim, as the SQLite engine
    assert "l_recorded IS NOT NULL AND NOT same_embedder(l_recorded, in_set.embedder)" in body
    for write in ("save_settings", "adopt_embedder", "UPDATE ", "INSERT ", "set_state"):
        assert write not in body


def test_the_comparison_is_the_sqlite_rule():
    core = _flat(unit(ADMIN, "identity_core"))
    # chunking never decides; onnx model/path are informational; files only when both have it;
    # a null member counts as absent (Python's dict.get)
    assert "IF in_other.has('files') THEN l_other_files := NOT in_other.get('files').is_null; END IF;" in core
    assert ("IF l_key = 'chunking' OR (l_kind = 'onnx' AND l_key IN ('model', 'path')) "
            "OR (l_kind = 'onnx' AND l_key = 'files' AND NOT l_other_files) THEN NULL;") in core
    assert "ELSIF NOT in_ident.get(l_key).is_null THEN l_out.put(l_key, in_ident.get(l_key));" in core
    same = _flat(unit(ADMIN, "same_embedder"))
    assert "identity_core(l_a, l_b)" in same and "identity_core(l_b, l_a)" in same
    assert "WHERE JSON_EQUAL(l_core_a, l_core_b)" in same
    from oramem.embedders.identity import _INFORMATIONAL, _WHEN_BOTH

    assert _INFORMATIONAL == {"onnx": {"model", "path"}} and _WHEN_BOTH == {"onnx": {"files"}}


def test_adoption_is_first_use_only_for_vector_stores_and_drops_chunking_when_rows_exist():
    body = _flat(unit(ADMIN, "adopt_embedder"))
    assert "PRAGMA AUTONOMOUS_TRANSACTION" in body
    assert "oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_chunks)" in body
    assert "IF l_rows > 0 THEN l_identity := without_chunking(in_embedder);" in body
    assert ("WHERE s.memory_store_id = in_store_id AND s.embedder IS NULL AND s.vector_dim IS NOT NULL "
            "AND s.search_strategy IN ('vector', 'hybrid')") in body
    strip = _flat(unit(ADMIN, "without_chunking"))
    assert "IF l_keys(i) <> 'chunking' THEN" in strip
    first = _flat(unit(ADMIN, "adopt_if_unrecorded"))
    assert "in_set.has_embedder AND recorded_embedder(in_set.store_id) IS NULL" in first


def test_every_open_and_create_adopts_and_reports_the_identity():
    open_body = _flat(unit(ADMIN, "open_store"))
    # the lock-free path and the path under the lock
    assert open_body.count("adopt_if_unrecorded(l_set);") == 2
    assert open_body.index("adopt_if_unrecorded(l_set); RETURN describe_obj(") > 0
    create = _flat(unit(ADMIN, "create_store"))
    assert "create_new(l_set); adopt_if_unrecorded(l_set);" in create
    describe = _flat(unit(ADMIN, "describe_obj"))
    assert "l_obj.put_null('embedder')" in describe
    assert "l_obj.put('embedder', JSON_ELEMENT_T.parse(l_row.embedder))" in describe


def test_the_spec_documents_the_setting_and_the_error():
    spec = _flat(src("oramem_admin.pks"))
    assert '"embedder": {"kind": "onnx", ...}}' in spec and '"embedder": {...} | null' in spec
    assert "-20108 another embedder than the" in spec and "is a -20108 before anything is written" in spec
