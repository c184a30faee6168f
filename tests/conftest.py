"""Session-wide wiring shared by every test folder; kept minimal on purpose.

Besides the no-network model cache set below, only the Oracle database source lives here, because several folders (tests/contract,
tests/oracle) need the same one: see ``tests/oracle/oracle_env.py``. The header and the
terminal summary print why Oracle tests are skipped when they are.
"""

from __future__ import annotations

import os
import tempfile

from oracle import oracle_env

# No test reaches the Hugging Face Hub: a store opened with no embedder falls back to the
# lexical HashEmbedder at once (the tests of the download use their own loopback server and
# lift this), and a model cached on the developer's machine never changes what a test sees.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["ORAMEM_MODEL_CACHE"] = tempfile.mkdtemp(prefix="oramem-test-models-")


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
