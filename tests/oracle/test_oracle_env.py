"""Where the Oracle tests get a database from, the printed skip reason, and (D10) the failure with
the container log's tail when Docker answers but the database never gets ready (no Docker needed:
a fake docker / compose runner)."""

from __future__ import annotations

import contextlib
import subprocess

import pytest

from . import oracle_env


@pytest.fixture
def fresh_state(monkeypatch):
    monkeypatch.setattr(oracle_env, "_state",
                        {"probed": False, "target": None, "detail": "", "stack": None, "failure": ""})
    monkeypatch.delenv("ORACLE_DSN", raising=False)


def test_env_dsn_wins(fresh_state, monkeypatch):
    monkeypatch.setenv("ORACLE_DSN", "db:1521/FREEPDB1")
    monkeypatch.setenv("ORACLE_USER", "u")
    monkeypatch.setenv("ORACLE_PASSWORD", "p")
    monkeypatch.setattr(oracle_env, "docker_engine_status", lambda: pytest.fail("must not probe Docker"))
    assert oracle_env.oracle_target() == ("db:1521/FREEPDB1", "u", "p")
    assert oracle_env.skip_reason() == ""
    assert oracle_env.header_line() == "oracle: ORACLE_DSN=db:1521/FREEPDB1 user=u"


def test_no_docker_gives_the_printed_reason_and_probes_once(fresh_state, monkeypatch):
    probes = []

    def status():
        probes.append(1)
        return False, "no `docker` command on PATH"

    monkeypatch.setattr(oracle_env, "docker_engine_status", status)
    assert oracle_env.oracle_target() is None
    assert oracle_env.oracle_target() is None
    assert len(probes) == 1
    reason = oracle_env.skip_reason()
    assert reason.startswith("Oracle tests skipped: ORACLE_DSN is not set and no Docker engine answered")
    assert "no `docker` command on PATH" in reason and "ORACLE_DSN, ORACLE_USER and ORACLE_PASSWORD" in reason


class FakeRunner:
    """Stands in for docker / docker compose (oracle_env._runner): records the commands and
    answers `compose logs` with a container log."""

    LOG = "\n".join(f"oracle-1  | line {i}" for i in range(200)) + "\noracle-1  | ORA-24344: success with compilation error"

    def __init__(self):
        self.commands = []

    def __call__(self, cmd, timeout):
        self.commands.append(cmd)
        if cmd[:2] == ["docker", "compose"] and "logs" in cmd:
            tail = int(cmd[cmd.index("--tail") + 1])
            return subprocess.CompletedProcess(cmd, 0, "\n".join(self.LOG.splitlines()[-tail:]) + "\n", "")
        if cmd[:2] == ["docker", "info"]:
            return subprocess.CompletedProcess(cmd, 0, "27.0\n", "")
        raise AssertionError(f"unexpected command {cmd}")


@pytest.fixture
def docker_up(fresh_state, monkeypatch):
    """Docker answers; `compose up` and `compose down` are recorded (pytest-docker replaced)."""
    import pytest_docker.plugin as plugin

    runner = FakeRunner()
    monkeypatch.setattr(oracle_env, "_runner", runner)
    monkeypatch.setattr(oracle_env.shutil, "which", lambda name: "/usr/bin/docker")
    monkeypatch.setattr(plugin, "get_docker_ip", lambda: "127.0.0.1")
    ups = []

    class Services:
        def port_for(self, service, port):
            return 15210

    @contextlib.contextmanager
    def services(*args, **kwargs):
        ups.append(args)
        yield Services()
        runner.commands.append(["compose", "down"])

    monkeypatch.setattr(plugin, "get_docker_services", services)
    return runner, ups


def test_docker_that_fails_to_start_fails_with_the_log_tail_and_is_not_retried(fresh_state, monkeypatch):
    """D10: Docker answers, `compose up --wait` fails: every Oracle test fails (not skipped) and
    the first failure carries the error and the container log's tail."""
    import pytest_docker.plugin as plugin

    runner = FakeRunner()
    monkeypatch.setattr(oracle_env, "_runner", runner)
    monkeypatch.setattr(oracle_env, "docker_engine_status", lambda: (True, "27.0"))
    calls = []

    def broken(*args, **kwargs):
        calls.append(args)
        raise RuntimeError("container oramem-tests-oracle-1 is unhealthy")

    monkeypatch.setattr(plugin, "get_docker_services", broken)
    with pytest.raises(pytest.fail.Exception) as first:
        oracle_env.oracle_target()
    text = str(first.value)
    assert "did not become ready: container oramem-tests-oracle-1 is unhealthy" in text
    assert "ORA-24344: success with compilation error" in text and "line 199" in text
    assert "line 140" not in text  # the tail only (LOG_TAIL lines)
    with pytest.raises(pytest.fail.Exception, match="did not come up"):
        oracle_env.oracle_target()
    assert len(calls) == 1  # not retried
    assert oracle_env.skip_reason() == ""  # a failure, not a skip
    assert oracle_env.failure() == text
    assert oracle_env.header_line().startswith("oracle: FAILED: Docker answered")


def test_database_whose_packages_never_compile_fails_with_the_log_tail(docker_up, monkeypatch):
    """Docker answers and the container starts, but oramem's packages are not all VALID by the
    deadline: a failure naming the packages, with the log tail; the containers are stopped."""
    import oracledb

    runner, ups = docker_up
    monkeypatch.setenv("ORAMEM_DOCKER_WAIT", "0")

    class Cursor:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def execute(self, sql, *args, **kwargs):
            assert "user_objects" in sql

        def fetchall(self):  # only ORAMEM_STORE's spec was compiled: the old check said "ready"
            return [("PACKAGE", "ORAMEM_STORE", "VALID"), ("PACKAGE BODY", "ORAMEM_SEARCH", "INVALID")]

    class Conn:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def cursor(self):
            return Cursor()

    monkeypatch.setattr(oracledb, "connect", lambda **kw: Conn())
    with pytest.raises(pytest.fail.Exception) as failed:
        oracle_env.oracle_target()
    text = str(failed.value)
    assert "did not become ready within 0s: oramem packages not VALID:" in text
    assert "PACKAGE BODY ORAMEM_SEARCH INVALID" in text and "PACKAGE ORAMEM_ADMIN missing" in text
    assert "PACKAGE ORAMEM_STORE " not in text.split("log ---")[0]
    assert "ORA-24344" in text
    assert len(ups) == 1 and ["compose", "down"] in runner.commands


def test_a_ready_database_is_the_target(docker_up, monkeypatch):
    import oracledb

    from oramem.oracle.admin import PACKAGES

    runner, ups = docker_up
    rows = [(kind, name, "VALID") for name in PACKAGES for kind in ("PACKAGE", "PACKAGE BODY")]

    class Conn:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def cursor(self):
            cur = type("Cur", (), {"__enter__": lambda s: s, "__exit__": lambda s, *e: False,
                                   "execute": lambda s, *a, **k: None, "fetchall": lambda s: rows})
            return cur()

    monkeypatch.setattr(oracledb, "connect", lambda **kw: Conn())
    assert oracle_env.oracle_target() == ("127.0.0.1:15210/FREEPDB1", "oramem", "oramem")
    assert oracle_env.failure() == "" and oracle_env.skip_reason() == ""
    oracle_env.shutdown()
    assert ["compose", "down"] in runner.commands


def test_the_contract_suite_fails_too(docker_up, monkeypatch):
    """The contract suite's DSN hook swallows exceptions as "not available"; pytest's failure
    is not an Exception, so a broken Docker database fails the contract tests as well."""
    from contract import engines

    import pytest_docker.plugin as plugin

    def broken(*args, **kwargs):
        raise RuntimeError("init script 03_install_oramem.sh failed")

    monkeypatch.setattr(plugin, "get_docker_services", broken)
    monkeypatch.setattr(engines, "_dsn_provider", oracle_env.oracle_target)
    monkeypatch.delenv("ORACLE_DSN", raising=False)
    with pytest.raises(pytest.fail.Exception, match="03_install_oramem.sh failed"):
        engines.oracle_dsn()


def test_docker_status_reports_a_missing_daemon(monkeypatch):
    monkeypatch.setattr(oracle_env.shutil, "which", lambda name: None)
    assert oracle_env.docker_engine_status() == (False, "no `docker` command on PATH")
