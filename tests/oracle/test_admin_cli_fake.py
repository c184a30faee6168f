"""``oramem db …`` and oramem.oracle.admin against the recording fake (no database)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from oramem.cli import cmd_db as cli
from oramem.knowledge.db.install import install_oracle
from oramem.oracle import admin
from oramem.oracle.scripts import split_script

from .fakes import FakeConnection, Recorder, db_error

ALL_VALID = [(t, p, "VALID") for p in admin.PACKAGES for t in ("PACKAGE", "PACKAGE BODY")]


class VConn(FakeConnection):
    version = "23.6.0.24.10"


def scripts(tmp_path, install=None, uninstall="DROP TABLE oramem_registry PURGE;\n"):
    (tmp_path / "plsql").mkdir()
    (tmp_path / "ddl").mkdir()
    (tmp_path / "ddl" / "001_catalog.sql").write_text(
        "-- catalog\nCREATE TABLE IF NOT EXISTS oramem_registry (id NUMBER, note VARCHAR2(10) DEFAULT ';');\n"
    )
    (tmp_path / "plsql" / "oramem_errors.pks").write_text(
        "CREATE OR REPLACE PACKAGE oramem_errors AS\n  PROCEDURE p;\nEND oramem_errors;\n/\n"
    )
    (tmp_path / "plsql" / "install.sql").write_text(install or (
        "WHENEVER SQLERROR EXIT FAILURE\nSET DEFINE OFF\nPROMPT installing oramem\n"
        "@@../ddl/001_catalog.sql\n@@oramem_errors.pks\nEXEC DBMS_OUTPUT.PUT_LINE('done')\n"
    ))
    (tmp_path / "plsql" / "uninstall.sql").write_text(uninstall)
    # the versions these scripts install (admin.check_not_newer reads them; not run by install.sql)
    (tmp_path / "plsql" / "oramem_registry.pks").write_text(
        "CREATE OR REPLACE PACKAGE oramem_registry AS\n"
        "   gc_store_schema_version   CONSTANT PLS_INTEGER := 4;\n"
        "   gc_catalog_version        CONSTANT PLS_INTEGER := 5;\nEND oramem_registry;\n/\n")
    return tmp_path


def test_install_runs_statements_in_order_and_checks_compile_errors(tmp_path):
    root = scripts(tmp_path)
    rec = Recorder({"sql:from user_objects": ALL_VALID})
    echoed = []
    n = admin.install(VConn(rec), str(root), echo=echoed.append)
    assert n == 3
    executed = [c.name for c in rec.of("execute")]
    # dba33 F4: the schema's versions are read first (nothing older is installed over them)
    assert "from oramem_schema_version" in executed[0] and "from oramem_stores" in executed[1]
    executed = executed[2:]
    assert executed[0].startswith("CREATE TABLE IF NOT EXISTS oramem_registry") and executed[0].endswith("DEFAULT ';')")
    assert executed[1].startswith("CREATE OR REPLACE PACKAGE oramem_errors") and executed[1].endswith("END oramem_errors;")
    assert "user_errors" in executed[2] and rec.of("execute")[4].binds == {"name": "ORAMEM_ERRORS", "type": "PACKAGE"}
    assert executed[3] == "BEGIN DBMS_OUTPUT.PUT_LINE('done'); END;"
    assert echoed == ["installing oramem"]


def test_install_stops_on_compile_errors(tmp_path):
    root = scripts(tmp_path)
    rec = Recorder({"sql:from user_errors": [(3, 5, "PLS-00103: Encountered the symbol")]})
    with pytest.raises(admin.ScriptError, match=r"oramem_errors.pks line 1: compilation errors:\n  PACKAGE "
                                                r"ORAMEM_ERRORS line 3:5: PLS-00103"):
        admin.install(VConn(rec), str(root))


def test_install_stops_on_the_first_failing_statement(tmp_path):
    root = scripts(tmp_path)
    rec = Recorder({"sql:CREATE TABLE IF NOT EXISTS": db_error(1031, "insufficient privileges")})
    with pytest.raises(admin.ScriptError, match=r"ddl/001_catalog.sql line 2: ORA-01031"):
        admin.install(VConn(rec), str(root))
    assert len(rec.of("execute")) == 3  # the two version queries (dba33 F4), then the failing statement


def test_install_reports_invalid_objects(tmp_path):
    root = scripts(tmp_path)
    rec = Recorder({"sql:from user_objects": [("PACKAGE BODY", "ORAMEM_STORE", "INVALID")]})
    with pytest.raises(admin.ScriptError, match="INVALID: PACKAGE BODY ORAMEM_STORE"):
        admin.install(VConn(rec), str(root))


def test_includes_cannot_escape_the_scripts_root(tmp_path):
    root = scripts(tmp_path, install="@@../../etc/passwd\n")
    with pytest.raises(admin.ScriptError, match="outside"):
        admin.install(VConn(Recorder()), str(root))


def test_unsupported_sqlplus_commands_fail(tmp_path):
    root = scripts(tmp_path, install="CONNECT sys/x\n")
    with pytest.raises(admin.ScriptError, match="CONNECT is not supported"):
        admin.install(VConn(Recorder()), str(root))


def test_scripts_root_errors_say_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("ORAMEM_SQL_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="ORAMEM_SQL_DIR"):
        admin.scripts_root()


def test_repository_install_script_splits(monkeypatch):
    """The real plsql/install.sql (when present) uses only what the installer supports."""
    try:
        root = admin.scripts_root()
    except FileNotFoundError:
        pytest.skip("plsql/install.sql not written yet")
    supported = {"@@", "@", "PROMPT", "PRO", "SET", "WHENEVER", "REM", "REMARK", "EXEC", "EXECUTE", "SPOOL",
                 "EXIT", "QUIT", "SHOW", "SHO", "COLUMN", "COL", "TIMING", "CLEAR", "BREAK", "TTITLE", "BTITLE",
                 "PAUSE"}
    for name in ("install.sql", "uninstall.sql"):
        for item in split_script((root / "plsql" / name).read_text()):
            if item.kind == "sqlplus":
                assert item.command in supported, f"{name} line {item.line}: {item.text}"


def test_upgrade_upgrades_old_stores(tmp_path):
    root = scripts(tmp_path)
    stores = [{"memory_store_id": "A", "schema_version": 1, "code_schema_version": 2},
              {"memory_store_id": "B", "schema_version": 2, "code_schema_version": 2}]
    rec = Recorder({"sql:from user_objects": ALL_VALID, "oramem_admin.list_stores": json.dumps(stores),
                    "oramem_admin.upgrade_store": "{}"})
    assert admin.upgrade(VConn(rec), str(root), echo=lambda s: None) == ["A"]
    ups = [c for c in rec.plsql if c.name == "oramem_admin.upgrade_store"]
    assert [c.binds for c in ups] == [{"in_store_id": "A"}]


def test_uninstall_refuses_while_stores_exist(tmp_path):
    root = scripts(tmp_path)
    rec = Recorder({"sql:from user_objects": ALL_VALID,
                    "oramem_admin.list_stores": json.dumps([{"memory_store_id": "MYSTORE"}])})
    with pytest.raises(admin.ScriptError, match="--purge --yes"):
        admin.uninstall(VConn(rec), purge=False, scripts_dir=str(root))
    assert not rec.of("execute")[1:]  # nothing but the dictionary query ran
    admin.uninstall(VConn(rec), purge=True, scripts_dir=str(root), echo=lambda s: None)
    assert rec.of("execute")[-1].name == "DROP TABLE oramem_registry PURGE"


def _doctor_rec(**over):
    answers = {
        "sql:from user_sys_privs": [("CREATE TABLE",), ("CREATE SEQUENCE",), ("CREATE PROCEDURE",), ("CREATE JOB",)],
        "sql:from user_tab_privs": [("SYS", "DBMS_LOCK", "EXECUTE"), ("CTXSYS", "CTX_DDL", "EXECUTE"),
                                    ("CTXSYS", "DBMS_VECTOR_CHAIN", "EXECUTE"), ("SYS", "DBMS_HYBRID_VECTOR", "EXECUTE")],
        "sql:from all_objects": [(1,)],
        "sql:from user_role_privs": [("CTXAPP",), ("DB_DEVELOPER_ROLE",)],
        "sql:from v$parameter": [(536870912,)],
        "sql:from user_mining_models": [("ORAMEM_EMBED",)],
        "sql:from user_objects": ALL_VALID,
        "sql:from user_users": [("USERS",)],
        "sql:from user_ts_quotas": [(-1,)],
        "sql:from all_tab_privs": [],
    }
    answers.update(over)
    return Recorder(answers)


def test_doctor_all_good():
    checks = admin.doctor(VConn(_doctor_rec()))
    bad = [(c.name, c.label) for c in checks if c.label != "OK"]
    assert bad == [("direct grant CREATE MINING MODEL", "WARN")]
    assert any(c.name.startswith("vector memory") and c.detail == "512 MB" for c in checks)


def test_doctor_reports_what_to_fix():
    class Old(FakeConnection):
        version = "21.3.0.0.0"

    rec = _doctor_rec(**{"sql:from v$parameter": db_error(942, "table or view does not exist"),
                         "sql:from user_sys_privs": [("CREATE TABLE",)],
                         "sql:from all_objects": [(0,)],
                         "sql:from user_objects": []})
    checks = {c.name: c for c in admin.doctor(Old(rec))}
    assert checks["database version"].label == "FAIL" and "23.4" in checks["database version"].fix
    assert checks["direct grant CREATE PROCEDURE"].label == "FAIL"
    assert checks["direct grant CREATE JOB"].label == "WARN"
    assert checks["vector memory (VECTOR_MEMORY_SIZE)"].label == "WARN"
    assert checks["Oracle Text (CTXSYS.CTX_DDL)"].label == "WARN"
    assert checks["oramem packages"].label == "FAIL" and "oramem db install" in checks["oramem packages"].fix
    text = admin.format_checks(checks.values())
    assert "fix: as a DBA: GRANT CREATE PROCEDURE TO <user>;" in text


def test_d14_doctor_checks_the_quota_and_counts_public_grants():
    checks = {c.name: c for c in admin.doctor(VConn(_doctor_rec(**{"sql:from user_ts_quotas": []})))}
    q = checks["tablespace quota"]
    assert q.label == "FAIL" and "no quota on USERS" in q.detail and "QUOTA UNLIMITED ON" in q.fix
    rec = _doctor_rec(**{"sql:from user_ts_quotas": [],
                         "sql:from user_sys_privs": [("CREATE TABLE",), ("CREATE SEQUENCE",), ("CREATE PROCEDURE",),
                                                     ("CREATE JOB",), ("UNLIMITED TABLESPACE",)]})
    assert {c.name: c for c in admin.doctor(VConn(rec))}["tablespace quota"].label == "OK"
    # EXECUTE granted to PUBLIC works in definer's-rights code: no WARN
    rec = _doctor_rec(**{"sql:from user_tab_privs": [("SYS", "DBMS_LOCK", "EXECUTE")],
                         "sql:from all_tab_privs": [("CTXSYS", "CTX_DDL"), ("CTXSYS", "DBMS_VECTOR_CHAIN"),
                                                    ("SYS", "DBMS_HYBRID_VECTOR")]})
    checks = {c.name: c for c in admin.doctor(VConn(rec))}
    for pkg in ("DBMS_VECTOR_CHAIN", "DBMS_HYBRID_VECTOR"):
        assert checks[f"direct grant EXECUTE ON {pkg}"].label == "OK"
    assert checks["direct grant EXECUTE ON CTXSYS.CTX_DDL"].label == "OK"
    # ORA-01950 is a CapabilityError naming the fix
    from oramem.errors import CapabilityError
    from oramem.oracle.errors import translate

    from .fakes import db_error as _err
    assert isinstance(translate(_err(1950, "no privileges on tablespace 'USERS'")), CapabilityError)


def test_doctor_checks_the_hybrid_packages_grants():
    # review F9: definer's-rights calls of DBMS_VECTOR_CHAIN / DBMS_HYBRID_VECTOR need direct grants
    rec = _doctor_rec(**{"sql:from user_tab_privs": [("SYS", "DBMS_LOCK", "EXECUTE")]})
    checks = {c.name: c for c in admin.doctor(VConn(rec))}
    for pkg in ("DBMS_VECTOR_CHAIN", "DBMS_HYBRID_VECTOR"):
        c = checks[f"direct grant EXECUTE ON {pkg}"]
        assert c.label == "WARN" and f"GRANT EXECUTE ON <owner>.{pkg}" in c.fix and "HYBRID" in c.fix



# -- the click group ---------------------------------------------------------------------

@pytest.fixture
def fake_connect(monkeypatch):
    seen = {}

    def factory(answers):
        rec = Recorder(answers)

        def connect(dsn, user, password):
            seen.update(dsn=dsn, user=user, password=password)
            return VConn(rec)

        monkeypatch.setattr(cli, "connect", connect)
        return rec

    factory.seen = seen
    return factory


def test_cli_install_with_env_and_password_stdin(tmp_path, fake_connect):
    root = scripts(tmp_path)
    rec = fake_connect({"sql:from user_objects": ALL_VALID})
    res = CliRunner().invoke(cli.db, ["--password-stdin", "install", "--scripts-dir", str(root)],
                             input="s3cret\n", env={"ORAMEM_DSN": "db:1521/FREEPDB1", "ORAMEM_USER": "oramem"})
    assert res.exit_code == 0, res.output
    assert "installing oramem" in res.output and "oramem installed: 3 statements" in res.output
    assert fake_connect.seen == {"dsn": "db:1521/FREEPDB1", "user": "oramem", "password": "s3cret"}
    assert rec.of("close")


def test_cli_needs_a_dsn(fake_connect):
    fake_connect({})
    res = CliRunner().invoke(cli.db, ["status"], env={"ORAMEM_DSN": None, "ORAMEM_USER": None})
    assert res.exit_code == 2 and "--dsn" in res.output


def test_cli_status_json(fake_connect):
    fake_connect({"sql:from user_objects": ALL_VALID,
                  "oramem_admin.capabilities": json.dumps({"oracle_text": True}),
                  "oramem_admin.list_stores": json.dumps([{"memory_store_id": "S1", "state": "READY"}])})
    res = CliRunner().invoke(cli.db, ["--dsn", "x", "--user", "u", "status", "--json"],
                             env={"ORAMEM_PASSWORD": "p"})
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["installed"] and out["stores"][0]["memory_store_id"] == "S1" and out["capabilities"]["oracle_text"]


def test_cli_status_not_installed_exits_1(fake_connect):
    fake_connect({"sql:from user_objects": []})
    res = CliRunner().invoke(cli.db, ["--dsn", "x", "--user", "u", "status"], env={"ORAMEM_PASSWORD": "p"})
    assert res.exit_code == 1 and "NOT installed" in res.output and "missing  PACKAGE ORAMEM_STORE" in res.output


def test_cli_uninstall_purge_needs_yes(tmp_path, fake_connect):
    root = scripts(tmp_path)
    rec = fake_connect({"sql:from user_objects": ALL_VALID, "oramem_admin.list_stores": "[]"})
    res = CliRunner().invoke(cli.db, ["--dsn", "x", "--user", "u", "uninstall", "--purge",
                                      "--scripts-dir", str(root)], env={"ORAMEM_PASSWORD": "p"})
    assert res.exit_code == 2 and "--yes" in res.output
    assert rec.calls == []
    res = CliRunner().invoke(cli.db, ["--dsn", "x", "--user", "u", "uninstall", "--purge", "--yes",
                                      "--scripts-dir", str(root)], env={"ORAMEM_PASSWORD": "p"})
    assert res.exit_code == 0, res.output
    assert rec.of("execute")[-1].name == "DROP TABLE oramem_registry PURGE"


def test_cli_doctor_exit_status(fake_connect):
    fake_connect(_doctor_rec().answers)
    res = CliRunner().invoke(cli.db, ["--dsn", "x", "--user", "u", "doctor"], env={"ORAMEM_PASSWORD": "p"})
    assert res.exit_code == 0, res.output
    assert "[OK  ] database version: 23.6.0.24.10" in res.output
    fake_connect(_doctor_rec(**{"sql:from user_objects": []}).answers)
    res = CliRunner().invoke(cli.db, ["--dsn", "x", "--user", "u", "doctor"], env={"ORAMEM_PASSWORD": "p"})
    assert res.exit_code == 1 and "[FAIL] oramem packages" in res.output


def test_cli_connect_failure_is_one_line(monkeypatch):
    def boom(dsn, user, password):
        raise db_error(12541, "TNS:no listener")

    monkeypatch.setattr(cli, "connect", boom)
    res = CliRunner().invoke(cli.db, ["--dsn", "nohost:1", "--user", "u", "status"], env={"ORAMEM_PASSWORD": "p"})
    assert res.exit_code == 1 and "cannot connect to nohost:1 as u: ORA-12541" in res.output


def test_repository_install_runs_every_unit_through_the_fake():
    """Dry run of the real plsql/install.sql: every package spec and body is sent once,
    in the README order, each as one complete unit, and its USER_ERRORS checked."""
    try:
        root = admin.scripts_root()
    except FileNotFoundError:
        pytest.skip("plsql/install.sql not written yet")
    rec = Recorder({"sql:from user_objects": ALL_VALID})
    admin.install(VConn(rec), str(root), echo=lambda s: None)
    units = [c.name for c in rec.of("execute") if c.name.lstrip().upper().startswith("CREATE OR REPLACE PACKAGE")]
    order = list(admin.PACKAGES)
    assert order[-1] == "ORAMEM_KG_JOBS" and len(order) == 7
    assert len(units) == 2 * len(order) and all(u.rstrip().upper().endswith(";") for u in units)
    checked = [(c.binds["type"], c.binds["name"]) for c in rec.of("execute") if "user_errors" in c.name]
    assert checked == [("PACKAGE", n) for n in order] + [("PACKAGE BODY", n) for n in order]


def test_splitter_agrees_with_parseora_on_repository_scripts():
    """oramem's splitter (used by the installer) and ParseOra's cut every script the same way."""
    import parseora

    root = admin.scripts_root()
    paths = sorted(p for d in ("ddl", "plsql") for p in (root / d).rglob("*") if p.suffix in (".sql", ".pks", ".pkb"))
    assert paths
    for path in paths:
        text = path.read_text()
        mine = [(i.kind, i.line) for i in split_script(text)]
        theirs = [(i["kind"], i["line"]) for i in parseora.split(text)]
        assert mine == theirs, f"{path.name}: {mine} != {theirs}"


def test_install_knowledge_creates_the_stores_kg_tables_idempotently():
    # issue 10 item 3: the knowledge DDL through `oramem db install`
    rec = Recorder()
    n = install_oracle(VConn(rec), "mystore", 8, echo=lambda s: None)
    executed = [c.name for c in rec.of("execute")]
    assert n == len(executed) > 11
    assert all(s.startswith(("CREATE TABLE IF NOT EXISTS", "CREATE INDEX IF NOT EXISTS")) for s in executed)
    assert any('"MYSTORE_KG_FACT"' in s for s in executed) and any("VECTOR(8, FLOAT32)" in s for s in executed)
    with pytest.raises(ValueError, match="memory_store_id"):
        install_oracle(VConn(Recorder()), "bad id;", 8)
    with pytest.raises(ValueError, match="vector_dim"):
        install_oracle(VConn(Recorder()), "mystore", 0)


def test_cli_install_with_knowledge_store(tmp_path, fake_connect):
    root = scripts(tmp_path)
    rec = fake_connect({"sql:from user_objects": ALL_VALID})
    env = {"ORAMEM_DSN": "db:1521/FREEPDB1", "ORAMEM_USER": "oramem", "ORAMEM_PASSWORD": "p"}
    res = CliRunner().invoke(cli.db, ["install", "--scripts-dir", str(root), "--knowledge-store", "kstore",
                                      "--vector-dim", "16"], env=env)
    assert res.exit_code == 0, res.output
    assert "knowledge tables of KSTORE" in res.output
    assert any('"KSTORE_KG_EVENT"' in c.name for c in rec.of("execute"))
    # bad input: refused before anything runs
    for args, msg in ((["--knowledge-store", "kstore"], "needs --vector-dim"),
                      (["--vector-dim", "16"], "only used with --knowledge-store"),
                      (["--knowledge-store", "1bad", "--vector-dim", "16"], "memory_store_id")):
        rec2 = fake_connect({})
        res = CliRunner().invoke(cli.db, ["install", "--scripts-dir", str(root), *args], env=env)
        assert res.exit_code == 2 and msg in res.output, res.output
        assert not rec2.of("execute")
