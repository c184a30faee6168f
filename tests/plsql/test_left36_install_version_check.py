"""left36 item 3: plsql/install.sql run with SQL*Plus refuses older scripts over a newer schema.

``oramem db install`` / ``upgrade`` refuse, before running anything, scripts whose catalog or
store schema version is below the schema's (``oramem.oracle.admin.check_not_newer``, dba33);
``sqlplus @plsql/install.sql`` had no such check, so an older checkout put its packages over
newer ones (CREATE OR REPLACE), which then refuse every newer store (-20107), and the catalog
scripts never lower a version, so nothing said so. install.sql's first statement is now a
block that makes the same check and raises ORA-20000 saying what to do; ``WHENEVER SQLERROR
EXIT FAILURE`` (before it) makes SQL*Plus stop there. Static-checked, not run against Oracle.
"""

from __future__ import annotations

import re
from pathlib import Path

from oramem.oracle import admin
from oramem.oracle.scripts import split_script

REPO = Path(__file__).resolve().parents[2]


def _items():
    return split_script((REPO / "plsql" / "install.sql").read_text(encoding="utf-8"))


def _check_block() -> str:
    items = _items()
    first = next(i for i in items if i.kind != "sqlplus")
    assert first.kind == "plsql", "the first statement install.sql runs is the version check block"
    return re.sub(r"--[^\n]*", "", first.text)


def test_the_version_check_runs_first_under_whenever_sqlerror_exit():
    items = _items()
    first_run = next(n for n, i in enumerate(items) if i.kind != "sqlplus")
    before = [i.text.split()[0].upper() for i in items[:first_run]]
    assert "WHENEVER" in before, "SQL*Plus stops at the block's error"
    assert not any(i.text.startswith("@") for i in items[:first_run]), "nothing is run before the check"
    block = _check_block()
    assert "RAISE_APPLICATION_ERROR(-20000" in block


def test_the_block_compares_the_scripts_versions_with_the_schemas():
    block = _check_block()
    consts = {m.group(1): int(m.group(2)) for m in re.finditer(r"\b(c_catalog|c_store)\s+CONSTANT\s+PLS_INTEGER\s*:=\s*(\d+);", block)}
    code = admin.code_versions(REPO)
    assert consts == {"c_catalog": code["gc_catalog_version"], "c_store": code["gc_store_schema_version"]}, \
        "the block's versions are the ones these scripts install (oramem_registry.pks)"
    # the catalog version: the same query as check_not_newer, only when the table exists
    assert re.search(r"SELECT\s+COUNT\(\*\)\s+INTO\s+l_tables\s+FROM\s+user_tables\s+WHERE\s+table_name\s*=\s*"
                     r"'ORAMEM_SCHEMA_VERSION';\s+IF\s+l_tables\s*=\s*1\s+THEN\s+EXECUTE\s+IMMEDIATE\s+"
                     r"'SELECT MAX\(version\) FROM oramem_schema_version WHERE component = ''CATALOG'''\s+"
                     r"INTO\s+l_catalog;\s+IF\s+l_catalog\s*>\s*c_catalog\s+THEN", block)
    # the stores: every store of a schema version above the scripts'
    assert re.search(r"table_name\s*=\s*'ORAMEM_STORES';\s+IF\s+l_tables\s*=\s*1\s+THEN\s+EXECUTE\s+IMMEDIATE\s+"
                     r"'SELECT COUNT\(\*\), MIN\(memory_store_id\) FROM oramem_stores WHERE schema_version > :1'\s+"
                     r"INTO\s+l_newer,\s*l_first\s+USING\s+c_store;\s+IF\s+l_newer\s*>\s*0\s+THEN", block)
    assert re.search(r"IF\s+l_problem\s+IS\s+NOT\s+NULL\s+THEN\s+RAISE_APPLICATION_ERROR\(-20000,", block)
    message = " ".join(re.findall(r"'([^']*)'", block[block.index("RAISE_APPLICATION_ERROR"):]))
    for says in ("installed by a newer oramem", "Nothing was run", "pip install -U oramem", "oramem db upgrade"):
        assert says in message, says


def test_the_installer_runs_the_check_before_the_catalog_over_the_fake():
    """``oramem db install`` runs install.sql statement by statement: the block is sent first
    (after admin.check_not_newer, which refused already when the schema is newer)."""
    from oracle.fakes import Recorder
    from oracle.test_admin_cli_fake import ALL_VALID, VConn

    rec = Recorder({"sql:from user_objects": ALL_VALID})
    admin.install(VConn(rec), str(REPO), echo=lambda s: None)
    sent = [c.name for c in rec.of("execute")]
    first = next(n for n, s in enumerate(sent) if "oramem_schema_version WHERE component = ''CATALOG''" in s)
    ddl = next(n for n, s in enumerate(sent) if s.lstrip().upper().startswith("CREATE TABLE"))
    assert first < ddl
