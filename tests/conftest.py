"""Session-wide wiring shared by every test folder; kept minimal on purpose.

Only the Oracle database source lives here, because several folders (tests/contract,
tests/oracle) need the same one: see ``tests/oracle/oracle_env.py``. The header and the
terminal summary print why Oracle tests are skipped when they are.
"""

from __future__ import annotations

from oracle import oracle_env


def pytest_configure(config):
    try:
        from contract.engines import register_oracle_dsn_provider
    except ImportError:  # contract suite absent: nothing to plug
        return
    register_oracle_dsn_provider(oracle_env.oracle_target)


def pytest_report_header(config):
    return [oracle_env.header_line()]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    reason = oracle_env.skip_reason()
    if reason:
        terminalreporter.write_sep("-", "oracle")
        terminalreporter.write_line(reason)


def pytest_sessionfinish(session, exitstatus):
    oracle_env.shutdown()


def _no_hub() -> None:
    """No test reaches the Hugging Face Hub: a store opened with no embedder falls back to the
    lexical HashEmbedder at once (the download tests lift this for their own loopback mirror),
    and a model cached on the developer's machine never changes what a test sees."""
    import os
    import tempfile

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["ORAMEM_MODEL_CACHE"] = tempfile.mkdtemp(prefix="oramem-test-models-")


_no_hub()
