"""Static-gate rule (e) (fake40, 2026-12-07 q): no PL/SQL reserved word is declared as an
identifier in ddl/ and plsql/ (PL/SQL Language Reference, Appendix D, Table D-1: "reserved
words can never be used as identifiers"; Oracle refuses such a unit at compile time). The
gate's parsers (ParseOra, plsql_parse) do not know the list, so a parameter named ``desc`` or
a variable named ``mode`` passed the gate and failed only on a database. The rule itself runs
over every source file in test_source_rules.py (SOURCE_RULES); here: that it finds what it
must, and that its net sees the declarations the repository makes.
"""

from __future__ import annotations

import pytest

from .plsql_gate import PLSQL_RESERVED_WORDS, declared_names, reserved_identifier_findings, source_files
from .plsql_parse import parse_packages

BAD = """CREATE OR REPLACE PACKAGE BODY p AS
   mode VARCHAR2(10 CHAR);
   FUNCTION f(desc IN VARCHAR2, size NUMBER) RETURN NUMBER IS
      start CONSTANT NUMBER := 1;
      lock EXCEPTION;
      share oramem_registry.store_t;
      option t.c%TYPE;
      TYPE table IS TABLE OF NUMBER;
      CURSOR select IS SELECT 1 FROM dual;
   BEGIN
      FOR index IN 1 .. 3 LOOP NULL; END LOOP;
      RETURN 1;
   END f;
   PROCEDURE values;
END p;
/
"""

GOOD = """CREATE OR REPLACE PACKAGE BODY p AS
   -- a comment may say: mode VARCHAR2, desc IN VARCHAR2
   l_mode VARCHAR2(10 CHAR) := 'desc';
   FUNCTION f(in_desc IN VARCHAR2, in_size NUMBER) RETURN NUMBER IS
      TYPE num_tab_t IS TABLE OF NUMBER INDEX BY PLS_INTEGER;
      l_t num_tab_t;
      l_x VARCHAR2(10 CHAR);
   BEGIN
      SELECT COUNT(*) INTO l_x FROM dual WHERE 1 IN (SELECT 1 FROM dual) ORDER BY 1 DESC;
      l_x := CASE WHEN in_desc IS NULL THEN 'a' ELSE TREAT(NULL AS VARCHAR2) END;
      FOR i IN 1 .. 3 LOOP NULL; END LOOP;
      FOR r IN (SELECT 1 AS n FROM dual) LOOP NULL; END LOOP;
      RETURN CAST(in_size AS NUMBER);
   END f;
END p;
/
"""


def test_the_rule_finds_a_reserved_word_declared_in_each_position():
    found = reserved_identifier_findings(BAD)
    names = sorted(f.split(": ", 1)[1].split(" ", 1)[0] for f in found)
    assert names == sorted(["mode", "desc", "size", "start", "lock", "share", "option", "table", "select",
                            "index", "values"]), found
    assert all("PL/SQL reserved word" in f and "rename it" in f for f in found)


def test_the_rule_passes_reserved_words_used_as_words_and_in_comments_and_strings():
    assert reserved_identifier_findings(GOOD) == []


def test_the_list_is_table_d1():
    # spot checks against Table D-1 (keywords of Table D-2 such as NAME, TEXT, VALUE are not reserved)
    assert {"DESC", "MODE", "SIZE", "START", "SHARE", "OPTION", "RESOURCE", "CLUSTER", "TABAUTH"} <= PLSQL_RESERVED_WORDS
    assert not {"NAME", "TEXT", "VALUE", "DATA", "KEY", "TYPE_NAME", "COUNT", "LIMIT"} & PLSQL_RESERVED_WORDS
    assert len(PLSQL_RESERVED_WORDS) == 85   # 7+3+11+5+4+4+3+1+9+2+2+4+6+2+2+6+5+3+3+3, by letter


@pytest.mark.parametrize("path", [p for p in source_files() if p.suffix in (".pks", ".pkb")], ids=lambda p: p.name)
def test_the_net_sees_every_parameter_the_signature_parser_sees(path):
    """Every parameter of every subprogram of the package (plsql_parse.package_signatures) is
    among the names the rule reads, so a reserved parameter name cannot slip past it."""
    text = path.read_text()
    seen = {t.upper for t, what in declared_names(text) if what == "a parameter name"}
    params = {p.name for unit in parse_packages(text) for sub in unit.subprograms for p in sub.params}
    assert params, path
    assert params <= seen, sorted(params - seen)
    subs = {sub.name for unit in parse_packages(text) for sub in unit.subprograms}
    named = {t.upper for t, what in declared_names(text) if what in ("a procedure name", "a function name")}
    assert subs <= named, sorted(subs - named)
