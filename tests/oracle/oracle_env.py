"""Where the Oracle-only tests get a database from (one place, used by every suite).

Order (DESIGN.md "Testing"):

1. ``ORACLE_DSN`` (+ ``ORACLE_USER``, ``ORACLE_PASSWORD``) when set;
2. else, when a Docker engine answers ``docker info`` within a few seconds, start
   ``docker/compose.yml`` with pytest-docker (``docker compose up -d --wait``) on first
   use and wait until oramem answers in it (``ORAMEM_DOCKER_WAIT`` seconds, default 900);
   the containers are removed at the end of the session unless ``ORAMEM_KEEP_DB=1``;
3. else (no Docker engine) every Oracle test is skipped with :func:`skip_reason`, which
   ``tests/conftest.py`` also prints in the report header and the terminal summary.

A Docker engine that answers but whose database never becomes ready (the image does not
start, an init script fails, a package does not compile) is **not** a skip: every Oracle test
fails with :func:`failure` (the error and the tail of the container's log), and the terminal
summary prints it (review D10). Ready means all seven oramem packages, spec and body, VALID.

``tests/conftest.py`` registers :func:`oracle_target` as the contract suite's DSN provider
(``tests/contract/engines.py: register_oracle_dsn_provider``), so the contract suite runs
on the same database.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Optional

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO_ROOT / "docker" / "compose.yml"
COMPOSE_PROJECT = "oramem-tests"
SERVICE = "oracle"

_state: dict = {"probed": False, "target": None, "detail": "", "stack": None, "failure": ""}
#: lines of the container log a failure shows
LOG_TAIL = 60


def _runner(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Runs docker / docker compose (tests replace it with a fake runner)."""
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def docker_engine_status(timeout: float = 8.0) -> tuple[bool, str]:
    """(True, version) when a Docker engine answers ``docker info``, else (False, why)."""
    if shutil.which("docker") is None:
        return False, "no `docker` command on PATH"
    try:
        proc = _runner(["docker", "info", "--format", "{{.ServerVersion}}"], timeout)
    except subprocess.TimeoutExpired:
        return False, f"`docker info` did not answer within {timeout:g}s"
    except OSError as e:
        return False, f"`docker info` failed: {e}"
    if proc.returncode != 0:
        first = (proc.stderr or proc.stdout).strip().splitlines()[:1]
        return False, "`docker info` failed: " + (first[0] if first else f"exit code {proc.returncode}")
    return True, proc.stdout.strip()


def env_target() -> Optional[tuple[str, str, str]]:
    dsn = os.environ.get("ORACLE_DSN")
    if not dsn:
        return None
    return dsn, os.environ.get("ORACLE_USER", "oramem"), os.environ.get("ORACLE_PASSWORD", "")


def skip_reason() -> str:
    """Why Oracle tests are skipped in this session ('' when a database is available)."""
    if env_target() is not None:
        return ""
    if not _state["probed"]:
        ok, detail = docker_engine_status()
        if ok:
            return ""
        _state["detail"] = detail
        _state["probed"] = True
    if _state["target"] is not None or _state.get("failure"):
        return ""
    return (
        "Oracle tests skipped: ORACLE_DSN is not set and no Docker engine answered "
        f"({_state['detail']}). Set ORACLE_DSN, ORACLE_USER and ORACLE_PASSWORD, or start Docker "
        "so tests can run docker/compose.yml (Oracle Database Free)."
    )


def failure() -> str:
    """Why the Oracle tests fail in this session ('' unless Docker answered and the database
    did not become ready): the error and the tail of the container's log."""
    return _state.get("failure", "")


def compose_logs(tail: int = LOG_TAIL) -> str:
    """The last ``tail`` lines of the Oracle container's log (or why they could not be read)."""
    cmd = ["docker", "compose", "-f", str(COMPOSE_FILE), "-p", COMPOSE_PROJECT, "logs", "--no-color",
           "--tail", str(tail), SERVICE]
    try:
        proc = _runner(cmd, 60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"(could not read the container log: {e})"
    text = (proc.stdout or "") + (proc.stderr or "")
    return text.strip() or f"(`{' '.join(cmd)}` printed nothing, exit code {proc.returncode})"


def _missing_packages(conn) -> list[str]:
    """oramem's packages (spec and body) that are not VALID in the schema, as 'TYPE NAME status'."""
    from oramem.oracle.admin import PACKAGES

    with conn.cursor() as cur:
        cur.execute(
            "select object_type, object_name, status from user_objects "
            "where object_type in ('PACKAGE', 'PACKAGE BODY') and object_name like 'ORAMEM\\_%' escape '\\'"
        )
        found = {f"{t} {n}": s for t, n, s in cur.fetchall()}
    want = [f"{kind} {name}" for name in PACKAGES for kind in ("PACKAGE", "PACKAGE BODY")]
    return [f"{w} {found.get(w, 'missing')}" for w in want if found.get(w) != "VALID"]


def _wait_for_oramem(dsn: str, user: str, password: str, timeout: float) -> None:
    """Until the app user can connect and all seven oramem packages, spec and body, are VALID."""
    import oracledb

    deadline = time.monotonic() + timeout
    last = "no connection attempt finished"
    while True:
        try:
            with oracledb.connect(user=user, password=password, dsn=dsn) as conn:
                missing = _missing_packages(conn)
                if not missing:
                    return
                last = "oramem packages not VALID: " + ", ".join(missing)
        except oracledb.Error as e:  # not up yet
            last = str(e).splitlines()[0] if str(e) else type(e).__name__
        if time.monotonic() >= deadline:
            break
        time.sleep(5)
    raise RuntimeError(f"Oracle in docker/compose.yml did not become ready within {timeout:g}s: {last}")


def oracle_target() -> Optional[tuple[str, str, str]]:
    """``(dsn, user, password)`` of the test database, starting Docker if needed; None
    when none is available (then :func:`skip_reason` says why)."""
    target = env_target()
    if target is not None:
        return target
    if _state["target"] is not None:
        return _state["target"]
    if _state.get("failure"):  # Docker answered and the database did not come up: fail again
        raise pytest.fail.Exception(
            "the Oracle test database did not come up (Docker answered); see the first failing Oracle "
            "test or the 'oracle' section of the summary for the error and the container log",
            pytrace=False,
        )
    if _state["probed"]:  # probed already: Docker absent
        return None
    ok, detail = docker_engine_status()
    _state["probed"] = True
    if not ok:
        _state["detail"] = detail
        return None
    from pytest_docker.plugin import get_docker_ip, get_docker_services

    keep = os.environ.get("ORAMEM_KEEP_DB") == "1"
    stack = contextlib.ExitStack()
    try:
        services = stack.enter_context(
            get_docker_services(
                "docker compose",
                str(COMPOSE_FILE),
                COMPOSE_PROJECT,
                ["up -d --wait"],
                [] if keep else ["down -v"],
            )
        )
        _state["stack"] = stack
        port = services.port_for(SERVICE, 1521)
        user = os.environ.get("ORAMEM_APP_USER", "oramem")
        password = os.environ.get("ORAMEM_APP_PASSWORD", "oramem")
        dsn = f"{get_docker_ip()}:{port}/FREEPDB1"
        _wait_for_oramem(dsn, user, password, float(os.environ.get("ORAMEM_DOCKER_WAIT", "900")))
    except Exception as e:  # Docker answered but the database did not come up: a failure, not a skip
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        _state["failure"] = (
            f"Docker answered but {COMPOSE_FILE.relative_to(REPO_ROOT)} did not become ready: {first}\n"
            f"--- last {LOG_TAIL} lines of the '{SERVICE}' container log ---\n{compose_logs()}\n"
            "(fix the database, or unset Docker / set ORACLE_DSN to test against another one)"
        )
        shutdown()
        raise pytest.fail.Exception(_state["failure"], pytrace=False) from None
    _state["target"] = (dsn, user, password)
    return _state["target"]


def shutdown() -> None:
    """Stop what :func:`oracle_target` started (no-op otherwise)."""
    stack = _state.get("stack")
    if stack is not None:
        _state["stack"] = None
        stack.close()


def header_line() -> str:
    target = env_target()
    if target is not None:
        return f"oracle: ORACLE_DSN={target[0]} user={target[1]}"
    if failure():
        return "oracle: FAILED: " + failure().splitlines()[0]
    reason = skip_reason()
    if reason:
        return "oracle: " + reason
    return f"oracle: Docker engine answers; {COMPOSE_FILE.relative_to(REPO_ROOT)} starts on first use"
