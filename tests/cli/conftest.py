"""Fixtures shared by the CLI tests."""
from __future__ import annotations

import pytest
from click.testing import CliRunner


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A CLI runner with no ORAMEM_* defaults from the environment."""
    for var in ("ORAMEM_DB", "ORAMEM_STORE", "ORAMEM_STRATEGY"):
        monkeypatch.delenv(var, raising=False)
    return CliRunner()
