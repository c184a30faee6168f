"""The static gate's PL/SQL checker is a test tool: it is not in the package (so not in the
wheel); the runtime SQL*Plus splitter that ``oramem db install`` needs is."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import oramem
from oramem.oracle import admin, scripts

#: names only the structural checker defines (tests/plsql/plsql_parse.py)
CHECKER_NAMES = ("def check_structure", "def package_signatures", "def compare_spec_body", "class _Walker")


def test_checker_is_not_in_the_package():
    assert importlib.util.find_spec("oramem.oracle.plsql_parse") is None
    root = Path(oramem.__file__).parent  # the installed package, whatever the install mode
    shipped = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in root.rglob("*.py")}
    assert "oracle/scripts.py" in shipped
    offenders = sorted(name for name, text in shipped.items() for n in CHECKER_NAMES if n in text)
    assert offenders == []


def test_runtime_splitter_is_in_the_package_and_used_by_the_installer():
    assert admin.split_script is scripts.split_script
    items = scripts.split_script("SET ECHO OFF\nSELECT 1 FROM dual;\nBEGIN\n  NULL;\nEND;\n/\n")
    assert [i.kind for i in items] == ["sqlplus", "sql", "plsql"]
