"""A DBA's first day (dba33). Logging on: every command that logs on to Oracle (``oramem db``, ``oramem kg
--dsn``, ``oramem migrate`` / ``reembed`` on ``oracle://``) refuses a connect string that
carries a password before connecting and without repeating it, and a failed logon is one line
with the driver's whole message and what to do. The errors are python-oracledb's own where the
driver makes them offline (DPY-4018 for a connect string it cannot parse, DPY-6005 for a port
nothing listens on), else shaped like them (``fakes.db_error``). Upgrading: older scripts are not installed over a
schema a newer oramem installed, and stores `oramem db upgrade` leaves unusable are named."""

from __future__ import annotations

import json
import socket

import oracledb
import pytest
from click.testing import CliRunner

from oramem.cli import cli
from oramem.cli import cmd_backup
from oramem.cli import cmd_db
from oramem.errors import StoreError
from oramem.migrate import parse_location
from oramem.oracle import admin
from oramem.oracle_logon import dsn_credentials_problem, logon_failure

from .fakes import FakeConnection, Recorder, db_error
from .test_admin_cli_fake import ALL_VALID, scripts

SECRET = "Secr3t-pw"


def _refused_port() -> int:
    """A local TCP port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def no_connect(monkeypatch):
    calls = []
    monkeypatch.setattr(cmd_db, "connect", lambda *a: calls.append(a))
    return calls


def test_db_refuses_a_dsn_with_a_password_without_printing_it(no_connect):
    """F1: `oramem db --dsn app/pw@host/svc` printed the password twice (oramem's "cannot connect
    to app/pw@..." and the driver's DPY-4018 quoting the string)."""
    res = CliRunner().invoke(cmd_db.db, ["--dsn", f"app/{SECRET}@db:1521/FREEPDB1", "--user", "app", "status"],
                             env={"ORAMEM_PASSWORD": "other"})
    assert res.exit_code == 2, res.output
    assert SECRET not in res.output
    assert "--dsn holds a user name or password" in res.output and "ORAMEM_PASSWORD" in res.output
    assert no_connect == []


def test_dsn_check_leaves_descriptors_and_plain_easy_connect_alone():
    assert dsn_credentials_problem("localhost:1521/FREEPDB1") is None
    assert dsn_credentials_problem("//db.example.com:1521/FREEPDB1") is None
    assert dsn_credentials_problem("tcps://db:2484/svc?wallet_location=/w@x") is None
    assert dsn_credentials_problem("(DESCRIPTION=(ADDRESS=(HOST=h)(PORT=1))(CONNECT_DATA=(SERVICE_NAME=s)))") is None
    assert dsn_credentials_problem("app@db:1521/FREEPDB1")
    assert SECRET not in (dsn_credentials_problem(f"app/{SECRET}@db/s") or "")


def test_the_drivers_own_error_quotes_the_password_and_logon_failure_hides_it():
    """python-oracledb's DPY-4018 repeats the whole connect string; the line oramem prints does not."""
    with pytest.raises(oracledb.DatabaseError) as info:
        oracledb.connect(user="app", password=SECRET, dsn=f"app/{SECRET}@db:1521/FREEPDB1")
    assert SECRET in str(info.value)  # the driver's behaviour this guards against
    line = logon_failure(info.value, "app", f"app/{SECRET}@db:1521/FREEPDB1", SECRET)
    assert SECRET not in line and "DPY-4018" in line and "host:port/service" in line


def test_db_connect_refused_keeps_the_cause_and_says_what_to_do(monkeypatch):
    """F2: DPY-6005's first line is "cannot connect to database (CONNECTION_ID=...)"; the cause
    ("Connection refused") is on the next line, which was dropped. The real driver's error."""
    port = _refused_port()
    monkeypatch.setattr(cmd_db, "connect",
                        lambda dsn, user, password: oracledb.connect(user=user, password=password, dsn=dsn))
    res = CliRunner().invoke(cmd_db.db, ["--dsn", f"127.0.0.1:{port}/FREEPDB1", "--user", "app", "doctor"],
                             env={"ORAMEM_PASSWORD": SECRET})
    assert res.exit_code == 1, res.output
    assert "DPY-6005" in res.output and "refused" in res.output.lower()
    assert "not reachable" in res.output and "listener" in res.output
    assert SECRET not in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("code, message, says", [
    (1017, "invalid credential or not authorized; logon denied", "user name or password is wrong"),
    (28000, "The account is locked.", "ACCOUNT UNLOCK"),
    (1045, "user APP lacks CREATE SESSION privilege; logon denied", "GRANT CREATE SESSION TO"),
    (12514, "Cannot connect to database. Service FREEPDB9 is not registered with the listener", "service name"),
])
def test_db_logon_errors_say_what_to_do(monkeypatch, code, message, says):
    def refuse(dsn, user, password):
        raise db_error(code, message)

    monkeypatch.setattr(cmd_db, "connect", refuse)
    res = CliRunner().invoke(cmd_db.db, ["--dsn", "db:1521/FREEPDB1", "--user", "app", "status"],
                             env={"ORAMEM_PASSWORD": SECRET})
    assert res.exit_code == 1, res.output
    assert f"ORA-{code:05d}" in res.output and says in res.output
    assert SECRET not in res.output and len(res.output.strip().splitlines()) == 1


def test_db_password_stdin_empty_is_refused_before_connecting(no_connect):
    res = CliRunner().invoke(cmd_db.db, ["--dsn", "db:1521/FREEPDB1", "--user", "app", "--password-stdin", "status"],
                             input="\n")
    assert res.exit_code == 2 and "empty first line" in res.output
    assert no_connect == []


def test_kg_logon_failure_is_one_line_not_a_traceback():
    """F3: `oramem kg ... --dsn` let python-oracledb's exception through (a traceback)."""
    port = _refused_port()
    res = CliRunner().invoke(cli, ["kg", "jobs", "status", "--dsn", f"127.0.0.1:{port}/FREEPDB1", "--user", "app"],
                             env={"ORAMEM_PASSWORD": SECRET})
    assert res.exit_code == 1, res.output
    assert isinstance(res.exception, SystemExit), repr(res.exception)
    assert "cannot connect to" in res.output and "not reachable" in res.output
    assert SECRET not in res.output


def test_kg_refuses_a_dsn_with_a_password():
    res = CliRunner().invoke(cli, ["kg", "jobs", "status", "--dsn", f"app/{SECRET}@db:1521/FREEPDB1", "--user", "app"],
                             env={"ORAMEM_PASSWORD": "other"})
    assert res.exit_code == 2, res.output
    assert SECRET not in res.output and "--dsn holds a user name or password" in res.output


@pytest.mark.parametrize("location", [f"oracle://app:{SECRET}@db:1521/FREEPDB1",
                                      f"oracle://app/{SECRET}@db:1521/FREEPDB1"])
def test_oracle_location_with_a_password_is_refused_without_repeating_it(location):
    """F1: oracle://app:pw@host/svc sent "app:pw" as the user name and printed it in every error."""
    with pytest.raises(ValueError) as info:
        parse_location(location, "SOURCE")
    assert SECRET not in str(info.value) and "ORAMEM_PASSWORD" in str(info.value)
    res = CliRunner().invoke(cli, ["migrate", location, "sqlite:unused.db"], env={"ORAMEM_PASSWORD": "other"})
    assert res.exit_code == 2 and SECRET not in res.output


def test_oracle_location_host_that_does_not_resolve_says_what_to_do(monkeypatch):
    """F2: a host name that does not resolve is socket.gaierror (an OSError, not an oracledb.Error,
    python-oracledb 26.1 thin mode): it came out as "[Errno -2] Name or service not known" alone."""
    def gai(**kw):
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(oracledb, "connect", gai)
    monkeypatch.setenv("ORAMEM_PASSWORD", SECRET)
    with pytest.raises(StoreError) as info:
        cmd_backup.oracle_connect("app", "nohost.invalid:1521/FREEPDB1")
    text = str(info.value)
    assert "cannot connect to Oracle as app at nohost.invalid:1521/FREEPDB1" in text and "not reachable" in text
    assert SECRET not in text


# -- upgrade next quarter: older scripts over a newer schema, stores left behind ------------


class _VConn(FakeConnection):
    version = "23.6.0.24.10"


def test_repository_code_versions_are_the_registrys():
    root = admin.scripts_root()
    versions = admin.code_versions(root)
    upgrades = sorted((root / "ddl" / "upgrades").glob("*_to_*.sql"))
    assert versions["gc_catalog_version"] == int(upgrades[-1].stem.split("_to_")[1])
    assert versions["gc_store_schema_version"] >= 4


@pytest.mark.parametrize("answers, says", [
    ({"sql:from oramem_schema_version": [(6,)]}, "its catalog is version 6, these scripts' is 5"),
    ({"sql:from oramem_schema_version": [(5,)], "sql:from oramem_stores": [("S1", 5)]},
     "1 store(s) have a schema version above these scripts' 4: S1 (5)"),
])
def test_install_and_upgrade_refuse_older_scripts_before_running_anything(tmp_path, answers, says):
    """F4: `oramem db install|upgrade` from an older oramem over a schema a newer one installed
    replaced the packages with older ones (CREATE OR REPLACE; the catalog scripts only skip),
    which then refuse every newer store (-20107); it said "stores upgraded: none needed", exit 0."""
    root = scripts(tmp_path)
    for run in (admin.install, admin.upgrade):
        rec = Recorder({"sql:from user_objects": ALL_VALID, "oramem_admin.list_stores": "[]", **answers})
        with pytest.raises(admin.ScriptError) as info:
            run(_VConn(rec), str(root), echo=lambda s: None)
        assert says in str(info.value) and "Nothing was run" in str(info.value)
        assert "pip install -U oramem" in str(info.value)
        executed = [c.name for c in rec.of("execute")]
        assert len(executed) == 2 and all(e.lower().startswith("select") for e in executed), executed
        assert not rec.plsql


def test_install_on_a_fresh_schema_reads_no_catalog_and_runs(tmp_path):
    """The catalog tables do not exist yet: ORA-00942 is a fresh schema, not an error."""
    root = scripts(tmp_path)
    rec = Recorder({"sql:from oramem_schema_version": db_error(942, "table or view does not exist"),
                    "sql:from oramem_stores": db_error(942, "table or view does not exist"),
                    "sql:from user_objects": ALL_VALID})
    assert admin.install(_VConn(rec), str(root), echo=lambda s: None) == 3
    rec = Recorder({"sql:from oramem_schema_version": db_error(1031, "insufficient privileges")})
    with pytest.raises(oracledb.DatabaseError):
        admin.install(_VConn(rec), str(root), echo=lambda s: None)


def test_upgrade_names_the_stores_it_leaves_unusable_and_exits_1(tmp_path, monkeypatch):
    """F5: a store BROKEN, DROPPING or still UPGRADING at the code's version is not upgraded by
    `oramem db upgrade` (it upgrades older stores only), which said "stores upgraded: none needed"
    with exit 0."""
    root = scripts(tmp_path)
    stores = [{"memory_store_id": "OK1", "state": "READY", "schema_version": 4, "code_schema_version": 4},
              {"memory_store_id": "B1", "state": "BROKEN", "schema_version": 4, "code_schema_version": 4,
               "last_error": "ORA-01031: insufficient privileges"},
              {"memory_store_id": "D1", "state": "DROPPING", "schema_version": 4, "code_schema_version": 4}]
    rec = Recorder({"sql:from user_objects": ALL_VALID, "oramem_admin.list_stores": json.dumps(stores)})
    with pytest.raises(admin.ScriptError) as info:
        admin.upgrade(_VConn(rec), str(root), echo=lambda s: None)
    text = str(info.value)
    assert "2 store(s) not usable" in text and "OK1" not in text
    assert "B1: BROKEN (last error: ORA-01031: insufficient privileges)" in text
    assert "oramem_admin.upgrade_store('B1')" in text and "oramem_admin.drop_store('D1')" in text
    assert not [c for c in rec.plsql if c.name == "oramem_admin.upgrade_store"]
    monkeypatch.setattr(cmd_db, "connect", lambda *a: _VConn(rec))
    res = CliRunner().invoke(cmd_db.db, ["--dsn", "db:1521/FREEPDB1", "--user", "app", "upgrade",
                                         "--scripts-dir", str(root)], env={"ORAMEM_PASSWORD": "p"})
    assert res.exit_code == 1 and "B1: BROKEN" in res.output and "none needed" not in res.output


@pytest.mark.parametrize("code, message, says", [
    (1031, "insufficient privileges", "oramem db doctor"),
    (1950, "no privileges on tablespace 'USERS'", "QUOTA UNLIMITED ON"),
    (1536, "space quota exceeded for tablespace 'USERS'", "QUOTA UNLIMITED ON")])
def test_install_without_a_grant_says_which_command_finds_it_and_to_rerun(tmp_path, monkeypatch, code, message, says):
    """F11: `oramem db install` as a user without CREATE TABLE (or a quota) stopped with the bare
    ORA- line; the DDL before it is committed, so the DBA needs to know what to grant and that a
    rerun is safe."""
    root = scripts(tmp_path)
    rec = Recorder({"sql:CREATE TABLE IF NOT EXISTS": db_error(code, message),
                    "sql:from user_objects": ALL_VALID})
    monkeypatch.setattr(cmd_db, "connect", lambda *a: _VConn(rec))
    res = CliRunner().invoke(cmd_db.db, ["--dsn", "db:1521/FREEPDB1", "--user", "app", "install",
                                         "--scripts-dir", str(root)], env={"ORAMEM_PASSWORD": "p"})
    assert res.exit_code == 1, res.output
    assert f"ddl/001_catalog.sql line 2: ORA-{code:05d}" in res.output
    assert says in res.output and "run the same command again" in res.output


def test_upgrade_goes_on_past_a_store_that_fails_and_names_it(tmp_path):
    """F13: one store whose upgrade step fails (left BROKEN, or locked by a session) stopped
    `oramem db upgrade` there: the stores after it were not upgraded."""
    root = scripts(tmp_path)
    stores = [{"memory_store_id": s, "state": "READY", "schema_version": 3, "code_schema_version": 4}
              for s in ("A1", "B2", "C3")]

    def upgrade_store(call):
        if call.binds["in_store_id"] == "B2":
            raise db_error(20201, "store B2 is locked by another session")
        return "{}"

    rec = Recorder({"sql:from user_objects": ALL_VALID, "oramem_admin.list_stores": json.dumps(stores),
                    "oramem_admin.upgrade_store": upgrade_store})
    echoed: list[str] = []
    with pytest.raises(admin.ScriptError) as info:
        admin.upgrade(_VConn(rec), str(root), echo=echoed.append)
    ups = [c.binds["in_store_id"] for c in rec.plsql if c.name == "oramem_admin.upgrade_store"]
    assert ups == ["A1", "B2", "C3"]
    text = str(info.value)
    assert "stores upgraded: A1, C3" in text and "B2: upgrade failed" in text and "locked by another session" in text
    assert any(e.startswith("store B2 was not upgraded") for e in echoed)
