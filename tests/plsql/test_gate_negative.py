"""The gate's checks fail on small synthetic mistakes (so a green gate means something)."""

from __future__ import annotations

import pytest

from oramem.oracle.calls import PlsqlCall, check_calls_against
from .plsql_parse import (
    PlsqlSyntaxError,
    check_structure,
    compare_spec_body,
    package_signatures,
    parse_packages,
    split_script,
    tokenize,
)

from .plsql_gate import mask_known_false_positives, parse_errors

SPEC = """
CREATE OR REPLACE PACKAGE demo AUTHID DEFINER AS
   FUNCTION add_json(in_store_id IN VARCHAR2, in_batch IN CLOB, in_batch_size IN PLS_INTEGER DEFAULT 256) RETURN CLOB;
   PROCEDURE drop_it(in_store_id IN VARCHAR2, io_n IN OUT NOCOPY NUMBER);
   FUNCTION list_all RETURN CLOB;
END demo;
/
"""
BODY = """
CREATE OR REPLACE PACKAGE BODY demo AS
   FUNCTION add_json(in_store_id IN VARCHAR2, in_batch IN CLOB, in_batch_size IN PLS_INTEGER DEFAULT 256) RETURN CLOB IS
      l_x CLOB := 'it''s END; here -- not a comment';
   BEGIN
      IF in_batch IS NULL THEN
         RETURN NULL;
      END IF;
      FOR i IN 1 .. 3 LOOP
         l_x := l_x || CASE WHEN i = 1 THEN 'a' ELSE 'b' END;
      END LOOP;
      RETURN l_x;
   END add_json;
   PROCEDURE drop_it(in_store_id IN VARCHAR2, io_n IN OUT NOCOPY NUMBER) IS
   BEGIN
      <<outer>>
      LOOP
         EXIT outer;
      END LOOP outer;
      BEGIN
         NULL;
      EXCEPTION WHEN OTHERS THEN RAISE;
      END;
   END drop_it;
   FUNCTION list_all RETURN CLOB IS
   BEGIN
      RETURN q'[ BEGIN IF ]' || '/';
   END list_all;
END demo;
/
"""


def _pkg(text):
    (pkg,) = list(parse_packages(text))
    return pkg


def test_good_pair_agrees():
    spec, body = _pkg(SPEC), _pkg(BODY)
    assert [s.name for s in spec.subprograms] == ["ADD_JSON", "DROP_IT", "LIST_ALL"]
    assert compare_spec_body(spec, body) == []
    assert check_structure(BODY) == []


@pytest.mark.parametrize(
    "old,new,expect",
    [
        ("in_batch IN CLOB, in_batch_size IN PLS_INTEGER DEFAULT 256) RETURN CLOB IS",
         "p_batch IN CLOB, in_batch_size IN PLS_INTEGER DEFAULT 256) RETURN CLOB IS", "name"),
        ("in_batch_size IN PLS_INTEGER DEFAULT 256) RETURN CLOB IS",
         "in_batch_size IN PLS_INTEGER DEFAULT 255) RETURN CLOB IS", "default"),
        ("in_batch_size IN PLS_INTEGER DEFAULT 256) RETURN CLOB IS",
         "in_batch_size IN NUMBER DEFAULT 256) RETURN CLOB IS", "type"),
        ("in_batch_size IN PLS_INTEGER DEFAULT 256) RETURN CLOB IS",
         "in_batch_size IN PLS_INTEGER DEFAULT 256) RETURN VARCHAR2 IS", "RETURN"),
        ("io_n IN OUT NOCOPY NUMBER) IS", "io_n OUT NOCOPY NUMBER) IS", "mode"),
        ("io_n IN OUT NOCOPY NUMBER) IS", "io_n IN OUT NUMBER) IS", "nocopy"),
        (", in_batch_size IN PLS_INTEGER DEFAULT 256) RETURN CLOB IS", ") RETURN CLOB IS", "parameters"),
        ("FUNCTION list_all RETURN CLOB IS", "FUNCTION list_every RETURN CLOB IS", "no FUNCTION"),
    ],
)
def test_spec_body_mismatch_is_reported(old, new, expect):
    assert old in BODY
    bad = BODY.replace(old, new, 1)
    if expect == "no FUNCTION":
        bad = bad.replace("END list_all;", "END list_every;")
    problems = compare_spec_body(_pkg(SPEC), _pkg(bad))
    assert problems and expect in " ".join(problems), problems


@pytest.mark.parametrize(
    "old,new,expect",
    [
        ("END add_json;", "END add_jsn;", "does not match"),
        ("END demo;", "END demo2;", "does not match unit DEMO"),
        ("      END IF;\n", "", "END closes IF"),
        ("END LOOP outer;", "END LOOP inner;", "loop label"),
        ("         NULL;\n      EXCEPTION", "         NULL;\n      END;\n      EXCEPTION", "END"),
        ("      RETURN l_x;\n   END add_json;", "      RETURN l_x;\n", "never closed"),
        ("THEN 'a' ELSE 'b' END;", "THEN 'a' ELSE 'b';", "END closes LOOP"),
        ("l_x := l_x ||", "l_x := (l_x ||", "never closed"),
    ],
)
def test_structure_errors_are_reported(old, new, expect):
    assert old in BODY
    item = [i for i in split_script(BODY.replace(old, new, 1)) if i.kind == "plsql"]
    problems = [str(e) for it in item for e in check_structure(it.text, it.line)]
    assert problems and expect in " ".join(problems), problems


def test_lexical_errors():
    with pytest.raises(PlsqlSyntaxError, match="unterminated string"):
        tokenize("SELECT 'abc FROM dual")
    with pytest.raises(PlsqlSyntaxError, match="unterminated q"):
        tokenize("SELECT q'[abc' FROM dual")
    with pytest.raises(PlsqlSyntaxError, match="comment"):
        tokenize("SELECT /* abc FROM dual")
    assert "".join(t.text for t in tokenize(BODY)) == BODY


def test_split_script_kinds_and_terminators():
    script = (
        "SET DEFINE OFF\nPROMPT it's fine\n@@oramem_errors.pks\n"
        "CREATE TABLE t (id NUMBER, s VARCHAR2(10) DEFAULT ';');\n"
        "-- comment ;\n"
        "BEGIN\n  NULL; -- ;\nEND;\n/\n"
        "CREATE OR REPLACE TYPE t_o AS OBJECT (a NUMBER);\n/\n"
        "SET TRANSACTION READ ONLY;\n"
        "SELECT 1 FROM dual\n/\n"
    )
    items = split_script(script)
    assert [(i.kind, i.command) for i in items] == [
        ("sqlplus", "SET"), ("sqlplus", "PROMPT"), ("sqlplus", "@@"),
        ("sql", None), ("plsql", None), ("plsql", None), ("sql", None), ("sql", None),
    ]
    assert items[3].text.endswith("DEFAULT ';')")
    assert items[4].text.strip().endswith("END;") and items[4].line == 6
    assert items[7].text == "SELECT 1 FROM dual"


def test_masks_hide_only_known_false_positives():
    text = (
        "CREATE TABLE t (v VECTOR(384, FLOAT32), w VECTOR(*, INT8), c VARCHAR2(9) DEFAULT 'VECTOR(3, X)');\n"
        "SELECT id FROM t ORDER BY VECTOR_DISTANCE(v, :q, COSINE) FETCH APPROX FIRST 5 ROWS ONLY;\n"
        "SELECT JSON_TRANSFORM(m, SET '$.a' = 1) FROM t;\n"
    )
    masked, counts = mask_known_false_positives(text)
    assert counts == {"vector_type": 2, "fetch_approx": 1, "json_transform": 1}
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")
    assert "'VECTOR(3, X)'" in masked  # strings untouched
    assert parse_errors(text) == []
    # a real error next to a masked construct is still reported
    assert parse_errors("CREATE TABLE t (v VECTOR(384, FLOAT32), c NUMBER,);\n")
    # an unknown vector format is not masked
    assert parse_errors("CREATE TABLE t (v VECTOR(384, FLOAT16));\n")


def test_unmodelled_statements_need_the_allow_list():
    assert parse_errors("CREATE VECTOR INDEX i ON t (v) ORGANIZATION INMEMORY NEIGHBOR GRAPH;\n") == []
    assert parse_errors("FROBNICATE THE DATABASE NOW;\n")


def test_parseora_reports_broken_plsql():
    assert parse_errors("BEGIN\n  IF x THEN NULL;\nEND;\n/\n")


SPEC_CALLS = package_signatures(SPEC)


@pytest.mark.parametrize(
    "call,expect",
    [
        (PlsqlCall("demo", "add_json", (("in_store_id", "VARCHAR2"), ("in_batch", "CLOB")), "CLOB"), None),
        (PlsqlCall("demo", "add_json", (("in_store_id", "VARCHAR2"), ("in_batch", "CLOB"),
                                        ("in_batch_size", "PLS_INTEGER")), "CLOB"), None),
        (PlsqlCall("demox", "add_json", (), "CLOB"), "no package spec"),
        (PlsqlCall("demo", "add_jsn", (), "CLOB"), "no such subprogram"),
        (PlsqlCall("demo", "add_json", (("in_store_id", "VARCHAR2"), ("in_batch", "CLOB"))), "called as a procedure"),
        (PlsqlCall("demo", "add_json", (("in_store", "VARCHAR2"), ("in_batch", "CLOB")), "CLOB"), "no parameter IN_STORE"),
        (PlsqlCall("demo", "add_json", (("in_store_id", "VARCHAR2"),), "CLOB"), "required parameter IN_BATCH"),
        (PlsqlCall("demo", "add_json", (("in_store_id", "VARCHAR2"), ("in_batch", "VARCHAR2")), "CLOB"), "is CLOB"),
        (PlsqlCall("demo", "add_json", (("in_store_id", "VARCHAR2"), ("in_batch", "CLOB")), "NUMBER"), "returns CLOB"),
        (PlsqlCall("demo", "drop_it", (("in_store_id", "VARCHAR2"), ("io_n", "NUMBER"))), "IN OUT"),
    ],
)
def test_call_table_check(call, expect):
    problems = check_calls_against([call], {"DEMO": SPEC_CALLS})
    if expect is None:
        assert problems == []
    else:
        assert problems and expect in problems[0], problems


def test_plsql_call_bind_rejects_typos():
    call = PlsqlCall("demo", "add_json", (("in_store_id", "VARCHAR2"), ("in_batch", "CLOB")), "CLOB")
    assert call.bind(in_batch="[]", in_store_id="S") == {"in_store_id": "S", "in_batch": "[]"}
    with pytest.raises(TypeError, match="missing parameters \\['in_batch'\\].*unknown parameters \\['in_btch'\\]"):
        call.bind(in_store_id="S", in_btch="[]")


def test_parser_crash_is_a_failure_not_a_hang():
    # ParseOra 0.1.8 aborts on this input; the gate reports it instead of dying
    problems = parse_errors("CREATE TABLE t (v VECTOR, c NUMBER));\n")
    assert problems and ("crashed" in problems[0] or "unexpected" in problems[0])
    # and the structural check names the unbalanced parenthesis
    assert any("unbalanced ')'" in str(e) for e in check_structure("CREATE TABLE t (v VECTOR, c NUMBER))"))


def test_template_gate_catches_a_broken_template():
    from .test_static_gate import _STATEMENT_START, _expand

    found = {"gc_tpl_cols": (100, "a NUMBER,"), "gc_tpl_t": (100, "CREATE TABLE #T# (#COLS# )")}
    sql = _expand(found["gc_tpl_t"][1], found)
    assert sql == "CREATE TABLE OM_T1_T (a NUMBER, )" and sql.upper().startswith(_STATEMENT_START)
    assert parse_errors(sql + ";\n")


# -- source rules (issue 10 item 2) ------------------------------------------------------
def test_sqlprefix_rule_catches_an_indented_hash_line():
    from .plsql_gate import sqlprefix_findings

    bad = "BEGIN\n   l := 'CREATE TABLE t (\n      #EMBEDDING#\n   )';\nEND;\n/\n"
    assert [f.split(":")[0] for f in sqlprefix_findings(bad)] == ["line 3"]
    assert sqlprefix_findings(bad.replace("      #EMBEDDING#", "      x CLOB, #EMBEDDING#")) == []


@pytest.mark.parametrize(
    "decl,bad",
    [
        ("l_id VARCHAR2(512);", True),
        ("TYPE t IS TABLE OF VARCHAR2(64) INDEX BY PLS_INTEGER;", True),
        ("l_sql := 'CREATE TABLE x (id VARCHAR2(255) NOT NULL)';", True),  # DDL template text
        ("flag CHAR(1)", True),
        ("l_m VARCHAR2(4000 BYTE) := SUBSTRB(x, 1, 4000);", True),  # BYTE without the why
        ("l_m VARCHAR2(4000 BYTE) := SUBSTRB(x, 1, 4000);  -- bytes: SUBSTRB-bounded", False),
        ("l_id VARCHAR2(512 CHAR);", False),
        ("l_sql VARCHAR2(32767);", False),
        ("l_x NVARCHAR2(10);", False),
        ("-- a comment about VARCHAR2(10)", False),
        ("l := TO_CHAR(12);", False),
    ],
)
def test_byte_semantics_rule(decl, bad):
    from .plsql_gate import byte_semantics_findings

    assert bool(byte_semantics_findings(f"DECLARE\n   {decl}\nBEGIN NULL; END;\n/\n")) is bad


@pytest.mark.parametrize(
    "body,bad",
    [
        ("l_sql VARCHAR2(32767);\nBEGIN\n   l_sql := l_sql || ' AND ' || l_cond;", True),
        ("l_sql VARCHAR2(32767);\nBEGIN\n   l_sql := l_sql\n      || x;", True),
        ("l_sql VARCHAR2(32767);\nBEGIN\n   -- bounded: fixed text\n   l_sql := l_sql || ')';", False),
        ("l_sql VARCHAR2(32767);\nBEGIN\n   l_sql := l_sql || ')';  -- bounded: fixed text", False),
        ("l_sql CLOB;\nBEGIN\n   l_sql := l_sql || l_part;", False),
        ("l_sql VARCHAR2(32767);\nBEGIN\n   l_sql := cat(l_sql, ' AND ', l_part);", False),
    ],
)
def test_unbounded_sql_rule(body, bad):
    from .plsql_gate import unbounded_growth_findings

    assert bool(unbounded_growth_findings(f"DECLARE\n   {body}\nEND;\n/\n")) is bad
