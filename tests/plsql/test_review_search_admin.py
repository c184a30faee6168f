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
