"""Source rules over ddl/ and plsql/ (issue 10 item 2; see plsql_gate.py): SQLPREFIX line
starts, byte length semantics, and VARCHAR2 SQL that grows with user input without a bound."""

from __future__ import annotations

import pytest

from .plsql_gate import REPO, SOURCE_RULES, _rel, source_files

FILES = source_files()


@pytest.mark.parametrize("rule", sorted(SOURCE_RULES))
@pytest.mark.parametrize("path", FILES, ids=lambda p: _rel(p))
def test_source_rule(rule, path):
    check, pending = SOURCE_RULES[rule]
    problems = check(path.read_text())
    rel = _rel(path)
    if rel in pending:
        assert problems, (
            f"{rel} no longer breaks rule {rule!r}: remove its entry from the PENDING map in "
            f"tests/plsql/plsql_gate.py (it was: {pending[rel]})"
        )
        return
    assert not problems, f"{rel} breaks rule {rule!r}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("rule", sorted(SOURCE_RULES))
def test_pending_entries_name_real_files(rule):
    _, pending = SOURCE_RULES[rule]
    missing = [f for f in pending if not (REPO / f).is_file()]
    assert not missing, f"PENDING entries for rule {rule!r} name no file: {missing}"


def test_rules_cover_the_knowledge_ddl():
    rels = {_rel(p) for p in FILES}
    assert any(r.startswith("ddl/knowledge/") for r in rels), "ddl/knowledge/*.sql is not scanned"
    assert {"plsql/oramem_search.pkb", "ddl/001_catalog.sql", "plsql/install.sql"} <= rels
