"""Where the Oracle-only tests get a database from (one place, used by every suite).

Order (DESIGN.md "Testing"):

1. ``ORACLE_DSN`` (+ ``ORACLE_USER``, ``ORACLE_PASSWORD``) when set;
2. else, when a Docker engine answers ``docker info`` within a few seconds, start
   ``docker/compose.yml`` with pytest-docker (``docker compose up -d --wait``) on first
   use and wait until oramem answers in it (``ORAMEM_DOCKER_WAIT`` seconds, default 900);
   the containers are removed at the end of the session unless ``ORAMEM_KEEP_DB=1``;
3. else every Oracle test is skipped with :func:`skip_reason`, which ``tests/conftest.py``
   also prints in the report header and the terminal summary.

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

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO_ROOT / "docker" / "compose.yml"
COMPOSE_PROJECT = "oramem-tests"
SERVICE = "oracle"

_state: dict = {"probed": False, "target": None, "detail": "", "stack": None}


def docker_engine_status(timeout: float = 8.0) -> tuple[bool, str]:
    """(True, version) when a Docker engine answers ``docker info``, else (False, why)."""
    if shutil.which("docker") is None:
        return False, "no `docker` command on PATH"
    try:
        proc = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
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
    if _state["target"] is not None:
        return ""
    if _state.get("docker_failed"):
        return f"Oracle tests skipped: ORACLE_DSN is not set and {_state['detail']}."
    return (
        "Oracle tests skipped: ORACLE_DSN is not set and no Docker engine answered "
        f"({_state['detail']}). Set ORACLE_DSN, ORACLE_USER and ORACLE_PASSWORD, or start Docker "
        "so tests can run docker/compose.yml (Oracle Database Free)."
    )


def _wait_for_oramem(dsn: str, user: str, password: str, timeout: float) -> None:
    import oracledb

    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with oracledb.connect(user=user, password=password, dsn=dsn) as conn:
                with conn.cursor() as cur:
                    # installed = the package spec exists and is valid
                    cur.execute(
                        "select count(*) from user_objects where object_name = 'ORAMEM_STORE' "
                        "and object_type = 'PACKAGE' and status = 'VALID'"
                    )
                    (n,) = cur.fetchone()
                    if n == 1:
                        return
        except oracledb.Error as e:  # not up yet
            last = e
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
    if _state["probed"]:  # probed already: Docker absent, or starting it failed once
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
    except Exception as e:  # Docker answered but the database did not come up
        _state["detail"] = f"Docker answered but {COMPOSE_FILE.name} did not become ready: {str(e).splitlines()[0]}"
        _state["docker_failed"] = True
        shutdown()
        return None
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
    reason = skip_reason()
    if reason:
        return "oracle: " + reason
    return f"oracle: Docker engine answers; {COMPOSE_FILE.relative_to(REPO_ROOT)} starts on first use"
