"""The hosted workflow that runs the Oracle half (.github/workflows/oracle.yml, review D10): it
cannot run here (no Docker, no Oracle), so its shape is checked statically: an Oracle
Database Free service container with the image's documented settings and health check, the
repository's init scripts run in order (every one of docker/initdb), ``pytest -m oracle``
and ``oramem db selftest --json``."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "oracle.yml"


@pytest.fixture(scope="module")
def job():
    doc = yaml.safe_load(WORKFLOW.read_text())
    return doc["jobs"]["oracle"]


def _run_text(job) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_the_database_is_an_oracle_free_service_container(job):
    svc = job["services"]["oracle"]
    assert svc["image"].startswith("gvenzl/oracle-free:") and "slim" not in svc["image"]  # Oracle Text
    assert {"ORACLE_PASSWORD", "APP_USER", "APP_USER_PASSWORD"} <= set(svc["env"])
    assert "1521:1521" in svc["ports"]
    assert "--health-cmd healthcheck.sh" in svc["options"]
    assert job["env"]["ORACLE_DSN"] == "localhost:1521/FREEPDB1"
    assert job["env"]["ORACLE_USER"] == svc["env"]["APP_USER"] == job["env"]["ORAMEM_USER"]


def test_every_init_script_runs_in_order(job):
    text = _run_text(job)
    m = re.search(r"for script in ([^;]+); do", text)
    assert m, "the init-script loop is missing"
    listed = m.group(1).split()
    assert listed == sorted(p.name for p in (REPO / "docker" / "initdb").iterdir() if p.suffix == ".sh")
    assert "docker cp ddl" in text and "docker cp plsql" in text


def test_it_runs_the_oracle_tests_and_the_selftest(job):
    text = _run_text(job)
    assert re.search(r"^pytest -m oracle\b", text, re.M)
    assert "oramem db selftest --json" in text
