"""Session-wide wiring shared by every test folder; kept minimal on purpose.

Only the Oracle database source lives here, because several folders (tests/contract,
tests/oracle) need the same one: see ``tests/oracle/oracle_env.py``. The header and the
terminal summary print why Oracle tests are skipped when they are (no Docker, no ORACLE_DSN),
or why they failed (Docker answered and the database did not come up: the container log's tail).
"""

from __future__ import annotations

import pytest
from oracle import oracle_env


def pytest_configure(config):
    try:
        from contract.engines import register_oracle_dsn_provider
    except ImportError:  # contract suite absent: nothing to plug
        return
    register_oracle_dsn_provider(oracle_env.oracle_target)


def pytest_collection_modifyitems(config, items):
    """Every test that needs the database carries the ``oracle`` marker, so ``pytest -m oracle``
    (.github/workflows/oracle.yml) runs the whole Oracle half: the Oracle-only tests (their
    fixtures rest on ``oracle_params``) and the Oracle parametrisation of the engine-parametrised
    suites (contract, hardening, knowledge: a fixture param ``"oracle"``)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_oracle = callspec is not None and "oracle" in callspec.params.values()
        if on_oracle or "oracle_params" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.oracle)


def pytest_report_header(config):
    return [oracle_env.header_line()]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    failed = oracle_env.failure()  # Docker answered, the database did not come up: tests failed
    reason = failed or oracle_env.skip_reason()
    if reason:
        terminalreporter.write_sep("-", "oracle FAILED" if failed else "oracle", red=bool(failed))
        for line in reason.splitlines():
            terminalreporter.write_line(line)


def pytest_sessionfinish(session, exitstatus):
    oracle_env.shutdown()


def _no_hub() -> None:
    """No test reaches the Hugging Face Hub: a store opened with no embedder falls back to the
    lexical HashEmbedder at once (the download tests lift this for their own loopback mirror),
    and a model cached on the developer's machine never changes what a test sees."""
    import atexit
    import os
    import shutil
    import tempfile

    os.environ["HF_HUB_OFFLINE"] = "1"
    cache = tempfile.mkdtemp(prefix="oramem-test-models-")
    os.environ["ORAMEM_MODEL_CACHE"] = cache
    atexit.register(shutil.rmtree, cache, ignore_errors=True)  # one per test process, gone with it


_no_hub()
