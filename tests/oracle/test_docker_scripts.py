"""Text tests of the Docker init scripts (docker/initdb/), findings F9 and F14 of
reviews/oracle-search-admin-driver.md. Static: nothing here starts a container."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

INITDB = Path(__file__).resolve().parents[2] / "docker" / "initdb"


@pytest.mark.parametrize("name", ["01_vector_memory.sh", "02_grants.sh", "03_install_oramem.sh"])
def test_scripts_are_valid_bash(name):
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    subprocess.run(["bash", "-n", str(INITDB / name)], check=True)


def test_f14_restart_registers_services_and_install_waits_for_the_listener():
    vm = (INITDB / "01_vector_memory.sh").read_text()
    after_startup = vm[vm.index("STARTUP"):]
    assert "ALTER SYSTEM REGISTER;" in after_startup
    install = (INITDB / "03_install_oramem.sh").read_text()
    wait, run = install.index("for attempt in"), install.index("@install.sql")
    assert wait < run and "sleep 5" in install[wait:run] and "exit 1" in install[wait:run]


def test_f9_hybrid_packages_are_granted_directly():
    grants = (INITDB / "02_grants.sh").read_text()
    assert "'DBMS_VECTOR_CHAIN', 'DBMS_HYBRID_VECTOR'" in grants
    assert "EXECUTE IMMEDIATE 'GRANT EXECUTE ON '" in grants
