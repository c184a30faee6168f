"""Where the Oracle tests get a database from, and the printed skip reason (no Docker needed)."""

from __future__ import annotations

import pytest

from . import oracle_env


@pytest.fixture
def fresh_state(monkeypatch):
    monkeypatch.setattr(oracle_env, "_state", {"probed": False, "target": None, "detail": "", "stack": None})
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


def test_docker_that_fails_to_start_is_not_retried(fresh_state, monkeypatch):
    import pytest_docker.plugin as plugin

    monkeypatch.setattr(oracle_env, "docker_engine_status", lambda: (True, "27.0"))
    calls = []

    def broken(*args, **kwargs):
        calls.append(args)
        raise RuntimeError("pull access denied")

    monkeypatch.setattr(plugin, "get_docker_services", broken)
    assert oracle_env.oracle_target() is None
    assert oracle_env.oracle_target() is None
    assert len(calls) == 1
    assert "did not become ready: pull access denied" in oracle_env.skip_reason()


def test_docker_status_reports_a_missing_daemon(monkeypatch):
    monkeypatch.setattr(oracle_env.shutil, "which", lambda name: None)
    assert oracle_env.docker_engine_status() == (False, "no `docker` command on PATH")
