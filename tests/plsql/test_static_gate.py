"""Static gate over ddl/ and plsql/ (DESIGN.md "Testing", ORACLE_NOTES 13): runs in the
default suite, needs no database.

(a) every .sql/.pks/.pkb parses (ParseOra, with the masks of plsql_gate.py) and every
    PL/SQL unit passes oramem's structural check (END labels, block balance);
(b) every package spec subprogram is implemented in its body with identical parameter
    names, modes, types, defaults and return type;
(c) every PL/SQL call of the Python driver (oramem.oracle.calls) names a real package
    subprogram with real parameter names and types;
plus: the Python error table covers exactly the codes of plsql/oramem_errors.pks.
"""

from __future__ import annotations

import re

import pytest

from .plsql_parse import (
    PlsqlSyntaxError,
    check_structure,
    compare_spec_body,
    package_signatures,
    split_script,
)

from .plsql_gate import REPO, parse_errors, source_files

FILES = source_files()


def _id(p):
    return str(p.relative_to(REPO))


def test_sources_exist():
    specs = [p for p in FILES if p.suffix == ".pks"]
    assert specs, "no package specs under plsql/: the static gate has nothing to check"


def test_parseora_is_installed():
    try:
        import parseora  # noqa: F401
    except ImportError:  # pragma: no cover - environment problem, not a skip
        pytest.fail("ParseOra is missing: pip install -e '.[test]' (package qivo-parseora)")


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_file_parses(path):
    problems = parse_errors(path.read_text())
    assert not problems, f"{_id(path)}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_plsql_structure(path):
    problems = []
    for item in split_script(path.read_text()):
        if item.kind in ("plsql", "sql"):  # SQL too: parentheses and CASE/END balance
            problems += [str(e) for e in check_structure(item.text, item.line)]
    assert not problems, f"{_id(path)}:\n  " + "\n  ".join(problems)


def _packages():
    """Parsed package specs and bodies by name; a unit that fails the structural check is
    left out here (test_plsql_structure reports it)."""
    specs, bodies = {}, {}
    for path in FILES:
        for item in split_script(path.read_text()):
            if item.kind != "plsql":
                continue
            try:
                pkg = package_signatures(item.text, item.line)
            except PlsqlSyntaxError:
                continue
            if pkg is not None:
                (bodies if pkg.body else specs)[pkg.name] = pkg
    return specs, bodies


def test_every_spec_has_a_body():
    specs, bodies = _packages()
    bodies_present = [p for p in FILES if p.suffix == ".pkb"]
    if not bodies_present:
        pytest.skip("no package bodies (.pkb) under plsql/ yet")
    missing = sorted(set(specs) - set(bodies))
    assert not missing, f"package specs without a body: {missing}"


@pytest.mark.parametrize("name", sorted(_packages()[0]))
def test_spec_and_body_agree(name):
    specs, bodies = _packages()
    if name not in bodies:
        pytest.skip(f"no body for {name} yet (test_every_spec_has_a_body reports it)")
    problems = compare_spec_body(specs[name], bodies[name])
    assert not problems, "\n".join(problems)


def test_driver_calls_match_the_specs():
    from oramem.oracle.admin import ADMIN_CALLS
    from oramem.oracle.calls import KG_JOB_CALLS, check_calls_against
    from oramem.oracle.driver import ALL_CALLS

    specs, _ = _packages()
    calls = ALL_CALLS + tuple(ADMIN_CALLS.values()) + tuple(KG_JOB_CALLS.values())
    problems = check_calls_against(calls, specs)
    assert not problems, "\n".join(problems)


def test_error_table_matches_oramem_errors_spec():
    from oramem.oracle.errors import ERROR_CLASSES

    spec = (REPO / "plsql" / "oramem_errors.pks").read_text()
    declared = {int(m) for m in re.findall(r"gc_\w+\s+CONSTANT\s+PLS_INTEGER\s*:=\s*(-20\d\d\d)\s*;", spec, re.I)}
    assert declared, "no gc_ error constants found in plsql/oramem_errors.pks"
    mapped = {-code for code in ERROR_CLASSES if 20000 <= code <= 20999}
    assert mapped == declared, (
        f"codes in the spec but not mapped in oramem/oracle/errors.py: {sorted(declared - mapped)}; "
        f"mapped but not in the spec: {sorted(mapped - declared)}"
    )


# -- dynamic SQL templates (ORACLE_NOTES 13.2) ---------------------------------------------

_TPL = re.compile(r"\b(gc_tpl_\w+)\s+CONSTANT\s+VARCHAR2\s*\(\s*(\d+)\s*\)\s*:=\s*q'\[(.*?)\]'\s*;", re.I | re.S)
_STATEMENT_START = ("CREATE", "ALTER", "DROP", "INSERT", "UPDATE", "DELETE", "MERGE", "SELECT", "WITH")
#: sample values for #PLACEHOLDER#s that are not themselves templates
_SAMPLES = {"DIM": "384", "PARAMS": "SYNC (ON COMMIT)", "COL": "expires_at"}


def _templates():
    out = []
    for path in FILES:
        if path.suffix != ".pkb":
            continue
        text = path.read_text()
        found = {m.group(1).lower(): (int(m.group(2)), m.group(3)) for m in _TPL.finditer(text)}
        for name, (size, body) in found.items():
            out.append((path, name, size, body, found))
    return out


def _expand(body, found, depth=0):
    assert depth < 5, "template placeholders nest too deeply"

    def sub(m):
        key = m.group(1)
        inner = found.get(f"gc_tpl_{key.lower()}")
        # a placeholder named like a *fragment* template is filled with it (#EMBEDDING#);
        # anything else (#HNSW#: an index name) gets a sample value
        if inner is not None and not inner[1].strip().upper().startswith(_STATEMENT_START):
            return _expand(inner[1], found, depth + 1)
        return _SAMPLES.get(key, f"OM_T1_{key}")

    return re.sub(r"#([A-Z][A-Z0-9_]*)#", sub, body)


@pytest.mark.parametrize("tpl", _templates(), ids=lambda t: f"{t[0].name}:{t[1]}")
def test_sql_template_fits_and_parses(tpl):
    path, name, size, body, found = tpl
    assert len(body.encode("utf-8")) <= size, f"{name}: {len(body)} bytes do not fit VARCHAR2({size})"
    sql = _expand(body, found).strip()
    if not sql.upper().startswith(_STATEMENT_START):
        return  # a fragment: it is parsed inside the templates that include it
    problems = parse_errors(sql + ";\n")
    assert not problems, f"{_id(path)} {name} expanded to:\n{sql}\n  " + "\n  ".join(problems)


def test_python_calls_plsql_only_through_the_call_table():
    """Every callfunc/callproc in oramem/ passes a PlsqlCall's qualified_name (so the table
    checked above is complete): no literal subprogram names anywhere in the package."""
    allowed = {"oramem/oracle/sync_engine.py", "oramem/oracle/async_engine.py", "oramem/oracle/admin.py"}
    offenders = []
    for path in sorted((REPO / "oramem").rglob("*.py")):
        rel = str(path.relative_to(REPO))
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\.call(func|proc)\(", line):
                if rel not in allowed or not re.search(r"\.call(func|proc)\(\s*call\.qualified_name", line):
                    offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, "PL/SQL calls outside oramem.oracle's call table:\n" + "\n".join(offenders)
